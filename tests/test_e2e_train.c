/* End-to-end tests of `inca train` on the bundled Cora ($INCA_SRC/data/cora, ingested here with
 * `inca ingest --format ogb`): the Kipf & Welling GCN reaches the published accuracy (3 seeds,
 * mean >= 0.79; the acceptance run uses 10), the JSON keys of ARCHITECTURE.md are present,
 * --threads gives bit-identical results, --metrics / --train-indices / --split random work,
 * and bad flags exit 2 with a message naming the flag. */
#include "testutil.h"
#include "core/status.h"
#include "graph/csr.h"
#include "loaders/dataset.h"
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
    char args[8192];
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
    /* the majority baseline: class 3 is 319 of the 1000 test nodes (counted in
     * data/cora/split/public/test.csv.gz against raw/node-label.csv.gz); a trained GCN is far from
     * it and says nothing on stderr */
    ck_assert_double_eq_tol(tu_json_num(j, "test_majority_acc"), 0.319, 1e-9);
    ck_assert_ptr_nonnull(strstr(j, "\"near_chance\":false"));
    ck_assert_msg(!strstr(err, "near chance"), "%s", err);
    free(out);
    free(err);
    /* a model that does not learn (lr 1e-5, 3 epochs: under the majority class) says so */
    rc = train("--model gcn --method full --epochs 3 --lr 1e-5 --json", &out, &err);
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(strstr(tu_last_line(out), "\"near_chance\":true"));
    ck_assert_msg(strstr(err, "stays near chance") && strstr(err, "0.3190"), "%s", err);
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
        {"--method incagg --refresh-relax 1.5", "--refresh-relax"},
        {"--lr inf", "--lr: expected a finite number"},   /* inf / nan are no settings (nor a reproducible config) */
        {"--weight-decay nan", "--weight-decay: expected a finite number"},
        {"--method gas --memory-budget 0.5", "--memory-budget"},   /* under one byte: not "no budget" */
        {"--epochs 100 --save-params /nonexistent-dir/p.npy", "does not exist"},   /* before training, not after */
        /* a flag the method or model would ignore is refused, not silently dropped */
        {"--method gas --refresh 4", "--refresh: no effect with --method gas"},
        {"--method cluster --history-dtype bf16", "--history-dtype: no effect with --method cluster"},
        {"--method incagg --cluster-norm global", "--cluster-norm: no effect with --method incagg"},
        {"--method gas --batch-size 64", "--batch-size: no effect with --method gas"},
        {"--method full --eval-average 0.9", "--eval-average: no effect with --method full"},
        {"--model gcn --theta 0.3", "--theta: no effect with --model gcn"},
        {"--model appnp --theta 0.3", "--theta: no effect with --model appnp"},   /* gcnii's alone; --alpha is appnp's too */
        {"--lr 0", "--lr: expected > 0"},   /* a step of zero trains nothing */
        {"--model gcnii --K 4", "--K: no effect with --model gcnii"},
        {"--model appnp --layers 3", "--layers: no effect with --model appnp"},
        /* a push refresh re-aggregates the pushed rows: no relaxation, weights or eval pass (session
         * 37: these were accepted and recorded in the config) */
        {"--method incagg --refresh-source push --refresh-relax 0.5", "--refresh-relax: no effect with --refresh-source push"},
        {"--method incagg --refresh-source push --refresh-weights last", "--refresh-weights: no effect with --refresh-source push"},
        {"--method incagg --refresh-source push --refresh-eval separate", "--refresh-eval: no effect with --refresh-source push"},
        {"--method full --memory-budget 1G", "--memory-budget: no effect with --method full"},
        {"--method incagg --loader copy --pass-dtype bf16", "--pass-dtype: no effect with --loader copy"},
        {"--method incagg --pass-dtype bf16", "--pass-dtype: no effect with --loader auto resolved to copy"},   /* Cora */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = NULL;
        const int rc = train(bad[i].flags, NULL, &err);
        ck_assert_msg(rc == 2, "'%s': exit %d, expected 2", bad[i].flags, rc);
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
    /* the layout's adjacency once (the mark that it is symmetric was listed as another) */
    ck_assert_msg(strstr(out, "\"metis-40-s0/adj-gcn\"") && !strstr(out, "adj-gcn/symmetric"), "layouts: %s", out);
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
    char flags[2048], j1[4096], *o1 = NULL, *o2 = NULL, *err = NULL;
    const char *base = "--model gcn --method incagg --parts 40 --batch-parts 10 --feature-norm row --seed 3 --threads 2 --json";
    snprintf(flags, sizeof flags, "%s --epochs 30 --checkpoint '%s/ck1' --metrics '%s/m1.jsonl'", base, dir, dir);
    ck_assert_int_eq(train(flags, &o1, NULL), 0);
    snprintf(flags, sizeof flags, "%s --epochs 15 --checkpoint '%s/ck2' --metrics '%s/m2.jsonl'", base, dir, dir);
    ck_assert_int_eq(train(flags, NULL, NULL), 0);
    /* a kill after epoch 15's line and before its checkpoint leaves lines past the checkpoint,
     * the last one torn: the resumed run drops them and writes those epochs again */
    snprintf(j1, sizeof j1, "%s/m2.jsonl", dir);
    FILE *mf = fopen(j1, "a");
    ck_assert_ptr_nonnull(mf);
    fputs("{\"run\":0,\"epoch\":15,\"val_acc\":-1}\n{\"run\":0,\"ep", mf);
    ck_assert_int_eq(fclose(mf), 0);
    snprintf(flags, sizeof flags, "%s --epochs 30 --checkpoint '%s/ck2' --resume --metrics '%s/m2.jsonl'", base, dir, dir);
    ck_assert_int_eq(train(flags, &o2, &err), 0);
    ck_assert_msg(strstr(err, "resuming after epoch 14 of 30"), "the resume is not announced: %s", err);
    free(err);
    err = NULL;
    /* --resume with the same --metrics file: every epoch once, in order, the numbers of the
     * uninterrupted run (issue 31: it used to be cut to the resumed epochs) */
    char *m1 = NULL, *m2 = NULL;
    snprintf(j1, sizeof j1, "cat '%s/m1.jsonl'", dir);
    ck_assert_int_eq(tu_sh(j1, &m1, NULL), 0);
    snprintf(j1, sizeof j1, "cat '%s/m2.jsonl'", dir);
    ck_assert_int_eq(tu_sh(j1, &m2, NULL), 0);
    cJSON *l1[64], *l2[64];
    const int n1 = tu_json_lines(m1, l1, 64), n2 = tu_json_lines(m2, l2, 64);
    ck_assert_int_eq(n1, 30);
    ck_assert_int_eq(n2, 30);
    for (int i = 0; i < 30; i++) {
        ck_assert_int_eq((int)tu_json_dbl(l2[i], "epoch"), i);
        ck_assert_msg(tu_json_dbl(l1[i], "val_acc") == tu_json_dbl(l2[i], "val_acc"), "epoch %d: val_acc differs", i);
    }
    tu_json_free_lines(l1, n1);
    tu_json_free_lines(l2, n2);
    free(m1);
    free(m2);
    /* the resumed process's counts are the whole run's (they were its own 15 epochs') */
    const char *keys[] = {"test_acc", "val_acc", "best_epoch", "epochs", "evaluations", "refreshes", "refreshes_fused_with_eval"};
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

/* What a full-batch checkpoint holds and refuses (a review's findings, each failed before):
 * --eval-every's evaluations are counted (the JSON said one an epoch, the evaluation time was
 * divided by epochs) and carried over a resume; a resume under another model structure or
 * another split is refused (another split trained on nodes it then tested on); a refused resume
 * leaves the folder's config.json (predict kept working); a metrics line without "run" does not
 * send the cut-back past its buffer; one process refuses an MPI job's checkpoints, and a new
 * one-process run claims the folder for predict (it used to read the old job's rank 0). */
START_TEST(test_checkpoint_full_refusals) {
    ingest();
    char flags[4096], ck[1100], mp[1200], *o = NULL, *err = NULL;
    snprintf(ck, sizeof ck, "%s/ckf", dir);
    const char *base = "--model gcn --method full --feature-norm row --threads 1 --json";
    snprintf(flags, sizeof flags, "%s --epochs 4 --eval-every 3 --checkpoint '%s' --metrics '%s/mf.jsonl'", base, ck, dir);
    ck_assert_int_eq(train(flags, &o, NULL), 0);
    ck_assert_int_eq((int)tu_json_num(tu_last_line(o), "evaluations"), 2);   /* epochs 2 and 3 (the last) */
    free(o);
    snprintf(mp, sizeof mp, "%s/mf.jsonl", dir);
    FILE *f = fopen(mp, "a");
    fputs("{\"x\":1}\n", f);
    fclose(f);
    snprintf(flags, sizeof flags, "%s --epochs 9 --eval-every 3 --checkpoint '%s' --resume --metrics '%s'", base, ck, mp);
    ck_assert_int_eq(train(flags, &o, NULL), 0);
    ck_assert_int_eq((int)tu_json_num(tu_last_line(o), "evaluations"), 4);   /* 2 before, then epochs 5 and 8 */
    free(o);
    const struct { const char *flags, *needle; } bad[] = {
        {"--residual", "another model structure"},
        {"--split random:0.05,0.5,0.45", "other splits"},
        {"--feature-norm standard", "other splits, --feature-norm"},
        {"--model sage", "checkpoint of model 'gcn'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(flags, sizeof flags, "%s --epochs 12 --checkpoint '%s' --resume %s", base, ck, bad[i].flags);
        err = NULL;
        ck_assert_int_eq(train(flags, NULL, &err), 2);
        ck_assert_msg(err && strstr(err, bad[i].needle), "%s: %s", bad[i].flags, err ? err : "");
        free(err);
    }
    char args[4096];
    snprintf(args, sizeof args, "predict --checkpoint '%s' --out '%s/s.npy' --json", ck, dir);   /* config.json is still gcn's */
    ck_assert_int_eq(tu_inca(args, &o, &err), 0);
    free(o);
    free(err);
    /* an MPI job's manifest (2 ranks) in the folder */
    snprintf(mp, sizeof mp, "%s/manifest.json", ck);
    f = fopen(mp, "w");
    fputs("{\"ranks\":2,\"method\":\"full\",\"model\":\"gcn\"}\n", f);
    fclose(f);
    snprintf(flags, sizeof flags, "%s --epochs 12 --checkpoint '%s' --resume", base, ck);
    err = NULL;
    ck_assert_int_eq(train(flags, NULL, &err), 2);
    ck_assert_msg(err && strstr(err, "checkpoints of 2 ranks"), "%s", err ? err : "");
    free(err);
    snprintf(flags, sizeof flags, "%s --epochs 3 --checkpoint '%s'", base, ck);
    ck_assert_int_eq(train(flags, NULL, NULL), 0);
    ck_assert_int_eq(tu_inca(args, &o, &err), 0);   /* reads the new run's file, not rank-0-of-2's */
    ck_assert_int_eq((int)tu_json_num(tu_last_line(o), "checkpoint_epoch"), 2);
    free(o);
    free(err);
    /* a store named relative to where training ran: predict runs from anywhere (config.json holds
     * the absolute path; it held the path as typed) */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' train cora.store --epochs 2 --checkpoint ckr --quiet && cd / && '%s' predict "
             "--checkpoint '%s/ckr' --out '%s/r.npy' --quiet", dir, tu_bin(), tu_bin(), dir, dir);
    err = NULL;
    ck_assert_msg(tu_sh(cmd, NULL, &err) == 0, "%s", err ? err : "");
    free(err);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* Idle OpenMP threads wait passively unless the user chose (issue 31: spinning threads made a
 * run 6x slower beside two busy processes): the JSON names the policy the run had. */
START_TEST(test_wait_policy) {
    ingest();
    char *out = NULL, args[2048];
    ck_assert_int_eq(train("--epochs 1 --json --quiet", &out, NULL), 0);
    cJSON *j = tu_json_last(out);
    const char *mine = getenv("OMP_WAIT_POLICY"), *gs = getenv("GOMP_SPINCOUNT");   /* a policy of the caller's wins */
    ck_assert_str_eq(tu_json_get(j, "omp_wait_policy", cJSON_String)->valuestring, mine ? mine : gs ? "default" : "passive");
    cJSON_Delete(j);
    free(out);
    snprintf(args, sizeof args, "env OMP_WAIT_POLICY=active '%s' train '%s' --epochs 1 --json --quiet", tu_bin(), store);
    ck_assert_int_eq(tu_sh(args, &out, NULL), 0);
    j = tu_json_last(out);
    ck_assert_str_eq(tu_json_get(j, "omp_wait_policy", cJSON_String)->valuestring, "active");
    cJSON_Delete(j);
    free(out);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* Part counts a run cannot honour are refused before anything is trained or stored (issue 31:
 * --parts 2708 on Cora stored a partition, then died on an empty batch; 100000 was clamped);
 * K = n, whose METIS partition has empty parts, trains: empty parts are never drawn. */
START_TEST(test_parts_refused) {
    ingest();
    char *err = NULL, *out = NULL;
    ck_assert_int_eq(train("--method cluster --parts 2709 --epochs 1", NULL, &err), 2);
    ck_assert_msg(strstr(err, "--parts 2709") && strstr(err, "2708 nodes"), "%s", err);
    free(err);
    ck_assert_int_eq(train("--method gas --parts 40 --batch-parts 41 --epochs 1", NULL, &err), 2);
    ck_assert_msg(strstr(err, "--batch-parts 41") && strstr(err, "40 parts"), "%s", err);
    free(err);
    char args[2048];
    snprintf(args, sizeof args, "info '%s' --json", store);
    ck_assert_int_eq(tu_inca(args, &out, NULL), 0);
    ck_assert_msg(!strstr(out, "metis-2709") && !strstr(out, "metis-40-s0"), "a refused run stored a partition: %s", out);
    free(out);
    /* the default 10 a batch follows 5, and the config says 5: predict and --config rerun it (they
     * refused "--batch-parts 10: more than the 5 parts") */
    snprintf(args, sizeof args, "--method cluster --parts 5 --epochs 1 --json --checkpoint '%s/ck5'", dir);
    ck_assert_int_eq(train(args, &out, NULL), 0);
    cJSON *res = cJSON_Parse(tu_last_line(out));
    ck_assert_ptr_nonnull(res);
    ck_assert_int_eq((int)tu_json_get(tu_json_get(res, "config", cJSON_Object), "batch-parts", cJSON_Number)->valuedouble, 5);
    cJSON_Delete(res);
    char cfg[1200];
    snprintf(cfg, sizeof cfg, "%s/r5.json", dir);
    FILE *cf = fopen(cfg, "w");
    ck_assert_ptr_nonnull(cf);
    fputs(tu_last_line(out), cf);
    ck_assert_int_eq(fclose(cf), 0);
    free(out);
    snprintf(args, sizeof args, "--config '%s'", cfg);
    ck_assert_int_eq(train(args, NULL, &err), 0);
    free(err);
    snprintf(args, sizeof args, "predict --checkpoint '%s/ck5' --out '%s/p5.npy'", dir, dir);
    ck_assert_int_eq(tu_inca(args, NULL, &err), 0);
    free(err);
    ck_assert_int_eq(train("--method cluster --parts 2708 --batch-parts 2 --epochs 1 --json", &out, &err), 0);
    ck_assert_int_eq((int)tu_json_num(tu_last_line(out), "epochs"), 1);
    free(out);
    free(err);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* train_acc means one thing for every method: the eval-mode accuracy on the training nodes after
 * the epoch's step, as val_acc and test_acc are. A batch of every part makes cluster, GAS and
 * IncAgg full-batch's training, so every metrics column agrees; full-batch's train_acc was its
 * training pass's, before the step (one epoch behind the mini-batch methods'). */
START_TEST(test_train_acc_same_meaning) {
    ingest();
    const char *methods[] = {"full", "gas", "cluster"};
    cJSON *l[3][8];
    int n[3];
    for (int k = 0; k < 3; k++) {
        char flags[2048], cmd[1200], *m = NULL;
        snprintf(flags, sizeof flags, "--model gcn --method %s --parts 8 %s --dropout 0 --epochs 5 --threads 1 --metrics '%s/ta%d.jsonl'",
                 methods[k], k ? "--batch-parts 8" : "", dir, k);
        ck_assert_int_eq(train(flags, NULL, NULL), 0);
        snprintf(cmd, sizeof cmd, "cat '%s/ta%d.jsonl'", dir, k);
        ck_assert_int_eq(tu_sh(cmd, &m, NULL), 0);
        n[k] = tu_json_lines(m, l[k], 8);
        free(m);
        ck_assert_int_eq(n[k], 5);
    }
    for (int k = 1; k < 3; k++)
        for (int e = 0; e < 5; e++)
            for (int q = 0; q < 3; q++) {
                const char *key = (const char *[]){"train_acc", "val_acc", "test_acc"}[q];
                ck_assert_msg(fabs(tu_json_dbl(l[0][e], key) - tu_json_dbl(l[k][e], key)) < 1e-9, "epoch %d: %s full %.6f, %s %.6f",
                              e, key, tu_json_dbl(l[0][e], key), methods[k], tu_json_dbl(l[k][e], key));
            }
    for (int k = 0; k < 3; k++) tu_json_free_lines(l[k], n[k]);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* the test accuracy of the metrics file's last line (the last epoch: what a checkpoint holds) */
static double last_epoch_test_acc(const char *metrics) {
    char cmd[1200], *text = NULL;
    snprintf(cmd, sizeof cmd, "tail -n 1 '%s'", metrics);
    ck_assert_int_eq(tu_sh(cmd, &text, NULL), 0);
    const double a = tu_json_num(text, "test_acc");
    free(text);
    return a;
}

/* predict: the scores of the checkpoint's model score on the test split what the metrics said
 * of its epoch (full-batch and Cluster-GCN: the same whole-graph evaluation, so equal; IncAgg's
 * fused refresh pass evaluates without transform-first: within a node or two); the embeddings
 * times the output layer (W, b from --save-params, Â computed here) give the scores; --indices
 * picks rows; an MPI-style folder, a missing checkpoint and --embeddings of a mixing model. */
START_TEST(test_predict) {
    ingest();
    static const char *const methods[] = {"full", "cluster --parts 40 --batch-parts 10", "incagg --parts 40 --batch-parts 10"};
    char flags[4096], args[8192], m[1100], ck[1100], out[1100], pp[1100];
    char *o = NULL, *err = NULL;
    for (int k = 0; k < 3; k++) {
        snprintf(m, sizeof m, "%s/m%d.jsonl", dir, k);
        snprintf(ck, sizeof ck, "%s/ck%d", dir, k);
        snprintf(out, sizeof out, "%s/s%d.npy", dir, k);
        snprintf(pp, sizeof pp, "%s/p%d.npy", dir, k);
        snprintf(flags, sizeof flags, "--model gcn --method %s --epochs 25 --feature-norm row --threads 1 --checkpoint '%s' "
                 "--metrics '%s' --save-params '%s' --quiet --json", methods[k], ck, m, pp);
        ck_assert_int_eq(train(flags, &o, NULL), 0);
        const int best = (int)tu_json_num(tu_last_line(o), "best_epoch");
        free(o);
        /* the store, the model and the feature norm come from the folder's config.json */
        snprintf(args, sizeof args, "predict --checkpoint '%s' --out '%s' --json", ck, out);
        ck_assert_msg(tu_inca(args, &o, &err) == 0, "%s", err);
        const char *j = tu_last_line(o);
        ck_assert_int_eq((int)tu_json_num(j, "checkpoint_epoch"), 24);
        /* the checkpoint is the last epoch's model; predict names the best one too (issue 31) */
        ck_assert_int_eq((int)tu_json_num(j, "best_epoch"), best);
        ck_assert_msg(strstr(j, best == 24 ? "\"best_epoch_model\":true" : "\"best_epoch_model\":false"), "%s", j);
        const double want = last_epoch_test_acc(m), got = tu_json_num(j, "test_acc");
        if (k < 2) ck_assert_msg(got == want, "%s: predicted scores give %g, the metrics said %g", methods[k], got, want);
        else ck_assert_msg(fabs(got - want) <= 0.002, "%s: predicted scores give %g, the metrics said %g", methods[k], got, want);
        free(o);
        free(err);
    }
    /* embeddings: the hidden layer, through the output layer by hand, gives the scores */
    snprintf(ck, sizeof ck, "%s/ck0", dir);
    snprintf(out, sizeof out, "%s/e0.npy", dir);
    snprintf(args, sizeof args, "predict '%s' --checkpoint '%s' --out '%s' --embeddings", store, ck, out);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    const long n = 2708, H = 16, C = 7, F = 1433;
    float *E = tu_npy_f32(out, n, H);
    snprintf(out, sizeof out, "%s/s0.npy", dir);
    float *S = tu_npy_f32(out, n, C);
    snprintf(pp, sizeof pp, "%s/p0.npy", dir);
    float *P = tu_npy_f32(pp, F * H + H + H * C + C, 1);   /* [W0, b0, W1, b1], written as (k, 1) */
    const float *W1 = P + F * H + H, *b1 = W1 + H * C;
    for (long i = 0; i < n * H; i++) ck_assert(E[i] >= 0);   /* after ReLU */
    dataset_t d;
    ck_assert_int_eq(dataset_load(store, &d), INCA_OK);
    csr_t a = {0};
    ck_assert_int_eq(csr_gcn_norm(&d.adj, &a), INCA_OK);
    double worst = 0;
    for (long i = 0; i < n; i++)
        for (long c = 0; c < C; c++) {
            double z = b1[c];
            for (int64_t e = a.rowptr[i]; e < a.rowptr[i + 1]; e++) {
                double t = 0;
                for (long q = 0; q < H; q++) t += (double)E[a.col[e] * H + q] * W1[q * C + c];
                z += (double)a.val[e] * t;
            }
            const double diff = fabs(z - S[i * C + c]);
            worst = diff > worst ? diff : worst;
        }
    ck_assert_msg(worst < 1e-4, "embeddings through the output layer differ from the scores by %g", worst);
    /* balanced accuracy and macro F1 of these scores on the test split, by hand, are what the
     * metrics file said of the last epoch */
    {
        int64_t tru[7] = {0}, prd[7] = {0}, tp[7] = {0};
        for (int64_t t = 0; t < d.split_n[SPLIT_TEST]; t++) {
            const int64_t i = d.split[SPLIT_TEST][t];
            int best = 0;
            for (int q = 1; q < C; q++)
                if (S[i * C + q] > S[i * C + best]) best = q;
            tru[d.y[i]]++;
            prd[best]++;
            tp[best] += best == d.y[i];
        }
        double rec = 0, f1 = 0;
        int nr = 0, nf = 0;
        for (int q = 0; q < C; q++) {
            if (tru[q]) { rec += (double)tp[q] / (double)tru[q]; nr++; }
            if (tru[q] + prd[q]) { f1 += 2.0 * (double)tp[q] / (double)(tru[q] + prd[q]); nf++; }
        }
        char mp[1100], cmd[1200], *text = NULL;
        snprintf(mp, sizeof mp, "%s/m0.jsonl", dir);
        snprintf(cmd, sizeof cmd, "tail -n 1 '%s'", mp);
        ck_assert_int_eq(tu_sh(cmd, &text, NULL), 0);
        ck_assert_double_eq_tol(tu_json_num(text, "test_balanced_acc"), rec / nr, 1e-12);
        ck_assert_double_eq_tol(tu_json_num(text, "test_macro_f1"), f1 / nf, 1e-12);
        free(text);
    }
    csr_free(&a);
    dataset_free(&d);
    /* rows of an index file, in its order */
    char ids[1100];
    snprintf(ids, sizeof ids, "%s/ids.txt", dir);
    FILE *f = fopen(ids, "w");
    fprintf(f, "17\n3\n2707\n");
    fclose(f);
    snprintf(out, sizeof out, "%s/sub.npy", dir);
    snprintf(args, sizeof args, "predict --checkpoint '%s' --out '%s' --indices '%s'", ck, out, ids);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    float *sub = tu_npy_f32(out, 3, C);
    const long pick[3] = {17, 3, 2707};
    for (int r = 0; r < 3; r++) ck_assert(memcmp(sub + r * C, S + pick[r] * C, sizeof(float) * (size_t)C) == 0);
    free(sub);
    free(E);
    free(S);
    free(P);
    /* refusals name the way out */
    snprintf(args, sizeof args, "predict --checkpoint '%s/none' --out '%s'", dir, out);
    ck_assert_int_eq(tu_inca(args, &o, &err), 2);
    ck_assert_msg(strstr(err, "config.json") || strstr(err, "no checkpoint"), "%s", err);
    free(o);
    free(err);
    /* another model than the checkpoint's is refused naming both; --embeddings of a model whose
     * layers mix (a GCNII checkpoint of its own) is refused naming the ones that work */
    snprintf(args, sizeof args, "predict --checkpoint '%s' --out '%s' --model sage", ck, out);
    ck_assert_int_eq(tu_inca(args, &o, &err), 2);
    ck_assert_msg(strstr(err, "model 'gcn'") && strstr(err, "'sage'"), "%s", err);
    free(o);
    free(err);
    snprintf(ck, sizeof ck, "%s/ck-gcnii", dir);
    snprintf(flags, sizeof flags, "--model gcnii --layers 2 --epochs 2 --threads 1 --checkpoint '%s' --quiet", ck);
    ck_assert_int_eq(train(flags, NULL, NULL), 0);
    snprintf(args, sizeof args, "predict --checkpoint '%s' --out '%s' --embeddings", ck, out);
    ck_assert_int_eq(tu_inca(args, &o, &err), 2);
    ck_assert_msg(strstr(err, "--model gcnii mixes its layers"), "%s", err);
    free(o);
    free(err);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* predict --run I: the model of run I of a --runs 2 folder (trained with seed + I, which its
 * checkpoint records): its scores give the test accuracy that run's last metrics line reported
 * (full-batch: the same whole-graph evaluation, so equal), run 1's scores are not run 0's, and
 * a run the folder does not hold is refused naming the runs it holds. */
START_TEST(test_predict_run) {
    ingest();
    char flags[4096], args[8192], ck[1100], m[1100], out[2][1100], cmd[1300];
    char *o = NULL, *err = NULL, *text = NULL;
    snprintf(ck, sizeof ck, "%s/ckruns", dir);
    snprintf(m, sizeof m, "%s/mruns.jsonl", dir);
    snprintf(flags, sizeof flags, "--model gcn --method full --epochs 5 --runs 2 --seed 3 --feature-norm row --threads 1 "
             "--checkpoint '%s' --metrics '%s' --quiet", ck, m);
    ck_assert_int_eq(train(flags, NULL, NULL), 0);
    for (int r = 0; r < 2; r++) {
        snprintf(out[r], sizeof out[r], "%s/run%d.npy", dir, r);
        snprintf(args, sizeof args, "predict --checkpoint '%s' --out '%s' --run %d --json", ck, out[r], r);
        ck_assert_msg(tu_inca(args, &o, &err) == 0, "run %d: %s", r, err);
        const char *j = tu_last_line(o);
        ck_assert_int_eq((int)tu_json_num(j, "run"), r);
        ck_assert_int_eq((int)tu_json_num(j, "checkpoint_epoch"), 4);
        snprintf(cmd, sizeof cmd, "grep '\"run\":%d,' '%s' | tail -n 1", r, m);   /* run r's last epoch */
        ck_assert_int_eq(tu_sh(cmd, &text, NULL), 0);
        ck_assert_int_eq((int)tu_json_num(text, "epoch"), 4);
        const double want = tu_json_num(text, "test_acc"), got = tu_json_num(j, "test_acc");
        ck_assert_msg(got == want, "run %d: predicted scores give %g, its metrics said %g", r, got, want);
        free(text);
        free(o);
        free(err);
    }
    float *s0 = tu_npy_f32(out[0], 2708, 7), *s1 = tu_npy_f32(out[1], 2708, 7);
    ck_assert_msg(memcmp(s0, s1, sizeof(float) * 2708 * 7) != 0, "runs 0 and 1 gave the same scores");
    /* --indices with --json: the JSON counts the rows written (the file's 2), not the graph's */
    char ids[1100], sub[1100];
    snprintf(ids, sizeof ids, "%s/ids-run.txt", dir);
    snprintf(sub, sizeof sub, "%s/sub-run.npy", dir);
    FILE *f = fopen(ids, "w");
    fprintf(f, "2707\n5\n");
    fclose(f);
    snprintf(args, sizeof args, "predict --checkpoint '%s' --out '%s' --run 1 --indices '%s' --json", ck, sub, ids);
    ck_assert_msg(tu_inca(args, &o, &err) == 0, "%s", err);
    ck_assert_int_eq((int)tu_json_num(tu_last_line(o), "rows"), 2);
    ck_assert_int_eq((int)tu_json_num(tu_last_line(o), "width"), 7);
    free(o);
    free(err);
    float *rows = tu_npy_f32(sub, 2, 7);
    ck_assert(memcmp(rows, s1 + 2707 * 7, sizeof(float) * 7) == 0 && memcmp(rows + 7, s1 + 5 * 7, sizeof(float) * 7) == 0);
    free(rows);
    free(s0);
    free(s1);
    /* node 2708 of Cora's 0..2707 is refused, naming the entry (it read a row past the scores) */
    f = fopen(ids, "w");
    fprintf(f, "3\n2708\n");
    fclose(f);
    snprintf(args, sizeof args, "predict --checkpoint '%s' --out '%s' --indices '%s'", ck, sub, ids);
    ck_assert_int_eq(tu_inca(args, &o, &err), 2);
    ck_assert_msg(strstr(err, "entry 1 is node 2708, the store has 2708 nodes"), "%s", err);
    free(o);
    free(err);
    snprintf(args, sizeof args, "predict --checkpoint '%s' --out '%s/run2.npy' --run 2", ck, dir);
    ck_assert_int_eq(tu_inca(args, &o, &err), 2);
    ck_assert_msg(strstr(err, "--run 2: ") && strstr(err, "holds the checkpoints of runs 0..1 (--run 0 to 1)"), "%s", err);
    free(o);
    free(err);
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

static double train_acc(const char *args, double *std) {
    char *out = NULL, *err = NULL;
    ck_assert_msg(tu_inca(args, &out, &err) == 0, "%s: %s", args, err);
    cJSON *j = tu_json_last(out);
    const double acc = tu_json_dbl(j, "test_acc");
    *std = tu_json_dbl(j, "test_acc_std");
    cJSON_Delete(j);
    free(out);
    free(err);
    return acc;
}

/* The stability measure over a --metrics file of `lines` epochs in all: per run, the most
 * the validation accuracy fell under its best so far after epoch `after`; returns the largest
 * over the runs. */
static double largest_val_drop(const char *metrics, int lines, int after) {
    char cmd[1300], *text = NULL;
    snprintf(cmd, sizeof cmd, "cat '%s'", metrics);
    ck_assert_int_eq(tu_sh(cmd, &text, NULL), 0);
    cJSON *l[1024];
    const int n = tu_json_lines(text, l, 1024);
    ck_assert_int_eq(n, lines);   /* an empty or short file must not pass as stable */
    double worst = 0, best = 0;
    for (int i = 0; i < n; i++) {
        const double run = tu_json_dbl(l[i], "run"), ep = tu_json_dbl(l[i], "epoch"), v = tu_json_dbl(l[i], "val_acc");
        if (i > 0 && run != tu_json_dbl(l[i - 1], "run")) best = 0;
        if (ep > after && best - v > worst) worst = best - v;
        if (v > best) best = v;
    }
    tu_json_free_lines(l, n);
    free(text);
    return worst;
}

/* Issue 33: on a hard csbm (homophily 0.4, 8 classes: most of a node's signal is in its
 * neighbours, and a batch of 2 of 16 METIS parts keeps about a third of its edges) GAS and
 * IncAgg's push refresh used to swing between chance and 50% (3 seeds: GAS 50.7 +- 6.9, IncAgg
 * 47.3 +- 3.2 against full-batch's 76.1) under Adam's usual beta1 0.9; with the history methods'
 * default (train_beta1_auto) they stay within a few points of full-batch (73.4, 75.1 at 5 seeds).
 * --beta1 0.9 must still collapse (the cause, not the seed, is what changed). IncAgg's default
 * recompute refresh collapsed even so (50.0 +- 3.3) until its snapshot was relaxed
 * (--refresh-relax, memory/agg.h: 74.0 +- 1.4), and all three ended 1-3 points under
 * full-batch, their last weights swinging from epoch to epoch, until the weights evaluated were
 * an average over about an epoch's steps (--eval-average, nn/wavg.h). Now, 5 seeds: GAS 77.3,
 * IncAgg 77.7 (relaxation 0.15; 77.8 with 0.3), push 77.5 against full-batch's 76.1; each must stay within 2 points of
 * full-batch, and collapse when its remedy is undone. */
START_TEST(test_history_methods_hard_csbm) {
    char g[1100], args[4096];
    char *own = tu_mkdtemp();
    ck_assert_ptr_nonnull(own);
    snprintf(g, sizeof g, "%s/hard.lmdb", own);
    snprintf(args, sizeof args, "gen --kind csbm --nodes 4000 --avg-degree 20 --features 64 --classes 8 --homophily 0.4 "
             "--seed 1 --out '%s' --quiet", g);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    const char *common = "--model gcn --layers 3 --hidden 64 --lr 0.005 --seed 0 --runs 3 --threads 2 --json --quiet";
    double sd, full;
    snprintf(args, sizeof args, "train '%s' %s --method full --epochs 200", g, common);
    full = train_acc(args, &sd);
    ck_assert_msg(full > 0.72, "full-batch %.4f", full);
    /* each method with its default, then with the one default that used to make it collapse */
    static const struct { const char *method, *undo; double under; } m[] = {
        {"gas", "--beta1 0.9", 0.10},
        {"incagg --refresh-source push", "--beta1 0.9", 0.10},
        {"incagg", "--refresh-relax 1 --eval-average 0", 0.15}};
    char metrics[1200];
    snprintf(metrics, sizeof metrics, "%s/m.jsonl", own);
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "train '%s' %s --method %s --parts 16 --batch-parts 2 --epochs 60 --metrics '%s'", g,
                 common, m[i].method, metrics);
        const double acc = train_acc(args, &sd);
        ck_assert_msg(acc > full - 0.02 && sd < 0.04, "%s: %.4f +- %.4f, full-batch %.4f", m[i].method, acc, sd, full);
        /* the recompute refresh's relaxation (0.15) and its rows of the averaged weights keep the
         * issue's stability measure: no run's validation accuracy 10 points under its best after
         * epoch 5 (2.5, 6.4, 2.2 here; 7.4, 5.8, 4.4 from the training weights; with relaxation
         * 0.3, the default before, 12.8 and 11.5 in the first two runs) */
        if (i == 2) {
            const double drop = largest_val_drop(metrics, 3 * 60, 5);
            ck_assert_msg(drop < 0.10, "incagg: validation fell %.1f points under its best after epoch 5", 100 * drop);
        }
        snprintf(args + strlen(args), sizeof args - strlen(args), " %s", m[i].undo);
        const double old = train_acc(args, &sd);
        ck_assert_msg(old < full - m[i].under, "%s %s: %.4f, full-batch %.4f (no longer collapses?)", m[i].method, m[i].undo,
                      old, full);
    }
    tu_rmrf(own);
    free(own);
}
END_TEST

/* --feature-norm row divides each node's features by their sum: with negative values (a CSBM's
 * Gaussian features, a standardised table) that sum is no scale, near 0 or negative, and the rows
 * blew up or flipped sign: GCN on a 5000-node CSBM of homophily 0.2 fell from 44.4% (none) to
 * 25.2% (chance) with a near-chance warning that advised --feature-norm row. Refused now, exit 2
 * naming the node and column, in memory (train), through the partition-ordered layout (partition,
 * train --loader view) and in prune's proxy; standard still trains. */
START_TEST(test_row_norm_needs_nonnegative) {
    dir = tu_mkdtemp();
    ck_assert_ptr_nonnull(dir);
    char st[1024], args[4096];
    snprintf(st, sizeof st, "%s/csbm.store", dir);
    snprintf(args, sizeof args, "gen --kind csbm --nodes 400 --avg-degree 6 --features 8 --classes 3 --seed 1 --out '%s'", st);
    char *out = NULL, *err = NULL;
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    static const char *const cmds[] = {
        "train '%s' --feature-norm row --epochs 2 --threads 1",
        "train '%s' --model mlp --feature-norm row --epochs 2 --threads 1",
        "partition '%s' --parts 4 --feature-norm row",
        "train '%s' --method incagg --parts 4 --batch-parts 2 --loader view --feature-norm row --epochs 2 --threads 1",
        "prune '%s' --feature-norm row --threads 1",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        snprintf(args, sizeof args, cmds[i], st);
        int rc = tu_inca(args, &out, &err);
        ck_assert_msg(rc == 2 && strstr(err, "--feature-norm row: divides each node's features by their sum, which needs them >= 0; node ")
                      && strstr(err, " in column ") && strstr(err, "--feature-norm standard"), "%s: rc %d, %s", args, rc, err);
        free(out);
        free(err);
    }
    snprintf(args, sizeof args, "train '%s' --feature-norm standard --epochs 2 --threads 1 --json", st);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    free(out);
    free(err);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* A CSV table whose columns lie at scales 1e-3..1e5 (as raw measurements do): 3 classes of 60/30/10%,
 * each row its class's mean plus unit noise, then scaled and shifted per column. Returns the
 * share of the test rows (the last 600) in their largest class. */
static double xs_uniform(uint64_t *x) {   /* xorshift64 in [0, 1) */
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return (double)(*x >> 11) / 9007199254740992.0;
}

static double write_raw_table(const char *d) {
    static const double scale[8] = {1e-3, 1, 10, 100, 1e3, 1e4, 1e5, 0.5}, off[8] = {0, 40, 0, 500, 0, 5e4, 1e6, 0};
    static const char *const file[3] = {"train.csv", "valid.csv", "test.csv"};
    double mean[3][8];
    uint64_t x = 88172645463325252ull;
    int test_count[3] = {0};
    for (int c = 0; c < 3; c++)
        for (int j = 0; j < 8; j++) mean[c][j] = 2 * xs_uniform(&x) - 1;
    for (int f = 0; f < 3; f++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", d, file[f]);
        FILE *fp = fopen(p, "w");
        ck_assert_ptr_nonnull(fp);
        for (int i = 0; i < (f == 0 ? 1800 : 600); i++) {
            const double u = xs_uniform(&x);
            const int y = u < 0.6 ? 0 : u < 0.9 ? 1 : 2;
            if (f == 2) test_count[y]++;
            fprintf(fp, "%d", y);
            for (int j = 0; j < 8; j++) {   /* Box-Muller */
                const double r = sqrt(-2 * log(1 - xs_uniform(&x)));
                const double g = r * cos(6.283185307179586 * xs_uniform(&x));
                fprintf(fp, ",%.6g", (mean[y][j] + g) * scale[j] + off[j]);
            }
            fputc('\n', fp);
        }
        fclose(fp);
    }
    const int most = test_count[0] > test_count[1] ? (test_count[0] > test_count[2] ? test_count[0] : test_count[2])
                                                   : (test_count[1] > test_count[2] ? test_count[1] : test_count[2]);
    return most / 600.0;
}

/* A store without a graph takes the table defaults for the flags not given (cli_train_kind_defaults):
 * the graph defaults (GCN, or an MLP of 16 on raw columns for 200 full-batch epochs) answered the
 * majority class on this table (and 73% on Fashion-MNIST against numpy's logistic regression's 84%). */
START_TEST(test_table_defaults) {
    dir = tu_mkdtemp();
    ck_assert_ptr_nonnull(dir);
    char tab[1024], st[1024], args[4096];
    snprintf(tab, sizeof tab, "%s/tab", dir);
    snprintf(st, sizeof st, "%s/tab.store", dir);
    snprintf(args, sizeof args, "mkdir '%s'", tab);
    ck_assert_int_eq(tu_sh(args, NULL, NULL), 0);
    const double majority = write_raw_table(tab);
    snprintf(args, sizeof args, "ingest --format csv '%s' --out '%s' --quiet", tab, st);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    char *out = NULL, *err = NULL;
    snprintf(args, sizeof args, "train '%s' --threads 1 --json", st);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    ck_assert_msg(strstr(err, "is a table (no graph): defaults --model mlp --hidden 256 --feature-norm standard --epochs 20 "
                              "--batch-size 128 --lr 0.001 --dropout 0.2"), "%s", err);
    cJSON *r = tu_json_last(out);
    ck_assert_ptr_nonnull(r);
    const cJSON *cfg = tu_json_get(r, "config", cJSON_Object);
    ck_assert_str_eq(tu_json_get(r, "defaults", cJSON_String)->valuestring, "table");
    ck_assert_str_eq(tu_json_get(cfg, "model", cJSON_String)->valuestring, "mlp");
    ck_assert_str_eq(tu_json_get(cfg, "feature-norm", cJSON_String)->valuestring, "standard");
    ck_assert(tu_json_dbl(cfg, "hidden") == 256 && tu_json_dbl(cfg, "epochs") == 20 && tu_json_dbl(cfg, "batch-size") == 128 &&
              tu_json_dbl(cfg, "lr") == 0.001 && tu_json_dbl(cfg, "dropout") == 0.2);
    const double acc = tu_json_dbl(r, "test_acc");
    fprintf(stderr, "raw-scale table, table defaults: test %.4f, majority %.4f\n", acc, majority);   /* README's figure */
    ck_assert_msg(fabs(tu_json_dbl(r, "test_majority_acc") - majority) < 1e-9, "majority %g, counted %g",
                  tu_json_dbl(r, "test_majority_acc"), majority);
    ck_assert_msg(acc > majority + 0.15 && !cJSON_IsTrue(cJSON_GetObjectItem(r, "near_chance")), "test %g, majority %g", acc, majority);
    /* a --config rerun takes every value from the file: no defaults by kind left, the same bits */
    char res[1100];
    snprintf(res, sizeof res, "%s/r.json", dir);
    FILE *fp = fopen(res, "w");
    ck_assert_ptr_nonnull(fp);
    fputs(out, fp);
    fclose(fp);
    cJSON_Delete(r);
    free(out);
    free(err);
    snprintf(args, sizeof args, "train --config '%s' --json", res);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    r = tu_json_last(out);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(tu_json_get(r, "kind_defaults", cJSON_String)->valuestring, "");
    ck_assert_msg(tu_json_dbl(r, "test_acc") == acc && !strstr(err, "is a table"), "rerun %g vs %g; %s", tu_json_dbl(r, "test_acc"), acc, err);
    cJSON_Delete(r);
    free(out);
    free(err);
    /* typed flags are kept, the rest still take the table's; the graph defaults stay graph's */
    snprintf(args, sizeof args, "train '%s' --threads 1 --json --epochs 3 --lr 0.01 --quiet", st);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    r = tu_json_last(out);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(tu_json_get(r, "kind_defaults", cJSON_String)->valuestring,
                     "--model mlp --hidden 256 --feature-norm standard --batch-size 128 --dropout 0.2");
    cfg = tu_json_get(r, "config", cJSON_Object);
    ck_assert(tu_json_dbl(cfg, "epochs") == 3 && tu_json_dbl(cfg, "lr") == 0.01 && err[0] == '\0');
    cJSON_Delete(r);
    free(out);
    free(err);
    /* a graph model typed on a table: refused, without the defaults line before it */
    snprintf(args, sizeof args, "train '%s' --threads 1 --model gcn", st);
    ck_assert_int_eq(tu_inca(args, &out, &err), 2);
    ck_assert_msg(strstr(err, "needs a graph") && !strstr(err, "is a table"), "%s", err);
    free(out);
    free(err);
    /* --patience waits on the validation figure: without a labelled validation row it is refused */
    snprintf(args, sizeof args, "train '%s' --threads 1 --epochs 2 --patience 3 --split random:0.8,0,0.2 --quiet", st);
    ck_assert_int_eq(tu_inca(args, &out, &err), 2);
    ck_assert_msg(strstr(err, "--patience 3: the validation split has no labelled row") && strstr(err, "--split random:TR,VA,TE"),
                  "%s", err);
    free(out);
    free(err);
    snprintf(args, sizeof args, "train '%s' --threads 1 --epochs 2 --patience 3 --quiet", st);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "gen --kind csbm --nodes 300 --avg-degree 6 --features 8 --classes 3 --seed 1 --out '%s/g'", dir);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "train '%s/g' --threads 1 --json --epochs 2", dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    r = tu_json_last(out);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(tu_json_get(r, "defaults", cJSON_String)->valuestring, "graph");
    ck_assert_str_eq(tu_json_get(r, "kind_defaults", cJSON_String)->valuestring, "");
    ck_assert_str_eq(tu_json_get(tu_json_get(r, "config", cJSON_Object), "model", cJSON_String)->valuestring, "gcn");
    cJSON_Delete(r);
    free(out);
    free(err);
    tu_rmrf(dir);
    free(dir);
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
    tcase_add_test(t, test_checkpoint_full_refusals);
    tcase_add_test(t, test_parts_refused);
    tcase_add_test(t, test_train_acc_same_meaning);
    tcase_add_test(t, test_wait_policy);
    tcase_add_test(t, test_predict);
    tcase_add_test(t, test_predict_run);
    tcase_add_test(t, test_help);
    tcase_add_test(t, test_history_methods_hard_csbm);
    tcase_add_test(t, test_row_norm_needs_nonnegative);
    tcase_add_test(t, test_table_defaults);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
