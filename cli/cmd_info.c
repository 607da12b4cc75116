/* inca info STORE [--json]: counts, dims, splits (the default and the named ones), stored partitionings, the arrays of their
 * partition-ordered layouts and size on disk.
 * Tested end to end in test_e2e_ingest.c (Cora's README numbers) and test_store.c. */
#include "core/args.h"
#include "cli/commands.h"
#include "cli/info.h"
#include "core/alloc.h"
#include "core/status.h"
#include "loaders/dataset.h"
#include "nn/shard.h"
#include <stdio.h>
#include <string.h>

/* One stored partitioning's name: a string in the open JSON array ctx, or (ctx NULL) printed
 * after a space. */
static int part_name(void *ctx, const char *key, const void *val, size_t len) {
    (void)val; (void)len;
    const char *name = key + strlen("part:");
    if (ctx) json_str(ctx, NULL, name);
    else printf(" %s", name);
    return 0;
}

/* One array of a partition-ordered layout (nn/layout.h), as "P/FN/x", "P/FN/m0-gcn-fp32" or
 * "P/adj-gcn" (an adjacency once, by its values array): into ctx's JSON array or printed. */
static int layout_name(void *ctx, const char *key, const void *val, size_t len) {
    (void)val; (void)len;
    const char *name = key + strlen("array:layout/");
    const size_t n = strlen(name);
    char buf[256];
    /* an adjacency's other arrays, and the mark that its graph is symmetric (nn/layout.c), are
     * not layouts of their own (the mark listed adj-gcn twice) */
    if ((n >= 7 && strcmp(name + n - 7, "/rowptr") == 0) || (n >= 4 && strcmp(name + n - 4, "/col") == 0) ||
        (n >= 10 && strcmp(name + n - 10, "/symmetric") == 0))
        return 0;
    snprintf(buf, sizeof buf, "%.*s", (int)(n >= 4 && strcmp(name + n - 4, "/val") == 0 ? n - 4 : n), name);
    if (ctx) json_str(ctx, NULL, buf);
    else printf(" %s", buf);
    return 0;
}

void info_splits_json(json_t *j, const int64_t split_n[3]) {
    json_obj_begin(j, "splits");
    json_int(j, "train", split_n[0]);
    json_int(j, "valid", split_n[1]);
    json_int(j, "test", split_n[2]);
    json_obj_end(j);
}

int info_add_json(store_t *s, json_t *j) {
    const store_meta_t *m = store_meta(s);
    json_int(j, "nodes", m->nodes);
    json_int(j, "edges", m->edges);
    json_int(j, "features", m->features);
    json_int(j, "classes", m->classes);
    json_int(j, "labeled", m->labeled);
    info_splits_json(j, m->split_n);
    dataset_split_info_t *sv = NULL;
    int ns = 0, rc = dataset_splits_list(s, &sv, &ns);
    if (rc) return rc;
    json_str(j, "split_name", sv[0].name[0] ? sv[0].name : NULL);   /* the default's (--split NAME) */
    json_arr_begin(j, "named_splits");   /* the others stored with it */
    for (int i = 1; i < ns; i++) {
        json_obj_begin(j, NULL);
        json_str(j, "name", sv[i].name);
        for (int sp = 0; sp < SPLIT_COUNT; sp++) json_int(j, dataset_split_names[sp], sv[i].n[sp]);
        json_obj_end(j);
    }
    json_arr_end(j);
    inca_free(sv);
    json_arr_begin(j, "partitions");
    rc = store_record_each(s, "part:", part_name, j);
    json_arr_end(j);
    json_arr_begin(j, "layouts");   /* the view loader's arrays (inca partition) */
    if (rc == INCA_OK) rc = store_record_each(s, "array:layout/", layout_name, j);
    json_arr_end(j);
    json_int(j, "store_bytes", store_disk_bytes(s) + store_side_bytes(s));
    json_int(j, "side_file_bytes", store_side_bytes(s));
    json_str(j, "source", m->source);
    json_int(j, "format_version", m->version);
    return rc;
}

/* A shard of inca shard says so, and which figures are whose: its meta holds the whole graph's
 * counts, its labels and splits only its own rows (info mixed the two without a word). Into j,
 * or printed when j is NULL. */
static void info_shard(const shard_desc_t *sd, json_t *j) {
    static const char *const scope = "nodes, edges, features and classes are the whole graph's; labeled and splits this "
                                     "rank's own rows";
    if (!j) {
        printf("shard       rank %d of %d: %lld own + %lld halo rows of %lld, %lld parts (%s)\n", sd->rank, sd->ranks,
               (long long)sd->own_rows, (long long)sd->halo_rows, (long long)sd->n, (long long)sd->parts, scope);
        return;
    }
    json_obj_begin(j, "shard");
    json_int(j, "rank", sd->rank);
    json_int(j, "ranks", sd->ranks);
    json_int(j, "parts", sd->parts);
    json_int(j, "own_rows", sd->own_rows);
    json_int(j, "halo_rows", sd->halo_rows);
    json_str(j, "scope", scope);
    json_obj_end(j);
}

int cmd_info(int argc, char **argv) {
    static const char *const known[] = {"--json!", NULL};
    args_t *a = NULL;
    store_t *s = NULL;
    json_t *j = NULL;
    int rc = args_parse(argc, argv, known, &a);
    if (rc) return rc;
    if (args_npos(a) != 1) { rc = inca_fail(INCA_EINVAL, "expected exactly one STORE argument"); goto done; }
    if ((rc = shard_dir_explain(args_pos(a, 0)))) goto done;   /* a folder of shards: which command reads it */
    rc = store_open(args_pos(a, 0), STORE_RDONLY, &s);
    if (rc) goto done;
    shard_desc_t sd;
    const int shard = shard_describe(args_pos(a, 0), &sd) == INCA_OK;
    inca_err_clear();   /* a store that is no shard: nothing to say */
    if (args_has(a, "--json")) {
        rc = json_new(&j);
        if (!rc) rc = info_add_json(s, j);
        if (!rc && shard) info_shard(&sd, j);
        if (!rc) rc = json_write(j, stdout);
        goto done;
    }
    const store_meta_t *m = store_meta(s);
    printf("store       %s (format v%u, %.1f MiB on disk)\n", args_pos(a, 0), m->version,
           (double)(store_disk_bytes(s) + store_side_bytes(s)) / (1 << 20));
    printf("source      %s\n", m->source);
    if (shard) info_shard(&sd, NULL);
    printf("nodes       %lld\n", (long long)m->nodes);
    printf("edges       %lld directed%s\n", (long long)m->edges, m->edges ? "" : " (no graph)");
    printf("features    %lld (float32)\n", (long long)m->features);
    printf("classes     %d\n", m->classes);
    printf("labeled     %lld\n", (long long)m->labeled);
    dataset_split_info_t *sv = NULL;
    int ns = 0;
    if ((rc = dataset_splits_list(s, &sv, &ns))) goto done;
    for (int i = 0; i < ns; i++)
        printf("%s train %lld / valid %lld / test %lld%s%s%s\n", i ? "            " : "splits     ", (long long)sv[i].n[0],
               (long long)sv[i].n[1], (long long)sv[i].n[2], sv[i].name[0] ? " (" : "", sv[i].name,
               sv[i].name[0] ? (i ? ")" : ", the default)") : "");
    inca_free(sv);
    printf("partitions ");
    rc = store_record_each(s, "part:", part_name, NULL);
    printf("\nlayouts    ");
    if (rc == INCA_OK) rc = store_record_each(s, "array:layout/", layout_name, NULL);
    printf("\n");
done:
    json_free(&j);
    store_close(&s);
    args_free(&a);
    return rc;
}
