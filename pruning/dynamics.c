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
    d->seen = inca_calloc((size_t)(n ? n : 1), sizeof *d->seen);
    if (!d->py || !d->pmo || !d->sq || !d->correct || !d->seen) { dyn_free(d); return INCA_ENOMEM; }
    d->n = n;
    d->cap = cap;
    return INCA_OK;
}

int dyn_init_compact(prune_dyn_t *d, int64_t n, int32_t cap, int32_t el2n_epochs) {
    memset(d, 0, sizeof *d);
    if (n < 0 || cap < 1) return inca_fail(INCA_EINVAL, "dynamics: need n >= 0 and at least one epoch");
    if (el2n_epochs < 1) return inca_fail(INCA_EINVAL, "--el2n-epochs: expected >= 1, got %d", el2n_epochs);
    const size_t m = (size_t)(n ? n : 1);
    d->s_margin = inca_calloc(m, sizeof *d->s_margin);
    d->s_el2n = inca_calloc(m, sizeof *d->s_el2n);
    d->s_py = inca_calloc(m, sizeof *d->s_py);
    d->s_py2 = inca_calloc(m, sizeof *d->s_py2);
    d->n_forget = inca_calloc(m, sizeof *d->n_forget);
    d->n_correct = inca_calloc(m, sizeof *d->n_correct);
    d->state = inca_calloc(m, 1);
    d->seen = inca_calloc(m, sizeof *d->seen);
    if (!d->s_margin || !d->s_el2n || !d->s_py || !d->s_py2 || !d->n_forget || !d->n_correct || !d->state || !d->seen) {
        dyn_free(d);
        return INCA_ENOMEM;
    }
    d->compact = 1;
    d->el2n_epochs = el2n_epochs;
    d->n = n;
    d->cap = cap;
    return INCA_OK;
}

int64_t dyn_full_bytes(int64_t n, int32_t epochs) { return n * (int64_t)epochs * (int64_t)(3 * sizeof(float) + 1); }

int64_t dyn_bytes(const prune_dyn_t *d) {
    if (d->compact) return d->n * (int64_t)(4 * sizeof(double) + 2 * sizeof(int32_t) + 1);   /* the running sums */
    return dyn_full_bytes(d->n, d->cap);
}

void dyn_free(prune_dyn_t *d) {
    if (!d) return;
    inca_free(d->py);
    inca_free(d->pmo);
    inca_free(d->sq);
    inca_free(d->correct);
    inca_free(d->s_margin);
    inca_free(d->s_el2n);
    inca_free(d->s_py);
    inca_free(d->s_py2);
    inca_free(d->n_forget);
    inca_free(d->n_correct);
    inca_free(d->state);
    inca_free(d->seen);
    memset(d, 0, sizeof *d);
}

/* One example's epoch t: the matrices' entries, or the running sums (the same double
 * arithmetic, in the same epoch order, as dyn_score on the matrices). */
static void rec(prune_dyn_t *d, int64_t i, int32_t t, const float *p, int32_t c, int32_t yi) {
    int32_t arg = 0;
    float mo = -1.0f;
    double s = 0;
    for (int32_t k = 0; k < c; k++) {
        s += (double)p[k] * p[k];
        if (p[k] > p[arg]) arg = k;
        if (k != yi && p[k] > mo) mo = p[k];
    }
    const uint8_t cor = arg == yi;
    if (!d->compact) {
        const size_t o = (size_t)t * (size_t)d->n + (size_t)i;
        d->py[o] = p[yi];
        d->pmo[o] = mo;
        d->sq[o] = (float)s;
        d->correct[o] = cor;
        return;
    }
    const float py = p[yi], sq = (float)s;
    d->s_margin[i] += (double)py - mo;
    if (t < d->el2n_epochs) {
        const double v = (double)sq - 2.0 * py + 1.0;
        d->s_el2n[i] += sqrt(v > 0 ? v : 0);
    }
    d->s_py[i] += py;
    d->s_py2[i] += (double)py * py;
    d->n_correct[i] += cor;
    if (t > 0 && (d->state[i] & 1) && !cor) d->n_forget[i]++;
    d->state[i] = (uint8_t)((d->state[i] & 2) | cor | (cor << 1));
}

int dyn_record_one(prune_dyn_t *d, int64_t i, int32_t t, const float *p, int32_t c, int32_t y) {
    if (i < 0 || i >= d->n) return inca_fail(INCA_EINVAL, "dynamics: example %lld outside [0, %lld)", (long long)i, (long long)d->n);
    if (t < 0 || t >= d->cap) return inca_fail(INCA_EINVAL, "dynamics: epoch %d outside the recorder's %d", t, d->cap);
    if (c < 2 || y < 0 || y >= c) return inca_fail(INCA_EINVAL, "dynamics: label %d of example %lld outside [0, %d)", y, (long long)i, c);
    if (!d->seen) return inca_fail(INCA_EINVAL, "dynamics: per-example recording needs a recorder from dyn_init or dyn_init_compact");
    if (d->seen[i] != t)
        return inca_fail(INCA_EINVAL, "dynamics: example %lld recorded at epoch %d after %d epochs (each once per epoch, in order)",
                         (long long)i, t, d->seen[i]);
    rec(d, i, t, p, c, y);
    d->seen[i] = t + 1;
    if (t + 1 > d->epochs) d->epochs = t + 1;
    return INCA_OK;
}

int dyn_check_complete(const prune_dyn_t *d) {
    if (!d->seen) return INCA_OK;
    for (int64_t i = 0; i < d->n; i++)
        if (d->seen[i] != d->epochs)
            return inca_fail(INCA_ERR, "dynamics: example %lld was recorded in %d of %d epochs (its method did not visit it once per epoch)",
                             (long long)i, d->seen[i], d->epochs);
    return INCA_OK;
}

int dyn_record(prune_dyn_t *d, const float *probs, int64_t ldp, int32_t c, const int32_t *y, const int64_t *rows) {
    if (d->epochs >= d->cap) return inca_fail(INCA_EINVAL, "dynamics: recorder full (%d epochs)", d->cap);
    if (c < 2) return inca_fail(INCA_EINVAL, "dynamics: need at least 2 classes, got %d", c);
    for (int64_t i = 0; i < d->n; i++)
        if (y[i] < 0 || y[i] >= c)
            return inca_fail(INCA_EINVAL, "dynamics: label %d of example %lld outside [0, %d)", y[i], (long long)i, c);
    const int32_t t = d->epochs;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < d->n; i++) {
        rec(d, i, t, probs + (rows ? rows[i] : i) * ldp, c, y[i]);
        if (d->seen) d->seen[i] = t + 1;
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
    if (d->compact) {
        for (int64_t i = 0; i < n; i++) {
            const double mu = d->s_py[i] / e, v = d->s_py2[i] / e - mu * mu;
            if (confidence) confidence[i] = (float)mu;
            if (variability) variability[i] = (float)sqrt(v > 0 ? v : 0);
            if (correctness) correctness[i] = (float)((double)d->n_correct[i] / e);
        }
        return INCA_OK;
    }
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
    if (d->compact && kind != SCORE_CARTOGRAPHY) {
        if (kind == SCORE_EL2N && el2n_epochs != d->el2n_epochs)
            return inca_fail(INCA_EINVAL, "dynamics: compact EL2N was summed over %d epochs, not %d", d->el2n_epochs, el2n_epochs);
        const int32_t te = d->el2n_epochs < e ? d->el2n_epochs : e;
        for (int64_t i = 0; i < n; i++)
            score[i] = kind == SCORE_AUM ? (float)d->s_margin[i]
                     : kind == SCORE_FORGETTING ? (float)((d->state[i] & 2) ? d->n_forget[i] : e)
                     : (float)(d->s_el2n[i] / te);
        return INCA_OK;
    }
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
