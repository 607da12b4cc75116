/* Training checkpoints (`inca train --checkpoint DIR [--resume]`): after every epoch each
 * trainer (full, cluster, gas, incagg) writes DIR/run-<i>.ckpt with everything the next epoch depends on, so a run
 * resumed from it continues bit-identically (same seed and threads) to one never interrupted.
 * Tested in tests/test_train.c (interrupted vs uninterrupted, finished runs, mismatches,
 * truncated files, unsupported methods).
 *
 * CAVEATS FIRST
 * - Kept: parameters, Adam's moments and step count, BatchNorm running statistics, the last
 *   completed epoch, the best-epoch tracker, the last training loss, the accumulated timings.
 *   Dropout masks are counter-based (seed, epoch), so they need no state. Not kept: the
 *   out_logits / on_epoch hooks of epochs run by an earlier process.
 * - The file is written to run-<i>.ckpt.tmp, flushed, fsync'ed and renamed over the old one: a
 *   crash leaves the previous checkpoint or the new one, never half of one (a resume removes the
 *   .tmp a crash left).
 * - An MPI job's ranks save one after another, so a job that loses a rank may have saved an
 *   epoch on some ranks only: each rank keeps its previous checkpoint too (run-<i>.ckpt.prev,
 *   twice the disk) and a resume continues from the newest epoch every rank holds
 *   (ckpt_rank_save, ckpt_rank_load). One process keeps one file per run.
 * - Native byte order and float layout: a checkpoint moves between machines of the same
 *   architecture only. A checkpoint whose model, method, sizes, seed or parameter shapes differ
 *   from the run's is refused (INCA_EINVAL naming the file and the field); --epochs, --lr and
 *   --patience may change between the runs.
 * - Mini-batch methods add their history tables (GAS: H; IncAgg: M, S, P), so a checkpoint of
 *   a large graph is as large as the tables (the JSON's table_bytes); the batches of epoch e
 *   depend on (seed, e) only, so the loader restarts at the next epoch. */
#ifndef INCA_NN_CHECKPOINT_H
#define INCA_NN_CHECKPOINT_H
#include "core/comm.h"
#include "loaders/dataset.h"
#include "nn/model.h"
#include "nn/optim.h"
#include "nn/train_common.h"

enum { CKPT_NONE = 1 };   /* ckpt_load: no checkpoint for this run (not an error) */

typedef struct ckpt_state {
    int epoch;                        /* last completed epoch, 0-based */
    int finished;                     /* 1: stopped by --patience; the result is final. (A run
                                         that reached --epochs resumes with a larger --epochs.) */
    train_best_t best;
    double train_loss;
    double t_step, t_eval, t_epoch;   /* seconds accumulated over epochs 0..epoch */
    int64_t evals;                    /* evaluations over epochs 0..epoch (--eval-every; the
                                         mini-batch trainers: those that ran alone) */
    int64_t refreshes, fused;         /* IncAgg's refreshes over epochs 0..epoch, and how many of
                                         them shared an evaluation's pass */
    double t_refresh;                 /* their seconds */
    uint64_t order;                   /* the node order the history tables' rows are in (the
                                         mini-batch trainers: a hash of the partition's
                                         permutation; 0: no tables). Saved; on a resume (o given)
                                         the caller sets it first and a checkpoint of another
                                         order is refused, naming the partitioning */
} ckpt_state_t;

/* Extra state of a trainer saved after the model (the mini-batch history tables): raw bytes,
 * restored in place; count and sizes must match on load. */
typedef struct ckpt_blob {
    void *p;
    int64_t bytes;
    int dev;    /* 1: p is in the model's context memory (device), 0: host memory */
} ckpt_blob_t;

/* ckpt_state_t.order of tables renumbered by perm (n entries): FNV-1a over it, odd (never 0). */
uint64_t ckpt_order_hash(const int64_t *perm, int64_t n);
/* Write DIR/run-<run>.ckpt (DIR is created when missing; its parent must exist). */
int ckpt_save(const char *dir, int run, const train_config_t *c, const dataset_t *d, model_t *m, optim_t *o,
              const ckpt_state_t *st, const ckpt_blob_t *blobs, int nblobs);
/* ckpt_save for a rank of an MPI job (DIR: its rank-R-of-P): the checkpoint it replaces is kept
 * as DIR/run-<run>.ckpt.prev (renamed just before the new one is renamed into place), so at every
 * instant the rank holds its latest complete checkpoint and, but between those two renames, the
 * one before it (twice the disk). Callers save only after an epoch's optimiser steps, each of
 * which allgathers a record from every rank (the mini-batch trainers' [had, loss] or gradients,
 * full-batch's loss: nn/mb_step.c, nn/train_dist_epoch.c), and an allgather completes on no rank
 * before every rank entered it, which each does only after its previous save: so no rank saves
 * twice while another has not saved once, the ranks' latest checkpoints are at most one save
 * apart, and every rank holds the oldest rank's latest (ckpt_rank_load). */
int ckpt_rank_save(const char *dir, int run, const train_config_t *c, const dataset_t *d, model_t *m, optim_t *o,
                   const ckpt_state_t *st, const ckpt_blob_t *blobs, int nblobs);
/* Restore m, o and *st from DIR/run-<run>.ckpt. CKPT_NONE when the file does not exist;
 * INCA_EINVAL for a checkpoint of another configuration or a damaged file; INCA_EIO when it
 * cannot be read. m and o may be partly overwritten on error. With o NULL, the model alone
 * (prediction): the parameters and BatchNorm buffers, st->epoch and st->finished; the
 * optimiser's moments and any history tables are skipped (blobs ignored). With o (a resume), a
 * killed save's DIR/run-<run>.ckpt.tmp is removed first. */
int ckpt_load(const char *dir, int run, const train_config_t *c, const dataset_t *d, model_t *m, optim_t *o,
              ckpt_state_t *st, const ckpt_blob_t *blobs, int nblobs);
/* The start of run `run` on a rank of an MPI job (comm: its ranks; dir: its rank-R-of-P). Without
 * c->resume: the run's files of an earlier job in dir are removed (a later resume never mixes
 * them with this job's), CKPT_NONE. With it: a killed save's run-<run>.ckpt.tmp is removed, and
 * the ranks agree on the newest epoch every one of them holds (its run-<run>.ckpt or .prev) and
 * each loads its checkpoint of it as ckpt_load does (a .prev loaded is renamed over the newer
 * one, which no longer counts); where some rank holds none of it (a job killed before every rank
 * saved once) every rank removes its files and returns CKPT_NONE: the run starts again, as one
 * process without a checkpoint does. Collective: every rank calls it for every run. */
int ckpt_rank_load(comm_t *comm, const char *dir, int run, const train_config_t *c, const dataset_t *d, model_t *m,
                   optim_t *o, ckpt_state_t *st, const ckpt_blob_t *blobs, int nblobs);
/* The folder holding a model's checkpoint files: dir itself, or for an MPI job's (a manifest of
 * P > 1 ranks beside them) rank 0's, DIR/rank-0-of-P (every rank holds the same parameters). */
int ckpt_model_dir(const char *dir, char *out, size_t cap);
/* Checkpoints of a job of several ranks (MPI): DIR/rank-R-of-P for rank `rank` of `ranks` into
 * out[cap] (DIR made when missing), and from rank 0 DIR/manifest.json (the rank count, method,
 * model and the folders), written whole via rename. With c->resume, a manifest naming another
 * rank count is refused (ckpt_manifest_check). */
int ckpt_rank_dir(const train_config_t *c, int rank, int ranks, char *out, size_t cap);
/* One process's checkpoints (c->checkpoint_dir; NULL: nothing): with c->resume, DIR must not
 * hold an MPI job's (ckpt_manifest_check with 1); then DIR/manifest.json says 1 rank, so that a
 * later predict or mpirun resume reads these checkpoints, not an older job's rank folders.
 * Without c->resume, every run-<i>.ckpt (and .tmp) an older job left in DIR is removed first:
 * a new job claims the folder, so a later --resume never takes an older job's later runs. */
int ckpt_one_process(const train_config_t *c);
/* INCA_EINVAL naming the rank count to use when DIR/manifest.json is for other than `ranks`
 * ranks (one process passes 1: it may not resume an MPI job's checkpoints); INCA_OK when DIR has
 * no manifest. */
int ckpt_manifest_check(const char *dir, int ranks);
#endif
