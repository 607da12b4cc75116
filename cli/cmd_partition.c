/* inca partition STORE --parts K [--method metis|lp|random|parmetis] [--ranks P] [--seed S]
 * [--feature-norm none|row|standard] [--m0 gcn|sage|none] [--history-dtype fp32|bf16]
 * [--no-layout] [--json]: compute (or reuse) a partitioning and store it (graph/partition.h;
 * ParMETIS over MPI ranks, graph/partition_par.h), then the partition-ordered layout the view
 * loader maps (nn/layout.h): the renumbered features for --feature-norm and IncAgg's M^0 for the
 * adjacency of --m0's model in --history-dtype. Prints name, edge cut and times.
 * Under MPI (parmetis only) every rank reads its slice of the graph and joins the partitioner;
 * rank 0 alone writes the store, the layout and the output.
 * Exercised end to end in test_partition.c and test_mpi.c. */
#include "core/args.h"
#include "cli/commands.h"
#include "cli/mpi_relaunch.h"
#include "cli/progress.h"
#include "core/comm.h"
#include "core/json.h"
#include "core/alloc.h"
#include "core/memstat.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/partition.h"
#include "loaders/partition_store.h"
#include "loaders/store.h"
#include "nn/layer.h"
#include "nn/layout.h"
#include "nn/model.h"
#include "nn/train.h"
#include <stdio.h>
#include <string.h>

typedef struct part_opts {
    int64_t k, seed, ranks;
    int method, featnorm, m0_kind;   /* m0_kind -1: no M^0 */
    hist_dtype_t hd;
} part_opts_t;

static int parse_opts(args_t *a, part_opts_t *o) {
    int rc;
    memset(o, 0, sizeof *o);
    if (args_npos(a) != 1) return inca_fail(INCA_EINVAL, "expected one STORE argument");
    if (!args_has(a, "--parts")) return inca_fail(INCA_EINVAL, "--parts K is required");
    if ((rc = args_int(a, "--parts", 0, &o->k)) || (rc = args_int(a, "--seed", 0, &o->seed)) ||
        (rc = args_int(a, "--ranks", 0, &o->ranks)))
        return rc;
    if (o->seed < 0) return inca_fail(INCA_EINVAL, "--seed: expected a non-negative integer");
    if ((rc = partition_method_parse(args_str(a, "--method", "metis"), &o->method)) != INCA_OK) return rc;
    if (args_has(a, "--ranks") && o->method != PART_PARMETIS)
        return inca_fail(INCA_EINVAL, "--ranks: only with --method parmetis (the MPI ranks it runs on), not %s",
                         partition_method_name(o->method));
    if (args_has(a, "--ranks") && o->ranks < 1)
        return inca_fail(INCA_EINVAL, "--ranks: expected a positive count, got %lld", (long long)o->ranks);
    o->m0_kind = NN_GCN;
    o->hd = HIST_F32;
    const char *m0s = args_str(a, "--m0", "gcn");
    if ((rc = args_word(a, "--feature-norm", "none", train_featnorm_words, 3, "none|row|standard", &o->featnorm))) return rc;
    if ((rc = hist_dtype_parse(args_str(a, "--history-dtype", "fp32"), &o->hd)) != INCA_OK) return rc;
    if (strcmp(m0s, "none") == 0) o->m0_kind = -1;
    else if (strcmp(m0s, "gcn") != 0 && strcmp(m0s, "sage") != 0)
        return inca_fail(INCA_EINVAL, "--m0: expected gcn, sage or none, got '%s'", m0s);
    else if ((rc = model_kind_parse(m0s, &o->m0_kind)) != INCA_OK) return rc;
    return INCA_OK;
}

/* ParMETIS runs only as an MPI job of --ranks (or the launcher's) processes */
static int check_ranks(const part_opts_t *o, comm_t *c) {
    const int P = comm_size(c);
    if (o->method != PART_PARMETIS) {
        if (P > 1) return inca_fail(INCA_EINVAL, "--method %s runs in one process; started as %d ranks (only parmetis runs "
                                    "as several)", partition_method_name(o->method), P);
        return INCA_OK;
    }
    if (!comm_launched())
        return inca_fail(INCA_EINVAL, "--method parmetis runs over MPI ranks: add --ranks P (or start it under mpirun -np P)");
    if (o->ranks > 0 && o->ranks != P)
        return inca_fail(INCA_EINVAL, "--ranks %lld, but started as %d ranks", (long long)o->ranks, P);
    return INCA_OK;
}

/* Every rank's peak anonymous memory so far (MiB), gathered to all */
static int rank_peaks(comm_t *c, double *all) {
    double anon = 0, file = 0;
    memstat_sample();
    memstat_peaks(&anon, &file);
    return comm_allgather(c, &anon, sizeof anon, all, COMM_SETUP);
}

static void print_human(const partition_t *p, int reused, int built, int featnorm, double layout_s) {
    fprintf(stderr, "partition %s: %lld parts of %lld..%lld nodes, edge cut %lld, %.3f s%s\n", p->man.name, (long long)p->k,
            (long long)p->man.min_part, (long long)p->man.max_part, (long long)p->man.edge_cut, p->man.seconds,
            reused ? " (reused)" : "");
    if (!built) return;
    char what[64] = "";
    static const char *const names[3] = {"features", "M^0", "adjacency"};
    for (int i = 0; i < 3; i++)
        if (built & (1 << i)) snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s", what[0] ? ", " : "", names[i]);
    fprintf(stderr, "layout of %s (feature norm %s): %s written, %.3f s\n", p->man.name, layout_featnorm_name(featnorm), what,
            layout_s);
}

static int print_json(const partition_t *p, int reused, int built, double layout_s, double total, const double *peaks, int P) {
    json_t *j = NULL;
    int rc = json_new(&j);
    if (rc != INCA_OK) return rc;
    json_str(j, "name", p->man.name);
    json_str(j, "method", p->man.method);
    json_int(j, "parts", p->k);
    json_int(j, "seed", (int64_t)p->man.seed);
    json_int(j, "nodes", p->n);
    json_int(j, "edge_cut", p->man.edge_cut);
    json_int(j, "min_part", p->man.min_part);
    json_int(j, "max_part", p->man.max_part);
    json_num(j, "balance", (double)p->man.max_part * (double)p->k / (double)(p->n > 0 ? p->n : 1));
    json_num(j, "partition_time_s", p->man.seconds);
    json_num(j, "total_time_s", total);
    json_bool(j, "reused", reused);
    json_bool(j, "layout_x_written", built & 1);
    json_bool(j, "layout_m0_written", (built & 2) != 0);
    json_bool(j, "layout_adj_written", (built & 4) != 0);
    json_num(j, "layout_time_s", layout_s);
    json_int(j, "ranks", P);
    json_arr_begin(j, "rank_peak_rss_anon_mb");   /* before the layout: the partitioner's own */
    for (int r = 0; r < P; r++) json_num(j, NULL, peaks[r]);
    json_arr_end(j);
    memstat_json(j);
    rc = json_write(j, stdout);
    json_free(&j);
    return rc;
}

/* lp's phases on the status line: "label propagation into K parts: refining (round 3 of at most 24)" */
typedef struct part_status {
    cli_progress_t *line;
    int64_t k;
} part_status_t;

static void show_phase(void *ctx, const char *phase, int64_t done, int64_t total) {
    const part_status_t *st = ctx;
    if (total > 0)
        cli_progress(st->line, 1, "label propagation into %lld parts: %s (round %lld of at most %lld)", (long long)st->k, phase,
                     (long long)done + 1, (long long)total);
    else cli_progress(st->line, 1, "label propagation into %lld parts: %s", (long long)st->k, phase);
}

/* The partitioning, computed or reused: in this process, or over the ranks of c (parmetis) */
static int get_partition(store_t *s, comm_t *c, const part_opts_t *o, cli_progress_t *line, partition_t *p, int *reused) {
    if (o->method == PART_PARMETIS) return store_partition_get_par(s, c, o->k, (uint64_t)o->seed, p, reused);
    part_status_t st = {line, o->k};
    const partition_progress_t pg = {show_phase, &st};
    /* the graph is read from the store only when something must be computed from it */
    return store_partition_get_pg(s, NULL, o->k, o->method, (uint64_t)o->seed, &pg, p, reused);
}

static int run(args_t *a, const part_opts_t *o, comm_t *c) {
    store_t *s = NULL;
    partition_t p = {0};
    const int P = comm_size(c), me = comm_rank(c), quiet = args_has(a, "--quiet") || me != 0;
    int reused = 0, built = 0;
    double *peaks = inca_calloc((size_t)P, sizeof *peaks);
    if (!peaks) return INCA_ENOMEM;
    /* rank 0 writes; the others only read their rows (every rank opens before anyone writes) */
    int rc = store_open(args_pos(a, 0), me == 0 ? STORE_RDWR_MAP : STORE_RDONLY, &s);
    if (rc == INCA_OK && P > 1) rc = comm_barrier(c);
    double t0 = inca_now();
    cli_progress_t pg;
    cli_progress_init(&pg, "partition", quiet);
    cli_progress(&pg, 1, "%s into %lld parts", o->method == PART_METIS ? "METIS" : o->method == PART_PARMETIS ? "ParMETIS" :
                 o->method == PART_LP ? "label propagation" : "random",
                 (long long)o->k);
    /* the store, where the message does not name it already: the refusals come from graph/ */
    if (rc == INCA_OK && (rc = get_partition(s, c, o, &pg, &p, &reused)) != INCA_OK &&
        strncmp(inca_errmsg(), args_pos(a, 0), strlen(args_pos(a, 0))) != 0)
        rc = inca_fail_ctx(rc, "%s", args_pos(a, 0));
    if (rc == INCA_OK) rc = rank_peaks(c, peaks);
    const double tl = inca_now();
    if (rc == INCA_OK && me == 0 && !args_has(a, "--no-layout") && store_meta(s)->features > 0) {
        cli_progress(&pg, 1, "writing the partition-ordered layout");
        const int norm = o->m0_kind >= 0 ? nn_kind_norm(o->m0_kind) : NN_NORM_GCN;
        if (args_has(a, "--rebuild-layout")) rc = layout_drop(s, &p, o->featnorm, o->m0_kind >= 0, norm, o->hd);
        if (rc == INCA_OK) rc = layout_ensure(s, &p, NULL, o->featnorm, o->m0_kind >= 0, norm, o->hd, 0, &built);
    }
    cli_progress_end(&pg);
    const double layout_s = inca_now() - tl, total = inca_now() - t0;
    if (rc == INCA_OK && !quiet) print_human(&p, reused, built, o->featnorm, layout_s);
    if (rc == INCA_OK && me == 0 && args_has(a, "--json")) rc = print_json(&p, reused, built, layout_s, total, peaks, P);
    inca_free(peaks);
    partition_free(&p);
    store_close(&s);
    return rc;
}

int cmd_partition(int argc, char **argv) {
    static const char *const known[] = {"--parts", "--method", "--ranks", "--seed", "--json!", "--feature-norm", "--m0",
                                        "--history-dtype", "--no-layout!", "--rebuild-layout!", "--quiet!", NULL};
    args_t *a = NULL;
    part_opts_t o;
    int rc = args_parse(argc, argv, known, &a);
    if (rc == INCA_OK) rc = parse_opts(a, &o);
    static const char *const layout_flags[] = {"--rebuild-layout", "--feature-norm", "--m0", "--history-dtype"};
    for (size_t i = 0; rc == INCA_OK && args_has(a, "--no-layout") && i < sizeof layout_flags / sizeof *layout_flags; i++)
        if (args_has(a, layout_flags[i]))   /* they shape the layout --no-layout skips */
            rc = inca_fail(INCA_EINVAL, "%s: shapes the partition-ordered layout, which --no-layout skips", layout_flags[i]);
    if (rc == INCA_OK && o.method == PART_PARMETIS && o.ranks > 0 && !comm_launched()) {
        /* what every rank would refuse alike is refused here, once, before the job starts */
        store_t *s = NULL;
        rc = store_open(args_pos(a, 0), STORE_RDONLY, &s);
        if (rc == INCA_OK && (o.k < 1 || o.k > store_meta(s)->nodes))
            rc = inca_fail(INCA_EINVAL, "--parts: %lld parts for %lld nodes (expected 1 to n)", (long long)o.k,
                           (long long)store_meta(s)->nodes);
        store_close(&s);
        if (rc == INCA_OK) rc = cli_mpi_relaunch("partition", NULL, argc, argv, (int)o.ranks);   /* returns only on failure */
    }
    if (rc == INCA_OK) rc = check_ranks(&o, cli_comm());
    if (rc == INCA_OK) rc = run(a, &o, cli_comm());
    args_free(&a);
    return rc;
}
