/* The arithmetic of bench/floor.c (inca bench epoch --breakdown) on made-up profiles and rates,
 * against values computed by hand: the median of an odd and an even count, each kind's floor
 * (bytes streamed at the copy rate, SpMM's gathers at their width's rate, GEMM's flops at the
 * GEMM rate), and the report's sums. No timing is measured or asserted. (bench/ is not in the
 * library: this target compiles bench/floor.c itself.) */
#include "bench/floor.h"
#include "core/json.h"
#include "core/status.h"
#include "tests/testutil.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(median_odd_and_even) {
    double odd[5] = {9, 1, 7, 3, 5}, even[4] = {4, 1, 8, 2}, one[1] = {6};
    ck_assert_double_eq(bench_median(odd, 5), 5.0);
    ck_assert_double_eq(bench_median(even, 4), 3.0);   /* (2 + 4) / 2 */
    ck_assert_double_eq(bench_median(one, 1), 6.0);
}
END_TEST

/* Rates: copy 100 B/s, GEMM 1000 flop/s, gathers of width 4 at 10 B/s and width 16 at 20 B/s.
 * SpMM: 300 streamed + 50 gathered at width 4 + 80 at width 16 -> 3 + 5 + 4 = 12 s; GEMM: 5000
 * flops -> 5 s (its streamed 200 B not added: the flops bound it); elementwise 700 B -> 7 s;
 * copies 100 B -> 1 s; loss and optimiser nothing. */
static void made_up(kern_prof_t *p, bench_floors_t *f) {
    memset(p, 0, sizeof *p);
    memset(f, 0, sizeof *f);
    p->stream_bytes[KPROF_SPMM] = 300;
    p->nwidths = 2;
    p->width[0] = 4;
    p->width[1] = 16;
    p->gather_bytes[0] = 50;
    p->gather_bytes[1] = 80;
    p->flops[KPROF_GEMM] = 5000;
    p->stream_bytes[KPROF_GEMM] = 200;
    p->stream_bytes[KPROF_ELEMWISE] = 700;
    p->stream_bytes[KPROF_COPY] = 100;
    for (int k = 0; k < KPROF_NKINDS; k++) { p->seconds[k] = 2.0 * (k + 1); p->calls[k] = 4 * (k + 1); }
    f->copy_bytes_s = 100;
    f->gemm_flops_s = 1000;
    f->nwidths = 2;
    f->width[0] = 4;
    f->width[1] = 16;
    f->gather_bytes_s[0] = 10;
    f->gather_bytes_s[1] = 20;
}

START_TEST(floors_by_hand) {
    kern_prof_t p;
    bench_floors_t f;
    made_up(&p, &f);
    ck_assert_double_eq_tol(bench_floor_s(&p, &f, KPROF_SPMM), 12.0, 1e-12);
    ck_assert_double_eq_tol(bench_floor_s(&p, &f, KPROF_GEMM), 5.0, 1e-12);
    ck_assert_double_eq_tol(bench_floor_s(&p, &f, KPROF_ELEMWISE), 7.0, 1e-12);
    ck_assert_double_eq_tol(bench_floor_s(&p, &f, KPROF_COPY), 1.0, 1e-12);
    ck_assert_double_eq(bench_floor_s(&p, &f, KPROF_LOSS), 0.0);
}
END_TEST

/* The report over 2 epochs with a wall of 100 s: per epoch the floors sum to (12 + 5 + 7 + 1) / 2
 * = 12.5 s, the epoch is 50 s (4x the floors), the ops' seconds (2 + 4 + ... + 12) / 2 = 21 s
 * leave 29 s outside them; SpMM: 4 s and 8 calls over 2 epochs, its ratio 2 s / 6 s. */
START_TEST(report_sums_by_hand) {
    kern_prof_t p;
    bench_floors_t f;
    made_up(&p, &f);
    json_t *j = NULL;
    ck_assert_int_eq(json_new(&j), INCA_OK);
    bench_breakdown_report("made up", &p, &f, 2.0, 100.0, j);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(m);
    json_write(j, m);
    fclose(m);
    json_free(&j);
    cJSON *v = cJSON_Parse(buf);
    ck_assert_msg(v != NULL, "%s", buf);
    const cJSON *b = tu_json_get(v, "breakdown", cJSON_Object);
    ck_assert_double_eq_tol(tu_json_dbl(b, "floor_s"), 12.5, 1e-9);
    ck_assert_double_eq_tol(tu_json_dbl(b, "epoch_s"), 50.0, 1e-9);
    ck_assert_double_eq_tol(tu_json_dbl(b, "epoch_over_floor"), 4.0, 1e-9);
    ck_assert_double_eq_tol(tu_json_dbl(b, "outside_ops_s"), 29.0, 1e-9);
    const cJSON *sp = tu_json_get(b, "spmm", cJSON_Object);
    ck_assert_double_eq_tol(tu_json_dbl(sp, "seconds"), 2.0, 1e-9);
    ck_assert_double_eq_tol(tu_json_dbl(sp, "floor_s"), 6.0, 1e-9);
    ck_assert_double_eq_tol(tu_json_dbl(sp, "ratio"), 2.0 / 6.0, 1e-9);
    ck_assert_double_eq_tol(tu_json_dbl(sp, "calls"), 4.0, 1e-9);
    cJSON_Delete(v);
    free(buf);
}
END_TEST

int main(void) {
    Suite *s = suite_create("bench_floor");
    TCase *t = tcase_create("floor");
    tcase_add_test(t, median_odd_and_even);
    tcase_add_test(t, floors_by_hand);
    tcase_add_test(t, report_sums_by_hand);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
