/* Data-parallel full-batch training over MPI ranks or thread ranks; see train_dist.h. */
#include "nn/train_dist.h"
#include "nn/train_xfer.h"
#include "core/alloc.h"
#include "core/comm.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/dist.h"
#include "kernels/backend.h"
#include "memory/halo.h"
#include "nn/checkpoint.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FD_MAX_RANKS 64
#define FD_MAX_WIDTHS 8

/* What every rank reads and none writes (shared by the thread ranks): the dataset in the
 * partition's order. */
typedef struct fd_shared {
    int64_t n, f, C;
    const float *x;     /* features after --feature-norm, in the dataset's order */
    float *xw;          /* owned copy behind x when normalised */
    int64_t *inv;       /* inv[new id] = dataset id */
    int32_t *y;         /* labels by new id */
    int64_t *ids[3];    /* train, valid, test: new ids, sorted */
    int64_t nids[3];
    csr_t adjp;         /* the graph renumbered */
    csr_t a, at;        /* Â and, when not symmetric (mean), Âᵀ; empty for mlp */
    dist_plan_t plan;
    int sparse;         /* the features go in as a CSR (bag of words: <= 25% nonzero) */
    model_config_t mc;
} fd_shared_t;

static void fd_shared_free(fd_shared_t *S) {
    inca_free(S->xw);
    inca_free(S->inv);
    inca_free(S->y);
    for (int k = 0; k < 3; k++) inca_free(S->ids[k]);
    csr_free(&S->adjp);
    csr_free(&S->a);
    csr_free(&S->at);
    dist_plan_free(&S->plan);
    memset(S, 0, sizeof *S);
}

static int fd_shared_make(const dataset_t *d, const train_config_t *c, const int64_t *tidx, int64_t ntr,
                          const partition_t *p, int ranks, fd_shared_t *S) {
    const int64_t n = d->n, f = d->f;
    int rc;
    memset(S, 0, sizeof *S);
    S->n = n;
    S->f = f;
    if ((rc = train_model_config(d, c, c->seed, &S->mc))) return rc;
    S->mc.transform_first = 1;   /* the distributed SpMM is linear, as the one-process operator */
    S->C = S->mc.out_dim;
    const int norm = nn_kind_norm(S->mc.kind);
    if ((rc = csr_permute(&d->adj, p->perm, &S->adjp))) goto fail;
    if (norm != NN_NORM_NONE && (rc = nn_adj_build(&S->adjp, norm, &S->a, &S->at))) goto fail;
    if ((rc = dist_plan_make(&S->adjp, p->bounds, p->k, ranks, &S->plan))) goto fail;
    S->x = d->x;
    if (c->feature_norm != TRAIN_FEATNORM_NONE) {
        if (!(S->xw = inca_malloc(sizeof(float) * (size_t)(n * f > 0 ? n * f : 1)))) { rc = INCA_ENOMEM; goto fail; }
        train_features_prepare(c->feature_norm, n, f, d->x, S->xw);
        S->x = S->xw;
    }
    if (!c->dense_input) {   /* one decision for the job, from all the features (train_full's rule) */
        int64_t nnz = 0;
        for (int64_t i = 0; i < n * f; i++) nnz += S->x[i] != 0.0f;
        S->sparse = (double)nnz <= 0.25 * (double)n * (double)f;
    }
    S->inv = inca_malloc(sizeof *S->inv * (size_t)(n ? n : 1));
    S->y = inca_malloc(sizeof *S->y * (size_t)(n ? n : 1));
    const int64_t *src[3] = {tidx, d->split[SPLIT_VALID], d->split[SPLIT_TEST]};
    const int64_t cnt[3] = {ntr, d->split_n[SPLIT_VALID], d->split_n[SPLIT_TEST]};
    for (int k = 0; k < 3; k++) {
        if (!(S->ids[k] = inca_malloc(sizeof(int64_t) * (size_t)(cnt[k] ? cnt[k] : 1)))) { rc = INCA_ENOMEM; goto fail; }
        /* training ids without a label are left out: the loss is the mean over the labelled ones
         * (one process's), and each rank's share of it weighs by its count of them */
        S->nids[k] = 0;
        for (int64_t i = 0; i < cnt[k]; i++)
            if (k != SPLIT_TRAIN || d->y[src[k][i]] >= 0) S->ids[k][S->nids[k]++] = p->perm[src[k][i]];
        qsort(S->ids[k], (size_t)S->nids[k], sizeof(int64_t), inca_cmp_i64);
    }
    if (S->nids[SPLIT_TRAIN] == 0) {
        rc = inca_fail(INCA_EINVAL, "none of the %lld training nodes has a label", (long long)ntr);
        goto fail;
    }
    if (!S->inv || !S->y) { rc = INCA_ENOMEM; goto fail; }
    for (int64_t v = 0; v < n; v++) {
        S->inv[p->perm[v]] = v;
        S->y[p->perm[v]] = d->y[v];
    }
    return INCA_OK;
fail:
    fd_shared_free(S);
    return rc;
}

/* The distributed operator of one rank: tables of its own and halo rows only, in the local
 * numbering of memory/halo.h (ascending global ids), one per site width: a rank holds its share
 * of the graph and of every table, not n rows of each. */
typedef struct fd_op {
    kern_ctx_t *kc;
    kern_mat_t *own_a, *own_at;   /* the rank's rows of Â and Âᵀ (NULL: Â symmetric), columns local */
    csr_t la, lat;                /* ... on the host (the CPU context's matrices borrow them) */
    halo_t *halo;
    halo_dev_t *hx;               /* on a device: the halo rows' staging (the tables are device memory) */
    comm_t *comm;
    int64_t nb, no, nl;           /* own rows at [nb, nb + no) of the tables' nl rows (halo_set_local) */
    int ntab;
    int64_t tab_f[FD_MAX_WIDTHS];
    float *tab[FD_MAX_WIDTHS];
    int phase;                    /* COMM_HALO in training, COMM_EVAL in evaluation */
} fd_op_t;

static float *fd_table(fd_op_t *o, int64_t f) {
    for (int i = 0; i < o->ntab; i++)
        if (o->tab_f[i] == f) return o->tab[i];
    return NULL;
}

/* out (own rows) = Â[own, :] in, or Âᵀ[own, :] in for the backward */
static int fd_spmm(fd_op_t *o, kern_mat_t *a, int64_t n, int64_t f, const float *in, float *out) {
    float *t = fd_table(o, f);
    if (!t || n != o->no) return inca_fail(INCA_ERR, "distributed SpMM: %lld rows of width %lld, expected %lld rows of a "
                                                     "site's width", (long long)n, (long long)f, (long long)o->no);
    int rc = kc_copy(o->kc, t + o->nb * f, in, sizeof(float) * (size_t)(n * f), KERN_D2D, KERN_STREAM_COMPUTE);
    if (rc == INCA_OK) rc = train_xfer_halo(o->halo, o->hx, o->comm, KERN_F32, t, f, o->phase);
    return rc != INCA_OK ? rc : kc_spmm(o->kc, a, NULL, t, f, 1.f, 0.f, out);
}
static int fd_fwd(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    (void)site;
    (void)in_raw;
    fd_op_t *o = ctx;
    return fd_spmm(o, o->own_a, n, f, in, out);
}
static int fd_bwd(void *ctx, int site, int64_t n, int64_t f, const float *dout, float *din) {
    (void)site;
    fd_op_t *o = ctx;
    return fd_spmm(o, o->own_at ? o->own_at : o->own_a, n, f, dout, din);
}

/* The rank's state for one run. */
typedef struct fd_rank {
    kern_ctx_t *kc;
    comm_t *comm;
    int rank, P, mpi;
    int64_t lo, no;
    float *x_own;
    float *x_d;                   /* x_own on the context */
    csr_t xs;
    fd_op_t op;
    nn_agg_t agg;                 /* fd_fwd / fd_bwd on op */
    model_t *m;
    optim_t *o;
    const int32_t *y_h;           /* the shared labels of this rank's rows, and their copy on the context */
    int32_t *y_d;
    int64_t *ids[3], nids[3];     /* the rank's ids of each split, local (new id - lo) */
    int64_t *ids_d[3];
    float *dlog, *logp, *gbuf, *grecv;
    int64_t ng;
    train_meter_t *meter_d;
    train_meter_t *mh, *mall;     /* this rank's meter, then every rank's and their sum (host) */
    train_placement_t place;      /* on a device: this rank's memory, within its share of the budget */
    char ckdir[4200];
} fd_rank_t;

static void fd_rank_free(fd_rank_t *R) {
    kern_ctx_t *kc = R->kc;
    for (int k = 0; k < 3; k++) {
        kc_mirror_free(kc, R->ids[k], R->ids_d[k]);
        inca_free(R->ids[k]);
    }
    kc_mirror_free(kc, R->y_h, R->y_d);
    kc_release(kc, KERN_MEM_DEVICE, R->dlog);
    kc_release(kc, KERN_MEM_DEVICE, R->logp);
    kc_release(kc, KERN_MEM_DEVICE, R->meter_d);
    inca_free(R->gbuf);
    inca_free(R->grecv);
    inca_free(R->mh);
    inca_free(R->mall);
    optim_free(&R->o);
    model_free(&R->m);
    for (int i = 0; i < R->op.ntab; i++) {   /* device memory on a device (hx may not be made yet) */
        if (kc && kc_device(kc) != KERN_DEV_CPU) kc_release(kc, KERN_MEM_DEVICE, R->op.tab[i]);
        else inca_free(R->op.tab[i]);
    }
    halo_dev_free(&R->op.hx);
    halo_free(&R->op.halo);
    kc_mirror_free(kc, R->x_own, R->x_d);
    kc_mat_free(kc, &R->op.own_a);
    kc_mat_free(kc, &R->op.own_at);
    csr_free(&R->op.la);
    csr_free(&R->op.lat);
    csr_free(&R->xs);
    inca_free(R->x_own);
}

/* The sorted union of the sorted id lists a (na) and b (nb) into *out (*m; owned). */
static int fd_union(const int64_t *a, int64_t na, const int64_t *b, int64_t nb, int64_t **out, int64_t *m) {
    int64_t *u = inca_malloc(sizeof *u * (size_t)(na + nb > 0 ? na + nb : 1)), i = 0, j = 0, k = 0;
    if (!u) return INCA_ENOMEM;
    while (i < na || j < nb) {
        const int64_t v = j >= nb || (i < na && a[i] <= b[j]) ? a[i] : b[j];
        i += i < na && a[i] == v;
        j += j < nb && b[j] == v;
        u[k++] = v;
    }
    *out = u;
    *m = k;
    return INCA_OK;
}

/* Rows [lo, lo + no) of g, their columns in the local numbering of halo_set_local (own id c at
 * c - lo + nb, halo id hid[j] at j < nb ? j : j + no; hid the hm sorted halo ids, nb of them
 * below lo): an no x (no + hm) matrix whose columns keep their order, so a row sums in the
 * one-process order. */
static int fd_local_rows(const csr_t *g, int64_t lo, int64_t no, const int64_t *hid, int64_t hm, int64_t nb, csr_t *out) {
    const int64_t e0 = g->rowptr[lo], nz = g->rowptr[lo + no] - e0;
    int rc = csr_alloc(out, no, no + hm, nz, g->val != NULL);
    if (rc) return rc;
    for (int64_t i = 0; i <= no; i++) out->rowptr[i] = g->rowptr[lo + i] - e0;
    for (int64_t k = 0; k < nz; k++) {
        const int64_t c = g->col[e0 + k];
        int64_t j;
        if (c >= lo && c < lo + no) j = c - lo + nb;
        else {
            int64_t a = 0, b = hm;   /* hid holds c: dist_halo listed it */
            while (a < b) { const int64_t h = a + (b - a) / 2; if (hid[h] < c) a = h + 1; else b = h; }
            j = a < nb ? a : a + no;
        }
        out->col[k] = (int32_t)j;
        if (g->val) out->val[k] = g->val[e0 + k];
    }
    return INCA_OK;
}

/* The rank's halo: every id outside its rows that its rows of Â reference, and of Âᵀ when the
 * graph is directed (the backward reads Âᵀ's columns, which are then others). */
static int fd_rank_halo(const fd_shared_t *S, int rank, int64_t **hid, int64_t *hm) {
    int64_t *h1 = NULL, *h2 = NULL, m1 = 0, m2 = 0;
    int rc = dist_halo(&S->a, &S->plan, rank, &h1, &m1);
    if (rc != INCA_OK || !S->at.rowptr) {
        *hid = h1;
        *hm = m1;
        return rc;
    }
    if ((rc = dist_halo(&S->at, &S->plan, rank, &h2, &m2)) == INCA_OK) rc = fd_union(h1, m1, h2, m2, hid, hm);
    inca_free(h1);
    inca_free(h2);
    return rc;
}

/* The operator of a model with aggregation sites: the rank's rows of Â (Âᵀ) with local columns,
 * its halo plan, a table of no + halo rows per site width, and on a device the halo staging. */
static int fd_op_setup(fd_rank_t *R, const fd_shared_t *S) {
    kern_ctx_t *kc = R->kc;
    const int dev = kc_device(kc) != KERN_DEV_CPU;
    int64_t *hid = NULL, hm = 0;
    R->op = (fd_op_t){.kc = kc, .comm = R->comm, .no = R->no, .phase = COMM_HALO};
    int rc = fd_rank_halo(S, R->rank, &hid, &hm);
    if (rc == INCA_OK) rc = halo_plan(R->comm, &S->plan, hid, hm, COMM_SETUP, &R->op.halo);
    if (rc == INCA_OK) {
        const int64_t nb = R->op.nb = halo_set_local(R->op.halo, R->lo, R->no);
        R->op.nl = R->no + hm;
        kc_mem_tag(kc, "graph");
        fd_op_t *o = &R->op;
        rc = fd_local_rows(&S->a, R->lo, R->no, hid, hm, nb, &o->la);
        if (rc == INCA_OK && S->at.rowptr) rc = fd_local_rows(&S->at, R->lo, R->no, hid, hm, nb, &o->lat);
        if (rc == INCA_OK) rc = kc_mat_upload(kc, &o->la, &o->own_a);
        if (rc == INCA_OK && o->lat.rowptr) rc = kc_mat_upload(kc, &o->lat, &o->own_at);
        if (dev) {   /* a device copied them; the CPU context borrows them for the run */
            csr_free(&o->la);
            csr_free(&o->lat);
        }
    }
    inca_free(hid);
    kc_mem_tag(kc, "halo tables");
    const int ns = model_num_sites(&S->mc);
    for (int s = 0; s < ns && rc == INCA_OK; s++) {
        const int64_t w = model_site_dim(&S->mc, s), bytes = (int64_t)sizeof(float) * R->op.nl * w;
        if (fd_table(&R->op, w)) continue;
        if (R->op.ntab == FD_MAX_WIDTHS) return inca_fail(INCA_ERR, "distributed SpMM: more than %d site widths", FD_MAX_WIDTHS);
        R->op.tab_f[R->op.ntab] = w;
        if (dev) rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)(bytes > 0 ? bytes : 1), (void **)&R->op.tab[R->op.ntab]);
        else if (!(R->op.tab[R->op.ntab] = inca_calloc((size_t)(bytes > 0 ? bytes : 1), 1))) rc = INCA_ENOMEM;
        if (rc == INCA_OK) R->op.ntab++;
    }
    if (rc == INCA_OK && dev) {
        kern_dtype_t dts[FD_MAX_WIDTHS];
        for (int i = 0; i < R->op.ntab; i++) dts[i] = KERN_F32;
        kc_mem_tag(kc, "comm staging");
        rc = train_xfer_halo_dev(kc, R->P, R->op.nl, R->op.tab_f, dts, R->op.ntab, &R->op.hx);
    }
    return rc;
}

/* This rank's host pieces: its rows of the features in the partition's order, its ids of each
 * split (local: new id - lo). */
static int fd_rank_host(fd_rank_t *R, const fd_shared_t *S) {
    const int64_t f = S->f;
    R->lo = S->plan.node_lo[R->rank];
    R->no = S->plan.node_lo[R->rank + 1] - R->lo;
    if (!(R->x_own = inca_malloc(sizeof(float) * (size_t)(R->no * f > 0 ? R->no * f : 1)))) return INCA_ENOMEM;
    for (int64_t i = 0; i < R->no; i++)
        memcpy(R->x_own + i * f, S->x + S->inv[R->lo + i] * f, sizeof(float) * (size_t)f);
    for (int k = 0; k < 3; k++) {   /* sorted: one slice each */
        int64_t a = 0, b = S->nids[k];
        while (a < b) { const int64_t h = a + (b - a) / 2; if (S->ids[k][h] < R->lo) a = h + 1; else b = h; }
        int64_t e = a;
        while (e < S->nids[k] && S->ids[k][e] < R->lo + R->no) e++;
        R->nids[k] = e - a;
        if (!(R->ids[k] = inca_malloc(sizeof(int64_t) * (size_t)(R->nids[k] ? R->nids[k] : 1)))) return INCA_ENOMEM;
        for (int64_t i = 0; i < R->nids[k]; i++) R->ids[k][i] = S->ids[k][a + i] - R->lo;
    }
    if (!(R->mh = inca_malloc(sizeof *R->mh)) || !(R->mall = inca_malloc(sizeof *R->mall * (size_t)(R->P + 1))))
        return INCA_ENOMEM;
    return INCA_OK;
}

/* The model on the rank's rows (rank 0's parameters), its input, optimiser and gradient buffers. */
static int fd_model_setup(fd_rank_t *R, const fd_shared_t *S, const train_config_t *c) {
    const int64_t f = S->f;
    kern_ctx_t *kc = R->kc;
    int rc;
    kc_mem_tag(kc, "model");
    if ((rc = model_create_on(&S->mc, R->no > 0 ? R->no : 1, kc, &R->m))) return rc;
    if (S->sparse) {
        kc_mem_tag(kc, "features");   /* the first layer holds them */
        if ((rc = train_features_csr(R->no, f, R->x_own, 1.0, &R->xs)) < 0) return rc;
        if (model_set_sparse_input(R->m, &R->xs) != INCA_OK) {   /* a first layer that needs dense input */
            inca_err_clear();
            csr_free(&R->xs);
        } else INCA_FREE(R->x_own);
    }
    for (int i = 0; i < model_nparams(R->m); i++) R->ng += model_param(R->m, i)->n;
    if ((rc = train_xfer_bcast_params(R->comm, R->m))) return rc;
    kc_mem_tag(kc, "comm staging");
    if (c->grad_reduce == TRAIN_GRAD_NCCL && (rc = train_xfer_nccl_join(R->comm, kc))) return rc;
    kc_mem_tag(kc, "features");
    if (R->x_own && (rc = kc_mirror(kc, R->x_own, sizeof(float) * (size_t)(R->no * f > 0 ? R->no * f : 1), (void **)&R->x_d)))
        return rc;
    kc_mem_tag(kc, "optimizer");
    if ((rc = train_optim_build(c, R->m, &R->o))) return rc;
    if (!(R->gbuf = inca_malloc(sizeof(float) * (size_t)(R->ng ? R->ng : 1))) ||
        (c->grad_reduce == TRAIN_GRAD_ALLGATHER &&
         !(R->grecv = inca_malloc(sizeof(float) * (size_t)(R->ng ? R->ng : 1) * (size_t)R->P))))
        return INCA_ENOMEM;
    return INCA_OK;
}

/* Everything a rank holds, its device memory planned: within its share of the budget
 * (train_full_dist), each use under its tag, so the refusal names what took the room. */
static int fd_rank_setup(fd_rank_t *R, const fd_shared_t *S, const train_config_t *c) {
    kern_ctx_t *kc = R->kc;
    const int64_t C = S->C;
    int rc;
    if ((rc = fd_rank_host(R, S)) || (rc = train_device_budget_begin(c, kc, "model", &R->place)) ||
        (rc = fd_model_setup(R, S, c)) || (model_num_sites(&S->mc) > 0 && (rc = fd_op_setup(R, S))))
        return rc;
    kc_mem_tag(kc, "labels");
    R->y_h = S->y + R->lo;
    if ((rc = kc_mirror(kc, R->y_h, sizeof(int32_t) * (size_t)(R->no ? R->no : 1), (void **)&R->y_d))) return rc;
    for (int k = 0; k < 3; k++)
        if (R->nids[k] > 0 && (rc = kc_mirror(kc, R->ids[k], sizeof(int64_t) * (size_t)R->nids[k], (void **)&R->ids_d[k])))
            return rc;
    kc_mem_tag(kc, "buffers");
    if ((rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof *R->meter_d, (void **)&R->meter_d)) ||
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)(R->no * C > 0 ? R->no * C : 1), (void **)&R->dlog)) ||
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)(R->no * C > 0 ? R->no * C : 1), (void **)&R->logp)))
        return rc;
    train_device_budget_setup_done(kc, &R->place);
    return INCA_OK;
}

/* The parameter gradients <- their sum over the ranks in rank order (the same bits on every
 * rank, whichever reduction). */
static int fd_grad_reduce(fd_rank_t *R, const train_config_t *c) {
    if (c->grad_reduce == TRAIN_GRAD_NCCL) return train_xfer_grads_sum_nccl(R->comm, R->m, NULL);   /* in place */
    int rc = train_xfer_grads_get(R->m, R->gbuf);
    if (rc) return rc;
    if (c->grad_reduce == TRAIN_GRAD_ALLGATHER) {
        if ((rc = comm_allgather(R->comm, R->gbuf, (int64_t)sizeof(float) * R->ng, R->grecv, COMM_GRAD))) return rc;
        memcpy(R->gbuf, R->grecv, sizeof(float) * (size_t)R->ng);
        for (int r = 1; r < R->P; r++) {
            const float *h = R->grecv + (int64_t)r * R->ng;
            for (int64_t i = 0; i < R->ng; i++) R->gbuf[i] = h[i] + R->gbuf[i];
        }
    } else {
        uint8_t contrib[FD_MAX_RANKS];
        memset(contrib, 1, sizeof contrib);
        if ((rc = comm_ordered_sum_f32(R->comm, R->gbuf, R->ng, contrib, COMM_GRAD))) return rc;
    }
    return train_xfer_grads_put(R->m, R->gbuf);
}

/* Figures summed over the ranks in rank order: in[0..k) from every rank into out[0..k). */
static int fd_sum(fd_rank_t *R, const double *in, int k, double *out, int phase) {
    double *all = inca_malloc(sizeof(double) * (size_t)k * (size_t)R->P);
    if (!all) return INCA_ENOMEM;
    int rc = comm_allgather(R->comm, in, (int64_t)sizeof(double) * k, all, phase);
    for (int j = 0; j < k && rc == INCA_OK; j++) {
        out[j] = 0;
        for (int r = 0; r < R->P; r++) out[j] += all[(size_t)r * (size_t)k + (size_t)j];
    }
    inca_free(all);
    return rc;
}

/* Where a rank's epochs stand: what a checkpoint saves and a resume restores. */
typedef struct fd_progress {
    train_best_t best;
    double t_step, t_eval, t_epoch, loss;
    int64_t evals;   /* evaluations run (--eval-every), over a resume too */
    int ep0, finished;            /* the first epoch to run; the run already stopped early */
    const char *ckdir;            /* this rank's checkpoint folder (NULL: none) */
} fd_progress_t;

/* Checkpoints: each MPI rank its own folder (g->ckdir), thread ranks share rank 0's file; with
 * --resume every rank continues from the same epoch (a job stopped between two ranks' saves is
 * refused). */
static int fd_resume(fd_rank_t *R, const dataset_t *d, const train_config_t *c, int run, fd_progress_t *g) {
    int rc = INCA_OK;
    if (c->checkpoint_dir && R->mpi) {
        rc = ckpt_rank_dir(c, R->rank, R->P, R->ckdir, sizeof R->ckdir);
        g->ckdir = R->ckdir;
    } else if (c->checkpoint_dir && c->resume)
        rc = ckpt_manifest_check(c->checkpoint_dir, 1);
    if (rc != INCA_OK || !c->checkpoint_dir || !c->resume) return rc;
    ckpt_state_t cs = {0};   /* no history tables: order 0 */
    rc = ckpt_load(g->ckdir, run, c, d, R->m, R->o, &cs, NULL, 0);
    if (rc < 0) return rc;
    int64_t e[2] = {rc == CKPT_NONE ? -1 : cs.epoch, rc == CKPT_NONE ? 1 : -(int64_t)cs.epoch};
    const int found = rc == INCA_OK;
    rc = comm_allreduce_max_i64(R->comm, e, 2, COMM_SETUP);
    if (rc == INCA_OK && e[0] != -e[1])
        rc = inca_fail(INCA_EINVAL, "%s: the ranks' checkpoints end at different epochs (%lld to %lld; -1: none): "
                       "the job stopped between two ranks' saves; train again without --resume",
                       c->checkpoint_dir, (long long)-e[1], (long long)e[0]);
    if (rc == INCA_OK && found) {
        g->best = cs.best;
        g->loss = cs.train_loss;
        g->t_step = cs.t_step;
        g->t_eval = cs.t_eval;
        g->t_epoch = cs.t_epoch;
        g->evals = cs.evals;
        g->ep0 = cs.epoch + 1;
        g->finished = cs.finished;
    }
    if (rc == INCA_OK && R->rank == 0) rc = train_resume_note(c, run, found ? g->ep0 : 0);
    return rc;
}

/* The training step of epoch ep: the mean loss over the job's train nodes, so the ranks'
 * gradients add up; *loss the mean (the training accuracy is the evaluation's, after the step). */
static int fd_train_step(fd_rank_t *R, const fd_shared_t *S, const train_config_t *c, const float *xin, int ep,
                         double *loss) {
    const int64_t C = S->C, N = S->nids[SPLIT_TRAIN];
    const float *logits;
    train_meter_t h;
    int rc;
    R->op.phase = COMM_HALO;
    if ((rc = model_forward(R->m, R->no, xin, &R->agg, 1, c->seed, (uint64_t)ep * (uint64_t)R->P + (uint64_t)R->rank,
                            &logits)) ||
        (rc = kc_zero(R->kc, R->meter_d, sizeof *R->meter_d, KERN_STREAM_COMPUTE)))
        return rc;
    if (R->nids[SPLIT_TRAIN] > 0) {
        /* the gradient of the rank's mean (into logp, scratch until the evaluation), scaled
         * to the job's mean into dlog */
        if ((rc = kc_softmax_xent(R->kc, R->no, C, logits, R->y_d, R->ids_d[SPLIT_TRAIN], R->nids[SPLIT_TRAIN], NULL,
                                  R->logp, &R->meter_d->loss[0])) ||
            (rc = kc_axpby(R->kc, R->no * C, (float)((double)R->nids[SPLIT_TRAIN] / (double)N), R->logp, 0.f, R->dlog)))
            return rc;
    } else if ((rc = kc_zero(R->kc, R->dlog, sizeof(float) * (size_t)(R->no * C), KERN_STREAM_COMPUTE)))
        return rc;
    if ((rc = kc_copy(R->kc, &h, R->meter_d, sizeof h, KERN_D2H, KERN_STREAM_COMPUTE)) ||
        (rc = model_backward(R->m, R->dlog, &R->agg)) || (rc = fd_grad_reduce(R, c)))
        return rc;
    const double mine = h.loss[0] * (double)R->nids[SPLIT_TRAIN];
    double tot;
    if ((rc = fd_sum(R, &mine, 1, &tot, COMM_GRAD))) return rc;
    *loss = tot / (double)N;
    if (!isfinite(*loss)) return inca_fail(INCA_ERR, "epoch %d: training loss is not finite (%g); lower --lr?", ep, *loss);
    return optim_step(R->o);
}

/* The evaluation of epoch ep into e: the rank's rows, the meters summed in rank order. */
static int fd_eval(fd_rank_t *R, const fd_shared_t *S, const train_config_t *c, const float *xin, int ep,
                   train_epoch_eval_t *e) {
    const float *logits;
    int rc;
    R->op.phase = COMM_EVAL;
    if ((rc = model_forward(R->m, R->no, xin, &R->agg, 0, c->seed, (uint64_t)ep, &logits)) ||
        (rc = train_eval_meter(R->kc, logits, R->no, S->C, R->y_d, R->ids_d[SPLIT_TRAIN], R->nids[SPLIT_TRAIN],
                               R->ids_d[SPLIT_VALID], R->nids[SPLIT_VALID],
                               R->ids_d[SPLIT_TEST], R->nids[SPLIT_TEST], R->logp, R->meter_d, e, R->mh)) ||
        (rc = comm_allgather(R->comm, R->mh, sizeof *R->mh, R->mall, COMM_EVAL)))
        return rc;
    train_meter_sum(R->mall + R->P, R->mall, R->P);
    train_eval_apply(R->mall + R->P, 1, S->nids[SPLIT_VALID], e);
    return INCA_OK;
}

/* One epoch: step, evaluation, the epoch's report and best, its checkpoint (MPI ranks each,
 * thread ranks rank 0 alone); *stop when the patience ran out. */
static int fd_epoch(fd_rank_t *R, const fd_shared_t *S, const dataset_t *d, const train_config_t *c, int run,
                    const float *xin, int ep, fd_progress_t *g, int *stop) {
    const double t0 = inca_now();
    int rc;
    *stop = 0;
    if ((rc = fd_train_step(R, S, c, xin, ep, &g->loss))) return rc;
    const double t1 = inca_now();
    if (!train_eval_due(c, ep)) {   /* --eval-every: no evaluation, no checkpoint */
        g->t_step += t1 - t0;
        g->t_epoch += t1 - t0;
        return INCA_OK;
    }
    train_epoch_eval_t e = {.run = run, .epoch = ep, .train_loss = g->loss, .n_valid = S->nids[SPLIT_VALID]};
    if ((rc = fd_eval(R, S, c, xin, ep, &e))) return rc;
    const double t2 = inca_now();
    e.epoch_s = t2 - t0;
    g->t_step += t1 - t0;
    g->t_eval += t2 - t1;
    g->t_epoch += t2 - t0;
    g->evals++;
    if ((rc = train_epoch_end(c, &e, NULL, 0, (int32_t)S->C, &g->best))) return rc;
    *stop = c->patience > 0 && g->best.since >= c->patience;
    if (c->checkpoint_dir && (R->mpi || R->rank == 0)) {
        ckpt_state_t cs = {.epoch = ep, .finished = *stop, .best = g->best, .train_loss = g->loss,
                           .t_step = g->t_step, .t_eval = g->t_eval, .t_epoch = g->t_epoch, .evals = g->evals};
        if ((rc = ckpt_save(g->ckdir, run, c, d, R->m, R->o, &cs, NULL, 0))) return rc;
    }
    return INCA_OK;
}

/* The device memory of the job: thread ranks share one device, so their peaks and budget
 * shares add up (a bound: their peaks need not coincide); MPI ranks each have their own
 * budget, and the peak is the largest rank's. Uses (placement.device_mb) are rank 0's. */
static int fd_placement(fd_rank_t *R, train_placement_t *pl) {
    train_device_budget_end(R->kc, &R->place);
    *pl = R->place;
    if (!pl->on_device) return INCA_OK;
    pl->ranks = R->mpi ? 1 : R->P;
    if (R->mpi) return comm_allreduce_max_i64(R->comm, &pl->peak, 1, COMM_SETUP);
    const double mine = (double)R->place.peak;
    double tot = 0;
    int rc = fd_sum(R, &mine, 1, &tot, COMM_SETUP);
    pl->peak = (int64_t)tot;
    pl->budget *= R->P;
    pl->reserve *= R->P;
    return rc;
}

/* The run's result after ep epochs: the best epoch's figures, the bytes and MPI seconds per
 * phase (before the placement's own collective), the device memory. */
static int fd_result(fd_rank_t *R, const train_config_t *c, const fd_progress_t *g, int ep, train_result_t *r) {
    train_result_set(r, &g->best, ep, g->evals, g->loss, g->t_step, g->t_eval, g->t_epoch);
    r->nparams = R->ng;
    r->steps_per_epoch = 1;
    for (int ph = 0; ph < COMM_NPHASES; ph++) {
        r->comm_bytes[ph] = comm_bytes_sent(R->comm, ph);
        r->comm_s[ph] = comm_seconds(R->comm, ph);
    }
    int rc = fd_placement(R, &r->placement);
    return rc == INCA_OK && c->keep_params ? train_keep_params(R->kc, R->m, r) : rc;
}

/* One rank's run: the contract of train_full. */
static int fd_rank_run(const fd_shared_t *S, const dataset_t *d, const train_config_t *c, comm_t *comm, int run,
                       train_result_t *r) {
    fd_rank_t R;
    memset(&R, 0, sizeof R);
    memset(r, 0, sizeof *r);
    R.kc = c->kc ? c->kc : kc_cpu();
    R.comm = comm;
    R.rank = comm_rank(comm);
    R.P = comm_size(comm);
    R.mpi = comm_size(c->comm) > 1;
    comm_reset_bytes(comm);
    int rc = fd_rank_setup(&R, S, c);
    if (rc == INCA_ENOMEM && R.place.budget > 0 && strstr(inca_errmsg(), "device memory budget"))
        rc = inca_fail_ctx(rc, "rank %d of %d refused before training (its rows, halo and activations on the device; "
                           "more ranks, or --method incagg or gas, hold less)", R.rank, R.P);
    fd_progress_t g = {.ckdir = c->checkpoint_dir};
    train_best_init(&g.best);
    g.best.by_loss = c->select_loss;
    g.best.metric = c->metric;
    if (rc == INCA_OK) rc = fd_resume(&R, d, c, run, &g);
    const float *xin = R.xs.rowptr ? NULL : R.x_d;
    R.agg = (nn_agg_t){.forward = fd_fwd, .backward = fd_bwd, .ctx = &R.op};
    int ep, stop = 0;
    for (ep = g.ep0; rc == INCA_OK && ep < c->epochs && !g.finished; ep++) {
        if ((rc = fd_epoch(&R, S, d, c, run, xin, ep, &g, &stop))) break;
        if (stop) { ep++; break; }
    }
    if (rc == INCA_OK) rc = fd_result(&R, c, &g, ep, r);
    r->peak_rss_mb = inca_peak_rss_mb();
    fd_rank_free(&R);
    return rc;
}

/* One thread rank of --workers P. */
typedef struct fd_thread {
    const fd_shared_t *S;
    const dataset_t *d;
    const train_config_t *c;
    comm_t *comm;
    int run, rc, first;
    int64_t budget_share;   /* on a device: the job's device budget / P (the ranks share it) */
    train_result_t r;
    char msg[1024];
} fd_thread_t;

/* Thread ranks share the job's device: each plans within 1/P of --device-memory-budget, or of
 * what the device has free when the job starts (each rank reading it as the others allocate
 * would give each the whole, and the first ranks more than the last). 0: no budget. */
static int64_t fd_budget_share(const train_config_t *c, int P) {
    kern_ctx_t *kc = c->kc ? c->kc : kc_cpu();
    if (kc_device(kc) == KERN_DEV_CPU) return c->device_memory_budget;   /* refused by the rank, as one process */
    if (c->device_memory_budget > 0) return c->device_memory_budget / P;
    kern_mem_stats_t s;
    kc_mem_stats(kc, &s);
    return s.device_free > 0 ? s.device_free / P : 0;   /* what the job's own context holds stays its own */
}

static void *fd_thread_main(void *arg) {
    fd_thread_t *T = arg;
    train_config_t c = *T->c;
    kern_ctx_t *kc = NULL;
    inca_thread_adopt();   /* --threads, as an MPI rank's process has it */
    if (comm_rank(T->comm) != 0) {   /* rank 0 alone logs and writes the metrics */
        c.log = NULL;
        c.metrics_fp = NULL;
        c.metrics_path = NULL;
    }
    c.comm = NULL;
    c.device_memory_budget = T->budget_share;
    /* a context of its own on the job's device: a context's sticky status is per thread */
    T->rc = kc_sibling(T->c->kc ? T->c->kc : kc_cpu(), &kc);
    c.kc = kc;
    if (T->rc == INCA_OK) T->rc = fd_rank_run(T->S, T->d, &c, T->comm, T->run, &T->r);
    if (T->rc != INCA_OK) {
        snprintf(T->msg, sizeof T->msg, "%s", inca_errmsg());
        T->first = comm_poison(T->comm);
    }
    kc_free(&kc);
    return NULL;
}

int train_full_dist(const dataset_t *d, const train_config_t *c, const int64_t *train_idx, int64_t n_train, int run,
                    const partition_t *p, train_result_t *r) {
    const int mpi = comm_size(c->comm) > 1;
    const int P = mpi ? comm_size(c->comm) : c->workers;
    memset(r, 0, sizeof *r);
    if (P < 2 || P > FD_MAX_RANKS) return inca_fail(INCA_EINVAL, "full-batch over %d ranks: expected 2..%d", P, FD_MAX_RANKS);
    if (mpi && c->workers > 1 && c->workers != P)
        return inca_fail(INCA_EINVAL, "--workers %d under mpirun -np %d: the processes are the ranks (omit --workers or give %d)",
                         c->workers, P, P);
    if (c->batchnorm)
        return inca_fail(INCA_EINVAL, "%d ranks with --batchnorm: BatchNorm's batch statistics would be each rank's own; "
                         "not supported", P);
    if (c->batch_size > 0) return inca_fail(INCA_EINVAL, "--batch-size with %d ranks: one process only", P);
    if (c->on_epoch || c->out_logits)
        return inca_fail(INCA_EINVAL, "%d ranks: the per-node logits hooks (on_epoch, out_logits) are one process's", P);
    if (!dataset_has_graph(d) || !d->adj.rowptr)
        return inca_fail(INCA_EINVAL, "%d ranks with --method full: the ranks own METIS parts, which needs a graph", P);
    if (!d->y) return inca_fail(INCA_EINVAL, "--method full needs labels; this dataset has none");
    if (n_train < 1) return inca_fail(INCA_EINVAL, "no training nodes (empty train split)");
    if (c->epochs < 1) return inca_fail(INCA_EINVAL, "--epochs: expected >= 1, got %d", c->epochs);
    if (!p || p->n != d->n)
        return inca_fail(INCA_EINVAL, "partitioning covers %lld nodes, dataset has %lld", (long long)(p ? p->n : -1),
                         (long long)d->n);
    fd_shared_t S;
    int rc = fd_shared_make(d, c, train_idx, n_train, p, P, &S);
    if (rc) return rc;
    if (mpi) {
        rc = fd_rank_run(&S, d, c, c->comm, run, r);
        fd_shared_free(&S);
        return rc;
    }
    comm_t *ranks[FD_MAX_RANKS];
    fd_thread_t T[FD_MAX_RANKS];
    pthread_t th[FD_MAX_RANKS];
    int started = 0;
    memset(T, 0, sizeof T);
    if ((rc = comm_threads_create(P, ranks))) {
        fd_shared_free(&S);
        return rc;
    }
    const int64_t share = fd_budget_share(c, P);
    for (int q = 0; q < P; q++) {
        T[q] = (fd_thread_t){.S = &S, .d = d, .c = c, .comm = ranks[q], .run = run, .budget_share = share};
        if (pthread_create(&th[q], NULL, fd_thread_main, &T[q]) != 0) {
            comm_poison(ranks[q]);   /* the started ones stop at their next collective */
            rc = inca_fail(INCA_ERR, "--workers %d: cannot start the thread of rank %d", P, q);
            break;
        }
        started++;
    }
    for (int q = 0; q < started; q++) pthread_join(th[q], NULL);
    for (int q = 0; q < started && rc == INCA_OK; q++)   /* the cause: the rank that failed first */
        if (T[q].rc != INCA_OK && T[q].first) rc = inca_fail(T[q].rc, "rank %d of %d: %s", q, P, T[q].msg);
    for (int q = 0; q < started && rc == INCA_OK; q++)
        if (T[q].rc != INCA_OK) rc = inca_fail(T[q].rc, "rank %d of %d: %s", q, P, T[q].msg);
    if (rc == INCA_OK) {
        *r = T[0].r;
        memset(&T[0].r, 0, sizeof T[0].r);
    }
    for (int q = 0; q < started; q++) train_result_free(&T[q].r);
    comm_threads_free(ranks, P);
    fd_shared_free(&S);
    return rc;
}
