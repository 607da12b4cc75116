/* One optimiser step of a mini-batch run: the next batch's forward and backward on every rank
 * this process runs, the gradients summed in rank order (--workers in memory; under MPI through
 * --grad-reduce chain, allgather or nccl), one step of the shared optimiser. Internal to nn/
 * (see nn/mb_run.h). */
#ifndef INCA_NN_MB_STEP_H
#define INCA_NN_MB_STEP_H
#include <stdint.h>
#include "nn/mb_run.h"

/* Step s of epoch ep; on the CPU (and under MPI) the step's losses are summed into *loss_sum
 * and counted in *loss_n at once, on a device by mb_epoch_losses at the epoch's end. */
int mb_step(mb_run_t *R, int ep, int64_t s, double *loss_sum, int64_t *loss_n);
/* Off the CPU: the epoch's step losses read back once, checked (a non-finite one names its
 * step) and summed in step order. */
int mb_epoch_losses(mb_run_t *R, int ep, double *loss_sum, int64_t *loss_n);
#endif
