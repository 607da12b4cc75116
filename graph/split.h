/* Random train/valid/test splits: parsing "random:TR,VA,TE" and drawing a seeded split of the
 * labelled nodes, stratified per class. Used by `inca gen`, `inca train --split random:...`
 * and `inca prune`. Tested in tests/test_split.c. */
#ifndef INCA_SPLIT_H
#define INCA_SPLIT_H
#include <stdint.h>
#include "graph/dataset.h"

/* Parse "random:TR,VA,TE" (three fractions in [0,1], sum in (0,1], e.g. "random:0.6,0.2,0.2")
 * into fr[0..2]. INCA_EINVAL naming the spec and what was expected otherwise; fr is untouched
 * on failure. */
int split_parse(const char *spec, double fr[3]);
/* The same, also taking "random:TR,VA,TE:SEED": *has_seed (may be NULL) says whether a seed
 * was given and *seed receives it (0 otherwise), so a split can stay fixed while the training
 * seed varies. seed NULL: a seed is refused (split_parse). */
int split_parse_seed(const char *spec, double fr[3], uint64_t *seed, int *has_seed);

/* Replace d->split with a seeded random split of the labelled nodes (y >= 0); unlabelled
 * nodes belong to no split. Stratified: within each class the nodes are shuffled and the
 * first round(TR*n_c) go to train, the next up to round((TR+VA)*n_c) to valid, the next up
 * to round((TR+VA+TE)*n_c) to test, the rest to no split. Split arrays are sorted ascending.
 * Same (d->y, fr, seed) -> same split. INCA_EINVAL when d->y is NULL or fr is invalid; on any
 * failure d->split is unchanged. The old split arrays are freed. */
int split_random(dataset_t *d, const double fr[3], uint64_t seed);
#endif
