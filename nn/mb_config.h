/* What a mini-batch run (nn/train_mb.h) is given beyond train_config_t and gives back beyond
 * train_result_t, for `inca bench epoch` and the tests; and the model's aggregation sites as the
 * operators of memory/agg.h see them. */
#ifndef INCA_NN_MB_CONFIG_H
#define INCA_NN_MB_CONFIG_H
#include <stdint.h>
#include "nn/model.h"

/* Options beyond train_config_t. */
typedef struct mb_opts {
    int eval_every_epoch;     /* 1 (inca train): evaluate each epoch, report the best-valid
                                 epoch; 0: evaluate once after the last epoch */
    int prefetch;             /* loader thread (1) */
    int single_buffer;        /* 1 (default): a push-source IncAgg drops its P tables when the
                                 refresh period is one epoch; 0: always the P scheme (tests) */
    int warmup_epochs;        /* the first this many epochs are left out of every time and
                                 count in mb_stats_t (benchmarks: first-touch page faults of
                                 workspaces and tables land in epoch 0); default 0 */
    const struct layout_views *view;   /* NULL: the copy path (d->x renumbered in memory, whole-
                                 graph evaluation). Else the view path: the features (and M^0
                                 when it holds one) are these arrays of the store's layout
                                 (nn/layout.h; d->x is not read and may be NULL), the model's
                                 workspace is sized for a batch, and evaluation, IncAgg's
                                 initial snapshot and recompute refreshes run layer by layer
                                 over row panels of a batch's size (model_forward_layer), so
                                 nothing of n x hidden lives outside the operator's tables and
                                 pass buffers. Needs a gcn or sage model */
} mb_opts_t;
void mb_opts_default(mb_opts_t *o);

/* One block of the memory arena: its label ("hist0", "M1", "scratch_halo", ...) and bytes. */
typedef struct mb_table { char label[32]; int64_t bytes; } mb_table_t;

typedef struct mb_stats {
    double step_s_total, refresh_s_total, eval_s_total, wait_s, build_s;
    double init_s;            /* IncAgg's one-off initial snapshot pass (not in refresh_s_total) */
    double agg_fwd_s, agg_bwd_s, intra_fraction;   /* see agg_times */
    double step_cpu_s, refresh_cpu_s, eval_cpu_s;   /* process CPU seconds (all threads) */
    int64_t steps, refreshes, evals, fused;
    int64_t table_bytes;      /* the operator's history tables (H, M, S, P) */
    int64_t scratch_bytes;    /* the operator's scratch buffers */
    int64_t loader_bytes;
    int64_t spilled_bytes;    /* table bytes in file-backed maps (--memory-budget) */
    int64_t anon_need_bytes;  /* view path: what a batch needs in anonymous memory (workspace,
                                 loader, adjacency, scratch), checked against the budget */
    int64_t anon_baseline_bytes;  /* --memory-budget: the process's anonymous memory when the run
                                     started, counted before anon_need_bytes */
    int64_t steps_per_epoch;
    int64_t timed_epochs;     /* epochs in the times above (epochs run - warmup_epochs) */
    mb_table_t *tables;       /* the arena's blocks at the end of the run, in allocation order
                                 (ntables of them; owned: mb_stats_free) */
    int ntables;
} mb_stats_t;
/* Frees st->tables; NULL-safe, leaves st reusable. Call after every mb_train given an st. */
void mb_stats_free(mb_stats_t *st);

/* The sites of a model as memory/agg.h describes them: count, widths, and which read x
 * (gcn/sage site 0). dims and fixed hold AGG_MAX_SITES entries. */
int mb_model_sites(const model_config_t *mc, int64_t *dims, uint8_t *fixed);
/* The width a model with input_transform_first aggregates x at (layer 0's output width, when it
 * narrows: agg_config.x_tf_dim), else 0. */
int64_t mb_x_tf_dim(const model_config_t *mc);
#endif
