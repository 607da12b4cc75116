/* Unit tests of loaders/textio (line reader over gz and plain files, truncation, number parsers
 * checked bit for bit against strtof) and of every ingest parser on small hand-written inputs
 * whose expected graphs, features, labels and splits are worked out by hand below; plus
 * allocation-failure injection over a whole OGB ingest. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "loaders/ingest.h"
#include "loaders/ingest_internal.h"
#include "loaders/textio.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

static char *tmp;
static void setup(void) { tmp = tu_mkdtemp(); ck_assert_ptr_nonnull(tmp); }
static void teardown(void) { tu_rmrf(tmp); free(tmp); tmp = NULL; }

/* Write tmp/rel (creating folders), gzipped when gz. Returns the full path (static buffer). */
static const char *put(const char *rel, const char *text, size_t len, int gz) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    for (char *p = path + strlen(tmp) + 1; *p; p++)
        if (*p == '/') { *p = '\0'; mkdir(path, 0755); *p = '/'; }
    if (gz) {
        gzFile g = gzopen(path, "wb9");
        ck_assert_ptr_nonnull(g);
        if (len) ck_assert_int_eq(gzwrite(g, text, (unsigned)len), (int)len);
        ck_assert_int_eq(gzclose(g), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(text, 1, len, f), len);
        fclose(f);
    }
    return path;
}
static const char *puts_(const char *rel, const char *text, int gz) { return put(rel, text, strlen(text), gz); }

static const char *tpath(const char *rel) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    return path;
}

/* ---------------- textio ---------------- */
static void check_lines(const char *path) {
    textio_t *t = NULL;
    ck_assert_int_eq(textio_open(path, &t), 0);
    static const char *const want[] = {"a", "bb", "", " c,d ", "last"};
    char *line;
    size_t len;
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(textio_next(t, &line, &len), 1);
        ck_assert_str_eq(line, want[i]);
        ck_assert_uint_eq(len, strlen(want[i]));
        ck_assert_int_eq(textio_lineno(t), i + 1);
    }
    ck_assert_int_eq(textio_next(t, &line, &len), 0);
    ck_assert_int_eq(textio_next(t, &line, &len), 0);
    textio_close(&t);
    ck_assert_ptr_null(t);
}

START_TEST(test_textio_plain_and_gz) {
    const char *text = "a\nbb\r\n\n c,d \nlast";   /* CRLF, empty line, no final newline */
    check_lines(puts_("p.txt", text, 0));
    check_lines(puts_("g.txt.gz", text, 1));
    /* a UTF-8 byte-order mark before line 1 is skipped, plain or gz; one later is text */
    check_lines(puts_("b.txt", "\xef\xbb\xbf" "a\nbb\r\n\n c,d \nlast", 0));
    check_lines(puts_("b.txt.gz", "\xef\xbb\xbf" "a\nbb\r\n\n c,d \nlast", 1));
    textio_t *t = NULL;
    char *line;
    ck_assert_int_eq(textio_open(puts_("b2.txt", "a\n\xef\xbb\xbf" "b\n", 0), &t), 0);
    ck_assert_int_eq(textio_next(t, &line, NULL), 1);
    ck_assert_int_eq(textio_next(t, &line, NULL), 1);
    ck_assert_str_eq(line, "\xef\xbb\xbf" "b");
    textio_close(&t);
    ck_assert_int_eq(textio_open(tpath("none.txt"), &t), INCA_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "none.txt"));
    ck_assert_int_eq(textio_open(tmp, &t), INCA_EINVAL);   /* a directory */
    /* empty file: no lines */
    ck_assert_int_eq(textio_open(puts_("e.txt", "", 0), &t), 0);
    ck_assert_int_eq(textio_next(t, &line, NULL), 0);
    textio_close(&t);
}
END_TEST

START_TEST(test_textio_long_lines) {
    /* lines longer than the 1 MiB read chunk, gz and plain */
    size_t big = 3u << 20;
    char *s = malloc(big + 16);
    memset(s, 'x', big);
    memcpy(s + big, "\ny\n", 3);
    for (int gz = 0; gz < 2; gz++) {
        textio_t *t = NULL;
        ck_assert_int_eq(textio_open(put(gz ? "l.gz" : "l.txt", s, big + 3, gz), &t), 0);
        char *line;
        size_t len;
        ck_assert_int_eq(textio_next(t, &line, &len), 1);
        ck_assert_uint_eq(len, big);
        ck_assert(line[0] == 'x' && line[big - 1] == 'x' && line[big] == '\0');
        ck_assert_int_eq(textio_next(t, &line, &len), 1);
        ck_assert_str_eq(line, "y");
        ck_assert_int_eq(textio_lineno(t), 2);
        ck_assert_int_eq(textio_bytes(t), (int64_t)big + 3);
        ck_assert_int_eq(textio_next(t, &line, &len), 0);
        textio_close(&t);
    }
    free(s);
}
END_TEST

START_TEST(test_textio_truncated_gz) {
    /* 20000 distinct lines, gzipped, then cut in half: the reader must fail, not stop early */
    size_t cap = 20000 * 16, n = 0;
    char *s = malloc(cap);
    for (int i = 0; i < 20000; i++) n += (size_t)sprintf(s + n, "%d,%d\n", i, (i * 7919) % 20011);
    const char *p = put("t.gz", s, n, 1);
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(truncate(p, st.st_size / 2), 0);
    textio_t *t = NULL;
    ck_assert_int_eq(textio_open(p, &t), 0);
    char *line;
    int r;
    int64_t lines = 0;
    while ((r = textio_next(t, &line, NULL)) == 1) lines++;
    ck_assert_int_eq(r, INCA_EINVAL);
    ck_assert_int_gt(lines, 0);
    ck_assert_int_lt(lines, 20000);
    char want[64];
    snprintf(want, sizeof want, "t.gz:%lld: truncated gzip", (long long)lines + 1);
    ck_assert_msg(strstr(inca_errmsg(), want), "message: %s", inca_errmsg());
    textio_close(&t);
    /* a NUL byte inside a text line is an error naming the line */
    ck_assert_int_eq(textio_open(put("nul.txt", "ok\nb\0d\n", 7, 0), &t), 0);
    ck_assert_int_eq(textio_next(t, &line, NULL), 1);
    ck_assert_int_eq(textio_next(t, &line, NULL), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "nul.txt:2:"));
    textio_close(&t);
    free(s);
}
END_TEST

/* One parsed float must equal strtof bit for bit, and stop where strtof stops. */
static int same_as_strtof(const char *s) {
    const char *p = s;
    float v;
    char *end;
    float ref = strtof(s, &end);
    if (!textio_parse_f32(&p, &v)) return end == s;
    if (p != end) return 0;
    if (isnan(ref)) return isnan(v);
    return memcmp(&v, &ref, sizeof v) == 0;
}

START_TEST(test_parse_f32_vs_strtof) {
    static const char *const fixed[] = {"0", "1", "-0", "0.5", "1e-3", "-.5e1", "5.", "3.4028235e38",
                                        "3.4028236e38", "1e-45", "1.4e-45", "7e-46", "0.1", "0.3",
                                        "16777217", "123456789012345678901234", "1e10", "1e11",
                                        "0.000000000123", "nan", "-inf", "2.5,3", "1e", "1e+", "abc",
                                        "", "-", ".", "+7"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        ck_assert_msg(same_as_strtof(fixed[i]), "'%s'", fixed[i]);
    /* random decimals: 1-12 digits, a point anywhere, optional exponent */
    rng_t r;
    rng_seed(&r, 42);
    long bad = 0;
    char buf[64];
    for (int it = 0; it < 200000; it++) {
        int nd = 1 + (int)(rng_next(&r) % 12), dot = (int)(rng_next(&r) % (unsigned)(nd + 2)) - 1, k = 0;
        if (rng_next(&r) & 1) buf[k++] = '-';
        for (int j = 0; j < nd; j++) {
            if (j == dot) buf[k++] = '.';
            buf[k++] = (char)('0' + rng_next(&r) % 10);
        }
        if (rng_next(&r) % 3 == 0) k += sprintf(buf + k, "e%d", (int)(rng_next(&r) % 80) - 40);
        buf[k] = '\0';
        if (!same_as_strtof(buf)) { bad++; if (bad < 5) fprintf(stderr, "mismatch on '%s'\n", buf); }
    }
    ck_assert_int_eq(bad, 0);
}
END_TEST

START_TEST(test_parse_i64_and_label) {
    const char *p;
    int64_t v;
    p = "9223372036854775807"; ck_assert(textio_parse_i64(&p, &v) && v == INT64_MAX && *p == '\0');
    p = "-9223372036854775808"; ck_assert(textio_parse_i64(&p, &v) && v == INT64_MIN);
    p = "9223372036854775808"; ck_assert(!textio_parse_i64(&p, &v));
    p = "  +42,7"; ck_assert(textio_parse_i64(&p, &v) && v == 42 && *p == ',');
    p = "x1"; ck_assert(!textio_parse_i64(&p, &v));
    p = "-"; ck_assert(!textio_parse_i64(&p, &v));
    static const struct { const char *s; int ok; int32_t y; } lab[] = {
        {"", 1, -1}, {"  ", 1, -1}, {"nan", 1, -1}, {"NaN", 1, -1}, {"-1", 1, -1}, {"0", 1, 0}, {" 3 ", 1, 3},
        {"3.0", 1, 3}, {"1e1", 1, 10}, {"-1.0", 1, -1}, {"2.5", 0, 0}, {"-2", 0, 0}, {"x", 0, 0}, {"1 2", 0, 0},
        {"3000000000", 0, 0}, {"1048575", 1, 1048575}, {"1048576", 0, 0}, {"1048575.0", 1, 1048575},
        /* decimals a float rounds to a whole number are no class ids (they were 3 and 7) */
        {"2.9999999", 0, 0}, {"7.00000001", 0, 0}, {"0.99999999", 0, 0}};
    for (size_t i = 0; i < sizeof lab / sizeof lab[0]; i++) {
        int32_t y = 99;
        ck_assert_msg(ingest_parse_label(lab[i].s, &y) == lab[i].ok, "'%s'", lab[i].s);
        if (lab[i].ok) ck_assert_int_eq(y, lab[i].y);
    }
}
END_TEST

/* ---------------- parsers ---------------- */
/* Compare d->adj with a dense expectation given as "u:v,v;u:v" is awkward; use explicit rows. */
static void check_adj(const dataset_t *d, int64_t n, const int64_t *rowptr, const int32_t *col) {
    ck_assert_int_eq(d->adj.n_rows, n);
    for (int64_t i = 0; i <= n; i++) ck_assert_int_eq(d->adj.rowptr[i], rowptr[i]);
    for (int64_t k = 0; k < rowptr[n]; k++) ck_assert_int_eq(d->adj.col[k], col[k]);
}

static void make_ogb(int gz) {
    puts_(gz ? "o/raw/num-node-list.csv.gz" : "o/raw/num-node-list.csv", "5\n", gz);
    puts_(gz ? "o/raw/num-edge-list.csv.gz" : "o/raw/num-edge-list.csv", "5\n", gz);
    /* 0-1, 1-2 twice (once reversed), a self-loop on 3, 3-4 */
    /* blank lines are no rows: within the edges and the split lists, after the n node rows (they
     * were called one edge / label too many) */
    puts_(gz ? "o/raw/edge.csv.gz" : "o/raw/edge.csv", "0,1\n1,2\n\n2,1\n3,3\n3,4\n\n", gz);
    puts_(gz ? "o/raw/node-feat.csv.gz" : "o/raw/node-feat.csv",
          "1,0.5\n-2.25,1e-2\n0,0\n3.5, 4\n1e3,-0\n\n", gz);
    puts_("o/raw/node-label.csv", "1\n\nnan\n0\n-1\n\n", 0);   /* nodes 1, 2, 4 unlabelled */
    puts_("o/split/b/train.csv", "3\n\n", 0);
    puts_("o/split/a/train.csv.gz", "3\n1\n", 1);          /* unsorted; 1 is unlabelled */
    puts_("o/split/a/valid.csv", "2\n", 0);                /* unlabelled: dropped */
    puts_("o/split/a/test.csv", "4\n0\n", 0);
}

START_TEST(test_ogb_small) {
    for (int gz = 0; gz < 2; gz++) {
        tu_rmrf(tpath("o"));
        make_ogb(gz);
        dataset_t d;
        ingest_opts_t o = {0};
        ck_assert_int_eq(ingest_run(INGEST_OGB, tpath("o"), &o, &d), 0);
        ck_assert_int_eq(d.n, 5);
        static const int64_t rp[] = {0, 1, 3, 4, 5, 6};
        static const int32_t col[] = {1, 0, 2, 1, 4, 3};   /* symmetric, deduped, loop dropped */
        check_adj(&d, 5, rp, col);
        ck_assert_int_eq(d.f, 2);
        static const float x[] = {1, 0.5f, -2.25f, 1e-2f, 0, 0, 3.5f, 4, 1e3f, 0};
        for (int i = 0; i < 10; i++) ck_assert(d.x[i] == x[i]);
        static const int32_t y[] = {1, -1, -1, 0, -1};
        for (int i = 0; i < 5; i++) ck_assert_int_eq(d.y[i], y[i]);
        ck_assert_int_eq(d.c, 2);
        ck_assert_int_eq(dataset_labeled(&d), 2);
        ck_assert_int_eq(d.split_n[SPLIT_TRAIN], 1);   /* split "a": {3} */
        ck_assert_int_eq(d.split[SPLIT_TRAIN][0], 3);
        ck_assert_int_eq(d.split_n[SPLIT_VALID], 0);
        ck_assert_int_eq(d.split_n[SPLIT_TEST], 1);
        ck_assert_int_eq(d.split[SPLIT_TEST][0], 0);
        /* the other folder comes along as a named split: "b" = train {3}, nothing else */
        ck_assert_str_eq(d.split_name, "a");
        ck_assert_int_eq(d.n_more, 1);
        ck_assert_str_eq(d.more[0].name, "b");
        ck_assert_int_eq(d.more[0].n[SPLIT_TRAIN], 1);
        ck_assert_int_eq(d.more[0].ids[SPLIT_TRAIN][0], 3);
        ck_assert_int_eq(d.more[0].n[SPLIT_VALID] + d.more[0].n[SPLIT_TEST], 0);
        dataset_free(&d);
        /* --split b, --self-loops */
        o.split = "b";
        o.flags = INGEST_SELF_LOOPS;
        ck_assert_int_eq(ingest_ogb(tpath("o"), &o, &d), 0);
        ck_assert_int_eq(d.split_n[SPLIT_TRAIN], 1);
        ck_assert_int_eq(d.split_n[SPLIT_TEST], 0);
        ck_assert_str_eq(d.split_name, "b");
        ck_assert_int_eq(d.n_more, 1);
        ck_assert_str_eq(d.more[0].name, "a");
        ck_assert_int_eq(d.more[0].n[SPLIT_TRAIN], 1);
        ck_assert_int_eq(d.more[0].n[SPLIT_TEST], 1);
        static const int64_t rp2[] = {0, 2, 5, 7, 9, 11};
        static const int32_t col2[] = {0, 1, 0, 1, 2, 1, 2, 3, 4, 3, 4};
        check_adj(&d, 5, rp2, col2);
        dataset_free(&d);
        o.split = "zz";
        ck_assert_int_eq(ingest_ogb(tpath("o"), &o, &d), INCA_ENOTFOUND);
        ck_assert_msg(strstr(inca_errmsg(), "available: a, b"), "%s", inca_errmsg());
        /* a node in two splits of one folder (test labels in training): refused, naming both */
        puts_("o/split/b/test.csv", "0\n3\n", 0);
        o.split = NULL;
        ck_assert_int_eq(ingest_ogb(tpath("o"), &o, &d), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), "b/test.csv:2: node id 3 is in the train split"), "%s", inca_errmsg());
        tu_rmrf(tpath("o/split/b/test.csv"));
    }
    /* without node-feat and node-label: f = 0, nobody labelled, empty splits */
    unlink(tpath("o/raw/node-feat.csv.gz"));
    unlink(tpath("o/raw/node-label.csv"));
    dataset_t d;
    ck_assert_int_eq(ingest_ogb(tpath("o"), &(ingest_opts_t){0}, &d), 0);
    ck_assert_int_eq(d.f, 0);
    ck_assert_int_eq(d.c, 0);
    ck_assert_int_eq(d.split_n[SPLIT_TRAIN] + d.split_n[SPLIT_TEST], 0);
    ck_assert_int_eq(d.adj.nnz, 6);
    dataset_free(&d);
}
END_TEST

START_TEST(test_edgelist_small) {
    /* puts_ returns a static buffer: keep copies */
    char *p = strdup(puts_("e.txt.gz", "# SNAP header\n% another\n0\t4\n4,2\n  2 0 17\n\n4 2\n1 1\n", 1));
    char *lab = strdup(puts_("lab.txt", "# node label\n0 2\n3,1\n6 nan\n", 0));
    char *feat = strdup(puts_("feat.txt", "2 0.5 1\n0,1,2\n", 0));
    char *lab2 = strdup(puts_("lab2.txt", "0 1\n1 1\n0 2\n", 0));
    dataset_t d;
    ingest_opts_t o = {0};
    ck_assert_int_eq(ingest_edgelist(p, &o, &d), 0);
    ck_assert_int_eq(d.n, 5);
    /* directed: 0->4, 4->2, 2->0 (third column ignored), duplicate 4->2 removed, loop dropped */
    static const int64_t rp[] = {0, 1, 1, 2, 2, 3};
    static const int32_t col[] = {4, 0, 2};
    check_adj(&d, 5, rp, col);
    ck_assert_int_eq(d.f, 0);
    ck_assert_ptr_null(d.y);
    dataset_free(&d);
    o.flags = INGEST_SYMMETRIZE;
    o.labels = lab;
    o.features = feat;
    ck_assert_int_eq(ingest_edgelist(p, &o, &d), 0);
    ck_assert_int_eq(d.n, 7);   /* label file names node 6 */
    static const int64_t rp2[] = {0, 2, 2, 4, 4, 6, 6, 6};
    static const int32_t col2[] = {2, 4, 0, 4, 0, 2};
    check_adj(&d, 7, rp2, col2);
    static const int32_t y[] = {2, -1, -1, 1, -1, -1, -1};
    for (int i = 0; i < 7; i++) ck_assert_int_eq(d.y[i], y[i]);
    ck_assert_int_eq(d.c, 3);
    ck_assert_int_eq(d.f, 2);
    static const float x[] = {1, 2, 0, 0, 0.5f, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 14; i++) ck_assert(d.x[i] == x[i]);
    dataset_free(&d);
    /* the largest class id is kept exactly; one past INGEST_MAX_CLASSES is refused at its line (a
     * stray 2000000000 made 2e9 classes of a 4-node graph, whose training allocated without end);
     * an integral decimal is its class, a decimal a float would round to one is refused */
    char *lab_big = strdup(puts_("lab_big.txt", "0 3\n1 1048575\n2 7.0\n3 1e1\n", 0));
    o.labels = lab_big;
    o.features = NULL;
    ck_assert_int_eq(ingest_edgelist(p, &o, &d), 0);
    ck_assert_int_eq(d.y[1], 1048575);
    ck_assert_int_eq(d.y[2], 7);
    ck_assert_int_eq(d.y[3], 10);
    ck_assert_int_eq(d.c, 1048576);
    dataset_free(&d);
    free(lab_big);
    const char *bad_labels[][2] = {{"0 3\n1 1048576\n", "lab_bad.txt:2: expected 'node label' with a class id in 0..1048575"},
                                   {"0 3\n1 2000000000\n", "lab_bad.txt:2:"},
                                   {"0 2.9999999\n", "lab_bad.txt:1:"},
                                   {"0 1\n1 7.00000001\n", "lab_bad.txt:2:"}};
    for (size_t i = 0; i < sizeof bad_labels / sizeof bad_labels[0]; i++) {
        char *lb = strdup(puts_("lab_bad.txt", bad_labels[i][0], 0));
        o.labels = lb;
        ck_assert_int_eq(ingest_edgelist(p, &o, &d), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), bad_labels[i][1]), "'%s': %s", bad_labels[i][0], inca_errmsg());
        free(lb);
    }
    /* a node listed twice in a side file names both lines */
    o.labels = lab2;
    o.features = NULL;
    ck_assert_int_eq(ingest_edgelist(p, &o, &d), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "lab2.txt:3:") && strstr(inca_errmsg(), "line 1"), "%s", inca_errmsg());
    /* ids that no line backs are refused before n is allocated, naming the line of the largest:
     * here a label file's node 2e9 (16 GB of row pointers for 4 edges) */
    char *lab3 = strdup(puts_("lab3.txt", "0 1\n2000000000 0\n", 0));
    o.labels = lab3;
    ck_assert_int_eq(ingest_edgelist(p, &o, &d), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "lab3.txt:2: node id 2000000000 makes a graph of 2000000001 nodes"), "%s",
                  inca_errmsg());
    /* a feature row of 1100 values and an edge to node 65536: 65536 zero-filled rows (7.2e7
     * floats, past 2^26 and past the one row given) are refused before the n x f array */
    char *e2 = strdup(puts_("e2.txt", "0 65536\n", 0));
    char row[8192];
    int k = snprintf(row, sizeof row, "0");
    for (int i = 0; i < 1100; i++) k += snprintf(row + k, sizeof row - (size_t)k, " 1");
    snprintf(row + k, sizeof row - (size_t)k, "\n");
    char *feat2 = strdup(puts_("feat2.txt", row, 0));
    o.labels = NULL;
    o.features = feat2;
    ck_assert_int_eq(ingest_edgelist(e2, &o, &d), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "feat2.txt: feature rows for 1 of 65537 nodes (1100 values each)"), "%s",
                  inca_errmsg());
    free(p); free(lab); free(feat); free(lab2); free(lab3); free(e2); free(feat2);
}
END_TEST

START_TEST(test_metis_small) {
    /* triangle 1-2-3 plus isolated vertex 4 (a blank line), in several fmt flavours */
    static const struct { const char *name, *text; } g[] = {
        {"m0.graph", "% comment\n4 3\n2 3\n1 3\n% inside\n1 2\n\n"},
        {"m1.graph", "4 3 1\n2 7 3 1\n1 7 3 2\n1 1 2 2\n\n"},
        {"m10.graph", "4 3 10\n5 2 3\n1 1 3\n2 1 2\n9\n"},
        {"m11.graph", "4 3 11 2\n5 6 2 7 3 1\n1 1 1 7 3 2\n2 2 1 1 2 2\n9 9\n"},
        {"m100.graph", "4 3 100\n1 2 3\n1 1 3\n1 1 2\n1\n"},
        {"mtrail.graph", "4 3\n2 3\n1 3\n1 2\n\n\n  \n"},   /* blank lines past the 4th vertex line: not vertices */
    };
    static const int64_t rp[] = {0, 2, 4, 6, 6};
    static const int32_t col[] = {1, 2, 0, 2, 0, 1};
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        dataset_t d;
        ck_assert_msg(ingest_metis(puts_(g[i].name, g[i].text, 0), &(ingest_opts_t){0}, &d) == 0, "%s: %s",
                      g[i].name, inca_errmsg());
        ck_assert_int_eq(d.n, 4);
        check_adj(&d, 4, rp, col);
        dataset_free(&d);
    }
    /* from a pipe (`<(zcat g.graph)`): it has no size, and was refused as "holds at most 0" rows */
    char cmd[16384], fifo[4096];
    snprintf(fifo, sizeof fifo, "%s", tpath("m.fifo"));
    unlink(fifo);
    snprintf(cmd, sizeof cmd, "mkfifo '%s' && (cat '%s' > '%s' &)", fifo, tpath("m1.graph"), fifo);
    ck_assert_int_eq(tu_sh(cmd, NULL, NULL), 0);
    dataset_t d;
    ck_assert_msg(ingest_metis(fifo, &(ingest_opts_t){0}, &d) == 0, "%s", inca_errmsg());
    check_adj(&d, 4, rp, col);
    dataset_free(&d);
    unlink(fifo);
}
END_TEST

static void put_idx(const char *rel, uint32_t magic, int nd, const uint32_t *dims, const unsigned char *data,
                    size_t n, int gz) {
    unsigned char buf[256];
    size_t k = 0;
    uint32_t words[4] = {magic, dims[0], nd > 1 ? dims[1] : 0, nd > 2 ? dims[2] : 0};
    for (int w = 0; w < 1 + nd; w++)
        for (int b = 3; b >= 0; b--) buf[k++] = (unsigned char)(words[w] >> (8 * b));
    memcpy(buf + k, data, n);
    put(rel, (const char *)buf, k + n, gz);
}

/* 3 train and 2 test images of 2x3 pixels, train gzipped, test plain */
static void make_idx(void) {
    unsigned char tri[18], tei[12], trl[3] = {4, 0, 9}, tel[2] = {1, 4};
    for (int i = 0; i < 18; i++) tri[i] = (unsigned char)(i * 15);
    for (int i = 0; i < 12; i++) tei[i] = (unsigned char)(255 - i);
    put_idx("i/train-images-idx3-ubyte.gz", 0x803, 3, (uint32_t[]){3, 2, 3}, tri, 18, 1);
    put_idx("i/train-labels-idx1-ubyte.gz", 0x801, 1, (uint32_t[]){3}, trl, 3, 1);
    put_idx("i/t10k-images-idx3-ubyte", 0x803, 3, (uint32_t[]){2, 2, 3}, tei, 12, 0);
    put_idx("i/t10k-labels-idx1-ubyte", 0x801, 1, (uint32_t[]){2}, tel, 2, 0);
}

START_TEST(test_idx_small) {
    make_idx();
    dataset_t d;
    ck_assert_int_eq(ingest_idx(tpath("i"), NULL, &d), 0);
    ck_assert_int_eq(d.n, 5);
    ck_assert_int_eq(d.f, 6);
    ck_assert_int_eq(d.c, 10);
    ck_assert_int_eq(d.adj.nnz, 0);
    for (int i = 0; i < 18; i++) ck_assert(d.x[i] == (float)(i * 15) / 255.0f);
    for (int i = 0; i < 12; i++) ck_assert(d.x[18 + i] == (float)(255 - i) / 255.0f);
    static const int32_t y[] = {4, 0, 9, 1, 4};
    for (int i = 0; i < 5; i++) ck_assert_int_eq(d.y[i], y[i]);
    ck_assert_int_eq(d.split_n[SPLIT_TRAIN], 3);
    ck_assert_int_eq(d.split_n[SPLIT_VALID], 0);
    ck_assert_int_eq(d.split_n[SPLIT_TEST], 2);
    ck_assert_int_eq(d.split[SPLIT_TEST][1], 4);
    dataset_free(&d);
    /* test images of the same pixel count in another shape: refused, naming both shapes */
    unsigned char tei[12] = {0};
    put_idx("i/t10k-images-idx3-ubyte", 0x803, 3, (uint32_t[]){2, 3, 2}, tei, 12, 0);
    ck_assert_int_eq(ingest_idx(tpath("i"), NULL, &d), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "expected 2x3 images") && strstr(inca_errmsg(), "got 3x2"), "%s", inca_errmsg());
}
END_TEST

static void make_csv(void) {
    puts_("c/train.csv", "1,0.5,2\n\n0,-1,1e2\n", 0);
    puts_("c/valid.csv.gz", ",3,3\n2,4,4\n", 1);   /* first row unlabelled */
    puts_("c/test.csv", "nan,5,5\n1,6,6\n", 0);
}

START_TEST(test_csv_small) {
    make_csv();
    dataset_t d;
    ck_assert_int_eq(ingest_csv(tpath("c"), NULL, &d), 0);
    ck_assert_int_eq(d.n, 6);
    ck_assert_int_eq(d.f, 2);
    ck_assert_int_eq(d.c, 3);
    static const float x[] = {0.5f, 2, -1, 100, 3, 3, 4, 4, 5, 5, 6, 6};
    for (int i = 0; i < 12; i++) ck_assert(d.x[i] == x[i]);
    static const int32_t y[] = {1, 0, -1, 2, -1, 1};
    for (int i = 0; i < 6; i++) ck_assert_int_eq(d.y[i], y[i]);
    ck_assert_int_eq(d.split_n[SPLIT_TRAIN], 2);
    ck_assert_int_eq(d.split_n[SPLIT_VALID], 1);
    ck_assert_int_eq(d.split[SPLIT_VALID][0], 3);
    ck_assert_int_eq(d.split_n[SPLIT_TEST], 1);
    ck_assert_int_eq(d.split[SPLIT_TEST][0], 5);
    dataset_free(&d);
    /* valid.csv is optional */
    unlink(tpath("c/valid.csv.gz"));
    ck_assert_int_eq(ingest_csv(tpath("c"), NULL, &d), 0);
    ck_assert_int_eq(d.n, 4);
    ck_assert_int_eq(d.split[SPLIT_TEST][0], 3);
    dataset_free(&d);
}
END_TEST

START_TEST(test_alloc_failures) {
    /* every allocation in turn fails, for every format: ENOMEM (or success once past the last),
     * *out left empty, never a crash or a leak (the ASan build checks leaks) */
    make_ogb(1);
    make_idx();
    make_csv();
    puts_("e.txt", "0 1\n1 2\n", 0);
    puts_("lab.txt", "0 1\n2 0\n", 0);
    puts_("feat.txt", "0 1 2\n1 3 4\n2 5 6\n", 0);
    puts_("m.graph", "4 3 11 2\n5 6 2 7 3 1\n1 1 1 7 3 2\n2 2 1 1 2 2\n9 9\n", 0);
    char el[4096], lab[4096], feat[4096];
    snprintf(el, sizeof el, "%s", tpath("e.txt"));
    snprintf(lab, sizeof lab, "%s", tpath("lab.txt"));
    snprintf(feat, sizeof feat, "%s", tpath("feat.txt"));
    static const struct { ingest_format_t f; const char *rel; int64_t n; } cases[] = {
        {INGEST_OGB, "o", 5}, {INGEST_EDGELIST, "e.txt", 3}, {INGEST_METIS, "m.graph", 4},
        {INGEST_IDX, "i", 5}, {INGEST_CSV, "c", 6}};
    ingest_opts_t o = {0};
    o.labels = lab;
    o.features = feat;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char src[4096];
        snprintf(src, sizeof src, "%s", tpath(cases[c].rel));
        int ok = 0;
        long k;
        for (k = 1; k < 400 && !ok; k++) {
            dataset_t d;
            inca_alloc_fail_after(k);
            int rc = ingest_run(cases[c].f, src, cases[c].f == INGEST_EDGELIST ? &o : NULL, &d);
            inca_alloc_fail_after(0);
            if (rc == 0) { ok = 1; ck_assert_int_eq(d.n, cases[c].n); dataset_free(&d); }
            else {
                ck_assert_msg(rc == INCA_ENOMEM, "%s, allocation %ld: rc %d (%s)", cases[c].rel, k, rc, inca_errmsg());
                ck_assert_int_eq(d.n, 0);
                ck_assert_ptr_null(d.x);
                ck_assert_ptr_null(d.adj.rowptr);
            }
        }
        ck_assert_msg(ok && k > 3, "%s: %ld allocations", cases[c].rel, k);
    }
}
END_TEST

START_TEST(test_format_names) {
    ingest_format_t f;
    ck_assert_int_eq(ingest_format_parse("metis", &f), 0);
    ck_assert_int_eq(f, INGEST_METIS);
    ck_assert_str_eq(ingest_format_name(INGEST_CSV), "csv");
    ck_assert_int_eq(ingest_format_parse("graphml", &f), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "graphml"));
}
END_TEST

int main(void) {
    Suite *s = suite_create("ingest");
    TCase *tc = tcase_create("ingest");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_textio_plain_and_gz);
    tcase_add_test(tc, test_textio_long_lines);
    tcase_add_test(tc, test_textio_truncated_gz);
    tcase_add_test(tc, test_parse_f32_vs_strtof);
    tcase_add_test(tc, test_parse_i64_and_label);
    tcase_add_test(tc, test_ogb_small);
    tcase_add_test(tc, test_edgelist_small);
    tcase_add_test(tc, test_metis_small);
    tcase_add_test(tc, test_idx_small);
    tcase_add_test(tc, test_csv_small);
    tcase_add_test(tc, test_alloc_failures);
    tcase_add_test(tc, test_format_names);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
