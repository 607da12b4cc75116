/* Mini-batch training with the aggregation operators of Cluster-GCN, GAS and IncAgg
 * (ARCHITECTURE.md, "IncAgg, precisely"), plugged into the layers of nn/layer.h.
 *
 * The operators (one mb_ctx per run; the model calls them once per aggregation site):
 *   cluster  Agg = Â_BB in                       (the global Â restricted to the batch, NOT
 *                                                 renormalised: rows lose their out-of-batch
 *                                                 mass; this is the "no history" baseline)
 *   gas      Agg = Â_BB in + Â_{B,halo} H_halo    H_halo = exact features at a site whose input
 *                                                 is the model input x (gcn/sage site 0), else
 *                                                 the history table (pulled, no gradient);
 *                                                 history rows of B <- in_raw (pushed in forward)
 *   incagg   Agg = M_B + Â_BB (in − S_B)          M = Â S (global baseline), S snapshot; the
 *                                                 push buffer P_B <- in_raw; at a site reading x,
 *                                                 S = X (so Δ = in − in_raw, zero without dropout)
 *                                                 and M^0 = ÂX is computed once at creation.
 *   backward of all three: din = Â_BBᵀ dout (histories, baselines and halo are constants).
 * Refresh (incagg): mb_ctx_refresh does S <- P, M <- Â S for every history site (one no-grad
 * SpMM per site). The fused refresh operator (mb_ctx_refresh_op) is full-graph Agg = Â in used
 * for eval-mode layer-wise inference that also stores S = P = in and M = out at every history
 * site: an evaluation and a refresh due together cost one pass.
 * With bf16 tables M, S and P are rounded to bf16 when stored; the residual then subtracts the
 * stored S, and M = Â S holds up to bf16 rounding of M.
 *
 * Tested in test_incagg.c (IncAgg with a refresh after every step equals GAS step by step,
 * one batch holding every node equals full-batch, M^0 = ÂX, exact snapshots give exact
 * aggregation) and test_memory.c. */
#ifndef INCA_NN_TRAIN_MB_H
#define INCA_NN_TRAIN_MB_H
#include <stdint.h>
#include "graph/partition.h"
#include "loaders/batch.h"
#include "memory/arena.h"
#include "memory/history.h"
#include "nn/model.h"
#include "nn/train.h"

enum { MB_CLUSTER = 0, MB_GAS = 1, MB_INCAGG = 2 };
/* "cluster" | "gas" | "incagg" (INCA_EINVAL naming --method otherwise). */
int mb_method_parse(const char *s, int *method);
const char *mb_method_name(int method);

typedef struct mb_ctx mb_ctx_t;

/* x: n x mc->in_dim model input (borrowed), a: normalised Â (n x n, borrowed), nb_max and
 * halo_max: the largest batch and halo the loader can produce. Tables go to one arena.
 * single_buffer (incagg): the caller refreshes exactly at every epoch end and each node is in
 * exactly one batch per epoch. Then S_B is read (for Δ) only by B's own step before the next
 * refresh, so the step pushes in_raw straight into S_B after taking Δ: no P tables (one table
 * per history site less) and no S <- P copy at a refresh. Same numbers as the P scheme. */
int mb_ctx_create(int method, const model_config_t *mc, int64_t n, const float *x, const csr_t *a,
                  int64_t nb_max, int64_t halo_max, hist_dtype_t dtype, int single_buffer, mb_ctx_t **out);
void mb_ctx_free(mb_ctx_t **c);
/* The batch operator of the ctx's method; it aggregates over the batch last set. */
void mb_ctx_op(mb_ctx_t *c, nn_agg_t *op);
void mb_ctx_set_batch(mb_ctx_t *c, const batch_t *b);
/* IncAgg: S <- P (not in single_buffer mode: S is already current), M <- Â S at every history
 * site. No-op for other methods. */
int mb_ctx_refresh(mb_ctx_t *c);
/* IncAgg: the fused eval + refresh full-graph operator (see above). */
void mb_ctx_refresh_op(mb_ctx_t *c, nn_agg_t *op);
/* 1 when site s reads the model input x (no history there). */
int mb_ctx_fixed_site(const mb_ctx_t *c, int site);
int mb_ctx_num_sites(const mb_ctx_t *c);
/* Tables, NULL where the method or site has none: 'H' GAS history, 'M' baseline, 'S'
 * snapshot, 'P' push buffer. */
hist_t *mb_ctx_table(mb_ctx_t *c, char which, int site);
const mem_arena_t *mb_ctx_arena(const mb_ctx_t *c);
/* Seconds spent in the batch operator's forward / backward, and Σ nnz(Â_BB) / Σ nnz(Â rows of
 * B) over the forward calls (the share of a batch's edges that stay inside it). */
void mb_ctx_times(const mb_ctx_t *c, double *fwd_s, double *bwd_s, double *intra_fraction);
void mb_ctx_reset_times(mb_ctx_t *c);

/* Options beyond train_config_t and figures beyond train_result_t (for `inca bench epoch`). */
typedef struct mb_opts {
    int eval_every_epoch;     /* 1 (inca train): evaluate each epoch, report the best-valid
                                 epoch; 0: evaluate once after the last epoch */
    int prefetch;             /* loader thread (1) */
    int single_buffer;        /* 1 (default): IncAgg drops its P tables when the refresh period
                                 is one epoch (mb_ctx_create); 0: always the P scheme (tests) */
    int warmup_epochs;        /* the first this many epochs are left out of every time and
                                 count in mb_stats_t (benchmarks: first-touch page faults of
                                 workspaces and tables land in epoch 0); default 0 */
} mb_opts_t;
void mb_opts_default(mb_opts_t *o);

/* One block of the memory arena: its label ("hist0", "M1", "scratch_halo", ...) and bytes. */
typedef struct mb_table { char label[32]; int64_t bytes; } mb_table_t;

typedef struct mb_stats {
    double step_s_total, refresh_s_total, eval_s_total, wait_s, build_s;
    double init_s;            /* IncAgg's one-off initial snapshot pass (not in refresh_s_total) */
    double agg_fwd_s, agg_bwd_s, intra_fraction;   /* see mb_ctx_times */
    double step_cpu_s, refresh_cpu_s, eval_cpu_s;   /* process CPU seconds (all threads) */
    int64_t steps, refreshes, evals, fused;
    int64_t table_bytes;      /* all history tables and operator scratch (arena) */
    int64_t loader_bytes;
    int64_t steps_per_epoch;
    int64_t timed_epochs;     /* epochs in the times above (epochs run - warmup_epochs) */
    mb_table_t *tables;       /* the arena's blocks at the end of the run, in allocation order
                                 (ntables of them; owned: mb_stats_free) */
    int ntables;
} mb_stats_t;
/* Frees st->tables; NULL-safe, leaves st reusable. Call after every mb_train given an st. */
void mb_stats_free(mb_stats_t *st);

/* One run of a mini-batch method on d with the given partitioning (borrowed; p->n == d->n),
 * seed c->seed. Fills r like train_minibatch and st (may be NULL). */
int mb_train(const dataset_t *d, const train_config_t *c, const int64_t *train_idx, int64_t n_train,
             int run, const partition_t *p, const mb_opts_t *o, train_result_t *r, mb_stats_t *st);
#endif
