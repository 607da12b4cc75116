/* Label spreading by power iteration with kern_spmm; see labelprop.h.
 * Tested in test_pruning_knn.c (closed form on a tiny graph, unreached rows, bad input). */
#include "pruning/labelprop.h"
#include "core/alloc.h"
#include "core/status.h"
#include "kernels/kernels.h"
#include <math.h>
#include <string.h>

int labelprop_spread(const csr_t *w, const int32_t *y, int32_t c, double alpha, int iters,
                     int32_t *label, float *conf, float *f_out) {
    int64_t n = w->n_rows;
    if (w->n_cols != n) return inca_fail(INCA_EINVAL, "labelprop: graph is %lld x %lld, expected square", (long long)n, (long long)w->n_cols);
    if (!(alpha >= 0 && alpha < 1)) return inca_fail(INCA_EINVAL, "--alpha: expected 0 <= alpha < 1, got %g", alpha);
    if (iters < 0) return inca_fail(INCA_EINVAL, "--iters: expected >= 0, got %d", iters);
    if (c < 1) return inca_fail(INCA_EINVAL, "labelprop: need at least one class");
    for (int64_t i = 0; i < n; i++)
        if (y[i] < -1 || y[i] >= c)
            return inca_fail(INCA_EINVAL, "labelprop: label %d of row %lld outside [-1, %d)", y[i], (long long)i, c);
    int rc = INCA_OK;
    csr_t s = {0};
    float *f = NULL, *g = NULL;
    double *dinv = NULL;
    rc = csr_alloc(&s, n, n, w->nnz, 1);
    if (rc) goto done;
    f = inca_calloc((size_t)n * (size_t)c, sizeof *f);
    g = inca_malloc((size_t)n * (size_t)c * sizeof *g);
    dinv = inca_malloc((size_t)n * sizeof *dinv);
    if (!f || !g || !dinv) { rc = INCA_ENOMEM; goto done; }
    for (int64_t i = 0; i < n; i++) {
        double d = 0;
        for (int64_t e = w->rowptr[i]; e < w->rowptr[i + 1]; e++) {
            double v = w->val ? w->val[e] : 1.0;
            if (v < 0) { rc = inca_fail(INCA_EINVAL, "labelprop: negative weight at row %lld", (long long)i); goto done; }
            d += v;
        }
        dinv[i] = d > 0 ? 1.0 / sqrt(d) : 0.0;
    }
    memcpy(s.rowptr, w->rowptr, (size_t)(n + 1) * sizeof *s.rowptr);
    memcpy(s.col, w->col, (size_t)w->nnz * sizeof *s.col);
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = w->rowptr[i]; e < w->rowptr[i + 1]; e++)
            s.val[e] = (float)((w->val ? w->val[e] : 1.0) * dinv[i] * dinv[w->col[e]]);
    for (int64_t i = 0; i < n; i++)
        if (y[i] >= 0) f[i * c + y[i]] = 1.0f;
    for (int it = 0; it < iters; it++) {
        rc = kern_spmm(&s, f, c, (float)alpha, 0.0f, g);
        if (rc) goto done;
        for (int64_t i = 0; i < n; i++)
            if (y[i] >= 0) g[i * c + y[i]] += (float)(1.0 - alpha);
        float *t = f; f = g; g = t;
    }
    for (int64_t i = 0; i < n; i++) {
        const float *r = f + i * c;
        int32_t best = 0;
        double sum = 0;
        for (int32_t k = 0; k < c; k++) {
            sum += r[k] > 0 ? r[k] : 0;
            if (r[k] > r[best]) best = k;
        }
        int reached = sum > 0;
        if (label) label[i] = reached ? best : -1;
        if (conf) conf[i] = reached ? (float)(r[best] / sum) : 0.0f;
    }
    if (f_out) memcpy(f_out, f, (size_t)n * (size_t)c * sizeof *f);
done:
    csr_free(&s);
    inca_free(f);
    inca_free(g);
    inca_free(dinv);
    return rc;
}

int labelprop_class_mass(const float *f, int64_t n, int32_t c, const int32_t *y, int32_t *label, float *conf) {
    double *mass = inca_calloc((size_t)c, sizeof *mass), *scale = inca_calloc((size_t)c, sizeof *scale);
    int64_t *cnt = inca_calloc((size_t)c, sizeof *cnt);
    if (!mass || !scale || !cnt) {
        inca_free(mass);
        inca_free(scale);
        inca_free(cnt);
        return INCA_ENOMEM;
    }
    int64_t nlab = 0;
    for (int64_t i = 0; i < n; i++) {
        if (y[i] >= 0) { cnt[y[i]]++; nlab++; continue; }
        for (int32_t k = 0; k < c; k++) mass[k] += f[i * c + k] > 0 ? f[i * c + k] : 0;
    }
    for (int32_t k = 0; k < c; k++)
        scale[k] = mass[k] > 0 ? ((double)(cnt[k] + 1) / (double)(nlab + c)) / mass[k] : 0.0;
    for (int64_t i = 0; i < n; i++) {
        const float *r = f + i * c;
        int32_t best = 0;
        double sum = 0, bv = -1;
        for (int32_t k = 0; k < c; k++) {
            const double v = r[k] > 0 ? r[k] * scale[k] : 0;
            sum += v;
            if (v > bv) { bv = v; best = k; }
        }
        const int reached = sum > 0;
        if (y[i] >= 0) {
            if (label) label[i] = y[i];
            if (conf) conf[i] = reached ? (float)(r[y[i]] > 0 ? r[y[i]] * scale[y[i]] / sum : 0) : 1.0f;
            continue;
        }
        if (label) label[i] = reached ? best : -1;
        if (conf) conf[i] = reached ? (float)(bv / sum) : 0.0f;
    }
    inca_free(mass);
    inca_free(scale);
    inca_free(cnt);
    return INCA_OK;
}
