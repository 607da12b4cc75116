/* One status line on stderr, rewritten in place, for the long commands (ingest, gen, partition,
 * train, prune): only when stderr is a terminal and --quiet is not given, so pipes and logs get
 * nothing. Tested in tests/test_e2e_help.c under a pseudo-terminal (script) and a pipe. */
#ifndef INCA_CLI_PROGRESS_H
#define INCA_CLI_PROGRESS_H

typedef struct cli_progress {
    int on, open;
    double t0, last;
    char cmd[32];
} cli_progress_t;

void cli_progress_init(cli_progress_t *p, const char *cmd, int quiet);
/* "\r<cmd>: <message>  <elapsed> s" and the rest of the line erased; at most every 0.2 s unless
 * force (a new stage). */
void cli_progress(cli_progress_t *p, int force, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cli_progress_end(cli_progress_t *p);   /* erase the line, if one is shown */
#endif
