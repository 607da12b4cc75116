/* Mini-batch trainers (cluster, gas, incagg; see train_mb.h), in named phases: mb_data_prepare
 * (renumber the dataset by the partition, build Â), mb_run_setup (loader, model, optimiser,
 * operator, buffers, checkpoint blobs), mb_run_resume, mb_step (one optimiser step on a batch),
 * mb_refresh (IncAgg, from the configured source), mb_epoch_eval (evaluation and the end of
 * epoch shared with the full-batch trainer, checkpoint) and mb_run_figures.
 * Tested in test_incagg.c (equivalences, determinism, accuracy against full-batch, Cora). */
#include "nn/train_mb.h"
#include "nn/wavg.h"
#include "core/alloc.h"
#include "core/comm.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/backend.h"
#include "loaders/batch.h"
#include "nn/checkpoint.h"
#include "nn/layout.h"
#include "graph/dist.h"
#include "memory/halo.h"
#include "nn/train_xfer.h"
#include <errno.h>
#include <sys/stat.h>
#include "nn/optim.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* CPU seconds of the whole process (all threads, the loader's included): a load-robust
 * companion to wall time on shared machines. */
static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void mb_opts_default(mb_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->eval_every_epoch = 1;
    o->prefetch = 1;
    o->single_buffer = 1;
}

int mb_model_sites(const model_config_t *mc, int64_t *dims, uint8_t *fixed) {
    const int ns = model_num_sites(mc);
    if (ns < 0 || ns > AGG_MAX_SITES)
        return inca_fail(INCA_EINVAL, "mini-batch training supports at most %d aggregation sites, model has %d", AGG_MAX_SITES, ns);
    for (int s = 0; s < ns; s++) {
        dims[s] = model_site_dim(mc, s);
        /* gcn/sage site 0 aggregates x itself (transform_first is off for these operators) */
        fixed[s] = s == 0 && (mc->kind == NN_GCN || mc->kind == NN_SAGE);
    }
    return ns;
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

/* The dataset renumbered by the partition (node v becomes perm[v]: parts are id ranges). */
typedef struct mb_data {
    int64_t n, f;
    float *x;
    int32_t *y;
    int64_t *tr, *va, *te;
    int64_t ntr, nva, nte;
    uint8_t *in_train;
    csr_t a, at;              /* Â and, when it is not symmetric (mean, a directed graph), Âᵀ */
    int x_view;               /* x is the store layout's view (not owned) */
} mb_data_t;

static void mb_data_free(mb_data_t *D) {
    if (!D->x_view) inca_free(D->x);
    inca_free(D->y);
    inca_free(D->tr);
    inca_free(D->va);
    inca_free(D->te);
    inca_free(D->in_train);
    csr_free(&D->a);
    csr_free(&D->at);
    memset(D, 0, sizeof *D);
}

static int mb_data_prepare(const dataset_t *d, const train_config_t *c, const partition_t *p, const int64_t *train_idx,
                           int64_t n_train, int norm, const layout_views_t *view, mb_data_t *D) {
    const int64_t n = d->n, f = d->f;
    csr_t adjp = {0};
    memset(D, 0, sizeof *D);
    D->n = n;
    D->f = f;
    D->ntr = n_train;
    D->nva = d->split_n[SPLIT_VALID];
    D->nte = d->split_n[SPLIT_TEST];
    /* the view path maps Â (and Âᵀ) from the store's layout; the copy path renumbers the graph */
    int rc = view ? INCA_OK : csr_permute(&d->adj, p->perm, &adjp);
    if (rc != INCA_OK) return rc;
    if (view) {   /* renumbered and normalised in the store already */
        if (view->n != n || view->f != f)
            return inca_fail(INCA_EINVAL, "store layout holds %lld x %lld features, the dataset %lld x %lld", (long long)view->n,
                             (long long)view->f, (long long)n, (long long)f);
        D->x = (float *)view->x;   /* never written */
        D->x_view = 1;
    } else D->x = inca_malloc(sizeof *D->x * (size_t)(n * f > 0 ? n * f : 1));
    D->y = inca_malloc(sizeof *D->y * (size_t)(n ? n : 1));
    D->in_train = inca_calloc((size_t)(n ? n : 1), 1);
    D->tr = map_ids(train_idx, n_train, p->perm);
    D->va = map_ids(d->split[SPLIT_VALID], D->nva, p->perm);
    D->te = map_ids(d->split[SPLIT_TEST], D->nte, p->perm);
    if (!D->x || !D->y || !D->in_train || !D->tr || !D->va || !D->te) { rc = INCA_ENOMEM; goto done; }
    for (int64_t v = 0; v < n; v++) {
        if (!view) memcpy(D->x + p->perm[v] * f, d->x + v * f, sizeof(float) * (size_t)f);
        D->y[p->perm[v]] = d->y[v];
    }
    if (!view) train_features_prepare(c->feature_norm, n, f, D->x, D->x);
    for (int64_t i = 0; i < n_train; i++) D->in_train[D->tr[i]] = 1;
    if (view) {
        if (view->a.n_rows != n || (norm == NN_NORM_MEAN && !view->at.rowptr))
            rc = inca_fail(INCA_EINVAL, "store layout: the adjacency does not match the model's normalisation");
        D->a = view->a;     /* owned = 0: csr_free leaves the map alone */
        D->at = view->at;
    } else rc = nn_adj_build(&adjp, norm, &D->a, &D->at);
done:
    csr_free(&adjp);
    if (rc != INCA_OK) mb_data_free(D);
    return rc;
}

#define MB_MAX_WORKERS 64

/* Everything one run owns. */
typedef struct mb_run {
    const train_config_t *c;
    const mb_opts_t *o;
    const partition_t *p;
    int run, method;
    int32_t C;
    mb_data_t D;
    model_config_t mc;
    batch_source_t src;
    batch_opts_t bo;
    batch_loader_t *ld;         /* the loader (rank 0's with --workers) */
    int workers;                /* ranks: simulated (--workers) or MPI processes (1: one process) */
    comm_t *comm;               /* MPI: the job's ranks (c->comm with more than one rank), else NULL */
    int rank;                   /* MPI: this process's rank (0 otherwise) */
    halo_t *halo;               /* MPI incagg push: the rows of S this rank's rows of Â read */
    halo_dev_t *hx;             /* MPI on a device: the halo rows' staging (nn/train_xfer.h) */
    float *gsend, *grecv;       /* MPI: [had, loss, gradients] of this rank / of every rank */
    int64_t gfloats;            /* floats of one rank's record (2 doubles first) */
    char ckdir[4096];           /* MPI: this rank's checkpoint directory */
    dist_plan_t plan;           /* --workers: which parts each rank owns */
    batch_loader_t *lds[MB_MAX_WORKERS];   /* --workers: rank r's loader (lds[0] == ld) */
    int64_t spe_r[MB_MAX_WORKERS];
    float **gacc;               /* --workers: per-parameter gradient sums (context memory) */
    int ngacc;
    model_t *m;
    optim_t *opt;
    agg_t *agg;
    nn_agg_t op_batch, op_full, op_refresh;
    nn_agg_dev_t full;
    kern_ctx_t *kc;
    int dev;                    /* kc is not the CPU: inputs are uploaded, losses read per epoch */
    kern_mat_t *a_m, *at_m;     /* Â, Âᵀ on the context */
    float *x_d;                 /* the renumbered features on the context (D.x itself on the CPU;
                                   NULL when x_host) */
    int x_host;                 /* on a device, the features stay in host memory (D.x): a step's
                                   rows go up with its batch, a pass's panel rows with the panel */
    int32_t *y_d;
    int64_t *tr_d, *va_d, *te_d;
    float *xb_d;                /* a batch's rows of x (device) */
    train_placement_t place;    /* --device-memory-budget: the budget and what went where */
    double *losses_d;           /* spe: each step's loss, read back at the epoch's end */
    train_meter_t *meter_d;
    float *logp, *dlogits, *lorig, *lhost;
    int64_t *iperm, *snodes;    /* on_step: new -> dataset id (n), a batch's loss nodes in it (nbm) */
    float *shost;               /* on_step off the CPU: a batch's logits on the host (nbm x C) */
    double *losses_h;           /* spe (host) */
    uint8_t *step_has_loss;     /* spe: the step had training rows */
    int64_t *lidx;
    ckpt_blob_t *blobs;
    int nblobs;
    int stream;                 /* the view path: layer-wise passes over row panels */
    kern_mat_t **apan;          /* row panels of Â (views of a_m) */
    int npan;
    int64_t pan_rows;
    int64_t *pan_r0;            /* each panel's first row */
    int64_t tr_lo, tr_n, va_lo, va_n, te_lo, te_n;   /* MPI view: this rank's slices of tr/va/te */
    float *logits_all;          /* n x C, the passes' output (context memory) */
    float *pan_in;              /* --pass-dtype bf16: a panel's input rows decoded (context memory) */
    float *pan_x;               /* x_host: a panel's rows of x (context memory) */
    uint16_t *pan_m0;           /* x_host, bf16 M^0 in host memory: a panel's rows as they go up */
    float *pan_h;               /* x_host: a panel's Â X computed on the CPU (pinned) */
    kern_mat_t *a_h, **apan_h;  /* x_host: Â and its panels on the CPU (views of D.a) */
    int tables_host;            /* auto: the tables went to the host to make room for host features' staging */
    int64_t anon_need;          /* --memory-budget: what the batch needs (checked) */
    int64_t anon_base;          /* --memory-budget: the process's anonymous memory at the start */
    int64_t spe, R, gstep;
    int64_t nb_max, halo_max;   /* the largest batch and halo of any rank's loader (the job's) */
    train_best_t best;
    double epoch_s, train_loss;
    int ep0, epochs_run, finished, fused_pending;
    int init_pass;              /* the initial snapshot pass is running (its traffic: setup) */
    wavg_t *avg;                /* the weights evaluated (train_eval_average > 0), else NULL */
    int64_t nva_all;            /* validation nodes of the whole job (a shard holds its share) */
} mb_run_t;

static void mb_features_undo(mb_run_t *R);

static void mb_run_free(mb_run_t *R) {
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

/* The most nonzeros any batch of b parts can hold in its rows of Â: the b fullest parts. */
static int64_t batch_nnz_bound(const csr_t *a, const int64_t *bounds, int64_t k, int64_t b) {
    int64_t *nz = inca_malloc(sizeof *nz * (size_t)(k > 0 ? k : 1));
    if (!nz) return a->nnz;
    for (int64_t i = 0; i < k; i++) nz[i] = a->rowptr[bounds[i + 1]] - a->rowptr[bounds[i]];
    qsort(nz, (size_t)k, sizeof *nz, cmp_i64);
    int64_t sum = 0;
    for (int64_t i = 0; i < b && i < k; i++) sum += nz[k - 1 - i];
    inca_free(nz);
    return sum;
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

/* MPI with the view loader: the layer-wise pass left this rank's rows of the logits only; each
 * rank measures its own train / validation / test ids and the meters are summed in rank order
 * (counts exactly: the accuracies equal one process's; the mean losses are weighted by count,
 * which may differ from one process's sum in the last bits). */
static int mb_eval_ranks(mb_run_t *R, const float *logits, train_epoch_eval_t *e) {
    /* meters hold per-class counts (18 KiB): on the heap; the last entry is the sum */
    train_meter_t *h = inca_malloc(sizeof *h * (size_t)(R->workers + 2));
    if (!h) return INCA_ENOMEM;
    train_meter_t *all = h + 1, *t = h + 1 + R->workers;
    int rc = train_eval_meter(R->kc, logits, R->D.n, R->C, R->y_d, R->tr_d + R->tr_lo, R->tr_n, R->va_d + R->va_lo, R->va_n,
                              R->te_d + R->te_lo, R->te_n, R->logp, R->meter_d, e, h);
    if (rc == INCA_OK) rc = comm_allgather(R->comm, h, sizeof *h, all, COMM_EVAL);
    if (rc == INCA_OK) {
        train_meter_sum(t, all, R->workers);
        train_eval_apply(t, 1, R->nva_all, e);
    }
    inca_free(h);
    return rc;
}

/* A history table's halo rows (h's) from their owners: through the device's staging when the
 * tables are on a device */
static int mb_table_exchange(mb_run_t *R, halo_t *h, hist_t *t, int phase) {
    const int on_dev = R->dev && !agg_tables_on_host(R->agg);
    return train_xfer_halo(h, on_dev ? R->hx : NULL, R->comm, t->dtype == HIST_BF16 ? KERN_BF16 : KERN_F32, t->data, t->f,
                           phase);
}

/* MPI incagg push refresh (agg_config.exchange): S's halo rows from their owners */
static int mb_halo_exchange(void *ctx, int site, hist_t *t) {
    (void)site;
    return mb_table_exchange(ctx, ((mb_run_t *)ctx)->halo, t, COMM_REFRESH);
}

static const char *mb_ckdir(const mb_run_t *R) { return R->comm ? R->ckdir : R->c->checkpoint_dir; }

/* DIR/rank-R-of-P and the manifest (nn/checkpoint.h) */
static int mb_rank_ckdir(mb_run_t *R) {
    return ckpt_rank_dir(R->c, R->rank, R->workers, R->ckdir, sizeof R->ckdir);
}

/* What a checkpoint holds besides the model and the optimiser: every history table of the ns
 * sites and the weight average (its buffer holds the training weights when saved). */
static int mb_ckpt_blobs(mb_run_t *R, int ns) {
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
    if (cnt[0] <= 0) return inca_fail(INCA_EINVAL, "no training nodes");
    if ((rc = train_model_config(d, c, c->seed, &R->mc)) != INCA_OK) return rc;
    if (R->mc.kind == NN_MLP) return inca_fail(INCA_EINVAL, "--model mlp has no aggregation: use --method full");
    /* the operators are affine (IncAgg adds a baseline; GAS adds halo rows of x): site 0 must see
     * x itself, so no transform-first layers in training */
    R->mc.transform_first = 0;
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
        if (c->workers > 1 && c->workers != P)
            return inca_fail(INCA_EINVAL, "--workers %d under mpirun -np %d: the processes are the ranks (omit --workers "
                             "or give %d)", c->workers, P, P);
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

/* The layout's M^0 in the tables' type, which IncAgg's view path borrows (NULL: none). */
static const void *mb_view_m0(const mb_run_t *R) {
    const layout_views_t *v = R->o->view;
    return R->stream && R->method == AGG_INCAGG && v && v->m0 && v->m0_dtype == R->c->history_dtype ? v->m0 : NULL;
}

/* Where the features go (--features-location). A method whose steps read only their batch's
 * rows of x (Cluster-GCN; IncAgg, whose M^0 stands for Â X at the sites reading x) with the view
 * loader's passes may leave them in host memory; they are placed after the tables then (they
 * are read-only, so host features cost a batch's rows going up, host tables their rows going
 * both ways): auto keeps them on the device when they fit beside everything else, tried under
 * the setup limit, so the plan is what was allocated. Else they go up first, as always. */
static int mb_features_deferred(const mb_run_t *R) {
    return R->dev && R->stream && R->c->features_host != TRAIN_HIST_DEVICE &&
           (R->method == AGG_CLUSTER || mb_view_m0(R) != NULL);
}

static int mb_features_early(mb_run_t *R) {
    if (mb_features_deferred(R)) return INCA_OK;
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
static void mb_features_undo(mb_run_t *R) {
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
    R->src = (batch_source_t){.n = n, .f = R->D.f, .x = R->D.x, .y = R->D.y, .a = &R->D.a, .a_symmetric = atp == NULL,
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

/* The pass buffers' width: the widest hidden output of the layer-wise passes. */
static int64_t mb_pass_width(const mb_run_t *R) {
    int64_t wmax = 1;
    for (int li = 0; li + 1 < model_num_layers(R->m); li++)
        wmax = model_site_dim(&R->mc, li + 1) > wmax ? model_site_dim(&R->mc, li + 1) : wmax;
    return wmax;
}

/* The operator, its tables where --history-location puts them. auto on a device: on the device
 * when they fit the budget less its reserve beside everything the run already holds there (the
 * model, the batch's buffers: allocated before), else in host memory. Decided by trying under
 * the context's limit, so the plan is what was allocated, not an estimate of it. */
static int mb_agg_place(mb_run_t *R, agg_config_t *ac) {
    const train_config_t *c = R->c;
    kern_ctx_t *kc = R->kc;
    const int auto_ = R->dev && c->history_host == TRAIN_HIST_AUTO && R->place.budget > 0 && !R->tables_host &&
                      !(R->workers > 1 && R->method == AGG_GAS);   /* GAS ranks hold pushes on the device */
    ac->host_tables = R->dev && (c->history_host == TRAIN_HIST_HOST || R->tables_host);
    kc_mem_tag(kc, "operator");
    if (auto_) {   /* under the setup limit (the budget less the reserve: train_device_budget_begin) */
        int rc = agg_create(ac, &R->agg);
        if (rc != INCA_ENOMEM) return rc;
        agg_free(&R->agg);
        train_log(c, TRAIN_LOG_INFO, "history tables in host memory: %s", inca_errmsg());
        ac->host_tables = 1;
    }
    return agg_create(ac, &R->agg);
}

/* The aggregation operator over the model's ns sites (*ns_out), within --memory-budget. */
static int mb_setup_agg(mb_run_t *R, const dataset_t *d, hist_dtype_t hd, const void *m0, int *ns_out) {
    const train_config_t *c = R->c;
    int rc;
    const int64_t n = R->D.n, nb_max = R->nb_max, halo_max = R->halo_max;   /* the job's, under MPI too */
    const csr_t *atp = R->D.at.rowptr ? &R->D.at : NULL;
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
                       .nnz_max = batch_nnz_bound(&R->D.a, R->p->bounds, R->p->k, c->batch_parts),
                       .m0 = m0, .spill_budget = -1,
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
    if (R->stream && c->memory_budget > 0) {
        /* what one batch needs in anonymous memory whatever the budget; the tables get the rest */
        int64_t maxdim = R->D.f;
        for (int s = 0; s < ns; s++) maxdim = dims[s] > maxdim ? dims[s] : maxdim;
        const int64_t csrb = (int64_t)sizeof(int64_t) * (n + 1) + (int64_t)(sizeof(int32_t) + sizeof(float)) * R->D.a.nnz;
        const int64_t graph = (R->D.a.owned ? csrb * (atp ? 2 : 1) : 0) +
                              (d->adj.rowptr ? (int64_t)sizeof(int64_t) * (n + 1) + (int64_t)sizeof(int32_t) * d->adj.nnz : 0);
        const int64_t ws = model_workspace_bytes(R->m);
        int64_t lb = 0;
        for (int w = 0; w < R->workers; w++) lb += R->lds[w] ? batch_loader_bytes(R->lds[w]) : 0;
        const int64_t pern = n * (int64_t)(sizeof(int32_t) + 1 + sizeof(int64_t)) + 2 * n * (int64_t)sizeof(float) * R->C;
        /* the operator's scratch as it allocates it (GAS's halo and held pushes, IncAgg's deltas and
         * row buffers): an operator made without a budget, whose tables are maps never touched */
        if ((rc = agg_create(&ac, &R->agg)) != INCA_OK) return rc;
        const int64_t scr_min = R->method == AGG_CLUSTER ? 0 : (int64_t)sizeof(float) * (nb_max ? nb_max : 1) * maxdim;
        int64_t scr = agg_scratch_bytes(R->agg);
        agg_free(&R->agg);
        if (scr < scr_min) scr = scr_min;
        const int64_t need = ws + lb + graph + pern + scr, base = R->anon_base;
        if (base + need > c->memory_budget)
            return inca_fail(INCA_EINVAL, "--memory-budget %.0f MB is below the process's baseline %.0f MB (anonymous "
                             "memory when the run starts) plus what one batch needs: %.0f MB (model workspace %.0f, "
                             "loader %.0f, graph %.0f, per-node arrays %.0f, operator scratch %.0f); raise it to at least "
                             "%.0f MB or lower --batch-parts", c->memory_budget / 1048576.0, base / 1048576.0,
                             need / 1048576.0, ws / 1048576.0, lb / 1048576.0, graph / 1048576.0, pern / 1048576.0,
                             scr / 1048576.0, ceil((double)(base + need) / 1048576.0));
        ac.spill_budget = c->memory_budget - base - need;
        ac.spill_dir = c->store_path ? c->store_path : ".";
        R->anon_need = need;
    }
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

/* The operator and the deferred features. Tables placed by auto on the device can leave too
 * little room for even the host features' staging; then both go to the host, once. */
static int mb_setup_tables(mb_run_t *R, const dataset_t *d, hist_dtype_t hd, const void *m0, int *ns) {
    int rc = mb_setup_agg(R, d, hd, m0, ns);
    if (rc == INCA_OK) rc = mb_features_late(R);
    if (rc != INCA_ENOMEM || !mb_features_deferred(R) || R->c->history_host != TRAIN_HIST_AUTO || !R->agg ||
        agg_tables_on_host(R->agg) || R->place.budget <= 0 || !strstr(inca_errmsg(), "device memory budget"))
        return rc;   /* host tables help only a device that is full */
    train_log(R->c, TRAIN_LOG_INFO, "history tables in host memory, to make room for the features': %s", inca_errmsg());
    inca_err_clear();
    mb_features_undo(R);
    agg_free(&R->agg);
    R->tables_host = 1;
    rc = mb_setup_agg(R, d, hd, m0, ns);
    return rc == INCA_OK ? mb_features_late(R) : rc;
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
    if (R->dev && !mb_features_deferred(R) &&
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

static int mb_run_setup(mb_run_t *R, const dataset_t *d, const int64_t *train_idx, int64_t n_train) {
    const train_config_t *c = R->c;
    hist_dtype_t hd = HIST_F32;
    const void *m0 = NULL;
    int rc, ns = 0;
    if (c->memory_budget > 0 && (rc = mb_anon_baseline(R, d)) != INCA_OK) return rc;
    if ((rc = mb_setup_check(R, d, n_train)) != INCA_OK ||
        (rc = mb_data_prepare(d, c, R->p, train_idx, n_train, nn_kind_norm(R->mc.kind), R->o->view, &R->D)) != INCA_OK ||
        (rc = mb_setup_ranks(R)) != INCA_OK || (rc = mb_setup_upload(R)) != INCA_OK ||
        (rc = mb_setup_loader(R, &hd, &m0)) != INCA_OK || (rc = mb_setup_model(R)) != INCA_OK ||
        (R->stream && (rc = mb_setup_panels(R)) != INCA_OK) || (rc = mb_setup_buffers(R)) != INCA_OK ||
        (rc = mb_setup_tables(R, d, hd, m0, &ns)) != INCA_OK) {   /* the tables late: they may move to the host */
        if (rc == INCA_ENOMEM && R->place.budget > 0 && strstr(inca_errmsg(), "device memory budget"))
            return inca_fail_ctx(rc, "refused before training (--loader view keeps one batch's activations on the "
                                 "device instead of every node's, --history-dtype bf16 halves the tables, "
                                 "--history-location host moves them, --features-location host the features)");
        return rc;
    }
    train_device_budget_setup_done(R->kc, &R->place);
    R->op_batch = (nn_agg_t){.forward = agg_forward, .backward = agg_backward, .ctx = R->agg};
    R->op_refresh = (nn_agg_t){.forward = agg_refresh_forward, .backward = NULL, .ctx = R->agg};
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

/* Continue after the last completed epoch of a checkpoint, batches included. */
static int mb_run_resume(mb_run_t *R, const dataset_t *d) {
    ckpt_state_t cs;
    int rc = ckpt_load(mb_ckdir(R), R->run, R->c, d, R->m, R->opt, &cs, R->blobs, R->nblobs);
    if (rc < 0) return rc;
    if (R->comm) {   /* every rank must continue from the same epoch (a job killed between two ranks' saves) */
        int64_t e[2] = {rc == CKPT_NONE ? -1 : cs.epoch, rc == CKPT_NONE ? 1 : -(int64_t)cs.epoch};
        int er = comm_allreduce_max_i64(R->comm, e, 2, COMM_SETUP);
        if (er != INCA_OK) return er;
        if (e[0] != -e[1])
            return inca_fail(INCA_EINVAL, "%s: the ranks' checkpoints end at different epochs (%lld to %lld; -1: none): "
                             "the job stopped between two ranks' saves; train again without --resume",
                             R->c->checkpoint_dir, (long long)-e[1], (long long)e[0]);
    }
    if (rc == CKPT_NONE) return INCA_OK;
    /* the model was saved holding the average, its buffer the training weights (mb_epoch_eval);
     * the tables hold snapshots already (a recompute refresh relaxes from them) */
    if (R->avg && (rc = wavg_swap(R->avg)) != INCA_OK) return rc;
    agg_snapshot_taken(R->agg);
    R->best = cs.best;
    R->train_loss = cs.train_loss;
    R->epoch_s = cs.t_epoch;
    R->ep0 = R->epochs_run = cs.epoch + 1;
    R->finished = cs.finished;
    R->gstep = (int64_t)R->ep0 * R->spe;
    R->bo.first_epoch = R->ep0;
    return mb_loaders_create(R);
}

/* MPI GAS: before a step every rank pulls the current history rows of its batch's halo that
 * other ranks own (b NULL: a rank whose epoch is over still serves the others' pulls). One
 * plan per step (the ids to their owners), one exchange per history site; the owners' rows are
 * as their last step left them, what --workers' held pushes give. */
static int mb_gas_pull(mb_run_t *R, const batch_t *b) {
    const int64_t nh = b ? b->n_halo : 0, lo = R->plan.node_lo[R->rank], hi = R->plan.node_lo[R->rank + 1];
    int64_t *need = inca_malloc(sizeof *need * (size_t)(nh ? nh : 1)), m = 0;
    if (!need) return INCA_ENOMEM;
    for (int64_t i = 0; i < nh; i++)
        if (b->halo[i] < lo || b->halo[i] >= hi) need[m++] = b->halo[i];
    halo_t *h = NULL;
    int rc = halo_plan(R->comm, &R->plan, need, m, COMM_HALO, &h);
    for (int st = 0; st < agg_num_sites(R->agg) && rc == INCA_OK; st++) {
        hist_t *t = agg_table(R->agg, 'H', st);
        if (t) rc = mb_table_exchange(R, h, t, COMM_HALO);
    }
    halo_free(&h);
    inca_free(need);
    return rc;
}

/* Forward and backward of one batch from loader ld, without the optimiser step. Its loss goes to
 * losses_d[slot]; on the CPU it is read (and checked) at once and summed into *loss_sum, off it
 * mb_epoch_losses reads the epoch's at the end. *loss_n counts the batches that had a loss;
 * *had says whether this one did (a batch without training rows has no gradient). Dropout
 * masks use step number dstep. */
static int mb_fwd_bwd(mb_run_t *R, batch_loader_t *ld, int ep, int64_t slot, uint64_t dstep, double *loss_sum,
                      int64_t *loss_n, int *had) {
    kern_ctx_t *kc = R->kc;
    const batch_t *b = NULL;
    const float *logits = NULL;
    *had = 0;
    int rc = batch_loader_next(ld, &b);
    if (rc != INCA_OK) return rc;
    if (R->comm && R->method == AGG_GAS && (rc = mb_gas_pull(R, b)) != INCA_OK) return rc;
    int64_t nidx = 0;
    for (int64_t i = 0; i < b->n_b; i++)
        if (R->D.in_train[b->nodes[i]] && b->y[i] >= 0) R->lidx[nidx++] = i;
    /* labels and loss rows travel with the batch (uploaded with it off the CPU), and its rows of
     * x when the features stay in host memory (the loader gathered them) */
    const void *extra[AGG_MAX_EXTRA] = {b->y, R->lidx, R->x_host ? b->x : NULL};
    const int64_t extra_bytes[AGG_MAX_EXTRA] = {(int64_t)sizeof(int32_t) * b->n_b, (int64_t)sizeof(int64_t) * nidx,
                                                (int64_t)sizeof(float) * b->n_b * R->D.f};
    if ((rc = agg_set_batch_with(R->agg, b, extra, extra_bytes)) != INCA_OK) return rc;
    const float *xb = R->x_host ? agg_batch_extra(R->agg, 2) : b->x;
    const int32_t *yb = agg_batch_extra(R->agg, 0);
    const int64_t *lidx = agg_batch_extra(R->agg, 1);
    if (R->dev && !R->x_host) {   /* the batch's rows of x are gathered on the device from its own copy */
        if ((rc = kc_gather_rows(kc, KERN_F32, R->x_d, R->D.f, agg_batch_nodes(R->agg), 0, b->n_b, R->xb_d))) return rc;
        xb = R->xb_d;
    }
    if ((rc = model_forward(R->m, b->n_b, xb, &R->op_batch, 1, R->c->seed, dstep, &logits)) != INCA_OK) return rc;
    if (nidx == 0) {   /* no training node in this batch: nothing to learn from */
        R->step_has_loss[slot] = 0;
        return INCA_OK;
    }
    if ((rc = kc_softmax_xent(kc, b->n_b, R->C, logits, yb, lidx, nidx, R->logp, R->dlogits, &R->losses_d[slot])) != INCA_OK)
        return rc;
    R->step_has_loss[slot] = 1;
    if (!R->dev) {
        const double loss = R->losses_d[slot];
        if (!isfinite(loss))
            return inca_fail(INCA_ERR, "run %d, epoch %d, step %lld: training loss is not finite (%g); lower --lr?", R->run,
                             ep, (long long)(slot / R->workers), loss);
        *loss_sum += loss;
        (*loss_n)++;
    }
    if (R->c->on_step) {   /* the loss rows' training logits, in the dataset's numbering (a non-finite loss
                              * stopped the CPU above; off it the epoch's end checks) */
        const float *lh = logits;
        if (R->dev) {
            if ((rc = kc_copy(kc, R->shost, logits, sizeof(float) * (size_t)(b->n_b * R->C), KERN_D2H, KERN_STREAM_COMPUTE)))
                return rc;
            lh = R->shost;
        }
        for (int64_t j = 0; j < nidx; j++) R->snodes[j] = R->iperm[b->nodes[R->lidx[j]]];
        if ((rc = R->c->on_step(R->c->on_step_ctx, R->run, ep, R->snodes, R->lidx, nidx, lh, R->C)) != INCA_OK) return rc;
    }
    *had = 1;
    return model_backward(R->m, R->dlogits, &R->op_batch);
}

/* The ranks' gradient sum: gacc <- g (first) or gacc <- g + gacc, per parameter, where g is one
 * rank's gradients, flat in model_param order (NULL: the model's own pp->g). */
static int mb_grad_add(mb_run_t *R, const float *g, int first) {
    int rc = INCA_OK;
    for (int i = 0; i < model_nparams(R->m) && rc == INCA_OK; i++) {
        const nn_param_t *pp = model_param(R->m, i);
        const float *gi = g ? g : pp->g;
        rc = first ? kc_copy(R->kc, R->gacc[i], gi, sizeof(float) * (size_t)pp->n, KERN_D2D, KERN_STREAM_COMPUTE)
                   : kc_axpby(R->kc, pp->n, 1.f, gi, 1.f, R->gacc[i]);
        if (g) g += pp->n;
    }
    return rc;
}

/* The optimiser's step, then the evaluated average's. */
static int mb_opt_step(mb_run_t *R) {
    int rc = optim_step(R->opt);
    return rc == INCA_OK && R->avg ? wavg_update(R->avg) : rc;
}

/* The step's gradient = sum / nc (sum flat in model_param order; NULL: gacc), then the shared
 * optimiser's step; nothing when no rank had a loss. */
static int mb_grad_apply(mb_run_t *R, const float *sum, int nc) {
    int rc = INCA_OK;
    if (nc == 0) return INCA_OK;
    for (int i = 0; i < model_nparams(R->m) && rc == INCA_OK; i++) {
        nn_param_t *pp = model_param(R->m, i);
        const float *src = sum ? sum : R->gacc[i];
        if (sum && R->dev) {   /* the host's sum goes up first (gacc: the ranks' sums, unused under MPI) */
            rc = kc_copy(R->kc, R->gacc[i], sum, sizeof(float) * (size_t)pp->n, KERN_H2D, KERN_STREAM_COMPUTE);
            src = R->gacc[i];
        }
        if (rc == INCA_OK) rc = kc_axpby(R->kc, pp->n, 1.f / (float)nc, src, 0.f, pp->g);
        if (sum) sum += pp->n;
    }
    return rc != INCA_OK ? rc : mb_opt_step(R);
}

/* MPI: this rank's loss at slot (step s of epoch ep; checked: a rank whose loss is not finite
 * ends the job), from the device when on one. */
static int mb_rank_loss(mb_run_t *R, int64_t slot, int ep, int64_t s, double *loss) {
    int rc;
    if (R->dev && (rc = kc_copy(R->kc, &R->losses_h[slot], &R->losses_d[slot], sizeof(double), KERN_D2H,
                                KERN_STREAM_COMPUTE)) != INCA_OK)
        return rc;
    *loss = R->dev ? R->losses_h[slot] : R->losses_d[slot];
    if (!isfinite(*loss))
        return inca_fail(INCA_ERR, "run %d, epoch %d, step %lld, rank %d: training loss is not finite (%g); lower --lr?",
                         R->run, ep, (long long)s, R->rank, *loss);
    return INCA_OK;
}

/* --grad-reduce nccl: [had, loss] of every rank through MPI, the gradients summed on the GPUs
 * into gacc (a rank without a loss adds zeros), then the shared step. */
static int mb_step_nccl(mb_run_t *R, const double own[2], double *loss_sum, int64_t *loss_n) {
    int rc = INCA_OK, nc = 0;
    if ((rc = comm_allgather(R->comm, own, (int64_t)sizeof(double) * 2, R->grecv, COMM_GRAD)) != INCA_OK) return rc;
    for (int r = 0; r < R->workers; r++) {
        double hd[2];
        memcpy(hd, (const char *)R->grecv + sizeof hd * (size_t)r, sizeof hd);
        if (hd[0] == 0) continue;
        *loss_sum += hd[1];
        (*loss_n)++;
        nc++;
    }
    for (int i = 0; i < model_nparams(R->m) && own[0] == 0 && rc == INCA_OK; i++) {
        nn_param_t *pp = model_param(R->m, i);
        rc = kc_zero(R->kc, pp->g, sizeof(float) * (size_t)pp->n, KERN_STREAM_COMPUTE);
    }
    if (rc == INCA_OK && nc > 0) rc = train_xfer_grads_sum_nccl(R->comm, R->m, R->gacc);
    return rc != INCA_OK ? rc : mb_grad_apply(R, NULL, nc);
}

/* mb_step under MPI: this rank's batch (dropout step gstep * P + rank), then every rank's
 * [had, loss] to every rank and the gradients summed in rank order exactly as mb_step sums the
 * simulated ranks (the same operations on the same values: the same bits on every rank,
 * whatever algorithm MPI picks), then the shared optimiser step on every rank. --grad-reduce
 * chain (default) sums through comm_ordered_sum_f32 (about 2 records sent per rank);
 * allgather sends every record to every rank ((P - 1) records) and sums locally. */
static int mb_step_mpi(mb_run_t *R, int ep, int64_t s, double *loss_sum, int64_t *loss_n) {
    const int P = R->workers;
    const int64_t slot = s * P + R->rank;
    double own_sum = 0;
    int64_t own_n = 0;
    int had = 0, rc = INCA_OK;
    R->step_has_loss[slot] = 0;
    if (s < R->spe_r[R->rank])
        rc = mb_fwd_bwd(R, R->ld, ep, slot, (uint64_t)R->gstep * (uint64_t)P + (uint64_t)R->rank, &own_sum, &own_n, &had);
    else if (R->method == AGG_GAS)
        rc = mb_gas_pull(R, NULL);
    if (rc != INCA_OK) return rc;
    double hd[2] = {had ? 1.0 : 0.0, 0.0};
    if (had && (rc = mb_rank_loss(R, slot, ep, s, &hd[1])) != INCA_OK) return rc;
    if (R->c->grad_reduce == TRAIN_GRAD_NCCL) return mb_step_nccl(R, hd, loss_sum, loss_n);
    if (had && (rc = train_xfer_grads_get(R->m, R->gsend + 4)) != INCA_OK) return rc;
    memcpy(R->gsend, hd, sizeof hd);
    int nc = 0;
    if (R->c->grad_reduce == TRAIN_GRAD_ALLGATHER) {   /* every record to every rank, summed here in rank order */
        if ((rc = comm_allgather(R->comm, R->gsend, (int64_t)sizeof(float) * R->gfloats, R->grecv, COMM_GRAD)) != INCA_OK)
            return rc;
        float *sum = R->gsend + 4;   /* sent: free to reuse */
        for (int r = 0; r < P; r++) {
            const float *rec = R->grecv + (int64_t)r * R->gfloats;
            memcpy(hd, rec, sizeof hd);
            if (hd[0] == 0) continue;
            *loss_sum += hd[1];
            (*loss_n)++;
            /* gacc's kc_axpby(1, g, 1, acc) computes these bits: 1 x g + 1 x acc, one rounding */
            if (nc++ == 0) memcpy(sum, rec + 4, sizeof(float) * (size_t)(R->gfloats - 4));
            else for (int64_t i = 0; i < R->gfloats - 4; i++) sum[i] = rec[4 + i] + sum[i];
        }
        return mb_grad_apply(R, sum, nc);
    }
    /* the chain: the headers to everyone, the gradients summed in rank order (core/comm.h) */
    uint8_t contrib[MB_MAX_WORKERS];
    if ((rc = comm_allgather(R->comm, R->gsend, (int64_t)sizeof hd, R->grecv, COMM_GRAD)) != INCA_OK) return rc;
    for (int r = 0; r < P; r++) {
        memcpy(hd, (const char *)R->grecv + sizeof hd * (size_t)r, sizeof hd);
        contrib[r] = hd[0] != 0;
        if (!contrib[r]) continue;
        *loss_sum += hd[1];
        (*loss_n)++;
        nc++;
    }
    if ((rc = comm_ordered_sum_f32(R->comm, R->gsend + 4, R->gfloats - 4, contrib, COMM_GRAD)) != INCA_OK) return rc;
    return mb_grad_apply(R, R->gsend + 4, nc);
}

/* One optimiser step at step s of epoch ep. One process: the next batch. --workers P: every rank
 * that still has a batch this epoch runs its own (dropout step gstep * P + r), the gradients are
 * summed in rank order and divided by the number of ranks that had a loss (what an MPI job's
 * reduction gives every rank alike), then one step of the shared optimiser. GAS holds the
 * ranks' history pushes until all of them ran: a rank's halo pull sees the histories as the
 * step began, as a per-step halo exchange between processes would. */
static int mb_step(mb_run_t *R, int ep, int64_t s, double *loss_sum, int64_t *loss_n) {
    int rc, had = 0;
    if (R->comm) return mb_step_mpi(R, ep, s, loss_sum, loss_n);
    if (R->workers == 1) {
        rc = mb_fwd_bwd(R, R->ld, ep, s, (uint64_t)R->gstep, loss_sum, loss_n, &had);
        return rc != INCA_OK || !had ? rc : mb_opt_step(R);
    }
    int nc = 0;
    for (int r = 0; r < R->workers; r++) {
        const int64_t slot = s * R->workers + r;
        R->step_has_loss[slot] = 0;
        if (s >= R->spe_r[r]) continue;   /* this rank's epoch is over */
        rc = mb_fwd_bwd(R, R->lds[r], ep, slot, (uint64_t)R->gstep * (uint64_t)R->workers + (uint64_t)r, loss_sum, loss_n, &had);
        if (rc == INCA_OK && had) rc = mb_grad_add(R, NULL, nc++ == 0);
        if (rc != INCA_OK) return rc;
    }
    /* GAS: every rank pulled the histories as the step found them; now the step's pushes land */
    if ((rc = agg_commit_pushes(R->agg)) != INCA_OK) return rc;
    return mb_grad_apply(R, NULL, nc);
}

/* Off the CPU: the epoch's step losses, read back once, checked and summed in step order (the
 * CPU's sum). A non-finite one names its step; the epoch is not evaluated or checkpointed. */
static int mb_epoch_losses(mb_run_t *R, int ep, double *loss_sum, int64_t *loss_n) {
    if (!R->dev || R->comm) return INCA_OK;   /* under MPI every step's losses came with the records */
    const int64_t nslots = R->spe * R->workers;   /* step-major, rank-minor: the CPU's order */
    int rc = kc_copy(R->kc, R->losses_h, R->losses_d, sizeof(double) * (size_t)nslots, KERN_D2H, KERN_STREAM_COMPUTE);
    if (rc != INCA_OK) return rc;
    for (int64_t s = 0; s < nslots; s++) {
        if (!R->step_has_loss[s]) continue;
        if (!isfinite(R->losses_h[s]))
            return inca_fail(INCA_ERR, "run %d, epoch %d, step %lld: training loss is not finite (%g); lower --lr?", R->run,
                             ep, (long long)(s / R->workers), R->losses_h[s]);
        *loss_sum += R->losses_h[s];
        (*loss_n)++;
    }
    return INCA_OK;
}

/* ---- the view path's layer-wise passes ----
 * Layer l runs on every row panel of a batch's size before layer l+1 starts; the operator of a
 * panel aggregates the layer's input of every node (x, then the previous layer's output), so
 * only the tables and two pass buffers scale with n. A refresh pass also stores S and M of the
 * panel's rows at each history site (agg_refresh_rows), and writes a layer's output straight
 * into the next site's S when that can serve as the next input (agg_s_direct). With
 * --pass-dtype bf16 the buffers hold each hidden layer's output rounded to bf16 (half the bytes):
 * the next layer aggregates them with the bf16 SpMM and reads its panel's rows decoded. */
typedef struct mb_pass_op {
    mb_run_t *R;
    int refresh, skip_s;
    int64_t r0;
    const void *hfull;    /* the layer's input for every node (context memory), fp32 or bf16 */
    int hbf16;            /* hfull is bf16 */
    int xh;               /* hfull is the features in host memory (R->x_host, the first layer) */
    int pan;              /* the panel's index */
    kern_mat_t *rows;     /* Â's rows of the panel */
} mb_pass_op_t;

/* The features in host memory, a site reading them: its panel's Â X from M^0's rows (host
 * tables: uploaded, bf16 decoded on the device), else computed on the CPU and uploaded. */
static int mb_pass_x_host(mb_run_t *R, const mb_pass_op_t *P, const hist_t *m0, int64_t n, int64_t f, float *out) {
    kern_ctx_t *kc = R->kc;
    int rc;
    if (m0 && m0->dtype == HIST_F32)
        return kc_copy(kc, out, (const float *)m0->data + P->r0 * f, sizeof(float) * (size_t)(n * f), KERN_H2D,
                       KERN_STREAM_COMPUTE);
    if (m0) {
        if ((rc = kc_copy(kc, R->pan_m0, (const uint16_t *)m0->data + P->r0 * f, sizeof(uint16_t) * (size_t)(n * f),
                          KERN_H2D, KERN_STREAM_COMPUTE)))
            return rc;
        return kc_decode(kc, KERN_BF16, n * f, R->pan_m0, out);
    }
    /* the previous panel's upload out of pan_h must be done before the CPU rewrites it */
    if ((rc = kc_sync(kc)) || (rc = kc_spmm(kc_cpu(), R->apan_h[P->pan], NULL, R->D.x, f, 1.f, 0.f, R->pan_h)))
        return rc;
    return kc_copy(kc, out, R->pan_h, sizeof(float) * (size_t)(n * f), KERN_H2D, KERN_STREAM_COMPUTE);
}

static int mb_pass_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    mb_pass_op_t *P = ctx;
    mb_run_t *R = P->R;
    (void)in;   /* eval mode: in == in_raw, the panel's rows of hfull */
    /* IncAgg's stored M^0 = ÂX serves a site reading x: always in a refresh (what training reads
     * is what the refresh keeps), and in an evaluation when it holds the exact fp32 product */
    const hist_t *m0 = agg_m0(R->agg, site);
    /* with host tables M^0 is host memory: the device's copy of x is read instead, unless x
     * stayed in host memory too (then M^0's rows go up) */
    const int m0_ok = m0 && (P->refresh || m0->dtype == HIST_F32), m0_host = R->dev && agg_tables_on_host(R->agg);
    int rc;
    if (m0_ok && !m0_host) rc = kc_gather_rows(R->kc, m0->dtype == HIST_BF16 ? KERN_BF16 : KERN_F32, m0->data, f, NULL, P->r0, n, out);
    else if (P->xh) rc = mb_pass_x_host(R, P, m0_ok ? m0 : NULL, n, f, out);
    else rc = P->hbf16 ? kc_spmm_bf16(R->kc, P->rows, P->hfull, f, out) : kc_spmm(R->kc, P->rows, NULL, P->hfull, f, 1.f, 0.f, out);
    if (rc == INCA_OK && P->refresh) rc = agg_refresh_rows(R->agg, site, P->r0, n, in_raw, out, P->skip_s);
    return rc;
}

/* Layer li of a pass over every panel: input P->hfull (fin wide), output into hout (fout wide;
 * bf16 when hout_bf16). */
static int mb_pass_layer(mb_run_t *R, mb_pass_op_t *P, int li, int64_t fin, void *hout, int hout_bf16, int64_t fout) {
    kern_ctx_t *kc = R->kc;
    nn_agg_t op = {.forward = mb_pass_forward, .backward = NULL, .ctx = P};
    const int64_t es_in = P->hbf16 ? 2 : 4;
    int rc = INCA_OK;
    for (int p = 0; p < R->npan && rc == INCA_OK; p++) {
        const float *out = NULL;
        P->r0 = R->pan_r0[p];
        P->rows = R->apan[p];
        P->pan = p;
        const int64_t np = kc_mat_rows(R->apan[p]);
        if ((!R->dev || P->xh) && p + 1 < R->npan) {   /* the next panel's input (and M^0) rows */
            const int64_t r1 = R->pan_r0[p + 1], n1 = kc_mat_rows(R->apan[p + 1]);
            const hist_t *m0 = agg_m0(R->agg, li);
            /* read-ahead of store views and spilled tables (file pages; anonymous memory ignores it) */
            inca_madvise((const char *)P->hfull + r1 * fin * es_in, n1 * fin * es_in, MADV_WILLNEED);
            if (m0 && (!R->dev || agg_tables_on_host(R->agg))) {
                const int64_t es = m0->dtype == HIST_BF16 ? 2 : 4;
                inca_madvise((const char *)m0->data + r1 * fin * es, n1 * fin * es, MADV_WILLNEED);
            }
        }
        const float *in = (const float *)P->hfull + P->r0 * fin;
        if (P->xh) {   /* the panel's rows of x, from host memory */
            rc = kc_copy(kc, R->pan_x, in, sizeof(float) * (size_t)(np * fin), KERN_H2D, KERN_STREAM_COMPUTE);
            in = R->pan_x;
        } else if (P->hbf16) {   /* the panel's rows, decoded */
            rc = kc_decode(kc, KERN_BF16, np * fin, (const uint16_t *)P->hfull + P->r0 * fin, R->pan_in);
            in = R->pan_in;
        }
        if (rc == INCA_OK) rc = model_forward_layer(R->m, li, np, in, &op, &out);
        if (rc == INCA_OK && hout_bf16) rc = kc_encode(kc, KERN_BF16, np * fout, out, (uint16_t *)hout + P->r0 * fout);
        else if (rc == INCA_OK)
            rc = kc_copy(kc, (float *)hout + P->r0 * fout, out, sizeof(float) * (size_t)(np * fout), KERN_D2D,
                         KERN_STREAM_COMPUTE);
    }
    return rc;
}

static int mb_pass(mb_run_t *R, int refresh, const float **logits) {
    const int L = model_num_layers(R->m);
    const int pbf16 = agg_pass_dtype(R->agg) == HIST_BF16;
    int64_t fin = R->D.f;
    int ping = 0, skip_cur = 0, rc = agg_flush(R->agg);
    mb_pass_op_t P = {.R = R, .refresh = refresh, .hfull = R->x_host ? R->D.x : R->x_d, .xh = R->x_host};
    const int64_t wmax = mb_pass_width(R);
    for (int li = 0; li < L && rc == INCA_OK; li++) {
        const int last = li == L - 1;
        const int64_t fout = last ? R->C : model_site_dim(&R->mc, li + 1);
        void *hout = NULL;
        int skip_next = 0, obf16 = 0;
        if (last) hout = R->logits_all;
        else if (refresh && (hout = agg_s_direct(R->agg, li + 1))) skip_next = 1;
        else if ((rc = agg_pass_buffer(R->agg, ping, wmax, &hout)) == INCA_OK) {
            ping ^= 1;
            obf16 = pbf16;
        }
        P.skip_s = skip_cur;
        if (rc == INCA_OK) rc = mb_pass_layer(R, &P, li, fin, hout, obf16, fout);
        /* MPI: the next layer's rows of Â read the halo's rows of this output, from their owners */
        if (rc == INCA_OK && R->comm && !last)
            rc = train_xfer_halo(R->halo, R->dev ? R->hx : NULL, R->comm, obf16 ? KERN_BF16 : KERN_F32, hout, fout,
                                 R->init_pass ? COMM_SETUP : refresh ? COMM_REFRESH : COMM_EVAL);
        P.hfull = hout;
        P.hbf16 = obf16;
        P.xh = 0;
        fin = fout;
        skip_cur = skip_next;
    }
    if (rc == INCA_OK) *logits = R->logits_all;
    return rc;
}

/* An IncAgg refresh that is due now. The recompute source shares the pass with an evaluation
 * due at this epoch end (fused_pending) unless --refresh-eval separate; otherwise it runs its
 * own eval-mode pass. */
static int mb_refresh(mb_run_t *R, mb_stats_t *st, int shares_eval) {
    int rc;
    const int avg_rows = R->avg && train_refresh_averaged(R->c);   /* rows of the averaged weights */
    if (shares_eval && train_refresh_fused(R->c)) {
        R->fused_pending = 1;   /* the evaluation's pass runs with the refresh's weights */
        return INCA_OK;
    }
    /* on a device the steps were drained before (their time is theirs); the refresh is drained
     * after, so its time is its own */
    double t0 = inca_now(), c0 = cpu_now();
    int64_t cp0[3], cp1[3];
    kc_mem_copied(R->kc, cp0);
    if (agg_source(R->agg) == AGG_SRC_RECOMPUTE) {
        const float *logits;
        rc = avg_rows ? wavg_swap(R->avg) : INCA_OK;
        const int swapped = avg_rows && rc == INCA_OK;
        if (rc == INCA_OK && R->stream) rc = mb_pass(R, 1, &logits);
        else if (rc == INCA_OK) {
            model_set_eval_transform_first(R->m, 0);   /* the refresh stores each layer's own input */
            rc = model_forward(R->m, R->D.n, R->x_d, &R->op_refresh, 0, R->c->seed, (uint64_t)R->gstep, &logits);
        }
        const int back = swapped ? wavg_swap(R->avg) : INCA_OK;   /* training goes on with its weights */
        if (rc == INCA_OK) rc = back;
    } else {
        rc = agg_refresh(R->agg);
    }
    if (rc == INCA_OK && R->dev) rc = kc_sync(R->kc);
    kc_mem_copied(R->kc, cp1);
    R->place.refresh_h2d += cp1[KERN_H2D] - cp0[KERN_H2D];
    R->place.refresh_d2h += cp1[KERN_D2H] - cp0[KERN_D2H];
    R->place.refreshes++;
    st->refresh_s_total += inca_now() - t0;
    st->refresh_cpu_s += cpu_now() - c0;
    st->refreshes++;
    return rc;
}

/* The evaluation at the end of epoch ep (a refresh riding on it) and its bookkeeping. */
static int mb_eval_pass(mb_run_t *R, mb_stats_t *st, int ep, double te0) {
    const train_config_t *c = R->c;
    const int64_t n = R->D.n;
    const float *logits = NULL;
    int rc = agg_flush(R->agg);   /* host tables: the last pushes land before anything reads them */
    if (rc != INCA_OK) return rc;
    double t0 = inca_now(), c0 = cpu_now();
    /* the full-graph SpMM is linear: narrowing layers aggregate after W; a refresh must see (and
     * store) each layer's input itself */
    if (R->stream) rc = mb_pass(R, R->fused_pending, &logits);
    else {
        model_set_eval_transform_first(R->m, !R->fused_pending);
        rc = model_forward(R->m, n, R->x_d, R->fused_pending ? &R->op_refresh : &R->op_full, 0, c->seed,
                           (uint64_t)R->gstep, &logits);
    }
    if (rc == INCA_OK && R->dev) rc = kc_sync(R->kc);
    if (rc != INCA_OK) return rc;
    double dt = inca_now() - t0;
    if (R->fused_pending) { st->refresh_s_total += dt; st->refresh_cpu_s += cpu_now() - c0; st->refreshes++; st->fused++; }
    else { st->eval_s_total += dt; st->eval_cpu_s += cpu_now() - c0; st->evals++; }
    R->fused_pending = 0;
    train_epoch_eval_t e = {.run = R->run, .epoch = ep, .train_loss = R->train_loss, .n_valid = R->nva_all};
    if (R->comm && R->stream) rc = mb_eval_ranks(R, logits, &e);
    else rc = train_eval_dev(R->kc, logits, n, R->C, R->y_d, R->tr_d, R->D.ntr, R->va_d, R->D.nva, R->te_d, R->D.nte,
                             R->logp, R->meter_d, &e);
    if (rc != INCA_OK) return rc;
    if (R->lorig) {   /* the hooks see the dataset's own node order */
        const float *lh = logits;
        if (R->lhost) {
            if ((rc = kc_copy(R->kc, R->lhost, logits, sizeof(float) * (size_t)(n * R->C), KERN_D2H, KERN_STREAM_COMPUTE)))
                return rc;
            lh = R->lhost;
        }
        for (int64_t v = 0; v < n; v++) memcpy(R->lorig + v * R->C, lh + R->p->perm[v] * R->C, sizeof(float) * (size_t)R->C);
    }
    e.epoch_s = inca_now() - te0;
    R->epoch_s += e.epoch_s;
    return train_epoch_end(c, &e, R->lorig, n, R->C, &R->best);
}

/* Evaluation at the end of epoch ep, the end of epoch every trainer shares, the checkpoint.
 * With a weight average, the model holds the average from the evaluation to the checkpoint
 * (what `inca predict` loads is what was evaluated; the training weights are a blob of it, in
 * the average's buffer) and the training weights again after. */
static int mb_epoch_eval(mb_run_t *R, const dataset_t *d, mb_stats_t *st, int ep, double te0) {
    const train_config_t *c = R->c;
    int rc = R->avg ? wavg_swap(R->avg) : INCA_OK;
    if (rc == INCA_OK) rc = mb_eval_pass(R, st, ep, te0);
    const int stop = c->patience > 0 && R->best.since >= c->patience;
    if (rc == INCA_OK && c->checkpoint_dir) {   /* after the evaluation: no refresh is pending here */
        /* only the epoch time carries over a resume: the step / refresh / eval means are this
         * process's (mb_stats_t counts its own steps) */
        ckpt_state_t cs = {.epoch = ep, .finished = stop, .best = R->best, .train_loss = R->train_loss, .t_epoch = R->epoch_s};
        rc = ckpt_save(mb_ckdir(R), R->run, c, d, R->m, R->opt, &cs, R->blobs, R->nblobs);
    }
    const int back = R->avg ? wavg_swap(R->avg) : INCA_OK;
    if (rc != 0) return rc;
    if (back != INCA_OK) return back;
    if (stop) R->finished = 1;
    return INCA_OK;
}

static void mb_stats_reset_times(mb_run_t *R, mb_stats_t *st) {
    st->step_s_total = st->refresh_s_total = st->eval_s_total = 0;
    st->step_cpu_s = st->refresh_cpu_s = st->eval_cpu_s = 0;
    st->steps = st->refreshes = st->evals = st->fused = 0;
    R->epoch_s = 0;
    agg_reset_times(R->agg);
}

static int mb_run_figures(mb_run_t *R, train_result_t *r, mb_stats_t *st) {
    int rc = agg_flush(R->agg);
    if (rc != INCA_OK) return rc;
    train_result_best(r, &R->best);
    r->epochs = R->epochs_run;
    r->train_loss = R->train_loss;
    r->runs = 1;
    const int warm = R->o->warmup_epochs;
    st->timed_epochs = R->epochs_run > warm ? R->epochs_run - warm : R->epochs_run;
    r->epoch_time_s = st->timed_epochs ? R->epoch_s / (double)st->timed_epochs : 0;
    r->step_time_s = st->steps ? st->step_s_total / (double)st->steps : 0;
    r->refresh_time_s = st->refreshes ? st->refresh_s_total / (double)st->refreshes : 0;
    r->eval_time_s = st->evals ? st->eval_s_total / (double)st->evals : 0;
    r->refreshes = st->refreshes;
    r->evals = st->evals;
    r->fused = st->fused;
    r->peak_rss_mb = inca_peak_rss_mb();
    st->wait_s = st->build_s = st->loader_bytes = 0;
    for (int w = 0; w < R->workers; w++) {   /* every rank's loader (this process's) */
        if (!R->lds[w]) continue;
        st->wait_s += batch_loader_wait_s(R->lds[w]);
        st->build_s += batch_loader_build_s(R->lds[w]);
        st->loader_bytes += batch_loader_bytes(R->lds[w]);
    }
    r->loader_wait_s = st->wait_s;
    r->steps_s = st->step_s_total;
    st->table_bytes = r->table_bytes = agg_table_bytes(R->agg);
    st->scratch_bytes = r->scratch_bytes = agg_scratch_bytes(R->agg);
    r->history_on_host = agg_tables_on_host(R->agg);
    train_device_budget_end(R->kc, &R->place);
    r->placement = R->place;
    r->placement.tables_host = r->history_on_host;
    /* table_bytes counts the layer-wise passes' buffers too, which live on the device */
    r->placement.host_table_bytes = r->history_on_host ? r->table_bytes - kc_mem_tag_now(R->kc, "pass buffers") : 0;
    r->features_on_host = R->x_host || !R->dev;   /* the CPU's memory is the host's */
    r->placement.host_feature_bytes = R->x_host ? (int64_t)sizeof(float) * R->D.n * R->D.f : 0;
    st->spilled_bytes = r->spilled_bytes = agg_spilled_bytes(R->agg);
    st->anon_need_bytes = r->memory_need_bytes = R->anon_need;
    st->anon_baseline_bytes = r->memory_baseline_bytes = R->anon_base;
    snprintf(r->loader, sizeof r->loader, "%s", R->stream ? "view" : "copy");
    for (int ph = 0; ph < COMM_NPHASES; ph++) {
        r->comm_bytes[ph] = comm_bytes_sent(R->comm, ph);
        r->comm_s[ph] = comm_seconds(R->comm, ph);
    }
    if (R->c->keep_params) {   /* the parameters that were evaluated */
        if (R->avg && (rc = wavg_swap(R->avg)) != INCA_OK) return rc;
        rc = train_keep_params(R->kc, R->m, r);
        const int back = R->avg ? wavg_swap(R->avg) : INCA_OK;
        if (rc != INCA_OK) return rc;
        if (back != INCA_OK) return back;
    }
    r->nparams = 0;
    for (int i = 0; i < model_nparams(R->m); i++) r->nparams += model_param(R->m, i)->n;
    r->steps_per_epoch = R->spe;
    st->steps_per_epoch = R->spe;
    agg_times(R->agg, &st->agg_fwd_s, &st->agg_bwd_s, &st->intra_fraction);
    return tables_copy(agg_arena(R->agg), st);
}

int mb_train(const dataset_t *d, const train_config_t *c, const int64_t *train_idx, int64_t n_train,
             int run, const partition_t *p, const mb_opts_t *o, train_result_t *r, mb_stats_t *st) {
    mb_stats_t stl;
    mb_run_t R;
    memset(r, 0, sizeof *r);
    memset(&R, 0, sizeof R);
    if (!st) st = &stl;
    memset(st, 0, sizeof *st);
    R.c = c;
    R.o = o;
    R.p = p;
    R.run = run;
    comm_reset_bytes(c->comm);   /* the figures are this run's */
    int rc = mb_run_setup(&R, d, train_idx, n_train);
    if (rc == INCA_OK && c->checkpoint_dir && c->resume && (rc = mb_run_resume(&R, d)) == INCA_OK)
        rc = train_resume_note(c, run, R.ep0);
    /* IncAgg starts from exact snapshots of the initial model (one eval-mode pass through the
     * refresh operator, whichever the source); a resumed run has its tables from the checkpoint */
    if (rc == INCA_OK && R.method == AGG_INCAGG && R.ep0 == 0) {
        const float *logits;
        double t0 = inca_now();
        R.init_pass = 1;   /* its halo rows count as setup: a one-off, not a refresh */
        if (R.stream) rc = mb_pass(&R, 1, &logits);
        R.init_pass = 0;
        if (!R.stream) {
            model_set_eval_transform_first(R.m, 0);
            rc = model_forward(R.m, R.D.n, R.x_d, &R.op_refresh, 0, c->seed, 0, &logits);
        }
        st->init_s = inca_now() - t0;
        agg_snapshot_taken(R.agg);
    }
    for (int ep = R.ep0; rc == INCA_OK && ep < c->epochs && !R.finished; ep++) {
        if (ep == o->warmup_epochs && ep > 0) mb_stats_reset_times(&R, st);   /* warm-up epochs leave the figures */
        const double te0 = inca_now();
        double loss_sum = 0;
        int64_t loss_n = 0;
        const int eval_due = (o->eval_every_epoch && train_eval_due(c, ep)) || ep == c->epochs - 1;
        /* on a device the steps are queued asynchronously (the next batch's upload overlaps the
         * current compute): the queue is drained at the end of the loop and before a refresh,
         * and the drain counts as step time, so the step total is execution, not launches */
        for (int64_t s = 0; rc == INCA_OK && s < R.spe; s++) {
            double ts0 = inca_now(), tc0 = cpu_now();
            int64_t cp0[3], cp1[3];
            kc_mem_copied(R.kc, cp0);
            rc = mb_step(&R, ep, s, &loss_sum, &loss_n);
            if (rc == INCA_OK && R.dev && (s == R.spe - 1 || (R.method == AGG_INCAGG && (R.gstep + 1) % R.R == 0)))
                rc = kc_sync(R.kc);
            kc_mem_copied(R.kc, cp1);
            R.place.step_h2d += cp1[KERN_H2D] - cp0[KERN_H2D];
            R.place.step_d2h += cp1[KERN_D2H] - cp0[KERN_D2H];
            R.place.steps++;
            st->step_s_total += inca_now() - ts0;
            st->step_cpu_s += cpu_now() - tc0;
            st->steps++;
            R.gstep++;
            /* with evaluation only after the last epoch (benchmarks) a refresh stays a refresh */
            if (rc == INCA_OK && R.method == AGG_INCAGG && R.gstep % R.R == 0)
                rc = mb_refresh(&R, st, s == R.spe - 1 && eval_due && o->eval_every_epoch);
        }
        if (rc == INCA_OK) rc = mb_epoch_losses(&R, ep, &loss_sum, &loss_n);
        if (rc != INCA_OK) break;
        R.epochs_run = ep + 1;
        R.train_loss = loss_n ? loss_sum / (double)loss_n : 0;
        if (eval_due) rc = mb_epoch_eval(&R, d, st, ep, te0);
        else R.epoch_s += inca_now() - te0;
    }
    if (rc == INCA_OK) rc = mb_run_figures(&R, r, st);
    mb_run_free(&R);
    if (st == &stl) mb_stats_free(st);
    return rc;
}
