/* SIGKILL at seeded random moments during `inca ingest`, `inca partition`, `inca prune --out` and
 * `inca train --checkpoint` (20 kills each, spread over the command's measured run time), then a
 * check of what was left: every store and checkpoint opens as its last committed state (compared
 * with the output of an uninterrupted run) or is absent, and a training resumed after a kill ends
 * bit-identical to an uninterrupted one. A one-line summary per command goes to stdout.
 * Also: a checkpoint written under RLIMIT_FSIZE (a full disk) fails with exit 1 and a message and
 * keeps the previous checkpoint. Works under /dev/shm when it exists (kills do not need a disk). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "testutil.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "graph/partition.h"
#include "loaders/partition_store.h"
#include "loaders/dataset.h"
#include "loaders/store.h"
#include "loaders/npy.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NKILL 20
#define MAXARG 48

static double g_t0;   /* start of the current test, for the summary lines */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A scratch folder on tmpfs when there is one: the test kills processes, it does not need a disk. */
static char *scratch(void) {
    struct stat st;
    const char *old = getenv("TMPDIR");
    char *keep = old ? strdup(old) : NULL;
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0) setenv("TMPDIR", "/dev/shm", 1);
    char *d = tu_mkdtemp();
    if (keep) setenv("TMPDIR", keep, 1);
    else unsetenv("TMPDIR");
    free(keep);
    ck_assert_ptr_nonnull(d);
    return d;
}

/* argv for $INCA_BIN from a printf format, split at spaces (no quoting: paths have none). */
typedef struct { char buf[4096]; char *argv[MAXARG]; } cmd_t;
static void cmd_make(cmd_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cmd_make(cmd_t *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(c->buf, sizeof c->buf, fmt, ap);
    va_end(ap);
    ck_assert(k > 0 && (size_t)k < sizeof c->buf);
    int n = 0;
    c->argv[n++] = (char *)tu_bin();
    for (char *s = strtok(c->buf, " "); s; s = strtok(NULL, " ")) {
        ck_assert_int_lt(n, MAXARG - 1);
        c->argv[n++] = s;
    }
    c->argv[n] = NULL;
}

/* Start the command with stdout to `out` and stderr to `out`.err (both /dev/null when out is
 * NULL); optionally under a file-size limit with SIGXFSZ ignored, so a write past it fails with
 * EFBIG as on a full disk. */
static pid_t spawn(const cmd_t *c, const char *out, rlim_t fsize) {
    char err[4200];
    snprintf(err, sizeof err, "%s.err", out ? out : "");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(out ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || fe < 0) _exit(126);
        dup2(fd, 1);
        dup2(fe, 2);
        if (fsize) {
            struct rlimit rl = {fsize, fsize};
            signal(SIGXFSZ, SIG_IGN);
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(126);
        }
        execv(c->argv[0], c->argv);
        _exit(127);
    }
    return pid;
}

/* Run to the end; returns the exit status (-1 when signalled) and the wall time in *secs. */
static int run_wait(const cmd_t *c, const char *out, rlim_t fsize, double *secs) {
    double t0 = now_s();
    pid_t pid = spawn(c, out, fsize);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    if (secs) *secs = now_s() - t0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Start, sleep `delay` seconds, SIGKILL. Returns 1 when the kill landed, 0 when the command had
 * already finished (it must then have succeeded). */
static int run_kill(const cmd_t *c, double delay) {
    pid_t pid = spawn(c, NULL, 0);
    struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);   /* the child is at worst a zombie until waitpid: the pid is still ours */
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st)) return 1;
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: exit %d without a kill", c->argv[1], WEXITSTATUS(st));
    return 0;
}

/* NKILL delays over [0, 1.3 T), T the longest of the measured runs: one per stratum, seeded, so
 * the kills cover the whole run (start-up, work, writing, commit, and a few after the end) and
 * every run of the test tries the same fractions of T. */
static void delays_make(const double *t, int nt, uint64_t seed, double *d) {
    double mx = 0;
    for (int i = 0; i < nt; i++) mx = t[i] > mx ? t[i] : mx;
    for (int i = 0; i < NKILL; i++) {
        uint64_t r = rng_hash64(seed, 0, (uint64_t)i);
        double u = (double)(r >> 11) * 0x1.0p-53;
        d[i] = 1.3 * mx * ((double)i + u) / NKILL;
    }
}

static int same_bytes(const void *a, const void *b, size_t n) { return n == 0 || (a && b && memcmp(a, b, n) == 0); }

/* 1 when the two datasets hold the same graph, features, labels and splits, bit for bit. */
static int dataset_same(const dataset_t *a, const dataset_t *b) {
    if (a->n != b->n || a->f != b->f || a->c != b->c || a->adj.nnz != b->adj.nnz) return 0;
    if (!same_bytes(a->adj.rowptr, b->adj.rowptr, a->adj.rowptr ? (size_t)(a->n + 1) * 8 : 0) ||
        !same_bytes(a->adj.col, b->adj.col, (size_t)a->adj.nnz * 4) ||
        !same_bytes(a->x, b->x, (size_t)(a->n * a->f) * 4) || !same_bytes(a->y, b->y, a->y ? (size_t)a->n * 4 : 0))
        return 0;
    for (int s = 0; s < SPLIT_COUNT; s++)
        if (a->split_n[s] != b->split_n[s] || !same_bytes(a->split[s], b->split[s], (size_t)a->split_n[s] * 8)) return 0;
    return 1;
}

/* State of a store path after a kill: 0 absent, 1 equal to `ref`; anything else fails the test
 * (a store that is refused with a message would be acceptable by the issue, but every store
 * inca writes is committed atomically, so here it must not happen either). */
static int store_state(const char *path, const dataset_t *ref, const char *what, int i) {
    if (!tu_exists(path)) return 0;
    dataset_t d;
    int rc = dataset_load(path, &d);
    ck_assert_msg(rc == INCA_OK, "%s kill %d: %s exists but does not open: %s", what, i, path, inca_errmsg());
    ck_assert_msg(dataset_same(&d, ref), "%s kill %d: %s differs from an uninterrupted run's", what, i, path);
    dataset_free(&d);
    return 1;
}

static void summary(const char *what, int killed, int finished, int absent, int complete) {
    printf("kill %-10s %d kills tried: %d landed, %d after the end; states: %d absent, %d complete, 0 corrupt "
           "(%.1f s)\n", what, NKILL, killed, finished, absent, complete, now_s() - g_t0);
    fflush(stdout);
}

static char *g_dir, g_cora[4096], g_store[4096];
static dataset_t g_ref;   /* Cora as ingested */

static void setup(void) {
    g_t0 = now_s();
    g_dir = scratch();
    snprintf(g_cora, sizeof g_cora, "%s/data/cora", tu_src());
    snprintf(g_store, sizeof g_store, "%s/cora.lmdb", g_dir);
    cmd_t c;
    cmd_make(&c, "ingest --format ogb %s --out %s", g_cora, g_store);
    ck_assert_int_eq(run_wait(&c, NULL, 0, NULL), 0);
    ck_assert_int_eq(dataset_load(g_store, &g_ref), INCA_OK);
}

static void teardown(void) {
    dataset_free(&g_ref);
    tu_rmrf(g_dir);
    free(g_dir);
}

static void copy_store(const char *from, const char *to) {
    char *cmd = NULL;
    ck_assert_int_ge(asprintf(&cmd, "rm -rf '%s' && cp -r '%s' '%s'", to, from, to), 0);
    ck_assert_int_eq(tu_sh(cmd, NULL, NULL), 0);
    free(cmd);
}

START_TEST(test_kill_ingest) {
    char out[4096];
    snprintf(out, sizeof out, "%s/k.lmdb", g_dir);
    cmd_t c;
    cmd_make(&c, "ingest --format ogb %s --out %s --force", g_cora, out);
    double t[2], d[NKILL];
    for (int k = 0; k < 2; k++) ck_assert_int_eq(run_wait(&c, NULL, 0, &t[k]), 0);
    delays_make(t, 2, 1, d);
    int killed = 0, absent = 0, complete = 0;
    for (int i = 0; i < NKILL; i++) {
        if (i % 2 == 0) tu_rmrf(out);   /* odd kills replace a committed store (--force) */
        else if (!tu_exists(out)) copy_store(g_store, out);
        int had = tu_exists(out);
        killed += run_kill(&c, d[i]);
        int s = store_state(out, &g_ref, "ingest", i);
        ck_assert_msg(s || !had, "ingest kill %d: the store committed before was lost", i);
        absent += !s;
        complete += s;
    }
    summary("ingest", killed, NKILL - killed, absent, complete);
    /* the temporary folders that killed saves left beside the store are removed by the next one */
    char *cmd = NULL, *ls = NULL;
    ck_assert_int_ge(asprintf(&cmd, "ls -d '%s'.tmp-* 2>/dev/null | wc -l", out), 0);
    ck_assert_int_eq(tu_sh(cmd, &ls, NULL), 0);
    printf("kill ingest     %ld temporary folders left by the kills\n", strtol(ls, NULL, 10));
    free(ls);
    tu_rmrf(out);
    ck_assert_int_eq(run_wait(&c, NULL, 0, NULL), 0);
    ck_assert_int_eq(store_state(out, &g_ref, "ingest", NKILL), 1);
    ck_assert_int_eq(tu_sh(cmd, &ls, NULL), 0);
    ck_assert_msg(strtol(ls, NULL, 10) == 0, "temporary folders left after a clean ingest: %s", ls);
    free(ls);
    free(cmd);
}
END_TEST

START_TEST(test_kill_partition) {
    char ref[4096], work[4096];
    snprintf(ref, sizeof ref, "%s/ref.lmdb", g_dir);
    snprintf(work, sizeof work, "%s/p.lmdb", g_dir);
    copy_store(g_store, ref);
    cmd_t c;
    cmd_make(&c, "partition %s --parts 40 --method metis --seed 0", ref);
    double t[3], d[NKILL];
    for (int k = 0; k < 3; k++) {   /* each on a fresh copy, as the kills run */
        copy_store(g_store, ref);
        ck_assert_int_eq(run_wait(&c, NULL, 0, &t[k]), 0);
    }
    store_t *s;
    partition_t pref, p;
    ck_assert_int_eq(store_open(ref, STORE_RDONLY, &s), INCA_OK);
    ck_assert_int_eq(store_partition_load(s, "metis-40-s0", &pref), INCA_OK);
    store_close(&s);
    delays_make(t, 3, 2, d);
    cmd_make(&c, "partition %s --parts 40 --method metis --seed 0", work);
    int killed = 0, absent = 0, complete = 0;
    for (int i = 0; i < NKILL; i++) {
        copy_store(g_store, work);
        killed += run_kill(&c, d[i]);
        ck_assert_int_eq(store_state(work, &g_ref, "partition", i), 1);   /* the data are untouched */
        ck_assert_msg(store_open(work, STORE_RDONLY, &s) == INCA_OK, "partition kill %d: %s", i, inca_errmsg());
        int rc = store_partition_load(s, "metis-40-s0", &p);
        ck_assert_msg(rc == INCA_OK || rc == INCA_ENOTFOUND, "partition kill %d: %s", i, inca_errmsg());
        inca_err_clear();
        if (rc == INCA_OK) {
            ck_assert(p.n == pref.n && p.k == pref.k && same_bytes(p.perm, pref.perm, (size_t)p.n * 8) &&
                      same_bytes(p.bounds, pref.bounds, (size_t)(p.k + 1) * 8));
            partition_free(&p);
        }
        store_close(&s);
        absent += rc != INCA_OK;
        complete += rc == INCA_OK;
    }
    partition_free(&pref);
    summary("partition", killed, NKILL - killed, absent, complete);
}
END_TEST

/* An index file after a kill: absent, or the reference indices (both the text and .npy forms). */
static int indices_state(const char *path, const int64_t *ref, int64_t nref, int i) {
    if (!tu_exists(path)) return 0;
    int64_t *ids = NULL, n = 0;
    ck_assert_msg(npy_read_indices(path, &ids, &n) == INCA_OK, "prune kill %d: %s", i, inca_errmsg());
    ck_assert_msg(n == nref && same_bytes(ids, ref, (size_t)n * 8), "prune kill %d: %s differs", i, path);
    inca_free(ids);
    return 1;
}

START_TEST(test_kill_prune) {
    char src[4096], out[4096], ind[4096], ref[4096], refind[4096], txt[4200], npy[4200];
    snprintf(src, sizeof src, "%s/src.lmdb", g_dir);
    snprintf(out, sizeof out, "%s/pruned.lmdb", g_dir);
    snprintf(ind, sizeof ind, "%s/ids", g_dir);
    snprintf(ref, sizeof ref, "%s/pruned-ref.lmdb", g_dir);
    snprintf(refind, sizeof refind, "%s/ids-ref", g_dir);
    copy_store(g_store, src);
    const char *args = "--labeled 0.05 --ssl labelprop --proxy-epochs 3 --score aum --select ccs --keep 0.3 --threads 1";
    cmd_t c;
    cmd_make(&c, "prune %s %s --out %s --indices %s --overwrite", src, args, ref, refind);
    double t[2], d[NKILL];
    for (int k = 0; k < 2; k++) ck_assert_int_eq(run_wait(&c, NULL, 0, &t[k]), 0);
    dataset_t pref;
    int64_t *ids = NULL, nids = 0;
    ck_assert_int_eq(dataset_load(ref, &pref), INCA_OK);
    snprintf(npy, sizeof npy, "%s.npy", refind);
    ck_assert_int_eq(npy_read_indices(npy, &ids, &nids), INCA_OK);
    ck_assert_int_gt(nids, 0);
    delays_make(t, 2, 3, d);
    snprintf(txt, sizeof txt, "%s", ind);
    snprintf(npy, sizeof npy, "%s.npy", ind);
    int killed = 0, absent = 0, complete = 0;
    for (int i = 0; i < NKILL; i++) {
        /* even kills: fresh outputs (prune refuses existing ones without --overwrite); odd kills:
         * --overwrite of a committed store, which must survive */
        int over = i % 2;
        if (over) copy_store(ref, out);
        else {
            tu_rmrf(out);
            unlink(txt);
            unlink(npy);
        }
        cmd_make(&c, "prune %s %s --out %s --indices %s%s", src, args, out, ind, over ? " --overwrite" : "");
        killed += run_kill(&c, d[i]);
        int s = store_state(out, &pref, "prune", i);
        ck_assert_msg(s || !over, "prune kill %d: the store committed before was lost", i);
        ck_assert_int_eq(store_state(src, &g_ref, "prune (source)", i), 1);
        indices_state(txt, ids, nids, i);
        indices_state(npy, ids, nids, i);
        absent += !s;
        complete += s;
    }
    dataset_free(&pref);
    inca_free(ids);
    summary("prune", killed, NKILL - killed, absent, complete);
}
END_TEST

/* The JSON numbers a resumed run must reproduce exactly. */
static void json_same(const char *a, const char *b, int i) {
    static const char *const keys[] = {"test_acc", "val_acc", "best_epoch", "epochs"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        double x = tu_json_num(a, keys[k]), y = tu_json_num(b, keys[k]);
        ck_assert_msg(x == y, "train kill %d: %s %.17g after resume, %.17g uninterrupted", i, keys[k], x, y);
    }
}

static char *slurp_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Checkpoint files after the fixed-size header (which holds the accumulated timings, the only
 * bytes allowed to differ): parameters, Adam moments, BatchNorm buffers, history tables. */
#define CKPT_HEADER_MAX 512
static void ckpt_same(const char *a, const char *b, int i) {
    size_t la, lb;
    char *x = slurp_file(a, &la), *y = slurp_file(b, &lb);
    ck_assert_msg(x && y && la == lb && la > CKPT_HEADER_MAX, "train kill %d: checkpoint sizes %zu / %zu", i, la, lb);
    ck_assert_msg(memcmp(x + CKPT_HEADER_MAX, y + CKPT_HEADER_MAX, la - CKPT_HEADER_MAX) == 0,
                  "train kill %d: the resumed run's final state differs from the uninterrupted one", i);
    free(x);
    free(y);
}

static const char *const train_args =
    "--model gcn --method incagg --parts 8 --batch-parts 2 --epochs 8 --threads 1 --seed 3 --json";

START_TEST(test_kill_train) {
    char ck[4096], ckref[4096], out[4096], refjson[4096], refckpt[4200], ckpt[4200];
    snprintf(ck, sizeof ck, "%s/ck", g_dir);
    snprintf(ckref, sizeof ckref, "%s/ck-ref", g_dir);
    snprintf(out, sizeof out, "%s/train.out", g_dir);
    snprintf(refjson, sizeof refjson, "%s/train-ref.out", g_dir);
    snprintf(refckpt, sizeof refckpt, "%s/run-0.ckpt", ckref);
    snprintf(ckpt, sizeof ckpt, "%s/run-0.ckpt", ck);
    cmd_t c;
    /* partition once, so that every run (killed or not) reads the same stored partitioning */
    cmd_make(&c, "partition %s --parts 8 --method metis --seed 0", g_store);
    ck_assert_int_eq(run_wait(&c, NULL, 0, NULL), 0);
    cmd_make(&c, "train %s %s --checkpoint %s", g_store, train_args, ckref);
    double t[2], d[NKILL];
    for (int k = 0; k < 2; k++) {
        tu_rmrf(ckref);
        ck_assert_int_eq(run_wait(&c, refjson, 0, &t[k]), 0);
    }
    size_t len;
    char *ref = slurp_file(refjson, &len);
    ck_assert_ptr_nonnull(ref);
    delays_make(t, 2, 4, d);
    int killed = 0, absent = 0, complete = 0;
    for (int i = 0; i < NKILL; i++) {
        tu_rmrf(ck);
        cmd_make(&c, "train %s %s --checkpoint %s", g_store, train_args, ck);
        killed += run_kill(&c, d[i]);
        int had = tu_exists(ckpt);
        cmd_make(&c, "train %s %s --checkpoint %s --resume", g_store, train_args, ck);
        int rc = run_wait(&c, out, 0, NULL);
        char *got = slurp_file(out, &len);
        ck_assert_msg(rc == 0, "train kill %d: the resumed run exits %d", i, rc);
        json_same(tu_last_line(got), tu_last_line(ref), i);
        ckpt_same(ckpt, refckpt, i);
        free(got);
        absent += !had;
        complete += had;
    }
    free(ref);
    summary("train", killed, NKILL - killed, absent, complete);
}
END_TEST

/* A full disk while a checkpoint is written: the file-size limit lets the first checkpoint
 * through and stops the second; the run must fail with exit 1 and one message, and the first
 * checkpoint must be intact (a resume without the limit continues from it to the reference). */
START_TEST(test_checkpoint_disk_full) {
    char ck[4096], out[4096], ckpt[4200], refjson[4096];
    snprintf(ck, sizeof ck, "%s/ck-full", g_dir);
    snprintf(out, sizeof out, "%s/full.out", g_dir);
    snprintf(ckpt, sizeof ckpt, "%s/run-0.ckpt", ck);
    snprintf(refjson, sizeof refjson, "%s/full-ref.out", g_dir);
    const char *args = "--model gcn --method full --epochs 6 --threads 1 --seed 5 --json";
    cmd_t c;
    cmd_make(&c, "train %s %s", g_store, args);
    ck_assert_int_eq(run_wait(&c, refjson, 0, NULL), 0);
    /* the size of one checkpoint of this run: write one (1 epoch) without a limit */
    cmd_make(&c, "train %s %s --checkpoint %s --epochs 1", g_store, args, ck);
    ck_assert_int_eq(run_wait(&c, NULL, 0, NULL), 0);
    size_t one;
    char *first = slurp_file(ckpt, &one);
    ck_assert_ptr_nonnull(first);
    /* a limit of half a checkpoint: resuming writes the next checkpoint and must fail on it
     * (--quiet: without the status line naming the resumed epoch, stderr is the error alone) */
    cmd_make(&c, "train %s %s --checkpoint %s --resume --quiet", g_store, args, ck);
    int rc = run_wait(&c, out, (rlim_t)(one / 2), NULL);
    size_t len;
    char errp[4200];
    snprintf(errp, sizeof errp, "%s.err", out);
    char *err = slurp_file(errp, &len);
    ck_assert_msg(rc == 1, "disk full: exit %d, expected 1: %s", rc, err);
    ck_assert_msg(strstr(err, "run-0.ckpt: cannot write") != NULL && strchr(err, '\n') == err + len - 1,
                  "disk full: expected one line naming the checkpoint: %s", err);
    size_t now;
    char *kept = slurp_file(ckpt, &now);
    ck_assert_msg(kept && now == one && memcmp(kept, first, one) == 0, "disk full: the previous checkpoint changed");
    /* and it still resumes to the uninterrupted result */
    ck_assert_int_eq(run_wait(&c, out, 0, NULL), 0);
    char *got = slurp_file(out, &len), *ref = slurp_file(refjson, &len);
    json_same(tu_last_line(got), tu_last_line(ref), -1);
    free(first); free(kept); free(err); free(got); free(ref);
}
END_TEST

int main(void) {
    if (!tu_exists(tu_bin())) return 77;
    char cora[4096];
    snprintf(cora, sizeof cora, "%s/data/cora", tu_src());
    if (!tu_exists(cora)) return 77;
    Suite *s = suite_create("kill");
    TCase *tc = tcase_create("kill");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_kill_ingest);
    tcase_add_test(tc, test_kill_partition);
    tcase_add_test(tc, test_kill_prune);
    tcase_add_test(tc, test_kill_train);
    tcase_add_test(tc, test_checkpoint_disk_full);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
