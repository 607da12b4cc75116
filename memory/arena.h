/* The memory arena for history tables: every table of a run is allocated here, so the bytes of
 * each are accounted for and reported. NUMA-aware: with libnuma available and several nodes,
 * blocks are interleaved over all nodes (numa_alloc_interleaved); with one node or no libnuma
 * at run time, a plain 64-byte-aligned allocation. Memory is zeroed.
 * Tested in test_memory.c (accounting, zeroing, alignment, failure injection). */
/* Spilling (--memory-budget): blocks allocated with mem_arena_alloc_spill stay in anonymous
 * memory while the spillable bytes so far fit the budget; a block that would exceed it goes to
 * a file-backed shared map instead: a temporary file created in the spill folder, unlinked at
 * once (nothing is left behind, even after a crash), sized with ftruncate (sparse: zero pages
 * cost no disk until written) and mapped MAP_SHARED, so its pages are the page cache's to write
 * back and evict, and count as file pages (RssFile), not anonymous memory. For tables rewritten
 * every step: never LMDB, whose copy-on-write would copy them on every commit. */
#ifndef INCA_ARENA_H
#define INCA_ARENA_H
#include <stddef.h>
#include <stdint.h>

typedef struct mem_arena mem_arena_t;

int mem_arena_create(mem_arena_t **out);
/* Frees every block, then the arena; sets *a = NULL; NULL-safe. */
void mem_arena_destroy(mem_arena_t **a);
/* A zeroed block of `bytes`, owned by the arena (valid until destroy), labelled for the report
 * ("hist1", "M0", ...; copied, at most 31 chars). NULL + message on failure. */
void *mem_arena_alloc(mem_arena_t *a, size_t bytes, const char *label);
/* Spillable blocks beyond `anon_budget` bytes go to files in `dir` (copied; NULL or "" = the
 * current folder). anon_budget < 0: no limit (the default). */
int mem_arena_set_spill(mem_arena_t *a, int64_t anon_budget, const char *dir);
/* A zeroed block like mem_arena_alloc that may be file-backed (see above). */
void *mem_arena_alloc_spill(mem_arena_t *a, size_t bytes, const char *label);
int mem_arena_block_spilled(const mem_arena_t *a, int i);   /* 1: block i is file-backed */
size_t mem_arena_spilled_bytes(const mem_arena_t *a);      /* bytes of file-backed blocks */
size_t mem_arena_bytes(const mem_arena_t *a);      /* total bytes handed out */
int mem_arena_numa_nodes(const mem_arena_t *a);   /* nodes interleaved over (1 = plain) */
int mem_arena_count(const mem_arena_t *a);         /* number of blocks */
/* Label and size of block i (0 <= i < count). */
const char *mem_arena_label(const mem_arena_t *a, int i);
size_t mem_arena_block_bytes(const mem_arena_t *a, int i);
#endif
