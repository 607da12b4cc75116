/* inca verify STORE [--json]: read every record and every chunk of every array, checking the
 * checksums and sizes (store_verify), then load the dataset with its content checks
 * (dataset_load; a shard of inca shard: shard_check). Exit 0 when everything holds, 2 naming the first bad value otherwise.
 * Tested in test_store_corrupt.c (byte flips in data.mdb) and test_store.c. */
#include "core/args.h"
#include "cli/commands.h"
#include "core/json.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/dataset.h"
#include "loaders/store.h"
#include "nn/shard.h"
#include <stdio.h>

int cmd_verify(int argc, char **argv) {
    static const char *const known[] = {"--json!", NULL};
    args_t *a = NULL;
    store_t *s = NULL;
    json_t *j = NULL;
    dataset_t d;
    dataset_init(&d);
    store_verify_stats_t st = {0};
    int rc = args_parse(argc, argv, known, &a);
    if (rc) return rc;
    const char *path = args_npos(a) == 1 ? args_pos(a, 0) : NULL;
    if (!path) { rc = inca_fail(INCA_EINVAL, "verify: expected exactly one STORE argument"); goto done; }
    double t0 = inca_now();
    rc = store_open(path, STORE_RDONLY, &s);
    if (!rc) rc = store_verify(s, &st);
    store_close(&s);
    double t_sums = inca_now() - t0;
    /* the named splits too (their ids against the node count); a shard: nn/shard.h */
    if (!rc) rc = shard_is(path) ? shard_check(path) : dataset_load_ex(path, DATASET_ALL_SPLITS, &d);
    double secs = inca_now() - t0;
    if (args_has(a, "--json")) {   /* one object also on failure; the message still goes to stderr */
        int jr = json_new(&j);
        if (jr) { rc = rc ? rc : jr; goto done; }
        json_str(j, "store", path);
        json_bool(j, "ok", rc == INCA_OK);
        if (rc) json_str(j, "error", inca_errmsg());
        json_int(j, "arrays", st.arrays);
        json_int(j, "chunks", st.chunks);
        json_int(j, "records", st.records);
        json_int(j, "side_files", st.files);
        json_int(j, "stray_side_files", st.stray_files);
        json_int(j, "bytes", st.bytes);
        json_num(j, "checksum_seconds", t_sums);
        json_num(j, "seconds", secs);
        jr = json_write(j, stdout);
        if (!rc) rc = jr;
    } else if (rc == INCA_OK) {
        printf("%s: ok (%lld arrays, %lld chunks, %lld side files, %lld records, %.1f MiB checked in %.3f s)\n", path,
               (long long)st.arrays, (long long)st.chunks, (long long)st.files, (long long)st.records,
               (double)st.bytes / (1 << 20), secs);
        if (st.stray_files)
            printf("%s: %lld side files no array names (left by an interrupted write; the next write removes them)\n",
                   path, (long long)st.stray_files);
    }
done:
    json_free(&j);
    dataset_free(&d);
    args_free(&a);
    return rc;
}
