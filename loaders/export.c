/* Datasets written back out in the OGB raw layout, as .npz or as .npy files; see export.h. */
#include "loaders/export.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/npy.h"
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define EXPORT_PATH_MAX 4096

int export_format_parse(const char *s, int *fmt) {
    static const char *const names[] = {"ogb", "npz", "npy"};
    for (int i = 0; i < 3; i++)
        if (s && strcmp(s, names[i]) == 0) { *fmt = i; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--format: expected ogb|npz|npy, got '%s'", s ? s : "(null)");
}

/* ---- text (.csv.gz) through one buffer ---- */
typedef struct gzout {
    gzFile gz;
    const char *path;
    char buf[1 << 16];
    size_t len;
    int rc;
} gzout_t;

static int gz_open(gzout_t *o, const char *path) {
    memset(o, 0, sizeof *o);   /* o->buf is left as memset made it: cheap next to the file */
    o->path = path;
    if (!(o->gz = gzopen(path, "wb6"))) return inca_fail(INCA_EIO, "%s: cannot create: %s", path, strerror(errno));
    return INCA_OK;
}
static void gz_flush(gzout_t *o) {
    if (o->rc == INCA_OK && o->len > 0 && gzwrite(o->gz, o->buf, (unsigned)o->len) != (int)o->len)
        o->rc = inca_fail(INCA_EIO, "%s: write failed", o->path);
    o->len = 0;
}
/* append at most 64 bytes of printf output */
static void gz_put(gzout_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void gz_put(gzout_t *o, const char *fmt, ...) {
    if (o->len + 64 > sizeof o->buf) gz_flush(o);
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(o->buf + o->len, 64, fmt, ap);
    va_end(ap);
    if (k > 0 && k < 64) o->len += (size_t)k;
    else if (o->rc == INCA_OK) o->rc = inca_fail(INCA_ERR, "%s: a value does not fit its buffer", o->path);
}
static int gz_close(gzout_t *o, int64_t *bytes) {
    gz_flush(o);
    if (gzclose(o->gz) != Z_OK && o->rc == INCA_OK) o->rc = inca_fail(INCA_EIO, "%s: write failed", o->path);
    struct stat st;
    if (o->rc == INCA_OK && stat(o->path, &st) == 0) *bytes += st.st_size;
    return o->rc;
}

static int join(char *out, const char *dir, const char *name) {
    const int k = snprintf(out, EXPORT_PATH_MAX, "%s/%s", dir, name);
    return k > 0 && k < EXPORT_PATH_MAX ? INCA_OK : inca_fail(INCA_EINVAL, "%s/%s: path too long", dir, name);
}

static int one_count(const char *path, int64_t v, export_stats_t *st) {
    gzout_t o;
    int rc = gz_open(&o, path);
    if (rc) return rc;
    gz_put(&o, "%" PRId64 "\n", v);
    st->files++;
    return gz_close(&o, &st->bytes);
}

static int ids_file(const char *path, const int64_t *ids, int64_t n, export_stats_t *st) {
    gzout_t o;
    int rc = gz_open(&o, path);
    if (rc) return rc;
    for (int64_t i = 0; i < n && o.rc == INCA_OK; i++) gz_put(&o, "%" PRId64 "\n", ids[i]);
    st->files++;
    return gz_close(&o, &st->bytes);
}

static int write_ogb(const dataset_t *d, const char *dir, const char *split, export_stats_t *st) {
    char raw[EXPORT_PATH_MAX], p[EXPORT_PATH_MAX], sd[EXPORT_PATH_MAX];
    int rc;
    if ((rc = join(raw, dir, "raw")) || (rc = join(p, dir, "split")) || (rc = join(sd, p, split))) return rc;
    if (mkdir(raw, 0777) != 0 || mkdir(p, 0777) != 0 || mkdir(sd, 0777) != 0)
        return inca_fail(INCA_EIO, "%s: cannot create its folders: %s", dir, strerror(errno));
    /* OGB's loaders take a dataset folder without RELEASE_v<version>.txt for an outdated
     * download and offer to delete it; version 1, as the bundled datasets' marker */
    char rel[EXPORT_PATH_MAX];
    FILE *rf = NULL;
    if ((rc = join(rel, dir, "RELEASE_v1.txt"))) return rc;
    if (!(rf = fopen(rel, "w")) || fclose(rf) != 0) return inca_fail_write(rel, errno);
    st->files++;
    const csr_t *a = &d->adj;
    int64_t m = 0;
    for (int64_t u = 0; u < a->n_rows; u++)
        for (int64_t e = a->rowptr[u]; e < a->rowptr[u + 1]; e++) m += a->col[e] > u;
    st->edges = m;
    gzout_t o;
    if ((rc = join(p, raw, "num-node-list.csv.gz")) || (rc = one_count(p, d->n, st))) return rc;
    if ((rc = join(p, raw, "num-edge-list.csv.gz")) || (rc = one_count(p, m, st))) return rc;
    if ((rc = join(p, raw, "edge.csv.gz")) || (rc = gz_open(&o, p))) return rc;
    for (int64_t u = 0; u < a->n_rows && o.rc == INCA_OK; u++)
        for (int64_t e = a->rowptr[u]; e < a->rowptr[u + 1]; e++)
            if (a->col[e] > u) gz_put(&o, "%" PRId64 ",%" PRId32 "\n", u, a->col[e]);
    st->files++;
    if ((rc = gz_close(&o, &st->bytes))) return rc;
    if (d->x && d->f > 0) {   /* optional in OGB's layout (its loaders read None without it) */
        if ((rc = join(p, raw, "node-feat.csv.gz")) || (rc = gz_open(&o, p))) return rc;
        for (int64_t i = 0; i < d->n && o.rc == INCA_OK; i++)
            for (int64_t k = 0; k < d->f; k++) gz_put(&o, k + 1 < d->f ? "%.9g," : "%.9g\n", (double)d->x[i * d->f + k]);
        st->files++;
        if ((rc = gz_close(&o, &st->bytes))) return rc;
    }
    if (d->y) {
        if ((rc = join(p, raw, "node-label.csv.gz")) || (rc = gz_open(&o, p))) return rc;
        for (int64_t i = 0; i < d->n && o.rc == INCA_OK; i++) gz_put(&o, "%" PRId32 "\n", d->y[i] >= 0 ? d->y[i] : -1);
        st->files++;
        if ((rc = gz_close(&o, &st->bytes))) return rc;
    }
    for (int s = 0; s < SPLIT_COUNT; s++) {
        char name[32];
        snprintf(name, sizeof name, "%s.csv.gz", dataset_split_names[s]);
        if ((rc = join(p, sd, name)) || (rc = ids_file(p, d->split[s], d->split_n[s], st))) return rc;
    }
    /* the named splits stored beside the default, one folder each */
    for (int32_t i = 0; i < d->n_more; i++) {
        const dataset_named_split_t *ns = &d->more[i];
        char sp[EXPORT_PATH_MAX];
        if ((rc = join(p, dir, "split")) || (rc = join(sp, p, ns->name))) return rc;
        if (mkdir(sp, 0777) != 0) return inca_fail(INCA_EIO, "%s: cannot create: %s", sp, strerror(errno));
        for (int s = 0; s < SPLIT_COUNT; s++) {
            char name[32];
            snprintf(name, sizeof name, "%s.csv.gz", dataset_split_names[s]);
            if ((rc = join(p, sp, name)) || (rc = ids_file(p, ns->ids[s], ns->n[s], st))) return rc;
        }
    }
    return INCA_OK;
}

/* ---- the arrays (npz members or npy files) ---- */
typedef struct arr {
    const char *name;     /* "x" -> x.npy */
    char descr[8];
    char shape[64];
    const void *data;     /* NULL: made by fill() */
    int64_t bytes;
    int64_t *own;         /* owned data (edge_index, y) */
} arr_t;

enum { A_X = 0, A_Y, A_EI, A_TR, A_VA, A_TE, A_PART, A_N };

/* the arrays of d (and part, when given) ; *na: how many */
static int arrays_make(const dataset_t *d, const int64_t *part, arr_t *A, int *na) {
    memset(A, 0, sizeof(arr_t) * A_N);
    *na = part ? A_N : A_PART;
    if (part) {
        A[A_PART] = (arr_t){.name = "part", .descr = "<i8", .data = part, .bytes = (int64_t)sizeof(int64_t) * d->n};
        snprintf(A[A_PART].shape, sizeof A[A_PART].shape, "(%" PRId64 ",)", d->n);
    }
    const csr_t *g = &d->adj;
    A[A_X] = (arr_t){.name = "x", .descr = "<f4", .data = d->x, .bytes = (int64_t)sizeof(float) * d->n * d->f};
    snprintf(A[A_X].shape, sizeof A[A_X].shape, "(%" PRId64 ", %" PRId64 ")", d->n, d->f);
    A[A_Y] = (arr_t){.name = "y", .descr = "<i8", .bytes = (int64_t)sizeof(int64_t) * d->n};
    snprintf(A[A_Y].shape, sizeof A[A_Y].shape, "(%" PRId64 ",)", d->n);
    if (!(A[A_Y].own = inca_malloc(sizeof(int64_t) * (size_t)(d->n ? d->n : 1)))) return INCA_ENOMEM;
    for (int64_t i = 0; i < d->n; i++) A[A_Y].own[i] = d->y && d->y[i] >= 0 ? d->y[i] : -1;
    const int64_t nnz = g->rowptr ? g->nnz : 0;
    A[A_EI] = (arr_t){.name = "edge_index", .descr = "<i8", .bytes = (int64_t)sizeof(int64_t) * 2 * nnz};
    snprintf(A[A_EI].shape, sizeof A[A_EI].shape, "(2, %" PRId64 ")", nnz);
    if (!(A[A_EI].own = inca_malloc(sizeof(int64_t) * (size_t)(nnz ? 2 * nnz : 1)))) return INCA_ENOMEM;
    for (int64_t u = 0; u < (g->rowptr ? g->n_rows : 0); u++)
        for (int64_t e = g->rowptr[u]; e < g->rowptr[u + 1]; e++) {
            A[A_EI].own[e] = u;
            A[A_EI].own[nnz + e] = g->col[e];
        }
    static const char *const sn[SPLIT_COUNT] = {"train_idx", "valid_idx", "test_idx"};
    for (int s = 0; s < SPLIT_COUNT; s++) {
        A[A_TR + s] = (arr_t){.name = sn[s], .descr = "<i8", .data = d->split[s],
                              .bytes = (int64_t)sizeof(int64_t) * d->split_n[s]};
        snprintf(A[A_TR + s].shape, sizeof A[A_TR + s].shape, "(%" PRId64 ",)", d->split_n[s]);
    }
    for (int i = 0; i < A_N; i++)
        if (A[i].own) A[i].data = A[i].own;
    if (!d->x || d->f < 1) {   /* a graph without features (R-MAT, an edge list): no x member */
        memmove(A, A + 1, sizeof(arr_t) * (A_N - 1));
        memset(&A[A_N - 1], 0, sizeof A[A_N - 1]);
        (*na)--;
    }
    return INCA_OK;
}

static void arrays_free(arr_t *A) {
    for (int i = 0; i < A_N; i++) inca_free(A[i].own);
}

static int write_npy_dir(const arr_t *A, int na, const char *dir, export_stats_t *st) {   /* dir exists */
    for (int i = 0; i < na; i++) {
        char p[EXPORT_PATH_MAX], name[64];
        snprintf(name, sizeof name, "%s.npy", A[i].name);
        unsigned char head[NPY_HEADER_MAX];
        const int64_t hl = npy_header(A[i].descr, A[i].shape, head, sizeof head);
        if (hl < 0) return (int)hl;
        int rc = join(p, dir, name);
        if (rc) return rc;
        FILE *f = fopen(p, "wb");
        if (!f) return inca_fail(INCA_EIO, "%s: cannot create: %s", p, strerror(errno));
        int ok = fwrite(head, 1, (size_t)hl, f) == (size_t)hl &&
                 (A[i].bytes == 0 || fwrite(A[i].data, 1, (size_t)A[i].bytes, f) == (size_t)A[i].bytes);
        if (fclose(f) != 0) ok = 0;
        if (!ok) return inca_fail(INCA_EIO, "%s: write failed", p);
        st->files++;
        st->bytes += hl + A[i].bytes;
    }
    return INCA_OK;
}

/* little-endian fields of the zip headers */
static void le16(unsigned char *p, unsigned v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void le32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* A zip of stored (uncompressed) members, as numpy.savez writes: local header, data, then the
 * central directory and its end record. No ZIP64: members and offsets below 4 GiB. */
static int write_npz(const arr_t *A, int na, const char *path, export_stats_t *st) {
    FILE *f = fopen(path, "wb");
    if (!f) return inca_fail(INCA_EIO, "%s: cannot create: %s", path, strerror(errno));
    uint32_t crc[A_N], size[A_N], off[A_N];
    unsigned char head[A_N][NPY_HEADER_MAX];
    int64_t hl[A_N];
    int64_t pos = 0;
    int ok = 1, rc = INCA_OK;
    for (int i = 0; i < na && ok && rc == INCA_OK; i++) {
        char name[64];
        const int nl = snprintf(name, sizeof name, "%s.npy", A[i].name);
        if ((hl[i] = npy_header(A[i].descr, A[i].shape, head[i], sizeof head[i])) < 0) { rc = (int)hl[i]; break; }
        const int64_t total = hl[i] + A[i].bytes;
        if (total >= (int64_t)UINT32_MAX || pos + 30 + nl + total >= (int64_t)UINT32_MAX) {
            rc = inca_fail(INCA_EINVAL, "%s: member %s.npy (%" PRId64 " bytes) needs ZIP64, which inca does not write; use "
                           "--format npy", path, A[i].name, total);
            break;
        }
        /* zlib's crc32 takes uInt lengths: the data in pieces */
        uLong c = crc32(0L, head[i], (uInt)hl[i]);
        for (int64_t o = 0; o < A[i].bytes; o += 1 << 30) {
            const int64_t k = A[i].bytes - o < (1 << 30) ? A[i].bytes - o : (1 << 30);
            c = crc32(c, (const Bytef *)A[i].data + o, (uInt)k);
        }
        crc[i] = (uint32_t)c;
        size[i] = (uint32_t)total;
        off[i] = (uint32_t)pos;
        unsigned char lh[30] = {0};
        le32(lh, 0x04034b50);
        le16(lh + 4, 20);   /* version needed: 2.0 */
        le32(lh + 14, crc[i]);
        le32(lh + 18, size[i]);
        le32(lh + 22, size[i]);
        le16(lh + 26, (unsigned)nl);
        ok = fwrite(lh, 1, 30, f) == 30 && fwrite(name, 1, (size_t)nl, f) == (size_t)nl &&
             fwrite(head[i], 1, (size_t)hl[i], f) == (size_t)hl[i] &&
             (A[i].bytes == 0 || fwrite(A[i].data, 1, (size_t)A[i].bytes, f) == (size_t)A[i].bytes);
        pos += 30 + nl + total;
    }
    const int64_t cd = pos;
    for (int i = 0; i < na && ok && rc == INCA_OK; i++) {
        char name[64];
        const int nl = snprintf(name, sizeof name, "%s.npy", A[i].name);
        unsigned char ch[46] = {0};
        le32(ch, 0x02014b50);
        le16(ch + 4, 20);
        le16(ch + 6, 20);
        le32(ch + 16, crc[i]);
        le32(ch + 20, size[i]);
        le32(ch + 24, size[i]);
        le16(ch + 28, (unsigned)nl);
        le32(ch + 42, off[i]);
        ok = fwrite(ch, 1, 46, f) == 46 && fwrite(name, 1, (size_t)nl, f) == (size_t)nl;
        pos += 46 + nl;
    }
    if (ok && rc == INCA_OK && pos >= (int64_t)UINT32_MAX)
        rc = inca_fail(INCA_EINVAL, "%s: the archive needs ZIP64, which inca does not write; use --format npy", path);
    if (ok && rc == INCA_OK) {
        unsigned char e[22] = {0};
        le32(e, 0x06054b50);
        le16(e + 8, (unsigned)na);
        le16(e + 10, (unsigned)na);
        le32(e + 12, (uint32_t)(pos - cd));
        le32(e + 16, (uint32_t)cd);
        ok = fwrite(e, 1, 22, f) == 22;
        pos += 22;
    }
    if (fclose(f) != 0) ok = 0;
    if (rc == INCA_OK && !ok) rc = inca_fail(INCA_EIO, "%s: write failed", path);
    if (rc == INCA_OK) {
        st->files = 1;
        st->bytes = pos;
    }
    return rc;
}

/* rm -r of the temporary output after a failure (export made it: mkdir refuses an existing one) */
static void remove_tree(const char *path, int fmt) {
    if (fmt == EXPORT_NPZ) remove(path);
    else inca_rmtree(path);
}

int export_dataset(const dataset_t *d, int fmt, const char *out, const char *split_name, export_stats_t *st) {
    return export_dataset_parts(d, fmt, out, split_name, NULL, st);
}

int export_dataset_parts(const dataset_t *d, int fmt, const char *out, const char *split_name, const int64_t *part,
                         export_stats_t *st) {
    memset(st, 0, sizeof *st);
    const char *split = split_name && *split_name ? split_name : d->split_name[0] ? d->split_name : "stored";
    if (fmt < EXPORT_OGB || fmt > EXPORT_NPY) return inca_fail(INCA_EINVAL, "--format: unknown format %d", fmt);
    if (strchr(split, '/') || strcmp(split, ".") == 0 || strcmp(split, "..") == 0)
        return inca_fail(INCA_EINVAL, "--split-name: expected a folder name, got '%s'", split);
    for (int32_t i = 0; i < d->n_more; i++)
        if (strcmp(d->more[i].name, split) == 0)
            return inca_fail(INCA_EINVAL, "--split-name %s: the store holds another split of that name", split);
    if ((!d->x || d->f < 1) && !d->adj.rowptr)
        return inca_fail(INCA_EINVAL, "the dataset has neither features nor a graph: nothing to write");
    if (part && fmt == EXPORT_OGB)
        return inca_fail(INCA_EINVAL, "export --partition: the OGB layout has no place for a part vector; use --format npz or npy");
    if (fmt == EXPORT_OGB && !d->adj.rowptr)
        return inca_fail(INCA_EINVAL, "export --format ogb: the dataset has no graph (OGB node datasets have one); "
                         "use --format npz or npy");
    /* OGB's edge list is read back symmetrised and without self-loops (loaders/ingest_ogb.c): a
     * graph that is neither would come back another graph */
    if (fmt == EXPORT_OGB) {
        int64_t loops = 0;
        for (int64_t u = 0; u < d->adj.n_rows; u++)
            for (int64_t e = d->adj.rowptr[u]; e < d->adj.rowptr[u + 1]; e++) loops += d->adj.col[e] == u;
        if (loops || !csr_is_symmetric(&d->adj))
            return inca_fail(INCA_EINVAL, "export --format ogb: the graph %s, and OGB's edge list is ingested symmetrised "
                             "without self-loops (it would come back another graph); use --format npz or npy",
                             loops ? "has self-loops" : "is directed");
    }
    struct stat sb;
    if (stat(out, &sb) == 0) return inca_fail(INCA_EINVAL, "%s: exists; export writes a new %s", out, fmt == EXPORT_NPZ ? "file" : "folder");
    char tmp[EXPORT_PATH_MAX];
    const int k = snprintf(tmp, sizeof tmp, "%s.tmp-%ld", out, (long)getpid());
    if (k < 0 || k >= (int)sizeof tmp) return inca_fail(INCA_EINVAL, "%s: path too long", out);
    int rc = INCA_OK;
    arr_t A[A_N];
    memset(A, 0, sizeof A);
    /* a folder of ours (mkdir refuses an existing one), so a failure may remove it whole */
    if ((rc = inca_out_check(out)) != INCA_OK) return rc;   /* before any work, naming out */
    if (fmt != EXPORT_NPZ && mkdir(tmp, 0777) != 0) return inca_fail_write(out, errno);
    if (fmt == EXPORT_OGB) {
        rc = write_ogb(d, tmp, split, st);
    } else {
        int na = 0;
        rc = arrays_make(d, part, A, &na);
        st->edges = d->adj.rowptr ? d->adj.nnz : 0;
        if (rc == INCA_OK) rc = fmt == EXPORT_NPZ ? write_npz(A, na, tmp, st) : write_npy_dir(A, na, tmp, st);
        arrays_free(A);
    }
    if (rc == INCA_OK && rename(tmp, out) != 0)
        rc = inca_fail(INCA_EIO, "%s: cannot move the finished export into place: %s", out, strerror(errno));
    if (rc != INCA_OK) {
        remove_tree(tmp, fmt);
        rc = inca_err_untemp(rc, tmp, out);   /* a file inside names out/..., as the user knows it */
    }
    return rc;
}
