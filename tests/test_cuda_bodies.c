/* The per-element bodies of the CUDA kernels (kernels/cuda/bodies.h), compiled here by the C
 * compiler and looped on the host the way kernels.cu loops them, against the CPU kernels of
 * kernels/kernels.h on random inputs: dropout masks and values, ReLU, axpby, bias, bf16 and the
 * row tables bit-identical; Adam bit-identical; BatchNorm (with the device's chunked column sums)
 * and softmax-xent within 1e-6; accuracy counts equal. Runs without a GPU. */
#include "kernels/cuda/bodies.h"
#include "kernels/kernels.h"
#include "core/rng.h"
#include "tests/testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *rand_f(rng_t *r, int64_t n, float scale) {
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    ck_assert(v);
    for (int64_t i = 0; i < n; i++) v[i] = (float)((rng_uniform(r) * 2.0 - 1.0) * scale);
    return v;
}
static void bits_eq(const void *a, const void *b, size_t bytes, const char *what) {
    if (memcmp(a, b, bytes) == 0) return;
    const unsigned char *x = a, *y = b;
    size_t i = 0;
    while (x[i] == y[i]) i++;
    ck_abort_msg("%s: bytes differ first at byte %zu (0x%02x vs 0x%02x)", what, i, x[i], y[i]);
}
/* ||a - b|| / ||b|| <= tol (absolute when b is 0) */
static void close_rel(const float *a, const float *b, int64_t n, double tol, const char *what) {
    int64_t at = 0;
    const double err = tu_norm_err(a, b, n, &at);
    ck_assert_msg(err <= tol, "%s: normalised error %.3g > %.3g (worst at %lld: %.9g vs %.9g)", what, err, tol,
                  (long long)at, n ? a[at] : 0.0, n ? b[at] : 0.0);
}

START_TEST(dropout_bit_identical) {
    rng_t r;
    rng_seed(&r, 11);
    const int64_t n = 10007;
    float *x = rand_f(&r, n, 3.0f), *y0 = malloc(n * 4), *y1 = malloc(n * 4), *g0 = malloc(n * 4), *g1 = malloc(n * 4);
    uint8_t *m0 = malloc(n), *m1 = malloc(n);
    ck_assert(y0 && y1 && g0 && g1 && m0 && m1);
    const uint64_t seeds[] = {0, 1, 42, 0x8000000000000005ull};
    const uint64_t streams[] = {0, 3, 1234567};
    const float ps[] = {1e-7f, 0.1f, 0.37f, 0.5f, 0.999f};
    int64_t kept_total = 0;
    for (size_t si = 0; si < 4; si++)
        for (size_t ti = 0; ti < 3; ti++)
            for (size_t pi = 0; pi < 5; pi++) {
                const float p = ps[pi];
                kern_dropout(n, p, seeds[si], streams[ti], x, y0, m0);
                const uint64_t key = kb_hash_key(seeds[si], streams[ti]), thr = kb_dropout_thr(p);
                const float scale = 1.0f / (1.0f - p);
                for (int64_t i = 0; i < n; i++) {   /* k_dropout */
                    const uint32_t keep = kb_dropout_keep(key, thr, i);
                    y1[i] = kb_masked_scale(x[i], scale, keep);
                    m1[i] = (uint8_t)keep;
                    kept_total += keep;
                }
                bits_eq(m1, m0, (size_t)n, "dropout mask");
                bits_eq(y1, y0, (size_t)n * 4, "dropout values");
                kern_dropout_grad(n, p, m0, x, g0);
                for (int64_t i = 0; i < n; i++) g1[i] = kb_masked_scale(x[i], scale, (uint32_t)(m1[i] != 0));
                bits_eq(g1, g0, (size_t)n * 4, "dropout_grad");
            }
    /* a uniform exactly equal to p is kept (u >= ceil(p 2^24)): p set to element 0's own u */
    const uint64_t key = kb_hash_key(5, 6), u0 = kb_splitmix64(key) >> 40;
    ck_assert(u0 > 0);
    const float pe = (float)u0 / 16777216.0f;
    kern_dropout(1, pe, 5, 6, x, y0, m0);
    ck_assert_uint_eq(m0[0], 1);
    ck_assert_uint_eq(kb_dropout_keep(key, kb_dropout_thr(pe), 0), 1);
    ck_assert_uint_eq(kb_dropout_keep(key, kb_dropout_thr(pe) + 1, 0), 0);
    /* a uniform just under p is dropped: for p = 0.1f, p 2^24 = 1677721.625 is not an integer, and
     * the element whose u is 1677721 (u 2^-24 < p by hand) is dropped: the threshold is ceil(p
     * 2^24), not floor (found by searching this key's elements, about 2^24 of them on average) */
    const float pf = 0.1f;
    ck_assert((double)pf * 16777216.0 == 1677721.625);
    int64_t at = -1;
    for (int64_t i = 0; i < ((int64_t)1 << 28) && at < 0; i++)
        if ((kb_splitmix64(key ^ (uint64_t)i) >> 40) == 1677721) at = i;
    ck_assert(at >= 0);
    ck_assert_uint_eq(kb_dropout_keep(key, kb_dropout_thr(pf), at), 0);
    /* the hash is the core one (rng_hash64 = hash_at(key)) and the masks are not trivial */
    ck_assert_uint_eq(kb_splitmix64(kb_hash_key(7, 9) ^ 123), rng_hash64(7, 9, 123));
    ck_assert(kept_total > 0 && kept_total < 4 * 3 * 5 * n);
    free(x), free(y0), free(y1), free(g0), free(g1), free(m0), free(m1);
}
END_TEST

START_TEST(elementwise_bit_identical) {
    rng_t r;
    rng_seed(&r, 12);
    const int64_t rows = 37, f = 7, n = rows * f;
    float *x = rand_f(&r, n, 2.0f), *y = rand_f(&r, n, 2.0f), *b = rand_f(&r, f, 1.0f);
    float *o0 = malloc(n * 4), *o1 = malloc(n * 4);
    ck_assert(o0 && o1);
    x[0] = -0.0f, x[1] = NAN, x[2] = INFINITY, x[3] = 0.0f;
    y[0] = 0.0f, y[1] = -0.0f, y[2] = NAN;
    kern_relu(n, x, o0);
    for (int64_t i = 0; i < n; i++) o1[i] = kb_relu(x[i]);
    bits_eq(o1, o0, n * 4, "relu");
    kern_relu_grad(n, y, x, o0);
    for (int64_t i = 0; i < n; i++) o1[i] = kb_relu_grad(y[i], x[i]);
    bits_eq(o1, o0, n * 4, "relu_grad");
    const float betas[] = {0.0f, 1.0f, -0.3f};
    for (int k = 0; k < 3; k++) {
        memcpy(o0, y, n * 4);
        memcpy(o1, y, n * 4);
        kern_axpby(n, 0.7f, x, betas[k], o0);
        for (int64_t i = 0; i < n; i++) o1[i] = kb_axpby(0.7f, x[i], betas[k], betas[k] == 0.0f ? 0.0f : o1[i]);
        bits_eq(o1, o0, n * 4, "axpby");
    }
    memcpy(o0, y, n * 4);
    memcpy(o1, y, n * 4);
    kern_add_bias(rows, f, b, o0);
    for (int64_t i = 0; i < n; i++) o1[i] = kb_add_bias(o1[i], b[i % f]);
    bits_eq(o1, o0, n * 4, "add_bias");
    free(x), free(y), free(b), free(o0), free(o1);
}
END_TEST

START_TEST(bf16_bit_identical) {
    /* every bf16 value decodes the same */
    for (uint32_t h = 0; h < 65536; h++) {
        const float a = kb_bf16_to_f32((uint16_t)h), e = kern_bf16_to_f32((uint16_t)h);
        bits_eq(&a, &e, 4, "bf16 decode");
    }
    /* specials, rounding ties (even and odd), the largest finite float (rounds to Inf), NaNs
     * with payloads in the low bits only (must stay NaN), then random bit patterns */
    const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u,
                                0xff800001u, 0x7f80ffffu, 0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f817fffu,
                                0x7f7fffffu, 0xff7fffffu, 0x00008000u, 0x00018000u, 0x007fffffu, 0x3f800000u};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) {
        float v;
        memcpy(&v, &special[i], 4);
        ck_assert_msg(kb_f32_to_bf16(v) == kern_f32_to_bf16(v), "bf16 encode of 0x%08x: 0x%04x vs 0x%04x", special[i],
                      kb_f32_to_bf16(v), kern_f32_to_bf16(v));
    }
    /* the rounding is to nearest even (a truncating or round-half-up encoder fails these) */
    float t;
    uint32_t u = 0x3f808000u;   /* 1.00390625: tie, even neighbour 0x3f80 */
    memcpy(&t, &u, 4);
    ck_assert_uint_eq(kb_f32_to_bf16(t), 0x3f80u);
    u = 0x3f818000u;   /* tie, even neighbour 0x3f82 */
    memcpy(&t, &u, 4);
    ck_assert_uint_eq(kb_f32_to_bf16(t), 0x3f82u);
    u = 0x7f800001u;   /* a signalling NaN whose payload is in the dropped bits stays NaN */
    memcpy(&t, &u, 4);
    ck_assert(isnan(kb_bf16_to_f32(kb_f32_to_bf16(t))));
    rng_t r;
    rng_seed(&r, 13);
    for (int i = 0; i < 1 << 22; i++) {
        const uint32_t w = (uint32_t)rng_next(&r);
        float v;
        memcpy(&v, &w, 4);
        if (kb_f32_to_bf16(v) != kern_f32_to_bf16(v))
            ck_abort_msg("bf16 encode of 0x%08x: 0x%04x vs 0x%04x", w, kb_f32_to_bf16(v), kern_f32_to_bf16(v));
    }
}
END_TEST

/* gather, scatter and sub_rows as kernels.cu runs them (one element per thread) */
START_TEST(rows_bit_identical) {
    rng_t r;
    rng_seed(&r, 14);
    const int64_t n = 50, f = 7, m = 13;
    int64_t ids[13];
    for (int64_t i = 0; i < m; i++) ids[i] = (i * 17 + 3) % n;   /* distinct: 17 is prime to 50 */
    float *src = rand_f(&r, n * f, 5.0f), *in = rand_f(&r, m * f, 5.0f), *push = rand_f(&r, m * f, 5.0f);
    float *o0 = malloc(m * f * 4), *o1 = malloc(m * f * 4);
    void *t0 = malloc(n * f * 4), *t1 = malloc(n * f * 4);
    ck_assert(o0 && o1 && t0 && t1);
    for (int d = 0; d < 2; d++) {
        const kern_dtype_t dt = d ? KERN_BF16 : KERN_F32;
        const size_t tb = (size_t)(n * f) * (d ? 2 : 4);
        for (int64_t j = 0; j < n * f; j++) kb_row_store(dt, t0, j, src[j]);
        memcpy(t1, t0, tb);
        for (int use_ids = 0; use_ids < 2; use_ids++) {
            const int64_t *id = use_ids ? ids : NULL, start = 5;
            kern_rows_gather(dt, t0, f, id, start, m, o0);
            for (int64_t e = 0; e < m * f; e++) o1[e] = kb_row_load(dt, t1, ((id ? id[e / f] : start + e / f)) * f + e % f);
            bits_eq(o1, o0, (size_t)(m * f) * 4, "gather_rows");
            kern_rows_scatter(dt, t0, f, id, start, m, in);
            for (int64_t e = 0; e < m * f; e++) kb_row_store(dt, t1, (id ? id[e / f] : start + e / f) * f + e % f, in[e]);
            bits_eq(t1, t0, tb, "scatter_rows");
        }
        for (int with_push = 0; with_push < 2; with_push++) {
            const float *p = with_push ? push : NULL;
            kern_rows_sub(dt, t0, f, ids, m, in, o0, p);
            for (int64_t e = 0; e < m * f; e++) {   /* k_sub_rows */
                const int64_t j = ids[e / f] * f + e % f;
                o1[e] = in[e] - kb_row_load(dt, t1, j);
                if (p) kb_row_store(dt, t1, j, p[e]);
            }
            bits_eq(o1, o0, (size_t)(m * f) * 4, "sub_rows out");
            bits_eq(t1, t0, tb, "sub_rows table");
        }
    }
    free(src), free(in), free(push), free(o0), free(o1), free(t0), free(t1);
}
END_TEST

START_TEST(adam_bit_identical) {
    rng_t r;
    rng_seed(&r, 15);
    const int64_t n = 4099;
    float *w0 = rand_f(&r, n, 1.0f), *g = rand_f(&r, n, 0.1f), *m0 = rand_f(&r, n, 0.01f), *v0 = rand_f(&r, n, 0.01f);
    float *w1 = malloc(n * 4), *m1 = malloc(n * 4), *v1 = malloc(n * 4);
    ck_assert(w1 && m1 && v1);
    for (int64_t i = 0; i < n; i++) v0[i] = fabsf(v0[i]);
    for (int k = 0; k < 4; k++) {
        const int t = k < 2 ? 1 : 10;
        kern_adam_t hp = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = k % 2 ? 5e-4 : 0.0,
                          .adamw = k >= 2};
        hp.step_size = hp.lr / (1.0 - pow(hp.beta1, t));
        hp.sbc2 = sqrt(1.0 - pow(hp.beta2, t));
        memcpy(w1, w0, n * 4), memcpy(m1, m0, n * 4), memcpy(v1, v0, n * 4);
        kern_adam(n, w0, g, m0, v0, &hp);
        for (int64_t i = 0; i < n; i++) kb_adam(&hp, &w1[i], g[i], &m1[i], &v1[i]);
        bits_eq(w1, w0, n * 4, "adam w");
        bits_eq(m1, m0, n * 4, "adam m");
        bits_eq(v1, v0, n * 4, "adam v");
    }
    free(w0), free(g), free(m0), free(v0), free(w1), free(m1), free(v1);
}
END_TEST

/* k_colsum's loops on the host, around its own chunking and per-row term (bodies.h): chunks,
 * lanes within a chunk, lanes added in order, chunks added in order */
static void dev_colsum(int mode, int64_t n, int64_t f, const float *a, const float *b, const double *sum, double *out) {
    const int64_t nchunk = kb_colsum_chunks(n), chunk = kb_colsum_chunk_rows(n, nchunk);
    for (int64_t k = 0; k < f; k++) {
        double t0 = 0, t1 = 0;
        const double mu = mode == 1 ? kb_bn_mean(sum[k], n) : 0.0;
        for (int64_t c = 0; c < nchunk; c++) {
            double l0[KB_COLSUM_LANES] = {0}, l1[KB_COLSUM_LANES] = {0};
            const int64_t r0 = c * chunk, r1 = r0 + chunk < n ? r0 + chunk : n;
            for (int ty = 0; ty < KB_COLSUM_LANES; ty++)
                for (int64_t rr = r0 + ty; rr < r1; rr += KB_COLSUM_LANES)
                    kb_colsum_add(mode, a[rr * f + k], mode == 2 ? b[rr * f + k] : 0.f, mu, &l0[ty], &l1[ty]);
            double s0 = l0[0], s1 = l1[0];
            for (int j = 1; j < KB_COLSUM_LANES; j++) s0 += l0[j], s1 += l1[j];
            t0 += s0, t1 += s1;
        }
        out[k] = t0;
        if (mode == 2) out[f + k] = t1;
    }
}

START_TEST(batchnorm_within_1e6) {
    rng_t r;
    rng_seed(&r, 16);
    const int64_t ns[] = {1, 7, 300, 5000}, fs[] = {1, 7, 64};
    for (int ni = 0; ni < 4; ni++)
        for (int fi = 0; fi < 3; fi++) {
            const int64_t n = ns[ni], f = fs[fi], nf = n * f;
            float *z = rand_f(&r, nf, 3.0f), *gamma = rand_f(&r, f, 1.0f), *beta = rand_f(&r, f, 1.0f);
            float *dy = rand_f(&r, nf, 1.0f);
            for (int64_t i = 0; i < nf; i++) z[i] += 0.5f;   /* a non-zero mean */
            float *xh0 = malloc(nf * 4), *xh1 = malloc(nf * 4), *y0 = malloc(nf * 4), *y1 = malloc(nf * 4);
            float *is0 = malloc(f * 4), *is1 = malloc(f * 4), *rm0 = calloc(f, 4), *rm1 = calloc(f, 4);
            float *rv0 = malloc(f * 4), *rv1 = malloc(f * 4), *dz0 = malloc(nf * 4), *dz1 = malloc(nf * 4);
            float *gg0 = malloc(f * 4), *gg1 = malloc(f * 4), *gb0 = malloc(f * 4), *gb1 = malloc(f * 4);
            double *sum = malloc(2 * f * 8), *s2 = malloc(2 * f * 8);
            ck_assert(xh0 && xh1 && y0 && y1 && is0 && is1 && rm0 && rm1 && rv0 && rv1 && dz0 && dz1 && gg0 && gg1 &&
                      gb0 && gb1 && sum && s2);
            for (int64_t k = 0; k < f; k++) rv0[k] = rv1[k] = 1.0f;
            for (int train = 1; train >= 0; train--) {
                memcpy(xh0, z, nf * 4), memcpy(xh1, z, nf * 4);
                kern_bn_forward(n, f, train, xh0, gamma, beta, is0, rm0, rv0, y0);
                if (train) {   /* kcu_bn_forward_op: two column passes, k_bn_stats, k_bn_norm_train */
                    dev_colsum(0, n, f, xh1, NULL, NULL, sum);
                    dev_colsum(1, n, f, xh1, NULL, sum, s2);
                    for (int64_t k = 0; k < f; k++) {
                        const double isk = kb_bn_istd(s2[k], n);
                        is1[k] = (float)isk;
                        rm1[k] = kb_bn_running(rm1[k], kb_bn_mean(sum[k], n));
                        rv1[k] = kb_bn_running(rv1[k], kb_bn_uvar(s2[k], n));
                    }
                    for (int64_t e = 0; e < nf; e++) {
                        const int64_t k = e % f;
                        xh1[e] = kb_bn_norm_train(xh1[e], kb_bn_mean(sum[k], n), kb_bn_istd(s2[k], n));
                        y1[e] = kb_bn_affine(gamma[k], xh1[e], beta[k]);
                    }
                } else {   /* k_bn_eval, from the CPU's running statistics: elementwise, the same bits */
                    memcpy(rm1, rm0, f * 4), memcpy(rv1, rv0, f * 4);
                    for (int64_t e = 0; e < nf; e++) {
                        const int64_t k = e % f;
                        const float isk = kb_bn_istd_eval(rv1[k]);
                        if (e < f) is1[k] = isk;
                        xh1[e] = kb_bn_norm_eval(xh1[e], rm1[k], isk);
                        y1[e] = kb_bn_affine(gamma[k], xh1[e], beta[k]);
                    }
                }
                if (!train) {
                    bits_eq(xh1, xh0, (size_t)nf * 4, "bn xhat (eval)");
                    bits_eq(y1, y0, (size_t)nf * 4, "bn y (eval)");
                    bits_eq(is1, is0, (size_t)f * 4, "bn istd (eval)");
                }
                close_rel(xh1, xh0, nf, 1e-6, train ? "bn xhat (train)" : "bn xhat (eval)");
                close_rel(y1, y0, nf, 1e-6, "bn y");
                close_rel(is1, is0, f, 1e-6, "bn istd");
                close_rel(rm1, rm0, f, 1e-6, "bn running mean");
                close_rel(rv1, rv0, f, 1e-6, "bn running var");
            }
            /* backward from the training statistics */
            memcpy(xh0, z, nf * 4);
            kern_bn_forward(n, f, 1, xh0, gamma, beta, is0, rm0, rv0, y0);
            kern_bn_backward(n, f, gamma, xh0, is0, dy, dz0, gg0, gb0);
            dev_colsum(2, n, f, dy, xh0, NULL, sum);
            for (int64_t e = 0; e < nf; e++) {   /* k_bn_backward */
                const int64_t k = e % f;
                if (e < f) gg1[k] = (float)sum[f + k], gb1[k] = (float)sum[k];
                dz1[e] = kb_bn_backward(gamma[k], is0[k], n, dy[e], xh0[e], sum[k], sum[f + k]);
            }
            if (n > 1) close_rel(dz1, dz0, nf, 1e-6, "bn dz");   /* n = 1: dz is 0 up to rounding */
            close_rel(gg1, gg0, f, 1e-6, "bn ggamma");
            close_rel(gb1, gb0, f, 1e-6, "bn gbeta");
            free(z), free(gamma), free(beta), free(dy), free(xh0), free(xh1), free(y0), free(y1), free(is0), free(is1);
            free(rm0), free(rm1), free(rv0), free(rv1), free(dz0), free(dz1), free(gg0), free(gg1), free(gb0);
            free(gb1), free(sum), free(s2);
        }
}
END_TEST

/* kcu_softmax_xent on the host: status count, per-row terms and gradient, the mean */
static double dev_xent(int64_t rows, int64_t c, const float *z, const int32_t *y, const int64_t *idx, int64_t nidx,
                       float *logp, float *dl) {
    for (int64_t i = 0; i < rows; i++) {
        const double lse = kb_row_lse(z + i * c, c, kb_row_max(z + i * c, c));
        for (int64_t k = 0; k < c; k++) logp[i * c + k] = kb_logp(z[i * c + k], lse);
    }
    memset(dl, 0, (size_t)(rows * c) * 4);
    int64_t counted = 0, bad = 0;
    for (int64_t t = 0; t < nidx; t++) {
        const int st = kb_xent_status(idx[t], rows, y, c);
        counted += st == 1;
        bad |= st == 2;
    }
    if (bad) return NAN;
    const double inv = counted ? 1.0 / (double)counted : 0.0;
    double loss = 0;
    for (int64_t t = 0; t < nidx; t++) {
        const int64_t i = idx[t];
        if (kb_xent_status(i, rows, y, c) != 1) continue;
        const float *zi = z + i * c;
        const double lse = kb_row_lse(zi, c, kb_row_max(zi, c));
        loss += lse - (double)zi[y[i]];
        for (int64_t k = 0; k < c; k++) dl[i * c + k] += kb_xent_grad(zi[k], lse, inv);
        dl[i * c + y[i]] += -(float)inv;
    }
    return counted ? loss * inv : 0.0;
}

START_TEST(softmax_xent_and_accuracy) {
    rng_t r;
    rng_seed(&r, 17);
    const int64_t rows = 200, cs[] = {1, 2, 7, 40};
    for (int ci = 0; ci < 4; ci++) {
        const int64_t c = cs[ci], nidx = 150;
        float *z = rand_f(&r, rows * c, 8.0f), *lp0 = malloc(rows * c * 4), *lp1 = malloc(rows * c * 4);
        float *d0 = malloc(rows * c * 4), *d1 = malloc(rows * c * 4);
        int32_t *y = malloc(rows * 4);
        int64_t *idx = malloc(nidx * 8);
        ck_assert(lp0 && lp1 && d0 && d1 && y && idx);
        for (int64_t i = 0; i < rows; i++) y[i] = rng_uniform(&r) < 0.2 ? -1 : (int32_t)rng_below(&r, (uint64_t)c);
        for (int64_t t = 0; t < nidx; t++) idx[t] = (int64_t)rng_below(&r, rows);   /* duplicates included */
        for (int64_t i = 0; i < 20; i++) z[(i * 7) % rows * c] = z[(i * 7) % rows * c + c - 1];   /* argmax ties */
        const double l0 = kern_softmax_xent(rows, c, z, y, idx, nidx, lp0, d0);
        const double l1 = dev_xent(rows, c, z, y, idx, nidx, lp1, d1);
        ck_assert_msg(fabs(l1 - l0) <= 1e-6 * fabs(l0) + 1e-12, "loss %.17g vs %.17g", l1, l0);
        close_rel(lp1, lp0, rows * c, 1e-6, "logp");
        close_rel(d1, d0, rows * c, 1e-6, "dlogits");
        /* accuracy: k_accuracy's rule */
        int64_t corr0 = 0, cnt0 = 0, corr1 = 0, cnt1 = 0;
        kern_accuracy_counts(c, z, y, idx, nidx, &corr0, &cnt0);
        for (int64_t t = 0; t < nidx; t++) {
            const int64_t i = idx[t];
            if (y[i] < 0) continue;
            cnt1++;
            corr1 += kb_argmax(z + i * c, c) == (int64_t)y[i];
        }
        ck_assert_int_eq(cnt1, cnt0);
        ck_assert_int_eq(corr1, corr0);
        /* invalid rows and labels give NaN; nothing counted gives 0 */
        idx[3] = rows;
        ck_assert(isnan(dev_xent(rows, c, z, y, idx, nidx, lp1, d1)) &&
                  isnan(kern_softmax_xent(rows, c, z, y, idx, nidx, NULL, NULL)));
        idx[3] = 0;
        y[0] = (int32_t)c;
        ck_assert(isnan(dev_xent(rows, c, z, y, idx, nidx, lp1, d1)));
        for (int64_t i = 0; i < rows; i++) y[i] = -1;
        ck_assert(dev_xent(rows, c, z, y, idx, nidx, lp1, d1) == 0.0 &&
                  kern_softmax_xent(rows, c, z, y, idx, nidx, NULL, NULL) == 0.0);
        free(z), free(lp0), free(lp1), free(d0), free(d1), free(y), free(idx);
    }
    /* ties go to the lowest class */
    const float s[4] = {1.0f, 3.0f, 3.0f, -1.0f};
    ck_assert_int_eq(kb_argmax(s, 4), 1);
}
END_TEST

/* The column sums' products and the log-sum-exp are in double, by hand where float would lose
 * them: (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24, whose 2^-24 a float product rounds away (a relative
 * error of 2^-13, past the 1e-6 the random cases allow); log(e^0 + e^-1) = log1p(e^-1) to 1e-15
 * (expf's rounding moves it by about 7e-9); logits all near -1000 keep a finite log-sum-exp
 * (the shift is the row's max, not 0, or every exp underflows to 0). */
START_TEST(sums_in_double_by_hand) {
    const float x = 1.0f + 0x1p-12f;
    double s0 = 0, s1 = 0;
    kb_colsum_add(2, x, x, 0.0, &s0, &s1);
    kb_colsum_add(2, -1.0f, 1.0f, 0.0, &s0, &s1);
    ck_assert(s0 == 0x1p-12);
    ck_assert_msg(s1 == 0x1p-11 + 0x1p-24, "sum of x b: %.17g", s1);
    const float z[2] = {0.0f, -1.0f}, zl[2] = {-1000.0f, -1001.0f};
    const double lse = kb_row_lse(z, 2, kb_row_max(z, 2)), want = log1p(exp(-1.0));
    ck_assert_msg(fabs(lse - want) <= 1e-15, "lse %.17g, expected %.17g", lse, want);
    const double lsel = kb_row_lse(zl, 2, kb_row_max(zl, 2));
    ck_assert_msg(fabs(lsel - (-1000.0 + want)) <= 1e-12, "lse of logits near -1000: %.17g", lsel);
    /* and the CPU's loss agrees there: logp of class 0 is -log1p(e^-1) */
    int32_t y = 0;
    int64_t idx = 0;
    float lp[2];
    const double l = kern_softmax_xent(1, 2, zl, &y, &idx, 1, lp, NULL);
    ck_assert(fabs(l - want) <= 1e-6 && fabs(kb_logp(zl[0], lsel) - lp[0]) <= 1e-6);
    /* a row index below 0 is as invalid as one past the end (the loss is NaN on both paths) */
    const int32_t ys[2] = {1, 0};   /* row -1 would read a valid label, 1 */
    ck_assert_int_eq(kb_xent_status(-1, 1, ys + 1, 2), 2);
    idx = -1;
    ck_assert(isnan(kern_softmax_xent(1, 2, zl, &y, &idx, 1, NULL, NULL)));
}
END_TEST

int main(void) {
    Suite *s = suite_create("cuda_bodies");
    TCase *tc = tcase_create("host");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, dropout_bit_identical);
    tcase_add_test(tc, elementwise_bit_identical);
    tcase_add_test(tc, bf16_bit_identical);
    tcase_add_test(tc, rows_bit_identical);
    tcase_add_test(tc, adam_bit_identical);
    tcase_add_test(tc, batchnorm_within_1e6);
    tcase_add_test(tc, softmax_xent_and_accuracy);
    tcase_add_test(tc, sums_in_double_by_hand);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
