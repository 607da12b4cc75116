/* The flags of `inca prune` and their parsing into the pipeline and target configurations,
 * shared by `inca prune` (cli/) and `inca bench pruning` (bench/) so both accept the same flags
 * with the same defaults. Exercised end to end in test_pruning_e2e.c and test_e2e_json.c. */
#ifndef INCA_PRUNE_ARGS_H
#define INCA_PRUNE_ARGS_H
#include "core/args.h"
#include "nn/train.h"
#include "pruning/prune_config.h"

extern const char *const prune_flags[];   /* NULL-terminated, for args_parse */
/* cfg (pipeline: labelling, spreading, proxy, scores, selection) and target (--eval model) from
 * the parsed flags; INCA_EINVAL naming the flag for a bad value. --labeled, --threads, --split
 * and the outputs are read by the commands themselves. */
int prune_config_from_args(const args_t *a, prune_config_t *cfg, train_config_t *target);
/* Defaults by data kind, for the flags not given (cfg->given): graphs keep the flags' defaults
 * (GCN-on-Cora settings); tables (no graph) take the settings measured on Fashion-MNIST:
 * --feature-norm standard --proxy-epochs 20 --proxy-batch-size 128 --proxy-lr 0.001 --epochs 20
 * --batch-size 128 --lr 0.001 --dropout 0.2. what[] receives the ones applied ("" for none). The
 * values that run are recorded in a's config (args_config_json), given or not. */
int prune_kind_defaults(const args_t *a, prune_config_t *cfg, train_config_t *target, int graph, char *what, size_t len);
#endif
