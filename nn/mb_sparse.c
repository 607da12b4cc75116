/* A mini-batch's rows of sparse features as the model's sparse input (mb_sparse.h). */
#include "nn/mb_sparse.h"
#include "nn/mb_config.h"
#include "core/alloc.h"
#include "core/status.h"
#include <stdlib.h>

static int cmp_desc_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The most a batch of batch_parts parts can hold: the largest parts' sums (of the nonzeros of the
 * CSR with row pointers rowptr, NULL: of rows; the renumbered parts are ranges of rows). */
static int batch_cap(const mb_run_t *R, const int64_t *rowptr, int64_t *cap) {
    const int64_t k = R->p->k;
    int64_t *v = inca_malloc(sizeof *v * (size_t)(k > 0 ? k : 1));
    if (!v) return INCA_ENOMEM;
    for (int64_t q = 0; q < k; q++) {
        const int64_t lo = R->p->bounds[q], hi = R->p->bounds[q + 1];
        v[q] = rowptr ? rowptr[hi] - rowptr[lo] : hi - lo;
    }
    qsort(v, (size_t)k, sizeof *v, cmp_desc_i64);
    *cap = 0;
    for (int64_t q = 0; q < k && q < R->c->batch_parts; q++) *cap += v[q];
    inca_free(v);
    return INCA_OK;
}

int mb_sparse_setup(mb_run_t *R) {
    R->xs_on = 0;
    if (mb_x_tf_dim(&R->mc) == 0 || R->c->dense_input || R->stream || !R->D.x) return INCA_OK;
    int rc = train_features_csr(R->D.n, R->D.f, R->D.x, 0.25, &R->xs);
    if (rc <= 0) return rc;   /* 0: dense enough to stay dense */
    int64_t cap = 0, rows = 0;
    if ((rc = batch_cap(R, R->xs.rowptr, &cap)) != INCA_OK || (rc = batch_cap(R, NULL, &rows)) != INCA_OK) return rc;
    if ((rc = csr_alloc(&R->xsb, rows > 0 ? rows : 1, R->D.f, cap > 0 ? cap : 1, 1)) != INCA_OK)
        return inca_fail_ctx(rc, "sparse batch rows: %lld nonzeros", (long long)cap);
    R->xsb_cap = cap;
    R->xsb_rows = rows;
    R->xs_on = 1;
    /* IncAgg's M^0 = ÂX stays sparse too (Facebook: 85 of 4714 columns a row): the operator
     * then holds no dense n x F baseline */
    if (R->method == AGG_INCAGG && (rc = csr_spgemm(&R->D.a, &R->xs, &R->m0s)) != INCA_OK)
        return inca_fail_ctx(rc, "the sparse M^0 = ÂX");
    return R->m0s.rowptr ? batch_cap(R, R->m0s.rowptr, &R->m0b_cap) : INCA_OK;
}

int mb_sparse_reserve(mb_run_t *R) {
    if (!R->xs_on) return INCA_OK;
    /* the whole graph's forward (the passes), a batch's transposed products (the steps) */
    const nn_sparse_room_t x = {.rows = R->D.n, .nnz = R->xs.nnz, .t_rows = R->xsb_rows, .t_nnz = R->xsb_cap},
                           m0 = {.rows = R->m0s.rowptr ? R->D.n : 0, .nnz = R->m0s.nnz, .t_rows = R->xsb_rows,
                                 .t_nnz = R->m0b_cap};
    return model_reserve_sparse(R->m, &x, &m0);
}

int mb_sparse_batch(mb_run_t *R, const int64_t *nodes, int64_t nb) {
    /* the bounds are the largest parts' sums: a batch past them is a bug */
    const int64_t need = csr_rows_nnz(&R->xs, nodes, nb);
    if (nb > R->xsb_rows || need > R->xsb_cap)
        return inca_fail(INCA_ERR, "sparse batch rows: %lld rows, %lld nonzeros; %lld and %lld planned", (long long)nb,
                         (long long)need, (long long)R->xsb_rows, (long long)R->xsb_cap);
    csr_take_rows(&R->xs, nodes, nb, &R->xsb);
    return model_set_sparse_input(R->m, &R->xsb);
}

int mb_sparse_whole(mb_run_t *R) { return R->xs_on ? model_set_sparse_input(R->m, &R->xs) : INCA_OK; }

void mb_sparse_done(mb_run_t *R) {
    if (R->xs_on && R->m) model_set_sparse_input(R->m, NULL);
}

void mb_sparse_free(mb_run_t *R) {
    csr_free(&R->xs);
    csr_free(&R->xsb);
    csr_free(&R->m0s);
    R->xs_on = 0;
}
