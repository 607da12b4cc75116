/* The LMDB store: one LMDB environment (a directory holding data.mdb) per dataset, with named
 * sub-databases:
 *   "meta"    key "meta" -> store_meta_t (magic, version, counts, dtypes);
 *             key "array:<name>" -> array descriptor; other keys are free-form records
 *             ("part:<name>" partition manifests, "dyn:<name>" ...).
 *   "arrays"  key <name> '\0' <8-byte big-endian chunk index> -> chunk bytes; keys sort in
 *             array order, so a cursor walks an array front to back.
 * Arrays are stored in chunks of at most STORE_CHUNK_BYTES, except a whole array larger than
 * one LMDB value holds (4 GiB): that one lives in a side file beside data.mdb (side-*.bin,
 * loaders/sidefile.h), its descriptor (in "meta", checksummed like every value) naming the file,
 * its size and the CRC32 of its bytes; the file is written and synced before the transaction
 * that commits its descriptor, and removed after the one that replaces or deletes it.
 * Format v2: every value (meta, descriptors, records, chunks) ends with a 4-byte little-endian
 * CRC32 (zlib) of its key bytes followed by its payload, written in the same transaction and
 * checked on every read (a failure is INCA_EINVAL naming the store and the value); readers see
 * the payload only. A v1 store (no trailers) is refused with a hint to re-ingest.
 *
 * CAVEATS FIRST
 * - Views (store_array_chunk, store_record_get) point into the memory map and are valid only
 *   until the store's read snapshot changes: store_close, store_write_commit (which renews the
 *   snapshot so the writer sees its own data) or store_refresh. Copy what must live longer.
 * - A store_t may be read from several threads at once (MDB_NOTLS, one shared read txn);
 *   writes (store_write_*) must come from one thread at a time.
 * - Every read checks the CRC of each chunk it touches, in full (about 4 GB/s): read ranges, not
 *   element by element across a 64 MiB chunk.
 * - store_open first walks data.mdb's page structure (loaders/lmdb_check.h) so that a damaged
 *   page is INCA_EINVAL rather than a crash inside LMDB; it assumes no other process is
 *   committing to the store at that moment.
 * - Open LMDB environments only after a fork, never before (Check forks per test).
 * - A store on disk is valid only once its "meta" record exists; dataset_save writes it last
 *   in a temporary directory and renames, so an interrupted ingest leaves nothing that opens.
 * Tested in test_store.c. */
#ifndef INCA_STORE_H
#define INCA_STORE_H
#include <stddef.h>
#include <stdint.h>

#define STORE_MAGIC 0x41434e49u        /* "INCA" little-endian */
#define STORE_VERSION 2u   /* 2: every value carries a CRC32 trailer over key and bytes */
#define STORE_CHUNK_BYTES (64u << 20)   /* 64 MiB per chunk */

typedef enum { DT_F32 = 1, DT_I32 = 2, DT_I64 = 3, DT_U8 = 4, DT_BF16 = 5, DT_F64 = 6 } store_dtype_t;
size_t store_dtype_size(store_dtype_t t);
/* Chunk size for arrays written from now on in this process (tests use a few KiB to exercise
 * chunk boundaries); 0 restores STORE_CHUNK_BYTES. */
void store_set_chunk_bytes(size_t bytes);

typedef struct store_meta {
    uint32_t magic, version;
    int64_t nodes;        /* nodes or examples */
    int64_t edges;        /* directed edges stored in the CSR (0: no graph) */
    int64_t features;
    int32_t classes;
    int32_t feat_dtype;   /* store_dtype_t of "x" */
    int64_t labeled;
    int64_t split_n[3];   /* train, valid, test */
    char source[256];
} store_meta_t;

typedef struct store_array_info {
    store_dtype_t dtype;
    int64_t count;         /* elements */
    int64_t chunk_elems;   /* elements per chunk (the last may hold fewer) */
    int64_t nchunks;
    int in_file;           /* 1: one piece in a side file beside data.mdb (too large for LMDB) */
} store_array_info_t;

typedef struct store store_t;

/* STORE_RDWR_MAP: writable with LMDB's MDB_WRITEMAP: a commit writes its pages straight into
 * the map (no copy of them in anonymous memory, no write(2) calls, which Linux caps at 2 GiB
 * each: LMDB fails a larger value with EIO), the file is sized to the map (sparse). For the
 * multi-GB whole arrays of the layout (nn/layout.h). */
enum { STORE_RDONLY = 0, STORE_RDWR = 1, STORE_RDWR_MAP = 2 };
/* Open an existing store; checks the meta record (magic, version, sizes) with a hint on
 * mismatch. The caller owns *out and frees it with store_close. */
int store_open(const char *path, int mode, store_t **out);
/* Whether the folder at path is one an inca store could be (what --force may replace): 1 when
 * it holds only data.mdb, lock.mdb and side files, and its LMDB either has the store's 'meta'
 * and 'arrays' databases or is too damaged to open (a broken store is what --force exists to
 * replace); 0 for anything else (other files, another program's LMDB), with the reason in
 * why[cap]. */
int store_probe(const char *path, char *why, size_t cap);
/* Create an empty environment at `path` (a directory that must not exist) for writing.
 * The store has no meta until store_write_meta is committed. */
int store_create(const char *path, store_t **out);
void store_close(store_t **s);        /* NULL-safe, sets *s = NULL */
const char *store_path(const store_t *s);
const store_meta_t *store_meta(const store_t *s);  /* valid until close; NULL before meta */
/* Bytes of data.mdb in use: up to LMDB's last page (a file once opened with STORE_RDWR_MAP is
 * sized to the map, sparse past it). */
int64_t store_disk_bytes(const store_t *s);
/* Bytes of the store's side files (arrays past LMDB's value size, beside data.mdb). */
int64_t store_side_bytes(const store_t *s);
int store_refresh(store_t *s);        /* renew the read snapshot (invalidates views) */

/* ---- reading ---- */
int store_array_info(store_t *s, const char *name, store_array_info_t *info); /* ENOTFOUND */
int store_has_array(store_t *s, const char *name);  /* 1 / 0 */
/* Zero-copy view of chunk i: *ptr into the map (or an aligned copy, as store_array_view's), *count elements. */
int store_array_chunk(store_t *s, const char *name, int64_t i, const void **ptr, int64_t *count);
/* Zero-copy view of a whole array written in one chunk (store_wtx_put_array_whole): *ptr into
 * the map (aligned to 16 bytes where the payload starts an LMDB overflow page run; a value small
 * enough to sit in a leaf page, only 2-byte aligned there, comes as an aligned copy the store
 * frees at store_refresh or store_close, as views end), *count elements
 * (count may be NULL). Checks the whole value's CRC once, here. INCA_EINVAL for another dtype or
 * a chunked array; ENOTFOUND when absent. *ptr is NULL for an empty array. */
int store_array_view(store_t *s, const char *name, store_dtype_t want, const void **ptr, int64_t *count);
/* Copy elements [start, start+count) into dst (crosses chunks). */
int store_array_read(store_t *s, const char *name, int64_t start, int64_t count, void *dst);
/* Allocate (inca_malloc) and read a whole array; *count may be NULL. Caller frees. */
int store_array_load(store_t *s, const char *name, store_dtype_t want, void **out, int64_t *count);
/* Free-form record in "meta": view valid like array chunks. ENOTFOUND when absent. */
int store_record_get(store_t *s, const char *key, const void **ptr, size_t *len);
/* Calls fn for every record key starting with prefix (in key order); fn returns 0 to go on. */
int store_record_each(store_t *s, const char *prefix,
                      int (*fn)(void *ctx, const char *key, const void *val, size_t len), void *ctx);

/* Read and check every record and every chunk of every array (checksums, sizes, descriptors)
 * and that the chunks on disk are exactly those the descriptors describe. INCA_EINVAL names
 * the first bad value. The counts and payload bytes read go to *st. */
/* Side files are read in full against their CRC; stray_files counts side files no descriptor
 * names (an interrupted write's: harmless, removed by the next write). */
typedef struct store_verify_stats { int64_t arrays, chunks, records, bytes, files, stray_files; } store_verify_stats_t;
int store_verify(store_t *s, store_verify_stats_t *st);

/* ---- writing: every put is deferred and applied in one LMDB write transaction at commit, so
 * a batch lands whole or not at all; on MDB_MAP_FULL the map is doubled and the transaction
 * retried. The caller's buffers must stay valid until commit or abort returns. ---- */
typedef struct store_wtx store_wtx_t;
int store_write_begin(store_t *s, store_wtx_t **out);
/* Replace (or create) array `name` with count elements of dtype from data. */
int store_wtx_put_array(store_wtx_t *w, const char *name, store_dtype_t dtype, const void *data, int64_t count);
/* The same as one chunk: one contiguous run of pages in the map, so that store_array_view can
 * serve it whole (arrays a trainer reads at random rows). Beyond STORE_WHOLE_MAX_BYTES (LMDB's
 * largest value less the checksum) the array goes to a side file instead, written at commit
 * (while the transaction holds LMDB's write lock) and mapped by store_array_view the same way. */
#define STORE_WHOLE_MAX_BYTES ((int64_t)0xffffffff - 4)
/* Tests: arrays written whole past `bytes` go to side files (0 restores STORE_WHOLE_MAX_BYTES). */
void store_set_whole_max_bytes(int64_t bytes);
int store_wtx_put_array_whole(store_wtx_t *w, const char *name, store_dtype_t dtype, const void *data, int64_t count);
/* The same in a side file whatever its size (an empty array: an ordinary record): the bytes go
 * from the caller's buffer to the file at commit, never through LMDB's dirty pages (which are
 * anonymous memory until the commit): a writer bounded in anonymous memory (--memory-budget)
 * hands over a file-backed buffer. */
int store_wtx_put_array_side(store_wtx_t *w, const char *name, store_dtype_t dtype, const void *data, int64_t count);
int store_wtx_del_array(store_wtx_t *w, const char *name);
int store_wtx_put_record(store_wtx_t *w, const char *key, const void *data, size_t len);
int store_wtx_del_record(store_wtx_t *w, const char *key);
int store_wtx_put_meta(store_wtx_t *w, const store_meta_t *m);
/* Apply everything in one transaction; frees w (also on failure). */
int store_write_commit(store_wtx_t **w);
/* The same in several transactions of at most max_bytes of array chunks each (whole chunks, so
 * at least one per transaction), the meta record in the last. LMDB keeps a transaction's dirty
 * overflow pages in anonymous memory until it commits: one transaction would copy every array
 * written whole. NOT atomic: for a store that nobody reads until it is complete (dataset_save
 * writes a temporary directory and renames it into place). */
int store_write_commit_split(store_wtx_t **w, int64_t max_bytes);
void store_write_abort(store_wtx_t **w);   /* drop pending puts; NULL-safe */
#endif
