/* Stored partitionings (see partition_store.h). Tested in test_partition.c. */
#include "loaders/partition_store.h"
#include "loaders/dataset.h"
#include "graph/partition_par.h"
#include "core/alloc.h"
#include "core/status.h"
#include <stdio.h>
#include <string.h>

/* A partitioning is believed only when perm is a bijection of [0, n) and the bounds run
 * non-decreasing from 0 to n: a damaged array would otherwise index out of range later. */
static int partition_check(const partition_t *p, const char *kperm, const char *kbounds) {
    const int64_t n = p->n, k = p->k;
    if (p->bounds[0] != 0 || p->bounds[k] != n)
        return inca_fail(INCA_EINVAL, "array %s: bounds must run from 0 to %lld, got %lld .. %lld", kbounds, (long long)n,
                         (long long)p->bounds[0], (long long)p->bounds[k]);
    for (int64_t i = 0; i < k; i++)
        if (p->bounds[i + 1] < p->bounds[i])
            return inca_fail(INCA_EINVAL, "array %s: entry %lld decreases (%lld after %lld)", kbounds, (long long)(i + 1),
                             (long long)p->bounds[i + 1], (long long)p->bounds[i]);
    uint8_t *seen = inca_calloc((size_t)(n ? n : 1), 1);
    if (!seen) return INCA_ENOMEM;
    int rc = INCA_OK;
    for (int64_t v = 0; v < n && rc == INCA_OK; v++) {
        const int64_t w = p->perm[v];
        if (w < 0 || w >= n) rc = inca_fail(INCA_EINVAL, "array %s: entry %lld = %lld is outside [0, %lld)", kperm, (long long)v, (long long)w, (long long)n);
        else if (seen[w]++) rc = inca_fail(INCA_EINVAL, "array %s: entry %lld repeats new id %lld (not a permutation)", kperm, (long long)v, (long long)w);
    }
    inca_free(seen);
    return rc;
}

static void array_names(const char *name, char *perm, char *bounds, size_t len) {
    snprintf(perm, len, "part/%s/perm", name);
    snprintf(bounds, len, "part/%s/bounds", name);
}

int store_partition_save(store_t *s, const partition_t *p) {
    char kperm[128], kbounds[128], key[96];
    array_names(p->man.name, kperm, kbounds, sizeof kperm);
    snprintf(key, sizeof key, "part:%s", p->man.name);
    store_wtx_t *w = NULL;
    int rc = store_write_begin(s, &w);
    if (rc == INCA_OK) rc = store_wtx_put_array(w, kperm, DT_I64, p->perm, p->n);
    if (rc == INCA_OK) rc = store_wtx_put_array(w, kbounds, DT_I64, p->bounds, p->k + 1);
    if (rc == INCA_OK) rc = store_wtx_put_record(w, key, &p->man, sizeof p->man);
    if (rc == INCA_OK) return store_write_commit(&w);
    store_write_abort(&w);
    return inca_fail_ctx(rc, "while saving partitioning %s", p->man.name);
}

int store_partition_load(store_t *s, const char *name, partition_t *out) {
    memset(out, 0, sizeof *out);
    char kperm[128], kbounds[128], key[96];
    array_names(name, kperm, kbounds, sizeof kperm);
    snprintf(key, sizeof key, "part:%s", name);
    const void *rec = NULL;
    size_t len = 0;
    int rc = store_record_get(s, key, &rec, &len);
    if (rc != INCA_OK) return rc;
    if (len != sizeof(part_manifest_t))
        return inca_fail(INCA_EINVAL, "record %s: %zu bytes, expected %zu (written by another inca version? re-run inca partition)",
                         key, len, sizeof(part_manifest_t));
    memcpy(&out->man, rec, sizeof out->man);
    if (out->man.magic != PART_MAGIC || out->man.version != PART_VERSION)
        return inca_fail(INCA_EINVAL, "record %s: bad magic/version %08x/%u (expected %08x/%u)", key,
                         out->man.magic, out->man.version, PART_MAGIC, PART_VERSION);
    const store_meta_t *meta = store_meta(s);
    int64_t n = out->man.nodes, k = out->man.parts, cnt = 0;
    if (meta && meta->nodes != n)
        return inca_fail(INCA_EINVAL, "partitioning %s covers %lld nodes but the store has %lld", name, (long long)n, (long long)meta->nodes);
    if (k < 1 || k > (n > 0 ? n : 1))   /* partition_check reads bounds[k - 1] */
        return inca_fail(INCA_EINVAL, "record %s: %lld parts for %lld nodes: the store is corrupt; re-run inca partition", key,
                         (long long)k, (long long)n);
    void *perm = NULL, *bounds = NULL;
    rc = store_array_load(s, kperm, DT_I64, &perm, &cnt);
    if (rc == INCA_OK && cnt != n) rc = inca_fail(INCA_EINVAL, "array %s: %lld entries, expected %lld", kperm, (long long)cnt, (long long)n);
    if (rc == INCA_OK) rc = store_array_load(s, kbounds, DT_I64, &bounds, &cnt);
    if (rc == INCA_OK && cnt != k + 1) rc = inca_fail(INCA_EINVAL, "array %s: %lld entries, expected %lld", kbounds, (long long)cnt, (long long)(k + 1));
    out->perm = perm;
    out->bounds = bounds;
    out->n = n;
    out->k = k;
    if (rc == INCA_OK) rc = partition_check(out, kperm, kbounds);
    if (rc != INCA_OK) {
        part_manifest_t keep = out->man;
        partition_free(out);
        out->man = keep;
    }
    return rc;
}

int store_partition_get(store_t *s, const csr_t *adj, int64_t k, int method, uint64_t seed, partition_t *out, int *reused) {
    return store_partition_get_pg(s, adj, k, method, seed, NULL, out, reused);
}

int store_partition_get_pg(store_t *s, const csr_t *adj, int64_t k, int method, uint64_t seed,
                           const partition_progress_t *pg, partition_t *out, int *reused) {
    char name[64];
    partition_name(name, sizeof name, method, k, seed, 0);
    if (reused) *reused = 0;
    int rc = store_partition_load(s, name, out);
    if (rc == INCA_OK) {
        if (reused) *reused = 1;
        return INCA_OK;
    }
    if (rc != INCA_ENOTFOUND) return rc;
    inca_err_clear();
    csr_t own = {0};   /* no graph given (a dataset loaded without it): the store's */
    if (!adj && (rc = dataset_load_adj(s, &own)) != INCA_OK) return rc;
    rc = partition_compute_pg(adj ? adj : &own, k, method, seed, pg, out);
    csr_free(&own);
    if (rc == INCA_OK) rc = store_partition_save(s, out);
    if (rc != INCA_OK) partition_free(out);
    return rc;
}

int store_partition_get_par(store_t *s, comm_t *c, int64_t k, uint64_t seed, partition_t *out, int *reused) {
    char name[64];
    partition_name(name, sizeof name, PART_PARMETIS, k, seed, comm_size(c));
    if (reused) *reused = 0;
    int rc = store_partition_load(s, name, out);
    /* reuse only when every rank found it: the ranks must take the same branch */
    int64_t missing = rc != INCA_OK;
    if (rc == INCA_ENOTFOUND) inca_err_clear();
    else if (rc != INCA_OK) return rc;
    if ((rc = comm_allreduce_max_i64(c, &missing, 1, COMM_SETUP)) != INCA_OK) return rc;
    if (!missing) {
        if (reused) *reused = 1;
        return INCA_OK;
    }
    partition_free(out);
    const int P = comm_size(c), r = comm_rank(c);
    const int64_t n = store_meta(s) ? store_meta(s)->nodes : 0;
    csr_t slice = {0};
    int64_t nn = 0;
    rc = dataset_load_adj_rows(s, n * r / P, n * (r + 1) / P, &nn, &slice);
    if (rc == INCA_OK && nn != n)
        rc = inca_fail(INCA_EINVAL, "%s: the graph has %lld nodes, the store's meta %lld", store_path(s), (long long)nn, (long long)n);
    /* a rank that cannot read its slice says so before the collective call: every rank stops */
    int64_t bad = rc != INCA_OK;
    if (comm_allreduce_max_i64(c, &bad, 1, COMM_SETUP) != INCA_OK && rc == INCA_OK) rc = INCA_ERR;
    if (rc == INCA_OK && bad) rc = inca_fail(INCA_ERR, "ParMETIS: another rank could not read its rows of %s", store_path(s));
    if (rc == INCA_OK) rc = partition_par_compute(c, &slice, n * r / P, n, k, seed, out);
    csr_free(&slice);
    if (rc == INCA_OK && r == 0) rc = store_partition_save(s, out);
    if (rc != INCA_OK) partition_free(out);
    return rc;
}

typedef struct { char first[64], second[64]; int n; } par_names_t;
static int collect_par(void *ctx, const char *key, const void *val, size_t len) {
    (void)val; (void)len;
    par_names_t *c = ctx;
    snprintf(c->n == 0 ? c->first : c->second, sizeof c->first, "%s", key + 5);   /* past "part:" */
    return ++c->n > 2;
}

int store_partition_find_par(store_t *s, int64_t k, uint64_t seed, int ranks, char *name, size_t len) {
    const store_meta_t *m = store_meta(s);
    partition_name(name, len, PART_PARMETIS, k, seed, ranks);
    char key[96], what[64];
    snprintf(key, sizeof key, "part:%s", name);
    const void *v;
    size_t vl;
    int rc = store_record_get(s, key, &v, &vl);
    if (rc != INCA_ENOTFOUND || ranks > 0) return rc;
    inca_err_clear();
    snprintf(what, sizeof what, "%s", name);
    par_names_t c = {.n = 0};
    snprintf(key, sizeof key, "part:%s-r", what);
    if ((rc = store_record_each(s, key, collect_par, &c)) != INCA_OK) return rc;
    if (c.n == 0)
        return inca_fail(INCA_ENOTFOUND, "%s: no ParMETIS partitioning %s (of %lld nodes) stored", store_path(s), what,
                         (long long)(m ? m->nodes : 0));
    if (c.n > 1)
        return inca_fail(INCA_EINVAL, "%s: ParMETIS partitionings %s and %s%s are stored (other rank counts): name one",
                         store_path(s), c.first, c.second, c.n > 2 ? " and more" : "");
    snprintf(name, len, "%s", c.first);
    return INCA_OK;
}
