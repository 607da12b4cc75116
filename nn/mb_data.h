/* A mini-batch run's dataset, renumbered by the partition (node v becomes perm[v], so each part
 * is a range of ids and a batch's rows of x, y and Â are a few contiguous ranges), and Â built
 * under the model's normalisation. Internal to nn/ (the mb_* modules behind nn/train_mb.h). */
#ifndef INCA_NN_MB_DATA_H
#define INCA_NN_MB_DATA_H
#include <stdint.h>
#include "graph/csr.h"
#include "graph/dataset.h"
#include "graph/partition.h"
#include "nn/layout.h"
#include "nn/train_common.h"

typedef struct mb_data {
    int64_t n, f;
    float *x;
    int32_t *y;
    int64_t *tr, *va, *te;    /* the splits' ids, renumbered and sorted */
    int64_t ntr, nva, nte;
    uint8_t *in_train;
    csr_t a, at;              /* Â and, when it is not symmetric (mean, a directed graph), Âᵀ */
    int x_view;               /* x is the store layout's view (not owned) */
} mb_data_t;

/* D from d under partition p (borrowed), training ids train_idx (n_train; the job's other splits
 * from d), Â in normalisation norm (nn/layer.h). view NULL: the copy path (x copied, renumbered
 * and normalised, Â built here); else the store layout's x and Â are borrowed (not copied).
 * Nothing kept on error. */
int mb_data_prepare(const dataset_t *d, const train_config_t *c, const partition_t *p, const int64_t *train_idx,
                    int64_t n_train, int norm, const layout_views_t *view, mb_data_t *D);
void mb_data_free(mb_data_t *D);   /* what D owns; zeroes it */
/* The most nonzeros any batch of b parts can hold in its rows of a (parts: bounds, k of them):
 * the b fullest parts' (a->nnz when scratch cannot be had). */
int64_t mb_batch_nnz_bound(const csr_t *a, const int64_t *bounds, int64_t k, int64_t b);
#endif
