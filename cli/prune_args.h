/* The flags of `inca prune` and their parsing into the pipeline and target configurations,
 * shared with `inca bench pruning` so both accept the same flags with the same defaults. */
#ifndef INCA_CLI_PRUNE_ARGS_H
#define INCA_CLI_PRUNE_ARGS_H
#include "cli/args.h"
#include "nn/train.h"
#include "pruning/pipeline.h"

extern const char *const cmd_prune_flags[];   /* NULL-terminated, for args_parse */
/* cfg (pipeline: labelling, spreading, proxy, scores, selection) and target (--eval model) from
 * the parsed flags; INCA_EINVAL naming the flag for a bad value. --labeled, --threads, --split
 * and the outputs are read by the commands themselves. */
int cmd_prune_config(const args_t *a, prune_config_t *cfg, train_config_t *target);
#endif
