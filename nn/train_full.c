/* The full-batch trainer (one run of train_full.h's contract), and mini-batch SGD for the MLP
 * on datasets without a graph. Tested in tests/test_train.c and tests/test_e2e_train.c. */
#include "nn/train_full.h"
#include "nn/optim.h"
#include "nn/checkpoint.h"
#include "kernels/kernels.h"
#include "kernels/backend.h"
#include "core/alloc.h"
#include "core/memstat.h"
#include "core/status.h"
#include "core/rng.h"
#include "core/util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Mini-batch SGD for models without a graph: the training ids and their labels in this epoch's
 * order (host, reshuffled by every train_mlp_epoch, then uploaded once per epoch), the gathered
 * rows of one batch and every step's loss in the context's memory. */
typedef struct mlp_batch {
    int64_t bs, f, steps;
    int64_t *ids, n;  /* the labelled training ids (an unlabelled one has no loss to step on) */
    int64_t *order;   /* ids, reshuffled each epoch (host) */
    int64_t *order_d; /* the same on the context */
    int32_t *yo;      /* their labels (host) */
    int32_t *yo_d;    /* the same on the context */
    int64_t *rows;    /* 0..bs-1: the loss rows of a batch (context) */
    float *xb;        /* bs x f (context) */
    double *losses_d; /* steps: each step's loss (context), read back at the epoch's end */
    double *losses_h;
    int64_t *rows_h;  /* the same on the host (the step hook's rows) */
} mlp_batch_t;

static int mlp_batch_init(kern_ctx_t *kc, mlp_batch_t *b, int64_t bs, int64_t f, const int32_t *y, const int64_t *train_idx,
                          int64_t n_train) {
    if (!(b->ids = inca_malloc((size_t)(n_train ? n_train : 1) * sizeof *b->ids))) return INCA_ENOMEM;
    for (int64_t i = 0; i < n_train; i++)
        if (y[train_idx[i]] >= 0) b->ids[b->n++] = train_idx[i];
    if (b->n == 0) return inca_fail(INCA_EINVAL, "none of the %lld training nodes has a label", (long long)n_train);
    const int64_t n = b->n;
    b->bs = bs = bs < n ? bs : n;
    b->f = f;
    b->steps = (n + bs - 1) / bs;
    b->order = inca_malloc((size_t)n * sizeof *b->order);
    b->yo = inca_malloc((size_t)n * sizeof *b->yo);
    b->losses_h = inca_malloc((size_t)b->steps * sizeof *b->losses_h);
    b->rows_h = inca_malloc((size_t)bs * sizeof *b->rows_h);
    int rc = !b->order || !b->yo || !b->losses_h || !b->rows_h ? INCA_ENOMEM : INCA_OK;
    if (!rc) rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)n * sizeof(int64_t), (void **)&b->order_d);
    if (!rc) rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)n * sizeof(int32_t), (void **)&b->yo_d);
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
    inca_free(b->ids);
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

/* One epoch of mini-batch steps over the labelled training rows (b->ids) in a fresh seeded order
 * (the order of epoch ep depends on the seed and ep only, so runs are reproducible). The last
 * batch may be smaller. *loss: the mean over the epoch's training rows. Dropout masks are
 * drawn per step (step number = ep * steps_per_epoch + s). x (n x f) in context memory. */
static int train_mlp_epoch(model_t *m, optim_t *o, const train_config_t *c, const float *x, int64_t f, int64_t cc,
                           const int32_t *y, int run, int ep, mlp_batch_t *b, float *dlog, float *lhost, double *loss) {
    kern_ctx_t *kc = model_ctx(m);
    const int64_t n_train = b->n;
    rng_t r;
    int rc;
    memcpy(b->order, b->ids, (size_t)n_train * sizeof *b->order);   /* the order is a function of ep alone */
    rng_seed(&r, rng_hash64(c->seed, 0x6d6c7062, (uint64_t)ep));
    rng_shuffle_i64(&r, b->order, n_train);
    for (int64_t i = 0; i < n_train; i++) b->yo[i] = y[b->order[i]];
    if ((rc = kc_copy(kc, b->order_d, b->order, (size_t)n_train * sizeof *b->order, KERN_H2D, KERN_STREAM_COMPUTE)) ||
        (rc = kc_copy(kc, b->yo_d, b->yo, (size_t)n_train * sizeof *b->yo, KERN_H2D, KERN_STREAM_COMPUTE)))
        return rc;
    /* each step's loss stays on the context; on the CPU it is checked at once (the step that went
     * non-finite stops the run before its update), off it once at the epoch's end */
    const int host = kc_device(kc) == KERN_DEV_CPU;
    double lsum = 0;
    for (int64_t s = 0; s < b->steps; s++) {
        const int64_t lo = s * b->bs, nb = (lo + b->bs <= n_train ? b->bs : n_train - lo);
        const float *logits;
        if ((rc = kc_gather_rows(kc, KERN_F32, x, f, b->order_d + lo, 0, nb, b->xb)) ||
            (rc = model_forward(m, nb, b->xb, NULL, 1, c->seed, (uint64_t)ep * (uint64_t)b->steps + (uint64_t)s, &logits)) ||
            (rc = kc_softmax_xent(kc, nb, cc, logits, b->yo_d + lo, b->rows, nb, NULL, dlog, &b->losses_d[s])))
            return rc;
        if (host && !isfinite(b->losses_d[s]))
            return inca_fail(INCA_ERR, "epoch %d step %lld: training loss is not finite (%g); lower --lr?", ep, (long long)s,
                             b->losses_d[s]);
        if ((rc = step_hook(kc, c, run, ep, b->order + lo, b->rows_h, nb, logits, nb, cc, lhost)) ||
            (rc = model_backward(m, dlog, NULL)) || (rc = optim_step(o)))
            return rc;
    }
    if ((rc = kc_copy(kc, b->losses_h, b->losses_d, (size_t)b->steps * sizeof *b->losses_h, KERN_D2H, KERN_STREAM_COMPUTE)))
        return rc;
    for (int64_t s = 0; s < b->steps; s++) {   /* the sum over steps in host double, in step order */
        const int64_t lo = s * b->bs, nb = (lo + b->bs <= n_train ? b->bs : n_train - lo);
        if (!isfinite(b->losses_h[s]))
            return inca_fail(INCA_ERR, "epoch %d step %lld: training loss is not finite (%g); lower --lr?", ep, (long long)s,
                             b->losses_h[s]);
        lsum += b->losses_h[s] * (double)nb;
    }
    *loss = lsum / (double)n_train;
    return INCA_OK;
}
/* One full-batch run's resources, made by full_setup and freed by full_free (agg points into
 * the struct itself: it stays where train_full put it). */
typedef struct full_run {
    kern_ctx_t *kc;
    model_config_t mc;
    int norm;                            /* the model's adjacency normalisation (NONE: no graph) */
    csr_t a, at, xs;                     /* Â, its transpose when not symmetric, sparse features */
    kern_mat_t *am, *atm;
    nn_agg_dev_t full;
    nn_agg_t agg;
    model_t *m;
    optim_t *o;
    mlp_batch_t mb;
    const float *x;                      /* the features the model reads (host), NULL when sparse */
    float *xw;                           /* normalised features (owned) */
    float *xd, *dlog, *logp, *lhost;     /* x on the context; logits' gradient, log-softmax; host logits */
    int32_t *y_d;
    int64_t *trn_d, *vidx_d, *tidx_d;
    train_meter_t *meter_d;
    int want_logits;                     /* the hooks read host logits */
    train_placement_t place;             /* --device-memory-budget: what went where */
} full_run_t;

/* The configuration errors, before anything is allocated. */
static int full_check(const train_config_t *c, const int64_t *train_idx, int64_t n_train, int norm) {
    if (c->epochs < 1) return inca_fail(INCA_EINVAL, "--epochs: expected >= 1, got %d", c->epochs);
    if (n_train < 1 || !train_idx) return train_fail_no_train_nodes(c);
    if (c->batch_size < 0) return inca_fail(INCA_EINVAL, "--batch-size: expected >= 0, got %lld", (long long)c->batch_size);
    if (c->batch_size > 0 && norm != NN_NORM_NONE)
        return inca_fail(INCA_EINVAL, "--batch-size: mini-batches of rows need a model without a graph (mlp), got %s",
                         model_kind_name(c->model));
    return INCA_OK;
}

/* The model's input: normalised features when asked, and bag-of-words features as a sparse
 * first layer when the model takes one (the dense copy is then dropped). */
static int full_features(full_run_t *f, const dataset_t *d, const train_config_t *c) {
    int rc;
    const int64_t n = d->n;
    f->x = d->x;
    if (c->feature_norm != TRAIN_FEATNORM_NONE) {
        if (!(f->xw = inca_malloc((size_t)(n * d->f) * sizeof(float)))) return INCA_ENOMEM;
        train_features_prepare(c->feature_norm, n, d->f, d->x, f->xw);
        f->x = f->xw;
    }
    if ((rc = model_create_on(&f->mc, n, f->kc, &f->m))) return rc;
    if (c->dense_input || c->batch_size != 0) return INCA_OK;
    kc_mem_tag(f->kc, "features");   /* sparse: the model's first layer holds them */
    if ((rc = train_features_csr(n, d->f, f->x, 0.25, &f->xs)) < 0) return rc;
    if (rc == 1 && model_set_sparse_input(f->m, &f->xs) != INCA_OK) {
        inca_err_clear();   /* this first layer needs dense input: stay dense */
        csr_free(&f->xs);
    } else if (rc == 1) {   /* the dense copy is no longer read */
        INCA_FREE(f->xw);
        f->x = NULL;
    }
    return INCA_OK;
}

/* Everything a run needs: adjacency on the context, features, model, the arrays the ops read
 * (on the context; the host arrays themselves on the CPU), the optimiser, the MLP's batches. */
static int full_setup(full_run_t *f, const dataset_t *d, const train_config_t *c, const int64_t *train_idx,
                      int64_t n_train) {
    int rc;
    const int64_t n = d->n, cc = d->c, nv = d->split_n[SPLIT_VALID], nt = d->split_n[SPLIT_TEST];
    kern_ctx_t *kc = f->kc;
    if ((rc = train_device_budget_begin(c, kc, "graph", &f->place))) return rc;
    if (f->norm != NN_NORM_NONE) {
        if ((rc = nn_adj_build(&d->adj, f->norm, &f->a, &f->at))) return rc;
        if ((rc = kc_mat_upload(kc, &f->a, &f->am)) || (f->at.rowptr && (rc = kc_mat_upload(kc, &f->at, &f->atm))))
            return rc;
        nn_agg_dev_init(&f->agg, &f->full, kc, f->am, f->atm);
    }
    kc_mem_tag(kc, "model");
    if ((rc = full_features(f, d, c))) return rc;
    if ((kc_mem_tag(kc, "features"), f->x && (rc = kc_mirror(kc, f->x, (size_t)(n * d->f) * sizeof(float), (void **)&f->xd))) ||
        (kc_mem_tag(kc, "labels"), (rc = kc_mirror(kc, d->y, (size_t)n * sizeof(int32_t), (void **)&f->y_d))) ||
        (rc = kc_mirror(kc, train_idx, (size_t)n_train * sizeof(int64_t), (void **)&f->trn_d)) ||
        (nv > 0 && (rc = kc_mirror(kc, d->split[SPLIT_VALID], (size_t)nv * sizeof(int64_t), (void **)&f->vidx_d))) ||
        (nt > 0 && (rc = kc_mirror(kc, d->split[SPLIT_TEST], (size_t)nt * sizeof(int64_t), (void **)&f->tidx_d))) ||
        (kc_mem_tag(kc, "buffers"), (rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof *f->meter_d, (void **)&f->meter_d))) ||
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)(n * cc) * sizeof(float), (void **)&f->dlog)) ||
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)(n * cc) * sizeof(float), (void **)&f->logp)))
        return rc;
    kc_mem_tag(kc, "optimizer");
    if ((rc = train_optim_build(c, f->m, &f->o))) return rc;
    kc_mem_tag(kc, "buffers");
    if (c->batch_size > 0 &&
        (rc = mlp_batch_init(kc, &f->mb, c->batch_size, d->f, d->y, train_idx, n_train)))
        return rc;
    train_device_budget_setup_done(kc, &f->place);
    /* logits on the host for the hooks (pruning's on_epoch, out_logits); on the CPU they are
     * the model's own */
    f->want_logits = c->on_epoch || c->out_logits || c->on_step;
    if (f->want_logits && kc_device(kc) != KERN_DEV_CPU && !(f->lhost = inca_malloc((size_t)(n * cc) * sizeof(float))))
        return INCA_ENOMEM;
    return INCA_OK;
}

static void full_free(full_run_t *f, const dataset_t *d, const int64_t *train_idx) {
    kern_ctx_t *kc = f->kc;
    kc_release(kc, KERN_MEM_DEVICE, f->dlog);
    kc_release(kc, KERN_MEM_DEVICE, f->logp);
    kc_release(kc, KERN_MEM_DEVICE, f->meter_d);
    kc_mirror_free(kc, f->x, f->xd);
    kc_mirror_free(kc, d->y, f->y_d);
    kc_mirror_free(kc, train_idx, f->trn_d);
    kc_mirror_free(kc, d->split[SPLIT_VALID], f->vidx_d);
    kc_mirror_free(kc, d->split[SPLIT_TEST], f->tidx_d);
    inca_free(f->lhost);
    inca_free(f->xw);
    mlp_batch_free(kc, &f->mb);
    optim_free(&f->o);
    model_free(&f->m);
    kc_mat_free(kc, &f->am);
    kc_mat_free(kc, &f->atm);
    csr_free(&f->a);
    csr_free(&f->at);
    csr_free(&f->xs);
}

/* One epoch's training: one step over the whole graph (or the MLP's mini-batches); *loss is
 * the training loss (the training accuracy is the evaluation's, after the step, as the
 * mini-batch trainers report it). */
static int full_train_epoch(full_run_t *f, const dataset_t *d, const train_config_t *c, const int64_t *train_idx,
                            int64_t n_train, int run, int ep, double *loss) {
    kern_ctx_t *kc = f->kc;
    const int64_t n = d->n, cc = d->c;
    if (c->batch_size > 0)
        return train_mlp_epoch(f->m, f->o, c, f->xd, d->f, cc, d->y, run, ep, &f->mb, f->dlog, f->lhost, loss);
    train_meter_t h;
    const float *logits;
    int rc;
    nn_agg_t *agg = f->norm ? &f->agg : NULL;
    if ((rc = model_forward(f->m, n, f->xd, agg, 1, c->seed, (uint64_t)ep, &logits)) ||
        (rc = kc_zero(kc, f->meter_d->count[0], sizeof f->meter_d->count[0], KERN_STREAM_COMPUTE)) ||
        (rc = kc_softmax_xent(kc, n, cc, logits, f->y_d, f->trn_d, n_train, NULL, f->dlog, &f->meter_d->loss[0])) ||
        (rc = kc_copy(kc, &h, f->meter_d, sizeof h, KERN_D2H, KERN_STREAM_COMPUTE)))
        return rc;
    if (c->on_step && isfinite(h.loss[0]) &&
        (rc = step_hook(kc, c, run, ep, train_idx, train_idx, n_train, logits, n, cc, f->lhost)))
        return rc;
    *loss = h.loss[0];
    if (!isfinite(*loss)) return inca_fail(INCA_ERR, "epoch %d: training loss is not finite (%g); lower --lr?", ep, *loss);
    return (rc = model_backward(f->m, f->dlog, agg)) ? rc : optim_step(f->o);
}

/* The epoch's eval-mode forward over every node and its figures into e (the training accuracy
 * over the n_train training ids among them); *lh: the logits the hooks read (host). */
static int full_eval(full_run_t *f, const dataset_t *d, const train_config_t *c, int64_t n_train, int ep,
                     train_epoch_eval_t *e, const float **lh) {
    const float *logits;
    const int64_t n = d->n, cc = d->c;
    int rc;
    if ((rc = model_forward(f->m, n, f->xd, f->norm ? &f->agg : NULL, 0, c->seed, (uint64_t)ep, &logits))) return rc;
    if ((rc = train_eval_dev(f->kc, logits, n, cc, f->y_d, f->trn_d, n_train, f->vidx_d, e->n_valid, f->tidx_d,
                             d->split_n[SPLIT_TEST], f->logp, f->meter_d, e)))
        return rc;
    *lh = logits;
    if (f->want_logits && f->lhost) {
        if ((rc = kc_copy(f->kc, f->lhost, logits, (size_t)(n * cc) * sizeof(float), KERN_D2H, KERN_STREAM_COMPUTE)))
            return rc;
        *lh = f->lhost;
    }
    return INCA_OK;
}

int train_full(const dataset_t *d, const train_config_t *c, const int64_t *train_idx, int64_t n_train, int run,
               train_result_t *r) {
    full_run_t f = {.kc = c->kc ? c->kc : kc_cpu()};
    int rc;
    memset(r, 0, sizeof *r);
    if ((rc = train_model_config(d, c, c->seed, &f.mc))) return rc;
    f.mc.transform_first = 1;   /* the full-graph operator is linear */
    f.norm = nn_kind_norm(f.mc.kind);
    if ((rc = full_check(c, train_idx, n_train, f.norm))) return rc;
    if ((rc = full_setup(&f, d, c, train_idx, n_train))) {
        if (rc == INCA_ENOMEM && f.place.budget > 0 && strstr(inca_errmsg(), "device memory budget"))   /* what it held is in the message */
            rc = inca_fail_ctx(train_budget_refusal_code(c, rc), "full-batch refused before training: it holds every "
                               "node's activations on the device (--method incagg or gas train in batches)");
        goto done;
    }
    train_best_t best;
    train_best_init(&best);
    best.by_loss = c->select_loss;
    best.metric = c->metric;
    double t_step = 0, t_eval = 0, t_epoch = 0, loss = 0;
    int64_t evals = 0;   /* --eval-every: not every epoch's */
    int ep, ep0 = 0, finished = 0;
    ckpt_state_t cs = {0};   /* no history tables: order 0 */
    if (c->checkpoint_dir && c->resume) {
        if ((rc = ckpt_load(c->checkpoint_dir, run, c, d, f.m, f.o, &cs, NULL, 0)) < 0) goto done;
        if (rc == INCA_OK) {   /* continue after the last completed epoch (a larger --epochs extends the run) */
            best = cs.best;
            loss = cs.train_loss;
            t_step = cs.t_step;
            t_eval = cs.t_eval;
            t_epoch = cs.t_epoch;
            evals = cs.evals;
            ep0 = cs.epoch + 1;
            finished = cs.finished;
        }
        if ((rc = train_resume_note(c, run, ep0))) goto done;
    }
    for (ep = ep0; ep < c->epochs && !finished; ep++) {
        const double t0 = inca_now();
        if ((rc = full_train_epoch(&f, d, c, train_idx, n_train, run, ep, &loss))) goto done;
        if (kc_device(f.kc) != KERN_DEV_CPU && (rc = kc_sync(f.kc))) goto done;   /* the step's time is its execution */
        const double t1 = inca_now();
        if (!train_eval_due(c, ep)) {   /* --eval-every: no evaluation, no checkpoint */
            t_step += t1 - t0;
            t_epoch += t1 - t0;
            continue;
        }
        train_epoch_eval_t e = {.run = run, .epoch = ep, .train_loss = loss, .n_valid = d->split_n[SPLIT_VALID]};
        const float *lh;
        if ((rc = full_eval(&f, d, c, n_train, ep, &e, &lh))) goto done;
        const double t2 = inca_now();
        e.epoch_s = t2 - t0;
        t_step += t1 - t0;
        t_eval += t2 - t1;
        t_epoch += t2 - t0;
        evals++;
        if ((rc = train_epoch_end(c, &e, lh, d->n, (int32_t)d->c, &best))) goto done;
        const int stop = c->patience > 0 && best.since >= c->patience;
        if (c->checkpoint_dir) {
            cs = (ckpt_state_t){.epoch = ep, .finished = stop, .best = best, .train_loss = loss,
                                .t_step = t_step, .t_eval = t_eval, .t_epoch = t_epoch, .evals = evals};
            if ((rc = ckpt_save(c->checkpoint_dir, run, c, d, f.m, f.o, &cs, NULL, 0))) goto done;
        }
        if (stop) { ep++; break; }
    }
    train_result_set(r, &best, ep, evals, loss, t_step, t_eval, t_epoch);
    for (int i = 0; i < model_nparams(f.m); i++) r->nparams += model_param(f.m, i)->n;
    r->steps_per_epoch = c->batch_size > 0 ? f.mb.steps : 1;
    r->step_time_s /= (double)r->steps_per_epoch;   /* per optimiser step, as the mini-batch methods report it */
    rc = c->keep_params ? train_keep_params(f.kc, f.m, r) : INCA_OK;
    train_device_budget_end(f.kc, &f.place);
    r->placement = f.place;
done:
    r->peak_rss_mb = inca_peak_rss_mb();
    full_free(&f, d, train_idx);
    return rc;
}
