/* Helpers for the Check suites: temporary directories, running the `inca` binary and capturing
 * its output, and paths to the bundled and shared datasets. */
#ifndef INCA_TESTUTIL_H
#define INCA_TESTUTIL_H
#include <check.h>
#include <cjson/cJSON.h>

/* A fresh directory under $TMPDIR (or /tmp), removed by tu_rmrf. Returns a static-lifetime
 * string owned by the caller (free()). */
char *tu_mkdtemp(void);
void tu_rmrf(const char *path);
int tu_exists(const char *path);
/* Run `$INCA_BIN <args>` through /bin/sh; stdout and stderr are captured into malloc'd strings
 * (may be NULL). Returns the exit status (or -1 when it did not exit normally). */
int tu_inca(const char *args, char **out, char **err);
/* Run any shell command, capturing as tu_inca. */
int tu_sh(const char *cmd, char **out, char **err);
const char *tu_bin(void);      /* $INCA_BIN */
const char *tu_src(void);      /* $INCA_SRC: repository root */
const char *tu_shared(void);   /* $INCA_SHARED: ../shared (may not exist) */
/* $INCA_FMNIST: the Fashion-MNIST IDX files (default /usr/share/datasets/fashion-mnist, the
 * Debian package dataset-fashion-mnist; may not exist). */
const char *tu_fmnist(void);
/* For a test binary whose data is absent: when path does not exist, say so on stderr and exit
 * 77 (ctest shows the test as skipped). Call from main() before the suite runs. */
void tu_require_or_skip(const char *path);
/* Last line of s (without newline) in a static buffer. */
const char *tu_last_line(const char *s);
/* Extract a number for "key": from a JSON object text; NAN when absent. */
double tu_json_num(const char *json, const char *key);
/* JSON through cJSON, an independent parser: tu_json_parse asserts that text is one JSON object
 * and returns it (cJSON_Delete it); tu_json_last does so for the last non-empty line of s (any
 * length). tu_json_get asserts that key is present with the cJSON type (cJSON_Number,
 * cJSON_String, cJSON_Object, cJSON_Array, cJSON_True|cJSON_False for a boolean). */
cJSON *tu_json_parse(const char *text);
cJSON *tu_json_last(const char *s);
const cJSON *tu_json_get(const cJSON *obj, const char *key, int type);
/* The number at key (asserted present and a number). */
double tu_json_dbl(const cJSON *obj, const char *key);
/* Run a suite with CK_NORMAL output; returns EXIT_SUCCESS / EXIT_FAILURE. */
int tu_run_suite(Suite *s);
#endif
