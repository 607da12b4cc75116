/* Shared set-up of the mini-batch benchmarks (bench_epoch.c, bench_loader.c): the training
 * flags they accept, parsed into a train_config_t, and loading STORE with its stored (or newly
 * stored) METIS partitioning. */
#ifndef INCA_BENCH_MB_H
#define INCA_BENCH_MB_H
#include "core/args.h"
#include "graph/partition.h"
#include "loaders/dataset.h"
#include "nn/train.h"

/* Flags: --model --layers --hidden --epochs --lr --dropout --weight-decay --feature-norm
 * --parts --batch-parts --refresh --history-dtype --refresh-source --refresh-relax --eval-average [0] --cluster-norm --refresh-eval --input-layer --refresh-weights --threads --seed (defaults: gcn 2x16,
 * 3 epochs, lr 0.01, dropout 0.5, wd 5e-4, parts 40, batch-parts 10). */
#define BENCH_MB_FLAGS "--model", "--layers", "--hidden", "--epochs", "--lr", "--dropout", "--weight-decay", "--beta1", \
    "--feature-norm", "--parts", "--batch-parts", "--refresh", "--history-dtype", "--pass-dtype", "--refresh-source", "--refresh-relax", "--eval-average", "--cluster-norm", \
    "--refresh-eval", "--input-layer", "--refresh-weights", "--threads", "--seed", "--json!", "--device", "--deterministic!", "--tf32!", "--history-location", \
    "--features-location", "--device-memory-budget", "--quiet!"
int bench_mb_config(const args_t *a, train_config_t *c);
/* dataset_load(path) plus the partitioning metis-<parts>-s0 from the store (computed and
 * stored when absent; *reused says which). */
int bench_mb_load(const char *path, const train_config_t *c, dataset_t *d, partition_t *p, int *reused);
#endif
