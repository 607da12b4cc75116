/* Test helpers; see testutil.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "testutil.h"
#include "graph/csr.h"
#include "core/rng.h"
#include "core/status.h"
#include "loaders/dataset.h"
#include "nn/train_common.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

char *tu_mkdtemp(void) {
    const char *base = getenv("TMPDIR");
    char *p = NULL;
    if (asprintf(&p, "%s/inca-test-XXXXXX", base && *base ? base : "/tmp") < 0) return NULL;
    if (!mkdtemp(p)) { free(p); return NULL; }
    return p;
}

void tu_rmrf(const char *path) {
    if (!path || !*path) return;
    char *cmd = NULL;
    if (asprintf(&cmd, "rm -rf '%s'", path) < 0) return;
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", path);
    free(cmd);
}

int tu_exists(const char *path) { struct stat st; return stat(path, &st) == 0; }

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s) {
        size_t r = fread(s, 1, (size_t)n, f);
        s[r] = '\0';
    }
    fclose(f);
    return s;
}

void tu_kmp_sweep(void) {
    DIR *d = opendir("/dev/shm");
    if (!d) return;
    const size_t plen = strlen("__KMP_REGISTERED_LIB_");
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, "__KMP_REGISTERED_LIB_", plen) != 0) continue;
        char *end = NULL;
        const long pid = strtol(e->d_name + plen, &end, 10);
        if (pid <= 0 || end == e->d_name + plen || *end != '_') continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;   /* alive, or not ours to judge */
        char path[512];
        snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
        (void)unlink(path);
    }
    closedir(d);
}

int tu_sh(const char *cmd, char **out, char **err) {
    tu_kmp_sweep();
    char *dir = tu_mkdtemp();
    char *full = NULL;
    if (!dir || asprintf(&full, "( %s ) >'%s/o' 2>'%s/e' </dev/null", cmd, dir, dir) < 0) { free(dir); return -1; }
    int st = system(full);
    free(full);
    char *p = NULL;
    if (out) { if (asprintf(&p, "%s/o", dir) >= 0) { *out = slurp(p); free(p); } }
    if (err) { if (asprintf(&p, "%s/e", dir) >= 0) { *err = slurp(p); free(p); } }
    tu_rmrf(dir);
    free(dir);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

const char *tu_bin(void) { const char *b = getenv("INCA_BIN"); return b ? b : "./inca"; }
const char *tu_src(void) { const char *b = getenv("INCA_SRC"); return b ? b : "."; }
const char *tu_shared(void) { const char *b = getenv("INCA_SHARED"); return b ? b : "../shared"; }
const char *tu_fmnist(void) {
    const char *b = getenv("INCA_FMNIST");
    return b && *b ? b : "/usr/share/datasets/fashion-mnist";
}

int tu_gpu_unavailable(const char *test, const char *why) {
    const char *allow = getenv("INCA_TEST_GPU_SKIP");
    const int gpu = tu_exists("/dev/nvidia0") || tu_exists("/proc/driver/nvidia/gpus");
    if (!gpu || (allow && strcmp(allow, "1") == 0)) {
        fprintf(stderr, "%s: skipped: %s\n", test, why);
        return 77;
    }
    fprintf(stderr, "%s: this machine has an NVIDIA GPU, but %s (a build without CUDA? INCA_TEST_GPU_SKIP=1 to skip)\n",
            test, why);
    return 1;
}

void tu_require_or_skip(const char *path) {
    if (tu_exists(path)) return;
    fprintf(stderr, "skip: %s absent\n", path);
    exit(77);
}

int tu_inca(const char *args, char **out, char **err) {
    char *cmd = NULL;
    if (asprintf(&cmd, "'%s' %s", tu_bin(), args) < 0) return -1;
    int rc = tu_sh(cmd, out, err);
    free(cmd);
    return rc;
}

const char *tu_last_line(const char *s) {
    static char buf[65536];
    buf[0] = '\0';
    if (!s) return buf;
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '\n') n--;
    size_t b = n;
    while (b > 0 && s[b - 1] != '\n') b--;
    size_t len = n - b < sizeof buf - 1 ? n - b : sizeof buf - 1;
    memcpy(buf, s + b, len);
    buf[len] = '\0';
    return buf;
}

double tu_json_num(const char *json, const char *key) {
    if (!json) return NAN;
    char pat[256];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    if (!p) return NAN;
    p += strlen(pat);
    char *end;
    double v = strtod(p, &end);
    return end == p ? NAN : v;
}

cJSON *tu_json_parse(const char *text) {
    cJSON *o = cJSON_Parse(text ? text : "");
    ck_assert_msg(o != NULL, "not JSON (cJSON stopped at '%.40s'): %.300s", cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "",
                  text ? text : "(null)");
    ck_assert_msg(cJSON_IsObject(o), "not a JSON object: %.300s", text);
    return o;
}

cJSON *tu_json_last(const char *s) {
    ck_assert_ptr_nonnull(s);
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '\n') n--;
    size_t b = n;
    while (b > 0 && s[b - 1] != '\n') b--;
    char *line = strndup(s + b, n - b);
    ck_assert_ptr_nonnull(line);
    cJSON *o = tu_json_parse(line);
    free(line);
    return o;
}

int tu_json_lines(const char *s, cJSON **v, int max) {
    int n = 0;
    for (const char *p = s ? s : ""; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > 0) {
            ck_assert_msg(n < max, "more than %d lines: %.300s", max, s);
            char *line = strndup(p, len);
            ck_assert_ptr_nonnull(line);
            v[n++] = tu_json_parse(line);
            free(line);
        }
        p += len + (e != NULL);
    }
    return n;
}

void tu_json_free_lines(cJSON **v, int n) {
    for (int i = 0; i < n; i++) cJSON_Delete(v[i]);
}

const cJSON *tu_json_get(const cJSON *obj, const char *key, int type) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    ck_assert_msg(v != NULL, "key '%s' missing", key);
    ck_assert_msg((v->type & 0xff & type) != 0, "key '%s' has cJSON type %d, expected %d", key, v->type & 0xff, type);
    return v;
}

double tu_json_dbl(const cJSON *obj, const char *key) { return tu_json_get(obj, key, cJSON_Number)->valuedouble; }

/* ---- ingest end to end (test_e2e_ingest.c, test_e2e_facebook.c, test_e2e_fmnist.c) ---- */

/* Ingest src with --json into dir/store; returns the JSON line (static) after checking exit 0
 * and that nothing was printed on stderr (stderr is not a terminal here). */
const char *tu_ingest_ok(const char *dir, const char *fmt, const char *src, char *store, size_t size) {
    snprintf(store, size, "%s/store", dir);
    char *args = NULL, *out = NULL, *err = NULL;
    ck_assert_int_ge(asprintf(&args, "ingest --format %s '%s' --out '%s' --json", fmt, src, store), 0);
    int rc = tu_inca(args, &out, &err);
    ck_assert_msg(rc == 0, "inca %s -> %d, stderr: %s", args, rc, err ? err : "");
    ck_assert_msg(err && err[0] == '\0', "stderr should be empty when not a TTY: %s", err);
    static char line[65536];
    snprintf(line, sizeof line, "%s", tu_last_line(out));
    free(args); free(out); free(err);
    return line;
}

const char *tu_info_json(const char *store) {
    char *args = NULL, *out = NULL;
    ck_assert_int_ge(asprintf(&args, "info '%s' --json", store), 0);
    ck_assert_int_eq(tu_inca(args, &out, NULL), 0);
    static char line[65536];
    snprintf(line, sizeof line, "%s", tu_last_line(out));
    free(args); free(out);
    return line;
}

/* "splits":{"train":a,"valid":b,"test":c} with or without spaces */
void tu_check_splits(const char *json, long tr, long va, long te) {
    const char *s = strstr(json, "\"splits\"");
    ck_assert_ptr_nonnull(s);
    ck_assert_double_eq(tu_json_num(s, "train"), (double)tr);
    ck_assert_double_eq(tu_json_num(s, "valid"), (double)va);
    ck_assert_double_eq(tu_json_num(s, "test"), (double)te);
}

void tu_check_counts(const char *json, long n, long e, long f, long c, long lab) {
    ck_assert_double_eq(tu_json_num(json, "nodes"), (double)n);
    ck_assert_double_eq(tu_json_num(json, "edges"), (double)e);
    ck_assert_double_eq(tu_json_num(json, "features"), (double)f);
    ck_assert_double_eq(tu_json_num(json, "classes"), (double)c);
    ck_assert_double_eq(tu_json_num(json, "labeled"), (double)lab);
}

/* Loaded dataset facts: non-zero features, class counts, a symmetric graph without loops,
 * split ids sorted. */
void tu_check_loaded(const char *store, long nnz_feat, const long *class_counts, int c) {
    dataset_t d;
    ck_assert_int_eq(dataset_load(store, &d), 0);
    long nz = 0;
    double sum = 0;
    for (int64_t i = 0; i < d.n * d.f; i++) { nz += d.x[i] != 0.0f; sum += d.x[i]; }
    ck_assert_int_eq(nz, nnz_feat);
    ck_assert_double_eq(sum, (double)nnz_feat);   /* binary features */
    /* (Check asserts cost a syscall each: count in loops, assert once) */
    long cnt[16] = {0}, bad = 0;
    for (int64_t i = 0; i < d.n; i++) {
        if (d.y[i] >= 0 && d.y[i] < c) cnt[d.y[i]]++;
        else bad++;
    }
    ck_assert_int_eq(bad, 0);
    for (int k = 0; k < c; k++) ck_assert_int_eq(cnt[k], class_counts[k]);
    ck_assert(csr_is_symmetric(&d.adj));
    for (int64_t v = 0; v < d.n; v++)
        for (int64_t k = d.adj.rowptr[v]; k < d.adj.rowptr[v + 1]; k++) bad += d.adj.col[k] == v;
    ck_assert_int_eq(bad, 0);   /* no self-loops */
    for (int s = 0; s < SPLIT_COUNT; s++)
        for (int64_t i = 1; i < d.split_n[s]; i++) bad += d.split[s][i - 1] >= d.split[s][i];
    ck_assert_int_eq(bad, 0);   /* splits sorted, no repeats */
    dataset_free(&d);
}

int tu_run_suite(Suite *s) {
    tu_kmp_sweep();
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

double tu_norm_err(const float *got, const float *want, int64_t n, int64_t *worst) {
    double dd = 0, ss = 0, big = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        const double e = (double)got[i] - (double)want[i];
        dd += e * e;
        ss += (double)want[i] * want[i];
        if (!(fabs(e) <= big)) big = fabs(e), at = i;
    }
    if (worst) *worst = at;
    return ss > 0 ? sqrt(dd / ss) : sqrt(dd);
}

csr_t tu_csr_random(int64_t rows, int64_t cols, uint64_t seed, int with_val) {
    rng_t r;
    rng_seed(&r, seed);
    csr_t a;
    ck_assert_int_eq(csr_alloc(&a, rows, cols, rows * cols + 1, with_val), 0);
    a.nnz = 0;
    for (int64_t i = 0; i < rows; i++) {
        const double u = rng_uniform(&r), p = u < 0.33 ? 0.0 : u > 0.97 ? 0.8 : 0.1;
        for (int64_t j = 0; j < cols; j++)
            if (rng_uniform(&r) < p) {
                a.col[a.nnz] = (int32_t)j;
                if (with_val) a.val[a.nnz] = (float)rng_uniform(&r);
                a.nnz++;
            }
        a.rowptr[i + 1] = a.nnz;
    }
    return a;
}

static int word_index(const char *name, const char *const *words, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(name, words[i]) == 0) return i;
    return n;
}
int tu_method(const char *name) { return word_index(name, train_method_words, TRAIN_METHOD_COUNT); }
int tu_model(const char *name) { return word_index(name, model_kind_words, NN_KIND_COUNT); }
int tu_dtype(const char *name) { return word_index(name, hist_dtype_words, 2); }

void tu_grid(csr_t *g, int side) {
    int64_t n = (int64_t)side * side, m = 0;
    int64_t *s = malloc(sizeof *s * (size_t)(2 * n)), *d = malloc(sizeof *d * (size_t)(2 * n));
    ck_assert(s && d);
    for (int r = 0; r < side; r++)
        for (int c = 0; c < side; c++) {
            int64_t u = (int64_t)r * side + c;
            if (c + 1 < side) { s[m] = u; d[m] = u + 1; m++; }
            if (r + 1 < side) { s[m] = u; d[m] = u + side; m++; }
        }
    ck_assert_int_eq(csr_from_edges(g, n, s, d, m, CSR_SYMMETRIZE), INCA_OK);
    free(s);
    free(d);
}

/* a float32 .npy of shape (rows, cols) (npy_write_f32's), checked whole: its values (free them) */
float *tu_npy_f32(const char *path, long rows, long cols) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: missing", path);
    unsigned char pre[10];
    ck_assert_uint_eq(fread(pre, 1, 10, f), 10);
    ck_assert(memcmp(pre, "\x93NUMPY", 6) == 0);
    const size_t hl = (size_t)pre[8] | (size_t)pre[9] << 8;
    char h[512] = {0}, want[128];
    ck_assert(hl < sizeof h && fread(h, 1, hl, f) == hl);
    snprintf(want, sizeof want, "'shape': (%ld, %ld)", rows, cols);
    ck_assert_msg(strstr(h, "'descr': '<f4'") && strstr(h, want), "%s: header %s, expected %s", path, h, want);
    float *v = malloc(sizeof(float) * (size_t)(rows * cols));
    ck_assert_uint_eq(fread(v, sizeof(float), (size_t)(rows * cols), f), (size_t)(rows * cols));
    ck_assert_int_eq(fgetc(f), EOF);
    fclose(f);
    return v;
}
