/* The memory-enhanced aggregation operators of mini-batch training (ARCHITECTURE.md, "IncAgg,
 * precisely"): Cluster-GCN, GAS and IncAgg, their history tables (one per aggregation site, in a
 * NUMA-aware arena), the IncAgg baselines M = Â S and their refresh. The model (nn/) calls the
 * operator once per aggregation site through agg_forward / agg_backward, whose signatures are
 * those of nn_agg_t (nn/layer.h); this module knows nothing of models: the caller describes the
 * sites (their widths, and which read the model input x).
 *
 *   cluster  Agg = Â_BB in                     (Â_BB as the loader built it: with
 *                                               batch_opts.renorm the batch subgraph is
 *                                               renormalised on itself, Cluster-GCN as
 *                                               published; without, the global Â restricted)
 *   gas      Agg = Â_BB in + Â_{B,halo} H_halo  H_halo = exact rows of x at a site reading x,
 *                                               else the history (pulled, no gradient);
 *                                               history rows of B <- in_raw (pushed)
 *   incagg   Agg = M_B + Â_BB (in − S_B)        M = Â S, S the snapshot of the site's input at
 *                                               the last refresh; at a site reading x, S = X (so
 *                                               Δ = in − in_raw, zero without dropout) and
 *                                               M^0 = ÂX is computed once at creation
 *   backward of all three: din = Â_BBᵀ dout (histories, baselines and halo are constants).
 *
 * IncAgg refresh, and where its snapshot comes from (`--refresh-source`):
 *   AGG_SRC_PUSH       every step pushes in_raw of its batch rows into the push buffer P;
 *                      agg_refresh does S <- P, then M <- Â S (one no-grad SpMM per site). With
 *                      single_buffer (refresh exactly once per epoch, every node in one batch per
 *                      epoch) the step pushes into S itself after reading S_B for Δ: no P tables.
 *   AGG_SRC_RECOMPUTE  no pushes and no P tables; the refresh is a layer-wise eval-mode forward
 *                      pass of the model over the whole graph with the current weights, run with
 *                      agg_refresh_forward as its operator: each site stores S = in, M = Â in
 *                      (and returns Â in, so an evaluation due at the same time shares the pass).
 *                      With relax w < 1 every refresh after agg_snapshot_taken moves S and M a
 *                      fraction w of the way: S <- S + w (in − S), M <- M + w (Â in − M) (= Â S still).
 *                      Why: a refresh replaces every out-of-batch row at once, like a Jacobi
 *                      sweep; on graphs where most of a row's mass comes from outside its batch
 *                      the weights and the snapshot then overshoot each other epoch by epoch
 *                      (issue 33: a hard csbm at 50% where full-batch reaches 76%). Push
 *                      refreshes are not relaxed: their rows already change batch by batch.
 *   Both sources start from agg_refresh_forward's exact snapshot of the initial model.
 * Invariant between refreshes (S frozen): Agg = Â_BB in + Â_{B,V∖B} S_{V∖B}.
 * With bf16 tables, M, S and P are rounded to bf16 when stored; the residual subtracts the stored
 * S. A push refresh of bf16 tables reads S in bf16 and writes M in row panels through a bounded
 * fp32 scratch (AGG_PANEL_BYTES), so bf16 halves the operator's memory.
 *
 * CAVEATS FIRST
 * - x, a and every batch are borrowed: they must outlive the operator (batches: until the next
 *   agg_set_batch). Tables and scratch are owned by the operator: in its NUMA arena on the CPU,
 *   in the context's device memory otherwise (kern_ctx, kernels/backend.h; every op of the
 *   operator runs through the context's table).
 * - Not thread-safe; one operator per training run.
 * Tested in test_incagg.c (refresh after every step equals GAS; one batch of every node equals
 * full-batch; M^0 = ÂX; R > 1 against a double-precision reference of the invariant for both
 * sources; bf16 bytes) and test_memory.c (tables). */
#ifndef INCA_MEMORY_AGG_H
#define INCA_MEMORY_AGG_H
#include <stdint.h>
#include "graph/csr.h"
#include "graph/batch.h"
#include "memory/arena.h"
#include "memory/history.h"

enum { AGG_CLUSTER = 0, AGG_GAS = 1, AGG_INCAGG = 2 };
enum { AGG_SRC_PUSH = 0, AGG_SRC_RECOMPUTE = 1 };
#define AGG_MAX_SITES 256
#define AGG_MAX_EXTRA 3   /* per-batch arrays a caller uploads with the batch (labels, loss rows, feature rows) */
/* The fp32 row panel a bf16 push refresh (and M^0 in bf16) goes through: n/16 rows, at least
 * AGG_PANEL_MIN_ROWS and at most AGG_PANEL_BYTES (so at most 1/8 of a bf16 table on a graph of
 * 16k nodes or more). */
#define AGG_PANEL_BYTES ((int64_t)8 << 20)
#define AGG_PANEL_MIN_ROWS 1024

/* "cluster" | "gas" | "incagg" (the flag words are nn/train_common.h's train_method_words). */
const char *agg_method_name(int method);
/* "push" | "recompute" (INCA_EINVAL naming --refresh-source otherwise). */
int agg_source_parse(const char *s, int *source);
const char *agg_source_name(int source);

typedef struct agg_config {
    int method;              /* AGG_CLUSTER | AGG_GAS | AGG_INCAGG */
    int source;              /* incagg: AGG_SRC_PUSH | AGG_SRC_RECOMPUTE */
    int single_buffer;       /* incagg with push: see above (ignored for recompute) */
    float relax;             /* incagg recompute: see above; 0 or 1 (or any other value outside
                                (0, 1)): a refresh replaces S and M */
    hist_dtype_t dtype;      /* history tables, baselines and snapshots */
    int nsites;              /* aggregation sites, <= AGG_MAX_SITES */
    const int64_t *dims;     /* nsites widths (copied) */
    const uint8_t *fixed;    /* nsites flags, 1: the site's input is the model input x (copied) */
    int64_t n, in_dim;
    const float *x;          /* n x in_dim model input (borrowed; the context's memory) */
    const csr_t *a;          /* Â, n x n (borrowed, host) */
    int64_t nb_max, halo_max;   /* the largest batch and halo (batch_loader_limits) */
    struct kern_ctx *kc;     /* where tables, scratch and every op live (NULL: the CPU) */
    struct kern_mat *a_m;    /* Â on kc (borrowed; NULL: the operator makes its own) */
    int host_tables;         /* on a device context: keep the tables in host memory, rows moved
                                through a pinned stage per batch (--history-location host);
                                the push refresh and M^0 = ÂX then run on the CPU */
    const float *x_host;     /* with host_tables: x on the host */
    int64_t extra_bytes[AGG_MAX_EXTRA];   /* off the CPU: room for the caller's per-batch arrays */
    int64_t nnz_max;         /* off the CPU: the most nonzeros of Â_BB / Â_BBᵀ / Â_{B,halo} of
                                any batch (they are uploaded into matrices of this capacity) */
    int64_t pass_width, pass_buffers;   /* agg_pass_buffer's buffers 0 .. pass_buffers-1 (at most
                                2) made at creation, pass_width wide, before the tables: held
                                before training, where a device budget sees them, and first to
                                anonymous memory under a spill budget (tables spill before them);
                                0: at their first use */
    hist_dtype_t pass_dtype; /* the pass buffers' type (HIST_F32, the default, or HIST_BF16) */
    int64_t panel_bytes;     /* bf16: the row panel's size (0: the rule above; tests set it small) */
    const void *m0;          /* incagg: M^0 = ÂX already computed (n x in_dim of dtype, host memory,
                                borrowed: the store's layout, nn/layout.h); NULL: computed here.
                                Borrowed M^0 is not a table of the operator: not in table_bytes,
                                not in agg_table (checkpoints skip it), see agg_m0 */
    int64_t spill_budget;    /* >= 0: history tables past this many bytes go to file-backed maps
                                in spill_dir (memory/arena.h); < 0 (or 0 with spill_dir NULL):
                                all anonymous */
    const char *spill_dir;
    int64_t x_tf_dim;        /* cluster, incagg: > 0 lets a site that reads x be called at this
                                narrower width by a model with input_transform_first (nn/layer.h,
                                "Affine input sites"): there forward is Â_BB in, backward Â_BBᵀ,
                                and agg_base gives the rest (M^0_B for incagg); 0: off */
    const csr_t *m0_sparse;  /* incagg with x_tf_dim: M^0 = ÂX as a CSR (n x in_dim, values; host,
                                borrowed): no dense M^0 at the sites reading x; agg_base gives a
                                batch's rows of it, agg_refresh_base all of it, and those sites'
                                forward runs only at the narrow width */
    int defer_batches;       /* gas: > 0 holds the history pushes of up to this many batches back
                                until agg_commit_pushes (data-parallel ranks of one step read the
                                histories as they were when the step began); 0: push at once */
    /* incagg push refresh, data-parallel ranks in separate processes (issue 13): after S holds
     * this rank's own rows and before M = Â S, exchange(exchange_ctx, site, S) fills the rows of
     * S that this rank's rows of Â read from their owners (memory/halo.h); M is then computed
     * for rows [rows_lo, rows_hi) only, the rows this rank's batches read (fp32 tables; bf16
     * computes all). NULL / rows_hi <= rows_lo: one process, every row. */
    int (*exchange)(void *ctx, int site, hist_t *s);
    void *exchange_ctx;
    int64_t rows_lo, rows_hi;
} agg_config_t;

typedef struct agg agg_t;

/* Allocates every table and scratch buffer once (INCA_ENOMEM with the method named); computes
 * M^0 = ÂX at the fixed sites of incagg. */
int agg_create(const agg_config_t *cfg, agg_t **out);
void agg_free(agg_t **g);   /* NULL-safe, sets *g = NULL */
/* The batch the next forward/backward calls run on (borrowed until the next call). Off the CPU
 * its matrices and ids are uploaded (into buffers sized at creation): INCA_EINVAL when they
 * exceed nnz_max / nb_max / halo_max. */
int agg_set_batch(agg_t *g, const batch_t *b);
/* The same with up to AGG_MAX_EXTRA arrays of the caller (host; extra[i] NULL: none) uploaded
 * with the batch; agg_batch_extra(g, i) is then array i in the context's memory (the host
 * array itself on the CPU). Off the CPU a batch goes into one of two slots from pinned staging
 * on the copy stream, ordered by events with the compute stream, so the upload of batch t+1
 * overlaps the compute of batch t. */
int agg_set_batch_with(agg_t *g, const batch_t *b, const void *const *extra, const int64_t *extra_bytes);
/* Room for extra array e (unused so far: extra_bytes[e] was 0) of up to bytes per batch, made
 * after agg_create by a trainer that decides late what travels with its batches (device and
 * pinned memory under the context's current tag; nothing on the CPU). */
int agg_add_extra(agg_t *g, int e, int64_t bytes);
const void *agg_batch_extra(const agg_t *g, int i);
/* Host tables on a device: the pushes of the last batch still on their way down land in the
 * tables (the refresh paths and agg_set_batch flush by themselves; call it before reading
 * the tables otherwise, e.g. a checkpoint). INCA_OK at once when nothing is pending. */
int agg_flush(agg_t *g);
/* The current batch's node ids in the context's memory (the batch's own array on the CPU). */
const int64_t *agg_batch_nodes(const agg_t *g);

/* The batch operator (nn_agg_t signatures; ctx = the agg_t). forward: out[n x f] = Agg(in) over
 * the batch last set (n = |B|); backward: din = Â_BBᵀ dout. */
int agg_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out);
int agg_backward(void *ctx, int site, int64_t n, int64_t f, const float *dout, float *din);
/* What nn_agg_t.base says (nn/layer.h, "Affine input sites") at a site that reads x (needs
 * x_tf_dim), for the batch (agg_base) or the whole graph's refresh pass (agg_refresh_base).
 * Cluster-GCN is Â_BB in: no rows, residual 0. IncAgg is M^0_B + Â_BB (in − x_B), residual 1:
 * with m0_sparse its rows of it as a CSR (*sparse, the operator's, valid until the next call),
 * else dense fp32 rows (*rows: the operator's scratch or the uploaded host-table rows); the
 * refresh's is all of m0_sparse (only then: the dense M^0 refresh returns its rows itself). */
int agg_base(agg_t *g, int site, int64_t n, int64_t f, const float **rows, const csr_t **sparse, int *residual);
int agg_refresh_base(agg_t *g, int site, int64_t n, int64_t f, const float **rows, const csr_t **sparse, int *residual);
/* The full-graph refresh operator (incagg; forward only, eval mode, n = all nodes): out = Â in,
 * and at every history site S (and P where it exists) <- in, M <- out. At a fixed site it
 * returns M^0. For other methods it is the plain full-graph operator. */
int agg_refresh_forward(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out);
/* Push-source refresh: S <- P (unless single_buffer), M <- Â S at every history site. INCA_OK
 * without doing anything for cluster and gas; INCA_EINVAL for the recompute source (its refresh
 * is a model pass through agg_refresh_forward). */
int agg_refresh(agg_t *g);

/* ---- layer-wise passes over row panels (streamed evaluation and refresh, nn/mb_pass.c) ----
 * M^0 at a fixed site of incagg (borrowed or computed), NULL otherwise. */
const hist_t *agg_m0(const agg_t *g, int site);
/* The refresh of rows [r0, r0+m) at a history site: S and P rows <- in (S skipped when
 * skip_s: the pass wrote its input straight into S), M rows <- out, or with relax < 1 after
 * agg_snapshot_taken S and M moved that fraction of the way; in and out are m x f in the
 * context's memory. INCA_OK doing nothing for other methods and fixed sites. */
int agg_refresh_rows(agg_t *g, int site, int64_t r0, int64_t m, const float *in, const float *out, int skip_s);
/* The initial exact snapshot is in the tables (after its pass, or restored from a checkpoint):
 * from now on recompute refreshes are relaxed (relax < 1); before, they replace. */
void agg_snapshot_taken(agg_t *g);
/* S at site as an fp32 n x dim table in the context's memory that a refresh pass may write
 * its layer outputs into directly (so the next layer's input needs no buffer of its own), or
 * NULL (another method, a fixed site, bf16 tables, host tables, or bf16 pass buffers: then the
 * next layer reads the output rounded to bf16 wherever the tables are, which a direct S would
 * skip on the CPU and device tables only). */
float *agg_s_direct(agg_t *g, int site);
/* Pass buffer i (0 or 1): n x f of agg_pass_dtype (agg_config.pass_dtype: fp32 or bf16) in the
 * context's memory, made on first use (f: the widest layer output the caller will put there; a
 * later call may not ask for more), counted in the table bytes (spilled past the budget like
 * the tables). */
int agg_pass_buffer(agg_t *g, int i, int64_t f, void **out);
hist_dtype_t agg_pass_dtype(const agg_t *g);
int64_t agg_spilled_bytes(const agg_t *g);   /* table bytes in file-backed maps */

/* gas with defer_batches: the pushes held since the last call land in the history tables
 * (in the order they were made). INCA_OK at once otherwise. */
int agg_commit_pushes(agg_t *g);

int agg_source(const agg_t *g);
int agg_num_sites(const agg_t *g);
int agg_fixed_site(const agg_t *g, int site);
/* Tables, NULL where the method or site has none: 'H' GAS history, 'M' baseline, 'S' snapshot,
 * 'P' push buffer. */
hist_t *agg_table(agg_t *g, char which, int site);
const mem_arena_t *agg_arena(const agg_t *g);
/* 1 when the tables are in host memory (always on the CPU). */
int agg_tables_on_host(const agg_t *g);
/* Bytes of the history tables alone (H, M, S, P) and of the operator's scratch buffers; their
 * sum is the arena's bytes. */
int64_t agg_table_bytes(const agg_t *g);
int64_t agg_scratch_bytes(const agg_t *g);
/* What the operator holds in host memory besides its tables: on the CPU all of its scratch; off
 * it the scratch kept on the host and the pinned staging of batches and host tables (not in
 * agg_scratch_bytes). What --memory-budget counts. */
int64_t agg_scratch_host_bytes(const agg_t *g);
/* Seconds in the batch operator's forward / backward, and Σ nnz(Â_BB) / Σ nnz(Â rows of B) over
 * the forward calls (the share of a batch's edges that stay inside it). */
void agg_times(const agg_t *g, double *fwd_s, double *bwd_s, double *intra_fraction);
void agg_reset_times(agg_t *g);
#endif
