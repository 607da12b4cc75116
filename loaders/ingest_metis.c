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

int ingest_metis(const char *path, const ingest_opts_t *o, dataset_t *out) {
    dataset_t d;
    dataset_init(&d);
    dataset_init(out);
    ingest_edges_t e = {0};
    ingest_i64vec_t vline = {0};   /* line of each vertex, for the symmetry message; grown per line
                                      read, so a header declaring 10^9 vertices allocates nothing */
    textio_t *t = NULL;
    int rc = textio_open(path, &t);
    if (rc) return rc;
    char *line;
    int r;
    long long hline = 0;
    /* header */
    for (;;) {
        r = textio_next(t, &line, NULL);
        if (r < 0) { rc = r; goto fail; }
        if (r == 0) {
            rc = inca_fail(INCA_EINVAL, "%s:%lld: expected a header 'n m [fmt [ncon]]', found the end of the file",
                           path, (long long)textio_lineno(t) + 1);
            goto fail;
        }
        if (!is_comment(line) && !textio_at_end(line)) break;
    }
    hline = (long long)textio_lineno(t);
    const char *p = line;
    int64_t n, m, fmt = 0, ncon = 0;
    if (!textio_parse_i64(&p, &n) || !textio_parse_i64(&p, &m)) goto bad_header;
    if (!textio_at_end(p) && !textio_parse_i64(&p, &fmt)) goto bad_header;
    if (!textio_at_end(p) && !textio_parse_i64(&p, &ncon)) goto bad_header;
    if (!textio_at_end(p)) goto bad_header;
    /* before vline (n) and the edge list (2m) are allocated: a vertex line takes at least one
     * byte ("\n"), an adjacency entry at least two ("1 ") */
    char where[INGEST_PATH_MAX + 32];
    snprintf(where, sizeof where, "%s:%lld", path, hline);
    if (n > 0 && (rc = ingest_check_declared(where, path, n, "rows (vertex lines)", 1, 0))) goto fail;
    if (m > 0 && (rc = ingest_check_declared(where, path, m > INT64_MAX / 2 ? INT64_MAX : 2 * m,
                                             "adjacency entries (2m)", 2, 0))) goto fail;
    if (n <= 0 || n > INGEST_MAX_ID || m < 0 || m > INT64_MAX / 4) {
        rc = inca_fail(INCA_EINVAL, "%s:%lld: expected n in 1..%lld and m >= 0, got n=%lld m=%lld", path, hline,
                       (long long)INGEST_MAX_ID, (long long)n, (long long)m);
        goto fail;
    }
    int has_size = (int)(fmt / 100), has_vw = (int)(fmt / 10 % 10), has_ew = (int)(fmt % 10);
    if (fmt < 0 || has_size > 1 || has_vw > 1 || has_ew > 1) {
        rc = inca_fail(INCA_EINVAL, "%s:%lld: expected fmt of three 0/1 digits (0, 1, 10, 11, 100, ...), got %lld",
                       path, hline, (long long)fmt);
        goto fail;
    }
    if (has_vw && ncon == 0) ncon = 1;
    if (!has_vw) ncon = 0;
    if (ncon < 0 || ncon > 1024) {
        rc = inca_fail(INCA_EINVAL, "%s:%lld: expected ncon in 1..1024, got %lld", path, hline, (long long)ncon);
        goto fail;
    }
    if ((rc = ingest_edges_reserve(&e, 2 * m < (1 << 24) ? (2 * m > 0 ? 2 * m : 1) : (1 << 24)))) goto fail;
    int64_t v = 0;
    int64_t entries = 0;
    for (;;) {
        r = textio_next(t, &line, NULL);
        if (r < 0) { rc = r; goto fail; }
        if (r == 0) break;
        if (is_comment(line)) continue;
        long long ln = (long long)textio_lineno(t);
        if (v >= n) {
            if (textio_at_end(line)) continue;
            rc = inca_fail(INCA_EINVAL, "%s:%lld: more vertex lines than n = %lld in the header (line %lld)",
                           path, ln, (long long)n, hline);
            goto fail;
        }
        if ((rc = ingest_i64vec_push(&vline, ln))) goto fail;
        p = line;
        int64_t w;
        for (int64_t k = 0; k < has_size + ncon; k++)
            if (!textio_parse_i64(&p, &w)) {
                rc = inca_fail(INCA_EINVAL, "%s:%lld: expected %lld vertex size/weight integer(s) first (fmt %lld)",
                               path, ln, (long long)(has_size + ncon), (long long)fmt);
                goto fail;
            }
        while (!textio_at_end(p)) {
            int64_t u;
            if (!textio_parse_i64(&p, &u) || (*p && *p != ' ' && *p != '\t')) {
                rc = inca_fail(INCA_EINVAL, "%s:%lld: expected a neighbour id (integer), got '%.40s'", path, ln,
                               textio_skip_blank(p));
                goto fail;
            }
            if (u < 1 || u > n) {
                rc = inca_fail(INCA_EINVAL, "%s:%lld: neighbour %lld out of range: expected 1..%lld", path, ln,
                               (long long)u, (long long)n);
                goto fail;
            }
            if (has_ew && (!textio_parse_i64(&p, &w) || (*p && *p != ' ' && *p != '\t'))) {
                rc = inca_fail(INCA_EINVAL, "%s:%lld: expected an edge weight (integer) after neighbour %lld (fmt %lld)",
                               path, ln, (long long)u, (long long)fmt);
                goto fail;
            }
            if ((rc = ingest_edges_push(&e, v, u - 1))) goto fail;
            entries++;
        }
        v++;
    }
    if (v < n) {
        rc = inca_fail(INCA_EINVAL, "%s:%lld: expected %lld vertex lines (header, line %lld), found only %lld",
                       path, (long long)textio_lineno(t) + 1, (long long)n, hline, (long long)v);
        goto fail;
    }
    if (entries != 2 * m) {
        rc = inca_fail(INCA_EINVAL, "%s:%lld: header says m = %lld edges, so %lld adjacency entries are expected; "
                       "found %lld", path, hline, (long long)m, (long long)(2 * m), (long long)entries);
        goto fail;
    }
    textio_close(&t);
    d.n = n;
    if ((rc = ingest_build_graph(&d, n, &e, 0, o))) goto fail;
    ingest_edges_free(&e);
    if (!(o->flags & INGEST_SYMMETRIZE) && (rc = metis_check_symmetric(path, &d.adj, vline.v))) goto fail;
    ingest_i64vec_free(&vline);
    snprintf(d.source, sizeof d.source, "metis:%s", path);
    *out = d;
    return INCA_OK;
bad_header:
    rc = inca_fail(INCA_EINVAL, "%s:%lld: expected a header 'n m [fmt [ncon]]' of integers, got '%.40s'", path,
                   hline, line);
fail:
    ingest_i64vec_free(&vline);
    textio_close(&t);
    ingest_edges_free(&e);
    dataset_free(&d);
    return rc;
}
