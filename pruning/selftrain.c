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
        if (pmax[t] >= tau) selected[t] = arg[t];   /* FixMatch: confident at tau or above */
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

/* The buffers a run shares between its epochs, taken and freed in one place. */
typedef struct st_bufs {
    float *x, *xv, *pmax, *dl, *du, *logp;   /* x: dv->x itself on a graph, else the pool's rows */
    int32_t *arg, *ys, *yu, *selected;
    int64_t *rows, *cnt;
} st_bufs_t;

static void st_bufs_free(const dataset_t *dv, st_bufs_t *b) {
    if (b->x != dv->x) inca_free(b->x);
    inca_free(b->xv);
    inca_free(b->pmax);
    inca_free(b->arg);
    inca_free(b->dl);
    inca_free(b->du);
    inca_free(b->logp);
    inca_free(b->ys);
    inca_free(b->yu);
    inca_free(b->selected);
    inca_free(b->rows);
    inca_free(b->cnt);
}

/* b's buffers for n model rows of f features and c classes over npool pool rows (b zeroed). */
static int st_bufs_alloc(const dataset_t *dv, int graph, int64_t n, int64_t f, int32_t c, int64_t npool, st_bufs_t *b) {
    b->x = graph ? dv->x : inca_malloc((size_t)n * (size_t)f * sizeof *b->x);
    b->xv = inca_malloc((size_t)n * (size_t)f * sizeof *b->xv);   /* noisy view buffer */
    b->pmax = inca_malloc((size_t)npool * sizeof *b->pmax);
    b->arg = inca_malloc((size_t)npool * sizeof *b->arg);
    b->dl = inca_malloc((size_t)n * (size_t)c * sizeof *b->dl);
    b->du = inca_malloc((size_t)n * (size_t)c * sizeof *b->du);
    b->logp = inca_malloc((size_t)n * (size_t)c * sizeof *b->logp);
    b->ys = inca_malloc((size_t)n * sizeof *b->ys);
    b->yu = inca_malloc((size_t)n * sizeof *b->yu);
    b->selected = inca_malloc((size_t)npool * sizeof *b->selected);
    b->rows = inca_malloc((size_t)npool * sizeof *b->rows);
    b->cnt = inca_calloc((size_t)c + 1, sizeof *b->cnt);
    if (!b->x || !b->xv || !b->pmax || !b->arg || !b->dl || !b->du || !b->logp || !b->ys || !b->yu || !b->selected ||
        !b->rows || !b->cnt)
        return INCA_ENOMEM;
    return INCA_OK;
}

/* The pool's model rows, labels (ys: -1 off the pool) and, for the MLP, feature rows into b;
 * no pseudo-label selected yet. Returns the pool's unlabelled count. */
static int64_t st_pool_rows(const dataset_t *dv, const int64_t *pool, int64_t npool, int graph, int64_t n, st_bufs_t *b) {
    const int64_t f = dv->f;
    for (int64_t i = 0; i < n; i++) b->ys[i] = -1;
    int64_t n_unl = 0;
    for (int64_t t = 0; t < npool; t++) {
        b->rows[t] = graph ? pool[t] : t;
        if (!graph) memcpy(b->x + t * f, dv->x + pool[t] * f, (size_t)f * sizeof *b->x);
        b->ys[b->rows[t]] = dv->y[pool[t]];
        n_unl += dv->y[pool[t]] < 0;
        b->selected[t] = -1;
    }
    return n_unl;
}

/* Epoch ep: pseudo-labels from the weak view, then one step on the strong view's supervised and
 * masked unsupervised losses. */
static int st_epoch(const selftrain_opts_t *o, st_net_t *net, st_bufs_t *b, int ep, int64_t n, int64_t f, int32_t c,
                    int64_t npool, int64_t n_unl) {
    const float *logits = NULL;
    int rc;
    /* weak view, eval mode */
    const float *xw = net->xin;
    if (o->noise_weak > 0) { add_noise(n * f, b->x, (float)o->noise_weak, o->seed, 2 * (uint64_t)ep, b->xv); xw = b->xv; }
    if ((rc = model_forward(net->m, n, xw, net->aggp, 0, o->seed, (uint64_t)ep, &logits))) return rc;
    soft_max_arg(logits, c, b->rows, npool, b->pmax, b->arg);
    const int64_t n_mask = selftrain_flexmatch_mask(o->tau, c, n, b->rows, npool, b->ys, b->pmax, b->arg, b->cnt,
                                                    b->selected, b->yu);
    /* strong view, training mode (dropout) */
    const float *xs = net->xin;
    if (o->noise_strong > 0) { add_noise(n * f, b->x, (float)o->noise_strong, o->seed, 2 * (uint64_t)ep + 1, b->xv); xs = b->xv; }
    if ((rc = model_forward(net->m, n, xs, net->aggp, 1, o->seed, (uint64_t)ep, &logits))) return rc;
    double ls = kern_softmax_xent(n, c, logits, b->ys, b->rows, npool, b->logp, b->dl);
    double lu = kern_softmax_xent(n, c, logits, b->yu, b->rows, npool, NULL, b->du);
    if (!isfinite(ls) || !isfinite(lu)) return inca_fail(INCA_ERR, "selftrain: loss is not finite at epoch %d", ep);
    /* L_u is a mean over all unlabelled examples, masked ones contributing zero */
    float wu = n_unl ? (float)(o->lambda_u * (double)n_mask / (double)n_unl) : 0.0f;
    kern_axpby(n * c, wu, b->du, 1.0f, b->dl);
    if ((rc = model_backward(net->m, b->dl, net->aggp))) return rc;
    optim_step(net->opt);
    return INCA_OK;
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
    st_bufs_t b;
    memset(&b, 0, sizeof b);
    st_net_t net;
    memset(&net, 0, sizeof net);
    if ((rc = st_bufs_alloc(dv, o->graph, n, f, c, npool, &b))) goto done;
    const int64_t n_unl = st_pool_rows(dv, pool, npool, o->graph, n, &b);
    if ((rc = st_net_make(dv, o, n, f, b.x, &net))) goto done;
    for (int ep = 0; ep < o->epochs; ep++)
        if ((rc = st_epoch(o, &net, &b, ep, n, f, c, npool, n_unl))) goto done;
    const float *logits = NULL;
    if ((rc = model_forward(net.m, n, net.xin, net.aggp, 0, o->seed, (uint64_t)o->epochs, &logits))) goto done;
    soft_max_arg(logits, c, b.rows, npool, b.pmax, b.arg);
    for (int64_t t = 0; t < npool; t++) {
        int32_t v = dv->y[pool[t]];
        pseudo[t] = v >= 0 ? v : b.arg[t];
        conf[t] = v >= 0 ? 1.0f : b.pmax[t];
    }
done:
    st_bufs_free(dv, &b);
    st_net_free(&net);
    return rc;
}
