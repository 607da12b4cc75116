/* --workers P (issue 13's single-process reference for data-parallel training): one epoch of
 * Cluster-GCN, IncAgg and GAS with P simulated ranks leaves exactly the parameters of a reference
 * built here from the public pieces: each rank's own batch (graph/dist.h ownership, its own
 * loader stream), forward and backward from the same initial model, gradients summed in rank
 * order in plain C and halved, one optimiser step; for GAS each rank pulls the histories as the
 * step found them (a fresh operator per rank in the reference); with a part per batch, each
 * rank's own parts in its own shuffle, seen through the step hook. Full-batch thread ranks against
 * one process without dropout, their determinism, a failing rank ending the run. Plus the
 * refusals. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/comm.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/dist.h"
#include "graph/gen.h"
#include "graph/partition.h"
#include "kernels/backend.h"
#include "loaders/batch.h"
#include "memory/agg.h"
#include "nn/checkpoint.h"
#include "nn/layer.h"
#include "nn/mb_data.h"
#include "nn/model.h"
#include "nn/optim.h"
#include "nn/train.h"
#include "nn/train_mb.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static dataset_t D;
static partition_t P;
static char *dir;

static void setup(void) {
    dir = tu_mkdtemp();
    gen_opts_t o;
    gen_opts_default(&o);
    o.nodes = 600;
    o.avg_degree = 6;
    o.features = 12;
    o.classes = 3;
    o.seed = 3;
    ck_assert_int_eq(gen_csbm(&o, &D, NULL), INCA_OK);
    ck_assert_int_eq(partition_compute(&D.adj, 8, PART_METIS, 0, &P), INCA_OK);
}

static void teardown(void) {
    partition_free(&P);
    dataset_free(&D);
    tu_rmrf(dir);
    free(dir);
}

static void config(train_config_t *c, const char *method, const char *ck) {
    train_config_default(c);
    c->model = tu_model("gcn");
    c->method = tu_method(method);
    c->epochs = 1;
    c->hidden = 8;
    c->parts = 8;
    c->batch_parts = 8;   /* every rank: all its parts in one batch, one step per epoch */
    c->workers = 2;
    c->checkpoint_dir = ck;
}

/* The parameters (and in *opt_out the optimiser, whose moments are the averaged gradient's:
 * Adam's first step alone is nearly scale-free) after one step of P = 2 ranks, computed from the
 * public pieces. */
enum { M_CLUSTER = 0, M_INCAGG = 1, M_GAS = 2 };

/* D renumbered by pp as a mini-batch run sees it, built here: x, y, the training flags, GCN's Â,
 * the 2-rank ownership plan, and iperm (new id -> D's). */
typedef struct {
    csr_t adjp, a, at;
    float *x;
    int32_t *y;
    uint8_t *tr;
    int64_t *iperm;
    dist_plan_t plan;
} renum_t;

static void renum_make(renum_t *q, const partition_t *pp) {
    const int64_t n = D.n, f = D.f;
    memset(q, 0, sizeof *q);
    ck_assert_int_eq(csr_permute(&D.adj, pp->perm, &q->adjp), INCA_OK);
    ck_assert_int_eq(nn_adj_build(&q->adjp, NN_NORM_GCN, &q->a, &q->at), INCA_OK);
    q->x = malloc(sizeof(float) * (size_t)(n * f));
    q->y = malloc(sizeof(int32_t) * (size_t)n);
    q->tr = calloc((size_t)n, 1);
    q->iperm = malloc(sizeof(int64_t) * (size_t)n);
    for (int64_t v = 0; v < n; v++) {
        memcpy(q->x + pp->perm[v] * f, D.x + v * f, sizeof(float) * (size_t)f);
        q->y[pp->perm[v]] = D.y[v];
        q->iperm[pp->perm[v]] = v;
    }
    for (int64_t i = 0; i < D.split_n[SPLIT_TRAIN]; i++) q->tr[pp->perm[D.split[SPLIT_TRAIN][i]]] = 1;
    ck_assert_int_eq(dist_plan_make(&q->a, pp->bounds, pp->k, 2, &q->plan), INCA_OK);
}

static void renum_free(renum_t *q) {
    free(q->x);
    free(q->y);
    free(q->tr);
    free(q->iperm);
    dist_plan_free(&q->plan);
    csr_free(&q->adjp);
    csr_free(&q->a);
    csr_free(&q->at);
}

static model_t *reference(const train_config_t *c, int method, optim_t **opt_out) {
    const int incagg = method == M_INCAGG;
    const int64_t n = D.n, f = D.f;
    renum_t q;
    renum_make(&q, &P);
    const float *x = q.x;
    const uint8_t *tr = q.tr;
    const dist_plan_t plan = q.plan;
    model_config_t mc;
    ck_assert_int_eq(train_model_config(&D, c, c->seed, &mc), INCA_OK);
    mc.transform_first = 0;
    model_t *m = NULL;
    optim_t *opt = NULL;
    ck_assert_int_eq(model_create(&mc, n, &m), INCA_OK);
    ck_assert_int_eq(train_optim_build(c, m, &opt), INCA_OK);
    const int np = model_nparams(m);
    float **sum = calloc((size_t)np, sizeof *sum);
    batch_source_t src = {.n = n, .f = f, .x = q.x, .y = q.y, .a = &q.a, .a_symmetric = 1, .bounds = P.bounds, .k = P.k};
    /* IncAgg's operator on the same graph: its initial snapshot of the untrained model first */
    agg_t *g = NULL;
    int64_t dims[AGG_MAX_SITES];
    uint8_t fixed[AGG_MAX_SITES];
    const int ns = mb_model_sites(&mc, dims, fixed);
    agg_config_t ac = {.method = AGG_INCAGG, .source = AGG_SRC_RECOMPUTE, .dtype = HIST_F32, .nsites = ns, .dims = dims,
                       .fixed = fixed, .n = n, .in_dim = f, .x = q.x, .a = &q.a, .nb_max = n, .spill_budget = -1};
    nn_agg_t op;
    nn_agg_full_t full;
    if (incagg) {
        ck_assert_int_eq(agg_create(&ac, &g), INCA_OK);
        const float *logits;
        nn_agg_t rop = {.forward = agg_refresh_forward, .ctx = g};
        ck_assert_int_eq(model_forward(m, n, x, &rop, 0, c->seed, 0, &logits), INCA_OK);
    }
    int64_t *lidx = malloc(sizeof(int64_t) * (size_t)n);
    float *logp = malloc(sizeof(float) * (size_t)(n * D.c)), *dl = malloc(sizeof(float) * (size_t)(n * D.c));
    for (int r = 0; r < 2; r++) {
        batch_opts_t bo = {.batch_parts = c->batch_parts, .seed = c->seed, .part_lo = plan.part_lo[r],
                           .part_hi = plan.part_lo[r + 1], .stream = (uint64_t)r,
                           .renorm = method == M_CLUSTER ? BATCH_RENORM_GCN : BATCH_RENORM_NONE, .halo = method == M_GAS};
        batch_loader_t *ld = NULL;
        const batch_t *b = NULL;
        ck_assert_int_eq(batch_loader_create(&src, &bo, &ld), INCA_OK);
        ck_assert_int_eq(batch_loader_next(ld, &b), INCA_OK);
        ck_assert_int_eq(b->n_b, plan.node_lo[r + 1] - plan.node_lo[r]);   /* the rank's nodes, all of them */
        agg_t *gas = NULL;
        if (method == M_GAS) {   /* a fresh operator per rank: zero histories, as the step found them */
            agg_config_t gc = ac;
            gc.method = AGG_GAS;
            gc.halo_max = n;
            ck_assert_int_eq(agg_create(&gc, &gas), INCA_OK);
            ck_assert_int_eq(agg_set_batch(gas, b), INCA_OK);
            op = (nn_agg_t){.forward = agg_forward, .backward = agg_backward, .ctx = gas};
        } else if (incagg) {
            ck_assert_int_eq(agg_set_batch(g, b), INCA_OK);
            op = (nn_agg_t){.forward = agg_forward, .backward = agg_backward, .ctx = g};
        } else nn_agg_full_init(&op, &full, &b->a_bb, NULL);   /* Cluster-GCN: Â_BB, renormalised */
        int64_t nidx = 0;
        for (int64_t i = 0; i < b->n_b; i++)
            if (tr[b->nodes[i]] && b->y[i] >= 0) lidx[nidx++] = i;
        const float *logits;
        double loss = 0;
        ck_assert_int_eq(model_forward(m, b->n_b, b->x, &op, 1, c->seed, (uint64_t)r, &logits), INCA_OK);
        ck_assert_int_gt(nidx, 0);
        ck_assert_int_eq(kc_softmax_xent(kc_cpu(), b->n_b, D.c, logits, b->y, lidx, nidx, logp, dl, &loss), INCA_OK);
        ck_assert_int_eq(model_backward(m, dl, &op), INCA_OK);
        for (int i = 0; i < np; i++) {   /* the sum in rank order, in plain C */
            const nn_param_t *p = model_param(m, i);
            if (!sum[i]) {
                sum[i] = malloc(sizeof(float) * (size_t)p->n);
                memcpy(sum[i], p->g, sizeof(float) * (size_t)p->n);
            } else
                for (int64_t e = 0; e < p->n; e++) sum[i][e] = p->g[e] + sum[i][e];
        }
        agg_free(&gas);
        batch_loader_free(&ld);
    }
    for (int i = 0; i < np; i++) {
        nn_param_t *p = model_param(m, i);
        for (int64_t e = 0; e < p->n; e++) p->g[e] = sum[i][e] * 0.5f;
        free(sum[i]);
    }
    ck_assert_int_eq(optim_step(opt), INCA_OK);
    *opt_out = opt;
    agg_free(&g);
    free(sum);
    free(lidx);
    free(logp);
    free(dl);
    renum_free(&q);
    return m;
}

START_TEST(two_ranks_equal_reference) {
    static const char *const names[3] = {"cluster", "incagg", "gas"};
    for (int method = 0; method < 3; method++) {
        const int incagg = method == M_INCAGG;
        char ck[4200];
        snprintf(ck, sizeof ck, "%s/ck%d", dir, method);
        train_config_t c;
        config(&c, names[method], ck);
        mb_opts_t o;
        mb_opts_default(&o);
        train_result_t r;
        ck_assert_int_eq(mb_train(&D, &c, D.split[SPLIT_TRAIN], D.split_n[SPLIT_TRAIN], 0, &P, &o, &r, NULL), INCA_OK);
        train_result_free(&r);
        /* the trained parameters, from the run's checkpoint */
        model_config_t mc;
        ck_assert_int_eq(train_model_config(&D, &c, c.seed, &mc), INCA_OK);
        mc.transform_first = 0;
        model_t *got = NULL;
        optim_t *go = NULL;
        ck_assert_int_eq(model_create(&mc, 1, &got), INCA_OK);
        ck_assert_int_eq(train_optim_build(&c, got, &go), INCA_OK);
        ckpt_state_t cs = {.order = ckpt_order_hash(P.perm, P.n)};
        /* the checkpoint also holds IncAgg's tables: read them into scratch of the same sizes */
        int64_t dims[AGG_MAX_SITES];
        uint8_t fixed[AGG_MAX_SITES];
        const int ns = mb_model_sites(&mc, dims, fixed);
        ckpt_blob_t blobs[2 * AGG_MAX_SITES];
        int nb = 0;
        for (int t = 0; t < 4; t++)
            for (int s = 0; s < ns; s++)   /* incagg: M at every site, S where the input is not x; gas: H there */
                if ((incagg && t == 1) || (incagg && t == 2 && !fixed[s]) || (method == M_GAS && t == 0 && !fixed[s]))
                    blobs[nb++] = (ckpt_blob_t){.p = calloc((size_t)(D.n * dims[s]), sizeof(float)),
                                                .bytes = (int64_t)sizeof(float) * D.n * dims[s]};
        ck_assert_int_eq(ckpt_load(ck, 0, &c, &D, got, go, &cs, blobs, nb), INCA_OK);
        for (int i = 0; i < nb; i++) free(blobs[i].p);
        optim_t *wo = NULL;
        model_t *want = reference(&c, method, &wo);
        for (int i = 0; i < model_nparams(want); i++) {
            const nn_param_t *a = model_param(got, i), *b = model_param(want, i);
            ck_assert_int_eq(a->n, b->n);
            ck_assert_msg(memcmp(a->w, b->w, sizeof(float) * (size_t)a->n) == 0, "%s: parameter %s differs from the reference",
                          train_method_name(c.method), a->name);
        }
        ck_assert_int_eq(optim_nparams(go), optim_nparams(wo));
        for (int i = 0; i < optim_nparams(wo); i++) {   /* Adam's moments: the averaged gradient, bit for bit */
            float *m1, *v1, *m2, *v2;
            int64_t n1, n2;
            ck_assert_int_eq(optim_param_state(go, i, &m1, &v1, &n1), INCA_OK);
            ck_assert_int_eq(optim_param_state(wo, i, &m2, &v2, &n2), INCA_OK);
            ck_assert_int_eq(n1, n2);
            ck_assert_msg(memcmp(m1, m2, sizeof(float) * (size_t)n1) == 0 && memcmp(v1, v2, sizeof(float) * (size_t)n1) == 0,
                          "%s: Adam moments of parameter %d differ from the reference", train_method_name(c.method), i);
        }
        optim_free(&wo);
        model_free(&want);
        model_free(&got);
        optim_free(&go);
    }
}
END_TEST

/* The loss nodes of every step the on_step hook saw, each step's sorted (D's numbering). */
typedef struct {
    int calls, epoch[64];
    int64_t lo[65], nodes[4096];
} step_log_t;

static int log_step(void *ctx, int run, int epoch, const int64_t *nodes, const int64_t *rows, int64_t m, const float *logits,
                    int32_t c) {
    step_log_t *h = ctx;
    (void)rows, (void)logits, (void)c;
    ck_assert(run == 0 && h->calls < 64 && h->lo[h->calls] + m <= 4096);
    int64_t *o = h->nodes + h->lo[h->calls];
    memcpy(o, nodes, sizeof(int64_t) * (size_t)m);
    qsort(o, (size_t)m, sizeof *o, inca_cmp_i64);
    h->epoch[h->calls] = epoch;
    h->lo[h->calls + 1] = h->lo[h->calls] + m;
    h->calls++;
    return 0;
}

/* The hook's calls h against two loaders made here from the public pieces (rank k: its parts of
 * graph/dist.h's plan, stream k, one part a batch), for two epochs of as many steps as the rank
 * with the most parts, rank 0's batch first in a step. */
static void expect_walk(const step_log_t *h, const partition_t *pp, uint64_t seed, int halo) {
    renum_t q;
    renum_make(&q, pp);
    const int64_t parts[2] = {q.plan.part_lo[1] - q.plan.part_lo[0], q.plan.part_lo[2] - q.plan.part_lo[1]};
    ck_assert_msg(parts[0] != parts[1], "the plan gives both ranks %lld parts", (long long)parts[0]);
    batch_source_t src = {.n = D.n, .f = D.f, .x = q.x, .y = q.y, .a = &q.a, .a_symmetric = 1, .bounds = pp->bounds, .k = pp->k};
    batch_loader_t *ld[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        batch_opts_t bo = {.batch_parts = 1, .seed = seed, .part_lo = q.plan.part_lo[k], .part_hi = q.plan.part_lo[k + 1],
                           .stream = (uint64_t)k, .halo = halo};
        ck_assert_int_eq(batch_loader_create(&src, &bo, &ld[k]), INCA_OK);
    }
    const int64_t steps = parts[0] > parts[1] ? parts[0] : parts[1];
    int call = 0;
    int64_t want[600];
    for (int ep = 0; ep < 2; ep++)
        for (int64_t s = 0; s < steps; s++)
            for (int k = 0; k < 2; k++) {
                if (s >= parts[k]) continue;   /* this rank's epoch is over */
                const batch_t *b = NULL;
                ck_assert_int_eq(batch_loader_next(ld[k], &b), INCA_OK);
                int64_t m = 0;
                for (int64_t i = 0; i < b->n_b; i++)
                    if (q.tr[b->nodes[i]] && b->y[i] >= 0) want[m++] = q.iperm[b->nodes[i]];
                if (m == 0) continue;   /* no loss rows: no hook */
                qsort(want, (size_t)m, sizeof *want, inca_cmp_i64);
                ck_assert_msg(call < h->calls && h->epoch[call] == ep && h->lo[call + 1] - h->lo[call] == m &&
                                  memcmp(h->nodes + h->lo[call], want, sizeof(int64_t) * (size_t)m) == 0,
                              "epoch %d step %lld rank %d: the hook's call %d is not this rank's batch", ep, (long long)s, k, call);
                call++;
            }
    ck_assert_int_eq(h->calls, call);
    batch_loader_free(&ld[0]);
    batch_loader_free(&ld[1]);
    renum_free(&q);
}

/* With --workers 2 and a part per batch each rank walks its own parts in its own shuffle, for as
 * many steps as the rank with the most parts (7 parts: the ranks own different numbers), in
 * Cluster-GCN and GAS; the step hook names a batch's training nodes in D's numbering
 * (expect_walk). Mutation tests: every rank on stream 0, the last rank's step count, iperm taken
 * as perm all passed test_workers before (the step count failed test_mpi only). */
START_TEST(ranks_walk_their_own_parts_in_their_own_order) {
    partition_t p7;
    ck_assert_int_eq(partition_compute(&D.adj, 7, PART_METIS, 0, &p7), INCA_OK);
    static const char *const methods[2] = {"cluster", "gas"};
    for (int mi = 0; mi < 2; mi++) {
        train_config_t c;
        config(&c, methods[mi], NULL);
        c.batch_parts = 1;
        c.epochs = 2;
        c.parts = 7;
        step_log_t *h = calloc(1, sizeof *h);
        c.on_step = log_step;
        c.on_step_ctx = h;
        mb_opts_t o;
        mb_opts_default(&o);
        train_result_t r;
        ck_assert_msg(mb_train(&D, &c, D.split[SPLIT_TRAIN], D.split_n[SPLIT_TRAIN], 0, &p7, &o, &r, NULL) == INCA_OK, "%s: %s",
                      methods[mi], inca_errmsg());
        train_result_free(&r);
        expect_walk(h, &p7, c.seed, mi == 1);
        free(h);
    }
    partition_free(&p7);
}
END_TEST

/* Full-batch with P thread ranks (nn/train_dist.h) against one process (train_full): without
 * dropout the ranks' gradients add up to the one-process gradient, so the trajectories agree
 * within float rounding (the sum split in P partial GEMMs, the loss gradient scaled per rank). */
static void full_config(train_config_t *c, const char *model, int workers) {
    train_config_default(c);
    c->model = tu_model(model);
    c->method = tu_method("full");
    c->epochs = 15;
    c->hidden = 8;
    c->parts = 8;
    c->dropout = 0;
    c->layers = strcmp(model, "gcnii") == 0 ? 4 : 2;
    c->K = 4;
    c->workers = workers;
    c->keep_params = 1;
}

/* many's parameters (w thread ranks, reduction how) within rounding of one process's: 15 Adam
 * steps from the same start, so rounding, not a different gradient */
static void assert_params_close(const train_result_t *one, const train_result_t *many, const char *model, int w,
                                const char *how) {
    ck_assert_int_eq(many->nparams, one->nparams);
    double dmax = 0, wmax = 0;
    for (int64_t k = 0; k < one->nparams; k++) {
        const double d = fabs((double)one->params[k] - (double)many->params[k]);
        dmax = d > dmax ? d : dmax;
        wmax = fabs(one->params[k]) > wmax ? fabs(one->params[k]) : wmax;
    }
    ck_assert_msg(dmax <= 2e-5 * (1 + wmax), "%s, %d ranks, %s: parameters differ by %g (largest %g)", model, w, how,
                  dmax, wmax);
}

START_TEST(full_batch_threads_match_one_process) {
    static const char *const models[] = {"gcn", "sage", "gcnii", "appnp", "mlp"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        train_config_t c;
        train_result_t one, many;
        full_config(&c, models[i], 1);
        ck_assert_msg(train_run(&D, &c, NULL, 0, &one) == INCA_OK, "%s: %s", models[i], inca_errmsg());
        for (int w = 2; w <= 3; w++) {
            full_config(&c, models[i], w);
            ck_assert_msg(train_run(&D, &c, NULL, 0, &many) == INCA_OK, "%s x%d: %s", models[i], w, inca_errmsg());
            assert_params_close(&one, &many, models[i], w, "chain");
            ck_assert_msg(fabs(many.test_acc - one.test_acc) <= 0.01, "%s, %d ranks: test accuracy %g vs %g", models[i],
                          w, many.test_acc, one.test_acc);
            train_result_free(&many);
        }
        train_result_free(&one);
    }
}
END_TEST

/* A directed graph (a third of the edges kept one way only): Âᵀ's rows reference other
 * columns than Â's, so the backward's halo is not the forward's; the ranks must still give the
 * one-process trajectory. */
START_TEST(full_batch_threads_directed_graph) {
    csr_t und = D.adj, dir_ = {0};
    int64_t m = 0;
    int64_t *src = malloc(sizeof *src * (size_t)und.nnz), *dst = malloc(sizeof *dst * (size_t)und.nnz);
    ck_assert(src && dst);
    for (int64_t u = 0; u < und.n_rows; u++)
        for (int64_t k = und.rowptr[u]; k < und.rowptr[u + 1]; k++) {
            const int64_t v = und.col[k];
            if ((u + v) % 3 == 0 && u > v) continue;   /* keep v -> u only */
            src[m] = u;
            dst[m++] = v;
        }
    ck_assert_int_eq(csr_from_edges(&dir_, und.n_rows, src, dst, m, 0), INCA_OK);
    free(src);
    free(dst);
    ck_assert(!csr_is_symmetric(&dir_));
    D.adj = dir_;
    static const char *const models[] = {"gcn", "sage"};
    for (size_t i = 0; i < 2; i++) {
        train_config_t c;
        train_result_t one, many;
        full_config(&c, models[i], 1);
        ck_assert_msg(train_run(&D, &c, NULL, 0, &one) == INCA_OK, "%s: %s", models[i], inca_errmsg());
        full_config(&c, models[i], 3);
        c.given_partition = &P;   /* the symmetric graph's METIS parts (METIS takes no directed graph) */
        ck_assert_msg(train_run(&D, &c, NULL, 0, &many) == INCA_OK, "%s x3: %s", models[i], inca_errmsg());
        double dmax = 0, wmax = 0;
        for (int64_t k = 0; k < one.nparams; k++) {
            const double d = fabs((double)one.params[k] - (double)many.params[k]);
            dmax = d > dmax ? d : dmax;
            wmax = fabs(one.params[k]) > wmax ? fabs(one.params[k]) : wmax;
        }
        ck_assert_msg(dmax <= 2e-5 * (1 + wmax), "%s, 3 ranks, directed: parameters differ by %g (largest %g)",
                      models[i], dmax, wmax);
        train_result_free(&one);
        train_result_free(&many);
    }
    D.adj = und;
    csr_free(&dir_);
}
END_TEST

/* Training ids without a label (given with --train-indices) count in neither the loss nor its
 * gradient (train_common.h): with half of rank 0's unlabelled, the ranks' shares of the labelled
 * ids differ from their shares of the ids, and the ranks must still give one process's steps. */
START_TEST(full_batch_threads_unlabelled_train_ids) {
    const int64_t ntr = D.split_n[SPLIT_TRAIN], *tr = D.split[SPLIT_TRAIN];
    int32_t *y0 = malloc(sizeof *y0 * (size_t)D.n);
    ck_assert(y0);
    memcpy(y0, D.y, sizeof *y0 * (size_t)D.n);
    int64_t dropped = 0;
    for (int64_t i = 0; i < ntr; i++)
        if (P.perm[tr[i]] < D.n / 2 && i % 2 == 0) D.y[tr[i]] = -1, dropped++;
    ck_assert_int_gt(dropped, ntr / 8);
    train_config_t c;
    train_result_t one, many;
    full_config(&c, "gcn", 1);
    ck_assert_msg(train_run(&D, &c, tr, ntr, &one) == INCA_OK, "%s", inca_errmsg());
    full_config(&c, "gcn", 2);
    c.given_partition = &P;
    ck_assert_msg(train_run(&D, &c, tr, ntr, &many) == INCA_OK, "%s", inca_errmsg());
    double dmax = 0, wmax = 0;
    for (int64_t k = 0; k < one.nparams; k++) {
        const double d = fabs((double)one.params[k] - (double)many.params[k]);
        dmax = d > dmax ? d : dmax;
        wmax = fabs(one.params[k]) > wmax ? fabs(one.params[k]) : wmax;
    }
    ck_assert_msg(dmax <= 2e-5 * (1 + wmax), "2 ranks, unlabelled training ids: parameters differ by %g (largest %g)", dmax,
                  wmax);
    ck_assert_msg(fabs(many.train_loss - one.train_loss) <= 1e-5 * fabs(one.train_loss), "train loss %.9g vs %.9g",
                  many.train_loss, one.train_loss);
    train_result_free(&one);
    train_result_free(&many);
    /* none labelled: refused, not a loss of 0 / 0 */
    for (int64_t i = 0; i < ntr; i++) D.y[tr[i]] = -1;
    full_config(&c, "gcn", 2);
    c.given_partition = &P;
    ck_assert_int_eq(train_run(&D, &c, tr, ntr, &many), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "has a label"), "%s", inca_errmsg());
    memcpy(D.y, y0, sizeof *y0 * (size_t)D.n);
    free(y0);
}
END_TEST

/* The allgather reduction (--grad-reduce allgather: every rank's gradients to every rank, summed
 * there in rank order) gives one process's trajectory too, at 2 and 3 ranks */
START_TEST(full_batch_threads_allgather_reduction) {
    static const char *const models[] = {"gcn", "sage"};
    for (size_t i = 0; i < 2; i++) {
        train_config_t c;
        train_result_t one, many;
        full_config(&c, models[i], 1);
        ck_assert_msg(train_run(&D, &c, NULL, 0, &one) == INCA_OK, "%s: %s", models[i], inca_errmsg());
        for (int w = 2; w <= 3; w++) {
            full_config(&c, models[i], w);
            c.grad_reduce = TRAIN_GRAD_ALLGATHER;
            ck_assert_msg(train_run(&D, &c, NULL, 0, &many) == INCA_OK, "%s x%d: %s", models[i], w, inca_errmsg());
            assert_params_close(&one, &many, models[i], w, "allgather");
            train_result_free(&many);
        }
        train_result_free(&one);
    }
}
END_TEST

/* with dropout: deterministic (the same bits twice), and a different draw from one process */
START_TEST(full_batch_threads_deterministic) {
    train_config_t c;
    train_result_t a, b;
    full_config(&c, "gcn", 3);
    c.dropout = 0.5;
    c.epochs = 5;
    ck_assert_int_eq(train_run(&D, &c, NULL, 0, &a), INCA_OK);
    ck_assert_int_eq(train_run(&D, &c, NULL, 0, &b), INCA_OK);
    ck_assert_int_eq(memcmp(a.params, b.params, sizeof(float) * (size_t)a.nparams), 0);
    ck_assert(a.comm_bytes[COMM_HALO] > 0 && a.comm_bytes[COMM_GRAD] > 0 && a.comm_bytes[COMM_REFRESH] == 0);
    train_result_free(&b);
    c.workers = 1;   /* one process draws other masks (the ranks' are per rank, step epoch x P + rank) */
    ck_assert_int_eq(train_run(&D, &c, NULL, 0, &b), INCA_OK);
    ck_assert_int_eq(b.nparams, a.nparams);
    ck_assert_int_ne(memcmp(a.params, b.params, sizeof(float) * (size_t)a.nparams), 0);
    train_result_free(&a);
    train_result_free(&b);
}
END_TEST

/* an allocation that fails in any one thread rank (or before they start) ends the run with an
 * error, never a hang, and frees everything (ASan) */
START_TEST(full_batch_rank_failure_ends_the_run) {
    train_config_t c;
    train_result_t r;
    full_config(&c, "sage", 3);
    c.epochs = 2;
    c.keep_params = 0;
    int failed = 0, named = 0, k;
    for (k = 1; k < 2000; k += 3) {
        inca_alloc_fail_after(k);
        const int rc = train_run(&D, &c, NULL, 0, &r);
        inca_alloc_fail_after(0);
        if (rc == INCA_OK) {
            train_result_free(&r);
            break;
        }
        failed++;
        named += strstr(inca_errmsg(), "rank ") != NULL && strstr(inca_errmsg(), " of 3: ") != NULL;
    }
    ck_assert_msg(k < 2000, "still failing after %d allocations", k);
    ck_assert(failed > 10);
    ck_assert_msg(named > 0, "no failure inside a rank was named");
}
END_TEST

/* A star of n - 1 leaves (the hub 0, leaf i joined to it only), features and labels of the leaf's
 * parity; every node a training node; the partitioning of one node per part. */
static void star_make(dataset_t *d, partition_t *p, int64_t n) {
    dataset_init(d);
    d->n = n;
    d->f = 2;
    d->c = 2;
    ck_assert_int_eq(csr_alloc(&d->adj, n, n, 2 * (n - 1), 0), INCA_OK);
    d->adj.rowptr[0] = 0;
    d->adj.rowptr[1] = n - 1;
    for (int64_t v = 1; v < n; v++) {
        d->adj.col[v - 1] = (int32_t)v;        /* the hub's row */
        d->adj.col[n - 2 + v] = 0;             /* leaf v's */
        d->adj.rowptr[v + 1] = n - 1 + v;
    }
    d->x = inca_malloc(sizeof(float) * (size_t)(2 * n));
    d->y = inca_malloc(sizeof(int32_t) * (size_t)n);
    d->split[SPLIT_TRAIN] = inca_malloc(sizeof(int64_t) * (size_t)n);
    int32_t *part = malloc(sizeof(int32_t) * (size_t)n);
    ck_assert(d->x && d->y && d->split[SPLIT_TRAIN] && part);
    for (int64_t v = 0; v < n; v++) {
        d->y[v] = (int32_t)(v % 2);
        d->x[2 * v] = (float)(v % 2);
        d->x[2 * v + 1] = 1.0f - (float)(v % 2);
        d->split[SPLIT_TRAIN][v] = v;
        part[v] = (int32_t)v;
    }
    d->split_n[SPLIT_TRAIN] = n;
    ck_assert_int_eq(partition_from_parts(n, n, part, p), INCA_OK);
    free(part);
}

/* GAS under --workers: one operator serves every rank, so its halo bound must be the largest of
 * the ranks' (a rank's: min(nonzeros of its batch_parts fullest parts, n)), not one rank's.
 * On a star with a part per node and one part per batch, rank 0 owns the hub (the plan weighs
 * nodes + nonzeros of Â: the hub's part is the heaviest) and rank 1 only leaves, of 2 nonzeros
 * each: rank 1's bound is 2, while rank 0's batch of the hub has every leaf outside it in its
 * halo. (A mutation test: the last rank's bound for all of them failed the hub's batch.) */
START_TEST(gas_halo_bound_is_the_largest_ranks) {
    enum { LEAVES = 12 };
    dataset_t d;
    partition_t p;
    star_make(&d, &p, LEAVES + 1);
    /* the premise, from the public pieces: the hub's part is rank 0's, rank 1's bound 2 */
    csr_t a = {0}, at = {0};
    dist_plan_t plan;
    ck_assert_int_eq(nn_adj_build(&d.adj, NN_NORM_GCN, &a, &at), INCA_OK);
    ck_assert_int_eq(dist_plan_make(&a, p.bounds, p.k, 2, &plan), INCA_OK);
    const int64_t split = plan.part_lo[1];   /* rank 1's first part */
    ck_assert_int_gt(split, 1);
    ck_assert_int_eq(mb_batch_nnz_bound(&a, p.bounds + split, p.k - split, 1), 2);
    dist_plan_free(&plan);
    csr_free(&a);
    csr_free(&at);
    train_config_t c;
    config(&c, "gas", NULL);
    c.parts = p.k;
    c.batch_parts = 1;
    c.epochs = 2;
    mb_opts_t o;
    mb_opts_default(&o);
    train_result_t r;
    ck_assert_msg(mb_train(&d, &c, d.split[SPLIT_TRAIN], d.split_n[SPLIT_TRAIN], 0, &p, &o, &r, NULL) == INCA_OK, "%s",
                  inca_errmsg());
    ck_assert_int_eq(r.steps_per_epoch, split > p.k - split ? split : p.k - split);   /* a part per step */
    train_result_free(&r);
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

START_TEST(refusals) {
    train_config_t c;
    mb_opts_t o;
    mb_opts_default(&o);
    train_result_t r;
    config(&c, "incagg", NULL);
    c.batchnorm = 1;
    c.layers = 3;
    ck_assert_int_eq(mb_train(&D, &c, D.split[SPLIT_TRAIN], D.split_n[SPLIT_TRAIN], 0, &P, &o, &r, NULL), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--batchnorm"));
    config(&c, "cluster", NULL);
    c.workers = 9;   /* more ranks than parts */
    ck_assert_int_eq(mb_train(&D, &c, D.split[SPLIT_TRAIN], D.split_n[SPLIT_TRAIN], 0, &P, &o, &r, NULL), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "9 ranks: expected 1..8"));
    /* a shard's ownership plan must be for the job's partitioning: here one of 7 parts, P has 8
     * (a mutation test: the part count unchecked passed the suite before) */
    partition_t p7;
    renum_t q;
    ck_assert_int_eq(partition_compute(&D.adj, 7, PART_METIS, 0, &p7), INCA_OK);
    renum_make(&q, &p7);
    config(&c, "cluster", NULL);
    c.given_plan = &q.plan;
    ck_assert_int_eq(mb_train(&D, &c, D.split[SPLIT_TRAIN], D.split_n[SPLIT_TRAIN], 0, &P, &o, &r, NULL), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "ownership plan is for 2 ranks of 600 nodes, 7 parts"));
    renum_free(&q);
    partition_free(&p7);
    full_config(&c, "gcn", 2);
    c.batchnorm = 1;
    ck_assert_int_eq(train_run(&D, &c, NULL, 0, &r), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "2 ranks with --batchnorm"));
    full_config(&c, "gcn", 9);   /* more ranks than parts */
    ck_assert_int_eq(train_run(&D, &c, NULL, 0, &r), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "9 ranks: expected 1..8"));
}
END_TEST

int main(void) {
    Suite *s = suite_create("workers");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, two_ranks_equal_reference);
    tcase_add_test(t, ranks_walk_their_own_parts_in_their_own_order);
    tcase_add_test(t, full_batch_threads_match_one_process);
    tcase_add_test(t, full_batch_threads_directed_graph);
    tcase_add_test(t, full_batch_threads_unlabelled_train_ids);
    tcase_add_test(t, full_batch_threads_allgather_reduction);
    tcase_add_test(t, full_batch_threads_deterministic);
    tcase_add_test(t, full_batch_rank_failure_ends_the_run);
    tcase_add_test(t, gas_halo_bound_is_the_largest_ranks);
    tcase_add_test(t, refusals);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
