/* METIS_PartGraphKway, wrapped once (see metis_kway.h). */
#include "graph/metis_kway.h"
#include "core/alloc.h"
#include "core/status.h"
#include <metis.h>
#include <string.h>

/* METIS's arrays without self-loops: *xadj, *adj and (ew given) *wgt, all freed by the caller */
static int metis_arrays(int64_t n, const int64_t *rowptr, const int32_t *col, const int32_t *ew, idx_t **xadj,
                        idx_t **adj, idx_t **wgt) {
    const int64_t nnz = rowptr[n] - rowptr[0];
    *xadj = inca_malloc(sizeof **xadj * (size_t)(n + 1));
    *adj = inca_malloc(sizeof **adj * (size_t)(nnz ? nnz : 1));
    *wgt = ew ? inca_malloc(sizeof **wgt * (size_t)(nnz ? nnz : 1)) : NULL;
    if (!*xadj || !*adj || (ew && !*wgt)) return INCA_ENOMEM;
    int64_t m = 0;
    (*xadj)[0] = 0;
    for (int64_t u = 0; u < n; u++) {
        for (int64_t e = rowptr[u]; e < rowptr[u + 1]; e++) {
            if (col[e] == u) continue;
            if (ew) (*wgt)[m] = ew[e];
            (*adj)[m++] = col[e];
        }
        (*xadj)[u + 1] = (idx_t)m;
    }
    return INCA_OK;
}

int metis_kway(int64_t n, const int64_t *rowptr, const int32_t *col, const int32_t *ew, const int32_t *vw,
               int64_t k, uint64_t seed, int32_t *part) {
    if (n >= INT32_MAX || rowptr[n] - rowptr[0] >= INT32_MAX)
        return inca_fail(INCA_EINVAL, "graph too large for METIS's 32-bit idx_t (%lld nodes, %lld entries); use --method lp",
                         (long long)n, (long long)(rowptr[n] - rowptr[0]));
    if (k < 1 || k > n) return inca_fail(INCA_EINVAL, "metis_kway: %lld parts for %lld nodes", (long long)k, (long long)n);
    if (k == 1) { memset(part, 0, sizeof *part * (size_t)n); return INCA_OK; }
    idx_t *xadj = NULL, *adjncy = NULL, *wgt = NULL, *vwgt = NULL, *pv = NULL;
    int rc = metis_arrays(n, rowptr, col, ew, &xadj, &adjncy, &wgt);
    if (rc == INCA_OK && vw && !(vwgt = inca_malloc(sizeof *vwgt * (size_t)n))) rc = INCA_ENOMEM;
    if (rc == INCA_OK && !(pv = inca_malloc(sizeof *pv * (size_t)n))) rc = INCA_ENOMEM;
    if (rc != INCA_OK) goto done;
    for (int64_t v = 0; vw && v < n; v++) vwgt[v] = vw[v];
    idx_t nv = (idx_t)n, ncon = 1, np = (idx_t)k, objval = 0, opts[METIS_NOPTIONS];
    METIS_SetDefaultOptions(opts);
    opts[METIS_OPTION_SEED] = (idx_t)(seed & 0x7fffffff);
    opts[METIS_OPTION_NUMBERING] = 0;
    int mr = METIS_PartGraphKway(&nv, &ncon, xadj, adjncy, vwgt, NULL, wgt, &np, NULL, NULL, opts, &objval, pv);
    if (mr != METIS_OK) {
        rc = inca_fail(mr == METIS_ERROR_MEMORY ? INCA_ENOMEM : INCA_ERR,
                       "METIS_PartGraphKway failed (code %d: %s) for %lld nodes into %lld parts", mr,
                       mr == METIS_ERROR_INPUT ? "input error" : mr == METIS_ERROR_MEMORY ? "out of memory" : "error",
                       (long long)n, (long long)k);
        goto done;
    }
    for (int64_t u = 0; u < n; u++) {
        if (pv[u] < 0 || pv[u] >= np) { rc = inca_fail(INCA_ERR, "METIS returned part %d for node %lld", (int)pv[u], (long long)u); goto done; }
        part[u] = (int32_t)pv[u];
    }
done:
    inca_free(xadj);
    inca_free(adjncy);
    inca_free(wgt);
    inca_free(vwgt);
    inca_free(pv);
    return rc;
}
