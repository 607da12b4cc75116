/* A whole pruning run on a store, shared by `inca prune` and `inca bench pruning`; see job.h.
 * Tested through both commands in test_pruning_e2e.c and test_e2e_json.c. */
#include "pruning/job.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/backend.h"
#include "loaders/npy.h"
#include "pruning/dyn_io.h"
#include "pruning/labeled.h"
#include "pruning/pipeline.h"
#include "pruning/pruned_store.h"
#include "pruning/score_select.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void prune_job_init(prune_job_t *job) {
    memset(job, 0, sizeof *job);
    prune_config_default(&job->cfg);
    train_config_default(&job->target);
    dataset_init(&job->d);
    job->o.dyn_tag = "last";
    job->o.eval_runs = 1;
    job->o.indices_text = 1;
}

void prune_job_free(prune_job_t *job) {
    if (!job) return;
    prune_result_free(&job->r);
    dataset_free(&job->d);
    INCA_FREE(job->lab);
    INCA_FREE(job->y_vis);
    job->pool = NULL;
    job->npool = job->nlab = 0;
}

/* --device cuda answered before any work: the proxy and the target make their contexts only
 * when they first train, after loading, the labelling check and the spreading (minutes on a large
 * pool), and a failure there reads as the stage's. A context made and freed here: kc_create's
 * rule, train's message. The reason without kc_create's "--device cuda: " and "no usable CUDA
 * device (...)" around it, so the line says it once. */
static int job_device_check(const prune_job_t *job) {
    const char *dev = job->cfg.proxy.device;
    if (!dev || strcmp(dev, "cuda") != 0) dev = job->target.device;
    if (!dev || strcmp(dev, "cuda") != 0) return INCA_OK;
    const kern_ctx_opts_t ko = {.device = dev};
    kern_ctx_t *kc = NULL;
    if (kc_create(&ko, &kc) == INCA_OK) {
        kc_free(&kc);
        return INCA_OK;
    }
    static const char pre[] = "--device cuda: ", inner[] = "no usable CUDA device (";
    char why[512];
    snprintf(why, sizeof why, "%s", inca_errmsg());
    char *w = why;
    if (strncmp(w, pre, sizeof pre - 1) == 0) w += sizeof pre - 1;
    const size_t wl = strlen(w);
    if (strncmp(w, inner, sizeof inner - 1) == 0 && wl > sizeof inner && w[wl - 1] == ')') {
        w[wl - 1] = '\0';
        w += sizeof inner - 1;
    }
    return inca_fail(INCA_ERR, "--device cuda: no CUDA device is available (%s); run with --device cpu", w);
}

/* The store with its split; its train split is the pool. */
static int job_load(prune_job_t *job) {
    const char *path = job->o.path;
    const double t0 = inca_now();
    train_log(&job->cfg.proxy, TRAIN_LOG_INFO, "loading %s", path);
    int rc = dataset_load(path, &job->d);
    if (!rc) rc = dataset_split_apply(path, job->o.split, job->cfg.seed, &job->d);
    if (rc) return rc;
    const dataset_t *d = &job->d;
    if (!d->y) return inca_fail(INCA_EINVAL, "%s: the store has no labels", path);
    /* a table of unlabelled rows only is stored with 0 classes: no split would give a pool */
    if (d->c < 1) return inca_fail(INCA_EINVAL, "%s: no node has a label (0 classes): nothing to pseudo-label from", path);
    if (d->split_n[SPLIT_TRAIN] < 2)
        return inca_fail(INCA_EINVAL, "%s: the train split (the pool) holds %lld nodes; give --split random:TR,VA,TE", path,
                         (long long)d->split_n[SPLIT_TRAIN]);
    job->pool = d->split[SPLIT_TRAIN];
    job->npool = d->split_n[SPLIT_TRAIN];
    job->is_graph = d->adj.rowptr != NULL && d->adj.nnz > 0;
    job->sec[PRUNE_ST_LOAD] = inca_now() - t0;
    return INCA_OK;
}

/* job->lab sorted, each id once (a file may repeat one: it is one labelled node); its ids
 * must be pool nodes: a label outside the pool (a validation or test node) would reach the
 * pseudo-labels (spreading runs over every node) and so the selection that --eval scores */
static int job_label_ids(prune_job_t *job, const char *src) {
    qsort(job->lab, (size_t)job->nlab, sizeof *job->lab, inca_cmp_i64);
    int64_t k = 0;
    for (int64_t i = 0; i < job->nlab; i++)
        if (k == 0 || job->lab[i] != job->lab[k - 1]) job->lab[k++] = job->lab[i];
    job->nlab = k;
    uint8_t *in_pool = inca_calloc((size_t)job->d.n, 1);
    if (!in_pool) return INCA_ENOMEM;
    for (int64_t i = 0; i < job->npool; i++) in_pool[job->pool[i]] = 1;
    int rc = INCA_OK;
    for (int64_t i = 0; i < job->nlab && rc == INCA_OK; i++)
        if (job->lab[i] >= 0 && job->lab[i] < job->d.n && !in_pool[job->lab[i]])
            rc = inca_fail(INCA_EINVAL, "%s: node %lld is not in the pool (the split being pruned): its label would reach "
                           "the pseudo-labels; list pool nodes only", src, (long long)job->lab[i]);
    inca_free(in_pool);
    return rc;
}

/* The labelled subset: the only labels the pruning code may see (job->y_vis). */
static int job_label(prune_job_t *job) {
    const prune_job_opts_t *o = &job->o;
    const dataset_t *d = &job->d;
    const char *src = o->labeled_file ? o->labeled_file : "--labeled";
    const double t0 = inca_now();
    int rc = o->labeled_file ? npy_read_indices(o->labeled_file, &job->lab, &job->nlab)
                             : prune_labeled_pick(d->y, d->c, job->pool, job->npool, o->labeled, o->labeled_per_class,
                                                  job->cfg.seed, &job->lab, &job->nlab);
    if (rc) return rc;
    if ((rc = job_label_ids(job, src))) return rc;
    if (!(job->y_vis = inca_malloc((size_t)d->n * sizeof *job->y_vis))) return INCA_ENOMEM;
    if ((rc = prune_visible_labels(d->y, d->n, job->lab, job->nlab, job->y_vis))) {
        inca_fail_ctx(rc, "%s", src);
        return rc;
    }
    if ((rc = prune_labeled_covers_classes(d, job->pool, job->npool, job->y_vis, src))) return rc;
    job->sec[PRUNE_ST_LABELED] = inca_now() - t0;
    return INCA_OK;
}

/* The stored dynamics (--reuse-dynamics) in job->r, checked against this pool, then scored and
 * selected; their loading is the "proxy" stage. */
static int job_reuse(prune_job_t *job, const char *key) {
    const char *path = job->o.path;
    int32_t c = 0;
    const double t0 = inca_now();
    int rc = prune_dyn_load(path, job->o.dyn_tag, key, &job->r, &c);
    if (rc) return rc;
    if (c != job->d.c || job->r.npool != job->npool || memcmp(job->r.pool, job->pool, (size_t)job->npool * sizeof *job->pool) != 0)
        return inca_fail(INCA_EINVAL, "%s: stored dynamics '%s' do not match this pool", path, job->o.dyn_tag);
    job->sec[PRUNE_ST_PROXY] = inca_now() - t0;
    return prune_score_select(&job->cfg, job->d.c, &job->r);
}

/* Pseudo-labels, dynamics, scores and the first budget's selection: the pipeline on the visible
 * labels, or the stored dynamics; then the dynamics saved (the "write" stage so far). */
static int job_dynamics(prune_job_t *job) {
    const prune_job_opts_t *o = &job->o;
    char key[1024];
    /* the labelled subset itself (sorted, job_label_ids) in the key: a file's name says nothing of
     * what it held when the dynamics were stored */
    prune_dyn_key(key, sizeof key, &job->cfg, inca_fnv1a(INCA_FNV_BASIS, job->lab, sizeof *job->lab * (size_t)job->nlab), o->labeled, o->labeled_per_class, o->split);
    int rc;
    if (o->reuse_dynamics) rc = job_reuse(job, key);
    else {
        dataset_t dv = job->d;   /* shallow: same graph and features, visible labels only */
        dv.y = job->y_vis;
        rc = prune_run(&dv, job->pool, job->npool, &job->cfg, &job->r);
    }
    if (rc) return rc;
    /* with reuse_dynamics the "proxy" stage is the time to load the stored dynamics */
    for (int s = PRUNE_ST_CHECK; s <= PRUNE_ST_SELECT; s++)
        if (!o->reuse_dynamics || s >= PRUNE_ST_SCORE) job->sec[s] = job->r.sec[s];
    /* evaluation only: pseudo-label accuracy against the hidden labels */
    job->pl_acc = prune_pseudo_acc(job->d.y, job->y_vis, &job->r);
    const double t0 = inca_now();
    if (o->save_dynamics && !o->reuse_dynamics) {
        train_log(&job->cfg.proxy, TRAIN_LOG_INFO, "writing the dynamics");
        if ((rc = prune_dyn_save(o->path, o->dyn_tag, key, &job->r, job->d.c))) return rc;
    }
    job->sec[PRUNE_ST_WRITE] = inca_now() - t0;
    return INCA_OK;
}

/* The evaluation of budget b's coreset (the full pool trained at the first budget only: later
 * ones repeat its figures from *full); its sets into *sets. */
static int job_eval(prune_job_t *job, int b, prune_eval_t *full, unsigned *sets) {
    const unsigned all = job->o.eval_sets;
    char what[32];
    snprintf(what, sizeof what, "%s%s%s", all & PRUNE_EVAL_CORESET ? ",coreset" : "", all & PRUNE_EVAL_RANDOM ? ",random" : "",
             all & PRUNE_EVAL_FULL ? ",full" : "");
    *sets = b > 0 ? all & ~(unsigned)PRUNE_EVAL_FULL : all;
    train_log(&job->cfg.proxy, TRAIN_LOG_INFO, "evaluating keep %g (%s, %s budget)", job->cfg.sel.keep,
              what[0] ? what + 1 : "none", all & PRUNE_EVAL_SAME_STEPS ? "steps" : "epochs");
    int rc = prune_eval_run(&job->d, &job->target, job->pool, job->npool, job->r.sel, job->r.nsel, job->o.eval_runs,
                            job->cfg.seed, *sets, &job->ev);
    if (rc) return rc;
    if (b == 0) *full = job->ev;
    else {   /* the full pool's figures, trained once */
        job->ev.full_acc = full->full_acc;
        job->ev.full_std = full->full_std;
    }
    return INCA_OK;
}

/* Budget b: its selection (the first is prune_run's), outputs and evaluation, then its line. */
static int job_budget(prune_job_t *job, int b, prune_eval_t *full) {
    const prune_job_opts_t *o = &job->o;
    prune_config_t *cfg = &job->cfg;
    prune_budget_line_t l = {.budget = b};
    const double tb = inca_now();
    double sec_write = job->sec[PRUNE_ST_WRITE], sec_eval = 0, t0;
    int rc;
    if (b > 0) {
        cfg->sel.keep = cfg->keeps[b];
        train_log(&cfg->proxy, TRAIN_LOG_INFO, "selecting %g", cfg->sel.keep);
        if ((rc = prune_score_select(cfg, job->d.c, &job->r))) return rc;
        job->sec[PRUNE_ST_SCORE] = job->r.sec[PRUNE_ST_SCORE];
        job->sec[PRUNE_ST_SELECT] = job->r.sec[PRUNE_ST_SELECT];
    }
    t0 = inca_now();
    if (o->out) {
        char bp[4096];
        pruned_budget_path(bp, sizeof bp, o->out, cfg->sel.keep, cfg->nkeeps);
        train_log(&cfg->proxy, TRAIN_LOG_INFO, "writing %s", bp);
    }
    rc = pruned_write(&job->d, job->r.sel, job->r.nsel, cfg->sel.keep, cfg->nkeeps, o->indices, o->indices_text, o->out,
                      o->overwrite);
    if (rc) return rc;
    sec_write += inca_now() - t0;
    if (o->eval) {
        t0 = inca_now();
        if ((rc = job_eval(job, b, full, &l.eval_sets))) return rc;
        sec_eval = inca_now() - t0;
    }
    l.total = b == 0 ? inca_now() - o->t_start : inca_now() - tb;
    for (int s = 0; s < PRUNE_ST_COUNT; s++)
        l.sec[s] = s == PRUNE_ST_WRITE ? sec_write : s == PRUNE_ST_EVAL ? sec_eval
                   : (b == 0 || s == PRUNE_ST_SELECT || s == PRUNE_ST_SCORE ? job->sec[s] : 0);
    return o->budget ? o->budget(o->ctx, job, &l) : INCA_OK;
}

int prune_job_run(prune_job_t *job) {
    if (job->o.t_start == 0) job->o.t_start = inca_now();
    if (job->cfg.nkeeps < 1) {   /* no budget curve: the one budget sel.keep */
        job->cfg.keeps[0] = job->cfg.sel.keep;
        job->cfg.nkeeps = 1;
    }
    int rc = job_device_check(job);
    if (!rc) rc = job_load(job);
    if (!rc && job->o.loaded) rc = job->o.loaded(job->o.ctx, job);
    if (!rc) rc = job_label(job);
    if (!rc) rc = job_dynamics(job);
    if (rc) return rc;
    if (job->o.eval && job->target.model == TRAIN_MODEL_AUTO) job->target.model = job->is_graph ? NN_GCN : NN_MLP;
    /* one selection (and evaluation, and line) per budget, all from the same scores */
    prune_eval_t full = {0};
    for (int b = 0; b < job->cfg.nkeeps && !rc; b++) rc = job_budget(job, b, &full);
    return rc;
}
