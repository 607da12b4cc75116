/* What a data-parallel rank hands to MPI and takes back (issue 29): the parameters broadcast at
 * the start, the gradient records of each step, the halo rows of a table. On the CPU the
 * collectives read and write the model's and the tables' own arrays; on a device (CUDA or the
 * emulated one) through host memory: parameters and gradients are copied down and up, tables'
 * rows through memory/halo_dev.h. The same values travel either way, so device ranks give the
 * CPU ranks' bits wherever the device's kernels give the CPU's (the emulated device always).
 *
 * CAVEATS FIRST
 * - Collectives: every rank calls them in the same order (core/comm.h).
 * - A gradient record is flat, in model_param order (model_nparams x each parameter's n floats).
 * Tested in tests/test_mpi.c (mpirun -np 2 on the emulated device against --workers 2 on it and
 * against the CPU ranks, every method) and tests/mpi/mpi_halo.c (the device halo). */
#ifndef INCA_NN_TRAIN_XFER_H
#define INCA_NN_TRAIN_XFER_H
#include <stdint.h>
#include "core/comm.h"
#include "kernels/backend.h"
#include "memory/halo.h"
#include "memory/halo_dev.h"
#include "nn/model.h"

/* Every rank's parameters <- rank 0's (counted under COMM_SETUP). */
int train_xfer_bcast_params(comm_t *c, model_t *m);
/* flat (host, the record's floats) <- the model's gradients. Waits for the device. */
int train_xfer_grads_get(model_t *m, float *flat);
/* The model's gradients <- flat (host). */
int train_xfer_grads_put(model_t *m, const float *flat);
/* This machine, as the ranks compare it to find two that share a GPU (the same machine and the
 * same PCI bus id): the kernel's boot id, else the host name. Why not the host name: it can
 * repeat across machines (containers named alike) where a boot id does not, and containers on
 * one machine (one kernel) that see the same GPU do share it. INCA_ERR when neither is known. */
int train_xfer_machine_id(char *buf, size_t cap);
/* --grad-reduce nccl: every rank's context joins one NCCL clique (collective). Refused on every
 * rank alike (INCA_EINVAL, naming the ranks) when a rank's context has no NCCL (the CPU, the
 * emulated device, a build without it) or two ranks share a GPU (NCCL needs one per rank:
 * --grad-reduce chain stages through the host instead). */
int train_xfer_nccl_join(comm_t *c, kern_ctx_t *kc);
/* NCCL: sum[i] <- the sum over the ranks of each parameter's gradient (sum NULL: in place, into
 * the gradients); counted under COMM_GRAD as a ring all-reduce's payload, 2 (P - 1) / P of
 * the record per rank. */
int train_xfer_grads_sum_nccl(comm_t *c, model_t *m, float **sum);
/* A table's halo rows from their owners (memory/halo.h): through hx when the table is in a
 * device's memory (hx made for it: train_xfer_halo_dev), else straight from host memory. */
int train_xfer_halo(halo_t *h, halo_dev_t *hx, comm_t *c, kern_dtype_t dt, void *table, int64_t f, int phase);
/* The device staging of a rank that exchanges tables of the given widths and types (nw of
 * them; n rows each) among p ranks: large enough for any plan's round (halo_stage_rows, at most
 * n (p - 1) rows: a row goes at most once to each other rank). */
int train_xfer_halo_dev(kern_ctx_t *kc, int p, int64_t n, const int64_t *widths, const kern_dtype_t *dts, int nw,
                        halo_dev_t **out);
#endif
