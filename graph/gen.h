/* Synthetic graphs: Graph500 R-MAT and a contextual stochastic block model (CSBM), built as
 * in-memory datasets ready for dataset_save. Every random number is a pure function of
 * (seed, stream, index) (rng_hash64), so the output is bit-identical for any thread count.
 * Tested in tests/test_gen.c (structure, determinism, homophily, learnability).
 *
 * CAVEATS FIRST
 * - Node ids must fit in int32 (N < 2^31): the CSR stores 32-bit column indices.
 * - N*D/2 undirected edges are SAMPLED; duplicates and self-loops are then removed, so the
 *   stored directed edge count is at most N*D (R-MAT loses a visible share to duplicates at
 *   high degree; CSBM loses almost none when classes are large).
 * - gen_opts_check refuses D > N-1 (no simple graph has it), and a CSBM whose merged duplicates
 *   would move the edge homophily more than 0.05 from H (too few nodes per class for D).
 * - Peak memory is about 16 bytes per sampled edge (int64 src/dst) plus what csr_from_edges
 *   needs, plus N*F*4 bytes of features.
 */
#ifndef INCA_GEN_H
#define INCA_GEN_H
#include <stdint.h>
#include "graph/dataset.h"

typedef struct gen_opts {
    int64_t nodes;        /* N, 1 <= N < 2^31 */
    double avg_degree;    /* D >= 0: round(N*D/2) undirected edges are sampled */
    int64_t features;     /* F >= 0 (0: no features, x = NULL) */
    int32_t classes;      /* C: rmat 0 = unlabelled (y = NULL), else random labels in [0,C);
                             csbm C >= 2, balanced classes */
    uint64_t seed;
    double homophily;     /* csbm: expected fraction of intra-class edges, in [0,1] (0.8) */
    double noise;         /* Gaussian feature noise sigma >= 0 (1.0) */
    double mean_scale;    /* csbm: class means are N(0, I) * mean_scale / sqrt(F), so two class
                             means lie about sqrt(2)*mean_scale apart whatever F is (1.0) */
    double split[3];      /* train/valid/test fractions of the labelled nodes, stratified per
                             class (split_random); all zero: no split (0.6, 0.2, 0.2) */
} gen_opts_t;

/* Times and counts of one generation, for the benchmark (all seconds, wall clock). */
typedef struct gen_stats {
    double edges_s;          /* sampling the edge list */
    double csr_s;            /* csr_from_edges: symmetrise, dedupe, drop self-loops */
    double attr_s;           /* features, labels, split */
    int64_t sampled_edges;   /* undirected edges sampled before dedupe */
} gen_stats_t;

/* Fill o with the defaults above (nodes, degree, features, classes left at 0). */
void gen_opts_default(gen_opts_t *o);
/* Check o for `kind` ("rmat" or "csbm"): INCA_EINVAL naming the offending option. */
int gen_opts_check(const gen_opts_t *o, const char *kind);

/* R-MAT (a, b, c, d) = (0.57, 0.19, 0.19, 0.05) on 2^ceil(log2 N) ids. Each sampled edge i
 * draws its quadrants from its own splitmix sequence, seeded by (seed, i); an edge with an
 * endpoint >= N is redrawn further along it, so exactly round(N*D/2) in-range edges are sampled (the
 * distribution is R-MAT conditioned on both endpoints < N). Ids are then relabelled by a
 * seeded pseudo-random permutation (keyed multiply/xor-shift rounds, no table) so the hubs are not
 * the low ids. Features: N(0, noise^2) noise;
 * labels: uniform random when classes > 0 (plus a random split). out is initialised here;
 * on failure it is left empty. st may be NULL. */
int gen_rmat(const gen_opts_t *o, dataset_t *out, gen_stats_t *st);

/* Contextual SBM. Labels: node i gets class (i mod C) before a seeded shuffle, so class sizes
 * differ by at most one. Edge i picks u uniformly among all nodes; with probability H picks v
 * uniformly among the other members of u's class, otherwise uniformly among the nodes of the
 * other classes. This equals an SBM whose intra/inter edge probabilities give expected
 * average degree D and edge homophily H (no self-loops are sampled; duplicates are rare when
 * classes are large). Features: x_i = mu_{y_i} + noise * eps_i, mu_c ~ N(0, I) * mean_scale /
 * sqrt(F). Split: random stratified split with o->split. out as for gen_rmat. */
int gen_csbm(const gen_opts_t *o, dataset_t *out, gen_stats_t *st);

/* The SBM edge probabilities that gen_csbm's sampling amounts to: p_in for a pair in the same
 * class, p_out for a pair in different classes, i.e. H*m / (intra pairs) and (1-H)*m / (inter
 * pairs) with m = round(N*D/2) and the balanced class sizes (before duplicates are merged;
 * for equal classes of size s: p_in = H*D/(s-1), p_out = (1-H)*D/(N-s)). Options as checked by
 * gen_opts_check(o, "csbm"). */
void gen_csbm_edge_probs(const gen_opts_t *o, double *p_in, double *p_out);

/* What gen_csbm(o) is expected to store once repeated pairs merge: each pair is sampled a
 * Poisson number of times with mean p_in or p_out (gen_csbm_edge_probs) and stored when that is
 * at least 1, so *degree is the expected average degree and *homophily the expected edge
 * homophily (o->homophily when no edge is expected). gen_opts_check refuses options whose
 * homophily would drift more than 0.05 from o->homophily. Options as checked up to that point. */
void gen_csbm_expected(const gen_opts_t *o, double *degree, double *homophily);

/* Fraction of stored (directed) edges whose endpoints share a label, over edges with both
 * endpoints labelled; NaN when there are none. */
double gen_edge_homophily(const csr_t *g, const int32_t *y);
#endif
