/* The prepared-data stage of a run: the dataset, the partitioning, the store layout's views for
 * the view loader, the kernel context of --device. See train_prep.h. */
#include "nn/train_prep.h"
#include "core/comm.h"
#include "nn/layout.h"
#include "loaders/partition_store.h"
#include "kernels/backend.h"
#include "core/status.h"
#include <stdio.h>
#include <string.h>

int train_dataset_load(const train_config_t *c, dataset_t *d) {
    store_t *s = NULL;
    int rc;
    if ((rc = store_open(c->store_path, STORE_RDONLY, &s))) return rc;
    const int view = train_loader_resolve(c, store_meta(s)->nodes, store_meta(s)->features) == TRAIN_LOADER_VIEW;
    store_close(&s);
    return dataset_load_ex(c->store_path, view ? DATASET_NO_X | DATASET_NO_GRAPH : 0, d);
}

int train_partition(const dataset_t *d, const train_config_t *c, partition_t *p, int *reused) {
    /* METIS with seed 0, fixed across runs as in GAS; c->partition names another ("random",
     * "parmetis" or a stored name such as "metis-40-s3", whose part count cli/ put in c->parts) */
    int pm = PART_METIS, rc;
    int64_t pk = 0;
    uint64_t pseed = 0;
    int pranks = 0;
    if (c->partition[0] && (rc = partition_name_parse(c->partition, &pm, &pk, &pseed, &pranks)) != INCA_OK) return rc;
    int64_t k = c->parts > 0 ? c->parts : 40;
    if (k > d->n) k = d->n;
    store_t *s = NULL;
    if (reused) *reused = 0;
    if (pm == PART_PARMETIS) {   /* computed over MPI ranks by inca partition, never here */
        char name[64];
        partition_name(name, sizeof name, pm, k, pseed, pranks);
        if (!c->store_path || (rc = store_open(c->store_path, STORE_RDONLY, &s)) != INCA_OK)
            return inca_fail(INCA_EINVAL, "--partition %s: a ParMETIS partitioning is read from the store", name);
        rc = store_partition_find_par(s, k, pseed, pranks, name, sizeof name);
        if (rc == INCA_OK) rc = store_partition_load(s, name, p);
        store_close(&s);
        if (rc == INCA_ENOTFOUND)
            return inca_fail(INCA_EINVAL, "--partition %s: not in %s; make it with inca partition %s --parts %lld --method "
                             "parmetis --seed %llu --ranks P", name, c->store_path, c->store_path, (long long)k,
                             (unsigned long long)pseed);
        if (rc == INCA_OK && reused) *reused = 1;
        return rc;
    }
    /* reuse (or keep) the partitioning in the store, as `inca partition` does; a store that
     * cannot be opened for writing (a read-only copy) falls back to computing it */
    if (c->store_path && store_open(c->store_path, STORE_RDWR, &s) == INCA_OK) {
        /* a dataset loaded without its graph (the view loader): the store reads it if needed */
        rc = store_partition_get(s, d->adj.rowptr ? &d->adj : NULL, k, pm, pseed, p, reused);
        store_close(&s);
    } else if (!d->adj.rowptr) {
        rc = inca_fail(INCA_EINVAL, "the graph was not loaded and the store %s cannot be opened", c->store_path ? c->store_path : "(none)");
    } else {
        inca_err_clear();
        rc = partition_compute(&d->adj, k, pm, pseed, p);
    }
    return rc == INCA_OK ? rc : inca_fail_ctx(rc, "--parts %lld", (long long)k);
}
int train_view_open(const dataset_t *d, const train_config_t *c, const partition_t *p, store_t **s,
                    layout_views_t *v) {
    int rc, built = 0;
    const int kind = c->model;
    const hist_dtype_t hd = c->history_dtype;
    if (!c->store_path) return inca_fail(INCA_EINVAL, "--loader view: the dataset must come from a store");
    const int want_m0 = c->method == TRAIN_INCAGG && (kind == NN_GCN || kind == NN_SAGE);
    const int norm = nn_kind_norm(kind);
    rc = store_open(c->store_path, STORE_RDONLY, s);
    if (rc == INCA_OK && (rc = layout_open(*s, p, c->feature_norm, want_m0, norm, hd, v)) == INCA_ENOTFOUND) {
        char why[512];
        snprintf(why, sizeof why, "%s", inca_errmsg());
        inca_err_clear();
        store_close(s);
        if (store_open(c->store_path, STORE_RDWR_MAP, s) != INCA_OK) {
            inca_err_clear();
            return inca_fail(INCA_ENOTFOUND, "%s", why);
        }
        train_log(c, TRAIN_LOG_INFO, "%s: writing the partition-ordered layout of %s (feature norm %s%s), once",
                  c->store_path, p->man.name, layout_featnorm_name(c->feature_norm), want_m0 ? ", M^0" : "");
        /* under a budget, x and M^0 are built in file-backed maps and stored as side files */
        rc = layout_ensure(*s, p, d->adj.rowptr ? &d->adj : NULL, c->feature_norm, want_m0, norm, hd, c->memory_budget > 0,
                           &built);
        if (rc == INCA_OK) rc = layout_open(*s, p, c->feature_norm, want_m0, norm, hd, v);
    }
    if (rc != INCA_OK) store_close(s);
    return rc;
}

int train_device_open(const train_config_t *c, kern_ctx_t **kc, char *name, size_t cap) {
    kern_ctx_opts_t ko = {.device = c->device, .deterministic = c->deterministic, .tf32 = c->tf32};
    if (comm_size(c->comm) > 1) {   /* --device cuda under mpirun: rank r of a node on its GPU r mod count */
        ko.device_index = comm_local_rank(c->comm);
        ko.rank_device = 1;
    }
    int rc = kc_create(&ko, kc);
    if (rc != INCA_OK) return rc;
    if (kc_fallback(*kc)) train_log(c, TRAIN_LOG_INFO, "--device auto: %s; running on the CPU", kc_fallback(*kc));
    snprintf(name, cap, "%s", kc_name(*kc));
    return INCA_OK;
}

