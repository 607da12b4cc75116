/* Halo exchanges of tables in a context's memory (issue 29: data-parallel ranks on devices).
 * A round's rows are gathered on the context into a staging block, copied to pinned host
 * memory and handed to MPI; the received rows go up and are scattered into the table on the
 * context. The wire carries the table's own bytes (bf16 rows as bf16), so the byte counters and
 * the rows received are those of the host exchange (memory/halo.h) bit for bit.
 *
 * CAVEATS FIRST
 * - Every buffer is made by halo_dev_create, at the size of one round of the widest row, so an
 *   exchange allocates nothing (training allocates nothing after setup); an exchange whose round
 *   would not fit is refused (INCA_EINVAL naming both sizes), never grown.
 * - The table's later ops are ordered after the scatter on the compute stream; the exchange
 *   waits for the device before each round's all-to-all (its rows must be on the host, and the
 *   last round's upload out of the receive staging done, before MPI rewrites it).
 * - The CPU context works too (the staging is host memory; slower than halo_exchange).
 * Tested in tests/mpi/mpi_halo.c (under mpirun, on the emulated device: fp32 and bf16 tables
 * equal the host exchange's rows and counters) and by the device trainers of tests/test_mpi.c. */
#ifndef INCA_MEMORY_HALO_DEV_H
#define INCA_MEMORY_HALO_DEV_H
#include <stdint.h>
#include "kernels/backend.h"
#include "memory/halo.h"

typedef struct halo_dev halo_dev_t;

/* Staging on kc for rounds of up to max_rows rows, max_elems elements and max_bytes bytes as
 * they travel (the pinned buffers: bf16 rows are half an fp32 row's), of bf16 tables too when
 * bf16 is 1 (else fp32 only); any plan's round of rows of b bytes holds at most
 * halo_stage_rows(P, b) rows. Device and pinned memory counted under kc's current tag. */
int halo_dev_create(kern_ctx_t *kc, int64_t max_rows, int64_t max_elems, int64_t max_bytes, int bf16, halo_dev_t **out);
/* table (n x f of dt, by global id or local row, kc's memory): the rows this rank asked for <- their owners'
 * rows, as halo_exchange. */
int halo_dev_exchange(halo_dev_t *x, halo_t *h, comm_t *c, kern_dtype_t dt, void *table, int64_t f, int phase);
/* Its pinned host staging (send and receive), in bytes (0: NULL x). */
int64_t halo_dev_host_bytes(const halo_dev_t *x);
void halo_dev_free(halo_dev_t **x);   /* NULL-safe */
#endif
