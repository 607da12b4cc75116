/* The prefetching mini-batch loader (see batch.h): seeded part shuffles per epoch, batch
 * assembly (ranges, views or copies, Â_BB, its transpose, halo and Â_{B,halo}) into two
 * preallocated slots, and a pthread producer one batch ahead of the trainer.
 * Tested in test_batch.c. */
#include "loaders/batch.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Bring the pages of [p, p+bytes) into memory from the builder's thread: readahead is asked for
 * (WILLNEED), then one byte of every page is read, so a page fault on a file-backed map is the
 * builder's wait, not the trainer's. */
static void touch_pages(const void *p, int64_t bytes) {
    if (bytes <= 0) return;
    inca_madvise(p, bytes, MADV_WILLNEED);
    const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), hi = (uintptr_t)p + (uintptr_t)bytes;
    volatile unsigned char sink = 0;
    for (uintptr_t a = (uintptr_t)p; a < hi; a = (a & ~(pg - 1)) + pg) sink ^= *(const volatile unsigned char *)a;
    (void)sink;
}

struct batch_loader {
    batch_source_t src;
    batch_opts_t o;
    int64_t spe;             /* steps per epoch */
    int64_t kp;              /* parts drawn from: the non-empty ones of [o.part_lo, o.part_hi) */
    int64_t *parts;          /* kp: their ids, ascending */
    int64_t nb_max, nnz_max, halo_max;
    batch_t slot[2];
    float *xbuf[2];
    int32_t *ybuf[2];
    /* builder scratch (one batch is built at a time) */
    int64_t *order;          /* part order of order_epoch */
    int64_t order_epoch;
    int64_t *sel;            /* parts of the batch being built */
    int32_t *local;          /* n: local id in the batch being built, or -1 */
    int64_t *hmark;          /* n: 1 + index of the batch that last marked this node as halo */
    int64_t *hpos;           /* n: halo position (valid where marked) */
    int64_t *tcount;         /* nb_max + 1: transpose counts */
    /* producer / consumer */
    pthread_t th;
    int th_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t produced, handed, released;
    int stop, err;
    char errmsg[512];
    double wait_s, build_s;
    int64_t bytes;
};

/* Sum of the b largest values of v[0..k) (v is clobbered: sorted). */
static int64_t sum_largest(int64_t *v, int64_t k, int64_t b) {
    qsort(v, (size_t)k, sizeof *v, inca_cmp_i64);
    int64_t s = 0;
    for (int64_t i = 0; i < b && i < k; i++) s += v[k - 1 - i];
    return s;
}

static void slot_free(batch_t *b) {
    inca_free(b->range_start);
    inca_free(b->range_len);
    inca_free(b->nodes);
    inca_free(b->halo);
    csr_free(&b->a_bb);
    csr_free(&b->a_bbt);
    csr_free(&b->a_bh);
    memset(b, 0, sizeof *b);
}

static int slot_alloc(batch_loader_t *l, int s) {
    batch_t *b = &l->slot[s];
    int64_t nb = l->nb_max, nz = l->nnz_max, kb = l->o.batch_parts;
    b->range_start = inca_malloc(sizeof(int64_t) * (size_t)kb);
    b->range_len = inca_malloc(sizeof(int64_t) * (size_t)kb);
    b->nodes = inca_malloc(sizeof(int64_t) * (size_t)(nb ? nb : 1));
    if (!b->range_start || !b->range_len || !b->nodes) return INCA_ENOMEM;
    int with_val = l->src.a->val != NULL;
    int rc = csr_alloc(&b->a_bb, nb, nb, nz, with_val);
    if (rc == INCA_OK && !l->src.a_symmetric) rc = csr_alloc(&b->a_bbt, nb, nb, nz, with_val);
    if (rc == INCA_OK && l->o.halo) {
        rc = csr_alloc(&b->a_bh, nb, l->halo_max, nz, with_val);
        b->halo = inca_malloc(sizeof(int64_t) * (size_t)(l->halo_max ? l->halo_max : 1));
        if (rc == INCA_OK && !b->halo) rc = INCA_ENOMEM;
    }
    if (rc != INCA_OK) return rc;
    if (l->src.x && l->src.f > 0) {
        l->xbuf[s] = inca_malloc(sizeof(float) * (size_t)(nb ? nb : 1) * (size_t)l->src.f);
        if (!l->xbuf[s]) return INCA_ENOMEM;
    }
    if (l->src.y) {
        l->ybuf[s] = inca_malloc(sizeof(int32_t) * (size_t)(nb ? nb : 1));
        if (!l->ybuf[s]) return INCA_ENOMEM;
    }
    int64_t vb = with_val ? 4 : 0;
    l->bytes += kb * 16 + nb * 8 + (nb + 1) * 8 + nz * (4 + vb);
    if (!l->src.a_symmetric) l->bytes += (nb + 1) * 8 + nz * (4 + vb);
    if (l->o.halo) l->bytes += (nb + 1) * 8 + nz * (4 + vb) + l->halo_max * 8;
    if (l->xbuf[s]) l->bytes += nb * l->src.f * 4;
    if (l->ybuf[s]) l->bytes += nb * 4;
    return INCA_OK;
}

/* Transpose the square n x n CSR `a` (sizes in a) into preallocated t. */
static void transpose_into(const csr_t *a, csr_t *t, int64_t *cnt) {
    int64_t n = a->n_rows;
    memset(cnt, 0, sizeof *cnt * (size_t)(n + 1));
    for (int64_t e = 0; e < a->nnz; e++) cnt[a->col[e] + 1]++;
    for (int64_t i = 0; i < n; i++) cnt[i + 1] += cnt[i];
    memcpy(t->rowptr, cnt, sizeof *cnt * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++)       /* rows visited in order: columns come out sorted */
        for (int64_t e = a->rowptr[i]; e < a->rowptr[i + 1]; e++) {
            int64_t p = cnt[a->col[e]]++;
            t->col[p] = (int32_t)i;
            if (a->val) t->val[p] = a->val[e];
        }
    t->n_rows = t->n_cols = n;
    t->nnz = a->nnz;
}

static void epoch_order(batch_loader_t *l, int64_t epoch) {
    if (l->order_epoch == epoch) return;
    memcpy(l->order, l->parts, sizeof *l->order * (size_t)l->kp);
    rng_t r;
    rng_seed(&r, rng_hash64(l->o.seed, 0x62617463ull + l->o.stream, (uint64_t)epoch));
    rng_shuffle_i64(&r, l->order, l->kp);
    l->order_epoch = epoch;
}

/* Â_BB's values renormalised on the batch subgraph (batch.h, BATCH_RENORM_*); rows with no
 * entry stay empty. Computed in double, rounded once. */
static void batch_renorm(csr_t *a, int renorm) {
    for (int64_t i = 0; i < a->n_rows; i++) {
        const int64_t di = a->rowptr[i + 1] - a->rowptr[i];
        for (int64_t e = a->rowptr[i]; e < a->rowptr[i + 1]; e++) {
            const int64_t j = a->col[e], dj = a->rowptr[j + 1] - a->rowptr[j];
            a->val[e] = (float)(renorm == BATCH_RENORM_MEAN ? 1.0 / (double)di : 1.0 / sqrt((double)di * (double)dj));
        }
    }
}

/* The parts of batch b (step `step` of the epoch's order) into its node ranges and nodes, with
 * l->local set for them; n_b and nnz_rows too. */
static void batch_ranges(batch_loader_t *l, batch_t *b, int64_t step) {
    const batch_source_t *src = &l->src;
    const int64_t bp = l->o.batch_parts;
    int64_t p0 = step * bp, np = l->kp - p0 < bp ? l->kp - p0 : bp;
    memcpy(l->sel, l->order + p0, sizeof *l->sel * (size_t)np);
    qsort(l->sel, (size_t)np, sizeof *l->sel, inca_cmp_i64);
    b->nranges = 0;
    int64_t nb = 0;
    for (int64_t i = 0; i < np; i++) {
        int64_t s = src->bounds[l->sel[i]], e = src->bounds[l->sel[i] + 1];
        if (e == s) continue;
        if (b->nranges > 0 && b->range_start[b->nranges - 1] + b->range_len[b->nranges - 1] == s)
            b->range_len[b->nranges - 1] += e - s;
        else {
            b->range_start[b->nranges] = s;
            b->range_len[b->nranges] = e - s;
            b->nranges++;
        }
        for (int64_t v = s; v < e; v++) { b->nodes[nb] = v; l->local[v] = (int32_t)nb; nb++; }
    }
    b->n_b = nb;
    b->nnz_rows = 0;
    for (int64_t r = 0; r < b->nranges; r++)
        b->nnz_rows += src->a->rowptr[b->range_start[r] + b->range_len[r]] - src->a->rowptr[b->range_start[r]];
}

/* Batch b's feature and label rows (slot s's buffers), and the pages of its rows touched. */
static void batch_rows(batch_loader_t *l, batch_t *b, int s) {
    const batch_source_t *src = &l->src;
    /* features and labels: a view for one range, else a copy */
    if (src->x && src->f > 0) {
        if (b->nranges == 1) b->x = src->x + b->range_start[0] * src->f;
        else {
            int64_t off = 0;
            for (int64_t r = 0; r < b->nranges; r++) {
                memcpy(l->xbuf[s] + off * src->f, src->x + b->range_start[r] * src->f,
                       sizeof(float) * (size_t)(b->range_len[r] * src->f));
                off += b->range_len[r];
            }
            b->x = l->xbuf[s];
        }
    } else b->x = NULL;
    if (src->touch && src->touch_row_bytes > 0)
        for (int64_t r = 0; r < b->nranges; r++)
            touch_pages((const char *)src->touch + b->range_start[r] * src->touch_row_bytes, b->range_len[r] * src->touch_row_bytes);
    if (src->y) {
        if (b->nranges == 1) b->y = src->y + b->range_start[0];
        else {
            int64_t off = 0;
            for (int64_t r = 0; r < b->nranges; r++) {
                memcpy(l->ybuf[s] + off, src->y + b->range_start[r], sizeof(int32_t) * (size_t)b->range_len[r]);
                off += b->range_len[r];
            }
            b->y = l->ybuf[s];
        }
    } else b->y = NULL;
}

/* Batch b's halo ids (sorted; stamp marks this batch in l->hmark) and their positions. */
static void batch_halo(batch_loader_t *l, batch_t *b, int64_t stamp) {
    const csr_t *a = l->src.a;
    const int64_t nb = b->n_b;
    int64_t nh = 0;
    if (l->o.halo) {
        for (int64_t i = 0; i < nb; i++) {
            int64_t u = b->nodes[i];
            for (int64_t e = a->rowptr[u]; e < a->rowptr[u + 1]; e++) {
                int64_t v = a->col[e];
                if (l->local[v] < 0 && l->hmark[v] != stamp) { l->hmark[v] = stamp; b->halo[nh++] = v; }
            }
        }
        qsort(b->halo, (size_t)nh, sizeof *b->halo, inca_cmp_i64);
        for (int64_t h = 0; h < nh; h++) l->hpos[b->halo[h]] = h;
    }
    b->n_halo = nh;
}

/* Â_BB and Â_{B,halo}: columns ascending because global ids map monotonically to local ids and
 * to halo positions */
static void batch_adjacency(batch_loader_t *l, batch_t *b) {
    const csr_t *a = l->src.a;
    const int64_t nb = b->n_b;
    int64_t zb = 0, zh = 0;
    b->a_bb.rowptr[0] = 0;
    if (l->o.halo) b->a_bh.rowptr[0] = 0;
    for (int64_t i = 0; i < nb; i++) {
        int64_t u = b->nodes[i];
        for (int64_t e = a->rowptr[u]; e < a->rowptr[u + 1]; e++) {
            int64_t v = a->col[e];
            int32_t lv = l->local[v];
            if (lv >= 0) {
                b->a_bb.col[zb] = lv;
                if (a->val) b->a_bb.val[zb] = a->val[e];
                zb++;
            } else if (l->o.halo) {
                b->a_bh.col[zh] = (int32_t)l->hpos[v];
                if (a->val) b->a_bh.val[zh] = a->val[e];
                zh++;
            }
        }
        b->a_bb.rowptr[i + 1] = zb;
        if (l->o.halo) b->a_bh.rowptr[i + 1] = zh;
    }
    b->a_bb.n_rows = b->a_bb.n_cols = nb;
    b->a_bb.nnz = zb;
    if (l->o.halo) {
        b->a_bh.n_rows = nb;
        b->a_bh.n_cols = b->n_halo;
        b->a_bh.nnz = zh;
    }
}

/* Build global batch number `idx` into slot idx % 2. Runs on one thread at a time. */
static int batch_build(batch_loader_t *l, int64_t idx) {
    double t0 = inca_now();
    const batch_source_t *src = &l->src;
    batch_t *b = &l->slot[idx % 2];
    int64_t epoch = idx / l->spe, step = idx % l->spe;
    epoch_order(l, epoch);
    b->index = idx;
    b->epoch = epoch;
    b->step = step;
    batch_ranges(l, b, step);
    batch_rows(l, b, (int)(idx % 2));
    batch_halo(l, b, idx + 1);
    batch_adjacency(l, b);
    if (l->o.renorm != BATCH_RENORM_NONE) batch_renorm(&b->a_bb, l->o.renorm);
    if (!src->a_symmetric) transpose_into(&b->a_bb, &b->a_bbt, l->tcount);
    for (int64_t i = 0; i < b->n_b; i++) l->local[b->nodes[i]] = -1;
    l->build_s += inca_now() - t0;
    return INCA_OK;
}

static void *producer_main(void *arg) {
    batch_loader_t *l = arg;
    inca_thread_adopt();   /* its kernels' OpenMP teams: --threads, not the machine's cores */
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->stop && !l->err && l->produced >= l->released + 2) pthread_cond_wait(&l->cv, &l->mu);
        if (l->stop || l->err) break;
        int64_t idx = l->produced;
        pthread_mutex_unlock(&l->mu);
        int rc = batch_build(l, idx);
        pthread_mutex_lock(&l->mu);
        if (rc != INCA_OK) {
            l->err = rc;
            snprintf(l->errmsg, sizeof l->errmsg, "%s", inca_errmsg());
        } else l->produced = idx + 1;
        pthread_cond_broadcast(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int batch_loader_create(const batch_source_t *src, const batch_opts_t *o, batch_loader_t **out) {
    *out = NULL;
    if (!src->a || src->a->n_rows != src->n || src->a->n_cols != src->n)
        return inca_fail(INCA_EINVAL, "batch loader: adjacency must be %lld x %lld", (long long)src->n, (long long)src->n);
    if (src->k < 1 || !src->bounds || src->bounds[0] != 0 || src->bounds[src->k] != src->n)
        return inca_fail(INCA_EINVAL, "batch loader: part bounds must run from 0 to n = %lld", (long long)src->n);
    for (int64_t p = 0; p < src->k; p++)
        if (src->bounds[p + 1] < src->bounds[p])
            return inca_fail(INCA_EINVAL, "batch loader: part bounds decrease at part %lld", (long long)p);
    if (o->batch_parts < 1) return inca_fail(INCA_EINVAL, "--batch-parts: expected at least 1, got %lld", (long long)o->batch_parts);
    if (o->renorm < BATCH_RENORM_NONE || o->renorm > BATCH_RENORM_MEAN)
        return inca_fail(INCA_EINVAL, "batch loader: unknown renormalisation %d", o->renorm);
    if (o->renorm != BATCH_RENORM_NONE && !src->a->val)
        return inca_fail(INCA_EINVAL, "batch loader: renormalising Â_BB needs an adjacency with values");
    if (src->n >= INT32_MAX) return inca_fail(INCA_EINVAL, "batch loader: %lld nodes exceed 32-bit local ids", (long long)src->n);
    if (o->first_epoch < 0) return inca_fail(INCA_EINVAL, "batch loader: first epoch %lld < 0", (long long)o->first_epoch);
    if ((o->part_lo || o->part_hi) && (o->part_lo < 0 || o->part_lo >= o->part_hi || o->part_hi > src->k))
        return inca_fail(INCA_EINVAL, "batch loader: part range [%lld, %lld) is not inside [0, %lld)", (long long)o->part_lo,
                         (long long)o->part_hi, (long long)src->k);
    int rc = INCA_OK;
    batch_loader_t *l = inca_calloc(1, sizeof *l);
    int64_t *tmp = NULL;
    if (!l) return INCA_ENOMEM;
    l->src = *src;
    l->o = *o;
    if (!o->part_lo && !o->part_hi) l->o.part_hi = src->k;
    l->order_epoch = -1;
    if (pthread_mutex_init(&l->mu, NULL) != 0) { inca_free(l); return inca_fail(INCA_ERR, "pthread_mutex_init failed"); }
    if (pthread_cond_init(&l->cv, NULL) != 0) { pthread_mutex_destroy(&l->mu); inca_free(l); return inca_fail(INCA_ERR, "pthread_cond_init failed"); }
    /* Empty parts (METIS leaves some when K nears n) are never drawn: a batch of them would
     * have no rows. Without empty parts the order and the batches are what they always were. */
    l->parts = inca_malloc(sizeof *l->parts * (size_t)src->k);
    if (!l->parts) { rc = INCA_ENOMEM; goto fail; }
    l->kp = 0;
    for (int64_t p = l->o.part_lo; p < l->o.part_hi; p++)
        if (src->bounds[p + 1] > src->bounds[p]) l->parts[l->kp++] = p;
    if (l->kp == 0) {
        rc = inca_fail(INCA_EINVAL, "batch loader: parts [%lld, %lld) hold no node", (long long)l->o.part_lo, (long long)l->o.part_hi);
        goto fail;
    }
    if (l->o.batch_parts > l->kp) l->o.batch_parts = l->kp;
    l->spe = (l->kp + l->o.batch_parts - 1) / l->o.batch_parts;
    l->produced = l->handed = l->released = o->first_epoch * l->spe;
    /* bounds on any batch: the b largest of the parts drawn from, by nodes and by nonzeros */
    tmp = inca_malloc(sizeof *tmp * (size_t)src->k);
    if (!tmp) { rc = INCA_ENOMEM; goto fail; }
    const int64_t *bd = src->bounds, *pp = l->parts;
    for (int64_t i = 0; i < l->kp; i++) tmp[i] = bd[pp[i] + 1] - bd[pp[i]];
    l->nb_max = sum_largest(tmp, l->kp, l->o.batch_parts);
    for (int64_t i = 0; i < l->kp; i++) tmp[i] = src->a->rowptr[bd[pp[i] + 1]] - src->a->rowptr[bd[pp[i]]];
    l->nnz_max = sum_largest(tmp, l->kp, l->o.batch_parts);
    INCA_FREE(tmp);
    l->halo_max = l->o.halo ? (l->nnz_max < src->n ? l->nnz_max : src->n) : 0;
    l->order = inca_malloc(sizeof *l->order * (size_t)src->k);
    l->sel = inca_malloc(sizeof *l->sel * (size_t)src->k);
    l->local = inca_malloc(sizeof *l->local * (size_t)(src->n ? src->n : 1));
    l->tcount = inca_malloc(sizeof *l->tcount * (size_t)(l->nb_max + 1));
    if (!l->order || !l->sel || !l->local || !l->tcount) { rc = INCA_ENOMEM; goto fail; }
    if (l->o.halo) {
        l->hmark = inca_calloc((size_t)(src->n ? src->n : 1), sizeof *l->hmark);
        l->hpos = inca_malloc(sizeof *l->hpos * (size_t)(src->n ? src->n : 1));
        if (!l->hmark || !l->hpos) { rc = INCA_ENOMEM; goto fail; }
    }
    for (int64_t v = 0; v < src->n; v++) l->local[v] = -1;
    l->bytes = src->k * 16 + src->n * (4 + (l->o.halo ? 16 : 0)) + (l->nb_max + 1) * 8;
    for (int s = 0; s < 2; s++)
        if ((rc = slot_alloc(l, s)) != INCA_OK) goto fail;
    if (l->o.prefetch) {
        if (pthread_create(&l->th, NULL, producer_main, l) != 0) { rc = inca_fail(INCA_ERR, "batch loader: pthread_create failed"); goto fail; }
        l->th_started = 1;
    }
    *out = l;
    return INCA_OK;
fail:
    inca_free(tmp);
    batch_loader_free(&l);
    return rc;
}

void batch_loader_free(batch_loader_t **pl) {
    if (!pl || !*pl) return;
    batch_loader_t *l = *pl;
    if (l->th_started) {
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->th, NULL);
    }
    for (int s = 0; s < 2; s++) {
        slot_free(&l->slot[s]);
        inca_free(l->xbuf[s]);
        inca_free(l->ybuf[s]);
    }
    inca_free(l->parts);
    inca_free(l->order);
    inca_free(l->sel);
    inca_free(l->local);
    inca_free(l->hmark);
    inca_free(l->hpos);
    inca_free(l->tcount);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    inca_free(l);
    *pl = NULL;
}

int64_t batch_loader_steps_per_epoch(const batch_loader_t *l) { return l->spe; }
double batch_loader_wait_s(const batch_loader_t *l) { return l->wait_s; }
double batch_loader_build_s(const batch_loader_t *l) { return l->build_s; }
int64_t batch_loader_bytes(const batch_loader_t *l) { return l->bytes; }
void batch_loader_limits(const batch_loader_t *l, int64_t *nb_max, int64_t *halo_max) {
    *nb_max = l->nb_max;
    *halo_max = l->halo_max;
}

int batch_loader_next(batch_loader_t *l, const batch_t **out) {
    *out = NULL;
    if (!l->o.prefetch) {
        int rc = batch_build(l, l->handed);
        if (rc != INCA_OK) return rc;
        *out = &l->slot[l->handed % 2];
        l->handed++;
        return INCA_OK;
    }
    pthread_mutex_lock(&l->mu);
    /* the caller gives back batch handed-1 now: its slot may be refilled with batch handed+1 */
    l->released = l->handed;
    pthread_cond_broadcast(&l->cv);
    double t0 = inca_now();
    while (l->produced <= l->handed && !l->err) pthread_cond_wait(&l->cv, &l->mu);
    l->wait_s += inca_now() - t0;
    int rc = INCA_OK;
    if (l->err) rc = inca_fail(l->err, "batch loader: %s", l->errmsg);
    else {
        *out = &l->slot[l->handed % 2];
        l->handed++;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}
