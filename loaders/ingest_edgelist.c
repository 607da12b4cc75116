/* SNAP-style edge lists ("src dst" per line, whitespace or comma, '#'/'%' comments, optional
 * gzip, extra columns ignored) with optional side files: labels "node label" and features
 * "node f1 ... fk". n = largest id seen + 1 (at most INGEST_MAX_UNNAMED ids no line names).
 * Tested in tests/test_ingest.c and by the edgelist-* entries of tests/data/bad/. */
#include "loaders/ingest_internal.h"
#include "core/alloc.h"
#include "core/status.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static int is_comment_or_blank(const char *line) {
    const char *p = textio_skip_blank(line);
    return *p == '\0' || *p == '#' || *p == '%';
}

static int is_sep(char c) { return c == ' ' || c == '\t' || c == ','; }

static const char *skip_field_sep(const char *p) {
    p = textio_skip_blank(p);
    if (*p == ',') p = textio_skip_blank(p + 1);
    return p;
}

/* A node id token; 1 when it is an integer in 0..INGEST_MAX_ID followed by a separator or
 * the end of the line. */
static int parse_id(const char **p, int64_t *v) {
    const char *q = *p;
    if (!textio_parse_i64(&q, v)) return 0;
    if (*q && !is_sep(*q)) return 0;
    *p = q;
    return 1;
}

/* The largest id seen and where (a graph of n = id + 1 nodes: named in a refusal). */
typedef struct max_id { int64_t v; const char *path; long long ln; } max_id_t;

static void max_id_see(max_id_t *m, int64_t v, const char *path, long long ln) {
    if (v <= m->v) return;
    m->v = v;
    m->path = path;
    m->ln = ln;
}

typedef struct edge_ctx {
    ingest_edges_t *e;
    max_id_t *maxid;
    const ingest_opts_t *o;
} edge_ctx_t;

static int edge_line(void *ctx, const char *path, long long ln, char *line) {
    edge_ctx_t *c = ctx;
    if (is_comment_or_blank(line)) return INCA_OK;
    const char *p = line;
    int64_t s, d;
    int ok = parse_id(&p, &s);
    if (ok) p = skip_field_sep(p);
    if (!ok || !parse_id(&p, &d))
        return inca_fail(INCA_EINVAL, "%s:%lld: expected 'src dst' (two non-negative integers), got '%.40s'",
                         path, ln, line);
    if (s < 0 || d < 0 || s > INGEST_MAX_ID || d > INGEST_MAX_ID)
        return inca_fail(INCA_EINVAL, "%s:%lld: node id %lld out of range: expected 0..%lld", path, ln,
                         (long long)(s < 0 || s > INGEST_MAX_ID ? s : d), (long long)INGEST_MAX_ID);
    max_id_see(c->maxid, s > d ? s : d, path, ln);
    int rc = ingest_edges_push(c->e, s, d);
    if ((c->e->m & 0xfffff) == 0) ingest_progress(c->o, "edges", c->e->m, 0);
    return rc;
}

static int read_edges(const char *path, ingest_edges_t *e, max_id_t *maxid, const ingest_opts_t *o) {
    edge_ctx_t c = {e, maxid, o};
    int64_t lines;
    int rc = ingest_each_line(path, edge_line, &c, &lines);
    if (!rc && e->m == 0)
        rc = inca_fail(INCA_EINVAL, "%s:%lld: expected at least one 'src dst' line, found none", path,
                       (long long)lines + 1);
    return rc;
}

/* Side files: rows "node value..." collected as (node, line) plus values. */
typedef struct side {
    ingest_i64vec_t node, line;
    ingest_f32vec_t val;     /* features: k per row */
    ingest_i64vec_t lab;     /* labels: one per row (exact: a float holds integers up to 2^24 only) */
    int64_t k;               /* values per row (labels: 1) */
} side_t;

static void side_free(side_t *s) {
    ingest_i64vec_free(&s->node);
    ingest_i64vec_free(&s->line);
    ingest_f32vec_free(&s->val);
    ingest_i64vec_free(&s->lab);
}

typedef struct side_ctx { side_t *sd; int is_label; max_id_t *maxid; } side_ctx_t;

static int side_line(void *ctx, const char *path, long long ln, char *line) {
    side_ctx_t *c = ctx;
    side_t *sd = c->sd;
    if (is_comment_or_blank(line)) return INCA_OK;
    const char *p = line;
    int64_t v;
    int rc;
    if (!parse_id(&p, &v) || v < 0 || v > INGEST_MAX_ID)
        return inca_fail(INCA_EINVAL, "%s:%lld: expected a node id in 0..%lld first, got '%.40s'", path, ln,
                         (long long)INGEST_MAX_ID, line);
    max_id_see(c->maxid, v, path, ln);
    p = skip_field_sep(p);
    if (c->is_label) {
        int32_t y;
        if (!ingest_parse_label(p, &y))
            return inca_fail(INCA_EINVAL, "%s:%lld: expected 'node label' with a class id in 0..%d, got '%.40s'",
                             path, ln, INGEST_MAX_CLASSES - 1, line);
        if ((rc = ingest_i64vec_push(&sd->lab, y))) return rc;
        sd->k = 1;
    } else {
        int64_t j = 0;   /* values separated by blanks or commas */
        for (;;) {
            p = textio_skip_blank(p);
            if (!*p) break;
            if (j > 0 && *p == ',') p++;
            float x;
            const char *q = p;
            if (!textio_parse_f32(&q, &x) || (*q && !is_sep(*q)) || !isfinite(x))
                return inca_fail(INCA_EINVAL, "%s:%lld: column %lld: expected a finite number", path, ln,
                                 (long long)j + 2);
            p = q;
            if ((rc = ingest_f32vec_grow(&sd->val, 1))) return rc;
            sd->val.v[sd->val.n++] = x;
            j++;
        }
        if (sd->node.n == 0) sd->k = j;
        if (j != sd->k || j == 0)
            return inca_fail(INCA_EINVAL, "%s:%lld: expected %lld feature values after the node id (as on the "
                             "first row), found %lld", path, ln, (long long)sd->k, (long long)j);
    }
    if ((rc = ingest_i64vec_push(&sd->node, v))) return rc;
    return ingest_i64vec_push(&sd->line, ln);
}

static int read_side(const char *path, int is_label, side_t *sd, max_id_t *maxid) {
    side_ctx_t c = {sd, is_label, maxid};
    int64_t lines;
    int rc = ingest_each_line(path, side_line, &c, &lines);
    if (!rc && sd->node.n == 0)
        rc = inca_fail(INCA_EINVAL, "%s:%lld: expected at least one row, found none", path, (long long)lines + 1);
    return rc;
}

/* Place side rows into d (y or x); duplicates are an error naming both lines. */
static int place_side(const char *path, int is_label, const side_t *sd, dataset_t *d) {
    int64_t *first = inca_malloc((size_t)d->n * sizeof *first);
    if (!first) return INCA_ENOMEM;
    int rc = INCA_OK;
    for (int64_t i = 0; i < d->n; i++) first[i] = 0;
    if (is_label) {
        d->y = inca_malloc((size_t)d->n * sizeof *d->y);
        if (!d->y) { rc = INCA_ENOMEM; goto done; }
        for (int64_t i = 0; i < d->n; i++) d->y[i] = -1;
    } else {
        d->f = sd->k;
        d->x = inca_calloc((size_t)d->n * (size_t)d->f, sizeof *d->x);
        if (!d->x) { rc = INCA_ENOMEM; goto done; }
    }
    for (int64_t r = 0; r < sd->node.n; r++) {
        int64_t v = sd->node.v[r];
        if (first[v]) {
            rc = inca_fail(INCA_EINVAL, "%s:%lld: node %lld listed again (first on line %lld)", path,
                           (long long)sd->line.v[r], (long long)v, (long long)first[v]);
            goto done;
        }
        first[v] = sd->line.v[r];
        if (is_label) d->y[v] = (int32_t)sd->lab.v[r];
        else memcpy(d->x + v * d->f, sd->val.v + r * sd->k, (size_t)sd->k * sizeof(float));
    }
done:
    inca_free(first);
    return rc;
}

/* Before anything is sized by n = largest id + 1: at most INGEST_MAX_UNNAMED ids that no line
 * names, and no more zero-filled feature rows (nodes without one) than the file gives rows for,
 * past 2^26 floats (256 MB), so a stray id cannot make a small file take gigabytes. */
#define EDGELIST_MAX_ZERO_FLOATS ((int64_t)1 << 26)

static int check_ids(const max_id_t *maxid, int64_t m, const side_t *lab, const side_t *feat, const ingest_opts_t *o) {
    const int64_t n = maxid->v + 1, named = 2 * m + lab->node.n + feat->node.n;   /* ids the lines can name, at most */
    if (n > named + INGEST_MAX_UNNAMED)
        return inca_fail(INCA_EINVAL, "%s:%lld: node id %lld makes a graph of %lld nodes, but %lld edges%s name at most "
                         "%lld: expected ids 0..n-1 with at most %lld never named (renumber the ids)", maxid->path,
                         maxid->ln, (long long)maxid->v, (long long)n, (long long)m,
                         o->labels || o->features ? " and the side rows" : "", (long long)named,
                         (long long)INGEST_MAX_UNNAMED);
    const int64_t given = feat->node.n * feat->k, zeros = (n - feat->node.n) * feat->k;
    if (o->features && zeros > EDGELIST_MAX_ZERO_FLOATS && zeros > given)
        return inca_fail(INCA_EINVAL, "%s: feature rows for %lld of %lld nodes (%lld values each): the other %lld rows "
                         "would be zero-filled, more than the file gives: expected rows for at least half the nodes",
                         o->features, (long long)feat->node.n, (long long)n, (long long)feat->k,
                         (long long)(n - feat->node.n));
    return INCA_OK;
}

int ingest_edgelist(const char *path, const ingest_opts_t *o, dataset_t *out) {
    dataset_t d;
    dataset_init(&d);
    dataset_init(out);
    ingest_edges_t e = {0};
    side_t lab = {0}, feat = {0};
    max_id_t maxid = {-1, NULL, 0};
    int rc;
    if ((rc = read_edges(path, &e, &maxid, o))) goto fail;
    if (o->labels && (rc = read_side(o->labels, 1, &lab, &maxid))) goto fail;
    if (o->features && (rc = read_side(o->features, 0, &feat, &maxid))) goto fail;
    if ((rc = check_ids(&maxid, e.m, &lab, &feat, o))) goto fail;
    d.n = maxid.v + 1;
    if ((rc = ingest_build_graph(&d, d.n, &e, 0, o))) goto fail;
    ingest_edges_free(&e);
    if (o->labels && (rc = place_side(o->labels, 1, &lab, &d))) goto fail;
    if (o->features && (rc = place_side(o->features, 0, &feat, &d))) goto fail;
    ingest_set_classes(&d);
    snprintf(d.source, sizeof d.source, "edgelist:%s", path);
    side_free(&lab);
    side_free(&feat);
    *out = d;
    return INCA_OK;
fail:
    ingest_edges_free(&e);
    side_free(&lab);
    side_free(&feat);
    dataset_free(&d);
    return rc;
}
