/* The compute kernels every model calls: one interface (this header), backends chosen at run
 * time through the table of kernels/backend.h. These are the CPU kernels (kernels/cpu/), threaded
 * with OpenMP, CBLAS for GEMM; the CPU backend runs exactly these, a CUDA backend
 * (kernels/cuda/) implements the same table when built. All matrices are row-major
 * float32; callers own every buffer and kernels allocate nothing per call (hot loops).
 * Determinism: for a fixed thread count every kernel returns bit-identical results (static row
 * partitions, no atomics on floats). Tested in test_kernels.c against naive double references. */
#ifndef INCA_KERNELS_H
#define INCA_KERNELS_H
#include <stdint.h>
#include "graph/csr.h"

/* ---- sparse ---- */
/* Y[a->n_rows x f] = alpha * A X + beta * Y, X is a->n_cols x f (entries of A are a->val, or 1
 * when val is NULL). Rows are split across threads by nonzero count (degree-aware); each row is
 * summed in column order by one thread, so the bits do not depend on the thread count. With
 * beta == 0, Y is not read (it may hold garbage). INCA_EINVAL on a malformed call (f <= 0,
 * NULL arrays). */
int kern_spmm(const csr_t *a, const float *x, int64_t f, float alpha, float beta, float *y);
/* Y[r, :] = B[ids[r], :] + (A X)[r, :]: the product added to rows gathered from a base matrix B
 * (n_base x f), in one pass. The same bits as copying the rows into Y and calling kern_spmm
 * with alpha = beta = 1 (IncAgg's M_B + Â_BB Δ without writing and re-reading Y). */
int kern_spmm_base(const csr_t *a, const float *x, int64_t f, const float *base, int64_t n_base,
                   const int64_t *ids, float *y);
/* Y[a->n_rows x f] = A X with X (a->n_cols x f) stored as bf16 (memory/history.h's encoding):
 * the same bits as kern_spmm on the fp32-decoded X, without decoding it. `a` may be a row view
 * (csr_row_view), as for every kernel here. IncAgg's push refresh of bf16 tables. */
int kern_spmm_bf16(const csr_t *a, const uint16_t *x, int64_t f, float *y);
/* Y[a->n_cols x f] = alpha * Aᵀ X + beta * Y using `at`, the precomputed csr_transpose of A
 * (pass NULL when A is known symmetric in pattern and values, e.g. GCN's Â). */
int kern_spmm_t(const csr_t *a, const csr_t *at, const float *x, int64_t f, float alpha, float beta, float *y);

/* ---- dense (CBLAS) ---- */
/* C[m x n] = alpha * op(A) op(B) + beta * C; op(A) is m x k, op(B) is k x n, row-major with
 * leading dimensions lda, ldb, ldc. */
void kern_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* ---- elementwise (n = number of floats) ---- */
void kern_axpby(int64_t n, float alpha, const float *x, float beta, float *y);  /* y = a x + b y */
void kern_add_bias(int64_t rows, int64_t f, const float *b, float *y);          /* y[i,:] += b */
void kern_bias_grad(int64_t rows, int64_t f, const float *dy, float *db);       /* db = Σ_i dy[i,:] (overwrites) */
void kern_relu(int64_t n, const float *x, float *y);
void kern_relu_grad(int64_t n, const float *y, const float *dy, float *dx);     /* dx = dy * (y > 0) */
/* Inverted dropout with a counter-based mask: keep element i iff
 * rng_hash_uniform(seed, stream, i) >= p; y = x / (1-p) where kept, else 0. mask (n bytes)
 * receives 1/0 and may be NULL. Same (seed, stream) -> same mask for any thread count. */
void kern_dropout(int64_t n, float p, uint64_t seed, uint64_t stream, const float *x, float *y, uint8_t *mask);
void kern_dropout_grad(int64_t n, float p, const uint8_t *mask, const float *dy, float *dx);
/* Fused passes, each with the bits of the ops it replaces (issue 31: one sweep over the
 * activations instead of two). y = relu(z + b) by rows (z unchanged; y may be z):
 * kern_add_bias then kern_relu. dx = relu_grad(y, dropout_grad(p, mask, dy)) (dx may be dy;
 * mask NULL: no dropout): the next layer's dropout gradient folded into this layer's ReLU's. */
void kern_bias_relu(int64_t rows, int64_t f, const float *b, const float *z, float *y);
void kern_relu_drop_grad(int64_t n, const float *y, const float *dy, float p, const uint8_t *mask, float *dx);

/* ---- loss and metrics ---- */
/* Row-wise log-softmax of logits[rows x c] into logp (may be NULL); then mean NLL over the rows
 * listed in idx[0..nidx) whose label y >= 0 (unlabelled rows are ignored; a row listed twice
 * counts twice). Returns the loss (0 when no row counts; NaN when an idx entry is outside
 * [0, rows) or a counted label is >= c); when dlogits is non-NULL it receives
 * d(loss)/d(logits) (zero on rows not counted). Loss and gradient are computed in double. */
double kern_softmax_xent(int64_t rows, int64_t c, const float *logits, const int32_t *y,
                         const int64_t *idx, int64_t nidx, float *logp, float *dlogits);
/* Accuracy as OGB's evaluator computes it over idx (argmax of scores, ties to the lowest class),
 * counting only rows with y >= 0. Returns correct / counted (0 when none counted). */
double kern_accuracy(int64_t c, const float *scores, const int32_t *y, const int64_t *idx, int64_t nidx);
/* Per-class counts of the labelled rows listed in idx, ACCUMULATED into counts (3c int64):
 * counts[k] += rows of true class k, counts[c + k] += rows predicted k (argmax, kern_accuracy's
 * ties), counts[2c + k] += rows of class k predicted k. */
void kern_class_counts(int64_t c, const float *scores, const int32_t *y, const int64_t *idx, int64_t nidx,
                       int64_t *counts);
/* From such counts: balanced accuracy (the mean recall over classes with rows) and macro F1 (the
 * mean of 2 tp / (true + predicted) over classes that are true or predicted at least once, as
 * scikit-learn's f1_score(average="macro") on the labels present). 0 when no row counts. */
void kern_class_metrics(int64_t c, const int64_t *counts, double *balanced_acc, double *macro_f1);
/* The same rule as counts: rows predicted correctly and rows counted. */
void kern_accuracy_counts(int64_t c, const float *scores, const int32_t *y, const int64_t *idx, int64_t nidx,
                          int64_t *correct, int64_t *counted);

/* ---- normalisation, optimiser, row tables ---- */
/* BatchNorm constants (PyTorch's defaults). */
#define KERN_BN_EPS 1e-5
#define KERN_BN_MOMENTUM 0.1
/* BatchNorm over n rows of width f (per column: sums in double, rows in ascending order).
 * xhat holds the pre-activation z on entry and x̂ on return; y = gamma x̂ + beta. train:
 * batch statistics, istd = 1/sqrt(var + eps), running mean/var (unbiased) updated with
 * momentum KERN_BN_MOMENTUM; eval: the running statistics. */
void kern_bn_forward(int64_t n, int64_t f, int train, float *xhat, const float *gamma, const float *beta,
                     float *istd, float *rmean, float *rvar, float *y);
/* dz from dy under training statistics; ggamma = Σ_i dy x̂, gbeta = Σ_i dy (overwrite). */
void kern_bn_backward(int64_t n, int64_t f, const float *gamma, const float *xhat, const float *istd,
                      const float *dy, float *dz, float *ggamma, float *gbeta);

/* Adam / AdamW hyper-parameters of one step (nn/optim.h's formulas, computed in double per
 * element): step_size = lr / (1 - beta1^t), sbc2 = sqrt(1 - beta2^t). */
typedef struct kern_adam {
    double lr, beta1, beta2, eps, weight_decay, step_size, sbc2;
    int adamw;
} kern_adam_t;
void kern_adam(int64_t n, float *w, const float *g, float *m, float *v, const kern_adam_t *hp);

/* Row tables (n x f) of fp32 or bf16 elements (bf16: round to nearest even, NaN stays a quiet
 * NaN), rows addressed by int64 ids; parallel over rows for at least KERN_ROWS_PAR_MIN
 * elements. memory/history.h is built on these. */
typedef enum { KERN_F32 = 0, KERN_BF16 = 1 } kern_dtype_t;
#define KERN_ROWS_PAR_MIN ((int64_t)1 << 21)
uint16_t kern_f32_to_bf16(float x);
float kern_bf16_to_f32(uint16_t b);
/* out[i,:] = table[ids[i],:]; ids == NULL means ids[i] = start + i (a contiguous range). */
void kern_rows_gather(kern_dtype_t dt, const void *table, int64_t f, const int64_t *ids, int64_t start,
                      int64_t m, float *out);
/* table[ids[i],:] = in[i,:] (ids == NULL: rows start + i). */
void kern_rows_scatter(kern_dtype_t dt, void *table, int64_t f, const int64_t *ids, int64_t start,
                       int64_t m, const float *in);
/* rows start..start+m-1 of table <- w in + (1 - w) table (kern_axpby's float operations),
 * stored in dt: a relaxed refresh (memory/agg.h) of host tables. */
void kern_rows_blend(kern_dtype_t dt, void *table, int64_t f, int64_t start, int64_t m, float w, const float *in);
/* out[i,:] = in[i,:] - table[ids[i],:]; then, when push != NULL, table[ids[i],:] = push[i,:],
 * row by row (ids distinct). */
void kern_rows_sub(kern_dtype_t dt, void *table, int64_t f, const int64_t *ids, int64_t m, const float *in,
                   float *out, const float *push);
/* out = a - b elementwise. */
void kern_sub(int64_t n, const float *a, const float *b, float *out);

#endif
