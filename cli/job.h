/* The job's ranks (core/comm.h) for the commands: under mpirun the MPI world, else one rank.
 * main() makes it before a command runs and ends it after; train (and bench scale) use it, every
 * other command refuses more than one rank. Its own module so that the commands do not call
 * back into main.c (a circle of files). */
#ifndef INCA_CLI_JOB_H
#define INCA_CLI_JOB_H
struct comm;
struct comm *cli_comm(void);
/* Set by main() (NULL after comm_finalize). */
void cli_comm_set(struct comm *c);
#endif
