/* The job's ranks for the commands (see job.h). */
#include "cli/job.h"

static struct comm *g_comm;
struct comm *cli_comm(void) { return g_comm; }
void cli_comm_set(struct comm *c) { g_comm = c; }
