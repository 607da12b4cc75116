/* Tests of the CPU kernels (kernels/cpu) and the backend table: every kernel against a naive
 * double-precision reference on random small inputs, bit-identical results for 1 and 2 threads,
 * the softmax-xent gradient against central finite differences, dropout keep rate and mask
 * reproducibility, OGB-style accuracy on hand-made cases. */
#include "kernels/kernels.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include "tests/testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A random CSR built here (independently of graph/): about a quarter of the rows empty, a few
 * heavy rows (power-law-ish), columns sorted and unique. */
static csr_t make_csr(int64_t n_rows, int64_t n_cols, int avg_deg, int with_val, uint64_t seed) {
    rng_t r;
    rng_seed(&r, seed);
    csr_t a = {.n_rows = n_rows, .n_cols = n_cols, .owned = 0};
    a.rowptr = calloc((size_t)n_rows + 1, sizeof(int64_t));
    int64_t cap = n_rows * (int64_t)avg_deg * 4 + 64;
    a.col = malloc((size_t)cap * sizeof(int32_t));
    a.val = with_val ? malloc((size_t)cap * sizeof(float)) : NULL;
    uint8_t *seen = calloc((size_t)n_cols, 1);
    ck_assert(a.rowptr && a.col && seen && (!with_val || a.val));
    int64_t nnz = 0;
    for (int64_t i = 0; i < n_rows; i++) {
        int64_t d = 0;
        double u = rng_uniform(&r);
        if (u >= 0.25) d = (int64_t)(rng_uniform(&r) * 2 * avg_deg);
        if (u > 0.97) d = (int64_t)(rng_uniform(&r) * 3 * avg_deg * 4 / 3);   /* heavy rows */
        if (d > n_cols) d = n_cols;
        if (nnz + d > cap) d = cap - nnz;
        int64_t got = 0;
        while (got < d) {
            int64_t c = (int64_t)rng_below(&r, (uint64_t)n_cols);
            if (seen[c]) continue;
            seen[c] = 1;
            got++;
        }
        for (int64_t c = 0; c < n_cols; c++)
            if (seen[c]) {
                a.col[nnz] = (int32_t)c;
                if (with_val) a.val[nnz] = (float)(rng_uniform(&r) * 2.0 - 0.5);
                nnz++;
                seen[c] = 0;
            }
        a.rowptr[i + 1] = nnz;
    }
    a.nnz = nnz;
    free(seen);
    return a;
}

static void free_csr(csr_t *a) {
    free(a->rowptr);
    free(a->col);
    free(a->val);
    memset(a, 0, sizeof *a);
}

/* Naive transpose (counting), values carried. */
static csr_t transpose_csr(const csr_t *a) {
    csr_t t = {.n_rows = a->n_cols, .n_cols = a->n_rows, .nnz = a->nnz};
    t.rowptr = calloc((size_t)t.n_rows + 1, sizeof(int64_t));
    t.col = malloc((size_t)(a->nnz + 1) * sizeof(int32_t));
    t.val = a->val ? malloc((size_t)(a->nnz + 1) * sizeof(float)) : NULL;
    for (int64_t j = 0; j < a->nnz; j++) t.rowptr[a->col[j] + 1]++;
    for (int64_t i = 0; i < t.n_rows; i++) t.rowptr[i + 1] += t.rowptr[i];
    int64_t *pos = malloc((size_t)(t.n_rows + 1) * sizeof(int64_t));
    memcpy(pos, t.rowptr, (size_t)(t.n_rows + 1) * sizeof(int64_t));
    for (int64_t i = 0; i < a->n_rows; i++)
        for (int64_t j = a->rowptr[i]; j < a->rowptr[i + 1]; j++) {
            int64_t p = pos[a->col[j]]++;
            t.col[p] = (int32_t)i;
            if (a->val) t.val[p] = a->val[j];
        }
    free(pos);
    return t;
}

static float *rand_floats(int64_t n, uint64_t seed) {
    float *x = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    ck_assert(x);
    for (int64_t i = 0; i < n; i++) x[i] = rng_hash_uniform(seed, 7, (uint64_t)i) * 2.0f - 1.0f;
    return x;
}

static float rand_floats_at(uint64_t seed, int64_t i) { return rng_hash_uniform(seed, 7, (uint64_t)i) * 2.0f - 1.0f; }

/* |got - ref| <= atol + rtol * scale for every element; prints the first miss. */
static void expect_close(const char *what, int64_t n, const float *got, const double *ref,
                         const double *scale, double atol, double rtol) {
    double maxd = 0.0;
    int64_t first = -1;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (d > maxd) maxd = d;
        double s = scale ? scale[i] : fabs(ref[i]);
        if (!(d <= atol + rtol * s) && first < 0) first = i;
    }
    ck_assert_msg(first < 0, "%s: element %lld got %.9g expected %.9g (max |diff| %.3g)", what,
                  (long long)first, first >= 0 ? got[first] : 0.0, first >= 0 ? ref[first] : 0.0, maxd);
}

/* Y = alpha A X + beta Y0 in double; scale = alpha Σ|a x| + |beta y0| for the tolerance. */
static void spmm_ref(const csr_t *a, const float *x, int64_t f, double alpha, double beta,
                     const float *y0, double *ref, double *scale) {
    for (int64_t i = 0; i < a->n_rows; i++)
        for (int64_t k = 0; k < f; k++) {
            double s = 0.0, sa = 0.0;
            for (int64_t j = a->rowptr[i]; j < a->rowptr[i + 1]; j++) {
                double v = a->val ? a->val[j] : 1.0;
                s += v * x[(int64_t)a->col[j] * f + k];
                sa += fabs(v * x[(int64_t)a->col[j] * f + k]);
            }
            ref[i * f + k] = alpha * s + (beta != 0.0 ? beta * y0[i * f + k] : 0.0);
            scale[i * f + k] = fabs(alpha) * sa + fabs(beta * y0[i * f + k]) + 1e-30;
        }
}

START_TEST(spmm_matches_reference) {
    static const int64_t fs[] = {1, 7, 16, 32, 64, 100, 256, 700};
    static const float ab[][2] = {{1.0f, 0.0f}, {0.5f, 0.0f}, {-1.5f, 2.0f}};
    for (int with_val = 0; with_val <= 1; with_val++)
        for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++)
            for (size_t c = 0; c < 3; c++) {
                const int64_t f = fs[fi];
                csr_t a = make_csr(61, 45, 6, with_val, 11 + fi + 100 * with_val);
                float *x = rand_floats(a.n_cols * f, 3 + fi);
                float *y = rand_floats(a.n_rows * f, 5 + fi);
                double *ref = malloc((size_t)(a.n_rows * f) * sizeof(double));
                double *scale = malloc((size_t)(a.n_rows * f) * sizeof(double));
                spmm_ref(&a, x, f, ab[c][0], ab[c][1], y, ref, scale);
                if (ab[c][1] == 0.0f)   /* beta 0: Y is overwritten, even NaN garbage */
                    for (int64_t i = 0; i < a.n_rows * f; i++) y[i] = NAN;
                ck_assert_int_eq(kern_spmm(&a, x, f, ab[c][0], ab[c][1], y), INCA_OK);
                char what[96];
                snprintf(what, sizeof what, "spmm val=%d f=%lld alpha=%g beta=%g", with_val,
                         (long long)f, ab[c][0], ab[c][1]);
                expect_close(what, a.n_rows * f, y, ref, scale, 1e-6, 1e-5);
                /* the transpose through a precomputed Aᵀ gives Aᵀ X */
                csr_t at = transpose_csr(&a);
                float *xt = rand_floats(a.n_rows * f, 9 + fi);
                float *yt = rand_floats(a.n_cols * f, 13 + fi);
                double *reft = malloc((size_t)(a.n_cols * f) * sizeof(double));
                double *scalet = malloc((size_t)(a.n_cols * f) * sizeof(double));
                spmm_ref(&at, xt, f, ab[c][0], ab[c][1], yt, reft, scalet);
                ck_assert_int_eq(kern_spmm_t(&a, &at, xt, f, ab[c][0], ab[c][1], yt), INCA_OK);
                expect_close("spmm_t", a.n_cols * f, yt, reft, scalet, 1e-6, 1e-5);
                free(xt); free(yt); free(reft); free(scalet);
                free_csr(&at);
                free(x); free(y); free(ref); free(scale);
                free_csr(&a);
            }
}
END_TEST

/* kern_spmm_base adds gathered base rows: against the double reference, and bit for bit equal
 * to copying the rows into Y and calling kern_spmm with alpha = beta = 1 (what IncAgg did). */
START_TEST(spmm_base_matches_pull_then_spmm) {
    static const int64_t fs[] = {1, 16, 64, 100, 256};
    for (int with_val = 0; with_val <= 1; with_val++)
        for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++) {
            const int64_t f = fs[fi], nbase = 90;
            csr_t a = make_csr(61, 45, 6, with_val, 31 + fi + 100 * with_val);
            float *x = rand_floats(a.n_cols * f, 33 + fi), *base = rand_floats(nbase * f, 35 + fi);
            float *y1 = malloc(sizeof(float) * (size_t)(a.n_rows * f)), *y2 = malloc(sizeof(float) * (size_t)(a.n_rows * f));
            double *ref = malloc(sizeof(double) * (size_t)(a.n_rows * f)), *scale = malloc(sizeof(double) * (size_t)(a.n_rows * f));
            int64_t *ids = malloc(sizeof(int64_t) * (size_t)a.n_rows);
            ck_assert(y1 && y2 && ref && scale && ids);
            for (int64_t r = 0; r < a.n_rows; r++) {
                ids[r] = (r * 37 + 11) % nbase;
                memcpy(y2 + r * f, base + ids[r] * f, sizeof(float) * (size_t)f);
            }
            spmm_ref(&a, x, f, 1.0, 1.0, y2, ref, scale);
            for (int64_t i = 0; i < a.n_rows * f; i++) y1[i] = NAN;   /* Y is written, not read */
            ck_assert_int_eq(kern_spmm_base(&a, x, f, base, nbase, ids, y1), INCA_OK);
            ck_assert_int_eq(kern_spmm(&a, x, f, 1.0f, 1.0f, y2), INCA_OK);
            expect_close("spmm_base", a.n_rows * f, y1, ref, scale, 1e-6, 1e-5);
            ck_assert_mem_eq(y1, y2, sizeof(float) * (size_t)(a.n_rows * f));
            ids[a.n_rows - 1] = nbase;   /* out of range: refused, naming the row */
            ck_assert_int_eq(kern_spmm_base(&a, x, f, base, nbase, ids, y1), INCA_EINVAL);
            ck_assert_ptr_nonnull(strstr(inca_errmsg(), "base row 90"));
            free(x); free(base); free(y1); free(y2); free(ref); free(scale); free(ids);
            free_csr(&a);
        }
}
END_TEST

/* kern_spmm_bf16 on bf16 X gives the bits of kern_spmm on the decoded X, for whole matrices and
 * for row views (csr_row_view: rowptr not starting at 0), at 1 and 2 threads; and kern_spmm on
 * a row view gives those rows of the whole product. */
START_TEST(spmm_bf16_and_row_views) {
    static const int64_t fs[] = {1, 16, 70, 256};
    for (int with_val = 0; with_val <= 1; with_val++)
        for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++) {
            const int64_t f = fs[fi];
            csr_t a = make_csr(300, 210, 7, with_val, 51 + fi + 100 * with_val);
            float *x = rand_floats(a.n_cols * f, 53 + fi);
            uint16_t *xb = malloc(sizeof *xb * (size_t)(a.n_cols * f));
            float *y = malloc(sizeof(float) * (size_t)(a.n_rows * f)), *yb = malloc(sizeof(float) * (size_t)(a.n_rows * f));
            ck_assert(xb && y && yb);
            for (int64_t i = 0; i < a.n_cols * f; i++) {   /* bf16 by truncation: any bits will do */
                uint32_t u;
                memcpy(&u, &x[i], 4);
                xb[i] = (uint16_t)(u >> 16);
                u &= 0xffff0000u;
                memcpy(&x[i], &u, 4);
            }
            for (int t = 1; t <= 2; t++) {
                inca_set_threads(t);
                ck_assert_int_eq(kern_spmm(&a, x, f, 1.0f, 0.0f, y), INCA_OK);
                ck_assert_int_eq(kern_spmm_bf16(&a, xb, f, yb), INCA_OK);
                ck_assert_mem_eq(y, yb, sizeof(float) * (size_t)(a.n_rows * f));
                const int64_t cuts[] = {0, 1, 77, 150, 299, 300};
                for (size_t c = 0; c + 1 < sizeof cuts / sizeof cuts[0]; c++) {
                    csr_t v = csr_row_view(&a, cuts[c], cuts[c + 1]);
                    ck_assert_int_eq(v.n_rows, cuts[c + 1] - cuts[c]);
                    if (v.n_rows == 0) continue;
                    ck_assert_int_eq(kern_spmm(&v, x, f, 1.0f, 0.0f, yb), INCA_OK);
                    ck_assert_mem_eq(yb, y + cuts[c] * f, sizeof(float) * (size_t)(v.n_rows * f));
                    ck_assert_int_eq(kern_spmm_bf16(&v, xb, f, yb), INCA_OK);
                    ck_assert_mem_eq(yb, y + cuts[c] * f, sizeof(float) * (size_t)(v.n_rows * f));
                }
            }
            inca_set_threads(0);
            free(x); free(xb); free(y); free(yb);
            free_csr(&a);
        }
}
END_TEST

/* A naive Aᵀ X written without any transpose, to check kern_spmm_t with at = NULL on a
 * symmetric matrix (pattern and values). */
START_TEST(spmm_t_symmetric_without_transpose) {
    csr_t a0 = make_csr(40, 40, 5, 1, 77);
    /* symmetrise: S = A + Aᵀ through dense */
    double *d = calloc(40 * 40, sizeof(double));
    for (int64_t i = 0; i < 40; i++)
        for (int64_t j = a0.rowptr[i]; j < a0.rowptr[i + 1]; j++) {
            d[i * 40 + a0.col[j]] += a0.val[j];
            d[a0.col[j] * 40 + i] += a0.val[j];
        }
    csr_t s = {.n_rows = 40, .n_cols = 40};
    s.rowptr = calloc(41, sizeof(int64_t));
    s.col = malloc(1600 * sizeof(int32_t));
    s.val = malloc(1600 * sizeof(float));
    for (int64_t i = 0; i < 40; i++) {
        for (int64_t j = 0; j < 40; j++)
            if (d[i * 40 + j] != 0.0) {
                s.col[s.nnz] = (int32_t)j;
                s.val[s.nnz++] = (float)d[i * 40 + j];
            }
        s.rowptr[i + 1] = s.nnz;
    }
    const int64_t f = 7;
    float *x = rand_floats(40 * f, 1), *y = rand_floats(40 * f, 2);
    double ref[40 * 7];
    for (int64_t j = 0; j < 40; j++)
        for (int64_t k = 0; k < f; k++) {
            double acc = 0.0;
            for (int64_t i = 0; i < 40; i++) acc += d[i * 40 + j] * x[i * f + k];   /* (Sᵀ X)[j] */
            ref[j * f + k] = acc;
        }
    ck_assert_int_eq(kern_spmm_t(&s, NULL, x, f, 1.0f, 0.0f, y), INCA_OK);
    expect_close("spmm_t at=NULL", 40 * f, y, ref, NULL, 1e-5, 1e-5);
    /* non-square without a transpose is a usage error; mismatched transpose too */
    csr_t r = make_csr(10, 12, 3, 0, 5);
    ck_assert_int_eq(kern_spmm_t(&r, NULL, x, f, 1.0f, 0.0f, y), INCA_EINVAL);
    ck_assert(strstr(inca_errmsg(), "not square") != NULL);
    ck_assert_int_eq(kern_spmm_t(&r, &r, x, f, 1.0f, 0.0f, y), INCA_EINVAL);
    ck_assert_int_eq(kern_spmm(&r, x, 0, 1.0f, 0.0f, y), INCA_EINVAL);
    free_csr(&r);
    free(x); free(y); free(d);
    free_csr(&s);
    free_csr(&a0);
}
END_TEST

START_TEST(spmm_threads_bit_identical) {
    /* large enough that the kernel really uses 2 threads (>= 64K floats of work per thread) */
    for (int with_val = 0; with_val <= 1; with_val++) {
        static const int64_t fs[] = {1, 7, 64};
        for (size_t fi = 0; fi < 3; fi++) {
            const int64_t f = fs[fi];
            csr_t a = make_csr(20000, 20000, 8, with_val, 99 + fi);
            float *x = rand_floats(a.n_cols * f, 21);
            float *y1 = rand_floats(a.n_rows * f, 22), *y2 = rand_floats(a.n_rows * f, 22);
            inca_set_threads(1);
            ck_assert_int_eq(kern_spmm(&a, x, f, 0.7f, 0.3f, y1), INCA_OK);
            inca_set_threads(2);
            ck_assert_int_eq(kern_spmm(&a, x, f, 0.7f, 0.3f, y2), INCA_OK);
            ck_assert_msg(memcmp(y1, y2, (size_t)(a.n_rows * f) * sizeof(float)) == 0,
                          "spmm f=%lld val=%d: 1 and 2 threads differ", (long long)f, with_val);
            free(x); free(y1); free(y2);
            free_csr(&a);
        }
    }
}
END_TEST

/* IncAgg's residual rows (kern_rows_sub): out = in - table[ids] and the pushed rows written
 * after, against plain loops, in f32 and bf16 (a mutation test: out = in went unnoticed by every
 * kernel test; only test_incagg's equivalences caught it) */
START_TEST(rows_sub_matches_loops) {
    enum { N = 9, F = 5, M = 4 };
    const int64_t ids[M] = {7, 0, 3, 8};
    float *in = rand_floats(M * F, 41), *push = rand_floats(M * F, 42), *base = rand_floats(N * F, 43), out[M * F];
    for (int bf = 0; bf <= 1; bf++) {
        float t32[N * F];
        uint16_t t16[N * F];
        memcpy(t32, base, sizeof t32);
        for (int k = 0; k < N * F; k++) t16[k] = kern_f32_to_bf16(base[k]);
        kern_rows_sub(bf ? KERN_BF16 : KERN_F32, bf ? (void *)t16 : (void *)t32, F, ids, M, in, out, push);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < F; j++) {
                const float old = bf ? kern_bf16_to_f32(kern_f32_to_bf16(base[ids[i] * F + j])) : base[ids[i] * F + j];
                ck_assert_msg(out[i * F + j] == in[i * F + j] - old, "%s: out[%d,%d]", bf ? "bf16" : "f32", i, j);
                const float now = bf ? kern_bf16_to_f32(t16[ids[i] * F + j]) : t32[ids[i] * F + j];
                const float want = bf ? kern_bf16_to_f32(kern_f32_to_bf16(push[i * F + j])) : push[i * F + j];
                ck_assert_msg(now == want, "%s: pushed row %lld", bf ? "bf16" : "f32", (long long)ids[i]);
            }
        for (int r = 0; r < N; r++)   /* rows not in ids stay */
            if (r != 7 && r != 0 && r != 3 && r != 8)
                for (int j = 0; j < F; j++)
                    ck_assert(bf ? t16[r * F + j] == kern_f32_to_bf16(base[r * F + j]) : t32[r * F + j] == base[r * F + j]);
    }
    free(in);
    free(push);
    free(base);
}
END_TEST

START_TEST(gemm_matches_reference) {
    /* small shapes take the single-sgemm path; the large ones are cut into per-thread row
     * blocks (500 x 64; 16 x 600, since kern_gemm splits by rows once m >= 8 T) or column blocks
     * (8 x 600 at 2 threads: m < n and m < 8 T; a mutation test found the 16-row shape never
     * reached the column split, whose transposed-B offset went unchecked) */
    static const int64_t shapes[][3] = {{13, 9, 17}, {500, 64, 200}, {16, 600, 500}, {8, 600, 500}};
    for (int si = 0; si < 4; si++)
        for (int th = 1; th <= 2; th++)
            for (int ta = 0; ta <= 1; ta++)
                for (int tb = 0; tb <= 1; tb++) {
                    const int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
                    inca_set_threads(th);
                    /* row-major storage with padded leading dimensions */
                    const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
                    float *a = rand_floats((ta ? k : m) * lda, 31), *b = rand_floats((tb ? n : k) * ldb, 32);
                    float *c = rand_floats(m * ldc, 33);
                    double *ref = malloc((size_t)(m * n) * sizeof(double));
                    float *got = malloc((size_t)(m * n) * sizeof(float));
                    for (int64_t i = 0; i < m; i++)
                        for (int64_t j = 0; j < n; j++) {
                            double s = 0.0;
                            for (int64_t p = 0; p < k; p++) {
                                double av = ta ? a[p * lda + i] : a[i * lda + p];
                                double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
                                s += av * bv;
                            }
                            ref[i * n + j] = 0.5 * s - 2.0 * c[i * ldc + j];
                        }
                    kern_gemm(ta, tb, m, n, k, 0.5f, a, lda, b, ldb, -2.0f, c, ldc);
                    for (int64_t i = 0; i < m; i++)
                        for (int64_t j = 0; j < n; j++) got[i * n + j] = c[i * ldc + j];
                    /* padding columns of C are untouched */
                    for (int64_t i = 0; i < m; i++)
                        ck_assert_msg(c[i * ldc + n] == rand_floats_at(33, i * ldc + n), "gemm wrote past n");
                    expect_close(ta ? (tb ? "gemm TT" : "gemm TN") : (tb ? "gemm NT" : "gemm NN"), m * n, got, ref, NULL,
                                 1e-5, 1e-4);
                    free(a); free(b); free(c); free(ref); free(got);
                }
    inca_set_threads(0);
}
END_TEST

START_TEST(elementwise_match_reference) {
    const int64_t rows = 300, f = 37, n = rows * f;   /* n > the parallel threshold? no: both paths below */
    float *x = rand_floats(n, 41), *y = rand_floats(n, 42), *dy = rand_floats(n, 43), *b = rand_floats(f, 44);
    double *ref = malloc((size_t)n * sizeof(double));
    float *out = malloc((size_t)n * sizeof(float));
    /* axpby with beta != 0 and beta == 0 */
    memcpy(out, y, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) ref[i] = 1.5 * x[i] - 0.25 * y[i];
    kern_axpby(n, 1.5f, x, -0.25f, out);
    expect_close("axpby", n, out, ref, NULL, 1e-6, 1e-6);
    for (int64_t i = 0; i < n; i++) { ref[i] = 3.0 * x[i]; out[i] = NAN; }
    kern_axpby(n, 3.0f, x, 0.0f, out);
    expect_close("axpby beta=0", n, out, ref, NULL, 1e-6, 1e-6);
    /* bias */
    memcpy(out, y, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) ref[i] = (double)y[i] + b[i % f];
    kern_add_bias(rows, f, b, out);
    expect_close("add_bias", n, out, ref, NULL, 1e-6, 1e-6);
    float db[37];
    double dref[37] = {0};
    for (int64_t i = 0; i < n; i++) dref[i % f] += dy[i];
    kern_bias_grad(rows, f, dy, db);
    expect_close("bias_grad", f, db, dref, NULL, 1e-4, 1e-5);
    /* relu and its gradient */
    for (int64_t i = 0; i < n; i++) ref[i] = x[i] > 0 ? x[i] : 0.0;
    kern_relu(n, x, out);
    expect_close("relu", n, out, ref, NULL, 0.0, 0.0);
    float *dx = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) ref[i] = out[i] > 0 ? dy[i] : 0.0;
    kern_relu_grad(n, out, dy, dx);
    expect_close("relu_grad", n, dx, ref, NULL, 0.0, 0.0);
    free(x); free(y); free(dy); free(b); free(ref); free(out); free(dx);
}
END_TEST

START_TEST(bias_grad_threads_bit_identical) {
    const int64_t rows = 20000, f = 64;
    float *dy = rand_floats(rows * f, 51);
    float d1[64], d2[64];
    inca_set_threads(1);
    kern_bias_grad(rows, f, dy, d1);
    inca_set_threads(2);
    kern_bias_grad(rows, f, dy, d2);
    ck_assert(memcmp(d1, d2, sizeof d1) == 0);
    free(dy);
}
END_TEST

START_TEST(dropout_rate_and_reproducibility) {
    const int64_t n = 200000;
    const float p = 0.3f;
    float *x = rand_floats(n, 61), *y1 = malloc(n * sizeof(float)), *y2 = malloc(n * sizeof(float));
    uint8_t *m1 = malloc(n), *m2 = malloc(n), *m3 = malloc(n);
    inca_set_threads(1);
    kern_dropout(n, p, 1234, 5, x, y1, m1);
    inca_set_threads(2);
    kern_dropout(n, p, 1234, 5, x, y2, m2);
    ck_assert(memcmp(m1, m2, (size_t)n) == 0);
    ck_assert(memcmp(y1, y2, (size_t)n * sizeof(float)) == 0);
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        kept += m1[i];
        /* the mask is exactly the documented rule, and kept values are scaled by 1/(1-p) */
        ck_assert_int_eq(m1[i], rng_hash_uniform(1234, 5, (uint64_t)i) >= p);
        float want = m1[i] ? x[i] / (1.0f - p) : 0.0f;
        ck_assert(fabsf(y1[i] - want) <= 1e-6f * fabsf(want));
    }
    /* keep rate 0.7 +- 5 standard deviations (sqrt(0.21/n) = 0.001) */
    double rate = (double)kept / (double)n;
    ck_assert_msg(fabs(rate - 0.7) < 0.005, "keep rate %.4f", rate);
    /* another stream gives another mask (agreement about 0.7^2 + 0.3^2 = 0.58) */
    kern_dropout(n, p, 1234, 6, x, y2, m3);
    int64_t same = 0;
    for (int64_t i = 0; i < n; i++) same += m1[i] == m3[i];
    ck_assert(fabs((double)same / n - 0.58) < 0.01);
    /* gradient: dx = dy / (1-p) where kept */
    float *dx = malloc(n * sizeof(float));
    kern_dropout_grad(n, p, m1, x, dx);
    for (int64_t i = 0; i < n; i++) ck_assert(dx[i] == (m1[i] ? x[i] * (1.0f / (1.0f - p)) : 0.0f));
    /* p = 0 is the identity, p = 1 drops everything */
    kern_dropout(n, 0.0f, 1, 1, x, y2, m3);
    ck_assert(memcmp(x, y2, (size_t)n * sizeof(float)) == 0);
    kern_dropout(n, 1.0f, 1, 1, x, y2, m3);
    for (int64_t i = 0; i < n; i++) ck_assert(y2[i] == 0.0f && m3[i] == 0);
    free(x); free(y1); free(y2); free(m1); free(m2); free(m3); free(dx);
}
END_TEST

START_TEST(softmax_xent_reference_and_gradient) {
    const int64_t rows = 9, c = 5;
    float *z = rand_floats(rows * c, 71);
    for (int64_t i = 0; i < rows * c; i++) z[i] *= 4.0f;
    int32_t y[9] = {0, 4, -1, 2, 3, 1, -1, 0, 2};
    int64_t idx[6] = {0, 1, 2, 4, 6, 8};   /* rows 2 and 6 unlabelled: ignored */
    float logp[45], d[45];
    double loss = kern_softmax_xent(rows, c, z, y, idx, 6, logp, d);
    /* reference */
    double ref = 0.0;
    for (int64_t i = 0; i < rows; i++) {
        double s = 0.0;
        for (int64_t k = 0; k < c; k++) s += exp((double)z[i * c + k]);
        for (int64_t k = 0; k < c; k++)
            ck_assert(fabs(logp[i * c + k] - ((double)z[i * c + k] - log(s))) < 1e-5);
    }
    for (int t = 0; t < 6; t++) {
        int64_t i = idx[t];
        if (y[i] < 0) continue;
        double s = 0.0;
        for (int64_t k = 0; k < c; k++) s += exp((double)z[i * c + k]);
        ref += log(s) - z[i * c + y[i]];
    }
    ref /= 4.0;
    ck_assert_msg(fabs(loss - ref) < 1e-12 * fabs(ref) + 1e-12, "loss %.15g ref %.15g", loss, ref);
    /* central finite differences of the returned (double) loss */
    for (int64_t e = 0; e < rows * c; e++) {
        float z0 = z[e];
        z[e] = z0 + 1e-3f;
        const double zp = z[e];
        double lp = kern_softmax_xent(rows, c, z, y, idx, 6, logp, NULL);
        z[e] = z0 - 1e-3f;
        const double zm = z[e];
        double lm = kern_softmax_xent(rows, c, z, y, idx, 6, logp, NULL);
        z[e] = z0;
        double fd = (lp - lm) / (zp - zm);
        ck_assert_msg(fabs(fd - d[e]) < 1e-6 + 1e-5 * fabs(fd), "dlogits[%lld] %.9g fd %.9g",
                      (long long)e, d[e], fd);
        int64_t row = e / c;
        if (row == 3 || row == 5 || row == 7 || y[row] < 0) ck_assert(d[e] == 0.0f);
    }
    /* nothing counted: loss 0, gradient 0; bad label or row: NaN */
    int64_t only_unlabelled[2] = {2, 6};
    ck_assert(kern_softmax_xent(rows, c, z, y, only_unlabelled, 2, logp, d) == 0.0);
    for (int64_t e = 0; e < rows * c; e++) ck_assert(d[e] == 0.0f);
    int32_t bad[9] = {0, 5, 0, 0, 0, 0, 0, 0, 0};
    ck_assert(isnan(kern_softmax_xent(rows, c, z, bad, idx, 6, logp, d)));
    int64_t out_of_range[1] = {9};
    ck_assert(isnan(kern_softmax_xent(rows, c, z, y, out_of_range, 1, logp, d)));
    free(z);
}
END_TEST

/* Rows past the kernel's parallel threshold: 1 and 2 threads give the same loss and gradient
 * bits; both agree with a double reference; a row listed twice (the serial path) gets twice the
 * gradient of one listing and counts twice in the mean. */
START_TEST(softmax_xent_parallel_rows) {
    const int64_t rows = 12000, c = 8, nidx = 9000;
    float *z = rand_floats(rows * c, 72);
    int32_t *y = malloc((size_t)rows * sizeof *y);
    int64_t *idx = malloc((size_t)(nidx + 1) * sizeof *idx);
    float *d1 = malloc((size_t)(rows * c) * sizeof *d1), *d2 = malloc((size_t)(rows * c) * sizeof *d2);
    ck_assert(z && y && idx && d1 && d2);
    for (int64_t i = 0; i < rows; i++) y[i] = i % 7 == 3 ? -1 : (int32_t)((i * 5) % c);
    for (int64_t t = 0; t < nidx; t++) idx[t] = t + t / 3;   /* increasing, with gaps */
    inca_set_threads(1);
    const double l1 = kern_softmax_xent(rows, c, z, y, idx, nidx, NULL, d1);
    inca_set_threads(2);
    const double l2 = kern_softmax_xent(rows, c, z, y, idx, nidx, NULL, d2);
    ck_assert_msg(memcmp(&l1, &l2, sizeof l1) == 0, "loss %.17g vs %.17g", l1, l2);
    ck_assert(memcmp(d1, d2, (size_t)(rows * c) * sizeof *d1) == 0);
    double ref = 0.0;
    int64_t counted = 0;
    for (int64_t t = 0; t < nidx; t++) {
        const int64_t i = idx[t];
        if (y[i] < 0) continue;
        double s = 0.0;
        for (int64_t k = 0; k < c; k++) s += exp((double)z[i * c + k]);
        ref += log(s) - z[i * c + y[i]];
        counted++;
    }
    ck_assert(counted > nidx / 2 && counted < nidx);
    ck_assert_msg(fabs(l2 - ref / (double)counted) < 1e-12, "loss %.15g ref %.15g", l2, ref / (double)counted);
    for (int64_t t = 0; t < nidx; t++) {
        const int64_t i = idx[t];
        if (y[i] < 0) continue;
        double s = 0.0;
        for (int64_t k = 0; k < c; k++) s += exp((double)z[i * c + k]);
        for (int64_t k = 0; k < c; k++) {
            const double g = (exp((double)z[i * c + k]) / s - (k == y[i])) / (double)counted;
            ck_assert(fabs(d2[i * c + k] - g) < 1e-9);
        }
    }
    /* row idx[1] listed again at the end: not increasing, so the gradient is written serially */
    idx[nidx] = idx[1];
    const double l3 = kern_softmax_xent(rows, c, z, y, idx, nidx + 1, NULL, d1);
    const int64_t r = idx[1];
    double s = 0.0;
    for (int64_t k = 0; k < c; k++) s += exp((double)z[r * c + k]);
    ck_assert(fabs(l3 - (ref + log(s) - z[r * c + y[r]]) / (double)(counted + 1)) < 1e-12);
    for (int64_t k = 0; k < c; k++) {
        const double g = 2.0 * (exp((double)z[r * c + k]) / s - (k == y[r])) / (double)(counted + 1);
        ck_assert(fabs(d1[r * c + k] - g) < 1e-9);
    }
    inca_set_threads(0);
    free(z); free(y); free(idx); free(d1); free(d2);
}
END_TEST

START_TEST(softmax_xent_large_logits_stable) {
    float z[3] = {1000.0f, 0.0f, -1000.0f};
    int32_t y[1] = {0};
    int64_t idx[1] = {0};
    float logp[3], d[3];
    double loss = kern_softmax_xent(1, 3, z, y, idx, 1, logp, d);
    ck_assert(loss >= 0.0 && loss < 1e-300);
    ck_assert(isfinite(logp[2]) && fabs(logp[2] + 2000.0f) < 1e-3);
    y[0] = 2;
    loss = kern_softmax_xent(1, 3, z, y, idx, 1, logp, d);
    ck_assert(fabs(loss - 2000.0) < 1e-9);
    ck_assert(fabsf(d[0] - 1.0f) < 1e-6f && fabsf(d[2] + 1.0f) < 1e-6f);
}
END_TEST

START_TEST(accuracy_as_ogb) {
    /* 5 rows, 3 classes */
    float s[15] = {
        0.1f, 0.7f, 0.2f,   /* argmax 1 */
        0.5f, 0.5f, 0.1f,   /* tie 0/1 -> 0 */
        0.2f, 0.2f, 0.9f,   /* argmax 2 */
        0.9f, 0.0f, 0.0f,   /* unlabelled */
        0.3f, 0.3f, 0.3f,   /* all tied -> 0 */
    };
    int32_t y[5] = {1, 1, 2, -1, 0};
    int64_t idx[5] = {0, 1, 2, 3, 4};
    ck_assert(fabs(kern_accuracy(3, s, y, idx, 5) - 3.0 / 4.0) < 1e-15);
    int64_t sub[2] = {1, 3};
    ck_assert(kern_accuracy(3, s, y, sub, 2) == 0.0);
    int64_t none[1] = {3};
    ck_assert(kern_accuracy(3, s, y, none, 1) == 0.0);
}
END_TEST


/* kern_class_metrics by hand with a class that is predicted but never true: it counts in macro F1
 * with F1 = 0 (scikit-learn's f1_score(average="macro") over the labels of y_true and y_pred),
 * not in balanced accuracy. Rows: labels 0, 0, 1 predicted 0, 2, 1: F1 2/3, 1, 0; recalls 1/2, 1. */
START_TEST(class_metrics_predicted_only_class) {
    const float s[9] = {0.9f, 0.0f, 0.1f, 0.1f, 0.2f, 0.7f, 0.0f, 0.8f, 0.2f};
    const int32_t y[3] = {0, 0, 1};
    const int64_t idx[3] = {0, 1, 2};
    int64_t cnt[9] = {0};
    kern_class_counts(3, s, y, idx, 3, cnt);
    const int64_t want[9] = {2, 1, 0, 1, 1, 1, 1, 1, 0};   /* true, predicted, correct per class */
    for (int k = 0; k < 9; k++) ck_assert_int_eq(cnt[k], want[k]);
    double bacc = -1, f1 = -1;
    kern_class_metrics(3, cnt, &bacc, &f1);
    ck_assert_double_eq_tol(bacc, (0.5 + 1.0) / 2, 1e-15);
    ck_assert_double_eq_tol(f1, (2.0 / 3 + 1.0 + 0.0) / 3, 1e-15);
}
END_TEST

/* BatchNorm in evaluation: y = g (x - running mean) / sqrt(running var + eps) + b with eps =
 * 1e-5 as torch.nn.BatchNorm1d, against a double loop here; a running variance of 0 (a constant
 * feature) gives a finite 1/sqrt(eps) scale. The running statistics are left as they were. */
START_TEST(bn_eval_uses_running_stats_with_eps) {
    enum { N = 3, F = 3 };
    float x[N * F] = {3.0f, 1.0f, 0.5f, -1.0f, -5.0f, 2.0f, 1.0f, 0.25f, -0.75f}, xh[N * F], y[N * F], istd[F];
    float rm[F] = {1.0f, -2.0f, 0.0f}, rv[F] = {0.0f, 3.0f, 0.04f};
    const float g[F] = {2.0f, 0.5f, -1.5f}, b[F] = {0.25f, -1.0f, 0.0f};
    memcpy(xh, x, sizeof x);
    kern_bn_forward(N, F, 0, xh, g, b, istd, rm, rv, y);
    const double rm0[F] = {1.0, -2.0, 0.0}, rv0[F] = {0.0, 3.0, 0.04};
    for (int k = 0; k < F; k++) {
        const double is = 1.0 / sqrt(rv0[k] + 1e-5);
        ck_assert_msg(fabs(istd[k] - is) <= 1e-6 * is, "istd[%d] %.9g vs %.9g", k, istd[k], is);
        ck_assert(rm[k] == (float)rm0[k] && rv[k] == (float)rv0[k]);
        for (int i = 0; i < N; i++) {
            const double want = g[k] * ((double)x[i * F + k] - rm0[k]) * is + b[k];
            ck_assert_msg(fabs(y[i * F + k] - want) <= 1e-5 * (1.0 + fabs(want)), "y[%d,%d] %.9g vs %.9g", i, k,
                          y[i * F + k], want);
        }
    }
}
END_TEST

/* GEMM with k = 0: C = beta C, and with beta = 0 C is not read (the BLAS rule), so NaN in C
 * does not leak: zeros. */
START_TEST(gemm_k0_scales_c) {
    const float a[1] = {1.0f}, bm[1] = {1.0f};
    float c[6], c2[6];
    for (int i = 0; i < 6; i++) {
        c[i] = NAN;
        c2[i] = (float)i - 2.5f;
    }
    kern_gemm(0, 0, 2, 3, 0, 1.0f, a, 1, bm, 3, 0.0f, c, 3);
    for (int i = 0; i < 6; i++) ck_assert_msg(c[i] == 0.0f && !signbit(c[i]), "c[%d] = %g", i, c[i]);
    kern_gemm(1, 1, 2, 3, 0, 1.0f, a, 2, bm, 1, -2.0f, c2, 3);
    for (int i = 0; i < 6; i++) ck_assert(c2[i] == -2.0f * ((float)i - 2.5f));
}
END_TEST

/* `inca bench spmm` on a tiny graph: runs, prints one JSON line per (ordering, F) plus a summary
 * whose counts are consistent (no speed asserted). */
START_TEST(bench_spmm_smoke) {
    char *out = NULL, *err = NULL;
    int rc = tu_inca("bench spmm --nodes 3000 --avg-degree 6 --features 4,9 --reps 1 --parts 4 --threads 2", &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err ? err : "");
    int lines = 0;
    for (const char *p = out; *p; p++) lines += *p == '\n';
    ck_assert_int_eq(lines, 5);   /* 2 orderings x 2 widths + summary */
    const char *last = tu_last_line(out);
    double nnz = tu_json_num(last, "nnz");
    /* GCN-normalised R-MAT: every node has its self-loop, at most N*D stored edges plus N */
    ck_assert(nnz >= 3000 && nnz <= 3000 * 7);
    ck_assert(tu_json_num(last, "edge_cut") > 0);
    ck_assert(strstr(last, "\"copy_gbs\":[") != NULL && strstr(last, "\"metis_gain\":[") != NULL);
    ck_assert(strstr(out, "\"ordering\":\"metis\",\"features\":9") != NULL);
    free(out);
    free(err);
    rc = tu_inca("bench spmm --features 0", &out, &err);
    ck_assert_int_eq(rc, 2);
    ck_assert(err && strstr(err, "--features") != NULL);
    free(out);
    free(err);
}
END_TEST

int main(void) {
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, spmm_matches_reference);
    tcase_add_test(tc, spmm_t_symmetric_without_transpose);
    tcase_add_test(tc, spmm_base_matches_pull_then_spmm);
    tcase_add_test(tc, spmm_bf16_and_row_views);
    tcase_add_test(tc, spmm_threads_bit_identical);
    tcase_add_test(tc, gemm_matches_reference);
    tcase_add_test(tc, rows_sub_matches_loops);
    tcase_add_test(tc, elementwise_match_reference);
    tcase_add_test(tc, bias_grad_threads_bit_identical);
    tcase_add_test(tc, dropout_rate_and_reproducibility);
    tcase_add_test(tc, softmax_xent_reference_and_gradient);
    tcase_add_test(tc, softmax_xent_large_logits_stable);
    tcase_add_test(tc, softmax_xent_parallel_rows);
    tcase_add_test(tc, accuracy_as_ogb);
    tcase_add_test(tc, class_metrics_predicted_only_class);
    tcase_add_test(tc, bn_eval_uses_running_stats_with_eps);
    tcase_add_test(tc, gemm_k0_scales_c);
    tcase_add_test(tc, bench_spmm_smoke);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
