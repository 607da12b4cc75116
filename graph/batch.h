/* One mini-batch of a partitioned graph as the trainers and the aggregation operators see it:
 * its nodes (a few contiguous id ranges), their features and labels, the induced Â_BB and the
 * 1-hop halo. A plain struct in graph/ so that memory/ (agg.h) and loaders/ (batch.h, which
 * builds and owns every batch) both reach it without memory/ including loaders/. */
#ifndef INCA_GRAPH_BATCH_H
#define INCA_GRAPH_BATCH_H
#include <stdint.h>
#include "graph/csr.h"

typedef struct batch {
    int64_t index;           /* global step number (0, 1, ...) */
    int64_t epoch, step;     /* step within the epoch */
    int64_t n_b;             /* |B| */
    int64_t nranges;         /* merged contiguous ranges of B */
    int64_t *range_start, *range_len;
    int64_t *nodes;          /* n_b global ids, ascending */
    const float *x;          /* n_b x f (view or copy); NULL when the source has no x */
    const int32_t *y;        /* n_b labels (view or copy); NULL when the source has none */
    csr_t a_bb;              /* n_b x n_b */
    int64_t nnz_rows;        /* nonzeros of Â in the rows of B (a_bb.nnz of them stay inside) */
    csr_t a_bbt;             /* transpose of a_bb when the source is not symmetric, else empty */
    int64_t n_halo;
    int64_t *halo;           /* n_halo global ids, ascending, none in B */
    csr_t a_bh;              /* n_b x n_halo (empty without halo) */
} batch_t;
#endif
