/* Internal helpers shared by the generators (gen_common.c, gen_rmat.c, gen_csbm.c): rng
 * stream ids, a per-edge splitmix sequence, range reduction and hash-based Gaussians.
 * Not part of the public interface; tested through tests/test_gen.c. */
#ifndef INCA_GEN_IMPL_H
#define INCA_GEN_IMPL_H
#include <stdint.h>
#include "graph/gen.h"

/* rng_hash64 streams: one per kind of random decision, so they never share numbers. */
enum {
    GEN_STREAM_PERM = 0x100,   /* rmat id permutation (sequential shuffle seed) */
    GEN_STREAM_RMAT = 0x101,   /* rmat edge i: seed of its splitmix sequence */
    GEN_STREAM_LABEL = 0x102,  /* labels (rmat: per node; csbm: shuffle seed) */
    GEN_STREAM_X = 0x103,      /* feature noise, index i*F + j */
    GEN_STREAM_MEAN = 0x104,   /* csbm class means, index c*F + j */
    GEN_STREAM_CSBM = 0x105,   /* csbm edge i: seed of its splitmix sequence */
    GEN_STREAM_SPLIT = 0x106   /* seed handed to split_random */
};

/* splitmix64 step: a cheap sequence of 64-bit numbers from one per-edge hash. */
static inline uint64_t gen_mix_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Map 64 random bits to [0, n) by multiply-high (bias below n / 2^64, negligible here). */
static inline int64_t gen_below(uint64_t h, int64_t n) {
    return (int64_t)(((__uint128_t)h * (uint64_t)n) >> 64);
}

/* A keyed pseudo-random permutation of [0, n) with no table, so relabelling an edge list
 * costs no cache misses. On b = ceil(log2 n) bits it applies three rounds of bijections of
 * [0, 2^b): multiply by a keyed odd number, xor-shift right by ceil(b/2), add a key (all mod
 * 2^b); values >= n are cycle-walked (applied again) until < n, about 1-2 steps since
 * 2^b < 2n. Keys and multipliers come from (seed, GEN_STREAM_PERM). */
typedef struct gen_perm { int64_t n; int shift; uint64_t mask; uint64_t mul[3], add[3]; } gen_perm_t;
void gen_perm_init(gen_perm_t *p, int64_t n, uint64_t seed);
static inline int64_t gen_perm_apply(const gen_perm_t *p, int64_t x) {
    uint64_t y = (uint64_t)x;
    do {
        for (int k = 0; k < 3; k++) {
            y = (y * p->mul[k]) & p->mask;
            y ^= y >> p->shift;
            y = (y + p->add[k]) & p->mask;
        }
    } while (y >= (uint64_t)p->n);
    return (int64_t)y;
}

/* A standard normal from (seed, stream, index) by Box-Muller on the two 32-bit halves. */
double gen_normal(uint64_t seed, uint64_t stream, uint64_t index);

/* x[i*f + j] = (mean ? mean[y[i]*f + j] : 0) + sigma * gen_normal(seed, GEN_STREAM_X, i*f + j),
 * in parallel over rows (deterministic for any thread count). */
void gen_fill_features(float *x, int64_t n, int64_t f, uint64_t seed, double sigma,
                       const float *mean, const int32_t *y);

/* Build out->adj from m sampled edges (symmetrise, dedupe, drop self-loops), free *src and
 * *dst whatever happens, set out->n/f/c from o, and record in st the sampling time (since t0)
 * and the CSR build time. */
int gen_finish_graph(dataset_t *out, const gen_opts_t *o, int64_t **src, int64_t **dst, int64_t m,
                     gen_stats_t *st, double t0);
/* A stratified random split (split_random) when o->split asks for one and out has labels. */
int gen_finish_split(dataset_t *out, const gen_opts_t *o);

/* round(N*D/2) undirected edges to sample; INCA_EINVAL when it overflows. */
int gen_edge_count(const gen_opts_t *o, int64_t *m);
#endif
