/* Per-kind time and work of a kernel context's ops (inca bench epoch --breakdown, issue 31):
 * while a profile is attached to a context, every kc_* op is timed and its work counted by kind:
 * GEMM (flops), SpMM (bytes of rows gathered per feature width, plus the bytes it streams),
 * elementwise layers, loss, optimiser and copies (bytes they stream). The work gives each kind
 * a floor in the caller's hands: flops at a measured GEMM peak, gathers at the measured random
 * row-gather bandwidth of their width, streams at the measured copy bandwidth (bench/floor.c).
 *
 * CAVEATS FIRST
 * - Byte counts are the ops' compulsory traffic (each input read once, each output written
 *   once), not what the caches make of it; flops count 2mnk per GEMM.
 * - On a device the timing synchronises around every op (ops queue asynchronously otherwise),
 *   which serialises copies with compute: a profiled epoch is slower than an unprofiled one.
 * - One profile per context at a time; not thread-safe (ops of a context run on one thread). */
#ifndef INCA_KERNELS_PROFILE_H
#define INCA_KERNELS_PROFILE_H
#include <stdint.h>

typedef enum {
    KPROF_GEMM = 0, KPROF_SPMM, KPROF_ELEMWISE, KPROF_LOSS, KPROF_OPTIM, KPROF_COPY, KPROF_NKINDS
} kprof_kind_t;
#define KPROF_MAX_WIDTHS 8   /* distinct SpMM feature widths kept apart; more share the last slot */

typedef struct kern_prof {
    int64_t calls[KPROF_NKINDS];
    double seconds[KPROF_NKINDS];
    double flops[KPROF_NKINDS];          /* GEMM */
    double stream_bytes[KPROF_NKINDS];   /* bytes read and written in order */
    int nwidths;                         /* SpMM gathers, by feature width */
    int64_t width[KPROF_MAX_WIDTHS];
    double gather_bytes[KPROF_MAX_WIDTHS];
} kern_prof_t;

struct kern_ctx;
/* Attach p (zeroed by the caller; borrowed) to ctx, or detach with NULL. */
void kc_prof_attach(struct kern_ctx *ctx, kern_prof_t *p);
const char *kprof_kind_name(kprof_kind_t k);   /* "gemm", "spmm", "elementwise", ... */
#endif
