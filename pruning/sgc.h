/* SGC pseudo-labels (Wu et al. 2019, "Simplifying Graph Convolutional Networks"): the feature
 * rows smoothed K hops over a graph, Â^K X with Â = D̃^-½ (A + I) D̃^-½, each row L2-normalised,
 * then a softmax regression fitted to the labelled rows labels every row. Where spreading moves
 * the labels over the graph, SGC moves the features and lets a linear model draw the boundary:
 * on Fashion-MNIST's kNN graph (1% labels) a point above spreading on average over three draws
 * (README, bench/labelprop_variants.py is the numpy reference). Tested in test_pruning_knn.c
 * (smoothing by hand on a path, the regression's gradient by finite differences). */
#ifndef INCA_SGC_H
#define INCA_SGC_H
#include <stdint.h>
#include "graph/csr.h"

typedef struct sgc_opts {
    int hops;       /* K (8) */
    int iters;      /* full-batch Adam steps on the labelled rows (300) */
    double lr;      /* 0.01 */
    double l2;      /* L2 penalty on the weights (0.03), added to the gradient */
    float scale;    /* the smoothed rows' L2 norm (10): sets the logits' range against l2 */
} sgc_opts_t;
void sgc_opts_default(sgc_opts_t *o);

/* a: n x n graph (pattern or weighted; self-loops are added), x: n x f rows. *out (inca_malloc'd,
 * n x f, caller frees): Â^hops x, each row scaled to L2 norm o->scale (a zero row stays zero).
 * Deterministic for a fixed thread count (kern_spmm). */
int sgc_smooth(const csr_t *a, const float *x, int64_t n, int64_t f, const sgc_opts_t *o, float **out);

/* Softmax regression z W (f x c, no bias, zero start) fitted by Adam to the rows with y >= 0
 * (cross-entropy mean over them + l2/2 |W|^2); every row's argmax into label[] and its softmax
 * probability into conf[] (either may be NULL). INCA_EINVAL without a labelled row or with a label
 * outside [0, c). w_out (may be NULL; f x c) receives W. */
int sgc_fit_predict(const float *z, int64_t n, int64_t f, const int32_t *y, int32_t c, const sgc_opts_t *o,
                    int32_t *label, float *conf, float *w_out);
/* The objective sgc_fit_predict minimises, at W (for the gradient check): mean cross-entropy
 * over the labelled rows + l2/2 |W|^2; g (may be NULL; f x c) receives its gradient. */
double sgc_loss(const float *z, int64_t n, int64_t f, const int32_t *y, int32_t c, double l2, const float *w, float *g);
#endif
