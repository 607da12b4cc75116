/* Helpers for the Check suites: temporary directories, running the `inca` binary and capturing
 * its output, and paths to the bundled and shared datasets. */
#ifndef INCA_TESTUTIL_H
#define INCA_TESTUTIL_H
#include <check.h>

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
/* Last line of s (without newline) in a static buffer. */
const char *tu_last_line(const char *s);
/* Extract a number for "key": from a JSON object text; NAN when absent. */
double tu_json_num(const char *json, const char *key);
/* Run a suite with CK_NORMAL output; returns EXIT_SUCCESS / EXIT_FAILURE. */
int tu_run_suite(Suite *s);
#endif
