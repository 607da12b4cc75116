/* loaders/store + dataset: chunked arrays across chunk boundaries, zero-copy views, records,
 * transactional batches, map growth on MDB_MAP_FULL, meta checks with hints, atomic
 * dataset_save (nothing left behind on failure), save -> load round trip. */
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/dataset.h"
#include "loaders/store.h"
#include "graph/split.h"
#include "testutil.h"
#include <dirent.h>
#include <lmdb.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dir;
static char path[4096];
static void setup(void) {
    dir = tu_mkdtemp();
    snprintf(path, sizeof path, "%s/s.lmdb", dir);
}
static void teardown(void) { tu_rmrf(dir); free(dir); }

START_TEST(test_arrays_chunks_records) {
    store_set_chunk_bytes(4096);   /* 1024 floats per chunk */
    store_t *s;
    ck_assert_int_eq(store_create(path, &s), INCA_OK);
    ck_assert_ptr_null(store_meta(s));
    const int64_t n = 5000;
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)i * 0.5f;
    store_wtx_t *w;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, "x", DT_F32, x, n), INCA_OK);
    ck_assert_int_eq(store_wtx_put_record(w, "part:a", "hello", 5), INCA_OK);
    ck_assert_int_eq(store_wtx_put_record(w, "part:b", "x", 1), INCA_OK);
    ck_assert_int_eq(store_wtx_put_record(w, "other", "y", 1), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    ck_assert_ptr_null(w);
    store_array_info_t info;
    ck_assert_int_eq(store_array_info(s, "x", &info), INCA_OK);
    ck_assert_int_eq(info.count, n);
    ck_assert_int_eq(info.nchunks, 5);
    const void *p;
    int64_t cnt;
    ck_assert_int_eq(store_array_chunk(s, "x", 4, &p, &cnt), INCA_OK);
    ck_assert_int_eq(cnt, n - 4096);
    ck_assert(((const float *)p)[0] == 4096 * 0.5f);   /* zero-copy view into the map */
    float buf[3000];
    ck_assert_int_eq(store_array_read(s, "x", 1000, 3000, buf), INCA_OK);   /* crosses 3 chunks */
    for (int i = 0; i < 3000; i++) ck_assert(buf[i] == (float)(1000 + i) * 0.5f);
    ck_assert_int_eq(store_array_read(s, "x", 4000, 2000, buf), INCA_EINVAL);
    ck_assert_int_eq(store_array_info(s, "nope", &info), INCA_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "nope"));
    const void *r;
    size_t rl;
    ck_assert_int_eq(store_record_get(s, "part:a", &r, &rl), INCA_OK);
    ck_assert_int_eq((int)rl, 5);
    ck_assert_int_eq(memcmp(r, "hello", 5), 0);
    /* replacing an array with a shorter one leaves no stale chunks */
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, "x", DT_F32, x + 10, 1500), INCA_OK);
    ck_assert_int_eq(store_wtx_del_record(w, "part:b"), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    ck_assert_int_eq(store_array_info(s, "x", &info), INCA_OK);
    ck_assert_int_eq(info.nchunks, 2);
    float *back;
    ck_assert_int_eq(store_array_load(s, "x", DT_F32, (void **)&back, &cnt), INCA_OK);
    ck_assert_int_eq(cnt, 1500);
    for (int i = 0; i < 1500; i++) ck_assert(back[i] == x[10 + i]);
    inca_free(back);
    ck_assert_int_eq(store_array_load(s, "x", DT_I32, (void **)&back, &cnt), INCA_EINVAL);
    ck_assert_int_eq(store_record_get(s, "part:b", &r, &rl), INCA_ENOTFOUND);
    store_close(&s);
    ck_assert_ptr_null(s);
    /* no meta: the store does not open as valid */
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "meta"));
    free(x);
    store_set_chunk_bytes(0);
}
END_TEST

START_TEST(test_map_growth) {
    /* 96 MiB in one transaction overflows the 64 MiB initial map: the store must grow */
    store_t *s;
    ck_assert_int_eq(store_create(path, &s), INCA_OK);
    const int64_t n = 24 << 20;
    int32_t *a = malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) a[i] = (int32_t)(i * 3);
    store_wtx_t *w;
    store_meta_t m;
    memset(&m, 0, sizeof m);
    m.nodes = 1;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, "big", DT_I32, a, n), INCA_OK);
    ck_assert_int_eq(store_wtx_put_meta(w, &m), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    int32_t v[2];
    ck_assert_int_eq(store_array_read(s, "big", n - 2, 2, v), INCA_OK);
    ck_assert_int_eq(v[1], (int32_t)((n - 1) * 3));
    store_close(&s);
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(store_meta(s)->nodes, 1);
    ck_assert_int_gt(store_disk_bytes(s), (int64_t)n * 4);
    store_close(&s);
    free(a);
}
END_TEST

/* store_write_commit_split: the same store as one transaction gives, one chunk per
 * transaction: arrays replaced (no stale chunks), deleted, put whole, records, meta last; and
 * the map grows between transactions (96 MiB in 8 MiB steps past a 64 MiB map) */
/* LMDB's id of the last committed transaction of the (closed) store at p */
static size_t last_txnid(const char *p) {
    MDB_env *e = NULL;
    MDB_envinfo info;
    ck_assert_int_eq(mdb_env_create(&e), 0);
    mdb_env_set_maxdbs(e, 4);
    ck_assert_int_eq(mdb_env_open(e, p, MDB_RDONLY, 0644), 0);
    ck_assert_int_eq(mdb_env_info(e, &info), 0);
    mdb_env_close(e);
    return info.me_last_txnid;
}

START_TEST(test_commit_split) {
    store_set_chunk_bytes(4096);   /* 1024 floats per chunk */
    const int64_t n = 5000;
    float *x = malloc(sizeof(float) * (size_t)n);
    int32_t y[3000];
    for (int64_t i = 0; i < n; i++) x[i] = (float)i * 0.25f;
    for (int i = 0; i < 3000; i++) y[i] = 7 * i;
    store_t *s;
    ck_assert_int_eq(store_create(path, &s), INCA_OK);
    store_wtx_t *w;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);   /* what the split commit replaces and deletes */
    ck_assert_int_eq(store_wtx_put_array(w, "x", DT_F32, x, n), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, "gone", DT_I32, y, 3000), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_meta_t m;
    memset(&m, 0, sizeof m);
    m.nodes = 42;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, "x", DT_F32, x + 100, 2500), INCA_OK);   /* 5 chunks -> 3 */
    ck_assert_int_eq(store_wtx_del_array(w, "gone"), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, "y", DT_I32, y, 3000), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array_whole(w, "w", DT_I32, y, 3000), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, "empty", DT_F32, x, 0), INCA_OK);
    ck_assert_int_eq(store_wtx_put_record(w, "note", "abc", 3), INCA_OK);
    ck_assert_int_eq(store_wtx_put_meta(w, &m), INCA_OK);
    ck_assert_int_eq(store_write_commit_split(&w, 1), INCA_OK);
    ck_assert_ptr_null(w);
    store_close(&s);
    /* one chunk a transaction: x's 3, y's 3, w's 1 at least, after the creation's and the first
     * commit's (one transaction for all of it would end at 3) */
    ck_assert_uint_ge(last_txnid(path), 2 + 7);
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(store_meta(s)->nodes, 42);
    store_verify_stats_t vs;
    ck_assert_msg(store_verify(s, &vs) == INCA_OK, "%s", inca_errmsg());
    ck_assert_int_eq(vs.arrays, 4);   /* x, y, w, empty */
    ck_assert_int_eq(vs.chunks, 3 + 3 + 1);
    float *xb;
    int32_t *yb;
    int64_t cnt;
    ck_assert_int_eq(store_array_load(s, "x", DT_F32, (void **)&xb, &cnt), INCA_OK);
    ck_assert_int_eq(cnt, 2500);
    ck_assert_mem_eq(xb, x + 100, sizeof(float) * 2500);
    inca_free(xb);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(store_array_load(s, k ? "w" : "y", DT_I32, (void **)&yb, &cnt), INCA_OK);
        ck_assert_int_eq(cnt, 3000);
        ck_assert_mem_eq(yb, y, sizeof y);
        inca_free(yb);
    }
    ck_assert_int_eq(store_has_array(s, "gone"), 0);
    const void *r;
    size_t rl;
    ck_assert_int_eq(store_record_get(s, "note", &r, &rl), INCA_OK);
    ck_assert_int_eq((int)rl, 3);
    store_close(&s);
    store_set_chunk_bytes(0);
    free(x);
    /* map growth between transactions */
    char p2[4200];
    snprintf(p2, sizeof p2, "%s/big.lmdb", dir);
    const int64_t nb = 24 << 20;
    int32_t *a = malloc(sizeof(int32_t) * (size_t)nb);
    for (int64_t i = 0; i < nb; i++) a[i] = (int32_t)(i * 5);
    ck_assert_int_eq(store_create(p2, &s), INCA_OK);
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, "big", DT_I32, a, nb), INCA_OK);
    ck_assert_int_eq(store_wtx_put_meta(w, &m), INCA_OK);
    ck_assert_int_eq(store_write_commit_split(&w, (int64_t)8 << 20), INCA_OK);
    /* one value past LMDB's 4 GiB is taken (for a side file, written at commit: test_side_files);
     * an abort reads none of it (the pointer is never used) and writes no file */
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array_whole(w, "huge", DT_F32, a, (int64_t)1 << 30), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array_whole(w, "fits", DT_F32, a, ((int64_t)1 << 30) - 2), INCA_OK);
    store_write_abort(&w);
    inca_err_clear();
    int32_t v[2];
    ck_assert_int_eq(store_array_read(s, "big", nb - 2, 2, v), INCA_OK);
    ck_assert_int_eq(v[1], (int32_t)((nb - 1) * 5));
    ck_assert_msg(store_verify(s, &vs) == INCA_OK, "%s", inca_errmsg());
    store_close(&s);
    free(a);
}
END_TEST

START_TEST(test_whole_views) {
    /* an array put whole is one value: a contiguous view of all of it, with the chunk size set
     * so small that a chunked put of the same array takes many chunks */
    store_set_chunk_bytes(4096);
    store_t *s;
    ck_assert_int_eq(store_create(path, &s), INCA_OK);
    const int64_t n = 100003;   /* ~98 chunks of 4 KiB */
    float *a = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) a[i] = (float)i * 0.25f - 7.f;
    store_wtx_t *w;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array_whole(w, "whole", DT_F32, a, n), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, "chunked", DT_F32, a, n), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array_whole(w, "empty", DT_F32, a, 0), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_set_chunk_bytes(0);
    const void *p = NULL;
    int64_t cnt = -1;
    ck_assert_int_eq(store_array_view(s, "whole", DT_F32, &p, &cnt), INCA_OK);
    ck_assert_int_eq(cnt, n);
    ck_assert_int_eq((uintptr_t)p % 16, 0);
    ck_assert_mem_eq(p, a, sizeof(float) * (size_t)n);
    store_array_info_t info;
    ck_assert_int_eq(store_array_info(s, "chunked", &info), INCA_OK);
    ck_assert_int_gt(info.nchunks, 90);
    ck_assert_int_eq(store_array_view(s, "chunked", DT_F32, &p, &cnt), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "chunks"));
    ck_assert_int_eq(store_array_view(s, "whole", DT_I32, &p, &cnt), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "whole"));
    ck_assert_int_eq(store_array_view(s, "missing", DT_F32, &p, &cnt), INCA_ENOTFOUND);
    ck_assert_int_eq(store_array_view(s, "empty", DT_F32, &p, &cnt), INCA_OK);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(cnt, 0);
    /* the whole value still reads like any array, and verifies */
    float v[3];
    ck_assert_int_eq(store_array_read(s, "whole", n - 3, 3, v), INCA_OK);
    ck_assert(v[2] == a[n - 1]);
    store_verify_stats_t st;
    ck_assert_int_eq(store_verify(s, &st), INCA_OK);
    store_close(&s);
    free(a);
}
END_TEST


/* A value small enough to sit in an LMDB leaf page is only 2-byte aligned there (its offset
 * follows the node's 8-byte header and its key): a view of a small i64 array is read in place
 * by its callers (a shard's rowptr), so it must come aligned whatever its name's length. Eight
 * names of lengths 1..8 put the value at every even offset mod 8; each view is 8-byte aligned,
 * holds the values written, and a second view of the same array holds them too. */
START_TEST(test_small_views_aligned) {
    store_t *s;
    ck_assert_int_eq(store_create(path, &s), INCA_OK);
    int64_t a[5] = {3, -1, INT64_MAX, 0, 42};
    static const char *const names[8] = {"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh"};
    store_wtx_t *w;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    for (int i = 0; i < 8; i++) ck_assert_int_eq(store_wtx_put_array_whole(w, names[i], DT_I64, a, 5), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    for (int i = 0; i < 8; i++)
        for (int again = 0; again < 2; again++) {
            const void *p = NULL;
            int64_t cnt = -1;
            ck_assert_int_eq(store_array_view(s, names[i], DT_I64, &p, &cnt), INCA_OK);
            ck_assert_int_eq(cnt, 5);
            ck_assert_msg((uintptr_t)p % sizeof(int64_t) == 0, "view of '%s' at %p", names[i], p);
            ck_assert_mem_eq(p, a, sizeof a);
            ck_assert_int_eq(store_array_chunk(s, names[i], 0, &p, &cnt), INCA_OK);
            ck_assert_msg((uintptr_t)p % sizeof(int64_t) == 0, "chunk of '%s' at %p", names[i], p);
            ck_assert_mem_eq(p, a, sizeof a);
        }
    ck_assert_int_eq(store_refresh(s), INCA_OK);   /* the copies end with the snapshot; views again */
    const void *p = NULL;
    ck_assert_int_eq(store_array_view(s, "abc", DT_I64, &p, NULL), INCA_OK);
    ck_assert_mem_eq(p, a, sizeof a);
    store_close(&s);
}
END_TEST

/* Side files in the store directory: names matching side-*.bin (tmp: also .bin.tmp) */
static int side_files(const char *store, char *first, size_t cap) {
    DIR *d = opendir(store);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, "side-", 5) == 0) {
            if (n++ == 0 && first) snprintf(first, cap, "%s", e->d_name);
        }
    closedir(d);
    return n;
}

static void flip_byte(const char *file, long off) {
    FILE *f = fopen(file, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, off, SEEK_SET);
    int c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
}

static store_t *put_whole_commit(store_t *s, const char *name, const float *a, int64_t n) {
    store_wtx_t *w;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array_whole(w, name, DT_F32, a, n), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    return s;
}

START_TEST(test_side_files) {
    /* a whole array past LMDB's value size goes to a side file (the limit lowered to 4 KiB here;
     * in real use 4 GiB): same views and reads, checked against its CRC, replaced and deleted
     * with its descriptor, nothing left by a failed or interrupted write */
    store_set_whole_max_bytes(4096);
    store_t *s;
    ck_assert_int_eq(store_create(path, &s), INCA_OK);
    const int64_t n = 100003, small = 1000;
    float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) a[i] = (float)i * 0.25f - 7.f, b[i] = -a[i];
    store_wtx_t *w;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array_whole(w, "big", DT_F32, a, n), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array_whole(w, "small", DT_F32, a, small), INCA_OK);
    store_meta_t m;
    memset(&m, 0, sizeof m);
    m.nodes = 1;
    ck_assert_int_eq(store_wtx_put_meta(w, &m), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    char f1[300], f2[300], fp[4500];
    ck_assert_int_eq(side_files(path, f1, sizeof f1), 1);
    ck_assert_int_eq(store_side_bytes(s), n * 4);
    store_array_info_t info;
    ck_assert_int_eq(store_array_info(s, "big", &info), INCA_OK);
    ck_assert_int_eq(info.in_file, 1);
    ck_assert_int_eq(info.nchunks, 1);
    ck_assert_int_eq(store_array_info(s, "small", &info), INCA_OK);
    ck_assert_int_eq(info.in_file, 0);
    const void *p, *old;
    int64_t cnt;
    ck_assert_int_eq(store_array_view(s, "big", DT_F32, &old, &cnt), INCA_OK);
    ck_assert_int_eq(cnt, n);
    ck_assert_mem_eq(old, a, sizeof(float) * (size_t)n);
    float v[3];
    ck_assert_int_eq(store_array_read(s, "big", 50000, 3, v), INCA_OK);
    ck_assert(v[0] == a[50000] && v[2] == a[50002]);
    void *all = NULL;   /* loads whole, though larger than data.mdb holds */
    ck_assert_int_eq(store_array_load(s, "big", DT_F32, &all, &cnt), INCA_OK);
    ck_assert_int_eq(cnt, n);
    ck_assert_mem_eq(all, a, sizeof(float) * (size_t)n);
    inca_free(all);
    store_verify_stats_t st;
    ck_assert_int_eq(store_verify(s, &st), INCA_OK);
    ck_assert_int_eq(st.files, 1);
    ck_assert_int_eq(st.stray_files, 0);
    ck_assert_int_eq(st.chunks, 1);   /* small's one chunk; big has none in LMDB */
    /* replaced: a new file, the old one gone, the old view still readable until close */
    put_whole_commit(s, "big", b, n);
    ck_assert_int_eq(side_files(path, f2, sizeof f2), 1);
    ck_assert_str_ne(f1, f2);
    ck_assert_mem_eq(old, a, sizeof(float) * (size_t)n);
    ck_assert_int_eq(store_array_view(s, "big", DT_F32, &p, &cnt), INCA_OK);
    ck_assert_mem_eq(p, b, sizeof(float) * (size_t)n);
    store_close(&s);
    /* read-only, another handle: the same bytes; a flipped byte fails naming the file */
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(store_array_view(s, "big", DT_F32, &p, &cnt), INCA_OK);
    ck_assert_mem_eq(p, b, sizeof(float) * (size_t)n);
    store_close(&s);
    snprintf(fp, sizeof fp, "%s/%s", path, f2);
    flip_byte(fp, 123457);
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(store_array_view(s, "big", DT_F32, &p, &cnt), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), f2));
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "checksum"));
    ck_assert_int_eq(store_verify(s, &st), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), f2));
    store_close(&s);
    flip_byte(fp, 123457);
    /* strays (an interrupted writer's) are counted by verify and swept by the next write */
    char stray[4200];
    snprintf(stray, sizeof stray, "%s/side-0123456789abcdef.bin", path);
    fclose(fopen(stray, "wb"));
    snprintf(stray, sizeof stray, "%s/side-0123456789abcdee.bin.tmp", path);
    fclose(fopen(stray, "wb"));
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(store_verify(s, &st), INCA_OK);
    ck_assert_int_eq(st.stray_files, 2);
    ck_assert_int_eq(st.files, 1);
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_record(w, "note", "x", 1), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    ck_assert_int_eq(side_files(path, NULL, 0), 1);
    ck_assert_int_eq(store_verify(s, &st), INCA_OK);
    ck_assert_int_eq(st.stray_files, 0);
    /* deleted with its descriptor */
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_del_array(w, "big"), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    ck_assert_int_eq(side_files(path, NULL, 0), 0);
    ck_assert_int_eq(store_has_array(s, "big"), 0);
    ck_assert_int_eq(store_side_bytes(s), 0);
    /* a missing file is named */
    put_whole_commit(s, "big", a, n);
    ck_assert_int_eq(side_files(path, f1, sizeof f1), 1);
    snprintf(fp, sizeof fp, "%s/%s", path, f1);
    ck_assert_int_eq(unlink(fp), 0);
    store_close(&s);
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(store_array_view(s, "big", DT_F32, &p, &cnt), INCA_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), f1));
    /* a write that fails (the file-size limit) leaves the array as it was and no file */
    put_whole_commit(s, "big", a, n);
    ck_assert_int_eq(side_files(path, f1, sizeof f1), 1);
    /* an empty array asked for a side file is an ordinary record (a file of 0 bytes cannot be
     * mapped, and its descriptor was refused when read) */
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array_side(w, "none", DT_F32, NULL, 0), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    ck_assert_int_eq(store_array_view(s, "none", DT_F32, &p, &cnt), INCA_OK);
    ck_assert_int_eq(cnt, 0);
    ck_assert_int_eq(side_files(path, f2, sizeof f2), 1);
    ck_assert_str_eq(f1, f2);
    store_verify_stats_t vr;
    ck_assert_msg(store_verify(s, &vr) == INCA_OK, "%s", inca_errmsg());
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {200000, 200000};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array_whole(w, "big", DT_F32, b, n), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_EIO);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "file-size limit"));
    ck_assert_int_eq(side_files(path, f2, sizeof f2), 1);
    ck_assert_str_eq(f1, f2);
    ck_assert_int_eq(store_array_view(s, "big", DT_F32, &p, &cnt), INCA_OK);
    ck_assert_mem_eq(p, a, sizeof(float) * (size_t)n);
    store_close(&s);
    store_set_whole_max_bytes(0);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_meta_checks) {
    store_t *s;
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), path));
    ck_assert_int_eq(store_create(path, &s), INCA_OK);
    store_wtx_t *w;
    store_meta_t m;
    memset(&m, 0, sizeof m);
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    m.magic = 0x12345678;   /* a record of the right size with a wrong magic */
    ck_assert_int_eq(store_wtx_put_record(w, "meta", &m, sizeof m), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_close(&s);
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "magic"));
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_EINVAL);
    /* wrong version */
    ck_assert_int_eq(store_create(dir, &s), INCA_EINVAL);   /* exists */
    tu_rmrf(path);
    ck_assert_int_eq(store_create(path, &s), INCA_OK);
    m.magic = STORE_MAGIC;
    m.version = STORE_VERSION + 1;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_record(w, "meta", &m, sizeof m), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_close(&s);
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "version"));
}
END_TEST

static void small_dataset(dataset_t *d) {
    dataset_init(d);
    static const int64_t s[] = {0, 1, 2, 3}, t[] = {1, 2, 3, 0};
    ck_assert_int_eq(csr_from_edges(&d->adj, 5, s, t, 4, CSR_SYMMETRIZE), INCA_OK);
    d->n = 5;
    d->f = 3;
    d->c = 2;
    d->x = inca_malloc(sizeof(float) * 15);
    d->y = inca_malloc(sizeof(int32_t) * 5);
    for (int i = 0; i < 15; i++) d->x[i] = (float)i;
    for (int i = 0; i < 5; i++) d->y[i] = i == 4 ? -1 : i % 2;
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {
        d->split[sp] = inca_malloc(sizeof(int64_t));
        d->split[sp][0] = sp;
        d->split_n[sp] = 1;
    }
    snprintf(d->source, sizeof d->source, "test");
}

START_TEST(test_dataset_roundtrip) {
    dataset_t d, e;
    small_dataset(&d);
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_OK);
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_EINVAL);   /* exists, no --force */
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--force"));
    ck_assert_int_eq(dataset_save(&d, path, 1), INCA_OK);
    ck_assert_int_eq(dataset_load(path, &e), INCA_OK);
    ck_assert_int_eq(e.n, 5);
    ck_assert_int_eq(e.adj.nnz, 8);
    ck_assert_int_eq(dataset_labeled(&e), 4);
    for (int i = 0; i < 15; i++) ck_assert(e.x[i] == d.x[i]);
    for (int i = 0; i <= 5; i++) ck_assert_int_eq(e.adj.rowptr[i], d.adj.rowptr[i]);
    for (int sp = 0; sp < SPLIT_COUNT; sp++) ck_assert_int_eq(e.split[sp][0], sp);
    ck_assert_str_eq(e.source, "test");
    store_t *s;
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(store_meta(s)->labeled, 4);
    ck_assert_int_eq(store_meta(s)->edges, 8);
    store_close(&s);
    dataset_free(&e);
    /* a failing save (bad split id) leaves nothing behind and keeps the old store */
    d.split[0][0] = 99;
    ck_assert_int_eq(dataset_save(&d, path, 1), INCA_EINVAL);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "ls '%s' | wc -l", dir);
    char *out = NULL;
    tu_sh(cmd, &out, NULL);
    ck_assert_int_eq(atoi(out), 1);
    free(out);
    ck_assert_int_eq(dataset_load(path, &e), INCA_OK);
    dataset_free(&e);
    d.split[0][0] = 0;
    /* --force replaces a store, never a folder or file that is not one (a dataset's source
     * folder given as --out by mistake): refused, naming it, and left as it was */
    char notes[2000], plain[2000], *txt = NULL;
    snprintf(notes, sizeof notes, "%s/src", dir);
    snprintf(cmd, sizeof cmd, "mkdir '%s' && echo precious > '%s/notes.txt' && echo x > '%s/plain'", notes, notes, dir);
    ck_assert_int_eq(tu_sh(cmd, NULL, NULL), 0);
    snprintf(plain, sizeof plain, "%s/plain", dir);
    ck_assert_int_eq(dataset_save(&d, notes, 1), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "is not an inca store"), "%s", inca_errmsg());
    ck_assert_int_eq(dataset_save(&d, plain, 1), INCA_EINVAL);
    snprintf(cmd, sizeof cmd, "cat '%s/notes.txt' '%s'", notes, plain);
    tu_sh(cmd, &txt, NULL);
    ck_assert_str_eq(txt, "precious\nx\n");
    free(txt);
    ck_assert_int_eq(dataset_out_replaceable(path), INCA_OK);   /* a store */
    /* a folder holding a data.mdb among other files (a project), and another program's LMDB: the
     * whole folder went (session 37's review), now refused and left as it was */
    char proj[2100], foreign[2100];
    snprintf(proj, sizeof proj, "%s/proj", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/src' && echo code > '%s/src/main.c' && echo x > '%s/data.mdb'", proj, proj, proj);
    ck_assert_int_eq(tu_sh(cmd, NULL, NULL), 0);
    ck_assert_int_eq(dataset_save(&d, proj, 1), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "is not an inca store") && strstr(inca_errmsg(), "holds 'src'"), "%s", inca_errmsg());
    snprintf(foreign, sizeof foreign, "%s/foreign", dir);
    ck_assert_int_eq(mkdir(foreign, 0755), 0);
    MDB_env *env;
    MDB_txn *t;
    MDB_dbi dbi;
    ck_assert_int_eq(mdb_env_create(&env), 0);
    ck_assert_int_eq(mdb_env_set_maxdbs(env, 2), 0);
    ck_assert_int_eq(mdb_env_open(env, foreign, 0, 0644), 0);
    ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &t), 0);
    ck_assert_int_eq(mdb_dbi_open(t, "images", MDB_CREATE, &dbi), 0);
    MDB_val k = {3, "key"}, v = {5, "value"};
    ck_assert_int_eq(mdb_put(t, dbi, &k, &v, 0), 0);
    ck_assert_int_eq(mdb_txn_commit(t), 0);
    mdb_env_close(env);
    ck_assert_int_eq(dataset_save(&d, foreign, 1), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "another program's LMDB"), "%s", inca_errmsg());
    snprintf(cmd, sizeof cmd, "cat '%s/src/main.c' && test -s '%s/data.mdb'", proj, foreign);
    tu_sh(cmd, &txt, NULL);
    ck_assert_str_eq(txt, "code\n");
    free(txt);
    /* allocation failures anywhere in save/load: clean errors, no temp dirs, no leaks */
    for (int k = 1; k < 40; k++) {
        char p2[4200];
        snprintf(p2, sizeof p2, "%s/inj%d", dir, k);
        inca_alloc_fail_after(k);
        int rc = dataset_save(&d, p2, 0);
        inca_alloc_fail_after(0);
        if (rc != INCA_OK) {
            ck_assert_int_eq(rc, INCA_ENOMEM);
            ck_assert(!tu_exists(p2));
            continue;
        }
        inca_alloc_fail_after(k);
        rc = dataset_load(p2, &e);
        inca_alloc_fail_after(0);
        if (rc == INCA_OK) dataset_free(&e);
        else ck_assert_int_eq(rc, INCA_ENOMEM);
    }
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -c tmp", dir);
    tu_sh(cmd, &out, NULL);
    ck_assert_int_eq(atoi(out), 0);
    free(out);
    dataset_free(&d);
}
END_TEST

/* Named splits: saved beside the default, listed, loaded on request, chosen with
 * dataset_split_apply (by name, "stored", random:), refused by name with the list; bad names
 * and duplicates refused at save; allocation failures clean. */
static void add_named(dataset_t *d, const char *name, int64_t first) {
    dataset_named_split_t *ns = &d->more[d->n_more++];
    memset(ns, 0, sizeof *ns);
    snprintf(ns->name, sizeof ns->name, "%s", name);
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {   /* train {first}, valid {first+1, first+2}, test {} */
        ns->n[sp] = sp == 0 ? 1 : sp == 1 ? 2 : 0;
        ns->ids[sp] = inca_malloc(sizeof(int64_t) * 2);
        for (int64_t i = 0; i < ns->n[sp]; i++) ns->ids[sp][i] = first + sp + i;
    }
}

START_TEST(test_named_splits) {
    dataset_t d, e;
    small_dataset(&d);
    snprintf(d.split_name, sizeof d.split_name, "public");
    d.more = inca_calloc(2, sizeof *d.more);
    add_named(&d, "time", 0);
    add_named(&d, "random_20_30_seed0", 2);
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_OK);
    /* a plain load reads the default and its name only */
    ck_assert_int_eq(dataset_load(path, &e), INCA_OK);
    ck_assert_str_eq(e.split_name, "public");
    ck_assert_int_eq(e.n_more, 0);
    ck_assert_ptr_null(e.more);
    /* by name: "time" replaces the default's ids */
    ck_assert_int_eq(dataset_split_apply(path, "time", 0, &e), INCA_OK);
    ck_assert_str_eq(e.split_name, "time");
    ck_assert_int_eq(e.split_n[0], 1);
    ck_assert_int_eq(e.split[0][0], 0);
    ck_assert_int_eq(e.split_n[1], 2);
    ck_assert_int_eq(e.split[1][0], 1);
    ck_assert_int_eq(e.split[1][1], 2);
    ck_assert_int_eq(e.split_n[2], 0);
    ck_assert_int_eq(dataset_split_apply(path, "random_20_30_seed0", 0, &e), INCA_OK);
    ck_assert_int_eq(e.split[0][0], 2);
    ck_assert_int_eq(e.split[1][1], 4);
    /* unknown: refused listing what there is, d unchanged */
    ck_assert_int_eq(dataset_split_apply(path, "nope", 0, &e), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "--split nope: no such split; the store holds public (the default), "
                         "random_20_30_seed0, time"), "%s", inca_errmsg());
    ck_assert_int_eq(e.split[0][0], 2);
    dataset_free(&e);
    /* "stored" and the default's own name keep the default; random: draws one */
    ck_assert_int_eq(dataset_load(path, &e), INCA_OK);
    ck_assert_int_eq(dataset_split_apply(path, "stored", 0, &e), INCA_OK);
    ck_assert_int_eq(dataset_split_apply(path, "public", 0, &e), INCA_OK);
    for (int sp = 0; sp < SPLIT_COUNT; sp++) ck_assert_int_eq(e.split[sp][0], sp);
    ck_assert_int_eq(dataset_split_apply(path, "random:0.5,0.25,0.25:3", 0, &e), INCA_OK);
    ck_assert_str_eq(e.split_name, "");
    ck_assert_int_eq(e.split_n[0] + e.split_n[1] + e.split_n[2], 4);   /* the labelled nodes */
    dataset_free(&e);
    /* everything, and swapping one in keeps the old default as a named split */
    ck_assert_int_eq(dataset_load_ex(path, DATASET_ALL_SPLITS, &e), INCA_OK);
    ck_assert_int_eq(e.n_more, 2);
    ck_assert_str_eq(e.more[0].name, "random_20_30_seed0");   /* key order */
    ck_assert_str_eq(e.more[1].name, "time");
    ck_assert_int_eq(dataset_split_apply(path, "time", 0, &e), INCA_OK);
    ck_assert_str_eq(e.split_name, "time");
    ck_assert_str_eq(e.more[1].name, "public");
    ck_assert_int_eq(e.split_n[1], 2);   /* time's valid {1, 2} is the default's now */
    ck_assert_int_eq(e.split[1][1], 2);
    ck_assert_int_eq(e.more[1].n[1], 1);   /* and public's valid {1} a named split */
    ck_assert_int_eq(e.more[1].ids[1][0], 1);
    ck_assert_int_eq(e.more[1].n[2], 1);
    ck_assert_int_eq(e.more[1].ids[2][0], 2);
    dataset_free(&e);
    /* an unnamed default swapped out has no name to be kept by: it goes */
    ck_assert_int_eq(dataset_load_ex(path, DATASET_ALL_SPLITS, &e), INCA_OK);
    e.split_name[0] = '\0';
    ck_assert_int_eq(dataset_split_apply(path, "time", 0, &e), INCA_OK);
    ck_assert_int_eq(e.n_more, 1);
    ck_assert_str_eq(e.more[0].name, "random_20_30_seed0");
    ck_assert_str_eq(e.split_name, "time");
    dataset_free(&e);
    /* the list, default first */
    store_t *s;
    dataset_split_info_t *v;
    int k;
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(dataset_splits_list(s, &v, &k), INCA_OK);
    ck_assert_int_eq(k, 3);
    ck_assert(v[0].is_default && !v[1].is_default);
    ck_assert_str_eq(v[0].name, "public");
    ck_assert_int_eq(v[2].n[1], 2);
    inca_free(v);
    store_close(&s);
    /* refused at save: a bad name, a duplicate, an id out of range; nothing written */
    char p2[4200];
    snprintf(p2, sizeof p2, "%s/bad", dir);
    snprintf(d.more[1].name, sizeof d.more[1].name, "a/b");
    ck_assert_int_eq(dataset_save(&d, p2, 0), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "split name 'a/b'"), "%s", inca_errmsg());
    snprintf(d.more[1].name, sizeof d.more[1].name, "stored");
    ck_assert_int_eq(dataset_save(&d, p2, 0), INCA_EINVAL);
    snprintf(d.more[1].name, sizeof d.more[1].name, "time");
    ck_assert_int_eq(dataset_save(&d, p2, 0), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "split 'time' is named twice"), "%s", inca_errmsg());
    snprintf(d.more[1].name, sizeof d.more[1].name, "r");
    d.more[1].ids[1][1] = 5;
    ck_assert_int_eq(dataset_save(&d, p2, 0), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "split 'r': valid holds id 5 outside [0, 5)"), "%s", inca_errmsg());
    ck_assert(!tu_exists(p2));
    d.more[1].ids[1][1] = 4;
    /* allocation failures in the save and in every way of loading them */
    for (int i = 1; i < 60; i++) {
        snprintf(p2, sizeof p2, "%s/inj%d", dir, i);
        inca_alloc_fail_after(i);
        int rc = dataset_save(&d, p2, 0);
        inca_alloc_fail_after(0);
        if (rc != INCA_OK) {
            ck_assert_int_eq(rc, INCA_ENOMEM);
            ck_assert(!tu_exists(p2));
            continue;
        }
        inca_alloc_fail_after(i);
        rc = dataset_load_ex(p2, DATASET_ALL_SPLITS, &e);
        inca_alloc_fail_after(0);
        if (rc == INCA_OK) dataset_free(&e);
        else ck_assert_int_eq(rc, INCA_ENOMEM);
        ck_assert_int_eq(dataset_load(p2, &e), INCA_OK);
        inca_alloc_fail_after(i);
        rc = dataset_split_apply(p2, "time", 0, &e);
        inca_alloc_fail_after(0);
        if (rc == INCA_OK) ck_assert_str_eq(e.split_name, "time");
        else {
            ck_assert_int_eq(rc, INCA_ENOMEM);
            ck_assert_str_eq(e.split_name, "public");
        }
        dataset_free(&e);
    }
    dataset_free(&d);
}
END_TEST

/* A chunk no array descriptor names (a stray key, as a damaged or interrupted writer would leave
 * one): every array's checksums still hold, but store_verify counts the arrays database's
 * entries against the descriptors' chunks and refuses the store, naming both counts. The key is
 * written straight into LMDB's "arrays" database, as inca never would. */
START_TEST(test_verify_counts_stray_chunks) {
    dataset_t d;
    small_dataset(&d);
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_OK);
    dataset_free(&d);
    store_t *s;
    store_verify_stats_t st;
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_msg(store_verify(s, &st) == INCA_OK, "%s", inca_errmsg());
    const int64_t chunks = st.chunks;
    ck_assert_int_gt(chunks, 0);
    store_close(&s);
    MDB_env *e = NULL;
    MDB_txn *t = NULL;
    MDB_dbi dbi;
    ck_assert_int_eq(mdb_env_create(&e), 0);
    mdb_env_set_maxdbs(e, 4);
    ck_assert_int_eq(mdb_env_open(e, path, 0, 0644), 0);
    ck_assert_int_eq(mdb_txn_begin(e, NULL, 0, &t), 0);
    ck_assert_int_eq(mdb_dbi_open(t, "arrays", 0, &dbi), 0);
    unsigned char key[16] = "gone";   /* "gone", NUL, then chunk 0 as 8 big-endian bytes */
    char val[16] = "stray chunk";
    MDB_val k = {.mv_size = 13, .mv_data = key}, v = {.mv_size = sizeof val, .mv_data = val};
    ck_assert_int_eq(mdb_put(t, dbi, &k, &v, 0), 0);
    ck_assert_int_eq(mdb_txn_commit(t), 0);
    mdb_env_close(e);
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(store_verify(s, &st), INCA_EINVAL);
    char want[160];
    snprintf(want, sizeof want, "the arrays database holds %lld chunks, the array descriptors account for %lld",
             (long long)chunks + 1, (long long)chunks);
    ck_assert_msg(strstr(inca_errmsg(), want), "%s", inca_errmsg());
    store_close(&s);
}
END_TEST

/* What dataset_save refuses, each by hand on the 5-node dataset: a split id equal to the node
 * count, an adjacency of 5 x 6, a feature width without features, a named split named as the
 * default or holding a negative count; the split names' alphabet and lengths (1..63 of
 * A-Z a-z 0-9 . _ -). */
START_TEST(test_dataset_save_refusals) {
    dataset_t d;
    small_dataset(&d);
    d.split[2][0] = 5;
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "test split holds id 5 outside [0, 5)"), "%s", inca_errmsg());
    d.split[2][0] = 2;
    d.adj.n_cols = 6;
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "adjacency is 5x6 for 5 nodes"), "%s", inca_errmsg());
    d.adj.n_cols = 5;
    float *x = d.x;
    d.x = NULL;
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "3 features but no feature array"), "%s", inca_errmsg());
    d.x = x;
    ck_assert(!tu_exists(path));
    char name[80];
    memset(name, 'a', sizeof name);
    name[63] = '\0';
    ck_assert_int_eq(dataset_split_name_check(name), INCA_OK);
    name[63] = 'a';
    name[64] = '\0';
    ck_assert_int_eq(dataset_split_name_check(name), INCA_EINVAL);
    ck_assert_int_eq(dataset_split_name_check("v1.0-b_2"), INCA_OK);
    ck_assert_int_eq(dataset_split_name_check(""), INCA_EINVAL);
    ck_assert_int_eq(dataset_split_name_check("a b"), INCA_EINVAL);
    snprintf(d.split_name, sizeof d.split_name, "public");
    d.more = inca_calloc(1, sizeof *d.more);
    add_named(&d, "public", 0);
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "split 'public' is named twice"), "%s", inca_errmsg());
    snprintf(d.more[0].name, sizeof d.more[0].name, "neg");
    d.more[0].n[2] = -1;
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "split 'neg': test has no ids"), "%s", inca_errmsg());
    d.more[0].n[2] = 0;
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_OK);
    inca_err_clear();
    dataset_free(&d);
}
END_TEST

/* A save removes <path>.tmp-<pid> of a process that has ended (a killed save's leftovers) and
 * keeps those of a live process and names with text after the pid. */
START_TEST(test_save_removes_stale_tmp) {
    pid_t kid = fork();
    if (kid == 0) _exit(0);
    ck_assert_int_gt(kid, 0);
    ck_assert_int_eq(waitpid(kid, NULL, 0), kid);   /* reaped: the pid names no process now */
    char dead[4200], live[4200], odd[4200];
    snprintf(dead, sizeof dead, "%s.tmp-%ld", path, (long)kid);
    snprintf(live, sizeof live, "%s.tmp-%ld", path, (long)getppid());
    snprintf(odd, sizeof odd, "%s.tmp-%ldx", path, (long)kid);
    ck_assert(mkdir(dead, 0755) == 0 && mkdir(live, 0755) == 0 && mkdir(odd, 0755) == 0);
    dataset_t d;
    small_dataset(&d);
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_OK);
    ck_assert(!tu_exists(dead));
    ck_assert(tu_exists(live) && tu_exists(odd));
    dataset_free(&d);
}
END_TEST

/* dataset_check_csr by hand: a rowptr that dips at entry 1 or at its last entry (n), one that
 * ends short of nnz, a column id equal to n_cols in the last slot; each names the entry. */
START_TEST(test_check_csr_by_hand) {
    int64_t rp[3] = {0, -1, 2};
    int32_t col[2] = {0, 1};
    csr_t g = {.n_rows = 2, .n_cols = 2, .nnz = 2, .rowptr = rp, .col = col};
    ck_assert_int_eq(dataset_check_csr("S", "rowptr", "col", &g), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "entry 1 = -1 is below entry 0 = 0"), "%s", inca_errmsg());
    rp[1] = 3;
    ck_assert_int_eq(dataset_check_csr("S", "rowptr", "col", &g), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "entry 2 = 2 is below entry 1 = 3"), "%s", inca_errmsg());
    rp[1] = 1;
    rp[2] = 1;
    ck_assert_int_eq(dataset_check_csr("S", "rowptr", "col", &g), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "entry 2 = 1, expected 2 (the length of 'col')"), "%s", inca_errmsg());
    rp[2] = 2;
    col[1] = 2;
    ck_assert_int_eq(dataset_check_csr("S", "rowptr", "col", &g), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "array 'col' entry 1 = 2 is outside [0, 2)"), "%s", inca_errmsg());
    col[1] = 1;
    ck_assert_int_eq(dataset_check_csr("S", "rowptr", "col", &g), INCA_OK);
}
END_TEST

/* a store of n nodes whose graph arrays are written as given (meta from a saved dataset) */
static void graph_store(const void *rp, store_dtype_t rt, int64_t nrp, const int32_t *col, int64_t ncol) {
    dataset_t d;
    small_dataset(&d);
    csr_free(&d.adj);
    ck_assert_int_eq(dataset_save(&d, path, 1), INCA_OK);
    dataset_free(&d);
    store_t *s;
    store_wtx_t *w;
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, "rowptr", rt, rp, nrp), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, "col", DT_I32, col, ncol), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_close(&s);
}

/* The stored graph read alone, refused by hand: an empty rowptr, rows from -1, a rowptr whose
 * slice ends past 'col', a rowptr stored as i32. */
START_TEST(test_load_adj_refusals) {
    const int64_t rp[3] = {0, 1, 5};
    const int32_t rp32[3] = {0, 1, 2}, col[2] = {0, 1};
    store_t *s;
    csr_t g;
    int64_t n;
    graph_store(rp, DT_I64, 0, col, 2);
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(dataset_load_adj(s, &g), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "array 'rowptr' is empty"), "%s", inca_errmsg());
    store_close(&s);
    graph_store(rp, DT_I64, 3, col, 2);
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(dataset_load_adj_rows(s, -1, 1, &n, &g), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "rows [-1, 1) of a graph of 2 nodes"), "%s", inca_errmsg());
    ck_assert_int_eq(dataset_load_adj_rows(s, 0, 2, &n, &g), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "entries 0..2 = 0..5, outside 'col' (2)"), "%s", inca_errmsg());
    ck_assert_int_eq(dataset_load_adj_rows(s, 0, 1, &n, &g), INCA_OK);   /* row 0 alone is whole */
    ck_assert(g.n_rows == 1 && g.nnz == 1 && g.col[0] == 0);
    csr_free(&g);
    store_close(&s);
    graph_store(rp32, DT_I32, 3, col, 2);
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(dataset_load_adj_rows(s, 0, 1, &n, &g), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "are not i64 / i32"), "%s", inca_errmsg());
    store_close(&s);
    inca_err_clear();
}
END_TEST

/* a record put into the store at path (len 0: deleted) */
static void put_record(const char *key, const void *v, size_t len) {
    store_t *s;
    store_wtx_t *w;
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    if (len) ck_assert_int_eq(store_wtx_put_record(w, key, v, len), INCA_OK);
    else ck_assert_int_eq(store_wtx_del_record(w, key), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_close(&s);
}

/* Split records that do not hold what they say, each refused naming the record: counts of 8
 * bytes, a negative test count, a default's name with a NUL in it or of 64 bytes (63 read). */
START_TEST(test_split_records_checked) {
    dataset_t d, e;
    small_dataset(&d);
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_OK);
    dataset_free(&d);
    store_t *s;
    dataset_split_info_t *v = NULL;
    int k = 0;
    const int64_t cnt[3] = {1, 1, -1};
    for (int c = 0; c < 2; c++) {
        put_record("split:x", cnt, c == 0 ? 8 : sizeof cnt);
        ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
        ck_assert_int_eq(dataset_splits_list(s, &v, &k), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), c == 0 ? "record 'split:x' is not a split's counts" : "record 'split:x' holds a negative count"),
                      "%s", inca_errmsg());
        store_close(&s);
    }
    put_record("split:x", NULL, 0);
    char nm[64];
    memset(nm, 'n', sizeof nm);
    nm[1] = '\0';
    put_record("split-name", nm, 3);
    ck_assert_int_eq(dataset_load(path, &e), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "record 'split-name' is not a split name"), "%s", inca_errmsg());
    nm[1] = 'n';
    put_record("split-name", nm, 64);
    ck_assert_int_eq(dataset_load(path, &e), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "record 'split-name' is not a split name"), "%s", inca_errmsg());
    put_record("split-name", nm, 63);
    ck_assert_int_eq(dataset_load(path, &e), INCA_OK);
    ck_assert_int_eq(strlen(e.split_name), 63);
    dataset_free(&e);
    inca_err_clear();
}
END_TEST

/* the default splits of a and b hold the same ids */
static int same_split(const dataset_t *a, const dataset_t *b) {
    for (int sp = 0; sp < SPLIT_COUNT; sp++)
        if (a->split_n[sp] != b->split_n[sp] ||
            (a->split_n[sp] && memcmp(a->split[sp], b->split[sp], sizeof(int64_t) * (size_t)a->split_n[sp])))
            return 0;
    return 1;
}

/* --split random: draws with the spec's seed when it names one, else the run's (split_random
 * called here with that seed is the expectation); with every split loaded a named default is kept
 * among the named ones, its ids intact. "public" keeps the one split of a store whose default has
 * no name, and is refused where that store holds named splits too. */
START_TEST(test_split_apply_seeds_and_public) {
    dataset_t d, e, f;
    const double fr[3] = {0.5, 0.25, 0.25};
    small_dataset(&d);
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_OK);   /* unnamed default, no named splits */
    ck_assert_int_eq(dataset_load(path, &e), INCA_OK);
    ck_assert_int_eq(dataset_split_apply(path, "public", 0, &e), INCA_OK);
    for (int sp = 0; sp < SPLIT_COUNT; sp++) ck_assert(e.split_n[sp] == 1 && e.split[sp][0] == sp);
    /* {the seed the split is drawn with, the other one}: the spec's 3 over the run's 5; the
     * run's 5 where the spec names none (0 would be a spec's seed left unset) */
    const uint64_t seeds[2][2] = {{3, 5}, {5, 0}};
    for (int c = 0; c < 2; c++) {
        ck_assert_int_eq(dataset_load(path, &f), INCA_OK);
        ck_assert_int_eq(split_random(&e, fr, seeds[c][1]), INCA_OK);
        ck_assert_int_eq(split_random(&f, fr, seeds[c][0]), INCA_OK);
        ck_assert_msg(!same_split(&e, &f), "seeds %d and %d draw one split: pick others", (int)seeds[c][0], (int)seeds[c][1]);
        ck_assert_int_eq(dataset_split_apply(path, c == 0 ? "random:0.5,0.25,0.25:3" : "random:0.5,0.25,0.25", 5, &e), INCA_OK);
        ck_assert(same_split(&e, &f));
        dataset_free(&f);
    }
    dataset_free(&e);
    snprintf(d.split_name, sizeof d.split_name, "public");
    d.more = inca_calloc(1, sizeof *d.more);
    add_named(&d, "time", 0);
    ck_assert_int_eq(dataset_save(&d, path, 1), INCA_OK);
    ck_assert_int_eq(dataset_load_ex(path, DATASET_ALL_SPLITS, &e), INCA_OK);
    ck_assert_int_eq(dataset_split_apply(path, "random:0.5,0.25,0.25:3", 0, &e), INCA_OK);
    ck_assert_int_eq(e.n_more, 2);
    ck_assert_str_eq(e.more[1].name, "public");
    for (int sp = 0; sp < SPLIT_COUNT; sp++) ck_assert(e.more[1].n[sp] == 1 && e.more[1].ids[sp][0] == sp);
    dataset_free(&e);
    d.split_name[0] = '\0';
    ck_assert_int_eq(dataset_save(&d, path, 1), INCA_OK);   /* unnamed default beside "time" */
    ck_assert_int_eq(dataset_load(path, &e), INCA_OK);
    ck_assert_int_eq(dataset_split_apply(path, "public", 0, &e), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "--split public: no such split"), "%s", inca_errmsg());
    dataset_free(&e);
    inca_err_clear();
    dataset_free(&d);
}
END_TEST

/* an array put into the store at path */
static void put_array(const char *name, store_dtype_t dt, const void *v, int64_t n) {
    store_t *s;
    store_wtx_t *w;
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_array(w, name, dt, v, n), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_close(&s);
}

/* DATASET_NO_X | DATASET_NO_GRAPH: the widths and counts of the store, no arrays: f = 3 with x
 * NULL, adj n x n with the stored 8 edges and no rowptr; a store without a graph declares none
 * (adj as a plain load leaves it); labels of one class kept. */
START_TEST(test_load_declared) {
    dataset_t d, e;
    small_dataset(&d);
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_OK);
    ck_assert_int_eq(dataset_load_ex(path, DATASET_NO_X | DATASET_NO_GRAPH, &e), INCA_OK);
    ck_assert(e.f == 3 && e.x == NULL && e.n == 5);
    ck_assert(e.adj.rowptr == NULL && e.adj.nnz == 8 && e.adj.n_rows == 5 && e.adj.n_cols == 5);
    ck_assert(e.y && e.y[1] == 1 && e.y[4] == -1);
    dataset_free(&e);
    csr_free(&d.adj);
    for (int i = 0; i < 4; i++) d.y[i] = 0;   /* one class: the labels are kept all the same */
    d.c = 1;
    ck_assert_int_eq(dataset_save(&d, path, 1), INCA_OK);
    ck_assert_int_eq(dataset_load_ex(path, DATASET_NO_X | DATASET_NO_GRAPH, &e), INCA_OK);
    ck_assert(!dataset_has_graph(&e) && e.adj.n_rows == 0 && e.adj.nnz == 0);
    ck_assert(e.c == 1 && e.y && dataset_labeled(&e) == 4 && e.y[4] == -1);
    dataset_free(&e);
    dataset_free(&d);
}
END_TEST

/* Arrays whose lengths disagree with the meta record, and a meta record whose feature dtype is
 * not float32, each refused naming both counts: rowptr of 5 entries for 5 nodes, x of 14 values
 * for 5 x 3, y of 4 entries. */
START_TEST(test_load_counts_checked) {
    dataset_t d, e;
    small_dataset(&d);
    const char *want[3] = {"graph arrays disagree with meta (rowptr 5, col 8, edges 8)",
                           "feature array has 14 values, expected 15", "label array has 4 entries, expected 5"};
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(dataset_save(&d, path, 1), INCA_OK);
        if (k == 0) put_array("rowptr", DT_I64, d.adj.rowptr, 5);
        if (k == 1) put_array("x", DT_F32, d.x, 14);
        if (k == 2) put_array("y", DT_I32, d.y, 4);
        ck_assert_int_eq(dataset_load(path, &e), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), want[k]), "%s", inca_errmsg());
    }
    ck_assert_int_eq(dataset_save(&d, path, 1), INCA_OK);
    store_t *s;
    store_wtx_t *w;
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    store_meta_t m = *store_meta(s);
    m.feat_dtype = DT_BF16;
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_meta(w, &m), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_close(&s);
    ck_assert_int_eq(dataset_load(path, &e), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "meta record says feature dtype 5, expected 1"), "%s", inca_errmsg());
    inca_err_clear();
    dataset_free(&d);
}
END_TEST

int main(void) {
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("store");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_arrays_chunks_records);
    tcase_add_test(tc, test_map_growth);
    tcase_add_test(tc, test_commit_split);
    tcase_add_test(tc, test_small_views_aligned);
    tcase_add_test(tc, test_whole_views);
    tcase_add_test(tc, test_side_files);
    tcase_add_test(tc, test_meta_checks);
    tcase_add_test(tc, test_dataset_roundtrip);
    tcase_add_test(tc, test_named_splits);
    tcase_add_test(tc, test_verify_counts_stray_chunks);
    tcase_add_test(tc, test_dataset_save_refusals);
    tcase_add_test(tc, test_save_removes_stale_tmp);
    tcase_add_test(tc, test_check_csr_by_hand);
    tcase_add_test(tc, test_load_adj_refusals);
    tcase_add_test(tc, test_split_records_checked);
    tcase_add_test(tc, test_split_apply_seeds_and_public);
    tcase_add_test(tc, test_load_declared);
    tcase_add_test(tc, test_load_counts_checked);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
