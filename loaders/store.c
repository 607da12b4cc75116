/* The LMDB store's environment (see store.h for the layout and the caveats): open, create, probe,
 * close, the versioned meta, records, the read snapshot, the one translation of LMDB's codes
 * (nothing outside the store's files calls LMDB for stores) and the CRC32 trailer (zlib) every
 * value carries, checked on every read. Tested in test_store.c and test_store_corrupt.c. */
#include "loaders/store.h"
#include "loaders/store_impl.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/lmdb_check.h"
#include "loaders/sidefile.h"
#include <dirent.h>
#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define INITIAL_MAP (64ull << 20)

/* The one translation of LMDB codes: damaged pages are bad input (exit 2, with a hint), a
 * full disk or file-size limit is a runtime failure (exit 1) named as such. */
int store_lmdb_fail(const store_t *s, int rc, const char *what) {
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
uint32_t store_kv_crc(const void *k, size_t kl, const void *v, size_t vl) {
    uLong c = crc32_z(0L, Z_NULL, 0);
    c = crc32_z(c, k, kl);
    return (uint32_t)crc32_z(c, v, vl);
}

/* Check the trailer of value v read under key k; *len gets the payload size. */
int store_value_check(const store_t *s, const char *what, const void *k, size_t kl, const MDB_val *v, size_t *len) {
    if (v->mv_size < 4)
        return inca_fail(INCA_EINVAL, "%s: %s is %zu bytes, too short for its checksum: the store is corrupt", s->path,
                         what, v->mv_size);
    size_t n = v->mv_size - 4;
    const unsigned char *t = (const unsigned char *)v->mv_data + n;
    uint32_t want = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
    uint32_t got = store_kv_crc(k, kl, v->mv_data, n);
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
int store_rtxn_ensure(store_t *s) {
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
    if (rc) { s->rtxn = NULL; return store_lmdb_fail(s, rc, "cannot begin read transaction"); }
    s->rtxn_live = 1;
    return INCA_OK;
}

void store_rtxn_reset(store_t *s) {
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
    if (rc) { int e = store_lmdb_fail(s, rc, "cannot create environment"); store_close(&s); return e; }
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
                             : store_lmdb_fail(s, rc, "cannot open LMDB environment");
        store_close(&s);
        return e;
    }
    MDB_envinfo info;
    if (mdb_env_info(s->env, &info) == 0 && info.me_mapsize > s->mapsize) s->mapsize = info.me_mapsize;
    MDB_txn *t;
    rc = mdb_txn_begin(s->env, NULL, writable ? 0 : MDB_RDONLY, &t);
    if (rc) { int e = store_lmdb_fail(s, rc, "cannot begin transaction"); store_close(&s); return e; }
    unsigned dflags = create ? MDB_CREATE : 0;
    rc = mdb_dbi_open(t, "meta", dflags, &s->dbi_meta);
    if (!rc) rc = mdb_dbi_open(t, "arrays", dflags, &s->dbi_arrays);
    if (rc) {
        mdb_txn_abort(t);
        int e = rc == MDB_NOTFOUND
                    ? inca_fail(INCA_EINVAL, "%s: not an inca store (no 'meta'/'arrays' databases): an ingest may have been interrupted; run it again", path)
                    : store_lmdb_fail(s, rc, "cannot open named databases");
        store_close(&s);
        return e;
    }
    rc = mdb_txn_commit(t);
    if (rc) { int e = store_lmdb_fail(s, rc, "cannot commit"); store_close(&s); return e; }
    *out = s;
    return INCA_OK;
}

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
    rc = store_get_locked(s, s->dbi_meta, "meta", 4, &v);
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
        rc = store_value_check(s, "the meta record", "meta", 4, &v, &len);
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
    store_rtxn_reset(s);
    int rc = store_rtxn_ensure(s);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- reading ---- */

/* mdb_get on a sub-database under the lock; *v points into the map. */
int store_get_locked(store_t *s, MDB_dbi dbi, const void *k, size_t klen, MDB_val *v) {
    pthread_mutex_lock(&s->mu);
    int rc = store_rtxn_ensure(s);
    if (rc == INCA_OK) {
        MDB_val key = {klen, (void *)k};
        int r = mdb_get(s->rtxn, dbi, &key, v);
        if (r == MDB_NOTFOUND) rc = INCA_ENOTFOUND;
        else if (r) rc = store_lmdb_fail(s, r, "read failed");
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_record_get(store_t *s, const char *key, const void **ptr, size_t *len) {
    MDB_val v;
    int rc = store_get_locked(s, s->dbi_meta, key, strlen(key), &v);
    if (rc == INCA_ENOTFOUND) return inca_fail(rc, "%s: no record '%s'", s->path, key);
    if (rc) return rc;
    char what[600];
    snprintf(what, sizeof what, "record '%.500s'", key);
    if ((rc = store_value_check(s, what, key, strlen(key), &v, len))) return rc;
    *ptr = v.mv_data;
    return INCA_OK;
}


int store_record_each(store_t *s, const char *prefix,
                      int (*fn)(void *ctx, const char *key, const void *val, size_t len), void *ctx) {
    size_t pl = strlen(prefix);
    char keybuf[1024];
    pthread_mutex_lock(&s->mu);
    int rc = store_rtxn_ensure(s);
    MDB_cursor *c = NULL;
    if (rc == INCA_OK) {
        int r = mdb_cursor_open(s->rtxn, s->dbi_meta, &c);
        if (r) rc = store_lmdb_fail(s, r, "cannot open cursor");
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
            if ((rc = store_value_check(s, what, k.mv_data, k.mv_size, &v, &len))) break;
            int stop = fn(ctx, keybuf, v.mv_data, len);
            if (stop) break;
            r = mdb_cursor_get(c, &k, &v, MDB_NEXT);
        }
        if (rc == INCA_OK && r && r != MDB_NOTFOUND) rc = store_lmdb_fail(s, r, "cursor failed");
    }
    if (c) mdb_cursor_close(c);
    pthread_mutex_unlock(&s->mu);
    return rc;
}
