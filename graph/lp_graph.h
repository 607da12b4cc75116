/* The levels of the label-propagation partitioner (graph/partition_lp.c): a weighted CSR, the
 * sparse accumulator every pass gathers a node's neighbourhood into, and the passes over one
 * level: coarsening (lp_level.c) and assigning parts (lp_refine.c). Internal to graph/; tested
 * in test_partition_lp.c, directly and through partition_lp_assign. */
#ifndef INCA_LP_GRAPH_H
#define INCA_LP_GRAPH_H
#include <stdint.h>

typedef struct lp_graph {
    int64_t n, nnz, total;      /* nodes, stored entries, sum of node weights */
    const int64_t *rowptr;      /* n + 1, from 0 */
    const int32_t *col;         /* nnz; a node's own id (a self-loop) is skipped by every pass */
    const int32_t *ew, *vw;     /* nnz edge / n node weights, or NULL: all 1 */
    int64_t *own_rowptr;        /* the coarse levels own their arrays (lp_graph_free) */
    int32_t *own_col, *own_ew, *own_vw;
} lp_graph_t;

static inline int32_t lp_vw(const lp_graph_t *g, int64_t v) { return g->vw ? g->vw[v] : 1; }
static inline int32_t lp_ew(const lp_graph_t *g, int64_t e) { return g->ew ? g->ew[e] : 1; }
void lp_graph_free(lp_graph_t *g);   /* frees the owned arrays, zeroes; NULL-safe */

/* conn[l] = the weight of v's edges to label l, for the nt labels listed in touched */
typedef struct lp_acc {
    int64_t *conn;
    int32_t *touched;
    int64_t nt;
} lp_acc_t;
int lp_acc_init(lp_acc_t *a, int64_t labels);   /* INCA_ENOMEM; lp_acc_free either way */
void lp_acc_free(lp_acc_t *a);
/* v's neighbours by label (label[u] < 0 skipped, v itself skipped); clears the previous node's */
void lp_acc_gather(lp_acc_t *a, const lp_graph_t *g, int64_t v, const int32_t *label);

/* Breadth-first order over every component, each started at the first unvisited node at or
 * after a seeded position (wrapping). seen: n bytes of scratch. */
void lp_bfs_order(const lp_graph_t *g, uint64_t seed, int32_t *order, uint8_t *seen);

/* Size-constrained clustering: cl[v] (n entries) starts as v; in `order`, a node joins the
 * neighbouring cluster it has most edge weight to when that beats its own and the cluster stays
 * within wmax node weight; up to `rounds` rounds. cw: n int64 of scratch. */
void lp_cluster(const lp_graph_t *g, const int32_t *order, int64_t wmax, int rounds, int32_t *cl, int64_t *cw,
                lp_acc_t *a);
/* The graph of the clusters: map[v] = v's coarse node (numbered by first appearance in node
 * order), coarse edge weights the sums of the edges between clusters (saturating at INT32_MAX),
 * node weights the sums.
 * Counts first and makes nothing (*made = 0) when the coarse graph would store more than
 * max_nnz entries. INCA_ENOMEM with nothing kept. */
int lp_contract(const lp_graph_t *g, const int32_t *cl, int64_t max_nnz, lp_graph_t *c, int32_t *map, lp_acc_t *a,
                int *made);

/* Fennel, streaming in `order`: part[] all -1 on entry; w (k) zeroed on entry, the part weights on
 * return. Every part stays within cap unless a node is heavier than any part's room. */
int lp_stream(const lp_graph_t *g, const int32_t *order, int64_t k, int64_t cap, int32_t *part, int64_t *w, lp_acc_t *a);
/* Rounds of size-constrained label propagation in `order` (stops when fewer than n / 1000
 * nodes move, or after max_rounds); *gain += edge weight uncut, *moves += nodes moved. Returns
 * the rounds run. */
int lp_refine(const lp_graph_t *g, const int32_t *order, int64_t cap, int max_rounds, int32_t *part, int64_t *w,
              lp_acc_t *a, int64_t *gain, int64_t *moves);
/* Move nodes out of parts over cap, cheapest loss of edge weight first, into parts with room.
 * INCA_ENOMEM; INCA_ERR when no move fits (a node heavier than every part's room). */
int lp_rebalance(const lp_graph_t *g, int64_t k, int64_t cap, int32_t *part, int64_t *w, lp_acc_t *a, int64_t *moves);
#endif
