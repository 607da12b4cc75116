/* Halo exchange between data-parallel ranks (issue 13): rank r asks the owners (graph/dist.h)
 * for the rows of some node ids it does not own, once (halo_plan: the ids travel to their
 * owners), then any number of exchanges move the owners' current rows of a table into the same
 * rows of the asker's table (halo_exchange). IncAgg plans its rank's whole halo once and
 * exchanges the snapshots S at each refresh; GAS plans each batch's halo and exchanges its
 * history tables before the step.
 *
 * Tables are indexed by global node id (n rows of row_bytes; or by local row after
 * halo_set_local), in host memory; rows travel in
 * all-to-alls of bounded staging (core/comm.h: counts in rows, any width), as many rounds as the
 * largest pair's rows need.
 *
 * CAVEATS FIRST
 * - halo_plan and halo_exchange are collectives: every rank calls them, in the same order (a
 *   rank with nothing to ask passes m = 0).
 * - Only the asked rows of the asker's table are written; the owner's table is read only.
 * Tested in test_mpi.c (under mpirun: every row a rank receives equals the owner's row, and
 * nothing else changes) and test_dist.c (one rank: the plan of nothing). */
#ifndef INCA_MEMORY_HALO_H
#define INCA_MEMORY_HALO_H
#include <stdint.h>
#include "core/comm.h"
#include "graph/dist.h"

typedef struct halo halo_t;

/* The plan for this rank's `need` (m sorted distinct ids, none its own, all in [0, p->n)):
 * INCA_EINVAL when they are not. The ids' bytes count under phase. */
int halo_plan(comm_t *c, const dist_plan_t *p, const int64_t *need, int64_t m, int phase, halo_t **out);
/* table (n x row_bytes, by global id, or local rows: halo_set_local): the rows this rank asked
 * for <- their owners' rows. */
int halo_exchange(halo_t *h, comm_t *c, void *table, int64_t row_bytes, int phase);
/* The exchange with the rows packed and unpacked by the caller (a table in a device's memory:
 * memory/halo_dev.h). Each round calls pack(ctx, ids, m, sbuf): rows ids[0..m) of the table
 * (global ids or local rows, host array, valid during the call) packed into sbuf, m x row_bytes; the rows
 * travel; then unpack(ctx, ids, m, rbuf) writes the received rows into the table's rows ids.
 * sbuf and rbuf hold halo_round_rows(h, row_bytes) rows each. halo_exchange is this with
 * memcpy. A failing pack or unpack ends the exchange with its status (the other ranks then wait
 * in the round's all-to-all: the caller ends the job, as after any failed collective). */
typedef struct halo_io {
    int (*pack)(void *ctx, const int64_t *ids, int64_t m, void *sbuf);
    int (*unpack)(void *ctx, const int64_t *ids, int64_t m, void *rbuf);
    void *ctx;
    void *sbuf, *rbuf;
} halo_io_t;
int halo_exchange_with(halo_t *h, comm_t *c, int64_t row_bytes, int phase, const halo_io_t *io);
/* The most rows one round of an exchange of rows of row_bytes packs or unpacks (0: NULL h). */
int64_t halo_round_rows(const halo_t *h, int64_t row_bytes);
/* Its bound over every plan of p ranks at the default staging (a round moves at most
 * max(1, stage / row_bytes / p) rows per pair). */
int64_t halo_stage_rows(int p, int64_t row_bytes);
/* Host bytes of a plan of nr rows received and ns sent among p ranks (its ids and counts) and,
 * row_bytes > 0, what exchanges of rows of at most row_bytes add to it (the send and receive
 * staging at the default size, kept at the largest round, and a round's ids): an upper bound for
 * any plan of those totals, as --memory-budget plans a rank's memory. 0 when p < 2. */
int64_t halo_host_bytes(int p, int64_t nr, int64_t ns, int64_t row_bytes);
/* Rows travel in rounds whose staging (send and receive buffers) stays near this many bytes
 * (32 MiB unless set; every rank must set the same). */
void halo_set_stage_bytes(halo_t *h, int64_t bytes);
/* Tables in the rank's local numbering from now on: the sorted union of its own ids
 * [lo, lo + no) and its halo ids (the plan's need), so a table holds no + m rows, not n. The
 * own rows sit at [nb, nb + no), nb the halo ids below lo; halo id need[j] at row
 * halo_local_row(h, j). The ids pack and unpack get (halo_exchange_with) are then local rows.
 * Ascending like the global ids, so a CSR renumbered this way keeps its column order. */
int64_t halo_set_local(halo_t *h, int64_t lo, int64_t no);   /* returns nb */
int64_t halo_local_row(const halo_t *h, int64_t j);
int64_t halo_send_rows(const halo_t *h);   /* rows this rank sends per exchange */
int64_t halo_recv_rows(const halo_t *h);   /* rows it receives per exchange */
void halo_free(halo_t **h);                /* NULL-safe */
#endif
