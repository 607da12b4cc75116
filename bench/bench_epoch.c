/* inca bench epoch: owned by its issue; this file is replaced when that benchmark lands. */
#include "bench/bench.h"
#include "core/status.h"

int bench_epoch(int argc, char **argv) {
    (void)argc; (void)argv;
    return inca_fail(INCA_ERR, "benchmark 'epoch' is not available in this build yet");
}
