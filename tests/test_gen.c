/* Tests for graph/gen_*.c and `inca gen`: R-MAT structure (skewed degrees, symmetric, no
 * self-loops or duplicates, permuted ids), CSBM homophily / degree / class balance / feature
 * scale measured on the output, learnability (nearest class mean on one GCN propagation ÂX,
 * computed here with a naive loop, beats X alone), bit-identical output for 1 and 2 threads,
 * option errors, failure injection, and the CLI end to end (store reopened and compared). */
#include "testutil.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/gen.h"
#include "loaders/dataset.h"
#include "graph/gen_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Independent structural checks of a generated adjacency: ids in range, columns strictly
 * ascending (no duplicates), no self-loops, and every edge has its reverse. */
static void check_simple_symmetric(const csr_t *g, int64_t n) {
    ck_assert_int_eq(g->n_rows, n);
    ck_assert_int_eq(g->n_cols, n);
    ck_assert_int_eq(g->rowptr[0], 0);
    ck_assert_int_eq(g->rowptr[n], g->nnz);
    for (int64_t u = 0; u < n; u++) {
        ck_assert(g->rowptr[u] <= g->rowptr[u + 1]);
        for (int64_t e = g->rowptr[u]; e < g->rowptr[u + 1]; e++) {
            int32_t v = g->col[e];
            ck_assert_msg(v >= 0 && v < n, "column %d out of range", v);
            ck_assert_msg(v != u, "self-loop at %lld", (long long)u);
            if (e > g->rowptr[u]) ck_assert_msg(g->col[e - 1] < v, "row %lld not strictly ascending", (long long)u);
            /* binary search for u in row v */
            int64_t lo = g->rowptr[v], hi = g->rowptr[v + 1];
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (g->col[mid] < u) lo = mid + 1; else hi = mid;
            }
            ck_assert_msg(lo < g->rowptr[v + 1] && g->col[lo] == u, "edge %lld->%d has no reverse", (long long)u, v);
        }
    }
}

static void rmat_opts(gen_opts_t *o, int64_t n, double deg, uint64_t seed) {
    gen_opts_default(o);
    o->nodes = n;
    o->avg_degree = deg;
    o->seed = seed;
}

/* The table-free id permutation is a bijection of [0, n) for awkward n, differs by seed, and
 * actually moves ids (few fixed points). */
START_TEST(perm_bijection) {
    const int64_t ns[] = {1, 2, 3, 7, 64, 1000, 4097, 65535};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        int64_t n = ns[t], fixed = 0, same = 0;
        gen_perm_t p, q;
        gen_perm_init(&p, n, 17);
        gen_perm_init(&q, n, 18);
        unsigned char *seen = calloc((size_t)n, 1);
        ck_assert_ptr_nonnull(seen);
        for (int64_t x = 0; x < n; x++) {
            int64_t y = gen_perm_apply(&p, x);
            ck_assert_msg(y >= 0 && y < n, "n=%lld: %lld -> %lld out of range", (long long)n, (long long)x, (long long)y);
            ck_assert_msg(!seen[y], "n=%lld: %lld hit twice", (long long)n, (long long)y);
            seen[y] = 1;
            fixed += y == x;
            same += y == gen_perm_apply(&q, x);
        }
        if (n >= 1000) {
            ck_assert_msg(fixed < 10, "n=%lld: %lld fixed points", (long long)n, (long long)fixed);
            ck_assert_msg(same < 10, "n=%lld: seeds 17 and 18 agree on %lld ids", (long long)n, (long long)same);
        }
        free(seen);
    }
}
END_TEST

START_TEST(rmat_structure) {
    gen_opts_t o;
    rmat_opts(&o, 3000, 20, 7);   /* not a power of two: 2^12 ids, rejection above 3000 */
    dataset_t d;
    gen_stats_t st;
    ck_assert_int_eq(gen_rmat(&o, &d, &st), INCA_OK);
    ck_assert_int_eq(st.sampled_edges, 30000);
    check_simple_symmetric(&d.adj, 3000);
    ck_assert(d.adj.nnz <= 2 * st.sampled_edges);
    ck_assert_msg(d.adj.nnz >= st.sampled_edges, "dedupe removed more than half: %lld", (long long)d.adj.nnz);
    int64_t maxdeg = 0, low = 0, even = 0;
    for (int64_t u = 0; u < d.n; u++) {
        int64_t k = d.adj.rowptr[u + 1] - d.adj.rowptr[u];
        if (k > maxdeg) maxdeg = k;
        if (u < d.n / 8) low += k;
        if (u % 2 == 0) even += k;
    }
    double mean = (double)d.adj.nnz / (double)d.n;
    ck_assert_msg((double)maxdeg > 10.0 * mean, "max degree %lld vs mean %.2f: not skewed", (long long)maxdeg, mean);
    /* Without the permutation the first eighth of the ids (top three bits 0) would hold about
     * (a+b)^3 = 44% of the edge ends; permuted, about 12.5%. */
    double frac_low = (double)low / (double)d.adj.nnz;
    ck_assert_msg(frac_low < 0.25, "first eighth of ids holds %.3f of edge ends: ids not permuted", frac_low);
    /* unpermuted, a low bit of 0 has probability a+b = 0.76 per endpoint */
    double frac_even = (double)even / (double)d.adj.nnz;
    ck_assert_msg(frac_even > 0.35 && frac_even < 0.65, "even ids hold %.3f of edge ends", frac_even);
    /* no features or labels unless asked */
    ck_assert_ptr_null(d.x);
    ck_assert_ptr_null(d.y);
    ck_assert_int_eq(d.split_n[0] + d.split_n[1] + d.split_n[2], 0);
    ck_assert(strstr(d.source, "rmat") != NULL);
    dataset_free(&d);
}
END_TEST

/* An Erdos-Renyi-like graph of the same size would have max degree ~2x the mean; R-MAT's is
 * far larger, and grows with the scale. Also check a power of two and N = 1. */
START_TEST(rmat_sizes) {
    gen_opts_t o;
    dataset_t d;
    rmat_opts(&o, 4096, 8, 1);
    ck_assert_int_eq(gen_rmat(&o, &d, NULL), INCA_OK);
    check_simple_symmetric(&d.adj, 4096);
    dataset_free(&d);
    rmat_opts(&o, 1, 0, 1);   /* one node: no edge (--avg-degree above N-1 = 0 is refused) */
    ck_assert_int_eq(gen_rmat(&o, &d, NULL), INCA_OK);
    ck_assert_int_eq(d.n, 1);
    ck_assert_int_eq(d.adj.nnz, 0);
    dataset_free(&d);
    rmat_opts(&o, 2, 1, 1);   /* two nodes at the most a simple graph allows: half the samples are self-loops */
    ck_assert_int_eq(gen_rmat(&o, &d, NULL), INCA_OK);
    ck_assert_int_eq(d.n, 2);
    check_simple_symmetric(&d.adj, 2);
    dataset_free(&d);
    rmat_opts(&o, 50, 0, 1);  /* no edges at all */
    ck_assert_int_eq(gen_rmat(&o, &d, NULL), INCA_OK);
    ck_assert_int_eq(d.adj.nnz, 0);
    ck_assert_int_eq(d.adj.rowptr[50], 0);
    dataset_free(&d);
}
END_TEST

START_TEST(rmat_attributes) {
    gen_opts_t o;
    rmat_opts(&o, 20000, 4, 3);
    o.features = 5;
    o.classes = 5;
    o.noise = 2.0;
    dataset_t d;
    ck_assert_int_eq(gen_rmat(&o, &d, NULL), INCA_OK);
    ck_assert_int_eq(d.f, 5);
    ck_assert_int_eq(d.c, 5);
    double s = 0, s2 = 0;
    int64_t nx = d.n * d.f;
    for (int64_t k = 0; k < nx; k++) { s += d.x[k]; s2 += (double)d.x[k] * d.x[k]; }
    double mean = s / (double)nx, var = s2 / (double)nx - mean * mean;
    ck_assert_msg(fabs(mean) < 0.03, "feature mean %.4f, expected 0", mean);     /* sd 0.006 */
    ck_assert_msg(fabs(var - 4.0) < 0.15, "feature variance %.4f, expected 4", var);  /* sd 0.025 */
    int64_t cnt[5] = {0};
    for (int64_t v = 0; v < d.n; v++) {
        ck_assert(d.y[v] >= 0 && d.y[v] < 5);
        cnt[d.y[v]]++;
    }
    for (int c = 0; c < 5; c++) ck_assert_msg(labs((long)(cnt[c] - 4000)) < 300, "class %d has %lld", c, (long long)cnt[c]);
    ck_assert(labs((long)(d.split_n[0] - 12000)) <= 3);
    ck_assert(labs((long)(d.split_n[1] - 4000)) <= 3);
    ck_assert(labs((long)(d.split_n[2] - 4000)) <= 3);
    dataset_free(&d);
    /* one class is labelled (every node class 0); only 0 classes leaves y NULL (gen.h; a mutation
     * test: classes > 1 for > 0 passed) */
    rmat_opts(&o, 50, 2, 3);
    o.classes = 1;
    ck_assert_int_eq(gen_rmat(&o, &d, NULL), INCA_OK);
    ck_assert_ptr_nonnull(d.y);
    ck_assert_int_eq(d.c, 1);
    for (int64_t v = 0; v < d.n; v++) ck_assert_int_eq(d.y[v], 0);
    dataset_free(&d);
}
END_TEST

static void assert_same(const dataset_t *a, const dataset_t *b, const char *what) {
    ck_assert_int_eq(a->n, b->n);
    ck_assert_int_eq(a->f, b->f);
    ck_assert_int_eq(a->adj.nnz, b->adj.nnz);
    ck_assert_msg(memcmp(a->adj.rowptr, b->adj.rowptr, (size_t)(a->n + 1) * sizeof(int64_t)) == 0, "%s: rowptr differs", what);
    ck_assert_msg(memcmp(a->adj.col, b->adj.col, (size_t)a->adj.nnz * sizeof(int32_t)) == 0, "%s: col differs", what);
    ck_assert_int_eq(a->x != NULL, b->x != NULL);
    if (a->x) ck_assert_msg(memcmp(a->x, b->x, (size_t)(a->n * a->f) * sizeof(float)) == 0, "%s: x differs", what);
    ck_assert_int_eq(a->y != NULL, b->y != NULL);
    if (a->y) ck_assert_msg(memcmp(a->y, b->y, (size_t)a->n * sizeof(int32_t)) == 0, "%s: y differs", what);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(a->split_n[k], b->split_n[k]);
        if (a->split_n[k]) ck_assert(memcmp(a->split[k], b->split[k], (size_t)a->split_n[k] * sizeof(int64_t)) == 0);
    }
}

typedef int (*gen_fn)(const gen_opts_t *, dataset_t *, gen_stats_t *);

static void check_deterministic(gen_fn fn, gen_opts_t *o) {
    dataset_t a, b, c;
    inca_set_threads(1);
    ck_assert_int_eq(fn(o, &a, NULL), INCA_OK);
    inca_set_threads(2);
    ck_assert_int_eq(fn(o, &b, NULL), INCA_OK);
    assert_same(&a, &b, "1 vs 2 threads");
    o->seed++;
    ck_assert_int_eq(fn(o, &c, NULL), INCA_OK);
    ck_assert_msg(a.adj.nnz != c.adj.nnz ||
                  memcmp(a.adj.col, c.adj.col, (size_t)a.adj.nnz * sizeof(int32_t)) != 0,
                  "a different seed gave the same graph");
    if (a.x) ck_assert(memcmp(a.x, c.x, (size_t)(a.n * a.f) * sizeof(float)) != 0);
    if (a.y) ck_assert(memcmp(a.y, c.y, (size_t)a.n * sizeof(int32_t)) != 0);
    dataset_free(&a);
    dataset_free(&b);
    dataset_free(&c);
}

START_TEST(rmat_deterministic) {
    gen_opts_t o;
    rmat_opts(&o, 5000, 12, 11);
    o.features = 3;
    o.classes = 4;
    check_deterministic(gen_rmat, &o);
}
END_TEST

static void csbm_opts(gen_opts_t *o, int64_t n, double deg, int32_t c, double h, int64_t f, uint64_t seed) {
    gen_opts_default(o);
    o->nodes = n;
    o->avg_degree = deg;
    o->classes = c;
    o->homophily = h;
    o->features = f;
    o->seed = seed;
}

/* Edge homophily counted here with its own loop. */
static double homophily_of(const dataset_t *d) {
    int64_t same = 0;
    for (int64_t u = 0; u < d->n; u++)
        for (int64_t e = d->adj.rowptr[u]; e < d->adj.rowptr[u + 1]; e++) same += d->y[d->adj.col[e]] == d->y[u];
    return (double)same / (double)d->adj.nnz;
}

/* round(N*D/2) undirected edges are sampled (gen.h): a half rounds up, 5 x 1 / 2 = 2.5 -> 3 and
 * 7 x 3 / 2 = 10.5 -> 11, a whole number stays. */
START_TEST(edge_count_rounds_half_up) {
    static const struct { int64_t n; double deg; int64_t m; } cases[] = {{5, 1, 3}, {7, 3, 11}, {4, 1, 2}, {9, 0.5, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gen_opts_t o;
        rmat_opts(&o, cases[i].n, cases[i].deg, 1);
        dataset_t d;
        gen_stats_t st;
        ck_assert_int_eq(gen_rmat(&o, &d, &st), INCA_OK);
        ck_assert_msg(st.sampled_edges == cases[i].m, "N=%lld D=%g: %lld edges sampled, expected %lld",
                      (long long)cases[i].n, cases[i].deg, (long long)st.sampled_edges, (long long)cases[i].m);
        dataset_free(&d);
    }
}
END_TEST

/* Classes of two with homophily 1: every draw is u's partner, never u itself. 1000 draws over
 * 1000 pairs (each 1/1000 a draw) hit 1000 (1 - (1 - 1/1000)^1000) = 632 distinct pairs in
 * expectation (sd ~ 15); a sampler that let u draw itself would lose half of them (~393). */
START_TEST(csbm_classes_of_two) {
    gen_opts_t o;
    csbm_opts(&o, 2000, 1, 1000, 1.0, 0, 3);
    dataset_t d;
    ck_assert_int_eq(gen_csbm(&o, &d, NULL), INCA_OK);
    check_simple_symmetric(&d.adj, 2000);
    const double expect = 1000.0 * (1.0 - pow(1.0 - 1.0 / 1000.0, 1000.0));
    const double pairs = (double)d.adj.nnz / 2.0;
    ck_assert_msg(fabs(pairs - expect) < 70, "%.0f distinct pairs, expected %.1f +- 70", pairs, expect);
    for (int64_t u = 0; u < d.n; u++)
        for (int64_t e = d.adj.rowptr[u]; e < d.adj.rowptr[u + 1]; e++) ck_assert_int_eq(d.y[d.adj.col[e]], d.y[u]);
    dataset_free(&d);
}
END_TEST

/* gen_edge_homophily counts only edges with both ends labelled: edges 0-1 (same class), 0-3
 * (not) and 1-2 (2 unlabelled) give 2 of 4 stored entries, 0.5. */
START_TEST(edge_homophily_skips_unlabelled) {
    static const int64_t s[] = {0, 0, 1}, t[] = {1, 3, 2};
    static const int32_t y[] = {0, 0, -1, 1};
    csr_t g;
    ck_assert_int_eq(csr_from_edges(&g, 4, s, t, 3, CSR_SYMMETRIZE), INCA_OK);
    ck_assert_double_eq_tol(gen_edge_homophily(&g, y), 0.5, 1e-12);
    csr_free(&g);
}
END_TEST

START_TEST(csbm_homophily_degree_balance) {
    const double hs[] = {0.8, 0.3, 0.95};
    for (int t = 0; t < 3; t++) {
        gen_opts_t o;
        csbm_opts(&o, 20000, 10, 5, hs[t], 0, 5 + (uint64_t)t);
        dataset_t d;
        ck_assert_int_eq(gen_csbm(&o, &d, NULL), INCA_OK);
        check_simple_symmetric(&d.adj, 20000);
        double h = homophily_of(&d);
        ck_assert_msg(fabs(h - hs[t]) < 0.02, "homophily %.4f, expected %.2f", h, hs[t]);
        ck_assert(fabs(gen_edge_homophily(&d.adj, d.y) - h) < 1e-12);
        double deg = (double)d.adj.nnz / (double)d.n;
        ck_assert_msg(fabs(deg - 10.0) < 0.5, "average degree %.3f, expected 10 +- 5%%", deg);
        int64_t cnt[5] = {0};
        for (int64_t v = 0; v < d.n; v++) cnt[d.y[v]]++;
        for (int c = 0; c < 5; c++) ck_assert_int_eq(cnt[c], 4000);
        /* stored pair densities against the SBM probabilities (duplicates merge < 1%) */
        double p_in, p_out;
        gen_csbm_edge_probs(&o, &p_in, &p_out);
        ck_assert(fabs(p_in - hs[t] * 10.0 / 3999.0) < 1e-12);
        ck_assert(fabs(p_out - (1.0 - hs[t]) * 10.0 / 16000.0) < 1e-12);
        int64_t same = 0;
        for (int64_t u = 0; u < d.n; u++)
            for (int64_t e = d.adj.rowptr[u]; e < d.adj.rowptr[u + 1]; e++) same += d.y[d.adj.col[e]] == d.y[u];
        double dens_in = (double)same / (5.0 * 4000.0 * 3999.0);
        double dens_out = (double)(d.adj.nnz - same) / (20000.0 * 19999.0 - 5.0 * 4000.0 * 3999.0);
        ck_assert_msg(fabs(dens_in / p_in - 1.0) < 0.03, "intra density %.3g vs p_in %.3g", dens_in, p_in);
        ck_assert_msg(fabs(dens_out / p_out - 1.0) < 0.05, "inter density %.3g vs p_out %.3g", dens_out, p_out);
        ck_assert_int_eq(d.split_n[0], 12000);
        ck_assert_int_eq(d.split_n[1], 4000);
        ck_assert_int_eq(d.split_n[2], 4000);
        ck_assert_ptr_null(d.x);
        dataset_free(&d);
    }
    /* the extremes are exact: no sampled edge crosses (H=1) or stays inside (H=0) a class */
    const double ext[] = {1.0, 0.0};
    for (int t = 0; t < 2; t++) {
        gen_opts_t o;
        csbm_opts(&o, 3001, 6, 3, ext[t], 0, 1);
        dataset_t d;
        ck_assert_int_eq(gen_csbm(&o, &d, NULL), INCA_OK);
        ck_assert(d.adj.nnz > 0);
        ck_assert(homophily_of(&d) == ext[t]);
        int64_t cnt[3] = {0};
        for (int64_t v = 0; v < d.n; v++) cnt[d.y[v]]++;
        for (int c = 0; c < 3; c++) ck_assert(cnt[c] == 1000 || cnt[c] == 1001);
        dataset_free(&d);
    }
}
END_TEST

/* Class means are N(0,I) * mean_scale / sqrt(F): with no noise every row equals its class
 * mean, and two means lie about sqrt(2) * mean_scale apart (chi-square, F = 400: sd ~7%). */
START_TEST(csbm_feature_scale) {
    gen_opts_t o;
    csbm_opts(&o, 400, 4, 4, 0.8, 400, 2);
    o.noise = 0.0;
    o.mean_scale = 3.0;
    dataset_t d;
    ck_assert_int_eq(gen_csbm(&o, &d, NULL), INCA_OK);
    int64_t rep[4] = {-1, -1, -1, -1};
    for (int64_t v = 0; v < d.n; v++) {
        int32_t c = d.y[v];
        if (rep[c] < 0) rep[c] = v;
        else ck_assert(memcmp(d.x + v * 400, d.x + rep[c] * 400, 400 * sizeof(float)) == 0);
    }
    for (int a = 0; a < 4; a++)
        for (int b = a + 1; b < 4; b++) {
            double s = 0;
            for (int j = 0; j < 400; j++) {
                double z = (double)d.x[rep[a] * 400 + j] - d.x[rep[b] * 400 + j];
                s += z * z;
            }
            double dist = sqrt(s), want = sqrt(2.0) * 3.0;
            ck_assert_msg(fabs(dist - want) < 0.25 * want, "means %d,%d are %.3f apart, expected ~%.3f", a, b, dist, want);
        }
    dataset_free(&d);
}
END_TEST

/* Nearest class mean (means from the train split) accuracy on the test split of rows z. */
static double ncm_accuracy(const dataset_t *d, const double *z, int64_t f) {
    int32_t C = d->c;
    double *mu = calloc((size_t)(C * f), sizeof *mu);
    int64_t *cnt = calloc((size_t)C, sizeof *cnt);
    ck_assert(mu && cnt);
    for (int64_t j = 0; j < d->split_n[0]; j++) {
        int64_t v = d->split[0][j];
        cnt[d->y[v]]++;
        for (int64_t k = 0; k < f; k++) mu[d->y[v] * f + k] += z[v * f + k];
    }
    for (int32_t c = 0; c < C; c++)
        for (int64_t k = 0; k < f; k++) mu[c * f + k] /= (double)cnt[c];
    int64_t right = 0;
    for (int64_t j = 0; j < d->split_n[2]; j++) {
        int64_t v = d->split[2][j];
        int32_t best = -1;
        double bd = INFINITY;
        for (int32_t c = 0; c < C; c++) {
            double s = 0;
            for (int64_t k = 0; k < f; k++) { double t = z[v * f + k] - mu[c * f + k]; s += t * t; }
            if (s < bd) { bd = s; best = c; }
        }
        right += best == d->y[v];
    }
    free(mu);
    free(cnt);
    return (double)right / (double)d->split_n[2];
}

START_TEST(csbm_learnable) {
    gen_opts_t o;
    csbm_opts(&o, 20000, 10, 5, 0.9, 16, 21);
    dataset_t d;
    ck_assert_int_eq(gen_csbm(&o, &d, NULL), INCA_OK);
    const int64_t n = d.n, f = d.f;
    double *x = malloc((size_t)(n * f) * sizeof *x), *ax = calloc((size_t)(n * f), sizeof *ax);
    ck_assert(x && ax);
    for (int64_t k = 0; k < n * f; k++) x[k] = d.x[k];
    /* ÂX with Â = D̃^-½ (A + I) D̃^-½, naive loop */
    for (int64_t u = 0; u < n; u++) {
        double du = (double)(d.adj.rowptr[u + 1] - d.adj.rowptr[u] + 1);
        for (int64_t k = 0; k < f; k++) ax[u * f + k] += x[u * f + k] / du;
        for (int64_t e = d.adj.rowptr[u]; e < d.adj.rowptr[u + 1]; e++) {
            int64_t v = d.adj.col[e];
            double dv = (double)(d.adj.rowptr[v + 1] - d.adj.rowptr[v] + 1);
            double w = 1.0 / sqrt(du * dv);
            for (int64_t k = 0; k < f; k++) ax[u * f + k] += w * x[v * f + k];
        }
    }
    double acc_x = ncm_accuracy(&d, x, f), acc_ax = ncm_accuracy(&d, ax, f);
    fprintf(stderr, "csbm H=0.9: nearest-class-mean accuracy X %.4f, AX %.4f\n", acc_x, acc_ax);
    ck_assert_msg(acc_x > 1.0 / 5 + 0.1, "features alone carry no signal: %.3f", acc_x);
    ck_assert_msg(acc_x < 0.9, "features alone are trivially separable: %.3f", acc_x);
    ck_assert_msg(acc_ax > acc_x + 0.1, "AX %.3f does not beat X %.3f", acc_ax, acc_x);
    free(x);
    free(ax);
    dataset_free(&d);
}
END_TEST

START_TEST(csbm_deterministic) {
    gen_opts_t o;
    csbm_opts(&o, 6000, 8, 3, 0.7, 4, 13);
    check_deterministic(gen_csbm, &o);
}
END_TEST

START_TEST(opts_rejected) {
    gen_opts_t o;
    dataset_t d;
    struct { const char *kind; int field; double val; } bad[] = {
        {"rmat", 0, 0}, {"rmat", 0, -5}, {"rmat", 0, 3e9}, {"rmat", 1, -1}, {"rmat", 1, NAN},
        {"rmat", 2, -1}, {"rmat", 3, -1}, {"rmat", 4, -0.5}, {"csbm", 3, 1}, {"csbm", 0, 7},
        {"csbm", 5, 1.5}, {"csbm", 5, -0.1}, {"csbm", 6, -1}, {"rmat", 7, 0.9}, {"csbm", 1, 1e300}, {"rmat", 2, 1e16},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        csbm_opts(&o, 1000, 4, 4, 0.8, 2, 1);
        switch (bad[i].field) {
            case 0: o.nodes = (int64_t)bad[i].val; break;
            case 1: o.avg_degree = bad[i].val; break;
            case 2: o.features = (int64_t)bad[i].val; break;
            case 3: o.classes = (int32_t)bad[i].val; break;
            case 4: o.noise = bad[i].val; break;
            case 5: o.homophily = bad[i].val; break;
            case 6: o.mean_scale = bad[i].val; break;
            case 7: o.split[0] = bad[i].val; break;
        }
        int rc = strcmp(bad[i].kind, "rmat") == 0 ? gen_rmat(&o, &d, NULL) : gen_csbm(&o, &d, NULL);
        ck_assert_msg(rc == INCA_EINVAL, "case %zu (%s field %d = %g) gave %d", i, bad[i].kind, bad[i].field, bad[i].val, rc);
        /* the flag first: inca gen prefixes "inca gen: " itself (issue 31) */
        ck_assert_msg(strncmp(inca_errmsg(), "--", 2) == 0, "message '%s'", inca_errmsg());
        ck_assert_ptr_null(d.adj.rowptr);
    }
    csbm_opts(&o, 1000, 4, 4, 0.8, 2, 1);
    ck_assert_int_eq(gen_opts_check(&o, "er"), INCA_EINVAL);
}
END_TEST

/* Issue 31: an average degree no simple graph reaches is refused (not silently cut to what the
 * duplicates leave), naming the maximum; a CSBM too small for its degree, whose merged repeats
 * would move the edge homophily off --homophily, is refused with the degree that keeps it. */
START_TEST(degree_beyond_reach_refused) {
    gen_opts_t o;
    dataset_t d;
    csbm_opts(&o, 100, 500, 4, 0.8, 2, 1);
    ck_assert_int_eq(gen_csbm(&o, &d, NULL), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "--avg-degree 500: at most N-1 = 99 for 100 nodes"), "%s", inca_errmsg());
    ck_assert_ptr_null(d.adj.rowptr);
    rmat_opts(&o, 100, 99.5, 1);
    ck_assert_int_eq(gen_rmat(&o, &d, NULL), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "at most N-1 = 99"), "%s", inca_errmsg());
    rmat_opts(&o, 100, 99, 1);   /* the most, for R-MAT whose hubs always merge a share */
    ck_assert_int_eq(gen_rmat(&o, &d, NULL), INCA_OK);
    dataset_free(&d);
    /* 99 is a simple graph's most, but 4 classes of 25 cannot hold 0.8 x 99 same-class neighbours */
    csbm_opts(&o, 100, 99, 4, 0.8, 2, 1);
    ck_assert_int_eq(gen_opts_check(&o, "csbm"), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "--avg-degree 99 with --homophily 0.8") && strstr(inca_errmsg(), "at most 19.9"),
                  "%s", inca_errmsg());
    o.avg_degree = 20;
    ck_assert_int_eq(gen_csbm(&o, &d, NULL), INCA_EINVAL);
    /* accepted: the expected figures hold on the graph, and stay within the tolerance */
    const double degs[] = {10, 19.9};
    for (int t = 0; t < 2; t++) {
        double want_deg, want_h, got_deg = 0, got_h = 0;
        csbm_opts(&o, 100, degs[t], 4, 0.8, 0, 1);
        gen_csbm_expected(&o, &want_deg, &want_h);
        ck_assert(fabs(want_h - 0.8) <= 0.05);
        for (uint64_t seed = 1; seed <= 8; seed++) {   /* 8 graphs: the mean of a small graph's figures */
            o.seed = seed;
            ck_assert_int_eq(gen_csbm(&o, &d, NULL), INCA_OK);
            got_deg += (double)d.adj.nnz / (double)d.n / 8.0;
            got_h += homophily_of(&d) / 8.0;
            dataset_free(&d);
        }
        ck_assert_msg(fabs(got_deg / want_deg - 1.0) < 0.03, "D=%g: degree %.3f, expected %.3f", degs[t], got_deg, want_deg);
        ck_assert_msg(fabs(got_h - want_h) < 0.02, "D=%g: homophily %.3f, expected %.3f", degs[t], got_h, want_h);
    }
    /* a big graph: nothing to merge, the expected figures are the requested ones */
    csbm_opts(&o, 20000, 10, 5, 0.8, 0, 1);
    double e_deg, e_h;
    gen_csbm_expected(&o, &e_deg, &e_h);
    ck_assert(fabs(e_deg - 10.0) < 0.05 && fabs(e_h - 0.8) < 0.001);
}
END_TEST

/* The k-th allocation failing, for every k until generation succeeds: ENOMEM (or the code
 * csr_from_edges reports), nothing leaked (ASan), out left empty. */
static void check_alloc_failures(gen_fn fn, const gen_opts_t *o) {
    int ok = 0;
    for (long k = 1; k < 200 && !ok; k++) {
        dataset_t d;
        inca_alloc_fail_after(k);
        int rc = fn(o, &d, NULL);
        inca_alloc_fail_after(0);
        if (rc == INCA_OK) { ok = 1; dataset_free(&d); break; }
        ck_assert_msg(rc == INCA_ENOMEM, "allocation %ld failing gave %d (%s)", k, rc, inca_errmsg());
        ck_assert_ptr_null(d.adj.rowptr);
        ck_assert_ptr_null(d.x);
        ck_assert_ptr_null(d.y);
        ck_assert_ptr_null(d.split[0]);
    }
    ck_assert(ok);
}

START_TEST(alloc_failures) {
    gen_opts_t o;
    rmat_opts(&o, 300, 6, 1);
    o.features = 2;
    o.classes = 3;
    check_alloc_failures(gen_rmat, &o);
    csbm_opts(&o, 300, 6, 3, 0.8, 2, 1);
    check_alloc_failures(gen_csbm, &o);
}
END_TEST

/* ---- the CLI ---- */

START_TEST(cli_csbm_roundtrip) {
    char *dir = tu_mkdtemp(), cmd[1024], path[600], *out = NULL, *err = NULL;
    ck_assert_ptr_nonnull(dir);
    snprintf(path, sizeof path, "%s/csbm", dir);
    snprintf(cmd, sizeof cmd, "gen --kind csbm --nodes 3000 --avg-degree 7 --features 6 --classes 3 "
             "--homophily 0.75 --noise 0.5 --seed 99 --split random:0.5,0.25,0.25 --threads 2 --out %s --json", path);
    int st = tu_inca(cmd, &out, &err);
    ck_assert_msg(st == 0, "exit %d: %s", st, err ? err : "");
    const char *js = tu_last_line(out);
    ck_assert(tu_json_num(js, "nodes") == 3000);
    ck_assert(tu_json_num(js, "features") == 6);
    ck_assert(tu_json_num(js, "classes") == 3);
    ck_assert(tu_json_num(js, "labeled") == 3000);
    ck_assert(tu_json_num(js, "train") == 1500);
    ck_assert(fabs(tu_json_num(js, "homophily") - 0.75) < 0.04);
    double edges = tu_json_num(js, "edges");
    free(out); free(err);

    dataset_t disk, mem;
    ck_assert_int_eq(dataset_load(path, &disk), INCA_OK);
    gen_opts_t o;
    csbm_opts(&o, 3000, 7, 3, 0.75, 6, 99);
    o.noise = 0.5;
    o.split[0] = 0.5; o.split[1] = 0.25; o.split[2] = 0.25;
    ck_assert_int_eq(gen_csbm(&o, &mem, NULL), INCA_OK);
    ck_assert(edges == (double)mem.adj.nnz);
    assert_same(&disk, &mem, "store vs in-memory");
    dataset_free(&disk);
    dataset_free(&mem);

    /* existing store: refused without --force (exit 2, names the flag), replaced with it */
    snprintf(cmd, sizeof cmd, "gen --kind csbm --nodes 300 --avg-degree 3 --out %s", path);
    st = tu_inca(cmd, &out, &err);
    ck_assert_int_eq(st, 2);
    ck_assert_msg(err && strstr(err, "--force"), "stderr: %s", err ? err : "");
    free(out); free(err);
    snprintf(cmd, sizeof cmd, "gen --kind rmat --nodes 300 --avg-degree 3 --features 2 --classes 2 --out %s --force --json", path);
    st = tu_inca(cmd, &out, &err);
    ck_assert_msg(st == 0, "exit %d: %s", st, err ? err : "");
    ck_assert(tu_json_num(tu_last_line(out), "nodes") == 300);
    free(out); free(err);
    ck_assert_int_eq(dataset_load(path, &disk), INCA_OK);
    ck_assert_int_eq(disk.n, 300);
    ck_assert_int_eq(disk.f, 2);
    check_simple_symmetric(&disk.adj, 300);
    dataset_free(&disk);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(cli_rmat_threads_identical) {
    char *dir = tu_mkdtemp(), cmd[1024], p1[600], p2[600];
    ck_assert_ptr_nonnull(dir);
    snprintf(p1, sizeof p1, "%s/t1", dir);
    snprintf(p2, sizeof p2, "%s/t2", dir);
    snprintf(cmd, sizeof cmd, "gen --kind rmat --nodes 5000 --avg-degree 10 --features 3 --classes 4 --seed 5 --threads 1 --out %s", p1);
    ck_assert_int_eq(tu_inca(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "gen --kind rmat --nodes 5000 --avg-degree 10 --features 3 --classes 4 --seed 5 --threads 2 --out %s", p2);
    ck_assert_int_eq(tu_inca(cmd, NULL, NULL), 0);
    dataset_t a, b;
    ck_assert_int_eq(dataset_load(p1, &a), INCA_OK);
    ck_assert_int_eq(dataset_load(p2, &b), INCA_OK);
    assert_same(&a, &b, "--threads 1 vs 2");
    dataset_free(&a);
    dataset_free(&b);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(cli_usage_errors) {
    char *dir = tu_mkdtemp(), cmd[1024];
    ck_assert_ptr_nonnull(dir);
    static const struct { const char *args; const char *msg; } bad[] = {
        {"--kind er --nodes 10 --avg-degree 2", "--kind"},
        {"--nodes 10 --avg-degree 2", "--kind"},
        {"--kind rmat --avg-degree 2", "--nodes"},
        {"--kind rmat --nodes 10", "--avg-degree"},
        {"--kind rmat --nodes abc --avg-degree 2", "--nodes"},
        {"--kind rmat --nodes 0 --avg-degree 2", "--nodes"},
        {"--kind csbm --nodes 100 --avg-degree 2 --homophily 2", "--homophily"},
        {"--kind csbm --nodes 100 --avg-degree 2 --classes 1", "--classes"},
        {"--kind rmat --nodes 100 --avg-degree 2 --homophily 0.5", "--homophily"},
        {"--kind csbm --nodes 100 --avg-degree 2 --split random:0.9,0.9,0", "split"},
        {"--kind csbm --nodes 100 --avg-degree 2 --split public", "random:"},
        {"--kind csbm --nodes 100 --avg-degree 2 --colour red", "--colour"},
        {"--kind csbm --nodes 100 --avg-degree -3", "--avg-degree"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out = NULL, *err = NULL;
        snprintf(cmd, sizeof cmd, "gen %s --out %s/s%zu", bad[i].args, dir, i);
        int st = tu_inca(cmd, &out, &err);
        ck_assert_msg(st == 2, "'%s' exited %d", bad[i].args, st);
        ck_assert_msg(err && strstr(err, bad[i].msg), "'%s': stderr '%s' lacks '%s'", bad[i].args, err ? err : "", bad[i].msg);
        char p[700];
        snprintf(p, sizeof p, "%s/s%zu", dir, i);
        ck_assert_msg(!tu_exists(p), "'%s' left a store behind", bad[i].args);
        free(out);
        free(err);
    }
    char *out = NULL, *err = NULL;
    /* issue 31: one line, one prefix, the maximum named, nothing written */
    static const struct { const char *args; const char *msg; } reach[] = {
        {"--kind csbm --nodes 100 --avg-degree 500", "inca gen: --avg-degree 500: at most N-1 = 99 for 100 nodes"},
        {"--kind rmat --nodes 100 --avg-degree 500", "inca gen: --avg-degree 500: at most N-1 = 99 for 100 nodes"},
        {"--kind csbm --nodes 100 --avg-degree 99", "inca gen: --avg-degree 99 with --homophily 0.8 is more than 100 nodes"},
    };
    for (size_t i = 0; i < sizeof reach / sizeof reach[0]; i++) {
        snprintf(cmd, sizeof cmd, "gen %s --out %s/r%zu --json", reach[i].args, dir, i);
        ck_assert_int_eq(tu_inca(cmd, &out, &err), 2);
        ck_assert_msg(strncmp(err, reach[i].msg, strlen(reach[i].msg)) == 0 && strchr(err, '\n') == err + strlen(err) - 1,
                      "'%s': stderr '%s'", reach[i].args, err);
        ck_assert_msg(!out || !*out, "'%s' printed '%s'", reach[i].args, out);
        char p[700];
        snprintf(p, sizeof p, "%s/r%zu", dir, i);
        ck_assert(!tu_exists(p));
        free(out);
        free(err);
    }
    /* reachable, but small: both figures in the JSON, and a warning naming the shortfall */
    snprintf(cmd, sizeof cmd, "gen --kind csbm --nodes 100 --avg-degree 10 --out %s/small --json", dir);
    ck_assert_int_eq(tu_inca(cmd, &out, &err), 0);
    ck_assert(tu_json_num(tu_last_line(out), "avg_degree_requested") == 10);
    ck_assert(tu_json_num(tu_last_line(out), "avg_degree") < 9.5);
    ck_assert(tu_json_num(tu_last_line(out), "homophily_requested") == 0.8);
    ck_assert_msg(strstr(err, "inca gen: warning: --avg-degree 10 gave "), "stderr '%s'", err);
    free(out);
    free(err);
    snprintf(cmd, sizeof cmd, "gen --kind rmat --nodes 10 --avg-degree 2");
    ck_assert_int_eq(tu_inca(cmd, &out, &err), 2);
    ck_assert(err && strstr(err, "--out"));
    free(out);
    free(err);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

static int cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* gen_rmat's id relabelling undone: inv[perm(x)] = x for the permutation of (n, seed), as
 * gen_rmat applies it (owned, free). */
static int64_t *rmat_unpermute(int64_t n, uint64_t seed) {
    gen_perm_t p;
    gen_perm_init(&p, n, seed);
    int64_t *inv = malloc((size_t)n * sizeof *inv);
    ck_assert_ptr_nonnull(inv);
    for (int64_t x = 0; x < n; x++) inv[gen_perm_apply(&p, x)] = x;
    return inv;
}

/* R-MAT's quadrant probabilities (mutation test): undo the id permutation (gen_perm with the
 * generator's seed, as gen_rmat applies it) and, at every level (bit) of the ids, count the
 * kept edges whose two endpoints have that bit (0, 0): quadrant a = 0.57, (1, 1): d = 0.05,
 * and one each: b + c = 0.38 (the graph is symmetric, so each edge is counted once, u < v).
 * A power of two, so no draw is rejected; a sparse graph, so few duplicates are merged.
 * A d folded into c (no edge between two high halves) passed every other test. */
START_TEST(rmat_quadrant_probabilities) {
    gen_opts_t o;
    const int scale = 14;
    const int64_t n = (int64_t)1 << scale;
    rmat_opts(&o, n, 4, 11);
    dataset_t d;
    ck_assert_int_eq(gen_rmat(&o, &d, NULL), INCA_OK);
    int64_t *inv = rmat_unpermute(n, o.seed);
    int64_t both0[14] = {0}, both1[14] = {0}, edges = 0;
    for (int64_t u = 0; u < n; u++)
        for (int64_t e = d.adj.rowptr[u]; e < d.adj.rowptr[u + 1]; e++) {
            const int64_t v = d.adj.col[e];
            if (v <= u) continue;
            edges++;
            for (int l = 0; l < scale; l++) {
                const int bu = (int)(inv[u] >> l) & 1, bv = (int)(inv[v] >> l) & 1;
                both0[l] += !bu && !bv;
                both1[l] += bu && bv;
            }
        }
    ck_assert_int_gt(edges, 25000);   /* of 32768 drawn (sd of a fraction below ~0.003) */
    for (int l = 0; l < scale; l++) {
        const double fa = (double)both0[l] / (double)edges, fd = (double)both1[l] / (double)edges;
        ck_assert_msg(fa > 0.53 && fa < 0.61, "bit %d: quadrant a holds %.4f of the edges, expected 0.57", l, fa);
        ck_assert_msg(fd > 0.04 && fd < 0.065, "bit %d: quadrant d holds %.4f of the edges, expected 0.05", l, fd);
        ck_assert_msg(1 - fa - fd > 0.34 && 1 - fa - fd < 0.42, "bit %d: quadrants b + c hold %.4f, expected 0.38", l,
                      1 - fa - fd);
    }
    free(inv);
    dataset_free(&d);
}
END_TEST

/* R-MAT conditioned on both endpoints < N (gen.h; mutation test: keeping the id N itself, u <= N,
 * passed every test). N = 2^10 + 1 draws 11-bit ids; unpermuted, id x is an endpoint of a draw
 * with probability P(x) = prod over its bits of 0.76 (a bit 0: quadrants a, b) or 0.24 (a bit 1),
 * and a draw is kept with probability at least 0.57 (quadrant a at the top level puts both ends
 * below 2^10), so x's kept edge ends number at most E = 2m P(x) / 0.57 in expectation, and its
 * degree (duplicates merged, self-loops dropped) stays below E + 6 sqrt(E) + 10 (a Poisson tail
 * under 1e-9 per node). Id N kept (binary 10000000001, P = 0.24^2 0.76^9 = 0.0049: ~80 of the
 * 16400 ends) lands, through the permutation's cycle-walk, on one node expected to hold a few.
 * Three seeds. */
START_TEST(rmat_rejects_ids_beyond_n) {
    const int scale = 11;
    const int64_t n = ((int64_t)1 << (scale - 1)) + 1;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        gen_opts_t o;
        rmat_opts(&o, n, 16, seed);
        dataset_t d;
        ck_assert_int_eq(gen_rmat(&o, &d, NULL), INCA_OK);
        int64_t *inv = rmat_unpermute(n, seed);
        const double m = 16.0 * (double)n / 2.0;
        for (int64_t u = 0; u < n; u++) {
            double px = 1.0;
            for (int l = 0; l < scale; l++) px *= (inv[u] >> l) & 1 ? 0.24 : 0.76;
            const double e = 2.0 * m * px / 0.57;
            const int64_t deg = d.adj.rowptr[u + 1] - d.adj.rowptr[u];
            ck_assert_msg((double)deg <= e + 6.0 * sqrt(e) + 10.0, "seed %llu: id %lld (unpermuted) has degree %lld, "
                          "expected at most %.1f", (unsigned long long)seed, (long long)inv[u], (long long)deg, e);
        }
        free(inv);
        dataset_free(&d);
    }
}
END_TEST

/* The seed chooses the edges, not only the ids (mutation test: every seed drawing the same edges,
 * relabelled by its own permutation, passed every test). Unpermuted, two independent R-MAT
 * graphs of 2^12 nodes and 8192 draws share about 10% of their edges (the sum over pairs of
 * q^2 / q, q = 1 - (1 - 2p)^m, p the pair's product of quadrant probabilities: the hub pairs
 * are the shared ones); the same draws would share all of them. */
START_TEST(rmat_seed_draws_other_edges) {
    const int64_t n = 4096;
    uint64_t *keys[2];
    int64_t nk[2];
    for (int t = 0; t < 2; t++) {
        gen_opts_t o;
        rmat_opts(&o, n, 4, 5 + (uint64_t)t);
        dataset_t d;
        ck_assert_int_eq(gen_rmat(&o, &d, NULL), INCA_OK);
        int64_t *inv = rmat_unpermute(n, o.seed);
        keys[t] = malloc((size_t)d.adj.nnz * sizeof *keys[t]);
        ck_assert_ptr_nonnull(keys[t]);
        nk[t] = 0;
        for (int64_t u = 0; u < n; u++)
            for (int64_t e = d.adj.rowptr[u]; e < d.adj.rowptr[u + 1]; e++)
                if (inv[u] < inv[d.adj.col[e]]) keys[t][nk[t]++] = (uint64_t)inv[u] * (uint64_t)n + (uint64_t)inv[d.adj.col[e]];
        qsort(keys[t], (size_t)nk[t], sizeof *keys[t], cmp_u64);
        free(inv);
        dataset_free(&d);
    }
    int64_t shared = 0;
    for (int64_t i = 0, j = 0; i < nk[0] && j < nk[1];) {
        if (keys[0][i] == keys[1][j]) shared++, i++, j++;
        else if (keys[0][i] < keys[1][j]) i++;
        else j++;
    }
    const double frac = (double)shared / (double)nk[0];
    ck_assert_msg(frac > 0.05 && frac < 0.2, "seeds 5 and 6 share %.3f of their unpermuted edges, expected ~0.10", frac);
    free(keys[0]);
    free(keys[1]);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gen");
    TCase *tc = tcase_create("gen");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, perm_bijection);
    tcase_add_test(tc, rmat_structure);
    tcase_add_test(tc, rmat_sizes);
    tcase_add_test(tc, rmat_attributes);
    tcase_add_test(tc, rmat_quadrant_probabilities);
    tcase_add_test(tc, rmat_rejects_ids_beyond_n);
    tcase_add_test(tc, rmat_seed_draws_other_edges);
    tcase_add_test(tc, rmat_deterministic);
    tcase_add_test(tc, csbm_homophily_degree_balance);
    tcase_add_test(tc, edge_count_rounds_half_up);
    tcase_add_test(tc, csbm_classes_of_two);
    tcase_add_test(tc, edge_homophily_skips_unlabelled);
    tcase_add_test(tc, csbm_feature_scale);
    tcase_add_test(tc, csbm_learnable);
    tcase_add_test(tc, csbm_deterministic);
    tcase_add_test(tc, opts_rejected);
    tcase_add_test(tc, degree_beyond_reach_refused);
    tcase_add_test(tc, alloc_failures);
    suite_add_tcase(s, tc);
    TCase *cli = tcase_create("cli");
    tcase_set_timeout(cli, 600);
    tcase_add_test(cli, cli_csbm_roundtrip);
    tcase_add_test(cli, cli_rmat_threads_identical);
    tcase_add_test(cli, cli_usage_errors);
    suite_add_tcase(s, cli);
    return tu_run_suite(s);
}
