/* CPU CSR SpMM: Y = alpha A X + beta Y and its transpose through a precomputed Aᵀ. Rows are
 * split across OpenMP threads into ranges of equal (nonzeros + rows), found by binary search on
 * rowptr, so power-law rows do not pile onto one thread; each row is summed by one thread in
 * column order, so results are bit-identical for any thread count. Tested in test_kernels.c
 * against a naive double-precision reference; speed measured by `inca bench spmm`. */
#include "kernels/kernels.h"
#include "core/status.h"
#include "core/util.h"
#include <omp.h>
#include <stddef.h>
#include <string.h>

/* Floats accumulated on the stack per row; wider F is processed in panels of this width. */
#define SPMM_PANEL 64
/* How far ahead the gathered X row is prefetched: about 4 KiB of rows, between 4 and 32
 * nonzeros (tuned with `inca bench spmm` on R-MAT: 32 at F = 16, 16 at F = 64). */
static inline int64_t spmm_prefetch_distance(int64_t w) {
    int64_t d = 1024 / (w > 0 ? w : 1);
    return d < 4 ? 4 : d > 32 ? 32 : d;
}

/* First row r in [0, n] with rowptr[r] - rowptr[0] + r >= target (strictly increasing in r;
 * rowptr[0] is not 0 for a row view, csr_row_view). */
static int64_t spmm_row_search(const int64_t *rowptr, int64_t n, int64_t target) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (rowptr[mid] - rowptr[0] + mid < target) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Prefetch locality hint: 3 keeps the lines in every cache level (hub rows are reused). */
#ifndef SPMM_PREFETCH_LOCALITY
#define SPMM_PREFETCH_LOCALITY 3
#endif

/* Prefetch the first cache lines of row `c` of X (width w floats starting at column f0). */
static inline void spmm_prefetch_row(const float *x, int64_t ldx, int32_t c, int64_t f0, int64_t w) {
    const char *p = (const char *)(x + (int64_t)c * ldx + f0);
    int64_t bytes = w * (int64_t)sizeof(float);
    for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 0, SPMM_PREFETCH_LOCALITY);
}

/* 4 floats in one SSE register (GCC vector extension); loads and stores go through memcpy, so
 * rows need no alignment. Lanes are independent: the sum order per element is the same as the
 * scalar loop's, so results are identical whichever path runs. */
typedef float spmm_v4 __attribute__((vector_size(16)));

/* acc[0..4*nv) = Σ_j v_j X[col_j, f0..) for the nonzeros [b, e) (v_j = 1 without values), with
 * the accumulators held in nv vector registers (nv = 4, 8 or 16: F = 16, 32, 64). The X row
 * spmm_prefetch_distance nonzeros ahead (below pe) is prefetched. Always inlined with constant
 * has_val and nv, so each case is one fully unrolled loop. (Plain loops over a small stack
 * array get half-scalarised by GCC's SRA here, measured 40% slower at F = 16.) */
static inline __attribute__((always_inline)) void
spmm_row_vec(const int32_t *restrict col, const float *restrict val, const int has_val, int64_t b,
             int64_t e, int64_t pe, const float *restrict x, int64_t ldx, int64_t f0, const int nv,
             float *restrict acc) {
    const int64_t pd = spmm_prefetch_distance(4 * nv);
    spmm_v4 s[16];
    for (int i = 0; i < nv; i++) s[i] = (spmm_v4){0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t j = b; j < e; j++) {
        if (j + pd < pe) spmm_prefetch_row(x, ldx, col[j + pd], f0, 4 * nv);
        const float *restrict xr = x + (int64_t)col[j] * ldx + f0;
        if (has_val) {
            const float v = val[j];
            const spmm_v4 vv = {v, v, v, v};
            for (int i = 0; i < nv; i++) {
                spmm_v4 t;
                memcpy(&t, xr + 4 * i, sizeof t);
                s[i] += vv * t;
            }
        } else {
            for (int i = 0; i < nv; i++) {
                spmm_v4 t;
                memcpy(&t, xr + 4 * i, sizeof t);
                s[i] += t;
            }
        }
    }
    for (int i = 0; i < nv; i++) memcpy(acc + 4 * i, &s[i], sizeof s[i]);
}

/* The same for any width w <= SPMM_PANEL, accumulating in memory (acc stays in L1). */
static void spmm_row_any(const int32_t *restrict col, const float *restrict val, int64_t b,
                         int64_t e, int64_t pe, const float *restrict x, int64_t ldx, int64_t f0,
                         int64_t w, float *restrict acc) {
    const int64_t pd = spmm_prefetch_distance(w);
    for (int64_t k = 0; k < w; k++) acc[k] = 0.0f;
    for (int64_t j = b; j < e; j++) {
        if (j + pd < pe) spmm_prefetch_row(x, ldx, col[j + pd], f0, w);
        const float *restrict xr = x + (int64_t)col[j] * ldx + f0;
        if (val) {
            const float v = val[j];
            for (int64_t k = 0; k < w; k++) acc[k] += v * xr[k];
        } else {
            for (int64_t k = 0; k < w; k++) acc[k] += xr[k];
        }
    }
}

/* Y[r, f0 .. f0+w) = alpha acc + beta Y[r, f0 .. f0+w). With beta = 0, Y is not read: garbage
 * (even NaN) in Y does not leak. */
static inline void spmm_store(float *restrict yt, const float *restrict acc, int64_t w, float alpha, float beta) {
    if (beta == 0.0f) {
        if (alpha == 1.0f) for (int64_t k = 0; k < w; k++) yt[k] = acc[k];
        else for (int64_t k = 0; k < w; k++) yt[k] = alpha * acc[k];
    } else {
        for (int64_t k = 0; k < w; k++) yt[k] = alpha * acc[k] + beta * yt[k];
    }
}

/* Rows [r0, r1) of Y, all F columns, for one has_val case, in column panels of SPMM_PANEL
 * floats with the panel loop outside the row loop: for wide F one pass over the rows gathers
 * only 256 bytes per nonzero, and the panel of X it reads can stay in the last-level cache while
 * the rows sweep it. Each element is still summed by one thread in column order, so results do
 * not depend on the panelling. Measured with `inca bench spmm --ordering random --threads 2`
 * against whole rows at a time: F = 256, 1M rows x 40: 1.31 s vs 1.53 s; F = 128, 125k rows x
 * 11: 0.021 s vs 0.032 s. Prefetch runs ahead across row ends, up to the end of this thread's
 * nonzeros. */
static inline __attribute__((always_inline)) void
spmm_rows_case(const csr_t *a, const int has_val, const float *restrict x, int64_t f, float alpha,
               float beta, const float *restrict base, const int64_t *restrict ids, float *restrict y,
               int64_t r0, int64_t r1) {
    float acc[SPMM_PANEL] __attribute__((aligned(64)));
    const int64_t *rowptr = a->rowptr;
    const int32_t *col = a->col;
    const float *val = a->val;
    const int64_t pe = rowptr[r1];
    for (int64_t f0 = 0; f0 < f; f0 += SPMM_PANEL) {
        const int64_t w = f - f0 < SPMM_PANEL ? f - f0 : SPMM_PANEL;
        for (int64_t r = r0; r < r1; r++) {
            const int64_t b = rowptr[r], e = rowptr[r + 1];
            switch (w) {
            case 16: spmm_row_vec(col, val, has_val, b, e, pe, x, f, f0, 4, acc); break;
            case 32: spmm_row_vec(col, val, has_val, b, e, pe, x, f, f0, 8, acc); break;
            case 64: spmm_row_vec(col, val, has_val, b, e, pe, x, f, f0, 16, acc); break;
            default: spmm_row_any(col, has_val ? val : NULL, b, e, pe, x, f, f0, w, acc); break;
            }
            if (base) {   /* acc + B row: the bits of 1 * acc + 1 * (copied row) */
                const float *restrict br = base + ids[r] * f + f0;
                float *restrict yt = y + r * f + f0;
                for (int64_t k = 0; k < w; k++) yt[k] = acc[k] + br[k];
            } else {
                spmm_store(y + r * f + f0, acc, w, alpha, beta);
            }
        }
    }
}

static void spmm_rows(const csr_t *a, const float *x, int64_t f, float alpha, float beta, const float *base,
                      const int64_t *ids, float *y, int64_t r0, int64_t r1) {
    if (a->val) spmm_rows_case(a, 1, x, f, alpha, beta, base, ids, y, r0, r1);
    else spmm_rows_case(a, 0, x, f, alpha, beta, base, ids, y, r0, r1);
}

static int spmm_check(const csr_t *a, const float *x, int64_t f, const float *y) {
    if (!a || !a->rowptr || (a->nnz > 0 && !a->col))
        return inca_fail(INCA_EINVAL, "kern_spmm: expected a CSR with rowptr and col arrays");
    if (a->n_rows < 0 || a->n_cols < 0 || f <= 0)
        return inca_fail(INCA_EINVAL, "kern_spmm: expected n_rows, n_cols >= 0 and f > 0, got %lld x %lld, f = %lld",
                         (long long)a->n_rows, (long long)a->n_cols, (long long)f);
    if (a->n_rows > 0 && (!y || (a->n_cols > 0 && !x)))
        return inca_fail(INCA_EINVAL, "kern_spmm: X and Y must not be NULL");
    return INCA_OK;
}

/* Rows split across threads by (nonzeros + rows); base/ids NULL for the alpha/beta form. */
static void spmm_run(const csr_t *a, const float *x, int64_t f, float alpha, float beta, const float *base,
                     const int64_t *ids, float *y) {
    const int64_t n = a->n_rows;
    const int64_t total = a->rowptr[n] - a->rowptr[0] + n;
    int nt = inca_threads();
    /* Do not spread a tiny product over threads: about 64K floats of work per thread. */
    int64_t work = total * f;
    int64_t max_nt = work / 65536 + 1;
    if (nt > max_nt) nt = (int)max_nt;
    if (nt <= 1) {
        spmm_rows(a, x, f, alpha, beta, base, ids, y, 0, n);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        int64_t r0 = spmm_row_search(a->rowptr, n, (int64_t)((__int128)total * t / T));
        int64_t r1 = spmm_row_search(a->rowptr, n, (int64_t)((__int128)total * (t + 1) / T));
        if (t == T - 1) r1 = n;
        spmm_rows(a, x, f, alpha, beta, base, ids, y, r0, r1);
    }
}

int kern_spmm(const csr_t *a, const float *x, int64_t f, float alpha, float beta, float *y) {
    int rc = spmm_check(a, x, f, y);
    if (rc != INCA_OK || a->n_rows == 0) return rc;
    spmm_run(a, x, f, alpha, beta, NULL, NULL, y);
    return INCA_OK;
}

int kern_spmm_base(const csr_t *a, const float *x, int64_t f, const float *base, int64_t n_base,
                   const int64_t *ids, float *y) {
    int rc = spmm_check(a, x, f, y);
    if (rc != INCA_OK || a->n_rows == 0) return rc;
    if (!base || !ids) return inca_fail(INCA_EINVAL, "kern_spmm_base: base rows and their ids must not be NULL");
    for (int64_t r = 0; r < a->n_rows; r++)
        if (ids[r] < 0 || ids[r] >= n_base)
            return inca_fail(INCA_EINVAL, "kern_spmm_base: row %lld takes base row %lld, expected 0..%lld",
                             (long long)r, (long long)ids[r], (long long)n_base - 1);
    spmm_run(a, x, f, 1.0f, 1.0f, base, ids, y);
    return INCA_OK;
}

int kern_spmm_t(const csr_t *a, const csr_t *at, const float *x, int64_t f, float alpha, float beta, float *y) {
    if (!a) return inca_fail(INCA_EINVAL, "kern_spmm_t: A is NULL");
    if (!at) {
        if (a->n_rows != a->n_cols)
            return inca_fail(INCA_EINVAL, "kern_spmm_t: A is %lld x %lld, not square: pass its transpose",
                             (long long)a->n_rows, (long long)a->n_cols);
        return kern_spmm(a, x, f, alpha, beta, y);
    }
    if (at->n_rows != a->n_cols || at->n_cols != a->n_rows || at->nnz != a->nnz)
        return inca_fail(INCA_EINVAL, "kern_spmm_t: Aᵀ is %lld x %lld with %lld nonzeros, expected %lld x %lld with %lld",
                         (long long)at->n_rows, (long long)at->n_cols, (long long)at->nnz,
                         (long long)a->n_cols, (long long)a->n_rows, (long long)a->nnz);
    return kern_spmm(at, x, f, alpha, beta, y);
}

/* bf16 input: X[j, k] = bits << 16 exactly, so each row sums the same floats in the same order
 * as kern_spmm on the decoded X (the same bits), without an fp32 copy of X. Rows are dealt to
 * threads in blocks of 64 (dynamic): one row is still summed by one thread. */
static inline float spmm_bf16_f32(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

int kern_spmm_bf16(const csr_t *a, const uint16_t *x, int64_t f, float *y) {
    int rc = spmm_check(a, (const float *)(const void *)x, f, y);
    if (rc != INCA_OK || a->n_rows == 0) return rc;
    const int64_t n = a->n_rows;
    const int64_t *rowptr = a->rowptr;
    const int32_t *col = a->col;
    const float *val = a->val;
    int nt = inca_threads();
    int64_t max_nt = (rowptr[n] - rowptr[0] + n) * f / 65536 + 1;
    if (nt > max_nt) nt = (int)max_nt;
#pragma omp parallel for schedule(dynamic, 64) num_threads(nt)
    for (int64_t r = 0; r < n; r++) {
        float acc[SPMM_PANEL];
        for (int64_t f0 = 0; f0 < f; f0 += SPMM_PANEL) {
            const int64_t w = f - f0 < SPMM_PANEL ? f - f0 : SPMM_PANEL;
            for (int64_t k = 0; k < w; k++) acc[k] = 0.0f;
            for (int64_t j = rowptr[r]; j < rowptr[r + 1]; j++) {
                const uint16_t *xr = x + (int64_t)col[j] * f + f0;
                if (val) {
                    const float v = val[j];
                    for (int64_t k = 0; k < w; k++) acc[k] += v * spmm_bf16_f32(xr[k]);
                } else {
                    for (int64_t k = 0; k < w; k++) acc[k] += spmm_bf16_f32(xr[k]);
                }
            }
            memcpy(y + r * f + f0, acc, sizeof(float) * (size_t)w);
        }
    }
    return INCA_OK;
}
