/* Tests of memory/: the arena (accounting, labels, zeroed and aligned blocks, failure
 * injection) and history tables (fp32 exact round trips, bf16 round-to-nearest-even against
 * hand-computed bit patterns, pull/push by ids and ranges, copy), and spilling tables to
 * file-backed maps past a budget. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/status.h"
#include "memory/arena.h"
#include "core/memstat.h"
#include "memory/history.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

static float from_bits(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

START_TEST(arena_accounting) {
    mem_arena_t *a = NULL;
    ck_assert_int_eq(mem_arena_create(&a), INCA_OK);
    ck_assert_int_ge(mem_arena_numa_nodes(a), 1);
    unsigned char *p = mem_arena_alloc(a, 1000, "first");
    float *q = mem_arena_alloc(a, 4096, "second");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(q);
    for (int i = 0; i < 1000; i++) ck_assert_int_eq(p[i], 0);
    for (int i = 0; i < 1024; i++) ck_assert(q[i] == 0.f);
    ck_assert_int_eq((uintptr_t)q % 64, 0);
    ck_assert_uint_eq(mem_arena_bytes(a), 5096);
    ck_assert_int_eq(mem_arena_count(a), 2);
    ck_assert_str_eq(mem_arena_label(a, 1), "second");
    ck_assert_uint_eq(mem_arena_block_bytes(a, 0), 1000);
    memset(p, 7, 1000);   /* writable */
    mem_arena_destroy(&a);
    ck_assert_ptr_null(a);
    mem_arena_destroy(&a);   /* NULL-safe */
}
END_TEST

START_TEST(arena_alloc_failures) {
    for (long i = 1; i < 40; i++) {
        mem_arena_t *a = NULL;
        inca_alloc_fail_after(i);
        int rc = mem_arena_create(&a);
        int ok = rc == INCA_OK;
        for (int k = 0; k < 20 && ok; k++) ok = mem_arena_alloc(a, 100, "x") != NULL;
        inca_alloc_fail_after(0);
        if (rc != INCA_OK) ck_assert_int_eq(rc, INCA_ENOMEM);
        mem_arena_destroy(&a);
    }
}
END_TEST

START_TEST(bf16_rounding) {
    ck_assert_uint_eq(hist_f32_to_bf16(1.0f), 0x3F80);
    ck_assert_uint_eq(hist_f32_to_bf16(-2.5f), 0xC020);
    /* exactly halfway: ties to even */
    ck_assert_uint_eq(hist_f32_to_bf16(from_bits(0x3F808000u)), 0x3F80);
    ck_assert_uint_eq(hist_f32_to_bf16(from_bits(0x3F818000u)), 0x3F82);
    /* just above / below halfway */
    ck_assert_uint_eq(hist_f32_to_bf16(from_bits(0x3F808001u)), 0x3F81);
    ck_assert_uint_eq(hist_f32_to_bf16(from_bits(0x3F807FFFu)), 0x3F80);
    /* overflow to infinity, infinity stays, NaN stays NaN */
    ck_assert_uint_eq(hist_f32_to_bf16(from_bits(0x7F7FFFFFu)), 0x7F80);
    ck_assert_uint_eq(hist_f32_to_bf16(INFINITY), 0x7F80);
    ck_assert(isnan(hist_bf16_to_f32(hist_f32_to_bf16(NAN))));
    ck_assert(isnan(hist_bf16_to_f32(hist_f32_to_bf16(from_bits(0x7F800001u)))));
    ck_assert(hist_bf16_to_f32(0x3F81) == 1.0078125f);
    ck_assert(hist_bf16_to_f32(0xC020) == -2.5f);
}
END_TEST

START_TEST(tables) {
    mem_arena_t *a = NULL;
    ck_assert_int_eq(mem_arena_create(&a), INCA_OK);
    hist_t h32, h16, c32;
    ck_assert_int_eq(hist_init(&h32, a, 50, 3, HIST_F32, "h32"), INCA_OK);
    ck_assert_int_eq(hist_init(&h16, a, 50, 3, HIST_BF16, "h16"), INCA_OK);
    ck_assert_int_eq(hist_init(&c32, a, 50, 3, HIST_F32, "c32"), INCA_OK);
    ck_assert_int_eq(hist_bytes(&h32), 600);
    ck_assert_int_eq(hist_bytes(&h16), 300);
    ck_assert_uint_eq(mem_arena_bytes(a), 1500);
    ck_assert_ptr_null(hist_f32(&h16));
    float in[30], out[30];
    for (int i = 0; i < 30; i++) in[i] = 1.0f + (float)i / 3.0f + 1e-3f * (float)i;
    hist_push_range(&h32, 10, 10, in);
    hist_push_range(&h16, 10, 10, in);
    hist_pull_range(&h32, 10, 10, out);
    ck_assert_mem_eq(in, out, sizeof in);
    hist_pull_range(&h16, 10, 10, out);
    for (int i = 0; i < 30; i++) ck_assert(out[i] == hist_bf16_to_f32(hist_f32_to_bf16(in[i])));
    /* untouched rows stay zero; pull by ids */
    int64_t ids[3] = {19, 0, 12};
    hist_pull(&h32, ids, 3, out);
    ck_assert(out[0] == in[27] && out[1] == in[28] && out[2] == in[29]);
    ck_assert(out[3] == 0.f && out[4] == 0.f && out[5] == 0.f);
    ck_assert(out[6] == in[6] && out[8] == in[8]);
    /* scatter by ids, then copy the table */
    float rows[6] = {-1, -2, -3, -4, -5, -6};
    int64_t where[2] = {49, 3};
    hist_push(&h32, where, 2, rows);
    hist_copy(&c32, &h32);
    hist_pull_range(&c32, 49, 1, out);
    ck_assert(out[0] == -1 && out[2] == -3);
    hist_pull_range(&c32, 3, 1, out);
    ck_assert(out[0] == -4 && out[2] == -6);
    /* residual in - rows: fp32 exact, bf16 against the rounded stored values */
    float res[6], a6[6] = {1, 2, 3, 4, 5, 6};
    int64_t two[2] = {12, 49};
    hist_sub(&h32, two, 2, a6, res);
    ck_assert(res[0] == 1 - in[6] && res[2] == 3 - in[8]);
    ck_assert(res[3] == 4 - (-1.f) && res[5] == 6 - (-3.f));
    hist_sub(&h16, two, 2, a6, res);
    ck_assert(res[1] == 2 - hist_bf16_to_f32(hist_f32_to_bf16(in[7])));
    ck_assert(res[4] == 5.f);   /* row 49 of h16 was never written */
    /* fused residual + push: the residual against the old rows, then the rows hold push */
    float pv[6] = {0.5f, 0.25f, 0.125f, -7, -8, 1.0f / 3.0f};
    hist_sub_push(&h32, two, 2, a6, res, pv);
    ck_assert(res[0] == 1 - in[6] && res[2] == 3 - in[8] && res[3] == 4 - (-1.f));
    hist_pull(&h32, two, 2, out);
    ck_assert_mem_eq(out, pv, sizeof pv);
    hist_sub_push(&h16, two, 2, a6, res, pv);
    ck_assert(res[1] == 2 - hist_bf16_to_f32(hist_f32_to_bf16(in[7])) && res[4] == 5.f);
    hist_pull(&h16, two, 2, out);
    ck_assert(out[0] == 0.5f && out[3] == -7 && out[5] == hist_bf16_to_f32(hist_f32_to_bf16(1.0f / 3.0f)));
    /* a negative shape is refused as such (not allocated as a wrapped size), naming the table */
    hist_t bad;
    ck_assert_int_eq(hist_init(&bad, a, 10, -1, HIST_F32, "neg_f"), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "neg_f: bad shape 10 x -1"), "%s", inca_errmsg());
    ck_assert_int_eq(hist_init(&bad, a, 0, -3, HIST_BF16, "neg_f0"), INCA_EINVAL);
    ck_assert_int_eq(hist_init(&bad, a, -1, 3, HIST_F32, "neg_n"), INCA_EINVAL);
    inca_err_clear();
    ck_assert_uint_eq(mem_arena_bytes(a), 1500);   /* nothing allocated for them */
    hist_dtype_t t;
    ck_assert_int_eq(hist_dtype_parse("bf16", &t), INCA_OK);
    ck_assert_int_eq(t, HIST_BF16);
    ck_assert_int_eq(hist_dtype_parse("fp16", &t), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--history-dtype"));
    mem_arena_destroy(&a);
}
END_TEST

/* The map line of address p in /proc/self/maps (into line[cap]); 0 when not found. */
static int maps_line(const void *p, char *line, size_t cap) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    int found = 0;
    while (!found && fgets(line, (int)cap, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (unsigned long)p >= lo && (unsigned long)p < hi) found = 1;
    }
    fclose(f);
    return found;
}

/* The spill budget counts every spillable block kept in memory (arena.h): two tables of 600
 * bytes under a budget of 1000 each fit alone, together they do not, so the second goes to a
 * file; a non-spillable block never counts; a third that fits in what is left stays. */
START_TEST(spill_budget_accumulates) {
    char dir[] = "/tmp/inca-spill-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    mem_arena_t *a = NULL;
    ck_assert_int_eq(mem_arena_create(&a), INCA_OK);
    ck_assert_int_eq(mem_arena_set_spill(a, 1000, dir), INCA_OK);
    ck_assert_ptr_nonnull(mem_arena_alloc(a, 5000, "scratch"));
    ck_assert_ptr_nonnull(mem_arena_alloc_spill(a, 600, "t1"));
    ck_assert_ptr_nonnull(mem_arena_alloc_spill(a, 600, "t2"));
    ck_assert_ptr_nonnull(mem_arena_alloc_spill(a, 400, "t3"));
    ck_assert_int_eq(mem_arena_block_spilled(a, 0), 0);
    ck_assert_int_eq(mem_arena_block_spilled(a, 1), 0);
    ck_assert_int_eq(mem_arena_block_spilled(a, 2), 1);   /* 600 + 600 > 1000 */
    ck_assert_int_eq(mem_arena_block_spilled(a, 3), 0);   /* 600 + 400 = 1000: fits */
    ck_assert_uint_eq(mem_arena_spilled_bytes(a), 600);
    ck_assert_ptr_nonnull(mem_arena_alloc_spill(a, 1, "t4"));   /* the budget is full: even a byte spills */
    ck_assert_int_eq(mem_arena_block_spilled(a, 4), 1);
    mem_arena_destroy(&a);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(spill_to_file) {
    char dir[] = "/tmp/inca-spill-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    mem_arena_t *a = NULL;
    ck_assert_int_eq(mem_arena_create(&a), INCA_OK);
    ck_assert_int_eq(mem_arena_set_spill(a, 1000, dir), INCA_OK);
    hist_t h1, h2;
    float *scratch = mem_arena_alloc(a, 4000, "scratch");   /* not spillable: never counts */
    ck_assert_ptr_nonnull(scratch);
    ck_assert_int_eq(hist_init(&h1, a, 50, 3, HIST_F32, "h1"), INCA_OK);       /* 600: fits */
    ck_assert_int_eq(hist_init(&h2, a, 1000, 100, HIST_F32, "h2"), INCA_OK);   /* 400000: spills */
    ck_assert_int_eq(mem_arena_block_spilled(a, 0), 0);
    ck_assert_int_eq(mem_arena_block_spilled(a, 1), 0);
    ck_assert_int_eq(mem_arena_block_spilled(a, 2), 1);
    ck_assert_uint_eq(mem_arena_spilled_bytes(a), 400000);
    ck_assert_uint_eq(mem_arena_bytes(a), 4000 + 600 + 400000);
    /* zeroed, writable, and really a (deleted) file in dir, not anonymous memory */
    float *d = hist_f32(&h2), row[100];
    for (int64_t i = 0; i < 1000 * 100; i++) ck_assert(d[i] == 0.f);
    for (int j = 0; j < 100; j++) row[j] = (float)j - 0.5f;
    hist_push_range(&h2, 999, 1, row);
    float back[100];
    hist_pull_range(&h2, 999, 1, back);
    ck_assert_mem_eq(row, back, sizeof row);
    char line[1024];
    ck_assert(maps_line(d, line, sizeof line));
    ck_assert_ptr_nonnull(strstr(line, dir));
    ck_assert_ptr_nonnull(strstr(line, "(deleted)"));
    ck_assert(maps_line(hist_f32(&h1), line, sizeof line));
    ck_assert_ptr_null(strstr(line, dir));
    /* nothing is left in the folder, before or after destroy */
    ck_assert_int_eq(rmdir(dir), 0);
    mem_arena_destroy(&a);
    /* a folder that does not exist: the block fails with a message naming it */
    ck_assert_int_eq(mem_arena_create(&a), INCA_OK);
    ck_assert_int_eq(mem_arena_set_spill(a, 0, "/nonexistent/inca"), INCA_OK);
    ck_assert_int_eq(hist_init(&h1, a, 10, 10, HIST_F32, "h1"), INCA_ENOMEM);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "/nonexistent/inca"));
    ck_assert_int_eq(mem_arena_count(a), 0);
    mem_arena_destroy(&a);
    /* a disk that cannot hold the table: refused when it is made (its blocks reserved), with the
     * remedy, rather than a SIGBUS at the first write to a page without a block */
    ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/inca-spill-test-XXXXXX")));
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {100000, 100000};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    ck_assert_int_eq(mem_arena_create(&a), INCA_OK);
    ck_assert_int_eq(mem_arena_set_spill(a, 0, dir), INCA_OK);
    ck_assert_int_ne(hist_init(&h2, a, 1000, 100, HIST_F32, "h2"), INCA_OK);
    ck_assert_msg(strstr(inca_errmsg(), "--memory-budget") && strstr(inca_errmsg(), dir), "%s", inca_errmsg());
    mem_arena_destroy(&a);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* What the arena does by default: spill files go to the working folder when no folder is given;
 * an empty spilled table is a one-byte block (a zero-length file cannot be mapped); a block of
 * 1 MiB or more is an anonymous map, committed on first touch (a rank holds the rows it uses),
 * so 64 MiB allocated raise the anonymous resident memory by less than 8 MiB until touched. */
START_TEST(arena_defaults) {
    char dir[] = "/tmp/inca-spill-test-XXXXXX", cwd[4096], line[1024], want[4200];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(dir), 0);
    mem_arena_t *a = NULL;
    ck_assert_int_eq(mem_arena_create(&a), INCA_OK);
    ck_assert_int_eq(mem_arena_set_spill(a, 0, NULL), INCA_OK);
    void *p = mem_arena_alloc_spill(a, 4096, "t");
    ck_assert_ptr_nonnull(p);
    ck_assert(maps_line(p, line, sizeof line));
    snprintf(want, sizeof want, "%s/.inca-spill-", dir);
    ck_assert_msg(strstr(line, want) != NULL, "spill map %s not in %s", line, dir);
    ck_assert_ptr_nonnull(mem_arena_alloc_spill(a, 0, "empty"));
    ck_assert_int_eq(mem_arena_block_spilled(a, 1), 1);
    ck_assert_uint_eq(mem_arena_block_bytes(a, 1), 1);
    mem_arena_destroy(&a);
    ck_assert_int_eq(chdir(cwd), 0);
    ck_assert_int_eq(rmdir(dir), 0);
    ck_assert_int_eq(mem_arena_create(&a), INCA_OK);
    int64_t before = 0, after = 0;
    ck_assert_int_eq(memstat_anon_now(&before), INCA_OK);
    char *big = mem_arena_alloc(a, (size_t)64 << 20, "big");
    ck_assert_ptr_nonnull(big);
    ck_assert_int_eq(memstat_anon_now(&after), INCA_OK);
    ck_assert_msg(after - before < ((int64_t)8 << 20), "64 MiB allocated: anonymous memory %lld -> %lld bytes",
                  (long long)before, (long long)after);
    ck_assert(big[0] == 0 && big[((size_t)64 << 20) - 1] == 0);
    mem_arena_destroy(&a);
}
END_TEST

int main(void) {
    Suite *s = suite_create("memory");
    TCase *t = tcase_create("core");
    tcase_add_test(t, arena_accounting);
    tcase_add_test(t, arena_alloc_failures);
    tcase_add_test(t, bf16_rounding);
    tcase_add_test(t, tables);
    tcase_add_test(t, spill_to_file);
    tcase_add_test(t, spill_budget_accumulates);
    tcase_add_test(t, arena_defaults);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
