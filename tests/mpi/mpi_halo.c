/* Under mpirun (ctest runs it as `mpiexec -n 3`): the collectives of core/comm.h and the halo
 * exchange of memory/halo.h between real processes. Every rank fills its own rows of a table
 * with a value that names the row and the owner, every other row with a sentinel; after the
 * exchange every row a rank asked for holds exactly the owner's row, and no other row changed.
 * The byte counters are checked against what each collective means (comm.h). */
#include "testutil.h"
#include "core/alloc.h"
#include "core/comm.h"
#include "core/status.h"
#include "graph/dist.h"
#include "graph/partition_par.h"
#include "memory/halo.h"
#include "memory/halo_dev.h"
#include "kernels/backend.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static comm_t *C;

START_TEST(collectives_in_rank_order) {
    const int p = comm_size(C), me = comm_rank(C);
    ck_assert_int_ge(p, 2);
    comm_reset_bytes(C);
    int64_t mine[2] = {me, 100 + me}, all[2 * 64];
    ck_assert_int_eq(comm_allgather(C, mine, sizeof mine, all, COMM_GRAD), INCA_OK);
    for (int r = 0; r < p; r++) {
        ck_assert_int_eq(all[2 * r], r);
        ck_assert_int_eq(all[2 * r + 1], 100 + r);
    }
    ck_assert_int_eq(comm_bytes_sent(C, COMM_GRAD), (int64_t)sizeof mine * (p - 1));
    int64_t v = 7 * me, s = me + 1;
    ck_assert_int_eq(comm_allreduce_max_i64(C, &v, 1, COMM_SETUP), INCA_OK);
    ck_assert_int_eq(comm_allreduce_sum_i64(C, &s, 1, COMM_SETUP), INCA_OK);
    ck_assert_int_eq(v, 7 * (p - 1));
    ck_assert_int_eq(s, (int64_t)p * (p + 1) / 2);
    float w[5] = {0};
    if (me == 0) for (int i = 0; i < 5; i++) w[i] = 0.5f * (float)i;
    ck_assert_int_eq(comm_bcast(C, w, sizeof w, 0, COMM_SETUP), INCA_OK);
    for (int i = 0; i < 5; i++) ck_assert(w[i] == 0.5f * (float)i);
}
END_TEST

/* a check that does not end the test, so every rank still makes the same collectives */
#define MC(cond) do { if (!(cond)) { fails++; fprintf(stderr, "rank %d: line %d: %s\n", me, __LINE__, #cond); } } while (0)

/* Counts and values worked out here, on each rank: a broadcast from the last rank reaches every
 * rank and counts 24 (P - 1) bytes on that root alone; an all-reduce of 4 int64 counts 8 x 4 x
 * (P - 1), an all-to-all 8 (P - 1), an all-to-all of rows only the rows to the other ranks; the
 * ordered sum over 70000 floats (two pieces of the chain) gives the bits of a left-to-right loop
 * over the contributors (values whose sum depends on the order), and at 3 ranks the bytes of the
 * chain and the ring by hand; comm_split keeps the first ranks in order and gives the others
 * NULL. Checks are counted, not asserted, until the end: a rank that stopped early would leave
 * the others waiting in a collective. */
START_TEST(collectives_counted_by_hand) {
    const int p = comm_size(C), me = comm_rank(C);
    int fails = 0;
    comm_reset_bytes(C);
    char b[24];
    memset(b, me == p - 1 ? 'r' : 0, sizeof b);
    MC(comm_bcast(C, b, sizeof b, p - 1, COMM_EVAL) == INCA_OK);
    MC(b[0] == 'r' && b[23] == 'r');
    MC(comm_bytes_sent(C, COMM_EVAL) == (me == p - 1 ? 24 * (p - 1) : 0));
    int64_t v[4] = {me, 1, 2, 3}, s[64], r[64];
    MC(comm_allreduce_sum_i64(C, v, 4, COMM_SETUP) == INCA_OK);
    MC(v[3] == 3 * p);
    MC(comm_bytes_sent(C, COMM_SETUP) == 8 * 4 * (p - 1));
    for (int i = 0; i < p; i++) s[i] = 100 * me + i;
    MC(comm_alltoall_i64(C, s, r, COMM_SETUP) == INCA_OK);
    for (int i = 0; i < p; i++) MC(r[i] == 100 * i + me);
    MC(comm_bytes_sent(C, COMM_SETUP) == 8 * 4 * (p - 1) + 8 * (p - 1));
    /* q + 1 rows of two floats to each rank q, this one included: only the others' rows count */
    float *out = malloc(sizeof(float) * (size_t)(p * (p + 1))), *in = malloc(sizeof(float) * 2 * (size_t)(p * (me + 1)));
    int64_t sc[64], rcn[64], o = 0;
    for (int q = 0; q < p; q++) {
        sc[q] = q + 1;
        rcn[q] = me + 1;
        for (int k = 0; k <= q; k++, o++) out[2 * o] = out[2 * o + 1] = (float)(100 * me + 10 * q + k);
    }
    MC(comm_alltoallv_rows(C, out, sc, in, rcn, 2 * sizeof(float), COMM_HALO) == INCA_OK);
    for (int q = 0, i = 0; q < p; q++)
        for (int k = 0; k <= me; k++, i++) MC(in[2 * i] == (float)(100 * q + 10 * me + k) && in[2 * i + 1] == in[2 * i]);
    MC(comm_bytes_sent(C, COMM_HALO) == 8 * ((int64_t)p * (p + 1) / 2 - (me + 1)));
    free(out);
    free(in);
    enum { N = 70000 };
    float *buf = malloc(sizeof(float) * N), g[64];
    for (int q = 0; q < p; q++) g[q] = q == 0 ? 1.0f : q == p - 1 ? -1e8f : 1e8f / (float)q;
    for (int k = 0; k < 2; k++) {
        uint8_t con[64];
        for (int q = 0; q < p; q++) con[q] = k == 0 || q != 1;   /* all; all but rank 1 */
        for (int64_t i = 0; i < N; i++) buf[i] = g[me] * (float)(1 + i % 5);
        comm_reset_bytes(C);
        MC(comm_ordered_sum_f32(C, buf, N, con, COMM_GRAD) == INCA_OK);
        for (int64_t i = 0; i < N; i += 997) {
            float want = 0;
            int first = 1;
            for (int q = 0; q < p; q++)
                if (con[q]) {
                    want = first ? g[q] * (float)(1 + i % 5) : g[q] * (float)(1 + i % 5) + want;
                    first = 0;
                }
            MC(buf[i] == want);
        }
        const int64_t floats[2][3] = {{2 * N, N, N}, {2 * N, 0, N}};   /* [case][rank], 3 ranks */
        if (p == 3) MC(comm_bytes_sent(C, COMM_GRAD) == floats[k][me] * 4);
    }
    free(buf);
    comm_t *sub = NULL;
    MC(comm_split(C, p - 1, &sub) == INCA_OK);
    if (me < p - 1) {
        MC(sub != NULL);
        MC(comm_size(sub) == p - 1 && comm_rank(sub) == me);
        int64_t one = 1;
        MC(comm_allreduce_sum_i64(sub, &one, 1, COMM_SETUP) == INCA_OK);
        MC(one == p - 1);
    } else MC(sub == NULL);
    comm_free(&sub);
    ck_assert_msg(fails == 0, "rank %d: %d checks failed", me, fails);
}
END_TEST

/* the value of row v, column j as its owner writes it */
static float cell(int64_t v, int owner, int64_t j) { return (float)(v * 1000 + j) + 0.25f * (float)owner; }

/* A random graph of n nodes (every rank builds the same) in k equal parts over the job's ranks,
 * and this rank's halo plan (its ids in *ids, *m of them); the byte counters reset before it. */
typedef struct { csr_t a; int64_t *bounds; dist_plan_t plan; int64_t *ids, m; halo_t *h; } plan_case_t;
static void plan_case(int64_t n, int64_t k, uint64_t seed, plan_case_t *t) {
    t->a = tu_csr_random(n, n, seed, 1);
    t->bounds = malloc(sizeof *t->bounds * (size_t)(k + 1));
    for (int64_t i = 0; i <= k; i++) t->bounds[i] = n * i / k;
    ck_assert_int_eq(dist_plan_make(&t->a, t->bounds, k, comm_size(C), &t->plan), INCA_OK);
    t->ids = NULL;
    t->m = 0;
    ck_assert_int_eq(dist_halo(&t->a, &t->plan, comm_rank(C), &t->ids, &t->m), INCA_OK);
    t->h = NULL;
    comm_reset_bytes(C);
    ck_assert_int_eq(halo_plan(C, &t->plan, t->ids, t->m, COMM_SETUP, &t->h), INCA_OK);
}
static void plan_case_free(plan_case_t *t) {
    halo_free(&t->h);
    inca_free(t->ids);
    dist_plan_free(&t->plan);
    free(t->bounds);
    csr_free(&t->a);
}

static void exchange_case(int64_t n, int64_t k, int64_t f, uint64_t seed, int64_t stage) {
    const int me = comm_rank(C);
    plan_case_t pc;
    plan_case(n, k, seed, &pc);
    halo_t *h = pc.h;
    const dist_plan_t plan = pc.plan;
    const int64_t *ids = pc.ids, m = pc.m;
    ck_assert_int_eq(halo_recv_rows(h), m);
    halo_set_stage_bytes(h, stage);
    const float sentinel = -1.f;
    float *t = malloc(sizeof *t * (size_t)(n * f));
    const int64_t lo = plan.node_lo[me], hi = plan.node_lo[me + 1];
    for (int64_t v = 0; v < n; v++)
        for (int64_t j = 0; j < f; j++) t[v * f + j] = v >= lo && v < hi ? cell(v, me, j) : sentinel;
    ck_assert_int_eq(halo_exchange(h, C, t, (int64_t)sizeof(float) * f, COMM_REFRESH), INCA_OK);
    /* the rows sent: what the others asked of this rank, counted once per row */
    ck_assert_int_eq(comm_bytes_sent(C, COMM_REFRESH), halo_send_rows(h) * (int64_t)sizeof(float) * f);
    uint8_t *asked = calloc((size_t)n, 1);
    for (int64_t i = 0; i < m; i++) asked[ids[i]] = 1;
    int64_t received = 0;
    for (int64_t v = 0; v < n; v++) {
        const int owner = dist_owner(&plan, v);
        for (int64_t j = 0; j < f; j++) {
            const float want = owner == me || asked[v] ? cell(v, owner, j) : sentinel;
            ck_assert_msg(t[v * f + j] == want, "rank %d: row %lld col %lld holds %g, expected %g (owner %d)", me,
                          (long long)v, (long long)j, t[v * f + j], want, owner);
        }
        received += asked[v];
    }
    ck_assert_int_eq(received, m);
    /* every rank's sends add up to every rank's receives */
    int64_t tot[2] = {halo_send_rows(h), halo_recv_rows(h)};
    ck_assert_int_eq(comm_allreduce_sum_i64(C, tot, 2, COMM_SETUP), INCA_OK);
    ck_assert_int_eq(tot[0], tot[1]);
    free(asked);
    free(t);
    plan_case_free(&pc);
}

START_TEST(halo_rows_equal_the_owners) {
    exchange_case(300, 12, 7, 11, 0);   /* odd width */
    exchange_case(64, 6, 1, 5, 0);
    exchange_case(1000, 40, 16, 3, 0);
    exchange_case(1000, 40, 16, 3, 500);   /* rounds of a few rows each */
    exchange_case(300, 12, 7, 11, 1);      /* one row per pair per round */
}
END_TEST

/* A table on the emulated device (whose memory a host access faults on) exchanged through
 * halo_dev: the same bytes and the same byte count as the host exchange of the same table. Row
 * bits are arbitrary (bf16: any finite, normal pattern), the owner's rows differ per rank. */
static void exchange_dev_case(int64_t n, int64_t k, int64_t f, uint64_t seed, int64_t stage, kern_dtype_t dt) {
    const int me = comm_rank(C);
    const int64_t es = dt == KERN_BF16 ? 2 : 4, rb = es * f;
    plan_case_t pc;
    plan_case(n, k, seed, &pc);
    halo_t *h = pc.h;
    if (stage) halo_set_stage_bytes(h, stage);
    unsigned char *host = malloc((size_t)(n * rb)), *back = malloc((size_t)(n * rb));
    for (int64_t i = 0; i < n * rb / es; i++) {
        uint32_t x = (uint32_t)(i * 2654435761u) ^ (uint32_t)(me * 40503u) ^ (uint32_t)seed;
        if (dt == KERN_BF16) {
            const uint16_t b = (uint16_t)(((x >> 7) & 0x7F7Fu) | 0x0800u);   /* finite, normal */
            memcpy(host + 2 * i, &b, 2);
        } else {
            const float v = (float)(x % 100000u) * 0.125f - 777.f;
            memcpy(host + 4 * i, &v, 4);
        }
    }
    kern_ctx_opts_t ko = {.device = "emu"};
    kern_ctx_t *kc = NULL;
    ck_assert_int_eq(kc_create(&ko, &kc), INCA_OK);
    void *t_d = NULL;
    ck_assert_int_eq(kc_alloc(kc, KERN_MEM_DEVICE, (size_t)(n * rb), &t_d), INCA_OK);
    ck_assert_int_eq(kc_copy(kc, t_d, host, (size_t)(n * rb), KERN_H2D, KERN_STREAM_COMPUTE), INCA_OK);
    halo_dev_t *x = NULL;
    const int64_t rows = halo_round_rows(h, rb);
    ck_assert_int_eq(halo_dev_create(kc, rows, rows * f, rows * rb, dt == KERN_BF16, &x), INCA_OK);   /* exactly a round */
    comm_reset_bytes(C);
    ck_assert_int_eq(halo_dev_exchange(x, h, C, dt, t_d, f, COMM_REFRESH), INCA_OK);
    const int64_t dev_bytes = comm_bytes_sent(C, COMM_REFRESH);
    ck_assert_int_eq(kc_copy(kc, back, t_d, (size_t)(n * rb), KERN_D2H, KERN_STREAM_COMPUTE), INCA_OK);
    ck_assert_int_eq(kc_sync(kc), INCA_OK);
    comm_reset_bytes(C);
    ck_assert_int_eq(halo_exchange(h, C, host, rb, COMM_REFRESH), INCA_OK);
    ck_assert_int_eq(dev_bytes, comm_bytes_sent(C, COMM_REFRESH));
    ck_assert_int_eq(dev_bytes, halo_send_rows(h) * rb);
    for (int64_t v = 0; v < n; v++)
        ck_assert_msg(memcmp(host + v * rb, back + v * rb, (size_t)rb) == 0, "rank %d, %s row %lld differs", me,
                      dt == KERN_BF16 ? "bf16" : "fp32", (long long)v);
    /* a staging too small is refused, naming both sizes */
    halo_dev_t *small = NULL;
    if (rows > 1) {
        ck_assert_int_eq(halo_dev_create(kc, rows - 1, rows * f, rows * rb, dt == KERN_BF16, &small), INCA_OK);
        ck_assert_int_eq(halo_dev_exchange(small, h, C, dt, t_d, f, COMM_REFRESH), INCA_EINVAL);
        ck_assert_ptr_nonnull(strstr(inca_errmsg(), "staging made for"));
        inca_err_clear();
    }
    halo_dev_free(&small);
    /* so is staging a byte short of a round's rows, and fp32-only staging asked for bf16 rows
     * (each rank refuses alone, before any collective) */
    ck_assert_int_eq(halo_dev_create(kc, rows, rows * f, rows * rb - 1, dt == KERN_BF16, &small), INCA_OK);
    ck_assert_int_eq(halo_dev_exchange(small, h, C, dt, t_d, f, COMM_REFRESH), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "staging made for"));
    inca_err_clear();
    halo_dev_free(&small);
    if (dt == KERN_BF16) {
        ck_assert_int_eq(halo_dev_create(kc, rows, rows * f, rows * rb, 0, &small), INCA_OK);
        ck_assert_int_eq(halo_dev_exchange(small, h, C, dt, t_d, f, COMM_REFRESH), INCA_EINVAL);
        ck_assert_ptr_nonnull(strstr(inca_errmsg(), "fp32 only"));
        inca_err_clear();
        halo_dev_free(&small);
    }
    halo_dev_free(&x);
    kc_release(kc, KERN_MEM_DEVICE, t_d);
    ck_assert_int_eq(kern_emu_live_blocks(kc), 0);
    kc_free(&kc);
    free(host);
    free(back);
    plan_case_free(&pc);
}

START_TEST(device_halo_equals_host) {
    exchange_dev_case(300, 12, 7, 11, 0, KERN_F32);
    exchange_dev_case(300, 12, 7, 11, 0, KERN_BF16);
    exchange_dev_case(1000, 40, 16, 3, 500, KERN_F32);    /* many rounds */
    exchange_dev_case(1000, 40, 16, 3, 500, KERN_BF16);
    exchange_dev_case(64, 6, 1, 5, 1, KERN_BF16);         /* one row per pair per round */
}
END_TEST

START_TEST(plan_refuses_own_or_unsorted_ids) {
    const int p = comm_size(C), me = comm_rank(C);
    csr_t a = tu_csr_random(50, 50, 2, 1);
    int64_t bounds[6] = {0, 10, 20, 30, 40, 50};
    dist_plan_t plan;
    ck_assert_int_eq(dist_plan_make(&a, bounds, 5, p, &plan), INCA_OK);
    halo_t *h = NULL;
    int64_t own = plan.node_lo[me];   /* local checks: no collective is entered */
    ck_assert_int_eq(halo_plan(C, &plan, &own, 1, COMM_SETUP, &h), INCA_EINVAL);
    inca_err_clear();
    int64_t bad[2] = {me == 0 ? 49 : 0, me == 0 ? 48 : 0};
    ck_assert_int_eq(halo_plan(C, &plan, bad, 2, COMM_SETUP, &h), INCA_EINVAL);
    inca_err_clear();
    ck_assert_ptr_null(h);
    dist_plan_free(&plan);
    csr_free(&a);
}
END_TEST

/* rows [r0, r1) of g as a rank's slice (global columns), owned */
static csr_t slice_of(const csr_t *g, int64_t r0, int64_t r1) {
    csr_t s = {0};
    ck_assert_int_eq(csr_alloc(&s, r1 - r0, g->n_cols, g->rowptr[r1] - g->rowptr[r0], 0), INCA_OK);
    for (int64_t i = 0; i <= r1 - r0; i++) s.rowptr[i] = g->rowptr[r0 + i] - g->rowptr[r0];
    if (s.nnz) memcpy(s.col, g->col + g->rowptr[r0], sizeof *s.col * (size_t)s.nnz);
    return s;
}

/* the part of node v in a partitioning: the j with bounds[j] <= perm[v] < bounds[j + 1] */
static int64_t part_of(const partition_t *pt, int64_t v) {
    int64_t j = 0;
    while (pt->bounds[j + 1] <= pt->perm[v]) j++;
    return j;
}

/* ParMETIS (PT-Scotch) over the job's ranks holding slices of unequal sizes (17, 20, 23 rows of
 * 60 at 3 ranks) that cut through k = 3 cliques of 20 nodes with no edge between them: in 3
 * parts the cliques are the parts, cut 0, on every rank. The part vector is gathered from
 * slices padded to the largest; a rank's rows read at another offset split a clique. */
START_TEST(parmetis_unequal_slices) {
    const int p = comm_size(C), me = comm_rank(C);
    const int64_t k = 3, s = 20, n = k * s;
    int64_t src[3 * 20 * 19 / 2], dst[3 * 20 * 19 / 2], m = 0;
    for (int64_t q = 0; q < k; q++)
        for (int64_t u = q * s; u < (q + 1) * s; u++)
            for (int64_t v = u + 1; v < (q + 1) * s; v++) src[m] = u, dst[m++] = v;
    csr_t g;
    ck_assert_int_eq(csr_from_edges(&g, n, src, dst, m, CSR_SYMMETRIZE), INCA_OK);
    int64_t lo[65];
    for (int r = 0; r <= p; r++) lo[r] = n * r / p - (r > 0 && r < p ? 3 : 0);
    ck_assert_int_ne(lo[1] - lo[0], lo[2] - lo[1]);
    csr_t sl = slice_of(&g, lo[me], lo[me + 1]);
    partition_t pt;
    ck_assert_msg(partition_par_compute(C, &sl, lo[me], n, k, 1, &pt) == INCA_OK, "%s", inca_errmsg());
    ck_assert_int_eq(pt.n, n);
    ck_assert_int_eq(pt.k, k);
    ck_assert_int_eq(pt.man.edge_cut, 0);
    for (int64_t q = 0; q < k; q++) {
        const int64_t j = part_of(&pt, q * s);
        for (int64_t u = q * s; u < (q + 1) * s; u++)
            ck_assert_msg(part_of(&pt, u) == j, "rank %d: node %lld in part %lld, its clique's first node in %lld", me,
                          (long long)u, (long long)part_of(&pt, u), (long long)j);
        for (int64_t o = 0; o < q; o++) ck_assert_int_ne(part_of(&pt, o * s), j);
    }
    partition_free(&pt);
    csr_free(&sl);
    csr_free(&g);
}
END_TEST

/* The seed reaches PT-Scotch whole: Scotch's own seeding saw some bits only (seeds 0 and 1, and
 * 2 and 3, gave one partitioning), so consecutive seeds must give different partitionings of
 * a graph with many cuts of about the same size (a ring of 600 nodes with a chord from each
 * node, in 4 parts), and one seed the same twice */
START_TEST(parmetis_consecutive_seeds_differ) {
    const int p = comm_size(C), me = comm_rank(C);
    enum { RING = 600 };
    int64_t src[2 * RING], dst[2 * RING];
    for (int64_t i = 0; i < RING; i++) {
        src[2 * i] = i, dst[2 * i] = (i + 1) % RING;
        src[2 * i + 1] = i, dst[2 * i + 1] = (i * 193 + 71) % RING;
    }
    csr_t g;
    ck_assert_int_eq(csr_from_edges(&g, RING, src, dst, 2 * RING, CSR_SYMMETRIZE | CSR_DROP_SELF_LOOPS), INCA_OK);
    const int64_t n = g.n_rows, lo = n * me / p, hi = n * (me + 1) / p;
    int64_t *perm[5];
    for (int sd = 0; sd < 5; sd++) {   /* seeds 0, 1, 2, 3 and 0 again */
        csr_t sl = slice_of(&g, lo, hi);
        partition_t pt;
        ck_assert_msg(partition_par_compute(C, &sl, lo, n, 4, (uint64_t)(sd % 4), &pt) == INCA_OK, "%s", inca_errmsg());
        perm[sd] = malloc(sizeof *perm[sd] * (size_t)n);
        memcpy(perm[sd], pt.perm, sizeof *perm[sd] * (size_t)n);
        partition_free(&pt);
        csr_free(&sl);
    }
    ck_assert_msg(memcmp(perm[0], perm[1], sizeof *perm[0] * (size_t)n) != 0, "seeds 0 and 1 gave the same partitioning");
    ck_assert_msg(memcmp(perm[2], perm[3], sizeof *perm[0] * (size_t)n) != 0, "seeds 2 and 3 gave the same partitioning");
    ck_assert_mem_eq(perm[0], perm[4], sizeof *perm[0] * (size_t)n);
    for (int sd = 0; sd < 5; sd++) free(perm[sd]);
    csr_free(&g);
}
END_TEST

/* The number of ranks the launcher says it started (Open MPI, or a PMI launcher such as
 * MPICH's Hydra); 0 when no launcher says. */
static long launcher_size(void) {
    const char *v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v || !*v) v = getenv("PMI_SIZE");
    return v && *v ? strtol(v, NULL, 10) : 0;
}

int main(int argc, char **argv) {
    /* skipped (77) only when not started with several ranks; an MPI that does not start, or a
     * launcher of several ranks whose processes each see a world of one (a build without MPI,
     * another MPI's mpiexec), fails instead of skipping */
    if (comm_init(&argc, &argv, &C) != INCA_OK) {
        fprintf(stderr, "mpi_halo: %s\n", inca_errmsg());
        return 1;
    }
    if (comm_size(C) < 2) {
        const long launched = launcher_size();
        comm_finalize(&C);
        if (launched > 1) {
            fprintf(stderr, "mpi_halo: started as one of %ld ranks, but the communicator has 1\n", launched);
            return 1;
        }
        fprintf(stderr, "mpi_halo: run it under mpirun with at least 2 ranks\n");
        return 77;
    }
    Suite *s = suite_create("mpi_halo");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, collectives_in_rank_order);
    tcase_add_test(tc, collectives_counted_by_hand);
    tcase_add_test(tc, halo_rows_equal_the_owners);
    tcase_add_test(tc, plan_refuses_own_or_unsorted_ids);
    tcase_add_test(tc, device_halo_equals_host);
    if (partition_par_available()) {
        tcase_add_test(tc, parmetis_unequal_slices);
        tcase_add_test(tc, parmetis_consecutive_seeds_differ);
    } else if (comm_rank(C) == 0) {   /* not run, and said so (they would pass on nothing) */
        fprintf(stderr, "mpi_halo: built without PT-Scotch: its 2 tests (parmetis_*) skipped\n");
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);   /* MPI does not survive fork */
    srunner_run_all(sr, comm_rank(C) == 0 ? CK_NORMAL : CK_SILENT);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    int64_t f = failed;
    comm_allreduce_sum_i64(C, &f, 1, COMM_SETUP);   /* one rank's failure fails the test */
    comm_finalize(&C);
    return f == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
