/* The pseudo-labellers: each labels every pool position (r->pseudo, r->conf; r->sec[SPREAD]
 * its time) from the visible labels of dv alone (dv->y: -1 where hidden):
 *   label spreading over the dataset's graph or a kNN graph of a view of the pool's rows
 *   (labelprop.h), SGC over the same (sgc.h), SGC then Correct and Smooth (cs.h), and the proxy
 *   trained on the labelled rows alone (proxy.h).
 * A kNN view's graph w is built on first use (its time: r->sec[KNN], the search that ran:
 * r->knn_used) and kept for the next call, so that the check (ssl.h) and the chosen labeller
 * share it; the caller frees it. Labelled rows keep their labels (confidence 1); rows a labeller
 * leaves without one take the most frequent visible class (confidence 0). Which labeller runs is
 * ssl.h's choice. Tested in test_pruning_e2e.c (each --ssl on blobs and a planted-partition
 * graph, the hidden-label test) and test_pruning_knn.c (the kNN views). */
#ifndef INCA_PRUNE_PSEUDO_H
#define INCA_PRUNE_PSEUDO_H
#include <stdint.h>
#include "graph/csr.h"
#include "loaders/dataset.h"
#include "pruning/prune_config.h"

/* Label spreading over the dataset's graph (use_graph) or view kf's kNN graph w. */
int pseudo_labelprop(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                     int kf, prune_result_t *r, csr_t *w);
/* SGC over the dataset's graph (use_graph) or view kf's kNN graph w: fitted to the labelled
 * pool rows' hop features, then every row predicted in one sweep; with cs, its probabilities
 * corrected and smoothed over the same graph. */
int pseudo_sgc(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph, int kf,
               int cs, prune_result_t *r, csr_t *w);
/* SGC's (cs: Correct and Smooth's) part of the check: lp[0..nl) are the labelled rows' pool
 * positions in the check's shuffled order, row t in fold t % PRUNE_SSL_CHECK_FOLDS; each fold is
 * predicted from a fit on the others and its rows predicted right are added to *hit. */
int pseudo_sgc_check(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                     int kf, csr_t *w, const int64_t *lp, int64_t nl, prune_result_t *r, int cs, int64_t *hit);
/* --ssl proxy: the proxy (its model, method, epochs; on the graph when on_graph) trained on the
 * labelled rows alone predicts the rest of the pool. */
int pseudo_proxy(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int on_graph,
                 prune_result_t *r);
#endif
