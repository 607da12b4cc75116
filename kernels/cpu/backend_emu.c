/* The emulated device ("emu"): the CPU table's kernels behind a device's memory rules, so the
 * device code paths of the trainers run, and fail the way a GPU would make them fail, on a
 * machine without one. Device memory is its own mmap, PROT_NONE except while an op or a copy
 * runs: a host read or write of it segfaults, as dereferencing a CUDA pointer does. Every op
 * checks that its array arguments are device memory and copies check their direction. Tested
 * in test_backend.c; the trainers' device paths are tested on it in test_device.c. */
#include "kernels/backend.h"
#include "core/alloc.h"
#include "core/status.h"
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const kern_ops_t *kern_cpu_ops(void);

typedef struct emu_block {
    char *p;
    size_t bytes, mapped;
    kern_mem_t mem;
} emu_block_t;

typedef struct emu_ctx {
    kern_ctx_t base;
    emu_block_t *b;
    int nb, cap;
    int64_t capacity;   /* the emulated device's memory (0: unlimited) */
    int64_t dev_bytes;  /* device bytes mapped now */
} emu_ctx_t;

typedef struct emu_mat {
    csr_t d;          /* what the CPU kernels see: device arrays (or a view of the parent's) */
    float *val;       /* the value array (d.val is NULL when the matrix is all ones) */
    int view;
} emu_mat_t;

static const kern_ops_t *cpu(void) { return kern_cpu_ops(); }

static int fail(kern_ctx_t *c, int rc) {
    if (!c->status) c->status = rc;
    return rc;
}

static void protect(emu_ctx_t *e, int prot) {
    for (int i = 0; i < e->nb; i++)
        if (e->b[i].mem == KERN_MEM_DEVICE) mprotect(e->b[i].p, e->b[i].mapped, prot);
}
#define ENTER(c) protect((emu_ctx_t *)(c), PROT_READ | PROT_WRITE)
#define LEAVE(c) protect((emu_ctx_t *)(c), PROT_NONE)

/* the block holding p, or NULL */
static const emu_block_t *find(const kern_ctx_t *c, const void *p) {
    const emu_ctx_t *e = (const emu_ctx_t *)c;
    const char *q = p;
    for (int i = 0; i < e->nb; i++)
        if (q >= e->b[i].p && q < e->b[i].p + (e->b[i].bytes ? e->b[i].bytes : 1)) return &e->b[i];
    return NULL;
}
static int is_dev(const kern_ctx_t *c, const void *p) {
    const emu_block_t *b = find(c, p);
    return b && b->mem == KERN_MEM_DEVICE;
}

/* p is one past the end of a device block: an empty slice at a table's end, which CUDA takes
 * with a length of 0 (ops only: a copy's direction is told by is_dev, where a host block that
 * happens to start there must stay host) */
static int is_dev_end(const kern_ctx_t *c, const void *p) {
    const emu_ctx_t *e = (const emu_ctx_t *)c;
    for (int i = 0; i < e->nb; i++)
        if (e->b[i].mem == KERN_MEM_DEVICE && (const char *)p == e->b[i].p + e->b[i].bytes) return 1;
    return 0;
}

/* every pointer must be NULL or device memory; names is the argument list as written ("x, y"),
 * the i-th of which names the i-th pointer */
static int check(kern_ctx_t *c, const char *op, int n, const void *const *ptrs, const char *names) {
    for (int i = 0; i < n; i++) {
        if (!ptrs[i] || is_dev(c, ptrs[i]) || is_dev_end(c, ptrs[i])) continue;
        const char *s = names;
        for (int k = 0; k < i && s; k++) s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL;
        s = s ? s + strspn(s, " ") : "?";
        return fail(c, inca_fail(INCA_EINVAL, "emu device: %s: argument %d (%.*s, %p) is not device memory", op, i + 1,
                                 (int)strcspn(s, ","), s, ptrs[i]));
    }
    return INCA_OK;
}
#define DEV(op, ...)                                                                                       \
    do {                                                                                                   \
        const void *const p_[] = {__VA_ARGS__};                                                            \
        int rc_ = check(c, op, (int)(sizeof p_ / sizeof p_[0]), p_, #__VA_ARGS__);                         \
        if (rc_ != INCA_OK) return rc_;                                                                    \
    } while (0)
/* run a CPU op with device memory open */
#define RUN(expr)                                                                                          \
    do {                                                                                                   \
        ENTER(c);                                                                                          \
        int rc_ = (expr);                                                                                  \
        LEAVE(c);                                                                                          \
        return rc_ == INCA_OK ? rc_ : fail(c, rc_);                                                        \
    } while (0)

static int e_alloc(kern_ctx_t *c, kern_mem_t mem, size_t bytes, void **out) {
    emu_ctx_t *e = (emu_ctx_t *)c;
    *out = NULL;
    if (e->nb == e->cap) {
        const int cap = e->cap ? 2 * e->cap : 64;
        emu_block_t *nb = inca_realloc(e->b, (size_t)cap * sizeof *nb);
        if (!nb) return inca_fail(INCA_ENOMEM, "emu device: out of memory");
        e->b = nb;
        e->cap = cap;
    }
    emu_block_t b = {.bytes = bytes, .mem = mem};
    if (mem == KERN_MEM_DEVICE && e->capacity > 0 && e->dev_bytes + (int64_t)(bytes ? bytes : 1) > e->capacity)
        return inca_fail(INCA_ENOMEM, "emu device: out of memory: %zu bytes asked with %lld of its %lld in use", bytes,
                         (long long)e->dev_bytes, (long long)e->capacity);
    if (mem == KERN_MEM_DEVICE) {
        const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
        b.mapped = ((bytes ? bytes : 1) + pg - 1) / pg * pg;
        void *p = mmap(NULL, b.mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);   /* zero pages */
        if (p == MAP_FAILED) return inca_fail(INCA_ENOMEM, "emu device: cannot map %zu bytes", bytes);
        b.p = p;
        e->dev_bytes += (int64_t)(bytes ? bytes : 1);
    } else {
        b.p = inca_calloc(bytes ? bytes : 1, 1);
        if (!b.p) return inca_fail(INCA_ENOMEM, "emu device: out of host memory for %zu bytes", bytes);
    }
    e->b[e->nb++] = b;
    *out = b.p;
    return INCA_OK;
}

static void e_release(kern_ctx_t *c, kern_mem_t mem, void *p) {
    emu_ctx_t *e = (emu_ctx_t *)c;
    for (int i = 0; i < e->nb; i++)
        if (e->b[i].p == p) {
            if (e->b[i].mem != mem && !c->status)   /* released as the wrong kind: a caller bug */
                c->status = inca_fail(INCA_EINVAL, "emu device: %p released as memory kind %d, allocated as %d", p,
                                      (int)mem, (int)e->b[i].mem);
            if (e->b[i].mem == KERN_MEM_DEVICE) {
                munmap(e->b[i].p, e->b[i].mapped);
                e->dev_bytes -= (int64_t)(e->b[i].bytes ? e->b[i].bytes : 1);
            }
            else inca_free(e->b[i].p);
            e->b[i] = e->b[--e->nb];
            return;
        }
    if (!c->status) c->status = inca_fail(INCA_EINVAL, "emu device: release of %p, which it did not allocate", p);
}

static int e_copy(kern_ctx_t *c, void *dst, const void *src, size_t bytes, kern_copy_t kind, int stream) {
    (void)stream;
    const int dd = is_dev(c, dst), sd = is_dev(c, src);
    const int ok = kind == KERN_H2D ? dd && !sd : kind == KERN_D2H ? !dd && sd : dd && sd;
    if (!ok)
        return fail(c, inca_fail(INCA_EINVAL, "emu device: copy of kind %s from %s to %s memory",
                                 kind == KERN_H2D ? "H2D" : kind == KERN_D2H ? "D2H" : "D2D", sd ? "device" : "host",
                                 dd ? "device" : "host"));
    ENTER(c);
    memmove(dst, src, bytes);
    LEAVE(c);
    return INCA_OK;
}

static int e_zero(kern_ctx_t *c, void *dst, size_t bytes, int stream) {
    (void)stream;
    DEV("zero", dst);
    ENTER(c);
    memset(dst, 0, bytes);
    LEAVE(c);
    return INCA_OK;
}
static int e_event(kern_ctx_t *c, int a, int b) { (void)c; (void)a; (void)b; return INCA_OK; }
static int e_sync(kern_ctx_t *c) { return c->status; }
static int e_event_sync(kern_ctx_t *c, int ev) { (void)ev; return c->status; }

static void e_mat_drop(kern_ctx_t *c, kern_mat_t *a) {
    emu_mat_t *m = a->impl;
    if (!m) return;
    if (!m->view) {
        kc_release(c, KERN_MEM_DEVICE, m->d.rowptr);
        kc_release(c, KERN_MEM_DEVICE, m->d.col);
        kc_release(c, KERN_MEM_DEVICE, m->val);
    }
    inca_free(m);
    a->impl = NULL;
}

/* the device arrays at the matrix's capacity, when it is created (kc_mat_create) */
static int e_mat_reserve(kern_ctx_t *c, kern_mat_t *a) {
    if (a->impl) return INCA_OK;
    emu_mat_t *m = inca_calloc(1, sizeof *m);
    if (!m) return inca_fail(INCA_ENOMEM, "emu device: out of memory");
    a->impl = m;
    int rc;
    if ((rc = kc_alloc(c, KERN_MEM_DEVICE, (size_t)(a->rows_max + 1) * sizeof(int64_t), (void **)&m->d.rowptr)) ||
        (rc = kc_alloc(c, KERN_MEM_DEVICE, (size_t)a->nnz_max * sizeof(int32_t), (void **)&m->d.col)) ||
        (rc = kc_alloc(c, KERN_MEM_DEVICE, (size_t)a->nnz_max * sizeof(float), (void **)&m->val))) {
        e_mat_drop(c, a);
        return rc;
    }
    return INCA_OK;
}

static int e_mat_set(kern_ctx_t *c, kern_mat_t *a, const csr_t *h, int stream) {
    emu_mat_t *m = a->impl;
    int rc = INCA_OK;
    if (!m) {
        if (!(m = inca_calloc(1, sizeof *m))) return inca_fail(INCA_ENOMEM, "emu device: out of memory");
        a->impl = m;
        if (!h) {   /* a rows view of the parent's device arrays */
            const emu_mat_t *pm = a->parent->impl;
            m->view = 1;
            ENTER(c);
            m->d = csr_row_view(&pm->d, a->r0, a->r0 + a->rows);
            LEAVE(c);
            a->nnz = a->nnz_max = m->d.nnz;
            a->host = &m->d;
            return INCA_OK;
        }
        inca_free(m);
        a->impl = NULL;
        if ((rc = e_mat_reserve(c, a)) != INCA_OK) return rc;
        m = a->impl;
    }
    m->d.n_rows = h->n_rows;
    m->d.n_cols = h->n_cols;
    m->d.nnz = h->nnz;
    m->d.val = h->val ? m->val : NULL;   /* the CPU kernels read NULL values as ones */
    a->host = &m->d;
    if ((rc = kc_copy(c, m->d.rowptr, h->rowptr, (size_t)(h->n_rows + 1) * sizeof(int64_t), KERN_H2D, stream)) ||
        (rc = kc_copy(c, m->d.col, h->col, (size_t)h->nnz * sizeof(int32_t), KERN_H2D, stream)))
        return rc;
    return h->val ? kc_copy(c, m->val, h->val, (size_t)h->nnz * sizeof(float), KERN_H2D, stream) : INCA_OK;
}

/* ---- the ops: device arguments checked, then the CPU op with device memory open ---- */
static int e_spmm(kern_ctx_t *c, kern_mat_t *a, const float *vals, const float *x, int64_t f, float al, float be,
                  float *y) {
    DEV("spmm", vals, x, y);
    RUN(cpu()->spmm(c, a, vals, x, f, al, be, y));
}
static int e_spmm_base(kern_ctx_t *c, kern_mat_t *a, const float *x, int64_t f, const float *base, int64_t nb,
                       const int64_t *ids, float *y) {
    DEV("spmm_base", x, base, ids, y);
    RUN(cpu()->spmm_base(c, a, x, f, base, nb, ids, y));
}
static int e_spmm_bf16(kern_ctx_t *c, kern_mat_t *a, const uint16_t *x, int64_t f, float *y) {
    DEV("spmm_bf16", x, y);
    RUN(cpu()->spmm_bf16(c, a, x, f, y));
}
static int e_gemm(kern_ctx_t *c, int ta, int tb, int64_t m, int64_t n, int64_t k, float al, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float be, float *cc, int64_t ldc) {
    DEV("gemm", a, b, cc);
    RUN(cpu()->gemm(c, ta, tb, m, n, k, al, a, lda, b, ldb, be, cc, ldc));
}
static int e_axpby(kern_ctx_t *c, int64_t n, float al, const float *x, float be, float *y) {
    DEV("axpby", x, y);
    RUN(cpu()->axpby(c, n, al, x, be, y));
}
static int e_sub(kern_ctx_t *c, int64_t n, const float *a, const float *b, float *o) {
    DEV("sub", a, b, o);
    RUN(cpu()->sub(c, n, a, b, o));
}
static int e_add_bias(kern_ctx_t *c, int64_t r, int64_t f, const float *b, float *y) {
    DEV("add_bias", b, y);
    RUN(cpu()->add_bias(c, r, f, b, y));
}
static int e_bias_grad(kern_ctx_t *c, int64_t r, int64_t f, const float *dy, float *db) {
    DEV("bias_grad", dy, db);
    RUN(cpu()->bias_grad(c, r, f, dy, db));
}
static int e_relu(kern_ctx_t *c, int64_t n, const float *x, float *y) {
    DEV("relu", x, y);
    RUN(cpu()->relu(c, n, x, y));
}
static int e_relu_grad(kern_ctx_t *c, int64_t n, const float *y, const float *dy, float *dx) {
    DEV("relu_grad", y, dy, dx);
    RUN(cpu()->relu_grad(c, n, y, dy, dx));
}
static int e_dropout(kern_ctx_t *c, int64_t n, float p, uint64_t seed, uint64_t st, const float *x, float *y,
                     uint8_t *mask) {
    DEV("dropout", x, y, mask);
    RUN(cpu()->dropout(c, n, p, seed, st, x, y, mask));
}
static int e_dropout_grad(kern_ctx_t *c, int64_t n, float p, const uint8_t *mask, const float *dy, float *dx) {
    DEV("dropout_grad", mask, dy, dx);
    RUN(cpu()->dropout_grad(c, n, p, mask, dy, dx));
}
static int e_bias_relu(kern_ctx_t *c, int64_t r, int64_t f, const float *b, const float *z, float *y) {
    DEV("bias_relu", b, z, y);
    RUN(cpu()->bias_relu(c, r, f, b, z, y));
}
static int e_relu_drop_grad(kern_ctx_t *c, int64_t n, const float *y, const float *dy, float p, const uint8_t *mask,
                            float *dx) {
    DEV("relu_drop_grad", y, dy, mask, dx);
    RUN(cpu()->relu_drop_grad(c, n, y, dy, p, mask, dx));
}
static int e_bn_forward(kern_ctx_t *c, int64_t n, int64_t f, int train, float *xh, const float *g, const float *b,
                        float *is, float *rm, float *rv, float *y) {
    DEV("bn_forward", xh, g, b, is, rm, rv, y);
    RUN(cpu()->bn_forward(c, n, f, train, xh, g, b, is, rm, rv, y));
}
static int e_bn_backward(kern_ctx_t *c, int64_t n, int64_t f, const float *g, const float *xh, const float *is,
                         const float *dy, float *dz, float *gg, float *gb) {
    DEV("bn_backward", g, xh, is, dy, dz, gg, gb);
    RUN(cpu()->bn_backward(c, n, f, g, xh, is, dy, dz, gg, gb));
}
static int e_softmax_xent(kern_ctx_t *c, int64_t rows, int64_t cc, const float *lg, const int32_t *y,
                          const int64_t *idx, int64_t nidx, float *logp, float *dl, double *loss) {
    DEV("softmax_xent", lg, y, idx, logp, dl, loss);
    RUN(cpu()->softmax_xent(c, rows, cc, lg, y, idx, nidx, logp, dl, loss));
}
static int e_accuracy(kern_ctx_t *c, int64_t cc, const float *s, const int32_t *y, const int64_t *idx, int64_t nidx,
                      int64_t *counts) {
    DEV("accuracy", s, y, idx, counts);
    RUN(cpu()->accuracy(c, cc, s, y, idx, nidx, counts));
}
static int e_class_counts(kern_ctx_t *c, int64_t cc, const float *s, const int32_t *y, const int64_t *idx, int64_t nidx,
                          int64_t *counts) {
    DEV("class_counts", s, y, idx, counts);
    RUN(cpu()->class_counts(c, cc, s, y, idx, nidx, counts));
}
static int e_adam(kern_ctx_t *c, int64_t n, float *w, const float *g, float *m, float *v, const kern_adam_t *hp) {
    DEV("adam", w, g, m, v);
    RUN(cpu()->adam(c, n, w, g, m, v, hp));
}
static int e_gather(kern_ctx_t *c, kern_dtype_t dt, const void *t, int64_t f, const int64_t *ids, int64_t st, int64_t m,
                    float *out) {
    DEV("gather_rows", t, ids, out);
    RUN(cpu()->gather_rows(c, dt, t, f, ids, st, m, out));
}
static int e_scatter(kern_ctx_t *c, kern_dtype_t dt, void *t, int64_t f, const int64_t *ids, int64_t st, int64_t m,
                     const float *in) {
    DEV("scatter_rows", t, ids, in);
    RUN(cpu()->scatter_rows(c, dt, t, f, ids, st, m, in));
}
static int e_sub_rows(kern_ctx_t *c, kern_dtype_t dt, void *t, int64_t f, const int64_t *ids, int64_t m,
                      const float *in, float *out, const float *push) {
    DEV("sub_rows", t, ids, in, out, push);
    RUN(cpu()->sub_rows(c, dt, t, f, ids, m, in, out, push));
}
static int e_encode(kern_ctx_t *c, kern_dtype_t dt, int64_t n, const float *in, void *out) {
    DEV("encode", in, out);
    RUN(cpu()->encode(c, dt, n, in, out));
}
static int e_decode(kern_ctx_t *c, kern_dtype_t dt, int64_t n, const void *in, float *out) {
    DEV("decode", in, out);
    RUN(cpu()->decode(c, dt, n, in, out));
}

static void e_destroy(kern_ctx_t *c) {
    emu_ctx_t *e = (emu_ctx_t *)c;
    for (int i = 0; i < e->nb; i++) {   /* what the caller leaked is still freed */
        if (e->b[i].mem == KERN_MEM_DEVICE) munmap(e->b[i].p, e->b[i].mapped);
        else inca_free(e->b[i].p);
    }
    inca_free(e->b);
    inca_free(e);
}

static int e_mem_info(kern_ctx_t *c, int64_t *total, int64_t *free_now) {
    const emu_ctx_t *e = (const emu_ctx_t *)c;
    *total = e->capacity;
    *free_now = e->capacity > 0 ? e->capacity - e->dev_bytes : 0;
    return INCA_OK;
}

static const kern_ops_t emu_ops = {
    .name = "emu", .destroy = e_destroy, .mem_info = e_mem_info, .alloc = e_alloc, .release = e_release, .copy = e_copy, .zero = e_zero,
    .event_record = e_event, .stream_wait = e_event, .event_sync = e_event_sync, .sync = e_sync, .mat_set = e_mat_set, .mat_drop = e_mat_drop, .mat_reserve = e_mat_reserve,
    .spmm = e_spmm, .spmm_base = e_spmm_base, .spmm_bf16 = e_spmm_bf16, .gemm = e_gemm, .axpby = e_axpby,
    .sub = e_sub, .add_bias = e_add_bias, .bias_grad = e_bias_grad, .relu = e_relu, .relu_grad = e_relu_grad,
    .dropout = e_dropout, .dropout_grad = e_dropout_grad,
    .bias_relu = e_bias_relu, .relu_drop_grad = e_relu_drop_grad, .bn_forward = e_bn_forward, .bn_backward = e_bn_backward,
    .softmax_xent = e_softmax_xent, .accuracy = e_accuracy, .class_counts = e_class_counts, .adam = e_adam, .gather_rows = e_gather,
    .scatter_rows = e_scatter, .sub_rows = e_sub_rows, .encode = e_encode, .decode = e_decode,
};

/* Blocks still allocated (leak checks in tests). */
int kern_emu_live_blocks(const kern_ctx_t *c) { return ((const emu_ctx_t *)c)->nb; }

int kern_emu_create(int64_t capacity, kern_ctx_t **out) {
    emu_ctx_t *e = inca_calloc(1, sizeof *e);
    if (!e) return inca_fail(INCA_ENOMEM, "emu device: out of memory");
    e->capacity = capacity > 0 ? capacity : 0;
    e->base.ops = &emu_ops;
    e->base.dev = KERN_DEV_EMU;
    if (e->capacity > 0)
        snprintf(e->base.describe, sizeof e->base.describe, "emu (CPU kernels, device memory rules, %.1f GiB)",
                 (double)e->capacity / 1073741824.0);
    else snprintf(e->base.describe, sizeof e->base.describe, "emu (CPU kernels, device memory rules)");
    *out = &e->base;
    return INCA_OK;
}
