/* The `inca` sub-commands. Each takes argv with argv[0] = the command name, prints its results
 * (JSON last on stdout with --json) and returns an inca status; main() prints the error message
 * in one line on stderr and maps the status to the exit code (0 / 1 runtime / 2 bad input).
 * One file per command: cli/cmd_<name>.c. */
#ifndef INCA_COMMANDS_H
#define INCA_COMMANDS_H
int cmd_ingest(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_partition(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_prune(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_shard(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_predict(int argc, char **argv);
#include "cli/job.h"   /* cli_comm(): the job's ranks */
/* The build's version: "0.10.0-<git describe>" (generated from cli/version.c.in). */
const char *cli_version(void);
#endif
