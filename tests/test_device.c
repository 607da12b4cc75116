/* The trainers' device paths on the emulated device (--device emu: the CPU kernels behind a
 * device's memory rules, kernels/cpu/backend_emu.c): every backbone full-batch, row-batched
 * mlp, every mini-batch method, checkpoint and resume must give the CPU
 * backend's numbers bit for bit (the same kernels run; only where memory lives and how it
 * moves differs), so any host access of device memory or missing upload shows up here, on a
 * machine without a GPU. */
#include "tests/testutil.h"
#include "kernels/backend.h"
#include "core/status.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dir;
static const char *dut = "emu";   /* the device under test */
static int exact = 1;             /* emu: bit for bit; cuda: tolerances */

static void setup(void) {
    dir = tu_mkdtemp();
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "ingest --format ogb '%s/data/cora' --out '%s/cora'", tu_src(), dir);
    ck_assert_int_eq(tu_inca(cmd, NULL, NULL), 0);
}
static void teardown(void) {
    tu_rmrf(dir);
    free(dir);
}

/* `inca train <store> <args> --device <dev> --json --metrics FILE`: the result line; the
 * per-epoch lines stay in dir/metrics-<dev>.jsonl */
static cJSON *train(const char *args, const char *dev) {
    char cmd[2048], *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "train '%s/cora' %s --device %s --json --metrics '%s/metrics-%s.jsonl'", dir, args, dev,
             dir, dev);
    const int rc = tu_inca(cmd, &out, &err);
    ck_assert_msg(rc == 0, "%s: exit %d: %s", cmd, rc, err ? err : "");
    cJSON *j = tu_json_last(out);
    free(out);
    free(err);
    return j;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    char *buf = calloc(1, 1 << 20);
    ck_assert(buf);
    const size_t got = fread(buf, 1, (1 << 20) - 1, f);
    ck_assert_msg(!ferror(f) && got < (1 << 20) - 1, "%s: unreadable or over 1 MiB", path);
    fclose(f);
    return buf;
}

/* The result lines and every epoch's metrics (losses and accuracies) equal, bit for bit. */
static void same_numbers(cJSON *a, cJSON *b, const char *what, int resumed) {
    static const char *const keys[] = {"epochs", "test_acc", "val_acc", "best_epoch"};
    for (size_t i = 0; i < (exact ? sizeof keys / sizeof keys[0] : 1); i++) {
        const double x = tu_json_get(a, keys[i], cJSON_Number)->valuedouble;
        const double y = tu_json_get(b, keys[i], cJSON_Number)->valuedouble;
        ck_assert_msg(x == y, "%s: %s %.17g on cpu, %.17g on %s", what, keys[i], x, y, dut);
    }
    ck_assert_str_eq(tu_json_get(b, "device", cJSON_String)->valuestring, dut);
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/metrics-cpu.jsonl", dir);
    snprintf(pb, sizeof pb, "%s/metrics-%s.jsonl", dir, dut);
    char *ta = slurp(pa), *tb = slurp(pb);
    cJSON *la[512], *lb[512];
    const int na = tu_json_lines(ta, la, 512), nb = tu_json_lines(tb, lb, 512);
    /* a resumed run's file (the same --metrics path) holds every epoch, those before the
     * checkpoint kept from the first run (issue 31) */
    ck_assert_msg(na == nb && nb > 0, "%s%s: %d metric lines on cpu, %d on %s", what, resumed ? " (resumed)" : "", na, nb, dut);
    static const char *const mk[] = {"train_loss", "train_acc", "val_loss", "val_acc", "test_acc"};
    for (int l = 0; l < (exact ? nb : 1); l++)
        for (size_t i = 0; i < (exact ? sizeof mk / sizeof mk[0] : 3); i++) {   /* cuda: the losses */
            const double x = tu_json_get(la[na - nb + l], mk[i], cJSON_Number)->valuedouble;
            const double y = tu_json_get(lb[l], mk[i], cJSON_Number)->valuedouble;
            const int ok = exact ? x == y : (i == 1 ? fabs(x - y) <= 0.02 : fabs(x - y) <= 1e-4 * fabs(x));
            ck_assert_msg(ok, "%s: line %d %s %.17g on cpu, %.17g on %s", what, l, mk[i], x, y, dut);
        }
    tu_json_free_lines(la, na);
    tu_json_free_lines(lb, nb);
    free(ta);
    free(tb);
}

START_TEST(full_batch_every_backbone) {
    static const char *const cases[] = {
        "--model gcn --epochs 6 --feature-norm row",
        "--model sage --epochs 4 --dense-input",
        "--model gcnii --layers 4 --hidden 32 --epochs 3",
        "--model appnp --epochs 3",
        "--model gcn --layers 3 --batchnorm --residual --epochs 4",
        "--model mlp --epochs 4",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *a = train(cases[i], "cpu"), *b = train(cases[i], dut);
        same_numbers(a, b, cases[i], 0);
        const double acc = tu_json_get(a, "test_acc", cJSON_Number)->valuedouble;
        ck_assert_msg(acc > 0.2, "%s: test accuracy %g: the run did not train", cases[i], acc);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
}
END_TEST

START_TEST(row_batches_and_checkpoints) {
    cJSON *a = train("--model mlp --batch-size 128 --epochs 3", "cpu"), *b = train("--model mlp --batch-size 128 --epochs 3", dut);
    same_numbers(a, b, "mlp --batch-size 128", 0);
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* 2 epochs with checkpoints on emu, then resumed to 5 on emu = 5 straight on the CPU */
    char args[1024];
    snprintf(args, sizeof args, "--model gcn --batchnorm --layers 3 --epochs 2 --checkpoint '%s/ck'", dir);
    cJSON_Delete(train(args, dut));
    snprintf(args, sizeof args, "--model gcn --batchnorm --layers 3 --epochs 5 --checkpoint '%s/ck' --resume", dir);
    b = train(args, dut);
    a = train("--model gcn --batchnorm --layers 3 --epochs 5", "cpu");
    same_numbers(a, b, "checkpoint + resume", 1);
    cJSON_Delete(a);
    cJSON_Delete(b);
}
END_TEST

/* Cluster-GCN, GAS and IncAgg (both refresh sources, fp32 and bf16 tables, a refresh period
 * inside the epoch), GraphSAGE (Â_BB not symmetric: its transpose is uploaded) and GCNII. */
START_TEST(mini_batch_every_method) {
    static const char *const cases[] = {
        "--method cluster --parts 8 --batch-parts 2 --epochs 3",
        "--method gas --parts 8 --batch-parts 2 --epochs 3",
        "--method incagg --parts 8 --batch-parts 2 --epochs 3",
        "--method incagg --parts 8 --batch-parts 2 --epochs 3 --refresh-source push",
        "--method incagg --parts 8 --batch-parts 2 --epochs 3 --refresh-source push --refresh 2 --history-dtype bf16",
        "--method incagg --parts 8 --batch-parts 3 --epochs 3 --history-dtype bf16",
        "--method gas --model sage --parts 8 --batch-parts 2 --epochs 2",
        "--method cluster --model sage --parts 8 --batch-parts 2 --epochs 2 --cluster-norm global",
        "--method incagg --model gcnii --layers 4 --hidden 32 --parts 8 --batch-parts 2 --epochs 2",
        /* history tables in host memory: rows through the pinned stage, refreshes on the CPU */
        "--method gas --parts 8 --batch-parts 2 --epochs 3 --history-location host",
        "--method gas --model sage --parts 8 --batch-parts 2 --epochs 2 --history-location host --history-dtype bf16",
        "--method incagg --parts 8 --batch-parts 2 --epochs 3 --history-location host",
        "--method incagg --parts 8 --batch-parts 2 --epochs 3 --refresh-source push --history-location host",
        ("--method incagg --parts 8 --batch-parts 2 --epochs 3 --refresh-source push --refresh 2 --history-dtype bf16 "
         "--history-location host"),
        "--method incagg --model gcnii --layers 3 --hidden 32 --parts 8 --batch-parts 2 --epochs 2 --history-location host",
        /* the view loader: features, Â and M^0 mapped from the store's layout and uploaded, the
         * layer-wise passes on the device (tables on it or on the host, spilled to files) */
        "--method incagg --parts 8 --batch-parts 2 --epochs 3 --loader view",
        "--method incagg --parts 8 --batch-parts 2 --epochs 3 --loader view --refresh-source push --refresh 2 --history-dtype bf16",
        "--method incagg --model sage --parts 8 --batch-parts 2 --epochs 2 --loader view --history-location host",
        "--method gas --model sage --parts 8 --batch-parts 2 --epochs 2 --loader view",
        "--method cluster --parts 8 --batch-parts 2 --epochs 2 --loader view --memory-budget 64M",
        /* data-parallel ranks simulated (gradient sums on the device, GAS's held pushes) */
        "--method gas --parts 8 --batch-parts 2 --epochs 2 --workers 2",
        "--method incagg --parts 8 --batch-parts 1 --epochs 2 --workers 3 --loader view",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *a = train(cases[i], "cpu"), *b = train(cases[i], dut);
        same_numbers(a, b, cases[i], 0);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    /* IncAgg resumed on emu from its own checkpoint (tables included) = straight on the CPU; the
     * third time with the view loader (M^0 is the store's, not in the checkpoint) */
    char args[1024];
    for (int host = 0; host < 3; host++) {   /* tables on the device, then on the host; view */
        const char *loc = host == 1 ? "--history-location host" : host == 2 ? "--loader view" : "";
        snprintf(args, sizeof args, "--method incagg --parts 8 --batch-parts 2 --epochs 2 %s --checkpoint '%s/ckm%d'", loc,
                 dir, host);
        cJSON_Delete(train(args, dut));
        snprintf(args, sizeof args, "--method incagg --parts 8 --batch-parts 2 --epochs 4 %s --checkpoint '%s/ckm%d' --resume",
                 loc, dir, host);
        cJSON *b = train(args, dut);
        snprintf(args, sizeof args, "--method incagg --parts 8 --batch-parts 2 --epochs 4 %s", host == 2 ? loc : "");
        cJSON *a = train(args, "cpu");
        same_numbers(a, b, "incagg checkpoint + resume", 1);
        ck_assert_str_eq(tu_json_get(b, "history_location", cJSON_String)->valuestring, host == 1 ? "host" : "device");
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
}
END_TEST

int main(void) {
    const char *e = getenv("INCA_TEST_DEVICE");
    if (e && strcmp(e, "cuda") == 0) {
        kern_ctx_t *c = NULL;
        if (kc_create(&(kern_ctx_opts_t){.device = "cuda"}, &c) != INCA_OK) return tu_gpu_unavailable("test_device", inca_errmsg());
        kc_free(&c);
        dut = "cuda";
        exact = 0;
    }
    Suite *s = suite_create("device");
    TCase *tc = tcase_create(dut);
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, full_batch_every_backbone);
    tcase_add_test(tc, row_batches_and_checkpoints);
    tcase_add_test(tc, mini_batch_every_method);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
