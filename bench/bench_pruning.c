/* inca bench pruning: wall time per stage of the whole pruning run (load, labelled pick, kNN,
 * spreading or self-training, proxy training with dynamics, scoring, selection, writing the
 * pruned store and indices) on a store, one JSON line per stage, then a summary line with the
 * kNN's effective GFLOP/s beside a plain sgemm of the same inner dimension measured in the same
 * process (the kNN is one n×n×f GEMM over the upper block triangle: ≈ n²·f flops). The run is
 * inca prune's (pruning/job.h), on the first budget of --keep, without evaluation or stored
 * dynamics; this file times it and prints.
 * Not a test; speed is never asserted (correctness: test_pruning_*.c). */
#include "bench/bench.h"
#include "bench/bench_progress.h"
#include "core/args.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include "pruning/job.h"
#include "cli/prune_args.h"
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

/* What the job's hooks need: the flags (defaults by data kind) and the first budget's line. */
typedef struct bench_prune {
    args_t *a;
    prune_budget_line_t line;
} bench_prune_t;

/* After loading: the defaults by data kind, as inca prune takes them (prune says which on
 * stderr; the bench does not). */
static int bench_on_loaded(void *ctx, prune_job_t *job) {
    bench_prune_t *b = ctx;
    char kind_def[256];
    return prune_kind_defaults(b->a, &job->cfg, &job->target, job->is_graph, kind_def, sizeof kind_def);
}

/* The budget's line: its stages' seconds, printed once the run is done. */
static int bench_on_budget(void *ctx, const prune_job_t *job, const prune_budget_line_t *line) {
    (void)job;
    ((bench_prune_t *)ctx)->line = *line;
    return INCA_OK;
}

/* One line per stage through writing, then the summary with the kNN's rate beside a GEMM's. */
static int bench_print(const prune_job_t *job, const prune_budget_line_t *l) {
    const prune_result_t *r = &job->r;
    json_t *j = NULL;
    int rc = INCA_OK;
    for (int s = 0; s < PRUNE_ST_EVAL && rc == INCA_OK; s++) {
        if ((rc = json_new(&j))) return rc;
        json_str(j, "bench", "pruning");
        json_str(j, "stage", prune_stage_names[s]);
        json_num(j, "seconds", l->sec[s]);
        json_num(j, "fraction", l->total > 0 ? l->sec[s] / l->total : 0);
        rc = json_write(j, stdout);
        json_free(&j);
    }
    if (rc) return rc;
    /* the kNN's GEMM rate: one exact graph of the raw rows (not several views, not FAISS) */
    double knn_g = NAN, gemm_g = NAN;
    if (l->sec[PRUNE_ST_KNN] > 0 && r->ssl_check_n == 0 && r->knn_features_used == PRUNE_KF_RAW && r->knn_used == PRUNE_KNN_EXACT) {
        knn_g = (double)job->npool * (double)job->npool * (double)job->d.f / l->sec[PRUNE_ST_KNN] / 1e9;
        gemm_g = gemm_gflops(2048, job->d.f);
    }
    if ((rc = json_new(&j))) return rc;
    json_str(j, "bench", "pruning");
    json_int(j, "pool", job->npool);
    json_int(j, "features", job->d.f);
    json_int(j, "labeled", job->nlab);
    json_int(j, "kept", r->nsel);
    json_int(j, "threads", inca_threads());
    json_num(j, "pseudo_label_acc", job->pl_acc);
    json_int(j, "proxy_epochs", r->dyn.epochs);
    json_num(j, "total_s", l->total);
    json_num(j, "knn_gflops", knn_g);
    json_num(j, "gemm_gflops", gemm_g);
    json_num(j, "knn_vs_gemm", knn_g / gemm_g);
    json_num(j, "peak_rss_mb", inca_peak_rss_mb());
    memstat_json(j);
    rc = json_write(j, stdout);
    json_free(&j);
    return rc;
}

int bench_pruning(int argc, char **argv) {
    bench_prune_t b;
    memset(&b, 0, sizeof b);
    prune_job_t job;
    prune_job_init(&job);
    job.o.t_start = inca_now();
    char *tmp = NULL, ip[4200];
    int64_t iv = 0;
    int rc = args_parse(argc, argv, prune_flags, &b.a);
    if (rc) goto done;
    if (args_npos(b.a) != 1) { rc = inca_fail(INCA_EINVAL, "expected one STORE argument"); goto done; }
    const char *path = job.o.path = args_pos(b.a, 0);
    if ((rc = args_double(b.a, "--labeled", 0.01, &job.o.labeled))) goto done;
    if ((rc = prune_config_from_args(b.a, &job.cfg, &job.target))) goto done;
    if ((rc = args_int(b.a, "--threads", 0, &iv))) goto done;
    if (iv > 0) inca_set_threads((int)iv);
    job.cfg.proxy.log = bench_train_log;   /* the pipeline's stages and the proxy's epochs */
    job.cfg.proxy.store_path = job.target.store_path = path;
    job.cfg.nkeeps = 1;   /* the first budget of --keep is timed */
    job.o.split = args_str(b.a, "--split", NULL);
    /* writing: the pruned store (to --out, or a temporary directory removed afterwards) and its
     * indices beside it, .npy only */
    job.o.out = args_str(b.a, "--out", NULL);
    if (!job.o.out) {
        const char *base = getenv("TMPDIR");
        size_t len = strlen(base && *base ? base : "/tmp") + 40;
        if (!(tmp = inca_malloc(len))) { rc = INCA_ENOMEM; goto done; }
        snprintf(tmp, len, "%s/inca-bench-pruned-%d", base && *base ? base : "/tmp", (int)getpid());
        job.o.out = tmp;
    }
    snprintf(ip, sizeof ip, "%s.indices.npy", job.o.out);
    job.o.indices = ip;
    job.o.indices_text = 0;
    job.o.overwrite = 1;
    job.o.loaded = bench_on_loaded;
    job.o.budget = bench_on_budget;
    job.o.ctx = &b;
    bench_progress_stage("pruning %s", path);
    if ((rc = prune_job_run(&job))) goto done;
    rc = bench_print(&job, &b.line);
    if (tmp && (inca_rmtree(tmp) != INCA_OK || inca_rmtree(ip) != INCA_OK))
        bench_say("bench pruning: could not remove %s: %s\n", tmp, inca_errmsg());
done:
    inca_free(tmp);
    prune_job_free(&job);
    args_free(&b.a);
    return rc;
}
