/* One status line on stderr, rewritten in place, for the long commands (ingest, gen, partition,
 * train, prune): only when stderr is a terminal and --quiet is not given, so pipes and logs get
 * nothing. Tested in tests/test_e2e_help.c under a pseudo-terminal (script) and a pipe, and the
 * interrupted line in tests/test_pruning_e2e.c. */
#ifndef INCA_CLI_PROGRESS_H
#define INCA_CLI_PROGRESS_H

typedef struct cli_progress {
    int on, open;
    double t0, last;
    char cmd[32];
} cli_progress_t;

/* With the line on, also cli_progress_sigint_install: Ctrl-C ends the shown line. */
void cli_progress_init(cli_progress_t *p, const char *cmd, int quiet);
/* "\r<cmd>: <message>  <elapsed> s" and the rest of the line erased; at most every 0.2 s unless
 * force (a new stage). */
void cli_progress(cli_progress_t *p, int force, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cli_progress_end(cli_progress_t *p);   /* erase the line, if one is shown */

/* SIGINT (Ctrl-C) while a status line is shown: the handler writes "\n" (write(2), the one
 * async-signal-safe way) so the shell's prompt starts on a line of its own, then the process dies
 * of the signal as it would have (the shell says 130, and a shell loop around it stops). Nothing
 * when SIGINT is ignored (a background job, nohup). Once per process; cli_progress_init calls it
 * for a line that is on. For a status line drawn by other code (train's log): install, and say
 * when a line is left unterminated with cli_progress_line_open(1) and when it is ended with (0). */
void cli_progress_sigint_install(void);
void cli_progress_line_open(int open);
#endif
