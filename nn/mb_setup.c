/* Making and releasing a mini-batch run (mb_setup.h). */
#include "nn/mb_setup.h"
#include "nn/mb_place.h"
#include "nn/mb_sparse.h"
#include "core/alloc.h"
#include "core/memstat.h"
#include "core/status.h"
#include <string.h>

void mb_run_free(mb_run_t *R) {
    kern_ctx_t *kc = R->kc;
    inca_free(R->blobs);
    for (int r = 0; r < R->workers; r++) batch_loader_free(&R->lds[r]);
    R->ld = NULL;   /* one of lds */
    halo_free(&R->halo);
    halo_dev_free(&R->hx);
    inca_free(R->gsend);
    inca_free(R->grecv);
    dist_plan_free(&R->plan);
    agg_free(&R->agg);
    optim_free(&R->opt);
    wavg_free(&R->avg);
    model_free(&R->m);
    mb_sparse_free(R);
    if (kc) {
        for (int i = 0; i < R->npan; i++) kc_mat_free(kc, &R->apan[i]);   /* views of a_m: first */
        kc_release(kc, KERN_MEM_DEVICE, R->logits_all);
        kc_release(kc, KERN_MEM_DEVICE, R->pan_in);
        mb_features_undo(R);   /* x_d, xb_d, the host features' staging */
        for (int i = 0; i < R->ngacc; i++) kc_release(kc, KERN_MEM_DEVICE, R->gacc[i]);
        kc_mat_free(kc, &R->a_m);
        kc_mat_free(kc, &R->at_m);
        kc_mirror_free(kc, R->D.y, R->y_d);
        kc_mirror_free(kc, R->D.tr, R->tr_d);
        kc_mirror_free(kc, R->D.va, R->va_d);
        kc_mirror_free(kc, R->D.te, R->te_d);
        void *dm[] = {R->losses_d, R->meter_d, R->logp, R->dlogits};
        for (size_t i = 0; i < sizeof dm / sizeof dm[0]; i++) kc_release(kc, KERN_MEM_DEVICE, dm[i]);
    }
    mb_data_free(&R->D);
    inca_free(R->apan);
    inca_free(R->pan_r0);
    inca_free(R->gacc);
    inca_free(R->lidx);
    inca_free(R->lorig);
    inca_free(R->lhost);
    inca_free(R->iperm);
    inca_free(R->snodes);
    inca_free(R->shost);
    inca_free(R->losses_h);
    inca_free(R->step_has_loss);
}

/* The loader (or with --workers one per rank: its own parts, its own shuffle stream; under MPI
 * this process's rank's only) from R->bo; R->spe = the most steps any rank has in an epoch,
 * R->nb_max / R->halo_max = the largest batch / halo of any rank's loader. All three are the
 * job's under MPI too (reduced over the processes), as with --workers: the view path's row
 * panels are nb_max rows, and a panel's rows must not depend on the transport (a GEMM's bits
 * may depend on its row count). */
static int mb_loaders_create(mb_run_t *R) {
    int rc = INCA_OK;
    R->spe = R->nb_max = R->halo_max = 0;
    for (int r = 0; r < R->workers && rc == INCA_OK; r++) {
        if (R->comm && r != R->rank) continue;
        batch_opts_t bo = R->bo;
        if (R->workers > 1) {
            bo.part_lo = R->plan.part_lo[r];
            bo.part_hi = R->plan.part_lo[r + 1];
            bo.stream = (uint64_t)r;
        }
        batch_loader_free(&R->lds[r]);
        if ((rc = batch_loader_create(&R->src, &bo, &R->lds[r])) != INCA_OK) break;
        R->spe_r[r] = batch_loader_steps_per_epoch(R->lds[r]);
        R->spe = R->spe_r[r] > R->spe ? R->spe_r[r] : R->spe;
        int64_t nb = 0, hm = 0;
        batch_loader_limits(R->lds[r], &nb, &hm);
        R->nb_max = nb > R->nb_max ? nb : R->nb_max;
        R->halo_max = hm > R->halo_max ? hm : R->halo_max;
    }
    R->ld = R->lds[R->comm ? R->rank : 0];
    if (rc == INCA_OK && R->comm) {
        int64_t v[3] = {R->spe, R->nb_max, R->halo_max};
        if ((rc = comm_allreduce_max_i64(R->comm, v, 3, COMM_SETUP)) == INCA_OK) {
            R->spe = v[0];
            R->nb_max = v[1];
            R->halo_max = v[2];
        }
    }
    return rc;
}

/* The entries of sorted ids inside [lo, hi): *off, *cnt. */
static void id_slice(const int64_t *ids, int64_t m, int64_t lo, int64_t hi, int64_t *off, int64_t *cnt) {
    int64_t a = 0, b = m;
    while (a < b) { const int64_t h = a + (b - a) / 2; if (ids[h] < lo) a = h + 1; else b = h; }
    int64_t e = a;
    while (e < m && ids[e] < hi) e++;
    *off = a;
    *cnt = e - a;
}

const char *mb_ckdir(const mb_run_t *R) { return R->comm ? R->ckdir : R->c->checkpoint_dir; }

/* DIR/rank-R-of-P and the manifest (nn/checkpoint.h) */
static int mb_rank_ckdir(mb_run_t *R) {
    return ckpt_rank_dir(R->c, R->rank, R->workers, R->ckdir, sizeof R->ckdir);
}

/* What a checkpoint holds besides the model and the optimiser: every history table of the ns
 * sites and the weight average (its buffer holds the training weights when saved); and the
 * tables' node order. */
static int mb_ckpt_blobs(mb_run_t *R, int ns) {
    R->order = ckpt_order_hash(R->p->perm, R->p->n);
    if (!(R->blobs = inca_malloc(sizeof *R->blobs * (size_t)(4 * ns + 1)))) return INCA_ENOMEM;
    for (int t = 0; t < 4; t++)
        for (int s = 0; s < ns; s++) {
            hist_t *h = agg_table(R->agg, "HMSP"[t], s);
            if (h) R->blobs[R->nblobs++] = (ckpt_blob_t){.p = h->data, .bytes = hist_bytes(h), .dev = !agg_tables_on_host(R->agg)};
        }
    if (R->avg)
        R->blobs[R->nblobs++] = (ckpt_blob_t){.p = wavg_data(R->avg), .bytes = (int64_t)sizeof(float) * wavg_floats(R->avg),
                                              .dev = R->dev};
    return INCA_OK;
}

/* nn_agg_t.base of the batch operator and of the refresh pass's (nn/layer.h, memory/agg.h) */
static int mb_op_base(void *ctx, int site, int64_t n, int64_t f, nn_base_t *b) {
    return agg_base(ctx, site, n, f, &b->rows, &b->sparse, &b->residual);
}
static int mb_refresh_base(void *ctx, int site, int64_t n, int64_t f, nn_base_t *b) {
    return agg_refresh_base(ctx, site, n, f, &b->rows, &b->sparse, &b->residual);
}

/* --input-layer transform-first: on the affine operators (not GAS's halo of x), for a gcn first
 * layer that narrows the width. */
static int mb_input_layer_check(mb_run_t *R) {
    const train_config_t *c = R->c;
    R->mc.input_transform_first = c->input_layer == TRAIN_INPUT_TRANSFORM_FIRST;
    if (!R->mc.input_transform_first) return INCA_OK;
    if (R->method == AGG_GAS)
        return inca_fail(INCA_EINVAL, "--input-layer transform-first: not with --method gas (its halo reads x "
                         "at the input width); use cluster or incagg, or --input-layer aggregate-first");
    if (R->mc.kind != NN_GCN)
        return inca_fail(INCA_EINVAL, "--input-layer transform-first: --model gcn only (--model %s aggregates its "
                         "input as it is)", model_kind_name(R->mc.kind));
    if (mb_x_tf_dim(&R->mc) == 0)
        return inca_fail(INCA_EINVAL, "--input-layer transform-first: the first layer does not narrow the width "
                         "(%lld features into %lld): nothing to gain; use --input-layer aggregate-first",
                         (long long)R->mc.in_dim, (long long)(R->mc.layers == 1 ? R->mc.out_dim : R->mc.hidden));
    return INCA_OK;
}

/* The configuration errors, the job's split counts and the model's configuration. */
static int mb_setup_check(mb_run_t *R, const dataset_t *d, int64_t n_train) {
    const train_config_t *c = R->c;
    int rc;
    const char *mname = train_method_name(c->method);
    if ((R->method = train_method_agg(c->method)) < 0)
        return inca_fail(INCA_EINVAL, "--method: expected cluster|gas|incagg for mini-batch training, got %s", mname);
    if (!dataset_has_graph(d)) return inca_fail(INCA_EINVAL, "--method %s needs a graph; this dataset has none", mname);
    if (!d->adj.rowptr && !R->o->view) return inca_fail(INCA_EINVAL, "--method %s: the graph was not loaded (needs --loader view)", mname);
    if (!d->y) return inca_fail(INCA_EINVAL, "--method %s needs labels; this dataset has none", mname);
    if (!(c->refresh_relax > 0 && c->refresh_relax <= 1))
        return inca_fail(INCA_EINVAL, "--refresh-relax: expected a value in (0,1], got %g", c->refresh_relax);
    if (R->method == AGG_INCAGG && c->refresh_source == AGG_SRC_RECOMPUTE && c->refresh_weights == TRAIN_REFW_AVERAGE &&
        train_eval_average(c) == 0)
        return inca_fail(INCA_EINVAL, "--refresh-weights average: the evaluation averages no weights here (--eval-average "
                         "is 0%s); give --eval-average D > 0 or --refresh-weights last", c->eval_average < 0 ? " by default" : "");
    if (!R->p || R->p->n != d->n)
        return inca_fail(INCA_EINVAL, "partitioning covers %lld nodes, dataset has %lld", (long long)(R->p ? R->p->n : -1), (long long)d->n);
    /* a shard holds its rank's share of the splits: the job's counts are the sums */
    int64_t cnt[3] = {n_train, d->split_n[SPLIT_VALID], d->split_n[SPLIT_TEST]};
    if (comm_size(c->comm) > 1 && (rc = comm_allreduce_sum_i64(c->comm, cnt, 3, COMM_SETUP)) != INCA_OK) return rc;
    R->nva_all = cnt[1];
    if (cnt[0] <= 0) return train_fail_no_train_nodes(c);   /* the full-batch trainers' message */
    if ((rc = train_model_config(d, c, c->seed, &R->mc)) != INCA_OK) return rc;
    if (R->mc.kind == NN_MLP) return inca_fail(INCA_EINVAL, "--model mlp has no aggregation: use --method full");
    /* the operators are affine (IncAgg adds a baseline; GAS adds halo rows of x): site 0 must see
     * x itself, so no transform-first layers in training */
    R->mc.transform_first = 0;
    if ((rc = mb_input_layer_check(R)) != INCA_OK) return rc;
    R->C = (int32_t)R->mc.out_dim;
    R->stream = R->o->view != NULL;
    if (R->stream && R->mc.kind != NN_GCN && R->mc.kind != NN_SAGE)
        return inca_fail(INCA_EINVAL, "--loader view evaluates layer by layer, which takes --model gcn or sage; "
                         "--model %s needs --loader copy", model_kind_name(c->model));
    return INCA_OK;
}

/* The ranks: --workers or the processes of mpirun, the ownership plan, this rank's ids of each split. */
static int mb_setup_ranks(mb_run_t *R) {
    const train_config_t *c = R->c;
    int rc;
    R->workers = c->workers > 1 ? c->workers : 1;
    if (R->workers > MB_MAX_WORKERS) return inca_fail(INCA_EINVAL, "--workers %d: at most %d", R->workers, MB_MAX_WORKERS);
    if (comm_size(c->comm) > 1) {   /* under mpirun: this process is one rank of workers */
        const int P = comm_size(c->comm);
        if (c->workers > 1)   /* the processes are the ranks: workers would be ignored */
            return inca_fail(INCA_EINVAL, "--workers %d under mpirun -np %d: workers are thread ranks inside one process; "
                             "use either", c->workers, P);
        if (P > MB_MAX_WORKERS) return inca_fail(INCA_EINVAL, "mpirun -np %d: at most %d ranks", P, MB_MAX_WORKERS);
        R->comm = c->comm;
        R->rank = comm_rank(c->comm);
        R->workers = P;
        if (c->on_epoch || c->out_logits || c->on_step)
            return inca_fail(INCA_EINVAL, "mpirun: the per-node logits hooks (on_epoch, on_step, out_logits) are one process's");
    }
    if (R->workers > 1 && R->method == AGG_GAS && c->history_host == TRAIN_HIST_HOST)
        return inca_fail(INCA_EINVAL, "%d ranks with --method gas: not with --history-location host", R->workers);
    if (R->workers > 1 && c->batchnorm)
        return inca_fail(INCA_EINVAL, "%d ranks with --batchnorm: BatchNorm's running statistics would be each "
                         "rank's own; not supported", R->workers);
    if (R->workers > 1 && c->given_plan) {   /* a shard's: its own rows of Â cannot weigh the parts */
        if ((rc = dist_plan_copy(c->given_plan, &R->plan)) != INCA_OK) return rc;
        if (R->plan.ranks != R->workers || R->plan.n != R->D.n || R->plan.k != R->p->k)
            return inca_fail(INCA_EINVAL, "the shard's ownership plan is for %d ranks of %lld nodes, %lld parts; the job has %d ranks",
                             R->plan.ranks, (long long)R->plan.n, (long long)R->plan.k, R->workers);
    } else if (R->workers > 1 && (rc = dist_plan_make(&R->D.a, R->p->bounds, R->p->k, R->workers, &R->plan)) != INCA_OK)
        return rc;
    if (R->comm) {   /* this rank's ids of each split (sorted: one slice each) */
        const int64_t lo = R->plan.node_lo[R->rank], hi = R->plan.node_lo[R->rank + 1];
        id_slice(R->D.tr, R->D.ntr, lo, hi, &R->tr_lo, &R->tr_n);
        id_slice(R->D.va, R->D.nva, lo, hi, &R->va_lo, &R->va_n);
        id_slice(R->D.te, R->D.nte, lo, hi, &R->te_lo, &R->te_n);
    }
    return INCA_OK;
}

/* The context, and the graph, features, labels and split ids on it. */
static int mb_setup_upload(mb_run_t *R) {
    const train_config_t *c = R->c;
    int rc;
    const int64_t n = R->D.n;
    const csr_t *atp = R->D.at.rowptr ? &R->D.at : NULL;
    R->kc = c->kc ? c->kc : kc_cpu();
    R->dev = kc_device(R->kc) != KERN_DEV_CPU;
    kern_ctx_t *kc = R->kc;
    if ((rc = train_device_budget_begin(c, kc, "graph", &R->place)) != INCA_OK) return rc;
    if ((rc = kc_mat_upload(kc, &R->D.a, &R->a_m)) || (atp && (rc = kc_mat_upload(kc, atp, &R->at_m))) ||
        (rc = mb_features_early(R)) ||
        (kc_mem_tag(kc, "labels"), (rc = kc_mirror(kc, R->D.y, sizeof(int32_t) * (size_t)n, (void **)&R->y_d))) ||
        (rc = kc_mirror(kc, R->D.tr, sizeof(int64_t) * (size_t)R->D.ntr, (void **)&R->tr_d)) ||
        (rc = kc_mirror(kc, R->D.va, sizeof(int64_t) * (size_t)R->D.nva, (void **)&R->va_d)) ||
        (rc = kc_mirror(kc, R->D.te, sizeof(int64_t) * (size_t)R->D.nte, (void **)&R->te_d)))
        return rc;
    return INCA_OK;
}

/* The batch loaders; *hd_out: the history tables' type, *m0_out: the stored M^0 the view loader
 * maps (NULL: computed). */
static int mb_setup_loader(mb_run_t *R, hist_dtype_t *hd_out, const void **m0_out) {
    const train_config_t *c = R->c;
    int rc;
    const int64_t n = R->D.n;
    const csr_t *atp = R->D.at.rowptr ? &R->D.at : NULL;
    const int norm = nn_kind_norm(R->mc.kind);
    /* sparse rows: the loader gathers no dense rows of x (mb_sparse_batch makes the batch's) */
    R->src = (batch_source_t){.n = n, .f = R->D.f, .x = R->xs_on ? NULL : R->D.x, .y = R->D.y, .a = &R->D.a, .a_symmetric = atp == NULL,
                              .bounds = R->p->bounds, .k = R->p->k};
    if (c->history_dtype != HIST_F32 && c->history_dtype != HIST_BF16)
        return inca_fail(INCA_EINVAL, "--history-dtype: unknown type %d", (int)c->history_dtype);
    *hd_out = c->history_dtype;
    const hist_dtype_t hd = *hd_out;
    const void *m0 = *m0_out = mb_view_m0(R);
    if (m0 && !R->dev) {   /* the step reads M^0 at the batch's rows: the loader thread faults them in */
        R->src.touch = m0;
        R->src.touch_row_bytes = R->D.f * (hd == HIST_BF16 ? 2 : 4);
    }
    R->bo = (batch_opts_t){.batch_parts = c->batch_parts, .seed = c->seed, .halo = R->method == AGG_GAS, .prefetch = R->o->prefetch};
    if (R->method == AGG_CLUSTER && !c->cluster_global_norm)
        R->bo.renorm = norm == NN_NORM_MEAN ? BATCH_RENORM_MEAN : BATCH_RENORM_GCN;
    if ((rc = mb_loaders_create(R)) != INCA_OK) return rc;
    R->R = c->refresh > 0 ? c->refresh : R->spe;
    return INCA_OK;
}

/* MPI on a device: staging for the halo rows of every table this rank exchanges (the history
 * sites' tables in their type, the layer-wise passes' outputs in --pass-dtype), made before the tables so
 * that a device budget sees it. */
static int mb_halo_staging(mb_run_t *R) {
    int64_t dims[AGG_MAX_SITES], w[2 * AGG_MAX_SITES];
    uint8_t fixed[AGG_MAX_SITES];
    kern_dtype_t dt[2 * AGG_MAX_SITES];
    int nw = 0;
    const int ns = mb_model_sites(&R->mc, dims, fixed);
    if (ns < 0) return ns;
    const kern_dtype_t hd = R->c->history_dtype == HIST_BF16 ? KERN_BF16 : KERN_F32;
    for (int st = 0; st < ns; st++) {
        if (fixed[st]) continue;   /* x: every rank holds all of it, nothing of it travels */
        w[nw] = dims[st];
        dt[nw++] = hd;
        w[nw] = dims[st];   /* the layer-wise passes' outputs */
        dt[nw++] = R->c->pass_dtype == HIST_BF16 ? KERN_BF16 : KERN_F32;
    }
    const char *tag = kc_mem_tag(R->kc, "comm staging");
    int rc = train_xfer_halo_dev(R->kc, R->workers, R->D.n, w, dt, nw, &R->hx);
    kc_mem_tag(R->kc, tag);
    return rc;
}

/* The model, its optimiser and weight average, the ranks' gradient sums and, under MPI, the
 * common start and the halo plan. */
static int mb_setup_model(mb_run_t *R) {
    const train_config_t *c = R->c;
    int rc;
    const int64_t n = R->D.n, nb_max = R->nb_max;
    kern_ctx_t *kc = R->kc;
    /* the view path runs the model on a batch or a row panel of a batch's size, never on all n */
    kc_mem_tag(kc, "model");
    if ((rc = model_create_on(&R->mc, R->stream ? (nb_max > 0 ? nb_max : 1) : n, kc, &R->m)) != INCA_OK) return rc;
    /* sparse rows: the whole graph's (its passes) hold every batch's, made now, not in the steps */
    if ((rc = mb_sparse_reserve(R)) != INCA_OK) return rc;
    kc_mem_tag(kc, "optimizer");
    if ((rc = train_optim_build(c, R->m, &R->opt)) != INCA_OK) return rc;
    kc_mem_tag(kc, "gradients");
    if (R->workers > 1) {   /* the ranks' gradient sums */
        const int np = model_nparams(R->m);
        if (!(R->gacc = inca_calloc((size_t)(np > 0 ? np : 1), sizeof *R->gacc))) return INCA_ENOMEM;
        for (int i = 0; i < np; i++, R->ngacc++)
            if ((rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)model_param(R->m, i)->n, (void **)&R->gacc[i])))
                return rc;
    }
    if (R->comm) {   /* every rank starts from rank 0's parameters; a step's record: had, loss, gradients */
        const int np = model_nparams(R->m);
        R->gfloats = 4;
        for (int i = 0; i < np; i++) R->gfloats += model_param(R->m, i)->n;
        if ((rc = train_xfer_bcast_params(R->comm, R->m)) != INCA_OK) return rc;
        if (!(R->gsend = inca_calloc((size_t)R->gfloats, sizeof(float))) ||
            /* allgather: every rank's whole record; the chain: every rank's header */
            !(R->grecv = inca_malloc(sizeof(float) * (size_t)(c->grad_reduce == TRAIN_GRAD_ALLGATHER ? R->gfloats : 4) *
                                     (size_t)R->workers)))
            return INCA_ENOMEM;
        /* the rows of another rank that this rank's rows of Â read: S's at IncAgg's push refresh,
         * every layer's output in the view loader's layer-wise passes */
        if ((R->method == AGG_INCAGG && c->refresh_source == AGG_SRC_PUSH) || R->stream) {
            int64_t *ids = NULL, m = 0;
            if ((rc = dist_halo(&R->D.a, &R->plan, R->rank, &ids, &m)) != INCA_OK) return rc;
            rc = halo_plan(R->comm, &R->plan, ids, m, COMM_SETUP, &R->halo);
            inca_free(ids);
            if (rc != INCA_OK) return rc;
        }
        if (R->dev && (rc = mb_halo_staging(R)) != INCA_OK) return rc;
        if (c->grad_reduce == TRAIN_GRAD_NCCL && (rc = train_xfer_nccl_join(R->comm, R->kc)) != INCA_OK) return rc;
    }
    /* after the broadcast: every rank's average starts from rank 0's parameters */
    kc_mem_tag(kc, "optimizer");
    if (train_eval_average(c) > 0 && (rc = wavg_create(R->m, train_eval_average(c), &R->avg)) != INCA_OK) return rc;
    return INCA_OK;
}

/* Row panels of a batch's size for the view loader's layer-wise passes. */
static int mb_setup_panels(mb_run_t *R) {
    int rc;
    const int64_t n = R->D.n, nb_max = R->nb_max;
    kern_ctx_t *kc = R->kc;
    /* panels never straddle a rank's node range and are the job's nb_max rows (reduced over
     * the processes), so --workers P and P processes run the very same panels; under MPI a
     * process runs only its own rank's */
    R->pan_rows = nb_max > 0 ? nb_max : 1;
    const int64_t maxpan = (n + R->pan_rows - 1) / R->pan_rows + R->workers;
    if (!(R->apan = inca_calloc((size_t)maxpan, sizeof *R->apan)) ||
        !(R->pan_r0 = inca_malloc(sizeof *R->pan_r0 * (size_t)maxpan)))
        return INCA_ENOMEM;
    for (int w = 0; w < R->workers; w++) {
        if (R->comm && w != R->rank) continue;
        const int64_t lo = R->workers > 1 ? R->plan.node_lo[w] : 0, hi = R->workers > 1 ? R->plan.node_lo[w + 1] : n;
        for (int64_t r0 = lo; r0 < hi; r0 += R->pan_rows, R->npan++) {
            const int64_t r1 = r0 + R->pan_rows < hi ? r0 + R->pan_rows : hi;
            R->pan_r0[R->npan] = r0;
            if ((rc = kc_mat_rows_view(kc, R->a_m, r0, r1, &R->apan[R->npan])) != INCA_OK) return rc;
        }
    }
    kc_mem_tag(kc, "buffers");
    if ((rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)(n ? n : 1) * (size_t)R->C, (void **)&R->logits_all)))
        return rc;
    if (R->c->pass_dtype == HIST_BF16 &&
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)R->pan_rows * (size_t)mb_pass_width(R), (void **)&R->pan_in)))
        return rc;
    return INCA_OK;
}

/* The step's and the evaluation's buffers, sized once. */
static int mb_setup_buffers(mb_run_t *R) {
    const train_config_t *c = R->c;
    int rc;
    const int64_t n = R->D.n, nb_max = R->nb_max;
    kern_ctx_t *kc = R->kc;
    const int64_t nbm = nb_max ? nb_max : 1;
    kc_mem_tag(kc, "buffers");
    if ((rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)(n ? n : 1) * (size_t)R->C, (void **)&R->logp)) ||
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)nbm * (size_t)R->C, (void **)&R->dlogits)) ||
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(double) * (size_t)(R->spe ? R->spe : 1) * (size_t)R->workers, (void **)&R->losses_d)) ||
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof *R->meter_d, (void **)&R->meter_d)))
        return rc;
    if (R->dev && !mb_features_deferred(R) && !R->xs_on &&
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)(nbm * R->D.f), (void **)&R->xb_d)))
        return rc;
    if (!(R->lidx = inca_malloc(sizeof *R->lidx * (size_t)nbm)) ||
        !(R->losses_h = inca_malloc(sizeof *R->losses_h * (size_t)(R->spe ? R->spe : 1) * (size_t)R->workers)) ||
        !(R->step_has_loss = inca_calloc((size_t)(R->spe ? R->spe : 1) * (size_t)R->workers, 1)))
        return INCA_ENOMEM;
    if ((c->on_epoch || c->out_logits) && !(R->lorig = inca_malloc(sizeof *R->lorig * (size_t)(n ? n : 1) * (size_t)R->C)))
        return INCA_ENOMEM;
    if (R->lorig && R->dev && !(R->lhost = inca_malloc(sizeof *R->lhost * (size_t)(n ? n : 1) * (size_t)R->C)))
        return INCA_ENOMEM;
    if (c->on_step) {
        if (!(R->iperm = inca_malloc(sizeof *R->iperm * (size_t)(n ? n : 1))) ||
            !(R->snodes = inca_malloc(sizeof *R->snodes * (size_t)(nbm ? nbm : 1))) ||
            (R->dev && !(R->shost = inca_malloc(sizeof *R->shost * (size_t)(nbm ? nbm : 1) * (size_t)R->C))))
            return INCA_ENOMEM;
        for (int64_t v = 0; v < n; v++) R->iperm[R->p->perm[v]] = v;
    }
    return INCA_OK;
}

/* --memory-budget: the process's own anonymous memory before the run allocates (RssAnon now, or
 * c->memory_baseline), less the dataset's graph, which mb_setup_agg counts apart. */
static int mb_anon_baseline(mb_run_t *R, const dataset_t *d) {
    int64_t b = R->c->memory_baseline;
    if (b < 0) {
        int rc = memstat_anon_now(&b);
        if (rc != INCA_OK) return inca_fail_ctx(rc, "--memory-budget: the process's baseline");
        if (d->adj.rowptr) b -= (int64_t)sizeof(int64_t) * (d->n + 1) + (int64_t)sizeof(int32_t) * d->adj.nnz;
    }
    R->anon_base = b > 0 ? b : 0;
    return INCA_OK;
}

/* What could still make a refused run fit the device budget: only the changes this run has not
 * made or tried (auto has already tried the host for the tables and the features), would take
 * (GAS refuses host features, and host tables with ranks) and that shrink the device's share
 * (bf16 tables only on the device); a batch's size and the budget always. */
static const char *mb_budget_remedies(const mb_run_t *R, char *buf, size_t cap) {
    const train_config_t *c = R->c;
    const int tables = R->method != AGG_CLUSTER;
    /* host tables reach the device as fp32 rows: bf16 saves host memory there, not the device's */
    const int tables_host = c->history_host == TRAIN_HIST_HOST || R->tables_host || R->tables_auto_host;
    size_t k = 0;
    buf[0] = '\0';
    if (!R->stream)
        k += (size_t)snprintf(buf + k, cap - k, "--loader view keeps one batch's activations on the device instead of every node's, ");
    if (k < cap && tables && !tables_host && c->history_dtype == HIST_F32)
        k += (size_t)snprintf(buf + k, cap - k, "--history-dtype bf16 halves the tables, ");
    if (k < cap && tables && c->history_host == TRAIN_HIST_DEVICE && !(R->workers > 1 && R->method == AGG_GAS))
        k += (size_t)snprintf(buf + k, cap - k, "--history-location host|auto moves them, ");
    if (k < cap && R->stream && c->features_host == TRAIN_HIST_DEVICE && (R->method == AGG_CLUSTER || mb_view_m0(R) != NULL))
        k += (size_t)snprintf(buf + k, cap - k, "--features-location host|auto moves the features, ");
    if (k < cap)
        snprintf(buf + k, cap - k, "%sfewer --batch-parts or a larger --device-memory-budget",
                 R->stream ? "" : "with the view loader, ");
    return buf;
}

int mb_run_setup(mb_run_t *R, const dataset_t *d, const int64_t *train_idx, int64_t n_train) {
    const train_config_t *c = R->c;
    hist_dtype_t hd = HIST_F32;
    const void *m0 = NULL;
    int rc, ns = 0;
    if (c->memory_budget > 0 && (rc = mb_anon_baseline(R, d)) != INCA_OK) return rc;
    if ((rc = mb_setup_check(R, d, n_train)) != INCA_OK ||
        (rc = mb_data_prepare(d, c, R->p, train_idx, n_train, nn_kind_norm(R->mc.kind), R->o->view, &R->D)) != INCA_OK ||
        (rc = mb_setup_ranks(R)) != INCA_OK || (rc = mb_sparse_setup(R)) != INCA_OK ||
        (rc = mb_setup_upload(R)) != INCA_OK || (rc = mb_setup_loader(R, &hd, &m0)) != INCA_OK || (rc = mb_setup_model(R)) != INCA_OK ||
        (R->stream && (rc = mb_setup_panels(R)) != INCA_OK) || (rc = mb_setup_buffers(R)) != INCA_OK ||
        (rc = mb_setup_tables(R, d, hd, m0, &ns)) != INCA_OK) {   /* the tables late: they may move to the host */
        if (rc == INCA_ENOMEM && R->place.budget > 0 && strstr(inca_errmsg(), "device memory budget")) {
            char what[512];
            return inca_fail_ctx(train_budget_refusal_code(c, rc), "refused before training (%s)",
                                 mb_budget_remedies(R, what, sizeof what));
        }
        return rc;
    }
    train_device_budget_setup_done(R->kc, &R->place);
    R->op_batch = (nn_agg_t){.forward = agg_forward, .backward = agg_backward, .ctx = R->agg,
                             .base = mb_x_tf_dim(&R->mc) > 0 ? mb_op_base : NULL};
    R->op_refresh = (nn_agg_t){.forward = agg_refresh_forward, .backward = NULL, .ctx = R->agg,
                               .base = R->m0s.rowptr ? mb_refresh_base : NULL};
    nn_agg_dev_init(&R->op_full, &R->full, R->kc, R->a_m, R->at_m);

    /* checkpoints: the model, the optimiser and every history table (nn/checkpoint.h); under MPI
     * each rank its own in DIR/rank-R-of-P */
    if (c->checkpoint_dir && R->comm && (rc = mb_rank_ckdir(R)) != INCA_OK) return rc;
    if (c->checkpoint_dir && !R->comm && c->resume && (rc = ckpt_manifest_check(c->checkpoint_dir, 1)) != INCA_OK) return rc;
    if (c->checkpoint_dir && (rc = mb_ckpt_blobs(R, ns)) != INCA_OK) return rc;
    train_best_init(&R->best);
    R->best.by_loss = c->select_loss;
    R->best.metric = c->metric;
    return INCA_OK;
}

/* Continue after the last completed epoch of a checkpoint, batches included. Under MPI every rank
 * continues from the newest epoch all of them saved (ckpt_rank_load; without --resume it clears
 * the rank's folder of an older job's files of this run). */
int mb_run_resume(mb_run_t *R, const dataset_t *d) {
    ckpt_state_t cs = {.order = R->order};
    int rc = R->comm ? ckpt_rank_load(R->comm, R->ckdir, R->run, R->c, d, R->m, R->opt, &cs, R->blobs, R->nblobs)
                     : ckpt_load(mb_ckdir(R), R->run, R->c, d, R->m, R->opt, &cs, R->blobs, R->nblobs);
    if (rc < 0) return rc;
    if (rc == CKPT_NONE) return INCA_OK;
    /* the model was saved holding the average, its buffer the training weights (mb_epoch_eval);
     * the tables hold snapshots already (a recompute refresh relaxes from them) */
    if (R->avg && (rc = wavg_swap(R->avg)) != INCA_OK) return rc;
    agg_snapshot_taken(R->agg);
    R->best = cs.best;
    R->train_loss = cs.train_loss;
    R->epoch_s = cs.t_epoch;
    R->carried = cs;
    R->ep0 = R->epochs_run = cs.epoch + 1;
    R->finished = cs.finished;
    R->gstep = (int64_t)R->ep0 * R->spe;
    R->bo.first_epoch = R->ep0;
    return mb_loaders_create(R);
}
