/* CPU row-table kernels: gather, scatter, blend and residual over fp32 or bf16 tables addressed by
 * row ids (GAS histories, IncAgg baselines and snapshots; memory/history.c wraps them), and
 * the bf16 conversions. Parallel over rows, each row written by one thread. Tested in
 * test_memory.c (bf16 bits by hand, round trips) and test_incagg.c. */
#include "kernels/kernels.h"
#include <string.h>

uint16_t kern_f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float kern_bf16_to_f32(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static void row_get(kern_dtype_t dt, const void *t, int64_t f, int64_t r, float *out) {
    if (dt == KERN_F32) {
        memcpy(out, (const float *)t + r * f, sizeof(float) * (size_t)f);
    } else {
        const uint16_t *s = (const uint16_t *)t + r * f;
        for (int64_t j = 0; j < f; j++) out[j] = kern_bf16_to_f32(s[j]);
    }
}

static void row_put(kern_dtype_t dt, void *t, int64_t f, int64_t r, const float *in) {
    if (dt == KERN_F32) {
        memcpy((float *)t + r * f, in, sizeof(float) * (size_t)f);
    } else {
        uint16_t *d = (uint16_t *)t + r * f;
        for (int64_t j = 0; j < f; j++) d[j] = kern_f32_to_bf16(in[j]);
    }
}

void kern_rows_gather(kern_dtype_t dt, const void *t, int64_t f, const int64_t *ids, int64_t start, int64_t m,
                      float *out) {
#pragma omp parallel for schedule(static) if (m * f >= KERN_ROWS_PAR_MIN)
    for (int64_t i = 0; i < m; i++) row_get(dt, t, f, ids ? ids[i] : start + i, out + i * f);
}

void kern_rows_scatter(kern_dtype_t dt, void *t, int64_t f, const int64_t *ids, int64_t start, int64_t m,
                       const float *in) {
#pragma omp parallel for schedule(static) if (m * f >= KERN_ROWS_PAR_MIN)
    for (int64_t i = 0; i < m; i++) row_put(dt, t, f, ids ? ids[i] : start + i, in + i * f);
}

void kern_rows_blend(kern_dtype_t dt, void *t, int64_t f, int64_t start, int64_t m, float w, const float *in) {
#pragma omp parallel for schedule(static) if (m * f >= KERN_ROWS_PAR_MIN)
    for (int64_t i = 0; i < m; i++) {
        const float *a = in + i * f;
        if (dt == KERN_F32) {
            float *s = (float *)t + (start + i) * f;
            for (int64_t j = 0; j < f; j++) s[j] = w * a[j] + (1.f - w) * s[j];
        } else {
            uint16_t *s = (uint16_t *)t + (start + i) * f;
            for (int64_t j = 0; j < f; j++) {
                const float o = kern_bf16_to_f32(s[j]);
                s[j] = kern_f32_to_bf16(w * a[j] + (1.f - w) * o);
            }
        }
    }
}

void kern_rows_sub(kern_dtype_t dt, void *t, int64_t f, const int64_t *ids, int64_t m, const float *in, float *out,
                   const float *push) {
#pragma omp parallel for schedule(static) if (m * f >= KERN_ROWS_PAR_MIN)
    for (int64_t i = 0; i < m; i++) {
        const float *a = in + i * f;
        float *o = out + i * f;
        if (dt == KERN_F32) {
            float *s = (float *)t + ids[i] * f;
            for (int64_t j = 0; j < f; j++) o[j] = a[j] - s[j];
            if (push) memcpy(s, push + i * f, sizeof(float) * (size_t)f);
        } else {
            uint16_t *s = (uint16_t *)t + ids[i] * f;
            for (int64_t j = 0; j < f; j++) o[j] = a[j] - kern_bf16_to_f32(s[j]);
            if (push)
                for (int64_t j = 0; j < f; j++) s[j] = kern_f32_to_bf16(push[i * f + j]);
        }
    }
}

void kern_sub(int64_t n, const float *restrict a, const float *restrict b, float *restrict out) {
#pragma omp parallel for schedule(static) if (n >= KERN_ROWS_PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = a[i] - b[i];
}
