/* IncAgg's refreshes for the mini-batch aggregation operator (agg.h): the baselines M = Â S from
 * the pushed rows (agg_refresh) or from a layer-wise pass (agg_refresh_forward, agg_refresh_rows,
 * relaxed after agg_snapshot_taken), whole tables moved wherever they live. Tested in
 * test_incagg.c. */
#include "memory/agg.h"
#include "memory/agg_impl.h"
#include "core/status.h"
#include "kernels/backend.h"

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
int agg_baseline_compute(agg_t *g, int site, const float *src_f32, const hist_t *src_table) {
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
        if (rc == INCA_OK) rc = agg_baseline_compute(g, s, NULL, &g->S[s]);
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
    if (g->fixed[site] && g->m0s)
        return inca_fail(INCA_ERR, "refresh operator: site %d's M^0 is sparse: it runs transformed first (agg_refresh_base)", site);
    if (g->method == AGG_INCAGG && g->fixed[site]) {   /* M^0 = ÂX is already there */
        return t_get_all(g, &g->M[site], out);
    }
    int rc = kc_spmm(g->kc, g->a_m, NULL, in, f, 1.f, 0.f, out);
    if (rc != INCA_OK || g->method != AGG_INCAGG) return rc;
    return snapshot_rows(g, site, 0, n, in, out, 0);
}

int agg_refresh_base(agg_t *g, int site, int64_t n, int64_t f, const float **rows, const csr_t **sparse, int *residual) {
    if (!g->m0s || site < 0 || site >= g->nsites || !g->fixed[site] || n != g->n || f != g->in_dim)
        return inca_fail(INCA_ERR, "refresh operator: no sparse M^0 at site %d for %lld x %lld", site, (long long)n, (long long)f);
    *rows = NULL;
    *sparse = g->m0s;
    *residual = 1;
    return INCA_OK;
}

float *agg_s_direct(agg_t *g, int site) {
    if (g->method != AGG_INCAGG || site < 0 || site >= g->nsites || g->fixed[site] || g->host_tables ||
        g->pass_dtype == HIST_BF16)
        return NULL;
    if (g->relax < 1.f && g->relaxing) return NULL;   /* S is blended, not overwritten */
    return hist_f32(&g->S[site]);
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
