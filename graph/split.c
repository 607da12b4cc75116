/* Random stratified splits and the "random:TR,VA,TE" spec parser; see split.h.
 * Tested in tests/test_split.c (sizes per class, disjointness, sortedness, determinism, parse
 * errors, failure injection). */
#include "graph/split.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPLIT_STREAM 0x53504c4954ull   /* "SPLIT": rng stream of the per-class shuffles */

static int fractions_check(const double fr[3], const char *what) {
    double sum = 0.0;
    for (int k = 0; k < 3; k++) {
        if (!(fr[k] >= 0.0 && fr[k] <= 1.0))
            return inca_fail(INCA_EINVAL, "%s: fraction %d (%s) is %g, expected a number in [0,1]",
                             what, k + 1, dataset_split_names[k], fr[k]);
        sum += fr[k];
    }
    if (sum > 1.0 + 1e-9)
        return inca_fail(INCA_EINVAL, "%s: fractions sum to %g, expected at most 1", what, sum);
    if (sum <= 0.0)
        return inca_fail(INCA_EINVAL, "%s: fractions are all zero, expected a positive sum", what);
    return INCA_OK;
}

int split_parse(const char *spec, double fr[3]) { return split_parse_seed(spec, fr, NULL, NULL); }

int split_parse_seed(const char *spec, double fr[3], uint64_t *seed, int *has_seed) {
    static const char prefix[] = "random:";
    if (!spec) return inca_fail(INCA_EINVAL, "split: missing spec, expected random:TR,VA,TE");
    if (strncmp(spec, prefix, sizeof prefix - 1) != 0)
        return inca_fail(INCA_EINVAL, "split '%s': expected random:TR,VA,TE (e.g. random:0.6,0.2,0.2)", spec);
    double v[3];
    const char *p = spec + sizeof prefix - 1;
    for (int k = 0; k < 3; k++) {
        char *end = NULL;
        errno = 0;
        v[k] = strtod(p, &end);
        if (end == p || errno != 0 || !isfinite(v[k]))
            return inca_fail(INCA_EINVAL, "split '%s': fraction %d is not a number, expected random:TR,VA,TE",
                             spec, k + 1);
        p = end;
        if (k < 2) {
            if (*p != ',')
                return inca_fail(INCA_EINVAL, "split '%s': expected 3 comma-separated fractions (random:TR,VA,TE)", spec);
            p++;
        }
    }
    uint64_t sd = 0;
    const int with_seed = *p == ':';
    if (with_seed) {   /* random:TR,VA,TE:SEED */
        if (!seed) return inca_fail(INCA_EINVAL, "split '%s': a seed (':%s') is not taken here", spec, p + 1);
        char *end = NULL;
        errno = 0;
        const unsigned long long v = p[1] >= '0' && p[1] <= '9' ? strtoull(p + 1, &end, 10) : 0;
        if (!end || end == p + 1 || *end != '\0' || errno != 0)
            return inca_fail(INCA_EINVAL, "split '%s': expected a non-negative integer seed after the fractions "
                             "(random:TR,VA,TE:SEED), got '%s'", spec, p + 1);
        sd = (uint64_t)v;
        p = end;
    }
    if (*p != '\0')
        return inca_fail(INCA_EINVAL, "split '%s': unexpected '%s' after the third fraction", spec, p);
    char what[96];
    snprintf(what, sizeof what, "split '%.80s'", spec);
    int rc = fractions_check(v, what);
    if (rc != INCA_OK) return rc;
    memcpy(fr, v, sizeof v);
    if (seed) *seed = sd;
    if (has_seed) *has_seed = with_seed;
    return INCA_OK;
}

/* Boundary of the first `frac` of n nodes, rounded to nearest and clamped to n. */
static int64_t frac_bound(double frac, int64_t n) {
    double b = floor(frac * (double)n + 0.5);
    if (b < 0) b = 0;
    if (b > (double)n) b = (double)n;
    return (int64_t)b;
}

int split_random(dataset_t *d, const double fr[3], uint64_t seed) {
    int rc = INCA_OK;
    int64_t *cls_off = NULL, *byclass = NULL, *fill = NULL;
    int8_t *assign = NULL;
    int64_t *out[SPLIT_COUNT] = {NULL, NULL, NULL};
    int64_t out_n[SPLIT_COUNT] = {0, 0, 0};

    if (!d || !d->y) return inca_fail(INCA_EINVAL, "split: the dataset has no labels to split");
    rc = fractions_check(fr, "split");
    if (rc != INCA_OK) return rc;

    const int64_t n = d->n;
    int64_t ncls = 0;
    for (int64_t i = 0; i < n; i++)
        if (d->y[i] >= 0 && (int64_t)d->y[i] + 1 > ncls) ncls = (int64_t)d->y[i] + 1;

    cls_off = inca_calloc((size_t)ncls + 1, sizeof *cls_off);
    fill = inca_calloc((size_t)ncls + 1, sizeof *fill);
    assign = inca_malloc((size_t)n * sizeof *assign + 1);
    if (!cls_off || !fill || !assign) { rc = INCA_ENOMEM; goto done; }

    /* Labelled nodes grouped by class, ascending id within a class (counting sort). */
    for (int64_t i = 0; i < n; i++)
        if (d->y[i] >= 0) cls_off[d->y[i] + 1]++;
    for (int64_t c = 0; c < ncls; c++) cls_off[c + 1] += cls_off[c];
    byclass = inca_malloc((size_t)cls_off[ncls] * sizeof *byclass + 1);
    if (!byclass) { rc = INCA_ENOMEM; goto done; }
    for (int64_t i = 0; i < n; i++)
        if (d->y[i] >= 0) byclass[cls_off[d->y[i]] + fill[d->y[i]]++] = i;

    for (int64_t i = 0; i < n; i++) assign[i] = -1;
    for (int64_t c = 0; c < ncls; c++) {
        int64_t *mem = byclass + cls_off[c];
        int64_t nc = cls_off[c + 1] - cls_off[c];
        rng_t r;
        rng_seed(&r, rng_hash64(seed, SPLIT_STREAM, (uint64_t)c));
        rng_shuffle_i64(&r, mem, nc);
        int64_t b0 = 0;
        double cum = 0.0;
        for (int k = 0; k < SPLIT_COUNT; k++) {
            cum += fr[k];
            int64_t b1 = frac_bound(cum, nc);
            if (b1 < b0) b1 = b0;
            for (int64_t j = b0; j < b1; j++) assign[mem[j]] = (int8_t)k;
            b0 = b1;
        }
    }

    for (int64_t i = 0; i < n; i++)
        if (assign[i] >= 0) out_n[assign[i]]++;
    for (int k = 0; k < SPLIT_COUNT; k++) {
        out[k] = inca_malloc((size_t)out_n[k] * sizeof *out[k] + 1);
        if (!out[k]) { rc = INCA_ENOMEM; goto done; }
    }
    {
        int64_t pos[SPLIT_COUNT] = {0, 0, 0};
        for (int64_t i = 0; i < n; i++)
            if (assign[i] >= 0) out[assign[i]][pos[assign[i]]++] = i;
    }
    for (int k = 0; k < SPLIT_COUNT; k++) {
        inca_free(d->split[k]);
        d->split[k] = out[k];
        d->split_n[k] = out_n[k];
        out[k] = NULL;
    }

done:
    for (int k = 0; k < SPLIT_COUNT; k++) inca_free(out[k]);
    inca_free(cls_off);
    inca_free(fill);
    inca_free(assign);
    inca_free(byclass);
    return rc;
}
