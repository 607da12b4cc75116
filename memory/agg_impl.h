/* The mini-batch aggregation operator's state (memory/agg.h's opaque agg_t), shared by the files
 * of the module and by nothing else: agg.c (names, accessors, the current batch), agg_step.c (a
 * step's forward and backward), agg_refresh.c (IncAgg's refreshes) and agg_create.c
 * (construction and release). Calls go one way: agg_create -> agg_refresh -> agg, and
 * agg_step -> agg, agg_create -> agg; agg.c, whose header every file of the module includes,
 * calls none of the others. Include memory/agg.h first: this header does not include it, so
 * that no circle of files runs agg -> agg_impl -> agg. Tested with the module, in
 * test_incagg.c. */
#ifndef INCA_MEMORY_AGG_IMPL_H
#define INCA_MEMORY_AGG_IMPL_H
#ifndef INCA_MEMORY_AGG_H
#error "include memory/agg.h before memory/agg_impl.h"
#endif
#include <stdint.h>
#include "graph/batch.h"
#include "kernels/backend.h"
#include "memory/arena.h"
#include "memory/history.h"

struct agg {
    kern_ctx_t *kc;
    int dev;             /* the context is a device: scratch in its memory (not the arena) */
    int host_tables;     /* on a device: the tables stay in host memory (--history-location host) */
    int tdev;            /* the tables are in device memory (dev && !host_tables) */
    kern_ctx_t *tk;      /* where table-to-table work runs: kc, or the CPU for host tables */
    kern_mat_t *a_m;     /* Â on the context */
    kern_mat_t *ta_m;    /* Â on tk (a_m, or a host view) */
    int own_a, own_ta;   /* made here */
    kern_mat_t *own_rows;   /* rows [rows_lo, rows_hi) of ta_m: a rank's push refresh */
    int64_t rows_lo;
    int (*exchange)(void *, int, hist_t *);
    void *exchange_ctx;
    const float *x_t;    /* x on tk's side */
    float *stage;        /* host tables: pinned chunk of whole-table transfers, stage_rows x maxdim */
    int64_t stage_rows;
    kern_mat_t **panels; /* row views of ta_m for the bf16 panel refresh */
    int npanels;
    kern_mat_t *bb, *bbt, *bh;   /* the current batch's Â_BB, Â_BBᵀ, Â_{B,halo} (slot cur's) */
    /* Off the CPU a batch is uploaded into one of two slots from pinned staging on the copy
     * stream, while the compute stream may still run the previous batch: slot k's staging is
     * rewritten only after its last upload finished (event UP(k), waited on by the host), its
     * device arrays only after the compute that read them (event DONE(k), waited on by the
     * copy stream), and compute waits for UP(k) before it reads them. */
    struct agg_slot {
        kern_mat_t *bb, *bbt, *bh;
        int64_t *nodes_d, *halo_d;
        int64_t *rp[3];          /* pinned: rowptr, col, val of Â_BB, Â_BBᵀ, Â_{B,halo} */
        int32_t *col[3];
        float *val[3];
        int64_t *nodes_h, *halo_h;
        void *extra_h[AGG_MAX_EXTRA], *extra_d[AGG_MAX_EXTRA];   /* the caller's per-batch arrays */
    } slot[2];
    int64_t extra_cap[AGG_MAX_EXTRA];
    /* host tables on a device: the table rows a batch reads (M_B, S_B, GAS halo H rows) are
     * gathered on the host and uploaded with the batch into its slot (they do not change
     * between the batch's load and its step: IncAgg's tables change at refreshes only, a
     * batch's own pushes touch other rows, GAS pushes are flushed first); pushes go down
     * asynchronously into a pinned buffer and are scattered into the tables at the next flush */
    float *rowsM[2][AGG_MAX_SITES], *rowsS[2][AGG_MAX_SITES], *rowsH[2][AGG_MAX_SITES];   /* device */
    float *stM[2][AGG_MAX_SITES], *stS[2][AGG_MAX_SITES], *stH[2][AGG_MAX_SITES];         /* pinned */
    float *push_h[AGG_MAX_SITES];                                                          /* pinned */
    struct { hist_t *t; int site, slot; int64_t m; } pend[2 * AGG_MAX_SITES];
    int npend;
    const void *extra_cur[AGG_MAX_EXTRA];
    int cur, nslots;
    int has_bbt;                 /* Â_BB is not symmetric: backward multiplies bbt */
    const int64_t *nodes, *halo; /* its ids, in context memory */
    void **devmem;       /* device allocations, freed with the operator */
    int ndev, capdev;
    int method, source, nsites;
    int single;          /* incagg push: pushes go to S, no P tables */
    float relax;         /* incagg recompute: a refresh moves S and M this fraction of the way */
    int relaxing;        /* agg_snapshot_taken was called: recompute refreshes blend */
    int64_t sbuf_rows;   /* rows of sbuf */
    int64_t nb_max, halo_max;   /* the largest batch and halo the buffers hold (agg_config) */
    int64_t n, in_dim, maxdim;   /* maxdim: the widest site */
    const float *x;
    const batch_t *b;
    mem_arena_t *arena;
    hist_dtype_t dtype;
    int64_t dim[AGG_MAX_SITES];
    uint8_t fixed[AGG_MAX_SITES];
    hist_t H[AGG_MAX_SITES], M[AGG_MAX_SITES], S[AGG_MAX_SITES], P[AGG_MAX_SITES];
    float *sbuf;         /* nb_max x maxdim: Δ */
    int64_t xtf;         /* agg_config.x_tf_dim */
    float *xbase;        /* incagg with xtf, tables in context memory: nb_max x in_dim, M^0_B */
    const csr_t *m0s;    /* incagg with xtf: agg_config.m0_sparse (then no M table at sites reading x) */
    csr_t m0b;           /* its batch's rows (agg_base), m0b_rows x m0b_cap room */
    int64_t m0b_cap, m0b_rows;
    uint64_t batch_seq, base_seq;   /* batches set; the one agg_base last answered for (incagg's narrow
                                       forward needs it: its M^0_B is the layer's to add) */
    float *hbuf;         /* halo_max x max(maxdim, in_dim): pulled halo rows (GAS) */
    float *panel;        /* panel_rows x maxdim fp32 (bf16 M^0 and push refreshes) */
    int64_t panel_rows;
    int64_t table_bytes, scratch_bytes;
    int64_t scratch_host_bytes;   /* of scratch_bytes and the pinned staging: what is host memory */
    int m0_borrowed;     /* M at fixed sites is cfg->m0 (host) or its device copy, not a table */
    void *pass[2];       /* agg_pass_buffer, of pass_dtype */
    hist_dtype_t pass_dtype;
    /* gas with defer_batches: pushes held until agg_commit_pushes: per site, the rows in_raw
     * (defer x nb_max x dim) and their node ids */
    int defer;
    float *dpush[AGG_MAX_SITES];
    int64_t *dids, ndpush, ndmax;   /* ids: the same for every site of a batch; ndpush rows held */
    int64_t pass_f[2];
    double fwd_s, bwd_s;
    int64_t nnz_bb, nnz_rows;
};

static inline kern_dtype_t kdt(const hist_t *h) { return h->dtype == HIST_BF16 ? KERN_BF16 : KERN_F32; }

/* agg.c: host tables: in (m rows, device) goes down into the site's pinned push buffer,
 * scattered into t (rows = the current batch's nodes) at the next agg_flush */
int agg_push_async(agg_t *g, hist_t *t, int site, const float *in, int64_t m);
/* agg_refresh.c: M[site] <- Â src, where src is fp32 x (at a fixed site) or the table S[site] */
int agg_baseline_compute(agg_t *g, int site, const float *src_f32, const hist_t *src_table);
#endif
