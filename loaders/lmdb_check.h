/* Structural check of an LMDB data file (LMDB 0.9 format) before LMDB maps it, so that a
 * damaged page is an error message instead of a crash inside LMDB. Used by store.c on every
 * open; tested in test_store_corrupt.c.
 * CAVEAT: reads the file without LMDB's reader lock: it assumes no other process commits to
 * the store during the check (inca writes a store from one process at a time). */
#ifndef INCA_LMDB_CHECK_H
#define INCA_LMDB_CHECK_H
#include <stdint.h>

/* Check the meta pages and every tree page (free, main and named databases) reachable from the
 * meta with the given txnid (-1: the newest, as LMDB picks it) of the data file at `path`.
 * INCA_EINVAL names the page and byte offset of the first problem. */
int lmdb_check_file(const char *path, int64_t txnid);
#endif
