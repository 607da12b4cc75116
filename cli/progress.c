/* The status line; see progress.h. */
#include "cli/progress.h"
#include "core/util.h"
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

void cli_progress_init(cli_progress_t *p, const char *cmd, int quiet) {
    p->on = !quiet && isatty(STDERR_FILENO);
    p->open = 0;
    p->t0 = inca_now();
    p->last = -1;
    snprintf(p->cmd, sizeof p->cmd, "%s", cmd);
}

void cli_progress(cli_progress_t *p, int force, const char *fmt, ...) {
    if (!p || !p->on) return;
    const double now = inca_now();
    if (!force && p->last >= 0 && now - p->last < 0.2) return;
    p->last = now;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r%s: %s  %.1f s\x1b[K", p->cmd, msg, now - p->t0);
    fflush(stderr);
    p->open = 1;
}

void cli_progress_end(cli_progress_t *p) {
    if (!p || !p->open) return;
    fprintf(stderr, "\r\x1b[K");
    fflush(stderr);
    p->open = 0;
}
