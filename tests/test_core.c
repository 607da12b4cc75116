/* core/: status messages and exit codes, checked allocation with failure injection, the
 * counter-based hash and the sequential generator, CLI argument parsing and JSON output. */
#include "core/args.h"
#include "core/json.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/memstat.h"
#include "core/comm.h"
#include "core/util.h"
#include <omp.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "testutil.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_status_codes) {
    ck_assert_int_eq(inca_fail(INCA_EINVAL, "%s:%d: expected %s", "f.csv", 7, "a number"), INCA_EINVAL);
    ck_assert_str_eq(inca_errmsg(), "f.csv:7: expected a number");
    inca_fail_ctx(INCA_EINVAL, "ingest %s", "cora");
    ck_assert_str_eq(inca_errmsg(), "ingest cora: f.csv:7: expected a number");
    ck_assert_int_eq(inca_exit_code(INCA_OK), 0);
    ck_assert_int_eq(inca_exit_code(INCA_EINVAL), 2);
    ck_assert_int_eq(inca_exit_code(INCA_ENOTFOUND), 2);
    ck_assert_int_eq(inca_exit_code(INCA_ENOMEM), 1);
    ck_assert_int_eq(inca_exit_code(INCA_EIO), 1);
    /* an agreed verdict of every rank: the mark survives more context, not a new error or a clear */
    ck_assert(!inca_err_collective());
    inca_err_mark_collective();
    inca_fail_ctx(INCA_EINVAL, "partition");
    ck_assert(inca_err_collective());
    inca_fail(INCA_EINVAL, "another");
    ck_assert(!inca_err_collective());
    inca_err_mark_collective();
    inca_err_clear();
    ck_assert(!inca_err_collective());
}
END_TEST

START_TEST(test_alloc_injection) {
    inca_alloc_fail_after(2);
    void *a = inca_malloc(16);
    ck_assert_ptr_nonnull(a);
    void *b = inca_malloc(16);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "out of memory"));
    void *c = inca_calloc(4, 4);   /* injection fires once */
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_null(inca_calloc(SIZE_MAX / 2, 4));   /* overflow is caught */
    inca_free(a);
    inca_free(c);
    void *al = inca_malloc_aligned(100);
    ck_assert_int_eq((int)((uintptr_t)al % 64), 0);
    inca_free(al);
}
END_TEST

/* SplitMix64 and xoshiro256** written out here from their published definitions (Vigna,
 * prng.di.unimi.it), independently of core/rng.c. */
static uint64_t ref_splitmix64(uint64_t x) {
    uint64_t z = x + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t ref_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t ref_xoshiro256ss(uint64_t s[4]) {
    const uint64_t result = ref_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = ref_rotl(s[3], 45);
    return result;
}

START_TEST(test_rng) {
    /* SplitMix64 against its published outputs for state 1234567 (Rosetta Code, "Pseudo-random
     * numbers/Splitmix64"): the k-th output is the mix of state + k gamma */
    static const uint64_t sm_1234567[5] = {6457827717110365317ull, 3203168211198807973ull, 9817491932198370423ull,
                                           4593380528125082431ull, 16408922859458223821ull};
    for (uint64_t k = 0; k < 5; k++) {
        ck_assert_uint_eq(rng_splitmix64(1234567ull + k * 0x9e3779b97f4a7c15ull), sm_1234567[k]);
        ck_assert_uint_eq(ref_splitmix64(1234567ull + k * 0x9e3779b97f4a7c15ull), sm_1234567[k]);
    }
    /* the hash is three SplitMix64 rounds (rng.h): key = sm(sm(seed ^ c) ^ stream), h = sm(key ^ i) */
    for (uint64_t i = 0; i < 4; i++) {
        const uint64_t want = ref_splitmix64(ref_splitmix64(ref_splitmix64(1 ^ 0x5851f42d4c957f2dull) ^ 2) ^ (3 + i));
        ck_assert_uint_eq(rng_hash64(1, 2, 3 + i), want);
    }
    ck_assert_uint_ne(rng_hash64(1, 2, 3), rng_hash64(1, 2, 4));
    ck_assert_uint_ne(rng_hash64(1, 2, 3), rng_hash64(2, 2, 3));
    for (uint64_t i = 0; i < 100; i++) {   /* the split form is the same function */
        ck_assert_uint_eq(rng_hash_at(rng_hash_key(9, 4), i), rng_hash64(9, 4, i));
        ck_assert(rng_hash_at_uniform(rng_hash_key(9, 4), i) == rng_hash_uniform(9, 4, i));
    }
    /* uniform moments: mean 1/2, variance 1/12 */
    double s = 0, s2 = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double u = rng_hash_uniform(7, 0, (uint64_t)i);
        ck_assert(u >= 0 && u < 1);
        s += u;
        s2 += u * u;
    }
    ck_assert_double_eq_tol(s / n, 0.5, 0.005);
    ck_assert_double_eq_tol(s2 / n - (s / n) * (s / n), 1.0 / 12, 0.002);
    /* the sequential generator is xoshiro256** seeded with four SplitMix64 outputs of the seed
     * (state seed + gamma, seed + 2 gamma, ...) */
    rng_t r1;
    rng_seed(&r1, 42);
    uint64_t ref[4];
    for (int i = 0; i < 4; i++) ref[i] = ref_splitmix64(42 + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull);
    for (int i = 0; i < 100; i++) ck_assert_uint_eq(rng_next(&r1), ref_xoshiro256ss(ref));
    /* rng_below is uniform over a small range */
    int cnt[3] = {0};
    for (int i = 0; i < 30000; i++) cnt[rng_below(&r1, 3)]++;
    for (int k = 0; k < 3; k++) ck_assert_int_lt(abs(cnt[k] - 10000), 400);
    /* normal: mean 0, variance 1 */
    s = s2 = 0;
    for (int i = 0; i < n; i++) { double z = rng_normal(&r1); s += z; s2 += z * z; }
    ck_assert_double_eq_tol(s / n, 0.0, 0.01);
    ck_assert_double_eq_tol(s2 / n, 1.0, 0.02);
    /* a shuffle is a permutation */
    int64_t p[100];
    for (int i = 0; i < 100; i++) p[i] = i;
    rng_shuffle_i64(&r1, p, 100);
    int seen[100] = {0}, moved = 0;
    for (int i = 0; i < 100; i++) { seen[p[i]]++; moved += p[i] != i; }
    for (int i = 0; i < 100; i++) ck_assert_int_eq(seen[i], 1);
    ck_assert_int_gt(moved, 50);
}
END_TEST

/* a thread inca starts runs its OpenMP teams at --threads (inca_thread_adopt): OpenMP keeps the
 * team size per thread, and a new pthread began at the machine's core count (GEMM's blocks, and so
 * the bits of --workers ranks, followed the machine) */
static void *bare_main(void *arg) {   /* a new thread's team size before it adopts anything */
    *(int *)arg = omp_get_max_threads();
    return NULL;
}
static void *adopt_main(void *arg) {
    int *got = arg;
    inca_thread_adopt();
    got[0] = omp_get_max_threads();
    int n = 0;
#pragma omp parallel reduction(+ : n)
    n += 1;
    got[1] = n;
    return NULL;
}

START_TEST(test_thread_adopt) {
    const int before = inca_threads();
    pthread_t th;
    int bare = 0, got[2] = {0, 0};
    ck_assert_int_eq(pthread_create(&th, NULL, bare_main, &bare), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    /* a count other than a bare thread's default, so that the check can fail (1 core or
     * OMP_NUM_THREADS=1 make the default 1) */
    const int want = bare == 1 ? 2 : 1;
    inca_set_threads(want);
    ck_assert_int_eq(pthread_create(&th, NULL, adopt_main, got), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_int_eq(got[0], want);
    ck_assert_int_eq(got[1], want);   /* the team a parallel region gets */
    inca_set_threads(before);
}
END_TEST

START_TEST(test_args) {
    static const char *const known[] = {"--out", "--json!", "--seed", "--lr", NULL};
    char *argv[] = {"train", "store", "--out", "x", "--json", "--seed=7", "--lr", "0.5", NULL};
    args_t *a = NULL;
    ck_assert_int_eq(args_parse(8, argv, known, &a), INCA_OK);
    ck_assert_int_eq(args_npos(a), 1);
    ck_assert_str_eq(args_pos(a, 0), "store");
    ck_assert_str_eq(args_str(a, "--out", NULL), "x");
    ck_assert(args_has(a, "--json"));
    int64_t seed;
    double lr;
    ck_assert_int_eq(args_int(a, "--seed", 0, &seed), INCA_OK);
    ck_assert_int_eq(seed, 7);
    ck_assert_int_eq(args_double(a, "--lr", 0, &lr), INCA_OK);
    ck_assert_double_eq(lr, 0.5);
    /* the resolved flags, in the order asked, defaults included; --json left out; a flag asked
     * twice is recorded once, as first resolved */
    static const char *const known2[] = {"--out", "--json!", "--seed", "--lr", "--model", "--layers", "--norm",
                                         "--fast!", NULL};
    args_free(&a);
    ck_assert_int_eq(args_parse(8, argv, known2, &a), INCA_OK);
    int64_t layers;
    ck_assert_int_eq(args_int(a, "--seed", 0, &seed), INCA_OK);
    ck_assert_str_eq(args_str(a, "--model", "gcn"), "gcn");
    ck_assert_int_eq(args_int(a, "--layers", 2, &layers), INCA_OK);
    ck_assert_ptr_null(args_str(a, "--norm", NULL));
    ck_assert(!args_has(a, "--fast"));
    ck_assert(args_has(a, "--json"));
    ck_assert(args_has(a, "--out"));   /* presence of a value flag: not a resolution */
    ck_assert_int_eq(args_double(a, "--lr", 0, &lr), INCA_OK);
    ck_assert_str_eq(args_str(a, "--model", "sage"), "sage");   /* asked again: the record keeps "gcn" */
    json_t *j = NULL;
    ck_assert_int_eq(json_new(&j), INCA_OK);
    ck_assert_int_eq(args_config_json(a, j, NULL), INCA_OK);
    ck_assert_str_eq(json_close(j), "{\"config\":{\"store\":\"store\",\"seed\":7,\"model\":\"gcn\",\"layers\":2,"
                                    "\"norm\":null,\"fast\":false,\"lr\":0.5}}");
    json_free(&j);
    /* an output flag, resolved, is in the config unless the command names it as an output */
    ck_assert_str_eq(args_str(a, "--out", NULL), "x");
    static const char *const outputs[] = {"--out", NULL};
    ck_assert_int_eq(json_new(&j), INCA_OK);
    ck_assert_int_eq(args_config_json(a, j, NULL), INCA_OK);
    ck_assert_ptr_nonnull(strstr(json_close(j), "\"out\":\"x\""));
    json_free(&j);
    ck_assert_int_eq(json_new(&j), INCA_OK);
    ck_assert_int_eq(args_config_json(a, j, outputs), INCA_OK);
    ck_assert_ptr_null(strstr(json_close(j), "\"out\""));
    json_free(&j);
    args_free(&a);
    char *bad[] = {"train", "--sed", "1", NULL};
    ck_assert_int_eq(args_parse(3, bad, known, &a), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--sed"));
    char *badnum[] = {"train", "--seed", "x1", NULL};
    ck_assert_int_eq(args_parse(3, badnum, known, &a), INCA_OK);
    ck_assert_int_eq(args_int(a, "--seed", 0, &seed), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--seed"));
    args_free(&a);
    char *noval[] = {"train", "--out", NULL};
    ck_assert_int_eq(args_parse(2, noval, known, &a), INCA_EINVAL);
    /* failure injection on every allocation of the parser leaks nothing (ASan checks) */
    for (int k = 1; k < 8; k++) {
        inca_alloc_fail_after(k);
        int rc = args_parse(8, argv, known, &a);
        inca_alloc_fail_after(0);
        if (rc == INCA_OK) args_free(&a);
        else ck_assert_int_eq(rc, INCA_ENOMEM);
    }
}
END_TEST

/* Flag values as a user types them: a repeated flag, the last one wins (whether as "--k v" or
 * "--k=v"); negative numbers after a value flag are values, not flags; size suffixes are powers
 * of 1024 (K, M, G, T, either case, an optional B), a fraction of a byte is refused. */
START_TEST(test_args_values) {
    static const char *const known[] = {"--seed", "--lr", "--out", "--json!", NULL};
    char *argv[] = {"train", "--seed", "1", "--lr=0.5", "--seed=2", "--out", "a", "--lr", "-0.25", "--out=b", "--seed", "-3", NULL};
    args_t *a = NULL;
    ck_assert_int_eq(args_parse(12, argv, known, &a), INCA_OK);
    ck_assert_int_eq(args_npos(a), 0);
    int64_t seed = 0;
    double lr = 0;
    ck_assert_int_eq(args_int(a, "--seed", 0, &seed), INCA_OK);
    ck_assert_int_eq(seed, -3);
    ck_assert_int_eq(args_double(a, "--lr", 0, &lr), INCA_OK);
    ck_assert_double_eq(lr, -0.25);
    ck_assert_str_eq(args_str(a, "--out", NULL), "b");
    args_free(&a);
    static const struct { const char *s; int64_t want; } ok[] = {
        {"64K", (int64_t)64 << 10}, {"3k", 3 * 1024}, {"5KB", 5 * 1024}, {"2kb", 2048}, {"7m", (int64_t)7 << 20},
        {"2G", (int64_t)2 << 30}, {"1T", (int64_t)1 << 40}, {"0.5K", 512}, {"1000", 1000}, {"1", 1},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t b = -1;
        ck_assert_msg(args_size_parse("--memory-budget", ok[i].s, &b) == INCA_OK, "%s: %s", ok[i].s, inca_errmsg());
        ck_assert_msg(b == ok[i].want, "%s: %lld bytes, expected %lld", ok[i].s, (long long)b, (long long)ok[i].want);
    }
    static const char *const bad[] = {"0", "0.5", "K", "1KK", "1Kx", "1P", "", "-5M", "1e30G", "nan", "NaNM", "-inf", "inf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t b = -1;
        ck_assert_msg(args_size_parse("--memory-budget", bad[i], &b) == INCA_EINVAL, "'%s' accepted as %lld", bad[i], (long long)b);
    }
    /* an integer is the whole value; a word is one of the words, whole (no prefix of one) */
    static const char *const wk[] = {"--epochs", "--model", NULL};
    static const char *const words[] = {"gcn", "sage", "gcnii"};
    static const char *const ibad[] = {"12abc", "1.5", "3 ", "0x10", "1e3"};
    for (size_t i = 0; i < sizeof ibad / sizeof ibad[0]; i++) {
        char *av[] = {"train", "--epochs", (char *)ibad[i], NULL};
        int64_t e = -1;
        ck_assert_int_eq(args_parse(3, av, wk, &a), INCA_OK);
        ck_assert_msg(args_int(a, "--epochs", 7, &e) == INCA_EINVAL, "'%s' read as %lld", ibad[i], (long long)e);
        ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--epochs: expected an integer"));
        args_free(&a);
    }
    static const struct { const char *s; int want; } wcase[] = {{"gcn", 0}, {"sage", 1}, {"gcnii", 2}, {"gc", -1}, {"s", -1},
                                                              {"gcni", -1}, {"GCN", -1}, {"gcnx", -1}};
    for (size_t i = 0; i < sizeof wcase / sizeof wcase[0]; i++) {
        char *av[] = {"train", "--model", (char *)wcase[i].s, "--epochs", "-4", NULL};
        int m = -1;
        int64_t e = 0;
        ck_assert_int_eq(args_parse(5, av, wk, &a), INCA_OK);
        ck_assert_int_eq(args_int(a, "--epochs", 7, &e), INCA_OK);
        ck_assert_int_eq(e, -4);   /* a negative value parses; its range is the command's to check */
        const int rc = args_word(a, "--model", "gcn", words, 3, "gcn, sage or gcnii", &m);
        if (wcase[i].want < 0) ck_assert_msg(rc == INCA_EINVAL, "'%s' taken as word %d", wcase[i].s, m);
        else {
            ck_assert_int_eq(rc, INCA_OK);
            ck_assert_int_eq(m, wcase[i].want);
        }
        args_free(&a);
    }
}
END_TEST

/* Every control character is escaped (RFC 8259 section 7: U+0000..U+001F must be), with the
 * two-character forms where JSON has one, so every string is valid JSON and parses back. */
START_TEST(test_json_control_chars) {
    for (int c = 1; c < 0x20; c++) {
        char in[4] = {'a', (char)c, 'b', 0}, want[32];
        const char *sh = c == '\b' ? "\\b" : c == '\f' ? "\\f" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
        if (sh) snprintf(want, sizeof want, "{\"k\":\"a%sb\"}", sh);
        else snprintf(want, sizeof want, "{\"k\":\"a\\u%04xb\"}", c);
        json_t *j = NULL;
        ck_assert_int_eq(json_new(&j), INCA_OK);
        json_str(j, "k", in);
        const char *s = json_close(j);
        ck_assert_msg(strcmp(s, want) == 0, "0x%02x: got %s, expected %s", c, s, want);
        cJSON *p = cJSON_Parse(s);
        ck_assert_msg(p && cJSON_IsString(cJSON_GetObjectItem(p, "k")) && !strcmp(cJSON_GetObjectItem(p, "k")->valuestring, in),
                      "0x%02x does not parse back", c);
        cJSON_Delete(p);
        json_free(&j);
    }
    /* 0x7f and space need no escape */
    json_t *j = NULL;
    ck_assert_int_eq(json_new(&j), INCA_OK);
    json_str(j, "k", " \x7f");
    ck_assert_str_eq(json_close(j), "{\"k\":\" \x7f\"}");
    json_free(&j);
}
END_TEST

START_TEST(test_json) {
    json_t *j = NULL;
    ck_assert_int_eq(json_new(&j), INCA_OK);
    json_int(j, "nodes", 2708);
    json_num(j, "acc", 0.815);
    json_str(j, "name", "a\"b\\c\n\t\x01");
    json_num(j, "bad", NAN);
    json_num(j, "inf", -INFINITY);
    json_obj_begin(j, "splits");
    json_int(j, "train", 1);
    json_arr_begin(j, "ids");
    json_int(j, NULL, -3);
    json_bool(j, NULL, 1);
    json_str(j, NULL, NULL);
    json_obj_begin(j, NULL);
    json_obj_end(j);
    json_arr_end(j);
    json_obj_end(j);
    json_arr_begin(j, "empty");
    json_arr_end(j);
    json_null(j, "none");
    const char *once = json_close(j);
    char *first = strdup(once);
    ck_assert_ptr_nonnull(first);
    ck_assert_str_eq(once, "{\"nodes\":2708,\"acc\":0.815,\"name\":\"a\\\"b\\\\c\\n\\t\\u0001\",\"bad\":null,"
                                    "\"inf\":null,\"splits\":{\"train\":1,\"ids\":[-3,true,null,{}]},\"empty\":[],\"none\":null}");
    /* closing twice is harmless: the same text, no second closing brace appended */
    ck_assert_str_eq(json_close(j), first);
    free(first);
    json_free(&j);
}
END_TEST

/* UTF-8 is kept, anything that is not UTF-8 (stray continuation, truncated sequence, overlong
 * form, surrogate, past U+10FFFF) becomes U+FFFD, so the output is always valid JSON. */
START_TEST(test_json_utf8) {
    static const struct { const char *in, *out; } cases[] = {
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
        {"a\x80z", "a\xef\xbf\xbdz"},
        {"\xc3", "\xef\xbf\xbd"},
        {"\xe2\x82z", "\xef\xbf\xbd\xef\xbf\xbdz"},
        {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xff", "\xef\xbf\xbd"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = NULL;
        ck_assert_int_eq(json_new(&j), INCA_OK);
        json_str(j, cases[i].in, cases[i].in);   /* keys are escaped the same way */
        char want[128];
        snprintf(want, sizeof want, "{\"%s\":\"%s\"}", cases[i].out, cases[i].out);
        ck_assert_msg(strcmp(json_close(j), want) == 0, "case %zu: got %s", i, json_close(j));
        json_free(&j);
    }
}
END_TEST

/* Numbers read back as the same double (cJSON's parser and strtod), in the shortest form. */
START_TEST(test_json_numbers_round_trip) {
    rng_t r;
    rng_seed(&r, 5);
    double v[1000];
    int n = 0;
    v[n++] = 0.1; v[n++] = 1.0 / 3; v[n++] = -0.0; v[n++] = 1e300; v[n++] = 5e-324; v[n++] = 2.2250738585072014e-308;
    v[n++] = 9007199254740993.0; v[n++] = 123456789.125;
    while (n < 1000) {
        uint64_t bits = rng_next(&r);
        memcpy(&v[n], &bits, sizeof bits);
        if (isfinite(v[n])) n++;
    }
    json_t *j = NULL;
    ck_assert_int_eq(json_new(&j), INCA_OK);
    json_arr_begin(j, "v");
    for (int i = 0; i < n; i++) json_num(j, NULL, v[i]);
    json_arr_end(j);
    json_int(j, "i64", INT64_MIN);
    const char *text = json_close(j);
    ck_assert_ptr_nonnull(strstr(text, "[0.1,0.3333333333333333,-0,1e+300,"));   /* shortest, not %.17g */
    cJSON *doc = cJSON_Parse(text);
    ck_assert_ptr_nonnull(doc);
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "v");
    ck_assert_int_eq(cJSON_GetArraySize(arr), n);
    int bad = 0;
    for (int i = 0; i < n; i++) bad += cJSON_GetArrayItem(arr, i)->valuedouble != v[i];
    ck_assert_int_eq(bad, 0);
    ck_assert_ptr_nonnull(strstr(text, "\"i64\":-9223372036854775808}"));
    cJSON_Delete(doc);
    json_free(&j);
    /* json_int_exact: a number while |v| <= 2^53 (a double holds it), a string past it */
    const int64_t p53 = (int64_t)1 << 53;
    ck_assert_int_eq(json_new(&j), INCA_OK);
    json_int_exact(j, "a", p53);
    json_int_exact(j, "b", -p53);
    json_int_exact(j, "c", p53 + 1);
    json_int_exact(j, "d", -p53 - 1);
    json_int_exact(j, "e", 0);
    ck_assert_str_eq(json_close(j), "{\"a\":9007199254740992,\"b\":-9007199254740992,\"c\":\"9007199254740993\","
                                    "\"d\":\"-9007199254740993\",\"e\":0}");
    json_free(&j);
}
END_TEST

/* A misuse or a failed allocation is reported once, by json_close / json_write, never as text. */
START_TEST(test_json_misuse_and_enomem) {
    static const int kinds = 6;
    for (int k = 0; k < kinds; k++) {
        json_t *j = NULL;
        ck_assert_int_eq(json_new(&j), INCA_OK);
        json_int(j, "a", 1);
        if (k == 0) json_int(j, NULL, 2);                            /* no key in an object */
        if (k == 1) { json_arr_begin(j, "x"); json_int(j, "k", 2); json_arr_end(j); }  /* key in an array */
        if (k == 2) json_obj_end(j);                                 /* nothing to end */
        if (k == 3) { json_arr_begin(j, "x"); json_obj_end(j); }     /* end of the wrong kind */
        if (k == 4) json_obj_begin(j, "open");                       /* left open */
        if (k == 5) for (int d = 0; d < 40; d++) json_arr_begin(j, d ? NULL : "deep");
        ck_assert_ptr_null(json_close(j));
        ck_assert_str_ne(inca_errmsg(), "");
        FILE *f = tmpfile();
        ck_assert_int_eq(json_write(j, f), INCA_ERR);
        ck_assert_int_eq(ftell(f), 0);   /* nothing written */
        fclose(f);
        json_free(&j);
    }
    json_t *j = NULL;
    ck_assert_int_eq(json_new(&j), INCA_OK);
    ck_assert_ptr_nonnull(json_close(j));
    json_int(j, "late", 1);   /* after the close */
    ck_assert_ptr_null(json_close(j));
    json_free(&j);
    /* every allocation may fail: json_new reports it, or the text is refused at the end */
    int ok = 0;
    for (long i = 1; i < 20 && !ok; i++) {
        inca_alloc_fail_after(i);
        int rc = json_new(&j);
        if (rc == INCA_OK) {
            for (int r = 0; r < 200; r++) json_str(j, "key", "a value long enough to grow the buffer");
            const char *t = json_close(j);
            if (t) ok = 1;
            else ck_assert_int_eq(json_write(j, stdout), INCA_ENOMEM);
        } else ck_assert_int_eq(rc, INCA_ENOMEM);
        inca_alloc_fail_after(0);
        json_free(&j);
    }
    ck_assert(ok);
}
END_TEST

/* Anonymous memory the process touches shows in the anonymous peak, pages of a mapped file in
 * the file-backed one (each by at least most of its size; the other stays put). */
START_TEST(test_memstat_peaks) {
    ck_assert_int_eq(memstat_start(), INCA_OK);
    ck_assert_int_eq(memstat_start(), INCA_OK);   /* idempotent */
    double a0, f0, a1, f1, a2, f2;
    memstat_peaks(&a0, &f0);
    const size_t anon = (size_t)256 << 20, file = (size_t)64 << 20;
    char *p = mmap(NULL, anon, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(p != MAP_FAILED);
    memset(p, 1, anon);
    memstat_sample();
    memstat_peaks(&a1, &f1);
    ck_assert_msg(a1 - a0 >= 200, "anonymous peak %.1f -> %.1f MiB after touching 256 MiB", a0, a1);
    munmap(p, anon);
    char *dir = tu_mkdtemp(), path[512];
    snprintf(path, sizeof path, "%s/blob", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ck_assert(fd >= 0);
    char *buf = malloc(1 << 20);
    ck_assert(buf);
    memset(buf, 7, 1 << 20);
    for (int i = 0; i < 64; i++) ck_assert(write(fd, buf, 1 << 20) == 1 << 20);
    free(buf);
    char *m = mmap(NULL, file, PROT_READ, MAP_SHARED, fd, 0);
    ck_assert(m != MAP_FAILED);
    long sum = 0;
    for (size_t o = 0; o < file; o += 4096) sum += m[o];
    ck_assert_int_eq(sum, 7L * (long)(file / 4096));
    memstat_sample();
    memstat_peaks(&a2, &f2);
    ck_assert_msg(f2 - f1 >= 50, "file-backed peak %.1f -> %.1f MiB after mapping 64 MiB", f1, f2);
    munmap(m, file);
    close(fd);
    memstat_stop();
    memstat_stop();   /* no-op */
    tu_rmrf(dir);
    free(dir);
}

/* One rank (no launcher in the environment): every collective is a local copy and counts no
 * bytes; an all-to-all whose one rank sends and receives different counts is refused. */
START_TEST(test_comm_one_rank) {
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMIX_RANK");
    unsetenv("PMI_SIZE");
    ck_assert_int_eq(comm_launched(), 0);
    int argc = 1;
    char *av[] = {"x", NULL}, **argv = av;
    comm_t *c = NULL;
    ck_assert_int_eq(comm_init(&argc, &argv, &c), INCA_OK);
    ck_assert_int_eq(comm_size(c), 1);
    ck_assert_int_eq(comm_rank(c), 0);
    ck_assert_int_eq(comm_size(NULL), 1);
    double a[3] = {1, 2, 3}, b[3] = {0};
    ck_assert_int_eq(comm_allgather(c, a, sizeof a, b, COMM_GRAD), INCA_OK);
    ck_assert(b[0] == 1 && b[1] == 2 && b[2] == 3);
    int64_t s = 5, r = 0, one = 2, two = 3;
    ck_assert_int_eq(comm_alltoall_i64(c, &s, &r, COMM_SETUP), INCA_OK);
    ck_assert_int_eq(r, 5);
    float rows[4] = {1, 2, 3, 4}, got[4] = {0};
    ck_assert_int_eq(comm_alltoallv_rows(c, rows, &one, got, &one, 2 * sizeof(float), COMM_HALO), INCA_OK);
    ck_assert(got[0] == 1 && got[3] == 4);
    ck_assert_int_eq(comm_alltoallv_rows(c, rows, &one, got, &two, 2 * sizeof(float), COMM_HALO), INCA_ERR);
    inca_err_clear();
    ck_assert_int_eq(comm_allreduce_sum_i64(c, &s, 1, COMM_SETUP), INCA_OK);
    ck_assert_int_eq(s, 5);
    for (int ph = 0; ph < COMM_NPHASES; ph++) ck_assert_int_eq(comm_bytes_sent(c, ph), 0);
    ck_assert_str_eq(comm_phase_name(COMM_REFRESH), "refresh");
    comm_finalize(&c);
    ck_assert_ptr_null(c);
    comm_finalize(&c);   /* NULL-safe */
}
END_TEST
END_TEST

/* Thread ranks (comm_threads_create): three threads run every collective against values
 * worked out here, the ordered sum on rounding-sensitive values (a different order gives a
 * different answer), the byte counts MPI's would give, and a poisoned group. */
typedef struct ct_arg {
    comm_t *c;
    int fails;   /* assertions that did not hold (counted: Check asserts belong to the test's thread) */
    int poison_first;
    int after_poison;
} ct_arg_t;

#define CT_CHECK(a, cond) do { if (!(cond)) { (a)->fails++; fprintf(stderr, "rank %d: %s\n", comm_rank((a)->c), #cond); } } while (0)

static void *ct_main(void *p) {
    ct_arg_t *A = p;
    comm_t *c = A->c;
    const int me = comm_rank(c), P = comm_size(c);
    int32_t mine = 10 * me, all[3] = {-1, -1, -1};
    CT_CHECK(A, comm_allgather(c, &mine, sizeof mine, all, COMM_GRAD) == INCA_OK);
    CT_CHECK(A, all[0] == 0 && all[1] == 10 && all[2] == 20);
    CT_CHECK(A, comm_bytes_sent(c, COMM_GRAD) == (int64_t)sizeof mine * (P - 1));
    int64_t b = me == 2 ? 77 : 0;
    CT_CHECK(A, comm_bcast(c, &b, sizeof b, 2, COMM_SETUP) == INCA_OK && b == 77);
    int64_t v[2] = {me, -me}, w[2] = {me, -me};
    CT_CHECK(A, comm_allreduce_sum_i64(c, v, 2, COMM_SETUP) == INCA_OK && v[0] == 3 && v[1] == -3);
    CT_CHECK(A, comm_allreduce_max_i64(c, w, 2, COMM_SETUP) == INCA_OK && w[0] == 2 && w[1] == 0);
    int64_t s3[3], r3[3];
    for (int i = 0; i < 3; i++) s3[i] = 100 * me + i;
    CT_CHECK(A, comm_alltoall_i64(c, s3, r3, COMM_SETUP) == INCA_OK);
    for (int i = 0; i < 3; i++) CT_CHECK(A, r3[i] == 100 * i + me);
    /* to rank i: i + 1 rows of two floats, 100 r + 10 i + k */
    float send[12], recv[18];   /* 6 rows out; 3 x (me + 1) rows in */
    int64_t sc[3], rcn[3];
    int o = 0;
    for (int i = 0; i < 3; i++) {
        sc[i] = i + 1;
        rcn[i] = me + 1;
        for (int k = 0; k <= i; k++, o++) send[2 * o] = send[2 * o + 1] = (float)(100 * me + 10 * i + k);
    }
    CT_CHECK(A, comm_alltoallv_rows(c, send, sc, recv, rcn, 2 * sizeof(float), COMM_HALO) == INCA_OK);
    o = 0;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k <= me; k++, o++) CT_CHECK(A, recv[2 * o] == (float)(100 * i + 10 * me + k) && recv[2 * o + 1] == recv[2 * o]);
    /* rows to the others only: 6 - (me + 1) rows of 8 bytes */
    CT_CHECK(A, comm_bytes_sent(c, COMM_HALO) == 8 * (6 - (me + 1)));
    /* left to right: 1e8, then 1 + 1e8 = 1e8 in float, then -1e8 + 1e8 = 0 (1 in another order) */
    const float g[3] = {1e8f, 1.0f, -1e8f};
    float buf[5];
    for (int i = 0; i < 5; i++) buf[i] = g[me];
    const uint8_t all3[3] = {1, 1, 1}, two[3] = {0, 1, 1}, none[3] = {0, 0, 0};
    CT_CHECK(A, comm_ordered_sum_f32(c, buf, 5, all3, COMM_REFRESH) == INCA_OK);
    for (int i = 0; i < 5; i++) CT_CHECK(A, buf[i] == 0.0f);
    for (int i = 0; i < 5; i++) buf[i] = g[me];
    CT_CHECK(A, comm_ordered_sum_f32(c, buf, 5, two, COMM_REFRESH) == INCA_OK);
    for (int i = 0; i < 5; i++) CT_CHECK(A, buf[i] == -1e8f);
    for (int i = 0; i < 5; i++) buf[i] = g[me];
    CT_CHECK(A, comm_ordered_sum_f32(c, buf, 5, none, COMM_REFRESH) == INCA_OK && buf[0] == g[me]);
    CT_CHECK(A, comm_barrier(c) == INCA_OK);
    /* rank 1 fails: the others' next collective returns an error instead of waiting forever */
    if (me == 1) A->poison_first = comm_poison(c);
    else A->after_poison = comm_barrier(c);
    return NULL;
}

/* fn on 3 thread ranks r (comm_threads_create; the caller frees them) with arguments a; every
 * rank's checks passed */
static void ct_run3(void *(*fn)(void *), comm_t **r, ct_arg_t *a) {
    pthread_t th[3];
    ck_assert_int_eq(comm_threads_create(3, r), INCA_OK);
    for (int i = 0; i < 3; i++) {
        a[i] = (ct_arg_t){.c = r[i]};
        ck_assert_int_eq(pthread_create(&th[i], NULL, fn, &a[i]), 0);
    }
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++) ck_assert_msg(a[i].fails == 0, "rank %d: %d checks failed", i, a[i].fails);
}

START_TEST(test_comm_thread_ranks) {
    comm_t *r[3];
    ct_arg_t a[3];
    ct_run3(ct_main, r, a);
    ck_assert_int_eq(a[1].poison_first, 1);
    ck_assert_int_eq(a[0].after_poison, INCA_ERR);
    ck_assert_int_eq(a[2].after_poison, INCA_ERR);
    ck_assert_int_eq(comm_poison(r[0]), 0);   /* already poisoned */
    comm_t *sp = NULL;
    ck_assert_int_eq(comm_split(r[0], 1, &sp), INCA_EINVAL);
    comm_threads_free(r, 3);
    ck_assert_int_eq(comm_threads_create(0, r), INCA_EINVAL);
}
END_TEST

/* The generator's draws against their distributions (independent of the code: counts expected
 * from uniformity). rng_below on n = 3 2^62: floor(x n / 2^64) = floor(3x / 4) gives multiples of
 * 3 to two x values in four, so without Lemire's rejection half the draws are multiples of 3,
 * with it a third. A Fisher-Yates shuffle of three items gives each of the 6 orders 1/6 of the
 * time (a last step skipped gives 3 orders, j drawn below i instead of i + 1 gives Sattolo's 2
 * cycles). rng_hash_uniform_d is uniform on [0, 1): mean 1/2, variance 1/12. */
START_TEST(test_rng_distributions) {
    rng_t r;
    rng_seed(&r, 5);
    const uint64_t n = 3ull << 62;
    const int N = 30000;
    int m3 = 0;
    for (int i = 0; i < N; i++) {
        const uint64_t v = rng_below(&r, n);
        ck_assert(v < n);
        m3 += v % 3 == 0;
    }
    ck_assert_msg(abs(m3 - N / 3) < 600, "%d of %d draws below 3 2^62 are multiples of 3", m3, N);
    int c64[27] = {0}, c32[27] = {0};
    for (int t = 0; t < 60000; t++) {
        int64_t a[3] = {0, 1, 2};
        int32_t b[3] = {0, 1, 2};
        rng_shuffle_i64(&r, a, 3);
        rng_shuffle_i32(&r, b, 3);
        c64[a[0] * 9 + a[1] * 3 + a[2]]++;
        c32[b[0] * 9 + b[1] * 3 + b[2]]++;
    }
    static const int perms[6] = {0 * 9 + 1 * 3 + 2, 0 * 9 + 2 * 3 + 1, 1 * 9 + 0 * 3 + 2,
                                 1 * 9 + 2 * 3 + 0, 2 * 9 + 0 * 3 + 1, 2 * 9 + 1 * 3 + 0};
    for (int k = 0; k < 6; k++) {   /* each 10000, standard deviation 91 */
        ck_assert_msg(abs(c64[perms[k]] - 10000) < 600, "i64 order %d drawn %d times of 60000", perms[k], c64[perms[k]]);
        ck_assert_msg(abs(c32[perms[k]] - 10000) < 600, "i32 order %d drawn %d times of 60000", perms[k], c32[perms[k]]);
    }
    double s = 0, s2 = 0;
    for (int i = 0; i < 200000; i++) {
        const double u = rng_hash_uniform_d(7, 1, (uint64_t)i);
        ck_assert(u >= 0 && u < 1);
        s += u;
        s2 += u * u;
    }
    ck_assert_double_eq_tol(s / 200000, 0.5, 0.005);
    ck_assert_double_eq_tol(s2 / 200000 - (s / 200000) * (s / 200000), 1.0 / 12, 0.002);
}
END_TEST

/* A context prefix on a message that fills the buffer keeps the prefix (up to its 511
 * characters), ": " and as much of the message as fits in 1023 characters. */
START_TEST(test_status_ctx_truncates) {
    char o[1001], p[601];
    memset(o, 'o', 1000), o[1000] = '\0';
    memset(p, 'p', 600), p[600] = '\0';
    inca_fail(INCA_EIO, "%s", o);
    ck_assert_int_eq(inca_fail_ctx(INCA_EIO, "%s", p), INCA_EIO);
    const char *m = inca_errmsg();
    ck_assert_uint_eq(strlen(m), 1023);
    ck_assert(strspn(m, "p") == 511 && strncmp(m + 511, ": ", 2) == 0 && strspn(m + 513, "o") == 510);
}
END_TEST

/* inca_out_check on the folder a path names: a missing folder and a file in a folder's place are
 * named as such; "DIR/sub/" names sub, in DIR (which exists); "/x" is in "/", which exists. A
 * temporary path in a message is replaced by the user's, every time it occurs. */
START_TEST(test_out_check_and_untemp) {
    char *dir = tu_mkdtemp(), p[600], want[700];
    snprintf(p, sizeof p, "%s/none/x", dir);
    ck_assert_int_eq(inca_out_check(p), INCA_ENOTFOUND);
    snprintf(want, sizeof want, "%s: cannot write: folder %s/none does not exist", p, dir);
    ck_assert_str_eq(inca_errmsg(), want);
    snprintf(p, sizeof p, "%s/file", dir);
    FILE *f = fopen(p, "w");
    ck_assert(f && fclose(f) == 0);
    snprintf(p, sizeof p, "%s/file/x", dir);
    ck_assert_int_eq(inca_out_check(p), INCA_ENOTFOUND);
    snprintf(want, sizeof want, "%s: cannot write: %s/file is not a folder", p, dir);
    ck_assert_str_eq(inca_errmsg(), want);
    snprintf(p, sizeof p, "%s/sub/", dir);
    ck_assert_int_eq(inca_out_check(p), INCA_OK);
    snprintf(p, sizeof p, "%s//sub", dir);
    ck_assert_int_eq(inca_out_check(p), INCA_OK);
    ck_assert_int_ne(inca_out_check("/x"), INCA_ENOTFOUND);   /* EIO where / is not writable */
    inca_fail(INCA_EIO, "rename a.tmp to a.tmp.old: a.tmp: gone");
    ck_assert_int_eq(inca_err_untemp(INCA_ENOMEM, "a.tmp", "a"), INCA_ENOMEM);
    ck_assert_str_eq(inca_errmsg(), "rename a to a.old: a: gone");
    ck_assert_int_eq(inca_err_untemp(INCA_EIO, "b.tmp", "b"), INCA_EIO);
    ck_assert_str_eq(inca_errmsg(), "rename a to a.old: a: gone");
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* qsort's comparator orders the extremes (a difference would overflow); FNV-1a 64 against its
 * published test vectors (offset basis 0xcbf29ce484222325; Fowler, Noll, Vo: "", "a", "foobar") */
START_TEST(test_cmp_and_fnv) {
    int64_t v[6] = {3, INT64_MAX, -1, INT64_MIN, 0, 3};
    qsort(v, 6, sizeof *v, inca_cmp_i64);
    const int64_t want[6] = {INT64_MIN, -1, 0, 3, 3, INT64_MAX};
    for (int i = 0; i < 6; i++) ck_assert(v[i] == want[i]);
    const uint64_t basis = 0xcbf29ce484222325ull;
    ck_assert_uint_eq(inca_fnv1a(basis, "", 0), basis);
    ck_assert_uint_eq(inca_fnv1a(basis, "a", 1), 0xaf63dc4c8601ec8cull);
    ck_assert_uint_eq(inca_fnv1a(basis, "foobar", 6), 0x85944171f73967e8ull);
    ck_assert_uint_eq(inca_fnv1a(inca_fnv1a(basis, "foo", 3), "bar", 3), 0x85944171f73967e8ull);
}
END_TEST

/* Injection reaches every allocator and the callers' own checks (inca_alloc_injected), each
 * failing once at the n-th call; an overflowing calloc says so. Unset, the thread count is the
 * machine's (in a forked test, where nothing has set it yet). */
START_TEST(test_alloc_injection_everywhere) {
    inca_alloc_fail_after(1);
    ck_assert_int_eq(inca_alloc_injected(8), 1);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "injected"));
    ck_assert_int_eq(inca_alloc_injected(8), 0);
    inca_alloc_fail_after(1);
    ck_assert_ptr_null(inca_realloc(NULL, 8));
    void *q = inca_realloc(NULL, 8);
    ck_assert_ptr_nonnull(q);
    inca_free(q);
    inca_alloc_fail_after(1);
    ck_assert_ptr_null(inca_malloc_aligned(64));
    q = inca_malloc_aligned(64);
    ck_assert_ptr_nonnull(q);
    inca_free(q);
    ck_assert_ptr_null(inca_calloc(SIZE_MAX / 2, 4));
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "overflows"));
    const char *fork = getenv("CK_FORK");
    if (!fork || strcmp(fork, "no") != 0) ck_assert_int_eq(inca_threads(), (int)sysconf(_SC_NPROCESSORS_ONLN));
}
END_TEST

/* RssAnon of /proc/self/status, kB, read here */
static long long proc_anon_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    ck_assert(f);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "RssAnon:", 8) == 0) kb = atoll(line + 8);
    fclose(f);
    return kb;
}

/* Without the sampling thread, reading the peaks samples first: 128 MiB touched show at once.
 * memstat_anon_now is RssAnon in bytes (kB x 1024, between two readings of it made here);
 * memstat_json writes the anonymous peak as peak_rss_anon_mb and the file-backed one as
 * peak_rss_file_mb (between readings before and after, and apart: 128 MiB of anonymous memory). */
START_TEST(test_memstat_unsampled) {
    double a0, f0, a1, f1, a2, f2;
    memstat_reset_peaks();   /* the peaks from now (earlier cases, without fork, reached higher) */
    memstat_peaks(&a0, &f0);
    const size_t bytes = (size_t)128 << 20;
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(p != MAP_FAILED);
    memset(p, 1, bytes);
    memstat_peaks(&a1, &f1);
    ck_assert_msg(a1 - a0 >= 100, "anonymous peak %.1f -> %.1f MiB after touching 128 MiB", a0, a1);
    const long long k0 = proc_anon_kb();
    int64_t now = 0;
    ck_assert_int_eq(memstat_anon_now(&now), INCA_OK);
    const long long k1 = proc_anon_kb();
    const long long lo = k0 < k1 ? k0 : k1, hi = k0 < k1 ? k1 : k0;
    ck_assert_msg(now % 1024 == 0 && now / 1024 >= lo && now / 1024 <= hi, "anon now %lld bytes, RssAnon %lld..%lld kB",
                  (long long)now, lo, hi);
    json_t *j = NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *ms = open_memstream(&buf, &len);
    ck_assert(ms && json_new(&j) == INCA_OK);
    memstat_json(j);
    ck_assert_int_eq(json_write(j, ms), INCA_OK);
    json_free(&j);
    fclose(ms);
    memstat_peaks(&a2, &f2);
    cJSON *o = cJSON_Parse(buf);
    ck_assert(o);
    const double ja = cJSON_GetObjectItem(o, "peak_rss_anon_mb")->valuedouble;
    const double jf = cJSON_GetObjectItem(o, "peak_rss_file_mb")->valuedouble;
    ck_assert_msg(ja >= a1 && ja <= a2 && jf >= f1 && jf <= f2 && a1 > f2, "json anon %g file %g; peaks %g..%g, %g..%g",
                  ja, jf, a1, a2, f1, f2);
    cJSON_Delete(o);
    free(buf);
    munmap(p, bytes);
}
END_TEST

/* The counters by hand on one rank: comm_count adds up per phase (bytes and seconds), a phase
 * outside [0, COMM_NPHASES) reads 0 and is never written, a reset zeroes the seconds too; the
 * phases' names in enum order; comm_split of a one-rank job gives a comm of one and refuses 0 or
 * 2 ranks. */
START_TEST(test_comm_counters_by_hand) {
    comm_t *c = NULL;
    int argc = 1;
    char *av[] = {"x", NULL}, **argv = av;
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMIX_RANK");
    unsetenv("PMI_SIZE");
    ck_assert_int_eq(comm_init(&argc, &argv, &c), INCA_OK);
    comm_count(c, COMM_SETUP, 0, 1.5);
    comm_count(c, COMM_GRAD, 100, 0.5);
    comm_count(c, COMM_GRAD, 28, 0.25);
    comm_count(c, COMM_NPHASES, 7, 1.0);
    comm_count(c, -1, 7, 1.0);
    ck_assert_int_eq(comm_bytes_sent(c, COMM_GRAD), 128);
    ck_assert(comm_seconds(c, COMM_GRAD) == 0.75 && comm_seconds(c, COMM_SETUP) == 1.5);
    for (int ph = -1; ph <= COMM_NPHASES; ph++)
        if (ph != COMM_GRAD) ck_assert_int_eq(comm_bytes_sent(c, ph), 0);
    ck_assert(comm_seconds(c, COMM_NPHASES) == 0 && comm_seconds(c, -1) == 0 && comm_seconds(c, COMM_HALO) == 0);
    comm_reset_bytes(c);
    for (int ph = 0; ph < COMM_NPHASES; ph++) ck_assert(comm_bytes_sent(c, ph) == 0 && comm_seconds(c, ph) == 0);
    const char *names[COMM_NPHASES] = {"setup", "grad", "refresh", "halo", "eval"};
    for (int ph = 0; ph < COMM_NPHASES; ph++) ck_assert_str_eq(comm_phase_name(ph), names[ph]);
    ck_assert_str_eq(comm_phase_name(COMM_NPHASES), "?");
    ck_assert_str_eq(comm_phase_name(-1), "?");
    comm_t *s = NULL;
    ck_assert_int_eq(comm_split(c, 2, &s), INCA_EINVAL);
    ck_assert_int_eq(comm_split(c, 0, &s), INCA_EINVAL);
    inca_err_clear();
    ck_assert_int_eq(comm_split(c, 1, &s), INCA_OK);
    ck_assert(s && comm_size(s) == 1 && comm_rank(s) == 0 && comm_local_rank(s) == 0);
    comm_free(&s);
    ck_assert_ptr_null(s);
    comm_finalize(&c);
}
END_TEST

/* Thread ranks' byte counts, each worked out here from comm.h's rule (the payload for the other
 * ranks): an allgather of 16-byte records in rank order, counts adding up within a phase; a
 * broadcast counts b (P - 1) on its root only; an all-reduce of n int64 8 n (P - 1); an
 * all-to-all 8 (P - 1); the ordered sum, n = 5 floats, leaving out a non-contributor between two,
 * counts n for each chain hop a contributor other than the last sends and n for each ring hop
 * from the last (every rank forwards to its successor unless that is the last). A rank whose
 * expected row count disagrees with its sender's fails, naming both, the others pass; after a
 * rank's poison every barrier of the others fails. */
static void *ct_count_main(void *p) {
    ct_arg_t *A = p;
    comm_t *c = A->c;
    const int me = comm_rank(c);
    CT_CHECK(A, comm_local_rank(c) == me);
    int64_t mine[2] = {me, 10 + me}, all[6] = {0};
    CT_CHECK(A, comm_allgather(c, mine, sizeof mine, all, COMM_GRAD) == INCA_OK);
    CT_CHECK(A, all[1] == 10 && all[2] == 1 && all[5] == 12);
    CT_CHECK(A, comm_allgather(c, mine, sizeof mine, all, COMM_GRAD) == INCA_OK);
    CT_CHECK(A, comm_bytes_sent(c, COMM_GRAD) == 2 * 16 * 2);
    char b[24] = {0};
    if (me == 1) memset(b, 'x', sizeof b);
    CT_CHECK(A, comm_bcast(c, b, sizeof b, 1, COMM_EVAL) == INCA_OK && b[0] == 'x' && b[23] == 'x');
    CT_CHECK(A, comm_bytes_sent(c, COMM_EVAL) == (me == 1 ? 24 * 2 : 0));
    int64_t v[4] = {me, me, me, me}, s3[3] = {me, me, me}, r3[3];
    CT_CHECK(A, comm_allreduce_sum_i64(c, v, 4, COMM_SETUP) == INCA_OK && v[3] == 3);
    CT_CHECK(A, comm_bytes_sent(c, COMM_SETUP) == 8 * 4 * 2);
    CT_CHECK(A, comm_allreduce_max_i64(c, v, 3, COMM_SETUP) == INCA_OK);
    CT_CHECK(A, comm_alltoall_i64(c, s3, r3, COMM_SETUP) == INCA_OK && r3[2] == 2);
    CT_CHECK(A, comm_bytes_sent(c, COMM_SETUP) == 8 * 4 * 2 + 8 * 3 * 2 + 8 * 2);
    const uint8_t all3[3] = {1, 1, 1}, two[3] = {0, 1, 1}, ends[3] = {1, 0, 1};
    const int64_t want[3][3] = {{40, 20, 20}, {20, 20, 20}, {40, 0, 20}};   /* [case][rank] bytes */
    const uint8_t *cases[3] = {all3, two, ends};
    for (int k = 0; k < 3; k++) {
        float buf[5] = {1, 2, 3, 4, 5};
        comm_reset_bytes(c);
        CT_CHECK(A, comm_ordered_sum_f32(c, buf, 5, cases[k], COMM_REFRESH) == INCA_OK);
        CT_CHECK(A, buf[4] == 5.0f * (float)(cases[k][0] + cases[k][1] + cases[k][2]));
        CT_CHECK(A, comm_bytes_sent(c, COMM_REFRESH) == want[k][me]);
    }
    /* rank 0 expects 2 rows from rank 1, which sends it 1 */
    float rows[8] = {0}, got[8];
    int64_t sc[3] = {1, 1, 1}, rc[3] = {1, me == 0 ? 2 : 1, 1};
    const int r = comm_alltoallv_rows(c, rows, sc, got, rc, sizeof(float), COMM_HALO);
    if (me == 0)
        CT_CHECK(A, r == INCA_ERR && strstr(inca_errmsg(), "rank 1 sends 1 rows to rank 0, which expects 2"));
    else CT_CHECK(A, r == INCA_OK);
    CT_CHECK(A, comm_barrier(c) == INCA_OK);
    /* rank 1 fails while the others wait (most likely): each of their barriers fails, the ones
     * that arrive after the poison too, however many */
    if (me == 1) {
        usleep(100000);
        comm_poison(c);
    } else {
        for (int k = 0; k < 3; k++) CT_CHECK(A, comm_barrier(c) == INCA_ERR);
        int64_t z = 5;   /* nothing to reduce: no collective entered, so no failure either */
        CT_CHECK(A, comm_allreduce_sum_i64(c, &z, 0, COMM_SETUP) == INCA_OK && z == 5);
    }
    return NULL;
}

START_TEST(test_comm_thread_counts) {
    comm_t *r[3];
    ct_arg_t a[3];
    ct_run3(ct_count_main, r, a);
    comm_threads_free(r, 3);
}
END_TEST

int main(void) {
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_status_codes);
    tcase_add_test(tc, test_comm_one_rank);
    tcase_add_test(tc, test_comm_thread_ranks);
    tcase_add_test(tc, test_comm_counters_by_hand);
    tcase_add_test(tc, test_comm_thread_counts);
    tcase_add_test(tc, test_alloc_injection);
    tcase_add_test(tc, test_rng);
    tcase_add_test(tc, test_rng_distributions);
    tcase_add_test(tc, test_status_ctx_truncates);
    tcase_add_test(tc, test_out_check_and_untemp);
    tcase_add_test(tc, test_cmp_and_fnv);
    tcase_add_test(tc, test_alloc_injection_everywhere);
    tcase_add_test(tc, test_thread_adopt);
    tcase_add_test(tc, test_args);
    tcase_add_test(tc, test_args_values);
    tcase_add_test(tc, test_json_control_chars);
    tcase_add_test(tc, test_json);
    tcase_add_test(tc, test_json_utf8);
    tcase_add_test(tc, test_json_numbers_round_trip);
    tcase_add_test(tc, test_json_misuse_and_enomem);
    tcase_add_test(tc, test_memstat_peaks);
    tcase_add_test(tc, test_memstat_unsampled);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
