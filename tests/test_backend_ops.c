/* Every op of the kernel table on a device backend against the CPU backend (in the manner of
 * ggml's test-backend-ops): random inputs uploaded to the device, the op run on both, the result
 * downloaded and compared: normalised error <= 1e-5 (fp32), <= 1e-4 for reductions, the bits
 * where backend.h promises them (dropout, relu, row tables, bf16, accuracy counts). The device is
 * "cuda", or $INCA_OPS_DEVICE ("emu": the harness itself checked without a GPU). Without a device
 * the test exits 77 (ctest: skipped), unless the machine shows an NVIDIA GPU: then it fails
 * (tu_gpu_unavailable: a build without CUDA must not pass a GPU machine by skipping). Labelled gpu. */
#include "kernels/backend.h"
#include "core/rng.h"
#include "core/status.h"
#include "tests/testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dev_name(void) {
    const char *d = getenv("INCA_OPS_DEVICE");
    return d && *d ? d : "cuda";
}
/* the device under test, created inside each (forked) test, never before the fork */
static kern_ctx_t *dev_open(int deterministic, int tf32) {
    kern_ctx_opts_t o = {.device = dev_name(), .deterministic = deterministic, .tf32 = tf32};
    kern_ctx_t *d = NULL;
    ck_assert_msg(kc_create(&o, &d) == INCA_OK, "%s: %s", dev_name(), inca_errmsg());
    return d;
}

static float *rnd(int64_t n, uint64_t seed, float scale) {
    rng_t r;
    rng_seed(&r, seed);
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    ck_assert(p);
    for (int64_t i = 0; i < n; i++) p[i] = (float)((2.0 * rng_uniform(&r) - 1.0) * scale);
    return p;
}

/* A buffer on both sides: h for the CPU backend (host memory), d on the device, same contents. */
typedef struct { void *h, *d; size_t bytes; } tb_t;
static tb_t tb_new(kern_ctx_t *d, const void *init, size_t bytes) {
    tb_t b = {.bytes = bytes};
    b.h = calloc(1, bytes ? bytes : 1);
    ck_assert(b.h);
    if (init) memcpy(b.h, init, bytes);
    ck_assert_int_eq(kc_alloc(d, KERN_MEM_DEVICE, bytes, &b.d), INCA_OK);
    if (bytes) ck_assert_int_eq(kc_copy(d, b.d, b.h, bytes, KERN_H2D, KERN_STREAM_COMPUTE), INCA_OK);
    return b;
}
static tb_t tb_f(kern_ctx_t *d, int64_t n, uint64_t seed, float scale) {
    float *v = rnd(n, seed, scale);
    tb_t b = tb_new(d, v, (size_t)n * sizeof(float));
    free(v);
    return b;
}
static void *tb_get(kern_ctx_t *d, const tb_t *b) {
    void *o = malloc(b->bytes ? b->bytes : 1);
    ck_assert(o);
    if (b->bytes) ck_assert_int_eq(kc_copy(d, o, b->d, b->bytes, KERN_D2H, KERN_STREAM_COMPUTE), INCA_OK);
    ck_assert_msg(kc_sync(d) == INCA_OK, "sync: %s", inca_errmsg());
    return o;
}
static void tb_free(kern_ctx_t *d, tb_t *b) {
    free(b->h);
    kc_release(d, KERN_MEM_DEVICE, b->d);
    memset(b, 0, sizeof *b);
}
/* device result vs the CPU's: bits (tol < 0) or ||dev - cpu|| / ||cpu|| <= tol over n floats */
static void tb_check(kern_ctx_t *d, const tb_t *b, int64_t n, double tol, const char *what) {
    float *o = tb_get(d, b);
    const float *e = b->h;
    if (tol < 0) {
        for (int64_t i = 0; i < n; i++)
            if (memcmp(&o[i], &e[i], sizeof(float)) != 0)
                ck_abort_msg("%s: element %lld differs: %.9g vs %.9g (bits)", what, (long long)i, o[i], e[i]);
    } else {
        int64_t at = 0;
        const double err = tu_norm_err(o, e, n, &at);
        ck_assert_msg(err <= tol, "%s: normalised error %.3g > %.3g (worst at %lld: %.9g vs %.9g)", what, err, tol,
                      (long long)at, n ? o[at] : 0.0, n ? e[at] : 0.0);
    }
    free(o);
}
static void tb_check_bytes(kern_ctx_t *d, const tb_t *b, const char *what) {
    unsigned char *o = tb_get(d, b);
    ck_assert_msg(memcmp(o, b->h, b->bytes) == 0, "%s: bytes differ", what);
    free(o);
}

START_TEST(memory_and_ordering) {
    kern_ctx_t *d = dev_open(0, 0);
    ck_assert(kc_device(d) != KERN_DEV_CPU && kc_describe(d)[0]);
    float *h = rnd(1000, 1, 1.0f), *back = malloc(1000 * sizeof(float)), *pin = NULL, *a = NULL, *b = NULL;
    ck_assert(back);
    ck_assert_int_eq(kc_alloc(d, KERN_MEM_DEVICE, 1000 * sizeof(float), (void **)&a), INCA_OK);
    ck_assert_int_eq(kc_alloc(d, KERN_MEM_DEVICE, 1000 * sizeof(float), (void **)&b), INCA_OK);
    ck_assert_int_eq(kc_alloc(d, KERN_MEM_PINNED, 1000 * sizeof(float), (void **)&pin), INCA_OK);
    for (int i = 0; i < 1000; i++) ck_assert(pin[i] == 0.0f);   /* zeroed */
    ck_assert_int_eq(kc_copy(d, back, a, 1000 * sizeof(float), KERN_D2H, KERN_STREAM_COMPUTE), INCA_OK);
    ck_assert_int_eq(kc_sync(d), INCA_OK);
    for (int i = 0; i < 1000; i++) ck_assert(back[i] == 0.0f);   /* device memory zeroed too */
    /* H2D on the copy stream, then D2D on compute after an event, then D2H into pinned */
    memcpy(pin, h, 1000 * sizeof(float));
    ck_assert_int_eq(kc_copy(d, a, pin, 1000 * sizeof(float), KERN_H2D, KERN_STREAM_COPY), INCA_OK);
    ck_assert_int_eq(kc_event_record(d, 3, KERN_STREAM_COPY), INCA_OK);
    ck_assert_int_eq(kc_stream_wait(d, KERN_STREAM_COMPUTE, 3), INCA_OK);
    ck_assert_int_eq(kc_copy(d, b, a, 1000 * sizeof(float), KERN_D2D, KERN_STREAM_COMPUTE), INCA_OK);
    ck_assert_int_eq(kc_zero(d, b + 10, 10 * sizeof(float), KERN_STREAM_COMPUTE), INCA_OK);
    ck_assert_int_eq(kc_event_record(d, 4, KERN_STREAM_COMPUTE), INCA_OK);
    ck_assert_int_eq(kc_stream_wait(d, KERN_STREAM_COPY, 4), INCA_OK);
    ck_assert_int_eq(kc_copy(d, pin, b, 1000 * sizeof(float), KERN_D2H, KERN_STREAM_COPY), INCA_OK);
    ck_assert_int_eq(kc_sync(d), INCA_OK);
    for (int i = 0; i < 1000; i++) ck_assert(pin[i] == (i >= 10 && i < 20 ? 0.0f : h[i]));
    kc_release(d, KERN_MEM_DEVICE, a);
    kc_release(d, KERN_MEM_DEVICE, b);
    kc_release(d, KERN_MEM_PINNED, pin);
    free(h);
    free(back);
    kc_free(&d);
}
END_TEST

/* spmm (values, pattern, replacement values, alpha/beta), rows views, spmm_base, spmm_bf16 */
static void spmm_case(kern_ctx_t *d, int64_t rows, int64_t cols, int64_t f, int with_val, uint64_t seed) {
    kern_ctx_t *c = kc_cpu();
    char what[96];
    csr_t a = tu_csr_random(rows, cols, seed, with_val);
    kern_mat_t *mc = NULL, *md = NULL;
    ck_assert_int_eq(kc_mat_upload(c, &a, &mc), INCA_OK);
    ck_assert_int_eq(kc_mat_upload(d, &a, &md), INCA_OK);
    ck_assert(kc_mat_rows(md) == rows && kc_mat_nnz(md) == a.nnz);
    tb_t x = tb_f(d, cols * f, seed + 1, 1.0f), y = tb_f(d, rows * f, seed + 2, 1.0f);
    const float ab[3][2] = {{1.0f, 0.0f}, {0.5f, 0.7f}, {-2.0f, 1.0f}};
    for (int k = 0; k < 3; k++) {
        if (ab[k][1] == 0.0f) {   /* beta 0: Y is not read (NaN garbage must not leak) */
            float *nan = malloc((size_t)(rows * f + 1) * sizeof(float));
            ck_assert(nan);
            for (int64_t i = 0; i < rows * f; i++) nan[i] = NAN;
            if (rows) ck_assert_int_eq(kc_copy(d, y.d, nan, (size_t)(rows * f) * 4, KERN_H2D, 0), INCA_OK);
            free(nan);
        }
        ck_assert_int_eq(kc_spmm(c, mc, NULL, x.h, f, ab[k][0], ab[k][1], y.h), INCA_OK);
        ck_assert_int_eq(kc_spmm(d, md, NULL, x.d, f, ab[k][0], ab[k][1], y.d), INCA_OK);
        snprintf(what, sizeof what, "spmm %lldx%lld f=%lld val=%d alpha=%g beta=%g", (long long)rows, (long long)cols,
                 (long long)f, with_val, ab[k][0], ab[k][1]);
        tb_check(d, &y, rows * f, 1e-5, what);
    }
    /* replacement values */
    tb_t v = tb_f(d, a.nnz, seed + 3, 1.0f);
    ck_assert_int_eq(kc_spmm(c, mc, v.h, x.h, f, 1.0f, 0.0f, y.h), INCA_OK);
    ck_assert_int_eq(kc_spmm(d, md, v.d, x.d, f, 1.0f, 0.0f, y.d), INCA_OK);
    tb_check(d, &y, rows * f, 1e-5, "spmm with replacement values");
    /* and back to the matrix's own values (the plan is shared) */
    ck_assert_int_eq(kc_spmm(c, mc, NULL, x.h, f, 1.0f, 0.0f, y.h), INCA_OK);
    ck_assert_int_eq(kc_spmm(d, md, NULL, x.d, f, 1.0f, 0.0f, y.d), INCA_OK);
    tb_check(d, &y, rows * f, 1e-5, "spmm after replacement values");
    /* rows view [rows/3, 2 rows/3) (rowptr[0] != 0 on the parent) */
    kern_mat_t *vc = NULL, *vd = NULL;
    const int64_t r0 = rows / 3, r1 = 2 * rows / 3;
    ck_assert_int_eq(kc_mat_rows_view(c, mc, r0, r1, &vc), INCA_OK);
    ck_assert_int_eq(kc_mat_rows_view(d, md, r0, r1, &vd), INCA_OK);
    ck_assert(kc_mat_rows(vd) == r1 - r0 && kc_mat_nnz(vd) == kc_mat_nnz(vc));
    ck_assert_int_eq(kc_spmm(c, vc, NULL, x.h, f, 1.0f, 0.0f, y.h), INCA_OK);
    ck_assert_int_eq(kc_spmm(d, vd, NULL, x.d, f, 1.0f, 0.0f, y.d), INCA_OK);
    tb_check(d, &y, (r1 - r0) * f, 1e-5, "spmm on a rows view");
    /* base-add: Y[r] = base[ids[r]] + (A X)[r] */
    const int64_t nb = rows + 5;
    int64_t *ids = malloc((size_t)(rows + 1) * sizeof(int64_t));
    ck_assert(ids);
    for (int64_t i = 0; i < rows; i++) ids[i] = (i * 7 + 2) % nb;
    tb_t base = tb_f(d, nb * f, seed + 4, 1.0f), idb = tb_new(d, ids, (size_t)rows * sizeof(int64_t));
    ck_assert_int_eq(kc_spmm_base(c, mc, x.h, f, base.h, nb, idb.h, y.h), INCA_OK);
    ck_assert_int_eq(kc_spmm_base(d, md, x.d, f, base.d, nb, idb.d, y.d), INCA_OK);
    tb_check(d, &y, rows * f, 1e-5, "spmm_base");
    /* bf16 input */
    tb_t xb = tb_new(d, NULL, (size_t)(cols * f) * 2);
    ck_assert_int_eq(kc_encode(c, KERN_BF16, cols * f, x.h, xb.h), INCA_OK);
    ck_assert_int_eq(kc_encode(d, KERN_BF16, cols * f, x.d, xb.d), INCA_OK);
    tb_check_bytes(d, &xb, "encode before spmm_bf16");
    ck_assert_int_eq(kc_spmm_bf16(c, mc, xb.h, f, y.h), INCA_OK);
    ck_assert_int_eq(kc_spmm_bf16(d, md, xb.d, f, y.d), INCA_OK);
    tb_check(d, &y, rows * f, 1e-5, "spmm_bf16");
    kc_mat_free(c, &vc);
    kc_mat_free(d, &vd);
    kc_mat_free(c, &mc);
    kc_mat_free(d, &md);
    tb_free(d, &x), tb_free(d, &y), tb_free(d, &v), tb_free(d, &base), tb_free(d, &idb), tb_free(d, &xb);
    free(ids);
    csr_free(&a);
}

START_TEST(spmm_all_shapes) {
    kern_ctx_t *d = dev_open(0, 0);
    const int64_t shapes[][2] = {{0, 5}, {1, 1}, {37, 23}, {300, 257}};
    const int64_t fs[] = {1, 7, 64, 256};
    for (int s = 0; s < 4; s++)
        for (int k = 0; k < 4; k++)
            for (int wv = 0; wv < 2; wv++) spmm_case(d, shapes[s][0], shapes[s][1], fs[k], wv, 100 + s * 10 + k);
    kc_free(&d);
}
END_TEST

/* --deterministic: the same bits on repeated runs, and a matrix re-set drops its plans */
START_TEST(spmm_deterministic_and_reset) {
    kern_ctx_t *d = dev_open(1, 0);
    ck_assert(kc_deterministic(d) || strcmp(dev_name(), "cuda") != 0);
    csr_t a = tu_csr_random(500, 400, 7, 1), b = tu_csr_random(300, 350, 8, 1);   /* b: fewer columns */
    kern_mat_t *m = NULL;
    ck_assert_int_eq(kc_mat_create(d, 500, 400, a.nnz > b.nnz ? a.nnz : b.nnz, &m), INCA_OK);
    ck_assert_int_eq(kc_mat_set(d, m, &a, KERN_STREAM_COPY), INCA_OK);
    ck_assert_int_eq(kc_event_record(d, 0, KERN_STREAM_COPY), INCA_OK);
    ck_assert_int_eq(kc_stream_wait(d, KERN_STREAM_COMPUTE, 0), INCA_OK);
    const int64_t f = 64;
    tb_t x = tb_f(d, 400 * f, 9, 1.0f), y = tb_new(d, NULL, 500 * f * 4);
    ck_assert_int_eq(kc_spmm(d, m, NULL, x.d, f, 1.0f, 0.0f, y.d), INCA_OK);
    float *first = tb_get(d, &y);
    ck_assert_int_eq(kc_spmm(d, m, NULL, x.d, f, 1.0f, 0.0f, y.d), INCA_OK);
    float *second = tb_get(d, &y);
    ck_assert(memcmp(first, second, 500 * f * 4) == 0);
    kern_spmm(&a, x.h, f, 1.0f, 0.0f, y.h);
    tb_check(d, &y, 500 * f, 1e-5, "deterministic spmm vs CPU");
    ck_assert_int_eq(kc_mat_set(d, m, &b, KERN_STREAM_COMPUTE), INCA_OK);   /* other contents, same handle */
    ck_assert(kc_mat_rows(m) == 300 && m->cols == 350);
    ck_assert_int_eq(kc_spmm(d, m, NULL, x.d, f, 1.0f, 0.0f, y.d), INCA_OK);
    kern_spmm(&b, x.h, f, 1.0f, 0.0f, y.h);
    tb_check(d, &y, 300 * f, 1e-5, "spmm after kc_mat_set with new contents");
    /* a bad call is refused with a message naming the op */
    inca_err_clear();
    ck_assert_int_ne(kc_spmm(d, m, NULL, x.d, 0, 1.0f, 0.0f, y.d), INCA_OK);
    ck_assert(strstr(inca_errmsg(), "spmm") != NULL);
    free(first);
    free(second);
    kc_mat_free(d, &m);
    tb_free(d, &x), tb_free(d, &y);
    csr_free(&a);
    csr_free(&b);
    kc_free(&d);
}
END_TEST

START_TEST(gemm_all_transposes) {
    for (int tf32 = 0; tf32 < 2; tf32++) {
        kern_ctx_t *d = dev_open(0, tf32), *c = kc_cpu();
        ck_assert(kc_tf32(d) == tf32 || strcmp(dev_name(), "cuda") != 0);
        const int64_t shapes[][3] = {{1, 1, 1}, {7, 64, 5}, {64, 7, 256}, {130, 33, 17}, {5, 6, 0}};
        for (int s = 0; s < 5; s++)
            for (int t = 0; t < 4; t++) {
                const int ta = t & 1, tb = t >> 1;
                const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
                const int64_t ar = ta ? k : m, br = tb ? n : k;
                tb_t A = tb_f(d, ar * lda, 200 + s, 1.0f), B = tb_f(d, br * ldb, 300 + s, 1.0f);
                tb_t C = tb_f(d, m * ldc, 400 + s, 1.0f);
                const float beta = s % 2 ? 0.5f : 0.0f;
                kc_gemm(c, ta, tb, m, n, k, 1.5f, A.h, lda, B.h, ldb, beta, C.h, ldc);
                ck_assert_int_eq(kc_gemm(d, ta, tb, m, n, k, 1.5f, A.d, lda, B.d, ldb, beta, C.d, ldc), INCA_OK);
                char what[80];
                snprintf(what, sizeof what, "gemm %lldx%lldx%lld ta=%d tb=%d tf32=%d", (long long)m, (long long)n,
                         (long long)k, ta, tb, tf32);
                tb_check(d, &C, m * ldc, tf32 ? 5e-3 : 1e-5, what);   /* TF32: 10-bit mantissas */
                tb_free(d, &A), tb_free(d, &B), tb_free(d, &C);
            }
        kc_free(&d);
    }
}
END_TEST

START_TEST(elementwise_ops) {
    kern_ctx_t *d = dev_open(0, 0), *c = kc_cpu();
    const int64_t rows_s[] = {0, 1, 37, 1000}, fs[] = {1, 7, 64, 256};
    for (int ri = 0; ri < 4; ri++)
        for (int fi = 0; fi < 4; fi++) {
            const int64_t rows = rows_s[ri], f = fs[fi], n = rows * f;
            const uint64_t sd = (uint64_t)(ri * 4 + fi) * 16;
            tb_t x = tb_f(d, n, sd + 1, 2.0f), y = tb_f(d, n, sd + 2, 2.0f), o = tb_f(d, n, sd + 3, 1.0f);
            tb_t b = tb_f(d, f, sd + 4, 1.0f), db = tb_new(d, NULL, (size_t)f * 4);
            tb_t mask = tb_new(d, NULL, (size_t)n + 1);
            kc_axpby(c, n, 0.3f, x.h, -1.5f, y.h), kc_axpby(d, n, 0.3f, x.d, -1.5f, y.d);
            tb_check(d, &y, n, 1e-5, "axpby");
            kc_axpby(c, n, 0.3f, x.h, 0.0f, y.h), kc_axpby(d, n, 0.3f, x.d, 0.0f, y.d);
            tb_check(d, &y, n, 1e-5, "axpby beta 0");
            kc_sub(c, n, x.h, y.h, o.h), kc_sub(d, n, x.d, y.d, o.d);
            tb_check(d, &o, n, 1e-5, "sub");
            kc_add_bias(c, rows, f, b.h, o.h), kc_add_bias(d, rows, f, b.d, o.d);
            tb_check(d, &o, n, 1e-5, "add_bias");
            kc_bias_grad(c, rows, f, x.h, db.h), kc_bias_grad(d, rows, f, x.d, db.d);
            tb_check(d, &db, f, 1e-4, "bias_grad");
            kc_bias_relu(c, rows, f, b.h, x.h, o.h), kc_bias_relu(d, rows, f, b.d, x.d, o.d);
            tb_check(d, &o, n, -1, "bias_relu");
            kc_relu(c, n, x.h, o.h), kc_relu(d, n, x.d, o.d);
            tb_check(d, &o, n, -1, "relu");
            kc_relu_grad(c, n, o.h, y.h, x.h), kc_relu_grad(d, n, o.d, y.d, x.d);
            tb_check(d, &x, n, -1, "relu_grad");
            const float ps[] = {0.0f, 0.5f, 0.1f, 1.0f};
            for (int pi = 0; pi < 4; pi++) {
                ck_assert_int_eq(kc_dropout(c, n, ps[pi], 42, (uint64_t)pi, y.h, o.h, mask.h), INCA_OK);
                ck_assert_int_eq(kc_dropout(d, n, ps[pi], 42, (uint64_t)pi, y.d, o.d, mask.d), INCA_OK);
                tb_check(d, &o, n, -1, "dropout values");
                unsigned char *mk = tb_get(d, &mask);
                ck_assert_msg(memcmp(mk, mask.h, (size_t)n) == 0, "dropout mask p=%g", ps[pi]);
                free(mk);
                kc_dropout_grad(c, n, ps[pi], mask.h, y.h, x.h), kc_dropout_grad(d, n, ps[pi], mask.d, y.d, x.d);
                tb_check(d, &x, n, -1, "dropout_grad");
                kc_relu_drop_grad(c, n, o.h, y.h, ps[pi], mask.h, x.h), kc_relu_drop_grad(d, n, o.d, y.d, ps[pi], mask.d, x.d);
                tb_check(d, &x, n, -1, "relu_drop_grad");
            }
            tb_free(d, &x), tb_free(d, &y), tb_free(d, &o), tb_free(d, &b), tb_free(d, &db), tb_free(d, &mask);
        }
    kc_free(&d);
}
END_TEST

START_TEST(batchnorm_ops) {
    kern_ctx_t *d = dev_open(0, 0), *c = kc_cpu();
    const int64_t ns[] = {1, 7, 1000}, fs[] = {1, 7, 64, 256};
    for (int ni = 0; ni < 3; ni++)
        for (int fi = 0; fi < 4; fi++) {
            const int64_t n = ns[ni], f = fs[fi], nf = n * f;
            const uint64_t sd = (uint64_t)(ni * 4 + fi) * 16 + 1000;
            tb_t z = tb_f(d, nf, sd, 3.0f), g = tb_f(d, f, sd + 1, 1.0f), be = tb_f(d, f, sd + 2, 1.0f);
            tb_t is = tb_new(d, NULL, (size_t)f * 4), rm = tb_new(d, NULL, (size_t)f * 4), y = tb_new(d, NULL, (size_t)nf * 4);
            float *ones = malloc((size_t)f * 4);
            ck_assert(ones);
            for (int64_t k = 0; k < f; k++) ones[k] = 1.0f;
            tb_t rv = tb_new(d, ones, (size_t)f * 4);
            free(ones);
            for (int train = 1; train >= 0; train--) {
                tb_t xh = tb_new(d, z.h, (size_t)nf * 4);
                kc_bn_forward(c, n, f, train, xh.h, g.h, be.h, is.h, rm.h, rv.h, y.h);
                ck_assert_int_eq(kc_bn_forward(d, n, f, train, xh.d, g.d, be.d, is.d, rm.d, rv.d, y.d), INCA_OK);
                tb_check(d, &xh, nf, 1e-4, "bn xhat");
                tb_check(d, &y, nf, 1e-4, "bn y");
                tb_check(d, &is, f, 1e-4, "bn istd");
                tb_check(d, &rm, f, 1e-4, "bn running mean");
                tb_check(d, &rv, f, 1e-4, "bn running var");
                if (train && n > 1) {
                    tb_t dy = tb_f(d, nf, sd + 3, 1.0f), dz = tb_new(d, NULL, (size_t)nf * 4);
                    tb_t gg = tb_new(d, NULL, (size_t)f * 4), gb = tb_new(d, NULL, (size_t)f * 4);
                    kc_bn_backward(c, n, f, g.h, xh.h, is.h, dy.h, dz.h, gg.h, gb.h);
                    ck_assert_int_eq(kc_bn_backward(d, n, f, g.d, xh.d, is.d, dy.d, dz.d, gg.d, gb.d), INCA_OK);
                    tb_check(d, &dz, nf, 1e-4, "bn dz");
                    tb_check(d, &gg, f, 1e-4, "bn ggamma");
                    tb_check(d, &gb, f, 1e-4, "bn gbeta");
                    tb_free(d, &dy), tb_free(d, &dz), tb_free(d, &gg), tb_free(d, &gb);
                }
                tb_free(d, &xh);
            }
            tb_free(d, &z), tb_free(d, &g), tb_free(d, &be), tb_free(d, &is), tb_free(d, &rm), tb_free(d, &rv);
            tb_free(d, &y);
        }
    kc_free(&d);
}
END_TEST

START_TEST(loss_accuracy_adam) {
    kern_ctx_t *d = dev_open(0, 0), *c = kc_cpu();
    const int64_t rows = 500, cs[] = {1, 7, 64};
    rng_t r;
    rng_seed(&r, 77);
    for (int ci = 0; ci < 3; ci++) {
        const int64_t cl = cs[ci], nidx = 400;
        int32_t *yl = malloc(rows * 4);
        int64_t *idx = malloc(nidx * 8);
        ck_assert(yl && idx);
        for (int64_t i = 0; i < rows; i++) yl[i] = rng_uniform(&r) < 0.2 ? -1 : (int32_t)rng_below(&r, (uint64_t)cl);
        for (int64_t t = 0; t < nidx; t++) idx[t] = (int64_t)rng_below(&r, rows);   /* duplicates included */
        tb_t z = tb_f(d, rows * cl, 500 + ci, 6.0f), lp = tb_new(d, NULL, (size_t)(rows * cl) * 4);
        tb_t dl = tb_new(d, NULL, (size_t)(rows * cl) * 4), y = tb_new(d, yl, (size_t)rows * 4);
        tb_t ix = tb_new(d, idx, (size_t)nidx * 8), loss = tb_new(d, NULL, 8), cnt = tb_new(d, NULL, 16);
        ck_assert_int_eq(kc_softmax_xent(c, rows, cl, z.h, y.h, ix.h, nidx, lp.h, dl.h, loss.h), INCA_OK);
        ck_assert_int_eq(kc_softmax_xent(d, rows, cl, z.d, y.d, ix.d, nidx, lp.d, dl.d, loss.d), INCA_OK);
        tb_check(d, &lp, rows * cl, 1e-5, "logp");
        tb_check(d, &dl, rows * cl, 1e-5, "dlogits");
        double *l = tb_get(d, &loss), l0 = *(double *)loss.h;
        ck_assert_msg(fabs(*l - l0) <= 1e-4 * fabs(l0) + 1e-12, "loss %.17g vs %.17g", *l, l0);
        free(l);
        for (int rep = 0; rep < 2; rep++) {   /* counts accumulate */
            ck_assert_int_eq(kc_accuracy(c, cl, z.h, y.h, ix.h, nidx, cnt.h), INCA_OK);
            ck_assert_int_eq(kc_accuracy(d, cl, z.d, y.d, ix.d, nidx, cnt.d), INCA_OK);
        }
        int64_t *k = tb_get(d, &cnt), *k0 = cnt.h;
        ck_assert_msg(k[0] == k0[0] && k[1] == k0[1] && k0[1] > 0, "accuracy counts %lld/%lld vs %lld/%lld",
                      (long long)k[0], (long long)k[1], (long long)k0[0], (long long)k0[1]);
        free(k);
        /* an index outside the rows: NaN on both */
        idx[5] = rows;
        tb_t bad = tb_new(d, idx, (size_t)nidx * 8);
        kc_softmax_xent(c, rows, cl, z.h, y.h, bad.h, nidx, NULL, NULL, loss.h);
        ck_assert_int_eq(kc_softmax_xent(d, rows, cl, z.d, y.d, bad.d, nidx, NULL, NULL, loss.d), INCA_OK);
        l = tb_get(d, &loss);
        ck_assert(isnan(*l) && isnan(*(double *)loss.h));
        free(l);
        tb_free(d, &z), tb_free(d, &lp), tb_free(d, &dl), tb_free(d, &y), tb_free(d, &ix), tb_free(d, &loss);
        tb_free(d, &cnt), tb_free(d, &bad);
        free(yl), free(idx);
    }
    const int64_t n = 70001;
    tb_t w = tb_f(d, n, 1, 1.0f), g = tb_f(d, n, 2, 0.1f), m = tb_f(d, n, 3, 0.01f), v = tb_new(d, NULL, (size_t)n * 4);
    for (int t = 1; t <= 3; t++) {
        kern_adam_t hp = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 5e-4, .adamw = t == 2};
        hp.step_size = hp.lr / (1.0 - pow(hp.beta1, t));
        hp.sbc2 = sqrt(1.0 - pow(hp.beta2, t));
        kc_adam(c, n, w.h, g.h, m.h, v.h, &hp);
        ck_assert_int_eq(kc_adam(d, n, w.d, g.d, m.d, v.d, &hp), INCA_OK);
    }
    tb_check(d, &w, n, 1e-5, "adam w");
    tb_check(d, &m, n, 1e-5, "adam m");
    tb_check(d, &v, n, 1e-5, "adam v");
    tb_free(d, &w), tb_free(d, &g), tb_free(d, &m), tb_free(d, &v);
    kc_free(&d);
}
END_TEST

START_TEST(row_tables_and_encoding) {
    kern_ctx_t *d = dev_open(0, 0), *c = kc_cpu();
    const int64_t fs[] = {1, 7, 64, 256}, n = 300, m = 120;
    int64_t ids[120];
    for (int64_t i = 0; i < m; i++) ids[i] = (i * 7 + 11) % n;   /* distinct: 7 is prime to 300 */
    for (int fi = 0; fi < 4; fi++)
        for (int dt = 0; dt < 2; dt++) {
            const int64_t f = fs[fi];
            const kern_dtype_t ty = dt ? KERN_BF16 : KERN_F32;
            const size_t es = dt ? 2 : 4;
            tb_t src = tb_f(d, n * f, 600 + fi, 4.0f), tab = tb_new(d, NULL, (size_t)(n * f) * es);
            tb_t id = tb_new(d, ids, sizeof ids), in = tb_f(d, m * f, 700 + fi, 4.0f);
            tb_t out = tb_new(d, NULL, (size_t)(m * f) * 4), push = tb_f(d, m * f, 800 + fi, 4.0f);
            kc_encode(c, ty, n * f, src.h, tab.h), kc_encode(d, ty, n * f, src.d, tab.d);
            tb_check_bytes(d, &tab, "encode");
            kc_decode(c, ty, n * f, tab.h, src.h), kc_decode(d, ty, n * f, tab.d, src.d);
            tb_check(d, &src, n * f, -1, "decode");
            kc_gather_rows(c, ty, tab.h, f, id.h, 0, m, out.h), kc_gather_rows(d, ty, tab.d, f, id.d, 0, m, out.d);
            tb_check(d, &out, m * f, -1, "gather_rows ids");
            kc_gather_rows(c, ty, tab.h, f, NULL, 17, m, out.h), kc_gather_rows(d, ty, tab.d, f, NULL, 17, m, out.d);
            tb_check(d, &out, m * f, -1, "gather_rows range");
            kc_scatter_rows(c, ty, tab.h, f, id.h, 0, m, in.h), kc_scatter_rows(d, ty, tab.d, f, id.d, 0, m, in.d);
            tb_check_bytes(d, &tab, "scatter_rows ids");
            kc_scatter_rows(c, ty, tab.h, f, NULL, 3, m, in.h), kc_scatter_rows(d, ty, tab.d, f, NULL, 3, m, in.d);
            tb_check_bytes(d, &tab, "scatter_rows range");
            kc_sub_rows(c, ty, tab.h, f, id.h, m, push.h, out.h, NULL);
            kc_sub_rows(d, ty, tab.d, f, id.d, m, push.d, out.d, NULL);
            tb_check(d, &out, m * f, -1, "sub_rows");
            kc_sub_rows(c, ty, tab.h, f, id.h, m, in.h, out.h, push.h);
            kc_sub_rows(d, ty, tab.d, f, id.d, m, in.d, out.d, push.d);
            tb_check(d, &out, m * f, -1, "sub_rows with push (out)");
            tb_check_bytes(d, &tab, "sub_rows with push (table)");
            tb_free(d, &src), tb_free(d, &tab), tb_free(d, &id), tb_free(d, &in), tb_free(d, &out), tb_free(d, &push);
        }
    kc_free(&d);
}
END_TEST

/* kc_create in a child process: CUDA is never initialised before Check forks the tests */
static int device_answers(void) {
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        kern_ctx_opts_t o = {.device = dev_name()};
        kern_ctx_t *d = NULL;
        if (kc_create(&o, &d) != INCA_OK) {
            _exit(tu_gpu_unavailable("test_backend_ops", inca_errmsg()) == 77 ? 77 : 1);
        }
        printf("test_backend_ops: %s\n", kc_describe(d));
        fflush(stdout);
        kc_free(&d);
        _exit(0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return 1;
    return WEXITSTATUS(st);   /* 0: it answers; 77: skip; 1: a GPU that should have answered */
}

int main(void) {
    const int answers = device_answers();
    if (answers != 0) return answers;
    Suite *s = suite_create("backend_ops");
    TCase *tc = tcase_create("device_vs_cpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, memory_and_ordering);
    tcase_add_test(tc, spmm_all_shapes);
    tcase_add_test(tc, spmm_deterministic_and_reset);
    tcase_add_test(tc, gemm_all_transposes);
    tcase_add_test(tc, elementwise_ops);
    tcase_add_test(tc, batchnorm_ops);
    tcase_add_test(tc, loss_accuracy_adam);
    tcase_add_test(tc, row_tables_and_encoding);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
