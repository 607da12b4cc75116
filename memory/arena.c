/* NUMA-aware arena with byte accounting (see arena.h). Tested in test_memory.c. */
#define _DEFAULT_SOURCE   /* madvise */
#include "memory/arena.h"
#include "core/alloc.h"
#include "core/status.h"
#include <numa.h>
#include <sys/mman.h>
#include <stdio.h>
#include <string.h>

typedef struct block { void *p; size_t bytes; int numa; char label[32]; } block_t;

struct mem_arena {
    block_t *blocks;
    int n, cap;
    int numa_nodes;   /* >1: interleave */
    size_t total;
};

int mem_arena_create(mem_arena_t **out) {
    *out = NULL;
    mem_arena_t *a = inca_calloc(1, sizeof *a);
    if (!a) return INCA_ENOMEM;
    a->numa_nodes = 1;
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
        if (a->blocks[i].numa) numa_free(a->blocks[i].p, a->blocks[i].bytes);
        else inca_free(a->blocks[i].p);
    }
    inca_free(a->blocks);
    inca_free(a);
    *pa = NULL;
}

void *mem_arena_alloc(mem_arena_t *a, size_t bytes, const char *label) {
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
    if (a->numa_nodes > 1) {
        b->p = numa_alloc_interleaved(bytes);   /* mmap'd: zeroed pages */
#ifdef MADV_HUGEPAGE
        if (b->p && bytes >= ((size_t)8 << 20)) (void)madvise(b->p, bytes, MADV_HUGEPAGE);   /* as inca_malloc_aligned */
#endif
        b->numa = 1;
        if (!b->p) { inca_fail(INCA_ENOMEM, "numa_alloc_interleaved(%zu) failed for %s", bytes, label ? label : "?"); return NULL; }
    } else {
        b->p = inca_malloc_aligned(bytes);
        if (!b->p) return NULL;
        memset(b->p, 0, bytes);
    }
    b->bytes = bytes;
    snprintf(b->label, sizeof b->label, "%s", label ? label : "");
    a->total += bytes;
    a->n++;
    return b->p;
}

size_t mem_arena_bytes(const mem_arena_t *a) { return a ? a->total : 0; }
int mem_arena_numa_nodes(const mem_arena_t *a) { return a->numa_nodes; }
int mem_arena_count(const mem_arena_t *a) { return a ? a->n : 0; }
const char *mem_arena_label(const mem_arena_t *a, int i) { return a->blocks[i].label; }
size_t mem_arena_block_bytes(const mem_arena_t *a, int i) { return a->blocks[i].bytes; }
