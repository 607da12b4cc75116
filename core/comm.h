/* Ranks of a data-parallel job (issue 13): a thin layer over MPI (Open MPI, found by CMake's
 * FindMPI; built when found) with a byte counter per phase, so the trainer's figures can say
 * what crossed the network and when. Without MPI (or outside mpirun) there is one rank and
 * every collective is a local copy.
 *
 * Counting: the payload a rank hands to MPI for other ranks, by what the collective means, not
 * by the algorithm MPI picks: an allgather of b bytes counts b x (P - 1) on every rank, a
 * broadcast b x (P - 1) on the root, an all-to-all the rows sent to other ranks. So a figure
 * says what the method needs, the same on every MPI build.
 *
 * CAVEATS FIRST
 * - One comm per process (MPI_COMM_WORLD), made by the CLI before the command runs
 *   (comm_init) and ended after it (comm_finalize). MPI is initialised with
 *   MPI_THREAD_FUNNELED: only the thread that called comm_init may call these functions (the
 *   loader threads never do).
 * - Collectives must be called by every rank in the same order; a rank that fails between two
 *   of them must end the job (comm_abort), or the others wait forever.
 * - comm_abort ends the job under MPI (MPI_Abort does not return); the caller then returns its
 *   error as with one rank. It is for the CLI's error path only.
 * Tested in test_mpi.c (under mpirun: collectives, counters) and test_core.c (one rank). */
#ifndef INCA_CORE_COMM_H
#define INCA_CORE_COMM_H
#include <stdint.h>

/* Phases the bytes are counted under. */
/* setup: parameters, plans, figures, IncAgg's initial snapshot pass; grad: the per-step gradient records; refresh: IncAgg's
 * snapshot halos (and the refresh passes' layer halos); halo: GAS's per-step pulls and full-batch
 * training's layer halos (forward and backward); eval: the
 * evaluation passes' layer halos. */
enum { COMM_SETUP = 0, COMM_GRAD = 1, COMM_REFRESH = 2, COMM_HALO = 3, COMM_EVAL = 4, COMM_NPHASES = 5 };

typedef struct comm comm_t;

/* 1 when this process was started by an MPI launcher (mpirun / mpiexec: Open MPI's
 * OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK or PMI's PMI_SIZE in the environment). */
int comm_launched(void);
/* 1 when this build has MPI. */
int comm_has_mpi(void);
/* The job's ranks: MPI_COMM_WORLD when this build has MPI and comm_launched(), else one rank.
 * INCA_ERR when MPI fails to start. */
int comm_init(int *argc, char ***argv, comm_t **out);
void comm_finalize(comm_t **c);   /* NULL-safe; MPI_Finalize when comm_init started MPI */
/* Collective over c: ranks [0, size) get *out, a comm of their own (ranks in the same order);
 * the others get NULL. Free it with comm_free. INCA_EINVAL when size is not in [1, comm_size]. */
int comm_split(comm_t *c, int size, comm_t **out);
void comm_free(comm_t **c);   /* a comm_split's; NULL-safe */
/* `size` ranks inside one process, one per thread (the --workers simulation of data-parallel
 * full-batch training, nn/train_dist.h): ranks[r] (size entries) belongs to the thread of rank
 * r. Every collective gives what MPI's gives, with the same bytes counted, so a job of thread
 * ranks is the job of mpirun -np size, bit for bit. Free with comm_threads_free after every
 * thread is done. comm_split is refused on them. */
int comm_threads_create(int size, comm_t **ranks);
void comm_threads_free(comm_t **ranks, int size);
/* A thread rank that fails calls this before it returns: every collective of the group,
 * waiting or to come, then fails (INCA_ERR) instead of waiting for it. Returns 1 for the first
 * rank to poison the group (whose error is the cause), 0 otherwise and for MPI ranks. */
int comm_poison(comm_t *c);
/* NULL means one rank. */
int comm_rank(const comm_t *c);
int comm_size(const comm_t *c);
/* This rank's number among the ranks on its node (MPI_COMM_TYPE_SHARED; thread ranks: the
 * rank; a split keeps its parent's): rank r of a node takes device r mod the node's GPUs. */
int comm_local_rank(const comm_t *c);

/* recv (size x bytes) <- every rank's send (bytes), in rank order. */
int comm_allgather(comm_t *c, const void *send, int64_t bytes, void *recv, int phase);
/* buf (bytes) <- root's buf. */
int comm_bcast(comm_t *c, void *buf, int64_t bytes, int root, int phase);
/* Element-wise over ranks, in place: the maximum / the sum (integers: exact in any order). */
int comm_allreduce_max_i64(comm_t *c, int64_t *v, int n, int phase);
int comm_allreduce_sum_i64(comm_t *c, int64_t *v, int n, int phase);
/* send[i] to rank i, recv[i] from rank i (size entries each). */
int comm_alltoall_i64(comm_t *c, const int64_t *send, int64_t *recv, int phase);
/* Rows of row_bytes each: scount[i] rows from send (packed in rank order) to rank i, rcount[i]
 * rows from rank i into recv (packed in rank order). Counts go to MPI in rows of a derived
 * datatype, so a message may hold up to 2^31 - 1 rows of any width (Open MPI's counts are int). */
int comm_alltoallv_rows(comm_t *c, const void *send, const int64_t *scount, void *recv, const int64_t *rcount,
                        int64_t row_bytes, int phase);
/* buf (n floats) <- the sum over the contributing ranks (contrib[r] != 0, the same array on every
 * rank) in rank order: the first contributor's values, then each later one's added
 * (fl(g_r + acc)), the same bits on every rank and the bits of that left-to-right loop in one
 * process. A chain: each contributor receives the running sum from the previous one, adds its
 * own and passes it on, in pipelined chunks; the last one's sums then travel the ring back to
 * every rank. Each rank sends at most about 2n floats, whatever P (an allgather of n-float
 * records sends (P - 1) n). No contributor: buf is left as it is. */
int comm_ordered_sum_f32(comm_t *c, float *buf, int64_t n, const uint8_t *contrib, int phase);
int comm_barrier(comm_t *c);

/* Bytes this rank sent under phase, and seconds it spent inside MPI there (waiting for the
 * others included), since the last reset. */
int64_t comm_bytes_sent(const comm_t *c, int phase);
double comm_seconds(const comm_t *c, int phase);
void comm_reset_bytes(comm_t *c);
/* Counts a transfer made outside this module (NCCL between devices, issue 29) under phase, by
 * the same rule: the payload the collective means for this rank. */
void comm_count(comm_t *c, int phase, int64_t bytes, double secs);
const char *comm_phase_name(int phase);   /* "setup", "grad", "refresh", "halo", "eval" */

/* End the whole job with exit status code when MPI is running (MPI_Abort, which does not
 * return); otherwise (no MPI, or one process) it returns and the caller ends as it would with
 * one rank. The CLI's error path only: the message naming the rank is printed first. The
 * library never exits the process itself. */
void comm_abort(comm_t *c, int code);

#ifdef INCA_HAS_MPI
#include <mpi.h>
/* The MPI communicator under c, for a library that takes one (PT-Scotch's ParMETIS interface,
 * graph/partition_par.h): INCA_EINVAL for thread ranks (--workers), for NULL and for a process
 * MPI was not started in (not under an MPI launcher). */
int comm_mpi(const comm_t *c, MPI_Comm *out);
#endif
#endif
