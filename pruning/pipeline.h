/* The label-efficient pruning pipeline behind `inca prune` and `inca bench pruning`:
 *   pool (the training split) -> labelled subset (stratified, seeded: the "annotation oracle",
 *   labeled.h) -> visible labels (-1 everywhere else) -> pseudo-labels (ssl.h: label spreading
 *   on a kNN graph of a view of the features, or on the dataset's graph; SGC over the same
 *   graphs; or the proxy trained on the labels alone; --ssl auto picks by a 5-fold check on the
 *   visible labels) -> proxy model trained on the pseudo-labelled pool while the training
 *   dynamics are recorded (proxy.h) -> difficulty score -> coreset selection (score_select.h)
 *   -> outputs (indices .txt/.npy, pruned store with the TRUE labels of the selected examples:
 *   pruned_store.h; dynamics saved in the source store so scoring can be rerun without
 *   training: dyn_io.h) -> optional evaluation of the target model (coreset vs random subset vs
 *   full pool: eval.h).
 * This file runs the in-memory part, pseudo-labels through selection (prune_run); job.h runs the
 * whole sequence on a store for the two commands. The settings and the result: prune_config.h.
 *
 * CAVEATS FIRST
 * - prune_run never sees the hidden labels: it takes a dataset whose y holds only the visible
 *   labels (prune_visible_labels builds that array; a test poisons the hidden labels and checks
 *   that pseudo-labels, dynamics, scores and selection are bit-identical).
 * - Pool positions vs node ids: pseudo-labels, dynamics and scores are indexed by position in
 *   the pool (0..npool-1); selections are returned as node ids (pool[pos]), sorted.
 * - The proxy's best epoch is never chosen on true labels: the proxy dataset has no valid or
 *   test split, so its dynamics cover every epoch.
 * Tested in test_pruning_e2e.c (pipeline on small synthetic sets, hidden-label test, stored
 * dynamics reuse, pruned store contents, CLI errors). */
#ifndef INCA_PIPELINE_H
#define INCA_PIPELINE_H
#include <stdint.h>
#include "loaders/dataset.h"
#include "pruning/prune_config.h"

/* Pseudo-labels, proxy dynamics, scores and selection. dv: the dataset with VISIBLE labels only
 * (dv->y as built by prune_visible_labels; its splits are ignored). pool: node ids. r is
 * overwritten (free with prune_result_free; freed here on failure). Fills r->sec for the stages
 * it runs. */
int prune_run(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, prune_result_t *r);
#endif
