/* Tests that define IncAgg's correctness (ARCHITECTURE.md "IncAgg, precisely"), for every
 * backbone (gcn, sage, gcnii, appnp), with the real layers of nn/ and the real loader:
 *  - IncAgg with a refresh after every step equals GAS: same logits and same parameter
 *    gradients (normwise relative error <= 1e-5) step after step, from the same non-zero
 *    histories, with dropout on; the pushed tables stay identical;
 *  - with one batch holding every node, Cluster-GCN, GAS and IncAgg equal full-batch (logits
 *    and gradients), whatever the histories hold;
 *  - the layer-0 baseline M^0 equals ÂX (double reference; bf16 within bf16 rounding);
 *  - after a refresh pass (snapshots = exact eval embeddings) the batch operator gives exactly
 *    the full-graph eval logits on every batch;
 *  - between refreshes (R > 1), for both refresh sources, every site's output equals the
 *    invariant Â_BB in + Â_{B,V∖B} S_{V∖B} and its gradient Â_BBᵀ dout, computed in double from
 *    the global Â and a copy of S taken at the refresh (relative 1e-5), while S stays frozen;
 *  - Cluster-GCN's batch Â_BB equals the induced subgraph normalised by graph/'s own
 *    csr_gcn_norm / csr_mean_norm; a bf16 push refresh through row panels equals ÂS in double
 *    within bf16 rounding, and bf16 tables take half the bytes;
 *  - a push refresh before every node was pushed keeps the refresh pass's rows of the others;
 *    agg_refresh_rows and the refresh at x move exactly their rows through the chunked copies
 *    of device and host tables (emulated device); agg_s_direct only where S is the output;
 *  - mb_train is deterministic, reaches full-batch accuracy on a learnable toy task (each
 *    method, each source), and stops on a non-finite loss without writing a checkpoint; a
 *    refresh period longer than an epoch refreshes only when due; unlabelled training nodes
 *    take no step; its per-node logits come in the dataset's order. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "graph/csr.h"
#include "graph/partition.h"
#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "loaders/batch.h"
#include "loaders/dataset.h"
#include "nn/model.h"
#include "nn/train.h"
#include "nn/train_mb.h"
#include "nn/checkpoint.h"
#include "memory/agg.h"
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fx {
    int64_t n, f, k;
    int32_t c;
    csr_t adj, a, at;    /* renumbered graph, normalised Â (at: transpose for sage) */
    float *x;
    int32_t *y;
    partition_t p;
    model_config_t mc;
} fx_t;

static const int kinds[4] = {NN_GCN, NN_SAGE, NN_GCNII, NN_APPNP};

static void fx_make(fx_t *t, int kind, int64_t n, int64_t k) {
    memset(t, 0, sizeof *t);
    t->n = n;
    t->f = 6;
    t->c = 3;
    t->k = k;
    int64_t m = 3 * n;
    int64_t *s = malloc(sizeof *s * (size_t)m), *d = malloc(sizeof *d * (size_t)m);
    rng_t r;
    rng_seed(&r, 21);
    for (int64_t i = 0; i < m; i++) { s[i] = (int64_t)rng_below(&r, (uint64_t)n); d[i] = (int64_t)rng_below(&r, (uint64_t)n); }
    csr_t g = {0};
    ck_assert_int_eq(csr_from_edges(&g, n, s, d, m, CSR_SYMMETRIZE | CSR_DROP_SELF_LOOPS), INCA_OK);
    ck_assert_int_eq(partition_compute(&g, k, PART_METIS, 0, &t->p), INCA_OK);
    ck_assert_int_eq(csr_permute(&g, t->p.perm, &t->adj), INCA_OK);
    ck_assert_int_eq(nn_adj_build(&t->adj, nn_kind_norm(kind), &t->a, &t->at), INCA_OK);
    t->x = malloc(sizeof(float) * (size_t)(n * t->f));
    for (int64_t i = 0; i < n * t->f; i++) t->x[i] = (float)rng_normal(&r);
    t->y = malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t v = 0; v < n; v++) t->y[v] = (int32_t)rng_below(&r, 3);
    model_config_default(&t->mc);
    t->mc.kind = kind;
    t->mc.in_dim = t->f;
    t->mc.out_dim = t->c;
    t->mc.hidden = 8;
    t->mc.layers = kind == NN_GCNII ? 3 : 3;
    t->mc.K = 4;
    t->mc.dropout = 0.5f;
    t->mc.seed = 3;
    csr_free(&g);
    free(s);
    free(d);
}

static void fx_free(fx_t *t) {
    csr_free(&t->adj);
    csr_free(&t->a);
    csr_free(&t->at);
    free(t->x);
    free(t->y);
    partition_free(&t->p);
}

static batch_loader_t *fx_loader(fx_t *t, int64_t bp, int halo) {
    batch_source_t src = {.n = t->n, .f = t->f, .x = t->x, .y = t->y, .a = &t->a,
                          .a_symmetric = t->at.rowptr == NULL, .bounds = t->p.bounds, .k = t->p.k};
    batch_opts_t o = {.batch_parts = bp, .seed = 4, .halo = halo, .prefetch = 1};
    batch_loader_t *l = NULL;
    ck_assert_int_eq(batch_loader_create(&src, &o, &l), INCA_OK);
    return l;
}

/* An operator for t's model over loader l's batches (P scheme for the push source); relax:
 * agg_config_t's (0: a refresh replaces the snapshot). */
static agg_t *fx_agg_relax(fx_t *t, int method, int source, batch_loader_t *l, hist_dtype_t dt, int64_t panel_bytes,
                           float relax) {
    int64_t nb, nh, dims[AGG_MAX_SITES];
    uint8_t fixed[AGG_MAX_SITES];
    batch_loader_limits(l, &nb, &nh);
    int ns = mb_model_sites(&t->mc, dims, fixed);
    ck_assert_int_ge(ns, 1);
    agg_config_t ac = {.method = method, .source = source, .dtype = dt, .nsites = ns, .dims = dims, .fixed = fixed,
                       .n = t->n, .in_dim = t->f, .x = t->x, .a = &t->a, .nb_max = nb, .halo_max = nh,
                       .panel_bytes = panel_bytes, .relax = relax};
    agg_t *c = NULL;
    ck_assert_int_eq(agg_create(&ac, &c), INCA_OK);
    return c;
}
static agg_t *fx_agg_src(fx_t *t, int method, int source, batch_loader_t *l, hist_dtype_t dt, int64_t panel_bytes) {
    return fx_agg_relax(t, method, source, l, dt, panel_bytes, 0.f);
}
static agg_t *fx_ctx(fx_t *t, int method, batch_loader_t *l, hist_dtype_t dt) {
    return fx_agg_src(t, method, AGG_SRC_PUSH, l, dt, 0);
}
static nn_agg_t op_of(agg_t *g) { return (nn_agg_t){.forward = agg_forward, .backward = agg_backward, .ctx = g}; }
static nn_agg_t refresh_op_of(agg_t *g) { return (nn_agg_t){.forward = agg_refresh_forward, .backward = NULL, .ctx = g}; }

/* --input-layer transform-first's side of the operator (memory/agg.h x_tf_dim, m0_sparse): IncAgg's
 * agg_base gives the batch's rows of M^0 = ÂX (dense, and as a CSR from a sparse M^0: the same
 * values), residual 1; its narrow forward is Â_BB in, and refused without agg_base for the batch
 * (M^0_B would be left out); Cluster-GCN's has no rows, residual 0; GAS is refused. */
START_TEST(input_affine_site) {
    fx_t t;
    fx_make(&t, NN_GCN, 60, 6);
    t.mc.hidden = 4;   /* 6 features into 4: the first layer narrows */
    batch_loader_t *l = fx_loader(&t, 2, 0);
    int64_t nb, nh, dims[AGG_MAX_SITES];
    uint8_t fixed[AGG_MAX_SITES];
    batch_loader_limits(l, &nb, &nh);
    const int ns = mb_model_sites(&t.mc, dims, fixed);
    csr_t xs = {0}, m0s = {0};
    ck_assert_int_eq(train_features_csr(t.n, t.f, t.x, 1.0, &xs), 1);
    ck_assert_int_eq(csr_spgemm(&t.a, &xs, &m0s), INCA_OK);
    agg_config_t ac = {.method = AGG_INCAGG, .source = AGG_SRC_RECOMPUTE, .dtype = HIST_F32, .nsites = ns, .dims = dims,
                       .fixed = fixed, .n = t.n, .in_dim = t.f, .x = t.x, .a = &t.a, .nb_max = nb, .halo_max = nh,
                       .x_tf_dim = 4};
    agg_t *gd = NULL, *gs = NULL, *gc = NULL, *gg = NULL;
    ck_assert_int_eq(agg_create(&ac, &gd), INCA_OK);
    ac.m0_sparse = &m0s;
    ck_assert_int_eq(agg_create(&ac, &gs), INCA_OK);
    ac.method = AGG_CLUSTER;
    ck_assert_int_eq(agg_create(&ac, &gc), INCA_OK);
    ac.method = AGG_GAS;
    ck_assert_int_eq(agg_create(&ac, &gg), INCA_EINVAL);
    const batch_t *b = NULL;
    ck_assert_int_eq(batch_loader_next(l, &b), INCA_OK);
    const int64_t n = b->n_b;
    float *in = malloc(sizeof(float) * (size_t)(n * 4)), *out = malloc(sizeof(float) * (size_t)(n * 4));
    for (int64_t i = 0; i < n * 4; i++) in[i] = (float)(i % 7) - 3.f;
    agg_t *ops[2] = {gd, gs};
    for (int k = 0; k < 2; k++) {
        agg_set_batch(ops[k], b);
        ck_assert_int_eq(agg_forward(ops[k], 0, n, 4, in, in, out), INCA_ERR);   /* no agg_base yet */
        const float *rows = NULL;
        const csr_t *sp = NULL;
        int res = -1;
        ck_assert_int_eq(agg_base(ops[k], 0, n, t.f, &rows, &sp, &res), INCA_OK);
        ck_assert_int_eq(res, 1);
        ck_assert(k == 0 ? rows && !sp : !rows && sp && sp->n_rows == n);
        for (int64_t i = 0; i < n; i++) {   /* (Â x)_B by hand */
            const int64_t v = b->nodes[i];
            for (int64_t q = 0; q < t.f; q++) {
                double want = 0, got = 0;
                for (int64_t e = t.a.rowptr[v]; e < t.a.rowptr[v + 1]; e++) want += (double)t.a.val[e] * t.x[t.a.col[e] * t.f + q];
                if (rows) got = rows[i * t.f + q];
                for (int64_t e = sp ? sp->rowptr[i] : 0; sp && e < sp->rowptr[i + 1]; e++)
                    if (sp->col[e] == q) got = sp->val[e];
                ck_assert_msg(fabs(got - want) < 1e-5, "row %lld col %lld: %g, expected %g", (long long)i, (long long)q, got, want);
            }
        }
        ck_assert_int_eq(agg_forward(ops[k], 0, n, 4, in, in, out), INCA_OK);
        for (int64_t i = 0; i < n; i++)   /* Â_BB in */
            for (int64_t j = 0; j < 4; j++) {
                double want = 0;
                for (int64_t e = b->a_bb.rowptr[i]; e < b->a_bb.rowptr[i + 1]; e++) want += (double)b->a_bb.val[e] * in[b->a_bb.col[e] * 4 + j];
                ck_assert(fabs(out[i * 4 + j] - want) < 1e-5);
            }
    }
    agg_set_batch(gc, b);
    const float *rows = in;
    const csr_t *sp = &xs;
    int res = -1;
    ck_assert_int_eq(agg_base(gc, 0, n, t.f, &rows, &sp, &res), INCA_OK);
    ck_assert(rows == NULL && sp == NULL && res == 0);
    free(in);
    free(out);
    agg_free(&gd);
    agg_free(&gs);
    agg_free(&gc);
    csr_free(&xs);
    csr_free(&m0s);
    batch_loader_free(&l);
    fx_free(&t);
}
END_TEST

/* normwise relative error max|a-b| / max|b| */
static double rel_err(const float *a, const float *b, int64_t n) {
    double md = 0, mb = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > md) md = d;
        if (fabs((double)b[i]) > mb) mb = fabs((double)b[i]);
    }
    return mb > 0 ? md / mb : md;
}

static void expect_close(const char *what, const float *a, const float *b, int64_t n, double tol) {
    double e = rel_err(a, b, n);
    ck_assert_msg(e <= tol, "%s: relative error %.3g > %.3g (first values %g vs %g)", what, e, tol, (double)a[0], (double)b[0]);
}

/* loss over all labelled rows of the batch; dlogits out */
static void loss_grad(const float *logits, int64_t n, int32_t c, const int32_t *y, float *dl) {
    int64_t *idx = malloc(sizeof *idx * (size_t)n);
    float *logp = malloc(sizeof(float) * (size_t)(n * c));
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    kern_softmax_xent(n, c, logits, y, idx, n, logp, dl);
    free(idx);
    free(logp);
}

static void sgd(model_t *m, float lr) {
    for (int i = 0; i < model_nparams(m); i++) {
        nn_param_t *p = model_param(m, i);
        for (int64_t j = 0; j < p->n; j++) p->w[j] -= lr * p->g[j];
    }
}

/* the same random values into GAS histories and IncAgg push buffers, then S <- P, M <- ÂS */
static void seed_histories(fx_t *t, agg_t *gas, agg_t *inc) {
    rng_t r;
    rng_seed(&r, 77);
    for (int s = 0; s < agg_num_sites(inc); s++) {
        hist_t *h = agg_table(gas, 'H', s), *p = agg_table(inc, 'P', s);
        if (agg_fixed_site(inc, s)) { ck_assert_ptr_null(h); ck_assert_ptr_null(p); continue; }
        ck_assert_ptr_nonnull(h);
        ck_assert_ptr_nonnull(p);
        float *v = malloc(sizeof(float) * (size_t)(t->n * h->f));
        for (int64_t i = 0; i < t->n * h->f; i++) v[i] = (float)rng_normal(&r);
        hist_push_range(h, 0, t->n, v);
        hist_push_range(p, 0, t->n, v);
        free(v);
    }
    ck_assert_int_eq(agg_refresh(inc), INCA_OK);
}

static void gas_equals_incagg(int kind) {
    fx_t t;
    fx_make(&t, kind, 80, 8);
    batch_loader_t *l = fx_loader(&t, 3, 1);
    agg_t *cg = fx_ctx(&t, AGG_GAS, l, HIST_F32), *ci = fx_ctx(&t, AGG_INCAGG, l, HIST_F32);
    seed_histories(&t, cg, ci);
    model_t *mg = NULL, *mi = NULL;
    ck_assert_int_eq(model_create(&t.mc, t.n, &mg), INCA_OK);
    ck_assert_int_eq(model_create(&t.mc, t.n, &mi), INCA_OK);
    nn_agg_t og = op_of(cg), oi = op_of(ci);
    float *dl = malloc(sizeof(float) * (size_t)(t.n * t.c));
    for (int step = 0; step < 7; step++) {
        const batch_t *b = NULL;
        ck_assert_int_eq(batch_loader_next(l, &b), INCA_OK);
        agg_set_batch(cg, b);
        agg_set_batch(ci, b);
        const float *lg = NULL, *li = NULL;
        ck_assert_int_eq(model_forward(mg, b->n_b, b->x, &og, 1, 9, (uint64_t)step, &lg), INCA_OK);
        ck_assert_int_eq(model_forward(mi, b->n_b, b->x, &oi, 1, 9, (uint64_t)step, &li), INCA_OK);
        char what[64];
        snprintf(what, sizeof what, "%s step %d logits", model_kind_name(kind), step);
        expect_close(what, li, lg, b->n_b * t.c, 1e-5);
        loss_grad(lg, b->n_b, t.c, b->y, dl);
        ck_assert_int_eq(model_backward(mg, dl, &og), INCA_OK);
        ck_assert_int_eq(model_backward(mi, dl, &oi), INCA_OK);
        for (int i = 0; i < model_nparams(mg); i++) {
            nn_param_t *pg = model_param(mg, i), *pi = model_param(mi, i);
            snprintf(what, sizeof what, "%s step %d grad %s", model_kind_name(kind), step, pg->name);
            expect_close(what, pi->g, pg->g, pg->n, 1e-5);
            /* identical updates keep the two models in lockstep */
            memcpy(pi->g, pg->g, sizeof(float) * (size_t)pg->n);
        }
        sgd(mg, 0.5f);
        sgd(mi, 0.5f);
        ck_assert_int_eq(agg_refresh(ci), INCA_OK);   /* refresh after every step */
    }
    /* GAS histories and IncAgg push buffers received the same rows */
    for (int s = 0; s < agg_num_sites(ci); s++) {
        if (agg_fixed_site(ci, s)) continue;
        hist_t *h = agg_table(cg, 'H', s), *p = agg_table(ci, 'P', s);
        expect_close("history vs push buffer", hist_f32(p), hist_f32(h), t.n * h->f, 1e-5);
    }
    free(dl);
    model_free(&mg);
    model_free(&mi);
    agg_free(&cg);
    agg_free(&ci);
    batch_loader_free(&l);
    fx_free(&t);
}

START_TEST(incagg_refresh_each_step_equals_gas) { gas_equals_incagg(kinds[_i]); }
END_TEST

static void one_batch_equals_full(int kind) {
    fx_t t;
    fx_make(&t, kind, 70, 5);
    batch_loader_t *l = fx_loader(&t, 5, 1);
    agg_t *cg = fx_ctx(&t, AGG_GAS, l, HIST_F32), *ci = fx_ctx(&t, AGG_INCAGG, l, HIST_F32),
             *cc = fx_ctx(&t, AGG_CLUSTER, l, HIST_F32);
    seed_histories(&t, cg, ci);   /* arbitrary histories: with one batch they must not matter */
    const batch_t *b = NULL;
    ck_assert_int_eq(batch_loader_next(l, &b), INCA_OK);
    ck_assert_int_eq(b->n_b, t.n);
    ck_assert_int_eq(b->nranges, 1);
    ck_assert_int_eq(b->n_halo, 0);
    model_t *mf = NULL, *mm = NULL;
    ck_assert_int_eq(model_create(&t.mc, t.n, &mf), INCA_OK);
    ck_assert_int_eq(model_create(&t.mc, t.n, &mm), INCA_OK);
    nn_agg_t ofull;
    nn_agg_full_t full;
    nn_agg_full_init(&ofull, &full, &t.a, t.at.rowptr ? &t.at : NULL);
    float *dl = malloc(sizeof(float) * (size_t)(t.n * t.c));
    const float *lf = NULL, *lm = NULL;
    ck_assert_int_eq(model_forward(mf, t.n, t.x, &ofull, 1, 5, 0, &lf), INCA_OK);
    loss_grad(lf, t.n, t.c, t.y, dl);
    ck_assert_int_eq(model_backward(mf, dl, &ofull), INCA_OK);
    agg_t *ctxs[3] = {cc, cg, ci};
    for (int k = 0; k < 3; k++) {
        nn_agg_t op = op_of(ctxs[k]);
        agg_set_batch(ctxs[k], b);
        ck_assert_int_eq(model_forward(mm, b->n_b, b->x, &op, 1, 5, 0, &lm), INCA_OK);
        char what[64];
        snprintf(what, sizeof what, "%s method %d logits", model_kind_name(kind), k);
        expect_close(what, lm, lf, t.n * t.c, 1e-5);
        ck_assert_int_eq(model_backward(mm, dl, &op), INCA_OK);
        for (int i = 0; i < model_nparams(mf); i++) {
            snprintf(what, sizeof what, "%s method %d grad %s", model_kind_name(kind), k, model_param(mf, i)->name);
            expect_close(what, model_param(mm, i)->g, model_param(mf, i)->g, model_param(mf, i)->n, 1e-5);
        }
    }
    free(dl);
    model_free(&mf);
    model_free(&mm);
    agg_free(&cg);
    agg_free(&ci);
    agg_free(&cc);
    batch_loader_free(&l);
    fx_free(&t);
}

START_TEST(one_batch_equals_full_batch) { one_batch_equals_full(kinds[_i]); }
END_TEST

START_TEST(layer0_baseline_is_ax) {
    for (int dt = 0; dt < 2; dt++) {
        fx_t t;
        fx_make(&t, dt ? NN_SAGE : NN_GCN, 60, 4);
        batch_loader_t *l = fx_loader(&t, 2, 0);
        agg_t *ci = fx_ctx(&t, AGG_INCAGG, l, dt ? HIST_BF16 : HIST_F32);
        hist_t *m0 = agg_table(ci, 'M', 0);
        ck_assert_ptr_nonnull(m0);
        ck_assert_ptr_null(agg_table(ci, 'S', 0));   /* S^0 = X is not stored */
        float *got = malloc(sizeof(float) * (size_t)(t.n * t.f));
        hist_pull_range(m0, 0, t.n, got);
        for (int64_t u = 0; u < t.n; u++)
            for (int64_t j = 0; j < t.f; j++) {
                double want = 0;
                for (int64_t e = t.a.rowptr[u]; e < t.a.rowptr[u + 1]; e++)
                    want += (double)t.a.val[e] * (double)t.x[t.a.col[e] * t.f + j];
                double tol = dt ? 1e-2 * fabs(want) + 1e-6 : 1e-5 * fabs(want) + 1e-6;
                ck_assert_msg(fabs(got[u * t.f + j] - want) <= tol, "M0[%lld,%lld] = %g, want %g",
                              (long long)u, (long long)j, (double)got[u * t.f + j], want);
            }
        free(got);
        agg_free(&ci);
        batch_loader_free(&l);
        fx_free(&t);
    }
}
END_TEST

static void exact_snapshots(int kind) {
    fx_t t;
    fx_make(&t, kind, 90, 9);
    batch_loader_t *l = fx_loader(&t, 2, 0);
    agg_t *ci = fx_ctx(&t, AGG_INCAGG, l, HIST_F32);
    model_t *m = NULL;
    ck_assert_int_eq(model_create(&t.mc, t.n, &m), INCA_OK);
    nn_agg_t ofused, ofull, ob;
    nn_agg_full_t full;
    nn_agg_full_init(&ofull, &full, &t.a, t.at.rowptr ? &t.at : NULL);
    ofused = refresh_op_of(ci);
    ob = op_of(ci);
    const float *lg = NULL;
    float *want = malloc(sizeof(float) * (size_t)(t.n * t.c)), *fused = malloc(sizeof(float) * (size_t)(t.n * t.c));
    ck_assert_int_eq(model_forward(m, t.n, t.x, &ofull, 0, 1, 0, &lg), INCA_OK);
    memcpy(want, lg, sizeof(float) * (size_t)(t.n * t.c));
    ck_assert_int_eq(model_forward(m, t.n, t.x, &ofused, 0, 1, 0, &lg), INCA_OK);
    memcpy(fused, lg, sizeof(float) * (size_t)(t.n * t.c));
    expect_close("fused refresh pass = full inference", fused, want, t.n * t.c, 1e-6);
    /* the snapshot is the exact site input: S = P = H, M = ÂH */
    for (int64_t s = 0; s < batch_loader_steps_per_epoch(l); s++) {
        const batch_t *b = NULL;
        ck_assert_int_eq(batch_loader_next(l, &b), INCA_OK);
        agg_set_batch(ci, b);
        ck_assert_int_eq(model_forward(m, b->n_b, b->x, &ob, 0, 1, 0, &lg), INCA_OK);
        for (int64_t i = 0; i < b->n_b; i++) {
            char what[64];
            snprintf(what, sizeof what, "%s batch %lld row %lld", model_kind_name(kind), (long long)s, (long long)i);
            expect_close(what, lg + i * t.c, want + b->nodes[i] * t.c, t.c, 1e-5);
        }
    }
    free(want);
    free(fused);
    model_free(&m);
    agg_free(&ci);
    batch_loader_free(&l);
    fx_free(&t);
}

START_TEST(exact_snapshots_give_exact_aggregation) { exact_snapshots(kinds[_i]); }
END_TEST

/* A relaxed recompute refresh (issue 33): the first pass stores the exact rows S0 of model m0;
 * after m1's pass the snapshot is S0 + w (S1 − S0), S1 being m1's exact rows (taken from an
 * operator that replaces), and M is Â of that snapshot, both checked in double. */
static void relaxed_refresh(int kind, hist_dtype_t dt) {
    const float w = 0.3f;
    fx_t t;
    fx_make(&t, kind, 90, 9);
    batch_loader_t *l = fx_loader(&t, 2, 0);
    agg_t *g = fx_agg_relax(&t, AGG_INCAGG, AGG_SRC_RECOMPUTE, l, dt, 0, w);
    agg_t *ref = fx_agg_relax(&t, AGG_INCAGG, AGG_SRC_RECOMPUTE, l, HIST_F32, 0, 1.f);
    model_t *m0 = NULL, *m1 = NULL;
    ck_assert_int_eq(model_create(&t.mc, t.n, &m0), INCA_OK);
    model_config_t mc1 = t.mc;
    mc1.seed = 77;
    ck_assert_int_eq(model_create(&mc1, t.n, &m1), INCA_OK);
    nn_agg_t og = refresh_op_of(g), oref = refresh_op_of(ref);
    const float *lg = NULL;
    ck_assert_int_eq(model_forward(m0, t.n, t.x, &og, 0, 1, 0, &lg), INCA_OK);
    ck_assert_int_eq(model_forward(m0, t.n, t.x, &oref, 0, 1, 0, &lg), INCA_OK);   /* S0 */
    agg_snapshot_taken(g);
    agg_snapshot_taken(ref);
    const int ns = agg_num_sites(g);
    double *s0[AGG_MAX_SITES] = {0};
    int checked = 0;
    for (int s = 0; s < ns; s++) {
        if (agg_fixed_site(g, s)) continue;
        const hist_t *h = agg_table(ref, 'S', s);
        s0[s] = malloc(sizeof(double) * (size_t)(h->n * h->f));
        for (int64_t i = 0; i < h->n * h->f; i++) s0[s][i] = hist_f32(h)[i];
    }
    ck_assert_int_eq(model_forward(m1, t.n, t.x, &og, 0, 1, 0, &lg), INCA_OK);
    ck_assert_int_eq(model_forward(m1, t.n, t.x, &oref, 0, 1, 0, &lg), INCA_OK);   /* S1 */
    const double tol = dt == HIST_BF16 ? 1e-2 : 1e-5;
    for (int s = 0; s < ns; s++) {
        if (agg_fixed_site(g, s)) continue;
        const hist_t *S1 = agg_table(ref, 'S', s), *S = agg_table(g, 'S', s), *M = agg_table(g, 'M', s);
        const int64_t n = S1->n, f = S1->f;
        float *got_s = malloc(sizeof(float) * (size_t)(n * f)), *got_m = malloc(sizeof(float) * (size_t)(n * f));
        float *want_s = malloc(sizeof(float) * (size_t)(n * f)), *want_m = malloc(sizeof(float) * (size_t)(n * f));
        hist_pull_range(S, 0, n, got_s);
        hist_pull_range(M, 0, n, got_m);
        double dist = 0, norm = 0;   /* the two models' rows must differ, or the test is empty */
        for (int64_t i = 0; i < n * f; i++) {
            const double e = hist_f32(S1)[i];
            want_s[i] = (float)(s0[s][i] + (double)w * (e - s0[s][i]));
            dist += (e - s0[s][i]) * (e - s0[s][i]);
            norm += e * e;
        }
        ck_assert_msg(dist > 1e-4 * norm, "site %d: the two models give the same rows", s);
        for (int64_t r = 0; r < n; r++)   /* M = Â S of the blended snapshot, in double */
            for (int64_t j = 0; j < f; j++) {
                double acc = 0;
                for (int64_t e = t.a.rowptr[r]; e < t.a.rowptr[r + 1]; e++)
                    acc += (double)t.a.val[e] * ((double)s0[s][t.a.col[e] * f + j] +
                                                 (double)w * (hist_f32(S1)[t.a.col[e] * f + j] - s0[s][t.a.col[e] * f + j]));
                want_m[r * f + j] = (float)acc;
            }
        char what[96];
        snprintf(what, sizeof what, "%s site %d relaxed S", model_kind_name(kind), s);
        expect_close(what, got_s, want_s, n * f, tol);
        snprintf(what, sizeof what, "%s site %d relaxed M", model_kind_name(kind), s);
        expect_close(what, got_m, want_m, n * f, tol);
        checked++;
        free(got_s); free(got_m); free(want_s); free(want_m);
        free(s0[s]);
    }
    ck_assert_int_ge(checked, 1);
    model_free(&m0);
    model_free(&m1);
    agg_free(&g);
    agg_free(&ref);
    batch_loader_free(&l);
    fx_free(&t);
}

START_TEST(incagg_relaxed_refresh) { relaxed_refresh(kinds[_i / 2], _i % 2 ? HIST_BF16 : HIST_F32); }
END_TEST


/* ---- between refreshes: the invariant against an independent double-precision reference ---- */

/* Wraps an IncAgg operator: every forward output is compared with Â_BB in + Â_{B,V∖B} S_{V∖B}
 * and every backward with Â_BBᵀ dout, both summed in double over the rows of the global Â, with
 * S = the copy taken at the last refresh (x at a site that reads x). */
typedef struct chk {
    agg_t *g;
    const fx_t *t;
    const batch_t *b;
    float *snap[AGG_MAX_SITES];   /* n x dim copies of S (NULL at fixed sites) */
    int32_t *local;               /* n: local id in the current batch, or -1 */
    int64_t checked;
} chk_t;

static void chk_set_batch(chk_t *k, const batch_t *b) {
    /* (the previous batch's slot may already hold the prefetched next batch) */
    for (int64_t v = 0; v < k->t->n; v++) k->local[v] = -1;
    k->b = b;
    for (int64_t i = 0; i < b->n_b; i++) k->local[b->nodes[i]] = (int32_t)i;
    agg_set_batch(k->g, b);
}

static void chk_snapshot(chk_t *k) {
    for (int s = 0; s < agg_num_sites(k->g); s++) {
        free(k->snap[s]);
        k->snap[s] = NULL;
        hist_t *h = agg_table(k->g, 'S', s);
        if (agg_fixed_site(k->g, s)) { ck_assert_ptr_null(h); continue; }
        ck_assert_ptr_nonnull(h);
        k->snap[s] = malloc(sizeof(float) * (size_t)(h->n * h->f));
        hist_pull_range(h, 0, h->n, k->snap[s]);
    }
}

static void chk_compare(const char *what, int site, const float *got, const double *want, int64_t len) {
    double md = 0, mw = 0;
    for (int64_t i = 0; i < len; i++) {
        if (fabs(got[i] - want[i]) > md) md = fabs(got[i] - want[i]);
        if (fabs(want[i]) > mw) mw = fabs(want[i]);
    }
    ck_assert_msg(md <= 1e-5 * mw + 1e-7, "%s site %d: max error %.3g of max %.3g", what, site, md, mw);
}

static int chk_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    chk_t *k = ctx;
    int rc = agg_forward(k->g, site, n, f, in_raw, in, out);
    if (rc != INCA_OK) return rc;
    const csr_t *a = &k->t->a;
    const float *S = agg_fixed_site(k->g, site) ? k->t->x : k->snap[site];
    double *want = calloc((size_t)(n * f), sizeof *want);
    for (int64_t i = 0; i < n; i++) {
        const int64_t u = k->b->nodes[i];
        for (int64_t e = a->rowptr[u]; e < a->rowptr[u + 1]; e++) {
            const int64_t v = a->col[e];
            const int32_t lv = k->local[v];
            const float *row = lv >= 0 ? in + lv * f : S + v * f;
            for (int64_t j = 0; j < f; j++) want[i * f + j] += (double)a->val[e] * (double)row[j];
        }
    }
    chk_compare("forward", site, out, want, n * f);
    free(want);
    k->checked++;
    return INCA_OK;
}

static int chk_backward(void *ctx, int site, int64_t n, int64_t f, const float *dout, float *din) {
    chk_t *k = ctx;
    int rc = agg_backward(k->g, site, n, f, dout, din);
    if (rc != INCA_OK) return rc;
    const csr_t *a = &k->t->a;
    double *want = calloc((size_t)(n * f), sizeof *want);
    for (int64_t i = 0; i < n; i++) {
        const int64_t u = k->b->nodes[i];
        for (int64_t e = a->rowptr[u]; e < a->rowptr[u + 1]; e++) {
            const int32_t lv = k->local[a->col[e]];
            if (lv < 0) continue;   /* out-of-batch rows are constants */
            for (int64_t j = 0; j < f; j++) want[lv * f + j] += (double)a->val[e] * (double)dout[i * f + j];
        }
    }
    chk_compare("backward", site, din, want, n * f);
    free(want);
    k->checked++;
    return INCA_OK;
}

static void frozen_snapshots(int kind, int source) {
    fx_t t;
    fx_make(&t, kind, 90, 9);
    batch_loader_t *l = fx_loader(&t, 2, 0);   /* 5 steps per epoch */
    chk_t k = {.t = &t};
    k.g = fx_agg_src(&t, AGG_INCAGG, source, l, HIST_F32, 0);
    k.local = malloc(sizeof *k.local * (size_t)t.n);
    for (int64_t v = 0; v < t.n; v++) k.local[v] = -1;
    model_t *m = NULL;
    ck_assert_int_eq(model_create(&t.mc, t.n, &m), INCA_OK);
    nn_agg_t orf = refresh_op_of(k.g), ochk = {.forward = chk_forward, .backward = chk_backward, .ctx = &k};
    const float *lg = NULL;
    float *dl = malloc(sizeof(float) * (size_t)(t.n * t.c));
    rng_t r;
    rng_seed(&r, 5);
    int64_t step = 0;
    for (int round = 0; round < 2; round++) {
        /* a refresh: the recompute source runs the eval-mode pass; push takes S <- P with P set
         * to random rows (so S is far from the current embeddings and the check is not trivial) */
        if (source == AGG_SRC_RECOMPUTE || round == 0)
            ck_assert_int_eq(model_forward(m, t.n, t.x, &orf, 0, 1, 0, &lg), INCA_OK);
        if (source == AGG_SRC_PUSH) {
            for (int s = 0; s < agg_num_sites(k.g); s++) {
                hist_t *p = agg_table(k.g, 'P', s);
                if (agg_fixed_site(k.g, s)) { ck_assert_ptr_null(p); continue; }
                ck_assert_ptr_nonnull(p);
                if (round == 1) continue;   /* round 1: the rows the steps pushed */
                float *v = malloc(sizeof(float) * (size_t)(t.n * p->f));
                for (int64_t i = 0; i < t.n * p->f; i++) v[i] = (float)rng_normal(&r);
                hist_push_range(p, 0, t.n, v);
                free(v);
            }
            ck_assert_int_eq(agg_refresh(k.g), INCA_OK);
            for (int s = 0; s < agg_num_sites(k.g); s++) {   /* S <- P */
                hist_t *p = agg_table(k.g, 'P', s), *sn = agg_table(k.g, 'S', s);
                if (p) ck_assert_mem_eq(sn->data, p->data, (size_t)hist_bytes(p));
            }
        } else {
            for (int s = 0; s < agg_num_sites(k.g); s++) ck_assert_ptr_null(agg_table(k.g, 'P', s));
            ck_assert_int_eq(agg_refresh(k.g), INCA_EINVAL);   /* recompute refreshes by a model pass */
            inca_err_clear();
        }
        chk_snapshot(&k);
        /* R = 8 steps (more than an epoch) without a refresh, with dropout and updates */
        for (int s8 = 0; s8 < 8; s8++, step++) {
            const batch_t *b = NULL;
            ck_assert_int_eq(batch_loader_next(l, &b), INCA_OK);
            chk_set_batch(&k, b);
            ck_assert_int_eq(model_forward(m, b->n_b, b->x, &ochk, 1, 9, (uint64_t)step, &lg), INCA_OK);
            loss_grad(lg, b->n_b, t.c, b->y, dl);
            ck_assert_int_eq(model_backward(m, dl, &ochk), INCA_OK);
            sgd(m, 0.3f);
        }
        /* S stayed frozen since the refresh */
        for (int s = 0; s < agg_num_sites(k.g); s++) {
            hist_t *sn = agg_table(k.g, 'S', s);
            if (!sn) continue;
            float *now = malloc(sizeof(float) * (size_t)(sn->n * sn->f));
            hist_pull_range(sn, 0, sn->n, now);
            ck_assert_mem_eq(now, k.snap[s], sizeof(float) * (size_t)(sn->n * sn->f));
            free(now);
        }
    }
    ck_assert_int_ge(k.checked, 16);
    for (int s = 0; s < AGG_MAX_SITES; s++) free(k.snap[s]);
    free(k.local);
    free(dl);
    model_free(&m);
    agg_free(&k.g);
    batch_loader_free(&l);
    fx_free(&t);
}

START_TEST(incagg_frozen_snapshot_invariant) { frozen_snapshots(kinds[_i / 2], _i % 2 ? AGG_SRC_RECOMPUTE : AGG_SRC_PUSH); }
END_TEST

/* ---- a push refresh before every node was pushed (P scheme) ---- */

/* Wraps agg_forward and keeps, per site, the rows the batch pushed (in_raw, the training-mode
 * input before dropout) at their nodes' rows of an n x dim table. */
typedef struct cap {
    agg_t *g;
    const batch_t *b;
    float *rows[AGG_MAX_SITES];
} cap_t;

static int cap_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    cap_t *k = ctx;
    if (k->rows[site])
        for (int64_t i = 0; i < n; i++) memcpy(k->rows[site] + k->b->nodes[i] * f, in_raw + i * f, sizeof(float) * (size_t)f);
    return agg_forward(k->g, site, n, f, in_raw, in, out);
}

/* IncAgg's push source starts from the exact snapshot of the initial model (the refresh pass
 * writes S and P alike), and a refresh takes S <- P, "the rows pushed since the last refresh"
 * (ARCHITECTURE.md): after the pass and one step on one batch, the refresh's S holds that
 * batch's pushed rows and every other node's rows of the pass, bit for bit, and M = Â S (in
 * double). A pass that left P alone would hand the refresh zero rows for the nodes no step
 * pushed yet (any --refresh shorter than an epoch). */
START_TEST(push_refresh_keeps_unpushed_snapshot_rows) {
    fx_t t;
    fx_make(&t, NN_GCN, 90, 9);
    batch_loader_t *l = fx_loader(&t, 2, 0);
    agg_t *g = fx_agg_src(&t, AGG_INCAGG, AGG_SRC_PUSH, l, HIST_F32, 0);
    model_t *m = NULL;
    ck_assert_int_eq(model_create(&t.mc, t.n, &m), INCA_OK);
    nn_agg_t orf = refresh_op_of(g);
    const float *lg = NULL;
    ck_assert_int_eq(model_forward(m, t.n, t.x, &orf, 0, 1, 0, &lg), INCA_OK);   /* the initial pass */
    agg_snapshot_taken(g);
    const int ns = agg_num_sites(g);
    cap_t k = {.g = g};
    float *want[AGG_MAX_SITES] = {0};
    for (int s = 0; s < ns; s++) {
        const hist_t *S = agg_table(g, 'S', s);
        if (!S) continue;
        want[s] = malloc(sizeof(float) * (size_t)(S->n * S->f));
        hist_pull_range(S, 0, S->n, want[s]);   /* the pass's rows: what unpushed nodes keep */
        k.rows[s] = want[s];                    /* the step overwrites its batch's rows */
    }
    const batch_t *b = NULL;
    ck_assert_int_eq(batch_loader_next(l, &b), INCA_OK);
    ck_assert_int_lt(b->n_b, t.n);   /* some nodes are not pushed */
    k.b = b;
    ck_assert_int_eq(agg_set_batch(g, b), INCA_OK);
    nn_agg_t ocap = {.forward = cap_forward, .backward = agg_backward, .ctx = &k};
    ck_assert_int_eq(model_forward(m, b->n_b, b->x, &ocap, 1, 9, 0, &lg), INCA_OK);
    ck_assert_int_eq(agg_refresh(g), INCA_OK);
    int checked = 0;
    for (int s = 0; s < ns; s++) {
        if (!want[s]) continue;
        const hist_t *S = agg_table(g, 'S', s), *M = agg_table(g, 'M', s);
        const int64_t f = S->f;
        float *got = malloc(sizeof(float) * (size_t)(t.n * f)), *gm = malloc(sizeof(float) * (size_t)(t.n * f));
        double *wm = calloc((size_t)(t.n * f), sizeof *wm);
        hist_pull_range(S, 0, t.n, got);
        hist_pull_range(M, 0, t.n, gm);
        for (int64_t v = 0; v < t.n; v++)
            ck_assert_msg(memcmp(got + v * f, want[s] + v * f, sizeof(float) * (size_t)f) == 0,
                          "site %d: S row %lld after the refresh is not the row pushed / snapshotted", s, (long long)v);
        for (int64_t u = 0; u < t.n; u++)
            for (int64_t e = t.a.rowptr[u]; e < t.a.rowptr[u + 1]; e++)
                for (int64_t j = 0; j < f; j++) wm[u * f + j] += (double)t.a.val[e] * (double)want[s][t.a.col[e] * f + j];
        chk_compare("M = Â S after a push refresh", s, gm, wm, t.n * f);
        checked++;
        free(got);
        free(gm);
        free(wm);
        free(want[s]);
    }
    ck_assert_int_ge(checked, 1);
    model_free(&m);
    agg_free(&g);
    batch_loader_free(&l);
    fx_free(&t);
}
END_TEST

/* ---- whole-table moves off the CPU (the emulated device), in chunks ---- */

/* rows of table h (device or host memory of context kc) into host out */
static void table_rows(kern_ctx_t *kc, int host, const hist_t *h, float *out) {
    const size_t bytes = sizeof(float) * (size_t)(h->n * h->f);
    if (host) memcpy(out, hist_f32(h), bytes);
    else ck_assert_int_eq(kc_copy(kc, out, h->data, bytes, KERN_D2H, KERN_STREAM_COMPUTE), INCA_OK);
}

/* An IncAgg recompute operator on the emulated device with fp32 tables on the device and in host
 * memory, batches of at most 7 rows (host tables move whole tables through a stage of 7 rows:
 * 90 rows are 12 full chunks and one of 6; device tables blend through a 7-row scratch):
 *  - the refresh operator at the site reading x returns all n rows of M^0 = ÂX (double
 *    reference);
 *  - agg_refresh_rows of rows [5, 85) before agg_snapshot_taken puts in and out into exactly
 *    those rows of S and M, bit for bit, and leaves the rest alone;
 *  - after it, rows [3, 88) move the fraction 0.3 of the way: S = 0.3 in + 0.7 S, M alike
 *    (double reference, the rows outside untouched). */
START_TEST(refresh_rows_off_the_cpu_in_chunks) {
    fx_t t;
    fx_make(&t, NN_GCN, 90, 9);
    int64_t dims[AGG_MAX_SITES];
    uint8_t fixed[AGG_MAX_SITES];
    const int ns = mb_model_sites(&t.mc, dims, fixed);
    ck_assert_int_ge(ns, 2);
    ck_assert(fixed[0] && !fixed[1]);
    const int64_t n = t.n, f0 = dims[0], f = dims[1];
    kern_ctx_opts_t ko = {.device = "emu"};
    kern_ctx_t *emu = NULL;
    ck_assert_int_eq(kc_create(&ko, &emu), INCA_OK);
    float *xd = NULL, *od = NULL, *ind = NULL, *outd = NULL;
    ck_assert_int_eq(kc_alloc(emu, KERN_MEM_DEVICE, sizeof(float) * (size_t)(n * f0), (void **)&xd), INCA_OK);
    ck_assert_int_eq(kc_alloc(emu, KERN_MEM_DEVICE, sizeof(float) * (size_t)(n * f0), (void **)&od), INCA_OK);
    ck_assert_int_eq(kc_alloc(emu, KERN_MEM_DEVICE, sizeof(float) * (size_t)(n * f), (void **)&ind), INCA_OK);
    ck_assert_int_eq(kc_alloc(emu, KERN_MEM_DEVICE, sizeof(float) * (size_t)(n * f), (void **)&outd), INCA_OK);
    ck_assert_int_eq(kc_copy(emu, xd, t.x, sizeof(float) * (size_t)(n * f0), KERN_H2D, KERN_STREAM_COMPUTE), INCA_OK);
    float *in = malloc(sizeof(float) * (size_t)(n * f)), *out = malloc(sizeof(float) * (size_t)(n * f));
    float *s0 = malloc(sizeof(float) * (size_t)(n * f)), *m0 = malloc(sizeof(float) * (size_t)(n * f));
    float *gs = malloc(sizeof(float) * (size_t)(n * f)), *gm = malloc(sizeof(float) * (size_t)(n * f));
    float *ax = malloc(sizeof(float) * (size_t)(n * f0));
    rng_t r;
    rng_seed(&r, 12);
    for (int host = 0; host < 2; host++) {
        agg_config_t ac = {.method = AGG_INCAGG, .source = AGG_SRC_RECOMPUTE, .dtype = HIST_F32, .nsites = ns, .dims = dims,
                           .fixed = fixed, .n = n, .in_dim = f0, .x = xd, .x_host = t.x, .a = &t.a, .nb_max = 7,
                           .kc = emu, .host_tables = host, .nnz_max = t.a.nnz, .relax = 0.3f};
        agg_t *g = NULL;
        ck_assert_int_eq(agg_create(&ac, &g), INCA_OK);
        ck_assert_int_eq(agg_tables_on_host(g), host);
        /* the site reading x: M^0 = ÂX, every row (out filled with NaN first: no row left over) */
        for (int64_t i = 0; i < n * f0; i++) ax[i] = NAN;
        ck_assert_int_eq(kc_copy(emu, od, ax, sizeof(float) * (size_t)(n * f0), KERN_H2D, KERN_STREAM_COMPUTE), INCA_OK);
        ck_assert_int_eq(agg_refresh_forward(g, 0, n, f0, xd, xd, od), INCA_OK);
        ck_assert_int_eq(kc_copy(emu, ax, od, sizeof(float) * (size_t)(n * f0), KERN_D2H, KERN_STREAM_COMPUTE), INCA_OK);
        for (int64_t u = 0; u < n; u++)
            for (int64_t j = 0; j < f0; j++) {
                double want = 0;
                for (int64_t e = t.a.rowptr[u]; e < t.a.rowptr[u + 1]; e++)
                    want += (double)t.a.val[e] * (double)t.x[t.a.col[e] * f0 + j];
                ck_assert_msg(fabs(ax[u * f0 + j] - want) <= 1e-5 * fabs(want) + 1e-6, "host %d: M0 row %lld col %lld: %g, want %g",
                              host, (long long)u, (long long)j, (double)ax[u * f0 + j], want);
            }
        const hist_t *S = agg_table(g, 'S', 1), *M = agg_table(g, 'M', 1);
        for (int round = 0; round < 2; round++) {
            const int64_t r0 = round ? 3 : 5, m = round ? 85 : 80;
            const double w = round ? 0.3 : 1.0;
            if (round) agg_snapshot_taken(g);
            for (int64_t i = 0; i < n * f; i++) { in[i] = (float)rng_normal(&r); out[i] = (float)rng_normal(&r); }
            ck_assert_int_eq(kc_copy(emu, ind, in, sizeof(float) * (size_t)(n * f), KERN_H2D, KERN_STREAM_COMPUTE), INCA_OK);
            ck_assert_int_eq(kc_copy(emu, outd, out, sizeof(float) * (size_t)(n * f), KERN_H2D, KERN_STREAM_COMPUTE), INCA_OK);
            table_rows(emu, host, S, s0);
            table_rows(emu, host, M, m0);
            ck_assert_int_eq(agg_refresh_rows(g, 1, r0, m, ind + r0 * f, outd + r0 * f, 0), INCA_OK);
            ck_assert_int_eq(kc_sync(emu), INCA_OK);
            table_rows(emu, host, S, gs);
            table_rows(emu, host, M, gm);
            for (int64_t v = 0; v < n; v++)
                for (int64_t j = 0; j < f; j++) {
                    const int64_t i = v * f + j;
                    const int inside = v >= r0 && v < r0 + m;
                    const double ws = inside ? w * in[i] + (1 - w) * s0[i] : s0[i];
                    const double wm = inside ? w * out[i] + (1 - w) * m0[i] : m0[i];
                    const double ts = 1e-6 * (fabs(w * in[i]) + fabs((1 - w) * s0[i])) + 1e-7,
                                 tm = 1e-6 * (fabs(w * out[i]) + fabs((1 - w) * m0[i])) + 1e-7;
                    ck_assert_msg(fabs(gs[i] - ws) <= ts && fabs(gm[i] - wm) <= tm,
                                  "host %d round %d row %lld: S %g (want %g), M %g (want %g)", host, round, (long long)v,
                                  (double)gs[i], ws, (double)gm[i], wm);
                    if (!round || !inside) ck_assert(gs[i] == (float)ws && gm[i] == (float)wm);   /* copies: exact */
                }
        }
        agg_free(&g);
    }
    free(in); free(out); free(s0); free(m0); free(gs); free(gm); free(ax);
    kc_release(emu, KERN_MEM_DEVICE, xd);
    kc_release(emu, KERN_MEM_DEVICE, od);
    kc_release(emu, KERN_MEM_DEVICE, ind);
    kc_release(emu, KERN_MEM_DEVICE, outd);
    kc_free(&emu);
    fx_free(&t);
}
END_TEST

/* agg_s_direct's contract (memory/agg.h): S as an fp32 table a refresh pass may write its layer
 * outputs into only where S would end up holding exactly those outputs: IncAgg, a history
 * site, fp32 tables in the context's memory, fp32 pass buffers (bf16 ones round every hidden
 * output, and S must hold the rounded rows the host tables would), and no relaxed refresh
 * (a blended S is not the output). */
START_TEST(s_direct_only_where_s_is_the_output) {
    fx_t t;
    fx_make(&t, NN_GCN, 60, 4);
    batch_loader_t *l = fx_loader(&t, 2, 1);
    int64_t nb, nh, dims[AGG_MAX_SITES];
    uint8_t fixed[AGG_MAX_SITES];
    batch_loader_limits(l, &nb, &nh);
    const int ns = mb_model_sites(&t.mc, dims, fixed);
    ck_assert(fixed[0] && !fixed[1]);
    for (int c = 0; c < 6; c++) {   /* the fp32 CPU case, then one condition each */
        agg_config_t ac = {.method = c == 1 ? AGG_GAS : AGG_INCAGG, .source = AGG_SRC_RECOMPUTE,
                           .dtype = c == 2 ? HIST_BF16 : HIST_F32, .pass_dtype = c == 3 ? HIST_BF16 : HIST_F32,
                           .relax = c >= 4 ? 0.5f : 0.f, .nsites = ns, .dims = dims, .fixed = fixed, .n = t.n,
                           .in_dim = t.f, .x = t.x, .a = &t.a, .nb_max = nb, .halo_max = nh};
        agg_t *g = NULL;
        ck_assert_int_eq(agg_create(&ac, &g), INCA_OK);
        if (c == 5) agg_snapshot_taken(g);   /* relaxed from now on */
        ck_assert_ptr_null(agg_s_direct(g, 0));   /* the site reading x has no S */
        float *s = agg_s_direct(g, 1);
        if (c == 0 || c == 4) {   /* relax set but the initial snapshot not taken yet: replaced */
            ck_assert_ptr_nonnull(s);
            ck_assert_ptr_eq(s, agg_table(g, 'S', 1)->data);
        } else
            ck_assert_msg(s == NULL, "case %d: S offered to a pass that must not write it", c);
        agg_free(&g);
    }
    batch_loader_free(&l);
    fx_free(&t);
}
END_TEST

/* Cluster-GCN's Â_BB renormalised on the batch equals graph/'s own normalisation of the induced
 * subgraph (GCN: self-loops added, symmetric; SAGE: row mean, with its transpose). */
START_TEST(cluster_batch_renormalisation) {
    for (int kk = 0; kk < 2; kk++) {
        const int kind = kk ? NN_SAGE : NN_GCN;
        fx_t t;
        fx_make(&t, kind, 120, 8);
        batch_source_t src = {.n = t.n, .f = t.f, .x = t.x, .y = t.y, .a = &t.a, .a_symmetric = t.at.rowptr == NULL,
                              .bounds = t.p.bounds, .k = t.p.k};
        batch_opts_t o = {.batch_parts = 3, .seed = 4, .prefetch = 0, .renorm = kk ? BATCH_RENORM_MEAN : BATCH_RENORM_GCN};
        batch_loader_t *l = NULL;
        ck_assert_int_eq(batch_loader_create(&src, &o, &l), INCA_OK);
        int32_t *local = malloc(sizeof *local * (size_t)t.n);
        for (int64_t v = 0; v < t.n; v++) local[v] = -1;
        for (int64_t s = 0; s < batch_loader_steps_per_epoch(l); s++) {
            const batch_t *b = NULL;
            ck_assert_int_eq(batch_loader_next(l, &b), INCA_OK);
            for (int64_t i = 0; i < b->n_b; i++) local[b->nodes[i]] = (int32_t)i;
            int64_t m = 0, *es = malloc(sizeof *es * (size_t)(t.adj.nnz + 1)), *ed = malloc(sizeof *ed * (size_t)(t.adj.nnz + 1));
            for (int64_t i = 0; i < b->n_b; i++)
                for (int64_t e = t.adj.rowptr[b->nodes[i]]; e < t.adj.rowptr[b->nodes[i] + 1]; e++)
                    if (local[t.adj.col[e]] >= 0) { es[m] = i; ed[m++] = local[t.adj.col[e]]; }
            csr_t sub = {0}, want = {0}, wt = {0};
            ck_assert_int_eq(csr_from_edges(&sub, b->n_b, es, ed, m, 0), INCA_OK);
            ck_assert_int_eq(kk ? csr_mean_norm(&sub, &want) : csr_gcn_norm(&sub, &want), INCA_OK);
            const csr_t *got = &b->a_bb;
            ck_assert_int_eq(got->nnz, want.nnz);
            ck_assert_mem_eq(got->rowptr, want.rowptr, sizeof(int64_t) * (size_t)(b->n_b + 1));
            ck_assert_mem_eq(got->col, want.col, sizeof(int32_t) * (size_t)want.nnz);
            for (int64_t e = 0; e < want.nnz; e++)
                ck_assert_msg(fabs(got->val[e] - want.val[e]) <= 1e-6 * fabs(want.val[e]), "batch %lld entry %lld: %g vs %g",
                              (long long)s, (long long)e, (double)got->val[e], (double)want.val[e]);
            if (kk) {   /* backward uses the transpose of the renormalised batch */
                ck_assert_int_eq(csr_transpose(&want, &wt), INCA_OK);
                ck_assert_mem_eq(b->a_bbt.col, wt.col, sizeof(int32_t) * (size_t)wt.nnz);
                for (int64_t e = 0; e < wt.nnz; e++) ck_assert(fabs(b->a_bbt.val[e] - wt.val[e]) <= 1e-6 * fabs(wt.val[e]));
            }
            for (int64_t i = 0; i < b->n_b; i++) local[b->nodes[i]] = -1;
            csr_free(&sub);
            csr_free(&want);
            csr_free(&wt);
            free(es);
            free(ed);
        }
        free(local);
        batch_loader_free(&l);
        fx_free(&t);
    }
}
END_TEST

/* A bf16 push refresh goes through row panels (here 7 rows, so many panels and a partial last
 * one) and gives M = Â S within bf16 rounding of each entry; tables take half the bytes of fp32. */
START_TEST(bf16_refresh_in_panels) {
    fx_t t;
    fx_make(&t, NN_GCN, 300, 6);
    batch_loader_t *l = fx_loader(&t, 2, 0);
    agg_t *g16 = fx_agg_src(&t, AGG_INCAGG, AGG_SRC_PUSH, l, HIST_BF16, 7 * 4 * 8);
    agg_t *g32 = fx_agg_src(&t, AGG_INCAGG, AGG_SRC_PUSH, l, HIST_F32, 0);
    ck_assert_int_eq(2 * agg_table_bytes(g16), agg_table_bytes(g32));
    rng_t r;
    rng_seed(&r, 8);
    for (int s = 0; s < agg_num_sites(g16); s++) {   /* random push buffers; M^0 = ÂX is there */
        hist_t *p = agg_table(g16, 'P', s);
        if (!p) continue;
        float *v = malloc(sizeof(float) * (size_t)(t.n * p->f));
        for (int64_t i = 0; i < t.n * p->f; i++) v[i] = (float)rng_normal(&r);
        hist_push_range(p, 0, t.n, v);
        free(v);
    }
    ck_assert_int_eq(agg_refresh(g16), INCA_OK);
    for (int s = 0; s < agg_num_sites(g16); s++) {
        hist_t *mm = agg_table(g16, 'M', s), *sn = agg_table(g16, 'S', s);
        const int64_t f = mm->f;
        float *S = malloc(sizeof(float) * (size_t)(t.n * f)), *M = malloc(sizeof(float) * (size_t)(t.n * f));
        if (sn) hist_pull_range(sn, 0, t.n, S);
        else memcpy(S, t.x, sizeof(float) * (size_t)(t.n * f));
        hist_pull_range(mm, 0, t.n, M);
        for (int64_t u = 0; u < t.n; u++)
            for (int64_t j = 0; j < f; j++) {
                double want = 0, mag = 0;
                for (int64_t e = t.a.rowptr[u]; e < t.a.rowptr[u + 1]; e++) {
                    want += (double)t.a.val[e] * S[t.a.col[e] * f + j];
                    mag += fabs((double)t.a.val[e] * S[t.a.col[e] * f + j]);
                }
                ck_assert_msg(fabs(M[u * f + j] - want) <= fabs(want) / 256 + 1e-6 * mag + 1e-7,
                              "site %d M[%lld,%lld] = %g, want %g", s, (long long)u, (long long)j, (double)M[u * f + j], want);
            }
        free(S);
        free(M);
    }
    agg_free(&g16);
    agg_free(&g32);
    batch_loader_free(&l);
    fx_free(&t);
}
END_TEST

/* Memory of a whole run on a graph of 20000 nodes with the default panel: every table and
 * scratch buffer lives in the operator's arena, allocated at creation (a refresh allocates
 * nothing, checked by failing every allocation during one), so its bytes are the run's; with
 * bf16 they are at most 0.55 of fp32. */
START_TEST(bf16_halves_operator_memory) {
    const int64_t n = 20000, m = 5 * n;
    int64_t *s = malloc(sizeof *s * (size_t)m), *d = malloc(sizeof *d * (size_t)m);
    rng_t r;
    rng_seed(&r, 3);
    for (int64_t i = 0; i < m; i++) { s[i] = (int64_t)rng_below(&r, (uint64_t)n); d[i] = (int64_t)rng_below(&r, (uint64_t)n); }
    csr_t g = {0}, a = {0}, at = {0};
    ck_assert_int_eq(csr_from_edges(&g, n, s, d, m, CSR_SYMMETRIZE | CSR_DROP_SELF_LOOPS), INCA_OK);
    ck_assert_int_eq(nn_adj_build(&g, NN_NORM_GCN, &a, &at), INCA_OK);
    float *x = calloc((size_t)(n * 16), sizeof *x);
    model_config_t mc;
    model_config_default(&mc);
    mc.in_dim = 16;
    mc.out_dim = 4;
    mc.hidden = 64;
    mc.layers = 3;
    int64_t dims[AGG_MAX_SITES], bytes[2];
    uint8_t fixed[AGG_MAX_SITES];
    int ns = mb_model_sites(&mc, dims, fixed);
    for (int dt = 0; dt < 2; dt++) {
        agg_config_t ac = {.method = AGG_INCAGG, .source = AGG_SRC_PUSH, .dtype = dt ? HIST_BF16 : HIST_F32, .nsites = ns,
                           .dims = dims, .fixed = fixed, .n = n, .in_dim = 16, .x = x, .a = &a, .nb_max = n / 4};
        agg_t *op = NULL;
        ck_assert_int_eq(agg_create(&ac, &op), INCA_OK);
        inca_alloc_fail_after(1);   /* a refresh allocates nothing: the first allocation would fail */
        int rc = agg_refresh(op);
        inca_alloc_fail_after(0);
        ck_assert_msg(rc == INCA_OK, "%s refresh allocated: %s", dt ? "bf16" : "fp32", inca_errmsg());
        bytes[dt] = (int64_t)mem_arena_bytes(agg_arena(op));
        agg_free(&op);
    }
    ck_assert_msg((double)bytes[1] <= 0.55 * (double)bytes[0], "bf16 %lld bytes vs fp32 %lld", (long long)bytes[1], (long long)bytes[0]);
    free(x);
    free(s);
    free(d);
    csr_free(&g);
    csr_free(&a);
    csr_free(&at);
}
END_TEST

/* A learnable toy dataset: a homophilous random graph (80% of edges within a class), features
 * = class mean + noise, 60/20/20 split. */
static void toy_dataset(dataset_t *d, int64_t n) {
    dataset_init(d);
    d->n = n;
    d->f = 8;
    d->c = 3;
    rng_t r;
    rng_seed(&r, 99);
    d->y = inca_malloc(sizeof(int32_t) * (size_t)n);
    d->x = inca_malloc(sizeof(float) * (size_t)(n * d->f));
    for (int64_t v = 0; v < n; v++) d->y[v] = (int32_t)(v % 3);
    for (int64_t v = 0; v < n; v++)
        for (int64_t j = 0; j < d->f; j++) d->x[v * d->f + j] = (float)(0.4 * (j % 3 == d->y[v]) + rng_normal(&r));
    int64_t m = 4 * n, *s = malloc(sizeof *s * (size_t)m), *t = malloc(sizeof *t * (size_t)m);
    for (int64_t i = 0; i < m; i++) {
        s[i] = (int64_t)rng_below(&r, (uint64_t)n);
        int64_t v = (int64_t)rng_below(&r, (uint64_t)n);
        if (rng_uniform(&r) < 0.8) v = v - v % 3 + s[i] % 3;
        t[i] = v < n ? v : v - 3;
    }
    ck_assert_int_eq(csr_from_edges(&d->adj, n, s, t, m, CSR_SYMMETRIZE | CSR_DROP_SELF_LOOPS), INCA_OK);
    free(s);
    free(t);
    int64_t cnt[3] = {n * 6 / 10, n * 2 / 10, n - n * 6 / 10 - n * 2 / 10};
    for (int k = 0, v = 0; k < 3; k++) {
        d->split[k] = inca_malloc(sizeof(int64_t) * (size_t)cnt[k]);
        d->split_n[k] = cnt[k];
        for (int64_t i = 0; i < cnt[k]; i++) d->split[k][i] = v++;
    }
}

/* Each method (incagg with each refresh source, fp32 and bf16) is deterministic with and
 * without the prefetch thread and reaches the accuracy of full-batch training of the same model
 * on the same data within 4 points (full-batch after the same 30 epochs: GCN 96.7%, SAGE 86.7%;
 * the mini-batch methods take 4 steps per epoch and land at 94-96%). */
START_TEST(mb_train_learns_and_is_deterministic) {
    dataset_t d;
    toy_dataset(&d, 600);
    partition_t p;
    ck_assert_int_eq(partition_compute(&d.adj, 12, PART_METIS, 0, &p), INCA_OK);
    const char *methods[4] = {"cluster", "gas", "incagg", "incagg"};
    for (int k = 0; k < 4; k++) {
        for (int dt = 0; dt < (k >= 2 ? 2 : 1); dt++) {
            train_config_t c;
            train_config_default(&c);
            c.method = tu_method(methods[k]);
            c.model = tu_model(k == 1 ? "sage" : "gcn");
            c.history_dtype = tu_dtype(dt ? "bf16" : "fp32");
            c.refresh_source = k == 3 ? AGG_SRC_PUSH : AGG_SRC_RECOMPUTE;
            c.epochs = 30;
            c.batch_parts = 3;
            c.refresh = 2;   /* incagg: twice per epoch, the second at the evaluation */
            c.hidden = 16;
            train_result_t rf;   /* full-batch reference, same model and data */
            train_config_t cf = c;
            cf.method = tu_method("full");
            ck_assert_int_eq(train_full(&d, &cf, d.split[0], d.split_n[0], 0, &rf), INCA_OK);
            mb_opts_t o;
            mb_opts_default(&o);
            train_result_t r1, r2;
            mb_stats_t st;
            ck_assert_int_eq(mb_train(&d, &c, d.split[0], d.split_n[0], 0, &p, &o, &r1, &st), INCA_OK);
            o.prefetch = 0;
            ck_assert_int_eq(mb_train(&d, &c, d.split[0], d.split_n[0], 0, &p, &o, &r2, NULL), INCA_OK);
            ck_assert_msg(r1.test_acc >= rf.test_acc - 0.04, "%s (%s, %s): test acc %.3f, full-batch %.3f", methods[k],
                          agg_source_name(c.refresh_source), hist_dtype_words[c.history_dtype], r1.test_acc, rf.test_acc);
            ck_assert(r1.test_acc == r2.test_acc && r1.train_loss == r2.train_loss && r1.best_epoch == r2.best_epoch);
            ck_assert_int_eq(st.steps, 30 * 4);
            ck_assert_int_eq(st.steps_per_epoch, 4);
            if (k >= 2) {   /* recompute: the averaged evaluation (the default) is the epoch-end
                             * refresh's pass, as the refresh uses the averaged weights; push never */
                ck_assert_int_eq(st.refreshes, 60);
                ck_assert_int_eq(st.fused, k == 2 ? 30 : 0);
                ck_assert_int_eq(st.evals, k == 2 ? 0 : 30);
                ck_assert_int_gt(st.table_bytes, 0);
            } else ck_assert_int_eq(st.evals, 30);
            train_result_free(&rf);
            mb_stats_free(&st);
            train_result_free(&r1);
            train_result_free(&r2);
        }
    }
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* A non-finite training loss (here an infinite feature of a training node) stops every method
 * with INCA_ERR naming the run, epoch and step, before a checkpoint is written from that state. */
START_TEST(mb_train_stops_on_nonfinite_loss) {
    dataset_t d;
    toy_dataset(&d, 120);
    d.x[0] = INFINITY;   /* node 0 is a training node */
    partition_t p;
    ck_assert_int_eq(partition_compute(&d.adj, 6, PART_METIS, 0, &p), INCA_OK);
    const char *methods[3] = {"cluster", "gas", "incagg"};
    for (int k = 0; k < 3; k++) {
        char *dir = tu_mkdtemp(), path[512];
        train_config_t c;
        train_config_default(&c);
        c.method = tu_method(methods[k]);
        c.epochs = 3;
        c.batch_parts = 2;
        c.checkpoint_dir = dir;
        mb_opts_t o;
        mb_opts_default(&o);
        train_result_t r;
        int rc = mb_train(&d, &c, d.split[0], d.split_n[0], 0, &p, &o, &r, NULL);
        ck_assert_int_eq(rc, INCA_ERR);
        ck_assert_msg(strstr(inca_errmsg(), "run 0, epoch 0, step") && strstr(inca_errmsg(), "not finite"), "%s: %s",
                      methods[k], inca_errmsg());
        snprintf(path, sizeof path, "%s/run-0.ckpt", dir);
        ck_assert_msg(!tu_exists(path), "%s: a checkpoint was written", methods[k]);
        inca_err_clear();
        tu_rmrf(dir);
        free(dir);
    }
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* mb_train's status on d (its first n_train training ids) under c; the message when refused
 * must name what. */
static void mb_status(const dataset_t *d, const partition_t *p, const train_config_t *c, int64_t n_train, int want,
                      const char *what) {
    mb_opts_t o;
    mb_opts_default(&o);
    train_result_t r;
    const int rc = mb_train(d, c, d->split[0], n_train, 0, p, &o, &r, NULL);
    ck_assert_msg(rc == want, "status %d, expected %d: %s", rc, want, inca_errmsg());
    if (want != INCA_OK) ck_assert_msg(strstr(inca_errmsg(), what), "refused for another reason: %s", inca_errmsg());
    train_result_free(&r);
    inca_err_clear();
}

/* The setup's contract at its edges: --refresh-relax takes (0,1], 1 included (no relaxation);
 * no training node at all is refused; one process does not resume an MPI job's checkpoints (its
 * manifest names 2 ranks; train_run checks this before, mb_train itself too). Mutation tests:
 * relax 1 refused, 0 training nodes accepted, the manifest unread all passed test_incagg before
 * (relax 1: caught by test_e2e_train's accuracy runs only). */
START_TEST(mb_setup_edges) {
    dataset_t d;
    toy_dataset(&d, 120);
    partition_t p;
    ck_assert_int_eq(partition_compute(&d.adj, 6, PART_METIS, 0, &p), INCA_OK);
    train_config_t c;
    train_config_default(&c);
    c.method = tu_method("incagg");
    c.epochs = 1;
    c.batch_parts = 2;
    c.eval_average = 0;
    const double relax[3] = {1.0, 0.0, 1.5};
    for (int i = 0; i < 3; i++) {
        c.refresh_relax = relax[i];
        mb_status(&d, &p, &c, d.split_n[0], i == 0 ? INCA_OK : INCA_EINVAL, "--refresh-relax");
    }
    c.refresh_relax = 1;
    mb_status(&d, &p, &c, 0, INCA_EINVAL, "no training nodes (the train split is empty");
    char *dir = tu_mkdtemp(), rank_dir[4200];
    c.checkpoint_dir = dir;
    c.resume = 1;
    ck_assert_int_eq(ckpt_rank_dir(&c, 0, 2, rank_dir, sizeof rank_dir), INCA_OK);   /* rank 0 of 2 writes the manifest */
    mb_status(&d, &p, &c, d.split_n[0], INCA_EINVAL, "checkpoints of 2 ranks");
    tu_rmrf(dir);
    free(dir);
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* Cluster-GCN with every part in its one batch: Â_BB renormalised on the batch subgraph (the
 * default) is the global Â under the model's own normalisation (GCN's for gcn, the mean for
 * sage), so the run is the one restricted to the global Â (cluster_global_norm), and both are
 * full-batch training (no dropout, no average), within rounding: the nodes' order differs. Mean
 * aggregation is not symmetric: its backward takes Âᵀ (mutation tests: the batch renormalised
 * as GCN's for sage, or Â taken as symmetric, passed test_incagg before). */
START_TEST(mb_cluster_whole_graph_batch_is_global) {
    dataset_t d;
    toy_dataset(&d, 300);
    partition_t p;
    ck_assert_int_eq(partition_compute(&d.adj, 6, PART_METIS, 0, &p), INCA_OK);
    const char *models[2] = {"gcn", "sage"};
    for (int k = 0; k < 2; k++) {
        train_config_t c;
        train_config_default(&c);
        c.method = tu_method("cluster");
        c.model = tu_model(models[k]);
        c.hidden = 16;
        c.epochs = 5;
        c.dropout = 0;
        c.eval_average = 0;
        c.batch_parts = 6;
        mb_opts_t o;
        mb_opts_default(&o);
        train_result_t r[3];
        for (int g = 0; g < 2; g++) {
            c.cluster_global_norm = g;
            ck_assert_int_eq(mb_train(&d, &c, d.split[0], d.split_n[0], 0, &p, &o, &r[g], NULL), INCA_OK);
        }
        c.method = tu_method("full");
        ck_assert_int_eq(train_full(&d, &c, d.split[0], d.split_n[0], 0, &r[2]), INCA_OK);
        for (int g = 0; g < 2; g++)
            ck_assert_msg(fabs(r[g].train_loss - r[2].train_loss) <= 1e-5 * r[2].train_loss &&
                              fabs(r[g].test_acc - r[2].test_acc) <= 0.02,
                          "%s (%s): loss %.9g acc %g, full-batch %.9g %g", models[k], g ? "global Â" : "renormalised batch",
                          r[g].train_loss, r[g].test_acc, r[2].train_loss, r[2].test_acc);
        for (int i = 0; i < 3; i++) train_result_free(&r[i]);
    }
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* One mini-batch run of c into checkpoint directory ck. */
static void mb_ck_run(const dataset_t *d, const partition_t *p, train_config_t c, const char *ck, train_result_t *r) {
    c.checkpoint_dir = ck;
    mb_opts_t o;
    mb_opts_default(&o);
    ck_assert_msg(mb_train(d, &c, d->split[0], d->split_n[0], 0, p, &o, r, NULL) == INCA_OK, "%s", inca_errmsg());
}

/* r reports the figures of the run w, bit for bit. */
static void same_run(const char *what, const train_result_t *r, const train_result_t *w) {
    ck_assert_msg(r->train_loss == w->train_loss && r->test_acc == w->test_acc && r->best_epoch == w->best_epoch &&
                      r->epochs == w->epochs,
                  "%s: loss %.17g acc %g best %d epochs %d, the run's %.17g %g %d %d", what, r->train_loss, r->test_acc,
                  r->best_epoch, r->epochs, w->train_loss, w->test_acc, w->best_epoch, w->epochs);
}

/* Resuming a mini-batch run that is over trains nothing and reports the run's figures: one that
 * reached --epochs, and one stopped by patience even when given more epochs (the resume in the
 * middle of a run: test_train's test_checkpoint_resume). Mutation tests: the training loss or
 * the finished flag left out of the resume passed the suite before. */
START_TEST(mb_resume_when_done) {
    dataset_t d;
    toy_dataset(&d, 600);
    partition_t p;
    ck_assert_int_eq(partition_compute(&d.adj, 12, PART_METIS, 0, &p), INCA_OK);
    char *dir = tu_mkdtemp(), ck[2][600];
    for (int i = 0; i < 2; i++) snprintf(ck[i], sizeof ck[i], "%s/ck%d", dir, i);
    train_config_t c;
    train_config_default(&c);
    c.method = tu_method("incagg");
    c.hidden = 16;
    c.batch_parts = 3;
    c.epochs = 4;
    train_result_t rs[4];   /* done, resumed; stopped by patience, resumed */
    mb_ck_run(&d, &p, c, ck[0], &rs[0]);
    c.resume = 1;
    mb_ck_run(&d, &p, c, ck[0], &rs[1]);
    same_run("resumed when done", &rs[1], &rs[0]);
    c.resume = 0;
    c.epochs = 60;
    c.patience = 2;
    mb_ck_run(&d, &p, c, ck[1], &rs[2]);
    ck_assert_int_lt(rs[2].epochs, 60);
    c.resume = 1;
    c.epochs = 80;
    mb_ck_run(&d, &p, c, ck[1], &rs[3]);
    same_run("resumed after patience", &rs[3], &rs[2]);
    for (int i = 0; i < 4; i++) train_result_free(&rs[i]);
    tu_rmrf(dir);
    free(dir);
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* IncAgg refreshed once per epoch without P tables (single_buffer: pushes go to S after Δ is
 * taken) gives the numbers of the P scheme bit for bit, with the refresh fused into the
 * evaluation or run on its own, fp32 and bf16, and holds one table less per history site. */
START_TEST(mb_incagg_single_buffer_equals_p_scheme) {
    dataset_t d;
    toy_dataset(&d, 600);
    partition_t p;
    ck_assert_int_eq(partition_compute(&d.adj, 12, PART_METIS, 0, &p), INCA_OK);
    for (int dt = 0; dt < 2; dt++)
        for (int fused = 0; fused < 2; fused++) {
            train_config_t c;
            train_config_default(&c);
            c.method = tu_method("incagg");
            c.model = tu_model("gcn");
            c.history_dtype = tu_dtype(dt ? "bf16" : "fp32");
            c.layers = 3;
            c.hidden = 16;
            c.epochs = 12;
            c.batch_parts = 3;
            c.refresh = 0;   /* once per epoch */
            c.refresh_source = AGG_SRC_PUSH;   /* single buffering is the push source's */
            mb_opts_t o;
            mb_opts_default(&o);
            o.eval_every_epoch = fused;
            train_result_t r1, r2;
            mb_stats_t s1, s2;
            o.single_buffer = 1;
            ck_assert_int_eq(mb_train(&d, &c, d.split[0], d.split_n[0], 0, &p, &o, &r1, &s1), INCA_OK);
            o.single_buffer = 0;
            ck_assert_int_eq(mb_train(&d, &c, d.split[0], d.split_n[0], 0, &p, &o, &r2, &s2), INCA_OK);
            ck_assert_msg(r1.train_loss == r2.train_loss && r1.test_acc == r2.test_acc,
                          "dtype %d fused %d: single %.9g / %.4f vs P %.9g / %.4f", dt, fused, r1.train_loss, r1.test_acc,
                          r2.train_loss, r2.test_acc);
            ck_assert_int_eq(s1.refreshes, s2.refreshes);
            ck_assert_int_eq(s1.refreshes, 12);
            ck_assert_int_eq(s2.table_bytes - s1.table_bytes, 2 * 600 * 16 * (dt ? 2 : 4));   /* P1, P2 */
            /* the per-block report names them: P1 and P2 in the P scheme only, n x hidden each */
            int64_t pb[2] = {0, 0}, sum[2] = {0, 0};
            for (int s = 0; s < 2; s++) {
                const mb_stats_t *x = s ? &s2 : &s1;
                for (int i = 0; i < x->ntables; i++) {
                    sum[s] += x->tables[i].bytes;
                    if (x->tables[i].label[0] == 'P') pb[s] += x->tables[i].bytes;
                }
            }
            ck_assert_int_eq(pb[0], 0);
            ck_assert_int_eq(pb[1], 2 * 600 * 16 * (dt ? 2 : 4));
            ck_assert_int_eq(sum[0], s1.table_bytes + s1.scratch_bytes);   /* the blocks: tables and scratch */
            ck_assert_int_eq(sum[1], s2.table_bytes + s2.scratch_bytes);
            mb_stats_free(&s1);
            mb_stats_free(&s2);
            train_result_free(&r1);
            train_result_free(&r2);
        }
    /* warm-up epochs leave the counts and times: 5 epochs, 2 of warm-up -> 3 timed */
    train_config_t c;
    train_config_default(&c);
    c.method = tu_method("incagg");
    c.refresh_source = AGG_SRC_PUSH;
    c.hidden = 16;
    c.epochs = 5;
    c.batch_parts = 3;
    mb_opts_t o;
    mb_opts_default(&o);
    o.warmup_epochs = 2;
    train_result_t r;
    mb_stats_t st;
    ck_assert_int_eq(mb_train(&d, &c, d.split[0], d.split_n[0], 0, &p, &o, &r, &st), INCA_OK);
    ck_assert_int_eq(st.timed_epochs, 3);
    ck_assert_int_eq(st.steps, 3 * st.steps_per_epoch);
    ck_assert_int_eq(st.refreshes, 3);
    ck_assert_int_eq(r.epochs, 5);
    mb_stats_free(&st);
    train_result_free(&r);
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* --refresh-eval: the recompute refresh due at an epoch end stores the same histories whether it
 * shares the evaluation's pass (fused) or runs its own (separate), so training is the same bits;
 * only the evaluation's sums run in another order. The counts say which path ran. With an
 * averaged evaluation the refresh's own pass must use the averaged weights (--refresh-weights
 * average, the default) for the two to agree: a separate pass that forgot to swap them in would
 * train another model; with the training weights (last) training differs from both. */
static void mb_train_refresh_eval(const dataset_t *d, const partition_t *p, double avg, int weights, int sep,
                                  train_result_t *r) {
    train_config_t c;
    train_config_default(&c);
    c.method = tu_method("incagg");
    c.refresh_source = AGG_SRC_RECOMPUTE;
    c.refresh_eval_separate = sep;
    c.eval_average = avg;
    c.refresh_weights = weights;
    c.layers = 3;
    c.hidden = 16;
    c.epochs = 10;
    c.batch_parts = 3;
    c.keep_params = 1;
    mb_opts_t o;
    mb_opts_default(&o);
    mb_stats_t st;
    ck_assert_int_eq(mb_train(d, &c, d->split[0], d->split_n[0], 0, p, &o, r, &st), INCA_OK);
    const int fused = !sep && (avg == 0 || weights != TRAIN_REFW_LAST);
    ck_assert_int_eq(st.refreshes, 10);
    ck_assert_int_eq(st.fused, fused ? 10 : 0);
    ck_assert_int_eq(st.evals, fused ? 0 : 10);
    ck_assert_int_eq(r->refreshes, 10);
    ck_assert_int_eq(r->fused, fused ? 10 : 0);
    ck_assert_int_eq(r->evals, fused ? 0 : 10);
    ck_assert(fused ? r->eval_time_s == 0 : r->eval_time_s > 0);
    ck_assert_int_gt(r->nparams, 0);
    mb_stats_free(&st);
}

START_TEST(mb_refresh_eval_fused_equals_separate) {
    dataset_t d;
    toy_dataset(&d, 600);
    partition_t p;
    ck_assert_int_eq(partition_compute(&d.adj, 12, PART_METIS, 0, &p), INCA_OK);
    /* the weights themselves (--eval-average 0), then their average over the last 4 steps */
    static const double avg[2] = {0, 0.75};
    for (int a = 0; a < 2; a++) {
        train_result_t r[2];
        for (int sep = 0; sep < 2; sep++) mb_train_refresh_eval(&d, &p, avg[a], TRAIN_REFW_AUTO, sep, &r[sep]);
        ck_assert_int_eq(r[0].nparams, r[1].nparams);
        ck_assert(memcmp(r[0].params, r[1].params, sizeof(float) * (size_t)r[0].nparams) == 0);
        ck_assert(r[0].train_loss == r[1].train_loss);
        /* 120 test nodes: the two evaluations may split a near-tie differently, not more */
        ck_assert_msg(fabs(r[0].test_acc - r[1].test_acc) <= 1.0 / 120 + 1e-12, "fused %.4f separate %.4f",
                      r[0].test_acc, r[1].test_acc);
        if (a == 1) {   /* rows of the training weights: another model */
            train_result_t l;
            mb_train_refresh_eval(&d, &p, avg[a], TRAIN_REFW_LAST, 0, &l);
            ck_assert(l.train_loss != r[0].train_loss);
            ck_assert(memcmp(l.params, r[0].params, sizeof(float) * (size_t)l.nparams) != 0);
            train_result_free(&l);
        }
        for (int i = 0; i < 2; i++) train_result_free(&r[i]);
    }
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* --refresh longer than an epoch (recompute): a refresh every 2 epochs (8 steps of 4) over 4
 * epochs, evaluated every epoch, is due at the ends of epochs 1 and 3 only: 2 refreshes, both
 * riding on that epoch's evaluation, and 2 evaluations of their own (epochs 0 and 2). An
 * evaluation that still thought a refresh was pending after the fused one would refresh at
 * every later evaluation. */
START_TEST(mb_refresh_longer_than_an_epoch) {
    dataset_t d;
    toy_dataset(&d, 600);
    partition_t p;
    ck_assert_int_eq(partition_compute(&d.adj, 12, PART_METIS, 0, &p), INCA_OK);
    train_config_t c;
    train_config_default(&c);
    c.method = tu_method("incagg");
    c.refresh_source = AGG_SRC_RECOMPUTE;
    c.hidden = 16;
    c.epochs = 4;
    c.batch_parts = 3;
    c.refresh = 8;
    mb_opts_t o;
    mb_opts_default(&o);
    train_result_t r;
    mb_stats_t st;
    ck_assert_int_eq(mb_train(&d, &c, d.split[0], d.split_n[0], 0, &p, &o, &r, &st), INCA_OK);
    ck_assert_int_eq(st.steps_per_epoch, 4);
    ck_assert_int_eq(st.refreshes, 2);
    ck_assert_int_eq(st.fused, 2);
    ck_assert_int_eq(st.evals, 2);
    mb_stats_free(&st);
    train_result_free(&r);
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* A training node without a label (y < 0) gives no loss row: a batch whose training nodes are
 * all unlabelled has no loss and takes no optimiser step, as if those nodes were not training
 * nodes at all. One part's nodes lose their labels (12 parts, a batch each): listing them as
 * training nodes or leaving them out must give the same parameters and loss, bit for bit. */
START_TEST(mb_unlabelled_train_nodes_take_no_step) {
    dataset_t d;
    toy_dataset(&d, 600);
    partition_t p;
    ck_assert_int_eq(partition_compute(&d.adj, 12, PART_METIS, 0, &p), INCA_OK);
    int64_t *tr = malloc(sizeof *tr * (size_t)d.split_n[0]), ntr = 0, gone = 0;
    for (int64_t v = 0; v < d.n; v++)
        if (p.perm[v] < p.bounds[1]) d.y[v] = -1;   /* part 0, in the renumbered order */
    for (int64_t i = 0; i < d.split_n[0]; i++) {
        if (d.y[d.split[0][i]] >= 0) tr[ntr++] = d.split[0][i];
        else gone++;
    }
    ck_assert_int_gt(gone, 0);
    const char *methods[2] = {"cluster", "incagg"};
    for (int k = 0; k < 2; k++) {
        train_config_t c;
        train_config_default(&c);
        c.method = tu_method(methods[k]);
        c.hidden = 16;
        c.epochs = 3;
        c.batch_parts = 1;
        c.keep_params = 1;
        mb_opts_t o;
        mb_opts_default(&o);
        train_result_t r1, r2;
        ck_assert_int_eq(mb_train(&d, &c, d.split[0], d.split_n[0], 0, &p, &o, &r1, NULL), INCA_OK);
        ck_assert_int_eq(mb_train(&d, &c, tr, ntr, 0, &p, &o, &r2, NULL), INCA_OK);
        ck_assert_int_eq(r1.nparams, r2.nparams);
        ck_assert_msg(memcmp(r1.params, r2.params, sizeof(float) * (size_t)r1.nparams) == 0 && r1.train_loss == r2.train_loss,
                      "%s: unlabelled training nodes changed training (loss %.9g vs %.9g)", methods[k], r1.train_loss,
                      r2.train_loss);
        train_result_free(&r1);
        train_result_free(&r2);
    }
    free(tr);
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* The per-node logits a mini-batch run hands out (out_logits, on_epoch) are in the dataset's
 * own node order, not the partition's renumbering: the accuracy measured on them over the
 * test split with the dataset's labels is the run's reported test accuracy, for each method. */
START_TEST(mb_out_logits_in_dataset_order) {
    dataset_t d;
    toy_dataset(&d, 600);
    partition_t p;
    ck_assert_int_eq(partition_compute(&d.adj, 12, PART_METIS, 0, &p), INCA_OK);
    int moved = 0;
    for (int64_t v = 0; v < d.n; v++) moved += p.perm[v] != v;
    ck_assert_int_gt(moved, d.n / 2);   /* the renumbering is not the identity */
    const char *methods[3] = {"cluster", "gas", "incagg"};
    float *l = malloc(sizeof(float) * (size_t)(d.n * d.c));
    for (int k = 0; k < 3; k++) {
        train_config_t c;
        train_config_default(&c);
        c.method = tu_method(methods[k]);
        c.hidden = 16;
        c.epochs = 10;
        c.batch_parts = 3;
        c.out_logits = l;
        mb_opts_t o;
        mb_opts_default(&o);
        train_result_t r;
        ck_assert_int_eq(mb_train(&d, &c, d.split[0], d.split_n[0], 0, &p, &o, &r, NULL), INCA_OK);
        const double acc = kern_accuracy(d.c, l, d.y, d.split[2], d.split_n[2]);
        ck_assert_msg(acc == r.test_acc && acc > 0.6, "%s: out_logits give test accuracy %g, the run reports %g", methods[k],
                      acc, r.test_acc);
        train_result_free(&r);
    }
    free(l);
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* Every allocation of a mini-batch run may fail: the run then reports INCA_ENOMEM and frees
 * everything it took (leaks are caught under ASan). */
START_TEST(mb_train_alloc_failures) {
    dataset_t d;
    toy_dataset(&d, 120);
    partition_t p;
    ck_assert_int_eq(partition_compute(&d.adj, 6, PART_METIS, 0, &p), INCA_OK);
    const char *methods[3] = {"cluster", "gas", "incagg"};
    for (int k = 0; k < 3; k++) {
        train_config_t c;
        train_config_default(&c);
        c.method = tu_method(methods[k]);
        c.model = tu_model("gcn");
        c.history_dtype = tu_dtype(k == 2 ? "bf16" : "fp32");
        c.epochs = 2;
        c.batch_parts = 2;
        mb_opts_t o;
        mb_opts_default(&o);
        int ok = 0;
        for (long i = 1; i < 400 && !ok; i++) {
            train_result_t r;
            inca_alloc_fail_after(i);
            int rc = mb_train(&d, &c, d.split[0], d.split_n[0], 0, &p, &o, &r, NULL);
            inca_alloc_fail_after(0);
            if (rc == INCA_OK) ok = 1;
            else ck_assert_msg(rc == INCA_ENOMEM, "%s: allocation %ld failing gave %d (%s)", methods[k], i, rc, inca_errmsg());
            train_result_free(&r);
        }
        ck_assert_msg(ok, "%s: never succeeded", methods[k]);
    }
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* a train --json line's refresh_eval, refreshes_fused_with_eval and evaluations */
static void expect_refresh_eval(const char *line, const char *mode, double fused, double evals) {
    char want[64];
    snprintf(want, sizeof want, "\"refresh_eval\":\"%s\"", mode);
    ck_assert_msg(strstr(line, want), "no %s in %s", want, line);
    ck_assert_double_eq(tu_json_num(line, "refreshes_fused_with_eval"), fused);
    ck_assert_double_eq(tu_json_num(line, "evaluations"), evals);
}

START_TEST(cli_train_and_benches) {
    char *dir = tu_mkdtemp(), args[1024], *out = NULL, *err = NULL;
    snprintf(args, sizeof args, "gen --kind csbm --nodes 1500 --avg-degree 10 --features 16 --classes 3 --seed 2 --out '%s/g'", dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    free(out);
    free(err);
    snprintf(args, sizeof args, "train '%s/g' --model gcn --method incagg --parts 12 --batch-parts 3 --epochs 20 --json", dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    ck_assert_msg(tu_json_num(tu_last_line(out), "test_acc") > 0.6, "incagg test acc %.3f", tu_json_num(tu_last_line(out), "test_acc"));
    /* the default evaluates the average of the weights (1 - 3/12) and refreshes from it: one pass */
    expect_refresh_eval(tu_last_line(out), "fused", 20, 0);
    ck_assert(strstr(tu_last_line(out), "\"eval-average\":0.75"));
    ck_assert(strstr(tu_last_line(out), "\"refresh_weights\":\"average\""));
    free(out);
    free(err);
    /* rows of the training weights: the evaluation of the average needs a pass of its own */
    snprintf(args, sizeof args, "train '%s/g' --model gcn --method incagg --parts 12 --batch-parts 3 --epochs 20 "
             "--refresh-weights last --json", dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    expect_refresh_eval(tu_last_line(out), "separate", 0, 20);
    ck_assert(strstr(tu_last_line(out), "\"refresh_weights\":\"last\""));
    free(out);
    free(err);
    snprintf(args, sizeof args, "train '%s/g' --method incagg --parts 12 --batch-parts 3 --epochs 2 --eval-average 0 "
             "--refresh-weights average", dir);
    ck_assert_int_ne(tu_inca(args, &out, &err), 0);
    ck_assert_msg(strstr(err, "--refresh-weights average: the evaluation averages no weights here"), "%s", err);
    free(out);
    free(err);
    snprintf(args, sizeof args, "train '%s/g' --model gcn --method incagg --parts 12 --batch-parts 3 --epochs 20 "
             "--eval-average 0 --json", dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    double acc = tu_json_num(tu_last_line(out), "test_acc");
    ck_assert_msg(acc > 0.6, "incagg test acc %.3f", acc);
    ck_assert(tu_json_num(tu_last_line(out), "refresh_time_s") > 0);
    /* with the weights themselves the epoch-end refresh is fused with the evaluation, and says so */
    expect_refresh_eval(tu_last_line(out), "fused", 20, 0);
    free(out);
    free(err);
    snprintf(args, sizeof args, "train '%s/g' --model gcn --method incagg --parts 12 --batch-parts 3 --epochs 20 "
             "--eval-average 0 --refresh-eval separate --json", dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    expect_refresh_eval(tu_last_line(out), "separate", 0, 20);
    ck_assert_double_eq(tu_json_num(tu_last_line(out), "refreshes"), 20);
    ck_assert(tu_json_num(tu_last_line(out), "eval_time_s") > 0);
    ck_assert_msg(fabs(tu_json_num(tu_last_line(out), "test_acc") - acc) <= 0.01, "separate %.4f fused %.4f",
                  tu_json_num(tu_last_line(out), "test_acc"), acc);
    free(out);
    free(err);
    ck_assert_int_ne(tu_inca("train x --refresh-eval sometimes", &out, &err), 0);
    ck_assert_msg(strstr(err, "--refresh-eval: expected fused or separate"), "%s", err);
    free(out);
    free(err);
    snprintf(args, sizeof args, "bench epoch '%s/g' --methods gas,incagg --parts 12 --batch-parts 3 --epochs 4 "
             "--refresh-epochs 1,2 --refresh-source push --json", dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    const char *j = tu_last_line(out);
    /* (counts, the per-run lines and the table report: test_e2e_json.c) the summary's ratios are
     * those of the per-run lines: GAS over IncAgg with the first period, then with each */
    cJSON *lines[4];
    int nl = tu_json_lines(out, lines, 4);
    ck_assert_int_eq(nl, 4);   /* gas, incagg R=1, incagg R=2, summary */
    const double g_ep = tu_json_dbl(lines[0], "epoch_time_s");
    ck_assert_double_eq_tol(tu_json_dbl(lines[3], "speedup"), g_ep / tu_json_dbl(lines[1], "epoch_time_s"), 1e-9);
    ck_assert_double_eq_tol(tu_json_dbl(lines[3], "speedup_r2"), g_ep / tu_json_dbl(lines[2], "epoch_time_s"), 1e-9);
    ck_assert_double_eq_tol(tu_json_dbl(lines[3], "acc_gap_r2"),
                            tu_json_dbl(lines[0], "test_acc") - tu_json_dbl(lines[2], "test_acc"), 1e-12);
    ck_assert(tu_json_num(j, "gas_test_acc") > 0.5 && tu_json_num(j, "incagg_test_acc") > 0.5);
    /* the refresh counts follow from 4 epochs and the periods; each run names its source */
    ck_assert_double_eq(tu_json_dbl(lines[0], "refreshes"), 0);
    ck_assert_double_eq(tu_json_dbl(lines[1], "refreshes"), 4);
    ck_assert_double_eq(tu_json_dbl(lines[2], "refreshes"), 2);
    ck_assert_str_eq(cJSON_GetObjectItem(lines[1], "refresh_source")->valuestring, "push");
    /* the aggregation is timed inside the step, apart from it: a proper part of the step time */
    for (int i = 0; i < 3; i++) {
        const double agg = tu_json_dbl(lines[i], "agg_time_per_epoch_s"), step = tu_json_dbl(lines[i], "step_time_per_epoch_s");
        ck_assert_msg(agg > 0 && agg < step, "line %d: aggregation %.3g s of a %.3g s step", i, agg, step);
    }
    tu_json_free_lines(lines, nl);
    free(out);
    free(err);
    snprintf(args, sizeof args, "bench loader '%s/g' --method gas --parts 12 --batch-parts 3 --epochs 2 --json", dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    double wf = tu_json_num(tu_last_line(out), "wait_fraction");
    ck_assert(wf >= 0 && wf <= 1);
    free(out);
    free(err);
    /* the stored partitioning was reused by the second bench and is listed by info */
    snprintf(args, sizeof args, "partition '%s/g' --parts 12 --json", dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    ck_assert_ptr_nonnull(strstr(tu_last_line(out), "\"reused\":true"));
    free(out);
    free(err);
    snprintf(args, sizeof args, "train '%s/g' --model gcn --method incagg --history-dtype fp16", dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 2);
    free(out);
    free(err);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* A batch larger than the operator was made for (nb_max, halo_max) is refused, on the CPU and
 * on a device (the emulated one), before any buffer sized by them is written (it used to
 * overflow the pinned halo ids and the halo's staged rows: an ASan report) */
START_TEST(batch_past_the_limits_refused) {
    fx_t t;
    fx_make(&t, NN_GCN, 400, 8);
    batch_loader_t *l = fx_loader(&t, 4, 1);
    const batch_t *b = NULL;
    ck_assert_int_eq(batch_loader_next(l, &b), INCA_OK);
    ck_assert_int_gt(b->n_halo, 16);
    int64_t nb, nh, dims[AGG_MAX_SITES];
    uint8_t fixed[AGG_MAX_SITES];
    batch_loader_limits(l, &nb, &nh);
    const int ns = mb_model_sites(&t.mc, dims, fixed);
    kern_ctx_opts_t ko = {.device = "emu"};
    kern_ctx_t *emu = NULL;
    ck_assert_int_eq(kc_create(&ko, &emu), INCA_OK);
    for (int dev = 0; dev < 2; dev++)
        for (int host = 0; host < 1 + dev; host++)
            for (int which = 0; which < 2; which++) {   /* the halo, then the batch, one too large */
                agg_config_t ac = {.method = AGG_GAS, .dtype = HIST_F32, .nsites = ns, .dims = dims, .fixed = fixed,
                                   .n = t.n, .in_dim = t.f, .x = t.x, .x_host = t.x, .a = &t.a,
                                   .nb_max = which ? b->n_b - 1 : nb, .halo_max = which ? nh : 16,
                                   .kc = dev ? emu : NULL, .host_tables = host, .nnz_max = t.a.nnz};
                agg_t *g = NULL;
                ck_assert_int_eq(agg_create(&ac, &g), INCA_OK);
                ck_assert_int_eq(agg_set_batch(g, b), INCA_EINVAL);
                ck_assert_msg(strstr(inca_errmsg(), "exceed the operator's buffers") != NULL, "%s", inca_errmsg());
                agg_free(&g);
            }
    kc_free(&emu);
    batch_loader_free(&l);
    fx_free(&t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("incagg");
    TCase *t = tcase_create("operators");
    tcase_add_loop_test(t, incagg_refresh_each_step_equals_gas, 0, 4);
    tcase_add_loop_test(t, one_batch_equals_full_batch, 0, 4);
    tcase_add_test(t, layer0_baseline_is_ax);
    tcase_add_loop_test(t, exact_snapshots_give_exact_aggregation, 0, 4);
    tcase_add_loop_test(t, incagg_frozen_snapshot_invariant, 0, 8);
    tcase_add_loop_test(t, incagg_relaxed_refresh, 0, 8);
    tcase_add_test(t, push_refresh_keeps_unpushed_snapshot_rows);
    tcase_add_test(t, refresh_rows_off_the_cpu_in_chunks);
    tcase_add_test(t, s_direct_only_where_s_is_the_output);
    tcase_add_test(t, cluster_batch_renormalisation);
    tcase_add_test(t, bf16_refresh_in_panels);
    tcase_add_test(t, bf16_halves_operator_memory);
    tcase_add_test(t, batch_past_the_limits_refused);
    suite_add_tcase(s, t);
    TCase *e = tcase_create("trainer");
    tcase_set_timeout(e, 600);
    tcase_add_test(e, mb_train_learns_and_is_deterministic);
    tcase_add_test(e, mb_incagg_single_buffer_equals_p_scheme);
    tcase_add_test(e, mb_refresh_eval_fused_equals_separate);
    tcase_add_test(e, mb_refresh_longer_than_an_epoch);
    tcase_add_test(e, mb_unlabelled_train_nodes_take_no_step);
    tcase_add_test(e, mb_out_logits_in_dataset_order);
    tcase_add_test(e, mb_train_alloc_failures);
    tcase_add_test(e, mb_train_stops_on_nonfinite_loss);
    tcase_add_test(e, mb_resume_when_done);
    tcase_add_test(e, mb_setup_edges);
    tcase_add_test(e, mb_cluster_whole_graph_batch_is_global);
    tcase_add_test(e, cli_train_and_benches);
    tcase_add_test(e, input_affine_site);
    suite_add_tcase(s, e);
    return tu_run_suite(s);
}
