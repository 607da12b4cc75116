/* See shard.h. Array names in a shard: shard/l2g (global ids of the own and halo rows, sorted),
 * shard/x (their feature rows), shard/a/{rowptr,col,val} and shard/at/... (the own rows of Â,
 * Âᵀ), shard/m0 (the own rows of M^0), shard/plan/{node_lo,part_lo}, the record shard/info; plus
 * y, split/<name> and the partitioning under the names a store always uses. */
#include "nn/shard.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/partition_store.h"
#include "loaders/store.h"
#include "nn/layer.h"
#include "nn/model.h"
#include "nn/train_common.h"
#include "nn/train_prep.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHARD_VERSION 3   /* 2: a directed graph's gcn Âᵀ kept (shards of version 1 lack it);
                           * 3: the job id */

typedef struct shard_info {
    int32_t version, rank, ranks, featnorm, norm, has_m0, m0_dtype, pad;
    int64_t n, f, k, lo, hi, n_local;
    int64_t job;   /* one inca shard run's, in every shard it wrote: a set mixing two runs is refused */
} shard_info_t;

/* A run's id: its start time and process, mixed (splitmix64); what ties the shards it wrote */
static int64_t shard_job_id(void) {
    return (int64_t)(rng_splitmix64((uint64_t)(inca_now() * 1e9) ^ ((uint64_t)getpid() << 40)) >> 1);   /* >= 0 */
}

static void shard_name(char *buf, size_t len, const char *dir, int r, int p) {
    snprintf(buf, len, "%s/rank-%d-of-%d.lmdb", dir, r, p);
}

/* Whether name is a shard's whole name, rank-R-of-P.lmdb with 0 <= R < P (not a .tmp left by an
 * interrupted shard), with R and P. */
static int shard_name_parse(const char *name, int *r, int *p) {
    int end = 0;
    return sscanf(name, "rank-%d-of-%d.lmdb%n", r, p, &end) == 2 && name[end] == 0 && *p >= 1 && *r >= 0 && *r < *p;
}

int shard_dir_ranks(const char *dir, int rank, int *ranks) {
    DIR *dp = opendir(dir);
    int found = 0;
    for (struct dirent *e; dp && (e = readdir(dp));) {
        int r = -1, p = 0;
        if (!shard_name_parse(e->d_name, &r, &p)) continue;
        if (r == rank && (!found || p == *ranks)) {   /* this rank's shard of some P */
            if (!found || *ranks != p) *ranks = p;
            found = 1;
        } else if (!found) {
            *ranks = p;
            found = -1;   /* shards, but none of this rank's yet */
        }
    }
    if (dp) closedir(dp);
    return found;
}

static int rr_cmp(const void *a, const void *b) {
    const int *x = a, *y = b;
    return x[1] != y[1] ? (x[1] > y[1]) - (x[1] < y[1]) : (x[0] > y[0]) - (x[0] < y[0]);
}

int shard_dir_list(const char *dir, int (*rr)[2], int cap) {
    DIR *dp = opendir(dir);
    int n = 0;
    for (struct dirent *e; dp && (e = readdir(dp));) {
        int r = -1, p = 0;
        if (!shard_name_parse(e->d_name, &r, &p)) continue;
        if (n < cap) { rr[n][0] = r; rr[n][1] = p; }
        n++;
    }
    if (dp) closedir(dp);
    if (n > 0 && cap > 0) qsort(rr, (size_t)(n < cap ? n : cap), sizeof rr[0], rr_cmp);
    return n;
}

int shard_dir_explain(const char *dir) {
    char mdb[4200], one[256] = "", tmp[256] = "";
    struct stat sb;
    snprintf(mdb, sizeof mdb, "%s/data.mdb", dir);
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || stat(mdb, &sb) == 0) return INCA_OK;
    DIR *dp = opendir(dir);
    for (struct dirent *e; dp && (e = readdir(dp));) {
        int r = -1, p = 0, end = 0;
        if (shard_name_parse(e->d_name, &r, &p)) snprintf(one, sizeof one, "%s", e->d_name);
        else if (sscanf(e->d_name, "rank-%d-of-%d.lmdb.tmp%n", &r, &p, &end) == 2 && e->d_name[end] == 0)
            snprintf(tmp, sizeof tmp, "%s", e->d_name);
    }
    if (dp) closedir(dp);
    if (one[0])
        return inca_fail(INCA_EINVAL, "%s: a folder of inca shard's stores, not a store: inca info %s/%s shows one, "
                         "inca verify %s checks them all, mpirun -np P inca train %s trains on them", dir, dir, one, dir, dir);
    if (tmp[0])
        return inca_fail(INCA_EINVAL, "%s: holds only an interrupted inca shard run's temporaries (%s): run inca shard "
                         "again", dir, tmp);
    return INCA_OK;
}

/* The rank's local rows (the own range [lo, hi) and the halo hids[0..nh)) into l2g, their
 * feature rows into xl, the own rows' Â (and Âᵀ when rpt) rowptr from 0 into rp (rpt). */
static void shard_local_rows(const layout_views_t *v, int64_t lo, int64_t hi, const int64_t *hids, int64_t nh,
                             int64_t f, int64_t *l2g, float *xl, int64_t *rp, int64_t *rpt) {
    const int64_t nl = (hi - lo) + nh;
    /* the own range and the halo merged in global order */
    int64_t a = 0, m = 0;
    for (int64_t g = lo; g <= hi; g++) {
        while (a < nh && hids[a] < g) l2g[m++] = hids[a++];
        if (g < hi) l2g[m++] = g;
    }
    while (a < nh) l2g[m++] = hids[a++];
    for (int64_t i = 0; i < nl; i++) memcpy(xl + i * f, v->x + l2g[i] * f, sizeof(float) * (size_t)f);
    for (int64_t i = 0; i <= hi - lo; i++) rp[i] = v->a.rowptr[lo + i] - v->a.rowptr[lo];
    if (rpt) for (int64_t i = 0; i <= hi - lo; i++) rpt[i] = v->at.rowptr[lo + i] - v->at.rowptr[lo];
}

/* labels and splits of the own nodes (permuted ids in [lo, hi)), in the dataset's own numbering:
 * y[0..n) (-1 elsewhere), split[sp][0..sn[sp]); returns the labelled count */
static int64_t shard_own_labels(const dataset_t *d, const partition_t *p, int64_t lo, int64_t hi, int32_t *y,
                                int64_t *const *split, int64_t *sn) {
    int64_t labeled = 0;
    for (int64_t u = 0; u < d->n; u++) {
        const int64_t g = p->perm[u];
        y[u] = g >= lo && g < hi && d->y ? d->y[u] : -1;
        labeled += y[u] >= 0;
    }
    for (int sp = 0; sp < SPLIT_COUNT; sp++)
        for (int64_t i = 0; i < d->split_n[sp]; i++) {
            const int64_t g = p->perm[d->split[sp][i]];
            if (g >= lo && g < hi) split[sp][sn[sp]++] = d->split[sp][i];
        }
    return labeled;
}

/* The own rows [lo, hi) of Â, Âᵀ (when rpt) and M^0 (when v has it) put through w, whole. */
static int shard_put_adjacency(store_wtx_t *w, const layout_views_t *v, int64_t lo, int64_t hi, int64_t f,
                               const int64_t *rp, const int64_t *rpt) {
    const int64_t nz0 = v->a.rowptr[lo], nnz = v->a.rowptr[hi] - nz0;
    const int64_t es = v->m0_dtype == HIST_BF16 ? 2 : 4;
    int rc = store_wtx_put_array_whole(w, "shard/a/rowptr", DT_I64, rp, hi - lo + 1);
    if (!rc) rc = store_wtx_put_array_whole(w, "shard/a/col", DT_I32, v->a.col + nz0, nnz);
    if (!rc) rc = store_wtx_put_array_whole(w, "shard/a/val", DT_F32, v->a.val + nz0, nnz);
    if (!rc && rpt) {
        const int64_t t0 = v->at.rowptr[lo], tn = v->at.rowptr[hi] - t0;
        rc = store_wtx_put_array_whole(w, "shard/at/rowptr", DT_I64, rpt, hi - lo + 1);
        if (!rc) rc = store_wtx_put_array_whole(w, "shard/at/col", DT_I32, v->at.col + t0, tn);
        if (!rc) rc = store_wtx_put_array_whole(w, "shard/at/val", DT_F32, v->at.val + t0, tn);
    }
    if (!rc && v->m0)
        rc = store_wtx_put_array_whole(w, "shard/m0", v->m0_dtype == HIST_BF16 ? DT_BF16 : DT_F32,
                                       (const char *)v->m0 + lo * f * es, (hi - lo) * f);
    return rc;
}

/* one rank's shard, written to tmp (a fresh store) */
static int write_one(const char *tmp, const dataset_t *d, const partition_t *p, const dist_plan_t *plan,
                     const layout_views_t *v, const shard_opts_t *o, int norm, int r, int64_t *own, int64_t *halo) {
    const int64_t n = d->n, f = d->f, lo = plan->node_lo[r], hi = plan->node_lo[r + 1];
    int64_t *hids = NULL, nh = 0, *l2g = NULL, *split[SPLIT_COUNT] = {0}, sn[SPLIT_COUNT] = {0};
    float *xl = NULL;
    int32_t *y = NULL;
    int64_t *rp = NULL, *rpt = NULL;
    store_t *s = NULL;
    store_wtx_t *w = NULL;
    int rc = dist_halo(&v->a, plan, r, &hids, &nh);
    if (rc != INCA_OK) return rc;
    /* Âᵀ (mean): a batch's backward reads only its in-batch entries, so its own rows are kept
     * whole and its columns need no rows here */
    const int64_t nl = (hi - lo) + nh;
    *own = hi - lo;
    *halo = nh;
    l2g = inca_malloc(sizeof *l2g * (size_t)(nl ? nl : 1));
    xl = inca_malloc(sizeof *xl * (size_t)(nl * f > 0 ? nl * f : 1));
    y = inca_malloc(sizeof *y * (size_t)(n ? n : 1));
    rp = inca_malloc(sizeof *rp * (size_t)(hi - lo + 1));
    if (v->at.rowptr) rpt = inca_malloc(sizeof *rpt * (size_t)(hi - lo + 1));
    for (int sp = 0; sp < SPLIT_COUNT; sp++) split[sp] = inca_malloc(sizeof(int64_t) * (size_t)(d->split_n[sp] ? d->split_n[sp] : 1));
    if (!l2g || !xl || !y || !rp || (v->at.rowptr && !rpt) || !split[0] || !split[1] || !split[2]) { rc = INCA_ENOMEM; goto done; }
    shard_local_rows(v, lo, hi, hids, nh, f, l2g, xl, rp, rpt);
    const int64_t labeled = shard_own_labels(d, p, lo, hi, y, split, sn);
    store_meta_t meta = {.magic = STORE_MAGIC, .version = STORE_VERSION, .nodes = n, .edges = d->adj.nnz, .features = f,
                         .classes = (int32_t)d->c, .feat_dtype = DT_F32, .labeled = labeled,
                         .split_n = {sn[0], sn[1], sn[2]}};
    snprintf(meta.source, sizeof meta.source, "shard %d of %d (%.200s)", r, plan->ranks, d->source);
    shard_info_t info = {.version = SHARD_VERSION, .rank = r, .ranks = plan->ranks, .featnorm = o->featnorm, .norm = norm,
                         .has_m0 = v->m0 != NULL, .m0_dtype = (int32_t)v->m0_dtype, .n = n, .f = f, .k = p->k,
                         .lo = lo, .hi = hi, .n_local = nl, .job = o->job};
    /* the meta first (a store opens only with one), then the arrays through the map: whole
     * values past 2 GiB need it (store.h) */
    if ((rc = store_create(tmp, &s)) != INCA_OK || (rc = store_write_begin(s, &w)) != INCA_OK ||
        (rc = store_wtx_put_meta(w, &meta)) != INCA_OK || (rc = store_write_commit(&w)) != INCA_OK)
        goto done;
    store_close(&s);
    if ((rc = store_open(tmp, STORE_RDWR_MAP, &s)) != INCA_OK || (rc = store_write_begin(s, &w)) != INCA_OK) goto done;
    rc = store_wtx_put_record(w, "shard/info", &info, sizeof info);
    if (!rc) rc = store_wtx_put_array(w, "y", DT_I32, y, n);
    static const char *const spn[SPLIT_COUNT] = {"split/train", "split/valid", "split/test"};
    for (int sp = 0; sp < SPLIT_COUNT && !rc; sp++)
        if (sn[sp] > 0) rc = store_wtx_put_array(w, spn[sp], DT_I64, split[sp], sn[sp]);
    if (!rc) rc = store_wtx_put_array(w, "shard/plan/node_lo", DT_I64, plan->node_lo, plan->ranks + 1);
    if (!rc) rc = store_wtx_put_array(w, "shard/plan/part_lo", DT_I64, plan->part_lo, plan->ranks + 1);
    if (!rc) rc = store_wtx_put_array_whole(w, "shard/l2g", DT_I64, l2g, nl);
    if (!rc) rc = store_wtx_put_array_whole(w, "shard/x", DT_F32, xl, nl * f);
    if (!rc) rc = shard_put_adjacency(w, v, lo, hi, f, rp, rpt);
    if (!rc) rc = store_write_commit(&w);
    if (!rc) rc = store_partition_save(s, p);
done:
    store_write_abort(&w);
    store_close(&s);
    for (int sp = 0; sp < SPLIT_COUNT; sp++) inca_free(split[sp]);
    inca_free(hids);
    inca_free(l2g);
    inca_free(xl);
    inca_free(y);
    inca_free(rp);
    inca_free(rpt);
    return rc;
}

int shard_write(const char *store_path, const shard_opts_t *o, const char *dir, shard_stats_t *st) {
    if (o->ranks < 1 || o->ranks > 64) return inca_fail(INCA_EINVAL, "--ranks %d: expected 1 to 64", o->ranks);
    int rc;
    if (o->model != NN_GCN && o->model != NN_SAGE)
        return inca_fail(INCA_EINVAL, "--model %s: shards carry gcn or sage adjacencies", model_kind_name(o->model));
    dataset_t d;
    partition_t p = {0};
    dist_plan_t plan = {0};
    layout_views_t v;
    store_t *s = NULL;
    memset(&v, 0, sizeof v);
    if ((rc = dataset_load_ex(store_path, DATASET_NO_X | DATASET_NO_GRAPH, &d)) != INCA_OK) return rc;
    train_config_t c;
    train_config_default(&c);
    c.model = o->model;
    c.method = TRAIN_INCAGG;   /* M^0 with the layout */
    c.history_dtype = o->m0_dtype;
    c.parts = (int)o->parts;
    if (o->parts < 1 || o->parts > d.n) {   /* train_partition would take 40 or n instead, unsaid */
        rc = inca_fail(INCA_EINVAL, "--parts %lld: expected 1 to the store's %lld nodes", (long long)o->parts, (long long)d.n);
        goto done;
    }
    snprintf(c.partition, sizeof c.partition, "%s", o->partition);
    c.feature_norm = o->featnorm;
    c.store_path = store_path;
    if ((rc = train_partition(&d, &c, &p, NULL)) != INCA_OK || (rc = train_view_open(&d, &c, &p, &s, &v)) != INCA_OK) goto done;
    if ((rc = dist_plan_make(&v.a, p.bounds, p.k, o->ranks, &plan)) != INCA_OK) goto done;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        const int e = errno;
        if ((rc = inca_out_check(dir)) == INCA_OK) rc = inca_fail(INCA_EIO, "%s: cannot create the folder: %s", dir, strerror(e));
        goto done;
    }
    struct stat sb;   /* an existing file is bad input (it failed writing the first shard, exit 1) */
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        rc = inca_fail(INCA_EINVAL, "%s: exists and is not a folder (the shards go in a folder)", dir);
        goto done;
    }
    /* every rank's shard written first, then moved into place: a failure leaves the old set */
    shard_opts_t oj = *o;
    oj.job = shard_job_id();
    for (int r = 0; r < o->ranks && rc == INCA_OK; r++) {
        char path[4096], tmp[4200];
        shard_name(path, sizeof path, dir, r, o->ranks);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        if ((rc = inca_rmtree(tmp)) != INCA_OK) break;
        int64_t own = 0, halo = 0;
        rc = write_one(tmp, &d, &p, &plan, &v, &oj, nn_kind_norm(o->model), r, &own, &halo);
        if (rc != INCA_OK) rc = inca_err_untemp(rc, tmp, path);   /* the message names the shard */
        if (st) {
            st->own_rows[r] = own;
            st->halo_rows[r] = halo;
        }
    }
    for (int r = 0; r < o->ranks; r++) {
        char path[4096], tmp[4200];
        shard_name(path, sizeof path, dir, r, o->ranks);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        if (rc != INCA_OK) {   /* a failure: every temporary goes (a missing one is fine), nothing moves */
            inca_rmtree(tmp);
            continue;
        }
        if ((rc = inca_rmtree(path)) == INCA_OK && rename(tmp, path) != 0)
            rc = inca_fail(INCA_EIO, "%s: cannot move the new shard into place: %s", path, strerror(errno));
        if (rc != INCA_OK) inca_rmtree(tmp);
        if (rc == INCA_OK && st) {
            store_t *q = NULL;
            st->bytes[r] = store_open(path, STORE_RDONLY, &q) == INCA_OK ? store_disk_bytes(q) + store_side_bytes(q) : 0;
            store_close(&q);
        }
    }
done:
    dist_plan_free(&plan);
    store_close(&s);
    partition_free(&p);
    dataset_free(&d);
    return rc;
}

void shard_free(shard_t *s) {
    if (!s) return;
    dataset_free(&s->d);
    partition_free(&s->p);
    dist_plan_free(&s->plan);
    if (s->x_map) munmap(s->x_map, (size_t)s->x_bytes);
    if (s->m0_map) munmap(s->m0_map, (size_t)s->m0_bytes);
    inca_free(s->rowptr);
    inca_free(s->rowptr_t);
    inca_free(s->col);
    inca_free(s->col_t);
    inca_free(s->val);
    inca_free(s->val_t);
    memset(s, 0, sizeof *s);
}

/* n rows of `bytes` zero pages, committed only where written */
static void *lazy_map(int64_t bytes, const char *what) {
    if (inca_alloc_injected((size_t)bytes)) return NULL;
    void *p = mmap(NULL, (size_t)(bytes > 0 ? bytes : 1), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        inca_fail(INCA_ENOMEM, "out of memory mapping %lld bytes for %s", (long long)bytes, what);
        return NULL;
    }
    return p;
}

/* the own rows [lo, hi) of a global n x n CSR from the shard's rows: rowptr of n + 1 */
static int own_csr(store_t *st, const char *base, int64_t n, int64_t lo, int64_t hi, int64_t **rp, int32_t **col,
                   float **val, csr_t *out) {
    char name[64];
    const void *prp, *pcol, *pval;
    int64_t nrp = 0, ncol = 0, nval = 0;
    snprintf(name, sizeof name, "%s/rowptr", base);
    int rc = store_array_view(st, name, DT_I64, &prp, &nrp);
    snprintf(name, sizeof name, "%s/col", base);
    if (!rc) rc = store_array_view(st, name, DT_I32, &pcol, &ncol);
    snprintf(name, sizeof name, "%s/val", base);
    if (!rc) rc = store_array_view(st, name, DT_F32, &pval, &nval);
    if (rc) return rc;
    const int64_t *r0 = prp;
    if (nrp != hi - lo + 1 || ncol != nval || r0[hi - lo] != ncol)
        return inca_fail(INCA_EINVAL, "%s: %s holds %lld rows and %lld/%lld entries, expected %lld rows: the shard is corrupt",
                         store_path(st), base, (long long)nrp - 1, (long long)ncol, (long long)nval, (long long)(hi - lo));
    *rp = inca_malloc(sizeof **rp * (size_t)(n + 1));
    *col = inca_malloc(sizeof **col * (size_t)(ncol ? ncol : 1));
    *val = inca_malloc(sizeof **val * (size_t)(ncol ? ncol : 1));
    if (!*rp || !*col || !*val) return INCA_ENOMEM;
    for (int64_t v = 0; v <= n; v++) (*rp)[v] = v <= lo ? 0 : v >= hi ? ncol : r0[v - lo];
    memcpy(*col, pcol, sizeof **col * (size_t)ncol);
    memcpy(*val, pval, sizeof **val * (size_t)ncol);
    *out = (csr_t){.n_rows = n, .n_cols = n, .nnz = ncol, .rowptr = *rp, .col = *col, .val = *val, .owned = 0};
    return dataset_check_csr(store_path(st), name, name, out);
}

static int open_path(int rank, int ranks, shard_t *out);

int shard_open(const char *dir, int rank, int ranks, shard_t *out) {
    memset(out, 0, sizeof *out);
    dataset_init(&out->d);
    shard_name(out->path, sizeof out->path, dir, rank, ranks);
    if (!inca_path_exists(out->path)) {
        int have = 0;
        const int any = shard_dir_ranks(dir, rank, &have);
        /* a shard folder is one P-rank job's data: what trains it is mpirun with that P (re-sharding
         * for this rank count would only be right if the user meant to run that many) */
        if (any && have != ranks)
            return inca_fail(INCA_EINVAL, "%s: the folder holds shards of a %d-rank job; train it as 'mpirun -np %d inca "
                             "train %s ...' (this run has %d rank%s), or train the original store", dir, have, have, dir,
                             ranks, ranks == 1 ? "" : "s");
        if (any)
            return inca_fail(INCA_EINVAL, "%s: rank-%d-of-%d.lmdb is missing (this folder holds other ranks' shards); copy "
                             "rank %d's shard from the folder inca shard wrote", dir, rank, ranks, rank);
        return inca_fail(INCA_ENOTFOUND, "%s: no shards (inca shard STORE --ranks P --out %s)", dir, dir);
    }
    return open_path(rank, ranks, out);
}

/* the shard/info record of the shard at path */
static int read_info(const char *path, shard_info_t *in) {
    store_t *st = NULL;
    const void *rec = NULL;
    size_t len = 0;
    int rc = store_open(path, STORE_RDONLY, &st);
    if (rc == INCA_OK) rc = store_record_get(st, "shard/info", &rec, &len);
    if (rc == INCA_OK && len != sizeof *in)
        rc = inca_fail(INCA_EINVAL, "%s: record shard/info has %zu bytes, expected %zu (a shard of another inca version: "
                       "run inca shard again)", path, len, sizeof *in);
    if (rc == INCA_OK) memcpy(in, rec, sizeof *in);
    store_close(&st);
    return rc;
}

int shard_check(const char *path) {
    shard_info_t in;
    int rc = read_info(path, &in);
    if (rc != INCA_OK) return rc;
    shard_t sh;
    memset(&sh, 0, sizeof sh);
    dataset_init(&sh.d);
    snprintf(sh.path, sizeof sh.path, "%s", path);
    rc = open_path(in.rank, in.ranks, &sh);
    shard_free(&sh);
    return rc;
}

int shard_job(const char *path, int64_t *job) {
    shard_info_t in;
    const int rc = read_info(path, &in);
    if (rc == INCA_OK) *job = in.job;
    return rc;
}

int shard_describe(const char *path, shard_desc_t *out) {
    shard_info_t in;
    const int rc = read_info(path, &in);
    if (rc != INCA_OK) return rc;
    *out = (shard_desc_t){.rank = in.rank, .ranks = in.ranks, .n = in.n, .parts = in.k, .own_rows = in.hi - in.lo,
                          .halo_rows = in.n_local - (in.hi - in.lo)};
    return INCA_OK;
}

int shard_is(const char *path) {
    store_t *st = NULL;
    const void *rec = NULL;
    size_t len = 0;
    int yes = store_open(path, STORE_RDONLY, &st) == INCA_OK && store_record_get(st, "shard/info", &rec, &len) == INCA_OK;
    store_close(&st);
    inca_err_clear();
    return yes;
}

/* A shard holds the one partitioning it was cut by (metis-K-s0, parmetis-K-s1, ...) */
typedef struct one_part { char name[64]; int count; } one_part_t;
static int note_part(void *ctx, const char *key, const void *val, size_t len) {
    (void)val;
    (void)len;
    one_part_t *o = ctx;
    snprintf(o->name, sizeof o->name, "%s", key + 5);   /* after "part:" */
    o->count++;
    return 0;
}

static int shard_partition_load(store_t *st, const char *path, int64_t k, partition_t *p) {
    one_part_t o = {.count = 0};
    int rc = store_record_each(st, "part:", note_part, &o);
    if (rc == INCA_OK && o.count != 1)
        return inca_fail(INCA_EINVAL, "%s: holds %d partitionings, expected the one it was cut by", path, o.count);
    if (rc == INCA_OK) rc = store_partition_load(st, o.name, p);
    if (rc == INCA_OK && p->k != k) {
        rc = inca_fail(INCA_EINVAL, "%s: partitioning %s has %lld parts, shard/info says %lld", path, o.name, (long long)p->k,
                       (long long)k);
        partition_free(p);
    }
    return rc;
}

/* The shard/info record of st into *in, checked against rank `rank` of `ranks` (path: the
 * shard's, for the messages). */
static int info_load(store_t *st, const char *path, int rank, int ranks, shard_info_t *in) {
    const void *rec = NULL;
    size_t len = 0;
    int rc = store_record_get(st, "shard/info", &rec, &len);
    if (rc == INCA_OK && len != sizeof *in) rc = inca_fail(INCA_EINVAL, "%s: record shard/info has %zu bytes, expected %zu", path, len, sizeof *in);
    if (rc == INCA_OK) {
        memcpy(in, rec, sizeof *in);
        if (in->version != SHARD_VERSION || in->rank != rank || in->ranks != ranks || in->lo < 0 || in->hi < in->lo || in->hi > in->n)
            rc = inca_fail(INCA_EINVAL, "%s: shard/info says version %d, rank %d of %d, rows [%lld, %lld) of %lld: expected "
                           "version %d, rank %d of %d", path, in->version, in->rank, in->ranks, (long long)in->lo,
                           (long long)in->hi, (long long)in->n, SHARD_VERSION, rank, ranks);
    }
    return rc;
}

/* the ownership plan into out->plan, checked against shard/info */
static int plan_load(store_t *st, const shard_info_t *in, int rank, int ranks, shard_t *out) {
    int64_t *nlo = NULL, *plo = NULL, c1 = 0, c2 = 0;
    int rc;
    if ((rc = store_array_load(st, "shard/plan/node_lo", DT_I64, (void **)&nlo, &c1)) ||
        (rc = store_array_load(st, "shard/plan/part_lo", DT_I64, (void **)&plo, &c2))) {
        inca_free(nlo);
        return rc;
    }
    out->plan = (dist_plan_t){.ranks = ranks, .k = in->k, .n = in->n, .part_lo = plo, .node_lo = nlo,
                              .weight = inca_calloc((size_t)ranks, sizeof(int64_t))};
    if (!out->plan.weight) return INCA_ENOMEM;
    if (c1 != ranks + 1 || c2 != ranks + 1 || nlo[rank] != in->lo || nlo[rank + 1] != in->hi)
        return inca_fail(INCA_EINVAL, "%s: the ownership plan disagrees with shard/info: the shard is corrupt", out->path);
    return INCA_OK;
}

/* features of the own and halo rows, at their global rows of out->x_map */
static int features_load(store_t *st, const shard_info_t *in, shard_t *out) {
    const void *pl = NULL, *px = NULL;
    int64_t cnt = 0, nl = 0;
    const int64_t n = in->n, f = in->f;
    int rc;
    if ((rc = store_array_view(st, "shard/l2g", DT_I64, &pl, &nl)) || (rc = store_array_view(st, "shard/x", DT_F32, &px, &cnt)))
        return rc;
    if (nl != in->n_local || cnt != nl * f)
        return inca_fail(INCA_EINVAL, "%s: shard/x holds %lld values for %lld rows of %lld: the shard is corrupt", out->path,
                         (long long)cnt, (long long)nl, (long long)f);
    out->x_bytes = (int64_t)sizeof(float) * n * f;
    if (!(out->x_map = lazy_map(out->x_bytes, "the shard's features"))) return INCA_ENOMEM;
    const int64_t *l2g = pl;
    for (int64_t i = 0; i < nl; i++) {
        if (l2g[i] < 0 || l2g[i] >= n || (i > 0 && l2g[i] <= l2g[i - 1]))
            return inca_fail(INCA_EINVAL, "%s: shard/l2g entry %lld = %lld is out of order or range: the shard is corrupt",
                             out->path, (long long)i, (long long)l2g[i]);
        memcpy((float *)out->x_map + l2g[i] * f, (const float *)px + i * f, sizeof(float) * (size_t)f);
    }
    return INCA_OK;
}

/* M^0's own rows, at their global rows of out->m0_map */
static int m0_load(store_t *st, const shard_info_t *in, shard_t *out) {
    const void *pm = NULL;
    int64_t cnt = 0;
    const int64_t n = in->n, f = in->f, lo = in->lo, hi = in->hi;
    const int es = in->m0_dtype == HIST_BF16 ? 2 : 4;
    int rc;
    if ((rc = store_array_view(st, "shard/m0", in->m0_dtype == HIST_BF16 ? DT_BF16 : DT_F32, &pm, &cnt))) return rc;
    if (cnt != (hi - lo) * f) return inca_fail(INCA_EINVAL, "%s: shard/m0 holds %lld values: the shard is corrupt", out->path, (long long)cnt);
    out->m0_bytes = es * n * f;
    if (!(out->m0_map = lazy_map(out->m0_bytes, "the shard's M^0"))) return INCA_ENOMEM;
    memcpy((char *)out->m0_map + lo * f * es, pm, (size_t)(cnt * es));
    return INCA_OK;
}

/* rank `rank` of `ranks` from out->path */
static int open_path(int rank, int ranks, shard_t *out) {
    store_t *st = NULL;
    shard_info_t in;
    int rc = store_open(out->path, STORE_RDONLY, &st);
    if (rc == INCA_OK) rc = info_load(st, out->path, rank, ranks, &in);
    if (rc != INCA_OK) goto done;
    const int64_t n = in.n, f = in.f, lo = in.lo, hi = in.hi;
    out->featnorm = in.featnorm;
    out->norm = in.norm;
    out->job = in.job;
    out->has_m0 = in.has_m0;
    if ((rc = plan_load(st, &in, rank, ranks, out))) goto done;
    if ((rc = features_load(st, &in, out))) goto done;
    if (in.has_m0 && (rc = m0_load(st, &in, out))) goto done;
    if ((rc = own_csr(st, "shard/a", n, lo, hi, &out->rowptr, &out->col, &out->val, &out->v.a))) goto done;
    if ((in.norm == NN_NORM_MEAN || store_has_array(st, "shard/at/rowptr")) &&   /* a directed graph's gcn Âᵀ too */
        (rc = own_csr(st, "shard/at", n, lo, hi, &out->rowptr_t, &out->col_t, &out->val_t, &out->v.at)))
        goto done;
    out->v.n = n;
    out->v.f = f;
    out->v.x = out->x_map;
    out->v.m0 = out->m0_map;
    out->v.m0_dtype = (hist_dtype_t)in.m0_dtype;
    if ((rc = shard_partition_load(st, out->path, in.k, &out->p))) goto done;
    store_close(&st);
    rc = dataset_load_ex(out->path, DATASET_NO_X | DATASET_NO_GRAPH, &out->d);
done:
    store_close(&st);
    if (rc != INCA_OK) shard_free(out);
    return rc;
}
