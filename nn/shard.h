/* Per-rank stores for clusters without a shared file system (`inca shard`, issue 13). Shard r of
 * P holds what rank r of `mpirun -np P inca train` reads, and nothing else:
 *   - its own rows (a contiguous range of the METIS parts, graph/dist.h) and its halo's rows
 *     (every node its own rows of Â reference) of the layout's features (nn/layout.h: renumbered
 *     and normalised for one --feature-norm), in global order, with their global ids;
 *   - its own rows of the model's Â (and Âᵀ for mean), columns in global ids, and of IncAgg's
 *     M^0 = ÂX for one table dtype;
 *   - the labels and split ids of its own nodes, the partitioning, the ownership plan.
 * shard_open rebuilds rank r's arrays in the global numbering: features and M^0 as anonymous
 * maps of n rows where only the own and halo rows are written (and so cost memory), Â with the
 * own rows filled and every other row empty. The trainer then runs exactly the code it runs on
 * the whole store, so a job on shards gives the whole store's bits (tests/test_mpi.c).
 *
 * CAVEATS FIRST
 * - A shard is made for one --feature-norm, one model adjacency (gcn, or mean for sage) and one
 *   M^0 dtype; training with other flags is refused naming the shard command to rerun.
 * - Only the view path (--loader view) and mpirun with exactly P ranks can use shards.
 * - Writing loads the source store's layout (written first when missing, as `inca partition`).
 * Tested in tests/test_mpi.c. */
#ifndef INCA_NN_SHARD_H
#define INCA_NN_SHARD_H
#include <stdint.h>
#include "graph/dist.h"
#include "graph/partition.h"
#include "loaders/dataset.h"
#include "memory/history.h"
#include "nn/layout.h"

typedef struct shard_opts {
    int ranks;
    int64_t parts;        /* the METIS partitioning metis-<parts>-s0 (stored or computed) */
    char partition[64];   /* or this one ("": the above), e.g. parmetis-64-s0, stored first by
                           * inca partition; its part count must be parts */
    int featnorm;         /* TRAIN_FEATNORM_* */
    int model;            /* NN_GCN | NN_SAGE: the adjacency (and M^0) the shards carry */
    hist_dtype_t m0_dtype;
    int64_t job;          /* set by shard_write (a fresh id a run) */
} shard_opts_t;

typedef struct shard_stats {
    int64_t own_rows[64], halo_rows[64], bytes[64];   /* per rank */
} shard_stats_t;

/* Write DIR/rank-R-of-P.lmdb for every rank (DIR is made; existing shards are replaced). */
int shard_write(const char *store_path, const shard_opts_t *o, const char *dir, shard_stats_t *st);

/* Whether dir holds shards (whole names rank-R-of-P.lmdb): 1 with *ranks = P when one is
 * rank's own (a machine may hold only its own), -1 with *ranks = some P when there are shards
 * but none for rank, 0 when there are none. */
int shard_dir_ranks(const char *dir, int rank, int *ranks);
/* The shards in dir (whole names rank-R-of-P.lmdb), sorted by P then R: the first cap of them
 * in rr[i] = {R, P}; returns how many there are (0: none, or dir is no folder). inca verify DIR. */
int shard_dir_list(const char *dir, int (*rr)[2], int cap);
/* For a command given a folder that is not a store: INCA_EINVAL saying what dir holds when it
 * holds shards (a folder of them, not a store: which command reads which) or only an interrupted
 * inca shard run's temporaries; INCA_OK otherwise (a store, no folder, nothing of shard's). */
int shard_dir_explain(const char *dir);

typedef struct shard {
    dataset_t d;          /* labels and splits (own nodes only), meta of the whole graph */
    partition_t p;
    dist_plan_t plan;
    layout_views_t v;     /* global numbering: see above */
    int featnorm, norm;   /* what the shard carries (NN_NORM_GCN | NN_NORM_MEAN) */
    int has_m0;
    int64_t job;          /* the inca shard run that wrote it: every rank's must agree */
    char path[4096];      /* the shard store */
    /* owned */
    void *x_map, *m0_map;
    int64_t x_bytes, m0_bytes;
    int64_t *rowptr, *rowptr_t;
    int32_t *col, *col_t;
    float *val, *val_t;
} shard_t;

/* Rank `rank` of `ranks` from dir/rank-<rank>-of-<ranks>.lmdb: INCA_EINVAL naming the rank
 * count found when dir holds other shards, ENOTFOUND when none. */
int shard_open(const char *dir, int rank, int ranks, shard_t *out);
void shard_free(shard_t *s);
/* 1 when the store at path is a shard; shard_check opens it as its rank would (every content
 * check of shard_open) and frees it (inca verify). */
int shard_is(const char *path);
int shard_check(const char *path);
/* The id of the inca shard run that wrote the shard at path (every shard of one run holds it). */
int shard_job(const char *path, int64_t *job);
/* What the shard at path holds (inca info): its rank of ranks, the parts of its partitioning,
 * its own rows [lo, hi) of the graph's n in partition order and its halo rows. */
typedef struct shard_desc {
    int rank, ranks;
    int64_t n, parts, own_rows, halo_rows;
} shard_desc_t;
int shard_describe(const char *path, shard_desc_t *out);
#endif
