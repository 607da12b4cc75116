/* Side files of a store (see sidefile.h). Plain POSIX I/O: write(2) in 1 GiB pieces (Linux
 * caps one call at 2 GiB - 4 KiB), fsync before the rename, fsync of the directory after. */
#include "loaders/sidefile.h"
#include "core/alloc.h"
#include "core/status.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define PIECE ((int64_t)1 << 30)

uint32_t sidefile_crc(const void *p, int64_t bytes) {
    uLong c = crc32_z(0L, Z_NULL, 0);
    for (int64_t at = 0; at < bytes; at += PIECE)
        c = crc32_z(c, (const unsigned char *)p + at, (z_size_t)(bytes - at < PIECE ? bytes - at : PIECE));
    return (uint32_t)c;
}

int sidefile_is_name(const char *name, int tmp) {
    size_t n = strlen(name);
    if (strncmp(name, "side-", 5) != 0 || n != 5 + 16 + 4 + (tmp ? 4 : 0)) return 0;
    for (size_t i = 5; i < 21; i++)
        if (!strchr("0123456789abcdef", name[i])) return 0;
    return strcmp(name + 21, tmp ? ".bin.tmp" : ".bin") == 0;
}

/* write(2) of all bytes; *crc gets their CRC32, summed piece by piece as they go out (the
 * bytes are read once) */
static int write_all(int fd, const void *data, int64_t bytes, uint32_t *crc) {
    uLong c = crc32_z(0L, Z_NULL, 0);
    for (int64_t at = 0; at < bytes;) {
        const int64_t want = bytes - at < PIECE ? bytes - at : PIECE;
        ssize_t k = write(fd, (const char *)data + at, (size_t)want);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return k < 0 ? errno : ENOSPC;
        c = crc32_z(c, (const unsigned char *)data + at, (z_size_t)k);
        at += k;
    }
    *crc = (uint32_t)c;
    return 0;
}

/* A fresh name: 64 random bits, so that two writers (or a crash's leftovers) never meet. */
static int new_name(const char *dir, char *name, char *tmp, size_t cap, int *fd) {
    for (int tries = 0; tries < 16; tries++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) r ^= (uint64_t)getpid() << 32 ^ (uint64_t)tries;
        snprintf(name, SIDEFILE_NAME_MAX, "side-%016llx.bin", (unsigned long long)r);
        snprintf(tmp, cap, "%s/%s.tmp", dir, name);
        char fin[4096];
        struct stat st;
        snprintf(fin, sizeof fin, "%s/%s", dir, name);
        if (stat(fin, &st) == 0) continue;
        *fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (*fd >= 0) return INCA_OK;
        if (errno != EEXIST) return inca_fail(INCA_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    }
    return inca_fail(INCA_EIO, "%s: no free side-file name after 16 tries", dir);
}

static int sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno;
    int e = fsync(fd) ? errno : 0;
    close(fd);
    return e;
}

int sidefile_write(const char *dir, const void *data, int64_t bytes, char *name, uint32_t *crc) {
    char tmp[4096], fin[4096];
    int fd = -1;
    int rc = new_name(dir, name, tmp, sizeof tmp, &fd);
    if (rc) return rc;
    int e = write_all(fd, data, bytes, crc);
    if (!e && fsync(fd)) e = errno;
    if (close(fd) && !e) e = errno;
    snprintf(fin, sizeof fin, "%s/%s", dir, name);
    if (!e && rename(tmp, fin)) e = errno;
    if (!e) e = sync_dir(dir);
    if (e) {
        unlink(tmp);
        unlink(fin);
        name[0] = '\0';
        return inca_fail(INCA_EIO, "%s: cannot write %lld bytes: %s%s", fin, (long long)bytes, strerror(e),
                         e == ENOSPC || e == EFBIG || e == EDQUOT ? " (disk full or file-size limit)" : "");
    }
    return INCA_OK;
}

int sidefile_map(const char *dir, const char *name, int64_t bytes, const void **ptr) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    *ptr = NULL;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return inca_fail(errno == ENOENT ? INCA_ENOTFOUND : INCA_EIO, "%s: cannot open the store's side file: %s%s", p,
                         strerror(errno), errno == ENOENT ? " (the store is incomplete: restore a copy)" : "");
    struct stat st;
    int rc = INCA_OK;
    if (fstat(fd, &st) != 0) rc = inca_fail(INCA_EIO, "%s: %s", p, strerror(errno));
    else if ((int64_t)st.st_size != bytes)
        rc = inca_fail(INCA_EINVAL, "%s: side file has %lld bytes, its descriptor says %lld: the store is corrupt", p,
                       (long long)st.st_size, (long long)bytes);
    void *m = rc ? MAP_FAILED : mmap(NULL, (size_t)bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (!rc && m == MAP_FAILED) rc = inca_fail(INCA_EIO, "%s: cannot map %lld bytes: %s", p, (long long)bytes, strerror(errno));
    close(fd);
    if (!rc) *ptr = m;
    return rc;
}

int sidefile_map_checked(const char *dir, const char *name, int64_t bytes, uint32_t crc, const void **ptr) {
    int rc = sidefile_map(dir, name, bytes, ptr);
    if (rc) return rc;
    const uint32_t got = sidefile_crc(*ptr, bytes);
    if (got == crc) return INCA_OK;
    sidefile_unmap(*ptr, bytes);
    *ptr = NULL;
    return inca_fail(INCA_EINVAL, "%s/%s fails its checksum (crc32 %08x, stored %08x): the store is corrupt; "
                     "re-ingest it or restore a copy", dir, name, got, crc);
}

void sidefile_unmap(const void *ptr, int64_t bytes) {
    if (ptr) munmap((void *)ptr, (size_t)bytes);
}

int sidefile_remove(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (unlink(p) != 0 && errno != ENOENT) return inca_fail(INCA_EIO, "%s: cannot remove: %s", p, strerror(errno));
    return INCA_OK;
}

static int walk(const char *dir, int (*keep)(void *ctx, const char *name), void *ctx, int remove, int *count) {
    DIR *d = opendir(dir);
    if (!d) return inca_fail(INCA_EIO, "%s: cannot list the store directory: %s", dir, strerror(errno));
    int rc = INCA_OK;
    *count = 0;
    for (struct dirent *e; rc == INCA_OK && (e = readdir(d));) {
        const int tmp = sidefile_is_name(e->d_name, 1);
        if (!tmp && (!sidefile_is_name(e->d_name, 0) || keep(ctx, e->d_name))) continue;
        ++*count;
        if (remove) rc = sidefile_remove(dir, e->d_name);
    }
    closedir(d);
    return rc;
}

int sidefile_sweep(const char *dir, int (*keep)(void *ctx, const char *name), void *ctx, int *removed) {
    int n = 0, rc = walk(dir, keep, ctx, 1, &n);
    if (removed) *removed = n;
    return rc;
}

int sidefile_count_strays(const char *dir, int (*keep)(void *ctx, const char *name), void *ctx, int *strays) {
    return walk(dir, keep, ctx, 0, strays);
}

struct sidefile_cache {
    struct { char name[SIDEFILE_NAME_MAX]; const void *p; int64_t bytes; } *m;
    int n, cap;
};

int sidefile_cache_get(sidefile_cache_t **cp, const char *dir, const char *name, int64_t bytes, uint32_t crc,
                       const void **ptr) {
    if (!*cp && !(*cp = inca_calloc(1, sizeof **cp))) return INCA_ENOMEM;
    sidefile_cache_t *c = *cp;
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->m[i].name, name) == 0 && c->m[i].bytes == bytes) { *ptr = c->m[i].p; return INCA_OK; }
    if (c->n == c->cap) {
        int nc = c->cap ? 2 * c->cap : 4;
        void *nm = inca_realloc(c->m, (size_t)nc * sizeof *c->m);
        if (!nm) return INCA_ENOMEM;
        c->m = nm;
        c->cap = nc;
    }
    const void *p;
    int rc = sidefile_map_checked(dir, name, bytes, crc, &p);
    if (rc) return rc;
    snprintf(c->m[c->n].name, SIDEFILE_NAME_MAX, "%s", name);
    c->m[c->n].p = p;
    c->m[c->n++].bytes = bytes;
    *ptr = p;
    return INCA_OK;
}

void sidefile_cache_free(sidefile_cache_t **cp) {
    if (!cp || !*cp) return;
    for (int i = 0; i < (*cp)->n; i++) sidefile_unmap((*cp)->m[i].p, (*cp)->m[i].bytes);
    inca_free((*cp)->m);
    INCA_FREE(*cp);
}

int64_t sidefile_total_bytes(const char *dir) {
    DIR *d = opendir(dir);
    int64_t total = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) {
        char p[4096];
        struct stat st;
        if (!sidefile_is_name(e->d_name, 0)) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (stat(p, &st) == 0) total += (int64_t)st.st_size;
    }
    closedir(d);
    return total;
}
