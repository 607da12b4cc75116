/* The LMDB store (see store.h for the layout and the caveats). Every LMDB return code is
 * translated here; nothing else in inca calls LMDB for stores. Every value carries a CRC32
 * trailer (zlib) over its key and bytes, checked on every read. Tested in test_store.c and
 * test_store_corrupt.c (byte flips in data.mdb, disk full). */
#include "loaders/store.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/lmdb_check.h"
#include "loaders/sidefile.h"
#include <dirent.h>
#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define INITIAL_MAP (64ull << 20)

struct store {
    char *path;
    MDB_env *env;
    MDB_dbi dbi_meta, dbi_arrays;
    MDB_txn *rtxn;          /* shared read snapshot, begun lazily */
    int rtxn_live;          /* 0: absent or reset */
    int writable;
    size_t mapsize;
    store_meta_t meta;
    int has_meta;
    pthread_mutex_t mu;     /* LMDB txns must not be used by two threads at once */
    sidefile_cache_t *side; /* maps of side files handed out (under mu) */
    /* aligned copies of values LMDB keeps inside a leaf page (small ones: only 2-byte aligned
     * there; a larger value starts an overflow page run), handed out as views; under mu, freed
     * when the snapshot is renewed or the store closed, as the views they stand for end */
    void **copies;
    int ncopies, capcopies;
};

typedef struct {
    char magic[4];          /* "ARR1" */
    int32_t dtype;
    int64_t count, chunk_elems;
} array_desc_t;

/* An array too large for one LMDB value, in a file beside data.mdb (loaders/sidefile.h): no
 * chunks in "arrays"; the descriptor names the file and its CRC. */
typedef struct {
    char magic[4];          /* "ARRF" */
    int32_t dtype;
    int64_t count, chunk_elems;   /* chunk_elems = count: one piece */
    uint32_t crc;                 /* CRC32 (zlib) of the file's bytes */
    char file[SIDEFILE_NAME_MAX];
    uint32_t pad;
} side_desc_t;

static int64_t g_whole_max = STORE_WHOLE_MAX_BYTES;
void store_set_whole_max_bytes(int64_t bytes) {
    g_whole_max = bytes > 0 && bytes < STORE_WHOLE_MAX_BYTES ? bytes : STORE_WHOLE_MAX_BYTES;
}

/* Parse a descriptor's payload: 1 chunked (d), 2 side file (d and sd), 0 malformed. */
static int desc_parse(const void *p, size_t len, array_desc_t *d, side_desc_t *sd) {
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

static size_t g_chunk_bytes = STORE_CHUNK_BYTES;
void store_set_chunk_bytes(size_t bytes) { g_chunk_bytes = bytes ? bytes : STORE_CHUNK_BYTES; }

size_t store_dtype_size(store_dtype_t t) {
    switch (t) {
    case DT_F32: case DT_I32: return 4;
    case DT_I64: case DT_F64: return 8;
    case DT_U8: return 1;
    case DT_BF16: return 2;
    }
    return 0;
}

/* The one translation of LMDB codes: damaged pages are bad input (exit 2, with a hint), a
 * full disk or file-size limit is a runtime failure (exit 1) named as such. */
static int lmdb_fail(const store_t *s, int rc, const char *what) {
    const char *p = s ? s->path : "store";
    switch (rc) {
    case ENOENT: case MDB_NOTFOUND:
        return inca_fail(INCA_ENOTFOUND, "%s: %s: %s", p, what, mdb_strerror(rc));
    case MDB_CORRUPTED: case MDB_PAGE_NOTFOUND: case MDB_INVALID: case MDB_VERSION_MISMATCH:
    case MDB_INCOMPATIBLE: case MDB_BAD_VALSIZE: case MDB_BAD_DBI: case MDB_BAD_TXN:
        return inca_fail(INCA_EINVAL, "%s: %s: the store is corrupt (LMDB: %s): re-ingest it or restore a copy",
                         p, what, mdb_strerror(rc));
    case ENOSPC: case EFBIG: case EDQUOT:
        return inca_fail(INCA_EIO, "%s: %s: %s (disk full or file-size limit)", p, what, strerror(rc));
    case EIO:   /* LMDB 0.9 reports a short write (the disk filled mid-write) as EIO */
        return inca_fail(INCA_EIO, "%s: %s: %s (a short write: disk full or file-size limit?)", p, what, strerror(rc));
    }
    return inca_fail(INCA_EIO, "%s: %s: %s", p, what, mdb_strerror(rc));
}

/* CRC32 of a key and its value bytes: the trailer every stored value carries (format v2). Keyed
 * so that a chunk or record swapped with another fails too. */
static uint32_t kv_crc(const void *k, size_t kl, const void *v, size_t vl) {
    uLong c = crc32_z(0L, Z_NULL, 0);
    c = crc32_z(c, k, kl);
    return (uint32_t)crc32_z(c, v, vl);
}

/* Check the trailer of value v read under key k; *len gets the payload size. */
static int value_check(const store_t *s, const char *what, const void *k, size_t kl, const MDB_val *v, size_t *len) {
    if (v->mv_size < 4)
        return inca_fail(INCA_EINVAL, "%s: %s is %zu bytes, too short for its checksum: the store is corrupt", s->path,
                         what, v->mv_size);
    size_t n = v->mv_size - 4;
    const unsigned char *t = (const unsigned char *)v->mv_data + n;
    uint32_t want = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
    uint32_t got = kv_crc(k, kl, v->mv_data, n);
    if (got != want)
        return inca_fail(INCA_EINVAL, "%s: %s fails its checksum (crc32 %08x, stored %08x): the store is corrupt; "
                         "re-ingest it or restore a copy", s->path, what, got, want);
    *len = n;
    return INCA_OK;
}

const char *store_path(const store_t *s) { return s->path; }
const store_meta_t *store_meta(const store_t *s) { return s->has_meta ? &s->meta : NULL; }

int64_t store_disk_bytes(const store_t *s) {
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/data.mdb", s->path);
    if (stat(p, &st) != 0) return -1;
    /* a file once opened with MDB_WRITEMAP is sized to the map (sparse past the last page) */
    MDB_envinfo info;
    MDB_stat ms;
    int64_t used = (int64_t)st.st_size;
    if (mdb_env_info(s->env, &info) == 0 && mdb_env_stat(s->env, &ms) == 0) {
        const int64_t u = ((int64_t)info.me_last_pgno + 1) * (int64_t)ms.ms_psize;
        if (u > 0 && u < used) used = u;
    }
    return used;
}

int64_t store_side_bytes(const store_t *s) { return sidefile_total_bytes(s->path); }

/* Begin the read snapshot if needed; caller holds mu. */
static int rtxn_ensure(store_t *s) {
    if (s->rtxn_live) return INCA_OK;
    int rc;
    if (s->rtxn) {
        rc = mdb_txn_renew(s->rtxn);
    } else {
        rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->rtxn);
        if (rc == MDB_MAP_RESIZED) {   /* another process grew the map */
            mdb_env_set_mapsize(s->env, 0);
            rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->rtxn);
        }
    }
    if (rc) { s->rtxn = NULL; return lmdb_fail(s, rc, "cannot begin read transaction"); }
    s->rtxn_live = 1;
    return INCA_OK;
}

static void rtxn_reset(store_t *s) {
    if (s->rtxn && s->rtxn_live) mdb_txn_reset(s->rtxn);
    s->rtxn_live = 0;
}

static int env_open(const char *path, int create, int writable, int writemap, store_t **out) {
    *out = NULL;
    store_t *s = inca_calloc(1, sizeof *s);
    if (!s) return INCA_ENOMEM;
    pthread_mutex_init(&s->mu, NULL);
    s->path = inca_malloc(strlen(path) + 1);
    if (!s->path) { inca_free(s); return INCA_ENOMEM; }
    strcpy(s->path, path);
    s->writable = writable;
    int rc = mdb_env_create(&s->env);
    if (rc) { int e = lmdb_fail(s, rc, "cannot create environment"); store_close(&s); return e; }
    mdb_env_set_maxdbs(s->env, 4);
    s->mapsize = INITIAL_MAP;
    mdb_env_set_mapsize(s->env, s->mapsize);
    unsigned flags = MDB_NOTLS | (writable ? MDB_NOSYNC : MDB_RDONLY) | (writable && writemap ? MDB_WRITEMAP : 0);
    if (!create) {   /* LMDB trusts its pages: check their structure before it maps them */
        char dp[4200];
        snprintf(dp, sizeof dp, "%s/data.mdb", path);
        rc = lmdb_check_file(dp, -1);
        if (rc == INCA_ENOTFOUND) rc = inca_fail(rc, "%s: no inca store here (missing data.mdb): create it with 'inca ingest' or 'inca gen'", path);
        if (rc) { store_close(&s); return rc; }
    }
    rc = mdb_env_open(s->env, path, flags, 0644);
    if (rc) {
        int e = rc == ENOENT ? inca_fail(INCA_ENOTFOUND, "%s: no inca store here (missing data.mdb): create it with 'inca ingest' or 'inca gen'", path)
                             : lmdb_fail(s, rc, "cannot open LMDB environment");
        store_close(&s);
        return e;
    }
    MDB_envinfo info;
    if (mdb_env_info(s->env, &info) == 0 && info.me_mapsize > s->mapsize) s->mapsize = info.me_mapsize;
    MDB_txn *t;
    rc = mdb_txn_begin(s->env, NULL, writable ? 0 : MDB_RDONLY, &t);
    if (rc) { int e = lmdb_fail(s, rc, "cannot begin transaction"); store_close(&s); return e; }
    unsigned dflags = create ? MDB_CREATE : 0;
    rc = mdb_dbi_open(t, "meta", dflags, &s->dbi_meta);
    if (!rc) rc = mdb_dbi_open(t, "arrays", dflags, &s->dbi_arrays);
    if (rc) {
        mdb_txn_abort(t);
        int e = rc == MDB_NOTFOUND
                    ? inca_fail(INCA_EINVAL, "%s: not an inca store (no 'meta'/'arrays' databases): an ingest may have been interrupted; run it again", path)
                    : lmdb_fail(s, rc, "cannot open named databases");
        store_close(&s);
        return e;
    }
    rc = mdb_txn_commit(t);
    if (rc) { int e = lmdb_fail(s, rc, "cannot commit"); store_close(&s); return e; }
    *out = s;
    return INCA_OK;
}

static int get_locked(store_t *s, MDB_dbi dbi, const void *k, size_t klen, MDB_val *v);

static int meta_check(store_t *s, const void *p, size_t len) {
    store_meta_t m;
    if (len != sizeof m)
        return inca_fail(INCA_EINVAL, "%s: meta record is %zu bytes, expected %zu: written by another inca version; re-ingest the dataset", s->path, len, sizeof m);
    memcpy(&m, p, sizeof m);
    if (m.magic != STORE_MAGIC)
        return inca_fail(INCA_EINVAL, "%s: bad magic 0x%08x in meta (expected 0x%08x): not an inca store", s->path, m.magic, STORE_MAGIC);
    if (m.version != STORE_VERSION)
        return inca_fail(INCA_EINVAL, "%s: store format version %u%s, this inca reads version %u (checksummed): "
                         "re-ingest the dataset (inca ingest ... --force, or inca gen)", s->path, m.version,
                         m.version == 1 ? " (no checksums)" : "", STORE_VERSION);
    /* sizes whose arrays could not exist: (nodes + 1) i64 offsets, edges i32 columns, nodes x
     * features floats must be byte counts an int64 holds (readers multiply them) */
    int huge = m.nodes > INT64_MAX / 16 || m.edges > INT64_MAX / 4 ||
               (m.features > 0 && m.nodes > INT64_MAX / 8 / m.features);
    if (m.nodes < 0 || m.edges < 0 || m.features < 0 || m.classes < 0 || m.labeled < 0 || m.labeled > m.nodes ||
        m.split_n[0] < 0 || m.split_n[1] < 0 || m.split_n[2] < 0 || memchr(m.source, '\0', sizeof m.source) == NULL || huge)
        return inca_fail(INCA_EINVAL, "%s: meta record has inconsistent counts (nodes %lld, edges %lld, labeled %lld)", s->path, (long long)m.nodes, (long long)m.edges, (long long)m.labeled);
    s->meta = m;
    s->has_meta = 1;
    return INCA_OK;
}

/* store_probe's second half: 0 when path's LMDB opens and lacks the store's databases */
static int probe_dbs(const char *path) {
    MDB_env *env = NULL;
    MDB_txn *t = NULL;
    MDB_dbi dbi;
    int ours = 1;   /* unopenable: damaged, still a store's files */
    if (mdb_env_create(&env) == 0 && mdb_env_set_maxdbs(env, 4) == 0 &&
        mdb_env_open(env, path, MDB_RDONLY | MDB_NOTLS | MDB_NOLOCK, 0644) == 0 && mdb_txn_begin(env, NULL, MDB_RDONLY, &t) == 0) {
        if (mdb_dbi_open(t, "meta", 0, &dbi) == MDB_NOTFOUND || mdb_dbi_open(t, "arrays", 0, &dbi) == MDB_NOTFOUND) ours = 0;
        mdb_txn_abort(t);
    }
    if (env) mdb_env_close(env);
    return ours;
}

int store_probe(const char *path, char *why, size_t cap) {
    char dp[4200];
    snprintf(dp, sizeof dp, "%s/data.mdb", path);
    struct stat st;
    if (stat(dp, &st) != 0 || !S_ISREG(st.st_mode)) return snprintf(why, cap, "no data.mdb"), 0;
    DIR *dh = opendir(path);
    if (!dh) return snprintf(why, cap, "cannot list it: %s", strerror(errno)), 0;
    int ours = 1;
    for (struct dirent *e; ours && (e = readdir(dh));) {
        const char *n = e->d_name;
        if (strcmp(n, ".") && strcmp(n, "..") && strcmp(n, "data.mdb") && strcmp(n, "lock.mdb") && !sidefile_is_name(n, 0) &&
            !sidefile_is_name(n, 1)) {
            snprintf(why, cap, "it holds '%s', which no store has", n);
            ours = 0;
        }
    }
    closedir(dh);
    /* the structure is checked before LMDB maps the pages (it trusts them) */
    if (ours && lmdb_check_file(dp, -1) == INCA_OK && !probe_dbs(path)) {
        snprintf(why, cap, "another program's LMDB (no 'meta'/'arrays' databases)");
        ours = 0;
    }
    inca_err_clear();
    return ours;
}

int store_open(const char *path, int mode, store_t **out) {
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0)
        return inca_fail(INCA_ENOTFOUND, "%s: no such store (create it with 'inca ingest' or 'inca gen')", path);
    if (!S_ISDIR(st.st_mode))
        return inca_fail(INCA_EINVAL, "%s: not a store directory", path);
    store_t *s;
    int rc = env_open(path, 0, mode == STORE_RDWR || mode == STORE_RDWR_MAP, mode == STORE_RDWR_MAP, &s);
    if (rc) return rc;
    MDB_val v;
    rc = get_locked(s, s->dbi_meta, "meta", 4, &v);
    if (rc == INCA_ENOTFOUND)
        rc = inca_fail(INCA_EINVAL, "%s: store has no meta record (incomplete: an ingest was interrupted); run the ingest again", path);
    else if (rc == INCA_OK && v.mv_size == sizeof(store_meta_t)) {
        /* format v1 had no trailer: its version hint. A record of that size that says another
         * version lost its trailer (a damaged length): never read unchecked */
        store_meta_t m;
        memcpy(&m, v.mv_data, sizeof m);
        rc = m.magic == STORE_MAGIC && m.version == 1
                     ? meta_check(s, v.mv_data, v.mv_size)
                     : inca_fail(INCA_EINVAL, "%s: the meta record is %zu bytes, a format-1 record's size, but not one: the "
                                 "store is corrupt; re-ingest it or restore a copy", path, v.mv_size);
    }
    else if (rc == INCA_OK) {
        size_t len;
        rc = value_check(s, "the meta record", "meta", 4, &v, &len);
        if (rc == INCA_OK) rc = meta_check(s, v.mv_data, len);
    }
    if (rc) { store_close(&s); return rc; }
    *out = s;
    return INCA_OK;
}

int store_create(const char *path, store_t **out) {
    *out = NULL;
    if (mkdir(path, 0755) != 0)
        return inca_fail(errno == EEXIST ? INCA_EINVAL : INCA_EIO, "%s: cannot create store directory: %s", path, strerror(errno));
    return env_open(path, 1, 1, 0, out);
}

static void copies_free(store_t *s) {
    for (int i = 0; i < s->ncopies; i++) inca_free(s->copies[i]);
    INCA_FREE(s->copies);
    s->ncopies = s->capcopies = 0;
}

void store_close(store_t **sp) {
    if (!sp || !*sp) return;
    store_t *s = *sp;
    if (s->rtxn) mdb_txn_abort(s->rtxn);
    if (s->env) {
        if (s->writable) mdb_env_sync(s->env, 1);   /* opened with MDB_NOSYNC */
        mdb_env_close(s->env);
    }
    sidefile_cache_free(&s->side);
    copies_free(s);
    pthread_mutex_destroy(&s->mu);
    inca_free(s->path);
    INCA_FREE(*sp);
}

int store_refresh(store_t *s) {
    pthread_mutex_lock(&s->mu);
    copies_free(s);
    rtxn_reset(s);
    int rc = rtxn_ensure(s);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- reading ---- */

static void desc_key(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "array:%s", name); }

static size_t chunk_key(unsigned char *buf, const char *name, int64_t i) {
    size_t n = strlen(name);
    memcpy(buf, name, n);
    buf[n] = '\0';
    for (int b = 0; b < 8; b++) buf[n + 1 + b] = (unsigned char)((uint64_t)i >> (56 - 8 * b));
    return n + 9;
}

/* mdb_get on a sub-database under the lock; *v points into the map. */
static int get_locked(store_t *s, MDB_dbi dbi, const void *k, size_t klen, MDB_val *v) {
    pthread_mutex_lock(&s->mu);
    int rc = rtxn_ensure(s);
    if (rc == INCA_OK) {
        MDB_val key = {klen, (void *)k};
        int r = mdb_get(s->rtxn, dbi, &key, v);
        if (r == MDB_NOTFOUND) rc = INCA_ENOTFOUND;
        else if (r) rc = lmdb_fail(s, r, "read failed");
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_record_get(store_t *s, const char *key, const void **ptr, size_t *len) {
    MDB_val v;
    int rc = get_locked(s, s->dbi_meta, key, strlen(key), &v);
    if (rc == INCA_ENOTFOUND) return inca_fail(rc, "%s: no record '%s'", s->path, key);
    if (rc) return rc;
    char what[600];
    snprintf(what, sizeof what, "record '%.500s'", key);
    if ((rc = value_check(s, what, key, strlen(key), &v, len))) return rc;
    *ptr = v.mv_data;
    return INCA_OK;
}

/* The descriptor of array `name` (checked); *sd (may be NULL) gets a side file's. */
static int desc_get(store_t *s, const char *name, store_array_info_t *info, side_desc_t *sd) {
    char k[512];
    desc_key(k, sizeof k, name);
    MDB_val v;
    int rc = get_locked(s, s->dbi_meta, k, strlen(k), &v);
    if (rc == INCA_ENOTFOUND) return inca_fail(rc, "%s: no array '%s' in the store", s->path, name);
    if (rc) return rc;
    array_desc_t d;
    side_desc_t side;
    size_t len;
    char what[600];
    snprintf(what, sizeof what, "descriptor of array '%.500s'", name);
    if ((rc = value_check(s, what, k, strlen(k), &v, &len))) return rc;
    const int kind = desc_parse(v.mv_data, len, &d, &side);
    if (!kind) return inca_fail(INCA_EINVAL, "%s: descriptor of array '%s' is corrupt", s->path, name);
    info->dtype = (store_dtype_t)d.dtype;
    info->count = d.count;
    info->chunk_elems = d.chunk_elems;
    info->nchunks = d.count / d.chunk_elems + (d.count % d.chunk_elems != 0);   /* no overflow */
    info->in_file = kind == 2;
    if (sd && kind == 2) *sd = side;
    return INCA_OK;
}

int store_array_info(store_t *s, const char *name, store_array_info_t *info) { return desc_get(s, name, info, NULL); }

/* The map of a side array's file (checked against its CRC the first time this store maps it) */
static int side_get(store_t *s, const char *name, const void **ptr) {
    store_array_info_t info;
    side_desc_t sd;
    int rc = desc_get(s, name, &info, &sd);
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

static int chunk_get(store_t *s, const char *name, const store_array_info_t *info, int64_t i,
                     const void **ptr, int64_t *count) {
    if (i < 0 || i >= info->nchunks)
        return inca_fail(INCA_EINVAL, "%s: chunk %lld of array '%s' out of range", s->path, (long long)i, name);
    if (info->in_file) {
        *count = info->count;
        return side_get(s, name, ptr);
    }
    unsigned char k[600];
    if (strlen(name) > 500) return inca_fail(INCA_EINVAL, "array name too long");
    size_t kl = chunk_key(k, name, i);
    MDB_val v;
    int rc = get_locked(s, s->dbi_arrays, k, kl, &v);
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
    if ((rc = value_check(s, what, k, kl, &v, &len))) return rc;
    *ptr = v.mv_data;
    *count = expect;
    return INCA_OK;
}

/* chunk_get for a caller that reads the elements in place (the public views): aligned for
 * them; the readers that copy out (store_array_read, _load, store_verify) take chunk_get's
 * pointer as it is and make no copy. */
static int view_get(store_t *s, const char *name, const store_array_info_t *info, int64_t i, const void **ptr,
                    int64_t *count) {
    int rc = chunk_get(s, name, info, i, ptr, count);
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
        rc = chunk_get(s, name, &info, ci, &p, &n);
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

int store_record_each(store_t *s, const char *prefix,
                      int (*fn)(void *ctx, const char *key, const void *val, size_t len), void *ctx) {
    size_t pl = strlen(prefix);
    char keybuf[1024];
    pthread_mutex_lock(&s->mu);
    int rc = rtxn_ensure(s);
    MDB_cursor *c = NULL;
    if (rc == INCA_OK) {
        int r = mdb_cursor_open(s->rtxn, s->dbi_meta, &c);
        if (r) rc = lmdb_fail(s, r, "cannot open cursor");
    }
    if (rc == INCA_OK) {
        MDB_val k = {pl, (void *)prefix}, v;
        int r = mdb_cursor_get(c, &k, &v, pl ? MDB_SET_RANGE : MDB_FIRST);   /* LMDB refuses empty keys */
        while (r == 0 && k.mv_size >= pl && memcmp(k.mv_data, prefix, pl) == 0) {
            size_t kl = k.mv_size < sizeof keybuf - 1 ? k.mv_size : sizeof keybuf - 1, len;
            memcpy(keybuf, k.mv_data, kl);
            keybuf[kl] = '\0';
            char what[1100];
            snprintf(what, sizeof what, "record '%s'", keybuf);
            if ((rc = value_check(s, what, k.mv_data, k.mv_size, &v, &len))) break;
            int stop = fn(ctx, keybuf, v.mv_data, len);
            if (stop) break;
            r = mdb_cursor_get(c, &k, &v, MDB_NEXT);
        }
        if (rc == INCA_OK && r && r != MDB_NOTFOUND) rc = lmdb_fail(s, r, "cursor failed");
    }
    if (c) mdb_cursor_close(c);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- verification ---- */

typedef struct {
    store_verify_stats_t *st;
    char **names;
    int n, cap, failed;
    char (*files)[SIDEFILE_NAME_MAX];   /* side files the descriptors name */
    int nfiles;
} verify_ctx_t;

static int verify_names_file(void *ctx, const char *name) {
    const verify_ctx_t *c = ctx;
    for (int i = 0; i < c->nfiles; i++)
        if (strcmp(c->files[i], name) == 0) return 1;
    return 0;
}

/* A side array read in full against its CRC (even when this store mapped it before) */
static int verify_side(store_t *s, verify_ctx_t *c, const char *name, const store_array_info_t *info,
                       const side_desc_t *sd) {
    const int64_t bytes = info->count * (int64_t)store_dtype_size(info->dtype);
    const void *p;
    int rc = sidefile_map_checked(s->path, sd->file, bytes, sd->crc, &p);
    if (rc) return inca_fail_ctx(rc, "array '%s'", name);
    sidefile_unmap(p, bytes);
    memcpy(c->files[c->nfiles++], sd->file, SIDEFILE_NAME_MAX);
    c->st->files++;
    c->st->bytes += bytes;
    return INCA_OK;
}

static int verify_record(void *ctx, const char *key, const void *val, size_t len) {
    (void)val;
    verify_ctx_t *c = ctx;
    c->st->records++;
    c->st->bytes += (int64_t)len;
    if (strncmp(key, "array:", 6) != 0) return 0;
    if (c->n == c->cap) {
        int nc = c->cap ? 2 * c->cap : 16;
        char **nn = inca_realloc(c->names, (size_t)nc * sizeof *nn);
        if (!nn) { c->failed = 1; return 1; }
        c->names = nn;
        c->cap = nc;
    }
    size_t l = strlen(key + 6);
    char *nm = inca_malloc(l + 1);
    if (!nm) { c->failed = 1; return 1; }
    memcpy(nm, key + 6, l + 1);
    c->names[c->n++] = nm;
    return 0;
}

int store_verify(store_t *s, store_verify_stats_t *st) {
    memset(st, 0, sizeof *st);
    verify_ctx_t c = {st, NULL, 0, 0, 0, NULL, 0};
    int rc = store_record_each(s, "", verify_record, &c);   /* every record's checksum */
    if (rc == INCA_OK && c.failed) rc = INCA_ENOMEM;
    if (rc == INCA_OK && c.n && !(c.files = inca_calloc((size_t)c.n, sizeof *c.files))) rc = INCA_ENOMEM;
    int64_t chunks = 0;
    for (int a = 0; a < c.n && rc == INCA_OK; a++) {
        store_array_info_t info;
        side_desc_t sd;
        if ((rc = desc_get(s, c.names[a], &info, &sd))) break;
        st->arrays++;
        if (info.in_file) {
            rc = verify_side(s, &c, c.names[a], &info, &sd);
            continue;
        }
        for (int64_t i = 0; i < info.nchunks && rc == INCA_OK; i++) {
            const void *p;
            int64_t cnt;
            rc = chunk_get(s, c.names[a], &info, i, &p, &cnt);
            if (rc == INCA_OK) st->bytes += cnt * (int64_t)store_dtype_size(info.dtype);
        }
        chunks += info.nchunks;
    }
    if (rc == INCA_OK) {   /* chunks no descriptor accounts for: stray or damaged keys */
        MDB_stat ms;
        pthread_mutex_lock(&s->mu);
        rc = rtxn_ensure(s);
        int r = rc == INCA_OK ? mdb_stat(s->rtxn, s->dbi_arrays, &ms) : 0;
        pthread_mutex_unlock(&s->mu);
        if (r) rc = lmdb_fail(s, r, "cannot read the arrays database");
        else if (rc == INCA_OK && (int64_t)ms.ms_entries != chunks)
            rc = inca_fail(INCA_EINVAL, "%s: the arrays database holds %lld chunks, the array descriptors account for "
                           "%lld: the store is corrupt", s->path, (long long)ms.ms_entries, (long long)chunks);
    }
    int strays = 0;
    if (rc == INCA_OK) rc = sidefile_count_strays(s->path, verify_names_file, &c, &strays);
    st->stray_files = strays;
    st->chunks = chunks;
    for (int a = 0; a < c.n; a++) inca_free(c.names[a]);
    inca_free(c.names);
    inca_free(c.files);
    return rc;
}

/* ---- writing ---- */

enum { OP_PUT_ARRAY, OP_DEL_ARRAY, OP_PUT_REC, OP_DEL_REC };
typedef struct {
    int kind;
    char *name;
    store_dtype_t dtype;
    const void *data;
    int64_t count;     /* elements (arrays) or bytes (records) */
    int whole;         /* array: 1 one chunk (store_wtx_put_array_whole), 2 a side file */
    int64_t done;      /* committed so far: -1 nothing; arrays: chunks in (descriptor first);
                        * others: 0 once in */
    char file[SIDEFILE_NAME_MAX];   /* whole == 2: the side file written for it ("" before) */
    uint32_t crc;
    char dead[SIDEFILE_NAME_MAX];   /* the side file of the array it replaces, removed once in */
} wop_t;

struct store_wtx {
    store_t *s;
    wop_t *ops;
    int n, cap;
    store_meta_t meta;
    int has_meta;
    int files_written;   /* side files of the whole == 2 ops are on disk */
};

int store_write_begin(store_t *s, store_wtx_t **out) {
    *out = NULL;
    if (!s->writable) return inca_fail(INCA_EINVAL, "%s: store opened read-only", s->path);
    store_wtx_t *w = inca_calloc(1, sizeof *w);
    if (!w) return INCA_ENOMEM;
    w->s = s;
    *out = w;
    return INCA_OK;
}

static int add_op(store_wtx_t *w, int kind, const char *name, store_dtype_t dt, const void *data, int64_t count) {
    if (w->n == w->cap) {
        int nc = w->cap ? w->cap * 2 : 16;
        wop_t *no = inca_realloc(w->ops, (size_t)nc * sizeof *no);
        if (!no) return INCA_ENOMEM;
        w->ops = no;
        w->cap = nc;
    }
    size_t nl = strlen(name);
    if (nl == 0 || nl > 500) return inca_fail(INCA_EINVAL, "store: key '%s' must be 1..500 characters", name);
    char *nm = inca_malloc(nl + 1);
    if (!nm) return INCA_ENOMEM;
    memcpy(nm, name, nl + 1);
    w->ops[w->n++] = (wop_t){.kind = kind, .name = nm, .dtype = dt, .data = data, .count = count, .done = -1};
    return INCA_OK;
}

int store_wtx_put_array(store_wtx_t *w, const char *name, store_dtype_t dtype, const void *data, int64_t count) {
    if (store_dtype_size(dtype) == 0 || count < 0 || (count > 0 && !data))
        return inca_fail(INCA_EINVAL, "store: bad array '%s'", name);
    return add_op(w, OP_PUT_ARRAY, name, dtype, data, count);
}
int store_wtx_put_array_whole(store_wtx_t *w, const char *name, store_dtype_t dtype, const void *data, int64_t count) {
    /* LMDB refuses a value over 2^32 - 1 bytes (MDB_BAD_VALSIZE; the CRC trailer takes 4): a
     * side file beyond (count * size cannot overflow: count is elements in the caller's memory) */
    const int64_t bytes = count * (int64_t)store_dtype_size(dtype);
    int rc = store_wtx_put_array(w, name, dtype, data, count);
    if (rc == INCA_OK) w->ops[w->n - 1].whole = bytes > g_whole_max ? 2 : 1;
    return rc;
}
int store_wtx_put_array_side(store_wtx_t *w, const char *name, store_dtype_t dtype, const void *data, int64_t count) {
    int rc = store_wtx_put_array(w, name, dtype, data, count);
    if (rc == INCA_OK) w->ops[w->n - 1].whole = count > 0 ? 2 : 1;   /* no bytes, no file (a map of 0 bytes fails) */
    return rc;
}
int store_wtx_del_array(store_wtx_t *w, const char *name) { return add_op(w, OP_DEL_ARRAY, name, DT_U8, NULL, 0); }
int store_wtx_put_record(store_wtx_t *w, const char *key, const void *data, size_t len) {
    return add_op(w, OP_PUT_REC, key, DT_U8, data, (int64_t)len);
}
int store_wtx_del_record(store_wtx_t *w, const char *key) { return add_op(w, OP_DEL_REC, key, DT_U8, NULL, 0); }
int store_wtx_put_meta(store_wtx_t *w, const store_meta_t *m) {
    w->meta = *m;
    w->meta.magic = STORE_MAGIC;
    w->meta.version = STORE_VERSION;
    w->has_meta = 1;
    return INCA_OK;
}

void store_write_abort(store_wtx_t **wp) {
    if (!wp || !*wp) return;
    store_wtx_t *w = *wp;
    for (int i = 0; i < w->n; i++) inca_free(w->ops[i].name);
    inca_free(w->ops);
    INCA_FREE(*wp);
}

/* mdb_put of data + its CRC32 trailer; MDB_RESERVE lets the bytes be copied once, straight
 * into the page, in the same transaction as everything else of the batch. */
static int put_crc(MDB_txn *t, MDB_dbi dbi, const void *k, size_t kl, const void *data, size_t len) {
    MDB_val key = {kl, (void *)k}, v = {len + 4, NULL};
    int r = mdb_put(t, dbi, &key, &v, MDB_RESERVE);
    if (r) return r;
    if (len) memcpy(v.mv_data, data, len);
    uint32_t c = kv_crc(k, kl, data, len);
    unsigned char *tr = (unsigned char *)v.mv_data + len;
    for (int b = 0; b < 4; b++) tr[b] = (unsigned char)(c >> (8 * b));
    return 0;
}

/* Delete every chunk of `name` inside txn t. */
static int del_chunks(MDB_txn *t, MDB_dbi dbi, const char *name) {
    unsigned char k[600];
    size_t kl = chunk_key(k, name, 0), pl = strlen(name) + 1;
    MDB_cursor *c;
    int r = mdb_cursor_open(t, dbi, &c);
    if (r) return r;
    for (;;) {   /* re-seek after each delete: simple and immune to cursor quirks */
        MDB_val key = {kl, k}, v;
        r = mdb_cursor_get(c, &key, &v, MDB_SET_RANGE);
        if (r || key.mv_size != pl + 8 || memcmp(key.mv_data, k, pl) != 0) break;
        r = mdb_cursor_del(c, 0);
        if (r) break;
    }
    mdb_cursor_close(c);
    return r == MDB_NOTFOUND ? 0 : r;
}

static int64_t chunk_elems(store_dtype_t dtype, int64_t count, int whole) {
    const int64_t ce = whole ? count : (int64_t)(g_chunk_bytes / store_dtype_size(dtype));
    return ce < 1 ? 1 : ce;
}

/* Whether op is in once `done` (its committed progress) is */
static int op_finished(const wop_t *op, int64_t done) {
    if (op->kind != OP_PUT_ARRAY) return done >= 0;
    return done >= 0 && done * chunk_elems(op->dtype, op->count, op->whole) >= op->count;
}

/* The side file the descriptor under key names in t, into file ("" when none) */
static void side_old(store_t *s, MDB_txn *t, MDB_val *key, char *file) {
    MDB_val v;
    array_desc_t d;
    side_desc_t sd;
    file[0] = '\0';
    if (mdb_get(t, s->dbi_meta, key, &v) == 0 && v.mv_size >= 4 && desc_parse(v.mv_data, v.mv_size - 4, &d, &sd) == 2)
        memcpy(file, sd.file, SIDEFILE_NAME_MAX);
}

static int side_put(store_t *s, MDB_txn *t, MDB_val *key, const wop_t *op, const array_desc_t *d) {
    side_desc_t sd;
    memset(&sd, 0, sizeof sd);
    memcpy(&sd, d, sizeof *d);
    memcpy(sd.magic, "ARRF", 4);
    sd.crc = op->crc;
    memcpy(sd.file, op->file, SIDEFILE_NAME_MAX);
    return put_crc(t, s->dbi_meta, key->mv_data, key->mv_size, &sd, sizeof sd);
}

/* An array op from chunk `from` (-1: first the old array out and the descriptor in) until
 * *budget bytes are spent or its last chunk is in; *next gets where it stopped. */
static int apply_array(store_t *s, MDB_txn *t, wop_t *op, int64_t from, int64_t *budget, int64_t *next) {
    char dk[600];
    desc_key(dk, sizeof dk, op->name);
    MDB_val key = {strlen(dk), dk};
    const size_t es = store_dtype_size(op->dtype);
    const int64_t ce = chunk_elems(op->dtype, op->count, op->whole);
    int r = 0;
    *next = from;
    if (from < 0) {
        side_old(s, t, &key, op->dead);
        r = del_chunks(t, s->dbi_arrays, op->name);
        if (!r) r = mdb_del(t, s->dbi_meta, &key, NULL);
        if (r == MDB_NOTFOUND) r = 0;
        *next = 0;
        if (r || op->kind == OP_DEL_ARRAY) return r;
        array_desc_t d;
        memset(&d, 0, sizeof d);   /* no uninitialised padding in a checksummed value */
        memcpy(d.magic, "ARR1", 4);
        d.dtype = op->dtype;
        d.count = op->count;
        d.chunk_elems = ce;
        if (op->whole == 2) {   /* the descriptor is all: the bytes are in op->file already */
            *next = 1;
            return side_put(s, t, &key, op, &d);
        }
        r = put_crc(t, s->dbi_meta, key.mv_data, key.mv_size, &d, sizeof d);
    }
    int64_t ci = *next;
    for (; !r && ci * ce < op->count && *budget > 0; ci++) {
        unsigned char ck[600];
        size_t kl = chunk_key(ck, op->name, ci);
        int64_t n = op->count - ci * ce < ce ? op->count - ci * ce : ce;
        r = put_crc(t, s->dbi_arrays, ck, kl, (char *)op->data + (size_t)(ci * ce) * es, (size_t)n * es);
        *budget -= n * (int64_t)es;
    }
    *next = ci;
    return r;
}

/* apply's "committed so far, more transactions to go": no LMDB or errno code */
enum { MORE_TO_GO = -1000000 };

/* The ops not yet in, in order, until `budget` bytes of array chunks are written (INT64_MAX:
 * all); each op's progress goes to next[], which the caller keeps once t commits. The meta
 * record goes in with the last of them. */
static int apply(store_wtx_t *w, MDB_txn *t, int64_t budget, int64_t *next) {
    store_t *s = w->s;
    int r = 0, all = 1;
    for (int i = 0; i < w->n; i++) {
        wop_t *op = &w->ops[i];
        next[i] = op->done;
        if (r || budget <= 0 || op_finished(op, op->done)) {
            all &= op_finished(op, next[i]);
            continue;
        }
        switch (op->kind) {
        case OP_PUT_ARRAY:
        case OP_DEL_ARRAY:
            r = apply_array(s, t, op, op->done, &budget, &next[i]);
            break;
        case OP_PUT_REC:
            r = put_crc(t, s->dbi_meta, op->name, strlen(op->name), op->data, (size_t)op->count);
            next[i] = 0;
            break;
        case OP_DEL_REC: {
            MDB_val k = {strlen(op->name), op->name};
            r = mdb_del(t, s->dbi_meta, &k, NULL);
            if (r == MDB_NOTFOUND) r = 0;
            next[i] = 0;
            break;
        }
        }
        all &= op_finished(op, next[i]);
    }
    if (!r && all && w->has_meta)   /* meta last: a store is valid once this lands */
        r = put_crc(t, s->dbi_meta, "meta", 4, &w->meta, sizeof w->meta);
    if (!r && !all) r = MORE_TO_GO;
    return r;
}

/* keep() of the sweep: whether a descriptor in t names the side file */
typedef struct { store_t *s; MDB_txn *t; } txn_ctx_t;
static int txn_names_file(void *ctx, const char *name) {
    const txn_ctx_t *c = ctx;
    MDB_cursor *cur;
    if (mdb_cursor_open(c->t, c->s->dbi_meta, &cur)) return 1;   /* unsure: keep it */
    MDB_val k = {6, "array:"}, v;
    int found = 0;
    for (int r = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
         !r && !found && k.mv_size >= 6 && memcmp(k.mv_data, "array:", 6) == 0; r = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        array_desc_t d;
        side_desc_t sd;
        found = v.mv_size >= 4 && desc_parse(v.mv_data, v.mv_size - 4, &d, &sd) == 2 && strcmp(sd.file, name) == 0;
    }
    mdb_cursor_close(cur);
    return found;
}

/* The batch's side files, written once while t holds LMDB's write lock (so no other writer is
 * between writing its files and committing them); first the files an interrupted writer left. */
static int side_write_all(store_wtx_t *w, MDB_txn *t) {
    if (w->files_written) return INCA_OK;
    txn_ctx_t c = {w->s, t};
    int rc = sidefile_sweep(w->s->path, txn_names_file, &c, NULL);
    for (int i = 0; i < w->n && rc == INCA_OK; i++) {
        wop_t *op = &w->ops[i];
        if (op->whole == 2 && !op->file[0])
            rc = sidefile_write(w->s->path, op->data, op->count * (int64_t)store_dtype_size(op->dtype), op->file, &op->crc);
    }
    if (rc == INCA_OK) w->files_written = 1;
    return rc;
}

/* After a transaction committed: the progress kept, and the side files of arrays it replaced or
 * deleted removed (a failure to remove leaves a stray for the next sweep, not an error) */
static void side_committed(store_wtx_t *w, const int64_t *next) {
    for (int i = 0; i < w->n; i++) {
        wop_t *op = &w->ops[i];
        if (op->done < 0 && next[i] >= 0 && op->dead[0] && sidefile_remove(w->s->path, op->dead)) inca_err_clear();
        op->done = next[i];
    }
}

/* The pending ops in transactions of at most `budget` bytes of chunks each (INT64_MAX: one) */
static int commit_ops(store_wtx_t *w, int64_t budget) {
    store_t *s = w->s;
    int rc = INCA_OK;
    int64_t *next = inca_malloc(sizeof *next * (size_t)(w->n ? w->n : 1));
    if (!next) return INCA_ENOMEM;
    pthread_mutex_lock(&s->mu);
    for (int attempt = 0;; attempt++) {
        MDB_txn *t;
        int r = mdb_txn_begin(s->env, NULL, 0, &t);
        if (r == MDB_MAP_RESIZED) { mdb_env_set_mapsize(s->env, 0); r = mdb_txn_begin(s->env, NULL, 0, &t); }
        if (r) { rc = lmdb_fail(s, r, "cannot begin write transaction"); break; }
        if ((rc = side_write_all(w, t))) { mdb_txn_abort(t); break; }
        r = apply(w, t, budget, next);
        const int more = r == MORE_TO_GO;
        if (!r || more) r = mdb_txn_commit(t);
        else mdb_txn_abort(t);
        if (r == MDB_MAP_FULL && attempt < 40) {
            /* grow: no transaction of this process may be active while resizing */
            rtxn_reset(s);
            s->mapsize *= 2;
            r = mdb_env_set_mapsize(s->env, s->mapsize);
            if (r) { rc = lmdb_fail(s, r, "cannot grow the map"); break; }
            continue;
        }
        if (r) { rc = lmdb_fail(s, r, "write transaction failed"); break; }
        side_committed(w, next);
        rtxn_reset(s);   /* the next read sees what was just written */
        if (more) { attempt = -1; continue; }
        if (w->has_meta) { s->meta = w->meta; s->has_meta = 1; }
        break;
    }
    for (int i = 0; rc != INCA_OK && i < w->n; i++)   /* files no committed descriptor names */
        if (w->ops[i].file[0] && w->ops[i].done < 0) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", inca_errmsg());
            if (sidefile_remove(s->path, w->ops[i].file)) inca_fail(rc, "%s", msg);
        }
    pthread_mutex_unlock(&s->mu);
    inca_free(next);
    return rc;
}

int store_write_commit(store_wtx_t **wp) {
    int rc = commit_ops(*wp, INT64_MAX);
    store_write_abort(wp);
    return rc;
}

int store_write_commit_split(store_wtx_t **wp, int64_t max_bytes) {
    int rc = commit_ops(*wp, max_bytes > 0 ? max_bytes : 1);
    store_write_abort(wp);
    return rc;
}
