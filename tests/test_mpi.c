/* `mpirun -np P inca train` (issue 13) against its single-process reference `--workers P`: the
 * same final parameters bit for bit (--save-params) and the same accuracy, for cluster, gas,
 * incagg (both refresh sources) and full-batch at P = 2 and 4 on the bundled Cora; the byte counters (IncAgg
 * sends nothing but the gradient reduction between refreshes); checkpoints per rank (a job
 * stopped between two ranks' saves resumes from the epoch all of them saved, bit for bit); per-rank
 * shards (inca shard) giving the whole store's bits; a rank that fails or is killed ends the job
 * with a message naming it, never a hang; bench scale's smoke pass.
 * Runs only where CMake found MPI and mpiexec (INCA_MPIEXEC; skipped otherwise). */
#include "testutil.h"
#include "nn/train.h"
#include "core/alloc.h"
#include "core/status.h"
#include "graph/dist.h"
#include "graph/partition.h"
#include "loaders/dataset.h"
#include "loaders/partition_store.h"
#include "loaders/store.h"
#include "nn/layer.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

static char *dir;
static char store[1024];
static const char *mpiexec;

static void setup(void) {
    dir = tu_mkdtemp();
    char cora[1024], args[4096];
    snprintf(cora, sizeof cora, "%s/data/cora", tu_src());
    snprintf(store, sizeof store, "%s/cora.lmdb", dir);
    snprintf(args, sizeof args, "ingest --format ogb '%s' --out '%s'", cora, store);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "partition '%s' --parts 40", store);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
}

static void setup_dir(void) { dir = tu_mkdtemp(); }

static void teardown(void) {
    tu_rmrf(dir);
    free(dir);
}

/* `mpirun -np p inca <args>` (p = 0: `inca <args>` alone); exit status, stdout, stderr */
static int run(int p, const char *args, char **out, char **err) {
    char cmd[32768];
    if (p > 0) snprintf(cmd, sizeof cmd, "timeout 300 '%s' -np %d '%s' %s", mpiexec, p, tu_bin(), args);
    else snprintf(cmd, sizeof cmd, "timeout 300 '%s' %s", tu_bin(), args);
    return tu_sh(cmd, out, err);
}

static char *slurp(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: missing", path);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)*len + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)*len, f), (size_t)*len);
    fclose(f);
    return b;
}

static void same_file(const char *a, const char *b, const char *what) {
    long la, lb;
    char *x = slurp(a, &la), *y = slurp(b, &lb);
    ck_assert_msg(la == lb && memcmp(x, y, (size_t)la) == 0, "%s: the final parameters differ", what);
    free(x);
    free(y);
}

/* The --metrics files of --workers (w) and of mpirun (m), epoch by epoch: the accuracies, balanced
 * accuracies and F1 scores of every split equal (counts summed over the ranks), the mean losses
 * within rounding (each rank's mean weighted by its count). */
static void same_metrics(const char *w, const char *m, const char *what) {
    static const char *const exact[] = {"train_acc", "val_acc", "test_acc", "val_balanced_acc", "val_macro_f1",
                                        "test_balanced_acc", "test_macro_f1"};
    static const char *const near[] = {"train_loss", "val_loss"};
    long lw, lm;
    char *tw = slurp(w, &lw), *tm = slurp(m, &lm);
    tw[lw] = tm[lm] = '\0';
    cJSON *vw[16], *vm[16];
    const int nw = tu_json_lines(tw, vw, 16), nm = tu_json_lines(tm, vm, 16);
    ck_assert_msg(nw > 0 && nw == nm, "%s: %d vs %d metrics lines", what, nw, nm);
    for (int i = 0; i < nw; i++)
        for (size_t k = 0; k < sizeof exact / sizeof exact[0] + sizeof near / sizeof near[0]; k++) {
            const int ex = k < sizeof exact / sizeof exact[0];
            const char *key = ex ? exact[k] : near[k - sizeof exact / sizeof exact[0]];
            const double a = tu_json_dbl(vm[i], key), b = tu_json_dbl(vw[i], key);
            ck_assert_msg(ex ? a == b : fabs(a - b) <= 1e-12, "%s: epoch %d %s %.17g (mpirun) vs %.17g", what, i, key, a, b);
        }
    tu_json_free_lines(vw, nw);
    tu_json_free_lines(vm, nm);
    free(tw);
    free(tm);
}

/* train the store at st with P MPI ranks and with --workers P; both succeed, same parameters and
 * accuracy; with metrics, the same per-epoch figures of every split (same_metrics) */
static void compare_runs(const char *st, int p, const char *method, int metrics) {
    char args[16384], pw[1100], pm[1100], fw[1100], fm[1100], what[256];
    char *out = NULL, *err = NULL;
    snprintf(pw, sizeof pw, "%s/w.npy", dir);
    snprintf(pm, sizeof pm, "%s/m.npy", dir);
    snprintf(fw, sizeof fw, "%s/w.jsonl", dir);
    snprintf(fm, sizeof fm, "%s/m.jsonl", dir);
    snprintf(what, sizeof what, "-np %d %s", p, method);
    const char *common = "--model gcn --parts 40 --batch-parts 5 --epochs 3 --seed 2 --threads 1 --json";
    /* the case's flags after the common ones: a repeated flag's last value wins (--model) */
    snprintf(args, sizeof args, "train '%s' %s --method %s --workers %d --save-params '%s'%s%s%s", st, common, method, p, pw,
             metrics ? " --metrics '" : "", metrics ? fw : "", metrics ? "'" : "");
    ck_assert_msg(run(0, args, &out, &err) == 0, "%s --workers: %s", what, err);
    cJSON *w = tu_json_last(out);
    free(out);
    free(err);
    snprintf(args, sizeof args, "train '%s' %s --method %s --save-params '%s'%s%s%s", st, common, method, pm,
             metrics ? " --metrics '" : "", metrics ? fm : "", metrics ? "'" : "");
    ck_assert_msg(run(p, args, &out, &err) == 0, "%s: %s", what, err);
    cJSON *m = tu_json_last(out);
    ck_assert_double_eq(tu_json_dbl(m, "ranks"), p);
    ck_assert_double_eq(tu_json_dbl(w, "ranks"), 1);
    ck_assert_msg(tu_json_dbl(m, "test_acc") == tu_json_dbl(w, "test_acc"), "%s: test accuracy %g vs %g", what,
                  tu_json_dbl(m, "test_acc"), tu_json_dbl(w, "test_acc"));
    ck_assert_double_eq(tu_json_dbl(m, "steps_per_epoch"), tu_json_dbl(w, "steps_per_epoch"));
    ck_assert_int_eq(cJSON_GetArraySize(tu_json_get(m, "rank_stats", cJSON_Array)), p);
    same_file(pw, pm, what);
    if (metrics) same_metrics(fw, fm, what);
    cJSON_Delete(w);
    cJSON_Delete(m);
    free(out);
    free(err);
}

static void compare_on(const char *st, int p, const char *method) { compare_runs(st, p, method, 0); }

static void compare(int p, const char *method) { compare_on(store, p, method); }

START_TEST(mpirun_equals_workers_bit_for_bit) {
    static const char *const methods[] = {"cluster", "gas", "incagg --refresh-source push",
                                          "incagg --refresh-source recompute", "incagg --refresh-source push --refresh 1"};
    for (int p = 2; p <= 4; p += 2)
        for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) compare(p, methods[i]);
    /* the view loader: evaluation and refresh passes layer by layer over each rank's own rows,
     * the halo rows of each layer's output exchanged */
    compare(2, "incagg --refresh-source push --loader view");
    compare(2, "incagg --refresh-source recompute --loader view");
    compare(2, "gas --loader view");
    compare(4, "incagg --refresh-source recompute --loader view --model sage");
    compare(3, "incagg --refresh-source recompute --loader view");   /* ranks with unequal largest batches */
    compare(2, "incagg --refresh-source recompute --loader view --pass-dtype bf16");   /* bf16 layer halos */
    compare(2, "gas --model sage --history-dtype bf16");
    /* an odd rank count, and both gradient reductions (the chain is the default) */
    compare(3, "incagg --refresh-source push");
    compare(3, "gas --grad-reduce allgather");
    compare(2, "incagg --refresh-source push --model sage --history-dtype bf16");
    /* full-batch: a distributed SpMM at every site, --workers as thread ranks */
    compare(2, "full");
    compare(4, "full --feature-norm row");
    compare(3, "full --model sage --grad-reduce allgather");
    compare(2, "full --model gcnii --layers 4");
    compare(3, "full --model appnp --K 4");
}
END_TEST

/* `inca partition path --parts 40` and the flags in more */
static void partition40(const char *path, const char *more) {
    char args[4096];
    snprintf(args, sizeof args, "partition '%s' --parts 40%s", path, more);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
}

/* a store at path of 600 nodes (a CSBM graph of average degree 10, 8 features, 3 classes), its
 * partitioning of 40 parts made with the flags in part */
static void csbm_store(const char *path, const char *part) {
    char args[4096];
    snprintf(args, sizeof args, "gen --kind csbm --nodes 600 --avg-degree 10 --features 8 --classes 3 --seed 3 --out '%s'", path);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    partition40(path, part);
}

/* GAS under mpirun pulls every halo row another rank owns, the first row of the next rank's
 * range included: on a randomly partitioned graph (40 random parts, average degree 10) the
 * first node of rank r+1 borders rank r's batches almost surely, and a pull that took it for
 * one of rank r's own rows would leave its history at zero there, unlike --workers. */
START_TEST(gas_pulls_rows_at_every_rank_boundary) {
    char rand[sizeof store];
    snprintf(rand, sizeof rand, "%s/rand.lmdb", dir);
    csbm_store(rand, " --method random --seed 1");
    compare_on(rand, 2, "gas");
    compare_on(rand, 3, "gas");
}
END_TEST

/* The node of the store at path (its ids) that starts rank 1's range when 2 ranks train on its
 * stored partitioning metis-40-s0: the ownership plan made here from the public pieces, as a
 * run makes it (the graph renumbered, GCN's Â, dist_plan_make over nodes + nonzeros). */
static int64_t rank1_first_node(const char *path) {
    store_t *s = NULL;
    partition_t p;
    csr_t g = {0}, gp = {0}, a = {0}, at = {0};
    dist_plan_t plan;
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_msg(store_partition_load(s, "metis-40-s0", &p) == INCA_OK, "%s", inca_errmsg());
    ck_assert_int_eq(dataset_load_adj(s, &g), INCA_OK);
    ck_assert_int_eq(csr_permute(&g, p.perm, &gp), INCA_OK);
    ck_assert_int_eq(nn_adj_build(&gp, NN_NORM_GCN, &a, &at), INCA_OK);
    ck_assert_int_eq(dist_plan_make(&a, p.bounds, p.k, 2, &plan), INCA_OK);
    int64_t v = 0;
    while (p.perm[v] != plan.node_lo[1]) v++;
    dist_plan_free(&plan);
    csr_free(&a);
    csr_free(&at);
    csr_free(&gp);
    csr_free(&g);
    partition_free(&p);
    store_close(&s);
    return v;
}

/* v moved into split sp of d (out of the one that held it; the ids stay sorted) */
static void split_move(dataset_t *d, int64_t v, int sp) {
    for (int q = 0; q < SPLIT_COUNT; q++) {
        int64_t j = 0;
        for (int64_t i = 0; i < d->split_n[q]; i++)
            if (d->split[q][i] != v) d->split[q][j++] = d->split[q][i];
        d->split_n[q] = j;
    }
    int64_t *ids = inca_realloc(d->split[sp], sizeof(int64_t) * (size_t)(d->split_n[sp] + 1));
    ck_assert_ptr_nonnull(ids);
    int64_t i = d->split_n[sp]++;
    for (; i > 0 && ids[i - 1] > v; i--) ids[i] = ids[i - 1];
    ids[i] = v;
    d->split[sp] = ids;
}

/* The view loader under mpirun: each rank measures the train / validation / test ids of its own
 * range [lo, hi) (nn/mb_setup.c id_slice), the meters summed over the ranks. With the first node
 * of rank 1's range a training, then a validation, then a test node, the per-epoch figures of
 * every split equal those of --workers 2, which measures every id in one process. (A mutation
 * test: the slices dropping an id == lo, taking an id == hi into rank 0's too, and the
 * validation slice running to hi + 1 all passed the suite before.) */
START_TEST(view_ranks_measure_the_ids_on_their_boundary) {
    char base[sizeof store], st[sizeof store];
    snprintf(base, sizeof base, "%s/bnd.lmdb", dir);
    csbm_store(base, "");
    const int64_t v = rank1_first_node(base);
    dataset_t d;
    ck_assert_int_eq(dataset_load(base, &d), INCA_OK);
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {
        split_move(&d, v, sp);
        snprintf(st, sizeof st, "%s/bnd-%d.lmdb", dir, sp);
        ck_assert_int_eq(dataset_save(&d, st, 0), INCA_OK);
        partition40(st, "");
        ck_assert_int_eq(rank1_first_node(st), v);   /* the same graph: the same partitioning and plan */
        compare_runs(st, 2, "incagg --refresh-source recompute --loader view", 1);
    }
    dataset_free(&d);
}
END_TEST

/* issue 29: ranks on a device. mpirun -np p on the emulated device (whose memory faults on any
 * host access) against the CPU's mpirun -np p: the same parameters bit for bit (the emulated
 * device runs the CPU's kernels), the same test accuracy and the same bytes per rank and phase;
 * and --workers p on the emulated device, the same parameters again. */
static void compare_dev(int p, const char *method) {
    char args[16384], pc[1100], pe[1100], px[1100], what[256];
    char *out = NULL, *err = NULL;
    snprintf(pc, sizeof pc, "%s/dc.npy", dir);
    snprintf(pe, sizeof pe, "%s/de.npy", dir);
    snprintf(px, sizeof px, "%s/dx.npy", dir);
    snprintf(what, sizeof what, "-np %d --device emu %s", p, method);
    const char *common = "--model gcn --parts 40 --batch-parts 5 --epochs 3 --seed 2 --threads 1 --json";
    snprintf(args, sizeof args, "train '%s' %s --method %s --save-params '%s'", store, common, method, pc);
    ck_assert_msg(run(p, args, &out, &err) == 0, "%s on the CPU: %s", what, err);
    cJSON *c = tu_json_last(out);
    free(out);
    free(err);
    snprintf(args, sizeof args, "train '%s' %s --method %s --device emu --save-params '%s'", store, common, method, pe);
    ck_assert_msg(run(p, args, &out, &err) == 0, "%s: %s", what, err);
    cJSON *e = tu_json_last(out);
    free(out);
    free(err);
    ck_assert_str_eq(tu_json_get(e, "device", cJSON_String)->valuestring, "emu");
    ck_assert_double_eq(tu_json_dbl(e, "ranks"), p);
    ck_assert_msg(tu_json_dbl(e, "test_acc") == tu_json_dbl(c, "test_acc"), "%s: test accuracy %g vs the CPU's %g", what,
                  tu_json_dbl(e, "test_acc"), tu_json_dbl(c, "test_acc"));
    same_file(pc, pe, what);
    static const char *const keys[] = {"bytes_setup", "bytes_grad", "bytes_refresh", "bytes_halo", "bytes_eval"};
    const cJSON *rc = tu_json_get(c, "rank_stats", cJSON_Array), *re = tu_json_get(e, "rank_stats", cJSON_Array);
    ck_assert_int_eq(cJSON_GetArraySize(re), p);
    for (int r = 0; r < p; r++)
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            ck_assert_msg(tu_json_dbl(cJSON_GetArrayItem(re, r), keys[k]) == tu_json_dbl(cJSON_GetArrayItem(rc, r), keys[k]),
                          "%s: rank %d %s %g vs the CPU's %g", what, r, keys[k], tu_json_dbl(cJSON_GetArrayItem(re, r), keys[k]),
                          tu_json_dbl(cJSON_GetArrayItem(rc, r), keys[k]));
    const cJSON *pl = tu_json_get(e, "placement", cJSON_Object);
    if (strncmp(method, "full", 4) != 0) {   /* the mini-batch trainers allocate nothing on the device once training starts */
        ck_assert_msg(tu_json_dbl(pl, "allocations_during_training") == 0, "%s: %g device allocations during training",
                      what, tu_json_dbl(pl, "allocations_during_training"));
    } else {   /* full-batch ranks plan their device memory: each rank its own (the largest rank's peak) */
        ck_assert(tu_json_dbl(e, "peak_device_mb") > 0 && !cJSON_GetObjectItem(pl, "ranks_sharing_device"));
        ck_assert(tu_json_dbl(tu_json_get(pl, "device_mb", cJSON_Object), "halo tables") > 0);
        /* a second run on the same context holds what the first held (nothing of the first left) */
        snprintf(args, sizeof args, "train '%s' %s --method %s --device emu --runs 2", store, common, method);
        ck_assert_msg(run(p, args, &out, &err) == 0, "%s --runs 2: %s", what, err);
        cJSON *e2 = tu_json_last(out);
        free(out);
        free(err);
        const cJSON *d1 = tu_json_get(pl, "device_mb", cJSON_Object);
        const cJSON *d2 = tu_json_get(tu_json_get(e2, "placement", cJSON_Object), "device_mb", cJSON_Object);
        for (const cJSON *it = d1->child; it; it = it->next)
            ck_assert_msg(tu_json_dbl(d2, it->string) == it->valuedouble, "%s: %s %g MB in the second run, %g in one",
                          what, it->string, tu_json_dbl(d2, it->string), it->valuedouble);
        cJSON_Delete(e2);
    }
    snprintf(args, sizeof args, "train '%s' %s --method %s --device emu --workers %d --save-params '%s'", store, common,
             method, p, px);
    ck_assert_msg(run(0, args, NULL, &err) == 0, "%s --workers: %s", what, err);
    free(err);
    same_file(pc, px, what);
    cJSON_Delete(c);
    cJSON_Delete(e);
}

START_TEST(device_ranks_equal_cpu_ranks) {
    compare_dev(2, "cluster");
    compare_dev(2, "gas");
    compare_dev(3, "gas --grad-reduce allgather");
    compare_dev(2, "incagg --refresh-source push");
    compare_dev(2, "incagg --refresh-source push --history-dtype bf16 --model sage");
    compare_dev(2, "incagg --refresh-source recompute --history-location host");
    /* host tables beside a device: a push refresh's halo rows of S go between host tables */
    compare_dev(2, "incagg --refresh-source push --history-location host");
    compare_dev(2, "incagg --refresh-source recompute --loader view");
    compare_dev(2, "gas --loader view --history-dtype bf16 --pass-dtype bf16");
    compare_dev(2, "incagg --refresh-source recompute --loader view --pass-dtype bf16");
    compare_dev(2, "incagg --refresh-source recompute --loader view --features-location host");
    compare_dev(2, "full");
    compare_dev(3, "full --model sage --grad-reduce allgather");
    /* NCCL needs CUDA GPUs, one per rank: refused on every rank alike before any step, naming the
     * rank's device, and for --workers (one process) */
    static const char *const nccl[] = {"incagg --device emu", "full --device emu", "gas"};
    for (size_t i = 0; i < sizeof nccl / sizeof nccl[0]; i++) {
        char args[4096], *out = NULL, *err = NULL;
        snprintf(args, sizeof args, "train '%s' --method %s --parts 40 --epochs 1 --threads 1 --grad-reduce nccl", store,
                 nccl[i]);
        ck_assert_int_ne(run(2, args, &out, &err), 0);
        ck_assert_msg(strstr(err, "--grad-reduce nccl: rank 0 runs on") && strstr(err, "has no NCCL"), "%s", err);
        free(out);
        free(err);
        snprintf(args, sizeof args, "train '%s' --method %s --parts 40 --epochs 1 --threads 1 --grad-reduce nccl --workers 2",
                 store, nccl[i]);
        ck_assert_int_eq(run(0, args, &out, &err), 2);
        ck_assert_msg(strstr(err, "--grad-reduce nccl: between the GPUs of MPI ranks"), "%s", err);
        free(out);
        free(err);
        /* one process without --workers: refused too, not ignored */
        snprintf(args, sizeof args, "train '%s' --method %s --parts 40 --epochs 1 --threads 1 --grad-reduce nccl", store,
                 nccl[i]);
        ck_assert_int_eq(run(0, args, &out, &err), 2);
        ck_assert_msg(strstr(err, "this is one process"), "%s", err);
        free(out);
        free(err);
    }
}
END_TEST

/* one rank's [grad, refresh, halo, eval] bytes from a -np 2 run */
static void bytes_of(const char *method, int epochs, double b[2][4], double *params, double *spe) {
    char args[16384];
    char *out = NULL, *err = NULL;
    snprintf(args, sizeof args, "train '%s' --model gcn --method %s --parts 40 --batch-parts 5 --epochs %d --threads 1 --json",
             store, method, epochs);
    ck_assert_msg(run(2, args, &out, &err) == 0, "%s", err);
    cJSON *j = tu_json_last(out);
    *params = tu_json_dbl(j, "parameters");
    *spe = tu_json_dbl(j, "steps_per_epoch");
    const cJSON *rs = tu_json_get(j, "rank_stats", cJSON_Array);
    for (int r = 0; r < 2; r++) {
        const cJSON *o = cJSON_GetArrayItem(rs, r);
        ck_assert_double_eq(tu_json_dbl(o, "rank"), r);
        b[r][0] = tu_json_dbl(o, "bytes_grad");
        b[r][1] = tu_json_dbl(o, "bytes_refresh");
        b[r][2] = tu_json_dbl(o, "bytes_halo");
        b[r][3] = tu_json_dbl(o, "bytes_eval");
    }
    cJSON_Delete(j);
    free(out);
    free(err);
}

START_TEST(incagg_sends_only_gradients_between_refreshes) {
    double b2[2][4], b3[2][4], np, spe;
    bytes_of("incagg --refresh-source push", 2, b2, &np, &spe);
    bytes_of("incagg --refresh-source push", 3, b3, &np, &spe);
    /* a step's record: had + loss (two doubles) and every gradient, to the one other rank */
    const double rec = 4.0 * (4.0 + np);
    for (int r = 0; r < 2; r++) {
        ck_assert_double_eq(b2[r][0], 2 * spe * rec);
        ck_assert_double_eq(b3[r][0], 3 * spe * rec);
        ck_assert_double_eq(b3[r][2], 0);   /* no per-step halo traffic */
        ck_assert(b2[r][1] > 0);           /* one refresh per epoch: its halo of S */
        ck_assert_double_eq(b3[r][1] * 2, b2[r][1] * 3);
    }
    double g[2][4];
    bytes_of("gas", 2, g, &np, &spe);   /* GAS: the pulls at every step, no refresh */
    for (int r = 0; r < 2; r++) {
        ck_assert_double_eq(g[r][0], 2 * spe * rec);
        ck_assert_double_eq(g[r][1], 0);
        ck_assert(g[r][2] > 0);
    }
    bytes_of("cluster", 2, g, &np, &spe);
    for (int r = 0; r < 2; r++) ck_assert(g[r][1] == 0 && g[r][2] == 0);
    /* full-batch: per epoch the gradients (the chain: one record out of each of two ranks) and
     * the loss (the training accuracy is the evaluation's meter's); the training forward and backward exchange the halo rows of
     * every site (gcn: the backward at site 0 too, its input is X W), the evaluation forward
     * once, plus its meter (summed on every rank) */
    bytes_of("full", 3, g, &np, &spe);
    ck_assert_double_eq(spe, 1);
    for (int r = 0; r < 2; r++) {
        ck_assert_double_eq(g[r][0], 3 * (4.0 * np + 8.0));
        ck_assert_double_eq(g[r][1], 0);
        ck_assert(g[r][2] > 0);
        ck_assert_double_eq(g[r][2], 2 * (g[r][3] - 3 * (double)sizeof(train_meter_t)));
    }
}
END_TEST

/* sh -c cmd (formatted), which must succeed */
static void sh_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh_ok(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ck_assert_msg(tu_sh(cmd, NULL, NULL) == 0, "%s", cmd);
}

/* `mpirun -np 2 inca train STORE flags --epochs 4 --checkpoint ck --resume`: succeeds, says what
 * `says` names (the epoch every rank resumes from, or that the run starts again), leaves no
 * .tmp, and ends with the uninterrupted run's parameters (ref) and test accuracy (ref_acc) */
static void resume_as_uninterrupted(const char *flags, const char *ck, const char *ref, double ref_acc, const char *says,
                                    const char *what) {
    char args[16384], pb[1100];
    char *out = NULL, *err = NULL;
    snprintf(pb, sizeof pb, "%s/b.npy", dir);
    snprintf(args, sizeof args, "train '%s' %s --epochs 4 --checkpoint '%s' --resume --json --save-params '%s'", store, flags,
             ck, pb);
    ck_assert_msg(run(2, args, &out, &err) == 0, "%s: %s", what, err);
    ck_assert_msg(strstr(err, says), "%s: wanted '%s' in: %s", what, says, err);
    same_file(ref, pb, what);
    ck_assert_msg(tu_json_num(tu_last_line(out), "test_acc") == ref_acc, "%s: test_acc %.17g, uninterrupted %.17g", what,
                  tu_json_num(tu_last_line(out), "test_acc"), ref_acc);
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s/rank-1-of-2/run-0.ckpt.tmp", ck);
    ck_assert_msg(!tu_exists(tmp), "%s: %s left", what, tmp);
    free(out);
    free(err);
}

/* A job that lost a rank between two ranks' saves, made without a race (the ranks save one
 * after the other, so a kill between them leaves rank 0 an epoch ahead): train epochs 0..1, keep
 * rank 1's folder (epochs 1 and 0), train epoch 2 (both ranks: 2 and 1), put rank 1's older files
 * back. --resume then continues from epoch 1, the newest both hold, and ends as the uninterrupted
 * run (the old code refused: "end at different epochs"); so too when rank 1 was killed between
 * its two renames (its epoch 1 as .prev only); when rank 1 never saved, the run starts again.
 * flags: the method's; ref, ref_acc: the uninterrupted 4 epochs' parameters and test accuracy. */
static void stopped_between_saves(const char *flags, const char *ref, double ref_acc) {
    char args[16384], ck[1100];
    char *err = NULL;
    snprintf(ck, sizeof ck, "%s/ckstop", dir);
    tu_rmrf(ck);
    for (int e = 2; e <= 3; e++) {
        if (e == 3) sh_ok("cp -r '%s/rank-1-of-2' '%s/old1'", ck, ck);
        snprintf(args, sizeof args, "train '%s' %s --epochs %d --checkpoint '%s'%s", store, flags, e, ck, e > 2 ? " --resume" : "");
        ck_assert_msg(run(2, args, NULL, &err) == 0, "%s", err);
        free(err);
    }
    sh_ok("cp -r '%s/rank-0-of-2' '%s/new0'", ck, ck);
    const char *r1 = "rm -rf '%s/rank-1-of-2' && cp -r '%s/old1' '%s/rank-1-of-2' && echo half > '%s/rank-1-of-2/run-0.ckpt.tmp'";
    sh_ok(r1, ck, ck, ck, ck);
    resume_as_uninterrupted(flags, ck, ref, ref_acc, "every rank resumes from its checkpoint of epoch 1", "rank 1 a save behind");
    /* rank 1 killed between its two renames: epoch 1 is its .prev, no run-0.ckpt */
    sh_ok("rm -rf '%s/rank-0-of-2' && cp -r '%s/new0' '%s/rank-0-of-2'", ck, ck, ck);
    sh_ok(r1, ck, ck, ck, ck);
    sh_ok("mv '%s/rank-1-of-2/run-0.ckpt' '%s/rank-1-of-2/run-0.ckpt.prev'", ck, ck);
    resume_as_uninterrupted(flags, ck, ref, ref_acc, "every rank resumes from its checkpoint of epoch 1", "rank 1 between renames");
    /* rank 1 killed in its first save: no epoch in common, the run starts again */
    sh_ok("rm -rf '%s/rank-0-of-2' && cp -r '%s/new0' '%s/rank-0-of-2'", ck, ck, ck);
    sh_ok("rm -rf '%s/rank-1-of-2' && mkdir '%s/rank-1-of-2' && echo half > '%s/rank-1-of-2/run-0.ckpt.tmp'", ck, ck, ck);
    resume_as_uninterrupted(flags, ck, ref, ref_acc, "no epoch in common (latest -1 to 2", "rank 1 never saved");
    /* a new job clears an older job's files of the run: no stale .prev beside its first save */
    snprintf(args, sizeof args, "train '%s' %s --epochs 1 --checkpoint '%s'", store, flags, ck);
    ck_assert_msg(run(2, args, NULL, &err) == 0, "%s", err);
    free(err);
    char prev[1200];
    snprintf(prev, sizeof prev, "%s/rank-1-of-2/run-0.ckpt.prev", ck);
    ck_assert_msg(!tu_exists(prev), "%s: left from the older job", prev);
}

START_TEST(checkpoints_per_rank_resume_bit_for_bit) {
    char args[16384], ck[1100], pa[1100], pb[1100];
    char *out = NULL, *err = NULL;
    snprintf(ck, sizeof ck, "%s/ck", dir);
    snprintf(pa, sizeof pa, "%s/a.npy", dir);
    snprintf(pb, sizeof pb, "%s/b.npy", dir);
    const char *common = "--model gcn --method incagg --refresh-source push --parts 40 --batch-parts 5 --threads 1";
    snprintf(args, sizeof args, "train '%s' %s --epochs 4 --json --save-params '%s'", store, common, pa);
    ck_assert_msg(run(2, args, &out, &err) == 0, "%s", err);
    const double acc = tu_json_num(tu_last_line(out), "test_acc");
    free(out);
    free(err);
    snprintf(args, sizeof args, "train '%s' %s --epochs 2 --checkpoint '%s'", store, common, ck);
    ck_assert_msg(run(2, args, NULL, &err) == 0, "%s", err);
    free(err);
    char rk[1200];
    snprintf(rk, sizeof rk, "%s/rank-1-of-2/run-0.ckpt", ck);
    ck_assert_msg(tu_exists(rk), "%s: missing", rk);
    snprintf(rk, sizeof rk, "%s/manifest.json", ck);
    ck_assert_msg(tu_exists(rk), "%s: missing", rk);
    snprintf(args, sizeof args, "train '%s' %s --epochs 4 --checkpoint '%s' --resume --save-params '%s'", store, common, ck, pb);
    ck_assert_msg(run(2, args, NULL, &err) == 0, "%s", err);
    free(err);
    same_file(pa, pb, "resumed at epoch 2");
    /* the histories are split by rank: another rank count is refused */
    snprintf(args, sizeof args, "train '%s' %s --epochs 4 --checkpoint '%s' --resume", store, common, ck);
    ck_assert_int_ne(run(4, args, &out, &err), 0);
    ck_assert_msg(strstr(err, "checkpoints of 2 ranks") && strstr(err, "rank "), "%s", err);
    free(out);
    free(err);
    /* nor may one process resume them */
    snprintf(args, sizeof args, "train '%s' %s --epochs 4 --checkpoint '%s' --resume", store, common, ck);
    ck_assert_int_eq(run(0, args, &out, &err), 2);
    ck_assert_msg(strstr(err, "checkpoints of 2 ranks"), "%s", err);
    free(out);
    free(err);
    /* a job stopped between two ranks' saves resumes from the epoch both saved */
    stopped_between_saves(common, pa, acc);
    /* full-batch: the same per-rank folders; and --workers' thread ranks resume their one file */
    const char *full = "--model gcn --method full --parts 40 --threads 1";
    for (int np = 0; np <= 2; np += 2) {
        char ck2[1100];
        snprintf(ck2, sizeof ck2, "%s/ckfull%d", dir, np);
        const char *w = np ? "" : "--workers 2";
        snprintf(args, sizeof args, "train '%s' %s %s --epochs 4 --json --save-params '%s'", store, full, w, pa);
        ck_assert_msg(run(np, args, &out, &err) == 0, "%s", err);
        const double full_acc = tu_json_num(tu_last_line(out), "test_acc");
        free(out);
        free(err);
        if (np) stopped_between_saves(full, pa, full_acc);   /* the full-batch ranks' checkpoints likewise */
        snprintf(args, sizeof args, "train '%s' %s %s --epochs 2 --checkpoint '%s'", store, full, w, ck2);
        ck_assert_msg(run(np, args, NULL, &err) == 0, "%s", err);
        free(err);
        snprintf(rk, sizeof rk, np ? "%s/rank-1-of-2/run-0.ckpt" : "%s/run-0.ckpt", ck2);
        ck_assert_msg(tu_exists(rk), "%s: missing", rk);
        snprintf(args, sizeof args, "train '%s' %s %s --epochs 4 --checkpoint '%s' --resume --save-params '%s'", store,
                 full, w, ck2, pb);
        ck_assert_msg(run(np, args, NULL, &err) == 0, "%s", err);
        free(err);
        same_file(pa, pb, np ? "full-batch -np 2 resumed at epoch 2" : "full-batch --workers 2 resumed at epoch 2");
        /* inca predict reads the model of either (an MPI job's from rank 0's folder) */
        snprintf(args, sizeof args, "predict --checkpoint '%s' --out '%s/pred.npy' --json", ck2, dir);
        ck_assert_msg(run(0, args, &out, &err) == 0, "%s", err);
        ck_assert_int_eq((int)tu_json_num(tu_last_line(out), "checkpoint_epoch"), 3);
        free(out);
        free(err);
    }
}
END_TEST

START_TEST(failures_end_the_job_naming_the_rank) {
    char args[16384], cmd[16384];
    char *out = NULL, *err = NULL;
    /* a bad store on rank 1 only: rank 0 waits for it in a collective until the abort */
    snprintf(cmd, sizeof cmd,
             "timeout 120 '%s' -np 2 sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then S=%s/none.lmdb; else S=%s; fi; "
             "exec \"%s\" train \"$S\" --model gcn --method incagg --parts 40 --epochs 50 --threads 1'",
             mpiexec, dir, store, tu_bin());
    int rc = tu_sh(cmd, &out, &err);
    ck_assert_msg(rc != 0 && rc != 124, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(err, "rank 1 of 2") && strstr(err, "none.lmdb"), "%s", err);
    free(out);
    free(err);
    /* a rank killed in the middle of training: the job ends (no hang) */
    snprintf(cmd, sizeof cmd,
             "timeout 120 '%s' -np 2 sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then T=\"timeout -s KILL 3\"; fi; "
             "exec $T \"%s\" train %s --model gcn --method incagg --parts 40 --epochs 100000 --threads 1'",
             mpiexec, tu_bin(), store);
    rc = tu_sh(cmd, &out, &err);
    ck_assert_msg(rc != 0 && rc != 124, "exit %d (124: the job hung): %s", rc, err);
    free(out);
    free(err);
    /* refusals name what to do */
    snprintf(args, sizeof args, "train '%s' --model gcn --method incagg --workers 3 --epochs 1", store);
    ck_assert_int_eq(run(2, args, &out, &err), 2);
    ck_assert_msg(strstr(err, "--workers 3 under mpirun -np 2"), "%s", err);
    free(out);
    free(err);
    snprintf(args, sizeof args, "train '%s' --model gcn --method cluster --batchnorm --epochs 1", store);
    ck_assert_int_eq(run(2, args, &out, &err), 2);
    ck_assert_msg(strstr(err, "2 ranks with --batchnorm"), "%s", err);
    free(out);
    free(err);
    snprintf(args, sizeof args, "train '%s' --model gcn --method full --batchnorm --epochs 1", store);
    ck_assert_int_eq(run(2, args, &out, &err), 2);
    ck_assert_msg(strstr(err, " of 2: ") && strstr(err, "2 ranks with --batchnorm"), "%s", err);   /* whichever rank spoke first */
    free(out);
    free(err);
    snprintf(args, sizeof args, "info '%s'", store);
    ck_assert_int_eq(run(2, args, &out, &err), 2);
    ck_assert_msg(strstr(err, "runs in one process"), "%s", err);
    free(out);
    free(err);
}
END_TEST

/* inca shard: per-rank stores give the whole store's bits (and so --workers'), for gcn and for
 * sage with bf16 tables over 3 ranks; shards for another rank count or other flags are refused */
static void refused(int np, const char *args, int code, const char *want);

static void shard_case(int p, const char *make, const char *train) {
    char args[16384], sd[1100], pa[1100], pb[1100];
    char *out = NULL, *err = NULL;
    snprintf(sd, sizeof sd, "%s/shards-%d", dir, p);
    snprintf(pa, sizeof pa, "%s/sa.npy", dir);
    snprintf(pb, sizeof pb, "%s/sb.npy", dir);
    tu_rmrf(sd);
    snprintf(args, sizeof args, "shard '%s' --ranks %d --out '%s' --parts 40 %s --json", store, p, sd, make);
    ck_assert_msg(tu_inca(args, &out, &err) == 0, "%s", err);
    cJSON *j = tu_json_last(out);
    const cJSON *sh = tu_json_get(j, "shards", cJSON_Array);
    double own = 0;
    for (int r = 0; r < p; r++) own += tu_json_dbl(cJSON_GetArrayItem(sh, r), "own_rows");
    ck_assert_double_eq(own, 2708);   /* Cora's nodes, each owned once */
    cJSON_Delete(j);
    free(out);
    free(err);
    snprintf(args, sizeof args, "verify '%s/rank-%d-of-%d.lmdb'", sd, p - 1, p);   /* checksums and contents */
    ck_assert_msg(tu_inca(args, &out, &err) == 0, "%s", err);
    ck_assert_msg(strstr(out, ": ok ("), "%s", out);
    free(out);
    free(err);
    static const char *const methods[] = {"incagg --refresh-source push", "incagg --refresh-source recompute", "gas"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        const char *common = "--parts 40 --batch-parts 5 --epochs 3 --seed 2 --threads 1 --loader view --json";
        snprintf(args, sizeof args, "train '%s' --method %s %s %s --workers %d --save-params '%s'", store, methods[i], train,
                 common, p, pa);
        ck_assert_msg(run(0, args, NULL, &err) == 0, "%s", err);
        free(err);
        snprintf(args, sizeof args, "train '%s' --method %s %s %s --save-params '%s'", sd, methods[i], train, common, pb);
        ck_assert_msg(run(p, args, NULL, &err) == 0, "%s", err);
        free(err);
        same_file(pa, pb, methods[i]);
    }
    snprintf(args, sizeof args, "train '%s' --method incagg %s --epochs 1", sd, train);
    ck_assert_int_eq(run(p + 1, args, NULL, &err), 2);
    ck_assert_msg(strstr(err, "holds shards of a"), "%s", err);
    free(err);
    snprintf(args, sizeof args, "train '%s' --method incagg %s --feature-norm standard --epochs 1", sd, train);
    ck_assert_int_eq(run(p, args, NULL, &err), 2);
    ck_assert_msg(strstr(err, "were not made for --feature-norm standard: the shards were made with --feature-norm "), "%s", err);
    free(err);
    /* another partitioning than the shards' (they carry theirs: it used to train on it quietly);
     * each refusal names the shards' own value and the remedy (it said "this --parts" and to
     * rerun inca shard with five flags, one of them --method full's, which shard has not) */
    snprintf(args, sizeof args, "train '%s' --method incagg %s --partition random-40-s0 --epochs 1", sd, train);
    ck_assert_int_eq(run(p, args, NULL, &err), 2);
    ck_assert_msg(strstr(err, "were not made for --partition random-40-s0: the shards hold "), "%s", err);
    free(err);
    snprintf(args, sizeof args, "train '%s' --method incagg --parts 20 --batch-parts 5 --epochs 1", sd);
    ck_assert_int_eq(run(p, args, NULL, &err), 2);
    ck_assert_msg(strstr(err, "were not made for --parts 20: the shards hold 40 parts (give --parts 40, or run inca shard "
                              "again with --parts 20)"), "%s", err);
    free(err);
    snprintf(args, sizeof args, "train '%s' --method full --epochs 1", sd);
    ck_assert_int_eq(run(p, args, NULL, &err), 2);
    ck_assert_msg(strstr(err, "were not made for --method full: shards hold what the mini-batch methods read"), "%s", err);
    free(err);
}

START_TEST(shards_equal_the_store) {
    shard_case(2, "", "--model gcn");
    char args[4096];   /* shards cut by a ParMETIS partitioning carry it (issue 28) */
    snprintf(args, sizeof args, "partition '%s' --parts 40 --method parmetis --no-layout --quiet", store);
    ck_assert_int_eq(run(2, args, NULL, NULL), 0);
    shard_case(2, "--partition parmetis-40-s0", "--model gcn --partition parmetis-40-s0");
    shard_case(3, "--model sage --history-dtype bf16 --feature-norm row", "--model sage --history-dtype bf16 --feature-norm row");
    /* a set mixing two inca shard runs (one interrupted after some ranks) is refused */
    char s2[1100], cmd[4400];
    snprintf(s2, sizeof s2, "%s/shards-again", dir);
    snprintf(args, sizeof args, "shard '%s' --ranks 2 --out '%s' --parts 40 --partition parmetis-40-s0", store, s2);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s/shards-2/rank-1-of-2.lmdb' && cp -r '%s/rank-1-of-2.lmdb' '%s/shards-2/'", dir, s2, dir);
    ck_assert_int_eq(tu_sh(cmd, NULL, NULL), 0);
    snprintf(args, sizeof args, "train '%s/shards-2' --method incagg --model gcn --partition parmetis-40-s0 --epochs 1 "
             "--loader view", dir);
    refused(2, args, 2, "different inca shard runs");
    snprintf(args, sizeof args, "verify '%s/shards-2'", dir);
    refused(0, args, 2, "comes from another inca shard run");
}
END_TEST

/* A run line's bytes per phase and epoch, every rank's: [rank][phase] */
typedef struct { double b[2][5]; } sc_bytes_t;

static void sc_run_bytes(const cJSON *run, sc_bytes_t *x) {
    static const char *const ph[5] = {"setup", "grad", "refresh", "halo", "eval"};
    const cJSON *pr = tu_json_get(run, "per_rank", cJSON_Array);
    for (int q = 0; q < cJSON_GetArraySize(pr) && q < 2; q++)
        for (int p = 0; p < 5; p++) {
            char k[64];
            snprintf(k, sizeof k, "bytes_%s_per_epoch", ph[p]);
            x->b[q][p] = tu_json_dbl(cJSON_GetArrayItem(pr, q), k);
        }
}

/* The busiest rank's bytes an epoch, every phase but setup (the summary's bytes_per_epoch_max_rank). */
static double sc_busiest(const sc_bytes_t *x, int P) {
    double m = 0;
    for (int q = 0; q < P; q++) {
        double b = 0;
        for (int p = 1; p < 5; p++) b += x->b[q][p];
        m = b > m ? b : m;
    }
    return m;
}

/* bench scale starts itself under mpiexec; a smoke pass: its lines parse, IncAgg's summary
 * compares bytes with GAS, and the model prints both methods per link. The summaries' bytes are
 * the run lines' (busiest rank, setup left out), GAS / IncAgg their quotient; the per-epoch bytes
 * of this 2-epoch run equal the 1-epoch run's on the emulated device below (an epoch moves the same
 * rows: a sum not divided by the epochs would double) */
START_TEST(bench_scale_smoke) {
    char args[16384];
    char *out = NULL, *err = NULL;
    sc_bytes_t rb[2][2];   /* [method: incagg, gas][P - 1] */
    memset(rb, 0, sizeof rb);
    /* --ranks=L restarts itself too (only "--ranks L" did: a job of one process was refused) */
    snprintf(args, sizeof args, "bench scale '%s' --ranks=1,2 --parts 40 --batch-parts 4 --epochs 2 --threads 1 "
             "--model-ranks 4,8 --links 10 --json", store);
    ck_assert_msg(tu_inca(args, &out, &err) == 0, "%s", err);
    cJSON *v[32];
    const int n = tu_json_lines(out, v, 32);
    int runs = 0, summaries = 0, models = 0;
    double eff2 = -1;   /* the model says how far the measured P=2 is from its perfect split */
    const char *cav = strstr(err, "measured here at P=2 (transport included): incagg eff ");
    ck_assert_msg(cav && sscanf(cav + 54, "%lf", &eff2) == 1, "%s", err);
    for (int i = 0; i < n; i++) {
        if (cJSON_GetObjectItem(v[i], "per_rank")) {
            runs++;
            const int P = (int)tu_json_dbl(v[i], "ranks");
            ck_assert_int_eq(cJSON_GetArraySize(tu_json_get(v[i], "per_rank", cJSON_Array)), P);
            sc_run_bytes(v[i], &rb[strcmp(tu_json_get(v[i], "method", cJSON_String)->valuestring, "gas") == 0][P - 1]);
        } else if (cJSON_GetObjectItem(v[i], "summary")) {
            summaries++;
            const int P = (int)tu_json_dbl(v[i], "ranks"), g = strcmp(tu_json_get(v[i], "summary", cJSON_String)->valuestring, "gas") == 0;
            ck_assert_double_eq_tol(tu_json_dbl(v[i], "bytes_per_epoch_max_rank"), sc_busiest(&rb[g][P - 1], P), 0.5);
            if (P == 2 && !g) {
                ck_assert(sc_busiest(&rb[0][1], 2) > 0 && sc_busiest(&rb[1][1], 2) > sc_busiest(&rb[0][1], 2));
                ck_assert_double_eq_tol(tu_json_dbl(v[i], "gas_over_incagg_bytes"), sc_busiest(&rb[1][1], 2) / sc_busiest(&rb[0][1], 2),
                                        1e-9);
                ck_assert_double_eq_tol(eff2, tu_json_dbl(v[i], "speedup") / 2, 0.0051);
            }
        } else if (cJSON_GetObjectItem(v[i], "model")) {
            models++;
            ck_assert_int_eq(cJSON_GetArraySize(tu_json_get(v[i], "links", cJSON_Array)), 1);
        }
    }
    ck_assert_int_eq(runs, 4);        /* incagg and gas at 1 and 2 ranks */
    ck_assert_int_eq(summaries, 4);
    ck_assert_int_eq(models, 2);
    tu_json_free_lines(v, n);
    free(out);
    free(err);
    /* ranks on a device (issue 29): the model adds the host staging, measured in the same run */
    snprintf(args, sizeof args, "bench scale '%s' --ranks 1,2 --parts 40 --batch-parts 4 --epochs 1 --threads 1 "
             "--model-ranks 4 --links 10 --device emu --json", store);
    ck_assert_msg(tu_inca(args, &out, &err) == 0, "%s", err);
    const int n2 = tu_json_lines(out, v, 32);
    models = 0;
    for (int i = 0; i < n2; i++) {
        if (cJSON_GetObjectItem(v[i], "per_rank")) {   /* one epoch: the same bytes an epoch as two */
            const int P = (int)tu_json_dbl(v[i], "ranks"), g = strcmp(tu_json_get(v[i], "method", cJSON_String)->valuestring, "gas") == 0;
            sc_bytes_t one;
            sc_run_bytes(v[i], &one);
            /* GAS's pulls follow the epoch's random batches (their halos differ): its halo within a
             * quarter, a sum left undivided being 2x; every other phase moves the same rows each epoch */
            for (int q = 0; q < P; q++)
                for (int p = 1; p < 5; p++) {
                    const double a = one.b[q][p], b = rb[g][P - 1].b[q][p];
                    ck_assert_msg(a == b || (g && p == 3 && a > 0.75 * b && a < 1.33 * b),
                                  "%s P=%d rank %d phase %d: %g bytes/epoch over 1 epoch, %g over 2", g ? "gas" : "incagg", P, q, p, a, b);
                }
        }
        if (cJSON_GetObjectItem(v[i], "model")) {
            models++;
            ck_assert_str_eq(tu_json_get(v[i], "device", cJSON_String)->valuestring, "emu");
            ck_assert(tu_json_dbl(v[i], "staging_gbs_measured") > 0);
        }
    }
    ck_assert_int_eq(models, 1);
    ck_assert_msg(strstr(err, "host staging measured"), "%s", err);
    tu_json_free_lines(v, n2);
    free(out);
    free(err);
}
END_TEST

/* --model-ranks' arithmetic against the model's definitions (bench_scale.c's header), from its
 * own JSON: with --refresh-source recompute IncAgg moves each halo row once an epoch, GAS the same
 * evaluation halo plus its pulls with an 8-byte id each, so GAS - IncAgg bytes = pulls x (row +
 * 8) and the one-node ceiling adds (cross nonzeros - pulls) x (row + 8), a row being 4 bytes x
 * (layers - 1) x hidden = 64 here; parallel efficiency = the P=1 epoch / (P x the modelled epoch);
 * and the link's rate enters as bytes / bandwidth only (compute, staging and latency cancel
 * between 10 and 100 Gb/s). No timing is asserted: only relations between the printed figures. */
START_TEST(bench_scale_model_by_hand) {
    /* the CPU; then ranks on the emulated device with --grad-reduce nccl, 2 GPUs a node: at P = 2
     * the gradients cross NVLink, at P = 4 the link too, as a ring all-reduce moving 2 (P - 1) / P
     * of them: 4 bytes x the GCN's 1433 x 16 + 16 + 16 x 7 + 7 parameters, a step */
    static const char *const extra[2] = {"--model-ranks 4,8", "--model-ranks 2,4 --device emu --grad-reduce nccl --gpus-per-node 2"};
    const double nparams = 1433.0 * 16 + 16 + 16 * 7 + 7, row = 4.0 * (2 - 1) * 16;
    for (int nccl = 0; nccl <= 1; nccl++) {
        char args[16384];
        char *out = NULL, *err = NULL;
        snprintf(args, sizeof args, "bench scale '%s' --ranks=1 --parts 40 --batch-parts 4 --epochs 1 --threads 1 --model gcn "
                 "--layers 2 --hidden 16 --refresh-source recompute --links 10,100 --json %s", store, extra[nccl]);
        ck_assert_msg(tu_inca(args, &out, &err) == 0, "%s", err);
        cJSON *v[32];
        const int n = tu_json_lines(out, v, 32);
        double t1[2] = {0, 0}, spe = 0;   /* incagg, gas at P = 1 */
        for (int i = 0; i < n; i++)
            if (cJSON_GetObjectItem(v[i], "per_rank") && tu_json_dbl(v[i], "ranks") == 1) {
                const int g = strcmp(tu_json_get(v[i], "method", cJSON_String)->valuestring, "gas") == 0;
                t1[g] = tu_json_dbl(v[i], "epoch_time_s");
                if (!g) spe = tu_json_dbl(v[i], "steps_per_epoch");
            }
        ck_assert(t1[0] > 0 && t1[1] > 0 && spe > 0);
        int models = 0;
        for (int i = 0; i < n; i++) {
            if (!cJSON_GetObjectItem(v[i], "model")) continue;
            models++;
            const double P = tu_json_dbl(v[i], "ranks"), gmax = tu_json_dbl(v[i], "gas_pull_rows_max");
            const double xmax = tu_json_dbl(v[i], "cross_nonzeros_max"), inc = tu_json_dbl(v[i], "incagg_bytes_per_epoch");
            const double by[2] = {inc, tu_json_dbl(v[i], "gas_bytes_per_epoch")};
            const double ceil = tu_json_dbl(v[i], "gas_over_incagg_ceiling") * inc;
            ck_assert(gmax > 0 && xmax >= gmax);
            ck_assert_msg(fabs(by[1] - inc - gmax * (row + 8)) < 1e-6 * inc, "P=%g: GAS %g - IncAgg %g bytes, expected %g pulls x %g",
                          P, by[1], inc, gmax, row + 8);
            ck_assert_msg(fabs(ceil - by[1] - (xmax - gmax) * (row + 8)) < 1e-6 * inc, "P=%g: ceiling %g, GAS %g", P, ceil, by[1]);
            const cJSON *links = tu_json_get(v[i], "links", cJSON_Array);
            ck_assert_int_eq(cJSON_GetArraySize(links), 2);
            double t[2][2];   /* [link][method] */
            for (int l = 0; l < 2; l++) {
                const cJSON *L = cJSON_GetArrayItem(links, l);
                ck_assert_double_eq(tu_json_dbl(L, "gbps"), l ? 100 : 10);
                static const char *const ts[2] = {"incagg_epoch_s", "gas_epoch_s"}, *const es[2] = {"incagg_efficiency", "gas_efficiency"};
                for (int m = 0; m < 2; m++) {
                    t[l][m] = tu_json_dbl(L, ts[m]);
                    ck_assert_msg(t[l][m] >= t1[m] / P + by[m] / ((l ? 100 : 10) * 1e9 / 8) * (1 - 1e-9),
                                  "P=%g: %s %g below compute + bytes", P, ts[m], t[l][m]);
                    ck_assert_msg(fabs(tu_json_dbl(L, es[m]) * P * t[l][m] - t1[m]) < 1e-9 * t1[m],
                                  "P=%g: %s %g of %g s against %g s at P=1", P, es[m], tu_json_dbl(L, es[m]), t[l][m], t1[m]);
                }
            }
            const double ring = nccl && P > 2 ? spe * 4 * nparams * 2 * (P - 1) / P : 0;   /* over the link */
            for (int m = 0; m < 2; m++)
                ck_assert_msg(fabs((t[0][m] - t[1][m]) - (by[m] + ring) * (8 / 10e9 - 8 / 100e9)) < 1e-9 * t[0][m],
                              "%s P=%g method %d: 10 vs 100 Gb/s differ by %g s, bytes say %g", nccl ? "nccl" : "cpu", P, m,
                              t[0][m] - t[1][m], (by[m] + ring) * (8 / 10e9 - 8 / 100e9));
        }
        ck_assert_int_eq(models, 2);
        tu_json_free_lines(v, n);
        free(out);
        free(err);
    }
}
END_TEST

/* The stored partitioning `name` of store `path`: the edge cut counted here from its perm and
 * bounds over the stored graph (independently of the partitioner's count), its largest part
 * and a copy of perm (n entries, malloc'd) */
static int64_t stored_cut(const char *path, const char *name, int64_t *maxp, int64_t **perm) {
    store_t *s = NULL;
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    partition_t p;
    csr_t g = {0};
    ck_assert_msg(store_partition_load(s, name, &p) == INCA_OK, "%s: %s", name, inca_errmsg());
    ck_assert_int_eq(dataset_load_adj(s, &g), INCA_OK);
    int64_t *part = malloc(sizeof *part * (size_t)p.n), cross = 0;
    *maxp = 0;
    for (int64_t q = 0; q < p.k; q++) *maxp = p.bounds[q + 1] - p.bounds[q] > *maxp ? p.bounds[q + 1] - p.bounds[q] : *maxp;
    for (int64_t v = 0; v < p.n; v++) {
        int64_t q = 0;
        while (p.perm[v] >= p.bounds[q + 1]) q++;
        part[v] = q;
    }
    for (int64_t u = 0; u < g.n_rows; u++)
        for (int64_t e = g.rowptr[u]; e < g.rowptr[u + 1]; e++) cross += g.col[e] != u && part[u] != part[g.col[e]];
    *perm = malloc(sizeof **perm * (size_t)p.n);
    memcpy(*perm, p.perm, sizeof **perm * (size_t)p.n);
    free(part);
    partition_free(&p);
    csr_free(&g);
    store_close(&s);
    return cross / 2;
}

static cJSON *inca_json(int p, const char *args) {
    char *out = NULL, *err = NULL;
    ck_assert_msg(run(p, args, &out, &err) == 0, "%s: %s", args, err);
    cJSON *j = tu_json_last(out);
    free(out);
    free(err);
    return j;
}

/* inca ARGS on np ranks (0: one process) fails with exit status code (-1: any but 0) and says want */
static void refused(int np, const char *args, int code, const char *want) {
    char *out = NULL, *err = NULL;
    const int rc = run(np, args, &out, &err);
    ck_assert_msg(code < 0 ? rc != 0 : rc == code, "%s: exit %d", args, rc);
    ck_assert_msg(strstr(err, want) != NULL, "%s", err);
    free(out);
    free(err);
}

/* a result line reruns its configuration, ranks included: `inca train --config RESULT.json` of an
 * mpirun -np 2 result starts itself as 2 ranks (the config's "ranks", --ranks P) and gives the
 * same parameters, as does mpirun -np 2 with it; a job of another size is refused before any work */
START_TEST(config_rerun_keeps_the_ranks) {
    char args[8192], res[1100], p1[1100], p2[1100];
    char *out = NULL, *err = NULL;
    snprintf(res, sizeof res, "%s/r.json", dir);
    snprintf(p1, sizeof p1, "%s/p1.npy", dir);
    snprintf(p2, sizeof p2, "%s/p2.npy", dir);
    snprintf(args, sizeof args, "train '%s' --model gcn --method incagg --parts 40 --batch-parts 5 --epochs 2 --threads 1 "
             "--json --quiet --save-params '%s'", store, p1);
    ck_assert_msg(run(2, args, &out, &err) == 0, "%s", err);
    FILE *f = fopen(res, "w");
    ck_assert(f && fputs(out, f) >= 0 && fclose(f) == 0);
    cJSON *m = tu_json_last(out);
    ck_assert_double_eq(tu_json_dbl(tu_json_get(m, "config", cJSON_Object), "ranks"), 2);
    free(out);
    free(err);
    for (int np = 0; np <= 2; np += 2) {   /* alone (restarting itself as 2 ranks), then under mpirun -np 2 */
        snprintf(args, sizeof args, "train --config '%s' --json --quiet --save-params '%s'", res, p2);
        cJSON *r = inca_json(np, args);
        ck_assert_double_eq(tu_json_dbl(r, "ranks"), 2);
        ck_assert_double_eq(tu_json_dbl(r, "test_acc"), tu_json_dbl(m, "test_acc"));
        same_file(p1, p2, np ? "mpirun -np 2 --config" : "--config alone");
        cJSON_Delete(r);
    }
    cJSON_Delete(m);
    snprintf(args, sizeof args, "train --config '%s' --quiet", res);
    refused(3, args, 2, "--ranks 2 (from --config), but started as 3 ranks");
    snprintf(args, sizeof args, "train '%s' --method incagg --parts 40 --epochs 1 --ranks 3 --quiet", store);
    refused(2, args, 2, "--ranks 3, but started as 2 ranks");
    snprintf(args, sizeof args, "train '%s' --method incagg --parts 40 --epochs 1 --ranks 0 --quiet", store);
    refused(0, args, 2, "--ranks: expected a positive count");
}
END_TEST

/* --workers P are thread ranks inside one process: with several MPI ranks they would do nothing
 * while the config claimed them, so they are refused, typed or from --config */
START_TEST(workers_refused_with_mpi_ranks) {
    char args[8192], res[1100];
    char *out = NULL, *err = NULL;
    snprintf(args, sizeof args, "train '%s' --method incagg --parts 40 --epochs 1 --threads 1 --workers 2 --quiet", store);
    refused(2, args, 2, "--workers 2 under mpirun -np 2: workers are thread ranks inside one process");
    snprintf(args, sizeof args, "train '%s' --method full --parts 40 --epochs 1 --threads 1 --workers 2 --quiet", store);
    refused(2, args, 2, "--workers 2 under mpirun -np 2: workers are thread ranks inside one process");
    snprintf(args, sizeof args, "train '%s' --method incagg --parts 40 --epochs 1 --workers 2 --ranks 2 --quiet", store);
    refused(0, args, 2, "--workers 2 with --ranks 2: workers are thread ranks inside one process");
    snprintf(res, sizeof res, "%s/w.json", dir);
    snprintf(args, sizeof args, "train '%s' --method incagg --parts 40 --epochs 1 --threads 1 --workers 2 --json --quiet "
             "> '%s'", store, res);
    ck_assert_msg(run(0, args, &out, &err) == 0, "%s", err);
    free(out);
    free(err);
    snprintf(args, sizeof args, "train --config '%s' --ranks 2 --quiet", res);
    refused(2, args, 2, "--workers 2 under mpirun -np 2");
}
END_TEST

/* --memory-budget under mpirun bounds each rank's peak anonymous memory: a rank's halo exchange
 * (its plan and the staging of each hidden layer's rows in the view loader's passes; GAS's
 * per-step pulls) is planned with the rest. On a 50k-node graph whose halo is half of it (about
 * 12 MB of staging a rank), at the least budget the refusal names and 16 MB above it, for IncAgg
 * and GAS; one process plans no exchange. */
/* the least budget a refusal names (MB), and its halo exchange's (*halo; -1: not named) */
static double budget_least(int np, const char *args, double *halo) {
    char *out = NULL, *err = NULL;
    ck_assert_int_eq(run(np, args, &out, &err), 2);
    const char *x = strstr(err, "rank's halo exchange "), *least = strstr(err, "raise it to at least ");
    ck_assert_msg(least != NULL, "%s", err);
    *halo = x ? atof(x + strlen("rank's halo exchange ")) : -1;
    const double mb = atof(least + strlen("raise it to at least "));
    free(out);
    free(err);
    return mb;
}

/* Under AddressSanitizer a rank's anonymous memory is the sanitizer's (shadow, quarantined frees),
 * not inca's: the runs go through every path, their peaks are compared in the Release build only
 * (as test_e2e_budget does). The baseline a budget is planned on (the process's anonymous memory
 * at the start) is the sanitizer's too and moves between two runs: session 43's CI saw the probe
 * name 57 MB and the run at 57 MB then need 58 (baseline 18 MB); there the runs get 2 MB over the
 * least named, in Release none. */
#if defined(__SANITIZE_ADDRESS__)
#define RANK_PEAKS_MEASURED 0
#define BASELINE_SLACK_MB 2
#else
#define RANK_PEAKS_MEASURED 1
#define BASELINE_SLACK_MB 0
#endif

START_TEST(memory_budget_bounds_each_rank) {
    char st[1100], args[8192], common[2048];
    snprintf(st, sizeof st, "%s/c50.lmdb", dir);
    snprintf(args, sizeof args, "gen --kind csbm --nodes 50000 --avg-degree 10 --features 32 --classes 4 --homophily 0.6 "
             "--seed 0 --out '%s' --quiet", st);
    ck_assert_int_eq(run(0, args, NULL, NULL), 0);
    snprintf(args, sizeof args, "partition '%s' --parts 16 --quiet", st);
    ck_assert_int_eq(run(0, args, NULL, NULL), 0);
    static const char *const methods[] = {"incagg", "gas"};
    for (int i = 0; i < 2; i++) {
        snprintf(common, sizeof common, "train '%s' --model gcn --layers 3 --hidden 64 --method %s --parts 16 --batch-parts 2 "
                 "--epochs 2 --threads 1 --loader view --quiet --json", st, methods[i]);
        snprintf(args, sizeof args, "%s --memory-budget 1M", common);
        double halo1 = 0, halo = 0;
        if (i == 0) budget_least(0, args, &halo1);   /* one process: no exchange */
        const double least = budget_least(2, args, &halo);
        for (int extra = 0; extra <= 16; extra += 16) {
            const double budget = least + extra + BASELINE_SLACK_MB;
            snprintf(args, sizeof args, "%s --memory-budget %.0fM", common, budget);
            cJSON *j = inca_json(2, args);
            const cJSON *rs = tu_json_get(j, "rank_stats", cJSON_Array), *r;
            ck_assert_int_eq(cJSON_GetArraySize(rs), 2);
            cJSON_ArrayForEach(r, rs) {
                const double peak = tu_json_dbl(r, "peak_rss_anon_mb");
                ck_assert_msg(!RANK_PEAKS_MEASURED || peak <= budget, "%s, --memory-budget %.0fM: rank %g peaked at %.2f MB",
                              methods[i], budget, tu_json_dbl(r, "rank"), peak);
            }
            cJSON_Delete(j);
        }
        ck_assert_msg(halo >= 10 && halo1 == 0, "%s: the halo exchange planned %g MB a rank, %g in one process", methods[i],
                      halo, halo1);
    }
}
END_TEST

/* inca partition --method parmetis (issue 28): under mpirun and restarting itself with --ranks,
 * each rank reading its rows; a valid partitioning whose edge cut recounted here matches the
 * JSON, balanced within 5%, a cut near METIS's and far under random's, the same bits on a
 * second run with the seed, others with another seed; training reads it by name */
START_TEST(parmetis_partition) {
    char a[1100], b[1100], args[4096];
    snprintf(a, sizeof a, "%s/a.lmdb", dir);
    snprintf(b, sizeof b, "%s/b.lmdb", dir);
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "gen --kind csbm --nodes 3000 --avg-degree 12 --features 8 --classes 8 --homophily 0.9 "
                 "--seed 4 --out '%s' --quiet", i ? b : a);
        ck_assert_int_eq(run(0, args, NULL, NULL), 0);
    }
    snprintf(args, sizeof args, "partition '%s' --parts 8 --method parmetis --seed 1 --json --no-layout --quiet", a);
    cJSON *j = inca_json(2, args);
    ck_assert_str_eq(tu_json_get(j, "name", cJSON_String)->valuestring, "parmetis-8-s1-r2");   /* the count named */
    ck_assert_int_eq(cJSON_GetArraySize(tu_json_get(j, "rank_peak_rss_anon_mb", cJSON_Array)), 2);
    int64_t maxp = 0, *pa = NULL, *pb = NULL, *pc = NULL;
    const int64_t cut = stored_cut(a, "parmetis-8-s1-r2", &maxp, &pa);
    ck_assert_int_eq(cut, (int64_t)tu_json_dbl(j, "edge_cut"));
    ck_assert_int_eq(maxp, (int64_t)tu_json_dbl(j, "max_part"));
    ck_assert_msg(maxp <= 3000 / 8 * 105 / 100 + 1, "largest part %lld of 375", (long long)maxp);
    cJSON_Delete(j);
    snprintf(args, sizeof args, "partition '%s' --parts 8 --json --no-layout --quiet", a);
    j = inca_json(0, args);
    const double metis = tu_json_dbl(j, "edge_cut");
    cJSON_Delete(j);
    snprintf(args, sizeof args, "partition '%s' --parts 8 --method random --json --no-layout --quiet", a);
    j = inca_json(0, args);
    const double rnd = tu_json_dbl(j, "edge_cut");
    cJSON_Delete(j);
    ck_assert_msg(cut <= 1.25 * metis && cut <= 0.3 * rnd, "cut %lld, METIS %.0f, random %.0f", (long long)cut, metis, rnd);
    snprintf(args, sizeof args, "partition '%s' --parts 8 --method parmetis --seed 1 --ranks 2 --no-layout --quiet", b);
    char *qerr = NULL;   /* --quiet: not even the launch line (it printed "partition: starting 2 ranks: ...") */
    ck_assert_int_eq(run(0, args, NULL, &qerr), 0);
    ck_assert_msg(qerr && !*qerr, "--quiet printed '%s'", qerr ? qerr : "");
    free(qerr);
    ck_assert_int_eq(stored_cut(b, "parmetis-8-s1-r2", &maxp, &pb), cut);
    ck_assert_mem_eq(pa, pb, sizeof *pa * 3000);
    snprintf(args, sizeof args, "partition '%s' --parts 8 --method parmetis --seed 2 --no-layout --quiet", b);
    ck_assert_int_eq(run(2, args, NULL, NULL), 0);
    stored_cut(b, "parmetis-8-s2-r2", &maxp, &pc);
    ck_assert_msg(memcmp(pa, pc, sizeof *pa * 3000) != 0, "seeds 1 and 2 gave the same partitioning");
    /* inca's own launch needs none of Open MPI's opt-ins set by the user (issue 31: as root, or
     * with more ranks than cores, it failed): cores + 1 ranks, the variables removed */
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char cmd[16384], *err = NULL;
    snprintf(cmd, sizeof cmd, "env -u OMPI_ALLOW_RUN_AS_ROOT -u OMPI_ALLOW_RUN_AS_ROOT_CONFIRM -u OMPI_MCA_rmaps_base_oversubscribe "
             "'%s' partition '%s' --parts 8 --method parmetis --seed 3 --ranks %ld --no-layout", tu_bin(), b, cores + 1);
    ck_assert_msg(tu_sh(cmd, NULL, &err) == 0, "%s", err ? err : "");
    ck_assert_msg(strstr(err, "oversubscribed"), "the launch does not say it oversubscribes: %s", err);
    free(err);
    /* one-process methods refuse ranks; parmetis refuses one process */
    snprintf(args, sizeof args, "partition '%s' --parts 8 --no-layout", a);
    refused(2, args, -1, "runs in one process");
    snprintf(args, sizeof args, "partition '%s' --parts 8 --method parmetis --seed 5 --no-layout", a);
    refused(0, args, 2, "--ranks P");
    snprintf(args, sizeof args, "train '%s' --partition parmetis-8-s1 --method gas --batch-parts 2 --epochs 10 --threads 1 "
             "--json --quiet", a);
    j = inca_json(0, args);
    ck_assert_double_eq(tu_json_dbl(tu_json_get(j, "config", cJSON_Object), "parts"), 8);
    ck_assert(tu_json_dbl(j, "test_acc") > 0.5);   /* chance 0.125; 0.89 when written */
    cJSON_Delete(j);
    /* another rank count is another partitioning, not the stored one reused under its name;
     * then a name without the count is ambiguous and training asks for one */
    snprintf(args, sizeof args, "partition '%s' --parts 8 --method parmetis --seed 1 --json --no-layout --quiet", a);
    j = inca_json(3, args);
    ck_assert_str_eq(tu_json_get(j, "name", cJSON_String)->valuestring, "parmetis-8-s1-r3");
    ck_assert(!cJSON_IsTrue(tu_json_get(j, "reused", cJSON_True | cJSON_False)));
    cJSON_Delete(j);
    snprintf(args, sizeof args, "train '%s' --partition parmetis-8-s1 --method gas --epochs 1 --quiet", a);
    refused(0, args, 2, "parmetis-8-s1-r2 and parmetis-8-s1-r3");
    snprintf(args, sizeof args, "train '%s' --partition parmetis-8-s1-r3 --method gas --epochs 1 --json --quiet", a);
    j = inca_json(0, args);
    ck_assert_double_eq(tu_json_dbl(tu_json_get(j, "config", cJSON_Object), "parts"), 8);
    cJSON_Delete(j);
    /* a directed graph is refused before PT-Scotch, which looped on one (METIS and lp refuse it) */
    char el[1100], dg[1100];
    snprintf(el, sizeof el, "%s/dir.el", dir);
    snprintf(dg, sizeof dg, "%s/dir.lmdb", dir);
    FILE *f = fopen(el, "w");
    for (int i = 0; i < 60; i++) fprintf(f, "%d %d\n", i, (i + 1) % 60);   /* a directed ring */
    fclose(f);
    snprintf(args, sizeof args, "ingest --format edgelist '%s' --out '%s' --quiet", el, dg);
    ck_assert_int_eq(run(0, args, NULL, NULL), 0);
    snprintf(args, sizeof args, "partition '%s' --parts 4 --method parmetis --seed 1 --no-layout --quiet", dg);
    refused(2, args, 2, "needs a symmetric graph");
    /* every rank's verdict is said once, by no rank in particular and without MPI_Abort (each rank
     * printed it, "rank r of 2: ...", and the abort's banner followed; mpiexec's own note on a
     * non-zero exit stays) */
    char *serr = NULL;
    ck_assert_int_eq(run(2, args, NULL, &serr), 2);
    const char *once = strstr(serr, "inca partition: ");
    ck_assert_msg(once && strstr(once, "needs a symmetric graph") && !strstr(once + 1, "inca partition: ") &&
                  !strstr(serr, "rank 1 of 2") && !strstr(serr, "MPI_ABORT"), "%s", serr);
    free(serr);
    free(pa);
    free(pb);
    free(pc);
}
END_TEST

int main(void) {
    char cora[4096];
    snprintf(cora, sizeof cora, "%s/data/cora", tu_src());
    tu_require_or_skip(cora);
    mpiexec = getenv("INCA_MPIEXEC");
    if (!mpiexec || !*mpiexec) {
        fprintf(stderr, "test_mpi: no MPI in this build (INCA_MPIEXEC unset): skipped\n");
        return 77;
    }
    Suite *s = suite_create("mpi");
    TCase *tc = tcase_create("mpirun");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, mpirun_equals_workers_bit_for_bit);
    tcase_add_test(tc, gas_pulls_rows_at_every_rank_boundary);
    tcase_add_test(tc, device_ranks_equal_cpu_ranks);
    tcase_add_test(tc, incagg_sends_only_gradients_between_refreshes);
    tcase_add_test(tc, checkpoints_per_rank_resume_bit_for_bit);
    tcase_add_test(tc, failures_end_the_job_naming_the_rank);
    tcase_add_test(tc, bench_scale_smoke);
    tcase_add_test(tc, shards_equal_the_store);
    tcase_add_test(tc, parmetis_partition);
    suite_add_tcase(s, tc);
    TCase *ranks = tcase_create("ranks");   /* CK_RUN_CASE=ranks runs it alone */
    tcase_add_checked_fixture(ranks, setup, teardown);
    tcase_set_timeout(ranks, 600);
    tcase_add_test(ranks, config_rerun_keeps_the_ranks);
    tcase_add_test(ranks, workers_refused_with_mpi_ranks);
    suite_add_tcase(s, ranks);
    TCase *budget = tcase_create("budget");   /* CK_RUN_CASE=budget runs it alone */
    tcase_add_checked_fixture(budget, setup, teardown);
    tcase_set_timeout(budget, 600);
    tcase_add_test(budget, memory_budget_bounds_each_rank);
    suite_add_tcase(s, budget);
    TCase *slices = tcase_create("slices");   /* CK_RUN_CASE=slices runs it alone; no Cora */
    tcase_add_checked_fixture(slices, setup_dir, teardown);
    tcase_set_timeout(slices, 300);
    tcase_add_test(slices, view_ranks_measure_the_ids_on_their_boundary);
    suite_add_tcase(s, slices);
    TCase *model = tcase_create("model");   /* CK_RUN_CASE=model runs it alone */
    tcase_add_checked_fixture(model, setup, teardown);
    tcase_set_timeout(model, 300);
    tcase_add_test(model, bench_scale_model_by_hand);
    suite_add_tcase(s, model);
    return tu_run_suite(s);
}
