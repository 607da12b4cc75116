/* libFuzzer target: the ogb folder parser (ingest_run, INGEST_OGB). A dataset folder is several files, so the
 * input is split into sections (fuzz_util.h), one per file below in this order; a file without
 * a section is absent. Any input must parse or fail with a status; crashes, leaks and sanitizer
 * reports are findings. Seeds: scripts/fuzz.sh packs tests/data/bad/ogb-* and data/cora. */
#include "fuzz_util.h"
#include "core/status.h"
#include "loaders/ingest.h"

static const char *const names[] = {"raw/num-node-list.csv", "raw/num-edge-list.csv", "raw/edge.csv", "raw/node-feat.csv",
                                    "raw/node-label.csv", "split/public/train.csv", "split/public/valid.csv",
                                    "split/public/test.csv"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_clear();
    fuzz_write_sections(data, size, names, (int)(sizeof names / sizeof names[0]));
    dataset_t d;
    ingest_run(INGEST_OGB, fuzz_dir(), NULL, &d);
    dataset_free(&d);
    inca_err_clear();
    return 0;
}
