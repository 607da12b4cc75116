/* Rank ownership of a partitioned graph (see dist.h). Tested in test_dist.c. */
#include "graph/dist.h"
#include "core/alloc.h"
#include "core/status.h"
#include <string.h>

int dist_plan_copy(const dist_plan_t *p, dist_plan_t *out) {
    memset(out, 0, sizeof *out);
    const size_t r = (size_t)p->ranks;
    out->part_lo = inca_malloc(sizeof *out->part_lo * (r + 1));
    out->node_lo = inca_malloc(sizeof *out->node_lo * (r + 1));
    out->weight = inca_calloc(r ? r : 1, sizeof *out->weight);
    if (!out->part_lo || !out->node_lo || !out->weight) {
        dist_plan_free(out);
        return INCA_ENOMEM;
    }
    memcpy(out->part_lo, p->part_lo, sizeof *out->part_lo * (r + 1));
    memcpy(out->node_lo, p->node_lo, sizeof *out->node_lo * (r + 1));
    if (p->weight) memcpy(out->weight, p->weight, sizeof *out->weight * r);
    out->ranks = p->ranks;
    out->k = p->k;
    out->n = p->n;
    return INCA_OK;
}

void dist_plan_free(dist_plan_t *p) {
    if (!p) return;
    inca_free(p->part_lo);
    inca_free(p->node_lo);
    inca_free(p->weight);
    memset(p, 0, sizeof *p);
}

int dist_plan_make(const csr_t *a, const int64_t *bounds, int64_t k, int ranks, dist_plan_t *out) {
    memset(out, 0, sizeof *out);
    if (ranks < 1 || (int64_t)ranks > k)
        return inca_fail(INCA_EINVAL, "%d ranks: expected 1..%lld (every rank owns at least one of the %lld parts)", ranks,
                         (long long)k, (long long)k);
    if (!a || !a->rowptr || bounds[0] != 0 || bounds[k] != a->n_rows)
        return inca_fail(INCA_EINVAL, "dist_plan_make: the part bounds must run from 0 to the graph's %lld rows",
                         (long long)(a ? a->n_rows : -1));
    out->ranks = ranks;
    out->k = k;
    out->n = a->n_rows;
    out->part_lo = inca_calloc((size_t)ranks + 1, sizeof *out->part_lo);
    out->node_lo = inca_calloc((size_t)ranks + 1, sizeof *out->node_lo);
    out->weight = inca_calloc((size_t)ranks, sizeof *out->weight);
    int64_t *prefix = inca_malloc(sizeof *prefix * (size_t)(k + 1)), *full = inca_malloc(sizeof *full * (size_t)(k + 1));
    if (!out->part_lo || !out->node_lo || !out->weight || !prefix || !full) {
        inca_free(prefix);
        inca_free(full);
        dist_plan_free(out);
        return INCA_ENOMEM;
    }
    /* prefix[i] = weight of parts [0, i): nodes + nonzeros of their rows; full[i] = parts of
     * [i, k) that hold a node (METIS may leave a part empty) */
    prefix[0] = 0;
    for (int64_t i = 0; i < k; i++)
        prefix[i + 1] = prefix[i] + (bounds[i + 1] - bounds[i]) + (a->rowptr[bounds[i + 1]] - a->rowptr[bounds[i]]);
    full[k] = 0;
    for (int64_t i = k - 1; i >= 0; i--) full[i] = full[i + 1] + (bounds[i + 1] > bounds[i]);
    if (full[0] < ranks) {
        const int64_t nonempty = full[0];
        inca_free(prefix);
        inca_free(full);
        dist_plan_free(out);
        return inca_fail(INCA_EINVAL, "%d ranks: only %lld of the %lld parts hold a node (every rank owns at least one node)",
                         ranks, (long long)nonempty, (long long)k);
    }
    const double total = (double)prefix[k];
    out->part_lo[0] = 0;
    for (int r = 1; r < ranks; r++) {
        /* the boundary nearest to r/P of the weight, leaving a node for each rank on either side:
         * rank r-1 must own a node before b, ranks r.. a non-empty part each from b on (a rank
         * of empty parts only broke full-batch training with "0 rows") */
        const double target = total * (double)r / (double)ranks;
        int64_t best = -1;
        for (int64_t b = out->part_lo[r - 1] + 1; b < k && full[b] >= ranks - r; b++) {
            if (bounds[b] == bounds[out->part_lo[r - 1]]) continue;
            const double d = (double)prefix[b] - target, db = best < 0 ? 0 : (double)prefix[best] - target;
            if (best < 0 || (d < 0 ? -d : d) < (db < 0 ? -db : db)) best = b;
            if (prefix[b] > target) break;   /* prefix is non-decreasing: later ones are farther */
        }
        out->part_lo[r] = best;   /* >= 0: full[0] >= ranks leaves one */
    }
    inca_free(full);
    out->part_lo[ranks] = k;
    for (int r = 0; r <= ranks; r++) out->node_lo[r] = bounds[out->part_lo[r]];
    for (int r = 0; r < ranks; r++) out->weight[r] = prefix[out->part_lo[r + 1]] - prefix[out->part_lo[r]];
    inca_free(prefix);
    return INCA_OK;
}

int dist_owner(const dist_plan_t *p, int64_t v) {
    if (v < 0 || v >= p->n) return -1;
    int lo = 0, hi = p->ranks - 1;   /* the last r with node_lo[r] <= v */
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (p->node_lo[mid] <= v) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

int dist_halo(const csr_t *a, const dist_plan_t *p, int r, int64_t **ids, int64_t *count) {
    *ids = NULL;
    *count = 0;
    if (r < 0 || r >= p->ranks) return inca_fail(INCA_EINVAL, "dist_halo: rank %d of %d", r, p->ranks);
    const int64_t lo = p->node_lo[r], hi = p->node_lo[r + 1], n = a->n_cols;
    uint8_t *seen = inca_calloc((size_t)(n > 0 ? n : 1), 1);
    if (!seen) return INCA_ENOMEM;
    int64_t m = 0;
    for (int64_t k = a->rowptr[lo]; k < a->rowptr[hi]; k++) {
        const int64_t c = a->col[k];
        if ((c < lo || c >= hi) && !seen[c]) {
            seen[c] = 1;
            m++;
        }
    }
    int64_t *out = inca_malloc(sizeof *out * (size_t)(m > 0 ? m : 1));
    if (!out) {
        inca_free(seen);
        return INCA_ENOMEM;
    }
    int64_t j = 0;
    for (int64_t v = 0; v < n && j < m; v++)   /* ascending by construction */
        if (seen[v]) out[j++] = v;
    inca_free(seen);
    *ids = out;
    *count = m;
    return INCA_OK;
}
