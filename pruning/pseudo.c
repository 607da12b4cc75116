/* The pseudo-labellers: spreading, SGC, SGC + C&S and the proxy on the labels, over the dataset's
 * graph or a kNN view; see pseudo.h. Tested in test_pruning_e2e.c and test_pruning_knn.c. */
#include "pruning/pseudo.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "pruning/cs.h"
#include "pruning/labelprop.h"
#include "pruning/pca.h"
#include "pruning/proxy.h"
#include "pruning/sgc.h"
#include <math.h>
#include <string.h>

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
int pseudo_labelprop(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                     int kf, prune_result_t *r, csr_t *w) {
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
int pseudo_sgc(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph, int kf,
               int cs, prune_result_t *r, csr_t *w) {
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
int pseudo_sgc_check(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
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

/* --ssl proxy: the proxy (its model, method, epochs) trained on the labelled rows alone predicts
 * the rest of the pool. Where the features carry the class and the graph does not (a
 * heterophilous graph), this beats spreading over the graph (README: the 1M-node graph). */
int pseudo_proxy(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int on_graph,
                 prune_result_t *r) {
    double t0 = inca_now();
    float *lg = inca_malloc((size_t)(on_graph ? dv->n : npool) * (size_t)dv->c * sizeof *lg);
    if (!lg) return INCA_ENOMEM;
    for (int64_t i = 0; i < npool; i++) {
        r->pseudo[i] = dv->y[pool[i]];
        r->conf[i] = dv->y[pool[i]] >= 0 ? 1.0f : 0.0f;
    }
    /* the rows of confidence 1: the labelled */
    int rc = proxy_logits(dv, pool, npool, cfg, on_graph, r, 1.0f, "on the labelled rows, the pseudo-labeller proxy", lg);
    if (!rc) proxy_relabel_from_logits(dv, pool, npool, on_graph, lg, r);
    inca_free(lg);
    r->sec[PRUNE_ST_SPREAD] = inca_now() - t0;
    return rc;
}
