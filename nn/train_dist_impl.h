/* Data-parallel full-batch training's internals (nn/train_dist.h), shared by its files and by
 * nothing else: the job's shared data, one rank's distributed operator and one rank's state.
 *   train_dist.c        the entry: checks, the shared data, the MPI rank or the thread ranks
 *   train_dist_epoch.c  one rank's run: resume, steps with the gradients summed, evaluations,
 *                       checkpoints, the result
 *   train_dist_rank.c   one rank's state made and freed: its rows, model, optimiser, buffers
 *   train_dist_op.c     one rank's distributed SpMM: its rows of Â, halo and site tables
 * Calls go one way: train_dist -> epoch -> rank -> op (and epoch -> op). Tested in
 * tests/test_train.c and tests/test_mpi.c. */
#ifndef INCA_NN_TRAIN_DIST_IMPL_H
#define INCA_NN_TRAIN_DIST_IMPL_H
#include <stdint.h>
#include "core/comm.h"
#include "graph/csr.h"
#include "graph/dist.h"
#include "kernels/backend.h"
#include "memory/halo.h"
#include "memory/halo_dev.h"
#include "nn/model.h"
#include "nn/optim.h"
#include "nn/train_common.h"

#define FD_MAX_RANKS 64
#define FD_MAX_WIDTHS 8

/* What every rank reads and none writes (shared by the thread ranks): the dataset in the
 * partition's order. */
typedef struct fd_shared {
    int64_t n, f, C;
    const float *x;     /* features after --feature-norm, in the dataset's order */
    float *xw;          /* owned copy behind x when normalised */
    int64_t *inv;       /* inv[new id] = dataset id */
    int32_t *y;         /* labels by new id */
    int64_t *ids[3];    /* train, valid, test: new ids, sorted */
    int64_t nids[3];
    csr_t adjp;         /* the graph renumbered */
    csr_t a, at;        /* Â and, when not symmetric (mean), Âᵀ; empty for mlp */
    dist_plan_t plan;
    int sparse;         /* the features go in as a CSR (bag of words: <= 25% nonzero) */
    model_config_t mc;
} fd_shared_t;

/* The distributed operator of one rank: tables of its own and halo rows only, in the local
 * numbering of memory/halo.h (ascending global ids), one per site width: a rank holds its share
 * of the graph and of every table, not n rows of each. */
typedef struct fd_op {
    kern_ctx_t *kc;
    kern_mat_t *own_a, *own_at;   /* the rank's rows of Â and Âᵀ (NULL: Â symmetric), columns local */
    csr_t la, lat;                /* ... on the host (the CPU context's matrices borrow them) */
    halo_t *halo;
    halo_dev_t *hx;               /* on a device: the halo rows' staging (the tables are device memory) */
    comm_t *comm;
    int64_t nb, no, nl;           /* own rows at [nb, nb + no) of the tables' nl rows (halo_set_local) */
    int ntab;
    int64_t tab_f[FD_MAX_WIDTHS];
    float *tab[FD_MAX_WIDTHS];
    int phase;                    /* COMM_HALO in training, COMM_EVAL in evaluation */
} fd_op_t;

/* The rank's state for one run. */
typedef struct fd_rank {
    kern_ctx_t *kc;
    comm_t *comm;
    int rank, P, mpi;
    int64_t lo, no;
    float *x_own;
    float *x_d;                   /* x_own on the context */
    csr_t xs;
    fd_op_t op;
    nn_agg_t agg;                 /* fd_fwd / fd_bwd on op */
    model_t *m;
    optim_t *o;
    const int32_t *y_h;           /* the shared labels of this rank's rows, and their copy on the context */
    int32_t *y_d;
    int64_t *ids[3], nids[3];     /* the rank's ids of each split, local (new id - lo) */
    int64_t *ids_d[3];
    float *dlog, *logp, *gbuf, *grecv;
    int64_t ng;
    train_meter_t *meter_d;
    train_meter_t *mh, *mall;     /* this rank's meter, then every rank's and their sum (host) */
    train_placement_t place;      /* on a device: this rank's memory, within its share of the budget */
    char ckdir[4200];
} fd_rank_t;

/* train_dist_epoch.c: one rank's run: the contract of train_full. */
int train_dist_rank_run(const fd_shared_t *S, const dataset_t *d, const train_config_t *c, comm_t *comm, int run,
                        train_result_t *r);
/* train_dist_rank.c: everything a rank holds, within its share of the device budget; and its
 * release (of a rank set up in part too). */
int train_dist_rank_setup(fd_rank_t *R, const fd_shared_t *S, const train_config_t *c);
void train_dist_rank_free(fd_rank_t *R);
/* train_dist_op.c: the operator of a model with aggregation sites (R->op), and its forward and
 * backward (nn_agg_t's, with R->op as ctx). */
int train_dist_op_setup(fd_rank_t *R, const fd_shared_t *S);
int train_dist_fwd(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out);
int train_dist_bwd(void *ctx, int site, int64_t n, int64_t f, const float *dout, float *din);
#endif
