/* inca export (loaders/export.h): the OGB raw layout ingests back to the same arrays (the
 * bundled Cora, and a generated csbm whose features are arbitrary floats: %.9g must give every
 * bit back); the .npz is a valid zip whose members (CRC checked with zlib) are .npy files
 * holding the dataset's arrays, PyG's edge_index layout included; the .npy folder reads back;
 * outputs that exist are refused and a failed export leaves nothing; through the CLI, export ->
 * ingest -> info -> train gives the same counts and the same accuracy. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/status.h"
#include "graph/gen.h"
#include "loaders/export.h"
#include "loaders/ingest.h"
#include "loaders/npy.h"
#include "loaders/dataset.h"
#include "graph/partition.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char *dir;

static void setup(void) { dir = tu_mkdtemp(); }
static void teardown(void) {
    tu_rmrf(dir);
    free(dir);
}

/* a csbm of n nodes (average degree deg, f features, 3 classes) drawn with seed */
static void csbm(int64_t n, double deg, int64_t f, uint64_t seed, dataset_t *d) {
    gen_opts_t g;
    gen_opts_default(&g);
    g.nodes = n;
    g.avg_degree = deg;
    g.features = f;
    g.classes = 3;
    g.seed = seed;
    ck_assert_int_eq(gen_csbm(&g, d, NULL), INCA_OK);
}

static void same_dataset(const dataset_t *a, const dataset_t *b) {
    ck_assert_int_eq(a->n, b->n);
    ck_assert_int_eq(a->f, b->f);
    ck_assert_int_eq(a->c, b->c);
    if (a->f > 0) ck_assert_int_eq(memcmp(a->x, b->x, sizeof(float) * (size_t)(a->n * a->f)), 0);   /* bit for bit */
    ck_assert_int_eq(memcmp(a->y, b->y, sizeof(int32_t) * (size_t)a->n), 0);
    ck_assert_int_eq(a->adj.nnz, b->adj.nnz);
    ck_assert_int_eq(memcmp(a->adj.rowptr, b->adj.rowptr, sizeof(int64_t) * (size_t)(a->n + 1)), 0);
    ck_assert_int_eq(memcmp(a->adj.col, b->adj.col, sizeof(int32_t) * (size_t)a->adj.nnz), 0);
    for (int s = 0; s < SPLIT_COUNT; s++) {
        ck_assert_int_eq(a->split_n[s], b->split_n[s]);
        ck_assert_int_eq(memcmp(a->split[s], b->split[s], sizeof(int64_t) * (size_t)a->split_n[s]), 0);
    }
}

static void round_trip_ogb(const dataset_t *d, const char *name) {
    char out[1024];
    snprintf(out, sizeof out, "%s/%s", dir, name);
    export_stats_t st;
    ck_assert_msg(export_dataset(d, EXPORT_OGB, out, "mine", &st) == INCA_OK, "%s", inca_errmsg());
    ck_assert_int_eq(st.files, 9);   /* RELEASE_v1.txt, 4 raw files and 3 splits' */
    ck_assert_int_eq(st.edges * 2, d->adj.nnz);
    char rel[1100];
    struct stat rs;
    snprintf(rel, sizeof rel, "%s/RELEASE_v1.txt", out);
    ck_assert(stat(rel, &rs) == 0 && S_ISREG(rs.st_mode) && rs.st_size == 0);   /* OGB's marker, empty */
    ingest_opts_t o = {0};
    o.split = "mine";
    dataset_t e;
    ck_assert_msg(ingest_ogb(out, &o, &e) == INCA_OK, "%s", inca_errmsg());
    same_dataset(d, &e);
    dataset_free(&e);
}

START_TEST(ogb_round_trip) {
    char cora[1024];
    snprintf(cora, sizeof cora, "%s/data/cora", tu_src());
    dataset_t d;
    ingest_opts_t o0 = {0};
    ck_assert_int_eq(ingest_ogb(cora, &o0, &d), INCA_OK);
    round_trip_ogb(&d, "cora");
    dataset_free(&d);
    csbm(500, 6, 7, 5, &d);
    int frac = 0;   /* the features are not small integers: the text must carry every bit */
    for (int64_t i = 0; i < d.n * d.f; i++) frac += d.x[i] != (float)(int)d.x[i];
    ck_assert(frac > d.n);
    round_trip_ogb(&d, "csbm");
    dataset_free(&d);
}
END_TEST

/* the .npy member at p (len bytes): descr and shape as expected, and its data */
static const unsigned char *npy_member(const unsigned char *p, size_t len, const char *descr, const char *shape,
                                       size_t *data_len) {
    ck_assert(len >= 10 && memcmp(p, "\x93NUMPY\x01\x00", 8) == 0);
    const size_t hl = (size_t)p[8] | (size_t)p[9] << 8;
    ck_assert((10 + hl) % 64 == 0 && 10 + hl <= len);
    char h[512];
    ck_assert(hl < sizeof h);
    memcpy(h, p + 10, hl);
    h[hl] = 0;
    char want[256];
    snprintf(want, sizeof want, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    ck_assert_msg(strncmp(h, want, strlen(want)) == 0, "header %s, expected %s", h, want);
    *data_len = len - 10 - hl;
    return p + 10 + hl;
}

static int64_t i64_at(const unsigned char *p, int64_t i) {
    int64_t v;
    memcpy(&v, p + 8 * i, sizeof v);
    return v;
}
static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static unsigned rd16(const unsigned char *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

START_TEST(npz_and_npy) {
    dataset_t d;
    csbm(300, 5, 4, 2, &d);
    d.y[7] = -1;   /* an unlabelled node */
    char out[1024];
    snprintf(out, sizeof out, "%s/d.npz", dir);
    export_stats_t st;
    ck_assert_msg(export_dataset(&d, EXPORT_NPZ, out, NULL, &st) == INCA_OK, "%s", inca_errmsg());
    FILE *f = fopen(out, "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char *z = malloc((size_t)st.bytes);
    ck_assert_uint_eq(fread(z, 1, (size_t)st.bytes, f), (size_t)st.bytes);
    ck_assert_int_eq(fgetc(f), EOF);   /* the size it reported */
    fclose(f);
    /* the end record points at a central directory of six entries, each at its local header */
    const unsigned char *end = z + st.bytes - 22;
    ck_assert_uint_eq(rd32(end), 0x06054b50);
    ck_assert_uint_eq(rd16(end + 10), 6);
    const unsigned char *cd = z + rd32(end + 16);
    static const char *const names[6] = {"x.npy", "y.npy", "edge_index.npy", "train_idx.npy", "valid_idx.npy",
                                         "test_idx.npy"};
    for (int i = 0; i < 6; i++) {
        ck_assert_uint_eq(rd32(cd), 0x02014b50);
        const unsigned nl = rd16(cd + 28);
        ck_assert(nl == strlen(names[i]) && memcmp(cd + 46, names[i], nl) == 0);
        const unsigned char *lh = z + rd32(cd + 42);
        ck_assert_uint_eq(rd32(lh), 0x04034b50);
        ck_assert_uint_eq(rd16(lh + 8), 0);   /* stored */
        const uint32_t size = rd32(lh + 18);
        const unsigned char *m = lh + 30 + rd16(lh + 26);
        ck_assert_uint_eq(crc32(crc32(0L, Z_NULL, 0), m, size), rd32(lh + 14));
        ck_assert_uint_eq(size, rd32(cd + 20));
        size_t dl = 0;
        char shape[64];
        if (i == 0) {
            snprintf(shape, sizeof shape, "(%lld, %lld)", (long long)d.n, (long long)d.f);
            const unsigned char *x = npy_member(m, size, "<f4", shape, &dl);
            ck_assert(dl == sizeof(float) * (size_t)(d.n * d.f) && memcmp(x, d.x, dl) == 0);
        } else if (i == 1) {
            snprintf(shape, sizeof shape, "(%lld,)", (long long)d.n);
            const unsigned char *y = npy_member(m, size, "<i8", shape, &dl);   /* not 8-aligned in the zip */
            for (int64_t v = 0; v < d.n; v++) ck_assert_int_eq(i64_at(y, v), d.y[v] < 0 ? -1 : d.y[v]);
            ck_assert_int_eq(i64_at(y, 7), -1);
        } else if (i == 2) {   /* both directions of every edge, sources sorted: the CSR in COO */
            snprintf(shape, sizeof shape, "(2, %lld)", (long long)d.adj.nnz);
            const unsigned char *ei = npy_member(m, size, "<i8", shape, &dl);
            for (int64_t u = 0; u < d.n; u++)
                for (int64_t e = d.adj.rowptr[u]; e < d.adj.rowptr[u + 1]; e++) {
                    ck_assert_int_eq(i64_at(ei, e), u);
                    ck_assert_int_eq(i64_at(ei, d.adj.nnz + e), d.adj.col[e]);
                }
        } else {
            const int s = i - 3;
            snprintf(shape, sizeof shape, "(%lld,)", (long long)d.split_n[s]);
            const unsigned char *ids = npy_member(m, size, "<i8", shape, &dl);
            ck_assert(dl == sizeof(int64_t) * (size_t)d.split_n[s] && memcmp(ids, d.split[s], dl) == 0);
        }
        cd += 46 + nl;
    }
    free(z);
    /* the folder of .npy files: the index files read back with the project's reader */
    snprintf(out, sizeof out, "%s/d-npy", dir);
    ck_assert_int_eq(export_dataset(&d, EXPORT_NPY, out, NULL, &st), INCA_OK);
    ck_assert_int_eq(st.files, 6);
    char p[1100];
    snprintf(p, sizeof p, "%s/test_idx.npy", out);
    int64_t *ids = NULL, n = 0;
    ck_assert_int_eq(npy_read_indices(p, &ids, &n), INCA_OK);
    ck_assert(n == d.split_n[SPLIT_TEST] && memcmp(ids, d.split[SPLIT_TEST], sizeof(int64_t) * (size_t)n) == 0);
    inca_free(ids);
    /* a folder given as an index file: named, not an 8 EiB allocation (its ftell is LONG_MAX) */
    ids = NULL;
    ck_assert_int_eq(npy_read_indices(out, &ids, &n), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "expected a file, found a directory"), "%s", inca_errmsg());
    ck_assert_ptr_null(ids);
    dataset_free(&d);
}
END_TEST

static int entries(const char *path) ;

/* A graph without features (R-MAT's default, an edge list, a METIS file) is exported without x:
 * npz holds five members, y first, and its edge_index as stored; npy five files; OGB's layout no
 * node-feat file, which OGB's loaders (and inca's ingest) read as no features: the graph, labels
 * and splits come back the same (export refused any store without features) */
START_TEST(featureless_graph) {
    dataset_t d, e;
    csbm(150, 4, 2, 3, &d);
    inca_free(d.x);
    d.x = NULL;
    d.f = 0;
    char out[1024], p[1100];
    export_stats_t st;
    snprintf(out, sizeof out, "%s/f.npz", dir);
    ck_assert_msg(export_dataset(&d, EXPORT_NPZ, out, NULL, &st) == INCA_OK, "%s", inca_errmsg());
    FILE *f = fopen(out, "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char *z = malloc((size_t)st.bytes);
    ck_assert_uint_eq(fread(z, 1, (size_t)st.bytes, f), (size_t)st.bytes);
    fclose(f);
    const unsigned char *end = z + st.bytes - 22, *cd = z + rd32(end + 16);
    ck_assert_uint_eq(rd16(end + 10), 5);
    ck_assert(rd16(cd + 28) == 5 && memcmp(cd + 46, "y.npy", 5) == 0);   /* the first member */
    free(z);
    snprintf(out, sizeof out, "%s/f-npy", dir);
    ck_assert_int_eq(export_dataset(&d, EXPORT_NPY, out, NULL, &st), INCA_OK);
    ck_assert_int_eq(st.files, 5);
    ck_assert_int_eq(entries(out), 5);
    snprintf(p, sizeof p, "%s/x.npy", out);
    ck_assert_int_ne(access(p, F_OK), 0);
    snprintf(out, sizeof out, "%s/f-ogb", dir);
    ck_assert_int_eq(export_dataset(&d, EXPORT_OGB, out, "mine", &st), INCA_OK);
    ck_assert_int_eq(st.files, 8);   /* RELEASE_v1.txt, 3 raw files and 3 splits' + 1 label file */
    snprintf(p, sizeof p, "%s/raw/node-feat.csv.gz", out);
    ck_assert_int_ne(access(p, F_OK), 0);
    ingest_opts_t o = {0};
    o.split = "mine";
    ck_assert_msg(ingest_ogb(out, &o, &e) == INCA_OK, "%s", inca_errmsg());
    ck_assert(e.f == 0 && !e.x);
    same_dataset(&d, &e);
    dataset_free(&e);
    dataset_free(&d);
}
END_TEST

static int entries(const char *path) {
    DIR *dh = opendir(path);
    ck_assert_ptr_nonnull(dh);
    int k = 0;
    struct dirent *de;
    while ((de = readdir(dh)))
        if (de->d_name[0] != '.') k++;
    closedir(dh);
    return k;
}

START_TEST(refusals_leave_nothing) {
    dataset_t d;
    csbm(200, 5, 3, 1, &d);
    char out[1024];
    export_stats_t st;
    snprintf(out, sizeof out, "%s/a", dir);
    ck_assert_int_eq(export_dataset(&d, EXPORT_OGB, out, NULL, &st), INCA_OK);
    ck_assert_int_eq(export_dataset(&d, EXPORT_NPZ, out, NULL, &st), INCA_EINVAL);   /* exists */
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "exists"));
    snprintf(out, sizeof out, "%s/b", dir);
    ck_assert_int_eq(export_dataset(&d, EXPORT_OGB, out, "../up", &st), INCA_EINVAL);
    int fmt = 0;
    ck_assert_int_eq(export_format_parse("csv", &fmt), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--format"));
    csr_t keep = d.adj;   /* no graph: the OGB layout needs one */
    memset(&d.adj, 0, sizeof d.adj);
    ck_assert_int_eq(export_dataset(&d, EXPORT_OGB, out, NULL, &st), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "no graph"));
    d.adj = keep;
    /* a graph OGB's ingest would read back as another: directed, or with self-loops (it
     * symmetrises and drops loops); csbm is symmetric without loops, so edit a copy */
    csr_t dir_adj;
    ck_assert_int_eq(csr_alloc(&dir_adj, d.n, d.n, 1, 0), INCA_OK);
    for (int64_t v = 0; v <= d.n; v++) dir_adj.rowptr[v] = v > 0;   /* one edge, 0 -> 1 */
    dir_adj.col[0] = 1;
    d.adj = dir_adj;
    ck_assert_int_eq(export_dataset(&d, EXPORT_OGB, out, NULL, &st), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "is directed"));
    ck_assert_int_eq(export_dataset(&d, EXPORT_NPZ, out, NULL, &st), INCA_OK);   /* npz keeps it as it is */
    ck_assert_int_eq(remove(out), 0);
    dir_adj.col[0] = 0;   /* 0 -> 0: symmetric, a loop */
    ck_assert_int_eq(export_dataset(&d, EXPORT_OGB, out, NULL, &st), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "has self-loops"));
    csr_free(&dir_adj);
    d.adj = keep;
    ck_assert_int_eq(entries(dir), 1);
    /* an allocation that fails part way: nothing but the first export remains */
    int k = 1, rc;
    for (; (rc = (inca_alloc_fail_after(k), export_dataset(&d, EXPORT_NPZ, out, NULL, &st))) != INCA_OK; k++) {
        inca_alloc_fail_after(0);
        ck_assert_int_eq(rc, INCA_ENOMEM);
        ck_assert_int_eq(entries(dir), 1);
    }
    inca_alloc_fail_after(0);
    ck_assert_int_ge(k, 3);   /* y and edge_index failed before it went through */
    ck_assert_int_eq(entries(dir), 2);
    dataset_free(&d);
}
END_TEST

START_TEST(cli_export_ingest_train) {
    char args[8192], store[1024], ex[1024], back[1024];
    char *out = NULL, *err = NULL;
    snprintf(store, sizeof store, "%s/cora.lmdb", dir);
    snprintf(ex, sizeof ex, "%s/cora-ogb", dir);
    snprintf(back, sizeof back, "%s/back.lmdb", dir);
    snprintf(args, sizeof args, "ingest --format ogb '%s/data/cora' --out '%s'", tu_src(), store);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "export '%s' '%s' --format ogb --split-name public --json", store, ex);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    cJSON *j = tu_json_last(out);
    ck_assert_double_eq(tu_json_dbl(j, "nodes"), 2708);
    ck_assert_double_eq(tu_json_dbl(j, "edges"), 10556);          /* directed, as info's and every command's */
    ck_assert_double_eq(tu_json_dbl(j, "edges_written"), 5278);   /* OGB's edge.csv: each once */
    cJSON_Delete(j);
    free(out);
    free(err);
    /* flags that would be silently dropped are refused naming themselves (exit 2): a split
     * folder's name without the OGB layout, layout flags with --no-layout, shard's --parts < 1 */
    static const char *const refused[][2] = {
        {"export '%s' '%s-npz' --format npz --split-name foo", "--split-name"},
        {"partition '%s' --parts 4 --no-layout --feature-norm row%.0s", "--feature-norm"},
        {"shard '%s' --ranks 2 --parts 0 --out '%s-sh'", "--parts 0"},
        {"shard '%s' --ranks 2 --parts 99999 --out '%s-sh'", "--parts 99999"},
        {"shard '%s' --ranks 2 --parts 4 --out '%s/raw/edge.csv.gz'", "edge.csv.gz: exists and is not a folder"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        snprintf(args, sizeof args, refused[i][0], store, ex);
        err = NULL;
        ck_assert_msg(tu_inca(args, NULL, &err) == 2, "%s: expected exit 2 (%s)", args, err ? err : "");
        ck_assert_msg(err && strstr(err, refused[i][1]), "%s: stderr '%s' lacks %s", args, err ? err : "", refused[i][1]);
        free(err);
    }
    /* --quiet: no per-shard lines on stderr, the summary on stdout as gen's (shard refused the flag) */
    snprintf(args, sizeof args, "shard '%s' --ranks 2 --parts 4 --out '%s-sh' --quiet", store, ex);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    ck_assert_msg(!*err && strncmp(out, "2 shards of ", 12) == 0, "shard --quiet printed '%s' '%s'", out, err);
    free(out);
    free(err);
    /* a folder of shards given where a store is expected says what it is and which command reads
     * it; a shard given to export, and a folder an interrupted shard run left, likewise (they said
     * "no inca store here ... create it with inca ingest", "no array 'rowptr'") */
    static const char *const shardy[][2] = {
        {"info '%s-sh'", "-sh: a folder of inca shard's stores, not a store: inca info "},
        {"export '%s-sh/rank-0-of-2.lmdb' '%s-sh.npz' --format npz", "rank-0-of-2.lmdb: a shard of inca shard (one rank's rows)"},
        {"verify '%s-int'", "-int: holds only an interrupted inca shard run's temporaries (rank-1-of-2.lmdb.tmp): run inca shard again"},
    };
    /* one shard's info says it is one and whose figures are whose (it mixed the whole graph's
     * nodes with its own labels and splits without a word): the two ranks' own rows add up to
     * Cora's 2708 nodes */
    double own = 0;
    for (int r = 0; r < 2; r++) {
        snprintf(args, sizeof args, "%s-sh/rank-%d-of-2.lmdb", ex, r);
        cJSON *ij = cJSON_Parse(tu_info_json(args));
        const cJSON *sh = tu_json_get(ij, "shard", cJSON_Object);
        ck_assert(tu_json_dbl(sh, "rank") == r && tu_json_dbl(sh, "ranks") == 2 && tu_json_dbl(sh, "parts") == 4);
        ck_assert(tu_json_dbl(sh, "halo_rows") > 0 && tu_json_dbl(ij, "nodes") == 2708);
        own += tu_json_dbl(sh, "own_rows");
        cJSON_Delete(ij);
    }
    ck_assert_double_eq(own, 2708);
    snprintf(args, sizeof args, "info '%s-sh/rank-1-of-2.lmdb'", ex);
    ck_assert_int_eq(tu_inca(args, &out, NULL), 0);
    ck_assert_msg(strstr(out, "\nshard       rank 1 of 2: "), "%s", out);
    free(out);
    snprintf(args, sizeof args, "mkdir '%s-int' && cp -r '%s-sh/rank-1-of-2.lmdb' '%s-int/rank-1-of-2.lmdb.tmp'", ex, ex, ex);
    ck_assert_int_eq(tu_sh(args, NULL, NULL), 0);
    for (size_t i = 0; i < sizeof shardy / sizeof shardy[0]; i++) {
        snprintf(args, sizeof args, shardy[i][0], ex, ex);
        err = NULL;
        ck_assert_msg(tu_inca(args, NULL, &err) == 2 && err && strstr(err, shardy[i][1]) && !strchr(err, '\n')[1], "%s: '%s'",
                      args, err ? err : "");
        free(err);
    }
    snprintf(args, sizeof args, "ingest --format ogb '%s' --out '%s'", ex, back);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    cJSON *ia = tu_json_parse(tu_info_json(store)), *ib = tu_json_parse(tu_info_json(back));
    static const char *const keys[] = {"nodes", "edges", "features", "classes", "labeled"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_double_eq(tu_json_dbl(ia, keys[i]), tu_json_dbl(ib, keys[i]));
    cJSON_Delete(ia);
    cJSON_Delete(ib);
    double acc[2];
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "train '%s' --epochs 30 --threads 1 --json", k ? back : store);
        ck_assert_int_eq(tu_inca(args, &out, &err), 0);
        j = tu_json_last(out);
        acc[k] = tu_json_dbl(j, "test_acc");
        cJSON_Delete(j);
        free(out);
        free(err);
    }
    ck_assert_double_eq(acc[0], acc[1]);
    ck_assert(acc[0] > 0.7);
    snprintf(args, sizeof args, "export '%s' '%s' --format ogb", store, ex);   /* exists */
    ck_assert_int_eq(tu_inca(args, &out, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "exists"));
    free(out);
    free(err);
}
END_TEST

/* --partition NAME adds each node's part: read back from the .npy folder, the parts hold
 * METIS's sizes (the manifest's smallest and largest part) and the edge cut recomputed from the
 * exported vector on the store's graph is the one METIS reported when it partitioned; the OGB
 * layout and an unknown name are refused, nothing written. */
START_TEST(cli_export_partition) {
    char args[8192], store[1024], ex[1024];
    char *out = NULL, *err = NULL;
    snprintf(store, sizeof store, "%s/g.lmdb", dir);
    snprintf(ex, sizeof ex, "%s/g-npy", dir);
    snprintf(args, sizeof args, "gen --kind csbm --nodes 600 --avg-degree 6 --features 4 --classes 3 --seed 5 --out '%s'", store);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "partition '%s' --parts 5 --seed 0 --json", store);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    cJSON *j = tu_json_last(out);
    const double cut = tu_json_dbl(j, "edge_cut");
    cJSON_Delete(j);
    free(out);
    free(err);
    snprintf(args, sizeof args, "export '%s' '%s' --format npy --partition metis-5-s0", store, ex);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    char p[1100];
    snprintf(p, sizeof p, "%s/part.npy", ex);
    int64_t *part = NULL, n = 0;
    ck_assert_int_eq(npy_read_indices(p, &part, &n), INCA_OK);
    ck_assert_int_eq(n, 600);
    int64_t size[5] = {0};
    for (int64_t v = 0; v < n; v++) {
        ck_assert(part[v] >= 0 && part[v] < 5);
        size[part[v]]++;
    }
    int64_t lo = n, hi = 0;
    for (int k = 0; k < 5; k++) {
        lo = size[k] < lo ? size[k] : lo;
        hi = size[k] > hi ? size[k] : hi;
    }
    ck_assert(lo > 0 && hi < 200);   /* balanced: 120 each, METIS's 3% imbalance */
    dataset_t d;
    dataset_init(&d);
    ck_assert_int_eq(dataset_load(store, &d), INCA_OK);
    int32_t *p32 = malloc(sizeof *p32 * (size_t)n);
    for (int64_t v = 0; v < n; v++) p32[v] = (int32_t)part[v];
    ck_assert_int_eq(partition_edge_cut(&d.adj, p32), (int64_t)cut);
    free(p32);
    dataset_free(&d);
    inca_free(part);
    snprintf(args, sizeof args, "export '%s' '%s/o' --format ogb --partition metis-5-s0", store, dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "npz or npy"));
    free(out);
    free(err);
    snprintf(args, sizeof args, "export '%s' '%s/q.npz' --format npz --partition metis-7-s0", store, dir);
    ck_assert_int_eq(tu_inca(args, &out, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "metis-7-s0"));
    free(out);
    free(err);
    ck_assert_int_eq(entries(dir), 2);   /* the store and the npy folder */
}
END_TEST

/* One store, every split: Cora with a second split folder "alt" (train 0..999, valid
 * 1000..1499, test the rest). Training with --split alt on the store of both gives the bits of
 * a store ingested with --split alt; info lists both; an unknown name is refused with the list;
 * the OGB export writes both folders and reads back with both. */
static void write_ids(const char *path, int64_t lo, int64_t hi) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int64_t i = lo; i < hi; i++) fprintf(f, "%lld\n", (long long)i);
    fclose(f);
}

START_TEST(cli_named_splits) {
    char args[8192], src[1024], p[1200], both[1024], alt[1024], ex[1024], back[1024];
    char *out = NULL, *err = NULL;
    snprintf(src, sizeof src, "%s/cora2", dir);
    snprintf(args, sizeof args, "cp -r '%s/data/cora' '%s' && mkdir '%s/split/alt'", tu_src(), src, src);
    ck_assert_int_eq(tu_sh(args, NULL, NULL), 0);
    snprintf(p, sizeof p, "%s/split/alt/train.csv", src);
    write_ids(p, 0, 1000);
    snprintf(p, sizeof p, "%s/split/alt/valid.csv", src);
    write_ids(p, 1000, 1500);
    snprintf(p, sizeof p, "%s/split/alt/test.csv", src);
    write_ids(p, 1500, 2708);
    snprintf(both, sizeof both, "%s/both.lmdb", dir);
    snprintf(alt, sizeof alt, "%s/alt.lmdb", dir);
    snprintf(args, sizeof args, "ingest --format ogb '%s' --split public --out '%s' --quiet", src, both);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "ingest --format ogb '%s' --split alt --out '%s' --quiet", src, alt);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    cJSON *ia = tu_json_parse(tu_info_json(both));
    ck_assert_str_eq(tu_json_get(ia, "split_name", cJSON_String)->valuestring, "public");
    const cJSON *ns = tu_json_get(ia, "named_splits", cJSON_Array);
    ck_assert_int_eq(cJSON_GetArraySize(ns), 1);
    const cJSON *e = cJSON_GetArrayItem(ns, 0);
    ck_assert_str_eq(tu_json_get(e, "name", cJSON_String)->valuestring, "alt");
    ck_assert_double_eq(tu_json_dbl(e, "train"), 1000);
    ck_assert_double_eq(tu_json_dbl(e, "valid"), 500);
    ck_assert_double_eq(tu_json_dbl(e, "test"), 1208);
    ck_assert_double_eq(tu_json_dbl(tu_json_get(ia, "splits", cJSON_Object), "train"), 140);
    cJSON_Delete(ia);
    /* --split alt on the store of both = the store of alt, bit for bit */
    char params[2][1100];
    double acc[2];
    for (int k = 0; k < 2; k++) {
        snprintf(params[k], sizeof params[k], "%s/p%d.npy", dir, k);
        snprintf(args, sizeof args, "train '%s' %s --epochs 20 --threads 1 --save-params '%s' --json", k ? alt : both,
                 k ? "" : "--split alt", params[k]);
        ck_assert_int_eq(tu_inca(args, &out, &err), 0);
        cJSON *j = tu_json_last(out);
        acc[k] = tu_json_dbl(j, "test_acc");
        ck_assert_double_eq(tu_json_dbl(j, "train_nodes"), 1000);
        cJSON_Delete(j);
        free(out);
        free(err);
    }
    ck_assert_double_eq(acc[0], acc[1]);
    snprintf(args, sizeof args, "cmp '%s' '%s'", params[0], params[1]);
    ck_assert_int_eq(tu_sh(args, NULL, NULL), 0);
    /* the default by its name, and an unknown one */
    snprintf(args, sizeof args, "train '%s' --split public --epochs 1 --json", both);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    ck_assert_double_eq(tu_json_num(tu_last_line(out), "train_nodes"), 140);
    free(out);
    free(err);
    snprintf(args, sizeof args, "train '%s' --split nope --epochs 1", both);
    ck_assert_int_eq(tu_inca(args, &out, &err), 2);
    ck_assert_msg(strstr(err, "--split nope: no such split; the store holds public (the default), alt"), "%s", err);
    free(out);
    free(err);
    /* the OGB export carries both folders and ingests back to both */
    snprintf(ex, sizeof ex, "%s/both-ogb", dir);
    snprintf(back, sizeof back, "%s/back.lmdb", dir);
    snprintf(args, sizeof args, "export '%s' '%s' --format ogb", both, ex);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    snprintf(p, sizeof p, "%s/split/alt/test.csv.gz", ex);
    ck_assert(tu_exists(p));
    snprintf(p, sizeof p, "%s/split/public/train.csv.gz", ex);
    ck_assert(tu_exists(p));
    snprintf(args, sizeof args, "ingest --format ogb '%s' --out '%s' --quiet", ex, back);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    cJSON *ib = tu_json_parse(tu_info_json(back));
    ns = tu_json_get(ib, "named_splits", cJSON_Array);
    ck_assert_int_eq(cJSON_GetArraySize(ns), 1);
    /* sorted: "alt" comes first, so it is the default of a plain ingest, "public" the named one */
    ck_assert_str_eq(tu_json_get(ib, "split_name", cJSON_String)->valuestring, "alt");
    ck_assert_double_eq(tu_json_dbl(tu_json_get(ib, "splits", cJSON_Object), "test"), 1208);
    ck_assert_str_eq(tu_json_get(cJSON_GetArrayItem(ns, 0), "name", cJSON_String)->valuestring, "public");
    ck_assert_double_eq(tu_json_dbl(cJSON_GetArrayItem(ns, 0), "test"), 1000);
    cJSON_Delete(ib);
    /* an unnamed default (here a random split) goes to split/stored, which ingest takes back as
     * the default beside the named ones */
    snprintf(ex, sizeof ex, "%s/rand-ogb", dir);
    snprintf(back, sizeof back, "%s/rand.lmdb", dir);
    snprintf(args, sizeof args, "export '%s' '%s' --format ogb --split random:0.5,0.25,0.25:1", both, ex);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "ingest --format ogb '%s' --out '%s' --quiet", ex, back);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    ib = tu_json_parse(tu_info_json(back));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(ib, "split_name")));
    /* stratified: round(0.5 n_c) of Cora's classes 351, 217, 418, 818, 426, 298, 180 (halves away
     * from zero) = 176 + 109 + 209 + 409 + 213 + 149 + 90 */
    ck_assert_double_eq(tu_json_dbl(tu_json_get(ib, "splits", cJSON_Object), "train"), 1355);
    ck_assert_int_eq(cJSON_GetArraySize(tu_json_get(ib, "named_splits", cJSON_Array)), 2);
    cJSON_Delete(ib);
    /* --split picks what npz and npy carry: the npy folder's train_idx read back with the
     * project's reader (its 1000 ids) */
    snprintf(ex, sizeof ex, "%s/alt.npz", dir);
    snprintf(args, sizeof args, "export '%s' '%s' --format npz --split alt", both, ex);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    {   /* the npz's train_idx.npy member: the zip's central directory read as npz_and_npy does */
        FILE *zf = fopen(ex, "rb");
        ck_assert_ptr_nonnull(zf);
        fseek(zf, 0, SEEK_END);
        const long zl = ftell(zf);
        fseek(zf, 0, SEEK_SET);
        unsigned char *z = malloc((size_t)zl);
        ck_assert_uint_eq(fread(z, 1, (size_t)zl, zf), (size_t)zl);
        fclose(zf);
        const unsigned char *end = z + zl - 22, *cd = z + rd32(end + 16);
        int found = 0;
        for (unsigned e = 0; e < rd16(end + 10); e++) {
            const unsigned nl = rd16(cd + 28);
            if (nl == strlen("train_idx.npy") && memcmp(cd + 46, "train_idx.npy", nl) == 0) {
                const unsigned char *lh = z + rd32(cd + 42);
                size_t dl = 0;
                npy_member(lh + 30 + rd16(lh + 26), rd32(lh + 18), "<i8", "(1000,)", &dl);
                ck_assert_uint_eq(dl, 8 * 1000);
                found = 1;
            }
            cd += 46 + nl + rd16(cd + 30) + rd16(cd + 32);
        }
        ck_assert(found);
        free(z);
    }
    snprintf(ex, sizeof ex, "%s/alt-npy", dir);
    snprintf(args, sizeof args, "export '%s' '%s' --format npy --split alt", both, ex);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    char tp[4300];
    snprintf(tp, sizeof tp, "%s/train_idx.npy", ex);
    int64_t *ids = NULL, nids = 0;
    ck_assert_int_eq(npy_read_indices(tp, &ids, &nids), INCA_OK);
    ck_assert_int_eq(nids, 1000);
    inca_free(ids);
}
END_TEST

int main(void) {
    Suite *s = suite_create("export");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, ogb_round_trip);
    tcase_add_test(t, npz_and_npy);
    tcase_add_test(t, refusals_leave_nothing);
    tcase_add_test(t, cli_export_ingest_train);
    tcase_add_test(t, cli_named_splits);
    tcase_add_test(t, cli_export_partition);
    tcase_add_test(t, featureless_graph);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
