/* See train_xfer.h. */
#include "nn/train_xfer.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include <stdio.h>
#include <unistd.h>
#include <string.h>

static int on_device(const model_t *m) { return kc_device(model_ctx(m)) != KERN_DEV_CPU; }

int train_xfer_bcast_params(comm_t *c, model_t *m) {
    kern_ctx_t *kc = model_ctx(m);
    const int dev = on_device(m);
    int rc = INCA_OK;
    for (int i = 0; i < model_nparams(m) && rc == INCA_OK; i++) {
        nn_param_t *pp = model_param(m, i);
        const size_t bytes = sizeof(float) * (size_t)pp->n;
        if (!dev) {
            rc = comm_bcast(c, pp->w, (int64_t)bytes, 0, COMM_SETUP);
            continue;
        }
        float *h = inca_malloc(bytes ? bytes : 1);
        if (!h) return INCA_ENOMEM;
        if ((rc = kc_copy(kc, h, pp->w, bytes, KERN_D2H, KERN_STREAM_COMPUTE)) == INCA_OK &&
            (rc = comm_bcast(c, h, (int64_t)bytes, 0, COMM_SETUP)) == INCA_OK)
            rc = kc_copy(kc, pp->w, h, bytes, KERN_H2D, KERN_STREAM_COMPUTE);
        if (rc == INCA_OK) rc = kc_sync(kc);   /* h is released at once */
        inca_free(h);
    }
    return rc;
}

int train_xfer_grads_get(model_t *m, float *flat) {
    kern_ctx_t *kc = model_ctx(m);
    int rc = INCA_OK;
    for (int i = 0; i < model_nparams(m) && rc == INCA_OK; i++) {
        const nn_param_t *pp = model_param(m, i);
        rc = kc_copy(kc, flat, pp->g, sizeof(float) * (size_t)pp->n, KERN_D2H, KERN_STREAM_COMPUTE);
        flat += pp->n;
    }
    return rc == INCA_OK ? kc_sync(kc) : rc;
}

int train_xfer_grads_put(model_t *m, const float *flat) {
    kern_ctx_t *kc = model_ctx(m);
    int rc = INCA_OK;
    for (int i = 0; i < model_nparams(m) && rc == INCA_OK; i++) {
        nn_param_t *pp = model_param(m, i);
        rc = kc_copy(kc, pp->g, flat, sizeof(float) * (size_t)pp->n, KERN_H2D, KERN_STREAM_COMPUTE);
        flat += pp->n;
    }
    return rc;
}

int train_xfer_machine_id(char *buf, size_t cap) {
    if (!buf || cap < 2) return inca_fail(INCA_EINVAL, "train_xfer_machine_id: no room");
    buf[0] = 0;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(buf, (int)(cap < 64 ? cap : 64), f)) buf[0] = 0;
        fclose(f);
        buf[strcspn(buf, "\r\n")] = 0;
    }
    if (!buf[0] && gethostname(buf, cap - 1) != 0) buf[0] = 0;
    buf[cap - 1] = 0;
    if (!buf[0]) return inca_fail(INCA_ERR, "train_xfer_machine_id: neither the kernel's boot id nor a host name");
    return INCA_OK;
}

int train_xfer_nccl_join(comm_t *c, kern_ctx_t *kc) {
    const int P = comm_size(c), me = comm_rank(c);
    typedef struct { int64_t ok; char uid[120]; } rec_t;   /* this rank's device, or why none */
    rec_t mine = {0}, *all = inca_calloc((size_t)P, sizeof *all);
    if (!all) return INCA_ENOMEM;
    char host[64] = "";
    if (train_xfer_machine_id(host, sizeof host) != INCA_OK) inca_err_clear();   /* then the bus id alone */
    char bus[48] = "";
    if (kc_has_coll(kc) && kc_device_uid(kc, bus, sizeof bus) == INCA_OK) {
        mine.ok = 1;
        snprintf(mine.uid, sizeof mine.uid, "%.60s/%s", host, bus);
    } else {
        snprintf(mine.uid, sizeof mine.uid, "%.119s", kc_describe(kc));
        inca_err_clear();
    }
    int rc = comm_allgather(c, &mine, sizeof mine, all, COMM_SETUP);
    for (int r = 0; r < P && rc == INCA_OK; r++) {   /* every rank reaches the same verdict */
        if (!all[r].ok)
            rc = inca_fail(INCA_EINVAL, "--grad-reduce nccl: rank %d runs on %s, which has no NCCL (CUDA GPUs and a build "
                           "with NCCL needed); --grad-reduce chain works on any device", r, all[r].uid);
        for (int q = 0; q < r && rc == INCA_OK; q++)
            if (strcmp(all[q].uid, all[r].uid) == 0)
                rc = inca_fail(INCA_EINVAL, "--grad-reduce nccl: ranks %d and %d share the GPU %s; NCCL needs one GPU per "
                               "rank (start at most as many ranks per node as it has GPUs, or use --grad-reduce chain, "
                               "which stages through the host)", q, r, all[r].uid);
    }
    inca_free(all);
    if (rc != INCA_OK) return rc;
    unsigned char id[KERN_COLL_ID_BYTES] = {0};
    int64_t bad = me == 0 ? kc_coll_id(kc, id) != INCA_OK : 0;
    if ((rc = comm_allreduce_max_i64(c, &bad, 1, COMM_SETUP)) != INCA_OK) return rc;
    if (bad) return inca_fail(INCA_ERR, "--grad-reduce nccl: rank 0 could not make the NCCL clique's id");
    if ((rc = comm_bcast(c, id, sizeof id, 0, COMM_SETUP)) != INCA_OK) return rc;
    return kc_coll_init(kc, id, me, P);   /* collective inside NCCL: a failure there ends the job */
}

int train_xfer_grads_sum_nccl(comm_t *c, model_t *m, float **sum) {
    enum { GROUP = 64 };   /* buffers a group: on the stack, since this runs every step (nothing allocated there) */
    kern_ctx_t *kc = model_ctx(m);
    const int P = comm_size(c), np = model_nparams(m);
    const double t0 = inca_now();
    int64_t floats = 0;
    int rc = INCA_OK;
    for (int i0 = 0; i0 < np && rc == INCA_OK; i0 += GROUP) {   /* one group a model but the largest */
        const float *send[GROUP];
        float *recv[GROUP];
        int64_t len[GROUP];
        const int nb = np - i0 < GROUP ? np - i0 : GROUP;
        for (int j = 0; j < nb; j++) {
            nn_param_t *pp = model_param(m, i0 + j);
            send[j] = pp->g, recv[j] = sum ? sum[i0 + j] : pp->g, len[j] = pp->n;
            floats += pp->n;
        }
        rc = kc_coll_sum_f32_many(kc, nb, send, recv, len);   /* NCCL launches a group's sums together */
    }
    if (rc == INCA_OK) rc = kc_sync(kc);
    comm_count(c, COMM_GRAD, (int64_t)(2.0 * (double)(P - 1) / (double)P * (double)floats * sizeof(float)), inca_now() - t0);
    return rc;
}

int train_xfer_halo(halo_t *h, halo_dev_t *hx, comm_t *c, kern_dtype_t dt, void *table, int64_t f, int phase) {
    if (hx) return halo_dev_exchange(hx, h, c, dt, table, f, phase);
    return halo_exchange(h, c, table, f * (dt == KERN_BF16 ? 2 : 4), phase);
}

int train_xfer_halo_dev(kern_ctx_t *kc, int p, int64_t n, const int64_t *widths, const kern_dtype_t *dts, int nw,
                        halo_dev_t **out) {
    int64_t rows = 1, elems = 1, bytes = 1;
    int bf16 = 0;
    for (int i = 0; i < nw; i++) {
        const int64_t es = dts[i] == KERN_BF16 ? 2 : 4;
        bf16 |= dts[i] == KERN_BF16;
        int64_t r = halo_stage_rows(p, widths[i] * es);
        /* a round sends each row at most once to each other rank */
        if (r > n * (int64_t)(p > 1 ? p - 1 : 1)) r = n * (int64_t)(p > 1 ? p - 1 : 1);
        rows = r > rows ? r : rows;
        elems = r * widths[i] > elems ? r * widths[i] : elems;
        bytes = r * widths[i] * es > bytes ? r * widths[i] * es : bytes;   /* bf16-only: half the pinned staging */
    }
    return halo_dev_create(kc, rows, elems, bytes, bf16, out);
}
