/* Whole-graph passes of a mini-batch run (mb_pass.h). */
#include "nn/mb_pass.h"
#include "nn/mb_sparse.h"
#include "nn/mb_place.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include <string.h>
#include <sys/mman.h>

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

/* A site reading x whose panel's Â X is not on the device: M^0's rows from host tables
 * (uploaded, bf16 decoded on the device), else (the features in host memory, no M^0 to serve)
 * computed on the CPU and uploaded. */
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
    /* with host tables M^0 is host memory: the device's copy of x is read instead (the same
     * product), unless x stayed in host memory too or M^0 is bf16 (the rounded product the
     * steps read, which the refresh must keep): then M^0's panel rows go up */
    const int m0_ok = m0 && (P->refresh || m0->dtype == HIST_F32), m0_host = R->dev && agg_tables_on_host(R->agg);
    int rc;
    if (m0_ok && !m0_host) rc = kc_gather_rows(R->kc, m0->dtype == HIST_BF16 ? KERN_BF16 : KERN_F32, m0->data, f, NULL, P->r0, n, out);
    else if (P->xh || (m0_ok && m0->dtype == HIST_BF16)) rc = mb_pass_x_host(R, P, m0_ok ? m0 : NULL, n, f, out);
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
    const int m0_host = !R->dev || agg_tables_on_host(R->agg);   /* M^0 (when there is one) in host memory */
    int rc = INCA_OK;
    for (int p = 0; p < R->npan && rc == INCA_OK; p++) {
        const float *out = NULL;
        P->r0 = R->pan_r0[p];
        P->rows = R->apan[p];
        P->pan = p;
        const int64_t np = kc_mat_rows(R->apan[p]);
        if ((P->xh || m0_host) && p + 1 < R->npan) {   /* the next panel's input (and M^0) rows */
            const int64_t r1 = R->pan_r0[p + 1], n1 = kc_mat_rows(R->apan[p + 1]);
            const hist_t *m0 = agg_m0(R->agg, li);
            /* read-ahead of store views and spilled tables (file pages; anonymous memory ignores it) */
            if (!R->dev || P->xh) inca_madvise((const char *)P->hfull + r1 * fin * es_in, n1 * fin * es_in, MADV_WILLNEED);
            if (m0 && m0_host) {
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

int mb_pass(mb_run_t *R, int refresh, const float **logits) {
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

/* A refresh done, its own pass or the evaluation's (started at t0, CPU c0, the context's copied
 * bytes cp0): its time, count and bus bytes. */
static void mb_refresh_done(mb_run_t *R, mb_stats_t *st, const int64_t cp0[3], double t0, double c0) {
    int64_t cp1[3];
    kc_mem_copied(R->kc, cp1);
    R->place.refresh_h2d += cp1[KERN_H2D] - cp0[KERN_H2D];
    R->place.refresh_d2h += cp1[KERN_D2H] - cp0[KERN_D2H];
    R->place.refreshes++;
    st->refresh_s_total += inca_now() - t0;
    st->refresh_cpu_s += mb_cpu_now() - c0;
    st->refreshes++;
}

/* An IncAgg refresh that is due now. The recompute source shares the pass with an evaluation
 * due at this epoch end (fused_pending) unless --refresh-eval separate; otherwise it runs its
 * own eval-mode pass. */
int mb_refresh(mb_run_t *R, mb_stats_t *st, int shares_eval) {
    int rc;
    const int avg_rows = R->avg && train_refresh_averaged(R->c);   /* rows of the averaged weights */
    if (shares_eval && train_refresh_fused(R->c)) {
        R->fused_pending = 1;   /* the evaluation's pass runs with the refresh's weights */
        return INCA_OK;
    }
    /* on a device the steps were drained before (their time is theirs); the refresh is drained
     * after, so its time is its own */
    double t0 = inca_now(), c0 = mb_cpu_now();
    int64_t cp0[3];
    kc_mem_copied(R->kc, cp0);
    if (agg_source(R->agg) == AGG_SRC_RECOMPUTE) {
        const float *logits;
        rc = avg_rows ? wavg_swap(R->avg) : INCA_OK;
        const int swapped = avg_rows && rc == INCA_OK;
        if (rc == INCA_OK && R->stream) rc = mb_pass(R, 1, &logits);
        else if (rc == INCA_OK) {
            model_set_eval_transform_first(R->m, 0);   /* the refresh stores each layer's own input */
            if ((rc = mb_sparse_whole(R)) == INCA_OK)
                rc = model_forward(R->m, R->D.n, R->x_d, &R->op_refresh, 0, R->c->seed, (uint64_t)R->gstep, &logits);
            mb_sparse_done(R);
        }
        const int back = swapped ? wavg_swap(R->avg) : INCA_OK;   /* training goes on with its weights */
        if (rc == INCA_OK) rc = back;
    } else {
        rc = agg_refresh(R->agg);
    }
    if (rc == INCA_OK && R->dev) rc = kc_sync(R->kc);
    mb_refresh_done(R, st, cp0, t0, c0);
    return rc;
}

/* The evaluation at the end of epoch ep (a refresh riding on it) and its bookkeeping. */
int mb_eval_pass(mb_run_t *R, mb_stats_t *st, int ep, double te0) {
    const train_config_t *c = R->c;
    const int64_t n = R->D.n;
    const float *logits = NULL;
    int rc = agg_flush(R->agg);   /* host tables: the last pushes land before anything reads them */
    if (rc != INCA_OK) return rc;
    double t0 = inca_now(), c0 = mb_cpu_now();
    int64_t cp0[3];
    kc_mem_copied(R->kc, cp0);   /* a refresh riding on this pass moves its bytes here */
    /* the full-graph SpMM is linear: narrowing layers aggregate after W; a refresh must see (and
     * store) each layer's input itself */
    if (R->stream) rc = mb_pass(R, R->fused_pending, &logits);
    else {
        model_set_eval_transform_first(R->m, !R->fused_pending);
        /* sparse rows: the linear pass multiplies x's nonzeros (a refresh's layer 0 is M^0 W) */
        rc = mb_sparse_whole(R);
        if (rc == INCA_OK)
            rc = model_forward(R->m, n, R->x_d, R->fused_pending ? &R->op_refresh : &R->op_full, 0, c->seed,
                               (uint64_t)R->gstep, &logits);
        mb_sparse_done(R);
    }
    if (rc == INCA_OK && R->dev) rc = kc_sync(R->kc);
    if (rc != INCA_OK) return rc;
    if (R->fused_pending) {   /* the pass was the refresh's too: recorded as mb_refresh's own */
        mb_refresh_done(R, st, cp0, t0, c0);
        st->fused++;
    } else {
        st->eval_s_total += inca_now() - t0;
        st->eval_cpu_s += mb_cpu_now() - c0;
        st->evals++;
    }
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
