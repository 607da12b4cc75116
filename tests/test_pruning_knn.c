/* Tests of the pseudo-labelling graph stage: exact kNN (euclidean and cosine) against a
 * brute-force double-precision search, across row and column block boundaries; tie order on
 * hand-built points; the symmetric kNN graph; label spreading against the closed form
 * (1−α)(I−αS)^{-1}Y solved by Gaussian elimination on a tiny weighted graph; Correct and Smooth
 * against the same closed form for both propagations; SGC's smoothing by hand on a path, its
 * regression's gradient by finite differences, several models in one sweep. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "graph/csr.h"
#include "pruning/cs.h"
#include "pruning/knn.h"
#include "pruning/labelprop.h"
#include "pruning/pca.h"
#include "pruning/sgc.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int dcmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double ref_dist(const float *x, int64_t f, int64_t i, int64_t j, knn_metric_t m) {
    double s = 0, na = 0, nb = 0, dot = 0;
    for (int64_t t = 0; t < f; t++) {
        double a = x[i * f + t], b = x[j * f + t];
        s += (a - b) * (a - b);
        na += a * a;
        nb += b * b;
        dot += a * b;
    }
    if (m == KNN_EUCLIDEAN) return s;
    return (na > 0 && nb > 0) ? 1.0 - dot / sqrt(na * nb) : 1.0;
}

static void check_against_brute(int64_t n, int64_t f, int k, knn_metric_t metric) {
    float *x = malloc((size_t)(n * f) * sizeof *x);
    rng_t g;
    rng_seed(&g, 11 + (uint64_t)n);
    for (int64_t i = 0; i < n * f; i++) x[i] = (float)rng_normal(&g);
    int32_t *nbr = malloc((size_t)n * k * sizeof *nbr);
    float *dist = malloc((size_t)n * k * sizeof *dist);
    ck_assert_int_eq(knn_exact(x, n, f, k, metric, nbr, dist), 0);
    double *all = malloc((size_t)n * sizeof *all);
    double scale = metric == KNN_EUCLIDEAN ? 2.0 * f : 1.0;
    for (int64_t i = 0; i < n; i++) {
        int64_t m = 0;
        for (int64_t j = 0; j < n; j++)
            if (j != i) all[m++] = ref_dist(x, f, i, j, metric);
        qsort(all, (size_t)m, sizeof *all, dcmp);
        for (int j = 0; j < k; j++) {
            int32_t v = nbr[i * k + j];
            ck_assert(v >= 0 && v < n && v != i);
            double dv = ref_dist(x, f, i, v, metric);
            /* the reported distance is the true one (float rounding of ‖a‖²+‖b‖²−2ab) ... */
            ck_assert_msg(fabs(dist[i * k + j] - dv) <= 1e-4 * scale, "row %lld nbr %d: %g vs %g", (long long)i, j, dist[i * k + j], dv);
            /* ... and the j-th nearest by brute force, up to float ties */
            ck_assert_msg(fabs(dv - all[j]) <= 1e-4 * scale, "row %lld rank %d: %g vs brute %g", (long long)i, j, dv, all[j]);
            if (j > 0) ck_assert(dist[i * k + j - 1] <= dist[i * k + j]);
            for (int q = 0; q < j; q++) ck_assert(nbr[i * k + q] != v);
        }
    }
    free(all);
    free(x);
    free(nbr);
    free(dist);
}

START_TEST(knn_brute_small) {
    check_against_brute(300, 20, 7, KNN_EUCLIDEAN);
    check_against_brute(300, 20, 7, KNN_COSINE);
}
END_TEST

/* n above two block sizes (2048): diagonal, upper and ragged blocks. */
START_TEST(knn_brute_blocks) {
    check_against_brute(4300, 5, 4, KNN_EUCLIDEAN);
    check_against_brute(2100, 3, 9, KNN_COSINE);
}
END_TEST

/* FAISS's IVF search against the exact one on clustered points (40 Gaussian clusters in 16
 * dimensions, 6000 rows): recall@10 >= 0.95 with 16 of the default 153 lists (4 sqrt n, capped at n / 39) probed and 1.0 with every list
 * probed (then IVF is exact: same neighbour sets); the reported distances are the true ones; the
 * same seed and threads give the same bits; a bad factory string is refused naming it. Without
 * FAISS in the build: the refusal. */
static double recall(const int32_t *a, const int32_t *b, int64_t n, int k) {
    int64_t hit = 0;
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < k; j++)
            for (int q = 0; q < k; q++) hit += b[i * k + j] == a[i * k + q];
    return (double)hit / (double)(n * k);
}

START_TEST(knn_faiss_recall) {
    const int64_t n = 6000, f = 16;
    const int k = 10;
    float *x = malloc((size_t)(n * f) * sizeof *x), *c = malloc(40 * (size_t)f * sizeof *c);
    rng_t g;
    rng_seed(&g, 5);
    for (int64_t i = 0; i < 40 * f; i++) c[i] = (float)(4 * rng_normal(&g));
    for (int64_t i = 0; i < n; i++)
        for (int64_t t = 0; t < f; t++) x[i * f + t] = c[(i % 40) * f + t] + (float)rng_normal(&g);
    int32_t *ex = malloc((size_t)n * k * sizeof *ex), *ap = malloc((size_t)n * k * sizeof *ap), *ap2 = malloc((size_t)n * k * sizeof *ap2);
    float *dist = malloc((size_t)n * k * sizeof *dist);
    knn_faiss_opts_t o = {NULL, 16, 3};
    if (!knn_faiss_available()) {
        ck_assert_int_eq(knn_faiss(x, n, f, k, KNN_EUCLIDEAN, &o, ap, dist), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), "this build has no FAISS"), "%s", inca_errmsg());
    } else {
        for (int m = 0; m < 2; m++) {
            const knn_metric_t metric = m ? KNN_COSINE : KNN_EUCLIDEAN;
            ck_assert_int_eq(knn_exact(x, n, f, k, metric, ex, NULL), INCA_OK);
            o.nprobe = 16;
            ck_assert_int_eq(knn_faiss(x, n, f, k, metric, &o, ap, dist), INCA_OK);
            const double r16 = recall(ex, ap, n, k);
            ck_assert_msg(r16 >= 0.95, "metric %d: recall@10 %.4f with 16 lists", m, r16);
            for (int64_t i = 0; i < n; i += 97)
                for (int j = 0; j < k; j++) {
                    const int32_t v = ap[i * k + j];
                    ck_assert(v >= 0 && v < n && v != i);
                    const double dv = ref_dist(x, f, i, v, metric);
                    ck_assert_msg(fabs(dist[i * k + j] - dv) <= 1e-3 * (m ? 1.0 : dv + 1.0), "row %lld: %g vs %g",
                                  (long long)i, dist[i * k + j], dv);
                    if (j > 0) ck_assert(dist[i * k + j - 1] <= dist[i * k + j]);
                }
            ck_assert_int_eq(knn_faiss(x, n, f, k, metric, &o, ap2, NULL), INCA_OK);
            ck_assert_mem_eq(ap, ap2, (size_t)n * k * sizeof *ap);
            o.nprobe = 1000;   /* every list: exact up to ties */
            ck_assert_int_eq(knn_faiss(x, n, f, k, metric, &o, ap, NULL), INCA_OK);
            ck_assert_msg(recall(ex, ap, n, k) >= 0.999, "metric %d: recall %.4f probing every list", m, recall(ex, ap, n, k));
        }
        o.factory = "NoSuchIndex";
        ck_assert_int_eq(knn_faiss(x, n, f, k, KNN_EUCLIDEAN, &o, ap, NULL), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), "--knn-search faiss (NoSuchIndex)"), "%s", inca_errmsg());
    }
    free(x);
    free(c);
    free(ex);
    free(ap);
    free(ap2);
    free(dist);
}
END_TEST

START_TEST(knn_hand_points) {
    float x[5] = {0, 1, 3, 7, -1};
    int32_t nbr[10];
    float d[10];
    ck_assert_int_eq(knn_exact(x, 5, 1, 1, KNN_EUCLIDEAN, nbr, d), 0);
    ck_assert_int_eq(nbr[0], 1);    /* 0: 1 and -1 tie at distance 1 -> lower id */
    ck_assert_int_eq(nbr[1], 0);
    ck_assert_int_eq(nbr[2], 1);
    ck_assert_float_eq(d[2], 4.0f);
    ck_assert_int_eq(nbr[3], 2);
    ck_assert_float_eq(d[3], 16.0f);
    ck_assert_int_eq(nbr[4], 0);
    ck_assert_int_eq(knn_exact(x, 5, 1, 2, KNN_EUCLIDEAN, nbr, d), 0);
    ck_assert_int_eq(nbr[0], 1);
    ck_assert_int_eq(nbr[1], 4);
    /* cosine on 2-D directions: (1,0) (0,1) (1,1) (-1,0) (0,0) */
    float y[10] = {1, 0, 0, 1, 1, 1, -1, 0, 0, 0};
    ck_assert_int_eq(knn_exact(y, 5, 2, 1, KNN_COSINE, nbr, d), 0);
    ck_assert_int_eq(nbr[0], 2);
    ck_assert_float_eq_tol(d[0], 1.0 - sqrt(0.5), 1e-6);
    ck_assert_int_eq(nbr[3], 1);    /* (-1,0): (0,1) and the zero row both at 1; (0,1) has lower id */
    ck_assert_float_eq_tol(d[3], 1.0, 1e-6);
    ck_assert_int_eq(knn_exact(x, 5, 1, 5, KNN_EUCLIDEAN, nbr, d), INCA_EINVAL);
    knn_metric_t m;
    ck_assert_int_eq(knn_metric_parse("manhattan", &m), INCA_EINVAL);

    csr_t w;
    ck_assert_int_eq(knn_exact(x, 5, 1, 1, KNN_EUCLIDEAN, nbr, d), 0);
    ck_assert_int_eq(knn_graph(nbr, 5, 1, &w), 0);
    /* edges 0-1, 1-0, 2-1, 3-2, 4-0 -> undirected {0-1, 1-2, 2-3, 0-4}: 8 directed */
    ck_assert_int_eq(w.nnz, 8);
    ck_assert(csr_is_symmetric(&w));
    ck_assert_int_eq(w.rowptr[1] - w.rowptr[0], 2);
    ck_assert_int_eq(w.col[w.rowptr[0]], 1);
    ck_assert_int_eq(w.col[w.rowptr[0] + 1], 4);
    csr_free(&w);
}
END_TEST

/* Solve A z = b (n x n, dense, partial pivoting) in place; z in b. */
static void solve(double *a, double *b, int n) {
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++) if (fabs(a[r * n + c]) > fabs(a[p * n + c])) p = r;
        for (int t = 0; t < n; t++) { double s = a[c * n + t]; a[c * n + t] = a[p * n + t]; a[p * n + t] = s; }
        double s = b[c]; b[c] = b[p]; b[p] = s;
        for (int r = c + 1; r < n; r++) {
            double f = a[r * n + c] / a[c * n + c];
            for (int t = c; t < n; t++) a[r * n + t] -= f * a[c * n + t];
            b[r] -= f * b[c];
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        for (int t = r + 1; t < n; t++) b[r] -= a[r * n + t] * b[t];
        b[r] /= a[r * n + r];
    }
}

/* PCA whitening against a construction whose answer is known: latent coordinates u with standard
 * deviations 3, 2, 1, 0.5 (independent draws), rotated into 6 features by a fixed orthonormal
 * matrix (Gram-Schmidt of a seeded random one) plus an offset. Whitened to d = 4, the sample
 * covariance of z (computed here in double) is the identity; z's axis a equals ±(u_a − mean)/sd
 * up to sampling error (|correlation| > 0.99); d = 2 keeps (9 + 4) / 14.25 of the variance;
 * a zero-variance feature direction is never amplified; bad d is refused. */
START_TEST(pca_whiten_known_axes) {
    enum { N = 4000, FF = 6, L = 4 };
    const double sd[L] = {3, 2, 1, 0.5};
    double q[FF][FF];
    rng_t g;
    rng_seed(&g, 17);
    for (int i = 0; i < FF; i++)
        for (int j = 0; j < FF; j++) q[i][j] = rng_normal(&g);
    for (int i = 0; i < FF; i++) {   /* rows of q orthonormal */
        for (int k = 0; k < i; k++) {
            double dp = 0;
            for (int j = 0; j < FF; j++) dp += q[i][j] * q[k][j];
            for (int j = 0; j < FF; j++) q[i][j] -= dp * q[k][j];
        }
        double nr = 0;
        for (int j = 0; j < FF; j++) nr += q[i][j] * q[i][j];
        for (int j = 0; j < FF; j++) q[i][j] /= sqrt(nr);
    }
    float *x = inca_malloc((size_t)N * FF * sizeof *x);
    double *u = inca_malloc((size_t)N * L * sizeof *u);
    ck_assert(x && u);
    for (int64_t i = 0; i < N; i++) {
        for (int a = 0; a < L; a++) u[i * L + a] = rng_normal(&g) * sd[a];
        for (int j = 0; j < FF; j++) {
            double v = 5.0 + j;   /* the offset */
            for (int a = 0; a < L; a++) v += u[i * L + a] * q[a][j];
            x[i * FF + j] = (float)v;
        }
    }
    float *z = NULL;
    double kept = 0;
    ck_assert_int_eq(pca_whiten(x, N, FF, L, &z, &kept), 0);
    ck_assert_msg(fabs(kept - 1.0) < 1e-4, "kept %g", kept);
    for (int a = 0; a < L; a++)
        for (int b = 0; b < L; b++) {
            double ma = 0, mb = 0, c = 0;
            for (int64_t i = 0; i < N; i++) { ma += z[i * L + a]; mb += z[i * L + b]; }
            ma /= N; mb /= N;
            for (int64_t i = 0; i < N; i++) c += (z[i * L + a] - ma) * (z[i * L + b] - mb);
            c /= N;
            ck_assert_msg(fabs(c - (a == b)) < 1e-3, "cov(z)[%d][%d] = %g", a, b, c);
        }
    for (int a = 0; a < L; a++) {   /* axis a is latent a (variances ordered 9 > 4 > 1 > 0.25) */
        double mu = 0, mz = 0, suz = 0, suu = 0, szz = 0;
        for (int64_t i = 0; i < N; i++) { mu += u[i * L + a]; mz += z[i * L + a]; }
        mu /= N; mz /= N;
        for (int64_t i = 0; i < N; i++) {
            double du = u[i * L + a] - mu, dz = z[i * L + a] - mz;
            suz += du * dz; suu += du * du; szz += dz * dz;
        }
        ck_assert_msg(fabs(suz / sqrt(suu * szz)) > 0.99, "axis %d: correlation %g", a, suz / sqrt(suu * szz));
    }
    inca_free(z);
    ck_assert_int_eq(pca_whiten(x, N, FF, 2, &z, &kept), 0);
    ck_assert_msg(fabs(kept - 13.0 / 14.25) < 0.02, "kept %g", kept);
    inca_free(z);
    /* 6 features in a 4-dimensional subspace: d = 6 leaves the two empty directions at zero */
    ck_assert_int_eq(pca_whiten(x, N, FF, FF, &z, NULL), 0);
    for (int64_t i = 0; i < N; i++)
        for (int a = L; a < FF; a++) ck_assert_msg(fabs(z[i * FF + a]) < 1e-6, "z[%lld][%d] = %g", (long long)i, a, z[i * FF + a]);
    inca_free(z);
    ck_assert_int_eq(pca_whiten(x, N, FF, 0, &z, NULL), INCA_EINVAL);
    ck_assert_int_eq(pca_whiten(x, N, FF, FF + 1, &z, NULL), INCA_EINVAL);
    ck_assert_int_eq(pca_whiten(x, 1, FF, 2, &z, NULL), INCA_EINVAL);
    ck_assert(z == NULL);
    inca_free(x);
    inca_free(u);
}
END_TEST

/* PCA whitening by hand on two rows (a mutation round: whitening by 1/λ for 1/√λ, the covariance
 * over n − 1 and the sign fix dropped all passed the 4000-row case above, whose whitened
 * covariance is 1 within sampling error and whose axes are checked up to sign): rows 0 and
 * (a, b) have mean (a, b)/2 and covariance (a, b)ᵀ(a, b)/4, one axis v = ±(a, b)/r of variance
 * λ = r²/4, r = |(a, b)|. z = v·(x − μ)/√λ is ∓1 and ±1, the sign making v's largest component
 * positive: row (a, b) gets the sign of its larger-magnitude coordinate. Over the four
 * covariances of the eight sign patterns; 1-D rows {0, 4} give −1 and +1 (1/λ gives ±0.5, the
 * n − 1 covariance ±0.707). */
START_TEST(pca_whiten_two_rows_by_hand) {
    const float ab[8][2] = {{4, 1}, {-4, 1}, {4, -1}, {-4, -1}, {1, 4}, {1, -4}, {-1, 4}, {-1, -4}};
    for (int k = 0; k < 8; k++) {
        const float x[4] = {0, 0, ab[k][0], ab[k][1]};
        const double big = fabs(ab[k][0]) > fabs(ab[k][1]) ? ab[k][0] : ab[k][1], s = big > 0 ? 1 : -1;
        float *z = NULL;
        double kept = 0;
        ck_assert_int_eq(pca_whiten(x, 2, 2, 1, &z, &kept), INCA_OK);
        ck_assert_msg(fabs(z[0] + s) < 1e-5 && fabs(z[1] - s) < 1e-5, "rows 0 and (%g, %g): z = %g, %g; want %g, %g",
                      ab[k][0], ab[k][1], z[0], z[1], -s, s);
        ck_assert_double_eq_tol(kept, 1.0, 1e-9);
        inca_free(z);
    }
    const float x1[2] = {0, 4};
    float *z = NULL;
    ck_assert_int_eq(pca_whiten(x1, 2, 1, 1, &z, NULL), INCA_OK);
    ck_assert_msg(fabs(z[0] + 1) < 1e-6 && fabs(z[1] - 1) < 1e-6, "1-D rows {0, 4}: z = %g, %g; want -1, 1", z[0], z[1]);
    inca_free(z);
}
END_TEST

/* 7 nodes: weighted path 0-1-2-3-4-5 plus chord 1-4 (weight 2); node 6 isolated. w (weighted
 * CSR) and W (dense, 7 x 7) hold the same graph. */
enum { CHORD_N = 7 };
static void chord_graph(csr_t *w, double *W) {
    int64_t src[6] = {0, 1, 2, 3, 4, 1}, dst[6] = {1, 2, 3, 4, 5, 4};
    csr_t pat;
    ck_assert_int_eq(csr_from_edges(&pat, CHORD_N, src, dst, 6, CSR_SYMMETRIZE), 0);
    ck_assert_int_eq(csr_alloc(w, CHORD_N, CHORD_N, pat.nnz, 1), 0);
    memcpy(w->rowptr, pat.rowptr, (CHORD_N + 1) * sizeof *w->rowptr);
    memcpy(w->col, pat.col, (size_t)pat.nnz * sizeof *w->col);
    for (int i = 0; i < CHORD_N * CHORD_N; i++) W[i] = 0;
    for (int64_t i = 0; i < CHORD_N; i++)
        for (int64_t e = w->rowptr[i]; e < w->rowptr[i + 1]; e++) {
            const int j = w->col[e];
            w->val[e] = ((i == 1 && j == 4) || (i == 4 && j == 1)) ? 2.0f : 1.0f;
            W[i * CHORD_N + j] = w->val[e];
        }
    csr_free(&pat);
}

START_TEST(labelprop_closed_form) {
    enum { N = CHORD_N, C = 2 };
    csr_t w;
    double W[N * N];
    chord_graph(&w, W);
    int32_t y[N] = {0, -1, -1, -1, -1, 1, -1};
    const double alpha = 0.8;
    int32_t lab[N];
    float conf[N], F[N * C];
    ck_assert_int_eq(labelprop_spread(&w, y, C, alpha, 300, lab, conf, F), 0);
    double deg[N];
    for (int i = 0; i < N; i++) { deg[i] = 0; for (int j = 0; j < N; j++) deg[i] += W[i * N + j]; }
    for (int c = 0; c < C; c++) {
        double A[N * N], b[N];
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < N; j++) {
                double s = (deg[i] > 0 && deg[j] > 0) ? W[i * N + j] / sqrt(deg[i] * deg[j]) : 0;
                A[i * N + j] = (i == j) - alpha * s;
            }
            b[i] = (1 - alpha) * (y[i] == c);
        }
        solve(A, b, N);
        for (int i = 0; i < N; i++) ck_assert_msg(fabs(F[i * C + c] - b[i]) < 1e-5, "F[%d][%d] = %g, closed form %g", i, c, F[i * C + c], b[i]);
    }
    for (int i = 0; i < 6; i++) {
        int want = F[i * C + 1] > F[i * C] ? 1 : 0;
        ck_assert_int_eq(lab[i], want);
        ck_assert_float_eq_tol(conf[i], F[i * C + want] / (F[i * C] + F[i * C + 1]), 1e-6);
    }
    ck_assert_int_eq(lab[0], 0);
    ck_assert_int_eq(lab[5], 1);
    ck_assert_int_eq(lab[6], -1);   /* isolated: never reached */
    ck_assert_float_eq(conf[6], 0.0f);
    /* 1 iteration reaches only direct neighbours of labelled nodes */
    ck_assert_int_eq(labelprop_spread(&w, y, C, alpha, 1, lab, conf, NULL), 0);
    ck_assert_int_eq(lab[1], 0);
    ck_assert_int_eq(lab[4], 1);
    ck_assert_int_eq(lab[2], -1);
    ck_assert_int_eq(lab[3], -1);
    ck_assert_float_eq(conf[1], 1.0f);
    /* a directed graph spreads over its symmetric closure: nodes 2 and 3 only link to the
     * labelled node 0 (their rows hold it, its row holds nothing) and are still reached, with
     * the labels and confidences of the graph given both ways */
    {
        const int64_t src[3] = {1, 2, 3}, dst[3] = {0, 0, 0};
        const int32_t yd[4] = {1, 0, -1, -1};
        csr_t dg, ug;
        ck_assert_int_eq(csr_from_edges(&dg, 4, src, dst, 3, 0), INCA_OK);
        ck_assert_int_eq(csr_from_edges(&ug, 4, src, dst, 3, CSR_SYMMETRIZE), INCA_OK);
        ck_assert(!csr_is_symmetric(&dg));
        int32_t ld[4], lu[4];
        float cd[4], cu[4];
        ck_assert_int_eq(labelprop_spread(&dg, yd, 2, 0.9, 50, ld, cd, NULL), INCA_OK);
        ck_assert_int_eq(labelprop_spread(&ug, yd, 2, 0.9, 50, lu, cu, NULL), INCA_OK);
        for (int i = 0; i < 4; i++) {
            ck_assert_int_eq(ld[i], lu[i]);
            ck_assert_float_eq(cd[i], cu[i]);
        }
        ck_assert(ld[2] >= 0 && ld[3] >= 0 && cd[2] > 0);
        csr_free(&dg);
        csr_free(&ug);
    }
    /* bad input */
    ck_assert_int_eq(labelprop_spread(&w, y, C, 1.0, 10, lab, conf, NULL), INCA_EINVAL);
    y[2] = 2;
    ck_assert_int_eq(labelprop_spread(&w, y, C, 0.5, 10, lab, conf, NULL), INCA_EINVAL);
    csr_free(&w);
}
END_TEST

/* Correct and Smooth against the dense closed form on the weighted 7-node graph above (each
 * propagation run to convergence is (1−α)(I−αS)^{-1} of its start): base probabilities that call
 * node 1 (next to the class-0 seed 0) class 1 and node 4 (next to the class-1 seed 5) class 0.
 * The reference builds E0, spreads it, autoscales (σ = mean L1 residual of the seeds), clamps the
 * seeds and spreads again, all in double. The isolated node 6 keeps its base prediction. */
/* Correct and Smooth in double on a dense graph W (n x n, n <= 32, c = 2): E0 spread with a_c,
 * autoscaled (σ = mean L1 residual of the seeds; a scale past 1000 is 1), seeds clamped, spread
 * with a_s; each spread solved in closed form. *nbig counts the rows whose scale was capped. */
static void cs_reference(int n, const double *W, const float *p, const int32_t *y, double a_c, double a_s, double *ref,
                         int *nbig) {
    enum { C = 2, NMAX = 32 };
    double deg[NMAX] = {0}, e[NMAX * C] = {0}, z[NMAX * C], sigma = 0;
    int nl = 0;
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) deg[i] += W[i * n + j];
    for (int i = 0; i < n; i++) {
        if (y[i] < 0) continue;
        nl++;
        for (int c = 0; c < C; c++) { e[i * C + c] = (c == y[i]) - p[i * C + c]; sigma += fabs(e[i * C + c]); }
    }
    sigma /= nl;
    double *outs[2] = {e, ref}, alphas[2] = {a_c, a_s};
    *nbig = 0;
    for (int stage = 0; stage < 2; stage++) {
        const double al = alphas[stage];
        for (int c = 0; c < C; c++) {
            double A[NMAX * NMAX], b[NMAX];
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < n; j++) {
                    const double sij = deg[i] > 0 && deg[j] > 0 ? W[i * n + j] / sqrt(deg[i] * deg[j]) : 0;
                    A[i * n + j] = (i == j) - al * sij;
                }
                b[i] = (1 - al) * (stage == 0 ? e[i * C + c] : z[i * C + c]);
            }
            solve(A, b, n);
            for (int i = 0; i < n; i++) outs[stage][i * C + c] = b[i];
        }
        if (stage == 1) break;
        for (int i = 0; i < n; i++) {   /* autoscale, then clamp the seeds */
            double l1 = 0;
            for (int c = 0; c < C; c++) l1 += fabs(e[i * C + c]);
            const double m = l1 > 0 && sigma / l1 <= 1000 ? sigma / l1 : 1.0;
            *nbig += l1 > 0 && sigma / l1 > 1000 && y[i] < 0;
            for (int c = 0; c < C; c++) z[i * C + c] = y[i] >= 0 ? (c == y[i]) : p[i * C + c] + m * e[i * C + c];
        }
    }
}

/* Correct and Smooth against the dense closed form on the weighted 7-node graph above (each
 * propagation run to convergence is (1−α)(I−αS)^{-1} of its start): base probabilities that call
 * node 1 (next to the class-0 seed 0) class 1 and node 4 (next to the class-1 seed 5) class 0.
 * The isolated node 6 keeps its base prediction. Then a path of 24 nodes with one seed at its
 * end, where the far nodes' residuals are so faint that their scale is capped. */
START_TEST(cs_closed_form) {
    enum { N = CHORD_N, C = 2 };
    csr_t wv;
    double W[N * N];
    chord_graph(&wv, W);
    const float p[N * C] = {0.6f, 0.4f, 0.3f, 0.7f, 0.5f, 0.5f, 0.45f, 0.55f, 0.8f, 0.2f, 0.3f, 0.7f, 0.35f, 0.65f};
    int32_t y[N] = {0, -1, -1, -1, -1, 1, -1};
    cs_opts_t o;
    cs_opts_default(&o);
    ck_assert(o.alpha_correct == 0.8 && o.alpha_smooth == 0.8 && o.iters == 50);
    o.iters = 300;
    o.alpha_correct = 0.7;   /* two different alphas: each propagation uses its own */
    int32_t lab[N];
    float conf[N], g[N * C];
    ck_assert_int_eq(cs_run(&wv, p, C, y, &o, lab, conf, g), 0);
    double ref[N * C];
    int nbig = 0;
    cs_reference(N, W, p, y, 0.7, 0.8, ref, &nbig);
    ck_assert_int_eq(nbig, 0);
    for (int i = 0; i < N * C; i++) ck_assert_msg(fabs(g[i] - ref[i]) < 1e-5, "g[%d] = %g, closed form %g", i, g[i], ref[i]);
    for (int i = 0; i < N; i++) {
        const int want = ref[i * C + 1] > ref[i * C] ? 1 : 0;
        ck_assert_int_eq(lab[i], want);
        ck_assert_double_eq_tol(conf[i], ref[i * C + want] / (ref[i * C] + ref[i * C + 1]), 1e-5);
    }
    ck_assert_int_eq(lab[1], 0);   /* the seeds' neighbours turn to the seeds' classes */
    ck_assert_int_eq(lab[4], 1);
    ck_assert_int_eq(lab[6], 1);   /* isolated: the base prediction, its probability */
    ck_assert_double_eq_tol(conf[6], 0.65, 1e-6);
    y[3] = 2;
    ck_assert_int_eq(cs_run(&wv, p, C, y, &o, lab, conf, NULL), INCA_EINVAL);
    csr_free(&wv);
    /* the path: seed 0 of class 0, every base prediction (0.4, 0.6); α_c 0.3 leaves residuals
     * of order 0.15^d at distance d, capped from some d on */
    enum { P = 24 };
    int64_t src[P - 1], dst[P - 1];
    for (int i = 0; i < P - 1; i++) { src[i] = i; dst[i] = i + 1; }
    csr_t path;
    ck_assert_int_eq(csr_from_edges(&path, P, src, dst, P - 1, CSR_SYMMETRIZE), 0);
    double Wp[P * P] = {0};
    for (int i = 0; i < P - 1; i++) Wp[i * P + i + 1] = Wp[(i + 1) * P + i] = 1;
    float pp[P * C], gp[P * C];
    int32_t yp[P];
    for (int i = 0; i < P; i++) { pp[i * C] = 0.4f; pp[i * C + 1] = 0.6f; yp[i] = i ? -1 : 0; }
    o.alpha_correct = 0.3;
    o.iters = 400;
    ck_assert_int_eq(cs_run(&path, pp, C, yp, &o, NULL, NULL, gp), 0);
    double refp[P * C];
    cs_reference(P, Wp, pp, yp, 0.3, 0.8, refp, &nbig);
    ck_assert_msg(nbig >= 5 && nbig < P - 2, "%d rows capped: the case does not exercise the cap", nbig);
    for (int i = 0; i < P * C; i++) ck_assert_msg(fabs(gp[i] - refp[i]) < 1e-5, "path g[%d] = %g, closed form %g", i, gp[i], refp[i]);
    csr_free(&path);
}
END_TEST

/* Class mass normalisation by hand: y = [0, -1, -1], F = [(1,0), (0.4,0.5), (0,2)]. Unlabelled
 * mass (0.4, 2.5); prior (1+1)/(1+2) = 2/3 and 1/3; scales 5/3 and 2/15. Row 1 becomes
 * (2/3, 1/15): class 0 (plain argmax says 1) with confidence (2/3)/(11/15) = 10/11; row 2
 * (0, 4/15): class 1, confidence 1; the labelled row keeps its label. */
START_TEST(labelprop_class_mass_hand) {
    const float f[6] = {1, 0, 0.4f, 0.5f, 0, 2};
    const int32_t y[3] = {0, -1, -1};
    int32_t lab[3];
    float conf[3];
    ck_assert_int_eq(labelprop_class_mass(f, 3, 2, y, lab, conf), INCA_OK);
    ck_assert_int_eq(lab[0], 0);
    ck_assert_int_eq(lab[1], 0);
    ck_assert_int_eq(lab[2], 1);
    ck_assert_float_eq_tol(conf[0], 1.0f, 1e-6f);
    ck_assert_float_eq_tol(conf[1], 10.0f / 11.0f, 1e-6f);
    ck_assert_float_eq_tol(conf[2], 1.0f, 1e-6f);
}
END_TEST

START_TEST(sgc_hops_path_by_hand) {
    /* path 0-1-2; with self-loops the degrees are 2, 3, 2, so Â = [[1/2, 1/√6, 0], [1/√6, 1/3,
     * 1/√6], [0, 1/√6, 1/2]] */
    int64_t src[2] = {0, 1}, dst[2] = {1, 2};
    csr_t a;
    ck_assert_int_eq(csr_from_edges(&a, 3, src, dst, 2, CSR_SYMMETRIZE), 0);
    const float x[6] = {1, 0, 0, 1, 1, 1};
    const double r6 = 1.0 / sqrt(6.0);
    const double A[9] = {0.5, r6, 0, r6, 1.0 / 3, r6, 0, r6, 0.5};
    double h[3][6] = {{1, 0, 0, 1, 1, 1}};
    for (int k = 1; k < 3; k++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                for (int t = 0; t < 2; t++) h[k][i * 2 + t] += A[i * 3 + j] * h[k - 1][j * 2 + t];
    sgc_opts_t o;
    sgc_opts_default(&o);
    o.scale = 3.0f;
    /* one hop count at a time: the block is the whole row, norm 3 */
    for (int hop = 1; hop <= 2; hop++) {
        o.nhops = 1;
        o.hop[0] = hop;
        float *z = NULL;
        ck_assert_int_eq(sgc_features(&a, x, 3, 2, &o, NULL, 0, &z), 0);
        for (int i = 0; i < 3; i++) {
            const double nrm = hypot(h[hop][i * 2], h[hop][i * 2 + 1]);
            for (int t = 0; t < 2; t++) ck_assert_double_eq_tol(z[i * 2 + t], 3.0 * h[hop][i * 2 + t] / nrm, 1e-5);
        }
        if (hop == 1) {   /* row 0 after one hop, written out: (1/2, 1/√6) scaled to norm 3 */
            const double n0 = sqrt(0.25 + 1.0 / 6.0);
            ck_assert_double_eq_tol(z[0], 3.0 * 0.5 / n0, 1e-5);
            ck_assert_double_eq_tol(z[1], 3.0 * r6 / n0, 1e-5);
        }
        inca_free(z);
    }
    /* hops 0 and 2 side by side for rows 2 and 0: each block of norm 3/√2 */
    o.nhops = 2;
    o.hop[0] = 0;
    o.hop[1] = 2;
    const int64_t rows[2] = {2, 0};
    float *z = NULL;
    ck_assert_int_eq(sgc_features(&a, x, 3, 2, &o, rows, 2, &z), 0);
    for (int r = 0; r < 2; r++)
        for (int b = 0; b < 2; b++) {
            const double *e = h[b ? 2 : 0] + rows[r] * 2;
            const double nrm = hypot(e[0], e[1]);
            for (int t = 0; t < 2; t++) ck_assert_double_eq_tol(z[r * 4 + b * 2 + t], 3.0 / sqrt(2.0) * e[t] / nrm, 1e-5);
        }
    inca_free(z);
    /* hop counts must ascend */
    o.hop[1] = 0;
    ck_assert_int_eq(sgc_features(&a, x, 3, 2, &o, NULL, 0, &z), INCA_EINVAL);
    inca_err_clear();
    csr_free(&a);
}
END_TEST

START_TEST(sgc_regression_gradient_and_fit) {
    /* a blob per class in 5 dimensions, 3 classes; every other row labelled */
    enum { N = 90, F = 5, C = 3 };
    float z[N * F];
    int32_t y[N], truth[N];
    rng_t g;
    rng_seed(&g, 11);
    for (int i = 0; i < N; i++) {
        truth[i] = i % C;
        for (int k = 0; k < F; k++) z[i * F + k] = (float)(rng_normal(&g) * 0.5 + (k == truth[i] ? 2.0 : 0.0));
        y[i] = i % 2 ? -1 : truth[i];
    }
    /* the gradient against central differences of the loss, at a random W */
    float w[F * C], gr[F * C];
    for (int k = 0; k < F * C; k++) w[k] = (float)(rng_normal(&g) * 0.3);
    const double l2 = 0.05;
    sgc_loss(z, N, F, y, C, l2, w, gr);
    for (int k = 0; k < F * C; k++) {
        const float keep = w[k], hh = 1e-2f;
        w[k] = keep + hh;
        const double up = sgc_loss(z, N, F, y, C, l2, w, NULL);
        w[k] = keep - hh;
        const double dn = sgc_loss(z, N, F, y, C, l2, w, NULL);
        w[k] = keep;
        ck_assert_double_eq_tol(gr[k], (up - dn) / (2.0 * hh), 2e-3);
    }
    /* fitted on the labelled half, it labels the hidden half (the blobs sit 2 apart, std 0.5) */
    sgc_opts_t o;
    sgc_opts_default(&o);
    int32_t lab[N];
    float conf[N], *wf = NULL;
    ck_assert_int_eq(sgc_fit(z, N, F, y, C, &o, &wf), 0);
    ck_assert_int_eq(sgc_predict(z, N, F, wf, C, lab, conf), 0);
    int right = 0;
    for (int i = 1; i < N; i += 2) right += lab[i] == truth[i];
    ck_assert_int_ge(right, 40);   /* of 45 */
    for (int i = 0; i < N; i++) ck_assert(conf[i] >= 1.0f / C - 1e-6f && conf[i] <= 1.0f);
    ck_assert_double_lt(sgc_loss(z, N, F, y, C, o.l2, wf, NULL), log((double)C) - 0.3);   /* W = 0 gives log C */
    inca_free(wf);
    /* the fit minimises the penalised objective (the L2 goes in through Adam's weight decay): at
     * its end the penalised gradient is near zero, the unpenalised one is not */
    o.iters = 3000;
    ck_assert_int_eq(sgc_fit(z, N, F, y, C, &o, &wf), 0);
    double gmax = 0, g0max = 0;
    sgc_loss(z, N, F, y, C, o.l2, wf, gr);
    for (int k = 0; k < F * C; k++) gmax = fmax(gmax, fabs(gr[k]));
    sgc_loss(z, N, F, y, C, 0.0, wf, gr);
    for (int k = 0; k < F * C; k++) g0max = fmax(g0max, fabs(gr[k]));
    ck_assert_msg(gmax < 1e-3 && g0max > 1e-2, "penalised gradient %g, unpenalised %g", gmax, g0max);
    inca_free(wf);
    /* no labelled row: a message, not a model */
    int32_t none[N];
    for (int i = 0; i < N; i++) none[i] = -1;
    ck_assert_int_eq(sgc_fit(z, N, F, none, C, &o, &wf), INCA_EINVAL);
    ck_assert_ptr_null(wf);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "no labelled row"));
    inca_err_clear();
}
END_TEST

START_TEST(sgc_sweep_equals_features) {
    /* a ring of 200 nodes with chords, 7 features, the default hops (0 to 16): predicting every
     * row by the sweep gives what the gathered features give */
    enum { N = 200, F = 7, C = 4 };
    int64_t src[2 * N], dst[2 * N];
    for (int i = 0; i < N; i++) {
        src[2 * i] = src[2 * i + 1] = i;
        dst[2 * i] = (i + 1) % N;
        dst[2 * i + 1] = (i * 7 + 3) % N;
    }
    csr_t a;
    ck_assert_int_eq(csr_from_edges(&a, N, src, dst, 2 * N, CSR_SYMMETRIZE | CSR_DROP_SELF_LOOPS), 0);
    float x[N * F];
    rng_t g;
    rng_seed(&g, 5);
    for (int k = 0; k < N * F; k++) x[k] = (float)rng_normal(&g);
    sgc_opts_t o;
    sgc_opts_default(&o);
    const int64_t FW = (int64_t)F * o.nhops;
    float *w = inca_malloc((size_t)FW * C * sizeof *w), *z = NULL;
    ck_assert_ptr_nonnull(w);
    for (int64_t k = 0; k < FW * C; k++) w[k] = (float)rng_normal(&g);
    ck_assert_int_eq(sgc_features(&a, x, N, F, &o, NULL, 0, &z), 0);
    int32_t l1[N], l2[N];
    float c1[N], c2[N];
    ck_assert_int_eq(sgc_predict(z, N, FW, w, C, l1, c1), 0);
    ck_assert_int_eq(sgc_predict_graph(&a, x, N, F, &o, w, C, l2, c2), 0);
    for (int i = 0; i < N; i++) {
        ck_assert_float_eq_tol(c1[i], c2[i], 1e-5f);
        ck_assert_int_eq(l1[i], l2[i]);
    }
    /* two models in one sweep: each model's probabilities, the second's rows after the first's */
    float *w2 = inca_malloc((size_t)FW * C * sizeof *w2), *pr = inca_malloc((size_t)2 * N * C * sizeof *pr);
    ck_assert(w2 && pr);
    for (int64_t k = 0; k < FW * C; k++) w2[k] = (float)rng_normal(&g);
    const float *ws[2] = {w, w2};
    ck_assert_int_eq(sgc_probs_graph(&a, x, N, F, &o, ws, 2, C, pr), 0);
    for (int m = 0; m < 2; m++)   /* softmax(z W_m), every entry, in double from the gathered features */
        for (int i = 0; i < N; i++) {
            double lg[C], mx = -1e300, sum = 0;
            for (int c = 0; c < C; c++) {
                lg[c] = 0;
                for (int64_t k = 0; k < FW; k++) lg[c] += (double)z[i * FW + k] * ws[m][k * C + c];
                mx = fmax(mx, lg[c]);
            }
            for (int c = 0; c < C; c++) sum += exp(lg[c] - mx);
            for (int c = 0; c < C; c++)
                ck_assert_double_eq_tol(pr[((int64_t)m * N + i) * C + c], exp(lg[c] - mx) / sum, 1e-5);
        }
    inca_free(w2);
    inca_free(pr);
    /* and the hop blocks are the hops: block j of row i has norm 10/√6 unless that hop is zero */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < o.nhops; j++) {
            double q = 0;
            for (int t = 0; t < F; t++) q += (double)z[i * FW + j * F + t] * z[i * FW + j * F + t];
            ck_assert_double_eq_tol(sqrt(q), 10.0 / sqrt(6.0), 1e-4);
        }
    inca_free(z);
    inca_free(w);
    csr_free(&a);
}
END_TEST

int main(void) {
    Suite *s = suite_create("pruning_knn");
    TCase *t = tcase_create("knn");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, knn_brute_small);
    tcase_add_test(t, knn_brute_blocks);
    tcase_add_test(t, knn_hand_points);
    tcase_add_test(t, knn_faiss_recall);
    tcase_add_test(t, labelprop_closed_form);
    tcase_add_test(t, pca_whiten_known_axes);
    tcase_add_test(t, pca_whiten_two_rows_by_hand);
    tcase_add_test(t, labelprop_class_mass_hand);
    tcase_add_test(t, cs_closed_form);
    tcase_add_test(t, sgc_hops_path_by_hand);
    tcase_add_test(t, sgc_sweep_equals_features);
    tcase_add_test(t, sgc_regression_gradient_and_fit);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
