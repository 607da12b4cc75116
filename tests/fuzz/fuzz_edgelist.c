/* libFuzzer target: the SNAP edge-list parser (ingest_edgelist) with its side files. The input
 * holds up to three sections (fuzz_util.h): the edge list, a "node label" file, a "node f1 .. fk"
 * file; a side file is passed only when its section exists. Any input must parse or fail with
 * a status; crashes, leaks and sanitizer reports are findings. Seeds: scripts/fuzz.sh. */
#include "fuzz_util.h"
#include <stdio.h>
#include "core/status.h"
#include "loaders/ingest.h"

static const char *const names[] = {"edges.txt", "labels.txt", "features.txt"};

/* A valid edge list naming node 10^8 is a graph of 10^8 nodes: building it takes time and memory
 * in proportion, by design, not by a bug. Inputs with a number in (2^16, INT32_MAX] are skipped
 * so the fuzzer spends its time elsewhere; larger numbers (refused as out of range) still run. */
static int names_huge_node(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n;) {
        if (p[i] < '0' || p[i] > '9') { i++; continue; }
        uint64_t v = 0;
        for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) v = v > UINT32_MAX ? v : v * 10 + (p[i] - '0');
        if (v > (1u << 16) && v <= INT32_MAX) return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (names_huge_node(data, size)) return 0;
    fuzz_clear();
    int k = fuzz_write_sections(data, size, names, 3);
    char labels[1024], features[1024];
    snprintf(labels, sizeof labels, "%s", fuzz_path(names[1]));
    snprintf(features, sizeof features, "%s", fuzz_path(names[2]));
    ingest_opts_t o = {.flags = INGEST_SYMMETRIZE | INGEST_SELF_LOOPS,
                       .labels = k >= 2 ? labels : NULL,
                       .features = k >= 3 ? features : NULL};
    dataset_t d;
    ingest_run(INGEST_EDGELIST, fuzz_path(names[0]), &o, &d);
    dataset_free(&d);
    inca_err_clear();
    return 0;
}
