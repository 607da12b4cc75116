/* The labelled subset: the annotation oracle of the pipeline. It picks which pool examples get
 * a label (stratified, seeded, using the TRUE labels the way an annotator would), builds the
 * visible labels the rest of the pipeline may see (-1 everywhere else), and refuses a subset
 * that leaves a class of the pool without a label. The only pruning code that reads hidden
 * labels, besides the evaluation (eval.h). Tested in test_pruning_e2e.c (stratified counts,
 * the hidden-label test, the CLI's refusals). */
#ifndef INCA_PRUNE_LABELED_H
#define INCA_PRUNE_LABELED_H
#include <stdint.h>
#include "loaders/dataset.h"

/* Stratified labelled subset of the pool, using the TRUE labels y (this is the annotator):
 * per class (in the pool) the members are shuffled with `seed` and the first
 * max(1, round(fraction · n_c)) taken, or min(per_class, n_c) when per_class > 0. Pool nodes
 * with y < 0 are never picked. *ids (sorted, inca_malloc'd) receives the picks. */
int prune_labeled_pick(const int32_t *y, int32_t c, const int64_t *pool, int64_t npool, double fraction,
                       int64_t per_class, uint64_t seed, int64_t **ids, int64_t *nids);
/* y_vis[n] = y_true at the labelled ids, -1 everywhere else. INCA_EINVAL when a labelled id is
 * out of range or unlabelled in y_true. */
int prune_visible_labels(const int32_t *y_true, int64_t n, const int64_t *ids, int64_t nids, int32_t *y_vis);
/* Every class the pool holds (d's TRUE labels) needs a labelled example in y_vis (a class nobody
 * labelled can never be a pseudo-label); an empty subset is refused too. INCA_EINVAL naming
 * `src` (the flag or file the subset came from). */
int prune_labeled_covers_classes(const dataset_t *d, const int64_t *pool, int64_t npool, const int32_t *y_vis,
                                 const char *src);
#endif
