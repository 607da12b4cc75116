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

int bench_loader(int argc, char **argv) {
    static const char *const known[] = {BENCH_MB_FLAGS, "--method", "--cold!", "--loader", "--memory-budget", NULL};
    args_t *a = NULL;
    dataset_t d;
    partition_t p = {0};
    train_config_t c;
    json_t *j = NULL;
    mb_stats_t st[2] = {0};   /* 0: prefetch thread, 1: synchronous */
    kern_ctx_t *kc = NULL;
    store_t *vs = NULL;   /* the views' store (--loader view) */
    char devname[16] = "";
    dataset_init(&d);
    int rc = args_parse(argc, argv, known, &a), reused = 0, method;
    if (rc != INCA_OK) return rc;
    if (args_npos(a) != 1) { rc = inca_fail(INCA_EINVAL, "expected one STORE argument"); goto done; }
    if ((rc = bench_mb_config(a, &c)) != INCA_OK) goto done;
    snprintf(c.method, sizeof c.method, "%s", args_str(a, "--method", "gas"));
    if ((rc = agg_method_parse(c.method, &method)) != INCA_OK) goto done;
    if ((rc = train_device_open(&c, &kc, devname, sizeof devname)) != INCA_OK) goto done;
    c.kc = kc;
    /* cold (pages evicted first) then warm: the plain read of data.mdb, then the dataset load
     * from it; the cold load is timed and dropped, the warm one trains */
    const char *store = args_pos(a, 0);
    const int cold = args_has(a, "--cold");
    double rd_s[2] = {0, 0}, ld_s[2] = {0, 0}, t0;
    int64_t file_bytes = 0;
    int evicted = 1;
    layout_views_t views;
    double open_s = 0, pass_s[2] = {0, 0}, cold_resident = -1;
    int64_t pass_batches = 0, pass_bytes = 0;
    if ((rc = train_loader_parse(args_str(a, "--loader", "auto"), &c.loader)) != INCA_OK) goto done;
    if (args_has(a, "--memory-budget") && (rc = train_size_parse(args_str(a, "--memory-budget", ""), &c.memory_budget))) goto done;
    c.store_path = store;
    {
        store_t *s0 = NULL;
        if ((rc = store_open(store, STORE_RDONLY, &s0)) != INCA_OK) goto done;
        c.loader = train_loader_resolve(&c, store_meta(s0)->nodes, store_meta(s0)->features);
        store_close(&s0);
    }
    const int view = c.loader == TRAIN_LOADER_VIEW;
    if (view) {   /* nothing loaded: the layout's views, then the loader alone, cold and warm */
        if ((rc = dataset_load_ex(store, DATASET_NO_X | DATASET_NO_GRAPH, &d)) != INCA_OK) goto done;
        if ((rc = train_partition(&d, &c, &p, &reused)) != INCA_OK) goto done;
        t0 = inca_now();
        if ((rc = train_view_open(&d, &c, &p, &vs, &views)) != INCA_OK) goto done;
        open_s = inca_now() - t0;
        for (int w = cold ? 0 : 1; w < 2; w++) {
            if (w == 0) {
                unmap_views(&views);
                evicted &= evict(store);
            }
            if ((rc = seq_read(store, &rd_s[w], &file_bytes)) != INCA_OK) goto done;
            if (w == 0) {
                evicted &= evict(store);
                cold_resident = resident(views.x, views.n * views.f * 4);
            }
            if ((rc = loader_pass(&views, &p, &c, method == AGG_INCAGG, &pass_s[w], &pass_batches, &pass_bytes))) goto done;
        }
    }
    if (cold && !view) {
        evicted &= evict(store);
        if ((rc = seq_read(store, &rd_s[0], &file_bytes)) != INCA_OK) goto done;
        evicted &= evict(store);
        t0 = inca_now();
        if ((rc = bench_mb_load(store, &c, &d, &p, &reused)) != INCA_OK) goto done;
        ld_s[0] = inca_now() - t0;
        dataset_free(&d);
        partition_free(&p);
        dataset_init(&d);
    }
    if (!view) {
        if ((rc = seq_read(store, &rd_s[1], &file_bytes)) != INCA_OK) goto done;
        t0 = inca_now();
        if ((rc = bench_mb_load(store, &c, &d, &p, &reused)) != INCA_OK) goto done;
        ld_s[1] = inca_now() - t0;
    }
    train_result_t r[2];
    for (int mode = 0; mode < 2; mode++) {   /* 0: prefetch thread, 1: synchronous */
        mb_opts_t o;
        mb_opts_default(&o);
        o.eval_every_epoch = 0;
        o.prefetch = mode == 0;
        o.view = view ? &views : NULL;
        bench_progress_stage("%s, %s loader", c.method, mode == 0 ? "prefetching" : "synchronous");
        if ((rc = mb_train(&d, &c, d.split[SPLIT_TRAIN], d.split_n[SPLIT_TRAIN], 0, &p, &o, &r[mode], &st[mode])) != INCA_OK) goto done;
    }
    double wait_frac = st[0].step_s_total > 0 ? st[0].wait_s / st[0].step_s_total : 0;
    double build_per = st[1].steps ? st[1].build_s / (double)st[1].steps : 0;
    bench_say("bench loader: %s, %lld steps: wait %.2f%% of step time with prefetch; build %.4f s/batch; step %.4f s (prefetch) vs %.4f s (sync)\n",
            c.method, (long long)st[0].steps, 100 * wait_frac, build_per, r[0].step_time_s, r[1].step_time_s);
    if (args_has(a, "--json")) {
        if ((rc = json_new(&j)) != INCA_OK) goto done;
        json_str(j, "method", c.method);
        json_str(j, "device", devname);
        json_int(j, "nodes", d.n);
        json_int(j, "parts", p.k);
        json_int(j, "batch_parts", c.batch_parts);
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
        json_int(j, "store_bytes", file_bytes);
        json_str(j, "loader", view ? "view" : "copy");
        json_num(j, "read_warm_gbs", rd_s[1] > 0 ? (double)file_bytes / rd_s[1] * 1e-9 : 0);
        if (view) {   /* the loader alone over one epoch vs the sequential read, warm (and cold) */
            json_num(j, "views_open_s", open_s);
            json_int(j, "pass_batches", pass_batches);
            json_int(j, "pass_bytes", pass_bytes);
            for (int w = cold ? 0 : 1; w < 2; w++) {
                const char *k = w ? "warm" : "cold";
                char key[48];
                const double gbs = pass_s[w] > 0 ? (double)pass_bytes / pass_s[w] * 1e-9 : 0;
                const double rgbs = rd_s[w] > 0 ? (double)file_bytes / rd_s[w] * 1e-9 : 0;
                snprintf(key, sizeof key, "loader_%s_batches_per_s", k);
                json_num(j, key, pass_s[w] > 0 ? (double)pass_batches / pass_s[w] : 0);
                snprintf(key, sizeof key, "loader_%s_gbs", k);
                json_num(j, key, gbs);
                snprintf(key, sizeof key, "loader_over_read_%s", k);
                json_num(j, key, rgbs > 0 ? gbs / rgbs : 0);
            }
            if (cold) {
                json_bool(j, "evicted", evicted);
                json_num(j, "cold_resident_fraction", cold_resident);   /* of the features' pages, after eviction */
                json_num(j, "read_cold_gbs", rd_s[0] > 0 ? (double)file_bytes / rd_s[0] * 1e-9 : 0);
            }
            json_int(j, "spilled_bytes", st[0].spilled_bytes);
        } else {
        json_num(j, "load_warm_s", ld_s[1]);
        json_num(j, "load_over_read_warm", ld_s[1] > 0 ? rd_s[1] / ld_s[1] : 0);
        }
        if (cold && !view) {
            json_bool(j, "evicted", evicted);
            json_num(j, "read_cold_gbs", rd_s[0] > 0 ? (double)file_bytes / rd_s[0] * 1e-9 : 0);
            json_num(j, "load_cold_s", ld_s[0]);
            json_num(j, "load_over_read_cold", ld_s[0] > 0 ? rd_s[0] / ld_s[0] : 0);
        }
        memstat_json(j);
        rc = json_write(j, stdout);
    }
done:
    kc_free(&kc);
    store_close(&vs);
    mb_stats_free(&st[0]);
    mb_stats_free(&st[1]);
    json_free(&j);
    partition_free(&p);
    dataset_free(&d);
    args_free(&a);
    return rc;
}
