/* Accounting of a context's memory (kernels/memtrack.h; kernels/backend.h's kc_mem_* wrap it):
 * every block allocated through kc_alloc, and every block a backend allocates for itself (matrix
 * arrays, SpMM and GEMM workspaces) through kc_mem_admit / kc_mem_note, is recorded with its size, kind and the tag
 * the caller had set, so that the bytes a run holds on a device, their peak, and what they are
 * for can be read at any time without asking the driver (whose figure also counts the CUDA
 * context and other processes). A device limit (kc_mem_limit) turns an allocation past it into
 * INCA_ENOMEM with the breakdown, before the backend is asked: a GPU of 16 GB is simulated on a
 * larger one, and the emulated device refuses as a full GPU would. kc_copy's bytes are counted by
 * direction (what a step moves between host and device). Tested in test_backend.c. */
#include "kernels/memtrack.h"
#include "core/alloc.h"
#include "core/status.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MT_MAX_TAGS KMT_MAX_TAGS

typedef struct mt_rec {
    const void *p;     /* NULL: empty slot; (void *)1: deleted */
    size_t bytes;
    uint8_t mem, tag;
} mt_rec_t;

struct kern_memtrack {
    pthread_mutex_t mu;
    mt_rec_t *tab;
    size_t cap, used, live;     /* slots, slots not empty (live + deleted), live records */
    int64_t now[3], peak[3], limit;
    int64_t copied[3], allocs;
    const char *tags[MT_MAX_TAGS];
    int64_t tag_now[MT_MAX_TAGS];
    int ntags, cur;
};

#define MT_DELETED ((const void *)1)

static size_t mt_hash(const void *p, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

static int mt_grow(struct kern_memtrack *m) {
    const size_t cap = m->cap ? 2 * m->cap : 256;
    mt_rec_t *t = inca_calloc(cap, sizeof *t);
    if (!t) return INCA_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        const mt_rec_t r = m->tab[i];
        if (!r.p || r.p == MT_DELETED) continue;
        size_t j = mt_hash(r.p, cap);
        while (t[j].p) j = (j + 1) & (cap - 1);
        t[j] = r;
    }
    inca_free(m->tab);
    m->tab = t;
    m->cap = cap;
    m->used = m->live;
    return INCA_OK;
}

int kmt_create(kern_memtrack_t **out) {
    struct kern_memtrack *m = inca_calloc(1, sizeof *m);
    if (!m) return inca_fail(INCA_ENOMEM, "kernel context: out of memory for its accounting");
    pthread_mutex_init(&m->mu, NULL);
    m->tags[0] = "other";
    m->ntags = 1;
    *out = m;
    return INCA_OK;
}

void kmt_free(kern_memtrack_t *m) {
    if (!m) return;
    pthread_mutex_destroy(&m->mu);
    inca_free(m->tab);
    inca_free(m);
}

/* "graph 812.0, features 488.3, ..." of the tags holding device memory now */
static void mt_breakdown(const struct kern_memtrack *m, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = '\0';
    for (int t = 0; t < m->ntags && k + 1 < cap; t++) {
        if (m->tag_now[t] <= 0) continue;
        const int w = snprintf(buf + k, cap - k, "%s%s %.1f", k ? ", " : "", m->tags[t], m->tag_now[t] / 1048576.0);
        if (w < 0) break;
        k += (size_t)w;
    }
}

int kmt_admit(kern_memtrack_t *m, int mem, size_t bytes, const char *what) {
    if (!m || mem != KMT_DEVICE) return INCA_OK;
    pthread_mutex_lock(&m->mu);
    int rc = INCA_OK;
    if (m->limit > 0 && m->now[KMT_DEVICE] + (int64_t)bytes > m->limit) {
        char bd[512];
        mt_breakdown(m, bd, sizeof bd);
        rc = inca_fail(INCA_ENOMEM, "device memory budget %.1f MB: %s (%s) asks %.1f MB with %.1f MB in use (MB: %s)",
                       m->limit / 1048576.0, what ? what : "an allocation", m->tags[m->cur], bytes / 1048576.0,
                       m->now[KMT_DEVICE] / 1048576.0, bd[0] ? bd : "nothing");
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int kmt_note(kern_memtrack_t *m, int mem, const void *p, size_t bytes) {
    if (!m || !p || mem < 0 || mem > 2) return INCA_OK;
    pthread_mutex_lock(&m->mu);
    int rc = INCA_OK;
    if (2 * (m->used + 1) > m->cap) rc = mt_grow(m);
    if (rc == INCA_OK) {
        size_t j = mt_hash(p, m->cap);
        while (m->tab[j].p && m->tab[j].p != MT_DELETED) j = (j + 1) & (m->cap - 1);
        if (!m->tab[j].p) m->used++;
        m->tab[j] = (mt_rec_t){.p = p, .bytes = bytes, .mem = (uint8_t)mem, .tag = (uint8_t)m->cur};
        m->live++;
        m->now[mem] += (int64_t)bytes;
        if (m->now[mem] > m->peak[mem]) m->peak[mem] = m->now[mem];
        m->allocs++;
        if (mem == KMT_DEVICE) {
            m->tag_now[m->cur] += (int64_t)bytes;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return rc == INCA_OK ? rc : inca_fail(rc, "kernel context: out of memory for its accounting");
}

void kmt_forget(kern_memtrack_t *m, const void *p) {
    if (!m || !p || !m->cap) return;
    pthread_mutex_lock(&m->mu);
    for (size_t j = mt_hash(p, m->cap); m->tab[j].p; j = (j + 1) & (m->cap - 1)) {
        if (m->tab[j].p != p) continue;
        const mt_rec_t r = m->tab[j];
        m->now[r.mem] -= (int64_t)r.bytes;
        if (r.mem == KMT_DEVICE) m->tag_now[r.tag] -= (int64_t)r.bytes;
        m->tab[j].p = MT_DELETED;
        m->live--;
        break;
    }
    pthread_mutex_unlock(&m->mu);
}

const char *kmt_tag(kern_memtrack_t *m, const char *tag) {
    if (!m) return NULL;
    pthread_mutex_lock(&m->mu);
    const char *prev = m->tags[m->cur];
    int t = 0;
    if (tag) {
        for (t = 0; t < m->ntags && strcmp(m->tags[t], tag) != 0; t++) {}
        if (t == m->ntags) {
            if (m->ntags < MT_MAX_TAGS) m->tags[m->ntags++] = tag;
            else t = 0;   /* past the table: counted as "other" */
        }
    }
    m->cur = t;
    pthread_mutex_unlock(&m->mu);
    return prev;
}

void kmt_copied_add(kern_memtrack_t *m, int kind, size_t bytes) {
    if (!m || kind < 0 || kind > 2) return;
    pthread_mutex_lock(&m->mu);
    m->copied[kind] += (int64_t)bytes;
    pthread_mutex_unlock(&m->mu);
}

void kmt_copied(kern_memtrack_t *m, int64_t out[3]) {
    out[0] = out[1] = out[2] = 0;
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    for (int k = 0; k < 3; k++) out[k] = m->copied[k];
    pthread_mutex_unlock(&m->mu);
}

void kmt_limit(kern_memtrack_t *m, int64_t bytes) {
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    m->limit = bytes > 0 ? bytes : 0;
    pthread_mutex_unlock(&m->mu);
}

void kmt_reset_peak(kern_memtrack_t *m) {
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    for (int k = 0; k < 3; k++) m->peak[k] = m->now[k];
    pthread_mutex_unlock(&m->mu);
}

void kmt_stats(kern_memtrack_t *m, kmt_stats_t *s) {
    memset(s, 0, sizeof *s);
    if (m) {
        pthread_mutex_lock(&m->mu);
        for (int k = 0; k < 3; k++) {
            s->now[k] = m->now[k];
            s->peak[k] = m->peak[k];
        }
        s->limit = m->limit;
        for (int k = 0; k < 3; k++) s->copied[k] = m->copied[k];
        s->allocs = m->allocs;
        s->ntags = m->ntags;
        for (int t = 0; t < m->ntags; t++) {
            s->tag[t] = m->tags[t];
            s->tag_now[t] = m->tag_now[t];
        }
        pthread_mutex_unlock(&m->mu);
    }
}
