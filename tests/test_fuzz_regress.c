/* Regressions for what the libFuzzer targets (tests/fuzz/) found outside the ingest formats: each
 * tests/data/bad/store-<what> file is one meta-database record ("key\0value", as fuzz_store_meta
 * writes it) that crashed or exhausted memory when inca read it. Written over a fresh Cora store,
 * `inca train` on that store must exit 2 with one stderr line naming the store and the array or
 * record.
 * (Ingest-format regressions live in the ingest catalogue, tests/test_e2e_ingest.c.) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "testutil.h"
#include "core/status.h"
#include "loaders/store.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Entry -> text its error must contain. */
static const struct { const char *entry, *needle; } expect[] = {
    {"store-desc-huge-count", "array 'x' declares"},
    {"store-desc-overflow", "descriptor of array 'x' is corrupt"},
    {"store-meta-huge-nodes", "meta record has inconsistent counts"},
};
#define NEXPECT (sizeof expect / sizeof expect[0])

static void record_put(const char *store, const char *file) {
    FILE *f = fopen(file, "rb");
    ck_assert_ptr_nonnull(f);
    char buf[4096];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const char *nul = memchr(buf, 0, len);
    ck_assert_msg(nul && nul > buf, "%s: expected 'key\\0value'", file);
    store_t *s;
    store_wtx_t *w;
    ck_assert_int_eq(store_open(store, STORE_RDWR, &s), INCA_OK);
    ck_assert_int_eq(store_write_begin(s, &w), INCA_OK);
    ck_assert_int_eq(store_wtx_put_record(w, buf, nul + 1, (size_t)(buf + len - nul - 1)), INCA_OK);
    ck_assert_int_eq(store_write_commit(&w), INCA_OK);
    store_close(&s);
}

START_TEST(test_store_records) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/data/bad", tu_src());
    DIR *dh = opendir(dir);
    ck_assert_ptr_nonnull(dh);
    struct dirent *de;
    size_t seen = 0;
    while ((de = readdir(dh))) {
        if (strncmp(de->d_name, "store-", 6) != 0) continue;
        size_t e = 0;
        while (e < NEXPECT && strcmp(expect[e].entry, de->d_name) != 0) e++;
        ck_assert_msg(e < NEXPECT, "%s: no expectation", de->d_name);
        seen++;
        char *tmp = tu_mkdtemp(), *args = NULL, *err = NULL, file[8192];
        snprintf(file, sizeof file, "%s/%s", dir, de->d_name);
        ck_assert_int_ge(asprintf(&args, "ingest --format ogb '%s/data/cora' --out '%s/s'", tu_src(), tmp), 0);
        ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
        free(args);
        ck_assert_int_ge(asprintf(&args, "%s/s", tmp), 0);
        record_put(args, file);
        free(args);
        ck_assert_int_ge(asprintf(&args, "train '%s/s' --model mlp --epochs 1", tmp), 0);
        int rc = tu_inca(args, NULL, &err);
        ck_assert_msg(rc == 2, "%s: exit %d, expected 2 (stderr: %s)", de->d_name, rc, err);
        size_t len = strlen(err);
        ck_assert_msg(len > 0 && strchr(err, '\n') == err + len - 1, "%s: expected one stderr line: %s", de->d_name, err);
        ck_assert_msg(strstr(err, expect[e].needle) && strstr(err, "/s:"), "%s: stderr lacks '%s' or the store: %s",
                      de->d_name, expect[e].needle, err);
        tu_rmrf(tmp);
        free(tmp); free(args); free(err);
    }
    closedir(dh);
    ck_assert_int_eq(seen, NEXPECT);   /* every expectation has its file */
}
END_TEST

int main(void) {
    char cora[4096];
    snprintf(cora, sizeof cora, "%s/data/cora", tu_src());
    if (!tu_exists(tu_bin()) || !tu_exists(cora)) return 77;
    Suite *s = suite_create("fuzz_regress");
    TCase *tc = tcase_create("store");
    tcase_add_test(tc, test_store_records);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
