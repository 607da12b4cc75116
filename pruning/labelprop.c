/* Label spreading by power iteration with kern_spmm; see labelprop.h.
 * Tested in test_pruning_knn.c (closed form on a tiny graph, unreached rows, bad input). */
#include "pruning/labelprop.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

/* max(W, Wᵀ) entry by entry (weight 1 where val is NULL): a directed graph as the symmetric one
 * label spreading is defined on. Rows merged sorted (Wᵀᵀ sorts W's). */
static int sym_max(const csr_t *w, csr_t *out) {
    csr_t t = {0}, ws = {0};
    const int64_t n = w->n_rows;
    int rc = csr_transpose(w, &t);
    if (!rc) rc = csr_transpose(&t, &ws);
    if (!rc) rc = csr_alloc(out, n, n, w->nnz + t.nnz, 1);
    for (int64_t i = 0, k = 0; !rc && i < n; i++) {
        int64_t a = ws.rowptr[i], b = t.rowptr[i];
        out->rowptr[i] = k;
        while (a < ws.rowptr[i + 1] || b < t.rowptr[i + 1]) {
            const int64_t ca = a < ws.rowptr[i + 1] ? ws.col[a] : INT64_MAX, cb = b < t.rowptr[i + 1] ? t.col[b] : INT64_MAX;
            const float va = ca <= cb ? (ws.val ? ws.val[a] : 1.0f) : 0.0f, vb = cb <= ca ? (t.val ? t.val[b] : 1.0f) : 0.0f;
            out->col[k] = (int32_t)(ca < cb ? ca : cb);
            out->val[k++] = va > vb ? va : vb;
            a += ca <= cb;
            b += cb <= ca;
        }
        out->rowptr[i + 1] = k;
    }
    if (!rc) out->nnz = out->rowptr[n];
    csr_free(&t);
    csr_free(&ws);
    return rc;
}

int labelprop_operator(const csr_t *w, csr_t *s) {
    memset(s, 0, sizeof *s);
    const int64_t n = w->n_rows;
    if (w->n_cols != n) return inca_fail(INCA_EINVAL, "labelprop: graph is %lld x %lld, expected square", (long long)n, (long long)w->n_cols);
    if (!csr_is_symmetric(w)) {   /* a node with no edges of its own row would never pass its label on */
        csr_t sym = {0};
        int rc = sym_max(w, &sym);
        if (!rc) rc = labelprop_operator(&sym, s);
        csr_free(&sym);
        return rc;
    }
    double *dinv = inca_malloc((size_t)(n ? n : 1) * sizeof *dinv);
    if (!dinv) return INCA_ENOMEM;
    int rc = INCA_OK;
    for (int64_t i = 0; i < n && !rc; i++) {
        double d = 0;
        for (int64_t e = w->rowptr[i]; e < w->rowptr[i + 1]; e++) {
            double v = w->val ? w->val[e] : 1.0;
            if (v < 0) { rc = inca_fail(INCA_EINVAL, "labelprop: negative weight at row %lld", (long long)i); break; }
            d += v;
        }
        dinv[i] = d > 0 ? 1.0 / sqrt(d) : 0.0;
    }
    if (!rc) rc = csr_alloc(s, n, n, w->nnz, 1);
    if (!rc) {
        memcpy(s->rowptr, w->rowptr, (size_t)(n + 1) * sizeof *s->rowptr);
        memcpy(s->col, w->col, (size_t)w->nnz * sizeof *s->col);
        for (int64_t i = 0; i < n; i++)
            for (int64_t e = w->rowptr[i]; e < w->rowptr[i + 1]; e++)
                s->val[e] = (float)((w->val ? w->val[e] : 1.0) * dinv[i] * dinv[w->col[e]]);
    }
    inca_free(dinv);
    return rc;
}

int labelprop_iterate(const csr_t *s, const float *f0, int32_t c, double alpha, int iters, float *f) {
    const int64_t n = s->n_rows;
    if (!(alpha >= 0 && alpha < 1)) return inca_fail(INCA_EINVAL, "--alpha: expected 0 <= alpha < 1, got %g", alpha);
    if (iters < 0) return inca_fail(INCA_EINVAL, "--iters: expected >= 0, got %d", iters);
    const size_t len = (size_t)n * (size_t)c;
    float *g = inca_malloc((len ? len : 1) * sizeof *g);
    if (!g) return INCA_ENOMEM;
    int rc = INCA_OK;
    float *cur = f, *nxt = g;
    memcpy(cur, f0, len * sizeof *cur);
    const float keep = (float)(1.0 - alpha);
    for (int it = 0; it < iters && !rc; it++) {
        if ((rc = kern_spmm(s, cur, c, (float)alpha, 0.0f, nxt))) break;
#pragma omp parallel for schedule(static) num_threads(inca_threads())
        for (int64_t k = 0; k < (int64_t)len; k++)
            if (f0[k] != 0.0f) nxt[k] += keep * f0[k];
        float *t = cur; cur = nxt; nxt = t;
    }
    if (!rc && cur != f) memcpy(f, cur, len * sizeof *f);
    inca_free(g);
    return rc;
}

void labelprop_decide(const float *f, int64_t n, int32_t c, int32_t *label, float *conf) {
    for (int64_t i = 0; i < n; i++) {
        const float *r = f + i * c;
        int32_t best = 0;
        double sum = 0;
        for (int32_t k = 0; k < c; k++) {
            sum += r[k] > 0 ? r[k] : 0;
            if (r[k] > r[best]) best = k;
        }
        const int reached = sum > 0;
        if (label) label[i] = reached ? best : -1;
        if (conf) conf[i] = reached ? (float)((r[best] > 0 ? r[best] : 0) / sum) : 0.0f;
    }
}

int labelprop_spread(const csr_t *w, const int32_t *y, int32_t c, double alpha, int iters,
                     int32_t *label, float *conf, float *f_out) {
    int64_t n = w->n_rows;
    if (c < 1) return inca_fail(INCA_EINVAL, "labelprop: need at least one class");
    for (int64_t i = 0; i < n; i++)
        if (y[i] < -1 || y[i] >= c)
            return inca_fail(INCA_EINVAL, "labelprop: label %d of row %lld outside [-1, %d)", y[i], (long long)i, c);
    csr_t s = {0};
    float *f0 = inca_calloc((size_t)(n ? n : 1) * (size_t)c, sizeof *f0);
    float *f = inca_malloc((size_t)(n ? n : 1) * (size_t)c * sizeof *f);
    int rc = !f0 || !f ? INCA_ENOMEM : labelprop_operator(w, &s);
    if (rc) goto done;
    for (int64_t i = 0; i < n; i++)
        if (y[i] >= 0) f0[i * c + y[i]] = 1.0f;
    if ((rc = labelprop_iterate(&s, f0, c, alpha, iters, f))) goto done;
    labelprop_decide(f, n, c, label, conf);
    if (f_out) memcpy(f_out, f, (size_t)n * (size_t)c * sizeof *f);
done:
    csr_free(&s);
    inca_free(f0);
    inca_free(f);
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
