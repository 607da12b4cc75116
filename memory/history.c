/* fp32 / bf16 history tables (see history.h). Tested in test_memory.c. */
#include "memory/history.h"
#include "core/status.h"
#include "kernels/kernels.h"
#include <string.h>

const char *const hist_dtype_words[2] = {"fp32", "bf16"};

int hist_dtype_parse(const char *s, hist_dtype_t *out) {
    for (int t = HIST_F32; t <= HIST_BF16; t++)
        if (s && strcmp(s, hist_dtype_words[t]) == 0) { *out = (hist_dtype_t)t; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--history-dtype: expected fp32 or bf16, got '%s'", s ? s : "");
}

static size_t esize(hist_dtype_t t) { return t == HIST_BF16 ? 2 : 4; }

int hist_init(hist_t *h, mem_arena_t *a, int64_t n, int64_t f, hist_dtype_t dtype, const char *label) {
    memset(h, 0, sizeof *h);
    if (n < 0 || f < 0) return inca_fail(INCA_EINVAL, "history table %s: bad shape %lld x %lld", label, (long long)n, (long long)f);
    h->data = mem_arena_alloc_spill(a, (size_t)n * (size_t)f * esize(dtype), label);
    if (!h->data) return INCA_ENOMEM;
    h->n = n;
    h->f = f;
    h->dtype = dtype;
    return INCA_OK;
}

int64_t hist_bytes(const hist_t *h) { return h->n * h->f * (int64_t)esize(h->dtype); }
float *hist_f32(const hist_t *h) { return h->dtype == HIST_F32 ? (float *)h->data : NULL; }

/* The row loops live in kernels/cpu/rows.c (the kernel table's CPU backend runs the same ones). */
uint16_t hist_f32_to_bf16(float x) { return kern_f32_to_bf16(x); }
float hist_bf16_to_f32(uint16_t b) { return kern_bf16_to_f32(b); }
static kern_dtype_t kdt(const hist_t *h) { return h->dtype == HIST_BF16 ? KERN_BF16 : KERN_F32; }

void hist_pull(const hist_t *h, const int64_t *ids, int64_t m, float *out) {
    kern_rows_gather(kdt(h), h->data, h->f, ids, 0, m, out);
}
void hist_pull_range(const hist_t *h, int64_t start, int64_t m, float *out) {
    kern_rows_gather(kdt(h), h->data, h->f, NULL, start, m, out);
}
void hist_push_range(hist_t *h, int64_t start, int64_t m, const float *in) {
    kern_rows_scatter(kdt(h), h->data, h->f, NULL, start, m, in);
}
void hist_push(hist_t *h, const int64_t *ids, int64_t m, const float *in) {
    kern_rows_scatter(kdt(h), h->data, h->f, ids, 0, m, in);
}
void hist_sub(const hist_t *h, const int64_t *ids, int64_t m, const float *in, float *out) {
    kern_rows_sub(kdt(h), h->data, h->f, ids, m, in, out, NULL);
}
void hist_sub_push(hist_t *h, const int64_t *ids, int64_t m, const float *in, float *out, const float *push) {
    kern_rows_sub(kdt(h), h->data, h->f, ids, m, in, out, push);
}

void hist_copy(hist_t *dst, const hist_t *src) {
    memcpy(dst->data, src->data, (size_t)hist_bytes(src));
}
