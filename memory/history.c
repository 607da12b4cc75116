/* fp32 / bf16 history tables (see history.h). Tested in test_memory.c. */
#include "memory/history.h"
#include "core/status.h"
#include <string.h>

int hist_dtype_parse(const char *s, hist_dtype_t *out) {
    if (s && strcmp(s, "fp32") == 0) { *out = HIST_F32; return INCA_OK; }
    if (s && strcmp(s, "bf16") == 0) { *out = HIST_BF16; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--history-dtype: expected fp32 or bf16, got '%s'", s ? s : "");
}

static size_t esize(hist_dtype_t t) { return t == HIST_BF16 ? 2 : 4; }

int hist_init(hist_t *h, mem_arena_t *a, int64_t n, int64_t f, hist_dtype_t dtype, const char *label) {
    memset(h, 0, sizeof *h);
    if (n < 0 || f < 0) return inca_fail(INCA_EINVAL, "history table %s: bad shape %lld x %lld", label, (long long)n, (long long)f);
    h->data = mem_arena_alloc(a, (size_t)n * (size_t)f * esize(dtype), label);
    if (!h->data) return INCA_ENOMEM;
    h->n = n;
    h->f = f;
    h->dtype = dtype;
    return INCA_OK;
}

int64_t hist_bytes(const hist_t *h) { return h->n * h->f * (int64_t)esize(h->dtype); }
float *hist_f32(const hist_t *h) { return h->dtype == HIST_F32 ? (float *)h->data : NULL; }

uint16_t hist_f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float hist_bf16_to_f32(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static void row_get(const hist_t *h, int64_t r, float *out) {
    if (h->dtype == HIST_F32) {
        memcpy(out, (const float *)h->data + r * h->f, sizeof(float) * (size_t)h->f);
    } else {
        const uint16_t *s = (const uint16_t *)h->data + r * h->f;
        for (int64_t j = 0; j < h->f; j++) out[j] = hist_bf16_to_f32(s[j]);
    }
}

static void row_put(hist_t *h, int64_t r, const float *in) {
    if (h->dtype == HIST_F32) {
        memcpy((float *)h->data + r * h->f, in, sizeof(float) * (size_t)h->f);
    } else {
        uint16_t *d = (uint16_t *)h->data + r * h->f;
        for (int64_t j = 0; j < h->f; j++) d[j] = hist_f32_to_bf16(in[j]);
    }
}

void hist_pull(const hist_t *h, const int64_t *ids, int64_t m, float *out) {
#pragma omp parallel for schedule(static) if (m * h->f >= HIST_PAR_MIN)
    for (int64_t i = 0; i < m; i++) row_get(h, ids[i], out + i * h->f);
}

void hist_pull_range(const hist_t *h, int64_t start, int64_t m, float *out) {
#pragma omp parallel for schedule(static) if (m * h->f >= HIST_PAR_MIN)
    for (int64_t i = 0; i < m; i++) row_get(h, start + i, out + i * h->f);
}

void hist_push_range(hist_t *h, int64_t start, int64_t m, const float *in) {
#pragma omp parallel for schedule(static) if (m * h->f >= HIST_PAR_MIN)
    for (int64_t i = 0; i < m; i++) row_put(h, start + i, in + i * h->f);
}

void hist_push(hist_t *h, const int64_t *ids, int64_t m, const float *in) {
#pragma omp parallel for schedule(static) if (m * h->f >= HIST_PAR_MIN)
    for (int64_t i = 0; i < m; i++) row_put(h, ids[i], in + i * h->f);
}

void hist_sub(const hist_t *h, const int64_t *ids, int64_t m, const float *in, float *out) {
    const int64_t f = h->f;
#pragma omp parallel for schedule(static) if (m * f >= HIST_PAR_MIN)
    for (int64_t i = 0; i < m; i++) {
        const float *a = in + i * f;
        float *o = out + i * f;
        if (h->dtype == HIST_F32) {
            const float *s = (const float *)h->data + ids[i] * f;
            for (int64_t j = 0; j < f; j++) o[j] = a[j] - s[j];
        } else {
            const uint16_t *s = (const uint16_t *)h->data + ids[i] * f;
            for (int64_t j = 0; j < f; j++) o[j] = a[j] - hist_bf16_to_f32(s[j]);
        }
    }
}

void hist_sub_push(hist_t *h, const int64_t *ids, int64_t m, const float *in, float *out, const float *push) {
    const int64_t f = h->f;
#pragma omp parallel for schedule(static) if (m * f >= HIST_PAR_MIN)
    for (int64_t i = 0; i < m; i++) {
        const float *a = in + i * f, *p = push + i * f;
        float *o = out + i * f;
        if (h->dtype == HIST_F32) {
            float *s = (float *)h->data + ids[i] * f;
            for (int64_t j = 0; j < f; j++) {
                o[j] = a[j] - s[j];
                s[j] = p[j];
            }
        } else {
            uint16_t *s = (uint16_t *)h->data + ids[i] * f;
            for (int64_t j = 0; j < f; j++) {
                o[j] = a[j] - hist_bf16_to_f32(s[j]);
                s[j] = hist_f32_to_bf16(p[j]);
            }
        }
    }
}

void hist_copy(hist_t *dst, const hist_t *src) {
    memcpy(dst->data, src->data, (size_t)hist_bytes(src));
}
