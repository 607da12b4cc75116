/* GNN layers with hand-written backward: the aggregation contract every trainer plugs into,
 * trainable parameters, and the full-graph aggregation operator (SpMM with a normalised
 * adjacency). The layer maths lives in nn/nn_impl.inc, compiled in float for the library
 * (nn/model.c) and in double by tests/test_nn.c for central-difference gradient checks.
 *
 * CAVEATS FIRST
 * - Layers never touch a graph. Every use of the graph goes through an aggregation operator
 *   (nn_agg_t) that the trainer supplies, so full-batch, Cluster-GCN, GAS and IncAgg share the
 *   same layer forward/backward code and differ only in their operator.
 * - An operator maps n rows to n rows: the rows are the nodes the model is run on (the whole
 *   graph for full-batch, the batch B for mini-batch methods). Halo rows, histories and global
 *   baselines are the operator's business, not the layer's.
 * - Feature widths are row-major float32, `f` columns, contiguous (leading dimension f).
 *
 * THE LAYERS (σ = ReLU on hidden layers, identity on the output layer; "drop" = inverted
 * dropout in training mode with mask seed/stream as nn/model.h says; Agg = the operator)
 *   mlp    H' = σ(drop(H) W + b)                               (no aggregation site)
 *   gcn    H' = σ(Agg(drop(H)) W + b)                          Agg = Â = D̃^-½(A+I)D̃^-½
 *   sage   H' = σ(drop(H) W_root + Agg(drop(H)) W_neigh + b)   Agg = row-mean of A
 *   gcnii  H0 = relu(drop(X) W_in + b_in); per conv l = 1..L:
 *          S  = (1-α) Agg(drop(H)) + α H0;  H' = relu((1-β_l) S + β_l S W_l),
 *          β_l = log(θ/l + 1)  (PyG GCN2Conv, no bias); logits = drop(H) W_out + b_out
 *   appnp  Z0 = mlp2(X) = drop(relu(drop(X) W1 + b1)) W2 + b2;
 *          K steps Z_{k+1} = (1-α) Agg(Z_k) + α Z0   (Agg = Â, no dropout inside)
 * Options for gcn/sage/mlp hidden layers: BatchNorm (batch statistics in training, running
 * statistics with momentum 0.1 in eval) after the linear map, then a residual H' += drop(H)
 * when widths match, then σ (GAS's ordering).
 *
 * AGGREGATION SITES
 * Each call of Agg inside a model is a numbered site: gcn/sage site l = layer l (0..L-1);
 * gcnii site l-1 = conv l; appnp site k = propagation step k (0..K-1); mlp has none.
 * model_num_sites / model_site_dim (nn/model.h) give the count and each site's width f, so a
 * trainer can size one history table / baseline per site.
 *
 *   forward(ctx, site, n, f, in_raw, in, out): out[n x f] = Agg(in).
 *     in_raw is the site's input before dropout (equal to `in` when there is no dropout, in
 *     eval mode, and for appnp): what GAS pushes to its history and what an IncAgg refresh
 *     snapshots (S^l); `in` is after dropout: what IncAgg's Δ = in − S^l_B uses.
 *     Both stay valid and unchanged until model_backward returns (they live in the model's
 *     workspace), so an operator may keep pointers to them for its backward.
 *   backward(ctx, site, n, f, dout, din): din[n x f] = Aggᵀ dout (overwrite, not accumulate),
 *     i.e. the gradient of the site input (`in`) through the operator, treating anything the
 *     operator added from outside the batch (histories, baselines, halo features) as constant.
 *     Never called for a site whose input is the model input x (gcn/sage site 0 without
 *     transform_first, see nn/model.h): no gradient flows into features. May be NULL when the model is only used in eval mode.
 *   Both return INCA_OK or an inca status with a message (propagated by the model).
 *   Sites are visited in increasing order in forward and decreasing order in backward, exactly
 *   once per model_forward / model_backward.
 *
 * AFFINE INPUT SITES (model_config.input_transform_first; the mini-batch trainers' option
 * --input-layer transform-first)
 *   base(ctx, site, n, f, &b), at a gcn site 0 (its input is the model input x, width f =
 *   in_dim), says the operator is Agg(in) = rows + Lin(in − b.residual·in_raw): rows n x f of
 *   the operator's, dense (b.rows) or a CSR on the host (b.sparse; IncAgg's sparse M^0), valid
 *   until model_backward returns, or none (both NULL); residual 0 or 1; Lin linear. The layer then computes Agg(in) W = rows W + Lin(D W), D = in − residual·in_raw
 *   (dropout's change of x for IncAgg, whose rows are M^0_B = (Â x)_B; drop(x) for Cluster-GCN,
 *   no rows), by calling forward(ctx, site, n, fout, U, U, out) for out = Lin(U) at the
 *   narrower width fout, and backward for Linᵀ; its weight gradient is Dᵀ Linᵀ dz + rowsᵀ dz.
 *   The same maths as Agg(in) W, with the wide aggregation replaced by one at fout, and D sparse
 *   when the model has a sparse input (model_set_sparse_input). When D is zero (residual 1
 *   without dropout: eval mode) forward is not called at all: z = rows W (an evaluation pass
 *   may give the whole graph's rows and no forward at that width).
 *
 * Examples of operators: full-batch Agg = Â H (nn_agg_full below); Cluster-GCN Agg = Â_BB H_B;
 * GAS Agg = Â_{B,B∪halo} [H_B; hist_halo] with backward (Â_{B,B∪halo})ᵀ restricted to the
 * first |B| columns; IncAgg Agg = M_B + Â_BB (in − S_B) with backward Â_BBᵀ.
 *
 * Tested in tests/test_nn.c: every layer kind, BatchNorm and residual, in double against
 * central finite differences (relative error < 1e-6), and the float instance against the
 * double instance. */
#ifndef INCA_NN_LAYER_H
#define INCA_NN_LAYER_H
#include <stdint.h>
#include "graph/csr.h"

/* Model kinds. */
enum { NN_MLP = 0, NN_GCN = 1, NN_SAGE = 2, NN_GCNII = 3, NN_APPNP = 4, NN_KIND_COUNT = 5 };

/* Parameter flags (nn_param_t.flags), for weight decay policies and optimisers. */
enum {
    NN_P_FIRST = 1,   /* belongs to the first layer that sees the input features */
    NN_P_BIAS = 2,    /* a bias vector */
    NN_P_CONV = 4,    /* a GCNII convolution weight (paper: weight decay 0.01 vs 5e-4 dense) */
    NN_P_BN = 8,      /* a BatchNorm scale or shift */
    NN_P_DENSE = 16   /* a dense (linear) weight that is not a GCNII conv weight */
};

/* Which normalised adjacency a model kind aggregates with. */
enum { NN_NORM_NONE = 0, NN_NORM_GCN = 1, NN_NORM_MEAN = 2 };

typedef struct model_config model_config_t;   /* nn/model.h */

/* Room for a sparse matrix of up to rows with nnz nonzeros (A W), and for the transposed
 * products of up to t_rows with t_nnz (Aᵀ dy: a trainer's batch), see model_reserve_sparse. */
typedef struct nn_sparse_room {
    int64_t rows, nnz, t_rows, t_nnz;
} nn_sparse_room_t;

#define NN_REAL float
#define NN_(x) x
#include "nn/nn_types.inc"
#undef NN_
#undef NN_REAL

/* Normalisation a model kind needs (NN_NORM_NONE for mlp). */
int nn_kind_norm(int kind);

/* The full-graph operator: Agg(H) = Â H with kern_spmm, backward Âᵀ dY with kern_spmm_t.
 * `a` is the normalised adjacency (n x n); `at` its transpose, or NULL when Â is symmetric
 * (GCN). Both are borrowed: they must outlive the operator. Used by the full-batch trainer, by
 * evaluation (full inference) and by IncAgg refreshes. */
typedef struct nn_agg_full {
    const csr_t *a, *at;
} nn_agg_full_t;
/* Fill `op` so that op->ctx = full (which must outlive op). */
void nn_agg_full_init(nn_agg_t *op, nn_agg_full_t *full, const csr_t *a, const csr_t *at);

/* The same operator on a kernel context (kernels/backend.h): Â and Âᵀ as matrices of ctx (Âᵀ
 * NULL when Â is symmetric), every product by kc_spmm, so it runs wherever the model runs.
 * All borrowed. */
struct kern_ctx;
struct kern_mat;
typedef struct nn_agg_dev {
    struct kern_ctx *ctx;
    struct kern_mat *a, *at;
} nn_agg_dev_t;
void nn_agg_dev_init(nn_agg_t *op, nn_agg_dev_t *dev, struct kern_ctx *ctx, struct kern_mat *a, struct kern_mat *at);

/* Build the normalised adjacency for `norm` from an unnormalised adjacency `adj` (self-loops
 * absent): NN_NORM_GCN -> csr_gcn_norm, and its transpose in `at` only when Â is not symmetric
 * (a directed graph; at stays empty otherwise); NN_NORM_MEAN -> csr_mean_norm and its transpose
 * in `at`. Every backward uses `at` when it is there. Outputs are owned (csr_free). */
int nn_adj_build(const csr_t *adj, int norm, csr_t *a, csr_t *at);
#endif
