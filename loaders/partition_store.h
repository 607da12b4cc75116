/* Partitionings kept in a store (graph/partition.h computes them). A partitioning lives in
 * the store as two arrays and one manifest record, written in one transaction:
 *     "part/<name>/perm"   (i64, n: new id of old node v is perm[v])
 *     "part/<name>/bounds" (i64, K+1: part p holds new ids [bounds[p], bounds[p+1]))
 *     record "part:<name>" -> part_manifest_t
 * where <name> is "<method>-<K>-s<seed>", e.g. "metis-40-s0". A loaded partitioning is checked
 * before it is used: perm a bijection of [0, n), bounds non-decreasing from 0 to n.
 * Tested in test_partition.c (round trip, reuse, damaged arrays). */
#ifndef INCA_PARTITION_STORE_H
#define INCA_PARTITION_STORE_H
#include "core/comm.h"
#include "graph/partition.h"
#include "loaders/store.h"

/* Load the partitioning `name` (INCA_ENOTFOUND when absent; INCA_EINVAL naming the record or
 * array when the manifest's magic/version/sizes do not match the arrays or the store's node
 * count, or the arrays are not a partitioning). */
int store_partition_load(store_t *s, const char *name, partition_t *out);
/* Write arrays + manifest in one store transaction (replacing a same-named one). */
int store_partition_save(store_t *s, const partition_t *p);
/* Load "<method>-<k>-s<seed>" when stored (*reused = 1), else compute it on `adj` (NULL: the
 * store's own graph, read for the purpose), save it and set *reused = 0. `reused` may be NULL. */
int store_partition_get(store_t *s, const csr_t *adj, int64_t k, int method, uint64_t seed,
                        partition_t *out, int *reused);
/* The same, a computation reporting its progress to pg (graph/partition.h; NULL: none) */
int store_partition_get_pg(store_t *s, const csr_t *adj, int64_t k, int method, uint64_t seed,
                           const partition_progress_t *pg, partition_t *out, int *reused);
/* The same for ParMETIS, collective over the ranks of c (every rank has s open; rank 0 for
 * writing): "parmetis-<k>-s<seed>" loaded when every rank finds it stored, else computed by
 * graph/partition_par.h with rank r reading only rows [n r / P, n (r + 1) / P) of the stored
 * graph, and saved by rank 0. Every rank gets the partitioning. */
int store_partition_get_par(store_t *s, comm_t *c, int64_t k, uint64_t seed, partition_t *out, int *reused);
/* The stored ParMETIS partitioning for (k, seed) and, when ranks > 0, that rank count: its name
 * into name[len]. ranks 0 takes the one stored (a name without a rank count, as stores before
 * the count was in the name have, or the only "-rP" one); INCA_EINVAL naming them when several
 * rank counts are stored, INCA_ENOTFOUND when none is. */
int store_partition_find_par(store_t *s, int64_t k, uint64_t seed, int ranks, char *name, size_t len);
#endif
