/* Contextual stochastic block model: balanced random classes, per-edge endpoint sampling with
 * edge homophily H and expected average degree D, Gaussian class-mean features; see gen.h.
 * Tested in tests/test_gen.c (measured homophily and degree, class balance, nearest-class-mean
 * on one GCN propagation beats features alone, determinism, failure injection). */
#include "graph/gen_impl.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include <math.h>
#include <stdio.h>

int gen_csbm(const gen_opts_t *o, dataset_t *out, gen_stats_t *st) {
    int rc;
    int64_t *off = NULL, *byclass = NULL, *rank = NULL, *src = NULL, *dst = NULL, m = 0;
    float *mean = NULL;
    gen_stats_t stats = {0, 0, 0, 0};
    dataset_init(out);
    if ((rc = gen_opts_check(o, "csbm")) != INCA_OK) return rc;
    if ((rc = gen_edge_count(o, &m)) != INCA_OK) return rc;
    const int64_t n = o->nodes;
    const int32_t C = o->classes;

    double t0 = inca_now();
    out->y = inca_malloc((size_t)n * sizeof *out->y);
    off = inca_calloc((size_t)C + 1, sizeof *off);
    byclass = inca_malloc((size_t)n * sizeof *byclass);
    rank = inca_malloc((size_t)n * sizeof *rank);
    src = inca_malloc((size_t)m * sizeof *src + 1);
    dst = inca_malloc((size_t)m * sizeof *dst + 1);
    if (!out->y || !off || !byclass || !rank || !src || !dst) { rc = INCA_ENOMEM; goto fail; }

    /* Balanced labels in random order; then the members of each class, ascending id, and the
     * position of every node inside its class block. */
    for (int64_t v = 0; v < n; v++) out->y[v] = (int32_t)(v % C);
    {
        rng_t r;
        rng_seed(&r, rng_hash64(o->seed, GEN_STREAM_LABEL, 0));
        rng_shuffle_i32(&r, out->y, n);
    }
    for (int64_t v = 0; v < n; v++) off[out->y[v] + 1]++;
    for (int32_t c = 0; c < C; c++) off[c + 1] += off[c];
    /* a moving cursor per class, then off[] shifted back to the block starts */
    for (int64_t v = 0; v < n; v++) {
        int32_t c = out->y[v];
        rank[v] = off[c];
        byclass[off[c]++] = v;
    }
    for (int32_t c = C; c > 0; c--) off[c] = off[c - 1];
    off[0] = 0;
    for (int64_t v = 0; v < n; v++) rank[v] -= off[out->y[v]];

    const int32_t *y = out->y;
    const double H = o->homophily;
    const int threads = inca_threads();
    #pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < m; i++) {
        uint64_t s = rng_hash64(o->seed, GEN_STREAM_CSBM, (uint64_t)i);
        int64_t u = gen_below(gen_mix_next(&s), n);
        double coin = (double)(gen_mix_next(&s) >> 11) * (1.0 / 9007199254740992.0);
        uint64_t h = gen_mix_next(&s);
        int32_t c = y[u];
        int64_t lo = off[c], sz = off[c + 1] - off[c], v;
        if (coin < H) {
            /* another member of u's class, uniformly (skip u's own slot: no self-loops) */
            int64_t r = gen_below(h, sz - 1);
            if (r >= rank[u]) r++;
            v = byclass[lo + r];
        } else {
            /* a node of any other class, uniformly: the class blocks before and after c */
            int64_t r = gen_below(h, n - sz);
            v = byclass[r < lo ? r : r + sz];
        }
        src[i] = u;
        dst[i] = v;
    }
    INCA_FREE(byclass);
    INCA_FREE(rank);
    INCA_FREE(off);
    if ((rc = gen_finish_graph(out, o, &src, &dst, m, &stats, t0)) != INCA_OK) goto fail;
    double t2 = inca_now();

    if (o->features > 0) {
        const int64_t F = o->features;
        mean = inca_malloc((size_t)C * (size_t)F * sizeof *mean);
        out->x = inca_malloc((size_t)n * (size_t)F * sizeof *out->x);
        if (!mean || !out->x) { rc = INCA_ENOMEM; goto fail; }
        const double scale = o->mean_scale / sqrt((double)F);
        for (int64_t k = 0; k < (int64_t)C * F; k++)
            mean[k] = (float)(scale * gen_normal(o->seed, GEN_STREAM_MEAN, (uint64_t)k));
        gen_fill_features(out->x, n, F, o->seed, o->noise, mean, out->y);
        INCA_FREE(mean);
    }
    if ((rc = gen_finish_split(out, o)) != INCA_OK) goto fail;
    snprintf(out->source, sizeof out->source,
             "gen:csbm nodes=%lld avg_degree=%g features=%lld classes=%d homophily=%g noise=%g "
             "mean_scale=%g seed=%llu", (long long)n, o->avg_degree, (long long)o->features, C,
             o->homophily, o->noise, o->mean_scale, (unsigned long long)o->seed);
    stats.attr_s = inca_now() - t2;
    if (st) *st = stats;
    return INCA_OK;

fail:
    inca_free(off);
    inca_free(byclass);
    inca_free(rank);
    inca_free(src);
    inca_free(dst);
    inca_free(mean);
    dataset_free(out);
    return rc;
}

