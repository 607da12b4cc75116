/* Training-dynamics recorder and AUM / forgetting / EL2N / cartography scores; see dynamics.h.
 * Tested in test_pruning_core.c against values computed by hand from small trajectories. */
#include "pruning/dynamics.h"
#include "core/alloc.h"
#include "core/status.h"
#include <math.h>
#include <string.h>

int dyn_init(prune_dyn_t *d, int64_t n, int32_t cap) {
    memset(d, 0, sizeof *d);
    if (n < 0 || cap < 1) return inca_fail(INCA_EINVAL, "dynamics: need n >= 0 and at least one epoch");
    size_t m = (size_t)n * (size_t)cap;
    d->py = inca_malloc(m * sizeof *d->py);
    d->pmo = inca_malloc(m * sizeof *d->pmo);
    d->sq = inca_malloc(m * sizeof *d->sq);
    d->correct = inca_malloc(m);
    if (!d->py || !d->pmo || !d->sq || !d->correct) { dyn_free(d); return INCA_ENOMEM; }
    d->n = n;
    d->cap = cap;
    return INCA_OK;
}

void dyn_free(prune_dyn_t *d) {
    if (!d) return;
    inca_free(d->py);
    inca_free(d->pmo);
    inca_free(d->sq);
    inca_free(d->correct);
    memset(d, 0, sizeof *d);
}

int dyn_record(prune_dyn_t *d, const float *probs, int64_t ldp, int32_t c, const int32_t *y, const int64_t *rows) {
    if (d->epochs >= d->cap) return inca_fail(INCA_EINVAL, "dynamics: recorder full (%d epochs)", d->cap);
    if (c < 2) return inca_fail(INCA_EINVAL, "dynamics: need at least 2 classes, got %d", c);
    for (int64_t i = 0; i < d->n; i++)
        if (y[i] < 0 || y[i] >= c)
            return inca_fail(INCA_EINVAL, "dynamics: label %d of example %lld outside [0, %d)", y[i], (long long)i, c);
    size_t off = (size_t)d->epochs * (size_t)d->n;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < d->n; i++) {
        const float *p = probs + (rows ? rows[i] : i) * ldp;
        int32_t yi = y[i], arg = 0;
        float mo = -1.0f;
        double s = 0;
        for (int32_t k = 0; k < c; k++) {
            s += (double)p[k] * p[k];
            if (p[k] > p[arg]) arg = k;
            if (k != yi && p[k] > mo) mo = p[k];
        }
        d->py[off + i] = p[yi];
        d->pmo[off + i] = mo;
        d->sq[off + i] = (float)s;
        d->correct[off + i] = arg == yi;
    }
    d->epochs++;
    return INCA_OK;
}

static const char *const score_names[] = {"aum", "forgetting", "el2n", "cartography"};

int score_parse(const char *name, score_kind_t *out) {
    for (int k = 0; k < 4; k++)
        if (name && strcmp(name, score_names[k]) == 0) { *out = (score_kind_t)k; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--score: expected aum, forgetting, el2n or cartography, got '%s'", name ? name : "");
}

const char *score_name(score_kind_t k) { return (unsigned)k < 4 ? score_names[k] : "?"; }
int score_higher_is_harder(score_kind_t k) { return k == SCORE_FORGETTING || k == SCORE_EL2N; }

int dyn_cartography(const prune_dyn_t *d, float *confidence, float *variability, float *correctness) {
    if (d->epochs < 1) return inca_fail(INCA_EINVAL, "dynamics: no epochs recorded");
    int64_t n = d->n;
    int32_t e = d->epochs;
    for (int64_t i = 0; i < n; i++) {
        double s = 0, s2 = 0, c = 0;
        for (int32_t t = 0; t < e; t++) s += d->py[(size_t)t * n + i];
        double mu = s / e;
        for (int32_t t = 0; t < e; t++) {
            double v = d->py[(size_t)t * n + i] - mu;
            s2 += v * v;
            c += d->correct[(size_t)t * n + i];
        }
        if (confidence) confidence[i] = (float)mu;
        if (variability) variability[i] = (float)sqrt(s2 / e);
        if (correctness) correctness[i] = (float)(c / e);
    }
    return INCA_OK;
}

int dyn_score(const prune_dyn_t *d, score_kind_t kind, int32_t el2n_epochs, float *score) {
    if (d->epochs < 1) return inca_fail(INCA_EINVAL, "dynamics: no epochs recorded");
    int64_t n = d->n;
    int32_t e = d->epochs;
    switch (kind) {
    case SCORE_AUM:
        for (int64_t i = 0; i < n; i++) {
            double s = 0;
            for (int32_t t = 0; t < e; t++) s += (double)d->py[(size_t)t * n + i] - d->pmo[(size_t)t * n + i];
            score[i] = (float)s;
        }
        return INCA_OK;
    case SCORE_FORGETTING:
        for (int64_t i = 0; i < n; i++) {
            int32_t ev = 0, learned = d->correct[i];
            for (int32_t t = 1; t < e; t++) {
                uint8_t prev = d->correct[(size_t)(t - 1) * n + i], cur = d->correct[(size_t)t * n + i];
                ev += prev && !cur;
                learned |= cur;
            }
            score[i] = learned ? (float)ev : (float)e;
        }
        return INCA_OK;
    case SCORE_EL2N: {
        if (el2n_epochs < 1) return inca_fail(INCA_EINVAL, "--el2n-epochs: expected >= 1, got %d", el2n_epochs);
        int32_t te = el2n_epochs < e ? el2n_epochs : e;
        for (int64_t i = 0; i < n; i++) {
            double s = 0;
            for (int32_t t = 0; t < te; t++) {
                size_t o = (size_t)t * n + i;
                double v = (double)d->sq[o] - 2.0 * d->py[o] + 1.0;
                s += sqrt(v > 0 ? v : 0);
            }
            score[i] = (float)(s / te);
        }
        return INCA_OK;
    }
    case SCORE_CARTOGRAPHY:
        return dyn_cartography(d, score, NULL, NULL);
    }
    return inca_fail(INCA_EINVAL, "dynamics: unknown score kind %d", (int)kind);
}
