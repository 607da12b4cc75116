/* Small helpers shared by every module: wall clock, peak RSS, thread count. */
#ifndef INCA_UTIL_H
#define INCA_UTIL_H
#include <stdint.h>

double inca_now(void);            /* monotonic seconds */
double inca_peak_rss_mb(void);    /* getrusage ru_maxrss of this process, MiB */
/* Threads used by parallel kernels: set once from --threads (default: online CPUs). */
void inca_set_threads(int t);
int inca_threads(void);

/* madvise(advice) over the pages holding [p, p + bytes) (the range widened to page bounds);
 * a hint, its failure ignored; nothing for p NULL or bytes <= 0. */
void inca_madvise(const void *p, int64_t bytes, int advice);

/* Filesystem helpers. */
int inca_path_exists(const char *path);
/* Remove a file or a directory tree (like rm -rf); missing path is fine. Returns INCA_OK or
 * INCA_EIO with a message. */
int inca_rmtree(const char *path);
#endif
