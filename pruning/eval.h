/* Evaluation of a pruning run with the TRUE labels, never read by the pipeline itself: how
 * many pseudo-labels are right, and the target model trained on the coreset, on random subsets
 * of the same size and on the whole pool (test accuracy at the best validation epoch), with a
 * check that the target learned at all. Tested in test_pruning_e2e.c (--eval figures, budgets,
 * --eval-budget steps, the near-chance warning). */
#ifndef INCA_PRUNE_EVAL_H
#define INCA_PRUNE_EVAL_H
#include <stdint.h>
#include "loaders/dataset.h"
#include "nn/train.h"
#include "pruning/prune_config.h"

/* Accuracy of pseudo-labels against the true labels over the pool positions that were not
 * labelled (y_vis < 0); evaluation only. */
double prune_pseudo_acc(const int32_t *y_true, const int32_t *y_vis, const prune_result_t *r);

/* Evaluation with the TRUE labels of d: the target model (target->model, ->epochs, ...;
 * runs and seed are set here) trained on the coreset (seeds seed .. seed+runs-1), on a random
 * subset of the pool of the same size (run i: a subset drawn with a seed derived from seed+i,
 * model seed seed+i) and on the whole pool, each only when its PRUNE_EVAL_* bit is in `sets`
 * (the others come back NaN). Random subsets depend only on (pool, size, seed), so runs that
 * leave PRUNE_EVAL_RANDOM out can be compared with another run's random figures. Accuracies are test accuracies at
 * the best validation epoch (last epoch without a valid split), means and sample stds (n - 1, as `train` reports). */
enum { PRUNE_EVAL_CORESET = 1, PRUNE_EVAL_RANDOM = 2, PRUNE_EVAL_FULL = 4 };
/* PRUNE_EVAL_SAME_STEPS (--eval-budget steps): a subset trains for as many optimiser steps as the
 * full pool does in target->epochs epochs, epochs x steps_per_epoch(npool) /
 * steps_per_epoch(nsel) rounded up (steps per epoch: ceil(n / batch_size), 1 for full batch);
 * without it (--eval-budget epochs, the default) every set trains target->epochs epochs. */
enum { PRUNE_EVAL_SAME_STEPS = 8 };
typedef struct prune_eval {
    double coreset_acc, coreset_std, random_acc, random_std, full_acc, full_std;
    int runs;
    int subset_epochs, full_epochs;   /* the epochs each trained */
    int64_t subset_steps, full_steps;   /* and the optimiser steps that makes */
} prune_eval_t;
/* Optimiser steps per epoch of the target on n training examples: ceil(n / batch_size), 1 (full
 * batch), or the METIS batches ceil(parts / batch_parts) of cluster, gas and incagg (a batch
 * without a training node takes no step, so this is an upper bound for a small subset). */
int64_t prune_steps_per_epoch(const train_config_t *target, int64_t n);
int prune_eval_run(const dataset_t *d, const train_config_t *target, const int64_t *pool, int64_t npool,
                   const int64_t *sel, int64_t nsel, int runs, uint64_t seed, unsigned sets, prune_eval_t *e);
/* 1 when the target stayed near chance: its accuracy *acc (the full pool's when `sets` trained
 * it, else the coreset's) within 2 points of *share, the test split's largest class share (what
 * always answering that class scores), or below 1.5 / classes. 0 without a figure to judge. */
int prune_eval_near_chance(const dataset_t *d, const prune_eval_t *ev, unsigned sets, double *acc, double *share);
#endif
