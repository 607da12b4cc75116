/* inca bench spmm: CSR SpMM throughput (GB/s) on an R-MAT graph larger than the last-level
 * cache, with node ids randomly permuted and again after METIS reordering, next to two bounds
 * measured in the same process: a threaded STREAM-style copy and a random gather of rows of the
 * same width. Prints one JSON line per (ordering, F) and a summary line. Not a test: speed is
 * never asserted; the kernels' correctness is in test_kernels.c. */
#include "bench/bench.h"
#include "bench/bench_progress.h"
#include "core/args.h"
#include "core/json.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/gen.h"
#include "graph/partition.h"
#include "kernels/kernels.h"
#include "bench/bench_spmm_dev.h"
#include "bench/floor.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_MAX_F 16
/* Copy buffers: the size of the largest X (n x max F), clamped to 64..256 MiB each, so the copy
 * always streams from memory (2x a 32 MiB L3 at least) without wasting memory on small runs. */
#define BENCH_COPY_MIN ((int64_t)16 << 20)
#define BENCH_COPY_MAX ((int64_t)64 << 20)

static const char *const spmm_bytes_formula =
    "nnz*(4 col + 4 val + 4F gathered X row) + n_rows*(8F Y write incl. write-allocate + 8 rowptr)";
static const char *const gather_bytes_formula = "rows*(4F gathered + 4 row id)";
static const char *const copy_bytes_formula = "2*bytes copied (STREAM convention)";

typedef struct line {
    double spmm_s, spmm_best_s;          /* median and best of reps */
    double spmm_gbs, spmm_best_gbs;
    double gather_gbs, gather_best_gbs;  /* uniform random row ids */
    double pattern_gbs;                  /* gathering the graph's own column sequence */
    double copy_gbs;
} line_t;

/* The (ordering, F) JSON line on stdout: out's figures over T threads and reps repetitions. */
static int spmm_json(const char *ordering, const csr_t *a, int64_t f, int T, int reps, const line_t *out, double sink) {
    json_t *j = NULL;
    int rc = json_new(&j);
    if (rc) return rc;
    json_str(j, "bench", "spmm");
    json_str(j, "ordering", ordering);
    json_int(j, "features", f);
    json_int(j, "nodes", a->n_rows);
    json_int(j, "nnz", a->nnz);
    json_int(j, "threads", T);
    json_int(j, "reps", reps);
    json_num(j, "spmm_s", out->spmm_s);
    json_num(j, "spmm_best_s", out->spmm_best_s);
    json_num(j, "spmm_gbs", out->spmm_gbs);
    json_num(j, "spmm_best_gbs", out->spmm_best_gbs);
    json_num(j, "gather_gbs", out->gather_gbs);
    json_num(j, "gather_best_gbs", out->gather_best_gbs);
    json_num(j, "gather_pattern_gbs", out->pattern_gbs);
    json_num(j, "copy_gbs", out->copy_gbs);
    json_num(j, "spmm_over_gather", out->spmm_gbs / out->gather_gbs);
    json_num(j, "spmm_over_gather_best", out->spmm_best_gbs / out->gather_best_gbs);
    json_num(j, "spmm_over_gather_pattern", out->spmm_gbs / out->pattern_gbs);
    json_num(j, "spmm_over_copy", out->spmm_gbs / out->copy_gbs);
    json_num(j, "gather_sink", sink);   /* keeps the gather loops from being optimised away */
    json_str(j, "spmm_bytes", spmm_bytes_formula);
    json_str(j, "gather_bytes", gather_bytes_formula);
    json_str(j, "copy_bytes", copy_bytes_formula);
    rc = json_write(j, stdout);
    fflush(stdout);
    json_free(&j);
    return rc;
}

/* Per repetition, in turn: copy, random gather, pattern gather, SpMM, so that all four see the
 * same machine load (machines here are shared); one JSON line on stdout. */
static int bench_one(const char *ordering, const csr_t *a, int64_t f, int reps, const int32_t *ids,
                     const float *csrc, float *cdst, int64_t ncopy, uint64_t seed, line_t *out) {
    int rc = INCA_OK;
    const int T = inca_threads();
    const int64_t ldacc = (f + 15) / 16 * 16;
    float *x = inca_malloc_aligned((size_t)(a->n_cols * f) * sizeof(float));
    float *y = inca_malloc_aligned((size_t)(a->n_rows * f) * sizeof(float));
    float *acc = inca_malloc_aligned((size_t)(T * ldacc) * sizeof(float));
    double *tm = inca_malloc((size_t)(4 * reps) * sizeof(double));   /* [copy|gather|pattern|spmm] x reps */
    if (!x || !y || !acc || !tm) { rc = INCA_ENOMEM; goto done; }
    bench_fill_floats(x, a->n_cols * f, seed);
    bench_fill_floats(y, a->n_rows * f, seed + 1);
    double sink = 0.0;
    for (int r = 0; r <= reps; r++) {   /* r == 0 is a warm-up */
        bench_progress(r == 0, "%s order, %lld features, %s %d/%d", ordering, (long long)f, r ? "rep" : "warm-up", r, reps);
        double tc = bench_copy_once(csrc, cdst, ncopy);
        double tg = bench_gather_once(x, f, ids, a->nnz, acc, ldacc);
        sink += acc[0];
        double tp = bench_gather_once(x, f, a->col, a->nnz, acc, ldacc);
        sink += acc[0];
        double t0 = inca_now();
        rc = kern_spmm(a, x, f, 1.0f, 0.0f, y);
        double ts = inca_now() - t0;
        if (rc) goto done;
        if (r > 0) {
            tm[r - 1] = tc;
            tm[reps + r - 1] = tg;
            tm[2 * reps + r - 1] = tp;
            tm[3 * reps + r - 1] = ts;
        }
    }
    const double copy_bytes = 2.0 * (double)ncopy * sizeof(float);
    const double spmm_bytes = (double)a->nnz * (8.0 + 4.0 * (double)f) + (double)a->n_rows * (8.0 * (double)f + 8.0);
    const double gather_bytes = (double)a->nnz * (4.0 * (double)f + 4.0);
    const double c_med = bench_median(tm, reps);
    const double g_med = bench_median(tm + reps, reps), g_best = tm[reps];   /* sorted by bench_median() */
    const double p_med = bench_median(tm + 2 * reps, reps);
    const double s_med = bench_median(tm + 3 * reps, reps), s_best = tm[3 * reps];
    out->spmm_s = s_med;
    out->spmm_best_s = s_best;
    out->spmm_gbs = spmm_bytes / s_med * 1e-9;
    out->spmm_best_gbs = spmm_bytes / s_best * 1e-9;
    out->gather_gbs = gather_bytes / g_med * 1e-9;
    out->gather_best_gbs = gather_bytes / g_best * 1e-9;
    out->pattern_gbs = gather_bytes / p_med * 1e-9;
    out->copy_gbs = copy_bytes / c_med * 1e-9;
    rc = spmm_json(ordering, a, f, T, reps, out, sink);
done:
    inca_free(x);
    inca_free(y);
    inca_free(acc);
    inca_free(tm);
    return rc;
}

/* Parse "16,64,256" into fs (at most BENCH_MAX_F entries, each > 0). */
static int parse_features(const char *s, int64_t *fs, int *nf) {
    *nf = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v <= 0 || (*end != ',' && *end != '\0') || *nf == BENCH_MAX_F)
            return inca_fail(INCA_EINVAL, "--features: expected a comma-separated list of positive integers (at most %d), got '%s'",
                             BENCH_MAX_F, s);
        fs[(*nf)++] = v;
        p = *end == ',' ? end + 1 : end;
    }
    if (*nf == 0) return inca_fail(INCA_EINVAL, "--features: expected at least one width, got '%s'", s);
    return INCA_OK;
}

/* --device: SpMM of the random and METIS orderings for every F on the device, against its
 * device-to-device copy; a summary line with spmm_over_copy per F. */
static int spmm_on_device(const args_t *args, const char *dev, const csr_t *a, int do_metis, int64_t parts,
                          uint64_t seed, const int64_t *fs, int nf, int reps, int64_t ncopy) {
    kern_ctx_t *kc = NULL;
    kern_ctx_opts_t ko = {.device = dev, .deterministic = args_has(args, "--deterministic")};
    partition_t part = {0};
    csr_t am = {0};
    json_t *j = NULL;
    double copy_gbs = 0, gr[BENCH_MAX_F] = {0}, gm[BENCH_MAX_F] = {0};
    int rc = kc_create(&ko, &kc);
    if (rc) return rc;
    if (kc_fallback(kc)) bench_say("bench spmm: --device %s: %s; measuring the CPU backend\n", dev, kc_fallback(kc));
    if ((rc = bench_dev_copy_gbs(kc, ncopy, reps, &copy_gbs))) goto done;
    for (int i = 0; i < nf && !rc; i++) rc = bench_dev_spmm(kc, "random", a, fs[i], reps, copy_gbs, spmm_bytes_formula, &gr[i]);
    if (!rc && do_metis && !(rc = partition_compute(a, parts, PART_METIS, seed, &part)) && !(rc = csr_permute(a, part.perm, &am)))
        for (int i = 0; i < nf && !rc; i++) rc = bench_dev_spmm(kc, "metis", &am, fs[i], reps, copy_gbs, spmm_bytes_formula, &gm[i]);
    if (rc || (rc = json_new(&j))) goto done;
    json_str(j, "bench", "spmm");
    json_str(j, "summary", "per F: SpMM GB/s on the device (random ids, METIS order) and over the device's own "
                           "device-to-device copy GB/s");
    json_str(j, "device", kc_describe(kc));
    json_int(j, "nodes", a->n_rows);
    json_int(j, "nnz", a->nnz);
    json_num(j, "copy_gbs", copy_gbs);
    json_arr_begin(j, "features");
    for (int i = 0; i < nf; i++) json_num(j, NULL, (double)fs[i]);
    json_arr_end(j);
    json_arr_begin(j, "spmm_over_copy_random");
    for (int i = 0; i < nf; i++) json_num(j, NULL, gr[i] / copy_gbs);
    json_arr_end(j);
    if (do_metis) {
        json_arr_begin(j, "spmm_over_copy_metis");
        for (int i = 0; i < nf; i++) json_num(j, NULL, gm[i] / copy_gbs);
        json_arr_end(j);
    }
    rc = json_write(j, stdout);
done:
    json_free(&j);
    csr_free(&am);
    partition_free(&part);
    kc_free(&kc);
    return rc;
}

/* The run's settings from the flags, checked. */
typedef struct spmm_opts {
    int64_t nodes, threads, seed, reps, parts, fs[BENCH_MAX_F];
    double deg;
    int nf;
    int do_metis;                 /* --ordering random,metis (else random alone) */
} spmm_opts_t;

/* The flags into o, each range checked before anything is generated. */
static int spmm_parse(const args_t *args, spmm_opts_t *o) {
    int rc;
    if ((rc = args_int(args, "--nodes", 1 << 20, &o->nodes)) || (rc = args_double(args, "--avg-degree", 16.0, &o->deg)) ||
        (rc = args_int(args, "--threads", 0, &o->threads)) || (rc = args_int(args, "--seed", 0, &o->seed)) ||
        (rc = args_int(args, "--reps", 5, &o->reps)) || (rc = args_int(args, "--parts", 256, &o->parts)) ||
        (rc = parse_features(args_str(args, "--features", "16,64,256"), o->fs, &o->nf)))
        return rc;
    if (o->nodes < 2 || o->nodes >= ((int64_t)1 << 31))
        return inca_fail(INCA_EINVAL, "--nodes: expected 2 .. 2^31-1, got %lld", (long long)o->nodes);
    if (o->reps < 1 || o->reps > 1000) return inca_fail(INCA_EINVAL, "--reps: expected 1 .. 1000, got %lld", (long long)o->reps);
    if (o->parts < 2 || o->parts > o->nodes)
        return inca_fail(INCA_EINVAL, "--parts: expected 2 .. nodes, got %lld", (long long)o->parts);
    if (o->threads < 0)
        return inca_fail(INCA_EINVAL, "--threads: expected >= 0 (0 = all CPUs), got %lld", (long long)o->threads);
    const char *ordering = args_str(args, "--ordering", "random,metis");
    o->do_metis = strcmp(ordering, "random,metis") == 0;
    if (!o->do_metis && strcmp(ordering, "random") != 0)
        return inca_fail(INCA_EINVAL, "--ordering: expected 'random,metis' or 'random', got '%s'", ordering);
    return INCA_OK;
}

/* The graph: R-MAT with ids randomly permuted by the generator, GCN-normalised (values + I)
 * into *a; the generated dataset (the caller's, freed on error there) is dropped once done. */
static int spmm_graph(const spmm_opts_t *o, dataset_t *ds, csr_t *a, double *gen_s) {
    gen_opts_t go;
    gen_opts_default(&go);
    go.nodes = o->nodes;
    go.avg_degree = o->deg;
    go.features = 0;
    go.classes = 0;
    go.seed = (uint64_t)o->seed;
    go.split[0] = go.split[1] = go.split[2] = 0.0;
    double t0 = inca_now();
    int rc;
    if ((rc = gen_rmat(&go, ds, NULL))) return rc;
    if ((rc = csr_gcn_norm(&ds->adj, a))) return rc;
    *gen_s = inca_now() - t0;
    dataset_free(ds);
    return INCA_OK;
}

/* The copy bound's buffers (the largest X, clamped: see BENCH_COPY_MIN) and the gather bound's
 * uniform random row ids, as many as nonzeros; the caller frees them. */
static int spmm_bounds_setup(const spmm_opts_t *o, const csr_t *a, float **csrc, float **cdst, int64_t *ncopy,
                             int32_t **ids) {
    int64_t fmax = 0;
    for (int i = 0; i < o->nf; i++) fmax = o->fs[i] > fmax ? o->fs[i] : fmax;
    *ncopy = a->n_cols * fmax < BENCH_COPY_MIN ? BENCH_COPY_MIN
             : a->n_cols * fmax > BENCH_COPY_MAX ? BENCH_COPY_MAX : a->n_cols * fmax;
    *csrc = inca_malloc_aligned((size_t)*ncopy * sizeof(float));
    *cdst = inca_malloc_aligned((size_t)*ncopy * sizeof(float));
    if (!*csrc || !*cdst) return INCA_ENOMEM;
    bench_fill_floats(*csrc, *ncopy, 1);
    bench_fill_floats(*cdst, *ncopy, 2);
    int32_t *v = *ids = inca_malloc((size_t)a->nnz * sizeof(int32_t));
    if (!v) return INCA_ENOMEM;
    const uint64_t seed = (uint64_t)o->seed, nc = (uint64_t)a->n_cols;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < a->nnz; i++) v[i] = (int32_t)(rng_hash64(seed, 11, (uint64_t)i) % nc);
    return INCA_OK;
}

/* The summary line: one array per figure with an entry per F (METIS's only with the METIS
 * ordering), and whether SpMM reached 70% of the random-gather bound at every F. */
static int spmm_summary(const spmm_opts_t *o, const csr_t *a, const partition_t *part, const line_t *lr,
                        const line_t *lm, double gen_s, double part_s, int64_t ncopy) {
    enum { NK = 11 };
    static const char *const keys[NK] = {"features", "spmm_gbs_random", "spmm_gbs_metis", "gather_gbs",
                                         "gather_best_gbs", "gather_pattern_gbs_random", "copy_gbs",
                                         "spmm_over_gather_random", "spmm_over_gather_random_best",
                                         "metis_gain", "metis_gain_best"};
    static const int metis_only[NK] = {0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1};
    const int do_metis = o->do_metis;
    double v[NK][BENCH_MAX_F];
    int met = 1, rc;
    for (int i = 0; i < o->nf; i++) {
        v[0][i] = (double)o->fs[i];
        v[1][i] = lr[i].spmm_gbs;
        v[2][i] = do_metis ? lm[i].spmm_gbs : 0.0;
        v[3][i] = lr[i].gather_gbs;
        v[4][i] = lr[i].gather_best_gbs;
        v[5][i] = lr[i].pattern_gbs;
        v[6][i] = lr[i].copy_gbs;
        v[7][i] = lr[i].spmm_gbs / lr[i].gather_gbs;
        v[8][i] = lr[i].spmm_best_gbs / lr[i].gather_best_gbs;
        v[9][i] = do_metis ? lr[i].spmm_s / lm[i].spmm_s : 0.0;
        v[10][i] = do_metis ? lr[i].spmm_best_s / lm[i].spmm_best_s : 0.0;
        met &= v[7][i] >= 0.7;
    }
    json_t *j = NULL;
    if ((rc = json_new(&j))) return rc;
    json_str(j, "bench", "spmm");
    json_str(j, "summary", "per F: SpMM GB/s with random ids and in METIS order (medians of reps); "
                           "spmm_over_gather = SpMM / uniform random-gather bound, on random ids (median; _best: best of reps); "
                           "gather_pattern = gathering the graph's own column sequence (hub rows hit the cache); "
                           "metis_gain = SpMM time random / time METIS");
    json_int(j, "nodes", a->n_rows);
    json_int(j, "nnz", a->nnz);
    json_int(j, "threads", inca_threads());
    json_int(j, "reps", o->reps);
    json_int(j, "parts", do_metis ? o->parts : 0);
    json_int(j, "edge_cut", do_metis ? part->man.edge_cut : 0);
    json_num(j, "gen_s", gen_s);
    json_num(j, "partition_s", part_s);
    json_str(j, "copy_bytes", copy_bytes_formula);
    json_int(j, "copy_buffer_mib", ncopy * (int64_t)sizeof(float) >> 20);
    json_str(j, "spmm_bytes", spmm_bytes_formula);
    json_str(j, "gather_bytes", gather_bytes_formula);
    for (int k = 0; k < NK; k++) {
        if (!do_metis && metis_only[k]) continue;
        json_arr_begin(j, keys[k]);
        for (int i = 0; i < o->nf; i++) json_num(j, NULL, v[k][i]);
        json_arr_end(j);
    }
    json_bool(j, "target_spmm_ge_70pct_gather", met);
    rc = json_write(j, stdout);
    json_free(&j);
    return rc;
}

int bench_spmm(int argc, char **argv) {
    static const char *const known[] = {"--nodes", "--avg-degree", "--features", "--threads", "--seed",
                                        "--reps", "--parts", "--ordering", "--json!", "--device", "--deterministic!", "--quiet!", NULL};
    args_t *args = NULL;
    dataset_t ds;
    csr_t a = {0}, am = {0};
    partition_t part = {0};
    int32_t *ids = NULL;
    float *csrc = NULL, *cdst = NULL;
    spmm_opts_t o = {.nf = 0};
    double gen_s = 0.0, part_s = 0.0, t0;
    int64_t ncopy = 0;
    dataset_init(&ds);
    int rc = args_parse(argc, argv, known, &args);
    if (rc || (rc = spmm_parse(args, &o))) goto done;
    inca_set_threads((int)o.threads);
    if ((rc = spmm_graph(&o, &ds, &a, &gen_s)) || (rc = spmm_bounds_setup(&o, &a, &csrc, &cdst, &ncopy, &ids))) goto done;
    const uint64_t seed = (uint64_t)o.seed;
    const char *dev = args_str(args, "--device", "cpu");
    if (strcmp(dev, "cpu") != 0) {   /* the kernel table on a device: its SpMM against its copy */
        rc = spmm_on_device(args, dev, &a, o.do_metis, o.parts, seed, o.fs, o.nf, (int)o.reps, ncopy);
        goto done;
    }
    line_t lr[BENCH_MAX_F], lm[BENCH_MAX_F];
    for (int i = 0; i < o.nf; i++)
        if ((rc = bench_one("random", &a, o.fs[i], (int)o.reps, ids, csrc, cdst, ncopy, seed, &lr[i]))) goto done;
    if (o.do_metis) {
        t0 = inca_now();
        if ((rc = partition_compute(&a, o.parts, PART_METIS, seed, &part))) goto done;
        if ((rc = csr_permute(&a, part.perm, &am))) goto done;
        part_s = inca_now() - t0;
        for (int i = 0; i < o.nf; i++)
            if ((rc = bench_one("metis", &am, o.fs[i], (int)o.reps, ids, csrc, cdst, ncopy, seed, &lm[i]))) goto done;
    }
    rc = spmm_summary(&o, &a, &part, lr, lm, gen_s, part_s, ncopy);
done:
    inca_free(ids);
    inca_free(csrc);
    inca_free(cdst);
    partition_free(&part);
    csr_free(&am);
    csr_free(&a);
    dataset_free(&ds);
    args_free(&args);
    return rc;
}
