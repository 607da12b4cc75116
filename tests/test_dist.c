/* graph/dist: rank ownership of a partitioned graph. Every part owned once, in contiguous
 * ranges; the split's weights within one part's weight of the ideal; dist_owner against a
 * linear scan; halos against a brute-force scan of the graph; bad rank counts refused. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/status.h"
#include "graph/csr.h"
#include "graph/dist.h"
#include "graph/gen.h"
#include "graph/partition.h"
#include <stdlib.h>
#include <string.h>

START_TEST(plans_cover_balance_and_halo) {
    gen_opts_t o;
    gen_opts_default(&o);
    o.nodes = 3000;
    o.avg_degree = 12;
    o.features = 0;
    o.classes = 5;
    o.seed = 11;
    dataset_t d;
    ck_assert_int_eq(gen_csbm(&o, &d, NULL), INCA_OK);
    partition_t p;
    ck_assert_int_eq(partition_compute(&d.adj, 24, PART_METIS, 0, &p), INCA_OK);
    csr_t a;
    ck_assert_int_eq(csr_permute(&d.adj, p.perm, &a), INCA_OK);
    for (int P = 1; P <= 8; P++) {
        dist_plan_t pl;
        ck_assert_int_eq(dist_plan_make(&a, p.bounds, p.k, P, &pl), INCA_OK);
        ck_assert_int_eq(pl.part_lo[0], 0);
        ck_assert_int_eq(pl.part_lo[P], p.k);
        int64_t total = 0, wmax_part = 0;
        for (int64_t i = 0; i < p.k; i++) {
            const int64_t w = (p.bounds[i + 1] - p.bounds[i]) + (a.rowptr[p.bounds[i + 1]] - a.rowptr[p.bounds[i]]);
            total += w;
            wmax_part = w > wmax_part ? w : wmax_part;
        }
        int64_t sum = 0;
        for (int r = 0; r < P; r++) {
            ck_assert_int_lt(pl.part_lo[r], pl.part_lo[r + 1]);   /* every rank owns a part */
            ck_assert_int_eq(pl.node_lo[r], p.bounds[pl.part_lo[r]]);
            int64_t w = 0;
            for (int64_t i = pl.part_lo[r]; i < pl.part_lo[r + 1]; i++)
                w += (p.bounds[i + 1] - p.bounds[i]) + (a.rowptr[p.bounds[i + 1]] - a.rowptr[p.bounds[i]]);
            ck_assert_int_eq(pl.weight[r], w);
            sum += w;
            /* boundaries at the nearest part edge: each rank within one part of the ideal share */
            ck_assert_msg(w <= total / P + wmax_part + 1, "P=%d rank %d weight %lld, ideal %lld, part max %lld", P, r,
                          (long long)w, (long long)(total / P), (long long)wmax_part);
            /* the halo against a brute-force scan */
            int64_t *h = NULL, nh = 0;
            ck_assert_int_eq(dist_halo(&a, &pl, r, &h, &nh), INCA_OK);
            uint8_t *want = calloc((size_t)a.n_rows, 1);
            int64_t nw = 0;
            for (int64_t v = pl.node_lo[r]; v < pl.node_lo[r + 1]; v++)
                for (int64_t q = a.rowptr[v]; q < a.rowptr[v + 1]; q++) {
                    const int64_t c = a.col[q];
                    if ((c < pl.node_lo[r] || c >= pl.node_lo[r + 1]) && !want[c]) { want[c] = 1; nw++; }
                }
            ck_assert_int_eq(nh, nw);
            for (int64_t i = 0; i < nh; i++) {
                ck_assert(want[h[i]]);
                if (i) ck_assert_int_lt(h[i - 1], h[i]);
            }
            if (P == 1) ck_assert_int_eq(nh, 0);
            free(want);
            inca_free(h);
        }
        ck_assert_int_eq(sum, total);
        /* a copy holds the same plan in memory of its own */
        dist_plan_t cp;
        ck_assert_int_eq(dist_plan_copy(&pl, &cp), INCA_OK);
        ck_assert_int_eq(cp.ranks, P);
        ck_assert_int_eq(cp.k, p.k);
        ck_assert_int_eq(cp.n, a.n_rows);
        ck_assert(cp.part_lo != pl.part_lo && cp.node_lo != pl.node_lo && cp.weight != pl.weight);
        for (int r = 0; r <= P; r++) {
            ck_assert_int_eq(cp.part_lo[r], pl.part_lo[r]);
            ck_assert_int_eq(cp.node_lo[r], pl.node_lo[r]);
        }
        for (int r = 0; r < P; r++) {
            int64_t w = 0;
            for (int64_t i = pl.part_lo[r]; i < pl.part_lo[r + 1]; i++)
                w += (p.bounds[i + 1] - p.bounds[i]) + (a.rowptr[p.bounds[i + 1]] - a.rowptr[p.bounds[i]]);
            ck_assert_int_eq(cp.weight[r], w);
        }
        dist_plan_free(&cp);
        for (int64_t v = -1; v <= a.n_rows; v++) {
            int want = -1;
            for (int r = 0; r < P; r++)
                if (v >= pl.node_lo[r] && v < pl.node_lo[r + 1]) want = r;
            ck_assert_int_eq(dist_owner(&pl, v), want);
        }
        dist_plan_free(&pl);
        dist_plan_free(&pl);   /* NULL-safe after free */
    }
    dist_plan_t pl;
    ck_assert_int_eq(dist_plan_make(&a, p.bounds, p.k, 25, &pl), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "25 ranks: expected 1.."));
    ck_assert_int_eq(dist_plan_make(&a, p.bounds, p.k, 0, &pl), INCA_EINVAL);
    /* bounds that stop short of the graph's rows (its last part left out) or start past 0 */
    ck_assert_int_eq(dist_plan_make(&a, p.bounds, p.k - 1, 2, &pl), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "the part bounds must run from 0 to the graph's 3000 rows"), "%s", inca_errmsg());
    ck_assert_int_eq(dist_plan_make(&a, p.bounds + 1, p.k - 1, 2, &pl), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "the part bounds must run from 0"), "%s", inca_errmsg());
    inca_err_clear();
    csr_free(&a);
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* Empty parts (METIS leaves some on small graphs): every rank still owns a node. The weights put
 * a boundary among empty parts before, so of 3 ranks over a star's parts {[0,2), [2,3), [3,4)} with
 * empty parts between, rank 1 owned none (full-batch: "model_forward: 0 rows"); fewer parts holding a
 * node than ranks is refused, naming the count. */
START_TEST(plans_skip_empty_parts) {
    csr_t a;
    const int64_t src[] = {0, 0, 0}, dst[] = {1, 2, 3};   /* a star: node 0 weighs most */
    ck_assert_int_eq(csr_from_edges(&a, 4, src, dst, 3, CSR_SYMMETRIZE), INCA_OK);
    /* the weights' boundaries for 3 ranks fell at nodes 2 and 2 in each (rank 1: no node) */
    const int64_t bounds[][7] = {{0, 2, 2, 3, 3, 4, 4}, {0, 0, 2, 2, 3, 4, 4}, {0, 2, 2, 2, 3, 4, 4}};
    for (int b = 0; b < 3; b++)
        for (int P = 1; P <= 3; P++) {
            dist_plan_t pl;
            ck_assert_int_eq(dist_plan_make(&a, bounds[b], 6, P, &pl), INCA_OK);
            ck_assert_int_eq(pl.node_lo[0], 0);
            ck_assert_int_eq(pl.node_lo[P], 4);
            for (int r = 0; r < P; r++)
                ck_assert_msg(pl.node_lo[r + 1] > pl.node_lo[r], "bounds %d, %d ranks: rank %d owns nodes [%lld, %lld)", b, P, r,
                              (long long)pl.node_lo[r], (long long)pl.node_lo[r + 1]);
            dist_plan_free(&pl);
        }
    dist_plan_t pl;
    ck_assert_int_eq(dist_plan_make(&a, bounds[0], 6, 4, &pl), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "4 ranks: only 3 of the 6 parts hold a node"), "%s", inca_errmsg());
    csr_free(&a);
}
END_TEST

int main(void) {
    Suite *s = suite_create("dist");
    TCase *t = tcase_create("core");
    tcase_add_test(t, plans_cover_balance_and_halo);
    tcase_add_test(t, plans_skip_empty_parts);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
