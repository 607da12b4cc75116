/* The float instance of the nn/ layer maths (nn/nn_impl.inc with kernels/kernels.h as the
 * primitives) and the model configuration helpers. Tested in tests/test_nn.c (the same maths
 * in double against finite differences; this instance against the double one). */
#include "nn/model.h"
#include "kernels/kernels.h"
#include "core/status.h"
#include <string.h>

static const char *const kind_names[NN_KIND_COUNT] = {"mlp", "gcn", "sage", "gcnii", "appnp"};

void model_config_default(model_config_t *c) {
    memset(c, 0, sizeof *c);
    c->kind = NN_GCN;
    c->layers = 2;
    c->hidden = 16;
    c->dropout = 0.5f;
    c->alpha = 0.1f;
    c->theta = 0.5f;
    c->K = 10;
}

int model_kind_parse(const char *name, int *kind) {
    for (int k = 0; k < NN_KIND_COUNT; k++)
        if (name && strcmp(name, kind_names[k]) == 0) { *kind = k; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--model: expected mlp|gcn|sage|gcnii|appnp, got '%s'", name ? name : "(null)");
}

const char *model_kind_name(int kind) {
    return kind >= 0 && kind < NN_KIND_COUNT ? kind_names[kind] : "?";
}

int model_config_check(const model_config_t *c) {
    if (c->kind < 0 || c->kind >= NN_KIND_COUNT) return inca_fail(INCA_EINVAL, "model: unknown kind %d", c->kind);
    if (c->in_dim < 1) return inca_fail(INCA_EINVAL, "model: input width must be >= 1 (dataset without features?), got %lld", (long long)c->in_dim);
    if (c->out_dim < 1) return inca_fail(INCA_EINVAL, "model: classes must be >= 1, got %lld", (long long)c->out_dim);
    if (c->hidden < 1) return inca_fail(INCA_EINVAL, "--hidden: expected >= 1, got %lld", (long long)c->hidden);
    if (c->kind != NN_APPNP && c->layers < 1) return inca_fail(INCA_EINVAL, "--layers: expected >= 1, got %d", c->layers);
    if (!(c->dropout >= 0 && c->dropout < 1)) return inca_fail(INCA_EINVAL, "--dropout: expected a value in [0,1), got %g", (double)c->dropout);
    if (!(c->alpha >= 0 && c->alpha <= 1)) return inca_fail(INCA_EINVAL, "--alpha: expected a value in [0,1], got %g", (double)c->alpha);
    if (c->kind == NN_GCNII && !(c->theta > 0)) return inca_fail(INCA_EINVAL, "--theta: expected > 0, got %g", (double)c->theta);
    if (c->kind == NN_APPNP && (c->K < 0 || c->K > 1000)) return inca_fail(INCA_EINVAL, "--K: expected 0..1000, got %d", c->K);
    return INCA_OK;
}

int model_num_sites(const model_config_t *c) {
    switch (c->kind) {
    case NN_GCN: case NN_SAGE: case NN_GCNII: return c->layers;
    case NN_APPNP: return c->K;
    default: return 0;
    }
}

int64_t model_site_dim(const model_config_t *c, int site) {
    if (site < 0 || site >= model_num_sites(c)) return 0;
    switch (c->kind) {
    case NN_GCN: case NN_SAGE: {
        const int64_t fin = site == 0 ? c->in_dim : c->hidden;
        const int64_t fout = site == c->layers - 1 ? c->out_dim : c->hidden;
        return c->transform_first && fin > fout ? fout : fin;
    }
    case NN_GCNII: return c->hidden;
    case NN_APPNP: return c->out_dim;
    default: return 0;
    }
}

/* y = A x with A's pattern and the given values (a view; kern_spmm allocates nothing). */
static int nn_spmm_v(const csr_t *a, const float *vals, const float *x, int64_t f, float *y) {
    csr_t v = *a;
    v.val = (float *)vals;
    v.owned = 0;
    return kern_spmm(&v, x, f, 1.0f, 0.0f, y);
}

#define NN_REAL float
#define NN_(x) x
#define NN_SPMM_V nn_spmm_v
#define NN_GEMM kern_gemm
#define NN_AXPBY kern_axpby
#define NN_ADD_BIAS kern_add_bias
#define NN_BIAS_GRAD kern_bias_grad
#define NN_RELU kern_relu
#define NN_RELU_GRAD kern_relu_grad
#define NN_DROPOUT kern_dropout
#define NN_DROPOUT_GRAD kern_dropout_grad
#include "nn/nn_impl.inc"
