/* inca bench loader: owned by its issue; this file is replaced when that benchmark lands. */
#include "bench/bench.h"
#include "core/status.h"

int bench_loader(int argc, char **argv) {
    (void)argc; (void)argv;
    return inca_fail(INCA_ERR, "benchmark 'loader' is not available in this build yet");
}
