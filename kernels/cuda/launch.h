/* Launchers of the CUDA backend's own kernels (kernels/cuda/kernels.cu), callable from C: each
 * queues one kernel (or a short fixed sequence) on `s` and returns cudaGetLastError(); empty
 * sizes queue nothing. Pointers are device memory. The per-element maths is in bodies.h; the
 * callers (backend_cuda.c) validate arguments and translate errors. Tested with the rest of the
 * CUDA table in test_backend_ops.c (GPU only) and, for the bodies, test_cuda_bodies.c. */
#ifndef INCA_KERNELS_CUDA_LAUNCH_H
#define INCA_KERNELS_CUDA_LAUNCH_H
#include <cuda_runtime_api.h>
#include <stdint.h>
#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif
/* matrices: y[i] = v; out[i] = p[r0 + i] - p[r0] for i <= n (int32 or int64 offsets, idx64
 * selects; src and out of the same type); out64[i] = in32[i] */
cudaError_t kcu_fill(cudaStream_t s, int64_t n, float v, float *y);
cudaError_t kcu_scale(cudaStream_t s, int64_t n, float beta, float *y);   /* y *= beta */
cudaError_t kcu_rowptr_rebase(cudaStream_t s, int idx64, const void *p, int64_t r0, int64_t n, void *out);
/* rowptr from the host's int64 offsets (uploaded to p64), rebased by p64[0], narrowed or not */
cudaError_t kcu_rowptr_from64(cudaStream_t s, int idx64, const int64_t *p64, int64_t n, void *out);
cudaError_t kcu_widen_i32(cudaStream_t s, int64_t n, const int32_t *in, int64_t *out);

/* elementwise */
cudaError_t kcu_axpby(cudaStream_t s, int64_t n, float alpha, const float *x, float beta, float *y);
cudaError_t kcu_sub(cudaStream_t s, int64_t n, const float *a, const float *b, float *out);
cudaError_t kcu_add_bias(cudaStream_t s, int64_t rows, int64_t f, const float *b, float *y);
cudaError_t kcu_relu(cudaStream_t s, int64_t n, const float *x, float *y);
cudaError_t kcu_relu_grad(cudaStream_t s, int64_t n, const float *y, const float *dy, float *dx);
cudaError_t kcu_dropout(cudaStream_t s, int64_t n, float scale, uint64_t key, uint64_t thr, const float *x,
                        float *y, uint8_t *mask);
cudaError_t kcu_dropout_grad(cudaStream_t s, int64_t n, float scale, const uint8_t *mask, const float *dy,
                             float *dx);
cudaError_t kcu_bias_relu(cudaStream_t s, int64_t rows, int64_t f, const float *b, const float *z, float *y);
cudaError_t kcu_relu_drop_grad(cudaStream_t s, int64_t n, float scale, const float *y, const float *dy,
                               const uint8_t *mask, float *dx);
cudaError_t kcu_adam(cudaStream_t s, int64_t n, float *w, const float *g, float *m, float *v, kern_adam_t hp);
cudaError_t kcu_encode_bf16(cudaStream_t s, int64_t n, const float *in, uint16_t *out);
cudaError_t kcu_decode_bf16(cudaStream_t s, int64_t n, const uint16_t *in, float *out);

/* column sums of n x f row-major matrices, in double, deterministic (fixed chunking and
 * order). mode 0: out[k] = Σ a; 1: out[k] = Σ (a - sum[k]/n)^2; 2: out[k] = Σ a and
 * out[f + k] = Σ a b. part: kcu_colsum_part_doubles(n, f) doubles of scratch. */
int64_t kcu_colsum_part_doubles(int64_t n, int64_t f);
cudaError_t kcu_colsum(cudaStream_t s, int mode, int64_t n, int64_t f, const float *a, const float *b,
                       const double *sum, double *part, double *out);
cudaError_t kcu_sum_to_f32(cudaStream_t s, int64_t n, const double *in, float *out);

/* BatchNorm (sums from kcu_colsum; is: f doubles of scratch) */
cudaError_t kcu_bn_train(cudaStream_t s, int64_t n, int64_t f, const double *sum, const double *s2, double *is,
                         float *xhat, const float *gamma, const float *beta, float *istd, float *rmean,
                         float *rvar, float *y);
cudaError_t kcu_bn_eval(cudaStream_t s, int64_t n, int64_t f, float *xhat, const float *gamma, const float *beta,
                        float *istd, const float *rmean, const float *rvar, float *y);
/* sums: Σ dy (f) then Σ dy x̂ (f) */
cudaError_t kcu_bn_backward(cudaStream_t s, int64_t n, int64_t f, const float *gamma, const float *xhat,
                            const float *istd, const float *dy, const double *sums, float *dz, float *ggamma,
                            float *gbeta);

/* softmax-xent: scratch holds 2 int64 then nidx doubles (kcu_xent_scratch_bytes) */
size_t kcu_xent_scratch_bytes(int64_t nidx);
cudaError_t kcu_softmax_xent(cudaStream_t s, int64_t rows, int64_t c, const float *logits, const int32_t *y,
                             const int64_t *idx, int64_t nidx, float *logp, float *dlogits, void *scratch,
                             double *loss);
cudaError_t kcu_accuracy(cudaStream_t s, int64_t c, const float *scores, const int32_t *y, const int64_t *idx,
                         int64_t nidx, int64_t *counts);
cudaError_t kcu_class_counts(cudaStream_t s, int64_t c, const float *scores, const int32_t *y, const int64_t *idx,
                             int64_t nidx, int64_t *counts);

/* row tables (ids NULL: rows start + i) */
cudaError_t kcu_gather_rows(cudaStream_t s, kern_dtype_t dt, const void *table, int64_t f, const int64_t *ids,
                            int64_t start, int64_t m, float *out);
cudaError_t kcu_scatter_rows(cudaStream_t s, kern_dtype_t dt, void *table, int64_t f, const int64_t *ids,
                             int64_t start, int64_t m, const float *in);
cudaError_t kcu_sub_rows(cudaStream_t s, kern_dtype_t dt, void *table, int64_t f, const int64_t *ids, int64_t m,
                         const float *in, float *out, const float *push);
#ifdef __cplusplus
}
#endif
#endif
