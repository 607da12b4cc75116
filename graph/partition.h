/* Graph partitioning for mini-batch training: METIS k-way (wrapped once, here) or a seeded
 * random fallback, and the renumbering that makes every part a contiguous id range.
 * A partitioning lives in the store as two arrays and one manifest record, written in one
 * transaction:   "part/<name>/perm"   (i64, n: new id of old node v is perm[v])
 *                "part/<name>/bounds" (i64, K+1: part p holds new ids [bounds[p], bounds[p+1]))
 *                record "part:<name>" -> part_manifest_t
 * where <name> is "<method>-<K>-s<seed>", e.g. "metis-40-s0".
 * Tested in test_partition.c (bijection, contiguity, edge cut recomputed independently,
 * METIS edge cut vs random, store round trip and reuse, bad inputs). */
#ifndef INCA_PARTITION_H
#define INCA_PARTITION_H
#include <stddef.h>
#include <stdint.h>
#include "graph/csr.h"
#include "loaders/store.h"

#define PART_MAGIC 0x54524150u   /* "PART" little-endian */
#define PART_VERSION 1u

/* The manifest record stored under "part:<name>" (fixed-size, plain bytes). `inca info`
 * prints these by iterating store_record_each(s, "part:", ...) and checking magic/version. */
typedef struct part_manifest {
    uint32_t magic, version;
    char name[64];        /* "metis-40-s0" */
    char method[16];      /* "metis" | "random" */
    int64_t nodes;        /* n of the graph partitioned */
    int64_t parts;        /* K */
    uint64_t seed;
    int64_t edge_cut;     /* undirected edges {u,v}, u != v, with endpoints in different parts */
    int64_t min_part, max_part;   /* smallest / largest part size */
    double seconds;       /* partitioning time (METIS call or shuffle), without store I/O */
} part_manifest_t;

typedef struct partition {
    int64_t n, k;
    int64_t *perm;     /* n: perm[old] = new, owned */
    int64_t *bounds;   /* k + 1, owned */
    part_manifest_t man;
} partition_t;

enum { PART_METIS = 0, PART_RANDOM = 1 };

/* Parse "metis" / "random" (INCA_EINVAL naming the flag value otherwise). */
int partition_method_parse(const char *s, int *method);
/* Writes "<method>-<k>-s<seed>" into buf. */
void partition_name(char *buf, size_t len, int method, int64_t k, uint64_t seed);

/* Assign each node of the symmetric graph `adj` (self-loops ignored) to one of k parts.
 * METIS: METIS_PartGraphKway with METIS_OPTION_SEED = seed; refuses (INCA_EINVAL) a
 * non-symmetric pattern, k < 1, k > n, and graphs whose sizes do not fit METIS's 32-bit idx_t.
 * k = 1 never reaches METIS. Random: a seeded shuffle cut into k equal-size chunks.
 * `part` (n entries) is caller-owned; *seconds (may be NULL) gets the time taken. */
int partition_assign(const csr_t *adj, int64_t k, int method, uint64_t seed, int32_t *part,
                     double *seconds);
/* Undirected cut edges: entries (u,v), u != v, part[u] != part[v], counted once per pair
 * (i.e. directed cross entries / 2 for a symmetric pattern). */
int64_t partition_edge_cut(const csr_t *adj, const int32_t *part);
/* Renumber: nodes of part 0 first, then part 1, ...; stable (old id order) within a part.
 * Fills out->perm, out->bounds, out->n, out->k and man.nodes/parts/min_part/max_part. */
int partition_from_parts(int64_t n, int64_t k, const int32_t *part, partition_t *out);

/* Compute a partitioning (assign + renumber + edge cut + manifest) without touching a store. */
int partition_compute(const csr_t *adj, int64_t k, int method, uint64_t seed, partition_t *out);

/* Load the partitioning `name` from the store (INCA_ENOTFOUND when absent; INCA_EINVAL when the
 * manifest's magic/version/sizes do not match the arrays or the store's node count). */
int partition_load(store_t *s, const char *name, partition_t *out);
/* Write arrays + manifest in one store transaction (replacing a same-named one). */
int partition_save(store_t *s, const partition_t *p);
/* Load "<method>-<k>-s<seed>" when stored (*reused = 1), else compute it on `adj`, save it and
 * set *reused = 0. `reused` may be NULL. */
int partition_get(store_t *s, const csr_t *adj, int64_t k, int method, uint64_t seed,
                  partition_t *out, int *reused);

void partition_free(partition_t *p);   /* frees owned arrays and zeroes; NULL-safe */
#endif
