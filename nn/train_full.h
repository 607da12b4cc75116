/* The full-batch trainer: every epoch a training forward over the whole graph (dropout), the
 * loss on the train rows, backward, one optimiser step, then one eval-mode forward for the
 * validation and test figures; the MLP on datasets without a graph takes mini-batch steps.
 * Checkpoints after every epoch (nn/checkpoint.h). Tested in tests/test_train.c. */
#ifndef INCA_NN_TRAIN_FULL_H
#define INCA_NN_TRAIN_FULL_H
#include "nn/train_common.h"

/* One full-batch run (seed c->seed) of c on d over train_idx (n_train ids, borrowed) into r
 * (overwritten; train_result_free), with the contract of train_run (nn/train.h). */
int train_full(const dataset_t *d, const train_config_t *c, const int64_t *train_idx,
               int64_t n_train, int run, train_result_t *r);
#endif
