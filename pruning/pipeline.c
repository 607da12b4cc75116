/* The pruning pipeline: labelled subset, pseudo-labels, proxy dynamics, scores, selection,
 * stored dynamics, pruned dataset and evaluation helpers; see pipeline.h.
 * Tested in test_pruning_e2e.c (synthetic blobs and a planted-partition graph, the hidden-label
 * test, dynamics save/load, pruned store contents). */
#include "pruning/pipeline.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/store.h"
#include "pruning/cs.h"
#include "pruning/labelprop.h"
#include "pruning/pca.h"
#include "pruning/sgc.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const prune_stage_names[PRUNE_ST_COUNT] = {"load", "labeled", "check", "knn", "spread", "proxy",
                                                       "score", "select", "write", "eval"};

void prune_config_default(prune_config_t *c) {
    memset(c, 0, sizeof *c);
    c->ssl = PRUNE_SSL_AUTO;
    c->knn_k = 10;
    c->knn_features = PRUNE_KF_AUTO;
    c->knn_pca = 200;
    c->knn_search = PRUNE_KNN_AUTO;
    c->faiss.nprobe = 8;
    c->metric = KNN_COSINE;
    c->alpha = 0.9;   /* Zhou et al. use 0.99; 0.9 spreads better on Fashion-MNIST (79.8% vs 76.9%) and Facebook (74.0% vs 63.2%) */
    c->iters = 50;
    c->graph = -1;
    train_config_default(&c->proxy);
    c->proxy.model[0] = '\0';   /* chosen from the dataset */
    snprintf(c->proxy.method, sizeof c->proxy.method, "full");
    c->proxy.hidden = 256;
    c->proxy.epochs = 30;
    c->proxy.lr = 0.01;
    c->proxy.dropout = 0.2;
    c->proxy.weight_decay = 5e-4;
    c->proxy.runs = 1;
    selftrain_opts_default(&c->st);
    c->score = SCORE_AUM;
    c->el2n_epochs = 10;
    c->dyn_from = PRUNE_DYN_AUTO;
    c->dyn_layout = PRUNE_DYN_AUTO;
    c->relabel_confident = 0.5;
    c->sel.kind = SEL_CCS;
    c->sel.keep = 0.1;
    c->sel.mis_ratio = 0.0;
    c->sel.strata = 50;
    c->sel.hardest = 1;
}

static const char *const prune_ssl_names[PRUNE_SSL_COUNT] = {"labelprop", "selftrain", "proxy", "auto", "sgc", "cs"};

const char *prune_ssl_name(prune_ssl_t s) {
    return s >= 0 && s < PRUNE_SSL_COUNT ? prune_ssl_names[s] : "?";
}

int prune_ssl_parse(const char *name, prune_ssl_t *out) {
    for (int s = 0; s < PRUNE_SSL_COUNT; s++)
        if (name && strcmp(name, prune_ssl_names[s]) == 0) { *out = (prune_ssl_t)s; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--ssl: expected labelprop, selftrain, proxy, sgc, cs or auto, got '%s'", name ? name : "");
}

static const char *const prune_kf_names[PRUNE_KF_COUNT] = {"raw", "whiten", "sqrt-whiten"};

const char *prune_knn_features_name(int kf) {
    return kf == PRUNE_KF_AUTO ? "auto" : kf >= 0 && kf < PRUNE_KF_COUNT ? prune_kf_names[kf] : "?";
}

const char *prune_ssl_cand_name(int k, int on_graph) {
    static const char *const tab[PRUNE_CAND_COUNT] = {"labelprop-raw", "labelprop-whiten", "labelprop-sqrt-whiten",
                                                      "sgc-raw", "sgc-whiten", "sgc-sqrt-whiten",
                                                      "cs-raw", "cs-whiten", "cs-sqrt-whiten", "proxy"};
    if (k == PRUNE_CAND_LABELPROP && on_graph) return "labelprop";
    if (k == PRUNE_CAND_SGC && on_graph) return "sgc";
    if (k == PRUNE_CAND_CS && on_graph) return "cs";
    return k >= 0 && k < PRUNE_CAND_COUNT ? tab[k] : "?";
}

int prune_knn_features_parse(const char *name, int *out) {
    if (name && strcmp(name, "auto") == 0) { *out = PRUNE_KF_AUTO; return INCA_OK; }
    for (int k = 0; k < PRUNE_KF_COUNT; k++)
        if (name && strcmp(name, prune_kf_names[k]) == 0) { *out = k; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--knn-features: expected raw, whiten, sqrt-whiten or auto, got '%s'", name ? name : "");
}

void prune_result_free(prune_result_t *r) {
    if (!r) return;
    inca_free(r->pool);
    inca_free(r->pseudo);
    inca_free(r->conf);
    dyn_free(&r->dyn);
    inca_free(r->score);
    inca_free(r->aum);
    inca_free(r->sel);
    memset(r, 0, sizeof *r);
}

static int i64_cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int prune_labeled_pick(const int32_t *y, int32_t c, const int64_t *pool, int64_t npool, double fraction,
                       int64_t per_class, uint64_t seed, int64_t **ids, int64_t *nids) {
    *ids = NULL;
    *nids = 0;
    if (per_class <= 0 && !(fraction > 0 && fraction <= 1))
        return inca_fail(INCA_EINVAL, "--labeled: expected a fraction in (0, 1], got %g", fraction);
    int rc = INCA_OK;
    int64_t *cls = inca_malloc((size_t)(npool ? npool : 1) * sizeof *cls), *out = inca_malloc((size_t)(npool ? npool : 1) * sizeof *out);
    if (!cls || !out) { rc = INCA_ENOMEM; goto done; }
    int64_t no = 0;
    rng_t g;
    for (int32_t k = 0; k < c; k++) {
        int64_t nk = 0;
        for (int64_t i = 0; i < npool; i++)
            if (y[pool[i]] == k) cls[nk++] = pool[i];
        if (nk == 0) continue;
        rng_seed(&g, rng_hash64(seed, 0x1abe1, (uint64_t)k));
        rng_shuffle_i64(&g, cls, nk);
        int64_t take = per_class > 0 ? (per_class < nk ? per_class : nk) : (int64_t)llround(fraction * (double)nk);
        if (take < 1) take = 1;
        if (take > nk) take = nk;
        memcpy(out + no, cls, (size_t)take * sizeof *out);
        no += take;
    }
    if (no == 0) { rc = inca_fail(INCA_EINVAL, "--labeled: the pool (train split) holds no labelled node"); goto done; }
    qsort(out, (size_t)no, sizeof *out, i64_cmp);
    *ids = out;
    *nids = no;
    out = NULL;
done:
    inca_free(cls);
    inca_free(out);
    return rc;
}

int prune_visible_labels(const int32_t *y_true, int64_t n, const int64_t *ids, int64_t nids, int32_t *y_vis) {
    for (int64_t i = 0; i < n; i++) y_vis[i] = -1;
    for (int64_t t = 0; t < nids; t++) {
        int64_t v = ids[t];
        if (v < 0 || v >= n) return inca_fail(INCA_EINVAL, "labelled id %lld outside [0, %lld)", (long long)v, (long long)n);
        if (y_true[v] < 0) return inca_fail(INCA_EINVAL, "labelled id %lld has no label in the store", (long long)v);
        y_vis[v] = y_true[v];
    }
    return INCA_OK;
}

/* ---- pseudo-labelling by label spreading ---- */
/* The rows of kNN view kf of the pool: *xv (npool x *fv), owned in *own when computed (the rows
 * as given are borrowed from the dataset when the pool is contiguous: *own = NULL): the rows as
 * given, their PCA-whitened components, or their square roots whitened (non-negative only). */
static int view_rows(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int kf,
                     const float **xv, float **own, int64_t *fv) {
    *xv = NULL;
    *own = NULL;
    *fv = dv->f;
    if (dv->f < 1 || !dv->x) return inca_fail(INCA_EINVAL, "labelprop: the dataset has neither features nor a graph");
    int rc = INCA_OK;
    int64_t f = dv->f;
    int contiguous = 1;
    for (int64_t i = 0; i < npool && contiguous; i++) contiguous = pool[i] == pool[0] + i;
    if (kf == PRUNE_KF_RAW && contiguous) {
        *xv = dv->x + (npool ? pool[0] : 0) * f;
        return INCA_OK;
    }
    float *x = inca_malloc((size_t)npool * (size_t)f * sizeof *x);
    if (!x) return INCA_ENOMEM;
    for (int64_t i = 0; i < npool; i++) memcpy(x + i * f, dv->x + pool[i] * f, (size_t)f * sizeof *x);
    if (kf == PRUNE_KF_SQRT_WHITEN) {   /* square roots of the copy (the dataset's rows stay) */
        for (int64_t i = 0; i < npool * f && !rc; i++) {
            if (!(x[i] >= 0)) rc = inca_fail(INCA_EINVAL, "--knn-features sqrt-whiten: feature %lld of pool row %lld is %g; "
                                             "needs non-negative features", (long long)(i % f), (long long)(i / f), x[i]);
            else x[i] = sqrtf(x[i]);
        }
        if (rc) { inca_free(x); return rc; }
    }
    if (kf == PRUNE_KF_WHITEN || kf == PRUNE_KF_SQRT_WHITEN) {   /* whitened principal components */
        float *z = NULL;
        const int64_t d = cfg->knn_pca < f ? cfg->knn_pca : f;
        rc = pca_whiten(x, npool, f, d, &z, NULL);
        inca_free(x);
        if (rc) return rc;
        x = z;
        f = d;
    }
    *xv = *own = x;
    *fv = f;
    return INCA_OK;
}

/* The kNN graph of the view's rows (npool x f) into w; r->knn_used says which search ran. */
static int view_graph(const float *x, int64_t npool, int64_t f, const prune_config_t *cfg, csr_t *w, prune_result_t *r) {
    if (cfg->knn_k < 1 || cfg->knn_k >= npool)
        return inca_fail(INCA_EINVAL, "--knn: expected 1 <= k < pool size (%lld), got %d", (long long)npool, cfg->knn_k);
    int32_t *nbr = inca_malloc((size_t)npool * (size_t)cfg->knn_k * sizeof *nbr);
    if (!nbr) return INCA_ENOMEM;
    r->knn_used = cfg->knn_search == PRUNE_KNN_AUTO
                      ? (knn_faiss_available() && npool >= PRUNE_KNN_FAISS_ROWS ? PRUNE_KNN_FAISS : PRUNE_KNN_EXACT)
                      : cfg->knn_search;
    int rc;
    if (r->knn_used == PRUNE_KNN_FAISS) {
        knn_faiss_opts_t fo = cfg->faiss;
        fo.seed = cfg->seed;
        rc = knn_faiss(x, npool, f, cfg->knn_k, cfg->metric, &fo, nbr, NULL);
    } else rc = knn_exact(x, npool, f, cfg->knn_k, cfg->metric, nbr, NULL);
    if (!rc) rc = knn_graph(nbr, npool, cfg->knn_k, w);
    inca_free(nbr);
    return rc;
}

/* View kf's kNN graph in w, built on first use (the caller frees it): --ssl auto spreads and
 * smooths over the same graph. The time goes to stage knn. With rows != NULL the view's rows
 * come back too (*rows, *own, *fv as view_rows gives them), built now or again. */
static int view_graph_once(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int kf,
                           csr_t *w, prune_result_t *r, const float **rows, float **own, int64_t *fv) {
    if (w->rowptr && !rows) return INCA_OK;
    const double t0 = inca_now();
    const float *x = NULL;
    float *o = NULL;
    int64_t f = 0;
    int rc = view_rows(dv, pool, npool, cfg, kf, &x, &o, &f);
    if (!rc && !w->rowptr) rc = view_graph(x, npool, f, cfg, w, r);
    r->sec[PRUNE_ST_KNN] += inca_now() - t0;
    if (rc || !rows) {
        inca_free(o);
        return rc;
    }
    *rows = x;
    *own = o;
    *fv = f;
    return INCA_OK;
}

/* After a pseudo-labeller: the labelled rows keep their labels (confidence 1); rows it left
 * without one take the most frequent visible class, confidence 0. */
static int pseudo_finish(const dataset_t *dv, const int64_t *pool, int64_t npool, prune_result_t *r) {
    int64_t *cnt = inca_calloc((size_t)dv->c, sizeof *cnt);
    if (!cnt) return INCA_ENOMEM;
    for (int64_t i = 0; i < npool; i++)
        if (dv->y[pool[i]] >= 0) cnt[dv->y[pool[i]]]++;
    int32_t major = 0;
    for (int32_t k = 1; k < dv->c; k++) if (cnt[k] > cnt[major]) major = k;
    inca_free(cnt);
    for (int64_t i = 0; i < npool; i++) {
        int32_t v = dv->y[pool[i]];
        if (v >= 0) { r->pseudo[i] = v; r->conf[i] = 1.0f; }
        else if (r->pseudo[i] < 0) { r->pseudo[i] = major; r->conf[i] = 0.0f; }
    }
    return INCA_OK;
}

/* Label spreading over the dataset's graph (use_graph) or view kf's kNN graph w (built on the
 * first call and kept for the next: the caller frees it). */
static int pseudo_labelprop(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg,
                            int use_graph, int kf, prune_result_t *r, csr_t *w) {
    int rc = INCA_OK;
    int32_t c = dv->c;
    int32_t *ylab = NULL, *lab = NULL;
    float *conf = NULL, *fsp = NULL;
    if (use_graph) {
        const double t0 = inca_now();
        /* spread over the whole graph (visible labels exist only in the pool) */
        lab = inca_malloc((size_t)dv->n * sizeof *lab);
        conf = inca_malloc((size_t)dv->n * sizeof *conf);
        if (!lab || !conf) { rc = INCA_ENOMEM; goto done; }
        if (cfg->cmn && !(fsp = inca_malloc((size_t)dv->n * (size_t)c * sizeof *fsp))) { rc = INCA_ENOMEM; goto done; }
        rc = labelprop_spread(&dv->adj, dv->y, c, cfg->alpha, cfg->iters, lab, conf, fsp);
        if (!rc && cfg->cmn) rc = labelprop_class_mass(fsp, dv->n, c, dv->y, lab, conf);
        if (rc) goto done;
        for (int64_t i = 0; i < npool; i++) { r->pseudo[i] = lab[pool[i]]; r->conf[i] = conf[pool[i]]; }
        if (!(rc = pseudo_finish(dv, pool, npool, r))) r->sec[PRUNE_ST_SPREAD] = inca_now() - t0;
        goto done;
    }
    if ((rc = view_graph_once(dv, pool, npool, cfg, kf, w, r, NULL, NULL, NULL))) goto done;
    const double t0 = inca_now();
    ylab = inca_malloc((size_t)npool * sizeof *ylab);
    if (!ylab) { rc = INCA_ENOMEM; goto done; }
    for (int64_t i = 0; i < npool; i++) ylab[i] = dv->y[pool[i]];
    if (cfg->cmn && !(fsp = inca_malloc((size_t)npool * (size_t)c * sizeof *fsp))) { rc = INCA_ENOMEM; goto done; }
    rc = labelprop_spread(w, ylab, c, cfg->alpha, cfg->iters, r->pseudo, r->conf, fsp);
    if (!rc && cfg->cmn) rc = labelprop_class_mass(fsp, npool, c, ylab, r->pseudo, r->conf);
    if (!rc) rc = pseudo_finish(dv, pool, npool, r);
    if (!rc) r->sec[PRUNE_ST_SPREAD] = inca_now() - t0;
done:
    inca_free(ylab);
    inca_free(lab);
    inca_free(conf);
    inca_free(fsp);
    return rc;
}

/* SGC's graph and rows: the dataset's graph and every node's features (use_graph), or view kf's
 * kNN graph (built once into w) and the view's rows (*own: what to free). */
static int sgc_source(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                      int kf, csr_t *w, prune_result_t *r, const csr_t **g, const float **x, float **own, int64_t *n,
                      int64_t *f) {
    *own = NULL;
    if (use_graph) {
        if (dv->f < 1 || !dv->x) return inca_fail(INCA_EINVAL, "--ssl sgc: the dataset has no features to smooth");
        *g = &dv->adj;
        *x = dv->x;
        *n = dv->n;
        *f = dv->f;
        return INCA_OK;
    }
    *g = w;
    *n = npool;
    return view_graph_once(dv, pool, npool, cfg, kf, w, r, x, own, f);
}

/* The visible labels of SGC's rows (n: the graph's nodes, or the pool positions of a view) for
 * Correct and Smooth, with the pool positions hide[t] for t = fold, fold + step, ... hidden
 * (hide NULL: none). */
static void cs_labels(const dataset_t *dv, const int64_t *pool, int64_t npool, int use_graph, const int64_t *hide,
                      int64_t nhide, int fold, int step, int32_t *y) {
    if (use_graph) memcpy(y, dv->y, (size_t)dv->n * sizeof *y);
    else for (int64_t i = 0; i < npool; i++) y[i] = dv->y[pool[i]];
    for (int64_t t = fold; hide && t < nhide; t += step) y[use_graph ? pool[hide[t]] : hide[t]] = -1;
}

/* SGC (pruning/sgc.h) over the dataset's graph (use_graph) or view kf's kNN graph w: fitted to the
 * labelled pool rows' hop features, then every row predicted in one sweep; with cs, its
 * probabilities corrected and smoothed over the same graph (pruning/cs.h). */
static int pseudo_sgc(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                      int kf, int cs, prune_result_t *r, csr_t *w) {
    sgc_opts_t o;
    sgc_opts_default(&o);
    const csr_t *g = NULL;
    const float *x = NULL;
    float *own = NULL, *zl = NULL, *wt = NULL, *conf = NULL, *probs = NULL;
    int64_t n = 0, f = 0, m = 0, *rows = NULL;
    int32_t *yl = NULL, *lab = NULL, *ycs = NULL;
    int rc = sgc_source(dv, pool, npool, cfg, use_graph, kf, w, r, &g, &x, &own, &n, &f);
    if (rc) return rc;
    const double t0 = inca_now();
    rows = inca_malloc((size_t)npool * sizeof *rows);
    yl = inca_malloc((size_t)npool * sizeof *yl);
    lab = inca_malloc((size_t)n * sizeof *lab);
    conf = inca_malloc((size_t)n * sizeof *conf);
    if (!rows || !yl || !lab || !conf) { rc = INCA_ENOMEM; goto done; }
    for (int64_t i = 0; i < npool; i++)
        if (dv->y[pool[i]] >= 0) {
            rows[m] = use_graph ? pool[i] : i;
            yl[m++] = dv->y[pool[i]];
        }
    if (m == 0) { rc = inca_fail(INCA_EINVAL, "--ssl %s: no labelled row in the pool", cs ? "cs" : "sgc"); goto done; }
    if ((rc = sgc_features(g, x, n, f, &o, rows, m, &zl))) goto done;
    if ((rc = sgc_fit(zl, m, f * o.nhops, yl, dv->c, &o, &wt))) goto done;
    if (!cs) {
        if ((rc = sgc_predict_graph(g, x, n, f, &o, wt, dv->c, lab, conf))) goto done;
    } else {
        cs_opts_t co;
        cs_opts_default(&co);
        co.iters = cfg->iters;
        probs = inca_malloc((size_t)n * (size_t)dv->c * sizeof *probs);
        ycs = inca_malloc((size_t)n * sizeof *ycs);
        if (!probs || !ycs) { rc = INCA_ENOMEM; goto done; }
        const float *wl[1] = {wt};
        if ((rc = sgc_probs_graph(g, x, n, f, &o, wl, 1, dv->c, probs))) goto done;
        cs_labels(dv, pool, npool, use_graph, NULL, 0, 0, 1, ycs);
        if ((rc = cs_run(g, probs, dv->c, ycs, &co, lab, conf, NULL))) goto done;
    }
    for (int64_t i = 0; i < npool; i++) {
        const int64_t row = use_graph ? pool[i] : i;
        r->pseudo[i] = lab[row];
        r->conf[i] = conf[row];
    }
    rc = pseudo_finish(dv, pool, npool, r);
    r->sec[PRUNE_ST_SPREAD] = inca_now() - t0;
done:
    inca_free(own);
    inca_free(zl);
    inca_free(wt);
    inca_free(conf);
    inca_free(probs);
    inca_free(rows);
    inca_free(yl);
    inca_free(ycs);
    inca_free(lab);
    return rc;
}

/* SGC's part of the check: the labelled rows' hop features once (lp: their pool positions in the
 * check's shuffled order; row t is in fold t % PRUNE_SSL_CHECK_FOLDS), then per fold a fit on the
 * other folds and a prediction of the hidden one; hits counted into *hit. With cs, Correct and
 * Smooth's hits instead: every row's probabilities under the five fold fits in one sweep, then per
 * fold C&S from the other folds' labels. */
static int sgc_check(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                     int kf, csr_t *w, const int64_t *lp, int64_t nl, prune_result_t *r, int cs, int64_t *hit) {
    enum { NF = PRUNE_SSL_CHECK_FOLDS };
    sgc_opts_t o;
    sgc_opts_default(&o);
    const csr_t *g = NULL;
    const float *x = NULL;
    float *own = NULL, *zl = NULL, *wt[NF] = {NULL}, *probs = NULL;
    csr_t sn = {0};
    int64_t n = 0, f = 0, *rows = NULL;
    int32_t *yt = NULL, *yf = NULL, *pred = NULL, *ycs = NULL, *lab = NULL;
    int rc = sgc_source(dv, pool, npool, cfg, use_graph, kf, w, r, &g, &x, &own, &n, &f);
    if (rc) return rc;
    rows = inca_malloc((size_t)nl * sizeof *rows);
    yt = inca_malloc((size_t)nl * sizeof *yt);
    yf = inca_malloc((size_t)nl * sizeof *yf);
    pred = inca_malloc((size_t)nl * sizeof *pred);
    if (!rows || !yt || !yf || !pred) { rc = INCA_ENOMEM; goto done; }
    for (int64_t t = 0; t < nl; t++) {
        rows[t] = use_graph ? pool[lp[t]] : lp[t];
        yt[t] = dv->y[pool[lp[t]]];
    }
    if ((rc = sgc_features(g, x, n, f, &o, rows, nl, &zl))) goto done;
    for (int fold = 0; fold < NF && !rc; fold++) {
        for (int64_t t = 0; t < nl; t++) yf[t] = t % NF == fold ? -1 : yt[t];
        if ((rc = sgc_fit(zl, nl, f * o.nhops, yf, dv->c, &o, &wt[fold]))) break;
        if (cs) continue;
        if ((rc = sgc_predict(zl, nl, f * o.nhops, wt[fold], dv->c, pred, NULL))) break;
        for (int64_t t = fold; t < nl; t += NF) *hit += pred[t] == yt[t];
    }
    if (rc || !cs) goto done;
    cs_opts_t co;
    cs_opts_default(&co);
    co.iters = cfg->iters;
    probs = inca_malloc((size_t)NF * (size_t)n * (size_t)dv->c * sizeof *probs);
    ycs = inca_malloc((size_t)n * sizeof *ycs);
    lab = inca_malloc((size_t)n * sizeof *lab);
    if (!probs || !ycs || !lab) { rc = INCA_ENOMEM; goto done; }
    if ((rc = sgc_probs_graph(g, x, n, f, &o, (const float *const *)wt, NF, dv->c, probs))) goto done;
    if ((rc = labelprop_operator(g, &sn))) goto done;   /* one normalised graph for the five folds */
    for (int fold = 0; fold < NF && !rc; fold++) {
        cs_labels(dv, pool, npool, use_graph, lp, nl, fold, NF, ycs);
        rc = cs_run_op(&sn, probs + (int64_t)fold * n * dv->c, dv->c, ycs, &co, lab, NULL, NULL);
        for (int64_t t = fold; t < nl && !rc; t += NF) *hit += lab[rows[t]] == yt[t];
    }
done:
    inca_free(own);
    inca_free(zl);
    for (int k = 0; k < NF; k++) inca_free(wt[k]);
    inca_free(probs);
    csr_free(&sn);
    inca_free(rows);
    inca_free(yt);
    inca_free(yf);
    inca_free(pred);
    inca_free(ycs);
    inca_free(lab);
    return rc;
}

static int f32_cmp(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* ---- proxy training with the dynamics recorder ---- */
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

/* The proxy on the pool's pseudo-labels, recording r->dyn. A relabelling round instead (out:
 * the proxy dataset's rows x c) trains on the pool rows whose confidence is at least conf_min
 * only, records nothing, and leaves its eval logits after the last epoch in out. */
static int proxy_train(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg,
                       int use_graph, prune_result_t *r, float *out, float conf_min) {
    int rc = INCA_OK;
    int32_t c = dv->c;
    int64_t n = use_graph ? dv->n : npool;
    int32_t *yp = inca_malloc((size_t)n * sizeof *yp);
    int64_t *rows = inca_malloc((size_t)npool * sizeof *rows);
    float *probs = NULL, *xp = NULL;
    int64_t *pos = NULL;
    train_result_t tr = {0};
    if (!yp || !rows) { rc = INCA_ENOMEM; goto done; }
    /* graph: the whole graph with pseudo-labels on the pool; features: the pool rows alone */
    dataset_t pd = *dv;   /* shallow: same graph and features, pseudo-labels, no splits */
    for (int s = 0; s < SPLIT_COUNT; s++) { pd.split[s] = NULL; pd.split_n[s] = 0; }
    for (int64_t i = 0; i < n; i++) yp[i] = -1;
    for (int64_t i = 0; i < npool; i++) {
        rows[i] = use_graph ? pool[i] : i;
        yp[rows[i]] = r->pseudo[i];
    }
    if (!use_graph) {
        memset(&pd.adj, 0, sizeof pd.adj);
        pd.n = npool;
        int contiguous = 1;
        for (int64_t i = 0; i < npool && contiguous; i++) contiguous = pool[i] == pool[0] + i;
        if (contiguous) {
            pd.x = dv->x + pool[0] * dv->f;
        } else {
            xp = inca_malloc((size_t)npool * (size_t)dv->f * sizeof *xp);
            if (!xp) { rc = INCA_ENOMEM; goto done; }
            for (int64_t i = 0; i < npool; i++) memcpy(xp + i * dv->f, dv->x + pool[i] * dv->f, (size_t)dv->f * sizeof *xp);
            pd.x = xp;
        }
    }
    pd.y = yp;
    train_config_t tc = cfg->proxy;
    if (!tc.model[0]) snprintf(tc.model, sizeof tc.model, "%s", use_graph ? "gcn" : "mlp");
    if (!tc.method[0]) snprintf(tc.method, sizeof tc.method, "full");
    const int minibatch = strcmp(tc.method, "full") != 0;   /* prune_run refused it on a table */
    r->dyn_from = cfg->dyn_from == PRUNE_DYN_AUTO ? (minibatch ? PRUNE_DYN_STEPS : PRUNE_DYN_EVAL) : cfg->dyn_from;
    tc.runs = 1;
    tc.seed = cfg->seed;
    tc.out_logits = out;   /* no validation split: the last epoch's */
    tc.metrics_path = NULL;
    if (tc.epochs < 1) { rc = inca_fail(INCA_EINVAL, "--proxy-epochs: expected >= 1, got %d", tc.epochs); goto done; }
    if (out) {   /* a relabelling round: the confident rows, no dynamics */
        int64_t m = 0;
        for (int64_t i = 0; i < npool; i++)
            if (r->conf[i] >= conf_min) rows[m++] = rows[i];
        rc = train_run(&pd, &tc, rows, m, &tr);
        if (rc) inca_fail_ctx(rc, "proxy training (relabelling): ");
        goto done;
    }
    /* eval: every pool row's probabilities at once; steps: one row at a time */
    if (!(probs = inca_malloc((size_t)(r->dyn_from == PRUNE_DYN_STEPS ? 1 : npool) * (size_t)c * sizeof *probs))) {
        rc = INCA_ENOMEM;
        goto done;
    }
    const int compact = cfg->dyn_layout == PRUNE_DYN_COMPACT ||
                        (cfg->dyn_layout == PRUNE_DYN_AUTO && dyn_full_bytes(npool, tc.epochs) > PRUNE_DYN_COMPACT_BYTES);
    rc = compact ? dyn_init_compact(&r->dyn, npool, tc.epochs, cfg->el2n_epochs) : dyn_init(&r->dyn, npool, tc.epochs);
    if (rc) goto done;
    dyn_ctx_t ctx = {&r->dyn, rows, r->pseudo, probs, NULL};
    if (r->dyn_from == PRUNE_DYN_STEPS) {
        if (!(pos = inca_malloc((size_t)(n ? n : 1) * sizeof *pos))) { rc = INCA_ENOMEM; goto done; }
        for (int64_t v = 0; v < n; v++) pos[v] = -1;
        for (int64_t i = 0; i < npool; i++) pos[rows[i]] = i;
        ctx.pos = pos;
        tc.on_step = dyn_on_step;
        tc.on_step_ctx = &ctx;
    } else {
        tc.on_epoch = dyn_on_epoch;
        tc.on_epoch_ctx = &ctx;
    }
    r->dyn_bytes = dyn_bytes(&r->dyn);
    rc = train_run(&pd, &tc, rows, npool, &tr);
    if (rc) { inca_fail_ctx(rc, "proxy training: "); goto done; }
    if (r->dyn.epochs < 1) rc = inca_fail(INCA_ERR, "proxy training recorded no epoch");
    else if ((rc = dyn_check_complete(&r->dyn))) inca_fail_ctx(rc, "proxy training (--proxy-method %s): ", tc.method);
done:
    train_result_free(&tr);
    inca_free(yp);
    inca_free(rows);
    inca_free(probs);
    inca_free(xp);
    inca_free(pos);
    return rc;
}

/* The unlabelled pool rows take the argmax of the proxy's logits lg (rows: node ids on a graph,
 * pool positions on a table), confidence = its softmax probability; labelled rows keep theirs. */
static void relabel_from_logits(const dataset_t *dv, const int64_t *pool, int64_t npool, int on_graph, const float *lg,
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

/* --ssl proxy: the proxy (its model, method, epochs) trained on the labelled rows alone predicts
 * the rest of the pool. Where the features carry the class and the graph does not (a
 * heterophilous graph), this beats spreading over the graph (README: the 1M-node graph). */
static int pseudo_proxy(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int on_graph,
                        prune_result_t *r) {
    double t0 = inca_now();
    float *lg = inca_malloc((size_t)(on_graph ? dv->n : npool) * (size_t)dv->c * sizeof *lg);
    if (!lg) return INCA_ENOMEM;
    for (int64_t i = 0; i < npool; i++) {
        r->pseudo[i] = dv->y[pool[i]];
        r->conf[i] = dv->y[pool[i]] >= 0 ? 1.0f : 0.0f;
    }
    int rc = proxy_train(dv, pool, npool, cfg, on_graph, r, lg, 1.0f);   /* the rows of confidence 1: the labelled */
    if (!rc) relabel_from_logits(dv, pool, npool, on_graph, lg, r);
    inca_free(lg);
    r->sec[PRUNE_ST_SPREAD] = inca_now() - t0;
    return rc;
}

/* The candidates --ssl and --knn-features leave open: spreading and SGC (over the graph, or over
 * each kNN view allowed; sqrt-whiten only for non-negative features; SGC only with features) and
 * the proxy; SGC then C&S over each view for --ssl cs. */
static int ssl_candidates(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                          int cand[PRUNE_CAND_COUNT]) {
    int nc = 0, views[PRUNE_KF_COUNT] = {0};
    for (int k = 0; k < PRUNE_CAND_COUNT; k++) cand[k] = 0;
    if (cfg->ssl == PRUNE_SSL_SELFTRAIN) return 0;
    const int spread = cfg->ssl == PRUNE_SSL_AUTO || cfg->ssl == PRUNE_SSL_LABELPROP;
    const int feat = dv->f >= 1 && dv->x != NULL;
    const int sgc = (cfg->ssl == PRUNE_SSL_AUTO || cfg->ssl == PRUNE_SSL_SGC) && feat;
    /* C&S is asked for, never auto's: against SGC alone (README, 3 draws each) it gains a few
     * tenths on Fashion-MNIST's and two tables' kNN graphs and on Facebook's graph at 20% labels,
     * and loses up to a point on Cora's graph and 3.5 points over Cora's kNN graph; the check's few
     * hundred labelled rows cannot tell gains that small apart (on Cora it preferred C&S by 4 rows
     * of 325, where C&S is worse) */
    const int cs = cfg->ssl == PRUNE_SSL_CS && feat;
    if (use_graph) views[0] = 1;
    else if (cfg->knn_features != PRUNE_KF_AUTO) views[cfg->knn_features] = 1;
    else if (spread || sgc || cs) {
        int nonneg = 1;
        for (int64_t i = 0; i < npool && nonneg; i++)
            for (int64_t t = 0; t < dv->f && nonneg; t++) nonneg = dv->x[pool[i] * dv->f + t] >= 0;
        views[PRUNE_KF_RAW] = views[PRUNE_KF_WHITEN] = 1;
        views[PRUNE_KF_SQRT_WHITEN] = nonneg;
    }
    for (int v = 0; v < PRUNE_KF_COUNT; v++) {
        cand[PRUNE_CAND_LABELPROP + v] = spread && views[v];
        cand[PRUNE_CAND_SGC + v] = sgc && views[v];
        cand[PRUNE_CAND_CS + v] = cs && views[v];
    }
    if (cfg->ssl == PRUNE_SSL_AUTO || cfg->ssl == PRUNE_SSL_PROXY) cand[PRUNE_CAND_PROXY] = 1;
    for (int k = 0; k < PRUNE_CAND_COUNT; k++) nc += cand[k];
    return nc;
}

/* The check that picks among several candidates: the labelled rows shuffled with the seed and
 * dealt into PRUNE_SSL_CHECK_FOLDS folds; each fold is hidden in turn, every candidate labels the
 * pool from the other folds' labels, and it scores the hidden fold's rows it gets right. The
 * candidate right most often wins (ties: the earlier, spreading before the proxy, the plainer view
 * first). No hidden label is read. Fewer than PRUNE_SSL_CHECK_MIN labelled rows: the first
 * candidate, unchecked. kNN graphs are built once per view (w). */
#define PRUNE_SSL_CHECK_MIN 10
static int ssl_choose(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                      int proxy_graph, const int cand[PRUNE_CAND_COUNT], csr_t *w, prune_result_t *r, int *chosen) {
    int rc = INCA_OK;
    int64_t nl = 0;
    for (int64_t i = 0; i < npool; i++) nl += dv->y[pool[i]] >= 0;
    *chosen = -1;
    for (int k = 0; k < PRUNE_CAND_COUNT && *chosen < 0; k++) if (cand[k]) *chosen = k;
    r->ssl_check_n = 0;
    for (int k = 0; k < PRUNE_CAND_COUNT; k++) r->ssl_check_acc[k] = NAN;
    if (nl < PRUNE_SSL_CHECK_MIN) return INCA_OK;
    int64_t *lp = inca_malloc((size_t)nl * sizeof *lp), hit[PRUNE_CAND_COUNT] = {0};
    int32_t *yf = inca_malloc((size_t)dv->n * sizeof *yf);
    prune_result_t h = {0};
    h.npool = npool;
    h.pseudo = inca_malloc((size_t)npool * sizeof *h.pseudo);
    h.conf = inca_malloc((size_t)npool * sizeof *h.conf);
    if (!lp || !yf || !h.pseudo || !h.conf) { rc = INCA_ENOMEM; goto done; }
    nl = 0;
    for (int64_t i = 0; i < npool; i++) if (dv->y[pool[i]] >= 0) lp[nl++] = i;
    rng_t g;
    rng_seed(&g, rng_hash64(cfg->seed, 0x55c4ec, 0));
    rng_shuffle_i64(&g, lp, nl);
    dataset_t df = *dv;
    df.y = yf;
    h.knn_used = -1;
    for (int k = 0; k < PRUNE_CAND_COUNT && !rc; k++) {
        if (!cand[k]) continue;
        if (k >= PRUNE_CAND_SGC && k < PRUNE_CAND_PROXY) {   /* SGC or C&S: the labelled rows' features, once */
            const int v = k % PRUNE_KF_COUNT;
            train_log(&cfg->proxy, TRAIN_LOG_PROGRESS, "pseudo-label check: %s", prune_ssl_cand_name(k, use_graph));
            rc = sgc_check(dv, pool, npool, cfg, use_graph, v, &w[v], lp, nl, r, k >= PRUNE_CAND_CS, &hit[k]);
            continue;
        }
        for (int fold = 0; fold < PRUNE_SSL_CHECK_FOLDS && !rc; fold++) {
            memcpy(yf, dv->y, (size_t)dv->n * sizeof *yf);
            for (int64_t t = fold; t < nl; t += PRUNE_SSL_CHECK_FOLDS) yf[pool[lp[t]]] = -1;
            train_log(&cfg->proxy, TRAIN_LOG_PROGRESS, "pseudo-label check, fold %d of %d: %s", fold + 1, PRUNE_SSL_CHECK_FOLDS,
                      prune_ssl_cand_name(k, use_graph));
            h.sec[PRUNE_ST_KNN] = 0;
            if (k == PRUNE_CAND_PROXY) rc = pseudo_proxy(&df, pool, npool, cfg, proxy_graph, &h);
            else rc = pseudo_labelprop(&df, pool, npool, cfg, use_graph, k - PRUNE_CAND_LABELPROP, &h, &w[k - PRUNE_CAND_LABELPROP]);
            r->sec[PRUNE_ST_KNN] += h.sec[PRUNE_ST_KNN];   /* a view's graph, built on its first use */
            for (int64_t t = fold; t < nl && !rc; t += PRUNE_SSL_CHECK_FOLDS) hit[k] += h.pseudo[lp[t]] == dv->y[pool[lp[t]]];
            if (!rc && k != PRUNE_CAND_PROXY && h.knn_used >= 0) r->knn_used = h.knn_used;
        }
    }
    if (rc) goto done;
    r->ssl_check_n = nl;
    for (int k = 0; k < PRUNE_CAND_COUNT; k++) {
        if (!cand[k]) continue;
        r->ssl_check_acc[k] = (double)hit[k] / (double)nl;
        if (hit[k] > hit[*chosen]) *chosen = k;
    }
done:
    inca_free(lp);
    inca_free(yf);
    inca_free(h.pseudo);
    inca_free(h.conf);
    dyn_free(&h.dyn);
    return rc;
}

int prune_score_select(const prune_config_t *cfg, int32_t c, prune_result_t *r) {
    int rc = INCA_OK;
    int64_t *pos = NULL;
    double t0 = inca_now();
    train_log(&cfg->proxy, TRAIN_LOG_PROGRESS, "scores and selection");
    INCA_FREE(r->sel);
    if (!r->score || !r->aum) {   /* scored once: the next budgets of a curve select from the same scores */
        r->score = inca_malloc((size_t)(r->npool ? r->npool : 1) * sizeof *r->score);
        r->aum = inca_malloc((size_t)(r->npool ? r->npool : 1) * sizeof *r->aum);
        if (!r->score || !r->aum) return INCA_ENOMEM;
        rc = dyn_score(&r->dyn, SCORE_AUM, cfg->el2n_epochs, r->aum);
        if (!rc) rc = dyn_score(&r->dyn, cfg->score, cfg->el2n_epochs, r->score);
        if (rc) {
            INCA_FREE(r->score);
            INCA_FREE(r->aum);
            return rc;
        }
        r->sec[PRUNE_ST_SCORE] = inca_now() - t0;
    }
    t0 = inca_now();
    int64_t np = 0;
    rc = select_run(&cfg->sel, r->score, score_higher_is_harder(cfg->score), r->aum, r->pseudo, c, r->npool, &pos, &np);
    if (rc) return rc;
    for (int64_t t = 0; t < np; t++) pos[t] = r->pool[pos[t]];
    qsort(pos, (size_t)np, sizeof *pos, i64_cmp);
    r->sel = pos;
    r->nsel = np;
    r->sec[PRUNE_ST_SELECT] = inca_now() - t0;
    return INCA_OK;
}

int prune_run(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, prune_result_t *r) {
    memset(r, 0, sizeof *r);
    r->knn_used = -1;
    if (!dv->y) return inca_fail(INCA_EINVAL, "prune: the dataset has no labels");
    if (dv->c < 2) return inca_fail(INCA_EINVAL, "prune: need at least 2 classes, got %d", dv->c);
    if (npool < 2) return inca_fail(INCA_EINVAL, "prune: the pool (train split) holds %lld examples; need >= 2", (long long)npool);
    for (int64_t i = 0; i < npool; i++)
        if (pool[i] < 0 || pool[i] >= dv->n) return inca_fail(INCA_EINVAL, "prune: pool id %lld outside [0, %lld)", (long long)pool[i], (long long)dv->n);
    int has_graph = dv->adj.rowptr != NULL && dv->adj.nnz > 0;
    int use_graph = cfg->graph < 0 ? has_graph : cfg->graph;
    if (use_graph && !has_graph) return inca_fail(INCA_EINVAL, "--graph: the dataset has no graph");
    /* the proxy: a graph method trains on the dataset's graph even when the spreading used a kNN
     * graph (--graph knn); refused before any work on a table */
    const int proxy_mb = cfg->proxy.method[0] && strcmp(cfg->proxy.method, "full") != 0;
    if (proxy_mb && !has_graph)
        return inca_fail(INCA_EINVAL, "--proxy-method %s: needs a graph (a table's proxy is full, in mini-batches with "
                         "--proxy-batch-size)", cfg->proxy.method);
    const int proxy_graph = use_graph || proxy_mb;
    int rc = INCA_OK;
    r->npool = npool;
    r->pool = inca_malloc((size_t)npool * sizeof *r->pool);
    r->pseudo = inca_malloc((size_t)npool * sizeof *r->pseudo);
    r->conf = inca_malloc((size_t)npool * sizeof *r->conf);
    if (!r->pool || !r->pseudo || !r->conf) { rc = INCA_ENOMEM; goto fail; }
    memcpy(r->pool, pool, (size_t)npool * sizeof *pool);
    double t0 = inca_now();
    /* the stages through the proxy's status callback (a progress line on a terminal) */
    csr_t w[PRUNE_KF_COUNT] = {{0}};
    int cand[PRUNE_CAND_COUNT], chosen = -1;
    const int ncand = ssl_candidates(dv, pool, npool, cfg, use_graph, cand);
    r->ssl_used = cfg->ssl;
    r->knn_features_used = -1;
    r->ssl_check_n = 0;
    for (int k = 0; k < PRUNE_CAND_COUNT; k++) r->ssl_check_acc[k] = NAN;
    if (ncand > 1) {
        rc = ssl_choose(dv, pool, npool, cfg, use_graph, proxy_graph, cand, w, r, &chosen);
        r->sec[PRUNE_ST_CHECK] = inca_now() - t0 - r->sec[PRUNE_ST_KNN];   /* the kNN graphs: their own stage */
        t0 = inca_now();
    } else for (int k = 0; k < PRUNE_CAND_COUNT; k++) if (cand[k]) chosen = k;
    /* SGC is the one pseudo-labeller that may have no candidate: it needs features */
    if (!rc && chosen < 0 && cfg->ssl != PRUNE_SSL_SELFTRAIN)
        rc = inca_fail(INCA_EINVAL, "--ssl %s: the dataset has no features to smooth", prune_ssl_name(cfg->ssl));
    if (!rc && chosen >= 0) {
        r->ssl_used = chosen == PRUNE_CAND_PROXY ? PRUNE_SSL_PROXY
                      : chosen >= PRUNE_CAND_CS  ? PRUNE_SSL_CS
                      : chosen >= PRUNE_CAND_SGC ? PRUNE_SSL_SGC
                                                 : PRUNE_SSL_LABELPROP;
        if (chosen != PRUNE_CAND_PROXY && !use_graph) r->knn_features_used = chosen % PRUNE_KF_COUNT;
    }
    if (!rc) train_log(&cfg->proxy, TRAIN_LOG_PROGRESS, "pseudo-labels (%s)", prune_ssl_name(r->ssl_used));
    if (rc) {
    } else if (r->ssl_used == PRUNE_SSL_SELFTRAIN) {
        selftrain_opts_t st = cfg->st;
        st.graph = use_graph;
        st.hidden = cfg->proxy.hidden;
        st.layers = cfg->proxy.layers;
        st.lr = cfg->proxy.lr;
        st.dropout = cfg->proxy.dropout;
        st.weight_decay = cfg->proxy.weight_decay;
        st.seed = cfg->seed;
        rc = selftrain_run(dv, pool, npool, &st, r->pseudo, r->conf);
        r->sec[PRUNE_ST_SPREAD] = inca_now() - t0;
    } else if (r->ssl_used == PRUNE_SSL_PROXY) {
        rc = pseudo_proxy(dv, pool, npool, cfg, proxy_graph, r);
    } else if (r->ssl_used == PRUNE_SSL_SGC || r->ssl_used == PRUNE_SSL_CS) {
        const int kf = chosen % PRUNE_KF_COUNT;
        rc = pseudo_sgc(dv, pool, npool, cfg, use_graph, kf, r->ssl_used == PRUNE_SSL_CS, r, &w[kf]);
    } else {
        const int kf = chosen - PRUNE_CAND_LABELPROP;
        rc = pseudo_labelprop(dv, pool, npool, cfg, use_graph, kf, r, &w[kf]);
    }
    for (int k = 0; k < PRUNE_KF_COUNT; k++) csr_free(&w[k]);
    if (rc) goto fail;
    t0 = inca_now();
    /* relabelling: the proxy trained on the pseudo-labels relabels the unlabelled pool with its
     * own predictions (a network fitted to noisy labels predicts better than them), then trains
     * again; the labelled subset keeps its labels */
    if (cfg->relabel > 0) {
        const int64_t rows_n = proxy_graph ? dv->n : npool;
        float *lg = inca_malloc((size_t)rows_n * (size_t)dv->c * sizeof *lg);
        if (!lg) { rc = INCA_ENOMEM; goto fail; }
        float *cs = inca_malloc((size_t)npool * sizeof *cs);
        if (!cs) { inca_free(lg); rc = INCA_ENOMEM; goto fail; }
        for (int round = 0; round < cfg->relabel && !rc; round++) {
            train_log(&cfg->proxy, TRAIN_LOG_PROGRESS, "relabelling round %d of %d", round + 1, cfg->relabel);
            /* the confidence that keeps the top --relabel-confident share of the pool */
            memcpy(cs, r->conf, (size_t)npool * sizeof *cs);
            qsort(cs, (size_t)npool, sizeof *cs, f32_cmp);
            int64_t at = (int64_t)floor((1.0 - cfg->relabel_confident) * (double)npool);
            if (at >= npool) at = npool - 1;
            rc = proxy_train(dv, pool, npool, cfg, proxy_graph, r, lg, cs[at < 0 ? 0 : at]);
            if (!rc) relabel_from_logits(dv, pool, npool, proxy_graph, lg, r);
        }
        inca_free(lg);
        inca_free(cs);
        if (rc) goto fail;
    }
    train_log(&cfg->proxy, TRAIN_LOG_PROGRESS, "proxy training (%s)", cfg->proxy.model[0] ? cfg->proxy.model : "auto");
    rc = proxy_train(dv, pool, npool, cfg, proxy_graph, r, NULL, 0);
    if (rc) goto fail;
    r->sec[PRUNE_ST_PROXY] = inca_now() - t0;
    rc = prune_score_select(cfg, dv->c, r);
    if (rc) goto fail;
    return INCA_OK;
fail:
    prune_result_free(r);
    return rc;
}

/* ---- dynamics in the store ---- */
#define DYN_MAGIC 0x314e5944u   /* "DYN1" */
typedef struct dyn_header {
    uint32_t magic, version;
    int64_t npool;
    int32_t epochs, classes;
    char key[1024];
    int32_t el2n_epochs, dyn_from;   /* the compact EL2N window (version 2); PRUNE_DYN_EVAL | _STEPS */
    int32_t ssl_used, knn_features_used;   /* the pseudo-labeller that ran, its view, and the check */
    int64_t ssl_check_n;
    double ssl_check_acc[PRUNE_CAND_COUNT];
} dyn_header_t;

static void dyn_name(char *buf, size_t len, const char *tag, const char *what) {
    snprintf(buf, len, "dyn/%s/%s", tag, what);
}

/* version 1: the full matrices; version 2: the compact running sums (dyn_init_compact) */
static const char *const dyn_full_what[4] = {"py", "pmo", "sq", "correct"};
static const char *const dyn_compact_what[7] = {"s_margin", "s_el2n", "s_py", "s_py2", "n_forget", "n_correct", "state"};
static const store_dtype_t dyn_compact_dt[7] = {DT_F64, DT_F64, DT_F64, DT_F64, DT_I32, DT_I32, DT_U8};

static void **dyn_compact_ptr(prune_dyn_t *d, int k) {
    void **p[7] = {(void **)&d->s_margin, (void **)&d->s_el2n, (void **)&d->s_py, (void **)&d->s_py2,
                   (void **)&d->n_forget, (void **)&d->n_correct, (void **)&d->state};
    return p[k];
}

int prune_dyn_save(const char *path, const char *tag, const char *key, const prune_result_t *r, int32_t c) {
    store_t *s = NULL;
    store_wtx_t *w = NULL;
    dyn_header_t h;
    memset(&h, 0, sizeof h);
    h.magic = DYN_MAGIC;
    h.version = r->dyn.compact ? 2 : 1;
    h.npool = r->npool;
    h.epochs = r->dyn.epochs;
    h.classes = c;
    if (r->dyn.compact) h.el2n_epochs = r->dyn.el2n_epochs;
    h.dyn_from = r->dyn_from;
    h.ssl_used = (int32_t)r->ssl_used;
    h.knn_features_used = r->knn_features_used;
    h.ssl_check_n = r->ssl_check_n;
    memcpy(h.ssl_check_acc, r->ssl_check_acc, sizeof h.ssl_check_acc);
    snprintf(h.key, sizeof h.key, "%s", key ? key : "");
    char rec[160], nm[160];
    snprintf(rec, sizeof rec, "dyn:%s", tag);
    const int64_t m = r->npool * r->dyn.epochs;
    int rc = store_open(path, STORE_RDWR, &s);
    if (!rc) rc = store_write_begin(s, &w);
    if (!rc) { dyn_name(nm, sizeof nm, tag, "pool"); rc = store_wtx_put_array(w, nm, DT_I64, r->pool, r->npool); }
    if (!rc) { dyn_name(nm, sizeof nm, tag, "pseudo"); rc = store_wtx_put_array(w, nm, DT_I32, r->pseudo, r->npool); }
    if (!rc) { dyn_name(nm, sizeof nm, tag, "conf"); rc = store_wtx_put_array(w, nm, DT_F32, r->conf, r->npool); }
    if (r->dyn.compact) {
        prune_dyn_t *d = (prune_dyn_t *)&r->dyn;
        for (int k = 0; k < 7 && !rc; k++) {
            dyn_name(nm, sizeof nm, tag, dyn_compact_what[k]);
            rc = store_wtx_put_array(w, nm, dyn_compact_dt[k], *dyn_compact_ptr(d, k), r->npool);
        }
    } else {
        const void *a[4] = {r->dyn.py, r->dyn.pmo, r->dyn.sq, r->dyn.correct};
        for (int k = 0; k < 4 && !rc; k++) {
            dyn_name(nm, sizeof nm, tag, dyn_full_what[k]);
            rc = store_wtx_put_array(w, nm, k == 3 ? DT_U8 : DT_F32, a[k], m);
        }
    }
    if (!rc) rc = store_wtx_put_record(w, rec, &h, sizeof h);
    if (!rc) rc = store_write_commit(&w);
    store_write_abort(&w);
    store_close(&s);
    if (rc) inca_fail_ctx(rc, "saving dynamics in %s: ", path);
    return rc;
}

int prune_dyn_load(const char *path, const char *tag, const char *key, prune_result_t *r, int32_t *c) {
    memset(r, 0, sizeof *r);
    store_t *s = NULL;
    char rec[160], name[160];
    snprintf(rec, sizeof rec, "dyn:%s", tag);
    const void *p = NULL;
    size_t len = 0;
    dyn_header_t h;
    int rc = store_open(path, STORE_RDONLY, &s);
    if (rc) return rc;
    rc = store_record_get(s, rec, &p, &len);
    if (rc == INCA_ENOTFOUND) { rc = inca_fail(INCA_ENOTFOUND, "%s: no stored dynamics '%s' (run inca prune without --reuse-dynamics first)", path, tag); goto done; }
    if (rc) goto done;
    if (len != sizeof h) {
        rc = inca_fail(INCA_EINVAL, "%s: record %s has %zu bytes, expected %zu (stored by an older inca?); rerun without "
                       "--reuse-dynamics", path, rec, len, sizeof h);
        goto done;
    }
    memcpy(&h, p, sizeof h);
    h.key[sizeof h.key - 1] = '\0';
    if (h.magic != DYN_MAGIC || (h.version != 1 && h.version != 2) || (h.version == 2 && h.el2n_epochs < 1) ||
        h.ssl_used < 0 || h.ssl_used >= PRUNE_SSL_COUNT || h.ssl_used == PRUNE_SSL_AUTO || h.knn_features_used < -1 || h.knn_features_used >= PRUNE_KF_COUNT) {
        rc = inca_fail(INCA_EINVAL, "%s: record %s is not a version-1 or -2 dynamics header", path, rec);
        goto done;
    }
    if (key && strcmp(key, h.key) != 0) {
        rc = inca_fail(INCA_EINVAL, "%s: stored dynamics '%s' were made with [%s], not [%s]; rerun without --reuse-dynamics", path, tag, h.key, key);
        goto done;
    }
    int64_t m = h.npool * h.epochs, got = 0;
    r->npool = h.npool;
    *c = h.classes;
    const char *what[3] = {"pool", "pseudo", "conf"};
    store_dtype_t dt[3] = {DT_I64, DT_I32, DT_F32};
    void **dst[3] = {(void **)&r->pool, (void **)&r->pseudo, (void **)&r->conf};
    for (int k = 0; k < 3 && !rc; k++) {
        dyn_name(name, sizeof name, tag, what[k]);
        rc = store_array_load(s, name, dt[k], dst[k], &got);
        if (!rc && got != h.npool)
            rc = inca_fail(INCA_EINVAL, "%s: array %s has %lld elements, expected %lld", path, name, (long long)got, (long long)h.npool);
    }
    r->knn_used = -1;   /* not known from the stored dynamics */
    r->dyn.n = h.npool;
    r->dyn.epochs = r->dyn.cap = h.epochs;
    r->dyn.compact = h.version == 2;
    r->dyn.el2n_epochs = h.el2n_epochs;
    r->dyn_from = h.dyn_from;
    r->ssl_used = (prune_ssl_t)h.ssl_used;
    r->knn_features_used = h.knn_features_used;
    r->ssl_check_n = h.ssl_check_n;
    memcpy(r->ssl_check_acc, h.ssl_check_acc, sizeof h.ssl_check_acc);
    for (int k = 0; k < (r->dyn.compact ? 7 : 4) && !rc; k++) {
        const int cp = r->dyn.compact;
        dyn_name(name, sizeof name, tag, cp ? dyn_compact_what[k] : dyn_full_what[k]);
        void **p = cp ? dyn_compact_ptr(&r->dyn, k) : k == 0 ? (void **)&r->dyn.py : k == 1 ? (void **)&r->dyn.pmo
                                                     : k == 2 ? (void **)&r->dyn.sq : (void **)&r->dyn.correct;
        const int64_t want = cp ? h.npool : m;
        rc = store_array_load(s, name, cp ? dyn_compact_dt[k] : k == 3 ? DT_U8 : DT_F32, p, &got);
        if (!rc && got != want)
            rc = inca_fail(INCA_EINVAL, "%s: array %s has %lld elements, expected %lld", path, name, (long long)got, (long long)want);
    }
done:
    store_close(&s);
    if (rc) prune_result_free(r);
    return rc;
}

/* ---- pruned dataset ---- */
int prune_make_pruned(const dataset_t *d, const int64_t *sel, int64_t nsel, dataset_t *out) {
    dataset_init(out);
    int graph = d->adj.rowptr != NULL && d->adj.nnz > 0;
    int rc = INCA_OK;
    for (int64_t t = 0; t < nsel; t++)
        if (sel[t] < 0 || sel[t] >= d->n) return inca_fail(INCA_EINVAL, "pruned: id %lld outside [0, %lld)", (long long)sel[t], (long long)d->n);
    out->f = d->f;
    out->c = d->c;
    snprintf(out->source, sizeof out->source, "pruned:%.240s", d->source);
    if (graph) {
        /* the whole graph; train split = selected nodes; unselected training nodes unlabelled */
        out->n = d->n;
        rc = csr_alloc(&out->adj, d->n, d->n, d->adj.nnz, d->adj.val != NULL);
        if (rc) goto fail;
        memcpy(out->adj.rowptr, d->adj.rowptr, (size_t)(d->n + 1) * sizeof *d->adj.rowptr);
        memcpy(out->adj.col, d->adj.col, (size_t)d->adj.nnz * sizeof *d->adj.col);
        if (d->adj.val) memcpy(out->adj.val, d->adj.val, (size_t)d->adj.nnz * sizeof *d->adj.val);
        if (d->x && d->f) {
            out->x = inca_malloc((size_t)d->n * (size_t)d->f * sizeof *out->x);
            if (!out->x) { rc = INCA_ENOMEM; goto fail; }
            memcpy(out->x, d->x, (size_t)d->n * (size_t)d->f * sizeof *out->x);
        }
        out->y = inca_malloc((size_t)d->n * sizeof *out->y);
        if (!out->y) { rc = INCA_ENOMEM; goto fail; }
        memcpy(out->y, d->y, (size_t)d->n * sizeof *out->y);
        for (int64_t t = 0; t < d->split_n[SPLIT_TRAIN]; t++) out->y[d->split[SPLIT_TRAIN][t]] = -1;
        for (int64_t t = 0; t < nsel; t++) out->y[sel[t]] = d->y[sel[t]];
        for (int s = 0; s < SPLIT_COUNT; s++) {
            const int64_t *src = s == SPLIT_TRAIN ? sel : d->split[s];
            int64_t cnt = s == SPLIT_TRAIN ? nsel : d->split_n[s];
            if (!src || cnt == 0) continue;
            out->split[s] = inca_malloc((size_t)cnt * sizeof *out->split[s]);
            if (!out->split[s]) { rc = INCA_ENOMEM; goto fail; }
            memcpy(out->split[s], src, (size_t)cnt * sizeof *src);
            out->split_n[s] = cnt;
        }
        return INCA_OK;
    }
    /* features only: selected examples, then the valid and test examples, renumbered */
    int64_t nv = d->split_n[SPLIT_VALID], nt = d->split_n[SPLIT_TEST], n = nsel + nv + nt;
    out->n = n;
    out->x = inca_malloc((size_t)(n ? n : 1) * (size_t)(d->f ? d->f : 1) * sizeof *out->x);
    out->y = inca_malloc((size_t)(n ? n : 1) * sizeof *out->y);
    if (!out->x || !out->y) { rc = INCA_ENOMEM; goto fail; }
    int64_t row = 0;
    for (int s = 0; s < SPLIT_COUNT; s++) {
        const int64_t *src = s == SPLIT_TRAIN ? sel : d->split[s];
        int64_t cnt = s == SPLIT_TRAIN ? nsel : d->split_n[s];
        if (cnt == 0) continue;
        out->split[s] = inca_malloc((size_t)cnt * sizeof *out->split[s]);
        if (!out->split[s]) { rc = INCA_ENOMEM; goto fail; }
        out->split_n[s] = cnt;
        for (int64_t t = 0; t < cnt; t++, row++) {
            out->split[s][t] = row;
            memcpy(out->x + row * d->f, d->x + src[t] * d->f, (size_t)d->f * sizeof *out->x);
            out->y[row] = d->y[src[t]];
        }
    }
    return INCA_OK;
fail:
    dataset_free(out);
    return rc;
}

double prune_pseudo_acc(const int32_t *y_true, const int32_t *y_vis, const prune_result_t *r) {
    int64_t ok = 0, cnt = 0;
    for (int64_t i = 0; i < r->npool; i++) {
        int64_t v = r->pool[i];
        if (y_vis[v] >= 0 || y_true[v] < 0) continue;
        cnt++;
        ok += r->pseudo[i] == y_true[v];
    }
    return cnt ? (double)ok / (double)cnt : 0.0;
}

/* ---- evaluation ---- */
static void mean_std(const double *v, int n, double *mean, double *sd) {
    double s = 0, s2 = 0;
    for (int i = 0; i < n; i++) s += v[i];
    *mean = n ? s / n : 0;
    for (int i = 0; i < n; i++) s2 += (v[i] - *mean) * (v[i] - *mean);
    *sd = n > 1 ? sqrt(s2 / (n - 1)) : 0;   /* sample std, as train reports test_acc_std */
}

/* Test accuracy of one target run (model seed `seed`) trained on ids[0..nids). Feature
 * datasets are first compacted to the training rows plus the valid and test rows (the pruned
 * dataset), so the per-epoch evaluation does not run over the unused part of the pool. */
static int eval_one(const dataset_t *d, train_config_t *tc, const int64_t *ids, int64_t nids, uint64_t seed,
                    const char *what, double *acc) {
    train_result_t tr = {0};
    dataset_t cd;
    dataset_init(&cd);
    tc->runs = 1;
    tc->seed = seed;
    int graph = d->adj.rowptr != NULL && d->adj.nnz > 0;
    int rc = graph ? INCA_OK : prune_make_pruned(d, ids, nids, &cd);
    if (!rc) rc = graph ? train_run(d, tc, ids, nids, &tr) : train_run(&cd, tc, NULL, 0, &tr);
    if (rc) inca_fail_ctx(rc, "training the target on %s: ", what);
    *acc = tr.test_acc;
    train_result_free(&tr);
    dataset_free(&cd);
    return rc;
}

int64_t prune_steps_per_epoch(const train_config_t *target, int64_t n) {
    if (strcmp(target->method, "full") != 0)   /* METIS batches: the same count whatever the subset */
        return (target->parts + target->batch_parts - 1) / target->batch_parts;
    return target->batch_size > 0 && n > 0 ? (n + target->batch_size - 1) / target->batch_size : 1;
}

int prune_eval_run(const dataset_t *d, const train_config_t *target, const int64_t *pool, int64_t npool,
                   const int64_t *sel, int64_t nsel, int runs, uint64_t seed, unsigned sets, prune_eval_t *e) {
    memset(e, 0, sizeof *e);
    if (runs < 1) return inca_fail(INCA_EINVAL, "--runs: expected >= 1, got %d", runs);
    if (nsel < 1) return inca_fail(INCA_EINVAL, "eval: the coreset is empty");
    int rc = INCA_OK;
    train_config_t tc = *target, tf = *target;   /* the subsets', the full pool's */
    int64_t *rnd = inca_malloc((size_t)nsel * sizeof *rnd);
    double *acc = inca_malloc((size_t)runs * 3 * sizeof *acc);
    if (!rnd || !acc) { rc = INCA_ENOMEM; goto done; }
    tc.on_epoch = tf.on_epoch = NULL;
    tc.out_logits = tf.out_logits = NULL;
    const int64_t spe_full = prune_steps_per_epoch(target, npool), spe_sub = prune_steps_per_epoch(target, nsel);
    if (sets & PRUNE_EVAL_SAME_STEPS) {
        const int64_t ep = ((int64_t)target->epochs * spe_full + spe_sub - 1) / spe_sub;
        if (ep > (1 << 24)) {
            rc = inca_fail(INCA_EINVAL, "--eval-budget steps: a subset of %lld would train %lld epochs; keep more or give "
                           "--eval-budget epochs", (long long)nsel, (long long)ep);
            goto done;
        }
        tc.epochs = (int)ep;
    }
    e->subset_epochs = tc.epochs;
    e->full_epochs = tf.epochs;
    e->subset_steps = (int64_t)tc.epochs * spe_sub;
    e->full_steps = (int64_t)tf.epochs * spe_full;
    for (int i = 0; i < runs; i++) {
        uint64_t si = seed + (uint64_t)i;
        if ((sets & PRUNE_EVAL_CORESET) && (rc = eval_one(d, &tc, sel, nsel, si, "the coreset", &acc[i]))) goto done;
        if (sets & PRUNE_EVAL_RANDOM) {   /* a fresh random subset of the same size per run */
            int64_t got = 0;
            if ((rc = select_random(npool, nsel, rng_hash64(si, 0x7a4d0, 0), rnd, &got))) goto done;
            for (int64_t t = 0; t < got; t++) rnd[t] = pool[rnd[t]];
            qsort(rnd, (size_t)got, sizeof *rnd, i64_cmp);
            if ((rc = eval_one(d, &tc, rnd, got, si, "a random subset", &acc[runs + i]))) goto done;
        }
        if ((sets & PRUNE_EVAL_FULL) && (rc = eval_one(d, &tf, pool, npool, si, "the full pool", &acc[2 * runs + i]))) goto done;
    }
    double *mean[3] = {&e->coreset_acc, &e->random_acc, &e->full_acc}, *sd[3] = {&e->coreset_std, &e->random_std, &e->full_std};
    for (int k = 0; k < 3; k++) {
        if (sets & (1u << k)) mean_std(acc + k * runs, runs, mean[k], sd[k]);
        else *mean[k] = *sd[k] = NAN;
    }
    e->runs = runs;
done:
    inca_free(rnd);
    inca_free(acc);
    return rc;
}
