/* Data-parallel full-batch training over MPI ranks or thread ranks, the entry (see
 * train_dist.h): the checks, the dataset in the partition's order that every rank reads, and
 * the run of this process's MPI rank or of --workers thread ranks (train_dist_epoch.c). */
#include "nn/train_dist.h"
#include "nn/train_dist_impl.h"
#include "core/alloc.h"
#include "core/comm.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/dist.h"
#include "kernels/backend.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (T->rc == INCA_OK) T->rc = train_dist_rank_run(T->S, T->d, &c, T->comm, T->run, &T->r);
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
    if (mpi && c->workers > 1)   /* the processes are the ranks: workers would be ignored */
        return inca_fail(INCA_EINVAL, "--workers %d under mpirun -np %d: workers are thread ranks inside one process; use "
                         "either", c->workers, P);
    if (c->batchnorm)
        return inca_fail(INCA_EINVAL, "%d ranks with --batchnorm: BatchNorm's batch statistics would be each rank's own; "
                         "not supported", P);
    if (c->batch_size > 0) return inca_fail(INCA_EINVAL, "--batch-size with %d ranks: one process only", P);
    if (c->on_epoch || c->out_logits)
        return inca_fail(INCA_EINVAL, "%d ranks: the per-node logits hooks (on_epoch, out_logits) are one process's", P);
    if (!dataset_has_graph(d) || !d->adj.rowptr)
        return inca_fail(INCA_EINVAL, "%d ranks with --method full: the ranks own METIS parts, which needs a graph", P);
    if (!d->y) return inca_fail(INCA_EINVAL, "--method full needs labels; this dataset has none");
    if (n_train < 1) return train_fail_no_train_nodes(c);
    if (c->epochs < 1) return inca_fail(INCA_EINVAL, "--epochs: expected >= 1, got %d", c->epochs);
    if (!p || p->n != d->n)
        return inca_fail(INCA_EINVAL, "partitioning covers %lld nodes, dataset has %lld", (long long)(p ? p->n : -1),
                         (long long)d->n);
    int rc = train_device_budget_check(c, c->kc ? c->kc : kc_cpu());   /* the job's, before it is shared */
    if (rc != INCA_OK) return rc;
    fd_shared_t S;
    rc = fd_shared_make(d, c, train_idx, n_train, p, P, &S);
    if (rc) return rc;
    if (mpi) {
        rc = train_dist_rank_run(&S, d, c, c->comm, run, r);
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
