/* inca bench loader STORE [--method gas|incagg|cluster] [training flags]: trains with the
 * prefetching loader and again with batches built synchronously, on the same stored METIS
 * partitioning, and prints the trainer's wait time as a fraction of step time (target <= 5%),
 * the build time per batch, and the step time of both modes (their ratio is what prefetching
 * saves). With --cold the store's pages are evicted (posix_fadvise DONTNEED on data.mdb, no
 * privileges needed) before a plain sequential read of data.mdb and before the dataset load, so
 * the load's GB/s is reported against the read of the same file measured in the same run, cold
 * and then warm. With --loader view (or auto choosing it) nothing is loaded: the features, M^0
 * (incagg) and Â are the store layout's views (nn/layout.h), and the cold/warm figure is one
 * epoch of the loader alone (the prefetch thread copying each batch's feature rows, faulting
 * in its M^0 rows and building Â_BB, no training) in batches/s and GB/s of rows served, against
 * the sequential read; opening the views (one CRC pass over each array) is timed apart.
 * Speed is never asserted; a smoke test lives in test_incagg.c. */
#include "bench/bench.h"
#include "bench/bench_progress.h"
#include "bench/bench_mb.h"
#include "kernels/backend.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/status.h"
#include "nn/layout.h"
#include "nn/train_mb.h"
#include "loaders/batch.h"
#include "loaders/store.h"
#include "core/util.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

/* Drops data.mdb's pages from the page cache (1: done, 0: not possible here). */
static int evict(const char *store) {
    char p[4096];
    snprintf(p, sizeof p, "%s/data.mdb", store);
    int fd = open(p, O_RDONLY);
    if (fd < 0) return 0;
    const int ok = fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    close(fd);
    return ok;
}

/* Seconds to read data.mdb sequentially (8 MiB reads) up to its bytes in use (store_disk_bytes:
 * holes past LMDB's last page would read as free zeros); *bytes what was read. */
static int seq_read(const char *store, double *secs, int64_t *bytes) {
    int64_t limit = INT64_MAX;
    store_t *s0 = NULL;
    if (store_open(store, STORE_RDONLY, &s0) == INCA_OK) limit = store_disk_bytes(s0);
    store_close(&s0);
    char p[4096];
    snprintf(p, sizeof p, "%s/data.mdb", store);
    int fd = open(p, O_RDONLY);
    if (fd < 0) return inca_fail(INCA_EIO, "%s: cannot open", p);
    char *buf = malloc((size_t)8 << 20);
    if (!buf) { close(fd); return INCA_ENOMEM; }
    const double t0 = inca_now();
    int64_t total = 0;
    ssize_t k = 0;
    while (total < limit && (k = read(fd, buf, (size_t)(limit - total < ((int64_t)8 << 20) ? limit - total : ((int64_t)8 << 20)))) > 0)
        total += k;
    *secs = inca_now() - t0;
    *bytes = total;
    free(buf);
    close(fd);
    return k < 0 ? inca_fail(INCA_EIO, "%s: read failed", p) : INCA_OK;
}

/* Drop this process's mappings of [p, p+bytes) (MADV_DONTNEED on a shared file map unmaps the
 * pages, keeping the file): posix_fadvise cannot evict a page some process still maps. */
static void unmap_range(const void *p, int64_t bytes) { inca_madvise(p, bytes, MADV_DONTNEED); }

static void unmap_views(const layout_views_t *v) {
    unmap_range(v->x, v->n * v->f * 4);
    unmap_range(v->m0, v->n * v->f * (v->m0_dtype == HIST_BF16 ? 2 : 4));
    for (const csr_t *g = &v->a; g; g = g == &v->a ? &v->at : NULL) {
        unmap_range(g->rowptr, (g->n_rows + 1) * 8);
        unmap_range(g->col, g->nnz * 4);
        unmap_range(g->val, g->nnz * 4);
    }
}

/* Fraction of the pages of [p, p+bytes) resident in memory (mincore): how cold "cold" was. */
static double resident(const void *p, int64_t bytes) {
    if (!p || bytes <= 0) return 0;
    const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), lo = (uintptr_t)p & ~(pg - 1);
    const size_t len = (uintptr_t)p + (uintptr_t)bytes - lo, np = (len + pg - 1) / pg;
    unsigned char *vec = malloc(np);
    if (!vec) return -1;
    double r = -1;
    if (mincore((void *)lo, len, vec) == 0) {
        size_t in = 0;
        for (size_t i = 0; i < np; i++) in += vec[i] & 1;
        r = (double)in / (double)np;
    }
    free(vec);
    return r;
}

/* One epoch of batches from the view arrays through the prefetching loader, no training:
 * seconds, batches and bytes of rows served (feature rows, M^0 rows, Â rows). */
static int loader_pass(const layout_views_t *v, const partition_t *p, const train_config_t *c, int incagg, double *secs,
                       int64_t *batches, int64_t *bytes) {
    const int64_t es = v->m0_dtype == HIST_BF16 ? 2 : 4;
    batch_source_t src = {.n = v->n, .f = v->f, .x = v->x, .a = &v->a, .a_symmetric = v->at.rowptr == NULL,
                          .bounds = p->bounds, .k = p->k, .touch = incagg ? v->m0 : NULL, .touch_row_bytes = v->f * es};
    batch_opts_t bo = {.batch_parts = c->batch_parts, .seed = c->seed, .prefetch = 1};
    batch_loader_t *ld = NULL;
    const double t0 = inca_now();
    int rc = batch_loader_create(&src, &bo, &ld);
    const int64_t spe = rc == INCA_OK ? batch_loader_steps_per_epoch(ld) : 0;
    *bytes = 0;
    for (int64_t i = 0; i < spe && rc == INCA_OK; i++) {
        const batch_t *b = NULL;
        if ((rc = batch_loader_next(ld, &b)) != INCA_OK) break;
        *bytes += b->n_b * v->f * 4 + (src.touch ? b->n_b * v->f * es : 0) +
                  b->nnz_rows * (int64_t)(sizeof(int32_t) + sizeof(float)) + b->n_b * (int64_t)sizeof(int64_t);
    }
    batch_loader_free(&ld);
    *secs = inca_now() - t0;
    *batches = spe;
    return rc;
}

/* One bench loader run: what bench_loader frees at the end, and the figures it prints. */
typedef struct lb_run {
    dataset_t d;
    partition_t p;
    train_config_t c;
    mb_stats_t st[2];             /* 0: prefetch thread, 1: synchronous */
    train_result_t r[2];
    kern_ctx_t *kc;
    store_t *vs;                  /* the views' store (--loader view) */
    layout_views_t views;
    char devname[16];
    const char *store;
    int method, cold, view, reused;
    int evicted;                  /* every eviction asked for happened */
    double rd_s[2], ld_s[2];      /* [0] cold, [1] warm: the plain read of data.mdb, the dataset load */
    int64_t file_bytes;
    double open_s, pass_s[2], cold_resident;   /* --loader view: opening the views, the loader's passes */
    int64_t pass_batches, pass_bytes;
} lb_run_t;

/* The flags into L->c, the device, and which loader runs (resolved from the store's size). */
static int lb_config(lb_run_t *L, const args_t *a) {
    int rc;
    if (args_npos(a) != 1) return inca_fail(INCA_EINVAL, "expected one STORE argument");
    if ((rc = bench_mb_config(a, &L->c)) != INCA_OK) return rc;
    int m = 0;   /* the mini-batch methods: train_method_words from TRAIN_CLUSTER on */
    if ((rc = args_word(a, "--method", "gas", train_method_words + TRAIN_CLUSTER, TRAIN_METHOD_COUNT - TRAIN_CLUSTER,
                        "cluster, gas or incagg for mini-batch training", &m)) != INCA_OK)
        return rc;
    L->c.method = (train_method_t)(TRAIN_CLUSTER + m);
    L->method = train_method_agg(L->c.method);
    if ((rc = train_device_open(&L->c, &L->kc, L->devname, sizeof L->devname)) != INCA_OK) return rc;
    L->c.kc = L->kc;
    L->store = args_pos(a, 0);
    L->cold = args_has(a, "--cold");
    if ((rc = args_word(a, "--loader", "auto", train_loader_words, 3, "copy, view or auto", &L->c.loader)) != INCA_OK) return rc;
    if (args_has(a, "--memory-budget") && (rc = args_size_parse("--memory-budget", args_str(a, "--memory-budget", ""), &L->c.memory_budget)))
        return rc;
    L->c.store_path = L->store;
    store_t *s0 = NULL;
    if ((rc = store_open(L->store, STORE_RDONLY, &s0)) != INCA_OK) return rc;
    L->c.loader = train_loader_resolve(&L->c, store_meta(s0)->nodes, store_meta(s0)->features);
    store_close(&s0);
    L->view = L->c.loader == TRAIN_LOADER_VIEW;
    return INCA_OK;
}

/* --loader view: nothing loaded; the layout's views opened (timed), then the loader alone over
 * one epoch, cold (mappings dropped, pages evicted) and warm, each after the plain read. */
static int lb_view_passes(lb_run_t *L) {
    int rc;
    if ((rc = dataset_load_ex(L->store, DATASET_NO_X | DATASET_NO_GRAPH, &L->d)) != INCA_OK) return rc;
    if ((rc = train_partition(&L->d, &L->c, &L->p, &L->reused)) != INCA_OK) return rc;
    const double t0 = inca_now();
    if ((rc = train_view_open(&L->d, &L->c, &L->p, &L->vs, &L->views)) != INCA_OK) return rc;
    L->open_s = inca_now() - t0;
    for (int w = L->cold ? 0 : 1; w < 2; w++) {
        if (w == 0) {
            unmap_views(&L->views);
            L->evicted &= evict(L->store);
        }
        if ((rc = seq_read(L->store, &L->rd_s[w], &L->file_bytes)) != INCA_OK) return rc;
        if (w == 0) {
            L->evicted &= evict(L->store);
            L->cold_resident = resident(L->views.x, L->views.n * L->views.f * 4);
        }
        if ((rc = loader_pass(&L->views, &L->p, &L->c, L->method == AGG_INCAGG, &L->pass_s[w], &L->pass_batches,
                              &L->pass_bytes)))
            return rc;
    }
    return INCA_OK;
}

/* The copy loader: with --cold the plain read and a dataset load from evicted pages (timed,
 * then dropped), then both warm; the warm load is the one that trains. */
static int lb_load(lb_run_t *L) {
    int rc;
    double t0;
    if (L->cold) {
        L->evicted &= evict(L->store);
        if ((rc = seq_read(L->store, &L->rd_s[0], &L->file_bytes)) != INCA_OK) return rc;
        L->evicted &= evict(L->store);
        t0 = inca_now();
        if ((rc = bench_mb_load(L->store, &L->c, &L->d, &L->p, &L->reused)) != INCA_OK) return rc;
        L->ld_s[0] = inca_now() - t0;
        dataset_free(&L->d);
        partition_free(&L->p);
        dataset_init(&L->d);
    }
    if ((rc = seq_read(L->store, &L->rd_s[1], &L->file_bytes)) != INCA_OK) return rc;
    t0 = inca_now();
    if ((rc = bench_mb_load(L->store, &L->c, &L->d, &L->p, &L->reused)) != INCA_OK) return rc;
    L->ld_s[1] = inca_now() - t0;
    return INCA_OK;
}

/* The same training with the prefetching loader (mode 0), then with batches built synchronously. */
static int lb_train(lb_run_t *L) {
    int rc;
    for (int mode = 0; mode < 2; mode++) {
        mb_opts_t o;
        mb_opts_default(&o);
        o.eval_every_epoch = 0;
        o.prefetch = mode == 0;
        o.view = L->view ? &L->views : NULL;
        bench_progress_stage("%s, %s loader", train_method_name(L->c.method), mode == 0 ? "prefetching" : "synchronous");
        if ((rc = mb_train(&L->d, &L->c, L->d.split[SPLIT_TRAIN], L->d.split_n[SPLIT_TRAIN], 0, &L->p, &o, &L->r[mode],
                           &L->st[mode])) != INCA_OK)
            return rc;
    }
    return INCA_OK;
}

/* The store's figures in j: the view loader's passes against the sequential read (warm, and
 * cold with --cold), or the dataset load against it. */
static void lb_json_store(const lb_run_t *L, json_t *j) {
    const double *rd_s = L->rd_s, *ld_s = L->ld_s, *pass_s = L->pass_s;
    const int64_t file_bytes = L->file_bytes;
    json_int(j, "store_bytes", file_bytes);
    json_str(j, "loader", L->view ? "view" : "copy");
    json_num(j, "read_warm_gbs", rd_s[1] > 0 ? (double)file_bytes / rd_s[1] * 1e-9 : 0);
    if (L->view) {   /* the loader alone over one epoch vs the sequential read, warm (and cold) */
        json_num(j, "views_open_s", L->open_s);
        json_int(j, "pass_batches", L->pass_batches);
        json_int(j, "pass_bytes", L->pass_bytes);
        for (int w = L->cold ? 0 : 1; w < 2; w++) {
            const char *k = w ? "warm" : "cold";
            char key[48];
            const double gbs = pass_s[w] > 0 ? (double)L->pass_bytes / pass_s[w] * 1e-9 : 0;
            const double rgbs = rd_s[w] > 0 ? (double)file_bytes / rd_s[w] * 1e-9 : 0;
            snprintf(key, sizeof key, "loader_%s_batches_per_s", k);
            json_num(j, key, pass_s[w] > 0 ? (double)L->pass_batches / pass_s[w] : 0);
            snprintf(key, sizeof key, "loader_%s_gbs", k);
            json_num(j, key, gbs);
            snprintf(key, sizeof key, "loader_over_read_%s", k);
            json_num(j, key, rgbs > 0 ? gbs / rgbs : 0);
        }
        if (L->cold) {
            json_bool(j, "evicted", L->evicted);
            json_num(j, "cold_resident_fraction", L->cold_resident);   /* of the features' pages, after eviction */
            json_num(j, "read_cold_gbs", rd_s[0] > 0 ? (double)file_bytes / rd_s[0] * 1e-9 : 0);
        }
        json_int(j, "spilled_bytes", L->st[0].spilled_bytes);
    } else {
        json_num(j, "load_warm_s", ld_s[1]);
        json_num(j, "load_over_read_warm", ld_s[1] > 0 ? rd_s[1] / ld_s[1] : 0);
    }
    if (L->cold && !L->view) {
        json_bool(j, "evicted", L->evicted);
        json_num(j, "read_cold_gbs", rd_s[0] > 0 ? (double)file_bytes / rd_s[0] * 1e-9 : 0);
        json_num(j, "load_cold_s", ld_s[0]);
        json_num(j, "load_over_read_cold", ld_s[0] > 0 ? rd_s[0] / ld_s[0] : 0);
    }
}

/* The summary line, and with --json one JSON line: the loader's wait and build times, the step
 * times of both modes, then the store's figures. */
static int lb_report(const lb_run_t *L, int json) {
    const mb_stats_t *st = L->st;
    const train_result_t *r = L->r;
    double wait_frac = st[0].step_s_total > 0 ? st[0].wait_s / st[0].step_s_total : 0;
    double build_per = st[1].steps ? st[1].build_s / (double)st[1].steps : 0;
    bench_say("bench loader: %s, %lld steps: wait %.2f%% of step time with prefetch; build %.4f s/batch; step %.4f s (prefetch) vs %.4f s (sync)\n",
            train_method_name(L->c.method), (long long)st[0].steps, 100 * wait_frac, build_per, r[0].step_time_s, r[1].step_time_s);
    if (!json) return INCA_OK;
    json_t *j = NULL;
    int rc = json_new(&j);
    if (rc != INCA_OK) return rc;
    json_str(j, "method", train_method_name(L->c.method));
    json_str(j, "device", L->devname);
    json_int(j, "nodes", L->d.n);
    json_int(j, "parts", L->p.k);
    json_int(j, "batch_parts", L->c.batch_parts);
    json_int(j, "steps", st[0].steps);
    json_num(j, "wait_fraction", wait_frac);
    json_num(j, "wait_s", st[0].wait_s);
    json_num(j, "step_time_s", r[0].step_time_s);
    json_num(j, "step_time_sync_s", r[1].step_time_s);
    json_num(j, "prefetch_speedup", r[0].step_time_s > 0 ? r[1].step_time_s / r[0].step_time_s : 0);
    json_num(j, "build_time_per_batch_s", build_per);
    json_num(j, "build_fraction_sync", st[1].step_s_total > 0 ? st[1].build_s / st[1].step_s_total : 0);
    json_int(j, "loader_bytes", st[0].loader_bytes);
    /* the store: dataset load (and partitioning lookup) vs a sequential read of data.mdb */
    lb_json_store(L, j);
    memstat_json(j);
    rc = json_write(j, stdout);
    json_free(&j);
    return rc;
}

int bench_loader(int argc, char **argv) {
    static const char *const known[] = {BENCH_MB_FLAGS, "--method", "--cold!", "--loader", "--memory-budget", NULL};
    args_t *a = NULL;
    lb_run_t L;
    memset(&L, 0, sizeof L);
    L.evicted = 1;
    L.cold_resident = -1;
    dataset_init(&L.d);
    int rc = args_parse(argc, argv, known, &a);
    if (rc != INCA_OK) return rc;
    /* cold (pages evicted first) then warm: the plain read of data.mdb, then the dataset load
     * from it (or the view loader's pass); the cold load is timed and dropped, the warm one trains */
    if ((rc = lb_config(&L, a)) == INCA_OK && (rc = L.view ? lb_view_passes(&L) : lb_load(&L)) == INCA_OK &&
        (rc = lb_train(&L)) == INCA_OK)
        rc = lb_report(&L, args_has(a, "--json"));
    kc_free(&L.kc);
    store_close(&L.vs);
    mb_stats_free(&L.st[0]);
    mb_stats_free(&L.st[1]);
    partition_free(&L.p);
    dataset_free(&L.d);
    args_free(&a);
    return rc;
}
