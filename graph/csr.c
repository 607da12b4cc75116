/* CSR construction (counting sort + per-row sort/dedupe), normalisations, transpose and
 * permutation. Tested in test_graph.c against hand-built graphs and brute-force references. */
#include "graph/csr.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int csr_alloc(csr_t *g, int64_t n_rows, int64_t n_cols, int64_t nnz, int with_val) {
    memset(g, 0, sizeof *g);
    if (n_rows < 0 || n_cols < 0 || nnz < 0) return inca_fail(INCA_EINVAL, "csr: negative size");
    g->rowptr = inca_calloc((size_t)n_rows + 1, sizeof *g->rowptr);
    g->col = inca_malloc((size_t)nnz * sizeof *g->col);
    g->val = with_val ? inca_malloc((size_t)nnz * sizeof *g->val) : NULL;
    if (!g->rowptr || !g->col || (with_val && !g->val)) {
        inca_free(g->rowptr); inca_free(g->col); inca_free(g->val);
        memset(g, 0, sizeof *g);
        return INCA_ENOMEM;
    }
    g->n_rows = n_rows;
    g->n_cols = n_cols;
    g->nnz = nnz;
    g->owned = 1;
    return INCA_OK;
}

void csr_free(csr_t *g) {
    if (!g) return;
    if (g->owned) {
        inca_free(g->rowptr);
        inca_free(g->col);
        inca_free(g->val);
    }
    memset(g, 0, sizeof *g);
}

/* Sorts without a comparator callback: insertion sort for short rows (most rows of real graphs),
 * an iterative median-of-three quicksort above that (qsort's callback cost was 38% of building
 * a 100M-edge CSR). Instantiated for column ids and for packed (col, value) keys. */
#define DEFINE_SORT(NAME, T)                                                                   \
    static void NAME(T *a, int64_t n) {                                                        \
        int64_t stack[128];                                                                    \
        int sp = 0;                                                                            \
        int64_t lo = 0, hi = n - 1;                                                            \
        for (;;) {                                                                             \
            while (hi - lo >= 24) {                                                            \
                int64_t mid = lo + (hi - lo) / 2;                                              \
                T x = a[lo], y = a[mid], z = a[hi], t;                                         \
                T piv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y)); \
                int64_t i = lo, j = hi;                                                        \
                while (i <= j) {                                                               \
                    while (a[i] < piv) i++;                                                    \
                    while (a[j] > piv) j--;                                                    \
                    if (i <= j) { t = a[i]; a[i] = a[j]; a[j] = t; i++; j--; }                 \
                }                                                                              \
                /* push the larger side, go on with the smaller: <= log2(n) pending ranges */ \
                if (j - lo < hi - i) {                                                         \
                    if (i < hi) { stack[sp++] = i; stack[sp++] = hi; }                         \
                    hi = j;                                                                    \
                } else {                                                                       \
                    if (lo < j) { stack[sp++] = lo; stack[sp++] = j; }                         \
                    lo = i;                                                                    \
                }                                                                              \
            }                                                                                  \
            for (int64_t p = lo + 1; p <= hi; p++) {                                           \
                T v = a[p];                                                                    \
                int64_t q = p - 1;                                                             \
                while (q >= lo && a[q] > v) { a[q + 1] = a[q]; q--; }                          \
                a[q + 1] = v;                                                                  \
            }                                                                                  \
            if (sp == 0) break;                                                                \
            hi = stack[--sp];                                                                  \
            lo = stack[--sp];                                                                  \
        }                                                                                      \
    }
DEFINE_SORT(sort_i32, int32_t)
DEFINE_SORT(sort_u64, uint64_t)

/* Sort (col, val) pairs of one row by col: packed into u64 keys (cols are unique per row). */
static void sort_pairs(int32_t *col, float *val, int64_t n, uint64_t *tmp) {
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits = 0;
        if (val) memcpy(&bits, &val[i], 4);
        tmp[i] = ((uint64_t)(uint32_t)col[i] << 32) | bits;
    }
    sort_u64(tmp, n);
    for (int64_t i = 0; i < n; i++) {
        col[i] = (int32_t)(tmp[i] >> 32);
        if (val) {
            uint32_t bits = (uint32_t)tmp[i];
            memcpy(&val[i], &bits, 4);
        }
    }
}

/* Row blocks for csr_from_edges: one per thread, at most 16 (every block reads all the edges),
 * one in all below 64k rows, where the counts are in cache anyway. */
static int64_t csr_blocks(int64_t n) {
    int t = inca_threads();
    return n < 65536 ? 1 : t < 16 ? t : 16;
}

int csr_from_edges(csr_t *out, int64_t n, const int64_t *src, const int64_t *dst, int64_t m, unsigned flags) {
    memset(out, 0, sizeof *out);
    if (n < 0 || n > INT32_MAX)
        return inca_fail(INCA_EINVAL, "csr: %lld nodes do not fit 32-bit column ids", (long long)n);
    const int sym = (flags & CSR_SYMMETRIZE) != 0, loops = (flags & CSR_SELF_LOOPS) != 0,
              drop = (flags & CSR_DROP_SELF_LOOPS) != 0;
    for (int64_t e = 0; e < m; e++) {
        if (src[e] < 0 || src[e] >= n || dst[e] < 0 || dst[e] >= n)
            return inca_fail(INCA_EINVAL, "edge %lld (%lld -> %lld): node id out of range [0, %lld)",
                             (long long)e, (long long)src[e], (long long)dst[e], (long long)n);
    }
    int64_t *rowptr = inca_calloc((size_t)n + 2, sizeof *rowptr);
    if (!rowptr) return INCA_ENOMEM;
    /* Rows are cut into blocks, one thread a block: every thread reads all the edges but counts
     * and places only those of its rows, so its random writes stay within its block (the row
     * counts of a 10M-node graph are 80 MB, cache misses at every edge when one thread does
     * all). The counts and each row's entries are the same at any thread count (rows are
     * sorted below). */
    const int64_t nb = csr_blocks(n);
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t b = 0; b < nb; b++) {
        const int64_t r0 = n * b / nb, r1 = n * (b + 1) / nb;
        for (int64_t e = 0; e < m; e++) {
            const int64_t s = src[e], d = dst[e];
            if (s == d && (drop || loops)) continue;   /* loops re-added once below */
            if (s >= r0 && s < r1) rowptr[s + 2]++;
            if (sym && s != d && d >= r0 && d < r1) rowptr[d + 2]++;
        }
    }
    if (loops)
        for (int64_t v = 0; v < n; v++) rowptr[v + 2]++;
    for (int64_t v = 0; v < n; v++) rowptr[v + 2] += rowptr[v + 1];
    int64_t total = rowptr[n + 1];
    int32_t *col = inca_malloc((size_t)total * sizeof *col);
    if (!col) { inca_free(rowptr); return INCA_ENOMEM; }
    /* rowptr[v+1] is the fill cursor of row v */
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t b = 0; b < nb; b++) {
        const int64_t r0 = n * b / nb, r1 = n * (b + 1) / nb;
        if (loops)
            for (int64_t v = r0; v < r1; v++) col[rowptr[v + 1]++] = (int32_t)v;
        for (int64_t e = 0; e < m; e++) {
            const int64_t s = src[e], d = dst[e];
            if (s == d && (drop || loops)) continue;
            if (s >= r0 && s < r1) col[rowptr[s + 1]++] = (int32_t)d;
            if (sym && s != d && d >= r0 && d < r1) col[rowptr[d + 1]++] = (int32_t)s;
        }
    }
    /* now rowptr[0..n] are row starts; sort and dedupe each row, counting survivors */
    int64_t *kept = inca_malloc((size_t)n * sizeof *kept + 1);
    if (!kept) { inca_free(rowptr); inca_free(col); return INCA_ENOMEM; }
#pragma omp parallel for schedule(dynamic, 1024)
    for (int64_t v = 0; v < n; v++) {
        int32_t *r = col + rowptr[v];
        int64_t len = rowptr[v + 1] - rowptr[v], k = 0;
        sort_i32(r, len);
        for (int64_t i = 0; i < len; i++)
            if (k == 0 || r[i] != r[k - 1]) r[k++] = r[i];
        kept[v] = k;
    }
    /* compact in place: new positions never pass old ones */
    int64_t pos = 0;
    for (int64_t v = 0; v < n; v++) {
        int64_t start = rowptr[v];
        if (pos != start) memmove(col + pos, col + start, (size_t)kept[v] * sizeof *col);
        rowptr[v] = pos;
        pos += kept[v];
    }
    rowptr[n] = pos;
    inca_free(kept);
    int32_t *shrunk = inca_realloc(col, (size_t)pos * sizeof *col);
    if (shrunk || pos == 0) col = shrunk ? shrunk : col;
    out->n_rows = out->n_cols = n;
    out->nnz = pos;
    out->rowptr = rowptr;
    out->col = col;
    out->val = NULL;
    out->owned = 1;
    return INCA_OK;
}

static inline float entry(const csr_t *a, int64_t k) { return a->val ? a->val[k] : 1.0f; }

int csr_gcn_norm(const csr_t *a, csr_t *out) {
    memset(out, 0, sizeof *out);
    if (a->n_rows != a->n_cols) return inca_fail(INCA_EINVAL, "csr_gcn_norm: matrix is not square");
    int64_t n = a->n_rows, missing = 0;
    double *deg = inca_malloc((size_t)n * sizeof *deg + 1);
    uint8_t *hasdiag = inca_calloc((size_t)n + 1, 1);
    int rc = INCA_ENOMEM;
    if (!deg || !hasdiag) goto done;
    for (int64_t i = 0; i < n; i++) {
        double d = 0;
        for (int64_t k = a->rowptr[i]; k < a->rowptr[i + 1]; k++) {
            d += entry(a, k);
            if (a->col[k] == i) hasdiag[i] = 1;
        }
        if (!hasdiag[i]) { d += 1.0; missing++; }   /* PyG's add_remaining_self_loops */
        deg[i] = d;
    }
    rc = csr_alloc(out, n, n, a->nnz + missing, 1);
    if (rc) goto done;
    int64_t p = 0;
    for (int64_t i = 0; i < n; i++) {
        out->rowptr[i] = p;
        double di = deg[i] > 0 ? 1.0 / sqrt(deg[i]) : 0.0;
        int placed = hasdiag[i];
        for (int64_t k = a->rowptr[i]; k < a->rowptr[i + 1]; k++) {
            int32_t j = a->col[k];
            if (!placed && j > i) {
                out->col[p] = (int32_t)i;
                out->val[p++] = (float)(di * di);
                placed = 1;
            }
            double dj = deg[j] > 0 ? 1.0 / sqrt(deg[j]) : 0.0;
            out->col[p] = j;
            out->val[p++] = (float)(entry(a, k) * (di * dj));   /* (j, i) gets the same bits when a is symmetric */
        }
        if (!placed) {
            out->col[p] = (int32_t)i;
            out->val[p++] = (float)(di * di);
        }
    }
    out->rowptr[n] = p;
    rc = INCA_OK;
done:
    inca_free(deg);
    inca_free(hasdiag);
    return rc;
}

int csr_mean_norm(const csr_t *a, csr_t *out) {
    int rc = csr_alloc(out, a->n_rows, a->n_cols, a->nnz, 1);
    if (rc) return rc;
    memcpy(out->rowptr, a->rowptr, ((size_t)a->n_rows + 1) * sizeof *a->rowptr);
    memcpy(out->col, a->col, (size_t)a->nnz * sizeof *a->col);
    for (int64_t i = 0; i < a->n_rows; i++) {
        double s = 0;
        for (int64_t k = a->rowptr[i]; k < a->rowptr[i + 1]; k++) s += entry(a, k);
        for (int64_t k = a->rowptr[i]; k < a->rowptr[i + 1]; k++)
            out->val[k] = s != 0 ? (float)(entry(a, k) / s) : 0.0f;
    }
    return INCA_OK;
}

csr_t csr_row_view(const csr_t *a, int64_t r0, int64_t r1) {
    csr_t v = {.n_rows = r1 - r0, .n_cols = a->n_cols, .nnz = a->rowptr[r1] - a->rowptr[r0],
               .rowptr = a->rowptr + r0, .col = a->col, .val = a->val, .owned = 0};
    return v;
}

int csr_transpose(const csr_t *a, csr_t *out) {
    int rc = csr_alloc(out, a->n_cols, a->n_rows, a->nnz, a->val != NULL);
    if (rc) return rc;
    for (int64_t k = 0; k < a->nnz; k++) out->rowptr[a->col[k] + 1]++;
    for (int64_t j = 0; j < a->n_cols; j++) out->rowptr[j + 1] += out->rowptr[j];
    int64_t *cur = inca_malloc(((size_t)a->n_cols + 1) * sizeof *cur);
    if (!cur) { csr_free(out); return INCA_ENOMEM; }
    memcpy(cur, out->rowptr, ((size_t)a->n_cols + 1) * sizeof *cur);
    /* rows visited in order, so each output row receives ascending columns */
    for (int64_t i = 0; i < a->n_rows; i++)
        for (int64_t k = a->rowptr[i]; k < a->rowptr[i + 1]; k++) {
            int64_t q = cur[a->col[k]]++;
            out->col[q] = (int32_t)i;
            if (a->val) out->val[q] = a->val[k];
        }
    inca_free(cur);
    return INCA_OK;
}

/* the position of entry (i, j), -1 when absent */
static int64_t csr_find(const csr_t *a, int64_t i, int32_t j) {
    int64_t lo = a->rowptr[i], hi = a->rowptr[i + 1];
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (a->col[mid] < j) lo = mid + 1;
        else hi = mid;
    }
    return lo < a->rowptr[i + 1] && a->col[lo] == j ? lo : -1;
}

int64_t csr_rows_nnz(const csr_t *a, const int64_t *ids, int64_t n) {
    int64_t e = 0;
    for (int64_t i = 0; i < n; i++) e += a->rowptr[ids[i] + 1] - a->rowptr[ids[i]];
    return e;
}

void csr_take_rows(const csr_t *a, const int64_t *ids, int64_t n, csr_t *out) {
    int64_t e = 0;
    out->rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t lo = a->rowptr[ids[i]], cnt = a->rowptr[ids[i] + 1] - lo;
        memcpy(out->col + e, a->col + lo, sizeof(int32_t) * (size_t)cnt);
        if (a->val) memcpy(out->val + e, a->val + lo, sizeof(float) * (size_t)cnt);
        e += cnt;
        out->rowptr[i + 1] = e;
    }
    out->n_rows = n;
    out->nnz = e;
}

int csr_has_entry(const csr_t *a, int64_t i, int32_t j) { return csr_find(a, i, j) >= 0; }

/* the pattern's symmetry, and with values the values' too */
static int csr_symmetric(const csr_t *a, int values) {
    if (a->n_rows != a->n_cols) return 0;
    int ok = 1;
    const int64_t last = a->rowptr[a->n_rows] - 1;
    /* each entry looks up a row anywhere in the graph: start the misses of the lookups ahead
     * (the rowptr of entry k + 8, the row of entry k + 4), or a 10M-node graph's check waits on
     * memory one lookup at a time: 11.7 -> 4.7 s on the 10M csbm, 2 threads) */
#pragma omp parallel for schedule(dynamic, 4096) reduction(&& : ok)
    for (int64_t i = 0; i < a->n_rows; i++)
        for (int64_t k = a->rowptr[i]; k < a->rowptr[i + 1]; k++) {
            __builtin_prefetch(&a->rowptr[a->col[k + 8 < last ? k + 8 : last]]);
            __builtin_prefetch(&a->col[a->rowptr[a->col[k + 4 < last ? k + 4 : last]]]);
            const int64_t t = ok ? csr_find(a, a->col[k], (int32_t)i) : -1;
            ok = ok && t >= 0 && (!values || a->val[t] == a->val[k]);
        }
    return ok;
}

int csr_is_symmetric(const csr_t *a) { return csr_symmetric(a, 0); }
int csr_is_symmetric_values(const csr_t *a) { return csr_symmetric(a, a->val != NULL); }

int csr_permute(const csr_t *a, const int64_t *perm, csr_t *out) {
    if (a->n_rows != a->n_cols) return inca_fail(INCA_EINVAL, "csr_permute: matrix is not square");
    int64_t n = a->n_rows;
    int64_t *inv = inca_malloc((size_t)n * sizeof *inv + 1);
    if (!inv) return INCA_ENOMEM;
    for (int64_t v = 0; v < n; v++) inv[v] = -1;
    for (int64_t v = 0; v < n; v++) {
        if (perm[v] < 0 || perm[v] >= n || inv[perm[v]] >= 0) {
            inca_free(inv);
            return inca_fail(INCA_EINVAL, "csr_permute: not a permutation at %lld", (long long)v);
        }
        inv[perm[v]] = v;
    }
    int rc = csr_alloc(out, n, n, a->nnz, a->val != NULL);
    if (rc) { inca_free(inv); return rc; }
    int64_t maxdeg = 0;
    for (int64_t u = 0; u < n; u++) {
        int64_t v = inv[u], d = a->rowptr[v + 1] - a->rowptr[v];
        out->rowptr[u + 1] = out->rowptr[u] + d;
        if (d > maxdeg) maxdeg = d;
    }
    uint64_t *tmp = inca_malloc((size_t)maxdeg * sizeof *tmp + 8);
    if (!tmp) { inca_free(inv); csr_free(out); return INCA_ENOMEM; }
    for (int64_t u = 0; u < n; u++) {
        int64_t v = inv[u], o = out->rowptr[u];
        for (int64_t k = a->rowptr[v]; k < a->rowptr[v + 1]; k++, o++) {
            out->col[o] = (int32_t)perm[a->col[k]];
            if (a->val) out->val[o] = a->val[k];
        }
        int64_t d = out->rowptr[u + 1] - out->rowptr[u];
        sort_pairs(out->col + out->rowptr[u], out->val ? out->val + out->rowptr[u] : NULL, d, tmp);
    }
    inca_free(tmp);
    inca_free(inv);
    return INCA_OK;
}
