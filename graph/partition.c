/* METIS k-way / label-propagation / random partitioning and contiguous renumbering (see
 * partition.h). A non-symmetric graph is refused here; METIS itself is called in metis_kway.c.
 * Tested in test_partition.c. */
#include "graph/partition.h"
#include "graph/metis_kway.h"
#include "graph/partition_lp.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include <stdio.h>
#include <string.h>

static const char *const method_words[] = {"metis", "random", "parmetis", "lp"};
#define N_METHODS ((int)(sizeof method_words / sizeof method_words[0]))

int partition_method_parse(const char *s, int *method) {
    for (int i = 0; s && i < N_METHODS; i++)
        if (strcmp(s, method_words[i]) == 0) { *method = i; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--method: expected metis, lp, random or parmetis, got '%s'", s ? s : "");
}

const char *partition_method_name(int method) {
    return method >= 0 && method < N_METHODS ? method_words[method] : "unknown";
}

void partition_name(char *buf, size_t len, int method, int64_t k, uint64_t seed, int ranks) {
    if (method == PART_PARMETIS && ranks > 0)
        snprintf(buf, len, "%s-%lld-s%llu-r%d", partition_method_name(method), (long long)k, (unsigned long long)seed, ranks);
    else
        snprintf(buf, len, "%s-%lld-s%llu", partition_method_name(method), (long long)k, (unsigned long long)seed);
}

/* "-r<P>" (P >= 1, digits only) ending the string at t, for parmetis; *ranks gets P */
static int ranks_suffix(const char *t, int method, int *ranks) {
    int r = 0, used = 0;
    if (*t == 0) { *ranks = 0; return 1; }
    if (method != PART_PARMETIS || t[0] != '-' || t[1] != 'r' || t[2] < '1' || t[2] > '9') return 0;
    if (sscanf(t, "-r%d%n", &r, &used) != 1 || t[used] != 0 || r < 1) return 0;
    *ranks = r;
    return 1;
}

int partition_name_parse(const char *s, int *method, int64_t *k, uint64_t *seed, int *ranks) {
    int rk = 0;
    if (!ranks) ranks = &rk;
    const char *dash = s ? strchr(s, '-') : NULL;
    char word[16];
    const size_t wl = dash ? (size_t)(dash - s) : (s ? strlen(s) : 0);
    if (s && wl < sizeof word) {
        memcpy(word, s, wl);
        word[wl] = 0;
        long long kk = 0;
        unsigned long long ss = 0;
        int used = 0;
        for (int i = 0; i < N_METHODS; i++) {
            if (strcmp(word, method_words[i]) != 0) continue;
            if (!dash) { *method = i; *k = 0; *seed = 0; *ranks = 0; return INCA_OK; }
            if (sscanf(dash, "-%lld-s%llu%n", &kk, &ss, &used) == 2 && ranks_suffix(dash + used, i, ranks) && kk > 0 &&
                dash[1] >= '0' && dash[1] <= '9' && strstr(dash + 1, "-s")[2] >= '0' && strstr(dash + 1, "-s")[2] <= '9') {
                *method = i; *k = kk; *seed = ss;
                return INCA_OK;
            }
        }
    }
    return inca_fail(INCA_EINVAL, "--partition: expected metis|lp|random|parmetis or a stored name like metis-40-s0 or "
                     "parmetis-40-s0-r2, got '%s'",
                     s ? s : "");
}

void partition_free(partition_t *p) {
    if (!p) return;
    inca_free(p->perm);
    inca_free(p->bounds);
    memset(p, 0, sizeof *p);
}

int64_t partition_edge_cut(const csr_t *adj, const int32_t *part) {
    int64_t cross = 0;
    for (int64_t u = 0; u < adj->n_rows; u++)
        for (int64_t e = adj->rowptr[u]; e < adj->rowptr[u + 1]; e++) {
            int64_t v = adj->col[e];
            if (v != u && part[u] != part[v]) cross++;
        }
    return cross / 2;
}

static int assign_metis(const csr_t *adj, int64_t k, uint64_t seed, int32_t *part) {
    if (!csr_is_symmetric(adj))
        return inca_fail(INCA_EINVAL, "METIS needs a symmetric graph; this adjacency is not symmetric (re-ingest with --symmetrize)");
    return metis_kway(adj->n_rows, adj->rowptr, adj->col, NULL, NULL, k, seed, part);
}

static int assign_random(int64_t n, int64_t k, uint64_t seed, int32_t *part) {
    int64_t *order = inca_malloc(sizeof *order * (size_t)(n ? n : 1));
    if (!order) return INCA_ENOMEM;
    for (int64_t i = 0; i < n; i++) order[i] = i;
    rng_t r;
    rng_seed(&r, seed ^ 0x70617274ull);
    rng_shuffle_i64(&r, order, n);
    /* position i goes to part floor(i * k / n): sizes differ by at most one */
    for (int64_t i = 0; i < n; i++) part[order[i]] = (int32_t)((i * k) / n);
    inca_free(order);
    return INCA_OK;
}

static int assign_lp(const csr_t *adj, int64_t k, uint64_t seed, const partition_progress_t *pg, int32_t *part) {
    if (pg && pg->fn) pg->fn(pg->ctx, "checking symmetry", 0, 0);
    if (!csr_is_symmetric(adj))
        return inca_fail(INCA_EINVAL, "--method lp needs a symmetric graph; this adjacency is not symmetric (re-ingest with --symmetrize)");
    return partition_lp_assign_pg(adj, k, seed, pg, part, NULL);
}

int partition_name_parts(const char *name, int parts_given, int64_t *parts) {
    int m = 0;
    int64_t k = 0;
    uint64_t seed = 0;
    int rc = partition_name_parse(name, &m, &k, &seed, NULL);
    if (rc != INCA_OK || k == 0) return rc;
    if (parts_given && k != *parts)
        return inca_fail(INCA_EINVAL, "--partition %s has %lld parts, --parts %lld", name, (long long)k, (long long)*parts);
    *parts = k;
    return INCA_OK;
}

int partition_assign(const csr_t *adj, int64_t k, int method, uint64_t seed, int32_t *part, double *seconds) {
    return partition_assign_pg(adj, k, method, seed, NULL, part, seconds);
}

int partition_assign_pg(const csr_t *adj, int64_t k, int method, uint64_t seed, const partition_progress_t *pg,
                        int32_t *part, double *seconds) {
    double t0 = inca_now();
    int64_t n = adj->n_rows;
    if (!adj->rowptr || n <= 0) return inca_fail(INCA_EINVAL, "cannot partition: the store has no graph (0 nodes or no adjacency)");
    if (adj->n_cols != n) return inca_fail(INCA_EINVAL, "cannot partition a %lld x %lld adjacency (expected square)", (long long)n, (long long)adj->n_cols);
    if (k < 1) return inca_fail(INCA_EINVAL, "--parts: expected at least 1, got %lld", (long long)k);
    if (k > n) return inca_fail(INCA_EINVAL, "--parts: %lld parts for %lld nodes (expected at most one part per node)", (long long)k, (long long)n);
    if (k > INT32_MAX) return inca_fail(INCA_EINVAL, "--parts: %lld is too many", (long long)k);
    int rc = INCA_OK;
    if (k == 1) memset(part, 0, sizeof *part * (size_t)n);
    else if (method == PART_METIS) rc = assign_metis(adj, k, seed, part);
    else if (method == PART_RANDOM) rc = assign_random(n, k, seed, part);
    else if (method == PART_LP) rc = assign_lp(adj, k, seed, pg, part);
    else if (method == PART_PARMETIS)
        rc = inca_fail(INCA_EINVAL, "ParMETIS partitions over MPI ranks: inca partition STORE --parts %lld --method parmetis "
                       "--ranks P (or under mpirun -np P) stores it first", (long long)k);
    else rc = inca_fail(INCA_EINVAL, "unknown partition method %d", method);
    if (seconds) *seconds = inca_now() - t0;
    return rc;
}

int partition_from_parts(int64_t n, int64_t k, const int32_t *part, partition_t *out) {
    memset(out, 0, sizeof *out);
    out->perm = inca_malloc(sizeof *out->perm * (size_t)(n ? n : 1));
    out->bounds = inca_calloc((size_t)k + 1, sizeof *out->bounds);
    if (!out->perm || !out->bounds) { partition_free(out); return INCA_ENOMEM; }
    for (int64_t v = 0; v < n; v++) {
        if (part[v] < 0 || part[v] >= k) {
            int rc = inca_fail(INCA_EINVAL, "node %lld has part %d, expected [0, %lld)", (long long)v, part[v], (long long)k);
            partition_free(out);
            return rc;
        }
        out->bounds[part[v] + 1]++;
    }
    int64_t mn = INT64_MAX, mx = 0;
    for (int64_t p = 0; p < k; p++) {
        int64_t sz = out->bounds[p + 1];
        if (sz < mn) mn = sz;
        if (sz > mx) mx = sz;
        out->bounds[p + 1] += out->bounds[p];
    }
    /* stable counting sort: next free slot per part, walking old ids in order */
    int64_t *next = inca_malloc(sizeof *next * (size_t)k);
    if (!next) { partition_free(out); return INCA_ENOMEM; }
    memcpy(next, out->bounds, sizeof *next * (size_t)k);
    for (int64_t v = 0; v < n; v++) out->perm[v] = next[part[v]]++;
    inca_free(next);
    out->n = n;
    out->k = k;
    out->man.magic = PART_MAGIC;
    out->man.version = PART_VERSION;
    out->man.nodes = n;
    out->man.parts = k;
    out->man.min_part = mn;
    out->man.max_part = mx;
    return INCA_OK;
}

int partition_compute(const csr_t *adj, int64_t k, int method, uint64_t seed, partition_t *out) {
    return partition_compute_pg(adj, k, method, seed, NULL, out);
}

int partition_compute_pg(const csr_t *adj, int64_t k, int method, uint64_t seed, const partition_progress_t *pg,
                         partition_t *out) {
    memset(out, 0, sizeof *out);
    int64_t n = adj->n_rows;
    int32_t *part = inca_malloc(sizeof *part * (size_t)(n > 0 ? n : 1));
    if (!part) return INCA_ENOMEM;
    double secs = 0;
    int rc = partition_assign_pg(adj, k, method, seed, pg, part, &secs);
    if (rc == INCA_OK) rc = partition_from_parts(n, k, part, out);
    if (rc == INCA_OK) {
        out->man.edge_cut = partition_edge_cut(adj, part);
        out->man.seconds = secs;
        out->man.seed = seed;
        snprintf(out->man.method, sizeof out->man.method, "%s", partition_method_name(method));
        partition_name(out->man.name, sizeof out->man.name, method, k, seed, 0);
    }
    inca_free(part);
    return rc;
}
