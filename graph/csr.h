/* Compressed sparse row matrices: the one graph type of inca. A csr_t is a plain value that
 * owns its arrays when `owned` is set (csr_free releases them), or views memory owned by
 * someone else (a store map, a larger CSR) when it is not.
 * Tested in test_graph.c against hand-built graphs. */
#ifndef INCA_CSR_H
#define INCA_CSR_H
#include <stdint.h>

typedef struct csr {
    int64_t n_rows, n_cols, nnz;
    int64_t *rowptr;   /* n_rows + 1 entries */
    int32_t *col;      /* nnz column ids, ascending within a row */
    float *val;        /* nnz values, or NULL: every stored entry is 1 */
    int owned;         /* 1: csr_free frees rowptr/col/val */
} csr_t;

/* Allocate an owned CSR (val only when with_val). rowptr is zeroed. */
int csr_alloc(csr_t *g, int64_t n_rows, int64_t n_cols, int64_t nnz, int with_val);
void csr_free(csr_t *g);   /* frees when owned, then zeroes *g; NULL-safe */

enum { CSR_SYMMETRIZE = 1, CSR_SELF_LOOPS = 2, CSR_DROP_SELF_LOOPS = 4 };
/* Build an n x n pattern CSR (val NULL) from m edges src[i] -> dst[i] (ids in [0,n), checked),
 * adding reverses with CSR_SYMMETRIZE, one self-loop per node with CSR_SELF_LOOPS, removing
 * self-loops with CSR_DROP_SELF_LOOPS; duplicates always removed; columns sorted.
 * Runs in O(n + m) memory beyond the output (counting sort). */
int csr_from_edges(csr_t *out, int64_t n, const int64_t *src, const int64_t *dst, int64_t m,
                   unsigned flags);

/* Â = D̃^-½ (A + I) D̃^-½ (GCN), with degrees counted after adding I; A is a pattern or weighted. */
int csr_gcn_norm(const csr_t *a, csr_t *out);
/* Row-mean: Â[i,j] = 1/deg(i) over the stored entries (GraphSAGE mean aggregator); rows with
 * no entries stay empty. */
int csr_mean_norm(const csr_t *a, csr_t *out);
/* Rows [r0, r1) of a as a borrowed CSR (not owned: rowptr points into a's, so rowptr[0] may be
 * non-zero; col and val are a's). Valid while a is. 0 <= r0 <= r1 <= a->n_rows. */
csr_t csr_row_view(const csr_t *a, int64_t r0, int64_t r1);
/* out = a b (owned, with values; a missing val counts as all ones), columns ascending in each
 * row; each entry summed in a's then b's order, so the same bits at any thread count. */
int csr_spgemm(const csr_t *a, const csr_t *b, csr_t *out);
/* Rows ids[0..n) of a, in that order, into out (values carried): the nonzeros they hold
 * (csr_rows_nnz), and the copy into out's arrays, which the caller sized (at least n + 1 row
 * pointers and csr_rows_nnz entries; with values when a has them). out's n_rows and nnz are set. */
int64_t csr_rows_nnz(const csr_t *a, const int64_t *ids, int64_t n);
void csr_take_rows(const csr_t *a, const int64_t *ids, int64_t n, csr_t *out);
/* out = aᵀ (values carried). */
int csr_transpose(const csr_t *a, csr_t *out);
/* 1 when row i stores column j (binary search; columns are sorted within a row). */
int csr_has_entry(const csr_t *a, int64_t i, int32_t j);
/* 1 when the pattern is symmetric. */
int csr_is_symmetric(const csr_t *a);
/* 1 when the matrix is: the pattern, and a[j][i] == a[i][j] bit for bit where values are stored. */
int csr_is_symmetric_values(const csr_t *a);
/* Relabel nodes: new id of old node v is perm[v]. Rows and columns move together; columns
 * are re-sorted. */
int csr_permute(const csr_t *a, const int64_t *perm, csr_t *out);
#endif
