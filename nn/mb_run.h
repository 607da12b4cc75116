/* One mini-batch run's state, shared by the phases of nn/train_mb.c: internal to nn/, included
 * by the mb_* modules only, each of which owns a part of it:
 *   mb_data   the renumbered dataset (R->D)
 *   mb_place  where the features and the operator's tables live (device or host), the tables'
 *             halo exchanges
 *   mb_setup  everything else made before the first epoch (loaders, model, optimiser, ranks,
 *             buffers, checkpoint blobs), the resume, and the release of all of it
 *   mb_step   one optimiser step: a batch's forward and backward, the ranks' gradient sums
 *   mb_pass   the view loader's layer-wise passes: evaluation and IncAgg's refreshes
 * The modules form layers (train_mb -> setup, step, pass -> place -> data), never a circle. */
#ifndef INCA_NN_MB_RUN_H
#define INCA_NN_MB_RUN_H
#include <stdint.h>
#include <time.h>
#include "core/comm.h"
#include "graph/dist.h"
#include "graph/partition.h"
#include "kernels/backend.h"
#include "loaders/batch.h"
#include "memory/agg.h"
#include "memory/halo.h"
#include "nn/checkpoint.h"
#include "nn/layer.h"
#include "nn/mb_config.h"
#include "nn/mb_data.h"
#include "nn/model.h"
#include "nn/optim.h"
#include "nn/train_common.h"
#include "nn/train_xfer.h"
#include "nn/wavg.h"

#define MB_MAX_WORKERS 64

/* Everything one run owns. */
typedef struct mb_run {
    const train_config_t *c;
    const mb_opts_t *o;
    const partition_t *p;
    int run, method;
    int32_t C;
    mb_data_t D;
    model_config_t mc;
    batch_source_t src;
    batch_opts_t bo;
    batch_loader_t *ld;         /* the loader (rank 0's with --workers) */
    int workers;                /* ranks: simulated (--workers) or MPI processes (1: one process) */
    comm_t *comm;               /* MPI: the job's ranks (c->comm with more than one rank), else NULL */
    int rank;                   /* MPI: this process's rank (0 otherwise) */
    halo_t *halo;               /* MPI incagg push: the rows of S this rank's rows of Â read */
    halo_dev_t *hx;             /* MPI on a device: the halo rows' staging (nn/train_xfer.h) */
    float *gsend, *grecv;       /* MPI: [had, loss, gradients] of this rank / of every rank */
    int64_t gfloats;            /* floats of one rank's record (2 doubles first) */
    char ckdir[4096];           /* MPI: this rank's checkpoint directory */
    dist_plan_t plan;           /* --workers: which parts each rank owns */
    batch_loader_t *lds[MB_MAX_WORKERS];   /* --workers: rank r's loader (lds[0] == ld) */
    int64_t spe_r[MB_MAX_WORKERS];
    float **gacc;               /* --workers: per-parameter gradient sums (context memory) */
    int ngacc;
    model_t *m;
    optim_t *opt;
    agg_t *agg;
    nn_agg_t op_batch, op_full, op_refresh;
    nn_agg_dev_t full;
    kern_ctx_t *kc;
    int dev;                    /* kc is not the CPU: inputs are uploaded, losses read per epoch */
    kern_mat_t *a_m, *at_m;     /* Â, Âᵀ on the context */
    float *x_d;                 /* the renumbered features on the context (D.x itself on the CPU;
                                   NULL when x_host) */
    int x_host;                 /* on a device, the features stay in host memory (D.x): a step's
                                   rows go up with its batch, a pass's panel rows with the panel */
    int32_t *y_d;
    int64_t *tr_d, *va_d, *te_d;
    float *xb_d;                /* a batch's rows of x (device) */
    int xs_on;                  /* --input-layer transform-first with sparse rows (nn/mb_sparse.h) */
    csr_t xs, xsb;              /* then: all of x as CSR, and the batch's rows (capacity xsb_cap) */
    csr_t m0s;                  /* then, incagg: M^0 = ÂX as a CSR (the operator's baseline at site 0) */
    int64_t xsb_cap, xsb_rows;
    int64_t m0b_cap;            /* the most nonzeros of M^0 a batch's rows hold */
    train_placement_t place;    /* --device-memory-budget: the budget and what went where */
    double *losses_d;           /* spe: each step's loss, read back at the epoch's end */
    train_meter_t *meter_d;
    float *logp, *dlogits, *lorig, *lhost;
    int64_t *iperm, *snodes;    /* on_step: new -> dataset id (n), a batch's loss nodes in it (nbm) */
    float *shost;               /* on_step off the CPU: a batch's logits on the host (nbm x C) */
    double *losses_h;           /* spe (host) */
    uint8_t *step_has_loss;     /* spe: the step had training rows */
    int64_t *lidx;
    ckpt_blob_t *blobs;
    int nblobs;
    int stream;                 /* the view path: layer-wise passes over row panels */
    kern_mat_t **apan;          /* row panels of Â (views of a_m) */
    int npan;
    int64_t pan_rows;
    int64_t *pan_r0;            /* each panel's first row */
    int64_t tr_lo, tr_n, va_lo, va_n, te_lo, te_n;   /* MPI view: this rank's slices of tr/va/te */
    float *logits_all;          /* n x C, the passes' output (context memory) */
    float *pan_in;              /* --pass-dtype bf16: a panel's input rows decoded (context memory) */
    float *pan_x;               /* x_host: a panel's rows of x (context memory) */
    uint16_t *pan_m0;           /* x_host, bf16 M^0 in host memory: a panel's rows as they go up */
    float *pan_h;               /* x_host: a panel's Â X computed on the CPU (pinned) */
    kern_mat_t *a_h, **apan_h;  /* x_host: Â and its panels on the CPU (views of D.a) */
    int tables_host;            /* auto: the tables went to the host to make room for host features' staging */
    int tables_auto_host;       /* auto: the tables went to the host, not fitting the device budget */
    int64_t anon_need;          /* --memory-budget: what the batch needs (checked) */
    int64_t anon_base;          /* --memory-budget: the process's anonymous memory at the start */
    int64_t spe, R, gstep;
    int64_t nb_max, halo_max;   /* the largest batch and halo of any rank's loader (the job's) */
    train_best_t best;
    double epoch_s, train_loss;
    double wait0, build0;   /* the loaders' wait and build seconds when the timed epochs began */
    ckpt_state_t carried;       /* a resume: the evaluations and refreshes before it (counts, seconds) */
    int ep0, epochs_run, finished, fused_pending;
    int init_pass;              /* the initial snapshot pass is running (its traffic: setup) */
    wavg_t *avg;                /* the weights evaluated (train_eval_average > 0), else NULL */
    int64_t nva_all;            /* validation nodes of the whole job (a shard holds its share) */
    uint64_t order;             /* checkpoints: the tables' node order (a hash of p->perm, never 0) */
} mb_run_t;

/* CPU seconds of the whole process (all threads, the loader's included): a load-robust
 * companion to wall time on shared machines. */
static inline double mb_cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
#endif
