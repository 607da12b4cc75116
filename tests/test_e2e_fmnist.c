/* `inca ingest --format idx` end to end on Fashion-MNIST ($INCA_FMNIST, default
 * /usr/share/datasets/fashion-mnist from Debian's dataset-fashion-mnist), checked against a
 * direct zlib read of the IDX bytes. Skipped (exit 77) when absent. */
#include "testutil.h"
#include "loaders/dataset.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static char *tmp;

static void setup(void) { tmp = tu_mkdtemp(); ck_assert_ptr_nonnull(tmp); }
static void teardown(void) { tu_rmrf(tmp); free(tmp); tmp = NULL; }

/* Bytes [off, off+n) of a gzipped file, read directly with zlib. */
static void gz_bytes(const char *path, long off, unsigned char *buf, int n) {
    gzFile g = gzopen(path, "rb");
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(gzseek(g, off, SEEK_SET), off);
    ck_assert_int_eq(gzread(g, buf, (unsigned)n), n);
    gzclose(g);
}

START_TEST(test_fashion_mnist) {
    const char *src = tu_fmnist();
    char store[4096];
    const char *j = tu_ingest_ok(tmp, "idx", src, store, sizeof store);
    tu_check_counts(j, 70000, 0, 784, 10, 70000);
    tu_check_splits(j, 60000, 0, 10000);
    dataset_t d;
    ck_assert_int_eq(dataset_load(store, &d), 0);
    unsigned char px[2 * 784], lab[100];
    char p[4096];
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", src);
    gz_bytes(p, 16, px, 2 * 784);                       /* first two training images */
    long bad = 0;
    for (int i = 0; i < 2 * 784; i++) bad += d.x[i] != (float)px[i] / 255.0f;
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte.gz", src);
    gz_bytes(p, 16, px, 784);                           /* first test image = example 60000 */
    for (int i = 0; i < 784; i++) bad += d.x[60000L * 784 + i] != (float)px[i] / 255.0f;
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte.gz", src);
    gz_bytes(p, 8, lab, 100);
    for (int i = 0; i < 100; i++) bad += d.y[i] != lab[i];
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte.gz", src);
    gz_bytes(p, 8, lab, 100);
    for (int i = 0; i < 100; i++) bad += d.y[60000 + i] != lab[i];
    ck_assert_int_eq(bad, 0);   /* pixels and labels equal the IDX bytes */
    ck_assert_int_eq(d.split[SPLIT_TRAIN][59999], 59999);
    ck_assert_int_eq(d.split[SPLIT_TEST][0], 60000);
    float mx = 0;
    for (int64_t i = 0; i < d.n * d.f; i++) { bad += !(d.x[i] >= 0.0f); if (d.x[i] > mx) mx = d.x[i]; }
    ck_assert_int_eq(bad, 0);
    ck_assert(mx == 1.0f);
    dataset_free(&d);
}
END_TEST

int main(void) {
    tu_require_or_skip(tu_fmnist());
    Suite *s = suite_create("e2e_fmnist");
    TCase *tc = tcase_create("e2e_fmnist");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_fashion_mnist);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
