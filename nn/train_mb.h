/* Mini-batch training with the aggregation operators of memory/agg.h (Cluster-GCN, GAS,
 * IncAgg) plugged into the layers of nn/layer.h: renumber the dataset by the partition, build
 * Â, run the prefetching loader, one optimiser step per batch, IncAgg refreshes every R steps
 * from the configured source, layer-wise full inference for evaluation.
 *
 * A refresh due at an epoch end where an evaluation is also due shares the evaluation's pass
 * when the source is recompute (both are an eval-mode full forward pass; counted as a refresh,
 * `fused` in mb_stats_t) unless c->refresh_eval_separate; with the push source the refresh (S <- P, M <- Â S) and the evaluation
 * are separate. A non-finite training loss stops the run (INCA_ERR naming the run, epoch and
 * step) before any optimiser step or checkpoint is taken from it.
 *
 * Tested in test_incagg.c (the operators' equivalences, R > 1 against a reference, determinism,
 * each method against full-batch accuracy, checkpoints, allocation failures). */
#ifndef INCA_NN_TRAIN_MB_H
#define INCA_NN_TRAIN_MB_H
#include <stdint.h>
#include "graph/partition.h"
#include "nn/mb_config.h"
#include "nn/train_common.h"

/* One run of a mini-batch method on d with the given partitioning (borrowed; p->n == d->n),
 * seed c->seed. Fills r (single-run figures, runs = 1) and st (may be NULL). */
int mb_train(const dataset_t *d, const train_config_t *c, const int64_t *train_idx, int64_t n_train,
             int run, const partition_t *p, const mb_opts_t *o, train_result_t *r, mb_stats_t *st);
#endif
