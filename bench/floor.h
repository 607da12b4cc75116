/* What this machine's memory and BLAS allow, measured in the process that compares against it
 * (machines here are shared and noisy): a threaded STREAM-style copy, a random gather of rows
 * of a given width (the best gather we know how to write: SpMM's own prefetch), and the BLAS's
 * SGEMM rate; and an epoch's per-kind kernel profile (kernels/profile.h) against the floors they
 * give (inca bench epoch --breakdown, issue 31). */
#ifndef INCA_BENCH_FLOOR_H
#define INCA_BENCH_FLOOR_H
#include <stdint.h>
#include "core/json.h"
#include "kernels/profile.h"

void bench_fill_floats(float *x, int64_t n, uint64_t seed);   /* uniform [-1, 1), in parallel */
double bench_copy_once(const float *restrict src, float *restrict dst, int64_t n);   /* seconds */
/* Sum m rows of x (width f) picked by ids into per-thread accumulators (acc: threads x ldacc). */
double bench_gather_once(const float *x, int64_t f, const int32_t *ids, int64_t m, float *acc, int64_t ldacc);
double bench_median(double *t, int n);   /* sorts t */

typedef struct bench_floors {
    double gemm_flops_s;                 /* SGEMM 1024^3 through the CPU context, best of 3 */
    double copy_bytes_s;                 /* STREAM copy (2 x bytes), best of 3 */
    int nwidths;
    int64_t width[KPROF_MAX_WIDTHS];     /* the profile's SpMM widths */
    double gather_bytes_s[KPROF_MAX_WIDTHS];   /* random rows of that width, of a table of `rows` */
} bench_floors_t;
/* Measures the floors for the widths p saw, gathering from a table of `rows` rows (the graph's
 * nodes; capped at 1 GiB a table). INCA_ENOMEM. */
int bench_floors_measure(int64_t rows, const kern_prof_t *p, bench_floors_t *out);
/* The floor in seconds of the work p counted in kind k. */
double bench_floor_s(const kern_prof_t *p, const bench_floors_t *f, kprof_kind_t k);
/* Per kind: seconds and floor per epoch (over `epochs`), the ratio; the time outside kernel ops
 * (wall_s - the ops' sum); the epoch against the sum of the floors. Into j as "breakdown" when
 * j is non-NULL, else a table on stdout. */
void bench_breakdown_report(const char *what, const kern_prof_t *p, const bench_floors_t *f, double epochs,
                            double wall_s, json_t *j);
#endif
