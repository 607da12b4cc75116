/* The partition-ordered layout (see layout.h). Tested in test_layout.c. */
#include "nn/layout.h"
#include "core/alloc.h"
#include "core/status.h"
#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "loaders/dataset.h"
#include "memory/arena.h"
#include "nn/layer.h"
#include "nn/train_common.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

const char *layout_featnorm_name(int featnorm) {
    return featnorm == TRAIN_FEATNORM_ROW ? "row" : featnorm == TRAIN_FEATNORM_STANDARD ? "standard" : "none";
}

void layout_x_name(char *buf, size_t len, const char *part, int featnorm) {
    snprintf(buf, len, "layout/%s/%s/x", part, layout_featnorm_name(featnorm));
}

void layout_m0_name(char *buf, size_t len, const char *part, int featnorm, int norm, hist_dtype_t dt) {
    snprintf(buf, len, "layout/%s/%s/m0-%s-%s", part, layout_featnorm_name(featnorm), norm == NN_NORM_MEAN ? "mean" : "gcn",
             dt == HIST_BF16 ? "bf16" : "fp32");
}

static void adj_names(char (*nm)[192], const char *part, const char *which, int norm) {
    static const char *const parts[3] = {"rowptr", "col", "val"};
    for (int i = 0; i < 3; i++) snprintf(nm[i], 192, "layout/%s/%s-%s/%s", part, which, norm == NN_NORM_MEAN ? "mean" : "gcn", parts[i]);
}

/* gcn: Âᵀ is stored for a directed graph only; a symmetric graph's layout says so in this
 * one-value array, written after Â, so a gcn layout with neither (made before Âᵀ was kept for
 * gcn, or cut short between the two writes) is rebuilt rather than trained with Â for Âᵀ */
static void sym_name(char *buf, size_t len, const char *part) { snprintf(buf, len, "layout/%s/adj-gcn/symmetric", part); }

/* Elements [e0, e0 + cnt) of the stored x (row-major, f a row) into their renumbered rows of x,
 * each checked finite. src is bytes: a chunk small enough for an LMDB leaf page is not aligned
 * for floats (the large ones, overflow pages, are). */
static int scatter_rows(const char *path, const unsigned char *src, int64_t e0, int64_t cnt, int64_t f,
                        const int64_t *perm, float *x) {
    for (int64_t e = e0; e < e0 + cnt;) {   /* a chunk may start or end inside a row */
        const int64_t v = e / f, off = e % f, len = f - off < e0 + cnt - e ? f - off : e0 + cnt - e;
        float *dst = x + perm[v] * f + off;
        memcpy(dst, src + sizeof *x * (size_t)(e - e0), sizeof *x * (size_t)len);
        for (int64_t j = 0; j < len; j++)
            if (!isfinite(dst[j]))
                return inca_fail(INCA_EINVAL, "%s: array 'x' entry %lld (row %lld) is not finite: the store is corrupt", path,
                                 (long long)(e + j), (long long)v);
        e += len;
    }
    return INCA_OK;
}

/* A buffer of `bytes` for an array of the layout: anonymous (inca_malloc; the caller frees it
 * with inca_free), or with fb a file-backed block of that arena (freed with it). */
static void *buf_get(mem_arena_t *fb, size_t bytes, const char *label) {
    return fb ? mem_arena_alloc_spill(fb, bytes, label) : inca_malloc(bytes);
}
static void buf_put(mem_arena_t *fb, void *p) {
    if (!fb) inca_free(p);
}

/* x renumbered by p and normalised, as mb_data_prepare does in memory (buf_put frees). Read
 * chunk by chunk from the store's map: no second copy of the features. */
static int build_x(store_t *s, const partition_t *p, int featnorm, mem_arena_t *fb, float **out) {
    const store_meta_t *m = store_meta(s);
    const int64_t n = m->nodes, f = m->features;
    *out = NULL;
    if (f < 1) return inca_fail(INCA_EINVAL, "%s: the dataset has no features", store_path(s));
    store_array_info_t info;
    int rc = store_array_info(s, "x", &info);
    if (rc != INCA_OK) return rc;
    if (info.dtype != DT_F32 || info.count != n * f)
        return inca_fail(INCA_EINVAL, "%s: array 'x' has %lld values of dtype %d, expected %lld f32", store_path(s),
                         (long long)info.count, (int)info.dtype, (long long)(n * f));
    float *x = buf_get(fb, sizeof *x * (size_t)(n * f), "layout x");
    if (!x) return INCA_ENOMEM;
    /* chunks in parallel: a chunk's elements land in rows (or the parts of rows) no other chunk
     * writes; the first failure (lowest chunk) is the one reported */
    int64_t bad = info.nchunks;
    char msg[1024] = "";
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t c = 0; c < info.nchunks; c++) {
        const void *ptr = NULL;
        int64_t cnt = 0;
        int r = store_array_chunk(s, "x", c, &ptr, &cnt);
        if (r == INCA_OK && cnt != (c + 1 < info.nchunks ? info.chunk_elems : n * f - c * info.chunk_elems))
            r = inca_fail(INCA_EINVAL, "%s: array 'x' chunk %lld holds %lld values", store_path(s), (long long)c, (long long)cnt);
        if (r == INCA_OK) r = train_features_check(featnorm, ptr, c * info.chunk_elems, cnt, f);
        if (r == INCA_OK) r = scatter_rows(store_path(s), ptr, c * info.chunk_elems, cnt, f, p->perm, x);
        if (r != INCA_OK) {
#pragma omp critical(layout_build_x)
            if (c < bad) {
                bad = c;
                rc = r;
                snprintf(msg, sizeof msg, "%s", inca_errmsg());
            }
        }
    }
    if (rc != INCA_OK) inca_fail(rc, "%s", msg);   /* the message on the caller's thread */
    if (rc != INCA_OK) {
        buf_put(fb, x);
        return rc;
    }
    train_features_prepare(featnorm, n, f, x, x);
    *out = x;
    return INCA_OK;
}

/* Â (and Âᵀ for mean) of the renumbered graph, as mb_data_prepare builds it in memory. */
static int build_adj(const partition_t *p, const csr_t *adj, int norm, csr_t *a, csr_t *at) {
    csr_t adjp = {0};
    int rc = csr_permute(adj, p->perm, &adjp);
    if (rc == INCA_OK) rc = nn_adj_build(&adjp, norm, a, at);
    csr_free(&adjp);
    return rc;
}

/* M^0 = Â x (caller frees), in blocks of rows: fp32 straight into the output, bf16 through one
 * block of fp32 rounded by the encode kernel (never an n x f fp32 copy beside the bf16 one).
 * A row's sum does not depend on the block it is in: the bits of one SpMM over all rows. */
#define M0_BLOCK_ROWS 65536
static int build_m0(const csr_t *a, const float *x, int64_t f, hist_dtype_t dt, mem_arena_t *fb, void **out) {
    const int64_t n = a->n_rows, es = dt == HIST_BF16 ? 2 : 4;
    kern_ctx_t *kc = kc_cpu();
    kern_mat_t *am = NULL;
    float *blk = NULL;
    void *m0 = NULL;
    *out = NULL;
    int rc = kc_mat_upload(kc, a, &am);
    if (rc == INCA_OK && !(m0 = buf_get(fb, (size_t)(es * n * f), "layout M0"))) rc = INCA_ENOMEM;
    if (rc == INCA_OK && dt == HIST_BF16 && !(blk = inca_malloc(sizeof *blk * (size_t)(M0_BLOCK_ROWS * f)))) rc = INCA_ENOMEM;
    for (int64_t r0 = 0; rc == INCA_OK && r0 < n; r0 += M0_BLOCK_ROWS) {
        const int64_t r1 = n - r0 < M0_BLOCK_ROWS ? n : r0 + M0_BLOCK_ROWS;
        kern_mat_t *rows = NULL;
        float *dst = blk ? blk : (float *)m0 + r0 * f;
        if ((rc = kc_mat_rows_view(kc, am, r0, r1, &rows)) == INCA_OK) rc = kc_spmm(kc, rows, NULL, x, f, 1.f, 0.f, dst);
        if (rc == INCA_OK && blk) rc = kc_encode(kc, KERN_BF16, (r1 - r0) * f, blk, (uint16_t *)m0 + r0 * f);
        kc_mat_free(kc, &rows);
    }
    kc_mat_free(kc, &am);
    inca_free(blk);
    if (rc != INCA_OK) buf_put(fb, m0);
    else *out = m0;
    return rc;
}

/* the three arrays of g under names nm, one transaction */
static int put_csr(store_t *s, char (*nm)[192], const csr_t *g) {
    store_wtx_t *w = NULL;
    int rc = store_write_begin(s, &w);
    if (rc == INCA_OK) rc = store_wtx_put_array_whole(w, nm[0], DT_I64, g->rowptr, g->n_rows + 1);
    if (rc == INCA_OK) rc = store_wtx_put_array_whole(w, nm[1], DT_I32, g->col, g->nnz);
    if (rc == INCA_OK) rc = store_wtx_put_array_whole(w, nm[2], DT_F32, g->val, g->nnz);
    if (rc == INCA_OK) return store_write_commit(&w);
    store_write_abort(&w);
    return rc;
}

/* side: a side file whatever the size (store_wtx_put_array_side) */
static int put_whole(store_t *s, const char *name, store_dtype_t dt, const void *data, int64_t count, int side) {
    store_wtx_t *w = NULL;
    int rc = store_write_begin(s, &w);
    if (rc == INCA_OK)
        rc = side ? store_wtx_put_array_side(w, name, dt, data, count) : store_wtx_put_array_whole(w, name, dt, data, count);
    if (rc == INCA_OK) return store_write_commit(&w);
    store_write_abort(&w);
    return rc;
}

static int csr_view(store_t *s, const partition_t *p, const char *which, int norm, int featnorm, csr_t *g);

/* Â (and Âᵀ: mean's, a directed graph's) built from adj (NULL: loaded) and stored; *a keeps Â in memory */
static int write_adj(store_t *s, const partition_t *p, const csr_t *adj, int norm, char (*an)[192], char (*tn)[192],
                     csr_t *a) {
    csr_t own = {0}, at = {0};
    int rc = INCA_OK;
    if (!adj) {
        rc = dataset_load_adj(s, &own);
        adj = &own;
    }
    if (rc == INCA_OK) rc = build_adj(p, adj, norm, a, &at);
    csr_free(&own);
    if (rc == INCA_OK && (rc = put_csr(s, an, a)) == INCA_OK && at.rowptr) rc = put_csr(s, tn, &at);
    if (rc == INCA_OK && !at.rowptr && norm != NN_NORM_MEAN) {
        char sym[192];
        const int32_t one = 1;
        sym_name(sym, sizeof sym, p->man.name);
        rc = put_whole(s, sym, DT_I32, &one, 1, 0);
    }
    csr_free(&at);
    return rc;
}

int layout_ensure(store_t *s, const partition_t *p, const csr_t *adj, int featnorm, int want_m0, int norm,
                  hist_dtype_t dt, int file_backed, int *built) {
    char xn[192], mn[192], an[3][192], tn[3][192];
    const store_meta_t *m = store_meta(s);
    if (built) *built = 0;
    if (!m || m->nodes != p->n)
        return inca_fail(INCA_EINVAL, "%s: partitioning %s covers %lld nodes, the store %lld", store_path(s), p->man.name,
                         (long long)p->n, (long long)(m ? m->nodes : -1));
    const int64_t n = m->nodes, f = m->features;
    layout_x_name(xn, sizeof xn, p->man.name, featnorm);
    layout_m0_name(mn, sizeof mn, p->man.name, featnorm, norm, dt);
    adj_names(an, p->man.name, "adj", norm);
    adj_names(tn, p->man.name, "adjt", norm);
    const int need_x = !store_has_array(s, xn), need_m0 = want_m0 && !store_has_array(s, mn);
    char sym[192];
    sym_name(sym, sizeof sym, p->man.name);
    const int need_a = !store_has_array(s, an[2]) || (norm == NN_NORM_MEAN && !store_has_array(s, tn[2])) ||
                       (norm != NN_NORM_MEAN && !store_has_array(s, tn[2]) && !store_has_array(s, sym));
    if (!need_x && !need_m0 && !need_a) return INCA_OK;
    float *x = NULL;
    void *m0 = NULL;
    csr_t a = {0};
    mem_arena_t *fb = NULL;   /* file_backed: the maps of x and M^0, in the store's folder */
    int rc = file_backed ? mem_arena_create(&fb) : INCA_OK;
    if (rc == INCA_OK && fb) rc = mem_arena_set_spill(fb, 0, store_path(s));
    if (rc == INCA_OK && need_a) rc = write_adj(s, p, adj, norm, an, tn, &a);
    if (rc == INCA_OK && need_a && built) *built |= 4;
    /* else M^0 from the stored Â (a view, valid until the next write: M^0 is computed first) */
    if (rc == INCA_OK && need_m0 && !need_a) rc = csr_view(s, p, "adj", norm, featnorm, &a);
    if (rc == INCA_OK && (need_x || need_m0)) rc = build_x(s, p, featnorm, fb, &x);   /* M^0 from the same bits */
    if (rc == INCA_OK && need_m0) rc = build_m0(&a, x, f, dt, fb, &m0);
    csr_free(&a);
    if (rc == INCA_OK && need_x && (rc = put_whole(s, xn, DT_F32, x, n * f, file_backed)) == INCA_OK && built) *built |= 1;
    buf_put(fb, x);
    if (rc == INCA_OK && need_m0 &&
        (rc = put_whole(s, mn, dt == HIST_BF16 ? DT_BF16 : DT_F32, m0, n * f, file_backed)) == INCA_OK && built)
        *built |= 2;
    buf_put(fb, m0);
    mem_arena_destroy(&fb);
#ifdef __GLIBC__
    /* Â's temporaries were freed inside the heap: hand the pages back, or they stay in the
     * process's anonymous memory (the baseline --memory-budget counts) for the whole run */
    if (file_backed) (void)malloc_trim(0);
#endif
    return rc == INCA_OK ? rc : inca_fail_ctx(rc, "while writing the partition-ordered layout of %s", p->man.name);
}

int layout_drop(store_t *s, const partition_t *p, int featnorm, int want_m0, int norm, hist_dtype_t dt) {
    char names[12][192], an[3][192], tn[3][192];
    int k = 0;
    layout_x_name(names[k++], sizeof names[0], p->man.name, featnorm);
    if (want_m0) layout_m0_name(names[k++], sizeof names[0], p->man.name, featnorm, norm, dt);
    adj_names(an, p->man.name, "adj", norm);
    adj_names(tn, p->man.name, "adjt", norm);
    for (int i = 0; i < 3; i++) {
        memcpy(names[k++], an[i], sizeof an[i]);
        memcpy(names[k++], tn[i], sizeof tn[i]);   /* mean's, or a directed graph's gcn Âᵀ */
    }
    if (norm != NN_NORM_MEAN) sym_name(names[k++], sizeof names[0], p->man.name);
    store_wtx_t *w = NULL;
    int rc = store_write_begin(s, &w);
    for (int i = 0; rc == INCA_OK && i < k; i++)
        if (store_has_array(s, names[i])) rc = store_wtx_del_array(w, names[i]);
    if (rc == INCA_OK) return store_write_commit(&w);
    store_write_abort(&w);
    return rc;
}

static int view_of(store_t *s, const char *name, store_dtype_t dt, int64_t want, const partition_t *p, int featnorm,
                   const void **out) {
    int64_t cnt = 0;
    int rc = store_array_view(s, name, dt, out, &cnt);
    if (rc == INCA_ENOTFOUND)
        return inca_fail(INCA_ENOTFOUND, "%s: no array %s (a store partitioned before the layout existed, or another "
                         "--feature-norm): run `inca partition %s --parts %lld --feature-norm %s`, or train once with the "
                         "store writable", store_path(s), name, store_path(s), (long long)p->k, layout_featnorm_name(featnorm));
    if (rc == INCA_OK && cnt != want)
        rc = inca_fail(INCA_EINVAL, "%s: array %s has %lld values, expected %lld: the store is corrupt", store_path(s), name,
                       (long long)cnt, (long long)want);
    return rc;
}

/* Â (or Âᵀ) of the layout as a csr_t of views, its structure checked (rowptr from 0 to nnz,
 * non-decreasing, columns in range): a damaged array is an error here, not a wild read later. */
static int csr_view(store_t *s, const partition_t *p, const char *which, int norm, int featnorm, csr_t *g) {
    char nm[3][192];
    const void *rp = NULL, *col = NULL, *val = NULL;
    int64_t nnz = 0;
    const int64_t n = p->n;
    adj_names(nm, p->man.name, which, norm);
    memset(g, 0, sizeof *g);
    int rc = view_of(s, nm[0], DT_I64, n + 1, p, featnorm, &rp);
    if (rc == INCA_OK) rc = store_array_view(s, nm[1], DT_I32, &col, &nnz);
    if (rc == INCA_OK) rc = view_of(s, nm[2], DT_F32, nnz, p, featnorm, &val);
    if (rc != INCA_OK) return rc;
    const csr_t v = {.n_rows = n, .n_cols = n, .nnz = nnz, .rowptr = (int64_t *)rp, .col = (int32_t *)col,
                     .val = (float *)val, .owned = 0};
    if ((rc = dataset_check_csr(store_path(s), nm[0], nm[1], &v)) == INCA_OK) *g = v;
    return rc;
}

int layout_open(store_t *s, const partition_t *p, int featnorm, int want_m0, int norm, hist_dtype_t dt,
                layout_views_t *v) {
    char xn[192], mn[192];
    const store_meta_t *m = store_meta(s);
    memset(v, 0, sizeof *v);
    v->n = m->nodes;
    v->f = m->features;
    v->m0_dtype = dt;
    layout_x_name(xn, sizeof xn, p->man.name, featnorm);
    layout_m0_name(mn, sizeof mn, p->man.name, featnorm, norm, dt);
    const void *x = NULL;
    int rc = view_of(s, xn, DT_F32, v->n * v->f, p, featnorm, &x);
    v->x = x;
    if (rc == INCA_OK && want_m0) rc = view_of(s, mn, dt == HIST_BF16 ? DT_BF16 : DT_F32, v->n * v->f, p, featnorm, &v->m0);
    if (rc == INCA_OK) rc = csr_view(s, p, "adj", norm, featnorm, &v->a);
    char tn[3][192], sym[192];
    adj_names(tn, p->man.name, "adjt", norm);   /* mean's, or a directed graph's gcn Âᵀ */
    sym_name(sym, sizeof sym, p->man.name);
    /* gcn with neither Âᵀ nor the symmetric mark: cut short between the two writes (or older):
     * not found, so that layout_ensure rebuilds it, never Â trained for Âᵀ */
    if (rc == INCA_OK && norm != NN_NORM_MEAN && !store_has_array(s, tn[2]) && !store_has_array(s, sym))
        rc = inca_fail(INCA_ENOTFOUND, "%s: layout %s has Â but neither Âᵀ nor its symmetric mark (an interrupted "
                       "layout): rebuild it", store_path(s), p->man.name);
    if (rc == INCA_OK && (norm == NN_NORM_MEAN || store_has_array(s, tn[2])))
        rc = csr_view(s, p, "adjt", norm, featnorm, &v->at);
    if (rc != INCA_OK) memset(v, 0, sizeof *v);
    return rc;
}
