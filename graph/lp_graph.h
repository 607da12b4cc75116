/* The levels of the label-propagation partitioner (graph/partition_lp.c): a weighted CSR, the
 * sparse accumulator every pass gathers a node's neighbourhood into, and the passes over one
 * level: coarsening (lp_level.c) and assigning parts (lp_refine.c). Internal to graph/; tested
 * in test_partition_lp.c, directly and through partition_lp_assign. */
#ifndef INCA_LP_GRAPH_H
#define INCA_LP_GRAPH_H
#include <stdint.h>

struct partition_progress;   /* graph/partition_progress.h */

typedef struct lp_graph {
    int64_t n, nnz, total;      /* nodes, stored entries, sum of node weights */
    const int64_t *rowptr;      /* n + 1, from 0 */
    const int32_t *col;         /* nnz; a node's own id (a self-loop) is skipped by every pass */
    const int32_t *ew, *vw;     /* nnz edge / n node weights, or NULL: all 1 */
    int64_t *own_rowptr;        /* the coarse levels own their arrays (lp_graph_free) */
    int32_t *own_col, *own_ew, *own_vw;
} lp_graph_t;

/* Part labels are 16 bits (at most LP_MAX_PARTS parts): half the cache a pass's random label
 * reads need. LP_UNPLACED marks a node Fennel has not placed yet. */
typedef uint16_t lp_part_t;
#define LP_UNPLACED ((lp_part_t)0xffff)
#define LP_MAX_PARTS 65535

static inline int32_t lp_vw(const lp_graph_t *g, int64_t v) { return g->vw ? g->vw[v] : 1; }
static inline int32_t lp_ew(const lp_graph_t *g, int64_t e) { return g->ew ? g->ew[e] : 1; }
void lp_graph_free(lp_graph_t *g);   /* frees the owned arrays, zeroes; NULL-safe */

/* A pass visits nodes in an order that scatters their rows over memory and their neighbours'
 * labels over a table larger than the cache share a process gets, so each visit would wait on
 * a chain of misses (order -> rowptr -> col -> label). Visit i starts the chains of the visits
 * ahead: rowptr of i + 8, the row of i + 4 (its rowptr fetched four visits ago), the labels of
 * i + 1's neighbours (its row fetched three visits ago). Hints only: no result depends on them.
 * always_inline: GCC 12 judged this function free of effects (prefetches do not count) and
 * dropped the calls to it. */
static inline __attribute__((always_inline)) void lp_prefetch(const lp_graph_t *g, const int32_t *order, int64_t i, const void *label, int label_size) {
    const int64_t last = g->n - 1, i8 = i + 8 < last ? i + 8 : last, i4 = i + 4 < last ? i + 4 : last;
    const int64_t v = order[i + 1 < last ? i + 1 : last];
    __builtin_prefetch(&g->rowptr[order[i8]]);
    __builtin_prefetch(&g->col[g->rowptr[order[i4]]]);
    for (int64_t e = g->rowptr[v]; e < g->rowptr[v + 1]; e++)
        __builtin_prefetch((const char *)label + (int64_t)g->col[e] * label_size);
}

/* conn[l] = the weight of v's edges to label l, for the nt labels listed in touched */
typedef struct lp_acc {
    int64_t *conn;
    int32_t *touched;
    int64_t nt;
} lp_acc_t;
int lp_acc_init(lp_acc_t *a, int64_t labels);   /* INCA_ENOMEM; lp_acc_free either way */
void lp_acc_free(lp_acc_t *a);
/* v's neighbours by part (LP_UNPLACED skipped, v itself skipped); clears the previous node's */
void lp_acc_gather_parts(lp_acc_t *a, const lp_graph_t *g, int64_t v, const lp_part_t *part);

/* The same for labels from a range too large to index densely (clusters, up to n of them):
 * w[t] = the weight to touched[t], t < nt, in order of first appearance, through an
 * open-addressed table sized to the neighbourhood being gathered. Why: a dense table of n
 * counters costs a random access per entry over 8n bytes (80 MB at 10M nodes, far past the
 * cache, and one more miss per entry than the labels' own); one neighbourhood's table is a few
 * hundred bytes and stays in L1. The arrays are sized for the whole range but only the largest
 * neighbourhood's share is ever touched (and so committed). */
typedef struct lp_hacc {
    int32_t *touched;
    int64_t *w;
    uint64_t *slot;          /* label << 32 | (index into touched + 1); 0: empty */
    int64_t nt, mask, slots; /* slots 0..mask in use, of slots (a power of two >= 2 x labels) */
} lp_hacc_t;
int lp_hacc_init(lp_hacc_t *h, int64_t labels);   /* INCA_ENOMEM; lp_hacc_free either way */
void lp_hacc_free(lp_hacc_t *h);
/* starts a gather (forgets the last) with a table for about `expect` labels; it grows as needed */
void lp_hacc_begin(lp_hacc_t *h, int64_t expect);
void lp_hacc_add(lp_hacc_t *h, int32_t label, int64_t w);
int64_t lp_hacc_get(const lp_hacc_t *h, int32_t label);   /* 0 when not gathered */
/* v's neighbours by label (label[u] < 0 skipped, v itself skipped) */
void lp_hacc_gather(lp_hacc_t *h, const lp_graph_t *g, int64_t v, const int32_t *label);

/* Breadth-first order over every component, each started at the first unvisited node at or
 * after a seeded position (wrapping). seen: n bytes of scratch. */
void lp_bfs_order(const lp_graph_t *g, uint64_t seed, int32_t *order, uint8_t *seen);

/* Chunk-random order (as KaMinPar's label propagation): nodes in chunks of `chunk` consecutive
 * ids, the chunks in a seeded random order, each chunk's nodes shuffled. Why: in breadth-first
 * or random order every visit of a random graph's node misses on its row (at 10M nodes the rows
 * are 880 MB); here a chunk's rows are a few contiguous lines, and the order stays random enough
 * for label propagation (which moves the same nodes in any order, only in another sequence).
 * INCA_ENOMEM (a chunk permutation of n / chunk entries). */
int lp_chunk_order(int64_t n, int64_t chunk, uint64_t seed, int32_t *order);

/* Size-constrained clustering, a round at a time (partition_lp.c decides when to stop): init
 * makes every node its own cluster (cl[v] = v, cw[v] its weight); in a round, in `order`, a
 * node joins the neighbouring cluster it has most edge weight to when that beats its own and
 * the cluster stays within wmax node weight. Returns the nodes moved. cl, cw: n entries (cw in
 * 32 bits: node weights sum to at most n). */
void lp_cluster_init(const lp_graph_t *g, int32_t *cl, int32_t *cw);
int64_t lp_cluster_round(const lp_graph_t *g, const int32_t *order, int64_t wmax, int32_t *cl, int32_t *cw, lp_hacc_t *h);
/* The coarse graph's entries estimated from every stride-th coarse node's (their member lists
 * built for them alone): what a whole count (lp_contract) would find, scaled. map (n) gets the
 * coarse ids. INCA_ENOMEM with nothing kept. */
int lp_contract_estimate(const lp_graph_t *g, const int32_t *cl, int64_t stride, int32_t *map, lp_hacc_t *h, int64_t *est);
/* The graph of the clusters: map[v] = v's coarse node (numbered by first appearance in node
 * order), coarse edge weights the sums of the edges between clusters (saturating at INT32_MAX),
 * node weights the sums.
 * Counts first and makes nothing (*made = 0) when the coarse graph would store more than
 * max_nnz entries. INCA_ENOMEM with nothing kept. */
int lp_contract(const lp_graph_t *g, const int32_t *cl, int64_t max_nnz, lp_graph_t *c, int32_t *map, lp_hacc_t *h,
                int *made);

/* Fennel, streaming in `order`: part[] all LP_UNPLACED on entry; w (k) zeroed on entry, the part weights on
 * return. Every part stays within cap unless a node is heavier than any part's room. */
int lp_stream(const lp_graph_t *g, const int32_t *order, int64_t k, int64_t cap, lp_part_t *part, int64_t *w, lp_acc_t *a);
/* Rounds of size-constrained label propagation in `order` (stops when fewer than n / 1000
 * nodes move, or after max_rounds); the first round visits every node, a later one only those
 * next to a node moved since their last visit. *gain += edge weight uncut, *moves += nodes
 * moved. active: n bytes of scratch. Each round is reported to pg ("refining", graph/partition_progress.h;
 * NULL: none). Returns the rounds run. */
int lp_refine(const lp_graph_t *g, const int32_t *order, int64_t cap, int max_rounds, lp_part_t *part, int64_t *w,
              lp_acc_t *a, uint8_t *active, int64_t *gain, int64_t *moves, const struct partition_progress *pg);
/* Move nodes out of parts over cap, cheapest loss of edge weight first, into parts with room.
 * INCA_ENOMEM; INCA_ERR when no move fits (a node heavier than every part's room). */
int lp_rebalance(const lp_graph_t *g, int64_t k, int64_t cap, lp_part_t *part, int64_t *w, lp_acc_t *a, int64_t *moves);
#endif
