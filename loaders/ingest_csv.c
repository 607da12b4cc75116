/* CSV feature datasets: a folder with train.csv, optional valid.csv and test.csv (each may be
 * gzipped), rows "label,f1,...,fk" without a header, the same k in every file; blank lines are
 * skipped; a file with no row is refused. Examples are train, then valid, then test; no graph.
 * Unlabelled rows ("", -1, nan) are kept as examples but belong to no split.
 * Tested in tests/test_ingest.c and tests/data/bad/csv-*. */
#include "loaders/ingest_internal.h"
#include "core/alloc.h"
#include "core/status.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

typedef struct csv_acc {
    ingest_f32vec_t x;
    ingest_i64vec_t y;      /* labels as int64 while growing */
    int64_t k;              /* features per row; -1 until the first row */
    char kfile[INGEST_PATH_MAX + 32];
} csv_acc_t;

typedef struct csv_ctx { csv_acc_t *a; const ingest_opts_t *o; } csv_ctx_t;

static int csv_line(void *ctx, const char *path, long long ln, char *line) {
    csv_acc_t *a = ((csv_ctx_t *)ctx)->a;
    if (textio_at_end(line)) return INCA_OK;
    char *comma = strchr(line, ',');
    if (comma) *comma = '\0';
    int32_t y;
    if (!ingest_parse_label(line, &y))
        return inca_fail(INCA_EINVAL, "%s:%lld: column 1: expected a class id in 0..%d (or -1, nan, empty), got '%.40s'%s",
                         path, ln, INGEST_MAX_CLASSES - 1, line, ln == 1 ? " (the csv format has no header line)" : "");
    const char *rest = comma ? comma + 1 : "";
    int64_t k = comma ? ingest_count_fields(rest, ',') : 0;
    if (comma && k == 0) k = 1;   /* "3," : one empty value, reported by the row parser */
    if (a->k < 0) {
        if (k == 0)
            return inca_fail(INCA_EINVAL, "%s:%lld: expected 'label,f1,...,fk' with k >= 1, got only a label", path, ln);
        a->k = k;
        snprintf(a->kfile, sizeof a->kfile, "%s:%lld", path, ln);
    }
    if (k != a->k)
        return inca_fail(INCA_EINVAL, "%s:%lld: expected %lld feature values after the label (as on %s), found %lld",
                         path, ln, (long long)a->k, a->kfile, (long long)k);
    int rc = ingest_f32vec_grow(&a->x, a->k);
    if (rc) return rc;
    const char *why = NULL;
    int64_t col = ingest_parse_row(rest, ',', a->k, a->x.v + a->x.n, &why);
    if (col) return inca_fail(INCA_EINVAL, "%s:%lld: column %lld: expected %s", path, ln, (long long)col + 1, why);
    a->x.n += a->k;
    if ((rc = ingest_i64vec_push(&a->y, y))) return rc;
    if ((a->y.n & 0xfff) == 0) ingest_progress(((csv_ctx_t *)ctx)->o, "rows", a->y.n, 0);
    return INCA_OK;
}

static int csv_read(const char *path, csv_acc_t *a, const ingest_opts_t *o) {
    csv_ctx_t c = {a, o};
    return ingest_each_line(path, csv_line, &c, NULL);
}

int ingest_csv(const char *dir, const ingest_opts_t *o, dataset_t *out) {
    dataset_t d;
    dataset_init(&d);
    dataset_init(out);
    csv_acc_t a = {.k = -1};
    int64_t start[SPLIT_COUNT + 1] = {0};
    char path[INGEST_PATH_MAX];
    struct stat st;
    int rc = INCA_OK;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return inca_fail(INCA_ENOTFOUND, "%s: expected a folder holding train.csv and test.csv", dir);
    for (int s = 0; s < SPLIT_COUNT; s++) {
        start[s] = a.y.n;
        rc = ingest_find_file(path, sizeof path, dir, dataset_split_names[s], ingest_csv_exts);
        if (rc == INCA_ENOTFOUND && s == SPLIT_VALID) { inca_err_clear(); rc = INCA_OK; continue; }
        if (rc) goto fail;
        if ((rc = csv_read(path, &a, o))) goto fail;
        if (a.y.n == start[s]) {   /* an empty split file is a mistake, not a split of nothing */
            rc = inca_fail(INCA_EINVAL, "%s: expected at least one row 'label,f1,...,fk', found none", path);
            goto fail;
        }
    }
    start[SPLIT_COUNT] = a.y.n;
    d.n = a.y.n;
    d.f = a.k;
    d.x = a.x.v;
    a.x.v = NULL;
    d.y = inca_malloc((size_t)d.n * sizeof *d.y);
    if (!d.y) { rc = INCA_ENOMEM; goto fail; }
    for (int64_t i = 0; i < d.n; i++) d.y[i] = (int32_t)a.y.v[i];
    for (int s = 0; s < SPLIT_COUNT; s++) {
        int64_t k = 0;
        for (int64_t i = start[s]; i < start[s + 1]; i++) k += d.y[i] >= 0;
        d.split[s] = inca_malloc((size_t)(k ? k : 1) * sizeof(int64_t));
        if (!d.split[s]) { rc = INCA_ENOMEM; goto fail; }
        k = 0;
        for (int64_t i = start[s]; i < start[s + 1]; i++) if (d.y[i] >= 0) d.split[s][k++] = i;
        d.split_n[s] = k;
    }
    ingest_set_classes(&d);
    snprintf(d.source, sizeof d.source, "csv:%s", dir);
    ingest_f32vec_free(&a.x);
    ingest_i64vec_free(&a.y);
    *out = d;
    return INCA_OK;
fail:
    ingest_f32vec_free(&a.x);
    ingest_i64vec_free(&a.y);
    dataset_free(&d);
    return rc;
}
