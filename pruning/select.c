/* Coreset selectors (CCS, double-end, top-k, random, class-balanced wrapper); see select.h.
 * Tested in test_pruning_core.c with hand-computed strata and windows. */
#include "pruning/select.h"
#include "core/util.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const select_names[] = {"ccs", "double-end", "topk", "random"};

int select_parse(const char *name, select_kind_t *out) {
    for (int k = 0; k < 4; k++)
        if (name && strcmp(name, select_names[k]) == 0) { *out = (select_kind_t)k; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--select: expected ccs, double-end, topk or random, got '%s'", name ? name : "");
}

const char *select_name(select_kind_t k) { return (unsigned)k < 4 ? select_names[k] : "?"; }

int select_budget(double keep, int64_t n, int64_t *m) {
    if (!(keep > 0 && keep <= 1)) return inca_fail(INCA_EINVAL, "--keep: expected a fraction in (0, 1], got %g", keep);
    *m = (int64_t)floor(keep * (double)n + 1e-9);
    return INCA_OK;
}

typedef struct { float k; int64_t i; } keyed_t;

static int keyed_cmp(const void *a, const void *b) {
    const keyed_t *x = a, *y = b;
    if (x->k < y->k) return -1;
    if (x->k > y->k) return 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Positions sorted by (sign·v[i], i) ascending into a new array (caller frees). */
static keyed_t *sort_by(const float *v, int64_t n, float sign) {
    keyed_t *s = inca_malloc((size_t)(n ? n : 1) * sizeof *s);
    if (!s) return NULL;
    for (int64_t i = 0; i < n; i++) { s[i].k = sign * v[i]; s[i].i = i; }
    qsort(s, (size_t)n, sizeof *s, keyed_cmp);
    return s;
}

int select_ccs(const float *score, const float *aum, int64_t n, int64_t m, int64_t mis_num, int strata,
               uint64_t seed, int64_t *out, int64_t *nout) {
    *nout = 0;
    if (strata < 1) return inca_fail(INCA_EINVAL, "ccs: need at least one stratum, got %d", strata);
    if (mis_num < 0 || m < 0) return inca_fail(INCA_EINVAL, "ccs: negative budget or drop count");
    if (mis_num > n) mis_num = n;
    int64_t r = n - mis_num;
    if (r == 0 || m == 0) return INCA_OK;
    int rc = INCA_OK;
    keyed_t *by_aum = sort_by(aum, n, 1.0f);
    int32_t *stratum = inca_malloc((size_t)r * sizeof *stratum);
    int64_t *cnt = inca_calloc((size_t)strata, sizeof *cnt), *budget = inca_calloc((size_t)strata, sizeof *budget);
    int64_t *start = inca_calloc((size_t)strata + 1, sizeof *start), *members = inca_malloc((size_t)r * sizeof *members);
    keyed_t *order = inca_malloc((size_t)strata * sizeof *order);
    int64_t *fill = inca_malloc((size_t)strata * sizeof *fill), *bucket = inca_malloc((size_t)r * sizeof *bucket);
    if (!by_aum || !stratum || !cnt || !budget || !start || !members || !order || !fill || !bucket) { rc = INCA_ENOMEM; goto done; }
    /* kept positions, ascending, so members of a stratum are visited in position order */
    int64_t *kept = members;
    for (int64_t t = 0; t < r; t++) kept[t] = by_aum[mis_num + t].i;
    qsort(kept, (size_t)r, sizeof *kept, inca_cmp_i64);
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t t = 0; t < r; t++) {
        double s = score[kept[t]];
        if (s < lo) lo = s;
        if (s > hi) hi = s;
    }
    double top = hi + 1e-4 * (hi - lo), step = (top - lo) / strata;
    for (int64_t t = 0; t < r; t++) {
        double s = score[kept[t]];
        int64_t k = step > 0 ? (int64_t)floor((s - lo) / step) : 0;
        if (k < 0) k = 0;
        if (k >= strata) k = strata - 1;
        /* settle boundary rounding with the reference's comparisons lo + k·step <= s < lo + (k+1)·step */
        while (k > 0 && s < lo + (double)k * step) k--;
        while (k < strata - 1 && s >= lo + (double)(k + 1) * step) k++;
        stratum[t] = (int32_t)k;
        cnt[k]++;
    }
    for (int k = 0; k < strata; k++) { order[k].k = (float)cnt[k]; order[k].i = k; }
    qsort(order, (size_t)strata, sizeof *order, keyed_cmp);
    int64_t left = m;
    for (int q = 0; q < strata; q++) {
        int64_t avg = left / (strata - q), k = order[q].i;
        budget[k] = cnt[k] < avg ? cnt[k] : avg;
        left -= budget[k];
    }
    /* bucket the kept positions by stratum (stable: position order inside a stratum) */
    for (int k = 0; k < strata; k++) start[k + 1] = start[k] + cnt[k];
    memcpy(fill, start, (size_t)strata * sizeof *fill);
    for (int64_t t = 0; t < r; t++) bucket[fill[stratum[t]]++] = kept[t];
    rng_t g;
    rng_seed(&g, seed);
    int64_t no = 0;
    for (int k = 0; k < strata; k++) {
        int64_t *b = bucket + start[k];
        rng_shuffle_i64(&g, b, cnt[k]);
        for (int64_t t = 0; t < budget[k]; t++) out[no++] = b[t];
    }
    qsort(out, (size_t)no, sizeof *out, inca_cmp_i64);
    *nout = no;
done:
    inca_free(fill);
    inca_free(bucket);
    inca_free(by_aum);
    inca_free(stratum);
    inca_free(cnt);
    inca_free(budget);
    inca_free(start);
    inca_free(members);
    inca_free(order);
    return rc;
}

int select_double_end(const float *difficulty, int64_t n, int64_t m, int64_t mis_num, int64_t *out, int64_t *nout) {
    *nout = 0;
    if (m < 0 || mis_num < 0) return inca_fail(INCA_EINVAL, "double-end: negative budget or drop count");
    if (m > n) m = n;
    keyed_t *s = sort_by(difficulty, n, -1.0f);   /* hardest first */
    if (!s) return INCA_ENOMEM;
    int64_t b = mis_num < n - m ? mis_num : n - m;
    for (int64_t t = 0; t < m; t++) out[t] = s[b + t].i;
    qsort(out, (size_t)m, sizeof *out, inca_cmp_i64);
    *nout = m;
    inca_free(s);
    return INCA_OK;
}

int select_topk(const float *difficulty, int64_t n, int64_t m, int hardest, int64_t *out, int64_t *nout) {
    *nout = 0;
    if (m < 0) return inca_fail(INCA_EINVAL, "topk: negative budget");
    if (m > n) m = n;
    keyed_t *s = sort_by(difficulty, n, hardest ? -1.0f : 1.0f);
    if (!s) return INCA_ENOMEM;
    for (int64_t t = 0; t < m; t++) out[t] = s[t].i;
    qsort(out, (size_t)m, sizeof *out, inca_cmp_i64);
    *nout = m;
    inca_free(s);
    return INCA_OK;
}

int select_random(int64_t n, int64_t m, uint64_t seed, int64_t *out, int64_t *nout) {
    *nout = 0;
    if (m < 0) return inca_fail(INCA_EINVAL, "random: negative budget");
    if (m > n) m = n;
    int64_t *p = inca_malloc((size_t)(n ? n : 1) * sizeof *p);
    if (!p) return INCA_ENOMEM;
    for (int64_t i = 0; i < n; i++) p[i] = i;
    rng_t g;
    rng_seed(&g, seed);
    rng_shuffle_i64(&g, p, n);
    memcpy(out, p, (size_t)m * sizeof *out);
    qsort(out, (size_t)m, sizeof *out, inca_cmp_i64);
    *nout = m;
    inca_free(p);
    return INCA_OK;
}

/* One selector over n examples with budget m and drop count mis_num. */
static int select_one(const select_opts_t *o, const float *score, const float *diff, const float *aum,
                      int64_t n, int64_t m, int64_t mis_num, uint64_t seed, int64_t *out, int64_t *nout) {
    switch (o->kind) {
    case SEL_CCS: return select_ccs(score, aum, n, m, mis_num, o->strata, seed, out, nout);
    case SEL_DOUBLE_END: return select_double_end(diff, n, m, mis_num, out, nout);
    case SEL_TOPK: return select_topk(diff, n, m, o->hardest, out, nout);
    case SEL_RANDOM: return select_random(n, m, seed, out, nout);
    }
    return inca_fail(INCA_EINVAL, "select: unknown kind %d", (int)o->kind);
}

/* Largest-remainder quotas of the budget m proportional to the class sizes of cls (frac: c
 * doubles of scratch). INCA_EINVAL for a class outside [0, c). */
static int class_quotas(const int32_t *cls, int32_t c, int64_t n, int64_t m, double *frac, int64_t *quota) {
    int64_t given = 0;
    for (int64_t i = 0; i < n; i++) {
        if (cls[i] < 0 || cls[i] >= c) return inca_fail(INCA_EINVAL, "select: class %d of example %lld outside [0, %d)", cls[i], (long long)i, c);
        frac[cls[i]] += 1.0;
    }
    for (int32_t k = 0; k < c; k++) {
        double exact = n ? (double)m * frac[k] / (double)n : 0;
        quota[k] = (int64_t)floor(exact);
        given += quota[k];
        frac[k] = exact - (double)quota[k];
    }
    while (given < m) {
        int32_t best = -1;
        for (int32_t k = 0; k < c; k++)
            if (frac[k] >= 0 && (best < 0 || frac[k] > frac[best])) best = k;
        if (best < 0) break;
        quota[best]++;
        frac[best] = -1;
        given++;
    }
    return INCA_OK;
}

int select_run(const select_opts_t *o, const float *score, int higher_is_harder, const float *aum,
               const int32_t *cls, int32_t c, int64_t n, int64_t **out, int64_t *nout) {
    *out = NULL;
    *nout = 0;
    if (!(o->mis_ratio >= 0 && o->mis_ratio < 1))
        return inca_fail(INCA_EINVAL, "--mis-ratio: expected a fraction in [0, 1), got %g", o->mis_ratio);
    int64_t m = 0;
    int rc = select_budget(o->keep, n, &m);
    if (rc) return rc;
    float *diff = NULL, *sub_s = NULL, *sub_d = NULL, *sub_a = NULL;
    int64_t *res = NULL, *pos = NULL, *sub_out = NULL, *quota = NULL;
    double *frac = NULL;
    diff = inca_malloc((size_t)(n ? n : 1) * sizeof *diff);
    res = inca_malloc((size_t)(m ? m : 1) * sizeof *res);
    if (!diff || !res) { rc = INCA_ENOMEM; goto done; }
    for (int64_t i = 0; i < n; i++) diff[i] = higher_is_harder ? score[i] : -score[i];
    if (!o->balance) {
        rc = select_one(o, score, diff, aum, n, m, (int64_t)floor(o->mis_ratio * (double)n + 1e-9), o->seed, res, nout);
        if (rc) goto done;
        *out = res;
        res = NULL;
        goto done;
    }
    if (!cls || c < 1) { rc = inca_fail(INCA_EINVAL, "select: class-balanced selection needs labels"); goto done; }
    quota = inca_calloc((size_t)c, sizeof *quota);
    frac = inca_calloc((size_t)c, sizeof *frac);
    pos = inca_malloc((size_t)(n ? n : 1) * sizeof *pos);
    sub_s = inca_malloc((size_t)(n ? n : 1) * sizeof *sub_s);
    sub_d = inca_malloc((size_t)(n ? n : 1) * sizeof *sub_d);
    sub_a = inca_malloc((size_t)(n ? n : 1) * sizeof *sub_a);
    sub_out = inca_malloc((size_t)(n ? n : 1) * sizeof *sub_out);
    if (!quota || !frac || !pos || !sub_s || !sub_d || !sub_a || !sub_out) { rc = INCA_ENOMEM; goto done; }
    if ((rc = class_quotas(cls, c, n, m, frac, quota))) goto done;
    int64_t no = 0;
    for (int32_t k = 0; k < c; k++) {
        int64_t nk = 0;
        for (int64_t i = 0; i < n; i++)
            if (cls[i] == k) { pos[nk] = i; sub_s[nk] = score[i]; sub_d[nk] = diff[i]; sub_a[nk] = aum[i]; nk++; }
        if (nk == 0) continue;
        int64_t got = 0;
        rc = select_one(o, sub_s, sub_d, sub_a, nk, quota[k], (int64_t)floor(o->mis_ratio * (double)nk + 1e-9),
                        rng_hash64(o->seed, 0x5e1ec7, (uint64_t)k), sub_out, &got);
        if (rc) goto done;
        for (int64_t t = 0; t < got; t++) res[no++] = pos[sub_out[t]];
    }
    qsort(res, (size_t)no, sizeof *res, inca_cmp_i64);
    *out = res;
    *nout = no;
    res = NULL;
done:
    inca_free(diff);
    inca_free(res);
    inca_free(pos);
    inca_free(sub_s);
    inca_free(sub_d);
    inca_free(sub_a);
    inca_free(sub_out);
    inca_free(quota);
    inca_free(frac);
    return rc;
}
