/* The CUDA backend's own kernels: grid-stride loops around the per-element bodies of bodies.h,
 * deterministic column sums in double (fixed row chunks, fixed reduction order), softmax-xent
 * and accuracy kept on the device. Launched through launch.h by backend_cuda.c. Tested on a GPU
 * by test_backend_ops.c (against the CPU backend); the bodies on the host by test_cuda_bodies.c. */
#include "kernels/cuda/launch.h"
#include "kernels/cuda/bodies.h"
#include <cuda_runtime.h>

#define KCU_BLOCK 256
#define KCU_FOR(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

static unsigned kcu_grid(int64_t n) {
    const int64_t g = (n + KCU_BLOCK - 1) / KCU_BLOCK;
    return (unsigned)(g < 65536 ? g : 65536);
}
#define KCU_LAUNCH(n, s, kern, ...)                                          \
    do {                                                                     \
        if ((n) > 0) kern<<<kcu_grid(n), KCU_BLOCK, 0, (s)>>>(__VA_ARGS__); \
        return cudaGetLastError();                                           \
    } while (0)

/* ---- matrices ---- */
__global__ void k_fill(int64_t n, float v, float *y) { KCU_FOR(i, n) y[i] = v; }
__global__ void k_scale(int64_t n, float beta, float *y) { KCU_FOR(i, n) y[i] *= beta; }
template <typename T> __global__ void k_rebase(const T *p, int64_t r0, int64_t n, T *out) {
    KCU_FOR(i, n + 1) out[i] = p[r0 + i] - p[r0];
}
template <typename T> __global__ void k_from64(const int64_t *p, int64_t n, T *out) {
    KCU_FOR(i, n + 1) out[i] = (T)(p[i] - p[0]);
}
__global__ void k_widen(int64_t n, const int32_t *in, int64_t *out) { KCU_FOR(i, n) out[i] = in[i]; }

extern "C" cudaError_t kcu_fill(cudaStream_t s, int64_t n, float v, float *y) { KCU_LAUNCH(n, s, k_fill, n, v, y); }
extern "C" cudaError_t kcu_scale(cudaStream_t s, int64_t n, float beta, float *y) {
    KCU_LAUNCH(n, s, k_scale, n, beta, y);
}
extern "C" cudaError_t kcu_rowptr_rebase(cudaStream_t s, int idx64, const void *p, int64_t r0, int64_t n, void *out) {
    if (idx64) KCU_LAUNCH(n + 1, s, k_rebase<int64_t>, (const int64_t *)p, r0, n, (int64_t *)out);
    KCU_LAUNCH(n + 1, s, k_rebase<int32_t>, (const int32_t *)p, r0, n, (int32_t *)out);
}
extern "C" cudaError_t kcu_rowptr_from64(cudaStream_t s, int idx64, const int64_t *p64, int64_t n, void *out) {
    if (idx64) KCU_LAUNCH(n + 1, s, k_from64<int64_t>, p64, n, (int64_t *)out);
    KCU_LAUNCH(n + 1, s, k_from64<int32_t>, p64, n, (int32_t *)out);
}
extern "C" cudaError_t kcu_widen_i32(cudaStream_t s, int64_t n, const int32_t *in, int64_t *out) {
    KCU_LAUNCH(n, s, k_widen, n, in, out);
}

/* ---- elementwise ---- */
__global__ void k_axpby(int64_t n, float alpha, const float *x, float beta, float *y) {
    KCU_FOR(i, n) y[i] = kb_axpby(alpha, x[i], beta, beta == 0.0f ? 0.0f : y[i]);
}
__global__ void k_sub(int64_t n, const float *a, const float *b, float *out) { KCU_FOR(i, n) out[i] = a[i] - b[i]; }
__global__ void k_add_bias(int64_t n, int64_t f, const float *b, float *y) {
    KCU_FOR(i, n) y[i] = kb_add_bias(y[i], b[i % f]);
}
__global__ void k_relu(int64_t n, const float *x, float *y) { KCU_FOR(i, n) y[i] = kb_relu(x[i]); }
__global__ void k_relu_grad(int64_t n, const float *y, const float *dy, float *dx) {
    KCU_FOR(i, n) dx[i] = kb_relu_grad(y[i], dy[i]);
}
__global__ void k_dropout(int64_t n, float scale, uint64_t key, uint64_t thr, const float *x, float *y, uint8_t *mask) {
    KCU_FOR(i, n) {
        const uint32_t keep = kb_dropout_keep(key, thr, i);
        y[i] = kb_masked_scale(x[i], scale, keep);
        if (mask) mask[i] = (uint8_t)keep;
    }
}
__global__ void k_dropout_grad(int64_t n, float scale, const uint8_t *mask, const float *dy, float *dx) {
    KCU_FOR(i, n) dx[i] = kb_masked_scale(dy[i], scale, (uint32_t)(mask[i] != 0));
}
__global__ void k_bias_relu(int64_t n, int64_t f, const float *b, const float *z, float *y) {
    KCU_FOR(i, n) y[i] = kb_relu(kb_add_bias(z[i], b[i % f]));
}
__global__ void k_relu_drop_grad(int64_t n, float scale, const float *y, const float *dy, const uint8_t *mask, float *dx) {
    KCU_FOR(i, n) dx[i] = kb_relu_grad(y[i], kb_masked_scale(dy[i], scale, (uint32_t)(mask[i] != 0)));
}
__global__ void k_adam(int64_t n, float *w, const float *g, float *m, float *v, kern_adam_t hp) {
    KCU_FOR(i, n) kb_adam(&hp, &w[i], g[i], &m[i], &v[i]);
}
__global__ void k_encode(int64_t n, const float *in, uint16_t *out) { KCU_FOR(i, n) out[i] = kb_f32_to_bf16(in[i]); }
__global__ void k_decode(int64_t n, const uint16_t *in, float *out) { KCU_FOR(i, n) out[i] = kb_bf16_to_f32(in[i]); }

extern "C" cudaError_t kcu_axpby(cudaStream_t s, int64_t n, float alpha, const float *x, float beta, float *y) {
    KCU_LAUNCH(n, s, k_axpby, n, alpha, x, beta, y);
}
extern "C" cudaError_t kcu_sub(cudaStream_t s, int64_t n, const float *a, const float *b, float *out) {
    KCU_LAUNCH(n, s, k_sub, n, a, b, out);
}
extern "C" cudaError_t kcu_add_bias(cudaStream_t s, int64_t rows, int64_t f, const float *b, float *y) {
    KCU_LAUNCH(rows * f, s, k_add_bias, rows * f, f, b, y);
}
extern "C" cudaError_t kcu_relu(cudaStream_t s, int64_t n, const float *x, float *y) { KCU_LAUNCH(n, s, k_relu, n, x, y); }
extern "C" cudaError_t kcu_relu_grad(cudaStream_t s, int64_t n, const float *y, const float *dy, float *dx) {
    KCU_LAUNCH(n, s, k_relu_grad, n, y, dy, dx);
}
extern "C" cudaError_t kcu_dropout(cudaStream_t s, int64_t n, float scale, uint64_t key, uint64_t thr, const float *x,
                                   float *y, uint8_t *mask) {
    KCU_LAUNCH(n, s, k_dropout, n, scale, key, thr, x, y, mask);
}
extern "C" cudaError_t kcu_dropout_grad(cudaStream_t s, int64_t n, float scale, const uint8_t *mask, const float *dy,
                                        float *dx) {
    KCU_LAUNCH(n, s, k_dropout_grad, n, scale, mask, dy, dx);
}
extern "C" cudaError_t kcu_bias_relu(cudaStream_t s, int64_t rows, int64_t f, const float *b, const float *z, float *y) {
    KCU_LAUNCH(rows * f, s, k_bias_relu, rows * f, f, b, z, y);
}
extern "C" cudaError_t kcu_relu_drop_grad(cudaStream_t s, int64_t n, float scale, const float *y, const float *dy,
                                          const uint8_t *mask, float *dx) {
    KCU_LAUNCH(n, s, k_relu_drop_grad, n, scale, y, dy, mask, dx);
}
extern "C" cudaError_t kcu_adam(cudaStream_t s, int64_t n, float *w, const float *g, float *m, float *v, kern_adam_t hp) {
    KCU_LAUNCH(n, s, k_adam, n, w, g, m, v, hp);
}
extern "C" cudaError_t kcu_encode_bf16(cudaStream_t s, int64_t n, const float *in, uint16_t *out) {
    KCU_LAUNCH(n, s, k_encode, n, in, out);
}
extern "C" cudaError_t kcu_decode_bf16(cudaStream_t s, int64_t n, const uint16_t *in, float *out) {
    KCU_LAUNCH(n, s, k_decode, n, in, out);
}

/* ---- column sums: block (32 columns x 8 row lanes) per (column tile, row chunk); each
 * lane sums its rows in ascending order, lanes are added in order, chunks are added in order by
 * k_colsum_finish: the same bits on every run. ---- */
#define CS_TX 32
#define CS_TY KB_COLSUM_LANES
extern "C" int64_t kcu_colsum_part_doubles(int64_t n, int64_t f) { return kb_colsum_chunks(n) * 2 * f; }

template <int MODE>
__global__ void k_colsum(int64_t n, int64_t f, int64_t chunk, const float *a, const float *b, const double *sum,
                         double *part) {
    __shared__ double sh[2][CS_TY][CS_TX];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t k = (int64_t)blockIdx.x * CS_TX + tx;
    const int64_t r0 = (int64_t)blockIdx.y * chunk, r1 = r0 + chunk < n ? r0 + chunk : n;
    double s0 = 0.0, s1 = 0.0;
    if (k < f) {
        const double mu = MODE == 1 ? kb_bn_mean(sum[k], n) : 0.0;
        for (int64_t r = r0 + ty; r < r1; r += CS_TY) kb_colsum_add(MODE, a[r * f + k], MODE == 2 ? b[r * f + k] : 0.f, mu, &s0, &s1);
    }
    sh[0][ty][tx] = s0;
    sh[1][ty][tx] = s1;
    __syncthreads();
    if (ty == 0 && k < f) {
        for (int j = 1; j < CS_TY; j++) {
            s0 += sh[0][j][tx];
            s1 += sh[1][j][tx];
        }
        part[blockIdx.y * 2 * f + k] = s0;
        part[blockIdx.y * 2 * f + f + k] = s1;
    }
}
__global__ void k_colsum_finish(int64_t f, int64_t nchunk, int two, const double *part, double *out) {
    KCU_FOR(k, f) {
        double s0 = 0.0, s1 = 0.0;
        for (int64_t c = 0; c < nchunk; c++) {
            s0 += part[c * 2 * f + k];
            s1 += part[c * 2 * f + f + k];
        }
        out[k] = s0;
        if (two) out[f + k] = s1;
    }
}
extern "C" cudaError_t kcu_colsum(cudaStream_t s, int mode, int64_t n, int64_t f, const float *a, const float *b,
                                  const double *sum, double *part, double *out) {
    if (n <= 0 || f <= 0) return cudaSuccess;
    const int64_t nchunk = kb_colsum_chunks(n), chunk = kb_colsum_chunk_rows(n, nchunk);
    const dim3 grid((unsigned)((f + CS_TX - 1) / CS_TX), (unsigned)nchunk), block(CS_TX, CS_TY);
    if (mode == 0) k_colsum<0><<<grid, block, 0, s>>>(n, f, chunk, a, b, sum, part);
    else if (mode == 1) k_colsum<1><<<grid, block, 0, s>>>(n, f, chunk, a, b, sum, part);
    else k_colsum<2><<<grid, block, 0, s>>>(n, f, chunk, a, b, sum, part);
    k_colsum_finish<<<kcu_grid(f), KCU_BLOCK, 0, s>>>(f, nchunk, mode == 2, part, out);
    return cudaGetLastError();
}
__global__ void k_sum_to_f32(int64_t n, const double *in, float *out) { KCU_FOR(i, n) out[i] = (float)in[i]; }
extern "C" cudaError_t kcu_sum_to_f32(cudaStream_t s, int64_t n, const double *in, float *out) {
    KCU_LAUNCH(n, s, k_sum_to_f32, n, in, out);
}

/* ---- BatchNorm ---- */
__global__ void k_bn_stats(int64_t n, int64_t f, const double *sum, const double *s2, double *is, float *istd,
                           float *rmean, float *rvar) {
    KCU_FOR(k, f) {
        const double mu = kb_bn_mean(sum[k], n), isk = kb_bn_istd(s2[k], n);
        is[k] = isk;
        istd[k] = (float)isk;
        rmean[k] = kb_bn_running(rmean[k], mu);
        rvar[k] = kb_bn_running(rvar[k], kb_bn_uvar(s2[k], n));
    }
}
__global__ void k_bn_norm_train(int64_t n, int64_t f, const double *sum, const double *is, float *xhat,
                                const float *gamma, const float *beta, float *y) {
    KCU_FOR(e, n * f) {
        const int64_t k = e % f;
        const float xh = kb_bn_norm_train(xhat[e], kb_bn_mean(sum[k], n), is[k]);
        xhat[e] = xh;
        y[e] = kb_bn_affine(gamma[k], xh, beta[k]);
    }
}
/* eval: istd from the running variance (recomputed per element, written once per column) */
__global__ void k_bn_eval(int64_t n, int64_t f, float *xhat, const float *gamma, const float *beta, float *istd,
                          const float *rmean, const float *rvar, float *y) {
    KCU_FOR(e, n * f) {
        const int64_t k = e % f;
        const float is = kb_bn_istd_eval(rvar[k]);
        if (e < f) istd[k] = is;
        const float xh = kb_bn_norm_eval(xhat[e], rmean[k], is);
        xhat[e] = xh;
        y[e] = kb_bn_affine(gamma[k], xh, beta[k]);
    }
}
__global__ void k_bn_backward(int64_t n, int64_t f, const float *gamma, const float *xhat, const float *istd,
                              const float *dy, const double *sums, float *dz, float *ggamma, float *gbeta) {
    KCU_FOR(e, n * f) {
        const int64_t k = e % f;
        if (e < f) {
            ggamma[k] = (float)sums[f + k];
            gbeta[k] = (float)sums[k];
        }
        dz[e] = kb_bn_backward(gamma[k], istd[k], n, dy[e], xhat[e], sums[k], sums[f + k]);
    }
}
extern "C" cudaError_t kcu_bn_train(cudaStream_t s, int64_t n, int64_t f, const double *sum, const double *s2,
                                    double *is, float *xhat, const float *gamma, const float *beta, float *istd,
                                    float *rmean, float *rvar, float *y) {
    if (n <= 0 || f <= 0) return cudaSuccess;
    k_bn_stats<<<kcu_grid(f), KCU_BLOCK, 0, s>>>(n, f, sum, s2, is, istd, rmean, rvar);
    KCU_LAUNCH(n * f, s, k_bn_norm_train, n, f, sum, is, xhat, gamma, beta, y);
}
extern "C" cudaError_t kcu_bn_eval(cudaStream_t s, int64_t n, int64_t f, float *xhat, const float *gamma,
                                   const float *beta, float *istd, const float *rmean, const float *rvar, float *y) {
    KCU_LAUNCH(n * f, s, k_bn_eval, n, f, xhat, gamma, beta, istd, rmean, rvar, y);
}
extern "C" cudaError_t kcu_bn_backward(cudaStream_t s, int64_t n, int64_t f, const float *gamma, const float *xhat,
                                       const float *istd, const float *dy, const double *sums, float *dz,
                                       float *ggamma, float *gbeta) {
    KCU_LAUNCH(n * f, s, k_bn_backward, n, f, gamma, xhat, istd, dy, sums, dz, ggamma, gbeta);
}

/* ---- softmax-xent: log-softmax of every row; then (one block) count the listed rows; then
 * per listed row its NLL term and gradient (atomics only where a row is listed twice, as the CPU
 * accumulates it); then (one block) the mean in a fixed order. ---- */
__global__ void k_logsoftmax(int64_t rows, int64_t c, const float *logits, float *logp) {
    KCU_FOR(i, rows) {
        const float *z = logits + i * c;
        const double lse = kb_row_lse(z, c, kb_row_max(z, c));
        for (int64_t k = 0; k < c; k++) logp[i * c + k] = kb_logp(z[k], lse);
    }
}
__global__ void k_xent_count(int64_t rows, int64_t c, const int32_t *y, const int64_t *idx, int64_t nidx,
                             int64_t *cnt) {
    __shared__ int64_t sc[KCU_BLOCK], sb[KCU_BLOCK];
    int64_t counted = 0, bad = 0;
    for (int64_t t = threadIdx.x; t < nidx; t += blockDim.x) {
        const int st = kb_xent_status(idx[t], rows, y, c);
        counted += st == 1;
        bad |= st == 2;
    }
    sc[threadIdx.x] = counted;
    sb[threadIdx.x] = bad;
    __syncthreads();
    for (int h = KCU_BLOCK / 2; h > 0; h /= 2) {
        if ((int)threadIdx.x < h) {
            sc[threadIdx.x] += sc[threadIdx.x + h];
            sb[threadIdx.x] |= sb[threadIdx.x + h];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        cnt[0] = sc[0];
        cnt[1] = sb[0];
    }
}
__global__ void k_xent_rows(int64_t rows, int64_t c, const float *logits, const int32_t *y, const int64_t *idx,
                            int64_t nidx, const int64_t *cnt, double *contrib, float *dlogits) {
    if (cnt[1]) return;   /* the loss is NaN and no gradient is written (kern_softmax_xent) */
    const double inv = cnt[0] ? 1.0 / (double)cnt[0] : 0.0;
    KCU_FOR(t, nidx) {
        const int64_t i = idx[t];
        contrib[t] = 0.0;
        if (kb_xent_status(i, rows, y, c) != 1) continue;
        const float *z = logits + i * c;
        const double lse = kb_row_lse(z, c, kb_row_max(z, c));
        contrib[t] = lse - (double)z[y[i]];
        if (dlogits) {
            float *d = dlogits + i * c;
            for (int64_t k = 0; k < c; k++) atomicAdd(&d[k], kb_xent_grad(z[k], lse, inv));
            atomicAdd(&d[y[i]], -(float)inv);
        }
    }
}
__global__ void k_xent_loss(int64_t nidx, const int64_t *cnt, const double *contrib, double *loss) {
    __shared__ double sh[KCU_BLOCK];
    double s = 0.0;
    if (!cnt[1])
        for (int64_t t = threadIdx.x; t < nidx; t += blockDim.x) s += contrib[t];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int h = KCU_BLOCK / 2; h > 0; h /= 2) {
        if ((int)threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) *loss = cnt[1] ? (double)NAN : cnt[0] ? sh[0] * (1.0 / (double)cnt[0]) : 0.0;
}
extern "C" size_t kcu_xent_scratch_bytes(int64_t nidx) { return 2 * sizeof(int64_t) + (size_t)nidx * sizeof(double); }
extern "C" cudaError_t kcu_softmax_xent(cudaStream_t s, int64_t rows, int64_t c, const float *logits,
                                        const int32_t *y, const int64_t *idx, int64_t nidx, float *logp,
                                        float *dlogits, void *scratch, double *loss) {
    int64_t *cnt = (int64_t *)scratch;
    double *contrib = (double *)(cnt + 2);
    if (logp && rows > 0) k_logsoftmax<<<kcu_grid(rows), KCU_BLOCK, 0, s>>>(rows, c, logits, logp);
    if (dlogits && rows > 0) {
        cudaError_t e = cudaMemsetAsync(dlogits, 0, (size_t)(rows * c) * sizeof(float), s);
        if (e != cudaSuccess) return e;
    }
    k_xent_count<<<1, KCU_BLOCK, 0, s>>>(rows, c, y, idx, nidx, cnt);
    if (nidx > 0) k_xent_rows<<<kcu_grid(nidx), KCU_BLOCK, 0, s>>>(rows, c, logits, y, idx, nidx, cnt, contrib, dlogits);
    k_xent_loss<<<1, KCU_BLOCK, 0, s>>>(nidx, cnt, contrib, loss);
    return cudaGetLastError();
}

__global__ void k_accuracy(int64_t c, const float *scores, const int32_t *y, const int64_t *idx, int64_t nidx,
                           int64_t *counts) {
    __shared__ unsigned long long sc[KCU_BLOCK], sn[KCU_BLOCK];
    unsigned long long correct = 0, counted = 0;
    KCU_FOR(t, nidx) {
        const int64_t i = idx[t];
        if (y[i] < 0) continue;
        counted++;
        correct += kb_argmax(scores + i * c, c) == (int64_t)y[i];
    }
    sc[threadIdx.x] = correct;
    sn[threadIdx.x] = counted;
    __syncthreads();
    for (int h = KCU_BLOCK / 2; h > 0; h /= 2) {
        if ((int)threadIdx.x < h) {
            sc[threadIdx.x] += sc[threadIdx.x + h];
            sn[threadIdx.x] += sn[threadIdx.x + h];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0 && sn[0]) {   /* integer sums: the same counts in any order */
        atomicAdd((unsigned long long *)&counts[0], sc[0]);
        atomicAdd((unsigned long long *)&counts[1], sn[0]);
    }
}
extern "C" cudaError_t kcu_accuracy(cudaStream_t s, int64_t c, const float *scores, const int32_t *y,
                                    const int64_t *idx, int64_t nidx, int64_t *counts) {
    KCU_LAUNCH(nidx, s, k_accuracy, c, scores, y, idx, nidx, counts);
}

/* per-class counts: one thread per listed row, an atomic add per count (integers: any order) */
__global__ void k_class_counts(int64_t c, const float *scores, const int32_t *y, const int64_t *idx, int64_t nidx,
                               int64_t *counts) {
    KCU_FOR(t, nidx) {
        const int64_t i = idx[t];
        if (y[i] < 0 || y[i] >= c) continue;
        const int64_t best = kb_argmax(scores + i * c, c);
        atomicAdd((unsigned long long *)&counts[y[i]], 1ull);
        atomicAdd((unsigned long long *)&counts[c + best], 1ull);
        if (best == (int64_t)y[i]) atomicAdd((unsigned long long *)&counts[2 * c + y[i]], 1ull);
    }
}
extern "C" cudaError_t kcu_class_counts(cudaStream_t s, int64_t c, const float *scores, const int32_t *y,
                                        const int64_t *idx, int64_t nidx, int64_t *counts) {
    KCU_LAUNCH(nidx, s, k_class_counts, c, scores, y, idx, nidx, counts);
}

/* ---- row tables: one thread per element of the m x f block ---- */
__device__ static inline int64_t kcu_row(const int64_t *ids, int64_t start, int64_t i) { return ids ? ids[i] : start + i; }
__global__ void k_gather_rows(kern_dtype_t dt, const void *table, int64_t f, const int64_t *ids, int64_t start,
                              int64_t m, float *out) {
    KCU_FOR(e, m * f) out[e] = kb_row_load(dt, table, kcu_row(ids, start, e / f) * f + e % f);
}
__global__ void k_scatter_rows(kern_dtype_t dt, void *table, int64_t f, const int64_t *ids, int64_t start, int64_t m,
                               const float *in) {
    KCU_FOR(e, m * f) kb_row_store(dt, table, kcu_row(ids, start, e / f) * f + e % f, in[e]);
}
__global__ void k_sub_rows(kern_dtype_t dt, void *table, int64_t f, const int64_t *ids, int64_t m, const float *in,
                           float *out, const float *push) {
    KCU_FOR(e, m * f) {
        const int64_t j = ids[e / f] * f + e % f;
        out[e] = in[e] - kb_row_load(dt, table, j);
        if (push) kb_row_store(dt, table, j, push[e]);   /* after out, as kern_rows_sub (push may alias out) */
    }
}
extern "C" cudaError_t kcu_gather_rows(cudaStream_t s, kern_dtype_t dt, const void *table, int64_t f,
                                       const int64_t *ids, int64_t start, int64_t m, float *out) {
    KCU_LAUNCH(m * f, s, k_gather_rows, dt, table, f, ids, start, m, out);
}
extern "C" cudaError_t kcu_scatter_rows(cudaStream_t s, kern_dtype_t dt, void *table, int64_t f, const int64_t *ids,
                                        int64_t start, int64_t m, const float *in) {
    KCU_LAUNCH(m * f, s, k_scatter_rows, dt, table, f, ids, start, m, in);
}
extern "C" cudaError_t kcu_sub_rows(cudaStream_t s, kern_dtype_t dt, void *table, int64_t f, const int64_t *ids,
                                    int64_t m, const float *in, float *out, const float *push) {
    KCU_LAUNCH(m * f, s, k_sub_rows, dt, table, f, ids, m, in, out, push);
}
