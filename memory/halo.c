/* See halo.h. */
#include "memory/halo.h"
#include "core/alloc.h"
#include "core/status.h"
#include <string.h>

/* staging of one exchange round (send + receive each about this much) */
#define HALO_STAGE_BYTES ((int64_t)32 << 20)

struct halo {
    int p;
    int64_t *scount, *rcount;   /* rows to / from each rank */
    int64_t *sids, *rids;       /* ids sent (asked of this rank, packed in rank order) / received */
    int64_t ns, nr;
    int64_t pair_max;           /* the most rows any rank sends any other (every rank's plans) */
    int64_t stage;              /* staging bytes per round (HALO_STAGE_BYTES) */
    char *sbuf, *rbuf;          /* row staging, grown on demand */
    int64_t scap, rcap;
    int local;                  /* halo_set_local: tables in the rank's local numbering */
    int64_t lo, nb, no;         /* its own first id, halo ids below it, own rows */
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

void halo_set_stage_bytes(halo_t *h, int64_t bytes) {
    if (h) h->stage = bytes > 0 ? bytes : HALO_STAGE_BYTES;
}

int64_t halo_set_local(halo_t *h, int64_t lo, int64_t no) {
    int64_t nb = 0;
    while (nb < h->nr && h->rids[nb] < lo) nb++;
    h->local = 1;
    h->lo = lo;
    h->nb = nb;
    h->no = no;
    return nb;
}

int64_t halo_local_row(const halo_t *h, int64_t j) { return j < h->nb ? j : j + h->no; }

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
    h->stage = HALO_STAGE_BYTES;
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
    for (int r = 0; r < np; r++) h->pair_max = h->scount[r] > h->pair_max ? h->scount[r] : h->pair_max;
    if ((rc = comm_allreduce_max_i64(c, &h->pair_max, 1, phase)) != INCA_OK) goto fail;
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

/* rows per pair in one round, so a round's staging stays near stage bytes whatever the halo */
static int64_t chunk_rows(int64_t stage, int64_t row_bytes, int p) {
    const int64_t chunk = stage / (row_bytes > 0 ? row_bytes : 1) / (p > 0 ? p : 1);
    return chunk < 1 ? 1 : chunk;
}
static int64_t halo_chunk(const halo_t *h, int64_t row_bytes) { return chunk_rows(h->stage, row_bytes, h->p); }

int64_t halo_stage_rows(int p, int64_t row_bytes) {
    return chunk_rows(HALO_STAGE_BYTES, row_bytes, p) * (p > 0 ? p : 1);
}

int64_t halo_host_bytes(int p, int64_t nr, int64_t ns, int64_t row_bytes) {
    if (p < 2) return 0;
    /* a round moves at most a chunk per pair, and no rank sends itself a row */
    const int64_t most = nr > ns ? nr : ns, per = chunk_rows(HALO_STAGE_BYTES, row_bytes, p) * (p - 1);
    int64_t cap = most < per ? most : per;
    if (cap < 1) cap = 1;
    const int64_t plan = (int64_t)sizeof(halo_t) + (int64_t)sizeof(int64_t) * (2 * (int64_t)p + nr + ns);
    /* the round's ids beside the staging: at most every row asked or sent, whatever the width */
    const int64_t ids = (int64_t)sizeof(int64_t) * (2 * (int64_t)p + 2 * (most > 0 ? most : 1));
    return plan + (row_bytes > 0 ? 2 * cap * row_bytes + ids : 0);
}

int64_t halo_round_rows(const halo_t *h, int64_t row_bytes) {
    if (!h) return 0;
    const int64_t chunk = halo_chunk(h, row_bytes);
    int64_t ins = 0, inr = 0;
    for (int r = 0; r < h->p; r++) {
        ins += h->scount[r] < chunk ? h->scount[r] : chunk;
        inr += h->rcount[r] < chunk ? h->rcount[r] : chunk;
    }
    return ins > inr ? ins : inr;
}

int halo_exchange_with(halo_t *h, comm_t *c, int64_t row_bytes, int phase, const halo_io_t *io) {
    if (comm_size(c) != h->p) return inca_fail(INCA_EINVAL, "halo exchange: planned for %d ranks, the job has %d", h->p, comm_size(c));
    /* in rounds of at most `chunk` rows per pair (every rank computes the same number of
     * rounds from pair_max); a round's ids go to pack / unpack contiguous, in rank order */
    const int64_t chunk = halo_chunk(h, row_bytes);
    const int64_t rounds = (h->pair_max + chunk - 1) / chunk, cap = halo_round_rows(h, row_bytes);
    int64_t *sc = inca_malloc(sizeof *sc * (2 * (size_t)h->p + 2 * (size_t)(cap ? cap : 1)));
    if (!sc) return INCA_ENOMEM;
    int64_t *rcn = sc + h->p, *sid = rcn + h->p, *rid = sid + (cap ? cap : 1);
    int rc = INCA_OK;
    for (int64_t k = 0; k < rounds && rc == INCA_OK; k++) {
        /* round k: rows [k*chunk, (k+1)*chunk) of each pair's list */
        const int64_t s0 = k * chunk;
        int64_t sbase = 0, rbase = 0, ms = 0, mr = 0;
        for (int r = 0; r < h->p; r++) {
            sc[r] = h->scount[r] > s0 ? (h->scount[r] - s0 < chunk ? h->scount[r] - s0 : chunk) : 0;
            rcn[r] = h->rcount[r] > s0 ? (h->rcount[r] - s0 < chunk ? h->rcount[r] - s0 : chunk) : 0;
            for (int64_t i = 0; i < sc[r]; i++) sid[ms++] = h->sids[sbase + s0 + i] - (h->local ? h->lo - h->nb : 0);
            for (int64_t i = 0; i < rcn[r]; i++)
                rid[mr++] = h->local ? halo_local_row(h, rbase + s0 + i) : h->rids[rbase + s0 + i];
            sbase += h->scount[r];
            rbase += h->rcount[r];
        }
        rc = io->pack(io->ctx, sid, ms, io->sbuf);
        if (rc == INCA_OK) rc = comm_alltoallv_rows(c, io->sbuf, sc, io->rbuf, rcn, row_bytes, phase);
        if (rc == INCA_OK) rc = io->unpack(io->ctx, rid, mr, io->rbuf);
    }
    inca_free(sc);
    return rc;
}

typedef struct { char *t; int64_t row_bytes; } halo_host_t;

static int halo_host_pack(void *ctx, const int64_t *ids, int64_t m, void *buf) {
    const halo_host_t *t = ctx;
    for (int64_t i = 0; i < m; i++)
        memcpy((char *)buf + i * t->row_bytes, t->t + ids[i] * t->row_bytes, (size_t)t->row_bytes);
    return INCA_OK;
}

static int halo_host_unpack(void *ctx, const int64_t *ids, int64_t m, void *buf) {
    const halo_host_t *t = ctx;
    for (int64_t i = 0; i < m; i++)
        memcpy(t->t + ids[i] * t->row_bytes, (const char *)buf + i * t->row_bytes, (size_t)t->row_bytes);
    return INCA_OK;
}

int halo_exchange(halo_t *h, comm_t *c, void *table, int64_t row_bytes, int phase) {
    const int64_t cap = halo_round_rows(h, row_bytes);
    int rc = grow(&h->sbuf, &h->scap, (cap ? cap : 1) * row_bytes);
    if (rc == INCA_OK) rc = grow(&h->rbuf, &h->rcap, (cap ? cap : 1) * row_bytes);
    if (rc != INCA_OK) return rc;
    halo_host_t t = {.t = table, .row_bytes = row_bytes};
    const halo_io_t io = {.pack = halo_host_pack, .unpack = halo_host_unpack, .ctx = &t, .sbuf = h->sbuf, .rbuf = h->rbuf};
    return halo_exchange_with(h, c, row_bytes, phase, &io);
}
