/* Which pseudo-labeller runs, the k-fold check that picks it, and running it; see ssl.h.
 * Tested in test_pruning_e2e.c. */
#include "pruning/ssl.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include "pruning/pseudo.h"
#include <math.h>
#include <string.h>

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
            rc = pseudo_sgc_check(dv, pool, npool, cfg, use_graph, v, &w[v], lp, nl, r, k >= PRUNE_CAND_CS, &hit[k]);
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

/* The candidate that labels the pool (-1: self-training, which has none): the only one, or the
 * check's choice among several; r->ssl_used and r->knn_features_used say which. */
static int ssl_pick(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                    int proxy_graph, csr_t *w, prune_result_t *r, int *chosen, double *t0) {
    int cand[PRUNE_CAND_COUNT], rc = INCA_OK;
    const int ncand = ssl_candidates(dv, pool, npool, cfg, use_graph, cand);
    *chosen = -1;
    r->ssl_used = cfg->ssl;
    r->knn_features_used = -1;
    r->ssl_check_n = 0;
    for (int k = 0; k < PRUNE_CAND_COUNT; k++) r->ssl_check_acc[k] = NAN;
    if (ncand > 1) {
        rc = ssl_choose(dv, pool, npool, cfg, use_graph, proxy_graph, cand, w, r, chosen);
        r->sec[PRUNE_ST_CHECK] = inca_now() - *t0 - r->sec[PRUNE_ST_KNN];   /* the kNN graphs: their own stage */
        *t0 = inca_now();
    } else for (int k = 0; k < PRUNE_CAND_COUNT; k++) if (cand[k]) *chosen = k;
    /* SGC is the one pseudo-labeller that may have no candidate: it needs features */
    if (!rc && *chosen < 0 && cfg->ssl != PRUNE_SSL_SELFTRAIN)
        rc = inca_fail(INCA_EINVAL, "--ssl %s: the dataset has no features to smooth", prune_ssl_name(cfg->ssl));
    if (!rc && *chosen >= 0) {
        r->ssl_used = *chosen == PRUNE_CAND_PROXY ? PRUNE_SSL_PROXY
                      : *chosen >= PRUNE_CAND_CS  ? PRUNE_SSL_CS
                      : *chosen >= PRUNE_CAND_SGC ? PRUNE_SSL_SGC
                                                  : PRUNE_SSL_LABELPROP;
        if (*chosen != PRUNE_CAND_PROXY && !use_graph) r->knn_features_used = *chosen % PRUNE_KF_COUNT;
    }
    return rc;
}

/* Self-training with the proxy's model settings (its width, depth, lr, dropout, weight decay). */
static int ssl_selftrain(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                         prune_result_t *r) {
    selftrain_opts_t st = cfg->st;
    st.graph = use_graph;
    st.hidden = cfg->proxy.hidden;
    st.layers = cfg->proxy.layers;
    st.lr = cfg->proxy.lr;
    st.dropout = cfg->proxy.dropout;
    st.weight_decay = cfg->proxy.weight_decay;
    st.seed = cfg->seed;
    return selftrain_run(dv, pool, npool, &st, r->pseudo, r->conf);
}

/* The chosen labeller (candidate `chosen`, or self-training) labels the pool; t0: the stage's start. */
static int ssl_label(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                     int proxy_graph, int chosen, double t0, csr_t *w, prune_result_t *r) {
    train_log(&cfg->proxy, TRAIN_LOG_PROGRESS, "pseudo-labels (%s)", prune_ssl_name(r->ssl_used));
    if (r->ssl_used == PRUNE_SSL_SELFTRAIN) {
        const int rc = ssl_selftrain(dv, pool, npool, cfg, use_graph, r);
        r->sec[PRUNE_ST_SPREAD] = inca_now() - t0;
        return rc;
    }
    if (r->ssl_used == PRUNE_SSL_PROXY) return pseudo_proxy(dv, pool, npool, cfg, proxy_graph, r);
    const int kf = chosen % PRUNE_KF_COUNT;   /* candidates PRUNE_CAND_LABELPROP, _SGC and _CS + view */
    if (r->ssl_used == PRUNE_SSL_SGC || r->ssl_used == PRUNE_SSL_CS)
        return pseudo_sgc(dv, pool, npool, cfg, use_graph, kf, r->ssl_used == PRUNE_SSL_CS, r, &w[kf]);
    return pseudo_labelprop(dv, pool, npool, cfg, use_graph, kf, r, &w[kf]);
}

int ssl_pseudo_labels(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                      int proxy_graph, prune_result_t *r) {
    double t0 = inca_now();
    csr_t w[PRUNE_KF_COUNT] = {{0}};   /* each view's kNN graph, built once for the check and the labeller */
    int chosen = -1;
    int rc = ssl_pick(dv, pool, npool, cfg, use_graph, proxy_graph, w, r, &chosen, &t0);
    if (!rc) rc = ssl_label(dv, pool, npool, cfg, use_graph, proxy_graph, chosen, t0, w, r);
    for (int k = 0; k < PRUNE_KF_COUNT; k++) csr_free(&w[k]);
    return rc;
}
