/* Helpers shared by the libFuzzer targets in tests/fuzz/ (fuzz_<parser>.c): the parsers read
 * files, so each target writes its input under a private scratch directory (/dev/shm when it
 * exists) and calls the parser's entry point on it. Built only with -DINCA_FUZZ=ON (clang);
 * run by scripts/fuzz.sh, which also packs the seed corpus from tests/data and data/. */
#ifndef INCA_FUZZ_UTIL_H
#define INCA_FUZZ_UTIL_H
#include <stddef.h>
#include <stdint.h>

/* Separator between the files of a multi-file input (a dataset folder packed into one input):
 * section i of the input becomes names[i]; sections past the last name are ignored and names
 * without a section are absent. scripts/fuzz.sh packs seeds with the same marker. */
#define FUZZ_SEP "\n--inca-fuzz-file--\n"

/* The scratch directory of this process, $INCA_FUZZ_TMP/inca-fuzz-<pid> (default /dev/shm or
 * /tmp), created on first use and removed at exit; aborts when it cannot be created. */
const char *fuzz_dir(void);
/* dir/rel, in a static buffer valid until the next call. */
const char *fuzz_path(const char *rel);
/* Write bytes to dir/rel (creating parent folders); aborts on a write error. */
void fuzz_write(const char *rel, const uint8_t *p, size_t n);
/* Empty the scratch directory (the folder itself stays). */
void fuzz_clear(void);
/* Split data at FUZZ_SEP and write section i to names[i]; returns the number written. */
int fuzz_write_sections(const uint8_t *data, size_t size, const char *const *names, int nnames);
#endif
