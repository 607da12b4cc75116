/* The mini-batch loader over a partitioned graph (nodes renumbered so each part is a contiguous
 * id range, graph/partition.h). Each epoch draws a fresh seeded shuffle of the K parts and cuts
 * it into steps of b parts (the last step may hold fewer). A batch B is the union of its parts,
 * listed in ascending id order, so it is a few contiguous ranges; the loader yields:
 *   - the ranges and the node ids, features and labels (views into the source arrays when B is
 *     one range, else copies into a reusable buffer),
 *   - Â_BB (|B| x |B|, local ids, values of the source Â) and, when the source Â is not
 *     symmetric, its transpose (for backward),
 *   - with `halo`: the sorted ids of out-of-batch neighbours (1-hop halo) and Â_{B,halo}.
 * With `prefetch` a background pthread builds batch t+1 while the trainer works on batch t
 * (double buffering); the time the trainer spends waiting in batch_loader_next is measured.
 * Deterministic: the batch sequence depends only on (seed, K, b), not on timing.
 *
 * CAVEATS FIRST
 * - The source arrays (x, y, Â, bounds) are borrowed and must outlive the loader.
 * - A batch returned by batch_loader_next stays valid until the next call of batch_loader_next
 *   or batch_loader_free, whichever comes first. Everything in it is owned by the loader.
 * - Buffers are sized once at creation (the b largest parts bound every batch); building a
 *   batch allocates nothing.
 * Tested in test_batch.c (every node once per epoch, Â_BB and Â_{B,halo} against the induced
 * subgraph, reproducibility with and without prefetch). */
#ifndef INCA_BATCH_H
#define INCA_BATCH_H
#include <stdint.h>
#include "graph/csr.h"
#include "graph/batch.h"

typedef struct batch_source {
    int64_t n, f;            /* nodes, feature width (f may be 0 with x NULL) */
    const float *x;          /* n x f row-major, or NULL */
    const int32_t *y;        /* n labels, or NULL */
    const csr_t *a;          /* normalised adjacency n x n (new numbering) */
    int a_symmetric;         /* 1: Â_BB is its own transpose (GCN norm); 0: build a_bbt */
    const int64_t *bounds;   /* k + 1 part boundaries */
    int64_t k;
    const void *touch;       /* NULL, or an n-row array (touch_row_bytes per row) the trainer will
                                read at the batch's rows (IncAgg's M^0 in a store's map): the
                                builder brings those pages in ahead of the step */
    int64_t touch_row_bytes;
} batch_source_t;

/* Values of Â_BB: the global Â restricted to B (NONE), or the batch subgraph renormalised on
 * itself as Cluster-GCN publishes it (and PyG's ClusterGCN + GCNConv / SAGEConv compute), from
 * d_i = the number of stored entries of row i inside B: GCN Â_BB[i,j] = 1/sqrt(d_i d_j) (Â's
 * pattern holds the self-loops, so d_i counts one), MEAN Â_BB[i,j] = 1/d_i. Needs an Â with
 * values. */
enum { BATCH_RENORM_NONE = 0, BATCH_RENORM_GCN = 1, BATCH_RENORM_MEAN = 2 };

typedef struct batch_opts {
    int64_t batch_parts;     /* b >= 1 (clamped to k) */
    uint64_t seed;
    int halo;                /* build halo ids and Â_{B,halo} */
    int prefetch;            /* 1: background thread */
    int renorm;              /* BATCH_RENORM_* (default NONE) */
    int64_t first_epoch;     /* the first batch is step 0 of this epoch (resuming; default 0):
                                the batches of epoch e depend on (seed, e) only */
    int64_t part_lo, part_hi;   /* 0, 0: every part; else only parts [part_lo, part_hi): a rank's
                                   own range (graph/dist.h), so its batches never leave it */
    uint64_t stream;         /* the shuffle's stream (a rank's number; 0: the single-process
                                sequence): epoch e's order depends on (seed, stream, e) */
} batch_opts_t;


typedef struct batch_loader batch_loader_t;

/* Validates the source (bounds ascending from 0 to n, Â square n x n) and options. */
int batch_loader_create(const batch_source_t *src, const batch_opts_t *o, batch_loader_t **out);
void batch_loader_free(batch_loader_t **l);   /* stops and joins the thread; NULL-safe */
int64_t batch_loader_steps_per_epoch(const batch_loader_t *l);
/* The next batch (see the caveat on lifetime). Fails when building a batch failed. */
int batch_loader_next(batch_loader_t *l, const batch_t **b);
/* Seconds the caller spent blocked in batch_loader_next (with prefetch), and the seconds the
 * builder spent building batches (in either mode). */
double batch_loader_wait_s(const batch_loader_t *l);
double batch_loader_build_s(const batch_loader_t *l);
/* Bytes of the loader's buffers (both slots and scratch). */
int64_t batch_loader_bytes(const batch_loader_t *l);
/* The largest batch (nodes) and halo any step can produce (buffer sizes for the trainer). */
void batch_loader_limits(const batch_loader_t *l, int64_t *nb_max, int64_t *halo_max);
#endif
