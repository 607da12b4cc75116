/* A mini-batch run made before its first epoch and released after its last: the checks, the
 * ranks (--workers or mpirun), the data on the context, the loaders, the model, its optimiser
 * and weight average, the layer-wise passes' panels, the step's buffers, the operator (through
 * mb_place.h) and the checkpoint's blobs; and a resume from a checkpoint. Internal to nn/
 * (see nn/mb_run.h). */
#ifndef INCA_NN_MB_SETUP_H
#define INCA_NN_MB_SETUP_H
#include <stdint.h>
#include "nn/mb_run.h"

/* R->c, R->o, R->p and R->run given (the rest zero): everything the epochs need. A device that
 * cannot hold a batch is refused before training, naming what would help. */
int mb_run_setup(mb_run_t *R, const dataset_t *d, const int64_t *train_idx, int64_t n_train);
/* Continues after the last completed epoch of R's checkpoint (nothing when there is none):
 * model, optimiser, tables, the best epoch so far, the loaders' positions. Under MPI (R->comm)
 * a collective: from the newest epoch every rank saved; without --resume it removes an older
 * job's files of the run from the rank's folder (ckpt_rank_load). */
int mb_run_resume(mb_run_t *R, const dataset_t *d);
/* Releases everything R holds, whichever phase of setup it reached. */
void mb_run_free(mb_run_t *R);
/* The run's checkpoint directory (under MPI: this rank's). */
const char *mb_ckdir(const mb_run_t *R);
#endif
