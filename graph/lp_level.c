/* One level of the label-propagation partitioner: neighbourhood gathering, breadth-first order,
 * clustering and contraction (see lp_graph.h). */
#include "graph/lp_graph.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include <string.h>

void lp_graph_free(lp_graph_t *g) {
    if (!g) return;
    inca_free(g->own_rowptr);
    inca_free(g->own_col);
    inca_free(g->own_ew);
    inca_free(g->own_vw);
    memset(g, 0, sizeof *g);
}

int lp_acc_init(lp_acc_t *a, int64_t labels) {
    a->conn = inca_calloc((size_t)labels, sizeof *a->conn);
    a->touched = inca_malloc((size_t)labels * sizeof *a->touched);
    a->nt = 0;
    return a->conn && a->touched ? INCA_OK : INCA_ENOMEM;
}

void lp_acc_free(lp_acc_t *a) {
    inca_free(a->conn);
    inca_free(a->touched);
    memset(a, 0, sizeof *a);
}

int lp_hacc_init(lp_hacc_t *h, int64_t labels) {
    memset(h, 0, sizeof *h);
    int64_t slots = 16;
    while (slots < 2 * labels) slots *= 2;
    h->touched = inca_malloc((size_t)(labels ? labels : 1) * sizeof *h->touched);
    h->w = inca_malloc((size_t)(labels ? labels : 1) * sizeof *h->w);
    h->slot = inca_malloc((size_t)slots * sizeof *h->slot);
    h->slots = slots;
    h->mask = 15;
    if (h->slot) memset(h->slot, 0, 16 * sizeof *h->slot);
    return h->touched && h->w && h->slot ? INCA_OK : INCA_ENOMEM;
}

void lp_hacc_free(lp_hacc_t *h) {
    inca_free(h->touched);
    inca_free(h->w);
    inca_free(h->slot);
    memset(h, 0, sizeof *h);
}

static inline int64_t hacc_home(const lp_hacc_t *h, int32_t label) {
    uint32_t x = (uint32_t)label * 2654435769u;   /* Fibonacci hashing: clusters' ids are dense */
    return (int64_t)((x ^ (x >> 15)) & (uint32_t)h->mask);
}

void lp_hacc_begin(lp_hacc_t *h, int64_t expect) {
    int64_t size = 16;
    while (size < 2 * expect && size < h->slots) size *= 2;
    h->nt = 0;
    h->mask = size - 1;
    memset(h->slot, 0, (size_t)size * sizeof *h->slot);
}

static void hacc_grow(lp_hacc_t *h) {   /* double the table (at most half full), reinsert */
    h->mask = 2 * h->mask + 1;
    memset(h->slot, 0, (size_t)(h->mask + 1) * sizeof *h->slot);
    for (int64_t t = 0; t < h->nt; t++) {
        int64_t s = hacc_home(h, h->touched[t]);
        while (h->slot[s]) s = (s + 1) & h->mask;
        h->slot[s] = (uint64_t)(uint32_t)h->touched[t] << 32 | (uint64_t)(t + 1);
    }
}

void lp_hacc_add(lp_hacc_t *h, int32_t label, int64_t w) {
    int64_t s = hacc_home(h, label);
    for (; h->slot[s]; s = (s + 1) & h->mask)
        if ((int32_t)(h->slot[s] >> 32) == label) { h->w[(h->slot[s] & 0xffffffffu) - 1] += w; return; }
    if (2 * (h->nt + 1) > h->mask + 1 && h->mask + 1 < h->slots) {   /* a new label: grow first, then its slot anew */
        hacc_grow(h);
        for (s = hacc_home(h, label); h->slot[s]; s = (s + 1) & h->mask) {}
    }
    h->slot[s] = (uint64_t)(uint32_t)label << 32 | (uint64_t)(h->nt + 1);
    h->touched[h->nt] = label;
    h->w[h->nt++] = w;
}

int64_t lp_hacc_get(const lp_hacc_t *h, int32_t label) {
    for (int64_t s = hacc_home(h, label);; s = (s + 1) & h->mask) {
        const uint64_t e = h->slot[s];
        if (!e) return 0;
        if ((int32_t)(e >> 32) == label) return h->w[(e & 0xffffffffu) - 1];
    }
}

void lp_hacc_gather(lp_hacc_t *h, const lp_graph_t *g, int64_t v, const int32_t *label) {
    lp_hacc_begin(h, g->rowptr[v + 1] - g->rowptr[v]);
    for (int64_t e = g->rowptr[v]; e < g->rowptr[v + 1]; e++) {
        int64_t u = g->col[e];
        int32_t l = u == v ? -1 : label[u];
        if (l >= 0) lp_hacc_add(h, l, lp_ew(g, e));
    }
}

void lp_acc_gather_parts(lp_acc_t *a, const lp_graph_t *g, int64_t v, const lp_part_t *part) {
    for (int64_t i = 0; i < a->nt; i++) a->conn[a->touched[i]] = 0;
    a->nt = 0;
    for (int64_t e = g->rowptr[v]; e < g->rowptr[v + 1]; e++) {
        int64_t u = g->col[e];
        lp_part_t p = part[u];
        if (u == v || p == LP_UNPLACED) continue;
        if (a->conn[p] == 0) a->touched[a->nt++] = p;
        a->conn[p] += lp_ew(g, e);
    }
}

void lp_bfs_order(const lp_graph_t *g, uint64_t seed, int32_t *order, uint8_t *seen) {
    const int64_t n = g->n;
    rng_t r;
    rng_seed(&r, seed ^ 0x6c70u);
    int64_t head = 0, tail = 0, scan = (int64_t)rng_below(&r, (uint64_t)n);
    memset(seen, 0, (size_t)n);
    for (int64_t done = 0; done < n; done++) {
        if (head == tail) {   /* a new component */
            while (seen[scan]) scan = scan + 1 == n ? 0 : scan + 1;
            seen[scan] = 1;
            order[tail++] = (int32_t)scan;
        }
        int64_t v = order[head++];
        if (head + 8 < tail) {   /* the queue ahead is known: start its rows' misses (see lp_prefetch) */
            __builtin_prefetch(&g->rowptr[order[head + 8]]);
            __builtin_prefetch(&g->col[g->rowptr[order[head + 4]]]);
            const int64_t v1 = order[head];
            for (int64_t e = g->rowptr[v1]; e < g->rowptr[v1 + 1]; e++) __builtin_prefetch(&seen[g->col[e]]);
        }
        for (int64_t e = g->rowptr[v]; e < g->rowptr[v + 1]; e++) {
            int32_t u = g->col[e];
            if (!seen[u]) { seen[u] = 1; order[tail++] = u; }
        }
    }
}

int lp_chunk_order(int64_t n, int64_t chunk, uint64_t seed, int32_t *order) {
    const int64_t nch = (n + chunk - 1) / chunk;
    int32_t *perm = inca_malloc((size_t)(nch ? nch : 1) * sizeof *perm);
    if (!perm) return INCA_ENOMEM;
    rng_t r;
    rng_seed(&r, seed ^ 0x63686bu);
    for (int64_t c = 0; c < nch; c++) perm[c] = (int32_t)c;
    rng_shuffle_i32(&r, perm, nch);
    int64_t at = 0;
    for (int64_t c = 0; c < nch; c++) {
        const int64_t lo = (int64_t)perm[c] * chunk, hi = lo + chunk < n ? lo + chunk : n;
        for (int64_t v = lo; v < hi; v++) order[at + v - lo] = (int32_t)v;
        rng_shuffle_i32(&r, order + at, hi - lo);
        at += hi - lo;
    }
    inca_free(perm);
    return INCA_OK;
}

void lp_cluster_init(const lp_graph_t *g, int32_t *cl, int32_t *cw) {
    for (int64_t v = 0; v < g->n; v++) cl[v] = (int32_t)v, cw[v] = lp_vw(g, v);
}

int64_t lp_cluster_round(const lp_graph_t *g, const int32_t *order, int64_t wmax, int32_t *cl, int32_t *cw, lp_hacc_t *h) {
    int64_t moved = 0;
    for (int64_t i = 0; i < g->n; i++) {
        const int64_t v = order[i];
        const int32_t cur = cl[v], wv = lp_vw(g, v);
        lp_prefetch(g, order, i + 1, cl, sizeof *cl);   /* labels two visits ahead */
        const int64_t v1 = order[i + 1 < g->n ? i + 1 : i];   /* their clusters' weights one ahead */
        for (int64_t e = g->rowptr[v1]; e < g->rowptr[v1 + 1]; e++) __builtin_prefetch(&cw[cl[g->col[e]]]);
        lp_hacc_gather(h, g, v, cl);
        int32_t best = cur;
        int64_t cb = lp_hacc_get(h, cur);
        for (int64_t t = 0; t < h->nt; t++) {   /* ties: the lighter cluster, then the smaller id */
            const int32_t c = h->touched[t];
            const int64_t wc = h->w[t];
            if (c == cur || (int64_t)cw[c] + wv > wmax) continue;
            if (wc > cb || (wc == cb && best != cur && (cw[c] < cw[best] || (cw[c] == cw[best] && c < best))))
                best = c, cb = wc;
        }
        if (best == cur) continue;
        cw[cur] -= wv;
        cw[best] += wv;
        cl[v] = best;
        moved++;
    }
    return moved;
}

/* the coarse node C's neighbourhood: the edges of its members (mem[s..e)) by coarse node, C's own
 * (edges inside the cluster) dropped */
static void acc_cluster(lp_hacc_t *h, const lp_graph_t *g, const int32_t *mem, int64_t s, int64_t e, const int32_t *map,
                        int32_t C) {
    lp_hacc_begin(h, s < e ? g->rowptr[mem[s] + 1] - g->rowptr[mem[s]] : 0);
    for (int64_t i = s; i < e; i++) {
        lp_prefetch(g, mem, i, map, sizeof *map);   /* mem lists all n nodes, cluster by cluster */
        for (int64_t x = g->rowptr[mem[i]]; x < g->rowptr[mem[i] + 1]; x++) {
            int32_t D = map[g->col[x]];
            if (D != C) lp_hacc_add(h, D, lp_ew(g, x));
        }
    }
}

/* map[v] = dense coarse id of cl[v], by first appearance; *nc gets the count */
static int contract_ids(const lp_graph_t *g, const int32_t *cl, int32_t *map, int64_t *nc) {
    int32_t *cid = inca_malloc((size_t)g->n * sizeof *cid);
    if (!cid) return INCA_ENOMEM;
    memset(cid, 0xff, (size_t)g->n * sizeof *cid);
    int64_t k = 0;
    for (int64_t v = 0; v < g->n; v++) {
        if (cid[cl[v]] < 0) cid[cl[v]] = (int32_t)k++;
        map[v] = cid[cl[v]];
    }
    inca_free(cid);
    *nc = k;
    return INCA_OK;
}

/* The member lists of the coarse nodes 0, stride, 2 stride, ... (every one for stride 1), each in
 * node order: those of coarse node s * stride are mem[start[s] .. start[s + 1]). mem has n
 * entries whatever the stride (acc_cluster prefetches up to n ahead), the lists first. */
static int member_lists(const lp_graph_t *g, const int32_t *map, int64_t nc, int64_t stride, int64_t **start_out,
                        int32_t **mem_out) {
    const int64_t ns = (nc + stride - 1) / stride;
    int64_t *start = inca_calloc((size_t)ns + 1, sizeof *start);
    int32_t *mem = inca_calloc((size_t)(g->n ? g->n : 1), sizeof *mem);
    if (!start || !mem) {
        inca_free(start);
        inca_free(mem);
        return INCA_ENOMEM;
    }
    for (int64_t v = 0; v < g->n; v++)
        if (map[v] % stride == 0) start[map[v] / stride + 1]++;
    for (int64_t s = 0; s < ns; s++) start[s + 1] += start[s];
    for (int64_t v = 0; v < g->n; v++)
        if (map[v] % stride == 0) mem[start[map[v] / stride]++] = (int32_t)v;
    for (int64_t s = ns; s > 0; s--) start[s] = start[s - 1];
    start[0] = 0;
    *start_out = start, *mem_out = mem;
    return INCA_OK;
}

/* the coarse rows: a count pass (c->own_rowptr) and, when it fits, a fill pass */
static int contract_rows(const lp_graph_t *g, const int32_t *map, const int64_t *start, const int32_t *mem,
                         int64_t max_nnz, lp_graph_t *c, lp_hacc_t *h, int *made) {
    c->own_rowptr[0] = 0;
    for (int64_t C = 0; C < c->n; C++) {   /* stops as soon as it is too many */
        acc_cluster(h, g, mem, start[C], start[C + 1], map, (int32_t)C);
        c->own_rowptr[C + 1] = c->own_rowptr[C] + h->nt;
        if (c->own_rowptr[C + 1] > max_nnz) return INCA_OK;
    }
    c->nnz = c->own_rowptr[c->n];
    c->own_col = inca_malloc((size_t)(c->nnz ? c->nnz : 1) * sizeof *c->own_col);
    c->own_ew = inca_malloc((size_t)(c->nnz ? c->nnz : 1) * sizeof *c->own_ew);
    c->own_vw = inca_calloc((size_t)c->n, sizeof *c->own_vw);
    if (!c->own_col || !c->own_ew || !c->own_vw) return INCA_ENOMEM;
    for (int64_t C = 0; C < c->n; C++) {
        acc_cluster(h, g, mem, start[C], start[C + 1], map, (int32_t)C);
        for (int64_t t = 0; t < h->nt; t++) {
            int64_t x = c->own_rowptr[C] + t;
            c->own_col[x] = h->touched[t];
            const int64_t wsum = h->w[t];   /* METIS's weights are 32-bit too */
            c->own_ew[x] = wsum > INT32_MAX ? INT32_MAX : (int32_t)wsum;
        }
        for (int64_t i = start[C]; i < start[C + 1]; i++) c->own_vw[C] += lp_vw(g, mem[i]);
    }
    c->rowptr = c->own_rowptr, c->col = c->own_col, c->ew = c->own_ew, c->vw = c->own_vw;
    c->total = g->total;
    *made = 1;
    return INCA_OK;
}

int lp_contract(const lp_graph_t *g, const int32_t *cl, int64_t max_nnz, lp_graph_t *c, int32_t *map, lp_hacc_t *h,
                int *made) {
    memset(c, 0, sizeof *c);
    *made = 0;
    int64_t nc = 0, *start = NULL;
    int32_t *mem = NULL;
    int rc = contract_ids(g, cl, map, &nc);
    if (rc != INCA_OK) return rc;
    c->own_rowptr = inca_malloc(((size_t)nc + 1) * sizeof *c->own_rowptr);
    if (!c->own_rowptr || (rc = member_lists(g, map, nc, 1, &start, &mem)) != INCA_OK) {
        rc = INCA_ENOMEM;
        goto done;
    }
    c->n = nc;
    rc = contract_rows(g, map, start, mem, max_nnz, c, h, made);
done:
    if (rc != INCA_OK || !*made) lp_graph_free(c);
    inca_free(start);
    inca_free(mem);
    return rc;
}

int lp_contract_estimate(const lp_graph_t *g, const int32_t *cl, int64_t stride, int32_t *map, lp_hacc_t *h, int64_t *est) {
    int64_t nc = 0;
    *est = 0;
    int rc = contract_ids(g, cl, map, &nc);
    if (rc != INCA_OK) return rc;
    const int64_t ns = (nc + stride - 1) / stride;
    int64_t *start = NULL, sum = 0;
    int32_t *mem = NULL;
    if ((rc = member_lists(g, map, nc, stride, &start, &mem)) != INCA_OK) return rc;
    for (int64_t s = 0; s < ns; s++) {
        acc_cluster(h, g, mem, start[s], start[s + 1], map, (int32_t)(s * stride));
        sum += h->nt;
    }
    *est = ns ? (int64_t)((double)sum * (double)nc / (double)ns) : 0;
    inca_free(start);
    inca_free(mem);
    return rc;
}
