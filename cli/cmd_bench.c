/* inca bench: dispatches to the benchmarks in bench/. */
#include "bench/bench.h"
#include "bench/bench_progress.h"
#include "cli/progress.h"
#include "core/args.h"
#include "cli/commands.h"
#include "cli/mpi_relaunch.h"
#include "core/comm.h"
#include "core/status.h"
#include <stdio.h>
#include <string.h>

/* bench scale started alone: run it again as an MPI job of max(--ranks) processes */
static int scale_relaunch(int argc, char **argv) {
    int maxp = 1, rc = bench_scale_max_ranks(argc, argv, &maxp);
    if (rc != INCA_OK || maxp <= 1 || comm_launched() || !comm_has_mpi()) return rc;
    return cli_mpi_relaunch("bench scale", "bench", argc, argv, maxp);
}

static void bench_hook(void *ctx, int force, const char *msg) {
    if (msg) cli_progress(ctx, force, "%s", msg);
    else cli_progress_end(ctx);
}

/* The benchmark's progress as the status line (rank 0 alone under MPI), then its status */
static int bench_with_progress(int (*fn)(int, char **), int argc, char **argv, int rank) {
    int quiet = rank != 0;
    for (int i = 1; i < argc; i++) quiet |= strcmp(argv[i], "--quiet") == 0;
    char label[48];
    snprintf(label, sizeof label, "bench %s", argv[0]);
    cli_progress_t pg;
    cli_progress_init(&pg, label, quiet);
    bench_progress_set(bench_hook, &pg);
    bench_set_version(cli_version());
    int rc = fn(argc, argv);
    cli_progress_end(&pg);
    bench_progress_set(NULL, NULL);
    return rc;
}

static comm_t *scale_comm;
static int scale_entry(int argc, char **argv) { return bench_scale(argc, argv, scale_comm); }

int cmd_bench(int argc, char **argv) {
    static const struct { const char *name; int (*fn)(int, char **); } b[] = {
        {"spmm", bench_spmm}, {"gen", bench_gen}, {"loader", bench_loader},
        {"epoch", bench_epoch}, {"pruning", bench_pruning}, {"knn", bench_knn},
    };
    args_set_help_command("bench");   /* the benchmarks' flags are listed by inca bench --help */
    if (argc >= 2 && strcmp(argv[1], "scale") == 0) {
        int rc = scale_relaunch(argc - 1, argv + 1);
        scale_comm = cli_comm();
        return rc != INCA_OK ? rc : bench_with_progress(scale_entry, argc - 1, argv + 1, comm_rank(cli_comm()));
    }
    if (comm_size(cli_comm()) > 1) return inca_fail(INCA_EINVAL, "only bench scale runs as several ranks");
    if (argc < 2) return inca_fail(INCA_EINVAL, "expected a benchmark: spmm|gen|loader|epoch|pruning|knn|scale");
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (strcmp(argv[1], b[i].name) == 0) return bench_with_progress(b[i].fn, argc - 1, argv + 1, 0);
    return inca_fail(INCA_EINVAL, "unknown benchmark '%s' (expected spmm|gen|loader|epoch|pruning|knn|scale)", argv[1]);
}
