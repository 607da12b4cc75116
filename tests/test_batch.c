/* Tests of loaders/batch.c: every node exactly once per epoch, ranges/ids/features/labels
 * consistent with the source, Â_BB and Â_{B,halo} equal the induced submatrices of a dense
 * copy of Â, the halo is exactly the out-of-batch neighbourhood, the transpose for a
 * non-symmetric Â, the same sequence with and without the prefetch thread, bad inputs and
 * allocation failures. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "graph/csr.h"
#include "graph/partition.h"
#include "loaders/batch.h"
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    int64_t n, f;
    csr_t adj, a;        /* a: normalised, renumbered */
    float *x, *dense;    /* dense n x n copy of a */
    int32_t *y;
    partition_t p;
} fixture_t;

/* random symmetric graph, renumbered by a random partition into k parts of unequal size */
static void fixture_make(fixture_t *t, int64_t n, int64_t k, int mean_norm) {
    memset(t, 0, sizeof *t);
    t->n = n;
    t->f = 3;
    int64_t m = 3 * n;
    int64_t *s = malloc(sizeof *s * (size_t)m), *d = malloc(sizeof *d * (size_t)m);
    rng_t r;
    rng_seed(&r, 11);
    for (int64_t i = 0; i < m; i++) { s[i] = (int64_t)rng_below(&r, (uint64_t)n); d[i] = (int64_t)rng_below(&r, (uint64_t)n); }
    csr_t g = {0};
    ck_assert_int_eq(csr_from_edges(&g, n, s, d, m, CSR_SYMMETRIZE | CSR_DROP_SELF_LOOPS), INCA_OK);
    /* uneven parts: node v goes to part (v*v) mod k */
    int32_t *part = malloc(sizeof *part * (size_t)n);
    for (int64_t v = 0; v < n; v++) part[v] = (int32_t)((v * v + v / 3) % k);
    ck_assert_int_eq(partition_from_parts(n, k, part, &t->p), INCA_OK);
    ck_assert_int_eq(csr_permute(&g, t->p.perm, &t->adj), INCA_OK);
    ck_assert_int_eq(mean_norm ? csr_mean_norm(&t->adj, &t->a) : csr_gcn_norm(&t->adj, &t->a), INCA_OK);
    t->dense = calloc((size_t)(n * n), sizeof(float));
    for (int64_t u = 0; u < n; u++)
        for (int64_t e = t->a.rowptr[u]; e < t->a.rowptr[u + 1]; e++) t->dense[u * n + t->a.col[e]] = t->a.val[e];
    t->x = malloc(sizeof(float) * (size_t)(n * t->f));
    for (int64_t i = 0; i < n * t->f; i++) t->x[i] = (float)i;
    t->y = malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t v = 0; v < n; v++) t->y[v] = (int32_t)(v % 5) - 1;
    csr_free(&g);
    free(part);
    free(s);
    free(d);
}

static void fixture_free(fixture_t *t) {
    csr_free(&t->adj);
    csr_free(&t->a);
    free(t->x);
    free(t->dense);
    free(t->y);
    partition_free(&t->p);
}

static batch_source_t source(fixture_t *t, int sym) {
    batch_source_t s = {.n = t->n, .f = t->f, .x = t->x, .y = t->y, .a = &t->a, .a_symmetric = sym,
                        .bounds = t->p.bounds, .k = t->p.k};
    return s;
}

static float csr_at(const csr_t *c, int64_t i, int64_t j) {
    for (int64_t e = c->rowptr[i]; e < c->rowptr[i + 1]; e++)
        if (c->col[e] == j) return c->val[e];
    return 0.f;
}

/* checks one batch against the fixture; marks its nodes in `count` */
static void check_batch(fixture_t *t, const batch_t *b, int halo, int sym, int *count) {
    int64_t n = t->n, nb = b->n_b;
    char *inb = calloc((size_t)n, 1);
    int64_t off = 0;
    for (int64_t r = 0; r < b->nranges; r++) {
        if (r > 0) ck_assert_int_gt(b->range_start[r], b->range_start[r - 1] + b->range_len[r - 1]);
        for (int64_t i = 0; i < b->range_len[r]; i++) ck_assert_int_eq(b->nodes[off + i], b->range_start[r] + i);
        off += b->range_len[r];
    }
    ck_assert_int_eq(off, nb);
    for (int64_t i = 0; i < nb; i++) {
        int64_t v = b->nodes[i];
        inb[v] = 1;
        count[v]++;
        ck_assert_mem_eq(b->x + i * t->f, t->x + v * t->f, sizeof(float) * (size_t)t->f);
        ck_assert_int_eq(b->y[i], t->y[v]);
    }
    int64_t rows_nnz = 0;
    for (int64_t i = 0; i < nb; i++)
        for (int64_t v = 0; v < n; v++) rows_nnz += t->dense[b->nodes[i] * n + v] != 0.f;
    ck_assert_int_eq(b->nnz_rows, rows_nnz);
    /* Â_BB = induced submatrix, entry by entry */
    ck_assert_int_eq(b->a_bb.n_rows, nb);
    for (int64_t i = 0; i < nb; i++) {
        for (int64_t e = b->a_bb.rowptr[i] + 1; e < b->a_bb.rowptr[i + 1]; e++) ck_assert_int_lt(b->a_bb.col[e - 1], b->a_bb.col[e]);
        for (int64_t j = 0; j < nb; j++) {
            float want = t->dense[b->nodes[i] * n + b->nodes[j]];
            ck_assert(csr_at(&b->a_bb, i, j) == want);
            if (!sym) ck_assert(csr_at(&b->a_bbt, j, i) == want);
        }
    }
    if (sym) ck_assert_ptr_null(b->a_bbt.rowptr);
    if (halo) {
        /* the halo is exactly { v not in B : some u in B has Â[u,v] != 0 } */
        char *want = calloc((size_t)n, 1);
        int64_t nh = 0;
        for (int64_t i = 0; i < nb; i++)
            for (int64_t v = 0; v < n; v++)
                if (!inb[v] && t->dense[b->nodes[i] * n + v] != 0.f && !want[v]) { want[v] = 1; nh++; }
        ck_assert_int_eq(b->n_halo, nh);
        for (int64_t h = 0; h < b->n_halo; h++) {
            ck_assert(want[b->halo[h]]);
            if (h) ck_assert_int_lt(b->halo[h - 1], b->halo[h]);
        }
        ck_assert_int_eq(b->a_bh.n_cols, nh);
        int64_t nnz = 0;
        for (int64_t i = 0; i < nb; i++)
            for (int64_t h = 0; h < nh; h++) {
                float w = t->dense[b->nodes[i] * n + b->halo[h]];
                ck_assert(csr_at(&b->a_bh, i, h) == w);
                nnz += w != 0.f;
            }
        ck_assert_int_eq(b->a_bh.nnz, nnz);
        free(want);
    } else ck_assert_int_eq(b->n_halo, 0);
    free(inb);
}

static void run_epochs(int mean_norm, int halo, int prefetch) {
    fixture_t t;
    fixture_make(&t, 90, 7, mean_norm);
    batch_source_t src = source(&t, !mean_norm);
    batch_opts_t o = {.batch_parts = 3, .seed = 5, .halo = halo, .prefetch = prefetch};
    batch_loader_t *l = NULL;
    ck_assert_int_eq(batch_loader_create(&src, &o, &l), INCA_OK);
    ck_assert_int_eq(batch_loader_steps_per_epoch(l), 3);   /* 3 + 3 + 1 parts */
    int count[90];
    int64_t first_epoch0 = -1, first_epoch1 = -1;
    for (int ep = 0; ep < 3; ep++) {
        memset(count, 0, sizeof count);
        for (int s = 0; s < 3; s++) {
            const batch_t *b = NULL;
            ck_assert_int_eq(batch_loader_next(l, &b), INCA_OK);
            ck_assert_int_eq(b->epoch, ep);
            ck_assert_int_eq(b->step, s);
            ck_assert_int_eq(b->index, ep * 3 + s);
            check_batch(&t, b, halo, !mean_norm, count);
            if (s == 0 && ep == 0) first_epoch0 = b->n_b * 1000 + b->nodes[0];
            if (s == 0 && ep == 1) first_epoch1 = b->n_b * 1000 + b->nodes[0];
        }
        for (int v = 0; v < 90; v++) ck_assert_msg(count[v] == 1, "epoch %d: node %d seen %d times", ep, v, count[v]);
    }
    ck_assert_int_ne(first_epoch0, first_epoch1);   /* a fresh shuffle each epoch (this seed) */
    ck_assert(batch_loader_wait_s(l) >= 0);
    ck_assert(batch_loader_bytes(l) > 0);
    batch_loader_free(&l);
    fixture_free(&t);
}

START_TEST(epochs_gcn_halo_prefetch) { run_epochs(0, 1, 1); }
END_TEST
START_TEST(epochs_mean_sync) { run_epochs(1, 0, 0); }
END_TEST
START_TEST(epochs_mean_halo_prefetch) { run_epochs(1, 1, 1); }
END_TEST

START_TEST(prefetch_same_sequence) {
    fixture_t t;
    fixture_make(&t, 120, 9, 0);
    batch_source_t src = source(&t, 1);
    batch_loader_t *l1 = NULL, *l2 = NULL;
    batch_opts_t o1 = {.batch_parts = 2, .seed = 9, .halo = 1, .prefetch = 1}, o2 = o1;
    o2.prefetch = 0;
    ck_assert_int_eq(batch_loader_create(&src, &o1, &l1), INCA_OK);
    ck_assert_int_eq(batch_loader_create(&src, &o2, &l2), INCA_OK);
    for (int s = 0; s < 25; s++) {
        const batch_t *a = NULL, *b = NULL;
        ck_assert_int_eq(batch_loader_next(l1, &a), INCA_OK);
        ck_assert_int_eq(batch_loader_next(l2, &b), INCA_OK);
        ck_assert_int_eq(a->n_b, b->n_b);
        ck_assert_mem_eq(a->nodes, b->nodes, sizeof(int64_t) * (size_t)a->n_b);
        ck_assert_int_eq(a->n_halo, b->n_halo);
        ck_assert_int_eq(a->a_bh.nnz, b->a_bh.nnz);
    }
    batch_loader_free(&l1);
    batch_loader_free(&l2);
    /* a loader freed right after creation (thread still producing) shuts down cleanly */
    ck_assert_int_eq(batch_loader_create(&src, &o1, &l1), INCA_OK);
    batch_loader_free(&l1);
    fixture_free(&t);
}
END_TEST

/* A rank's loader (graph/dist.h): batches only from its parts, each of its nodes once per epoch,
 * checked like any batch; the whole-graph loader is the range [0, k) with stream 0. */
START_TEST(part_ranges) {
    fixture_t t;
    fixture_make(&t, 120, 9, 0);
    batch_source_t src = source(&t, 1);
    static const int64_t lo[3] = {0, 3, 7}, hi[3] = {3, 7, 9};
    for (int r = 0; r < 3; r++) {
        batch_opts_t o = {.batch_parts = 2, .seed = 4, .halo = 1, .prefetch = r == 1, .part_lo = lo[r], .part_hi = hi[r],
                          .stream = (uint64_t)r};
        batch_loader_t *l = NULL;
        ck_assert_int_eq(batch_loader_create(&src, &o, &l), INCA_OK);
        const int64_t spe = (hi[r] - lo[r] + 1) / 2;
        ck_assert_int_eq(batch_loader_steps_per_epoch(l), spe);
        int64_t nb_max = 0, hm = 0;
        batch_loader_limits(l, &nb_max, &hm);
        int count[120];
        for (int ep = 0; ep < 2; ep++) {
            memset(count, 0, sizeof count);
            for (int64_t st = 0; st < spe; st++) {
                const batch_t *b = NULL;
                ck_assert_int_eq(batch_loader_next(l, &b), INCA_OK);
                ck_assert_int_le(b->n_b, nb_max);
                check_batch(&t, b, 1, 1, count);
            }
            for (int v = 0; v < 120; v++) {
                const int mine = v >= t.p.bounds[lo[r]] && v < t.p.bounds[hi[r]];
                ck_assert_msg(count[v] == mine, "rank %d epoch %d: node %d seen %d times", r, ep, v, count[v]);
            }
        }
        batch_loader_free(&l);
    }
    /* [0, k) with stream 0 is the plain loader's sequence */
    batch_opts_t o1 = {.batch_parts = 2, .seed = 4}, o2 = o1;
    o2.part_hi = t.p.k;
    batch_loader_t *l1 = NULL, *l2 = NULL;
    ck_assert_int_eq(batch_loader_create(&src, &o1, &l1), INCA_OK);
    ck_assert_int_eq(batch_loader_create(&src, &o2, &l2), INCA_OK);
    for (int st = 0; st < 12; st++) {
        const batch_t *a = NULL, *b = NULL;
        ck_assert_int_eq(batch_loader_next(l1, &a), INCA_OK);
        ck_assert_int_eq(batch_loader_next(l2, &b), INCA_OK);
        ck_assert_int_eq(a->n_b, b->n_b);
        ck_assert_mem_eq(a->nodes, b->nodes, sizeof(int64_t) * (size_t)a->n_b);
    }
    batch_loader_free(&l1);
    batch_loader_free(&l2);
    batch_opts_t bad = {.batch_parts = 2, .part_lo = 5, .part_hi = 5};
    ck_assert_int_eq(batch_loader_create(&src, &bad, &l1), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "part range"));
    bad.part_hi = 10;
    ck_assert_int_eq(batch_loader_create(&src, &bad, &l1), INCA_EINVAL);
    fixture_free(&t);
}
END_TEST

/* Empty parts (METIS leaves some when k nears n) are never drawn: 10 parts of which 4 hold
 * nodes, one part a batch, make 4 steps an epoch, each a non-empty batch, every node once. */
START_TEST(empty_parts_not_drawn) {
    fixture_t t;
    fixture_make(&t, 120, 9, 0);
    batch_source_t src = source(&t, 1);
    static const int64_t bounds[11] = {0, 0, 30, 30, 30, 60, 90, 90, 120, 120, 120};
    src.bounds = bounds;
    src.k = 10;
    batch_opts_t o = {.batch_parts = 1, .seed = 4, .halo = 1, .prefetch = 1};
    batch_loader_t *l = NULL;
    ck_assert_int_eq(batch_loader_create(&src, &o, &l), INCA_OK);
    ck_assert_int_eq(batch_loader_steps_per_epoch(l), 4);
    int count[120];
    for (int ep = 0; ep < 2; ep++) {
        memset(count, 0, sizeof count);
        for (int st = 0; st < 4; st++) {
            const batch_t *b = NULL;
            ck_assert_int_eq(batch_loader_next(l, &b), INCA_OK);
            ck_assert_int_eq(b->n_b, 30);
            for (int64_t i = 0; i < b->n_b; i++) count[b->nodes[i]]++;
        }
        for (int v = 0; v < 120; v++) ck_assert_msg(count[v] == 1, "epoch %d: node %d seen %d times", ep, v, count[v]);
    }
    batch_loader_free(&l);
    fixture_free(&t);
}
END_TEST

START_TEST(bad_inputs_and_failures) {
    fixture_t t;
    fixture_make(&t, 40, 4, 0);
    batch_source_t src = source(&t, 1);
    batch_loader_t *l = NULL;
    batch_opts_t o = {.batch_parts = 0, .seed = 1, .halo = 1, .prefetch = 1};
    ck_assert_int_eq(batch_loader_create(&src, &o, &l), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--batch-parts"));
    o.batch_parts = 2;
    int64_t bad[5] = {0, 10, 5, 30, 40};
    src.bounds = bad;
    ck_assert_int_eq(batch_loader_create(&src, &o, &l), INCA_EINVAL);
    src = source(&t, 1);
    for (long i = 1; i < 60; i++) {
        inca_alloc_fail_after(i);
        int rc = batch_loader_create(&src, &o, &l);
        inca_alloc_fail_after(0);
        if (rc == INCA_OK) {
            const batch_t *b = NULL;
            ck_assert_int_eq(batch_loader_next(l, &b), INCA_OK);
            batch_loader_free(&l);
        } else ck_assert_int_eq(rc, INCA_ENOMEM);
    }
    fixture_free(&t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("batch");
    TCase *t = tcase_create("core");
    tcase_add_test(t, epochs_gcn_halo_prefetch);
    tcase_add_test(t, epochs_mean_sync);
    tcase_add_test(t, epochs_mean_halo_prefetch);
    tcase_add_test(t, prefetch_same_sequence);
    tcase_add_test(t, part_ranges);
    tcase_add_test(t, empty_parts_not_drawn);
    tcase_add_test(t, bad_inputs_and_failures);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
