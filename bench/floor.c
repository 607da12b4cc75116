/* See floor.h. */
#include "bench/floor.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/backend.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of the reps timings (sorted in place). */
double bench_median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Fill with uniform [-1,1) in parallel (first touch spreads pages over the threads' nodes). */
void bench_fill_floats(float *x, int64_t n, uint64_t seed) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) x[i] = rng_hash_uniform(seed, 3, (uint64_t)i) * 2.0f - 1.0f;
}

/* One threaded STREAM-style copy of n floats; returns the seconds. */
double bench_copy_once(const float *restrict src, float *restrict dst, int64_t n) {
    double t0 = inca_now();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) dst[i] = src[i];
    return inca_now() - t0;
}

/* Sum `m` rows of x (width f) picked by ids into per-thread accumulators; returns the seconds. */
double bench_gather_once(const float *x, int64_t f, const int32_t *ids, int64_t m, float *acc_all, int64_t ldacc) {
    double t0 = inca_now();
#pragma omp parallel
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        const int64_t b = m * t / T, e = m * (t + 1) / T;
        float *restrict acc = acc_all + (int64_t)t * ldacc;
        for (int64_t k = 0; k < f; k++) acc[k] = 0.0f;
        /* the same software prefetch as kern_spmm (about 4 KiB ahead, 4..32 rows), so the
         * bound is the best gather we know how to write, not a straw man */
        const int64_t pd = 1024 / f < 4 ? 4 : 1024 / f > 32 ? 32 : 1024 / f;
        for (int64_t j = b; j < e; j++) {
            if (j + pd < e) {
                const char *p = (const char *)(x + (int64_t)ids[j + pd] * f);
                for (int64_t o = 0; o < f * (int64_t)sizeof(float); o += 64) __builtin_prefetch(p + o, 0, 3);
            }
            const float *restrict xr = x + (int64_t)ids[j] * f;
            for (int64_t k = 0; k < f; k++) acc[k] += xr[k];
        }
    }
    return inca_now() - t0;
}

/* best of 3 timings of fn after one warm-up */
#define BEST3(t, expr)                                  \
    do {                                                \
        (void)(expr);                                   \
        t = 1e30;                                       \
        for (int r_ = 0; r_ < 3; r_++) {                \
            const double x_ = (expr);                   \
            if (x_ < t) t = x_;                         \
        }                                               \
    } while (0)

static double gemm_once(float *a, float *b, float *c, int64_t n) {
    const double t0 = inca_now();
    (void)kc_gemm(kc_cpu(), 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    return inca_now() - t0;
}

static int gemm_floor(bench_floors_t *out) {
    const int64_t n = 1024;
    float *a = inca_malloc_aligned(sizeof(float) * (size_t)(n * n)), *b = inca_malloc_aligned(sizeof(float) * (size_t)(n * n)),
          *c = inca_malloc_aligned(sizeof(float) * (size_t)(n * n));
    int rc = a && b && c ? INCA_OK : INCA_ENOMEM;
    if (rc == INCA_OK) {
        bench_fill_floats(a, n * n, 1);
        bench_fill_floats(b, n * n, 2);
        double t;
        BEST3(t, gemm_once(a, b, c, n));
        out->gemm_flops_s = 2.0 * (double)n * n * n / t;
    }
    inca_free(a);
    inca_free(b);
    inca_free(c);
    return rc;
}

static int copy_floor(bench_floors_t *out) {
    const int64_t n = (int64_t)32 << 20;   /* 128 MiB each way: well past any cache */
    float *s = inca_malloc_aligned(sizeof(float) * (size_t)n), *d = inca_malloc_aligned(sizeof(float) * (size_t)n);
    int rc = s && d ? INCA_OK : INCA_ENOMEM;
    if (rc == INCA_OK) {
        bench_fill_floats(s, n, 3);
        bench_fill_floats(d, n, 4);
        double t;
        BEST3(t, bench_copy_once(s, d, n));
        out->copy_bytes_s = 2.0 * sizeof(float) * (double)n / t;
    }
    inca_free(s);
    inca_free(d);
    return rc;
}

static int gather_floor(int64_t rows, int64_t f, double *bytes_s) {
    const int T = inca_threads();
    const int64_t cap = ((int64_t)1 << 30) / (4 * f), nr = rows < 1024 ? 1024 : rows > cap ? cap : rows;
    const int64_t m = (int64_t)(1 << 22) / (f > 64 ? f / 64 : 1), ld = (f + 15) / 16 * 16;
    float *x = inca_malloc_aligned(sizeof(float) * (size_t)(nr * f)), *acc = inca_malloc_aligned(sizeof(float) * (size_t)(T * ld));
    int32_t *ids = inca_malloc(sizeof *ids * (size_t)m);
    int rc = x && acc && ids ? INCA_OK : INCA_ENOMEM;
    if (rc == INCA_OK) {
        bench_fill_floats(x, nr * f, 5);
        for (int64_t i = 0; i < m; i++) ids[i] = (int32_t)(rng_hash64(7, 11, (uint64_t)i) % (uint64_t)nr);
        double t;
        BEST3(t, bench_gather_once(x, f, ids, m, acc, ld));
        *bytes_s = (double)m * 4.0 * (double)f / t;
    }
    inca_free(x);
    inca_free(acc);
    inca_free(ids);
    return rc;
}

int bench_floors_measure(int64_t rows, const kern_prof_t *p, bench_floors_t *out) {
    int rc = gemm_floor(out);
    if (rc == INCA_OK) rc = copy_floor(out);
    out->nwidths = p->nwidths;
    for (int w = 0; w < p->nwidths && rc == INCA_OK; w++) {
        out->width[w] = p->width[w];
        rc = gather_floor(rows, p->width[w], &out->gather_bytes_s[w]);
    }
    return rc;
}

double bench_floor_s(const kern_prof_t *p, const bench_floors_t *f, kprof_kind_t k) {
    double s = p->stream_bytes[k] / f->copy_bytes_s;
    if (k == KPROF_GEMM) return p->flops[k] / f->gemm_flops_s;   /* its operands stream too, but the flops bound it */
    if (k == KPROF_SPMM)
        for (int w = 0; w < p->nwidths && w < f->nwidths; w++) s += p->gather_bytes[w] / f->gather_bytes_s[w];
    return s;
}

void bench_breakdown_report(const char *what, const kern_prof_t *p, const bench_floors_t *f, double epochs,
                            double wall_s, json_t *j) {
    double ops = 0, floors = 0;
    if (j) json_obj_begin(j, "breakdown");
    else printf("%s: per epoch, %.0f epochs (wall %.3f s an epoch)\n  %-12s %10s %10s %8s %8s\n", what, epochs,
                wall_s / epochs, "kind", "seconds", "floor", "ratio", "calls");
    for (int k = 0; k < KPROF_NKINDS; k++) {
        const double s = p->seconds[k] / epochs, fl = bench_floor_s(p, f, (kprof_kind_t)k) / epochs;
        ops += s;
        floors += fl;
        if (j) {
            json_obj_begin(j, kprof_kind_name((kprof_kind_t)k));
            json_num(j, "seconds", s);
            json_num(j, "floor_s", fl);
            json_num(j, "ratio", fl > 0 ? s / fl : 0);
            json_int(j, "calls", (int64_t)((double)p->calls[k] / epochs));
            json_obj_end(j);
        } else printf("  %-12s %10.4f %10.4f %8.2f %8lld\n", kprof_kind_name((kprof_kind_t)k), s, fl, fl > 0 ? s / fl : 0,
                      (long long)((double)p->calls[k] / epochs));
    }
    const double other = wall_s / epochs - ops;
    if (j) {
        json_num(j, "outside_ops_s", other);
        json_num(j, "epoch_s", wall_s / epochs);
        json_num(j, "floor_s", floors);
        json_num(j, "epoch_over_floor", floors > 0 ? wall_s / epochs / floors : 0);
        json_num(j, "gemm_gflops", f->gemm_flops_s * 1e-9);
        json_num(j, "copy_gbs", f->copy_bytes_s * 1e-9);
        json_obj_begin(j, "gather_gbs");
        for (int w = 0; w < f->nwidths; w++) {
            char key[24];
            snprintf(key, sizeof key, "%lld", (long long)f->width[w]);
            json_num(j, key, f->gather_bytes_s[w] * 1e-9);
        }
        json_obj_end(j);
        json_obj_end(j);
    } else {
        printf("  %-12s %10.4f\n  epoch %.4f s against the floors' sum %.4f s: %.2fx (GEMM %.1f GFLOP/s, copy %.1f GB/s", "outside ops",
               other, wall_s / epochs, floors, floors > 0 ? wall_s / epochs / floors : 0, f->gemm_flops_s * 1e-9,
               f->copy_bytes_s * 1e-9);
        for (int w = 0; w < f->nwidths; w++) printf(", gather F=%lld %.1f GB/s", (long long)f->width[w], f->gather_bytes_s[w] * 1e-9);
        printf(")\n");
    }
}
