/* Clock, peak RSS and the thread count; see util.h. */
#include "core/util.h"
#include <omp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifdef INCA_HAVE_OPENBLAS_THREADS
void openblas_set_num_threads(int);   /* OpenBLAS's own; declared here to avoid cblas.h */
#endif

static int g_threads = 0;

double inca_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double inca_peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

void inca_set_threads(int t) {
    if (t <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        t = n > 0 ? (int)n : 1;
    }
    g_threads = t;
    omp_set_num_threads(t);
    /* BLAS calls run single-threaded inside inca's own OpenMP blocks (kern_gemm): one thread
     * pool instead of two pools spin-waiting against each other. (Other CBLAS builds Debian
     * ships, BLIS and the reference BLAS, are single-threaded unless told otherwise.) */
#ifdef INCA_HAVE_OPENBLAS_THREADS
    openblas_set_num_threads(1);
#endif
}

int inca_threads(void) {
    if (g_threads == 0) inca_set_threads(0);
    return g_threads;
}

void inca_thread_adopt(void) { omp_set_num_threads(inca_threads()); }

#include "core/status.h"
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int inca_path_exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(p) == 0 || errno == ENOENT ? 0 : -1;
}

int inca_rmtree(const char *path) {
    if (!inca_path_exists(path)) return INCA_OK;
    if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        return inca_fail(INCA_EIO, "%s: cannot remove: %s", path, strerror(errno));
    return INCA_OK;
}

/* The folder part of path ("." when it has none, "/" for "/x"). */
static void parent_of(const char *path, char *dir, size_t cap) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;   /* "out/x/" names x */
    size_t k = n;
    while (k > 0 && path[k - 1] != '/') k--;
    if (k == 0) { snprintf(dir, cap, "."); return; }
    while (k > 1 && path[k - 1] == '/') k--;
    snprintf(dir, cap, "%.*s", (int)k, path);
}

int inca_out_check(const char *path) {
    char dir[4096];
    struct stat st;
    parent_of(path, dir, sizeof dir);
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return inca_fail(INCA_ENOTFOUND, "%s: cannot write: folder %s does not exist", path, dir);
        return inca_fail(INCA_EIO, "%s: cannot write: folder %s: %s", path, dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) return inca_fail(INCA_ENOTFOUND, "%s: cannot write: %s is not a folder", path, dir);
    /* access() sees read-only mounts and, for other users than root, the folder's permissions */
    if (access(dir, W_OK | X_OK) != 0)
        return inca_fail(INCA_EIO, "%s: cannot write in folder %s: %s", path, dir, strerror(errno));
    return INCA_OK;
}

int inca_fail_write(const char *path, int err) {
    int rc = inca_out_check(path);
    if (rc != INCA_OK) return rc;
    return inca_fail(INCA_EIO, "%s: cannot write: %s", path, strerror(err));
}

int inca_err_untemp(int code, const char *tmp, const char *path) {
    const char *m = inca_errmsg();
    const size_t tl = strlen(tmp), pl = strlen(path);
    char out[1024];
    size_t o = 0;
    if (tl == 0 || !strstr(m, tmp)) return code;
    while (*m && o + 1 < sizeof out) {
        if (strncmp(m, tmp, tl) == 0 && o + pl + 1 < sizeof out) {
            memcpy(out + o, path, pl);
            o += pl;
            m += tl;
        } else out[o++] = *m++;
    }
    out[o] = '\0';
    return inca_fail(code, "%s", out);
}

void inca_madvise(const void *p, int64_t bytes, int advice) {
    if (!p || bytes <= 0) return;
    const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), lo = (uintptr_t)p & ~(pg - 1);
    (void)madvise((void *)lo, (uintptr_t)p + (uintptr_t)bytes - lo, advice);
}

int inca_cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

uint64_t inca_fnv1a(uint64_t h, const void *p, size_t bytes) {
    for (size_t i = 0; i < bytes; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}
