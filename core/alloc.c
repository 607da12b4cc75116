/* Checked allocation with failure injection; see alloc.h. Tested in test_core.c and by the
 * failure-injection loops of the store and graph tests. */
#include "core/alloc.h"
#include "core/status.h"
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

static atomic_long g_fail_countdown;

static int should_fail(void) {
    long c = atomic_load(&g_fail_countdown);
    while (c > 0) {
        if (atomic_compare_exchange_weak(&g_fail_countdown, &c, c - 1))
            return c == 1;
    }
    return 0;
}

void inca_alloc_fail_after(long n) { atomic_store(&g_fail_countdown, n < 0 ? 0 : n); }

void *inca_malloc(size_t bytes) {
    if (should_fail()) {
        inca_fail(INCA_ENOMEM, "out of memory (injected failure, %zu bytes)", bytes);
        return NULL;
    }
    void *p = malloc(bytes ? bytes : 1);
    if (!p) inca_fail(INCA_ENOMEM, "out of memory allocating %zu bytes", bytes);
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
    return p;
}

void *inca_realloc(void *p, size_t bytes) {
    if (should_fail()) {
        inca_fail(INCA_ENOMEM, "out of memory (injected failure, %zu bytes)", bytes);
        return NULL;
    }
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) inca_fail(INCA_ENOMEM, "out of memory reallocating %zu bytes", bytes);
    return q;
}

void *inca_malloc_aligned(size_t bytes) {
    if (should_fail()) {
        inca_fail(INCA_ENOMEM, "out of memory (injected failure, %zu bytes)", bytes);
        return NULL;
    }
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
        inca_fail(INCA_ENOMEM, "out of memory allocating %zu aligned bytes", bytes);
        return NULL;
    }
    return p;
}

void inca_free(void *p) { free(p); }
