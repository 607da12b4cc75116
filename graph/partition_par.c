/* Distributed k-way partitioning on PT-Scotch (see partition_par.h). The library's sharp edges
 * stay here: SCOTCH_Num ids, 0 for success, and repeatability. PT-Scotch's ParMETIS v3
 * interface (SCOTCH_ParMETIS_V3_PartKway) was the first choice, but it runs in the default
 * context, which races threads and seeds by the clock: the same seed gave a different cut each
 * run (157780, 157375, 156567, 157169 on one 20k graph). Its own dgraph interface takes a
 * context that is deterministic with a fixed seed; it is what the v3 interface calls inside. */
#include "graph/partition_par.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include <stdio.h>
#include <string.h>
#ifdef INCA_HAS_PTSCOTCH
#include <ptscotch.h>
#endif

int partition_par_available(void) {
#ifdef INCA_HAS_PTSCOTCH
    return 1;
#else
    return 0;
#endif
}

/* Every rank's [row0, row0 + rows) must tile [0, n) in rank order; vtxdist (P + 1) gets the
 * starts and n. */
static int slices_tile(comm_t *c, int64_t row0, int64_t rows, int64_t n, int64_t *vtxdist) {
    const int P = comm_size(c);
    int64_t mine[2] = {row0, rows}, *all = inca_malloc(sizeof *all * 2 * (size_t)P);
    if (!all) return INCA_ENOMEM;
    int rc = comm_allgather(c, mine, sizeof mine, all, COMM_SETUP);
    for (int r = 0; rc == INCA_OK && r < P; r++) {
        const int64_t want = r == 0 ? 0 : all[2 * (r - 1)] + all[2 * (r - 1) + 1];
        if (all[2 * r] != want || all[2 * r + 1] < 0)
            rc = inca_fail(INCA_EINVAL, "ParMETIS: rank %d holds rows from %lld (%lld rows), expected from %lld", r,
                           (long long)all[2 * r], (long long)all[2 * r + 1], (long long)want);
        vtxdist[r] = all[2 * r];
    }
    if (rc == INCA_OK && all[2 * (P - 1)] + all[2 * (P - 1) + 1] != n)
        rc = inca_fail(INCA_EINVAL, "ParMETIS: the ranks' rows end at %lld, the graph has %lld nodes",
                       (long long)(all[2 * (P - 1)] + all[2 * (P - 1) + 1]), (long long)n);
    vtxdist[P] = n;
    inca_free(all);
    return rc;
}

/* The whole part vector on every rank from each rank's slice (padded to the largest slice so
 * that one allgather moves it) */
static int gather_parts(comm_t *c, const int64_t *vtxdist, const int32_t *mine, int32_t *part) {
    const int P = comm_size(c);
    int64_t maxr = 0;
    for (int r = 0; r < P; r++) maxr = vtxdist[r + 1] - vtxdist[r] > maxr ? vtxdist[r + 1] - vtxdist[r] : maxr;
    const int me = comm_rank(c);
    int32_t *send = inca_calloc((size_t)(maxr ? maxr : 1), sizeof *send);
    int32_t *all = inca_malloc(sizeof *all * (size_t)(maxr ? maxr : 1) * (size_t)P);
    int rc = send && all ? INCA_OK : INCA_ENOMEM;
    if (rc == INCA_OK) {
        memcpy(send, mine, sizeof *send * (size_t)(vtxdist[me + 1] - vtxdist[me]));
        rc = comm_allgather(c, send, (int64_t)sizeof *send * maxr, all, COMM_SETUP);
    }
    for (int r = 0; rc == INCA_OK && r < P; r++)
        memcpy(part + vtxdist[r], all + (int64_t)r * maxr, sizeof *part * (size_t)(vtxdist[r + 1] - vtxdist[r]));
    inca_free(send);
    inca_free(all);
    return rc;
}

/* Undirected cut edges over every rank's rows (each rank counts its own rows' cross entries) */
static int cut_edges(comm_t *c, const csr_t *slice, int64_t row0, const int32_t *part, int64_t *cut) {
    int64_t cross = 0;
    for (int64_t i = 0; i < slice->n_rows; i++)
        for (int64_t e = slice->rowptr[i]; e < slice->rowptr[i + 1]; e++)
            if (slice->col[e] != row0 + i && part[row0 + i] != part[slice->col[e]]) cross++;
    int rc = comm_allreduce_sum_i64(c, &cross, 1, COMM_SETUP);
    *cut = cross / 2;
    return rc;
}

#ifdef INCA_HAS_PTSCOTCH
#define PARPART_BALANCE 0.03
/* The scheme of the call, on every rank: a distributed graph of this rank's rows (global
 * column ids), bound to a context that makes PT-Scotch deterministic with the seed, then
 * k-way partitioned with the default mapping strategy at PARPART_BALANCE imbalance. */
static int call_ptscotch(MPI_Comm mc, const SCOTCH_Num *xadj, SCOTCH_Num rows, SCOTCH_Num *adj, SCOTCH_Num m, int P,
                         int64_t k, uint64_t seed, SCOTCH_Num *pv, const char **what) {
    SCOTCH_Dgraph g, gc;
    SCOTCH_Context ctx;
    SCOTCH_Strat st;
    int e, have_g = 0, have_gc = 0, have_ctx = 0, have_st = 0;
    if ((e = SCOTCH_dgraphInit(&g, mc)) != 0) { *what = "SCOTCH_dgraphInit"; goto done; }
    have_g = 1;
    if ((e = SCOTCH_dgraphBuild(&g, 0, rows, rows, (SCOTCH_Num *)xadj, NULL, NULL, NULL, m, m, adj, NULL, NULL)) != 0) {
        *what = "SCOTCH_dgraphBuild";
        goto done;
    }
    if ((e = SCOTCH_contextInit(&ctx)) != 0) { *what = "SCOTCH_contextInit"; goto done; }
    have_ctx = 1;
    /* PT-Scotch is free to race its threads and to seed by the clock; neither here */
    if ((e = SCOTCH_contextOptionSetNum(&ctx, SCOTCH_OPTIONNUMDETERMINISTIC, 1)) != 0 ||
        (e = SCOTCH_contextRandomClone(&ctx)) != 0) {
        *what = "SCOTCH_contextOptionSetNum";
        goto done;
    }
    /* one thread, the caller: PT-Scotch's own threads call MPI (its halo exchanges in the
     * recursive bipartitioning), which MPI_THREAD_FUNNELED (core/comm.c) does not allow; they
     * crashed one run in 10-30 (segfaults and bad frees in MPI_Alltoallv under dgraphHaloSync).
     * The ranks are the parallelism here. */
    if ((e = SCOTCH_contextThreadSpawn(&ctx, 1, NULL)) != 0) {
        *what = "SCOTCH_contextThreadSpawn";
        goto done;
    }
    /* Scotch gave seeds 0 and 1 (and 2 and 3) the same partition: it sees some bits only; a
     * hash of the seed differs from the next one's in about half of every bit range */
    SCOTCH_contextRandomSeed(&ctx, (SCOTCH_Num)(rng_splitmix64(seed) & 0x7fffffff));
    if ((e = SCOTCH_dgraphInit(&gc, mc)) != 0) { *what = "SCOTCH_dgraphInit"; goto done; }
    have_gc = 1;
    if ((e = SCOTCH_contextBindDgraph(&ctx, &g, &gc)) != 0) { *what = "SCOTCH_contextBindDgraph"; goto done; }
    if ((e = SCOTCH_stratInit(&st)) != 0) { *what = "SCOTCH_stratInit"; goto done; }
    have_st = 1;
    /* 3% asked: PT-Scotch's parts came out up to 4.97% over n / k with 5% asked (1M nodes) */
    if ((e = SCOTCH_stratDgraphMapBuild(&st, SCOTCH_STRATDEFAULT, (SCOTCH_Num)P, (SCOTCH_Num)k, PARPART_BALANCE)) != 0) {
        *what = "SCOTCH_stratDgraphMapBuild";
        goto done;
    }
    if ((e = SCOTCH_dgraphPart(&gc, (SCOTCH_Num)k, &st, pv)) != 0) *what = "SCOTCH_dgraphPart";
done:
    if (have_st) SCOTCH_stratExit(&st);
    if (have_gc) SCOTCH_dgraphExit(&gc);
    if (have_ctx) SCOTCH_contextExit(&ctx);
    if (have_g) SCOTCH_dgraphExit(&g);
    return e;
}

_Static_assert(sizeof(SCOTCH_Num) == sizeof(int32_t), "PT-Scotch's ids are the CSR's int32 columns, used in place");

/* This rank's slice as PT-Scotch's graph, the call, local part ids into mine. The slice's
 * columns are PT-Scotch's adjacency in place (self-loops removed by then): one copy of the
 * edges, not two. */
static int call_parmetis(comm_t *c, const csr_t *slice, int64_t row0, int64_t k, uint64_t seed, int32_t *mine) {
    MPI_Comm mc;
    int rc = comm_mpi(c, &mc);
    if (rc != INCA_OK) return rc;
    const int64_t rows = slice->n_rows;
    SCOTCH_Num *xadj = inca_malloc(sizeof *xadj * (size_t)(rows + 1));
    SCOTCH_Num *pv = inca_malloc(sizeof *pv * (size_t)(rows ? rows : 1));
    if (!xadj || !pv) { rc = INCA_ENOMEM; goto done; }
    for (int64_t i = 0; i <= rows; i++) xadj[i] = (SCOTCH_Num)slice->rowptr[i];
    const char *what = "";
    const int e = call_ptscotch(mc, xadj, (SCOTCH_Num)rows, (SCOTCH_Num *)slice->col, (SCOTCH_Num)slice->nnz, comm_size(c), k,
                                seed, pv, &what);
    if (e != 0) {
        rc = inca_fail(INCA_ERR, "PT-Scotch: %s failed (code %d) on rank %d", what, e, comm_rank(c));
        goto done;
    }
    for (int64_t i = 0; i < rows; i++) {
        if (pv[i] < 0 || pv[i] >= k) {
            rc = inca_fail(INCA_ERR, "PT-Scotch returned part %d for node %lld", (int)pv[i], (long long)(row0 + i));
            goto done;
        }
        mine[i] = (int32_t)pv[i];
    }
done:
    inca_free(xadj);
    inca_free(pv);
    return rc;
}
#endif

/* Self-loops out of the slice, in place (PT-Scotch, as METIS, takes none; a cut never counts
 * them) */
static void drop_self_loops(csr_t *slice, int64_t row0) {
    int64_t m = 0, start = 0;
    for (int64_t i = 0; i < slice->n_rows; i++) {
        const int64_t end = slice->rowptr[i + 1];
        for (int64_t e = start; e < end; e++)
            if (slice->col[e] != row0 + i) slice->col[m++] = slice->col[e];
        start = end;
        slice->rowptr[i + 1] = m;
    }
    slice->nnz = m;
}

/* Whether the distributed graph is symmetric, with no second copy of the edges: the sums over
 * every rank's entries of h(u, v) and of h(v, u) agree exactly for a symmetric pattern (the same
 * multiset of pairs), and differ for any other but with probability about 2^-64 (h: splitmix64 of
 * the pair). PT-Scotch loops forever on a directed graph (METIS and lp refuse one). The 64-bit
 * sums go through the allreduce as 32-bit halves, which cannot overflow it. */
static int slices_symmetric(comm_t *c, const csr_t *slice, int64_t row0, int *sym) {
    uint64_t fw = 0, bw = 0;
    for (int64_t i = 0; i < slice->n_rows; i++)
        for (int64_t e = slice->rowptr[i]; e < slice->rowptr[i + 1]; e++) {
            const uint64_t u = (uint64_t)(row0 + i), v = (uint64_t)slice->col[e];
            fw += rng_splitmix64(u << 32 | v);
            bw += rng_splitmix64(v << 32 | u);
        }
    int64_t h[4] = {(int64_t)(fw >> 32), (int64_t)(fw & 0xffffffffu), (int64_t)(bw >> 32), (int64_t)(bw & 0xffffffffu)};
    const int rc = comm_allreduce_sum_i64(c, h, 4, COMM_SETUP);
    const uint64_t f = ((uint64_t)h[0] << 32) + (uint64_t)h[1], b = ((uint64_t)h[2] << 32) + (uint64_t)h[3];
    *sym = f == b;
    return rc;
}

static int check_sizes(comm_t *c, const csr_t *slice, int64_t n, int64_t k) {
    if (!partition_par_available())
        return inca_fail(INCA_EINVAL, "--method parmetis: this inca was built without PT-Scotch (install libptscotch-dev "
                         "and libopenmpi-dev, then rebuild)");
    if (!slice || (slice->n_rows > 0 && !slice->rowptr)) return inca_fail(INCA_EINVAL, "ParMETIS: no graph rows given");
    if (k < 1 || k > n) return inca_fail(INCA_EINVAL, "--parts: %lld parts for %lld nodes (expected 1 to n)", (long long)k, (long long)n);
    if (n >= INT32_MAX || slice->nnz >= INT32_MAX || k > INT32_MAX)
        return inca_fail(INCA_EINVAL, "graph too large for PT-Scotch's 32-bit SCOTCH_Num (%lld nodes, %lld entries on rank %d)",
                         (long long)n, (long long)slice->nnz, comm_rank(c));
    return INCA_OK;
}

int partition_par_compute(comm_t *c, csr_t *slice, int64_t row0, int64_t n, int64_t k, uint64_t seed,
                          partition_t *out) {
    memset(out, 0, sizeof *out);
    const int P = comm_size(c);
    int rc = check_sizes(c, slice, n, k);
    int64_t *vtxdist = inca_malloc(sizeof *vtxdist * (size_t)(P + 1));
    int32_t *mine = inca_calloc((size_t)(slice && slice->n_rows ? slice->n_rows : 1), sizeof *mine);
    int32_t *part = inca_malloc(sizeof *part * (size_t)(n > 0 ? n : 1));
    if (rc == INCA_OK && (!vtxdist || !mine || !part)) rc = INCA_ENOMEM;
    /* a refusal on one rank must not leave the others in a collective: agree first */
    int64_t bad = rc != INCA_OK;
    if (comm_allreduce_max_i64(c, &bad, 1, COMM_SETUP) != INCA_OK && rc == INCA_OK) rc = INCA_ERR;
    if (rc == INCA_OK && bad) rc = inca_fail(INCA_ERR, "ParMETIS: another rank refused its slice");
    if (rc == INCA_OK) rc = slices_tile(c, row0, slice->n_rows, n, vtxdist);
    if (rc == INCA_OK) drop_self_loops(slice, row0);
    int sym = 1;   /* every rank gets the same verdict */
    if (rc == INCA_OK && (rc = slices_symmetric(c, slice, row0, &sym)) == INCA_OK && !sym) {
        rc = inca_fail(INCA_EINVAL, "ParMETIS (PT-Scotch) needs a symmetric graph; this adjacency is not symmetric "
                       "(re-ingest with --symmetrize)");
        inca_err_mark_collective();   /* every rank's verdict (slices_symmetric agrees): said once */
    }
    double t0 = inca_now();
#ifdef INCA_HAS_PTSCOTCH
    if (rc == INCA_OK && k > 1) rc = call_parmetis(c, slice, row0, k, seed, mine);
#endif
    int64_t ns = (int64_t)((inca_now() - t0) * 1e9);
    if (rc == INCA_OK) rc = comm_allreduce_max_i64(c, &ns, 1, COMM_SETUP);
    if (rc == INCA_OK) rc = gather_parts(c, vtxdist, mine, part);
    if (rc == INCA_OK) rc = partition_from_parts(n, k, part, out);
    if (rc == INCA_OK) rc = cut_edges(c, slice, row0, part, &out->man.edge_cut);
    if (rc == INCA_OK) {
        out->man.seconds = (double)ns * 1e-9;
        out->man.seed = seed;
        snprintf(out->man.method, sizeof out->man.method, "%s", partition_method_name(PART_PARMETIS));
        partition_name(out->man.name, sizeof out->man.name, PART_PARMETIS, k, seed, comm_size(c));
    } else partition_free(out);
    inca_free(vtxdist);
    inca_free(mine);
    inca_free(part);
    return rc;
}
