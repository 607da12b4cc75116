/* A store is checked before it is believed: byte flips at located positions of a store's
 * data.mdb (array chunks of rowptr, col, x, y and the splits, their checksums, descriptors, chunk
 * keys, the meta record) each make dataset_load return INCA_EINVAL and `inca verify` / `inca
 * train` exit 2 with one line naming the store; flips over every LMDB page header never crash
 * and either fail with exit 2 or leave the data intact; stores whose checksums hold but whose
 * contents break the schema (bad ids, rowptr, labels, NaN, counts) name the first bad entry; a v1 store is refused with a hint; an
 * ingest under a file-size limit fails with exit 1 and leaves no partial store. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "loaders/dataset.h"
#include "loaders/store.h"
#include "loaders/lmdb_check.h"
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *dir;
static char golden[4096];
static const char *SOURCE = "corrupt-test-source:4b1d";

static void setup(void) {
    dir = tu_mkdtemp();
    ck_assert_ptr_nonnull(dir);
    snprintf(golden, sizeof golden, "%s/golden.lmdb", dir);
}
static void teardown(void) { tu_rmrf(dir); free(dir); }

/* 600 nodes, random degrees (so rowptr is irregular), 8 features, 3 classes, random splits;
 * 4 KiB chunks put every large array over several chunks. */
static void make_dataset(dataset_t *d) {
    dataset_init(d);
    enum { N = 600, M = 1500 };
    int64_t *s = malloc(sizeof(int64_t) * M), *t = malloc(sizeof(int64_t) * M);
    for (int i = 0; i < M; i++) {
        s[i] = (int64_t)(rng_hash64(1, 0, (uint64_t)i) % N);
        t[i] = (int64_t)(rng_hash64(1, 1, (uint64_t)i) % N);
    }
    ck_assert_int_eq(csr_from_edges(&d->adj, N, s, t, M, CSR_SYMMETRIZE | CSR_DROP_SELF_LOOPS), INCA_OK);
    free(s);
    free(t);
    d->n = N;
    d->f = 8;
    d->c = 3;
    d->x = inca_malloc(sizeof(float) * N * 8);
    d->y = inca_malloc(sizeof(int32_t) * N);
    for (int i = 0; i < N * 8; i++) d->x[i] = rng_hash_uniform(2, 0, (uint64_t)i) * 10.0f - 5.0f;
    int64_t cnt[3] = {0, 0, 0};
    int which[N];
    for (int i = 0; i < N; i++) {
        d->y[i] = i % 17 == 0 ? -1 : (int32_t)(rng_hash64(3, 0, (uint64_t)i) % 3);
        which[i] = d->y[i] < 0 ? -1 : (int)(rng_hash64(4, 0, (uint64_t)i) % 5) == 0 ? 1 : (int)(rng_hash64(4, 1, (uint64_t)i) % 4) == 0 ? 2 : 0;
        if (which[i] >= 0) cnt[which[i]]++;
    }
    for (int sp = 0; sp < 3; sp++) {
        d->split[sp] = inca_malloc(sizeof(int64_t) * (size_t)(cnt[sp] ? cnt[sp] : 1));
        d->split_n[sp] = 0;
    }
    for (int i = 0; i < N; i++)
        if (which[i] >= 0) d->split[which[i]][d->split_n[which[i]]++] = i;
    snprintf(d->source, sizeof d->source, "%s", SOURCE);
}

static unsigned char *slurp_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Offset of the only occurrence of pat in buf, or -1 when absent or not unique. */
static long find_unique(const unsigned char *buf, size_t len, const void *pat, size_t plen) {
    long at = -1;
    for (const unsigned char *p = buf; (p = memmem(p, len - (size_t)(p - buf), pat, plen)); p++) {
        if (at >= 0) return -1;
        at = (long)(p - buf);
    }
    return at;
}

typedef struct { long off; char what[96]; } pos_t;
enum { MAXPOS = 96 };
static pos_t pos[MAXPOS];
static int npos;

static void add_pos(long off, const char *fmt, const char *name, long k) {
    ck_assert_msg(off >= 0, "could not locate %s %ld in data.mdb", name, k);
    ck_assert_int_lt(npos, MAXPOS);
    pos[npos].off = off;
    snprintf(pos[npos].what, sizeof pos[npos].what, fmt, name, k);
    npos++;
}

/* Element k of an array (es bytes each, chunk of ce elements): located by the bytes of a window
 * around it inside its chunk, moved forward until the window is unique in the file. */
static void locate_elem(const unsigned char *buf, size_t len, const char *name, const void *arr, size_t es,
                        int64_t count, int64_t ce, int64_t k) {
    int64_t c0 = k / ce * ce, c1 = c0 + ce < count ? c0 + ce : count;
    for (size_t win = 24; win <= 96; win += 24) {
        int64_t w = (int64_t)((win + es - 1) / es);
        int64_t start = k - w / 2 < c0 ? c0 : k - w / 2;
        if (start + w > c1) start = c1 - w < c0 ? c0 : c1 - w;
        size_t bytes = (size_t)((start + w <= c1 ? w : c1 - start)) * es;
        long at = find_unique(buf, len, (const char *)arr + (size_t)start * es, bytes);
        if (at >= 0) { add_pos(at + (long)((size_t)(k - start) * es), "array '%s' element %ld", name, k); return; }
    }
    add_pos(-1, "array '%s' element %ld", name, k);
}

/* The 4-byte checksum after the last element of chunk ci. */
static void locate_crc(const unsigned char *buf, size_t len, const char *name, const void *arr, size_t es,
                       int64_t count, int64_t ce, int64_t ci) {
    int64_t end = (ci + 1) * ce < count ? (ci + 1) * ce : count;
    size_t bytes = 32 < (size_t)(end - ci * ce) * es ? 32 : (size_t)(end - ci * ce) * es;
    long at = find_unique(buf, len, (const char *)arr + (size_t)end * es - bytes, bytes);
    add_pos(at < 0 ? -1 : at + (long)bytes + 1, "checksum of '%s' chunk %ld", name, ci);
}

static void locate_all(const dataset_t *d, const unsigned char *buf, size_t len) {
    npos = 0;
    const int64_t cb = 4096;
    struct { const char *name; const void *a; size_t es; int64_t n; } arr[] = {
        {"rowptr", d->adj.rowptr, 8, d->n + 1}, {"col", d->adj.col, 4, d->adj.nnz},
        {"x", d->x, 4, d->n * d->f}, {"y", d->y, 4, d->n},
        {"split/train", d->split[0], 8, d->split_n[0]}, {"split/valid", d->split[1], 8, d->split_n[1]},
        {"split/test", d->split[2], 8, d->split_n[2]},
    };
    for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) {
        int64_t ce = cb / (int64_t)arr[i].es, n = arr[i].n;
        int64_t ks[4] = {0, n / 3, n * 2 / 3, n - 1};   /* first chunk, later chunks, the last element */
        for (int j = 0; j < 4; j++) locate_elem(buf, len, arr[i].name, arr[i].a, arr[i].es, n, ce, ks[j]);
        locate_crc(buf, len, arr[i].name, arr[i].a, arr[i].es, n, ce, (n - 1) / ce);
    }
    /* the meta record: magic + version, the node count, the source string */
    unsigned char mv[16] = {0};
    uint32_t magic = STORE_MAGIC, ver = STORE_VERSION;
    int64_t nodes = d->n;
    memcpy(mv, &magic, 4); memcpy(mv + 4, &ver, 4); memcpy(mv + 8, &nodes, 8);
    long at = find_unique(buf, len, mv, sizeof mv);
    add_pos(at, "meta record magic%s%ld", "", 0);
    add_pos(at < 0 ? -1 : at + 4, "meta record version%s%ld", "", 0);
    add_pos(at < 0 ? -1 : at + 8, "meta record nodes%s%ld", "", 0);
    at = find_unique(buf, len, SOURCE, strlen(SOURCE));
    add_pos(at < 0 ? -1 : at + 3, "meta record source%s%ld", "", 0);
    /* an array descriptor (its element count) and a chunk key (its index byte) */
    unsigned char desc[16] = {'A', 'R', 'R', '1', 1, 0, 0, 0};   /* dtype DT_F32: only "x" */
    int64_t nx = d->n * d->f;
    memcpy(desc + 8, &nx, 8);
    at = find_unique(buf, len, desc, sizeof desc);
    add_pos(at < 0 ? -1 : at + 8, "descriptor of 'x' count%s%ld", "", 0);
    unsigned char key[12] = {'c', 'o', 'l', 0, 0, 0, 0, 0, 0, 0, 0, 1};
    at = find_unique(buf, len, key, sizeof key);
    add_pos(at < 0 ? -1 : at + 11, "key of '%s' chunk %ld", "col", 1);
}

static void copy_with_flip(const unsigned char *buf, size_t len, const char *to, long off, unsigned char mask) {
    tu_rmrf(to);
    ck_assert_int_eq(mkdir(to, 0755), 0);
    char p[4400];
    snprintf(p, sizeof p, "%s/data.mdb", to);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    if (off >= 0) {
        ck_assert_uint_eq(fwrite(buf, 1, (size_t)off, f), (size_t)off);
        unsigned char b = buf[off] ^ mask;
        ck_assert_uint_eq(fwrite(&b, 1, 1, f), 1);
        ck_assert_uint_eq(fwrite(buf + off + 1, 1, len - (size_t)off - 1, f), len - (size_t)off - 1);
    } else {
        ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    }
    ck_assert_int_eq(fclose(f), 0);
}

/* One stderr line naming the store. */
static void check_err(const char *what, const char *args, int want, const char *store) {
    char *err = NULL;
    int rc = tu_inca(args, NULL, &err);
    ck_assert_msg(rc == want, "%s: inca %s -> exit %d, expected %d (stderr: %s)", what, args, rc, want, err);
    if (want == 2) {
        size_t l = strlen(err);
        ck_assert_msg(l > 0 && strchr(err, '\n') == err + l - 1, "%s: expected one stderr line: %s", what, err);
        ck_assert_msg(strstr(err, store), "%s: message does not name the store: %s", what, err);
    }
    free(err);
}

static int same_dataset(const dataset_t *a, const dataset_t *b) {
    if (a->n != b->n || a->f != b->f || a->c != b->c || a->adj.nnz != b->adj.nnz) return 0;
    if (memcmp(a->adj.rowptr, b->adj.rowptr, sizeof(int64_t) * (size_t)(a->n + 1)) ||
        memcmp(a->adj.col, b->adj.col, sizeof(int32_t) * (size_t)a->adj.nnz) ||
        memcmp(a->x, b->x, sizeof(float) * (size_t)(a->n * a->f)) || memcmp(a->y, b->y, sizeof(int32_t) * (size_t)a->n))
        return 0;
    for (int s = 0; s < SPLIT_COUNT; s++)
        if (a->split_n[s] != b->split_n[s] || memcmp(a->split[s], b->split[s], sizeof(int64_t) * (size_t)a->split_n[s]))
            return 0;
    return 1;
}

START_TEST(test_flipped_contents_fail) {
    dataset_t d, e;
    make_dataset(&d);
    store_set_chunk_bytes(4096);
    ck_assert_int_eq(dataset_save(&d, golden, 0), INCA_OK);
    store_set_chunk_bytes(0);
    char p[4400];
    snprintf(p, sizeof p, "%s/data.mdb", golden);
    size_t len;
    unsigned char *buf = slurp_file(p, &len);
    locate_all(&d, buf, len);
    ck_assert_int_ge(npos, 20);
    char copy[4200], args[8600];
    snprintf(copy, sizeof copy, "%s/flip.lmdb", dir);
    /* the unflipped copy loads and verifies: the failures below come from the flips */
    copy_with_flip(buf, len, copy, -1, 0);
    ck_assert_int_eq(dataset_load(copy, &e), INCA_OK);
    ck_assert(same_dataset(&d, &e));
    dataset_free(&e);
    snprintf(args, sizeof args, "verify '%s'", copy);
    check_err("unflipped", args, 0, copy);
    for (int i = 0; i < npos; i++) {
        copy_with_flip(buf, len, copy, pos[i].off, 0x5A);
        int rc = dataset_load(copy, &e);
        ck_assert_msg(rc == INCA_EINVAL, "%s (byte %ld): dataset_load -> %d (%s), expected INCA_EINVAL", pos[i].what,
                      pos[i].off, rc, inca_errmsg());
        ck_assert_msg(strstr(inca_errmsg(), copy), "%s: message does not name the store: %s", pos[i].what, inca_errmsg());
        snprintf(args, sizeof args, "verify '%s'", copy);
        check_err(pos[i].what, args, 2, copy);
        if (i % 4 == 0) {
            snprintf(args, sizeof args, "train '%s' --model gcn --epochs 1", copy);
            check_err(pos[i].what, args, 2, copy);
        }
    }
    fprintf(stderr, "test_store_corrupt: %d located positions flipped, all exit 2\n", npos);
    free(buf);
    dataset_free(&d);
}
END_TEST

START_TEST(test_flipped_pages_never_crash) {
    /* Bytes of every page's header and first node offsets (LMDB's own structure): never a crash;
     * exit 2 with a message, or exit 0 with the data read back unchanged (a free page, the older
     * meta page). */
    dataset_t d, e;
    make_dataset(&d);
    store_set_chunk_bytes(4096);
    ck_assert_int_eq(dataset_save(&d, golden, 0), INCA_OK);
    store_set_chunk_bytes(0);
    char p[4400], copy[4200], args[8600];
    snprintf(p, sizeof p, "%s/data.mdb", golden);
    snprintf(copy, sizeof copy, "%s/flip.lmdb", dir);
    size_t len;
    unsigned char *buf = slurp_file(p, &len);
    static const int offs[] = {0, 5, 10, 12, 13, 14, 15, 16, 17, 18, 19, 24, 40, 88, 136, 144};
    int tried = 0, failed = 0;
    for (size_t pg = 0; pg * 4096 < len; pg++)
        for (size_t j = 0; j < sizeof offs / sizeof offs[0]; j++) {
            long off = (long)(pg * 4096 + (size_t)offs[j]);
            if (pg >= 2 && offs[j] >= 40) continue;   /* meta fields only on pages 0 and 1 */
            copy_with_flip(buf, len, copy, off, 0x5A);
            int rc = dataset_load(copy, &e);
            ck_assert_msg(rc == INCA_OK || rc == INCA_EINVAL, "byte %ld: dataset_load -> %d (%s)", off, rc, inca_errmsg());
            if (rc == INCA_OK) {
                ck_assert_msg(same_dataset(&d, &e), "byte %ld: loaded, but the data differ", off);
                dataset_free(&e);
            }
            if (tried % 3 == 0) {   /* the binary agrees (and survives) on a third of them */
                snprintf(args, sizeof args, "verify '%s'", copy);
                check_err("page flip", args, rc == INCA_OK ? 0 : 2, copy);
            }
            tried++;
            failed += rc != INCA_OK;
        }
    fprintf(stderr, "test_store_corrupt: %d page-structure positions flipped, %d refused (exit 2), %d harmless\n",
            tried, failed, tried - failed);
    ck_assert_int_ge(failed, 20);
    free(buf);
    dataset_free(&d);
}
END_TEST

/* A store whose checksums hold but whose contents break the schema (as a buggy writer would
 * leave it): dataset_load names the array and the first bad position. */
enum { MUT_COL, MUT_ROWPTR_DECREASE, MUT_ROWPTR_START, MUT_X_NAN, MUT_Y_HIGH, MUT_Y_LOW, MUT_SPLIT, MUT_LABELED,
       MUT_SPLIT_LEN, MUT_Y_MISSING, MUT_COUNT };

static void mutate_store(const dataset_t *d, int mut) {
    store_t *s;
    store_wtx_t *w;
    ck_assert_int_eq(store_open(golden, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    int64_t *rp = malloc(sizeof(int64_t) * (size_t)(d->n + 1));
    int32_t *col = malloc(sizeof(int32_t) * (size_t)d->adj.nnz), *y = malloc(sizeof(int32_t) * (size_t)d->n);
    float *x = malloc(sizeof(float) * (size_t)(d->n * d->f));
    int64_t *te = malloc(sizeof(int64_t) * (size_t)d->split_n[2]);
    memcpy(rp, d->adj.rowptr, sizeof(int64_t) * (size_t)(d->n + 1));
    memcpy(col, d->adj.col, sizeof(int32_t) * (size_t)d->adj.nnz);
    memcpy(y, d->y, sizeof(int32_t) * (size_t)d->n);
    memcpy(x, d->x, sizeof(float) * (size_t)(d->n * d->f));
    memcpy(te, d->split[2], sizeof(int64_t) * (size_t)d->split_n[2]);
    switch (mut) {
    case MUT_COL: col[1234] = 9999; break;
    case MUT_ROWPTR_DECREASE: rp[300] = rp[299] - 1; break;
    case MUT_ROWPTR_START: rp[0] = 1; break;
    case MUT_X_NAN: x[8 * 77 + 5] = NAN; break;
    case MUT_Y_HIGH: y[100] = 3; break;
    case MUT_Y_LOW: y[101] = -2; break;
    case MUT_SPLIT: te[7] = 600; break;
    case MUT_LABELED: y[17] = 1; break;   /* node 17 was unlabelled */
    }
    if (mut == MUT_ROWPTR_DECREASE || mut == MUT_ROWPTR_START)
        ck_assert_int_eq(store_wtx_put_array(w, "rowptr", DT_I64, rp, d->n + 1), INCA_OK);
    if (mut == MUT_COL) ck_assert_int_eq(store_wtx_put_array(w, "col", DT_I32, col, d->adj.nnz), INCA_OK);
    if (mut == MUT_X_NAN) ck_assert_int_eq(store_wtx_put_array(w, "x", DT_F32, x, d->n * d->f), INCA_OK);
    if (mut == MUT_Y_HIGH || mut == MUT_Y_LOW || mut == MUT_LABELED)
        ck_assert_int_eq(store_wtx_put_array(w, "y", DT_I32, y, d->n), INCA_OK);
    if (mut == MUT_SPLIT) ck_assert_int_eq(store_wtx_put_array(w, "split/test", DT_I64, te, d->split_n[2]), INCA_OK);
    if (mut == MUT_SPLIT_LEN)
        ck_assert_int_eq(store_wtx_put_array(w, "split/test", DT_I64, te, d->split_n[2] - 1), INCA_OK);
    if (mut == MUT_Y_MISSING) ck_assert_int_eq(store_wtx_del_array(w, "y"), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_close(&s);
    free(rp); free(col); free(y); free(x); free(te);
}

START_TEST(test_content_checks) {
    dataset_t d, e;
    make_dataset(&d);
    ck_assert_int_ge(d.adj.nnz, 1235);
    ck_assert_int_eq(d.y[17], -1);
    char want[MUT_COUNT][160];
    snprintf(want[MUT_COL], 160, "array 'col' entry 1234 = 9999 is outside [0, 600)");
    snprintf(want[MUT_ROWPTR_DECREASE], 160, "array 'rowptr' entry 300 = %lld is below entry 299 = %lld",
             (long long)d.adj.rowptr[299] - 1, (long long)d.adj.rowptr[299]);
    snprintf(want[MUT_ROWPTR_START], 160, "array 'rowptr' entry 0 = 1, expected 0");
    snprintf(want[MUT_X_NAN], 160, "array 'x' entry %d (row 77, column 5) = nan is not finite", 8 * 77 + 5);
    snprintf(want[MUT_Y_HIGH], 160, "array 'y' entry 100 = 3 is outside [-1, 3)");
    snprintf(want[MUT_Y_LOW], 160, "array 'y' entry 101 = -2 is outside [-1, 3)");
    snprintf(want[MUT_SPLIT], 160, "array 'split/test' entry 7 = 600 is outside [0, 600)");
    snprintf(want[MUT_LABELED], 160, "array 'y' has %lld labelled entries, the meta record says %lld",
             (long long)dataset_labeled(&d) + 1, (long long)dataset_labeled(&d));
    snprintf(want[MUT_SPLIT_LEN], 160, "array 'split/test' has %lld entries, the meta record says %lld",
             (long long)d.split_n[2] - 1, (long long)d.split_n[2]);
    snprintf(want[MUT_Y_MISSING], 160, "array 'y' is missing");
    for (int mut = 0; mut < MUT_COUNT; mut++) {
        tu_rmrf(golden);
        ck_assert_int_eq(dataset_save(&d, golden, 0), INCA_OK);
        mutate_store(&d, mut);
        ck_assert_int_eq(dataset_load(golden, &e), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), want[mut]) && strstr(inca_errmsg(), golden), "mutation %d: message '%s' lacks '%s'",
                      mut, inca_errmsg(), want[mut]);
        if (mut % 3 == 0) {
            char args[4200];
            snprintf(args, sizeof args, "verify '%s'", golden);
            check_err(want[mut], args, 2, golden);
        }
    }
    dataset_free(&d);
}
END_TEST

/* A named split (stored beside the default, as every split/ folder of an OGB dataset is) whose
 * checksums hold but which names node 600 of 600: the default alone loads (dataset_load reads
 * no named split's ids), but `inca verify` checks every split and names the array and entry. */
START_TEST(test_named_split_contents_verified) {
    dataset_t d, e;
    make_dataset(&d);
    snprintf(d.split_name, sizeof d.split_name, "public");
    d.more = inca_calloc(1, sizeof *d.more);
    ck_assert_ptr_nonnull(d.more);
    snprintf(d.more[0].name, sizeof d.more[0].name, "alt");
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {   /* train {0, 1}, valid {2, 3}, test {4, 5} */
        d.more[0].n[sp] = 2;
        d.more[0].ids[sp] = inca_malloc(sizeof(int64_t) * 2);
        d.more[0].ids[sp][0] = 2 * sp;
        d.more[0].ids[sp][1] = 2 * sp + 1;
    }
    d.n_more = 1;
    ck_assert_int_eq(dataset_save(&d, golden, 0), INCA_OK);
    char args[4200];
    snprintf(args, sizeof args, "verify '%s'", golden);
    check_err("named split intact", args, 0, golden);
    store_t *s;
    store_wtx_t *w;
    const int64_t bad[2] = {4, 600};
    ck_assert_int_eq(store_open(golden, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, "split:alt/test", DT_I64, bad, 2), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_close(&s);
    ck_assert_int_eq(dataset_load(golden, &e), INCA_OK);   /* the default split is intact */
    dataset_free(&e);
    char *err = NULL;
    ck_assert_int_eq(tu_inca(args, NULL, &err), 2);
    ck_assert_msg(strstr(err, golden) && strstr(err, "array 'split:alt/test' entry 1 = 600 is outside [0, 600)"), "%s", err);
    free(err);
    dataset_free(&d);
}
END_TEST

START_TEST(test_old_version_refused) {
    /* A v1 meta record (no checksum trailer): its value is exactly sizeof(store_meta_t) bytes. */
    store_t *s;
    ck_assert_int_eq(store_create(golden, &s), INCA_OK);
    store_meta_t m;
    memset(&m, 0, sizeof m);
    m.magic = STORE_MAGIC;
    m.version = 1;
    m.nodes = 3;
    store_wtx_t *w;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_record(w, "meta", &m, sizeof m - 4), INCA_OK);   /* + 4-byte trailer */
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_close(&s);
    ck_assert_int_eq(store_open(golden, STORE_RDONLY, &s), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "version 1 (no checksums)"));
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "re-ingest"));
    char args[4200];
    snprintf(args, sizeof args, "info '%s'", golden);
    check_err("v1 store", args, 2, golden);
    /* a v2 record of that size (its trailer lost to a damaged length) is not read unchecked */
    tu_rmrf(golden);
    m.version = STORE_VERSION;
    m.classes = 7;
    ck_assert_int_eq(store_create(golden, &s), INCA_OK);
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_record(w, "meta", &m, sizeof m - 4), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_close(&s);
    ck_assert_int_eq(store_open(golden, STORE_RDONLY, &s), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "the store is corrupt") != NULL, "%s", inca_errmsg());
}
END_TEST

/* Issue 31: a data.mdb cut short (a copy stopped early) or that is no LMDB file says so in the
 * user's terms: its size, what a store needs, "truncated or not a store"; not a bad page size. */
START_TEST(test_truncated_says_truncated) {
    dataset_t d;
    make_dataset(&d);
    ck_assert_int_eq(dataset_save(&d, golden, 0), INCA_OK);
    dataset_free(&d);
    char p[4400];
    snprintf(p, sizeof p, "%s/data.mdb", golden);
    size_t len;
    unsigned char *buf = slurp_file(p, &len);
    ck_assert_uint_gt(len, 3 * 4096);
    static const struct { long keep; const char *want; } cut[] = {
        {100, "data.mdb: 100 bytes, too short for an LMDB store (at least 2 pages of 4096): truncated or not a store"},
        {20, "data.mdb: 20 bytes, too short for an LMDB store (at least 2 pages): truncated or not a store"},
        {3 * 4096 + 17, "data.mdb: holds 3 pages of 4096 bytes, but its LMDB meta page"},
        {-1, "data.mdb: not an LMDB data file (no LMDB meta page at its start): damaged or not a store"},
    };
    char to[4200], args[4400];
    snprintf(to, sizeof to, "%s/cut.lmdb", dir);
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
        tu_rmrf(to);
        ck_assert_int_eq(mkdir(to, 0755), 0);
        snprintf(p, sizeof p, "%s/data.mdb", to);
        FILE *f = fopen(p, "wb");
        ck_assert_ptr_nonnull(f);
        if (cut[i].keep >= 0) ck_assert_uint_eq(fwrite(buf, 1, (size_t)cut[i].keep, f), (size_t)cut[i].keep);
        else for (int k = 0; k < 3 * 4096; k++) fputc("not a store\n"[k % 12], f);   /* text, 3 pages */
        ck_assert_int_eq(fclose(f), 0);
        snprintf(args, sizeof args, "verify '%s'", to);
        char *err = NULL;
        ck_assert_int_eq(tu_inca(args, NULL, &err), 2);
        ck_assert_msg(strncmp(err, "inca verify: ", 13) == 0 && strstr(err, to) && strstr(err, cut[i].want) &&
                      !strstr(err, "bad page size") && strchr(err, '\n') == err + strlen(err) - 1,
                      "cut to %ld bytes: %s", cut[i].keep, err);
        if (cut[i].keep >= 0) ck_assert_msg(strstr(err, "truncated"), "cut to %ld bytes: %s", cut[i].keep, err);
        free(err);
    }
    free(buf);
}
END_TEST

/* A meta page whose sizes are 0xff bytes is damaged, not truncated: its last page 2^64 - 1 made
 * (last + 1) x page size wrap to 0, and the file was said to be cut short (a user review). */
START_TEST(test_damaged_meta_not_truncated) {
    dataset_t d;
    make_dataset(&d);
    ck_assert_int_eq(dataset_save(&d, golden, 0), INCA_OK);
    dataset_free(&d);
    char p[4400], to[4200], args[4400];
    snprintf(p, sizeof p, "%s/data.mdb", golden);
    size_t len;
    unsigned char *buf = slurp_file(p, &len);
    ck_assert_uint_gt(len, 2 * 4096);
    memset(buf + 4096 + 100, 0xff, 64);   /* meta page 1: its databases' records, last page and txnid */
    snprintf(to, sizeof to, "%s/meta.lmdb", dir);
    ck_assert_int_eq(mkdir(to, 0755), 0);
    snprintf(p, sizeof p, "%s/data.mdb", to);
    FILE *f = fopen(p, "wb");
    ck_assert(f && fwrite(buf, 1, len, f) == len && fclose(f) == 0);
    snprintf(args, sizeof args, "verify '%s'", to);
    char *err = NULL;
    ck_assert_int_eq(tu_inca(args, NULL, &err), 2);
    ck_assert_msg(strstr(err, "impossible sizes") && !strstr(err, "truncated"), "%s", err);
    free(err);
    free(buf);
}
END_TEST

/* `inca ingest` of the bundled Cora under RLIMIT_FSIZE (SIGXFSZ ignored, so write() fails with
 * EFBIG as on a full disk). Returns the exit status; *err gets stderr. */
static int ingest_limited(const char *out, rlim_t limit, int force, char **err) {
    char src[4096], errpath[4200];
    snprintf(src, sizeof src, "%s/data/cora", tu_src());
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int nul = open("/dev/null", O_WRONLY);
        if (fd < 0 || nul < 0) _exit(99);
        dup2(fd, 2);
        dup2(nul, 1);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {limit, limit};
        if (limit && setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(98);
        const char *args[] = {tu_bin(), "ingest", "--format", "ogb", src, "--out", out, force ? "--force" : NULL, NULL};
        execv(tu_bin(), (char *const *)args);
        _exit(97);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    size_t len;
    unsigned char *e = slurp_file(errpath, &len);
    *err = realloc(e, len + 1);
    (*err)[len] = '\0';
    return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

static int entries_beside(const char *store) {   /* files in the store's parent besides stderr.txt */
    (void)store;
    DIR *dh = opendir(dir);
    ck_assert_ptr_nonnull(dh);
    int k = 0;
    struct dirent *de;
    while ((de = readdir(dh)))
        if (de->d_name[0] != '.' && strcmp(de->d_name, "stderr.txt") != 0) k++;
    closedir(dh);
    return k;
}

START_TEST(test_disk_full_ingest) {
    char src[4096], out[4200], args[8600];
    snprintf(src, sizeof src, "%s/data/cora/raw", tu_src());
    if (!tu_exists(src)) { fprintf(stderr, "data/cora missing: skipped\n"); exit(77); }
    snprintf(out, sizeof out, "%s/cora.lmdb", dir);
    static const rlim_t limits[] = {4096, 64 << 10, 1 << 20, 8 << 20};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        char *err = NULL;
        int rc = ingest_limited(out, limits[i], 0, &err);
        size_t l = strlen(err);
        ck_assert_msg(rc == 1, "limit %lu: exit %d, expected 1 (stderr: %s)", (unsigned long)limits[i], rc, err);
        ck_assert_msg(l > 0 && strchr(err, '\n') == err + l - 1, "limit %lu: expected one stderr line: %s",
                      (unsigned long)limits[i], err);
        ck_assert_msg(!tu_exists(out) && entries_beside(out) == 0, "limit %lu: a partial store was left behind",
                      (unsigned long)limits[i]);
        free(err);
    }
    /* a complete store, then a forced re-ingest that runs out of room: the old one stays */
    char *err = NULL;
    ck_assert_int_eq(ingest_limited(out, 0, 0, &err), 0);
    free(err);
    char *before = NULL, *after = NULL;
    snprintf(args, sizeof args, "info '%s' --json", out);
    ck_assert_int_eq(tu_inca(args, &before, NULL), 0);
    ck_assert_int_eq(ingest_limited(out, 1 << 20, 1, &err), 1);
    free(err);
    ck_assert_int_eq(entries_beside(out), 1);
    snprintf(args, sizeof args, "verify '%s'", out);
    check_err("old store after a failed --force", args, 0, out);
    snprintf(args, sizeof args, "info '%s' --json", out);
    ck_assert_int_eq(tu_inca(args, &after, NULL), 0);
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
}
END_TEST

/* Two overflow values sharing pages (mutation test): a store with two records of 10000 bytes
 * (each stored with its 4-byte checksum: an LMDB overflow run of 3 pages), then, in every leaf page of data.mdb (LMDB 0.9's
 * layout: page flags at byte 10, free-space lower bound at 12, node offsets from 16; a node is
 * data size lo/hi (2 x 16 bits), flags (F_BIGDATA = 1), key size, key, then the overflow page
 * number), the second such node made to reference the first one's run. Each referenced page
 * header still names its own number, says overflow and holds enough pages: only the check that
 * no page is reached twice tells. lmdb_check_file must refuse the file naming that page. */
static unsigned rd16le(const unsigned char *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
START_TEST(test_overflow_page_reached_twice) {
    char path[4200], mdb[4300];
    snprintf(path, sizeof path, "%s/twice.lmdb", dir);
    store_t *s = NULL;
    ck_assert_int_eq(store_create(path, &s), INCA_OK);
    unsigned char *va = malloc(10000), *vb = malloc(10000);
    for (int i = 0; i < 10000; i++) { va[i] = (unsigned char)i; vb[i] = (unsigned char)(i * 7 + 1); }
    store_wtx_t *w = NULL;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_record(w, "twice/a", va, 10000), INCA_OK);
    ck_assert_int_eq(store_wtx_put_record(w, "twice/b", vb, 10000), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_close(&s);
    snprintf(mdb, sizeof mdb, "%s/data.mdb", path);
    ck_assert_int_eq(lmdb_check_file(mdb, -1), INCA_OK);   /* intact */
    size_t len = 0;
    unsigned char *b = slurp_file(mdb, &len);
    const size_t ps = 4096;
    int redirected = 0;
    for (size_t pg = 2; (pg + 1) * ps <= len; pg++) {
        unsigned char *p = b + pg * ps;
        if ((rd16le(p + 10) & 0x3f) != 0x02) continue;   /* leaf pages */
        const unsigned lower = rd16le(p + 12);
        if (lower < 16 || lower > ps) continue;
        unsigned char *first = NULL;
        for (unsigned k = 0; k < (lower - 16) / 2; k++) {
            const unsigned off = rd16le(p + 16 + 2 * k);
            if (off + 8 > ps) continue;
            unsigned char *node = p + off;
            const unsigned dsz = rd16le(node) | rd16le(node + 2) << 16, ks = rd16le(node + 6);
            if (!(rd16le(node + 4) & 0x01) || dsz != 10004 || off + 8 + ks + 8 > ps) continue;
            unsigned char *ref = node + 8 + ks;
            if (!first) first = ref;
            else { memcpy(ref, first, 8); redirected++; }
        }
    }
    ck_assert_int_ge(redirected, 1);
    FILE *f = fopen(mdb, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, len, f), len);
    fclose(f);
    free(b);
    ck_assert_int_eq(lmdb_check_file(mdb, -1), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "reached twice") != NULL, "%s", inca_errmsg());
    free(va);
    free(vb);
}
END_TEST

int main(void) {
    Suite *s = suite_create("store_corrupt");
    TCase *tc = tcase_create("store_corrupt");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_flipped_contents_fail);
    tcase_add_test(tc, test_flipped_pages_never_crash);
    tcase_add_test(tc, test_content_checks);
    tcase_add_test(tc, test_named_split_contents_verified);
    tcase_add_test(tc, test_old_version_refused);
    tcase_add_test(tc, test_truncated_says_truncated);
    tcase_add_test(tc, test_damaged_meta_not_truncated);
    tcase_add_test(tc, test_disk_full_ingest);
    tcase_add_test(tc, test_overflow_page_reached_twice);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
