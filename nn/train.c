/* The full-batch trainer, the method dispatcher with --runs statistics, and the helpers shared
 * by every trainer (feature preprocessing, weight-decay policy, evaluation, best epoch, metrics
 * lines). Tested in tests/test_train.c (small graphs: learning, determinism, runs, overrides,
 * errors) and tests/test_e2e_train.c (the CLI on the bundled Cora). */
#include "nn/train.h"
#include "nn/optim.h"
#include "nn/checkpoint.h"
#include "nn/train_dist.h"
#include "nn/train_mb.h"
#include "nn/layout.h"
#include "loaders/partition_store.h"
#include "kernels/kernels.h"
#include "kernels/backend.h"
#include "core/alloc.h"
#include "core/comm.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/status.h"
#include "core/rng.h"
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
    snprintf(c->model, sizeof c->model, "gcn");
    snprintf(c->method, sizeof c->method, "full");
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
    snprintf(c->history_dtype, sizeof c->history_dtype, "fp32");
    c->refresh_source = TRAIN_REFRESH_SOURCE_DEFAULT;
    c->refresh_relax = TRAIN_REFRESH_RELAX_DEFAULT;
    c->beta1 = -1;
    c->eval_average = -1;
}

double train_beta1_auto(const train_config_t *c) {
    /* Histories (gas, incagg) feed the step rows of other nodes computed with older weights: a
     * delay of up to an epoch in the loop from a weight change back to the step's input. Delay
     * acts as momentum of its own (Mitliagkas et al. 2016, "Asynchrony begets momentum"), and
     * with Adam's usual 0.9 on top the loop oscillates on graphs whose batches keep few of
     * their edges (issue 33: a csbm with 70% of the edges leaving the batch swings between
     * chance and 40%). Without momentum it trains like full-batch. One batch of every part reads
     * no history row: no delay, the usual 0.9 (and the same bits as full-batch's optimiser). */
    const int hist = strcmp(c->method, "gas") == 0 || strcmp(c->method, "incagg") == 0;
    return hist && c->batch_parts < c->parts ? TRAIN_BETA1_HISTORY : 0.9;
}

double train_beta1(const train_config_t *c) { return c->beta1 >= 0 ? c->beta1 : train_beta1_auto(c); }

double train_eval_average_auto(const train_config_t *c) {
    const int mb = strcmp(c->method, "cluster") == 0 || strcmp(c->method, "gas") == 0 || strcmp(c->method, "incagg") == 0;
    return mb && c->parts > 0 && c->batch_parts < c->parts ? 1.0 - (double)c->batch_parts / (double)c->parts : 0.0;
}

double train_eval_average(const train_config_t *c) {
    return c->eval_average >= 0 ? c->eval_average : train_eval_average_auto(c);
}

void train_result_free(train_result_t *r) {
    if (!r) return;
    inca_free(r->run_test_acc);
    inca_free(r->run_val_acc);
    inca_free(r->run_best_epoch);
    inca_free(r->params);
    memset(r, 0, sizeof *r);
}

const char *train_refresh_eval_name(const train_config_t *c) {
    /* an evaluation of averaged weights cannot be the refresh's pass: that needs the weights */
    return c->refresh_source == AGG_SRC_RECOMPUTE && !c->refresh_eval_separate && train_eval_average(c) == 0 ? "fused"
                                                                                                          : "separate";
}

int train_featnorm_parse(const char *s, int *out) {
    if (s && strcmp(s, "none") == 0) *out = TRAIN_FEATNORM_NONE;
    else if (s && strcmp(s, "row") == 0) *out = TRAIN_FEATNORM_ROW;
    else if (s && strcmp(s, "standard") == 0) *out = TRAIN_FEATNORM_STANDARD;
    else return inca_fail(INCA_EINVAL, "--feature-norm: expected none|row|standard, got '%s'", s ? s : "(null)");
    return INCA_OK;
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

int train_model_config(const dataset_t *d, const train_config_t *c, uint64_t seed, model_config_t *mc) {
    int rc;
    model_config_default(mc);
    if ((rc = model_kind_parse(c->model, &mc->kind))) return rc;
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
        return inca_fail(INCA_EINVAL, "dataset has no node features: cannot train a model");
    if (d->c < 1 || !d->y) return inca_fail(INCA_EINVAL, "dataset has no labels: cannot train a model");
    if (mc->kind != NN_MLP && (!dataset_has_graph(d) || d->adj.n_rows != d->n))
        return inca_fail(INCA_EINVAL, "--model %s needs a graph and this dataset has none (use --model mlp)", c->model);
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

int train_metric_parse(const char *s, int *metric) {
    static const char *const names[] = {"acc", "balanced_acc", "macro_f1"};
    for (int i = 0; i < 3; i++)
        if (s && strcmp(s, names[i]) == 0) { *metric = i; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--metric: expected acc|balanced_acc|macro_f1, got '%s'", s ? s : "(null)");
}

const char *train_metric_name(int metric) {
    return metric == TRAIN_METRIC_BACC ? "balanced_acc" : metric == TRAIN_METRIC_F1 ? "macro_f1" : "acc";
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
    else {   /* no validation split: the last epoch counts */
        best->epoch = e->epoch;
        best->val_acc = best->val_sel = 0;
        best->val_loss = 0;
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
    train_log(c, TRAIN_LOG_PROGRESS, "[run %d/%d] epoch %d/%d  loss %.4f  val %.4f  test %.4f  best %d  %.3f s/epoch  ETA %s",
              e->run + 1, c->runs > 0 ? c->runs : 1, e->epoch + 1, c->epochs, e->train_loss, e->val_acc, e->test_acc,
              best->epoch + 1, e->epoch_s, eta);
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

/* Mini-batch SGD for models without a graph: the training ids and their labels in this epoch's
 * order (host, reshuffled by every train_mlp_epoch, then uploaded once per epoch), the gathered
 * rows of one batch and every step's loss in the context's memory. */
typedef struct mlp_batch {
    int64_t bs, f, steps;
    int64_t *order;   /* n_train training ids, reshuffled each epoch (host) */
    int64_t *order_d; /* the same on the context */
    int32_t *yo;      /* their labels (host) */
    int32_t *yo_d;    /* the same on the context */
    int64_t *rows;    /* 0..bs-1: the loss rows of a batch (context) */
    float *xb;        /* bs x f (context) */
    double *losses_d; /* steps: each step's loss (context), read back at the epoch's end */
    double *losses_h;
    int64_t *rows_h;  /* the same on the host (the step hook's rows) */
} mlp_batch_t;

static int mlp_batch_init(kern_ctx_t *kc, mlp_batch_t *b, int64_t bs, int64_t f, int64_t n_train) {
    b->bs = bs;
    b->f = f;
    b->steps = (n_train + bs - 1) / bs;
    b->order = inca_malloc((size_t)n_train * sizeof *b->order);
    b->yo = inca_malloc((size_t)n_train * sizeof *b->yo);
    b->losses_h = inca_malloc((size_t)b->steps * sizeof *b->losses_h);
    b->rows_h = inca_malloc((size_t)bs * sizeof *b->rows_h);
    int rc = !b->order || !b->yo || !b->losses_h || !b->rows_h ? INCA_ENOMEM : INCA_OK;
    if (!rc) rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)n_train * sizeof(int64_t), (void **)&b->order_d);
    if (!rc) rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)n_train * sizeof(int32_t), (void **)&b->yo_d);
    if (!rc) rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)bs * sizeof(int64_t), (void **)&b->rows);
    if (!rc) rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)(bs * f) * sizeof(float), (void **)&b->xb);
    if (!rc) rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)b->steps * sizeof(double), (void **)&b->losses_d);
    if (!rc) {
        for (int64_t i = 0; i < bs; i++) b->rows_h[i] = i;
        rc = kc_copy(kc, b->rows, b->rows_h, (size_t)bs * sizeof *b->rows_h, KERN_H2D, KERN_STREAM_COMPUTE);
    }
    return rc;
}

static void mlp_batch_free(kern_ctx_t *kc, mlp_batch_t *b) {
    inca_free(b->order);
    inca_free(b->yo);
    inca_free(b->losses_h);
    inca_free(b->rows_h);
    kc_release(kc, KERN_MEM_DEVICE, b->order_d);
    kc_release(kc, KERN_MEM_DEVICE, b->yo_d);
    kc_release(kc, KERN_MEM_DEVICE, b->rows);
    kc_release(kc, KERN_MEM_DEVICE, b->xb);
    kc_release(kc, KERN_MEM_DEVICE, b->losses_d);
    memset(b, 0, sizeof *b);
}

/* The step hook (c->on_step), when set: logits (rows_total x cc on the context) read to the host
 * first off the CPU (lhost holds rows_total x cc). */
static int step_hook(kern_ctx_t *kc, const train_config_t *c, int run, int ep, const int64_t *nodes, const int64_t *rows,
                     int64_t m, const float *logits, int64_t rows_total, int64_t cc, float *lhost) {
    if (!c->on_step) return INCA_OK;
    const float *lh = logits;
    if (kc_device(kc) != KERN_DEV_CPU) {
        int rc = kc_copy(kc, lhost, logits, (size_t)(rows_total * cc) * sizeof(float), KERN_D2H, KERN_STREAM_COMPUTE);
        if (rc) return rc;
        lh = lhost;
    }
    return c->on_step(c->on_step_ctx, run, ep, nodes, rows, m, lh, (int32_t)cc);
}

/* One epoch of mini-batch steps over the training rows in a fresh seeded order (the order of
 * epoch ep depends on the seed and ep only, so runs are reproducible). The last batch may be
 * smaller. *loss and *acc: means over the epoch's training rows. Dropout masks are drawn per
 * step (step number = ep * steps_per_epoch + s). x (n x f) in context memory. */
static int train_mlp_epoch(model_t *m, optim_t *o, const train_config_t *c, const float *x, int64_t f, int64_t cc,
                           const int32_t *y, const int64_t *train_idx, int64_t n_train, int run, int ep, mlp_batch_t *b,
                           float *dlog, train_meter_t *meter_d, float *lhost, double *loss, double *acc) {
    kern_ctx_t *kc = model_ctx(m);
    rng_t r;
    int rc;
    memcpy(b->order, train_idx, (size_t)n_train * sizeof *b->order);   /* the order is a function of ep alone */
    rng_seed(&r, rng_hash64(c->seed, 0x6d6c7062, (uint64_t)ep));
    rng_shuffle_i64(&r, b->order, n_train);
    for (int64_t i = 0; i < n_train; i++) b->yo[i] = y[b->order[i]];
    if ((rc = kc_copy(kc, b->order_d, b->order, (size_t)n_train * sizeof *b->order, KERN_H2D, KERN_STREAM_COMPUTE)) ||
        (rc = kc_copy(kc, b->yo_d, b->yo, (size_t)n_train * sizeof *b->yo, KERN_H2D, KERN_STREAM_COMPUTE)) ||
        (rc = kc_zero(kc, meter_d->count[0], sizeof meter_d->count[0], KERN_STREAM_COMPUTE)))
        return rc;
    /* each step's loss stays on the context; on the CPU it is checked at once (the step that went
     * non-finite stops the run before its update), off it once at the epoch's end */
    const int host = kc_device(kc) == KERN_DEV_CPU;
    double lsum = 0;
    train_meter_t h;
    for (int64_t s = 0; s < b->steps; s++) {
        const int64_t lo = s * b->bs, nb = (lo + b->bs <= n_train ? b->bs : n_train - lo);
        const float *logits;
        if ((rc = kc_gather_rows(kc, KERN_F32, x, f, b->order_d + lo, 0, nb, b->xb)) ||
            (rc = model_forward(m, nb, b->xb, NULL, 1, c->seed, (uint64_t)ep * (uint64_t)b->steps + (uint64_t)s, &logits)) ||
            (rc = kc_softmax_xent(kc, nb, cc, logits, b->yo_d + lo, b->rows, nb, NULL, dlog, &b->losses_d[s])) ||
            (rc = kc_accuracy(kc, cc, logits, b->yo_d + lo, b->rows, nb, meter_d->count[0])))
            return rc;
        if (host && !isfinite(b->losses_d[s]))
            return inca_fail(INCA_ERR, "epoch %d step %lld: training loss is not finite (%g); lower --lr?", ep, (long long)s,
                             b->losses_d[s]);
        if ((rc = step_hook(kc, c, run, ep, b->order + lo, b->rows_h, nb, logits, nb, cc, lhost)) ||
            (rc = model_backward(m, dlog, NULL)) || (rc = optim_step(o)))
            return rc;
    }
    if ((rc = kc_copy(kc, b->losses_h, b->losses_d, (size_t)b->steps * sizeof *b->losses_h, KERN_D2H, KERN_STREAM_COMPUTE)) ||
        (rc = kc_copy(kc, h.count[0], meter_d->count[0], sizeof h.count[0], KERN_D2H, KERN_STREAM_COMPUTE)))
        return rc;
    for (int64_t s = 0; s < b->steps; s++) {   /* the sum over steps in host double, in step order */
        const int64_t lo = s * b->bs, nb = (lo + b->bs <= n_train ? b->bs : n_train - lo);
        if (!isfinite(b->losses_h[s]))
            return inca_fail(INCA_ERR, "epoch %d step %lld: training loss is not finite (%g); lower --lr?", ep, (long long)s,
                             b->losses_h[s]);
        lsum += b->losses_h[s] * (double)nb;
    }
    *loss = lsum / (double)n_train;
    *acc = h.count[0][1] ? (double)h.count[0][0] / (double)n_train : 0.0;
    return INCA_OK;
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
    for (int k = 0; k < 3; k++)
        if (cnt[k] > 0 && ((rc = kc_softmax_xent(kc, n, cc, logits, y_d, ids[k], cnt[k], logp, NULL, &meter_d->loss[k])) ||
                           (rc = kc_accuracy(kc, cc, logits, y_d, ids[k], cnt[k], meter_d->count[k])) ||
                           (cls && k > 0 && (rc = kc_class_counts(kc, cc, logits, y_d, ids[k], cnt[k], meter_d->cls[k])))))
            return rc;
    if ((rc = kc_copy(kc, &h, meter_d, sizeof h, KERN_D2H, KERN_STREAM_COMPUTE))) return rc;
    h.ncls = cls ? cc : 0;
    if (out) *out = h;
    train_eval_apply(&h, tr_d != NULL, nv, e);
    return INCA_OK;
}

void train_eval_apply(const train_meter_t *h, int has_train, int64_t nv, train_epoch_eval_t *e) {
    double acc[3];
    for (int k = 0; k < 3; k++) acc[k] = h->count[k][1] ? (double)h->count[k][0] / (double)h->count[k][1] : 0.0;
    if (has_train) e->train_acc = acc[0];
    e->val_loss = nv > 0 ? h->loss[1] : 0.0;
    e->val_acc = acc[1];
    e->test_acc = acc[2];
    e->val_bacc = e->val_f1 = e->test_bacc = e->test_f1 = NAN;
    if (h->ncls > 0) {
        if (nv > 0) kern_class_metrics(h->ncls, h->cls[1], &e->val_bacc, &e->val_f1);
        kern_class_metrics(h->ncls, h->cls[2], &e->test_bacc, &e->test_f1);
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

void train_result_set(train_result_t *r, const train_best_t *b, int epochs, double loss, double t_step, double t_eval,
                      double t_epoch) {
    train_result_best(r, b);
    r->epochs = epochs;
    r->train_loss = loss;
    r->epoch_time_s = epochs > 0 ? t_epoch / epochs : 0;
    r->step_time_s = epochs > 0 ? t_step / epochs : 0;
    r->eval_time_s = epochs > 0 ? t_eval / epochs : 0;
    r->refresh_time_s = 0;
    r->evals = epochs;   /* full-batch evaluates after every epoch */
    r->refreshes = r->fused = 0;
    r->runs = 1;
}

int train_full(const dataset_t *d, const train_config_t *c, const int64_t *train_idx, int64_t n_train, int run,
               train_result_t *r) {
    model_config_t mc;
    csr_t a = {0}, at = {0}, xs = {0};
    model_t *m = NULL;
    optim_t *o = NULL;
    mlp_batch_t mb = {0};
    kern_ctx_t *kc = c->kc ? c->kc : kc_cpu();
    kern_mat_t *am = NULL, *atm = NULL;
    float *xw = NULL, *dlog = NULL, *logp = NULL, *xd = NULL, *lhost = NULL;
    int32_t *y_d = NULL;
    int64_t *trn_d = NULL, *vidx_d = NULL, *tidx_d = NULL;
    train_meter_t *meter_d = NULL;
    const float *x = d->x;
    int rc;
    const int64_t n = d->n, cc = d->c;
    const int64_t *vidx = d->split[SPLIT_VALID], *tidx = d->split[SPLIT_TEST];
    const int64_t nv = d->split_n[SPLIT_VALID], nt = d->split_n[SPLIT_TEST];
    memset(r, 0, sizeof *r);
    if ((rc = train_model_config(d, c, c->seed, &mc))) return rc;
    mc.transform_first = 1;   /* the full-graph operator is linear */
    if (c->epochs < 1) return inca_fail(INCA_EINVAL, "--epochs: expected >= 1, got %d", c->epochs);
    if (n_train < 1 || !train_idx) return inca_fail(INCA_EINVAL, "no training nodes (empty train split)");
    const int norm = nn_kind_norm(mc.kind);
    if (c->batch_size < 0) return inca_fail(INCA_EINVAL, "--batch-size: expected >= 0, got %lld", (long long)c->batch_size);
    if (c->batch_size > 0 && norm != NN_NORM_NONE)   /* checked before anything is allocated */
        return inca_fail(INCA_EINVAL, "--batch-size: mini-batches of rows need a model without a graph (mlp), got %s",
                         c->model);
    nn_agg_dev_t full;
    nn_agg_t agg;
    if (norm != NN_NORM_NONE) {
        if ((rc = nn_adj_build(&d->adj, norm, &a, &at))) goto done;
        if ((rc = kc_mat_upload(kc, &a, &am)) || (at.rowptr && (rc = kc_mat_upload(kc, &at, &atm)))) goto done;
        nn_agg_dev_init(&agg, &full, kc, am, atm);
    }
    if (c->feature_norm != TRAIN_FEATNORM_NONE) {
        if (!(xw = inca_malloc((size_t)(n * d->f) * sizeof(float)))) { rc = INCA_ENOMEM; goto done; }
        train_features_prepare(c->feature_norm, n, d->f, d->x, xw);
        x = xw;
    }
    if ((rc = model_create_on(&mc, n, kc, &m))) goto done;
    if (!c->dense_input && c->batch_size == 0) {   /* bag-of-words features: first layer by SpMM */
        if ((rc = train_features_csr(n, d->f, x, 0.25, &xs)) < 0) goto done;
        if (rc == 1 && model_set_sparse_input(m, &xs) != INCA_OK) {
            inca_err_clear();   /* this first layer needs dense input: stay dense */
            csr_free(&xs);
        } else if (rc == 1) {   /* the dense copy is no longer read */
            INCA_FREE(xw);
            x = NULL;
        }
        rc = INCA_OK;
    }
    /* what the ops read, on the context (the host arrays themselves on the CPU) */
    if ((x && (rc = kc_mirror(kc, x, (size_t)(n * d->f) * sizeof(float), (void **)&xd))) ||
        (rc = kc_mirror(kc, d->y, (size_t)n * sizeof(int32_t), (void **)&y_d)) ||
        (rc = kc_mirror(kc, train_idx, (size_t)n_train * sizeof(int64_t), (void **)&trn_d)) ||
        (nv > 0 && (rc = kc_mirror(kc, vidx, (size_t)nv * sizeof(int64_t), (void **)&vidx_d))) ||
        (nt > 0 && (rc = kc_mirror(kc, tidx, (size_t)nt * sizeof(int64_t), (void **)&tidx_d))) ||
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof *meter_d, (void **)&meter_d)) ||
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)(n * cc) * sizeof(float), (void **)&dlog)) ||
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)(n * cc) * sizeof(float), (void **)&logp)))
        goto done;
    if ((rc = train_optim_build(c, m, &o))) goto done;
    if (c->batch_size > 0 &&
        (rc = mlp_batch_init(kc, &mb, c->batch_size < n_train ? c->batch_size : n_train, d->f, n_train)))
        goto done;
    /* logits on the host for the hooks (pruning's on_epoch, out_logits); on the CPU they are
     * the model's own */
    const int want_logits = c->on_epoch || c->out_logits || c->on_step;
    if (want_logits && kc_device(kc) != KERN_DEV_CPU &&
        !(lhost = inca_malloc((size_t)(n * cc) * sizeof(float)))) { rc = INCA_ENOMEM; goto done; }

    train_best_t best;
    train_best_init(&best);
    best.by_loss = c->select_loss;
    best.metric = c->metric;
    double t_step = 0, t_eval = 0, t_epoch = 0, loss = 0;
    int ep, ep0 = 0, finished = 0;
    ckpt_state_t cs;
    if (c->checkpoint_dir && c->resume) {
        if ((rc = ckpt_load(c->checkpoint_dir, run, c, d, m, o, &cs, NULL, 0)) < 0) goto done;
        if (rc == INCA_OK) {   /* continue after the last completed epoch (a larger --epochs extends the run) */
            best = cs.best;
            loss = cs.train_loss;
            t_step = cs.t_step;
            t_eval = cs.t_eval;
            t_epoch = cs.t_epoch;
            ep0 = cs.epoch + 1;
            finished = cs.finished;
        }
        rc = INCA_OK;
    }
    for (ep = ep0; ep < c->epochs && !finished; ep++) {
        const double t0 = inca_now();
        const float *logits;
        double train_acc = 0;
        if (c->batch_size > 0) {
            if ((rc = train_mlp_epoch(m, o, c, xd, d->f, cc, d->y, train_idx, n_train, run, ep, &mb, dlog, meter_d, lhost,
                                      &loss, &train_acc)))
                goto done;
        } else {
            train_meter_t h;
            if ((rc = model_forward(m, n, xd, norm ? &agg : NULL, 1, c->seed, (uint64_t)ep, &logits)) ||
                (rc = kc_zero(kc, meter_d->count[0], sizeof meter_d->count[0], KERN_STREAM_COMPUTE)) ||
                (rc = kc_softmax_xent(kc, n, cc, logits, y_d, trn_d, n_train, NULL, dlog, &meter_d->loss[0])) ||
                (rc = kc_accuracy(kc, cc, logits, y_d, trn_d, n_train, meter_d->count[0])) ||
                (rc = kc_copy(kc, &h, meter_d, sizeof h, KERN_D2H, KERN_STREAM_COMPUTE)))
                goto done;
            if (c->on_step && isfinite(h.loss[0]) &&
                (rc = step_hook(kc, c, run, ep, train_idx, train_idx, n_train, logits, n, cc, lhost)))
                goto done;
            loss = h.loss[0];
            if (!isfinite(loss)) {
                rc = inca_fail(INCA_ERR, "epoch %d: training loss is not finite (%g); lower --lr?", ep, loss);
                goto done;
            }
            train_acc = h.count[0][1] ? (double)h.count[0][0] / (double)h.count[0][1] : 0.0;
            if ((rc = model_backward(m, dlog, norm ? &agg : NULL)) || (rc = optim_step(o))) goto done;
        }
        if (kc_device(kc) != KERN_DEV_CPU && (rc = kc_sync(kc))) goto done;   /* the step's time is its execution */
        const double t1 = inca_now();
        if ((rc = model_forward(m, n, xd, norm ? &agg : NULL, 0, c->seed, (uint64_t)ep, &logits))) goto done;
        train_epoch_eval_t e = {.run = run, .epoch = ep, .train_loss = loss, .train_acc = train_acc, .n_valid = nv};
        if ((rc = train_eval_dev(kc, logits, n, cc, y_d, NULL, 0, vidx_d, nv, tidx_d, nt, logp, meter_d, &e))) goto done;
        const double t2 = inca_now();
        e.epoch_s = t2 - t0;
        t_step += t1 - t0;
        t_eval += t2 - t1;
        t_epoch += t2 - t0;
        const float *lh = logits;
        if (want_logits && lhost) {
            if ((rc = kc_copy(kc, lhost, logits, (size_t)(n * cc) * sizeof(float), KERN_D2H, KERN_STREAM_COMPUTE)))
                goto done;
            lh = lhost;
        }
        if ((rc = train_epoch_end(c, &e, lh, n, (int32_t)cc, &best))) goto done;
        const int stop = c->patience > 0 && best.since >= c->patience;
        if (c->checkpoint_dir) {
            cs = (ckpt_state_t){.epoch = ep, .finished = stop, .best = best, .train_loss = loss,
                                .t_step = t_step, .t_eval = t_eval, .t_epoch = t_epoch};
            if ((rc = ckpt_save(c->checkpoint_dir, run, c, d, m, o, &cs, NULL, 0))) goto done;
        }
        if (stop) { ep++; break; }
    }
    train_result_set(r, &best, ep, loss, t_step, t_eval, t_epoch);
    for (int i = 0; i < model_nparams(m); i++) r->nparams += model_param(m, i)->n;
    r->steps_per_epoch = c->batch_size > 0 ? mb.steps : 1;
    r->step_time_s /= (double)r->steps_per_epoch;   /* per optimiser step, as the mini-batch methods report it */
    rc = c->keep_params ? train_keep_params(kc, m, r) : INCA_OK;
done:
    r->peak_rss_mb = inca_peak_rss_mb();
    kc_release(kc, KERN_MEM_DEVICE, dlog);
    kc_release(kc, KERN_MEM_DEVICE, logp);
    kc_release(kc, KERN_MEM_DEVICE, meter_d);
    kc_mirror_free(kc, x, xd);
    kc_mirror_free(kc, d->y, y_d);
    kc_mirror_free(kc, train_idx, trn_d);
    kc_mirror_free(kc, vidx, vidx_d);
    kc_mirror_free(kc, tidx, tidx_d);
    inca_free(lhost);
    inca_free(xw);
    mlp_batch_free(kc, &mb);
    optim_free(&o);
    model_free(&m);
    kc_mat_free(kc, &am);
    kc_mat_free(kc, &atm);
    csr_free(&a);
    csr_free(&at);
    csr_free(&xs);
    return rc;
}

static double mean_of(const double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return n ? s / n : 0;
}
static double std_of(const double *v, int n) {
    if (n < 2) return 0;
    const double mu = mean_of(v, n);
    double s = 0;
    for (int i = 0; i < n; i++) s += (v[i] - mu) * (v[i] - mu);
    return sqrt(s / (n - 1));
}

int train_mb_flags_parse(const char *refresh_source, const char *cluster_norm, const char *history_location,
                         const char *refresh_eval, train_config_t *c) {
    int rc;
    if (refresh_eval) {
        if (strcmp(refresh_eval, "fused") == 0) c->refresh_eval_separate = 0;
        else if (strcmp(refresh_eval, "separate") == 0) c->refresh_eval_separate = 1;
        else return inca_fail(INCA_EINVAL, "--refresh-eval: expected fused or separate, got '%s'", refresh_eval);
    }
    if (history_location) {
        if (strcmp(history_location, "device") == 0) c->history_host = 0;
        else if (strcmp(history_location, "host") == 0) c->history_host = 1;
        else return inca_fail(INCA_EINVAL, "--history-location: expected device or host, got '%s'", history_location);
    }
    if (refresh_source && (rc = agg_source_parse(refresh_source, &c->refresh_source))) return rc;
    if (cluster_norm) {
        if (strcmp(cluster_norm, "batch") == 0) c->cluster_global_norm = 0;
        else if (strcmp(cluster_norm, "global") == 0) c->cluster_global_norm = 1;
        else return inca_fail(INCA_EINVAL, "--cluster-norm: expected batch or global, got '%s'", cluster_norm);
    }
    return INCA_OK;
}

int train_partition(const dataset_t *d, const train_config_t *c, partition_t *p, int *reused) {
    /* METIS with seed 0, fixed across runs as in GAS; c->partition = "random..." selects the
     * random fallback */
    const int pm = strncmp(c->partition, "random", 6) == 0 ? PART_RANDOM : PART_METIS;
    int64_t k = c->parts > 0 ? c->parts : 40;
    if (k > d->n) k = d->n;
    store_t *s = NULL;
    int rc;
    if (reused) *reused = 0;
    /* reuse (or keep) the partitioning in the store, as `inca partition` does; a store that
     * cannot be opened for writing (a read-only copy) falls back to computing it */
    if (c->store_path && store_open(c->store_path, STORE_RDWR, &s) == INCA_OK) {
        /* a dataset loaded without its graph (the view loader): the store reads it if needed */
        rc = store_partition_get(s, d->adj.rowptr ? &d->adj : NULL, k, pm, 0, p, reused);
        store_close(&s);
    } else if (!d->adj.rowptr) {
        rc = inca_fail(INCA_EINVAL, "the graph was not loaded and the store %s cannot be opened", c->store_path ? c->store_path : "(none)");
    } else {
        inca_err_clear();
        rc = partition_compute(&d->adj, k, pm, 0, p);
    }
    return rc == INCA_OK ? rc : inca_fail_ctx(rc, "--parts %lld", (long long)k);
}

int train_loader_parse(const char *s, int *loader) {
    if (s && strcmp(s, "auto") == 0) *loader = TRAIN_LOADER_AUTO;
    else if (s && strcmp(s, "copy") == 0) *loader = TRAIN_LOADER_COPY;
    else if (s && strcmp(s, "view") == 0) *loader = TRAIN_LOADER_VIEW;
    else return inca_fail(INCA_EINVAL, "--loader: expected copy, view or auto, got '%s'", s ? s : "");
    return INCA_OK;
}

int train_loader_resolve(const train_config_t *c, int64_t n, int64_t f) {
    if (strcmp(c->method, "full") == 0) return TRAIN_LOADER_COPY;
    if (c->loader != TRAIN_LOADER_AUTO) return c->loader;
    if (c->memory_budget > 0) return TRAIN_LOADER_VIEW;
    const double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    return phys > 0 && (double)n * (double)f * 4.0 > TRAIN_VIEW_FRACTION * phys ? TRAIN_LOADER_VIEW : TRAIN_LOADER_COPY;
}

int train_size_parse(const char *s, int64_t *bytes) {
    char *end = NULL;
    errno = 0;
    const double v = s ? strtod(s, &end) : -1;
    double mul = 1;
    if (end && *end) {
        const char u = (char)toupper((unsigned char)*end);
        mul = u == 'K' ? 1024.0 : u == 'M' ? 1048576.0 : u == 'G' ? 1073741824.0 : u == 'T' ? 1099511627776.0 : 0;
        const char *rest = end + 1;
        if (*rest == 'B' || *rest == 'b') rest++;
        if (*rest) mul = 0;
    }
    if (!s || end == s || errno || !(v > 0) || mul == 0 || v * mul > 9.0e18)
        return inca_fail(INCA_EINVAL, "--memory-budget: expected a size such as 1G, 512M or 2000000000, got '%s'", s ? s : "");
    *bytes = (int64_t)(v * mul);
    return INCA_OK;
}

int train_view_open(const dataset_t *d, const train_config_t *c, const partition_t *p, store_t **s,
                    layout_views_t *v) {
    int rc, kind, built = 0;
    hist_dtype_t hd = HIST_F32;
    if (!c->store_path) return inca_fail(INCA_EINVAL, "--loader view: the dataset must come from a store");
    if ((rc = model_kind_parse(c->model, &kind)) || (rc = hist_dtype_parse(c->history_dtype[0] ? c->history_dtype : "fp32", &hd)))
        return rc;
    const int want_m0 = strcmp(c->method, "incagg") == 0 && (kind == NN_GCN || kind == NN_SAGE);
    const int norm = nn_kind_norm(kind);
    rc = store_open(c->store_path, STORE_RDONLY, s);
    if (rc == INCA_OK && (rc = layout_open(*s, p, c->feature_norm, want_m0, norm, hd, v)) == INCA_ENOTFOUND) {
        char why[512];
        snprintf(why, sizeof why, "%s", inca_errmsg());
        inca_err_clear();
        store_close(s);
        if (store_open(c->store_path, STORE_RDWR_MAP, s) != INCA_OK) {
            inca_err_clear();
            return inca_fail(INCA_ENOTFOUND, "%s", why);
        }
        train_log(c, TRAIN_LOG_INFO, "%s: writing the partition-ordered layout of %s (feature norm %s%s), once",
                  c->store_path, p->man.name, layout_featnorm_name(c->feature_norm), want_m0 ? ", M^0" : "");
        rc = layout_ensure(*s, p, d->adj.rowptr ? &d->adj : NULL, c->feature_norm, want_m0, norm, hd, &built);
        if (rc == INCA_OK) rc = layout_open(*s, p, c->feature_norm, want_m0, norm, hd, v);
    }
    if (rc != INCA_OK) store_close(s);
    return rc;
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
                  "+ scratch %lld, loader wait %.3f s of %.3f s of steps", c->method, p->man.name,
                  (long long)p->man.edge_cut, (long long)st.steps_per_epoch, (long long)st.table_bytes,
                  (long long)st.scratch_bytes, st.wait_s, st.step_s_total);
    if (rc == INCA_OK && run == 0 && view)
        train_log(c, TRAIN_LOG_INFO, "--loader view: features%s mapped from the store; %lld table bytes in file-backed maps",
                  view->m0 ? " and M^0" : "", (long long)st.spilled_bytes);
    mb_stats_free(&st);
    return rc;
}

int train_device_open(const train_config_t *c, kern_ctx_t **kc, char *name, size_t cap) {
    kern_ctx_opts_t ko = {.device = c->device, .deterministic = c->deterministic, .tf32 = c->tf32};
    int rc = kc_create(&ko, kc);
    if (rc != INCA_OK) return rc;
    if (kc_fallback(*kc)) train_log(c, TRAIN_LOG_INFO, "--device auto: %s; running on the CPU", kc_fallback(*kc));
    snprintf(name, cap, "%s", kc_name(*kc));
    return INCA_OK;
}

int train_run(const dataset_t *d, const train_config_t *c, const int64_t *train_idx_override, int64_t n_override,
              train_result_t *r) {
    int rc = INCA_OK, kind, mb;
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
    if (strcmp(c->method, "full") == 0) mb = 0;
    else if (strcmp(c->method, "cluster") == 0 || strcmp(c->method, "gas") == 0 || strcmp(c->method, "incagg") == 0)
        mb = 1;
    else return inca_fail(INCA_EINVAL, "--method: expected full|cluster|gas|incagg, got '%s'", c->method);
    if ((rc = model_kind_parse(c->model, &kind))) return rc;
    if (c->resume && !c->checkpoint_dir) return inca_fail(INCA_EINVAL, "--resume: needs --checkpoint DIR");
    if (c->runs < 1) return inca_fail(INCA_EINVAL, "--runs: expected >= 1, got %d", c->runs);
    kern_ctx_t *kc = NULL;
    if (mb && !dataset_has_graph(d)) return inca_fail(INCA_EINVAL, "--method %s needs a graph; this dataset has none", c->method);
    /* full-batch over several ranks (nn/train_dist.h) owns METIS parts too */
    const int dist = !mb && (comm_size(c->comm) > 1 || c->workers > 1);
    const int parted = mb || dist;
    const int64_t *tidx = train_idx_override ? train_idx_override : d->split[SPLIT_TRAIN];
    const int64_t ntr = train_idx_override ? n_override : d->split_n[SPLIT_TRAIN];
    for (int64_t i = 0; i < ntr; i++)
        if (tidx[i] < 0 || tidx[i] >= d->n)
            return inca_fail(INCA_EINVAL, "train index %lld (entry %lld) is outside [0, %lld)", (long long)tidx[i],
                             (long long)i, (long long)d->n);
    if (c->threads > 0) inca_set_threads(c->threads);
    if ((rc = train_device_open(c, &kc, r->device, sizeof r->device))) return rc;
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
    /* auto with the features loaded (a caller that loaded the dataset: prune, tests) stays on the
     * copy path; the CLI resolves auto before loading and loads no features for view */
    if (mb && c->given_views) {
        cc.loader = TRAIN_LOADER_VIEW;
        view = c->given_views;
    } else if (mb && (c->loader == TRAIN_LOADER_VIEW || (c->loader == TRAIN_LOADER_AUTO && !d->x))) {
        cc.loader = TRAIN_LOADER_VIEW;
        if ((rc = train_view_open(d, &cc, &part, &vstore, &views))) goto fail;
        view = &views;
    } else if (!d->x) {
        rc = inca_fail(INCA_EINVAL, "dataset has no node features: cannot train a model");
        goto fail;
    } else cc.loader = TRAIN_LOADER_COPY;
    if (parted && comm_size(c->comm) > 1 && !after0 && !c->given_views && (rc = comm_barrier(c->comm))) goto fail;
    if (c->metrics_path && !c->metrics_fp) {
        if (!(mf = fopen(c->metrics_path, "w"))) {
            rc = inca_fail(INCA_EIO, "--metrics %s: cannot open for writing", c->metrics_path);
            goto fail;
        }
        cc.metrics_fp = mf;
    }
    double te = 0, ts = 0, tr = 0, tv = 0;
    for (int i = 0; i < c->runs; i++) {
        cc.seed = c->seed + (uint64_t)i;
        if ((rc = dist ? train_full_dist(d, &cc, tidx, ntr, i, pp, &one)
                       : train_one(d, &cc, tidx, ntr, i, mb ? pp : NULL, view, &one))) {
            if (c->runs > 1) inca_fail_ctx(rc, "run %d (seed %llu)", i, (unsigned long long)cc.seed);
            goto fail;
        }
        r->run_test_acc[i] = one.test_acc;
        r->run_val_acc[i] = one.val_acc;
        r->test_bacc += one.test_bacc / c->runs;   /* NaN when not measured */
        r->val_bacc += one.val_bacc / c->runs;
        r->test_f1 += one.test_f1 / c->runs;
        r->val_f1 += one.val_f1 / c->runs;
        r->run_best_epoch[i] = one.best_epoch;
        te += one.epoch_time_s;
        ts += one.step_time_s;
        tr += one.refresh_time_s;
        tv += one.eval_time_s;
        r->best_epoch = one.best_epoch;
        r->epochs = one.epochs;
        r->train_loss = one.train_loss;
        r->table_bytes = one.table_bytes;
        r->scratch_bytes = one.scratch_bytes;
        r->history_on_host = one.history_on_host;
        r->spilled_bytes = one.spilled_bytes;
        r->loader_wait_s = one.loader_wait_s;
        r->steps_s = one.steps_s;
        snprintf(r->loader, sizeof r->loader, "%s", one.loader);
        memcpy(r->comm_bytes, one.comm_bytes, sizeof r->comm_bytes);
        memcpy(r->comm_s, one.comm_s, sizeof r->comm_s);
        inca_free(r->params);   /* the last run's */
        r->params = one.params;
        r->nparams = one.nparams;
        r->steps_per_epoch = one.steps_per_epoch;
        r->refreshes = one.refreshes;
        r->evals = one.evals;
        r->fused = one.fused;
        one.params = NULL;
        train_result_free(&one);
    }
    partition_free(&part);
    r->runs = c->runs;
    r->test_acc = mean_of(r->run_test_acc, c->runs);
    r->val_acc = mean_of(r->run_val_acc, c->runs);
    r->test_acc_std = std_of(r->run_test_acc, c->runs);
    r->val_acc_std = std_of(r->run_val_acc, c->runs);
    r->epoch_time_s = te / c->runs;
    r->step_time_s = ts / c->runs;
    r->refresh_time_s = tr / c->runs;
    r->eval_time_s = tv / c->runs;
    r->peak_rss_mb = inca_peak_rss_mb();
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
