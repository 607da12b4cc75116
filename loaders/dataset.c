/* In-memory datasets and their atomic save/load through the store; a load checks contents
 * (CSR structure, ids, labels, finite features, meta counts) before anything believes them.
 * Tested in test_store.c and test_store_corrupt.c. */
#include "loaders/dataset.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/store.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_consistent(const dataset_t *d) {
    if (d->n < 0 || d->f < 0 || d->c < 0) return inca_fail(INCA_EINVAL, "dataset: negative sizes");
    if (d->adj.rowptr && (d->adj.n_rows != d->n || d->adj.n_cols != d->n))
        return inca_fail(INCA_EINVAL, "dataset: adjacency is %lldx%lld for %lld nodes", (long long)d->adj.n_rows,
                         (long long)d->adj.n_cols, (long long)d->n);
    if (d->f > 0 && !d->x) return inca_fail(INCA_EINVAL, "dataset: %lld features but no feature array", (long long)d->f);
    for (int s = 0; s < SPLIT_COUNT; s++)
        for (int64_t i = 0; i < d->split_n[s]; i++)
            if (d->split[s][i] < 0 || d->split[s][i] >= d->n)
                return inca_fail(INCA_EINVAL, "dataset: %s split holds id %lld outside [0, %lld)", dataset_split_names[s],
                                 (long long)d->split[s][i], (long long)d->n);
    return INCA_OK;
}

/* ---- content checks: one pass per array, each returning the first bad position (n when all
 * are good); OpenMP min-reductions keep "first" exact. Large arrays only are split across
 * threads (the pool start-up costs more than a few thousand compares). ---- */
#define CHECK_PAR_MIN 65536

static int64_t first_outside_i64(const int64_t *a, int64_t n, int64_t lo, int64_t hi) {
    int64_t first = n;
#pragma omp parallel for reduction(min : first) schedule(static) if (n > CHECK_PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        if ((a[i] < lo || a[i] >= hi) && i < first) first = i;
    return first;
}

static int64_t first_outside_i32(const int32_t *a, int64_t n, int64_t lo, int64_t hi) {
    int64_t first = n;
#pragma omp parallel for reduction(min : first) schedule(static) if (n > CHECK_PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        if ((a[i] < lo || a[i] >= hi) && i < first) first = i;
    return first;
}

/* First i >= 1 with a[i] < a[i-1]. */
static int64_t first_decrease_i64(const int64_t *a, int64_t n) {
    int64_t first = n;
#pragma omp parallel for reduction(min : first) schedule(static) if (n > CHECK_PAR_MIN)
    for (int64_t i = 1; i < n; i++)
        if (a[i] < a[i - 1] && i < first) first = i;
    return first;
}

static int64_t first_nonfinite_f32(const float *a, int64_t n) {
    int64_t first = n;
#pragma omp parallel for reduction(min : first) schedule(static) if (n > CHECK_PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(a[i]) && i < first) first = i;
    return first;
}

static int bad_entry(const char *path, const char *arr, int64_t i, long long v, long long lo, long long hi) {
    return inca_fail(INCA_EINVAL, "%s: array '%s' entry %lld = %lld is outside [%lld, %lld): the store is corrupt",
                     path, arr, (long long)i, v, lo, hi);
}

int dataset_check_csr(const char *path, const char *rowptr_name, const char *col_name, const csr_t *g) {
    const int64_t n = g->n_rows, *rp = g->rowptr;
    int64_t i;
    if (rp[0] != 0)
        return inca_fail(INCA_EINVAL, "%s: array '%s' entry 0 = %lld, expected 0: the store is corrupt", path, rowptr_name,
                         (long long)rp[0]);
    if ((i = first_decrease_i64(rp, n + 1)) <= n)
        return inca_fail(INCA_EINVAL, "%s: array '%s' entry %lld = %lld is below entry %lld = %lld (not "
                         "monotone): the store is corrupt", path, rowptr_name, (long long)i, (long long)rp[i],
                         (long long)i - 1, (long long)rp[i - 1]);
    if (rp[n] != g->nnz)
        return inca_fail(INCA_EINVAL, "%s: array '%s' entry %lld = %lld, expected %lld (the length of '%s'): "
                         "the store is corrupt", path, rowptr_name, (long long)n, (long long)rp[n], (long long)g->nnz,
                         col_name);
    if ((i = first_outside_i32(g->col, g->nnz, 0, g->n_cols)) < g->nnz) return bad_entry(path, col_name, i, g->col[i], 0, g->n_cols);
    return INCA_OK;
}

/* Everything the store schema promises about a loaded dataset, against its meta record. */
static int check_contents(const char *path, const store_meta_t *m, const dataset_t *d) {
    int64_t n = d->n, i;
    int rc;
    if (d->adj.rowptr && (rc = dataset_check_csr(path, "rowptr", "col", &d->adj)) != INCA_OK) return rc;
    if (d->x && (i = first_nonfinite_f32(d->x, n * d->f)) < n * d->f)
        return inca_fail(INCA_EINVAL, "%s: array 'x' entry %lld (row %lld, column %lld) = %g is not finite: the store "
                         "is corrupt", path, (long long)i, (long long)(i / d->f), (long long)(i % d->f), (double)d->x[i]);
    if (!d->y && m->labeled > 0)
        return inca_fail(INCA_EINVAL, "%s: the meta record says %lld nodes are labelled, but array 'y' is missing: the "
                         "store is corrupt", path, (long long)m->labeled);
    if (d->y) {
        if ((i = first_outside_i32(d->y, n, -1, d->c)) < n) return bad_entry(path, "y", i, d->y[i], -1, d->c);
        int64_t lab = dataset_labeled(d);
        if (lab != m->labeled)
            return inca_fail(INCA_EINVAL, "%s: array 'y' has %lld labelled entries, the meta record says %lld: the "
                             "store is corrupt", path, (long long)lab, (long long)m->labeled);
    }
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {
        char name[64];
        snprintf(name, sizeof name, "split/%s", dataset_split_names[sp]);
        if (d->split_n[sp] != m->split_n[sp])
            return inca_fail(INCA_EINVAL, "%s: array '%s' has %lld entries, the meta record says %lld: the store is "
                             "corrupt", path, name, (long long)d->split_n[sp], (long long)m->split_n[sp]);
        if ((i = first_outside_i64(d->split[sp], d->split_n[sp], 0, n)) < d->split_n[sp])
            return bad_entry(path, name, i, d->split[sp][i], 0, n);
    }
    return INCA_OK;
}

static int write_all(const dataset_t *d, const char *tmp) {
    store_t *s = NULL;
    store_wtx_t *w = NULL;
    int rc = store_create(tmp, &s);
    if (rc) return rc;
    rc = store_write_begin(s, &w);
    if (!rc && d->adj.rowptr) {
        rc = store_wtx_put_array(w, "rowptr", DT_I64, d->adj.rowptr, d->n + 1);
        if (!rc) rc = store_wtx_put_array(w, "col", DT_I32, d->adj.col, d->adj.nnz);
    }
    if (!rc && d->f > 0) rc = store_wtx_put_array(w, "x", DT_F32, d->x, d->n * d->f);
    if (!rc && d->y) rc = store_wtx_put_array(w, "y", DT_I32, d->y, d->n);
    char name[64];
    for (int sp = 0; sp < SPLIT_COUNT && !rc; sp++) {
        if (!d->split[sp] && d->split_n[sp] == 0) continue;
        snprintf(name, sizeof name, "split/%s", dataset_split_names[sp]);
        rc = store_wtx_put_array(w, name, DT_I64, d->split[sp], d->split_n[sp]);
    }
    if (!rc) {
        store_meta_t m;
        memset(&m, 0, sizeof m);
        m.nodes = d->n;
        m.edges = d->adj.rowptr ? d->adj.nnz : 0;
        m.features = d->f;
        m.classes = d->c;
        m.feat_dtype = DT_F32;
        m.labeled = dataset_labeled(d);
        for (int sp = 0; sp < SPLIT_COUNT; sp++) m.split_n[sp] = d->split_n[sp];
        snprintf(m.source, sizeof m.source, "%s", d->source);
        rc = store_wtx_put_meta(w, &m);
    }
    if (!rc) rc = store_write_commit(&w);
    else store_write_abort(&w);
    store_close(&s);
    return rc;
}

/* Remove <path>.tmp-<pid> folders of processes that no longer exist: what a save killed before
 * its rename left behind (a whole store each). Folders of live processes are left alone. */
static void remove_stale_tmp(const char *path) {
    char dir[4096], pre[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (slash == path) snprintf(dir, sizeof dir, "/");
    snprintf(pre, sizeof pre, "%s.tmp-", slash ? slash + 1 : path);
    size_t pl = strlen(pre);
    DIR *dh = opendir(dir);
    if (!dh) return;
    struct dirent *e;
    while ((e = readdir(dh))) {
        char *end;
        if (strncmp(e->d_name, pre, pl) != 0) continue;
        long pid = strtol(e->d_name + pl, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char stale[8192];
        snprintf(stale, sizeof stale, "%s/%s", dir, e->d_name);
        inca_rmtree(stale);
    }
    closedir(dh);
}

int dataset_save(const dataset_t *d, const char *path, int overwrite) {
    int rc = check_consistent(d);
    if (rc) return rc;
    remove_stale_tmp(path);
    if (inca_path_exists(path) && !overwrite)
        return inca_fail(INCA_EINVAL, "%s: already exists (pass --force to replace it)", path);
    char tmp[4096], old[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    snprintf(old, sizeof old, "%s.old-%ld", path, (long)getpid());
    inca_rmtree(tmp);
    rc = write_all(d, tmp);
    if (rc) {
        /* LMDB aborted the transaction; the temporary directory goes, and `path` was never
         * touched, so a full disk leaves no partial store (test_store_corrupt.c) */
        inca_rmtree(tmp);
        return inca_fail_ctx(rc, "%s: not written (nothing left behind%s)", path, inca_path_exists(path) ? ", the old store is intact" : "");
    }
    int had = inca_path_exists(path);
    /* replacing a store: swap both names in one step, so `path` always names a complete store
     * (the old or the new one); two renames are the fallback where the filesystem cannot swap */
    if (had && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
        inca_rmtree(tmp);
        return INCA_OK;
    }
    if (had && rename(path, old) != 0) {
        inca_rmtree(tmp);
        return inca_fail(INCA_EIO, "%s: cannot move the old store aside", path);
    }
    if (rename(tmp, path) != 0) {
        if (had) rename(old, path);
        inca_rmtree(tmp);
        return inca_fail(INCA_EIO, "%s: cannot rename the new store into place", path);
    }
    if (had) inca_rmtree(old);
    return INCA_OK;
}

int dataset_load(const char *path, dataset_t *d) { return dataset_load_ex(path, 0, d); }

int dataset_load_adj(store_t *s, csr_t *adj) {
    void *rp = NULL, *col = NULL;
    int64_t nr = 0, nc = 0;
    memset(adj, 0, sizeof *adj);
    int rc = store_array_load(s, "rowptr", DT_I64, &rp, &nr);
    if (rc == INCA_OK) rc = store_array_load(s, "col", DT_I32, &col, &nc);
    if (rc != INCA_OK) {
        inca_free(rp);
        inca_free(col);
        return inca_fail_ctx(rc, "%s has no graph", store_path(s));
    }
    adj->n_rows = adj->n_cols = nr - 1;
    adj->nnz = nc;
    adj->rowptr = rp;
    adj->col = col;
    adj->owned = 1;
    if (nr < 1) {
        csr_free(adj);
        return inca_fail(INCA_EINVAL, "%s: array 'rowptr' is empty: the store is corrupt", store_path(s));
    }
    if ((rc = dataset_check_csr(store_path(s), "rowptr", "col", adj)) != INCA_OK) csr_free(adj);
    return rc;
}

int dataset_load_ex(const char *path, int flags, dataset_t *d) {
    dataset_init(d);
    store_t *s = NULL;
    int rc = store_open(path, STORE_RDONLY, &s);
    if (rc) return rc;
    const store_meta_t *m = store_meta(s);
    d->n = m->nodes;
    d->f = m->features;
    d->c = m->classes;
    snprintf(d->source, sizeof d->source, "%s", m->source);
    if ((flags & DATASET_NO_GRAPH) && m->edges > 0) {
        d->adj.n_rows = d->adj.n_cols = d->n;
        d->adj.nnz = m->edges;
    } else if (m->edges > 0 || store_has_array(s, "rowptr")) {
        int64_t nr = 0, nc = 0;
        rc = store_array_load(s, "rowptr", DT_I64, (void **)&d->adj.rowptr, &nr);
        if (!rc) rc = store_array_load(s, "col", DT_I32, (void **)&d->adj.col, &nc);
        if (!rc && (nr != d->n + 1 || nc != m->edges))
            rc = inca_fail(INCA_EINVAL, "%s: graph arrays disagree with meta (rowptr %lld, col %lld, edges %lld)", path,
                           (long long)nr, (long long)nc, (long long)m->edges);
        d->adj.n_rows = d->adj.n_cols = d->n;
        d->adj.nnz = nc;
        d->adj.owned = 1;
    }
    if (!rc && d->f > 0 && !(flags & DATASET_NO_X)) {
        int64_t nx = 0;
        rc = store_array_load(s, "x", DT_F32, (void **)&d->x, &nx);
        if (!rc && nx != d->n * d->f) rc = inca_fail(INCA_EINVAL, "%s: feature array has %lld values, expected %lld", path, (long long)nx, (long long)(d->n * d->f));
    }
    if (!rc && store_has_array(s, "y")) {
        int64_t ny = 0;
        rc = store_array_load(s, "y", DT_I32, (void **)&d->y, &ny);
        if (!rc && ny != d->n) rc = inca_fail(INCA_EINVAL, "%s: label array has %lld entries, expected %lld", path, (long long)ny, (long long)d->n);
    }
    char name[64];
    for (int sp = 0; sp < SPLIT_COUNT && !rc; sp++) {
        snprintf(name, sizeof name, "split/%s", dataset_split_names[sp]);
        if (!store_has_array(s, name)) continue;
        rc = store_array_load(s, name, DT_I64, (void **)&d->split[sp], &d->split_n[sp]);
    }
    if (!rc && m->feat_dtype != DT_F32 && d->f > 0)
        rc = inca_fail(INCA_EINVAL, "%s: meta record says feature dtype %d, expected %d (float32): the store is corrupt",
                       path, m->feat_dtype, DT_F32);
    if (!rc) rc = check_contents(path, m, d);
    if (!rc && !d->x && d->f > 0) {   /* DATASET_NO_X: the width stays, the checks skip x */
        const int64_t f = d->f;
        d->f = 0;
        rc = check_consistent(d);
        d->f = f;
    } else if (!rc) rc = check_consistent(d);
    store_close(&s);
    if (rc) dataset_free(d);
    return rc;
}
