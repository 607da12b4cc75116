/* Label spreading (Zhou et al. 2004): S = D^-½ W D^-½ over a symmetric non-negative graph W,
 * F ← α S F + (1−α) Y from F = Y (Y one-hot on the labelled rows, zero elsewhere), then
 * pseudo-label = argmax F (ties to the lowest class) and confidence = max_k F[k] / Σ_k F[k].
 * Tested in test_pruning_knn.c against the closed form (1−α)(I−αS)^{-1}Y on a tiny graph. */
#ifndef INCA_LABELPROP_H
#define INCA_LABELPROP_H
#include <stdint.h>
#include "graph/csr.h"

/* w: n x n symmetric graph (val NULL = weight 1; self-loops allowed); y: n labels, -1 = not
 * labelled, others in [0, c). Runs `iters` iterations with 0 <= alpha < 1.
 * Outputs (caller-owned, n entries; any may be NULL): label[i] (-1 when row i of F is all zero,
 * i.e. no labelled node reaches it within `iters` hops), conf[i] in [0,1] (0 when unreached);
 * f_out (n x c) receives F. Deterministic for a fixed thread count. */
int labelprop_spread(const csr_t *w, const int32_t *y, int32_t c, double alpha, int iters,
                     int32_t *label, float *conf, float *f_out);
#endif
