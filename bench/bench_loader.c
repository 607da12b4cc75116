/* inca bench loader STORE [--method gas|incagg|cluster] [training flags]: trains with the
 * prefetching loader and again with batches built synchronously, on the same stored METIS
 * partitioning, and prints the trainer's wait time as a fraction of step time (target <= 5%),
 * the build time per batch, and the step time of both modes (their ratio is what prefetching
 * saves). Speed is never asserted; a smoke test lives in test_incagg.c. */
#include "bench/bench.h"
#include "bench/bench_mb.h"
#include "kernels/backend.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/status.h"
#include "nn/train_mb.h"
#include <stdio.h>
#include <string.h>

int bench_loader(int argc, char **argv) {
    static const char *const known[] = {BENCH_MB_FLAGS, "--method", NULL};
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
    if ((rc = bench_mb_load(args_pos(a, 0), &c, &d, &p, &reused)) != INCA_OK) goto done;
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
