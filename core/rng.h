/* Random numbers. Two kinds: a counter-based hash (rng_hash*) whose value depends only on
 * (seed, stream, index), so parallel code gives the same numbers for any thread count and
 * schedule; and a small sequential generator (xoshiro256**) for shuffles and sampling.
 * Tested in test_core.c (reproducibility, uniformity moments). */
#ifndef INCA_RNG_H
#define INCA_RNG_H
#include <stdint.h>

uint64_t rng_hash64(uint64_t seed, uint64_t stream, uint64_t index);

/* The same hash split in two so hot loops mix (seed, stream) once:
 * rng_hash64(seed, stream, i) == rng_hash_at(rng_hash_key(seed, stream), i). */
static inline uint64_t rng_splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
static inline uint64_t rng_hash_key(uint64_t seed, uint64_t stream) {
    return rng_splitmix64(rng_splitmix64(seed ^ 0x5851f42d4c957f2dull) ^ stream);
}
static inline uint64_t rng_hash_at(uint64_t key, uint64_t index) { return rng_splitmix64(key ^ index); }
/* Uniform float in [0,1) from a key, 24 bits, equal to rng_hash_uniform(seed, stream, index). */
static inline float rng_hash_at_uniform(uint64_t key, uint64_t index) {
    return (float)(rng_hash_at(key, index) >> 40) * (1.0f / 16777216.0f);
}
/* Uniform in [0,1) with 24 random bits (float) or 53 (double). */
float rng_hash_uniform(uint64_t seed, uint64_t stream, uint64_t index);
double rng_hash_uniform_d(uint64_t seed, uint64_t stream, uint64_t index);

typedef struct rng { uint64_t s[4]; } rng_t;
void rng_seed(rng_t *r, uint64_t seed);
uint64_t rng_next(rng_t *r);
double rng_uniform(rng_t *r);                 /* [0,1) */
uint64_t rng_below(rng_t *r, uint64_t n);     /* uniform in [0,n), unbiased; n > 0 */
double rng_normal(rng_t *r);                  /* standard normal (Box-Muller, no caching) */
void rng_shuffle_i64(rng_t *r, int64_t *a, int64_t n);   /* Fisher-Yates */
void rng_shuffle_i32(rng_t *r, int32_t *a, int64_t n);
#endif
