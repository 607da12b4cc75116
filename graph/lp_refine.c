/* Assigning parts on one level of the label-propagation partitioner: Fennel streaming, rounds of
 * size-constrained label propagation, and a rebalancing pass (see lp_graph.h).
 *
 * Fennel (Tsourakakis et al., WSDM 2014): a node goes to the part p maximising
 * conn(v, p) - alpha ((w(p) + w(v))^1.5 - w(p)^1.5), alpha = sqrt(k) m / n^1.5, among its placed
 * neighbours' parts with room and the lightest part. Every choice breaks ties by weight and then
 * part id, so the result depends on the order (the seed) only. */
#include "graph/lp_graph.h"
#include "graph/partition_progress.h"
#include "core/alloc.h"
#include "core/status.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* (conn, weight, id) of a candidate: more edge weight first, then lighter, then smaller id */
static int lp_better(int64_t c, int64_t wp, int64_t p, int64_t cb, int64_t wb, int64_t b) {
    return c > cb || (c == cb && (wp < wb || (wp == wb && p < b)));
}

/* A min-heap of parts by (weight, id): the lightest part in O(1), a weight increase in O(log k). */
typedef struct lp_heap {
    int32_t *h, *pos;   /* h[i] = the part at slot i; pos[p] = the slot of p */
    const int64_t *w;
    int64_t k;
} lp_heap_t;

static int heap_less(const lp_heap_t *hp, int32_t a, int32_t b) {
    return hp->w[a] < hp->w[b] || (hp->w[a] == hp->w[b] && a < b);
}

static void heap_sift_down(lp_heap_t *hp, int32_t p) {   /* w[p] has just grown */
    int64_t i = hp->pos[p];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= hp->k) break;
        if (c + 1 < hp->k && heap_less(hp, hp->h[c + 1], hp->h[c])) c++;
        if (!heap_less(hp, hp->h[c], p)) break;
        hp->h[i] = hp->h[c];
        hp->pos[hp->h[i]] = (int32_t)i;
        i = c;
    }
    hp->h[i] = p;
    hp->pos[p] = (int32_t)i;
}

/* x sqrt(x) for x^1.5: pow() took half of Fennel's time (1M csbm, 256 parts: 1.1 -> 0.55 s) */
static double fennel_cost(double alpha, int64_t w, int32_t wv) {
    const double a = (double)(w + wv), b = (double)w;
    return alpha * (a * sqrt(a) - b * sqrt(b));
}

int lp_stream(const lp_graph_t *g, const int32_t *order, int64_t k, int64_t cap, lp_part_t *part, int64_t *w, lp_acc_t *a) {
    lp_heap_t hp = {inca_malloc((size_t)k * sizeof(int32_t)), inca_malloc((size_t)k * sizeof(int32_t)), w, k};
    if (!hp.h || !hp.pos) { inca_free(hp.h); inca_free(hp.pos); return INCA_ENOMEM; }
    for (int64_t p = 0; p < k; p++) hp.h[p] = hp.pos[p] = (int32_t)p, w[p] = 0;
    int64_t m2 = 0;
    for (int64_t e = 0; e < g->nnz; e++) m2 += lp_ew(g, e);
    const double alpha = sqrt((double)k) * ((double)m2 / 2) / pow((double)g->total, 1.5);
    for (int64_t i = 0; i < g->n; i++) {
        const int64_t v = order[i];
        const int32_t wv = lp_vw(g, v);
        lp_prefetch(g, order, i, part, sizeof *part);
        lp_acc_gather_parts(a, g, v, part);
        int32_t best = hp.h[0];   /* the lightest part */
        double best_s = -fennel_cost(alpha, w[best], wv);
        for (int64_t t = 0; t < a->nt; t++) {
            int32_t p = a->touched[t];
            if (w[p] + wv > cap) continue;
            double s = (double)a->conn[p] - fennel_cost(alpha, w[p], wv);
            if (s > best_s || (s == best_s && (w[p] < w[best] || (w[p] == w[best] && p < best)))) best = p, best_s = s;
        }
        part[v] = (lp_part_t)best;
        w[best] += wv;
        heap_sift_down(&hp, best);
    }
    inca_free(hp.h);
    inca_free(hp.pos);
    return INCA_OK;
}

/* one round in `order` over the active nodes: the nodes moved; *gain += the edge weight uncut.
 * A visited node goes inactive; a move wakes the mover's neighbours (later in this round or in
 * the next), so a round after the first visits only where the parts changed nearby. */
static int64_t refine_round(const lp_graph_t *g, const int32_t *order, int64_t cap, lp_part_t *part, int64_t *w, lp_acc_t *a,
                            uint8_t *active, int64_t *gain) {
    int64_t moved = 0;
    for (int64_t i = 0; i < g->n; i++) {
        const int64_t v = order[i];
        if (!active[v]) continue;
        active[v] = 0;
        const int32_t cur = part[v], wv = lp_vw(g, v);
        lp_prefetch(g, order, i, part, sizeof *part);
        lp_acc_gather_parts(a, g, v, part);
        /* staying competes as w(cur) - w(v) with id -1: a tie moves only when the pair's heavier
         * side shrinks, so equal parts never swap a node back and forth */
        int64_t best = -1, wb = w[cur] - wv, cb = a->conn[cur];
        for (int64_t t = 0; t < a->nt; t++) {
            int32_t p = a->touched[t];
            if (p == cur || w[p] + wv > cap || !lp_better(a->conn[p], w[p], p, cb, wb, best)) continue;
            best = p, wb = w[p], cb = a->conn[p];
        }
        if (best < 0) continue;
        *gain += a->conn[best] - a->conn[cur];
        w[cur] -= wv;
        w[best] += wv;
        part[v] = (lp_part_t)best;
        moved++;
        for (int64_t e = g->rowptr[v]; e < g->rowptr[v + 1]; e++) active[g->col[e]] = 1;
    }
    return moved;
}

int lp_refine(const lp_graph_t *g, const int32_t *order, int64_t cap, int max_rounds, lp_part_t *part, int64_t *w,
              lp_acc_t *a, uint8_t *active, int64_t *gain, int64_t *moves, const partition_progress_t *pg) {
    int r = 0;
    memset(active, 1, (size_t)g->n);
    while (r < max_rounds) {
        if (pg && pg->fn) pg->fn(pg->ctx, "refining", r, max_rounds);
        int64_t moved = refine_round(g, order, cap, part, w, a, active, gain);
        *moves += moved;
        r++;
        if (moved * 1000 < g->n) break;
    }
    return r;
}

/* a node leaving an overloaded part: the edge weight it cuts by moving to q */
typedef struct lp_cand {
    int64_t loss;
    int32_t v, q;
} lp_cand_t;

static int cand_cmp(const void *x, const void *y) {
    const lp_cand_t *a = x, *b = y;
    if (a->loss != b->loss) return a->loss < b->loss ? -1 : 1;
    return (a->v > b->v) - (a->v < b->v);
}

/* the candidates of every node in a part over cap: its best part with room, else the lightest */
static int64_t rebalance_cands(const lp_graph_t *g, int64_t k, int64_t cap, const lp_part_t *part, const int64_t *w,
                               lp_acc_t *a, lp_cand_t *c) {
    int32_t light = 0;
    for (int64_t p = 1; p < k; p++)
        if (w[p] < w[light]) light = (int32_t)p;
    int64_t nc = 0;
    for (int64_t v = 0; v < g->n; v++) {
        const int32_t cur = part[v], wv = lp_vw(g, v);
        if (w[cur] <= cap) continue;
        lp_acc_gather_parts(a, g, v, part);
        int64_t q = light, cq = a->conn[light];
        for (int64_t t = 0; t < a->nt; t++) {
            int32_t p = a->touched[t];
            if (p != cur && w[p] + wv <= cap && lp_better(a->conn[p], w[p], p, cq, w[q], q)) q = p, cq = a->conn[p];
        }
        if (q == cur) continue;
        c[nc++] = (lp_cand_t){a->conn[cur] - cq, (int32_t)v, (int32_t)q};
    }
    qsort(c, (size_t)nc, sizeof *c, cand_cmp);
    return nc;
}

int lp_rebalance(const lp_graph_t *g, int64_t k, int64_t cap, lp_part_t *part, int64_t *w, lp_acc_t *a, int64_t *moves) {
    lp_cand_t *c = NULL;
    int rc = INCA_OK;
    for (int pass = 0;; pass++) {
        int over = 0;
        for (int64_t p = 0; p < k; p++) over |= w[p] > cap;
        if (!over) break;
        if (!c && !(c = inca_malloc((size_t)g->n * sizeof *c))) { rc = INCA_ENOMEM; break; }
        int64_t nc = rebalance_cands(g, k, cap, part, w, a, c), moved = 0;
        for (int64_t i = 0; i < nc; i++) {
            const int32_t v = c[i].v, cur = part[v], q = c[i].q, wv = lp_vw(g, v);
            if (w[cur] <= cap || w[q] + wv > cap) continue;
            w[cur] -= wv;
            w[q] += wv;
            part[v] = (lp_part_t)q;
            moved++;
        }
        *moves += moved;
        if (!moved) {
            rc = inca_fail(INCA_ERR, "label propagation: no node fits another part (parts of at most %lld)", (long long)cap);
            break;
        }
    }
    inca_free(c);
    return rc;
}
