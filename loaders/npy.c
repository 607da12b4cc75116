/* .npy (format 1.0 writer; 1.0-3.0 reader) and text index files; see npy.h.
 * Tested in test_pruning_core.c: round trips, a header written byte-for-byte as NumPy writes it,
 * int32/uint8 arrays, (n,1) shapes, text with comments, and malformed inputs. */
#include "loaders/npy.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* Outputs go to <path>.tmp-<pid>, then are renamed over <path>: a reader, or a run killed half
 * way (tests/test_kill.c), sees the previous file or the new one, never a part of one. */
static FILE *out_open(const char *path, char *tmp, size_t cap) {
    snprintf(tmp, cap, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) inca_fail_write(path, errno);   /* the user's path: the temporary is ours */
    return f;
}

static int out_commit(FILE *f, int ok, const char *tmp, const char *path) {
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) ok = 0;
    if (fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, path) == 0) return INCA_OK;
    int e = errno;
    remove(tmp);
    return inca_fail(INCA_EIO, "%s: write failed: %s", path, strerror(e));
}

/* Header dict padded with spaces so that magic + version + len + dict ends on a multiple of 64,
 * terminated by '\n', exactly as numpy.lib.format.write_array_header_1_0 does. */
int64_t npy_header(const char *descr, const char *shape, unsigned char *out, size_t cap) {
    char dict[256];
    int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    if (dl < 0 || dl >= (int)sizeof dict - 70) return inca_fail(INCA_ERR, ".npy header too long");
    size_t total = 10 + (size_t)dl + 1;
    size_t pad = (64 - total % 64) % 64;
    memset(dict + dl, ' ', pad);
    dict[dl + (int)pad] = '\n';
    size_t hlen = (size_t)dl + pad + 1;
    if (10 + hlen > cap) return inca_fail(INCA_ERR, ".npy header: %zu bytes do not fit %zu", 10 + hlen, cap);
    memcpy(out, npy_magic, 6);
    out[6] = 1;
    out[7] = 0;
    out[8] = (unsigned char)(hlen & 0xff);
    out[9] = (unsigned char)(hlen >> 8);
    memcpy(out + 10, dict, hlen);
    return (int64_t)(10 + hlen);
}

static int npy_write_raw(const char *path, const char *descr, const char *shape, const void *data,
                         size_t bytes) {
    unsigned char head[NPY_HEADER_MAX];
    const int64_t hl = npy_header(descr, shape, head, sizeof head);
    if (hl < 0) return inca_fail_ctx((int)hl, "%s", path);
    char tmp[4200];
    FILE *f = out_open(path, tmp, sizeof tmp);
    if (!f) return INCA_EIO;
    int ok = fwrite(head, 1, (size_t)hl, f) == (size_t)hl && (bytes == 0 || fwrite(data, 1, bytes, f) == bytes);
    return out_commit(f, ok, tmp, path);
}

int npy_write_i64(const char *path, const int64_t *a, int64_t n) {
    if (n < 0) return inca_fail(INCA_EINVAL, "%s: negative length %" PRId64, path, n);
    char shape[64];
    snprintf(shape, sizeof shape, "(%" PRId64 ",)", n);
    return npy_write_raw(path, "<i8", shape, a, (size_t)n * sizeof *a);
}

int npy_write_f32(const char *path, const float *a, int64_t rows, int64_t cols) {
    if (rows < 0 || cols < 0) return inca_fail(INCA_EINVAL, "%s: negative shape", path);
    char shape[64];
    if (cols == 0) snprintf(shape, sizeof shape, "(%" PRId64 ",)", rows);
    else snprintf(shape, sizeof shape, "(%" PRId64 ", %" PRId64 ")", rows, cols);
    return npy_write_raw(path, "<f4", shape, a, (size_t)(rows * (cols ? cols : 1)) * sizeof *a);
}

/* Reads the whole file into a NUL-terminated buffer. */
static int file_slurp(const char *path, char **buf, size_t *len) {
    *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return inca_fail(errno == ENOENT ? INCA_ENOTFOUND : INCA_EIO, "%s: cannot open: %s", path, strerror(errno));
    int rc = INCA_OK;
    char *b = NULL;
    struct stat st = {0};
    /* a folder opens, and its ftell says LONG_MAX here: sizing a buffer by it asked for 8 EiB */
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = inca_fail(INCA_EINVAL, "%s: expected a file, found %s", path, S_ISDIR(st.st_mode) ? "a directory" : "no regular file");
        goto done;
    }
    if (fseek(f, 0, SEEK_END) != 0) { rc = inca_fail(INCA_EIO, "%s: cannot seek", path); goto done; }
    long sz = ftell(f);
    if (sz < 0 || fseek(f, 0, SEEK_SET) != 0) { rc = inca_fail(INCA_EIO, "%s: cannot seek", path); goto done; }
    b = inca_malloc((size_t)sz + 1);
    if (!b) { rc = INCA_ENOMEM; goto done; }
    if (fread(b, 1, (size_t)sz, f) != (size_t)sz) { rc = inca_fail(INCA_EIO, "%s: short read", path); goto done; }
    b[sz] = '\0';
    *buf = b;
    *len = (size_t)sz;
    b = NULL;
done:
    inca_free(b);
    fclose(f);
    return rc;
}

/* Value of 'key' in a .npy header dict: pointer just after "'key':" and spaces, or NULL. */
static const char *dict_find(const char *h, const char *key) {
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

static int npy_parse(const char *path, const unsigned char *b, size_t len, int64_t **ids, int64_t *n) {
    if (len < 10 || b[6] < 1 || b[6] > 3) return inca_fail(INCA_EINVAL, "%s: unsupported .npy version", path);
    size_t hlen, off;
    if (b[6] == 1) { hlen = (size_t)b[8] | (size_t)b[9] << 8; off = 10; }
    else {
        if (len < 12) return inca_fail(INCA_EINVAL, "%s: truncated .npy header", path);
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        off = 12;
    }
    if (off + hlen > len || hlen > 65536) return inca_fail(INCA_EINVAL, "%s: truncated .npy header", path);
    char h[65537];
    memcpy(h, b + off, hlen);
    h[hlen] = '\0';
    const char *d = dict_find(h, "descr"), *fo = dict_find(h, "fortran_order"), *sh = dict_find(h, "shape");
    if (!d || !fo || !sh) return inca_fail(INCA_EINVAL, "%s: .npy header lacks descr/fortran_order/shape", path);
    char order = 0, kind = 0;
    int size = 0;
    if (sscanf(d, "'%c%c%d'", &order, &kind, &size) != 3 || (kind != 'i' && kind != 'u') ||
        (size != 1 && size != 2 && size != 4 && size != 8) || (order == '>' && size > 1))
        return inca_fail(INCA_EINVAL, "%s: .npy dtype %.*s is not a little-endian integer type (want <i8 or <i4)", path,
                         (int)strcspn(d, ",}"), d);
    if (strncmp(fo, "False", 5) != 0) return inca_fail(INCA_EINVAL, "%s: Fortran-order .npy not supported", path);
    if (*sh != '(') return inca_fail(INCA_EINVAL, "%s: bad .npy shape", path);
    long long dims[2] = {0, 0};
    int nd = 0;
    const char *p = sh + 1;
    for (;;) {
        while (*p == ' ') p++;
        if (*p == ')') break;
        if (nd == 2) return inca_fail(INCA_EINVAL, "%s: .npy array has more than 2 dimensions", path);
        char *end;
        dims[nd] = strtoll(p, &end, 10);
        if (end == p || dims[nd] < 0) return inca_fail(INCA_EINVAL, "%s: bad .npy shape", path);
        nd++;
        p = end;
        while (*p == ' ') p++;
        if (*p == ',') p++;
    }
    if (nd == 0 || (nd == 2 && dims[1] != 1))
        return inca_fail(INCA_EINVAL, "%s: .npy indices must be 1-D or (n, 1), got %d dims", path, nd);
    int64_t cnt = dims[0];
    off += hlen;
    if ((size_t)cnt > (len - off) / (size_t)size)   /* before allocating from the header */
        return inca_fail(INCA_EINVAL, "%s: declares %" PRId64 " rows, the file holds at most %zu (.npy data of %d-byte "
                         "elements truncated)", path, cnt, (len - off) / (size_t)size, size);
    int64_t *out = inca_malloc((size_t)(cnt ? cnt : 1) * sizeof *out);
    if (!out) return INCA_ENOMEM;
    for (int64_t i = 0; i < cnt; i++) {
        const unsigned char *q = b + off + (size_t)i * (size_t)size;
        uint64_t u = 0;
        for (int k = 0; k < size; k++) u |= (uint64_t)q[k] << (8 * k);
        int64_t v;
        if (kind == 'i' && size < 8 && (u >> (8 * size - 1)) & 1) v = -1;   /* negative */
        else v = (int64_t)u;
        if (v < 0) {
            inca_free(out);
            return inca_fail(INCA_EINVAL, "%s: element %" PRId64 " is negative", path, i);
        }
        out[i] = v;
    }
    *ids = out;
    *n = cnt;
    return INCA_OK;
}

/* lines: NULL, or *lines gets each id's line (allocated beside *ids) */
static int text_parse(const char *path, const char *s, int64_t **ids, int64_t *n, int64_t **lines) {
    int64_t cap = 1024, cnt = 0, line = 1;
    int64_t *out = inca_malloc((size_t)cap * sizeof *out), *at = lines ? inca_malloc((size_t)cap * sizeof *at) : NULL;
    if (!out || (lines && !at)) {
        inca_free(out);
        inca_free(at);
        return INCA_ENOMEM;
    }
    const char *p = s;
    while (*p) {
        if (*p == '\n') { line++; p++; continue; }
        if (isspace((unsigned char)*p) || *p == ',') { p++; continue; }
        if (*p == '#') { while (*p && *p != '\n') p++; continue; }
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || (*end && !isspace((unsigned char)*end) && *end != ',' && *end != '#')) {
            inca_free(out);
            inca_free(at);
            const int shown = (int)(strcspn(p, "\r\n") < 20 ? strcspn(p, "\r\n") : 20);   /* one line of message */
            return inca_fail(INCA_EINVAL, "%s:%" PRId64 ": expected a non-negative integer index, got '%.*s'", path, line, shown, p);
        }
        if (cnt == cap) {
            int64_t *nb = inca_realloc(out, (size_t)cap * 2 * sizeof *out);
            if (nb) out = nb;
            int64_t *na = nb && at ? inca_realloc(at, (size_t)cap * 2 * sizeof *at) : NULL;
            if (na) at = na;
            if (!nb || (at && !na)) {
                inca_free(out);
                inca_free(at);
                return INCA_ENOMEM;
            }
            cap *= 2;
        }
        if (at) at[cnt] = line;
        out[cnt++] = v;
        p = end;
    }
    *ids = out;
    *n = cnt;
    if (lines) *lines = at;
    return INCA_OK;
}

int npy_read_indices(const char *path, int64_t **ids, int64_t *n) { return npy_read_indices_lines(path, ids, n, NULL); }

int npy_read_indices_lines(const char *path, int64_t **ids, int64_t *n, int64_t **lines) {
    *ids = NULL;
    *n = 0;
    if (lines) *lines = NULL;
    char *buf = NULL;
    size_t len = 0;
    int rc = file_slurp(path, &buf, &len);
    if (rc) return rc;
    if (len >= 6 && memcmp(buf, npy_magic, 6) == 0) rc = npy_parse(path, (const unsigned char *)buf, len, ids, n);
    else if (memchr(buf, '\0', len)) rc = inca_fail(INCA_EINVAL, "%s: neither a .npy file nor text indices", path);
    else rc = text_parse(path, buf, ids, n, lines);
    inca_free(buf);
    return rc;
}

int indices_write_text(const char *path, const int64_t *ids, int64_t n) {
    char tmp[4200];
    FILE *f = out_open(path, tmp, sizeof tmp);
    if (!f) return INCA_EIO;
    int ok = 1;
    for (int64_t i = 0; i < n && ok; i++) ok = fprintf(f, "%" PRId64 "\n", ids[i]) > 0;
    return out_commit(f, ok, tmp, path);
}
