/* The labelled subset and the visible labels; see labeled.h. Tested in test_pruning_e2e.c. */
#include "pruning/labeled.h"
#include "core/util.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int prune_labeled_pick(const int32_t *y, int32_t c, const int64_t *pool, int64_t npool, double fraction,
                       int64_t per_class, uint64_t seed, int64_t **ids, int64_t *nids) {
    *ids = NULL;
    *nids = 0;
    if (per_class <= 0 && !(fraction > 0 && fraction <= 1))
        return inca_fail(INCA_EINVAL, "--labeled: expected a fraction in (0, 1], got %g", fraction);
    int rc = INCA_OK;
    int64_t *cls = inca_malloc((size_t)(npool ? npool : 1) * sizeof *cls), *out = inca_malloc((size_t)(npool ? npool : 1) * sizeof *out);
    if (!cls || !out) { rc = INCA_ENOMEM; goto done; }
    int64_t no = 0;
    rng_t g;
    for (int32_t k = 0; k < c; k++) {
        int64_t nk = 0;
        for (int64_t i = 0; i < npool; i++)
            if (y[pool[i]] == k) cls[nk++] = pool[i];
        if (nk == 0) continue;
        rng_seed(&g, rng_hash64(seed, 0x1abe1, (uint64_t)k));
        rng_shuffle_i64(&g, cls, nk);
        int64_t take = per_class > 0 ? (per_class < nk ? per_class : nk) : (int64_t)llround(fraction * (double)nk);
        if (take < 1) take = 1;
        if (take > nk) take = nk;
        memcpy(out + no, cls, (size_t)take * sizeof *out);
        no += take;
    }
    if (no == 0) { rc = inca_fail(INCA_EINVAL, "--labeled: the pool (train split) holds no labelled node"); goto done; }
    qsort(out, (size_t)no, sizeof *out, inca_cmp_i64);
    *ids = out;
    *nids = no;
    out = NULL;
done:
    inca_free(cls);
    inca_free(out);
    return rc;
}

int prune_visible_labels(const int32_t *y_true, int64_t n, const int64_t *ids, int64_t nids, int32_t *y_vis) {
    for (int64_t i = 0; i < n; i++) y_vis[i] = -1;
    for (int64_t t = 0; t < nids; t++) {
        int64_t v = ids[t];
        if (v < 0 || v >= n) return inca_fail(INCA_EINVAL, "labelled id %lld outside [0, %lld)", (long long)v, (long long)n);
        if (y_true[v] < 0) return inca_fail(INCA_EINVAL, "labelled id %lld has no label in the store", (long long)v);
        y_vis[v] = y_true[v];
    }
    return INCA_OK;
}

/* Every class the pool holds needs a labelled example (a class nobody labelled can never be a
 * pseudo-label); an empty subset is refused too. The pool's classes are the annotator's
 * knowledge, as in prune_labeled_pick. */
int prune_labeled_covers_classes(const dataset_t *d, const int64_t *pool, int64_t npool, const int32_t *y_vis,
                                 const char *src) {
    int64_t *seen = inca_calloc((size_t)d->c + 1, 2 * sizeof *seen), nl = 0;   /* [k]: in pool, [c+k]: labelled */
    if (!seen) return INCA_ENOMEM;
    for (int64_t i = 0; i < npool; i++) {
        const int64_t v = pool[i];
        if (d->y[v] >= 0) seen[d->y[v]]++;
        if (y_vis[v] >= 0) { seen[d->c + y_vis[v]]++; nl++; }
    }
    int rc = INCA_OK;
    if (nl == 0) rc = inca_fail(INCA_EINVAL, "%s: the labelled subset of the pool is empty", src);
    for (int32_t k = 0; k < d->c && rc == INCA_OK; k++)
        if (seen[k] > 0 && seen[d->c + k] == 0)
            rc = inca_fail(INCA_EINVAL, "%s: class %d (%lld nodes in the pool) has no labelled example; label at least one "
                           "per class (--labeled-per-class 1, a larger --labeled, or a --labeled-indices file with one)",
                           src, k, (long long)seen[k]);
    inca_free(seen);
    return rc;
}
