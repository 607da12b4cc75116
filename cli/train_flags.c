/* The flags of `inca train` (shared with `inca predict`, which rebuilds the trained model from
 * them): the known list, their parsing into train_config_t, and the "config" object of the
 * JSON (every resolved flag by name, so --config RESULT.json reruns it). */
#include "cli/train_flags.h"
#include "cli/progress.h"
#include "core/comm.h"
#include "core/status.h"
#include "core/util.h"
#include "nn/layer.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const cli_train_flags[] = {
        "--model", "--method", "--layers", "--hidden", "--epochs", "--lr", "--dropout", "--weight-decay",
        "--wd-conv", "--wd-first-layer!", "--adamw!", "--beta1", "--eval-average", "--feature-norm", "--alpha", "--theta", "--K",
        "--batchnorm!", "--residual!", "--dense-input!", "--batch-size", "--checkpoint", "--resume!", "--parts", "--batch-parts", "--refresh", "--history-dtype", "--pass-dtype", "--refresh-source", "--refresh-relax", "--refresh-eval", "--input-layer", "--refresh-weights", "--cluster-norm",
        "--partition", "--threads", "--device", "--deterministic!", "--tf32!", "--history-location", "--features-location", "--seed", "--metrics", "--runs", "--json!",
        "--train-indices", "--split", "--patience", "--eval-every", "--select", "--loader", "--memory-budget", "--device-memory-budget", "--workers", "--ranks", "--save-params", "--grad-reduce", "--config", "--quiet!", "--metric", NULL};

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

static void train_log_stderr(void *ctx, int level, const char *line) {
    cli_log_state_t *s = ctx;
    if (level == TRAIN_LOG_PROGRESS) {
        if (!s->tty) return;
        fprintf(stderr, "\r%s ", line);
        fflush(stderr);
        s->open = 1;
        cli_progress_line_open(1);   /* Ctrl-C now ends the line (cli/progress.h) */
        return;
    }
    fprintf(stderr, "%s%s\n", s->open ? "\n" : "", line);
    s->open = 0;
    cli_progress_line_open(0);
}

/* The model, its optimiser and its architecture's flags. */
static int train_flags_model(const args_t *a, train_config_t *c) {
    int rc;
    int64_t v;
    int m = TRAIN_FULL;
    if ((rc = args_word(a, "--model", "gcn", model_kind_words, NN_KIND_COUNT, MODEL_KIND_EXPECT, &c->model)) ||
        (rc = args_word(a, "--method", "full", train_method_words, TRAIN_METHOD_COUNT, "full|cluster|gas|incagg", &m)))
        return rc;
    c->method = (train_method_t)m;
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
    const char *b1 = args_str(a, "--beta1", "auto");
    if (strcmp(b1, "auto") != 0) {
        if ((rc = args_double(a, "--beta1", 0.9, &c->beta1))) return rc;
        if (!(c->beta1 >= 0 && c->beta1 < 1)) return inca_fail(INCA_EINVAL, "--beta1: expected auto or a value in [0,1), got %s", b1);
    }
    const char *ea = args_str(a, "--eval-average", "auto");
    if (strcmp(ea, "auto") != 0) {
        if ((rc = args_double(a, "--eval-average", 0, &c->eval_average))) return rc;
        if (!(c->eval_average >= 0 && c->eval_average < 1))
            return inca_fail(INCA_EINVAL, "--eval-average: expected auto or a decay in [0,1), got %s", ea);
    }
    if ((rc = args_word(a, "--feature-norm", "none", train_featnorm_words, 3, "none|row|standard", &c->feature_norm))) return rc;
    if ((rc = args_double(a, "--alpha", 0.1, &c->alpha))) return rc;
    if ((rc = args_double(a, "--theta", 0.5, &c->theta))) return rc;
    if ((rc = flag_int(a, "--K", 10, 0, 1000, &v))) return rc;
    c->K = (int)v;
    c->batchnorm = args_has(a, "--batchnorm");
    c->residual = args_has(a, "--residual");
    c->dense_input = args_has(a, "--dense-input");
    return INCA_OK;
}

/* What a run keeps, repeats, selects and runs on. */
static int train_flags_run(const args_t *a, train_config_t *c) {
    int rc;
    int64_t v;
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
    if ((rc = flag_int(a, "--eval-every", 1, 1, INT32_MAX, &v))) return rc;
    c->eval_every = (int)v;
    const char *sel = args_str(a, "--select", "acc");
    if (strcmp(sel, "acc") != 0 && strcmp(sel, "loss") != 0)
        return inca_fail(INCA_EINVAL, "--select: expected acc|loss, got '%s'", sel);
    c->select_loss = strcmp(sel, "loss") == 0;
    if ((rc = args_word(a, "--metric", "acc", train_metric_words, 3, "acc|balanced_acc|macro_f1", &c->metric))) return rc;
    c->metrics_path = args_str(a, "--metrics", NULL);
    c->device = args_str(a, "--device", "cpu");
    c->deterministic = args_has(a, "--deterministic");
    c->tf32 = args_has(a, "--tf32");
    return INCA_OK;
}

/* The mini-batch parts and history types; --batch-parts fitted to the parts. */
static int train_flags_parts(const args_t *a, train_config_t *c) {
    int rc;
    int64_t v;
    if ((rc = flag_int(a, "--parts", 40, 1, INT32_MAX, &v))) return rc;
    c->parts = (int)v;
    if ((rc = flag_int(a, "--batch-parts", 10, 1, INT32_MAX, &v))) return rc;
    c->batch_parts = (int)v;
    if ((rc = flag_int(a, "--refresh", 0, 0, INT32_MAX, &v))) return rc;
    c->refresh = (int)v;
    int hd = HIST_F32;
    if ((rc = args_word(a, "--history-dtype", "fp32", hist_dtype_words, 2, "fp32|bf16", &hd))) return rc;
    c->history_dtype = (hist_dtype_t)hd;
    if ((rc = args_word(a, "--pass-dtype", "fp32", hist_dtype_words, 2, "fp32|bf16", &hd))) return rc;
    c->pass_dtype = (hist_dtype_t)hd;
    if ((rc = copy_name(c->partition, sizeof c->partition, "--partition", args_str(a, "--partition", "")))) return rc;
    if (c->partition[0]) {   /* a stored name carries its part count: --parts follows it or must agree */
        int64_t pk = c->parts;
        if ((rc = partition_name_parts(c->partition, args_has(a, "--parts"), &pk))) return rc;
        if (pk > INT32_MAX) return inca_fail(INCA_EINVAL, "--partition %s: too many parts", c->partition);
        c->parts = (int)pk;
    }
    /* the default 10, or a config's value (a result written before the clamp below said 10 of 4
     * parts), follows a smaller --parts; a value the user typed is refused */
    if (args_on_command_line(a, "--batch-parts") && c->batch_parts > c->parts)
        return inca_fail(INCA_EINVAL, "--batch-parts %d: more than the %d parts (--parts%s%s); a batch holds at most every part",
                         c->batch_parts, c->parts, c->partition[0] ? ", from --partition " : "", c->partition);
    /* the value used, so that a result's config (predict, --config) does not name 10 of 4 parts */
    if (c->parts > 0 && c->batch_parts > c->parts) c->batch_parts = c->parts;
    return INCA_OK;
}

/* Refresh, placement, loader, workers and memory budgets. */
static int train_flags_memory(const args_t *a, train_config_t *c) {
    int rc;
    int64_t v;
    if ((rc = args_double(a, "--refresh-relax", c->refresh_relax, &c->refresh_relax))) return rc;
    const char *rs = args_str(a, "--refresh-source", NULL);
    if ((rs && (rc = agg_source_parse(rs, &c->refresh_source))) ||
        (rc = args_word(a, "--cluster-norm", NULL, train_cluster_norm_words, 2, "batch or global", &c->cluster_global_norm)) ||
        (rc = args_word(a, "--history-location", NULL, train_history_location_words, 3, "device, host or auto", &c->history_host)) ||
        (rc = args_word(a, "--features-location", NULL, train_history_location_words, 3, "device, host or auto", &c->features_host)) ||
        (rc = args_word(a, "--refresh-eval", NULL, train_refresh_eval_words, 2, "fused or separate", &c->refresh_eval_separate)) ||
        (rc = args_word(a, "--input-layer", NULL, train_input_layer_words, 2, "aggregate-first or transform-first", &c->input_layer)) ||
        (rc = args_word(a, "--refresh-weights", NULL, train_refresh_weights_words, 3, "average, last or auto", &c->refresh_weights)) ||
        (rc = args_word(a, "--loader", "auto", train_loader_words, 3, "copy, view or auto", &c->loader)))
        return rc;
    if ((rc = flag_int(a, "--workers", 1, 1, 64, &v))) return rc;
    c->workers = (int)v;
    if ((rc = args_word(a, "--grad-reduce", "chain", train_grad_reduce_words, 3, "chain, allgather or nccl", &c->grad_reduce)))
        return rc;
    const char *mb = args_str(a, "--memory-budget", NULL);
    if (mb && (rc = args_size_parse("--memory-budget", mb, &c->memory_budget))) return rc;
    const char *dmb = args_str(a, "--device-memory-budget", NULL);
    if (dmb && (rc = args_size_parse("--device-memory-budget", dmb, &c->device_memory_budget))) return rc;
    if (mb && c->loader == TRAIN_LOADER_COPY)
        return inca_fail(INCA_EINVAL, "--memory-budget: needs --loader view (or auto); --loader copy holds the dataset in memory");
    return INCA_OK;
}

int cli_train_config(const args_t *a, train_config_t *c, cli_log_state_t *ls) {
    int rc;
    train_config_default(c);
    if ((rc = train_flags_model(a, c)) || (rc = train_flags_run(a, c)) || (rc = train_flags_parts(a, c)) ||
        (rc = train_flags_memory(a, c)))
        return rc;
    c->log = args_has(a, "--quiet") ? NULL : train_log_stderr;   /* --quiet: no status or progress lines */
    if (c->log && ls->tty) cli_progress_sigint_install();
    c->log_ctx = ls;
    return INCA_OK;
}

/* "config": every resolved training flag (defaults included), keyed by the flag's name, so a
 * result line says exactly what produced it. */
static void config_json(json_t *j, const args_t *a, const train_config_t *c, const char *store) {
    json_obj_begin(j, "config");
    json_str(j, "store", store);
    json_str(j, "model", model_kind_name(c->model));
    json_str(j, "method", train_method_name(c->method));
    json_int(j, "layers", c->layers);
    json_int(j, "hidden", c->hidden);
    json_int(j, "epochs", c->epochs);
    json_num(j, "lr", c->lr);
    json_num(j, "dropout", c->dropout);
    json_num(j, "weight-decay", c->weight_decay);
    json_num(j, "wd-conv", c->wd_conv);
    json_bool(j, "wd-first-layer", c->wd_first_layer_only);
    json_bool(j, "adamw", c->adamw);
    json_num(j, "beta1", train_beta1(c));
    json_num(j, "eval-average", train_eval_average(c));
    json_str(j, "feature-norm", c->feature_norm >= 0 && c->feature_norm < 3 ? train_featnorm_words[c->feature_norm] : "?");
    json_num(j, "alpha", c->alpha);
    json_num(j, "theta", c->theta);
    json_int(j, "K", c->K);
    json_bool(j, "batchnorm", c->batchnorm);
    json_bool(j, "residual", c->residual);
    json_bool(j, "dense-input", c->dense_input);
    json_int(j, "batch-size", c->batch_size);
    json_int_exact(j, "seed", (int64_t)c->seed);   /* a seed past 2^53 reruns exactly (a string) */
    json_int(j, "threads", c->threads);
    json_int(j, "runs", c->runs);
    json_int(j, "patience", c->patience);
    json_int(j, "eval-every", c->eval_every);
    json_str(j, "select", c->select_loss ? "loss" : "acc");
    json_str(j, "metric", train_metric_name(c->metric));
    json_str(j, "device", c->device);
    json_bool(j, "deterministic", c->deterministic);
    json_bool(j, "tf32", c->tf32);
    json_int(j, "parts", c->parts);
    json_int(j, "batch-parts", c->batch_parts);
    json_int(j, "refresh", c->refresh);
    json_str(j, "history-dtype", hist_dtype_words[c->history_dtype]);
    json_str(j, "pass-dtype", hist_dtype_words[c->pass_dtype]);
    json_str(j, "history-location", train_history_location_words[c->history_host >= 0 && c->history_host < 3 ? c->history_host : 2]);
    json_str(j, "features-location", train_history_location_words[c->features_host >= 0 && c->features_host < 3 ? c->features_host : 2]);
    json_str(j, "refresh-source", agg_source_name(c->refresh_source));
    json_num(j, "refresh-relax", c->refresh_relax);
    json_str(j, "refresh-eval", train_refresh_eval_words[c->refresh_eval_separate != 0]);
    json_str(j, "input-layer", train_input_layer_words[c->input_layer != 0]);
    /* resolved, as eval-average is: a rerun with --config refreshes from the same weights */
    json_str(j, "refresh-weights", c->refresh_weights == TRAIN_REFW_AVERAGE || train_refresh_averaged(c) ? "average" : "last");
    json_str(j, "cluster-norm", train_cluster_norm_words[c->cluster_global_norm != 0]);
    json_str(j, "partition", c->partition);
    json_str(j, "loader", c->loader >= 0 && c->loader < 3 ? train_loader_words[c->loader] : "?");
    if (c->memory_budget > 0) json_int(j, "memory-budget", c->memory_budget);
    else json_null(j, "memory-budget");   /* none: a rerun with --config must not set one */
    if (c->device_memory_budget > 0) json_int(j, "device-memory-budget", c->device_memory_budget);
    else json_null(j, "device-memory-budget");
    json_int(j, "workers", c->workers > 1 ? c->workers : 1);
    json_int(j, "ranks", comm_size(c->comm));   /* the job's MPI processes: a rerun starts as many */
    json_str(j, "grad-reduce", train_grad_reduce_words[c->grad_reduce]);
    json_str(j, "split", args_str(a, "--split", "stored"));
    json_str(j, "train-indices", args_str(a, "--train-indices", NULL));
    /* the run's outputs (--metrics, --checkpoint, --resume) are left out, as args_config_json
     * leaves a command's outputs out: a rerun from the result must not overwrite the first
     * run's files (it truncated its metrics and rewrote its checkpoint folder's config) */
    json_obj_end(j);
}


/* the store by its absolute path, as config.json's: a --config rerun may start in another folder */
void cli_train_config_json(json_t *j, const args_t *a, const train_config_t *c) {
    char *abs = args_pos(a, 0) ? realpath(args_pos(a, 0), NULL) : NULL;
    config_json(j, a, c, abs ? abs : args_pos(a, 0));
    free(abs);
}

int cli_train_config_save(const char *dir, const args_t *a, const train_config_t *c, const char *version) {
    char path[4200], tmp[4300];
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        const int e = errno;
        /* a missing or unwritable parent is named as --metrics' and --save-params' are (exit 2) */
        int rc = inca_out_check(dir);
        if (rc == INCA_OK) rc = inca_fail(INCA_EIO, "%s: cannot create the folder: %s", dir, strerror(e));
        return inca_fail_ctx(rc, "--checkpoint");
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    json_t *j = NULL;
    int rc = json_new(&j);
    if (rc) return rc;
    /* the store by its absolute path: predict may run from another folder */
    char *abs = args_pos(a, 0) ? realpath(args_pos(a, 0), NULL) : NULL;
    config_json(j, a, c, abs ? abs : args_pos(a, 0));
    free(abs);
    json_str(j, "version", version);
    FILE *f = fopen(tmp, "w");
    if (!f) rc = inca_fail_write(path, errno);   /* the user's name, not the temporary's */
    else {
        rc = json_write(j, f);
        if (fclose(f) != 0 && rc == INCA_OK) rc = inca_fail(INCA_EIO, "%s: write failed", path);
        if (rc == INCA_OK && rename(tmp, path) != 0) rc = inca_fail(INCA_EIO, "%s: cannot rename into place", path);
        if (rc != INCA_OK) remove(tmp);
    }
    json_free(&j);
    return rc;
}

int cli_train_ranks(const args_t *a, const train_config_t *c, int *relaunch) {
    int64_t p = 0;
    *relaunch = 0;
    int rc = flag_int(a, "--ranks", 0, 0, 4096, &p);
    if (rc) return rc;
    if (args_peek(a, "--ranks") && p < 1) return inca_fail(INCA_EINVAL, "--ranks: expected a positive count, got %lld", (long long)p);
    const int job = comm_size(c->comm), launched = comm_launched();
    const char *from = args_on_command_line(a, "--ranks") ? "" : " (from --config)";
    /* under mpirun the job is what it is: a count it does not match would train otherwise */
    if (p > 0 && launched && p != job)
        return inca_fail(INCA_EINVAL, "--ranks %lld%s, but started as %d ranks (mpirun -np %d): give --ranks %d or start "
                         "it under mpirun -np %lld", (long long)p, from, job, job, job, (long long)p);
    const int P = launched ? job : (int)(p > 0 ? p : 1);
    if (P > 1 && c->workers > 1)   /* workers would be ignored, and the config would claim them */
        return inca_fail(INCA_EINVAL, "--workers %d %s %d: workers are thread ranks inside one process, and this job "
                         "runs %d MPI processes; use either (--workers P in one process, or P MPI ranks)", c->workers,
                         launched ? "under mpirun -np" : "with --ranks", P, P);
    if (!launched && p > 1) *relaunch = (int)p;
    return INCA_OK;
}

/* Where a flag has an effect: a flag the user gave that the run would ignore is refused, since
 * a result line carrying it (the config records every flag) would claim what did not happen.
 * --parts and --batch-parts are not checked: they describe the partitioning, which full-batch
 * ranks own too, and scripts pass them to every method alike. --history-location and
 * --features-location are not checked against the CPU: its memory is both the host's and the
 * "device's", so either word holds there (a script passes them to cpu and cuda alike). Each
 * scope returns 1 when the flag applies, else 0 with what the run has instead in *with
 * ("--method gas"). The view loader's flags are checked again once the store's size resolves
 * --loader auto (cli_train_check_parts). */
typedef struct { char s[96]; } scope_with_t;

static int with_method(const train_config_t *c, int ok, scope_with_t *w) {
    if (!ok) snprintf(w->s, sizeof w->s, "--method %s", train_method_name(c->method));
    return ok;
}
static int with_model(const train_config_t *c, int ok, scope_with_t *w) {
    if (!ok) snprintf(w->s, sizeof w->s, "--model %s", model_kind_name(c->model));
    return ok;
}
static int on_incagg(const train_config_t *c, scope_with_t *w) { return with_method(c, c->method == TRAIN_INCAGG, w); }
/* the refresh's relaxation, weights and evaluation pass: a recompute refresh's (a push refresh
 * re-aggregates the pushed rows as they are) */
static int on_recompute(const train_config_t *c, scope_with_t *w) {
    if (!on_incagg(c, w)) return 0;
    if (c->refresh_source == AGG_SRC_RECOMPUTE) return 1;
    snprintf(w->s, sizeof w->s, "--refresh-source %s", agg_source_name(c->refresh_source));
    return 0;
}
static int on_cluster(const train_config_t *c, scope_with_t *w) { return with_method(c, c->method == TRAIN_CLUSTER, w); }
static int on_history(const train_config_t *c, scope_with_t *w) {
    return with_method(c, c->method == TRAIN_GAS || c->method == TRAIN_INCAGG, w);
}
static int on_batches(const train_config_t *c, scope_with_t *w) { return with_method(c, c->method != TRAIN_FULL, w); }
/* the view loader's passes: not with --loader copy (auto is checked once the store is open) */
static int on_view(const train_config_t *c, scope_with_t *w) {
    if (!on_batches(c, w)) return 0;
    if (c->loader != TRAIN_LOADER_COPY) return 1;
    snprintf(w->s, sizeof w->s, "--loader copy");
    return 0;
}
static int on_full(const train_config_t *c, scope_with_t *w) { return with_method(c, c->method == TRAIN_FULL, w); }
static int on_alpha(const train_config_t *c, scope_with_t *w) {
    return with_model(c, c->model == NN_GCNII || c->model == NN_APPNP, w);
}
static int on_gcnii(const train_config_t *c, scope_with_t *w) { return with_model(c, c->model == NN_GCNII, w); }
static int on_appnp(const train_config_t *c, scope_with_t *w) { return with_model(c, c->model == NN_APPNP, w); }
static int on_layered(const train_config_t *c, scope_with_t *w) { return with_model(c, c->model != NN_APPNP, w); }

typedef struct flag_scope {
    const char *flag;
    int (*applies)(const train_config_t *c, scope_with_t *with);
    const char *where;    /* what the flag applies to, as the message says it */
} flag_scope_t;

static const flag_scope_t flag_scopes[] = {
        {"--refresh", on_incagg, "--method incagg"},
        {"--refresh-source", on_incagg, "--method incagg"},
        {"--refresh-relax", on_recompute, "--method incagg with --refresh-source recompute"},
        {"--refresh-eval", on_recompute, "--method incagg with --refresh-source recompute"},
        {"--refresh-weights", on_recompute, "--method incagg with --refresh-source recompute"},
        {"--cluster-norm", on_cluster, "--method cluster"},
        {"--input-layer", on_batches, "--method cluster or incagg (full-batch always transforms first)"},
        {"--history-dtype", on_history, "the history tables of --method gas or incagg"},
        {"--history-location", on_history, "the history tables of --method gas or incagg"},
        {"--loader", on_batches, "--method cluster, gas or incagg (full-batch holds the dataset in memory)"},
        {"--memory-budget", on_batches, "the view loader of --method cluster, gas or incagg (full-batch holds the dataset in memory)"},
        {"--pass-dtype", on_view, "the view loader's passes of --method cluster, gas or incagg"},
        {"--features-location", on_batches, "the view loader of --method cluster, gas or incagg"},
        {"--eval-average", on_batches, "the mini-batch methods' weight average (full-batch evaluates its weights)"},
        {"--batch-size", on_full, "--method full (an MLP's mini-batches; the other methods batch by --batch-parts)"},
        {"--alpha", on_alpha, "--model gcnii or appnp"},
        {"--theta", on_gcnii, "--model gcnii"},
        {"--K", on_appnp, "--model appnp"},
        {"--layers", on_layered, "every model but appnp (a 2-layer MLP and --K propagation steps)"},
};

/* The graph defaults are GCN-on-Cora's (200 full-batch epochs at lr 0.01, 16 hidden, raw
 * features): on Fashion-MNIST they trained an MLP to 73% (numpy's logistic regression: 84%), on a
 * CSV table with raw-scale columns to the majority class; the table's give 88% and 85%. */
void cli_train_kind_defaults(const args_t *a, train_config_t *c, int graph, char *what, size_t len) {
    static const struct { const char *flag, *word; double num; } t[] = {
            {"--model", "mlp", 0},           {"--hidden", NULL, CLI_TABLE_HIDDEN}, {"--feature-norm", "standard", 0},
            {"--epochs", NULL, CLI_TABLE_EPOCHS}, {"--batch-size", NULL, CLI_TABLE_BATCH}, {"--lr", NULL, CLI_TABLE_LR},
            {"--dropout", NULL, CLI_TABLE_DROPOUT}};
    size_t l = 0;
    what[0] = '\0';
    for (int i = 0; !graph && i < 7; i++) {
        if (args_has(a, t[i].flag)) continue;
        switch (i) {
        case 0: c->model = NN_MLP; break;
        case 1: c->hidden = CLI_TABLE_HIDDEN; break;
        case 2: c->feature_norm = TRAIN_FEATNORM_STANDARD; break;
        case 3: c->epochs = CLI_TABLE_EPOCHS; break;
        case 4: c->batch_size = CLI_TABLE_BATCH; break;
        case 5: c->lr = CLI_TABLE_LR; break;
        default: c->dropout = CLI_TABLE_DROPOUT; break;
        }
        const int w = t[i].word ? snprintf(what + l, len - l, "%s%s %s", l ? " " : "", t[i].flag, t[i].word)
                                : snprintf(what + l, len - l, "%s%s %g", l ? " " : "", t[i].flag, t[i].num);
        if (w > 0 && (size_t)w < len - l) l += (size_t)w;
    }
}

int cli_train_check_effect(const args_t *a, const train_config_t *c) {
    for (size_t i = 0; i < sizeof flag_scopes / sizeof flag_scopes[0]; i++) {
        const flag_scope_t *s = &flag_scopes[i];
        scope_with_t w = {{0}};
        if (!args_on_command_line(a, s->flag) || s->applies(c, &w)) continue;
        return inca_fail(INCA_EINVAL, "%s: no effect with %s (it applies to %s)", s->flag, w.s, s->where);
    }
    return INCA_OK;
}

int cli_train_check_parts(const args_t *a, const train_config_t *c, int64_t nodes, int64_t features) {
    /* the loaders would clamp K to n (or draw batches of empty parts); a request that cannot be
     * met is refused before anything is trained or written to the store */
    if ((args_has(a, "--parts") || c->partition[0]) && c->parts > nodes)
        return inca_fail(INCA_EINVAL, "--parts %d: more parts than the %lld nodes of %s (expected at most one part per node)",
                         c->parts, (long long)nodes, c->store_path ? c->store_path : "the dataset");
    /* --loader auto resolved by the store's size: the copy loader has no passes to narrow */
    if (args_on_command_line(a, "--pass-dtype") && c->method != TRAIN_FULL &&
        train_loader_resolve(c, nodes, features) == TRAIN_LOADER_COPY)
        return inca_fail(INCA_EINVAL, "--pass-dtype: no effect with --loader %s resolved to copy for %s (it applies to the "
                         "view loader's passes; --loader view)", train_loader_words[c->loader],
                         c->store_path ? c->store_path : "the dataset");
    return INCA_OK;
}
