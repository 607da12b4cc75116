/* inca bench epoch STORE --methods gas,incagg [--refresh-epochs 1,2,4] [training flags]:
 * trains each method for the same number of epochs on the same stored METIS partitioning and
 * the same batch sequence, evaluates once at the end (or every epoch with --eval-each-epoch,
 * then counted in the epoch time of both), and prints per run one JSON line
 * (step / refresh time per epoch, accuracy, memory) and a summary object whose `speedup` is
 * GAS epoch time / IncAgg epoch time and `acc_gap` is GAS test acc - IncAgg test acc (fractions),
 * for the first refresh period, plus speedup_r<R>/acc_gap_r<R> for every period R (epochs).
 * Each step is split into the aggregation operator's time and the dense rest (GEMMs,
 * elementwise, loss, optimiser: the same work for every method); `speedup_ceiling` = GAS epoch
 * time / IncAgg's dense time per epoch (plus GAS's evaluation time per epoch with
 * --eval-each-epoch) is what IncAgg would reach with free aggregation and refreshes.
 * Epoch time = (optimiser steps + refreshes) / epochs; --warmup-epochs W leaves the first W
 * epochs out of every figure (choose --epochs so that epochs - W is a multiple of each refresh
 * period, or the refreshes in the timed window are not one per period); IncAgg's one-off initial snapshot pass
 * (one layer-wise inference before the first step) is reported apart as init_time_s. Each time
 * has a CPU-time twin (process CPU seconds, all threads: *_cpu_*, speedup_cpu*), steadier than
 * wall time on a shared machine; with --threads 1 it measures the work done.
 * --compare-input-layer (--methods cluster,incagg): each also with --input-layer transform-first
 * after its aggregate-first run, the summary's <method>_input_speedup = aggregate-first epoch
 * time / transform-first's. Speed is never asserted; a smoke test lives in test_incagg.c, the
 * figures' arithmetic in test_bench_figures.c. */
#include "bench/bench.h"
#include "bench/bench_progress.h"
#include "bench/bench_mb.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/backend.h"
#include "nn/train_mb.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PERIODS 8

/* agg_s: the aggregation operator's time per epoch (forward + backward: GAS's halo pull and
 * SpMMs, IncAgg's baseline pull, residual and in-batch SpMMs); dense_s: the rest of a step
 * (GEMMs, elementwise layers, loss, optimiser), which every method pays alike. */
/* step_s, refresh_s, eval_s: per timed epoch; step1_s, refresh1_s: one step's, one refresh's */
typedef struct run_out {
    double epoch_s, step_s, refresh_s, eval_s, acc, val, epoch_cpu_s, agg_s, dense_s, step1_s, refresh1_s;
    int ok, tables_host;
} run_out_t;

/* One run's JSON line: r and st its result and statistics, E its timed epochs, out its figures. */
static int run_json(const train_config_t *c, train_method_t m, int64_t refresh_epochs, const train_result_t *r,
                    const mb_stats_t *st, int E, const run_out_t *out) {
    json_t *j = NULL;
    int rc = json_new(&j);
    if (rc != INCA_OK) return rc;
    json_str(j, "method", train_method_name(m));
    if (m == TRAIN_INCAGG) {
        json_int(j, "refresh_epochs", refresh_epochs);
        json_str(j, "refresh_source", agg_source_name(c->refresh_source));
        if (c->refresh_source == AGG_SRC_RECOMPUTE) {
            json_num(j, "refresh_relax", c->refresh_relax);
            json_str(j, "refresh_weights", train_refresh_weights_name(c));
        }
        json_str(j, "refresh_eval", train_refresh_eval_name(c));
    }
    if (m == TRAIN_CLUSTER) json_str(j, "cluster_norm", train_cluster_norm_words[c->cluster_global_norm != 0]);
    json_str(j, "input_layer", train_input_layer_words[c->input_layer != 0]);
    json_num(j, "beta1", train_beta1(c));   /* Adam's, resolved (auto: 0 for histories) */
    json_int(j, "epochs", r->epochs);
    json_int(j, "timed_epochs", st->timed_epochs);
    json_int(j, "steps_per_epoch", st->steps_per_epoch);
    json_num(j, "epoch_time_s", out->epoch_s);
    json_num(j, "step_time_per_epoch_s", out->step_s);
    json_num(j, "refresh_time_per_epoch_s", out->refresh_s);
    json_num(j, "epoch_cpu_s", out->epoch_cpu_s);
    json_num(j, "step_cpu_per_epoch_s", st->step_cpu_s / E);
    json_num(j, "refresh_cpu_per_epoch_s", st->refresh_cpu_s / E);
    json_num(j, "step_time_s", r->step_time_s);
    json_num(j, "refresh_time_s", r->refresh_time_s);
    json_int(j, "refreshes", st->refreshes);
    json_num(j, "init_time_s", st->init_s);
    json_num(j, "eval_time_s", st->evals ? st->eval_s_total / (double)st->evals : 0);   /* one evaluation, as train's */
    json_int(j, "fused_refreshes", st->fused);   /* counted in refreshes; their time is the refresh's */
    json_int(j, "evaluations", st->evals);
    json_num(j, "agg_fwd_s", st->agg_fwd_s);
    json_num(j, "agg_bwd_s", st->agg_bwd_s);
    json_num(j, "agg_time_per_epoch_s", out->agg_s);
    json_num(j, "dense_time_per_epoch_s", out->dense_s);
    json_num(j, "intra_batch_edge_fraction", st->intra_fraction);
    json_str(j, "history_location", r->history_on_host || kc_device(c->kc) == KERN_DEV_CPU ? "host" : "device");
    train_placement_json(j, &r->placement, 1);
    json_num(j, "loader_wait_s", st->wait_s);
    json_num(j, "loader_build_s", st->build_s);
    json_num(j, "test_acc", r->test_acc);
    json_num(j, "val_acc", r->val_acc);
    json_num(j, "train_loss", r->train_loss);
    json_int(j, "table_bytes", st->table_bytes);
    json_int(j, "scratch_bytes", st->scratch_bytes);
    json_obj_begin(j, "tables");   /* arena block label -> bytes (tables and scratch) */
    for (int i = 0; i < st->ntables; i++) json_int(j, st->tables[i].label, st->tables[i].bytes);
    json_obj_end(j);
    json_num(j, "peak_rss_mb", r->peak_rss_mb);
    memstat_json(j);
    rc = json_write(j, stdout);
    json_free(&j);
    return rc;
}

static int run_one(const dataset_t *d, train_config_t *c, const partition_t *p, train_method_t m,
                   int64_t refresh_epochs, int json, int eval_each, int warmup, run_out_t *out) {
    const char *method = train_method_name(m);
    c->method = m;
    train_result_t r;
    mb_stats_t st;
    mb_opts_t o;
    mb_opts_default(&o);
    o.eval_every_epoch = eval_each;
    o.warmup_epochs = warmup;
    int64_t bb = c->batch_parts < p->k ? c->batch_parts : p->k, spe = (p->k + bb - 1) / bb;
    c->refresh = (int)(refresh_epochs * spe);
    if (m == TRAIN_INCAGG) bench_progress_stage("incagg, refresh every %lld epochs", (long long)refresh_epochs);
    else bench_progress_stage("%s", method);
    int rc = mb_train(d, c, d->split[SPLIT_TRAIN], d->split_n[SPLIT_TRAIN], 0, p, &o, &r, &st);
    if (rc != INCA_OK) return inca_fail_ctx(rc, "bench epoch, method %s", method);
    int E = st.timed_epochs ? (int)st.timed_epochs : 1;
    out->step_s = st.step_s_total / E;
    out->refresh_s = st.refresh_s_total / E;
    /* with --eval-each-epoch both methods evaluate every epoch and that time counts (IncAgg's
     * refreshes then ride on the evaluation pass when due together) */
    out->eval_s = eval_each ? st.eval_s_total / E : 0;
    out->epoch_s = out->step_s + out->refresh_s + out->eval_s;
    out->agg_s = (st.agg_fwd_s + st.agg_bwd_s) / E;
    out->dense_s = out->step_s - out->agg_s;
    out->epoch_cpu_s = (st.step_cpu_s + st.refresh_cpu_s + (eval_each ? st.eval_cpu_s : 0)) / E;
    out->step1_s = r.step_time_s;
    out->refresh1_s = r.refresh_time_s;
    out->acc = r.test_acc;
    out->val = r.val_acc;
    out->ok = 1;
    out->tables_host = r.history_on_host;
    bench_say("bench epoch: %-7s refresh %lld ep: %.3f s/epoch (steps %.3f + refresh %.3f), test acc %.4f, wait %.3f s\n",
            method, (long long)refresh_epochs, out->epoch_s, out->step_s, out->refresh_s, r.test_acc, st.wait_s);
    if (json) rc = run_json(c, m, refresh_epochs, &r, &st, E, out);
    mb_stats_free(&st);
    return rc;
}

/* Flags the chosen mode would not use are refused (the command line's: --config holds all):
 * --breakdown times and evaluates every epoch and refreshes by --refresh; the timed runs set
 * IncAgg's period by --refresh-epochs */
static int mode_flags(const args_t *a, int breakdown) {
    static const char *const timed_only[] = {"--warmup-epochs", "--refresh-epochs", "--eval-each-epoch"};
    for (size_t i = 0; breakdown && i < sizeof timed_only / sizeof timed_only[0]; i++)
        if (args_on_command_line(a, timed_only[i]))
            return inca_fail(INCA_EINVAL, "%s: no effect with --breakdown (every epoch is timed and evaluated, IncAgg "
                             "refreshes by --refresh)", timed_only[i]);
    if (!breakdown && args_on_command_line(a, "--refresh"))
        return inca_fail(INCA_EINVAL, "--refresh: bench epoch sets IncAgg's refresh period by --refresh-epochs (in epochs)");
    return INCA_OK;
}

/* The summary's keys of each method run (NULL: not run); times of one step and one refresh, as
 * every step_time_s is, and their sums per epoch. */
static void summary_methods(json_t *j, const run_out_t *cl, const run_out_t *gas, const run_out_t *inc) {
    if (cl) {
        json_num(j, "cluster_epoch_time_s", cl->epoch_s);
        json_num(j, "cluster_test_acc", cl->acc);
    }
    if (gas) {
        json_num(j, "gas_epoch_time_s", gas->epoch_s);
        json_num(j, "gas_step_time_s", gas->step1_s);   /* one step (was an epoch's steps) */
        json_num(j, "gas_step_time_per_epoch_s", gas->step_s);
        json_num(j, "gas_test_acc", gas->acc);
    }
    if (inc) {
        json_num(j, "incagg_epoch_time_s", inc->epoch_s);
        json_num(j, "incagg_step_time_s", inc->step1_s);
        json_num(j, "incagg_step_time_per_epoch_s", inc->step_s);
        json_num(j, "incagg_refresh_time_s", inc->refresh1_s);   /* one refresh */
        json_num(j, "incagg_refresh_time_per_epoch_s", inc->refresh_s);
        json_num(j, "incagg_test_acc", inc->acc);
    }
}

/* --refresh-epochs: up to MAX_PERIODS positive periods into periods[0 .. *np). */
static int epoch_periods(const args_t *a, int64_t *periods, int *np) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", args_str(a, "--refresh-epochs", "1"));
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *end;
        long v = strtol(tok, &end, 10);
        if (*end || v < 1 || *np == MAX_PERIODS) return inca_fail(INCA_EINVAL, "--refresh-epochs: expected up to %d positive integers, got '%s'", MAX_PERIODS, tok);
        periods[(*np)++] = v;
    }
    return INCA_OK;
}

/* The summary's keys of the graph, the model and the setup every run shared. */
static void summary_setup(json_t *j, const dataset_t *d, const train_config_t *c, const partition_t *p,
                          int64_t warmup, const char *devname, int tables_host, int ev) {
    json_int(j, "nodes", d->n);
    json_int(j, "edges", d->adj.nnz);
    json_str(j, "model", model_kind_name(c->model));
    json_int(j, "layers", c->layers);
    json_int(j, "hidden", c->hidden);
    json_int(j, "epochs", c->epochs);
    json_int(j, "warmup_epochs", warmup);
    json_int(j, "parts", p->k);
    json_int(j, "batch_parts", c->batch_parts);
    json_int(j, "edge_cut", p->man.edge_cut);
    json_int(j, "threads", inca_threads());
    json_str(j, "device", devname);
    json_str(j, "history_location", tables_host ? "host" : "device");
    json_bool(j, "eval_each_epoch", ev);
    json_str(j, "refresh_source", agg_source_name(c->refresh_source));
    json_num(j, "eval_average", c->eval_average);
}

/* The summary's GAS against IncAgg keys: for the first refresh period, then for each of np. */
static void summary_speedups(json_t *j, const run_out_t *gas, const run_out_t *inc, const int64_t *periods, int np) {
    json_num(j, "speedup", gas->epoch_s / inc[0].epoch_s);
    json_num(j, "acc_gap", gas->acc - inc[0].acc);
    json_num(j, "speedup_cpu", gas->epoch_cpu_s / inc[0].epoch_cpu_s);
    /* the most any aggregation scheme could gain here: GAS's epoch over the dense part
     * of IncAgg's steps, as if its aggregation and refreshes cost nothing (with
     * --eval-each-epoch plus one evaluation, counted at GAS's cost) */
    const double floor_s = inc[0].dense_s + gas->eval_s;
    json_num(j, "speedup_ceiling", floor_s > 0 ? gas->epoch_s / floor_s : 0);
    json_num(j, "gas_agg_time_s", gas->agg_s);
    json_num(j, "gas_dense_time_s", gas->dense_s);
    json_num(j, "incagg_agg_time_s", inc[0].agg_s);
    json_num(j, "incagg_dense_time_s", inc[0].dense_s);
    for (int i = 0; i < np; i++) {
        char k1[32], k2[32];
        snprintf(k1, sizeof k1, "speedup_r%lld", (long long)periods[i]);
        snprintf(k2, sizeof k2, "acc_gap_r%lld", (long long)periods[i]);
        json_num(j, k1, gas->epoch_s / inc[i].epoch_s);
        json_num(j, k2, gas->acc - inc[i].acc);
        snprintf(k1, sizeof k1, "speedup_cpu_r%lld", (long long)periods[i]);
        json_num(j, k1, gas->epoch_cpu_s / inc[i].epoch_cpu_s);
    }
}

/* --compare-input-layer: cluster and incagg (its first period) again with the first layer
 * transformed first (cl/inc were run aggregate-first); the summary's keys of both and their
 * quotients (aggregate-first epoch over transform-first's). */
static int compare_input(const dataset_t *d, train_config_t *c, const partition_t *p, const run_out_t *cl,
                         const run_out_t *inc, int64_t period, int json, int ev, int warmup, run_out_t *tf) {
    int rc = INCA_OK;
    c->input_layer = TRAIN_INPUT_TRANSFORM_FIRST;
    if (cl && (rc = run_one(d, c, p, TRAIN_CLUSTER, 0, json, ev, warmup, &tf[0])) != INCA_OK) return rc;
    if (inc && (rc = run_one(d, c, p, TRAIN_INCAGG, period, json, ev, warmup, &tf[1])) != INCA_OK) return rc;
    for (int i = 0; i < 2; i++)
        if ((i ? inc : cl) != NULL)
            bench_say("bench epoch: %-7s transform-first %.2fx the epochs' speed of aggregate-first (%.3f s against %.3f)\n",
                      i ? "incagg" : "cluster", (i ? inc : cl)->epoch_s / tf[i].epoch_s, tf[i].epoch_s, (i ? inc : cl)->epoch_s);
    return rc;
}
static void summary_input(json_t *j, const run_out_t *cl, const run_out_t *inc, const run_out_t *tf) {
    for (int i = 0; i < 2; i++) {
        const run_out_t *base = i ? inc : cl;
        if (!base) continue;
        char k[64];
        const char *m = i ? "incagg" : "cluster";
        snprintf(k, sizeof k, "%s_tf_epoch_time_s", m);
        json_num(j, k, tf[i].epoch_s);
        snprintf(k, sizeof k, "%s_tf_step_time_s", m);
        json_num(j, k, tf[i].step1_s);
        snprintf(k, sizeof k, "%s_tf_test_acc", m);
        json_num(j, k, tf[i].acc);
        snprintf(k, sizeof k, "%s_input_speedup", m);
        json_num(j, k, base->epoch_s / tf[i].epoch_s);
    }
}

/* --compare-input-layer runs cluster and incagg both ways: not with gas (aggregate-first only),
 * --breakdown or a typed --input-layer */
static int compare_flags(const args_t *a, int want_gas, int breakdown) {
    if (!args_has(a, "--compare-input-layer")) return INCA_OK;
    if (want_gas || breakdown)
        return inca_fail(INCA_EINVAL, "--compare-input-layer: %s", breakdown ? "not with --breakdown (run it once with each "
                         "--input-layer)" : "--methods cluster and/or incagg (gas's first layer aggregates first only)");
    if (args_on_command_line(a, "--input-layer"))
        return inca_fail(INCA_EINVAL, "--compare-input-layer runs aggregate-first and transform-first: drop --input-layer");
    return INCA_OK;
}

int bench_epoch(int argc, char **argv) {
    static const char *const known[] = {BENCH_MB_FLAGS, "--methods", "--refresh-epochs", "--eval-each-epoch!", "--warmup-epochs", "--config", "--breakdown!",
                                        "--compare-input-layer!", NULL};
    args_t *a = NULL;
    dataset_t d;
    partition_t p = {0};
    train_config_t c;
    json_t *j = NULL;
    kern_ctx_t *kc = NULL;
    char devname[16] = "";
    dataset_init(&d);
    int rc = args_parse(argc, argv, known, &a);
    if (rc != INCA_OK) return rc;
    int64_t periods[MAX_PERIODS];
    int np = 0, reused = 0;
    run_out_t gas = {0}, cluster = {0}, inc[MAX_PERIODS], tf[2] = {{0}};
    memset(inc, 0, sizeof inc);
    if (args_npos(a) != 1) { rc = inca_fail(INCA_EINVAL, "expected one STORE argument"); goto done; }
    if ((rc = bench_mb_config(a, &c)) != INCA_OK) goto done;
    if ((rc = epoch_periods(a, periods, &np)) != INCA_OK) goto done;
    int64_t warmup = 0;
    if ((rc = args_int(a, "--warmup-epochs", 0, &warmup)) != INCA_OK) goto done;
    if (warmup < 0 || warmup >= c.epochs) {
        rc = inca_fail(INCA_EINVAL, "--warmup-epochs: expected 0 .. --epochs - 1 (%d), got %lld", c.epochs - 1, (long long)warmup);
        goto done;
    }
    const char *methods = args_str(a, "--methods", "gas,incagg");
    int want_gas = strstr(methods, "gas") != NULL, want_inc = strstr(methods, "incagg") != NULL,
        want_cl = strstr(methods, "cluster") != NULL;
    const int breakdown = args_has(a, "--breakdown");   /* any of full,cluster,gas,incagg: bench_breakdown.c */
    if ((rc = mode_flags(a, breakdown)) != INCA_OK || (rc = compare_flags(a, want_gas, breakdown)) != INCA_OK) goto done;
    const int cmp = args_has(a, "--compare-input-layer");
    if (!want_gas && !want_inc && !want_cl && !breakdown) { rc = inca_fail(INCA_EINVAL, "--methods: expected a list of cluster,gas,incagg, got '%s'", methods); goto done; }
    if ((rc = train_device_open(&c, &kc, devname, sizeof devname)) != INCA_OK) goto done;
    c.kc = kc;
    double t0 = inca_now();
    if ((rc = bench_mb_load(args_pos(a, 0), &c, &d, &p, &reused)) != INCA_OK) goto done;
    bench_say("bench epoch: %lld nodes, %lld edges, partition %s (%s, edge cut %lld, %.2f s), loaded in %.2f s\n",
            (long long)d.n, (long long)d.adj.nnz, p.man.name, reused ? "reused" : "computed", (long long)p.man.edge_cut,
            p.man.seconds, inca_now() - t0);
    int json = args_has(a, "--json"), ev = args_has(a, "--eval-each-epoch");
    if (breakdown) {
        rc = bench_epoch_breakdown(&d, &c, &p, methods, json);
        goto done;
    }
    if (want_cl && (rc = run_one(&d, &c, &p, TRAIN_CLUSTER, 0, json, ev, (int)warmup, &cluster)) != INCA_OK) goto done;
    if (want_gas && (rc = run_one(&d, &c, &p, TRAIN_GAS, 0, json, ev, (int)warmup, &gas)) != INCA_OK) goto done;
    for (int i = 0; want_inc && i < np; i++)
        if ((rc = run_one(&d, &c, &p, TRAIN_INCAGG, periods[i], json, ev, (int)warmup, &inc[i])) != INCA_OK) goto done;
    if (cmp && (rc = compare_input(&d, &c, &p, want_cl ? &cluster : NULL, want_inc ? inc : NULL, periods[0], json, ev,
                                   (int)warmup, tf)) != INCA_OK)
        goto done;
    if (json) {
        if ((rc = json_new(&j)) != INCA_OK) goto done;
        /* the incagg runs' (auto may put the tables on either side; each run's line says its own) */
        const int host = kc_device(kc) == KERN_DEV_CPU || (want_inc ? inc[0].tables_host : want_gas ? gas.tables_host : cluster.tables_host);
        summary_setup(j, &d, &c, &p, warmup, devname, host, ev);
        summary_methods(j, want_cl ? &cluster : NULL, want_gas ? &gas : NULL, want_inc ? &inc[0] : NULL);
        if (want_gas && want_inc) summary_speedups(j, &gas, inc, periods, np);
        if (cmp) summary_input(j, want_cl ? &cluster : NULL, want_inc ? inc : NULL, tf);
        if ((rc = args_config_json(a, j, NULL)) != INCA_OK) goto done;   /* --config reruns it */
        json_str(j, "version", bench_version());
        rc = json_write(j, stdout);
    }
done:
    kc_free(&kc);
    json_free(&j);
    partition_free(&p);
    dataset_free(&d);
    args_free(&a);
    return rc;
}
