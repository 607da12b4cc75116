/* The kernel table's dispatch (kc_*: every call goes through the context's ops) and matrix
 * handles. Contexts are made and freed in kernels/context.c; the CPU table is
 * kernels/cpu/backend_cpu.c, the emulated device kernels/cpu/backend_emu.c, the CUDA one
 * kernels/cuda/. Tested in test_backend.c. */
#include "kernels/backend.h"
#include "core/alloc.h"
#include "core/status.h"
#include <stdio.h>
#include <string.h>



kern_dev_t kc_device(const kern_ctx_t *c) { return c->dev; }
const char *kc_name(const kern_ctx_t *c) { return c->ops->name; }
const char *kc_describe(const kern_ctx_t *c) { return c->describe; }
const char *kc_fallback(const kern_ctx_t *c) { return c->fallback[0] ? c->fallback : NULL; }
int kc_deterministic(const kern_ctx_t *c) { return c->deterministic; }
int kc_tf32(const kern_ctx_t *c) { return c->tf32; }
int kc_status(const kern_ctx_t *c) { return c->status; }

/* ---- memory and ordering ---- */
int kc_alloc(kern_ctx_t *c, kern_mem_t mem, size_t bytes, void **out) { return c->ops->alloc(c, mem, bytes, out); }
void kc_release(kern_ctx_t *c, kern_mem_t mem, void *p) {
    if (p) c->ops->release(c, mem, p);
}
int kc_copy(kern_ctx_t *c, void *dst, const void *src, size_t bytes, kern_copy_t kind, int stream) {
    return bytes ? c->ops->copy(c, dst, src, bytes, kind, stream) : INCA_OK;
}
int kc_zero(kern_ctx_t *c, void *dst, size_t bytes, int stream) {
    return bytes ? c->ops->zero(c, dst, bytes, stream) : INCA_OK;
}
int kc_event_record(kern_ctx_t *c, int ev, int stream) {
    if (ev < 0 || ev >= KERN_NEVENTS || stream < 0 || stream >= KERN_NSTREAMS)
        return inca_fail(INCA_EINVAL, "kc_event_record: event %d / stream %d out of range", ev, stream);
    return c->ops->event_record(c, ev, stream);
}
int kc_stream_wait(kern_ctx_t *c, int stream, int ev) {
    if (ev < 0 || ev >= KERN_NEVENTS || stream < 0 || stream >= KERN_NSTREAMS)
        return inca_fail(INCA_EINVAL, "kc_stream_wait: event %d / stream %d out of range", ev, stream);
    return c->ops->stream_wait(c, stream, ev);
}
int kc_event_sync(kern_ctx_t *c, int ev) {
    if (ev < 0 || ev >= KERN_NEVENTS) return inca_fail(INCA_EINVAL, "kc_event_sync: event %d out of range", ev);
    return c->ops->event_sync(c, ev);
}
int kc_sync(kern_ctx_t *c) { return c->ops->sync(c); }

int kc_mirror(kern_ctx_t *c, const void *host, size_t bytes, void **out) {
    *out = NULL;
    if (c->dev == KERN_DEV_CPU) {
        *out = (void *)host;
        return INCA_OK;
    }
    int rc = kc_alloc(c, KERN_MEM_DEVICE, bytes, out);
    if (rc == INCA_OK && (rc = kc_copy(c, *out, host, bytes, KERN_H2D, KERN_STREAM_COMPUTE)) != INCA_OK) {
        kc_release(c, KERN_MEM_DEVICE, *out);
        *out = NULL;
    }
    return rc;
}

void kc_mirror_free(kern_ctx_t *c, const void *host, void *mirror) {
    if (mirror && mirror != host) kc_release(c, KERN_MEM_DEVICE, mirror);
}

/* ---- matrices ---- */
int kc_mat_create(kern_ctx_t *c, int64_t rows_max, int64_t n_cols, int64_t nnz_max, kern_mat_t **out) {
    (void)c;
    *out = NULL;
    if (rows_max < 0 || n_cols < 0 || nnz_max < 0)
        return inca_fail(INCA_EINVAL, "kc_mat_create: bad capacity %lld x %lld, %lld nonzeros", (long long)rows_max,
                         (long long)n_cols, (long long)nnz_max);
    kern_mat_t *a = inca_calloc(1, sizeof *a);
    if (!a) return inca_fail(INCA_ENOMEM, "kc_mat_create: out of memory");
    a->rows_max = rows_max;
    a->n_cols = n_cols;
    a->nnz_max = nnz_max;
    *out = a;
    return INCA_OK;
}

int kc_mat_set(kern_ctx_t *c, kern_mat_t *a, const csr_t *h, int stream) {
    if (a->parent) return inca_fail(INCA_EINVAL, "kc_mat_set: a rows view cannot be set");
    if (h->n_rows > a->rows_max || h->nnz > a->nnz_max || h->n_cols > a->n_cols)
        return inca_fail(INCA_EINVAL, "kc_mat_set: a %lld x %lld matrix with %lld nonzeros does not fit the handle "
                         "(%lld rows, %lld columns, %lld nonzeros)", (long long)h->n_rows, (long long)h->n_cols,
                         (long long)h->nnz, (long long)a->rows_max, (long long)a->n_cols, (long long)a->nnz_max);
    int rc = c->ops->mat_set(c, a, h, stream);
    if (rc != INCA_OK) return rc;
    a->rows = h->n_rows;
    a->cols = h->n_cols;
    a->nnz = h->nnz;
    return INCA_OK;
}

int kc_mat_upload(kern_ctx_t *c, const csr_t *h, kern_mat_t **out) {
    int rc = kc_mat_create(c, h->n_rows, h->n_cols, h->nnz, out);
    if (rc == INCA_OK && (rc = kc_mat_set(c, *out, h, KERN_STREAM_COMPUTE)) != INCA_OK) kc_mat_free(c, out);
    return rc;
}

int kc_mat_rows_view(kern_ctx_t *c, const kern_mat_t *a, int64_t r0, int64_t r1, kern_mat_t **out) {
    *out = NULL;
    if (a->parent || r0 < 0 || r1 < r0 || r1 > a->rows)
        return inca_fail(INCA_EINVAL, "kc_mat_rows_view: rows [%lld, %lld) of a %lld-row matrix%s", (long long)r0,
                         (long long)r1, (long long)a->rows, a->parent ? " that is itself a view" : "");
    kern_mat_t *v = inca_calloc(1, sizeof *v);
    if (!v) return inca_fail(INCA_ENOMEM, "kc_mat_rows_view: out of memory");
    v->parent = a;
    v->r0 = r0;
    v->rows = v->rows_max = r1 - r0;
    v->n_cols = a->n_cols;
    v->cols = a->cols;
    if (c->dev == KERN_DEV_CPU) {
        v->view = csr_row_view(a->host, r0, r1);
        v->host = &v->view;
        v->nnz = v->nnz_max = v->view.nnz;
    } else {
        int rc = c->ops->mat_set(c, v, NULL, KERN_STREAM_COMPUTE);   /* backend builds the view */
        if (rc != INCA_OK) {
            inca_free(v);
            return rc;
        }
    }
    *out = v;
    return INCA_OK;
}

void kc_mat_free(kern_ctx_t *c, kern_mat_t **pa) {
    if (!pa || !*pa) return;
    if (c->ops->mat_drop) c->ops->mat_drop(c, *pa);
    inca_free(*pa);
    *pa = NULL;
}
int64_t kc_mat_rows(const kern_mat_t *a) { return a->rows; }
int64_t kc_mat_nnz(const kern_mat_t *a) { return a->nnz; }

/* ---- ops ---- */
#define OP(name, ...) return c->ops->name(c, __VA_ARGS__)
int kc_spmm(kern_ctx_t *c, kern_mat_t *a, const float *vals, const float *x, int64_t f, float alpha, float beta,
            float *y) { OP(spmm, a, vals, x, f, alpha, beta, y); }
int kc_spmm_base(kern_ctx_t *c, kern_mat_t *a, const float *x, int64_t f, const float *base, int64_t n_base,
                 const int64_t *ids, float *y) { OP(spmm_base, a, x, f, base, n_base, ids, y); }
int kc_spmm_bf16(kern_ctx_t *c, kern_mat_t *a, const uint16_t *x, int64_t f, float *y) { OP(spmm_bf16, a, x, f, y); }
int kc_gemm(kern_ctx_t *c, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
            const float *b, int64_t ldb, float beta, float *cc, int64_t ldc) {
    OP(gemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc);
}
int kc_axpby(kern_ctx_t *c, int64_t n, float alpha, const float *x, float beta, float *y) { OP(axpby, n, alpha, x, beta, y); }
int kc_sub(kern_ctx_t *c, int64_t n, const float *a, const float *b, float *out) { OP(sub, n, a, b, out); }
int kc_add_bias(kern_ctx_t *c, int64_t rows, int64_t f, const float *b, float *y) { OP(add_bias, rows, f, b, y); }
int kc_bias_grad(kern_ctx_t *c, int64_t rows, int64_t f, const float *dy, float *db) { OP(bias_grad, rows, f, dy, db); }
int kc_relu(kern_ctx_t *c, int64_t n, const float *x, float *y) { OP(relu, n, x, y); }
int kc_relu_grad(kern_ctx_t *c, int64_t n, const float *y, const float *dy, float *dx) { OP(relu_grad, n, y, dy, dx); }
int kc_dropout(kern_ctx_t *c, int64_t n, float p, uint64_t seed, uint64_t stream, const float *x, float *y,
               uint8_t *mask) { OP(dropout, n, p, seed, stream, x, y, mask); }
int kc_dropout_grad(kern_ctx_t *c, int64_t n, float p, const uint8_t *mask, const float *dy, float *dx) {
    OP(dropout_grad, n, p, mask, dy, dx);
}
int kc_bn_forward(kern_ctx_t *c, int64_t n, int64_t f, int train, float *xhat, const float *gamma, const float *beta,
                  float *istd, float *rmean, float *rvar, float *y) {
    OP(bn_forward, n, f, train, xhat, gamma, beta, istd, rmean, rvar, y);
}
int kc_bn_backward(kern_ctx_t *c, int64_t n, int64_t f, const float *gamma, const float *xhat, const float *istd,
                   const float *dy, float *dz, float *ggamma, float *gbeta) {
    OP(bn_backward, n, f, gamma, xhat, istd, dy, dz, ggamma, gbeta);
}
int kc_softmax_xent(kern_ctx_t *c, int64_t rows, int64_t cc, const float *logits, const int32_t *y, const int64_t *idx,
                    int64_t nidx, float *logp, float *dlogits, double *loss) {
    OP(softmax_xent, rows, cc, logits, y, idx, nidx, logp, dlogits, loss);
}
int kc_accuracy(kern_ctx_t *c, int64_t cc, const float *scores, const int32_t *y, const int64_t *idx, int64_t nidx,
                int64_t *counts) { OP(accuracy, cc, scores, y, idx, nidx, counts); }
int kc_class_counts(kern_ctx_t *c, int64_t cc, const float *scores, const int32_t *y, const int64_t *idx, int64_t nidx,
                    int64_t *counts) { OP(class_counts, cc, scores, y, idx, nidx, counts); }
int kc_adam(kern_ctx_t *c, int64_t n, float *w, const float *g, float *m, float *v, const kern_adam_t *hp) {
    OP(adam, n, w, g, m, v, hp);
}
int kc_gather_rows(kern_ctx_t *c, kern_dtype_t dt, const void *t, int64_t f, const int64_t *ids, int64_t start,
                   int64_t m, float *out) { OP(gather_rows, dt, t, f, ids, start, m, out); }
int kc_scatter_rows(kern_ctx_t *c, kern_dtype_t dt, void *t, int64_t f, const int64_t *ids, int64_t start, int64_t m,
                    const float *in) { OP(scatter_rows, dt, t, f, ids, start, m, in); }
int kc_sub_rows(kern_ctx_t *c, kern_dtype_t dt, void *t, int64_t f, const int64_t *ids, int64_t m, const float *in,
                float *out, const float *push) { OP(sub_rows, dt, t, f, ids, m, in, out, push); }
int kc_encode(kern_ctx_t *c, kern_dtype_t dt, int64_t n, const float *in, void *out) { OP(encode, dt, n, in, out); }
int kc_decode(kern_ctx_t *c, kern_dtype_t dt, int64_t n, const void *in, float *out) { OP(decode, dt, n, in, out); }
#undef OP
