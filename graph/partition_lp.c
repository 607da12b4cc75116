/* Multilevel label-propagation partitioning (see partition_lp.h): coarsen, split the coarsest
 * level, project and refine level by level. The passes themselves are in lp_level.c and
 * lp_refine.c. */
#include "graph/partition_lp.h"
#include "graph/lp_graph.h"
#include "graph/metis_kway.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include <math.h>
#include <string.h>

#define LP_MAX_LEVELS 24
#define LP_CLUSTER_ROUNDS 5
#define LP_REFINE_ROUNDS 24
#define LP_COARSEST_PER_PART 32   /* coarsen until at most this many nodes a part */
#define LP_CLUSTER_PER_PART 16    /* a cluster holds at most 1/16 of a part's weight */
#define LP_ESTIMATE_STRIDE 16     /* the coarse-size estimate counts one coarse node in 16 */
#define LP_CHUNK 1024             /* clustering and refinement visit nodes chunk-random, chunks this long */
/* below this many entries memory is no reason to hold back (4M: 32 MB coarse, some 320 MB in
 * METIS); a test lowers it to reach the memory-bound paths on small graphs */
static int64_t lp_small_entries = 1 << 22;

void partition_lp_set_small_entries(int64_t entries) { lp_small_entries = entries > 0 ? entries : 1 << 22; }

typedef struct lp_run {
    lp_graph_t lv[LP_MAX_LEVELS];
    int32_t *map[LP_MAX_LEVELS];   /* map[l][v]: v's node on level l + 1 */
    int levels;                    /* coarse levels made */
    lp_acc_t acc;                  /* by part */
    lp_hacc_t hacc;                /* by cluster (coarsening) */
    int32_t *order, *cl;
    uint8_t *seen;
    int32_t *cw;
    int64_t k, cap;
    uint64_t seed;
    const partition_progress_t *pg;   /* NULL: no reports */
} lp_run_t;

static void report(const lp_run_t *r, const char *phase, int64_t done, int64_t total) {
    if (r->pg && r->pg->fn) r->pg->fn(r->pg->ctx, phase, done, total);
}

static void run_free(lp_run_t *r) {
    for (int l = 1; l <= r->levels; l++) lp_graph_free(&r->lv[l]);
    for (int l = 0; l < r->levels; l++) inca_free(r->map[l]);
    lp_acc_free(&r->acc);
    lp_hacc_free(&r->hacc);
    inca_free(r->order);
    inca_free(r->cl);
    inca_free(r->seen);
    inca_free(r->cw);
}

/* Cluster g into r->cl (map: scratch), round by round until fewer than 1% of its nodes move.
 * When g has more entries than `room`, its coarse graph may not fit there: after the first
 * round, one coarse node in LP_ESTIMATE_STRIDE is counted, and when the estimate exceeds room by
 * half, *doomed is set and clustering stops (the whole count would refuse it after every round;
 * on a random graph that saved most of the coarsening's time). */
static int cluster_level(lp_run_t *r, const lp_graph_t *g, int64_t wmax, int64_t room, int32_t *map,
                         partition_lp_stats_t *s, int *doomed) {
    *doomed = 0;
    lp_cluster_init(g, r->cl, r->cw);
    for (int round = 0; round < LP_CLUSTER_ROUNDS; round++) {
        report(r, "clustering", round, LP_CLUSTER_ROUNDS);
        const int64_t moved = lp_cluster_round(g, r->order, wmax, r->cl, r->cw, &r->hacc);
        s->cluster_rounds++;
        if (round == 0 && g->nnz > room) {
            int64_t est = 0;
            report(r, "estimating the coarse graph", 0, 0);
            int rc = lp_contract_estimate(g, r->cl, LP_ESTIMATE_STRIDE, map, &r->hacc, &est);
            if (rc != INCA_OK) return rc;
            s->coarse_estimate = est;
            if (est > room + room / 2) { *doomed = 1; return INCA_OK; }
        }
        if (moved * 100 < g->n) break;
    }
    return INCA_OK;
}

/* Cluster and contract while the graph shrinks by 10% a level, it has more than
 * LP_COARSEST_PER_PART nodes a part, and the coarse levels stay within a quarter of the graph's
 * entries (each coarse entry also carries a weight) or lp_small_entries. */
static int coarsen(lp_run_t *r, partition_lp_stats_t *s) {
    int64_t room = r->lv[0].nnz / 4 > lp_small_entries ? r->lv[0].nnz / 4 : lp_small_entries;
    const int64_t wmax = r->lv[0].total / (LP_CLUSTER_PER_PART * r->k) > 1 ? r->lv[0].total / (LP_CLUSTER_PER_PART * r->k) : 1;
    while (r->levels + 1 < LP_MAX_LEVELS && r->lv[r->levels].n > LP_COARSEST_PER_PART * r->k) {
        lp_graph_t *g = &r->lv[r->levels], *c = &r->lv[r->levels + 1];
        int32_t *map = inca_malloc((size_t)g->n * sizeof *map);
        if (!map) return INCA_ENOMEM;
        int made = 0, doomed = 0, rc = lp_chunk_order(g->n, LP_CHUNK, r->seed + (uint64_t)r->levels, r->order);
        if (rc == INCA_OK) rc = cluster_level(r, g, wmax, room, map, s, &doomed);
        if (rc == INCA_OK && !doomed) {
            report(r, "contracting", r->levels, 0);
            rc = lp_contract(g, r->cl, room, c, map, &r->hacc, &made);
        }
        if (rc == INCA_OK && made && c->n * 10 > g->n * 9) {   /* not worth a level */
            lp_graph_free(c);
            made = 0;
        }
        if (rc != INCA_OK || !made) { inca_free(map); return rc; }
        room -= c->nnz;
        r->map[r->levels++] = map;
    }
    return INCA_OK;
}

/* Split the coarsest level into part (its n entries) and fill w: METIS when its entries at
 * about 80 bytes each fit in the graph's own 4 bytes an entry (or are few: a small graph that
 * was not coarsened goes to METIS whole) and its edge weights sum within METIS's 32 bits, else
 * Fennel. */
static int split_coarsest(lp_run_t *r, lp_part_t *part, int64_t *w, partition_lp_stats_t *s) {
    const lp_graph_t *g = &r->lv[r->levels];
    s->coarse_nodes = g->n, s->coarse_entries = g->nnz;
    int64_t wsum = 0;   /* METIS sums edge weights in 32 bits */
    for (int64_t e = 0; e < g->nnz; e++) wsum += lp_ew(g, e);
    s->coarse_by_metis = (r->levels > 0 || g->nnz <= lp_small_entries) && wsum <= INT32_MAX / 2 &&
                         (g->nnz * 20 <= r->lv[0].nnz || g->nnz <= lp_small_entries);
    report(r, s->coarse_by_metis ? "splitting (METIS)" : "splitting (Fennel)", 0, 0);
    if (s->coarse_by_metis) {
        int32_t *mp = inca_malloc((size_t)g->n * sizeof *mp);
        int rc = mp ? metis_kway(g->n, g->rowptr, g->col, g->ew, g->vw, r->k, r->seed, mp) : INCA_ENOMEM;
        memset(w, 0, (size_t)r->k * sizeof *w);
        for (int64_t v = 0; rc == INCA_OK && v < g->n; v++) part[v] = (lp_part_t)mp[v], w[mp[v]] += lp_vw(g, v);
        inca_free(mp);
        return rc;
    }
    lp_bfs_order(g, r->seed, r->order, r->seen);
    for (int64_t v = 0; v < g->n; v++) part[v] = LP_UNPLACED;
    return lp_stream(g, r->order, r->k, r->cap, part, w, &r->acc);
}

/* Refine the coarsest level, then project onto each finer one and refine it; the finest
 * level's parts are copied into the caller's part0. */
static int uncoarsen(lp_run_t *r, int32_t *part0, int64_t *w, partition_lp_stats_t *s) {
    lp_part_t *cur = inca_malloc((size_t)r->lv[r->levels].n * sizeof *cur);
    if (!cur) return INCA_ENOMEM;
    double t0 = inca_now();
    int rc = split_coarsest(r, cur, w, s);
    s->split_s = inca_now() - t0;
    for (int l = r->levels; rc == INCA_OK; l--) {
        if ((rc = lp_chunk_order(r->lv[l].n, LP_CHUNK, r->seed + 1000u + (uint64_t)l, r->order)) != INCA_OK) break;
        int64_t gain = 0;
        s->rounds += lp_refine(&r->lv[l], r->order, r->cap, LP_REFINE_ROUNDS, cur, w, &r->acc, r->seen, &gain, &s->moves,
                               r->pg);
        if (l == 0) break;
        lp_part_t *fine = inca_malloc((size_t)r->lv[l - 1].n * sizeof *fine);
        if (!fine) { rc = INCA_ENOMEM; break; }
        for (int64_t v = 0; v < r->lv[l - 1].n; v++) fine[v] = cur[r->map[l - 1][v]];
        inca_free(cur);
        cur = fine;
    }
    if (rc == INCA_OK) report(r, "rebalancing", 0, 0);
    if (rc == INCA_OK && (rc = lp_rebalance(&r->lv[0], r->k, r->cap, cur, w, &r->acc, &s->rebalance_moves)) == INCA_OK &&
        s->rebalance_moves) {
        int64_t gain = 0;
        s->rounds += lp_refine(&r->lv[0], r->order, r->cap, LP_REFINE_ROUNDS, cur, w, &r->acc, r->seen, &gain, &s->moves,
                               r->pg);
    }
    for (int64_t v = 0; rc == INCA_OK && v < r->lv[0].n; v++) part0[v] = cur[v];
    inca_free(cur);
    s->refine_s = inca_now() - t0 - s->split_s;
    return rc;
}

int partition_lp_assign(const csr_t *adj, int64_t k, uint64_t seed, int32_t *part, partition_lp_stats_t *st) {
    return partition_lp_assign_pg(adj, k, seed, NULL, part, st);
}

int partition_lp_assign_pg(const csr_t *adj, int64_t k, uint64_t seed, const partition_progress_t *pg, int32_t *part,
                           partition_lp_stats_t *st) {
    const int64_t n = adj->n_rows;
    if (k < 2 || k > n || adj->n_cols != n)
        return inca_fail(INCA_EINVAL, "partition_lp_assign: %lld parts for a %lld x %lld graph", (long long)k, (long long)n,
                         (long long)adj->n_cols);
    if (k > LP_MAX_PARTS)
        return inca_fail(INCA_EINVAL, "--method lp: at most %d parts, got %lld (use --method metis)", LP_MAX_PARTS, (long long)k);
    lp_run_t r = {.k = k, .seed = seed, .cap = (int64_t)ceil(1.03 * (double)n / (double)k), .pg = pg};
    r.lv[0] = (lp_graph_t){.n = n, .nnz = adj->rowptr[n] - adj->rowptr[0], .total = n, .rowptr = adj->rowptr, .col = adj->col};
    partition_lp_stats_t s = {.cap = r.cap};
    int64_t *w = inca_calloc((size_t)k, sizeof *w);
    r.order = inca_malloc((size_t)n * sizeof *r.order);
    r.cl = inca_malloc((size_t)n * sizeof *r.cl);
    r.seen = inca_malloc((size_t)n);
    r.cw = inca_malloc((size_t)n * sizeof *r.cw);
    int rc = w && r.order && r.cl && r.seen && r.cw ? lp_acc_init(&r.acc, k) : INCA_ENOMEM;
    if (rc == INCA_OK) rc = lp_hacc_init(&r.hacc, n);
    double t0 = inca_now();
    if (rc == INCA_OK) rc = coarsen(&r, &s);
    s.coarsen_s = inca_now() - t0;
    inca_free(r.cl);
    inca_free(r.cw);
    lp_hacc_free(&r.hacc);
    r.cl = NULL;
    r.cw = NULL;
    s.levels = r.levels;
    if (rc == INCA_OK) rc = uncoarsen(&r, part, w, &s);
    if (rc == INCA_OK && st) *st = s;
    run_free(&r);
    inca_free(w);
    return rc;
}
