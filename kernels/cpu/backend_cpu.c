/* The CPU backend of the kernel table: every op is the kernels/kernels.h function of the same
 * name, so results are the CPU kernels' bits; memory is calloc'd host memory, copies are
 * memcpy and streams and events need nothing (ops complete before they return). Tested in
 * test_backend.c. */
#include "kernels/backend.h"
#include "core/alloc.h"
#include "core/status.h"
#include <string.h>

static int c_alloc(kern_ctx_t *c, kern_mem_t mem, size_t bytes, void **out) {
    (void)c; (void)mem;
    *out = inca_calloc(bytes ? bytes : 1, 1);
    return *out ? INCA_OK : inca_fail(INCA_ENOMEM, "out of memory allocating %zu bytes", bytes);
}
static void c_release(kern_ctx_t *c, kern_mem_t mem, void *p) { (void)c; (void)mem; inca_free(p); }
static int c_copy(kern_ctx_t *c, void *dst, const void *src, size_t bytes, kern_copy_t kind, int stream) {
    (void)c; (void)kind; (void)stream;
    if (dst != src) memmove(dst, src, bytes);
    return INCA_OK;
}
static int c_zero(kern_ctx_t *c, void *dst, size_t bytes, int stream) {
    (void)c; (void)stream;
    memset(dst, 0, bytes);
    return INCA_OK;
}
static int c_event(kern_ctx_t *c, int a, int b) { (void)c; (void)a; (void)b; return INCA_OK; }
static int c_sync(kern_ctx_t *c) { return c->status; }
static int c_event_sync(kern_ctx_t *c, int ev) { (void)ev; return c->status; }
static int c_mat_set(kern_ctx_t *c, kern_mat_t *a, const csr_t *h, int stream) {
    (void)c; (void)stream;
    a->host = h;
    return INCA_OK;
}

/* the matrix as the CPU kernels see it: its csr_t, or a pattern view with other values */
static const csr_t *mat(const kern_mat_t *a, const float *vals, csr_t *tmp) {
    if (!vals) return a->host;
    *tmp = *a->host;
    tmp->val = (float *)vals;
    tmp->owned = 0;
    return tmp;
}

static int c_spmm(kern_ctx_t *c, kern_mat_t *a, const float *vals, const float *x, int64_t f, float alpha, float beta,
                  float *y) {
    (void)c;
    csr_t tmp;
    return kern_spmm(mat(a, vals, &tmp), x, f, alpha, beta, y);
}
static int c_spmm_base(kern_ctx_t *c, kern_mat_t *a, const float *x, int64_t f, const float *base, int64_t n_base,
                       const int64_t *ids, float *y) {
    (void)c;
    return kern_spmm_base(a->host, x, f, base, n_base, ids, y);
}
static int c_spmm_bf16(kern_ctx_t *c, kern_mat_t *a, const uint16_t *x, int64_t f, float *y) {
    (void)c;
    return kern_spmm_bf16(a->host, x, f, y);
}
static int c_gemm(kern_ctx_t *c, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float beta, float *cc, int64_t ldc) {
    (void)c;
    kern_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc);
    return INCA_OK;
}
#define VOID_OP(call) do { (void)c; call; return INCA_OK; } while (0)
static int c_axpby(kern_ctx_t *c, int64_t n, float al, const float *x, float be, float *y) { VOID_OP(kern_axpby(n, al, x, be, y)); }
static int c_sub(kern_ctx_t *c, int64_t n, const float *a, const float *b, float *o) { VOID_OP(kern_sub(n, a, b, o)); }
static int c_add_bias(kern_ctx_t *c, int64_t r, int64_t f, const float *b, float *y) { VOID_OP(kern_add_bias(r, f, b, y)); }
static int c_bias_grad(kern_ctx_t *c, int64_t r, int64_t f, const float *dy, float *db) { VOID_OP(kern_bias_grad(r, f, dy, db)); }
static int c_relu(kern_ctx_t *c, int64_t n, const float *x, float *y) { VOID_OP(kern_relu(n, x, y)); }
static int c_relu_grad(kern_ctx_t *c, int64_t n, const float *y, const float *dy, float *dx) { VOID_OP(kern_relu_grad(n, y, dy, dx)); }
static int c_dropout(kern_ctx_t *c, int64_t n, float p, uint64_t seed, uint64_t stream, const float *x, float *y,
                     uint8_t *mask) { VOID_OP(kern_dropout(n, p, seed, stream, x, y, mask)); }
static int c_dropout_grad(kern_ctx_t *c, int64_t n, float p, const uint8_t *mask, const float *dy, float *dx) {
    VOID_OP(kern_dropout_grad(n, p, mask, dy, dx));
}
static int c_bias_relu(kern_ctx_t *c, int64_t r, int64_t f, const float *b, const float *z, float *y) {
    VOID_OP(kern_bias_relu(r, f, b, z, y));
}
static int c_relu_drop_grad(kern_ctx_t *c, int64_t n, const float *y, const float *dy, float p, const uint8_t *mask,
                            float *dx) {
    VOID_OP(kern_relu_drop_grad(n, y, dy, p, mask, dx));
}
static int c_bn_forward(kern_ctx_t *c, int64_t n, int64_t f, int train, float *xh, const float *g, const float *b,
                        float *istd, float *rm, float *rv, float *y) {
    VOID_OP(kern_bn_forward(n, f, train, xh, g, b, istd, rm, rv, y));
}
static int c_bn_backward(kern_ctx_t *c, int64_t n, int64_t f, const float *g, const float *xh, const float *istd,
                         const float *dy, float *dz, float *gg, float *gb) {
    VOID_OP(kern_bn_backward(n, f, g, xh, istd, dy, dz, gg, gb));
}
static int c_softmax_xent(kern_ctx_t *c, int64_t rows, int64_t cc, const float *logits, const int32_t *y,
                          const int64_t *idx, int64_t nidx, float *logp, float *dlogits, double *loss) {
    VOID_OP(*loss = kern_softmax_xent(rows, cc, logits, y, idx, nidx, logp, dlogits));
}
static int c_accuracy(kern_ctx_t *c, int64_t cc, const float *s, const int32_t *y, const int64_t *idx, int64_t nidx,
                      int64_t *counts) {
    (void)c;
    int64_t correct, counted;
    kern_accuracy_counts(cc, s, y, idx, nidx, &correct, &counted);
    counts[0] += correct;
    counts[1] += counted;
    return INCA_OK;
}
static int c_class_counts(kern_ctx_t *c, int64_t cc, const float *s, const int32_t *y, const int64_t *idx, int64_t nidx,
                          int64_t *counts) {
    (void)c;
    kern_class_counts(cc, s, y, idx, nidx, counts);
    return INCA_OK;
}
static int c_adam(kern_ctx_t *c, int64_t n, float *w, const float *g, float *m, float *v, const kern_adam_t *hp) {
    VOID_OP(kern_adam(n, w, g, m, v, hp));
}
static int c_gather(kern_ctx_t *c, kern_dtype_t dt, const void *t, int64_t f, const int64_t *ids, int64_t start,
                    int64_t m, float *out) { VOID_OP(kern_rows_gather(dt, t, f, ids, start, m, out)); }
static int c_scatter(kern_ctx_t *c, kern_dtype_t dt, void *t, int64_t f, const int64_t *ids, int64_t start, int64_t m,
                     const float *in) { VOID_OP(kern_rows_scatter(dt, t, f, ids, start, m, in)); }
static int c_sub_rows(kern_ctx_t *c, kern_dtype_t dt, void *t, int64_t f, const int64_t *ids, int64_t m,
                      const float *in, float *out, const float *push) {
    VOID_OP(kern_rows_sub(dt, t, f, ids, m, in, out, push));
}
/* encode/decode n elements = one row of width n */
static int c_encode(kern_ctx_t *c, kern_dtype_t dt, int64_t n, const float *in, void *out) {
    VOID_OP(kern_rows_scatter(dt, out, n, NULL, 0, 1, in));
}
static int c_decode(kern_ctx_t *c, kern_dtype_t dt, int64_t n, const void *in, float *out) {
    VOID_OP(kern_rows_gather(dt, in, n, NULL, 0, 1, out));
}
#undef VOID_OP

static void c_destroy(kern_ctx_t *c) { inca_free(c); }

static const kern_ops_t cpu_ops = {
    .name = "cpu", .destroy = c_destroy, .alloc = c_alloc, .release = c_release, .copy = c_copy, .zero = c_zero,
    .event_record = c_event, .stream_wait = c_event, .event_sync = c_event_sync, .sync = c_sync, .mat_set = c_mat_set, .mat_drop = NULL,
    .spmm = c_spmm, .spmm_base = c_spmm_base, .spmm_bf16 = c_spmm_bf16, .gemm = c_gemm, .axpby = c_axpby,
    .sub = c_sub, .add_bias = c_add_bias, .bias_grad = c_bias_grad, .relu = c_relu, .relu_grad = c_relu_grad,
    .dropout = c_dropout, .dropout_grad = c_dropout_grad,
    .bias_relu = c_bias_relu, .relu_drop_grad = c_relu_drop_grad, .bn_forward = c_bn_forward, .bn_backward = c_bn_backward,
    .softmax_xent = c_softmax_xent, .accuracy = c_accuracy, .class_counts = c_class_counts, .adam = c_adam, .gather_rows = c_gather,
    .scatter_rows = c_scatter, .sub_rows = c_sub_rows, .encode = c_encode, .decode = c_decode,
};

const kern_ops_t *kern_cpu_ops(void) { return &cpu_ops; }
