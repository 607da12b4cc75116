/* Starting a command again as an MPI job (`inca bench scale --ranks`, `inca partition --method
 * parmetis --ranks`): the launcher CMake found (INCA_MPIEXEC) runs this executable np times with
 * the same arguments. Nothing here moves data between processes. */
#ifndef INCA_CLI_MPI_RELAUNCH_H
#define INCA_CLI_MPI_RELAUNCH_H

/* execv: mpiexec -n np <this executable> [prefix] argv[0] .. argv[argc - 1]. Returns only on
 * failure (INCA_ERR; INCA_EINVAL naming `what` when this build has no launcher). */
int cli_mpi_relaunch(const char *what, const char *prefix, int argc, char **argv, int np);
#endif
