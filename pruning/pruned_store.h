/* The outputs of a selection: the pruned dataset (prune_make_pruned) written as a store, and the
 * selected ids as text and .npy, one set per budget of a budget curve (PATH-keepF for several).
 * Tested in test_pruning_e2e.c (pruned store contents of a table and a graph, the budget curve's
 * file names, --out refused when it exists). */
#ifndef INCA_PRUNED_STORE_H
#define INCA_PRUNED_STORE_H
#include <stddef.h>
#include <stdint.h>
#include "loaders/dataset.h"

/* The pruned dataset: feature datasets keep only the selected examples followed by the
 * original valid and test examples (renumbered; train split = the selected ones); graph
 * datasets keep the whole graph with train split = the selected nodes and the labels of
 * unselected training nodes set to -1 (not annotated). Labels are the TRUE ones. */
int prune_make_pruned(const dataset_t *d, const int64_t *sel, int64_t nsel, dataset_t *out);

/* One output path per budget of a budget curve: PATH itself for one budget, else PATH with
 * "-keepF" before a ".npy" or ".lmdb" extension (or at the end). */
void pruned_budget_path(char *buf, size_t len, const char *base, double keep, int nkeeps);
/* Every output of every budget of keeps[0..nkeeps), checked before any work so that nothing is
 * left half-written or found unwritable after hours: the pruned store at `out` and the indices
 * at `indices` (its .npy and, with text, its text file; either may be NULL). INCA_EINVAL when
 * one already exists and !overwrite, or is a folder; INCA_ENOTFOUND / INCA_EIO when its folder is
 * missing or not writable (inca_out_check), each naming the flag and the path. */
int pruned_outputs_check(const char *out, const char *indices, int text, const double *keeps, int nkeeps, int overwrite);
/* One budget's outputs (keep: its fraction, of nkeeps budgets), each skipped when its path is
 * NULL: the ids sel[0..nsel) at `indices` (text at the path and .npy at path.npy, or, for a path
 * ending in .npy, the .npy there and the text at the path with .txt for .npy; with text 0 the
 * .npy alone), and the pruned dataset of d saved at `out` (replacing one when overwrite). */
int pruned_write(const dataset_t *d, const int64_t *sel, int64_t nsel, double keep, int nkeeps, const char *indices,
                 int text, const char *out, int overwrite);
#endif
