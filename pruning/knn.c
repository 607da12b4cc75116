/* Exact kNN by blocked GEMM distance products and per-row bounded max-heaps; see knn.h.
 * Only the upper block triangle of the distance matrix is computed (half the GEMM flops).
 * Tested in test_pruning_knn.c (brute force in double, hand-built points, graph symmetry). */
#include "pruning/knn.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { KNN_BLOCK = 2048 };   /* square blocks of the distance matrix (16 MiB of floats) */

/* xn = x with every row scaled to unit length (a zero row stays zero): cosine as dot product */
static void unit_rows(const float *x, int64_t n, int64_t f, float *xn) {
#pragma omp parallel for schedule(static) num_threads(inca_threads())
    for (int64_t i = 0; i < n; i++) {
        double s = 0;
        for (int64_t t = 0; t < f; t++) s += (double)x[i * f + t] * x[i * f + t];
        float inv = s > 0 ? (float)(1.0 / sqrt(s)) : 0.0f;
        for (int64_t t = 0; t < f; t++) xn[i * f + t] = x[i * f + t] * inv;
    }
}


int knn_metric_parse(const char *name, knn_metric_t *out) {
    if (name && strcmp(name, "euclidean") == 0) { *out = KNN_EUCLIDEAN; return INCA_OK; }
    if (name && strcmp(name, "cosine") == 0) { *out = KNN_COSINE; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--metric: expected euclidean or cosine, got '%s'", name ? name : "");
}

/* (d, j) orders before (e, k) when closer, ties to the lower id. */
static inline int knn_less(float d, int32_t j, float e, int32_t k) { return d < e || (d == e && j < k); }

/* Max-heap of `len` entries on (d, j): the root is the worst kept neighbour. */
static void heap_sift_down(float *hd, int32_t *hi, int len, int p) {
    for (;;) {
        int l = 2 * p + 1, r = l + 1, w = p;
        if (l < len && knn_less(hd[w], hi[w], hd[l], hi[l])) w = l;
        if (r < len && knn_less(hd[w], hi[w], hd[r], hi[r])) w = r;
        if (w == p) return;
        float td = hd[p]; hd[p] = hd[w]; hd[w] = td;
        int32_t ti = hi[p]; hi[p] = hi[w]; hi[w] = ti;
        p = w;
    }
}

static void heap_push(float *hd, int32_t *hi, int *len, int k, float d, int32_t j) {
    if (*len < k) {
        int c = (*len)++;
        hd[c] = d; hi[c] = j;
        while (c > 0) {
            int p = (c - 1) / 2;
            if (!knn_less(hd[p], hi[p], hd[c], hi[c])) break;
            float td = hd[p]; hd[p] = hd[c]; hd[c] = td;
            int32_t ti = hi[p]; hi[p] = hi[c]; hi[c] = ti;
            c = p;
        }
    } else if (knn_less(d, j, hd[0], hi[0])) {
        hd[0] = d; hi[0] = j;
        heap_sift_down(hd, hi, k, 0);
    }
}

/* Block (r0.., c0..) of rb x cb finished distances buf, off the diagonal: the same distances
 * offered to the column rows' heaps. Each thread owns chunks of 64 columns and walks the block
 * row by row, so reads stay contiguous. */
static void offer_columns(const float *buf, int64_t r0, int64_t rb, int64_t c0, int64_t cb, int k, float *hd,
                          int32_t *nbr, int *hlen) {
    int64_t nch = (cb + 63) / 64;
#pragma omp parallel for schedule(static) num_threads(inca_threads())
    for (int64_t ch = 0; ch < nch; ch++) {
        int64_t ca = ch * 64, ce = ca + 64 < cb ? ca + 64 : cb;
        for (int64_t r = 0; r < rb; r++) {
            const float *b = buf + r * cb;
            int32_t i = (int32_t)(r0 + r);
            for (int64_t c = ca; c < ce; c++) {
                int64_t j = c0 + c;
                float *rd = hd + j * k;
                int32_t *ri = nbr + j * k;
                if (hlen[j] == k && !knn_less(b[c], i, rd[0], ri[0])) continue;
                heap_push(rd, ri, &hlen[j], k, b[c], i);
            }
        }
    }
}

/* Heap sort each row's k neighbours into ascending order. */
static void heaps_sort(float *hd, int32_t *nbr, int64_t n, int k) {
#pragma omp parallel for schedule(static) num_threads(inca_threads())
    for (int64_t i = 0; i < n; i++) {
        float *rd = hd + i * k;
        int32_t *ri = nbr + i * k;
        for (int len = k; len > 1; len--) {
            float td = rd[0]; rd[0] = rd[len - 1]; rd[len - 1] = td;
            int32_t ti = ri[0]; ri[0] = ri[len - 1]; ri[len - 1] = ti;
            heap_sift_down(rd, ri, len - 1, 0);
        }
    }
}

int knn_exact(const float *x, int64_t n, int64_t f, int k, knn_metric_t metric, int32_t *nbr, float *dist) {
    if (k < 1 || (int64_t)k >= n || f < 1)
        return inca_fail(INCA_EINVAL, "knn: need 1 <= k < n and f >= 1 (k=%d, n=%lld, f=%lld)", k, (long long)n, (long long)f);
    if (n > INT32_MAX) return inca_fail(INCA_EINVAL, "knn: n=%lld exceeds int32 ids", (long long)n);
    int rc = INCA_OK;
    float *xn = NULL, *sq = NULL, *buf = NULL, *hd = NULL;
    int *hlen = NULL;
    const float *xs = x;
    sq = inca_malloc((size_t)n * sizeof *sq);
    buf = inca_malloc((size_t)KNN_BLOCK * KNN_BLOCK * sizeof *buf);
    hd = dist ? dist : inca_malloc((size_t)n * (size_t)k * sizeof *hd);
    hlen = inca_calloc((size_t)n, sizeof *hlen);
    if (!sq || !buf || !hd || !hlen) { rc = INCA_ENOMEM; goto done; }
    if (metric == KNN_COSINE) {
        xn = inca_malloc((size_t)n * (size_t)f * sizeof *xn);
        if (!xn) { rc = INCA_ENOMEM; goto done; }
        unit_rows(x, n, f, xn);
        xs = xn;
    } else {
#pragma omp parallel for schedule(static) num_threads(inca_threads())
        for (int64_t i = 0; i < n; i++) {
            double s = 0;
            for (int64_t t = 0; t < f; t++) s += (double)x[i * f + t] * x[i * f + t];
            sq[i] = (float)s;
        }
    }
    /* Upper block triangle only: the block (I, J), J >= I, updates the heaps of the rows of I
     * from its rows and, when J > I, the heaps of the rows of J from its columns. Every pair
     * (i, j) is offered to both heaps exactly once with the same distance; the kept set does
     * not depend on the order of offers because (d, j) is a strict total order. */
    for (int64_t r0 = 0; r0 < n; r0 += KNN_BLOCK) {
        int64_t rb = n - r0 < KNN_BLOCK ? n - r0 : KNN_BLOCK;
        for (int64_t c0 = r0; c0 < n; c0 += KNN_BLOCK) {
            int64_t cb = n - c0 < KNN_BLOCK ? n - c0 : KNN_BLOCK;
            /* buf[r][c] = -2 a·b (euclidean) or -cos (cosine, rows normalised) */
            kern_gemm(0, 1, rb, cb, f, metric == KNN_COSINE ? -1.0f : -2.0f, xs + r0 * f, f, xs + c0 * f, f,
                      0.0f, buf, cb);
#pragma omp parallel for schedule(static) num_threads(inca_threads())
            for (int64_t r = 0; r < rb; r++) {   /* finish the distances, offer them to row heaps */
                int64_t i = r0 + r;
                float *rd = hd + i * k;
                int32_t *ri = nbr + i * k;
                float *b = buf + r * cb;
                float base = metric == KNN_COSINE ? 1.0f : sq[i];
                for (int64_t c = 0; c < cb; c++) {
                    int64_t j = c0 + c;
                    float d = b[c] + base + (metric == KNN_COSINE ? 0.0f : sq[j]);
                    if (d < 0) d = 0;
                    b[c] = d;
                    if (j == i) continue;
                    if (hlen[i] == k && !knn_less(d, (int32_t)j, rd[0], ri[0])) continue;
                    heap_push(rd, ri, &hlen[i], k, d, (int32_t)j);
                }
            }
            if (c0 != r0) offer_columns(buf, r0, rb, c0, cb, k, hd, nbr, hlen);
        }
    }
    heaps_sort(hd, nbr, n, k);
done:
    inca_free(xn);
    inca_free(sq);
    inca_free(buf);
    if (hd != dist) inca_free(hd);
    inca_free(hlen);
    return rc;
}

int knn_graph(const int32_t *nbr, int64_t n, int k, csr_t *out) {
    memset(out, 0, sizeof *out);
    int64_t m = n * k;
    int64_t *src = inca_malloc((size_t)m * sizeof *src), *dst = inca_malloc((size_t)m * sizeof *dst);
    int rc = INCA_OK;
    if (!src || !dst) { rc = INCA_ENOMEM; goto done; }
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < k; j++) {
            src[i * k + j] = i;
            dst[i * k + j] = nbr[i * k + j];
        }
    rc = csr_from_edges(out, n, src, dst, m, CSR_SYMMETRIZE | CSR_DROP_SELF_LOOPS);
done:
    inca_free(src);
    inca_free(dst);
    return rc;
}

/* ---- approximate search through FAISS (pruning/knn_faiss.cpp) ---- */
#ifdef INCA_HAS_FAISS
int knn_faiss_raw(const float *x, int64_t n, int64_t f, int k, const char *factory, int nprobe, uint64_t seed,
                  int32_t *nbr, float *dist, char *err, size_t errlen);
int knn_faiss_available(void) { return 1; }
#else
int knn_faiss_available(void) { return 0; }
#endif

void knn_faiss_default_factory(int64_t n, char *buf, size_t len) {
    int64_t nlist = (int64_t)llround(4.0 * sqrt((double)n));
    if (nlist > n / 39) nlist = n / 39;
    if (nlist < 1) nlist = 1;
    snprintf(buf, len, "IVF%lld,Flat", (long long)nlist);
}

int knn_faiss(const float *x, int64_t n, int64_t f, int k, knn_metric_t metric, const knn_faiss_opts_t *o, int32_t *nbr,
              float *dist) {
#ifndef INCA_HAS_FAISS
    (void)x; (void)n; (void)f; (void)k; (void)metric; (void)o; (void)nbr; (void)dist;
    return inca_fail(INCA_EINVAL, "%s", KNN_NO_FAISS_MSG);
#else
    if (k < 1 || (int64_t)k >= n || f < 1)
        return inca_fail(INCA_EINVAL, "knn: need 1 <= k < n and f >= 1 (k=%d, n=%lld, f=%lld)", k, (long long)n, (long long)f);
    if (n > INT32_MAX) return inca_fail(INCA_EINVAL, "knn: n=%lld exceeds int32 ids", (long long)n);
    char factory[64], err[512] = "";
    if (o && o->factory && *o->factory) snprintf(factory, sizeof factory, "%s", o->factory);
    else knn_faiss_default_factory(n, factory, sizeof factory);
    const float *xs = x;
    float *xn = NULL;
    if (metric == KNN_COSINE) {   /* unit rows: squared L2 = 2 - 2 cos */
        xn = inca_malloc((size_t)n * (size_t)f * sizeof *xn);
        if (!xn) return INCA_ENOMEM;
        unit_rows(x, n, f, xn);
        xs = xn;
    }
    const int r = knn_faiss_raw(xs, n, f, k, factory, o && o->nprobe > 0 ? o->nprobe : 8, o ? o->seed : 0, nbr, dist, err,
                                sizeof err);
    inca_free(xn);
    if (r == 2) return INCA_ENOMEM;
    if (r != 0) return inca_fail(INCA_EINVAL, "--knn-search faiss (%s): %s", factory, err);
    if (dist && metric == KNN_COSINE)
        for (int64_t i = 0; i < n * k; i++) dist[i] *= 0.5f;
    return INCA_OK;
#endif
}
