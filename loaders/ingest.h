/* Ingest: parse a dataset in one of the supported on-disk formats into an in-memory dataset_t
 * (which the caller saves with dataset_save). One parser per format, in loaders/ingest_<fmt>.c.
 * Every bad input fails with INCA_EINVAL (or INCA_ENOTFOUND for a missing file) and a one-line
 * message "<file>:<line>: <what was expected>" (binary IDX files name a byte offset instead).
 * Tested in tests/test_ingest.c (hand-written inputs per format) and tests/test_e2e_ingest.c
 * (Cora, Facebook, Fashion-MNIST, and the catalogue of malformed inputs in tests/data/bad/).
 *
 * Formats (SRC is a folder or a file as noted):
 *   ogb       folder: raw/{edge,node-feat,node-label,num-node-list,num-edge-list}.csv[.gz],
 *             split/<name>/{train,valid,test}.csv[.gz] (every folder is kept: the default as the
 *             store's split, the others as named splits, loaders/dataset.h). Edges are stored once; the reverse is
 *             always added. node-feat and node-label are optional. Missing labels ("", "-1",
 *             "nan") make a node unlabelled; unlabelled nodes are dropped from every split.
 *   edgelist  file: "src dst" per line (whitespace or comma), '#'/'%' comments, n = max id + 1;
 *             side files: labels "node label" per line, features "node f1 ... fk" per line.
 *   metis     file: METIS graph format, header "n m [fmt [ncon]]", 1-based adjacency lines.
 *   idx       folder: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]; no graph.
 *   csv       folder: train.csv, [valid.csv,] test.csv[.gz], rows "label,f1,...,fk"; no graph.
 * Graphs never keep self-loops from the input; duplicate edges are always removed. */
#ifndef INCA_INGEST_H
#define INCA_INGEST_H
#include <stdint.h>
#include "loaders/dataset.h"
#include "loaders/ingest_opts.h"

/* "ogb" -> INGEST_OGB, ...; INCA_EINVAL naming the accepted names otherwise. */
int ingest_format_parse(const char *name, ingest_format_t *out);
const char *ingest_format_name(ingest_format_t f);

/* Parse `src` in format `f` into *out (initialised here; on failure *out is left empty).
 * opts may be NULL (defaults). The caller frees *out with dataset_free. */
int ingest_run(ingest_format_t f, const char *src, const ingest_opts_t *opts, dataset_t *out);

/* The parsers ingest_run dispatches to (loaders/ingest.c's table), one per format. */
int ingest_ogb(const char *dir, const ingest_opts_t *opts, dataset_t *out);
int ingest_edgelist(const char *path, const ingest_opts_t *opts, dataset_t *out);
int ingest_metis(const char *path, const ingest_opts_t *opts, dataset_t *out);
int ingest_idx(const char *dir, const ingest_opts_t *opts, dataset_t *out);
int ingest_csv(const char *dir, const ingest_opts_t *opts, dataset_t *out);
#endif
