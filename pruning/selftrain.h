/* Thresholded self-training of the proxy (FixMatch with FlexMatch's per-class flexible
 * thresholds), for data without image augmentations: the weak view is the features (plus
 * optional small uniform noise) in eval mode, the strong view adds larger uniform feature noise
 * and dropout in training mode. Per epoch (full batch over the pool):
 *   weak forward -> p_i for each unlabelled example; FlexMatch: selected_i = argmax p_i when
 *   max p_i > τ (kept from earlier epochs otherwise, -1 before), σ(c) = #{selected = c},
 *   β(c) = σ(c) / max(max_k σ(k), #{selected = -1}), threshold T(c) = τ·β(c)/(2 − β(c));
 *   mask_i = max p_i >= T(argmax p_i);
 *   strong forward -> loss = CE(labelled, true label) + λ · (1/N_u) Σ_i mask_i CE(i, argmax p_i);
 *   backward, Adam step.
 * Pseudo-labels at the end: argmax of the eval-mode prediction, confidence = its probability;
 * labelled examples keep their labels (confidence 1). Deterministic for seed + thread count.
 * Tested in test_pruning_e2e.c (separable blobs from few labels, hidden-label invariance). */
#ifndef INCA_SELFTRAIN_H
#define INCA_SELFTRAIN_H
#include <stdint.h>
#include "loaders/dataset.h"

typedef struct selftrain_opts {
    int graph;            /* 1: GCN over dv->adj (all nodes), 0: MLP over the pool rows */
    int layers;           /* 2 */
    int64_t hidden;       /* 256 */
    double lr, dropout, weight_decay;   /* 0.01, 0.2, 5e-4 */
    int epochs;           /* 100 */
    double tau;           /* 0.95 */
    double lambda_u;      /* 1.0 */
    double noise_weak;    /* 0.0: half-width of uniform noise added to the weak view */
    double noise_strong;  /* 0.2 */
    uint64_t seed;
} selftrain_opts_t;

void selftrain_opts_default(selftrain_opts_t *o);
/* FlexMatch's mask for one epoch: per-class learning status from the persistent selections
 * (selected, updated where the weak view's confidence is >= tau; cnt: c + 1 of scratch), then
 * each unlabelled pool row's flexible threshold. rows: the npool pool rows of arrays of n; ys:
 * their visible labels (-1: unlabelled); pmax/arg: the weak view's top probability and class
 * per pool row. yu (n): its argmax where masked in, -1 elsewhere. Returns the rows masked in.
 * (One epoch's step of selftrain_run, public for its by-hand test.) */
int64_t selftrain_flexmatch_mask(double tau, int32_t c, int64_t n, const int64_t *rows, int64_t npool, const int32_t *ys,
                                 const float *pmax, const int32_t *arg, int64_t *cnt, int32_t *selected, int32_t *yu);
/* dv: dataset with the visible labels only; pool: node ids. pseudo/conf: npool entries each. */
int selftrain_run(const dataset_t *dv, const int64_t *pool, int64_t npool, const selftrain_opts_t *o,
                  int32_t *pseudo, float *conf);
#endif
