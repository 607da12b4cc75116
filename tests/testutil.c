/* Test helpers; see testutil.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int tu_sh(const char *cmd, char **out, char **err) {
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

const cJSON *tu_json_get(const cJSON *obj, const char *key, int type) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    ck_assert_msg(v != NULL, "key '%s' missing", key);
    ck_assert_msg((v->type & 0xff & type) != 0, "key '%s' has cJSON type %d, expected %d", key, v->type & 0xff, type);
    return v;
}

double tu_json_dbl(const cJSON *obj, const char *key) { return tu_json_get(obj, key, cJSON_Number)->valuedouble; }

int tu_run_suite(Suite *s) {
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
