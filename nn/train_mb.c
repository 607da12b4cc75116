/* PLACEHOLDER so the build links: the mini-batch trainers (cluster, gas, incagg) are issue 4's
 * and replace this whole file (nn/train_mb.c is owned by the mini-batch engineer; contract in
 * nn/train.h: train_minibatch). Until then the methods fail with a usage error (exit 2). */
#include "nn/train.h"
#include "core/status.h"

int train_minibatch(const dataset_t *d, const train_config_t *c, const int64_t *train_idx,
                    int64_t n_train, int run, train_result_t *r) {
    (void)d; (void)train_idx; (void)n_train; (void)run; (void)r;
    return inca_fail(INCA_EINVAL, "--method %s: mini-batch training is not in this build yet "
                     "(nn/train_mb.c, issue 4); use --method full", c->method);
}
