/* Label spreading (Zhou et al. 2004): S = D^-½ W D^-½ over a symmetric non-negative graph W,
 * F ← α S F + (1−α) Y from F = Y (Y one-hot on the labelled rows, zero elsewhere), then
 * pseudo-label = argmax F (ties to the lowest class) and confidence = max_k F[k] / Σ_k F[k].
 * Tested in test_pruning_knn.c against the closed form (1−α)(I−αS)^{-1}Y on a tiny graph. */
#ifndef INCA_LABELPROP_H
#define INCA_LABELPROP_H
#include <stdint.h>
#include "graph/csr.h"

/* w: n x n graph (val NULL = weight 1; self-loops allowed; a directed one spreads over
 * max(W, Wᵀ), the symmetric graph the method is defined on); y: n labels, -1 = not
 * labelled, others in [0, c). Runs `iters` iterations with 0 <= alpha < 1.
 * Outputs (caller-owned, n entries; any may be NULL): label[i] (-1 when row i of F is all zero,
 * i.e. no labelled node reaches it within `iters` hops), conf[i] in [0,1] (0 when unreached);
 * f_out (n x c) receives F. Deterministic for a fixed thread count. */
int labelprop_spread(const csr_t *w, const int32_t *y, int32_t c, double alpha, int iters,
                     int32_t *label, float *conf, float *f_out);

/* The pieces, for other propagations over the same operator (pruning/cs.h):
 * s (caller frees with csr_free) = D^-½ W D^-½ of a square non-negative w (max(W, Wᵀ) for a
 * w that is not symmetric);
 * f (n x c, not overlapping f0) = F after `iters` steps of F ← α S F + (1−α) F0 from F = F0 (any
 * real F0);
 * label/conf (either may be NULL) from F as labelprop_spread defines them. */
int labelprop_operator(const csr_t *w, csr_t *s);
int labelprop_iterate(const csr_t *s, const float *f0, int32_t c, double alpha, int iters, float *f);
void labelprop_decide(const float *f, int64_t n, int32_t c, int32_t *label, float *conf);

/* Class mass normalisation (Zhu, Ghahramani & Lafferty 2003): spreading favours the classes
 * whose seeds sit in dense, high-degree regions. Rescale column k of f (n x c, as filled by
 * labelprop_spread) so that the total mass over the rows without a label matches the class
 * prior q_k of the labelled rows (Laplace-smoothed: (n_k + 1) / (n_lab + c)), then recompute
 * label and conf exactly as labelprop_spread defines them. Rows with a label keep it. */
int labelprop_class_mass(const float *f, int64_t n, int32_t c, const int32_t *y, int32_t *label, float *conf);
#endif
