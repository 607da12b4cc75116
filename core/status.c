/* Thread-local error messages; see status.h. Tested in test_core.c. */
#include "core/status.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char g_msg[1024];
static _Thread_local int g_collective;

int inca_fail(int code, const char *fmt, ...) {
    g_collective = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_msg, sizeof g_msg, fmt, ap);
    va_end(ap);
    return code;
}

int inca_fail_ctx(int code, const char *fmt, ...) {
    char prefix[512], old[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, g_msg, sizeof old);
    size_t pl = strlen(prefix);
    if (pl > sizeof g_msg - 3) pl = sizeof g_msg - 3;
    memcpy(g_msg, prefix, pl);
    memcpy(g_msg + pl, ": ", 2);
    size_t room = sizeof g_msg - pl - 3, ol = strlen(old);
    if (ol > room) ol = room;
    memcpy(g_msg + pl + 2, old, ol);
    g_msg[pl + 2 + ol] = '\0';
    return code;
}

const char *inca_errmsg(void) { return g_msg; }
void inca_err_clear(void) {
    g_msg[0] = '\0';
    g_collective = 0;
}
void inca_err_mark_collective(void) { g_collective = 1; }
int inca_err_collective(void) { return g_collective; }

int inca_exit_code(int status) {
    if (status == INCA_OK) return 0;
    if (status == INCA_EINVAL || status == INCA_ENOTFOUND) return 2;
    return 1;
}
