/* Datasets in stores: saving an in-memory dataset (graph/dataset.h) as an LMDB store and loading
 * one back, contents checked. Tested in test_store.c and test_store_corrupt.c. */
#ifndef INCA_DATASET_H
#define INCA_DATASET_H
#include "graph/dataset.h"

/* Write `d` as a new store at `path` atomically: everything goes to a temporary directory
 * beside it, meta is committed last, then it is renamed onto `path`. Fails with INCA_EINVAL
 * when `path` exists unless `overwrite`. Nothing is left behind on failure. */
int dataset_save(const dataset_t *d, const char *path, int overwrite);
/* Load a whole store into memory (copies; the store is closed again). */
int dataset_load(const char *path, dataset_t *d);
/* The same with flags: DATASET_NO_X leaves d->x NULL (d->f keeps the store's width): for a
 * trainer that maps the features from the store's layout instead (nn/layout.h). */
enum { DATASET_NO_X = 1, DATASET_NO_GRAPH = 2 };
/* DATASET_NO_GRAPH: the graph is declared, not loaded: adj.n_rows = n_cols = n, adj.nnz = the
 * stored edges, adj.rowptr = col = NULL (dataset_has_graph says 1). */
int dataset_load_ex(const char *path, int flags, dataset_t *d);
/* CSR structure of arrays read from a store at path: rowptr from 0, non-decreasing, ending at
 * nnz; columns in [0, n_cols). INCA_EINVAL naming the store, the array and the first bad entry. */
int dataset_check_csr(const char *path, const char *rowptr_name, const char *col_name, const csr_t *g);
/* The stored graph alone (rowptr, col; structure checked) into *adj (owned, csr_free). */
struct store;
int dataset_load_adj(struct store *s, csr_t *adj);
#endif
