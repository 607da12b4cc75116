/* Index and array files for the pruning outputs: NumPy .npy (format 1.0, little-endian, C order)
 * so PyTorch/NumPy users can np.load them, and plain text (one integer per line).
 * Tested in test_pruning_core.c (round trips, NumPy-style headers, malformed files). */
#ifndef INCA_NPY_H
#define INCA_NPY_H
#include <stddef.h>
#include <stdint.h>

/* Writers replace `path` atomically (a temporary file renamed over it).
 * Write a 1-D int64 array ('<i8', shape (n,)) to `path` (created or truncated). */
int npy_write_i64(const char *path, const int64_t *a, int64_t n);
/* Write a row-major float32 matrix ('<f4', shape (rows, cols); cols == 0 writes shape (rows,)). */
int npy_write_f32(const char *path, const float *a, int64_t rows, int64_t cols);

/* The .npy 1.0 header of an array (descr '<f4', '<i8', ...; shape "(n,)" or "(r, c)") into
 * out[cap], as NumPy writes it: its length (a multiple of 64, at most NPY_HEADER_MAX), or a
 * negative status. */
#define NPY_HEADER_MAX 320
int64_t npy_header(const char *descr, const char *shape, unsigned char *out, size_t cap);

/* Read a list of indices from `path`, which is either a .npy file (recognised by its magic,
 * whatever the name: dtype '<i8', '<i4', '|i1'..., '<u4', '<u8' accepted, 1-D or (n,1), C order)
 * or text: integers separated by whitespace or commas, '#' starts a comment to end of line.
 * Negative values are rejected. On success *ids is allocated with inca_malloc (caller frees with
 * inca_free) and *n set; on failure *ids is NULL and the message names the file (and line). */
int npy_read_indices(const char *path, int64_t **ids, int64_t *n);
/* The same, and with lines != NULL *lines gets each id's line in a text file (1-based; owned,
 * inca_free), or NULL for a .npy file (its ids are named by element). */
int npy_read_indices_lines(const char *path, int64_t **ids, int64_t *n, int64_t **lines);

/* Write ids as text, one per line. */
int indices_write_text(const char *path, const int64_t *ids, int64_t n);
#endif
