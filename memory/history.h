/* History tables: one n x f matrix per hidden layer (GAS histories; IncAgg baselines M^l,
 * snapshots S^l and push buffers P^l), stored as fp32 or bf16 (round to nearest even), in a
 * mem_arena. Rows are addressed by node id (in the partition's contiguous numbering).
 * Pull converts to fp32; push converts from fp32. Not thread-safe for concurrent writes to the
 * same rows; pull/push are parallel over rows (one OpenMP region per call, and only for
 * tables slices of at least KERN_ROWS_PAR_MIN elements, kernels/kernels.h: small copies are not
 * worth a fork/join).
 * Tested in test_memory.c (fp32 exact round trip, bf16 rounding against hand-computed bits). */
#ifndef INCA_HISTORY_H
#define INCA_HISTORY_H
#include <stdint.h>
#include "memory/arena.h"

typedef enum { HIST_F32 = 0, HIST_BF16 = 1 } hist_dtype_t;

typedef struct hist {
    int64_t n, f;
    hist_dtype_t dtype;
    void *data;        /* n * f elements of dtype, owned by the arena */
} hist_t;

/* "fp32" / "bf16" (INCA_EINVAL naming --history-dtype otherwise). */
int hist_dtype_parse(const char *s, hist_dtype_t *out);
extern const char *const hist_dtype_words[2];   /* "fp32", "bf16": indexed by hist_dtype_t */
/* Allocate a zeroed table in the arena (label for the byte report). */
int hist_init(hist_t *h, mem_arena_t *a, int64_t n, int64_t f, hist_dtype_t dtype, const char *label);
int64_t hist_bytes(const hist_t *h);
/* Direct fp32 view (NULL for bf16 tables). */
float *hist_f32(const hist_t *h);

/* Gather rows ids[0..m) into out (m x f, fp32). */
void hist_pull(const hist_t *h, const int64_t *ids, int64_t m, float *out);
/* Copy rows [start, start+m) into out (m x f). */
void hist_pull_range(const hist_t *h, int64_t start, int64_t m, float *out);
/* Write rows [start, start+m) from in (m x f, fp32). */
void hist_push_range(hist_t *h, int64_t start, int64_t m, const float *in);
/* Scatter in (m x f) to rows ids[0..m). */
void hist_push(hist_t *h, const int64_t *ids, int64_t m, const float *in);
/* out[i,:] = in[i,:] - row ids[i] (m x f): IncAgg's residual Δ = H_B − S_B in one pass. */
void hist_sub(const hist_t *h, const int64_t *ids, int64_t m, const float *in, float *out);
/* out[i,:] = in[i,:] - row ids[i], then row ids[i] <- push[i,:], row by row in one pass (the
 * rows stay in cache between the read and the write): hist_sub followed by hist_push on the
 * same table, for distinct ids. IncAgg's single-buffer step. */
void hist_sub_push(hist_t *h, const int64_t *ids, int64_t m, const float *in, float *out, const float *push);
/* dst <- src (same shape and dtype), e.g. the IncAgg snapshot S <- P. */
void hist_copy(hist_t *dst, const hist_t *src);

/* bf16 conversions (round to nearest even; NaN stays NaN). */
uint16_t hist_f32_to_bf16(float x);
float hist_bf16_to_f32(uint16_t b);
#endif
