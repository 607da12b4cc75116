/* Data-parallel full-batch training (issue 13): `mpirun -np P inca train --method full` and its
 * one-process reference `--workers P --method full`.
 *
 * Rank r owns the nodes of a contiguous range of the METIS parts (graph/dist.h, the same split
 * as the mini-batch methods) and runs the model on its own rows only. Every aggregation site is
 * one distributed SpMM: the rank's rows of the site input go into a table indexed by global
 * (partition-order) id, the halo exchange (memory/halo.h) fills the rows its rows of Â read from
 * their owners, and the rank's rows of Â multiply the table. The backward does the same with
 * the gradient and the rank's rows of Âᵀ (the adjacency is symmetric, so both read the same
 * halo). The loss is the mean over the job's training nodes, so the ranks' parameter gradients
 * add up to the one-process gradient; they are summed in rank order (--grad-reduce chain or
 * allgather, core/comm.h) and every rank takes the same optimiser step.
 *
 * `--workers P` runs the P ranks as P threads of one process over thread ranks
 * (comm_threads_create): the same code on the same values, so mpirun -np P equals it bit for
 * bit. Against one process (--workers 1) it differs in rounding only: the gradient sum is split
 * into P partial GEMMs, dropout masks are drawn per rank (step epoch * P + rank), and the loss
 * gradient is scaled per rank (tests/test_train.c checks the trajectories agree without
 * dropout).
 *
 * CAVEATS FIRST
 * - Every process holds the whole dataset (features, graph): what is split is the model's
 *   activations, the SpMMs and the GEMMs. Halo rows cross ranks at every site of every forward
 *   and backward (JSON bytes_halo; evaluation under bytes_eval).
 * - Any backend (issue 29): on a device the site tables are device memory and their halo rows
 *   travel through host staging (nn/train_xfer.h); --workers gives each thread rank a context of
 *   its own on the job's device (kc_sibling). No BatchNorm (batch statistics would be each rank's), no --batch-size, no
 *   per-node logits hooks (pruning's). Each is refused with a message.
 * - Checkpoints: under MPI DIR/rank-R-of-P plus DIR/manifest.json (nn/checkpoint.h); with
 *   --workers, rank 0 writes DIR/run-<i>.ckpt alone (the state is the same on every rank).
 * Tested in tests/test_train.c (threads against one process) and tests/test_mpi.c (mpirun
 * against --workers, bit for bit). */
#ifndef INCA_NN_TRAIN_DIST_H
#define INCA_NN_TRAIN_DIST_H
#include "graph/partition.h"
#include "nn/train_common.h"
#include "nn/train_full.h"

/* One full-batch run over comm_size(c->comm) MPI ranks when that is > 1 (this process being
 * one), else over c->workers thread ranks; p is the job's partitioning (every rank's the same).
 * The contract of train_full; r->comm_bytes / comm_s are this rank's (rank 0's with threads). */
int train_full_dist(const dataset_t *d, const train_config_t *c, const int64_t *train_idx, int64_t n_train, int run,
                    const partition_t *p, train_result_t *r);
#endif
