/* End-to-end tests of `inca train` on the bundled Cora ($INCA_SRC/data/cora, ingested here with
 * `inca ingest --format ogb`): the Kipf & Welling GCN reaches the published accuracy (3 seeds,
 * mean >= 0.79; the acceptance run uses 10), the JSON keys of ARCHITECTURE.md are present,
 * --threads gives bit-identical results, --metrics / --train-indices / --split random work,
 * and bad flags exit 2 with a message naming the flag. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dir;
static char store[1024];

static void ingest(void) {
    char cora[1024], args[4096];
    snprintf(cora, sizeof cora, "%s/data/cora", tu_src());   /* present: main() checked */
    dir = tu_mkdtemp();
    ck_assert_ptr_nonnull(dir);
    snprintf(store, sizeof store, "%s/cora.store", dir);
    snprintf(args, sizeof args, "ingest --format ogb '%s' --out '%s'", cora, store);
    char *err = NULL;
    int rc = tu_inca(args, NULL, &err);
    ck_assert_msg(rc == 0, "ingest failed (%d): %s", rc, err ? err : "");
    free(err);
}

static int train(const char *flags, char **out, char **err) {
    char args[4096];
    snprintf(args, sizeof args, "train '%s' %s", store, flags);
    return tu_inca(args, out, err);
}

START_TEST(test_gcn_cora_accuracy) {
    ingest();
    char *out = NULL, *err = NULL;
    int rc = train("--model gcn --method full --layers 2 --hidden 16 --dropout 0.5 --lr 0.01 --weight-decay 5e-4 "
                   "--wd-first-layer --epochs 200 --feature-norm row --runs 3 --seed 0 --threads 1 --json",
                   &out, &err);
    ck_assert_msg(rc == 0, "train failed (%d): %s", rc, err ? err : "");
    const char *j = tu_last_line(out);
    const char *keys[] = {"test_acc", "test_acc_std", "val_acc", "val_acc_std", "best_epoch", "epochs",
                          "epoch_time_s", "step_time_s", "refresh_time_s", "peak_rss_mb"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(!isnan(tu_json_num(j, keys[i])), "key %s missing in %s", keys[i], j);
    ck_assert_ptr_nonnull(strstr(j, "\"method\":\"full\""));
    ck_assert_ptr_nonnull(strstr(j, "\"model\":\"gcn\""));
    const double acc = tu_json_num(j, "test_acc");
    fprintf(stderr, "cora gcn 3 seeds: %s\n", j);
    ck_assert_msg(acc >= 0.79, "mean test accuracy %.4f < 0.79 (Kipf & Welling: 0.815)", acc);
    ck_assert(tu_json_num(j, "test_acc_std") < 0.03);
    ck_assert_int_eq((int)tu_json_num(j, "epochs"), 200);
    free(out);
    free(err);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_cli_features) {
    ingest();
    char *o1 = NULL, *o2 = NULL, *err = NULL, flags[2048];
    /* same seed and threads: identical JSON numbers (accuracies and best epoch) */
    const char *base = "--model sage --epochs 15 --feature-norm row --seed 4 --threads 2 --json";
    ck_assert_int_eq(train(base, &o1, NULL), 0);
    ck_assert_int_eq(train(base, &o2, NULL), 0);
    ck_assert(tu_json_num(tu_last_line(o1), "test_acc") == tu_json_num(tu_last_line(o2), "test_acc"));
    ck_assert(tu_json_num(tu_last_line(o1), "val_acc") == tu_json_num(tu_last_line(o2), "val_acc"));
    ck_assert(tu_json_num(tu_last_line(o1), "best_epoch") == tu_json_num(tu_last_line(o2), "best_epoch"));
    free(o1);
    free(o2);
    /* metrics: one line per epoch */
    snprintf(flags, sizeof flags, "--model appnp --K 3 --hidden 8 --epochs 7 --metrics '%s/m.jsonl' --json", dir);
    ck_assert_int_eq(train(flags, &o1, &err), 0);
    free(o1);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "wc -l < '%s/m.jsonl'", dir);
    ck_assert_int_eq(tu_sh(cmd, &o1, NULL), 0);
    ck_assert_int_eq(atoi(o1), 7);
    free(o1);
    free(err);
    /* --train-indices: 20 ids in a text file */
    snprintf(cmd, sizeof cmd, "seq 0 19 > '%s/ids.txt'", dir);
    ck_assert_int_eq(tu_sh(cmd, NULL, NULL), 0);
    snprintf(flags, sizeof flags, "--model mlp --layers 1 --epochs 5 --train-indices '%s/ids.txt' --json", dir);
    ck_assert_int_eq(train(flags, &o1, &err), 0);
    ck_assert_int_eq((int)tu_json_num(tu_last_line(o1), "train_nodes"), 20);
    free(o1);
    free(err);
    /* --split random */
    ck_assert_int_eq(train("--model gcn --epochs 50 --lr 0.05 --split random:0.6,0.2,0.2 --feature-norm row --json", &o1, &err), 0);
    ck_assert_int_eq((int)tu_json_num(tu_last_line(o1), "train_nodes"), 1626);   /* Σ_c round(0.6 n_c), README class counts */
    ck_assert(tu_json_num(tu_last_line(o1), "test_acc") > 0.75);
    free(o1);
    free(err);
    /* usage errors exit 2 naming the flag */
    const struct { const char *flags, *needle; } bad[] = {
        {"--model gat", "--model"},
        {"--method sgd", "--method"},
        {"--dropout 1.5", "--dropout"},
        {"--feature-norm l2", "--feature-norm"},
        {"--epochs x", "--epochs"},
        {"--frobnicate 3", "--frobnicate"},
        {"--split public2", "--split"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = NULL;
        ck_assert_int_eq(train(bad[i].flags, NULL, &err), 2);
        ck_assert_msg(err && strstr(err, bad[i].needle), "'%s': stderr '%s' does not name %s", bad[i].flags,
                      err ? err : "", bad[i].needle);
        free(err);
    }
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* The README's main job in miniature: `inca partition` stores METIS parts, IncAgg training
 * reuses them (same name, no recomputation) and reaches the Kipf & Welling accuracy; a
 * partitioning that training needs but that is not stored yet is stored by training. */
START_TEST(test_incagg_stored_partition) {
    ingest();
    char args[4096], *out = NULL, *err = NULL;
    snprintf(args, sizeof args, "partition '%s' --parts 40 --method metis --seed 0", store);
    ck_assert_int_eq(tu_inca(args, NULL, &out), 0);   /* the summary line goes to stderr */
    ck_assert_ptr_nonnull(strstr(out, "metis-40-s0"));
    free(out);
    int rc = train("--model gcn --method incagg --parts 40 --batch-parts 10 --layers 2 --hidden 16 --dropout 0.5 "
                   "--lr 0.01 --weight-decay 5e-4 --wd-first-layer --feature-norm row --epochs 200 --runs 3 "
                   "--seed 0 --threads 1 --json", &out, &err);
    ck_assert_msg(rc == 0, "incagg failed (%d): %s", rc, err ? err : "");
    ck_assert_msg(strstr(err, "metis-40-s0") != NULL, "stderr does not name the stored partitioning: %s", err);
    const char *j = tu_last_line(out);
    fprintf(stderr, "cora incagg 3 seeds: %s\n", j);
    ck_assert_ptr_nonnull(strstr(j, "\"method\":\"incagg\""));
    ck_assert_msg(tu_json_num(j, "test_acc") >= 0.79, "incagg mean test accuracy %.4f < 0.79", tu_json_num(j, "test_acc"));
    ck_assert(tu_json_num(j, "refresh_time_s") > 0 && tu_json_num(j, "step_time_s") > 0);   /* IncAgg refreshes */
    free(out);
    free(err);
    /* 20 parts are not stored yet: training computes them and leaves them in the store */
    ck_assert_int_eq(train("--model gcn --method gas --parts 20 --batch-parts 5 --epochs 2 --threads 1", NULL, NULL), 0);
    snprintf(args, sizeof args, "info '%s' --json", store);
    ck_assert_int_eq(tu_inca(args, &out, NULL), 0);
    ck_assert_msg(strstr(out, "\"metis-20-s0\"") && strstr(out, "\"metis-40-s0\""), "partitions not listed: %s", out);
    free(out);
    snprintf(args, sizeof args, "partition '%s' --parts 20", store);
    ck_assert_int_eq(tu_inca(args, NULL, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "reused"));
    free(out);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* --checkpoint / --resume through the CLI: IncAgg for 30 epochs straight and 15 + 15 resumed
 * print the same result line (accuracies, best epoch, loss); --resume without --checkpoint and
 * a checkpoint of another --hidden exit 2 naming the flag. */
START_TEST(test_checkpoint_cli) {
    ingest();
    char flags[2048], *o1 = NULL, *o2 = NULL, *err = NULL;
    const char *base = "--model gcn --method incagg --parts 40 --batch-parts 10 --feature-norm row --seed 3 --threads 2 --json";
    snprintf(flags, sizeof flags, "%s --epochs 30 --checkpoint '%s/ck1'", base, dir);
    ck_assert_int_eq(train(flags, &o1, NULL), 0);
    snprintf(flags, sizeof flags, "%s --epochs 15 --checkpoint '%s/ck2'", base, dir);
    ck_assert_int_eq(train(flags, NULL, NULL), 0);
    snprintf(flags, sizeof flags, "%s --epochs 30 --checkpoint '%s/ck2' --resume", base, dir);
    ck_assert_int_eq(train(flags, &o2, NULL), 0);
    const char *keys[] = {"test_acc", "val_acc", "best_epoch", "epochs"};
    char j1[4096];
    snprintf(j1, sizeof j1, "%s", tu_last_line(o1));
    const char *j2 = tu_last_line(o2);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(tu_json_num(j1, keys[i]) == tu_json_num(j2, keys[i]), "%s differs: %s vs %s", keys[i], j1, j2);
    ck_assert_int_eq((int)tu_json_num(j2, "epochs"), 30);
    snprintf(flags, sizeof flags, "%s --epochs 30 --resume", base);
    ck_assert_int_eq(train(flags, NULL, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "--resume"));
    free(err);
    snprintf(flags, sizeof flags, "%s --hidden 32 --epochs 30 --checkpoint '%s/ck2' --resume", base, dir);
    ck_assert_int_eq(train(flags, NULL, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "--hidden"));
    free(err);
    free(o1);
    free(o2);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* Help: `inca` alone exits 2 with the command list; `inca CMD --help` exits 0 and lists the
 * flags, defaults included. */
START_TEST(test_help) {
    char *out = NULL, *err = NULL;
    ck_assert_int_eq(tu_inca("", NULL, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "inca train"));
    free(err);
    ck_assert_int_eq(tu_inca("train --help", &out, NULL), 0);
    const char *want[] = {"--checkpoint", "--resume", "--batch-size", "--history-dtype", "--refresh", "[200]"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]) != NULL, "train --help lacks %s", want[i]);
    free(out);
    ck_assert_int_eq(tu_inca("prune --help", &out, NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "--proxy-batch-size"));
    ck_assert_ptr_nonnull(strstr(out, "--alpha A [0.9]"));
    free(out);
    /* a benchmark's flags are inca bench's: --help after its name prints them, and an unknown
     * flag points there */
    ck_assert_int_eq(tu_inca("bench epoch --help", &out, NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "--warmup-epochs"));
    free(out);
    ck_assert_int_eq(tu_inca("bench epoch --no-such-flag", NULL, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "'--no-such-flag' (see 'inca bench --help')"));
    free(err);
}
END_TEST

int main(void) {
    char cora[1024];
    snprintf(cora, sizeof cora, "%s/data/cora", tu_src());
    tu_require_or_skip(cora);   /* here, not in a forked test, where exit 77 would be an error */
    Suite *s = suite_create("e2e_train");
    TCase *t = tcase_create("cora");
    tcase_set_timeout(t, 900);
    tcase_add_test(t, test_gcn_cora_accuracy);
    tcase_add_test(t, test_cli_features);
    tcase_add_test(t, test_incagg_stored_partition);
    tcase_add_test(t, test_checkpoint_cli);
    tcase_add_test(t, test_help);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
