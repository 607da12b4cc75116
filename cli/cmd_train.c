/* inca train STORE --model M --method full|cluster|gas|incagg [...]: load the store, apply the
 * split / train-index overrides, run nn/train.h's train_run and print the result (one JSON
 * object with --json). Exercised end to end in tests/test_e2e_train.c and tests/test_train.c. */
#include "core/args.h"
#include "cli/commands.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/comm.h"
#include "core/util.h"
#include "core/alloc.h"
#include "core/status.h"
#include "loaders/dataset.h"
#include "loaders/store.h"
#include "graph/split.h"
#include "nn/shard.h"
#include "nn/train.h"
#include "nn/model.h"
#include "nn/layer.h"
#include "loaders/npy.h"
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int copy_name(char *dst, size_t cap, const char *flag, const char *v) {
    if (strlen(v) >= cap) return inca_fail(INCA_EINVAL, "%s: value '%s' is too long", flag, v);
    snprintf(dst, cap, "%s", v);
    return INCA_OK;
}

/* Integer flag within [lo, hi]. */
static int flag_int(const args_t *a, const char *name, int64_t def, int64_t lo, int64_t hi, int64_t *out) {
    int rc = args_int(a, name, def, out);
    if (rc) return rc;
    if (*out < lo || *out > hi)
        return inca_fail(INCA_EINVAL, "%s: expected an integer in [%lld, %lld], got %lld", name, (long long)lo,
                         (long long)hi, (long long)*out);
    return INCA_OK;
}

/* Status lines on stderr: progress lines overwrite each other, and only on a terminal. */
typedef struct log_state { int tty, open; } log_state_t;

static void train_log_stderr(void *ctx, int level, const char *line) {
    log_state_t *s = ctx;
    if (level == TRAIN_LOG_PROGRESS) {
        if (!s->tty) return;
        fprintf(stderr, "\r%s ", line);
        s->open = 1;
        return;
    }
    fprintf(stderr, "%s%s\n", s->open ? "\n" : "", line);
    s->open = 0;
}

static int config_from_args(const args_t *a, train_config_t *c, log_state_t *ls) {
    int rc;
    int64_t v;
    train_config_default(c);
    if ((rc = copy_name(c->model, sizeof c->model, "--model", args_str(a, "--model", "gcn")))) return rc;
    if ((rc = copy_name(c->method, sizeof c->method, "--method", args_str(a, "--method", "full")))) return rc;
    if ((rc = flag_int(a, "--layers", 2, 1, 1024, &v))) return rc;
    c->layers = (int)v;
    if ((rc = flag_int(a, "--hidden", 16, 1, 1 << 20, &v))) return rc;
    c->hidden = v;
    if ((rc = flag_int(a, "--epochs", 200, 1, 1 << 24, &v))) return rc;
    c->epochs = (int)v;
    if ((rc = args_double(a, "--lr", 0.01, &c->lr))) return rc;
    if (!(c->lr > 0)) return inca_fail(INCA_EINVAL, "--lr: expected > 0, got %g", c->lr);
    if ((rc = args_double(a, "--dropout", 0.5, &c->dropout))) return rc;
    if (!(c->dropout >= 0 && c->dropout < 1)) return inca_fail(INCA_EINVAL, "--dropout: expected a value in [0,1), got %g", c->dropout);
    if ((rc = args_double(a, "--weight-decay", 5e-4, &c->weight_decay))) return rc;
    if (!(c->weight_decay >= 0)) return inca_fail(INCA_EINVAL, "--weight-decay: expected >= 0, got %g", c->weight_decay);
    if ((rc = args_double(a, "--wd-conv", -1, &c->wd_conv))) return rc;
    c->wd_first_layer_only = args_has(a, "--wd-first-layer");
    c->adamw = args_has(a, "--adamw");
    if ((rc = train_featnorm_parse(args_str(a, "--feature-norm", "none"), &c->feature_norm))) return rc;
    if ((rc = args_double(a, "--alpha", 0.1, &c->alpha))) return rc;
    if ((rc = args_double(a, "--theta", 0.5, &c->theta))) return rc;
    if ((rc = flag_int(a, "--K", 10, 0, 1000, &v))) return rc;
    c->K = (int)v;
    c->batchnorm = args_has(a, "--batchnorm");
    c->residual = args_has(a, "--residual");
    c->dense_input = args_has(a, "--dense-input");
    c->checkpoint_dir = args_str(a, "--checkpoint", NULL);
    c->resume = args_has(a, "--resume");
    if ((rc = flag_int(a, "--batch-size", 0, 0, INT64_MAX, &v))) return rc;
    c->batch_size = v;
    if ((rc = flag_int(a, "--seed", 0, 0, INT64_MAX, &v))) return rc;
    c->seed = (uint64_t)v;
    if ((rc = flag_int(a, "--threads", 0, 0, 4096, &v))) return rc;
    c->threads = (int)v;
    if ((rc = flag_int(a, "--runs", 1, 1, 100000, &v))) return rc;
    c->runs = (int)v;
    if ((rc = flag_int(a, "--patience", 0, 0, INT32_MAX, &v))) return rc;
    c->patience = (int)v;
    const char *sel = args_str(a, "--select", "acc");
    if (strcmp(sel, "acc") != 0 && strcmp(sel, "loss") != 0)
        return inca_fail(INCA_EINVAL, "--select: expected acc|loss, got '%s'", sel);
    c->select_loss = strcmp(sel, "loss") == 0;
    c->metrics_path = args_str(a, "--metrics", NULL);
    c->device = args_str(a, "--device", "cpu");
    c->deterministic = args_has(a, "--deterministic");
    c->tf32 = args_has(a, "--tf32");
    if ((rc = flag_int(a, "--parts", 40, 1, INT32_MAX, &v))) return rc;
    c->parts = (int)v;
    if ((rc = flag_int(a, "--batch-parts", 10, 1, INT32_MAX, &v))) return rc;
    c->batch_parts = (int)v;
    if ((rc = flag_int(a, "--refresh", 0, 0, INT32_MAX, &v))) return rc;
    c->refresh = (int)v;
    const char *hd = args_str(a, "--history-dtype", "fp32");
    if (strcmp(hd, "fp32") != 0 && strcmp(hd, "bf16") != 0)
        return inca_fail(INCA_EINVAL, "--history-dtype: expected fp32|bf16, got '%s'", hd);
    snprintf(c->history_dtype, sizeof c->history_dtype, "%s", hd);
    if ((rc = copy_name(c->partition, sizeof c->partition, "--partition", args_str(a, "--partition", "")))) return rc;
    if ((rc = train_mb_flags_parse(args_str(a, "--refresh-source", NULL), args_str(a, "--cluster-norm", NULL),
                                   args_str(a, "--history-location", NULL), c))) return rc;
    if ((rc = train_loader_parse(args_str(a, "--loader", "auto"), &c->loader))) return rc;
    if ((rc = flag_int(a, "--workers", 1, 1, 64, &v))) return rc;
    c->workers = (int)v;
    const char *gr = args_str(a, "--grad-reduce", "chain");
    if (strcmp(gr, "chain") != 0 && strcmp(gr, "allgather") != 0)
        return inca_fail(INCA_EINVAL, "--grad-reduce: expected chain|allgather, got '%s'", gr);
    c->grad_reduce = strcmp(gr, "allgather") == 0 ? TRAIN_GRAD_ALLGATHER : TRAIN_GRAD_CHAIN;
    const char *mb = args_str(a, "--memory-budget", NULL);
    if (mb && (rc = train_size_parse(mb, &c->memory_budget))) return rc;
    if (mb && c->loader == TRAIN_LOADER_COPY)
        return inca_fail(INCA_EINVAL, "--memory-budget: needs --loader view (or auto); --loader copy holds the dataset in memory");
    c->log = args_has(a, "--quiet") ? NULL : train_log_stderr;   /* --quiet: no status or progress lines */
    c->log_ctx = ls;
    return INCA_OK;
}

/* "config": every resolved training flag (defaults included), keyed by the flag's name, so a
 * result line says exactly what produced it. */
static void config_json(json_t *j, const args_t *a, const train_config_t *c) {
    static const char *const featnorm[] = {"none", "row", "standard"};
    json_obj_begin(j, "config");
    json_str(j, "store", args_pos(a, 0));
    json_str(j, "model", c->model);
    json_str(j, "method", c->method);
    json_int(j, "layers", c->layers);
    json_int(j, "hidden", c->hidden);
    json_int(j, "epochs", c->epochs);
    json_num(j, "lr", c->lr);
    json_num(j, "dropout", c->dropout);
    json_num(j, "weight-decay", c->weight_decay);
    json_num(j, "wd-conv", c->wd_conv);
    json_bool(j, "wd-first-layer", c->wd_first_layer_only);
    json_bool(j, "adamw", c->adamw);
    json_str(j, "feature-norm", c->feature_norm >= 0 && c->feature_norm < 3 ? featnorm[c->feature_norm] : "?");
    json_num(j, "alpha", c->alpha);
    json_num(j, "theta", c->theta);
    json_int(j, "K", c->K);
    json_bool(j, "batchnorm", c->batchnorm);
    json_bool(j, "residual", c->residual);
    json_bool(j, "dense-input", c->dense_input);
    json_int(j, "batch-size", c->batch_size);
    json_int(j, "seed", (int64_t)c->seed);
    json_int(j, "threads", c->threads);
    json_int(j, "runs", c->runs);
    json_int(j, "patience", c->patience);
    json_str(j, "select", c->select_loss ? "loss" : "acc");
    json_str(j, "device", c->device);
    json_bool(j, "deterministic", c->deterministic);
    json_bool(j, "tf32", c->tf32);
    json_int(j, "parts", c->parts);
    json_int(j, "batch-parts", c->batch_parts);
    json_int(j, "refresh", c->refresh);
    json_str(j, "history-dtype", c->history_dtype);
    json_str(j, "history-location", c->history_host ? "host" : "device");
    json_str(j, "refresh-source", agg_source_name(c->refresh_source));
    json_str(j, "cluster-norm", c->cluster_global_norm ? "global" : "batch");
    json_str(j, "partition", c->partition);
    json_str(j, "loader", c->loader == TRAIN_LOADER_VIEW ? "view" : c->loader == TRAIN_LOADER_COPY ? "copy" : "auto");
    if (c->memory_budget > 0) json_int(j, "memory-budget", c->memory_budget);
    else json_null(j, "memory-budget");   /* none: a rerun with --config must not set one */
    json_int(j, "workers", c->workers > 1 ? c->workers : 1);
    json_str(j, "grad-reduce", c->grad_reduce == TRAIN_GRAD_ALLGATHER ? "allgather" : "chain");
    json_str(j, "split", args_str(a, "--split", "stored"));
    json_str(j, "train-indices", args_str(a, "--train-indices", NULL));
    json_str(j, "metrics", c->metrics_path);
    json_str(j, "checkpoint", c->checkpoint_dir);
    json_bool(j, "resume", c->resume);
    json_obj_end(j);
}

int cmd_train(int argc, char **argv) {
    static const char *const known[] = {
        "--model", "--method", "--layers", "--hidden", "--epochs", "--lr", "--dropout", "--weight-decay",
        "--wd-conv", "--wd-first-layer!", "--adamw!", "--feature-norm", "--alpha", "--theta", "--K",
        "--batchnorm!", "--residual!", "--dense-input!", "--batch-size", "--checkpoint", "--resume!", "--parts", "--batch-parts", "--refresh", "--history-dtype", "--refresh-source", "--cluster-norm",
        "--partition", "--threads", "--device", "--deterministic!", "--tf32!", "--history-location", "--seed", "--metrics", "--runs", "--json!",
        "--train-indices", "--split", "--patience", "--select", "--loader", "--memory-budget", "--workers", "--save-params", "--grad-reduce", "--config", "--quiet!", NULL};
    args_t *a = NULL;
    dataset_t d;
    train_config_t c;
    train_result_t r;
    shard_t sh;
    json_t *j = NULL;
    int64_t *ids = NULL, nids = 0;
    dataset_init(&d);
    memset(&r, 0, sizeof r);
    memset(&sh, 0, sizeof sh);
    dataset_init(&sh.d);
    int rc = args_parse(argc, argv, known, &a);
    if (rc) return rc;
    if (args_npos(a) != 1) { rc = inca_fail(INCA_EINVAL, "expected exactly one STORE argument"); goto done; }
    log_state_t ls = {.tty = isatty(STDERR_FILENO)};
    if ((rc = config_from_args(a, &c, &ls))) goto done;
    c.store_path = args_pos(a, 0);
    /* under mpirun every rank trains; rank 0 alone logs, writes files and prints */
    c.comm = cli_comm();
    const int nranks = comm_size(c.comm), me = comm_rank(c.comm);
    if (me != 0) {
        c.log = NULL;
        c.metrics_path = NULL;
    }
    const char *save_params = args_str(a, "--save-params", NULL);
    c.keep_params = save_params != NULL;
    int shard_ranks = 0;
    if (shard_dir_ranks(c.store_path, me, &shard_ranks)) {   /* STORE is a folder of per-rank shards */
        int kind = 0;
        hist_dtype_t hd = HIST_F32;
        if ((rc = shard_open(c.store_path, me, nranks, &sh))) goto done;
        if ((rc = model_kind_parse(c.model, &kind)) || (rc = hist_dtype_parse(c.history_dtype, &hd))) goto done;
        const char *why = c.loader == TRAIN_LOADER_COPY ? "--loader copy (shards are read through the view loader)"
                          : strcmp(c.method, "full") == 0 ? "--method full"
                          : args_str(a, "--split", NULL) ? "--split (a shard holds its rank's share of the stored split)"
                          : args_str(a, "--train-indices", NULL) ? "--train-indices"
                          : c.parts != sh.p.k ? "this --parts"
                          : c.feature_norm != sh.featnorm ? "this --feature-norm"
                          : nn_kind_norm(kind) != sh.norm ? "this --model's adjacency"
                          : strcmp(c.method, "incagg") == 0 && sh.has_m0 && sh.v.m0_dtype != hd ? "this --history-dtype"
                          : NULL;
        if (why) {
            rc = inca_fail(INCA_EINVAL, "%s: the shards were not made for %s; rerun inca shard with the training's "
                           "--parts, --feature-norm, --model and --history-dtype, or train on the store", c.store_path, why);
            goto done;
        }
        d = sh.d;   /* the dataset moves to d */
        dataset_init(&sh.d);
        c.given_partition = &sh.p;
        c.given_views = &sh.v;
        c.given_plan = &sh.plan;
        c.loader = TRAIN_LOADER_VIEW;
        c.store_path = sh.path;
    } else
    {   /* the view loader maps the features and Â from the store: neither is loaded */
        store_t *s = NULL;
        if ((rc = store_open(c.store_path, STORE_RDONLY, &s))) goto done;
        const int view = train_loader_resolve(&c, store_meta(s)->nodes, store_meta(s)->features) == TRAIN_LOADER_VIEW;
        store_close(&s);
        if ((rc = dataset_load_ex(c.store_path, view ? DATASET_NO_X | DATASET_NO_GRAPH : 0, &d))) goto done;
    }
    const char *split = args_str(a, "--split", NULL);
    if (split && strncmp(split, "random:", 7) == 0) {
        double fr[3];
        if ((rc = split_parse(split, fr))) goto done;
        if ((rc = split_random(&d, fr, c.seed))) goto done;
    } else if (split && strcmp(split, "stored") != 0 && strcmp(split, "public") != 0) {
        rc = inca_fail(INCA_EINVAL, "--split: a store holds the one split chosen at ingest; expected 'stored' or "
                                    "random:TR,VA,TE, got '%s'", split);
        goto done;
    }
    const char *ti = args_str(a, "--train-indices", NULL);
    if (ti && (rc = npy_read_indices(ti, &ids, &nids))) goto done;
    rc = train_run(&d, &c, ids, nids, &r);
    if (ls.open) fputc('\n', stderr);   /* end the progress line */
    if (rc) goto done;
    /* every rank's figures to rank 0: bytes sent and seconds in MPI per phase, its times, peak
     * anonymous and resident memory */
    enum { NT = 4, NREC = 2 * COMM_NPHASES + NT + 3 };
    double rec[NREC], *recs = NULL;
    for (int ph = 0; ph < COMM_NPHASES; ph++) {
        rec[ph] = (double)r.comm_bytes[ph];
        rec[COMM_NPHASES + ph] = r.comm_s[ph];
    }
    const double times[NT] = {r.epoch_time_s, r.step_time_s, r.refresh_time_s, r.eval_time_s};
    memcpy(rec + 2 * COMM_NPHASES, times, sizeof times);
    memstat_peaks(&rec[NREC - 3], &rec[NREC - 2]);
    rec[NREC - 1] = inca_peak_rss_mb();
    if (nranks > 1) {
        if (!(recs = inca_malloc(sizeof rec * (size_t)nranks))) { rc = INCA_ENOMEM; goto done; }
        if ((rc = comm_allgather(c.comm, rec, (int64_t)sizeof rec, recs, COMM_SETUP))) { inca_free(recs); goto done; }
    }
    if (me != 0) { inca_free(recs); goto done; }
    if (save_params && (rc = npy_write_f32(save_params, r.params, r.nparams, 1))) { inca_free(recs); goto done; }
    if (args_has(a, "--json")) {
        if ((rc = json_new(&j))) goto done;
        json_num(j, "test_acc", r.test_acc);
        json_num(j, "test_acc_std", r.test_acc_std);
        json_num(j, "val_acc", r.val_acc);
        json_num(j, "val_acc_std", r.val_acc_std);
        json_int(j, "best_epoch", r.best_epoch);
        json_int(j, "epochs", r.epochs);
        json_num(j, "epoch_time_s", r.epoch_time_s);
        json_num(j, "step_time_s", r.step_time_s);
        json_num(j, "refresh_time_s", r.refresh_time_s);
        json_num(j, "eval_time_s", r.eval_time_s);
        json_num(j, "peak_rss_mb", r.peak_rss_mb);
        memstat_json(j);
        json_str(j, "method", c.method);
        if (strcmp(c.method, "incagg") == 0) json_str(j, "refresh_source", agg_source_name(c.refresh_source));
        if (strcmp(c.method, "cluster") == 0) json_str(j, "cluster_norm", c.cluster_global_norm ? "global" : "batch");
        if (strcmp(c.method, "full") != 0) {
            json_int(j, "table_bytes", r.table_bytes);
            json_int(j, "scratch_bytes", r.scratch_bytes);
            json_str(j, "history_location", r.history_on_host ? "host" : "device");
            json_str(j, "loader", r.loader);
            json_int(j, "spilled_bytes", r.spilled_bytes);
            json_num(j, "loader_wait_s", r.loader_wait_s);   /* last run: waiting on the batch loader */
            json_num(j, "loader_wait_fraction", r.steps_s > 0 ? r.loader_wait_s / r.steps_s : 0);
        }
        json_str(j, "model", c.model);
        json_str(j, "device", r.device);
        json_int(j, "runs", r.runs);
        json_int(j, "seed", (int64_t)c.seed);
        json_int(j, "threads", c.threads);
        json_int(j, "train_nodes", ids ? nids : d.split_n[SPLIT_TRAIN]);
        json_int(j, "ranks", nranks);
        json_int(j, "parameters", r.nparams);
        json_int(j, "steps_per_epoch", r.steps_per_epoch);
        if (nranks > 1) {   /* per rank, the last run: its times, bytes sent and seconds in MPI by phase
                               (core/comm.h), peak memory */
            json_arr_begin(j, "rank_stats");
            for (int q = 0; q < nranks; q++) {
                const double *x = recs + (size_t)q * NREC;
                json_obj_begin(j, NULL);
                json_int(j, "rank", q);
                static const char *const tn[NT] = {"epoch_time_s", "step_time_s", "refresh_time_s", "eval_time_s"};
                for (int t = 0; t < NT; t++) json_num(j, tn[t], x[2 * COMM_NPHASES + t]);
                for (int ph = 0; ph < COMM_NPHASES; ph++) {
                    char key[32];
                    snprintf(key, sizeof key, "bytes_%s", comm_phase_name(ph));
                    json_int(j, key, (int64_t)x[ph]);
                    snprintf(key, sizeof key, "mpi_s_%s", comm_phase_name(ph));
                    json_num(j, key, x[COMM_NPHASES + ph]);
                }
                json_num(j, "peak_rss_anon_mb", x[NREC - 3]);
                json_num(j, "peak_rss_file_mb", x[NREC - 2]);
                json_num(j, "peak_rss_mb", x[NREC - 1]);
                json_obj_end(j);
            }
            json_arr_end(j);
        }
        json_arr_begin(j, "run_test_acc");   /* per-run test accuracies */
        for (int i = 0; i < r.runs; i++) json_num(j, NULL, r.run_test_acc[i]);
        json_arr_end(j);
        config_json(j, a, &c);
        json_str(j, "version", cli_version());
        rc = json_write(j, stdout);
    } else {
        if (nranks > 1) printf("%d ranks: ", nranks);
        printf("%s %s on %s: test %.4f", c.model, c.method, args_pos(a, 0), r.test_acc);
        if (r.runs > 1) printf(" ± %.4f (%d runs)", r.test_acc_std, r.runs);
        printf(", val %.4f, best epoch %d of %d, %.4f s/epoch\n", r.val_acc, r.best_epoch, r.epochs, r.epoch_time_s);
    }
    inca_free(recs);
done:
    json_free(&j);
    train_result_free(&r);
    shard_free(&sh);
    inca_free(ids);
    dataset_free(&d);
    args_free(&a);
    return rc;
}
