/* SpMM and copy bandwidth on a kernel-table device (bench_spmm.c's --device). */
#ifndef INCA_BENCH_SPMM_DEV_H
#define INCA_BENCH_SPMM_DEV_H
#include "kernels/backend.h"
/* Device-to-device copy of `floats` floats: GB/s counting read + write (median of reps). */
int bench_dev_copy_gbs(kern_ctx_t *kc, int64_t floats, int reps, double *gbs);
/* kc_spmm of a (uploaded) with F = f: GB/s by the CPU bench's byte count (median of reps, each
 * timed to a kc_sync), one JSON line with spmm_over_copy. */
int bench_dev_spmm(kern_ctx_t *kc, const char *ordering, const csr_t *a, int64_t f, int reps, double copy_gbs,
                   const char *bytes_formula, double *gbs);
#endif
