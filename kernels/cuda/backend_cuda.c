/* The CUDA backend of kernels/backend.h: a context with two streams (compute, copy), events,
 * cuSPARSE and cuBLAS handles and one growing scratch buffer; device CSR matrices with a cache
 * of SpMM plans (descriptors + workspace + cusparseSpMM_preprocess) per (width, beta kind);
 * cuBLAS GEMM; every other op launched from kernels.cu. Every CUDA / cuSPARSE / cuBLAS error is
 * one inca_fail line naming the op and the library's error text, kept in ctx->status.
 * Tested on a GPU by test_backend_ops.c (every op against the CPU backend); without one only
 * the build and the no-device path (kern_cuda_create fails, the test exits 77) are exercised. */
#include "kernels/backend.h"
#include "kernels/cuda/bodies.h"
#include "kernels/cuda/launch.h"
#include "core/status.h"
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>
#ifdef INCA_HAS_NCCL
#include <nccl.h>
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KCU_NPLANS 8   /* SpMM plans kept per matrix (widths x beta kinds in use) */

typedef struct kcu_ctx {
    kern_ctx_t base;
    int dev;
    cudaStream_t st[KERN_NSTREAMS];
    cudaEvent_t ev[KERN_NEVENTS];
    cusparseHandle_t sp;
    cublasHandle_t bl;
    void *scratch;        /* device, grows to the largest temporary an op needed */
    size_t scratch_bytes;
    void *blas_ws;        /* cuBLAS's workspace, ours so that it is accounted (KCU_BLAS_WS) */
    const char *last_op;  /* the op queued last: named when a queued kernel fails at sync */
#ifdef INCA_HAS_NCCL
    ncclComm_t nccl;      /* the clique of kc_coll_init (NULL: none joined) */
    int nccl_rank, nccl_size;
#endif
} kcu_ctx_t;

typedef struct kcu_plan {
    int64_t f;
    int beta0;                     /* plans differ for beta == 0 (Y overwritten) and beta != 0 */
    int stale;                     /* the matrix was set since: descriptors and preprocess redone */
    cusparseDnMatDescr_t x, y;
    void *buf;                     /* workspace (ALG3: preprocessed for the current contents) */
    size_t cap;                    /* its bytes: kept across kc_mat_set, grown only when short */
    uint64_t last_use;
} kcu_plan_t;

typedef struct kcu_mat {
    int idx64;                     /* offsets and columns as int64 (nnz_max >= 2^31) */
    int view;                      /* rows view: col and val are the parent's */
    int set;                       /* contents uploaded at least once (reserved arrays are not) */
    void *rowptr;                  /* rows + 1 offsets starting at 0 */
    void *col;                     /* int32 or int64 */
    float *val;                    /* nnz values (all ones when the host had none) */
    int64_t *rowptr64;             /* upload staging: the host's int64 offsets */
    int64_t *hrowptr;              /* host copy of the offsets (rows views need them) */
    cusparseSpMatDescr_t descr;    /* NULL while empty */
    kcu_plan_t plans[KCU_NPLANS];
    int nplans;
    uint64_t clock;
} kcu_mat_t;

static kcu_ctx_t *kcu(kern_ctx_t *c) { return (kcu_ctx_t *)c; }

/* ---- errors: one line naming the op and the library's text; the first one is sticky ---- */
static int kcu_fail(kcu_ctx_t *c, int code, const char *op, const char *lib, const char *text) {
    int rc = inca_fail(code, "cuda %s: %s error: %s", op, lib, text);
    if (c && c->base.status == INCA_OK) c->base.status = rc;
    return rc;
}
static int kcu_check(kcu_ctx_t *c, const char *op, cudaError_t e) {
    if (e == cudaSuccess) return INCA_OK;
    (void)cudaGetLastError();   /* clear a non-sticky error so later calls are not blamed */
    return kcu_fail(c, e == cudaErrorMemoryAllocation ? INCA_ENOMEM : INCA_ERR, op, "CUDA", cudaGetErrorString(e));
}
static int kcu_sp(kcu_ctx_t *c, const char *op, cusparseStatus_t s) {
    if (s == CUSPARSE_STATUS_SUCCESS) return INCA_OK;
    return kcu_fail(c, s == CUSPARSE_STATUS_ALLOC_FAILED ? INCA_ENOMEM : INCA_ERR, op, "cuSPARSE",
                    cusparseGetErrorString(s));
}
static int kcu_bl(kcu_ctx_t *c, const char *op, cublasStatus_t s) {
    if (s == CUBLAS_STATUS_SUCCESS) return INCA_OK;
    return kcu_fail(c, s == CUBLAS_STATUS_ALLOC_FAILED ? INCA_ENOMEM : INCA_ERR, op, "cuBLAS", cublasGetStatusName(s));
}
/* after a launch: the launch error, and the op remembered for errors found at sync */
static int kcu_launched(kcu_ctx_t *c, const char *op, cudaError_t e) {
    c->last_op = op;
    return kcu_check(c, op, e);
}
/* a refused call (bad arguments): nothing was queued, so the context is not marked failed */
static int kcu_bad(kcu_ctx_t *c, const char *op, const char *what) {
    (void)c;
    return inca_fail(INCA_EINVAL, "cuda %s: %s", op, what);
}
static cudaStream_t kcu_stream(kcu_ctx_t *c) { return c->st[KERN_STREAM_COMPUTE]; }

/* The backend's own device blocks (matrix arrays, SpMM buffers, scratch, cuBLAS's workspace):
 * admitted against the context's limit and accounted like kc_alloc's (kernels/memtrack.c). */
static int kcu_dmalloc(kcu_ctx_t *c, const char *op, void **p, size_t bytes) {
    *p = NULL;
    int rc = kc_mem_admit(&c->base, KERN_MEM_DEVICE, bytes, op);
    if (rc == INCA_OK) rc = kcu_check(c, op, cudaMalloc(p, bytes));
    if (rc == INCA_OK && (rc = kc_mem_note(&c->base, KERN_MEM_DEVICE, *p, bytes)) != INCA_OK) {
        cudaFree(*p);
        *p = NULL;
    }
    return rc;
}
/* Every stream drained: cudaFree "may" synchronise (the runtime's words), so a buffer an op
 * queued earlier still reads (an SpMM workspace regrown, a matrix dropped) is freed only after
 * that op. Not in the step loop (nothing is freed there). */
static void kcu_drain(kcu_ctx_t *c) {
    for (int s = 0; s < KERN_NSTREAMS; s++)
        if (c->st[s]) (void)cudaStreamSynchronize(c->st[s]);
}
static void kcu_dfree(kcu_ctx_t *c, void *p) {
    if (!p) return;
    kc_mem_forget(&c->base, p);
    kcu_drain(c);
    cudaFree(p);
}

/* scratch of at least `bytes` on the device; grows (after the compute stream drains, as an op
 * queued earlier may still read the old buffer), never shrinks: no allocation in steady state */
static int kcu_scratch(kcu_ctx_t *c, const char *op, size_t bytes, void **out) {
    if (bytes > c->scratch_bytes) {
        int rc = kcu_check(c, op, cudaStreamSynchronize(kcu_stream(c)));
        if (rc) return rc;
        kcu_dfree(c, c->scratch);
        c->scratch = NULL;
        c->scratch_bytes = 0;
        if ((rc = kcu_dmalloc(c, op, &c->scratch, bytes))) return rc;
        c->scratch_bytes = bytes;
    }
    *out = c->scratch;
    return INCA_OK;
}

/* ---- memory and ordering ---- */
static int kcu_alloc(kern_ctx_t *ctx, kern_mem_t mem, size_t bytes, void **out) {
    kcu_ctx_t *c = kcu(ctx);
    *out = NULL;
    if (bytes == 0) bytes = 1;
    cudaError_t e = cudaSuccess;
    if (mem == KERN_MEM_DEVICE) {
        /* zeroed before returning: a plain cudaMemset runs on the legacy stream, which the
         * non-blocking streams do not wait for (a copy queued next could be overwritten) */
        e = cudaMalloc(out, bytes);
        if (e == cudaSuccess) {
            /* the zeroing's failure is an earlier op's sticky error, not a shortage: the
             * context's status, under its own name */
            const cudaError_t z = cudaMemsetAsync(*out, 0, bytes, kcu_stream(c));
            const cudaError_t y = z == cudaSuccess ? cudaStreamSynchronize(kcu_stream(c)) : z;
            if (y != cudaSuccess) {
                (void)cudaFree(*out);
                *out = NULL;
                return kcu_check(c, "alloc (zeroing)", y);
            }
        }
    } else if (mem == KERN_MEM_PINNED) {
        e = cudaMallocHost(out, bytes);
        if (e == cudaSuccess) memset(*out, 0, bytes);
    } else {
        *out = calloc(1, bytes);
        if (!*out) return inca_fail(INCA_ENOMEM, "cuda alloc: %zu bytes of host memory", bytes);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (*out) mem == KERN_MEM_DEVICE ? (void)cudaFree(*out) : (void)cudaFreeHost(*out);
        *out = NULL;
        return inca_fail(INCA_ENOMEM, "cuda alloc: %zu bytes of %s memory: %s", bytes,
                         mem == KERN_MEM_DEVICE ? "device" : "pinned host", cudaGetErrorString(e));
    }
    return INCA_OK;
}
static void kcu_release(kern_ctx_t *ctx, kern_mem_t mem, void *p) {
    if (!p) return;
    if (mem != KERN_MEM_HOST) kcu_drain(kcu(ctx));   /* a queued op or copy may still use it */
    if (mem == KERN_MEM_DEVICE) cudaFree(p);
    else if (mem == KERN_MEM_PINNED) cudaFreeHost(p);
    else free(p);
}
static int kcu_bad_stream(kcu_ctx_t *c, const char *op, int stream) {
    char msg[64];
    snprintf(msg, sizeof msg, "stream %d outside [0, %d)", stream, KERN_NSTREAMS);
    return kcu_bad(c, op, msg);
}
static int kcu_copy(kern_ctx_t *ctx, void *dst, const void *src, size_t bytes, kern_copy_t kind, int stream) {
    kcu_ctx_t *c = kcu(ctx);
    if (stream < 0 || stream >= KERN_NSTREAMS) return kcu_bad_stream(c, "copy", stream);
    if (bytes == 0) return INCA_OK;
    const enum cudaMemcpyKind k = kind == KERN_H2D   ? cudaMemcpyHostToDevice
                                  : kind == KERN_D2H ? cudaMemcpyDeviceToHost
                                                     : cudaMemcpyDeviceToDevice;
    int rc = kcu_launched(c, "copy", cudaMemcpyAsync(dst, src, bytes, k, c->st[stream]));
    /* backend.h promises a D2H copy into ordinary (pageable) memory has arrived on return; CUDA
     * only says such a copy "might be synchronous", so wait for the stream where dst is pageable */
    struct cudaPointerAttributes at;
    if (rc == INCA_OK && kind == KERN_D2H &&
        (cudaPointerGetAttributes(&at, dst) != cudaSuccess || at.type == cudaMemoryTypeUnregistered)) {
        (void)cudaGetLastError();
        rc = kcu_check(c, "copy", cudaStreamSynchronize(c->st[stream]));
    }
    return rc;
}
static int kcu_zero(kern_ctx_t *ctx, void *dst, size_t bytes, int stream) {
    kcu_ctx_t *c = kcu(ctx);
    if (stream < 0 || stream >= KERN_NSTREAMS) return kcu_bad_stream(c, "zero", stream);
    if (bytes == 0) return INCA_OK;
    return kcu_launched(c, "zero", cudaMemsetAsync(dst, 0, bytes, c->st[stream]));
}
static int kcu_event_record(kern_ctx_t *ctx, int event, int stream) {
    kcu_ctx_t *c = kcu(ctx);
    if (stream < 0 || stream >= KERN_NSTREAMS) return kcu_bad_stream(c, "event_record", stream);
    if (event < 0 || event >= KERN_NEVENTS) return kcu_bad(c, "event_record", "event outside [0, KERN_NEVENTS)");
    return kcu_check(c, "event_record", cudaEventRecord(c->ev[event], c->st[stream]));
}
static int kcu_stream_wait(kern_ctx_t *ctx, int stream, int event) {
    kcu_ctx_t *c = kcu(ctx);
    if (stream < 0 || stream >= KERN_NSTREAMS) return kcu_bad_stream(c, "stream_wait", stream);
    if (event < 0 || event >= KERN_NEVENTS) return kcu_bad(c, "stream_wait", "event outside [0, KERN_NEVENTS)");
    return kcu_check(c, "stream_wait", cudaStreamWaitEvent(c->st[stream], c->ev[event], 0));
}
static int kcu_event_sync(kern_ctx_t *ctx, int event) {
    kcu_ctx_t *c = kcu(ctx);
    if (event < 0 || event >= KERN_NEVENTS) return kcu_bad(c, "event_sync", "event outside [0, KERN_NEVENTS)");
    return kcu_check(c, "event_sync", cudaEventSynchronize(c->ev[event]));
}
static int kcu_sync(kern_ctx_t *ctx) {
    kcu_ctx_t *c = kcu(ctx);
    for (int s = 0; s < KERN_NSTREAMS; s++) {
        cudaError_t e = cudaStreamSynchronize(c->st[s]);
        if (e != cudaSuccess) {
            char op[96];
            snprintf(op, sizeof op, "sync (last op queued: %s)", c->last_op ? c->last_op : "none");
            kcu_check(c, op, e);
            break;
        }
    }
    return c->base.status;
}

/* ---- sparse matrices ---- */
static void kcu_plans_drop(kcu_ctx_t *c, kcu_mat_t *m) {
    for (int i = 0; i < m->nplans; i++) {
        kcu_plan_t *p = &m->plans[i];
        if (p->x) cusparseDestroyDnMat(p->x);
        if (p->y) cusparseDestroyDnMat(p->y);
        kcu_dfree(c, p->buf);
        memset(p, 0, sizeof *p);
    }
    m->nplans = 0;
}
static void kcu_mat_drop(kern_ctx_t *ctx, kern_mat_t *a) {
    kcu_ctx_t *c = kcu(ctx);
    kcu_mat_t *m = a->impl;
    if (!m) return;
    kcu_plans_drop(c, m);
    if (m->descr) cusparseDestroySpMat(m->descr);
    kcu_dfree(c, m->rowptr);
    if (!m->view) {
        kcu_dfree(c, m->col);
        kcu_dfree(c, m->val);
        kcu_dfree(c, m->rowptr64);
    }
    free(m->hrowptr);
    free(m);
    a->impl = NULL;
}
static cusparseIndexType_t kcu_itype(const kcu_mat_t *m) { return m->idx64 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I; }
/* The sparse descriptor of the current contents (host-side only). The plans stay, marked
 * stale: a batch matrix set every step reuses its workspaces and allocates nothing. */
static int kcu_descr(kcu_ctx_t *c, kern_mat_t *a, kcu_mat_t *m) {
    for (int i = 0; i < m->nplans; i++) m->plans[i].stale = 1;
    if (m->descr) cusparseDestroySpMat(m->descr);
    m->descr = NULL;
    if (a->rows == 0 || a->nnz == 0) return INCA_OK;   /* the ops treat an empty A themselves */
    return kcu_sp(c, "mat_set", cusparseCreateCsr(&m->descr, a->rows, a->cols, a->nnz, m->rowptr, m->col, m->val,
                                                   kcu_itype(m), kcu_itype(m), CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
}

static int kcu_mat_view(kern_ctx_t *ctx, const kern_mat_t *parent, kern_mat_t *a);

/* A matrix's device arrays at its capacity, when it is created (kc_mat_create): the memory a
 * batch's matrices take is then held before the first step, where the budget sees it. Offsets
 * and columns are int32 when nnz_max < 2^31, else both int64: cuSPARSE's CSR takes the two types
 * separately, but mixed (64-bit offsets, 32-bit columns) is not a combination the SpMM
 * documentation lists, so a large matrix widens its columns once per upload instead. */
static int kcu_mat_reserve(kern_ctx_t *ctx, kern_mat_t *a) {
    kcu_ctx_t *c = kcu(ctx);
    if (a->impl) return INCA_OK;
    kcu_mat_t *m = calloc(1, sizeof *m);
    if (!m) return inca_fail(INCA_ENOMEM, "cuda mat_set: matrix state");
    a->impl = m;   /* freed by kcu_mat_drop, whatever was allocated */
    m->idx64 = a->nnz_max >= ((int64_t)1 << 31);
    const size_t isz = m->idx64 ? 8 : 4, nz = (size_t)(a->nnz_max > 0 ? a->nnz_max : 1);
    m->hrowptr = malloc(((size_t)a->rows_max + 1) * sizeof(int64_t));
    if (!m->hrowptr) return inca_fail(INCA_ENOMEM, "cuda mat_set: host offsets of %" PRId64 " rows", a->rows_max);
    int rc;
    if ((rc = kcu_dmalloc(c, "mat_set", &m->rowptr, ((size_t)a->rows_max + 1) * isz)) ||
        (rc = kcu_dmalloc(c, "mat_set", (void **)&m->rowptr64, ((size_t)a->rows_max + 1) * 8)) ||
        (rc = kcu_dmalloc(c, "mat_set", &m->col, nz * isz)) ||
        (rc = kcu_dmalloc(c, "mat_set", (void **)&m->val, nz * sizeof(float))))
        return rc;
    return INCA_OK;
}

static int kcu_mat_set(kern_ctx_t *ctx, kern_mat_t *a, const csr_t *h, int stream) {
    kcu_ctx_t *c = kcu(ctx);
    if (stream < 0 || stream >= KERN_NSTREAMS) return kcu_bad_stream(c, "mat_set", stream);
    if (!h && a->parent) return kcu_mat_view(ctx, a->parent, a);   /* kc_mat_rows_view */
    if (!h || a->parent) return kcu_bad(c, "mat_set", "a rows view cannot be set (set the matrix it views)");
    if (h->n_rows < 0 || h->n_rows > a->rows_max || h->n_cols < 0 || h->n_cols > a->n_cols)
        return kcu_bad(c, "mat_set", "the matrix exceeds the room kc_mat_create was given (rows or columns)");
    /* a host rows view (csr_row_view) starts at rowptr[0] != 0: uploaded rebased */
    const int64_t base = h->n_rows ? h->rowptr[0] : 0, nnz = h->n_rows ? h->rowptr[h->n_rows] - base : 0;
    if (nnz < 0 || nnz > a->nnz_max) return kcu_bad(c, "mat_set", "nnz exceeds the room kc_mat_create was given");
    cudaStream_t s = c->st[stream];
    kcu_mat_t *m = a->impl;
    int rc;
    if (!m) {
        if ((rc = kcu_mat_reserve(ctx, a))) return rc;
        m = a->impl;
    }
    /* the host copy first: a rows view built later reads it */
    a->rows = h->n_rows;
    a->cols = h->n_cols;
    a->nnz = nnz;
    for (int64_t i = 0; i <= h->n_rows; i++) m->hrowptr[i] = h->n_rows ? h->rowptr[i] - base : 0;
    if (h->n_rows > 0) {
        if ((rc = kcu_check(c, "mat_set", cudaMemcpyAsync(m->rowptr64, h->rowptr, ((size_t)h->n_rows + 1) * 8,
                                                          cudaMemcpyHostToDevice, s))) ||
            (rc = kcu_launched(c, "mat_set", kcu_rowptr_from64(s, m->idx64, m->rowptr64, h->n_rows, m->rowptr))))
            return rc;
    }
    if (nnz > 0) {
        if (m->idx64) {   /* widen on the device through a temporary (once per upload) */
            int32_t *tmp = NULL;
            if ((rc = kcu_dmalloc(c, "mat_set", (void **)&tmp, (size_t)nnz * 4))) return rc;
            rc = kcu_check(c, "mat_set", cudaMemcpyAsync(tmp, h->col + base, (size_t)nnz * 4, cudaMemcpyHostToDevice, s));
            if (!rc) rc = kcu_launched(c, "mat_set", kcu_widen_i32(s, nnz, tmp, m->col));
            if (!rc) rc = kcu_check(c, "mat_set", cudaStreamSynchronize(s));
            kcu_dfree(c, tmp);
            if (rc) return rc;
        } else if ((rc = kcu_check(c, "mat_set", cudaMemcpyAsync(m->col, h->col + base, (size_t)nnz * 4,
                                                                 cudaMemcpyHostToDevice, s)))) {
            return rc;
        }
        rc = h->val ? kcu_check(c, "mat_set", cudaMemcpyAsync(m->val, h->val + base, (size_t)nnz * sizeof(float),
                                                              cudaMemcpyHostToDevice, s))
                    : kcu_launched(c, "mat_set", kcu_fill(s, nnz, 1.0f, m->val));
        if (rc) return rc;
    }
    m->set = 1;
    return kcu_descr(c, a, m);   /* drops the plans of the previous contents */
}

/* A rows view [r0, r0 + rows) of its parent (kc_mat_rows_view calls mat_set with host NULL):
 * offsets rebased to 0 on the device (cuSPARSE's CSR starts at rowptr[0] == 0), columns and
 * values shared. Reflects the parent's contents at the time it was built. */
static int kcu_mat_view(kern_ctx_t *ctx, const kern_mat_t *parent, kern_mat_t *a) {
    kcu_ctx_t *c = kcu(ctx);
    const kcu_mat_t *pm = parent->impl && ((const kcu_mat_t *)parent->impl)->set ? parent->impl : NULL;
    if (!pm && a->rows == 0) {   /* an empty view of a matrix never set: nothing to build */
        a->nnz = 0;
        return INCA_OK;
    }
    if (!pm) return kcu_bad(c, "mat_view", "the viewed matrix was never set (kc_mat_set)");
    if (a->r0 < 0 || a->rows < 0 || a->r0 + a->rows > parent->rows)
        return kcu_bad(c, "mat_view", "rows outside the viewed matrix");
    kcu_mat_drop(ctx, a);
    kcu_mat_t *m = calloc(1, sizeof *m);
    if (!m) return inca_fail(INCA_ENOMEM, "cuda mat_view: matrix state");
    a->impl = m;
    m->view = 1;
    m->idx64 = pm->idx64;
    const int64_t r0 = a->r0, n = a->rows, off = pm->hrowptr[r0];
    m->hrowptr = malloc(((size_t)n + 1) * sizeof(int64_t));
    if (!m->hrowptr) {
        kcu_mat_drop(ctx, a);
        return inca_fail(INCA_ENOMEM, "cuda mat_view: host offsets of %" PRId64 " rows", n);
    }
    for (int64_t i = 0; i <= n; i++) m->hrowptr[i] = pm->hrowptr[r0 + i] - off;
    a->nnz = m->hrowptr[n];
    m->col = (char *)pm->col + (size_t)off * (pm->idx64 ? 8 : 4);
    m->val = pm->val + off;
    int rc;
    cudaStream_t s = kcu_stream(c);
    if ((rc = kcu_dmalloc(c, "mat_view", &m->rowptr, ((size_t)n + 1) * (m->idx64 ? 8 : 4))) ||
        (rc = kcu_launched(c, "mat_view", kcu_rowptr_rebase(s, m->idx64, pm->rowptr, r0, n, m->rowptr))) ||
        (rc = kcu_descr(c, a, m)))
        kcu_mat_drop(ctx, a);   /* kc_mat_rows_view frees a failed view without mat_drop */
    return rc;
}
static int kcu_mat_ready(kcu_ctx_t *c, kern_mat_t *a, const char *op) {
    const kcu_mat_t *m = a->impl;
    if (m && (m->set || m->view)) return INCA_OK;   /* reserved at creation is not set */
    if (a->parent && a->rows == 0) return INCA_OK;
    return kcu_bad(c, op, "the matrix was never set (kc_mat_set)");
}

/* The plan for (f, beta kind): found, or (re)built: dense descriptors, workspace (grown only
 * when the new contents need more) and, for ALG3, cusparseSpMM_preprocess (cuSPARSE: it helps
 * ALG1/ALG3 and does nothing for ALG2). With KCU_NPLANS in use the least recently used one is
 * rebuilt. */
static int kcu_plan_get(kcu_ctx_t *c, kern_mat_t *a, kcu_mat_t *m, int64_t f, int beta0, const float *x, float *y,
                        cusparseSpMMAlg_t alg, kcu_plan_t **out) {
    m->clock++;
    kcu_plan_t *p = NULL;
    for (int i = 0; i < m->nplans && !p; i++)
        if (m->plans[i].f == f && m->plans[i].beta0 == beta0) p = &m->plans[i];
    if (!p && m->nplans < KCU_NPLANS) {
        p = &m->plans[m->nplans++];
        p->f = f, p->beta0 = beta0, p->stale = 1;
    } else if (!p) {
        p = &m->plans[0];
        for (int i = 1; i < KCU_NPLANS; i++)
            if (m->plans[i].last_use < p->last_use) p = &m->plans[i];
        p->f = f, p->beta0 = beta0, p->stale = 1;   /* its workspace is reused or grown below */
    }
    p->last_use = m->clock;
    *out = p;
    if (!p->stale) return INCA_OK;
    if (p->x) cusparseDestroyDnMat(p->x);
    if (p->y) cusparseDestroyDnMat(p->y);
    p->x = p->y = NULL;
    const float alpha = 1.0f, beta = beta0 ? 0.0f : 1.0f;
    size_t bytes = 0;
    int rc;
    if ((rc = kcu_sp(c, "spmm", cusparseCreateDnMat(&p->x, a->cols, f, f, (void *)x, CUDA_R_32F, CUSPARSE_ORDER_ROW))) ||
        (rc = kcu_sp(c, "spmm", cusparseCreateDnMat(&p->y, a->rows, f, f, y, CUDA_R_32F, CUSPARSE_ORDER_ROW))) ||
        (rc = kcu_sp(c, "spmm", cusparseSpMM_bufferSize(c->sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                        CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, m->descr, p->x, &beta,
                                                        p->y, CUDA_R_32F, alg, &bytes))))
        goto fail;
    if (bytes > p->cap || !p->buf) {   /* cudaFree waits for queued work that may still use it */
        kcu_dfree(c, p->buf);
        p->buf = NULL;
        p->cap = 0;
        if ((rc = kcu_dmalloc(c, "spmm workspace", &p->buf, bytes ? bytes : 1))) goto fail;
        p->cap = bytes ? bytes : 1;
    }
    if (alg == CUSPARSE_SPMM_CSR_ALG3 &&
        (rc = kcu_sp(c, "spmm", cusparseSpMM_preprocess(c->sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                        CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, m->descr, p->x, &beta,
                                                        p->y, CUDA_R_32F, alg, p->buf))))
        goto fail;
    p->stale = 0;
    return INCA_OK;
fail:
    kcu_plans_drop(c, m);   /* nothing half-built stays cached */
    return rc;
}

/* Y = alpha A X + beta Y with A's values or `vals`. beta == 0: Y is zeroed first, so garbage
 * (NaN) in Y never leaks through a 0 * NaN inside the library. */
static int kcu_spmm_run(kcu_ctx_t *c, kern_mat_t *a, const float *vals, const float *x, int64_t f, float alpha,
                        float beta, float *y, const char *op) {
    if (f <= 0 || !x || !y) return kcu_bad(c, op, "f <= 0 or a NULL dense operand");
    int rc = kcu_mat_ready(c, a, op);
    if (rc) return rc;
    kcu_mat_t *m = a->impl;
    cudaStream_t s = kcu_stream(c);
    if (a->rows == 0) return INCA_OK;
    if (beta == 0.0f && (rc = kcu_launched(c, op, cudaMemsetAsync(y, 0, (size_t)(a->rows * f) * sizeof(float), s))))
        return rc;
    if (!m->descr) {   /* no nonzeros: Y = beta Y */
        return beta == 0.0f || beta == 1.0f ? INCA_OK : kcu_launched(c, op, kcu_scale(s, a->rows * f, beta, y));
    }
    const cusparseSpMMAlg_t alg = c->base.deterministic ? CUSPARSE_SPMM_CSR_ALG3 : CUSPARSE_SPMM_CSR_ALG2;
    kcu_plan_t *p;
    if ((rc = kcu_plan_get(c, a, m, f, beta == 0.0f, x, y, alg, &p))) return rc;
    if ((rc = kcu_sp(c, op, cusparseCsrSetPointers(m->descr, m->rowptr, m->col, vals ? (void *)vals : m->val))) ||
        (rc = kcu_sp(c, op, cusparseDnMatSetValues(p->x, (void *)x))) ||
        (rc = kcu_sp(c, op, cusparseDnMatSetValues(p->y, y))))
        return rc;
    c->last_op = op;
    return kcu_sp(c, op, cusparseSpMM(c->sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                      m->descr, p->x, &beta, p->y, CUDA_R_32F, alg, p->buf));
}
static int kcu_spmm(kern_ctx_t *ctx, kern_mat_t *a, const float *vals, const float *x, int64_t f, float alpha, float beta,
                    float *y) {
    return kcu_spmm_run(kcu(ctx), a, vals, x, f, alpha, beta, y, "spmm");
}
/* M_B + Â_BB Δ: the base rows gathered into Y, then cuSPARSE with beta = 1 onto them. One
 * extra pass over Y (rows x f) next to SpMM's nnz x f reads, and the SpMM stays cuSPARSE's
 * (ALG2 / deterministic ALG3) instead of a second hand-balanced sparse kernel. */
static int kcu_spmm_base(kern_ctx_t *ctx, kern_mat_t *a, const float *x, int64_t f, const float *base,
                         int64_t n_base, const int64_t *ids, float *y) {
    kcu_ctx_t *c = kcu(ctx);
    int rc = kcu_mat_ready(c, a, "spmm_base");
    if (rc) return rc;
    if (f <= 0 || !base || !ids || n_base < 0) return kcu_bad(c, "spmm_base", "f <= 0 or a NULL base / ids");
    if ((rc = kcu_launched(c, "spmm_base", kcu_gather_rows(kcu_stream(c), KERN_F32, base, f, ids, 0, a->rows, y))))
        return rc;
    return kcu_spmm_run(c, a, NULL, x, f, 1.0f, 1.0f, y, "spmm_base");
}
/* X decoded into scratch (cols x f floats, exact: bf16 -> fp32 is a shift), then SpMM */
static int kcu_spmm_bf16(kern_ctx_t *ctx, kern_mat_t *a, const uint16_t *x, int64_t f, float *y) {
    kcu_ctx_t *c = kcu(ctx);
    void *xs;
    if (f <= 0 || !x) return kcu_bad(c, "spmm_bf16", "f <= 0 or a NULL dense operand");
    int rc = kcu_scratch(c, "spmm_bf16", (size_t)(a->cols * f) * sizeof(float) + 1, &xs);
    if (rc || (rc = kcu_launched(c, "spmm_bf16", kcu_decode_bf16(kcu_stream(c), a->cols * f, x, xs)))) return rc;
    return kcu_spmm_run(c, a, NULL, xs, f, 1.0f, 0.0f, y, "spmm_bf16");
}

/* ---- GEMM: row-major C = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ, so cuBLAS gets
 * the operands swapped with their own transposes; TF32 tensor cores only when asked ---- */
/* cuBLAS's workspace, given by us at the first GEMM (NVIDIA recommends 32 MiB on Hopper) so that
 * it is admitted and counted like every other block; cuBLAS would otherwise take its own */
#define KCU_BLAS_WS ((size_t)32 << 20)
static int kcu_blas_workspace(kcu_ctx_t *c) {
    if (c->blas_ws) return INCA_OK;
    const char *prev = kc_mem_tag(&c->base, "cublas workspace");
    int rc = kcu_dmalloc(c, "gemm workspace", &c->blas_ws, KCU_BLAS_WS);
    kc_mem_tag(&c->base, prev);
    if (rc == INCA_OK) rc = kcu_bl(c, "gemm workspace", cublasSetWorkspace(c->bl, c->blas_ws, KCU_BLAS_WS));
    return rc;
}

static int kcu_gemm(kern_ctx_t *ctx, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                    int64_t lda, const float *b, int64_t ldb, float beta, float *cc, int64_t ldc) {
    kcu_ctx_t *c = kcu(ctx);
    if (m <= 0 || n <= 0) return INCA_OK;
    int wrc = kcu_blas_workspace(c);
    if (wrc) return wrc;
    if (k <= 0) {   /* C = beta C, as kern_gemm (cuBLAS would check lda/ldb against k = 0) */
        cudaStream_t s = kcu_stream(c);
        int rc = INCA_OK;
        for (int64_t i = 0; i < m && !rc; i++)
            rc = kcu_launched(c, "gemm", beta == 0.0f ? cudaMemsetAsync(cc + i * ldc, 0, (size_t)n * 4, s)
                                                      : kcu_scale(s, n, beta, cc + i * ldc));
        return rc;
    }
    c->last_op = "gemm";
    return kcu_bl(c, "gemm",
                  cublasGemmEx_64(c->bl, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m,
                                  k, &alpha, b, CUDA_R_32F, ldb, a, CUDA_R_32F, lda, &beta, cc, CUDA_R_32F,
                                  ldc, c->base.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
}

/* ---- elementwise ---- */
static int kcu_axpby_op(kern_ctx_t *ctx, int64_t n, float alpha, const float *x, float beta, float *y) {
    return kcu_launched(kcu(ctx), "axpby", kcu_axpby(kcu_stream(kcu(ctx)), n, alpha, x, beta, y));
}
static int kcu_sub_op(kern_ctx_t *ctx, int64_t n, const float *a, const float *b, float *out) {
    return kcu_launched(kcu(ctx), "sub", kcu_sub(kcu_stream(kcu(ctx)), n, a, b, out));
}
static int kcu_add_bias_op(kern_ctx_t *ctx, int64_t rows, int64_t f, const float *b, float *y) {
    return kcu_launched(kcu(ctx), "add_bias", kcu_add_bias(kcu_stream(kcu(ctx)), rows, f, b, y));
}
/* column sums of an n x f matrix into scratch (modes of kcu_colsum); *sums: 2 f doubles */
static int kcu_colsums(kcu_ctx_t *c, const char *op, int mode, int64_t n, int64_t f, const float *a, const float *b,
                       const double *sum_in, double **sums, size_t extra_doubles) {
    void *sc;
    const int64_t part = kcu_colsum_part_doubles(n, f);
    int rc = kcu_scratch(c, op, ((size_t)part + 4 * (size_t)f + extra_doubles) * sizeof(double), &sc);
    if (rc) return rc;
    double *p = sc, *out = p + part;
    if (sum_in == out) out += 2 * f;   /* the second pass keeps the first's sums */
    *sums = out;
    return kcu_launched(c, op, kcu_colsum(kcu_stream(c), mode, n, f, a, b, sum_in, p, out));
}
static int kcu_bias_grad_op(kern_ctx_t *ctx, int64_t rows, int64_t f, const float *dy, float *db) {
    kcu_ctx_t *c = kcu(ctx);
    if (f <= 0) return INCA_OK;
    if (rows <= 0) return kcu_launched(c, "bias_grad", cudaMemsetAsync(db, 0, (size_t)f * sizeof(float), kcu_stream(c)));
    double *sums;
    int rc = kcu_colsums(c, "bias_grad", 0, rows, f, dy, NULL, NULL, &sums, 0);
    return rc ? rc : kcu_launched(c, "bias_grad", kcu_sum_to_f32(kcu_stream(c), f, sums, db));
}
static int kcu_relu_op(kern_ctx_t *ctx, int64_t n, const float *x, float *y) {
    return kcu_launched(kcu(ctx), "relu", kcu_relu(kcu_stream(kcu(ctx)), n, x, y));
}
static int kcu_relu_grad_op(kern_ctx_t *ctx, int64_t n, const float *y, const float *dy, float *dx) {
    return kcu_launched(kcu(ctx), "relu_grad", kcu_relu_grad(kcu_stream(kcu(ctx)), n, y, dy, dx));
}
/* p <= 0 and p >= 1 as kern_dropout: a copy with an all-ones mask, or zeros */
static int kcu_dropout_op(kern_ctx_t *ctx, int64_t n, float p, uint64_t seed, uint64_t stream, const float *x, float *y,
                          uint8_t *mask) {
    kcu_ctx_t *c = kcu(ctx);
    cudaStream_t s = kcu_stream(c);
    int rc = INCA_OK;
    if (n <= 0) return INCA_OK;
    if (p <= 0.0f || p >= 1.0f) {
        if (p <= 0.0f && y != x) rc = kcu_launched(c, "dropout", cudaMemcpyAsync(y, x, (size_t)n * 4, cudaMemcpyDeviceToDevice, s));
        if (p >= 1.0f) rc = kcu_launched(c, "dropout", cudaMemsetAsync(y, 0, (size_t)n * 4, s));
        if (!rc && mask) rc = kcu_launched(c, "dropout", cudaMemsetAsync(mask, p <= 0.0f ? 1 : 0, (size_t)n, s));
        return rc;
    }
    return kcu_launched(c, "dropout", kcu_dropout(s, n, 1.0f / (1.0f - p), kb_hash_key(seed, stream), kb_dropout_thr(p),
                                                  x, y, mask));
}
static int kcu_dropout_grad_op(kern_ctx_t *ctx, int64_t n, float p, const uint8_t *mask, const float *dy, float *dx) {
    kcu_ctx_t *c = kcu(ctx);
    cudaStream_t s = kcu_stream(c);
    if (n <= 0) return INCA_OK;
    if (p <= 0.0f)
        return dx == dy ? INCA_OK
                        : kcu_launched(c, "dropout_grad", cudaMemcpyAsync(dx, dy, (size_t)n * 4, cudaMemcpyDeviceToDevice, s));
    if (p >= 1.0f) return kcu_launched(c, "dropout_grad", cudaMemsetAsync(dx, 0, (size_t)n * 4, s));
    return kcu_launched(c, "dropout_grad", kcu_dropout_grad(s, n, 1.0f / (1.0f - p), mask, dy, dx));
}
static int kcu_bias_relu_op(kern_ctx_t *ctx, int64_t rows, int64_t f, const float *b, const float *z, float *y) {
    return kcu_launched(kcu(ctx), "bias_relu", kcu_bias_relu(kcu_stream(kcu(ctx)), rows, f, b, z, y));
}
/* p <= 0 or no mask: the ReLU gradient alone; p >= 1: zeros (kern_relu_drop_grad) */
static int kcu_relu_drop_grad_op(kern_ctx_t *ctx, int64_t n, const float *y, const float *dy, float p, const uint8_t *mask,
                                 float *dx) {
    kcu_ctx_t *c = kcu(ctx);
    cudaStream_t s = kcu_stream(c);
    if (n <= 0) return INCA_OK;
    if (p >= 1.0f) return kcu_launched(c, "relu_drop_grad", cudaMemsetAsync(dx, 0, (size_t)n * 4, s));
    if (p <= 0.0f || !mask) return kcu_launched(c, "relu_drop_grad", kcu_relu_grad(s, n, y, dy, dx));
    return kcu_launched(c, "relu_drop_grad", kcu_relu_drop_grad(s, n, 1.0f / (1.0f - p), y, dy, mask, dx));
}

/* ---- BatchNorm: column sums in double (two passes in training: mean, then centred squares),
 * then one elementwise pass. n == 0 leaves everything as it was. ---- */
static int kcu_bn_forward_op(kern_ctx_t *ctx, int64_t n, int64_t f, int train, float *xhat, const float *gamma,
                             const float *beta, float *istd, float *rmean, float *rvar, float *y) {
    kcu_ctx_t *c = kcu(ctx);
    if (n <= 0 || f <= 0) return INCA_OK;
    if (!train)
        return kcu_launched(c, "bn_forward", kcu_bn_eval(kcu_stream(c), n, f, xhat, gamma, beta, istd, rmean, rvar, y));
    double *sum, *s2;
    int rc = kcu_colsums(c, "bn_forward", 0, n, f, xhat, NULL, NULL, &sum, (size_t)f);
    if (rc || (rc = kcu_colsums(c, "bn_forward", 1, n, f, xhat, NULL, sum, &s2, (size_t)f))) return rc;
    double *is = s2 + 2 * f;   /* room reserved by extra_doubles */
    return kcu_launched(c, "bn_forward",
                        kcu_bn_train(kcu_stream(c), n, f, sum, s2, is, xhat, gamma, beta, istd, rmean, rvar, y));
}
static int kcu_bn_backward_op(kern_ctx_t *ctx, int64_t n, int64_t f, const float *gamma, const float *xhat,
                              const float *istd, const float *dy, float *dz, float *ggamma, float *gbeta) {
    kcu_ctx_t *c = kcu(ctx);
    if (n <= 0 || f <= 0) return INCA_OK;
    double *sums;
    int rc = kcu_colsums(c, "bn_backward", 2, n, f, dy, xhat, NULL, &sums, 0);
    return rc ? rc
              : kcu_launched(c, "bn_backward",
                             kcu_bn_backward(kcu_stream(c), n, f, gamma, xhat, istd, dy, sums, dz, ggamma, gbeta));
}

/* ---- loss and metrics (stay on the device) ---- */
static int kcu_softmax_xent_op(kern_ctx_t *ctx, int64_t rows, int64_t cl, const float *logits, const int32_t *y,
                               const int64_t *idx, int64_t nidx, float *logp, float *dlogits, double *loss) {
    kcu_ctx_t *c = kcu(ctx);
    void *sc;
    if (cl <= 0 || nidx < 0 || rows < 0) return kcu_bad(c, "softmax_xent", "c <= 0 or a negative size");
    int rc = kcu_scratch(c, "softmax_xent", kcu_xent_scratch_bytes(nidx), &sc);
    return rc ? rc
              : kcu_launched(c, "softmax_xent",
                             kcu_softmax_xent(kcu_stream(c), rows, cl, logits, y, idx, nidx, logp, dlogits, sc, loss));
}
static int kcu_class_counts_op(kern_ctx_t *ctx, int64_t cl, const float *scores, const int32_t *y, const int64_t *idx,
                               int64_t nidx, int64_t *counts) {
    return kcu_launched(kcu(ctx), "class_counts", kcu_class_counts(kcu_stream(kcu(ctx)), cl, scores, y, idx, nidx, counts));
}
static int kcu_accuracy_op(kern_ctx_t *ctx, int64_t cl, const float *scores, const int32_t *y, const int64_t *idx,
                           int64_t nidx, int64_t *counts) {
    return kcu_launched(kcu(ctx), "accuracy", kcu_accuracy(kcu_stream(kcu(ctx)), cl, scores, y, idx, nidx, counts));
}
static int kcu_adam_op(kern_ctx_t *ctx, int64_t n, float *w, const float *g, float *m, float *v, const kern_adam_t *hp) {
    return kcu_launched(kcu(ctx), "adam", kcu_adam(kcu_stream(kcu(ctx)), n, w, g, m, v, *hp));
}

/* ---- row tables and conversions ---- */
static int kcu_gather_op(kern_ctx_t *ctx, kern_dtype_t dt, const void *t, int64_t f, const int64_t *ids, int64_t start,
                         int64_t m, float *out) {
    return kcu_launched(kcu(ctx), "gather_rows", kcu_gather_rows(kcu_stream(kcu(ctx)), dt, t, f, ids, start, m, out));
}
static int kcu_scatter_op(kern_ctx_t *ctx, kern_dtype_t dt, void *t, int64_t f, const int64_t *ids, int64_t start,
                          int64_t m, const float *in) {
    return kcu_launched(kcu(ctx), "scatter_rows", kcu_scatter_rows(kcu_stream(kcu(ctx)), dt, t, f, ids, start, m, in));
}
static int kcu_sub_rows_op(kern_ctx_t *ctx, kern_dtype_t dt, void *t, int64_t f, const int64_t *ids, int64_t m,
                           const float *in, float *out, const float *push) {
    return kcu_launched(kcu(ctx), "sub_rows", kcu_sub_rows(kcu_stream(kcu(ctx)), dt, t, f, ids, m, in, out, push));
}
/* fp32 "conversion": a device copy (nothing when in place) */
static int kcu_copy_f32(kcu_ctx_t *c, const char *op, int64_t n, const void *in, void *out) {
    if (n <= 0 || out == in) return INCA_OK;
    return kcu_launched(c, op, cudaMemcpyAsync(out, in, (size_t)n * 4, cudaMemcpyDeviceToDevice, kcu_stream(c)));
}
static int kcu_encode_op(kern_ctx_t *ctx, kern_dtype_t dt, int64_t n, const float *in, void *out) {
    kcu_ctx_t *c = kcu(ctx);
    if (dt == KERN_F32) return kcu_copy_f32(c, "encode", n, in, out);
    return kcu_launched(c, "encode", kcu_encode_bf16(kcu_stream(c), n, in, out));
}
static int kcu_decode_op(kern_ctx_t *ctx, kern_dtype_t dt, int64_t n, const void *in, float *out) {
    kcu_ctx_t *c = kcu(ctx);
    if (dt == KERN_F32) return kcu_copy_f32(c, "decode", n, in, out);
    return kcu_launched(c, "decode", kcu_decode_bf16(kcu_stream(c), n, in, out));
}

/* ---- context ---- */
static void kcu_destroy(kern_ctx_t *ctx) {
    kcu_ctx_t *c = kcu(ctx);
    if (!c) return;
    for (int s = 0; s < KERN_NSTREAMS; s++)
        if (c->st[s]) cudaStreamSynchronize(c->st[s]);
#ifdef INCA_HAS_NCCL
    if (c->nccl) ncclCommDestroy(c->nccl);
#endif
    if (c->sp) cusparseDestroy(c->sp);
    if (c->bl) cublasDestroy(c->bl);
    kcu_dfree(c, c->scratch);
    kcu_dfree(c, c->blas_ws);
    for (int e = 0; e < KERN_NEVENTS; e++)
        if (c->ev[e]) cudaEventDestroy(c->ev[e]);
    for (int s = 0; s < KERN_NSTREAMS; s++)
        if (c->st[s]) cudaStreamDestroy(c->st[s]);
    free(c);
}

static int kcu_mem_info(kern_ctx_t *ctx, int64_t *total, int64_t *free_now) {
    kcu_ctx_t *c = kcu(ctx);
    size_t fr = 0, tot = 0;
    *total = *free_now = 0;
    if (cudaSetDevice(c->dev) != cudaSuccess || cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
        (void)cudaGetLastError();
        return INCA_OK;   /* unknown: reported as 0 */
    }
    *total = (int64_t)tot;
    *free_now = (int64_t)fr;
    return INCA_OK;
}

/* ---- NCCL (issue 29): one clique per context ---- */
static int kcu_device_uid(kern_ctx_t *ctx, char *buf, size_t cap) {
    kcu_ctx_t *c = kcu(ctx);
    char bus[64];
    int rc = kcu_check(c, "device_uid", cudaDeviceGetPCIBusId(bus, (int)sizeof bus, c->dev));
    if (rc == INCA_OK) snprintf(buf, cap, "%s", bus);
    return rc;
}
#ifdef INCA_HAS_NCCL
static int kcu_nccl(kcu_ctx_t *c, const char *op, ncclResult_t r) {
    if (r == ncclSuccess) return INCA_OK;
    return kcu_fail(c, INCA_ERR, op, "NCCL", ncclGetErrorString(r));
}
static int kcu_coll_id(kern_ctx_t *ctx, void *id) {
    _Static_assert(sizeof(ncclUniqueId) <= KERN_COLL_ID_BYTES, "KERN_COLL_ID_BYTES holds an ncclUniqueId");
    ncclUniqueId u;
    int rc = kcu_nccl(kcu(ctx), "coll_id", ncclGetUniqueId(&u));
    if (rc == INCA_OK) {
        memset(id, 0, KERN_COLL_ID_BYTES);
        memcpy(id, &u, sizeof u);
    }
    return rc;
}
static int kcu_coll_init(kern_ctx_t *ctx, const void *id, int rank, int size) {
    kcu_ctx_t *c = kcu(ctx);
    if (c->nccl && c->nccl_rank == rank && c->nccl_size == size) return INCA_OK;   /* the next run of the same job */
    if (c->nccl) return kcu_fail(c, INCA_EINVAL, "coll_init", "NCCL", "this context joined another clique already");
    c->nccl_rank = rank;
    c->nccl_size = size;
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    int rc = kcu_check(c, "coll_init", cudaSetDevice(c->dev));
    return rc != INCA_OK ? rc : kcu_nccl(c, "coll_init", ncclCommInitRank(&c->nccl, size, u, rank));
}
static int kcu_coll_sum_f32(kern_ctx_t *ctx, int nbuf, const float *const *send, float *const *recv, const int64_t *n) {
    kcu_ctx_t *c = kcu(ctx);
    if (!c->nccl) return kcu_fail(c, INCA_EINVAL, "coll_sum_f32", "NCCL", "no clique joined (kc_coll_init)");
    c->last_op = "coll_sum_f32";
    int rc = kcu_nccl(c, "coll_sum_f32", ncclGroupStart());
    for (int i = 0; i < nbuf && rc == INCA_OK; i++)
        if (n[i] > 0)
            rc = kcu_nccl(c, "coll_sum_f32", ncclAllReduce(send[i], recv[i], (size_t)n[i], ncclFloat32, ncclSum, c->nccl,
                                                           kcu_stream(c)));
    const int end = kcu_nccl(c, "coll_sum_f32", ncclGroupEnd());   /* closes the group on a failure too */
    return rc != INCA_OK ? rc : end;
}
#endif

static const kern_ops_t kcu_ops = {
    .name = "cuda",
    .destroy = kcu_destroy,
    .mem_info = kcu_mem_info,
    .alloc = kcu_alloc,
    .release = kcu_release,
    .copy = kcu_copy,
    .zero = kcu_zero,
    .event_record = kcu_event_record,
    .stream_wait = kcu_stream_wait,
    .event_sync = kcu_event_sync,
    .sync = kcu_sync,
    .mat_set = kcu_mat_set,
    .mat_drop = kcu_mat_drop,
    .mat_reserve = kcu_mat_reserve,
    .spmm = kcu_spmm,
    .spmm_base = kcu_spmm_base,
    .spmm_bf16 = kcu_spmm_bf16,
    .gemm = kcu_gemm,
    .axpby = kcu_axpby_op,
    .sub = kcu_sub_op,
    .add_bias = kcu_add_bias_op,
    .bias_grad = kcu_bias_grad_op,
    .relu = kcu_relu_op,
    .relu_grad = kcu_relu_grad_op,
    .dropout = kcu_dropout_op,
    .dropout_grad = kcu_dropout_grad_op,
    .bias_relu = kcu_bias_relu_op,
    .relu_drop_grad = kcu_relu_drop_grad_op,
    .bn_forward = kcu_bn_forward_op,
    .bn_backward = kcu_bn_backward_op,
    .softmax_xent = kcu_softmax_xent_op,
    .accuracy = kcu_accuracy_op,
    .class_counts = kcu_class_counts_op,
    .adam = kcu_adam_op,
    .gather_rows = kcu_gather_op,
    .scatter_rows = kcu_scatter_op,
    .sub_rows = kcu_sub_rows_op,
    .encode = kcu_encode_op,
    .decode = kcu_decode_op,
    .device_uid = kcu_device_uid,
#ifdef INCA_HAS_NCCL
    .coll_id = kcu_coll_id,
    .coll_init = kcu_coll_init,
    .coll_sum_f32 = kcu_coll_sum_f32,
#endif
};

int kern_cuda_create(const kern_ctx_opts_t *opts, kern_ctx_t **out) {
    *out = NULL;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= 0) {   /* "insufficient driver" on hosts with the toolkit only */
        (void)cudaGetLastError();
        return inca_fail(INCA_EINVAL, "no usable CUDA device (%s)",   /* kc_create prefixes "--device cuda: " */
                         e != cudaSuccess ? cudaGetErrorString(e) : "no device found");
    }
    const int dev = !opts ? 0 : opts->rank_device ? opts->device_index % n : opts->device_index;
    if (dev < 0 || dev >= n)
        return inca_fail(INCA_EINVAL, "CUDA device %d does not exist (%d found)", dev, n);
    kcu_ctx_t *c = calloc(1, sizeof *c);
    if (!c) return inca_fail(INCA_ENOMEM, "cuda: context");
    c->base.ops = &kcu_ops;
    c->base.dev = KERN_DEV_CUDA;
    c->base.deterministic = opts ? opts->deterministic : 0;
    c->base.tf32 = opts ? opts->tf32 : 0;
    c->dev = dev;
    int rc = kcu_check(c, "create", cudaSetDevice(dev));
    for (int s = 0; !rc && s < KERN_NSTREAMS; s++)
        rc = kcu_check(c, "create", cudaStreamCreateWithFlags(&c->st[s], cudaStreamNonBlocking));
    for (int v = 0; !rc && v < KERN_NEVENTS; v++)
        rc = kcu_check(c, "create", cudaEventCreateWithFlags(&c->ev[v], cudaEventDisableTiming));
    if (!rc) rc = kcu_sp(c, "create", cusparseCreate(&c->sp));
    if (!rc) rc = kcu_sp(c, "create", cusparseSetStream(c->sp, kcu_stream(c)));
    if (!rc) rc = kcu_bl(c, "create", cublasCreate(&c->bl));
    if (!rc) rc = kcu_bl(c, "create", cublasSetStream(c->bl, kcu_stream(c)));
    /* TF32 tensor cores only when asked (--tf32); GEMM's compute type says the same */
    if (!rc)
        rc = kcu_bl(c, "create",
                    cublasSetMathMode(c->bl, c->base.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    struct cudaDeviceProp prop;
    if (!rc) rc = kcu_check(c, "create", cudaGetDeviceProperties(&prop, dev));
    if (rc) {
        kcu_destroy(&c->base);
        return rc;
    }
    snprintf(c->base.describe, sizeof c->base.describe, "cuda:%d %.40s (%.1f GiB, sm_%d%d)", dev, prop.name,
             (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), prop.major, prop.minor);
    *out = &c->base;
    return INCA_OK;
}
