/* A kernel context's memory accounting (kmt_*): a table of live blocks (address -> size, kind,
 * use), bytes held and their peak per kind and per use, a device limit, and bytes copied per
 * direction. The context owns one (kern_ctx.mt) and its kc_mem_* calls (kernels/backend.h) wrap
 * these; this module knows nothing of contexts or backends. Thread-safe (one mutex). Tested
 * through kc_mem_* in test_backend.c. */
#ifndef INCA_KERNELS_MEMTRACK_H
#define INCA_KERNELS_MEMTRACK_H
#include <stddef.h>
#include <stdint.h>

typedef struct kern_memtrack kern_memtrack_t;
#define KMT_MAX_TAGS 24
enum { KMT_DEVICE = 0, KMT_PINNED = 1, KMT_HOST = 2 };   /* = kern_mem_t's values */

typedef struct kmt_stats {
    int64_t now[3], peak[3];       /* bytes held / most held, by kind (device, pinned, host) */
    int64_t limit;                 /* kmt_limit's device bytes (0: none) */
    int64_t device_total;          /* the device's memory (filled by the context: CUDA's
                                      cudaMemGetInfo, emu's size; 0: unknown, or the CPU) */
    int64_t device_free;           /* free on the device now, every process counted (0: unknown) */
    int64_t copied[3];             /* bytes copied, by direction (H2D, D2H, D2D) */
    int64_t allocs;                /* blocks recorded so far, every kind and use */
    int ntags;
    const char *tag[KMT_MAX_TAGS];                     /* tag 0 is "other" */
    int64_t tag_now[KMT_MAX_TAGS];                     /* device bytes per use */
} kmt_stats_t;

int kmt_create(kern_memtrack_t **out);
void kmt_free(kern_memtrack_t *m);                    /* NULL-safe */
/* INCA_ENOMEM (the budget, `what`, the use and every use's bytes in the message) when a device
 * block of `bytes` would pass the limit; INCA_OK otherwise and for other kinds. NULL m: OK. */
int kmt_admit(kern_memtrack_t *m, int mem, size_t bytes, const char *what);
int kmt_note(kern_memtrack_t *m, int mem, const void *p, size_t bytes);   /* a block made */
void kmt_forget(kern_memtrack_t *m, const void *p);                       /* ... and freed */
/* later blocks count under `tag` (outlives m; NULL: "other"); returns the previous tag */
const char *kmt_tag(kern_memtrack_t *m, const char *tag);
void kmt_limit(kern_memtrack_t *m, int64_t bytes);
void kmt_reset_peak(kern_memtrack_t *m);
void kmt_copied_add(kern_memtrack_t *m, int kind, size_t bytes);
void kmt_copied(kern_memtrack_t *m, int64_t out[3]);
void kmt_stats(kern_memtrack_t *m, kmt_stats_t *out);   /* device_total / device_free left 0 */
#endif
