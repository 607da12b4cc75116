/* inca bench gen: owned by its issue; this file is replaced when that benchmark lands. */
#include "bench/bench.h"
#include "core/status.h"

int bench_gen(int argc, char **argv) {
    (void)argc; (void)argv;
    return inca_fail(INCA_ERR, "benchmark 'gen' is not available in this build yet");
}
