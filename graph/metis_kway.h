/* The one call into METIS: k-way partitioning of a graph with optional node and edge weights.
 * METIS's sharp edges are handled here only: METIS_OK is 1, nparts = 1 is never passed, ids and
 * weights are 32-bit, self-loops are dropped (METIS wants none). Used by graph/partition.c (the
 * stored graph) and graph/partition_lp.c (its coarsest level). Tested through test_partition.c. */
#ifndef INCA_METIS_KWAY_H
#define INCA_METIS_KWAY_H
#include <stdint.h>

/* Parts for the n nodes of a symmetric CSR (rowptr n + 1, col nnz); ew (nnz edge weights) and
 * vw (n node weights) may be NULL for weight 1; METIS_OPTION_SEED = seed, its default imbalance
 * (1.03). 1 <= k <= n. part (n entries) is the caller's. INCA_EINVAL when the sizes do not fit
 * METIS's 32-bit idx_t, INCA_ENOMEM / INCA_ERR naming METIS's code otherwise. */
int metis_kway(int64_t n, const int64_t *rowptr, const int32_t *col, const int32_t *ew, const int32_t *vw,
               int64_t k, uint64_t seed, int32_t *part);
#endif
