/* nn/layout + the view loader (issue 12): the store's partition-ordered arrays against an
 * independent renumbering and a double-precision Â X; mini-batch training on store views
 * bit-identical to training on the same arrays copied into memory; the layer-wise evaluation
 * against the copy path's whole-graph one; tables spilled to files under a memory budget giving
 * the same numbers; the budget's and a missing layout's errors. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/memstat.h"
#include "core/status.h"
#include "graph/gen.h"
#include "graph/partition.h"
#include "kernels/kernels.h"
#include "loaders/dataset.h"
#include "loaders/partition_store.h"
#include "loaders/store.h"
#include "nn/layer.h"
#include "nn/layout.h"
#include "nn/shard.h"
#include "nn/train.h"
#include "core/args.h"
#include "nn/train_mb.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dir;
static char path[4096];
static dataset_t D;
static partition_t P;

/* a noisy CSBM (accuracy well below 100%) saved as a store and partitioned into 12 parts */
static void setup(void) {
    dir = tu_mkdtemp();
    snprintf(path, sizeof path, "%s/g.lmdb", dir);
    gen_opts_t o;
    gen_opts_default(&o);
    o.nodes = 1200;
    o.avg_degree = 8;
    o.features = 24;
    o.classes = 4;
    o.seed = 5;
    o.homophily = 0.7;
    o.noise = 1.0;
    ck_assert_int_eq(gen_csbm(&o, &D, NULL), INCA_OK);
    /* --feature-norm row needs features >= 0 (train_features_check): the CSBM's Gaussian rows
     * shifted by their least value (as PyG's NormalizeFeatures does), so the row layouts below
     * are built */
    float lo = 0;
    for (int64_t i = 0; i < D.n * D.f; i++) lo = D.x[i] < lo ? D.x[i] : lo;
    for (int64_t i = 0; i < D.n * D.f; i++) D.x[i] -= lo;
    store_set_chunk_bytes(1000);   /* 250 floats: x's chunks start and end inside rows of 24 */
    ck_assert_int_eq(dataset_save(&D, path, 0), INCA_OK);
    store_set_chunk_bytes(0);
    store_t *s = NULL;
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(store_partition_get(s, &D.adj, 12, PART_METIS, 0, &P, NULL), INCA_OK);
    store_close(&s);
}

static void teardown(void) {
    partition_free(&P);
    dataset_free(&D);
    tu_rmrf(dir);
    free(dir);
}

/* _i = 1: every layout array past 4 KiB goes to a side file beside data.mdb, as arrays past
 * LMDB's 4 GiB value do at 10M nodes (loaders/store.h): the same views, the same bits.
 * _i = 2: the file-backed write of --memory-budget (x and M^0 built in spill maps, stored as
 * side files whatever their size): the same again. */
static void side_files_if(int on) { store_set_whole_max_bytes(on ? 4096 : 0); }

START_TEST(arrays_match_independent_reference) {
    side_files_if(_i == 1);
    const int fb = _i == 2;
    store_t *s = NULL;
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    layout_views_t v;
    /* absent: a message naming the command that writes it */
    ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_ROW, 1, NN_NORM_GCN, HIST_F32, &v), INCA_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "inca partition"));
    int built = 0;
    ck_assert_int_eq(layout_ensure(s, &P, &D.adj, TRAIN_FEATNORM_ROW, 1, NN_NORM_GCN, HIST_F32, fb, &built), INCA_OK);
    ck_assert_int_eq(built, 7);
    ck_assert_int_eq(layout_ensure(s, &P, &D.adj, TRAIN_FEATNORM_ROW, 1, NN_NORM_GCN, HIST_F32, fb, &built), INCA_OK);
    ck_assert_int_eq(built, 0);   /* nothing written twice */
    ck_assert_int_eq(layout_ensure(s, &P, &D.adj, TRAIN_FEATNORM_ROW, 1, NN_NORM_GCN, HIST_BF16, fb, &built), INCA_OK);
    ck_assert_int_eq(built, 2);
    ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_ROW, 1, NN_NORM_GCN, HIST_F32, &v), INCA_OK);
    const int64_t n = D.n, f = D.f;
    char xn[192];
    store_array_info_t xi;
    layout_x_name(xn, sizeof xn, P.man.name, TRAIN_FEATNORM_ROW);
    ck_assert_int_eq(store_array_info(s, xn, &xi), INCA_OK);
    ck_assert_int_eq(xi.in_file, _i != 0);
    ck_assert_int_eq(v.n, n);
    ck_assert_int_eq(v.f, f);
    /* x: row v of the dataset, divided by its sum (double), lands at row perm[v] */
    for (int64_t u = 0; u < n; u++) {
        double sum = 0;
        for (int64_t j = 0; j < f; j++) sum += D.x[u * f + j];
        for (int64_t j = 0; j < f; j++) {
            const double want = sum != 0 ? D.x[u * f + j] / sum : 0;
            ck_assert(fabs(v.x[P.perm[u] * f + j] - want) <= 1e-6 * (fabs(want) + 1e-3));
        }
    }
    /* M^0 = D^-1/2 (A+I) D^-1/2 X in double, from the dataset's own graph in its own numbering */
    double *ref = calloc((size_t)(n * f), sizeof(double)), *mag = calloc((size_t)(n * f), sizeof(double));
    for (int64_t u = 0; u < n; u++) {
        const double du = (double)(D.adj.rowptr[u + 1] - D.adj.rowptr[u] + 1);
        for (int64_t k = D.adj.rowptr[u]; k <= D.adj.rowptr[u + 1]; k++) {
            const int64_t w = k < D.adj.rowptr[u + 1] ? D.adj.col[k] : u;   /* the self-loop last */
            const double dw = (double)(D.adj.rowptr[w + 1] - D.adj.rowptr[w] + 1);
            for (int64_t j = 0; j < f; j++) {
                ref[u * f + j] += v.x[P.perm[w] * f + j] / sqrt(du * dw);
                mag[u * f + j] += fabs(v.x[P.perm[w] * f + j]) / sqrt(du * dw);
            }
        }
    }
    /* Â: row perm[u] holds u's neighbours and u itself, renumbered, at 1/sqrt(d_u d_w) */
    ck_assert_int_eq(v.a.nnz, D.adj.nnz + n);
    ck_assert_int_eq(v.a.owned, 0);
    ck_assert_ptr_null(v.at.rowptr);
    for (int64_t u = 0; u < n; u++) {
        const int64_t r = P.perm[u], deg = D.adj.rowptr[u + 1] - D.adj.rowptr[u];
        ck_assert_int_eq(v.a.rowptr[r + 1] - v.a.rowptr[r], deg + 1);
        for (int64_t k = D.adj.rowptr[u]; k <= D.adj.rowptr[u + 1]; k++) {
            const int64_t w = k < D.adj.rowptr[u + 1] ? D.adj.col[k] : u;
            const double want = 1.0 / sqrt((double)(deg + 1) * (double)(D.adj.rowptr[w + 1] - D.adj.rowptr[w] + 1));
            int found = 0;
            for (int64_t q = v.a.rowptr[r]; q < v.a.rowptr[r + 1]; q++)
                if (v.a.col[q] == P.perm[w]) found = fabs(v.a.val[q] - want) <= 1e-6 * want;
            ck_assert_msg(found, "Â entry (%lld, %lld)", (long long)u, (long long)w);
        }
    }
    const float *m0 = v.m0;
    double worst = 0;
    for (int64_t u = 0; u < n; u++)
        for (int64_t j = 0; j < f; j++) {
            /* float sums of a few terms: error within a few ulps of the sum of magnitudes */
            const double e = fabs(m0[P.perm[u] * f + j] - ref[u * f + j]) / (mag[u * f + j] + 1e-12);
            worst = e > worst ? e : worst;
        }
    ck_assert_msg(worst < 1e-5, "M^0 relative error %g", worst);
    /* bf16 M^0: the fp32 one rounded to nearest even */
    float *m32 = malloc(sizeof(float) * (size_t)(n * f));
    memcpy(m32, m0, sizeof(float) * (size_t)(n * f));
    ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_ROW, 1, NN_NORM_GCN, HIST_BF16, &v), INCA_OK);
    const uint16_t *m16 = v.m0;
    for (int64_t i = 0; i < n * f; i++) ck_assert_uint_eq(m16[i], kern_f32_to_bf16(m32[i]));
    free(m32);
    free(ref);
    free(mag);
    /* --rebuild-layout: dropped (side files with it), then written again with the same bits */
    float *x0 = malloc(sizeof(float) * (size_t)(n * f));
    memcpy(x0, v.x, sizeof(float) * (size_t)(n * f));
    ck_assert_int_eq(layout_drop(s, &P, TRAIN_FEATNORM_ROW, 1, NN_NORM_GCN, HIST_BF16), INCA_OK);
    ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_ROW, 1, NN_NORM_GCN, HIST_BF16, &v), INCA_ENOTFOUND);
    ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_ROW, 1, NN_NORM_GCN, HIST_F32, &v), INCA_ENOTFOUND);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c '^side-.*bin$' || true", path);
    char *out = NULL;
    ck_assert_int_eq(tu_sh(cmd, &out, NULL), 0);
    ck_assert_int_eq(atoi(out), _i ? 1 : 0);   /* fp32 M^0's, not dropped */
    free(out);
    ck_assert_int_eq(layout_ensure(s, &P, NULL, TRAIN_FEATNORM_ROW, 1, NN_NORM_GCN, HIST_BF16, 0, &built), INCA_OK);
    ck_assert_int_eq(built, 7);
    ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_ROW, 1, NN_NORM_GCN, HIST_F32, &v), INCA_OK);
    ck_assert_mem_eq(v.x, x0, sizeof(float) * (size_t)(n * f));
    free(x0);
    store_close(&s);
    /* a non-finite feature is refused, naming its entry and row */
    char bad[4200];
    snprintf(bad, sizeof bad, "%s/nan.lmdb", dir);
    const float keep = D.x[5 * f + 3];
    D.x[5 * f + 3] = NAN;
    store_set_chunk_bytes(1000);
    ck_assert_int_eq(dataset_save(&D, bad, 0), INCA_OK);
    store_set_chunk_bytes(0);
    D.x[5 * f + 3] = keep;
    ck_assert_int_eq(store_open(bad, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(layout_ensure(s, &P, &D.adj, TRAIN_FEATNORM_NONE, 0, NN_NORM_GCN, HIST_F32, 0, NULL), INCA_EINVAL);
    char want[64];
    snprintf(want, sizeof want, "entry %lld (row 5)", (long long)(5 * f + 3));
    ck_assert_msg(strstr(inca_errmsg(), want) != NULL, "%s", inca_errmsg());
    inca_err_clear();
    store_close(&s);
}
END_TEST

/* the arrays `which` (adj / adjt) of a gcn layout deleted, as a layout written before gcn kept
 * Âᵀ would lack them (adjt), or the marker of a symmetric graph (symmetric) */
static void drop_arrays(store_t *s, const partition_t *p, const char *which) {
    static const char *const parts[3] = {"rowptr", "col", "val"};
    store_wtx_t *w = NULL;
    char nm[256];
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    const int sym = strcmp(which, "symmetric") == 0;
    for (int i = 0; i < (sym ? 1 : 3); i++) {
        if (sym) snprintf(nm, sizeof nm, "layout/%s/adj-gcn/symmetric", p->man.name);
        else snprintf(nm, sizeof nm, "layout/%s/%s-gcn/%s", p->man.name, which, parts[i]);
        ck_assert_msg(store_has_array(s, nm), "%s: absent", nm);   /* what the test drops was written */
        ck_assert_int_eq(store_wtx_del_array(w, nm), INCA_OK);
    }
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
}

/* D with a directed graph: D's edges less those (u, w) with u > w and u + w a multiple of 3
 * (*dd borrows D's arrays but the graph, which the caller frees with csr_free) */
static void directed_copy(dataset_t *dd) {
    *dd = D;
    int64_t *src = malloc(sizeof *src * (size_t)D.adj.nnz), *dst = malloc(sizeof *dst * (size_t)D.adj.nnz), m = 0;
    for (int64_t u = 0; u < D.n; u++)
        for (int64_t k = D.adj.rowptr[u]; k < D.adj.rowptr[u + 1]; k++)
            if (!((u + D.adj.col[k]) % 3 == 0 && u > D.adj.col[k])) { src[m] = u; dst[m++] = D.adj.col[k]; }
    ck_assert_int_eq(csr_from_edges(&dd->adj, D.n, src, dst, m, 0), INCA_OK);
    free(src);
    free(dst);
}

/* GCN on a directed graph (a random partitioning: METIS and lp take no directed graph): the
 * layout keeps Âᵀ (the backward's), equal to the transpose of the stored Â; a gcn layout
 * without Âᵀ or the symmetric marker (written before either existed) is rebuilt, on a
 * directed graph and on a symmetric one, whose layout then carries the marker and no Âᵀ. */
START_TEST(directed_gcn_layout_keeps_the_transpose) {
    dataset_t dd;
    directed_copy(&dd);
    char dpath[4200];
    snprintf(dpath, sizeof dpath, "%s/dir.lmdb", dir);
    ck_assert_int_eq(dataset_save(&dd, dpath, 0), INCA_OK);
    store_t *s = NULL;
    partition_t pr;
    layout_views_t v;
    int built = 0;
    ck_assert_int_eq(store_open(dpath, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(store_partition_get(s, &dd.adj, 12, PART_RANDOM, 0, &pr, NULL), INCA_OK);
    for (int round = 0; round < 2; round++) {   /* written, then rebuilt after Âᵀ was dropped */
        ck_assert_int_eq(layout_ensure(s, &pr, NULL, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_F32, 0, &built), INCA_OK);
        ck_assert_int_eq(built & 4, 4);
        ck_assert_int_eq(layout_open(s, &pr, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_F32, &v), INCA_OK);
        ck_assert_ptr_nonnull(v.at.rowptr);
        csr_t t = {0};
        ck_assert_int_eq(csr_transpose(&v.a, &t), INCA_OK);
        ck_assert_int_eq(t.nnz, v.at.nnz);
        ck_assert_mem_eq(t.rowptr, v.at.rowptr, sizeof(int64_t) * (size_t)(D.n + 1));
        ck_assert_mem_eq(t.col, v.at.col, sizeof(int32_t) * (size_t)t.nnz);
        ck_assert_mem_eq(t.val, v.at.val, sizeof(float) * (size_t)t.nnz);
        csr_free(&t);
        drop_arrays(s, &pr, "adjt");
        /* a layout cut short after Â (no Âᵀ, no marker) is not opened: it would train Â for Âᵀ */
        ck_assert_int_eq(layout_open(s, &pr, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_F32, &v), INCA_ENOTFOUND);
    }
    partition_free(&pr);
    store_close(&s);
    csr_free(&dd.adj);
    /* the symmetric store: the marker, no Âᵀ; without the marker, Â is written again */
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(layout_ensure(s, &P, &D.adj, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_F32, 0, &built), INCA_OK);
    ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_F32, &v), INCA_OK);
    ck_assert_ptr_null(v.at.rowptr);
    ck_assert_int_eq(layout_ensure(s, &P, &D.adj, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_F32, 0, &built), INCA_OK);
    ck_assert_int_eq(built, 0);
    drop_arrays(s, &P, "symmetric");
    ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_F32, &v), INCA_ENOTFOUND);
    ck_assert_int_eq(layout_ensure(s, &P, &D.adj, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_F32, 0, &built), INCA_OK);
    ck_assert_int_eq(built, 4);
    store_close(&s);
}
END_TEST

static void base_config(train_config_t *c) {
    train_config_default(c);   /* gcn */
    c->method = tu_method("incagg");
    c->epochs = 12;
    c->hidden = 16;
    c->parts = 12;
    c->batch_parts = 3;
    c->feature_norm = TRAIN_FEATNORM_STANDARD;   /* Gaussian features: row sums near 0 */
    c->store_path = path;
}

static void run_mb(const train_config_t *c, const layout_views_t *view, train_result_t *r, mb_stats_t *st) {
    mb_opts_t o;
    mb_opts_default(&o);
    o.view = view;
    ck_assert_int_eq(mb_train(&D, c, D.split[SPLIT_TRAIN], D.split_n[SPLIT_TRAIN], 0, &P, &o, r, st), INCA_OK);
}

/* mb_train on view refused before training with INCA_EINVAL, the message naming what. */
static void view_refused(const train_config_t *c, const layout_views_t *view, const char *what) {
    mb_opts_t o;
    mb_opts_default(&o);
    o.view = view;
    train_result_t r;
    ck_assert_int_eq(mb_train(&D, c, D.split[SPLIT_TRAIN], D.split_n[SPLIT_TRAIN], 0, &P, &o, &r, NULL), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), what), "refused for another reason: %s", inca_errmsg());
    train_result_free(&r);
}

/* The refusals of a view that cannot serve: a budget 1 byte short of the baseline given
 * (memory_baseline, counted as given) plus what the batch needs; for mean's normalisation a
 * layout without Âᵀ (what layout_open never hands out, mb_train may be given). */
static void view_refusals(train_config_t c, const layout_views_t *v, int64_t need, int norm) {
    c.memory_baseline = 0;
    c.memory_budget = need - 1;
    view_refused(&c, v, "--memory-budget");
    c.memory_baseline = (int64_t)3 << 20;
    c.memory_budget = need + c.memory_baseline - 1;
    view_refused(&c, v, "baseline 3 MB");
    if (norm == NN_NORM_MEAN) {
        layout_views_t va = *v;
        memset(&va.at, 0, sizeof va.at);
        c.memory_budget = 0;
        view_refused(&c, &va, "does not match the model's normalisation");
    }
}

START_TEST(views_equal_copies_and_budget_spills) {
    side_files_if(_i);
    static const struct { const char *model, *method, *dtype; int source, refresh; } cases[] = {
        {"gcn", "incagg", "fp32", AGG_SRC_RECOMPUTE, 0}, {"gcn", "incagg", "bf16", AGG_SRC_RECOMPUTE, 2},
        {"sage", "incagg", "fp32", AGG_SRC_PUSH, 0},     {"gcn", "incagg", "fp32", AGG_SRC_PUSH, 3},
        {"gcn", "gas", "fp32", 0, 0},                    {"sage", "cluster", "fp32", 0, 0}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        train_config_t c;
        base_config(&c);
        c.model = tu_model(cases[ci].model);
        c.method = tu_method(cases[ci].method);
        c.history_dtype = tu_dtype(cases[ci].dtype);
        c.refresh_source = cases[ci].source;
        c.refresh = cases[ci].refresh;
        c.layers = 3;
        hist_dtype_t hd = strcmp(cases[ci].dtype, "bf16") == 0 ? HIST_BF16 : HIST_F32;
        const int norm = strcmp(cases[ci].model, "sage") == 0 ? NN_NORM_MEAN : NN_NORM_GCN;
        const int want_m0 = strcmp(cases[ci].method, "incagg") == 0;
        store_t *s = NULL;
        layout_views_t v, vm;
        ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
        ck_assert_int_eq(layout_ensure(s, &P, &D.adj, c.feature_norm, want_m0, norm, hd, 0, NULL), INCA_OK);
        ck_assert_int_eq(layout_open(s, &P, c.feature_norm, want_m0, norm, hd, &v), INCA_OK);
        /* the same arrays copied into ordinary memory */
        const size_t xb = sizeof(float) * (size_t)(v.n * v.f), mb = (hd == HIST_BF16 ? 2 : 4) * (size_t)(v.n * v.f);
        float *xc = malloc(xb);
        void *mc = want_m0 ? malloc(mb) : NULL;
        memcpy(xc, v.x, xb);
        if (mc) memcpy(mc, v.m0, mb);
        vm = v;
        vm.x = xc;
        vm.m0 = mc;
        train_result_t rv, rm, rb, rc_;
        mb_stats_t sv, sm, sb;
        c.loader = TRAIN_LOADER_VIEW;
        run_mb(&c, &v, &rv, &sv);
        run_mb(&c, &vm, &rm, &sm);
        ck_assert_str_eq(rv.loader, "view");
        ck_assert_msg(rv.test_acc == rm.test_acc && rv.val_acc == rm.val_acc && rv.train_loss == rm.train_loss,
                      "case %zu: view %.17g/%.17g vs copied arrays %.17g/%.17g", ci, rv.test_acc, rv.train_loss,
                      rm.test_acc, rm.train_loss);
        /* a budget that spills every table to files: the same numbers. The process's baseline is
         * taken as 0 here, so the budget's arithmetic is exact (test_e2e_budget.c measures it) */
        c.memory_baseline = 0;
        c.memory_budget = sv.scratch_bytes + ((int64_t)64 << 20);
        run_mb(&c, &v, &rb, &sb);
        const int64_t need = sb.anon_need_bytes;
        ck_assert_int_gt(need, 0);
        mb_stats_free(&sb);
        train_result_free(&rb);
        c.memory_budget = need;   /* exactly what the batch needs: no room for tables */
        run_mb(&c, &v, &rb, &sb);
        ck_assert_int_gt(sv.table_bytes, 0);   /* tables or pass buffers: something to spill */
        ck_assert_int_eq(sb.spilled_bytes, sv.table_bytes);
        ck_assert_msg(rb.test_acc == rv.test_acc && rb.train_loss == rv.train_loss, "case %zu: spilled tables differ", ci);
        view_refusals(c, &v, need, norm);
        /* the copy path (whole-graph evaluation, M^0 computed in memory): the same model within
         * the rounding of panel GEMMs, grown over the epochs' steps: the final loss 3e-8 apart
         * (relative) in case 0; 1.7e-4 in case 1, whose bf16 tables turn a last-bit difference
         * into a bf16 step now and then and whose relaxed refresh (0.15) keeps it longer: 1e-3
         * for bf16 tables, 1e-4 otherwise */
        const double ltol = strcmp(cases[ci].dtype, "bf16") == 0 ? 1e-3 : 1e-4;
        c.memory_budget = 0;
        c.loader = TRAIN_LOADER_COPY;
        run_mb(&c, NULL, &rc_, NULL);
        ck_assert_str_eq(rc_.loader, "copy");
        ck_assert_msg(fabs(rc_.test_acc - rv.test_acc) <= 0.01 && fabs(rc_.train_loss - rv.train_loss) <= ltol * rv.train_loss,
                      "case %zu: copy %.4f/%.6f vs view %.4f/%.6f", ci, rc_.test_acc, rc_.train_loss, rv.test_acc, rv.train_loss);
        ck_assert_msg(rv.test_acc > 0.4 && rv.test_acc < 0.99, "case %zu: test accuracy %.4f", ci, rv.test_acc);
        train_result_free(&rc_);
        train_result_free(&rb);
        train_result_free(&rv);
        train_result_free(&rm);
        mb_stats_free(&sb);
        mb_stats_free(&sv);
        mb_stats_free(&sm);
        free(xc);
        free(mc);
        store_close(&s);
    }
}
END_TEST

/* --memory-budget's baseline when measured (memory_baseline -1): the process's RssAnon as the
 * run starts, less the dataset's graph (rowptr and col, counted apart as the batch's need): a
 * graph of 4.3 MB here, measured just before mb_train, within 1 MB of allocator noise (mutation
 * test: the graph added instead of taken off passed the suite before). */
START_TEST(measured_baseline_leaves_out_the_graph) {
    dataset_t g;
    gen_opts_t go;
    gen_opts_default(&go);
    go.nodes = 60000;
    go.avg_degree = 16;
    go.features = 2;
    go.classes = 2;
    go.seed = 9;
    ck_assert_int_eq(gen_csbm(&go, &g, NULL), INCA_OK);
    partition_t p;
    ck_assert_int_eq(partition_compute(&g.adj, 4, PART_METIS, 0, &p), INCA_OK);
    train_config_t c;
    train_config_default(&c);
    c.method = tu_method("cluster");
    c.epochs = 1;
    c.hidden = 4;
    c.batch_parts = 4;
    c.memory_budget = (int64_t)1 << 40;
    ck_assert_int_eq(c.memory_baseline, -1);
    mb_opts_t o;
    mb_opts_default(&o);
    train_result_t r;
    mb_stats_t st;
    int64_t before = 0;
    ck_assert_int_eq(memstat_anon_now(&before), INCA_OK);
    ck_assert_int_eq(mb_train(&g, &c, g.split[SPLIT_TRAIN], g.split_n[SPLIT_TRAIN], 0, &p, &o, &r, &st), INCA_OK);
    const int64_t graph = (int64_t)sizeof(int64_t) * (g.n + 1) + (int64_t)sizeof(int32_t) * g.adj.nnz;
    ck_assert_int_gt(graph, 4 << 20);
    ck_assert_msg(llabs(st.anon_baseline_bytes - (before - graph)) <= 1 << 20,
                  "baseline %lld, RssAnon before the run %lld less the graph %lld", (long long)st.anon_baseline_bytes,
                  (long long)before, (long long)graph);
    ck_assert_int_eq(r.memory_baseline_bytes, st.anon_baseline_bytes);
    mb_stats_free(&st);
    train_result_free(&r);
    partition_free(&p);
    dataset_free(&g);
}
END_TEST

/* --pass-dtype bf16: the two pass buffers take n x width x 2 bytes fewer each (hand count);
 * GAS's training never reads them (its passes evaluate), so its training loss is the fp32
 * run's to the bit while its evaluation moves by bf16 rounding only; IncAgg's recompute refresh
 * reads them, so its training changes, by rounding too (the same accuracy within a point). */
START_TEST(bf16_pass_buffers) {
    const char *methods[] = {"gas", "incagg"};
    for (int mi = 0; mi < 2; mi++) {
        train_config_t c;
        base_config(&c);
        c.method = tu_method(methods[mi]);
        c.refresh_source = AGG_SRC_RECOMPUTE;
        c.layers = 3;
        c.hidden = 20;
        c.loader = TRAIN_LOADER_VIEW;
        const int want_m0 = mi == 1;
        store_t *s = NULL;
        layout_views_t v;
        ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
        ck_assert_int_eq(layout_ensure(s, &P, &D.adj, c.feature_norm, want_m0, NN_NORM_GCN, HIST_F32, 0, NULL), INCA_OK);
        ck_assert_int_eq(layout_open(s, &P, c.feature_norm, want_m0, NN_NORM_GCN, HIST_F32, &v), INCA_OK);
        train_result_t r32, r16;
        mb_stats_t s32, s16;
        run_mb(&c, &v, &r32, &s32);
        c.pass_dtype = HIST_BF16;
        run_mb(&c, &v, &r16, &s16);
        ck_assert_int_eq(s32.table_bytes - s16.table_bytes, 2 * D.n * c.hidden * 2);
        if (mi == 0) {
            ck_assert_msg(r16.train_loss == r32.train_loss, "gas: training loss %.9g vs %.9g", r16.train_loss, r32.train_loss);
        } else {
            ck_assert_msg(r16.train_loss != r32.train_loss, "incagg: the refresh did not read the bf16 buffers");
            ck_assert_msg(fabs(r16.train_loss - r32.train_loss) <= 1e-2 * r32.train_loss, "incagg: loss %.6f vs %.6f",
                          r16.train_loss, r32.train_loss);
        }
        ck_assert_msg(fabs(r16.test_acc - r32.test_acc) <= 0.01 && fabs(r16.val_acc - r32.val_acc) <= 0.01,
                      "%s: test %.4f vs %.4f, val %.4f vs %.4f", methods[mi], r16.test_acc, r32.test_acc, r16.val_acc,
                      r32.val_acc);
        ck_assert_msg(r16.test_acc > 0.4, "%s: test accuracy %.4f", methods[mi], r16.test_acc);
        train_result_free(&r32);
        train_result_free(&r16);
        mb_stats_free(&s32);
        mb_stats_free(&s16);
        store_close(&s);
    }
}
END_TEST

START_TEST(train_run_migrates_and_refuses) {
    /* train_run with --loader view on a store without the layout writes it, once, then maps it */
    dataset_t d;
    ck_assert_int_eq(dataset_load_ex(path, DATASET_NO_X | DATASET_NO_GRAPH, &d), INCA_OK);
    ck_assert_ptr_null(d.x);
    ck_assert_ptr_null(d.adj.rowptr);
    ck_assert(dataset_has_graph(&d));
    ck_assert_int_eq(d.f, D.f);
    train_config_t c;
    base_config(&c);
    c.loader = TRAIN_LOADER_VIEW;
    train_result_t r;
    ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_OK);
    ck_assert_str_eq(r.loader, "view");
    train_result_free(&r);
    store_t *s = NULL;
    char name[192];
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    layout_m0_name(name, sizeof name, P.man.name, TRAIN_FEATNORM_STANDARD, NN_NORM_GCN, HIST_F32);
    ck_assert(store_has_array(s, name));
    store_close(&s);
    /* the full-batch method and gcnii need the features in memory */
    c.method = tu_method("full");
    ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "features"));
    c.method = tu_method("incagg");
    c.model = tu_model("gcnii");
    ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--loader copy"));
    dataset_free(&d);
    int64_t b = 0;
    ck_assert_int_eq(args_size_parse("--memory-budget", "1.5G", &b), INCA_OK);
    ck_assert_int_eq(b, (int64_t)1536 << 20);
    ck_assert_int_eq(args_size_parse("--memory-budget", "512MB", &b), INCA_OK);
    ck_assert_int_eq(b, (int64_t)512 << 20);
    ck_assert_int_eq(args_size_parse("--memory-budget", "12x", &b), INCA_EINVAL);
    ck_assert_str_eq(inca_errmsg(), "--memory-budget: expected a size such as 1G, 512M or 2000000000, got '12x'");
    ck_assert_int_eq(args_size_parse("--memory-budget", "-1G", &b), INCA_EINVAL);
}
END_TEST

/* train_dataset_load (train_prep.h): the view loader maps the features and the graph from the
 * layout, so the dataset comes without them (a mutation test: the graph loaded all the same
 * passed every test); the copy loader loads both, as stored. */
START_TEST(train_dataset_load_by_loader) {
    train_config_t c;
    base_config(&c);
    dataset_t d;
    c.loader = TRAIN_LOADER_VIEW;
    ck_assert_int_eq(train_dataset_load(&c, &d), INCA_OK);
    ck_assert(d.x == NULL && d.adj.rowptr == NULL && dataset_has_graph(&d));
    ck_assert(d.n == D.n && d.f == D.f && d.c == D.c);
    ck_assert_mem_eq(d.y, D.y, (size_t)D.n * sizeof *D.y);
    dataset_free(&d);
    c.loader = TRAIN_LOADER_COPY;
    ck_assert_int_eq(train_dataset_load(&c, &d), INCA_OK);
    ck_assert(d.x != NULL && d.adj.rowptr != NULL && d.adj.nnz == D.adj.nnz);
    ck_assert_mem_eq(d.x, D.x, (size_t)(D.n * D.f) * sizeof *D.x);
    ck_assert_mem_eq(d.adj.col, D.adj.col, (size_t)D.adj.nnz * sizeof *D.adj.col);
    dataset_free(&d);
}
END_TEST

/* A dataset of one 5-node ring and nothing else. */
static void ring5(dataset_t *t) {
    dataset_init(t);
    t->n = 5;
    const int64_t src[5] = {0, 1, 2, 3, 4}, dst[5] = {1, 2, 3, 4, 0};
    ck_assert_int_eq(csr_from_edges(&t->adj, 5, src, dst, 5, CSR_SYMMETRIZE), INCA_OK);
}

/* train_partition(c) into *p, checked: k parts, and its *reused (set to `was` first). */
static void prep_partition(const dataset_t *d, const train_config_t *c, int was, int64_t k, int reused, partition_t *p) {
    int r = was;
    ck_assert_msg(train_partition(d, c, p, &r) == INCA_OK, "%s", inca_errmsg());
    ck_assert_int_eq(p->k, k);
    ck_assert_int_eq(p->n, d->n);
    ck_assert_int_eq(r, reused);
}

/* train_partition (train_prep.h; a mutation round: each rule below changed passed every test):
 * the stored metis-12-s0 is read (*reused 1); without a store it is computed, the same parts
 * (*reused 0, whatever it held); parts not set take train_common.h's default 40; never more
 * parts than nodes (5 nodes, 12 asked: 5); without a store, a dataset loaded without its graph
 * (the view loader's) is refused, the message naming --parts. */
START_TEST(train_partition_contract) {
    train_config_t c;
    base_config(&c);
    partition_t p;
    prep_partition(&D, &c, -1, 12, 1, &p);
    ck_assert_mem_eq(p.perm, P.perm, (size_t)D.n * sizeof *P.perm);
    partition_free(&p);
    c.store_path = NULL;
    prep_partition(&D, &c, 1, 12, 0, &p);
    ck_assert_mem_eq(p.perm, P.perm, (size_t)D.n * sizeof *P.perm);
    partition_free(&p);
    c.parts = 0;
    prep_partition(&D, &c, 1, 40, 0, &p);
    partition_free(&p);
    dataset_t t;
    ring5(&t);
    c.parts = 12;
    prep_partition(&t, &c, 1, 5, 0, &p);
    partition_free(&p);
    csr_free(&t.adj);
    int r = 1;
    ck_assert_int_eq(train_partition(&t, &c, &p, &r), INCA_EINVAL);
    /* the failure names the flag (a mutation test: the bare message passed) */
    ck_assert_msg(strncmp(inca_errmsg(), "--parts 5: the graph was not loaded", 35) == 0, "%s", inca_errmsg());
    inca_err_clear();
    dataset_free(&t);
}
END_TEST

/* A ParMETIS partitioning is never computed by train_partition, only read from the store (here
 * the fixture's parts stored under a ParMETIS name, as `inca partition --method parmetis` would
 * name them): read with *reused 1 (a mutation test: 0 passed every test, the MPI tests reading
 * the flag only from `inca partition`); one not stored is refused naming the command. */
START_TEST(train_partition_parmetis_from_store) {
    store_t *s = NULL;
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    snprintf(P.man.name, sizeof P.man.name, "parmetis-12-s4-r2");
    snprintf(P.man.method, sizeof P.man.method, "parmetis");
    P.man.seed = 4;
    ck_assert_int_eq(store_partition_save(s, &P), INCA_OK);
    store_close(&s);
    train_config_t c;
    base_config(&c);
    snprintf(c.partition, sizeof c.partition, "parmetis-12-s4");
    partition_t p;
    prep_partition(&D, &c, 0, 12, 1, &p);
    ck_assert_mem_eq(p.perm, P.perm, (size_t)D.n * sizeof *P.perm);
    partition_free(&p);
    snprintf(c.partition, sizeof c.partition, "parmetis-12-s5");
    ck_assert_int_eq(train_partition(&D, &c, &p, NULL), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "--partition parmetis-12-s5: not in ") &&
                  strstr(inca_errmsg(), "--method parmetis --seed 5"), "%s", inca_errmsg());
    inca_err_clear();
}
END_TEST

/* train_view_open (train_prep.h) writes and maps what the run reads: M^0 for incagg gcn and
 * sage only (sage's over the mean adjacency), none for gas, whose views have no M^0 and whose
 * store gains none (a mutation round: M^0 dropped for sage, or written for every method, passed
 * every test); a partitioning of another graph is refused with the store left closed. */
START_TEST(train_view_open_m0_by_method) {
    train_config_t c;
    base_config(&c);
    c.model = tu_model("sage");
    store_t *s = NULL;
    layout_views_t v;
    ck_assert_msg(train_view_open(&D, &c, &P, &s, &v) == INCA_OK, "%s", inca_errmsg());
    ck_assert_ptr_nonnull(v.m0);
    char name[192];
    layout_m0_name(name, sizeof name, P.man.name, c.feature_norm, NN_NORM_MEAN, HIST_F32);
    ck_assert(store_has_array(s, name));
    store_close(&s);
    c.model = tu_model("gcn");
    c.method = tu_method("gas");
    ck_assert_msg(train_view_open(&D, &c, &P, &s, &v) == INCA_OK, "%s", inca_errmsg());
    ck_assert(v.m0 == NULL && v.x != NULL && v.a.rowptr != NULL);
    layout_m0_name(name, sizeof name, P.man.name, c.feature_norm, NN_NORM_GCN, HIST_F32);
    ck_assert(!store_has_array(s, name));
    store_close(&s);
    dataset_t t;
    ring5(&t);
    partition_t q;
    ck_assert_int_eq(partition_compute(&t.adj, 2, PART_METIS, 0, &q), INCA_OK);
    ck_assert_int_eq(train_view_open(&D, &c, &q, &s, &v), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "metis-2-s0 covers 5 nodes, the store 1200"), "%s", inca_errmsg());
    ck_assert_ptr_null(s);
    inca_err_clear();
    partition_free(&q);
    dataset_free(&t);
}
END_TEST

/* bf16 M^0 is built in blocks of 65536 rows (build_m0): past the first block every row still
 * equals the fp32 M^0 rounded to nearest even (a graph of 65536 + 1000 nodes, 2 features) */
START_TEST(bf16_m0_past_one_block) {
    gen_opts_t o;
    gen_opts_default(&o);
    o.nodes = 65536 + 1000;
    o.avg_degree = 4;
    o.features = 2;
    o.classes = 2;
    o.seed = 3;
    dataset_t d;
    partition_t p;
    memset(&p, 0, sizeof p);
    ck_assert_int_eq(gen_csbm(&o, &d, NULL), INCA_OK);
    char bp[4200];
    snprintf(bp, sizeof bp, "%s/big.lmdb", dir);
    ck_assert_int_eq(dataset_save(&d, bp, 0), INCA_OK);
    store_t *s = NULL;
    ck_assert_int_eq(store_open(bp, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(store_partition_get(s, &d.adj, 4, PART_RANDOM, 0, &p, NULL), INCA_OK);
    ck_assert_int_eq(layout_ensure(s, &p, &d.adj, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_F32, 0, NULL), INCA_OK);
    ck_assert_int_eq(layout_ensure(s, &p, &d.adj, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_BF16, 0, NULL), INCA_OK);
    layout_views_t v;
    ck_assert_int_eq(layout_open(s, &p, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_F32, &v), INCA_OK);
    const int64_t nf = d.n * d.f;
    float *m32 = malloc(sizeof(float) * (size_t)nf);
    memcpy(m32, v.m0, sizeof(float) * (size_t)nf);
    ck_assert_int_eq(layout_open(s, &p, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_BF16, &v), INCA_OK);
    const uint16_t *m16 = v.m0;
    for (int64_t i = 0; i < nf; i++)
        ck_assert_msg(m16[i] == kern_f32_to_bf16(m32[i]), "bf16 M^0 entry %lld (row %lld): %04x, want %04x", (long long)i,
                      (long long)(i / d.f), m16[i], kern_f32_to_bf16(m32[i]));
    free(m32);
    store_close(&s);
    partition_free(&p);
    dataset_free(&d);
}
END_TEST

/* x of the layout named name replaced by its first count values (count past n f: zeros after) */
static void put_x_of_count(store_t *s, const char *name, const float *x, int64_t nf, int64_t count) {
    float *c = calloc((size_t)count, sizeof(float));
    memcpy(c, x, sizeof(float) * (size_t)(count < nf ? count : nf));
    store_wtx_t *w = NULL;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array_whole(w, name, DT_F32, c, count), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    free(c);
}

/* Each --feature-norm has its own x in the layout: standard's, written after row's, is built
 * beside it (the adjacency is shared) and holds the dataset's columns standardised (mean and
 * population deviation in double, here); row's keeps its rows divided by their sums. A layout
 * array of one value more or one value fewer than n f is refused as corrupt when it opens. */
START_TEST(layout_x_per_feature_norm_and_sized) {
    store_t *s = NULL;
    layout_views_t v;
    int built = 0;
    const int64_t n = D.n, f = D.f;
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(layout_ensure(s, &P, &D.adj, TRAIN_FEATNORM_ROW, 0, NN_NORM_GCN, HIST_F32, 0, &built), INCA_OK);
    ck_assert_int_eq(built, 5);   /* x and Â */
    ck_assert_int_eq(layout_ensure(s, &P, &D.adj, TRAIN_FEATNORM_STANDARD, 0, NN_NORM_GCN, HIST_F32, 0, &built), INCA_OK);
    ck_assert_int_eq(built, 1);   /* x alone */
    ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_STANDARD, 0, NN_NORM_GCN, HIST_F32, &v), INCA_OK);
    for (int64_t j = 0; j < f; j++) {
        double mu = 0, var = 0;
        for (int64_t u = 0; u < n; u++) mu += D.x[u * f + j];
        mu /= (double)n;
        for (int64_t u = 0; u < n; u++) var += (D.x[u * f + j] - mu) * (D.x[u * f + j] - mu);
        const double sd = sqrt(var / (double)n);
        ck_assert(sd > 0);
        for (int64_t u = 0; u < n; u++) {
            const double want = (D.x[u * f + j] - mu) / sd;
            ck_assert_msg(fabs(v.x[P.perm[u] * f + j] - want) <= 1e-5 * (fabs(want) + 1), "standard x (%lld, %lld): %g, want %g",
                          (long long)u, (long long)j, v.x[P.perm[u] * f + j], want);
        }
    }
    float *xs = malloc(sizeof(float) * (size_t)(n * f));
    memcpy(xs, v.x, sizeof(float) * (size_t)(n * f));
    ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_ROW, 0, NN_NORM_GCN, HIST_F32, &v), INCA_OK);
    for (int64_t u = 0; u < n; u++) {   /* row's: each row divided by its sum (double) */
        double sum = 0;
        for (int64_t j = 0; j < f; j++) sum += D.x[u * f + j];
        for (int64_t j = 0; j < f; j++) {
            const double want = sum != 0 ? D.x[u * f + j] / sum : 0;
            ck_assert_msg(fabs(v.x[P.perm[u] * f + j] - want) <= 1e-6 * (fabs(want) + 1e-3), "row x (%lld, %lld)", (long long)u,
                          (long long)j);
        }
    }
    char xn[192], want[256];
    layout_x_name(xn, sizeof xn, P.man.name, TRAIN_FEATNORM_STANDARD);
    for (int d = -1; d <= 1; d += 2) {
        put_x_of_count(s, xn, xs, n * f, n * f + d);
        ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_STANDARD, 0, NN_NORM_GCN, HIST_F32, &v), INCA_EINVAL);
        snprintf(want, sizeof want, "array %s has %lld values, expected %lld", xn, (long long)(n * f + d), (long long)(n * f));
        ck_assert_msg(strstr(inca_errmsg(), want), "%s", inca_errmsg());
    }
    free(xs);
    store_close(&s);
}
END_TEST

/* the meta record's count of labelled nodes of the store at p */
static int64_t store_meta_labeled_of(const char *p) {
    store_t *s = NULL;
    ck_assert_int_eq(store_open(p, STORE_RDONLY, &s), INCA_OK);
    const int64_t l = store_meta(s)->labeled;
    store_close(&s);
    return l;
}

/* A shard's arrays are the store's layout rows, directly (a mutation test: rank 1's M^0 slice
 * taken from the wrong rows was caught only because its loss went NaN under mpirun): for each of
 * 2 ranks, its own rows of x, M^0 and Â, and the halo rows of x its Â references, equal the whole
 * store's layout bit for bit; the rows it does not hold are empty in its Â. */
START_TEST(shard_rows_are_the_layout_rows) {
    char sd[4200];
    snprintf(sd, sizeof sd, "%s/shards", dir);
    shard_opts_t o = {.ranks = 2, .parts = 12, .featnorm = TRAIN_FEATNORM_NONE, .model = NN_GCN, .m0_dtype = HIST_F32};
    shard_stats_t st;
    ck_assert_msg(shard_write(path, &o, sd, &st) == INCA_OK, "%s", inca_errmsg());
    store_t *s = NULL;
    layout_views_t v;
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_F32, &v), INCA_OK);
    const int64_t f = v.f;
    for (int r = 0; r < 2; r++) {
        shard_t sh;
        ck_assert_msg(shard_open(sd, r, 2, &sh) == INCA_OK, "%s", inca_errmsg());
        const int64_t lo = sh.plan.node_lo[r], hi = sh.plan.node_lo[r + 1];
        ck_assert(hi > lo);
        const float *m0 = sh.v.m0, *m0s = v.m0;
        for (int64_t u = 0; u < v.n; u++) {
            const int64_t k0 = sh.v.a.rowptr[u], k1 = sh.v.a.rowptr[u + 1];
            if (u < lo || u >= hi) { ck_assert_int_eq(k1, k0); continue; }   /* not its row */
            ck_assert_msg(memcmp(sh.v.x + u * f, v.x + u * f, sizeof(float) * (size_t)f) == 0, "rank %d: x row %lld", r, (long long)u);
            ck_assert_msg(memcmp(m0 + u * f, m0s + u * f, sizeof(float) * (size_t)f) == 0, "rank %d: M^0 row %lld", r, (long long)u);
            ck_assert_int_eq(k1 - k0, v.a.rowptr[u + 1] - v.a.rowptr[u]);
            for (int64_t k = k0; k < k1; k++) {
                const int64_t ks = v.a.rowptr[u] + (k - k0), c = sh.v.a.col[k];
                ck_assert(c == v.a.col[ks] && sh.v.a.val[k] == v.a.val[ks]);
                ck_assert_msg(memcmp(sh.v.x + c * f, v.x + c * f, sizeof(float) * (size_t)f) == 0, "rank %d: halo x row %lld", r,
                              (long long)c);
            }
        }
        /* labels and split ids (the dataset's numbering): node u's label and split entries are in
         * the shard of the rank owning its row perm[u], and in no other */
        int64_t own_labeled = 0;
        for (int64_t u = 0; u < D.n; u++) {
            const int own = P.perm[u] >= lo && P.perm[u] < hi;
            ck_assert_msg(sh.d.y[u] == (own ? D.y[u] : -1), "rank %d: label of node %lld (row %lld of [%lld, %lld))", r,
                          (long long)u, (long long)P.perm[u], (long long)lo, (long long)hi);
            own_labeled += own && D.y[u] >= 0;
        }
        ck_assert_int_eq(store_meta_labeled_of(sh.path), own_labeled);
        for (int sp = 0; sp < SPLIT_COUNT; sp++) {
            int64_t k = 0;
            for (int64_t i = 0; i < D.split_n[sp]; i++) {
                const int64_t u = D.split[sp][i];
                if (P.perm[u] < lo || P.perm[u] >= hi) continue;
                ck_assert_msg(k < sh.d.split_n[sp] && sh.d.split[sp][k] == u, "rank %d: split %d entry %lld", r, sp, (long long)k);
                k++;
            }
            ck_assert_int_eq(sh.d.split_n[sp], k);
        }
        shard_free(&sh);
    }
    store_close(&s);
}
END_TEST

/* bf16 M^0 in shards (2 bytes a value: rank 1's slice starts lo f values, lo f 2 bytes, in):
 * each rank's own rows are the store's bf16 layout rows bit for bit, the others zero */
START_TEST(bf16_shard_m0_rows) {
    char sd[4200];
    snprintf(sd, sizeof sd, "%s/shards-bf16", dir);
    shard_opts_t o = {.ranks = 2, .parts = 12, .featnorm = TRAIN_FEATNORM_NONE, .model = NN_GCN, .m0_dtype = HIST_BF16};
    shard_stats_t st;
    ck_assert_msg(shard_write(path, &o, sd, &st) == INCA_OK, "%s", inca_errmsg());
    store_t *s = NULL;
    layout_views_t v;
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(layout_open(s, &P, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_BF16, &v), INCA_OK);
    const int64_t f = v.f;
    const uint16_t *whole = v.m0;
    for (int r = 0; r < 2; r++) {
        shard_t sh;
        ck_assert_msg(shard_open(sd, r, 2, &sh) == INCA_OK, "%s", inca_errmsg());
        ck_assert_int_eq(sh.v.m0_dtype, HIST_BF16);
        const int64_t lo = sh.plan.node_lo[r], hi = sh.plan.node_lo[r + 1];
        ck_assert(lo < hi);
        const uint16_t *m0 = sh.v.m0;
        for (int64_t u = 0; u < v.n; u++)
            for (int64_t j = 0; j < f; j++) {
                const uint16_t want = u >= lo && u < hi ? whole[u * f + j] : 0;
                ck_assert_msg(m0[u * f + j] == want, "rank %d: bf16 M^0 (%lld, %lld) = %04x, want %04x", r, (long long)u,
                              (long long)j, m0[u * f + j], want);
            }
        shard_free(&sh);
    }
    store_close(&s);
}
END_TEST

/* A directed graph's gcn shards carry their own rows of Âᵀ (the backward's; Â for Âᵀ would
 * train another model): for each of 2 ranks, shard_open gives Âᵀ's own rows equal to the whole
 * store's layout (written by the shards' run), its other rows empty. */
START_TEST(directed_gcn_shards_keep_the_transpose) {
    dataset_t dd;
    directed_copy(&dd);
    char dpath[4200], sd[4200];
    snprintf(dpath, sizeof dpath, "%s/dir.lmdb", dir);
    snprintf(sd, sizeof sd, "%s/dir-shards", dir);
    ck_assert_int_eq(dataset_save(&dd, dpath, 0), INCA_OK);
    store_t *s = NULL;
    partition_t pr;
    ck_assert_int_eq(store_open(dpath, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(store_partition_get(s, &dd.adj, 12, PART_RANDOM, 0, &pr, NULL), INCA_OK);
    store_close(&s);
    csr_free(&dd.adj);
    shard_opts_t o = {.ranks = 2, .parts = 12, .featnorm = TRAIN_FEATNORM_NONE, .model = NN_GCN, .m0_dtype = HIST_F32};
    snprintf(o.partition, sizeof o.partition, "%s", pr.man.name);
    shard_stats_t st;
    ck_assert_msg(shard_write(dpath, &o, sd, &st) == INCA_OK, "%s", inca_errmsg());
    layout_views_t v;
    ck_assert_int_eq(store_open(dpath, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(layout_open(s, &pr, TRAIN_FEATNORM_NONE, 1, NN_NORM_GCN, HIST_F32, &v), INCA_OK);
    ck_assert_ptr_nonnull(v.at.rowptr);   /* the store's layout keeps it (the test above) */
    for (int r = 0; r < 2; r++) {
        shard_t sh;
        ck_assert_msg(shard_open(sd, r, 2, &sh) == INCA_OK, "%s", inca_errmsg());
        ck_assert_msg(sh.v.at.rowptr != NULL, "rank %d: the shard has no Âᵀ", r);
        const int64_t lo = sh.plan.node_lo[r], hi = sh.plan.node_lo[r + 1];
        ck_assert(hi > lo);
        for (int64_t u = 0; u < v.n; u++) {
            const int64_t k0 = sh.v.at.rowptr[u], k1 = sh.v.at.rowptr[u + 1];
            if (u < lo || u >= hi) { ck_assert_int_eq(k1, k0); continue; }
            ck_assert_int_eq(k1 - k0, v.at.rowptr[u + 1] - v.at.rowptr[u]);
            for (int64_t k = k0; k < k1; k++) {
                const int64_t ks = v.at.rowptr[u] + (k - k0);
                ck_assert_msg(sh.v.at.col[k] == v.at.col[ks] && sh.v.at.val[k] == v.at.val[ks], "rank %d: Âᵀ row %lld", r,
                              (long long)u);
            }
        }
        shard_free(&sh);
    }
    store_close(&s);
    partition_free(&pr);
}
END_TEST

int main(void) {
    Suite *s = suite_create("layout");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 300);
    tcase_add_loop_test(t, arrays_match_independent_reference, 0, 3);
    tcase_add_loop_test(t, views_equal_copies_and_budget_spills, 0, 2);
    tcase_add_test(t, train_run_migrates_and_refuses);
    tcase_add_test(t, train_dataset_load_by_loader);
    tcase_add_test(t, train_partition_contract);
    tcase_add_test(t, train_partition_parmetis_from_store);
    tcase_add_test(t, train_view_open_m0_by_method);
    tcase_add_test(t, bf16_pass_buffers);
    tcase_add_test(t, measured_baseline_leaves_out_the_graph);
    tcase_add_test(t, directed_gcn_layout_keeps_the_transpose);
    tcase_add_test(t, bf16_m0_past_one_block);
    tcase_add_test(t, shard_rows_are_the_layout_rows);
    tcase_add_test(t, layout_x_per_feature_norm_and_sized);
    tcase_add_test(t, directed_gcn_shards_keep_the_transpose);
    tcase_add_test(t, bf16_shard_m0_rows);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
