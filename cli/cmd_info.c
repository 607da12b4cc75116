/* inca info STORE [--json]: counts, dims, splits, stored partitionings and size on disk.
 * Tested end to end in test_e2e_ingest.c (Cora's README numbers) and test_store.c. */
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/info.h"
#include "core/alloc.h"
#include "core/status.h"
#include <stdio.h>
#include <string.h>

typedef struct { char *buf; size_t len, cap; int n; int failed; } names_t;

static int collect_part(void *ctx, const char *key, const void *val, size_t len) {
    (void)val; (void)len;
    names_t *nm = ctx;
    const char *name = key + strlen("part:");
    size_t need = nm->len + strlen(name) + 4;
    if (need > nm->cap) {
        size_t nc = need * 2;
        char *nb = inca_realloc(nm->buf, nc);
        if (!nb) { nm->failed = 1; return 1; }
        nm->buf = nb;
        nm->cap = nc;
    }
    nm->len += (size_t)sprintf(nm->buf + nm->len, "%s\"%s\"", nm->n++ ? "," : "", name);
    return 0;
}

/* JSON array of partition names into *out (caller frees). */
static int partitions_json(store_t *s, char **out) {
    names_t nm = {0};
    nm.cap = 64;
    nm.buf = inca_malloc(nm.cap);
    if (!nm.buf) return INCA_ENOMEM;
    nm.len = (size_t)sprintf(nm.buf, "[");
    int rc = store_record_each(s, "part:", collect_part, &nm);
    if (!rc && nm.failed) rc = INCA_ENOMEM;
    if (!rc && nm.len + 2 > nm.cap) {
        char *nb = inca_realloc(nm.buf, nm.len + 2);
        if (!nb) rc = INCA_ENOMEM;
        else { nm.buf = nb; nm.cap = nm.len + 2; }
    }
    if (rc) { inca_free(nm.buf); return rc; }
    strcpy(nm.buf + nm.len, "]");
    *out = nm.buf;
    return INCA_OK;
}

int info_add_json(store_t *s, json_t *j) {
    const store_meta_t *m = store_meta(s);
    char splits[256], *parts = NULL;
    int rc = partitions_json(s, &parts);
    if (rc) return rc;
    snprintf(splits, sizeof splits, "{\"train\":%lld,\"valid\":%lld,\"test\":%lld}", (long long)m->split_n[0],
             (long long)m->split_n[1], (long long)m->split_n[2]);
    json_int(j, "nodes", m->nodes);
    json_int(j, "edges", m->edges);
    json_int(j, "features", m->features);
    json_int(j, "classes", m->classes);
    json_int(j, "labeled", m->labeled);
    json_raw(j, "splits", splits);
    json_raw(j, "partitions", parts);
    json_int(j, "store_bytes", store_disk_bytes(s));
    json_str(j, "source", m->source);
    json_int(j, "format_version", m->version);
    inca_free(parts);
    return INCA_OK;
}

int cmd_info(int argc, char **argv) {
    static const char *const known[] = {"--json!", NULL};
    args_t *a = NULL;
    store_t *s = NULL;
    json_t *j = NULL;
    char *parts = NULL;
    int rc = args_parse(argc, argv, known, &a);
    if (rc) return rc;
    if (args_npos(a) != 1) { rc = inca_fail(INCA_EINVAL, "expected exactly one STORE argument"); goto done; }
    rc = store_open(args_pos(a, 0), STORE_RDONLY, &s);
    if (rc) goto done;
    if (args_has(a, "--json")) {
        rc = json_new(&j);
        if (!rc) rc = info_add_json(s, j);
        if (!rc) rc = json_write(j, stdout);
        goto done;
    }
    const store_meta_t *m = store_meta(s);
    rc = partitions_json(s, &parts);
    if (rc) goto done;
    printf("store       %s (format v%u, %.1f MiB on disk)\n", args_pos(a, 0), m->version,
           (double)store_disk_bytes(s) / (1 << 20));
    printf("source      %s\n", m->source);
    printf("nodes       %lld\n", (long long)m->nodes);
    printf("edges       %lld directed%s\n", (long long)m->edges, m->edges ? "" : " (no graph)");
    printf("features    %lld (float32)\n", (long long)m->features);
    printf("classes     %d\n", m->classes);
    printf("labeled     %lld\n", (long long)m->labeled);
    printf("splits      train %lld / valid %lld / test %lld\n", (long long)m->split_n[0], (long long)m->split_n[1],
           (long long)m->split_n[2]);
    printf("partitions  %s\n", parts);
done:
    inca_free(parts);
    json_free(&j);
    store_close(&s);
    args_free(&a);
    return rc;
}
