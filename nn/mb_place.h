/* Where a mini-batch run's features and operator tables live (--features-location,
 * --history-location, --device-memory-budget) and the tables' halo exchanges between ranks.
 * Internal to nn/ (see nn/mb_run.h). On the CPU everything is host memory and these choices
 * are no-ops. */
#ifndef INCA_NN_MB_PLACE_H
#define INCA_NN_MB_PLACE_H
#include <stdint.h>
#include "nn/mb_run.h"

/* The layout's M^0 in the tables' type, which IncAgg's view path borrows (NULL: none). */
const void *mb_view_m0(const mb_run_t *R);
/* 1: the features are placed after the tables (mb_setup_tables), which may leave them in host
 * memory; 0: they go up with the graph (mb_features_early), as always. */
int mb_features_deferred(const mb_run_t *R);
/* The features on the device now, unless deferred; a host placement the run cannot serve is
 * refused naming why. */
int mb_features_early(mb_run_t *R);
/* Releases the features' device copy and every staging buffer their placement made. */
void mb_features_undo(mb_run_t *R);
/* The widest hidden output of the layer-wise passes (their buffers' width). */
int64_t mb_pass_width(const mb_run_t *R);
/* The aggregation operator over the model's *ns sites, its tables on the device or in host
 * memory, then the deferred features. Under auto, when device tables leave no room for even the
 * host features' staging, both go to the host (once). Within --memory-budget on the view path. */
int mb_setup_tables(mb_run_t *R, const dataset_t *d, hist_dtype_t hd, const void *m0, int *ns);
/* The halo rows of table t (h's ids) from the ranks that own them, in exchange phase `phase`
 * (core/comm.h); through the device's staging when the tables are on a device. */
int mb_table_exchange(mb_run_t *R, halo_t *h, hist_t *t, int phase);
#endif
