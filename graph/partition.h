/* Graph partitioning for mini-batch training: METIS k-way (wrapped once, here) or a seeded
 * random fallback, and the renumbering that makes every part a contiguous id range. This
 * module computes; loaders/partition_store.h keeps a partitioning in a store.
 * Tested in test_partition.c (bijection, contiguity, edge cut recomputed independently,
 * METIS edge cut vs random, store round trip and reuse, bad inputs). */
#ifndef INCA_PARTITION_H
#define INCA_PARTITION_H
#include <stddef.h>
#include <stdint.h>
#include "graph/csr.h"
#include "graph/partition_progress.h"

#define PART_MAGIC 0x54524150u   /* "PART" little-endian */
#define PART_VERSION 1u

/* The manifest record stored under "part:<name>" (fixed-size, plain bytes). `inca info`
 * prints these by iterating store_record_each(s, "part:", ...) and checking magic/version. */
typedef struct part_manifest {
    uint32_t magic, version;
    char name[64];        /* "metis-40-s0" */
    char method[16];      /* "metis" | "random" | "parmetis" | "lp" */
    int64_t nodes;        /* n of the graph partitioned */
    int64_t parts;        /* K */
    uint64_t seed;
    int64_t edge_cut;     /* undirected edges {u,v}, u != v, with endpoints in different parts */
    int64_t min_part, max_part;   /* smallest / largest part size */
    double seconds;       /* partitioning time (METIS call or shuffle; ParMETIS: the slowest rank's
                           * call), without store I/O */
} part_manifest_t;

typedef struct partition {
    int64_t n, k;
    int64_t *perm;     /* n: perm[old] = new, owned */
    int64_t *bounds;   /* k + 1, owned */
    part_manifest_t man;
} partition_t;

/* PART_PARMETIS: PT-Scotch's ParMETIS interface over MPI ranks, graph/partition_par.h; the
 * functions of this header compute METIS, random and PART_LP (multilevel label propagation,
 * graph/partition_lp.h) partitionings. */
enum { PART_METIS = 0, PART_RANDOM = 1, PART_PARMETIS = 2, PART_LP = 3 };

/* Parse "metis" / "random" / "parmetis" / "lp" (INCA_EINVAL naming the flag value otherwise). */
int partition_method_parse(const char *s, int *method);
const char *partition_method_name(int method);
/* Writes "<method>-<k>-s<seed>" into buf, and for parmetis with ranks > 0 "-r<ranks>" after it:
 * PT-Scotch's partition depends on the rank count, so the name carries it. */
void partition_name(char *buf, size_t len, int method, int64_t k, uint64_t seed, int ranks);
/* The reverse: "<method>-<k>-s<seed>" gives the three (*ranks = 0), "parmetis-<k>-s<seed>-r<P>"
 * also the rank count; a bare method word ("metis") gives the method with *k = *seed = 0.
 * INCA_EINVAL naming `s` otherwise. ranks may be NULL. */
int partition_name_parse(const char *s, int *method, int64_t *k, uint64_t *seed, int *ranks);
/* A --partition NAME beside --parts: a stored name's part count becomes *parts, which must
 * already equal it when --parts was given (parts_given). INCA_EINVAL naming both otherwise, or
 * the name when it does not parse. */
int partition_name_parts(const char *name, int parts_given, int64_t *parts);

/* Assign each node of the symmetric graph `adj` (self-loops ignored) to one of k parts.
 * METIS: METIS_PartGraphKway with METIS_OPTION_SEED = seed; refuses (INCA_EINVAL) a
 * non-symmetric pattern, k < 1, k > n, and graphs whose sizes do not fit METIS's 32-bit idx_t.
 * k = 1 never reaches METIS. Random: a seeded shuffle cut into k equal-size chunks. PART_PARMETIS
 * is refused here (it runs over ranks: partition_par_compute).
 * `part` (n entries) is caller-owned; *seconds (may be NULL) gets the time taken. */
int partition_assign(const csr_t *adj, int64_t k, int method, uint64_t seed, int32_t *part,
                     double *seconds);
/* The same, reporting progress to pg (NULL: none) */
int partition_assign_pg(const csr_t *adj, int64_t k, int method, uint64_t seed, const partition_progress_t *pg,
                        int32_t *part, double *seconds);
/* Undirected cut edges: entries (u,v), u != v, part[u] != part[v], counted once per pair
 * (i.e. directed cross entries / 2 for a symmetric pattern). */
int64_t partition_edge_cut(const csr_t *adj, const int32_t *part);
/* Renumber: nodes of part 0 first, then part 1, ...; stable (old id order) within a part.
 * Fills out->perm, out->bounds, out->n, out->k and man.nodes/parts/min_part/max_part. */
int partition_from_parts(int64_t n, int64_t k, const int32_t *part, partition_t *out);

/* Compute a partitioning (assign + renumber + edge cut + manifest) without touching a store. */
int partition_compute(const csr_t *adj, int64_t k, int method, uint64_t seed, partition_t *out);
int partition_compute_pg(const csr_t *adj, int64_t k, int method, uint64_t seed, const partition_progress_t *pg,
                         partition_t *out);

void partition_free(partition_t *p);   /* frees owned arrays and zeroes; NULL-safe */
#endif
