/* The in-memory pruning pipeline: the stages in order, each in a file of its own (ssl.c and
 * pseudo.c, proxy.c, score_select.c); see pipeline.h. No stage calls back into this file.
 * Tested in test_pruning_e2e.c (synthetic blobs and a planted-partition graph, the hidden-label
 * test, dynamics save/load, pruned store contents). */
#include "pruning/pipeline.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "pruning/proxy.h"
#include "pruning/score_select.h"
#include "pruning/ssl.h"
#include <string.h>

/* The inputs prune_run refuses before any work, and which graphs it uses: *use_graph, the
 * labellers spread over the dataset's graph; *proxy_graph, the proxy trains on it. */
static int prune_run_check(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg,
                           int *use_graph, int *proxy_graph) {
    if (!dv->y) return inca_fail(INCA_EINVAL, "the dataset has no labels");
    if (dv->c < 2) return inca_fail(INCA_EINVAL, "need at least 2 classes, got %d", dv->c);
    if (npool < 2) return inca_fail(INCA_EINVAL, "the pool (train split) holds %lld examples; need >= 2", (long long)npool);
    for (int64_t i = 0; i < npool; i++)
        if (pool[i] < 0 || pool[i] >= dv->n) return inca_fail(INCA_EINVAL, "prune: pool id %lld outside [0, %lld)", (long long)pool[i], (long long)dv->n);
    int has_graph = dv->adj.rowptr != NULL && dv->adj.nnz > 0;
    *use_graph = cfg->graph < 0 ? has_graph : cfg->graph;
    if (*use_graph && !has_graph) return inca_fail(INCA_EINVAL, "--graph: the dataset has no graph");
    /* the proxy: a graph method trains on the dataset's graph even when the spreading used a kNN
     * graph (--graph knn); refused before any work on a table */
    const int proxy_mb = cfg->proxy.method != TRAIN_FULL;
    if (proxy_mb && !has_graph)
        return inca_fail(INCA_EINVAL, "--proxy-method %s: needs a graph (a table's proxy is full, in mini-batches with "
                         "--proxy-batch-size)", train_method_name(cfg->proxy.method));
    *proxy_graph = *use_graph || proxy_mb;
    return INCA_OK;
}

int prune_run(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, prune_result_t *r) {
    memset(r, 0, sizeof *r);
    r->knn_used = -1;
    int use_graph = 0, proxy_graph = 0;
    int rc = prune_run_check(dv, pool, npool, cfg, &use_graph, &proxy_graph);
    if (rc) return rc;
    r->npool = npool;
    r->pool = inca_malloc((size_t)npool * sizeof *r->pool);
    r->pseudo = inca_malloc((size_t)npool * sizeof *r->pseudo);
    r->conf = inca_malloc((size_t)npool * sizeof *r->conf);
    if (!r->pool || !r->pseudo || !r->conf) { rc = INCA_ENOMEM; goto fail; }
    memcpy(r->pool, pool, (size_t)npool * sizeof *pool);
    /* the stages report through the proxy's status callback (a progress line on a terminal) */
    if ((rc = ssl_pseudo_labels(dv, pool, npool, cfg, use_graph, proxy_graph, r))) goto fail;
    const double t0 = inca_now();
    /* relabelling: the proxy trained on the pseudo-labels relabels the unlabelled pool with its
     * own predictions, then the proxy that records trains on them */
    if (cfg->relabel > 0 && (rc = proxy_relabel(dv, pool, npool, cfg, proxy_graph, r))) goto fail;
    const int model = cfg->proxy.model != TRAIN_MODEL_AUTO ? cfg->proxy.model : proxy_graph ? NN_GCN : NN_MLP;   /* proxy.c's rule */
    train_log(&cfg->proxy, TRAIN_LOG_PROGRESS, "proxy training (%s)", train_model_name(model));
    if ((rc = proxy_record(dv, pool, npool, cfg, proxy_graph, r))) goto fail;
    r->sec[PRUNE_ST_PROXY] = inca_now() - t0;
    if ((rc = prune_score_select(cfg, dv->c, r))) goto fail;
    return INCA_OK;
fail:
    prune_result_free(r);
    return rc;
}
