/* Graph500 R-MAT generator (a, b, c, d) = (0.57, 0.19, 0.19, 0.05) with rejection of
 * out-of-range ids, a random id permutation, noise features and random labels; see gen.h.
 * Tested in tests/test_gen.c (skewed degrees, symmetry, no loops/duplicates, determinism
 * across thread counts, failure injection). */
#include "graph/gen_impl.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include <stdio.h>

/* Quadrant thresholds on 32-bit uniforms: a, a+b, a+b+c of (0.57, 0.19, 0.19, 0.05). */
#define RMAT_T_A 2448131358ull   /* 0.57 * 2^32 */
#define RMAT_T_AB 3264175144ull  /* 0.76 * 2^32 */
#define RMAT_T_ABC 4080218931ull /* 0.95 * 2^32 */

/* Edge i: descend `scale` levels picking a quadrant per level from edge i's own splitmix
 * sequence; redraw (continuing the sequence) while an endpoint is >= n. */
static void rmat_edge(uint64_t seed, uint64_t i, int scale, int64_t n, int64_t *pu, int64_t *pv) {
    uint64_t s = rng_hash64(seed, GEN_STREAM_RMAT, i);
    for (;;) {
        int64_t u = 0, v = 0;
        uint64_t bits = 0;
        for (int l = 0; l < scale; l++) {
            if ((l & 1) == 0) bits = gen_mix_next(&s);
            uint64_t r = (l & 1) ? (bits >> 32) : (bits & 0xffffffffull);
            int bu = r >= RMAT_T_AB;                        /* quadrants c, d: lower half */
            int bv = (r >= RMAT_T_A && r < RMAT_T_AB) || r >= RMAT_T_ABC;   /* b, d: right */
            u = (u << 1) | bu;
            v = (v << 1) | bv;
        }
        if (u < n && v < n) {
            *pu = u;
            *pv = v;
            return;
        }
    }
}

int gen_rmat(const gen_opts_t *o, dataset_t *out, gen_stats_t *st) {
    int rc;
    int64_t *src = NULL, *dst = NULL, m = 0;
    gen_stats_t stats = {0, 0, 0, 0};
    dataset_init(out);
    if ((rc = gen_opts_check(o, "rmat")) != INCA_OK) return rc;
    if ((rc = gen_edge_count(o, &m)) != INCA_OK) return rc;
    const int64_t n = o->nodes;
    int scale = 0;
    while (((int64_t)1 << scale) < n) scale++;

    double t0 = inca_now();
    src = inca_malloc((size_t)m * sizeof *src + 1);
    dst = inca_malloc((size_t)m * sizeof *dst + 1);
    if (!src || !dst) { rc = INCA_ENOMEM; goto fail; }
    gen_perm_t perm;
    gen_perm_init(&perm, n, o->seed);
    const int threads = inca_threads();
    #pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < m; i++) {
        int64_t u, v;
        rmat_edge(o->seed, (uint64_t)i, scale, n, &u, &v);
        src[i] = gen_perm_apply(&perm, u);
        dst[i] = gen_perm_apply(&perm, v);
    }
    if ((rc = gen_finish_graph(out, o, &src, &dst, m, &stats, t0)) != INCA_OK) goto fail;
    double t2 = inca_now();

    if (o->features > 0) {
        out->x = inca_malloc((size_t)n * (size_t)o->features * sizeof *out->x);
        if (!out->x) { rc = INCA_ENOMEM; goto fail; }
        gen_fill_features(out->x, n, o->features, o->seed, o->noise, NULL, NULL);
    }
    if (o->classes > 0) {
        out->y = inca_malloc((size_t)n * sizeof *out->y);
        if (!out->y) { rc = INCA_ENOMEM; goto fail; }
        for (int64_t v = 0; v < n; v++)
            out->y[v] = (int32_t)gen_below(rng_hash64(o->seed, GEN_STREAM_LABEL, (uint64_t)v), o->classes);
    }
    if ((rc = gen_finish_split(out, o)) != INCA_OK) goto fail;
    snprintf(out->source, sizeof out->source,
             "gen:rmat nodes=%lld avg_degree=%g features=%lld classes=%d noise=%g seed=%llu",
             (long long)n, o->avg_degree, (long long)o->features, o->classes, o->noise,
             (unsigned long long)o->seed);
    stats.attr_s = inca_now() - t2;
    if (st) *st = stats;
    return INCA_OK;

fail:
    inca_free(src);
    inca_free(dst);
    dataset_free(out);
    return rc;
}
