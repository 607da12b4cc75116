/* A partitioner for graphs that METIS cannot hold: multilevel label propagation in about the
 * graph's own memory, where METIS's coarsening hierarchy takes some 80 bytes per stored edge.
 * Size-constrained label propagation clusters the graph and contracts it while that shrinks it
 * (the coarse levels together hold at most a quarter of the graph's entries, so a graph whose
 * clusters do not shrink it, as on a random graph, is not coarsened: an estimate after the
 * first clustering round says so); the coarsest level is split by METIS when it is small enough
 * for METIS's appetite, else by Fennel streaming; every level on the way back is refined by
 * label propagation within the parts' cap, a node revisited only when a neighbour has moved;
 * the finest level is rebalanced. Clustering and refinement visit the nodes chunk-random (a
 * chunk's rows lie together in memory), Fennel breadth-first; every pass prefetches the rows
 * and labels of the nodes it visits next, and clusters are counted in a hashed accumulator the
 * size of one neighbourhood (lp_graph.h). Single threaded, deterministic for a seed. Figures
 * in README.
 * Tested in tests/test_partition_lp.c (hand-made graphs, the contraction against a dense count,
 * balance, determinism, the cut against METIS's and random's on Cora, Facebook and a csbm). */
#ifndef INCA_PARTITION_LP_H
#define INCA_PARTITION_LP_H
#include <stdint.h>
#include "graph/csr.h"
#include "graph/partition_progress.h"

typedef struct partition_lp_stats {
    int64_t cap;              /* most nodes a part may hold: ceil(1.03 n / k) */
    int levels;               /* coarse levels made (0: the graph itself was split) */
    int cluster_rounds;       /* clustering rounds over all levels tried */
    int64_t coarse_estimate;  /* the last estimate of a coarse level's entries (0: none made) */
    int64_t coarse_nodes, coarse_entries;   /* the level that was split */
    int coarse_by_metis;      /* 1: METIS split it; 0: Fennel */
    int rounds;               /* refinement rounds over all levels */
    int64_t moves, rebalance_moves;
    double coarsen_s, split_s, refine_s;   /* clustering + contraction; the coarsest split;
                                            * projection, refinement and rebalancing */
} partition_lp_stats_t;

/* Assign each node of the symmetric graph `adj` (self-loops ignored) to one of k parts
 * (1 < k <= n, k <= 65535: part labels are 16 bits inside), every part at most ceil(1.03 n / k) nodes. part (n entries) and st (may be
 * NULL) are the caller's. INCA_ENOMEM when the scratch cannot be had (nothing kept). */
int partition_lp_assign(const csr_t *adj, int64_t k, uint64_t seed, int32_t *part,
                        partition_lp_stats_t *st);
/* The same, reporting its phases to pg (NULL: none): "clustering" (done of at most 5 rounds, a
 * level), "estimating the coarse graph" (a large graph's first round), "contracting",
 * "splitting (METIS)" or "splitting (Fennel)", "refining" (done of at most 24 rounds, a
 * level), "rebalancing". The parts do not depend on pg. */
int partition_lp_assign_pg(const csr_t *adj, int64_t k, uint64_t seed, const partition_progress_t *pg, int32_t *part,
                           partition_lp_stats_t *st);
/* Tests: the entry count below which memory never stops coarsening or METIS on the coarsest
 * level (default 4M, restored by entries <= 0); lowering it reaches the memory-bound paths on
 * small graphs. Not thread safe; set before partitioning. */
void partition_lp_set_small_entries(int64_t entries);
#endif
