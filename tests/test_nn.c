/* Gradient checks of the nn/ layers. The layer maths (nn/nn_impl.inc) is compiled here a second
 * time with double as the element type and naive double primitives, and every gradient of every
 * model kind (mlp, gcn, sage, gcnii, appnp, with BatchNorm and residual) and of the loss is
 * compared with central finite differences: norm-wise relative error per tensor < 1e-6. Then the
 * library's float instance (kernels/ primitives, the full-graph SpMM operator) is compared with
 * the double instance on the same parameters, masks and graph (relative 1e-4), which ties the
 * checked maths to the code that trains. Also: determinism, error paths, failure injection. */
#include "testutil.h"
#include "nn/model.h"
#include "kernels/kernels.h"
#include "kernels/backend.h"
#include "graph/csr.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- naive double primitives for the double instance ---- */
static void d_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
                   const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t t = 0; t < k; t++)
                s += (ta ? a[t * lda + i] : a[i * lda + t]) * (tb ? b[j * ldb + t] : b[t * ldb + j]);
            c[i * ldc + j] = alpha * s + (beta == 0 ? 0 : beta * c[i * ldc + j]);
        }
}
static void d_axpby(int64_t n, double a, const double *x, double b, double *y) {
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + (b == 0 ? 0 : b * y[i]);
}
static void d_add_bias(int64_t rows, int64_t f, const double *b, double *y) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t k = 0; k < f; k++) y[i * f + k] += b[k];
}
static void d_bias_grad(int64_t rows, int64_t f, const double *dy, double *db) {
    for (int64_t k = 0; k < f; k++) db[k] = 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t k = 0; k < f; k++) db[k] += dy[i * f + k];
}
static void d_relu(int64_t n, const double *x, double *y) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0;
}
static void d_relu_grad(int64_t n, const double *y, const double *dy, double *dx) {
    for (int64_t i = 0; i < n; i++) dx[i] = y[i] > 0 ? dy[i] : 0;
}
/* The mask rule of kern_dropout (kernels.h): keep i iff rng_hash_uniform(seed, stream, i) >= p. */
static void d_dropout(int64_t n, float p, uint64_t seed, uint64_t stream, const double *x, double *y, uint8_t *mask) {
    for (int64_t i = 0; i < n; i++) {
        const int keep = rng_hash_uniform(seed, stream, (uint64_t)i) >= p;
        y[i] = keep ? x[i] / (1.0 - (double)p) : 0;
        if (mask) mask[i] = (uint8_t)keep;
    }
}
static void d_dropout_grad(int64_t n, float p, const uint8_t *mask, const double *dy, double *dx) {
    for (int64_t i = 0; i < n; i++) dx[i] = mask[i] ? dy[i] / (1.0 - (double)p) : 0;
}
/* the fused sweeps, written out from their definitions (not from the float kernels) */
static void d_bias_relu(int64_t rows, int64_t f, const double *b, const double *z, double *y) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t k = 0; k < f; k++) y[i * f + k] = z[i * f + k] + b[k] > 0 ? z[i * f + k] + b[k] : 0;
}
static void d_relu_drop_grad(int64_t n, const double *y, const double *dy, float p, const uint8_t *mask, double *dx) {
    for (int64_t i = 0; i < n; i++) dx[i] = y[i] > 0 && (!mask || mask[i]) ? (mask ? dy[i] / (1.0 - (double)p) : dy[i]) : 0;
}

static int d_spmm_v(const csr_t *a, const double *vals, const double *x, int64_t f, double *y) {
    for (int64_t i = 0; i < a->n_rows; i++)
        for (int64_t k = 0; k < f; k++) {
            double s = 0;
            for (int64_t e = a->rowptr[i]; e < a->rowptr[i + 1]; e++) s += vals[e] * x[a->col[e] * f + k];
            y[i * f + k] = s;
        }
    return INCA_OK;
}

/* BatchNorm in double: the reference the float kernels (kern_bn_*) are compared with through
 * the float-vs-double model tests, and what the finite differences check. */
static void d_bn_forward(int64_t n, int64_t f, int train, double *xh, const double *g, const double *b, double *istd,
                         double *rmean, double *rvar, double *y) {
    for (int64_t k = 0; k < f; k++) {
        if (train) {
            double s = 0, s2 = 0;
            for (int64_t i = 0; i < n; i++) s += xh[i * f + k];
            const double mu = s / (double)n;
            for (int64_t i = 0; i < n; i++) s2 += (xh[i * f + k] - mu) * (xh[i * f + k] - mu);
            istd[k] = 1.0 / sqrt(s2 / (double)n + KERN_BN_EPS);
            for (int64_t i = 0; i < n; i++) xh[i * f + k] = (xh[i * f + k] - mu) * istd[k];
            rmean[k] = (1 - KERN_BN_MOMENTUM) * rmean[k] + KERN_BN_MOMENTUM * mu;
            rvar[k] = (1 - KERN_BN_MOMENTUM) * rvar[k] + KERN_BN_MOMENTUM * (n > 1 ? s2 / (double)(n - 1) : s2);
        } else {
            istd[k] = 1.0 / sqrt(rvar[k] + KERN_BN_EPS);
            for (int64_t i = 0; i < n; i++) xh[i * f + k] = (xh[i * f + k] - rmean[k]) * istd[k];
        }
        for (int64_t i = 0; i < n; i++) y[i * f + k] = g[k] * xh[i * f + k] + b[k];
    }
}
static void d_bn_backward(int64_t n, int64_t f, const double *g, const double *xh, const double *istd,
                          const double *dy, double *dz, double *gg, double *gb) {
    for (int64_t k = 0; k < f; k++) {
        double sdy = 0, sdyx = 0;
        for (int64_t i = 0; i < n; i++) {
            sdy += dy[i * f + k];
            sdyx += dy[i * f + k] * xh[i * f + k];
        }
        gg[k] = sdyx;
        gb[k] = sdy;
        for (int64_t i = 0; i < n; i++)
            dz[i * f + k] = g[k] * istd[k] / (double)n * ((double)n * dy[i * f + k] - sdy - xh[i * f + k] * sdyx);
    }
}

#define NN_REAL double
#define NN_BN_FORWARD d_bn_forward
#define NN_BN_BACKWARD d_bn_backward
#define NN_SPMM_V d_spmm_v
#define NN_(x) x##_d
#define NN_GEMM d_gemm
#define NN_AXPBY d_axpby
#define NN_ADD_BIAS d_add_bias
#define NN_BIAS_GRAD d_bias_grad
#define NN_RELU d_relu
#define NN_RELU_GRAD d_relu_grad
#define NN_DROPOUT d_dropout
#define NN_DROPOUT_GRAD d_dropout_grad
#define NN_BIAS_RELU d_bias_relu
#define NN_RELU_DROP_GRAD d_relu_drop_grad
#include "nn/nn_types.inc"
#include "nn/nn_impl.inc"

/* Double operator: Agg(H) = A H with A's float values taken exactly; backward by scattering
 * (the true transpose, whether or not A is symmetric). */
static int dagg_fwd(void *ctx, int site, int64_t n, int64_t f, const double *in_raw, const double *in, double *out) {
    const csr_t *a = ctx;
    (void)site; (void)in_raw;
    ck_assert_int_eq(n, a->n_rows);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < f; k++) {
            double s = 0;
            for (int64_t e = a->rowptr[i]; e < a->rowptr[i + 1]; e++) s += (double)a->val[e] * in[a->col[e] * f + k];
            out[i * f + k] = s;
        }
    return INCA_OK;
}
static int dagg_bwd(void *ctx, int site, int64_t n, int64_t f, const double *dout, double *din) {
    const csr_t *a = ctx;
    (void)site;
    memset(din, 0, (size_t)(n * f) * sizeof(double));
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = a->rowptr[i]; e < a->rowptr[i + 1]; e++)
            for (int64_t k = 0; k < f; k++) din[a->col[e] * f + k] += (double)a->val[e] * dout[i * f + k];
    return INCA_OK;
}

/* Mean NLL of log-softmax over idx rows with y >= 0, in double; gradient into dl when given. */
static double d_xent(int64_t c, const double *logits, const int32_t *y, const int64_t *idx, int64_t nidx,
                     int64_t rows, double *dl) {
    int64_t cnt = 0;
    double loss = 0;
    if (dl) memset(dl, 0, (size_t)(rows * c) * sizeof(double));
    for (int64_t t = 0; t < nidx; t++) cnt += y[idx[t]] >= 0;
    for (int64_t t = 0; t < nidx; t++) {
        const int64_t i = idx[t];
        if (y[i] < 0) continue;
        const double *z = logits + i * c;
        double mx = z[0], s = 0;
        for (int64_t k = 1; k < c; k++) mx = z[k] > mx ? z[k] : mx;
        for (int64_t k = 0; k < c; k++) s += exp(z[k] - mx);
        const double lse = mx + log(s);
        loss += lse - z[y[i]];
        if (dl)
            for (int64_t k = 0; k < c; k++) dl[i * c + k] += (exp(z[k] - lse) - (k == y[i])) / (double)cnt;
    }
    return cnt ? loss / (double)cnt : 0;
}

/* ---- a small random graph ---- */
#define NODES 11
#define FIN 5
#define CLS 3
typedef struct fixture {
    csr_t adj, gcn, mean, mean_t, xs;
    float xf[NODES * FIN];
    double xd[NODES * FIN];
    int32_t y[NODES];
    int64_t idx[NODES];
    int64_t nidx;
} fixture_t;

static void fixture_make_x(fixture_t *fx, uint64_t seed, int directed) {
    int64_t src[40], dst[40];
    rng_t r;
    memset(fx, 0, sizeof *fx);
    rng_seed(&r, seed);
    int m = 0;
    for (int i = 0; i < 30; i++) {
        src[m] = (int64_t)rng_below(&r, NODES);
        dst[m] = (int64_t)rng_below(&r, NODES);
        m++;
    }
    ck_assert_int_eq(csr_from_edges(&fx->adj, NODES, src, dst, m, (directed ? 0 : CSR_SYMMETRIZE) | CSR_DROP_SELF_LOOPS),
                     INCA_OK);
    ck_assert_int_eq(csr_gcn_norm(&fx->adj, &fx->gcn), INCA_OK);
    ck_assert_int_eq(csr_mean_norm(&fx->adj, &fx->mean), INCA_OK);
    ck_assert_int_eq(csr_transpose(&fx->mean, &fx->mean_t), INCA_OK);
    for (int i = 0; i < NODES * FIN; i++) {
        fx->xf[i] = rng_uniform(&r) < 0.4 ? 0.0f : (float)rng_normal(&r);   /* 40% zeros */
        fx->xd[i] = fx->xf[i];
    }
    /* the same features as a CSR */
    int64_t nnz = 0;
    for (int i = 0; i < NODES * FIN; i++) nnz += fx->xf[i] != 0;
    ck_assert_int_eq(csr_alloc(&fx->xs, NODES, FIN, nnz, 1), INCA_OK);
    nnz = 0;
    for (int i = 0; i < NODES; i++) {
        for (int k = 0; k < FIN; k++)
            if (fx->xf[i * FIN + k] != 0) {
                fx->xs.col[nnz] = k;
                fx->xs.val[nnz++] = fx->xf[i * FIN + k];
            }
        fx->xs.rowptr[i + 1] = nnz;
    }
    for (int i = 0; i < NODES; i++) fx->y[i] = (int32_t)rng_below(&r, CLS);
    fx->y[3] = -1;   /* an unlabelled node listed in idx must be ignored */
    fx->nidx = 0;
    for (int i = 0; i < NODES; i++)
        if (i % 4 != 1) fx->idx[fx->nidx++] = i;
}
static void fixture_make(fixture_t *fx, uint64_t seed) { fixture_make_x(fx, seed, 0); }
static void fixture_free(fixture_t *fx) {
    csr_free(&fx->adj);
    csr_free(&fx->gcn);
    csr_free(&fx->mean);
    csr_free(&fx->mean_t);
    csr_free(&fx->xs);
}

static model_config_t cfg_make(int kind, int layers, int64_t hidden, float dropout, int bn, int res) {
    model_config_t c;
    model_config_default(&c);
    c.kind = kind;
    c.in_dim = FIN;
    c.out_dim = CLS;
    c.hidden = hidden;
    c.layers = layers;
    c.dropout = dropout;
    c.alpha = 0.2f;
    c.theta = 0.5f;
    c.K = 4;
    c.batchnorm = bn;
    c.residual = res;
    c.seed = 7;
    return c;
}

#define SEED 99u
#define STEP 3u

static double d_loss(model_t_d *m, fixture_t *fx, const nn_agg_t_d *agg, double *dl) {
    const double *logits;
    ck_assert_int_eq(model_forward_d(m, NODES, fx->xd, agg, 1, SEED, STEP, &logits), INCA_OK);
    return d_xent(CLS, logits, fx->y, fx->idx, fx->nidx, NODES, dl);
}

static void float_vs_double_x(const model_config_t *cfg, int sparse, int directed);
static void float_vs_double(const model_config_t *cfg) { float_vs_double_x(cfg, 0, 0); }
static int g_dev_operator;   /* float_vs_double_x: the library's operator is nn_agg_dev (the trainer's) */
static double gradcheck_x(const model_config_t *cfg, int sparse);
static double gradcheck(const model_config_t *cfg) { return gradcheck_x(cfg, 0); }

/* Move every parameter off its initial value (biases start at 0, which puts ReLU inputs of
 * rows whose inputs are all zero exactly on the kink, where a finite difference is undefined). */
static void params_jitter_d(model_t_d *m) {
    rng_t r;
    rng_seed(&r, 31);
    for (int p = 0; p < model_nparams_d(m); p++) {
        nn_param_t_d *P = model_param_d(m, p);
        for (int64_t i = 0; i < P->n; i++) P->w[i] += 0.1 * rng_normal(&r);
    }
}

/* An operator affine at site 0 (nn/layer.h, "Affine input sites"), as IncAgg's (residual 1:
 * Agg(in) = rows + A (in − in_raw)) or Cluster-GCN's (residual 0, no rows): at the input width it
 * computes that itself, at a narrower width (the layer's transform-first call) A in; every other
 * site is A in. */
typedef struct dagg_affine {
    const csr_t *a;
    double rows[NODES * FIN];
    csr_t sparse_rows;   /* the same rows as a CSR when made (daff_sparse_rows): given instead */
    int residual, with_rows, base_calls;
} dagg_affine_t;
static int daff_fwd(void *ctx, int site, int64_t n, int64_t f, const double *in_raw, const double *in, double *out) {
    dagg_affine_t *k = ctx;
    if (site != 0 || f != FIN) return dagg_fwd((void *)k->a, site, n, f, in_raw, in, out);
    ck_assert_int_eq(n, NODES);
    double d[NODES * FIN] = {0};
    for (int64_t i = 0; i < n * f; i++) d[i] = in[i] - (k->residual ? in_raw[i] : 0);
    dagg_fwd((void *)k->a, site, n, f, d, d, out);
    for (int64_t i = 0; i < n * f && k->with_rows; i++) out[i] += k->rows[i];
    return INCA_OK;
}
static int daff_bwd(void *ctx, int site, int64_t n, int64_t f, const double *dout, double *din) {
    dagg_affine_t *k = ctx;
    return dagg_bwd((void *)k->a, site, n, f, dout, din);
}
static int daff_base(void *ctx, int site, int64_t n, int64_t f, nn_base_t_d *b) {
    dagg_affine_t *k = ctx;
    ck_assert(site == 0 && n == NODES && f == FIN);
    k->base_calls++;
    b->rows = k->with_rows ? k->rows : NULL;
    b->sparse = k->with_rows && k->sparse_rows.rowptr ? &k->sparse_rows : NULL;
    if (b->sparse) b->rows = NULL;
    b->residual = k->residual;
    return INCA_OK;
}
static void daff_init(dagg_affine_t *k, const csr_t *a, int residual, int with_rows) {
    rng_t r;
    rng_seed(&r, 5);
    memset(k, 0, sizeof *k);
    k->a = a;
    k->residual = residual;
    k->with_rows = with_rows;
    for (int i = 0; i < NODES * FIN; i++) k->rows[i] = rng_uniform(&r) < 0.5 ? 0 : (float)rng_normal(&r);
}
/* the rows as a CSR of float values (exact in double: the rows are floats) */
static void daff_sparse_rows(dagg_affine_t *k) {
    int64_t nnz = 0;
    for (int i = 0; i < NODES * FIN; i++) nnz += k->rows[i] != 0;
    ck_assert_int_eq(csr_alloc(&k->sparse_rows, NODES, FIN, nnz, 1), INCA_OK);
    nnz = 0;
    for (int i = 0; i < NODES; i++) {
        for (int q = 0; q < FIN; q++)
            if (k->rows[i * FIN + q] != 0) {
                k->sparse_rows.col[nnz] = q;
                k->sparse_rows.val[nnz++] = (float)k->rows[i * FIN + q];
            }
        k->sparse_rows.rowptr[i + 1] = nnz;
    }
}

static double gradcheck_agg(const model_config_t *cfg, int sparse, const nn_agg_t_d *op);
/* Central differences over every parameter element; returns the worst norm-wise relative error. */
static double gradcheck_x(const model_config_t *cfg, int sparse) { return gradcheck_agg(cfg, sparse, NULL); }
/* The same with the operator op (NULL: A of the model's normalisation). */
static double gradcheck_agg(const model_config_t *cfg, int sparse, const nn_agg_t_d *op) {
    fixture_t fx;
    fixture_make(&fx, 1234);
    const csr_t *a = nn_kind_norm(cfg->kind) == NN_NORM_MEAN ? &fx.mean : &fx.gcn;
    nn_agg_t_d agg = op ? *op : (nn_agg_t_d){dagg_fwd, dagg_bwd, (void *)a, NULL};
    model_t_d *m = NULL;
    ck_assert_int_eq(model_create_d(cfg, NODES, &m), INCA_OK);
    if (sparse) ck_assert_int_eq(model_set_sparse_input_d(m, &fx.xs), INCA_OK);
    params_jitter_d(m);
    double dl[NODES * CLS];
    d_loss(m, &fx, &agg, dl);
    ck_assert_int_eq(model_backward_d(m, dl, &agg), INCA_OK);
    double worst = 0;
    const double h = 1e-6;
    for (int p = 0; p < model_nparams_d(m); p++) {
        nn_param_t_d *P = model_param_d(m, p);
        double *g = malloc((size_t)P->n * sizeof(double));
        memcpy(g, P->g, (size_t)P->n * sizeof(double));
        double num = 0, den_a = 0, den_f = 0;
        for (int64_t i = 0; i < P->n; i++) {
            const double w0 = P->w[i];
            P->w[i] = w0 + h;
            const double lp = d_loss(m, &fx, &agg, NULL);
            P->w[i] = w0 - h;
            const double lm = d_loss(m, &fx, &agg, NULL);
            P->w[i] = w0;
            const double fd = (lp - lm) / (2 * h);
            if (getenv("NN_DEBUG")) fprintf(stderr, "%s[%lld] g %.9g fd %.9g\n", P->name, (long long)i, g[i], fd);
            num += (fd - g[i]) * (fd - g[i]);
            den_a += g[i] * g[i];
            den_f += fd * fd;
        }
        const double den = sqrt(den_a > den_f ? den_a : den_f);
        const double rel = den > 1e-12 ? sqrt(num) / den : sqrt(num);
        const nn_param_t_d *next = model_param_d(m, p + 1);   /* a BN layer: bias, gamma, beta */
        if ((P->flags & NN_P_BIAS) && !(P->flags & NN_P_BN) && next && (next->flags & NN_P_BN)) {
            /* a bias right before BatchNorm has an exactly zero gradient (BN removes the mean) */
            ck_assert_msg(sqrt(den_a) < 1e-12 && sqrt(num) < 1e-8, "%s: expected a zero gradient", P->name);
            free(g);
            continue;
        }
        ck_assert_msg(den > 1e-8, "%s %s: gradient is zero, the check would be vacuous",
                      model_kind_name(cfg->kind), P->name);
        if (rel > worst) worst = rel;
        ck_assert_msg(rel < 1e-6, "%s %s: relative error %.3g (|g| %.3g)", model_kind_name(cfg->kind), P->name,
                      rel, sqrt(den_a));
        free(g);
    }
    model_free_d(&m);
    fixture_free(&fx);
    return worst;
}

START_TEST(test_grad_mlp) { model_config_t c = cfg_make(NN_MLP, 3, 4, 0.3f, 0, 0); gradcheck(&c); }
END_TEST
START_TEST(test_grad_gcn) { model_config_t c = cfg_make(NN_GCN, 3, 4, 0.3f, 0, 0); gradcheck(&c); }
END_TEST
START_TEST(test_grad_sage) { model_config_t c = cfg_make(NN_SAGE, 3, 4, 0.3f, 0, 0); gradcheck(&c); }
END_TEST
START_TEST(test_grad_gcnii) { model_config_t c = cfg_make(NN_GCNII, 4, 4, 0.3f, 0, 0); gradcheck(&c); }
END_TEST
START_TEST(test_grad_appnp) { model_config_t c = cfg_make(NN_APPNP, 2, 4, 0.3f, 0, 0); gradcheck(&c); }
END_TEST
START_TEST(test_grad_transform_first) {
    /* Agg(in W) instead of Agg(in) W on narrowing layers (FIN 5 -> hidden 3 -> CLS 3) */
    model_config_t c = cfg_make(NN_GCN, 3, 3, 0.3f, 0, 0);
    c.transform_first = 1;
    ck_assert_int_eq(model_site_dim(&c, 0), 3);
    gradcheck(&c);
    float_vs_double(&c);
    c = cfg_make(NN_SAGE, 3, 3, 0.3f, 1, 1);
    c.transform_first = 1;
    gradcheck(&c);
    float_vs_double(&c);
}
END_TEST

START_TEST(test_grad_sparse_input) {
    /* X as a CSR: SpMM first layer with dropout on the stored nonzeros */
    model_config_t cs[] = {cfg_make(NN_MLP, 3, 4, 0.3f, 0, 0), cfg_make(NN_GCN, 3, 3, 0.3f, 0, 0),
                           cfg_make(NN_SAGE, 3, 3, 0.3f, 1, 0), cfg_make(NN_GCNII, 3, 4, 0.3f, 0, 0),
                           cfg_make(NN_APPNP, 2, 4, 0.3f, 0, 0)};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        cs[i].transform_first = 1;
        gradcheck_x(&cs[i], 1);
        float_vs_double_x(&cs[i], 1, 0);
    }
}
END_TEST

START_TEST(test_grad_affine_input) {
    /* transform-first on an affine operator: rows W + A (D W), D = drop(x) − residual·x, against
     * central differences, dense and sparse, IncAgg's form and Cluster-GCN's (3 layers: the
     * hidden sites stay plain); the fixture's graph is the one gradcheck makes */
    fixture_t fx;
    fixture_make(&fx, 1234);
    /* form 0: IncAgg's with dense rows, 1: Cluster-GCN's, 2: IncAgg's with sparse rows */
    for (int form = 0; form < 3; form++)
        for (int sparse = 0; sparse < 2; sparse++) {
            dagg_affine_t k;
            daff_init(&k, &fx.gcn, form != 1, form != 1);
            if (form == 2) daff_sparse_rows(&k);
            nn_agg_t_d op = {daff_fwd, daff_bwd, &k, daff_base};
            model_config_t c = cfg_make(NN_GCN, 3, 3, 0.3f, 0, 0);
            c.input_transform_first = 1;
            gradcheck_agg(&c, sparse, &op);
            ck_assert_msg(k.base_calls > 0, "the affine path was not taken");
            csr_free(&k.sparse_rows);
        }
    fixture_free(&fx);
}
END_TEST

/* Loss and gradients of one training forward/backward of a model with the given flags. */
static double affine_run(const model_config_t *c, nn_agg_t_d *op, const csr_t *xs, fixture_t *fx, double *grads) {
    model_t_d *m = NULL;
    ck_assert_int_eq(model_create_d(c, NODES, &m), INCA_OK);
    if (xs) ck_assert_int_eq(model_set_sparse_input_d(m, xs), INCA_OK);
    params_jitter_d(m);
    double dl[NODES * CLS];
    const double loss = d_loss(m, fx, op, dl);
    ck_assert_int_eq(model_backward_d(m, dl, op), INCA_OK);
    for (int p = 0, t = 0; p < model_nparams_d(m); p++)
        for (int64_t i = 0; i < model_param_d(m, p)->n; i++) grads[t++] = model_param_d(m, p)->g[i];
    model_free_d(&m);
    return loss;
}

START_TEST(test_affine_input_same_maths) {
    /* aggregate-first (the operator computes rows + A (in − r·in_raw) at the input width) and
     * transform-first (rows W + A (D W)) are the same maths: with dense rows and the same dropout
     * masks, in double, equal loss and gradients to rounding; the sparse input without dropout
     * likewise (with dropout it masks stored nonzeros only: other masks) */
    fixture_t fx;
    fixture_make(&fx, 4321);
    for (int form = 0; form < 3; form++)
        for (int sparse = 0; sparse < 2; sparse++) {
            dagg_affine_t k;
            daff_init(&k, &fx.gcn, form != 1, form != 1);
            nn_agg_t_d op = {daff_fwd, daff_bwd, &k, daff_base};
            model_config_t c = cfg_make(NN_GCN, 2, 3, sparse ? 0.0f : 0.4f, 0, 0);
            double g0[512], g1[512];
            const double l0 = affine_run(&c, &op, NULL, &fx, g0);
            ck_assert_int_eq(k.base_calls, 0);
            c.input_transform_first = 1;
            if (form == 2) daff_sparse_rows(&k);   /* the operator's rows as a CSR from here on */
            const double l1 = affine_run(&c, &op, sparse ? &fx.xs : NULL, &fx, g1);
            csr_free(&k.sparse_rows);
            ck_assert_int_gt(k.base_calls, 0);
            ck_assert_msg(fabs(l0 - l1) < 1e-12, "form %d sparse %d: loss %.17g vs %.17g", form, sparse, l0, l1);
            const int np = (FIN * 3 + 3) + (3 * CLS + CLS);
            double worst = 0;
            for (int i = 0; i < np; i++) worst = fmax(worst, fabs(g0[i] - g1[i]) / (1 + fabs(g0[i])));
            ck_assert_msg(worst < 1e-12, "form %d sparse %d: gradients differ by %.3g", form, sparse, worst);
            ck_assert(fabs(g0[0]) + fabs(g0[1]) > 1e-6);   /* not vacuous: the first weight learns */
        }
    fixture_free(&fx);
}
END_TEST

START_TEST(test_affine_sparse_dropout) {
    /* a 1-layer gcn on the sparse input with dropout, by hand: logits = rows W + A ((drop(x) − x) W)
     * + b for IncAgg's form (drop(x) − x: zero where kept values scale, −x where dropped),
     * A (drop(x) W) + b for Cluster-GCN's; drop masks the stored nonzeros (stream step) */
    fixture_t fx;
    fixture_make(&fx, 99);
    const int64_t nnz = fx.xs.nnz;
    double v[NODES * FIN], vd[NODES * FIN];
    for (int64_t e = 0; e < nnz; e++) v[e] = fx.xs.val[e];
    d_dropout(nnz, 0.5f, SEED, (uint64_t)STEP * NN_STREAMS_PER_STEP, v, vd, NULL);
    for (int form = 0; form < 2; form++) {
        dagg_affine_t k;
        daff_init(&k, &fx.gcn, form == 0, form == 0);
        nn_agg_t_d op = {daff_fwd, daff_bwd, &k, daff_base};
        model_config_t c = cfg_make(NN_GCN, 1, 3, 0.5f, 0, 0);
        c.input_transform_first = 1;
        model_t_d *m = NULL;
        ck_assert_int_eq(model_create_d(&c, NODES, &m), INCA_OK);
        ck_assert_int_eq(model_set_sparse_input_d(m, &fx.xs), INCA_OK);
        params_jitter_d(m);
        const double *W = model_param_d(m, 0)->w, *b = model_param_d(m, 1)->w, *logits;
        ck_assert_int_eq(model_forward_d(m, NODES, NULL, &op, 1, SEED, STEP, &logits), INCA_OK);
        double dx[NODES * FIN] = {0}, u[NODES * CLS] = {0}, want[NODES * CLS];
        for (int i = 0; i < NODES; i++)
            for (int64_t e = fx.xs.rowptr[i]; e < fx.xs.rowptr[i + 1]; e++)
                dx[i * FIN + fx.xs.col[e]] = vd[e] - (form == 0 ? v[e] : 0);
        for (int i = 0; i < NODES; i++)
            for (int j = 0; j < CLS; j++)
                for (int q = 0; q < FIN; q++) u[i * CLS + j] += dx[i * FIN + q] * W[q * CLS + j];
        dagg_fwd((void *)&fx.gcn, 0, NODES, CLS, u, u, want);
        double worst = 0, moved = 0;
        for (int i = 0; i < NODES; i++)
            for (int j = 0; j < CLS; j++) {
                double w = want[i * CLS + j] + b[j];
                for (int q = 0; q < FIN && form == 0; q++) w += k.rows[i * FIN + q] * W[q * CLS + j];
                worst = fmax(worst, fabs(w - logits[i * CLS + j]));
                moved += fabs(u[i * CLS + j]);
            }
        ck_assert_msg(worst < 1e-12, "form %d: logits differ from the hand computation by %.3g", form, worst);
        ck_assert(moved > 1e-3);   /* dropout changed something */
        model_free_d(&m);
    }
    fixture_free(&fx);
}
END_TEST

START_TEST(test_sparse_equals_dense) {
    /* without dropout (and in eval mode) the sparse input path computes the dense maths */
    fixture_t fx;
    fixture_make(&fx, 21);
    nn_agg_full_t full;
    nn_agg_t agg;
    nn_agg_full_init(&agg, &full, &fx.gcn, NULL);
    model_config_t c = cfg_make(NN_GCN, 2, 3, 0.5f, 0, 0);
    c.transform_first = 1;
    model_t *m = NULL;
    ck_assert_int_eq(model_create(&c, NODES, &m), INCA_OK);
    const float *l;
    float dense[NODES * CLS];
    ck_assert_int_eq(model_forward(m, NODES, fx.xf, &agg, 0, 1, 0, &l), INCA_OK);
    memcpy(dense, l, sizeof dense);
    ck_assert_int_eq(model_set_sparse_input(m, &fx.xs), INCA_OK);
    ck_assert_int_eq(model_forward(m, NODES, NULL, &agg, 0, 1, 0, &l), INCA_OK);
    for (int i = 0; i < NODES * CLS; i++) ck_assert(fabs(l[i] - dense[i]) <= 1e-5 * (1 + fabs(dense[i])));
    model_free(&m);
    /* a first layer that aggregates its dense input cannot take the sparse input */
    c.transform_first = 0;
    ck_assert_int_eq(model_create(&c, NODES, &m), INCA_OK);
    ck_assert_int_eq(model_set_sparse_input(m, &fx.xs), INCA_EINVAL);
    model_free(&m);
    fixture_free(&fx);
}
END_TEST

START_TEST(test_grad_bn_res) {
    /* hidden = input width, so the residual also applies on the first layer */
    model_config_t c = cfg_make(NN_GCN, 4, FIN, 0.3f, 1, 1);
    gradcheck(&c);
    c = cfg_make(NN_SAGE, 3, FIN, 0.0f, 1, 1);
    gradcheck(&c);
    c = cfg_make(NN_MLP, 3, 4, 0.2f, 1, 0);
    gradcheck(&c);
    c = cfg_make(NN_MLP, 4, 6, 0.0f, 0, 1);
    gradcheck(&c);
}
END_TEST

START_TEST(test_grad_loss) {
    /* the double loss against central differences, and kern_softmax_xent against it */
    fixture_t fx;
    fixture_make(&fx, 77);
    double z[NODES * CLS], dl[NODES * CLS];
    float zf[NODES * CLS], dlf[NODES * CLS], logp[NODES * CLS];
    rng_t r;
    rng_seed(&r, 5);
    for (int i = 0; i < NODES * CLS; i++) { zf[i] = (float)(3 * rng_normal(&r)); z[i] = zf[i]; }
    const double l0 = d_xent(CLS, z, fx.y, fx.idx, fx.nidx, NODES, dl);
    double num = 0, den = 0;
    for (int i = 0; i < NODES * CLS; i++) {
        const double h = 1e-6, w0 = z[i];
        z[i] = w0 + h;
        const double lp = d_xent(CLS, z, fx.y, fx.idx, fx.nidx, NODES, NULL);
        z[i] = w0 - h;
        const double lm = d_xent(CLS, z, fx.y, fx.idx, fx.nidx, NODES, NULL);
        z[i] = w0;
        const double fd = (lp - lm) / (2 * h);
        num += (fd - dl[i]) * (fd - dl[i]);
        den += dl[i] * dl[i];
        if (fx.y[i / CLS] < 0 || (i / CLS) % 4 == 1) ck_assert(dl[i] == 0 && fabs(fd) < 1e-9);
    }
    ck_assert_msg(sqrt(num / den) < 1e-6, "loss gradient relative error %.3g", sqrt(num / den));
    const double lf = kern_softmax_xent(NODES, CLS, zf, fx.y, fx.idx, fx.nidx, logp, dlf);
    ck_assert_msg(fabs(lf - l0) < 1e-6 * fabs(l0), "kern_softmax_xent %.9g vs %.9g", lf, l0);
    for (int i = 0; i < NODES * CLS; i++) ck_assert_msg(fabs(dlf[i] - dl[i]) < 1e-6, "dlogits[%d] %g vs %g", i, dlf[i], dl[i]);
    fixture_free(&fx);
}
END_TEST

/* The float instance (library) against the double instance with identical parameters. */
/* directed: a graph whose edges were not symmetrised, the library's operator built by
 * nn_adj_build (the double one scatters: the true transpose whatever the matrix) */
static void float_vs_double_x(const model_config_t *cfg, int sparse, int directed) {
    fixture_t fx;
    fixture_make_x(&fx, 4321, directed);
    const int norm = nn_kind_norm(cfg->kind);
    csr_t ba = {0}, bat = {0};
    if (directed) {
        ck_assert_int_eq(nn_adj_build(&fx.adj, norm == NN_NORM_MEAN ? NN_NORM_MEAN : NN_NORM_GCN, &ba, &bat), INCA_OK);
        ck_assert_msg(bat.rowptr != NULL, "%s: a directed graph's Â has no transpose", model_kind_name(cfg->kind));
    }
    const csr_t *a = directed ? &ba : norm == NN_NORM_MEAN ? &fx.mean : &fx.gcn;
    nn_agg_t_d aggd = {dagg_fwd, dagg_bwd, (void *)a, NULL};
    nn_agg_full_t full;
    nn_agg_t aggf;
    const csr_t *at = directed ? &bat : norm == NN_NORM_MEAN ? &fx.mean_t : NULL;
    nn_agg_full_init(&aggf, &full, a, at);
    /* the full-batch trainer's operator: Â and (when not symmetric) Âᵀ as kernel matrices */
    nn_agg_dev_t dev;
    kern_mat_t *am = NULL, *atm = NULL;
    if (g_dev_operator) {
        ck_assert_int_eq(kc_mat_upload(kc_cpu(), a, &am), INCA_OK);
        if (at) ck_assert_int_eq(kc_mat_upload(kc_cpu(), at, &atm), INCA_OK);
        nn_agg_dev_init(&aggf, &dev, kc_cpu(), am, atm);
    }
    model_t_d *md = NULL;
    model_t *mf = NULL;
    ck_assert_int_eq(model_create_d(cfg, NODES, &md), INCA_OK);
    ck_assert_int_eq(model_create(cfg, NODES, &mf), INCA_OK);
    ck_assert_int_eq(model_nparams(mf), model_nparams_d(md));
    if (sparse) {
        ck_assert_int_eq(model_set_sparse_input_d(md, &fx.xs), INCA_OK);
        ck_assert_int_eq(model_set_sparse_input(mf, &fx.xs), INCA_OK);
    }
    for (int p = 0; p < model_nparams(mf); p++) {
        nn_param_t *pf = model_param(mf, p);
        nn_param_t_d *pd = model_param_d(md, p);
        ck_assert_str_eq(pf->name, pd->name);
        ck_assert_int_eq(pf->n, pd->n);
        for (int64_t i = 0; i < pf->n; i++) {
            ck_assert(fabs(pf->w[i] - pd->w[i]) <= 1e-7 * (1 + fabs(pd->w[i])));   /* same init */
        }
    }
    params_jitter_d(md);
    for (int p = 0; p < model_nparams(mf); p++) {
        nn_param_t *pf = model_param(mf, p);
        nn_param_t_d *pd = model_param_d(md, p);
        for (int64_t i = 0; i < pf->n; i++) {
            pf->w[i] = (float)pd->w[i];
            pd->w[i] = pf->w[i];
        }
    }
    for (int train = 1; train >= 0; train--) {
        const double *ld;
        const float *lf;
        ck_assert_int_eq(model_forward_d(md, NODES, fx.xd, &aggd, train, SEED, STEP, &ld), INCA_OK);
        ck_assert_int_eq(model_forward(mf, NODES, fx.xf, &aggf, train, SEED, STEP, &lf), INCA_OK);
        double mx = 0;
        for (int i = 0; i < NODES * CLS; i++) mx = fmax(mx, fabs(ld[i]));
        for (int i = 0; i < NODES * CLS; i++)
            ck_assert_msg(fabs(lf[i] - ld[i]) <= 1e-4 * mx, "%s logits[%d] float %g double %g",
                          model_kind_name(cfg->kind), i, lf[i], ld[i]);
        if (!train) break;
        double dld[NODES * CLS];
        float dlf[NODES * CLS], logp[NODES * CLS];
        d_xent(CLS, ld, fx.y, fx.idx, fx.nidx, NODES, dld);
        kern_softmax_xent(NODES, CLS, lf, fx.y, fx.idx, fx.nidx, logp, dlf);
        ck_assert_int_eq(model_backward_d(md, dld, &aggd), INCA_OK);
        ck_assert_int_eq(model_backward(mf, dlf, &aggf), INCA_OK);
        double scale = 0;
        for (int p = 0; p < model_nparams(mf); p++) {
            nn_param_t_d *pd = model_param_d(md, p);
            for (int64_t i = 0; i < pd->n; i++) scale = fmax(scale, fabs(pd->g[i]));
        }
        for (int p = 0; p < model_nparams(mf); p++) {
            nn_param_t *pf = model_param(mf, p);
            nn_param_t_d *pd = model_param_d(md, p);
            double num = 0, den = 0;
            for (int64_t i = 0; i < pf->n; i++) {
                num += (pf->g[i] - pd->g[i]) * (pf->g[i] - pd->g[i]);
                den += pd->g[i] * pd->g[i];
            }
            ck_assert_msg(sqrt(num) <= 1e-4 * sqrt(den) + 1e-6 * scale, "%s %s: float vs double gradient %.3g",
                          model_kind_name(cfg->kind), pf->name, sqrt(num / (den + 1e-300)));
        }
    }
    /* eval-mode transform-first (the full-graph operator is linear): narrowing gcn/sage layers
     * aggregate in W, and the logits still match the double's aggregate-first ones */
    model_set_eval_transform_first(mf, 1);
    {
        const double *ld;
        const float *lf;
        ck_assert_int_eq(model_forward_d(md, NODES, fx.xd, &aggd, 0, SEED, STEP, &ld), INCA_OK);
        ck_assert_int_eq(model_forward(mf, NODES, fx.xf, &aggf, 0, SEED, STEP, &lf), INCA_OK);
        double mx = 0;
        for (int i = 0; i < NODES * CLS; i++) mx = fmax(mx, fabs(ld[i]));
        for (int i = 0; i < NODES * CLS; i++)
            ck_assert_msg(fabs(lf[i] - ld[i]) <= 1e-4 * mx, "%s eval transform-first logits[%d] float %g double %g",
                          model_kind_name(cfg->kind), i, lf[i], ld[i]);
    }
    model_free_d(&md);
    model_free(&mf);
    kc_mat_free(kc_cpu(), &am);
    kc_mat_free(kc_cpu(), &atm);
    csr_free(&ba);
    csr_free(&bat);
    fixture_free(&fx);
}

/* GCNII and APPNP forwards against their papers' formulas, written out here in double from the
 * parameters by name (the double instance's forward is not the expectation: a formula slip in
 * nn_impl.inc is in both instances and its gradient check passes). Eval mode, no dropout.
 * GCNII (Chen et al. 2020, eq. 5): H0 = relu(X W0 + b0); for l = 1..L:
 *   S = (1-a) Â H + a H0, beta_l = log(theta / l + 1), H = relu((1-beta_l) S + beta_l S W_l);
 *   logits = H Wout + bout.
 * APPNP (Gasteiger et al. 2019, eq. 4): Z0 = relu(X W0 + b0) W1 + b1,
 *   Z_{k+1} = (1-a) Â Z_k + a Z0, logits = Z_K. */
static void ref_dense(const double *x, int64_t n, int64_t fin, const nn_param_t_d *w, const nn_param_t_d *b, int relu,
                      double *y) {
    ck_assert(w->rows == fin && (!b || b->cols == w->cols));
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < w->cols; k++) {
            double s = b ? b->w[k] : 0;
            for (int64_t t = 0; t < fin; t++) s += x[i * fin + t] * w->w[t * w->cols + k];
            y[i * w->cols + k] = relu && s < 0 ? 0 : s;
        }
}
static void ref_agg(const csr_t *a, const double *x, int64_t f, double *y) {
    for (int64_t i = 0; i < a->n_rows; i++)
        for (int64_t k = 0; k < f; k++) {
            double s = 0;
            for (int64_t e = a->rowptr[i]; e < a->rowptr[i + 1]; e++) s += (double)a->val[e] * x[a->col[e] * f + k];
            y[i * f + k] = s;
        }
}
static nn_param_t_d *param_named(model_t_d *m, const char *name) {
    for (int p = 0; p < model_nparams_d(m); p++)
        if (strcmp(model_param_d(m, p)->name, name) == 0) return model_param_d(m, p);
    ck_abort_msg("no parameter %s", name);
    return NULL;
}

START_TEST(test_gcnii_appnp_paper_forward) {
    fixture_t fx;
    fixture_make(&fx, 77);
    nn_agg_t_d agg = {dagg_fwd, dagg_bwd, (void *)&fx.gcn, NULL};
    enum { H = 6, L = 3 };
    const double thetas[2] = {0.5, 1.5}, alphas[2] = {0.1, 0.3};
    for (int v = 0; v < 2; v++) {
        /* GCNII */
        model_config_t c = cfg_make(NN_GCNII, L, H, 0.0f, 0, 0);
        c.alpha = (float)alphas[v];
        c.theta = (float)thetas[v];
        model_t_d *m = NULL;
        ck_assert_int_eq(model_create_d(&c, NODES, &m), INCA_OK);
        params_jitter_d(m);
        const double *logits;
        ck_assert_int_eq(model_forward_d(m, NODES, fx.xd, &agg, 0, SEED, STEP, &logits), INCA_OK);
        double h0[NODES * H], h[NODES * H], s[NODES * H], sw[NODES * H], out[NODES * CLS];
        ref_dense(fx.xd, NODES, FIN, model_param_d(m, 0), model_param_d(m, 1), 1, h0);
        memcpy(h, h0, sizeof h);
        const double a = (double)c.alpha, th = (double)c.theta;
        for (int l = 1; l <= L; l++) {
            char nm[32];
            snprintf(nm, sizeof nm, "conv%d.weight", l);
            const double beta = log(th / l + 1);
            ref_agg(&fx.gcn, h, H, s);
            for (int i = 0; i < NODES * H; i++) s[i] = (1 - a) * s[i] + a * h0[i];
            ref_dense(s, NODES, H, param_named(m, nm), NULL, 0, sw);
            for (int i = 0; i < NODES * H; i++) {
                const double z = (1 - beta) * s[i] + beta * sw[i];
                h[i] = z > 0 ? z : 0;
            }
        }
        const int np = model_nparams_d(m);
        ref_dense(h, NODES, H, model_param_d(m, np - 2), model_param_d(m, np - 1), 0, out);
        for (int i = 0; i < NODES * CLS; i++)
            ck_assert_msg(fabs(logits[i] - out[i]) < 1e-10 * (1 + fabs(out[i])), "gcnii theta %g alpha %g: logit %d %.12g, paper %.12g",
                          th, a, i, logits[i], out[i]);
        model_free_d(&m);
        /* APPNP */
        c = cfg_make(NN_APPNP, 2, H, 0.0f, 0, 0);
        c.alpha = (float)alphas[v];
        c.K = 5;
        ck_assert_int_eq(model_create_d(&c, NODES, &m), INCA_OK);
        params_jitter_d(m);
        ck_assert_int_eq(model_forward_d(m, NODES, fx.xd, &agg, 0, SEED, STEP, &logits), INCA_OK);
        double z0[NODES * CLS], z[NODES * CLS], az[NODES * CLS];
        ck_assert_int_eq(model_nparams_d(m), 4);
        ref_dense(fx.xd, NODES, FIN, model_param_d(m, 0), model_param_d(m, 1), 1, h);
        ref_dense(h, NODES, H, model_param_d(m, 2), model_param_d(m, 3), 0, z0);
        memcpy(z, z0, sizeof z);
        for (int k = 0; k < c.K; k++) {
            ref_agg(&fx.gcn, z, CLS, az);
            for (int i = 0; i < NODES * CLS; i++) z[i] = (1 - a) * az[i] + a * z0[i];
        }
        for (int i = 0; i < NODES * CLS; i++)
            ck_assert_msg(fabs(logits[i] - z[i]) < 1e-10 * (1 + fabs(z[i])), "appnp alpha %g: logit %d %.12g, paper %.12g", a, i,
                          logits[i], z[i]);
        model_free_d(&m);
    }
    fixture_free(&fx);
}
END_TEST

START_TEST(test_float_matches_double) {
    const model_config_t cs[] = {
        cfg_make(NN_MLP, 3, 4, 0.3f, 0, 0),  cfg_make(NN_GCN, 3, 4, 0.3f, 0, 0),
        cfg_make(NN_SAGE, 3, 4, 0.3f, 0, 0), cfg_make(NN_GCNII, 4, 4, 0.3f, 0, 0),
        cfg_make(NN_APPNP, 2, 4, 0.3f, 0, 0), cfg_make(NN_GCN, 4, FIN, 0.3f, 1, 1),
        cfg_make(NN_SAGE, 3, FIN, 0.3f, 1, 1),
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) float_vs_double(&cs[i]);
}
END_TEST

/* A directed graph: Â is not symmetric, so every backward needs Âᵀ; nn_adj_build makes it for
 * the GCN normalisation too (GCN, GCNII and APPNP once used Â in their backward). And a
 * symmetric graph's GCN Â gets none (it would double the adjacency's memory for nothing). */
START_TEST(test_directed_graph_backward) {
    const model_config_t cs[] = {
        cfg_make(NN_GCN, 3, 4, 0.3f, 0, 0), cfg_make(NN_SAGE, 3, 4, 0.3f, 0, 0),
        cfg_make(NN_GCNII, 4, 4, 0.3f, 0, 0), cfg_make(NN_APPNP, 2, 4, 0.3f, 0, 0),
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) float_vs_double_x(&cs[i], 0, 1);
    /* again through nn_agg_dev, the operator train_full builds (a mutation test: its backward
     * multiplying by Â instead of Âᵀ on a directed graph passed every test) */
    g_dev_operator = 1;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) float_vs_double_x(&cs[i], 0, 1);
    g_dev_operator = 0;
    fixture_t fx;
    fixture_make(&fx, 4321);
    csr_t a, at;
    ck_assert_int_eq(nn_adj_build(&fx.adj, NN_NORM_GCN, &a, &at), INCA_OK);
    ck_assert_ptr_null(at.rowptr);
    ck_assert_int_eq(a.nnz, fx.gcn.nnz);
    csr_free(&a);
    fixture_free(&fx);
}
END_TEST

START_TEST(test_dropout_masks_and_eval) {
    /* eval mode has no dropout (two eval forwards agree; train forwards with different steps
     * differ; the same step repeats bit for bit) */
    fixture_t fx;
    fixture_make(&fx, 9);
    nn_agg_full_t full;
    nn_agg_t agg;
    nn_agg_full_init(&agg, &full, &fx.gcn, NULL);
    model_config_t c = cfg_make(NN_GCN, 2, 8, 0.5f, 0, 0);
    model_t *m = NULL;
    ck_assert_int_eq(model_create(&c, NODES, &m), INCA_OK);
    const float *l;
    float a[NODES * CLS], b[NODES * CLS];
    ck_assert_int_eq(model_forward(m, NODES, fx.xf, &agg, 1, 1, 5, &l), INCA_OK);
    memcpy(a, l, sizeof a);
    ck_assert_int_eq(model_forward(m, NODES, fx.xf, &agg, 1, 1, 5, &l), INCA_OK);
    ck_assert(memcmp(a, l, sizeof a) == 0);
    ck_assert_int_eq(model_forward(m, NODES, fx.xf, &agg, 1, 1, 6, &l), INCA_OK);
    ck_assert(memcmp(a, l, sizeof a) != 0);
    ck_assert_int_eq(model_forward(m, NODES, fx.xf, &agg, 0, 1, 5, &l), INCA_OK);
    memcpy(b, l, sizeof b);
    ck_assert_int_eq(model_forward(m, NODES, fx.xf, &agg, 0, 2, 9, &l), INCA_OK);
    ck_assert(memcmp(b, l, sizeof b) == 0);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    /* backward after an eval forward is refused */
    float dl[NODES * CLS] = {0};
    ck_assert_int_eq(model_backward(m, dl, &agg), INCA_EINVAL);
    model_free(&m);
    fixture_free(&fx);
}
END_TEST

START_TEST(test_sites_and_errors) {
    model_config_t c = cfg_make(NN_GCN, 3, 8, 0.5f, 0, 0);
    ck_assert_int_eq(model_num_sites(&c), 3);
    ck_assert_int_eq(model_site_dim(&c, 0), FIN);
    ck_assert_int_eq(model_site_dim(&c, 2), 8);
    c.kind = NN_APPNP;
    ck_assert_int_eq(model_num_sites(&c), 4);
    ck_assert_int_eq(model_site_dim(&c, 3), CLS);
    c.kind = NN_GCNII;
    ck_assert_int_eq(model_num_sites(&c), 3);
    c.kind = NN_MLP;
    ck_assert_int_eq(model_num_sites(&c), 0);
    /* --alpha in [0, 1], both ends included (the refusal names [0,1]; APPNP with alpha 1 gives its
     * MLP's output; a mutation test: alpha 1 refused passed) */
    c.kind = NN_APPNP;
    c.alpha = 1.0f;
    ck_assert_int_eq(model_config_check(&c), INCA_OK);
    c.alpha = 0.0f;
    ck_assert_int_eq(model_config_check(&c), INCA_OK);
    c.alpha = 1.001f;
    ck_assert_int_eq(model_config_check(&c), INCA_EINVAL);
    c.alpha = -0.001f;
    ck_assert_int_eq(model_config_check(&c), INCA_EINVAL);
    /* the defaults model.h documents: gcn, 2 layers, hidden 16, dropout 0.5, alpha 0.1, theta 0.5, K 10 */
    model_config_t dc;
    model_config_default(&dc);
    ck_assert(dc.kind == NN_GCN && dc.layers == 2 && dc.hidden == 16 && dc.K == 10);
    ck_assert(dc.dropout == 0.5f && dc.alpha == 0.1f && dc.theta == 0.5f);
    ck_assert(!dc.batchnorm && !dc.residual && !dc.transform_first);
    int k = -1;
    ck_assert_int_eq(model_kind_parse("sage", &k), INCA_OK);
    ck_assert_int_eq(k, NN_SAGE);
    ck_assert_int_eq(model_kind_parse("gat", &k), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "gat"));
    model_t *m = NULL;
    c = cfg_make(NN_GCN, 0, 8, 0.5f, 0, 0);
    ck_assert_int_eq(model_create(&c, 10, &m), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--layers"));
    c = cfg_make(NN_GCN, 2, 8, 1.5f, 0, 0);
    ck_assert_int_eq(model_create(&c, 10, &m), INCA_EINVAL);
    c = cfg_make(NN_GCN, 2, 8, 0.5f, 0, 0);
    ck_assert_int_eq(model_create(&c, 10, &m), INCA_OK);
    const float *l;
    float x[20 * FIN] = {0};
    ck_assert_int_eq(model_forward(m, 10, x, NULL, 0, 1, 0, &l), INCA_EINVAL);   /* gcn needs an operator */
    ck_assert_int_eq(model_forward(m, 11, x, NULL, 0, 1, 0, &l), INCA_EINVAL);   /* more rows than n_max */
    nn_agg_full_t full;
    nn_agg_t agg;
    fixture_t fx;
    fixture_make(&fx, 3);
    nn_agg_full_init(&agg, &full, &fx.gcn, NULL);
    ck_assert_int_eq(model_forward(m, NODES - 1, NULL, &agg, 0, 1, 0, &l), INCA_EINVAL);   /* no input */
    ck_assert_int_eq(model_forward(m, NODES - 1, x, &agg, 0, 1, 0, &l), INCA_EINVAL);   /* operator has NODES rows */
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "rows"));
    fixture_free(&fx);
    model_free(&m);
    ck_assert_ptr_null(m);
    model_free(&m);   /* NULL-safe */
}
END_TEST

START_TEST(test_alloc_failures) {
    /* every allocation of model_create may fail: the status is ENOMEM and nothing leaks (ASan) */
    const model_config_t cs[] = {cfg_make(NN_GCNII, 3, 4, 0.3f, 0, 0), cfg_make(NN_SAGE, 3, 4, 0.3f, 1, 1),
                                 cfg_make(NN_APPNP, 2, 4, 0.3f, 0, 0)};
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        int failures = 0;
        for (long k = 1; k < 400; k++) {
            model_t *m = NULL;
            inca_alloc_fail_after(k);
            int rc = model_create(&cs[c], 16, &m);
            inca_alloc_fail_after(0);
            if (rc == INCA_OK) { model_free(&m); break; }
            ck_assert_int_eq(rc, INCA_ENOMEM);
            ck_assert_ptr_null(m);
            failures++;
        }
        ck_assert_int_gt(failures, 10);
    }
}
END_TEST

/* SAGE by hand (mutation test): the library's float model against the layer written out in
 * double from its definition, h' = h W_root + mean_{j in N(i)} h_j W_neigh + b, with the mean
 * taken over the unnormalised adjacency here (nn_kind_norm(NN_SAGE)'s operator must be that
 * mean), the residual h' += h on the layer whose width does not change (the first one too),
 * and, in train mode, dropout on every layer's input (the first one too) by the mask rule of
 * nn/model.h: keep element e of layer l's input iff rng_hash_uniform(seed, step *
 * NN_STREAMS_PER_STEP + l, e) >= p, scaled by 1 / (1 - p). Both orders (Agg(h) W and
 * Agg(h W)) compute the same layer. */
static void ref_sage_layer(const csr_t *adj, const double *h, int64_t fin, int64_t fout, const float *wr,
                           const float *wn, const float *b, int relu, int res, double *out) {
    for (int64_t i = 0; i < NODES; i++) {
        double mean[FIN + 8] = {0}, deg = 0;
        for (int64_t e = adj->rowptr[i]; e < adj->rowptr[i + 1]; e++) {
            const double w = adj->val ? adj->val[e] : 1.0;
            deg += w;
            for (int64_t k = 0; k < fin; k++) mean[k] += w * h[adj->col[e] * fin + k];
        }
        for (int64_t k = 0; k < fin; k++) mean[k] = deg > 0 ? mean[k] / deg : 0;
        for (int64_t j = 0; j < fout; j++) {
            double s = b[j];
            for (int64_t k = 0; k < fin; k++) s += h[i * fin + k] * wr[k * fout + j] + mean[k] * wn[k * fout + j];
            if (res) s += h[i * fin + j];
            out[i * fout + j] = relu && s < 0 ? 0 : s;
        }
    }
}
static void ref_drop(const double *h, int64_t n, float p, uint64_t seed, uint64_t stream, double *out) {
    for (int64_t e = 0; e < n; e++)
        out[e] = rng_hash_uniform(seed, stream, (uint64_t)e) >= p ? h[e] / (1.0 - (double)p) : 0.0;
}
static const float *sage_param(model_t *m, const char *name) {
    for (int i = 0; i < model_nparams(m); i++)
        if (strcmp(model_param(m, i)->name, name) == 0) return model_param(m, i)->w;
    ck_abort_msg("no parameter %s", name);
    return NULL;
}

START_TEST(test_sage_forward_by_hand) {
    fixture_t fx;
    fixture_make(&fx, 5);
    csr_t a = {0}, at = {0};
    ck_assert_int_eq(nn_kind_norm(NN_SAGE), NN_NORM_MEAN);
    ck_assert_int_eq(nn_adj_build(&fx.adj, nn_kind_norm(NN_SAGE), &a, &at), INCA_OK);
    nn_agg_full_t full;
    nn_agg_t agg;
    nn_agg_full_init(&agg, &full, &a, at.rowptr ? &at : NULL);
    const uint64_t seed = 17, step = 4;
    /* (residual, dropout, transform_first, train) */
    const int cases[][4] = {{1, 0, 0, 0}, {1, 0, 1, 0}, {0, 1, 0, 1}, {0, 1, 1, 1}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        const float p = cases[t][1] ? 0.5f : 0.0f;
        model_config_t c = cfg_make(NN_SAGE, 2, FIN, p, 0, cases[t][0]);   /* FIN -> FIN -> CLS */
        c.transform_first = cases[t][2];
        model_t *m = NULL;
        ck_assert_int_eq(model_create(&c, NODES, &m), INCA_OK);
        rng_t r;
        rng_seed(&r, 100 + t);
        for (int i = 0; i < model_nparams(m); i++) {
            nn_param_t *P = model_param(m, i);
            for (int64_t k = 0; k < P->n; k++) P->w[k] = (float)(0.5 * rng_normal(&r));
        }
        const float *l;
        ck_assert_int_eq(model_forward(m, NODES, fx.xf, &agg, cases[t][3], seed, step, &l), INCA_OK);
        double x0[NODES * FIN], h1[NODES * FIN], h1d[NODES * FIN], want[NODES * CLS];
        if (p > 0) ref_drop(fx.xd, NODES * FIN, p, seed, step * NN_STREAMS_PER_STEP + 0, x0);
        else memcpy(x0, fx.xd, sizeof x0);
        ref_sage_layer(&fx.adj, x0, FIN, FIN, sage_param(m, "layer0.weight_root"), sage_param(m, "layer0.weight_neigh"),
                       sage_param(m, "layer0.bias"), 1, cases[t][0], h1);
        if (p > 0) ref_drop(h1, NODES * FIN, p, seed, step * NN_STREAMS_PER_STEP + 1, h1d);
        else memcpy(h1d, h1, sizeof h1d);
        ref_sage_layer(&fx.adj, h1d, FIN, CLS, sage_param(m, "layer1.weight_root"), sage_param(m, "layer1.weight_neigh"),
                       sage_param(m, "layer1.bias"), 0, 0, want);
        double num = 0, den = 0;
        for (int i = 0; i < NODES * CLS; i++) {
            num += (l[i] - want[i]) * (l[i] - want[i]);
            den += want[i] * want[i];
        }
        ck_assert_msg(den > 1e-6 && sqrt(num / den) < 1e-5, "case %zu (res %d, dropout %g, tf %d): relative error %g",
                      t, cases[t][0], p, cases[t][2], sqrt(num / (den > 0 ? den : 1)));
        model_free(&m);
    }
    csr_free(&a);
    csr_free(&at);
    fixture_free(&fx);
}
END_TEST

/* Glorot (Xavier) uniform initialisation, Glorot & Bengio 2010: a weight of fan_in x fan_out
 * draws from U(-b, b), b = sqrt(6 / (fan_in + fan_out)): every value within b, the largest of
 * hundreds of draws near b, the mean square b^2 / 3; biases start at 0 (a mutation test: b from
 * fan_in alone passed every test). */
START_TEST(test_glorot_init) {
    const int kinds[] = {NN_MLP, NN_SAGE, NN_GCNII};
    for (size_t t = 0; t < sizeof kinds / sizeof kinds[0]; t++) {
        model_config_t c;
        model_config_default(&c);
        c.kind = kinds[t];
        c.in_dim = 40;
        c.hidden = 24;
        c.out_dim = 3;
        c.layers = 2;
        c.seed = 11;
        model_t *m = NULL;
        ck_assert_int_eq(model_create(&c, 4, &m), INCA_OK);
        for (int p = 0; p < model_nparams(m); p++) {
            const nn_param_t *P = model_param(m, p);
            if (P->flags & NN_P_BIAS) {
                for (int64_t i = 0; i < P->n; i++) ck_assert_msg(P->w[i] == 0, "%s[%lld] starts at %g", P->name, (long long)i, P->w[i]);
                continue;
            }
            const double b = sqrt(6.0 / (double)(P->rows + P->cols));
            double mx = 0, sq = 0;
            for (int64_t i = 0; i < P->n; i++) {
                mx = fmax(mx, fabs(P->w[i]));
                sq += (double)P->w[i] * P->w[i];
            }
            sq /= (double)P->n;
            ck_assert_msg(mx <= b * (1 + 1e-6), "%s %s (%lld x %lld): |w| up to %g, bound %g", model_kind_name(c.kind), P->name,
                          (long long)P->rows, (long long)P->cols, mx, b);
            if (P->n >= 500) {   /* P(max < 0.95 b) = 0.95^n; the mean square's sd ~ 3% */
                ck_assert_msg(mx >= 0.95 * b, "%s %s: |w| only up to %g, bound %g", model_kind_name(c.kind), P->name, mx, b);
                ck_assert_msg(fabs(sq / (b * b / 3) - 1) < 0.15, "%s %s: mean square %g, expected %g", model_kind_name(c.kind),
                              P->name, sq, b * b / 3);
            }
        }
        model_free(&m);
    }
}
END_TEST

/* Sparse input dropout (model.h): the input's mask is mask 0, stream step * NN_STREAMS_PER_STEP,
 * one draw per stored nonzero in CSR order (keep e iff rng_hash_uniform(seed, stream, e) >= p,
 * kept values scaled by 1 / (1 - p)). A one-layer MLP's train-mode logits by hand from that rule
 * (a mutation test: the stream of mask 1, the next layer's, passed every test). */
START_TEST(test_sparse_dropout_stream) {
    fixture_t fx;
    fixture_make(&fx, 77);
    model_config_t c = cfg_make(NN_MLP, 1, 4, 0.5f, 0, 0);
    model_t *m = NULL;
    ck_assert_int_eq(model_create(&c, NODES, &m), INCA_OK);
    ck_assert_int_eq(model_set_sparse_input(m, &fx.xs), INCA_OK);
    const nn_param_t *W = model_param(m, 0), *B = model_param(m, 1);
    ck_assert(W->rows == FIN && W->cols == CLS && B->n == CLS);
    rng_t r;
    rng_seed(&r, 5);
    for (int k = 0; k < CLS; k++) B->w[k] = (float)rng_normal(&r);
    const float *l;
    ck_assert_int_eq(model_forward(m, NODES, NULL, NULL, 1, SEED, STEP, &l), INCA_OK);
    const double p = c.dropout;
    int kept = 0, dropped = 0;
    for (int64_t i = 0; i < NODES; i++)
        for (int k = 0; k < CLS; k++) {
            double want = B->w[k];
            for (int64_t e = fx.xs.rowptr[i]; e < fx.xs.rowptr[i + 1]; e++) {
                const int keep = rng_hash_uniform(SEED, (uint64_t)STEP * NN_STREAMS_PER_STEP, (uint64_t)e) >= (float)p;
                if (k == 0) keep ? kept++ : dropped++;
                if (keep) want += (double)fx.xs.val[e] / (1 - p) * W->w[fx.xs.col[e] * CLS + k];
            }
            ck_assert_msg(fabs(l[i * CLS + k] - want) <= 1e-5 * (1 + fabs(want)), "row %lld class %d: %.7g, by hand %.7g",
                          (long long)i, k, l[i * CLS + k], want);
        }
    ck_assert(kept > 3 && dropped > 3);   /* the mask matters */
    model_free(&m);
    fixture_free(&fx);
}
END_TEST

/* BatchNorm in eval mode (Ioffe & Szegedy 2015, sec. 3.1): the running statistics, not the
 * batch's: y = gamma (z - mean_run) / sqrt(var_run + eps) + beta. A two-layer MLP with BatchNorm
 * on its hidden layer, running statistics and gamma / beta set by hand, its eval logits in
 * double here; then a train forward (batch statistics) must give other logits and move the
 * running mean to (1 - momentum) mean_run + momentum mean_batch (a mutation test: an eval
 * forward normalising by the batch's statistics passed every test, both instances share it). */
START_TEST(test_bn_eval_running_stats) {
    fixture_t fx;
    fixture_make(&fx, 21);
    model_config_t c = cfg_make(NN_MLP, 2, 4, 0.0f, 1, 0);
    model_t *m = NULL;
    ck_assert_int_eq(model_create(&c, NODES, &m), INCA_OK);
    ck_assert_int_eq(model_nbuffers(m), 2);
    int64_t nb = 0;
    float *rmean = model_buffer(m, 0, &nb), *rvar = model_buffer(m, 1, &nb);
    ck_assert_int_eq(nb, 4);
    /* parameters in order: layer0.weight (no bias before BatchNorm), bn0.gamma, bn0.beta, layer1.weight, layer1.bias */
    const nn_param_t *W0 = model_param(m, 0), *G = model_param(m, 1), *Bt = model_param(m, 2), *W1 = model_param(m, 3),
                     *B1 = model_param(m, 4);
    ck_assert_str_eq(G->name, "bn0.gamma");
    ck_assert_str_eq(Bt->name, "bn0.beta");
    for (int k = 0; k < 4; k++) {
        rmean[k] = 0.2f * (float)(k - 1);
        rvar[k] = 0.5f + 0.75f * (float)k;
        G->w[k] = 0.8f + 0.1f * (float)k;
        Bt->w[k] = 0.05f * (float)(2 - k);
    }
    for (int k = 0; k < CLS; k++) B1->w[k] = 0.1f * (float)k;
    const float *l;
    ck_assert_int_eq(model_forward(m, NODES, fx.xf, NULL, 0, SEED, STEP, &l), INCA_OK);
    double want[NODES * CLS], h[4];
    for (int i = 0; i < NODES; i++) {
        for (int k = 0; k < 4; k++) {
            double z = 0;
            for (int t = 0; t < FIN; t++) z += fx.xd[i * FIN + t] * W0->w[t * 4 + k];
            const double y = G->w[k] * (z - rmean[k]) / sqrt((double)rvar[k] + KERN_BN_EPS) + Bt->w[k];
            h[k] = y > 0 ? y : 0;
        }
        for (int k = 0; k < CLS; k++) {
            want[i * CLS + k] = B1->w[k];
            for (int t = 0; t < 4; t++) want[i * CLS + k] += h[t] * W1->w[t * CLS + k];
            ck_assert_msg(fabs(l[i * CLS + k] - want[i * CLS + k]) <= 1e-5 * (1 + fabs(want[i * CLS + k])),
                          "eval logits[%d][%d] %g, running statistics by hand %g", i, k, l[i * CLS + k], want[i * CLS + k]);
        }
    }
    /* a train forward normalises by the batch and updates the running mean */
    double mu[4] = {0, 0, 0, 0}, before[4];
    for (int k = 0; k < 4; k++) before[k] = rmean[k];
    for (int i = 0; i < NODES; i++)
        for (int k = 0; k < 4; k++)
            for (int t = 0; t < FIN; t++) mu[k] += fx.xd[i * FIN + t] * W0->w[t * 4 + k] / NODES;
    ck_assert_int_eq(model_forward(m, NODES, fx.xf, NULL, 1, SEED, STEP, &l), INCA_OK);
    double diff = 0;
    for (int i = 0; i < NODES * CLS; i++) diff = fmax(diff, fabs(l[i] - want[i]));
    ck_assert_msg(diff > 1e-3, "a train forward gave the eval logits (diff %g)", diff);
    for (int k = 0; k < 4; k++) {
        const double r = (1 - KERN_BN_MOMENTUM) * before[k] + KERN_BN_MOMENTUM * mu[k];
        ck_assert_msg(fabs(rmean[k] - r) <= 1e-5, "running mean[%d] %g, by hand %g", k, rmean[k], r);
    }
    model_free(&m);
    fixture_free(&fx);
}
END_TEST

int main(void) {
    Suite *s = suite_create("nn");
    TCase *t = tcase_create("grad");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, test_grad_mlp);
    tcase_add_test(t, test_grad_gcn);
    tcase_add_test(t, test_grad_sage);
    tcase_add_test(t, test_grad_gcnii);
    tcase_add_test(t, test_grad_appnp);
    tcase_add_test(t, test_grad_bn_res);
    tcase_add_test(t, test_grad_transform_first);
    tcase_add_test(t, test_grad_affine_input);
    tcase_add_test(t, test_affine_input_same_maths);
    tcase_add_test(t, test_affine_sparse_dropout);
    tcase_add_test(t, test_grad_sparse_input);
    tcase_add_test(t, test_sparse_equals_dense);
    tcase_add_test(t, test_grad_loss);
    tcase_add_test(t, test_float_matches_double);
    tcase_add_test(t, test_gcnii_appnp_paper_forward);
    tcase_add_test(t, test_directed_graph_backward);
    tcase_add_test(t, test_dropout_masks_and_eval);
    tcase_add_test(t, test_sites_and_errors);
    tcase_add_test(t, test_alloc_failures);
    tcase_add_test(t, test_sage_forward_by_hand);
    tcase_add_test(t, test_glorot_init);
    tcase_add_test(t, test_sparse_dropout_stream);
    tcase_add_test(t, test_bn_eval_running_stats);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
