/* The store's arrays (store.h): their layout (a checked descriptor in "meta", chunks keyed by
 * name and index in "arrays", or one side file) and every way to read them: info, views, chunks,
 * ranges, whole loads. Tested in test_store.c and test_store_corrupt.c. */
#include "loaders/store.h"
#include "loaders/store_impl.h"
#include "core/alloc.h"
#include "core/status.h"
#include "loaders/sidefile.h"
#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Parse a descriptor's payload: 1 chunked (d), 2 side file (d and sd), 0 malformed. */
int store_desc_parse(const void *p, size_t len, array_desc_t *d, side_desc_t *sd) {
    int kind = 0;
    if (len == sizeof *d && memcmp(p, "ARR1", 4) == 0) kind = 1;
    else if (len == sizeof *sd && memcmp(p, "ARRF", 4) == 0) {
        memcpy(sd, p, sizeof *sd);
        kind = memchr(sd->file, '\0', sizeof sd->file) && sidefile_is_name(sd->file, 0) &&
               sd->count == sd->chunk_elems ? 2 : 0;
    }
    if (kind) memcpy(d, p, sizeof *d);   /* the common prefix */
    size_t es = kind ? store_dtype_size((store_dtype_t)d->dtype) : 0;
    if (es == 0 || d->count < 0 || d->chunk_elems <= 0 || d->count > INT64_MAX / (int64_t)es ||
        d->chunk_elems > INT64_MAX / (int64_t)es)
        return 0;
    return kind;
}

size_t store_dtype_size(store_dtype_t t) {
    switch (t) {
    case DT_F32: case DT_I32: return 4;
    case DT_I64: case DT_F64: return 8;
    case DT_U8: return 1;
    case DT_BF16: return 2;
    }
    return 0;
}

void store_desc_key(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "array:%s", name); }

size_t store_chunk_key(unsigned char *buf, const char *name, int64_t i) {
    size_t n = strlen(name);
    memcpy(buf, name, n);
    buf[n] = '\0';
    for (int b = 0; b < 8; b++) buf[n + 1 + b] = (unsigned char)((uint64_t)i >> (56 - 8 * b));
    return n + 9;
}

/* The descriptor of array `name` (checked); *sd (may be NULL) gets a side file's. */
int store_desc_get(store_t *s, const char *name, store_array_info_t *info, side_desc_t *sd) {
    char k[512];
    store_desc_key(k, sizeof k, name);
    MDB_val v;
    int rc = store_get_locked(s, s->dbi_meta, k, strlen(k), &v);
    if (rc == INCA_ENOTFOUND) return inca_fail(rc, "%s: no array '%s' in the store", s->path, name);
    if (rc) return rc;
    array_desc_t d;
    side_desc_t side;
    size_t len;
    char what[600];
    snprintf(what, sizeof what, "descriptor of array '%.500s'", name);
    if ((rc = store_value_check(s, what, k, strlen(k), &v, &len))) return rc;
    const int kind = store_desc_parse(v.mv_data, len, &d, &side);
    if (!kind) return inca_fail(INCA_EINVAL, "%s: descriptor of array '%s' is corrupt", s->path, name);
    info->dtype = (store_dtype_t)d.dtype;
    info->count = d.count;
    info->chunk_elems = d.chunk_elems;
    info->nchunks = d.count / d.chunk_elems + (d.count % d.chunk_elems != 0);   /* no overflow */
    info->in_file = kind == 2;
    if (sd && kind == 2) *sd = side;
    return INCA_OK;
}

int store_array_info(store_t *s, const char *name, store_array_info_t *info) { return store_desc_get(s, name, info, NULL); }

/* The map of a side array's file (checked against its CRC the first time this store maps it) */
static int side_get(store_t *s, const char *name, const void **ptr) {
    store_array_info_t info;
    side_desc_t sd;
    int rc = store_desc_get(s, name, &info, &sd);
    if (rc == INCA_OK && !info.in_file) rc = inca_fail(INCA_EINVAL, "%s: array '%s' changed under a reader", s->path, name);
    if (rc) return rc;
    pthread_mutex_lock(&s->mu);
    rc = sidefile_cache_get(&s->side, s->path, sd.file, info.count * (int64_t)store_dtype_size(info.dtype), sd.crc, ptr);
    pthread_mutex_unlock(&s->mu);
    if (rc) inca_fail_ctx(rc, "array '%s'", name);
    return rc;
}

int store_has_array(store_t *s, const char *name) {
    store_array_info_t info;
    int rc = store_array_info(s, name, &info);
    inca_err_clear();
    return rc == INCA_OK;
}

/* *p as a view whose elements of es bytes may be read in place: itself when aligned, else an
 * aligned copy of its bytes the store keeps until the snapshot ends (see struct store). */
static int aligned_view(store_t *s, const void **p, size_t bytes, size_t es) {
    if ((uintptr_t)*p % es == 0) return INCA_OK;
    void *c = inca_malloc(bytes ? bytes : 1);
    if (!c) return INCA_ENOMEM;
    pthread_mutex_lock(&s->mu);
    if (s->ncopies == s->capcopies) {
        const int cap = s->capcopies ? 2 * s->capcopies : 8;
        void **g = inca_realloc(s->copies, sizeof *g * (size_t)cap);
        if (!g) {
            pthread_mutex_unlock(&s->mu);
            inca_free(c);
            return INCA_ENOMEM;
        }
        s->copies = g;
        s->capcopies = cap;
    }
    s->copies[s->ncopies++] = c;
    pthread_mutex_unlock(&s->mu);
    memcpy(c, *p, bytes);
    *p = c;
    return INCA_OK;
}

int store_chunk_get(store_t *s, const char *name, const store_array_info_t *info, int64_t i,
                    const void **ptr, int64_t *count) {
    if (i < 0 || i >= info->nchunks)
        return inca_fail(INCA_EINVAL, "%s: chunk %lld of array '%s' out of range", s->path, (long long)i, name);
    if (info->in_file) {
        *count = info->count;
        return side_get(s, name, ptr);
    }
    unsigned char k[600];
    if (strlen(name) > 500) return inca_fail(INCA_EINVAL, "array name too long");
    size_t kl = store_chunk_key(k, name, i);
    MDB_val v;
    int rc = store_get_locked(s, s->dbi_arrays, k, kl, &v);
    if (rc == INCA_ENOTFOUND) return inca_fail(INCA_EINVAL, "%s: chunk %lld of array '%s' is missing: the store is corrupt", s->path, (long long)i, name);
    if (rc) return rc;
    int64_t expect = info->count - i * info->chunk_elems;
    if (expect > info->chunk_elems) expect = info->chunk_elems;
    size_t es = store_dtype_size(info->dtype);
    /* the size first: a damaged length must not make the checksum read past the value */
    if (v.mv_size != (size_t)expect * es + 4)
        return inca_fail(INCA_EINVAL, "%s: chunk %lld of array '%s' has %zu bytes, expected %zu: the store is corrupt",
                         s->path, (long long)i, name, v.mv_size, (size_t)expect * es + 4);
    char what[600];
    size_t len;
    snprintf(what, sizeof what, "chunk %lld of array '%s'", (long long)i, name);
    if ((rc = store_value_check(s, what, k, kl, &v, &len))) return rc;
    *ptr = v.mv_data;
    *count = expect;
    return INCA_OK;
}

/* store_chunk_get for a caller that reads the elements in place (the public views): aligned for
 * them; the readers that copy out (store_array_read, _load, store_verify) take store_chunk_get's
 * pointer as it is and make no copy. */
static int view_get(store_t *s, const char *name, const store_array_info_t *info, int64_t i, const void **ptr,
                    int64_t *count) {
    int rc = store_chunk_get(s, name, info, i, ptr, count);
    const size_t es = store_dtype_size(info->dtype);
    if (rc == INCA_OK) rc = aligned_view(s, ptr, (size_t)*count * es, es);
    if (rc != INCA_OK) *ptr = NULL;
    return rc;
}

int store_array_view(store_t *s, const char *name, store_dtype_t want, const void **ptr, int64_t *count) {
    store_array_info_t info;
    *ptr = NULL;
    int rc = store_array_info(s, name, &info);
    if (rc != INCA_OK) return rc;
    if (info.dtype != want)
        return inca_fail(INCA_EINVAL, "%s: array '%s' has dtype %d, expected %d", s->path, name, (int)info.dtype, (int)want);
    if (info.nchunks > 1)
        return inca_fail(INCA_EINVAL, "%s: array '%s' is stored in %lld chunks; a view needs one (written by "
                         "store_wtx_put_array_whole)", s->path, name, (long long)info.nchunks);
    if (count) *count = info.count;
    if (info.count == 0) return INCA_OK;
    int64_t got = 0;
    return view_get(s, name, &info, 0, ptr, &got);
}

int store_array_chunk(store_t *s, const char *name, int64_t i, const void **ptr, int64_t *count) {
    store_array_info_t info;
    int rc = store_array_info(s, name, &info);
    if (rc) return rc;
    return view_get(s, name, &info, i, ptr, count);
}

int store_array_read(store_t *s, const char *name, int64_t start, int64_t count, void *dst) {
    store_array_info_t info;
    int rc = store_array_info(s, name, &info);
    if (rc) return rc;
    if (start < 0 || count < 0 || start + count > info.count)
        return inca_fail(INCA_EINVAL, "%s: range [%lld, %lld) outside array '%s' of %lld elements", s->path,
                         (long long)start, (long long)(start + count), name, (long long)info.count);
    size_t es = store_dtype_size(info.dtype);
    int64_t done = 0;
    while (done < count) {
        int64_t g = start + done, ci = g / info.chunk_elems, off = g - ci * info.chunk_elems;
        const void *p;
        int64_t n;
        rc = store_chunk_get(s, name, &info, ci, &p, &n);
        if (rc) return rc;
        int64_t take = n - off < count - done ? n - off : count - done;
        memcpy((char *)dst + (size_t)done * es, (const char *)p + (size_t)off * es, (size_t)take * es);
        done += take;
    }
    return INCA_OK;
}

int store_array_load(store_t *s, const char *name, store_dtype_t want, void **out, int64_t *count) {
    *out = NULL;
    store_array_info_t info;
    int rc = store_array_info(s, name, &info);
    if (rc) return rc;
    if (info.dtype != want)
        return inca_fail(INCA_EINVAL, "%s: array '%s' has dtype %d, expected %d", s->path, name, info.dtype, want);
    /* every chunk lives in data.mdb: a descriptor claiming more is corrupt, not an allocation */
    size_t bytes = (size_t)info.count * store_dtype_size(info.dtype);
    int64_t disk = store_disk_bytes(s);   /* a side file's size is checked when it is mapped */
    if (!info.in_file && disk >= 0 && bytes > (size_t)disk)
        return inca_fail(INCA_EINVAL, "%s: array '%s' declares %lld elements (%zu bytes), the store holds %lld bytes: the store is corrupt",
                         s->path, name, (long long)info.count, bytes, (long long)disk);
    void *buf = inca_malloc(bytes);
    if (!buf) return INCA_ENOMEM;
    rc = store_array_read(s, name, 0, info.count, buf);
    if (rc) { inca_free(buf); return rc; }
    *out = buf;
    if (count) *count = info.count;
    return INCA_OK;
}
