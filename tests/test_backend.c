/* Tests of the kernel table (kernels/backend.h) on the CPU: context creation and the --device
 * rule (cpu, auto with its fallback reason, cuda refused with the CUDA error's text when no device
 * answers, unknown names), every op of the CPU table bit-identical to the kernels/kernels.h
 * function it promises to run, matrix handles (capacity, replacement values, rows views), the
 * accuracy counts accumulating, a model on an explicit context equal to the default one, and the
 * CLI's --device handling end to end. */
#include "kernels/backend.h"
#include "kernels/profile.h"
#include "nn/model.h"
#include "nn/layer.h"
#include "core/rng.h"
#include "core/status.h"
#include "tests/testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static float *rnd(int64_t n, uint64_t seed) {
    rng_t r;
    rng_seed(&r, seed);
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    ck_assert(p);
    for (int64_t i = 0; i < n; i++) p[i] = (float)(2.0 * rng_uniform(&r) - 1.0);
    return p;
}
static float *fdup(const float *a, int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    ck_assert(p);
    memcpy(p, a, (size_t)n * sizeof(float));
    return p;
}
#define SAME(a, b, n) ck_assert_msg(memcmp((a), (b), (size_t)(n) * sizeof(float)) == 0, "bits differ: %s", #a)

/* a small random CSR (sorted unique columns per row, about a third of rows empty) */
static csr_t rnd_csr(int64_t rows, int64_t cols, uint64_t seed) {
    rng_t r;
    rng_seed(&r, seed);
    csr_t a = {.n_rows = rows, .n_cols = cols};
    a.rowptr = calloc((size_t)rows + 1, sizeof(int64_t));
    a.col = malloc((size_t)(rows * cols) * sizeof(int32_t));
    a.val = malloc((size_t)(rows * cols) * sizeof(float));
    ck_assert(a.rowptr && a.col && a.val);
    for (int64_t i = 0; i < rows; i++) {
        const int empty = rng_uniform(&r) < 0.33;
        for (int64_t j = 0; j < cols && !empty; j++)
            if (rng_uniform(&r) < 0.3) {
                a.col[a.nnz] = (int32_t)j;
                a.val[a.nnz++] = (float)rng_uniform(&r);
            }
        a.rowptr[i + 1] = a.nnz;
    }
    return a;
}
static void free_csr(csr_t *a) {
    free(a->rowptr);
    free(a->col);
    free(a->val);
}

START_TEST(context_device_rule) {
    kern_ctx_t *c = NULL;
    ck_assert_int_eq(kc_create(NULL, &c), INCA_OK);
    ck_assert(kc_device(c) == KERN_DEV_CPU && strcmp(kc_name(c), "cpu") == 0 && kc_fallback(c) == NULL);
    kc_free(&c);
    ck_assert(c == NULL);
    kc_free(&c);   /* NULL-safe */

    kern_ctx_opts_t o = {.device = "tpu"};
    inca_err_clear();
    ck_assert_int_eq(kc_create(&o, &c), INCA_EINVAL);
    ck_assert(c == NULL && strstr(inca_errmsg(), "'tpu'") && strstr(inca_errmsg(), "cpu, cuda or auto"));

    /* cuda: either a device answers (a GPU machine) or the call fails with exit status 1 and
     * says why; auto then falls back to the CPU with that reason */
    o.device = "cuda";
    inca_err_clear();
    const int rc = kc_create(&o, &c);
    if (rc == INCA_OK) {
        ck_assert(kc_device(c) == KERN_DEV_CUDA && strcmp(kc_name(c), "cuda") == 0);
        kc_free(&c);
        return;
    }
    ck_assert_int_eq(rc, INCA_ERR);
    ck_assert_int_eq(inca_exit_code(rc), 1);
    char why[256];
    snprintf(why, sizeof why, "%s", inca_errmsg());
    ck_assert_msg(strstr(why, "CUDA") || strstr(why, "cuda"), "no CUDA in: %s", why);
    o.device = "auto";
    ck_assert_int_eq(kc_create(&o, &c), INCA_OK);
    ck_assert(kc_device(c) == KERN_DEV_CPU && kc_fallback(c) && strstr(why, kc_fallback(c)));
    kc_free(&c);

    /* the shared CPU context: freeing it is a no-op */
    kern_ctx_t *s = kc_cpu();
    ck_assert(s == kc_cpu() && kc_device(s) == KERN_DEV_CPU);
    kc_free(&s);
    ck_assert(s == NULL && kc_cpu()->ops != NULL);
}
END_TEST

/* issue 29: cuda:N names a device (a malformed N is refused before any device is asked);
 * kc_sibling makes a context of the same kind (thread ranks' own contexts); collectives between
 * devices are refused where there is no NCCL, naming the context */
START_TEST(context_siblings_and_device_numbers) {
    kern_ctx_t *c = NULL, *d = NULL;
    static const char *const bad[] = {"cuda:", "cuda:x", "cuda:-1", "cuda:1z", "cuda:99999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        inca_err_clear();
        ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = bad[i]}, &c), INCA_EINVAL);
        ck_assert_msg(c == NULL && strstr(inca_errmsg(), "cuda:N"), "%s: %s", bad[i], inca_errmsg());
    }
    inca_err_clear();
    if (kc_create(&(kern_ctx_opts_t){.device = "cuda:0"}, &c) == INCA_OK) {   /* a GPU machine */
        ck_assert(kc_device(c) == KERN_DEV_CUDA);
        kc_free(&c);
    } else {
        ck_assert_msg(strstr(inca_errmsg(), "--device cuda"), "%s", inca_errmsg());
        inca_err_clear();
    }
    static const char *const kinds[] = {"cpu", "emu"};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = kinds[k]}, &c), INCA_OK);
        ck_assert_int_eq(kc_sibling(c, &d), INCA_OK);
        ck_assert(d != c && kc_device(d) == kc_device(c) && strcmp(kc_name(d), kc_name(c)) == 0);
        ck_assert(!kc_has_coll(d));
        char uid[64];
        ck_assert_int_eq(kc_device_uid(d, uid, sizeof uid), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), "NCCL") && strstr(inca_errmsg(), kc_describe(d)), "%s", inca_errmsg());
        inca_err_clear();
        float x = 1.f;
        ck_assert_int_eq(kc_coll_sum_f32(d, &x, &x, 1), INCA_EINVAL);
        inca_err_clear();
        const float *snd[2] = {&x, &x};
        float *rcv[2] = {&x, &x};
        const int64_t len[2] = {0, 1};
        ck_assert_int_eq(kc_coll_sum_f32_many(d, 2, snd, rcv, len), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), "NCCL"), "%s", inca_errmsg());
        inca_err_clear();
        kc_free(&d);
        kc_free(&c);
    }
    ck_assert_int_eq(kc_sibling(kc_cpu(), &d), INCA_OK);   /* the shared context's sibling: a CPU context */
    ck_assert(d != kc_cpu() && kc_device(d) == KERN_DEV_CPU);
    kc_free(&d);
}
END_TEST

START_TEST(memory_ops) {
    kern_ctx_t *c = kc_cpu();
    float *d = NULL;
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, 64 * sizeof(float), (void **)&d), INCA_OK);
    for (int i = 0; i < 64; i++) ck_assert(d[i] == 0.0f);   /* zeroed */
    float *h = rnd(64, 1);
    ck_assert_int_eq(kc_copy(c, d, h, 64 * sizeof(float), KERN_H2D, KERN_STREAM_COPY), INCA_OK);
    SAME(d, h, 64);
    ck_assert_int_eq(kc_zero(c, d + 8, 8 * sizeof(float), KERN_STREAM_COMPUTE), INCA_OK);
    for (int i = 0; i < 64; i++) ck_assert(d[i] == (i >= 8 && i < 16 ? 0.0f : h[i]));
    ck_assert_int_eq(kc_event_record(c, 0, KERN_STREAM_COPY), INCA_OK);
    ck_assert_int_eq(kc_stream_wait(c, KERN_STREAM_COMPUTE, 0), INCA_OK);
    inca_err_clear();
    ck_assert_int_eq(kc_event_record(c, KERN_NEVENTS, 0), INCA_EINVAL);
    ck_assert_int_eq(kc_stream_wait(c, KERN_NSTREAMS, 0), INCA_EINVAL);
    ck_assert_int_eq(kc_sync(c), INCA_OK);
    kc_release(c, KERN_MEM_DEVICE, d);
    kc_release(c, KERN_MEM_PINNED, NULL);
    free(h);
}
END_TEST

/* Every op of the CPU table gives the bits of the kernels/kernels.h function it wraps. */
START_TEST(cpu_table_is_the_cpu_kernels) {
    kern_ctx_t *c = kc_cpu();
    const int64_t n = 37, f = 5, k = 6, N = n * f;
    float *x = rnd(N, 2), *y0 = rnd(N, 3), *y1 = fdup(y0, N), *w = rnd(f * k, 4), *b = rnd(f, 5);
    float *o0 = rnd(n * k, 6), *o1 = fdup(o0, n * k);
    /* gemm, axpby, sub, bias, relu */
    kern_gemm(0, 0, n, k, f, 0.5f, x, f, w, k, 0.25f, o0, k);
    ck_assert_int_eq(kc_gemm(c, 0, 0, n, k, f, 0.5f, x, f, w, k, 0.25f, o1, k), INCA_OK);
    SAME(o0, o1, n * k);
    kern_axpby(N, 0.3f, x, -1.5f, y0);
    kc_axpby(c, N, 0.3f, x, -1.5f, y1);
    SAME(y0, y1, N);
    kern_sub(N, x, y0, o0);
    kc_sub(c, N, x, y1, o1);
    SAME(o0, o1, N);
    for (int64_t i = 0; i < N; i++) ck_assert(o0[i] == x[i] - y0[i]);
    kern_add_bias(n, f, b, y0);
    kc_add_bias(c, n, f, b, y1);
    SAME(y0, y1, N);
    kern_bias_grad(n, f, x, o0);
    kc_bias_grad(c, n, f, x, o1);
    SAME(o0, o1, f);
    kern_relu(N, y0, o0);
    kc_relu(c, N, y1, o1);
    SAME(o0, o1, N);
    kern_relu_grad(N, o0, x, y0);
    kc_relu_grad(c, N, o1, x, y1);
    SAME(y0, y1, N);
    /* dropout and its gradient, masks included */
    uint8_t m0[185], m1[185];
    kern_dropout(N, 0.4f, 9, 3, x, o0, m0);
    kc_dropout(c, N, 0.4f, 9, 3, x, o1, m1);
    SAME(o0, o1, N);
    ck_assert(memcmp(m0, m1, (size_t)N) == 0);
    kern_dropout_grad(N, 0.4f, m0, x, y0);
    kc_dropout_grad(c, N, 0.4f, m1, x, y1);
    SAME(y0, y1, N);
    /* BatchNorm forward (train and eval) and backward */
    float *z0 = fdup(x, N), *z1 = fdup(x, N), *g = rnd(f, 7), *be = rnd(f, 8);
    float is0[5], is1[5], rm0[5] = {0}, rm1[5] = {0}, rv0[5] = {1, 1, 1, 1, 1}, rv1[5] = {1, 1, 1, 1, 1};
    kern_bn_forward(n, f, 1, z0, g, be, is0, rm0, rv0, y0);
    kc_bn_forward(c, n, f, 1, z1, g, be, is1, rm1, rv1, y1);
    SAME(z0, z1, N);
    SAME(y0, y1, N);
    SAME(is0, is1, f);
    SAME(rm0, rm1, f);
    SAME(rv0, rv1, f);
    float gg0[5], gg1[5], gb0[5], gb1[5];
    kern_bn_backward(n, f, g, z0, is0, x, o0, gg0, gb0);
    kc_bn_backward(c, n, f, g, z1, is1, x, o1, gg1, gb1);
    SAME(o0, o1, N);
    SAME(gg0, gg1, f);
    SAME(gb0, gb1, f);
    kern_bn_forward(n, f, 0, z0, g, be, is0, rm0, rv0, y0);
    kc_bn_forward(c, n, f, 0, z1, g, be, is1, rm1, rv1, y1);
    SAME(y0, y1, N);
    /* softmax-xent (loss into context memory) and accuracy counts, accumulated */
    int32_t lab[37];
    int64_t idx[37];
    for (int i = 0; i < n; i++) {
        lab[i] = i % 7 == 3 ? -1 : i % (int)f;
        idx[i] = (i * 11) % n;
    }
    const double l0 = kern_softmax_xent(n, f, x, lab, idx, 30, o0, y0);
    double l1 = -1;
    ck_assert_int_eq(kc_softmax_xent(c, n, f, x, lab, idx, 30, o1, y1, &l1), INCA_OK);
    ck_assert(l0 == l1 && l0 > 0);
    SAME(o0, o1, N);
    SAME(y0, y1, N);
    int64_t counts[2] = {0, 0};
    kc_accuracy(c, f, x, lab, idx, 30, counts);
    kc_accuracy(c, f, x, lab, idx + 30, 7, counts);
    int64_t cor, cnt, cor2, cnt2;
    kern_accuracy_counts(f, x, lab, idx, 30, &cor, &cnt);
    kern_accuracy_counts(f, x, lab, idx + 30, 7, &cor2, &cnt2);
    ck_assert(counts[0] == cor + cor2 && counts[1] == cnt + cnt2 && cnt + cnt2 > 0);
    ck_assert(fabs((double)counts[0] / (double)counts[1] - kern_accuracy(f, x, lab, idx, 37)) < 1e-15);
    /* per-class counts, accumulated the same way; their diagonal sums to the correct count */
    int64_t cls[3 * 64] = {0}, ref[3 * 64] = {0};
    ck_assert(f <= 64);
    ck_assert_int_eq(kc_class_counts(c, f, x, lab, idx, 30, cls), INCA_OK);
    ck_assert_int_eq(kc_class_counts(c, f, x, lab, idx + 30, 7, cls), INCA_OK);
    kern_class_counts(f, x, lab, idx, 37, ref);
    int64_t diag = 0, tru = 0, pred = 0;
    for (int64_t k = 0; k < f; k++) {
        ck_assert(cls[k] == ref[k] && cls[f + k] == ref[f + k] && cls[2 * f + k] == ref[2 * f + k]);
        tru += cls[k];
        pred += cls[f + k];
        diag += cls[2 * f + k];
    }
    ck_assert(diag == counts[0] && tru == counts[1] && pred == counts[1]);
    /* Adam */
    float *w0 = rnd(N, 10), *w1 = fdup(w0, N), *mm0 = rnd(N, 11), *mm1 = fdup(mm0, N), *v0 = rnd(N, 12);
    for (int64_t i = 0; i < N; i++) v0[i] = fabsf(v0[i]);
    float *v1 = fdup(v0, N);
    const kern_adam_t hp = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 5e-4,
                            .step_size = 0.01 / (1 - 0.9), .sbc2 = sqrt(1 - 0.999), .adamw = 0};
    kern_adam(N, w0, x, mm0, v0, &hp);
    kc_adam(c, N, w1, x, mm1, v1, &hp);
    SAME(w0, w1, N);
    SAME(mm0, mm1, N);
    SAME(v0, v1, N);
    free(w0); free(w1); free(mm0); free(mm1); free(v0); free(v1);
    free(z0); free(z1); free(g); free(be);
    free(x); free(y0); free(y1); free(w); free(b); free(o0); free(o1);
}
END_TEST

/* The fused sweeps (issue 31) against the two ops each replaces, bit for bit: past the size the
 * kernels go parallel, every dropout rate's special case, without a mask, and in place. */
/* ReLU passes NaN (as PyTorch's does): a diverged pre-activation must reach the loss, whose
 * finiteness check stops the run, not turn into zeros and a quietly constant model */
START_TEST(relu_passes_nan) {
    const float x[4] = {NAN, -1.0f, 2.0f, -0.0f}, b[2] = {0.0f, NAN};
    float y[4], yb[4];
    kern_relu(4, x, y);
    ck_assert(isnan(y[0]) && y[1] == 0.0f && y[2] == 2.0f && y[3] == 0.0f);
    ck_assert_int_eq(kc_relu(kc_cpu(), 4, x, yb), INCA_OK);
    ck_assert(isnan(yb[0]) && yb[1] == 0.0f && yb[2] == 2.0f);
    kern_bias_relu(2, 2, b, x, y);   /* rows {NaN, -1}, {2, -0}; the second column's bias is NaN */
    ck_assert(isnan(y[0]) && isnan(y[1]) && y[2] == 2.0f && isnan(y[3]));
}
END_TEST

START_TEST(fused_sweeps_are_the_ops_they_replace) {
    kern_ctx_t *c = kc_cpu();
    const int64_t n = 301, f = 130, N = n * f;   /* N > 32768: the threaded loops */
    float *z = rnd(N, 21), *b = rnd(f, 22), *dy = rnd(N, 23), *t = rnd(N, 24), *y0 = rnd(N, 25), *y1 = rnd(N, 26);
    float *d0 = rnd(N, 27), *d1 = rnd(N, 28), *zc = fdup(z, N);
    uint8_t *mask = malloc((size_t)N);
    ck_assert_ptr_nonnull(mask);
    kern_add_bias(n, f, b, zc);
    kern_relu(N, zc, y0);
    ck_assert_int_eq(kc_bias_relu(c, n, f, b, z, y1), INCA_OK);
    SAME(y0, y1, N);
    int pos = 0;
    for (int64_t i = 0; i < N; i++) pos += y1[i] > 0;
    ck_assert(pos > N / 4 && pos < 3 * N / 4);   /* both sides of the ReLU are exercised */
    const float ps[] = {0.5f, 0.1f, 0.0f, 1.0f};
    for (int pi = 0; pi < 4; pi++) {
        kern_dropout(N, ps[pi], 5, (uint64_t)pi, z, t, mask);
        kern_dropout_grad(N, ps[pi], mask, dy, t);
        kern_relu_grad(N, y0, t, d0);
        ck_assert_int_eq(kc_relu_drop_grad(c, N, y0, dy, ps[pi], mask, d1), INCA_OK);
        ck_assert_msg(memcmp(d0, d1, (size_t)N * sizeof(float)) == 0, "relu_drop_grad p=%g", (double)ps[pi]);
        memcpy(d1, dy, (size_t)N * sizeof(float));   /* in place: dx = dy */
        ck_assert_int_eq(kc_relu_drop_grad(c, N, y0, d1, ps[pi], mask, d1), INCA_OK);
        SAME(d0, d1, N);
    }
    kern_relu_grad(N, y0, dy, d0);   /* no mask: the ReLU gradient alone */
    ck_assert_int_eq(kc_relu_drop_grad(c, N, y0, dy, 0.5f, NULL, d1), INCA_OK);
    SAME(d0, d1, N);
    free(mask);
    free(z), free(b), free(dy), free(t), free(y0), free(y1), free(d0), free(d1), free(zc);
}
END_TEST

START_TEST(row_tables_both_types) {
    kern_ctx_t *c = kc_cpu();
    const int64_t rows = 20, f = 6, m = 5;
    const int64_t ids[5] = {7, 0, 19, 3, 11};
    float *in = rnd(m * f, 20), *push = rnd(m * f, 21), *o0 = rnd(m * f, 22), *o1 = fdup(o0, m * f);
    for (int dt = KERN_F32; dt <= KERN_BF16; dt++) {
        const size_t es = dt == KERN_F32 ? 4 : 2;
        float *src = rnd(rows * f, 23);
        void *t0 = calloc((size_t)(rows * f), es), *t1 = calloc((size_t)(rows * f), es);
        ck_assert(t0 && t1);
        kern_rows_scatter(dt, t0, f, NULL, 0, rows, src);   /* the whole table */
        kc_encode(c, dt, rows * f, src, t1);                /* encode = one long row */
        ck_assert(memcmp(t0, t1, (size_t)(rows * f) * es) == 0);
        kern_rows_gather(dt, t0, f, ids, 0, m, o0);
        kc_gather_rows(c, dt, t1, f, ids, 0, m, o1);
        SAME(o0, o1, m * f);
        for (int64_t i = 0; i < m; i++)   /* an independent expectation: the row, rounded */
            for (int64_t j = 0; j < f; j++) {
                const float e = src[ids[i] * f + j];
                ck_assert(o0[i * f + j] == (dt == KERN_F32 ? e : kern_bf16_to_f32(kern_f32_to_bf16(e))));
            }
        kern_rows_gather(dt, t0, f, NULL, 4, m, o0);   /* a range */
        kc_gather_rows(c, dt, t1, f, NULL, 4, m, o1);
        SAME(o0, o1, m * f);
        kern_rows_sub(dt, t0, f, ids, m, in, o0, push);
        kc_sub_rows(c, dt, t1, f, ids, m, in, o1, push);
        SAME(o0, o1, m * f);
        ck_assert(memcmp(t0, t1, (size_t)(rows * f) * es) == 0);
        kern_rows_scatter(dt, t0, f, ids, 0, m, in);
        kc_scatter_rows(c, dt, t1, f, ids, 0, m, in);
        ck_assert(memcmp(t0, t1, (size_t)(rows * f) * es) == 0);
        float *d0 = malloc((size_t)(rows * f) * sizeof(float));
        ck_assert(d0);
        kc_decode(c, dt, rows * f, t1, d0);               /* decode = gather of every row */
        kern_rows_gather(dt, t0, f, NULL, 0, rows, src);  /* src reused as the output */
        SAME(d0, src, rows * f);
        free(d0);
        free(src);
        free(t0);
        free(t1);
    }
    free(in); free(push); free(o0); free(o1);
}
END_TEST

START_TEST(matrices) {
    kern_ctx_t *c = kc_cpu();
    csr_t a = rnd_csr(23, 17, 30);
    const int64_t f = 4;
    float *x = rnd(17 * f, 31), *y0 = rnd(23 * f, 32), *y1 = fdup(y0, 23 * f);
    kern_mat_t *m = NULL, *small = NULL, *v = NULL;
    ck_assert_int_eq(kc_mat_upload(c, &a, &m), INCA_OK);
    ck_assert(kc_mat_rows(m) == 23 && kc_mat_nnz(m) == a.nnz);
    kern_spmm(&a, x, f, 0.5f, 2.0f, y0);
    ck_assert_int_eq(kc_spmm(c, m, NULL, x, f, 0.5f, 2.0f, y1), INCA_OK);
    SAME(y0, y1, 23 * f);
    /* replacement values: the same as a matrix holding them */
    float *vals = rnd(a.nnz, 33);
    csr_t b = a;
    b.val = vals;
    kern_spmm(&b, x, f, 1.0f, 0.0f, y0);
    kc_spmm(c, m, vals, x, f, 1.0f, 0.0f, y1);
    SAME(y0, y1, 23 * f);
    /* spmm_base and bf16 */
    float *base = rnd(9 * f, 34);
    int64_t ids[23];
    for (int i = 0; i < 23; i++) ids[i] = (i * 5) % 9;
    kern_spmm_base(&a, x, f, base, 9, ids, y0);
    ck_assert_int_eq(kc_spmm_base(c, m, x, f, base, 9, ids, y1), INCA_OK);
    SAME(y0, y1, 23 * f);
    ids[3] = 9;   /* out of the base's rows: refused, naming the row */
    inca_err_clear();
    ck_assert_int_eq(kc_spmm_base(c, m, x, f, base, 9, ids, y1), INCA_EINVAL);
    uint16_t xb[68];
    kc_encode(c, KERN_BF16, 17 * f, x, xb);
    kern_spmm_bf16(&a, xb, f, y0);
    kc_spmm_bf16(c, m, xb, f, y1);
    SAME(y0, y1, 23 * f);
    /* rows view */
    ck_assert_int_eq(kc_mat_rows_view(c, m, 5, 14, &v), INCA_OK);
    ck_assert(kc_mat_rows(v) == 9);
    csr_t rv = csr_row_view(&a, 5, 14);
    kern_spmm(&rv, x, f, 1.0f, 0.0f, y0);
    kc_spmm(c, v, NULL, x, f, 1.0f, 0.0f, y1);
    SAME(y0, y1, 9 * f);
    kern_mat_t *vv = NULL;
    inca_err_clear();
    ck_assert_int_eq(kc_mat_rows_view(c, v, 0, 2, &vv), INCA_EINVAL);   /* no views of views */
    ck_assert_int_eq(kc_mat_rows_view(c, m, 4, 24, &vv), INCA_EINVAL);
    ck_assert(vv == NULL);
    /* capacity: a matrix larger than the handle is refused, naming both */
    ck_assert_int_eq(kc_mat_create(c, 10, 17, 30, &small), INCA_OK);
    inca_err_clear();
    ck_assert_int_eq(kc_mat_set(c, small, &a, KERN_STREAM_COPY), INCA_EINVAL);
    ck_assert(strstr(inca_errmsg(), "does not fit") != NULL);
    csr_t top = csr_row_view(&a, 0, 3);
    ck_assert_int_le(top.nnz, 30);   /* fits the handle: the set below must happen */
    ck_assert_int_eq(kc_mat_set(c, small, &top, KERN_STREAM_COPY), INCA_OK);
    ck_assert(kc_mat_rows(small) == 3 && kc_mat_nnz(small) == top.nnz);
    kc_mat_free(c, &v);
    kc_mat_free(c, &small);
    kc_mat_free(c, &m);
    ck_assert(m == NULL);
    free(vals); free(base); free(x); free(y0); free(y1);
    free_csr(&a);
}
END_TEST

/* A model built on an explicit CPU context computes the bits of the default one (the same
 * table), with BatchNorm and dropout on. */
START_TEST(model_on_context) {
    model_config_t cfg;
    model_config_default(&cfg);
    cfg.kind = NN_MLP;
    cfg.in_dim = 7;
    cfg.out_dim = 3;
    cfg.layers = 3;
    cfg.batchnorm = 1;
    cfg.seed = 4;
    kern_ctx_t *c = NULL;
    ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "cpu"}, &c), INCA_OK);
    model_t *m0 = NULL, *m1 = NULL;
    ck_assert_int_eq(model_create(&cfg, 16, &m0), INCA_OK);
    ck_assert_int_eq(model_create_on(&cfg, 16, c, &m1), INCA_OK);
    float *x = rnd(16 * 7, 40), *dl = rnd(16 * 3, 41);
    const float *l0, *l1;
    ck_assert_int_eq(model_forward(m0, 16, x, NULL, 1, 9, 2, &l0), INCA_OK);
    ck_assert_int_eq(model_forward(m1, 16, x, NULL, 1, 9, 2, &l1), INCA_OK);
    SAME(l0, l1, 16 * 3);
    ck_assert_int_eq(model_backward(m0, dl, NULL), INCA_OK);
    ck_assert_int_eq(model_backward(m1, dl, NULL), INCA_OK);
    for (int i = 0; i < model_nparams(m0); i++) {
        const nn_param_t *p0 = model_param(m0, i), *p1 = model_param(m1, i);
        SAME(p0->g, p1->g, p0->n);
        double s = 0;
        for (int64_t e = 0; e < p0->n; e++) s += fabs(p0->g[e]);
        ck_assert_msg(s > 0, "parameter %s has no gradient", p0->name);
    }
    model_free(&m0);
    model_free(&m1);
    kc_free(&c);
    free(x);
    free(dl);
}
END_TEST

/* The emulated device enforces a device's rules: ops refuse host pointers, copies check their
 * direction, and the host cannot touch device memory (a forked child that tries dies). */
START_TEST(emu_device_rules) {
    kern_ctx_t *c = NULL;
    ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "emu"}, &c), INCA_OK);
    ck_assert(kc_device(c) == KERN_DEV_EMU && strcmp(kc_name(c), "emu") == 0);
    float *d = NULL, *h = rnd(16, 50), back[16];
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, 16 * sizeof(float), (void **)&d), INCA_OK);
    inca_err_clear();
    ck_assert_int_eq(kc_relu(c, 16, h, d), INCA_EINVAL);   /* a host input */
    ck_assert(strstr(inca_errmsg(), "relu") && strstr(inca_errmsg(), "not device memory"));
    ck_assert_int_eq(kc_status(c), INCA_EINVAL);           /* sticky */
    kc_free(&c);
    /* the message names the argument that is host memory (it named the first, or read past its
     * list of names), and an empty slice at a block's end is no error (CUDA takes it) */
    ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "emu"}, &c), INCA_OK);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, 16 * sizeof(float), (void **)&d), INCA_OK);
    ck_assert_int_eq(kc_axpby(c, 0, 1.f, d + 16, 0.f, d + 16), INCA_OK);
    ck_assert_int_eq(kc_status(c), INCA_OK);
    inca_err_clear();
    ck_assert_int_eq(kc_axpby(c, 16, 1.f, d, 0.f, h), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "argument 2 (y,"), "%s", inca_errmsg());
    kc_free(&c);
    ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "emu"}, &c), INCA_OK);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, 16 * sizeof(float), (void **)&d), INCA_OK);
    ck_assert_int_eq(kc_copy(c, d, h, 16 * sizeof(float), KERN_D2H, 0), INCA_EINVAL);   /* wrong direction */
    kc_free(&c);
    ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "emu"}, &c), INCA_OK);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, 16 * sizeof(float), (void **)&d), INCA_OK);
    ck_assert_int_eq(kc_copy(c, d, h, 16 * sizeof(float), KERN_H2D, 0), INCA_OK);
    ck_assert_int_eq(kc_relu(c, 16, d, d), INCA_OK);
    ck_assert_int_eq(kc_copy(c, back, d, sizeof back, KERN_D2H, 0), INCA_OK);
    for (int i = 0; i < 16; i++) ck_assert(back[i] == (h[i] > 0 ? h[i] : 0.0f));
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        volatile float v = d[3];   /* a host read of device memory */
        (void)v;
        _exit(0);
    }
    int st = 0;
    ck_assert(waitpid(pid, &st, 0) == pid);
    ck_assert_msg(!(WIFEXITED(st) && WEXITSTATUS(st) == 0), "the host read device memory");
    kc_release(c, KERN_MEM_DEVICE, d);
    ck_assert_int_eq(kern_emu_live_blocks(c), 0);
    ck_assert_int_eq(kc_status(c), INCA_OK);
    kc_free(&c);
    free(h);
}
END_TEST

/* Every model kind on the emulated device: the CPU's bits (logits and gradients copied back),
 * sparse input included, and nothing left allocated after model_free. */
START_TEST(model_on_emu_device) {
    csr_t a = rnd_csr(24, 24, 60), xs = rnd_csr(24, 40, 61);
    for (int kind = NN_MLP; kind < NN_KIND_COUNT; kind++)
        for (int sparse = 0; sparse < 2; sparse++) {
            model_config_t cfg;
            model_config_default(&cfg);
            cfg.kind = kind;
            cfg.in_dim = 40;
            cfg.out_dim = 3;
            cfg.hidden = 8;
            cfg.layers = 2;
            cfg.K = 3;
            cfg.batchnorm = kind != NN_GCNII && kind != NN_APPNP;
            cfg.transform_first = sparse;
            cfg.seed = 5;
            kern_ctx_t *c = NULL;
            ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "emu"}, &c), INCA_OK);
            model_t *m0 = NULL, *m1 = NULL;
            ck_assert_int_eq(model_create(&cfg, 24, &m0), INCA_OK);
            ck_assert_int_eq(model_create_on(&cfg, 24, c, &m1), INCA_OK);
            kern_mat_t *am = NULL;
            ck_assert_int_eq(kc_mat_upload(c, &a, &am), INCA_OK);
            nn_agg_full_t f0;
            nn_agg_t g0;
            nn_agg_full_init(&g0, &f0, &a, NULL);
            nn_agg_dev_t f1;
            nn_agg_t g1;
            nn_agg_dev_init(&g1, &f1, c, am, NULL);
            float *x = rnd(24 * 40, 62), *dl = rnd(24 * 3, 63), *xd = NULL, *dld = NULL, lg[72], gb[8 * 40 * 2];
            ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, sizeof(float) * 24 * 40, (void **)&xd), INCA_OK);
            ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, sizeof(float) * 24 * 3, (void **)&dld), INCA_OK);
            kc_copy(c, xd, x, sizeof(float) * 24 * 40, KERN_H2D, 0);
            kc_copy(c, dld, dl, sizeof(float) * 24 * 3, KERN_H2D, 0);
            if (sparse) {   /* transform-first layers take the sparse input for every kind */
                ck_assert_int_eq(model_set_sparse_input(m0, &xs), INCA_OK);
                ck_assert_int_eq(model_set_sparse_input(m1, &xs), INCA_OK);
            }
            const int use_sparse = sparse;
            inca_err_clear();
            const float *l0, *l1;
            ck_assert_int_eq(model_forward(m0, 24, use_sparse ? NULL : x, &g0, 1, 3, 1, &l0), INCA_OK);
            ck_assert_int_eq(model_forward(m1, 24, use_sparse ? NULL : xd, &g1, 1, 3, 1, &l1), INCA_OK);
            ck_assert_int_eq(kc_copy(c, lg, l1, sizeof lg, KERN_D2H, 0), INCA_OK);
            SAME(l0, lg, 72);
            ck_assert_int_eq(model_backward(m0, dl, &g0), INCA_OK);
            ck_assert_int_eq(model_backward(m1, dld, &g1), INCA_OK);
            for (int i = 0; i < model_nparams(m0); i++) {
                const nn_param_t *p0 = model_param(m0, i), *p1 = model_param(m1, i);
                ck_assert((size_t)p0->n <= sizeof gb / sizeof gb[0]);
                ck_assert_int_eq(kc_copy(c, gb, p1->g, sizeof(float) * (size_t)p0->n, KERN_D2H, 0), INCA_OK);
                ck_assert_msg(memcmp(p0->g, gb, sizeof(float) * (size_t)p0->n) == 0, "kind %d sparse %d: %s", kind,
                              sparse, p0->name);
            }
            model_free(&m0);
            model_free(&m1);
            kc_mat_free(c, &am);
            kc_release(c, KERN_MEM_DEVICE, xd);
            kc_release(c, KERN_MEM_DEVICE, dld);
            ck_assert_int_eq(kern_emu_live_blocks(c), 0);
            ck_assert_int_eq(kc_status(c), INCA_OK);
            kc_free(&c);
            free(x);
            free(dl);
        }
    free_csr(&a);
    free_csr(&xs);
}
END_TEST

/* --device through the CLI: auto trains on the CPU and says why on stderr; cuda without a
 * device exits 1 naming CUDA; an unknown device exits 2. */
START_TEST(cli_device_flag) {
    char *dir = tu_mkdtemp(), cmd[1024], *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "ingest --format ogb '%s/data/cora' --out '%s/cora'", tu_src(), dir);
    ck_assert_int_eq(tu_inca(cmd, NULL, NULL), 0);
    kern_ctx_t *c = NULL;
    const int has_gpu = kc_create(&(kern_ctx_opts_t){.device = "cuda"}, &c) == INCA_OK;
    kc_free(&c);
    snprintf(cmd, sizeof cmd, "train '%s/cora' --epochs 2 --device auto --json", dir);
    ck_assert_int_eq(tu_inca(cmd, &out, &err), 0);
    cJSON *j = tu_json_last(out);
    ck_assert_str_eq(tu_json_get(j, "device", cJSON_String)->valuestring, "cpu");
    if (!has_gpu) ck_assert_msg(err && strstr(err, "running on the CPU"), "stderr: %s", err ? err : "");
    cJSON_Delete(j);
    free(out);
    free(err);
    if (!has_gpu) {
        snprintf(cmd, sizeof cmd, "train '%s/cora' --epochs 2 --device cuda", dir);
        ck_assert_int_eq(tu_inca(cmd, &out, &err), 1);
        ck_assert_msg(err && strstr(err, "CUDA") && strchr(err, '\n') == strrchr(err, '\n'), "stderr: %s", err ? err : "");
        free(out);
        free(err);
    }
    snprintf(cmd, sizeof cmd, "train '%s/cora' --epochs 2 --device tpu", dir);
    ck_assert_int_eq(tu_inca(cmd, &out, &err), 2);
    ck_assert(err && strstr(err, "--device") && strstr(err, "tpu"));
    free(out);
    free(err);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* The op profile (kernels/profile.h, bench epoch --breakdown): counts by hand, on a private
 * context (kc_cpu() is shared); nothing counted once detached; the bench's JSON: six kinds whose
 * op time lies within the run's wall time (an invariant of the timing, not a speed claim). */
START_TEST(op_profile_counts) {
    kern_ctx_t *c = NULL;
    ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "cpu"}, &c), INCA_OK);
    kern_prof_t p;
    memset(&p, 0, sizeof p);
    kc_prof_attach(c, &p);
    csr_t a = rnd_csr(23, 17, 30);
    kern_mat_t *m = NULL;
    ck_assert_int_eq(kc_mat_upload(c, &a, &m), INCA_OK);
    float *x = rnd(17 * 6, 1), *y = rnd(23 * 6, 2), *w = rnd(6 * 5, 3), *z = rnd(23 * 5, 4);
    ck_assert_int_eq(kc_spmm(c, m, NULL, x, 6, 1.0f, 0.0f, y), INCA_OK);
    ck_assert_int_eq(kc_spmm(c, m, NULL, x, 6, 1.0f, 1.0f, y), INCA_OK);
    ck_assert_int_eq(kc_gemm(c, 0, 0, 23, 5, 6, 1.0f, y, 6, w, 5, 0.0f, z, 5), INCA_OK);
    ck_assert_int_eq(kc_relu(c, 23 * 5, z, z), INCA_OK);
    ck_assert_int_eq(kc_copy(c, y, x, 40, KERN_D2D, KERN_STREAM_COMPUTE), INCA_OK);
    kc_prof_attach(c, NULL);
    ck_assert_int_eq(kc_relu(c, 23 * 5, z, z), INCA_OK);   /* not counted */
    ck_assert_int_eq(p.calls[KPROF_SPMM], 2);
    ck_assert_int_eq(p.nwidths, 1);
    ck_assert_int_eq(p.width[0], 6);
    ck_assert_double_eq(p.gather_bytes[0], 2.0 * (double)a.nnz * 6 * 4);
    ck_assert_double_eq(p.stream_bytes[KPROF_SPMM], 23.0 * 6 * 4 * (1 + 2) + 2 * 8.0 * (double)a.nnz);
    ck_assert_int_eq(p.calls[KPROF_GEMM], 1);
    ck_assert_double_eq(p.flops[KPROF_GEMM], 2.0 * 23 * 5 * 6);
    ck_assert_int_eq(p.calls[KPROF_ELEMWISE], 1);
    ck_assert_double_eq(p.stream_bytes[KPROF_ELEMWISE], 23.0 * 5 * 4 * 2);
    ck_assert_int_eq(p.calls[KPROF_COPY], 1);
    ck_assert_double_eq(p.stream_bytes[KPROF_COPY], 80.0);
    for (int k = 0; k < KPROF_NKINDS; k++) ck_assert(p.seconds[k] >= 0);
    kc_mat_free(c, &m);
    kc_free(&c);
    free(x);
    free(y);
    free(w);
    free(z);
    free_csr(&a);
    char *dir = tu_mkdtemp(), cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "ingest --format ogb '%s/data/cora' --out '%s/cora' --quiet", tu_src(), dir);
    ck_assert_int_eq(tu_inca(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "bench epoch '%s/cora' --breakdown --methods full,incagg --epochs 3 --threads 1 --json", dir);
    ck_assert_int_eq(tu_inca(cmd, &out, NULL), 0);
    cJSON *v[4];
    const int n = tu_json_lines(out, v, 4);
    ck_assert_int_eq(n, 2);
    for (int i = 0; i < n; i++) {
        const cJSON *b = tu_json_get(v[i], "breakdown", cJSON_Object);
        double ops = 0;
        static const char *const kinds[] = {"gemm", "spmm", "elementwise", "loss", "optimiser", "copies"};
        for (int k = 0; k < 6; k++) ops += tu_json_dbl(tu_json_get(b, kinds[k], cJSON_Object), "seconds");
        ck_assert_msg(ops > 0 && ops <= tu_json_dbl(b, "epoch_s") * 1.0001, "ops %g s of a %g s epoch", ops, tu_json_dbl(b, "epoch_s"));
        ck_assert(tu_json_dbl(tu_json_get(b, "gemm", cJSON_Object), "calls") > 0 && tu_json_dbl(b, "floor_s") > 0);
    }
    tu_json_free_lines(v, n);
    free(out);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* The emulated device's copies case by case: a copy whose source or destination is on the wrong
 * side for its kind is refused, whether the wrong side is memory the device never saw or pinned
 * memory it allocated (H2D from device memory, D2D from or to host memory, D2H into device
 * memory, D2H from one past a device block's end, which is in no block); an op refuses pinned
 * and host memory from kc_alloc as it refuses malloc'd memory. A good copy of each kind moves the
 * bytes, and they are counted per direction: 64 + 64 H2D (kc_mirror's and one more), 32 D2D,
 * 16 D2H; kc_mirror's copy is device memory. */
START_TEST(emu_copy_kinds_and_counts) {
    kern_ctx_t *c = NULL;
    ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "emu"}, &c), INCA_OK);
    float *d1 = NULL, *d2 = NULL, *pin = NULL, *hst = NULL, h[16], back[16];
    for (int i = 0; i < 16; i++) h[i] = (float)i - 7.5f;
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, sizeof h, (void **)&d1), INCA_OK);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, sizeof h, (void **)&d2), INCA_OK);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_PINNED, sizeof h, (void **)&pin), INCA_OK);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_HOST, sizeof h, (void **)&hst), INCA_OK);
    const struct { void *dst; const void *src; kern_copy_t kind; } bad[] = {
        {d1, d2, KERN_H2D}, {d1, h, KERN_D2D}, {d1, pin, KERN_D2D}, {pin, d1, KERN_D2D}, {hst, pin, KERN_D2D},
        {d1, d2, KERN_D2H}, {back, pin, KERN_D2H}, {back, d1 + 16, KERN_D2H}, {pin, h, KERN_H2D},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        inca_err_clear();
        ck_assert_msg(kc_copy(c, bad[i].dst, bad[i].src, 4 * sizeof(float), bad[i].kind, 0) == INCA_EINVAL,
                      "bad copy %zu accepted", i);
        ck_assert_msg(strstr(inca_errmsg(), "emu device: copy of kind"), "%zu: %s", i, inca_errmsg());
    }
    inca_err_clear();
    ck_assert_int_eq(kc_relu(c, 16, pin, d1), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "argument 1 (x,"), "%s", inca_errmsg());
    inca_err_clear();
    ck_assert_int_eq(kc_relu(c, 16, d1, hst), INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), "argument 2 (y,"), "%s", inca_errmsg());
    kc_free(&c);   /* the refusals are sticky; the good copies on a new context */
    ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "emu"}, &c), INCA_OK);
    int64_t cp[3];
    kc_mem_copied(c, cp);
    ck_assert(cp[0] == 0 && cp[1] == 0 && cp[2] == 0);
    float *m = NULL;
    ck_assert_int_eq(kc_mirror(c, h, sizeof h, (void **)&m), INCA_OK);
    ck_assert(m != NULL && m != h);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, sizeof h, (void **)&d1), INCA_OK);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, sizeof h, (void **)&d2), INCA_OK);
    ck_assert_int_eq(kc_relu(c, 16, m, d1), INCA_OK);   /* the mirror is device memory */
    ck_assert_int_eq(kc_copy(c, d2, h, 16 * sizeof(float), KERN_H2D, 0), INCA_OK);
    ck_assert_int_eq(kc_copy(c, d2 + 8, d1 + 8, 8 * sizeof(float), KERN_D2D, 0), INCA_OK);
    ck_assert_int_eq(kc_copy(c, back, d2 + 6, 4 * sizeof(float), KERN_D2H, 0), INCA_OK);
    ck_assert(back[0] == -1.5f && back[1] == -0.5f && back[2] == 0.5f && back[3] == 1.5f);   /* h[6], h[7], relu h[8], h[9] */
    kc_mem_copied(c, cp);
    ck_assert_msg(cp[KERN_H2D] == 128 && cp[KERN_D2D] == 32 && cp[KERN_D2H] == 16, "copied H2D %lld D2D %lld D2H %lld",
                  (long long)cp[KERN_H2D], (long long)cp[KERN_D2D], (long long)cp[KERN_D2H]);
    kc_mirror_free(c, h, m);
    kc_release(c, KERN_MEM_DEVICE, d1);
    kc_release(c, KERN_MEM_DEVICE, d2);
    ck_assert_int_eq(kern_emu_live_blocks(c), 0);
    ck_assert_int_eq(kc_status(c), INCA_OK);
    kc_free(&c);
}
END_TEST

/* INCA_EMU_MEMORY sizes the emulated device when the options do not: bytes, or K, M, G (either
 * case) for 2^10, 2^20, 2^30; the options' size wins. */
START_TEST(emu_memory_from_environment) {
    const struct { const char *env; int64_t bytes; } cases[] = {
        {"1000", 1000}, {"3k", 3 << 10}, {"5M", 5 << 20}, {"7m", 7 << 20}, {"2G", (int64_t)2 << 30}, {"1g", (int64_t)1 << 30},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(setenv("INCA_EMU_MEMORY", cases[i].env, 1), 0);
        kern_ctx_t *c = NULL;
        ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "emu"}, &c), INCA_OK);
        kern_mem_stats_t s;
        kc_mem_stats(c, &s);
        ck_assert_msg(s.device_total == cases[i].bytes, "INCA_EMU_MEMORY=%s: %lld bytes", cases[i].env,
                      (long long)s.device_total);
        kc_free(&c);
        ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "emu", .emu_memory = 4096}, &c), INCA_OK);
        kc_mem_stats(c, &s);
        ck_assert(s.device_total == 4096);
        kc_free(&c);
    }
    unsetenv("INCA_EMU_MEMORY");
}
END_TEST

/* The budget (kc_mem_limit) is a device memory budget: pinned and host blocks past it are
 * allocated and counted, only a device block past it is refused. */
START_TEST(memory_limit_is_device_only) {
    kern_ctx_t *c = NULL;
    ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "emu"}, &c), INCA_OK);
    kc_mem_limit(c, 1000);
    void *p = NULL, *h = NULL, *d = NULL;
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_PINNED, 4096, &p), INCA_OK);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_HOST, 8192, &h), INCA_OK);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, 1000, &d), INCA_OK);
    void *x = NULL;
    inca_err_clear();
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, 1, &x), INCA_ENOMEM);
    kern_mem_stats_t s;
    kc_mem_stats(c, &s);
    ck_assert(s.now[KERN_MEM_PINNED] == 4096 && s.now[KERN_MEM_HOST] == 8192 && s.now[KERN_MEM_DEVICE] == 1000);
    kc_release(c, KERN_MEM_PINNED, p);
    kc_release(c, KERN_MEM_HOST, h);
    kc_release(c, KERN_MEM_DEVICE, d);
    ck_assert_int_eq(kern_emu_live_blocks(c), 0);
    kc_free(&c);
}
END_TEST

/* The accounting (kernels/memtrack.c) against sizes counted by hand: per kind and per tag, the
 * peak, a release, the limit's refusal (with its breakdown, nothing allocated), the emulated
 * device's size, a matrix's arrays at creation, and a table grown past its first size and
 * emptied in another order. */
START_TEST(memory_accounting) {
    kern_ctx_t *c = NULL;
    ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "emu", .emu_memory = 1 << 20}, &c), INCA_OK);
    kern_mem_stats_t s;
    kc_mem_stats(c, &s);
    ck_assert(s.now[KERN_MEM_DEVICE] == 0 && s.device_total == 1 << 20 && s.device_free == 1 << 20);
    void *a = NULL, *b = NULL, *p = NULL, *x = NULL;
    kc_mem_tag(c, "alpha");
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, 100000, &a), INCA_OK);
    ck_assert_str_eq(kc_mem_tag(c, "beta"), "alpha");
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, 200000, &b), INCA_OK);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_PINNED, 50000, &p), INCA_OK);
    kc_mem_stats(c, &s);
    ck_assert(s.now[KERN_MEM_DEVICE] == 300000 && s.peak[KERN_MEM_DEVICE] == 300000 && s.now[KERN_MEM_PINNED] == 50000);
    ck_assert(s.device_free == (1 << 20) - 300000);
    ck_assert(kc_mem_tag_now(c, "alpha") == 100000 && kc_mem_tag_now(c, "beta") == 200000);   /* pinned: not device */
    kc_release(c, KERN_MEM_DEVICE, a);
    kc_mem_stats(c, &s);
    ck_assert(s.now[KERN_MEM_DEVICE] == 200000 && s.peak[KERN_MEM_DEVICE] == 300000 && kc_mem_tag_now(c, "alpha") == 0);
    kc_mem_reset_peak(c);
    kc_mem_stats(c, &s);
    ck_assert(s.peak[KERN_MEM_DEVICE] == 200000);
    /* the limit: refused before the backend is asked, the breakdown named */
    kc_mem_limit(c, 500000);
    inca_err_clear();
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, 300001, &x), INCA_ENOMEM);
    ck_assert(x == NULL && strstr(inca_errmsg(), "device memory budget 0.5 MB") && strstr(inca_errmsg(), "beta 0.2"));
    ck_assert_int_eq(kern_emu_live_blocks(c), 2);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, 300000, &x), INCA_OK);   /* exactly the budget */
    kc_mem_stats(c, &s);
    ck_assert(s.now[KERN_MEM_DEVICE] == 500000 && s.limit == 500000);
    kc_release(c, KERN_MEM_DEVICE, x);
    /* the emulated device's own size, with no limit */
    kc_mem_limit(c, 0);
    inca_err_clear();
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, (1 << 20) - 200000 + 1, &x), INCA_ENOMEM);
    ck_assert(strstr(inca_errmsg(), "emu device: out of memory"));
    /* a matrix's device arrays at creation: rowptr (rows + 1) x 8, col and val nnz x 4 */
    kern_mat_t *m = NULL;
    kc_mem_tag(c, "matrix");
    ck_assert_int_eq(kc_mat_create(c, 100, 50, 1000, &m), INCA_OK);
    ck_assert(kc_mem_tag_now(c, "matrix") == 101 * 8 + 1000 * 4 + 1000 * 4);
    kc_mat_free(c, &m);
    ck_assert(kc_mem_tag_now(c, "matrix") == 0);
    kc_release(c, KERN_MEM_DEVICE, b);
    kc_release(c, KERN_MEM_PINNED, p);
    /* past the table's first 256 slots, released odd ones first */
    enum { NB = 1500 };
    void *v[NB];
    int64_t want = 0;
    for (int i = 0; i < NB; i++) {
        ck_assert_int_eq(kc_alloc(c, i % 3 ? KERN_MEM_DEVICE : KERN_MEM_HOST, (size_t)(8 + i), &v[i]), INCA_OK);
        if (i % 3) want += 8 + i;
    }
    kc_mem_stats(c, &s);
    ck_assert(s.now[KERN_MEM_DEVICE] == want && s.peak[KERN_MEM_DEVICE] == want);
    for (int pass = 1; pass >= 0; pass--)
        for (int i = pass; i < NB; i += 2) kc_release(c, i % 3 ? KERN_MEM_DEVICE : KERN_MEM_HOST, v[i]);
    kc_mem_stats(c, &s);
    ck_assert(s.now[KERN_MEM_DEVICE] == 0 && s.now[KERN_MEM_HOST] == 0 && s.now[KERN_MEM_PINNED] == 0);
    ck_assert_int_eq(kern_emu_live_blocks(c), 0);
    ck_assert_int_eq(kc_status(c), INCA_OK);
    kc_free(&c);
    /* a CPU context made by kc_create counts too (no device size); the shared one does not */
    ck_assert_int_eq(kc_create(&(kern_ctx_opts_t){.device = "cpu"}, &c), INCA_OK);
    ck_assert_int_eq(kc_alloc(c, KERN_MEM_DEVICE, 4096, &x), INCA_OK);
    kc_mem_stats(c, &s);
    ck_assert(s.now[KERN_MEM_DEVICE] == 4096 && s.device_total == 0);
    kc_release(c, KERN_MEM_DEVICE, x);
    kc_free(&c);
    ck_assert_int_eq(kc_alloc(kc_cpu(), KERN_MEM_DEVICE, 4096, &x), INCA_OK);
    kc_mem_stats(kc_cpu(), &s);
    ck_assert(s.now[KERN_MEM_DEVICE] == 0);
    kc_release(kc_cpu(), KERN_MEM_DEVICE, x);
}
END_TEST

int main(void) {
    Suite *s = suite_create("backend");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, context_device_rule);
    tcase_add_test(tc, context_siblings_and_device_numbers);
    tcase_add_test(tc, memory_ops);
    tcase_add_test(tc, cpu_table_is_the_cpu_kernels);
    tcase_add_test(tc, relu_passes_nan);
    tcase_add_test(tc, fused_sweeps_are_the_ops_they_replace);
    tcase_add_test(tc, row_tables_both_types);
    tcase_add_test(tc, matrices);
    tcase_add_test(tc, model_on_context);
    tcase_add_test(tc, emu_device_rules);
    tcase_add_test(tc, emu_copy_kinds_and_counts);
    tcase_add_test(tc, emu_memory_from_environment);
    tcase_add_test(tc, memory_accounting);
    tcase_add_test(tc, memory_limit_is_device_only);
    tcase_add_test(tc, model_on_emu_device);
    tcase_add_test(tc, cli_device_flag);
    tcase_add_test(tc, op_profile_counts);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
