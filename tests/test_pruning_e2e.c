/* End-to-end tests of the pruning pipeline on small synthetic data: Gaussian blobs (features
 * only) saved as a store, and a contextual SBM graph from `inca gen`. Covers the library calls
 * (labelled pick, pseudo-label quality, dynamics, selection) and the `inca prune` CLI: the
 * hidden-label test (two stores that differ only in the labels outside the labelled subset give
 * bit-identical pseudo-labels, dynamics and selections), stored-dynamics reuse and its key
 * check, the pruned store's contents, --eval --json keys, usage errors (exit 2), and a smoke run
 * of `inca bench pruning`. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "loaders/dataset.h"
#include "graph/split.h"
#include "loaders/store.h"
#include "loaders/npy.h"
#include "pruning/knn.h"
#include "pruning/eval.h"
#include "pruning/dyn_io.h"
#include "graph/gen.h"
#include "nn/train.h"
#include "pruning/labeled.h"
#include "pruning/pipeline.h"
#include "pruning/pseudo.h"
#include "pruning/proxy.h"
#include "pruning/score_select.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NPOOL = 600, NTEST = 150, F = 8, C = 3 };

/* Three well-separated Gaussian blobs; the first NPOOL rows are the train split (pool), the
 * rest the test split. Class of row i: i % C. */
static void make_blobs(dataset_t *d, uint64_t seed) {
    dataset_init(d);
    int64_t n = NPOOL + NTEST;
    d->n = n;
    d->f = F;
    d->c = C;
    d->x = inca_malloc((size_t)n * F * sizeof *d->x);
    d->y = inca_malloc((size_t)n * sizeof *d->y);
    d->split[SPLIT_TRAIN] = inca_malloc(NPOOL * sizeof(int64_t));
    d->split[SPLIT_TEST] = inca_malloc(NTEST * sizeof(int64_t));
    ck_assert(d->x && d->y && d->split[SPLIT_TRAIN] && d->split[SPLIT_TEST]);
    rng_t g;
    rng_seed(&g, seed);
    for (int64_t i = 0; i < n; i++) {
        int32_t k = (int32_t)(i % C);
        d->y[i] = k;
        for (int t = 0; t < F; t++) d->x[i * F + t] = (float)(rng_normal(&g) * 0.6 + (t % C == k ? 2.0 : 0.0));
    }
    for (int64_t i = 0; i < NPOOL; i++) d->split[SPLIT_TRAIN][i] = i;
    for (int64_t i = 0; i < NTEST; i++) d->split[SPLIT_TEST][i] = NPOOL + i;
    d->split_n[SPLIT_TRAIN] = NPOOL;
    d->split_n[SPLIT_TEST] = NTEST;
    snprintf(d->source, sizeof d->source, "test:blobs");
}

/* The labelled subset of the pool (prune_labeled_pick) and the visible labels it leaves (owned) */
static int32_t *visible_labels(const dataset_t *d, const int64_t *pool, double frac, int64_t per_class, uint64_t seed,
                               int64_t **lab, int64_t *nlab) {
    ck_assert_int_eq(prune_labeled_pick(d->y, C, pool, NPOOL, frac, per_class, seed, lab, nlab), 0);
    int32_t *yv = inca_malloc((size_t)d->n * sizeof *yv);
    ck_assert_ptr_nonnull(yv);
    ck_assert_int_eq(prune_visible_labels(d->y, d->n, *lab, *nlab, yv), 0);
    return yv;
}

static void small_config(prune_config_t *cfg) {
    prune_config_default(cfg);
    cfg->knn_k = 8;
    cfg->proxy.hidden = 16;
    cfg->proxy.epochs = 15;
    cfg->proxy.lr = 0.05;
    cfg->st.epochs = 30;
    cfg->sel.keep = 0.3;
    cfg->sel.mis_ratio = 0.1;
    cfg->seed = 5;
    cfg->sel.seed = 5;
}

/* Each class a ring over the blobs' rows (node i linked to i + C and i + 2C); edges 0: the same
 * rows with a graph of no edges. */
static void ring_graph(dataset_t *d, int edges) {
    int64_t src[2 * (NPOOL + NTEST)], dst[2 * (NPOOL + NTEST)];
    for (int64_t i = 0; i < d->n; i++) {
        src[2 * i] = src[2 * i + 1] = i;
        dst[2 * i] = (i + C) % d->n;
        dst[2 * i + 1] = (i + 2 * C) % d->n;
    }
    ck_assert_int_eq(csr_from_edges(&d->adj, d->n, src, dst, edges ? 2 * d->n : 0, CSR_SYMMETRIZE), 0);
}

/* SGC over a dataset's graph, with a pool listed in reverse so that pool positions and node ids
 * differ (each class a ring: node i linked to i + C and i + 2C); then the same dataset without
 * features, which SGC refuses. */
START_TEST(pipeline_sgc_graph_and_no_features) {
    dataset_t d;
    make_blobs(&d, 4);
    ring_graph(&d, 1);
    int64_t pool[NPOOL];
    for (int64_t i = 0; i < NPOOL; i++) pool[i] = NPOOL - 1 - i;
    int64_t *lab = NULL, nlab = 0;
    int32_t *yv = visible_labels(&d, pool, 0.02, 0, 3, &lab, &nlab);
    dataset_t dv = d;
    dv.y = yv;
    prune_config_t cfg;
    small_config(&cfg);
    cfg.ssl = PRUNE_SSL_SGC;
    cfg.graph = 1;
    prune_result_t r;
    ck_assert_int_eq(prune_run(&dv, pool, NPOOL, &cfg, &r), 0);
    ck_assert_int_eq(r.ssl_used, PRUNE_SSL_SGC);
    ck_assert_int_eq(r.knn_features_used, -1);
    int right = 0;
    for (int64_t i = 0; i < NPOOL; i++) right += r.pseudo[i] == d.y[pool[i]];
    ck_assert_msg(right > 0.95 * NPOOL, "sgc over the graph: %d of %d right", right, NPOOL);
    for (int64_t i = 0; i < NPOOL; i++)
        if (yv[pool[i]] >= 0) ck_assert(r.pseudo[i] == yv[pool[i]] && r.conf[i] == 1.0f);
    prune_result_free(&r);
    /* SGC then Correct and Smooth over the same graph: the labelled rows keep their labels, the
     * rest are at least as right as SGC's (on rings of one class each, smoothing cannot mislead) */
    cfg.ssl = PRUNE_SSL_CS;
    ck_assert_int_eq(prune_run(&dv, pool, NPOOL, &cfg, &r), 0);
    ck_assert_int_eq(r.ssl_used, PRUNE_SSL_CS);
    ck_assert_int_eq(r.knn_features_used, -1);
    int right_cs = 0;
    for (int64_t i = 0; i < NPOOL; i++) right_cs += r.pseudo[i] == d.y[pool[i]];
    ck_assert_msg(right_cs >= right, "cs over the graph: %d of %d right, sgc %d", right_cs, NPOOL, right);
    for (int64_t i = 0; i < NPOOL; i++)
        if (yv[pool[i]] >= 0) ck_assert(r.pseudo[i] == yv[pool[i]] && r.conf[i] == 1.0f);
    prune_result_free(&r);
    /* no features: a message, nothing run */
    INCA_FREE(d.x);
    d.f = 0;
    dv = d;
    dv.y = yv;
    ck_assert_int_eq(prune_run(&dv, pool, NPOOL, &cfg, &r), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--ssl cs: the dataset has no features"));
    inca_err_clear();
    cfg.ssl = PRUNE_SSL_SGC;
    ck_assert_int_eq(prune_run(&dv, pool, NPOOL, &cfg, &r), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--ssl sgc: the dataset has no features"));
    inca_err_clear();
    inca_free(lab);
    inca_free(yv);
    dataset_free(&d);
}
END_TEST

/* prune_run's refusals (pipeline.c's check; a mutation round: each check weakened or dropped
 * passed every test, the CLI refusing most of these cases before prune_run): no labels, one
 * class, a pool of one, a pool id outside [0, n) on either side, --graph on a table and on a
 * graph of no edges; each an EINVAL naming the cause, r left empty. */
static void refused_run(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg,
                        const char *msg) {
    prune_result_t r;
    ck_assert_int_eq(prune_run(dv, pool, npool, cfg, &r), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), msg) != NULL, "expected '%s', got '%s'", msg, inca_errmsg());
    ck_assert(r.pool == NULL && r.pseudo == NULL && r.sel == NULL && r.npool == 0);
    inca_err_clear();
}

START_TEST(prune_run_refusals) {
    dataset_t d;
    make_blobs(&d, 6);
    const int64_t *pool = d.split[SPLIT_TRAIN];
    int64_t *lab = NULL, nlab = 0;
    int32_t *yv = visible_labels(&d, pool, 0.05, 0, 3, &lab, &nlab);
    dataset_t dv = d, t;
    dv.y = yv;
    prune_config_t cfg;
    small_config(&cfg);
    t = dv;
    t.y = NULL;
    refused_run(&t, pool, NPOOL, &cfg, "the dataset has no labels");
    t = dv;
    t.c = 1;
    refused_run(&t, pool, NPOOL, &cfg, "need at least 2 classes, got 1");
    refused_run(&dv, pool, 1, &cfg, "holds 1 examples; need >= 2");
    int64_t bad[NPOOL];
    memcpy(bad, pool, sizeof bad);
    bad[NPOOL - 1] = NPOOL + NTEST;
    refused_run(&dv, bad, NPOOL, &cfg, "pool id 750 outside [0, 750)");
    bad[NPOOL - 1] = -1;
    refused_run(&dv, bad, NPOOL, &cfg, "pool id -1 outside [0, 750)");
    cfg.graph = 1;
    refused_run(&dv, pool, NPOOL, &cfg, "--graph: the dataset has no graph");
    ring_graph(&d, 0);
    t = d;
    t.y = yv;
    refused_run(&t, pool, NPOOL, &cfg, "--graph: the dataset has no graph");
    inca_free(lab);
    inca_free(yv);
    dataset_free(&d);
}
END_TEST

/* A train_log_cb appending each line to ctx (a char[8192]). */
static void log_append(void *ctx, int level, const char *line) {
    (void)level;
    char *buf = ctx;
    const size_t len = strlen(buf);
    snprintf(buf + len, 8192 - len, "%s\n", line);
}

/* Which graph each stage uses (pipeline.h, prune_config.h): --graph auto spreads over the
 * dataset's graph (no kNN search ran: knn_used -1) and the proxy is a GCN; --graph knn searches
 * (knn_used exact) and the full-batch proxy is an MLP, but a mini-batch proxy method still trains
 * a GCN on the dataset's graph; a graph of no edges counts as none (kNN). The proxy line says the
 * model, the proxy stage has its seconds. A mutation round: each of these rules changed passed. */
static void graph_choice_case(const dataset_t *dv, const int64_t *pool, prune_config_t *cfg, int graph, int method,
                              int knn_used, const char *line) {
    char log[8192] = "";
    cfg->graph = graph;
    cfg->proxy.method = method;
    cfg->proxy.log = log_append;
    cfg->proxy.log_ctx = log;
    prune_result_t r;
    ck_assert_msg(prune_run(dv, pool, NPOOL, cfg, &r) == INCA_OK, "graph %d method %d: %s", graph, method, inca_errmsg());
    ck_assert_msg(r.knn_used == knn_used, "graph %d method %d: knn_used %d, expected %d", graph, method, r.knn_used,
                  knn_used);
    ck_assert_msg(strstr(log, line) != NULL, "graph %d method %d: no '%s' in the log: %s", graph, method, line, log);
    ck_assert(r.sec[PRUNE_ST_PROXY] > 0);
    prune_result_free(&r);
}

START_TEST(prune_run_graph_choice) {
    dataset_t d;
    make_blobs(&d, 7);
    ring_graph(&d, 1);
    const int64_t *pool = d.split[SPLIT_TRAIN];
    int64_t *lab = NULL, nlab = 0;
    int32_t *yv = visible_labels(&d, pool, 0.05, 0, 3, &lab, &nlab);
    dataset_t dv = d;
    dv.y = yv;
    prune_config_t cfg;
    small_config(&cfg);
    cfg.ssl = PRUNE_SSL_LABELPROP;
    cfg.knn_search = PRUNE_KNN_EXACT;
    cfg.proxy.parts = 1;
    cfg.proxy.batch_parts = 1;
    graph_choice_case(&dv, pool, &cfg, -1, TRAIN_FULL, -1, "proxy training (gcn)");
    graph_choice_case(&dv, pool, &cfg, 0, TRAIN_FULL, PRUNE_KNN_EXACT, "proxy training (mlp)");
    graph_choice_case(&dv, pool, &cfg, 0, TRAIN_CLUSTER, PRUNE_KNN_EXACT, "proxy training (gcn)");
    csr_free(&d.adj);
    ring_graph(&d, 0);
    dv = d;
    dv.y = yv;
    graph_choice_case(&dv, pool, &cfg, -1, TRAIN_FULL, PRUNE_KNN_EXACT, "proxy training (mlp)");
    inca_free(lab);
    inca_free(yv);
    dataset_free(&d);
}
END_TEST

/* prune_labeled_pick by hand (a mutation round: floor(fraction n_c) for round(...), the
 * max(1, ...) floor dropped and the seed ignored all passed the blobs' 4-per-class pick): a pool
 * of 15 in the order 14..0, nodes 0-9 of class 0, 10-12 of class 1, 13 of class 2, 14 unlabelled.
 * Fraction 0.5 takes round(5) = 5, round(1.5) = 2 and max(1, round(0.5)) = 1; fraction 0.05
 * takes max(1, round(0.5)) = 1, max(1, round(0.15)) = 1 and 1; per_class 2 takes 2, 2 and 1.
 * The ids come sorted, each a pool member of its class, none twice, the unlabelled node never;
 * the same seed picks the same ids, and over 8 seeds class 0's single pick (1 of 10) is not
 * always the same node (a uniform shuffle repeats it 8 times with probability 1e-7). */
static void labeled_pick_counts(const int32_t *y, const int64_t *pool, double frac, int64_t per_class, uint64_t seed,
                                const int64_t want[3], int64_t *first0) {
    int64_t *ids = NULL, nids = 0, got[3] = {0};
    ck_assert_int_eq(prune_labeled_pick(y, 3, pool, 15, frac, per_class, seed, &ids, &nids), INCA_OK);
    ck_assert_int_eq(nids, want[0] + want[1] + want[2]);
    for (int64_t t = 0; t < nids; t++) {
        ck_assert(ids[t] >= 0 && ids[t] < 14 && (t == 0 || ids[t - 1] < ids[t]));
        got[y[ids[t]]]++;
    }
    for (int k = 0; k < 3; k++)
        ck_assert_msg(got[k] == want[k], "fraction %g per_class %lld: class %d took %lld, want %lld", frac,
                      (long long)per_class, k, (long long)got[k], (long long)want[k]);
    if (first0) *first0 = ids[0];
    inca_free(ids);
}

START_TEST(labeled_pick_by_hand) {
    int32_t y[15];
    int64_t pool[15];
    for (int i = 0; i < 15; i++) {
        y[i] = i < 10 ? 0 : i < 13 ? 1 : i < 14 ? 2 : -1;
        pool[i] = 14 - i;
    }
    const int64_t half[3] = {5, 2, 1}, tiny[3] = {1, 1, 1}, two[3] = {2, 2, 1};
    labeled_pick_counts(y, pool, 0.5, 0, 1, half, NULL);
    labeled_pick_counts(y, pool, 0.05, 0, 1, tiny, NULL);
    labeled_pick_counts(y, pool, 0.0, 2, 1, two, NULL);
    int64_t a = -1, b = -1, seen[8];
    int differ = 0;
    for (uint64_t s = 0; s < 8; s++) {
        labeled_pick_counts(y, pool, 0.05, 0, 100 + s, tiny, &seen[s]);
        differ |= seen[s] != seen[0];
    }
    ck_assert_msg(differ, "8 seeds all labelled node %lld of class 0", (long long)seen[0]);
    labeled_pick_counts(y, pool, 0.05, 0, 7, tiny, &a);
    labeled_pick_counts(y, pool, 0.05, 0, 7, tiny, &b);
    ck_assert_int_eq(a, b);
}
END_TEST

/* --ssl auto's check breaks a tie for the earlier candidate (a mutation round: >= for > in the
 * pick, the last of the tied, passed every case above, where the candidates differ): every row
 * of class k is the same point, 5 on the features t with t % C == k and 0 elsewhere, so each
 * candidate (spreading and SGC over the raw, whitened and square-rooted whitened views, and the
 * proxy) gets every hidden row right, and spreading over the raw rows, the first, labels the pool. */
START_TEST(ssl_check_tie_keeps_the_first) {
    dataset_t d;
    make_blobs(&d, 21);
    for (int64_t i = 0; i < d.n; i++)
        for (int t = 0; t < F; t++) d.x[i * F + t] = t % C == d.y[i] ? 5.0f : 0.0f;
    int64_t *lab = NULL, nlab = 0;
    int32_t *yv = visible_labels(&d, d.split[SPLIT_TRAIN], 0.1, 0, 3, &lab, &nlab);
    dataset_t dv = d;
    dv.y = yv;
    prune_config_t cfg;
    small_config(&cfg);
    ck_assert_int_eq(cfg.ssl, PRUNE_SSL_AUTO);
    prune_result_t r;
    ck_assert_int_eq(prune_run(&dv, d.split[SPLIT_TRAIN], NPOOL, &cfg, &r), 0);
    ck_assert_int_eq(r.ssl_check_n, nlab);
    int ncand = 0;
    for (int k = 0; k < PRUNE_CAND_COUNT; k++) {
        if (isnan(r.ssl_check_acc[k])) continue;
        ncand++;
        ck_assert_msg(r.ssl_check_acc[k] == 1.0, "candidate %d: %g, the case does not tie them", k, r.ssl_check_acc[k]);
    }
    ck_assert_int_eq(ncand, 7);
    ck_assert_int_eq(r.ssl_used, PRUNE_SSL_LABELPROP);
    ck_assert_int_eq(r.knn_features_used, PRUNE_KF_RAW);
    prune_result_free(&r);
    inca_free(lab);
    inca_free(yv);
    dataset_free(&d);
}
END_TEST

/* The sqrt-whiten view spreads over the square roots (a mutation round: the rows whitened
 * without their square roots passed every case above). One feature: class 0 at 0 and 1, class 1
 * at 99 and 100, the unlabelled row at 36. Whitening one feature is an increasing affine map, so
 * with k = 1 euclidean neighbours the row's only edge goes to its nearest in the view: raw, 1
 * (35 against 63), class 0; square roots 6 against 0, 1, 9.95 and 10, 99 (3.95 against 5),
 * class 1. */
START_TEST(sqrt_whiten_view_spreads_over_roots) {
    dataset_t d;
    dataset_init(&d);
    d.n = 5;
    d.f = 1;
    d.c = 2;
    d.x = inca_malloc(5 * sizeof *d.x);
    d.y = inca_malloc(5 * sizeof *d.y);
    ck_assert(d.x && d.y);
    const float xs[5] = {0, 1, 36, 99, 100};
    const int32_t ys[5] = {0, 0, -1, 1, 1};
    memcpy(d.x, xs, sizeof xs);
    memcpy(d.y, ys, sizeof ys);
    const int64_t pool[5] = {0, 1, 2, 3, 4};
    prune_config_t cfg;
    prune_config_default(&cfg);
    cfg.knn_k = 1;
    cfg.metric = KNN_EUCLIDEAN;
    cfg.knn_search = PRUNE_KNN_EXACT;
    const int views[2] = {PRUNE_KF_WHITEN, PRUNE_KF_SQRT_WHITEN}, want[2] = {0, 1};
    for (int v = 0; v < 2; v++) {
        int32_t pseudo[5];
        float conf[5];
        prune_result_t r = {0};
        r.npool = 5;
        r.pseudo = pseudo;
        r.conf = conf;
        csr_t w = {0};
        ck_assert_int_eq(pseudo_labelprop(&d, pool, 5, &cfg, 0, views[v], &r, &w), INCA_OK);
        ck_assert_msg(pseudo[2] == want[v], "view %d: row 36 labelled %d, want %d", views[v], pseudo[2], want[v]);
        ck_assert(conf[2] > 0.99f);
        csr_free(&w);
    }
    dataset_free(&d);
}
END_TEST

START_TEST(pipeline_blobs_labelprop) {
    dataset_t d;
    make_blobs(&d, 1);
    int64_t *lab = NULL, nlab = 0;
    ck_assert_int_eq(prune_labeled_pick(d.y, C, d.split[SPLIT_TRAIN], NPOOL, 0.02, 0, 3, &lab, &nlab), 0);
    ck_assert_int_eq(nlab, 12);   /* round(0.02 * 200) = 4 per class */
    int cls[C] = {0};
    for (int64_t t = 0; t < nlab; t++) { ck_assert(lab[t] < NPOOL); cls[d.y[lab[t]]]++; }
    for (int k = 0; k < C; k++) ck_assert_int_eq(cls[k], 4);
    int32_t *yv = inca_malloc((size_t)d.n * sizeof *yv);
    ck_assert_int_eq(prune_visible_labels(d.y, d.n, lab, nlab, yv), 0);
    dataset_t dv = d;
    dv.y = yv;
    prune_config_t cfg;
    small_config(&cfg);
    prune_result_t r;
    ck_assert_int_eq(prune_run(&dv, d.split[SPLIT_TRAIN], NPOOL, &cfg, &r), 0);
    double acc = prune_pseudo_acc(d.y, yv, &r);
    ck_assert_msg(acc > 0.9, "pseudo-label accuracy %g", acc);
    for (int64_t t = 0; t < nlab; t++) ck_assert_int_eq(r.pseudo[lab[t]], d.y[lab[t]]);
    ck_assert_int_eq(r.dyn.epochs, 15);
    ck_assert_int_eq(r.nsel, 180);
    for (int64_t t = 1; t < r.nsel; t++) ck_assert(r.sel[t - 1] < r.sel[t]);
    ck_assert(r.sel[r.nsel - 1] < NPOOL);
    /* AUM agrees with the recorded dynamics */
    double s = 0;
    for (int e = 0; e < r.dyn.epochs; e++) s += (double)r.dyn.py[(size_t)e * NPOOL + 7] - r.dyn.pmo[(size_t)e * NPOOL + 7];
    ck_assert_float_eq_tol(r.aum[7], s, 1e-4);
    /* the 10% lowest-AUM examples are never selected by CCS */
    int low = 0;
    for (int64_t i = 0; i < NPOOL; i++) {
        int below = 0;
        for (int64_t j = 0; j < NPOOL; j++) below += r.aum[j] < r.aum[i] || (r.aum[j] == r.aum[i] && j < i);
        if (below < 60) {
            low++;
            for (int64_t t = 0; t < r.nsel; t++) ck_assert(r.sel[t] != i);
        }
    }
    ck_assert_int_eq(low, 60);
    /* rerunning scoring/selection alone reproduces it; another selector differs */
    int64_t *keep = inca_malloc((size_t)r.nsel * sizeof *keep), nk = r.nsel;
    memcpy(keep, r.sel, (size_t)nk * sizeof *keep);
    ck_assert_int_eq(prune_score_select(&cfg, C, &r), 0);
    ck_assert_int_eq(r.nsel, nk);
    ck_assert_mem_eq(r.sel, keep, (size_t)nk * sizeof *keep);
    cfg.sel.kind = SEL_DOUBLE_END;
    ck_assert_int_eq(prune_score_select(&cfg, C, &r), 0);
    ck_assert_int_eq(r.nsel, nk);
    ck_assert(memcmp(r.sel, keep, (size_t)nk * sizeof *keep) != 0);
    inca_free(keep);
    prune_result_free(&r);
    inca_free(yv);
    inca_free(lab);
    dataset_free(&d);
}
END_TEST

START_TEST(pipeline_blobs_selftrain) {
    dataset_t d;
    make_blobs(&d, 2);
    int64_t *lab = NULL, nlab = 0;
    int32_t *yv = visible_labels(&d, d.split[SPLIT_TRAIN], 0, 5, 4, &lab, &nlab);
    ck_assert_int_eq(nlab, 15);
    dataset_t dv = d;
    dv.y = yv;
    prune_config_t cfg;
    small_config(&cfg);
    cfg.ssl = PRUNE_SSL_SELFTRAIN;
    prune_result_t r;
    ck_assert_int_eq(prune_run(&dv, d.split[SPLIT_TRAIN], NPOOL, &cfg, &r), 0);
    double acc = prune_pseudo_acc(d.y, yv, &r);
    ck_assert_msg(acc > 0.9, "self-training pseudo-label accuracy %g", acc);
    for (int64_t i = 0; i < NPOOL; i++) ck_assert(r.conf[i] >= 0 && r.conf[i] <= 1);
    prune_result_free(&r);
    inca_free(yv);
    inca_free(lab);
    dataset_free(&d);
}
END_TEST

static char *path_in(const char *dir, const char *name) {
    char *p = NULL;
    ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
    return p;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static int run_inca(const char *fmt, const char *a, const char *b, const char *c2, char **out, char **err) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, fmt, a, b, c2);
    return tu_inca(cmd, out, err);
}

/* Store B = store A with every label outside the labelled subset rotated (hidden pool labels
 * and test labels). With the same --labeled-indices, pruning must not notice. */
static void hidden_label_case(const char *ssl, const char *extra) {
    char *dir = tu_mkdtemp();
    char *sa = path_in(dir, "a"), *sb = path_in(dir, "b"), *labf = path_in(dir, "lab.txt");
    char *ia = path_in(dir, "ia.txt"), *ib = path_in(dir, "ib.txt");
    dataset_t d;
    make_blobs(&d, 3);
    int64_t *lab = NULL, nlab = 0;
    ck_assert_int_eq(prune_labeled_pick(d.y, C, d.split[SPLIT_TRAIN], NPOOL, 0.03, 0, 9, &lab, &nlab), 0);
    ck_assert_int_eq(indices_write_text(labf, lab, nlab), 0);
    ck_assert_int_eq(dataset_save(&d, sa, 0), 0);
    char *is_lab = calloc((size_t)d.n, 1);
    for (int64_t t = 0; t < nlab; t++) is_lab[lab[t]] = 1;
    int64_t changed = 0;
    for (int64_t i = 0; i < d.n; i++)
        if (!is_lab[i]) { d.y[i] = (d.y[i] + 1) % C; changed++; }
    ck_assert_int_eq(changed, d.n - nlab);
    ck_assert_int_eq(dataset_save(&d, sb, 0), 0);
    char flags[512];
    snprintf(flags, sizeof flags,
             "--ssl %s --labeled-indices %s --knn 8 --proxy-hidden 16 --proxy-epochs 12%s --keep 0.2 "
             "--proxy-lr 0.01 --proxy-batch-size 0 --feature-norm none "   /* full-batch, not the table defaults */
             "--mis-ratio 0.1 --select ccs --seed 4 --threads 2 --json %s", ssl, labf,
             strcmp(ssl, "selftrain") == 0 ? " --ssl-epochs 20" : "", extra);   /* self-training's alone */
    char *out = NULL, *err = NULL;
    char fmt[1024];
    snprintf(fmt, sizeof fmt, "prune %%s --indices %%s %s%%s", flags);
    ck_assert_msg(run_inca(fmt, sa, ia, "", &out, &err) == 0, "prune A failed: %s", err);
    double acc_a = tu_json_num(tu_last_line(out), "pseudo_label_acc");
    free(out); free(err);
    ck_assert_msg(run_inca(fmt, sb, ib, "", &out, &err) == 0, "prune B failed: %s", err);
    double acc_b = tu_json_num(tu_last_line(out), "pseudo_label_acc");
    free(out); free(err);
    /* the evaluation differs (B's hidden labels are wrong) but nothing the pruning produced does */
    ck_assert_msg(acc_a > 0.8 && acc_b < 0.2, "%s: pseudo-label accuracy %g (A) and %g (B, labels rotated)", ssl, acc_a, acc_b);
    char *ta = slurp(ia), *tb = slurp(ib);
    ck_assert_str_eq(ta, tb);
    free(ta); free(tb);
    const char *arrays[] = {"dyn/last/pseudo", "dyn/last/conf", "dyn/last/py", "dyn/last/pmo", "dyn/last/sq", "dyn/last/correct"};
    store_t *s1 = NULL, *s2 = NULL;
    ck_assert_int_eq(store_open(sa, STORE_RDONLY, &s1), 0);
    ck_assert_int_eq(store_open(sb, STORE_RDONLY, &s2), 0);
    for (int k = 0; k < 6; k++) {
        store_array_info_t i1, i2;
        ck_assert_int_eq(store_array_info(s1, arrays[k], &i1), 0);
        ck_assert_int_eq(store_array_info(s2, arrays[k], &i2), 0);
        ck_assert_int_eq(i1.count, i2.count);
        size_t bytes = (size_t)i1.count * store_dtype_size(i1.dtype);
        void *b1 = malloc(bytes), *b2 = malloc(bytes);
        ck_assert_int_eq(store_array_read(s1, arrays[k], 0, i1.count, b1), 0);
        ck_assert_int_eq(store_array_read(s2, arrays[k], 0, i2.count, b2), 0);
        ck_assert_msg(memcmp(b1, b2, bytes) == 0, "%s differs between the stores", arrays[k]);
        free(b1); free(b2);
    }
    store_close(&s1);
    store_close(&s2);
    free(is_lab);
    inca_free(lab);
    dataset_free(&d);
    free(sa); free(sb); free(labf); free(ia); free(ib);
    tu_rmrf(dir);
    free(dir);
}

START_TEST(hidden_labels_never_read_labelprop) { hidden_label_case("labelprop", ""); }
END_TEST

START_TEST(hidden_labels_never_read_selftrain) { hidden_label_case("selftrain", ""); }
END_TEST

/* relabelling rounds read the proxy's predictions and the visible labels only */
START_TEST(hidden_labels_never_read_relabel) { hidden_label_case("labelprop", "--relabel 2"); }
END_TEST

/* --ssl proxy trains on the labelled rows alone, and --ssl auto's check uses them alone */
START_TEST(hidden_labels_never_read_proxy) { hidden_label_case("proxy", ""); }
END_TEST

START_TEST(hidden_labels_never_read_auto) { hidden_label_case("auto", ""); }
END_TEST

/* --ssl cs: SGC fitted to the visible labels, corrected and smoothed from them, over each view */
START_TEST(hidden_labels_never_read_cs) { hidden_label_case("cs", ""); }
END_TEST

/* The check never lets a candidate see the fold it is scored on: with labels drawn independently
 * of the rows (the blobs' labels shuffled), no candidate can beat chance (1/3) by much, while one
 * that saw a hidden row's label would label that row right (C&S and spreading clamp it; SGC and
 * the proxy fit it): every candidate of auto's check and of --ssl cs's stays under 0.6. */
START_TEST(check_folds_stay_hidden) {
    char *dir = tu_mkdtemp();
    char *st = path_in(dir, "shuffled");
    dataset_t d;
    make_blobs(&d, 21);
    rng_t g;
    rng_seed(&g, 22);
    for (int64_t i = d.n - 1; i > 0; i--) {
        const int64_t j = (int64_t)(rng_next(&g) % (uint64_t)(i + 1));
        const int32_t t = d.y[i];
        d.y[i] = d.y[j];
        d.y[j] = t;
    }
    ck_assert_int_eq(dataset_save(&d, st, 0), 0);
    dataset_free(&d);
    const char *ssl[2] = {"auto", "cs"};
    const char *keys[2][7] = {{"labelprop-raw", "labelprop-whiten", "sgc-raw", "sgc-whiten", "proxy", NULL},
                              {"cs-raw", "cs-whiten", NULL}};
    for (int v = 0; v < 2; v++) {
        char *out = NULL, *err = NULL, cmd[1024];
        snprintf(cmd, sizeof cmd, "prune %s --labeled 0.1 --ssl %s --knn 8 --knn-pca 8 --proxy-epochs 30 --keep 0.3 --seed 3 "
                 "--threads 2 --no-save-dynamics --json --quiet", st, ssl[v]);
        ck_assert_msg(tu_inca(cmd, &out, &err) == 0, "prune --ssl %s failed: %s", ssl[v], err);
        const char *js = tu_last_line(out);
        ck_assert_msg(tu_json_num(js, "labeled") == 60, "%s", js);
        for (int k = 0; keys[v][k]; k++) {
            const double a = tu_json_num(js, keys[v][k]);
            ck_assert_msg(a >= 0 && a < 0.6, "--ssl %s: the check scores %s %g on labels independent of the rows", ssl[v],
                          keys[v][k], a);
        }
        free(out); free(err);
    }
    free(st);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* --ssl auto picks, from held-out visible labels only, the pseudo-labeller that is more accurate
 * on the hidden ones: on a graph whose edges mostly join classes but whose features separate
 * them, the proxy (a GCN trained on the labelled nodes); on a homophilous graph with features
 * that carry almost nothing, spreading. Each case first checks that the two differ by 10 points. */
START_TEST(cli_ssl_auto_picks_the_better) {
    char *dir = tu_mkdtemp();
    const char *gens[2] = {"--homophily 0.15 --mean-scale 3", "--homophily 0.95 --mean-scale 0.1"};
    /* over the heterophilous graph spreading fails and SGC (whose first block is the node's own
     * features) beats the GCN proxy; over the homophilous one spreading and SGC are both right and
     * the tie goes to spreading */
    const char *want[2] = {"sgc", "labelprop"};
    for (int g = 0; g < 2; g++) {
        char *st = path_in(dir, g ? "homo" : "hetero");
        char *out = NULL, *err = NULL, cmd[1024];
        snprintf(cmd, sizeof cmd, "gen --kind csbm --nodes 1500 --avg-degree 10 --features 16 --classes 4 %s --seed 2 --out %s",
                 gens[g], st);
        ck_assert_msg(tu_inca(cmd, &out, &err) == 0, "gen failed: %s", err);
        free(out); free(err);
        double acc[4];
        const char *ssl[4] = {"labelprop", "proxy", "sgc", "auto"};
        char *last = NULL;
        for (int s = 0; s < 4; s++) {
            snprintf(cmd, sizeof cmd, "prune %s --split random:0.6,0.2,0.2 --labeled 0.05 --ssl %s --proxy-hidden 32 "
                     "--proxy-epochs 60 --keep 0.3 --seed 1 --threads 2 --json --quiet", st, ssl[s]);
            ck_assert_msg(tu_inca(cmd, &out, &err) == 0, "prune --ssl %s failed: %s", ssl[s], err);
            const char *js = tu_last_line(out);
            acc[s] = tu_json_num(js, "pseudo_label_acc");
            char need[64];
            snprintf(need, sizeof need, "\"ssl\":\"%s\"", s < 3 ? ssl[s] : want[g]);
            ck_assert_msg(strstr(js, need) != NULL, "%s: expected %s in %s", gens[g], need, js);
            if (s < 3) ck_assert_msg(strstr(js, "\"ssl_check\":null") != NULL, "%s", js);
            else {
                /* over a graph: spreading, SGC and the proxy, each once */
                ck_assert_msg(strstr(js, "\"ssl_check\":{\"labeled\":") && strstr(js, "\"labelprop\":") && strstr(js, "\"sgc\":") &&
                              strstr(js, "\"proxy\":"), "%s", js);
                last = strdup(js);
            }
            free(out); free(err);
        }
        /* by the hidden labels: auto's pick is the best of the three (ties within 0.02), and the
         * case separates spreading from the best other by more than 0.1 one way or the other */
        const int pick = g ? 0 : 2;
        const double best = fmax(acc[0], fmax(acc[1], acc[2]));
        ck_assert_msg(acc[3] == acc[pick] && acc[pick] >= best - 0.02, "%s: labelprop %g, proxy %g, sgc %g, auto %g", gens[g],
                      acc[0], acc[1], acc[2], acc[3]);
        ck_assert_msg(g ? acc[0] - acc[1] > 0.1 : fmax(acc[1], acc[2]) - acc[0] > 0.1,
                      "%s: labelprop %g, proxy %g, sgc %g: the case does not separate them", gens[g], acc[0], acc[1], acc[2]);
        /* and the check it reports covers every labelled node, over 5 folds */
        ck_assert(tu_json_num(last, "labeled") >= 10 && strstr(last, "\"folds\":5") != NULL);
        /* SGC over the homophilous graph gets the held-out nodes right too (4 classes) */
        if (g == 1) ck_assert_msg(tu_json_num(last, "sgc") > 0.9, "%s", last);
        free(last);
        free(st);
    }
    /* a table whose rows carry 6 noise factors 10 times wider than the class signal, each spread
     * over every feature by a fixed mixing (standardising each feature keeps them): cosine
     * neighbours of the raw rows follow the factors, of the whitened rows (the factors' directions
     * scaled down) the classes. auto's check lists the views (no sqrt-whiten: the features go
     * negative) and its pick labels the hidden rows about as well as the best candidate run alone. */
    enum { NF = 3 };
    dataset_t d;
    make_blobs(&d, 11);
    rng_t gn;
    rng_seed(&gn, 12);
    double mix[NF][F];
    for (int j = 0; j < NF; j++)
        for (int t = 0; t < F; t++) mix[j][t] = rng_normal(&gn);
    for (int64_t i = 0; i < d.n; i++)
        for (int j = 0; j < NF; j++) {
            const double g = rng_normal(&gn) * 10.0;
            for (int t = 0; t < F; t++) d.x[i * F + t] += (float)(g * mix[j][t]);
        }
    char *tb = path_in(dir, "table");
    ck_assert_int_eq(dataset_save(&d, tb, 0), 0);
    dataset_free(&d);
    const char *views[6] = {"--ssl labelprop --knn-features raw", "--ssl labelprop --knn-features whiten", "--ssl proxy",
                            "--ssl sgc --knn-features whiten", "--ssl auto", "--ssl cs"};
    double tacc[6];
    for (int v = 0; v < 6; v++) {
        char *out = NULL, *err = NULL, cmd[1024];
        snprintf(cmd, sizeof cmd, "prune %s --labeled 0.1 %s --knn 8 --knn-pca 8 --keep 0.3 --seed 1 --threads 2 --json --quiet",
                 tb, views[v]);
        ck_assert_msg(tu_inca(cmd, &out, &err) == 0, "prune %s failed: %s", views[v], err);
        const char *js = tu_last_line(out);
        tacc[v] = tu_json_num(js, "pseudo_label_acc");
        if (v == 3) ck_assert_msg(strstr(js, "\"ssl\":\"sgc\"") && strstr(js, "\"knn_features\":\"whiten\""), "%s", js);
        if (v == 4) {
            ck_assert_msg(strstr(js, "\"labelprop-raw\":") && strstr(js, "\"labelprop-whiten\":") && strstr(js, "\"proxy\":") &&
                          strstr(js, "\"sgc-raw\":") && strstr(js, "\"sgc-whiten\":") && !strstr(js, "sqrt-whiten\":"), "%s", js);
            ck_assert_msg(strstr(js, "\"folds\":5") && tu_json_num(js, "labeled") == 60, "%s", js);
            ck_assert_msg(!strstr(js, "\"cs-"), "auto checks no C&S: %s", js);
        }
        if (v == 5) {   /* --ssl cs with the views open: C&S over each view, nothing else */
            const char *ck = strstr(js, "\"ssl_check\":{\"labeled\":60,\"folds\":5,\"cs-raw\":");
            const char *cw = ck ? strstr(ck, ",\"cs-whiten\":") : NULL;
            ck_assert_msg(strstr(js, "\"ssl\":\"cs\"") && cw && strchr(cw + 1, '}') < strchr(cw + 1, ','), "%s", js);
        }
        free(out); free(err);
    }
    ck_assert_msg(tacc[1] - tacc[0] > 0.1, "raw %g, whitened %g: the case does not separate them", tacc[0], tacc[1]);
    /* SGC over the whitened view learns the classes too (chance: 1 / C) */
    ck_assert_msg(tacc[3] > 1.0 / C + 0.3, "sgc over the whitened view: %g", tacc[3]);
    ck_assert_msg(tacc[5] > 1.0 / C + 0.3, "cs over its checked view: %g", tacc[5]);
    const double best = fmax(fmax(tacc[0], tacc[1]), fmax(tacc[2], tacc[3]));
    ck_assert_msg(tacc[4] >= best - 0.03, "auto %g; raw %g, whitened %g, proxy %g, sgc %g", tacc[4], tacc[0], tacc[1], tacc[2],
                  tacc[3]);
    free(tb);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(cli_outputs_reuse_and_eval) {
    char *dir = tu_mkdtemp();
    char *sa = path_in(dir, "a"), *pr = path_in(dir, "pruned"), *ind = path_in(dir, "keep.npy");
    dataset_t d;
    make_blobs(&d, 4);
    ck_assert_int_eq(dataset_save(&d, sa, 0), 0);
    const char *common = "--labeled-per-class 4 --knn 8 --proxy-hidden 16 --proxy-epochs 10 --keep 0.1 --seed 2 --threads 2";
    char *out = NULL, *err = NULL;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "prune %s --out %s --indices %s --select ccs --mis-ratio 0.2 --eval --runs 2 --epochs 30 "
             "--hidden 16 --json %s --overwrite", sa, pr, ind, common);
    int rc = tu_inca(cmd, &out, &err);
    ck_assert_msg(rc == 0, "prune failed (%d): %s", rc, err);
    const char *js = tu_last_line(out);
    ck_assert_int_eq((int)tu_json_num(js, "kept"), 60);
    ck_assert_int_eq((int)tu_json_num(js, "pool"), NPOOL);
    ck_assert_int_eq((int)tu_json_num(js, "labeled"), 12);
    const char *keys[] = {"coreset_acc", "random_acc", "full_acc", "coreset_acc_std", "random_acc_std", "pseudo_label_acc"};
    for (int k = 0; k < 6; k++) {
        double v = tu_json_num(js, keys[k]);
        ck_assert_msg(v >= 0 && v <= 1, "%s = %g", keys[k], v);
    }
    ck_assert(tu_json_num(js, "full_acc") > 0.9);   /* blobs are easy with all labels */
    ck_assert(strstr(js, "\"seconds\":{\"load\"") != NULL || strstr(js, "\"seconds\": {\"load\"") != NULL);
    free(out); free(err);
    /* indices: .npy at the given path, text beside it; same ids */
    int64_t *a = NULL, *b = NULL, na = 0, nb = 0;
    ck_assert_int_eq(npy_read_indices(ind, &a, &na), 0);
    char *txt = path_in(dir, "keep.txt");
    ck_assert_int_eq(npy_read_indices(txt, &b, &nb), 0);
    ck_assert_int_eq(na, 60);
    ck_assert_int_eq(nb, 60);
    ck_assert_mem_eq(a, b, 60 * sizeof *a);
    /* pruned store: the selected examples with their true labels, then the test examples */
    dataset_t p;
    ck_assert_int_eq(dataset_load(pr, &p), 0);
    ck_assert_int_eq(p.n, 60 + NTEST);
    ck_assert_int_eq(p.split_n[SPLIT_TRAIN], 60);
    ck_assert_int_eq(p.split_n[SPLIT_TEST], NTEST);
    for (int64_t t = 0; t < 60; t++) {
        ck_assert_int_eq(p.split[SPLIT_TRAIN][t], t);
        ck_assert_int_eq(p.y[t], d.y[a[t]]);
        ck_assert_mem_eq(p.x + t * F, d.x + a[t] * F, F * sizeof(float));
    }
    ck_assert_int_eq(p.y[60], d.y[NPOOL]);
    dataset_free(&p);
    /* rescoring from the stored dynamics: no training, another selector, same pool */
    snprintf(cmd, sizeof cmd, "prune %s --reuse-dynamics --select double-end --mis-ratio 0.2 --score el2n --indices %s/de.txt --json %s",
             sa, dir, common);
    rc = tu_inca(cmd, &out, &err);
    ck_assert_msg(rc == 0, "reuse failed (%d): %s", rc, err);
    ck_assert_int_eq((int)tu_json_num(tu_last_line(out), "kept"), 60);
    free(out); free(err);
    /* a different SSL configuration does not match the stored key (--cmn: class mass
     * normalisation changes the pseudo-labels too) */
    const char *other[] = {"--knn 5", "--cmn"};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "prune %s --reuse-dynamics %s %s", sa, common, other[k]);
        rc = tu_inca(cmd, &out, &err);
        ck_assert_msg(rc == 2, "%s: exit %d", other[k], rc);
        ck_assert(strstr(err, "--reuse-dynamics") != NULL);
        free(out); free(err);
    }
    /* a labelled file is keyed by what it holds, not its name; an id listed twice is one label */
    char *lf = path_in(dir, "lab.txt");
    const char *cf = "--knn 8 --proxy-hidden 16 --proxy-epochs 10 --keep 0.1 --seed 2 --threads 2 --dyn-tag f --json";
    for (int k = 0; k < 3; k++) {
        FILE *f = fopen(lf, "w");
        for (int i = 0; i < 12; i++) fprintf(f, "%d\n", k == 2 ? 12 + i : i);
        if (k == 0) fputs("0\n1\n2\n", f);   /* repeats */
        fclose(f);
        snprintf(cmd, sizeof cmd, "prune %s --labeled-indices %s %s %s", sa, lf, cf, k ? "--reuse-dynamics" : "");
        rc = tu_inca(cmd, &out, &err);
        ck_assert_msg(rc == (k == 2 ? 2 : 0), "labelled file %d: exit %d: %s", k, rc, err);
        if (k == 0) ck_assert_int_eq((int)tu_json_num(tu_last_line(out), "labeled"), 12);
        free(out); free(err);
    }
    free(lf);
    inca_free(a);
    inca_free(b);
    free(txt);
    dataset_free(&d);
    free(sa); free(pr); free(ind);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(cli_graph_dataset) {
    char *dir = tu_mkdtemp();
    char *g = path_in(dir, "g"), *pr = path_in(dir, "pruned");
    char *out = NULL, *err = NULL;
    int rc = run_inca("gen --kind csbm --nodes 800 --avg-degree 8 --features 16 --classes 3 --seed 3 --out %s%s%s", g, "", "", &out, &err);
    ck_assert_msg(rc == 0, "gen failed: %s", err);
    free(out); free(err);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "prune %s --split random:0.6,0.2,0.2 --labeled 0.05 --proxy-hidden 16 --proxy-epochs 20 "
             "--keep 0.3 --select ccs --mis-ratio 0.1 --out %s --seed 1 --threads 2 --eval --epochs 50 --hidden 16 --no-full --json",
             g, pr);
    rc = tu_inca(cmd, &out, &err);
    ck_assert_msg(rc == 0, "prune failed (%d): %s", rc, err);
    const char *js = tu_last_line(out);
    int64_t kept = (int64_t)tu_json_num(js, "kept"), pool = (int64_t)tu_json_num(js, "pool");
    ck_assert_int_eq(kept, (int64_t)floor(0.3 * (double)pool + 1e-9));
    ck_assert(tu_json_num(js, "pseudo_label_acc") > 0.5);
    ck_assert(tu_json_num(js, "coreset_acc") > 0.4);
    ck_assert(strstr(js, "\"model\":\"gcn\"") != NULL);
    /* a graph keeps the flags' own defaults (GCN-on-Cora settings), and says none were swapped */
    ck_assert(strstr(js, "\"defaults\":\"graph\"") != NULL && strstr(js, "\"kind_defaults\":\"\"") != NULL);
    ck_assert(strstr(err, "is a table") == NULL);
    free(out); free(err);
    /* the whole graph; train split = the kept nodes; other pool nodes unlabelled */
    dataset_t p, o;
    ck_assert_int_eq(dataset_load(pr, &p), 0);
    ck_assert_int_eq(dataset_load(g, &o), 0);
    double fr[3];
    ck_assert_int_eq(split_parse("random:0.6,0.2,0.2", fr), 0);
    ck_assert_int_eq(split_random(&o, fr, 1), 0);   /* the split the CLI made */
    ck_assert_int_eq(o.split_n[SPLIT_TRAIN], pool);
    ck_assert_int_eq(p.n, o.n);
    ck_assert_int_eq(p.adj.nnz, o.adj.nnz);
    ck_assert_int_eq(p.split_n[SPLIT_TRAIN], kept);
    for (int sp = SPLIT_VALID; sp <= SPLIT_TEST; sp++) {
        ck_assert_int_eq(p.split_n[sp], o.split_n[sp]);
        ck_assert_mem_eq(p.split[sp], o.split[sp], (size_t)o.split_n[sp] * sizeof(int64_t));
    }
    int64_t labelled = 0;
    for (int64_t i = 0; i < p.n; i++) {
        if (p.y[i] >= 0) { labelled++; ck_assert_int_eq(p.y[i], o.y[i]); }
    }
    ck_assert_int_eq(labelled, kept + o.split_n[SPLIT_VALID] + o.split_n[SPLIT_TEST]);
    for (int64_t t = 0; t < kept; t++) ck_assert_int_ge(p.y[p.split[SPLIT_TRAIN][t]], 0);
    /* the kept nodes come from the train split */
    for (int64_t t = 0, u = 0; t < kept; t++) {
        while (u < pool && o.split[SPLIT_TRAIN][u] < p.split[SPLIT_TRAIN][t]) u++;
        ck_assert(u < pool && o.split[SPLIT_TRAIN][u] == p.split[SPLIT_TRAIN][t]);
    }
    dataset_free(&p);
    dataset_free(&o);
    free(g); free(pr);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(cli_usage_errors) {
    char *dir = tu_mkdtemp();
    char *sa = path_in(dir, "a");
    dataset_t d;
    make_blobs(&d, 5);
    ck_assert_int_eq(dataset_save(&d, sa, 0), 0);
    dataset_free(&d);
    const struct { const char *args, *msg; } cases[] = {
        {"--select best", "--select"},
        {"--keep 1.5", "--keep"},
        {"--keep 0", "--keep: expected fractions in (0, 1]"},
        {"--keep 0.1,x", "--keep: expected fractions in (0, 1]"},
        {"--keep 0.1,1.2", "--keep: expected fractions in (0, 1]"},
        /* budgets naming the same -keep%g outputs (the second replaced the first, or stopped the
         * run halfway naming --force) */
        {"--keep 0.5,0.5", "name the same outputs"},
        {"--keep 0.3,0.3000001", "name the same outputs"},
        {"--keep 0.1, --eval", "--keep"},
        {"--eval --eval-budget hours", "--eval-budget: expected epochs or steps"},
        {"--labeled-indices %1$s/empty.txt", "the labelled subset of the pool is empty"},
        {"--labeled-indices %1$s/two.txt", "class 2 (200 nodes in the pool) has no labelled example"},
        /* a test node's label would reach the pseudo-labels (and the coreset --eval scores) */
        {"--labeled-indices %1$s/outside.txt", "node 600 is not in the pool"},
        {"--score grand", "--score"},
        {"--ssl fixmatch", "--ssl"},
        {"--metric l1", "--metric"},
        {"--mis-ratio 1", "--mis-ratio"},
        {"--knn 0", "--knn"},
        {"--labeled 0", "--labeled"},
        {"--labeled-indices /nonexistent/ids.txt", "/nonexistent/ids.txt"},
        {"--reuse-dynamics", "no stored dynamics"},
        {"--bogus 1", "--bogus"},
        {"--knn-search fast", "--knn-search: expected exact, faiss or auto"},
        /* --knn takes the search by name too (ARCHITECTURE.md's contract: it was "expected an
         * integer"); parsed, it reaches the next refusal */
        {"--knn exact --reuse-dynamics", "no stored dynamics"},
        {"--knn exact --knn-search faiss", "two searches asked"},
        {"--knn fast", "--knn: expected an integer"},
        {"--faiss-nprobe 0", "--faiss-nprobe: expected 1..1048576, got 0"},
        {"--faiss-nprobe 1048577", "--faiss-nprobe: expected 1..1048576, got 1048577"},   /* it said "expected >= 1" */
        /* the parts' own refusal, not the batch parts' "1..--parts (0)" after it */
        {"--parts 0", "--parts: expected 1..16777216, got 0"},
        {"--proxy-parts 0", "--proxy-parts: expected 1..16777216, got 0"},
        {"--parts 16777217", "--parts: expected 1..16777216"},
        {"--epochs 0", "--epochs: expected >= 1"},
        {"--batch-size -1", "--batch-size: expected >= 0"},
        {"--lr fast", "--lr: expected a number"},
        {"--relabel 11", "--relabel: expected 0..10 rounds"},
        {"--ssl labelprop --knn-features sqrt-whiten", "needs non-negative features"},
        {"--knn-features pca", "--knn-features: expected raw, whiten, sqrt-whiten or auto"},
        {"--knn-pca 0", "--knn-pca: expected a number of components >= 1"},
        {"--relabel 1 --relabel-confident 0", "--relabel-confident: expected a share in (0, 1]"},
    };
    /* labelled subsets: none at all; classes 0 and 1 only (row i is class i % 3) */
    char *empty = path_in(dir, "empty.txt"), *two = path_in(dir, "two.txt"), *keep = path_in(dir, "k.npy"),
         *pout = path_in(dir, "p.lmdb");
    FILE *f = fopen(empty, "w");
    fclose(f);
    f = fopen(two, "w");
    fputs("0\n1\n3\n4\n", f);
    fclose(f);
    char *outside = path_in(dir, "outside.txt");
    f = fopen(outside, "w");
    fputs("0\n1\n2\n600\n", f);   /* 600 = NPOOL: the first test row */
    fclose(f);
    free(outside);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char cmd[2048], args[1024];
        snprintf(args, sizeof args, cases[k].args, dir);
        /* every refusal comes before anything is written */
        snprintf(cmd, sizeof cmd, "prune %s --proxy-epochs 2 --proxy-hidden 4 --indices %s --out %s %s", sa, keep, pout, args);
        char *out = NULL, *err = NULL;
        int rc = tu_inca(cmd, &out, &err);
        ck_assert_msg(rc == 2, "'%s': exit %d, stderr %s", args, rc, err);
        ck_assert_msg(strstr(err, cases[k].msg) != NULL, "'%s': stderr lacks '%s': %s", args, cases[k].msg, err);
        ck_assert_msg(!tu_exists(keep) && !tu_exists(pout), "'%s' wrote its outputs", args);
        free(out); free(err);
    }
    free(empty); free(two); free(keep); free(pout);
    char *out = NULL, *err = NULL;
    int rc = tu_inca("prune /nonexistent/store --keep 0.1", &out, &err);
    ck_assert_int_eq(rc, 2);
    free(out); free(err);
    free(sa);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* The proxy trained by any method, its dynamics from the training steps: with one part per batch
 * holding every node, cluster, gas and incagg record what the full-batch proxy records (stored
 * dynamics compared array by array: correctness exactly, probabilities to float rounding) and
 * select the same coreset; IncAgg over 8 METIS parts runs end to end; the
 * compact recorder selects the same coreset as the matrices and says its bytes; a table refuses
 * a graph method. */
static void load_dyn(const char *store, const char *what, float **out, int64_t *n) {
    store_t *s = NULL;
    char name[128];
    snprintf(name, sizeof name, "dyn/t/%s", what);
    ck_assert_int_eq(store_open(store, STORE_RDONLY, &s), 0);
    ck_assert_msg(store_array_load(s, name, strcmp(what, "correct") ? DT_F32 : DT_U8, (void **)out, n) == 0, "%s: %s", store, name);
    store_close(&s);
}

START_TEST(cli_proxy_methods) {
    char *dir = tu_mkdtemp();
    char *g = path_in(dir, "g"), *ia = path_in(dir, "ia.txt"), *ib = path_in(dir, "ib.txt");
    char *out = NULL, *err = NULL, cmd[4096];
    int rc = run_inca("gen --kind csbm --nodes 800 --avg-degree 8 --features 16 --classes 3 --seed 3 --out %s%s%s", g, "", "", &out, &err);
    ck_assert_msg(rc == 0, "gen failed: %s", err);
    free(out); free(err);
    const char *common = "--split random:0.6,0.2,0.2 --labeled 0.05 --proxy-hidden 16 --proxy-epochs 5 --keep 0.3 --seed 1 "
                         "--threads 2 --json --dynamics-from steps --dynamics full --dyn-tag t";
    const char *methods[] = {"full", "cluster --proxy-parts 1 --proxy-batch-parts 1", "gas --proxy-parts 1 --proxy-batch-parts 1",
                             "incagg --proxy-parts 1 --proxy-batch-parts 1"};
    float *ref[4] = {0};
    int64_t nref[4] = {0};
    const char *what[4] = {"py", "pmo", "sq", "correct"};
    for (int m = 0; m < 4; m++) {
        char *gm = path_in(dir, m == 0 ? "g0" : m == 1 ? "g1" : m == 2 ? "g2" : "g3");
        snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", g, gm);
        ck_assert_int_eq(tu_sh(cmd, NULL, NULL), 0);
        /* ib is written by each method in turn: --overwrite, or the second would be refused */
        snprintf(cmd, sizeof cmd, "prune %s %s --proxy-method %s --indices %s --overwrite", gm, common, methods[m],
                 m == 0 ? ia : ib);
        rc = tu_inca(cmd, &out, &err);
        ck_assert_msg(rc == 0, "%s: %s", methods[m], err);
        const char *js = tu_last_line(out);
        ck_assert(strstr(js, "\"dynamics_from\":\"steps\"") && strstr(js, "\"dynamics\":\"full\""));
        free(out); free(err);
        for (int k = 0; k < 4; k++) {
            float *v = NULL;
            int64_t n = 0;
            load_dyn(gm, what[k], &v, &n);
            if (m == 0) { ref[k] = v; nref[k] = n; continue; }
            ck_assert_int_eq(n, nref[k]);
            /* the recorder is exact (test_pruning_core: compact_equals_full); the one-batch methods'
             * aggregation kernels round differently from full-batch's (test_incagg bounds their
             * logits), so their probabilities agree to float rounding and their correctness exactly */
            double mx = 0;
            for (int64_t q = 0; q < (k == 3 ? 0 : n); q++) mx = fmax(mx, fabs((double)v[q] - ref[k][q]));
            ck_assert_msg(mx <= 1e-6, "%s: dyn %s differs from full's by %g", methods[m], what[k], mx);
            if (k == 3) ck_assert_msg(memcmp(v, ref[k], (size_t)n) == 0, "%s: correctness differs from full's", methods[m]);
            inca_free(v);
        }
        if (m > 0) {
            char *ta = slurp(ia), *tb = slurp(ib);
            ck_assert_str_eq(ta, tb);
            free(ta); free(tb);
        }
        free(gm);
    }
    for (int k = 0; k < 4; k++) inca_free(ref[k]);
    /* IncAgg over 8 parts, 2 per batch: steps by default, compact on request selects as full does */
    snprintf(cmd, sizeof cmd, "prune %s --split random:0.6,0.2,0.2 --labeled 0.05 --proxy-hidden 16 --proxy-epochs 5 --keep 0.3 "
             "--seed 1 --threads 2 --json --no-save-dynamics --proxy-method incagg --proxy-parts 8 --proxy-batch-parts 2 --indices %s --overwrite", g, ia);
    rc = tu_inca(cmd, &out, &err);
    ck_assert_msg(rc == 0, "incagg: %s", err);
    cJSON *j = tu_json_last(out);
    ck_assert_str_eq(tu_json_get(j, "proxy_method", cJSON_String)->valuestring, "incagg");
    ck_assert_str_eq(tu_json_get(j, "dynamics_from", cJSON_String)->valuestring, "steps");
    const double pool = tu_json_dbl(j, "pool");
    ck_assert_double_eq(tu_json_dbl(j, "dynamics_bytes"), pool * 5 * 13);
    cJSON_Delete(j);
    free(out); free(err);
    snprintf(cmd, sizeof cmd, "prune %s --split random:0.6,0.2,0.2 --labeled 0.05 --proxy-hidden 16 --proxy-epochs 5 --keep 0.3 "
             "--seed 1 --threads 2 --json --no-save-dynamics --proxy-method incagg --proxy-parts 8 --proxy-batch-parts 2 "
             "--dynamics compact --indices %s --eval --method incagg --parts 8 --batch-parts 2 --epochs 30 --hidden 16 --runs 1 "
             "--no-full --overwrite", g, ib);
    rc = tu_inca(cmd, &out, &err);
    ck_assert_msg(rc == 0, "incagg compact: %s", err);
    j = tu_json_last(out);
    ck_assert_str_eq(tu_json_get(j, "dynamics", cJSON_String)->valuestring, "compact");
    ck_assert_double_eq(tu_json_dbl(j, "dynamics_bytes"), pool * 41);
    /* the target trained by IncAgg on the coreset and on a random subset, its steps counted as batches */
    ck_assert_str_eq(tu_json_get(j, "method", cJSON_String)->valuestring, "incagg");
    ck_assert(tu_json_dbl(j, "coreset_acc") > 0.5 && tu_json_dbl(j, "random_acc") > 0.5);
    ck_assert_double_eq(tu_json_dbl(j, "subset_steps"), 30 * 4);
    cJSON_Delete(j);
    free(out); free(err);
    char *ta = slurp(ia), *tb = slurp(ib);
    ck_assert_str_eq(ta, tb);   /* AUM from running sums: the same bits, the same coreset */
    free(ta); free(tb);
    /* refusals, before anything is written */
    dataset_t d;
    char *t = path_in(dir, "table");
    make_blobs(&d, 2);
    ck_assert_int_eq(dataset_save(&d, t, 0), 0);
    dataset_free(&d);
    const struct { const char *store, *args, *msg; } bad[] = {
        {t, "--proxy-method cluster", "--proxy-method cluster: needs a graph"},
        {g, "--proxy-method sampled", "--proxy-method: expected full, cluster, gas or incagg"},
        {g, "--dynamics-from logits", "--dynamics-from: expected auto, eval or steps"},
        {g, "--dynamics sparse", "--dynamics: expected auto, full or compact"},
        {g, "--proxy-batch-parts 50", "--proxy-batch-parts: expected 1..--proxy-parts (40)"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        unlink(ia);
        snprintf(cmd, sizeof cmd, "prune %s --labeled 0.05 --proxy-epochs 2 --split random:0.6,0.2,0.2 --indices %s --overwrite %s",
                 bad[k].store, ia, bad[k].args);
        rc = tu_inca(cmd, &out, &err);
        ck_assert_msg(rc == 2 && strstr(err, bad[k].msg), "'%s': exit %d, %s", bad[k].args, rc, err);
        ck_assert(!tu_exists(ia));
        free(out); free(err);
    }
    free(t); free(g); free(ia); free(ib);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* Defaults by data kind: a table (no graph) takes the settings measured on Fashion-MNIST for the
 * flags not given, says which on stderr and in the JSON, and records the values that ran in the
 * config; a given flag stays. A target that cannot learn (every feature zero: it can only answer
 * one class) is warned about. */
START_TEST(cli_kind_defaults_and_chance_warning) {
    char *dir = tu_mkdtemp();
    char *sa = path_in(dir, "a"), *sz = path_in(dir, "z");
    dataset_t d;
    make_blobs(&d, 6);
    ck_assert_int_eq(dataset_save(&d, sa, 0), 0);
    memset(d.x, 0, (size_t)d.n * F * sizeof *d.x);
    ck_assert_int_eq(dataset_save(&d, sz, 0), 0);
    dataset_free(&d);
    char cmd[2048];
    char *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "prune %s --labeled 0.05 --proxy-epochs 5 --proxy-hidden 16 --hidden 16 --keep 0.3 --eval --runs 1 "
             "--seed 2 --threads 2 --json", sa);
    int rc = tu_inca(cmd, &out, &err);
    ck_assert_msg(rc == 0, "prune failed (%d): %s", rc, err);
    ck_assert_msg(strstr(err, "is a table (no graph): defaults --feature-norm standard --proxy-batch-size 128 --proxy-lr 0.001 "
                              "--epochs 20 --batch-size 128 --lr 0.001 --dropout 0.2") != NULL, "stderr: %s", err);
    ck_assert_msg(strstr(err, "near chance") == NULL, "a learning target was warned about: %s", err);
    cJSON *j = tu_json_last(out);
    ck_assert_str_eq(tu_json_get(j, "defaults", cJSON_String)->valuestring, "table");
    ck_assert(strstr(tu_json_get(j, "kind_defaults", cJSON_String)->valuestring, "--proxy-epochs") == NULL);
    const cJSON *c = tu_json_get(j, "config", cJSON_Object);
    ck_assert_double_eq(tu_json_dbl(c, "proxy-epochs"), 5);   /* given */
    ck_assert_double_eq(tu_json_dbl(c, "epochs"), 20);        /* the table's */
    ck_assert_double_eq(tu_json_dbl(c, "batch-size"), 128);
    ck_assert_double_eq(tu_json_dbl(c, "proxy-batch-size"), 128);
    ck_assert_double_eq_tol(tu_json_dbl(c, "lr"), 0.001, 1e-12);
    ck_assert_double_eq_tol(tu_json_dbl(c, "dropout"), 0.2, 1e-12);
    ck_assert_str_eq(tu_json_get(c, "feature-norm", cJSON_String)->valuestring, "standard");
    ck_assert(tu_json_dbl(j, "full_acc") > 0.9);
    cJSON_Delete(j);
    free(out); free(err);
    /* a flag given keeps its value and leaves the list (the proxy's: the target's flags are
     * refused without --eval) */
    snprintf(cmd, sizeof cmd, "prune %s --labeled 0.05 --proxy-epochs 5 --proxy-hidden 16 --feature-norm none --proxy-lr 0.01 "
             "--keep 0.3 --seed 2 --threads 2 --json", sa);
    rc = tu_inca(cmd, &out, &err);
    ck_assert_msg(rc == 0, "prune failed (%d): %s", rc, err);
    ck_assert_msg(strstr(err, "defaults --proxy-batch-size 128 --epochs 20 --batch-size 128 --lr 0.001 --dropout 0.2") != NULL,
                  "stderr: %s", err);
    j = tu_json_last(out);
    c = tu_json_get(j, "config", cJSON_Object);
    ck_assert_str_eq(tu_json_get(c, "feature-norm", cJSON_String)->valuestring, "none");
    ck_assert_double_eq_tol(tu_json_dbl(c, "proxy-lr"), 0.01, 1e-12);
    cJSON_Delete(j);
    free(out); free(err);
    /* nothing to learn from: the warning, and still exit 0 with the JSON */
    snprintf(cmd, sizeof cmd, "prune %s --labeled 0.05 --proxy-epochs 3 --proxy-hidden 8 --hidden 8 --epochs 3 --keep 0.3 --eval "
             "--runs 1 --seed 2 --threads 2 --json", sz);
    rc = tu_inca(cmd, &out, &err);
    ck_assert_msg(rc == 0, "prune failed (%d): %s", rc, err);
    ck_assert_msg(strstr(err, "warning: the target (mlp) stays near chance at keep 0.3") != NULL, "stderr: %s", err);
    ck_assert(tu_json_num(tu_last_line(out), "full_acc") <= 1.0 / 3 + 1e-9);   /* one class of three, balanced test split */
    free(out); free(err);
    /* --quiet: no defaults line; the warning stays (it is not progress) */
    snprintf(cmd, sizeof cmd, "prune %s --labeled 0.05 --proxy-epochs 3 --proxy-hidden 8 --hidden 8 --epochs 3 --keep 0.3 --eval "
             "--runs 1 --seed 2 --threads 2 --json --quiet", sz);
    rc = tu_inca(cmd, &out, &err);
    ck_assert_msg(rc == 0 && strstr(err, "defaults") == NULL && strstr(err, "near chance") != NULL, "--quiet: %s", err);
    free(out); free(err);
    free(sa); free(sz);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* The budget curve: --keep F1,F2,F3 scores once and gives one selection, output and JSON line
 * per budget; the full pool is trained once; --eval-budget steps trains a subset for the full
 * pool's optimiser steps (a mini-batch MLP here: ceil(n / 32) steps per epoch). */
START_TEST(cli_budget_curve) {
    char *dir = tu_mkdtemp();
    char *sa = path_in(dir, "a"), *pr = path_in(dir, "p.lmdb"), *ind = path_in(dir, "k.npy");
    dataset_t d;
    make_blobs(&d, 6);
    ck_assert_int_eq(dataset_save(&d, sa, 0), 0);
    dataset_free(&d);
    const double keeps[3] = {0.05, 0.1, 0.2};
    for (int steps = 0; steps < 2; steps++) {
        char cmd[2048], *out = NULL, *err = NULL;
        snprintf(cmd, sizeof cmd, "prune %s --labeled-per-class 4 --knn 8 --proxy-hidden 16 --proxy-epochs 5 --keep 0.05,0.1,0.2 "
                 "--eval --runs 2 --epochs 4 --hidden 16 --batch-size 32 --eval-budget %s --out %s --indices %s --overwrite "
                 "--seed 1 --threads 1 --json", sa, steps ? "steps" : "epochs", pr, ind);
        int rc = tu_inca(cmd, &out, &err);
        ck_assert_msg(rc == 0, "prune failed (%d): %s", rc, err);
        cJSON *v[4];
        ck_assert_int_eq(tu_json_lines(out, v, 4), 3);
        for (int b = 0; b < 3; b++) {
            const int64_t kept = (int64_t)floor(keeps[b] * NPOOL + 1e-9);
            ck_assert_int_eq((int64_t)tu_json_dbl(v[b], "kept"), kept);
            ck_assert_double_eq(tu_json_dbl(v[b], "keep"), keeps[b]);
            ck_assert_int_eq((int)tu_json_dbl(v[b], "budget"), b);
            ck_assert_double_eq(tu_json_dbl(v[b], "full_acc"), tu_json_dbl(v[0], "full_acc"));
            ck_assert_double_eq(tu_json_dbl(v[b], "full_acc_std"), tu_json_dbl(v[0], "full_acc_std"));
            ck_assert_str_eq(tu_json_get(v[b], "eval_budget", cJSON_String)->valuestring, steps ? "steps" : "epochs");
            /* scored once: the later budgets spent no scoring time (they reported the first's) */
            if (b > 0) ck_assert_double_eq(tu_json_dbl(tu_json_get(v[b], "seconds", cJSON_Object), "score"), 0);
            /* 600 examples in 19 batches of 32; a subset of k in ceil(k / 32) */
            const int64_t spe = (kept + 31) / 32, ep = steps ? (4 * 19 + spe - 1) / spe : 4;
            ck_assert_int_eq((int64_t)tu_json_dbl(v[b], "subset_epochs"), ep);
            ck_assert_int_eq((int64_t)tu_json_dbl(v[b], "subset_steps"), ep * spe);
            ck_assert_int_eq((int64_t)tu_json_dbl(v[b], "full_steps"), 4 * 19);
            if (steps) ck_assert_int_ge((int64_t)tu_json_dbl(v[b], "subset_steps"), 4 * 19);
            /* each budget's outputs under its own name, holding its own selection */
            char p[1200], q[1200];
            snprintf(p, sizeof p, "%s/k-keep%g.npy", dir, keeps[b]);
            snprintf(q, sizeof q, "%s/p-keep%g.lmdb", dir, keeps[b]);
            int64_t *ids = NULL, nids = 0;
            ck_assert_int_eq(npy_read_indices(p, &ids, &nids), 0);
            ck_assert_int_eq(nids, kept);
            inca_free(ids);
            dataset_t pd;
            ck_assert_int_eq(dataset_load(q, &pd), 0);
            ck_assert_int_eq(pd.split_n[SPLIT_TRAIN], kept);
            dataset_free(&pd);
        }
        /* the scores are the same whatever the budgets: the 0.1 selection equals a run of 0.1 alone */
        if (!steps) {
            char *o2 = NULL, *e2 = NULL;
            snprintf(cmd, sizeof cmd, "prune %s --labeled-per-class 4 --knn 8 --proxy-hidden 16 --proxy-epochs 5 --keep 0.1 "
                     "--indices %s/alone.npy --seed 1 --threads 1", sa, dir);
            ck_assert_int_eq(tu_inca(cmd, &o2, &e2), 0);
            char p[1200], q[1200];
            snprintf(p, sizeof p, "%s/k-keep0.1.npy", dir);
            snprintf(q, sizeof q, "%s/alone.npy", dir);
            int64_t *x = NULL, *y = NULL, nx = 0, ny = 0;
            ck_assert_int_eq(npy_read_indices(p, &x, &nx), 0);
            ck_assert_int_eq(npy_read_indices(q, &y, &ny), 0);
            ck_assert_int_eq(nx, ny);
            ck_assert_mem_eq(x, y, (size_t)nx * sizeof *x);
            inca_free(x);
            inca_free(y);
            free(o2); free(e2);
        }
        tu_json_free_lines(v, 3);
        free(out); free(err);
    }
    free(sa); free(pr); free(ind);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* bench pruning runs the whole pipeline and prints one line per stage and a summary. */
START_TEST(bench_smoke) {
    char *dir = tu_mkdtemp();
    char *sa = path_in(dir, "a"), *pr = path_in(dir, "pruned");
    dataset_t d;
    make_blobs(&d, 6);
    ck_assert_int_eq(dataset_save(&d, sa, 0), 0);
    dataset_free(&d);
    char *out = NULL, *err = NULL;
    int rc = run_inca("bench pruning %s --ssl labelprop --knn-features raw --knn 5 --proxy-epochs 3 --proxy-hidden 8 --keep 0.2 "
                      "--threads 2 --out %s%s", sa, pr, "",
                      &out, &err);
    ck_assert_msg(rc == 0, "bench failed (%d): %s", rc, err);
    const char *stages[] = {"\"stage\":\"load\"", "\"stage\":\"knn\"", "\"stage\":\"spread\"", "\"stage\":\"proxy\"",
                            "\"stage\":\"select\"", "\"stage\":\"write\""};
    for (int k = 0; k < 6; k++) ck_assert_msg(strstr(out, stages[k]) != NULL, "missing %s in %s", stages[k], out);
    const char *js = tu_last_line(out);
    ck_assert_int_eq((int)tu_json_num(js, "kept"), 120);
    ck_assert(tu_json_num(js, "knn_gflops") > 0 && tu_json_num(js, "gemm_gflops") > 0);
    {   /* each stage's fraction is its seconds over the total; the kNN's rate is pool^2 x features
         * flops over its stage's seconds, and knn_vs_gemm that rate over the GEMM's */
        cJSON *v[16];
        const int n = tu_json_lines(out, v, 16);
        const double total = tu_json_dbl(v[n - 1], "total_s");
        double knn_s = -1;
        for (int i = 0; i < n - 1; i++) {
            const double sec = tu_json_dbl(v[i], "seconds");
            ck_assert_double_eq_tol(tu_json_dbl(v[i], "fraction"), sec / total, 1e-12);
            if (strcmp(tu_json_get(v[i], "stage", cJSON_String)->valuestring, "knn") == 0) knn_s = sec;
        }
        const double pool = tu_json_dbl(v[n - 1], "pool"), f = tu_json_dbl(v[n - 1], "features");
        const double kg = tu_json_dbl(v[n - 1], "knn_gflops");
        ck_assert_msg(knn_s > 0 && fabs(kg - pool * pool * f / knn_s / 1e9) <= 1e-9 * kg, "knn %g GFLOP/s, %g s", kg, knn_s);
        ck_assert_double_eq_tol(tu_json_dbl(v[n - 1], "knn_vs_gemm"), kg / tu_json_dbl(v[n - 1], "gemm_gflops"), 1e-9 * kg);
        tu_json_free_lines(v, n);
    }
    dataset_t p;
    ck_assert_int_eq(dataset_load(pr, &p), 0);
    ck_assert_int_eq(p.split_n[SPLIT_TRAIN], 120);
    dataset_free(&p);
    free(out); free(err);
    /* bench knn: exact against FAISS on the pool's 600 rows (every list probed: IVF is exact, so
     * recall 1 up to distance ties); without FAISS, the refusal */
    rc = run_inca("bench knn %s --knn 5 --faiss-index IVF8,Flat --faiss-nprobe 8 --threads 2 --json --quiet%s%s", sa, "", "", &out, &err);
    if (knn_faiss_available()) {
        ck_assert_msg(rc == 0, "bench knn failed (%d): %s", rc, err);
        cJSON *j = tu_json_last(out);
        ck_assert_double_eq(tu_json_dbl(j, "rows"), NPOOL);
        ck_assert_str_eq(tu_json_get(j, "faiss_index", cJSON_String)->valuestring, "IVF8,Flat");
        ck_assert(tu_json_dbl(j, "recall") >= 0.999 && tu_json_dbl(j, "recall") <= 1.0);
        ck_assert(tu_json_dbl(j, "exact_s") > 0 && tu_json_dbl(j, "faiss_s") > 0);
        ck_assert_double_eq_tol(tu_json_dbl(j, "speedup"), tu_json_dbl(j, "exact_s") / tu_json_dbl(j, "faiss_s"),
                                1e-9 * tu_json_dbl(j, "speedup"));   /* exact's time over FAISS's */
        cJSON_Delete(j);
        free(out); free(err);
        /* --max-rows takes the first rows of the pool; one list of 16 probed misses neighbours
         * across the lists' borders: recall below 1 */
        rc = run_inca("bench knn %s --knn 5 --faiss-index IVF16,Flat --faiss-nprobe 1 --max-rows 400 --threads 2 --json --quiet%s%s",
                      sa, "", "", &out, &err);
        ck_assert_msg(rc == 0, "bench knn failed (%d): %s", rc, err);
        j = tu_json_last(out);
        ck_assert_double_eq(tu_json_dbl(j, "rows"), 400);
        ck_assert_msg(tu_json_dbl(j, "recall") > 0.2 && tu_json_dbl(j, "recall") < 0.999, "recall %g", tu_json_dbl(j, "recall"));
        cJSON_Delete(j);
    } else {
        ck_assert_msg(rc == 2 && strstr(err, "no FAISS"), "bench knn without FAISS: %d %s", rc, err);
    }
    free(out); free(err);
    /* prune with FAISS's kNN graph (every list probed: the exact neighbours up to ties), the same
     * seed twice: the same selection; the JSON says which search ran */
    if (knn_faiss_available()) {
        char *ia = path_in(dir, "fa.txt"), *ib = path_in(dir, "fb.txt");
        char *pseudo[2] = {0};
        for (int k = 0; k < 2; k++) {
            rc = run_inca("prune %s --labeled 0.05 --knn-search faiss --faiss-index IVF8,Flat --faiss-nprobe 8 --proxy-epochs 3 "
                          "--proxy-hidden 8 --keep 0.2 --seed 3 --threads 2 --no-save-dynamics --json --quiet --indices %s%s",
                          sa, k ? ib : ia, "", &out, &err);
            ck_assert_msg(rc == 0, "prune --knn-search faiss (%d): %s", rc, err);
            cJSON *j = tu_json_last(out);
            ck_assert_str_eq(tu_json_get(j, "knn_search", cJSON_String)->valuestring, "faiss");
            ck_assert(tu_json_dbl(j, "pseudo_label_acc") > 0.8);
            cJSON_Delete(j);
            free(out); free(err);
            pseudo[k] = slurp(k ? ib : ia);
        }
        ck_assert_str_eq(pseudo[0], pseudo[1]);
        free(pseudo[0]); free(pseudo[1]);
        free(ia); free(ib);
    } else {
        fprintf(stderr, "bench_smoke: prune --knn-search faiss skipped: this build has no FAISS\n");
    }
    free(sa); free(pr);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* ---- issue 31 items 7 and 8: what a newcomer met on the command line ---- */

/* --device cuda where no GPU answers: refused first (before the store is even opened: a missing
 * store still gets the device's message), one line, no doubled colon, no stage named, exit 1 as
 * train's, nothing written. On a machine with a GPU the refusal cannot be seen: skipped there. */
START_TEST(cli_device_cuda_refused_first) {
    if (tu_exists("/dev/nvidia0") || tu_exists("/proc/driver/nvidia/gpus")) {
        fprintf(stderr, "cli_device_cuda_refused_first: skipped: this machine has an NVIDIA GPU\n");
        return;
    }
    char *dir = tu_mkdtemp();
    char *sa = path_in(dir, "a"), *keep = path_in(dir, "k.npy"), *pout = path_in(dir, "p.lmdb");
    dataset_t d;
    make_blobs(&d, 5);
    ck_assert_int_eq(dataset_save(&d, sa, 0), 0);
    dataset_free(&d);
    const char *stores[2] = {sa, "/nonexistent/store"};
    for (int k = 0; k < 2; k++) {
        char cmd[2048], *out = NULL, *err = NULL;
        snprintf(cmd, sizeof cmd, "prune %s --ssl auto --relabel 1 --keep 0.3 --device cuda --indices %s --out %s", stores[k],
                 keep, pout);
        const int rc = tu_inca(cmd, &out, &err);
        ck_assert_msg(rc == 1, "%s: exit %d, stderr %s", stores[k], rc, err);
        const char *nl = strchr(err, '\n');
        ck_assert_msg(nl && nl[1] == '\0', "not one line: %s", err);
        ck_assert_msg(strncmp(err, "inca prune: --device cuda: no CUDA device is available", 54) == 0 &&
                      strstr(err, "--device cpu") && !strstr(err, ": :") && !strstr(err, "relabel") &&
                      !strstr(err, "proxy training"), "%s", err);
        ck_assert_msg(!tu_exists(keep) && !tu_exists(pout), "outputs written");
        ck_assert_str_eq(out, "");
        free(out); free(err);
    }
    store_t *st = NULL;   /* no dynamics saved in the store either */
    store_array_info_t ai;
    ck_assert_int_eq(store_open(sa, STORE_RDONLY, &st), 0);
    ck_assert_int_ne(store_array_info(st, "dyn/last/pseudo", &ai), 0);
    store_close(&st);
    free(sa); free(keep); free(pout);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* `inca prune` under a pseudo-terminal (script(1): the status line is drawn for terminals only);
 * its whole output, the pty's, in *tty */
static int prune_on_tty(const char *args, char **tty) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "script -qfec \"'%s' prune %s\" /dev/null </dev/null", tu_bin(), args);
    return tu_sh(cmd, tty, NULL);
}

/* A csbm graph big enough for the proxy's epochs to reach the status line (drawn at most every
 * 0.2 s) */
static char *status_graph(const char *dir) {
    char *g = path_in(dir, "g"), *out = NULL, *err = NULL;
    int rc = run_inca("gen --kind csbm --nodes 4000 --avg-degree 8 --features 16 --classes 3 --seed 3 --out %s%s%s", g, "",
                      "", &out, &err);
    ck_assert_msg(rc == 0, "gen failed: %s", err);
    free(out); free(err);
    return g;
}

/* The proxy's epochs on the status line: loss and pace, no val / test (it has neither split) and
 * named by the stage; "writing the dynamics" only when they are written. */
START_TEST(cli_status_line_says_what_exists) {
    if (tu_sh("script -qfec true /dev/null </dev/null", NULL, NULL) != 0) {
        fprintf(stderr, "cli_status_line_says_what_exists: skipped: no script(1)\n");
        return;
    }
    char *dir = tu_mkdtemp(), *g = status_graph(dir), args[2048], *tty = NULL;
    snprintf(args, sizeof args, "%s --ssl labelprop --keep 0.3 --proxy-epochs 60 --threads 2 --no-save-dynamics", g);
    ck_assert_int_eq(prune_on_tty(args, &tty), 0);
    ck_assert_msg(strstr(tty, "proxy training (gcn): epoch ") && strstr(tty, "loss "), "no proxy epoch line: %s", tty);
    ck_assert_msg(!strstr(tty, "val 0.0000") && !strstr(tty, "test 0.0000") && !strstr(tty, "[run "),
                  "the proxy's line shows figures it has not: %s", tty);
    ck_assert_msg(!strstr(tty, "writing the dynamics"), "--no-save-dynamics said it wrote them: %s", tty);
    free(tty);
    /* the stage is forced onto the line, so a run that writes them says so (the check above can fail) */
    snprintf(args, sizeof args, "%s --ssl labelprop --keep 0.3 --proxy-epochs 2 --threads 2", g);
    ck_assert_int_eq(prune_on_tty(args, &tty), 0);
    ck_assert_msg(strstr(tty, "writing the dynamics") != NULL, "%s", tty);
    free(tty);
    free(g);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* Ctrl-C while the status line is shown: the line ends with a newline before the process dies of
 * SIGINT (script(1) -e reports that as 130, as a shell does) */
START_TEST(cli_sigint_ends_the_status_line) {
    if (tu_sh("script -qfec true /dev/null </dev/null", NULL, NULL) != 0) {
        fprintf(stderr, "cli_sigint_ends_the_status_line: skipped: no script(1)\n");
        return;
    }
    char *dir = tu_mkdtemp(), *g = status_graph(dir), *pidf = path_in(dir, "pid"), *outf = path_in(dir, "tty");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec script -qfec \"echo \\$\\$ > '%s'; exec '%s' prune %s --ssl labelprop --keep 0.3 "
             "--proxy-epochs 5000 --threads 2 --no-save-dynamics\" /dev/null </dev/null >'%s' 2>&1", pidf, tu_bin(), g, outf);
    const pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    char *tty = NULL;
    long pid = 0;
    for (int t = 0; t < 1200 && !pid; t++) {   /* up to 2 minutes for the first epoch line */
        usleep(100000);
        if (!tu_exists(outf)) continue;
        tty = slurp(outf);
        if (strstr(tty, "epoch ")) {
            FILE *f = fopen(pidf, "r");
            if (f && fscanf(f, "%ld", &pid) != 1) pid = 0;
            if (f) fclose(f);
        }
        free(tty);
        tty = NULL;
    }
    if (pid > 0) kill((pid_t)pid, SIGINT);
    else kill(child, SIGKILL);
    int st = 0;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    tty = slurp(outf);
    ck_assert_msg(pid > 0, "no status line within 2 minutes: %s", tty);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 130, "status %d (130 expected): %s", st, tty);
    const size_t n = strlen(tty);
    ck_assert_msg(n > 0 && tty[n - 1] == '\n', "the status line was left unterminated: ...%s", tty + (n > 200 ? n - 200 : 0));
    free(tty);
    free(g); free(pidf); free(outf);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* The coreset evaluation on a graph dataset trains the target on the selected nodes only, one
 * run per seed seed+i, and reports the mean and the sample standard deviation (n - 1, as train's
 * test_acc_std) of the runs' test accuracies; the full pool's figure trains on the pool. The
 * expectation: train_run called here on the same ids with the same seeds, and the definitions
 * of mean and sample std. */
START_TEST(eval_graph_trains_on_selection) {
    gen_opts_t o;
    gen_opts_default(&o);
    o.nodes = 400;
    o.avg_degree = 8;
    o.features = 16;
    o.classes = 3;
    o.seed = 17;
    o.homophily = 0.7;
    o.mean_scale = 0.6;
    o.noise = 1.0;
    o.split[0] = 0.5;
    o.split[1] = 0.2;
    o.split[2] = 0.3;
    dataset_t d;
    ck_assert_int_eq(gen_csbm(&o, &d, NULL), INCA_OK);
    train_config_t tc;
    train_config_default(&tc);
    tc.model = NN_GCN;
    tc.epochs = 30;
    tc.threads = 1;
    const int64_t *pool = d.split[SPLIT_TRAIN], npool = d.split_n[SPLIT_TRAIN];
    int64_t sel[12];
    const int64_t nsel = 12;
    for (int64_t i = 0; i < nsel; i++) sel[i] = pool[i * 7];   /* ascending, as the selectors give */
    enum { RUNS = 3 };
    const uint64_t seed = 40;
    prune_eval_t e;
    ck_assert_int_eq(prune_eval_run(&d, &tc, pool, npool, sel, nsel, RUNS, seed, PRUNE_EVAL_CORESET | PRUNE_EVAL_FULL, &e),
                     INCA_OK);
    double ac[RUNS], af[RUNS], mc = 0, mf = 0;
    int differ = 0;
    for (int i = 0; i < RUNS; i++) {
        train_config_t c = tc;
        c.runs = 1;
        c.seed = seed + (uint64_t)i;
        train_result_t r;
        ck_assert_int_eq(train_run(&d, &c, sel, nsel, &r), INCA_OK);
        ac[i] = r.test_acc;
        train_result_free(&r);
        ck_assert_int_eq(train_run(&d, &c, pool, npool, &r), INCA_OK);
        af[i] = r.test_acc;
        train_result_free(&r);
        differ += ac[i] != af[i];
        mc += ac[i] / RUNS;
        mf += af[i] / RUNS;
    }
    ck_assert_msg(differ > 0, "the selection trains as the pool does: the check below could not fail");
    double sc = 0, sf = 0;
    for (int i = 0; i < RUNS; i++) {
        sc += (ac[i] - mc) * (ac[i] - mc);
        sf += (af[i] - mf) * (af[i] - mf);
    }
    sc = sqrt(sc / (RUNS - 1));
    sf = sqrt(sf / (RUNS - 1));
    ck_assert_msg(sc > 1e-6, "the runs agree: the std check would be vacuous");
    ck_assert_double_eq_tol(e.coreset_acc, mc, 1e-12);
    ck_assert_double_eq_tol(e.coreset_std, sc, 1e-12);
    ck_assert_double_eq_tol(e.full_acc, mf, 1e-12);
    ck_assert_double_eq_tol(e.full_std, sf, 1e-12);
    ck_assert(isnan(e.random_acc));
    ck_assert_int_eq(e.runs, RUNS);
    dataset_free(&d);
}
END_TEST

/* Stored dynamics read back as they were written, in both layouts: every score and the
 * cartography of the loaded recorder equal the recorder's own bit for bit, and the pool, its
 * pseudo-labels and confidences too (a mutation test: a compact load that lost the EL2N window,
 * or an epoch, passed every CLI check, which reuses full matrices). Some examples never learn,
 * so the epoch count shows in forgetting. Another key is refused. */
START_TEST(dyn_store_round_trip) {
    enum { N = 40, E = 5, W = 3 };
    char *dir = tu_mkdtemp(), *sa = path_in(dir, "a");
    dataset_t d;
    make_blobs(&d, 8);
    ck_assert_int_eq(dataset_save(&d, sa, 0), 0);
    rng_t g;
    rng_seed(&g, 21);
    for (int compact = 0; compact <= 1; compact++) {
        prune_result_t r, l;
        memset(&r, 0, sizeof r);
        r.npool = N;
        r.pool = inca_malloc(N * sizeof *r.pool);
        r.pseudo = inca_malloc(N * sizeof *r.pseudo);
        r.conf = inca_malloc(N * sizeof *r.conf);
        ck_assert(r.pool && r.pseudo && r.conf);
        r.ssl_used = PRUNE_SSL_LABELPROP;
        r.knn_features_used = -1;
        for (int i = 0; i < N; i++) {
            r.pool[i] = 3 * i + 1;
            r.pseudo[i] = (int32_t)(rng_next(&g) % C);
            r.conf[i] = (float)rng_uniform(&g);
        }
        ck_assert_int_eq(compact ? dyn_init_compact(&r.dyn, N, E, W) : dyn_init(&r.dyn, N, E), 0);
        for (int t = 0; t < E; t++) {
            float p[N][C];
            for (int i = 0; i < N; i++) {
                double sum = 0;
                for (int k = 0; k < C; k++) sum += p[i][k] = (float)(rng_uniform(&g) + (k == r.pseudo[i] && i % 4 ? 0.4 * t : 0));
                for (int k = 0; k < C; k++) p[i][k] = (float)(p[i][k] / sum);
            }
            ck_assert_int_eq(dyn_record(&r.dyn, &p[0][0], C, C, r.pseudo, NULL), 0);
        }
        const char *tag = compact ? "c" : "f";
        ck_assert_int_eq(prune_dyn_save(sa, tag, "key-1", &r, C), 0);
        int32_t c = 0;
        ck_assert_int_eq(prune_dyn_load(sa, tag, "key-2", &l, &c), INCA_EINVAL);
        ck_assert_int_eq(prune_dyn_load(sa, tag, "key-1", &l, &c), 0);
        ck_assert_int_eq(c, C);
        ck_assert_int_eq(l.npool, N);
        ck_assert_int_eq(l.dyn.compact, compact);
        ck_assert_int_eq(l.dyn.epochs, E);
        ck_assert_mem_eq(l.pool, r.pool, N * sizeof *r.pool);
        ck_assert_mem_eq(l.pseudo, r.pseudo, N * sizeof *r.pseudo);
        ck_assert_mem_eq(l.conf, r.conf, N * sizeof *r.conf);
        float a[N], b[N], va[N], vb[N], ca[N], cb[N];
        for (int kind = SCORE_AUM; kind <= SCORE_CARTOGRAPHY; kind++) {
            ck_assert_int_eq(dyn_score(&r.dyn, (score_kind_t)kind, W, a), 0);
            ck_assert_msg(dyn_score(&l.dyn, (score_kind_t)kind, W, b) == 0, "%s, score %s: %s", tag,
                          score_name((score_kind_t)kind), inca_errmsg());
            ck_assert_msg(memcmp(a, b, sizeof a) == 0, "%s: score %s differs once stored", tag, score_name((score_kind_t)kind));
        }
        ck_assert_int_eq(dyn_cartography(&r.dyn, NULL, va, ca), 0);
        ck_assert_int_eq(dyn_cartography(&l.dyn, NULL, vb, cb), 0);
        ck_assert_mem_eq(va, vb, sizeof va);
        ck_assert_mem_eq(ca, cb, sizeof ca);
        prune_result_free(&r);
        prune_result_free(&l);
    }
    dataset_free(&d);
    free(sa);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* The random baseline draws its subset from the pool's node ids, not from positions 0..npool-1
 * (a mutation test: that passed while pools began at node 0). Rows 0..99 are the test split,
 * 100..199 the pool; one feature's sign is the class, and the pool's labels say the opposite of
 * the test split's: a subset of the pool learns the pool's rule and scores far below chance on
 * the test split (a subset of the test rows would score near 1). */
START_TEST(eval_random_subset_from_pool) {
    enum { NT = 100, NP = 100 };
    dataset_t d;
    dataset_init(&d);
    d.n = NT + NP;
    d.f = 2;
    d.c = 2;
    d.x = inca_malloc((size_t)d.n * 2 * sizeof *d.x);
    d.y = inca_malloc((size_t)d.n * sizeof *d.y);
    d.split[SPLIT_TEST] = inca_malloc(NT * sizeof(int64_t));
    d.split[SPLIT_TRAIN] = inca_malloc(NP * sizeof(int64_t));
    ck_assert(d.x && d.y && d.split[SPLIT_TEST] && d.split[SPLIT_TRAIN]);
    rng_t g;
    rng_seed(&g, 5);
    for (int64_t i = 0; i < d.n; i++) {
        const int k = (int)(i % 2);
        d.x[2 * i] = (float)((k ? 2.0 : -2.0) + 0.3 * rng_normal(&g));
        d.x[2 * i + 1] = (float)rng_normal(&g);
        d.y[i] = i < NT ? 1 - k : k;
    }
    for (int64_t i = 0; i < NT; i++) d.split[SPLIT_TEST][i] = i;
    for (int64_t i = 0; i < NP; i++) d.split[SPLIT_TRAIN][i] = NT + i;
    d.split_n[SPLIT_TEST] = NT;
    d.split_n[SPLIT_TRAIN] = NP;
    train_config_t tc;
    train_config_default(&tc);
    tc.model = NN_MLP;
    tc.hidden = 8;
    tc.epochs = 40;
    tc.lr = 0.05;
    tc.threads = 1;
    int64_t sel[20];
    for (int i = 0; i < 20; i++) sel[i] = NT + 5 * i;
    prune_eval_t e;
    ck_assert_int_eq(prune_eval_run(&d, &tc, d.split[SPLIT_TRAIN], NP, sel, 20, 2, 3, PRUNE_EVAL_RANDOM | PRUNE_EVAL_CORESET, &e),
                     INCA_OK);
    ck_assert_msg(e.coreset_acc < 0.2, "the pool's rule should fail the test split: coreset %g", e.coreset_acc);
    ck_assert_msg(e.random_acc < 0.2, "random subset scored %g: not drawn from the pool", e.random_acc);
    dataset_free(&d);
}
END_TEST

/* --reuse-dynamics refuses dynamics stored for another pool even when every setting (so the
 * key) is the same: the store's train split rewritten in place, one pool node swapped with a test
 * node, the same labelled file (a mutation test: only the pool's size was compared). */
START_TEST(cli_reuse_refuses_another_pool) {
    char *dir = tu_mkdtemp(), *sa = path_in(dir, "a"), *lf = path_in(dir, "lab.txt");
    dataset_t d;
    make_blobs(&d, 6);
    ck_assert_int_eq(dataset_save(&d, sa, 0), 0);
    FILE *f = fopen(lf, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 12; i++) fprintf(f, "%d\n", i);
    fclose(f);
    char cmd[2048], *out = NULL, *err = NULL;
    const char *cf = "--knn 8 --proxy-hidden 16 --proxy-epochs 3 --keep 0.1 --seed 2 --threads 1";
    for (int k = 0; k < 2; k++) {
        if (k == 1) {   /* swap the last pool node with the first test node */
            int64_t t = d.split[SPLIT_TRAIN][NPOOL - 1];
            d.split[SPLIT_TRAIN][NPOOL - 1] = d.split[SPLIT_TEST][0];
            d.split[SPLIT_TEST][0] = t;
            store_t *s = NULL;
            store_wtx_t *w = NULL;
            ck_assert_int_eq(store_open(sa, STORE_RDWR, &s), 0);
            ck_assert_int_eq(store_write_begin(s, &w), 0);
            ck_assert_int_eq(store_wtx_put_array(w, "split/train", DT_I64, d.split[SPLIT_TRAIN], NPOOL), 0);
            ck_assert_int_eq(store_wtx_put_array(w, "split/test", DT_I64, d.split[SPLIT_TEST], NTEST), 0);
            ck_assert_int_eq(store_write_commit(&w), 0);
            store_close(&s);
        }
        snprintf(cmd, sizeof cmd, "prune %s --labeled-indices %s %s %s", sa, lf, cf, k ? "--reuse-dynamics" : "");
        int rc = tu_inca(cmd, &out, &err);
        ck_assert_msg(rc == (k == 0 ? 0 : 2), "run %d: exit %d: %s", k, rc, err);
        if (k == 1) ck_assert_msg(strstr(err, "do not match this pool"), "%s", err);
        free(out); free(err);
    }
    dataset_free(&d);
    free(sa); free(lf);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* proxy_relabel_from_logits by hand: on a graph the logits' rows are node ids, on a table pool
 * positions; labelled rows keep their label and confidence; the argmax ties to the lowest class
 * and the confidence is its softmax probability. */
START_TEST(proxy_relabel_by_hand) {
    dataset_t dv;
    dataset_init(&dv);
    int32_t y[5] = {-1, 2, -1, -1, 0}, pseudo[4] = {0, 2, 1, 1};
    float conf[4] = {1, 1, 0.5f, 0.5f};
    dv.n = 5;
    dv.c = 3;
    dv.y = y;
    const int64_t pool[4] = {4, 1, 3, 0};
    prune_result_t r;
    memset(&r, 0, sizeof r);
    r.npool = 4;
    r.pseudo = pseudo;
    r.conf = conf;
    const float lg[15] = {1, 1, 0, 9, 0, 0, 0, 0, 0, 0, 2, 1, 0, 9, 0};   /* nodes 0..4 */
    proxy_relabel_from_logits(&dv, pool, 4, 1, lg, &r);
    ck_assert(pseudo[0] == 0 && pseudo[1] == 2 && conf[0] == 1.0f && conf[1] == 1.0f);
    ck_assert_int_eq(pseudo[2], 1);   /* node 3: (0, 2, 1) */
    ck_assert_double_eq_tol(conf[2], 1.0 / (exp(-2.0) + 1.0 + exp(-1.0)), 1e-6);
    ck_assert_int_eq(pseudo[3], 0);   /* node 0: (1, 1, 0), a tie */
    ck_assert_double_eq_tol(conf[3], 1.0 / (2.0 + exp(-1.0)), 1e-6);
    const float lt[12] = {0, 9, 0, 9, 0, 0, 3, 0, 0, 0, 0, 5};   /* pool positions 0..3 */
    proxy_relabel_from_logits(&dv, pool, 4, 0, lt, &r);
    ck_assert(pseudo[0] == 0 && pseudo[1] == 2 && conf[0] == 1.0f && conf[1] == 1.0f);
    ck_assert_int_eq(pseudo[2], 0);
    ck_assert_double_eq_tol(conf[2], 1.0 / (1.0 + 2.0 * exp(-3.0)), 1e-6);
    ck_assert_int_eq(pseudo[3], 2);
    ck_assert_double_eq_tol(conf[3], 1.0 / (1.0 + 2.0 * exp(-5.0)), 1e-6);
}
END_TEST

/* The proxy on a table whose pool is half the rows in a shuffled order: each pool position's
 * features are its own row's, so an MLP fitted to the true labels of separable blobs gives them a
 * mean probability above 0.8 at its last epoch (features of another row: labels unrelated to
 * them, below 0.5), and its probabilities stay finite when the logits are in the thousands;
 * --proxy-epochs 0 is refused by name. */
START_TEST(proxy_record_table_rows) {
    dataset_t d;
    make_blobs(&d, 6);
    enum { NP = NPOOL / 2 };
    int64_t pool[NP];
    int32_t *pseudo = inca_malloc(NP * sizeof *pseudo);
    ck_assert_ptr_nonnull(pseudo);
    int64_t all[NPOOL];
    for (int64_t i = 0; i < NPOOL; i++) all[i] = i;
    rng_t g;
    rng_seed(&g, 3);
    rng_shuffle_i64(&g, all, NPOOL);
    for (int64_t i = 0; i < NP; i++) {
        pool[i] = all[i];
        pseudo[i] = d.y[pool[i]];
    }
    prune_config_t cfg;
    small_config(&cfg);
    cfg.dyn_layout = PRUNE_DYN_FULL;
    prune_result_t r;
    memset(&r, 0, sizeof r);
    r.npool = NP;
    r.pseudo = pseudo;
    ck_assert_int_eq(proxy_record(&d, pool, NP, &cfg, 0, &r), INCA_OK);
    ck_assert_int_eq(r.dyn.epochs, cfg.proxy.epochs);
    double s = 0;
    for (int64_t i = 0; i < NP; i++) s += r.dyn.py[(size_t)(r.dyn.epochs - 1) * NP + i];
    ck_assert_msg(s / NP > 0.8, "mean p[y] at the last epoch %.3f", s / NP);
    dyn_free(&r.dyn);
    /* features scaled by 1000: logits in the thousands, whose softmax is shifted by the row's
     * max (exp(1000) overflows): every recorded probability finite */
    for (int64_t e = 0; e < d.n * d.f; e++) d.x[e] *= 1000.0f;
    cfg.proxy.epochs = 2;
    ck_assert_int_eq(proxy_record(&d, pool, NP, &cfg, 0, &r), INCA_OK);
    for (int64_t e = 0; e < 2 * NP; e++) ck_assert_msg(isfinite(r.dyn.py[e]), "p[y] %g at %lld", r.dyn.py[e], (long long)e);
    dyn_free(&r.dyn);
    cfg.proxy.epochs = 0;
    ck_assert_int_eq(proxy_record(&d, pool, NP, &cfg, 0, &r), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--proxy-epochs"));
    inca_free(pseudo);
    dataset_free(&d);
}
END_TEST

/* proxy_logits are the last epoch's logits of the proxy trained on the pseudo-labels of the
 * confident rows, with no split of the dataset's (its validation split would pick a best epoch):
 * against train_run on that dataset built here (the pool rows' features, the pseudo-labels, the
 * proxy's config with --proxy-model auto's MLP, one run, the job's seed), bit for bit. Then
 * proxy_relabel's two rounds at --relabel-confident 0.25 against the rounds done here: the
 * threshold is the sorted confidences' element floor(0.75 npool), by hand. */
START_TEST(proxy_logits_and_relabel_rounds) {
    dataset_t d;
    make_blobs(&d, 7);
    d.split[SPLIT_VALID] = inca_malloc(50 * sizeof(int64_t));
    ck_assert_ptr_nonnull(d.split[SPLIT_VALID]);
    for (int64_t i = 0; i < 50; i++) d.split[SPLIT_VALID][i] = NPOOL + i;
    d.split_n[SPLIT_VALID] = 50;
    int32_t *pseudo = inca_malloc(NPOOL * sizeof *pseudo), *yv = inca_malloc((size_t)d.n * sizeof *yv);
    float *conf = inca_malloc(NPOOL * sizeof *conf), *out = inca_malloc(NPOOL * C * sizeof *out);
    float *ref = inca_malloc(NPOOL * C * sizeof *ref);
    ck_assert(pseudo && yv && conf && out && ref);
    rng_t g;
    rng_seed(&g, 9);
    for (int64_t i = 0; i < d.n; i++) yv[i] = i < 6 ? d.y[i] : -1;   /* rows 0..5 labelled */
    for (int64_t i = 0; i < NPOOL; i++) {
        pseudo[i] = i % 5 == 4 ? (d.y[i] + 1) % C : d.y[i];   /* a fifth wrong */
        conf[i] = (float)(0.4 + 0.5 * rng_uniform(&g));
    }
    dataset_t dv = d;
    dv.y = yv;
    prune_config_t cfg;
    small_config(&cfg);
    prune_result_t r;
    memset(&r, 0, sizeof r);
    r.npool = NPOOL;
    r.pseudo = pseudo;
    r.conf = conf;
    ck_assert_int_eq(proxy_logits(&dv, d.split[SPLIT_TRAIN], NPOOL, &cfg, 0, &r, 0.0f, "test", out), INCA_OK);
    dataset_t pd;
    dataset_init(&pd);
    pd.n = NPOOL;
    pd.f = d.f;
    pd.c = d.c;
    pd.x = d.x;
    pd.y = pseudo;
    train_config_t tc = cfg.proxy;
    tc.model = NN_MLP;
    tc.runs = 1;
    tc.seed = cfg.seed;
    tc.out_logits = ref;
    train_result_t tr = {0};
    ck_assert_int_eq(train_run(&pd, &tc, d.split[SPLIT_TRAIN], NPOOL, &tr), INCA_OK);
    train_result_free(&tr);
    ck_assert_mem_eq(out, ref, NPOOL * C * sizeof *out);
    /* two relabelling rounds, here and by proxy_relabel */
    int32_t *p2 = inca_malloc(NPOOL * sizeof *p2);
    float *c2 = inca_malloc(NPOOL * sizeof *c2), *cs = inca_malloc(NPOOL * sizeof *cs);
    ck_assert(p2 && c2 && cs);
    memcpy(p2, pseudo, NPOOL * sizeof *p2);
    memcpy(c2, conf, NPOOL * sizeof *c2);
    cfg.relabel = 2;
    cfg.relabel_confident = 0.25;
    for (int round = 0; round < 2; round++) {
        memcpy(cs, conf, NPOOL * sizeof *cs);
        for (int64_t i = 1; i < NPOOL; i++)   /* insertion sort, ascending */
            for (int64_t j = i; j > 0 && cs[j - 1] > cs[j]; j--) {
                const float t = cs[j];
                cs[j] = cs[j - 1];
                cs[j - 1] = t;
            }
        ck_assert_int_eq(proxy_logits(&dv, d.split[SPLIT_TRAIN], NPOOL, &cfg, 0, &r, cs[450], "test", out), INCA_OK);
        proxy_relabel_from_logits(&dv, d.split[SPLIT_TRAIN], NPOOL, 0, out, &r);
    }
    prune_result_t r2 = r;
    r2.pseudo = p2;
    r2.conf = c2;
    ck_assert_int_eq(proxy_relabel(&dv, d.split[SPLIT_TRAIN], NPOOL, &cfg, 0, &r2), INCA_OK);
    ck_assert_mem_eq(p2, pseudo, NPOOL * sizeof *p2);
    ck_assert_mem_eq(c2, conf, NPOOL * sizeof *c2);
    inca_free(p2), inca_free(c2), inca_free(cs);
    inca_free(pseudo), inca_free(yv), inca_free(conf), inca_free(out), inca_free(ref);
    dataset_free(&d);
}
END_TEST

int main(void) {
    Suite *s = suite_create("pruning_e2e");
    TCase *t = tcase_create("e2e");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, pipeline_blobs_labelprop);
    tcase_add_test(t, eval_graph_trains_on_selection);
    tcase_add_test(t, dyn_store_round_trip);
    tcase_add_test(t, eval_random_subset_from_pool);
    tcase_add_test(t, cli_reuse_refuses_another_pool);
    tcase_add_test(t, pipeline_blobs_selftrain);
    tcase_add_test(t, labeled_pick_by_hand);
    tcase_add_test(t, ssl_check_tie_keeps_the_first);
    tcase_add_test(t, sqrt_whiten_view_spreads_over_roots);
    tcase_add_test(t, hidden_labels_never_read_labelprop);
    tcase_add_test(t, hidden_labels_never_read_selftrain);
    tcase_add_test(t, hidden_labels_never_read_relabel);
    tcase_add_test(t, hidden_labels_never_read_proxy);
    tcase_add_test(t, hidden_labels_never_read_auto);
    tcase_add_test(t, hidden_labels_never_read_cs);
    tcase_add_test(t, check_folds_stay_hidden);
    tcase_add_test(t, cli_ssl_auto_picks_the_better);
    tcase_add_test(t, pipeline_sgc_graph_and_no_features);
    tcase_add_test(t, cli_outputs_reuse_and_eval);
    tcase_add_test(t, cli_graph_dataset);
    tcase_add_test(t, prune_run_refusals);
    tcase_add_test(t, prune_run_graph_choice);
    tcase_add_test(t, cli_usage_errors);
    tcase_add_test(t, cli_budget_curve);
    tcase_add_test(t, cli_kind_defaults_and_chance_warning);
    tcase_add_test(t, cli_proxy_methods);
    tcase_add_test(t, proxy_relabel_by_hand);
    tcase_add_test(t, proxy_record_table_rows);
    tcase_add_test(t, proxy_logits_and_relabel_rounds);
    tcase_add_test(t, bench_smoke);
    suite_add_tcase(s, t);
    TCase *cli = tcase_create("issue31");   /* CK_RUN_CASE=issue31 runs these alone */
    tcase_set_timeout(cli, 600);
    tcase_add_test(cli, cli_device_cuda_refused_first);
    tcase_add_test(cli, cli_status_line_says_what_exists);
    tcase_add_test(cli, cli_sigint_ends_the_status_line);
    suite_add_tcase(s, cli);
    return tu_run_suite(s);
}
