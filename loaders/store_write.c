/* The store's write transactions (store_wtx_t): puts and deletes of arrays and records queued,
 * then committed in one LMDB transaction or split in several of bounded size, side files
 * written under LMDB's write lock, the map grown when full, the meta record last. Tested in
 * test_store.c and test_store_corrupt.c (disk full). */
#include "loaders/store.h"
#include "loaders/store_impl.h"
#include "core/alloc.h"
#include "core/status.h"
#include "loaders/sidefile.h"
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int64_t g_whole_max = STORE_WHOLE_MAX_BYTES;
void store_set_whole_max_bytes(int64_t bytes) {
    g_whole_max = bytes > 0 && bytes < STORE_WHOLE_MAX_BYTES ? bytes : STORE_WHOLE_MAX_BYTES;
}

static size_t g_chunk_bytes = STORE_CHUNK_BYTES;
void store_set_chunk_bytes(size_t bytes) { g_chunk_bytes = bytes ? bytes : STORE_CHUNK_BYTES; }

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
    uint32_t c = store_kv_crc(k, kl, data, len);
    unsigned char *tr = (unsigned char *)v.mv_data + len;
    for (int b = 0; b < 4; b++) tr[b] = (unsigned char)(c >> (8 * b));
    return 0;
}

/* Delete every chunk of `name` inside txn t. */
static int del_chunks(MDB_txn *t, MDB_dbi dbi, const char *name) {
    unsigned char k[600];
    size_t kl = store_chunk_key(k, name, 0), pl = strlen(name) + 1;
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
    if (mdb_get(t, s->dbi_meta, key, &v) == 0 && v.mv_size >= 4 && store_desc_parse(v.mv_data, v.mv_size - 4, &d, &sd) == 2)
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
    store_desc_key(dk, sizeof dk, op->name);
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
        size_t kl = store_chunk_key(ck, op->name, ci);
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
        found = v.mv_size >= 4 && store_desc_parse(v.mv_data, v.mv_size - 4, &d, &sd) == 2 && strcmp(sd.file, name) == 0;
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
        if (r) { rc = store_lmdb_fail(s, r, "cannot begin write transaction"); break; }
        if ((rc = side_write_all(w, t))) { mdb_txn_abort(t); break; }
        r = apply(w, t, budget, next);
        const int more = r == MORE_TO_GO;
        if (!r || more) r = mdb_txn_commit(t);
        else mdb_txn_abort(t);
        if (r == MDB_MAP_FULL && attempt < 40) {
            /* grow: no transaction of this process may be active while resizing */
            store_rtxn_reset(s);
            s->mapsize *= 2;
            r = mdb_env_set_mapsize(s->env, s->mapsize);
            if (r) { rc = store_lmdb_fail(s, r, "cannot grow the map"); break; }
            continue;
        }
        if (r) { rc = store_lmdb_fail(s, r, "write transaction failed"); break; }
        side_committed(w, next);
        store_rtxn_reset(s);   /* the next read sees what was just written */
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
