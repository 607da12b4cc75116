/* The status line; see progress.h. */
#include "cli/progress.h"
#include "core/util.h"
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Whether a status line is on the terminal without its newline: the SIGINT handler's one input
 * (a process has one stderr, so one flag, not one per cli_progress_t). */
static volatile sig_atomic_t g_line_open;

static void on_sigint(int sig) {
    if (g_line_open) {
        const ssize_t w = write(STDERR_FILENO, "\n", 1);
        (void)w;   /* nothing to do about a failed write here */
    }
    /* SA_RESETHAND put the default back and SA_NODEFER left the signal unblocked: die of it */
    raise(sig);
}

void cli_progress_sigint_install(void) {
    static int installed;
    if (installed) return;
    installed = 1;
    struct sigaction old, sa;
    if (sigaction(SIGINT, NULL, &old) != 0 || old.sa_handler == SIG_IGN) return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    (void)sigaction(SIGINT, &sa, NULL);   /* failing, Ctrl-C leaves the line as it did */
}

void cli_progress_line_open(int open) { g_line_open = open != 0; }

void cli_progress_init(cli_progress_t *p, const char *cmd, int quiet) {
    p->on = !quiet && isatty(STDERR_FILENO);
    p->open = 0;
    p->t0 = inca_now();
    p->last = -1;
    snprintf(p->cmd, sizeof p->cmd, "%s", cmd);
    if (p->on) cli_progress_sigint_install();
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
    cli_progress_line_open(1);   /* before the first byte: a line cut short by Ctrl-C is ended too */
    fprintf(stderr, "\r%s: %s  %.1f s\x1b[K", p->cmd, msg, now - p->t0);
    fflush(stderr);
    p->open = 1;
}

void cli_progress_end(cli_progress_t *p) {
    if (!p || !p->open) return;
    fprintf(stderr, "\r\x1b[K");
    fflush(stderr);
    p->open = 0;
    cli_progress_line_open(0);
}
