/* The helpers the per-format parsers share: growable arrays, file lookup, label and feature-row
 * parsing, graph and split building. The front door (format names, dispatch) is loaders/ingest.c,
 * which calls the parsers; the parsers call this file, and this file calls none of them.
 * Tested through tests/test_ingest.c (every parser) and tests/test_e2e_ingest.c. */
#include "loaders/ingest_internal.h"
#include "core/alloc.h"
#include "core/status.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

const char *const ingest_csv_exts[] = {".csv.gz", ".csv", NULL};

/* ---- growable arrays ---- */
int ingest_edges_reserve(ingest_edges_t *e, int64_t cap) {
    if (cap <= e->cap) return INCA_OK;
    int64_t *s = inca_realloc(e->src, (size_t)cap * sizeof *s);
    if (!s) return INCA_ENOMEM;
    e->src = s;
    int64_t *d = inca_realloc(e->dst, (size_t)cap * sizeof *d);
    if (!d) return INCA_ENOMEM;
    e->dst = d;
    e->cap = cap;
    return INCA_OK;
}

int ingest_edges_push(ingest_edges_t *e, int64_t s, int64_t d) {
    if (e->m == e->cap) {
        int rc = ingest_edges_reserve(e, e->cap < 1024 ? 1024 : e->cap * 2);
        if (rc) return rc;
    }
    e->src[e->m] = s;
    e->dst[e->m] = d;
    e->m++;
    return INCA_OK;
}

void ingest_edges_free(ingest_edges_t *e) {
    INCA_FREE(e->src);
    INCA_FREE(e->dst);
    e->m = e->cap = 0;
}

int ingest_i64vec_push(ingest_i64vec_t *a, int64_t x) {
    if (a->n == a->cap) {
        int64_t nc = a->cap < 256 ? 256 : a->cap * 2;
        int64_t *v = inca_realloc(a->v, (size_t)nc * sizeof *v);
        if (!v) return INCA_ENOMEM;
        a->v = v;
        a->cap = nc;
    }
    a->v[a->n++] = x;
    return INCA_OK;
}

int ingest_f32vec_grow(ingest_f32vec_t *a, int64_t extra) {
    if (a->n + extra <= a->cap) return INCA_OK;
    int64_t nc = a->cap < 4096 ? 4096 : a->cap;
    while (nc < a->n + extra) nc *= 2;
    float *v = inca_realloc(a->v, (size_t)nc * sizeof *v);
    if (!v) return INCA_ENOMEM;
    a->v = v;
    a->cap = nc;
    return INCA_OK;
}

void ingest_i64vec_free(ingest_i64vec_t *a) { INCA_FREE(a->v); a->n = a->cap = 0; }
void ingest_f32vec_free(ingest_f32vec_t *a) { INCA_FREE(a->v); a->n = a->cap = 0; }

/* ---- files ---- */
int ingest_path_join(char *buf, size_t size, const char *dir, const char *name) {
    int k = snprintf(buf, size, "%s/%s", dir, name);
    if (k < 0 || (size_t)k >= size) return inca_fail(INCA_EINVAL, "%s/%s: path too long", dir, name);
    return INCA_OK;
}

int ingest_find_file(char *buf, size_t size, const char *dir, const char *base, const char *const *exts) {
    struct stat st;
    char tried[256] = "";
    for (int i = 0; exts[i]; i++) {
        char name[512];
        snprintf(name, sizeof name, "%s%s", base, exts[i]);
        int rc = ingest_path_join(buf, size, dir, name);
        if (rc) return rc;
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode)) return INCA_OK;
        size_t l = strlen(tried);
        snprintf(tried + l, sizeof tried - l, "%s%s", i ? " or " : "", exts[i]);
    }
    return inca_fail(INCA_ENOTFOUND, "%s/%s: no such file (tried the extensions %s)", dir, base, tried);
}

/* ---- tokens ---- */
int ingest_parse_label(const char *s, int32_t *out) {
    s = textio_skip_blank(s);
    if (*s == '\0') { *out = -1; return 1; }
    if (strncasecmp(s, "nan", 3) == 0 && textio_at_end(s + 3)) { *out = -1; return 1; }
    const char *p = s;
    int64_t v;
    if (textio_parse_i64(&p, &v) && textio_at_end(p)) {
        if (v == -1) { *out = -1; return 1; }
        if (v < 0 || v >= INGEST_MAX_CLASSES) return 0;
        *out = (int32_t)v;
        return 1;
    }
    /* integral floats ("3.0", "1e0") as some OGB datasets write labels: the syntax checked as a
     * float's, the value read as a double, so "2.9999999" (3.0f as a float) is refused, not 3 */
    p = s;
    float f;
    if (textio_parse_f32(&p, &f) && textio_at_end(p)) {
        if (isnan(f)) { *out = -1; return 1; }
        const double v2 = strtod(s, NULL);
        if (v2 == -1.0) { *out = -1; return 1; }
        if (v2 >= 0.0 && v2 < (double)INGEST_MAX_CLASSES && v2 == floor(v2)) { *out = (int32_t)v2; return 1; }
    }
    return 0;
}

int64_t ingest_count_fields(const char *line, char sep) {
    if (textio_at_end(line)) return 0;
    int64_t k = 1;
    for (const char *p = line; *p; p++) k += *p == sep;
    return k;
}

int64_t ingest_parse_row(const char *line, char sep, int64_t f, float *row, const char **why) {
    const char *p = line;
    for (int64_t j = 0; j < f; j++) {
        if (j > 0) {
            p = textio_skip_blank(p);
            if (*p != sep) { *why = *p ? "a separator" : "a value (the row ends early)"; return j + 1; }
            p++;
        }
        /* the number must end at a blank, the separator or the end: "0x10" is column j's error,
         * not a missing separator after it */
        if (!textio_parse_f32(&p, &row[j]) || (*p && *p != sep && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')) {
            *why = "a number";
            return j + 1;
        }
        if (!isfinite(row[j])) { *why = "a finite number"; return j + 1; }
    }
    p = textio_skip_blank(p);
    if (*p) { *why = *p == sep ? "the end of the row (too many values)" : "a separator"; return f + 1; }
    return 0;
}

/* ---- dataset pieces ---- */
int ingest_build_graph(dataset_t *d, int64_t n, const ingest_edges_t *e, int sym, const ingest_opts_t *o) {
    unsigned flags = 0;
    if (sym || (o->flags & INGEST_SYMMETRIZE)) flags |= CSR_SYMMETRIZE;
    flags |= (o->flags & INGEST_SELF_LOOPS) ? CSR_SELF_LOOPS : CSR_DROP_SELF_LOOPS;
    return csr_from_edges(&d->adj, n, e->src, e->dst, e->m, flags);
}

void ingest_set_classes(dataset_t *d) {
    int32_t mx = -1;
    if (d->y)
        for (int64_t i = 0; i < d->n; i++) if (d->y[i] > mx) mx = d->y[i];
    d->c = mx + 1;
}

int ingest_split_from_marks(dataset_t *d, int which, const unsigned char *mark) {
    int64_t k = 0;
    for (int64_t i = 0; i < d->n; i++) k += mark[i] == which + 1 && d->y && d->y[i] >= 0;
    int64_t *ids = inca_malloc((size_t)(k ? k : 1) * sizeof *ids);
    if (!ids) return INCA_ENOMEM;
    k = 0;
    for (int64_t i = 0; i < d->n; i++) if (mark[i] == which + 1 && d->y && d->y[i] >= 0) ids[k++] = i;
    inca_free(d->split[which]);
    d->split[which] = ids;
    d->split_n[which] = k;
    return INCA_OK;
}

int ingest_each_line(const char *path, ingest_line_fn fn, void *ctx, int64_t *nlines) {
    textio_t *t = NULL;
    if (nlines) *nlines = 0;
    int rc = textio_open(path, &t);
    if (rc) return rc;
    char *line;
    for (;;) {
        int r = textio_next(t, &line, NULL);
        if (r <= 0) { rc = r; break; }
        if ((rc = fn(ctx, path, (long long)textio_lineno(t), line))) break;
    }
    if (nlines) *nlines = textio_lineno(t);
    textio_close(&t);
    return rc;
}

void ingest_progress(const ingest_opts_t *o, const char *stage, int64_t done, int64_t total) {
    if (o && o->progress) o->progress(o->progress_ctx, stage, done, total);
}

int ingest_file_capacity(const char *path, int64_t *bytes) {
    struct stat st;
    if (stat(path, &st) != 0) return inca_fail(INCA_ENOTFOUND, "%s: no such file", path);
    /* a pipe (`<(zcat g.graph)`) has no size to bound a header by: unbounded (an impossible
     * header then fails its allocation, a clean error); its bytes must not be read here */
    if (!S_ISREG(st.st_mode)) { *bytes = INT64_MAX; return INCA_OK; }
    unsigned char m[2] = {0, 0};
    FILE *f = fopen(path, "rb");
    if (!f) return inca_fail(INCA_EIO, "%s: cannot open", path);
    size_t got = fread(m, 1, 2, f);
    fclose(f);
    int64_t size = (int64_t)st.st_size;
    *bytes = got == 2 && m[0] == 0x1f && m[1] == 0x8b ? (size > INT64_MAX / 1032 ? INT64_MAX : size * 1032) : size;
    return INCA_OK;
}

int ingest_check_declared(const char *where, const char *holder, int64_t rows, const char *what, int64_t row_bytes,
                          int64_t header) {
    int64_t cap = 0;
    int rc = ingest_file_capacity(holder, &cap);
    if (rc) return rc;
    int64_t most = cap <= header ? 0 : (cap - header) / row_bytes;
    if (rows <= most) return INCA_OK;
    if (strncmp(where, holder, strlen(holder)) == 0)
        return inca_fail(INCA_EINVAL, "%s: declares %lld %s, the file holds at most %lld", where, (long long)rows, what,
                         (long long)most);
    return inca_fail(INCA_EINVAL, "%s: declares %lld %s, %s holds at most %lld", where, (long long)rows, what, holder,
                     (long long)most);
}
