/* The mini-batch aggregation operators (cluster, GAS, IncAgg), their history tables and the
 * IncAgg refresh from either source (see agg.h). Tested in test_incagg.c. */
#include "memory/agg.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/backend.h"
#include <stdio.h>
#include <string.h>

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

static kern_dtype_t kdt(const hist_t *h) { return h->dtype == HIST_BF16 ? KERN_BF16 : KERN_F32; }

const char *agg_method_name(int method) {
    return method == AGG_CLUSTER ? "cluster" : method == AGG_GAS ? "gas" : "incagg";
}

int agg_source_parse(const char *s, int *source) {
    if (s && strcmp(s, "push") == 0) { *source = AGG_SRC_PUSH; return INCA_OK; }
    if (s && strcmp(s, "recompute") == 0) { *source = AGG_SRC_RECOMPUTE; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--refresh-source: expected push or recompute, got '%s'", s ? s : "");
}

const char *agg_source_name(int source) { return source == AGG_SRC_RECOMPUTE ? "recompute" : "push"; }

int agg_source(const agg_t *g) { return g->source; }
int agg_num_sites(const agg_t *g) { return g->nsites; }
int agg_fixed_site(const agg_t *g, int site) { return site >= 0 && site < g->nsites && g->fixed[site]; }
const mem_arena_t *agg_arena(const agg_t *g) { return g->arena; }
int64_t agg_table_bytes(const agg_t *g) { return g->table_bytes; }
int agg_tables_on_host(const agg_t *g) { return !g->tdev; }
int64_t agg_scratch_bytes(const agg_t *g) { return g->scratch_bytes; }
int64_t agg_scratch_host_bytes(const agg_t *g) { return g->scratch_host_bytes; }
const int64_t *agg_batch_nodes(const agg_t *g) { return g->nodes; }

/* events of the two upload slots (see struct agg) */
#define AGG_EV_DONE(k) (k)
#define AGG_EV_UP(k) (2 + (k))

/* m (host) copied into pinned staging m-th of slot sl: the view the upload reads */
static csr_t stage_csr(struct agg_slot *sl, int m, const csr_t *h) {
    csr_t v = {.n_rows = h->n_rows, .n_cols = h->n_cols, .nnz = h->nnz, .rowptr = sl->rp[m], .col = sl->col[m],
               .val = h->val ? sl->val[m] : NULL};
    const int64_t base = h->n_rows ? h->rowptr[0] : 0;
    for (int64_t i = 0; i <= h->n_rows; i++) sl->rp[m][i] = h->rowptr[i] - base;
    if (h->nnz > 0) {
        memcpy(sl->col[m], h->col + base, sizeof(int32_t) * (size_t)h->nnz);
        if (h->val) memcpy(sl->val[m], h->val + base, sizeof(float) * (size_t)h->nnz);
    }
    return v;
}

const void *agg_batch_extra(const agg_t *g, int i) { return i >= 0 && i < AGG_MAX_EXTRA ? g->extra_cur[i] : NULL; }

int agg_set_batch(agg_t *g, const batch_t *b) { return agg_set_batch_with(g, b, NULL, NULL); }

#define AGG_EV_PUSH 4

/* host tables: the pushes queued since the last flush land in their tables (the host waits for
 * their downloads first) */
int agg_flush(agg_t *g) {
    if (!g->npend) return INCA_OK;
    int rc = kc_event_sync(g->kc, AGG_EV_PUSH);
    for (int i = 0; i < g->npend && rc == INCA_OK; i++)
        kern_rows_scatter(g->pend[i].t->dtype == HIST_BF16 ? KERN_BF16 : KERN_F32, g->pend[i].t->data, g->pend[i].t->f,
                          g->slot[g->pend[i].slot].nodes_h, 0, g->pend[i].m, g->push_h[g->pend[i].site]);
    g->npend = 0;
    return rc;
}

/* host tables: in (m rows, device) goes down into the site's pinned push buffer, scattered
 * into t (rows = the current batch's nodes) at the next flush */
static int push_async(agg_t *g, hist_t *t, int site, const float *in, int64_t m) {
    int rc = kc_copy(g->kc, g->push_h[site], in, sizeof(float) * (size_t)(m * t->f), KERN_D2H, KERN_STREAM_COMPUTE);
    if (rc == INCA_OK) rc = kc_event_record(g->kc, AGG_EV_PUSH, KERN_STREAM_COMPUTE);
    if (rc != INCA_OK) return rc;
    g->pend[g->npend].t = t;
    g->pend[g->npend].site = site;
    g->pend[g->npend].slot = g->cur;
    g->pend[g->npend++].m = m;
    return INCA_OK;
}

/* host tables: the rows batch b reads, gathered on the host and uploaded into slot k on the copy
 * stream (before the slot's UP event) */
static int prefetch_rows(agg_t *g, const batch_t *b, int k) {
    int rc = INCA_OK;
    for (int st = 0; st < g->nsites && rc == INCA_OK; st++) {
        const int64_t d = g->dim[st];
        struct { float *dst, *stage; const hist_t *t; const int64_t *ids; int64_t m; } mv[3] = {
            {g->rowsM[k][st], g->stM[k][st], &g->M[st], b->nodes, b->n_b},
            {g->rowsS[k][st], g->stS[k][st], &g->S[st], b->nodes, b->n_b},
            {g->rowsH[k][st], g->stH[k][st], &g->H[st], b->halo, b->n_halo}};
        for (int i = 0; i < 3 && rc == INCA_OK; i++) {
            if (!mv[i].dst || mv[i].m == 0) continue;
            kern_rows_gather(kdt(mv[i].t), mv[i].t->data, d, mv[i].ids, 0, mv[i].m, mv[i].stage);
            rc = kc_copy(g->kc, mv[i].dst, mv[i].stage, sizeof(float) * (size_t)(mv[i].m * d), KERN_H2D, KERN_STREAM_COPY);
        }
    }
    return rc;
}

/* the batch b of slot sl is current, its ids at nodes / halo */
static int batch_current(agg_t *g, const batch_t *b, const struct agg_slot *sl, int has_bbt, const int64_t *nodes,
                         const int64_t *halo) {
    g->bb = sl->bb;
    g->bbt = sl->bbt;
    g->bh = sl->bh;
    g->has_bbt = has_bbt;
    g->nodes = nodes;
    g->halo = halo;
    g->b = b;
    return INCA_OK;
}

int agg_set_batch_with(agg_t *g, const batch_t *b, const void *const *extra, const int64_t *extra_bytes) {
    int rc = INCA_OK;
    /* every path's buffers (Δ rows, pulled halo rows, staging, device ids) hold these many rows */
    if (b->n_b > g->nb_max || (g->method == AGG_GAS && b->n_halo > g->halo_max))
        return inca_fail(INCA_EINVAL, "batch %lld: %lld nodes and a halo of %lld exceed the operator's buffers (%lld nodes, "
                         "a halo of %lld)", (long long)b->index, (long long)b->n_b, (long long)b->n_halo,
                         (long long)g->nb_max, (long long)g->halo_max);
    for (int e = 0; e < AGG_MAX_EXTRA; e++) {
        g->extra_cur[e] = extra ? extra[e] : NULL;
        if (g->dev && extra && extra[e] && extra_bytes[e] > g->extra_cap[e])
            return inca_fail(INCA_EINVAL, "batch %lld: extra array %d of %lld bytes, room for %lld", (long long)b->index, e,
                             (long long)extra_bytes[e], (long long)g->extra_cap[e]);
    }
    kern_ctx_t *kc = g->kc;
    const int has_bbt = b->a_bbt.rowptr != NULL, halo = g->slot[0].bh && b->n_halo > 0;
    if (!g->dev) {   /* the CPU: views of the loader's arrays */
        struct agg_slot *sl = &g->slot[0];
        g->b = NULL;
        if ((rc = kc_mat_set(kc, sl->bb, &b->a_bb, KERN_STREAM_COMPUTE)) != INCA_OK ||
            (has_bbt && (rc = kc_mat_set(kc, sl->bbt, &b->a_bbt, KERN_STREAM_COMPUTE)) != INCA_OK) ||
            (halo && (rc = kc_mat_set(kc, sl->bh, &b->a_bh, KERN_STREAM_COMPUTE)) != INCA_OK))
            return inca_fail_ctx(rc, "batch %lld", (long long)b->index);
        return batch_current(g, b, sl, has_bbt, b->nodes, b->halo);
    }
    if (b->a_bb.nnz > g->slot[0].bb->nnz_max || b->a_bbt.nnz > g->slot[0].bb->nnz_max ||
        (halo && b->a_bh.nnz > g->slot[0].bb->nnz_max) || b->n_b > g->slot[0].bb->rows_max)
        return inca_fail(INCA_EINVAL, "batch %lld: %lld nodes and %lld + %lld nonzeros exceed the upload buffers "
                         "(%lld nodes, %lld nonzeros)", (long long)b->index, (long long)b->n_b, (long long)b->a_bb.nnz,
                         (long long)b->a_bh.nnz, (long long)g->slot[0].bb->rows_max, (long long)g->slot[0].bb->nnz_max);
    const int k = g->cur ^ 1;
    struct agg_slot *sl = &g->slot[k];
    /* the previous batch's compute is queued up to here; slot k's last upload must be done
     * before its staging is rewritten, its last compute before its device arrays are */
    if (g->b) rc = kc_event_record(kc, AGG_EV_DONE(g->cur), KERN_STREAM_COMPUTE);
    if (rc == INCA_OK) rc = kc_event_sync(kc, AGG_EV_UP(k));
    if (rc == INCA_OK) rc = kc_stream_wait(kc, KERN_STREAM_COPY, AGG_EV_DONE(k));
    if (rc == INCA_OK) rc = agg_flush(g);   /* the previous batch's pushes, before rows are read */
    if (rc == INCA_OK && g->host_tables) rc = prefetch_rows(g, b, k);
    if (rc != INCA_OK) return rc;
    g->b = NULL;
    const csr_t sbb = stage_csr(sl, 0, &b->a_bb);
    if ((rc = kc_mat_set(kc, sl->bb, &sbb, KERN_STREAM_COPY)) != INCA_OK) return rc;
    if (has_bbt) {
        const csr_t sbt = stage_csr(sl, 1, &b->a_bbt);
        if ((rc = kc_mat_set(kc, sl->bbt, &sbt, KERN_STREAM_COPY)) != INCA_OK) return rc;
    }
    if (halo) {
        const csr_t sbh = stage_csr(sl, 2, &b->a_bh);
        if ((rc = kc_mat_set(kc, sl->bh, &sbh, KERN_STREAM_COPY)) != INCA_OK) return rc;
    }
    memcpy(sl->nodes_h, b->nodes, sizeof(int64_t) * (size_t)b->n_b);
    if (b->n_halo > 0) memcpy(sl->halo_h, b->halo, sizeof(int64_t) * (size_t)b->n_halo);
    for (int e = 0; e < AGG_MAX_EXTRA && extra; e++) {
        if (!extra[e] || extra_bytes[e] <= 0) continue;
        memcpy(sl->extra_h[e], extra[e], (size_t)extra_bytes[e]);
        if ((rc = kc_copy(kc, sl->extra_d[e], sl->extra_h[e], (size_t)extra_bytes[e], KERN_H2D, KERN_STREAM_COPY))) return rc;
        g->extra_cur[e] = sl->extra_d[e];
    }
    if ((rc = kc_copy(kc, sl->nodes_d, sl->nodes_h, sizeof(int64_t) * (size_t)b->n_b, KERN_H2D, KERN_STREAM_COPY)) ||
        (rc = kc_copy(kc, sl->halo_d, sl->halo_h, sizeof(int64_t) * (size_t)b->n_halo, KERN_H2D, KERN_STREAM_COPY)) ||
        (rc = kc_event_record(kc, AGG_EV_UP(k), KERN_STREAM_COPY)) ||
        (rc = kc_stream_wait(kc, KERN_STREAM_COMPUTE, AGG_EV_UP(k))))
        return rc;
    g->cur = k;
    return batch_current(g, b, sl, has_bbt, sl->nodes_d, sl->halo_d);
}

hist_t *agg_table(agg_t *g, char which, int site) {
    if (site < 0 || site >= g->nsites) return NULL;
    if (which == 'M' && g->fixed[site] && g->m0_borrowed) return NULL;
    hist_t *h = which == 'H' ? &g->H[site] : which == 'M' ? &g->M[site] : which == 'S' ? &g->S[site]
              : which == 'P' ? &g->P[site] : NULL;
    return h && h->data ? h : NULL;
}

void agg_free(agg_t **pg) {
    if (!pg || !*pg) return;
    agg_t *g = *pg;
    for (int i = 0; i < g->npanels; i++) kc_mat_free(g->tk, &g->panels[i]);
    inca_free(g->panels);
    kc_mat_free(g->tk, &g->own_rows);
    if (g->own_ta) kc_mat_free(g->tk, &g->ta_m);
    kc_release(g->kc, KERN_MEM_PINNED, g->stage);
    for (int st = 0; st < g->nsites; st++) kc_release(g->kc, KERN_MEM_PINNED, g->push_h[st]);
    for (int k = 0; k < 2; k++) {
        struct agg_slot *sl = &g->slot[k];
        kc_mat_free(g->kc, &sl->bb);
        kc_mat_free(g->kc, &sl->bbt);
        kc_mat_free(g->kc, &sl->bh);
        for (int m = 0; m < 3; m++) {
            kc_release(g->kc, KERN_MEM_PINNED, sl->rp[m]);
            kc_release(g->kc, KERN_MEM_PINNED, sl->col[m]);
            kc_release(g->kc, KERN_MEM_PINNED, sl->val[m]);
        }
        kc_release(g->kc, KERN_MEM_PINNED, sl->nodes_h);
        kc_release(g->kc, KERN_MEM_PINNED, sl->halo_h);
        for (int e = 0; e < AGG_MAX_EXTRA; e++) kc_release(g->kc, KERN_MEM_PINNED, sl->extra_h[e]);
        for (int st = 0; st < g->nsites; st++) {
            kc_release(g->kc, KERN_MEM_PINNED, g->stM[k][st]);
            kc_release(g->kc, KERN_MEM_PINNED, g->stS[k][st]);
            kc_release(g->kc, KERN_MEM_PINNED, g->stH[k][st]);
        }
    }
    if (g->own_a) kc_mat_free(g->kc, &g->a_m);
    for (int i = 0; i < g->ndev; i++) kc_release(g->kc, KERN_MEM_DEVICE, g->devmem[i]);
    inca_free(g->devmem);
    mem_arena_destroy(&g->arena);
    inca_free(g);
    *pg = NULL;
}

/* bytes for the operator: device memory (zeroed) when on_dev, else from the NUMA arena */
static void *take(agg_t *g, size_t bytes, const char *label, int on_dev) {
    if (!on_dev) return mem_arena_alloc(g->arena, bytes, label);
    if (g->ndev == g->capdev) {
        const int cap = g->capdev ? 2 * g->capdev : 16;
        void **nd = inca_realloc(g->devmem, (size_t)cap * sizeof *nd);
        if (!nd) return NULL;
        g->devmem = nd;
        g->capdev = cap;
    }
    void *p = NULL;
    if (kc_alloc(g->kc, KERN_MEM_DEVICE, bytes ? bytes : 1, &p) != INCA_OK) return NULL;
    g->devmem[g->ndev++] = p;
    return p;
}

static int table(agg_t *g, hist_t *h, char which, int site) {
    char label[32];
    snprintf(label, sizeof label, "%s%d", which == 'H' ? "hist" : which == 'M' ? "M" : which == 'S' ? "S" : "P", site);
    int rc = INCA_OK;
    if (!g->tdev) rc = hist_init(h, g->arena, g->n, g->dim[site], g->dtype, label);
    else {
        *h = (hist_t){.n = g->n, .f = g->dim[site], .dtype = g->dtype};
        const char *prev = kc_mem_tag(g->kc, "tables");   /* the device's accounting (--device-memory-budget) */
        if (!(h->data = take(g, (size_t)hist_bytes(h), label, 1))) rc = INCA_ENOMEM;
        kc_mem_tag(g->kc, prev);
    }
    if (rc == INCA_OK) g->table_bytes += hist_bytes(h);
    return rc;
}

static void *scratch(agg_t *g, int64_t floats, const char *label, int on_dev) {
    void *p = take(g, sizeof(float) * (size_t)(floats > 0 ? floats : 1), label, on_dev);
    const int64_t bytes = (int64_t)sizeof(float) * (floats > 0 ? floats : 1);
    if (p) g->scratch_bytes += bytes;
    if (p && (!on_dev || !g->dev)) g->scratch_host_bytes += bytes;
    return p;
}

/* Pinned host staging (off the CPU only), counted as the host memory it is. */
static int pin(agg_t *g, size_t bytes, void **p) {
    int rc = kc_alloc(g->kc, KERN_MEM_PINNED, bytes, p);
    if (rc == INCA_OK) g->scratch_host_bytes += (int64_t)bytes;
    return rc;
}


/* ---- a whole table to and from the context's memory (the refresh pass), wherever the table is.
 * Host tables on a device: in chunks through the pinned stage, each chunk's copy complete
 * before the stage is reused. ---- */
static int t_get_all(agg_t *g, const hist_t *t, float *out) {
    if (!g->host_tables) return kc_gather_rows(g->kc, kdt(t), t->data, t->f, NULL, 0, t->n, out);
    for (int64_t i0 = 0; i0 < t->n; i0 += g->stage_rows) {
        const int64_t k = t->n - i0 < g->stage_rows ? t->n - i0 : g->stage_rows;
        kern_rows_gather(kdt(t), t->data, t->f, NULL, i0, k, g->stage);
        int rc = kc_copy(g->kc, out + i0 * t->f, g->stage, sizeof(float) * (size_t)(k * t->f), KERN_H2D, KERN_STREAM_COMPUTE);
        if (rc == INCA_OK) rc = kc_sync(g->kc);
        if (rc != INCA_OK) return rc;
    }
    return INCA_OK;
}

/* M[site] <- Â src, where src is fp32 x (at a fixed site) or the table S[site]. fp32 tables:
 * one SpMM straight into M. bf16: row panels of Â through the fp32 panel, encoded into M
 * panel by panel (the same bits as decoding all of S first: kern_spmm_bf16). */
static int baseline_compute(agg_t *g, int site, const float *src_f32, const hist_t *src_table) {
    const int64_t f = g->dim[site];
    hist_t *m = &g->M[site];
    if (m->dtype == HIST_F32 && g->own_rows && !src_f32)   /* a rank's rows (M^0 stays whole) */
        return kc_spmm(g->tk, g->own_rows, NULL, hist_f32(src_table), f, 1.f, 0.f, hist_f32(m) + g->rows_lo * f);
    if (m->dtype == HIST_F32)
        return kc_spmm(g->tk, g->ta_m, NULL, src_f32 ? src_f32 : hist_f32(src_table), f, 1.f, 0.f, hist_f32(m));
    for (int p = 0; p < g->npanels; p++) {
        const int64_t r0 = (int64_t)p * g->panel_rows, rows = kc_mat_rows(g->panels[p]);
        int rc = src_f32 ? kc_spmm(g->tk, g->panels[p], NULL, src_f32, f, 1.f, 0.f, g->panel)
                         : kc_spmm_bf16(g->tk, g->panels[p], (const uint16_t *)src_table->data, f, g->panel);
        if (rc == INCA_OK) rc = kc_scatter_rows(g->tk, KERN_BF16, m->data, f, NULL, r0, rows, g->panel);
        if (rc != INCA_OK) return rc;
    }
    return INCA_OK;
}

/* The configuration errors agg_create refuses before it allocates anything. */
static int agg_check_config(const agg_config_t *cfg) {
    const int ns = cfg->nsites, method = cfg->method;
    if (ns < 0 || ns > AGG_MAX_SITES)
        return inca_fail(INCA_EINVAL, "mini-batch training supports at most %d aggregation sites, model has %d", AGG_MAX_SITES, ns);
    if (!cfg->a || cfg->a->n_rows != cfg->n || cfg->a->n_cols != cfg->n)
        return inca_fail(INCA_EINVAL, "mini-batch training needs an %lld x %lld adjacency", (long long)cfg->n, (long long)cfg->n);
    if (method < AGG_CLUSTER || method > AGG_INCAGG) return inca_fail(INCA_EINVAL, "aggregation operator: unknown method %d", method);
    if (cfg->source != AGG_SRC_PUSH && cfg->source != AGG_SRC_RECOMPUTE)
        return inca_fail(INCA_EINVAL, "aggregation operator: unknown refresh source %d", cfg->source);
    return INCA_OK;
}

/* The context, where the tables live, and Â on the context (and on the host for host tables). */
static int agg_ctx_setup(agg_t *g, const agg_config_t *cfg) {
    int rc = INCA_OK;
    g->kc = cfg->kc ? cfg->kc : kc_cpu();
    g->dev = kc_device(g->kc) != KERN_DEV_CPU;
    g->host_tables = g->dev && cfg->host_tables;
    g->tdev = g->dev && !g->host_tables;
    g->tk = g->host_tables ? kc_cpu() : g->kc;
    g->x_t = g->host_tables ? cfg->x_host : cfg->x;
    if (g->host_tables && !cfg->x_host) rc = inca_fail(INCA_EINVAL, "aggregation operator: host tables need x on the host");
    g->a_m = cfg->a_m;
    if (rc == INCA_OK && !g->a_m) {
        g->own_a = 1;
        rc = kc_mat_upload(g->kc, cfg->a, &g->a_m);
    }
    g->ta_m = g->a_m;
    if (rc == INCA_OK && g->host_tables) {
        g->own_ta = 1;
        rc = kc_mat_upload(g->tk, cfg->a, &g->ta_m);
    }
    return rc;
}

/* The batch's matrices: views of the loader's on the CPU, uploads of this capacity off it (two
 * slots on a device: one batch uploads while the other runs). */
static int agg_slots_create(agg_t *g, const agg_config_t *cfg, int64_t nbm, int64_t nnzm, int64_t cols) {
    const int method = cfg->method;
    int rc = INCA_OK;
    g->nslots = g->dev ? 2 : 1;
    g->cur = g->nslots - 1;   /* the first batch goes to slot 0 */
    for (int k = 0; k < g->nslots && rc == INCA_OK; k++) {
        struct agg_slot *sl = &g->slot[k];
        if (rc == INCA_OK) rc = kc_mat_create(g->kc, nbm, cols, nnzm, &sl->bb);
        if (rc == INCA_OK) rc = kc_mat_create(g->kc, nbm, cols, nnzm, &sl->bbt);
        if (rc == INCA_OK && method == AGG_GAS) rc = kc_mat_create(g->kc, nbm, cols, nnzm, &sl->bh);
        for (int m = 0; m < 3 && rc == INCA_OK && g->dev; m++) {
            const size_t nz = (size_t)(nnzm > 0 ? nnzm : 1);
            if ((rc = pin(g, sizeof(int64_t) * (size_t)(nbm + 1), (void **)&sl->rp[m])) ||
                (rc = pin(g, sizeof(int32_t) * nz, (void **)&sl->col[m])))
                break;
            rc = pin(g, sizeof(float) * nz, (void **)&sl->val[m]);
        }
        if (rc == INCA_OK && g->dev &&
            !(rc = pin(g, sizeof(int64_t) * (size_t)nbm, (void **)&sl->nodes_h)))
            rc = pin(g, sizeof(int64_t) * (size_t)(cfg->halo_max > 0 ? cfg->halo_max : 1),
                          (void **)&sl->halo_h);
    }
    return rc;
}

/* The history tables of every site: H (gas), M, S and P (incagg; M^0 from the store when given). */
static int agg_tables_create(agg_t *g, const agg_config_t *cfg) {
    const int ns = cfg->nsites, method = cfg->method;
    int rc = INCA_OK;
    for (int s = 0; s < ns && rc == INCA_OK; s++) {
        if (method == AGG_GAS && !g->fixed[s]) rc = table(g, &g->H[s], 'H', s);
        else if (method == AGG_INCAGG) {
            if (g->fixed[s] && cfg->m0) {   /* the store's M^0: a view on the host, a copy on a device */
                g->m0_borrowed = 1;
                g->M[s] = (hist_t){.n = g->n, .f = g->dim[s], .dtype = g->dtype, .data = (void *)cfg->m0};
                if (g->tdev) {
                    const char *prev = kc_mem_tag(g->kc, "tables");
                    g->M[s].data = take(g, (size_t)hist_bytes(&g->M[s]), "M0_store", 1);
                    kc_mem_tag(g->kc, prev);
                    if (!g->M[s].data) rc = INCA_ENOMEM;
                    else rc = kc_copy(g->kc, g->M[s].data, cfg->m0, (size_t)hist_bytes(&g->M[s]), KERN_H2D, KERN_STREAM_COMPUTE);
                }
            } else
            rc = table(g, &g->M[s], 'M', s);
            if (rc == INCA_OK && !g->fixed[s]) rc = table(g, &g->S[s], 'S', s);
            if (rc == INCA_OK && !g->fixed[s] && g->source == AGG_SRC_PUSH && !g->single) rc = table(g, &g->P[s], 'P', s);
        }
    }
    return rc;
}

/* IncAgg's scratch: a batch's delta rows, and row panels of Â for bf16 tables. */
static int agg_incagg_scratch(agg_t *g, const agg_config_t *cfg) {
    const int method = cfg->method;
    int rc = INCA_OK;
    if (rc == INCA_OK && method == AGG_INCAGG) {
        g->sbuf_rows = cfg->nb_max ? cfg->nb_max : 1;
        if (!(g->sbuf = scratch(g, g->sbuf_rows * g->maxdim, "scratch_delta", g->dev))) rc = INCA_ENOMEM;
        if (rc == INCA_OK && g->dtype == HIST_BF16) {
            const int64_t row_bytes = (int64_t)sizeof(float) * g->maxdim;
            if (cfg->panel_bytes > 0) g->panel_rows = cfg->panel_bytes / row_bytes;
            else {
                g->panel_rows = g->n / 16 > AGG_PANEL_MIN_ROWS ? g->n / 16 : AGG_PANEL_MIN_ROWS;
                if (g->panel_rows > AGG_PANEL_BYTES / row_bytes) g->panel_rows = AGG_PANEL_BYTES / row_bytes;
            }
            if (g->panel_rows < 1) g->panel_rows = 1;
            if (g->panel_rows > g->n) g->panel_rows = g->n > 0 ? g->n : 1;
            if (!(g->panel = scratch(g, g->panel_rows * g->maxdim, "scratch_panel", g->tdev))) rc = INCA_ENOMEM;
            const int np = (int)((g->n + g->panel_rows - 1) / g->panel_rows);
            if (rc == INCA_OK && !(g->panels = inca_calloc((size_t)(np > 0 ? np : 1), sizeof *g->panels))) rc = INCA_ENOMEM;
            for (int p = 0; p < np && rc == INCA_OK; p++, g->npanels++) {
                const int64_t r0 = (int64_t)p * g->panel_rows, r1 = r0 + g->panel_rows < g->n ? r0 + g->panel_rows : g->n;
                rc = kc_mat_rows_view(g->tk, g->ta_m, r0, r1, &g->panels[p]);
            }
        }
    }
    return rc;
}

int agg_add_extra(agg_t *g, int e, int64_t bytes) {
    if (e < 0 || e >= AGG_MAX_EXTRA || g->extra_cap[e] > 0)
        return inca_fail(INCA_EINVAL, "aggregation operator: extra array %d is not free", e);
    int rc = INCA_OK;
    for (int k = 0; k < g->nslots && rc == INCA_OK && g->dev && bytes > 0; k++) {
        if (!(g->slot[k].extra_d[e] = take(g, (size_t)bytes, "batch_extra", 1))) rc = INCA_ENOMEM;
        else rc = pin(g, (size_t)bytes, &g->slot[k].extra_h[e]);
    }
    if (rc == INCA_OK) g->extra_cap[e] = bytes;
    for (int k = 0; k < g->nslots && rc != INCA_OK; k++) {   /* none of it: the device blocks go with the operator */
        kc_release(g->kc, KERN_MEM_PINNED, g->slot[k].extra_h[e]);
        g->slot[k].extra_h[e] = NULL;
        g->slot[k].extra_d[e] = NULL;
    }
    return rc;
}

/* Off the CPU: each slot's batch and halo ids and the trainer's extra per-batch arrays. */
static int agg_slot_ids(agg_t *g, const agg_config_t *cfg, int64_t nbm) {
    int rc = INCA_OK;
    for (int k = 0; k < g->nslots && rc == INCA_OK && g->dev; k++) {
        g->slot[k].nodes_d = take(g, sizeof(int64_t) * (size_t)nbm, "ids_batch", 1);
        g->slot[k].halo_d = take(g, sizeof(int64_t) * (size_t)(cfg->halo_max > 0 ? cfg->halo_max : 1), "ids_halo", 1);
        if (!g->slot[k].nodes_d || !g->slot[k].halo_d) rc = INCA_ENOMEM;
    }
    for (int e = 0; e < AGG_MAX_EXTRA && rc == INCA_OK; e++)
        if (cfg->extra_bytes[e] > 0) rc = agg_add_extra(g, e, cfg->extra_bytes[e]);
    return rc;
}

/* Host tables: the pinned stage whole tables move through, and each site's staged rows. */
static int agg_host_stage(agg_t *g, const agg_config_t *cfg, int64_t nbm) {
    const int ns = cfg->nsites, method = cfg->method;
    int rc = INCA_OK;
    if (rc == INCA_OK && g->host_tables) {   /* whole tables move in chunks of a batch's rows */
        g->stage_rows = nbm > cfg->halo_max ? nbm : cfg->halo_max;
        if ((rc = pin(g, sizeof(float) * (size_t)(g->stage_rows * g->maxdim),
                           (void **)&g->stage)) == INCA_OK)
            g->scratch_bytes += (int64_t)sizeof(float) * g->stage_rows * g->maxdim;
        const int64_t hm = cfg->halo_max > 0 ? cfg->halo_max : 1;
        for (int st = 0; st < ns && rc == INCA_OK; st++) {
            const int64_t d = g->dim[st];
            const int wantM = method == AGG_INCAGG, wantS = wantM && !g->fixed[st], wantH = method == AGG_GAS && !g->fixed[st];
            const int push = wantH || (wantS && (g->single || g->P[st].data));
            if (push && (rc = pin(g, sizeof(float) * (size_t)(nbm * d), (void **)&g->push_h[st])))
                break;
            for (int k = 0; k < 2 && rc == INCA_OK; k++) {
                if (wantM && (!(g->rowsM[k][st] = scratch(g, nbm * d, "rows_M", 1)) ||
                              (rc = pin(g, sizeof(float) * (size_t)(nbm * d), (void **)&g->stM[k][st]))))
                    rc = rc ? rc : INCA_ENOMEM;
                if (rc == INCA_OK && wantS &&
                    (!(g->rowsS[k][st] = scratch(g, nbm * d, "rows_S", 1)) ||
                     (rc = pin(g, sizeof(float) * (size_t)(nbm * d), (void **)&g->stS[k][st]))))
                    rc = rc ? rc : INCA_ENOMEM;
                if (rc == INCA_OK && wantH &&
                    (!(g->rowsH[k][st] = scratch(g, hm * d, "rows_H", 1)) ||
                     (rc = pin(g, sizeof(float) * (size_t)(hm * d), (void **)&g->stH[k][st]))))
                    rc = rc ? rc : INCA_ENOMEM;
            }
        }
    }
    return rc;
}

/* GAS: held pushes of the ranks of one step, and the halo scratch. */
static int agg_gas_scratch(agg_t *g, const agg_config_t *cfg, int64_t nbm) {
    const int ns = cfg->nsites, method = cfg->method;
    int rc = INCA_OK;
    if (rc == INCA_OK && method == AGG_GAS && cfg->defer_batches > 0) {
        if (g->host_tables) rc = inca_fail(INCA_EINVAL, "gas: held pushes need the tables on the context (not --history-location host)");
        g->defer = cfg->defer_batches;
        g->ndmax = (int64_t)cfg->defer_batches * nbm;
        if (rc == INCA_OK && !(g->dids = take(g, sizeof(int64_t) * (size_t)g->ndmax, "held_ids", g->dev))) rc = INCA_ENOMEM;
        else if (rc == INCA_OK) {
            g->scratch_bytes += (int64_t)sizeof(int64_t) * g->ndmax;
            if (!g->dev) g->scratch_host_bytes += (int64_t)sizeof(int64_t) * g->ndmax;
        }
        for (int st = 0; st < ns && rc == INCA_OK; st++)
            if (!g->fixed[st] && !(g->dpush[st] = scratch(g, g->ndmax * g->dim[st], "held_pushes", g->dev))) rc = INCA_ENOMEM;
    }
    if (rc == INCA_OK && method == AGG_GAS) {
        int64_t w = g->maxdim > g->in_dim ? g->maxdim : g->in_dim;
        if (!(g->hbuf = scratch(g, (cfg->halo_max ? cfg->halo_max : 1) * w, "scratch_halo", g->dev))) rc = INCA_ENOMEM;
    }
    return rc;
}

/* The MPI rank's own rows of Â (incagg), then M^0 = ÂX once at every site that reads x. */
static int agg_rows_and_baselines(agg_t *g, const agg_config_t *cfg) {
    const int ns = cfg->nsites, method = cfg->method;
    int rc = INCA_OK;
    g->exchange = cfg->exchange;
    g->exchange_ctx = cfg->exchange_ctx;
    if (rc == INCA_OK && method == AGG_INCAGG && cfg->rows_hi > cfg->rows_lo) {
        if (cfg->rows_lo < 0 || cfg->rows_hi > g->n) rc = inca_fail(INCA_EINVAL, "aggregation operator: rows out of range");
        else rc = kc_mat_rows_view(g->tk, g->ta_m, cfg->rows_lo, cfg->rows_hi, &g->own_rows);
        g->rows_lo = cfg->rows_lo;
    }
    /* M^0 = ÂX once at every site that reads x */
    for (int s = 0; s < ns && rc == INCA_OK && method == AGG_INCAGG; s++)
        if (g->fixed[s] && !g->m0_borrowed) rc = baseline_compute(g, s, g->x_t, NULL);
    return rc;
}

int agg_create(const agg_config_t *cfg, agg_t **out) {
    *out = NULL;
    const int ns = cfg->nsites, method = cfg->method;
    int rc = agg_check_config(cfg);
    if (rc != INCA_OK) return rc;
    agg_t *g = inca_calloc(1, sizeof *g);
    if (!g) return INCA_ENOMEM;
    rc = mem_arena_create(&g->arena);
    if (rc != INCA_OK) { inca_free(g); return rc; }
    if ((cfg->spill_budget > 0 || cfg->spill_dir) && cfg->spill_budget >= 0 &&
        (rc = mem_arena_set_spill(g->arena, cfg->spill_budget, cfg->spill_dir)) != INCA_OK) {
        mem_arena_destroy(&g->arena);
        inca_free(g);
        return rc;
    }
    rc = agg_ctx_setup(g, cfg);
    /* the batch's matrices: views of the loader's on the CPU, uploads of this capacity off it */
    const int64_t nbm = cfg->nb_max > 0 ? cfg->nb_max : 1, nnzm = g->dev ? cfg->nnz_max : INT64_MAX / 4;
    g->nb_max = nbm;
    g->halo_max = cfg->halo_max > 0 ? cfg->halo_max : 0;
    const int64_t cols = nbm > cfg->halo_max ? nbm : cfg->halo_max;
    if (rc == INCA_OK) rc = agg_slots_create(g, cfg, nbm, nnzm, cols);
    if (rc != INCA_OK) { agg_free(&g); return rc; }
    g->method = method;
    g->source = cfg->source;
    g->relax = cfg->relax > 0 && cfg->relax < 1 && cfg->source == AGG_SRC_RECOMPUTE ? cfg->relax : 1.f;
    g->single = method == AGG_INCAGG && cfg->source == AGG_SRC_PUSH && cfg->single_buffer;
    g->nsites = ns;
    g->n = cfg->n;
    g->in_dim = cfg->in_dim;
    g->x = cfg->x;
    g->dtype = cfg->dtype;
    g->pass_dtype = cfg->pass_dtype == HIST_BF16 ? HIST_BF16 : HIST_F32;
    g->maxdim = 1;
    for (int s = 0; s < ns; s++) {
        g->dim[s] = cfg->dims[s];
        g->fixed[s] = cfg->fixed[s] ? 1 : 0;
        if (g->dim[s] > g->maxdim) g->maxdim = g->dim[s];
    }
    /* first, so that under a memory budget they take anonymous memory before the tables do: the
     * passes' SpMM reads them at random rows (every cut edge), a step reads a table at its
     * batch's few contiguous ranges, so spilling tables costs less I/O than spilling these */
    for (int i = 0; i < cfg->pass_buffers && i < 2 && cfg->pass_width > 0 && rc == INCA_OK; i++) {
        void *pb;
        rc = agg_pass_buffer(g, i, cfg->pass_width, &pb);
    }
    if (rc == INCA_OK && (rc = agg_tables_create(g, cfg)) == INCA_OK && (rc = agg_incagg_scratch(g, cfg)) == INCA_OK &&
        (rc = agg_slot_ids(g, cfg, nbm)) == INCA_OK && (rc = agg_host_stage(g, cfg, nbm)) == INCA_OK &&
        (rc = agg_gas_scratch(g, cfg, nbm)) == INCA_OK)
        rc = agg_rows_and_baselines(g, cfg);
    if (rc != INCA_OK) {
        agg_free(&g);
        return inca_fail_ctx(rc, "while allocating %s memory", agg_method_name(method));
    }
    *out = g;
    return INCA_OK;
}

static int check_call(const agg_t *g, int site, int64_t n, int64_t f) {
    if (!g->b) return inca_fail(INCA_ERR, "mini-batch operator called without a batch");
    if (site < 0 || site >= g->nsites || f != g->dim[site] || n != g->b->n_b)
        return inca_fail(INCA_ERR, "mini-batch operator: site %d called with %lld x %lld, expected %lld x %lld",
                         site, (long long)n, (long long)f, (long long)g->b->n_b,
                         (long long)(site >= 0 && site < g->nsites ? g->dim[site] : -1));
    return INCA_OK;
}

int agg_commit_pushes(agg_t *g) {
    if (!g->defer || g->ndpush == 0) return INCA_OK;
    int rc = INCA_OK;
    for (int st = 0; st < g->nsites && rc == INCA_OK; st++)
        if (!g->fixed[st] && g->H[st].data)
            rc = kc_scatter_rows(g->kc, kdt(&g->H[st]), g->H[st].data, g->dim[st], g->dids, 0, g->ndpush, g->dpush[st]);
    g->ndpush = 0;
    return rc;
}

/* gas with defer: hold the push of in_raw (n rows, the current batch's nodes) at site */
static int push_defer(agg_t *g, int site, int64_t n, int64_t f, const float *in_raw) {
    /* the first history site of a batch appends its ids; later sites reuse the same offset */
    int64_t off = g->ndpush;
    int first = 1;
    for (int st = 0; st < site; st++)
        if (!g->fixed[st] && g->H[st].data) first = 0;
    if (first) {
        if (g->ndpush + n > g->ndmax)
            return inca_fail(INCA_EINVAL, "gas: more held pushes than the %d batches configured", g->defer);
        int rc = kc_copy(g->kc, g->dids + off, g->nodes, sizeof(int64_t) * (size_t)n, KERN_D2D, KERN_STREAM_COMPUTE);
        if (rc != INCA_OK) return rc;
        g->ndpush += n;
    } else off = g->ndpush - n;
    return kc_copy(g->kc, g->dpush[site] + off * f, in_raw, sizeof(float) * (size_t)(n * f), KERN_D2D, KERN_STREAM_COMPUTE);
}

static int forward_gas(agg_t *g, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    const batch_t *b = g->b;
    int rc = kc_spmm(g->kc, g->bb, NULL, in, f, 1.f, 0.f, out);
    if (rc != INCA_OK) return rc;
    if (b->n_halo > 0) {
        /* exact x rows at a site reading x (its width is in_dim), else the history */
        const float *hrows = g->hbuf;
        if (g->fixed[site]) rc = kc_gather_rows(g->kc, KERN_F32, g->x, g->in_dim, g->halo, 0, b->n_halo, g->hbuf);
        else if (g->host_tables) hrows = g->rowsH[g->cur][site];   /* uploaded with the batch */
        else rc = kc_gather_rows(g->kc, kdt(&g->H[site]), g->H[site].data, f, g->halo, 0, b->n_halo, g->hbuf);
        if (rc != INCA_OK || (rc = kc_spmm(g->kc, g->bh, NULL, hrows, f, 1.f, 1.f, out)) != INCA_OK) return rc;
    }
    if (g->fixed[site]) return INCA_OK;
    if (g->defer) return push_defer(g, site, n, f, in_raw);
    if (g->host_tables) return push_async(g, &g->H[site], site, in_raw, n);
    return kc_scatter_rows(g->kc, kdt(&g->H[site]), g->H[site].data, f, g->nodes, 0, n, in_raw);
}

/* out = M_B + Â_BB (in − S_B); the push (source push) goes to P, or to S after reading it */
static int forward_incagg(agg_t *g, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    hist_t *M = &g->M[site], *S = &g->S[site], *P = &g->P[site];
    const int host = g->host_tables;
    const float *rowsM = host ? g->rowsM[g->cur][site] : NULL, *rowsS = host ? g->rowsS[g->cur][site] : NULL;
    const size_t bytes = sizeof(float) * (size_t)(n * f);
    int rc;
    if (g->fixed[site]) {
        if (in == in_raw)   /* no dropout: Δ = 0, no SpMM at all */
            return host ? kc_copy(g->kc, out, rowsM, bytes, KERN_D2D, KERN_STREAM_COMPUTE)
                        : kc_gather_rows(g->kc, kdt(M), M->data, f, g->nodes, 0, n, out);
        rc = kc_sub(g->kc, n * f, in, in_raw, g->sbuf);
    } else if (host) {   /* Δ = in − S_B from the uploaded rows; the push goes down to S or P */
        rc = kc_sub(g->kc, n * f, in, rowsS, g->sbuf);
        if (rc == INCA_OK && (g->single || P->data)) rc = push_async(g, g->single ? S : P, site, in_raw, n);
    } else if (g->single) {   /* S_B read, then overwritten */
        rc = kc_sub_rows(g->kc, kdt(S), S->data, f, g->nodes, n, in, g->sbuf, in_raw);
    } else {
        rc = kc_sub_rows(g->kc, kdt(S), S->data, f, g->nodes, n, in, g->sbuf, NULL);
        if (rc == INCA_OK && P->data) rc = kc_scatter_rows(g->kc, kdt(P), P->data, f, g->nodes, 0, n, in_raw);
    }
    if (rc != INCA_OK) return rc;
    /* fp32 baselines on the context are added row by row inside the SpMM (the same bits as
     * gathering M_B and multiplying with beta = 1, what bf16 and host tables do) */
    if (M->dtype == HIST_F32 && !host)
        return kc_spmm_base(g->kc, g->bb, g->sbuf, f, hist_f32(M), g->n, g->nodes, out);
    rc = host ? kc_copy(g->kc, out, rowsM, bytes, KERN_D2D, KERN_STREAM_COMPUTE)
              : kc_gather_rows(g->kc, KERN_BF16, M->data, f, g->nodes, 0, n, out);
    if (rc != INCA_OK) return rc;
    return kc_spmm(g->kc, g->bb, NULL, g->sbuf, f, 1.f, 1.f, out);
}

int agg_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    agg_t *g = ctx;
    int rc = check_call(g, site, n, f);
    if (rc != INCA_OK) return rc;
    double t0 = inca_now();
    if (g->method == AGG_CLUSTER) rc = kc_spmm(g->kc, g->bb, NULL, in, f, 1.f, 0.f, out);
    else if (g->method == AGG_GAS) rc = forward_gas(g, site, n, f, in_raw, in, out);
    else rc = forward_incagg(g, site, n, f, in_raw, in, out);
    g->fwd_s += inca_now() - t0;
    g->nnz_bb += g->b->a_bb.nnz;
    g->nnz_rows += g->b->nnz_rows;
    return rc;
}

int agg_backward(void *ctx, int site, int64_t n, int64_t f, const float *dout, float *din) {
    agg_t *g = ctx;
    int rc = check_call(g, site, n, f);
    if (rc != INCA_OK) return rc;
    double t0 = inca_now();
    rc = kc_spmm(g->kc, g->has_bbt ? g->bbt : g->bb, NULL, dout, f, 1.f, 0.f, din);
    g->bwd_s += inca_now() - t0;
    return rc;
}

void agg_times(const agg_t *g, double *fwd_s, double *bwd_s, double *intra_fraction) {
    *fwd_s = g->fwd_s;
    *bwd_s = g->bwd_s;
    *intra_fraction = g->nnz_rows > 0 ? (double)g->nnz_bb / (double)g->nnz_rows : 0;
}

void agg_reset_times(agg_t *g) {
    g->fwd_s = g->bwd_s = 0;
    g->nnz_bb = g->nnz_rows = 0;
}

int agg_refresh(agg_t *g) {
    if (g->method != AGG_INCAGG) return INCA_OK;
    int frc = agg_flush(g);
    if (frc != INCA_OK) return frc;
    if (g->source != AGG_SRC_PUSH)
        return inca_fail(INCA_EINVAL, "agg_refresh: the recompute source refreshes through a model pass (agg_refresh_forward)");
    for (int s = 0; s < g->nsites; s++) {
        if (g->fixed[s]) continue;
        int rc = g->single ? INCA_OK
                           : kc_copy(g->tk, g->S[s].data, g->P[s].data, (size_t)hist_bytes(&g->S[s]), KERN_D2D,
                                     KERN_STREAM_COMPUTE);
        if (rc == INCA_OK && g->exchange) rc = g->exchange(g->exchange_ctx, s, &g->S[s]);   /* the halo's rows */
        if (rc == INCA_OK) rc = baseline_compute(g, s, NULL, &g->S[s]);
        if (rc != INCA_OK) return rc;
    }
    return INCA_OK;
}

static int snapshot_rows(agg_t *g, int site, int64_t r0, int64_t m, const float *in, const float *out, int skip_s);

int agg_refresh_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    agg_t *g = ctx;
    (void)in_raw;   /* eval mode: in_raw == in */
    if (site < 0 || site >= g->nsites || n != g->n || f != g->dim[site])
        return inca_fail(INCA_ERR, "refresh operator: site %d called with %lld x %lld, expected %lld x %lld",
                         site, (long long)n, (long long)f, (long long)g->n, (long long)(site >= 0 && site < g->nsites ? g->dim[site] : -1));
    int frc = agg_flush(g);
    if (frc != INCA_OK) return frc;
    if (g->method == AGG_INCAGG && g->fixed[site]) {   /* M^0 = ÂX is already there */
        return t_get_all(g, &g->M[site], out);
    }
    int rc = kc_spmm(g->kc, g->a_m, NULL, in, f, 1.f, 0.f, out);
    if (rc != INCA_OK || g->method != AGG_INCAGG) return rc;
    return snapshot_rows(g, site, 0, n, in, out, 0);
}

const hist_t *agg_m0(const agg_t *g, int site) {
    if (g->method != AGG_INCAGG || site < 0 || site >= g->nsites || !g->fixed[site]) return NULL;
    return &g->M[site];
}

int64_t agg_spilled_bytes(const agg_t *g) { return (int64_t)mem_arena_spilled_bytes(g->arena); }

float *agg_s_direct(agg_t *g, int site) {
    if (g->method != AGG_INCAGG || site < 0 || site >= g->nsites || g->fixed[site] || g->host_tables ||
        g->pass_dtype == HIST_BF16)
        return NULL;
    if (g->relax < 1.f && g->relaxing) return NULL;   /* S is blended, not overwritten */
    return hist_f32(&g->S[site]);
}

hist_dtype_t agg_pass_dtype(const agg_t *g) { return g->pass_dtype; }

int agg_pass_buffer(agg_t *g, int i, int64_t f, void **out) {
    if (i < 0 || i > 1 || f < 1) return inca_fail(INCA_EINVAL, "agg_pass_buffer: buffer %d of width %lld", i, (long long)f);
    if (g->pass[i] && f > g->pass_f[i])
        return inca_fail(INCA_EINVAL, "agg_pass_buffer: buffer %d was made %lld wide, asked for %lld", i, (long long)g->pass_f[i], (long long)f);
    if (!g->pass[i]) {
        const size_t bytes = (g->pass_dtype == HIST_BF16 ? 2 : 4) * (size_t)(g->n > 0 ? g->n : 1) * (size_t)f;
        const char *prev = kc_mem_tag(g->kc, "pass buffers");
        g->pass[i] = g->dev ? take(g, bytes, i ? "pass1" : "pass0", 1)
                            : mem_arena_alloc_spill(g->arena, bytes, i ? "pass1" : "pass0");
        kc_mem_tag(g->kc, prev);
        if (!g->pass[i]) return inca_fail_ctx(INCA_ENOMEM, "a layer-wise pass buffer of %zu bytes", bytes);
        g->pass_f[i] = f;
        g->table_bytes += (int64_t)bytes;
    }
    *out = g->pass[i];
    return INCA_OK;
}

/* rows [r0, r0+m) of table t <- src (m x t->f, the context's memory) */
static int t_put_rows(agg_t *g, hist_t *t, int64_t r0, int64_t m, const float *src) {
    if (!g->host_tables) return kc_scatter_rows(g->kc, kdt(t), t->data, t->f, NULL, r0, m, src);
    for (int64_t i0 = 0; i0 < m; i0 += g->stage_rows) {
        const int64_t k = m - i0 < g->stage_rows ? m - i0 : g->stage_rows;
        int rc = kc_copy(g->kc, g->stage, src + i0 * t->f, sizeof(float) * (size_t)(k * t->f), KERN_D2H, KERN_STREAM_COMPUTE);
        if (rc == INCA_OK) rc = kc_sync(g->kc);
        if (rc != INCA_OK) return rc;
        kern_rows_scatter(kdt(t), t->data, t->f, NULL, r0 + i0, k, g->stage);
    }
    return INCA_OK;
}

/* rows [r0, r0+m) of t <- w src + (1 − w) t (src in the context's memory; the same float
 * operations as kc_axpby, so every path gives the same bits): on the CPU in place, host tables
 * through the stage, device tables through sbuf (gather, axpby, scatter); w = 1 replaces */
static int t_blend_rows(agg_t *g, hist_t *t, int64_t r0, int64_t m, const float *src, float w) {
    if (w == 1.f) return t_put_rows(g, t, r0, m, src);
    if (!g->dev) {
        kern_rows_blend(kdt(t), t->data, t->f, r0, m, w, src);
        return INCA_OK;
    }
    const int64_t chunk = g->host_tables ? g->stage_rows : g->sbuf_rows;
    int rc = INCA_OK;
    for (int64_t i0 = 0; i0 < m && rc == INCA_OK; i0 += chunk) {
        const int64_t k = m - i0 < chunk ? m - i0 : chunk;
        const float *s = src + i0 * t->f;
        if (g->host_tables) {
            rc = kc_copy(g->kc, g->stage, s, sizeof(float) * (size_t)(k * t->f), KERN_D2H, KERN_STREAM_COMPUTE);
            if (rc == INCA_OK) rc = kc_sync(g->kc);
            if (rc == INCA_OK) kern_rows_blend(kdt(t), t->data, t->f, r0 + i0, k, w, g->stage);
            continue;
        }
        rc = kc_gather_rows(g->kc, kdt(t), t->data, t->f, NULL, r0 + i0, k, g->sbuf);
        if (rc == INCA_OK) rc = kc_axpby(g->kc, k * t->f, w, s, 1.f - w, g->sbuf);
        if (rc == INCA_OK) rc = kc_scatter_rows(g->kc, kdt(t), t->data, t->f, NULL, r0 + i0, k, g->sbuf);
    }
    return rc;
}

/* A recompute refresh of rows [r0, r0+m) at a site: S <- in and M <- out = Â in for the
 * initial snapshot (the exact rows of the initial model), after agg_snapshot_taken S and M
 * move a fraction relax of the way (M = Â S stays true: Â is linear). P (push) is replaced. */
static int snapshot_rows(agg_t *g, int site, int64_t r0, int64_t m, const float *in, const float *out, int skip_s) {
    const float w = g->relaxing ? g->relax : 1.f;
    int rc = INCA_OK;
    if (!skip_s) rc = t_blend_rows(g, &g->S[site], r0, m, in, w);
    if (rc == INCA_OK && g->P[site].data) rc = t_put_rows(g, &g->P[site], r0, m, in);
    if (rc == INCA_OK) rc = t_blend_rows(g, &g->M[site], r0, m, out, w);
    return rc;
}

void agg_snapshot_taken(agg_t *g) { g->relaxing = 1; }

int agg_refresh_rows(agg_t *g, int site, int64_t r0, int64_t m, const float *in, const float *out, int skip_s) {
    if (g->method != AGG_INCAGG || site < 0 || site >= g->nsites || g->fixed[site]) return INCA_OK;
    if (r0 < 0 || m < 0 || r0 + m > g->n)
        return inca_fail(INCA_ERR, "refresh rows [%lld, %lld) outside [0, %lld)", (long long)r0, (long long)(r0 + m), (long long)g->n);
    int rc = agg_flush(g);
    return rc == INCA_OK ? snapshot_rows(g, site, r0, m, in, out, skip_s) : rc;
}
