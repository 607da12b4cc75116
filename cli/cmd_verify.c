/* inca verify STORE|SHARD_DIR [--json]: read every record and every chunk of every array, checking
 * the checksums and sizes (store_verify), then load the dataset with its content checks
 * (dataset_load; a shard of inca shard: shard_check). A folder of shards (inca shard --out DIR)
 * is verified shard by shard, the first bad one named, with the same output plus the shard and
 * rank counts. Exit 0 when everything holds, 2 naming the first bad value otherwise.
 * Tested in test_store_corrupt.c (byte flips in data.mdb), test_store.c and test_e2e_newcomer.c. */
#include "core/args.h"
#include "cli/commands.h"
#include "core/json.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/dataset.h"
#include "loaders/store.h"
#include "nn/shard.h"
#include <stdio.h>
#include <sys/stat.h>

enum { MAX_SHARDS = 4096 };   /* 64 ranks at most per job, a few jobs' shards in one folder */

/* One store (or one shard): checksums into *st and their time into *t_sums (added to), then
 * the contents. */
static int verify_one(const char *path, store_verify_stats_t *st, double *t_sums) {
    store_t *s = NULL;
    store_verify_stats_t one = {0};
    const double t0 = inca_now();
    int rc = store_open(path, STORE_RDONLY, &s);
    if (!rc) rc = store_verify(s, &one);
    store_close(&s);
    *t_sums += inca_now() - t0;
    st->arrays += one.arrays;
    st->chunks += one.chunks;
    st->records += one.records;
    st->bytes += one.bytes;
    st->files += one.files;
    st->stray_files += one.stray_files;
    if (rc) return rc;
    /* the named splits too (their ids against the node count); a shard: nn/shard.h */
    if (shard_is(path)) return shard_check(path);
    dataset_t d;
    dataset_init(&d);
    rc = dataset_load_ex(path, DATASET_ALL_SPLITS, &d);
    dataset_free(&d);
    return rc;
}

/* A folder of inca shard's stores (and no store of its own): how many, and their rank count P
 * (0 when the folder holds shards of several P). */
static int shard_folder(const char *path, int (*rr)[2], int *ranks) {
    char mdb[4200];
    struct stat sb;
    snprintf(mdb, sizeof mdb, "%s/data.mdb", path);
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode) || stat(mdb, &sb) == 0) return 0;
    const int n = shard_dir_list(path, rr, MAX_SHARDS);
    *ranks = n > 0 ? rr[0][1] : 0;
    for (int i = 1; i < n && i < MAX_SHARDS; i++)
        if (rr[i][1] != *ranks) *ranks = 0;
    return n < MAX_SHARDS ? n : MAX_SHARDS;
}

/* Every shard of the folder, in rank order; stops at the first bad one (its message names it).
 * rr is sorted by P then R: the shards of one rank count P are side by side, rr[first] the
 * first of them, and each set is checked against its own first shard's run (only the first
 * set was, so a folder whose second rank count mixed two runs passed). */
static int verify_shards(const char *dir, const int (*rr)[2], int n, store_verify_stats_t *st, double *t_sums) {
    int64_t job0 = 0;
    int first = 0;
    for (int i = 0; i < n; i++) {
        char p[4300];
        snprintf(p, sizeof p, "%s/rank-%d-of-%d.lmdb", dir, rr[i][0], rr[i][1]);
        int64_t job = 0;
        int rc = verify_one(p, st, t_sums);
        if (rc == INCA_OK) rc = shard_job(p, &job);
        if (rc) return rc;
        if (i > 0 && rr[i][1] != rr[i - 1][1]) first = i;   /* the next rank count's set */
        /* a job's shards come from one run (an interrupted one can leave old and new side by side) */
        if (i > first && job != job0)
            return inca_fail(INCA_EINVAL, "%s: rank-%d-of-%d.lmdb comes from another inca shard run than rank-%d-of-%d.lmdb "
                             "(one was interrupted?): run inca shard again", dir, rr[i][0], rr[i][1], rr[first][0],
                             rr[first][1]);
        if (i == first) job0 = job;
    }
    return INCA_OK;
}

static int print_json(const char *path, int rc, const store_verify_stats_t *st, int nshards, int ranks, double t_sums,
                      double secs) {
    json_t *j = NULL;
    int jr = json_new(&j);
    if (jr) return rc ? rc : jr;
    json_str(j, "store", path);
    json_bool(j, "ok", rc == INCA_OK);
    if (rc) json_str(j, "error", inca_errmsg());
    if (nshards > 0) {   /* a shard folder: how many stores were checked, for a job of how many ranks */
        json_int(j, "shards", nshards);
        if (ranks > 0) json_int(j, "ranks", ranks);
        else json_null(j, "ranks");
    }
    json_int(j, "arrays", st->arrays);
    json_int(j, "chunks", st->chunks);
    json_int(j, "records", st->records);
    json_int(j, "side_files", st->files);
    json_int(j, "stray_side_files", st->stray_files);
    json_int(j, "bytes", st->bytes);
    json_num(j, "checksum_seconds", t_sums);
    json_num(j, "seconds", secs);
    jr = json_write(j, stdout);
    json_free(&j);
    return rc ? rc : jr;
}

static void print_human(const char *path, const store_verify_stats_t *st, int nshards, int ranks, double secs) {
    char what[160] = "";
    if (nshards > 0 && ranks > 0)
        snprintf(what, sizeof what, "%d shard%s of a %d-rank job%s, ", nshards, nshards == 1 ? "" : "s", ranks,
                 nshards < ranks ? " (the others are not in this folder)" : "");
    else if (nshards > 0)
        snprintf(what, sizeof what, "%d shards of jobs of several rank counts, ", nshards);
    printf("%s: ok (%s%lld arrays, %lld chunks, %lld side files, %lld records, %.1f MiB checked in %.3f s)\n", path, what,
           (long long)st->arrays, (long long)st->chunks, (long long)st->files, (long long)st->records,
           (double)st->bytes / (1 << 20), secs);
    if (st->stray_files)
        printf("%s: %lld side files no array names (left by an interrupted write; the next write removes them)\n", path,
               (long long)st->stray_files);
}

int cmd_verify(int argc, char **argv) {
    static const char *const known[] = {"--json!", NULL};
    args_t *a = NULL;
    store_verify_stats_t st = {0};
    static int rr[MAX_SHARDS][2];
    int rc = args_parse(argc, argv, known, &a);
    if (rc) return rc;
    const char *path = args_npos(a) == 1 ? args_pos(a, 0) : NULL;
    if (!path) {
        rc = inca_fail(INCA_EINVAL, "expected exactly one STORE (or a folder of inca shard's stores)");
        args_free(&a);
        return rc;
    }
    const double t0 = inca_now();
    double t_sums = 0;
    int ranks = 0;
    const int nshards = shard_folder(path, rr, &ranks);
    /* an interrupted inca shard run's folder says so (it said "no inca store here") */
    if (nshards == 0) rc = shard_dir_explain(path);
    if (rc == INCA_OK)
        rc = nshards > 0 ? verify_shards(path, (const int (*)[2])rr, nshards, &st, &t_sums) : verify_one(path, &st, &t_sums);
    const double secs = inca_now() - t0;
    if (args_has(a, "--json")) rc = print_json(path, rc, &st, nshards, ranks, t_sums, secs);   /* also on failure */
    else if (rc == INCA_OK) print_human(path, &st, nshards, ranks, secs);
    args_free(&a);
    return rc;
}
