/* The mini-batch aggregation operators (cluster, GAS, IncAgg), their history tables and the
 * IncAgg refresh from either source (see agg.h). Tested in test_incagg.c. */
#include "memory/agg.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include <stdio.h>
#include <string.h>

struct agg {
    int method, source, nsites;
    int single;          /* incagg push: pushes go to S, no P tables */
    int64_t n, in_dim, maxdim;   /* maxdim: the widest site */
    const float *x;
    const csr_t *a;
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
    double fwd_s, bwd_s;
    int64_t nnz_bb, nnz_rows;
};

int agg_method_parse(const char *s, int *method) {
    if (s && strcmp(s, "cluster") == 0) { *method = AGG_CLUSTER; return INCA_OK; }
    if (s && strcmp(s, "gas") == 0) { *method = AGG_GAS; return INCA_OK; }
    if (s && strcmp(s, "incagg") == 0) { *method = AGG_INCAGG; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--method: expected cluster, gas or incagg for mini-batch training, got '%s'", s ? s : "");
}

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
int64_t agg_scratch_bytes(const agg_t *g) { return g->scratch_bytes; }
void agg_set_batch(agg_t *g, const batch_t *b) { g->b = b; }

hist_t *agg_table(agg_t *g, char which, int site) {
    if (site < 0 || site >= g->nsites) return NULL;
    hist_t *h = which == 'H' ? &g->H[site] : which == 'M' ? &g->M[site] : which == 'S' ? &g->S[site]
              : which == 'P' ? &g->P[site] : NULL;
    return h && h->data ? h : NULL;
}

void agg_free(agg_t **pg) {
    if (!pg || !*pg) return;
    mem_arena_destroy(&(*pg)->arena);
    inca_free(*pg);
    *pg = NULL;
}

static int table(agg_t *g, hist_t *h, char which, int site) {
    char label[32];
    snprintf(label, sizeof label, "%s%d", which == 'H' ? "hist" : which == 'M' ? "M" : which == 'S' ? "S" : "P", site);
    int rc = hist_init(h, g->arena, g->n, g->dim[site], g->dtype, label);
    if (rc == INCA_OK) g->table_bytes += hist_bytes(h);
    return rc;
}

static void *scratch(agg_t *g, int64_t floats, const char *label) {
    void *p = mem_arena_alloc(g->arena, sizeof(float) * (size_t)(floats > 0 ? floats : 1), label);
    if (p) g->scratch_bytes += (int64_t)sizeof(float) * (floats > 0 ? floats : 1);
    return p;
}

/* M[site] <- Â src, where src is fp32 x (at a fixed site) or the table S[site]. fp32 tables:
 * one SpMM straight into M. bf16: row panels of Â through the fp32 panel, encoded into M
 * panel by panel (the same bits as decoding all of S first: kern_spmm_bf16). */
static int baseline_compute(agg_t *g, int site, const float *src_f32, const hist_t *src_table) {
    const int64_t f = g->dim[site];
    hist_t *m = &g->M[site];
    if (m->dtype == HIST_F32) {
        if (src_f32) return kern_spmm(g->a, src_f32, f, 1.f, 0.f, hist_f32(m));
        return kern_spmm(g->a, hist_f32(src_table), f, 1.f, 0.f, hist_f32(m));
    }
    for (int64_t r0 = 0; r0 < g->n; r0 += g->panel_rows) {
        const int64_t r1 = r0 + g->panel_rows < g->n ? r0 + g->panel_rows : g->n;
        csr_t v = csr_row_view(g->a, r0, r1);
        int rc = src_f32 ? kern_spmm(&v, src_f32, f, 1.f, 0.f, g->panel)
                         : kern_spmm_bf16(&v, (const uint16_t *)src_table->data, f, g->panel);
        if (rc != INCA_OK) return rc;
        hist_push_range(m, r0, r1 - r0, g->panel);
    }
    return INCA_OK;
}

int agg_create(const agg_config_t *cfg, agg_t **out) {
    *out = NULL;
    const int ns = cfg->nsites, method = cfg->method;
    if (ns < 0 || ns > AGG_MAX_SITES)
        return inca_fail(INCA_EINVAL, "mini-batch training supports at most %d aggregation sites, model has %d", AGG_MAX_SITES, ns);
    if (!cfg->a || cfg->a->n_rows != cfg->n || cfg->a->n_cols != cfg->n)
        return inca_fail(INCA_EINVAL, "mini-batch training needs an %lld x %lld adjacency", (long long)cfg->n, (long long)cfg->n);
    if (method < AGG_CLUSTER || method > AGG_INCAGG) return inca_fail(INCA_EINVAL, "aggregation operator: unknown method %d", method);
    if (cfg->source != AGG_SRC_PUSH && cfg->source != AGG_SRC_RECOMPUTE)
        return inca_fail(INCA_EINVAL, "aggregation operator: unknown refresh source %d", cfg->source);
    agg_t *g = inca_calloc(1, sizeof *g);
    if (!g) return INCA_ENOMEM;
    int rc = mem_arena_create(&g->arena);
    if (rc != INCA_OK) { inca_free(g); return rc; }
    g->method = method;
    g->source = cfg->source;
    g->single = method == AGG_INCAGG && cfg->source == AGG_SRC_PUSH && cfg->single_buffer;
    g->nsites = ns;
    g->n = cfg->n;
    g->in_dim = cfg->in_dim;
    g->x = cfg->x;
    g->a = cfg->a;
    g->dtype = cfg->dtype;
    g->maxdim = 1;
    for (int s = 0; s < ns; s++) {
        g->dim[s] = cfg->dims[s];
        g->fixed[s] = cfg->fixed[s] ? 1 : 0;
        if (g->dim[s] > g->maxdim) g->maxdim = g->dim[s];
    }
    for (int s = 0; s < ns && rc == INCA_OK; s++) {
        if (method == AGG_GAS && !g->fixed[s]) rc = table(g, &g->H[s], 'H', s);
        else if (method == AGG_INCAGG) {
            rc = table(g, &g->M[s], 'M', s);
            if (rc == INCA_OK && !g->fixed[s]) rc = table(g, &g->S[s], 'S', s);
            if (rc == INCA_OK && !g->fixed[s] && g->source == AGG_SRC_PUSH && !g->single) rc = table(g, &g->P[s], 'P', s);
        }
    }
    if (rc == INCA_OK && method == AGG_INCAGG) {
        if (!(g->sbuf = scratch(g, (cfg->nb_max ? cfg->nb_max : 1) * g->maxdim, "scratch_delta"))) rc = INCA_ENOMEM;
        if (rc == INCA_OK && g->dtype == HIST_BF16) {
            const int64_t row_bytes = (int64_t)sizeof(float) * g->maxdim;
            if (cfg->panel_bytes > 0) g->panel_rows = cfg->panel_bytes / row_bytes;
            else {
                g->panel_rows = g->n / 16 > AGG_PANEL_MIN_ROWS ? g->n / 16 : AGG_PANEL_MIN_ROWS;
                if (g->panel_rows > AGG_PANEL_BYTES / row_bytes) g->panel_rows = AGG_PANEL_BYTES / row_bytes;
            }
            if (g->panel_rows < 1) g->panel_rows = 1;
            if (g->panel_rows > g->n) g->panel_rows = g->n > 0 ? g->n : 1;
            if (!(g->panel = scratch(g, g->panel_rows * g->maxdim, "scratch_panel"))) rc = INCA_ENOMEM;
        }
    }
    if (rc == INCA_OK && method == AGG_GAS) {
        int64_t w = g->maxdim > g->in_dim ? g->maxdim : g->in_dim;
        if (!(g->hbuf = scratch(g, (cfg->halo_max ? cfg->halo_max : 1) * w, "scratch_halo"))) rc = INCA_ENOMEM;
    }
    /* M^0 = ÂX once at every site that reads x */
    for (int s = 0; s < ns && rc == INCA_OK && method == AGG_INCAGG; s++)
        if (g->fixed[s]) rc = baseline_compute(g, s, g->x, NULL);
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

static int forward_gas(agg_t *g, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    const batch_t *b = g->b;
    int rc = kern_spmm(&b->a_bb, in, f, 1.f, 0.f, out);
    if (rc != INCA_OK) return rc;
    if (b->n_halo > 0) {
        if (g->fixed[site]) {
            for (int64_t h = 0; h < b->n_halo; h++)
                memcpy(g->hbuf + h * f, g->x + b->halo[h] * g->in_dim, sizeof(float) * (size_t)f);
        } else hist_pull(&g->H[site], b->halo, b->n_halo, g->hbuf);
        if ((rc = kern_spmm(&b->a_bh, g->hbuf, f, 1.f, 1.f, out)) != INCA_OK) return rc;
    }
    if (!g->fixed[site]) hist_push(&g->H[site], b->nodes, n, in_raw);
    return INCA_OK;
}

/* out = M_B + Â_BB (in − S_B); the push (source push) goes to P, or to S after reading it */
static int forward_incagg(agg_t *g, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    const batch_t *b = g->b;
    if (g->fixed[site]) {
        if (in == in_raw) {   /* no dropout: Δ = 0, no SpMM at all */
            hist_pull(&g->M[site], b->nodes, n, out);
            return INCA_OK;
        }
        const int64_t len = n * f;
#pragma omp parallel for schedule(static) if (len >= HIST_PAR_MIN)
        for (int64_t i = 0; i < len; i++) g->sbuf[i] = in[i] - in_raw[i];
    } else if (g->single) {
        hist_sub_push(&g->S[site], b->nodes, n, in, g->sbuf, in_raw);   /* S_B read, then overwritten */
    } else {
        hist_sub(&g->S[site], b->nodes, n, in, g->sbuf);
        if (g->P[site].data) hist_push(&g->P[site], b->nodes, n, in_raw);
    }
    /* fp32 baselines are added row by row inside the SpMM (same bits as pull + beta = 1) */
    if (g->M[site].dtype == HIST_F32)
        return kern_spmm_base(&b->a_bb, g->sbuf, f, hist_f32(&g->M[site]), g->n, b->nodes, out);
    hist_pull(&g->M[site], b->nodes, n, out);
    return kern_spmm(&b->a_bb, g->sbuf, f, 1.f, 1.f, out);
}

int agg_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    agg_t *g = ctx;
    int rc = check_call(g, site, n, f);
    if (rc != INCA_OK) return rc;
    double t0 = inca_now();
    if (g->method == AGG_CLUSTER) rc = kern_spmm(&g->b->a_bb, in, f, 1.f, 0.f, out);
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
    const batch_t *b = g->b;
    double t0 = inca_now();
    rc = kern_spmm_t(&b->a_bb, b->a_bbt.rowptr ? &b->a_bbt : NULL, dout, f, 1.f, 0.f, din);
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
    if (g->source != AGG_SRC_PUSH)
        return inca_fail(INCA_EINVAL, "agg_refresh: the recompute source refreshes through a model pass (agg_refresh_forward)");
    for (int s = 0; s < g->nsites; s++) {
        if (g->fixed[s]) continue;
        if (!g->single) hist_copy(&g->S[s], &g->P[s]);
        int rc = baseline_compute(g, s, NULL, &g->S[s]);
        if (rc != INCA_OK) return rc;
    }
    return INCA_OK;
}

int agg_refresh_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    agg_t *g = ctx;
    (void)in_raw;   /* eval mode: in_raw == in */
    if (site < 0 || site >= g->nsites || n != g->n || f != g->dim[site])
        return inca_fail(INCA_ERR, "refresh operator: site %d called with %lld x %lld, expected %lld x %lld",
                         site, (long long)n, (long long)f, (long long)g->n, (long long)(site >= 0 && site < g->nsites ? g->dim[site] : -1));
    if (g->method == AGG_INCAGG && g->fixed[site]) {   /* M^0 = ÂX is already there */
        hist_pull_range(&g->M[site], 0, n, out);
        return INCA_OK;
    }
    int rc = kern_spmm(g->a, in, f, 1.f, 0.f, out);
    if (rc != INCA_OK || g->method != AGG_INCAGG) return rc;
    hist_push_range(&g->S[site], 0, n, in);
    if (g->P[site].data) hist_push_range(&g->P[site], 0, n, in);
    hist_push_range(&g->M[site], 0, n, out);
    return INCA_OK;
}
