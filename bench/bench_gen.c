/* inca bench gen [--nodes N --avg-degree D --features F --classes C --seed S --threads T
 *   --out DIR --keep]: generate an R-MAT graph (default 2M nodes, avg degree 50, ~100M sampled
 * directed edges), save it as a store, reopen it and stream its column array back, and print one
 * JSON object: counts, seconds per stage, peak RSS, store bytes, edges/s, and a memcpy baseline
 * measured in the same process to read the store write/read rates against. Not a test (speed is
 * never asserted); the generator's correctness is in tests/test_gen.c. */
#include "bench/bench.h"
#include "bench/bench_progress.h"
#include "core/args.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/gen.h"
#include "loaders/dataset.h"
#include "loaders/store.h"
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define BENCH_GEN_COPY_BYTES ((size_t)64 << 20)

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

/* CPU seconds (user + system) of this process so far: on a shared, oversubscribed machine the
 * wall clock mostly measures the neighbours, CPU time less so. */
static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* memcpy of a 64 MiB buffer, best of 5 after a warm-up, in GB/s (bytes copied / s). */
static int copy_baseline(double *gbs) {
    char *a = inca_malloc(BENCH_GEN_COPY_BYTES), *b = inca_malloc(BENCH_GEN_COPY_BYTES);
    if (!a || !b) { inca_free(a); inca_free(b); return INCA_ENOMEM; }
    memset(a, 1, BENCH_GEN_COPY_BYTES);
    memset(b, 2, BENCH_GEN_COPY_BYTES);
    double best = 1e30;
    for (int r = 0; r < 6; r++) {
        double t0 = inca_now();
        memcpy(b, a, BENCH_GEN_COPY_BYTES);
        double t = inca_now() - t0;
        if (r > 0 && t < best) best = t;
        a[r] = b[BENCH_GEN_COPY_BYTES - 1 - (size_t)r];   /* keep the copies observable */
    }
    *gbs = (double)BENCH_GEN_COPY_BYTES / best / 1e9;
    inca_free(a);
    inca_free(b);
    return INCA_OK;
}

/* Sum of all column ids, walking the stored "col" array chunk by chunk (zero-copy views). */
static int store_col_sum(store_t *s, uint64_t *sum, int64_t *count) {
    store_array_info_t info;
    int rc = store_array_info(s, "col", &info);
    if (rc != INCA_OK) return rc;
    uint64_t acc = 0;
    int64_t total = 0;
    for (int64_t c = 0; c < info.nchunks; c++) {
        const void *p;
        int64_t k;
        if ((rc = store_array_chunk(s, "col", c, &p, &k)) != INCA_OK) return rc;
        const int32_t *col = p;
        for (int64_t i = 0; i < k; i++) acc += (uint64_t)col[i];
        total += k;
    }
    *sum = acc;
    *count = total;
    return INCA_OK;
}

/* What one run measured, for its JSON line. */
typedef struct bench_gen_figures {
    gen_stats_t st;
    int64_t nnz, bytes;                           /* stored edges, the store's bytes on disk */
    double build_s, write_s, read_s;              /* wall clock: generate, save, reread the column array */
    double cpu_gen_s, cpu_write_s;                /* CPU seconds of the first two */
    double rss_gen, rss_all, anon_mb, file_mb;    /* peaks after generating and after rereading */
    double copy_gbs;                              /* the memcpy baseline */
} bench_gen_figures_t;

/* The generator's options from the flags (and --threads set), checked for R-MAT. */
static int bench_gen_opts(const args_t *a, gen_opts_t *o) {
    int64_t v;
    int rc;
    if ((rc = args_int(a, "--nodes", 2000000, &o->nodes)) != INCA_OK) return rc;
    if ((rc = args_double(a, "--avg-degree", 50.0, &o->avg_degree)) != INCA_OK) return rc;
    if ((rc = args_int(a, "--features", 16, &o->features)) != INCA_OK) return rc;
    if ((rc = args_int(a, "--classes", 8, &v)) != INCA_OK) return rc;
    if (v < 0 || v > INT32_MAX) return inca_fail(INCA_EINVAL, "--classes %lld out of range", (long long)v);
    o->classes = (int32_t)v;
    if ((rc = args_int(a, "--seed", 0, &v)) != INCA_OK) return rc;
    o->seed = (uint64_t)v;
    if ((rc = args_int(a, "--threads", 0, &v)) != INCA_OK) return rc;
    if (v < 0 || v > 4096) return inca_fail(INCA_EINVAL, "--threads %lld, expected 0 (all) .. 4096", (long long)v);
    inca_set_threads((int)v);
    return gen_opts_check(o, "rmat");
}

/* Reopens the store at path and checks it holds what was written (o's nodes, nnz column ids
 * summing to sum_mem); *read_s: the column walk's seconds, *bytes: the store's size on disk. */
static int bench_gen_reread(const char *path, const gen_opts_t *o, int64_t nnz, uint64_t sum_mem, double *read_s,
                            int64_t *bytes) {
    store_t *s = NULL;
    int64_t stored = 0;
    uint64_t sum_disk = 0;
    int rc;
    if ((rc = store_open(path, STORE_RDONLY, &s)) != INCA_OK) goto done;
    const store_meta_t *m = store_meta(s);
    if (!m || m->nodes != o->nodes || m->edges != nnz) {
        rc = inca_fail(INCA_ERR, "reopened store %s holds %lld nodes / %lld edges, wrote %lld / %lld",
                       path, m ? (long long)m->nodes : -1LL, m ? (long long)m->edges : -1LL,
                       (long long)o->nodes, (long long)nnz);
        goto done;
    }
    double t3 = inca_now();
    if ((rc = store_col_sum(s, &sum_disk, &stored)) != INCA_OK) goto done;
    double t4 = inca_now();
    if (stored != nnz || sum_disk != sum_mem) {
        rc = inca_fail(INCA_ERR, "stored column array differs (%lld ids, checksum %llu; wrote %lld, %llu)",
                       (long long)stored, (unsigned long long)sum_disk, (long long)nnz, (unsigned long long)sum_mem);
        goto done;
    }
    *read_s = t4 - t3;
    *bytes = store_disk_bytes(s);
done:
    store_close(&s);
    return rc;
}

/* The result line on stdout; store: the kept store's path or "(removed)". */
static int bench_gen_json(const gen_opts_t *o, const bench_gen_figures_t *f, const char *store) {
    json_t *j = NULL;
    int rc = json_new(&j);
    if (rc != INCA_OK) return rc;
    const int64_t nnz = f->nnz, bytes = f->bytes;
    const double write_s = f->write_s, read_s = f->read_s, build_s = f->build_s, copy_gbs = f->copy_gbs;
    double col_bytes = (double)nnz * 4.0;
    json_str(j, "bench", "gen");
    json_str(j, "kind", "rmat");
    json_int(j, "nodes", o->nodes);
    json_int(j, "sampled_edges", f->st.sampled_edges);
    json_int(j, "edges", nnz);
    json_int(j, "features", o->features);
    json_int(j, "classes", o->classes);
    json_int(j, "threads", inca_threads());
    json_num(j, "gen_s", f->st.edges_s);
    json_num(j, "csr_s", f->st.csr_s);
    json_num(j, "attr_s", f->st.attr_s);
    json_num(j, "write_s", write_s);
    json_num(j, "reopen_read_col_s", read_s);
    json_num(j, "total_s", build_s + write_s);
    json_num(j, "edges_per_s", (double)nnz / (build_s + write_s));
    json_num(j, "sampled_edges_per_s_gen", (double)f->st.sampled_edges / f->st.edges_s);
    json_num(j, "cpu_gen_csr_attr_s", f->cpu_gen_s);
    json_num(j, "cpu_write_s", f->cpu_write_s);
    json_num(j, "peak_rss_mb_gen", f->rss_gen);
    json_num(j, "peak_rss_mb", f->rss_all);
    json_num(j, "peak_rss_anon_mb", f->anon_mb);
    json_num(j, "peak_rss_file_mb", f->file_mb);
    json_int(j, "store_bytes", bytes);
    json_num(j, "memcpy_gbs", copy_gbs);
    json_num(j, "store_write_gbs", (double)bytes / write_s / 1e9);
    json_num(j, "store_write_vs_memcpy", (double)bytes / write_s / 1e9 / copy_gbs);
    json_num(j, "col_read_gbs", col_bytes / read_s / 1e9);
    json_num(j, "col_read_vs_memcpy", col_bytes / read_s / 1e9 / copy_gbs);
    json_str(j, "store", store);
    rc = json_write(j, stdout);
    json_free(&j);
    return rc;
}

int bench_gen(int argc, char **argv) {
    static const char *const flags[] = {"--nodes", "--avg-degree", "--features", "--classes", "--seed",
                                        "--threads", "--out", "--keep!", "--quiet!", "--json!", NULL};   /* --json: the
                                        output is JSON either way (the help names it) */
    args_t *a = NULL;
    dataset_t d;
    gen_opts_t o;
    bench_gen_figures_t f;
    char path[4096];
    uint64_t sum_mem = 0;
    int made = 0;
    memset(&f, 0, sizeof f);
    dataset_init(&d);
    gen_opts_default(&o);
    int rc = args_parse(argc, argv, flags, &a);
    if (rc != INCA_OK) return rc;
    if ((rc = bench_gen_opts(a, &o)) != INCA_OK) goto done;
    const char *tmp = getenv("TMPDIR");
    const char *dir = args_str(a, "--out", tmp && *tmp ? tmp : "/tmp");
    snprintf(path, sizeof path, "%s/inca-bench-gen-%ld", dir, (long)getpid());

    double c0 = cpu_seconds(), t0 = inca_now();
    bench_progress_stage("generating %lld nodes", (long long)o.nodes);
    if ((rc = gen_rmat(&o, &d, &f.st)) != INCA_OK) goto done;
    double t1 = inca_now(), c1 = cpu_seconds();
    f.nnz = d.adj.nnz;
    for (int64_t i = 0; i < f.nnz; i++) sum_mem += (uint64_t)d.adj.col[i];
    f.rss_gen = inca_peak_rss_mb();
    bench_progress_stage("saving %s", path);
    if ((rc = dataset_save(&d, path, 0)) != INCA_OK) goto done;
    made = 1;
    double t2 = inca_now(), c2 = cpu_seconds();
    dataset_free(&d);
    f.build_s = t1 - t0;
    f.write_s = t2 - t1;
    f.cpu_gen_s = c1 - c0;
    f.cpu_write_s = c2 - c1;

    if ((rc = bench_gen_reread(path, &o, f.nnz, sum_mem, &f.read_s, &f.bytes)) != INCA_OK) goto done;
    /* the peaks are the generator's and the store's: taken before the memcpy baseline, whose two
     * 64 MiB buffers would stay in them (they never go back down) */
    f.rss_all = inca_peak_rss_mb();
    memstat_sample();
    memstat_peaks(&f.anon_mb, &f.file_mb);
    if ((rc = copy_baseline(&f.copy_gbs)) != INCA_OK) goto done;
    rc = bench_gen_json(&o, &f, args_has(a, "--keep") ? path : "(removed)");

done:
    if (made && !args_has(a, "--keep")) nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    dataset_free(&d);
    args_free(&a);
    return rc;
}
