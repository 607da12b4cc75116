#include "pruning/sgc.h"
#include "core/alloc.h"
#include "core/status.h"
#include "kernels/kernels.h"
#include <math.h>
#include <string.h>

void sgc_opts_default(sgc_opts_t *o) {
    o->hops = 8;
    o->iters = 300;
    o->lr = 0.01;
    o->l2 = 0.03;
    o->scale = 10.0f;
}

int sgc_smooth(const csr_t *a, const float *x, int64_t n, int64_t f, const sgc_opts_t *o, float **out) {
    *out = NULL;
    if (!a || !a->rowptr || a->n_rows != n || a->n_cols != n || !x || n < 1 || f < 1 || o->hops < 0)
        return inca_fail(INCA_EINVAL, "sgc_smooth: expected an n x n graph (n = %lld), rows of f >= 1 features and hops >= 0",
                         (long long)n);
    csr_t an = {0};
    float *z = inca_malloc((size_t)n * (size_t)f * sizeof *z), *t = o->hops ? inca_malloc((size_t)n * (size_t)f * sizeof *t) : NULL;
    int rc = !z || (o->hops && !t) ? INCA_ENOMEM : csr_gcn_norm(a, &an);
    if (rc) goto done;
    memcpy(z, x, (size_t)n * (size_t)f * sizeof *z);
    for (int h = 0; h < o->hops && !rc; h++) {
        rc = kern_spmm(&an, z, f, 1.0f, 0.0f, t);
        float *s = z;
        z = t;
        t = s;
    }
    if (rc) goto done;
    for (int64_t i = 0; i < n; i++) {
        float *r = z + i * f;
        double s = 0;
        for (int64_t k = 0; k < f; k++) s += (double)r[k] * r[k];
        const float m = s > 0 ? (float)(o->scale / sqrt(s)) : 0.0f;
        for (int64_t k = 0; k < f; k++) r[k] *= m;
    }
    *out = z;
    z = NULL;
done:
    csr_free(&an);
    inca_free(z);
    inca_free(t);
    return rc;
}

/* logits (m x c) -> probabilities in place; returns the mean cross-entropy against y */
static double softmax_rows(float *p, int64_t m, int32_t c, const int32_t *y) {
    double loss = 0;
    for (int64_t i = 0; i < m; i++) {
        float *r = p + i * c;
        float mx = r[0];
        for (int32_t k = 1; k < c; k++) mx = r[k] > mx ? r[k] : mx;
        double s = 0;
        for (int32_t k = 0; k < c; k++) s += exp((double)r[k] - mx);
        if (y) loss -= (double)r[y[i]] - mx - log(s);
        for (int32_t k = 0; k < c; k++) r[k] = (float)(exp((double)r[k] - mx) / s);
    }
    return m ? loss / (double)m : 0.0;
}

/* the labelled rows gathered: *xl (m x f), *yl (m) */
static int gather_labelled(const float *z, int64_t n, int64_t f, const int32_t *y, int32_t c, float **xl, int32_t **yl, int64_t *m) {
    *m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (y[i] >= c) return inca_fail(INCA_EINVAL, "sgc: row %lld has label %d, expected < %d classes", (long long)i, y[i], c);
        *m += y[i] >= 0;
    }
    if (*m == 0) return inca_fail(INCA_EINVAL, "sgc: no labelled row to fit");
    *xl = inca_malloc((size_t)*m * (size_t)f * sizeof **xl);
    *yl = inca_malloc((size_t)*m * sizeof **yl);
    if (!*xl || !*yl) return INCA_ENOMEM;
    int64_t j = 0;
    for (int64_t i = 0; i < n; i++)
        if (y[i] >= 0) {
            memcpy(*xl + j * f, z + i * f, (size_t)f * sizeof **xl);
            (*yl)[j++] = y[i];
        }
    return INCA_OK;
}

/* loss and gradient on gathered rows; p: m x c scratch */
static double loss_grad(const float *xl, const int32_t *yl, int64_t m, int64_t f, int32_t c, double l2, const float *w,
                        float *p, float *g) {
    kern_gemm(0, 0, m, c, f, 1.0f, xl, f, w, c, 0.0f, p, c);
    double loss = softmax_rows(p, m, c, yl), reg = 0;
    for (int64_t k = 0; k < f * c; k++) reg += (double)w[k] * w[k];
    if (g) {
        for (int64_t i = 0; i < m; i++) p[i * c + yl[i]] -= 1.0f;
        kern_gemm(1, 0, f, c, m, 1.0f / (float)m, xl, f, p, c, 0.0f, g, c);   /* Xᵀ (P − Y) / m */
        for (int64_t k = 0; k < f * c; k++) g[k] += (float)(l2 * w[k]);
    }
    return loss + 0.5 * l2 * reg;
}

double sgc_loss(const float *z, int64_t n, int64_t f, const int32_t *y, int32_t c, double l2, const float *w, float *g) {
    float *xl = NULL, *p = NULL;
    int32_t *yl = NULL;
    int64_t m = 0;
    double loss = NAN;
    if (!gather_labelled(z, n, f, y, c, &xl, &yl, &m) && (p = inca_malloc((size_t)m * (size_t)c * sizeof *p)))
        loss = loss_grad(xl, yl, m, f, c, l2, w, p, g);
    inca_free(xl);
    inca_free(yl);
    inca_free(p);
    return loss;
}

int sgc_fit_predict(const float *z, int64_t n, int64_t f, const int32_t *y, int32_t c, const sgc_opts_t *o,
                    int32_t *label, float *conf, float *w_out) {
    if (!z || !y || n < 1 || f < 1 || c < 2 || o->iters < 0 || !(o->lr > 0) || !(o->l2 >= 0))
        return inca_fail(INCA_EINVAL, "sgc_fit_predict: expected rows, labels, >= 2 classes, lr > 0 and l2 >= 0");
    float *xl = NULL, *p = NULL, *w = NULL, *g = NULL, *mo = NULL, *v = NULL, *lg = NULL;
    int32_t *yl = NULL;
    int64_t m = 0;
    int rc = gather_labelled(z, n, f, y, c, &xl, &yl, &m);
    if (rc) goto done;
    const size_t wn = (size_t)f * (size_t)c;
    p = inca_malloc((size_t)m * (size_t)c * sizeof *p);
    w = inca_calloc(wn, sizeof *w);
    g = inca_malloc(wn * sizeof *g);
    mo = inca_calloc(wn, sizeof *mo);
    v = inca_calloc(wn, sizeof *v);
    if (!p || !w || !g || !mo || !v) { rc = INCA_ENOMEM; goto done; }
    for (int t = 1; t <= o->iters; t++) {
        loss_grad(xl, yl, m, f, c, 0.0, w, p, g);   /* the penalty's gradient goes in through Adam's L2 */
        const kern_adam_t hp = {.lr = o->lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = o->l2,
                                .step_size = o->lr / (1.0 - pow(0.9, t)), .sbc2 = sqrt(1.0 - pow(0.999, t)), .adamw = 0};
        kern_adam((int64_t)wn, w, g, mo, v, &hp);
    }
    if (label || conf) {
        /* every row's prediction, in blocks (n x c logits at once would be the largest buffer here) */
        const int64_t blk = 65536;
        lg = inca_malloc((size_t)(n < blk ? n : blk) * (size_t)c * sizeof *lg);
        if (!lg) { rc = INCA_ENOMEM; goto done; }
        for (int64_t i0 = 0; i0 < n; i0 += blk) {
            const int64_t b = n - i0 < blk ? n - i0 : blk;
            kern_gemm(0, 0, b, c, f, 1.0f, z + i0 * f, f, w, c, 0.0f, lg, c);
            softmax_rows(lg, b, c, NULL);
            for (int64_t i = 0; i < b; i++) {
                int32_t best = 0;
                for (int32_t k = 1; k < c; k++) if (lg[i * c + k] > lg[i * c + best]) best = k;
                if (label) label[i0 + i] = best;
                if (conf) conf[i0 + i] = lg[i * c + best];
            }
        }
    }
    if (w_out) memcpy(w_out, w, wn * sizeof *w);
done:
    inca_free(xl);
    inca_free(yl);
    inca_free(p);
    inca_free(w);
    inca_free(g);
    inca_free(mo);
    inca_free(v);
    inca_free(lg);
    return rc;
}
