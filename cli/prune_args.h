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
/* The labelled subset's flags, checked before any work: one of --labeled, --labeled-per-class and
 * --labeled-indices at most on the command line, --labeled-per-class >= 1 and --labeled in (0, 1]
 * when typed (INCA_EINVAL naming them). */
int prune_labeled_check(const args_t *a);
/* Their values (not given: 0.01, 0, NULL); the one on the command line wins over the others a
 * --config file gives, which are recorded as not given. */
int prune_labeled_from_args(const args_t *a, const char **file, double *fraction, int64_t *per_class);
/* What a run does that decides where a flag has an effect. */
typedef struct prune_run {
    const prune_config_t *cfg;
    int eval;       /* --eval: the target is trained */
    int dyn_kept;   /* the dynamics are saved to the store or reused from it */
} prune_run_t;
/* A flag typed on the command line (not one a --config file gives) that has no effect on this
 * run is INCA_EINVAL "FLAG: has no effect with|without ... (why)": the rule of inca train's
 * cli_train_check_effect. */
int prune_check_effect(const args_t *a, const prune_run_t *r);
#endif
