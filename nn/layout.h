/* The partition-ordered layout of a store: what a mini-batch trainer reads at random rows,
 * written once per partitioning so that training maps it instead of copying it (issue 12).
 * For a stored partitioning P (graph/partition.h: node v becomes perm[v], each part a
 * contiguous id range) and a feature normalisation FN (none | row | standard):
 *   layout/P/FN/x                    f32 n x f: the features in the new order, normalised
 *   layout/P/FN/m0-NORM-DT           n x f: IncAgg's layer-0 baseline M^0 = Â X (the card's
 *                                    global pre-aggregation) for NORM = gcn | mean (the model's
 *                                    adjacency) and DT = fp32 | bf16 (the history dtype; bf16
 *                                    stored as DT_BF16 words, rounded to nearest even)
 *   layout/P/adj-NORM/{rowptr,col,val}   the model's normalised adjacency Â of the renumbered
 *                                    graph (nn_adj_build), and for mean its transpose in
 *                                    layout/P/adjt-mean/...: the trainer's Â (and Âᵀ) as views
 * each one LMDB value (store_wtx_put_array_whole), or past LMDB's 4 GiB value (10M x 128 features)
 * a checksummed side file beside data.mdb: one contiguous run of pages that store_array_view
 * serves zero-copy, whose pages are file pages the kernel may evict and read back, never
 * anonymous memory. Labels and splits stay in their original arrays (O(n), renumbered
 * in memory).
 *
 * The arithmetic is the copy path's (nn/mb_data.c): x renumbered row by row, then
 * train_features_prepare; Â = nn_adj_build of the renumbered graph; M^0 by the CPU backend's
 * SpMM, so M^0 has the bits agg_create computes in memory.
 *
 * CAVEATS FIRST
 * - Building needs the store open for writing and, once, the raw features in memory (the x
 *   array loaded, plus the renumbered copy and LMDB's copy at commit): about 3 x n x f x 4
 *   bytes for x, 2 x for each M^0. Training afterwards needs none of it.
 * - Views are valid until the store is closed or written again (loaders/store.h).
 * Tested in test_layout.c (views equal the in-memory renumbering and M^0; mb_train on views is
 * bit-identical to mb_train on the same arrays in memory). */
#ifndef INCA_NN_LAYOUT_H
#define INCA_NN_LAYOUT_H
#include <stdint.h>
#include "graph/partition.h"
#include "loaders/store.h"
#include "memory/history.h"

typedef struct layout_views {
    int64_t n, f;
    const float *x;          /* n x f, the store's map */
    const void *m0;          /* n x f of m0_dtype, or NULL when not asked for */
    hist_dtype_t m0_dtype;
    csr_t a, at;             /* Â (and Âᵀ for mean; else empty): views, owned = 0 */
} layout_views_t;

/* "none" | "row" | "standard" for TRAIN_FEATNORM_* (nn/train.h). */
const char *layout_featnorm_name(int featnorm);
/* Array names of the layout (into buf[len]); norm: NN_NORM_GCN | NN_NORM_MEAN. */
void layout_x_name(char *buf, size_t len, const char *part, int featnorm);
void layout_m0_name(char *buf, size_t len, const char *part, int featnorm, int norm, hist_dtype_t dt);

/* Write what is missing of the layout for partitioning p (named p->man.name) of the store s
 * (open for writing): x for featnorm, Â for norm, and with want_m0 M^0 for (norm, dt). adj: the
 * store's graph in its original numbering (NULL: loaded from s when needed). *built (may be
 * NULL) gets a bit per array written: 1 x, 2 M^0, 4 Â. Each lands in its own transaction.
 * file_backed (--memory-budget): x and M^0 are built in file-backed maps in the store's folder
 * (memory/arena.h's spill files) and stored as side files, so the write holds no anonymous
 * memory of their size (Â, as large as the graph, is built in memory as without). */
int layout_ensure(store_t *s, const partition_t *p, const csr_t *adj, int featnorm, int want_m0, int norm,
                  hist_dtype_t dt, int file_backed, int *built);
/* Delete what layout_ensure would write for these arguments (x, M^0 when want_m0, Â and Âᵀ), in
 * one transaction (their side files with them): `inca partition --rebuild-layout`. */
int layout_drop(store_t *s, const partition_t *p, int featnorm, int want_m0, int norm, hist_dtype_t dt);
/* Views of the layout (ENOTFOUND naming the array and the command that writes it when absent). */
int layout_open(store_t *s, const partition_t *p, int featnorm, int want_m0, int norm, hist_dtype_t dt,
                layout_views_t *v);
#endif
