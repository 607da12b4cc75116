/* The mini-batch aggregation operators (cluster, GAS, IncAgg), their history tables and the
 * IncAgg refresh (see nn/train_mb.h for the maths). Tested in test_incagg.c. */
#include "nn/train_mb.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include <stdio.h>
#include <string.h>

#define MB_MAX_SITES 256

struct mb_ctx {
    int method, kind, nsites;
    int single;       /* incagg single_buffer mode: pushes go to S, no P tables */
    int64_t n, in_dim, nb_max, halo_max, maxdim;
    const float *x;
    const csr_t *a;
    const batch_t *b;
    mem_arena_t *arena;
    hist_dtype_t dtype;
    int64_t dim[MB_MAX_SITES];
    hist_t H[MB_MAX_SITES], M[MB_MAX_SITES], S[MB_MAX_SITES], P[MB_MAX_SITES];
    float *sbuf;      /* nb_max x maxdim: S_B, then Δ */
    float *hbuf;      /* halo_max x max(maxdim, in_dim): pulled halo rows (GAS) */
    float *rbuf0, *rbuf1;   /* n x maxdim fp32 refresh scratch (bf16 tables only) */
    double fwd_s, bwd_s;    /* time spent in the batch operator */
    int64_t nnz_bb, nnz_rows;   /* Σ nnz(Â_BB) and Σ nnz(Â rows of B) over forward calls */
};

int mb_method_parse(const char *s, int *method) {
    if (s && strcmp(s, "cluster") == 0) { *method = MB_CLUSTER; return INCA_OK; }
    if (s && strcmp(s, "gas") == 0) { *method = MB_GAS; return INCA_OK; }
    if (s && strcmp(s, "incagg") == 0) { *method = MB_INCAGG; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--method: expected cluster, gas or incagg for mini-batch training, got '%s'", s ? s : "");
}

const char *mb_method_name(int method) {
    return method == MB_CLUSTER ? "cluster" : method == MB_GAS ? "gas" : "incagg";
}

int mb_ctx_fixed_site(const mb_ctx_t *c, int site) {
    return site == 0 && (c->kind == NN_GCN || c->kind == NN_SAGE);
}
int mb_ctx_num_sites(const mb_ctx_t *c) { return c->nsites; }
const mem_arena_t *mb_ctx_arena(const mb_ctx_t *c) { return c->arena; }
void mb_ctx_set_batch(mb_ctx_t *c, const batch_t *b) { c->b = b; }

hist_t *mb_ctx_table(mb_ctx_t *c, char which, int site) {
    if (site < 0 || site >= c->nsites) return NULL;
    hist_t *h = which == 'H' ? &c->H[site] : which == 'M' ? &c->M[site] : which == 'S' ? &c->S[site]
              : which == 'P' ? &c->P[site] : NULL;
    return h && h->data ? h : NULL;
}

void mb_ctx_free(mb_ctx_t **pc) {
    if (!pc || !*pc) return;
    mem_arena_destroy(&(*pc)->arena);
    inca_free(*pc);
    *pc = NULL;
}

/* M <- Â S for table pair at site s (S, M of the same dtype). */
static int refresh_site(mb_ctx_t *c, int s) {
    int64_t f = c->dim[s];
    if (c->dtype == HIST_F32) return kern_spmm(c->a, hist_f32(&c->S[s]), f, 1.f, 0.f, hist_f32(&c->M[s]));
    hist_pull_range(&c->S[s], 0, c->n, c->rbuf0);
    int rc = kern_spmm(c->a, c->rbuf0, f, 1.f, 0.f, c->rbuf1);
    if (rc == INCA_OK) hist_push_range(&c->M[s], 0, c->n, c->rbuf1);
    return rc;
}

int mb_ctx_create(int method, const model_config_t *mc, int64_t n, const float *x, const csr_t *a,
                  int64_t nb_max, int64_t halo_max, hist_dtype_t dtype, int single_buffer, mb_ctx_t **out) {
    *out = NULL;
    int ns = model_num_sites(mc);
    if (ns < 0 || ns > MB_MAX_SITES) return inca_fail(INCA_EINVAL, "mini-batch training supports at most %d aggregation sites, model has %d", MB_MAX_SITES, ns);
    if (!a || a->n_rows != n || a->n_cols != n) return inca_fail(INCA_EINVAL, "mini-batch training needs an %lld x %lld adjacency", (long long)n, (long long)n);
    mb_ctx_t *c = inca_calloc(1, sizeof *c);
    if (!c) return INCA_ENOMEM;
    int rc = mem_arena_create(&c->arena);
    if (rc != INCA_OK) { inca_free(c); return rc; }
    c->method = method;
    c->single = method == MB_INCAGG && single_buffer;
    c->kind = mc->kind;
    c->nsites = ns;
    c->n = n;
    c->in_dim = mc->in_dim;
    c->x = x;
    c->a = a;
    c->nb_max = nb_max;
    c->halo_max = halo_max;
    c->dtype = dtype;
    c->maxdim = 1;
    for (int s = 0; s < ns; s++) {
        c->dim[s] = model_site_dim(mc, s);
        if (c->dim[s] > c->maxdim) c->maxdim = c->dim[s];
    }
    char label[32];
    for (int s = 0; s < ns && rc == INCA_OK; s++) {
        int fixed = mb_ctx_fixed_site(c, s);
        int64_t f = c->dim[s];
        if (method == MB_GAS && !fixed) {
            snprintf(label, sizeof label, "hist%d", s);
            rc = hist_init(&c->H[s], c->arena, n, f, dtype, label);
        } else if (method == MB_INCAGG) {
            snprintf(label, sizeof label, "M%d", s);
            rc = hist_init(&c->M[s], c->arena, n, f, dtype, label);
            if (rc == INCA_OK && !fixed) {
                snprintf(label, sizeof label, "S%d", s);
                rc = hist_init(&c->S[s], c->arena, n, f, dtype, label);
                snprintf(label, sizeof label, "P%d", s);
                if (rc == INCA_OK && !c->single) rc = hist_init(&c->P[s], c->arena, n, f, dtype, label);
            }
        }
    }
    if (rc == INCA_OK && method == MB_INCAGG) {
        c->sbuf = mem_arena_alloc(c->arena, sizeof(float) * (size_t)(nb_max ? nb_max : 1) * (size_t)c->maxdim, "scratch_delta");
        if (!c->sbuf) rc = INCA_ENOMEM;
        int64_t hdim = 0;   /* widest history site: refreshes decode S and encode M through fp32 */
        for (int s = 0; s < ns; s++)
            if (!mb_ctx_fixed_site(c, s) && c->dim[s] > hdim) hdim = c->dim[s];
        if (rc == INCA_OK && dtype == HIST_BF16 && hdim > 0) {
            c->rbuf0 = mem_arena_alloc(c->arena, sizeof(float) * (size_t)n * (size_t)hdim, "scratch_refresh0");
            c->rbuf1 = mem_arena_alloc(c->arena, sizeof(float) * (size_t)n * (size_t)hdim, "scratch_refresh1");
            if (!c->rbuf0 || !c->rbuf1) rc = INCA_ENOMEM;
        }
    }
    if (rc == INCA_OK && method == MB_GAS) {
        int64_t w = c->maxdim > c->in_dim ? c->maxdim : c->in_dim;
        c->hbuf = mem_arena_alloc(c->arena, sizeof(float) * (size_t)(halo_max ? halo_max : 1) * (size_t)w, "scratch_halo");
        if (!c->hbuf) rc = INCA_ENOMEM;
    }
    /* M^0 = ÂX once at a site that reads x */
    for (int s = 0; s < ns && rc == INCA_OK && method == MB_INCAGG; s++) {
        if (!mb_ctx_fixed_site(c, s)) continue;
        if (dtype == HIST_F32) rc = kern_spmm(a, x, c->dim[s], 1.f, 0.f, hist_f32(&c->M[s]));
        else {
            float *tmp = inca_malloc(sizeof(float) * (size_t)n * (size_t)c->dim[s]);
            if (!tmp) rc = INCA_ENOMEM;
            else {
                rc = kern_spmm(a, x, c->dim[s], 1.f, 0.f, tmp);
                if (rc == INCA_OK) hist_push_range(&c->M[s], 0, n, tmp);
                inca_free(tmp);
            }
        }
    }
    if (rc != INCA_OK) {
        mb_ctx_free(&c);
        return inca_fail_ctx(rc, "while allocating %s memory", mb_method_name(method));
    }
    *out = c;
    return INCA_OK;
}

static int check_call(const mb_ctx_t *c, int site, int64_t n, int64_t f) {
    if (!c->b) return inca_fail(INCA_ERR, "mini-batch operator called without a batch");
    if (site < 0 || site >= c->nsites || f != c->dim[site] || n != c->b->n_b)
        return inca_fail(INCA_ERR, "mini-batch operator: site %d called with %lld x %lld, expected %lld x %lld",
                         site, (long long)n, (long long)f, (long long)c->b->n_b,
                         (long long)(site >= 0 && site < c->nsites ? c->dim[site] : -1));
    return INCA_OK;
}

static int op_forward_impl(mb_ctx_t *c, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    int rc = check_call(c, site, n, f);
    if (rc != INCA_OK) return rc;
    const batch_t *b = c->b;
    int fixed = mb_ctx_fixed_site(c, site);
    if (c->method == MB_CLUSTER) return kern_spmm(&b->a_bb, in, f, 1.f, 0.f, out);
    if (c->method == MB_GAS) {
        if ((rc = kern_spmm(&b->a_bb, in, f, 1.f, 0.f, out)) != INCA_OK) return rc;
        if (b->n_halo > 0) {
            if (fixed) {
                for (int64_t h = 0; h < b->n_halo; h++)
                    memcpy(c->hbuf + h * f, c->x + b->halo[h] * c->in_dim, sizeof(float) * (size_t)f);
            } else hist_pull(&c->H[site], b->halo, b->n_halo, c->hbuf);
            if ((rc = kern_spmm(&b->a_bh, c->hbuf, f, 1.f, 1.f, out)) != INCA_OK) return rc;
        }
        if (!fixed) hist_push(&c->H[site], b->nodes, n, in_raw);
        return INCA_OK;
    }
    /* IncAgg: out = M_B + Â_BB (in − S_B) */
    if (fixed) {
        if (in == in_raw) {   /* no dropout: Δ = 0, no SpMM at all */
            hist_pull(&c->M[site], b->nodes, n, out);
            return INCA_OK;
        }
        const int64_t len = n * f;
#pragma omp parallel for schedule(static) if (len >= HIST_PAR_MIN)
        for (int64_t i = 0; i < len; i++) c->sbuf[i] = in[i] - in_raw[i];
    } else if (c->single) {
        hist_sub_push(&c->S[site], b->nodes, n, in, c->sbuf, in_raw);   /* S_B read, then overwritten */
    } else {
        hist_sub(&c->S[site], b->nodes, n, in, c->sbuf);
        hist_push(&c->P[site], b->nodes, n, in_raw);
    }
    /* fp32 baselines are added row by row inside the SpMM (same bits as pull + beta = 1) */
    if (c->M[site].dtype == HIST_F32)
        return kern_spmm_base(&b->a_bb, c->sbuf, f, hist_f32(&c->M[site]), c->n, b->nodes, out);
    hist_pull(&c->M[site], b->nodes, n, out);
    return kern_spmm(&b->a_bb, c->sbuf, f, 1.f, 1.f, out);
}

static int op_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    mb_ctx_t *c = ctx;
    double t0 = inca_now();
    int rc = op_forward_impl(c, site, n, f, in_raw, in, out);
    c->fwd_s += inca_now() - t0;
    if (c->b) {
        c->nnz_bb += c->b->a_bb.nnz;
        c->nnz_rows += c->b->nnz_rows;
    }
    return rc;
}

static int op_backward(void *ctx, int site, int64_t n, int64_t f, const float *dout, float *din) {
    mb_ctx_t *c = ctx;
    int rc = check_call(c, site, n, f);
    if (rc != INCA_OK) return rc;
    const batch_t *b = c->b;
    double t0 = inca_now();
    rc = kern_spmm_t(&b->a_bb, b->a_bbt.rowptr ? &b->a_bbt : NULL, dout, f, 1.f, 0.f, din);
    c->bwd_s += inca_now() - t0;
    return rc;
}

void mb_ctx_times(const mb_ctx_t *c, double *fwd_s, double *bwd_s, double *intra_fraction) {
    *fwd_s = c->fwd_s;
    *bwd_s = c->bwd_s;
    *intra_fraction = c->nnz_rows > 0 ? (double)c->nnz_bb / (double)c->nnz_rows : 0;
}

void mb_ctx_reset_times(mb_ctx_t *c) {
    c->fwd_s = c->bwd_s = 0;
    c->nnz_bb = c->nnz_rows = 0;
}

void mb_ctx_op(mb_ctx_t *c, nn_agg_t *op) {
    op->forward = op_forward;
    op->backward = op_backward;
    op->ctx = c;
}

int mb_ctx_refresh(mb_ctx_t *c) {
    if (c->method != MB_INCAGG) return INCA_OK;
    for (int s = 0; s < c->nsites; s++) {
        if (mb_ctx_fixed_site(c, s)) continue;
        if (!c->single) hist_copy(&c->S[s], &c->P[s]);
        int rc = refresh_site(c, s);
        if (rc != INCA_OK) return rc;
    }
    return INCA_OK;
}

static int refresh_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    mb_ctx_t *c = ctx;
    if (site < 0 || site >= c->nsites || n != c->n || f != c->dim[site])
        return inca_fail(INCA_ERR, "refresh operator: site %d called with %lld x %lld, expected %lld x %lld",
                         site, (long long)n, (long long)f, (long long)c->n, (long long)(site >= 0 && site < c->nsites ? c->dim[site] : -1));
    if (c->method == MB_INCAGG && mb_ctx_fixed_site(c, site)) {   /* M^0 = ÂX is already there */
        hist_pull_range(&c->M[site], 0, n, out);
        return INCA_OK;
    }
    int rc = kern_spmm(c->a, in, f, 1.f, 0.f, out);
    if (rc != INCA_OK || c->method != MB_INCAGG) return rc;
    hist_push_range(&c->S[site], 0, n, in_raw);
    if (!c->single) hist_push_range(&c->P[site], 0, n, in_raw);
    hist_push_range(&c->M[site], 0, n, out);
    return INCA_OK;
}

void mb_ctx_refresh_op(mb_ctx_t *c, nn_agg_t *op) {
    op->forward = refresh_forward;
    op->backward = NULL;
    op->ctx = c;
}
