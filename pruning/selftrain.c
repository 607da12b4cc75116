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
    model_t *m = NULL;
    optim_t *opt = NULL;
    csr_t a = {0}, at = {0}, xcsr = {0};
    nn_agg_full_t full;
    nn_agg_t agg, *aggp = NULL;
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
    model_config_t mc;
    model_config_default(&mc);
    mc.kind = o->graph ? NN_GCN : NN_MLP;
    mc.in_dim = f;
    mc.out_dim = c;
    mc.hidden = o->hidden;
    mc.layers = o->layers;
    mc.dropout = (float)o->dropout;
    mc.seed = o->seed;
    mc.transform_first = 1;   /* the full-graph operator is linear */
    if ((rc = model_create(&mc, n, &m))) goto done;
    /* without feature noise, sparse (bag-of-words) features go in as a CSR, as the trainer does */
    int sparse = 0;
    if (o->noise_weak <= 0 && o->noise_strong <= 0) {
        if ((rc = train_features_csr(n, f, x, 0.25, &xcsr)) < 0) goto done;
        sparse = rc == 1 && model_set_sparse_input(m, &xcsr) == INCA_OK;
        if (!sparse) { inca_err_clear(); csr_free(&xcsr); }
        rc = INCA_OK;
    }
    const float *xin = sparse ? NULL : x;
    if (o->graph) {
        if ((rc = nn_adj_build(&dv->adj, NN_NORM_GCN, &a, &at))) goto done;
        nn_agg_full_init(&agg, &full, &a, NULL);
        aggp = &agg;
    }
    int grp = 0;
    if ((rc = optim_new(OPTIM_ADAM, o->lr, 0.9, 0.999, 1e-8, &opt))) goto done;
    if ((rc = optim_add_group(opt, o->weight_decay, &grp))) goto done;
    for (int i = 0; i < model_nparams(m); i++) {
        nn_param_t *p = model_param(m, i);
        if ((rc = optim_add_param(opt, grp, p->w, p->g, p->n))) goto done;
    }
    const float *logits = NULL;
    for (int ep = 0; ep < o->epochs; ep++) {
        /* weak view, eval mode */
        const float *xw = xin;
        if (o->noise_weak > 0) { add_noise(n * f, x, (float)o->noise_weak, o->seed, 2 * (uint64_t)ep, xv); xw = xv; }
        if ((rc = model_forward(m, n, xw, aggp, 0, o->seed, (uint64_t)ep, &logits))) goto done;
        soft_max_arg(logits, c, rows, npool, pmax, arg);
        /* FlexMatch: per-class learning status from the persistent selections */
        memset(cnt, 0, (size_t)(c + 1) * sizeof *cnt);
        for (int64_t t = 0; t < npool; t++) {
            if (ys[rows[t]] >= 0) continue;
            if (pmax[t] > o->tau) selected[t] = arg[t];
            cnt[selected[t] + 1]++;
        }
        int64_t denom = cnt[0];
        for (int32_t k = 0; k < c; k++) if (cnt[k + 1] > denom) denom = cnt[k + 1];
        int64_t n_mask = 0;
        for (int64_t i = 0; i < n; i++) yu[i] = -1;
        for (int64_t t = 0; t < npool; t++) {
            if (ys[rows[t]] >= 0) continue;
            double beta = denom > 0 ? (double)cnt[arg[t] + 1] / (double)denom : 0.0;
            double thr = o->tau * beta / (2.0 - beta);
            if (pmax[t] >= thr) { yu[rows[t]] = arg[t]; n_mask++; }
        }
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
        optim_step(opt);
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
    model_free(&m);
    optim_free(&opt);
    csr_free(&a);
    csr_free(&at);
    csr_free(&xcsr);
    return rc;
}
