/* The one JSON writer behind every `--json` line, the bench JSON Lines and the --metrics file:
 * one top-level object with nested objects and arrays, strings escaped (invalid UTF-8 becomes
 * U+FFFD), numbers printed in the shortest form that reads back to the same double, NaN and
 * infinities as null. Tested in test_core.c and, through the binary, by cJSON in test_e2e_json.c.
 *
 * Usage: json_new, then values, then json_write (or json_close for the text). Inside an object
 * every value takes a key; inside an array key must be NULL. A misuse (a key missing or given
 * where it does not belong, an end that does not match, nesting deeper than 32) or a failed
 * allocation is remembered, later calls do nothing, and json_close / json_write report it: a
 * caller checks once at the end, never after each value. */
#ifndef INCA_JSON_H
#define INCA_JSON_H
#include <stdint.h>
#include <stdio.h>

typedef struct json json_t;
/* A writer with the top-level object open. INCA_ENOMEM on failure. */
int json_new(json_t **out);
/* Frees the writer and the text json_close returned; sets *j = NULL; NULL-safe. */
void json_free(json_t **j);
void json_int(json_t *j, const char *key, int64_t v);
/* v as a number when a double holds it exactly (|v| <= 2^53), else as a decimal string: what a
 * reader through doubles (cJSON, --config) must get back bit for bit (a --seed past 2^53). */
void json_int_exact(json_t *j, const char *key, int64_t v);
void json_num(json_t *j, const char *key, double v);   /* NaN/inf -> null */
void json_str(json_t *j, const char *key, const char *v); /* NULL -> null */
void json_bool(json_t *j, const char *key, int v);
void json_null(json_t *j, const char *key);
/* Open a nested object or array as the value of key (NULL inside an array); close it with the
 * matching _end. */
void json_obj_begin(json_t *j, const char *key);
void json_obj_end(json_t *j);
void json_arr_begin(json_t *j, const char *key);
void json_arr_end(json_t *j);
/* Close the top-level object and return the text (owned by j, valid until json_free); NULL
 * with the message set (inca_errmsg) after a misuse, an unclosed nested value or a failed
 * allocation. Further values after it are a misuse. */
const char *json_close(json_t *j);
/* json_close, then write the text and '\n' to f and flush: one JSON Lines record.
 * INCA_ENOMEM / INCA_EINVAL as json_close, INCA_EIO when the write fails. */
int json_write(json_t *j, FILE *f);
#endif
