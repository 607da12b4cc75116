/* The prepared-data stage a run shares between its trainers: the partitioning (from the store
 * or computed), the store layout's views for the view loader, and the kernel context of
 * --device. Tested through tests/test_train.c, tests/test_layout.c and tests/test_device.c. */
#ifndef INCA_NN_TRAIN_PREP_H
#define INCA_NN_TRAIN_PREP_H
#include "nn/train_common.h"

/* The view loader's arrays (nn/layout.h) for a mini-batch run of c on partitioning p of the
 * store at c->store_path: its layout for c's feature normalisation and model adjacency (and
 * M^0 for incagg gcn/sage), written first when the store lacks them (a store partitioned before
 * the layout existed is migrated, with a log line; a store that cannot be opened for writing is
 * ENOTFOUND naming `inca partition`). *s (owned, store_close) must stay open while v is used. */
struct store;
struct layout_views;
int train_view_open(const dataset_t *d, const train_config_t *c, const partition_t *p, struct store **s,
                    struct layout_views *v);
/* The partitioning a mini-batch method trains on: "metis-K-s0" (or random) from the store at
 * c->store_path when stored there (inca partition), else computed and stored there (computed
 * only, when the store cannot be opened for writing). Owned by the caller (partition_free).
 * *reused (may be NULL): 1 when it came from the store. */
int train_partition(const dataset_t *d, const train_config_t *c, partition_t *p, int *reused);
/* The kernel context of c->device (*kc owned by the caller, kc_free) and its backend's name into
 * name[cap]: "auto" without a usable CUDA device falls back to the CPU with a log line saying
 * why; "cuda" without one is INCA_ERR with the CUDA error's text. */
/* The dataset of the store at c->store_path, without its features and graph when the loader c
 * resolves to for the store's size is the view loader (which maps both from the store's layout). */
int train_dataset_load(const train_config_t *c, dataset_t *d);
struct kern_ctx;
int train_device_open(const train_config_t *c, struct kern_ctx **kc, char *name, size_t cap);
#endif
