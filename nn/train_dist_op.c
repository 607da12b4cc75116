/* One rank's distributed SpMM for data-parallel full-batch training (train_dist.h): its rows of
 * Â (and Âᵀ) with local columns, its halo plan, a table per site width, and the forward and
 * backward that fill a table's halo rows and multiply. Tested in tests/test_train.c and
 * tests/test_mpi.c. */
#include "nn/train_dist_impl.h"
#include "nn/train_xfer.h"
#include "core/alloc.h"
#include "core/status.h"
#include "graph/dist.h"
#include "kernels/backend.h"
#include "memory/halo.h"

static float *fd_table(fd_op_t *o, int64_t f) {
    for (int i = 0; i < o->ntab; i++)
        if (o->tab_f[i] == f) return o->tab[i];
    return NULL;
}

/* out (own rows) = Â[own, :] in, or Âᵀ[own, :] in for the backward */
static int fd_spmm(fd_op_t *o, kern_mat_t *a, int64_t n, int64_t f, const float *in, float *out) {
    float *t = fd_table(o, f);
    if (!t || n != o->no) return inca_fail(INCA_ERR, "distributed SpMM: %lld rows of width %lld, expected %lld rows of a "
                                                     "site's width", (long long)n, (long long)f, (long long)o->no);
    int rc = kc_copy(o->kc, t + o->nb * f, in, sizeof(float) * (size_t)(n * f), KERN_D2D, KERN_STREAM_COMPUTE);
    if (rc == INCA_OK) rc = train_xfer_halo(o->halo, o->hx, o->comm, KERN_F32, t, f, o->phase);
    return rc != INCA_OK ? rc : kc_spmm(o->kc, a, NULL, t, f, 1.f, 0.f, out);
}
int train_dist_fwd(void *ctx, int site, int64_t n, int64_t f, const float *in_raw, const float *in, float *out) {
    (void)site;
    (void)in_raw;
    fd_op_t *o = ctx;
    return fd_spmm(o, o->own_a, n, f, in, out);
}
int train_dist_bwd(void *ctx, int site, int64_t n, int64_t f, const float *dout, float *din) {
    (void)site;
    fd_op_t *o = ctx;
    return fd_spmm(o, o->own_at ? o->own_at : o->own_a, n, f, dout, din);
}

/* The sorted union of the sorted id lists a (na) and b (nb) into *out (*m; owned). */
static int fd_union(const int64_t *a, int64_t na, const int64_t *b, int64_t nb, int64_t **out, int64_t *m) {
    int64_t *u = inca_malloc(sizeof *u * (size_t)(na + nb > 0 ? na + nb : 1)), i = 0, j = 0, k = 0;
    if (!u) return INCA_ENOMEM;
    while (i < na || j < nb) {
        const int64_t v = j >= nb || (i < na && a[i] <= b[j]) ? a[i] : b[j];
        i += i < na && a[i] == v;
        j += j < nb && b[j] == v;
        u[k++] = v;
    }
    *out = u;
    *m = k;
    return INCA_OK;
}

/* Rows [lo, lo + no) of g, their columns in the local numbering of halo_set_local (own id c at
 * c - lo + nb, halo id hid[j] at j < nb ? j : j + no; hid the hm sorted halo ids, nb of them
 * below lo): an no x (no + hm) matrix whose columns keep their order, so a row sums in the
 * one-process order. */
static int fd_local_rows(const csr_t *g, int64_t lo, int64_t no, const int64_t *hid, int64_t hm, int64_t nb, csr_t *out) {
    const int64_t e0 = g->rowptr[lo], nz = g->rowptr[lo + no] - e0;
    int rc = csr_alloc(out, no, no + hm, nz, g->val != NULL);
    if (rc) return rc;
    for (int64_t i = 0; i <= no; i++) out->rowptr[i] = g->rowptr[lo + i] - e0;
    for (int64_t k = 0; k < nz; k++) {
        const int64_t c = g->col[e0 + k];
        int64_t j;
        if (c >= lo && c < lo + no) j = c - lo + nb;
        else {
            int64_t a = 0, b = hm;   /* hid holds c: dist_halo listed it */
            while (a < b) { const int64_t h = a + (b - a) / 2; if (hid[h] < c) a = h + 1; else b = h; }
            j = a < nb ? a : a + no;
        }
        out->col[k] = (int32_t)j;
        if (g->val) out->val[k] = g->val[e0 + k];
    }
    return INCA_OK;
}

/* The rank's halo: every id outside its rows that its rows of Â reference, and of Âᵀ when the
 * graph is directed (the backward reads Âᵀ's columns, which are then others). */
static int fd_rank_halo(const fd_shared_t *S, int rank, int64_t **hid, int64_t *hm) {
    int64_t *h1 = NULL, *h2 = NULL, m1 = 0, m2 = 0;
    int rc = dist_halo(&S->a, &S->plan, rank, &h1, &m1);
    if (rc != INCA_OK || !S->at.rowptr) {
        *hid = h1;
        *hm = m1;
        return rc;
    }
    if ((rc = dist_halo(&S->at, &S->plan, rank, &h2, &m2)) == INCA_OK) rc = fd_union(h1, m1, h2, m2, hid, hm);
    inca_free(h1);
    inca_free(h2);
    return rc;
}

/* The operator of a model with aggregation sites: the rank's rows of Â (Âᵀ) with local columns,
 * its halo plan, a table of no + halo rows per site width, and on a device the halo staging. */
int train_dist_op_setup(fd_rank_t *R, const fd_shared_t *S) {
    kern_ctx_t *kc = R->kc;
    const int dev = kc_device(kc) != KERN_DEV_CPU;
    int64_t *hid = NULL, hm = 0;
    R->op = (fd_op_t){.kc = kc, .comm = R->comm, .no = R->no, .phase = COMM_HALO};
    int rc = fd_rank_halo(S, R->rank, &hid, &hm);
    if (rc == INCA_OK) rc = halo_plan(R->comm, &S->plan, hid, hm, COMM_SETUP, &R->op.halo);
    if (rc == INCA_OK) {
        const int64_t nb = R->op.nb = halo_set_local(R->op.halo, R->lo, R->no);
        R->op.nl = R->no + hm;
        kc_mem_tag(kc, "graph");
        fd_op_t *o = &R->op;
        rc = fd_local_rows(&S->a, R->lo, R->no, hid, hm, nb, &o->la);
        if (rc == INCA_OK && S->at.rowptr) rc = fd_local_rows(&S->at, R->lo, R->no, hid, hm, nb, &o->lat);
        if (rc == INCA_OK) rc = kc_mat_upload(kc, &o->la, &o->own_a);
        if (rc == INCA_OK && o->lat.rowptr) rc = kc_mat_upload(kc, &o->lat, &o->own_at);
        if (dev) {   /* a device copied them; the CPU context borrows them for the run */
            csr_free(&o->la);
            csr_free(&o->lat);
        }
    }
    inca_free(hid);
    kc_mem_tag(kc, "halo tables");
    const int ns = model_num_sites(&S->mc);
    for (int s = 0; s < ns && rc == INCA_OK; s++) {
        const int64_t w = model_site_dim(&S->mc, s), bytes = (int64_t)sizeof(float) * R->op.nl * w;
        if (fd_table(&R->op, w)) continue;
        if (R->op.ntab == FD_MAX_WIDTHS) return inca_fail(INCA_ERR, "distributed SpMM: more than %d site widths", FD_MAX_WIDTHS);
        R->op.tab_f[R->op.ntab] = w;
        if (dev) rc = kc_alloc(kc, KERN_MEM_DEVICE, (size_t)(bytes > 0 ? bytes : 1), (void **)&R->op.tab[R->op.ntab]);
        else if (!(R->op.tab[R->op.ntab] = inca_calloc((size_t)(bytes > 0 ? bytes : 1), 1))) rc = INCA_ENOMEM;
        if (rc == INCA_OK) R->op.ntab++;
    }
    if (rc == INCA_OK && dev) {
        kern_dtype_t dts[FD_MAX_WIDTHS];
        for (int i = 0; i < R->op.ntab; i++) dts[i] = KERN_F32;
        kc_mem_tag(kc, "comm staging");
        rc = train_xfer_halo_dev(kc, R->P, R->op.nl, R->op.tab_f, dts, R->op.ntab, &R->op.hx);
    }
    return rc;
}
