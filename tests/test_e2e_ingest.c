/* End-to-end tests of `inca ingest`: the bundled Cora checked against the numbers in its
 * README, and every entry of tests/data/bad/ failing with exit 2, one stderr line naming the
 * file and line, and nothing left behind. The shared Facebook and Fashion-MNIST, which may be
 * absent, have their own binaries (test_e2e_facebook.c, test_e2e_fmnist.c) that skip alone. */
#include "testutil.h"
#include "loaders/dataset.h"
#include "graph/csr.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static char *tmp;

static void setup(void) { tmp = tu_mkdtemp(); ck_assert_ptr_nonnull(tmp); }
static void teardown(void) { tu_rmrf(tmp); free(tmp); tmp = NULL; }

START_TEST(test_cora) {
    char src[4096], store[4096];
    snprintf(src, sizeof src, "%s/data/cora", tu_src());
    const char *j = tu_ingest_ok(tmp, "ogb", src, store, sizeof store);
    tu_check_counts(j, 2708, 10556, 1433, 7, 2708);
    tu_check_splits(j, 140, 500, 1000);
    ck_assert(tu_json_num(j, "seconds") >= 0);
    j = tu_info_json(store);
    tu_check_counts(j, 2708, 10556, 1433, 7, 2708);
    tu_check_splits(j, 140, 500, 1000);
    static const long classes[7] = {351, 217, 418, 818, 426, 298, 180};
    tu_check_loaded(store, 49216, classes, 7);
    /* train split: 20 per class (README) */
    dataset_t d;
    ck_assert_int_eq(dataset_load(store, &d), 0);
    long per[7] = {0};
    for (int64_t i = 0; i < d.split_n[SPLIT_TRAIN]; i++) per[d.y[d.split[SPLIT_TRAIN][i]]]++;
    for (int k = 0; k < 7; k++) ck_assert_int_eq(per[k], 20);
    dataset_free(&d);
}
END_TEST

START_TEST(test_existing_store) {
    char src[4096], store[4096];
    snprintf(src, sizeof src, "%s/data/cora", tu_src());
    tu_ingest_ok(tmp, "ogb", src, store, sizeof store);
    char *args = NULL, *err = NULL;
    ck_assert_int_ge(asprintf(&args, "ingest --format ogb '%s' --out '%s'", src, store), 0);
    ck_assert_int_eq(tu_inca(args, NULL, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "already exists"));
    free(args); free(err);
    /* --force replaces it with a different dataset */
    char el[4096];
    snprintf(el, sizeof el, "%s/e.txt", tmp);
    FILE *f = fopen(el, "w");
    fputs("0 1\n1 2\n", f);
    fclose(f);
    ck_assert_int_ge(asprintf(&args, "ingest --format edgelist '%s' --out '%s' --force --symmetrize", el, store), 0);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    free(args);
    const char *j = tu_info_json(store);
    tu_check_counts(j, 3, 4, 0, 0, 0);
}
END_TEST

/* Every entry of tests/data/bad/ with the text its error must contain (file and line). */
static const struct { const char *entry, *needle, *needle2; } bad_expect[] = {
    {"csv-bad-label", "csv-bad-label/train.csv:1:", NULL},
    {"csv-empty-train", "csv-empty-train/train.csv: expected at least one row", NULL},   /* README: files with no rows */
    {"csv-empty-test", "csv-empty-test/test.csv: expected at least one row", NULL},
    {"csv-empty-valid", "csv-empty-valid/valid.csv: expected at least one row", NULL},   /* blank lines only */
    {"csv-missing-test", "csv-missing-test/test", "no such file"},
    {"csv-nonnumber", "csv-nonnumber/train.csv:2:", "expected a number"},
    {"csv-junk-number", "csv-junk-number/train.csv:2: column 2", "expected a number"},
    {"csv-only-label", "csv-only-label/train.csv:1:", NULL},
    {"csv-ragged", "csv-ragged/test.csv:2:", NULL},
    {"edgelist-corrupt.txt.gz", "edgelist-corrupt.txt.gz:1:", "corrupt gzip"},
    {"edgelist-empty.txt", "edgelist-empty.txt:1:", NULL},
    {"edgelist-id-too-large.txt", "edgelist-id-too-large.txt:2:", "out of range"},
    {"edgelist-sparse-ids.txt", "edgelist-sparse-ids.txt:3: node id 2000000000 makes a graph of 2000000001 nodes",
     "name at most 6"},   /* used to take 16 GB of row pointers (killed on a 24 GB machine) */
    {"edgelist-negative-id.txt", "edgelist-negative-id.txt:2:", "out of range"},
    {"edgelist-negative-dst.txt", "edgelist-negative-dst.txt:3: node id -4 out of range", NULL},   /* was the CSR's
                                                                                            line-less message */
    {"edgelist-unnamed-limit.txt", "edgelist-unnamed-limit.txt:2: node id 16777220 makes a graph of 16777221 nodes",
     "name at most 4"},   /* 2 edges name 4 ids, 2^24 more allowed: id 16777219 is the largest taken */
    {"edgelist-nonnumber.txt", "edgelist-nonnumber.txt:3:", NULL},
    {"edgelist-one-column.txt", "edgelist-one-column.txt:2:", NULL},
    {"edgelist-truncated.txt.gz", "edgelist-truncated.txt.gz:", "truncated gzip"},
    {"idx-bad-magic", "idx-bad-magic/train-images-idx3-ubyte: byte offset 0:", "magic"},
    {"idx-huge-dims", "idx-huge-dims/train-images-idx3-ubyte: byte offset 8:", "1..65535"},   /* fuzz_idx */
    {"idx-huge-count", "idx-huge-count/train-images-idx3-ubyte: byte offset 4: declares 4294967295 rows",
     "the file holds at most 0"},
    {"idx-huge-count-gz", "idx-huge-count-gz/train-images-idx3-ubyte.gz: byte offset 4: declares 4294967295 rows",
     "the file holds at most 61"},   /* 1032 x the 61 compressed bytes, 784 bytes per image */
    {"idx-count-mismatch", "idx-count-mismatch/train-labels-idx1-ubyte: byte offset 4:", NULL},
    {"idx-missing-test", "idx-missing-test/t10k-images-idx3-ubyte", "no such file"},
    {"idx-short-data", "idx-short-data/t10k-images-idx3-ubyte: byte offset 4: declares 2 rows", "at most 1"},
    {"idx-size-mismatch", "idx-size-mismatch/t10k-images-idx3-ubyte: byte offset 8:", NULL},
    {"idx-trailing-bytes", "idx-trailing-bytes/t10k-labels-idx1-ubyte: byte offset 10:", NULL},
    {"metis-asymmetric.graph", "metis-asymmetric.graph:4:", "does not list 2"},
    {"metis-bad-count.graph", "metis-bad-count.graph:2:", "adjacency entries"},
    {"metis-bad-fmt.graph", "metis-bad-fmt.graph:1:", "fmt"},
    {"metis-bad-header.graph", "metis-bad-header.graph:1:", NULL},
    {"metis-huge-m.graph", "metis-huge-m.graph:1: declares 2000000000000 adjacency entries", "holds at most 10"},
    {"metis-huge-n-fuzz.graph", "metis-huge-n-fuzz.graph:1: declares 1111222222 rows", "the file holds at most"},   /* fuzz: allocated n first */
    {"metis-huge-n.graph", "metis-huge-n.graph:1: declares 1000000000000 rows", "the file holds at most 20"},
    {"metis-missing-weight.graph", "metis-missing-weight.graph:3:", "weight"},
    {"metis-nonnumber.graph", "metis-nonnumber.graph:3:", NULL},
    {"metis-float-weight.graph", "metis-float-weight.graph:2:", "vertex size/weight"},
    {"metis-out-of-range.graph", "metis-out-of-range.graph:3:", "out of range"},
    {"metis-too-few-lines.graph", "metis-too-few-lines.graph:5:", NULL},
    {"metis-too-many-lines.graph", "metis-too-many-lines.graph:4:", NULL},
    {"metis-zero-id.graph", "metis-zero-id.graph:3:", "out of range"},
    {"ogb-bad-label", "ogb-bad-label/raw/node-label.csv:2:", NULL},
    {"ogb-edge-count-disagrees", "ogb-edge-count-disagrees/raw/num-edge-list.csv:1: declares 5 rows",
     "raw/edge.csv holds at most 3"},   /* 12 bytes cannot hold 5 'a,b' lines */
    {"ogb-edge-extra-lines", "ogb-edge-extra-lines/raw/edge.csv:3:", "num-edge-list"},
    {"ogb-edge-missing-line", "ogb-edge-missing-line/raw/edge.csv:3: expected 3 edge lines (num-edge-list), found only 2",
     NULL},   /* indented: 12 bytes pass the size check */
    {"ogb-edge-one-column", "ogb-edge-one-column/raw/edge.csv:2:", NULL},
    {"ogb-edge-dst-equals-n", "ogb-edge-dst-equals-n/raw/edge.csv:2: node id 4 out of range", "expected 0..3"},
    {"ogb-edge-three-columns", "ogb-edge-three-columns/raw/edge.csv:2: expected 'src,dst'", NULL},
    {"ogb-edge-out-of-range", "ogb-edge-out-of-range/raw/edge.csv:2:", "out of range"},
    {"ogb-empty-node-count", "ogb-empty-node-count/raw/num-node-list.csv:1:", NULL},
    {"ogb-huge-edge-count", "ogb-huge-edge-count/raw/num-edge-list.csv:1: declares 1000000000000 rows",
     "raw/edge.csv holds at most 3"},
    {"ogb-graph-only-huge-count", "ogb-graph-only-huge-count/raw/num-node-list.csv:1: declares 500000000 nodes",
     "expected at most 16777218"},   /* fuzz: no per-node file to check the count against */
    {"ogb-huge-node-count", "ogb-huge-node-count/raw/num-node-list.csv:1: declares 2000000000 rows",
     "raw/node-label.csv holds at most 9"},
    {"npy-huge-rows.npy", "npy-huge-rows.npy: declares 1000000000000 rows", "the file holds at most 1"},
    {"npy-negative-index.txt", "npy-negative-index.txt:2: expected a non-negative integer index, got '-1'", NULL},
    {"npy-two-columns.npy", "npy-two-columns.npy: .npy indices must be 1-D or (n, 1)", NULL},   /* (3, 2) int64 */
    {"ogb-feat-wide-first-row", "ogb-feat-wide-first-row/raw/node-feat.csv:1: rows of 400 values",
     "holds at most 2 of them, expected 1000"},   /* checked before n*f floats are allocated */
    {"ogb-feat-missing-rows", "ogb-feat-missing-rows/raw/node-feat.csv:4:", NULL},
    {"ogb-feat-long-row", "ogb-feat-long-row/raw/node-feat.csv:2: column 3", "too many values"},
    {"ogb-missing-node-count", "ogb-missing-node-count/raw/num-node-list", "no such file"},
    {"ogb-nan-feat", "ogb-nan-feat/raw/node-feat.csv:2:", "finite"},
    {"ogb-negative-id", "ogb-negative-id/raw/edge.csv:1:", "out of range"},
    {"ogb-negative-label", "ogb-negative-label/raw/node-label.csv:3:", NULL},
    {"ogb-negative-edge-count", "ogb-negative-edge-count/raw/num-edge-list.csv:1:", "non-negative"},
    {"ogb-node-count-disagrees", "ogb-node-count-disagrees/raw/node-label.csv:5:", NULL},
    {"ogb-nonnumber-feat", "ogb-nonnumber-feat/raw/node-feat.csv:2:", "column 2"},
    {"ogb-ragged-feat", "ogb-ragged-feat/raw/node-feat.csv:3:", "column 2"},
    {"ogb-split-duplicate", "ogb-split-duplicate/split/public/train.csv:2:", "twice"},
    {"ogb-split-overlap", "ogb-split-overlap/split/public/test.csv:2: node id 1", "in the train split"},
    {"ogb-split-out-of-range", "ogb-split-out-of-range/split/public/test.csv:2:", "out of range"},
    {"ogb-truncated-gz", "ogb-truncated-gz/raw/edge.csv.gz:", "truncated gzip"},
    {"ogb-two-edge-counts", "ogb-two-edge-counts/raw/num-edge-list.csv:2:", NULL},
};
#define NBAD (sizeof bad_expect / sizeof bad_expect[0])

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

START_TEST(test_bad_catalogue) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/data/bad", tu_src());
    DIR *dh = opendir(dir);
    ck_assert_ptr_nonnull(dh);
    char *names[256];
    int k = 0;
    struct dirent *de;
    while ((de = readdir(dh)) && k < 256)
        /* store-* entries are records for a store, not ingest inputs: tests/test_fuzz_regress.c */
        if (de->d_name[0] != '.' && strncmp(de->d_name, "store-", 6) != 0) names[k++] = strdup(de->d_name);
    closedir(dh);
    qsort(names, (size_t)k, sizeof names[0], cmp_str);
    char idx_store[4200];
    snprintf(idx_store, sizeof idx_store, "%s/small.lmdb", tmp);
    char *gen = NULL;
    ck_assert_int_ge(asprintf(&gen, "gen --kind csbm --nodes 50 --avg-degree 3 --features 2 --classes 2 --out '%s'",
                              idx_store), 0);
    ck_assert_int_eq(tu_inca(gen, NULL, NULL), 0);
    free(gen);
    ck_assert_int_ge(k, 20);
    ck_assert_int_eq(k, (int)NBAD);   /* every expectation has its entry and vice versa */
    for (int i = 0; i < k; i++) {
        const char *name = names[i];
        size_t e = 0;
        while (e < NBAD && strcmp(bad_expect[e].entry, name) != 0) e++;
        ck_assert_msg(e < NBAD, "%s: no expectation in bad_expect", name);
        char fmt[32];
        snprintf(fmt, sizeof fmt, "%.*s", (int)strcspn(name, "-"), name);
        char *outdir = tu_mkdtemp(), *args = NULL, *err = NULL;
        if (strcmp(fmt, "npy") == 0)   /* an index file: read after a (valid) store is loaded */
            ck_assert_int_ge(asprintf(&args, "train '%s' --train-indices '%s/%s' --epochs 1", idx_store, dir, name), 0);
        else
            ck_assert_int_ge(asprintf(&args, "ingest --format %s '%s/%s' --out '%s/store'", fmt, dir, name, outdir), 0);
        int rc = tu_inca(args, NULL, &err);
        ck_assert_msg(rc == 2, "%s: exit %d, expected 2 (stderr: %s)", name, rc, err);
        size_t len = strlen(err);
        ck_assert_msg(len > 0 && err[len - 1] == '\n' && strchr(err, '\n') == err + len - 1,
                      "%s: expected exactly one stderr line, got: %s", name, err);
        ck_assert_msg(strstr(err, bad_expect[e].needle), "%s: stderr lacks '%s': %s", name, bad_expect[e].needle, err);
        if (bad_expect[e].needle2)
            ck_assert_msg(strstr(err, bad_expect[e].needle2), "%s: stderr lacks '%s': %s", name,
                          bad_expect[e].needle2, err);
        DIR *od = opendir(outdir);   /* no store and no temporary directory beside it */
        ck_assert_ptr_nonnull(od);
        while ((de = readdir(od)))
            ck_assert_msg(de->d_name[0] == '.', "%s: left %s behind", name, de->d_name);
        closedir(od);
        tu_rmrf(outdir);
        free(outdir); free(args); free(err); free(names[i]);
    }
}
END_TEST

/* Side files of an edge list that must be refused with exit 2 and one stderr line naming the
 * file and line: a feature row wider than the first (its extra value shifted every later row),
 * a label file with no row at all (the store came out unlabelled). */
START_TEST(test_edgelist_side_refusals) {
    char edges[4200], side[4200];
    snprintf(edges, sizeof edges, "%s/e.txt", tmp);
    snprintf(side, sizeof side, "%s/side.txt", tmp);
    FILE *f = fopen(edges, "w");
    ck_assert_ptr_nonnull(f);
    fputs("0 1\n1 2\n", f);
    fclose(f);
    static const struct { const char *opt, *text, *needle, *needle2; } bad[] = {
        {"--features", "0 1 2\n1 3 4 5\n2 6 7\n", "side.txt:2:", "expected 2 feature values"},
        {"--labels", "# node label\n\n", "side.txt:3:", "at least one row"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = fopen(side, "w");
        ck_assert_ptr_nonnull(f);
        fputs(bad[i].text, f);
        fclose(f);
        char *args = NULL, *err = NULL;
        ck_assert_int_ge(asprintf(&args, "ingest --format edgelist '%s' %s '%s' --out '%s/s%zu'", edges, bad[i].opt, side,
                                  tmp, i), 0);
        const int rc = tu_inca(args, NULL, &err);
        ck_assert_msg(rc == 2, "%s: exit %d, expected 2 (stderr: %s)", bad[i].opt, rc, err);
        const size_t len = strlen(err);
        ck_assert_msg(len > 0 && strchr(err, '\n') == err + len - 1, "%s: expected one stderr line: %s", bad[i].opt, err);
        ck_assert_msg(strstr(err, bad[i].needle) && strstr(err, bad[i].needle2), "%s: stderr lacks '%s' / '%s': %s",
                      bad[i].opt, bad[i].needle, bad[i].needle2, err);
        free(args);
        free(err);
    }
}
END_TEST

START_TEST(test_usage_errors) {
    char cora[4096];
    snprintf(cora, sizeof cora, "%s/data/cora", tu_src());
    static const struct { const char *args, *needle; } bad[] = {
        {"ingest --format xml %s --out %s/X", "--format"},
        {"ingest %s --out %s/X", "--format"},
        {"ingest --format ogb --out %s/X", "SRC"},
        {"ingest --format ogb %s", "--out"},
        {"ingest --format ogb %s %s/X --out Y", "exactly one SRC"},
        {"ingest --format csv %s --split public --out %s/X", "--split"},
        {"ingest --format idx %s --symmetrize --out %s/X", "no graph"},
        {"ingest --format ogb %s --labels l.txt --out %s/X", "--labels"},
        {"ingest --format ogb %s --split nosuch --out %s/X", "nosuch"},
        {"ingest --format ogb %s --bogus --out %s/X", "--bogus"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *args = NULL, *err = NULL;
        ck_assert_int_ge(asprintf(&args, bad[i].args, cora, tmp), 0);
        ck_assert_msg(tu_inca(args, NULL, &err) == 2, "%s: expected exit 2, stderr %s", args, err);
        ck_assert_msg(strstr(err, bad[i].needle), "%s: stderr lacks '%s': %s", args, bad[i].needle, err);
        free(args); free(err);
    }
    ck_assert(!tu_exists("Y"));
    /* what a directed, featureless edge list refuses names the store and the way out (the messages
     * named neither) */
    char el[4200], st[4200], cmd[8800], *err = NULL;
    snprintf(el, sizeof el, "%s/d.txt", tmp);
    snprintf(st, sizeof st, "%s/d.lmdb", tmp);
    FILE *f = fopen(el, "w");
    ck_assert_ptr_nonnull(f);
    fputs("0 1\n1 2\n2 3\n", f);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "ingest --format edgelist '%s' --out '%s'", el, st);
    ck_assert_int_eq(tu_inca(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "partition '%s' --parts 2", st);
    ck_assert_int_eq(tu_inca(cmd, NULL, &err), 2);
    ck_assert_msg(strstr(err, st) && strstr(err, "--symmetrize"), "%s", err);
    free(err);
    snprintf(cmd, sizeof cmd, "train '%s' --epochs 1 --model mlp", st);
    ck_assert_int_eq(tu_inca(cmd, NULL, &err), 2);
    ck_assert_msg(strstr(err, st) && strstr(err, "no node features"), "%s", err);
    free(err);
}
END_TEST

/* The CSV layout the README documents (its csv-example block, run as written with $B the binary)
 * ingests to what its comment says, and ingest --help names the layout (issue 31 item 12). */
START_TEST(test_csv_readme_example) {
    char path[4096];
    snprintf(path, sizeof path, "%s/README.md", tu_src());
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 20];
    const size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    const char *b = strstr(text, "<!-- csv-example:begin -->"), *e = b ? strstr(b, "<!-- csv-example:end -->") : NULL;
    ck_assert_msg(b && e, "README.md: no csv-example block");
    const char *code = strstr(b, "```sh\n"), *end = code ? strstr(code + 6, "```") : NULL;
    ck_assert_msg(code && end && end < e, "README.md: the csv-example block holds no ```sh fence");
    code += 6;
    char script[4096];
    snprintf(script, sizeof script, "%s/example.sh", tmp);
    f = fopen(script, "w");
    ck_assert_ptr_nonnull(f);
    fwrite(code, 1, (size_t)(end - code), f);
    fclose(f);
    char cmd[8192], *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "cd '%s' && B='%s' sh -e example.sh", tmp, tu_bin());
    ck_assert_msg(tu_sh(cmd, &out, &err) == 0, "the README's csv example: %s", err ? err : "");
    ck_assert_msg(strstr(out, "5 nodes, 0 edges, 3 features, 3 classes, splits 3/0/1"), "%s", out);
    free(out);
    free(err);
    snprintf(path, sizeof path, "%s/mytable.lmdb", tmp);
    const char *j = tu_info_json(path);
    tu_check_counts(j, 5, 0, 3, 3, 4);
    tu_check_splits(j, 3, 0, 1);
    /* the plain listing gives the same counts, one a line: the example's 5 rows, one of them
     * unlabelled (4 labelled), 3 features, classes 0 to 2, 3 training rows and 1 test row */
    snprintf(cmd, sizeof cmd, "info '%s'", path);
    ck_assert_int_eq(tu_inca(cmd, &out, NULL), 0);
    static const char *const lines[] = {"\nnodes       5\n", "\nedges       0 directed (no graph)\n", "\nfeatures    3 (float32)\n",
                                        "\nclasses     3\n", "\nlabeled     4\n", "\nsplits      train 3 / valid 0 / test 1"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ck_assert_msg(strstr(out, lines[i]), "inca info: no line '%s' in:\n%s", lines[i] + 1, out);
    free(out);
    /* the help names the files and the line format; a header line is refused saying there is none */
    out = err = NULL;
    ck_assert_int_eq(tu_inca("ingest --help", &out, NULL), 0);
    ck_assert_msg(strstr(out, "train.csv") && strstr(out, "test.csv") && strstr(out, "label,f1,...,fk") &&
                  strstr(out, "no header"), "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/mytable/train.csv", tmp);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("label,f1,f2,f3\n0,1,2,3\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "ingest --format csv '%s/mytable' --out '%s/header.lmdb'", tmp, tmp);
    ck_assert_int_eq(tu_inca(cmd, NULL, &err), 2);
    ck_assert_msg(strstr(err, "train.csv:1: column 1") && strstr(err, "no header"), "%s", err);
    free(err);
}
END_TEST

/* A table of unlabelled rows only is a dataset without classes: stored (0 classes, empty splits,
 * as the README says), and refused by train and prune, each naming why (prune said the pool held
 * 0 nodes and to give --split random:..., which draws from the labelled rows: none) */
START_TEST(test_csv_unlabelled_table) {
    char cmd[4096], *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "mkdir '%s/u' && printf ',1,2\\nnan,3,4\\n' > '%s/u/train.csv' && printf -- '-1,5,6\\n' > '%s/u/test.csv'",
             tmp, tmp, tmp);
    ck_assert_int_eq(tu_sh(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "ingest --format csv '%s/u' --out '%s/u.lmdb'", tmp, tmp);
    ck_assert_int_eq(tu_inca(cmd, &out, NULL), 0);
    ck_assert_msg(strstr(out, "3 nodes, 0 edges, 2 features, 0 classes, splits 0/0/0"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "train '%s/u.lmdb' --model mlp --epochs 1", tmp);
    ck_assert_int_eq(tu_inca(cmd, NULL, &err), 2);
    ck_assert_msg(strstr(err, "has no labels"), "%s", err);
    free(err);
    snprintf(cmd, sizeof cmd, "prune '%s/u.lmdb' --keep 0.5 --out '%s/p.lmdb'", tmp, tmp);
    ck_assert_int_eq(tu_inca(cmd, NULL, &err), 2);
    ck_assert_msg(strstr(err, "u.lmdb: no node has a label (0 classes)") && !strchr(strchr(err, '\n') + 1, '\n'), "%s", err);
    free(err);
    snprintf(cmd, sizeof cmd, "%s/p.lmdb", tmp);
    ck_assert_int_ne(access(cmd, F_OK), 0);
}
END_TEST

/* A labelled edge list as an editor on Windows saves it (a byte-order mark: it was refused with the
 * mark invisible in the message): the label file names node 7 past the edges' 0..2, so the text
 * says 5 of the 8 nodes are in no edge (isolated_nodes 5 in the JSON; they were added silently),
 * and that no split is stored; train then names the store and the --split to give (it said "no
 * training nodes (empty train split)") */
START_TEST(test_edgelist_isolated_and_no_split) {
    char cmd[4096], *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "cd '%s' && printf '\\357\\273\\2770 1\\n1 2\\n' > e.txt && printf '0 0\\n1 0\\n7 1\\n' > l.txt && printf '0 1\\n7 2\\n' > f.txt",
             tmp);
    ck_assert_int_eq(tu_sh(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "ingest --format edgelist '%s/e.txt' --labels '%s/l.txt' --features '%s/f.txt' --out '%s/e.lmdb'", tmp, tmp,
             tmp, tmp);
    ck_assert_int_eq(tu_inca(cmd, &out, NULL), 0);
    ck_assert_msg(strstr(out, ": 8 nodes (5 in no edge), 2 edges, 1 features,") &&
                  strstr(out, "splits 0/0/0 (none stored: train --split random:TR,VA,TE)"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "ingest --format edgelist '%s/e.txt' --labels '%s/l.txt' --features '%s/f.txt' --out '%s/e.lmdb' --force --json",
             tmp, tmp, tmp, tmp);
    ck_assert_int_eq(tu_inca(cmd, &out, NULL), 0);
    cJSON *j = cJSON_Parse(out);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq((long)tu_json_dbl(j, "isolated_nodes"), 5);
    cJSON_Delete(j);
    free(out);
    snprintf(cmd, sizeof cmd, "train '%s/e.lmdb' --epochs 1", tmp);
    ck_assert_int_eq(tu_inca(cmd, NULL, &err), 2);
    ck_assert_msg(strstr(err, "e.lmdb: no training nodes (the train split is empty") && strstr(err, "--split random:TR,VA,TE"), "%s", err);
    free(err);
}
END_TEST

int main(void) {
    Suite *s = suite_create("e2e_ingest");
    TCase *tc = tcase_create("e2e_ingest");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_cora);
    tcase_add_test(tc, test_existing_store);
    tcase_add_test(tc, test_bad_catalogue);
    tcase_add_test(tc, test_edgelist_side_refusals);
    tcase_add_test(tc, test_usage_errors);
    tcase_add_test(tc, test_csv_readme_example);
    tcase_add_test(tc, test_csv_unlabelled_table);
    tcase_add_test(tc, test_edgelist_isolated_and_no_split);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
