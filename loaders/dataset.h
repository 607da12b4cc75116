/* Datasets in stores: saving an in-memory dataset (graph/dataset.h) as an LMDB store and loading
 * one back, contents checked. Tested in test_store.c and test_store_corrupt.c. */
#ifndef INCA_DATASET_H
#define INCA_DATASET_H
#include "graph/dataset.h"

/* Write `d` as a new store at `path` atomically: everything goes to a temporary directory
 * beside it, meta is committed last, then it is renamed onto `path`. Fails with INCA_EINVAL
 * when `path` exists unless `overwrite`. Nothing is left behind on failure. */
int dataset_save(const dataset_t *d, const char *path, int overwrite);
/* What overwrite may replace: INCA_OK when path is absent or an inca store (a folder holding
 * data.mdb), else INCA_EINVAL naming it (a dataset's folder, a file: --force must not delete
 * them). dataset_save checks it; commands call it before a long parse. */
int dataset_out_replaceable(const char *path);
/* Load a whole store into memory (copies; the store is closed again). */
int dataset_load(const char *path, dataset_t *d);
/* The same with flags: DATASET_NO_X leaves d->x NULL (d->f keeps the store's width): for a
 * trainer that maps the features from the store's layout instead (nn/layout.h). */
enum { DATASET_NO_X = 1, DATASET_NO_GRAPH = 2, DATASET_ALL_SPLITS = 4 };
/* DATASET_NO_GRAPH: the graph is declared, not loaded: adj.n_rows = n_cols = n, adj.nnz = the
 * stored edges, adj.rowptr = col = NULL (dataset_has_graph says 1). */
/* DATASET_ALL_SPLITS: the store's named splits too, into d->more (each checked against its
 * record and the node count); without it d->more stays NULL and only d->split_name is read. */
int dataset_load_ex(const char *path, int flags, dataset_t *d);

/* Named splits (loaders/dataset.c): a store holds its default split (d->split, named by
 * d->split_name when it has a name: the OGB folder it came from) and any others saved with it
 * (d->more: every split/ folder of an OGB dataset), so one store serves every split. */
typedef struct dataset_split_info {
    char name[DATASET_SPLIT_NAME_MAX];   /* "" for an unnamed default */
    int64_t n[SPLIT_COUNT];
    int is_default;
} dataset_split_info_t;
/* The store's splits, the default first (*count >= 1); *out owned (inca_free). */
struct store;
int dataset_splits_list(struct store *s, dataset_split_info_t **out, int *count);
/* A name a split may be stored under: 1..63 of [A-Za-z0-9._-] other than "stored" (which
 * --split reads as the default). INCA_EINVAL naming it otherwise. */
int dataset_split_name_check(const char *name);
/* --split SPEC on d, loaded from the store at path: NULL or "stored" keeps the default;
 * "random:TR,VA,TE[:SEED]" draws one (graph/split.h; seed unless the spec names one); any other
 * spec names a stored split (the default's name keeps it), which replaces d->split. An unknown
 * name is INCA_EINVAL listing the store's splits; d is unchanged on failure. "public" also
 * keeps the one split of a store whose default has no name (stores ingested before split
 * names were kept). Meant for a dataset as loaded: after one split replaced the default,
 * "stored" keeps the current one. */
int dataset_split_apply(const char *path, const char *spec, uint64_t seed, dataset_t *d);
/* CSR structure of arrays read from a store at path: rowptr from 0, non-decreasing, ending at
 * nnz; columns in [0, n_cols). INCA_EINVAL naming the store, the array and the first bad entry. */
int dataset_check_csr(const char *path, const char *rowptr_name, const char *col_name, const csr_t *g);
/* The stored graph alone (rowptr, col; structure checked) into *adj (owned, csr_free). */
struct store;
int dataset_load_adj(struct store *s, csr_t *adj);
/* Rows [r0, r1) of the stored graph alone (a rank's slice for a distributed partitioner): the
 * store's whole n is written to *n, out gets r1 - r0 rows, rowptr rebased to 0, n_cols = n,
 * only that slice's entries read. INCA_EINVAL for a range outside [0, n] and the structure
 * checks of dataset_check_csr on the slice. */
int dataset_load_adj_rows(struct store *s, int64_t r0, int64_t r1, int64_t *n, csr_t *out);
#endif
