/* Exact k-nearest-neighbour graphs of feature rows, for label spreading: distances by blocked
 * BLAS products (‖a‖² + ‖b‖² − 2 a·b via kern_gemm) and a bounded max-heap per row, so memory is
 * O(n·k + block²) and the cost is one n×n×f GEMM. Tested in test_pruning_knn.c against a
 * brute-force double-precision search and on a hand-built point set. */
#ifndef INCA_KNN_H
#define INCA_KNN_H
#include <stddef.h>
#include <stdint.h>
#include "graph/csr.h"

typedef enum { KNN_EUCLIDEAN = 0, KNN_COSINE = 1 } knn_metric_t;

/* "euclidean" / "cosine" -> metric; INCA_EINVAL naming the accepted names otherwise. */
int knn_metric_parse(const char *name, knn_metric_t *out);

/* For each of the n rows of x (n x f, row-major) its k nearest other rows (the row itself is
 * never its own neighbour; duplicates of it may be): nbr[i*k + j] (ascending distance, ties to
 * the lower id) and, when dist is non-NULL, dist[i*k + j] = squared Euclidean distance or
 * 1 − cos. Rows of zero norm have cosine distance 1 to everything. Requires 1 <= k < n.
 * Deterministic for a fixed thread count. Caller owns nbr (n*k) and dist. */
int knn_exact(const float *x, int64_t n, int64_t f, int k, knn_metric_t metric, int32_t *nbr, float *dist);

/* Approximate kNN through FAISS (built when CMake finds libfaiss-dev: knn_faiss_available() is 1):
 * an index from FAISS's index factory (default "IVF<nlist>,Flat" with nlist = 4 sqrt(n), at most
 * n / 39 so that k-means has the points it wants; README: measured against HNSW32, SQ8 and PCA) trained, filled and searched on the rows
 * themselves; squared L2 (cosine: on the rows scaled to unit length, dist = 1 - cos). The same
 * contract as knn_exact (the row is never its own neighbour; ascending distance), except that
 * neighbours may be missed (recall < 1) and a row whose probed lists hold fewer than k other
 * rows repeats its last neighbour. Deterministic for a fixed seed and thread count. Without FAISS:
 * INCA_EINVAL saying so. */
typedef struct knn_faiss_opts {
    const char *factory;   /* NULL: "IVF<nlist>,Flat" */
    int nprobe;            /* IVF lists searched per query (default 8) */
    uint64_t seed;         /* k-means' seed */
} knn_faiss_opts_t;
int knn_faiss_available(void);
/* What a FAISS request says in a build without it (knn_faiss, and prune's flags before any work) */
#define KNN_NO_FAISS_MSG "--knn-search faiss: this build has no FAISS (install libfaiss-dev and rebuild, or use --knn-search exact)"
/* The default factory string for n rows: "IVF<nlist>,Flat" as above. */
void knn_faiss_default_factory(int64_t n, char *buf, size_t len);
int knn_faiss(const float *x, int64_t n, int64_t f, int k, knn_metric_t metric, const knn_faiss_opts_t *o, int32_t *nbr,
              float *dist);

/* The symmetric kNN graph W = A ∪ Aᵀ (A[i][nbr[i*k+j]] = 1) as an owned pattern CSR
 * (val NULL, no self-loops, sorted columns). Caller frees with csr_free. */
int knn_graph(const int32_t *nbr, int64_t n, int k, csr_t *out);
#endif
