/* The entry of training (train_run): checks the configuration, prepares the data once
 * (train_prep.h), runs c->runs runs of one trainer (train_full.h, train_mb.h, train_dist.h) and
 * folds them into one result with the runs' statistics. Tested in tests/test_train.c and
 * tests/test_e2e_train.c (the CLI on the bundled Cora). */
#include "nn/train.h"
#include "nn/checkpoint.h"
#include "nn/train_dist.h"
#include "nn/train_mb.h"
#include "nn/layout.h"
#include "kernels/backend.h"
#include "kernels/profile.h"
#include "core/alloc.h"
#include "core/comm.h"
#include "core/status.h"
#include "core/util.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static double mean_of(const double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return n ? s / n : 0;
}
static double std_of(const double *v, int n) {
    const double mu = mean_of(v, n);
    if (isnan(mu)) return mu;   /* a split without labelled rows: no accuracy, no deviation */
    if (n < 2) return 0;
    double s = 0;
    for (int i = 0; i < n; i++) s += (v[i] - mu) * (v[i] - mu);
    return sqrt(s / (n - 1));
}
/* One run of c->method: full-batch, or a mini-batch method on the partitioning p (through the
 * store layout's views when view is not NULL). */
static int train_one(const dataset_t *d, const train_config_t *c, const int64_t *tidx, int64_t ntr, int run,
                     const partition_t *p, const layout_views_t *view, train_result_t *one) {
    if (!p) return train_full(d, c, tidx, ntr, run, one);
    mb_opts_t o;
    mb_opts_default(&o);
    o.view = view;
    mb_stats_t st;
    int rc = mb_train(d, c, tidx, ntr, run, p, &o, one, &st);
    if (rc == INCA_OK && run == 0)
        train_log(c, TRAIN_LOG_INFO, "%s: partition %s (edge cut %lld), %lld steps/epoch, history tables %lld bytes "
                  "+ scratch %lld, loader wait %.3f s of %.3f s of steps", train_method_name(c->method), p->man.name,
                  (long long)p->man.edge_cut, (long long)st.steps_per_epoch, (long long)st.table_bytes,
                  (long long)st.scratch_bytes, st.wait_s, st.step_s_total);
    if (rc == INCA_OK && run == 0 && view)
        train_log(c, TRAIN_LOG_INFO, "--loader view: features%s mapped from the store; %lld table bytes in file-backed maps",
                  view->m0 ? " and M^0" : "", (long long)st.spilled_bytes);
    mb_stats_free(&st);
    return rc;
}

/* Run i of runs (one, consumed) into r: its accuracies and best epoch into the per-run arrays,
 * the per-class metrics into their means, its times into t (epoch, step, refresh, evaluation);
 * everything else r reports is the last run's: one is taken whole, keeping r's own fields (the
 * arrays, the means, the device), and its parameters move to r. */
static void fold_run(train_result_t *r, train_result_t *one, int i, int runs, double t[4]) {
    r->run_test_acc[i] = one->test_acc;
    r->run_val_acc[i] = one->val_acc;
    r->run_best_epoch[i] = one->best_epoch;
    t[0] += one->epoch_time_s;
    t[1] += one->step_time_s;
    t[2] += one->refresh_time_s;
    t[3] += one->eval_time_s;
    train_result_t last = *one;
    last.test_bacc = r->test_bacc + one->test_bacc / runs;   /* NaN when not measured */
    last.val_bacc = r->val_bacc + one->val_bacc / runs;
    last.test_f1 = r->test_f1 + one->test_f1 / runs;
    last.val_f1 = r->val_f1 + one->val_f1 / runs;
    last.run_test_acc = r->run_test_acc;
    last.run_val_acc = r->run_val_acc;
    last.run_best_epoch = r->run_best_epoch;
    memcpy(last.device, r->device, sizeof last.device);
    inca_free(r->params);   /* the previous run's */
    one->params = NULL;
    train_result_free(one);
    *r = last;
}

/* --patience counts evaluations since the validation figure last improved: with no labelled
 * validation row (Fashion-MNIST, --split random:0.6,0,0.4) it is never measured, and the run went
 * on to --epochs as if the flag were not there. A shard's rows are its rank's: not checked. */
static int train_check_patience(const dataset_t *d, const train_config_t *c) {
    if (c->patience <= 0 || !d->y || c->given_partition) return INCA_OK;
    for (int64_t i = 0; i < d->split_n[SPLIT_VALID]; i++)
        if (d->y[d->split[SPLIT_VALID][i]] >= 0) return INCA_OK;
    return inca_fail(INCA_EINVAL, "--patience %d: the validation split has no labelled row, so the figure it waits on is "
                     "never measured (give one: --split random:TR,VA,TE; or leave --patience out)", c->patience);
}

/* The configuration and the training ids (tidx, ntr; idx_given: the caller's, not the train
 * split) checked before anything is opened. */
static int train_check(const dataset_t *d, const train_config_t *c, const int64_t *tidx, int64_t ntr, int idx_given) {
    if (c->method < 0 || c->method >= TRAIN_METHOD_COUNT) return inca_fail(INCA_EINVAL, "--method: unknown method %d", (int)c->method);
    const int mb = c->method != TRAIN_FULL;
    if (c->model < 0 || c->model >= NN_KIND_COUNT) return inca_fail(INCA_EINVAL, "--model: unknown kind %d", c->model);
    if (c->resume && !c->checkpoint_dir) return inca_fail(INCA_EINVAL, "--resume: needs --checkpoint DIR");
    if (c->runs < 1) return inca_fail(INCA_EINVAL, "--runs: expected >= 1, got %d", c->runs);
    if (c->grad_reduce == TRAIN_GRAD_NCCL && comm_size(c->comm) < 2)   /* never silently ignored */
        return inca_fail(INCA_EINVAL, "--grad-reduce nccl: between the GPUs of MPI ranks (mpirun -np P, one GPU each); "
                         "this is one process%s", c->workers > 1 ? " (--workers runs its ranks in it)" : "");
    if (mb && !dataset_has_graph(d)) return inca_fail(INCA_EINVAL, "--method %s needs a graph; this dataset has none", train_method_name(c->method));
    int rc = d->x ? train_features_check(c->feature_norm, d->x, 0, d->n * d->f, d->f) : INCA_OK;
    if (rc != INCA_OK) return rc;
    for (int64_t i = 0; i < ntr; i++)
        if (tidx[i] < 0 || tidx[i] >= d->n)
            return inca_fail(INCA_EINVAL, "train index %lld (entry %lld) is outside [0, %lld)", (long long)tidx[i],
                             (long long)i, (long long)d->n);
    /* training ids without one label trained nothing for --epochs and reported chance (a shard
     * holds its rank's rows only: the job's verdict is not this process's) */
    int64_t labelled = 0;
    for (int64_t i = 0; d->y && i < ntr && !labelled; i++) labelled += d->y[tidx[i]] >= 0;
    if (ntr > 0 && d->y && !labelled && !c->given_partition)
        return inca_fail(INCA_EINVAL, "none of the %lld training nodes (%s) has a label: nothing to train on", (long long)ntr,
                         idx_given ? "--train-indices" : "the train split");
    return train_check_patience(d, c);
}

/* The loader of the runs into cc->loader: the caller's views, the store's views (opened into
 * *vstore and *views), or the features in memory; *view: the views used, or NULL. */
static int train_loader_pick(const dataset_t *d, const train_config_t *c, int mb, const partition_t *part,
                             train_config_t *cc, store_t **vstore, layout_views_t *views, const layout_views_t **view) {
    int rc;
    /* auto with the features loaded (a caller that loaded the dataset: prune, tests) stays on the
     * copy path; the CLI resolves auto before loading and loads no features for view */
    if (mb && c->given_views) {
        cc->loader = TRAIN_LOADER_VIEW;
        *view = c->given_views;
    } else if (mb && (c->loader == TRAIN_LOADER_VIEW || (c->loader == TRAIN_LOADER_AUTO && !d->x))) {
        cc->loader = TRAIN_LOADER_VIEW;
        if ((rc = train_view_open(d, cc, part, vstore, views))) return rc;
        *view = views;
    } else if (!d->x) {
        return inca_fail(INCA_EINVAL, "%s: no node features: cannot train a model (ingest them, e.g. --features FILE)",
                         c->store_path ? c->store_path : "the dataset");
    } else cc->loader = TRAIN_LOADER_COPY;
    return INCA_OK;
}

/* --metrics opened into *mf and cc->metrics_fp, unless the caller passed its own file. */
static int train_metrics_open(const train_config_t *c, train_config_t *cc, FILE **mf) {
    if (c->metrics_path && !c->metrics_fp) {
        /* a resumed run continues the file (train_resume_note cuts it back to the checkpoint) */
        if (!(*mf = fopen(c->metrics_path, c->resume ? "a+" : "w")))
            return inca_fail(INCA_EIO, "--metrics %s: cannot open for writing", c->metrics_path);
        cc->metrics_fp = *mf;
    }
    return INCA_OK;
}

/* r's figures over its runs: accuracies' means and deviations, times t summed by fold_run. */
static void train_runs_summary(train_result_t *r, int runs, const double t[4]) {
    r->runs = runs;
    r->test_acc = mean_of(r->run_test_acc, runs);
    r->val_acc = mean_of(r->run_val_acc, runs);
    r->test_acc_std = std_of(r->run_test_acc, runs);
    r->val_acc_std = std_of(r->run_val_acc, runs);
    r->epoch_time_s = t[0] / runs;
    r->step_time_s = t[1] / runs;
    r->refresh_time_s = t[2] / runs;
    r->eval_time_s = t[3] / runs;
    r->peak_rss_mb = inca_peak_rss_mb();
}

int train_run(const dataset_t *d, const train_config_t *c, const int64_t *train_idx_override, int64_t n_override,
              train_result_t *r) {
    int rc = INCA_OK;
    train_config_t cc = *c;
    train_result_t one;
    partition_t part;
    FILE *mf = NULL;
    store_t *vstore = NULL;
    layout_views_t views;
    const layout_views_t *view = NULL;
    memset(r, 0, sizeof *r);
    memset(&one, 0, sizeof one);
    memset(&part, 0, sizeof part);
    const int64_t *tidx = train_idx_override ? train_idx_override : d->split[SPLIT_TRAIN];
    const int64_t ntr = train_idx_override ? n_override : d->split_n[SPLIT_TRAIN];
    if ((rc = train_check(d, c, tidx, ntr, train_idx_override != NULL))) return rc;
    const int mb = c->method != TRAIN_FULL;
    kern_ctx_t *kc = NULL;
    /* full-batch over several ranks (nn/train_dist.h) owns METIS parts too */
    const int dist = !mb && (comm_size(c->comm) > 1 || c->workers > 1);
    const int parted = mb || dist;
    if (c->threads > 0) inca_set_threads(c->threads);
    if ((rc = train_device_open(c, &kc, r->device, sizeof r->device))) return rc;
    if (c->prof) kc_prof_attach(kc, c->prof);
    cc.kc = kc;
    r->run_test_acc = inca_calloc((size_t)c->runs, sizeof(double));
    r->run_val_acc = inca_calloc((size_t)c->runs, sizeof(double));
    r->run_best_epoch = inca_calloc((size_t)c->runs, sizeof(int));
    if (!r->run_test_acc || !r->run_val_acc || !r->run_best_epoch) { rc = INCA_ENOMEM; goto fail; }
    /* under mpirun rank 0 partitions (and writes the layout) first, then the others read them */
    const int after0 = parted && comm_size(c->comm) > 1 && comm_rank(c->comm) != 0 && !c->given_views;
    if (after0 && (rc = comm_barrier(c->comm))) goto fail;
    const partition_t *pp = c->given_partition ? c->given_partition : &part;   /* a shard's (nn/shard.h) */
    if (parted && !c->given_partition && (rc = train_partition(d, c, &part, NULL))) goto fail;   /* one partitioning for every run */
    if ((rc = train_loader_pick(d, c, mb, &part, &cc, &vstore, &views, &view))) goto fail;
    if (parted && comm_size(c->comm) > 1 && !after0 && !c->given_views && (rc = comm_barrier(c->comm))) goto fail;
    if ((rc = train_metrics_open(c, &cc, &mf))) goto fail;
    /* one process's checkpoints claim the folder (an MPI job's ranks write their manifest) */
    if (comm_size(c->comm) == 1 && (rc = ckpt_one_process(c))) goto fail;
    double t[4] = {0, 0, 0, 0};   /* summed epoch, step, refresh and evaluation seconds */
    for (int i = 0; i < c->runs; i++) {
        cc.seed = c->seed + (uint64_t)i;
        if ((rc = dist ? train_full_dist(d, &cc, tidx, ntr, i, pp, &one)
                       : train_one(d, &cc, tidx, ntr, i, mb ? pp : NULL, view, &one))) {
            if (c->runs > 1) inca_fail_ctx(rc, "run %d (seed %llu)", i, (unsigned long long)cc.seed);
            goto fail;
        }
        fold_run(r, &one, i, c->runs, t);
    }
    if (parted) {   /* after the runs: fold_run takes each run's result whole */
        snprintf(r->partition, sizeof r->partition, "%s", pp->man.name);
        r->edge_cut = pp->man.edge_cut;
    }
    partition_free(&part);
    train_runs_summary(r, c->runs, t);
    if (mf && c->resume && (rc = train_metrics_sort(mf, c->metrics_path))) goto fail;
    if (mf && fclose(mf) != 0) { mf = NULL; rc = inca_fail(INCA_EIO, "--metrics %s: write failed", c->metrics_path); goto fail; }
    kc_free(&kc);
    store_close(&vstore);
    return INCA_OK;
fail:
    kc_free(&kc);
    store_close(&vstore);
    partition_free(&part);
    if (mf) fclose(mf);
    train_result_free(r);
    return rc;
}
