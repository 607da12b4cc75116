/* The device-aware kernel table: a backend context that owns memory and ordering, and every op
 * the models, trainers and the memory/ operator run, behind one table of function pointers. The
 * CPU backend (kernels/backend_cpu.c) wraps the kernels of kernels/kernels.h; the CUDA backend
 * (kernels/cuda/, built when the toolkit is found) implements the same table with cuSPARSE,
 * cuBLAS and kernels of its own. Callers use the kc_* calls below, never a backend directly.
 *
 * CAVEATS FIRST
 * - Every pointer handed to an op lives in the context's memory: allocated by kc_alloc with
 *   KERN_MEM_DEVICE, or (CPU backend only) any host memory. Only kc_copy moves bytes between
 *   the host and the device. The CPU backend's "device" IS the host: kc_alloc is calloc, copies
 *   are memcpy, streams and events are no-ops.
 * - Ops are asynchronous on a CUDA context (queued on the compute stream); their status says the
 *   call was valid and queued. A failure inside a queued kernel surfaces at the next kc_sync or
 *   blocking copy, as a one-line message naming the op that was queued (cuBLAS / cuSPARSE / CUDA
 *   error text included). kc_status returns the first error seen (sticky).
 * - Contracts differ by backend. CPU: bit-identical to kernels/kernels.h for a fixed thread
 *   count (the same functions run). CUDA: each op within a relative 1e-5 (fp32, normalised
 *   error ||y - y_cpu|| / ||y_cpu||) of the CPU backend, except reductions (loss, BatchNorm
 *   statistics, bias gradients, spmm with ALG2), which agree to 1e-4; dropout masks, gathers,
 *   scatters, bf16 encoding and accuracy counts are bit-identical. --deterministic (cuSPARSE
 *   ALG3) makes repeated CUDA runs bit-identical to each other, not to the CPU.
 * - Sparse matrices are kern_mat_t handles (kc_mat_*). SpMM always multiplies A as stored,
 *   never transposed: a caller that needs Aᵀ keeps it as a matrix of its own (csr_transpose),
 *   as torch_sparse does, because cuSPARSE's deterministic algorithm rejects transposed A.
 *
 * Tested in test_backend.c (the CPU table against kernels/kernels.h, the context and matrix
 * lifecycles, the fallback of --device auto) and, on a GPU, test_backend_ops.c (every op, CUDA
 * against CPU on random inputs; skipped, exit 77, without a device). */
#ifndef INCA_KERNELS_BACKEND_H
#define INCA_KERNELS_BACKEND_H
#include <stddef.h>
#include <stdint.h>
#include "graph/csr.h"
#include "kernels/kernels.h"
#include "kernels/memtrack.h"

typedef struct kern_ctx kern_ctx_t;
typedef struct kern_mat kern_mat_t;

/* KERN_DEV_EMU: an emulated device for testing device code paths without a GPU (device "emu",
 * kernels/cpu/backend_emu.c): the CPU kernels, but KERN_MEM_DEVICE memory is mapped
 * PROT_NONE except while an op runs (a host read or write of it is a segfault, as on a GPU)
 * and every op refuses pointers that are not device memory. Slow; for tests. */
typedef enum { KERN_DEV_CPU = 0, KERN_DEV_CUDA = 1, KERN_DEV_EMU = 2 } kern_dev_t;
/* Where kc_alloc puts memory: on the device, in pinned (page-locked) host memory the device
 * reaches by DMA, or in ordinary host memory. On the CPU backend all three are host memory. */
typedef enum { KERN_MEM_DEVICE = 0, KERN_MEM_PINNED = 1, KERN_MEM_HOST = 2 } kern_mem_t;
typedef enum { KERN_H2D = 0, KERN_D2H = 1, KERN_D2D = 2 } kern_copy_t;
/* Streams: ops run on KERN_STREAM_COMPUTE; copies may use KERN_STREAM_COPY to overlap. */
enum { KERN_STREAM_COMPUTE = 0, KERN_STREAM_COPY = 1, KERN_NSTREAMS = 2 };
#define KERN_NEVENTS 8
typedef struct kern_ctx_opts {
    const char *device;   /* "cpu", "cuda", "auto" (NULL = "cpu") or "emu" (tests) */
    int device_index;     /* CUDA device ordinal (0; device "cuda:N" sets N) */
    int rank_device;      /* 1: device_index is a data-parallel rank's number on its node, and the
                             device is that number modulo the devices found (--device cuda under
                             mpirun: rank r of a node on device r mod its GPUs) */
    int deterministic;    /* CUDA: cuSPARSE SpMM ALG3 instead of ALG2 */
    int tf32;             /* CUDA: cuBLAS GEMM with TF32 tensor cores (off: plain fp32) */
    int64_t emu_memory;   /* emu: the emulated device's memory in bytes (0: unlimited); a device
                             allocation past it fails as on a full GPU */
} kern_ctx_opts_t;

/* ---- context ---- */
/* "cpu" always succeeds. "cuda": INCA_ERR (exit 1) with the CUDA error's text when this build
 * has no CUDA or no device answers (any cudaGetDeviceCount failure counts as no device: on machines
 * with the toolkit and no driver it returns "insufficient driver"). "auto": CUDA when it
 * works, else CPU with the reason in kc_fallback. *out owned by the caller (kc_free). */
int kc_create(const kern_ctx_opts_t *opts, kern_ctx_t **out);
/* A new context made with the options ctx was made with (the same device: a thread rank of
 * --workers needs a context of its own, whose sticky status is its own). */
int kc_sibling(const kern_ctx_t *ctx, kern_ctx_t **out);
/* The process-wide CPU context (never freed; kc_free on it is a no-op): what the CPU-only
 * entry points (model_create, ...) run on. */
kern_ctx_t *kc_cpu(void);
void kc_free(kern_ctx_t **ctx);            /* NULL-safe; frees every cached plan */
kern_dev_t kc_device(const kern_ctx_t *ctx);
const char *kc_name(const kern_ctx_t *ctx);        /* "cpu" | "cuda" */
const char *kc_describe(const kern_ctx_t *ctx);    /* "cpu (2 threads)", "cuda:0 NVIDIA H200 (139.8 GiB)" */
const char *kc_fallback(const kern_ctx_t *ctx);    /* why "auto" chose the CPU, or NULL */
int kc_deterministic(const kern_ctx_t *ctx);
int kc_tf32(const kern_ctx_t *ctx);
int kc_status(const kern_ctx_t *ctx);              /* first error seen (INCA_OK if none) */

/* ---- memory and ordering ---- */
/* bytes of zeroed memory of kind `mem` (bytes 0 allocates 1). INCA_ENOMEM naming the size. */
int kc_alloc(kern_ctx_t *ctx, kern_mem_t mem, size_t bytes, void **out);
void kc_release(kern_ctx_t *ctx, kern_mem_t mem, void *p);   /* NULL-safe */
/* Queued on `stream` (CPU: immediate). CUDA's rules for pageable and pinned memory: with
 * ordinary host memory on the host side the call returns once that memory may be reused (a D2H
 * copy has arrived); with pinned memory it returns at once, and the pinned buffer may be read
 * (D2H) or rewritten (H2D) only after kc_sync or an event that follows the copy. */
int kc_copy(kern_ctx_t *ctx, void *dst, const void *src, size_t bytes, kern_copy_t kind, int stream);
int kc_zero(kern_ctx_t *ctx, void *dst, size_t bytes, int stream);
int kc_event_record(kern_ctx_t *ctx, int event, int stream);
int kc_stream_wait(kern_ctx_t *ctx, int stream, int event);   /* stream waits for the event */
int kc_event_sync(kern_ctx_t *ctx, int event);                /* the host waits for the event */
int kc_sync(kern_ctx_t *ctx);                                  /* every stream; returns kc_status */

/* ---- accounting (kernels/memtrack.c) ----
 * Every block of a context made by kc_create is recorded (kc_alloc's, and the backend's own:
 * CUDA matrix arrays, SpMM buffers, the cuBLAS workspace), with the tag set when it was
 * allocated. kc_cpu()'s shared context records nothing. */
/* now/peak/copied by kind and direction, the limit, device total and free (CUDA:
 * cudaMemGetInfo; emu: its size; 0 unknown or the CPU), device bytes per use (tag 0 "other") */
typedef kmt_stats_t kern_mem_stats_t;
void kc_mem_stats(kern_ctx_t *ctx, kern_mem_stats_t *out);
int64_t kc_mem_tag_now(kern_ctx_t *ctx, const char *tag);   /* device bytes held under `tag` now */
void kc_mem_reset_peak(kern_ctx_t *ctx);                    /* peaks restart from what is held now */
void kc_mem_copied(kern_ctx_t *ctx, int64_t out[3]);        /* kc_copy's bytes so far (cheap: no driver call) */
/* Later allocations are counted under `tag` (a string that outlives the context; NULL: "other");
 * returns the tag in force before, to put back. */
const char *kc_mem_tag(kern_ctx_t *ctx, const char *tag);
/* Device allocations that would take the context past `bytes` fail with INCA_ENOMEM naming the
 * budget, the request, its tag and what every tag holds, before the backend is asked (0: no
 * limit). How --device-memory-budget is enforced, and a smaller GPU simulated. */
void kc_mem_limit(kern_ctx_t *ctx, int64_t bytes);
/* For backends' own allocations: admit checks the limit, note records a block made, forget
 * drops one (before it is freed). */
int kc_mem_admit(kern_ctx_t *ctx, kern_mem_t mem, size_t bytes, const char *what);
int kc_mem_note(kern_ctx_t *ctx, kern_mem_t mem, const void *p, size_t bytes);
void kc_mem_forget(kern_ctx_t *ctx, const void *p);

/* Host data the ops must read: on the CPU the host array itself (no copy), on a device a copy
 * in device memory. Free with kc_mirror_free (releases only a copy). */
int kc_mirror(kern_ctx_t *ctx, const void *host, size_t bytes, void **out);
void kc_mirror_free(kern_ctx_t *ctx, const void *host, void *mirror);

/* ---- sparse matrices ---- */
/* A matrix with room for up to rows_max rows, n_cols columns and nnz_max nonzeros, empty
 * until kc_mat_set; on a device its arrays are allocated here, at that capacity (so a budget
 * counts them before the first step). CPU: kc_mat_set keeps a view of the host csr_t (borrowed: it must outlive
 * every later op on the matrix). CUDA: kc_mat_set uploads rowptr (rebased to start at 0), col
 * and val (all-ones when val is NULL) on `stream`, as int32 indices when nnz_max < 2^31, else
 * int64; the SpMM plans cached for the previous contents are marked for rebuild and keep their
 * workspace, so a batch matrix set every step allocates nothing. */
int kc_mat_create(kern_ctx_t *ctx, int64_t rows_max, int64_t n_cols, int64_t nnz_max, kern_mat_t **out);
int kc_mat_set(kern_ctx_t *ctx, kern_mat_t *a, const csr_t *host, int stream);
/* create + set for a matrix that never changes (Â, Âᵀ) */
int kc_mat_upload(kern_ctx_t *ctx, const csr_t *host, kern_mat_t **out);
void kc_mat_free(kern_ctx_t *ctx, kern_mat_t **a);
int64_t kc_mat_rows(const kern_mat_t *a);
int64_t kc_mat_nnz(const kern_mat_t *a);
/* Rows [r0, r1) of a as a matrix of its own (a view: no copy; freed with kc_mat_free before a). */
int kc_mat_rows_view(kern_ctx_t *ctx, const kern_mat_t *a, int64_t r0, int64_t r1, kern_mat_t **out);

/* ---- the ops (all on KERN_STREAM_COMPUTE; f = number of columns of a row-major dense) ---- */
/* Y = alpha A X + beta Y; vals (nnz floats) replaces A's values when non-NULL. */
int kc_spmm(kern_ctx_t *ctx, kern_mat_t *a, const float *vals, const float *x, int64_t f, float alpha,
            float beta, float *y);
/* Y[r,:] = base[ids[r],:] + (A X)[r,:] (IncAgg's M_B + Â_BB Δ); base has n_base rows. ids
 * must lie in 0..n_base-1: the CPU and emu refuse one outside (INCA_EINVAL), a CUDA device does
 * not check them (ids live in device memory; a bad one reads outside base). */
int kc_spmm_base(kern_ctx_t *ctx, kern_mat_t *a, const float *x, int64_t f, const float *base,
                 int64_t n_base, const int64_t *ids, float *y);
/* Y = A X with X stored as bf16. */
int kc_spmm_bf16(kern_ctx_t *ctx, kern_mat_t *a, const uint16_t *x, int64_t f, float *y);
/* C = alpha op(A) op(B) + beta C, row-major (kern_gemm's contract). */
int kc_gemm(kern_ctx_t *ctx, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
            const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
int kc_axpby(kern_ctx_t *ctx, int64_t n, float alpha, const float *x, float beta, float *y);
int kc_sub(kern_ctx_t *ctx, int64_t n, const float *a, const float *b, float *out);   /* out = a - b */
int kc_add_bias(kern_ctx_t *ctx, int64_t rows, int64_t f, const float *b, float *y);
int kc_bias_grad(kern_ctx_t *ctx, int64_t rows, int64_t f, const float *dy, float *db);
int kc_relu(kern_ctx_t *ctx, int64_t n, const float *x, float *y);
int kc_relu_grad(kern_ctx_t *ctx, int64_t n, const float *y, const float *dy, float *dx);
int kc_dropout(kern_ctx_t *ctx, int64_t n, float p, uint64_t seed, uint64_t stream, const float *x, float *y,
               uint8_t *mask);
int kc_dropout_grad(kern_ctx_t *ctx, int64_t n, float p, const uint8_t *mask, const float *dy, float *dx);
/* Fused (kernels/kernels.h): y = relu(z + b); dx = relu_grad(y, dropout_grad(p, mask, dy)) with
 * mask NULL meaning no dropout. Same bits as the ops they replace on the CPU; on CUDA too
 * (elementwise, no contraction). */
int kc_bias_relu(kern_ctx_t *ctx, int64_t rows, int64_t f, const float *b, const float *z, float *y);
int kc_relu_drop_grad(kern_ctx_t *ctx, int64_t n, const float *y, const float *dy, float p, const uint8_t *mask,
                      float *dx);
/* BatchNorm over n rows of width f. xhat holds the pre-activation z on entry and x̂ on return;
 * y = gamma x̂ + beta. train: batch statistics (double sums), istd = 1/sqrt(var + eps), running
 * mean/var updated with momentum (unbiased variance); eval: running statistics. */
int kc_bn_forward(kern_ctx_t *ctx, int64_t n, int64_t f, int train, float *xhat, const float *gamma,
                  const float *beta, float *istd, float *rmean, float *rvar, float *y);
/* dz from dy (training statistics); ggamma = Σ dy x̂, gbeta = Σ dy (overwrite). */
int kc_bn_backward(kern_ctx_t *ctx, int64_t n, int64_t f, const float *gamma, const float *xhat,
                   const float *istd, const float *dy, float *dz, float *ggamma, float *gbeta);
/* kern_softmax_xent with the loss written to *loss (one double in context memory) instead of
 * returned; logp / dlogits may be NULL. On a CUDA device a row listed twice in idx gets its
 * gradient by float atomics (its bits may vary run to run, --deterministic or not): every
 * caller passes distinct rows; the CPU sums a repeated row in idx order. */
int kc_softmax_xent(kern_ctx_t *ctx, int64_t rows, int64_t c, const float *logits, const int32_t *y,
                    const int64_t *idx, int64_t nidx, float *logp, float *dlogits, double *loss);
/* counts[0] += correct, counts[1] += counted (two int64 in context memory): kern_accuracy's
 * rule, accumulated so an epoch's batches are read back once. */
int kc_accuracy(kern_ctx_t *ctx, int64_t c, const float *scores, const int32_t *y, const int64_t *idx,
                int64_t nidx, int64_t *counts);
/* counts (3c int64 in context memory) += kern_class_counts's per-class counts. */
int kc_class_counts(kern_ctx_t *ctx, int64_t c, const float *scores, const int32_t *y, const int64_t *idx,
                    int64_t nidx, int64_t *counts);
/* One Adam/AdamW step over n elements: w, m, v updated in place from g. */
int kc_adam(kern_ctx_t *ctx, int64_t n, float *w, const float *g, float *m, float *v, const kern_adam_t *hp);
/* Row tables of width f and element type dt (fp32 or bf16), rows addressed by ids. */
/* out[i] = table[ids[i]] and table[ids[i]] = in[i]; ids == NULL means rows start + i. */
int kc_gather_rows(kern_ctx_t *ctx, kern_dtype_t dt, const void *table, int64_t f, const int64_t *ids,
                   int64_t start, int64_t m, float *out);
int kc_scatter_rows(kern_ctx_t *ctx, kern_dtype_t dt, void *table, int64_t f, const int64_t *ids,
                    int64_t start, int64_t m, const float *in);
/* out[i] = in[i] - table[ids[i]]; then, when push != NULL, table[ids[i]] = push[i] (ids
 * distinct): IncAgg's residual Δ = H_B − S_B and its single-buffer push. */
int kc_sub_rows(kern_ctx_t *ctx, kern_dtype_t dt, void *table, int64_t f, const int64_t *ids, int64_t m,
                const float *in, float *out, const float *push);
/* n elements between fp32 and the table type (bf16: round to nearest even, NaN stays NaN). */
int kc_encode(kern_ctx_t *ctx, kern_dtype_t dt, int64_t n, const float *in, void *out);
int kc_decode(kern_ctx_t *ctx, kern_dtype_t dt, int64_t n, const void *in, float *out);

/* ---- collectives between devices (issue 29: NCCL, in the CUDA module when NCCL was found) ----
 * One clique per context: rank 0 makes an id (kc_coll_id), every rank gets it (MPI) and joins
 * (kc_coll_init, collective); then kc_coll_sum_f32 sums a buffer over the clique's ranks on the
 * compute stream. NCCL needs one GPU per rank: kc_device_uid names a device uniquely on its
 * node (its PCI bus id) so that a caller can refuse ranks sharing one before NCCL fails. Every
 * call returns INCA_EINVAL naming what is missing on a backend without them (the CPU, the
 * emulated device, CUDA without NCCL): kc_has_coll says which. NCCL's sum is deterministic for a
 * fixed device count and topology, but not the rank-ordered sum of core/comm.h. */
#define KERN_COLL_ID_BYTES 128
int kc_has_coll(const kern_ctx_t *ctx);
int kc_device_uid(kern_ctx_t *ctx, char *buf, size_t cap);
int kc_coll_id(kern_ctx_t *ctx, void *id);   /* KERN_COLL_ID_BYTES bytes */
int kc_coll_init(kern_ctx_t *ctx, const void *id, int rank, int size);   /* again with the same rank
                                                                           and size: nothing (a later run) */
int kc_coll_sum_f32(kern_ctx_t *ctx, const float *send, float *recv, int64_t n);   /* recv may be send */
/* nbuf sums as one group (NCCL: ncclGroupStart/End, so that the buffers of a model's gradients
 * are launched together and fused by NCCL instead of one launch and one wait each) */
int kc_coll_sum_f32_many(kern_ctx_t *ctx, int nbuf, const float *const *send, float *const *recv, const int64_t *n);

/* ---- the table a backend fills (one per backend, static) ---- */
typedef struct kern_ops {
    const char *name;
    void (*destroy)(kern_ctx_t *ctx);
    /* the device's total and free memory (NULL: unknown / no device) */
    int (*mem_info)(kern_ctx_t *ctx, int64_t *total, int64_t *free_now);
    int (*alloc)(kern_ctx_t *, kern_mem_t, size_t, void **);
    void (*release)(kern_ctx_t *, kern_mem_t, void *);
    int (*copy)(kern_ctx_t *, void *, const void *, size_t, kern_copy_t, int);
    int (*zero)(kern_ctx_t *, void *, size_t, int);
    int (*event_record)(kern_ctx_t *, int, int);
    int (*stream_wait)(kern_ctx_t *, int, int);
    int (*event_sync)(kern_ctx_t *, int);
    int (*sync)(kern_ctx_t *);
    /* upload `host` into a (capacity checked by the caller); with host == NULL, a is a rows
     * view (a->parent, a->r0, a->rows set) to be built over the parent's device arrays */
    int (*mat_set)(kern_ctx_t *, kern_mat_t *, const csr_t *, int);
    void (*mat_drop)(kern_ctx_t *, kern_mat_t *);    /* free backend data (device arrays, plans) */
    /* a matrix's device arrays at its capacity (kc_mat_create; NULL: at the first mat_set) */
    int (*mat_reserve)(kern_ctx_t *, kern_mat_t *);
    int (*spmm)(kern_ctx_t *, kern_mat_t *, const float *, const float *, int64_t, float, float, float *);
    int (*spmm_base)(kern_ctx_t *, kern_mat_t *, const float *, int64_t, const float *, int64_t, const int64_t *,
                     float *);
    int (*spmm_bf16)(kern_ctx_t *, kern_mat_t *, const uint16_t *, int64_t, float *);
    int (*gemm)(kern_ctx_t *, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                const float *, int64_t, float, float *, int64_t);
    int (*axpby)(kern_ctx_t *, int64_t, float, const float *, float, float *);
    int (*sub)(kern_ctx_t *, int64_t, const float *, const float *, float *);
    int (*add_bias)(kern_ctx_t *, int64_t, int64_t, const float *, float *);
    int (*bias_grad)(kern_ctx_t *, int64_t, int64_t, const float *, float *);
    int (*relu)(kern_ctx_t *, int64_t, const float *, float *);
    int (*relu_grad)(kern_ctx_t *, int64_t, const float *, const float *, float *);
    int (*dropout)(kern_ctx_t *, int64_t, float, uint64_t, uint64_t, const float *, float *, uint8_t *);
    int (*dropout_grad)(kern_ctx_t *, int64_t, float, const uint8_t *, const float *, float *);
    int (*bias_relu)(kern_ctx_t *, int64_t, int64_t, const float *, const float *, float *);
    int (*relu_drop_grad)(kern_ctx_t *, int64_t, const float *, const float *, float, const uint8_t *, float *);
    int (*bn_forward)(kern_ctx_t *, int64_t, int64_t, int, float *, const float *, const float *, float *,
                      float *, float *, float *);
    int (*bn_backward)(kern_ctx_t *, int64_t, int64_t, const float *, const float *, const float *,
                       const float *, float *, float *, float *);
    int (*softmax_xent)(kern_ctx_t *, int64_t, int64_t, const float *, const int32_t *, const int64_t *,
                        int64_t, float *, float *, double *);
    int (*accuracy)(kern_ctx_t *, int64_t, const float *, const int32_t *, const int64_t *, int64_t, int64_t *);
    int (*class_counts)(kern_ctx_t *, int64_t, const float *, const int32_t *, const int64_t *, int64_t, int64_t *);
    int (*adam)(kern_ctx_t *, int64_t, float *, const float *, float *, float *, const kern_adam_t *);
    int (*gather_rows)(kern_ctx_t *, kern_dtype_t, const void *, int64_t, const int64_t *, int64_t, int64_t, float *);
    int (*scatter_rows)(kern_ctx_t *, kern_dtype_t, void *, int64_t, const int64_t *, int64_t, int64_t,
                        const float *);
    int (*sub_rows)(kern_ctx_t *, kern_dtype_t, void *, int64_t, const int64_t *, int64_t, const float *,
                    float *, const float *);
    /* collectives (NULL: none; see kc_coll_*) */
    int (*device_uid)(kern_ctx_t *, char *, size_t);
    int (*coll_id)(kern_ctx_t *, void *);
    int (*coll_init)(kern_ctx_t *, const void *, int, int);
    int (*coll_sum_f32)(kern_ctx_t *, int, const float *const *, float *const *, const int64_t *);   /* a group */
    int (*encode)(kern_ctx_t *, kern_dtype_t, int64_t, const float *, void *);
    int (*decode)(kern_ctx_t *, kern_dtype_t, int64_t, const void *, float *);
} kern_ops_t;

/* What every context starts with (backends extend it: their struct's first member). */
struct kern_ctx {
    const kern_ops_t *ops;
    kern_dev_t dev;
    int deterministic, tf32;
    int status;                 /* sticky first error */
    char describe[96];
    char fallback[200];
    struct kern_prof *prof;     /* kernels/profile.h: NULL (default) = ops not timed */
    kern_memtrack_t *mt;        /* kernels/memtrack.h: NULL for kc_cpu()'s shared context */
    kern_ctx_opts_t made;       /* the options it was made with (device: made_device), kc_sibling */
    char made_device[16];
};
/* What every matrix starts with; backends keep their data behind `impl`. */
struct kern_mat {
    int64_t rows_max, n_cols, nnz_max;
    int64_t rows, cols, nnz;    /* current contents (cols <= n_cols) */
    const csr_t *host;          /* CPU: the borrowed matrix (or view below) */
    csr_t view;                 /* CPU: storage for kc_mat_rows_view */
    const kern_mat_t *parent;   /* rows view: the matrix it views, else NULL */
    int64_t r0;                 /* rows view: first row */
    void *impl;                 /* backend data */
};

/* emu contexts: allocations (device, pinned and host) not yet released (leak checks in tests). */
int kern_emu_live_blocks(const kern_ctx_t *ctx);

#ifdef INCA_HAS_CUDA
/* kernels/cuda/ (the module libinca_cuda.so, loaded by kc_create on first use): a CUDA context,
 * or INCA_EINVAL + message (CUDA error text) without a device. */
int kern_cuda_create(const kern_ctx_opts_t *opts, kern_ctx_t **out);
typedef int (*kern_cuda_create_fn)(const kern_ctx_opts_t *opts, kern_ctx_t **out);
#endif
#endif
