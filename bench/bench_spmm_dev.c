/* `inca bench spmm --device cuda|auto|emu`: the kernel table's SpMM on a device, in GB/s by the
 * same byte count as the CPU bench, against the device's own device-to-device copy bandwidth
 * measured in the same process (the bound a memory-bound kernel can reach). One JSON line per
 * (ordering, F); the caller writes the summary. Speed is never asserted; correctness of the
 * op is test_backend_ops.c's. */
#include "bench/bench_spmm_dev.h"
#include "core/json.h"
#include "core/status.h"
#include "core/util.h"
#include <stdio.h>
#include <stdlib.h>

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double med(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

int bench_dev_copy_gbs(kern_ctx_t *kc, int64_t floats, int reps, double *gbs) {
    float *a = NULL, *b = NULL;
    double *t = malloc(sizeof *t * (size_t)reps);
    int rc = t ? INCA_OK : INCA_ENOMEM;
    if (!rc) rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)floats, (void **)&a);
    if (!rc) rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)floats, (void **)&b);
    for (int r = 0; r <= reps && !rc; r++) {   /* r == 0: warm-up */
        const double t0 = inca_now();
        rc = kc_copy(kc, b, a, sizeof(float) * (size_t)floats, KERN_D2D, KERN_STREAM_COMPUTE);
        if (!rc) rc = kc_sync(kc);
        if (r > 0) t[r - 1] = inca_now() - t0;
    }
    if (!rc) *gbs = 2.0 * (double)floats * sizeof(float) / med(t, reps) * 1e-9;   /* read + write */
    kc_release(kc, KERN_MEM_DEVICE, a);
    kc_release(kc, KERN_MEM_DEVICE, b);
    free(t);
    return rc;
}

int bench_dev_spmm(kern_ctx_t *kc, const char *ordering, const csr_t *a, int64_t f, int reps, double copy_gbs,
                   const char *bytes_formula, double *gbs) {
    kern_mat_t *m = NULL;
    float *x = NULL, *y = NULL;
    double *t = malloc(sizeof *t * (size_t)reps);
    json_t *j = NULL;
    int rc = t ? INCA_OK : INCA_ENOMEM;
    if (!rc) rc = kc_mat_upload(kc, a, &m);
    if (!rc) rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)(a->n_cols * f), (void **)&x);
    if (!rc) rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)(a->n_rows * f), (void **)&y);
    for (int r = 0; r <= reps && !rc; r++) {   /* r == 0: warm-up (plan, workspace) */
        const double t0 = inca_now();
        rc = kc_spmm(kc, m, NULL, x, f, 1.0f, 0.0f, y);
        if (!rc) rc = kc_sync(kc);
        if (r > 0) t[r - 1] = inca_now() - t0;
    }
    if (rc) goto done;
    const double bytes = (double)a->nnz * (8.0 + 4.0 * (double)f) + (double)a->n_rows * (8.0 * (double)f + 8.0);
    const double s = med(t, reps);
    *gbs = bytes / s * 1e-9;
    if ((rc = json_new(&j))) goto done;
    json_str(j, "bench", "spmm");
    json_str(j, "device", kc_describe(kc));
    json_str(j, "ordering", ordering);
    json_int(j, "features", f);
    json_int(j, "nodes", a->n_rows);
    json_int(j, "nnz", a->nnz);
    json_int(j, "reps", reps);
    json_bool(j, "deterministic", kc_deterministic(kc));
    json_num(j, "spmm_s", s);
    json_num(j, "spmm_gbs", *gbs);
    json_num(j, "copy_gbs", copy_gbs);
    json_num(j, "spmm_over_copy", *gbs / copy_gbs);
    json_str(j, "spmm_bytes", bytes_formula);
    rc = json_write(j, stdout);
    fflush(stdout);
done:
    json_free(&j);
    kc_mat_free(kc, &m);
    kc_release(kc, KERN_MEM_DEVICE, x);
    kc_release(kc, KERN_MEM_DEVICE, y);
    free(t);
    return rc;
}
