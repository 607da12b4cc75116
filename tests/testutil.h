/* Helpers for the Check suites: temporary directories, running the `inca` binary and capturing
 * its output, and paths to the bundled and shared datasets. */
#ifndef INCA_TESTUTIL_H
#define INCA_TESTUTIL_H
#include <check.h>
#include <cjson/cJSON.h>
#include <stdint.h>
#include "graph/csr.h"

/* A fresh directory under $TMPDIR (or /tmp), removed by tu_rmrf. Returns a static-lifetime
 * string owned by the caller (free()). */
char *tu_mkdtemp(void);
void tu_rmrf(const char *path);
int tu_exists(const char *path);
/* Run `$INCA_BIN <args>` through /bin/sh; stdout and stderr are captured into malloc'd strings
 * (may be NULL). Returns the exit status (or -1 when it did not exit normally). */
int tu_inca(const char *args, char **out, char **err);
/* Run any shell command, capturing as tu_inca. */
int tu_sh(const char *cmd, char **out, char **err);
/* Remove LLVM libomp's /dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid> files of processes that are
 * gone. A clang build's process killed by a test (test_kill, MPI's aborts) leaves its file, and
 * a later process given the same pid (pid_max is 32768 here) aborts at its first parallel region
 * with "OMP: Error #15 ... unknown library already initialized" (seen once in CI's clang suite).
 * Called before every command tu_sh / tu_inca run and at each suite's start. */
void tu_kmp_sweep(void);
const char *tu_bin(void);      /* $INCA_BIN */
const char *tu_src(void);      /* $INCA_SRC: repository root */
const char *tu_shared(void);   /* $INCA_SHARED: ../shared (may not exist) */
/* $INCA_FMNIST: the Fashion-MNIST IDX files (default /usr/share/datasets/fashion-mnist, the
 * Debian package dataset-fashion-mnist; may not exist). */
const char *tu_fmnist(void);
/* For a test binary whose data is absent: when path does not exist, say so on stderr and exit
 * 77 (ctest shows the test as skipped). Call from main() before the suite runs. */
void tu_require_or_skip(const char *path);
/* The exit status of a GPU test whose device does not answer (why: the reason, printed):
 * 77 (ctest: skipped) when this machine shows no NVIDIA GPU, 1 (failed) when it does, so a
 * build without CUDA on a GPU machine cannot pass by skipping everything. INCA_TEST_GPU_SKIP=1
 * allows the skip there too. */
int tu_gpu_unavailable(const char *test, const char *why);
/* A float32 .npy of shape (rows, cols), header and length checked: its values (free them). */
float *tu_npy_f32(const char *path, long rows, long cols);
/* Last line of s (without newline) in a static buffer. */
const char *tu_last_line(const char *s);
/* Extract a number for "key": from a JSON object text; NAN when absent. */
double tu_json_num(const char *json, const char *key);
/* JSON through cJSON, an independent parser: tu_json_parse asserts that text is one JSON object
 * and returns it (cJSON_Delete it); tu_json_last does so for the last non-empty line of s (any
 * length). tu_json_get asserts that key is present with the cJSON type (cJSON_Number,
 * cJSON_String, cJSON_Object, cJSON_Array, cJSON_True|cJSON_False for a boolean). */
cJSON *tu_json_parse(const char *text);
cJSON *tu_json_last(const char *s);
/* Every non-empty line of s parsed (JSON Lines), at most max (more: a failure); returns how
 * many were stored in v; free them with tu_json_free_lines. */
int tu_json_lines(const char *s, cJSON **v, int max);
void tu_json_free_lines(cJSON **v, int n);
const cJSON *tu_json_get(const cJSON *obj, const char *key, int type);
/* The number at key (asserted present and a number). */
double tu_json_dbl(const cJSON *obj, const char *key);
/* Ingest end to end. tu_ingest_ok: `inca ingest --format fmt src --out dir/store --json` (store
 * receives the path) must exit 0 with nothing on stderr; returns its JSON line (static buffer).
 * tu_info_json: `inca info store --json`'s line (static). tu_check_counts / tu_check_splits
 * compare nodes, edges, features, classes, labeled and the split sizes of such a line;
 * tu_check_loaded loads the store and checks binary features (nnz_feat of them), the class
 * counts, a symmetric loop-free graph and sorted splits. */
const char *tu_ingest_ok(const char *dir, const char *fmt, const char *src, char *store, size_t size);
const char *tu_info_json(const char *store);
void tu_check_counts(const char *json, long n, long e, long f, long c, long lab);
void tu_check_splits(const char *json, long tr, long va, long te);
void tu_check_loaded(const char *store, long nnz_feat, const long *class_counts, int c);
/* Run a suite with CK_NORMAL output; returns EXIT_SUCCESS / EXIT_FAILURE. */
int tu_run_suite(Suite *s);
/* train_config_t's typed fields from the words the command line takes (cases are written as
 * words): TRAIN_* / NN_* / HIST_*, or one past the last value (refused by train_run) when the
 * word is unknown. */
int tu_method(const char *name);
int tu_model(const char *name);
int tu_dtype(const char *name);
/* ||got - want|| / ||want|| over n floats (the plain norm of the difference when want is 0);
 * *worst (may be NULL) receives the index of the largest absolute difference (NaN counts as
 * largest). The tolerance checks of the backend tests. */
double tu_norm_err(const float *got, const float *want, int64_t n, int64_t *worst);
/* A random rows x cols CSR (owned, csr_free it): about a third of the rows empty, a few heavy
 * rows, sorted unique columns; values in [0,1) when with_val, else val NULL. */
#include "graph/csr.h"
csr_t tu_csr_random(int64_t rows, int64_t cols, uint64_t seed, int with_val);
/* The side x side grid, 4-neighbour, symmetric (owned, csr_free it): the partitioners' graph
 * whose good cuts are known (strips, quadrants). */
void tu_grid(csr_t *g, int side);
#endif
