/* A store's dataset written back out for other tools (`inca export`, issue 14), so a PyG, DGL
 * or OGB user loads exactly the data inca trained on (a generated graph, a pruned dataset):
 *
 * - EXPORT_OGB: the OGB raw layout that `inca ingest --format ogb` reads: raw/num-node-list,
 *   num-edge-list, edge (each undirected edge once, u < v), node-feat (%.9g: every float32
 *   comes back bit for bit), node-label (-1 for unlabelled), and split/NAME/{train,valid,test}
 *   for the default split and for each named split the dataset carries (d->more); ingest takes
 *   the folder named "stored" (an unnamed default) as the default, else the first by name, so
 *   `ingest --split NAME` keeps a named default the default,
 *   all .csv.gz. Ingesting it gives the same store contents (tested: arrays equal, training
 *   bit for bit).
 * - EXPORT_NPZ: one NumPy .npz (a zip of stored .npy members, as numpy.savez writes): x
 *   (float32 n x f), y (int64 n, -1 unlabelled), edge_index (int64 2 x nnz, both directions of
 *   every edge, rows sorted: PyG's layout), train_idx, valid_idx, test_idx (int64). Members of
 *   4 GiB and more need ZIP64, which is not written: EXPORT_NPY then.
 * - EXPORT_NPY: the same arrays as DIR/<name>.npy files.
 * - npz and npy with a partitioning (export_dataset_parts): also part (int64 n: each node's part,
 *   in the store's node order), so another tool batches the same METIS parts
 *   (bench/gas_reference.py).
 *
 * Nothing half-written: everything goes to a temporary path beside the output, renamed into
 * place at the end; an existing output is refused. Tested in tests/test_export.c. */
#ifndef INCA_LOADERS_EXPORT_H
#define INCA_LOADERS_EXPORT_H
#include <stdint.h>
#include "graph/dataset.h"

enum { EXPORT_OGB = 0, EXPORT_NPZ = 1, EXPORT_NPY = 2 };

/* "ogb" | "npz" | "npy" (INCA_EINVAL naming --format otherwise). */
int export_format_parse(const char *s, int *fmt);

typedef struct export_stats {
    int files;
    int64_t bytes;   /* written (compressed for ogb) */
    int64_t edges;   /* edges written: undirected ones once each (ogb) or stored nonzeros (npz, npy) */
} export_stats_t;

/* Write d to `out` (a folder for ogb and npy, a file for npz) in format fmt; split_name names
 * the default split's OGB folder (NULL: d->split_name, else "stored"); npz and npy carry the
 * default split only; a dataset without features has no x (npz, npy) or node-feat file (ogb).
 * INCA_EINVAL when out exists or d has neither features nor a graph. */
int export_dataset(const dataset_t *d, int fmt, const char *out, const char *split_name, export_stats_t *st);
/* The same with part (n entries, borrowed; NULL: none) written as the member "part" of npz/npy
 * (INCA_EINVAL with --format ogb, which has no place for it). */
int export_dataset_parts(const dataset_t *d, int fmt, const char *out, const char *split_name, const int64_t *part,
                         export_stats_t *st);
#endif
