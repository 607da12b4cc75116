/* CPU dense kernels: GEMM through CBLAS (OpenBLAS by default, any CBLAS: CMakeLists.txt INCA_BLAS), and the elementwise ops (axpby, bias, ReLU,
 * counter-based dropout). Elementwise loops are split statically across OpenMP threads and each
 * output element is computed by exactly one thread, so results do not depend on the thread count.
 * Tested in test_kernels.c against naive double references. */
#include "kernels/kernels.h"
#include "core/rng.h"
#include "core/util.h"
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

/* Below this many elements the loops run on one thread (thread start-up would dominate). */
#define KERN_PAR_MIN 32768

void kern_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {   /* C = beta C (BLAS does this too, but some builds read A/B) */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return;
    }
    const enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
    /* OpenBLAS runs single-threaded (inca_set_threads): its own pthread pool and OpenMP's
     * spin-waiting against each other made small GEMMs several times slower on 2 cores. The
     * parallelism comes from OpenMP here instead: C is cut into one block of rows (or of
     * columns, when C is wide and short) per thread, each an independent sgemm. Blocks depend
     * only on the thread count, so results are deterministic for a fixed count. */
    inca_threads();   /* first use: pins OpenBLAS to one thread */
    const int T = omp_get_max_threads();
    const double flops = 2.0 * (double)m * (double)n * (double)k;
    if (T <= 1 || flops < 4e6 || omp_in_parallel()) {
        cblas_sgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, alpha, a, (int)lda, b,
                    (int)ldb, beta, c, (int)ldc);
        return;
    }
    const int by_rows = m >= n || m >= 8 * (int64_t)T;
#pragma omp parallel for schedule(static) num_threads(T)
    for (int t = 0; t < T; t++) {
        if (by_rows) {
            int64_t r0 = m * t / T, r1 = m * (t + 1) / T;
            if (r1 <= r0) continue;
            const float *ab = trans_a ? a + r0 : a + r0 * lda;   /* op(A) rows r0..r1 */
            cblas_sgemm(CblasRowMajor, ta, tb, (int)(r1 - r0), (int)n, (int)k, alpha, ab, (int)lda,
                        b, (int)ldb, beta, c + r0 * ldc, (int)ldc);
        } else {
            int64_t c0 = n * t / T, c1 = n * (t + 1) / T;
            if (c1 <= c0) continue;
            const float *bb = trans_b ? b + c0 * ldb : b + c0;   /* op(B) columns c0..c1 */
            cblas_sgemm(CblasRowMajor, ta, tb, (int)m, (int)(c1 - c0), (int)k, alpha, a, (int)lda,
                        bb, (int)ldb, beta, c + c0, (int)ldc);
        }
    }
}

void kern_axpby(int64_t n, float alpha, const float *restrict x, float beta, float *restrict y) {
    if (beta == 0.0f) {
#pragma omp parallel for schedule(static) if (n >= KERN_PAR_MIN)
        for (int64_t i = 0; i < n; i++) y[i] = alpha * x[i];
    } else {
#pragma omp parallel for schedule(static) if (n >= KERN_PAR_MIN)
        for (int64_t i = 0; i < n; i++) y[i] = alpha * x[i] + beta * y[i];
    }
}

void kern_add_bias(int64_t rows, int64_t f, const float *restrict b, float *restrict y) {
#pragma omp parallel for schedule(static) if (rows * f >= KERN_PAR_MIN)
    for (int64_t i = 0; i < rows; i++) {
        float *restrict yr = y + i * f;
        for (int64_t k = 0; k < f; k++) yr[k] += b[k];
    }
}

void kern_bias_grad(int64_t rows, int64_t f, const float *restrict dy, float *restrict db) {
    /* Each thread owns a contiguous range of at least 256 columns and sums it over the rows in
     * one sweep, each column in ascending row order, so the bits do not depend on the thread
     * count. Narrower ranges lose to one thread streaming whole rows (rows of 1 KB at F = 256:
     * 4.3 ms alone vs 11-14 ms split in two halves; a sweep per 16-column block took 14-22 ms). */
    const int64_t nblk = (f + 255) / 256;
    int nt = inca_threads();
    if (nt > nblk) nt = (int)nblk;
#pragma omp parallel num_threads(nt) if (rows * f >= KERN_PAR_MIN && nt > 1)
    {
        const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
        const int64_t k0 = nblk * t / T * 256, k1e = nblk * (t + 1) / T * 256, k1 = k1e < f ? k1e : f;
        for (int64_t k = k0; k < k1; k++) db[k] = 0.0f;
        for (int64_t i = 0; i < rows && k0 < k1; i++) {
            const float *restrict r = dy + i * f;
            for (int64_t k = k0; k < k1; k++) db[k] += r[k];
        }
    }
}

void kern_relu(int64_t n, const float *restrict x, float *restrict y) {
#pragma omp parallel for schedule(static) if (n >= KERN_PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f || x[i] != x[i] ? x[i] : 0.0f;   /* NaN passes (see kb_relu) */
}

void kern_relu_grad(int64_t n, const float *restrict y, const float *restrict dy, float *restrict dx) {
#pragma omp parallel for schedule(static) if (n >= KERN_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {   /* branch-free: half the units are off, a coin flip */
        uint32_t b, m = 0u - (uint32_t)(y[i] > 0.0f);
        memcpy(&b, &dy[i], sizeof b);
        b &= m;
        memcpy(&dx[i], &b, sizeof b);
    }
}

/* x * scale when keep (0 or 1), else +0.0f, without a branch: the product's bits are masked
 * (a kept/dropped branch is a coin flip the CPU mispredicts half the time). */
static inline float masked_scale(float x, float scale, uint32_t keep) {
    const float v = x * scale;
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    b &= 0u - keep;
    float r;
    memcpy(&r, &b, sizeof r);
    return r;
}

/* 1 iff rng_hash_at_uniform(key, i) >= p, with thr = ceil(p * 2^24): u * 2^-24 >= p with
 * u = hash >> 40 < 2^24 (both sides exact in float) <=> u >= ceil(p * 2^24). */
static inline uint32_t dropout_keep(uint64_t key, uint64_t thr, int64_t i) {
    return (uint32_t)((rng_hash_at(key, (uint64_t)i) >> 40) >= thr);
}

/* y[i] (and mask[i]) for i in [lo, hi). Cloned for AVX-512 and AVX2 and picked at load time:
 * the hash's two 64-bit multiplies per element vectorise only with AVX-512DQ's vpmullq (the
 * integer maths and the one float product are the same in every clone, so are the bits). Called
 * per thread on its range: clones do not reach the bodies OpenMP outlines. */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) static void
dropout_range(int64_t lo, int64_t hi, float scale, uint64_t key, uint64_t thr, const float *restrict x,
              float *restrict y, uint8_t *restrict mask) {
    if (mask) {
        for (int64_t i = lo; i < hi; i++) {
            const uint32_t keep = dropout_keep(key, thr, i);
            y[i] = masked_scale(x[i], scale, keep);
            mask[i] = (uint8_t)keep;
        }
    } else {
        for (int64_t i = lo; i < hi; i++) y[i] = masked_scale(x[i], scale, dropout_keep(key, thr, i));
    }
}

void kern_dropout(int64_t n, float p, uint64_t seed, uint64_t stream, const float *x, float *y, uint8_t *mask) {
    if (p <= 0.0f) {
        if (y != x) memmove(y, x, (size_t)n * sizeof(float));
        if (mask) memset(mask, 1, (size_t)n);
        return;
    }
    if (p >= 1.0f) {   /* everything dropped; no 1/(1-p) */
        memset(y, 0, (size_t)n * sizeof(float));
        if (mask) memset(mask, 0, (size_t)n);
        return;
    }
    const float scale = 1.0f / (1.0f - p);
    const uint64_t key = rng_hash_key(seed, stream);   /* mixed once, not per element */
    /* branch-free (dropout_keep, masked_scale); a dropped element is +0.0f as before */
    const uint64_t thr = (uint64_t)ceilf(p * 16777216.0f);
    if (x == y) {   /* in place: the restrict ranges would alias; keep the plain loop */
#pragma omp parallel for schedule(static) if (n >= KERN_PAR_MIN)
        for (int64_t i = 0; i < n; i++) {
            const uint32_t keep = dropout_keep(key, thr, i);
            y[i] = masked_scale(x[i], scale, keep);
            if (mask) mask[i] = (uint8_t)keep;
        }
        return;
    }
#pragma omp parallel if (n >= KERN_PAR_MIN)
    {
        const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
        dropout_range(n * t / T, n * (t + 1) / T, scale, key, thr, x, y, mask);
    }
}

void kern_dropout_grad(int64_t n, float p, const uint8_t *mask, const float *dy, float *dx) {
    if (p <= 0.0f) {
        if (dx != dy) memmove(dx, dy, (size_t)n * sizeof(float));
        return;
    }
    if (p >= 1.0f) {
        memset(dx, 0, (size_t)n * sizeof(float));
        return;
    }
    const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static) if (n >= KERN_PAR_MIN)
    for (int64_t i = 0; i < n; i++) dx[i] = masked_scale(dy[i], scale, (uint32_t)(mask[i] != 0));
}

void kern_bias_relu(int64_t rows, int64_t f, const float *b, const float *z, float *y) {
#pragma omp parallel for schedule(static) if (rows * f >= KERN_PAR_MIN)
    for (int64_t i = 0; i < rows; i++) {
        const float *zr = z + i * f;
        float *yr = y + i * f;
        for (int64_t k = 0; k < f; k++) {
            const float v = zr[k] + b[k];
            yr[k] = v > 0.0f || v != v ? v : 0.0f;
        }
    }
}

void kern_relu_drop_grad(int64_t n, const float *y, const float *dy, float p, const uint8_t *mask, float *dx) {
    if (p <= 0.0f || p >= 1.0f || !mask) {   /* the dropout gradient is a copy or zeros */
        if (p >= 1.0f) memset(dx, 0, (size_t)n * sizeof(float));
        else kern_relu_grad(n, y, dy, dx);
        return;
    }
    const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static) if (n >= KERN_PAR_MIN)
    for (int64_t i = 0; i < n; i++)   /* both masks on the product's bits, as the two ops apply them */
        dx[i] = masked_scale(dy[i], scale, (uint32_t)(mask[i] != 0) & (uint32_t)(y[i] > 0.0f));
}
