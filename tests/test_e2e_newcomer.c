/* What a newcomer ran into (issue 31), end to end through the binary: every command's usage
 * errors carry one "inca CMD: " prefix and no second one; predict names a missing --checkpoint
 * folder first; a write that fails names the user's output path, never the temporary beside it,
 * and leaves nothing behind; inca verify checks a folder of shards; train on a shard folder
 * without mpirun names the mpirun it needs. (Truncated stores: test_store_corrupt.c; gen's
 * unreachable degrees: test_gen.c.) */
#include "testutil.h"
#include "core/status.h"
#include "core/util.h"
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *dir;
static char store[4200];

/* a small labelled graph with features, once for the whole suite (unchecked fixture) */
static void setup(void) {
    dir = tu_mkdtemp();
    ck_assert_ptr_nonnull(dir);
    snprintf(store, sizeof store, "%s/g.lmdb", dir);
    char args[4400];
    snprintf(args, sizeof args, "gen --kind csbm --nodes 600 --avg-degree 6 --features 8 --classes 3 --seed 1 --out '%s'",
             store);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
}
static void teardown(void) {
    tu_rmrf(dir);
    free(dir);
}

/* `inca <args>`: the exit status, and stderr asserted to be one line */
static int run_err(const char *args, char **err) {
    char *out = NULL;
    const int rc = tu_inca(args, &out, err);
    free(out);
    const size_t l = strlen(*err);
    ck_assert_msg(l > 0 && strchr(*err, '\n') == *err + l - 1, "inca %s: expected one stderr line: '%s'", args, *err);
    return rc;
}

/* entries of folder d whose name holds s (a temporary left behind: ".tmp") */
static int entries_with(const char *d, const char *s) {
    DIR *dh = opendir(d);
    int n = 0;
    for (struct dirent *e; dh && (e = readdir(dh));) n += strstr(e->d_name, s) != NULL;
    if (dh) closedir(dh);
    return n;
}

START_TEST(unknown_flag_one_prefix) {
    static const char *const cmds[] = {"ingest", "gen", "info", "verify", "partition", "train", "predict", "export",
                                       "shard", "prune"};
    char args[4400], want[256];
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char *err = NULL;
        snprintf(args, sizeof args, "%s '%s' --bogus", cmds[i], store);
        ck_assert_int_eq(run_err(args, &err), 2);
        snprintf(want, sizeof want, "inca %s: unknown flag '--bogus' (see 'inca %s --help')\n", cmds[i], cmds[i]);
        ck_assert_str_eq(err, want);
        free(err);
    }
    static const char *const benches[] = {"spmm", "gen", "loader", "epoch", "pruning", "knn", "scale"};
    for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++) {
        char *err = NULL;
        snprintf(args, sizeof args, "bench %s '%s' --bogus", benches[i], store);
        ck_assert_int_eq(run_err(args, &err), 2);
        snprintf(want, sizeof want, "inca bench: unknown flag for bench %s: '--bogus' (see 'inca bench --help')\n",
                 benches[i]);
        ck_assert_str_eq(err, want);
        free(err);
    }
    /* the other two parser errors (the first named a freed flag name) */
    char *err = NULL;
    snprintf(args, sizeof args, "train '%s' --json=1", store);
    ck_assert_int_eq(run_err(args, &err), 2);
    ck_assert_str_eq(err, "inca train: flag --json takes no value, got '1'\n");
    free(err);
    snprintf(args, sizeof args, "info '%s' --json --bogus=3", store);
    ck_assert_int_eq(run_err(args, &err), 2);
    ck_assert_str_eq(err, "inca info: unknown flag '--bogus' (see 'inca info --help')\n");
    free(err);
    snprintf(args, sizeof args, "train '%s' --epochs", store);
    ck_assert_int_eq(run_err(args, &err), 2);
    ck_assert_str_eq(err, "inca train: flag --epochs expects a value\n");
    free(err);
}
END_TEST

/* Usage errors the commands raise themselves (and gen's library checks): no "CMD: " or
 * "bench NAME: " after main's prefix. */
START_TEST(usage_errors_one_prefix) {
    static const struct { const char *cmd, *args; } bad[] = {
        {"gen", "gen --kind rmat --nodes 10 --avg-degree 2"},
        {"gen", "gen --kind csbm --nodes 10 --avg-degree 2 --classes 1 --out '%s/x'"},
        {"gen", "gen --kind csbm --nodes 100 --avg-degree 2 --split random:0.9,0.9,0 --out '%s/x'"},
        {"verify", "verify"},
        {"export", "export '%s/g.lmdb'"},
        {"ingest", "ingest '%s' --out '%s/x'"},
        {"predict", "predict '%s/g.lmdb'"},
        {"bench", "bench knn"},
        {"bench", "bench gen --classes -1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[9000], pre[64], dbl[64], *err = NULL;
        snprintf(args, sizeof args, bad[i].args, dir, dir);
        ck_assert_int_ne(run_err(args, &err), 0);
        snprintf(pre, sizeof pre, "inca %s: ", bad[i].cmd);
        snprintf(dbl, sizeof dbl, "%s: ", bad[i].cmd);
        ck_assert_msg(strncmp(err, pre, strlen(pre)) == 0, "inca %s: '%s'", args, err);
        const char *rest = err + strlen(pre);
        ck_assert_msg(strncmp(rest, dbl, strlen(dbl)) != 0 && strncmp(rest, "bench ", 6) != 0 &&
                      strncmp(rest, "gen csbm", 8) != 0,
                      "inca %s: a second prefix: '%s'", args, err);
        free(err);
    }
}
END_TEST

START_TEST(predict_names_missing_checkpoint_folder) {
    char args[16384], out[4300], missing[4300], file[4300];
    snprintf(out, sizeof out, "%s/x.npy", dir);
    snprintf(missing, sizeof missing, "%s/no_such_ckpt", dir);
    snprintf(file, sizeof file, "%s/g.lmdb/data.mdb", dir);
    /* with --out, and without it: the folder is what is wrong, so it is named first */
    for (int with_out = 1; with_out >= 0; with_out--) {
        char *err = NULL, want[4400];
        snprintf(args, sizeof args, "predict '%s' --checkpoint '%s'%s%s%s", store, missing, with_out ? " --out '" : "",
                 with_out ? out : "", with_out ? "'" : "");
        ck_assert_int_eq(run_err(args, &err), 2);
        snprintf(want, sizeof want, "inca predict: --checkpoint %s: no such folder", missing);
        ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
        ck_assert(!tu_exists(out));
        free(err);
    }
    char *err = NULL;
    snprintf(args, sizeof args, "predict '%s' --checkpoint '%s' --out '%s'", store, file, out);
    ck_assert_int_eq(run_err(args, &err), 2);
    ck_assert_msg(strstr(err, "not a folder") && strstr(err, file), "%s", err);
    ck_assert(!tu_exists(out));
    free(err);
}
END_TEST

/* args: printf format with the output path (%1$s) and the store (%2$s) */
static void check_write_error(const char *fmt, const char *outp) {
    char args[9000], *err = NULL;
    snprintf(args, sizeof args, fmt, outp, store);
    ck_assert_int_ne(run_err(args, &err), 0);
    ck_assert_msg(strstr(err, outp) && !strstr(err, ".tmp"), "inca %s: the message must name '%s' and no temporary: %s",
                  args, outp, err);
    free(err);
}

START_TEST(write_errors_name_the_users_path) {
    char ck[4300], notdir[4300], p[4400];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    ck_assert_int_eq(mkdir(ck, 0755), 0);   /* a checkpoint folder: predict gets as far as --out */
    snprintf(notdir, sizeof notdir, "%s/afile", dir);
    FILE *f = fopen(notdir, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    static const char *const fmts[] = {
        "export '%2$s' '%1$s' --format npz", "export '%2$s' '%1$s' --format npy", "export '%2$s' '%1$s' --format ogb",
        "gen --kind csbm --nodes 100 --avg-degree 3 --out '%1$s'",
        "ingest --format ogb '%2$s' --out '%1$s'",   /* refused before SRC is read */
        "shard '%2$s' --ranks 2 --parts 4 --out '%1$s'",
    };
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        snprintf(p, sizeof p, "%s/missing_dir/x%zu", dir, i);   /* a folder that does not exist */
        check_write_error(fmts[i], p);
        snprintf(p, sizeof p, "%s/x%zu", notdir, i);            /* a file where a folder should be */
        check_write_error(fmts[i], p);
    }
    char fmt[4500];
    snprintf(fmt, sizeof fmt, "predict '%%2$s' --checkpoint '%s' --out '%%1$s'", ck);
    snprintf(p, sizeof p, "%s/missing_dir/x.npy", dir);
    check_write_error(fmt, p);
    ck_assert_int_eq(entries_with(dir, ".tmp"), 0);
}
END_TEST

/* `inca <argv>` under RLIMIT_FSIZE (SIGXFSZ ignored: write() fails as on a full disk); its
 * stderr in *err (malloc'd), its exit status returned. */
static int run_limited(const char *const *argv, rlim_t limit, char **err) {
    char errpath[4300];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        const int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644), nul = open("/dev/null", O_WRONLY);
        if (fd < 0 || nul < 0) _exit(99);
        dup2(fd, 2);
        dup2(nul, 1);
        signal(SIGXFSZ, SIG_IGN);
        const struct rlimit rl = {limit, limit};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(98);
        execv(tu_bin(), (char *const *)argv);
        _exit(97);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    FILE *f = fopen(errpath, "rb");
    ck_assert_ptr_nonnull(f);
    *err = calloc(1, 65536);
    ck_assert_ptr_nonnull(*err);
    (void)!fread(*err, 1, 65535, f);
    fclose(f);
    remove(errpath);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

/* Out of room half way: the message names the output as the user gave it (the temporaries
 * being written are ours), and none is left behind. */
START_TEST(full_disk_names_the_users_path) {
    char sub[4300], g[4400], npz[4400], npy[4400], sh[4400];
    snprintf(sub, sizeof sub, "%s/full", dir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    snprintf(g, sizeof g, "%s/g.lmdb", sub);
    snprintf(npz, sizeof npz, "%s/x.npz", sub);
    snprintf(npy, sizeof npy, "%s/xd", sub);
    snprintf(sh, sizeof sh, "%s/sh", sub);
    const char *const runs[][12] = {
        {tu_bin(), "gen", "--kind", "csbm", "--nodes", "3000", "--avg-degree", "5", "--out", g, NULL},
        {tu_bin(), "export", store, npz, "--format", "npz", NULL},
        {tu_bin(), "export", store, npy, "--format", "npy", NULL},
        {tu_bin(), "shard", store, "--ranks", "2", "--parts", "4", "--out", sh, NULL},
    };
    const char *const outs[] = {g, npz, npy, sh};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char *err = NULL;
        const int rc = run_limited(runs[i], 16 << 10, &err);
        ck_assert_msg(rc == 1, "%s %s: exit %d: %s", runs[i][1], outs[i], rc, err);
        ck_assert_msg(strstr(err, outs[i]) && !strstr(err, ".tmp"), "%s: the message must name '%s' and no temporary: %s",
                      runs[i][1], outs[i], err);
        free(err);
    }
    ck_assert_int_eq(entries_with(sub, ".tmp"), 0);
    ck_assert_int_eq(entries_with(sh, ".tmp"), 0);
}
END_TEST

START_TEST(verify_checks_a_shard_folder) {
    char sh[4300], args[9000], *out = NULL, *err = NULL;
    snprintf(sh, sizeof sh, "%s/shards", dir);
    snprintf(args, sizeof args, "shard '%s' --ranks 2 --parts 4 --out '%s'", store, sh);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "verify '%s'", sh);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    ck_assert_msg(strstr(out, "ok (2 shards of a 2-rank job"), "%s / %s", out, err);
    free(out);
    free(err);
    snprintf(args, sizeof args, "verify '%s' --json", sh);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    cJSON *j = tu_json_last(out);
    ck_assert(cJSON_IsTrue(tu_json_get(j, "ok", cJSON_True | cJSON_False)));
    ck_assert_int_eq((int)tu_json_dbl(j, "shards"), 2);
    ck_assert_int_eq((int)tu_json_dbl(j, "ranks"), 2);
    ck_assert(tu_json_dbl(j, "arrays") >= 2 && tu_json_dbl(j, "bytes") > 0);
    /* the folder's counts are the sums of its shards' counts, each shard verified alone */
    static const char *const counts[] = {"arrays", "chunks", "records", "side_files", "bytes"};
    double sum[5] = {0};
    for (int r = 0; r < 2; r++) {
        char *o1 = NULL, *e1 = NULL;
        snprintf(args, sizeof args, "verify '%s/rank-%d-of-2.lmdb' --json", sh, r);
        ck_assert_int_eq(tu_inca(args, &o1, &e1), 0);
        cJSON *j1 = tu_json_last(o1);
        ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(j1, "shards"));   /* one store, not a folder */
        for (int k = 0; k < 5; k++) sum[k] += tu_json_dbl(j1, counts[k]);
        cJSON_Delete(j1);
        free(o1);
        free(e1);
    }
    for (int k = 0; k < 5; k++)
        ck_assert_msg(tu_json_dbl(j, counts[k]) == sum[k], "%s: the folder says %g, its shards %g", counts[k],
                      tu_json_dbl(j, counts[k]), sum[k]);
    cJSON_Delete(j);
    free(out);
    free(err);
    /* shards of a 2-rank and a 3-rank job in one folder: 5 shards, of no one rank count */
    char mixed[4300];
    snprintf(mixed, sizeof mixed, "%s/shards-mixed", dir);
    for (int p = 2; p <= 3; p++) {
        snprintf(args, sizeof args, "shard '%s' --ranks %d --parts 6 --out '%s'", store, p, mixed);
        ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    }
    snprintf(args, sizeof args, "verify '%s' --json", mixed);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    j = tu_json_last(out);
    ck_assert(cJSON_IsTrue(tu_json_get(j, "ok", cJSON_True | cJSON_False)));
    ck_assert_int_eq((int)tu_json_dbl(j, "shards"), 5);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "ranks")));
    cJSON_Delete(j);
    free(out);
    free(err);
    snprintf(args, sizeof args, "verify '%s'", mixed);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    ck_assert_msg(strstr(out, "ok (5 shards of jobs of several rank counts"), "%s / %s", out, err);
    free(out);
    free(err);
    /* a bad shard fails the folder, named */
    char bad[4400];
    snprintf(bad, sizeof bad, "%s/rank-1-of-2.lmdb/data.mdb", sh);
    ck_assert_int_eq(truncate(bad, 100), 0);
    snprintf(args, sizeof args, "verify '%s'", sh);
    ck_assert_int_eq(run_err(args, &err), 2);
    ck_assert_msg(strstr(err, "rank-1-of-2.lmdb") && strstr(err, "truncated"), "%s", err);
    free(err);
}
END_TEST

/* inca shard --json: without --parts the shards are cut by metis-40-s0, the partitioning a
 * train run without --parts reads (train --help: --parts K [40]); with --partition NAME by that
 * partitioning, whose part count the JSON reports; --parts 600 (one node a part) is accepted;
 * every node is owned once (the store's 600);
 * each shard's bytes are what inca info says that shard takes, and "bytes" is their sum. */
static void shard_json_case(const char *flags, const char *sub, int parts, const char *partition) {
    char sh[4300], args[9000], *out = NULL, *err = NULL;
    snprintf(sh, sizeof sh, "%s/%s", dir, sub);
    snprintf(args, sizeof args, "shard '%s' --ranks 2 --out '%s' %s --json", store, sh, flags);
    ck_assert_msg(tu_inca(args, &out, &err) == 0, "%s", err);
    cJSON *j = tu_json_last(out);
    ck_assert_int_eq((int)tu_json_dbl(j, "ranks"), 2);
    ck_assert_int_eq((int)tu_json_dbl(j, "parts"), parts);
    if (partition) ck_assert_str_eq(tu_json_get(j, "partition", cJSON_String)->valuestring, partition);
    else ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "partition")));
    const cJSON *shards = tu_json_get(j, "shards", cJSON_Array);
    ck_assert_int_eq(cJSON_GetArraySize(shards), 2);
    double own = 0, bytes = 0;
    char cut[64];   /* the partitioning each shard holds */
    if (partition) snprintf(cut, sizeof cut, "%s", partition);
    else snprintf(cut, sizeof cut, "metis-%d-s0", parts);
    for (int r = 0; r < 2; r++) {
        const cJSON *e = cJSON_GetArrayItem(shards, r);
        ck_assert_int_eq((int)tu_json_dbl(e, "rank"), r);
        own += tu_json_dbl(e, "own_rows");
        bytes += tu_json_dbl(e, "bytes");
        snprintf(args, sizeof args, "%s/rank-%d-of-2.lmdb", sh, r);
        cJSON *info = tu_json_parse(tu_info_json(args));
        ck_assert_msg(tu_json_dbl(info, "store_bytes") == tu_json_dbl(e, "bytes"), "rank %d: %g bytes, inca info says %g", r,
                      tu_json_dbl(e, "bytes"), tu_json_dbl(info, "store_bytes"));
        const cJSON *parr = tu_json_get(info, "partitions", cJSON_Array);   /* the one it was cut by */
        ck_assert_int_eq(cJSON_GetArraySize(parr), 1);
        ck_assert_str_eq(cJSON_GetArrayItem(parr, 0)->valuestring, cut);
        cJSON_Delete(info);
    }
    ck_assert_double_eq(own, 600);
    ck_assert_double_eq(tu_json_dbl(j, "bytes"), bytes);
    cJSON_Delete(j);
    free(out);
    free(err);
}

START_TEST(shard_json_parts_and_bytes) {
    shard_json_case("", "sh-default", 40, NULL);
    shard_json_case("--parts 600", "sh-600", 600, NULL);   /* one node a part: the most the 600 nodes allow */
    char args[9000];
    snprintf(args, sizeof args, "partition '%s' --parts 5 --no-layout --quiet", store);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    shard_json_case("--partition metis-5-s0", "sh-named", 5, "metis-5-s0");
}
END_TEST

START_TEST(train_shard_folder_names_mpirun) {
    char sh[4300], args[9000], *err = NULL;
    snprintf(sh, sizeof sh, "%s/shards3", dir);
    snprintf(args, sizeof args, "shard '%s' --ranks 3 --parts 6 --out '%s'", store, sh);
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "train '%s' --epochs 1", sh);
    ck_assert_int_eq(run_err(args, &err), 2);
    ck_assert_msg(strstr(err, "mpirun -np 3 inca train") && strstr(err, "original store") && !strstr(err, "--ranks 1"),
                  "%s", err);
    free(err);
}
END_TEST

/* A folder of shards of two rank counts: each count's set is checked for one inca shard run,
 * not only the first (smallest) count's. A consistent 2-rank set beside a 3-rank set whose
 * rank 1 comes from another run was verified ok, though the 3-rank set alone is refused and
 * mpirun -np 3 inca train refuses it. */
START_TEST(verify_checks_every_rank_counts_run) {
    char a[4300], b[4300], args[16384], *err = NULL;
    snprintf(a, sizeof a, "%s/runs-a", dir);
    snprintf(b, sizeof b, "%s/runs-b", dir);
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "shard '%s' --ranks 3 --parts 6 --out '%s'", store, k ? b : a);
        ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    }
    snprintf(args, sizeof args, "rm -r '%s/rank-1-of-3.lmdb' && cp -r '%s/rank-1-of-3.lmdb' '%s/'", b, a, b);
    ck_assert_int_eq(tu_sh(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "shard '%s' --ranks 2 --parts 6 --out '%s'", store, b);   /* a whole 2-rank set beside */
    ck_assert_int_eq(tu_inca(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "verify '%s'", b);
    ck_assert_int_eq(run_err(args, &err), 2);
    ck_assert_msg(strstr(err, "rank-1-of-3.lmdb comes from another inca shard run than rank-0-of-3.lmdb"), "%s", err);
    free(err);
}
END_TEST

/* the library helpers behind the messages above */
START_TEST(untemp_and_out_check) {
    inca_fail(INCA_EIO, "a/x.tmp-12/raw/e.csv.gz: write failed (a/x.tmp-12)");
    ck_assert_int_eq(inca_err_untemp(INCA_EIO, "a/x.tmp-12", "a/x"), INCA_EIO);
    ck_assert_str_eq(inca_errmsg(), "a/x/raw/e.csv.gz: write failed (a/x)");
    char p[4400];
    snprintf(p, sizeof p, "%s/nope/y.npy", dir);
    ck_assert_int_eq(inca_out_check(p), INCA_ENOTFOUND);
    ck_assert_msg(strstr(inca_errmsg(), "folder") && strstr(inca_errmsg(), "does not exist"), "%s", inca_errmsg());
    snprintf(p, sizeof p, "%s/y.npy", dir);
    ck_assert_int_eq(inca_out_check(p), INCA_OK);
    ck_assert_int_eq(inca_out_check("y.npy"), INCA_OK);   /* the working folder */
}
END_TEST

int main(void) {
    Suite *s = suite_create("e2e_newcomer");
    TCase *t = tcase_create("newcomer");
    tcase_set_timeout(t, 300);
    tcase_add_unchecked_fixture(t, setup, teardown);
    tcase_add_test(t, unknown_flag_one_prefix);
    tcase_add_test(t, usage_errors_one_prefix);
    tcase_add_test(t, predict_names_missing_checkpoint_folder);
    tcase_add_test(t, write_errors_name_the_users_path);
    tcase_add_test(t, full_disk_names_the_users_path);
    tcase_add_test(t, verify_checks_a_shard_folder);
    tcase_add_test(t, train_shard_folder_names_mpirun);
    tcase_add_test(t, shard_json_parts_and_bytes);
    tcase_add_test(t, untemp_and_out_check);
    tcase_add_test(t, verify_checks_every_rank_counts_run);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
