/* The figures `inca bench` prints, read back by cJSON and checked against each other and against
 * counts by hand, never against a speed: every ratio is the quotient of the two printed
 * quantities it is documented as (GAS / IncAgg epoch time, SpMM GB/s / gather GB/s, load time /
 * read time, ...), every per-epoch figure is the per-step or per-refresh figure times its count
 * over the timed epochs, an epoch is its steps + refreshes (+ evaluations with
 * --eval-each-epoch), every GB/s times its seconds is the byte count its formula gives from the
 * printed sizes, a best of the repetitions is never slower than their median, and each summary
 * repeats its runs' lines. Relations only: they hold however loaded the machine is. Small data
 * (a csbm store of 600 nodes), a few seconds in all. */
#include "testutil.h"
#include "core/status.h"
#include "loaders/dataset.h"
#include "loaders/store.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

static char *dir;      /* made in main(), removed after the suite */
static char g[1024];   /* csbm store: 600 nodes, 16 features, 3 classes */

/* a == b up to the rounding of the arithmetic that made them (the JSON round-trips doubles) */
#define NEAR(a, b, what)                                                                                            \
    do {                                                                                                            \
        const double a_ = (a), b_ = (b);                                                                            \
        ck_assert_msg(fabs(a_ - b_) <= 1e-9 * fmax(fabs(a_), fabs(b_)) + 1e-15, "%s: %.17g, expected %.17g", what, \
                      a_, b_);                                                                                      \
    } while (0)

/* `inca ARGS` (printf-style) must exit 0; its JSON lines into v (at most max), their count */
static int run_lines(cJSON **v, int max, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run_lines(cJSON **v, int max, const char *fmt, ...) {
    char *args = NULL, *out = NULL, *err = NULL;
    va_list ap;
    va_start(ap, fmt);
    ck_assert_int_ge(vasprintf(&args, fmt, ap), 0);
    va_end(ap);
    const int rc = tu_inca(args, &out, &err);
    ck_assert_msg(rc == 0, "inca %s -> %d: %s", args, rc, err ? err : "");
    const int n = tu_json_lines(out, v, max);
    free(args);
    free(out);
    free(err);
    return n;
}

/* `inca ARGS` must exit 2 saying want */
static void refused(const char *want, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refused(const char *want, const char *fmt, ...) {
    char *args = NULL, *out = NULL, *err = NULL;
    va_list ap;
    va_start(ap, fmt);
    ck_assert_int_ge(vasprintf(&args, fmt, ap), 0);
    va_end(ap);
    const int rc = tu_inca(args, &out, &err);
    ck_assert_msg(rc == 2 && err && strstr(err, want), "inca %s -> %d, expected 2 and '%s': %s", args, rc, want,
                  err ? err : "");
    free(args);
    free(out);
    free(err);
}

static double num(const cJSON *o, const char *key) { return tu_json_dbl(o, key); }

/* One bench epoch run's line: its per-epoch figures from its per-step / per-refresh ones and
 * their counts, the epoch from its parts (evaluations counted with --eval-each-epoch), the
 * aggregation and the dense rest summing to the steps, CPU time likewise. */
static void epoch_line_sums(const cJSON *l, int spe, int timed, int eval_each) {
    const double E = num(l, "timed_epochs");
    ck_assert_int_eq((int)E, timed);
    ck_assert_int_eq((int)num(l, "steps_per_epoch"), spe);
    NEAR(num(l, "step_time_per_epoch_s"), num(l, "step_time_s") * spe, "steps per epoch = one step x steps");
    NEAR(num(l, "refresh_time_per_epoch_s"), num(l, "refresh_time_s") * num(l, "refreshes") / E,
         "refreshes per epoch = one refresh x refreshes / epochs");
    const double ev = eval_each ? num(l, "eval_time_s") * num(l, "evaluations") / E : 0;
    NEAR(num(l, "epoch_time_s"), num(l, "step_time_per_epoch_s") + num(l, "refresh_time_per_epoch_s") + ev,
         "epoch = steps + refreshes (+ evaluations)");
    NEAR(num(l, "agg_time_per_epoch_s"), (num(l, "agg_fwd_s") + num(l, "agg_bwd_s")) / E, "aggregation per epoch");
    NEAR(num(l, "dense_time_per_epoch_s") + num(l, "agg_time_per_epoch_s"), num(l, "step_time_per_epoch_s"),
         "dense + aggregation = steps");
    if (!eval_each)
        NEAR(num(l, "epoch_cpu_s"), num(l, "step_cpu_per_epoch_s") + num(l, "refresh_cpu_per_epoch_s"), "CPU epoch");
}

/* The summary's GAS-against-IncAgg keys from the lines of GAS (g) and of IncAgg with the first
 * period of --refresh-epochs (i0: R = 2, refreshing every other epoch, so that one refresh and
 * a refresh per epoch differ) and with R = 1 (i1) */
static void epoch_summary(const cJSON *s, const cJSON *g, const cJSON *i0, const cJSON *i1) {
    NEAR(num(s, "speedup"), num(g, "epoch_time_s") / num(i0, "epoch_time_s"), "speedup = GAS / IncAgg epoch");
    NEAR(num(s, "speedup_r2"), num(g, "epoch_time_s") / num(i0, "epoch_time_s"), "speedup_r2");
    NEAR(num(s, "speedup_r1"), num(g, "epoch_time_s") / num(i1, "epoch_time_s"), "speedup_r1");
    NEAR(num(s, "speedup_cpu"), num(g, "epoch_cpu_s") / num(i0, "epoch_cpu_s"), "speedup_cpu");
    NEAR(num(s, "speedup_cpu_r2"), num(g, "epoch_cpu_s") / num(i0, "epoch_cpu_s"), "speedup_cpu_r2");
    NEAR(num(s, "speedup_cpu_r1"), num(g, "epoch_cpu_s") / num(i1, "epoch_cpu_s"), "speedup_cpu_r1");
    NEAR(num(s, "acc_gap"), num(g, "test_acc") - num(i0, "test_acc"), "acc_gap = GAS - IncAgg");
    NEAR(num(s, "acc_gap_r1"), num(g, "test_acc") - num(i1, "test_acc"), "acc_gap_r1");
    /* the ceiling: GAS's epoch over IncAgg's dense part alone (no --eval-each-epoch) */
    NEAR(num(s, "speedup_ceiling"), num(g, "epoch_time_s") / num(i0, "dense_time_per_epoch_s"), "speedup_ceiling");
    NEAR(num(s, "gas_agg_time_s"), num(g, "agg_time_per_epoch_s"), "gas_agg_time_s");
    NEAR(num(s, "gas_dense_time_s"), num(g, "dense_time_per_epoch_s"), "gas_dense_time_s");
    NEAR(num(s, "incagg_agg_time_s"), num(i0, "agg_time_per_epoch_s"), "incagg_agg_time_s");
    NEAR(num(s, "incagg_dense_time_s"), num(i0, "dense_time_per_epoch_s"), "incagg_dense_time_s");
    NEAR(num(s, "gas_epoch_time_s"), num(g, "epoch_time_s"), "gas_epoch_time_s");
    NEAR(num(s, "incagg_epoch_time_s"), num(i0, "epoch_time_s"), "incagg_epoch_time_s");
    NEAR(num(s, "incagg_refresh_time_s"), num(i0, "refresh_time_s"), "incagg_refresh_time_s");
    NEAR(num(s, "incagg_refresh_time_per_epoch_s"), num(i0, "refresh_time_per_epoch_s"), "incagg refresh per epoch");
    NEAR(num(s, "incagg_step_time_per_epoch_s"), num(i0, "step_time_per_epoch_s"), "incagg steps per epoch");
    NEAR(num(s, "gas_test_acc"), num(g, "test_acc"), "gas_test_acc");
    NEAR(num(s, "incagg_test_acc"), num(i0, "test_acc"), "incagg_test_acc");
}

/* 8 parts in batches of 3: 3 steps an epoch (the last batch holds 2 parts), so IncAgg refreshing
 * every R epochs refreshes every 3R steps: 4 epochs give 2 refreshes at R = 2, 4 at R = 1. */
START_TEST(bench_epoch_figures) {
    cJSON *v[8];
    int n = run_lines(v, 8, "bench epoch '%s' --methods gas,incagg --parts 8 --batch-parts 3 --epochs 4 --refresh-epochs 2,1 "
                            "--hidden 8 --threads 1 --json --quiet", g);
    ck_assert_int_eq(n, 4);   /* gas, incagg R=2, incagg R=1, summary */
    for (int i = 0; i < 3; i++) epoch_line_sums(v[i], 3, 4, 0);
    ck_assert_int_eq((int)num(v[0], "refreshes"), 0);
    ck_assert_int_eq((int)num(v[1], "refreshes"), 2);
    ck_assert_int_eq((int)num(v[2], "refreshes"), 4);
    epoch_summary(v[3], v[0], v[1], v[2]);
    tu_json_free_lines(v, n);
    /* evaluating every epoch, after one warm-up epoch: 2 timed epochs, each with its evaluation */
    n = run_lines(v, 8, "bench epoch '%s' --methods gas --parts 8 --batch-parts 3 --epochs 3 --warmup-epochs 1 "
                        "--eval-each-epoch --hidden 8 --threads 1 --json --quiet", g);
    ck_assert_int_eq(n, 2);
    epoch_line_sums(v[0], 3, 2, 1);
    ck_assert_int_eq((int)num(v[0], "evaluations"), 2);
    tu_json_free_lines(v, n);
    /* the warm-up leaves at least one timed epoch; the period is set in epochs */
    refused("--warmup-epochs: expected 0 .. --epochs - 1 (2), got 3", "bench epoch '%s' --epochs 3 --warmup-epochs 3", g);
    refused("--refresh: bench epoch sets IncAgg's refresh period by --refresh-epochs", "bench epoch '%s' --refresh 2", g);
}
END_TEST

/* --compare-input-layer: cluster and incagg aggregate-first, then both transform-first (each line
 * says which), the summary's speedups the quotients of their epochs; gas, --breakdown and a
 * typed --input-layer refused. 16 features into 8 hidden: the first layer narrows. */
START_TEST(bench_epoch_input_layer) {
    cJSON *v[8];
    const int n = run_lines(v, 8, "bench epoch '%s' --methods cluster,incagg --compare-input-layer --parts 8 --batch-parts 3 "
                                  "--epochs 3 --hidden 8 --threads 1 --json --quiet", g);
    ck_assert_int_eq(n, 5);   /* cluster, incagg, cluster tf, incagg tf, summary */
    static const char *const want[4] = {"aggregate-first", "aggregate-first", "transform-first", "transform-first"};
    for (int i = 0; i < 4; i++) {
        epoch_line_sums(v[i], 3, 3, 0);
        ck_assert_str_eq(tu_json_get(v[i], "input_layer", cJSON_String)->valuestring, want[i]);
        ck_assert_str_eq(tu_json_get(v[i], "method", cJSON_String)->valuestring, i % 2 ? "incagg" : "cluster");
    }
    NEAR(num(v[4], "cluster_input_speedup"), num(v[0], "epoch_time_s") / num(v[2], "epoch_time_s"), "cluster_input_speedup");
    NEAR(num(v[4], "incagg_input_speedup"), num(v[1], "epoch_time_s") / num(v[3], "epoch_time_s"), "incagg_input_speedup");
    NEAR(num(v[4], "cluster_tf_epoch_time_s"), num(v[2], "epoch_time_s"), "cluster_tf_epoch_time_s");
    NEAR(num(v[4], "incagg_tf_step_time_s"), num(v[3], "step_time_s"), "incagg_tf_step_time_s");
    NEAR(num(v[4], "incagg_tf_test_acc"), num(v[3], "test_acc"), "incagg_tf_test_acc");
    tu_json_free_lines(v, n);
    refused("--compare-input-layer: --methods cluster and/or incagg", "bench epoch '%s' --compare-input-layer", g);
    refused("drop --input-layer", "bench epoch '%s' --methods incagg --compare-input-layer --input-layer transform-first", g);
    refused("not with --breakdown", "bench epoch '%s' --methods incagg --compare-input-layer --breakdown", g);
}
END_TEST

/* --breakdown: per kind, ratio = seconds / floor; the epoch against the floors' sum; what lies
 * outside the ops; and figures per epoch: the optimiser's calls an epoch (one per parameter
 * tensor a step, no optimiser outside the steps) are the same over 2 epochs as over 4. */
static double breakdown_check(const cJSON *line) {
    static const char *const kinds[] = {"gemm", "spmm", "elementwise", "loss", "optimiser", "copies"};
    const cJSON *b = tu_json_get(line, "breakdown", cJSON_Object);
    double ops = 0, floors = 0;
    for (int k = 0; k < 6; k++) {
        const cJSON *x = tu_json_get(b, kinds[k], cJSON_Object);
        ops += num(x, "seconds");
        floors += num(x, "floor_s");
        if (num(x, "floor_s") > 0) NEAR(num(x, "ratio"), num(x, "seconds") / num(x, "floor_s"), kinds[k]);
    }
    NEAR(num(b, "floor_s"), floors, "floors' sum");
    NEAR(num(b, "outside_ops_s"), num(b, "epoch_s") - ops, "outside ops = epoch - ops");
    NEAR(num(b, "epoch_over_floor"), num(b, "epoch_s") / num(b, "floor_s"), "epoch_over_floor");
    return num(tu_json_get(b, "optimiser", cJSON_Object), "calls");
}

START_TEST(bench_breakdown_figures) {
    double calls[2][2];
    for (int e = 0; e < 2; e++) {
        cJSON *v[4];
        const int n = run_lines(v, 4, "bench epoch '%s' --breakdown --methods full,gas --parts 8 --batch-parts 3 --epochs %d "
                                      "--hidden 8 --threads 1 --json --quiet", g, 2 + 2 * e);
        ck_assert_int_eq(n, 2);
        for (int i = 0; i < n; i++) {
            ck_assert_int_eq((int)num(v[i], "epochs"), 2 + 2 * e);
            calls[e][i] = breakdown_check(v[i]);
        }
        /* full: one step an epoch; gas: 3 */
        for (int i = 0; i < n; i++) {
            ck_assert_int_eq((int)num(v[i], "steps_per_epoch"), i ? 3 : 1);
            NEAR(num(v[i], "train_time_per_epoch_s"), num(v[i], "step_time_s") * (i ? 3 : 1), "steps per epoch");
        }
        tu_json_free_lines(v, n);
    }
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(calls[0][i] > 0, "method %d: no optimiser call", i);
        ck_assert_msg(calls[0][i] == calls[1][i], "method %d: %g optimiser calls an epoch over 2 epochs, %g over 4", i,
                      calls[0][i], calls[1][i]);
    }
    ck_assert(calls[0][1] == 3 * calls[0][0]);   /* gas: 3 steps an epoch, full: 1 */
}
END_TEST

/* bench loader, copy loader with --cold: the prefetch speed-up and the wait fraction from the
 * step times and counts; build time a batch from the synchronous run's fraction of its steps;
 * the store's read seconds (its bytes / its GB/s) against the load seconds, cold and warm; the
 * bytes read are the store's bytes in use (store_disk_bytes, read here through the library). */
static void loader_copy(void) {
    cJSON *v[4];
    const int n = run_lines(v, 4, "bench loader '%s' --method gas --parts 8 --batch-parts 3 --epochs 2 --loader copy --cold "
                                  "--threads 1 --json --quiet", g);
    ck_assert_int_eq(n, 1);
    const cJSON *o = v[0];
    ck_assert_int_eq((int)num(o, "steps"), 2 * 3);
    NEAR(num(o, "prefetch_speedup"), num(o, "step_time_sync_s") / num(o, "step_time_s"), "prefetch_speedup = sync / prefetch");
    NEAR(num(o, "wait_fraction"), num(o, "wait_s") / (num(o, "step_time_s") * num(o, "steps")), "wait_fraction");
    NEAR(num(o, "build_time_per_batch_s"), num(o, "build_fraction_sync") * num(o, "step_time_sync_s"), "build per batch");
    const double bytes = num(o, "store_bytes");
    NEAR(num(o, "load_over_read_warm"), bytes * 1e-9 / num(o, "read_warm_gbs") / num(o, "load_warm_s"), "load_over_read_warm");
    NEAR(num(o, "load_over_read_cold"), bytes * 1e-9 / num(o, "read_cold_gbs") / num(o, "load_cold_s"), "load_over_read_cold");
    store_t *s = NULL;
    ck_assert_int_eq(store_open(g, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq((long long)bytes, (long long)store_disk_bytes(s));
    store_close(&s);
    tu_json_free_lines(v, n);
}

/* --loader view, IncAgg, --cold: one epoch of the loader alone, 3 batches serving every node
 * once: its features (4 bytes x F), its M^0 row (fp32: 4 x F), its row id (8 bytes) and its
 * row of Â (4-byte column + 4-byte value a nonzero); batches/s and GB/s from the same seconds,
 * and each against the sequential read of the same pass (cold, warm). */
static void loader_view(void) {
    dataset_t d;
    dataset_init(&d);
    ck_assert_int_eq(dataset_load(g, &d), INCA_OK);
    const double nodes = (double)d.n, f = (double)d.f, nnz = (double)d.adj.nnz;
    dataset_free(&d);
    cJSON *v[4];
    const int n = run_lines(v, 4, "bench loader '%s' --method incagg --parts 8 --batch-parts 3 --epochs 1 --loader view --cold "
                                  "--threads 1 --json --quiet", g);
    ck_assert_int_eq(n, 1);
    const cJSON *o = v[0];
    ck_assert_int_eq((int)num(o, "pass_batches"), 3);
    const double pb = num(o, "pass_bytes");
    ck_assert_msg(pb == nodes * (8 * f + 8) + nnz * 8 || pb == nodes * (8 * f + 8) + (nnz + nodes) * 8,
                  "pass_bytes %.0f: %g nodes x %g features, %g nonzeros (self-loops or not)", pb, nodes, f, nnz);
    static const char *const w[2] = {"cold", "warm"};
    for (int i = 0; i < 2; i++) {
        char k_bps[48], k_gbs[48], k_over[48], k_read[48];
        snprintf(k_bps, sizeof k_bps, "loader_%s_batches_per_s", w[i]);
        snprintf(k_gbs, sizeof k_gbs, "loader_%s_gbs", w[i]);
        snprintf(k_over, sizeof k_over, "loader_over_read_%s", w[i]);
        snprintf(k_read, sizeof k_read, "read_%s_gbs", w[i]);
        NEAR(num(o, k_gbs), pb * num(o, k_bps) / 3 * 1e-9, k_gbs);   /* the pass's seconds: 3 batches / batches per s */
        NEAR(num(o, k_over), num(o, k_gbs) / num(o, k_read), k_over);
    }
    tu_json_free_lines(v, n);
}

START_TEST(bench_loader_figures) {
    loader_copy();
    loader_view();
}
END_TEST

/* One bench spmm line (F features): its byte formula times GB/s gives its seconds, best of the
 * repetitions never below the median, its ratios the quotients of its GB/s. */
static void spmm_line(const cJSON *l) {
    const double f = num(l, "features"), nnz = num(l, "nnz"), rows = num(l, "nodes");
    const double bytes = nnz * (4 + 4 + 4 * f) + rows * (8 * f + 8);   /* the printed spmm_bytes formula */
    NEAR(num(l, "spmm_gbs") * num(l, "spmm_s") * 1e9, bytes, "SpMM GB/s x median seconds");
    NEAR(num(l, "spmm_best_gbs") * num(l, "spmm_best_s") * 1e9, bytes, "SpMM best GB/s x best seconds");
    ck_assert_msg(num(l, "spmm_best_s") <= num(l, "spmm_s"), "best %g s slower than the median %g s", num(l, "spmm_best_s"),
                  num(l, "spmm_s"));
    ck_assert_msg(num(l, "gather_best_gbs") >= num(l, "gather_gbs"), "gather: best %g GB/s below the median %g",
                  num(l, "gather_best_gbs"), num(l, "gather_gbs"));
    NEAR(num(l, "spmm_over_gather"), num(l, "spmm_gbs") / num(l, "gather_gbs"), "spmm_over_gather");
    NEAR(num(l, "spmm_over_gather_best"), num(l, "spmm_best_gbs") / num(l, "gather_best_gbs"), "spmm_over_gather_best");
    NEAR(num(l, "spmm_over_gather_pattern"), num(l, "spmm_gbs") / num(l, "gather_pattern_gbs"), "spmm_over_gather_pattern");
    NEAR(num(l, "spmm_over_copy"), num(l, "spmm_gbs") / num(l, "copy_gbs"), "spmm_over_copy");
}

static double arr(const cJSON *s, const char *key, int i) {
    const cJSON *a = tu_json_get(s, key, cJSON_Array);
    ck_assert_int_eq(cJSON_GetArraySize(a), 2);
    return cJSON_GetArrayItem(a, i)->valuedouble;
}

/* --features 4,8, random then METIS order: 4 lines and the summary, whose arrays repeat the
 * lines' figures per F; metis_gain = the random order's SpMM seconds / METIS order's; the 70%
 * target holds iff SpMM reached 0.7 of the gather at every F. */
START_TEST(bench_spmm_figures) {
    cJSON *v[8];
    const int n = run_lines(v, 8, "bench spmm --nodes 2000 --avg-degree 8 --features 4,8 --reps 3 --parts 8 --threads 1 "
                                  "--json --quiet");
    ck_assert_int_eq(n, 5);
    for (int i = 0; i < 4; i++) spmm_line(v[i]);
    const cJSON *s = v[4];
    int met = 1;
    for (int i = 0; i < 2; i++) {
        const cJSON *r = v[i], *m = v[2 + i];
        ck_assert_str_eq(tu_json_get(m, "ordering", cJSON_String)->valuestring, "metis");
        ck_assert_double_eq(arr(s, "features", i), num(r, "features"));
        NEAR(arr(s, "spmm_gbs_random", i), num(r, "spmm_gbs"), "spmm_gbs_random");
        NEAR(arr(s, "spmm_gbs_metis", i), num(m, "spmm_gbs"), "spmm_gbs_metis");
        NEAR(arr(s, "gather_gbs", i), num(r, "gather_gbs"), "gather_gbs");
        NEAR(arr(s, "gather_best_gbs", i), num(r, "gather_best_gbs"), "gather_best_gbs");
        NEAR(arr(s, "gather_pattern_gbs_random", i), num(r, "gather_pattern_gbs"), "gather_pattern_gbs_random");
        NEAR(arr(s, "copy_gbs", i), num(r, "copy_gbs"), "copy_gbs");
        NEAR(arr(s, "spmm_over_gather_random", i), num(r, "spmm_over_gather"), "spmm_over_gather_random");
        NEAR(arr(s, "spmm_over_gather_random_best", i), num(r, "spmm_over_gather_best"), "spmm_over_gather_random_best");
        NEAR(arr(s, "metis_gain", i), num(r, "spmm_s") / num(m, "spmm_s"), "metis_gain = random / METIS seconds");
        NEAR(arr(s, "metis_gain_best", i), num(r, "spmm_best_s") / num(m, "spmm_best_s"), "metis_gain_best");
        met &= num(r, "spmm_over_gather") >= 0.7;
    }
    ck_assert_int_eq(cJSON_IsTrue(tu_json_get(s, "target_spmm_ge_70pct_gather", cJSON_True | cJSON_False)), met);
    tu_json_free_lines(v, n);
    refused("--parts: expected 2 .. nodes, got 2001", "bench spmm --nodes 2000 --parts 2001");
}
END_TEST

/* bench gen: every rate is its count over its printed seconds (edges over generate + write,
 * store bytes over write, 4-byte column ids over the reread), each against memcpy as their
 * quotient; the store is removed unless --keep, and a kept one holds the printed bytes. */
START_TEST(bench_gen_figures) {
    char out_dir[1100];
    snprintf(out_dir, sizeof out_dir, "%s/gen", dir);
    ck_assert_int_eq(mkdir(out_dir, 0700), 0);
    for (int keep = 0; keep < 2; keep++) {
        cJSON *v[2];
        const int n = run_lines(v, 2, "bench gen --nodes 3000 --avg-degree 4 --features 4 --out '%s' --quiet%s", out_dir,
                                keep ? " --keep" : "");
        ck_assert_int_eq(n, 1);
        const cJSON *o = v[0];
        NEAR(num(o, "edges_per_s") * num(o, "total_s"), num(o, "edges"), "edges_per_s x total_s");
        NEAR(num(o, "total_s"), num(o, "edges") / num(o, "edges_per_s"), "total_s");
        NEAR(num(o, "store_write_gbs") * num(o, "write_s") * 1e9, num(o, "store_bytes"), "store_write_gbs x write_s");
        NEAR(num(o, "store_write_vs_memcpy"), num(o, "store_write_gbs") / num(o, "memcpy_gbs"), "store_write_vs_memcpy");
        NEAR(num(o, "col_read_gbs") * num(o, "reopen_read_col_s") * 1e9, 4 * num(o, "edges"), "col_read_gbs x seconds");
        NEAR(num(o, "col_read_vs_memcpy"), num(o, "col_read_gbs") / num(o, "memcpy_gbs"), "col_read_vs_memcpy");
        NEAR(num(o, "sampled_edges_per_s_gen") * num(o, "gen_s"), num(o, "sampled_edges"), "sampled edges per s");
        const char *store = tu_json_get(o, "store", cJSON_String)->valuestring;
        DIR *dd = opendir(out_dir);
        ck_assert_ptr_nonnull(dd);
        int entries = 0;
        for (struct dirent *e; (e = readdir(dd));) entries += e->d_name[0] != '.';
        closedir(dd);
        if (!keep) {
            ck_assert_str_eq(store, "(removed)");
            ck_assert_int_eq(entries, 0);
        } else {
            ck_assert_int_eq(entries, 1);
            store_t *s = NULL;
            ck_assert_int_eq(store_open(store, STORE_RDONLY, &s), INCA_OK);
            ck_assert_int_eq(store_meta(s)->nodes, 3000);
            ck_assert_int_eq((long long)store_disk_bytes(s), (long long)num(o, "store_bytes"));
            store_close(&s);
        }
        tu_json_free_lines(v, n);
    }
}
END_TEST

int main(void) {
    dir = tu_mkdtemp();
    if (!dir) { perror("mkdtemp"); return EXIT_FAILURE; }
    snprintf(g, sizeof g, "%s/g", dir);
    char args[2048], *out = NULL, *err = NULL;
    snprintf(args, sizeof args, "gen --kind csbm --nodes 600 --avg-degree 8 --features 16 --classes 3 --seed 1 --out '%s' --quiet", g);
    if (tu_inca(args, &out, &err) != 0) {
        fprintf(stderr, "inca %s: %s%s\n", args, out ? out : "", err ? err : "");
        return EXIT_FAILURE;
    }
    free(out);
    free(err);
    Suite *su = suite_create("bench_figures");
    TCase *tc = tcase_create("bench_figures");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, bench_epoch_figures);
    tcase_add_test(tc, bench_epoch_input_layer);
    tcase_add_test(tc, bench_breakdown_figures);
    tcase_add_test(tc, bench_loader_figures);
    tcase_add_test(tc, bench_spmm_figures);
    tcase_add_test(tc, bench_gen_figures);
    suite_add_tcase(su, tc);
    const int rc = tu_run_suite(su);
    tu_rmrf(dir);
    free(dir);
    return rc;
}
