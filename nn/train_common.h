/* What every trainer shares: the configuration and result of a training run, and the helpers
 * (feature preprocessing, weight-decay policy, evaluation, best-epoch tracking, metrics lines).
 * It includes none of the trainers: the entry (nn/train.h, train_run) dispatches to the
 * full-batch trainer (nn/train_full.h), the mini-batch methods cluster, gas and incagg
 * (nn/train_mb.h, on memory/agg.h's operators) and the data-parallel one (nn/train_dist.h),
 * each of which includes this header; the prepared data they share is nn/train_prep.h.
 * Tested in tests/test_train.c (trainer on small graphs, determinism, runs, overrides) and
 * tests/test_e2e_train.c (the CLI on the bundled Cora).
 *
 * CAVEATS FIRST
 * - Accuracies are fractions in [0,1]. Nodes with y < 0 are ignored in loss and accuracy.
 * - Test accuracy is reported at the best validation epoch: highest validation accuracy, ties
 *   broken by lower validation loss, then by the earlier epoch (select_loss = 1: lowest
 *   validation loss, as GCNII's reference code selects). Without a validation split the last
 *   epoch counts as best. Patience counts epochs since that best.
 * - Per epoch the full-batch trainer runs: training forward (dropout), loss on the train rows,
 *   backward, optimiser step, then one eval-mode forward on all nodes for valid/test.
 * - To train on other labels (pseudo-labels), pass a shallow copy of the dataset whose y points
 *   at them; nothing in the dataset is modified or freed.
 */
#ifndef INCA_NN_TRAIN_COMMON_H
#define INCA_NN_TRAIN_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include "core/comm.h"
#include "graph/partition.h"
#include "loaders/dataset.h"
#include "memory/agg.h"
#include "memory/history.h"
#include "nn/model.h"
#include "nn/optim.h"

enum { TRAIN_FEATNORM_NONE = 0, TRAIN_FEATNORM_ROW = 1, TRAIN_FEATNORM_STANDARD = 2 };
enum { TRAIN_LOADER_AUTO = 0, TRAIN_LOADER_COPY = 1, TRAIN_LOADER_VIEW = 2 };
#define TRAIN_VIEW_FRACTION 0.125   /* auto: features above 1/8 of physical memory go by view */
/* IncAgg's default refresh source (memory/agg.h), chosen from the measurements in README.md. */
#define TRAIN_REFRESH_SOURCE_DEFAULT AGG_SRC_RECOMPUTE
/* The fraction of the way a recompute refresh moves IncAgg's snapshot (memory/agg.h, issue 33). */
#define TRAIN_REFRESH_RELAX_DEFAULT 0.15

/* Called after every epoch's evaluation with the eval-mode logits of all d->n nodes (n x c,
 * valid during the call only). Return non-zero to stop with that status. For pruning
 * (training dynamics). */
typedef int (*train_epoch_cb)(void *ctx, int run, int epoch, const float *logits, int64_t n, int32_t c);
/* Called in every training step, before its backward pass, with the training-mode logits (the
 * step's own forward: dropout on, parameters before the update) of the m rows that have a loss:
 * nodes[j] (the dataset's numbering) is row rows[j] of logits (c wide; host memory, valid during
 * the call only). Each training node comes once per epoch in the methods that visit it once
 * (full, the MLP's mini-batches, cluster/gas/incagg batches). One process only. For pruning
 * (training dynamics from the steps). */
typedef int (*train_step_cb)(void *ctx, int run, int epoch, const int64_t *nodes, const int64_t *rows, int64_t m,
                             const float *logits, int32_t c);
/* Status lines for a person (the library never prints): TRAIN_LOG_PROGRESS lines replace each
 * other (a progress bar on a terminal), TRAIN_LOG_INFO lines stay. `line` has no newline and is
 * valid during the call only. */
enum { TRAIN_LOG_INFO = 0, TRAIN_LOG_PROGRESS = 1 };
typedef void (*train_log_cb)(void *ctx, int level, const char *line);

/* The training methods (--method): full-batch, or a mini-batch method on memory/agg.h's
 * operators (train_method_agg gives its AGG_* value, -1 for full). */
typedef enum { TRAIN_FULL = 0, TRAIN_CLUSTER = 1, TRAIN_GAS = 2, TRAIN_INCAGG = 3, TRAIN_METHOD_COUNT = 4 } train_method_t;
#define TRAIN_MODEL_AUTO (-1)

typedef struct train_config {
    int model;                 /* NN_* (nn/layer.h; default NN_GCN); TRAIN_MODEL_AUTO: chosen from
                                  the dataset by the caller (pruning: gcn on a graph, else mlp) */
    train_method_t method;     /* TRAIN_FULL (default) | TRAIN_CLUSTER | TRAIN_GAS | TRAIN_INCAGG */
    int layers;                /* see model_config_t.layers (default 2) */
    int64_t hidden;            /* 16 */
    int epochs;                /* 200 */
    double lr;                 /* 0.01 */
    double dropout;            /* 0.5 */
    double weight_decay;       /* 5e-4, on every parameter (or see the two fields below) */
    int wd_first_layer_only;   /* 1: weight decay only on NN_P_FIRST parameters (Kipf & Welling) */
    double wd_conv;            /* gcnii conv weights (NN_P_CONV); < 0: use weight_decay */
    int adamw;                 /* 1: decoupled weight decay (AdamW) instead of L2 in the grad */
    double beta1;              /* Adam's first-moment decay; < 0 (default): train_beta1_auto */
    double eval_average;       /* mini-batch methods: evaluate an average of the weights with this
                                  decay per step (nn/wavg.h; 0: the weights themselves);
                                  < 0 (default): train_eval_average_auto */
    int feature_norm;          /* TRAIN_FEATNORM_* (default none) */
    uint64_t seed;             /* run i uses seed + i: parameters, dropout, batches */
    int threads;               /* 0: leave inca_threads() as it is */
    int runs;                  /* >= 1 */
    int patience;              /* stop after this many evaluations without a new best (0: never) */
    int eval_every;            /* evaluate (and checkpoint) after every this many epochs and after
                                  the last (--eval-every; default 1) */
    int select_loss;           /* 1: best epoch = lowest validation loss (default 0: accuracy) */
    int metric;                /* TRAIN_METRIC_*: the validation figure that picks the best epoch
                                  (default accuracy); every one is reported */
    double alpha, theta;       /* gcnii / appnp (0.1, 0.5) */
    int K;                     /* appnp (10) */
    int batchnorm, residual;
    int64_t batch_size;        /* mlp with method full: > 0 = mini-batch SGD, this many training
                                  rows per optimiser step (reshuffled every epoch); 0: one
                                  full-batch step per epoch (default). Graph models reject it. */
    int dense_input;           /* 1: never use the sparse-input path (default 0: features with
                                  <= 25% nonzeros go in as a CSR, see model_set_sparse_input) */
    const char *metrics_path;  /* JSON Lines per epoch (borrowed; NULL: none) */
    FILE *metrics_fp;          /* set by train_run (opened from metrics_path); trainers write
                                  train_metrics_line here when non-NULL */
    train_log_cb log;          /* status and progress lines (NULL: none) */
    void *log_ctx;
    const char *device;        /* "cpu" (default) | "cuda" | "auto" (kernels/backend.h) */
    int deterministic;         /* cuda: bit-reproducible SpMM (cuSPARSE ALG3) */
    int tf32;                  /* cuda: GEMMs on TF32 tensor cores (off: plain fp32) */
    struct kern_prof *prof;    /* kernels/profile.h: every op of the run timed by kind (bench epoch
                                  --breakdown; borrowed); NULL (default): none */
    struct kern_ctx *kc;       /* the context the trainers run on: set by train_run from device
                                  (borrowed; NULL = the shared CPU context) */
    /* mini-batch methods (issue 4) */
    int parts;                 /* METIS parts (default 40) */
    int batch_parts;           /* parts per batch (default 10) */
    int refresh;               /* incagg: refresh every R steps (0: once per epoch) */
    int refresh_source;        /* incagg: AGG_SRC_PUSH | AGG_SRC_RECOMPUTE (memory/agg.h;
                                  default TRAIN_REFRESH_SOURCE_DEFAULT) */
    double refresh_relax;      /* incagg, recompute source: a refresh moves S and M this fraction
                                  of the way to the exact rows, in (0, 1] (--refresh-relax;
                                  default TRAIN_REFRESH_RELAX_DEFAULT; 1: replaced) */
    int input_layer;           /* cluster, incagg, gcn: TRAIN_INPUT_AGGREGATE_FIRST (default: the
                                  first layer aggregates x at its width, then multiplies by W) or
                                  TRAIN_INPUT_TRANSFORM_FIRST (--input-layer transform-first: the
                                  operator's affine form, M^0_B W + Â_BB (D W), D sparse when x
                                  is; the same maths, other bits; nn/layer.h) */
    int refresh_eval_separate; /* incagg, recompute source: 0 (default, --refresh-eval fused) a
                                  refresh due at an epoch end shares the evaluation's eval-mode
                                  pass (its time is the refresh's); 1 (--refresh-eval separate)
                                  the refresh runs its own pass and the evaluation another, so
                                  each is timed apart. The same model either way, but the two
                                  evaluations sum in another order (last bits of the logits) */
    int refresh_weights;       /* incagg, recompute source: the weights a refresh computes the
                                  exact rows with (--refresh-weights): TRAIN_REFW_AVERAGE the
                                  evaluation's average (eval_average > 0), TRAIN_REFW_LAST the
                                  training weights, TRAIN_REFW_AUTO (default) average when the
                                  evaluation averages, else last (train_refresh_averaged) */
    int cluster_global_norm;   /* cluster: 0 (default) Â_BB renormalised on the batch subgraph
                                  (Cluster-GCN as published); 1 the global Â restricted to B */
    hist_dtype_t history_dtype; /* HIST_F32 (default) | HIST_BF16 (memory/history.h) */
    hist_dtype_t pass_dtype;   /* --loader view: the layer-wise passes' buffers, HIST_F32 (default)
                                  or HIST_BF16 (half their bytes; hidden outputs rounded to bf16
                                  between the layers of an evaluation or refresh) */
    int history_host;          /* on a device, where the history tables live (--history-location):
                                  TRAIN_HIST_DEVICE, TRAIN_HIST_HOST, or TRAIN_HIST_AUTO (default:
                                  on the device when they fit the device memory budget beside what
                                  the run always keeps there, else in host memory). Always host
                                  memory on the CPU */
    int features_host;         /* on a device, where the features live (--features-location, the
                                  same words): auto (default) puts them on the device when they fit,
                                  else in host memory, where a step's rows travel with its batch and
                                  the passes read M^0 (or a CPU SpMM) for the first aggregation;
                                  host needs --loader view and a method whose steps read no feature
                                  rows outside the batch (incagg, cluster) */
    int64_t device_memory_budget;  /* on a device: bytes of device memory the run may hold
                                  (--device-memory-budget; 0, the default: what the device has
                                  free when the run starts). Every device allocation is admitted
                                  against it (kernels/backend.h kc_mem_limit) */
    char partition[64];        /* stored partitioning name ("" = default) */
    int loader;                /* mini-batch: TRAIN_LOADER_COPY (the dataset in memory, renumbered
                                  there, whole-graph evaluation), TRAIN_LOADER_VIEW (features and
                                  M^0 mapped from the store's partition-ordered layout,
                                  nn/layout.h; evaluation and refreshes layer by layer over row
                                  panels) or TRAIN_LOADER_AUTO (default: view when the features
                                  take more than TRAIN_VIEW_FRACTION of physical memory or a
                                  memory budget is set; see train_loader_resolve; train_run
                                  itself takes auto as view only when d->x is not loaded) */
    int workers;               /* simulate this many data-parallel ranks in one process
                                  (graph/dist.h: each owns a contiguous range of the parts).
                                  Mini-batch: each draws its batches there; a step's gradients
                                  are averaged over the ranks in rank order; GAS's halo pulls
                                  see the histories as the step began. Full-batch: the ranks
                                  run as threads (nn/train_dist.h). <= 1: one rank (default).
                                  Not with BatchNorm */
    struct comm *comm;         /* core/comm.h: under mpirun with more than one rank, mini-batch
                                  methods train data-parallel with this process as one rank
                                  (equal, bit for bit, to --workers P in one process); NULL or one
                                  rank: one process */
    int keep_params;           /* 1: train_result.params receives the last run's final parameters */
    /* a rank's shard (nn/shard.h; borrowed, NULL: from the store): its partitioning, its arrays
     * in the global numbering (the view path), the ownership plan of the job */
    const struct partition *given_partition;
    const struct layout_views *given_views;
    const struct dist_plan *given_plan;
    int grad_reduce;           /* MPI: TRAIN_GRAD_CHAIN (default: an ordered chain, ~2 gradient
                                  records sent per rank) or TRAIN_GRAD_ALLGATHER (every record to
                                  every rank); the same bits either way. TRAIN_GRAD_NCCL: NCCL's
                                  all-reduce between the ranks' GPUs (one GPU per rank; its own
                                  summation order: not the bits of the other two) */
    int64_t memory_budget;     /* view loader: bytes of anonymous memory for the run (0: no
                                  limit); history tables past what the batch needs go to
                                  file-backed maps in the store's folder */
    int64_t memory_baseline;   /* with memory_budget: the process's own anonymous memory, counted
                                  against the budget before the run's (-1, the default: RssAnon
                                  of /proc/self/status when the run starts; >= 0: these bytes) */
    const char *store_path;    /* the store the dataset came from (borrowed; may be NULL): the
                                  mini-batch trainers load "metis-K-s0" from it when stored
                                  (inca partition), else compute it and store it there */
    /* checkpoints (nn/checkpoint.h; method full) */
    const char *checkpoint_dir;  /* borrowed; NULL: none. DIR/run-<i>.ckpt after every epoch */
    int resume;                  /* 1: continue each run from its checkpoint when there is one */
    /* hooks (pruning) */
    train_epoch_cb on_epoch;   /* may be NULL */
    void *on_epoch_ctx;
    train_step_cb on_step;     /* may be NULL */
    void *on_step_ctx;
    float *out_logits;         /* NULL or n x c: eval logits at the best epoch of the last run */
} train_config_t;

enum { TRAIN_GRAD_CHAIN = 0, TRAIN_GRAD_ALLGATHER = 1, TRAIN_GRAD_NCCL = 2 };
extern const char *const train_grad_reduce_words[3];   /* "chain", "allgather", "nccl" */
enum { TRAIN_METRIC_ACC = 0, TRAIN_METRIC_BACC = 1, TRAIN_METRIC_F1 = 2 };
/* The words of the enums' flags, indexed by their values (TRAIN_FEATNORM_*, TRAIN_METRIC_*,
 * TRAIN_LOADER_*, train_method_t, refresh_eval_separate, history_host, cluster_global_norm): the names the JSON
 * prints, and what the command line's parsers (core/args.h args_word, in cli/ and bench/) take. */
extern const char *const train_method_words[TRAIN_METHOD_COUNT];
extern const char *const train_featnorm_words[3];
extern const char *const train_metric_words[3];
extern const char *const train_loader_words[3];
extern const char *const train_refresh_eval_words[2];
enum { TRAIN_INPUT_AGGREGATE_FIRST = 0, TRAIN_INPUT_TRANSFORM_FIRST = 1 };
extern const char *const train_input_layer_words[2];
enum { TRAIN_HIST_DEVICE = 0, TRAIN_HIST_HOST = 1, TRAIN_HIST_AUTO = 2 };
extern const char *const train_history_location_words[3];
extern const char *const train_cluster_norm_words[2];
enum { TRAIN_REFW_LAST = 0, TRAIN_REFW_AVERAGE = 1, TRAIN_REFW_AUTO = 2 };
extern const char *const train_refresh_weights_words[3];
const char *train_metric_name(int metric);
/* "full" | "cluster" | "gas" | "incagg" ("?" outside the enum): what the JSON prints. */
const char *train_method_name(train_method_t m);
int train_method_agg(train_method_t m);
/* The model's name (nn/model.h model_kind_name), "auto" for TRAIN_MODEL_AUTO. */
const char *train_model_name(int model);
/* 1 when an epoch's last IncAgg refresh shares the evaluation's pass (recompute source,
 * --refresh-eval fused, and the evaluation uses the refresh's weights: the weights themselves,
 * or their average refreshed from, train_refresh_averaged), else 0. The trainer decides by it;
 * train_refresh_eval_name says it in the JSON's refresh_eval: "fused" or "separate". */
int train_refresh_fused(const train_config_t *c);
const char *train_refresh_eval_name(const train_config_t *c);
/* 1 when a test accuracy stays near chance: under the test split's largest class share (*share:
 * what always answering that class scores) plus 2 points, or under 1.5 / classes (1/C + 0.5/C),
 * each margin at most a quarter of the way from its chance level to 100% (a 99:1 split's bar is
 * 0.9925, not 1.01; two balanced classes' is 0.625, not 0.75); 0 without a figure to judge (NaN,
 * fewer than 2 classes). What inca train and inca prune --eval warn of. */
int train_near_chance(const dataset_t *d, double acc, double *share);
/* INCA_EINVAL for a run without training nodes, naming c's store and the flags that give some
 * (a store ingested without splits, an edge list or a METIS file, has none). */
int train_fail_no_train_nodes(const train_config_t *c);
void train_config_default(train_config_t *c);
/* Adam's beta1 when --beta1 is not given: 0.9 (the usual) for full, cluster and the MLP; for
 * the methods with histories (gas, incagg) whose batches leave parts out (batch_parts < parts)
 * TRAIN_BETA1_HISTORY (issue 33, README "Histories and momentum"). train_beta1: the configured
 * value, else this. */
#define TRAIN_BETA1_HISTORY 0.0
double train_beta1_auto(const train_config_t *c);
/* The weight average's decay when --eval-average is not given: 1 - B/K (an average over about
 * the last epoch's steps) for cluster, gas and incagg when a batch of B parts leaves some of the
 * K parts out, else 0 (full-batch, one batch of every part: the weights themselves).
 * train_eval_average: the configured value, or the automatic one. */
double train_eval_average_auto(const train_config_t *c);
double train_eval_average(const train_config_t *c);
/* 1 when an IncAgg recompute refresh computes its rows with the evaluation's averaged weights
 * (--refresh-weights average, or auto with an averaged evaluation), else 0 (the training
 * weights). Why (issue 33): the last iterate carries the last few batches' pull into every
 * out-of-batch row for the whole refresh period; the average over about an epoch's steps does
 * not, and a snapshot made from it no longer falls 10 points in the early epochs. */
int train_refresh_averaged(const train_config_t *c);
/* "average" | "last": the JSON's refresh_weights (what train_refresh_averaged decided). */
const char *train_refresh_weights_name(const train_config_t *c);
double train_beta1(const train_config_t *c);

/* Where a run's memory was on the device (--device-memory-budget): its budget, the part of it
 * held back for the workspaces the libraries allocate during the steps, the device bytes held
 * per use when training began (kernels/backend.h tags: graph, features, labels, model,
 * activations, optimizer, buffers, operator, tables, ...), the peak over the run, and where the
 * history tables went. Measured by the context's accounting, not estimated. */
#define TRAIN_PLACE_MAX 24
typedef struct train_placement {
    int on_device;                       /* the run's context is a device (CUDA or emu) */
    int64_t budget, reserve;             /* 0 budget: none (the emulated device without a size) */
    int64_t peak, total;                 /* device bytes: the run's peak; the device's memory (0: unknown) */
    int nuse;
    const char *use[TRAIN_PLACE_MAX];    /* static strings */
    int64_t bytes[TRAIN_PLACE_MAX];
    int tables_host;                     /* mini-batch: the tables were in host memory */
    int64_t host_table_bytes;            /* ... of these bytes */
    int64_t host_feature_bytes;          /* mini-batch: the features' bytes left in host memory (0: on the device) */
    /* mini-batch, last run: bytes kc_copy moved host to device and back during the optimiser
     * steps (batch uploads, table rows, pushes) and during IncAgg's refreshes, and their counts */
    int64_t step_h2d, step_d2h, steps, refresh_h2d, refresh_d2h, refreshes;
    int64_t train_allocs;                /* blocks allocated after setup, during training (0: the
                                            steps, refreshes and evaluations allocate nothing) */
    int64_t allocs0;                     /* the context's count of those before this run */
    int ranks;                           /* full-batch thread ranks on one device: peak and budget
                                            are their sum, uses rank 0's (0 or 1: one context's) */
} train_placement_t;

typedef struct train_result {
    double test_acc, val_acc;            /* mean over runs */
    double test_bacc, val_bacc, test_f1, val_f1;   /* balanced accuracy and macro F1 at the best
                                            epochs, mean over runs (NaN: not measured) */
    double test_acc_std, val_acc_std;    /* sample std over runs (n-1; 0 for one run) */
    double train_loss;                   /* last epoch of the last run */
    int best_epoch;                      /* of the last run (0-based) */
    int epochs;                          /* epochs run in the last run */
    double epoch_time_s;                 /* mean wall time per epoch incl. evaluation */
    double step_time_s;                  /* mean time of one optimiser step (fwd+bwd+update) */
    double refresh_time_s;               /* mean time per refresh (incagg; 0 otherwise) */
    double eval_time_s;                  /* mean time per evaluation that ran alone */
    int64_t refreshes, evals, fused;     /* last run: refreshes (fused ones included), evaluations
                                            that ran alone, refreshes fused with an evaluation */
    double peak_rss_mb;
    int64_t table_bytes;                 /* mini-batch: the operator's history tables (last run) */
    int64_t scratch_bytes;               /* mini-batch: the operator's scratch buffers (last run) */
    int history_on_host;                 /* mini-batch: the tables were in host memory */
    int features_on_host;                /* mini-batch on a device: the features stayed in host memory */
    int input_sparse;                    /* mini-batch, --input-layer transform-first: the batches'
                                            rows of x went to the model sparse (nn/mb_sparse.h) */
    train_placement_t placement;         /* last run: device memory (on_device 0 on the CPU) */
    int runs;
    char device[16];                     /* the backend the runs used ("cpu"; auto resolved) */
    char loader[8];                      /* mini-batch: "copy" | "view" (auto resolved); "" full */
    char partition[64];                  /* the partitioning trained on (its stored name: mini-batch,
                                            or full-batch's ranks); "" for one full-batch process */
    int64_t edge_cut;                    /* that partitioning's edge cut; 0 with partition "" */
    int64_t spilled_bytes;               /* view loader: table bytes in file-backed maps */
    int64_t memory_baseline_bytes;       /* --memory-budget, last run: the process's anonymous memory
                                            when the run started (the dataset's graph apart) */
    int64_t memory_need_bytes;           /* --memory-budget, last run: what one batch needs beside it */
    double loader_wait_s, steps_s;       /* mini-batch, last run: seconds the trainer waited for the
                                            loader, and of all steps (wait included) */
    float *params;                       /* keep_params: the last run's parameters after its last
                                            epoch, in model_param order (owned) */
    int64_t nparams;                     /* mini-batch: the model's parameter count (always) */
    int64_t steps_per_epoch;             /* mini-batch: optimiser steps per epoch (the most of any rank) */
    int64_t comm_bytes[COMM_NPHASES];    /* MPI, last run: bytes this rank sent per phase, and */
    double comm_s[COMM_NPHASES];         /* seconds inside MPI (core/comm.h) */
    double *run_test_acc, *run_val_acc;  /* runs entries each, owned (train_result_free) */
    int *run_best_epoch;
} train_result_t;

void train_result_free(train_result_t *r);   /* frees the per-run arrays, zeroes *r */


/* The code of a refusal before training under the device budget: a --device-memory-budget the
 * run cannot fit is a flag's value too small (INCA_EINVAL, exit 2, as --memory-budget's); under
 * the device's own free memory it stays rc (exit 1). */
int train_budget_refusal_code(const train_config_t *c, int rc);
/* --device-memory-budget against the device's memory (where the backend knows it): a budget
 * over it is refused naming both (INCA_EINVAL), before anything is planned under it. */
int train_device_budget_check(const train_config_t *c, struct kern_ctx *kc);
/* --device-memory-budget at the start of a run's setup on kc: pl->budget is c's budget, or
 * what the device has free plus what kc already holds; the part held back for the workspaces
 * the libraries allocate at their first calls (CUDA: 64 MiB + 1%) in pl->reserve; kc's limit set
 * to the budget less the reserve until setup is done (then to the budget), its peak restarted,
 * later allocations tagged `first_use`. INCA_EINVAL on the CPU when a budget was given for
 * --device cpu. */
int train_device_budget_begin(const train_config_t *c, struct kern_ctx *kc, const char *first_use,
                              train_placement_t *pl);
/* After setup: what kc holds per use goes into pl. At the end: the peak and the device's total. */
void train_device_budget_setup_done(struct kern_ctx *kc, train_placement_t *pl);
void train_device_budget_end(struct kern_ctx *kc, train_placement_t *pl);
struct json;
/* pl as JSON keys (ARCHITECTURE.md's result line): peak_device_mb and device_total_mb (null on
 * the CPU / unknown), device_memory_budget_mb, and "placement": {"tables": "device"|"host",
 * "reserve_mb", "device_mb": {use: MB}, "host_mb": {"tables": MB}} on a device. */
void train_placement_json(struct json *j, const train_placement_t *pl, int mini_batch);

/* The loader a mini-batch run of c uses on a store with n x f features: c->loader, or for auto
 * view when c->memory_budget > 0 or n*f*4 bytes exceed TRAIN_VIEW_FRACTION of physical memory
 * (COPY for full-batch methods, which always hold the dataset). */
int train_loader_resolve(const train_config_t *c, int64_t n, int64_t f);

/* ---- helpers shared by the trainers ---- */
/* x_out (n x f, caller-allocated) = preprocessed x: row: divide each row by its sum (rows
 * summing to 0 stay 0, as Kipf & Welling); standard: per column zero mean, unit population std
 * (constant columns -> 0). Computed in double, deterministic. x_out may equal x. */
void train_features_prepare(int mode, int64_t n, int64_t f, const float *x, float *x_out);
/* INCA_EINVAL, naming the node and column, when mode is row and one of the cnt values of a
 * row-major x with f columns that start at flat index first (x points at that value) is negative:
 * a row's sum is then no scale (near 0 or negative, it blew rows up or flipped their signs; a
 * CSBM's GCN fell from 44% to chance); INCA_OK otherwise. */
int train_features_check(int mode, const float *x, int64_t first, int64_t cnt, int64_t f);
/* When at most max_density of x's n*f entries are nonzero, build *out (owned, values, n x f) and
 * return 1; else leave *out empty and return 0. Negative status on failure. */
int train_features_csr(int64_t n, int64_t f, const float *x, double max_density, csr_t *out);
/* model_config_t for dataset d under c (in_dim = d->f, out_dim = d->c, seed = seed). */
int train_model_config(const dataset_t *d, const train_config_t *c, uint64_t seed, model_config_t *mc);
/* Weight decay of parameter p under c (the policy: wd_first_layer_only, wd_conv). */
double train_param_wd(const train_config_t *c, const nn_param_t *p);

/* Best-epoch tracker: feed it every epoch's (val_acc, val_loss, test_acc). */
typedef struct train_best {
    int epoch; double val_acc, val_loss, test_acc; int since;   /* epochs since the best */
    int by_loss;                                                /* select by loss (set after init) */
    int metric;                 /* TRAIN_METRIC_*: what the validation comparison uses (after init) */
    double val_sel;             /* that metric's validation value at the best epoch */
    double val_bacc, val_f1, test_bacc, test_f1;   /* at the best epoch (NaN: not measured) */
} train_best_t;
void train_best_init(train_best_t *b);
/* Returns 1 when this epoch is the new best (by validation accuracy: b->metric is not read). */
int train_best_update(train_best_t *b, int epoch, double val_acc, double val_loss, double test_acc);
struct train_epoch_eval;
/* The same by b->metric, keeping every metric of the best epoch. */
int train_best_update_e(train_best_t *b, const struct train_epoch_eval *e);

/* The best epoch's figures of tracker b into r (epoch, accuracies, balanced accuracies, macro F1). */
void train_result_best(train_result_t *r, const train_best_t *b);
/* A run's figures into r: the tracker's best epoch and accuracies, the epochs run, the
 * evaluations run (--eval-every skips some), the last training loss, the per-epoch means of the
 * summed step and epoch seconds and the mean of an evaluation's. */
void train_result_set(train_result_t *r, const train_best_t *b, int epochs, int64_t evals, double loss, double t_step,
                      double t_eval, double t_epoch);

/* The optimiser of c (Adam or AdamW) over every parameter of m, one group per distinct weight
 * decay (train_param_wd). */
int train_optim_build(const train_config_t *c, model_t *m, optim_t **out);

/* The end of an epoch that every trainer shares, after its evaluation: best-epoch update (the
 * last epoch counts when there is no validation split), out_logits at the best epoch, the
 * on_epoch hook, the metrics line and the progress line. logits are in the dataset's node
 * order (n x c). Returns the hook's status (0 to go on). */
typedef struct train_epoch_eval {
    int run, epoch;
    double train_loss, train_acc, val_loss, val_acc, test_acc, epoch_s;
    double val_bacc, val_f1, test_bacc, test_f1;   /* balanced accuracy, macro F1 (NaN: not measured) */
    int64_t n_valid;
} train_epoch_eval_t;
/* Whether epoch ep (0-based) is evaluated: every c->eval_every-th and the last */
int train_eval_due(const train_config_t *c, int ep);
int train_epoch_end(const train_config_t *c, const train_epoch_eval_t *e, const float *logits, int64_t n,
                    int32_t nc, train_best_t *best);
/* A run that starts with --resume: says on c->log which epoch it continues from (ep0 of
 * c->epochs; 0: no checkpoint, from the start) and drops from the --metrics file (opened for
 * appending by train_run) this run's lines from epoch ep0 on: the resumed run writes them
 * again. INCA_EIO naming the file. */
int train_resume_note(const train_config_t *c, int run, int ep0);
/* After a resumed train_run: the metrics file f (path: for messages) sorted by run and epoch
 * (stable), so it reads as one uninterrupted training. */
int train_metrics_sort(FILE *f, const char *path);
/* Send one formatted line to c->log (nothing without one). */
/* An accuracy as text: "%.4f", or "-" when NaN (a split with no labelled row); returns buf. */
const char *train_acc_text(char *buf, size_t cap, double acc);
void train_log(const train_config_t *c, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Loss and accuracy accumulators in context memory: the ops write them, the trainer reads them
 * back once per epoch (slots: train, valid, test). */
#define TRAIN_MAX_CLASSES 256   /* per-class metrics (balanced accuracy, macro F1) up to this many classes */
typedef struct train_meter {
    double loss[3];
    int64_t count[3][2];  /* correct, counted */
    int64_t ncls;         /* classes in cls (0: per-class counts not taken); set on the host */
    int64_t cls[3][3 * TRAIN_MAX_CLASSES];   /* kern_class_counts per slot (valid, test) */
} train_meter_t;
/* Loss and accuracy of the eval `logits` (n x cc, context memory) over the train (optional:
 * tr_d NULL), validation and test ids (context memory), with one read-back: e->train_acc (when
 * tr_d), val_loss, val_acc, test_acc. logp: n x cc scratch on the context. */
/* train_eval_dev that also hands back the meter (out may be NULL), and the figures of a meter
 * (a sum of several ranks' meters: accuracies from the summed counts). */
int train_eval_meter(struct kern_ctx *kc, const float *logits, int64_t n, int64_t cc, const int32_t *y_d,
                     const int64_t *tr_d, int64_t ntr, const int64_t *vidx_d, int64_t nv, const int64_t *tidx_d,
                     int64_t nt, float *logp, train_meter_t *meter_d, train_epoch_eval_t *e, train_meter_t *out);
void train_eval_apply(const train_meter_t *h, int has_train, int64_t nv, train_epoch_eval_t *e);
/* r->params (replaced) <- m's parameters in model_param order (c->keep_params). */
int train_keep_params(struct kern_ctx *kc, model_t *m, train_result_t *r);
int train_eval_dev(struct kern_ctx *kc, const float *logits, int64_t n, int64_t cc, const int32_t *y_d,
                   const int64_t *tr_d, int64_t ntr, const int64_t *vidx_d, int64_t nv, const int64_t *tidx_d,
                   int64_t nt, float *logp, train_meter_t *meter_d, train_epoch_eval_t *e);
/* Write one JSON line {"run","epoch","train_loss","train_acc","val_loss","val_acc","test_acc",
 * "val_balanced_acc","val_macro_f1","test_balanced_acc","test_macro_f1","epoch_time_s"} of e to f
 * (NULL: nothing) through core/json.h; INCA_ENOMEM / INCA_EIO. */
int train_metrics_line(FILE *f, const train_epoch_eval_t *e);
/* t <- the sum of P ranks' meters all[0..P) in rank order: counts exactly, losses weighted by
 * their counts (the mean over the union). */
void train_meter_sum(train_meter_t *t, const train_meter_t *all, int P);
#endif
