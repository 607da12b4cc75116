/* Tests of nn/train.h on small in-memory graphs (contextual SBM from graph/gen.h): every model
 * learns a homophilous graph and the GNNs beat the MLP there; same seed and threads give
 * bit-identical logits; --runs statistics match the single runs; train-index overrides and
 * unlabelled nodes behave as the contract says; metrics lines, hooks, patience, the helper
 * functions (feature normalisation, weight-decay policy, best-epoch rule) and the errors. */
#include "testutil.h"
#include "nn/train.h"
#include "core/args.h"
#include "nn/checkpoint.h"
#include "graph/gen.h"
#include "loaders/dataset.h"
#include "kernels/kernels.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void make_csbm(dataset_t *d, int64_t n, double homophily, double mean_scale, uint64_t seed) {
    gen_opts_t o;
    gen_opts_default(&o);
    o.nodes = n;
    o.avg_degree = 8;
    o.features = 16;
    o.classes = 3;
    o.seed = seed;
    o.homophily = homophily;
    o.mean_scale = mean_scale;
    o.noise = 1.0;
    o.split[0] = 0.1;
    o.split[1] = 0.2;
    o.split[2] = 0.7;
    ck_assert_int_eq(gen_csbm(&o, d, NULL), INCA_OK);
}

static train_config_t cfg_small(const char *model) {
    train_config_t c;
    train_config_default(&c);
    c.model = tu_model(model);
    c.epochs = 60;
    c.hidden = 16;
    c.threads = 1;
    c.K = 5;
    c.layers = 2;
    c.seed = 3;
    return c;
}

static double train_acc(const dataset_t *d, const train_config_t *c) {
    train_result_t r;
    int rc = train_run(d, c, NULL, 0, &r);
    ck_assert_msg(rc == INCA_OK, "train_run %s: %s", model_kind_name(c->model), inca_errmsg());
    const double acc = r.test_acc;
    ck_assert_int_eq(r.runs, c->runs);
    ck_assert(r.epoch_time_s > 0 && r.step_time_s > 0 && r.step_time_s <= r.epoch_time_s);
    ck_assert(r.best_epoch >= 0 && r.best_epoch < r.epochs);
    train_result_free(&r);
    return acc;
}

/* A word flag through core/args.h as the commands parse it: "--flag value" -> its index in words. */
static int word_flag(const char *flag, const char *val, const char *const *words, int n, int *out) {
    char *argv[] = {"t", (char *)flag, (char *)val, NULL};
    const char *known[] = {flag, NULL};
    args_t *a = NULL;
    ck_assert_int_eq(args_parse(3, argv, known, &a), INCA_OK);
    const int rc = args_word(a, flag, NULL, words, n, "the words", out);
    args_free(&a);
    return rc;
}

START_TEST(test_models_learn) {
    /* homophily 0.9 with weak features: aggregation is what makes the task solvable */
    dataset_t d;
    make_csbm(&d, 900, 0.9, 0.6, 11);
    train_config_t c = cfg_small("mlp");
    const double mlp = train_acc(&d, &c);
    const char *gnn[] = {"gcn", "sage", "gcnii", "appnp"};
    for (int i = 0; i < 4; i++) {
        c = cfg_small(gnn[i]);
        if (strcmp(gnn[i], "gcnii") == 0) { c.layers = 4; c.hidden = 32; c.dropout = 0.3; }
        const double acc = train_acc(&d, &c);
        fprintf(stderr, "csbm: %s %.3f vs mlp %.3f\n", gnn[i], acc, mlp);
        ck_assert_msg(acc > 0.75, "%s reached only %.3f", gnn[i], acc);
        ck_assert_msg(acc > mlp + 0.1, "%s %.3f does not beat mlp %.3f", gnn[i], acc, mlp);
    }
    /* strong features on an uninformative graph (homophily = 1/3 = chance): the MLP learns */
    dataset_t f;
    make_csbm(&f, 600, 1.0 / 3, 4.0, 12);
    c = cfg_small("mlp");
    const double mlp_strong = train_acc(&f, &c);
    ck_assert_msg(mlp_strong > 0.8, "mlp reached only %.3f with strong features", mlp_strong);
    dataset_free(&f);
    /* BatchNorm and residual variants train too */
    c = cfg_small("gcn");
    c.layers = 3;
    c.batchnorm = 1;
    c.residual = 1;
    ck_assert(train_acc(&d, &c) > 0.75);
    dataset_free(&d);
}
END_TEST

/* Logits at the best epoch of one run, via out_logits. */
static float *run_logits(const dataset_t *d, train_config_t c, int threads, const int64_t *ids, int64_t nids,
                         train_result_t *r) {
    float *l = malloc((size_t)(d->n * d->c) * sizeof(float));
    c.threads = threads;
    c.out_logits = l;
    ck_assert_int_eq(train_run(d, &c, ids, nids, r), INCA_OK);
    return l;
}

START_TEST(test_deterministic) {
    dataset_t d;
    make_csbm(&d, 700, 0.8, 1.0, 5);
    const size_t bytes = (size_t)(d.n * d.c) * sizeof(float);
    const char *models[] = {"gcn", "sage", "gcnii", "appnp"};
    for (int t = 1; t <= 2; t++)
        for (int i = 0; i < 4; i++) {
            train_config_t c = cfg_small(models[i]);
            c.epochs = 15;
            c.batchnorm = i == 0;
            train_result_t r1, r2;
            float *a = run_logits(&d, c, t, NULL, 0, &r1);
            float *b = run_logits(&d, c, t, NULL, 0, &r2);
            ck_assert_msg(memcmp(a, b, bytes) == 0, "%s with %d threads: logits differ between runs", models[i], t);
            ck_assert(r1.test_acc == r2.test_acc && r1.best_epoch == r2.best_epoch);
            c.seed++;
            train_result_t r3;
            float *e = run_logits(&d, c, t, NULL, 0, &r3);
            ck_assert_msg(memcmp(a, e, bytes) != 0, "another seed gave the same logits");
            free(a);
            free(b);
            free(e);
            train_result_free(&r1);
            train_result_free(&r2);
            train_result_free(&r3);
        }
    dataset_free(&d);
}
END_TEST

/* Mini-batch SGD for the MLP (batch_size > 0): one batch holding every training row is the
 * full-batch step (dropout off: the masks are drawn per batch row); smaller batches take more
 * steps per epoch and fit the training rows better in the same epochs; the shuffle is seeded
 * (bit-identical reruns); graph models refuse row batches. */
START_TEST(test_minibatch_mlp) {
    dataset_t d;
    make_csbm(&d, 600, 1.0 / 3, 1.5, 21);
    const size_t bytes = (size_t)(d.n * d.c) * sizeof(float);
    train_config_t c = cfg_small("mlp");
    c.epochs = 10;
    c.dropout = 0;
    train_result_t rf, rb;
    float *full = run_logits(&d, c, 1, NULL, 0, &rf);
    c.batch_size = 100000;   /* >= n_train: one step per epoch */
    float *one = run_logits(&d, c, 1, NULL, 0, &rb);
    double worst = 0;
    for (int64_t i = 0; i < d.n * d.c; i++) worst = fmax(worst, fabs((double)full[i] - (double)one[i]));
    ck_assert_msg(worst < 1e-4, "one batch of every row differs from full-batch by %g", worst);
    ck_assert(rf.test_acc == rb.test_acc);
    train_result_free(&rb);
    /* batches of 8 training rows: ~8 steps per epoch, a lower final training loss */
    c.batch_size = 8;
    c.dropout = 0.2;
    float *a = run_logits(&d, c, 2, NULL, 0, &rb);
    ck_assert_msg(rb.train_loss < rf.train_loss, "mini-batch loss %g not below full-batch %g", rb.train_loss,
                  rf.train_loss);
    ck_assert(rb.test_acc > 0.5);   /* chance is 1/3 */
    train_result_t r2;
    float *b = run_logits(&d, c, 2, NULL, 0, &r2);
    ck_assert_msg(memcmp(a, b, bytes) == 0, "mini-batch reruns differ");
    c.seed++;
    train_result_t r3;
    float *e = run_logits(&d, c, 2, NULL, 0, &r3);
    ck_assert_msg(memcmp(a, e, bytes) != 0, "another seed gave the same logits");
    train_result_free(&rf);
    train_result_free(&rb);
    train_result_free(&r2);
    train_result_free(&r3);
    free(full);
    free(one);
    free(a);
    free(b);
    free(e);
    /* training ids without a label (--train-indices may name any node) take no step and count in
     * no mean: the labelled ids alone give the same bits, and the training accuracy is theirs */
    const int64_t ntr = d.split_n[SPLIT_TRAIN], nte = d.split_n[SPLIT_TEST];
    int64_t *mixed = malloc(sizeof *mixed * (size_t)(2 * ntr));
    ck_assert(mixed);
    int64_t nm = 0;
    for (int64_t i = 0; i < ntr; i++) {
        mixed[nm++] = d.split[SPLIT_TRAIN][i];
        if (i < nte && i % 2 == 0) mixed[nm++] = d.split[SPLIT_TEST][i];
    }
    for (int64_t i = 0; i < ntr && i < nte; i += 2) d.y[d.split[SPLIT_TEST][i]] = -1;
    c = cfg_small("mlp");
    c.epochs = 5;
    c.batch_size = 8;
    float *lab = run_logits(&d, c, 1, d.split[SPLIT_TRAIN], ntr, &rb);
    float *mix = run_logits(&d, c, 1, mixed, nm, &r2);
    ck_assert_msg(memcmp(lab, mix, bytes) == 0, "unlabelled training ids changed the model");
    ck_assert(rb.train_loss == r2.train_loss);
    train_result_free(&rb);
    train_result_free(&r2);
    free(lab);
    free(mix);
    for (int64_t i = 0; i < ntr; i++) mixed[i] = d.split[SPLIT_TEST][0];   /* none labelled: refused */
    ck_assert_int_eq(train_run(&d, &c, mixed, 1, &rb), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "has a label"));
    free(mixed);
    c = cfg_small("gcn");
    c.batch_size = 8;
    ck_assert_int_eq(train_run(&d, &c, NULL, 0, &rb), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--batch-size"));
    dataset_free(&d);
}
END_TEST

/* The MLP's mini-batch steps against train_full.h's contract, through the step hook: every epoch
 * takes each labelled training id once in a fresh order (the order of epoch ep a function of the
 * seed and ep), step s of epoch ep draws its dropout masks as step ep * steps + s, and the
 * epoch's loss is the mean over its training rows (a last batch smaller than the others counts
 * by its rows). lr 0 keeps the initial weights, so each step's logits are a forward of a model
 * made with the run's seed, by hand (mutation tests: one order for every epoch, masks of step
 * ep + s, and the mean over steps x batch size all passed). */
typedef struct {
    int calls, steps[2];
    int64_t nodes[2][64];
    int64_t got[2];
    float logits[2][64 * 3];
    int64_t rows[2][16], lo[2][16];
} mb_hook_t;

static int mb_on_step(void *ctx, int run, int epoch, const int64_t *nodes, const int64_t *rows, int64_t m, const float *logits,
                      int32_t c) {
    mb_hook_t *h = ctx;
    ck_assert(run == 0 && epoch >= 0 && epoch < 2 && c == 3);
    const int s = h->steps[epoch]++;
    ck_assert(s < 16 && h->got[epoch] + m <= 64);
    h->lo[epoch][s] = h->got[epoch];
    h->rows[epoch][s] = m;
    for (int64_t i = 0; i < m; i++) {
        ck_assert_int_eq(rows[i], i);
        h->nodes[epoch][h->got[epoch] + i] = nodes[i];
        memcpy(&h->logits[epoch][(h->got[epoch] + i) * 3], &logits[i * 3], 3 * sizeof(float));
    }
    h->got[epoch] += m;
    h->calls++;
    return 0;
}

static int cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

START_TEST(test_minibatch_mlp_steps) {
    dataset_t d;
    make_csbm(&d, 300, 1.0 / 3, 1.5, 23);
    const int64_t ntr = d.split_n[SPLIT_TRAIN];   /* 30 labelled: batches of 7 leave one of 2 */
    ck_assert(ntr == 30 && ntr % 7 != 0);
    train_config_t c = cfg_small("mlp");
    c.epochs = 2;
    c.batch_size = 7;
    c.lr = 0;
    c.dropout = 0.5;
    mb_hook_t *h = calloc(1, sizeof *h);
    c.on_step = mb_on_step;
    c.on_step_ctx = h;
    train_result_t r;
    ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_OK);
    const int steps = (int)((ntr + 6) / 7);
    ck_assert_int_eq(h->steps[0], steps);
    ck_assert_int_eq(h->steps[1], steps);
    int64_t want[64], got[64];
    memcpy(want, d.split[SPLIT_TRAIN], sizeof(int64_t) * (size_t)ntr);
    qsort(want, (size_t)ntr, sizeof *want, cmp_i64);
    for (int ep = 0; ep < 2; ep++) {
        ck_assert_int_eq(h->got[ep], ntr);
        memcpy(got, h->nodes[ep], sizeof(int64_t) * (size_t)ntr);
        qsort(got, (size_t)ntr, sizeof *got, cmp_i64);
        ck_assert_msg(memcmp(got, want, sizeof(int64_t) * (size_t)ntr) == 0, "epoch %d: not every training id once", ep);
    }
    ck_assert_msg(memcmp(h->nodes[0], h->nodes[1], sizeof(int64_t) * (size_t)ntr) != 0, "epoch 1 kept epoch 0's order");
    /* the logits of every step by hand: the initial model, the batch's rows, step ep * steps + s */
    model_config_t mc;
    model_t *m = NULL;
    ck_assert_int_eq(train_model_config(&d, &c, c.seed, &mc), INCA_OK);
    ck_assert_int_eq(model_create(&mc, 7, &m), INCA_OK);
    float xb[7 * 16];
    ck_assert_int_eq(d.f, 16);
    double lsum = 0;
    for (int ep = 0; ep < 2; ep++)
        for (int s = 0; s < steps; s++) {
            const int64_t lo = h->lo[ep][s], nb = h->rows[ep][s];
            ck_assert_int_eq(nb, s < steps - 1 ? 7 : ntr - 7 * (steps - 1));
            for (int64_t i = 0; i < nb; i++) memcpy(&xb[i * 16], &d.x[h->nodes[ep][lo + i] * 16], 16 * sizeof(float));
            const float *l;
            ck_assert_int_eq(model_forward(m, nb, xb, NULL, 1, c.seed, (uint64_t)ep * (uint64_t)steps + (uint64_t)s, &l), INCA_OK);
            for (int64_t i = 0; i < nb * 3; i++)
                ck_assert_msg(fabs(l[i] - h->logits[ep][lo * 3 + i]) <= 1e-6 * (1 + fabs(l[i])),
                              "epoch %d step %d logit %lld: %g, by hand %g", ep, s, (long long)i, h->logits[ep][lo * 3 + i], l[i]);
            for (int64_t i = 0; ep == 1 && i < nb; i++) {   /* the last epoch's loss: -log softmax, in double */
                const float *z = &h->logits[1][(lo + i) * 3];
                const double mx = fmax(z[0], fmax(z[1], z[2]));
                const double lse = mx + log(exp(z[0] - mx) + exp(z[1] - mx) + exp(z[2] - mx));
                lsum += lse - z[d.y[h->nodes[1][lo + i]]];
            }
        }
    ck_assert_msg(fabs(r.train_loss - lsum / (double)ntr) < 1e-6, "train loss %.9g, the mean over the rows %.9g", r.train_loss,
                  lsum / (double)ntr);
    model_free(&m);
    train_result_free(&r);
    free(h);
    dataset_free(&d);
}
END_TEST

/* Checkpoints: 6 epochs, then a resumed run to 12, equals 12 epochs straight (the logits after
 * the last epoch, the loss, the best epoch; no validation split, so the last epoch is the best
 * and out_logits holds the final model); a larger --epochs extends a run; a run stopped by
 * patience resumes as finished; another configuration or a truncated file is refused with the
 * path; cluster, GAS and IncAgg resume exactly too; --resume without --checkpoint is refused. */
/* A resume under another model structure is refused (checkpoint.c's arch_hash): every flag the
 * hash names (--alpha, --theta, --K, --batchnorm, --residual, --dense-input) on the model kinds
 * that use it, each changed alone; the same flags resume (the refusal is the change's). The
 * expectation is the header check's documented list, not the hash's code. */
START_TEST(test_checkpoint_arch_refusals) {
    dataset_t d;
    make_csbm(&d, 300, 0.8, 1.0, 5);
    char *dir = tu_mkdtemp(), path[700];
    ck_assert_ptr_nonnull(dir);
    static const struct { const char *model, *what; } cases[] = {
        {"gcnii", "alpha"}, {"gcnii", "theta"}, {"appnp", "alpha"}, {"appnp", "K"},
        {"gcn", "batchnorm"}, {"gcn", "residual"}, {"gcn", "dense_input"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        train_config_t c = cfg_small(cases[i].model);
        c.epochs = 2;
        c.layers = 3;   /* gcn: a hidden-to-hidden layer, where --residual applies */
        snprintf(path, sizeof path, "%s/%zu", dir, i);
        c.checkpoint_dir = path;
        train_result_t r;
        ck_assert_msg(train_run(&d, &c, NULL, 0, &r) == INCA_OK, "%s: %s", cases[i].model, inca_errmsg());
        train_result_free(&r);
        c.resume = 1;
        c.epochs = 3;
        train_config_t o = c;
        const char *w = cases[i].what;
        if (!strcmp(w, "alpha")) o.alpha = 0.3;
        else if (!strcmp(w, "theta")) o.theta = 1.0;
        else if (!strcmp(w, "K")) o.K = c.K + 1;
        else if (!strcmp(w, "batchnorm")) o.batchnorm = 1;
        else if (!strcmp(w, "residual")) o.residual = 1;
        else o.dense_input = 1;
        const int rc = train_run(&d, &o, NULL, 0, &r);
        if (rc == INCA_OK) train_result_free(&r);
        ck_assert_msg(rc == INCA_EINVAL && strstr(inca_errmsg(), "another model structure"),
                      "%s with another %s resumed (rc %d): %s", cases[i].model, w, rc, inca_errmsg());
        ck_assert_msg(train_run(&d, &c, NULL, 0, &r) == INCA_OK, "%s: the same flags: %s", cases[i].model, inca_errmsg());
        train_result_free(&r);
    }
    /* what the run is judged on: a resume under another --select, --feature-norm or --metric is
     * refused (mutation tests: --select left out of the data hash, and the --metric check
     * dropped, passed) */
    for (int w = 0; w < 3; w++) {
        train_config_t c = cfg_small("gcn");
        c.epochs = 2;
        snprintf(path, sizeof path, "%s/data%d", dir, w);
        c.checkpoint_dir = path;
        train_result_t r;
        ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_OK);
        train_result_free(&r);
        c.resume = 1;
        c.epochs = 3;
        train_config_t o = c;
        if (w == 0) o.select_loss = 1;
        else if (w == 1) o.feature_norm = TRAIN_FEATNORM_STANDARD;   /* (row needs features >= 0: this csbm has signed ones) */
        else o.metric = TRAIN_METRIC_F1;   /* the best epoch so far was picked by another figure */
        const int rc = train_run(&d, &o, NULL, 0, &r);
        if (rc == INCA_OK) train_result_free(&r);
        static const char *const what[3] = {"--select", "--feature-norm", "--metric"};
        ck_assert_msg(rc == INCA_EINVAL && strstr(inca_errmsg(), w == 2 ? "--metric" : "--select"), "another %s resumed (rc %d): %s",
                      what[w], rc, inca_errmsg());
        ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_OK);
        train_result_free(&r);
    }
    tu_rmrf(dir);
    free(dir);
    dataset_free(&d);
}
END_TEST

START_TEST(test_checkpoint_resume) {
    dataset_t d;
    make_csbm(&d, 500, 0.8, 1.0, 31);
    dataset_t e = d;
    e.split_n[SPLIT_VALID] = 0;
    const size_t bytes = (size_t)(e.n * e.c) * sizeof(float);
    char *dir = tu_mkdtemp(), a[600], b[600], path[700];
    ck_assert_ptr_nonnull(dir);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    train_config_t c = cfg_small("gcn");
    c.layers = 3;
    c.batchnorm = 1;   /* running statistics are state too */
    c.epochs = 12;
    c.checkpoint_dir = a;
    train_result_t r1, r2;
    float *full = run_logits(&e, c, 2, NULL, 0, &r1);
    snprintf(path, sizeof path, "%s/run-0.ckpt", a);
    ck_assert(tu_exists(path));
    c.checkpoint_dir = b;
    c.epochs = 6;
    train_result_t rh;
    float *half = run_logits(&e, c, 2, NULL, 0, &rh);
    ck_assert_int_eq(rh.epochs, 6);
    c.epochs = 12;
    c.resume = 1;
    float *res = run_logits(&e, c, 2, NULL, 0, &r2);
    ck_assert_msg(memcmp(full, res, bytes) == 0, "resumed run differs from the uninterrupted one");
    ck_assert(r1.train_loss == r2.train_loss && r1.test_acc == r2.test_acc);
    ck_assert_int_eq(r1.best_epoch, r2.best_epoch);
    ck_assert_int_eq(r2.epochs, 12);
    ck_assert(memcmp(full, half, bytes) != 0);   /* the comparison can fail */
    /* resuming a run that already reached --epochs trains nothing and reports the same */
    train_result_t r3;
    float *again = run_logits(&e, c, 2, NULL, 0, &r3);
    ck_assert(r3.test_acc == r2.test_acc && r3.train_loss == r2.train_loss);
    ck_assert_int_eq(r3.epochs, 12);
    /* patience: stopped early, resumed as finished even with more epochs */
    train_config_t p = cfg_small("gcn");
    snprintf(path, sizeof path, "%s/p", dir);
    p.checkpoint_dir = path;
    p.epochs = 200;
    p.patience = 3;
    p.lr = 0.05;
    train_result_t rp1, rp2;
    ck_assert_int_eq(train_run(&d, &p, NULL, 0, &rp1), INCA_OK);
    ck_assert_int_lt(rp1.epochs, 200);
    p.resume = 1;
    ck_assert_int_eq(train_run(&d, &p, NULL, 0, &rp2), INCA_OK);
    ck_assert_int_eq(rp2.epochs, rp1.epochs);
    ck_assert(rp2.test_acc == rp1.test_acc && rp2.best_epoch == rp1.best_epoch);
    /* patience counted across a resume: stopped one epoch before the early stop (2 evaluations
     * since the best), resumed, it stops at the same epoch (a mutation test: a counter restarted
     * at 0 trained on) */
    train_result_t rp3, rp4;
    snprintf(path, sizeof path, "%s/p2", dir);
    p.checkpoint_dir = path;
    p.resume = 0;
    p.epochs = rp1.epochs - 1;
    ck_assert_int_eq(train_run(&d, &p, NULL, 0, &rp3), INCA_OK);
    ck_assert_int_eq(rp3.epochs, rp1.epochs - 1);
    p.resume = 1;
    p.epochs = 200;
    ck_assert_int_eq(train_run(&d, &p, NULL, 0, &rp4), INCA_OK);
    ck_assert_int_eq(rp4.epochs, rp1.epochs);
    ck_assert(rp4.test_acc == rp1.test_acc && rp4.best_epoch == rp1.best_epoch);
    train_result_free(&rp3);
    train_result_free(&rp4);
    /* another configuration */
    train_config_t o = c;
    o.hidden = 32;
    train_result_t rx;
    ck_assert_int_eq(train_run(&e, &o, NULL, 0, &rx), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--hidden"));
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "run-0.ckpt"));
    o = c;
    o.model = tu_model("sage");
    ck_assert_int_eq(train_run(&e, &o, NULL, 0, &rx), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "model"));
    /* a truncated checkpoint */
    snprintf(path, sizeof path, "%s/run-0.ckpt", b);
    ck_assert_int_eq(truncate(path, 600), 0);
    ck_assert_int_eq(train_run(&e, &c, NULL, 0, &rx), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "truncated"));
    /* cut inside its header: truncated, not "a checkpoint of an older inca (format 5, this one
     * reads 5)" as its whole magic read back */
    ck_assert_int_eq(truncate(path, 50), 0);
    ck_assert_int_eq(train_run(&e, &c, NULL, 0, &rx), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "truncated header") && !strstr(inca_errmsg(), "older"), "%s", inca_errmsg());
    /* a resumed run counts the evaluations before it (3 epochs, then to 5: 5 evaluations); a
     * checkpoint with a byte after its last table, or of an older format (magic INCACKP4), is
     * refused by name (mutation tests: the count restarted at 0, the trailing byte taken, and
     * the older format called no checkpoint all passed) */
    {
        train_config_t q = cfg_small("gcn");
        char qd[700], qp[800];
        snprintf(qd, sizeof qd, "%s/fmt", dir);
        snprintf(qp, sizeof qp, "%s/run-0.ckpt", qd);
        q.checkpoint_dir = qd;
        q.epochs = 3;
        train_result_t rq;
        ck_assert_int_eq(train_run(&d, &q, NULL, 0, &rq), INCA_OK);
        ck_assert_int_eq(rq.evals, 3);
        train_result_free(&rq);
        q.resume = 1;
        q.epochs = 5;
        ck_assert_int_eq(train_run(&d, &q, NULL, 0, &rq), INCA_OK);
        ck_assert_int_eq(rq.epochs, 5);
        ck_assert_msg(rq.evals == 5, "resumed run reports %lld evaluations, 5 were made", (long long)rq.evals);
        train_result_free(&rq);
        FILE *fp = fopen(qp, "ab");
        ck_assert_ptr_nonnull(fp);
        fputc(0, fp);
        fclose(fp);
        ck_assert_int_eq(train_run(&d, &q, NULL, 0, &rq), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), "trailing bytes") && strstr(inca_errmsg(), "run-0.ckpt"), "%s", inca_errmsg());
        fp = fopen(qp, "r+b");
        ck_assert_ptr_nonnull(fp);
        ck_assert_int_eq(fseek(fp, 7, SEEK_SET), 0);
        fputc('4', fp);
        fclose(fp);
        ck_assert_int_eq(train_run(&d, &q, NULL, 0, &rq), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), "older inca (format 4, this one reads 5)"), "%s", inca_errmsg());
    }
    /* mini-batch methods: the history tables and the batch sequence resume too; the exact
     * training loss of the last epoch is the witness (the validation split stays, so the best
     * epoch can lie in either half) */
    const char *mb[3] = {"cluster", "gas", "incagg"};
    for (int k = 0; k < 3; k++) {
        train_config_t q = cfg_small("gcn");
        q.method = tu_method(mb[k]);
        q.parts = 8;
        q.batch_parts = 2;
        q.refresh = 3;   /* incagg: a refresh inside the epoch as well as at its end */
        q.epochs = 10;
        q.threads = 2;
        char qa[700], qb[700];
        snprintf(qa, sizeof qa, "%s/%s-a", dir, mb[k]);
        snprintf(qb, sizeof qb, "%s/%s-b", dir, mb[k]);
        train_result_t m1, m2, mh;
        q.checkpoint_dir = qa;
        ck_assert_msg(train_run(&d, &q, NULL, 0, &m1) == INCA_OK, "%s: %s", mb[k], inca_errmsg());
        q.checkpoint_dir = qb;
        q.epochs = 5;
        ck_assert_int_eq(train_run(&d, &q, NULL, 0, &mh), INCA_OK);
        q.epochs = 10;
        q.resume = 1;
        ck_assert_int_eq(train_run(&d, &q, NULL, 0, &m2), INCA_OK);
        ck_assert_msg(m1.train_loss == m2.train_loss, "%s: resumed loss %.9g vs %.9g", mb[k], m2.train_loss, m1.train_loss);
        ck_assert_msg(mh.train_loss != m1.train_loss, "%s: the halfway loss equals the final one", mb[k]);
        ck_assert(m1.test_acc == m2.test_acc && m1.best_epoch == m2.best_epoch);
        ck_assert_int_eq(m2.epochs, 10);
        train_result_free(&m1);
        train_result_free(&m2);
        train_result_free(&mh);
        /* another partitioning: the tables' rows would land on other nodes, refused naming it */
        q.parts = 4;
        q.epochs = 12;
        ck_assert_int_eq(train_run(&d, &q, NULL, 0, &m2), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), "partitioning") && strstr(inca_errmsg(), qb), "%s", inca_errmsg());
    }
    o = c;
    o.checkpoint_dir = NULL;
    ck_assert_int_eq(train_run(&e, &o, NULL, 0, &rx), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--resume"));
    train_result_free(&r1);
    train_result_free(&r2);
    train_result_free(&rh);
    train_result_free(&r3);
    train_result_free(&rp1);
    train_result_free(&rp2);
    free(full);
    free(half);
    free(res);
    free(again);
    tu_rmrf(dir);
    free(dir);
    dataset_free(&d);
}
END_TEST


/* --eval-every: the epochs evaluated (the metrics lines) are every N-th and the last, each
 * with the figures a run evaluating every epoch has at that epoch (evaluation changes nothing
 * of the training: full-batch, its thread ranks, GAS, IncAgg); the best epoch is among them */
static int metric_lines(const char *path, cJSON **v, int max) {
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char *buf = calloc(1, 1 << 20);
    size_t got = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    buf[got] = '\0';
    int n = tu_json_lines(buf, v, max);
    free(buf);
    return n;
}

START_TEST(test_eval_every) {
    dataset_t d;
    make_csbm(&d, 600, 0.6, 0.6, 9);
    char *dir = tu_mkdtemp(), p1[4200], p3[4200];
    snprintf(p1, sizeof p1, "%s/every1.jsonl", dir);
    snprintf(p3, sizeof p3, "%s/every3.jsonl", dir);
    const char *methods[] = {"full", "full", "gas", "incagg"};
    for (int k = 0; k < 4; k++) {
        train_config_t c = cfg_small("gcn");
        c.method = tu_method(methods[k]);
        c.workers = k == 1 ? 2 : 1;
        c.epochs = 8;
        c.parts = 8;
        c.batch_parts = 2;
        c.metrics_path = p1;
        train_result_t r1, r3;
        ck_assert_msg(train_run(&d, &c, NULL, 0, &r1) == INCA_OK, "%s: %s", methods[k], inca_errmsg());
        c.eval_every = 3;
        c.metrics_path = p3;
        ck_assert_msg(train_run(&d, &c, NULL, 0, &r3) == INCA_OK, "%s: %s", methods[k], inca_errmsg());
        cJSON *a[16], *b[16];
        const int na = metric_lines(p1, a, 16), nb = metric_lines(p3, b, 16);
        ck_assert_int_eq(na, 8);
        ck_assert_int_eq(nb, 3);
        const int want[3] = {2, 5, 7};
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq((int)tu_json_dbl(b[i], "epoch"), want[i]);
            const cJSON *same = a[want[i]];
            ck_assert_msg(tu_json_dbl(b[i], "val_acc") == tu_json_dbl(same, "val_acc") &&
                              tu_json_dbl(b[i], "test_acc") == tu_json_dbl(same, "test_acc") &&
                              tu_json_dbl(b[i], "train_loss") == tu_json_dbl(same, "train_loss"),
                          "%s: epoch %d differs", methods[k], want[i]);
        }
        ck_assert(r3.best_epoch == 2 || r3.best_epoch == 5 || r3.best_epoch == 7);
        tu_json_free_lines(a, na);
        tu_json_free_lines(b, nb);
        train_result_free(&r1);
        train_result_free(&r3);
    }
    tu_rmrf(dir);
    free(dir);
    dataset_free(&d);
}
END_TEST

START_TEST(test_runs_statistics) {
    dataset_t d;
    make_csbm(&d, 500, 0.8, 1.0, 8);
    train_config_t c = cfg_small("gcn");
    c.epochs = 20;
    c.runs = 3;
    c.seed = 40;
    c.lr = 0.05;   /* the validation accuracy peaks before the last epoch */
    train_result_t r;
    ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_OK);
    double s = 0, s2 = 0, sv = 0, sv2 = 0, cls[4] = {0, 0, 0, 0};
    int early = 0;   /* runs whose best epoch is not the last (the best-epoch check can fail) */
    for (int i = 0; i < 3; i++) {
        train_config_t one = c;
        one.runs = 1;
        one.seed = c.seed + (uint64_t)i;
        train_result_t q;
        ck_assert_int_eq(train_run(&d, &one, NULL, 0, &q), INCA_OK);
        ck_assert_msg(q.test_acc == r.run_test_acc[i], "run %d: %g vs single run %g", i, r.run_test_acc[i], q.test_acc);
        ck_assert_msg(q.best_epoch == r.run_best_epoch[i], "run %d: best epoch %d vs single run %d", i, r.run_best_epoch[i],
                      q.best_epoch);
        early += q.best_epoch < c.epochs - 1;
        ck_assert(q.val_acc == r.run_val_acc[i]);
        s += q.test_acc;
        sv += q.val_acc;
        cls[0] += q.test_bacc;
        cls[1] += q.val_bacc;
        cls[2] += q.test_f1;
        cls[3] += q.val_f1;
        train_result_free(&q);
    }
    const double mu = s / 3, mv = sv / 3;
    for (int i = 0; i < 3; i++) s2 += (r.run_test_acc[i] - mu) * (r.run_test_acc[i] - mu);
    for (int i = 0; i < 3; i++) sv2 += (r.run_val_acc[i] - mv) * (r.run_val_acc[i] - mv);
    ck_assert(fabs(r.test_acc - mu) < 1e-12);
    ck_assert(fabs(r.test_acc_std - sqrt(s2 / 2)) < 1e-12);
    /* the validation figures too, and the per-class metrics as means over the runs (a mutation
     * test: the validation std taken over the test accuracies, and the last run's balanced
     * accuracy reported for all, passed) */
    ck_assert(fabs(r.val_acc - mv) < 1e-12);
    ck_assert_msg(fabs(r.val_acc_std - sqrt(sv2 / 2)) < 1e-12, "val std %g, by hand %g", r.val_acc_std, sqrt(sv2 / 2));
    ck_assert(sv2 > 0 && fabs(sv2 - s2) > 1e-9);
    ck_assert_int_gt(early, 0);   /* the runs differ, and not alike on both splits */
    const double got[4] = {r.test_bacc, r.val_bacc, r.test_f1, r.val_f1};
    for (int k = 0; k < 4; k++)
        ck_assert_msg(isfinite(got[k]) && fabs(got[k] - cls[k] / 3) < 1e-12, "per-class metric %d: %g, mean of the runs %g", k,
                      got[k], cls[k] / 3);
    train_result_free(&r);
    dataset_free(&d);
}
END_TEST

START_TEST(test_override_and_unlabelled) {
    dataset_t d;
    make_csbm(&d, 500, 0.8, 1.0, 9);
    const size_t bytes = (size_t)(d.n * d.c) * sizeof(float);
    train_config_t c = cfg_small("gcn");
    c.epochs = 20;
    /* override = the first half of the train split */
    const int64_t half = d.split_n[SPLIT_TRAIN] / 2;
    train_result_t r1, r2;
    float *a = run_logits(&d, c, 1, d.split[SPLIT_TRAIN], half, &r1);
    dataset_t e = d;   /* shallow copy whose train split is that half */
    e.split_n[SPLIT_TRAIN] = half;
    float *b = run_logits(&e, c, 1, NULL, 0, &r2);
    ck_assert(memcmp(a, b, bytes) == 0);
    free(b);
    train_result_free(&r2);
    /* the other half unlabelled, with the full train split: same training as the half */
    int32_t *y = malloc((size_t)d.n * sizeof(int32_t));
    memcpy(y, d.y, (size_t)d.n * sizeof(int32_t));
    for (int64_t i = half; i < d.split_n[SPLIT_TRAIN]; i++) y[d.split[SPLIT_TRAIN][i]] = -1;
    e = d;
    e.y = y;
    b = run_logits(&e, c, 1, NULL, 0, &r2);
    ck_assert_msg(memcmp(a, b, bytes) == 0, "unlabelled train nodes changed the training");
    /* no labelled train node at all: refused for every method (they trained nothing for --epochs
     * and reported chance) */
    for (int i = 0; i < half; i++) y[d.split[SPLIT_TRAIN][i]] = -1;
    for (int m = 0; m < TRAIN_METHOD_COUNT; m++) {
        train_config_t cm = c;
        cm.method = m;
        cm.parts = 4;
        cm.batch_parts = 2;
        train_result_t r3;
        ck_assert_int_eq(train_run(&e, &cm, NULL, 0, &r3), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), "none of the") && strstr(inca_errmsg(), "has a label"), "%s", inca_errmsg());
    }
    free(a);
    free(b);
    free(y);
    train_result_free(&r1);
    train_result_free(&r2);
    /* out-of-range override */
    int64_t bad[2] = {0, d.n};
    ck_assert_int_eq(train_run(&d, &c, bad, 2, &r1), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "outside"));
    dataset_free(&d);
}
END_TEST

typedef struct hook { int calls, last_epoch; double acc_at_best; } hook_t;
static int on_epoch(void *ctx, int run, int epoch, const float *logits, int64_t n, int32_t c) {
    hook_t *h = ctx;
    (void)run; (void)logits; (void)n; (void)c;
    h->calls++;
    h->last_epoch = epoch;
    return INCA_OK;
}
static int stop_at_3(void *ctx, int run, int epoch, const float *logits, int64_t n, int32_t c) {
    (void)ctx; (void)run; (void)logits; (void)n; (void)c;
    return epoch == 3 ? inca_fail(INCA_ERR, "stopped by hook") : INCA_OK;
}

START_TEST(test_metrics_hooks_patience) {
    dataset_t d;
    make_csbm(&d, 400, 0.8, 1.0, 10);
    char *dir = tu_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/m.jsonl", dir);
    train_config_t c = cfg_small("sage");
    c.epochs = 12;
    c.runs = 2;
    c.metrics_path = path;
    hook_t h = {0, -1, 0};
    c.on_epoch = on_epoch;
    c.on_epoch_ctx = &h;
    float *l = malloc((size_t)(d.n * d.c) * sizeof(float));
    c.out_logits = l;
    train_result_t r;
    ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_OK);
    ck_assert_int_eq(h.calls, 24);
    ck_assert_int_eq(h.last_epoch, 11);
    /* out_logits hold the last run's best epoch: its test accuracy is the reported one */
    const double acc = kern_accuracy(d.c, l, d.y, d.split[SPLIT_TEST], d.split_n[SPLIT_TEST]);
    ck_assert_msg(acc == r.run_test_acc[1], "out_logits give %g, reported %g", acc, r.run_test_acc[1]);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        ck_assert(line[0] == '{');
        ck_assert(!isnan(tu_json_num(line, "val_acc")) && !isnan(tu_json_num(line, "train_loss")));
        ck_assert_int_eq((int)tu_json_num(line, "epoch"), (lines - 1) % 12);
        ck_assert_int_eq((int)tu_json_num(line, "run"), (lines - 1) / 12);
    }
    fclose(f);
    ck_assert_int_eq(lines, 24);
    train_result_free(&r);
    /* no validation split: the last epoch counts, its test accuracy is the one reported (counted
     * here from out_logits; a mutation test: a reported 0 passed) */
    {
        dataset_t e = d;
        e.split_n[SPLIT_VALID] = 0;
        train_config_t nv = cfg_small("gcn");
        nv.epochs = 7;
        nv.out_logits = l;
        ck_assert_int_eq(train_run(&e, &nv, NULL, 0, &r), INCA_OK);
        const double at = kern_accuracy(e.c, l, e.y, e.split[SPLIT_TEST], e.split_n[SPLIT_TEST]);
        ck_assert_int_eq(r.best_epoch, 6);
        ck_assert_msg(at > 0.4 && r.test_acc == at, "no validation: test accuracy %g, the last epoch's logits give %g", r.test_acc, at);
        train_result_free(&r);
    }
    /* patience: stops once `patience` epochs pass without a new best */
    c.on_epoch = NULL;
    c.runs = 1;
    c.metrics_path = NULL;
    c.epochs = 500;
    c.lr = 0.05;
    c.patience = 5;
    ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_OK);
    ck_assert_int_lt(r.epochs, 500);
    ck_assert_int_eq(r.epochs, r.best_epoch + 1 + 5);
    train_result_free(&r);
    /* a hook failure stops training with its status */
    c.on_epoch = stop_at_3;
    ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_ERR);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "stopped by hook"));
    free(l);
    tu_rmrf(dir);
    free(dir);
    dataset_free(&d);
}
END_TEST

/* The documented defaults and thresholds (train_common.h), by hand: near chance under the
 * test split's largest class share + 2 points or under 1.5 / classes, each at most a quarter of
 * the way to 100%; beta1 auto 0.9 except
 * TRAIN_BETA1_HISTORY for gas / incagg batches that leave parts out; eval-average auto 1 - B/K
 * for the mini-batch methods when a batch leaves parts out, else 0; the given values win. */
START_TEST(test_auto_defaults_by_hand) {
    dataset_t d;
    dataset_init(&d);
    int32_t y[10] = {0, 0, 0, 0, 0, 1, 1, 2, 2, 2};
    int64_t test[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    d.n = 10;
    d.c = 3;
    d.y = y;
    d.split[SPLIT_TEST] = test;
    d.split_n[SPLIT_TEST] = 10;
    double share = -1;
    /* share 0.5; 1.5 / 3 = 0.5: the bar is 0.52 */
    ck_assert_int_eq(train_near_chance(&d, 0.51, &share), 1);
    ck_assert_double_eq_tol(share, 0.5, 1e-15);
    ck_assert_int_eq(train_near_chance(&d, 0.5, &share), 1);
    ck_assert_int_eq(train_near_chance(&d, 0.53, &share), 0);
    ck_assert_int_eq(train_near_chance(&d, NAN, &share), 0);
    /* ten classes, test labels spread evenly: share 0.1, the bar 1.5 / 10 = 0.15 */
    for (int i = 0; i < 10; i++) y[i] = i;
    d.c = 10;
    ck_assert_int_eq(train_near_chance(&d, 0.14, &share), 1);
    ck_assert_double_eq_tol(share, 0.1, 1e-15);
    ck_assert_int_eq(train_near_chance(&d, 0.16, &share), 0);
    /* two classes, half each: the bar is 0.5 + a quarter of the way to 100% = 0.625, not 1.5 / 2 =
     * 0.75, which told a model at 68.9% on a balanced binary table whose Bayes rate is 70% (logistic
     * regression 69.5%) that it was not learning (a mutation test: binary tasks never judged
     * passed, or judged by 1.5 / 2); one class: nothing to judge */
    for (int i = 0; i < 10; i++) y[i] = i % 2;
    d.c = 2;
    ck_assert_int_eq(train_near_chance(&d, 0.6, &share), 1);
    ck_assert_double_eq_tol(share, 0.5, 1e-15);
    ck_assert_int_eq(train_near_chance(&d, 0.62, &share), 1);
    ck_assert_int_eq(train_near_chance(&d, 0.63, &share), 0);
    ck_assert_int_eq(train_near_chance(&d, 0.7, &share), 0);
    ck_assert_int_eq(train_near_chance(&d, 0.8, &share), 0);
    for (int i = 0; i < 10; i++) y[i] = 0;
    d.c = 1;
    ck_assert_int_eq(train_near_chance(&d, 0.1, &share), 0);
    /* 99 of 100 test labels one class: share + 2 points is 1.01, which no accuracy reaches (a
     * model at 99.88% on a 1.6%-positive table was told it was not learning); the bar is a quarter
     * of the way from 0.99 to 100%, 0.9925: always answering the large class stays near chance */
    int32_t yi[100];
    int64_t ti[100];
    for (int i = 0; i < 100; i++) yi[i] = i == 0, ti[i] = i;
    d.n = 100;
    d.c = 2;
    d.y = yi;
    d.split[SPLIT_TEST] = ti;
    d.split_n[SPLIT_TEST] = 100;
    ck_assert_int_eq(train_near_chance(&d, 0.99, &share), 1);
    ck_assert_double_eq_tol(share, 0.99, 1e-15);
    ck_assert_int_eq(train_near_chance(&d, 0.992, &share), 1);
    ck_assert_int_eq(train_near_chance(&d, 0.993, &share), 0);
    ck_assert_int_eq(train_near_chance(&d, 1.0, &share), 0);
    /* train_config_default's values are the ones train_common.h documents per field (Kipf &
     * Welling's GCN settings; a mutation test: another default --epochs or --weight-decay passed,
     * inca train's own flag defaults hide them from the CLI tests) */
    train_config_t dc;
    train_config_default(&dc);
    ck_assert(dc.model == NN_GCN && dc.method == TRAIN_FULL && dc.layers == 2 && dc.hidden == 16 && dc.epochs == 200);
    ck_assert(dc.lr == 0.01 && dc.dropout == 0.5 && dc.weight_decay == 5e-4 && !dc.wd_first_layer_only && dc.wd_conv < 0);
    ck_assert(dc.alpha == 0.1 && dc.theta == 0.5 && dc.K == 10 && dc.runs == 1 && dc.patience == 0 && dc.eval_every == 1);
    ck_assert(dc.beta1 < 0 && dc.eval_average < 0 && dc.feature_norm == TRAIN_FEATNORM_NONE && !dc.select_loss);
    ck_assert(dc.metric == TRAIN_METRIC_ACC && dc.batch_size == 0 && !dc.dense_input && !dc.batchnorm && !dc.residual);
    ck_assert(dc.parts == 40 && dc.batch_parts == 10 && strcmp(dc.device, "cpu") == 0);
    /* beta1 and the evaluation's weight average */
    static const struct { const char *method; int parts, bp; double beta1, avg; } cases[] = {
        {"full", 40, 10, 0.9, 0.0},     {"cluster", 40, 10, 0.9, 0.75}, {"gas", 40, 10, TRAIN_BETA1_HISTORY, 0.75},
        {"incagg", 8, 2, TRAIN_BETA1_HISTORY, 0.75}, {"incagg", 10, 10, 0.9, 0.0}, {"gas", 10, 10, 0.9, 0.0},
        {"gas", 10, 9, TRAIN_BETA1_HISTORY, 0.1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        train_config_t c;
        train_config_default(&c);
        c.method = tu_method(cases[i].method);
        c.parts = cases[i].parts;
        c.batch_parts = cases[i].bp;
        ck_assert_msg(fabs(train_beta1(&c) - cases[i].beta1) < 1e-15, "%s %d/%d: beta1 %g", cases[i].method, cases[i].bp,
                      cases[i].parts, train_beta1(&c));
        ck_assert_msg(fabs(train_eval_average(&c) - cases[i].avg) < 1e-12, "%s %d/%d: eval average %g", cases[i].method,
                      cases[i].bp, cases[i].parts, train_eval_average(&c));
        c.beta1 = 0.5;
        c.eval_average = 0.25;
        ck_assert(train_beta1(&c) == 0.5 && train_eval_average(&c) == 0.25);
    }
}
END_TEST

START_TEST(test_helpers) {
    /* row and standard feature normalisation, by hand */
    const float x[6] = {1, 3, 0, 0, 2, 2};   /* 3 x 2 */
    float o[6];
    train_features_prepare(TRAIN_FEATNORM_ROW, 3, 2, x, o);
    ck_assert(o[0] == 0.25f && o[1] == 0.75f && o[2] == 0 && o[3] == 0 && o[4] == 0.5f && o[5] == 0.5f);
    train_features_prepare(TRAIN_FEATNORM_STANDARD, 3, 2, x, o);
    /* column 0: 1,0,2 mean 1 std sqrt(2/3); column 1: 3,0,2 mean 5/3, var (16/9+25/9+1/9)/3 = 14/9 */
    ck_assert(fabs(o[0] - 0) < 1e-6 && fabs(o[2] + 1 / sqrt(2.0 / 3)) < 1e-6 && fabs(o[4] - 1 / sqrt(2.0 / 3)) < 1e-6);
    ck_assert(fabs(o[1] - (3 - 5.0 / 3) / sqrt(14.0 / 9)) < 1e-6);
    int m;
    ck_assert_int_eq(word_flag("--feature-norm", "standard", train_featnorm_words, 3, &m), INCA_OK);
    ck_assert_int_eq(m, TRAIN_FEATNORM_STANDARD);
    ck_assert_int_eq(word_flag("--feature-norm", "l2", train_featnorm_words, 3, &m), INCA_EINVAL);
    ck_assert_str_eq(inca_errmsg(), "--feature-norm: expected the words, got 'l2'");
    /* weight-decay policy */
    train_config_t c;
    train_config_default(&c);
    c.weight_decay = 5e-4;
    nn_param_t first = {.flags = NN_P_FIRST | NN_P_DENSE}, later = {.flags = NN_P_DENSE},
               conv = {.flags = NN_P_CONV};
    ck_assert(train_param_wd(&c, &later) == 5e-4);
    ck_assert(train_param_wd(&c, &conv) == 5e-4);
    c.wd_first_layer_only = 1;
    ck_assert(train_param_wd(&c, &first) == 5e-4 && train_param_wd(&c, &later) == 0);
    c.wd_conv = 0.01;
    ck_assert(train_param_wd(&c, &conv) == 0.01);
    c.wd_conv = 0;   /* 0 is a value (no decay on GCNII's convolutions); only < 0 falls back */
    ck_assert(train_param_wd(&c, &conv) == 0);
    /* ... and the optimiser train_optim_build makes applies it per parameter: with zero gradients
     * one Adam step moves exactly the decayed weights (by about lr: g = wd w, step lr g / |g|) and
     * leaves the others' bits; AdamW moves GCNII's conv weights by lr 0.01 w and the others by
     * lr 5e-4 w (a mutation test put every parameter in the first group unnoticed) */
    for (int gcnii = 0; gcnii <= 1; gcnii++) {
        dataset_t dd;
        make_csbm(&dd, 60, 0.8, 1.0, 5);
        train_config_t cw = cfg_small(gcnii ? "gcnii" : "gcn");
        cw.weight_decay = 5e-4;
        cw.wd_first_layer_only = !gcnii;
        cw.wd_conv = gcnii ? 0.01 : -1;
        cw.adamw = gcnii;   /* decoupled: the move is lr wd w, so 0.01 and 5e-4 differ */
        cw.lr = 0.01;
        model_config_t mc;
        model_t *mm = NULL;
        optim_t *oo = NULL;
        ck_assert_int_eq(train_model_config(&dd, &cw, 1, &mc), INCA_OK);
        ck_assert_int_eq(model_create(&mc, dd.n, &mm), INCA_OK);
        ck_assert_int_eq(train_optim_build(&cw, mm, &oo), INCA_OK);
        const int np = model_nparams(mm);
        float *before[64];
        ck_assert_int_le(np, 64);
        for (int i = 0; i < np; i++) {
            nn_param_t *q = model_param(mm, i);
            for (int64_t k = 0; k < q->n; k++) q->w[k] = 0.5f + 0.001f * (float)(k % 7), q->g[k] = 0;
            before[i] = malloc(sizeof(float) * (size_t)q->n);
            memcpy(before[i], q->w, sizeof(float) * (size_t)q->n);
        }
        ck_assert_int_eq(optim_step(oo), INCA_OK);
        for (int i = 0; i < np; i++) {
            nn_param_t *q = model_param(mm, i);
            const double wd = train_param_wd(&cw, q);
            for (int64_t k = 0; k < q->n; k++) {
                const double want = wd == 0 ? 0 : gcnii ? cw.lr * wd * before[i][k] : cw.lr, got = before[i][k] - q->w[k];
                if (wd == 0) ck_assert_msg(q->w[k] == before[i][k], "%s param %d (no decay) moved", gcnii ? "gcnii" : "gcn", i);
                else ck_assert_msg(fabs(got - want) < 1e-3 * want + 1e-7, "%s param %d (decay %g) moved by %g, expected %g",
                                   gcnii ? "gcnii" : "gcn", i, wd, got, want);
            }
            free(before[i]);
        }
        optim_free(&oo);
        model_free(&mm);
        dataset_free(&dd);
    }
    /* best epoch: higher val acc, ties to lower val loss, else the earlier epoch */
    train_best_t b;
    train_best_init(&b);
    ck_assert(train_best_update(&b, 0, 0.5, 1.0, 0.4));
    ck_assert(!train_best_update(&b, 1, 0.4, 0.1, 0.9));
    ck_assert(train_best_update(&b, 2, 0.5, 0.9, 0.6));
    ck_assert(!train_best_update(&b, 3, 0.5, 0.9, 0.7));
    ck_assert_int_eq(b.epoch, 2);
    ck_assert(b.test_acc == 0.6);
    ck_assert_int_eq(b.since, 1);
    train_best_init(&b);
    b.by_loss = 1;   /* lowest loss wins, ties to higher accuracy */
    ck_assert(train_best_update(&b, 0, 0.5, 1.0, 0.4));
    ck_assert(train_best_update(&b, 1, 0.4, 0.8, 0.9));
    ck_assert(!train_best_update(&b, 2, 0.9, 0.85, 0.1));
    ck_assert(train_best_update(&b, 3, 0.45, 0.8, 0.7));
    ck_assert_int_eq(b.epoch, 3);
    /* the same loss and accuracy again: the earlier epoch stays (a mutation test: >= took it) */
    ck_assert(!train_best_update(&b, 4, 0.45, 0.8, 0.75));
    ck_assert_int_eq(b.epoch, 3);
    ck_assert(b.test_acc == 0.7);
    ck_assert_int_eq(b.since, 1);
    /* an evaluation's figures from its counts, by hand: slot 0 train, 1 validation, 2 test (a
     * mutation test: the validation loss read from the test slot passed every test) */
    train_meter_t h;
    memset(&h, 0, sizeof h);
    h.loss[0] = 0.5, h.loss[1] = 0.7, h.loss[2] = 0.9;
    const int64_t cnt[3][2] = {{3, 4}, {2, 5}, {7, 10}};
    memcpy(h.count, cnt, sizeof cnt);
    train_epoch_eval_t e = {.train_acc = -1};
    train_eval_apply(&h, 1, 5, &e);
    ck_assert(e.val_loss == 0.7 && e.val_acc == 0.4 && e.test_acc == 0.7 && e.train_acc == 0.75);
    ck_assert(isnan(e.val_bacc) && isnan(e.test_f1));   /* no per-class counts taken */
    e.train_acc = -1;
    train_eval_apply(&h, 0, 0, &e);   /* no validation split: no validation loss; no train ids */
    ck_assert(isnan(e.val_loss) && e.train_acc == -1 && e.test_acc == 0.7);
    /* splits without a labelled row have no accuracy (NaN, null in JSON), not 0 */
    memset(h.count, 0, sizeof h.count);
    train_eval_apply(&h, 1, 0, &e);
    ck_assert(isnan(e.val_acc) && isnan(e.test_acc) && isnan(e.val_loss) && e.train_acc == 0);
}
END_TEST

START_TEST(test_errors) {
    dataset_t d;
    make_csbm(&d, 200, 0.8, 1.0, 12);
    /* words are the command line's (tests/test_e2e_train.c): here values outside the enums */
    train_config_t c = cfg_small("gat");
    train_result_t r;
    ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--model"));
    c = cfg_small("gcn");
    c.method = tu_method("sgd");
    ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--method"));
    /* a graph-less dataset: gcn refuses with a hint, mlp trains */
    dataset_t e = d;
    memset(&e.adj, 0, sizeof e.adj);
    c = cfg_small("gcn");
    ck_assert_int_eq(train_run(&e, &c, NULL, 0, &r), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--model mlp"));
    c = cfg_small("mlp");
    c.epochs = 5;
    ck_assert_int_eq(train_run(&e, &c, NULL, 0, &r), INCA_OK);
    train_result_free(&r);
    /* empty train split */
    e = d;
    e.split_n[SPLIT_TRAIN] = 0;
    ck_assert_int_eq(train_run(&e, &c, NULL, 0, &r), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "the train split is empty") && strstr(inca_errmsg(), "--split random:TR,VA,TE"), "%s",
                  inca_errmsg());
    c.runs = 0;
    ck_assert_int_eq(train_run(&d, &c, NULL, 0, &r), INCA_EINVAL);
    dataset_free(&d);
}
END_TEST

/* Balanced accuracy and macro F1 against values worked out by hand: 6 labelled rows of classes
 * 0..2 (and one unlabelled, ignored) whose argmax predictions are 0,1,1,1,0,2; class 3 neither
 * true nor predicted, so it counts in neither mean. */
START_TEST(class_metrics_by_hand) {
    const int64_t c = 4;
    const int32_t y[7] = {0, 0, 1, 1, 2, 2, -1};
    const int pred[7] = {0, 1, 1, 1, 0, 2, 3};
    float s[7 * 4] = {0};
    for (int i = 0; i < 7; i++) s[i * c + pred[i]] = 1.0f;
    const int64_t idx[7] = {0, 1, 2, 3, 4, 5, 6};
    int64_t cnt[12] = {0};
    kern_class_counts(c, s, y, idx, 7, cnt);
    const int64_t want[12] = {2, 2, 2, 0, 2, 3, 1, 0, 1, 2, 1, 0};
    for (int k = 0; k < 12; k++) ck_assert_int_eq(cnt[k], want[k]);
    double bacc, f1;
    kern_class_metrics(c, cnt, &bacc, &f1);
    ck_assert_double_eq_tol(bacc, (0.5 + 1.0 + 0.5) / 3, 1e-15);                   /* recalls 1/2, 2/2, 1/2 */
    ck_assert_double_eq_tol(f1, (2.0 / 4 + 4.0 / 5 + 2.0 / 3) / 3, 1e-15);        /* 2tp / (true + predicted) */
    int m = -1;
    ck_assert_int_eq(word_flag("--metric", "macro_f1", train_metric_words, 3, &m), INCA_OK);
    ck_assert_int_eq(m, TRAIN_METRIC_F1);
    ck_assert_int_eq(word_flag("--metric", "f1", train_metric_words, 3, &m), INCA_EINVAL);
    ck_assert_str_eq(train_metric_words[TRAIN_METRIC_BACC], train_metric_name(TRAIN_METRIC_BACC));
    ck_assert_str_eq(train_metric_name(TRAIN_METRIC_BACC), "balanced_acc");
}
END_TEST

/* One run of method on d picking its best epoch by metric (select_loss: by the validation loss):
 * the reported validation and test accuracy, balanced accuracy and macro F1 equal those counted
 * here from that epoch's logits (out_logits), and the best epoch is the one of the highest validation
 * figure of the chosen metric in the metrics file (ties: lower validation loss, then the earlier
 * epoch); by the loss, the lowest validation loss (ties: the higher figure, then the earlier). */
static void best_epoch_by(const dataset_t *d, const char *method, int metric, int select_loss, const char *path) {
    static const char *const key[3] = {"val_acc", "val_balanced_acc", "val_macro_f1"};
    train_config_t c = cfg_small("gcn");
    c.method = tu_method(method);
    c.parts = 8;
    c.batch_parts = 2;
    c.epochs = 15;
    c.metric = metric;
    c.select_loss = select_loss;
    c.metrics_path = path;
    float *l = malloc((size_t)(d->n * d->c) * sizeof(float));
    c.out_logits = l;
    train_result_t r;
    ck_assert_int_eq(train_run(d, &c, NULL, 0, &r), INCA_OK);
    for (int sp = SPLIT_VALID; sp <= SPLIT_TEST; sp++) {
        int64_t *cnt = calloc(3 * (size_t)d->c, sizeof *cnt);
        kern_class_counts(d->c, l, d->y, d->split[sp], d->split_n[sp], cnt);
        double bacc, f1;
        kern_class_metrics(d->c, cnt, &bacc, &f1);
        const double rb = sp == SPLIT_VALID ? r.val_bacc : r.test_bacc, rf = sp == SPLIT_VALID ? r.val_f1 : r.test_f1;
        const double acc = kern_accuracy(d->c, l, d->y, d->split[sp], d->split_n[sp]);
        const double ra = sp == SPLIT_VALID ? r.val_acc : r.test_acc;
        ck_assert_msg(fabs(bacc - rb) < 1e-12 && fabs(f1 - rf) < 1e-12 && fabs(acc - ra) < 1e-12,
                      "%s metric %d split %d: counted acc %.6f bacc %.6f f1 %.6f, reported %.6f %.6f %.6f", method, metric, sp,
                      acc, bacc, f1, ra, rb, rf);
        free(cnt);
    }
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[2048];
    int e = 0, best = -1;
    double bs = 0, bl = 0;
    while (fgets(line, sizeof line, f)) {
        const double sv = tu_json_num(line, key[metric]), vl = tu_json_num(line, "val_loss");
        const int better = select_loss ? vl < bl || (vl == bl && sv > bs) : sv > bs || (sv == bs && vl < bl);
        if (best < 0 || better) { best = e; bs = sv; bl = vl; }
        e++;
    }
    fclose(f);
    ck_assert_int_eq(e, 15);
    ck_assert_msg(r.best_epoch == best, "%s, %s%s: best epoch %d, the metrics file's %d", method, key[metric],
                  select_loss ? " (select by loss)" : "", r.best_epoch, best);
    train_result_free(&r);
    free(l);
}

/* best_epoch_by for each --metric and by the loss, full-batch and mini-batch; without a
 * validation split the last epoch is the best (mutation tests: the mini-batch run's best epoch by
 * accuracy whatever the metric or select_loss, or its validation count taken from the test split,
 * passed before). */
START_TEST(class_metrics_of_the_best_epoch) {
    dataset_t d;
    make_csbm(&d, 500, 0.6, 0.4, 7);
    for (int64_t i = 0; i < d.n; i++) d.y[i] = d.y[i] == 2 ? 1 : d.y[i];   /* classes of 1/3 and 2/3: acc != bacc */
    d.c = 2;
    char *dir = tu_mkdtemp(), path[512];
    snprintf(path, sizeof path, "%s/m.jsonl", dir);
    static const char *const methods[2] = {"full", "cluster"};
    for (int mi = 0; mi < 2; mi++) {
        for (int metric = 0; metric < 3; metric++) best_epoch_by(&d, methods[mi], metric, 0, path);
        best_epoch_by(&d, methods[mi], TRAIN_METRIC_ACC, 1, path);
        dataset_t e = d;
        e.split_n[SPLIT_VALID] = 0;
        train_config_t c = cfg_small("gcn");
        c.method = tu_method(methods[mi]);
        c.epochs = 6;
        train_result_t r;
        ck_assert_int_eq(train_run(&e, &c, NULL, 0, &r), INCA_OK);
        ck_assert_msg(r.best_epoch == 5, "%s without a validation split: best epoch %d, not the last", methods[mi], r.best_epoch);
        train_result_free(&r);
    }
    tu_rmrf(dir);
    free(dir);
    dataset_free(&d);
}
END_TEST

int main(void) {
    Suite *s = suite_create("train");
    TCase *t = tcase_create("train");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, test_models_learn);
    tcase_add_test(t, test_deterministic);
    tcase_add_test(t, test_minibatch_mlp);
    tcase_add_test(t, test_checkpoint_resume);
    tcase_add_test(t, test_auto_defaults_by_hand);
    tcase_add_test(t, test_checkpoint_arch_refusals);
    tcase_add_test(t, test_runs_statistics);
    tcase_add_test(t, test_eval_every);
    tcase_add_test(t, test_minibatch_mlp_steps);
    tcase_add_test(t, test_override_and_unlabelled);
    tcase_add_test(t, test_metrics_hooks_patience);
    tcase_add_test(t, test_helpers);
    tcase_add_test(t, test_errors);
    tcase_add_test(t, class_metrics_by_hand);
    tcase_add_test(t, class_metrics_of_the_best_epoch);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
