/* The command-line layer's own contract, pinned against values computed by hand or read from the
 * help texts and ARCHITECTURE.md (exit 0 / 1 / 2, a one-line message naming the flag): main's
 * dispatch (inca alone, --help and -h, an unknown command, --list-flags), gen's defaults and JSON
 * (csbm's edge probabilities and sampled edges by hand), partition's refusals and JSON (the
 * balance, the layout's three parts), ingest's flag refusals and self-loops, train's flag ranges
 * and JSON fields, prune's evaluation flags, budget lines, reports and outputs, and the status line: erased at the
 * end, its elapsed seconds shown, and none under a benchmark's --quiet given first. All on a
 * 200-node csbm: a few seconds in all. */
#include "testutil.h"
#include "loaders/dataset.h"
#include "loaders/npy.h"
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir;
static char g[1024];   /* csbm: 200 nodes, 32 features, 4 classes (gen's defaults), seed 0 */

/* `inca <args>` with args formatted from fmt into *args: its exit status, stdout and stderr (each
 * to free) */
static int vrun(char **args, char **out, char **err, const char *fmt, va_list ap) {
    ck_assert_int_ge(vasprintf(args, fmt, ap), 0);
    return tu_inca(*args, out, err);
}

/* `inca <args>` (printf-style): its exit status; *out and *err receive stdout and stderr (free
 * them; either may be NULL to drop it) */
static int run(char **out, char **err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run(char **out, char **err, const char *fmt, ...) {
    char *args = NULL, *o = NULL, *e = NULL;
    va_list ap;
    va_start(ap, fmt);
    const int rc = vrun(&args, &o, &e, fmt, ap);
    va_end(ap);
    free(args);
    if (out) *out = o;
    else free(o);
    if (err) *err = e;
    else free(e);
    return rc;
}

/* `inca <args>` must exit 0; its last stdout line as JSON */
static cJSON *run_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static cJSON *run_json(const char *fmt, ...) {
    char *args = NULL, *out = NULL, *err = NULL;
    va_list ap;
    va_start(ap, fmt);
    const int rc = vrun(&args, &out, &err, fmt, ap);
    va_end(ap);
    ck_assert_msg(rc == 0, "inca %s -> %d: %s", args, rc, err ? err : "");
    cJSON *j = tu_json_last(out);
    free(args);
    free(out);
    free(err);
    return j;
}

/* `inca <args>` must exit 2 with exactly want + "\n" on stderr (prefix: "inca CMD: ") and
 * nothing on stdout */
static void refused(const char *want, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refused(const char *want, const char *fmt, ...) {
    char *args = NULL, *out = NULL, *err = NULL;
    va_list ap;
    va_start(ap, fmt);
    const int rc = vrun(&args, &out, &err, fmt, ap);
    va_end(ap);
    ck_assert_msg(rc == 2, "inca %s: exit %d, expected 2 (stderr '%s')", args, rc, err ? err : "");
    const size_t l = strlen(want);
    ck_assert_msg(err && strncmp(err, want, l) == 0 && strcmp(err + l, "\n") == 0, "inca %s: stderr '%s', expected '%s'",
                  args, err ? err : "", want);
    ck_assert_msg(!out || !*out, "inca %s printed '%s'", args, out);
    free(args);
    free(out);
    free(err);
}

static const char *str_at(const cJSON *o, const char *key) { return tu_json_get(o, key, cJSON_String)->valuestring; }
static int bool_at(const cJSON *o, const char *key) { return cJSON_IsTrue(tu_json_get(o, key, cJSON_True | cJSON_False)); }

/* lines of text starting with s */
static int lines_starting(const char *text, const char *s) {
    int n = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) n += strncmp(p, s, strlen(s)) == 0;
    return n;
}

/* `inca` alone is a usage error (exit 2, the command list on stderr); --help and -h print the
 * list on stdout and exit 0, one "  inca CMD" line per command; `inca CMD -h` is its --help; an
 * unknown command exits 2 naming it; --list-flags without a benchmark's name lists nothing and says to name one (2; it
 * printed nothing at all). */
START_TEST(main_dispatch) {
    static const char *const cmds[] = {"ingest", "gen", "info", "verify", "partition", "train", "predict", "export",
                                       "shard", "prune", "bench"};
    char *out = NULL, *err = NULL;
    ck_assert_int_eq(run(&out, &err, "%s", ""), 2);
    ck_assert_msg(!*out && strstr(err, "usage: inca <command>"), "out '%s' err '%s'", out, err);
    free(out);
    free(err);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(run(&out, &err, "%s", k ? "-h" : "--help"), 0);
        ck_assert_msg(!*err && strncmp(out, "usage: inca <command>", 21) == 0, "out '%s' err '%s'", out, err);
        ck_assert_int_eq(lines_starting(out, "  inca "), (int)(sizeof cmds / sizeof cmds[0]));
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
            char want[64];
            snprintf(want, sizeof want, "  inca %s ", cmds[i]);
            ck_assert_msg(strstr(out, want), "--help lacks '%s': %s", want, out);
        }
        free(out);
        free(err);
    }
    ck_assert_int_eq(run(&out, &err, "train -h"), 0);
    ck_assert_msg(!*err && strncmp(out, "usage: inca train STORE", 23) == 0 && strstr(out, "--epochs E [200]"), "%s", out);
    free(out);
    free(err);
    ck_assert_int_eq(run(&out, &err, "gen --kind csbm -h"), 0);   /* after other flags too */
    ck_assert_msg(strncmp(out, "usage: inca gen --kind", 22) == 0, "%s", out);
    free(out);
    free(err);
    ck_assert_int_eq(run(&out, &err, "frobnicate"), 2);
    ck_assert_msg(!*out && strncmp(err, "inca: unknown command 'frobnicate'\n", 35) == 0, "%s", err);
    free(out);
    free(err);
    /* a benchmark is named, and named right */
    refused("inca bench: expected a benchmark: spmm|gen|loader|epoch|pruning|knn|scale", "bench");
    refused("inca bench: unknown benchmark 'nosuch' (expected spmm|gen|loader|epoch|pruning|knn|scale)", "bench nosuch");
    refused("inca bench: --list-flags: name a benchmark (inca bench NAME --list-flags; inca bench --help lists them)",
            "bench --list-flags");
    /* a batch that cannot be split over a rank count is refused once, before any rank starts
     * (it started 3 ranks, each printing the refusal, and mpiexec's banner) */
    refused("inca bench: --batch-parts 8 is the global batch: it must be a multiple of every rank count (--ranks has 3)",
            "bench scale '%s' --ranks 1,3 --parts 16", g);
    ck_assert_int_eq(run(&out, NULL, "bench spmm --list-flags"), 0);
    ck_assert_msg(strstr(out, "--nodes VALUE\n") && strstr(out, "--deterministic\n"), "%s", out);
    free(out);
}
END_TEST

/* gen's JSON for the help's defaults: csbm [32] features, [4] classes, homophily [0.8], split
 * [random:0.6,0.2,0.2], seed [0]; round(N D / 2) = 400 edges sampled for N = 200, D = 4, and the
 * probabilities by hand: 4 classes of 50 hold 4 x 50 x 49 / 2 = 4900 of the 19900 pairs, so
 * p_intra = 0.8 x 400 / 4900 and p_inter = 0.2 x 400 / 15000. R-MAT's defaults: no features, no
 * classes, no labels, a null homophily and no csbm keys. */
START_TEST(gen_defaults_and_json) {
    cJSON *j = run_json("gen --kind csbm --nodes 200 --avg-degree 4 --threads 1 --out '%s/d1' --json --quiet", dir);
    ck_assert_str_eq(str_at(j, "kind"), "csbm");
    ck_assert_int_eq((long)tu_json_dbl(j, "features"), 32);
    ck_assert_int_eq((long)tu_json_dbl(j, "classes"), 4);
    ck_assert_int_eq((long)tu_json_dbl(j, "labeled"), 200);
    ck_assert_int_eq((long)tu_json_dbl(j, "seed"), 0);
    ck_assert_int_eq((long)tu_json_dbl(j, "threads"), 1);
    ck_assert_int_eq((long)tu_json_dbl(j, "sampled_edges"), 400);
    ck_assert_double_eq(tu_json_dbl(j, "homophily_requested"), 0.8);
    ck_assert_double_eq(tu_json_dbl(j, "avg_degree_requested"), 4);
    ck_assert_double_eq_tol(tu_json_dbl(j, "avg_degree"), tu_json_dbl(j, "edges") / 200.0, 1e-12);
    ck_assert_double_eq_tol(tu_json_dbl(j, "p_intra"), 0.8 * 400 / 4900.0, 1e-15);
    ck_assert_double_eq_tol(tu_json_dbl(j, "p_inter"), 0.2 * 400 / 15000.0, 1e-15);
    const cJSON *s = tu_json_get(j, "splits", cJSON_Object);
    ck_assert_int_eq((long)tu_json_dbl(s, "train"), 120);
    ck_assert_int_eq((long)tu_json_dbl(s, "valid"), 40);
    ck_assert_int_eq((long)tu_json_dbl(s, "test"), 40);
    cJSON_Delete(j);
    j = run_json("gen --kind rmat --nodes 200 --avg-degree 4 --threads 2 --seed 7 --out '%s/d2' --json --quiet", dir);
    ck_assert_int_eq((long)tu_json_dbl(j, "features"), 0);
    ck_assert_int_eq((long)tu_json_dbl(j, "classes"), 0);
    ck_assert_int_eq((long)tu_json_dbl(j, "labeled"), 0);
    ck_assert_int_eq((long)tu_json_dbl(j, "seed"), 7);
    ck_assert_int_eq((long)tu_json_dbl(j, "threads"), 2);
    ck_assert_int_eq((long)tu_json_dbl(j, "sampled_edges"), 400);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "homophily")));
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(j, "p_intra"));
    cJSON_Delete(j);
}
END_TEST

/* gen's own refusals (exit 2, one line naming the flag and what it expects, nothing written);
 * the merged-pairs warning only for a csbm that falls more than 10% short (R-MAT's hubs always
 * merge some: gen.h), so a 2000-node csbm of degree 5 and a short R-MAT say nothing */
START_TEST(gen_refusals_and_warning) {
    static const struct { const char *args, *msg; } bad[] = {
        {"--kind csbm --nodes 200 --avg-degree 4 --threads 4097", "inca gen: --threads 4097, expected 0 (all) .. 4096"},
        {"--kind csbm --nodes 200 --avg-degree 4 --threads -1", "inca gen: --threads -1, expected 0 (all) .. 4096"},
        {"--kind rmat --nodes 200 --avg-degree 4 --mean-scale 2", "inca gen: --homophily and --mean-scale apply to --kind csbm only"},
        {"--kind rmat --nodes 200 --avg-degree 4 --classes -1", "inca gen: --classes -1: expected 0 .. 2147483647"},
        {"--kind rmat --nodes 200 --avg-degree 4 extra", "inca gen: unexpected argument 'extra'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        refused(bad[i].msg, "gen %s --out '%s/b%zu'", bad[i].args, dir, i);
        char p[1100];
        snprintf(p, sizeof p, "%s/b%zu", dir, i);
        ck_assert_msg(!tu_exists(p), "%s left a store", bad[i].args);
    }
    char *out = NULL, *err = NULL;
    ck_assert_int_eq(run(&out, &err, "gen --kind csbm --nodes 2000 --avg-degree 5 --out '%s/w1' --json", dir), 0);
    ck_assert_msg(tu_json_num(tu_last_line(out), "avg_degree") >= 4.5 && !*err, "err '%s', out %s", err, out);
    free(out);
    free(err);
    ck_assert_int_eq(run(&out, &err, "gen --kind rmat --nodes 200 --avg-degree 4 --out '%s/w2' --json", dir), 0);
    ck_assert_msg(tu_json_num(tu_last_line(out), "avg_degree") < 3.6 && !*err, "err '%s', out %s", err, out);
    free(out);
    free(err);
}
END_TEST

/* partition's refusals, each before any work; parmetis's part count is checked before MPI starts */
START_TEST(partition_refusals) {
    static const struct { const char *args, *msg; } bad[] = {
        {"--parts 4 --seed -1", "inca partition: --seed: expected a non-negative integer"},
        {"--parts 4 --ranks 2", "inca partition: --ranks: only with --method parmetis (the MPI ranks it runs on), not metis"},
        {"--parts 4 --method lp --ranks 2", "inca partition: --ranks: only with --method parmetis (the MPI ranks it runs on), not lp"},
        {"--parts 4 --method parmetis --ranks 0", "inca partition: --ranks: expected a positive count, got 0"},
        {"--parts 0 --method parmetis --ranks 2", "inca partition: --parts: 0 parts for 200 nodes (expected 1 to n)"},
        {"--parts 201 --method parmetis --ranks 2", "inca partition: --parts: 201 parts for 200 nodes (expected 1 to n)"},
        {"--parts 4 --m0 gat", "inca partition: --m0: expected gcn, sage or none, got 'gat'"},
        {"--parts 4 --m0 mlp", "inca partition: --m0: expected gcn, sage or none, got 'mlp'"},
        {"--parts 4 --no-layout --rebuild-layout",
         "inca partition: --rebuild-layout: shapes the partition-ordered layout, which --no-layout skips"},
        {"--parts 4 --no-layout --feature-norm row",
         "inca partition: --feature-norm: shapes the partition-ordered layout, which --no-layout skips"},
        {"--parts 4 --no-layout --m0 sage", "inca partition: --m0: shapes the partition-ordered layout, which --no-layout skips"},
        {"--parts 4 --no-layout --history-dtype bf16",
         "inca partition: --history-dtype: shapes the partition-ordered layout, which --no-layout skips"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) refused(bad[i].msg, "partition '%s' %s", g, bad[i].args);
    char *out = NULL;
    ck_assert_int_eq(run(&out, NULL, "info '%s' --json", g), 0);
    ck_assert_msg(strstr(out, "\"partitions\":[]"), "a refused run stored a partitioning: %s", out);
    free(out);
}
END_TEST

/* partition's JSON: the seed and the name; balance = max_part x parts / nodes from its own fields;
 * the layout's parts as written: --m0 none writes the features and the adjacency, not M^0; the
 * same again writes nothing; --rebuild-layout writes them again; --m0 gcn adds M^0 alone. The
 * summary line on stderr (a pipe), none with --quiet. */
START_TEST(partition_json_and_quiet) {
    char st[1100], *out = NULL, *err = NULL;
    snprintf(st, sizeof st, "%s/pj", dir);
    cJSON_Delete(run_json("gen --kind csbm --nodes 200 --avg-degree 4 --out '%s' --json --quiet", st));
    static const struct { const char *flags; int reused, x, m0, adj; } steps[] = {
        {"--m0 none", 0, 1, 0, 1},
        {"--m0 none", 1, 0, 0, 0},
        {"--m0 none --rebuild-layout", 1, 1, 0, 1},
        {"--m0 gcn", 1, 0, 1, 0},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        cJSON *j = run_json("partition '%s' --parts 4 --seed 3 %s --json --quiet", st, steps[i].flags);
        ck_assert_str_eq(str_at(j, "name"), "metis-4-s3");
        ck_assert_int_eq((long)tu_json_dbl(j, "seed"), 3);
        ck_assert_int_eq((long)tu_json_dbl(j, "ranks"), 1);
        const double mx = tu_json_dbl(j, "max_part"), mn = tu_json_dbl(j, "min_part");
        ck_assert_msg(mn <= 50 && mx >= 50 && mx > mn, "parts of %g..%g nodes", mn, mx);   /* 4 parts of 200 */
        ck_assert_double_eq_tol(tu_json_dbl(j, "balance"), mx * 4 / 200, 1e-12);
        ck_assert_msg(bool_at(j, "reused") == steps[i].reused && bool_at(j, "layout_x_written") == steps[i].x &&
                      bool_at(j, "layout_m0_written") == steps[i].m0 && bool_at(j, "layout_adj_written") == steps[i].adj,
                      "step %zu (%s): reused %d x %d m0 %d adj %d", i, steps[i].flags, bool_at(j, "reused"),
                      bool_at(j, "layout_x_written"), bool_at(j, "layout_m0_written"), bool_at(j, "layout_adj_written"));
        cJSON_Delete(j);
    }
    ck_assert_int_eq(run(&out, &err, "partition '%s' --parts 4 --seed 3 --quiet", st), 0);
    ck_assert_msg(!*out && !*err, "--quiet: out '%s' err '%s'", out, err);
    free(out);
    free(err);
    ck_assert_int_eq(run(&out, &err, "partition '%s' --parts 4 --seed 3", st), 0);
    ck_assert_msg(!*out && strncmp(err, "partition metis-4-s3: 4 parts of ", 33) == 0 && strstr(err, "(reused)\n") &&
                  strchr(err, '\n') == err + strlen(err) - 1, "out '%s' err '%s'", out, err);
    free(out);
    free(err);
}
END_TEST

/* ingest's flags that do not fit the format are refused before the source is read (the SRC here
 * need not exist); --self-loops adds one loop per node: a 3-edge path on 4 nodes stores 3 + 4
 * edges, and with --symmetrize 6 + 4; the JSON names the format */
START_TEST(ingest_flags) {
    static const struct { const char *args, *msg; } bad[] = {
        {"--format ogb /nonexistent --features f.txt", "inca ingest: --labels/--features: only for --format edgelist"},
        {"--format csv /nonexistent --self-loops", "inca ingest: --symmetrize/--self-loops: --format csv has no graph"},
        {"--format csv /nonexistent --symmetrize", "inca ingest: --symmetrize/--self-loops: --format csv has no graph"},
        {"--format idx /nonexistent --self-loops", "inca ingest: --symmetrize/--self-loops: --format idx has no graph"},
        {"--format edgelist /nonexistent --split a", "inca ingest: --split: only for --format ogb"},
        {"--format metis /nonexistent --split a", "inca ingest: --split: only for --format ogb"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) refused(bad[i].msg, "ingest %s --out '%s/i%zu'", bad[i].args, dir, i);
    char el[1100];
    snprintf(el, sizeof el, "%s/path.txt", dir);
    FILE *f = fopen(el, "w");
    ck_assert_ptr_nonnull(f);
    fputs("0 1\n1 2\n2 3\n", f);
    ck_assert_int_eq(fclose(f), 0);
    static const struct { const char *flags; long edges; } ok[] = {{"", 3}, {"--self-loops", 7}, {"--symmetrize --self-loops", 10}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        cJSON *j = run_json("ingest --format edgelist '%s' %s --out '%s/e%zu' --json", el, ok[i].flags, dir, i);
        ck_assert_str_eq(str_at(j, "format"), "edgelist");
        ck_assert_int_eq((long)tu_json_dbl(j, "nodes"), 4);
        ck_assert_int_eq((long)tu_json_dbl(j, "edges"), ok[i].edges);
        ck_assert(tu_json_dbl(j, "seconds") > 0);
        cJSON_Delete(j);
    }
    /* an existing --out without --force: refused before the source is read, naming the way out */
    char want[2400];
    snprintf(want, sizeof want, "inca ingest: --out %s/e0: already exists (use --force to replace it)", dir);
    refused(want, "ingest --format edgelist '%s/nonexistent.txt' --out '%s/e0'", dir, dir);
}
END_TEST

/* train's flag checks: each value just past what the flag takes is refused, exit 2, one line
 * naming the flag and its range, before anything is loaded */
START_TEST(train_flag_ranges) {
    static const struct { const char *args, *msg; } bad[] = {
        {"--layers 0", "--layers: expected an integer in [1, 1024], got 0"},
        {"--layers 1025", "--layers: expected an integer in [1, 1024], got 1025"},
        {"--hidden 1048577", "--hidden: expected an integer in [1, 1048576], got 1048577"},
        {"--epochs 0", "--epochs: expected an integer in [1, 16777216], got 0"},
        {"--dropout 1", "--dropout: expected a value in [0,1), got 1"},
        {"--dropout -0.1", "--dropout: expected a value in [0,1), got -0.1"},
        {"--weight-decay -1", "--weight-decay: expected >= 0, got -1"},
        {"--beta1 1", "--beta1: expected auto or a value in [0,1), got 1"},
        {"--beta1 -0.5", "--beta1: expected auto or a value in [0,1), got -0.5"},
        {"--method gas --eval-average 1", "--eval-average: expected auto or a decay in [0,1), got 1"},
        {"--model appnp --K 1001", "--K: expected an integer in [0, 1000], got 1001"},
        {"--runs 0", "--runs: expected an integer in [1, 100000], got 0"},
        {"--eval-every 0", "--eval-every: expected an integer in [1, 2147483647], got 0"},
        {"--patience -1", "--patience: expected an integer in [0, 2147483647], got -1"},
        {"--select f1", "--select: expected acc|loss, got 'f1'"},
        {"--workers 65", "--workers: expected an integer in [1, 64], got 65"},
        {"--threads 4097", "--threads: expected an integer in [0, 4096], got 4097"},
        {"--seed -1", "--seed: expected an integer in [0, 9223372036854775807], got -1"},
        {"--method gas --parts 0", "--parts: expected an integer in [1, 2147483647], got 0"},
        {"--method gas --batch-parts 0", "--batch-parts: expected an integer in [1, 2147483647], got 0"},
        {"--method gas --parts 4 --batch-parts 5", "--batch-parts 5: more than the 4 parts (--parts); a batch holds at most every part"},
        {"--method gas --loader copy --memory-budget 1G",
         "--memory-budget: needs --loader view (or auto); --loader copy holds the dataset in memory"},
        /* flags the run would ignore */
        {"--model gcn --alpha 0.2", "--alpha: no effect with --model gcn (it applies to --model gcnii or appnp)"},
        {"--model sage --alpha 0.2", "--alpha: no effect with --model sage (it applies to --model gcnii or appnp)"},
        {"--method full --loader view",
         "--loader: no effect with --method full (it applies to --method cluster, gas or incagg (full-batch holds the dataset in memory))"},
        {"--method full --features-location host",
         "--features-location: no effect with --method full (it applies to the view loader of --method cluster, gas or incagg)"},
        {"--method cluster --history-location host",
         "--history-location: no effect with --method cluster (it applies to the history tables of --method gas or incagg)"},
        {"--method full --pass-dtype bf16",
         "--pass-dtype: no effect with --method full (it applies to the view loader's passes of --method cluster, gas or incagg)"},
        {"extra", "expected exactly one STORE argument"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[512];
        snprintf(want, sizeof want, "inca train: %s", bad[i].msg);
        refused(want, "train '%s' --epochs 1 %s", g, bad[i].args);   /* a later flag wins */
    }
    /* the boundaries themselves are taken */
    cJSON_Delete(run_json("train '%s' --model appnp --K 0 --epochs 1 --threads 1 --json --quiet", g));
    cJSON_Delete(run_json("train '%s' --layers 1 --dropout 0 --beta1 0 --weight-decay 0 --epochs 1 --threads 1 --json --quiet", g));
}
END_TEST

/* train's JSON beyond ARCHITECTURE.md's keys: the run's counts by hand (a GCN of 32 -> 16 -> 4 has
 * 32 x 16 + 16 + 16 x 4 + 4 = 596 parameters; --eval-every 2 of 5 epochs evaluates after epochs 2,
 * 4 and the last; --split random:0.5,... trains on half of 200), the flags given as the config
 * records them, and the text line of two runs */
START_TEST(train_json_fields) {
    cJSON *j = run_json("train '%s' --epochs 5 --eval-every 2 --threads 1 --seed 5 --runs 2 --adamw --patience 3 "
                        "--split random:0.5,0.25,0.25 --json --quiet", g);
    ck_assert_int_eq((long)tu_json_dbl(j, "parameters"), 596);
    ck_assert_int_eq((long)tu_json_dbl(j, "evaluations"), 3);
    ck_assert_int_eq((long)tu_json_dbl(j, "train_nodes"), 100);
    ck_assert_int_eq((long)tu_json_dbl(j, "ranks"), 1);
    ck_assert_int_eq((long)tu_json_dbl(j, "threads"), 1);
    ck_assert_int_eq((long)tu_json_dbl(j, "seed"), 5);
    const cJSON *c = tu_json_get(j, "config", cJSON_Object);
    ck_assert(bool_at(c, "adamw"));
    ck_assert_int_eq((long)tu_json_dbl(c, "patience"), 3);
    ck_assert_str_eq(str_at(c, "split"), "random:0.5,0.25,0.25");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c, "memory-budget")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c, "device-memory-budget")));
    cJSON_Delete(j);
    j = run_json("train '%s' --model gcnii --wd-conv 0.001 --epochs 1 --threads 1 --json --quiet", g);
    ck_assert_double_eq(tu_json_dbl(tu_json_get(j, "config", cJSON_Object), "wd-conv"), 0.001);
    cJSON_Delete(j);
    /* IncAgg: one refresh an epoch, each fused with its evaluation (the defaults); the view
     * loader and the history's place as asked, the budget in bytes; --refresh-weights auto is average under the
     * default --eval-average (1 - 2/4 here), last under --eval-average 0 */
    j = run_json("train '%s' --method incagg --parts 4 --batch-parts 2 --epochs 3 --threads 1 --loader view "
                 "--memory-budget 64M --history-location host --json --quiet", g);
    ck_assert_int_eq((long)tu_json_dbl(j, "refreshes"), 3);
    ck_assert_int_eq((long)tu_json_dbl(j, "refreshes_fused_with_eval"), 3);
    ck_assert_int_eq((long)tu_json_dbl(j, "steps_per_epoch"), 2);
    ck_assert_str_eq(str_at(j, "loader"), "view");
    ck_assert_str_eq(str_at(j, "history_location"), "host");   /* as asked */
    ck_assert_str_eq(str_at(j, "refresh_weights"), "average");
    const double f = tu_json_dbl(j, "loader_wait_fraction");
    ck_assert_msg(f >= 0 && f <= 1, "loader_wait_fraction %g", f);
    c = tu_json_get(j, "config", cJSON_Object);
    ck_assert_int_eq((long)tu_json_dbl(c, "memory-budget"), 64L << 20);
    ck_assert_double_eq(tu_json_dbl(c, "eval-average"), 0.5);
    ck_assert_str_eq(str_at(c, "refresh-weights"), "average");
    cJSON_Delete(j);
    j = run_json("train '%s' --method incagg --parts 4 --batch-parts 2 --epochs 1 --threads 1 --eval-average 0 --json --quiet", g);
    ck_assert_str_eq(str_at(j, "refresh_weights"), "last");
    ck_assert_str_eq(str_at(tu_json_get(j, "config", cJSON_Object), "refresh-weights"), "last");
    cJSON_Delete(j);
    char *out = NULL, *err = NULL;
    ck_assert_int_eq(run(&out, &err, "train '%s' --epochs 2 --threads 1 --runs 2 --quiet", g), 0);
    ck_assert_msg(strncmp(out, "gcn full on ", 12) == 0 && strstr(out, " (2 runs), val ") && strstr(out, ", best epoch ") &&
                  !*err, "out '%s' err '%s'", out, err);
    free(out);
    free(err);
}
END_TEST

/* train's result names the partitioning it trained on: the default's stored name metis-4-s0
 * (--parts 4, seed 0) and its edge cut, as inca partition reports the one it keeps, and a
 * --partition lp one's; one full-batch process uses none (null), while the config keeps the
 * flag as given ("" for the default) */
START_TEST(train_names_partition) {
    cJSON *p = run_json("partition '%s' --parts 4 --json --quiet", g);
    cJSON *l = run_json("partition '%s' --parts 4 --method lp --seed 2 --json --quiet", g);
    cJSON *j = run_json("train '%s' --method gas --parts 4 --batch-parts 2 --epochs 1 --threads 1 --json --quiet", g);
    ck_assert_str_eq(str_at(j, "partition"), "metis-4-s0");
    ck_assert_str_eq(str_at(p, "name"), "metis-4-s0");
    ck_assert_int_eq((long)tu_json_dbl(j, "edge_cut"), (long)tu_json_dbl(p, "edge_cut"));
    ck_assert_str_eq(str_at(tu_json_get(j, "config", cJSON_Object), "partition"), "");
    cJSON_Delete(j);
    j = run_json("train '%s' --method cluster --partition '%s' --batch-parts 2 --epochs 1 --threads 1 --json --quiet", g,
                 str_at(l, "name"));
    ck_assert_str_eq(str_at(j, "partition"), str_at(l, "name"));
    ck_assert_int_eq((long)tu_json_dbl(j, "edge_cut"), (long)tu_json_dbl(l, "edge_cut"));
    ck_assert_int_ne((long)tu_json_dbl(l, "edge_cut"), (long)tu_json_dbl(p, "edge_cut"));
    cJSON_Delete(j);
    j = run_json("train '%s' --epochs 1 --threads 1 --json --quiet", g);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "partition")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "edge_cut")));
    cJSON_Delete(j);
    cJSON_Delete(p);
    cJSON_Delete(l);
}
END_TEST

/* A split with no labelled row has no figures: without a validation split the result's and the
 * metrics' validation fields are null (0 read as a model that gets every node wrong), the text
 * says "val -" and the last epoch counts; an empty test split gives null test figures and no
 * near-chance verdict. */
START_TEST(train_empty_splits_are_null) {
    char path[1200], *out = NULL, *err = NULL;
    snprintf(path, sizeof path, "%s/m.jsonl", dir);
    cJSON *j = run_json("train '%s' --epochs 3 --threads 1 --split random:0.6,0,0.4 --metrics '%s' --json", g, path);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "val_acc")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "val_acc_std")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "val_balanced_acc")));
    ck_assert(tu_json_dbl(j, "test_acc") >= 0);
    ck_assert_int_eq((long)tu_json_dbl(j, "best_epoch"), 2);
    cJSON_Delete(j);
    FILE *f = fopen(path, "r");
    char line[2048];
    int lines = 0;
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof line, f)) {
        cJSON *m = cJSON_Parse(line);
        ck_assert(m);
        ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(m, "val_acc")));
        ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(m, "val_loss")));
        cJSON_Delete(m);
        lines++;
    }
    fclose(f);
    ck_assert_int_eq(lines, 3);
    ck_assert_int_eq(run(&out, &err, "train '%s' --epochs 3 --threads 1 --split random:0.6,0,0.4 --runs 2", g), 0);
    ck_assert_msg(strstr(out, ", val -, best epoch 2 of 3") != NULL, "%s", out);
    free(out);
    free(err);
    j = run_json("train '%s' --epochs 3 --threads 1 --split random:0.6,0.4,0 --json", g);
    static const char *const nulls[] = {"test_acc", "test_acc_std", "test_balanced_acc", "test_macro_f1",
                                        "test_majority_acc", "near_chance"};
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        ck_assert_msg(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, nulls[i])), "%s not null", nulls[i]);
    ck_assert(tu_json_dbl(j, "val_acc") >= 0);
    cJSON_Delete(j);
    ck_assert_int_eq(run(&out, &err, "train '%s' --epochs 3 --threads 1 --split random:0.6,0.4,0 --runs 2", g), 0);
    ck_assert_msg(strstr(out, ": test - (2 runs), val ") != NULL, "%s", out);
    free(out);
    free(err);
}
END_TEST

/* text written to dir/name; its path into path[size] */
static const char *write_file(char *path, size_t size, const char *name, const char *text) {
    snprintf(path, size, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(text, f), 0);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* --train-indices against the split the run uses, read from the store through the library: a
 * node of the validation or test split (it would be trained on, then scored) and a node listed
 * twice are refused naming the file's line (a .npy's element), as is a node past the store's;
 * under --split random:... the drawn split is the one checked (a stored test node the draw puts
 * in training is taken, a drawn test node refused) */
START_TEST(train_indices_checked) {
    dataset_t d;
    dataset_init(&d);
    ck_assert_msg(dataset_load(g, &d) == 0, "%s", g);
    ck_assert(d.split_n[SPLIT_TRAIN] >= 3 && d.split_n[SPLIT_VALID] >= 1 && d.split_n[SPLIT_TEST] >= 1);
    const int64_t a = d.split[SPLIT_TRAIN][0], b = d.split[SPLIT_TRAIN][1], c = d.split[SPLIT_TRAIN][2];
    const int64_t va = d.split[SPLIT_VALID][0], te = d.split[SPLIT_TEST][d.split_n[SPLIT_TEST] - 1];
    char p[1200], text[256], want[2048];
    /* taken: three training nodes, commas, a comment */
    snprintf(text, sizeof text, "%" PRId64 "\n%" PRId64 ", %" PRId64 " # two\n", a, b, c);
    cJSON *j = run_json("train '%s' --epochs 1 --threads 1 --train-indices '%s' --json --quiet", g,
                        write_file(p, sizeof p, "ok.txt", text));
    ck_assert_int_eq((long)tu_json_dbl(j, "train_nodes"), 3);
    cJSON_Delete(j);
    /* a test node on line 4, after a comment line */
    snprintf(text, sizeof text, "%" PRId64 "\n%" PRId64 " %" PRId64 "\n# next\n%" PRId64 "\n", a, b, c, te);
    write_file(p, sizeof p, "test.txt", text);
    snprintf(want, sizeof want, "inca train: %s:4: node %" PRId64 " is in the test split (--train-indices must not train "
             "on nodes it is scored on)", p, te);
    refused(want, "train '%s' --epochs 1 --threads 1 --train-indices '%s'", g, p);
    /* a validation node on line 2 */
    snprintf(text, sizeof text, "%" PRId64 "\n%" PRId64 "\n", a, va);
    write_file(p, sizeof p, "valid.txt", text);
    snprintf(want, sizeof want, "inca train: %s:2: node %" PRId64 " is in the validation split (--train-indices must not "
             "train on nodes it is scored on)", p, va);
    refused(want, "train '%s' --epochs 1 --threads 1 --train-indices '%s'", g, p);
    /* a node listed twice: the second listing's line and the first's */
    snprintf(text, sizeof text, "%" PRId64 "\n%" PRId64 "\n%" PRId64 "\n", a, b, a);
    write_file(p, sizeof p, "twice.txt", text);
    snprintf(want, sizeof want, "inca train: %s:3: node %" PRId64 " listed twice (first at line 1)", p, a);
    refused(want, "train '%s' --epochs 1 --threads 1 --train-indices '%s'", g, p);
    /* a node past the store's 200 */
    snprintf(text, sizeof text, "%" PRId64 "\n200\n", a);
    write_file(p, sizeof p, "past.txt", text);
    snprintf(want, sizeof want, "inca train: %s:2: node 200 is outside the store's 200 nodes [0, 200)", p);
    refused(want, "train '%s' --epochs 1 --threads 1 --train-indices '%s'", g, p);
    /* a .npy names the element (from 0) */
    const int64_t ids[3] = {b, c, b};
    snprintf(p, sizeof p, "%s/twice.npy", dir);
    ck_assert_int_eq(npy_write_i64(p, ids, 3), 0);
    snprintf(want, sizeof want, "inca train: %s: element 2: node %" PRId64 " listed twice (first at element 0)", p, b);
    refused(want, "train '%s' --epochs 1 --threads 1 --train-indices '%s'", g, p);
    /* --split random:0.6,0.2,0.2:7: the drawn split is checked, not the stored one */
    ck_assert_int_eq(dataset_split_apply(g, "random:0.6,0.2,0.2:7", 0, &d), 0);
    const int64_t *st = d.split[SPLIT_TRAIN];
    int64_t stored_test_trained = -1, drawn_test = d.split[SPLIT_TEST][0];
    dataset_t s0;
    dataset_init(&s0);
    ck_assert_int_eq(dataset_load(g, &s0), 0);
    for (int64_t i = 0; i < d.split_n[SPLIT_TRAIN] && stored_test_trained < 0; i++)
        for (int64_t k = 0; k < s0.split_n[SPLIT_TEST]; k++)
            if (s0.split[SPLIT_TEST][k] == st[i]) stored_test_trained = st[i];
    ck_assert_int_ge(stored_test_trained, 0);
    snprintf(text, sizeof text, "%" PRId64 "\n", stored_test_trained);
    j = run_json("train '%s' --epochs 1 --threads 1 --split random:0.6,0.2,0.2:7 --train-indices '%s' --json --quiet", g,
                 write_file(p, sizeof p, "drawn-ok.txt", text));
    ck_assert_int_eq((long)tu_json_dbl(j, "train_nodes"), 1);
    cJSON_Delete(j);
    snprintf(text, sizeof text, "%" PRId64 "\n%" PRId64 "\n", stored_test_trained, drawn_test);
    write_file(p, sizeof p, "drawn-test.txt", text);
    snprintf(want, sizeof want, "inca train: %s:2: node %" PRId64 " is in the test split (--train-indices must not train "
             "on nodes it is scored on)", p, drawn_test);
    refused(want, "train '%s' --epochs 1 --threads 1 --split random:0.6,0.2,0.2:7 --train-indices '%s'", g, p);
    dataset_free(&s0);
    dataset_free(&d);
}
END_TEST

/* the first largest of row[0..c) */
static int argmax_of(const float *row, int c) {
    int b = 0;
    for (int k = 1; k < c; k++)
        if (row[k] > row[b]) b = k;
    return b;
}

/* predict's test_acc: over the whole test split, or with --indices over the rows written whose
 * node is in it (test_rows of them; null and 0 when none is), each computed here from the
 * written scores' argmax and the store's labels and split read through the library; and a --run
 * past the folder's runs is refused naming the runs it holds (it said "no checkpoint (train
 * with --checkpoint ck first)" of a folder that holds one) */
START_TEST(predict_test_rows_and_runs) {
    dataset_t d;
    dataset_init(&d);
    ck_assert_int_eq(dataset_load(g, &d), 0);
    const int C = d.c;
    char ck[1200], full[1200], sub[1200], p[1200], text[256], want[2048];
    snprintf(ck, sizeof ck, "%s/ck-pred", dir);
    snprintf(full, sizeof full, "%s/pred-all.npy", dir);
    snprintf(sub, sizeof sub, "%s/pred-sub.npy", dir);
    cJSON_Delete(run_json("train '%s' --epochs 3 --threads 1 --checkpoint '%s' --json --quiet", g, ck));
    cJSON *j = run_json("predict --checkpoint '%s' --out '%s' --json", ck, full);
    float *S = tu_npy_f32(full, d.n, C);
    int64_t right = 0, ok = -1, bad = -1;
    for (int64_t k = 0; k < d.split_n[SPLIT_TEST]; k++) {
        const int64_t v = d.split[SPLIT_TEST][k];
        const int hit = argmax_of(S + v * C, C) == d.y[v];
        right += hit;
        if (hit && ok < 0) ok = v;
        if (!hit && bad < 0) bad = v;
    }
    ck_assert_msg(ok >= 0 && bad >= 0, "3 epochs should get some test nodes right and some wrong");
    ck_assert_int_eq((long)tu_json_dbl(j, "test_rows"), (long)d.split_n[SPLIT_TEST]);
    ck_assert_double_eq_tol(tu_json_dbl(j, "test_acc"), (double)right / (double)d.split_n[SPLIT_TEST], 1e-12);
    cJSON_Delete(j);
    /* two training nodes around a right and a wrong test node: 1 of 2, not the split's figure */
    const int64_t tr0 = d.split[SPLIT_TRAIN][0], tr1 = d.split[SPLIT_TRAIN][1];
    snprintf(text, sizeof text, "%" PRId64 "\n%" PRId64 "\n%" PRId64 "\n%" PRId64 "\n", tr0, ok, bad, tr1);
    j = run_json("predict --checkpoint '%s' --out '%s' --indices '%s' --json", ck, sub, write_file(p, sizeof p, "pred.txt", text));
    ck_assert_int_eq((long)tu_json_dbl(j, "rows"), 4);
    ck_assert_int_eq((long)tu_json_dbl(j, "width"), C);
    ck_assert_int_eq((long)tu_json_dbl(j, "test_rows"), 2);
    float *R = tu_npy_f32(sub, 4, C);
    const double mine = ((argmax_of(R + 1 * C, C) == d.y[ok]) + (argmax_of(R + 2 * C, C) == d.y[bad])) / 2.0;
    ck_assert_double_eq(mine, 0.5);
    ck_assert_double_eq_tol(tu_json_dbl(j, "test_acc"), mine, 1e-12);
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "seconds")) && bool_at(j, "best_epoch_model"));
    cJSON_Delete(j);
    free(R);
    /* no test node among them: null, over 0 rows */
    snprintf(text, sizeof text, "%" PRId64 "\n", tr0);
    j = run_json("predict --checkpoint '%s' --out '%s' --indices '%s' --json", ck, sub, write_file(p, sizeof p, "pred0.txt", text));
    ck_assert_int_eq((long)tu_json_dbl(j, "rows"), 1);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "test_acc")));
    ck_assert_int_eq((long)tu_json_dbl(j, "test_rows"), 0);
    cJSON_Delete(j);
    /* embeddings score nothing */
    j = run_json("predict --checkpoint '%s' --out '%s' --embeddings --json", ck, sub);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "test_acc")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "test_rows")));
    cJSON_Delete(j);
    /* runs past the folder's */
    snprintf(want, sizeof want, "inca predict: --run 1: %s holds the checkpoint of run 0 only (--run 0)", ck);
    refused(want, "predict --checkpoint '%s' --out '%s' --run 1", ck, sub);
    refused("inca predict: --ranks: predict runs as one process (rank 0's checkpoint is the model)",
            "predict --checkpoint '%s' --out '%s' --ranks 2", ck, sub);
    snprintf(ck, sizeof ck, "%s/ck-pred2", dir);
    ck_assert_int_eq(run(NULL, NULL, "train '%s' --epochs 1 --runs 2 --threads 1 --checkpoint '%s' --quiet", g, ck), 0);
    snprintf(want, sizeof want, "inca predict: --run 5: %s holds the checkpoints of runs 0..1 (--run 0 to 1)", ck);
    refused(want, "predict --checkpoint '%s' --out '%s' --run 5", ck, sub);
    cJSON_Delete(run_json("predict --checkpoint '%s' --out '%s' --run 1 --json", ck, sub));
    free(S);
    dataset_free(&d);
}
END_TEST

/* The argmax accuracy of scores S (n x C) over the test split of d, computed here */
static double test_acc_of(const float *S, int C, const dataset_t *d) {
    int64_t right = 0;
    for (int64_t k = 0; k < d->split_n[SPLIT_TEST]; k++) {
        const int64_t v = d->split[SPLIT_TEST][k];
        right += argmax_of(S + v * C, C) == d->y[v];
    }
    return (double)right / (double)d->split_n[SPLIT_TEST];
}

/* predict scores the split the model was trained with: a checkpoint of train --split
 * random:0.5,0.2,0.3 --seed 3 is judged on that draw's test nodes (60 of 200, drawn here through
 * the library with the same seed), not the stored split's (it read the stored one until session
 * 41); a --split given to predict overrides config.json's, as any train flag does */
START_TEST(predict_uses_trained_split) {
    dataset_t d, r;
    dataset_init(&d);
    dataset_init(&r);
    ck_assert_int_eq(dataset_load(g, &d), 0);
    ck_assert_int_eq(dataset_load(g, &r), 0);
    ck_assert_int_eq(dataset_split_apply(g, "random:0.5,0.2,0.3", 3, &r), 0);
    ck_assert_int_ne((int)r.split_n[SPLIT_TEST], (int)d.split_n[SPLIT_TEST]);
    char ck[1200], out[1200];
    snprintf(ck, sizeof ck, "%s/ck-split", dir);
    snprintf(out, sizeof out, "%s/pred-split.npy", dir);
    ck_assert_int_eq(run(NULL, NULL, "train '%s' --epochs 3 --threads 1 --seed 3 --split random:0.5,0.2,0.3 --checkpoint '%s' --quiet", g, ck), 0);
    cJSON *j = run_json("predict --checkpoint '%s' --out '%s' --json", ck, out);
    float *S = tu_npy_f32(out, d.n, d.c);
    ck_assert_int_eq((long)tu_json_dbl(j, "test_rows"), (long)r.split_n[SPLIT_TEST]);
    ck_assert_double_eq_tol(tu_json_dbl(j, "test_acc"), test_acc_of(S, d.c, &r), 1e-12);
    cJSON_Delete(j);
    j = run_json("predict --checkpoint '%s' --out '%s' --split stored --json", ck, out);
    ck_assert_int_eq((long)tu_json_dbl(j, "test_rows"), (long)d.split_n[SPLIT_TEST]);
    ck_assert_double_eq_tol(tu_json_dbl(j, "test_acc"), test_acc_of(S, d.c, &d), 1e-12);
    cJSON_Delete(j);
    free(S);
    dataset_free(&d);
    dataset_free(&r);
}
END_TEST

/* A new job (no --resume) claims its --checkpoint folder whole: an older job's later runs go, so
 * a resume of the new job trains its own run 1 rather than taking the older job's (the header
 * does not hold --lr: a --runs 2 job at lr 0.05, then a --runs 1 job at lr 0.01 in the same
 * folder resumed to --runs 2 reported the first job's run 1) */
START_TEST(new_job_claims_checkpoint_folder) {
    char ck[1200], p[1300];
    snprintf(ck, sizeof ck, "%s/ck-claim", dir);
    const char *common = "--epochs 2 --threads 1 --seed 4 --quiet";
    ck_assert_int_eq(run(NULL, NULL, "train '%s' %s --runs 2 --lr 0.05 --checkpoint '%s'", g, common, ck), 0);
    snprintf(p, sizeof p, "%s/run-1.ckpt", ck);
    ck_assert_int_eq(access(p, F_OK), 0);
    ck_assert_int_eq(run(NULL, NULL, "train '%s' %s --runs 1 --lr 0.01 --checkpoint '%s'", g, common, ck), 0);
    ck_assert_msg(access(p, F_OK) != 0, "the older job's run-1.ckpt is still there");
    cJSON *r = run_json("train '%s' %s --runs 2 --lr 0.01 --checkpoint '%s' --resume --json", g, common, ck);
    cJSON *f = run_json("train '%s' %s --runs 2 --lr 0.01 --json", g, common);
    const cJSON *ra = tu_json_get(r, "run_test_acc", cJSON_Array), *fa = tu_json_get(f, "run_test_acc", cJSON_Array);
    for (int i = 0; i < 2; i++)
        ck_assert_double_eq(cJSON_GetArrayItem(ra, i)->valuedouble, cJSON_GetArrayItem(fa, i)->valuedouble);
    cJSON_Delete(r);
    cJSON_Delete(f);
}
END_TEST

/* An output in a missing folder is bad input, exit 2, whichever flag names it (--checkpoint made
 * its folder with EIO, exit 1, while --metrics and --save-params gave 2) */
START_TEST(train_output_folders) {
    refused("inca train: --checkpoint: /nonexistent/ck: cannot write: folder /nonexistent does not exist",
            "train '%s' --epochs 1 --threads 1 --checkpoint /nonexistent/ck", g);
    refused("inca train: /nonexistent/m.jsonl: cannot write: folder /nonexistent does not exist",
            "train '%s' --epochs 1 --threads 1 --metrics /nonexistent/m.jsonl", g);
}
END_TEST

/* partition on a table (a CSV store: no adjacency arrays) says so once, naming the store once */
START_TEST(partition_of_a_table) {
    char csv[1100], path[1200], store[1200], want[1400];
    snprintf(csv, sizeof csv, "%s/tab", dir);
    ck_assert_int_eq(mkdir(csv, 0755), 0);
    static const char *const files[2][2] = {{"train.csv", "0,1,2\n1,3,4\n"}, {"test.csv", "0,1,2\n"}};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", csv, files[i][0]);
        FILE *f = fopen(path, "w");
        ck_assert(f && fputs(files[i][1], f) >= 0 && fclose(f) == 0);
    }
    snprintf(store, sizeof store, "%s/tab.lmdb", dir);
    ck_assert_int_eq(run(NULL, NULL, "ingest --format csv '%s' --out '%s'", csv, store), 0);
    snprintf(want, sizeof want, "inca partition: %s has no graph (no 'rowptr' / 'col' arrays: a table)", store);
    refused(want, "partition '%s' --parts 2", store);
}
END_TEST

/* A result's config names the store by its absolute path: `train --config` of a line written
 * from the store's folder (a relative STORE) reruns from anywhere, to the same accuracy. */
START_TEST(config_store_absolute) {
    char cmd[8192], path[1200], *out = NULL, *bin = realpath(tu_bin(), NULL);
    ck_assert_ptr_nonnull(bin);
    snprintf(path, sizeof path, "%s/r.json", dir);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' train g --epochs 2 --threads 1 --json > r.json", dir, bin);
    ck_assert_int_eq(tu_sh(cmd, NULL, NULL), 0);
    FILE *f = fopen(path, "r");
    char line[16384];
    ck_assert(f && fgets(line, sizeof line, f) && fclose(f) == 0);
    cJSON *first = cJSON_Parse(line);
    ck_assert(first);
    ck_assert_str_eq(str_at(tu_json_get(first, "config", cJSON_Object), "store"), g);   /* g is absolute */
    snprintf(cmd, sizeof cmd, "cd / && '%s' train --config '%s' --json", bin, path);
    free(bin);
    ck_assert_int_eq(tu_sh(cmd, &out, NULL), 0);
    cJSON *again = tu_json_last(out);
    ck_assert(tu_json_dbl(again, "test_acc") == tu_json_dbl(first, "test_acc"));
    cJSON_Delete(first);
    cJSON_Delete(again);
    free(out);
}
END_TEST

/* prune's evaluation flags (refused before any work) and its budget lines: one per --keep, each
 * naming its budget and the count; --eval-budget steps recorded; --no-full leaves full_acc null */
START_TEST(prune_flags_and_lines) {
    static const struct { const char *args, *msg; } bad[] = {
        {"--eval --runs 0", "inca prune: --runs: expected >= 1, got 0"},
        {"--eval-budget x", "inca prune: --eval-budget: expected epochs or steps, got 'x'"},
        {"--eval --eval-sets coreset,bogus", "inca prune: --eval-sets: expected a list of coreset, random, full, got 'coreset,bogus'"},
        {"extra", "inca prune: expected one STORE argument, got 2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) refused(bad[i].msg, "prune '%s' %s", g, bad[i].args);
    char *out = NULL, *err = NULL;
    ck_assert_int_eq(run(&out, &err, "prune '%s' --labeled 0.1 --ssl labelprop --keep 0.3,0.5 --proxy-epochs 3 --threads 1 "
                         "--eval --eval-budget steps --epochs 3 --no-full --json --quiet", g), 0);
    cJSON *l[4];
    const int n = tu_json_lines(out, l, 4);
    ck_assert_int_eq(n, 2);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq((long)tu_json_dbl(l[i], "budget"), i);
        ck_assert_int_eq((long)tu_json_dbl(l[i], "budgets"), 2);
        ck_assert_double_eq(tu_json_dbl(l[i], "keep"), i ? 0.5 : 0.3);
        ck_assert_int_eq((long)tu_json_dbl(l[i], "pool"), 120);   /* the train split, 0.6 of 200 */
        ck_assert_int_eq((long)tu_json_dbl(l[i], "kept"), i ? 60 : 36);
        ck_assert_str_eq(str_at(l[i], "defaults"), "graph");
        ck_assert_str_eq(str_at(l[i], "eval_budget"), "steps");
        ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(l[i], "full_acc")));
        ck_assert(tu_json_dbl(l[i], "coreset_acc") >= 0);
    }
    tu_json_free_lines(l, n);
    ck_assert_msg(!*err, "--quiet: %s", err);
    free(out);
    free(err);
}
END_TEST

/* prune's text and JSON from the run itself: the unlabelled count is the pool less the labelled,
 * an evaluation without the random set prints and writes no figure for it (nan ± nan, null; the
 * coreset's std is its own), --relabel is reported, a graph's pseudo-labels run no kNN search
 * (knn_search null), the outputs' flags stay out of the config (a --config rerun must not
 * overwrite them) and a --labeled not given is its help's 0.01; --out with the second budget's
 * store already there is refused before the first is written, and --indices' two files are
 * checked before any work too; --reuse-dynamics writes nothing
 * to the store (data.mdb's modification time stays). */
START_TEST(prune_reports_and_outputs) {
    char *out = NULL, *err = NULL, path[1200], p1[1200], p2[1200];
    ck_assert_int_eq(run(&out, &err, "prune '%s' --labeled 0.1 --ssl labelprop --keep 0.3 --proxy-epochs 3 --threads 1 --eval "
                         "--epochs 3 --runs 2 --eval-sets coreset --quiet", g), 0);
    long pool = -1, lab = -1, unl = -1;
    const char *l0 = strstr(out, "prune: pool ");
    ck_assert_msg(l0 && sscanf(l0, "prune: pool %ld, labelled %ld,", &pool, &lab) == 2, "%s", out);
    const char *u = strstr(l0, "(on the ");
    ck_assert(u && sscanf(u, "(on the %ld unlabelled)", &unl) == 1);
    ck_assert_int_eq(unl, pool - lab);
    ck_assert_msg(strstr(out, ", random nan ± nan, full nan ± nan") != NULL && !strstr(out, "± nan, random"), "%s", out);
    free(out);
    free(err);
    snprintf(path, sizeof path, "%s/sel.txt", dir);
    cJSON *j = run_json("prune '%s' --ssl labelprop --keep 0.3 --proxy-epochs 3 --threads 1 --eval --epochs 3 --runs 2 "
                        "--eval-sets coreset --relabel 1 --indices '%s' --json --quiet", g, path);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "random_acc_std")));
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "coreset_acc_std")));
    ck_assert_int_eq((long)tu_json_dbl(j, "relabel"), 1);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "knn_search")));
    const cJSON *cfg = tu_json_get(j, "config", cJSON_Object);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(cfg, "indices"));
    ck_assert_double_eq(tu_json_dbl(cfg, "labeled"), 0.01);
    cJSON_Delete(j);
    snprintf(path, sizeof path, "%s/p.lmdb", dir);
    snprintf(p1, sizeof p1, "%s/p-keep0.3.lmdb", dir);
    snprintf(p2, sizeof p2, "%s/p-keep0.5.lmdb", dir);
    ck_assert_int_eq(mkdir(p2, 0755), 0);
    char want[2600];
    snprintf(want, sizeof want, "inca prune: --out %s: already exists (pass --overwrite to replace it)", p2);
    refused(want, "prune '%s' --keep 0.3,0.5 --proxy-epochs 3 --threads 1 --out '%s' --quiet", g, path);
    ck_assert_int_ne(access(p1, F_OK), 0);
    ck_assert_int_eq(rmdir(p2), 0);
    /* --indices FILE.npy writes FILE.txt too: each refused before any work when it exists (the
     * user's file left as it was), when its folder does not exist, or when it is a folder */
    snprintf(path, sizeof path, "%s/mine.txt", dir);
    FILE *f = fopen(path, "w");
    ck_assert(f && fputs("precious\n", f) >= 0 && fclose(f) == 0);
    snprintf(p1, sizeof p1, "%s/mine.npy", dir);
    snprintf(want, sizeof want, "inca prune: --indices %s: already exists (pass --overwrite to replace it)", path);
    refused(want, "prune '%s' --keep 0.3 --proxy-epochs 3 --threads 1 --indices '%s' --quiet", g, p1);
    char back[32] = {0};
    ck_assert((f = fopen(path, "r")) && fgets(back, sizeof back, f) && fclose(f) == 0);
    ck_assert_str_eq(back, "precious\n");
    ck_assert_int_ne(access(p1, F_OK), 0);
    refused("inca prune: --indices: /nonexistent/i.npy: cannot write: folder /nonexistent does not exist",
            "prune '%s' --keep 0.3 --proxy-epochs 3 --threads 1 --indices /nonexistent/i.npy --quiet", g);
    snprintf(want, sizeof want, "inca prune: --indices %s: is a folder, expected a file", dir);
    refused(want, "prune '%s' --keep 0.3 --proxy-epochs 3 --threads 1 --indices '%s' --overwrite --quiet", g, dir);
    ck_assert_int_eq(run(NULL, NULL, "prune '%s' --keep 0.3 --proxy-epochs 3 --threads 1 --indices '%s' --overwrite --quiet", g,
                         p1), 0);
    ck_assert_int_eq(access(p1, F_OK), 0);
    struct stat s0, s1;
    snprintf(path, sizeof path, "%s/data.mdb", g);
    ck_assert_int_eq(run(NULL, NULL, "prune '%s' --keep 0.3 --proxy-epochs 3 --threads 1 --dyn-tag r --quiet", g), 0);
    ck_assert_int_eq(stat(path, &s0), 0);
    ck_assert_int_eq(run(NULL, NULL, "prune '%s' --keep 0.3 --proxy-epochs 3 --threads 1 --dyn-tag r --reuse-dynamics --quiet", g), 0);
    ck_assert_int_eq(stat(path, &s1), 0);
    ck_assert_msg(s0.st_mtim.tv_sec == s1.st_mtim.tv_sec && s0.st_mtim.tv_nsec == s1.st_mtim.tv_nsec,
                  "--reuse-dynamics wrote to the store");
}
END_TEST

/* prune's flags where they have no effect, typed, are refused before any work with the flag and
 * what the run has instead (train's rule); each is accepted where it acts, and a --config rerun
 * of a ccs line (every flag recorded, defaults included) is not refused. Of the labelled subset's
 * flags one at most is typed, --labeled-per-class takes K >= 1, and the one typed wins over the
 * others a --config file gives (recorded as not given). */
START_TEST(prune_flag_effects) {
    static const char *const sel = "only ccs and double-end drop mislabelled examples";
    static const char *const st = "only --ssl selftrain trains with it; auto picks among spreading, SGC and the proxy";
    static const char *const sp = "only label spreading (--ssl labelprop or auto) uses it";
    static const char *const ev = "it sets the evaluation of the coreset, which only --eval runs";
    static const char *const lab = "give one of --labeled, --labeled-per-class, --labeled-indices";
    static const struct { const char *args, *flag, *with, *why; } bad[] = {
        {"--select topk --mis-ratio 0.5", "--mis-ratio", "with --select topk", NULL},
        {"--select random --mis-ratio 0", "--mis-ratio", "with --select random", NULL},
        {"--select double-end --strata 10", "--strata", "with --select double-end", "only ccs samples across score strata"},
        {"--topk easy", "--topk", "with --select ccs", "only topk keeps the hardest or the easiest"},
        {"--select double-end --topk hard", "--topk", "with --select double-end", "only topk keeps the hardest or the easiest"},
        {"--select random --score el2n", "--score", "with --select random", "random selection reads no score"},
        {"--score aum --el2n-epochs 5 --no-save-dynamics", "--el2n-epochs", "with --score aum and --no-save-dynamics",
         "only el2n averages over the first epochs, and saved dynamics keep the window"},
        {"--tau 0.5", "--tau", "with --ssl auto", NULL},
        {"--ssl labelprop --noise 0", "--noise", "with --ssl labelprop", NULL},
        {"--ssl proxy --lambda-u 2", "--lambda-u", "with --ssl proxy", NULL},
        {"--ssl sgc --ssl-epochs 5", "--ssl-epochs", "with --ssl sgc", NULL},
        {"--ssl sgc --alpha 0.5", "--alpha", "with --ssl sgc", NULL},
        {"--ssl cs --cmn", "--cmn", "with --ssl cs", NULL},
        {"--ssl proxy --iters 5", "--iters", "with --ssl proxy", "only label spreading (--ssl labelprop or auto) and cs iterate"},
        {"--model mlp", "--model", "without --eval", NULL},
        {"--method cluster", "--method", "without --eval", NULL},
        {"--parts 20", "--parts", "without --eval", NULL},
        {"--batch-parts 2", "--batch-parts", "without --eval", NULL},
        {"--epochs 3", "--epochs", "without --eval", NULL},
        {"--hidden 8", "--hidden", "without --eval", NULL},
        {"--layers 3", "--layers", "without --eval", NULL},
        {"--lr 0.1", "--lr", "without --eval", NULL},
        {"--dropout 0.1", "--dropout", "without --eval", NULL},
        {"--batch-size 16", "--batch-size", "without --eval", NULL},
        {"--runs 2", "--runs", "without --eval", NULL},
        {"--eval-sets coreset", "--eval-sets", "without --eval", NULL},
        {"--eval-budget steps", "--eval-budget", "without --eval", NULL},
        {"--no-full", "--no-full", "without --eval", NULL},
    };
    char want[1024], res[1200];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *why = bad[i].why ? bad[i].why
                          : !strcmp(bad[i].with, "without --eval")             ? ev
                          : strstr(bad[i].with, "--select")                    ? sel
                          : !strcmp(bad[i].flag, "--alpha") || !strcmp(bad[i].flag, "--cmn") ? sp
                                                                                : st;
        snprintf(want, sizeof want, "inca prune: %s: has no effect %s (%s)", bad[i].flag, bad[i].with, why);
        refused(want, "prune '%s' %s --quiet", g, bad[i].args);
    }
    static const struct { const char *args, *msg; } lbad[] = {
        {"--labeled-per-class 0", "--labeled-per-class: expected >= 1, got 0"},
        {"--labeled-per-class -3", "--labeled-per-class: expected >= 1, got -3"},
        {"--labeled 0.1 --labeled-per-class 3", "--labeled and --labeled-per-class: "},
        {"--labeled-indices x.npy --labeled 0.1", "--labeled and --labeled-indices: "},
        {"--labeled-per-class 3 --labeled-indices x.npy", "--labeled-per-class and --labeled-indices: "},
        {"--labeled 0.1 --labeled-per-class 3 --labeled-indices x.npy", "--labeled, --labeled-per-class and --labeled-indices: "},
    };
    for (size_t i = 0; i < sizeof lbad / sizeof lbad[0]; i++) {
        snprintf(want, sizeof want, "inca prune: %s%s", lbad[i].msg, lbad[i].msg[strlen(lbad[i].msg) - 1] == ' ' ? lab : "");
        refused(want, "prune '%s' %s --quiet", g, lbad[i].args);
    }
    /* where each acts (the EL2N window of saved dynamics: a reuse matches it) */
    static const char *const ok[] = {
        "--select ccs --mis-ratio 0.1 --strata 10 --score forgetting --no-save-dynamics",
        "--select double-end --mis-ratio 0.1 --no-save-dynamics",
        "--select topk --topk easy --no-save-dynamics",
        "--score el2n --el2n-epochs 2 --no-save-dynamics",
        "--score aum --el2n-epochs 2 --dyn-tag e2",
        "--score aum --el2n-epochs 2 --dyn-tag e2 --reuse-dynamics",
        "--ssl selftrain --tau 0.5 --noise 0.1 --lambda-u 0.5 --ssl-epochs 2 --no-save-dynamics",
        "--ssl labelprop --alpha 0.8 --cmn --iters 5 --no-save-dynamics",
        "--ssl auto --alpha 0.8 --cmn --iters 5 --no-save-dynamics",
        "--ssl cs --iters 5 --no-save-dynamics",
        ("--eval --model mlp --method full --parts 4 --batch-parts 2 --epochs 2 --hidden 8 --layers 2 --lr 0.01 --dropout 0.1 "
         "--batch-size 0 --runs 1 --eval-sets coreset --eval-budget steps --no-full --no-save-dynamics"),
        "--labeled-per-class 2 --no-save-dynamics",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char *err = NULL;
        const int rc = run(NULL, &err, "prune '%s' --keep 0.3 --proxy-epochs 3 --threads 1 %s --quiet", g, ok[i]);
        ck_assert_msg(rc == 0, "prune %s -> %d: %s", ok[i], rc, err ? err : "");
        free(err);
    }
    /* a ccs line's config reruns as it is, and with a typed --select topk (its mis-ratio and
     * strata are the file's, not typed); a typed --labeled wins over the file's per-class count */
    char *out = NULL;
    ck_assert_int_eq(run(&out, NULL, "prune '%s' --labeled-per-class 3 --select ccs --mis-ratio 0.1 --strata 10 --keep 0.3 "
                         "--proxy-epochs 3 --threads 1 --no-save-dynamics --json --quiet", g), 0);
    snprintf(res, sizeof res, "%s/ccs.json", dir);
    FILE *f = fopen(res, "w");
    ck_assert_ptr_nonnull(f);
    fputs(out, f);
    fclose(f);
    cJSON *j0 = tu_json_last(out);
    free(out);
    cJSON *j = run_json("prune --config '%s' --json --quiet", res);
    ck_assert_int_eq((long)tu_json_dbl(j, "labeled"), 12);   /* 3 of each of the 4 classes */
    ck_assert_int_eq((long)tu_json_dbl(j, "kept"), (long)tu_json_dbl(j0, "kept"));
    ck_assert_double_eq(tu_json_dbl(j, "mis_ratio"), 0.1);
    cJSON_Delete(j);
    j = run_json("prune --config '%s' --select topk --json --quiet", res);
    ck_assert_str_eq(str_at(j, "select"), "topk");
    cJSON_Delete(j);
    j = run_json("prune --config '%s' --labeled 0.2 --json --quiet", res);
    ck_assert_int_gt((long)tu_json_dbl(j, "labeled"), 12);
    const cJSON *c = tu_json_get(j, "config", cJSON_Object);
    ck_assert_double_eq(tu_json_dbl(c, "labeled"), 0.2);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c, "labeled-per-class")));
    cJSON_Delete(j);
    cJSON_Delete(j0);
    refused("inca prune: --mis-ratio: has no effect with --select topk (only ccs and double-end drop mislabelled examples)",
            "prune --config '%s' --select topk --mis-ratio 0.1 --quiet", res);
    refused("inca prune: --labeled and --labeled-per-class: give one of --labeled, --labeled-per-class, --labeled-indices",
            "prune --config '%s' --labeled 0.2 --labeled-per-class 2 --quiet", res);
}
END_TEST

/* `inca <args>` under a pseudo-terminal (script(1)): stdout and stderr together */
static __attribute__((noinline)) char *under_pty(const char *args) {
    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof cmd, "script -qfec \"'%s' %s\" /dev/null", tu_bin(), args);
    ck_assert_msg(tu_sh(cmd, &out, NULL) == 0, "under a terminal: inca %s failed: %s", args, out ? out : "");
    return out;
}

/* The status line (cli/progress.h): "\r<cmd>: <message>  <elapsed> s", erased ("\r\x1b[K") before
 * the command's own output, so gen's summary starts on a clean line; a benchmark's --quiet counts
 * wherever it stands, first among the flags too */
START_TEST(status_line) {
    char args[2048];
    snprintf(args, sizeof args, "gen --kind csbm --nodes 300 --avg-degree 4 --out '%s/tty'", dir);
    char *t = under_pty(args);
    const char *line = strstr(t, "\rgen: sampling a csbm graph of 300 nodes  ");
    ck_assert_msg(line, "no status line: %s", t);
    const char *s = line + strlen("\rgen: sampling a csbm graph of 300 nodes  ");
    char *end = NULL;
    strtod(s, &end);
    ck_assert_msg(end > s && strncmp(end, " s\x1b[K", 5) == 0, "no elapsed seconds: %s", line);
    const char *sum = strstr(t, "gen csbm: 300 nodes");
    ck_assert_msg(sum && sum - t >= 4 && memcmp(sum - 4, "\r\x1b[K", 4) == 0, "the status line was not erased: %s", t);
    free(t);
    t = under_pty("bench spmm --quiet --nodes 2000 --avg-degree 4 --features 8 --reps 1 --parts 4 --ordering random");
    ck_assert_msg(!strstr(t, "\rbench spmm"), "bench spmm --quiet showed progress: %s", t);
    free(t);
}
END_TEST

int main(void) {
    dir = tu_mkdtemp();
    if (!dir) { perror("mkdtemp"); return EXIT_FAILURE; }
    snprintf(g, sizeof g, "%s/g", dir);
    char args[2048];
    snprintf(args, sizeof args, "gen --kind csbm --nodes 200 --avg-degree 4 --out '%s' --quiet", g);
    if (tu_inca(args, NULL, NULL) != 0) {
        fprintf(stderr, "inca %s failed\n", args);
        return EXIT_FAILURE;
    }
    Suite *su = suite_create("e2e_cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, main_dispatch);
    tcase_add_test(tc, gen_defaults_and_json);
    tcase_add_test(tc, gen_refusals_and_warning);
    tcase_add_test(tc, partition_refusals);
    tcase_add_test(tc, partition_json_and_quiet);
    tcase_add_test(tc, partition_of_a_table);
    tcase_add_test(tc, ingest_flags);
    tcase_add_test(tc, train_flag_ranges);
    tcase_add_test(tc, train_json_fields);
    tcase_add_test(tc, train_empty_splits_are_null);
    tcase_add_test(tc, train_output_folders);
    tcase_add_test(tc, config_store_absolute);
    tcase_add_test(tc, train_indices_checked);
    tcase_add_test(tc, predict_test_rows_and_runs);
    tcase_add_test(tc, predict_uses_trained_split);
    tcase_add_test(tc, train_names_partition);
    tcase_add_test(tc, new_job_claims_checkpoint_folder);
    tcase_add_test(tc, prune_flags_and_lines);
    tcase_add_test(tc, prune_reports_and_outputs);
    tcase_add_test(tc, prune_flag_effects);
    tcase_add_test(tc, status_line);
    suite_add_tcase(su, tc);
    const int rc = tu_run_suite(su);
    tu_rmrf(dir);
    free(dir);
    return rc;
}
