/* The float instance of the nn/ layer maths (nn/nn_impl.inc with kernels/kernels.h as the
 * primitives) and the model configuration helpers. Tested in tests/test_nn.c (the same maths
 * in double against finite differences; this instance against the double one). */
#include "nn/model.h"
#include "kernels/backend.h"
#include "core/status.h"
#include <string.h>

const char *const model_kind_words[NN_KIND_COUNT] = {"mlp", "gcn", "sage", "gcnii", "appnp"};

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
        if (name && strcmp(name, model_kind_words[k]) == 0) { *kind = k; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--model: expected " MODEL_KIND_EXPECT ", got '%s'", name ? name : "(null)");
}

const char *model_kind_name(int kind) {
    return kind >= 0 && kind < NN_KIND_COUNT ? model_kind_words[kind] : "?";
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

/* The float instance runs on a kernel context (kernels/backend.h): every primitive is a kc_*
 * op on m->kc, memory comes from kc_alloc (device memory on a CUDA context). Statuses of
 * void-shaped ops are sticky in the context and checked after each pass (NN_STATUS). */
static void *nn_kc_alloc(kern_ctx_t *kc, size_t bytes) {
    void *p = NULL;
    return kc_alloc(kc, KERN_MEM_DEVICE, bytes, &p) == INCA_OK ? p : NULL;
}

#define NN_REAL float
#define NN_(x) x
#define NN_ALLOC(m, bytes) nn_kc_alloc((m)->kc, (size_t)(bytes))
#define NN_WS_TAG(m, tag) kc_mem_tag((m)->kc, (tag))
#define NN_RELEASE(m, p) kc_release((m)->kc, KERN_MEM_DEVICE, (p))
#define NN_UPLOAD(m, dst, src, bytes) kc_copy((m)->kc, (dst), (src), (size_t)(bytes), KERN_H2D, KERN_STREAM_COMPUTE)
#define NN_ZERO(m, p, bytes) kc_zero((m)->kc, (p), (size_t)(bytes), KERN_STREAM_COMPUTE)
#define NN_GATHER1(m, n, src, perm, dst) kc_gather_rows((m)->kc, KERN_F32, (src), 1, (perm), 0, (n), (dst))
#define NN_MAT_T kern_mat_t *
#define NN_MAT_FREE(m, pa) kc_mat_free((m)->kc, (pa))
#define NN_MAT_CREATE(m, rows, cols, nnz, out) kc_mat_create((m)->kc, (rows), (cols), (nnz), (out))
#define NN_MAT_SET(m, pmat, a) kc_mat_set((m)->kc, *(pmat), (a), KERN_STREAM_COMPUTE)
#define NN_STATUS(m) kc_status((m)->kc)
#define NN_DEFAULT_CTX kc_cpu()
#define NN_SPMM_V(a, vals, x, f, y) kc_spmm(m->kc, (a), (vals), (x), (f), 1.0f, 0.0f, (y))
#define NN_GEMM(...) kc_gemm(m->kc, __VA_ARGS__)
#define NN_AXPBY(...) kc_axpby(m->kc, __VA_ARGS__)
#define NN_ADD_BIAS(...) kc_add_bias(m->kc, __VA_ARGS__)
#define NN_BIAS_GRAD(...) kc_bias_grad(m->kc, __VA_ARGS__)
#define NN_RELU(...) kc_relu(m->kc, __VA_ARGS__)
#define NN_RELU_GRAD(...) kc_relu_grad(m->kc, __VA_ARGS__)
#define NN_DROPOUT(...) kc_dropout(m->kc, __VA_ARGS__)
#define NN_DROPOUT_GRAD(...) kc_dropout_grad(m->kc, __VA_ARGS__)
#define NN_BIAS_RELU(...) kc_bias_relu(m->kc, __VA_ARGS__)
#define NN_RELU_DROP_GRAD(...) kc_relu_drop_grad(m->kc, __VA_ARGS__)
#define NN_BN_FORWARD(...) kc_bn_forward(m->kc, __VA_ARGS__)
#define NN_BN_BACKWARD(...) kc_bn_backward(m->kc, __VA_ARGS__)
#include "nn/nn_impl.inc"

kern_ctx_t *model_ctx(const model_t *m) { return m->kc; }
