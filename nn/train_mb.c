/* Mini-batch trainers (cluster, gas, incagg; see train_mb.h): a run is made (nn/mb_setup.h:
 * the renumbered data, loaders, model, operator and placement), resumed from a checkpoint if
 * asked, then epochs of steps (nn/mb_step.h) with IncAgg's refreshes and the evaluations
 * (nn/mb_pass.h) and the checkpoint at each epoch's end, then its figures. The run's state is
 * nn/mb_run.h.
 * Tested in test_incagg.c (equivalences, determinism, accuracy against full-batch, Cora). */
#include "nn/train_mb.h"
#include "nn/mb_pass.h"
#include "nn/mb_run.h"
#include "nn/mb_setup.h"
#include "nn/mb_sparse.h"
#include "nn/mb_step.h"
#include "core/alloc.h"
#include "core/comm.h"
#include "core/status.h"
#include "core/util.h"
#include <stdio.h>
#include <string.h>

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
        /* the epoch time and the evaluations' and refreshes' counts and seconds carry over a
         * resume (mb_train seeds st with them); the step mean is this process's */
        ckpt_state_t cs = {.epoch = ep, .finished = stop, .best = R->best, .train_loss = R->train_loss, .t_epoch = R->epoch_s,
                           .order = R->order, .evals = st->evals, .t_eval = st->eval_s_total, .refreshes = st->refreshes,
                           .fused = st->fused, .t_refresh = st->refresh_s_total};
        /* MPI: after the epoch's collective steps, so the ranks' saves are at most one apart
         * (ckpt_rank_save) */
        rc = (R->comm ? ckpt_rank_save : ckpt_save)(mb_ckdir(R), R->run, c, d, R->m, R->opt, &cs, R->blobs, R->nblobs);
    }
    const int back = R->avg ? wavg_swap(R->avg) : INCA_OK;
    if (rc != 0) return rc;
    if (back != INCA_OK) return back;
    if (stop) R->finished = 1;
    return INCA_OK;
}

/* every rank's loader of this process: its wait and build seconds so far */
static void mb_loader_seconds(const mb_run_t *R, double *wait, double *build) {
    *wait = *build = 0;
    for (int w = 0; w < R->workers; w++)
        if (R->lds[w]) *wait += batch_loader_wait_s(R->lds[w]), *build += batch_loader_build_s(R->lds[w]);
}

static void mb_stats_reset_times(mb_run_t *R, mb_stats_t *st) {
    st->step_s_total = st->refresh_s_total = st->eval_s_total = 0;
    st->step_cpu_s = st->refresh_cpu_s = st->eval_cpu_s = 0;
    st->steps = st->refreshes = st->evals = st->fused = 0;
    R->epoch_s = 0;
    mb_loader_seconds(R, &R->wait0, &R->build0);   /* the loaders count from their start: warm-up left out */
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
    r->input_sparse = R->xs_on;
    r->peak_rss_mb = inca_peak_rss_mb();
    st->loader_bytes = 0;
    for (int w = 0; w < R->workers; w++)   /* every rank's loader (this process's) */
        if (R->lds[w]) st->loader_bytes += batch_loader_bytes(R->lds[w]);
    mb_loader_seconds(R, &st->wait_s, &st->build_s);
    st->wait_s -= R->wait0;   /* the timed epochs' (0 without a warm-up) */
    st->build_s -= R->build0;
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

/* IncAgg starts from exact snapshots of the initial model (one eval-mode pass through the
 * refresh operator, whichever the source); a resumed run has its tables from the checkpoint. */
static int mb_init_snapshot(mb_run_t *R, mb_stats_t *st) {
    const float *logits;
    double t0 = inca_now();
    int rc = INCA_OK;
    R->init_pass = 1;   /* its halo rows count as setup: a one-off, not a refresh */
    if (R->stream) rc = mb_pass(R, 1, &logits);
    R->init_pass = 0;
    if (!R->stream) {
        model_set_eval_transform_first(R->m, 0);
        if ((rc = mb_sparse_whole(R)) == INCA_OK)   /* sparse rows: x is not dense here */
            rc = model_forward(R->m, R->D.n, R->x_d, &R->op_refresh, 0, R->c->seed, 0, &logits);
        mb_sparse_done(R);
    }
    st->init_s = inca_now() - t0;
    agg_snapshot_taken(R->agg);
    return rc;
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
    /* a new MPI job's ranks clear their folders of an older job's files of the run (ckpt_rank_load) */
    if (rc == INCA_OK && c->checkpoint_dir && (c->resume || R.comm)) rc = mb_run_resume(&R, d);
    if (rc == INCA_OK && c->checkpoint_dir && c->resume) rc = train_resume_note(c, run, R.ep0);
    if (R.ep0 > 0) {   /* the resumed epochs' evaluations and refreshes count, as full-batch's do */
        st->evals = R.carried.evals;
        st->eval_s_total = R.carried.t_eval;
        st->refreshes = R.carried.refreshes;
        st->fused = R.carried.fused;
        st->refresh_s_total = R.carried.t_refresh;
    }
    if (rc == INCA_OK && R.method == AGG_INCAGG && R.ep0 == 0) rc = mb_init_snapshot(&R, st);
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
            double ts0 = inca_now(), tc0 = mb_cpu_now();
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
            st->step_cpu_s += mb_cpu_now() - tc0;
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
