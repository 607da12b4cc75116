/* Tests of the label-propagation partitioner (graph/partition_lp.c, lp_level.c, lp_refine.c):
 * hand-made graphs with a known best cut, the contraction checked entry by entry against a
 * dense count, rebalancing, every part within the cap, determinism, the cut against METIS's (the
 * reference) and a random partition's on Cora, Facebook and a csbm, on both paths (multilevel
 * with METIS on the coarsest level; Fennel on a graph too big to coarsen), allocation failures,
 * and `inca partition --method lp` feeding `inca train --partition`; the passes alone: refinement
 * to a local optimum with its gain counted, Fennel and clustering within their caps, the
 * breadth-first order's seeded start. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/status.h"
#include "graph/csr.h"
#include "graph/gen.h"
#include "graph/lp_graph.h"
#include "graph/partition.h"
#include "graph/partition_lp.h"
#include "loaders/dataset.h"
#include "loaders/ingest.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* every node in [0, k), no part over the cap; returns the cut counted here */
static int64_t check_parts(const csr_t *g, int64_t k, const int32_t *part, int64_t cap) {
    int64_t *w = calloc((size_t)k, sizeof *w), cut = 0;
    for (int64_t v = 0; v < g->n_rows; v++) {
        ck_assert_msg(part[v] >= 0 && part[v] < k, "node %lld in part %d", (long long)v, part[v]);
        w[part[v]]++;
    }
    for (int64_t p = 0; p < k; p++) ck_assert_msg(w[p] <= cap, "part %lld holds %lld > cap %lld", (long long)p, (long long)w[p], (long long)cap);
    for (int64_t u = 0; u < g->n_rows; u++)
        for (int64_t e = g->rowptr[u]; e < g->rowptr[u + 1]; e++) cut += u < g->col[e] && part[u] != part[g->col[e]];
    free(w);
    return cut;
}

static int64_t lp_cut(const csr_t *g, int64_t k, uint64_t seed, partition_lp_stats_t *st, int32_t **out) {
    int32_t *part = malloc(sizeof *part * (size_t)g->n_rows);
    partition_lp_stats_t s;
    ck_assert_msg(partition_lp_assign(g, k, seed, part, &s) == INCA_OK, "%s", inca_errmsg());
    ck_assert_int_eq(s.cap, (int64_t)ceil(1.03 * (double)g->n_rows / (double)k));
    int64_t cut = check_parts(g, k, part, s.cap);
    ck_assert_int_eq(cut, partition_edge_cut(g, part));
    if (st) *st = s;
    if (out) *out = part;
    else free(part);
    return cut;
}

static int64_t other_cut(const csr_t *g, int64_t k, int method) {
    int32_t *part = malloc(sizeof *part * (size_t)g->n_rows);
    ck_assert_int_eq(partition_assign(g, k, method, 0, part, NULL), INCA_OK);
    int64_t cut = partition_edge_cut(g, part);
    free(part);
    return cut;
}

/* two 6-cliques joined by one edge: the only cut of 1 */
START_TEST(two_cliques_and_grid) {
    int64_t s[40], d[40], m = 0;
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 6; i++)
            for (int j = i + 1; j < 6; j++) s[m] = 6 * c + i, d[m] = 6 * c + j, m++;
    s[m] = 2, d[m] = 9, m++;
    csr_t g = {0};
    ck_assert_int_eq(csr_from_edges(&g, 12, s, d, m, CSR_SYMMETRIZE), INCA_OK);
    int32_t *part = NULL;
    ck_assert_int_eq(lp_cut(&g, 2, 0, NULL, &part), 1);
    for (int i = 1; i < 6; i++) ck_assert_int_eq(part[i], part[0]);
    free(part);
    csr_free(&g);
    /* a 24 x 24 grid in 8 parts: METIS finds about 150 of 1104 edges; random cuts 7/8 of them */
    tu_grid(&g, 24);
    int64_t cm = other_cut(&g, 8, PART_METIS), cl = lp_cut(&g, 8, 3, NULL, NULL);
    ck_assert_int_lt(cl, 250);
    ck_assert_int_lt(cl, cm * 13 / 10);
    csr_free(&g);
}
END_TEST

/* five rounds of clustering from singletons */
static void cluster(const lp_graph_t *g, const int32_t *order, int64_t wmax, int32_t *cl, int32_t *cw, lp_hacc_t *a) {
    lp_cluster_init(g, cl, cw);
    for (int r = 0; r < 5; r++) lp_cluster_round(g, order, wmax, cl, cw, a);
}

/* the coarse graph of a clustering, entry by entry, against a dense count of the fine edges */
START_TEST(contraction_counts_every_edge) {
    csr_t f = {0};
    tu_grid(&f, 12);
    const int64_t n = f.n_rows;
    lp_graph_t g = {.n = n, .nnz = f.nnz, .total = n, .rowptr = f.rowptr, .col = f.col}, c;
    int32_t *order = malloc(sizeof *order * (size_t)n), *cl = malloc(sizeof *cl * (size_t)n), *map = malloc(sizeof *map * (size_t)n);
    uint8_t *seen = malloc((size_t)n);
    int32_t *cw = malloc(sizeof *cw * (size_t)n);
    lp_hacc_t a;
    ck_assert_int_eq(lp_hacc_init(&a, n), INCA_OK);
    lp_bfs_order(&g, 1, order, seen);
    cluster(&g, order, 5, cl, cw, &a);
    int made = 0;
    ck_assert_int_eq(lp_contract(&g, cl, f.nnz, &c, map, &a, &made), INCA_OK);
    ck_assert_int_eq(made, 1);
    ck_assert_int_le(c.n, n / 2);   /* clusters of up to 5 on a grid: at least pairs */
    int64_t *dense = calloc((size_t)(c.n * c.n), sizeof *dense), wsum = 0;
    for (int64_t u = 0; u < n; u++) {
        for (int64_t v = 0; v < n; v++) ck_assert_int_eq(cl[u] == cl[v], map[u] == map[v]);
        for (int64_t e = f.rowptr[u]; e < f.rowptr[u + 1]; e++) dense[map[u] * c.n + map[f.col[e]]]++;
    }
    for (int64_t C = 0; C < c.n; C++) {
        ck_assert_int_le(c.vw[C], 5);
        wsum += c.vw[C];
        int64_t stored = 0;
        for (int64_t x = c.rowptr[C]; x < c.rowptr[C + 1]; x++) {
            ck_assert_int_ne(c.col[x], C);
            ck_assert_int_eq(c.ew[x], dense[C * c.n + c.col[x]]);
            ck_assert_int_eq(c.ew[x], dense[c.col[x] * c.n + C]);   /* symmetric */
            stored++;
        }
        int64_t want = 0;
        for (int64_t D = 0; D < c.n; D++) want += D != C && dense[C * c.n + D] > 0;
        ck_assert_int_eq(stored, want);
    }
    ck_assert_int_eq(wsum, n);
    /* the size estimate counts exactly with every coarse node, and near it with one in three */
    int64_t est = 0;
    int32_t *map_e = malloc(sizeof *map_e * (size_t)n);
    ck_assert_int_eq(lp_contract_estimate(&g, cl, 1, map_e, &a, &est), INCA_OK);
    ck_assert_int_eq(est, c.nnz);
    ck_assert_mem_eq(map_e, map, sizeof *map * (size_t)n);
    ck_assert_int_eq(lp_contract_estimate(&g, cl, 3, map_e, &a, &est), INCA_OK);
    ck_assert_msg(est * 4 >= c.nnz * 3 && est * 4 <= c.nnz * 5, "estimate %lld of %lld", (long long)est, (long long)c.nnz);
    free(map_e);
    /* a second level over the weighted coarse graph: its weights are the sums of the first's */
    lp_graph_t c2;
    int32_t *cl2 = malloc(sizeof *cl2 * (size_t)c.n), *map2 = malloc(sizeof *map2 * (size_t)c.n);
    lp_bfs_order(&c, 2, order, seen);
    cluster(&c, order, 12, cl2, cw, &a);
    ck_assert_int_eq(lp_contract(&c, cl2, c.nnz, &c2, map2, &a, &made), INCA_OK);
    ck_assert_int_eq(made, 1);
    ck_assert_int_lt(c2.n, c.n);
    int64_t *dense2 = calloc((size_t)(c2.n * c2.n), sizeof *dense2), *vw2 = calloc((size_t)c2.n, sizeof *vw2);
    for (int64_t u = 0; u < c.n; u++) {
        vw2[map2[u]] += c.vw[u];
        for (int64_t x = c.rowptr[u]; x < c.rowptr[u + 1]; x++) dense2[map2[u] * c2.n + map2[c.col[x]]] += c.ew[x];
    }
    for (int64_t C = 0; C < c2.n; C++) {
        ck_assert_int_eq(c2.vw[C], vw2[C]);
        ck_assert_int_le(c2.vw[C], 12);
        int64_t stored = 0, want = 0;
        for (int64_t x = c2.rowptr[C]; x < c2.rowptr[C + 1]; x++, stored++) ck_assert_int_eq(c2.ew[x], dense2[C * c2.n + c2.col[x]]);
        for (int64_t D = 0; D < c2.n; D++) want += D != C && dense2[C * c2.n + D] > 0;
        ck_assert_int_eq(stored, want);
    }
    lp_graph_free(&c2);
    free(cl2), free(map2), free(dense2), free(vw2);
    lp_graph_free(&c);
    /* a coarse graph over the limit is counted, not made */
    ck_assert_int_eq(lp_contract(&g, cl, 10, &c, map, &a, &made), INCA_OK);
    ck_assert_int_eq(made, 0);
    ck_assert_ptr_null(c.own_rowptr);
    lp_hacc_free(&a);
    free(order), free(cl), free(map), free(seen), free(cw), free(dense);
    csr_free(&f);
}
END_TEST

/* the hashed accumulator against a dense count: sums, first-appearance order, growth from a
 * table for one label to all of the range, absent labels, and a second gather forgetting the first */
START_TEST(hashed_accumulator_counts_like_a_dense_one) {
    const int64_t labels = 1000;
    lp_hacc_t h;
    ck_assert_int_eq(lp_hacc_init(&h, labels), INCA_OK);
    int64_t *dense = calloc((size_t)labels, sizeof *dense);
    int32_t *first = malloc(sizeof *first * (size_t)labels);
    uint64_t x = 12345;
    for (int round = 0; round < 3; round++) {
        const int64_t adds = round == 0 ? 40 : round == 1 ? 5000 : 3;   /* few labels, all, few again */
        int64_t nfirst = 0;
        memset(dense, 0, sizeof *dense * (size_t)labels);
        lp_hacc_begin(&h, 1);
        for (int64_t i = 0; i < adds; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            const int32_t l = (int32_t)((x >> 33) % (uint64_t)(round == 0 ? 64 : labels)) * (round == 0 ? 15 : 1);
            const int64_t w = (int64_t)(x >> 60) + 1;
            if (!dense[l]) first[nfirst++] = l;
            dense[l] += w;
            lp_hacc_add(&h, l, w);
        }
        ck_assert_int_eq(h.nt, nfirst);
        for (int64_t t = 0; t < h.nt; t++) {
            ck_assert_int_eq(h.touched[t], first[t]);
            ck_assert_int_eq(h.w[t], dense[first[t]]);
        }
        for (int32_t l = 0; l < labels; l++) ck_assert_int_eq(lp_hacc_get(&h, l), dense[l]);
        ck_assert_int_le(2 * h.nt, h.mask + 1);   /* at most half full */
    }
    lp_hacc_free(&h);
    free(dense), free(first);
}
END_TEST

/* chunk-random order: a permutation whose runs of `chunk` visits each cover one chunk of
 * consecutive ids (the last chunk short), the chunks not in id order, the same for a seed */
START_TEST(chunk_order_is_a_permutation_of_whole_chunks) {
    const int64_t n = 1000, chunk = 64;
    int32_t *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
    uint8_t *hit = calloc((size_t)n, 1);
    ck_assert_int_eq(lp_chunk_order(n, chunk, 5, a), INCA_OK);
    ck_assert_int_eq(lp_chunk_order(n, chunk, 5, b), INCA_OK);
    ck_assert_mem_eq(a, b, sizeof *a * (size_t)n);
    int64_t at = 0, in_order = 1, prev = -1, shuffled = 0;
    while (at < n) {
        const int64_t c = a[at] / chunk, len = (c + 1) * chunk < n ? chunk : n - c * chunk;
        for (int64_t i = at; i < at + len; i++) {
            ck_assert_int_eq(a[i] / chunk, c);
            ck_assert(!hit[a[i]]);
            hit[a[i]] = 1;
            shuffled += i > at && a[i] != a[i - 1] + 1;
        }
        in_order &= c > prev;
        prev = c, at += len;
    }
    ck_assert_int_eq(at, n);
    ck_assert(!in_order);
    ck_assert_int_gt(shuffled, n / 2);
    ck_assert_int_eq(lp_chunk_order(n, chunk, 6, b), INCA_OK);
    ck_assert(memcmp(a, b, sizeof *a * (size_t)n) != 0);
    free(a), free(b), free(hit);
}
END_TEST

/* an overloaded part gives its cheapest nodes to parts with room, and only it loses nodes */
START_TEST(rebalance_moves_out_of_overloaded_parts) {
    csr_t f = {0};
    tu_grid(&f, 12);
    const int64_t n = f.n_rows, k = 4, cap = 38;
    lp_graph_t g = {.n = n, .nnz = f.nnz, .total = n, .rowptr = f.rowptr, .col = f.col};
    lp_part_t *part = malloc(sizeof *part * (size_t)n);
    int32_t *part32 = malloc(sizeof *part32 * (size_t)n);
    int64_t w[4] = {0}, before[4];
    for (int64_t v = 0; v < n; v++) part[v] = (lp_part_t)((v % 12) / 3);   /* four column strips of 36 */
    for (int64_t r = 0; r < 12; r++) part[r * 12 + 3] = 0;   /* column 3 too: strip 0 holds 48 */
    for (int64_t v = 0; v < n; v++) w[part[v]]++;
    ck_assert_int_eq(w[0], 48);
    memcpy(before, w, sizeof w);
    lp_acc_t a;
    ck_assert_int_eq(lp_acc_init(&a, n), INCA_OK);
    int64_t moves = 0;
    ck_assert_int_eq(lp_rebalance(&g, k, cap, part, w, &a, &moves), INCA_OK);
    ck_assert_int_eq(moves, 48 - cap);
    int64_t recount[4] = {0};
    for (int64_t v = 0; v < n; v++) recount[part[v]]++;
    for (int p = 0; p < 4; p++) {
        ck_assert_int_eq(recount[p], w[p]);
        ck_assert_int_le(w[p], cap);
        if (p) ck_assert_int_ge(w[p], before[p]);
    }
    /* the cheapest nodes left: the borrowed column's, which have edges into strip 1 */
    for (int64_t v = 0; v < n; v++) part32[v] = part[v];
    ck_assert_int_le(partition_edge_cut(&f, part32), 3 * 12 + 12);
    lp_acc_free(&a);
    free(part), free(part32);
    csr_free(&f);
}
END_TEST


/* the cut and v's edges into part p, by plain loops over a unit-weight lp_graph */
static int64_t plain_cut(const lp_graph_t *g, const lp_part_t *part) {
    int64_t cut = 0;
    for (int64_t u = 0; u < g->n; u++)
        for (int64_t e = g->rowptr[u]; e < g->rowptr[u + 1]; e++) cut += u < g->col[e] && part[u] != part[g->col[e]];
    return cut;
}

static int64_t conn_to(const lp_graph_t *g, const lp_part_t *part, int64_t v, int64_t p) {
    int64_t c = 0;
    for (int64_t e = g->rowptr[v]; e < g->rowptr[v + 1]; e++) c += g->col[e] != v && part[g->col[e]] == p;
    return c;
}

/* Refinement from a scattered 4-way split of a 12 x 12 grid (4 parts of 36) runs until a round
 * moves nothing (n < 1000, so fewer than n / 1000 is none). Without a cap that leaves no node
 * with strictly more edges into another part than into its own (with one, a part that gained
 * room later need not wake a node that wanted it). With the cap (38) or without: the gain it
 * reports is the cut it removed, counted here, and the weights are the parts' counts. One round
 * alone (the stop test inverted) left nodes with 2 edges out and none in. */
START_TEST(refine_runs_to_a_local_optimum) {
    csr_t f = {0};
    tu_grid(&f, 12);
    const int64_t n = f.n_rows, k = 4, cap = 38;
    lp_graph_t g = {.n = n, .nnz = f.nnz, .total = n, .rowptr = f.rowptr, .col = f.col};
    lp_part_t *part = malloc(sizeof *part * (size_t)n);
    int32_t *order = malloc(sizeof *order * (size_t)n);
    uint8_t *active = malloc((size_t)n);
    lp_acc_t a;
    ck_assert_int_eq(lp_acc_init(&a, k), INCA_OK);
    for (uint64_t seed = 0; seed < 8; seed++) {
        const int64_t lcap = seed % 2 ? cap : n;   /* odd seeds: the cap; even ones: none */
        int64_t w[4] = {0}, recount[4] = {0}, gain = 0, moves = 0;
        for (int64_t v = 0; v < n; v++) part[v] = (lp_part_t)(v % 4);
        uint64_t x = 99 + seed;
        for (int64_t v = n - 1; v > 0; v--) {   /* shuffled: 36 nodes a part, scattered */
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            const int64_t j = (int64_t)((x >> 33) % (uint64_t)(v + 1));
            const lp_part_t t = part[v];
            part[v] = part[j], part[j] = t;
        }
        for (int64_t v = 0; v < n; v++) w[part[v]]++;
        const int64_t cut0 = plain_cut(&g, part);
        ck_assert_int_eq(lp_chunk_order(n, 1024, seed, order), INCA_OK);
        const int rounds = lp_refine(&g, order, lcap, 100, part, w, &a, active, &gain, &moves, NULL);
        ck_assert_int_lt(rounds, 100);
        ck_assert_int_gt(rounds, 1);
        ck_assert_int_gt(moves, 0);
        const int64_t cut1 = plain_cut(&g, part);
        ck_assert_int_eq(gain, cut0 - cut1);
        ck_assert_int_lt(cut1, cut0);
        for (int64_t v = 0; v < n; v++) recount[part[v]]++;
        for (int64_t p = 0; p < k; p++) {
            ck_assert_int_eq(recount[p], w[p]);
            ck_assert_int_le(w[p], lcap);
        }
        for (int64_t v = 0; lcap == n && v < n; v++) {
            const int64_t own = conn_to(&g, part, v, part[v]);
            for (int64_t p = 0; p < k; p++)
                if (p != part[v])
                    ck_assert_msg(conn_to(&g, part, v, p) <= own, "seed %llu: node %lld has %lld edges into part %lld, %lld into its own",
                                  (unsigned long long)seed, (long long)v, (long long)conn_to(&g, part, v, p), (long long)p, (long long)own);
        }
    }
    lp_acc_free(&a);
    free(part), free(order), free(active);
    csr_free(&f);
}
END_TEST

/* the n-clique (n <= 10), symmetric, into f */
static void clique(int n, csr_t *f) {
    int64_t s[45], d[45], m = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) s[m] = i, d[m] = j, m++;
    ck_assert_int_eq(csr_from_edges(f, n, s, d, m, CSR_SYMMETRIZE), INCA_OK);
}

/* Fennel alone on an 8-clique in 2 parts (cap 5): no part past the cap (without the room check
 * one part took 7; the rebalancing after it hid that from partition_lp_assign), and the weights
 * are the parts' counts */
START_TEST(fennel_stream_keeps_the_cap) {
    csr_t f = {0};
    clique(8, &f);
    lp_graph_t g = {.n = 8, .nnz = f.nnz, .total = 8, .rowptr = f.rowptr, .col = f.col};
    const int64_t cap = (int64_t)ceil(1.03 * 8 / 2);
    ck_assert_int_eq(cap, 5);
    lp_part_t part[8];
    int32_t order[8];
    uint8_t seen[8];
    int64_t w[2] = {7, 7}, recount[2] = {0};
    lp_acc_t a;
    ck_assert_int_eq(lp_acc_init(&a, 2), INCA_OK);
    lp_bfs_order(&g, 0, order, seen);
    for (int v = 0; v < 8; v++) part[v] = LP_UNPLACED;
    ck_assert_int_eq(lp_stream(&g, order, 2, cap, part, w, &a), INCA_OK);
    for (int v = 0; v < 8; v++) {
        ck_assert_int_lt(part[v], 2);
        recount[part[v]]++;
    }
    for (int p = 0; p < 2; p++) {
        ck_assert_int_eq(w[p], recount[p]);
        ck_assert_int_le(w[p], cap);
    }
    lp_acc_free(&a);
    csr_free(&f);
}
END_TEST

/* Clustering a 10-clique with wmax 3: everyone wants to join, no cluster passes 3 nodes, and
 * cw holds each cluster's size */
START_TEST(clustering_keeps_wmax) {
    csr_t f = {0};
    clique(10, &f);
    lp_graph_t g = {.n = 10, .nnz = f.nnz, .total = 10, .rowptr = f.rowptr, .col = f.col};
    int32_t order[10], cl[10], cw[10];
    lp_hacc_t h;
    ck_assert_int_eq(lp_hacc_init(&h, 10), INCA_OK);
    for (uint64_t seed = 0; seed < 8; seed++) {
        ck_assert_int_eq(lp_chunk_order(10, 1024, seed, order), INCA_OK);
        lp_cluster_init(&g, cl, cw);
        int64_t moved = 0;
        for (int r = 0; r < 5; r++) moved += lp_cluster_round(&g, order, 3, cl, cw, &h);
        ck_assert_int_gt(moved, 0);
        int size[10] = {0};
        for (int v = 0; v < 10; v++) size[cl[v]]++;
        for (int c = 0; c < 10; c++) {
            ck_assert_msg(size[c] <= 3, "seed %llu: cluster %d of %d nodes", (unsigned long long)seed, c, size[c]);
            if (size[c]) ck_assert_int_eq(cw[c], size[c]);
        }
    }
    lp_hacc_free(&h);
    csr_free(&f);
}
END_TEST

/* breadth-first order: a permutation, each component started at the first unvisited node at or
 * after a seeded position; on 40 isolated nodes a rotation, whose start moves with the seed */
START_TEST(bfs_order_starts_where_the_seed_says) {
    int64_t rowptr[41] = {0};
    lp_graph_t g = {.n = 40, .nnz = 0, .total = 40, .rowptr = rowptr, .col = NULL};
    int32_t order[40];
    uint8_t seen[40];
    int starts[40] = {0}, distinct = 0;
    for (uint64_t seed = 0; seed < 16; seed++) {
        lp_bfs_order(&g, seed, order, seen);
        for (int i = 0; i < 40; i++) ck_assert_int_eq(order[i], (order[0] + i) % 40);
        distinct += !starts[order[0]]++;
    }
    ck_assert_int_ge(distinct, 4);
    /* on a grid: every node after the first has a neighbour earlier in the order */
    csr_t f = {0};
    tu_grid(&f, 6);
    lp_graph_t q = {.n = 36, .nnz = f.nnz, .total = 36, .rowptr = f.rowptr, .col = f.col};
    int32_t ord[36], pos[36];
    uint8_t sn[36];
    lp_bfs_order(&q, 3, ord, sn);
    for (int i = 0; i < 36; i++) pos[i] = -1;
    for (int i = 0; i < 36; i++) {
        ck_assert_int_eq(pos[ord[i]], -1);
        pos[ord[i]] = i;
    }
    for (int i = 1; i < 36; i++) {
        int earlier = 0;
        for (int64_t e = f.rowptr[ord[i]]; e < f.rowptr[ord[i] + 1]; e++) earlier |= pos[f.col[e]] < i;
        ck_assert_msg(earlier, "node %d at %d has no neighbour before it", ord[i], i);
    }
    csr_free(&f);
}
END_TEST


static void load_cora(dataset_t *d) {
    char src[1024];
    snprintf(src, sizeof src, "%s/data/cora", tu_src());
    ingest_opts_t o = {0};
    ck_assert_int_eq(ingest_ogb(src, &o, d), INCA_OK);
}

static void make_csbm(dataset_t *d, int64_t n) {
    gen_opts_t o;
    gen_opts_default(&o);
    o.nodes = n, o.avg_degree = 20, o.features = 0, o.classes = 8, o.homophily = 0.4, o.seed = 0;
    ck_assert_int_eq(gen_csbm(&o, d, NULL), INCA_OK);
}

/* what partition_lp_assign_pg reported, one letter a phase: c clustering, e estimating,
 * x contracting, m / f splitting by METIS / Fennel, r refining, b rebalancing */
typedef struct phases { char seq[256]; int n, bad; } phases_t;
static void note_phase(void *ctx, const char *phase, int64_t done, int64_t total) {
    phases_t *p = ctx;
    static const char *const words[] = {"clustering", "estimating the coarse graph", "contracting", "splitting (METIS)",
                                        "splitting (Fennel)", "refining", "rebalancing"};
    static const char letters[] = "cexmfrb";
    int w = -1;
    for (int i = 0; i < 7; i++)
        if (strcmp(phase, words[i]) == 0) w = i;
    p->bad |= w < 0 || done < 0 || (total > 0 && done >= total);
    if (w >= 0 && p->n < 255) p->seq[p->n++] = letters[w];
}

/* The phases reported, in order, on both paths; the parts the same as without a reporter */
START_TEST(progress_reports_the_phases) {
    dataset_t d;
    load_cora(&d);
    for (int fennel = 0; fennel < 2; fennel++) {
        if (fennel) {   /* the memory floor lowered: the csbm is not coarsened, Fennel splits it */
            dataset_free(&d);
            make_csbm(&d, 20000);
            partition_lp_set_small_entries(1000);
        }
        const int64_t n = d.n, k = fennel ? 32 : 40;
        int32_t *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
        phases_t ph = {{0}, 0, 0};
        const partition_progress_t pg = {note_phase, &ph};
        ck_assert_int_eq(partition_lp_assign_pg(&d.adj, k, 3, &pg, a, NULL), INCA_OK);
        ck_assert_int_eq(partition_lp_assign(&d.adj, k, 3, b, NULL), INCA_OK);
        ck_assert_mem_eq(a, b, sizeof *a * (size_t)n);
        ck_assert_msg(!ph.bad, "a phase out of its words or counts: %s", ph.seq);
        /* clustering first, one split, refining right after it, one rebalancing (refining rounds after it) */
        const char *split = strpbrk(ph.seq, "mf");
        ck_assert_ptr_nonnull(split);
        ck_assert_int_eq(*split, fennel ? 'f' : 'm');
        ck_assert_ptr_null(strpbrk(split + 1, "mfcex"));   /* nothing of the coarsening after the split */
        ck_assert_int_eq(ph.seq[0], 'c');
        ck_assert_int_eq(split[1], 'r');
        ck_assert_ptr_nonnull(strchr(split, 'b'));
        ck_assert_ptr_null(strpbrk(strchr(split, 'b') + 1, "b"));
        if (fennel) ck_assert_msg(split - ph.seq == 2 && ph.seq[1] == 'e', "%s", ph.seq);   /* one round, then the estimate */
        else ck_assert_ptr_nonnull(strchr(ph.seq, 'x'));   /* Cora is coarsened */
        free(a), free(b);
    }
    partition_lp_set_small_entries(0);
    dataset_free(&d);
}
END_TEST

/* METIS is the reference: measured 1088 / 1093 on Cora (k 40), 34024 / 34898 on Facebook,
 * 161863 / 155605 on the 20k csbm (k 32); random cuts far more */
START_TEST(cut_against_metis) {
    dataset_t d;
    for (int which = 0; which < 3; which++) {
        int64_t k = which == 2 ? 32 : 40;
        if (which == 0) load_cora(&d);
        else if (which == 1) {   /* ../shared's Facebook, when this checkout has it (CI's does not) */
            char src[1024], raw[1100];
            snprintf(src, sizeof src, "%s/datasets/facebook", tu_shared());
            snprintf(raw, sizeof raw, "%s/raw", src);
            if (access(raw, R_OK) != 0) {
                fprintf(stderr, "cut_against_metis: %s absent, Facebook skipped\n", src);
                continue;
            }
            ingest_opts_t o = {0};
            ck_assert_msg(ingest_ogb(src, &o, &d) == INCA_OK, "%s", inca_errmsg());
        } else make_csbm(&d, 20000);
        partition_lp_stats_t st;
        int32_t *a = NULL, *b = NULL;
        int64_t cl = lp_cut(&d.adj, k, 0, &st, &a), cm = other_cut(&d.adj, k, PART_METIS), cr = other_cut(&d.adj, k, PART_RANDOM);
        lp_cut(&d.adj, k, 0, NULL, &b);   /* the multilevel path is deterministic too */
        ck_assert_mem_eq(a, b, sizeof *a * (size_t)d.n);
        free(a), free(b);
        ck_assert_msg(cl * 100 <= cm * 108, "graph %d: lp cut %lld, METIS %lld", which, (long long)cl, (long long)cm);
        ck_assert_msg(cl * 100 < cr * (which == 2 ? 85 : 40), "graph %d: lp cut %lld, random %lld", which, (long long)cl, (long long)cr);
        ck_assert_int_ge(st.levels, 1);
        ck_assert_int_eq(st.coarse_by_metis, 1);
        ck_assert_int_lt(st.coarse_nodes * 2, d.n);
        if (which == 0) {   /* 100 parts: too few nodes a part to coarsen; METIS splits Cora whole */
            cl = lp_cut(&d.adj, 100, 0, &st, NULL), cm = other_cut(&d.adj, 100, PART_METIS);
            ck_assert_int_eq(st.levels, 0);
            ck_assert_int_eq(st.coarse_by_metis, 1);
            ck_assert_msg(cl * 100 <= cm * 108, "Cora, 100 parts: lp cut %lld, METIS %lld", (long long)cl, (long long)cm);
        }
        dataset_free(&d);
    }
}
END_TEST

/* With the memory floor lowered, a random graph is not coarsened (its clusters do not shrink
 * it) and Fennel splits it: within 6% of METIS's cut there (measured 2.6%), far worse on Cora
 * where METIS on the coarse level is what finds the structure */
START_TEST(fennel_path_when_coarsening_does_not_pay) {
    dataset_t d;
    make_csbm(&d, 20000);
    partition_lp_set_small_entries(1000);
    partition_lp_stats_t st;
    int32_t *a = NULL, *b = NULL;
    int64_t cl = lp_cut(&d.adj, 32, 0, &st, &a), cm = other_cut(&d.adj, 32, PART_METIS);
    ck_assert_int_eq(st.levels, 0);
    ck_assert_int_eq(st.coarse_by_metis, 0);
    /* its clusters are pairs: the estimate after the first round gives up (entries / 4 fit) */
    ck_assert_int_eq(st.cluster_rounds, 1);
    ck_assert_int_gt(st.coarse_estimate * 4, d.adj.nnz * 3 / 2);
    ck_assert_msg(cl * 100 <= cm * 106, "lp cut %lld, METIS %lld", (long long)cl, (long long)cm);
    /* deterministic for the seed, another seed another partition */
    ck_assert_int_eq(lp_cut(&d.adj, 32, 0, NULL, &b), cl);
    ck_assert_mem_eq(a, b, sizeof *a * (size_t)d.n);
    free(b);
    lp_cut(&d.adj, 32, 1, NULL, &b);
    ck_assert(memcmp(a, b, sizeof *a * (size_t)d.n) != 0);
    free(a), free(b);
    dataset_free(&d);
    partition_lp_set_small_entries(0);
}
END_TEST

/* disconnected graphs, isolated nodes and k = n keep every part within the cap */
START_TEST(awkward_graphs) {
    int64_t s[6] = {0, 1, 2, 10, 11, 20}, d[6] = {1, 2, 0, 11, 12, 21};
    csr_t g = {0};
    ck_assert_int_eq(csr_from_edges(&g, 40, s, d, 6, CSR_SYMMETRIZE), INCA_OK);   /* 31 isolated nodes */
    for (int64_t k = 2; k <= 40; k += 19) lp_cut(&g, k, 7, NULL, NULL);
    int32_t part[40];
    ck_assert_int_eq(partition_lp_assign(&g, 41, 0, part, NULL), INCA_EINVAL);
    ck_assert_int_eq(partition_lp_assign(&g, 1, 0, part, NULL), INCA_EINVAL);
    csr_free(&g);
    /* part labels are 16 bits: 65536 parts are refused with the limit named */
    int64_t s1[1] = {0}, d1[1] = {1};
    ck_assert_int_eq(csr_from_edges(&g, 70000, s1, d1, 1, CSR_SYMMETRIZE), INCA_OK);
    int32_t *big = malloc(sizeof *big * 70000);
    ck_assert_int_eq(partition_lp_assign(&g, 65536, 0, big, NULL), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "65535"));
    free(big);
    csr_free(&g);
    /* the CLI path refuses a directed graph, as METIS's does */
    int64_t s2[2] = {0, 1}, d2[2] = {1, 2};
    ck_assert_int_eq(csr_from_edges(&g, 3, s2, d2, 2, 0), INCA_OK);
    ck_assert_int_eq(partition_assign(&g, 2, PART_LP, 0, part, NULL), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "symmetric"));
    csr_free(&g);
}
END_TEST

START_TEST(alloc_failures) {
    dataset_t d;
    load_cora(&d);
    for (int path = 0; path < 2; path++) {
        partition_lp_set_small_entries(path ? 1000 : 0);
        /* fail the 1st, 2nd, ... allocation until a run gets through: every site is reached */
        for (long i = 1;; i++) {
            int32_t *part = malloc(sizeof *part * (size_t)d.n);
            inca_alloc_fail_after(i);
            int rc = partition_lp_assign(&d.adj, 40, 0, part, NULL);
            inca_alloc_fail_after(0);
            if (rc == INCA_OK) check_parts(&d.adj, 40, part, (int64_t)ceil(1.03 * (double)d.n / 40));
            else ck_assert_int_eq(rc, INCA_ENOMEM);
            free(part);
            if (rc == INCA_OK) break;
            ck_assert_int_lt(i, 1000);
        }
    }
    partition_lp_set_small_entries(0);
    dataset_free(&d);
}
END_TEST

START_TEST(cli_lp_partition_trains) {
    char *dir = tu_mkdtemp(), args[1024], *out = NULL, *err = NULL;
    snprintf(args, sizeof args, "ingest --format ogb '%s/data/cora' --out '%s/cora' --quiet", tu_src(), dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    free(out), free(err);
    snprintf(args, sizeof args, "partition '%s/cora' --parts 40 --method lp --json --quiet", dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    const char *j = tu_last_line(out);
    ck_assert_ptr_nonnull(strstr(j, "\"name\":\"lp-40-s0\""));
    ck_assert_ptr_nonnull(strstr(j, "\"method\":\"lp\""));
    double cut = tu_json_num(j, "edge_cut");
    ck_assert(cut > 1000 && cut < 1200);
    ck_assert_double_le(tu_json_num(j, "balance"), 1.05);
    free(out), free(err);
    snprintf(args, sizeof args, "train '%s/cora' --model gcn --method cluster --partition lp-40-s0 --epochs 30 --json", dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    ck_assert_ptr_nonnull(strstr(err, "lp-40-s0"));
    ck_assert_double_gt(tu_json_num(tu_last_line(out), "test_acc"), 0.6);
    free(out), free(err);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("partition_lp");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, two_cliques_and_grid);
    tcase_add_test(t, contraction_counts_every_edge);
    tcase_add_test(t, progress_reports_the_phases);
    tcase_add_test(t, hashed_accumulator_counts_like_a_dense_one);
    tcase_add_test(t, chunk_order_is_a_permutation_of_whole_chunks);
    tcase_add_test(t, rebalance_moves_out_of_overloaded_parts);
    tcase_add_test(t, refine_runs_to_a_local_optimum);
    tcase_add_test(t, fennel_stream_keeps_the_cap);
    tcase_add_test(t, clustering_keeps_wmax);
    tcase_add_test(t, bfs_order_starts_where_the_seed_says);
    tcase_add_test(t, cut_against_metis);
    tcase_add_test(t, fennel_path_when_coarsening_does_not_pay);
    tcase_add_test(t, awkward_graphs);
    tcase_add_test(t, alloc_failures);
    tcase_add_test(t, cli_lp_partition_trains);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
