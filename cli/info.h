/* What `inca info` reports about a store, reusable by other commands' --json output
 * (ingest, gen). */
#ifndef INCA_INFO_H
#define INCA_INFO_H
#include "cli/json.h"
#include "loaders/store.h"
/* Add nodes, edges, features, classes, labeled, splits, partitions, store_bytes, source and
 * format_version of the open store to j. */
int info_add_json(store_t *s, json_t *j);
#endif
