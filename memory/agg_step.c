/* A step of the mini-batch aggregation operators (agg.h) on the current batch: the forward of
 * every aggregation site (cluster, GAS with its pulls and pushes, held or not, IncAgg's
 * M_B + Â_BB Δ), the backward, and their timers. Tested in test_incagg.c. */
#include "memory/agg.h"
#include "memory/agg_impl.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/backend.h"

static int check_call(const agg_t *g, int site, int64_t n, int64_t f) {
    if (!g->b) return inca_fail(INCA_ERR, "mini-batch operator called without a batch");
    const int narrow = site >= 0 && site < g->nsites && g->fixed[site] && g->xtf > 0 && f == g->xtf;
    if (site < 0 || site >= g->nsites || (f != g->dim[site] && !narrow) || n != g->b->n_b)
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
    if (g->host_tables) return agg_push_async(g, &g->H[site], site, in_raw, n);
    return kc_scatter_rows(g->kc, kdt(&g->H[site]), g->H[site].data, f, g->nodes, 0, n, in_raw);
}

/* out = M_B + Â_BB (in − S_B); the push (source push) goes to P, or to S after reading it */
static int forward_incagg(agg_t *g, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    hist_t *M = &g->M[site], *S = &g->S[site], *P = &g->P[site];
    const int host = g->host_tables;
    const float *rowsM = host ? g->rowsM[g->cur][site] : NULL, *rowsS = host ? g->rowsS[g->cur][site] : NULL;
    const size_t bytes = sizeof(float) * (size_t)(n * f);
    int rc;
    if (g->fixed[site] && g->m0s)
        return inca_fail(INCA_ERR, "incagg: site %d's M^0 is sparse: it runs transformed first (agg_base)", site);
    if (g->fixed[site]) {
        if (in == in_raw)   /* no dropout: Δ = 0, no SpMM at all */
            return host ? kc_copy(g->kc, out, rowsM, bytes, KERN_D2D, KERN_STREAM_COMPUTE)
                        : kc_gather_rows(g->kc, kdt(M), M->data, f, g->nodes, 0, n, out);
        rc = kc_sub(g->kc, n * f, in, in_raw, g->sbuf);
    } else if (host) {   /* Δ = in − S_B from the uploaded rows; the push goes down to S or P */
        rc = kc_sub(g->kc, n * f, in, rowsS, g->sbuf);
        if (rc == INCA_OK && (g->single || P->data)) rc = agg_push_async(g, g->single ? S : P, site, in_raw, n);
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
    /* Cluster-GCN, and a site reading x at the narrower width (agg_base has the rest: IncAgg's
     * M^0_B, which a caller that never asked for it would silently leave out) */
    const int narrow = g->fixed[site] && f != g->dim[site];
    if (narrow && g->method == AGG_INCAGG && g->base_seq != g->batch_seq)
        return inca_fail(INCA_ERR, "incagg: site %d called at width %lld without agg_base for this batch (its M^0_B "
                         "would be left out)", site, (long long)f);
    if (g->method == AGG_CLUSTER || narrow) rc = kc_spmm(g->kc, g->bb, NULL, in, f, 1.f, 0.f, out);
    else if (g->method == AGG_GAS) rc = forward_gas(g, site, n, f, in_raw, in, out);
    else rc = forward_incagg(g, site, n, f, in_raw, in, out);
    g->fwd_s += inca_now() - t0;
    g->nnz_bb += g->b->a_bb.nnz;
    g->nnz_rows += g->b->nnz_rows;
    return rc;
}

/* The batch's rows of the sparse M^0 into m0b (grown when a batch needs more room). */
static int m0_rows(agg_t *g, int64_t n) {
    const csr_t *a = g->m0s;
    const int64_t need = csr_rows_nnz(a, g->b->nodes, n);
    if (need > g->m0b_cap || n > g->m0b_rows) {   /* rare: the first batches, then the largest */
        csr_free(&g->m0b);
        g->m0b_cap = g->m0b_rows = 0;
        const int64_t cap = need + need / 4 + 1, rows = g->nb_max > n ? g->nb_max : n;
        int rc = csr_alloc(&g->m0b, rows, a->n_cols, cap, 1);
        if (rc != INCA_OK) return inca_fail_ctx(rc, "a batch's rows of the sparse M^0: %lld nonzeros", (long long)cap);
        g->m0b_cap = cap;
        g->m0b_rows = rows;
    }
    csr_take_rows(a, g->b->nodes, n, &g->m0b);
    return INCA_OK;
}

int agg_base(agg_t *g, int site, int64_t n, int64_t f, const float **rows, const csr_t **sparse, int *residual) {
    int rc = check_call(g, site, n, f);
    if (rc != INCA_OK) return rc;
    if (!g->fixed[site] || g->xtf <= 0)
        return inca_fail(INCA_ERR, "agg_base: site %d %s", site, g->fixed[site] ? "was not made for it (x_tf_dim 0)" : "does not read x");
    *rows = NULL;
    *sparse = NULL;
    *residual = g->method == AGG_INCAGG;
    g->base_seq = g->batch_seq;
    if (g->method != AGG_INCAGG) return INCA_OK;
    double t0 = inca_now();
    if (g->m0s) {
        if ((rc = m0_rows(g, n)) == INCA_OK) *sparse = &g->m0b;
    } else if (g->host_tables) {
        *rows = g->rowsM[g->cur][site];   /* uploaded with the batch */
    } else if ((rc = kc_gather_rows(g->kc, kdt(&g->M[site]), g->M[site].data, f, g->nodes, 0, n, g->xbase)) == INCA_OK) {
        *rows = g->xbase;
    }
    g->fwd_s += inca_now() - t0;
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
