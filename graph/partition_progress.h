/* A partitioner's progress, for a status line (its own header so that the passes of a
 * partitioner can report without depending on graph/partition.h, which calls them). */
#ifndef INCA_PARTITION_PROGRESS_H
#define INCA_PARTITION_PROGRESS_H
#include <stdint.h>

/* fn(ctx, phase, done, total): the phase in words ("clustering", "refining", ...) and a count
 * within it (done of total rounds; total 0: not known). Only `lp` reports (METIS and the
 * shuffle are one call each); called on the partitioning thread while the call runs, never
 * after it returns. */
typedef struct partition_progress {
    void (*fn)(void *ctx, const char *phase, int64_t done, int64_t total);
    void *ctx;
} partition_progress_t;
#endif
