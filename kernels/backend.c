/* The kernel table's dispatch (kc_*: every call goes through the context's ops) and matrix
 * handles. Contexts are made and freed in kernels/context.c; the CPU table is
 * kernels/cpu/backend_cpu.c, the emulated device kernels/cpu/backend_emu.c, the CUDA one
 * kernels/cuda/. Tested in test_backend.c. */
#include "kernels/backend.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/profile.h"
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
int kc_alloc(kern_ctx_t *c, kern_mem_t mem, size_t bytes, void **out) {
    *out = NULL;
    int rc = kc_mem_admit(c, mem, bytes ? bytes : 1, "kc_alloc");
    if (rc == INCA_OK) rc = c->ops->alloc(c, mem, bytes, out);
    if (rc == INCA_OK && (rc = kc_mem_note(c, mem, *out, bytes ? bytes : 1)) != INCA_OK) {
        c->ops->release(c, mem, *out);
        *out = NULL;
    }
    return rc;
}
void kc_release(kern_ctx_t *c, kern_mem_t mem, void *p) {
    if (!p) return;
    kc_mem_forget(c, p);
    c->ops->release(c, mem, p);
}
/* With a profile attached (kernels/profile.h) every op is timed and its work counted; on a
 * device the timing waits for the queue on both sides. */
static double prof_begin(kern_ctx_t *c) {
    if (c->dev != KERN_DEV_CPU) (void)c->ops->sync(c);
    return inca_now();
}
static int prof_end(kern_ctx_t *c, int rc, double t0, kprof_kind_t k, double flops, double bytes) {
    if (c->dev != KERN_DEV_CPU && rc == INCA_OK) rc = c->ops->sync(c);
    kern_prof_t *p = c->prof;
    p->calls[k]++;
    p->seconds[k] += inca_now() - t0;
    p->flops[k] += flops;
    p->stream_bytes[k] += bytes;
    return rc;
}
int kc_copy(kern_ctx_t *c, void *dst, const void *src, size_t bytes, kern_copy_t kind, int stream) {
    if (!bytes) return INCA_OK;
    kmt_copied_add(c->mt, (int)kind, bytes);
    if (!c->prof) return c->ops->copy(c, dst, src, bytes, kind, stream);
    const double t0 = prof_begin(c);
    return prof_end(c, c->ops->copy(c, dst, src, bytes, kind, stream), t0, KPROF_COPY, 0, 2.0 * (double)bytes);
}
int kc_zero(kern_ctx_t *c, void *dst, size_t bytes, int stream) {
    if (!bytes) return INCA_OK;
    if (!c->prof) return c->ops->zero(c, dst, bytes, stream);
    const double t0 = prof_begin(c);
    return prof_end(c, c->ops->zero(c, dst, bytes, stream), t0, KPROF_COPY, 0, (double)bytes);
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

int kc_has_coll(const kern_ctx_t *c) { return c->ops->coll_init != NULL && c->ops->coll_sum_f32 != NULL; }
static int no_coll(const kern_ctx_t *c) {
    return inca_fail(INCA_EINVAL, "collectives between devices (NCCL) need CUDA devices and a build with NCCL; this "
                     "context is %s%s", kc_describe(c), c->dev == KERN_DEV_CUDA ? ", built without NCCL" : "");
}
int kc_device_uid(kern_ctx_t *c, char *buf, size_t cap) {
    return c->ops->device_uid ? c->ops->device_uid(c, buf, cap) : no_coll(c);
}
int kc_coll_id(kern_ctx_t *c, void *id) { return c->ops->coll_id ? c->ops->coll_id(c, id) : no_coll(c); }
int kc_coll_init(kern_ctx_t *c, const void *id, int rank, int size) {
    return c->ops->coll_init ? c->ops->coll_init(c, id, rank, size) : no_coll(c);
}
int kc_coll_sum_f32(kern_ctx_t *c, const float *send, float *recv, int64_t n) {
    return kc_coll_sum_f32_many(c, 1, &send, &recv, &n);
}
int kc_coll_sum_f32_many(kern_ctx_t *c, int nbuf, const float *const *send, float *const *recv, const int64_t *n) {
    if (!c->ops->coll_sum_f32) return no_coll(c);
    int64_t any = 0;
    for (int i = 0; i < nbuf; i++) any |= n[i];
    return any ? c->ops->coll_sum_f32(c, nbuf, send, recv, n) : INCA_OK;
}

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

/* ---- accounting: the context's kernels/memtrack.h ---- */
int kc_mem_admit(kern_ctx_t *c, kern_mem_t mem, size_t bytes, const char *what) { return kmt_admit(c->mt, (int)mem, bytes, what); }
int kc_mem_note(kern_ctx_t *c, kern_mem_t mem, const void *p, size_t bytes) { return kmt_note(c->mt, (int)mem, p, bytes); }
void kc_mem_forget(kern_ctx_t *c, const void *p) { kmt_forget(c->mt, p); }
const char *kc_mem_tag(kern_ctx_t *c, const char *tag) { return kmt_tag(c->mt, tag); }
void kc_mem_limit(kern_ctx_t *c, int64_t bytes) { kmt_limit(c->mt, bytes); }
void kc_mem_reset_peak(kern_ctx_t *c) { kmt_reset_peak(c->mt); }
void kc_mem_copied(kern_ctx_t *c, int64_t out[3]) { kmt_copied(c->mt, out); }
void kc_mem_stats(kern_ctx_t *c, kern_mem_stats_t *s) {
    kmt_stats(c->mt, s);
    if (c->ops->mem_info) (void)c->ops->mem_info(c, &s->device_total, &s->device_free);
}
int64_t kc_mem_tag_now(kern_ctx_t *c, const char *tag) {
    kern_mem_stats_t s;
    kmt_stats(c->mt, &s);
    for (int t = 0; t < s.ntags; t++)
        if (strcmp(s.tag[t], tag) == 0) return s.tag_now[t];
    return 0;
}

/* ---- matrices ---- */
int kc_mat_create(kern_ctx_t *c, int64_t rows_max, int64_t n_cols, int64_t nnz_max, kern_mat_t **out) {
    *out = NULL;
    if (rows_max < 0 || n_cols < 0 || nnz_max < 0)
        return inca_fail(INCA_EINVAL, "kc_mat_create: bad capacity %lld x %lld, %lld nonzeros", (long long)rows_max,
                         (long long)n_cols, (long long)nnz_max);
    kern_mat_t *a = inca_calloc(1, sizeof *a);
    if (!a) return inca_fail(INCA_ENOMEM, "kc_mat_create: out of memory");
    a->rows_max = rows_max;
    a->n_cols = n_cols;
    a->nnz_max = nnz_max;
    if (c->dev != KERN_DEV_CPU && c->ops->mat_reserve) {
        int rc = c->ops->mat_reserve(c, a);
        if (rc != INCA_OK) {
            kc_mat_free(c, &a);
            return rc;
        }
    }
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
/* an SpMM's gather of `rows` source rows of width f (esz bytes a value) */
static void prof_gather(kern_ctx_t *c, int64_t f, int64_t rows, int esz) {
    kern_prof_t *p = c->prof;
    if (!p) return;
    int w = 0;
    while (w < p->nwidths && p->width[w] != f) w++;
    if (w == p->nwidths && p->nwidths < KPROF_MAX_WIDTHS) p->width[p->nwidths++] = f;
    if (w == KPROF_MAX_WIDTHS) w = KPROF_MAX_WIDTHS - 1;
    p->gather_bytes[w] += (double)rows * (double)f * esz;
}
#define OPW(kind, flops, bytes, name, ...)                                            \
    do {                                                                              \
        if (!c->prof) return c->ops->name(c, __VA_ARGS__);                            \
        const double t0_ = prof_begin(c);                                             \
        const int rc_ = c->ops->name(c, __VA_ARGS__);                                 \
        return prof_end(c, rc_, t0_, kind, (double)(flops), (double)(bytes));         \
    } while (0)
#define F4 4.0   /* bytes of an fp32 value */
#define EW(n, arrays, name, ...) OPW(KPROF_ELEMWISE, 0, F4 * (double)(n) * (arrays), name, __VA_ARGS__)
int kc_spmm(kern_ctx_t *c, kern_mat_t *a, const float *vals, const float *x, int64_t f, float alpha, float beta,
            float *y) {
    prof_gather(c, f, a->nnz, 4);   /* plus the rows written (read too when beta != 0) and the indices */
    OPW(KPROF_SPMM, 0, F4 * (double)a->rows * (double)f * (beta != 0 ? 2 : 1) + 8.0 * (double)a->nnz, spmm, a, vals, x, f,
        alpha, beta, y);
}
int kc_spmm_base(kern_ctx_t *c, kern_mat_t *a, const float *x, int64_t f, const float *base, int64_t n_base,
                 const int64_t *ids, float *y) {
    prof_gather(c, f, a->nnz, 4);
    OPW(KPROF_SPMM, 0, F4 * (double)a->rows * (double)f * 2 + 8.0 * (double)a->nnz, spmm_base, a, x, f, base, n_base, ids, y);
}
int kc_spmm_bf16(kern_ctx_t *c, kern_mat_t *a, const uint16_t *x, int64_t f, float *y) {
    prof_gather(c, f, a->nnz, 2);
    OPW(KPROF_SPMM, 0, F4 * (double)a->rows * (double)f + 8.0 * (double)a->nnz, spmm_bf16, a, x, f, y);
}
int kc_gemm(kern_ctx_t *c, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
            const float *b, int64_t ldb, float beta, float *cc, int64_t ldc) {
    OPW(KPROF_GEMM, 2.0 * (double)m * (double)n * (double)k, F4 * ((double)m * k + (double)k * n + (double)m * n),
        gemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc);
}
int kc_axpby(kern_ctx_t *c, int64_t n, float alpha, const float *x, float beta, float *y) { EW(n, 3, axpby, n, alpha, x, beta, y); }
int kc_sub(kern_ctx_t *c, int64_t n, const float *a, const float *b, float *out) { EW(n, 3, sub, n, a, b, out); }
int kc_add_bias(kern_ctx_t *c, int64_t rows, int64_t f, const float *b, float *y) { EW(rows * f, 2, add_bias, rows, f, b, y); }
int kc_bias_grad(kern_ctx_t *c, int64_t rows, int64_t f, const float *dy, float *db) { EW(rows * f, 1, bias_grad, rows, f, dy, db); }
int kc_relu(kern_ctx_t *c, int64_t n, const float *x, float *y) { EW(n, 2, relu, n, x, y); }
int kc_relu_grad(kern_ctx_t *c, int64_t n, const float *y, const float *dy, float *dx) { EW(n, 3, relu_grad, n, y, dy, dx); }
int kc_dropout(kern_ctx_t *c, int64_t n, float p, uint64_t seed, uint64_t stream, const float *x, float *y,
               uint8_t *mask) { EW(n, 2.25, dropout, n, p, seed, stream, x, y, mask); }
int kc_dropout_grad(kern_ctx_t *c, int64_t n, float p, const uint8_t *mask, const float *dy, float *dx) {
    EW(n, 2.25, dropout_grad, n, p, mask, dy, dx);
}
int kc_bias_relu(kern_ctx_t *c, int64_t rows, int64_t f, const float *b, const float *z, float *y) {
    EW(rows * f, 2, bias_relu, rows, f, b, z, y);
}
int kc_relu_drop_grad(kern_ctx_t *c, int64_t n, const float *y, const float *dy, float p, const uint8_t *mask,
                      float *dx) {
    EW(n, mask ? 3.25 : 3, relu_drop_grad, n, y, dy, p, mask, dx);
}
int kc_bn_forward(kern_ctx_t *c, int64_t n, int64_t f, int train, float *xhat, const float *gamma, const float *beta,
                  float *istd, float *rmean, float *rvar, float *y) {
    EW(n * f, 3, bn_forward, n, f, train, xhat, gamma, beta, istd, rmean, rvar, y);
}
int kc_bn_backward(kern_ctx_t *c, int64_t n, int64_t f, const float *gamma, const float *xhat, const float *istd,
                   const float *dy, float *dz, float *ggamma, float *gbeta) {
    EW(n * f, 3, bn_backward, n, f, gamma, xhat, istd, dy, dz, ggamma, gbeta);
}
int kc_softmax_xent(kern_ctx_t *c, int64_t rows, int64_t cc, const float *logits, const int32_t *y, const int64_t *idx,
                    int64_t nidx, float *logp, float *dlogits, double *loss) {
    OPW(KPROF_LOSS, 0, F4 * (double)rows * (double)cc * 3, softmax_xent, rows, cc, logits, y, idx, nidx, logp, dlogits, loss);
}
int kc_accuracy(kern_ctx_t *c, int64_t cc, const float *scores, const int32_t *y, const int64_t *idx, int64_t nidx,
                int64_t *counts) { OPW(KPROF_LOSS, 0, F4 * (double)nidx * (double)cc, accuracy, cc, scores, y, idx, nidx, counts); }
int kc_class_counts(kern_ctx_t *c, int64_t cc, const float *scores, const int32_t *y, const int64_t *idx, int64_t nidx,
                    int64_t *counts) { OPW(KPROF_LOSS, 0, F4 * (double)nidx * (double)cc, class_counts, cc, scores, y, idx, nidx, counts); }
int kc_adam(kern_ctx_t *c, int64_t n, float *w, const float *g, float *m, float *v, const kern_adam_t *hp) {
    OPW(KPROF_OPTIM, 0, F4 * (double)n * 7, adam, n, w, g, m, v, hp);   /* w, m, v read and written, g read */
}
static double dt_size(kern_dtype_t dt) { return dt == KERN_BF16 ? 2.0 : 4.0; }
int kc_gather_rows(kern_ctx_t *c, kern_dtype_t dt, const void *t, int64_t f, const int64_t *ids, int64_t start,
                   int64_t m, float *out) {
    OPW(KPROF_COPY, 0, (double)m * (double)f * (dt_size(dt) + 4), gather_rows, dt, t, f, ids, start, m, out);
}
int kc_scatter_rows(kern_ctx_t *c, kern_dtype_t dt, void *t, int64_t f, const int64_t *ids, int64_t start, int64_t m,
                    const float *in) { OPW(KPROF_COPY, 0, (double)m * (double)f * (dt_size(dt) + 4), scatter_rows, dt, t, f, ids, start, m, in); }
int kc_sub_rows(kern_ctx_t *c, kern_dtype_t dt, void *t, int64_t f, const int64_t *ids, int64_t m, const float *in,
                float *out, const float *push) { OPW(KPROF_COPY, 0, (double)m * (double)f * (dt_size(dt) + 8), sub_rows, dt, t, f, ids, m, in, out, push); }
int kc_encode(kern_ctx_t *c, kern_dtype_t dt, int64_t n, const float *in, void *out) {
    OPW(KPROF_ELEMWISE, 0, (double)n * (dt_size(dt) + 4), encode, dt, n, in, out);
}
int kc_decode(kern_ctx_t *c, kern_dtype_t dt, int64_t n, const void *in, float *out) {
    OPW(KPROF_ELEMWISE, 0, (double)n * (dt_size(dt) + 4), decode, dt, n, in, out);
}
#undef EW
#undef F4
#undef OPW

void kc_prof_attach(kern_ctx_t *c, kern_prof_t *p) { c->prof = p; }
const char *kprof_kind_name(kprof_kind_t k) {
    static const char *const names[KPROF_NKINDS] = {"gemm", "spmm", "elementwise", "loss", "optimiser", "copies"};
    return k >= 0 && k < KPROF_NKINDS ? names[k] : "?";
}
