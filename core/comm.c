/* See comm.h. With INCA_HAS_MPI the collectives are MPI's; without, one rank copies. */
#include "core/comm.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef INCA_HAS_MPI
#include <mpi.h>
#endif

/* The shared state of a group of thread ranks (comm_threads_create): a barrier that a failing
 * rank can break (poison), and one published pointer (and count array) per rank. A collective
 * publishes, waits, reads the others' published data, and waits again before anyone reuses it. */
typedef struct comm_shm {
    int size;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived, poisoned;
    uint64_t gen;
    const void **ptr;
    const int64_t **cnt;
} comm_shm_t;

struct comm {
    int rank, size;
    int local_rank, local_size;   /* among the ranks on this rank's node (MPI_COMM_TYPE_SHARED) */
    int started;   /* comm_init called MPI_Init_thread */
    comm_shm_t *shm;   /* thread ranks of one process (comm_threads_create), else NULL */
#ifdef INCA_HAS_MPI
    MPI_Comm mc;   /* MPI_COMM_WORLD, or a split of it (comm_split: freed by comm_free) */
#endif
    int64_t sent[COMM_NPHASES];
    double secs[COMM_NPHASES];
};

int comm_launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMIX_RANK") != NULL || getenv("PMI_SIZE") != NULL;
}

int comm_has_mpi(void) {
#ifdef INCA_HAS_MPI
    return 1;
#else
    return 0;
#endif
}

int comm_init(int *argc, char ***argv, comm_t **out) {
    comm_t *c = inca_calloc(1, sizeof *c);
    if (!c) return INCA_ENOMEM;
    c->size = c->local_size = 1;
#ifdef INCA_HAS_MPI
    if (comm_launched()) {
        int provided = 0;
        if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            inca_free(c);
            return inca_fail(INCA_ERR, "MPI_Init_thread failed");
        }
        c->started = 1;
        /* errors come back as codes (turned into messages here), never as MPI's own abort */
        c->mc = MPI_COMM_WORLD;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &c->size);
        if (provided < MPI_THREAD_FUNNELED) {
            MPI_Finalize();
            inca_free(c);
            return inca_fail(INCA_ERR, "MPI provides thread level %d, inca needs MPI_THREAD_FUNNELED", provided);
        }
        MPI_Comm node;   /* the ranks sharing this node's memory: its GPUs are theirs */
        if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
            MPI_Comm_rank(node, &c->local_rank);
            MPI_Comm_size(node, &c->local_size);
            MPI_Comm_free(&node);
        } else {
            c->local_rank = c->rank;
            c->local_size = c->size;
        }
    }
#else
    (void)argc;
    (void)argv;
#endif
    *out = c;
    return INCA_OK;
}

void comm_finalize(comm_t **pc) {
    if (!pc || !*pc) return;
#ifdef INCA_HAS_MPI
    if ((*pc)->started) MPI_Finalize();
#endif
    inca_free(*pc);
    *pc = NULL;
}

#ifdef INCA_HAS_MPI
int comm_mpi(const comm_t *c, MPI_Comm *out) {
    int up = 0;
    MPI_Initialized(&up);   /* callable before MPI_Init */
    if (!c || c->shm || !up || c->mc == MPI_COMM_NULL)
        return inca_fail(INCA_EINVAL, "no MPI communicator: this process was not started by an MPI launcher (mpirun -np P)");
    *out = c->mc;
    return INCA_OK;
}
#endif

int comm_rank(const comm_t *c) { return c ? c->rank : 0; }
int comm_size(const comm_t *c) { return c ? c->size : 1; }
int comm_local_rank(const comm_t *c) { return c ? c->local_rank : 0; }

int64_t comm_bytes_sent(const comm_t *c, int phase) {
    return c && phase >= 0 && phase < COMM_NPHASES ? c->sent[phase] : 0;
}
double comm_seconds(const comm_t *c, int phase) {
    return c && phase >= 0 && phase < COMM_NPHASES ? c->secs[phase] : 0;
}
void comm_count(comm_t *c, int phase, int64_t bytes, double secs) {
    if (!c || phase < 0 || phase >= COMM_NPHASES) return;
    c->sent[phase] += bytes;
    c->secs[phase] += secs;
}

void comm_reset_bytes(comm_t *c) {
    if (!c) return;
    memset(c->sent, 0, sizeof c->sent);
    memset(c->secs, 0, sizeof c->secs);
}
const char *comm_phase_name(int phase) {
    static const char *const n[COMM_NPHASES] = {"setup", "grad", "refresh", "halo", "eval"};
    return phase >= 0 && phase < COMM_NPHASES ? n[phase] : "?";
}

static void count(comm_t *c, int phase, int64_t bytes, double t0) {
    if (c && phase >= 0 && phase < COMM_NPHASES) {
        c->sent[phase] += bytes;
        c->secs[phase] += inca_now() - t0;
    }
}

/* ---- thread ranks (comm_threads_create) ---- */

int comm_threads_create(int size, comm_t **ranks) {
    if (size < 1) return inca_fail(INCA_EINVAL, "thread ranks: expected >= 1, got %d", size);
    comm_shm_t *s = inca_calloc(1, sizeof *s);
    if (!s) return INCA_ENOMEM;
    s->size = size;
    s->ptr = inca_calloc((size_t)size, sizeof *s->ptr);
    s->cnt = inca_calloc((size_t)size, sizeof *s->cnt);
    int rc = s->ptr && s->cnt ? INCA_OK : INCA_ENOMEM;
    int mu = rc == INCA_OK && pthread_mutex_init(&s->mu, NULL) == 0;
    int cv = mu && pthread_cond_init(&s->cv, NULL) == 0;
    if (rc == INCA_OK && !cv) rc = inca_fail(INCA_ERR, "thread ranks: cannot initialise a mutex or condition");
    for (int r = 0; r < size; r++) ranks[r] = NULL;
    for (int r = 0; r < size && rc == INCA_OK; r++) {
        if (!(ranks[r] = inca_calloc(1, sizeof **ranks))) { rc = INCA_ENOMEM; break; }
        ranks[r]->rank = r;
        ranks[r]->size = size;
        ranks[r]->local_rank = r;
        ranks[r]->local_size = size;
        ranks[r]->shm = s;
    }
    if (rc == INCA_OK) return INCA_OK;
    for (int r = 0; r < size; r++) INCA_FREE(ranks[r]);
    if (cv) pthread_cond_destroy(&s->cv);
    if (mu) pthread_mutex_destroy(&s->mu);
    inca_free(s->ptr);
    inca_free((void *)s->cnt);
    inca_free(s);
    return rc;
}

void comm_threads_free(comm_t **ranks, int size) {
    if (!ranks || size < 1 || !ranks[0]) return;
    comm_shm_t *s = ranks[0]->shm;
    for (int r = 0; r < size; r++) INCA_FREE(ranks[r]);
    if (!s) return;
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    inca_free(s->ptr);
    inca_free((void *)s->cnt);
    inca_free(s);
}

int comm_poison(comm_t *c) {
    if (!c || !c->shm) return 0;
    comm_shm_t *s = c->shm;
    pthread_mutex_lock(&s->mu);
    const int first = !s->poisoned;
    s->poisoned = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return first;
}

/* The group's barrier: INCA_ERR once a rank has failed (comm_poison), so no rank waits for one
 * that will never come. */
static int shm_wait(comm_t *c) {
    comm_shm_t *s = c->shm;
    pthread_mutex_lock(&s->mu);
    int bad = s->poisoned;
    if (!bad) {
        const uint64_t g = s->gen;
        if (++s->arrived == s->size) {
            s->arrived = 0;
            s->gen++;
            pthread_cond_broadcast(&s->cv);
        } else
            while (g == s->gen && !s->poisoned) pthread_cond_wait(&s->cv, &s->mu);
        bad = g == s->gen;   /* woken by a poison, not by the last arrival */
    }
    pthread_mutex_unlock(&s->mu);
    return bad ? inca_fail(INCA_ERR, "rank %d of %d: another rank failed", c->rank, c->size) : INCA_OK;
}

static int shm_allgather(comm_t *c, const void *send, int64_t bytes, void *recv, int phase) {
    const double t0 = inca_now();
    c->shm->ptr[c->rank] = send;
    int rc = shm_wait(c);
    for (int r = 0; r < c->size && rc == INCA_OK; r++)
        if (bytes > 0) memmove((char *)recv + (size_t)r * (size_t)bytes, c->shm->ptr[r], (size_t)bytes);
    if (rc == INCA_OK) rc = shm_wait(c);
    if (rc == INCA_OK) count(c, phase, bytes * (c->size - 1), t0);
    return rc;
}

static int shm_bcast(comm_t *c, void *buf, int64_t bytes, int root, int phase) {
    const double t0 = inca_now();
    c->shm->ptr[c->rank] = buf;
    int rc = shm_wait(c);
    if (rc == INCA_OK && c->rank != root && bytes > 0) memcpy(buf, c->shm->ptr[root], (size_t)bytes);
    if (rc == INCA_OK) rc = shm_wait(c);
    if (rc == INCA_OK) count(c, phase, c->rank == root ? bytes * (c->size - 1) : 0, t0);
    return rc;
}

static int shm_allreduce_i64(comm_t *c, int64_t *v, int n, int phase, int is_max) {
    const double t0 = inca_now();
    int64_t *t = inca_malloc(sizeof *t * (size_t)n);
    if (!t) return INCA_ENOMEM;
    c->shm->ptr[c->rank] = v;
    int rc = shm_wait(c);
    for (int i = 0; i < n && rc == INCA_OK; i++) {
        t[i] = ((const int64_t *)c->shm->ptr[0])[i];
        for (int r = 1; r < c->size; r++) {
            const int64_t x = ((const int64_t *)c->shm->ptr[r])[i];
            t[i] = is_max ? (x > t[i] ? x : t[i]) : t[i] + x;
        }
    }
    if (rc == INCA_OK) rc = shm_wait(c);
    if (rc == INCA_OK) {
        memcpy(v, t, sizeof *t * (size_t)n);
        count(c, phase, (int64_t)sizeof(int64_t) * n * (c->size - 1), t0);
    }
    inca_free(t);
    return rc;
}

static int shm_alltoall_i64(comm_t *c, const int64_t *send, int64_t *recv, int phase) {
    const double t0 = inca_now();
    c->shm->ptr[c->rank] = send;
    int rc = shm_wait(c);
    for (int r = 0; r < c->size && rc == INCA_OK; r++) recv[r] = ((const int64_t *)c->shm->ptr[r])[c->rank];
    if (rc == INCA_OK) rc = shm_wait(c);
    if (rc == INCA_OK) count(c, phase, (int64_t)sizeof(int64_t) * (c->size - 1), t0);
    return rc;
}

static int shm_alltoallv_rows(comm_t *c, const void *send, const int64_t *scount, void *recv, const int64_t *rcount,
                              int64_t row_bytes, int phase) {
    const double t0 = inca_now();
    const int me = c->rank;
    c->shm->ptr[me] = send;
    c->shm->cnt[me] = scount;
    int rc = shm_wait(c);
    int64_t ro = 0, sent = 0;
    for (int r = 0; r < c->size && rc == INCA_OK; r++) {
        const int64_t *sc = c->shm->cnt[r];
        int64_t so = 0;
        for (int j = 0; j < me; j++) so += sc[j];
        if (sc[me] != rcount[r])
            rc = inca_fail(INCA_ERR, "alltoallv: rank %d sends %lld rows to rank %d, which expects %lld", r,
                           (long long)sc[me], me, (long long)rcount[r]);
        else if (rcount[r] > 0 && row_bytes > 0)
            memcpy((char *)recv + ro * row_bytes, (const char *)c->shm->ptr[r] + so * row_bytes,
                   (size_t)(rcount[r] * row_bytes));
        ro += rcount[r];
        if (r != me) sent += scount[r];
    }
    /* a rank that found a mismatch still meets the others at the barrier, then fails */
    const int rw = shm_wait(c);
    if (rc == INCA_OK) rc = rw;
    if (rc == INCA_OK) count(c, phase, sent * row_bytes, t0);
    return rc;
}

/* The same bits as the MPI chain (the left-to-right loop), the same bytes counted. */
static int shm_ordered_sum_f32(comm_t *c, float *buf, int64_t n, const uint8_t *contrib, int phase) {
    const double t0 = inca_now();
    const int p = c->size, me = c->rank;
    int first = -1, last = -1;
    for (int r = 0; r < p; r++)
        if (contrib[r]) {
            if (first < 0) first = r;
            last = r;
        }
    float *t = first >= 0 ? inca_malloc(sizeof *t * (size_t)n) : NULL;
    if (first >= 0 && !t) return INCA_ENOMEM;
    c->shm->ptr[me] = buf;
    int rc = shm_wait(c);
    if (rc == INCA_OK && first >= 0) {
        memcpy(t, c->shm->ptr[first], sizeof *t * (size_t)n);
        for (int r = first + 1; r < p; r++)
            if (contrib[r]) {
                const float *g = c->shm->ptr[r];
                for (int64_t i = 0; i < n; i++) t[i] = g[i] + t[i];
            }
    }
    if (rc == INCA_OK) rc = shm_wait(c);
    if (rc == INCA_OK && first >= 0) {
        memcpy(buf, t, sizeof *t * (size_t)n);
        const int succ = (me + 1) % p;
        const int64_t sent = (contrib[me] && me != last ? n : 0) + (succ != last ? n : 0);
        count(c, phase, sent * (int64_t)sizeof(float), t0);
    }
    inca_free(t);
    return rc;
}

#ifdef INCA_HAS_MPI

static int mpi_fail(int err, const char *what) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "error %d", err);
    return inca_fail(INCA_ERR, "%s failed: %s", what, s);
}
/* a byte count as MPI's int, or the message naming the collective */
static int as_int(int64_t v, const char *what, int *out) {
    if (v < 0 || v > INT_MAX) return inca_fail(INCA_ERR, "%s: %lld items exceed MPI's int count", what, (long long)v);
    *out = (int)v;
    return INCA_OK;
}
#endif

int comm_allgather(comm_t *c, const void *send, int64_t bytes, void *recv, int phase) {
    const int p = comm_size(c);
    if (p > 1 && c->shm) return shm_allgather(c, send, bytes, recv, phase);
    if (p == 1) {
        if (bytes > 0 && recv != send) memmove(recv, send, (size_t)bytes);
        return INCA_OK;
    }
#ifdef INCA_HAS_MPI
    const double t0 = inca_now();
    int nb = 0, rc = as_int(bytes, "MPI_Allgather", &nb);
    if (rc != INCA_OK) return rc;
    int e = MPI_Allgather(send, nb, MPI_BYTE, recv, nb, MPI_BYTE, c->mc);
    if (e != MPI_SUCCESS) return mpi_fail(e, "MPI_Allgather");
    count(c, phase, bytes * (p - 1), t0);
#else
    (void)phase;
#endif
    return INCA_OK;
}

int comm_bcast(comm_t *c, void *buf, int64_t bytes, int root, int phase) {
    const int p = comm_size(c);
    if (p == 1) return INCA_OK;
    if (c->shm) return shm_bcast(c, buf, bytes, root, phase);
#ifdef INCA_HAS_MPI
    const double t0 = inca_now();
    /* in pieces of at most 1 GiB: any size, with int counts */
    for (int64_t off = 0; off < bytes;) {
        const int64_t k = bytes - off < ((int64_t)1 << 30) ? bytes - off : ((int64_t)1 << 30);
        int e = MPI_Bcast((char *)buf + off, (int)k, MPI_BYTE, root, c->mc);
        if (e != MPI_SUCCESS) return mpi_fail(e, "MPI_Bcast");
        off += k;
    }
    count(c, phase, c->rank == root ? bytes * (p - 1) : 0, t0);
#else
    (void)buf;
    (void)bytes;
    (void)root;
    (void)phase;
#endif
    return INCA_OK;
}

static int allreduce_i64(comm_t *c, int64_t *v, int n, int phase, int is_max) {
    if (comm_size(c) == 1 || n <= 0) return INCA_OK;
    if (c->shm) return shm_allreduce_i64(c, v, n, phase, is_max);
#ifdef INCA_HAS_MPI
    const double t0 = inca_now();
    int e = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, is_max ? MPI_MAX : MPI_SUM, c->mc);
    if (e != MPI_SUCCESS) return mpi_fail(e, "MPI_Allreduce");
    count(c, phase, (int64_t)sizeof(int64_t) * n * (c->size - 1), t0);
#else
    (void)v;
    (void)phase;
    (void)is_max;
#endif
    return INCA_OK;
}
int comm_allreduce_max_i64(comm_t *c, int64_t *v, int n, int phase) { return allreduce_i64(c, v, n, phase, 1); }
int comm_allreduce_sum_i64(comm_t *c, int64_t *v, int n, int phase) { return allreduce_i64(c, v, n, phase, 0); }

int comm_alltoall_i64(comm_t *c, const int64_t *send, int64_t *recv, int phase) {
    const int p = comm_size(c);
    if (p == 1) {
        recv[0] = send[0];
        return INCA_OK;
    }
    if (c->shm) return shm_alltoall_i64(c, send, recv, phase);
#ifdef INCA_HAS_MPI
    const double t0 = inca_now();
    int e = MPI_Alltoall(send, 1, MPI_INT64_T, recv, 1, MPI_INT64_T, c->mc);
    if (e != MPI_SUCCESS) return mpi_fail(e, "MPI_Alltoall");
    count(c, phase, (int64_t)sizeof(int64_t) * (p - 1), t0);
#else
    (void)phase;
#endif
    return INCA_OK;
}

int comm_alltoallv_rows(comm_t *c, const void *send, const int64_t *scount, void *recv, const int64_t *rcount,
                        int64_t row_bytes, int phase) {
    const int p = comm_size(c);
    if (p == 1) {
        if (scount[0] != rcount[0]) return inca_fail(INCA_ERR, "alltoallv: one rank sends %lld rows, receives %lld",
                                                     (long long)scount[0], (long long)rcount[0]);
        if (scount[0] > 0 && row_bytes > 0) memmove(recv, send, (size_t)(scount[0] * row_bytes));
        return INCA_OK;
    }
    if (c->shm) return shm_alltoallv_rows(c, send, scount, recv, rcount, row_bytes, phase);
#ifdef INCA_HAS_MPI
    const double t0 = inca_now();
    int rc = INCA_OK;
    int *sc = inca_malloc(sizeof(int) * 4 * (size_t)p);
    if (!sc) return INCA_ENOMEM;
    int *sd = sc + p, *rcn = sc + 2 * p, *rd = sc + 3 * p;
    int64_t so = 0, ro = 0, sent = 0;
    for (int i = 0; i < p && rc == INCA_OK; i++) {
        /* displacements are in rows too: each side's total must fit an int */
        if ((rc = as_int(scount[i], "MPI_Alltoallv", &sc[i])) || (rc = as_int(rcount[i], "MPI_Alltoallv", &rcn[i])) ||
            (rc = as_int(so, "MPI_Alltoallv displacement", &sd[i])) || (rc = as_int(ro, "MPI_Alltoallv displacement", &rd[i])))
            break;
        so += scount[i];
        ro += rcount[i];
        if (i != c->rank) sent += scount[i];
    }
    MPI_Datatype row = MPI_DATATYPE_NULL;
    int rb = 1;
    if (rc == INCA_OK) rc = as_int(row_bytes > 0 ? row_bytes : 1, "MPI row datatype", &rb);
    if (rc == INCA_OK) {
        int e = MPI_Type_contiguous(rb, MPI_BYTE, &row);
        if (e == MPI_SUCCESS) e = MPI_Type_commit(&row);
        if (e == MPI_SUCCESS) e = MPI_Alltoallv(send, sc, sd, row, recv, rcn, rd, row, c->mc);
        if (e != MPI_SUCCESS) rc = mpi_fail(e, "MPI_Alltoallv");
        if (row != MPI_DATATYPE_NULL) MPI_Type_free(&row);
    }
    inca_free(sc);
    if (rc == INCA_OK) count(c, phase, sent * row_bytes, t0);
    return rc;
#else
    (void)phase;
    return inca_fail(INCA_ERR, "alltoallv over %d ranks without MPI", p);
#endif
}

/* floats per pipelined piece of the ordered sum */
#define COMM_CHAIN_CHUNK ((int64_t)1 << 16)

int comm_ordered_sum_f32(comm_t *c, float *buf, int64_t n, const uint8_t *contrib, int phase) {
    const int p = comm_size(c);
    if (p == 1 || n <= 0) return INCA_OK;
    if (c->shm) return shm_ordered_sum_f32(c, buf, n, contrib, phase);
#ifdef INCA_HAS_MPI
    const double t0 = inca_now();
    const int me = c->rank;
    int first = -1, last = -1, prev = -1, next = -1;
    for (int r = 0; r < p; r++)
        if (contrib[r]) {
            if (first < 0) first = r;
            last = r;
            if (r < me) prev = r;
            if (r > me && next < 0) next = r;
        }
    if (first < 0) return INCA_OK;
    const int mine = contrib[me] != 0;
    const int succ = (me + 1) % p, pred = (me + p - 1) % p;   /* the ring back from `last` */
    float *tmp = inca_malloc(sizeof(float) * (size_t)(n < COMM_CHAIN_CHUNK ? n : COMM_CHAIN_CHUNK));
    if (!tmp) return INCA_ENOMEM;
    int64_t sent = 0;
    int e = MPI_SUCCESS;
    for (int64_t o = 0; o < n && e == MPI_SUCCESS; o += COMM_CHAIN_CHUNK) {
        const int k = (int)(n - o < COMM_CHAIN_CHUNK ? n - o : COMM_CHAIN_CHUNK);
        float *b = buf + o;
        if (mine && me != first) {   /* the running sum of the contributors before this rank */
            e = MPI_Recv(tmp, k, MPI_FLOAT, prev, 0, c->mc, MPI_STATUS_IGNORE);
            for (int i = 0; i < k && e == MPI_SUCCESS; i++) b[i] = b[i] + tmp[i];
        }
        if (e == MPI_SUCCESS && mine && me != last) {
            e = MPI_Send(b, k, MPI_FLOAT, next, 0, c->mc);
            sent += k;
        }
        /* the ring from `last`: every other rank receives from its predecessor and forwards */
        if (e == MPI_SUCCESS && me != last) e = MPI_Recv(b, k, MPI_FLOAT, pred, 1, c->mc, MPI_STATUS_IGNORE);
        if (e == MPI_SUCCESS && succ != last) {
            e = MPI_Send(b, k, MPI_FLOAT, succ, 1, c->mc);
            sent += k;
        }
    }
    inca_free(tmp);
    if (e != MPI_SUCCESS) return mpi_fail(e, "ordered sum (MPI_Send/MPI_Recv)");
    count(c, phase, sent * (int64_t)sizeof(float), t0);
    return INCA_OK;
#else
    (void)buf;
    (void)contrib;
    (void)phase;
    return inca_fail(INCA_ERR, "ordered sum over %d ranks without MPI", p);
#endif
}

int comm_barrier(comm_t *c) {
    if (comm_size(c) == 1) return INCA_OK;
    if (c->shm) return shm_wait(c);
#ifdef INCA_HAS_MPI
    int e = MPI_Barrier(c->mc);
    if (e != MPI_SUCCESS) return mpi_fail(e, "MPI_Barrier");
#endif
    return INCA_OK;
}

void comm_abort(comm_t *c, int code) {
    (void)c;
#ifdef INCA_HAS_MPI
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) MPI_Abort(MPI_COMM_WORLD, code);   /* the whole job, whichever comm failed */
#else
    (void)code;
#endif
}

int comm_split(comm_t *c, int size, comm_t **out) {
    *out = NULL;
    const int p = comm_size(c), me = comm_rank(c);
    if (size < 1 || size > p) return inca_fail(INCA_EINVAL, "%d ranks asked of a job of %d", size, p);
    if (c && c->shm) return inca_fail(INCA_EINVAL, "comm_split: not for thread ranks");
    if (me >= size && p > 1) {   /* still a collective: the others' split needs this rank */
#ifdef INCA_HAS_MPI
        MPI_Comm none = MPI_COMM_NULL;
        int e = MPI_Comm_split(c->mc, MPI_UNDEFINED, me, &none);
        if (e != MPI_SUCCESS) return mpi_fail(e, "MPI_Comm_split");
#endif
        return INCA_OK;
    }
    comm_t *s = inca_calloc(1, sizeof *s);
    if (!s) return INCA_ENOMEM;
    s->size = 1;
    s->local_rank = c ? c->local_rank : 0;   /* the node's devices are counted among the job's ranks */
    s->local_size = c ? c->local_size : 1;
#ifdef INCA_HAS_MPI
    if (p > 1) {
        int e = MPI_Comm_split(c->mc, 0, me, &s->mc);
        if (e != MPI_SUCCESS) {
            inca_free(s);
            return mpi_fail(e, "MPI_Comm_split");
        }
        MPI_Comm_set_errhandler(s->mc, MPI_ERRORS_RETURN);
        MPI_Comm_rank(s->mc, &s->rank);
        MPI_Comm_size(s->mc, &s->size);
    } else s->mc = MPI_COMM_SELF;
#endif
    *out = s;
    return INCA_OK;
}

void comm_free(comm_t **pc) {
    if (!pc || !*pc) return;
#ifdef INCA_HAS_MPI
    if ((*pc)->mc != MPI_COMM_WORLD && (*pc)->mc != MPI_COMM_SELF && (*pc)->mc != MPI_COMM_NULL) MPI_Comm_free(&(*pc)->mc);
#endif
    inca_free(*pc);
    *pc = NULL;
}
