/* inca bench loader STORE [--method gas|incagg|cluster] [training flags]: trains with the
 * prefetching loader and again with batches built synchronously, on the same stored METIS
 * partitioning, and prints the trainer's wait time as a fraction of step time (target <= 5%),
 * the build time per batch, and the step time of both modes (their ratio is what prefetching
 * saves). With --cold the store's pages are evicted (posix_fadvise DONTNEED on data.mdb, no
 * privileges needed) before a plain sequential read of data.mdb and before the dataset load, so
 * the load's GB/s is reported against the read of the same file measured in the same run, cold
 * and then warm. Speed is never asserted; a smoke test lives in test_incagg.c. */
#include "bench/bench.h"
#include "bench/bench_mb.h"
#include "kernels/backend.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/status.h"
#include "nn/train_mb.h"
#include "core/util.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

/* Drops data.mdb's pages from the page cache (1: done, 0: not possible here). */
static int evict(const char *store) {
    char p[4096];
    snprintf(p, sizeof p, "%s/data.mdb", store);
    int fd = open(p, O_RDONLY);
    if (fd < 0) return 0;
    const int ok = fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    close(fd);
    return ok;
}

/* Seconds to read data.mdb sequentially (8 MiB reads); *bytes its size. */
static int seq_read(const char *store, double *secs, int64_t *bytes) {
    char p[4096];
    snprintf(p, sizeof p, "%s/data.mdb", store);
    int fd = open(p, O_RDONLY);
    if (fd < 0) return inca_fail(INCA_EIO, "%s: cannot open", p);
    char *buf = malloc((size_t)8 << 20);
    if (!buf) { close(fd); return INCA_ENOMEM; }
    const double t0 = inca_now();
    int64_t total = 0;
    ssize_t k;
    while ((k = read(fd, buf, (size_t)8 << 20)) > 0) total += k;
    *secs = inca_now() - t0;
    *bytes = total;
    free(buf);
    close(fd);
    return k < 0 ? inca_fail(INCA_EIO, "%s: read failed", p) : INCA_OK;
}

int bench_loader(int argc, char **argv) {
    static const char *const known[] = {BENCH_MB_FLAGS, "--method", "--cold!", NULL};
    args_t *a = NULL;
    dataset_t d;
    partition_t p = {0};
    train_config_t c;
    json_t *j = NULL;
    mb_stats_t st[2] = {0};   /* 0: prefetch thread, 1: synchronous */
    kern_ctx_t *kc = NULL;
    char devname[16] = "";
    dataset_init(&d);
    int rc = args_parse(argc, argv, known, &a), reused = 0, method;
    if (rc != INCA_OK) return rc;
    if (args_npos(a) != 1) { rc = inca_fail(INCA_EINVAL, "expected one STORE argument"); goto done; }
    if ((rc = bench_mb_config(a, &c)) != INCA_OK) goto done;
    snprintf(c.method, sizeof c.method, "%s", args_str(a, "--method", "gas"));
    if ((rc = agg_method_parse(c.method, &method)) != INCA_OK) goto done;
    if ((rc = train_device_open(&c, &kc, devname, sizeof devname)) != INCA_OK) goto done;
    c.kc = kc;
    /* cold (pages evicted first) then warm: the plain read of data.mdb, then the dataset load
     * from it; the cold load is timed and dropped, the warm one trains */
    const char *store = args_pos(a, 0);
    const int cold = args_has(a, "--cold");
    double rd_s[2] = {0, 0}, ld_s[2] = {0, 0}, t0;
    int64_t file_bytes = 0;
    int evicted = 1;
    if (cold) {
        evicted &= evict(store);
        if ((rc = seq_read(store, &rd_s[0], &file_bytes)) != INCA_OK) goto done;
        evicted &= evict(store);
        t0 = inca_now();
        if ((rc = bench_mb_load(store, &c, &d, &p, &reused)) != INCA_OK) goto done;
        ld_s[0] = inca_now() - t0;
        dataset_free(&d);
        partition_free(&p);
        dataset_init(&d);
    }
    if ((rc = seq_read(store, &rd_s[1], &file_bytes)) != INCA_OK) goto done;
    t0 = inca_now();
    if ((rc = bench_mb_load(store, &c, &d, &p, &reused)) != INCA_OK) goto done;
    ld_s[1] = inca_now() - t0;
    train_result_t r[2];
    for (int mode = 0; mode < 2; mode++) {   /* 0: prefetch thread, 1: synchronous */
        mb_opts_t o;
        mb_opts_default(&o);
        o.eval_every_epoch = 0;
        o.prefetch = mode == 0;
        if ((rc = mb_train(&d, &c, d.split[SPLIT_TRAIN], d.split_n[SPLIT_TRAIN], 0, &p, &o, &r[mode], &st[mode])) != INCA_OK) goto done;
    }
    double wait_frac = st[0].step_s_total > 0 ? st[0].wait_s / st[0].step_s_total : 0;
    double build_per = st[1].steps ? st[1].build_s / (double)st[1].steps : 0;
    fprintf(stderr, "bench loader: %s, %lld steps: wait %.2f%% of step time with prefetch; build %.4f s/batch; step %.4f s (prefetch) vs %.4f s (sync)\n",
            c.method, (long long)st[0].steps, 100 * wait_frac, build_per, r[0].step_time_s, r[1].step_time_s);
    if (args_has(a, "--json")) {
        if ((rc = json_new(&j)) != INCA_OK) goto done;
        json_str(j, "method", c.method);
        json_str(j, "device", devname);
        json_int(j, "nodes", d.n);
        json_int(j, "parts", p.k);
        json_int(j, "batch_parts", c.batch_parts);
        json_int(j, "steps", st[0].steps);
        json_num(j, "wait_fraction", wait_frac);
        json_num(j, "wait_s", st[0].wait_s);
        json_num(j, "step_time_s", r[0].step_time_s);
        json_num(j, "step_time_sync_s", r[1].step_time_s);
        json_num(j, "prefetch_speedup", r[0].step_time_s > 0 ? r[1].step_time_s / r[0].step_time_s : 0);
        json_num(j, "build_time_per_batch_s", build_per);
        json_num(j, "build_fraction_sync", st[1].step_s_total > 0 ? st[1].build_s / st[1].step_s_total : 0);
        json_int(j, "loader_bytes", st[0].loader_bytes);
        /* the store: dataset load (and partitioning lookup) vs a sequential read of data.mdb */
        json_int(j, "store_bytes", file_bytes);
        json_num(j, "read_warm_gbs", rd_s[1] > 0 ? (double)file_bytes / rd_s[1] * 1e-9 : 0);
        json_num(j, "load_warm_s", ld_s[1]);
        json_num(j, "load_over_read_warm", ld_s[1] > 0 ? rd_s[1] / ld_s[1] : 0);
        if (cold) {
            json_bool(j, "evicted", evicted);
            json_num(j, "read_cold_gbs", rd_s[0] > 0 ? (double)file_bytes / rd_s[0] * 1e-9 : 0);
            json_num(j, "load_cold_s", ld_s[0]);
            json_num(j, "load_over_read_cold", ld_s[0] > 0 ? rd_s[0] / ld_s[0] : 0);
        }
        memstat_json(j);
        rc = json_write(j, stdout);
    }
done:
    kc_free(&kc);
    mb_stats_free(&st[0]);
    mb_stats_free(&st[1]);
    json_free(&j);
    partition_free(&p);
    dataset_free(&d);
    args_free(&a);
    return rc;
}
