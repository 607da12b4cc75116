/* Which pseudo-labeller labels the pool (--ssl, --knn-features), and running it: the candidates
 * the flags leave open (spreading and SGC over the graph or each allowed kNN view, the proxy on
 * the labels; C&S for --ssl cs), the k-fold check on the visible labels that picks among several
 * (--ssl auto: each fold of the labelled rows hidden in turn, the candidate that gets most of
 * them right wins; no hidden label is read), then the winner (pseudo.h), or self-training
 * (selftrain.h). The first stage of prune_run (pipeline.h). Tested in test_pruning_e2e.c (auto's
 * choice and check figures, each --ssl, the hidden-label test). */
#ifndef INCA_PRUNE_SSL_H
#define INCA_PRUNE_SSL_H
#include <stdint.h>
#include "loaders/dataset.h"
#include "pruning/prune_config.h"

/* The labelled rows below which the check is skipped: the first candidate runs, unchecked. */
#define PRUNE_SSL_CHECK_MIN 10

/* Pseudo-labels for the pool into r->pseudo and r->conf (npool each, allocated by the caller),
 * from dv's visible labels; the labellers spread over the dataset's graph when use_graph, the
 * proxy trains on it when proxy_graph. Fills r->ssl_used, ->knn_features_used, ->knn_used,
 * ->ssl_check_n, ->ssl_check_acc and r->sec[CHECK, KNN, SPREAD]. */
int ssl_pseudo_labels(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                      int proxy_graph, prune_result_t *r);
#endif
