/* Rank ownership of a partitioned graph (issue 13, data-parallel training): P ranks own
 * contiguous ranges of the K parts of a partitioning in its renumbered order (graph/partition.h:
 * part i is the id range [bounds[i], bounds[i+1])), so rank r owns one contiguous node range and
 * draws its batches only from its own parts; every edge between ranks is then served by IncAgg's
 * baseline M, and rows cross ranks only at a refresh (its halo).
 *
 * The split balances a per-part weight w_i = nodes_i + nonzeros of the part's rows (the work of
 * a step and of a refresh both scale with both): rank r's range ends at the part boundary
 * nearest to r/P of the total weight, with at least one part per rank.
 *
 * Tested in test_dist.c (coverage, balance bound, halos against a brute-force scan). */
#ifndef INCA_GRAPH_DIST_H
#define INCA_GRAPH_DIST_H
#include <stdint.h>
#include "graph/csr.h"

typedef struct dist_plan {
    int ranks;
    int64_t k, n;
    int64_t *part_lo;   /* ranks + 1: rank r owns parts [part_lo[r], part_lo[r+1]) (owned) */
    int64_t *node_lo;   /* ranks + 1: and nodes [node_lo[r], node_lo[r+1]) (owned) */
    int64_t *weight;    /* ranks: the summed part weights of each rank (owned) */
} dist_plan_t;

/* Split the k parts of `bounds` (k + 1 entries, from 0 to a->n_rows) among `ranks` ranks by the
 * weights of graph a (renumbered: the partition's order), every rank owning at least one node.
 * INCA_EINVAL when ranks < 1, ranks > k, or fewer than ranks parts hold a node. out is owned by
 * the caller (dist_plan_free). */
int dist_plan_make(const csr_t *a, const int64_t *bounds, int64_t k, int ranks, dist_plan_t *out);
void dist_plan_free(dist_plan_t *p);   /* NULL-safe; zeroes *p */
int dist_plan_copy(const dist_plan_t *p, dist_plan_t *out);   /* a deep copy (owned by the caller) */
/* The rank owning node v (binary search), -1 outside [0, n). */
int dist_owner(const dist_plan_t *p, int64_t v);
/* Rank r's halo: the sorted distinct ids outside its node range that its rows reference
 * (*ids owned by the caller, inca_free; *count may be 0 with *ids non-NULL). */
int dist_halo(const csr_t *a, const dist_plan_t *p, int r, int64_t **ids, int64_t *count);
#endif
