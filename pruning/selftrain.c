/* FixMatch/FlexMatch self-training of an MLP or GCN proxy with feature-noise views; see
 * selftrain.h. Uses nn/model.h, nn/optim.h and kern_softmax_xent; allocates once per run.
 * Tested in test_pruning_e2e.c. */
#include "pruning/selftrain.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include "nn/model.h"
#include "nn/optim.h"
#include "nn/train.h"
#include <math.h>
#include <string.h>

void selftrain_opts_default(selftrain_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->layers = 2;
    o->hidden = 256;
    o->lr = 0.01;
    o->dropout = 0.2;
    o->weight_decay = 5e-4;
    o->epochs = 100;
    o->tau = 0.95;
    o->lambda_u = 1.0;
    o->noise_strong = 0.2;
}

/* xo = x + uniform noise in [-h, h] (counter-based: the same for any thread count). */
static void add_noise(int64_t m, const float *x, float h, uint64_t seed, uint64_t stream, float *xo) {
#pragma omp parallel for schedule(static) num_threads(inca_threads())
    for (int64_t i = 0; i < m; i++) xo[i] = x[i] + h * (2.0f * rng_hash_uniform(seed, stream, (uint64_t)i) - 1.0f);
}

/* Row-wise softmax max and argmax of logits rows listed in rows[0..n). */
static void soft_max_arg(const float *logits, int32_t c, const int64_t *rows, int64_t n, float *pmax, int32_t *arg) {
#pragma omp parallel for schedule(static) num_threads(inca_threads())
    for (int64_t t = 0; t < n; t++) {
        const float *z = logits + rows[t] * c;
        int32_t b = 0;
        for (int32_t k = 1; k < c; k++) if (z[k] > z[b]) b = k;
        double s = 0;
        for (int32_t k = 0; k < c; k++) s += exp((double)z[k] - z[b]);
        pmax[t] = (float)(1.0 / s);
        arg[t] = b;
    }
}

/* The network self-training fits: the model (GCN over the whole graph or MLP over the pool rows),
 * its input (x, or a CSR of it for sparse features without noise), the graph's aggregation and
 * the Adam optimiser over its parameters. In place: agg points into the struct. */
typedef struct st_net {
    model_t *m;
    optim_t *opt;
    csr_t a, at, xcsr;
    nn_agg_full_t full;
    nn_agg_t agg, *aggp;   /* aggp: &agg on a graph, NULL for the MLP */
    const float *xin;      /* the dense input, NULL when the model takes xcsr */
} st_net_t;

static void st_net_free(st_net_t *t) {
    model_free(&t->m);
    optim_free(&t->opt);
    csr_free(&t->a);
    csr_free(&t->at);
    csr_free(&t->xcsr);
}

static int st_net_make(const dataset_t *dv, const selftrain_opts_t *o, int64_t n, int64_t f, const float *x, st_net_t *t) {
    int rc;
    model_config_t mc;
    model_config_default(&mc);
    mc.kind = o->graph ? NN_GCN : NN_MLP;
    mc.in_dim = f;
    mc.out_dim = dv->c;
    mc.hidden = o->hidden;
    mc.layers = o->layers;
    mc.dropout = (float)o->dropout;
    mc.seed = o->seed;
    mc.transform_first = 1;   /* the full-graph operator is linear */
    if ((rc = model_create(&mc, n, &t->m))) return rc;
    /* without feature noise, sparse (bag-of-words) features go in as a CSR, as the trainer does */
    int sparse = 0;
    if (o->noise_weak <= 0 && o->noise_strong <= 0) {
        if ((rc = train_features_csr(n, f, x, 0.25, &t->xcsr)) < 0) return rc;
        sparse = rc == 1 && model_set_sparse_input(t->m, &t->xcsr) == INCA_OK;
        if (!sparse) { inca_err_clear(); csr_free(&t->xcsr); }
    }
    t->xin = sparse ? NULL : x;
    if (o->graph) {
        if ((rc = nn_adj_build(&dv->adj, NN_NORM_GCN, &t->a, &t->at))) return rc;
        nn_agg_full_init(&t->agg, &t->full, &t->a, t->at.rowptr ? &t->at : NULL);   /* Âᵀ: a directed graph's */
        t->aggp = &t->agg;
    }
    int grp = 0;
    if ((rc = optim_new(OPTIM_ADAM, o->lr, 0.9, 0.999, 1e-8, &t->opt))) return rc;
    if ((rc = optim_add_group(t->opt, o->weight_decay, &grp))) return rc;
    for (int i = 0; i < model_nparams(t->m); i++) {
        nn_param_t *p = model_param(t->m, i);
        if ((rc = optim_add_param(t->opt, grp, p->w, p->g, p->n))) return rc;
    }
    return INCA_OK;
}

int64_t selftrain_flexmatch_mask(double tau, int32_t c, int64_t n, const int64_t *rows, int64_t npool, const int32_t *ys,
                                 const float *pmax, const int32_t *arg, int64_t *cnt, int32_t *selected, int32_t *yu) {
    memset(cnt, 0, (size_t)(c + 1) * sizeof *cnt);
    for (int64_t t = 0; t < npool; t++) {
        if (ys[rows[t]] >= 0) continue;
        if (pmax[t] > tau) selected[t] = arg[t];
        cnt[selected[t] + 1]++;
    }
    int64_t denom = cnt[0];
    for (int32_t k = 0; k < c; k++) if (cnt[k + 1] > denom) denom = cnt[k + 1];
    int64_t n_mask = 0;
    for (int64_t i = 0; i < n; i++) yu[i] = -1;
    for (int64_t t = 0; t < npool; t++) {
        if (ys[rows[t]] >= 0) continue;
        double beta = denom > 0 ? (double)cnt[arg[t] + 1] / (double)denom : 0.0;
        double thr = tau * beta / (2.0 - beta);
        if (pmax[t] >= thr) { yu[rows[t]] = arg[t]; n_mask++; }
    }
    return n_mask;
}

/* Longer than 80 lines: the epoch loop and the dozen buffers it shares, taken and freed in one place. */
int selftrain_run(const dataset_t *dv, const int64_t *pool, int64_t npool, const selftrain_opts_t *o,
                  int32_t *pseudo, float *conf) {
    if (!dv->x || dv->f < 1) return inca_fail(INCA_EINVAL, "selftrain: the dataset has no features");
    if (o->epochs < 1) return inca_fail(INCA_EINVAL, "--proxy-epochs: expected >= 1, got %d", o->epochs);
    if (!(o->tau > 0 && o->tau <= 1)) return inca_fail(INCA_EINVAL, "selftrain: tau must be in (0, 1], got %g", o->tau);
    int rc = INCA_OK;
    int32_t c = dv->c;
    /* rows the model runs on: the pool (MLP) or every node (GCN) */
    int64_t n = o->graph ? dv->n : npool, f = dv->f;
    float *x = NULL, *xv = NULL, *pmax = NULL, *dl = NULL, *du = NULL, *logp = NULL;
    int32_t *arg = NULL, *ys = NULL, *yu = NULL, *selected = NULL;
    int64_t *rows = NULL, *cnt = NULL;
    st_net_t net;
    memset(&net, 0, sizeof net);
    x = o->graph ? dv->x : inca_malloc((size_t)n * (size_t)f * sizeof *x);
    xv = inca_malloc((size_t)n * (size_t)f * sizeof *xv);   /* noisy view buffer */
    pmax = inca_malloc((size_t)npool * sizeof *pmax);
    arg = inca_malloc((size_t)npool * sizeof *arg);
    dl = inca_malloc((size_t)n * (size_t)c * sizeof *dl);
    du = inca_malloc((size_t)n * (size_t)c * sizeof *du);
    logp = inca_malloc((size_t)n * (size_t)c * sizeof *logp);
    ys = inca_malloc((size_t)n * sizeof *ys);
    yu = inca_malloc((size_t)n * sizeof *yu);
    selected = inca_malloc((size_t)npool * sizeof *selected);
    rows = inca_malloc((size_t)npool * sizeof *rows);
    cnt = inca_calloc((size_t)c + 1, sizeof *cnt);
    if (!x || !xv || !pmax || !arg || !dl || !du || !logp || !ys || !yu || !selected || !rows || !cnt) { rc = INCA_ENOMEM; goto done; }
    for (int64_t i = 0; i < n; i++) ys[i] = -1;
    int64_t n_unl = 0;
    for (int64_t t = 0; t < npool; t++) {
        rows[t] = o->graph ? pool[t] : t;
        if (!o->graph) memcpy(x + t * f, dv->x + pool[t] * f, (size_t)f * sizeof *x);
        ys[rows[t]] = dv->y[pool[t]];
        n_unl += dv->y[pool[t]] < 0;
        selected[t] = -1;
    }
    if ((rc = st_net_make(dv, o, n, f, x, &net))) goto done;
    model_t *m = net.m;
    nn_agg_t *aggp = net.aggp;
    const float *xin = net.xin;
    const float *logits = NULL;
    for (int ep = 0; ep < o->epochs; ep++) {
        /* weak view, eval mode */
        const float *xw = xin;
        if (o->noise_weak > 0) { add_noise(n * f, x, (float)o->noise_weak, o->seed, 2 * (uint64_t)ep, xv); xw = xv; }
        if ((rc = model_forward(m, n, xw, aggp, 0, o->seed, (uint64_t)ep, &logits))) goto done;
        soft_max_arg(logits, c, rows, npool, pmax, arg);
        const int64_t n_mask = selftrain_flexmatch_mask(o->tau, c, n, rows, npool, ys, pmax, arg, cnt, selected, yu);
        /* strong view, training mode (dropout) */
        const float *xs = xin;
        if (o->noise_strong > 0) { add_noise(n * f, x, (float)o->noise_strong, o->seed, 2 * (uint64_t)ep + 1, xv); xs = xv; }
        if ((rc = model_forward(m, n, xs, aggp, 1, o->seed, (uint64_t)ep, &logits))) goto done;
        double ls = kern_softmax_xent(n, c, logits, ys, rows, npool, logp, dl);
        double lu = kern_softmax_xent(n, c, logits, yu, rows, npool, NULL, du);
        if (!isfinite(ls) || !isfinite(lu)) { rc = inca_fail(INCA_ERR, "selftrain: loss is not finite at epoch %d", ep); goto done; }
        /* L_u is a mean over all unlabelled examples, masked ones contributing zero */
        float wu = n_unl ? (float)(o->lambda_u * (double)n_mask / (double)n_unl) : 0.0f;
        kern_axpby(n * c, wu, du, 1.0f, dl);
        if ((rc = model_backward(m, dl, aggp))) goto done;
        optim_step(net.opt);
    }
    if ((rc = model_forward(m, n, xin, aggp, 0, o->seed, (uint64_t)o->epochs, &logits))) goto done;
    soft_max_arg(logits, c, rows, npool, pmax, arg);
    for (int64_t t = 0; t < npool; t++) {
        int32_t v = dv->y[pool[t]];
        pseudo[t] = v >= 0 ? v : arg[t];
        conf[t] = v >= 0 ? 1.0f : pmax[t];
    }
done:
    if (x != dv->x) inca_free(x);
    inca_free(xv);
    inca_free(pmax);
    inca_free(arg);
    inca_free(dl);
    inca_free(du);
    inca_free(logp);
    inca_free(ys);
    inca_free(yu);
    inca_free(selected);
    inca_free(rows);
    inca_free(cnt);
    st_net_free(&net);
    return rc;
}
