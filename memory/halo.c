/* See halo.h. */
#include "memory/halo.h"
#include "core/alloc.h"
#include "core/status.h"
#include <string.h>

struct halo {
    int p;
    int64_t *scount, *rcount;   /* rows to / from each rank */
    int64_t *sids, *rids;       /* ids sent (asked of this rank, packed in rank order) / received */
    int64_t ns, nr;
    char *sbuf, *rbuf;          /* row staging, grown on demand */
    int64_t scap, rcap;
};

void halo_free(halo_t **ph) {
    if (!ph || !*ph) return;
    halo_t *h = *ph;
    inca_free(h->scount);
    inca_free(h->sids);
    inca_free(h->rids);
    inca_free(h->sbuf);
    inca_free(h->rbuf);
    inca_free(h);
    *ph = NULL;
}

int64_t halo_send_rows(const halo_t *h) { return h ? h->ns : 0; }
int64_t halo_recv_rows(const halo_t *h) { return h ? h->nr : 0; }

int halo_plan(comm_t *c, const dist_plan_t *p, const int64_t *need, int64_t m, int phase, halo_t **out) {
    const int np = comm_size(c), me = comm_rank(c);
    *out = NULL;
    if (p->ranks != np) return inca_fail(INCA_EINVAL, "halo plan: the ownership plan has %d ranks, the job %d", p->ranks, np);
    for (int64_t i = 0; i < m; i++) {
        if (need[i] < 0 || need[i] >= p->n || (i > 0 && need[i] <= need[i - 1]))
            return inca_fail(INCA_EINVAL, "halo plan: id %lld at %lld is out of range or not sorted", (long long)need[i], (long long)i);
        if (dist_owner(p, need[i]) == me)
            return inca_fail(INCA_EINVAL, "halo plan: id %lld is this rank's own", (long long)need[i]);
    }
    halo_t *h = inca_calloc(1, sizeof *h);
    if (!h) return INCA_ENOMEM;
    h->p = np;
    int rc = INCA_OK;
    if (!(h->scount = inca_calloc(2 * (size_t)np, sizeof *h->scount))) { rc = INCA_ENOMEM; goto fail; }
    h->rcount = h->scount + np;
    /* sorted ids fall into the owners' ranges in rank order: they are already packed by rank */
    for (int64_t i = 0; i < m; i++) h->rcount[dist_owner(p, need[i])]++;
    h->nr = m;
    if (!(h->rids = inca_malloc(sizeof *h->rids * (size_t)(m ? m : 1)))) { rc = INCA_ENOMEM; goto fail; }
    if (m) memcpy(h->rids, need, sizeof *need * (size_t)m);
    if ((rc = comm_alltoall_i64(c, h->rcount, h->scount, phase)) != INCA_OK) goto fail;
    for (int r = 0; r < np; r++) h->ns += h->scount[r];
    if (!(h->sids = inca_malloc(sizeof *h->sids * (size_t)(h->ns ? h->ns : 1)))) { rc = INCA_ENOMEM; goto fail; }
    /* what we ask travels to the owners: the asks of rank r become our send list to r */
    if ((rc = comm_alltoallv_rows(c, h->rids, h->rcount, h->sids, h->scount, sizeof(int64_t), phase)) != INCA_OK) goto fail;
    for (int64_t i = 0; i < h->ns; i++)
        if (dist_owner(p, h->sids[i]) != me) {
            rc = inca_fail(INCA_ERR, "halo plan: rank %d was asked for row %lld, which it does not own", me, (long long)h->sids[i]);
            goto fail;
        }
    *out = h;
    return INCA_OK;
fail:
    halo_free(&h);
    return rc;
}

static int grow(char **buf, int64_t *cap, int64_t bytes) {
    if (bytes <= *cap) return INCA_OK;
    char *b = inca_realloc(*buf, (size_t)bytes);
    if (!b) return INCA_ENOMEM;
    *buf = b;
    *cap = bytes;
    return INCA_OK;
}

int halo_exchange(halo_t *h, comm_t *c, void *table, int64_t row_bytes, int phase) {
    if (comm_size(c) != h->p) return inca_fail(INCA_EINVAL, "halo exchange: planned for %d ranks, the job has %d", h->p, comm_size(c));
    int rc = grow(&h->sbuf, &h->scap, h->ns * row_bytes);
    if (rc == INCA_OK) rc = grow(&h->rbuf, &h->rcap, h->nr * row_bytes);
    if (rc != INCA_OK) return rc;
    char *t = table;
    for (int64_t i = 0; i < h->ns; i++) memcpy(h->sbuf + i * row_bytes, t + h->sids[i] * row_bytes, (size_t)row_bytes);
    if ((rc = comm_alltoallv_rows(c, h->sbuf, h->scount, h->rbuf, h->rcount, row_bytes, phase)) != INCA_OK) return rc;
    for (int64_t i = 0; i < h->nr; i++) memcpy(t + h->rids[i] * row_bytes, h->rbuf + i * row_bytes, (size_t)row_bytes);
    return INCA_OK;
}
