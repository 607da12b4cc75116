/* Status codes and the thread-local error message every library call sets on failure.
 * Library code returns a status (0 ok, negative error) and never prints; cli/ turns the
 * message into one line on stderr and the status into an exit code (tested in test_core.c). */
#ifndef INCA_STATUS_H
#define INCA_STATUS_H

enum {
    INCA_OK = 0,
    INCA_ERR = -1,     /* runtime failure (exit 1) */
    INCA_EINVAL = -2,  /* bad usage or bad input: file, line, flag (exit 2) */
    INCA_ENOMEM = -3,  /* allocation failed (exit 1) */
    INCA_EIO = -4,     /* file or store I/O failed (exit 1) */
    INCA_ENOTFOUND = -5 /* a key, array or file that should exist does not (exit 2) */
};

/* Record a printf-style message for the calling thread and return `code`, so a failing path
 * reads `return inca_fail(INCA_EINVAL, "%s:%ld: expected ...", file, line);`. */
int inca_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the current message with more context ("while ingesting X: <old>"), return code. */
int inca_fail_ctx(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The last message set on this thread ("" when none). Valid until the next inca_fail. */
const char *inca_errmsg(void);
void inca_err_clear(void);
/* The current error is a verdict every MPI rank reached together (an agreed check, after which
 * no rank waits in a collective): the CLI reports it once, from rank 0, and ends the job without
 * MPI_Abort (every rank printed it, beside Open MPI's abort banner). A later inca_fail or
 * inca_err_clear unmarks it; inca_fail_ctx keeps the mark (the same error, more context). */
void inca_err_mark_collective(void);
int inca_err_collective(void);
/* 0 -> 0, INCA_EINVAL/INCA_ENOTFOUND -> 2, anything else -> 1. */
int inca_exit_code(int status);

#endif
