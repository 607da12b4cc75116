#include "pruning/sgc.h"
#include "core/alloc.h"
#include "core/status.h"
#include "kernels/kernels.h"
#include <math.h>
#include <string.h>

void sgc_opts_default(sgc_opts_t *o) {
    static const int hops[] = {0, 1, 2, 4, 8, 16};
    memset(o, 0, sizeof *o);
    o->nhops = (int)(sizeof hops / sizeof hops[0]);
    memcpy(o->hop, hops, sizeof hops);
    o->iters = 300;
    o->lr = 0.01;
    o->l2 = 0.03;
    o->scale = 10.0f;
}

/* The hop sweep: visit(ctx, j, cur) sees Â^hop[j] x (n x f), j = 0..nhops-1 in turn. */
typedef int (*hop_visit_fn)(void *ctx, int j, const float *cur);
static int hop_sweep(const csr_t *a, const float *x, int64_t n, int64_t f, const sgc_opts_t *o, hop_visit_fn visit,
                     void *ctx) {
    int ok = a && a->rowptr && a->n_rows == n && a->n_cols == n && x && n >= 1 && f >= 1 && o->nhops >= 1 &&
             o->nhops <= SGC_MAX_HOPS && o->hop[0] >= 0;
    for (int j = 1; j < o->nhops && ok; j++) ok = o->hop[j] > o->hop[j - 1];
    if (!ok)
        return inca_fail(INCA_EINVAL, "sgc: expected an n x n graph (n = %lld), rows of f >= 1 features and 1 to %d "
                         "ascending hop counts >= 0", (long long)n, SGC_MAX_HOPS);
    csr_t an = {0};
    const int smooth = o->hop[o->nhops - 1] > 0;
    float *cur = inca_malloc((size_t)n * (size_t)f * sizeof *cur);
    float *nxt = smooth ? inca_malloc((size_t)n * (size_t)f * sizeof *nxt) : NULL;
    int rc = !cur || (smooth && !nxt) ? INCA_ENOMEM : smooth ? csr_gcn_norm(a, &an) : INCA_OK;
    if (!rc) memcpy(cur, x, (size_t)n * (size_t)f * sizeof *cur);
    for (int j = 0, h = 0; j < o->nhops && !rc; j++) {
        for (; h < o->hop[j] && !rc; h++) {
            rc = kern_spmm(&an, cur, f, 1.0f, 0.0f, nxt);
            float *s = cur;
            cur = nxt;
            nxt = s;
        }
        if (!rc) rc = visit(ctx, j, cur);
    }
    csr_free(&an);
    inca_free(cur);
    inca_free(nxt);
    return rc;
}

/* dst = src scaled to L2 norm s (a zero row stays zero) */
static void scaled_row(float *dst, const float *src, int64_t f, double s) {
    double q = 0;
    for (int64_t k = 0; k < f; k++) q += (double)src[k] * src[k];
    const float m = q > 0 ? (float)(s / sqrt(q)) : 0.0f;
    for (int64_t k = 0; k < f; k++) dst[k] = src[k] * m;
}

typedef struct feat_ctx {
    const sgc_opts_t *o;
    const int64_t *rows;
    int64_t nrows, f;
    float *out;
} feat_ctx_t;

static int feat_visit(void *vc, int j, const float *cur) {
    feat_ctx_t *c = vc;
    const int64_t F = c->f * c->o->nhops;
    const double s = c->o->scale / sqrt((double)c->o->nhops);
    for (int64_t i = 0; i < c->nrows; i++)
        scaled_row(c->out + i * F + (int64_t)j * c->f, cur + (c->rows ? c->rows[i] : i) * c->f, c->f, s);
    return INCA_OK;
}

int sgc_features(const csr_t *a, const float *x, int64_t n, int64_t f, const sgc_opts_t *o, const int64_t *rows,
                 int64_t nrows, float **out) {
    *out = NULL;
    if (!rows) nrows = n;
    for (int64_t i = 0; rows && i < nrows; i++)
        if (rows[i] < 0 || rows[i] >= n) return inca_fail(INCA_EINVAL, "sgc_features: row %lld outside [0, %lld)", (long long)rows[i], (long long)n);
    if (nrows < 1 || o->nhops < 1 || o->nhops > SGC_MAX_HOPS) return inca_fail(INCA_EINVAL, "sgc_features: expected rows and 1 to %d hops", SGC_MAX_HOPS);
    feat_ctx_t c = {o, rows, nrows, f, inca_malloc((size_t)nrows * (size_t)f * (size_t)o->nhops * sizeof(float))};
    if (!c.out) return INCA_ENOMEM;
    int rc = hop_sweep(a, x, n, f, o, feat_visit, &c);
    if (rc) inca_free(c.out);
    else *out = c.out;
    return rc;
}

/* logits (m x c) -> probabilities in place; returns the mean cross-entropy against y (if given) */
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

/* probabilities (m x c) -> argmax and its probability */
static void argmax_rows(const float *p, int64_t m, int32_t c, int32_t *label, float *conf) {
    for (int64_t i = 0; i < m; i++) {
        int32_t best = 0;
        for (int32_t k = 1; k < c; k++) if (p[i * c + k] > p[i * c + best]) best = k;
        if (label) label[i] = best;
        if (conf) conf[i] = p[i * c + best];
    }
}

/* the labelled rows gathered: *xl (m x F), *yl (m) */
static int gather_labelled(const float *z, int64_t n, int64_t F, const int32_t *y, int32_t c, float **xl, int32_t **yl, int64_t *m) {
    *m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (y[i] >= c) return inca_fail(INCA_EINVAL, "sgc: row %lld has label %d, expected < %d classes", (long long)i, y[i], c);
        *m += y[i] >= 0;
    }
    if (*m == 0) return inca_fail(INCA_EINVAL, "sgc: no labelled row to fit");
    *xl = inca_malloc((size_t)*m * (size_t)F * sizeof **xl);
    *yl = inca_malloc((size_t)*m * sizeof **yl);
    if (!*xl || !*yl) return INCA_ENOMEM;
    int64_t j = 0;
    for (int64_t i = 0; i < n; i++)
        if (y[i] >= 0) {
            memcpy(*xl + j * F, z + i * F, (size_t)F * sizeof **xl);
            (*yl)[j++] = y[i];
        }
    return INCA_OK;
}

/* loss and gradient on gathered rows; p: m x c scratch */
static double loss_grad(const float *xl, const int32_t *yl, int64_t m, int64_t F, int32_t c, double l2, const float *w,
                        float *p, float *g) {
    kern_gemm(0, 0, m, c, F, 1.0f, xl, F, w, c, 0.0f, p, c);
    double loss = softmax_rows(p, m, c, yl), reg = 0;
    for (int64_t k = 0; k < F * c; k++) reg += (double)w[k] * w[k];
    if (g) {
        for (int64_t i = 0; i < m; i++) p[i * c + yl[i]] -= 1.0f;
        kern_gemm(1, 0, F, c, m, 1.0f / (float)m, xl, F, p, c, 0.0f, g, c);   /* Xᵀ (P − Y) / m */
        for (int64_t k = 0; k < F * c; k++) g[k] += (float)(l2 * w[k]);
    }
    return loss + 0.5 * l2 * reg;
}

double sgc_loss(const float *z, int64_t m, int64_t F, const int32_t *y, int32_t c, double l2, const float *w, float *g) {
    float *xl = NULL, *p = NULL;
    int32_t *yl = NULL;
    int64_t ml = 0;
    double loss = NAN;
    if (!gather_labelled(z, m, F, y, c, &xl, &yl, &ml) && (p = inca_malloc((size_t)ml * (size_t)c * sizeof *p)))
        loss = loss_grad(xl, yl, ml, F, c, l2, w, p, g);
    inca_free(xl);
    inca_free(yl);
    inca_free(p);
    return loss;
}

int sgc_fit(const float *z, int64_t m, int64_t F, const int32_t *y, int32_t c, const sgc_opts_t *o, float **w_out) {
    *w_out = NULL;
    if (!z || !y || m < 1 || F < 1 || c < 2 || o->iters < 0 || !(o->lr > 0) || !(o->l2 >= 0))
        return inca_fail(INCA_EINVAL, "sgc_fit: expected rows, labels, >= 2 classes, lr > 0 and l2 >= 0");
    float *xl = NULL, *p = NULL, *w = NULL, *g = NULL, *mo = NULL, *v = NULL;
    int32_t *yl = NULL;
    int64_t ml = 0;
    int rc = gather_labelled(z, m, F, y, c, &xl, &yl, &ml);
    if (rc) goto done;
    const size_t wn = (size_t)F * (size_t)c;
    p = inca_malloc((size_t)ml * (size_t)c * sizeof *p);
    w = inca_calloc(wn, sizeof *w);
    g = inca_malloc(wn * sizeof *g);
    mo = inca_calloc(wn, sizeof *mo);
    v = inca_calloc(wn, sizeof *v);
    if (!p || !w || !g || !mo || !v) { rc = INCA_ENOMEM; goto done; }
    for (int t = 1; t <= o->iters; t++) {
        loss_grad(xl, yl, ml, F, c, 0.0, w, p, g);   /* the penalty's gradient goes in through Adam's L2 */
        const kern_adam_t hp = {.lr = o->lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = o->l2,
                                .step_size = o->lr / (1.0 - pow(0.9, t)), .sbc2 = sqrt(1.0 - pow(0.999, t)), .adamw = 0};
        kern_adam((int64_t)wn, w, g, mo, v, &hp);
    }
    *w_out = w;
    w = NULL;
done:
    inca_free(xl);
    inca_free(yl);
    inca_free(p);
    inca_free(w);
    inca_free(g);
    inca_free(mo);
    inca_free(v);
    return rc;
}

/* rows per GEMM block when predicting (bounds the scratch, not the result) */
#define SGC_BLOCK 65536

int sgc_predict(const float *z, int64_t m, int64_t F, const float *w, int32_t c, int32_t *label, float *conf) {
    if (!z || !w || m < 0 || F < 1 || c < 2) return inca_fail(INCA_EINVAL, "sgc_predict: expected rows, weights and >= 2 classes");
    float *lg = inca_malloc((size_t)(m < SGC_BLOCK ? (m ? m : 1) : SGC_BLOCK) * (size_t)c * sizeof *lg);
    if (!lg) return INCA_ENOMEM;
    for (int64_t i0 = 0; i0 < m; i0 += SGC_BLOCK) {
        const int64_t b = m - i0 < SGC_BLOCK ? m - i0 : SGC_BLOCK;
        kern_gemm(0, 0, b, c, F, 1.0f, z + i0 * F, F, w, c, 0.0f, lg, c);
        softmax_rows(lg, b, c, NULL);
        argmax_rows(lg, b, c, label ? label + i0 : NULL, conf ? conf + i0 : NULL);
    }
    inca_free(lg);
    return INCA_OK;
}

typedef struct pred_ctx {
    const sgc_opts_t *o;
    int64_t n, f;
    int32_t c;
    const float *const *w;
    int nw;
    float *logits, *buf;   /* nw x n x c; SGC_BLOCK x f */
} pred_ctx_t;

/* model k's logits += (hop j's blocks of every row) W_k,j, block by block */
static int pred_visit(void *vc, int j, const float *cur) {
    pred_ctx_t *p = vc;
    const double s = p->o->scale / sqrt((double)p->o->nhops);
    for (int64_t i0 = 0; i0 < p->n; i0 += SGC_BLOCK) {
        const int64_t b = p->n - i0 < SGC_BLOCK ? p->n - i0 : SGC_BLOCK;
        for (int64_t i = 0; i < b; i++) scaled_row(p->buf + i * p->f, cur + (i0 + i) * p->f, p->f, s);
        for (int k = 0; k < p->nw; k++)
            kern_gemm(0, 0, b, p->c, p->f, 1.0f, p->buf, p->f, p->w[k] + (int64_t)j * p->f * p->c, p->c, j ? 1.0f : 0.0f,
                      p->logits + ((int64_t)k * p->n + i0) * p->c, p->c);
    }
    return INCA_OK;
}

int sgc_probs_graph(const csr_t *a, const float *x, int64_t n, int64_t f, const sgc_opts_t *o, const float *const *w, int nw,
                    int32_t c, float *probs) {
    int ok = w && nw >= 1 && probs && c >= 2 && n >= 1 && f >= 1;
    for (int k = 0; ok && k < nw; k++) ok = w[k] != NULL;
    if (!ok) return inca_fail(INCA_EINVAL, "sgc_probs_graph: expected weights, rows and >= 2 classes");
    pred_ctx_t p = {o, n, f, c, w, nw, probs, inca_malloc((size_t)(n < SGC_BLOCK ? n : SGC_BLOCK) * (size_t)f * sizeof(float))};
    int rc = !p.buf ? INCA_ENOMEM : hop_sweep(a, x, n, f, o, pred_visit, &p);
    if (!rc) softmax_rows(probs, (int64_t)nw * n, c, NULL);
    inca_free(p.buf);
    return rc;
}

int sgc_predict_graph(const csr_t *a, const float *x, int64_t n, int64_t f, const sgc_opts_t *o, const float *w, int32_t c,
                      int32_t *label, float *conf) {
    if (!w || c < 2 || n < 1 || f < 1) return inca_fail(INCA_EINVAL, "sgc_predict_graph: expected weights, rows and >= 2 classes");
    float *probs = inca_malloc((size_t)n * (size_t)c * sizeof *probs);
    if (!probs) return INCA_ENOMEM;
    int rc = sgc_probs_graph(a, x, n, f, o, &w, 1, c, probs);
    if (!rc) argmax_rows(probs, n, c, label, conf);
    inca_free(probs);
    return rc;
}
