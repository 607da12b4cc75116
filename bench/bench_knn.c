/* inca bench knn STORE: exact kNN against FAISS's approximate search on the train split's rows
 * (the pruning pool): the time of each, their ratio, and recall@k of FAISS against exact (the
 * share of exact neighbours FAISS finds), both measured in this run. Smoke-tested in
 * test_pruning_e2e.c (bench_smoke). */
#include "bench/bench.h"
#include "bench/bench_progress.h"
#include "core/alloc.h"
#include "core/args.h"
#include "core/json.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/dataset.h"
#include "pruning/knn.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* recall@k: the share of the exact neighbours ex that FAISS also returned in ap (n rows of k). */
static double knn_recall(const int32_t *ap, const int32_t *ex, int64_t n, int64_t k) {
    int64_t hit = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = 0; p < k; p++)
            for (int64_t q = 0; q < k; q++) hit += ap[i * k + p] == ex[i * k + q];
    return (double)hit / (double)(n * k);
}

/* The --json result line: n rows of f features, k neighbours; te, tf: the exact and FAISS
 * seconds (te unmeasured when !exact). */
static int knn_json(const args_t *a, int64_t n, int64_t f, int64_t k, knn_metric_t metric, const knn_faiss_opts_t *o,
                    int64_t np, int exact, double te, double tf, double recall) {
    json_t *j = NULL;
    int rc = json_new(&j);
    if (rc) return rc;
    json_int(j, "rows", n);
    json_int(j, "features", f);
    json_int(j, "k", k);
    json_str(j, "metric", metric == KNN_COSINE ? "cosine" : "euclidean");
    char fac[64];
    knn_faiss_default_factory(n, fac, sizeof fac);
    json_str(j, "faiss_index", o->factory ? o->factory : fac);
    json_int(j, "faiss_nprobe", np);
    json_num(j, "exact_s", exact ? te : NAN);
    json_num(j, "faiss_s", tf);
    json_num(j, "speedup", exact ? te / tf : NAN);
    json_num(j, "recall", recall);
    json_int(j, "threads", inca_threads());
    if ((rc = args_config_json(a, j, NULL)) == INCA_OK) {
        json_str(j, "version", bench_version());
        rc = json_write(j, stdout);
    }
    json_free(&j);
    return rc;
}

int bench_knn(int argc, char **argv) {
    static const char *const known[] = {"--knn", "--metric", "--faiss-index", "--faiss-nprobe", "--threads", "--seed",
                                        "--max-rows", "--no-exact!", "--json!", "--quiet!", NULL};
    args_t *a = NULL;
    dataset_t d;
    dataset_init(&d);
    float *x = NULL;
    int32_t *ex = NULL, *ap = NULL;
    int64_t k = 0, np = 0, seed = 0, maxr = 0, thr = 0;
    knn_metric_t metric;
    int rc = args_parse(argc, argv, known, &a);
    if (rc) return rc;
    if (args_npos(a) != 1) { rc = inca_fail(INCA_EINVAL, "expected one STORE argument"); goto done; }
    if ((rc = args_int(a, "--knn", 10, &k)) || (rc = args_int(a, "--faiss-nprobe", 8, &np)) ||
        (rc = args_int(a, "--seed", 0, &seed)) || (rc = args_int(a, "--max-rows", 0, &maxr)) ||
        (rc = args_int(a, "--threads", 0, &thr)) || (rc = knn_metric_parse(args_str(a, "--metric", "cosine"), &metric)))
        goto done;
    if (thr > 0) inca_set_threads((int)thr);
    if (!knn_faiss_available()) { rc = knn_faiss(NULL, 0, 0, 0, metric, NULL, NULL, NULL); goto done; }
    bench_progress_stage("loading %s", args_pos(a, 0));
    if ((rc = dataset_load_ex(args_pos(a, 0), DATASET_NO_GRAPH, &d))) goto done;
    int64_t n = d.split_n[SPLIT_TRAIN] > 0 ? d.split_n[SPLIT_TRAIN] : d.n;
    if (maxr > 0 && n > maxr) n = maxr;
    if (d.f < 1 || k < 1 || k >= n) { rc = inca_fail(INCA_EINVAL, "needs features and 1 <= --knn < rows (%lld)", (long long)n); goto done; }
    x = inca_malloc(sizeof(float) * (size_t)(n * d.f));
    ex = inca_malloc(sizeof(int32_t) * (size_t)(n * k));
    ap = inca_malloc(sizeof(int32_t) * (size_t)(n * k));
    if (!x || !ex || !ap) { rc = INCA_ENOMEM; goto done; }
    for (int64_t i = 0; i < n; i++) {
        const int64_t v = d.split_n[SPLIT_TRAIN] > 0 ? d.split[SPLIT_TRAIN][i] : i;
        memcpy(x + i * d.f, d.x + v * d.f, sizeof(float) * (size_t)d.f);
    }
    const int exact = !args_has(a, "--no-exact");
    double te = 0, tf, t0;
    if (exact) {
        bench_progress_stage("exact search, %lld rows", (long long)n);
        t0 = inca_now();
        if ((rc = knn_exact(x, n, d.f, (int)k, metric, ex, NULL))) goto done;
        te = inca_now() - t0;
    }
    bench_progress_stage("FAISS search, %lld rows", (long long)n);
    knn_faiss_opts_t o = {args_str(a, "--faiss-index", NULL), (int)np, (uint64_t)seed};
    t0 = inca_now();
    if ((rc = knn_faiss(x, n, d.f, (int)k, metric, &o, ap, NULL))) goto done;
    tf = inca_now() - t0;
    const double recall = exact ? knn_recall(ap, ex, n, k) : NAN;
    bench_say("bench knn: %lld rows x %lld features, k %lld: exact %.2f s, FAISS %.2f s (%.1fx), recall@%lld %.4f\n",
              (long long)n, (long long)d.f, (long long)k, te, tf, exact ? te / tf : NAN, (long long)k, recall);
    if (args_has(a, "--json")) rc = knn_json(a, n, d.f, k, metric, &o, np, exact, te, tf, recall);
done:
    inca_free(x);
    inca_free(ex);
    inca_free(ap);
    dataset_free(&d);
    args_free(&a);
    return rc;
}
