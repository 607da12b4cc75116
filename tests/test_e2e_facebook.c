/* `inca ingest` end to end on the shared Facebook page-page graph ($INCA_SHARED/datasets/facebook,
 * OGB layout), checked against the numbers in its README. Skipped (exit 77) when absent. */
#include "testutil.h"
#include "loaders/dataset.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *tmp;

static void setup(void) { tmp = tu_mkdtemp(); ck_assert_ptr_nonnull(tmp); }
static void teardown(void) { tu_rmrf(tmp); free(tmp); tmp = NULL; }

START_TEST(test_facebook) {
    char src[4096], store[4096];
    snprintf(src, sizeof src, "%s/datasets/facebook", tu_shared());
    const char *j = tu_ingest_ok(tmp, "ogb", src, store, sizeof store);
    tu_check_counts(j, 22470, 341646, 4714, 4, 22470);
    tu_check_splits(j, 80, 120, 22270);
    static const long classes[4] = {6495, 6880, 5768, 3327};
    tu_check_loaded(store, 314583, classes, 4);
}
END_TEST

int main(void) {
    char src[4096];
    snprintf(src, sizeof src, "%s/datasets/facebook", tu_shared());
    tu_require_or_skip(src);
    Suite *s = suite_create("e2e_facebook");
    TCase *tc = tcase_create("e2e_facebook");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_facebook);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
