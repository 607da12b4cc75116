/* See mpi_relaunch.h. */
#include "cli/mpi_relaunch.h"
#include "core/status.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    /* Open MPI refuses to start as root (containers run as root) and to start more ranks than
     * cores; the user asked inca for np ranks here, so its own launch says yes to both, through
     * Open MPI's environment (other launchers ignore it) and never over what the user set */
    char extra[256] = "";
    if (geteuid() == 0 && !getenv("OMPI_ALLOW_RUN_AS_ROOT")) {
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
        snprintf(extra, sizeof extra, " (as root: OMPI_ALLOW_RUN_AS_ROOT=1)");
    }
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores > 0 && np > cores && !getenv("OMPI_MCA_rmaps_base_oversubscribe")) {
        setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " (%d ranks on %ld cores: oversubscribed)", np, cores);
    }
    /* the launch is a status line: --quiet (passed on to the ranks) silences it too */
    int quiet = 0;
    for (int i = 0; i < argc; i++) quiet |= strcmp(argv[i], "--quiet") == 0;
    if (!quiet) {
        fprintf(stderr, "%s: starting %d ranks: %s -n %s %s %s%s...%s\n", what, np, INCA_MPIEXEC, nps, self,
                prefix ? prefix : "", prefix ? " " : "", extra);
        fflush(stderr);
    }
    execv(INCA_MPIEXEC, av);
    return inca_fail(INCA_ERR, "%s: cannot start %s", what, INCA_MPIEXEC);
#else
    (void)prefix;
    (void)argc;
    (void)argv;
    return inca_fail(INCA_EINVAL, "%s --ranks %d: this inca found no MPI launcher; start it under mpirun -np %d", what, np, np);
#endif
}
