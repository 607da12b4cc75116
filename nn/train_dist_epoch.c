/* One rank's run of data-parallel full-batch training (train_dist.h): the resume, each epoch's
 * step (the parameter gradients summed over the ranks in rank order), evaluation and
 * checkpoint, and the run's result. Tested in tests/test_train.c and tests/test_mpi.c. */
#include "nn/train_dist_impl.h"
#include "nn/train_xfer.h"
#include "core/alloc.h"
#include "core/comm.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/backend.h"
#include "nn/checkpoint.h"
#include <math.h>
#include <string.h>

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
 * --resume every rank continues from the same epoch: MPI ranks from the newest one all of them
 * saved (ckpt_rank_load, which also clears a new job's folder of an older job's files), thread
 * ranks from the one file. */
static int fd_resume(fd_rank_t *R, const dataset_t *d, const train_config_t *c, int run, fd_progress_t *g) {
    int rc = INCA_OK;
    if (c->checkpoint_dir && R->mpi) {
        rc = ckpt_rank_dir(c, R->rank, R->P, R->ckdir, sizeof R->ckdir);
        g->ckdir = R->ckdir;
    } else if (c->checkpoint_dir && c->resume)
        rc = ckpt_manifest_check(c->checkpoint_dir, 1);
    if (rc != INCA_OK || !c->checkpoint_dir || (!c->resume && !R->mpi)) return rc;
    ckpt_state_t cs = {0};   /* no history tables: order 0 */
    rc = R->mpi ? ckpt_rank_load(R->comm, g->ckdir, run, c, d, R->m, R->o, &cs, NULL, 0)
                : ckpt_load(g->ckdir, run, c, d, R->m, R->o, &cs, NULL, 0);
    if (rc < 0 || !c->resume) return rc < 0 ? rc : INCA_OK;
    const int found = rc == INCA_OK;
    if (found) {
        g->best = cs.best;
        g->loss = cs.train_loss;
        g->t_step = cs.t_step;
        g->t_eval = cs.t_eval;
        g->t_epoch = cs.t_epoch;
        g->evals = cs.evals;
        g->ep0 = cs.epoch + 1;
        g->finished = cs.finished;
    }
    return R->rank == 0 ? train_resume_note(c, run, found ? g->ep0 : 0) : INCA_OK;
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
        /* after the epoch's collectives: the ranks' saves are at most one apart (ckpt_rank_save) */
        if ((rc = (R->mpi ? ckpt_rank_save : ckpt_save)(g->ckdir, run, c, d, R->m, R->o, &cs, NULL, 0))) return rc;
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
int train_dist_rank_run(const fd_shared_t *S, const dataset_t *d, const train_config_t *c, comm_t *comm, int run,
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
    int rc = train_dist_rank_setup(&R, S, c);
    if (rc == INCA_ENOMEM && R.place.budget > 0 && strstr(inca_errmsg(), "device memory budget"))
        rc = inca_fail_ctx(train_budget_refusal_code(c, rc), "refused before training (its rows, halo and activations on "
                           "the device; more ranks, or --method incagg or gas, hold less)");   /* the rank: its reporter's */
    fd_progress_t g = {.ckdir = c->checkpoint_dir};
    train_best_init(&g.best);
    g.best.by_loss = c->select_loss;
    g.best.metric = c->metric;
    if (rc == INCA_OK) rc = fd_resume(&R, d, c, run, &g);
    const float *xin = R.xs.rowptr ? NULL : R.x_d;
    R.agg = (nn_agg_t){.forward = train_dist_fwd, .backward = train_dist_bwd, .ctx = &R.op};
    int ep, stop = 0;
    for (ep = g.ep0; rc == INCA_OK && ep < c->epochs && !g.finished; ep++) {
        if ((rc = fd_epoch(&R, S, d, c, run, xin, ep, &g, &stop))) break;
        if (stop) { ep++; break; }
    }
    if (rc == INCA_OK) rc = fd_result(&R, c, &g, ep, r);
    r->peak_rss_mb = inca_peak_rss_mb();
    train_dist_rank_free(&R);
    return rc;
}
