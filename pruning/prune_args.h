/* The flags of `inca prune` and their parsing into the pipeline and target configurations,
 * shared by `inca prune` (cli/) and `inca bench pruning` (bench/) so both accept the same flags
 * with the same defaults. Exercised end to end in test_pruning_e2e.c and test_e2e_json.c. */
#ifndef INCA_PRUNE_ARGS_H
#define INCA_PRUNE_ARGS_H
#include "core/args.h"
#include "nn/train.h"
#include "pruning/pipeline.h"

extern const char *const prune_flags[];   /* NULL-terminated, for args_parse */
/* cfg (pipeline: labelling, spreading, proxy, scores, selection) and target (--eval model) from
 * the parsed flags; INCA_EINVAL naming the flag for a bad value. --labeled, --threads, --split
 * and the outputs are read by the commands themselves. */
int prune_config_from_args(const args_t *a, prune_config_t *cfg, train_config_t *target);
#endif
