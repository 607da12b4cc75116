/* graph/csr: construction with symmetrise/dedupe/self-loops, GCN and mean normalisation
 * against hand-computed values, transpose, permutation, symmetry check, failure injection. */
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/csr.h"
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* path 0-1-2 plus a duplicate and a self-loop on 2 */
static const int64_t S[] = {0, 1, 1, 2, 0};
static const int64_t D[] = {1, 2, 2, 2, 1};

START_TEST(test_from_edges_sym) {
    csr_t g;
    ck_assert_int_eq(csr_from_edges(&g, 3, S, D, 5, CSR_SYMMETRIZE | CSR_DROP_SELF_LOOPS), INCA_OK);
    ck_assert_int_eq(g.nnz, 4);   /* 0-1, 1-0, 1-2, 2-1 */
    int64_t rp[] = {0, 1, 3, 4};
    int32_t cl[] = {1, 0, 2, 1};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(g.rowptr[i], rp[i]);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(g.col[i], cl[i]);
    ck_assert(csr_is_symmetric(&g));
    ck_assert(csr_is_symmetric_values(&g));   /* no values: the pattern */
    csr_free(&g);
    ck_assert_ptr_null(g.rowptr);
    /* neither loop flag: a given self-loop is kept, once (not once more as its own reverse,
     * whose slot, counted and never filled, landed in the next row): 0-0 and 0-2 give the rows
     * {0, 2}, {} and {0} */
    const int64_t ls[] = {0, 0}, ld[] = {0, 2};
    ck_assert_int_eq(csr_from_edges(&g, 3, ls, ld, 2, CSR_SYMMETRIZE), INCA_OK);
    ck_assert_int_eq(g.nnz, 3);
    const int64_t rpl[] = {0, 2, 2, 3};
    const int32_t cll[] = {0, 2, 0};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(g.rowptr[i], rpl[i]);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(g.col[i], cll[i]);
    csr_free(&g);
    /* values: a symmetric pattern whose values are not (1-2 is 0.5, 2-1 is 0.25) */
    ck_assert_int_eq(csr_alloc(&g, 3, 3, 4, 1), INCA_OK);
    const float vl[] = {2.f, 2.f, 0.5f, 0.25f};   /* the pattern above */
    memcpy(g.rowptr, rp, sizeof rp);
    memcpy(g.col, cl, sizeof cl);
    memcpy(g.val, vl, sizeof vl);
    ck_assert(csr_is_symmetric(&g) && !csr_is_symmetric_values(&g));
    g.val[3] = 0.5f;
    ck_assert(csr_is_symmetric_values(&g));
    csr_free(&g);
}
END_TEST

START_TEST(test_from_edges_directed_loops) {
    csr_t g;
    ck_assert_int_eq(csr_from_edges(&g, 3, S, D, 5, CSR_SELF_LOOPS), INCA_OK);
    /* rows: 0:{0,1} 1:{1,2} 2:{2} */
    ck_assert_int_eq(g.nnz, 5);
    int32_t cl[] = {0, 1, 1, 2, 2};
    for (int i = 0; i < 5; i++) ck_assert_int_eq(g.col[i], cl[i]);
    ck_assert(!csr_is_symmetric(&g) && !csr_is_symmetric_values(&g));
    csr_free(&g);
    int64_t bad = 3;
    ck_assert_int_eq(csr_from_edges(&g, 3, S, &bad, 1, 0), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "out of range"));
}
END_TEST

START_TEST(test_long_rows_sorted) {
    /* rows far longer than the insertion-sort cut-off, with many duplicates and sorted,
     * reversed and constant runs: checked against a counting reference */
    const int n = 5000, m = 60000;
    int64_t *s = malloc(sizeof(int64_t) * m), *d = malloc(sizeof(int64_t) * m);
    static unsigned char seen[3][5000];
    memset(seen, 0, sizeof seen);
    srand(11);
    for (int e = 0; e < m; e++) {
        s[e] = e % 3;
        if (e % 3 == 0) d[e] = rand() % n;          /* random */
        else if (e % 3 == 1) d[e] = n - 1 - (e / 3) % n;   /* reversed */
        else d[e] = 7;                               /* constant */
        seen[s[e]][d[e]] = 1;
    }
    csr_t g;
    ck_assert_int_eq(csr_from_edges(&g, n, s, d, m, 0), INCA_OK);
    for (int r = 0; r < 3; r++) {
        int64_t expect = 0;
        for (int v = 0; v < n; v++) expect += seen[r][v];
        ck_assert_int_eq(g.rowptr[r + 1] - g.rowptr[r], expect);
        for (int64_t k = g.rowptr[r]; k < g.rowptr[r + 1]; k++) {
            ck_assert(seen[r][g.col[k]]);
            if (k > g.rowptr[r]) ck_assert_int_lt(g.col[k - 1], g.col[k]);
        }
    }
    /* permuting keeps long rows sorted and maps every entry (packed-key sort path) */
    int64_t *perm = malloc(sizeof(int64_t) * n);
    for (int v = 0; v < n; v++) perm[v] = (int64_t)((v * 7919LL + 13) % n);   /* 7919 prime, coprime with 5000 */
    csr_t pg;
    ck_assert_int_eq(csr_permute(&g, perm, &pg), INCA_OK);
    ck_assert_int_eq(pg.nnz, g.nnz);
    for (int r = 0; r < 3; r++) {
        int64_t u = perm[r];
        ck_assert_int_eq(pg.rowptr[u + 1] - pg.rowptr[u], g.rowptr[r + 1] - g.rowptr[r]);
        for (int64_t k = pg.rowptr[u] + 1; k < pg.rowptr[u + 1]; k++) ck_assert_int_lt(pg.col[k - 1], pg.col[k]);
        for (int64_t k = g.rowptr[r]; k < g.rowptr[r + 1]; k++) {
            int32_t want = (int32_t)perm[g.col[k]];
            int found = 0;
            for (int64_t q = pg.rowptr[u]; q < pg.rowptr[u + 1]; q++) found |= pg.col[q] == want;
            ck_assert(found);
        }
    }
    csr_free(&pg);
    free(perm);
    csr_free(&g);
    free(s);
    free(d);
}
END_TEST

START_TEST(test_gcn_norm) {
    csr_t g, a;
    ck_assert_int_eq(csr_from_edges(&g, 3, S, D, 5, CSR_SYMMETRIZE | CSR_DROP_SELF_LOOPS), INCA_OK);
    ck_assert_int_eq(csr_gcn_norm(&g, &a), INCA_OK);
    /* Ã = A + I, degrees 2, 3, 2: Â_ij = 1/sqrt(d_i d_j) */
    double dense[3][3] = {{0}};
    for (int64_t i = 0; i < 3; i++)
        for (int64_t k = a.rowptr[i]; k < a.rowptr[i + 1]; k++) dense[i][a.col[k]] = a.val[k];
    double d[3] = {2, 3, 2};
    int adj[3][3] = {{1, 1, 0}, {1, 1, 1}, {0, 1, 1}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            ck_assert_double_eq_tol(dense[i][j], adj[i][j] ? 1.0 / sqrt(d[i] * d[j]) : 0.0, 1e-7);
    for (int64_t i = 0; i < 3; i++)   /* columns stay sorted after inserting the diagonal */
        for (int64_t k = a.rowptr[i] + 1; k < a.rowptr[i + 1]; k++) ck_assert_int_lt(a.col[k - 1], a.col[k]);
    csr_free(&a);
    /* an existing self-loop is not doubled (add_remaining_self_loops) */
    csr_t gl;
    ck_assert_int_eq(csr_from_edges(&gl, 3, S, D, 5, CSR_SYMMETRIZE | CSR_SELF_LOOPS), INCA_OK);
    ck_assert_int_eq(csr_gcn_norm(&gl, &a), INCA_OK);
    ck_assert_int_eq(a.nnz, 7);
    ck_assert_double_eq_tol(a.val[0], 0.5, 1e-7);
    csr_free(&a);
    csr_free(&gl);
    ck_assert_int_eq(csr_mean_norm(&g, &a), INCA_OK);
    ck_assert_double_eq_tol(a.val[0], 1.0, 1e-7);
    ck_assert_double_eq_tol(a.val[1], 0.5, 1e-7);
    ck_assert_double_eq_tol(a.val[2], 0.5, 1e-7);
    ck_assert_double_eq_tol(a.val[3], 1.0, 1e-7);
    csr_free(&a);
    csr_free(&g);
}
END_TEST

/* Mean normalisation of a weighted matrix divides each entry by its row's sum: row 0 holds 1
 * and 3 (0.25, 0.75), row 1 nothing (stays empty), row 2 a single 2 (1). */
START_TEST(test_mean_norm_weighted) {
    csr_t w, a;
    ck_assert_int_eq(csr_alloc(&w, 3, 3, 3, 1), INCA_OK);
    static const int64_t rp[] = {0, 2, 2, 3};
    static const int32_t col[] = {0, 2, 1};
    static const float val[] = {1.0f, 3.0f, 2.0f};
    memcpy(w.rowptr, rp, sizeof rp);
    memcpy(w.col, col, sizeof col);
    memcpy(w.val, val, sizeof val);
    ck_assert_int_eq(csr_mean_norm(&w, &a), INCA_OK);
    ck_assert_int_eq(a.nnz, 3);
    ck_assert_int_eq(a.rowptr[1], 2);
    ck_assert_int_eq(a.rowptr[2], 2);
    ck_assert_double_eq_tol(a.val[0], 0.25, 1e-7);
    ck_assert_double_eq_tol(a.val[1], 0.75, 1e-7);
    ck_assert_double_eq_tol(a.val[2], 1.0, 1e-7);
    csr_free(&a);
    csr_free(&w);
}
END_TEST

/* random directed weighted graph for transpose / permute against dense references */
static void random_graph(csr_t *g, int n, int m, unsigned seed) {
    int64_t *s = malloc(sizeof(int64_t) * (size_t)m), *d = malloc(sizeof(int64_t) * (size_t)m);
    srand(seed);
    for (int e = 0; e < m; e++) { s[e] = rand() % n; d[e] = rand() % n; }
    csr_t p;
    ck_assert_int_eq(csr_from_edges(&p, n, s, d, m, 0), INCA_OK);
    ck_assert_int_eq(csr_mean_norm(&p, g), INCA_OK);   /* gives distinct-ish values */
    for (int64_t k = 0; k < g->nnz; k++) g->val[k] += 0.001f * (float)g->col[k];
    csr_free(&p);
    free(s);
    free(d);
}

START_TEST(test_transpose_permute) {
    const int n = 40;
    csr_t g, t, pg;
    random_graph(&g, n, 200, 5);
    static float dg[40][40], dt[40][40];
    memset(dg, 0, sizeof dg);
    memset(dt, 0, sizeof dt);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = g.rowptr[i]; k < g.rowptr[i + 1]; k++) dg[i][g.col[k]] = g.val[k];
    ck_assert_int_eq(csr_transpose(&g, &t), INCA_OK);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = t.rowptr[i]; k < t.rowptr[i + 1]; k++) {
            dt[i][t.col[k]] = t.val[k];
            if (k > t.rowptr[i]) ck_assert_int_lt(t.col[k - 1], t.col[k]);
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) ck_assert(dt[i][j] == dg[j][i]);
    int64_t perm[40];
    for (int i = 0; i < n; i++) perm[i] = (i * 7 + 3) % n;   /* 7 is coprime with 40 */
    ck_assert_int_eq(csr_permute(&g, perm, &pg), INCA_OK);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = g.rowptr[i]; k < g.rowptr[i + 1]; k++) {
            int64_t u = perm[i], v = perm[g.col[k]];
            int found = 0;
            for (int64_t q = pg.rowptr[u]; q < pg.rowptr[u + 1]; q++)
                if (pg.col[q] == v) { found = 1; ck_assert(pg.val[q] == g.val[k]); }
            ck_assert(found);
        }
    ck_assert_int_eq(pg.nnz, g.nnz);
    perm[1] = perm[0];
    csr_t bad;
    ck_assert_int_eq(csr_permute(&g, perm, &bad), INCA_EINVAL);
    csr_free(&pg);
    csr_free(&t);
    csr_free(&g);
}
END_TEST

static int cmp_pair(const void *x, const void *y) {
    const int64_t *a = x, *b = y;
    return a[0] != b[0] ? (a[0] > b[0]) - (a[0] < b[0]) : (a[1] > b[1]) - (a[1] < b[1]);
}

/* A graph past the one-block size (row blocks, one a thread): 1, 2 and 3 threads build the same
 * arrays, equal to the sorted, deduplicated list of (row, col) pairs made here independently. */
START_TEST(test_from_edges_blocks) {
    const int64_t n = 200000, m = 600000;
    int64_t *s = malloc(sizeof *s * (size_t)m), *d = malloc(sizeof *d * (size_t)m), *pairs = malloc(sizeof *pairs * (size_t)(4 * m + 2 * n));
    uint64_t x = 12345;
    for (int64_t e = 0; e < m; e++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        s[e] = (int64_t)((x >> 33) % (uint64_t)n);
        d[e] = e % 97 == 0 ? s[e] : (int64_t)((x >> 11) % (uint64_t)n);   /* some self-loops */
    }
    for (int flags = 0; flags < 2; flags++) {
        unsigned f = flags ? CSR_SYMMETRIZE | CSR_SELF_LOOPS : CSR_SYMMETRIZE | CSR_DROP_SELF_LOOPS;
        int64_t np = 0;
        for (int64_t e = 0; e < m; e++) {
            if (s[e] == d[e]) continue;
            pairs[2 * np] = s[e], pairs[2 * np + 1] = d[e], np++;
            pairs[2 * np] = d[e], pairs[2 * np + 1] = s[e], np++;
        }
        for (int64_t v = 0; flags && v < n; v++) pairs[2 * np] = v, pairs[2 * np + 1] = v, np++;
        qsort(pairs, (size_t)np, 2 * sizeof *pairs, cmp_pair);
        int64_t u = 0;
        for (int64_t i = 0; i < np; i++)
            if (i == 0 || cmp_pair(pairs + 2 * i, pairs + 2 * (i - 1)) != 0) pairs[2 * u] = pairs[2 * i], pairs[2 * u + 1] = pairs[2 * i + 1], u++;
        csr_t g[3];
        for (int t = 0; t < 3; t++) {
            inca_set_threads(t + 1);
            ck_assert_int_eq(csr_from_edges(&g[t], n, s, d, m, f), INCA_OK);
        }
        inca_set_threads(0);
        ck_assert_int_eq(g[0].nnz, u);
        for (int64_t r = 0, i = 0; r < n; r++)
            for (int64_t e = g[0].rowptr[r]; e < g[0].rowptr[r + 1]; e++, i++)
                if (pairs[2 * i] != r || pairs[2 * i + 1] != g[0].col[e])
                    ck_abort_msg("entry %lld: (%lld, %d), expected (%lld, %lld)", (long long)i, (long long)r, g[0].col[e],
                                 (long long)pairs[2 * i], (long long)pairs[2 * i + 1]);
        for (int t = 1; t < 3; t++) {
            ck_assert_int_eq(g[t].nnz, g[0].nnz);
            ck_assert_mem_eq(g[t].rowptr, g[0].rowptr, sizeof(int64_t) * (size_t)(n + 1));
            ck_assert_mem_eq(g[t].col, g[0].col, sizeof(int32_t) * (size_t)g[0].nnz);
        }
        for (int t = 0; t < 3; t++) csr_free(&g[t]);
    }
    free(s), free(d), free(pairs);
}
END_TEST

START_TEST(test_spgemm) {
    /* against the dense product in double; pattern-only operands count as ones; 1 and 2 threads
     * give the same bits; a shape mismatch is refused */
    for (int trial = 0; trial < 3; trial++) {
        csr_t a = tu_csr_random(37, 23, 11 + trial, trial != 1), b = tu_csr_random(23, 41, 29 + trial, 1), c1, c2;
        inca_set_threads(1);
        ck_assert_int_eq(csr_spgemm(&a, &b, &c1), INCA_OK);
        inca_set_threads(2);
        ck_assert_int_eq(csr_spgemm(&a, &b, &c2), INCA_OK);
        inca_set_threads(0);
        ck_assert_int_eq(c1.nnz, c2.nnz);
        ck_assert(memcmp(c1.col, c2.col, sizeof(int32_t) * (size_t)c1.nnz) == 0);
        ck_assert(memcmp(c1.val, c2.val, sizeof(float) * (size_t)c1.nnz) == 0);
        static double want[37 * 41];
        memset(want, 0, sizeof want);
        for (int64_t i = 0; i < 37; i++)
            for (int64_t e = a.rowptr[i]; e < a.rowptr[i + 1]; e++)
                for (int64_t t = b.rowptr[a.col[e]]; t < b.rowptr[a.col[e] + 1]; t++)
                    want[i * 41 + b.col[t]] += (a.val ? a.val[e] : 1.0) * b.val[t];
        int64_t stored = 0;
        for (int64_t i = 0; i < 37; i++) {
            int32_t prev = -1;
            for (int64_t e = c1.rowptr[i]; e < c1.rowptr[i + 1]; e++, stored++) {
                ck_assert_int_gt(c1.col[e], prev);   /* ascending, no duplicates */
                prev = c1.col[e];
                ck_assert(fabs(c1.val[e] - want[i * 41 + c1.col[e]]) < 1e-5);
                want[i * 41 + c1.col[e]] = 0;
            }
        }
        for (int k = 0; k < 37 * 41; k++) ck_assert(fabs(want[k]) < 1e-12);   /* nothing left out */
        ck_assert_int_eq(stored, c1.nnz);
        ck_assert_int_gt(c1.nnz, 0);
        csr_free(&c1);
        csr_free(&c2);
        ck_assert_int_eq(csr_spgemm(&b, &b, &c1), INCA_EINVAL);
        csr_free(&a);
        csr_free(&b);
    }
}
END_TEST

START_TEST(test_take_rows) {
    /* rows {5, 0, 5, 36} of a random CSR, in that order, a repeat included: each output row holds
     * exactly the source row's columns and values; the count is their sum */
    csr_t a = tu_csr_random(37, 23, 5, 1), out;
    const int64_t ids[4] = {5, 0, 5, 36};
    int64_t want = 0;
    for (int i = 0; i < 4; i++) want += a.rowptr[ids[i] + 1] - a.rowptr[ids[i]];
    ck_assert_int_eq(csr_rows_nnz(&a, ids, 4), want);
    ck_assert_int_gt(want, 0);
    ck_assert_int_eq(csr_alloc(&out, 4, 23, want, 1), INCA_OK);
    csr_take_rows(&a, ids, 4, &out);
    ck_assert_int_eq(out.n_rows, 4);
    ck_assert_int_eq(out.nnz, want);
    for (int i = 0; i < 4; i++) {
        const int64_t lo = a.rowptr[ids[i]], cnt = a.rowptr[ids[i] + 1] - lo;
        ck_assert_int_eq(out.rowptr[i + 1] - out.rowptr[i], cnt);
        for (int64_t e = 0; e < cnt; e++) {
            ck_assert_int_eq(out.col[out.rowptr[i] + e], a.col[lo + e]);
            ck_assert(out.val[out.rowptr[i] + e] == a.val[lo + e]);
        }
    }
    csr_free(&out);
    csr_free(&a);
}
END_TEST

START_TEST(test_failure_injection) {
    /* every allocation failure is reported as ENOMEM and leaks nothing (ASan) */
    for (int k = 1; k < 6; k++) {
        csr_t g, a;
        inca_alloc_fail_after(k);
        int rc = csr_from_edges(&g, 3, S, D, 5, CSR_SYMMETRIZE);
        if (rc == INCA_OK) {
            int rc2 = csr_gcn_norm(&g, &a);
            if (rc2 == INCA_OK) csr_free(&a);
            else ck_assert_int_eq(rc2, INCA_ENOMEM);
            csr_free(&g);
        } else {
            ck_assert_int_eq(rc, INCA_ENOMEM);
        }
        inca_alloc_fail_after(0);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("graph");
    TCase *tc = tcase_create("csr");
    tcase_add_test(tc, test_from_edges_sym);
    tcase_add_test(tc, test_from_edges_directed_loops);
    tcase_add_test(tc, test_long_rows_sorted);
    tcase_add_test(tc, test_gcn_norm);
    tcase_add_test(tc, test_mean_norm_weighted);
    tcase_add_test(tc, test_transpose_permute);
    tcase_add_test(tc, test_from_edges_blocks);
    tcase_add_test(tc, test_failure_injection);
    tcase_add_test(tc, test_spgemm);
    tcase_add_test(tc, test_take_rows);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
