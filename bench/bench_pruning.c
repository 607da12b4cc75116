/* inca bench pruning: wall time per stage of the whole pruning run (load, labelled pick, kNN,
 * spreading or self-training, proxy training with dynamics, scoring, selection, writing the
 * pruned store and indices) on a store, one JSON line per stage, then a summary line with the
 * kNN's effective GFLOP/s beside a plain sgemm of the same inner dimension measured in the same
 * process (the kNN is one n×n×f GEMM over the upper block triangle: ≈ n²·f flops).
 * Not a test; speed is never asserted (correctness: test_pruning_*.c). */
#include "bench/bench.h"
#include "bench/bench_progress.h"
#include "core/args.h"
#include "pruning/prune_args.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include "graph/split.h"
#include "loaders/npy.h"
#include "pruning/pipeline.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* GFLOP/s of C[b x b] = A[b x f] Bᵀ, best of 3. */
static double gemm_gflops(int64_t b, int64_t f) {
    float *a = inca_calloc((size_t)(b * f), sizeof *a), *c = inca_malloc((size_t)(b * b) * sizeof *c);
    double best = 0;
    if (a && c) {
        for (int64_t i = 0; i < b * f; i++) a[i] = (float)((i * 7919) % 13) * 0.1f;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = inca_now();
            kern_gemm(0, 1, b, b, f, -2.0f, a, f, a, f, 0.0f, c, b);
            double g = 2.0 * (double)b * (double)b * (double)f / (inca_now() - t0) / 1e9;
            if (g > best) best = g;
        }
    }
    inca_free(a);
    inca_free(c);
    return best;
}

int bench_pruning(int argc, char **argv) {
    args_t *a = NULL;
    dataset_t d, pruned;
    dataset_init(&d);
    dataset_init(&pruned);
    prune_result_t r;
    memset(&r, 0, sizeof r);
    int64_t *lab = NULL, nlab = 0, iv = 0;
    int32_t *yv = NULL;
    json_t *j = NULL;
    char *tmp = NULL;
    double sec[PRUNE_ST_COUNT] = {0}, t_all = inca_now(), t0;
    prune_config_t cfg;
    train_config_t target;   /* parsed with the prune flags; the bench does not evaluate */
    int rc = args_parse(argc, argv, prune_flags, &a);
    if (rc) goto done;
    if (args_npos(a) != 1) { rc = inca_fail(INCA_EINVAL, "bench pruning: expected one STORE argument"); goto done; }
    const char *path = args_pos(a, 0);
    double frac;
    if ((rc = args_double(a, "--labeled", 0.01, &frac))) goto done;
    if ((rc = prune_config_from_args(a, &cfg, &target))) goto done;
    if ((rc = args_int(a, "--threads", 0, &iv))) goto done;
    if (iv > 0) inca_set_threads((int)iv);

    cfg.proxy.log = bench_train_log;   /* the pipeline's stages and the proxy's epochs */
    cfg.proxy.store_path = target.store_path = path;
    bench_progress_stage("loading %s", path);
    t0 = inca_now();
    if ((rc = dataset_load(path, &d))) goto done;
    if ((rc = dataset_split_apply(path, args_str(a, "--split", NULL), cfg.seed, &d))) goto done;
    if (!d.y || d.split_n[SPLIT_TRAIN] < 2) { rc = inca_fail(INCA_EINVAL, "%s: needs labels and a train split", path); goto done; }
    sec[PRUNE_ST_LOAD] = inca_now() - t0;
    char kind_def[256];   /* defaults by data kind, as inca prune takes them */
    if ((rc = prune_kind_defaults(a, &cfg, &target, d.adj.rowptr != NULL && d.adj.nnz > 0, kind_def, sizeof kind_def))) goto done;
    t0 = inca_now();
    const int64_t *pool = d.split[SPLIT_TRAIN];
    int64_t npool = d.split_n[SPLIT_TRAIN];
    if ((rc = prune_labeled_pick(d.y, d.c, pool, npool, frac, 0, cfg.seed, &lab, &nlab))) goto done;
    yv = inca_malloc((size_t)d.n * sizeof *yv);
    if (!yv) { rc = INCA_ENOMEM; goto done; }
    if ((rc = prune_visible_labels(d.y, d.n, lab, nlab, yv))) goto done;
    dataset_t dv = d;
    dv.y = yv;
    sec[PRUNE_ST_LABELED] = inca_now() - t0;
    bench_progress_stage("pruning");
    if ((rc = prune_run(&dv, pool, npool, &cfg, &r))) goto done;
    for (int s = PRUNE_ST_CHECK; s <= PRUNE_ST_SELECT; s++) sec[s] = r.sec[s];
    double pl_acc = prune_pseudo_acc(d.y, yv, &r);

    /* writing: the pruned store (to --out, or a temporary directory removed afterwards) */
    t0 = inca_now();
    const char *out = args_str(a, "--out", NULL);
    if (!out) {
        const char *base = getenv("TMPDIR");
        size_t len = strlen(base && *base ? base : "/tmp") + 40;
        tmp = inca_malloc(len);
        if (!tmp) { rc = INCA_ENOMEM; goto done; }
        snprintf(tmp, len, "%s/inca-bench-pruned-%d", base && *base ? base : "/tmp", (int)getpid());
        out = tmp;
    }
    bench_progress_stage("writing %s", out);
    if ((rc = prune_make_pruned(&d, r.sel, r.nsel, &pruned))) goto done;
    if ((rc = dataset_save(&pruned, out, 1))) goto done;
    char ip[4200];
    snprintf(ip, sizeof ip, "%s.indices.npy", out);
    if ((rc = npy_write_i64(ip, r.sel, r.nsel))) goto done;
    sec[PRUNE_ST_WRITE] = inca_now() - t0;
    double total = inca_now() - t_all;

    for (int s = 0; s < PRUNE_ST_EVAL && rc == INCA_OK; s++) {
        if ((rc = json_new(&j))) goto done;
        json_str(j, "bench", "pruning");
        json_str(j, "stage", prune_stage_names[s]);
        json_num(j, "seconds", sec[s]);
        json_num(j, "fraction", total > 0 ? sec[s] / total : 0);
        rc = json_write(j, stdout);
        json_free(&j);
    }
    if (rc) goto done;
    /* the kNN's GEMM rate: one exact graph of the raw rows (not several views, not FAISS) */
    double knn_g = NAN, gemm_g = NAN;
    if (sec[PRUNE_ST_KNN] > 0 && r.ssl_check_n == 0 && r.knn_features_used == PRUNE_KF_RAW && r.knn_used == PRUNE_KNN_EXACT) {
        knn_g = (double)npool * (double)npool * (double)d.f / sec[PRUNE_ST_KNN] / 1e9;
        gemm_g = gemm_gflops(2048, d.f);
    }
    if ((rc = json_new(&j))) goto done;
    json_str(j, "bench", "pruning");
    json_int(j, "pool", npool);
    json_int(j, "features", d.f);
    json_int(j, "labeled", nlab);
    json_int(j, "kept", r.nsel);
    json_int(j, "threads", inca_threads());
    json_num(j, "pseudo_label_acc", pl_acc);
    json_int(j, "proxy_epochs", r.dyn.epochs);
    json_num(j, "total_s", total);
    json_num(j, "knn_gflops", knn_g);
    json_num(j, "gemm_gflops", gemm_g);
    json_num(j, "knn_vs_gemm", knn_g / gemm_g);
    json_num(j, "peak_rss_mb", inca_peak_rss_mb());
    memstat_json(j);
    rc = json_write(j, stdout);
    if (tmp && (inca_rmtree(tmp) != INCA_OK || inca_rmtree(ip) != INCA_OK))
        bench_say("bench pruning: could not remove %s: %s\n", tmp, inca_errmsg());
done:
    json_free(&j);
    inca_free(tmp);
    prune_result_free(&r);
    dataset_free(&pruned);
    dataset_free(&d);
    inca_free(lab);
    inca_free(yv);
    args_free(&a);
    return rc;
}
