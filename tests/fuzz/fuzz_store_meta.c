/* libFuzzer target: what inca believes from a store's "meta" database: the meta record, the
 * array descriptors ("array:<name>") and the partition manifests ("part:<name>"). Each input
 * section (fuzz_util.h) is one record "key\0value" written over a copy of a small valid store
 * (made once: 6-node graph, features, labels, splits, one partitioning); the store is then read
 * as `inca train` and `inca info` read it (dataset_load, partition_load of every manifest).
 * LMDB's own pages are not fuzzed (LMDB trusts its file). Any input must load or be refused
 * with a status; crashes, leaks and sanitizer reports are findings. Seeds: with
 * INCA_FUZZ_SEED_OUT=DIR set, initialisation writes the valid records of the template as inputs. */
#include "fuzz_util.h"
#include "core/alloc.h"
#include "core/status.h"
#include "graph/partition.h"
#include "loaders/partition_store.h"
#include "loaders/dataset.h"
#include "loaders/store.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NREC 8
static unsigned char *g_mdb;   /* the template's data.mdb */
static size_t g_mdb_len;

static void check(int rc, const char *what) {
    if (rc) {
        fprintf(stderr, "fuzz_store_meta: %s: %s\n", what, inca_errmsg());
        abort();
    }
}

static void slurp(const char *path, unsigned char **buf, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); abort(); }
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc(*len);
    if (!*buf || fread(*buf, 1, *len, f) != *len) abort();
    fclose(f);
}

/* One seed input: the given records of the template, "key\0value" joined by FUZZ_SEP. */
static void seed_write(const char *dir, const char *file, store_t *s, const char *const *keys, int nk) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); abort(); }
    for (int i = 0; i < nk; i++) {
        const void *p;
        size_t len;
        check(store_record_get(s, keys[i], &p, &len), keys[i]);
        if (i) fputs(FUZZ_SEP, f);
        fwrite(keys[i], 1, strlen(keys[i]) + 1, f);
        fwrite(p, 1, len, f);
    }
    fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    static int64_t rowptr[7] = {0, 1, 3, 5, 7, 9, 10}, tr[2] = {0, 1}, va[2] = {2, 3}, te[2] = {4, 5};
    static int32_t col[10] = {1, 0, 2, 1, 3, 2, 4, 3, 5, 4}, y[6] = {0, 1, 0, 1, 0, -1}, part[6] = {0, 0, 0, 1, 1, 1};
    static float x[12] = {1, 0, 0, 1, 0.5f, 0.5f, 1, 1, 0, 0, 2, 3};
    dataset_t d;
    dataset_init(&d);
    d.n = 6;
    d.f = 2;
    d.c = 2;
    d.adj = (csr_t){.n_rows = 6, .n_cols = 6, .nnz = 10, .rowptr = rowptr, .col = col};
    d.x = x;
    d.y = y;
    d.split[0] = tr; d.split[1] = va; d.split[2] = te;
    d.split_n[0] = d.split_n[1] = d.split_n[2] = 2;
    snprintf(d.source, sizeof d.source, "fuzz template");
    char tpl[1024];
    snprintf(tpl, sizeof tpl, "%s", fuzz_path("template"));
    check(dataset_save(&d, tpl, 1), "template store");
    store_t *s;
    check(store_open(tpl, STORE_RDWR, &s), "template open");
    partition_t p;
    check(partition_from_parts(6, 2, part, &p), "partition");
    snprintf(p.man.name, sizeof p.man.name, "metis-2-s0");
    snprintf(p.man.method, sizeof p.man.method, "metis");
    check(store_partition_save(s, &p), "partition save");
    partition_free(&p);
    const char *seed = getenv("INCA_FUZZ_SEED_OUT");
    if (seed) {
        static const char *const all[] = {"meta", "array:rowptr", "array:col", "array:x", "array:y",
                                          "array:split/train", "part:metis-2-s0", "array:part/metis-2-s0/bounds"};
        for (int i = 0; i < (int)(sizeof all / sizeof all[0]); i++) {
            char name[64];
            snprintf(name, sizeof name, "seed-%d", i);
            seed_write(seed, name, s, all + i, 1);
        }
        seed_write(seed, "seed-all", s, all, (int)(sizeof all / sizeof all[0]));
    }
    store_close(&s);
    char mdb[1024];
    snprintf(mdb, sizeof mdb, "%s/data.mdb", tpl);
    slurp(mdb, &g_mdb, &g_mdb_len);
    return 0;
}

/* Manifest names, collected first: store_record_each holds the store's lock during the walk. */
typedef struct { char names[NREC + 1][512]; int n; } parts_t;
static int collect_part(void *ctx, const char *key, const void *val, size_t len) {
    (void)val; (void)len;
    parts_t *p = ctx;
    snprintf(p->names[p->n++], sizeof p->names[0], "%s", key + 5);
    return p->n == NREC + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write("s/data.mdb", g_mdb, g_mdb_len);
    store_t *s;
    check(store_open(fuzz_path("s"), STORE_RDWR, &s), "copy of the template");
    store_wtx_t *w;
    check(store_write_begin(s, &w), "write");
    /* sections are "key\0value"; a section without a NUL or with an empty key is skipped */
    const size_t sl = strlen(FUZZ_SEP);
    size_t at = 0;
    for (int k = 0; k < NREC && at <= size; k++) {
        const uint8_t *hit = size - at >= sl ? memmem(data + at, size - at, FUZZ_SEP, sl) : NULL;
        size_t end = hit ? (size_t)(hit - data) : size;
        const uint8_t *nul = memchr(data + at, 0, end - at);
        if (nul && nul > data + at && (size_t)(nul - data - at) <= 500)
            check(store_wtx_put_record(w, (const char *)data + at, nul + 1, (size_t)(data + end - nul - 1)), "put");
        if (!hit) break;
        at = end + sl;
    }
    check(store_write_commit(&w), "commit");
    store_close(&s);

    const char *path = fuzz_path("s");
    dataset_t d;
    if (dataset_load(path, &d) == INCA_OK) dataset_free(&d);
    inca_err_clear();
    if (store_open(path, STORE_RDONLY, &s) == INCA_OK) {
        static parts_t parts;
        parts.n = 0;
        store_record_each(s, "part:", collect_part, &parts);
        for (int i = 0; i < parts.n; i++) {
            partition_t p;
            if (store_partition_load(s, parts.names[i], &p) == INCA_OK) partition_free(&p);
            inca_err_clear();
        }
        store_close(&s);
    }
    inca_err_clear();
    return 0;
}
