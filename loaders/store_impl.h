/* The LMDB store's state (loaders/store.h's opaque store_t) and stored array descriptors, shared
 * by the files of the store and by nothing else: store.c (the environment, records, LMDB's codes,
 * checksums), store_array.c (the arrays' layout and reads), store_write.c (write transactions)
 * and store_verify.c (a whole store checked). Calls go one way: store_write, store_verify ->
 * store_array -> store (and straight to store); store.c, whose header every file of the store
 * includes, calls none of the others. Include loaders/store.h first: this header does not
 * include it, so that no circle of files runs store -> store_impl -> store. Tested with the
 * store, in test_store.c and test_store_corrupt.c. */
#ifndef INCA_LOADERS_STORE_IMPL_H
#define INCA_LOADERS_STORE_IMPL_H
#ifndef INCA_STORE_H
#error "include loaders/store.h before loaders/store_impl.h"
#endif
#include <lmdb.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "loaders/sidefile.h"

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

/* ---- store.c ---- */
/* The one translation of LMDB codes into a status with a message naming s's path and what. */
int store_lmdb_fail(const store_t *s, int rc, const char *what);
/* CRC32 of a key and its value bytes: the trailer every stored value carries. */
uint32_t store_kv_crc(const void *k, size_t kl, const void *v, size_t vl);
/* Check the trailer of value v read under key k; *len gets the payload size. */
int store_value_check(const store_t *s, const char *what, const void *k, size_t kl, const MDB_val *v, size_t *len);
/* Begin the shared read snapshot if needed, or reset it (the next read begins a new one);
 * the caller holds s->mu. */
int store_rtxn_ensure(store_t *s);
void store_rtxn_reset(store_t *s);
/* mdb_get on a sub-database under the lock; *v points into the map. */
int store_get_locked(store_t *s, MDB_dbi dbi, const void *k, size_t klen, MDB_val *v);

/* ---- store_array.c ---- */
/* Parse a descriptor's payload: 1 chunked (d), 2 side file (d and sd), 0 malformed. */
int store_desc_parse(const void *p, size_t len, array_desc_t *d, side_desc_t *sd);
/* The key of array name's descriptor in "meta", and of its chunk i in "arrays" (returns its length). */
void store_desc_key(char *buf, size_t cap, const char *name);
size_t store_chunk_key(unsigned char *buf, const char *name, int64_t i);
/* The descriptor of array `name` (checked); *sd (may be NULL) gets a side file's. */
int store_desc_get(store_t *s, const char *name, store_array_info_t *info, side_desc_t *sd);
/* Chunk i of array `name` (its info from store_desc_get): *ptr into the map, *count elements. */
int store_chunk_get(store_t *s, const char *name, const store_array_info_t *info, int64_t i, const void **ptr,
                    int64_t *count);
#endif
