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

/* Balanced labels in random order into y; then the members of each class, ascending id, in
 * byclass (class c's block starts at off[c]), and the position of every node inside its class
 * block in rank. off: C + 1 zeros on entry. */
static void csbm_classes(const gen_opts_t *o, int32_t *y, int64_t *off, int64_t *byclass, int64_t *rank) {
    const int64_t n = o->nodes;
    const int32_t C = o->classes;
    for (int64_t v = 0; v < n; v++) y[v] = (int32_t)(v % C);
    {
        rng_t r;
        rng_seed(&r, rng_hash64(o->seed, GEN_STREAM_LABEL, 0));
        rng_shuffle_i32(&r, y, n);
    }
    for (int64_t v = 0; v < n; v++) off[y[v] + 1]++;
    for (int32_t c = 0; c < C; c++) off[c + 1] += off[c];
    /* a moving cursor per class, then off[] shifted back to the block starts */
    for (int64_t v = 0; v < n; v++) {
        int32_t c = y[v];
        rank[v] = off[c];
        byclass[off[c]++] = v;
    }
    for (int32_t c = C; c > 0; c--) off[c] = off[c - 1];
    off[0] = 0;
    for (int64_t v = 0; v < n; v++) rank[v] -= off[y[v]];
}

/* The m sampled edges (src[i], dst[i]), edge i from its own rng stream, over csbm_classes'
 * blocks. */
static void csbm_sample_edges(const gen_opts_t *o, const int32_t *y, const int64_t *off, const int64_t *byclass,
                              const int64_t *rank, int64_t m, int64_t *src, int64_t *dst) {
    const int64_t n = o->nodes;
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
}

/* Features x_i = mu_{y_i} + noise * eps_i into out->x (none when o->features is 0). */
static int csbm_features(const gen_opts_t *o, dataset_t *out) {
    if (o->features <= 0) return INCA_OK;
    const int64_t n = o->nodes, F = o->features;
    const int32_t C = o->classes;
    float *mean = inca_malloc((size_t)C * (size_t)F * sizeof *mean);
    out->x = inca_malloc((size_t)n * (size_t)F * sizeof *out->x);
    if (!mean || !out->x) { inca_free(mean); return INCA_ENOMEM; }
    const double scale = o->mean_scale / sqrt((double)F);
    for (int64_t k = 0; k < (int64_t)C * F; k++)
        mean[k] = (float)(scale * gen_normal(o->seed, GEN_STREAM_MEAN, (uint64_t)k));
    gen_fill_features(out->x, n, F, o->seed, o->noise, mean, out->y);
    inca_free(mean);
    return INCA_OK;
}

int gen_csbm(const gen_opts_t *o, dataset_t *out, gen_stats_t *st) {
    int rc;
    int64_t *off = NULL, *byclass = NULL, *rank = NULL, *src = NULL, *dst = NULL, m = 0;
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
    csbm_classes(o, out->y, off, byclass, rank);
    csbm_sample_edges(o, out->y, off, byclass, rank, m, src, dst);
    INCA_FREE(byclass);
    INCA_FREE(rank);
    INCA_FREE(off);
    if ((rc = gen_finish_graph(out, o, &src, &dst, m, &stats, t0)) != INCA_OK) goto fail;
    double t2 = inca_now();

    if ((rc = csbm_features(o, out)) != INCA_OK) goto fail;
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
    dataset_free(out);
    return rc;
}

