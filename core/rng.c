/* Counter-based hash and xoshiro256** generator; see rng.h. Tested in test_core.c. */
#include "core/rng.h"
#include <math.h>

#define splitmix64 rng_splitmix64

uint64_t rng_hash64(uint64_t seed, uint64_t stream, uint64_t index) {
    /* Three rounds of splitmix over a mixed key: independent enough for dropout masks and
     * generators, and a pure function of its arguments. */
    return rng_hash_at(rng_hash_key(seed, stream), index);
}

float rng_hash_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
    return (float)(rng_hash64(seed, stream, index) >> 40) * (1.0f / 16777216.0f);
}

double rng_hash_uniform_d(uint64_t seed, uint64_t stream, uint64_t index) {
    return (double)(rng_hash64(seed, stream, index) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void rng_seed(rng_t *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) {
        x += 0x9e3779b97f4a7c15ull;
        r->s[i] = splitmix64(x);
    }
}

uint64_t rng_next(rng_t *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rng_uniform(rng_t *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

uint64_t rng_below(rng_t *r, uint64_t n) {
    /* Lemire's nearly divisionless method with rejection: unbiased. */
    __uint128_t m = (__uint128_t)rng_next(r) * n;
    uint64_t l = (uint64_t)m;
    if (l < n) {
        uint64_t t = -n % n;
        while (l < t) {
            m = (__uint128_t)rng_next(r) * n;
            l = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double rng_normal(rng_t *r) {
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void rng_shuffle_i64(rng_t *r, int64_t *a, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(r, (uint64_t)i + 1);
        int64_t t = a[i]; a[i] = a[j]; a[j] = t;
    }
}

void rng_shuffle_i32(rng_t *r, int32_t *a, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(r, (uint64_t)i + 1);
        int32_t t = a[i]; a[i] = a[j]; a[j] = t;
    }
}
