/* See halo_dev.h. */
#include "memory/halo_dev.h"
#include "core/alloc.h"
#include "core/status.h"

struct halo_dev {
    kern_ctx_t *kc;
    int64_t max_rows, max_elems, max_bytes;
    int64_t *ids_d;     /* a round's ids (device) */
    float *rows_d;      /* a round's rows in fp32 (device) */
    uint16_t *raw_d;    /* bf16 rows as they travel (device) */
    char *sbuf, *rbuf;  /* pinned staging of a round's packed rows */
    /* the exchange in progress */
    kern_dtype_t dt;
    void *table;
    int64_t f;
};

void halo_dev_free(halo_dev_t **px) {
    if (!px || !*px) return;
    halo_dev_t *x = *px;
    kc_release(x->kc, KERN_MEM_DEVICE, x->ids_d);
    kc_release(x->kc, KERN_MEM_DEVICE, x->rows_d);
    kc_release(x->kc, KERN_MEM_DEVICE, x->raw_d);
    kc_release(x->kc, KERN_MEM_PINNED, x->sbuf);
    kc_release(x->kc, KERN_MEM_PINNED, x->rbuf);
    inca_free(x);
    *px = NULL;
}

int halo_dev_create(kern_ctx_t *kc, int64_t max_rows, int64_t max_elems, int64_t max_bytes, int bf16, halo_dev_t **out) {
    *out = NULL;
    if (max_rows < 1) max_rows = 1;
    if (max_elems < 1) max_elems = 1;
    if (max_bytes < 1) max_bytes = 1;
    halo_dev_t *x = inca_calloc(1, sizeof *x);
    if (!x) return INCA_ENOMEM;
    x->kc = kc;
    x->max_rows = max_rows;
    x->max_elems = max_elems;
    x->max_bytes = max_bytes;
    const size_t el = (size_t)max_elems;
    int rc;
    if ((rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(int64_t) * (size_t)max_rows, (void **)&x->ids_d)) ||
        (rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(float) * el, (void **)&x->rows_d)) ||
        (bf16 && (rc = kc_alloc(kc, KERN_MEM_DEVICE, sizeof(uint16_t) * el, (void **)&x->raw_d))) ||
        (rc = kc_alloc(kc, KERN_MEM_PINNED, (size_t)max_bytes, (void **)&x->sbuf)) ||
        (rc = kc_alloc(kc, KERN_MEM_PINNED, (size_t)max_bytes, (void **)&x->rbuf))) {
        halo_dev_free(&x);
        return rc;
    }
    *out = x;
    return INCA_OK;
}

int64_t halo_dev_host_bytes(const halo_dev_t *x) { return x ? 2 * x->max_bytes : 0; }

static int64_t row_bytes(kern_dtype_t dt, int64_t f) { return f * (dt == KERN_BF16 ? 2 : 4); }

/* rows ids of the table -> sbuf (the table's bytes), through the device's staging */
static int halo_dev_pack(void *ctx, const int64_t *ids, int64_t m, void *sbuf) {
    halo_dev_t *x = ctx;
    kern_ctx_t *kc = x->kc;
    /* MPI is about to write rbuf: the previous round's upload from it must be done (on CUDA it
     * is queued), so this waits for the device even with nothing to send */
    if (m == 0) return kc_sync(kc);
    const void *src = x->dt == KERN_BF16 ? (const void *)x->raw_d : (const void *)x->rows_d;
    int rc;
    if ((rc = kc_copy(kc, x->ids_d, ids, sizeof *ids * (size_t)m, KERN_H2D, KERN_STREAM_COMPUTE)) ||
        (rc = kc_gather_rows(kc, x->dt, x->table, x->f, x->ids_d, 0, m, x->rows_d)) ||
        (x->dt == KERN_BF16 && (rc = kc_encode(kc, KERN_BF16, m * x->f, x->rows_d, x->raw_d))) ||
        (rc = kc_copy(kc, sbuf, src, (size_t)(m * row_bytes(x->dt, x->f)), KERN_D2H, KERN_STREAM_COMPUTE)))
        return rc;
    return kc_sync(kc);   /* a download into pinned memory has arrived only now */
}

/* rbuf -> rows ids of the table */
static int halo_dev_unpack(void *ctx, const int64_t *ids, int64_t m, void *rbuf) {
    halo_dev_t *x = ctx;
    kern_ctx_t *kc = x->kc;
    if (m == 0) return INCA_OK;
    void *dst = x->dt == KERN_BF16 ? (void *)x->raw_d : (void *)x->rows_d;
    int rc;
    if ((rc = kc_copy(kc, dst, rbuf, (size_t)(m * row_bytes(x->dt, x->f)), KERN_H2D, KERN_STREAM_COMPUTE)) ||
        (x->dt == KERN_BF16 && (rc = kc_decode(kc, KERN_BF16, m * x->f, x->raw_d, x->rows_d))) ||
        (rc = kc_copy(kc, x->ids_d, ids, sizeof *ids * (size_t)m, KERN_H2D, KERN_STREAM_COMPUTE)))
        return rc;
    /* bf16 -> fp32 -> bf16 is exact: the table gets the owner's bits */
    return kc_scatter_rows(kc, x->dt, x->table, x->f, x->ids_d, 0, m, x->rows_d);
}

int halo_dev_exchange(halo_dev_t *x, halo_t *h, comm_t *c, kern_dtype_t dt, void *table, int64_t f, int phase) {
    const int64_t rb = row_bytes(dt, f), rows = halo_round_rows(h, rb);
    if (rows > x->max_rows || rows * f > x->max_elems || rows * rb > x->max_bytes || (dt == KERN_BF16 && !x->raw_d))
        return inca_fail(INCA_EINVAL, "halo exchange on the device: a round of %lld %s rows of %lld elements, staging made "
                         "for %lld rows, %lld elements, %lld bytes%s", (long long)rows, dt == KERN_BF16 ? "bf16" : "fp32",
                         (long long)f, (long long)x->max_rows, (long long)x->max_elems, (long long)x->max_bytes,
                         x->raw_d ? "" : ", fp32 only");
    x->dt = dt;
    x->table = table;
    x->f = f;
    const halo_io_t io = {.pack = halo_dev_pack, .unpack = halo_dev_unpack, .ctx = x, .sbuf = x->sbuf, .rbuf = x->rbuf};
    return halo_exchange_with(h, c, rb, phase, &io);
}
