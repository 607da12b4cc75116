/* One rank's state for data-parallel full-batch training (train_dist.h), made and freed: its
 * rows of the features and ids, the model with rank 0's parameters, the optimiser, gradient and
 * device buffers, within its share of the device budget. Tested in tests/test_train.c and
 * tests/test_mpi.c. */
#include "nn/train_dist_impl.h"
#include "nn/train_xfer.h"
#include "core/alloc.h"
#include "core/status.h"
#include "kernels/backend.h"
#include "memory/halo.h"
#include <string.h>

void train_dist_rank_free(fd_rank_t *R) {
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
int train_dist_rank_setup(fd_rank_t *R, const fd_shared_t *S, const train_config_t *c) {
    kern_ctx_t *kc = R->kc;
    const int64_t C = S->C;
    int rc;
    if ((rc = fd_rank_host(R, S)) || (rc = train_device_budget_begin(c, kc, "model", &R->place)) ||
        (rc = fd_model_setup(R, S, c)) || (model_num_sites(&S->mc) > 0 && (rc = train_dist_op_setup(R, S))))
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
