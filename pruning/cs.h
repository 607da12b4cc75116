/* Correct and Smooth (Huang et al. 2021, "Combining Label Propagation and Simple Models
 * Out-performs Graph Neural Networks"): a base predictor's class probabilities P (here SGC's,
 * pruning/sgc.h) corrected and smoothed over the graph with S = D^-½ W D^-½ (labelprop.h).
 *   correct: E0 = Y − P on the labelled rows, 0 elsewhere; E = E0 spread with α_c
 *            (F ← α S F + (1−α) E0); every row's E scaled to the labelled rows' mean L1 residual
 *            ("autoscale": σ / |E_i|_1; a scale past 1000, a row the residuals barely reach, is
 *            1 instead, as in the authors' code), Z = P + scaled E;
 *   smooth:  Z's labelled rows set to their one-hot labels, spread with α_s; the result's argmax
 *            labels, its positive part's share the confidence (as labelprop_spread).
 * Where SGC's linear boundary errs in clusters, the residuals of nearby labelled rows move it:
 * on Fashion-MNIST's kNN graph (1% labels) 0.23 points above SGC over three draws, 84.39% (README;
 * bench/labelprop_variants.py). Where neighbours disagree more it loses (Cora, up to 3.5 points):
 * --ssl cs only, never one of --ssl auto's candidates.
 * Tested in test_pruning_knn.c (the two propagations against a dense closed form). */
#ifndef INCA_CS_H
#define INCA_CS_H
#include <stdint.h>
#include "graph/csr.h"

typedef struct cs_opts {
    double alpha_correct;   /* 0.8 */
    double alpha_smooth;    /* 0.8 */
    int iters;              /* each propagation's steps (50) */
} cs_opts_t;
void cs_opts_default(cs_opts_t *o);

/* w: n x n symmetric non-negative graph; p: n x c base probabilities; y: n labels (-1: not
 * labelled, else in [0, c)). label/conf (either may be NULL, n entries) as described above;
 * g_out (may be NULL, n x c) receives the smoothed scores. */
int cs_run(const csr_t *w, const float *p, int32_t c, const int32_t *y, const cs_opts_t *o, int32_t *label, float *conf,
           float *g_out);
/* The same over S already built (labelprop_operator of w): several runs over one graph (the
 * check's folds) build it once. */
int cs_run_op(const csr_t *s, const float *p, int32_t c, const int32_t *y, const cs_opts_t *o, int32_t *label, float *conf,
              float *g_out);
#endif
