/* The `inca` binary: dispatches to one command per file (cli/cmd_*.c), prints the failure
 * message on stderr in one line and exits 0 / 1 (runtime) / 2 (bad usage or input).
 * Exercised by the end-to-end tests (test_e2e_*.c). */
#include "cli/commands.h"
#include "core/status.h"
#include "core/util.h"
#include <stdio.h>
#include <string.h>

static const struct { const char *name; int (*fn)(int, char **); const char *help; } cmds[] = {
    {"ingest", cmd_ingest, "ingest --format ogb|edgelist|metis|idx|csv SRC --out STORE"},
    {"gen", cmd_gen, "gen --kind rmat|csbm --nodes N --avg-degree D ... --out STORE"},
    {"info", cmd_info, "info STORE [--json]"},
    {"partition", cmd_partition, "partition STORE --parts K [--method metis|random] [--seed S]"},
    {"train", cmd_train, "train STORE --model M --method full|cluster|gas|incagg ..."},
    {"prune", cmd_prune, "prune STORE --labeled F --ssl ... --select ... --keep F ..."},
    {"bench", cmd_bench, "bench spmm|loader|epoch|pruning ..."},
};

static void usage(FILE *f) {
    fprintf(f, "usage: inca <command> [args]\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) fprintf(f, "  inca %s\n", cmds[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        if (strcmp(argv[1], cmds[i].name) != 0) continue;
        if (argc >= 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
            printf("usage: inca %s\n", cmds[i].help);
            return 0;
        }
        inca_err_clear();
        inca_threads();   /* one OpenMP pool, BLAS single-threaded inside it (core/util.c) */
        int rc = cmds[i].fn(argc - 1, argv + 1);
        if (rc != INCA_OK) {
            const char *m = inca_errmsg();
            fprintf(stderr, "inca %s: %s\n", cmds[i].name, m[0] ? m : "failed");
        }
        return inca_exit_code(rc);
    }
    fprintf(stderr, "inca: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
