/* See mpi_relaunch.h. */
#include "cli/mpi_relaunch.h"
#include "core/status.h"
#include <stdio.h>
#include <unistd.h>

int cli_mpi_relaunch(const char *what, const char *prefix, int argc, char **argv, int np) {
#ifdef INCA_MPIEXEC
    char nps[16], self[4096];
    const ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) return inca_fail(INCA_ERR, "%s: cannot find this executable to start it under mpiexec", what);
    self[k] = 0;
    snprintf(nps, sizeof nps, "%d", np);
    char *av[256];
    int n = 0;
    av[n++] = (char *)INCA_MPIEXEC;
    av[n++] = (char *)"-n";
    av[n++] = nps;
    av[n++] = self;
    if (prefix) av[n++] = (char *)prefix;
    if (argc > 250 - n) return inca_fail(INCA_EINVAL, "%s: too many arguments to start under mpiexec", what);
    for (int i = 0; i < argc; i++) av[n++] = argv[i];
    av[n] = NULL;
    fprintf(stderr, "%s: starting %d ranks: %s -n %s %s %s%s...\n", what, np, INCA_MPIEXEC, nps, self, prefix ? prefix : "",
            prefix ? " " : "");
    fflush(stderr);
    execv(INCA_MPIEXEC, av);
    return inca_fail(INCA_ERR, "%s: cannot start %s", what, INCA_MPIEXEC);
#else
    (void)prefix;
    (void)argc;
    (void)argv;
    return inca_fail(INCA_EINVAL, "%s --ranks %d: this inca found no MPI launcher; start it under mpirun -np %d", what, np, np);
#endif
}
