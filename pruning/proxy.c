/* The proxy on the pseudo-labels, its dynamics recorder and the relabelling rounds; see proxy.h.
 * Tested in test_pruning_e2e.c (dynamics from eval and steps, every proxy method, relabelling). */
#include "pruning/proxy.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the proxy's dataset ---- */
typedef struct proxy_data {
    dataset_t pd;       /* shallow view of dv: same graph and features, pseudo-labels, no splits */
    int32_t *yp;        /* its labels: the pseudo-labels on the pool, -1 elsewhere (owned) */
    int64_t *rows;      /* its row of each pool position (owned) */
    float *xp;          /* a table's pool rows, copied when they are not contiguous (owned) */
    int64_t n;          /* its rows */
    train_config_t tc;  /* cfg->proxy resolved: model, method, one run, the run's seed */
} proxy_data_t;

static void proxy_data_free(proxy_data_t *p) {
    inca_free(p->yp);
    inca_free(p->rows);
    inca_free(p->xp);
    memset(p, 0, sizeof *p);
}

/* graph: the whole graph with pseudo-labels on the pool; features: the pool rows alone */
static int proxy_data_make(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg,
                           int use_graph, const int32_t *pseudo, proxy_data_t *p) {
    memset(p, 0, sizeof *p);
    p->n = use_graph ? dv->n : npool;
    p->yp = inca_malloc((size_t)p->n * sizeof *p->yp);
    p->rows = inca_malloc((size_t)npool * sizeof *p->rows);
    if (!p->yp || !p->rows) { proxy_data_free(p); return INCA_ENOMEM; }
    p->pd = *dv;
    for (int s = 0; s < SPLIT_COUNT; s++) { p->pd.split[s] = NULL; p->pd.split_n[s] = 0; }
    for (int64_t i = 0; i < p->n; i++) p->yp[i] = -1;
    for (int64_t i = 0; i < npool; i++) {
        p->rows[i] = use_graph ? pool[i] : i;
        p->yp[p->rows[i]] = pseudo[i];
    }
    if (!use_graph) {
        memset(&p->pd.adj, 0, sizeof p->pd.adj);
        p->pd.n = npool;
        int contiguous = 1;
        for (int64_t i = 0; i < npool && contiguous; i++) contiguous = pool[i] == pool[0] + i;
        if (contiguous) {
            p->pd.x = dv->x + pool[0] * dv->f;
        } else {
            p->xp = inca_malloc((size_t)npool * (size_t)dv->f * sizeof *p->xp);
            if (!p->xp) { proxy_data_free(p); return INCA_ENOMEM; }
            for (int64_t i = 0; i < npool; i++) memcpy(p->xp + i * dv->f, dv->x + pool[i] * dv->f, (size_t)dv->f * sizeof *p->xp);
            p->pd.x = p->xp;
        }
    }
    p->pd.y = p->yp;
    train_config_t *tc = &p->tc;
    *tc = cfg->proxy;
    if (tc->model == TRAIN_MODEL_AUTO) tc->model = use_graph ? NN_GCN : NN_MLP;
    tc->runs = 1;
    tc->seed = cfg->seed;
    tc->out_logits = NULL;   /* no validation split: the last epoch's */
    tc->metrics_path = NULL;
    if (tc->epochs < 1) {
        proxy_data_free(p);
        return inca_fail(INCA_EINVAL, "--proxy-epochs: expected >= 1, got %d", cfg->proxy.epochs);
    }
    return INCA_OK;
}

/* ---- the dynamics recorder: train_run's callbacks ---- */
typedef struct dyn_ctx {
    prune_dyn_t *dyn;
    const int64_t *rows;   /* row of the logits for each pool position */
    const int32_t *pseudo;
    float *probs;   /* npool x c */
    const int64_t *pos;    /* steps: pool position of each node of the proxy's dataset (-1: none) */
} dyn_ctx_t;

static void softmax_row(const float *z, int32_t c, float *p) {
    float m = z[0];
    for (int32_t j = 1; j < c; j++) if (z[j] > m) m = z[j];
    double s = 0;
    for (int32_t j = 0; j < c; j++) s += exp((double)z[j] - m);
    for (int32_t j = 0; j < c; j++) p[j] = (float)(exp((double)z[j] - m) / s);
}

static int dyn_on_epoch(void *ctx, int run, int epoch, const float *logits, int64_t n, int32_t c) {
    (void)run; (void)epoch; (void)n;
    dyn_ctx_t *k = ctx;
    int64_t np = k->dyn->n;
#pragma omp parallel for schedule(static) num_threads(inca_threads())
    for (int64_t i = 0; i < np; i++) softmax_row(logits + k->rows[i] * c, c, k->probs + i * c);
    if (k->dyn->epochs >= k->dyn->cap) return INCA_OK;   /* more epochs than planned: keep the first */
    return dyn_record(k->dyn, k->probs, c, c, k->pseudo, NULL);
}

/* --dynamics-from steps: each pool node as its training step saw it (training-mode logits
 * before the update), once per epoch */
static int dyn_on_step(void *ctx, int run, int epoch, const int64_t *nodes, const int64_t *rows, int64_t m,
                       const float *logits, int32_t c) {
    (void)run;
    dyn_ctx_t *k = ctx;
    if (epoch >= k->dyn->cap) return INCA_OK;
    float *p = k->probs;   /* one row's worth is enough: the rows go one by one */
    for (int64_t j = 0; j < m; j++) {
        const int64_t i = k->pos[nodes[j]];
        if (i < 0) continue;
        softmax_row(logits + rows[j] * c, c, p);
        int rc = dyn_record_one(k->dyn, i, epoch, p, c, k->pseudo[i]);
        if (rc) return rc;
    }
    return INCA_OK;
}

int proxy_record(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                 prune_result_t *r) {
    const int32_t c = dv->c;
    float *probs = NULL;
    int64_t *pos = NULL;
    train_result_t tr = {0};
    proxy_data_t p;
    int rc = proxy_data_make(dv, pool, npool, cfg, use_graph, r->pseudo, &p);
    if (rc) return rc;
    train_config_t *tc = &p.tc;
    const int minibatch = tc->method != TRAIN_FULL;   /* prune_run refused it on a table */
    r->dyn_from = cfg->dyn_from == PRUNE_DYN_AUTO ? (minibatch ? PRUNE_DYN_STEPS : PRUNE_DYN_EVAL) : cfg->dyn_from;
    /* eval: every pool row's probabilities at once; steps: one row at a time */
    if (!(probs = inca_malloc((size_t)(r->dyn_from == PRUNE_DYN_STEPS ? 1 : npool) * (size_t)c * sizeof *probs))) {
        rc = INCA_ENOMEM;
        goto done;
    }
    const int compact = cfg->dyn_layout == PRUNE_DYN_COMPACT ||
                        (cfg->dyn_layout == PRUNE_DYN_AUTO && dyn_full_bytes(npool, tc->epochs) > PRUNE_DYN_COMPACT_BYTES);
    rc = compact ? dyn_init_compact(&r->dyn, npool, tc->epochs, cfg->el2n_epochs) : dyn_init(&r->dyn, npool, tc->epochs);
    if (rc) goto done;
    dyn_ctx_t ctx = {&r->dyn, p.rows, r->pseudo, probs, NULL};
    if (r->dyn_from == PRUNE_DYN_STEPS) {
        if (!(pos = inca_malloc((size_t)(p.n ? p.n : 1) * sizeof *pos))) { rc = INCA_ENOMEM; goto done; }
        for (int64_t v = 0; v < p.n; v++) pos[v] = -1;
        for (int64_t i = 0; i < npool; i++) pos[p.rows[i]] = i;
        ctx.pos = pos;
        tc->on_step = dyn_on_step;
        tc->on_step_ctx = &ctx;
    } else {
        tc->on_epoch = dyn_on_epoch;
        tc->on_epoch_ctx = &ctx;
    }
    r->dyn_bytes = dyn_bytes(&r->dyn);
    rc = train_run(&p.pd, tc, p.rows, npool, &tr);
    if (rc) { inca_fail_ctx(rc, "proxy training"); goto done; }
    if (r->dyn.epochs < 1) rc = inca_fail(INCA_ERR, "proxy training recorded no epoch");
    else if ((rc = dyn_check_complete(&r->dyn))) inca_fail_ctx(rc, "proxy training (--proxy-method %s)", train_method_name(tc->method));
done:
    train_result_free(&tr);
    proxy_data_free(&p);
    inca_free(probs);
    inca_free(pos);
    return rc;
}

int proxy_logits(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                 const prune_result_t *r, float conf_min, const char *what, float *out) {
    train_result_t tr = {0};
    proxy_data_t p;
    int rc = proxy_data_make(dv, pool, npool, cfg, use_graph, r->pseudo, &p);
    if (rc) return rc;
    p.tc.out_logits = out;
    int64_t m = 0;   /* the confident rows only, no dynamics */
    for (int64_t i = 0; i < npool; i++)
        if (r->conf[i] >= conf_min) p.rows[m++] = p.rows[i];
    rc = train_run(&p.pd, &p.tc, p.rows, m, &tr);
    if (rc) inca_fail_ctx(rc, "proxy training (%s)", what);
    train_result_free(&tr);
    proxy_data_free(&p);
    return rc;
}

void proxy_relabel_from_logits(const dataset_t *dv, const int64_t *pool, int64_t npool, int on_graph, const float *lg,
                               prune_result_t *r) {
    const int32_t c = dv->c;
    for (int64_t i = 0; i < npool; i++) {
        if (dv->y[pool[i]] >= 0) continue;
        const float *z = lg + (on_graph ? pool[i] : i) * c;
        int32_t arg = 0;
        for (int32_t k = 1; k < c; k++) if (z[k] > z[arg]) arg = k;
        double se = 0;   /* the top class's softmax probability */
        for (int32_t k = 0; k < c; k++) se += exp((double)z[k] - z[arg]);
        r->pseudo[i] = arg;
        r->conf[i] = (float)(1.0 / se);
    }
}

static int f32_cmp(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* the labelled subset keeps its labels (proxy_relabel_from_logits skips it) */
int proxy_relabel(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                  prune_result_t *r) {
    const int64_t rows_n = use_graph ? dv->n : npool;
    float *lg = inca_malloc((size_t)rows_n * (size_t)dv->c * sizeof *lg);
    float *cs = inca_malloc((size_t)npool * sizeof *cs);
    int rc = lg && cs ? INCA_OK : INCA_ENOMEM;
    for (int round = 0; round < cfg->relabel && !rc; round++) {
        train_log(&cfg->proxy, TRAIN_LOG_PROGRESS, "relabelling round %d of %d", round + 1, cfg->relabel);
        /* the confidence that keeps the top --relabel-confident share of the pool */
        memcpy(cs, r->conf, (size_t)npool * sizeof *cs);
        qsort(cs, (size_t)npool, sizeof *cs, f32_cmp);
        int64_t at = (int64_t)floor((1.0 - cfg->relabel_confident) * (double)npool);
        if (at >= npool) at = npool - 1;
        char what[64];
        snprintf(what, sizeof what, "--relabel round %d of %d", round + 1, cfg->relabel);
        rc = proxy_logits(dv, pool, npool, cfg, use_graph, r, cs[at < 0 ? 0 : at], what, lg);
        if (!rc) proxy_relabel_from_logits(dv, pool, npool, use_graph, lg, r);
    }
    inca_free(lg);
    inca_free(cs);
    return rc;
}
