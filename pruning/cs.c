/* Correct and Smooth over labelprop's operator; see cs.h. */
#include "pruning/cs.h"
#include "core/alloc.h"
#include "core/status.h"
#include "pruning/labelprop.h"
#include <math.h>
#include <string.h>

#define CS_MAX_SCALE 1000.0

void cs_opts_default(cs_opts_t *o) {
    o->alpha_correct = 0.8;
    o->alpha_smooth = 0.8;
    o->iters = 50;
}

int cs_run_op(const csr_t *s, const float *p, int32_t c, const int32_t *y, const cs_opts_t *o, int32_t *label, float *conf,
              float *g_out) {
    const int64_t n = s->n_rows;
    if (!p || !y || c < 2) return inca_fail(INCA_EINVAL, "cs: expected probabilities, labels and >= 2 classes");
    int64_t nl = 0;
    for (int64_t i = 0; i < n; i++) {
        if (y[i] < -1 || y[i] >= c) return inca_fail(INCA_EINVAL, "cs: label %d of row %lld outside [-1, %d)", y[i], (long long)i, c);
        nl += y[i] >= 0;
    }
    const size_t len = (size_t)(n ? n : 1) * (size_t)c;
    float *e0 = inca_calloc(len, sizeof *e0), *e = inca_malloc(len * sizeof *e);
    int rc = !e0 || !e ? INCA_ENOMEM : INCA_OK;
    if (rc) goto done;
    /* correct: the labelled rows' residuals spread, each row rescaled to their mean L1 norm */
    double sigma = 0;
    for (int64_t i = 0; i < n; i++) {
        if (y[i] < 0) continue;
        for (int32_t k = 0; k < c; k++) {
            e0[i * c + k] = (k == y[i] ? 1.0f : 0.0f) - p[i * c + k];
            sigma += fabs((double)e0[i * c + k]);
        }
    }
    sigma = nl ? sigma / (double)nl : 0.0;
    if ((rc = labelprop_iterate(s, e0, c, o->alpha_correct, o->iters, e))) goto done;
    for (int64_t i = 0; i < n; i++) {   /* e0 becomes Z, then the smoothing's start */
        double l1 = 0;
        for (int32_t k = 0; k < c; k++) l1 += fabs((double)e[i * c + k]);
        /* a row the residuals barely reach keeps them as they are (scale 1), as the authors' code
         * and PyG's CorrectAndSmooth do, rather than blowing a trace up to the full σ */
        const double m = l1 > 0 && sigma / l1 <= CS_MAX_SCALE ? sigma / l1 : 1.0;
        for (int32_t k = 0; k < c; k++)
            e0[i * c + k] = y[i] >= 0 ? (k == y[i] ? 1.0f : 0.0f) : (float)(p[i * c + k] + m * e[i * c + k]);
    }
    /* smooth */
    if ((rc = labelprop_iterate(s, e0, c, o->alpha_smooth, o->iters, e))) goto done;
    labelprop_decide(e, n, c, label, conf);
    if (g_out) memcpy(g_out, e, (size_t)n * (size_t)c * sizeof *e);
done:
    inca_free(e0);
    inca_free(e);
    return rc;
}

int cs_run(const csr_t *w, const float *p, int32_t c, const int32_t *y, const cs_opts_t *o, int32_t *label, float *conf,
           float *g_out) {
    csr_t s = {0};
    int rc = labelprop_operator(w, &s);
    if (!rc) rc = cs_run_op(&s, p, c, y, o, label, conf, g_out);
    csr_free(&s);
    return rc;
}
