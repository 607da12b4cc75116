/* Checked allocation with a failure-injection hook (as SuiteSparse:GraphBLAS does), so tests
 * can make the N-th allocation fail and prove every error path frees what it took.
 * All project code allocates through these; on failure they set the error message. */
#ifndef INCA_ALLOC_H
#define INCA_ALLOC_H
#include <stddef.h>

void *inca_malloc(size_t bytes);              /* NULL + message on failure; bytes 0 -> 1 */
void *inca_calloc(size_t n, size_t size);     /* overflow-checked */
void *inca_realloc(void *p, size_t bytes);    /* on failure p stays valid */
void *inca_malloc_aligned(size_t bytes);      /* 64-byte aligned; free with inca_free */
void inca_free(void *p);                      /* NULL is fine */
/* For memory taken outside these functions (mmap): 1, with the out-of-memory message, when the
 * injected failure falls on this allocation; 0 otherwise. */
int inca_alloc_injected(size_t bytes);
/* Make the allocation `n` calls from now fail (n = 1: the next one); 0 disables. */
void inca_alloc_fail_after(long n);

#define INCA_FREE(p) do { inca_free(p); (p) = NULL; } while (0)
#endif
