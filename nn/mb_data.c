/* A mini-batch run's renumbered dataset (mb_data.h). */
#include "nn/mb_data.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "nn/layer.h"
#include <stdlib.h>
#include <string.h>

/* ids mapped through perm and sorted (caller frees) */
static int64_t *map_ids(const int64_t *ids, int64_t m, const int64_t *perm) {
    int64_t *o = inca_malloc(sizeof *o * (size_t)(m ? m : 1));
    if (!o) return NULL;
    for (int64_t i = 0; i < m; i++) o[i] = perm[ids[i]];
    qsort(o, (size_t)m, sizeof *o, inca_cmp_i64);
    return o;
}

void mb_data_free(mb_data_t *D) {
    if (!D->x_view) inca_free(D->x);
    inca_free(D->y);
    inca_free(D->tr);
    inca_free(D->va);
    inca_free(D->te);
    inca_free(D->in_train);
    csr_free(&D->a);
    csr_free(&D->at);
    memset(D, 0, sizeof *D);
}

int mb_data_prepare(const dataset_t *d, const train_config_t *c, const partition_t *p, const int64_t *train_idx,
                           int64_t n_train, int norm, const layout_views_t *view, mb_data_t *D) {
    const int64_t n = d->n, f = d->f;
    csr_t adjp = {0};
    memset(D, 0, sizeof *D);
    D->n = n;
    D->f = f;
    D->ntr = n_train;
    D->nva = d->split_n[SPLIT_VALID];
    D->nte = d->split_n[SPLIT_TEST];
    /* the view path maps Â (and Âᵀ) from the store's layout; the copy path renumbers the graph */
    int rc = view ? INCA_OK : csr_permute(&d->adj, p->perm, &adjp);
    if (rc != INCA_OK) return rc;
    if (view) {   /* renumbered and normalised in the store already */
        if (view->n != n || view->f != f)
            return inca_fail(INCA_EINVAL, "store layout holds %lld x %lld features, the dataset %lld x %lld", (long long)view->n,
                             (long long)view->f, (long long)n, (long long)f);
        D->x = (float *)view->x;   /* never written */
        D->x_view = 1;
    } else D->x = inca_malloc(sizeof *D->x * (size_t)(n * f > 0 ? n * f : 1));
    D->y = inca_malloc(sizeof *D->y * (size_t)(n ? n : 1));
    D->in_train = inca_calloc((size_t)(n ? n : 1), 1);
    D->tr = map_ids(train_idx, n_train, p->perm);
    D->va = map_ids(d->split[SPLIT_VALID], D->nva, p->perm);
    D->te = map_ids(d->split[SPLIT_TEST], D->nte, p->perm);
    if (!D->x || !D->y || !D->in_train || !D->tr || !D->va || !D->te) { rc = INCA_ENOMEM; goto done; }
    for (int64_t v = 0; v < n; v++) {
        if (!view) memcpy(D->x + p->perm[v] * f, d->x + v * f, sizeof(float) * (size_t)f);
        D->y[p->perm[v]] = d->y[v];
    }
    if (!view) train_features_prepare(c->feature_norm, n, f, D->x, D->x);
    for (int64_t i = 0; i < n_train; i++) D->in_train[D->tr[i]] = 1;
    if (view) {
        if (view->a.n_rows != n || (norm == NN_NORM_MEAN && !view->at.rowptr))
            rc = inca_fail(INCA_EINVAL, "store layout: the adjacency does not match the model's normalisation");
        D->a = view->a;     /* owned = 0: csr_free leaves the map alone */
        D->at = view->at;
    } else rc = nn_adj_build(&adjp, norm, &D->a, &D->at);
done:
    csr_free(&adjp);
    if (rc != INCA_OK) mb_data_free(D);
    return rc;
}

/* The most nonzeros any batch of b parts can hold in its rows of Â: the b fullest parts. */
int64_t mb_batch_nnz_bound(const csr_t *a, const int64_t *bounds, int64_t k, int64_t b) {
    int64_t *nz = inca_malloc(sizeof *nz * (size_t)(k > 0 ? k : 1));
    if (!nz) return a->nnz;
    for (int64_t i = 0; i < k; i++) nz[i] = a->rowptr[bounds[i + 1]] - a->rowptr[bounds[i]];
    qsort(nz, (size_t)k, sizeof *nz, inca_cmp_i64);
    int64_t sum = 0;
    for (int64_t i = 0; i < b && i < k; i++) sum += nz[k - 1 - i];
    inca_free(nz);
    return sum;
}
