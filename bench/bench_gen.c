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

int bench_gen(int argc, char **argv) {
    static const char *const flags[] = {"--nodes", "--avg-degree", "--features", "--classes", "--seed",
                                        "--threads", "--out", "--keep!", "--quiet!", "--json!", NULL};   /* --json: the
                                        output is JSON either way (the help names it) */
    args_t *a = NULL;
    json_t *j = NULL;
    store_t *s = NULL;
    dataset_t d;
    gen_opts_t o;
    gen_stats_t st = {0, 0, 0, 0};
    char path[4096];
    int64_t v, nnz = 0, stored = 0;
    uint64_t sum_mem = 0, sum_disk = 0;
    int made = 0;
    dataset_init(&d);
    gen_opts_default(&o);
    int rc = args_parse(argc, argv, flags, &a);
    if (rc != INCA_OK) return rc;
    if ((rc = args_int(a, "--nodes", 2000000, &o.nodes)) != INCA_OK) goto done;
    if ((rc = args_double(a, "--avg-degree", 50.0, &o.avg_degree)) != INCA_OK) goto done;
    if ((rc = args_int(a, "--features", 16, &o.features)) != INCA_OK) goto done;
    if ((rc = args_int(a, "--classes", 8, &v)) != INCA_OK) goto done;
    if (v < 0 || v > INT32_MAX) { rc = inca_fail(INCA_EINVAL, "--classes %lld out of range", (long long)v); goto done; }
    o.classes = (int32_t)v;
    if ((rc = args_int(a, "--seed", 0, &v)) != INCA_OK) goto done;
    o.seed = (uint64_t)v;
    if ((rc = args_int(a, "--threads", 0, &v)) != INCA_OK) goto done;
    if (v < 0 || v > 4096) { rc = inca_fail(INCA_EINVAL, "--threads %lld, expected 0 (all) .. 4096", (long long)v); goto done; }
    inca_set_threads((int)v);
    if ((rc = gen_opts_check(&o, "rmat")) != INCA_OK) goto done;
    const char *tmp = getenv("TMPDIR");
    const char *dir = args_str(a, "--out", tmp && *tmp ? tmp : "/tmp");
    snprintf(path, sizeof path, "%s/inca-bench-gen-%ld", dir, (long)getpid());

    double copy_gbs = 0;
    double c0 = cpu_seconds(), t0 = inca_now();
    bench_progress_stage("generating %lld nodes", (long long)o.nodes);
    if ((rc = gen_rmat(&o, &d, &st)) != INCA_OK) goto done;
    double t1 = inca_now(), c1 = cpu_seconds();
    nnz = d.adj.nnz;
    for (int64_t i = 0; i < nnz; i++) sum_mem += (uint64_t)d.adj.col[i];
    double rss_gen = inca_peak_rss_mb();
    bench_progress_stage("saving %s", path);
    if ((rc = dataset_save(&d, path, 0)) != INCA_OK) goto done;
    made = 1;
    double t2 = inca_now(), c2 = cpu_seconds();
    dataset_free(&d);

    if ((rc = store_open(path, STORE_RDONLY, &s)) != INCA_OK) goto done;
    const store_meta_t *m = store_meta(s);
    if (!m || m->nodes != o.nodes || m->edges != nnz) {
        rc = inca_fail(INCA_ERR, "reopened store %s holds %lld nodes / %lld edges, wrote %lld / %lld",
                       path, m ? (long long)m->nodes : -1LL, m ? (long long)m->edges : -1LL,
                       (long long)o.nodes, (long long)nnz);
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
    int64_t bytes = store_disk_bytes(s);
    store_close(&s);
    /* the peaks are the generator's and the store's: taken before the memcpy baseline, whose two
     * 64 MiB buffers would stay in them (they never go back down) */
    const double rss_all = inca_peak_rss_mb();
    double anon_mb = 0, file_mb = 0;
    memstat_sample();
    memstat_peaks(&anon_mb, &file_mb);
    if ((rc = copy_baseline(&copy_gbs)) != INCA_OK) goto done;

    double write_s = t2 - t1, read_s = t4 - t3, build_s = t1 - t0;
    double col_bytes = (double)nnz * 4.0;
    if ((rc = json_new(&j)) != INCA_OK) goto done;
    json_str(j, "bench", "gen");
    json_str(j, "kind", "rmat");
    json_int(j, "nodes", o.nodes);
    json_int(j, "sampled_edges", st.sampled_edges);
    json_int(j, "edges", nnz);
    json_int(j, "features", o.features);
    json_int(j, "classes", o.classes);
    json_int(j, "threads", inca_threads());
    json_num(j, "gen_s", st.edges_s);
    json_num(j, "csr_s", st.csr_s);
    json_num(j, "attr_s", st.attr_s);
    json_num(j, "write_s", write_s);
    json_num(j, "reopen_read_col_s", read_s);
    json_num(j, "total_s", build_s + write_s);
    json_num(j, "edges_per_s", (double)nnz / (build_s + write_s));
    json_num(j, "sampled_edges_per_s_gen", (double)st.sampled_edges / st.edges_s);
    json_num(j, "cpu_gen_csr_attr_s", c1 - c0);
    json_num(j, "cpu_write_s", c2 - c1);
    json_num(j, "peak_rss_mb_gen", rss_gen);
    json_num(j, "peak_rss_mb", rss_all);
    json_num(j, "peak_rss_anon_mb", anon_mb);
    json_num(j, "peak_rss_file_mb", file_mb);
    json_int(j, "store_bytes", bytes);
    json_num(j, "memcpy_gbs", copy_gbs);
    json_num(j, "store_write_gbs", (double)bytes / write_s / 1e9);
    json_num(j, "store_write_vs_memcpy", (double)bytes / write_s / 1e9 / copy_gbs);
    json_num(j, "col_read_gbs", col_bytes / read_s / 1e9);
    json_num(j, "col_read_vs_memcpy", col_bytes / read_s / 1e9 / copy_gbs);
    json_str(j, "store", args_has(a, "--keep") ? path : "(removed)");
    rc = json_write(j, stdout);

done:
    store_close(&s);
    if (made && !args_has(a, "--keep")) nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    json_free(&j);
    dataset_free(&d);
    args_free(&a);
    return rc;
}
