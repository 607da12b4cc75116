/* Training's entry: c->runs runs of c->method on a dataset, folded into one result (mean and
 * std over the runs). The configuration, the result and the helpers every trainer shares are
 * nn/train_common.h (included); the data a run prepares once, nn/train_prep.h; the trainers
 * themselves nn/train_full.h, nn/train_mb.h and nn/train_dist.h, which this file's callers
 * need not include. Tested in tests/test_train.c and tests/test_e2e_train.c. */
#ifndef INCA_NN_TRAIN_H
#define INCA_NN_TRAIN_H
#include "nn/train_common.h"
#include "nn/train_prep.h"
#include "nn/train_full.h"

/* Train c->runs times (seeds c->seed + i) with c->method on d and fill r (r is overwritten;
 * free it with train_result_free). train_idx_override (n_override ids, borrowed) replaces
 * d's train split when non-NULL. INCA_EINVAL naming the field for a bad configuration (unknown
 * model/method, model needing a graph on a graph-less dataset, no train rows, ...). */
int train_run(const dataset_t *d, const train_config_t *c, const int64_t *train_idx_override,
              int64_t n_override, train_result_t *r);
#endif
