/* A whole store verified (store_verify, `inca verify`): every record's and chunk's checksum, every
 * side file against its CRC, chunks and files no descriptor accounts for. Tested in
 * test_store.c and test_store_corrupt.c. */
#include "loaders/store.h"
#include "loaders/store_impl.h"
#include "core/alloc.h"
#include "core/status.h"
#include "loaders/sidefile.h"
#include <lmdb.h>
#include <pthread.h>
#include <string.h>

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
        if ((rc = store_desc_get(s, c.names[a], &info, &sd))) break;
        st->arrays++;
        if (info.in_file) {
            rc = verify_side(s, &c, c.names[a], &info, &sd);
            continue;
        }
        for (int64_t i = 0; i < info.nchunks && rc == INCA_OK; i++) {
            const void *p;
            int64_t cnt;
            rc = store_chunk_get(s, c.names[a], &info, i, &p, &cnt);
            if (rc == INCA_OK) st->bytes += cnt * (int64_t)store_dtype_size(info.dtype);
        }
        chunks += info.nchunks;
    }
    if (rc == INCA_OK) {   /* chunks no descriptor accounts for: stray or damaged keys */
        MDB_stat ms;
        pthread_mutex_lock(&s->mu);
        rc = store_rtxn_ensure(s);
        int r = rc == INCA_OK ? mdb_stat(s->rtxn, s->dbi_arrays, &ms) : 0;
        pthread_mutex_unlock(&s->mu);
        if (r) rc = store_lmdb_fail(s, r, "cannot read the arrays database");
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
