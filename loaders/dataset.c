/* In-memory datasets and their atomic save/load through the store; a load checks contents
 * (CSR structure, ids, labels, finite features, meta counts) before anything believes them.
 * Tested in test_store.c and test_store_corrupt.c. */
#include "loaders/dataset.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/store.h"
#include "graph/split.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

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

/* Named splits: the record DATASET_SPLIT_PREFIX<name> holds their three counts (int64), the
 * arrays "split:<name>/train|valid|test" their ids; DATASET_SPLIT_NAME_KEY the default's name. */
#define DATASET_SPLIT_PREFIX "split:"
#define DATASET_SPLIT_NAME_KEY "split-name"

static void named_array(char *buf, size_t cap, const char *name, int sp) {
    snprintf(buf, cap, "%s%s/%s", DATASET_SPLIT_PREFIX, name, dataset_split_names[sp]);
}

int dataset_split_name_check(const char *name) {
    size_t l = strlen(name);
    int ok = l > 0 && l < DATASET_SPLIT_NAME_MAX && strcmp(name, "stored") != 0;
    for (size_t i = 0; i < l && ok; i++) ok = isalnum((unsigned char)name[i]) || strchr("._-", name[i]);
    if (!ok)
        return inca_fail(INCA_EINVAL, "split name '%s': expected 1 to %d of A-Z a-z 0-9 . _ - other than 'stored'", name, DATASET_SPLIT_NAME_MAX - 1);
    return INCA_OK;
}

/* The named splits' names and counts are valid and unique, and differ from the default's. */
static int check_named(const dataset_t *d) {
    int rc;
    if (d->split_name[0] && (rc = dataset_split_name_check(d->split_name))) return rc;
    for (int32_t i = 0; i < d->n_more; i++) {
        const dataset_named_split_t *ns = &d->more[i];
        if ((rc = dataset_split_name_check(ns->name))) return rc;
        if (strcmp(ns->name, d->split_name) == 0) return inca_fail(INCA_EINVAL, "split '%s' is named twice", ns->name);
        for (int32_t k = 0; k < i; k++)
            if (strcmp(d->more[k].name, ns->name) == 0) return inca_fail(INCA_EINVAL, "split '%s' is named twice", ns->name);
        for (int sp = 0; sp < SPLIT_COUNT; sp++) {
            if (ns->n[sp] < 0 || (ns->n[sp] > 0 && !ns->ids[sp]))
                return inca_fail(INCA_EINVAL, "split '%s': %s has no ids", ns->name, dataset_split_names[sp]);
            int64_t j = first_outside_i64(ns->ids[sp], ns->n[sp], 0, d->n);
            if (j < ns->n[sp])
                return inca_fail(INCA_EINVAL, "split '%s': %s holds id %lld outside [0, %lld)", ns->name,
                                 dataset_split_names[sp], (long long)ns->ids[sp][j], (long long)d->n);
        }
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
    char name[DATASET_SPLIT_NAME_MAX + 32];
    for (int sp = 0; sp < SPLIT_COUNT && !rc; sp++) {
        if (!d->split[sp] && d->split_n[sp] == 0) continue;
        snprintf(name, sizeof name, "split/%s", dataset_split_names[sp]);
        rc = store_wtx_put_array(w, name, DT_I64, d->split[sp], d->split_n[sp]);
    }
    if (!rc && d->split_name[0]) rc = store_wtx_put_record(w, DATASET_SPLIT_NAME_KEY, d->split_name, strlen(d->split_name));
    for (int32_t i = 0; i < d->n_more && !rc; i++) {   /* the other splits: arrays and their counts */
        const dataset_named_split_t *ns = &d->more[i];
        char key[DATASET_SPLIT_NAME_MAX + 16];
        for (int sp = 0; sp < SPLIT_COUNT && !rc; sp++) {
            named_array(name, sizeof name, ns->name, sp);
            rc = store_wtx_put_array(w, name, DT_I64, ns->ids[sp], ns->n[sp]);
        }
        snprintf(key, sizeof key, "%s%s", DATASET_SPLIT_PREFIX, ns->name);
        if (!rc) rc = store_wtx_put_record(w, key, ns->n, sizeof ns->n);
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
    /* a temporary store, renamed into place only when complete: transactions of 64 MiB keep
     * LMDB's dirty pages from copying the whole dataset into anonymous memory */
    if (!rc) rc = store_write_commit_split(&w, (int64_t)64 << 20);
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

int dataset_out_replaceable(const char *path) {
    struct stat sp;
    char why[512] = "not a folder";
    if (stat(path, &sp) != 0) return INCA_OK;
    /* the whole folder goes: a folder that merely holds a data.mdb (a project, another program's
     * LMDB) is not one to delete */
    if (S_ISDIR(sp.st_mode) && store_probe(path, why, sizeof why)) return INCA_OK;
    return inca_fail(INCA_EINVAL, "%s: exists and is not an inca store (%s; --force replaces only a store; remove it "
                     "yourself or choose another --out)", path, why);
}

int dataset_save(const dataset_t *d, const char *path, int overwrite) {
    int rc = check_consistent(d);
    if (!rc) rc = check_named(d);
    if (rc) return rc;
    remove_stale_tmp(path);
    if (inca_path_exists(path) && !overwrite)
        return inca_fail(INCA_EINVAL, "%s: already exists (pass --force to replace it)", path);
    if ((rc = dataset_out_replaceable(path)) != INCA_OK) return rc;
    /* the store is written as <path>.tmp-<pid>: a missing or read-only folder is reported
     * here, naming path, rather than as the temporary's mkdir */
    if ((rc = inca_out_check(path)) != INCA_OK) return rc;
    char tmp[4096], old[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    snprintf(old, sizeof old, "%s.old-%ld", path, (long)getpid());
    inca_rmtree(tmp);
    rc = write_all(d, tmp);
    if (rc) {
        /* LMDB aborted the transaction; the temporary directory goes, and `path` was never
         * touched, so a full disk leaves no partial store (test_store_corrupt.c) */
        inca_rmtree(tmp);
        rc = inca_err_untemp(rc, tmp, path);   /* the message names path, as the user gave it */
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

/* A store without its adjacency arrays: a table, said once (the array's own message named the
 * store a second time); another failure keeps its cause. */
static int graph_missing(store_t *s, int rc) {
    if (rc == INCA_ENOTFOUND) return inca_fail(rc, "%s has no graph (no 'rowptr' / 'col' arrays: a table)", store_path(s));
    return inca_fail_ctx(rc, "%s has no graph", store_path(s));
}

int dataset_load_adj(store_t *s, csr_t *adj) {
    void *rp = NULL, *col = NULL;
    int64_t nr = 0, nc = 0;
    memset(adj, 0, sizeof *adj);
    int rc = store_array_load(s, "rowptr", DT_I64, &rp, &nr);
    if (rc == INCA_OK) rc = store_array_load(s, "col", DT_I32, &col, &nc);
    if (rc != INCA_OK) {
        inca_free(rp);
        inca_free(col);
        return graph_missing(s, rc);
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

int dataset_load_adj_rows(store_t *s, int64_t r0, int64_t r1, int64_t *n, csr_t *out) {
    store_array_info_t ri, ci;
    memset(out, 0, sizeof *out);
    int rc = store_array_info(s, "rowptr", &ri);
    if (rc == INCA_OK) rc = store_array_info(s, "col", &ci);
    if (rc != INCA_OK) return graph_missing(s, rc);
    if (ri.dtype != DT_I64 || ci.dtype != DT_I32)
        return inca_fail(INCA_EINVAL, "%s: arrays 'rowptr' / 'col' are not i64 / i32: the store is corrupt", store_path(s));
    *n = ri.count - 1;
    if (*n < 0 || r0 < 0 || r1 < r0 || r1 > *n)
        return inca_fail(INCA_EINVAL, "%s: rows [%lld, %lld) of a graph of %lld nodes", store_path(s), (long long)r0,
                         (long long)r1, (long long)*n);
    int64_t ends[2];
    if ((rc = store_array_read(s, "rowptr", r0, 1, &ends[0])) || (rc = store_array_read(s, "rowptr", r1, 1, &ends[1]))) return rc;
    if (ends[0] < 0 || ends[1] < ends[0] || ends[1] > ci.count)
        return inca_fail(INCA_EINVAL, "%s: array 'rowptr' entries %lld..%lld = %lld..%lld, outside 'col' (%lld): the store is "
                         "corrupt", store_path(s), (long long)r0, (long long)r1, (long long)ends[0], (long long)ends[1],
                         (long long)ci.count);
    if ((rc = csr_alloc(out, r1 - r0, *n, ends[1] - ends[0], 0)) != INCA_OK) return rc;
    rc = store_array_read(s, "rowptr", r0, r1 - r0 + 1, out->rowptr);
    if (rc == INCA_OK && out->nnz > 0) rc = store_array_read(s, "col", ends[0], out->nnz, out->col);
    for (int64_t i = 0; rc == INCA_OK && i <= out->n_rows; i++) out->rowptr[i] -= ends[0];
    if (rc == INCA_OK) rc = dataset_check_csr(store_path(s), "rowptr", "col", out);
    if (rc != INCA_OK) csr_free(out);
    return rc;
}

typedef struct split_list { dataset_split_info_t *v; int n, cap, rc; const char *path; } split_list_t;

static int split_list_add(split_list_t *l, const char *name, const int64_t n[SPLIT_COUNT], int is_default) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        dataset_split_info_t *v = inca_realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) return INCA_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    dataset_split_info_t *e = &l->v[l->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    memcpy(e->n, n, sizeof e->n);
    e->is_default = is_default;
    return INCA_OK;
}

/* store_record_each callback (the store's lock is held: no store calls here) */
static int collect_split(void *ctx, const char *key, const void *val, size_t len) {
    split_list_t *l = ctx;
    const char *name = key + strlen(DATASET_SPLIT_PREFIX);
    int64_t n[SPLIT_COUNT];
    if (len != sizeof n || strlen(name) >= DATASET_SPLIT_NAME_MAX || !*name) {
        l->rc = inca_fail(INCA_EINVAL, "%s: record '%s' is not a split's counts: the store is corrupt", l->path, key);
        return 1;
    }
    memcpy(n, val, sizeof n);
    if (n[0] < 0 || n[1] < 0 || n[2] < 0) {
        l->rc = inca_fail(INCA_EINVAL, "%s: record '%s' holds a negative count: the store is corrupt", l->path, key);
        return 1;
    }
    l->rc = split_list_add(l, name, n, 0);
    return l->rc != INCA_OK;
}

/* The default split's name from its record ("" when it has none). */
static int read_split_name(store_t *s, char *out) {
    const void *p;
    size_t len;
    out[0] = '\0';
    int rc = store_record_get(s, DATASET_SPLIT_NAME_KEY, &p, &len);
    if (rc == INCA_ENOTFOUND) {
        inca_err_clear();
        return INCA_OK;
    }
    if (rc) return rc;
    if (len == 0 || len >= DATASET_SPLIT_NAME_MAX || memchr(p, '\0', len))
        return inca_fail(INCA_EINVAL, "%s: record '%s' is not a split name: the store is corrupt", store_path(s),
                         DATASET_SPLIT_NAME_KEY);
    memcpy(out, p, len);
    out[len] = '\0';
    return INCA_OK;
}

int dataset_splits_list(store_t *s, dataset_split_info_t **out, int *count) {
    split_list_t l = {.path = store_path(s)};
    char def[DATASET_SPLIT_NAME_MAX];
    *out = NULL;
    *count = 0;
    int rc = read_split_name(s, def);
    if (!rc) rc = split_list_add(&l, def, store_meta(s)->split_n, 1);
    if (!rc) rc = store_record_each(s, DATASET_SPLIT_PREFIX, collect_split, &l);
    if (!rc) rc = l.rc;
    if (rc) {
        inca_free(l.v);
        return rc;
    }
    *out = l.v;
    *count = l.n;
    return INCA_OK;
}

/* The arrays of a named split, against its counts and the node count. */
static int load_named(store_t *s, const dataset_split_info_t *inf, int64_t n, dataset_named_split_t *ns) {
    memset(ns, 0, sizeof *ns);
    snprintf(ns->name, sizeof ns->name, "%s", inf->name);
    int rc = INCA_OK;
    for (int sp = 0; sp < SPLIT_COUNT && !rc; sp++) {
        char name[DATASET_SPLIT_NAME_MAX + 32];
        named_array(name, sizeof name, inf->name, sp);
        rc = store_array_load(s, name, DT_I64, (void **)&ns->ids[sp], &ns->n[sp]);
        if (!rc && ns->n[sp] != inf->n[sp])
            rc = inca_fail(INCA_EINVAL, "%s: array '%s' has %lld entries, its record says %lld: the store is corrupt",
                           store_path(s), name, (long long)ns->n[sp], (long long)inf->n[sp]);
        int64_t i;
        if (!rc && (i = first_outside_i64(ns->ids[sp], ns->n[sp], 0, n)) < ns->n[sp])
            rc = bad_entry(store_path(s), name, i, ns->ids[sp][i], 0, n);
    }
    if (rc)
        for (int sp = 0; sp < SPLIT_COUNT; sp++) {
            inca_free(ns->ids[sp]);
            ns->ids[sp] = NULL;
        }
    return rc;
}

/* DATASET_ALL_SPLITS: every named split into d->more. */
static int load_all_named(store_t *s, dataset_t *d) {
    dataset_split_info_t *v = NULL;
    int k = 0, rc = dataset_splits_list(s, &v, &k);
    if (rc) return rc;
    /* one slot more: a random split may push the default out to be kept (dataset_split_apply) */
    if (!(d->more = inca_calloc((size_t)k, sizeof *d->more))) rc = INCA_ENOMEM;
    d->more_loaded = rc == INCA_OK;
    for (int i = 1; i < k && !rc; i++) {
        rc = load_named(s, &v[i], d->n, &d->more[i - 1]);
        if (!rc) d->n_more = i;
    }
    inca_free(v);
    return rc;
}

/* --split random:TR,VA,TE[:SEED] drawn into d's default split (seed: the run's, unless the spec
 * names its own). */
static int split_apply_random(const char *spec, uint64_t seed, dataset_t *d) {
    double fr[3];
    uint64_t sseed = 0;
    int has_seed = 0;   /* random:TR,VA,TE:SEED keeps the split whatever the training seed */
    int rc = split_parse_seed(spec, fr, &sseed, &has_seed);
    if (rc) return rc;
    /* with every split loaded, a named default stays among them (its slot was kept free) */
    dataset_named_split_t keep;
    memset(&keep, 0, sizeof keep);
    const int move = d->more_loaded && d->split_name[0];
    if (move) {
        snprintf(keep.name, sizeof keep.name, "%s", d->split_name);
        for (int sp = 0; sp < SPLIT_COUNT; sp++) {
            keep.n[sp] = d->split_n[sp];
            if (d->split_n[sp] > 0 && !(keep.ids[sp] = inca_malloc(sizeof(int64_t) * (size_t)d->split_n[sp]))) rc = INCA_ENOMEM;
            else if (d->split_n[sp] > 0) memcpy(keep.ids[sp], d->split[sp], sizeof(int64_t) * (size_t)d->split_n[sp]);
        }
    }
    if (!rc) rc = split_random(d, fr, has_seed ? sseed : seed);
    if (rc) {
        for (int sp = 0; sp < SPLIT_COUNT; sp++) inca_free(keep.ids[sp]);
        return rc;
    }
    if (move) d->more[d->n_more++] = keep;
    d->split_name[0] = '\0';
    return INCA_OK;
}

/* Whether the store at path holds one split only, and that one unnamed (*only). */
static int split_only_unnamed(const char *path, int *only) {
    store_t *s = NULL;
    dataset_split_info_t *v = NULL;
    int k = 0, rc = store_open(path, STORE_RDONLY, &s);
    if (!rc) rc = dataset_splits_list(s, &v, &k);
    *only = !rc && k == 1 && !v[0].name[0];
    inca_free(v);
    store_close(&s);
    return rc;
}

/* The split named spec among d->more (loaded with DATASET_ALL_SPLITS) swapped in as the
 * default; 0 when there is none of that name. */
static int split_swap_in(dataset_t *d, const char *spec) {
    for (int32_t i = 0; i < d->n_more; i++) {
        dataset_named_split_t *ns = &d->more[i];
        if (strcmp(ns->name, spec) != 0) continue;
        for (int sp = 0; sp < SPLIT_COUNT; sp++) {
            int64_t *ids = d->split[sp], n = d->split_n[sp];
            d->split[sp] = ns->ids[sp];
            d->split_n[sp] = ns->n[sp];
            ns->ids[sp] = ids;
            ns->n[sp] = n;
        }
        char old[DATASET_SPLIT_NAME_MAX];
        snprintf(old, sizeof old, "%s", d->split_name);
        snprintf(d->split_name, sizeof d->split_name, "%s", spec);
        snprintf(ns->name, sizeof ns->name, "%s", old);
        if (!old[0]) {   /* an unnamed default cannot be a named split: it goes */
            for (int sp = 0; sp < SPLIT_COUNT; sp++) inca_free(ns->ids[sp]);
            *ns = d->more[--d->n_more];
        }
        return 1;
    }
    return 0;
}

/* The split named spec loaded from the store at path in place of d's default. */
static int split_load_stored(const char *path, const char *spec, dataset_t *d) {
    store_t *s = NULL;
    dataset_split_info_t *v = NULL;
    int k = 0, rc = store_open(path, STORE_RDONLY, &s);
    if (!rc) rc = dataset_splits_list(s, &v, &k);
    int at = -1;
    for (int i = 1; i < k && !rc; i++)
        if (strcmp(v[i].name, spec) == 0) at = i;
    if (!rc && at < 0) {
        char avail[1024] = "";
        size_t l = 0;
        for (int i = 0; i < k && l < sizeof avail - 80; i++)
            l += (size_t)snprintf(avail + l, sizeof avail - l, "%s%s%s", i ? ", " : "", v[i].name[0] ? v[i].name : "stored",
                                  v[i].is_default ? " (the default)" : "");
        rc = inca_fail(INCA_EINVAL, "%s: --split %s: no such split; the store holds %s; or give random:TR,VA,TE[:SEED]",
                       path, spec, avail);
    }
    dataset_named_split_t ns;
    if (!rc && !(rc = load_named(s, &v[at], d->n, &ns))) {
        for (int sp = 0; sp < SPLIT_COUNT; sp++) {
            inca_free(d->split[sp]);
            d->split[sp] = ns.ids[sp];
            d->split_n[sp] = ns.n[sp];
        }
        snprintf(d->split_name, sizeof d->split_name, "%s", ns.name);
    }
    inca_free(v);
    store_close(&s);
    return rc;
}

int dataset_split_apply(const char *path, const char *spec, uint64_t seed, dataset_t *d) {
    if (!spec || strcmp(spec, "stored") == 0) return INCA_OK;
    if (strncmp(spec, "random:", 7) == 0) return split_apply_random(spec, seed, d);
    if (d->split_name[0] && strcmp(spec, d->split_name) == 0) return INCA_OK;
    /* stores ingested before splits had names took "public" for their one split */
    if (!d->split_name[0] && d->n_more == 0 && strcmp(spec, "public") == 0) {
        int only = 0, rc = split_only_unnamed(path, &only);
        if (rc) return rc;
        if (only) return INCA_OK;
    }
    if (split_swap_in(d, spec)) return INCA_OK;   /* loaded with DATASET_ALL_SPLITS: swapped in */
    return split_load_stored(path, spec, d);
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
    if (!rc) rc = read_split_name(s, d->split_name);
    if (!rc && (flags & DATASET_ALL_SPLITS)) rc = load_all_named(s, d);
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
