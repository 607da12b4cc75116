/* The in-memory dataset's lifetime (see dataset.h). */
#include "graph/dataset.h"
#include "core/alloc.h"
#include <string.h>

const char *const dataset_split_names[SPLIT_COUNT] = {"train", "valid", "test"};

void dataset_init(dataset_t *d) { memset(d, 0, sizeof *d); }

void dataset_free(dataset_t *d) {
    if (!d) return;
    csr_free(&d->adj);
    inca_free(d->x);
    inca_free(d->y);
    for (int s = 0; s < SPLIT_COUNT; s++) inca_free(d->split[s]);
    for (int32_t i = 0; i < d->n_more; i++)
        for (int s = 0; s < SPLIT_COUNT; s++) inca_free(d->more[i].ids[s]);
    inca_free(d->more);
    memset(d, 0, sizeof *d);
}

int64_t dataset_labeled(const dataset_t *d) {
    int64_t k = 0;
    if (d->y)
        for (int64_t i = 0; i < d->n; i++) k += d->y[i] >= 0;
    return k;
}

double dataset_majority_share(const dataset_t *d, int s) {
    if (!d->y || s < 0 || s >= SPLIT_COUNT || d->c < 1) return 0;
    int64_t *cnt = inca_calloc((size_t)d->c, sizeof *cnt), best = 0, n = 0;
    if (!cnt) return 0;
    for (int64_t i = 0; i < d->split_n[s]; i++) {
        const int32_t y = d->y[d->split[s][i]];
        if (y < 0 || y >= d->c) continue;
        n++;
        if (++cnt[y] > best) best = cnt[y];
    }
    inca_free(cnt);
    return n ? (double)best / (double)n : 0;
}

int dataset_has_graph(const dataset_t *d) { return d->adj.rowptr != NULL || (d->adj.nnz > 0 && d->adj.n_rows == d->n); }
