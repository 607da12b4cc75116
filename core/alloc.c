/* Checked allocation with failure injection; see alloc.h. Tested in test_core.c and by the
 * failure-injection loops of the store and graph tests. */
#define _DEFAULT_SOURCE   /* madvise, MADV_HUGEPAGE */
#include "core/alloc.h"
#include "core/status.h"
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* Large blocks (feature matrices, history tables, adjacency arrays, layer workspaces) are read
 * by random row gathers (SpMM, halo pulls): with 4 KiB pages nearly every gathered row misses
 * the TLB and first touch costs one fault per 4 KiB. Ask for transparent huge pages on the
 * 2 MiB-aligned interior of every block of at least INCA_HUGE_MIN bytes; a no-op where THP is
 * off or unsupported (madvise's result is deliberately ignored: it is advice). */
#define INCA_HUGE_MIN ((size_t)8 << 20)
#define INCA_HUGE_PAGE ((uintptr_t)2 << 20)
static void advise_huge(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
    if (!p || bytes < INCA_HUGE_MIN) return;
    uintptr_t lo = ((uintptr_t)p + INCA_HUGE_PAGE - 1) & ~(INCA_HUGE_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(INCA_HUGE_PAGE - 1);
    if (hi > lo) (void)madvise((void *)lo, (size_t)(hi - lo), MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

static atomic_long g_fail_countdown;

static int should_fail(void) {
    long c = atomic_load(&g_fail_countdown);
    while (c > 0) {
        if (atomic_compare_exchange_weak(&g_fail_countdown, &c, c - 1))
            return c == 1;
    }
    return 0;
}

int inca_alloc_injected(size_t bytes) {
    if (!should_fail()) return 0;
    inca_fail(INCA_ENOMEM, "out of memory (injected failure, %zu bytes)", bytes);
    return 1;
}

void inca_alloc_fail_after(long n) { atomic_store(&g_fail_countdown, n < 0 ? 0 : n); }

void *inca_malloc(size_t bytes) {
    if (should_fail()) {
        inca_fail(INCA_ENOMEM, "out of memory (injected failure, %zu bytes)", bytes);
        return NULL;
    }
    void *p = malloc(bytes ? bytes : 1);
    if (!p) inca_fail(INCA_ENOMEM, "out of memory allocating %zu bytes", bytes);
    advise_huge(p, bytes);
    return p;
}

void *inca_calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) {
        inca_fail(INCA_ENOMEM, "allocation of %zu x %zu bytes overflows", n, size);
        return NULL;
    }
    if (should_fail()) {
        inca_fail(INCA_ENOMEM, "out of memory (injected failure, %zu bytes)", n * size);
        return NULL;
    }
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) inca_fail(INCA_ENOMEM, "out of memory allocating %zu bytes", n * size);
    advise_huge(p, n * size);
    return p;
}

void *inca_realloc(void *p, size_t bytes) {
    if (should_fail()) {
        inca_fail(INCA_ENOMEM, "out of memory (injected failure, %zu bytes)", bytes);
        return NULL;
    }
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) inca_fail(INCA_ENOMEM, "out of memory reallocating %zu bytes", bytes);
    advise_huge(q, bytes);
    return q;
}

void *inca_malloc_aligned(size_t bytes) {
    if (should_fail()) {
        inca_fail(INCA_ENOMEM, "out of memory (injected failure, %zu bytes)", bytes);
        return NULL;
    }
    void *p = NULL;
    const size_t align = bytes >= INCA_HUGE_MIN ? (size_t)INCA_HUGE_PAGE : 64;
    if (posix_memalign(&p, align, bytes ? bytes : 64) != 0) {
        inca_fail(INCA_ENOMEM, "out of memory allocating %zu aligned bytes", bytes);
        return NULL;
    }
    advise_huge(p, bytes);
    return p;
}

void inca_free(void *p) { free(p); }
