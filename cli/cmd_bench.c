/* inca bench: dispatches to the benchmarks in bench/. */
#include "bench/bench.h"
#include "core/args.h"
#include "cli/commands.h"
#include "core/status.h"
#include <string.h>

int cmd_bench(int argc, char **argv) {
    static const struct { const char *name; int (*fn)(int, char **); } b[] = {
        {"spmm", bench_spmm}, {"gen", bench_gen}, {"loader", bench_loader},
        {"epoch", bench_epoch}, {"pruning", bench_pruning},
    };
    args_set_help_command("bench");   /* the benchmarks' flags are listed by inca bench --help */
    if (argc < 2) return inca_fail(INCA_EINVAL, "expected a benchmark: spmm|gen|loader|epoch|pruning");
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (strcmp(argv[1], b[i].name) == 0) return b[i].fn(argc - 1, argv + 1);
    return inca_fail(INCA_EINVAL, "unknown benchmark '%s' (expected spmm|gen|loader|epoch|pruning)", argv[1]);
}
