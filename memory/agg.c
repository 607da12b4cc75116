/* The mini-batch aggregation operators' base (agg.h; their state in agg_impl.h): names,
 * accessors, and the batch a step works on made current (views on the CPU; off it an upload into
 * one of two slots, with host tables' rows, and their pushes flushed). Tested in test_incagg.c. */
#include "memory/agg.h"
#include "memory/agg_impl.h"
#include "core/status.h"
#include "kernels/backend.h"
#include <string.h>

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
int agg_push_async(agg_t *g, hist_t *t, int site, const float *in, int64_t m) {
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
    g->batch_seq++;
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

const hist_t *agg_m0(const agg_t *g, int site) {
    if (g->method != AGG_INCAGG || site < 0 || site >= g->nsites || !g->fixed[site]) return NULL;
    return g->M[site].data ? &g->M[site] : NULL;   /* none: the sparse M^0 (agg_config.m0_sparse) */
}

int64_t agg_spilled_bytes(const agg_t *g) { return (int64_t)mem_arena_spilled_bytes(g->arena); }
hist_dtype_t agg_pass_dtype(const agg_t *g) { return g->pass_dtype; }
