/* NUMA-aware arena with byte accounting (see arena.h). Tested in test_memory.c. */
#define _DEFAULT_SOURCE   /* madvise */
#include "memory/arena.h"
#include "core/alloc.h"
#include "core/status.h"
#include <numa.h>
#include <sys/mman.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* blocks from this size on are anonymous maps (committed on first touch) */
#define ARENA_MAP_MIN ((size_t)1 << 20)

typedef struct block { void *p; size_t bytes; int numa, file, anon; char label[32]; } block_t;

struct mem_arena {
    block_t *blocks;
    int n, cap;
    int numa_nodes;   /* >1: interleave */
    size_t total;
    int64_t budget;        /* spillable bytes kept anonymous (< 0: no limit) */
    size_t spill_anon;     /* spillable bytes in anonymous memory so far */
    size_t spilled;        /* bytes in file-backed blocks */
    char *dir;             /* where spill files are made */
};

int mem_arena_create(mem_arena_t **out) {
    *out = NULL;
    mem_arena_t *a = inca_calloc(1, sizeof *a);
    if (!a) return INCA_ENOMEM;
    a->numa_nodes = 1;
    a->budget = -1;
    if (numa_available() >= 0) {
        int nodes = numa_num_configured_nodes();
        if (nodes > 1) a->numa_nodes = nodes;
    }
    *out = a;
    return INCA_OK;
}

void mem_arena_destroy(mem_arena_t **pa) {
    if (!pa || !*pa) return;
    mem_arena_t *a = *pa;
    for (int i = 0; i < a->n; i++) {
        if (a->blocks[i].file || a->blocks[i].anon) munmap(a->blocks[i].p, a->blocks[i].bytes);
        else if (a->blocks[i].numa) numa_free(a->blocks[i].p, a->blocks[i].bytes);
        else inca_free(a->blocks[i].p);
    }
    inca_free(a->blocks);
    inca_free(a->dir);
    inca_free(a);
    *pa = NULL;
}

int mem_arena_set_spill(mem_arena_t *a, int64_t anon_budget, const char *dir) {
    const char *src = dir && *dir ? dir : ".";
    char *d = inca_malloc(strlen(src) + 1);
    if (!d) return INCA_ENOMEM;
    memcpy(d, src, strlen(src) + 1);
    inca_free(a->dir);
    a->dir = d;
    a->budget = anon_budget;
    return INCA_OK;
}

/* A zeroed shared map of `bytes` backed by an unlinked temporary file in a->dir. */
static void *file_map(mem_arena_t *a, size_t bytes, const char *label) {
    size_t len = strlen(a->dir) + 32;
    char *path = inca_malloc(len);
    if (!path) return NULL;
    snprintf(path, len, "%s/.inca-spill-XXXXXX", a->dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        inca_fail(INCA_EIO, "%s: cannot create a spill file for table %s: %s", a->dir, label ? label : "?", strerror(errno));
        inca_free(path);
        return NULL;
    }
    (void)unlink(path);   /* the map keeps the file alive; nothing outlives the process */
    void *p = MAP_FAILED;
    /* the blocks reserved now: a sparse file (ftruncate) on a disk that fills up later kills the
     * process with SIGBUS at the first write to a page without a block (seen at 10M nodes) */
    int e = posix_fallocate(fd, 0, (off_t)bytes);
    if (e == EINVAL || e == EOPNOTSUPP) e = ftruncate(fd, (off_t)bytes) != 0 ? errno : 0;   /* no fallocate here */
    if (e)
        inca_fail(INCA_EIO, "%s: cannot reserve %zu bytes of disk for a spill file of table %s: %s%s", a->dir, bytes,
                  label ? label : "?", strerror(e), e == ENOSPC || e == EFBIG || e == EDQUOT
                  ? " (disk full or file-size limit: free space there or raise --memory-budget)" : "");
    else if ((p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
        inca_fail(INCA_ENOMEM, "%s: cannot map a %zu-byte spill file for table %s: %s", a->dir, bytes, label ? label : "?", strerror(errno));
    close(fd);
    inca_free(path);
    return p == MAP_FAILED ? NULL : p;
}

static void *arena_alloc(mem_arena_t *a, size_t bytes, const char *label, int spill) {
    if (bytes == 0) bytes = 1;
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 16;
        block_t *nb = inca_realloc(a->blocks, sizeof *nb * (size_t)cap);
        if (!nb) return NULL;
        a->blocks = nb;
        a->cap = cap;
    }
    block_t *b = &a->blocks[a->n];
    memset(b, 0, sizeof *b);
    const int to_file = spill && a->budget >= 0 && a->spill_anon + bytes > (size_t)a->budget;
    if (to_file) {
        if (!(b->p = file_map(a, bytes, label))) return NULL;
        b->file = 1;
        a->spilled += bytes;
    } else if (a->numa_nodes > 1) {
        b->p = numa_alloc_interleaved(bytes);   /* mmap'd: zeroed pages */
#ifdef MADV_HUGEPAGE
        if (b->p && bytes >= ((size_t)8 << 20)) (void)madvise(b->p, bytes, MADV_HUGEPAGE);   /* as inca_malloc_aligned */
#endif
        b->numa = 1;
        if (!b->p) { inca_fail(INCA_ENOMEM, "numa_alloc_interleaved(%zu) failed for %s", bytes, label ? label : "?"); return NULL; }
    } else if (bytes >= ARENA_MAP_MIN) {
        /* a fresh anonymous map: zero pages that cost memory only once touched, so a process that
         * uses some rows of a table (a data-parallel rank: its own and its halo's) holds those */
        if (inca_alloc_injected(bytes)) return NULL;
        b->p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b->p == MAP_FAILED) {
            b->p = NULL;
            inca_fail(INCA_ENOMEM, "out of memory mapping %zu bytes for %s", bytes, label ? label : "?");
            return NULL;
        }
#ifdef MADV_HUGEPAGE
        if (bytes >= ((size_t)8 << 20)) (void)madvise(b->p, bytes, MADV_HUGEPAGE);
#endif
        b->anon = 1;
    } else {
        b->p = inca_malloc_aligned(bytes);
        if (!b->p) return NULL;
        memset(b->p, 0, bytes);
    }
    if (spill && !to_file) a->spill_anon += bytes;
    b->bytes = bytes;
    snprintf(b->label, sizeof b->label, "%s", label ? label : "");
    a->total += bytes;
    a->n++;
    return b->p;
}

void *mem_arena_alloc(mem_arena_t *a, size_t bytes, const char *label) { return arena_alloc(a, bytes, label, 0); }
void *mem_arena_alloc_spill(mem_arena_t *a, size_t bytes, const char *label) { return arena_alloc(a, bytes, label, 1); }
int mem_arena_block_spilled(const mem_arena_t *a, int i) { return a->blocks[i].file; }
size_t mem_arena_spilled_bytes(const mem_arena_t *a) { return a ? a->spilled : 0; }
size_t mem_arena_bytes(const mem_arena_t *a) { return a ? a->total : 0; }
int mem_arena_numa_nodes(const mem_arena_t *a) { return a->numa_nodes; }
int mem_arena_count(const mem_arena_t *a) { return a ? a->n : 0; }
const char *mem_arena_label(const mem_arena_t *a, int i) { return a->blocks[i].label; }
size_t mem_arena_block_bytes(const mem_arena_t *a, int i) { return a->blocks[i].bytes; }
