/* inca export STORE OUT --format ogb|npz|npy [--split NAME] [--split-name NAME] [--partition NAME] [--json]:
 * the store's dataset written for other tools (loaders/export.h): the OGB raw layout that `inca
 * ingest --format ogb` reads back, one NumPy .npz, or a folder of .npy files; with --partition
 * also each node's part of a stored partitioning. Tested in test_export.c (round trip). */
#include "core/args.h"
#include "cli/commands.h"
#include "core/json.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/dataset.h"
#include "loaders/export.h"
#include "nn/shard.h"
#include "loaders/partition_store.h"
#include "core/alloc.h"
#include <stdio.h>

/* each node's part (store numbering) of the stored partitioning `name` */
static int part_vector(const char *path, const char *name, const dataset_t *d, partition_t *p, int64_t **out) {
    store_t *s = NULL;
    int rc = store_open(path, STORE_RDONLY, &s);
    if (rc == INCA_OK) rc = store_partition_load(s, name, p);
    store_close(&s);
    if (rc == INCA_ENOTFOUND) return inca_fail(INCA_EINVAL, "--partition %s: no such partitioning in %s (inca info lists them)", name, path);
    if (rc != INCA_OK) return rc;
    if (p->n != d->n) return inca_fail(INCA_EINVAL, "--partition %s covers %lld nodes, the dataset has %lld", name, (long long)p->n, (long long)d->n);
    int64_t *part = inca_malloc(sizeof *part * (size_t)(p->n ? p->n : 1));
    if (!part) return INCA_ENOMEM;
    for (int64_t k = 0; k < p->k; k++)
        for (int64_t v = p->bounds[k]; v < p->bounds[k + 1]; v++) part[v] = k;   /* new id -> part */
    int64_t *byold = inca_malloc(sizeof *byold * (size_t)(p->n ? p->n : 1));
    if (!byold) { inca_free(part); return INCA_ENOMEM; }
    for (int64_t v = 0; v < p->n; v++) byold[v] = part[p->perm[v]];
    inca_free(part);
    *out = byold;
    return INCA_OK;
}

int cmd_export(int argc, char **argv) {
    static const char *const known[] = {"--format", "--split-name", "--split", "--partition", "--json!", NULL};
    args_t *a = NULL;
    json_t *j = NULL;
    dataset_t d;
    dataset_init(&d);
    export_stats_t st = {0};
    partition_t p = {0};
    int64_t *part = NULL;
    int fmt = 0;
    int rc = args_parse(argc, argv, known, &a);
    if (rc) return rc;
    if (args_npos(a) != 2) { rc = inca_fail(INCA_EINVAL, "expected STORE and OUT"); goto done; }
    if (!args_str(a, "--format", NULL)) { rc = inca_fail(INCA_EINVAL, "--format ogb|npz|npy is required"); goto done; }
    if ((rc = export_format_parse(args_str(a, "--format", NULL), &fmt))) goto done;
    if (fmt != EXPORT_OGB && args_has(a, "--split-name")) {   /* npz and npy have no split folder to name */
        rc = inca_fail(INCA_EINVAL, "--split-name: names the OGB layout's split folder; only with --format ogb");
        goto done;
    }
    const double t0 = inca_now();
    /* every named split comes along (the OGB layout writes them all); --split picks the default,
     * the one npz and npy carry */
    /* a shard holds one rank's rows of the layout, not a dataset (it said "no array 'rowptr'") */
    if (shard_is(args_pos(a, 0))) {
        rc = inca_fail(INCA_EINVAL, "%s: a shard of inca shard (one rank's rows), not a dataset: export the store it was "
                       "cut from", args_pos(a, 0));
        goto done;
    }
    if ((rc = shard_dir_explain(args_pos(a, 0)))) goto done;
    if ((rc = dataset_load_ex(args_pos(a, 0), DATASET_ALL_SPLITS, &d))) goto done;
    if ((rc = dataset_split_apply(args_pos(a, 0), args_str(a, "--split", NULL), 0, &d))) goto done;
    if (args_str(a, "--partition", NULL) && (rc = part_vector(args_pos(a, 0), args_str(a, "--partition", NULL), &d, &p, &part)))
        goto done;
    if ((rc = export_dataset_parts(&d, fmt, args_pos(a, 1), args_str(a, "--split-name", NULL), part, &st))) goto done;
    const double secs = inca_now() - t0;
    if (args_has(a, "--json")) {
        if ((rc = json_new(&j))) goto done;
        json_str(j, "store", args_pos(a, 0));
        json_str(j, "out", args_pos(a, 1));
        json_str(j, "format", args_str(a, "--format", NULL));
        json_int(j, "nodes", d.n);
        json_int(j, "features", d.f);
        json_int(j, "classes", d.c);
        json_int(j, "edges", d.adj.rowptr ? d.adj.nnz : 0);   /* directed, as every command's (ARCHITECTURE.md) */
        json_int(j, "edges_written", st.edges);               /* ogb: each undirected edge once */
        json_int(j, "files", st.files);
        json_int(j, "bytes", st.bytes);
        json_num(j, "seconds", secs);
        rc = json_write(j, stdout);
    } else
        printf("%s: %lld nodes, %lld features -> %s (%d files, %.1f MiB, %.2f s)\n", args_pos(a, 0), (long long)d.n,
               (long long)d.f, args_pos(a, 1), st.files, (double)st.bytes / (1 << 20), secs);
done:
    inca_free(part);
    partition_free(&p);
    json_free(&j);
    dataset_free(&d);
    args_free(&a);
    return rc;
}
