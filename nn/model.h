/* A GNN model: a stack of the layers of nn/layer.h with its parameters, gradients and a
 * workspace sized once for up to n_max rows, so forward and backward allocate nothing.
 * Tested in tests/test_nn.c (gradient checks of whole models in double, float vs double,
 * determinism) and through the trainers in tests/test_train.c.
 *
 * CAVEATS FIRST
 * - model_forward stores everything the backward needs inside the model; the returned logits
 *   pointer and every pointer handed to the aggregation operator stay valid until the next
 *   model_forward (or model_free). One forward, then at most one backward.
 * - model_backward OVERWRITES every gradient (no accumulation across calls); it requires the
 *   last forward to have been run with train = 1.
 * - Dropout masks are a pure function of (seed, step, mask number): drop mask j of a forward
 *   uses stream = step * NN_STREAMS_PER_STEP + j, with j = the index of the dropout in the
 *   model (input dropout of layer l is mask l for gcn/sage/mlp; gcnii: 0 = input, l = conv l,
 *   L+1 = before lin_out; appnp: 0 = input, 1 = hidden). Pass step = epoch for full-batch and a
 *   global step counter for mini-batch methods. Rows are numbered 0..n-1 within the call, so a
 *   batch gets masks of its own.
 * - Deterministic: same parameters, inputs, seed, step and thread count -> bit-identical.
 */
#ifndef INCA_NN_MODEL_H
#define INCA_NN_MODEL_H
#include <stdint.h>
#include "nn/layer.h"

#define NN_STREAMS_PER_STEP 1024u

struct kern_ctx;
struct kern_ctx *model_ctx(const model_t *m);   /* float instance only */

struct model_config {
    int kind;           /* NN_MLP, NN_GCN, NN_SAGE, NN_GCNII, NN_APPNP */
    int64_t in_dim;     /* input feature width */
    int64_t hidden;     /* hidden width */
    int64_t out_dim;    /* classes */
    int layers;         /* mlp/gcn/sage: number of layers incl. the output layer (>= 1);
                           gcnii: number of GCN2 convolutions (>= 1); appnp: ignored (2-layer MLP) */
    float dropout;      /* in [0,1) */
    float alpha;        /* gcnii initial-residual weight / appnp teleport (0.1) */
    float theta;        /* gcnii: β_l = log(θ/l + 1) (0.5) */
    int K;              /* appnp propagation steps (10) */
    int batchnorm;      /* gcn/sage/mlp: BatchNorm on hidden layers */
    int residual;       /* gcn/sage/mlp: residual on hidden layers of equal width */
    int transform_first;/* gcn/sage layers that narrow the width (fin > fout): compute Agg(in W)
                           instead of Agg(in) W (same maths for a LINEAR operator, far cheaper
                           SpMM); the site then has width fout and its input is in W, so its
                           backward is called even at site 0. Full-batch sets it; operators with
                           an additive baseline (IncAgg) must leave it 0 */
    int input_transform_first; /* gcn layer 0 that narrows the width, on an operator with a base
                           hook (nn/layer.h, "Affine input sites"): rows W + Lin(D W) instead of
                           Agg(in) W; with any other operator the layer aggregates first */
    uint64_t seed;      /* parameter initialisation (Glorot uniform weights, zero biases) */
};

/* Defaults: gcn, 2 layers, hidden 16, dropout 0.5, alpha 0.1, theta 0.5, K 10; in_dim and
 * out_dim must still be set. */
void model_config_default(model_config_t *c);
/* The models' names, indexed by NN_* kind (for core/args.h args_word and the JSON), and the
 * list an error message gives. model_kind_parse: name -> kind (INCA_EINVAL naming the value
 * otherwise), for names read back from a store or a file. */
extern const char *const model_kind_words[NN_KIND_COUNT];
#define MODEL_KIND_EXPECT "mlp|gcn|sage|gcnii|appnp"
int model_kind_parse(const char *name, int *kind);
const char *model_kind_name(int kind);
/* INCA_EINVAL with a message naming the bad field when cfg cannot build a model. */
int model_config_check(const model_config_t *cfg);

/* Aggregation sites of a model built from cfg (nn/layer.h), and the width of site s. */
int model_num_sites(const model_config_t *cfg);
int64_t model_site_dim(const model_config_t *cfg, int site);

/* Declarations (float instance, names without suffix; see nn/nn_types.inc):
 *
 * int model_create(const model_config_t *cfg, int64_t n_max, model_t **out);
 *   Parameters initialised from cfg->seed; workspace for up to n_max rows. *out owned by the
 *   caller (model_free). INCA_EINVAL for a bad cfg, INCA_ENOMEM when out of memory.
 * int model_create_on(const model_config_t *cfg, int64_t n_max, kern_ctx_t *kc, model_t **out);
 *   The same on the kernel context kc (kernels/backend.h; borrowed, must outlive the model):
 *   parameters, gradients and workspace live in kc's memory and every op runs on kc, so on
 *   a CUDA context every pointer the model hands out (logits, nn_param_t w/g, model_buffer)
 *   is device memory and x / dlogits must be too. model_create = model_create_on(kc_cpu()).
 * void model_free(model_t **m);  NULL-safe, sets *m = NULL.
 * kern_ctx_t *model_ctx(const model_t *m);  the context it runs on.
 *
 * int model_forward(model_t *m, int64_t n, const float *x, const nn_agg_t *agg, int train,
 *                   uint64_t seed, uint64_t step, const float **logits);
 *   x: n x in_dim rows (borrowed, must stay valid until model_backward returns);
 *   n <= n_max; agg may be NULL only for mlp. train = 1: dropout on, BatchNorm on batch
 *   statistics (and running statistics updated); 0: eval mode. *logits -> n x out_dim inside
 *   the model (valid until the next forward).
 * int model_backward(model_t *m, const float *dlogits, const nn_agg_t *agg);
 *   dlogits: n x out_dim gradient of the loss w.r.t. the logits of the last forward (train=1).
 *   Fills every parameter gradient (overwrite).
 * int model_set_sparse_input(model_t *m, const csr_t *xs);
 *   Use xs (n x in_dim CSR, values or all-ones; borrowed, must outlive every later forward and
 *   backward) as the model input instead of the dense x, which model_forward then ignores (pass
 *   NULL) and n must equal xs->n_rows. The first layer computes X W by SpMM and drops out only
 *   the stored nonzeros (mask entry = nonzero position, stream as for input dropout): the same
 *   distribution as dense dropout, different draws. Bag-of-words features (Cora 1.3% dense)
 *   become ~50x cheaper. Needs a first layer that multiplies its input first: mlp, gcnii,
 *   appnp, gcn/sage with transform_first and in_dim > hidden, or a gcn with
 *   input_transform_first on an affine operator (INCA_EINVAL otherwise). xs = NULL returns to
 *   dense input; the model keeps its buffers (a quarter more than the largest input so far),
 *   so a trainer that sets each batch's rows allocates nothing once they settle. INCA_ENOMEM
 *   when out of memory.
 * int model_nparams(const model_t *m);  nn_param_t *model_param(model_t *m, int i);
 *   The parameters in a fixed order (pointers stable for the model's life).
 * const model_config_t *model_config(const model_t *m);
 */
#endif
