/* Streaming line reader for text inputs, gzip or plain (zlib's gzopen reads both), with line
 * numbers for error messages, plus the small number parsers every text format shares.
 * A truncated or corrupt gzip stream is an error at the line where it ends, never a silent EOF.
 * Tested in tests/test_ingest.c (plain, gz, CRLF, long lines, truncation, parsers vs strtof).
 *
 * CAVEATS FIRST
 * - The line returned by textio_next points into the reader's buffer: valid until the next
 *   textio_next or textio_close. It is NUL-terminated, without '\n' and without a final '\r'.
 * - A UTF-8 byte-order mark at the start of the file is skipped (not part of line 1).
 * - A NUL byte inside a line is reported as an error (text files do not contain them). */
#ifndef INCA_TEXTIO_H
#define INCA_TEXTIO_H
#include <stddef.h>
#include <stdint.h>

typedef struct textio textio_t;

/* Open `path` (gzip or plain). INCA_ENOTFOUND when it does not exist, INCA_EIO otherwise.
 * The caller owns *out and closes it with textio_close. */
int textio_open(const char *path, textio_t **out);
/* Close and set *t = NULL; NULL-safe. */
void textio_close(textio_t **t);
/* Next line: returns 1 and sets *line (and *len when len != NULL), 0 at a clean end of file,
 * or a negative status with a message "<path>:<line>: ..." (truncated gzip, corrupt data,
 * read error, NUL byte). A final line without '\n' is returned like any other. */
int textio_next(textio_t *t, char **line, size_t *len);
/* 1-based number of the line last returned (0 before the first). */
int64_t textio_lineno(const textio_t *t);
const char *textio_path(const textio_t *t);
/* Uncompressed bytes consumed so far (for progress). */
int64_t textio_bytes(const textio_t *t);

/* ---- field parsers: each reads one token at *p (after skipping spaces and tabs), advances
 * *p past it, and returns 1 on success, 0 when the token is not of that kind (then *p is
 * unchanged). They never set an error message: the caller knows the file and line. ---- */
/* Decimal integer with optional sign; 0 on overflow. */
int textio_parse_i64(const char **p, int64_t *v);
/* Decimal float (sign, digits, '.', exponent; "nan", "inf" as strtof accepts them), rounded
 * exactly as strtof rounds: a fast exact path for short decimals, strtof otherwise. */
int textio_parse_f32(const char **p, float *v);
/* Skip spaces and tabs. */
const char *textio_skip_blank(const char *p);
/* Skip blanks, then one separator character from `seps` if present, then blanks; returns
 * the new position. */
const char *textio_skip_sep(const char *p, const char *seps);
/* 1 when p holds only blanks up to the NUL. */
int textio_at_end(const char *p);
#endif
