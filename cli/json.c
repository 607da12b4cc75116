/* JSON object writer; see json.h. */
#include "cli/json.h"
#include "core/alloc.h"
#include "core/status.h"
#include <math.h>
#include <stdarg.h>
#include <string.h>

struct json { char *buf; size_t len, cap; int n, failed, closed; };

static void app(json_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void app(json_t *j, const char *fmt, ...) {
    if (j->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(j->buf + j->len, j->cap - j->len, fmt, ap);
        va_end(ap);
        if (k < 0) { j->failed = 1; return; }
        if ((size_t)k < j->cap - j->len) { j->len += (size_t)k; return; }
        size_t ncap = (j->cap + (size_t)k + 1) * 2;
        char *nb = inca_realloc(j->buf, ncap);
        if (!nb) { j->failed = 1; return; }
        j->buf = nb;
        j->cap = ncap;
    }
}

int json_new(json_t **out) {
    json_t *j = inca_calloc(1, sizeof *j);
    if (!j) return INCA_ENOMEM;
    j->cap = 256;
    j->buf = inca_malloc(j->cap);
    if (!j->buf) { inca_free(j); return INCA_ENOMEM; }
    j->buf[0] = '\0';
    app(j, "{");
    *out = j;
    return INCA_OK;
}

void json_free(json_t **j) {
    if (!j || !*j) return;
    inca_free((*j)->buf);
    INCA_FREE(*j);
}

static void key(json_t *j, const char *k) {
    app(j, "%s\"%s\":", j->n++ ? "," : "", k);
}

void json_int(json_t *j, const char *k, int64_t v) { key(j, k); app(j, "%lld", (long long)v); }
void json_num(json_t *j, const char *k, double v) {
    key(j, k);
    if (isfinite(v)) app(j, "%.10g", v);
    else app(j, "null");
}
void json_bool(json_t *j, const char *k, int v) { key(j, k); app(j, v ? "true" : "false"); }
void json_raw(json_t *j, const char *k, const char *raw) { key(j, k); app(j, "%s", raw); }
void json_str(json_t *j, const char *k, const char *v) {
    key(j, k);
    app(j, "\"");
    for (const char *p = v; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') app(j, "\\%c", c);
        else if (c < 0x20) app(j, "\\u%04x", c);
        else app(j, "%c", c);
    }
    app(j, "\"");
}

const char *json_close(json_t *j) {
    if (!j->closed) { app(j, "}"); j->closed = 1; }
    return j->failed ? NULL : j->buf;
}

int json_write(json_t *j, FILE *f) {
    const char *s = json_close(j);
    if (!s) return inca_fail(INCA_ENOMEM, "out of memory writing JSON");
    fprintf(f, "%s\n", s);
    fflush(f);
    return INCA_OK;
}
