/* A mini-batch's rows of sparse features as the model's sparse input, for --input-layer
 * transform-first (nn/layer.h, "Affine input sites"): the batch's D W is then a product over its
 * stored nonzeros, not over n_B x F dense rows. Tested in tests/test_input_layer.c.
 *
 * CAVEATS FIRST
 * - Only where the features are in host memory as one array (--loader copy) and at most a
 *   quarter of them are nonzero (train_features_csr's rule, as full-batch's); otherwise the
 *   layer stays dense (the same maths with dense rows).
 * - Dropout then masks the stored nonzeros (Kipf & Welling's sparse dropout, as full-batch),
 *   not every entry: other masks than the dense path's, so other bits.
 * - The model holds the batch's input from mb_sparse_batch until mb_sparse_done: a pass over
 *   the whole graph must not run in between (it takes mb_sparse_whole's).
 * - IncAgg's M^0 = ÂX is then a CSR too (csr_spgemm, the same bits at any thread count; the
 *   dense table's SpMM sums in the same order), given to the operator as agg_config.m0_sparse. */
#ifndef INCA_NN_MB_SPARSE_H
#define INCA_NN_MB_SPARSE_H
#include "nn/mb_run.h"

/* Decide and build: R->xs_on = 1 with the whole CSR and a batch's capacity when the rows go
 * sparse, else 0 (nothing held). */
int mb_sparse_setup(mb_run_t *R);
/* The model's room for them (model_reserve_sparse), made at setup: nothing allocated in training. */
int mb_sparse_reserve(mb_run_t *R);
/* The batch's rows (nodes, nb of them, renumbered ids) become the model's sparse input. */
int mb_sparse_batch(mb_run_t *R, const int64_t *nodes, int64_t nb);
/* All of x as the model's sparse input, for a pass over the whole graph (nothing without sparse
 * rows). */
int mb_sparse_whole(mb_run_t *R);
/* The model back to dense input (NULL-safe on runs without sparse rows). */
void mb_sparse_done(mb_run_t *R);
void mb_sparse_free(mb_run_t *R);
#endif
