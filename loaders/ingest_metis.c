/* METIS graph files: header "n m [fmt [ncon]]" ('%' comment lines anywhere), then one line per
 * vertex with 1-based neighbours; fmt digits (size, vertex weights, edge weights) say which
 * extra numbers to skip. Checks: n vertex lines, 2m adjacency entries, ids in 1..n.
 * The graph must be symmetric (as METIS requires) unless --symmetrize adds the reverses.
 * Tested in tests/test_ingest.c (fmt 0/1/10/11/100, comments) and tests/data/bad/metis-*. */
#include "loaders/ingest_internal.h"
#include "core/alloc.h"
#include "core/status.h"
#include <stdio.h>
#include <string.h>

static int is_comment(const char *line) { return *textio_skip_blank(line) == '%'; }

/* First u -> v without v -> u, reported with both vertex lines. */
static int metis_check_symmetric(const char *path, const csr_t *a, const int64_t *vline) {
    if (csr_is_symmetric(a)) return INCA_OK;
    for (int64_t u = 0; u < a->n_rows; u++)
        for (int64_t k = a->rowptr[u]; k < a->rowptr[u + 1]; k++)
            if (!csr_has_entry(a, a->col[k], (int32_t)u))
                return inca_fail(INCA_EINVAL, "%s:%lld: vertex %lld lists neighbour %lld, but vertex %lld (line %lld) "
                                 "does not list %lld: expected a symmetric graph (or pass --symmetrize)", path,
                                 (long long)vline[u], (long long)u + 1, (long long)a->col[k] + 1,
                                 (long long)a->col[k] + 1, (long long)vline[a->col[k]], (long long)u + 1);
    return INCA_OK;
}

/* The header's figures; the fmt digits say which numbers of a vertex line are not neighbours. */
typedef struct metis_header {
    int64_t n, m, fmt, ncon;
    int has_size, has_vw, has_ew;
    long long line;                /* the header's line number, named in later messages */
} metis_header_t;

/* The first line that is neither a comment nor blank, in *line (the end of the file is an error). */
static int metis_header_line(textio_t *t, const char *path, char **line) {
    for (;;) {
        int r = textio_next(t, line, NULL);
        if (r < 0) return r;
        if (r == 0)
            return inca_fail(INCA_EINVAL, "%s:%lld: expected a header 'n m [fmt [ncon]]', found the end of the file",
                             path, (long long)textio_lineno(t) + 1);
        if (!is_comment(*line) && !textio_at_end(*line)) return INCA_OK;
    }
}

/* The header's ranges, before vline (n) and the edge list (2m) are allocated: a vertex line
 * takes at least one byte ("\n"), an adjacency entry at least two ("1 "). */
static int metis_header_check(const char *path, metis_header_t *h) {
    int rc;
    char where[INGEST_PATH_MAX + 32];
    snprintf(where, sizeof where, "%s:%lld", path, h->line);
    if (h->n > 0 && (rc = ingest_check_declared(where, path, h->n, "rows (vertex lines)", 1, 0))) return rc;
    if (h->m > 0 && (rc = ingest_check_declared(where, path, h->m > INT64_MAX / 2 ? INT64_MAX : 2 * h->m,
                                                "adjacency entries (2m)", 2, 0))) return rc;
    if (h->n <= 0 || h->n > INGEST_MAX_ID || h->m < 0 || h->m > INT64_MAX / 4)
        return inca_fail(INCA_EINVAL, "%s:%lld: expected n in 1..%lld and m >= 0, got n=%lld m=%lld", path, h->line,
                         (long long)INGEST_MAX_ID, (long long)h->n, (long long)h->m);
    h->has_size = (int)(h->fmt / 100);
    h->has_vw = (int)(h->fmt / 10 % 10);
    h->has_ew = (int)(h->fmt % 10);
    if (h->fmt < 0 || h->has_size > 1 || h->has_vw > 1 || h->has_ew > 1)
        return inca_fail(INCA_EINVAL, "%s:%lld: expected fmt of three 0/1 digits (0, 1, 10, 11, 100, ...), got %lld",
                         path, h->line, (long long)h->fmt);
    if (h->has_vw && h->ncon == 0) h->ncon = 1;
    if (!h->has_vw) h->ncon = 0;
    if (h->ncon < 0 || h->ncon > 1024)
        return inca_fail(INCA_EINVAL, "%s:%lld: expected ncon in 1..1024, got %lld", path, h->line, (long long)h->ncon);
    return INCA_OK;
}

/* "n m [fmt [ncon]]" after any comment lines, parsed and checked. */
static int metis_read_header(textio_t *t, const char *path, metis_header_t *h) {
    char *line;
    int rc = metis_header_line(t, path, &line);
    if (rc) return rc;
    *h = (metis_header_t){.line = (long long)textio_lineno(t)};
    const char *p = line;
    if (!textio_parse_i64(&p, &h->n) || !textio_parse_i64(&p, &h->m) ||
        (!textio_at_end(p) && !textio_parse_i64(&p, &h->fmt)) ||
        (!textio_at_end(p) && !textio_parse_i64(&p, &h->ncon)) || !textio_at_end(p))
        return inca_fail(INCA_EINVAL, "%s:%lld: expected a header 'n m [fmt [ncon]]' of integers, got '%.40s'", path,
                         h->line, line);
    return metis_header_check(path, h);
}

/* Vertex v's line (number ln): the size/weights skipped, each neighbour checked and pushed as
 * v -> u-1 (0-based), its edge weight skipped; *entries counts the neighbours. */
static int metis_vertex_line(const char *path, long long ln, const char *line, const metis_header_t *h, int64_t v,
                             ingest_edges_t *e, int64_t *entries) {
    const char *p = line;
    int64_t w;
    int rc;
    for (int64_t k = 0; k < h->has_size + h->ncon; k++)
        if (!textio_parse_i64(&p, &w) || (*p && *p != ' ' && *p != '\t' && *p != '\r'))
            return inca_fail(INCA_EINVAL, "%s:%lld: expected %lld vertex size/weight integer(s) first (fmt %lld)",
                             path, ln, (long long)(h->has_size + h->ncon), (long long)h->fmt);
    while (!textio_at_end(p)) {
        int64_t u;
        if (!textio_parse_i64(&p, &u) || (*p && *p != ' ' && *p != '\t'))
            return inca_fail(INCA_EINVAL, "%s:%lld: expected a neighbour id (integer), got '%.40s'", path, ln,
                             textio_skip_blank(p));
        if (u < 1 || u > h->n)
            return inca_fail(INCA_EINVAL, "%s:%lld: neighbour %lld out of range: expected 1..%lld", path, ln,
                             (long long)u, (long long)h->n);
        if (h->has_ew && (!textio_parse_i64(&p, &w) || (*p && *p != ' ' && *p != '\t')))
            return inca_fail(INCA_EINVAL, "%s:%lld: expected an edge weight (integer) after neighbour %lld (fmt %lld)",
                             path, ln, (long long)u, (long long)h->fmt);
        if ((rc = ingest_edges_push(e, v, u - 1))) return rc;
        (*entries)++;
    }
    return INCA_OK;
}

/* The vertex lines to the end of the file (blank lines past the n-th allowed), then the counts
 * against the header: n lines, 2m adjacency entries. */
static int metis_read_vertices(textio_t *t, const char *path, const metis_header_t *h, ingest_edges_t *e,
                               ingest_i64vec_t *vline) {
    int64_t v = 0, entries = 0;
    char *line;
    int r, rc;
    for (;;) {
        r = textio_next(t, &line, NULL);
        if (r < 0) return r;
        if (r == 0) break;
        if (is_comment(line)) continue;
        long long ln = (long long)textio_lineno(t);
        if (v >= h->n) {
            if (textio_at_end(line)) continue;
            return inca_fail(INCA_EINVAL, "%s:%lld: more vertex lines than n = %lld in the header (line %lld)",
                             path, ln, (long long)h->n, h->line);
        }
        if ((rc = ingest_i64vec_push(vline, ln))) return rc;
        if ((rc = metis_vertex_line(path, ln, line, h, v, e, &entries))) return rc;
        v++;
    }
    if (v < h->n)
        return inca_fail(INCA_EINVAL, "%s:%lld: expected %lld vertex lines (header, line %lld), found only %lld",
                         path, (long long)textio_lineno(t) + 1, (long long)h->n, h->line, (long long)v);
    if (entries != 2 * h->m)
        return inca_fail(INCA_EINVAL, "%s:%lld: header says m = %lld edges, so %lld adjacency entries are expected; "
                         "found %lld", path, h->line, (long long)h->m, (long long)(2 * h->m), (long long)entries);
    return INCA_OK;
}

int ingest_metis(const char *path, const ingest_opts_t *o, dataset_t *out) {
    dataset_t d;
    dataset_init(&d);
    dataset_init(out);
    ingest_edges_t e = {0};
    ingest_i64vec_t vline = {0};   /* line of each vertex, for the symmetry message; grown per line
                                      read, so a header declaring 10^9 vertices allocates nothing */
    textio_t *t = NULL;
    metis_header_t h;
    int rc = textio_open(path, &t);
    if (rc) return rc;
    if ((rc = metis_read_header(t, path, &h))) goto fail;
    const int64_t m2 = 2 * h.m;
    if ((rc = ingest_edges_reserve(&e, m2 < (1 << 24) ? (m2 > 0 ? m2 : 1) : (1 << 24)))) goto fail;
    if ((rc = metis_read_vertices(t, path, &h, &e, &vline))) goto fail;
    textio_close(&t);
    d.n = h.n;
    if ((rc = ingest_build_graph(&d, h.n, &e, 0, o))) goto fail;
    ingest_edges_free(&e);
    if (!(o->flags & INGEST_SYMMETRIZE) && (rc = metis_check_symmetric(path, &d.adj, vline.v))) goto fail;
    ingest_i64vec_free(&vline);
    snprintf(d.source, sizeof d.source, "metis:%s", path);
    *out = d;
    return INCA_OK;
fail:
    ingest_i64vec_free(&vline);
    textio_close(&t);
    ingest_edges_free(&e);
    dataset_free(&d);
    return rc;
}
