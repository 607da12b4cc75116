/* An in-memory dataset: graph (optional), features, labels and one split. Ingest and the
 * generators build one, loaders/dataset.h saves it as a store and loads it back, trainers use
 * it. Feature datasets (IDX, CSV) have no graph: adj.rowptr == NULL and adj.nnz == 0.
 * Tested in test_store.c (save -> load round trip, failure injection). */
#ifndef INCA_GRAPH_DATASET_H
#define INCA_GRAPH_DATASET_H
#include <stdint.h>
#include "graph/csr.h"

enum { SPLIT_TRAIN = 0, SPLIT_VALID = 1, SPLIT_TEST = 2, SPLIT_COUNT = 3 };
extern const char *const dataset_split_names[SPLIT_COUNT]; /* "train","valid","test" */

/* A split stored beside the default one (OGB datasets with several split/ folders): its name and
 * ids (sorted, owned). */
#define DATASET_SPLIT_NAME_MAX 64
typedef struct dataset_named_split {
    char name[DATASET_SPLIT_NAME_MAX];
    int64_t *ids[SPLIT_COUNT];
    int64_t n[SPLIT_COUNT];
} dataset_named_split_t;

typedef struct dataset {
    int64_t n;          /* nodes / examples */
    int64_t f;          /* feature dimension (0 when there are no features) */
    int32_t c;          /* classes (max valid label + 1, or as declared) */
    csr_t adj;          /* symmetric adjacency without self-loops, unnormalised; or empty */
    float *x;           /* n * f, row-major, owned */
    int32_t *y;         /* n labels, -1 = unlabelled, owned (may be NULL) */
    int64_t *split[SPLIT_COUNT];   /* sorted node ids, owned (may be NULL) */
    int64_t split_n[SPLIT_COUNT];
    char source[256];   /* provenance line stored in the meta ("ogb:/path/to/cora") */
    char split_name[DATASET_SPLIT_NAME_MAX];   /* the name of split[] ("" when it has none) */
    dataset_named_split_t *more;   /* other splits, stored and loaded with the dataset only on
                                      request (loaders/dataset.h DATASET_ALL_SPLITS); owned */
    int32_t n_more;
    int32_t more_loaded;   /* 1: d->more holds every named split of the store (DATASET_ALL_SPLITS) */
} dataset_t;

void dataset_init(dataset_t *d);   /* zero everything */
void dataset_free(dataset_t *d);   /* free owned arrays, then zero */
int64_t dataset_labeled(const dataset_t *d);   /* nodes with y >= 0 */
/* The largest class's share of split s's labelled nodes: what always answering that class
 * scores on it (0 for a split without labelled nodes). */
double dataset_majority_share(const dataset_t *d, int s);
/* 1 when d has a graph: loaded (adj.rowptr) or declared without its arrays (adj.nnz > 0,
 * loaders/dataset.h DATASET_NO_GRAPH: a trainer that maps it from the store instead). */
int dataset_has_graph(const dataset_t *d);
#endif
