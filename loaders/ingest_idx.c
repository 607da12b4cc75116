/* MNIST-style IDX folders: {train,t10k}-images-idx3-ubyte and -labels-idx1-ubyte (also the
 * "train-images.idx3-ubyte" spelling, each optionally .gz), big-endian headers with magic
 * 0x00000803 / 0x00000801; pixels become float32 byte/255. Examples: train then test; no graph.
 * Tested in tests/test_ingest.c (small hand-made files), tests/test_e2e_ingest.c (Fashion-MNIST)
 * and tests/data/bad/idx-*. */
#include "loaders/ingest_internal.h"
#include "core/alloc.h"
#include "core/status.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

typedef struct idx_file {
    gzFile gz;
    char path[INGEST_PATH_MAX];
    int64_t off;
} idx_file_t;

static int idx_find(const char *dir, const char *prefix, const char *kind, int dims, char *out, size_t size) {
    char names[4][128];
    snprintf(names[0], sizeof names[0], "%s-%s-idx%d-ubyte", prefix, kind, dims);
    snprintf(names[1], sizeof names[1], "%s-%s.idx%d-ubyte", prefix, kind, dims);
    static const char *const exts[] = {"", ".gz", NULL};
    struct stat st;
    for (int i = 0; i < 2; i++)
        for (int j = 0; exts[j]; j++) {
            char nm[600];
            snprintf(nm, sizeof nm, "%s%s", names[i], exts[j]);
            int rc = ingest_path_join(out, size, dir, nm);
            if (rc) return rc;
            if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) return INCA_OK;
        }
    return inca_fail(INCA_ENOTFOUND, "%s/%s[.gz]: no such file (an IDX folder needs train-/t10k- images and labels)",
                     dir, names[0]);
}

static int idx_read(idx_file_t *f, void *buf, int64_t bytes, const char *what) {
    int64_t done = 0;
    while (done < bytes) {
        int64_t want = bytes - done;
        if (want > (1 << 30)) want = 1 << 30;
        int got = gzread(f->gz, (char *)buf + done, (unsigned)want);
        int errnum = Z_OK;
        const char *msg = gzerror(f->gz, &errnum);
        if (got < 0 || (got == 0 && errnum != Z_OK)) {
            if (errnum == Z_BUF_ERROR)
                return inca_fail(INCA_EINVAL, "%s: byte offset %lld: truncated gzip stream while reading %s",
                                 f->path, (long long)(f->off + done), what);
            return inca_fail(errnum == Z_ERRNO ? INCA_EIO : INCA_EINVAL, "%s: byte offset %lld: %s while reading %s",
                             f->path, (long long)(f->off + done), errnum == Z_ERRNO ? strerror(errno) : msg, what);
        }
        if (got == 0)
            return inca_fail(INCA_EINVAL, "%s: byte offset %lld: file ends early: expected %lld more bytes of %s",
                             f->path, (long long)(f->off + done), (long long)(bytes - done), what);
        done += got;
    }
    f->off += bytes;
    return INCA_OK;
}

static uint32_t be32(const unsigned char *b) {
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

/* Open and read the header: magic, then ndims big-endian sizes. */
static int idx_open(idx_file_t *f, const char *path, uint32_t magic, int ndims, uint32_t *dims) {
    snprintf(f->path, sizeof f->path, "%s", path);
    f->off = 0;
    f->gz = gzopen(path, "rb");
    if (!f->gz) return inca_fail(INCA_EIO, "%s: cannot open: %s", path, strerror(errno ? errno : EIO));
    unsigned char h[16];
    int rc = idx_read(f, h, 4 + 4 * ndims, "the header");
    if (rc) return rc;
    uint32_t got = be32(h);
    if (got != magic)
        return inca_fail(INCA_EINVAL, "%s: byte offset 0: expected IDX magic 0x%08x (%d dims of unsigned bytes), got 0x%08x",
                         path, magic, ndims, got);
    for (int i = 0; i < ndims; i++) dims[i] = be32(h + 4 + 4 * i);
    return INCA_OK;
}

static int idx_expect_end(idx_file_t *f) {
    unsigned char b;
    int got = gzread(f->gz, &b, 1);
    int errnum = Z_OK;
    gzerror(f->gz, &errnum);
    if (got == 0 && errnum == Z_OK) return INCA_OK;
    if (got == 0 && errnum == Z_BUF_ERROR)
        return inca_fail(INCA_EINVAL, "%s: byte offset %lld: truncated gzip stream at the end", f->path, (long long)f->off);
    return inca_fail(INCA_EINVAL, "%s: byte offset %lld: expected the end of the file after the data the header "
                     "describes, found more bytes", f->path, (long long)f->off);
}

static void idx_close(idx_file_t *f) {
    if (f->gz) gzclose_r(f->gz);
    f->gz = NULL;
}

/* Read one image/label pair into d at example offset `at`; checks counts and image size. */
static int idx_part(const char *dir, const char *prefix, dataset_t *d, int64_t *count, int64_t *pix,
                    int pass, int64_t at) {
    char ipath[INGEST_PATH_MAX], lpath[INGEST_PATH_MAX];
    idx_file_t fi = {0}, fl = {0};
    unsigned char *buf = NULL;
    uint32_t idims[3], ldims[1];
    int rc;
    if ((rc = idx_find(dir, prefix, "images", 3, ipath, sizeof ipath))) goto done;
    if ((rc = idx_find(dir, prefix, "labels", 1, lpath, sizeof lpath))) goto done;
    if ((rc = idx_open(&fi, ipath, 0x00000803u, 3, idims))) goto done;
    if ((rc = idx_open(&fl, lpath, 0x00000801u, 1, ldims))) goto done;
    /* image sizes first: the declared-size check below multiplies them (fuzz_idx: overflow) */
    if (idims[1] == 0 || idims[2] == 0 || idims[1] > 65535 || idims[2] > 65535) {
        rc = inca_fail(INCA_EINVAL, "%s: byte offset 8: expected image sizes in 1..65535, got %ux%u", ipath, idims[1],
                       idims[2]);
        goto done;
    }
    if (pass == 0) {   /* before the arrays are sized from the headers */
        char where[INGEST_PATH_MAX + 32];
        snprintf(where, sizeof where, "%s: byte offset 4", ipath);
        int64_t pixels = (int64_t)idims[1] * idims[2];
        if ((rc = ingest_check_declared(where, ipath, idims[0], "rows (images)", pixels, 16))) goto done;
        snprintf(where, sizeof where, "%s: byte offset 4", lpath);
        if ((rc = ingest_check_declared(where, lpath, ldims[0], "rows (labels)", 1, 8))) goto done;
    }
    if (idims[0] != ldims[0]) {
        rc = inca_fail(INCA_EINVAL, "%s: byte offset 4: expected %u labels (as many as images in %s), got %u",
                       lpath, idims[0], ipath, ldims[0]);
        goto done;
    }
    int64_t p = (int64_t)idims[1] * idims[2];
    /* *pix: rows << 32 | cols of the train images (the same pixel count in another shape would
     * put another pixel in each feature) */
    const int64_t shape = (int64_t)idims[1] << 32 | idims[2];
    if (*pix && shape != *pix) {
        rc = inca_fail(INCA_EINVAL, "%s: byte offset 8: expected %lldx%lld images (as in the train images), got %ux%u",
                       ipath, (long long)(*pix >> 32), (long long)(*pix & 0xffffffff), idims[1], idims[2]);
        goto done;
    }
    *pix = shape;
    *count = idims[0];
    if (pass == 0) goto done;   /* first pass: headers only, to size the arrays */
    int64_t n = idims[0];
    int64_t rows_per = n < 4096 ? (n ? n : 1) : 4096;
    buf = inca_malloc((size_t)(rows_per * p > n ? rows_per * p : n));
    if (!buf) { rc = INCA_ENOMEM; goto done; }
    for (int64_t i = 0; i < n; i += rows_per) {
        int64_t k = n - i < rows_per ? n - i : rows_per;
        if ((rc = idx_read(&fi, buf, k * p, "pixel data"))) goto done;
        float *x = d->x + (at + i) * p;
        for (int64_t j = 0; j < k * p; j++) x[j] = (float)buf[j] / 255.0f;
    }
    if ((rc = idx_expect_end(&fi))) goto done;
    if ((rc = idx_read(&fl, buf, n, "labels"))) goto done;
    for (int64_t i = 0; i < n; i++) d->y[at + i] = buf[i];
    rc = idx_expect_end(&fl);
done:
    inca_free(buf);
    idx_close(&fi);
    idx_close(&fl);
    return rc;
}

int ingest_idx(const char *dir, const ingest_opts_t *o, dataset_t *out) {
    dataset_t d;
    dataset_init(&d);
    dataset_init(out);
    (void)o;
    int64_t ntr = 0, nte = 0, pix = 0;   /* the images' shape, rows << 32 | cols (idx_part) */
    struct stat st;
    int rc;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return inca_fail(INCA_ENOTFOUND, "%s: expected a folder holding the IDX files", dir);
    if ((rc = idx_part(dir, "train", &d, &ntr, &pix, 0, 0))) goto fail;
    if ((rc = idx_part(dir, "t10k", &d, &nte, &pix, 0, 0))) goto fail;
    d.n = ntr + nte;
    d.f = (pix >> 32) * (pix & 0xffffffff);   /* rows x cols */
    if (d.n == 0) { rc = inca_fail(INCA_EINVAL, "%s: expected at least one example, the IDX headers say 0", dir); goto fail; }
    d.x = inca_malloc((size_t)d.n * (size_t)d.f * sizeof *d.x);
    d.y = inca_malloc((size_t)d.n * sizeof *d.y);
    d.split[SPLIT_TRAIN] = inca_malloc((size_t)(ntr ? ntr : 1) * sizeof(int64_t));
    d.split[SPLIT_TEST] = inca_malloc((size_t)(nte ? nte : 1) * sizeof(int64_t));
    if (!d.x || !d.y || !d.split[SPLIT_TRAIN] || !d.split[SPLIT_TEST]) { rc = INCA_ENOMEM; goto fail; }
    if ((rc = idx_part(dir, "train", &d, &ntr, &pix, 1, 0))) goto fail;
    if ((rc = idx_part(dir, "t10k", &d, &nte, &pix, 1, ntr))) goto fail;
    for (int64_t i = 0; i < ntr; i++) d.split[SPLIT_TRAIN][i] = i;
    for (int64_t i = 0; i < nte; i++) d.split[SPLIT_TEST][i] = ntr + i;
    d.split_n[SPLIT_TRAIN] = ntr;
    d.split_n[SPLIT_TEST] = nte;
    ingest_set_classes(&d);
    snprintf(d.source, sizeof d.source, "idx:%s", dir);
    *out = d;
    return INCA_OK;
fail:
    dataset_free(&d);
    return rc;
}
