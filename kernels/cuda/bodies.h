/* The per-element bodies of the CUDA backend's own kernels, compiled for the host and the
 * device (INCA_HD is __host__ __device__ under nvcc, nothing under a C compiler): each kernel in
 * kernels.cu is a loop around one of these, and tests/test_cuda_bodies.c runs the same bodies on
 * the host against the CPU kernels of kernels/kernels.h (bit-identical where backend.h says so).
 * Plain C11 and C++ both: no designated initialisers, no restrict, bits through memcpy. */
#ifndef INCA_KERNELS_CUDA_BODIES_H
#define INCA_KERNELS_CUDA_BODIES_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "kernels/kernels.h"

#ifdef __CUDACC__
#define INCA_HD __host__ __device__
#else
#define INCA_HD
#endif

/* ---- counter-based hash and dropout (core/rng.h, kernels/cpu/dense.c kern_dropout) ---- */
static inline INCA_HD uint64_t kb_splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
/* rng_hash_key: (seed, stream) mixed once per call */
static inline INCA_HD uint64_t kb_hash_key(uint64_t seed, uint64_t stream) {
    return kb_splitmix64(kb_splitmix64(seed ^ 0x5851f42d4c957f2dull) ^ stream);
}
/* keep iff the 24-bit uniform u * 2^-24 >= p, i.e. u >= ceil(p * 2^24) (both exact in float);
 * only for 0 < p < 1 (the callers treat p <= 0 and p >= 1 apart, as kern_dropout does) */
static inline INCA_HD uint64_t kb_dropout_thr(float p) { return (uint64_t)ceilf(p * 16777216.0f); }
static inline INCA_HD uint32_t kb_dropout_keep(uint64_t key, uint64_t thr, int64_t i) {
    return (uint32_t)((kb_splitmix64(key ^ (uint64_t)i) >> 40) >= thr);
}
/* x * scale when kept, +0.0f when dropped (kern_dropout's masked product, same bits) */
static inline INCA_HD float kb_masked_scale(float x, float scale, uint32_t keep) {
    return keep ? x * scale : 0.0f;
}

/* ---- elementwise ---- */
/* NaN passes, as in PyTorch: a diverged layer must reach the loss, whose check stops the run
 * (a ReLU that zeroed it would leave a quietly constant model) */
static inline INCA_HD float kb_relu(float x) { return x > 0.0f || x != x ? x : 0.0f; }
/* dy where y > 0, else +0.0f (kern_relu_grad masks the bits of dy) */
static inline INCA_HD float kb_relu_grad(float y, float dy) { return y > 0.0f ? dy : 0.0f; }
/* beta == 0: y is not read (it may hold NaN garbage) */
static inline INCA_HD float kb_axpby(float alpha, float x, float beta, float y) {
    return beta == 0.0f ? alpha * x : alpha * x + beta * y;
}
static inline INCA_HD float kb_add_bias(float y, float b) { return y + b; }

/* ---- bf16 (kern_f32_to_bf16: round to nearest even, NaN -> quiet NaN with its sign) ---- */
static inline INCA_HD uint32_t kb_f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline INCA_HD uint16_t kb_f32_to_bf16(float x) {
    uint32_t u = kb_f32_bits(x);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static inline INCA_HD float kb_bf16_to_f32(uint16_t b) {
    const uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
/* element j of a row table of type dt (KERN_F32 or KERN_BF16) */
static inline INCA_HD float kb_row_load(kern_dtype_t dt, const void *table, int64_t j) {
    return dt == KERN_BF16 ? kb_bf16_to_f32(((const uint16_t *)table)[j]) : ((const float *)table)[j];
}
static inline INCA_HD void kb_row_store(kern_dtype_t dt, void *table, int64_t j, float x) {
    if (dt == KERN_BF16) ((uint16_t *)table)[j] = kb_f32_to_bf16(x);
    else ((float *)table)[j] = x;
}

/* ---- Adam / AdamW, one element (nn/optim.c optim_step, in double) ---- */
static inline INCA_HD void kb_adam(const kern_adam_t *hp, float *w, float g, float *m, float *v) {
    double wk = *w, gk = g;
    if (hp->adamw) wk *= 1.0 - hp->lr * hp->weight_decay;
    else gk += hp->weight_decay * wk;
    const double mk = hp->beta1 * (double)*m + (1.0 - hp->beta1) * gk;
    const double vk = hp->beta2 * (double)*v + (1.0 - hp->beta2) * gk * gk;
    *m = (float)mk;
    *v = (float)vk;
    wk -= hp->step_size * mk / (sqrt(vk) / hp->sbc2 + hp->eps);
    *w = (float)wk;
}

/* ---- column sums in double, in a fixed order (k_colsum, kernels.cu): the rows cut into
 * kb_colsum_chunks(n) chunks of kb_colsum_chunk_rows rows, each chunk summed by KB_COLSUM_LANES
 * lanes (lane t: rows t, t + LANES, ... in ascending order), the lanes added in order, then the
 * chunks added in order; kb_colsum_add is one row's term. ---- */
#define KB_COLSUM_LANES 8
static inline INCA_HD int64_t kb_colsum_chunks(int64_t n) {
    const int64_t c = (n + 63) / 64;
    return c < 1024 ? c : 1024;
}
static inline INCA_HD int64_t kb_colsum_chunk_rows(int64_t n, int64_t nchunk) { return (n + nchunk - 1) / nchunk; }
/* mode 0: s0 += x; 1: s0 += (x - mu)^2; 2: s0 += x, s1 += x b */
static inline INCA_HD void kb_colsum_add(int mode, float x, float b, double mu, double *s0, double *s1) {
    if (mode == 0) {
        *s0 += x;
    } else if (mode == 1) {
        const double d = x - mu;
        *s0 += d * d;
    } else {
        *s0 += x;
        *s1 += (double)x * b;
    }
}

/* ---- BatchNorm (per column k; sums over the n rows in double) ---- */
/* training statistics from s = Σ x and s2 = Σ (x - mu)^2 (mu = s / n) */
static inline INCA_HD double kb_bn_mean(double s, int64_t n) { return s / (double)n; }
static inline INCA_HD double kb_bn_istd(double s2, int64_t n) { return 1.0 / sqrt(s2 / (double)n + KERN_BN_EPS); }
/* running mean/var update: r <- (1 - momentum) r + momentum stat (var: unbiased, s2 / (n - 1)) */
static inline INCA_HD float kb_bn_running(float r, double stat) {
    return (float)((1 - KERN_BN_MOMENTUM) * (double)r + KERN_BN_MOMENTUM * stat);
}
static inline INCA_HD double kb_bn_uvar(double s2, int64_t n) {
    return n > 1 ? s2 / (double)(n - 1) : s2 / (double)n;
}
static inline INCA_HD float kb_bn_norm_train(float z, double mu, double is) { return (float)(((double)z - mu) * is); }
static inline INCA_HD float kb_bn_istd_eval(float rvar) { return (float)(1.0 / sqrt((double)rvar + KERN_BN_EPS)); }
static inline INCA_HD float kb_bn_norm_eval(float z, float rmean, float istd) { return (z - rmean) * istd; }
static inline INCA_HD float kb_bn_affine(float gamma, float xhat, float beta) { return gamma * xhat + beta; }
/* dz of one element given the column sums sdy = Σ dy, sdyx = Σ dy x̂ */
static inline INCA_HD float kb_bn_backward(float gamma, float istd, int64_t n, float dy, float xhat, double sdy,
                                           double sdyx) {
    const double c = (double)gamma * (double)istd / (double)n;
    return (float)(c * ((double)n * (double)dy - sdy - (double)xhat * sdyx));
}

/* ---- log-softmax / NLL of one row of c logits (kern_softmax_xent) ---- */
static inline INCA_HD float kb_row_max(const float *z, int64_t c) {
    float mx = z[0];
    for (int64_t k = 1; k < c; k++) mx = z[k] > mx ? z[k] : mx;
    return mx;
}
/* log Σ exp(z): max-shifted, the sum in double */
static inline INCA_HD double kb_row_lse(const float *z, int64_t c, float mx) {
    double s = 0.0;
    for (int64_t k = 0; k < c; k++) s += exp((double)z[k] - (double)mx);
    return (double)mx + log(s);
}
static inline INCA_HD float kb_logp(float z, double lse) { return (float)((double)z - lse); }
/* the gradient of the mean NLL at logit k of a counted row (inv = 1 / counted) */
static inline INCA_HD float kb_xent_grad(float z, double lse, double inv) { return (float)(exp((double)z - lse) * inv); }
/* row status for the loss: 0 not counted (y < 0), 1 counted, 2 invalid (row outside [0, rows)
 * or label >= c: the loss is NaN) */
static inline INCA_HD int kb_xent_status(int64_t i, int64_t rows, const int32_t *y, int64_t c) {
    if (i < 0 || i >= rows) return 2;
    if (y[i] < 0) return 0;
    return y[i] >= c ? 2 : 1;
}

/* ---- accuracy: argmax with ties to the lowest class ---- */
static inline INCA_HD int64_t kb_argmax(const float *s, int64_t c) {
    int64_t best = 0;
    for (int64_t k = 1; k < c; k++)
        if (s[k] > s[best]) best = k;
    return best;
}
#endif
