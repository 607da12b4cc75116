/* The pieces every trainer shares (full-batch, mini-batch, data-parallel): the configuration's
 * defaults and automatic values, feature preprocessing, the weight-decay policy and optimiser,
 * evaluation on the context, best-epoch tracking, the metrics and progress lines, a run's result
 * figures. Includes none of the trainers. Tested in tests/test_train.c. */
#include "nn/train_common.h"
#include "nn/optim.h"
#include "kernels/kernels.h"
#include "kernels/backend.h"
#include "core/alloc.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/status.h"
#include "core/util.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void train_config_default(train_config_t *c) {
    memset(c, 0, sizeof *c);
    c->model = NN_GCN;
    c->method = TRAIN_FULL;
    c->layers = 2;
    c->hidden = 16;
    c->epochs = 200;
    c->lr = 0.01;
    c->dropout = 0.5;
    c->weight_decay = 5e-4;
    c->wd_conv = -1;
    c->feature_norm = TRAIN_FEATNORM_NONE;
    c->runs = 1;
    c->alpha = 0.1;
    c->theta = 0.5;
    c->K = 10;
    c->device = "cpu";
    c->parts = 40;
    c->batch_parts = 10;
    c->history_dtype = HIST_F32;
    c->pass_dtype = HIST_F32;
    c->refresh_source = TRAIN_REFRESH_SOURCE_DEFAULT;
    c->refresh_relax = TRAIN_REFRESH_RELAX_DEFAULT;
    c->beta1 = -1;
    c->eval_average = -1;
    c->refresh_weights = TRAIN_REFW_AUTO;
    c->eval_every = 1;
    c->memory_baseline = -1;
    c->history_host = TRAIN_HIST_AUTO;
    c->features_host = TRAIN_HIST_AUTO;
}

int train_budget_refusal_code(const train_config_t *c, int rc) {
    return c->device_memory_budget > 0 ? INCA_EINVAL : rc;
}

int train_device_budget_check(const train_config_t *c, kern_ctx_t *kc) {
    if (c->device_memory_budget <= 0 || kc_device(kc) == KERN_DEV_CPU) return INCA_OK;
    kern_mem_stats_t s;
    kc_mem_stats(kc, &s);
    if (s.device_total <= 0 || c->device_memory_budget <= s.device_total) return INCA_OK;   /* 0: unknown */
    const double MB = 1048576.0;
    return inca_fail(INCA_EINVAL, "--device-memory-budget %.1f MB: more than the device has (%.1f MB, %.1f MB of it free); "
                     "give at most that, or leave the flag out to plan for what is free",
                     c->device_memory_budget / MB, s.device_total / MB, s.device_free / MB);
}

int train_device_budget_begin(const train_config_t *c, kern_ctx_t *kc, const char *first_use, train_placement_t *pl) {
    memset(pl, 0, sizeof *pl);
    if (kc_device(kc) == KERN_DEV_CPU) {
        if (c->device_memory_budget > 0 && c->device && strcmp(c->device, "cpu") == 0)
            return inca_fail(INCA_EINVAL, "--device-memory-budget: applies to a device (--device cuda); the CPU "
                             "backend's memory is --memory-budget's");
        return INCA_OK;
    }
    int rc = train_device_budget_check(c, kc);
    if (rc != INCA_OK) return rc;
    kern_mem_stats_t s;
    kc_mem_stats(kc, &s);
    pl->on_device = 1;
    pl->budget = c->device_memory_budget > 0 ? c->device_memory_budget
                 : s.device_free > 0 ? s.device_free + s.now[KERN_MEM_DEVICE] : 0;
    /* the workspaces cuSPARSE's SpMM plans take at their first call, during the steps (the emulated
     * device has none) */
    pl->reserve = pl->budget > 0 && kc_device(kc) == KERN_DEV_CUDA ? ((int64_t)64 << 20) + pl->budget / 100 : 0;
    if (pl->reserve >= pl->budget) pl->reserve = pl->budget / 2;
    kc_mem_limit(kc, pl->budget - pl->reserve);   /* setup leaves the reserve free */
    kc_mem_reset_peak(kc);
    kc_mem_tag(kc, first_use);
    return INCA_OK;
}

void train_device_budget_setup_done(kern_ctx_t *kc, train_placement_t *pl) {
    if (!pl->on_device) return;
    kern_mem_stats_t s;
    kc_mem_stats(kc, &s);
    pl->nuse = 0;
    for (int t = 0; t < s.ntags && pl->nuse < TRAIN_PLACE_MAX; t++)
        if (s.tag_now[t] > 0) {
            pl->use[pl->nuse] = s.tag[t];
            pl->bytes[pl->nuse++] = s.tag_now[t];
        }
    pl->allocs0 = s.allocs;   /* the count is the context's: what setup and earlier runs made is not training's */
    kc_mem_limit(kc, pl->budget);
    kc_mem_tag(kc, "during training");
}

void train_placement_json(json_t *j, const train_placement_t *pl, int mini_batch) {
    const double MB = 1048576.0;
    if (!pl->on_device) {
        json_null(j, "peak_device_mb");
        json_null(j, "device_total_mb");
        return;
    }
    json_num(j, "peak_device_mb", pl->peak / MB);
    if (pl->total > 0) json_num(j, "device_total_mb", pl->total / MB);
    else json_null(j, "device_total_mb");
    if (pl->budget > 0) json_num(j, "device_memory_budget_mb", pl->budget / MB);
    else json_null(j, "device_memory_budget_mb");
    json_obj_begin(j, "placement");
    if (mini_batch) json_str(j, "tables", pl->tables_host ? "host" : "device");
    json_num(j, "reserve_mb", pl->reserve / MB);
    if (pl->ranks > 1) json_int(j, "ranks_sharing_device", pl->ranks);   /* peak summed, device_mb rank 0's */
    json_int(j, "allocations_during_training", pl->train_allocs);
    json_obj_begin(j, "device_mb");   /* what the run held on the device per use when training began */
    for (int i = 0; i < pl->nuse; i++) json_num(j, pl->use[i], pl->bytes[i] / MB);
    json_obj_end(j);
    json_obj_begin(j, "host_mb");
    if (pl->tables_host) json_num(j, "tables", pl->host_table_bytes / MB);
    if (pl->host_feature_bytes > 0) json_num(j, "features", pl->host_feature_bytes / MB);
    json_obj_end(j);
    json_obj_end(j);
    if (!mini_batch) return;
    /* what crosses the bus: a step's batch upload, the table rows it reads and the pushes it
     * writes back (GAS: its halo's history rows; IncAgg: M and S at the batch's own rows) */
    json_num(j, "h2d_bytes_per_step", pl->steps ? (double)pl->step_h2d / (double)pl->steps : 0);
    json_num(j, "d2h_bytes_per_step", pl->steps ? (double)pl->step_d2h / (double)pl->steps : 0);
    json_num(j, "h2d_bytes_per_refresh", pl->refreshes ? (double)pl->refresh_h2d / (double)pl->refreshes : 0);
    json_num(j, "d2h_bytes_per_refresh", pl->refreshes ? (double)pl->refresh_d2h / (double)pl->refreshes : 0);
}

void train_device_budget_end(kern_ctx_t *kc, train_placement_t *pl) {
    if (!pl->on_device) return;
    kern_mem_stats_t s;
    kc_mem_stats(kc, &s);
    pl->peak = s.peak[KERN_MEM_DEVICE];
    pl->total = s.device_total;
    pl->train_allocs = s.allocs - pl->allocs0;
    kc_mem_tag(kc, NULL);
}

int train_eval_due(const train_config_t *c, int ep) {
    return ep == c->epochs - 1 || c->eval_every <= 1 || (ep + 1) % c->eval_every == 0;
}

double train_beta1_auto(const train_config_t *c) {
    /* Histories (gas, incagg) feed the step rows of other nodes computed with older weights: a
     * delay of up to an epoch in the loop from a weight change back to the step's input. Delay
     * acts as momentum of its own (Mitliagkas et al. 2016, "Asynchrony begets momentum"), and
     * with Adam's usual 0.9 on top the loop oscillates on graphs whose batches keep few of
     * their edges (issue 33: a csbm with 70% of the edges leaving the batch swings between
     * chance and 40%). Without momentum it trains like full-batch. One batch of every part reads
     * no history row: no delay, the usual 0.9 (and the same bits as full-batch's optimiser). */
    const int hist = c->method == TRAIN_GAS || c->method == TRAIN_INCAGG;
    return hist && c->batch_parts < c->parts ? TRAIN_BETA1_HISTORY : 0.9;
}

double train_beta1(const train_config_t *c) { return c->beta1 >= 0 ? c->beta1 : train_beta1_auto(c); }

double train_eval_average_auto(const train_config_t *c) {
    const int mb = train_method_agg(c->method) >= 0;
    return mb && c->parts > 0 && c->batch_parts < c->parts ? 1.0 - (double)c->batch_parts / (double)c->parts : 0.0;
}

double train_eval_average(const train_config_t *c) {
    return c->eval_average >= 0 ? c->eval_average : train_eval_average_auto(c);
}

int train_refresh_averaged(const train_config_t *c) {
    return c->method == TRAIN_INCAGG && c->refresh_source == AGG_SRC_RECOMPUTE && c->refresh_weights != TRAIN_REFW_LAST &&
           train_eval_average(c) > 0;
}

void train_result_free(train_result_t *r) {
    if (!r) return;
    inca_free(r->run_test_acc);
    inca_free(r->run_val_acc);
    inca_free(r->run_best_epoch);
    inca_free(r->params);
    memset(r, 0, sizeof *r);
}

const char *train_refresh_weights_name(const train_config_t *c) { return train_refresh_averaged(c) ? "average" : "last"; }

int train_refresh_fused(const train_config_t *c) {
    /* an evaluation of averaged weights is the refresh's pass only when the refresh uses them too */
    const int same_weights = train_eval_average(c) == 0 || train_refresh_averaged(c);
    return c->refresh_source == AGG_SRC_RECOMPUTE && !c->refresh_eval_separate && same_weights;
}

const char *train_refresh_eval_name(const train_config_t *c) { return train_refresh_fused(c) ? "fused" : "separate"; }

/* a chance level p and the margin over it that still counts as near it, never more than a
 * quarter of the way from p to 100%: a perfect model on a 99:1 split stayed under 0.99 + 0.02, and
 * a binary task's 1.5 / 2 took 70% (the Bayes rate of a noisy task) for a model not learning */
static double near_chance_bar(double p, double margin) {
    const double quarter = (1.0 - p) / 4;
    return p + (margin < quarter ? margin : quarter);
}

int train_near_chance(const dataset_t *d, double acc, double *share) {
    *share = dataset_majority_share(d, SPLIT_TEST);
    if (!(acc == acc) || d->c < 2) return 0;
    const double by_share = near_chance_bar(*share, 0.02), by_classes = near_chance_bar(1.0 / d->c, 0.5 / d->c);
    return acc < (by_share > by_classes ? by_share : by_classes);
}

void train_features_prepare(int mode, int64_t n, int64_t f, const float *x, float *x_out) {
    if (x_out != x) memcpy(x_out, x, (size_t)(n * f) * sizeof(float));
    if (mode == TRAIN_FEATNORM_ROW) {
        for (int64_t i = 0; i < n; i++) {
            float *r = x_out + i * f;
            double s = 0;
            for (int64_t k = 0; k < f; k++) s += r[k];
            if (s == 0) continue;
            for (int64_t k = 0; k < f; k++) r[k] = (float)(r[k] / s);
        }
    } else if (mode == TRAIN_FEATNORM_STANDARD && n > 0) {
        for (int64_t k = 0; k < f; k++) {
            double s = 0, s2 = 0;
            for (int64_t i = 0; i < n; i++) s += x_out[i * f + k];
            const double mu = s / (double)n;
            for (int64_t i = 0; i < n; i++) {
                const double d = x_out[i * f + k] - mu;
                s2 += d * d;
            }
            const double sd = sqrt(s2 / (double)n);
            for (int64_t i = 0; i < n; i++)
                x_out[i * f + k] = sd > 0 ? (float)((x_out[i * f + k] - mu) / sd) : 0.0f;
        }
    }
}

int train_features_check(int mode, const float *x, int64_t first, int64_t cnt, int64_t f) {
    if (mode != TRAIN_FEATNORM_ROW || f < 1) return INCA_OK;
    for (int64_t j = 0; j < cnt; j++)
        if (x[j] < 0)
            return inca_fail(INCA_EINVAL, "--feature-norm row: divides each node's features by their sum, which needs "
                             "them >= 0; node %lld has %g in column %lld (use --feature-norm standard or none)",
                             (long long)((first + j) / f), (double)x[j], (long long)((first + j) % f));
    return INCA_OK;
}

int train_features_csr(int64_t n, int64_t f, const float *x, double max_density, csr_t *out) {
    int64_t nnz = 0;
    memset(out, 0, sizeof *out);
    for (int64_t i = 0; i < n * f; i++) nnz += x[i] != 0.0f;
    if ((double)nnz > max_density * (double)n * (double)f) return 0;
    int rc = csr_alloc(out, n, f, nnz, 1);
    if (rc) return rc;
    int64_t e = 0;
    for (int64_t i = 0; i < n; i++) {
        const float *r = x + i * f;
        for (int64_t k = 0; k < f; k++)
            if (r[k] != 0.0f) {
                out->col[e] = (int32_t)k;
                out->val[e++] = r[k];
            }
        out->rowptr[i + 1] = e;
    }
    return 1;
}

int train_fail_no_train_nodes(const train_config_t *c) {
    return inca_fail(INCA_EINVAL, "%s: no training nodes (the train split is empty: a store ingested without splits has "
                     "none): give --split random:TR,VA,TE or --train-indices FILE", c->store_path ? c->store_path : "the dataset");
}

int train_model_config(const dataset_t *d, const train_config_t *c, uint64_t seed, model_config_t *mc) {
    model_config_default(mc);
    if (c->model < 0 || c->model >= NN_KIND_COUNT) return inca_fail(INCA_EINVAL, "model: unknown kind %d", c->model);
    mc->kind = c->model;
    mc->in_dim = d->f;
    mc->out_dim = d->c;
    mc->hidden = c->hidden;
    mc->layers = c->layers;
    mc->dropout = (float)c->dropout;
    mc->alpha = (float)c->alpha;
    mc->theta = (float)c->theta;
    mc->K = c->K;
    mc->batchnorm = c->batchnorm;
    mc->residual = c->residual;
    mc->seed = seed;
    /* the view loader reads the features from the store's layout: d->x is not loaded */
    if (d->f < 1 || (!d->x && c->loader != TRAIN_LOADER_VIEW))
        return inca_fail(INCA_EINVAL, "%s: no node features: cannot train a model (ingest them, e.g. --features FILE)",
                         c->store_path ? c->store_path : "the dataset");
    if (d->c < 1 || !d->y) return inca_fail(INCA_EINVAL, "dataset has no labels: cannot train a model");
    if (mc->kind != NN_MLP && (!dataset_has_graph(d) || d->adj.n_rows != d->n))
        return inca_fail(INCA_EINVAL, "--model %s needs a graph and this dataset has none (use --model mlp)",
                         model_kind_name(c->model));
    return model_config_check(mc);
}

double train_param_wd(const train_config_t *c, const nn_param_t *p) {
    if (p->flags & NN_P_CONV) return c->wd_conv >= 0 ? c->wd_conv : c->weight_decay;
    if (c->wd_first_layer_only) return (p->flags & NN_P_FIRST) ? c->weight_decay : 0.0;
    return c->weight_decay;
}

void train_best_init(train_best_t *b) {
    b->epoch = -1;
    b->val_acc = -1;
    b->val_loss = INFINITY;
    b->test_acc = 0;
    b->since = 0;
    b->by_loss = 0;
    b->metric = TRAIN_METRIC_ACC;
    b->val_sel = -1;
    b->val_bacc = b->val_f1 = b->test_bacc = b->test_f1 = NAN;
}

static int best_better(const train_best_t *b, double sel, double val_loss) {
    return b->epoch < 0 || (b->by_loss ? val_loss < b->val_loss || (val_loss == b->val_loss && sel > b->val_sel)
                                       : sel > b->val_sel || (sel == b->val_sel && val_loss < b->val_loss));
}

int train_best_update(train_best_t *b, int epoch, double val_acc, double val_loss, double test_acc) {
    const int better = best_better(b, val_acc, val_loss);
    if (better) {
        b->epoch = epoch;
        b->val_acc = b->val_sel = val_acc;
        b->val_loss = val_loss;
        b->test_acc = test_acc;
        b->since = 0;
    } else {
        b->since++;
    }
    return better;
}

int train_best_update_e(train_best_t *b, const train_epoch_eval_t *e) {
    const double sel = b->metric == TRAIN_METRIC_BACC ? e->val_bacc : b->metric == TRAIN_METRIC_F1 ? e->val_f1 : e->val_acc;
    const int better = best_better(b, isnan(sel) ? -1 : sel, e->val_loss);
    if (better) {
        b->epoch = e->epoch;
        b->val_sel = isnan(sel) ? -1 : sel;
        b->val_acc = e->val_acc;
        b->val_loss = e->val_loss;
        b->test_acc = e->test_acc;
        b->val_bacc = e->val_bacc;
        b->val_f1 = e->val_f1;
        b->test_bacc = e->test_bacc;
        b->test_f1 = e->test_f1;
        b->since = 0;
    } else {
        b->since++;
    }
    return better;
}

const char *const train_method_words[TRAIN_METHOD_COUNT] = {"full", "cluster", "gas", "incagg"};
const char *const train_featnorm_words[3] = {"none", "row", "standard"};
const char *const train_metric_words[3] = {"acc", "balanced_acc", "macro_f1"};
const char *const train_loader_words[3] = {"auto", "copy", "view"};
const char *const train_grad_reduce_words[3] = {"chain", "allgather", "nccl"};
const char *const train_refresh_eval_words[2] = {"fused", "separate"};
const char *const train_input_layer_words[2] = {"aggregate-first", "transform-first"};
const char *const train_history_location_words[3] = {"device", "host", "auto"};
const char *const train_cluster_norm_words[2] = {"batch", "global"};
const char *const train_refresh_weights_words[3] = {"last", "average", "auto"};

const char *train_method_name(train_method_t m) {
    return m >= 0 && m < TRAIN_METHOD_COUNT ? train_method_words[m] : "?";
}

int train_method_agg(train_method_t m) {
    return m == TRAIN_CLUSTER ? AGG_CLUSTER : m == TRAIN_GAS ? AGG_GAS : m == TRAIN_INCAGG ? AGG_INCAGG : -1;
}

const char *train_model_name(int model) { return model == TRAIN_MODEL_AUTO ? "auto" : model_kind_name(model); }

const char *train_metric_name(int metric) {
    return metric >= 0 && metric < 3 ? train_metric_words[metric] : "acc";
}

int train_metrics_line(FILE *f, const train_epoch_eval_t *e) {
    if (!f) return INCA_OK;
    json_t *j = NULL;
    int rc = json_new(&j);
    if (rc != INCA_OK) return rc;
    json_int(j, "run", e->run);
    json_int(j, "epoch", e->epoch);
    json_num(j, "train_loss", e->train_loss);
    json_num(j, "train_acc", e->train_acc);
    json_num(j, "val_loss", e->val_loss);
    json_num(j, "val_acc", e->val_acc);
    json_num(j, "test_acc", e->test_acc);
    json_num(j, "val_balanced_acc", e->val_bacc);
    json_num(j, "val_macro_f1", e->val_f1);
    json_num(j, "test_balanced_acc", e->test_bacc);
    json_num(j, "test_macro_f1", e->test_f1);
    json_num(j, "epoch_time_s", e->epoch_s);
    rc = json_write(j, f);
    json_free(&j);
    return rc;
}

const char *train_acc_text(char *buf, size_t cap, double acc) {
    if (isnan(acc)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%.4f", acc);
    return buf;
}

void train_log(const train_config_t *c, int level, const char *fmt, ...) {
    if (!c->log) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    c->log(c->log_ctx, level, line);
}

int train_epoch_end(const train_config_t *c, const train_epoch_eval_t *e, const float *logits, int64_t n, int32_t nc,
                    train_best_t *best) {
    int is_best = 1;
    memstat_sample();   /* the epoch's memory, for the peaks of --json */
    if (e->n_valid > 0) is_best = train_best_update_e(best, e);
    else {   /* no validation split: the last epoch counts, with no validation figures */
        best->epoch = e->epoch;
        best->val_sel = 0;
        best->val_acc = best->val_loss = NAN;
        best->test_acc = e->test_acc;
        best->val_bacc = best->val_f1 = NAN;
        best->test_bacc = e->test_bacc;
        best->test_f1 = e->test_f1;
        best->since = 0;
    }
    if (logits && is_best && c->out_logits) memcpy(c->out_logits, logits, (size_t)(n * nc) * sizeof(float));
    int rc = logits && c->on_epoch ? c->on_epoch(c->on_epoch_ctx, e->run, e->epoch, logits, n, nc) : 0;
    if (rc) return rc;
    if ((rc = train_metrics_line(c->metrics_fp, e)))
        return inca_fail_ctx(rc, "--metrics %s", c->metrics_path ? c->metrics_path : "");
    /* the time left at this epoch's pace: the rest of this run and the runs after it */
    const int runs_after = c->runs - e->run - 1 > 0 ? c->runs - e->run - 1 : 0;
    const double left = e->epoch_s * ((double)(c->epochs - e->epoch - 1) + (double)runs_after * c->epochs);
    char eta[32];
    if (left < 60) snprintf(eta, sizeof eta, "%.0fs", left);
    else if (left < 3600) snprintf(eta, sizeof eta, "%dm%02ds", (int)(left / 60), (int)left % 60);
    else snprintf(eta, sizeof eta, "%dh%02dm", (int)(left / 3600), (int)(left / 60) % 60);
    char val[16], test[16];
    train_log(c, TRAIN_LOG_PROGRESS, "[run %d/%d] epoch %d/%d  loss %.4f  val %s  test %s  best %d  %.3f s/epoch  ETA %s",
              e->run + 1, c->runs > 0 ? c->runs : 1, e->epoch + 1, c->epochs, e->train_loss,
              train_acc_text(val, sizeof val, e->val_acc), train_acc_text(test, sizeof test, e->test_acc), best->epoch + 1,
              e->epoch_s, eta);
    return 0;
}

int train_optim_build(const train_config_t *c, model_t *m, optim_t **out) {
    optim_t *o = NULL;
    double wds[16];
    int gids[16], ng = 0, rc;
    if ((rc = optim_new_on(c->adamw ? OPTIM_ADAMW : OPTIM_ADAM, c->lr, train_beta1(c), 0.999, 1e-8, model_ctx(m), &o))) return rc;
    for (int i = 0; i < model_nparams(m); i++) {
        nn_param_t *p = model_param(m, i);
        const double wd = train_param_wd(c, p);
        int g = -1;
        for (int k = 0; k < ng; k++)
            if (wds[k] == wd) g = gids[k];
        if (g < 0) {
            if (ng == 16) { rc = inca_fail(INCA_ERR, "too many weight-decay groups"); goto fail; }
            if ((rc = optim_add_group(o, wd, &g))) goto fail;
            wds[ng] = wd;
            gids[ng++] = g;
        }
        if ((rc = optim_add_param(o, g, p->w, p->g, p->n))) goto fail;
    }
    *out = o;
    return INCA_OK;
fail:
    optim_free(&o);
    return rc;
}


int train_eval_dev(kern_ctx_t *kc, const float *logits, int64_t n, int64_t cc, const int32_t *y_d,
                   const int64_t *tr_d, int64_t ntr, const int64_t *vidx_d, int64_t nv, const int64_t *tidx_d,
                   int64_t nt, float *logp, train_meter_t *meter_d, train_epoch_eval_t *e) {
    return train_eval_meter(kc, logits, n, cc, y_d, tr_d, ntr, vidx_d, nv, tidx_d, nt, logp, meter_d, e, NULL);
}

int train_eval_meter(kern_ctx_t *kc, const float *logits, int64_t n, int64_t cc, const int32_t *y_d,
                     const int64_t *tr_d, int64_t ntr, const int64_t *vidx_d, int64_t nv, const int64_t *tidx_d,
                     int64_t nt, float *logp, train_meter_t *meter_d, train_epoch_eval_t *e, train_meter_t *out) {
    int rc;
    train_meter_t h;
    const int64_t *ids[3] = {tr_d, vidx_d, tidx_d};
    const int64_t cnt[3] = {tr_d ? ntr : 0, nv, nt};
    const int cls = cc <= TRAIN_MAX_CLASSES;   /* per-class counts (balanced accuracy, macro F1) */
    if ((rc = kc_zero(kc, meter_d, sizeof *meter_d, KERN_STREAM_COMPUTE))) return rc;
    for (int k = 0; k < 3; k++) {
        if (cnt[k] == 0) continue;
        if ((rc = kc_softmax_xent(kc, n, cc, logits, y_d, ids[k], cnt[k], logp, NULL, &meter_d->loss[k])) ||
            (rc = kc_accuracy(kc, cc, logits, y_d, ids[k], cnt[k], meter_d->count[k])) ||
            (cls && k > 0 && (rc = kc_class_counts(kc, cc, logits, y_d, ids[k], cnt[k], meter_d->cls[k]))))
            return rc;
        logp = NULL;   /* every row's log-softmax is written once, by the first split's call */
    }
    if ((rc = kc_copy(kc, &h, meter_d, sizeof h, KERN_D2H, KERN_STREAM_COMPUTE))) return rc;
    h.ncls = cls ? cc : 0;
    if (out) *out = h;
    train_eval_apply(&h, tr_d != NULL, nv, e);
    return INCA_OK;
}

void train_eval_apply(const train_meter_t *h, int has_train, int64_t nv, train_epoch_eval_t *e) {
    double acc[3];
    /* a split with no labelled row has no accuracy: NaN, null in JSON (0 would read as a model
     * that gets every node wrong) */
    for (int k = 0; k < 3; k++) acc[k] = h->count[k][1] ? (double)h->count[k][0] / (double)h->count[k][1] : NAN;
    if (has_train) e->train_acc = h->count[0][1] ? acc[0] : 0.0;
    e->val_loss = nv > 0 && h->count[1][1] ? h->loss[1] : NAN;
    e->val_acc = acc[1];
    e->test_acc = acc[2];
    e->val_bacc = e->val_f1 = e->test_bacc = e->test_f1 = NAN;
    if (h->ncls > 0) {
        if (nv > 0 && h->count[1][1]) kern_class_metrics(h->ncls, h->cls[1], &e->val_bacc, &e->val_f1);
        if (h->count[2][1]) kern_class_metrics(h->ncls, h->cls[2], &e->test_bacc, &e->test_f1);
    }
}

void train_meter_sum(train_meter_t *t, const train_meter_t *all, int P) {
    memset(t, 0, sizeof *t);
    t->ncls = P > 0 ? all[0].ncls : 0;
    for (int r = 0; r < P; r++)
        for (int k = 0; k < 3; k++) {
            t->loss[k] += all[r].loss[k] * (double)all[r].count[k][1];
            t->count[k][0] += all[r].count[k][0];
            t->count[k][1] += all[r].count[k][1];
            for (int64_t i = 0; i < 3 * t->ncls; i++) t->cls[k][i] += all[r].cls[k][i];
        }
    for (int k = 0; k < 3; k++) t->loss[k] = t->count[k][1] ? t->loss[k] / (double)t->count[k][1] : 0;
}

int train_keep_params(struct kern_ctx *kc, model_t *m, train_result_t *r) {
    const int np = model_nparams(m);
    int rc = INCA_OK;
    inca_free(r->params);
    r->nparams = 0;
    for (int i = 0; i < np; i++) r->nparams += model_param(m, i)->n;
    if (!(r->params = inca_malloc(sizeof(float) * (size_t)(r->nparams ? r->nparams : 1)))) return INCA_ENOMEM;
    float *o = r->params;
    for (int i = 0; i < np && rc == INCA_OK; i++) {
        const nn_param_t *pp = model_param(m, i);
        rc = kc_copy(kc, o, pp->w, sizeof(float) * (size_t)pp->n, KERN_D2H, KERN_STREAM_COMPUTE);
        o += pp->n;
    }
    return rc;
}

void train_result_best(train_result_t *r, const train_best_t *b) {
    r->test_acc = b->test_acc;
    r->val_acc = b->val_acc;
    r->test_bacc = b->test_bacc;
    r->val_bacc = b->val_bacc;
    r->test_f1 = b->test_f1;
    r->val_f1 = b->val_f1;
    r->best_epoch = b->epoch;
}

void train_result_set(train_result_t *r, const train_best_t *b, int epochs, int64_t evals, double loss, double t_step,
                      double t_eval, double t_epoch) {
    train_result_best(r, b);
    r->epochs = epochs;
    r->train_loss = loss;
    r->epoch_time_s = epochs > 0 ? t_epoch / epochs : 0;
    r->step_time_s = epochs > 0 ? t_step / epochs : 0;
    r->eval_time_s = evals > 0 ? t_eval / (double)evals : 0;   /* one evaluation's */
    r->refresh_time_s = 0;
    r->evals = evals;
    r->refreshes = r->fused = 0;
    r->runs = 1;
}



int train_loader_resolve(const train_config_t *c, int64_t n, int64_t f) {
    if (c->method == TRAIN_FULL) return TRAIN_LOADER_COPY;
    if (c->loader != TRAIN_LOADER_AUTO) return c->loader;
    if (c->memory_budget > 0) return TRAIN_LOADER_VIEW;
    const double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    return phys > 0 && (double)n * (double)f * 4.0 > TRAIN_VIEW_FRACTION * phys ? TRAIN_LOADER_VIEW : TRAIN_LOADER_COPY;
}


/* The lines of a --metrics file (whole lines only: a torn last line is dropped), each with its
 * run and epoch as train_metrics_line writes them (-1 when missing). */
typedef struct { long run, epoch, pos; const char *p; size_t len; } mline_t;

static int mline_cmp(const void *a, const void *b) {
    const mline_t *x = a, *y = b;
    if (x->run != y->run) return x->run < y->run ? -1 : 1;
    if (x->epoch != y->epoch) return x->epoch < y->epoch ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* key's number within [line, end) only (a line without it must not find the next line's) */
static long mline_key(const char *line, const char *end, const char *key) {
    const size_t kl = strlen(key);
    for (const char *k = line; k + kl <= end; k++)
        if (memcmp(k, key, kl) == 0) return strtol(k + kl, NULL, 10);
    return -1;
}

/* Rewrites the open metrics file f keeping every line except run `run`'s from epoch ep0 on
 * (run < 0: every line), sorted by (run, epoch) when `sort`, else in file order. */
static int metrics_rewrite(FILE *f, long run, long ep0, int sort) {
    char *buf = NULL;
    mline_t *ln = NULL;
    long len = 0;
    int rc = INCA_OK;
    if (fflush(f) != 0 || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) rc = INCA_EIO;
    else if (!(buf = inca_malloc((size_t)len + 1)) || !(ln = inca_malloc(sizeof *ln * (size_t)(len + 1)))) rc = INCA_ENOMEM;
    else if (len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len) rc = INCA_EIO;
    if (buf) buf[len] = '\0';   /* strtol stops there at the latest */
    size_t nl = 0;
    for (char *p = buf, *e; rc == INCA_OK && p < buf + len && (e = memchr(p, '\n', (size_t)(buf + len - p))); p = e + 1) {
        const mline_t m = {mline_key(p, e, "\"run\":"), mline_key(p, e, "\"epoch\":"), (long)nl, p, (size_t)(e - p) + 1};
        if (!(m.run == run && m.epoch >= ep0)) ln[nl++] = m;
    }
    if (rc == INCA_OK && sort) qsort(ln, nl, sizeof *ln, mline_cmp);
    if (rc == INCA_OK && ftruncate(fileno(f), 0) != 0) rc = INCA_EIO;
    for (size_t i = 0; rc == INCA_OK && i < nl; i++)   /* "a+": every write goes to the (new) end */
        if (fwrite(ln[i].p, 1, ln[i].len, f) != ln[i].len) rc = INCA_EIO;
    if (rc == INCA_OK && fflush(f) != 0) rc = INCA_EIO;
    inca_free(buf);
    inca_free(ln);
    return rc;
}

int train_resume_note(const train_config_t *c, int run, int ep0) {
    const char *dir = c->checkpoint_dir ? c->checkpoint_dir : "?";
    if (ep0 > 0) train_log(c, TRAIN_LOG_INFO, "run %d: resuming after epoch %d of %d (checkpoint in %s)", run, ep0 - 1, c->epochs, dir);
    else train_log(c, TRAIN_LOG_INFO, "run %d: no checkpoint in %s, training from epoch 0", run, dir);
    const int rc = c->metrics_fp ? metrics_rewrite(c->metrics_fp, run, ep0, 0) : INCA_OK;
    return rc == INCA_EIO ? inca_fail(rc, "--metrics %s: cannot rewrite it for the resumed run", c->metrics_path ? c->metrics_path : "") : rc;
}

int train_metrics_sort(FILE *f, const char *path) {
    const int rc = metrics_rewrite(f, -1, 0, 1);
    return rc == INCA_EIO ? inca_fail(rc, "--metrics %s: cannot rewrite it in run and epoch order", path ? path : "") : rc;
}
