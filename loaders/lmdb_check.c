/* A structural check of an LMDB data file (format of LMDB 0.9, data version 1), read with
 * pread before LMDB maps any page: LMDB trusts its pages, so one flipped byte in a node offset,
 * key size or overflow page number makes it read outside the page or past the end of the file
 * (SIGSEGV / SIGBUS) instead of returning an error. Walks the free, main and named databases of
 * the chosen meta page and checks every page header, node bound and overflow run against the
 * file. Data bytes are covered by the store's CRC trailers, not here.
 * Tested in test_store_corrupt.c (byte flips over every page of a store's data.mdb). */
#include "loaders/lmdb_check.h"
#include "core/alloc.h"
#include "core/status.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* On-disk layout constants of LMDB 0.9 (mdb.c): page header, node header, meta record. */
enum { PAGEHDRSZ = 16, NODESIZE = 8, META_OFF = PAGEHDRSZ, DB_SIZE = 48, MAX_DEPTH = 32, MAX_KEY = 511 };
enum { P_BRANCH = 0x01, P_LEAF = 0x02, P_OVERFLOW = 0x04, P_META = 0x08, P_DIRTY = 0x10, P_LOOSE = 0x4000, P_KEEP = 0x8000 };
enum { F_BIGDATA = 0x01, F_SUBDATA = 0x02 };
#define MDB_MAGIC_ 0xBEEFC0DEu
#define P_INVALID_ (~(uint64_t)0)

typedef struct {
    uint64_t root, entries, depth;
} db_t;
/* Which tree a page belongs to: only the main database holds named-database records. */
enum { DB_FREE, DB_MAIN, DB_NAMED };

typedef struct {
    int fd;
    const char *path;
    uint32_t psize;
    uint64_t last;          /* last page in use */
    unsigned char *seen;    /* one bit per page: visited once only */
    unsigned char *page;    /* scratch pages, one per tree level */
    uint64_t leaves_nodes;  /* leaf nodes counted in the current database */
} walk_t;

static uint16_t rd16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static int bad(const walk_t *w, uint64_t pg, const char *what) {
    return inca_fail(INCA_EINVAL, "%s: LMDB page %llu (byte offset %llu): %s: the store is corrupt; re-ingest it or "
                     "restore a copy", w->path, (unsigned long long)pg, (unsigned long long)pg * w->psize, what);
}

static int read_page(walk_t *w, uint64_t pg, unsigned char *buf, size_t len) {
    ssize_t got = pread(w->fd, buf, len, (off_t)(pg * w->psize));
    if (got < 0) return inca_fail(INCA_EIO, "%s: read failed: %s", w->path, strerror(errno));
    if ((size_t)got != len) return bad(w, pg, "beyond the end of the file");
    return INCA_OK;
}

static int mark(walk_t *w, uint64_t pg, uint64_t count) {
    if (pg < 2 || pg > w->last || count > w->last - pg + 1) return bad(w, pg, "page number outside the file");
    for (uint64_t p = pg; p < pg + count; p++) {
        if (w->seen[p >> 3] & (1u << (p & 7))) return bad(w, p, "page reached twice");
        w->seen[p >> 3] |= (unsigned char)(1u << (p & 7));
    }
    return INCA_OK;
}

static int walk_db(walk_t *w, const db_t *db, int kind, uint64_t base);

/* A leaf node's value: inline bytes in the page, an overflow run, or (main db) a named db. */
static int leaf_value(walk_t *w, uint64_t pg, const unsigned char *node, uint32_t room, int kind, uint64_t level) {
    uint16_t flags = rd16(node + 4), ks = rd16(node + 6);
    uint32_t dsz = (uint32_t)rd16(node) | (uint32_t)rd16(node + 2) << 16;
    const unsigned char *data = node + NODESIZE + ks;
    if (flags & ~(F_BIGDATA | F_SUBDATA) || (flags & F_BIGDATA && flags & F_SUBDATA)) return bad(w, pg, "bad node flags");
    if (flags & F_BIGDATA) {
        if (room < 8) return bad(w, pg, "overflow reference past the page");
        uint64_t opg = rd64(data), n = ((uint64_t)PAGEHDRSZ - 1 + dsz) / w->psize + 1;
        int rc = mark(w, opg, n);
        if (rc) return rc;
        unsigned char h[PAGEHDRSZ];
        if ((rc = read_page(w, opg, h, sizeof h))) return rc;
        if (rd64(h) != opg || !(rd16(h + 10) & P_OVERFLOW) || rd32(h + 12) < n)
            return bad(w, opg, "overflow page header does not match its reference");
        return INCA_OK;
    }
    if (dsz > room) return bad(w, pg, "node data past the page");
    if (flags & F_SUBDATA) {
        if (kind != DB_MAIN || dsz != DB_SIZE) return bad(w, pg, "named database record in the wrong place");
        db_t sub = {rd64(data + 40), rd64(data + 32), rd16(data + 6)};
        return walk_db(w, &sub, DB_NAMED, level + 1);   /* scratch pages below this one */
    }
    return INCA_OK;
}

/* level: depth in this tree; base: scratch pages used by the trees above (a named database is
 * walked from inside a main-database leaf, whose page must stay readable). */
static int walk_page(walk_t *w, uint64_t pg, uint64_t level, uint64_t base, const db_t *db, int kind) {
    int rc = mark(w, pg, 1);
    if (rc) return rc;
    unsigned char *p = w->page + (size_t)(base + level) * w->psize;
    if ((rc = read_page(w, pg, p, w->psize))) return rc;
    uint16_t flags = rd16(p + 10) & (uint16_t)~(P_DIRTY | P_LOOSE | P_KEEP);
    uint16_t lower = rd16(p + 12), upper = rd16(p + 14);
    int leaf = flags == P_LEAF;
    if (rd64(p) != pg) return bad(w, pg, "page header names another page");
    if (flags != P_LEAF && flags != P_BRANCH) return bad(w, pg, "not a branch or leaf page");
    if (leaf != (level + 1 == db->depth)) return bad(w, pg, "tree depth disagrees with the database record");
    if (lower < PAGEHDRSZ || (lower - PAGEHDRSZ) % 2 || lower > upper || upper > w->psize)
        return bad(w, pg, "bad free-space bounds");
    int nkeys = (lower - PAGEHDRSZ) / 2;
    if (nkeys == 0) return bad(w, pg, "empty page in a tree");
    for (int i = 0; i < nkeys; i++) {
        uint32_t off = rd16(p + PAGEHDRSZ + 2 * i);
        if (off < upper || off % 2 || off + NODESIZE > w->psize) return bad(w, pg, "node offset outside the page");
        const unsigned char *node = p + off;
        uint32_t ks = rd16(node + 6);
        if (ks > MAX_KEY || off + NODESIZE + ks > w->psize) return bad(w, pg, "key past the page");
        uint32_t room = w->psize - off - NODESIZE - ks;
        if (leaf) {
            w->leaves_nodes++;
            if ((rc = leaf_value(w, pg, node, room, kind, base + level))) return rc;
        } else {
            uint64_t child = (uint64_t)rd16(node) | (uint64_t)rd16(node + 2) << 16 | (uint64_t)rd16(node + 4) << 32;
            if ((rc = walk_page(w, child, level + 1, base, db, kind))) return rc;
            /* the scratch page of this level is intact: children use the levels below */
        }
    }
    return INCA_OK;
}

static int walk_db(walk_t *w, const db_t *db, int kind, uint64_t base) {
    if (db->root == P_INVALID_) return db->entries == 0 && db->depth == 0 ? INCA_OK : bad(w, 0, "empty database with entries");
    if (db->depth == 0 || db->depth > MAX_DEPTH) return bad(w, db->root, "bad tree depth in a database record");
    uint64_t saved = w->leaves_nodes;
    w->leaves_nodes = 0;
    int rc = walk_page(w, db->root, 0, base, db, kind);
    if (rc == INCA_OK && w->leaves_nodes != db->entries)
        rc = bad(w, db->root, "entry count disagrees with the database record");
    w->leaves_nodes = saved;
    return rc;
}

/* The meta record of page i: magic, version, page size and bounds; fills *m fields. */
typedef struct { uint64_t txnid, last, mapsize; uint32_t psize; db_t free_db, main_db; } meta_t;

static int read_meta(walk_t *w, uint64_t i, uint32_t psize, uint64_t npages, meta_t *m) {
    unsigned char b[PAGEHDRSZ + 160];
    ssize_t got = pread(w->fd, b, sizeof b, (off_t)(i * psize));
    w->psize = psize;
    if (got != (ssize_t)sizeof b) return bad(w, i, "meta page beyond the end of the file");
    const unsigned char *mm = b + META_OFF;
    if (!(rd16(b + 10) & P_META) || rd32(mm) != MDB_MAGIC_ || rd32(mm + 4) != 1) return bad(w, i, "bad meta page");
    m->psize = rd32(mm + 24);   /* mm_dbs[FREE_DBI].md_pad */
    m->mapsize = rd64(mm + 16);
    const unsigned char *d0 = mm + 24, *d1 = mm + 24 + DB_SIZE;
    m->free_db = (db_t){rd64(d0 + 40), rd64(d0 + 32), rd16(d0 + 6)};
    m->main_db = (db_t){rd64(d1 + 40), rd64(d1 + 32), rd16(d1 + 6)};
    m->last = rd64(mm + 24 + 2 * DB_SIZE);
    m->txnid = rd64(mm + 24 + 2 * DB_SIZE + 8);
    /* last >= mapsize / psize is (last + 1) psize > mapsize without its overflow: a damaged last
     * of 2^64 - 1 wrapped to 0 and passed as a truncated file's */
    if (rd64(mm + 8) != 0 || m->psize != psize || m->last < 1 || m->last >= m->mapsize / psize ||
        m->mapsize > ((uint64_t)1 << 48))
        return bad(w, i, "meta page has impossible sizes");
    if (m->last >= npages)   /* a sane meta whose pages the file lacks: cut short, not damaged */
        return inca_fail(INCA_EINVAL, "%s: holds %llu pages of %u bytes, but its LMDB meta page %llu uses %llu: truncated; "
                         "restore a copy or re-create the store", w->path, (unsigned long long)npages, psize,
                         (unsigned long long)i, (unsigned long long)(m->last + 1));
    return INCA_OK;
}

int lmdb_check_file(const char *path, int64_t txnid) {
    walk_t w = {.fd = -1, .path = path};
    int rc = INCA_OK;
    w.fd = open(path, O_RDONLY | O_CLOEXEC);
    if (w.fd < 0) return inca_fail(errno == ENOENT ? INCA_ENOTFOUND : INCA_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    unsigned char h[PAGEHDRSZ + 32];
    if (fstat(w.fd, &st) != 0) { rc = inca_fail(INCA_EIO, "%s: cannot stat: %s", path, strerror(errno)); goto done; }
    /* the user's terms first: a cut-off file (a copy or download stopped early, a full disk) and
     * a file that is no LMDB store at all are told apart from a damaged page */
    if (pread(w.fd, h, sizeof h, 0) != (ssize_t)sizeof h) {
        rc = inca_fail(INCA_EINVAL, "%s: %lld bytes, too short for an LMDB store (at least 2 pages): truncated or not a "
                       "store", path, (long long)st.st_size);
        goto done;
    }
    uint32_t psize = rd32(h + META_OFF + 24);
    if (!(rd16(h + 10) & P_META) || rd32(h + META_OFF) != MDB_MAGIC_) {
        rc = inca_fail(INCA_EINVAL, "%s: not an LMDB data file (no LMDB meta page at its start): damaged or not a store",
                       path);
        goto done;
    }
    if (psize < 512 || psize > 65536 || (psize & (psize - 1))) {
        rc = inca_fail(INCA_EINVAL, "%s: LMDB meta page 0: bad page size %u: the store is corrupt; re-ingest it or restore "
                       "a copy", path, psize);
        goto done;
    }
    if (st.st_size < 2 * (off_t)psize) {
        rc = inca_fail(INCA_EINVAL, "%s: %lld bytes, too short for an LMDB store (at least 2 pages of %u): truncated or "
                       "not a store", path, (long long)st.st_size, psize);
        goto done;
    }
    uint64_t npages = (uint64_t)st.st_size / psize;
    meta_t m[2];
    for (int i = 0; i < 2 && !rc; i++) rc = read_meta(&w, (uint64_t)i, psize, npages, &m[i]);
    if (rc) goto done;
    /* LMDB reads the meta with the larger txnid (or the one the caller's snapshot began at) */
    int pick = m[0].txnid < m[1].txnid;
    if (txnid >= 0 && m[!pick].txnid == (uint64_t)txnid) pick = !pick;
    w.last = m[pick].last;
    w.seen = inca_calloc((size_t)(w.last / 8 + 1), 1);
    w.page = inca_malloc((size_t)psize * (2 * MAX_DEPTH + 2));
    if (!w.seen || !w.page) { rc = INCA_ENOMEM; goto done; }
    rc = walk_db(&w, &m[pick].free_db, DB_FREE, 0);
    if (!rc) rc = walk_db(&w, &m[pick].main_db, DB_MAIN, 0);
done:
    inca_free(w.seen);
    inca_free(w.page);
    close(w.fd);
    return rc;
}
