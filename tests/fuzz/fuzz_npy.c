/* libFuzzer target: the index-file reader of the pruning outputs (npy_read_indices: .npy by its
 * magic, text otherwise) on one file holding the input. Any input must parse or fail with a
 * status; crashes, leaks and sanitizer reports are findings. Seeds: with INCA_FUZZ_SEED_OUT=DIR
 * set, initialisation writes .npy files as inca writes them (i64, f32 matrix) and a text file. */
#include "fuzz_util.h"
#include "core/alloc.h"
#include "core/status.h"
#include "loaders/npy.h"
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    const char *dir = getenv("INCA_FUZZ_SEED_OUT");
    if (!dir) return 0;
    static const int64_t ids[5] = {0, 7, 3, 1000000007, 2};
    static const float x[6] = {1, 2, 3, 4, 5, 6};
    char p[1024];
    int bad = 0;
    snprintf(p, sizeof p, "%s/i64.npy", dir);
    bad |= npy_write_i64(p, ids, 5);
    snprintf(p, sizeof p, "%s/empty.npy", dir);
    bad |= npy_write_i64(p, ids, 0);
    snprintf(p, sizeof p, "%s/f32.npy", dir);   /* a dtype the reader refuses */
    bad |= npy_write_f32(p, x, 3, 2);
    snprintf(p, sizeof p, "%s/ids.txt", dir);
    bad |= indices_write_text(p, ids, 5);
    if (bad) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write("in.npy", data, size);
    int64_t *ids = NULL, n = 0;
    npy_read_indices(fuzz_path("in.npy"), &ids, &n);
    inca_free(ids);
    inca_err_clear();
    return 0;
}
