/* Every command that prints JSON, run through the binary on small data, its output read by
 * cJSON (an independent parser): ingest, info, gen, partition, train (full, cluster, gas,
 * incagg; --runs 2 and the --metrics JSON Lines), prune --eval, bench spmm|gen|loader|epoch|
 * pruning, and the 64-layer GCNII bench epoch whose table report once overflowed a fixed buffer.
 * Each output must parse, carry the keys ARCHITECTURE.md documents with their types, and agree
 * with what the test computes itself (counts from the flags, the best epoch from the metrics
 * lines, accuracies as multiples of 1/|test|, times within the measured wall time). */
#include "testutil.h"
#include "core/status.h"
#include "graph/partition.h"
#include "loaders/dataset.h"
#include "loaders/partition_store.h"
#include "loaders/store.h"
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *dir;                     /* made in main(), removed after the suite */
static char g[1024];                  /* csbm store: 600 nodes, 3 classes */
static long g_train, g_test;          /* its split sizes, from `gen --json` */

#define NUM cJSON_Number
#define STR cJSON_String
#define OBJ cJSON_Object
#define ARR cJSON_Array
#define BOOL (cJSON_True | cJSON_False)

typedef struct { const char *key; int type; } key_t_;

static void has_keys(const cJSON *o, const key_t_ *keys) {
    for (int i = 0; keys[i].key; i++) tu_json_get(o, keys[i].key, keys[i].type);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Run `inca <args>` (printf-style), require exit 0, return stdout (free it); *wall_s: seconds. */
static char *run_ok(double *wall_s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *run_ok(double *wall_s, const char *fmt, ...) {
    char *args = NULL, *out = NULL, *err = NULL;
    va_list ap;
    va_start(ap, fmt);
    ck_assert_int_ge(vasprintf(&args, fmt, ap), 0);
    va_end(ap);
    double t0 = now_s();
    int rc = tu_inca(args, &out, &err);
    if (wall_s) *wall_s = now_s() - t0;
    ck_assert_msg(rc == 0, "inca %s -> %d: %s", args, rc, err ? err : "");
    free(args);
    free(err);
    return out;
}

static const key_t_ info_keys[] = {{"nodes", NUM}, {"edges", NUM}, {"features", NUM}, {"classes", NUM},
                                   {"labeled", NUM}, {"splits", OBJ}, {"partitions", ARR}, {"store_bytes", NUM}, {"side_file_bytes", NUM},
                                   {"source", STR}, {"format_version", NUM}, {NULL, 0}};

static void check_splits(const cJSON *o, long tr, long va, long te) {
    const cJSON *s = tu_json_get(o, "splits", OBJ);
    ck_assert_int_eq((long)tu_json_dbl(s, "train"), tr);
    ck_assert_int_eq((long)tu_json_dbl(s, "valid"), va);
    ck_assert_int_eq((long)tu_json_dbl(s, "test"), te);
}

START_TEST(test_ingest_info) {
    char *out = run_ok(NULL, "ingest --format ogb '%s/data/cora' --out '%s/cora' --json", tu_src(), dir);
    cJSON *o = tu_json_last(out);
    has_keys(o, info_keys);
    tu_json_get(o, "format", STR);
    tu_json_get(o, "seconds", NUM);
    ck_assert_int_eq((long)tu_json_dbl(o, "nodes"), 2708);   /* Cora's README */
    ck_assert_int_eq((long)tu_json_dbl(o, "edges"), 10556);
    check_splits(o, 140, 500, 1000);
    cJSON_Delete(o);
    free(out);
    free(run_ok(NULL, "partition '%s/cora' --parts 7 --json", dir));
    out = run_ok(NULL, "info '%s/cora' --json", dir);
    o = tu_json_last(out);
    has_keys(o, info_keys);
    ck_assert_int_eq((long)tu_json_dbl(o, "classes"), 7);
    const cJSON *p = tu_json_get(o, "partitions", ARR);
    ck_assert_int_eq(cJSON_GetArraySize(p), 1);
    ck_assert_str_eq(cJSON_GetArrayItem(p, 0)->valuestring, "metis-7-s0");
    cJSON_Delete(o);
    free(out);
}
END_TEST

/* Facts of a store computed here from its loaded arrays: the edge homophily (labels and graph),
 * and when part is given, that partitioning's undirected edge cut and smallest / largest part
 * (perm[old] = new, part i holding the new ids [bounds[i], bounds[i+1])). */
static double store_homophily(const char *store) {
    dataset_t d;
    ck_assert_int_eq(dataset_load(store, &d), INCA_OK);
    long same = 0;
    for (int64_t u = 0; u < d.n; u++)
        for (int64_t e = d.adj.rowptr[u]; e < d.adj.rowptr[u + 1]; e++) same += d.y[d.adj.col[e]] == d.y[u];
    ck_assert_int_gt(d.adj.nnz, 0);
    const double h = (double)same / (double)d.adj.nnz;
    dataset_free(&d);
    return h;
}
static void store_partition_facts(const char *store, const char *name, long *cut, long *mn, long *mx) {
    dataset_t d;
    ck_assert_int_eq(dataset_load(store, &d), INCA_OK);
    store_t *s = NULL;
    partition_t p;
    ck_assert_int_eq(store_open(store, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(store_partition_load(s, name, &p), INCA_OK);
    store_close(&s);
    ck_assert_int_eq(p.n, d.n);
    int64_t *part = malloc(sizeof *part * (size_t)d.n);
    ck_assert_ptr_nonnull(part);
    for (int64_t u = 0; u < d.n; u++) {
        part[u] = -1;
        for (int64_t i = 0; i < p.k; i++)
            if (p.perm[u] >= p.bounds[i] && p.perm[u] < p.bounds[i + 1]) part[u] = i;
        ck_assert_int_ge(part[u], 0);
    }
    long directed = 0;
    for (int64_t u = 0; u < d.n; u++)
        for (int64_t e = d.adj.rowptr[u]; e < d.adj.rowptr[u + 1]; e++)
            directed += d.adj.col[e] != u && part[d.adj.col[e]] != part[u];
    *cut = directed / 2;   /* the stored graph is symmetric */
    *mn = LONG_MAX;
    *mx = 0;
    for (int64_t i = 0; i < p.k; i++) {
        long sz = 0;
        for (int64_t u = 0; u < d.n; u++) sz += part[u] == i;
        *mn = sz < *mn ? sz : *mn;
        *mx = sz > *mx ? sz : *mx;
    }
    free(part);
    partition_free(&p);
    dataset_free(&d);
}

START_TEST(test_gen_partition) {
    static const key_t_ gen_keys[] = {{"kind", STR}, {"out", STR}, {"nodes", NUM}, {"edges", NUM},
                                      {"features", NUM}, {"classes", NUM}, {"labeled", NUM}, {"splits", OBJ},
                                      {"homophily", NUM}, {"seed", NUM}, {"peak_rss_mb", NUM}, {NULL, 0}};
    char *out = run_ok(NULL, "gen --kind csbm --nodes 500 --avg-degree 6 --features 8 --classes 4 --seed 3 --out '%s/g2' --json", dir);
    cJSON *o = tu_json_last(out);
    has_keys(o, gen_keys);
    ck_assert_int_eq((long)tu_json_dbl(o, "nodes"), 500);
    ck_assert_int_eq((long)tu_json_dbl(o, "classes"), 4);
    const cJSON *s = tu_json_get(o, "splits", OBJ);
    ck_assert_int_eq((long)(tu_json_dbl(s, "train") + tu_json_dbl(s, "valid") + tu_json_dbl(s, "test")), 500);
    char g2[1100];
    snprintf(g2, sizeof g2, "%s/g2", dir);
    const double h = tu_json_dbl(o, "homophily"), hs = store_homophily(g2);
    ck_assert_msg(fabs(h - hs) < 1e-12, "gen reports homophily %.17g, the store's graph has %.17g", h, hs);
    cJSON_Delete(o);
    free(out);
    static const key_t_ part_keys[] = {{"name", STR}, {"method", STR}, {"parts", NUM}, {"seed", NUM}, {"nodes", NUM},
                                       {"edge_cut", NUM}, {"min_part", NUM}, {"max_part", NUM},
                                       {"partition_time_s", NUM}, {"total_time_s", NUM}, {"reused", BOOL}, {NULL, 0}};
    double cut = -1;
    long want_cut = -1, want_min = -1, want_max = -1;
    for (int pass = 0; pass < 2; pass++) {   /* computed, then reused from the store */
        out = run_ok(NULL, "partition '%s/g2' --parts 5 --json", dir);
        o = tu_json_last(out);
        has_keys(o, part_keys);
        ck_assert_str_eq(tu_json_get(o, "name", STR)->valuestring, "metis-5-s0");
        ck_assert_int_eq((long)tu_json_dbl(o, "parts"), 5);
        ck_assert_int_eq((long)tu_json_dbl(o, "nodes"), 500);
        if (pass == 0) store_partition_facts(g2, "metis-5-s0", &want_cut, &want_min, &want_max);
        ck_assert_int_eq((long)tu_json_dbl(o, "edge_cut"), want_cut);
        ck_assert_int_eq((long)tu_json_dbl(o, "min_part"), want_min);
        ck_assert_int_eq((long)tu_json_dbl(o, "max_part"), want_max);
        ck_assert(cJSON_IsTrue(tu_json_get(o, "reused", BOOL)) == (pass == 1));
        if (pass) ck_assert(tu_json_dbl(o, "edge_cut") == cut);
        cut = tu_json_dbl(o, "edge_cut");
        cJSON_Delete(o);
        free(out);
    }
}
END_TEST

/* train with each method, 2 runs of 4 epochs, --metrics: the result line against the metrics
 * lines (the best epoch is the highest validation accuracy, then the lowest loss, then the
 * first; its test accuracy is the run's), accuracies are k/|test|, times fit the wall time. */
static const char *const methods[4] = {"full", "cluster", "gas", "incagg"};

START_TEST(test_train) {
    static const key_t_ keys[] = {{"test_acc", NUM}, {"test_acc_std", NUM}, {"val_acc", NUM}, {"val_acc_std", NUM},
                                  {"best_epoch", NUM}, {"epochs", NUM}, {"epoch_time_s", NUM}, {"step_time_s", NUM},
                                  {"refresh_time_s", NUM}, {"eval_time_s", NUM}, {"peak_rss_mb", NUM}, {"method", STR},
                                  {"model", STR}, {"device", STR}, {"runs", NUM}, {"seed", NUM}, {"run_test_acc", ARR},
                                  {"config", OBJ}, {"version", STR}, {"peak_rss_anon_mb", NUM}, {"peak_rss_file_mb", NUM},
                                  {"steps_per_epoch", NUM}, {"train_time_per_epoch_s", NUM}, {"parameters", NUM},
                                  {"metric", STR}, {"test_balanced_acc", NUM}, {"test_macro_f1", NUM},
                                  {"val_balanced_acc", NUM}, {"val_macro_f1", NUM}, {NULL, 0}};
    static const key_t_ mkeys[] = {{"run", NUM}, {"epoch", NUM}, {"train_loss", NUM}, {"train_acc", NUM}, {"val_loss", NUM},
                                   {"val_acc", NUM}, {"test_acc", NUM}, {"epoch_time_s", NUM}, {"val_balanced_acc", NUM},
                                   {"val_macro_f1", NUM}, {"test_balanced_acc", NUM}, {"test_macro_f1", NUM}, {NULL, 0}};
    const char *m = methods[_i];
    double wall;
    char *out = run_ok(&wall, "train '%s' --model gcn --method %s --parts 8 --batch-parts 2 --epochs 4 --runs 2 "
                              "--hidden 8 --metrics '%s/m-%s.jsonl' --json", g, m, dir, m);
    cJSON *o = tu_json_last(out);
    has_keys(o, keys);
    ck_assert_str_eq(tu_json_get(o, "method", STR)->valuestring, m);
    ck_assert_int_eq((int)tu_json_dbl(o, "runs"), 2);
    /* memory by kind: each peak is resident memory, so within the process's peak (sampled: a
     * lower bound), and the anonymous part holds at least the model and the data */
    const double rss = tu_json_dbl(o, "peak_rss_mb"), anon = tu_json_dbl(o, "peak_rss_anon_mb"),
                 file = tu_json_dbl(o, "peak_rss_file_mb");
    ck_assert_msg(anon > 1 && anon <= rss + 1 && file >= 0 && file <= rss + 1, "rss %g anon %g file %g", rss, anon, file);
    ck_assert_int_eq((int)tu_json_dbl(o, "epochs"), 4);
    /* the resolved flags: those given, and defaults for the rest */
    const cJSON *cfg = tu_json_get(o, "config", OBJ);
    ck_assert_str_eq(tu_json_get(cfg, "method", STR)->valuestring, m);
    ck_assert_int_eq((int)tu_json_dbl(cfg, "hidden"), 8);
    ck_assert_int_eq((int)tu_json_dbl(cfg, "batch-parts"), 2);
    ck_assert_int_eq((int)tu_json_dbl(cfg, "layers"), 2);
    ck_assert_double_eq(tu_json_dbl(cfg, "lr"), 0.01);
    ck_assert_str_eq(tu_json_get(cfg, "history-dtype", STR)->valuestring, "fp32");
    /* the run's outputs are not settings: a rerun from the result must not overwrite them */
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(cfg, "metrics"));
    const cJSON *runs = tu_json_get(o, "run_test_acc", ARR);
    ck_assert_int_eq(cJSON_GetArraySize(runs), 2);
    double a0 = cJSON_GetArrayItem(runs, 0)->valuedouble, a1 = cJSON_GetArrayItem(runs, 1)->valuedouble;
    ck_assert_double_eq_tol(tu_json_dbl(o, "test_acc"), (a0 + a1) / 2, 1e-12);
    ck_assert_double_eq_tol(tu_json_dbl(o, "test_acc_std"), fabs(a0 - a1) / sqrt(2.0), 1e-12);   /* sample std */
    for (int r = 0; r < 2; r++) {   /* a fraction of the test nodes */
        double k = (r ? a1 : a0) * (double)g_test;
        ck_assert_msg(fabs(k - round(k)) < 1e-6, "%s run %d: test acc %.17g is not k/%ld", m, r, r ? a1 : a0, g_test);
    }
    /* an epoch holds at least one step; all epochs of both runs fit in the process's wall time */
    double ep = tu_json_dbl(o, "epoch_time_s");
    ck_assert_msg(ep >= tu_json_dbl(o, "step_time_s") && ep > 0, "%s: epoch %.3g s < step %.3g s", m, ep, tu_json_dbl(o, "step_time_s"));
    /* the units: step_time_s is one optimiser step, an epoch's steps fit in the epoch */
    const double spe = tu_json_dbl(o, "steps_per_epoch"), tpe = tu_json_dbl(o, "train_time_per_epoch_s");
    ck_assert_int_eq((int)spe, strcmp(m, "full") == 0 ? 1 : 4);   /* 8 parts, 2 per batch */
    ck_assert_double_eq_tol(tpe, spe * tu_json_dbl(o, "step_time_s"), 1e-12 * (1 + tpe));
    ck_assert_msg(tpe <= ep * 1.0001, "%s: an epoch's steps %.3g s exceed the epoch %.3g s", m, tpe, ep);
    ck_assert_msg(ep * 4 * 2 <= wall, "%s: 8 epochs of %.3g s exceed the wall time %.3g s", m, ep, wall);
    if (strcmp(m, "incagg") == 0) ck_assert(tu_json_dbl(o, "refresh_time_s") > 0);
    else ck_assert(tu_json_dbl(o, "refresh_time_s") == 0);
    /* the mini-batch methods name their variant and report their operator's memory */
    if (strcmp(m, "incagg") == 0) ck_assert_str_eq(tu_json_get(o, "refresh_source", STR)->valuestring, "recompute");
    if (strcmp(m, "cluster") == 0) ck_assert_str_eq(tu_json_get(o, "cluster_norm", STR)->valuestring, "batch");
    if (strcmp(m, "full") != 0) {
        const int history = strcmp(m, "cluster") != 0;   /* cluster keeps no history and needs no scratch */
        ck_assert((tu_json_dbl(o, "scratch_bytes") > 0) == history);
        ck_assert((tu_json_dbl(o, "table_bytes") > 0) == history);
    } else ck_assert(tu_json_dbl(o, "table_bytes") == 0);   /* the contract's key, no tables */

    char path[2048], *text = NULL;
    snprintf(path, sizeof path, "cat '%s/m-%s.jsonl'", dir, m);
    ck_assert_int_eq(tu_sh(path, &text, NULL), 0);
    cJSON *lines[16];
    int n = tu_json_lines(text, lines, 16);
    ck_assert_int_eq(n, 8);
    for (int r = 0; r < 2; r++) {
        int best = -1;
        double bva = 0, bvl = 0;
        for (int e = 0; e < 4; e++) {
            const cJSON *l = lines[r * 4 + e];
            has_keys(l, mkeys);
            ck_assert_int_eq((int)tu_json_dbl(l, "run"), r);
            ck_assert_int_eq((int)tu_json_dbl(l, "epoch"), e);
            double va = tu_json_dbl(l, "val_acc"), vl = tu_json_dbl(l, "val_loss");
            if (best < 0 || va > bva || (va == bva && vl < bvl)) { best = e; bva = va; bvl = vl; }
        }
        ck_assert_msg(tu_json_dbl(lines[r * 4 + best], "test_acc") == (r ? a1 : a0),
                      "%s run %d: best epoch %d of the metrics has test acc %.17g, the result %.17g", m, r, best,
                      tu_json_dbl(lines[r * 4 + best], "test_acc"), r ? a1 : a0);
        if (r == 1) ck_assert_int_eq((int)tu_json_dbl(o, "best_epoch"), best);   /* the last run's */
    }
    tu_json_free_lines(lines, n);
    free(text);
    cJSON_Delete(o);
    free(out);
}
END_TEST

static void write_text(const char *path, const char *a, const char *b) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(a, f);
    if (b) fputs(b, f);
    fclose(f);
}

static int count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    int n = 0, ch;
    if (!f) return -1;
    while ((ch = fgetc(f)) != EOF) n += ch == '\n';
    fclose(f);
    return n;
}

static int same_bytes(const char *a, const char *b) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return tu_sh(cmd, NULL, NULL) == 0;
}

/* --metric macro_f1 picks the epoch of the highest validation macro F1 (ties: lower validation
 * loss, then the earlier epoch), as the metrics file shows, and reports that epoch's figures. */
START_TEST(test_train_metric_selects) {
    char *out = run_ok(NULL, "train '%s' --model gcn --method full --epochs 12 --hidden 8 --threads 1 --metric macro_f1 "
                             "--metrics '%s/mf.jsonl' --json", g, dir);
    cJSON *o = tu_json_last(out);
    free(out);
    ck_assert_str_eq(tu_json_get(o, "metric", STR)->valuestring, "macro_f1");
    char cmd[2048], *text = NULL;
    snprintf(cmd, sizeof cmd, "cat '%s/mf.jsonl'", dir);
    ck_assert_int_eq(tu_sh(cmd, &text, NULL), 0);
    cJSON *l[16];
    const int n = tu_json_lines(text, l, 16);
    ck_assert_int_eq(n, 12);
    int best = -1;
    double bf = 0, bl = 0;
    for (int e = 0; e < n; e++) {
        const double f = tu_json_dbl(l[e], "val_macro_f1"), vl = tu_json_dbl(l[e], "val_loss");
        if (best < 0 || f > bf || (f == bf && vl < bl)) { best = e; bf = f; bl = vl; }
    }
    ck_assert_int_eq((int)tu_json_dbl(o, "best_epoch"), best);
    ck_assert_double_eq(tu_json_dbl(o, "test_macro_f1"), tu_json_dbl(l[best], "test_macro_f1"));
    ck_assert_double_eq(tu_json_dbl(o, "test_acc"), tu_json_dbl(l[best], "test_acc"));
    ck_assert_double_eq(tu_json_dbl(o, "val_macro_f1"), bf);
    tu_json_free_lines(l, n);
    free(text);
    cJSON_Delete(o);
}
END_TEST

/* A result reruns itself: --config RESULT.json gives the same configuration (the "config"
 * objects equal) and the same numbers bit for bit; flags on the command line win; --quiet
 * leaves stderr empty; the version is --version's. */
START_TEST(test_train_config_rerun) {
    char *out = NULL, *err = NULL, args[8192], res[1100], p1[1100], p2[1100];
    snprintf(res, sizeof res, "%s/res.json", dir);
    snprintf(p1, sizeof p1, "%s/p1.npy", dir);
    snprintf(p2, sizeof p2, "%s/p2.npy", dir);
    snprintf(args, sizeof args, "train '%s' --model sage --method incagg --parts 8 --batch-parts 2 --epochs 3 --hidden 8 "
             "--threads 1 --seed 3 --dropout 0.3 --wd-first-layer --save-params '%s' --json --quiet", g, p1);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    ck_assert_msg(err == NULL || err[0] == '\0', "--quiet printed: %s", err);
    free(err);
    /* the result after some other JSON line (a metrics file's, say): the last line with a config counts */
    write_text(res, "{\"run\":0,\"epoch\":0}\n", out);
    cJSON *o1 = tu_json_last(out);
    free(out);
    out = run_ok(NULL, "train --config '%s' --save-params '%s' --json", res, p2);
    cJSON *o2 = tu_json_last(out);
    free(out);
    ck_assert(cJSON_Compare(tu_json_get(o1, "config", OBJ), tu_json_get(o2, "config", OBJ), 1));
    ck_assert_double_eq(tu_json_dbl(o1, "test_acc"), tu_json_dbl(o2, "test_acc"));
    ck_assert_msg(same_bytes(p1, p2), "the rerun's parameters differ");
    /* the command line overrides the file */
    out = run_ok(NULL, "train --config '%s' --epochs 2 --json", res);
    cJSON *o3 = tu_json_last(out);
    free(out);
    const cJSON *c3 = tu_json_get(o3, "config", OBJ);
    ck_assert_int_eq((int)tu_json_dbl(c3, "epochs"), 2);
    ck_assert_int_eq((int)tu_json_dbl(c3, "hidden"), 8);
    ck_assert_str_eq(tu_json_get(c3, "model", STR)->valuestring, "sage");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c3, "wd-first-layer")));
    /* a seed past 2^53 (a double's exact integers) reruns as given: the config holds it as a
     * string (it came back 12345678901234568; INT64_MAX was refused) */
    char rs[1100], p3[1100], p4[1100];
    snprintf(rs, sizeof rs, "%s/res-seed.json", dir);
    snprintf(p3, sizeof p3, "%s/p3.npy", dir);
    snprintf(p4, sizeof p4, "%s/p4.npy", dir);
    const char *seeds[] = {"12345678901234567", "9223372036854775807"};
    for (int k = 0; k < 2; k++) {
        out = run_ok(NULL, "train '%s' --epochs 2 --hidden 8 --threads 1 --seed %s --metrics '%s/ms.jsonl' --save-params '%s' "
                     "--json --quiet", g, seeds[k], dir, p3);
        write_text(rs, "", out);
        cJSON *o4 = tu_json_last(out);
        free(out);
        ck_assert_str_eq(tu_json_get(tu_json_get(o4, "config", OBJ), "seed", STR)->valuestring, seeds[k]);
        cJSON_Delete(o4);
        out = run_ok(NULL, "train --config '%s' --save-params '%s' --json", rs, p4);
        free(out);
        ck_assert_msg(same_bytes(p3, p4), "seed %s: the rerun's parameters differ", seeds[k]);
    }
    /* the rerun did not touch the first run's metrics file (2 epochs: 2 lines) */
    snprintf(args, sizeof args, "%s/ms.jsonl", dir);
    ck_assert_int_eq(count_lines(args), 2);
    /* --config of a folder, and an empty --flag=, are usage errors naming the flag (exit 2) */
    for (int k = 0; k < 2; k++) {
        if (k == 0) snprintf(args, sizeof args, "train --config '%s'", dir);
        else snprintf(args, sizeof args, "train '%s' --save-params=", g);
        err = NULL;
        ck_assert_int_eq(tu_inca(args, NULL, &err), 2);
        ck_assert_msg(err && strstr(err, k ? "--save-params expects a value" : "not a file"), "%s", err ? err : "");
        free(err);
    }
    /* another method over the same file: its IncAgg-only keys (refresh, refresh-source, ...) are
     * the record of a run, not the user's choices, so they are not refused as flags without
     * effect; given on the command line they are */
    out = run_ok(NULL, "train --config '%s' --method gas --epochs 1 --json", res);
    free(out);
    snprintf(args, sizeof args, "train --config '%s' --method gas --refresh 2", res);
    err = NULL;
    ck_assert_int_eq(tu_inca(args, NULL, &err), 2);
    ck_assert_msg(err && strstr(err, "--refresh: no effect with --method gas"), "%s", err ? err : "");
    free(err);
    ck_assert_int_eq((int)tu_json_dbl(o3, "epochs"), 2);
    /* the version names the build */
    out = run_ok(NULL, "--version");
    char want[256];
    snprintf(want, sizeof want, "inca %s\n", tu_json_get(o1, "version", STR)->valuestring);
    ck_assert_str_eq(out, want);
    free(out);
    cJSON_Delete(o1);
    cJSON_Delete(o2);
    cJSON_Delete(o3);
    /* a key that is no flag of train, and a file without a config, are refused naming them */
    write_text(res, "{\"config\":{\"store\":\"x\",\"bogus\":1}}\n", NULL);
    snprintf(args, sizeof args, "train --config '%s'", res);
    ck_assert_int_eq(tu_inca(args, &out, &err), 2);
    ck_assert_msg(strstr(err, "'bogus' is not a flag of inca train"), "%s", err);
    free(out);
    free(err);
    write_text(res, "{\"test_acc\":1}\n", NULL);
    ck_assert_int_eq(tu_inca(args, &out, &err), 2);
    ck_assert_msg(strstr(err, "no JSON line with a \"config\""), "%s", err);
    free(out);
    free(err);
}
END_TEST

START_TEST(test_prune_eval) {
    static const key_t_ keys[] = {{"pool", NUM}, {"labeled", NUM}, {"kept", NUM}, {"pseudo_label_acc", NUM}, {"score", STR},
                                  {"select", STR}, {"keep", NUM}, {"coreset_acc", NUM}, {"coreset_acc_std", NUM},
                                  {"random_acc", NUM}, {"random_acc_std", NUM}, {"full_acc", NUM}, {"full_acc_std", NUM},
                                  {"runs", NUM}, {"seconds", OBJ}, {"peak_rss_mb", NUM}, {NULL, 0}};
    double wall;
    char *out = run_ok(&wall, "prune '%s' --labeled 0.1 --proxy-epochs 3 --proxy-hidden 16 --eval --epochs 5 --hidden 8 "
                              "--keep 0.5 --runs 2 --no-save-dynamics --json", g);
    cJSON *o = tu_json_last(out);
    has_keys(o, keys);
    ck_assert_int_eq((long)tu_json_dbl(o, "pool"), g_train);
    ck_assert_int_eq((long)tu_json_dbl(o, "kept"), g_train / 2);
    ck_assert_int_eq((long)tu_json_dbl(o, "labeled"), (long)ceil(0.1 * (double)g_train - 1e-9));
    const char *acc[3] = {"coreset_acc", "random_acc", "full_acc"};
    for (int i = 0; i < 3; i++) {
        double a = tu_json_dbl(o, acc[i]);
        ck_assert(a >= 0 && a <= 1);
    }
    /* the stages are disjoint parts of the run: their sum is within the total, the total
     * within the wall time */
    static const char *const stages[] = {"load", "labeled", "check", "knn", "spread", "proxy", "score", "select", "write", "eval", NULL};
    const cJSON *sec = tu_json_get(o, "seconds", OBJ);
    double sum = 0, total = tu_json_dbl(sec, "total");
    for (int i = 0; stages[i]; i++) sum += tu_json_dbl(sec, stages[i]);
    ck_assert_msg(sum <= total * 1.001 + 1e-4 && total <= wall, "stages %.4f s, total %.4f s, wall %.4f s", sum, total, wall);
    /* --config reruns it: the same config and the same numbers; a flag given wins */
    char res[1100];
    snprintf(res, sizeof res, "%s/prune.json", dir);
    write_text(res, out, NULL);
    const cJSON *c1 = tu_json_get(o, "config", OBJ);
    ck_assert_str_eq(tu_json_get(c1, "store", STR)->valuestring, g);
    ck_assert_str_eq(tu_json_get(c1, "keep", STR)->valuestring, "0.5");   /* a list of budgets: text */
    ck_assert_double_eq(tu_json_dbl(c1, "proxy-epochs"), 3);
    ck_assert_str_eq(tu_json_get(c1, "ssl", STR)->valuestring, "auto");   /* a default, resolved */
    /* --knn K|exact|faiss|auto resolves both flags (a look at --knn's form recorded null) */
    ck_assert_double_eq(tu_json_dbl(c1, "knn"), 10);
    ck_assert_str_eq(tu_json_get(c1, "knn-search", STR)->valuestring, "auto");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c1, "eval")));
    tu_json_get(o, "version", STR);
    free(out);
    out = run_ok(NULL, "prune --config '%s' --json", res);
    cJSON *o2 = tu_json_last(out);
    ck_assert(cJSON_Compare(c1, tu_json_get(o2, "config", OBJ), 1));
    for (int i = 0; i < 3; i++) ck_assert_double_eq(tu_json_dbl(o, acc[i]), tu_json_dbl(o2, acc[i]));
    ck_assert_double_eq(tu_json_dbl(o, "kept"), tu_json_dbl(o2, "kept"));
    cJSON_Delete(o2);
    free(out);
    out = run_ok(NULL, "prune --config '%s' --keep 0.25 --json", res);
    o2 = tu_json_last(out);
    ck_assert_int_eq((long)tu_json_dbl(o2, "kept"), g_train / 4);
    ck_assert_str_eq(tu_json_get(tu_json_get(o2, "config", OBJ), "keep", STR)->valuestring, "0.25");
    cJSON_Delete(o2);
    free(out);
    out = run_ok(NULL, "prune --config '%s' --knn exact --json", res);
    o2 = tu_json_last(out);
    ck_assert_str_eq(tu_json_get(tu_json_get(o2, "config", OBJ), "knn", STR)->valuestring, "exact");
    ck_assert_str_eq(tu_json_get(tu_json_get(o2, "config", OBJ), "knn-search", STR)->valuestring, "exact");
    cJSON_Delete(o2);
    cJSON_Delete(o);
    free(out);
}
END_TEST

START_TEST(test_bench_spmm_gen) {
    char *out = run_ok(NULL, "bench spmm --nodes 2000 --avg-degree 8 --features 4,8 --reps 1 --parts 8 --json");
    cJSON *v[16];
    int n = tu_json_lines(out, v, 16);
    ck_assert_int_ge(n, 2);
    for (int i = 0; i < n; i++) ck_assert_str_eq(tu_json_get(v[i], "bench", STR)->valuestring, "spmm");
    const cJSON *s = v[n - 1];
    ck_assert_int_eq((long)tu_json_dbl(s, "nodes"), 2000);
    tu_json_get(s, "target_spmm_ge_70pct_gather", BOOL);
    int arrays = 0;
    for (const cJSON *c = s->child; c; c = c->next)
        if (cJSON_IsArray(c)) {
            ck_assert_msg(cJSON_GetArraySize(c) == 2, "%s: one value per width", c->string);   /* --features 4,8 */
            arrays++;
        }
    ck_assert_int_gt(arrays, 0);
    tu_json_free_lines(v, n);
    free(out);
    static const key_t_ keys[] = {{"bench", STR}, {"nodes", NUM}, {"edges", NUM}, {"features", NUM}, {"gen_s", NUM},
                                  {"write_s", NUM}, {"total_s", NUM}, {"peak_rss_mb", NUM}, {"store_bytes", NUM}, {NULL, 0}};
    out = run_ok(NULL, "bench gen --nodes 3000 --avg-degree 4 --features 4 --out '%s'", dir);
    cJSON *o = tu_json_last(out);
    has_keys(o, keys);
    ck_assert_int_eq((long)tu_json_dbl(o, "nodes"), 3000);
    ck_assert(tu_json_dbl(o, "store_bytes") >= 3000.0 * 4 * 4);   /* at least the features */
    cJSON_Delete(o);
    free(out);
}
END_TEST

START_TEST(test_bench_loader) {
    static const key_t_ keys[] = {{"method", STR}, {"nodes", NUM}, {"parts", NUM}, {"batch_parts", NUM}, {"steps", NUM},
                                  {"wait_fraction", NUM}, {"step_time_s", NUM}, {"step_time_sync_s", NUM},
                                  {"build_time_per_batch_s", NUM}, {"loader_bytes", NUM}, {"store_bytes", NUM},
                                  {"read_warm_gbs", NUM}, {"load_warm_s", NUM}, {"evicted", BOOL}, {"read_cold_gbs", NUM},
                                  {"load_cold_s", NUM}, {"load_over_read_cold", NUM}, {NULL, 0}};
    char *out = run_ok(NULL, "bench loader '%s' --method gas --parts 8 --batch-parts 3 --epochs 2 --cold --json", g);
    cJSON *o = tu_json_last(out);
    has_keys(o, keys);
    /* the file read is the store itself: at least its meta and arrays */
    ck_assert(tu_json_dbl(o, "store_bytes") >= 4096 && tu_json_dbl(o, "load_cold_s") > 0);
    ck_assert_int_eq((long)tu_json_dbl(o, "steps"), 2 * 3);   /* 2 epochs of ceil(8 / 3) batches */
    double w = tu_json_dbl(o, "wait_fraction");
    ck_assert(w >= 0 && w <= 1);
    cJSON_Delete(o);
    free(out);
}
END_TEST

/* One bench epoch line per run: the per-block table report sums to table_bytes (the whole
 * object is there), refreshes come from the epochs and the period. */
static void check_epoch_run(const cJSON *l, const char *method, int epochs, int refreshes) {
    static const key_t_ keys[] = {{"method", STR}, {"epochs", NUM}, {"timed_epochs", NUM}, {"steps_per_epoch", NUM},
                                  {"epoch_time_s", NUM}, {"step_time_per_epoch_s", NUM}, {"refresh_time_per_epoch_s", NUM},
                                  {"refreshes", NUM}, {"test_acc", NUM}, {"table_bytes", NUM}, {"scratch_bytes", NUM}, {"tables", OBJ},
                                  {"peak_rss_mb", NUM}, {NULL, 0}};
    has_keys(l, keys);
    ck_assert_str_eq(tu_json_get(l, "method", STR)->valuestring, method);
    ck_assert_int_eq((int)tu_json_dbl(l, "timed_epochs"), epochs);
    ck_assert_int_eq((int)tu_json_dbl(l, "refreshes"), refreshes);
    double sum = 0;
    int n = 0;
    for (const cJSON *c = tu_json_get(l, "tables", OBJ)->child; c; c = c->next, n++) {
        ck_assert(cJSON_IsNumber(c) && c->valuedouble > 0);
        sum += c->valuedouble;
    }
    /* the arena's blocks are the history tables and the operator's scratch */
    ck_assert_msg(sum == tu_json_dbl(l, "table_bytes") + tu_json_dbl(l, "scratch_bytes"), "%s: %d blocks, %.0f bytes of %.0f + %.0f",
                  method, n, sum, tu_json_dbl(l, "table_bytes"), tu_json_dbl(l, "scratch_bytes"));
    if (strcmp(method, "cluster") == 0) ck_assert_int_eq(n, 0);   /* no history */
    else ck_assert_int_gt(n, 0);
}

START_TEST(test_bench_epoch) {
    char *out = run_ok(NULL, "bench epoch '%s' --methods cluster,gas,incagg --parts 8 --batch-parts 2 --epochs 4 "
                             "--refresh-epochs 1,2 --hidden 8 --json", g);
    cJSON *v[8];
    int n = tu_json_lines(out, v, 8);
    ck_assert_int_eq(n, 5);   /* cluster, gas, incagg R=1, incagg R=2, summary */
    check_epoch_run(v[0], "cluster", 4, 0);
    check_epoch_run(v[1], "gas", 4, 0);
    check_epoch_run(v[2], "incagg", 4, 4);
    check_epoch_run(v[3], "incagg", 4, 2);
    for (int i = 0; i < 4; i++) ck_assert_int_eq((int)tu_json_dbl(v[i], "steps_per_epoch"), 4);
    static const key_t_ keys[] = {{"nodes", NUM}, {"edges", NUM}, {"model", STR}, {"layers", NUM}, {"epochs", NUM},
                                  {"parts", NUM}, {"eval_each_epoch", BOOL}, {"speedup", NUM}, {"acc_gap", NUM},
                                  {"speedup_r1", NUM}, {"speedup_r2", NUM}, {"acc_gap_r2", NUM}, {"speedup_ceiling", NUM},
                                  {NULL, 0}};
    has_keys(v[4], keys);
    /* the summary's step and refresh times are one step's and one refresh's, as the runs' lines
     * say (they were an epoch's: 4 steps) */
    ck_assert_double_eq(tu_json_dbl(v[4], "gas_step_time_s"), tu_json_dbl(v[1], "step_time_s"));
    ck_assert_double_eq(tu_json_dbl(v[4], "gas_step_time_per_epoch_s"), tu_json_dbl(v[1], "step_time_per_epoch_s"));
    ck_assert_double_eq(tu_json_dbl(v[4], "incagg_step_time_s"), tu_json_dbl(v[2], "step_time_s"));
    ck_assert_double_eq(tu_json_dbl(v[4], "incagg_refresh_time_s"), tu_json_dbl(v[2], "refresh_time_s"));
    /* --config reruns it: the summary's config and accuracies again */
    char res[1100];
    snprintf(res, sizeof res, "%s/epoch.json", dir);
    write_text(res, out, NULL);
    free(out);
    const cJSON *c1 = tu_json_get(v[4], "config", OBJ);
    ck_assert_str_eq(tu_json_get(c1, "refresh-epochs", STR)->valuestring, "1,2");
    ck_assert_str_eq(tu_json_get(c1, "refresh-eval", STR)->valuestring, "fused");
    out = run_ok(NULL, "bench epoch --config '%s' --json", res);
    cJSON *w[8];
    int m = tu_json_lines(out, w, 8);
    ck_assert_int_eq(m, 5);
    ck_assert(cJSON_Compare(c1, tu_json_get(w[4], "config", OBJ), 1));
    for (int i = 0; i < 4; i++) ck_assert_double_eq(tu_json_dbl(v[i], "test_acc"), tu_json_dbl(w[i], "test_acc"));
    tu_json_free_lines(w, m);
    tu_json_free_lines(v, n);
    free(out);
}
END_TEST

/* The case issue 10 found: 64 GCNII layers gave a table report longer than 1024 bytes, cut off
 * mid-key, and an invalid line. */
START_TEST(test_bench_epoch_gcnii_64) {
    char *out = run_ok(NULL, "bench epoch '%s' --model gcnii --layers 64 --parts 8 --batch-parts 4 --epochs 1 --hidden 8 --json", g);
    cJSON *v[4];
    int n = tu_json_lines(out, v, 4);
    ck_assert_int_eq(n, 3);   /* gas, incagg, summary */
    check_epoch_run(v[0], "gas", 1, 0);
    check_epoch_run(v[1], "incagg", 1, 1);
    int tables = cJSON_GetArraySize(tu_json_get(v[1], "tables", OBJ));
    ck_assert_msg(tables >= 2 * 64, "incagg: %d tables for 64 layers", tables);   /* M and S per layer at least */
    ck_assert_int_eq((int)tu_json_dbl(v[2], "layers"), 64);
    tu_json_free_lines(v, n);
    free(out);
}
END_TEST

START_TEST(test_bench_pruning) {
    char *out = run_ok(NULL, "bench pruning '%s' --labeled 0.1 --proxy-epochs 3 --proxy-hidden 16 --keep 0.5", g);
    cJSON *v[16];
    int n = tu_json_lines(out, v, 16);
    ck_assert_int_eq(n, 9 + 1);   /* load .. write (check included), then the summary */
    double frac = 0;
    for (int i = 0; i < n - 1; i++) {
        ck_assert_str_eq(tu_json_get(v[i], "bench", STR)->valuestring, "pruning");
        tu_json_get(v[i], "stage", STR);
        tu_json_get(v[i], "seconds", NUM);
        frac += tu_json_dbl(v[i], "fraction");
    }
    ck_assert_msg(frac <= 1.0 + 1e-9, "stage fractions sum to %.6f", frac);
    static const key_t_ keys[] = {{"bench", STR}, {"pool", NUM}, {"labeled", NUM}, {"kept", NUM}, {"total_s", NUM},
                                  {"peak_rss_mb", NUM}, {NULL, 0}};
    has_keys(v[n - 1], keys);
    /* spread over the graph: no kNN GEMM to rate */
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(v[n - 1], "knn_gflops")));
    ck_assert_int_eq((long)tu_json_dbl(v[n - 1], "kept"), g_train / 2);
    tu_json_free_lines(v, n);
    free(out);
}
END_TEST

int main(void) {
    char cora[1024];
    snprintf(cora, sizeof cora, "%s/data/cora", tu_src());
    tu_require_or_skip(cora);
    dir = tu_mkdtemp();
    if (!dir) { perror("mkdtemp"); return EXIT_FAILURE; }
    snprintf(g, sizeof g, "%s/g", dir);
    char args[2048], *out = NULL, *err = NULL;
    snprintf(args, sizeof args, "gen --kind csbm --nodes 600 --avg-degree 8 --features 16 --classes 3 --seed 1 --out '%s' --json", g);
    int rc = tu_inca(args, &out, &err);
    cJSON *o = rc == 0 ? cJSON_Parse(tu_last_line(out)) : NULL;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "splits");
    if (!s) {
        fprintf(stderr, "inca %s -> %d: %s%s\n", args, rc, out ? out : "", err ? err : "");
        return EXIT_FAILURE;
    }
    g_train = (long)cJSON_GetObjectItemCaseSensitive(s, "train")->valuedouble;
    g_test = (long)cJSON_GetObjectItemCaseSensitive(s, "test")->valuedouble;
    cJSON_Delete(o);
    free(out);
    free(err);

    Suite *su = suite_create("e2e_json");
    TCase *tc = tcase_create("e2e_json");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_ingest_info);
    tcase_add_test(tc, test_gen_partition);
    tcase_add_loop_test(tc, test_train, 0, 4);
    tcase_add_test(tc, test_train_config_rerun);
    tcase_add_test(tc, test_train_metric_selects);
    tcase_add_test(tc, test_prune_eval);
    tcase_add_test(tc, test_bench_spmm_gen);
    tcase_add_test(tc, test_bench_loader);
    tcase_add_test(tc, test_bench_epoch);
    tcase_add_test(tc, test_bench_epoch_gcnii_64);
    tcase_add_test(tc, test_bench_pruning);
    suite_add_tcase(su, tc);
    rc = tu_run_suite(su);
    tu_rmrf(dir);
    free(dir);
    return rc;
}
