/* SGC / SIGN pseudo-labels (Wu et al. 2019, "Simplifying Graph Convolutional Networks"; Rossi et
 * al. 2020, "SIGN"): the feature rows smoothed over a graph by Â = D̃^-½ (A + I) D̃^-½ for each hop
 * count in a list (default 0, 1, 2, 4, 8, 16), each hop's block scaled to L2 norm
 * scale / sqrt(hops) and the blocks side by side, then a softmax regression fitted to the
 * labelled rows labels every row. Where spreading moves the labels over the graph, this moves the
 * features and lets a linear model draw the boundary: on Fashion-MNIST's kNN graph (1% labels)
 * 1.4 points above spreading on average over three draws (README; bench/labelprop_variants.py is
 * the numpy reference).
 *
 * Memory: the hop blocks are never held for every row at once. sgc_features keeps the listed
 * rows' blocks only (the labelled rows, to fit on), sgc_predict_graph sweeps the hops again and
 * accumulates every row's logits; either holds two n x f buffers beyond its output.
 * Tested in test_pruning_knn.c (hops by hand on a path, the regression's gradient by finite
 * differences, the sweep against the gathered features). */
#ifndef INCA_SGC_H
#define INCA_SGC_H
#include <stdint.h>
#include "graph/csr.h"

enum { SGC_MAX_HOPS = 8 };
typedef struct sgc_opts {
    int nhops;                 /* 6 */
    int hop[SGC_MAX_HOPS];     /* ascending hop counts: 0, 1, 2, 4, 8, 16 */
    int iters;                 /* full-batch Adam steps on the labelled rows (300) */
    double lr;                 /* 0.01 */
    double l2;                 /* L2 penalty on the weights (0.03), Adam's weight decay */
    float scale;               /* each row's L2 norm over all blocks (10): the logits' range against l2 */
} sgc_opts_t;
void sgc_opts_default(sgc_opts_t *o);

/* a: n x n graph (pattern or weighted; self-loops are added), x: n x f rows. *out (inca_malloc'd,
 * nrows x f*nhops, caller frees): for rows[i] (NULL: row i, nrows = n) the blocks Â^hop[j] x,
 * each scaled to norm scale / sqrt(nhops) (a zero block stays zero). Deterministic for a fixed
 * thread count (kern_spmm). */
int sgc_features(const csr_t *a, const float *x, int64_t n, int64_t f, const sgc_opts_t *o, const int64_t *rows,
                 int64_t nrows, float **out);
/* Softmax regression z W (F x c, no bias, zero start) fitted by Adam to the rows of z (m x F) with
 * y >= 0 (cross-entropy mean over them + l2/2 |W|^2). *w (inca_malloc'd, F x c). INCA_EINVAL
 * without a labelled row or with a label outside [0, c). */
int sgc_fit(const float *z, int64_t m, int64_t F, const int32_t *y, int32_t c, const sgc_opts_t *o, float **w);
/* Every row of z: the argmax of z W into label[] and its softmax probability into conf[] (either
 * may be NULL). */
int sgc_predict(const float *z, int64_t m, int64_t F, const float *w, int32_t c, int32_t *label, float *conf);
/* The same for every row of the graph (n rows), sweeping the hops without holding their blocks:
 * what sgc_predict gives on sgc_features of every row, to float rounding. */
int sgc_predict_graph(const csr_t *a, const float *x, int64_t n, int64_t f, const sgc_opts_t *o, const float *w, int32_t c,
                      int32_t *label, float *conf);
/* The softmax probabilities of every row of the graph under each of nw fitted weights w[k], in
 * one sweep: probs (caller-owned, nw x n x c; model k's rows from k n c). */
int sgc_probs_graph(const csr_t *a, const float *x, int64_t n, int64_t f, const sgc_opts_t *o, const float *const *w, int nw,
                    int32_t c, float *probs);
/* The objective sgc_fit minimises, at W: mean cross-entropy over the labelled rows + l2/2 |W|^2;
 * g (may be NULL; F x c) receives its gradient. NAN on a bad call. */
double sgc_loss(const float *z, int64_t m, int64_t F, const int32_t *y, int32_t c, double l2, const float *w, float *g);
#endif
