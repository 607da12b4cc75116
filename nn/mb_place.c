/* Placing a mini-batch run's features and tables (mb_place.h). */
#include "nn/mb_place.h"
#include "core/alloc.h"
#include "core/status.h"
#include <math.h>
#include <string.h>

/* A history table's halo rows (h's) from their owners: through the device's staging when the
 * tables are on a device */
int mb_table_exchange(mb_run_t *R, halo_t *h, hist_t *t, int phase) {
    const int on_dev = R->dev && !agg_tables_on_host(R->agg);
    return train_xfer_halo(h, on_dev ? R->hx : NULL, R->comm, t->dtype == HIST_BF16 ? KERN_BF16 : KERN_F32, t->data, t->f,
                           phase);
}

/* MPI incagg push refresh (agg_config.exchange): S's halo rows from their owners */
static int mb_halo_exchange(void *ctx, int site, hist_t *t) {
    (void)site;
    return mb_table_exchange(ctx, ((mb_run_t *)ctx)->halo, t, COMM_REFRESH);
}

/* The layout's M^0 in the tables' type, which IncAgg's view path borrows (NULL: none). */
const void *mb_view_m0(const mb_run_t *R) {
    const layout_views_t *v = R->o->view;
    return R->stream && R->method == AGG_INCAGG && v && v->m0 && v->m0_dtype == R->c->history_dtype ? v->m0 : NULL;
}

/* Where the features go (--features-location). A method whose steps read only their batch's
 * rows of x (Cluster-GCN; IncAgg, whose M^0 stands for Â X at the sites reading x) with the view
 * loader's passes may leave them in host memory; they are placed after the tables then (they
 * are read-only, so host features cost a batch's rows going up, host tables their rows going
 * both ways): auto keeps them on the device when they fit beside everything else, tried under
 * the setup limit, so the plan is what was allocated. Else they go up first, as always. */
int mb_features_deferred(const mb_run_t *R) {
    return R->dev && R->stream && R->c->features_host != TRAIN_HIST_DEVICE &&
           (R->method == AGG_CLUSTER || mb_view_m0(R) != NULL);
}

int mb_features_early(mb_run_t *R) {
    if (mb_features_deferred(R)) return INCA_OK;
    if (R->xs_on) return INCA_OK;   /* sparse rows (nn/mb_sparse.h): nothing reads the dense x there */
    if (R->dev && R->c->features_host == TRAIN_HIST_HOST)
        return inca_fail(INCA_EINVAL, "--features-location host: needs --loader view and --method incagg or cluster (%s)",
                         !R->stream                ? "the copy loader's passes read every node's features on the device"
                         : R->method == AGG_GAS    ? "a GAS step reads its halo's feature rows"
                                                   : "IncAgg reads the layout's M^0, absent in this --history-dtype");
    kc_mem_tag(R->kc, "features");
    return kc_mirror(R->kc, R->D.x, sizeof(float) * (size_t)(R->D.n * R->D.f), (void **)&R->x_d);
}

static int mb_setup_panels_x(mb_run_t *R);

/* What mb_features_late made, released (the operator's extra slot goes with the operator). */
void mb_features_undo(mb_run_t *R) {
    kern_ctx_t *kc = R->kc;
    for (int i = 0; i < R->npan && R->apan_h; i++) kc_mat_free(kc_cpu(), &R->apan_h[i]);
    kc_mat_free(kc_cpu(), &R->a_h);
    INCA_FREE(R->apan_h);
    kc_release(kc, KERN_MEM_DEVICE, R->pan_x);
    kc_release(kc, KERN_MEM_DEVICE, R->pan_m0);
    kc_release(kc, KERN_MEM_PINNED, R->pan_h);
    kc_release(kc, KERN_MEM_DEVICE, R->xb_d);
    kc_mirror_free(kc, R->D.x, R->x_d);
    R->pan_x = NULL;
    R->pan_m0 = NULL;
    R->pan_h = NULL;
    R->xb_d = NULL;
    R->x_d = NULL;
    R->x_host = 0;
}

/* After the tables: the deferred features, and what their place needs (a batch's rows of x
 * gathered on the device, or the panels' staging for host features). */
static int mb_features_late(mb_run_t *R) {
    const train_config_t *c = R->c;
    kern_ctx_t *kc = R->kc;
    if (!mb_features_deferred(R)) return INCA_OK;
    const int64_t nbm = R->nb_max ? R->nb_max : 1;
    int rc = INCA_OK;
    if (c->features_host != TRAIN_HIST_HOST) {   /* on the device: x and a batch's rows gathered from it */
        rc = (kc_mem_tag(kc, "features"), kc_mirror(kc, R->D.x, sizeof(float) * (size_t)(R->D.n * R->D.f), (void **)&R->x_d));
        if (rc == INCA_OK)
            rc = (kc_mem_tag(kc, "buffers"), kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)(nbm * R->D.f), (void **)&R->xb_d));
        if (rc != INCA_ENOMEM || R->place.budget <= 0) return rc;
        train_log(c, TRAIN_LOG_INFO, "features in host memory: %s", inca_errmsg());
        inca_err_clear();
        kc_mirror_free(kc, R->D.x, R->x_d);
        R->x_d = NULL;
    }
    R->x_host = 1;
    kc_mem_tag(kc, "features");   /* a batch's rows travel with it (two slots: one uploads while one runs) */
    return (rc = agg_add_extra(R->agg, 2, (int64_t)sizeof(float) * nbm * R->D.f)) ? rc : mb_setup_panels_x(R);
}

/* The pass buffers' width: the widest hidden output of the layer-wise passes. */
int64_t mb_pass_width(const mb_run_t *R) {
    int64_t wmax = 1;
    for (int li = 0; li + 1 < model_num_layers(R->m); li++)
        wmax = model_site_dim(&R->mc, li + 1) > wmax ? model_site_dim(&R->mc, li + 1) : wmax;
    return wmax;
}

/* The operator, its tables where --history-location puts them. auto on a device: on the device
 * when they fit the budget less its reserve beside everything the run already holds there (the
 * model, the batch's buffers: allocated before), else in host memory. Decided by trying under
 * the context's limit, so the plan is what was allocated, not an estimate of it. */
/* auto on a device under a budget: the tables go where they fit (mb_agg_place) */
static int mb_tables_auto(const mb_run_t *R) {
    return R->dev && R->c->history_host == TRAIN_HIST_AUTO && R->place.budget > 0 && !R->tables_host &&
           !(R->workers > 1 && R->method == AGG_GAS);   /* GAS ranks hold pushes on the device */
}

static int mb_agg_place(mb_run_t *R, agg_config_t *ac) {
    const train_config_t *c = R->c;
    kern_ctx_t *kc = R->kc;
    const int auto_ = mb_tables_auto(R);
    ac->host_tables = R->dev && (c->history_host == TRAIN_HIST_HOST || R->tables_host);
    kc_mem_tag(kc, "operator");
    if (auto_) {   /* under the setup limit (the budget less the reserve: train_device_budget_begin) */
        int rc = agg_create(ac, &R->agg);
        if (rc != INCA_ENOMEM) return rc;
        agg_free(&R->agg);
        train_log(c, TRAIN_LOG_INFO, "history tables in host memory: %s", inca_errmsg());
        ac->host_tables = 1;
        R->tables_auto_host = 1;
    }
    return agg_create(ac, &R->agg);
}

/* Under MPI, what a rank holds in host memory for its exchanges and nothing else does: its halo
 * plan (the rows of other ranks its rows of Â read) with the staging of the exchanges through it
 * (the view loader's passes send each hidden layer's output, fp32 at most; IncAgg's push refresh
 * S; the tables' own width), a device's pinned halo staging, GAS's per-step plan of a batch's
 * halo with its staging (the job's largest halo bounds the rows it asks of other ranks and that
 * each other rank asks of its own), and the step's gradient records. 0 for one process (--workers share one process's tables). */
static int64_t mb_rank_bytes(const mb_run_t *R, int64_t tb, int host_tables) {
    if (!R->comm) return 0;
    const train_config_t *c = R->c;
    const int P = R->workers;
    const int64_t pb = R->dev ? 0 : 4 * mb_pass_width(R);
    const int push = R->method == AGG_INCAGG && c->refresh_source == AGG_SRC_PUSH;
    int64_t rb = push && host_tables ? tb : 0;
    if (pb > rb) rb = pb;
    int64_t b = halo_host_bytes(P, halo_recv_rows(R->halo), halo_send_rows(R->halo), rb) + halo_dev_host_bytes(R->hx);
    if (R->method == AGG_GAS) {   /* a batch's halo rows of other ranks, this rank's rows they ask for */
        const int64_t own = R->plan.node_lo[R->rank + 1] - R->plan.node_lo[R->rank], hm = R->halo_max;
        const int64_t nr = hm < R->D.n - own ? hm : R->D.n - own, ns = (P - 1) * (hm < own ? hm : own);
        b += (int64_t)sizeof(int64_t) * hm + halo_host_bytes(P, nr, ns, host_tables ? tb : 0);
    }
    return b + (int64_t)sizeof(float) * R->gfloats * (1 + (c->grad_reduce == TRAIN_GRAD_ALLGATHER ? P : 0)) +
           (int64_t)sizeof(float) * 4 * P;
}

/* --memory-budget: what one batch needs in anonymous memory whatever the budget, checked with
 * the baseline against it; the tables get the rest (ac's spill budget). */
static int mb_budget_plan(mb_run_t *R, const dataset_t *d, agg_config_t *ac, const int64_t *dims, int ns) {
    const train_config_t *c = R->c;
    const int64_t n = R->D.n, nb_max = R->nb_max;
    const csr_t *atp = R->D.at.rowptr ? &R->D.at : NULL;
    int rc;
    int64_t maxdim = R->D.f, tdim = 1;   /* the widest of the features and the tables; the tables' */
    for (int s = 0; s < ns; s++) {
        maxdim = dims[s] > maxdim ? dims[s] : maxdim;
        tdim = dims[s] > tdim ? dims[s] : tdim;
    }
    const int64_t csrb = (int64_t)sizeof(int64_t) * (n + 1) + (int64_t)(sizeof(int32_t) + sizeof(float)) * R->D.a.nnz;
    const int64_t graph = (R->D.a.owned ? csrb * (atp ? 2 : 1) : 0) +
                          (d->adj.rowptr ? (int64_t)sizeof(int64_t) * (n + 1) + (int64_t)sizeof(int32_t) * d->adj.nnz : 0);
    const int64_t ws = R->dev ? 0 : model_workspace_bytes(R->m);   /* a device's activations are its own */
    int64_t lb = 0;
    for (int w = 0; w < R->workers; w++) lb += R->lds[w] ? batch_loader_bytes(R->lds[w]) : 0;
    const int64_t pern = n * (int64_t)(sizeof(int32_t) + 1 + sizeof(int64_t)) + 2 * n * (int64_t)sizeof(float) * R->C;
    /* the operator's host scratch as it allocates it (GAS's halo and held pushes, IncAgg's
     * deltas and row buffers; off the CPU the pinned staging): an operator made without a
     * budget, whose tables are maps never touched. Off the CPU its tables are the host's
     * wherever they may go (their staging is the larger host need, and device tables that
     * auto would move must not end the run here) */
    agg_config_t probe = *ac;
    probe.host_tables = ac->host_tables || (R->dev && (R->tables_host || mb_tables_auto(R)));
    if ((rc = agg_create(&probe, &R->agg)) != INCA_OK) return rc;
    const int64_t scr_min = R->method == AGG_CLUSTER ? 0 : (int64_t)sizeof(float) * (nb_max ? nb_max : 1) * maxdim;
    int64_t scr = agg_scratch_host_bytes(R->agg);
    agg_free(&R->agg);
    if (scr < scr_min) scr = scr_min;
    const int64_t xchg = mb_rank_bytes(R, (ac->dtype == HIST_BF16 ? 2 : 4) * tdim, !R->dev || probe.host_tables);
    const int64_t need = ws + lb + graph + pern + scr + xchg, base = R->anon_base;
    if (base + need > c->memory_budget)
        return inca_fail(INCA_EINVAL, "--memory-budget %.0f MB is below the process's baseline %.0f MB (anonymous "
                         "memory when the run starts) plus what one batch needs: %.0f MB (model workspace %.0f, "
                         "loader %.0f, graph %.0f, per-node arrays %.0f, operator scratch %.0f, rank's halo exchange "
                         "%.0f); raise it to at least %.0f MB or lower --batch-parts", c->memory_budget / 1048576.0,
                         base / 1048576.0, need / 1048576.0, ws / 1048576.0, lb / 1048576.0, graph / 1048576.0,
                         pern / 1048576.0, scr / 1048576.0, xchg / 1048576.0, ceil((double)(base + need) / 1048576.0));
    ac->spill_budget = c->memory_budget - base - need;
    ac->spill_dir = c->store_path ? c->store_path : ".";
    R->anon_need = need;
    return INCA_OK;
}

/* The aggregation operator over the model's ns sites (*ns_out), within --memory-budget. */
static int mb_setup_agg(mb_run_t *R, const dataset_t *d, hist_dtype_t hd, const void *m0, int *ns_out) {
    const train_config_t *c = R->c;
    int rc;
    const int64_t n = R->D.n, nb_max = R->nb_max, halo_max = R->halo_max;   /* the job's, under MPI too */
    kern_ctx_t *kc = R->kc;
    int64_t dims[AGG_MAX_SITES];
    uint8_t fixed[AGG_MAX_SITES];
    const int ns = mb_model_sites(&R->mc, dims, fixed);
    if (ns < 0) return ns;
    *ns_out = ns;
    agg_config_t ac = {.method = R->method, .source = c->refresh_source, .relax = (float)c->refresh_relax, .dtype = hd,
                       .single_buffer = R->o->single_buffer && R->R == R->spe, .nsites = ns, .dims = dims,
                       /* x: NULL while deferred features are placed (mb_features_late); read only by
                        * GAS's halo rows and by an M^0 computed here, neither of which defers */
                       .fixed = fixed, .n = n, .in_dim = R->mc.in_dim, .x = R->x_d, .a = &R->D.a,
                       .nb_max = nb_max, .halo_max = halo_max, .kc = kc, .a_m = R->a_m,
                       .host_tables = c->history_host == TRAIN_HIST_HOST, .x_host = R->D.x,
                       .extra_bytes = {(int64_t)sizeof(int32_t) * (nb_max ? nb_max : 1),
                                       (int64_t)sizeof(int64_t) * (nb_max ? nb_max : 1),
                                       0 /* the batch's rows of x with host features: mb_features_late */},
                       .nnz_max = mb_batch_nnz_bound(&R->D.a, R->p->bounds, R->p->k, c->batch_parts),
                       .m0 = m0, .spill_budget = -1, .x_tf_dim = mb_x_tf_dim(&R->mc),
                       .m0_sparse = R->m0s.rowptr ? &R->m0s : NULL,
                       /* the view loader's layer-wise passes (mb_pass): min(2, L - 1) buffers of
                        * the widest hidden layer */
                       .pass_width = R->stream ? mb_pass_width(R) : 0,
                       .pass_buffers = R->stream ? (model_num_layers(R->m) - 1 < 2 ? model_num_layers(R->m) - 1 : 2) : 0,
                       .pass_dtype = c->pass_dtype,
                       /* gas ranks of one step read the histories as the step found them (under
                        * MPI they pulled their halos before anyone pushed) */
                       .defer_batches = R->workers > 1 && !R->comm && R->method == AGG_GAS ? R->workers : 0,
                       .exchange = R->halo && R->method == AGG_INCAGG && c->refresh_source == AGG_SRC_PUSH ? mb_halo_exchange : NULL, .exchange_ctx = R,
                       .rows_lo = R->comm ? R->plan.node_lo[R->rank] : 0,
                       .rows_hi = R->comm ? R->plan.node_lo[R->rank + 1] : 0};
    if (R->stream && c->memory_budget > 0 && (rc = mb_budget_plan(R, d, &ac, dims, ns)) != INCA_OK) return rc;
    return mb_agg_place(R, &ac);
}

/* The features in host memory: a panel's rows of x and of bf16 M^0 on the device, and for the
 * sites M^0 does not serve (Cluster-GCN; evaluations beside bf16 M^0) Â's panels on the CPU and
 * a pinned panel of their product. */
static int mb_setup_panels_x(mb_run_t *R) {
    kern_ctx_t *kc = R->kc;
    const size_t rows = (size_t)R->pan_rows * (size_t)R->D.f;
    int rc;
    kc_mem_tag(kc, "features");
    if ((rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * rows, (void **)&R->pan_x)) ||
        (R->c->history_dtype == HIST_BF16 && (rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(uint16_t) * rows, (void **)&R->pan_m0))) ||
        (rc = kc_alloc(kc, KERN_MEM_PINNED, sizeof(float) * rows, (void **)&R->pan_h)) ||
        (rc = kc_mat_upload(kc_cpu(), &R->D.a, &R->a_h)))
        return rc;
    if (!(R->apan_h = inca_calloc((size_t)(R->npan ? R->npan : 1), sizeof *R->apan_h))) return INCA_ENOMEM;
    for (int p = 0; p < R->npan; p++)
        if ((rc = kc_mat_rows_view(kc_cpu(), R->a_h, R->pan_r0[p], R->pan_r0[p] + kc_mat_rows(R->apan[p]), &R->apan_h[p])))
            return rc;
    return INCA_OK;
}

/* Host tables with bf16 M^0 beside device features: a refresh pass's first layer reads M^0's
 * panel rows as the steps do, uploaded and decoded (mb_pass_x_host), through the staging that
 * host features have already. */
static int mb_m0_staging(mb_run_t *R) {
    if (!R->dev || !R->stream || R->pan_m0 || R->method != AGG_INCAGG || R->c->history_dtype != HIST_BF16 ||
        !agg_tables_on_host(R->agg))
        return INCA_OK;
    kc_mem_tag(R->kc, "buffers");
    return kc_alloc(R->kc, KERN_MEM_DEVICE, sizeof(uint16_t) * (size_t)R->pan_rows * (size_t)R->D.f, (void **)&R->pan_m0);
}

/* The operator and the deferred features. Tables placed by auto on the device can leave too
 * little room for even the host features' staging; then both go to the host, once. */
int mb_setup_tables(mb_run_t *R, const dataset_t *d, hist_dtype_t hd, const void *m0, int *ns) {
    int rc = mb_setup_agg(R, d, hd, m0, ns);
    if (rc == INCA_OK) rc = mb_features_late(R);
    if (rc == INCA_OK) rc = mb_m0_staging(R);
    if (rc != INCA_ENOMEM || !mb_features_deferred(R) || R->c->history_host != TRAIN_HIST_AUTO || !R->agg ||
        agg_tables_on_host(R->agg) || R->place.budget <= 0 || !strstr(inca_errmsg(), "device memory budget"))
        return rc;   /* host tables help only a device that is full */
    train_log(R->c, TRAIN_LOG_INFO, "history tables in host memory, to make room for the features': %s", inca_errmsg());
    inca_err_clear();
    mb_features_undo(R);
    agg_free(&R->agg);
    R->tables_host = 1;
    if ((rc = mb_setup_agg(R, d, hd, m0, ns)) == INCA_OK && (rc = mb_features_late(R)) == INCA_OK) rc = mb_m0_staging(R);
    return rc;
}
