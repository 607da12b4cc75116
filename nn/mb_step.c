/* One optimiser step of a mini-batch run (mb_step.h). */
#include "nn/mb_step.h"
#include "nn/mb_sparse.h"
#include "nn/mb_place.h"
#include "core/alloc.h"
#include "core/status.h"
#include <math.h>
#include <string.h>

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
static int mb_fwd_bwd_model(mb_run_t *R, batch_loader_t *ld, int ep, int64_t slot, uint64_t dstep, double *loss_sum,
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
    const void *extra[AGG_MAX_EXTRA] = {b->y, R->lidx, R->x_host && !R->xs_on ? b->x : NULL};
    const int64_t extra_bytes[AGG_MAX_EXTRA] = {(int64_t)sizeof(int32_t) * b->n_b, (int64_t)sizeof(int64_t) * nidx,
                                                (int64_t)sizeof(float) * b->n_b * R->D.f};
    if ((rc = agg_set_batch_with(R->agg, b, extra, extra_bytes)) != INCA_OK) return rc;
    const float *xb = R->x_host ? agg_batch_extra(R->agg, 2) : b->x;
    const int32_t *yb = agg_batch_extra(R->agg, 0);
    const int64_t *lidx = agg_batch_extra(R->agg, 1);
    if (R->dev && !R->x_host && !R->xs_on) {   /* the batch's rows of x are gathered on the device from its own copy */
        if ((rc = kc_gather_rows(kc, KERN_F32, R->x_d, R->D.f, agg_batch_nodes(R->agg), 0, b->n_b, R->xb_d))) return rc;
        xb = R->xb_d;
    }
    if (R->xs_on && (rc = mb_sparse_batch(R, b->nodes, b->n_b)) != INCA_OK) return rc;
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

/* The same, the model back on dense input after it (the passes over the graph need it). */
static int mb_fwd_bwd(mb_run_t *R, batch_loader_t *ld, int ep, int64_t slot, uint64_t dstep, double *loss_sum,
                      int64_t *loss_n, int *had) {
    const int rc = mb_fwd_bwd_model(R, ld, ep, slot, dstep, loss_sum, loss_n, had);
    mb_sparse_done(R);
    return rc;
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
int mb_step(mb_run_t *R, int ep, int64_t s, double *loss_sum, int64_t *loss_n) {
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
int mb_epoch_losses(mb_run_t *R, int ep, double *loss_sum, int64_t *loss_n) {
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
