/* JSON writer; see json.h. Tested in test_core.c (exact texts, escaping, round-trip of numbers,
 * misuse) and parsed by cJSON for every command in test_e2e_json.c. */
#include "core/json.h"
#include "core/alloc.h"
#include "core/status.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 32

struct json {
    char *buf;
    size_t len, cap;
    int depth;                       /* open containers, the top-level object included */
    char kind[JSON_MAX_DEPTH];       /* '{' or '[' per open container */
    int64_t count[JSON_MAX_DEPTH];   /* values written in it so far (for the commas) */
    int status;                      /* first failure (INCA_OK while none) */
    char why[160];                   /* its message, set again by json_close */
    int closed;
};

static void fail(json_t *j, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(json_t *j, int code, const char *fmt, ...) {
    if (j->status != INCA_OK) return;
    j->status = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->why, sizeof j->why, fmt, ap);
    va_end(ap);
}

static void put(json_t *j, const char *s, size_t n) {
    if (j->status != INCA_OK) return;
    if (j->len + n + 1 > j->cap) {
        size_t ncap = (j->len + n + 1) * 2;
        char *nb = inca_realloc(j->buf, ncap);
        if (!nb) { fail(j, INCA_ENOMEM, "out of memory writing JSON (%zu bytes)", ncap); return; }
        j->buf = nb;
        j->cap = ncap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void puts_(json_t *j, const char *s) { put(j, s, strlen(s)); }

/* A string literal with JSON escapes; bytes that are not valid UTF-8 become U+FFFD. */
static void put_string(json_t *j, const char *s) {
    static const char hex[] = "0123456789abcdef";
    put(j, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    while (*p && j->status == INCA_OK) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(j, e, 2);
            p++;
        } else if (c < 0x20) {
            const char *sh = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
            if (sh) put(j, sh, 2);
            else {
                char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                put(j, e, 6);
            }
            p++;
        } else if (c < 0x80) {
            put(j, (const char *)p, 1);
            p++;
        } else {
            /* the length of a well-formed UTF-8 sequence starting here (RFC 3629), or 0 */
            int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
            for (int k = 1; k < n; k++)
                if ((p[k] & 0xc0) != 0x80) n = 0;
            if (n >= 3) {
                unsigned cp = n == 3 ? ((c & 0x0fu) << 12) | ((p[1] & 0x3fu) << 6)
                                     : ((c & 0x07u) << 18) | ((p[1] & 0x3fu) << 12);
                /* overlong forms, surrogates and code points past U+10FFFF are not UTF-8 */
                if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
                    n = 0;
            }
            if (n) put(j, (const char *)p, (size_t)n);
            else put(j, "\xef\xbf\xbd", 3);
            p += n ? n : 1;
        }
    }
    put(j, "\"", 1);
}

/* The separator and key before a value, checking the key against the container. */
static int prefix(json_t *j, const char *key) {
    if (j->status != INCA_OK) return 0;
    if (j->closed || j->depth == 0) { fail(j, INCA_ERR, "JSON: value '%s' after the object was closed", key ? key : "(no key)"); return 0; }
    int d = j->depth - 1;
    if (j->kind[d] == '{' && !key) { fail(j, INCA_ERR, "JSON: a value without a key inside an object"); return 0; }
    if (j->kind[d] == '[' && key) { fail(j, INCA_ERR, "JSON: key '%s' given inside an array", key); return 0; }
    if (j->count[d]++) put(j, ",", 1);
    if (key) {
        put_string(j, key);
        put(j, ":", 1);
    }
    return j->status == INCA_OK;
}

void json_int(json_t *j, const char *key, int64_t v) {
    if (!prefix(j, key)) return;
    char b[32];
    int n = snprintf(b, sizeof b, "%lld", (long long)v);
    put(j, b, (size_t)n);
}

void json_int_exact(json_t *j, const char *key, int64_t v) {
    const int64_t lim = (int64_t)1 << 53;
    if (v >= -lim && v <= lim) { json_int(j, key, v); return; }
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    json_str(j, key, b);
}

void json_num(json_t *j, const char *key, double v) {
    if (!prefix(j, key)) return;
    if (!isfinite(v)) { puts_(j, "null"); return; }
    /* the shortest of 15..17 significant digits that reads back as the same double */
    char b[40];
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(b, sizeof b, "%.*g", prec, v);
        if (strtod(b, NULL) == v) break;
    }
    put(j, b, (size_t)n);
}

void json_str(json_t *j, const char *key, const char *v) {
    if (!prefix(j, key)) return;
    if (v) put_string(j, v);
    else puts_(j, "null");
}

void json_bool(json_t *j, const char *key, int v) {
    if (prefix(j, key)) puts_(j, v ? "true" : "false");
}

void json_null(json_t *j, const char *key) {
    if (prefix(j, key)) puts_(j, "null");
}

static void begin(json_t *j, const char *key, char kind) {
    if (!prefix(j, key)) return;
    if (j->depth == JSON_MAX_DEPTH) { fail(j, INCA_ERR, "JSON: nesting deeper than %d", JSON_MAX_DEPTH); return; }
    j->kind[j->depth] = kind;
    j->count[j->depth] = 0;
    j->depth++;
    put(j, kind == '{' ? "{" : "[", 1);
}

static void end(json_t *j, char kind) {
    if (j->status != INCA_OK) return;
    if (j->closed || j->depth < 2 || j->kind[j->depth - 1] != kind) {
        fail(j, INCA_ERR, "JSON: %s without a matching %s", kind == '{' ? "json_obj_end" : "json_arr_end",
             kind == '{' ? "json_obj_begin" : "json_arr_begin");
        return;
    }
    j->depth--;
    put(j, kind == '{' ? "}" : "]", 1);
}

void json_obj_begin(json_t *j, const char *key) { begin(j, key, '{'); }
void json_obj_end(json_t *j) { end(j, '{'); }
void json_arr_begin(json_t *j, const char *key) { begin(j, key, '['); }
void json_arr_end(json_t *j) { end(j, '['); }

int json_new(json_t **out) {
    *out = NULL;
    json_t *j = inca_calloc(1, sizeof *j);
    if (!j) return INCA_ENOMEM;
    put(j, "{", 1);
    if (j->status != INCA_OK) { json_free(&j); return INCA_ENOMEM; }
    j->kind[0] = '{';
    j->depth = 1;
    *out = j;
    return INCA_OK;
}

void json_free(json_t **j) {
    if (!j || !*j) return;
    inca_free((*j)->buf);
    INCA_FREE(*j);
}

const char *json_close(json_t *j) {
    if (j->status == INCA_OK && !j->closed) {
        if (j->depth != 1) fail(j, INCA_ERR, "JSON: %d nested value(s) left open", j->depth - 1);
        else {
            put(j, "}", 1);
            j->depth = 0;
            j->closed = 1;
        }
    }
    if (j->status != INCA_OK) {
        inca_fail(j->status, "%s", j->why);
        return NULL;
    }
    return j->buf;
}

int json_write(json_t *j, FILE *f) {
    const char *s = json_close(j);
    if (!s) return j->status;
    if (fprintf(f, "%s\n", s) < 0 || fflush(f) != 0) return inca_fail(INCA_EIO, "writing a JSON line failed");
    return INCA_OK;
}
