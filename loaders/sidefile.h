/* Files beside a store's data.mdb that hold arrays too large for one LMDB value (LMDB's value
 * size is a 32-bit field: 4 GiB; the partition-ordered features of a 10M x 128 graph take
 * 5.12 GB). The store (loaders/store*.c) is the only caller: it writes a file while it holds
 * LMDB's write lock, then commits a descriptor naming the file, its size and its CRC32 in the same
 * transaction as everything else, so a file no committed descriptor names is garbage, never data.
 *
 * CAVEATS FIRST
 * - A file is written as NAME.tmp, fsynced, renamed to NAME and the directory fsynced: a crash
 *   leaves a complete file or a .tmp, and neither is visible until a descriptor names it.
 * - Maps are read-only MAP_SHARED views of file pages (evictable, like LMDB's map), valid until
 *   sidefile_unmap; an unlinked file's pages stay valid while mapped.
 * Tested in test_store.c (side arrays). */
#ifndef INCA_SIDEFILE_H
#define INCA_SIDEFILE_H
#include <stdint.h>

#define SIDEFILE_NAME_MAX 40   /* "side-" 16 hex ".bin" and a NUL fit */

/* Write bytes of data to a new file in dir; its name (without the directory) goes to
 * name[SIDEFILE_NAME_MAX], the CRC32 (zlib) of the bytes to *crc. INCA_EIO names the file. */
int sidefile_write(const char *dir, const void *data, int64_t bytes, char *name, uint32_t *crc);
/* Map dir/name read-only; INCA_ENOTFOUND when absent, INCA_EINVAL when its size is not bytes
 * (both naming the file). bytes > 0. */
int sidefile_map(const char *dir, const char *name, int64_t bytes, const void **ptr);
/* The same, its bytes read in full against crc (INCA_EINVAL naming the file when they differ). */
int sidefile_map_checked(const char *dir, const char *name, int64_t bytes, uint32_t crc, const void **ptr);
void sidefile_unmap(const void *ptr, int64_t bytes);
/* CRC32 (zlib) of bytes at p, in pieces (zlib takes 32-bit lengths on some builds). */
uint32_t sidefile_crc(const void *p, int64_t bytes);
/* Whether name is one sidefile_write makes (a finished file, or with tmp its .tmp). */
int sidefile_is_name(const char *name, int tmp);
/* Remove dir/name; a missing file is not an error. */
int sidefile_remove(const char *dir, const char *name);
/* Remove every .tmp side file in dir and every finished one for which keep(ctx, name) is 0
 * (files an interrupted writer left: nothing names them). *removed (may be NULL) counts them. */
int sidefile_sweep(const char *dir, int (*keep)(void *ctx, const char *name), void *ctx, int *removed);
/* Stray side files in dir (finished ones keep() does not claim, and .tmp ones), for verify. */
int sidefile_count_strays(const char *dir, int (*keep)(void *ctx, const char *name), void *ctx, int *strays);

/* Bytes of the finished side files in dir (0 when none or unreadable). */
int64_t sidefile_total_bytes(const char *dir);

/* The maps one store has handed out, each checked against its CRC once, all unmapped by
 * sidefile_cache_free (views stay valid until the store closes). Not thread-safe: the store
 * calls it under its lock. */
typedef struct sidefile_cache sidefile_cache_t;
/* *ptr: dir/name mapped (mapping and checking it the first time: INCA_EINVAL naming the file
 * when its CRC is not crc). *c is created on first use. */
int sidefile_cache_get(sidefile_cache_t **c, const char *dir, const char *name, int64_t bytes, uint32_t crc,
                       const void **ptr);
void sidefile_cache_free(sidefile_cache_t **c);
#endif
