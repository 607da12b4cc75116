/* What `inca info` reports about a store, reusable by other commands' --json output
 * (ingest, gen). */
#ifndef INCA_INFO_H
#define INCA_INFO_H
#include "core/json.h"
#include "loaders/store.h"
/* Add nodes, edges, features, classes, labeled, splits, split_name, named_splits, partitions, store_bytes, source and
 * format_version of the open store to j. */
int info_add_json(store_t *s, json_t *j);
/* "splits": {"train": n, "valid": n, "test": n} from the split sizes (train, valid, test). */
void info_splits_json(json_t *j, const int64_t split_n[3]);
#endif
