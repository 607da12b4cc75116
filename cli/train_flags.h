/* `inca train`'s flags (cli/train_flags.c), for train and predict. */
#ifndef INCA_CLI_TRAIN_FLAGS_H
#define INCA_CLI_TRAIN_FLAGS_H
#include "core/args.h"
#include "core/json.h"
#include "nn/train.h"

/* NULL-terminated, as args_parse takes them. */
extern const char *const cli_train_flags[];
/* Status lines on stderr: progress lines overwrite each other, and only on a terminal. */
typedef struct cli_log_state { int tty, open; } cli_log_state_t;
/* c <- the flags of a (defaults for the rest); c->log prints to stderr through ls unless --quiet.
 * INCA_EINVAL naming a bad flag value. */
int cli_train_config(const args_t *a, train_config_t *c, cli_log_state_t *ls);
/* INCA_EINVAL naming the first flag given on the command line that c's method or model
 * ignores (--refresh with gas, --theta with gcn, ...); flags from --config are not checked. */
int cli_train_check_effect(const args_t *a, const train_config_t *c);
/* INCA_EINVAL when --parts (given, or read from --partition) exceeds the dataset's nodes, or
 * when --pass-dtype was given and --loader resolves to copy for a dataset of this size. */
int cli_train_check_parts(const args_t *a, const train_config_t *c, int64_t nodes, int64_t features);
/* --ranks P against the job c->comm runs in: under an MPI launcher the job's size must be P (when
 * given, typed or from --config); --workers P > 1 is refused with several MPI ranks (workers are
 * thread ranks of one process). *relaunch <- P when this one process is to start itself as P
 * ranks (cli/mpi_relaunch.h), else 0. INCA_EINVAL naming both counts. */
int cli_train_ranks(const args_t *a, const train_config_t *c, int *relaunch);
/* The table defaults (a store without a graph: Fashion-MNIST, a CSV table), measured on
 * Fashion-MNIST (README "Defaults by data kind"): what train and prune (its proxy and target)
 * take for the flags not given, beside --feature-norm standard and an MLP. */
#define CLI_TABLE_HIDDEN 256
#define CLI_TABLE_EPOCHS 20
#define CLI_TABLE_BATCH 128
#define CLI_TABLE_LR 0.001
#define CLI_TABLE_DROPOUT 0.2
/* Defaults by data kind, after the dataset is loaded: a store without a graph (a table:
 * Fashion-MNIST, a CSV table) takes, for each flag not given (typed or from --config), what prune
 * takes on a table (README "Defaults by data kind"): --model mlp --hidden 256 --feature-norm
 * standard --epochs 20 --batch-size 128 --lr 0.001 --dropout 0.2 (ranks, MPI or --workers,
 * partition a graph: a table is one process's). what <- the flags taken, "" on a graph. */
void cli_train_kind_defaults(const args_t *a, train_config_t *c, int graph, char *what, size_t len);
/* "config": every resolved flag of c (and a's positional STORE) under the flag's name. */
void cli_train_config_json(json_t *j, const args_t *a, const train_config_t *c);
/* DIR/config.json (DIR made when missing): {"config": ..., "version": ...}, written whole via
 * rename, so `inca predict --checkpoint DIR` rebuilds the model trained there. */
int cli_train_config_save(const char *dir, const args_t *a, const train_config_t *c, const char *version);
#endif
