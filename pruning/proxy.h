/* The proxy model of the pipeline: trained on the pool's pseudo-labels while its training
 * dynamics are recorded (the recorder is a train_run callback: after every epoch from an
 * evaluation pass, or from each training step's own logits), and the rounds that train it on
 * the confident pseudo-labels only to relabel the rest of the pool. The proxy's dataset: on a
 * graph, the whole graph with pseudo-labels on the pool (use_graph); on a table, the pool rows
 * alone. What it records is scored by score_select.h and stored by dyn_io.h.
 * Tested in test_pruning_e2e.c (dynamics from eval and from steps of every method, one-batch
 * methods against full-batch, relabelling rounds, hidden-label test). */
#ifndef INCA_PRUNE_PROXY_H
#define INCA_PRUNE_PROXY_H
#include <stdint.h>
#include "loaders/dataset.h"
#include "pruning/prune_config.h"

/* The proxy (cfg->proxy: model "" = gcn on a graph, mlp on a table; runs 1, seed cfg->seed) on
 * every pool row's pseudo-label r->pseudo, recording r->dyn in cfg->dyn_layout from
 * cfg->dyn_from; sets r->dyn_from and r->dyn_bytes. INCA_ERR when an epoch went unrecorded. */
int proxy_record(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                 prune_result_t *r);
/* The proxy trained on the pool rows whose confidence r->conf is at least conf_min only,
 * recording nothing: its evaluation logits after the last epoch into out (the proxy dataset's
 * rows x c: dv->n rows on a graph, npool on a table). what: what it trains for, named in a
 * training failure's message ("proxy training (what): ..."), as it serves several stages. */
int proxy_logits(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                 const prune_result_t *r, float conf_min, const char *what, float *out);
/* The unlabelled pool rows take the argmax of the proxy's logits lg (rows: node ids on a graph,
 * pool positions on a table), confidence = its softmax probability; labelled rows keep theirs. */
void proxy_relabel_from_logits(const dataset_t *dv, const int64_t *pool, int64_t npool, int on_graph, const float *lg,
                               prune_result_t *r);
/* cfg->relabel rounds (--relabel): each trains the proxy on the most confident
 * cfg->relabel_confident share of the pool and relabels the unlabelled rows with its
 * predictions (a network fitted to noisy labels predicts better than them). */
int proxy_relabel(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, int use_graph,
                  prune_result_t *r);
#endif
