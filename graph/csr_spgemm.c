/* Sparse times sparse (csr.h csr_spgemm): Gustavson's row-by-row product with a dense
 * accumulator per thread. Tested in test_graph.c against a dense product at 1 and 2 threads. */
#include "graph/csr.h"
#include "core/alloc.h"
#include "core/status.h"
#include <stdlib.h>
#include <string.h>

static int cmp_i32(const void *x, const void *y) {
    const int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* Row i of a b: its columns into list (ascending), *c of them; with acc, their sums too (in a's
 * then b's order, whatever the thread). mark is all zero before and after. */
static int64_t row_product(const csr_t *a, const csr_t *b, int64_t i, uint8_t *mark, int32_t *list, float *acc) {
    int64_t c = 0;
    for (int64_t e = a->rowptr[i]; e < a->rowptr[i + 1]; e++) {
        const int64_t j = a->col[e];
        const float av = a->val ? a->val[e] : 1.f;
        for (int64_t t = b->rowptr[j]; t < b->rowptr[j + 1]; t++) {
            const int32_t k = b->col[t];
            if (!mark[k]) {
                mark[k] = 1;
                list[c++] = k;
                if (acc) acc[k] = 0;
            }
            if (acc) acc[k] += av * (b->val ? b->val[t] : 1.f);
        }
    }
    for (int64_t q = 0; q < c; q++) mark[list[q]] = 0;
    if (acc) qsort(list, (size_t)c, sizeof *list, cmp_i32);
    return c;
}

/* pass 0: count row i's entries into cnt[i + 1]; pass 1: write them at out->rowptr[i] */
static int spgemm_pass(const csr_t *a, const csr_t *b, int pass, int64_t *cnt, csr_t *out) {
    const int64_t m = a->n_rows, n = b->n_cols;
    int failed = 0;
#pragma omp parallel
    {
        uint8_t *mark = inca_calloc((size_t)(n > 0 ? n : 1), 1);
        int32_t *list = inca_malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
        float *acc = pass ? inca_malloc(sizeof(float) * (size_t)(n > 0 ? n : 1)) : NULL;
        const int ok = mark && list && (!pass || acc);
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 256)
        for (int64_t i = 0; i < m; i++) {
            if (!ok) continue;
            const int64_t c = row_product(a, b, i, mark, list, acc);
            if (!pass) { cnt[i + 1] = c; continue; }
            const int64_t o = out->rowptr[i];
            for (int64_t q = 0; q < c; q++) {
                out->col[o + q] = list[q];
                out->val[o + q] = acc[list[q]];
            }
        }
        inca_free(mark);
        inca_free(list);
        inca_free(acc);
    }
    return failed ? inca_fail(INCA_ENOMEM, "csr_spgemm: out of memory for a row accumulator of %lld", (long long)n) : INCA_OK;
}

int csr_spgemm(const csr_t *a, const csr_t *b, csr_t *out) {
    memset(out, 0, sizeof *out);
    if (a->n_cols != b->n_rows)
        return inca_fail(INCA_EINVAL, "csr_spgemm: %lld x %lld times %lld x %lld", (long long)a->n_rows, (long long)a->n_cols,
                         (long long)b->n_rows, (long long)b->n_cols);
    int64_t *cnt = inca_calloc((size_t)a->n_rows + 1, sizeof *cnt);
    if (!cnt) return INCA_ENOMEM;
    int rc = spgemm_pass(a, b, 0, cnt, NULL);
    for (int64_t i = 0; rc == INCA_OK && i < a->n_rows; i++) cnt[i + 1] += cnt[i];
    if (rc == INCA_OK && (rc = csr_alloc(out, a->n_rows, b->n_cols, cnt[a->n_rows], 1)) == INCA_OK) {
        memcpy(out->rowptr, cnt, sizeof *cnt * (size_t)(a->n_rows + 1));
        if ((rc = spgemm_pass(a, b, 1, NULL, out)) != INCA_OK) csr_free(out);
    }
    inca_free(cnt);
    return rc;
}
