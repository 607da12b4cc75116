/* Distributed k-way partitioning over MPI ranks on PT-Scotch (Debian libptscotch-dev; built
 * when CMake finds it and MPI, INCA_HAS_PTSCOTCH), in the role ParMETIS has in DistDGL's
 * pipeline (PT-Scotch also provides ParMETIS's interface; see partition_par.c for why it is
 * not called through it). For
 * graphs whose single-process METIS run is too slow or too large: each rank holds only its own
 * contiguous slice of the CSR rows, never the whole graph.
 *
 * CAVEATS FIRST
 * - Collective: every rank of c calls it with its slice; rank r's slice is rows
 *   [row0_r, row0_r + slice->n_rows), the slices in rank order cover [0, n) exactly.
 * - The graph must be symmetric (as the store's graphs are; METIS's path checks it, this one
 *   cannot without moving edges between ranks). The slice's self-loops are removed in place
 *   (its columns then serve as PT-Scotch's adjacency: one copy of the edges).
 * - Ids are PT-Scotch's SCOTCH_Num (int in Debian's default build): n and every rank's edge
 *   count must fit. A partition depends on the seed and on the number of ranks (PT-Scotch's
 *   parallel coarsening); the same seed and rank count give the same parts.
 * - The result is the whole partitioning, on every rank (each gathers the part vector: 4 bytes
 *   per node), with the edge cut counted over every rank's rows.
 * Tested in test_mpi.c (under mpirun: a valid partitioning, edge cut recomputed, balance,
 * repeatable) and test_partition.c (refusals without MPI). */
#ifndef INCA_PARTITION_PAR_H
#define INCA_PARTITION_PAR_H
#include "core/comm.h"
#include "graph/partition.h"

/* 1 when this build has PT-Scotch. */
int partition_par_available(void);

/* k parts, PT-Scotch asked for at most 3% imbalance (its own bound, not checked here), seeded. Fills out (perm, bounds, manifest
 * with method "parmetis", edge cut, sizes, seconds = the slowest rank's call) on every rank.
 * INCA_EINVAL without MPI or the library, for k < 1 or k > n, for slices that do not tile
 * [0, n), and for sizes past SCOTCH_Num. */
int partition_par_compute(comm_t *c, csr_t *slice, int64_t row0, int64_t n, int64_t k, uint64_t seed,
                          partition_t *out);
#endif
