/* Streaming gzip-or-plain line reader (zlib gzread into a growing buffer, lines split with
 * memchr) and the shared integer / float token parsers.
 * Tested in tests/test_ingest.c: line splitting, gz and plain, truncated gzip, parsers vs strtof. */
#include "loaders/textio.h"
#include "core/alloc.h"
#include "core/status.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define TEXTIO_CHUNK (1u << 20)

struct textio {
    gzFile gz;
    char *path;
    char *buf;
    size_t cap, start, end;   /* unread bytes are buf[start, end) */
    int eof;
    int64_t lineno;
    int64_t bytes;
};

int textio_open(const char *path, textio_t **out) {
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0)
        return inca_fail(errno == ENOENT ? INCA_ENOTFOUND : INCA_EIO, "%s: cannot open: %s", path,
                         strerror(errno));
    if (S_ISDIR(st.st_mode)) return inca_fail(INCA_EINVAL, "%s: expected a file, found a directory", path);
    textio_t *t = inca_calloc(1, sizeof *t);
    if (!t) return INCA_ENOMEM;
    int rc = INCA_OK;
    size_t plen = strlen(path);
    t->path = inca_malloc(plen + 1);
    t->cap = TEXTIO_CHUNK + 1;
    t->buf = inca_malloc(t->cap);
    if (!t->path || !t->buf) { rc = INCA_ENOMEM; goto fail; }
    memcpy(t->path, path, plen + 1);
    t->gz = gzopen(path, "rb");
    if (!t->gz) { rc = inca_fail(INCA_EIO, "%s: cannot open: %s", path, strerror(errno ? errno : EIO)); goto fail; }
    gzbuffer(t->gz, 256u << 10);
    *out = t;
    return INCA_OK;
fail:
    textio_close(&t);
    return rc;
}

void textio_close(textio_t **tp) {
    if (!tp || !*tp) return;
    textio_t *t = *tp;
    if (t->gz) gzclose_r(t->gz);
    inca_free(t->buf);
    inca_free(t->path);
    inca_free(t);
    *tp = NULL;
}

/* Read more bytes after buf[end]; makes room first. Returns 1 when bytes came, 0 at a clean
 * end, negative on error. */
static int textio_fill(textio_t *t) {
    if (t->start > 0) {
        memmove(t->buf, t->buf + t->start, t->end - t->start);
        t->end -= t->start;
        t->start = 0;
    }
    if (t->cap - 1 - t->end < TEXTIO_CHUNK / 2) {
        size_t ncap = t->cap * 2;
        char *nb = inca_realloc(t->buf, ncap);
        if (!nb) return INCA_ENOMEM;
        t->buf = nb;
        t->cap = ncap;
    }
    size_t room = t->cap - 1 - t->end;
    if (room > (1u << 30)) room = 1u << 30;
    int got = gzread(t->gz, t->buf + t->end, (unsigned)room);
    int errnum = Z_OK;
    const char *msg = gzerror(t->gz, &errnum);
    if (got < 0 || (got == 0 && errnum != Z_OK)) {
        if (errnum == Z_BUF_ERROR)
            return inca_fail(INCA_EINVAL, "%s:%lld: truncated gzip stream (unexpected end of file)",
                             t->path, (long long)t->lineno + 1);
        if (errnum == Z_ERRNO)
            return inca_fail(INCA_EIO, "%s:%lld: read error: %s", t->path, (long long)t->lineno + 1,
                             strerror(errno));
        return inca_fail(INCA_EINVAL, "%s:%lld: corrupt gzip data (%s)", t->path,
                         (long long)t->lineno + 1, msg ? msg : "zlib error");
    }
    if (got == 0) { t->eof = 1; return 0; }
    t->end += (size_t)got;
    t->bytes += got;
    return 1;
}

int textio_next(textio_t *t, char **line, size_t *len) {
    size_t scanned = t->start;
    for (;;) {
        char *s = t->buf + scanned;
        char *nl = t->end > scanned ? memchr(s, '\n', t->end - scanned) : NULL;
        size_t stop;
        if (nl) {
            stop = (size_t)(nl - t->buf);
        } else if (t->eof) {
            if (t->start == t->end) return 0;
            stop = t->end;
        } else {
            size_t off = t->end - t->start;   /* bytes already scanned, relative to start */
            int rc = textio_fill(t);
            if (rc < 0) return rc;
            scanned = t->start + off;
            continue;
        }
        char *l = t->buf + t->start;
        size_t n = stop - t->start;
        t->start = nl ? stop + 1 : stop;
        t->lineno++;
        if (n > 0 && l[n - 1] == '\r') n--;
        l[n] = '\0';   /* buf has one spare byte past cap - 1, so this is in bounds at EOF */
        /* a UTF-8 byte-order mark (editors on Windows write one) is not part of the first line:
         * left in, it made "0 1" a bad line whose message showed the mark invisibly */
        if (t->lineno == 1 && n >= 3 && memcmp(l, "\xef\xbb\xbf", 3) == 0) {
            l += 3;
            n -= 3;
        }
        if (memchr(l, '\0', n))
            return inca_fail(INCA_EINVAL, "%s:%lld: NUL byte in a text line (binary file?)", t->path,
                             (long long)t->lineno);
        *line = l;
        if (len) *len = n;
        return 1;
    }
}

int64_t textio_lineno(const textio_t *t) { return t->lineno; }
const char *textio_path(const textio_t *t) { return t->path; }
int64_t textio_bytes(const textio_t *t) { return t->bytes; }

const char *textio_skip_blank(const char *p) {
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

const char *textio_skip_sep(const char *p, const char *seps) {
    p = textio_skip_blank(p);
    if (*p && strchr(seps, *p)) p = textio_skip_blank(p + 1);
    return p;
}

int textio_at_end(const char *p) { return *textio_skip_blank(p) == '\0'; }

int textio_parse_i64(const char **p, int64_t *v) {
    const char *s = textio_skip_blank(*p);
    int neg = 0;
    if (*s == '+' || *s == '-') { neg = *s == '-'; s++; }
    if (*s < '0' || *s > '9') return 0;
    uint64_t acc = 0;
    const uint64_t lim = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
    while (*s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (acc > (lim - d) / 10) return 0;
        acc = acc * 10 + d;
        s++;
    }
    *v = neg ? (acc == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)acc) : (int64_t)acc;
    *p = s;
    return 1;
}

int textio_parse_f32(const char **p, float *v) {
    static const float p10[] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
    const char *s = textio_skip_blank(*p);
    const char *q = s;
    int neg = 0;
    if (*q == '+' || *q == '-') { neg = *q == '-'; q++; }
    uint64_t mant = 0;
    int nd = 0, exp10 = 0, exact = 1;
    while (*q >= '0' && *q <= '9') {
        if (mant < (1ull << 59)) mant = mant * 10 + (uint64_t)(*q - '0');
        else { exact = 0; exp10++; }
        q++; nd++;
    }
    if (*q == '.') {
        q++;
        while (*q >= '0' && *q <= '9') {
            if (mant < (1ull << 59)) { mant = mant * 10 + (uint64_t)(*q - '0'); exp10--; }
            else exact = 0;
            q++; nd++;
        }
    }
    if (nd > 0 && (*q == 'e' || *q == 'E')) {
        const char *e = q + 1;
        int eneg = 0;
        if (*e == '+' || *e == '-') { eneg = *e == '-'; e++; }
        if (*e >= '0' && *e <= '9') {
            int ev = 0;
            while (*e >= '0' && *e <= '9') { if (ev < 100000) ev = ev * 10 + (*e - '0'); e++; }
            exp10 += eneg ? -ev : ev;
            q = e;
        }
    }
    if (nd > 0 && exact && mant <= (1ull << 24) && exp10 >= -10 && exp10 <= 10) {
        /* mant and 10^|exp10| are exact floats: one IEEE operation rounds exactly as strtof. */
        float f = (float)mant;
        f = exp10 < 0 ? f / p10[-exp10] : f * p10[exp10];
        *v = neg ? -f : f;
        *p = q;
        return 1;
    }
    char *end = NULL;
    float f = strtof(s, &end);
    if (end == s) return 0;
    *v = f;
    *p = end;
    return 1;
}
