/* libFuzzer target: the METIS graph parser (ingest_metis) on one file holding the input. Any
 * input must parse or fail with a status; crashes, leaks and sanitizer reports are findings.
 * Seeds: scripts/fuzz.sh (tests/data/bad/metis-*). */
#include "fuzz_util.h"
#include "core/status.h"
#include "loaders/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write("in.graph", data, size);
    dataset_t d;
    ingest_run(INGEST_METIS, fuzz_path("in.graph"), NULL, &d);
    dataset_free(&d);
    inca_err_clear();
    return 0;
}
