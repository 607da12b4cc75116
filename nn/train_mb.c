/* Mini-batch trainers (cluster, gas, incagg) behind train_minibatch (nn/train.h) and mb_train
 * (nn/train_mb.h): renumber the dataset by the partition once, build Â, run the prefetching
 * loader, one optimiser step per batch with the method's aggregation operator, IncAgg refreshes
 * every R steps (fused with the evaluation when both are due), layer-wise full inference for
 * evaluation. Tested in test_incagg.c (equivalences, determinism, Cora end to end). */
#include "nn/train_mb.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include "nn/optim.h"
#include "nn/checkpoint.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU seconds of the whole process (all threads, the loader's included): a load-robust
 * companion to wall time on shared machines. */
static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void mb_opts_default(mb_opts_t *o) {
    memset(o, 0, sizeof *o);   /* warmup_epochs was left uninitialised: garbage epoch times */
    o->eval_every_epoch = 1;
    o->prefetch = 1;
    o->single_buffer = 1;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* ids mapped through perm and sorted (caller frees) */
static int64_t *map_ids(const int64_t *ids, int64_t m, const int64_t *perm) {
    int64_t *o = inca_malloc(sizeof *o * (size_t)(m ? m : 1));
    if (!o) return NULL;
    for (int64_t i = 0; i < m; i++) o[i] = perm[ids[i]];
    qsort(o, (size_t)m, sizeof *o, cmp_i64);
    return o;
}

static int optim_build(const train_config_t *c, model_t *m, optim_t **out) {
    int rc = optim_new(c->adamw ? OPTIM_ADAMW : OPTIM_ADAM, c->lr, 0.9, 0.999, 1e-8, out);
    if (rc != INCA_OK) return rc;
    double wds[16];
    int gid[16], ng = 0;
    for (int i = 0; i < model_nparams(m) && rc == INCA_OK; i++) {
        nn_param_t *p = model_param(m, i);
        double wd = train_param_wd(c, p);
        int g = -1;
        for (int k = 0; k < ng; k++)
            if (wds[k] == wd) g = gid[k];
        if (g < 0) {
            if (ng == 16) { rc = inca_fail(INCA_EINVAL, "too many weight-decay groups"); break; }
            if ((rc = optim_add_group(*out, wd, &g)) != INCA_OK) break;
            wds[ng] = wd;
            gid[ng++] = g;
        }
        rc = optim_add_param(*out, g, p->w, p->g, p->n);
    }
    if (rc != INCA_OK) optim_free(out);
    return rc;
}

void mb_stats_free(mb_stats_t *st) {
    if (!st) return;
    INCA_FREE(st->tables);
    st->ntables = 0;
}

/* Copy the arena's block labels and sizes into st (the arena goes with the run). */
static int tables_copy(const mem_arena_t *a, mb_stats_t *st) {
    int n = mem_arena_count(a);
    st->tables = inca_calloc(n > 0 ? (size_t)n : 1, sizeof *st->tables);
    if (!st->tables) return INCA_ENOMEM;
    for (int i = 0; i < n; i++) {
        snprintf(st->tables[i].label, sizeof st->tables[i].label, "%s", mem_arena_label(a, i));
        st->tables[i].bytes = (int64_t)mem_arena_block_bytes(a, i);
    }
    st->ntables = n;
    return INCA_OK;
}

int mb_train(const dataset_t *d, const train_config_t *c, const int64_t *train_idx, int64_t n_train,
             int run, const partition_t *p, const mb_opts_t *o, train_result_t *r, mb_stats_t *st) {
    int rc = INCA_OK, method = 0;
    memset(r, 0, sizeof *r);
    mb_stats_t stl;
    if (!st) st = &stl;
    memset(st, 0, sizeof *st);
    csr_t adjp = {0}, a = {0}, at = {0};
    float *xp = NULL, *logp = NULL, *dlogits = NULL, *lorig = NULL;
    int32_t *yp = NULL;
    int64_t *tr = NULL, *va = NULL, *te = NULL, *lidx = NULL;
    uint8_t *in_train = NULL;
    model_t *m = NULL;
    optim_t *opt = NULL;
    batch_loader_t *ld = NULL;
    mb_ctx_t *ctx = NULL;
    ckpt_blob_t *blobs = NULL;
    int nblobs = 0;
    FILE *mf = NULL;
    const int64_t n = d->n, f = d->f;
    if ((rc = mb_method_parse(c->method, &method)) != INCA_OK) return rc;
    if (!d->adj.rowptr) return inca_fail(INCA_EINVAL, "--method %s needs a graph; this dataset has none", c->method);
    if (!d->y) return inca_fail(INCA_EINVAL, "--method %s needs labels; this dataset has none", c->method);
    if (!p || p->n != n) return inca_fail(INCA_EINVAL, "partitioning covers %lld nodes, dataset has %lld", (long long)(p ? p->n : -1), (long long)n);
    if (n_train <= 0) return inca_fail(INCA_EINVAL, "no training nodes");
    model_config_t mc;
    if ((rc = train_model_config(d, c, c->seed, &mc)) != INCA_OK) return rc;
    if (mc.kind == NN_MLP) return inca_fail(INCA_EINVAL, "--model mlp has no aggregation: use --method full");
    /* the operators here are affine (IncAgg adds a baseline; GAS adds halo rows of x): site 0
     * must see x itself, so no transform-first layers */
    mc.transform_first = 0;
    const int32_t C = (int32_t)mc.out_dim;

    /* renumber everything by the partition */
    if ((rc = csr_permute(&d->adj, p->perm, &adjp)) != INCA_OK) goto done;
    xp = inca_malloc(sizeof *xp * (size_t)(n * f > 0 ? n * f : 1));
    yp = inca_malloc(sizeof *yp * (size_t)n);
    in_train = inca_calloc((size_t)n, 1);
    tr = map_ids(train_idx, n_train, p->perm);
    va = map_ids(d->split[SPLIT_VALID], d->split_n[SPLIT_VALID], p->perm);
    te = map_ids(d->split[SPLIT_TEST], d->split_n[SPLIT_TEST], p->perm);
    logp = inca_malloc(sizeof *logp * (size_t)n * (size_t)C);
    if (!xp || !yp || !in_train || !tr || !va || !te || !logp) { rc = INCA_ENOMEM; goto done; }
    for (int64_t v = 0; v < n; v++) {
        memcpy(xp + p->perm[v] * f, d->x + v * f, sizeof(float) * (size_t)f);
        yp[p->perm[v]] = d->y[v];
    }
    train_features_prepare(c->feature_norm, n, f, xp, xp);
    for (int64_t i = 0; i < n_train; i++) in_train[tr[i]] = 1;
    if ((rc = nn_adj_build(&adjp, nn_kind_norm(mc.kind), &a, &at)) != INCA_OK) goto done;
    csr_free(&adjp);
    const csr_t *atp = at.rowptr ? &at : NULL;

    /* loader, model, optimiser, memory */
    batch_source_t src = {.n = n, .f = f, .x = xp, .y = yp, .a = &a, .a_symmetric = atp == NULL,
                          .bounds = p->bounds, .k = p->k};
    batch_opts_t bo = {.batch_parts = c->batch_parts, .seed = c->seed, .halo = method == MB_GAS,
                       .prefetch = o->prefetch};
    if ((rc = batch_loader_create(&src, &bo, &ld)) != INCA_OK) goto done;
    int64_t nb_max = 0, halo_max = 0, spe = batch_loader_steps_per_epoch(ld);
    batch_loader_limits(ld, &nb_max, &halo_max);
    if ((rc = model_create(&mc, n, &m)) != INCA_OK) goto done;
    if ((rc = optim_build(c, m, &opt)) != INCA_OK) goto done;
    hist_dtype_t hd = HIST_F32;
    if ((rc = hist_dtype_parse(c->history_dtype[0] ? c->history_dtype : "fp32", &hd)) != INCA_OK) goto done;
    const int64_t R = c->refresh > 0 ? c->refresh : spe;
    if ((rc = mb_ctx_create(method, &mc, n, xp, &a, nb_max, halo_max, hd, o->single_buffer && R == spe, &ctx)) != INCA_OK)
        goto done;
    dlogits = inca_malloc(sizeof *dlogits * (size_t)(nb_max ? nb_max : 1) * (size_t)C);
    lidx = inca_malloc(sizeof *lidx * (size_t)(nb_max ? nb_max : 1));
    if (!dlogits || !lidx) { rc = INCA_ENOMEM; goto done; }
    if (c->on_epoch || c->out_logits) {
        lorig = inca_malloc(sizeof *lorig * (size_t)n * (size_t)C);
        if (!lorig) { rc = INCA_ENOMEM; goto done; }
    }
    mf = c->metrics_fp;   /* opened by train_run from --metrics; NULL: no metrics lines */
    nn_agg_t op_batch, op_full, op_fused;
    nn_agg_full_t full;
    mb_ctx_op(ctx, &op_batch);
    mb_ctx_refresh_op(ctx, &op_fused);
    nn_agg_full_init(&op_full, &full, &a, atp);
    const float *logits = NULL;
    train_best_t best;
    train_best_init(&best);
    double epoch_s = 0;
    int64_t gstep = 0;
    int epochs_run = 0, fused_pending = 0, ep0 = 0, finished = 0;

    /* checkpoints: the model, the optimiser and every history table (nn/checkpoint.h) */
    if (c->checkpoint_dir) {
        const int ns = mb_ctx_num_sites(ctx);
        if (!(blobs = inca_malloc(sizeof *blobs * (size_t)(4 * ns + 1)))) { rc = INCA_ENOMEM; goto done; }
        for (int t = 0; t < 4; t++)
            for (int s = 0; s < ns; s++) {
                hist_t *h = mb_ctx_table(ctx, "HMSP"[t], s);
                if (h) blobs[nblobs++] = (ckpt_blob_t){.p = h->data, .bytes = hist_bytes(h)};
            }
    }
    if (c->checkpoint_dir && c->resume) {
        ckpt_state_t cs;
        if ((rc = ckpt_load(c->checkpoint_dir, run, c, d, m, opt, &cs, blobs, nblobs)) < 0) goto done;
        if (rc == INCA_OK) {   /* continue after the last completed epoch, batches included */
            best = cs.best;
            r->train_loss = cs.train_loss;
            epoch_s = cs.t_epoch;
            ep0 = epochs_run = cs.epoch + 1;
            finished = cs.finished;
            gstep = (int64_t)ep0 * spe;
            batch_loader_free(&ld);
            bo.first_epoch = ep0;
            if ((rc = batch_loader_create(&src, &bo, &ld)) != INCA_OK) goto done;
        }
        rc = INCA_OK;
    }

    /* IncAgg starts from exact snapshots of the initial model (one fused pass); a resumed run
     * has its tables from the checkpoint */
    if (method == MB_INCAGG && ep0 == 0) {
        double t0 = inca_now();
        if ((rc = model_forward(m, n, xp, &op_fused, 0, c->seed, 0, &logits)) != INCA_OK) goto done;
        st->init_s = inca_now() - t0;
    }
    for (int ep = ep0; ep < c->epochs && !finished; ep++) {
        if (ep == o->warmup_epochs && ep > 0) {   /* the warm-up epochs leave the figures */
            st->step_s_total = st->refresh_s_total = st->eval_s_total = 0;
            st->step_cpu_s = st->refresh_cpu_s = st->eval_cpu_s = 0;
            st->steps = st->refreshes = st->evals = st->fused = 0;
            epoch_s = 0;
            mb_ctx_reset_times(ctx);
        }
        double te0 = inca_now(), loss_sum = 0;
        int64_t loss_n = 0;
        int eval_due = o->eval_every_epoch || ep == c->epochs - 1;
        for (int64_t s = 0; s < spe; s++) {
            double ts0 = inca_now(), tc0 = cpu_now();
            const batch_t *b = NULL;
            if ((rc = batch_loader_next(ld, &b)) != INCA_OK) goto done;
            mb_ctx_set_batch(ctx, b);
            int64_t nidx = 0;
            for (int64_t i = 0; i < b->n_b; i++)
                if (in_train[b->nodes[i]] && b->y[i] >= 0) lidx[nidx++] = i;
            if ((rc = model_forward(m, b->n_b, b->x, &op_batch, 1, c->seed, (uint64_t)gstep, &logits)) != INCA_OK) goto done;
            if (nidx > 0) {
                loss_sum += kern_softmax_xent(b->n_b, C, logits, b->y, lidx, nidx, logp, dlogits);
                loss_n++;
                if ((rc = model_backward(m, dlogits, &op_batch)) != INCA_OK) goto done;
                optim_step(opt);
            }
            st->step_s_total += inca_now() - ts0;
            st->step_cpu_s += cpu_now() - tc0;
            st->steps++;
            gstep++;
            if (method == MB_INCAGG && gstep % R == 0) {
                /* fused with the evaluation when both are due at this epoch end; with
                 * evaluation only after the last epoch (benchmarks) a refresh stays a refresh */
                if (s == spe - 1 && eval_due && o->eval_every_epoch) fused_pending = 1;
                else {
                    double t0 = inca_now(), c0 = cpu_now();
                    if ((rc = mb_ctx_refresh(ctx)) != INCA_OK) goto done;
                    st->refresh_s_total += inca_now() - t0;
                    st->refresh_cpu_s += cpu_now() - c0;
                    st->refreshes++;
                }
            }
        }
        epochs_run = ep + 1;
        double train_loss = loss_n ? loss_sum / (double)loss_n : 0;
        r->train_loss = train_loss;
        if (eval_due) {
            double t0 = inca_now(), c0 = cpu_now();
            /* the full-graph SpMM is linear: narrowing layers aggregate after W; IncAgg's refresh
             * must see (and store) each layer's input itself */
            model_set_eval_transform_first(m, !fused_pending);
            rc = model_forward(m, n, xp, fused_pending ? &op_fused : &op_full, 0, c->seed, (uint64_t)gstep, &logits);
            if (rc != INCA_OK) goto done;
            double dt = inca_now() - t0;
            if (fused_pending) { st->refresh_s_total += dt; st->refresh_cpu_s += cpu_now() - c0; st->refreshes++; st->fused++; }
            else { st->eval_s_total += dt; st->eval_cpu_s += cpu_now() - c0; st->evals++; }
            fused_pending = 0;
            double vloss = 0, tloss = 0, trloss = 0;
            double vacc = train_eval_split(logits, n, C, yp, va, d->split_n[SPLIT_VALID], logp, &vloss);
            double tacc = train_eval_split(logits, n, C, yp, te, d->split_n[SPLIT_TEST], logp, &tloss);
            double tracc = train_eval_split(logits, n, C, yp, tr, n_train, logp, &trloss);
            int is_best = train_best_update(&best, ep, vacc, vloss, tacc);
            if (lorig) {
                for (int64_t v = 0; v < n; v++) memcpy(lorig + v * C, logits + p->perm[v] * C, sizeof(float) * (size_t)C);
                if (is_best && c->out_logits) memcpy(c->out_logits, lorig, sizeof(float) * (size_t)n * (size_t)C);
                if (c->on_epoch && (rc = c->on_epoch(c->on_epoch_ctx, run, ep, lorig, n, C)) != 0) goto done;
            }
            epoch_s += inca_now() - te0;
            train_metrics_line(mf, run, ep, train_loss, tracc, vloss, vacc, tacc, inca_now() - te0);
            const int stop = c->patience > 0 && best.since >= c->patience;
            if (c->checkpoint_dir) {   /* after the evaluation: no refresh is pending here */
                /* only the epoch time carries over a resume: the step / refresh / eval means are
                 * this process's (mb_stats_t counts its own steps) */
                ckpt_state_t cs = {.epoch = ep, .finished = stop, .best = best, .train_loss = train_loss, .t_epoch = epoch_s};
                if ((rc = ckpt_save(c->checkpoint_dir, run, c, d, m, opt, &cs, blobs, nblobs)) != INCA_OK) goto done;
            }
            if (stop) break;
        } else epoch_s += inca_now() - te0;
    }
    r->test_acc = best.test_acc;
    r->val_acc = best.val_acc;
    r->best_epoch = best.epoch;
    r->epochs = epochs_run;
    r->runs = 1;
    st->timed_epochs = epochs_run > o->warmup_epochs ? epochs_run - o->warmup_epochs : epochs_run;
    r->epoch_time_s = st->timed_epochs ? epoch_s / (double)st->timed_epochs : 0;
    r->step_time_s = st->steps ? st->step_s_total / (double)st->steps : 0;
    r->refresh_time_s = st->refreshes ? st->refresh_s_total / (double)st->refreshes : 0;
    r->eval_time_s = st->evals ? st->eval_s_total / (double)st->evals : 0;
    r->peak_rss_mb = inca_peak_rss_mb();
    st->wait_s = batch_loader_wait_s(ld);
    st->build_s = batch_loader_build_s(ld);
    st->table_bytes = (int64_t)mem_arena_bytes(mb_ctx_arena(ctx));
    st->loader_bytes = batch_loader_bytes(ld);
    st->steps_per_epoch = spe;
    mb_ctx_times(ctx, &st->agg_fwd_s, &st->agg_bwd_s, &st->intra_fraction);
    if (st != &stl) rc = tables_copy(mb_ctx_arena(ctx), st);   /* stl: the caller wants no stats */
done:
    inca_free(blobs);
    batch_loader_free(&ld);
    mb_ctx_free(&ctx);
    optim_free(&opt);
    model_free(&m);
    csr_free(&adjp);
    csr_free(&a);
    csr_free(&at);
    inca_free(xp);
    inca_free(yp);
    inca_free(in_train);
    inca_free(tr);
    inca_free(va);
    inca_free(te);
    inca_free(logp);
    inca_free(dlogits);
    inca_free(lidx);
    inca_free(lorig);
    return rc;
}

/* The partitioning of the last train_minibatch call, reused by the next runs of `--runs N`
 * on the same graph (METIS on a large graph takes minutes). Not thread-safe: one trainer at a
 * time, as train_run runs them. */
static struct { uint64_t hash; int64_t n, nnz, k; int method; partition_t p; } g_part_cache;

/* FNV-1a over the adjacency structure: identifies the graph the cached partition belongs to. */
static uint64_t graph_hash(const csr_t *a) {
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i <= a->n_rows; i++) h = (h ^ (uint64_t)a->rowptr[i]) * 1099511628211ull;
    for (int64_t e = 0; e < a->nnz; e++) h = (h ^ (uint64_t)(uint32_t)a->col[e]) * 1099511628211ull;
    return h;
}

int train_minibatch(const dataset_t *d, const train_config_t *c, const int64_t *train_idx,
                    int64_t n_train, int run, train_result_t *r) {
    int method;
    int rc = mb_method_parse(c->method, &method);
    if (rc != INCA_OK) return rc;
    if (!d->adj.rowptr) return inca_fail(INCA_EINVAL, "--method %s needs a graph; this dataset has none", c->method);
    /* The partitioning is computed here (METIS, seed 0, fixed across runs as in GAS);
     * c->partition = "random..." selects the random fallback. */
    int pm = strncmp(c->partition, "random", 6) == 0 ? PART_RANDOM : PART_METIS;
    int64_t k = c->parts > 0 ? c->parts : 40;
    if (k > d->n) k = d->n;
    uint64_t h = graph_hash(&d->adj);
    if (!(g_part_cache.hash == h && g_part_cache.n == d->n && g_part_cache.nnz == d->adj.nnz &&
          g_part_cache.k == k && g_part_cache.method == pm && g_part_cache.p.perm)) {
        partition_free(&g_part_cache.p);
        store_t *s = NULL;
        /* reuse (or keep) the partitioning in the store, as `inca partition` does; a store
         * that cannot be opened for writing (read-only copy) falls back to computing it */
        if (c->store_path && store_open(c->store_path, STORE_RDWR, &s) == INCA_OK) {
            rc = partition_get(s, &d->adj, k, pm, 0, &g_part_cache.p, NULL);
            store_close(&s);
        } else {
            inca_err_clear();
            rc = partition_compute(&d->adj, k, pm, 0, &g_part_cache.p);
        }
        if (rc != INCA_OK) return inca_fail_ctx(rc, "--parts %lld", (long long)k);
        g_part_cache.hash = h;
        g_part_cache.n = d->n;
        g_part_cache.nnz = d->adj.nnz;
        g_part_cache.k = k;
        g_part_cache.method = pm;
    }
    mb_opts_t o;
    mb_opts_default(&o);
    mb_stats_t st;
    rc = mb_train(d, c, train_idx, n_train, run, &g_part_cache.p, &o, r, &st);
    if (rc == INCA_OK && run == 0)
        fprintf(stderr, "%s: partition %s (edge cut %lld), %lld steps/epoch, memory tables %lld bytes in %d blocks, loader wait %.3f s of %.3f s of steps\n",
                c->method, g_part_cache.p.man.name, (long long)g_part_cache.p.man.edge_cut, (long long)st.steps_per_epoch,
                (long long)st.table_bytes, st.ntables, st.wait_s, st.step_s_total);
    mb_stats_free(&st);
    return rc;
}
