/* What the synthetic generators share: default and checked options, hash-based Gaussian
 * features, and the edge-homophily measure. Tested in tests/test_gen.c. */
#include "graph/gen_impl.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/split.h"
#include <math.h>
#include <string.h>

void gen_opts_default(gen_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->homophily = 0.8;
    o->noise = 1.0;
    o->mean_scale = 1.0;
    o->split[0] = 0.6;
    o->split[1] = 0.2;
    o->split[2] = 0.2;
}

/* The CSBM's edge probabilities and what merging repeated pairs leaves of its degree and
 * homophily: here, beside the option check that refuses what cannot be reached (gen_csbm.c uses
 * them too). */
void gen_csbm_edge_probs(const gen_opts_t *o, double *p_in, double *p_out) {
    int64_t m = 0;
    if (gen_edge_count(o, &m) != INCA_OK) m = 0;
    const int64_t n = o->nodes, C = o->classes, q = n / C, big = n % C;   /* big classes: q+1 */
    double intra = (double)big * (double)(q + 1) * (double)q / 2.0 +
                   (double)(C - big) * (double)q * (double)(q - 1) / 2.0;
    double all = (double)n * (double)(n - 1) / 2.0, inter = all - intra;
    *p_in = intra > 0 ? o->homophily * (double)m / intra : 0.0;
    *p_out = inter > 0 ? (1.0 - o->homophily) * (double)m / inter : 0.0;
}

void gen_csbm_expected(const gen_opts_t *o, double *degree, double *homophily) {
    const int64_t n = o->nodes, C = o->classes, q = n / C, big = n % C;
    const double intra = (double)big * (double)(q + 1) * (double)q / 2.0 +
                         (double)(C - big) * (double)q * (double)(q - 1) / 2.0;
    const double inter = (double)n * (double)(n - 1) / 2.0 - intra;
    double p_in, p_out;
    gen_csbm_edge_probs(o, &p_in, &p_out);
    /* a pair sampled k ~ Poisson(p) times is stored once when k >= 1 */
    const double e_in = intra * -expm1(-p_in), e_out = inter * -expm1(-p_out);
    *degree = n > 0 ? 2.0 * (e_in + e_out) / (double)n : 0.0;
    *homophily = e_in + e_out > 0 ? e_in / (e_in + e_out) : o->homophily;
}

/* How far a CSBM's realised edge homophily may drift from --homophily before the request is
 * refused as unreachable (the drift of graphs big enough for it is well below 0.01). */
#define GEN_HOMOPHILY_TOL 0.05

/* A CSBM too small for its degree: same-class pairs (or cross-class ones) are sampled more than
 * once and merge, so the graph loses edges on one side more than the other and its homophily
 * drifts towards the fraction of same-class pairs. Refused, naming the largest --avg-degree whose
 * expected homophily stays within the tolerance (the drift grows with the degree: bisection). */
static int csbm_saturation_check(const gen_opts_t *o) {
    double deg, hom;
    gen_csbm_expected(o, &deg, &hom);
    if (!(fabs(hom - o->homophily) > GEN_HOMOPHILY_TOL)) return INCA_OK;
    gen_opts_t t = *o;
    double lo = 0.0, hi = o->avg_degree;
    for (int it = 0; it < 60; it++) {
        t.avg_degree = 0.5 * (lo + hi);
        double d2, h2;
        gen_csbm_expected(&t, &d2, &h2);
        if (fabs(h2 - o->homophily) > GEN_HOMOPHILY_TOL) hi = t.avg_degree;
        else lo = t.avg_degree;
    }
    return inca_fail(INCA_EINVAL, "--avg-degree %g with --homophily %g is more than %lld nodes in %d classes can hold: "
                     "repeated pairs would merge into an average degree of about %.1f and edge homophily %.2f (more "
                     "than %.2f off); use --avg-degree at most %.1f, more --nodes or fewer --classes",
                     o->avg_degree, o->homophily, (long long)o->nodes, o->classes, deg, hom, GEN_HOMOPHILY_TOL,
                     floor(lo * 10.0) / 10.0);
}

int gen_opts_check(const gen_opts_t *o, const char *kind) {
    int csbm = strcmp(kind, "csbm") == 0;
    if (!csbm && strcmp(kind, "rmat") != 0)
        return inca_fail(INCA_EINVAL, "--kind '%s' is unknown, expected rmat or csbm", kind);
    if (o->nodes < 1 || o->nodes > INT32_MAX)
        return inca_fail(INCA_EINVAL, "--nodes is %lld, expected 1..%d (32-bit column ids)",
                         (long long)o->nodes, INT32_MAX);
    if (!(o->avg_degree >= 0.0) || !isfinite(o->avg_degree))
        return inca_fail(INCA_EINVAL, "--avg-degree is %g, expected a finite number >= 0", o->avg_degree);
    /* a simple graph (no duplicate edges, no self-loops) gives a node at most N-1 neighbours:
     * beyond that the generator would sample duplicates that merge, and silently return less */
    if (o->avg_degree > (double)(o->nodes - 1))
        return inca_fail(INCA_EINVAL, "--avg-degree %g: at most N-1 = %lld for %lld nodes (no duplicate edges or "
                         "self-loops)", o->avg_degree, (long long)(o->nodes - 1), (long long)o->nodes);
    if (o->features < 0 || (double)o->features * (double)o->nodes > 0x1p60)
        return inca_fail(INCA_EINVAL, "--features is %lld, expected >= 0 and nodes x features < 2^60",
                         (long long)o->features);
    if (!(o->noise >= 0.0) || !isfinite(o->noise))
        return inca_fail(INCA_EINVAL, "--noise is %g, expected a finite number >= 0", o->noise);
    if (o->classes < 0)
        return inca_fail(INCA_EINVAL, "--classes is %d, expected >= 0", o->classes);
    if (csbm) {
        if (o->classes < 2)
            return inca_fail(INCA_EINVAL, "--classes is %d, expected at least 2 for --kind csbm", o->classes);
        if (o->nodes < 2 * (int64_t)o->classes)
            return inca_fail(INCA_EINVAL, "--nodes %lld is too small for %d classes (--kind csbm needs at least 2 per class)",
                             (long long)o->nodes, o->classes);
        if (!(o->homophily >= 0.0 && o->homophily <= 1.0))
            return inca_fail(INCA_EINVAL, "--homophily is %g, expected a fraction in [0,1]", o->homophily);
        if (!(o->mean_scale >= 0.0) || !isfinite(o->mean_scale))
            return inca_fail(INCA_EINVAL, "--mean-scale is %g, expected a finite number >= 0", o->mean_scale);
    }
    double sum = 0.0;
    for (int k = 0; k < 3; k++) {
        if (!(o->split[k] >= 0.0 && o->split[k] <= 1.0))
            return inca_fail(INCA_EINVAL, "--split: fraction %d is %g, expected [0,1]", k + 1, o->split[k]);
        sum += o->split[k];
    }
    if (sum > 1.0 + 1e-9)
        return inca_fail(INCA_EINVAL, "--split: fractions sum to %g, expected at most 1", sum);
    int64_t m;
    int rc = gen_edge_count(o, &m);
    if (rc == INCA_OK && csbm) rc = csbm_saturation_check(o);
    return rc;
}

int gen_edge_count(const gen_opts_t *o, int64_t *m) {
    double e = floor((double)o->nodes * o->avg_degree / 2.0 + 0.5);
    if (e > 4.0e18)
        return inca_fail(INCA_EINVAL, "--nodes %lld x --avg-degree %g is too many edges",
                         (long long)o->nodes, o->avg_degree);
    *m = (int64_t)e;
    return INCA_OK;
}

void gen_perm_init(gen_perm_t *p, int64_t n, uint64_t seed) {
    int bits = 0;
    while (((int64_t)1 << bits) < n) bits++;
    p->n = n;
    p->shift = (bits + 1) / 2 > 0 ? (bits + 1) / 2 : 1;
    p->mask = bits ? (~(uint64_t)0 >> (64 - bits)) : 0;
    for (int k = 0; k < 3; k++) {
        p->mul[k] = rng_hash64(seed, GEN_STREAM_PERM, (uint64_t)(2 * k)) | 1u;
        p->add[k] = rng_hash64(seed, GEN_STREAM_PERM, (uint64_t)(2 * k + 1));
    }
}

double gen_normal(uint64_t seed, uint64_t stream, uint64_t index) {
    uint64_t h = rng_hash64(seed, stream, index);
    double u1 = ((double)(h >> 32) + 0.5) * (1.0 / 4294967296.0);   /* (0,1): log is finite */
    double u2 = (double)(h & 0xffffffffull) * (1.0 / 4294967296.0);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void gen_fill_features(float *x, int64_t n, int64_t f, uint64_t seed, double sigma,
                       const float *mean, const int32_t *y) {
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float *row = x + i * f;
        const float *mu = mean ? mean + (int64_t)y[i] * f : NULL;
        for (int64_t j = 0; j < f; j++) {
            double v = sigma * gen_normal(seed, GEN_STREAM_X, (uint64_t)(i * f + j));
            row[j] = (float)(mu ? (double)mu[j] + v : v);
        }
    }
}

double gen_edge_homophily(const csr_t *g, const int32_t *y) {
    int64_t same = 0, total = 0;
    if (!g || !g->rowptr || !y) return NAN;
    for (int64_t u = 0; u < g->n_rows; u++) {
        if (y[u] < 0) continue;
        for (int64_t e = g->rowptr[u]; e < g->rowptr[u + 1]; e++) {
            int32_t v = g->col[e];
            if (y[v] < 0) continue;
            total++;
            same += y[v] == y[u];
        }
    }
    return total ? (double)same / (double)total : NAN;
}

int gen_finish_graph(dataset_t *out, const gen_opts_t *o, int64_t **src, int64_t **dst, int64_t m,
                     gen_stats_t *st, double t0) {
    double t1 = inca_now();
    st->sampled_edges = m;
    st->edges_s = t1 - t0;
    int rc = csr_from_edges(&out->adj, o->nodes, *src, *dst, m, CSR_SYMMETRIZE | CSR_DROP_SELF_LOOPS);
    INCA_FREE(*src);
    INCA_FREE(*dst);
    if (rc != INCA_OK) return rc;
    out->n = o->nodes;
    out->f = o->features;
    out->c = o->classes;
    st->csr_s = inca_now() - t1;
    return INCA_OK;
}

int gen_finish_split(dataset_t *out, const gen_opts_t *o) {
    if (!out->y || o->split[0] + o->split[1] + o->split[2] <= 0.0) return INCA_OK;
    return split_random(out, o->split, rng_hash64(o->seed, GEN_STREAM_SPLIT, 0));
}
