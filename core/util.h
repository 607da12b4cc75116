/* Small helpers shared by every module: wall clock, peak RSS, thread count. */
#ifndef INCA_UTIL_H
#define INCA_UTIL_H
#include <stddef.h>
#include <stdint.h>

double inca_now(void);            /* monotonic seconds */
double inca_peak_rss_mb(void);    /* getrusage ru_maxrss of this process, MiB */
/* Threads used by parallel kernels: set once from --threads (default: online CPUs). */
void inca_set_threads(int t);
int inca_threads(void);
/* The calling thread's OpenMP team size set to inca_threads(): OpenMP keeps it per thread, so
 * a thread inca starts (--workers ranks, loaders) began with the machine's core count, and
 * GEMM's blocks (kern_gemm: by thread count) followed the machine instead of --threads. */
void inca_thread_adopt(void);

/* qsort's comparison of int64_t, ascending */
int inca_cmp_i64(const void *a, const void *b);
/* FNV-1a over bytes, continuing from h (start from INCA_FNV_BASIS): a checksum of what a file
 * was made from (checkpoints, pruning's stored dynamics), not a hash for hostile input. */
#define INCA_FNV_BASIS 14695981039346656037ull
uint64_t inca_fnv1a(uint64_t h, const void *p, size_t bytes);

/* madvise(advice) over the pages holding [p, p + bytes) (the range widened to page bounds);
 * a hint, its failure ignored; nothing for p NULL or bytes <= 0. */
void inca_madvise(const void *p, int64_t bytes, int advice);

/* Filesystem helpers. */
int inca_path_exists(const char *path);
/* Remove a file or a directory tree (like rm -rf); missing path is fine. Returns INCA_OK or
 * INCA_EIO with a message. */
int inca_rmtree(const char *path);
/* Outputs are written to a temporary beside path and renamed over it, so a failure to write
 * says so in terms of the path the user gave, never the temporary's name:
 * inca_out_check: INCA_OK when path's folder exists and takes new entries; else ENOTFOUND
 * ("PATH: cannot write: folder DIR does not exist") or EIO naming path, its folder and why.
 * inca_fail_write: the message for a write of path that failed with errno err (the folder's
 * problem when it has one, else strerror(err)), INCA_EIO or ENOTFOUND. */
int inca_out_check(const char *path);
int inca_fail_write(const char *path, int err);
/* The current message with every occurrence of tmp (a temporary name beside path) replaced by
 * path, so an error deep inside a write names the user's output; returns code. */
int inca_err_untemp(int code, const char *tmp, const char *path);
#endif
