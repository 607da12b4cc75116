/* The full-graph aggregation operator (SpMM with a normalised adjacency) and the choice of
 * normalisation per model kind. Tested in tests/test_nn.c (operator against a dense product,
 * its backward against the transpose) and through the trainers. */
#include "nn/layer.h"
#include "kernels/kernels.h"
#include "kernels/backend.h"
#include "core/status.h"
#include <string.h>

int nn_kind_norm(int kind) {
    switch (kind) {
    case NN_GCN: case NN_GCNII: case NN_APPNP: return NN_NORM_GCN;
    case NN_SAGE: return NN_NORM_MEAN;
    default: return NN_NORM_NONE;
    }
}

static int agg_full_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw,
                            const float *in, float *out) {
    const nn_agg_full_t *a = ctx;
    (void)site; (void)in_raw;
    if (n != a->a->n_rows)
        return inca_fail(INCA_EINVAL, "full aggregation: %lld rows given, graph has %lld", (long long)n,
                         (long long)a->a->n_rows);
    return kern_spmm(a->a, in, f, 1.0f, 0.0f, out);
}

static int agg_full_backward(void *ctx, int site, int64_t n, int64_t f, const float *dout, float *din) {
    const nn_agg_full_t *a = ctx;
    (void)site;
    if (n != a->a->n_rows)
        return inca_fail(INCA_EINVAL, "full aggregation: %lld rows given, graph has %lld", (long long)n,
                         (long long)a->a->n_rows);
    return kern_spmm_t(a->a, a->at, dout, f, 1.0f, 0.0f, din);
}

void nn_agg_full_init(nn_agg_t *op, nn_agg_full_t *full, const csr_t *a, const csr_t *at) {
    full->a = a;
    full->at = at;
    op->forward = agg_full_forward;
    op->backward = agg_full_backward;
    op->ctx = full;
    op->base = NULL;
}

static int agg_dev_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    nn_agg_dev_t *d = ctx;
    (void)site; (void)in_raw;
    if (n != kc_mat_rows(d->a)) return inca_fail(INCA_ERR, "device operator: %lld rows, Â has %lld", (long long)n,
                                                 (long long)kc_mat_rows(d->a));
    return kc_spmm(d->ctx, d->a, NULL, in, f, 1.0f, 0.0f, out);
}

static int agg_dev_backward(void *ctx, int site, int64_t n, int64_t f, const float *dout, float *din) {
    nn_agg_dev_t *d = ctx;
    (void)site; (void)n;
    return kc_spmm(d->ctx, d->at ? d->at : d->a, NULL, dout, f, 1.0f, 0.0f, din);
}

void nn_agg_dev_init(nn_agg_t *op, nn_agg_dev_t *dev, struct kern_ctx *ctx, struct kern_mat *a, struct kern_mat *at) {
    dev->ctx = ctx;
    dev->a = a;
    dev->at = at;
    op->forward = agg_dev_forward;
    op->backward = agg_dev_backward;
    op->ctx = dev;
    op->base = NULL;
}

int nn_adj_build(const csr_t *adj, int norm, csr_t *a, csr_t *at) {
    int rc;
    memset(a, 0, sizeof *a);
    memset(at, 0, sizeof *at);
    if (!adj->rowptr || adj->n_rows < 1)
        return inca_fail(INCA_EINVAL, "the dataset has no graph: this model needs one (use --model mlp)");
    switch (norm) {
    case NN_NORM_GCN:
        /* D^-1/2 (A + I) D^-1/2 is symmetric when A is (in double, d_i d_j = d_j d_i exactly); on
         * a directed graph the backward needs Âᵀ, which is not Â */
        if ((rc = csr_gcn_norm(adj, a))) return rc;
        if (csr_is_symmetric_values(a)) return INCA_OK;
        if ((rc = csr_transpose(a, at))) { csr_free(a); return rc; }
        return INCA_OK;
    case NN_NORM_MEAN:
        if ((rc = csr_mean_norm(adj, a))) return rc;
        if ((rc = csr_transpose(a, at))) { csr_free(a); return rc; }
        return INCA_OK;
    default:
        return inca_fail(INCA_EINVAL, "nn_adj_build: no normalisation for norm %d", norm);
    }
}
