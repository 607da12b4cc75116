/* `inca ingest --format ogb|edgelist|metis|idx|csv SRC --out STORE [--split NAME] [--symmetrize]
 * [--self-loops] [--labels FILE] [--features FILE] [--force] [--json]`: parse with loaders/ingest,
 * save atomically with dataset_save. Progress goes to stderr only when it is a terminal.
 * Tested by tests/test_e2e_ingest.c (Cora, Facebook, Fashion-MNIST, tests/data/bad/). */
#include "core/alloc.h"
#include "core/args.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/info.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/dataset.h"
#include "loaders/ingest.h"
#include "loaders/store.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* rows read per stage, and their rate since the stage began */
typedef struct ingest_pg {
    cli_progress_t p;
    char stage[32];
    double t0;
} ingest_pg_t;

static void ingest_progress_line(void *ctx, const char *stage, int64_t done, int64_t total) {
    ingest_pg_t *g = ctx;
    const double now = inca_now();
    if (strncmp(g->stage, stage, sizeof g->stage - 1) != 0) {
        snprintf(g->stage, sizeof g->stage, "%s", stage);
        g->t0 = now;
    }
    const double rate = now > g->t0 ? (double)done / (now - g->t0) : 0;
    if (total > 0)
        cli_progress(&g->p, 0, "%s %lld / %lld rows (%.0f%%), %.0f rows/s", stage, (long long)done, (long long)total,
                     100.0 * (double)done / (double)total, rate);
    else
        cli_progress(&g->p, 0, "%s %lld rows, %.0f rows/s", stage, (long long)done, rate);
}

/* The flags checked against each other and --out before a long read; *force: --force. */
static int ingest_flags_check(const args_t *a, const char *fmt, ingest_format_t f, const char *out, int *force) {
    if (args_npos(a) != 1)
        return inca_fail(INCA_EINVAL, "expected exactly one SRC (file or folder), got %d", args_npos(a));
    if (!out) return inca_fail(INCA_EINVAL, "--out STORE is required");
    *force = args_has(a, "--force");
    struct stat st;
    if (!*force && stat(out, &st) == 0)   /* fail before parsing a large input */
        return inca_fail(INCA_EINVAL, "--out %s: already exists (use --force to replace it)", out);
    int rc = dataset_out_replaceable(out);
    if (rc != INCA_OK) return rc;
    if ((args_has(a, "--labels") || args_has(a, "--features")) && f != INGEST_EDGELIST)
        return inca_fail(INCA_EINVAL, "--labels/--features: only for --format edgelist");
    if ((args_has(a, "--symmetrize") || args_has(a, "--self-loops")) && (f == INGEST_IDX || f == INGEST_CSV))
        return inca_fail(INCA_EINVAL, "--symmetrize/--self-loops: --format %s has no graph", fmt);
    if (args_has(a, "--split") && f != INGEST_OGB)
        return inca_fail(INCA_EINVAL, "--split: only for --format ogb");
    return inca_out_check(out);   /* a missing --out folder, before a long read */
}

/* Nodes in no stored edge, either end: ids an edge list's side file names beyond the edges'
 * (a typo in a label file added them silently), or a METIS file's empty lines; 0 without a
 * graph, -1 when the scratch cannot be allocated. */
static int64_t isolated_nodes(const dataset_t *d) {
    if (!d->adj.rowptr || d->n == 0) return 0;
    unsigned char *in = inca_calloc((size_t)d->n, 1);
    if (!in) return -1;
    for (int64_t j = 0; j < d->adj.nnz; j++) in[d->adj.col[j]] = 1;
    int64_t k = 0;
    for (int64_t i = 0; i < d->n; i++) k += !in[i] && d->adj.rowptr[i + 1] == d->adj.rowptr[i];
    inca_free(in);
    return k;
}

/* The --json result: the written store as inca info sees it, with the format and the times. */
static int ingest_print_json(const char *out, ingest_format_t f, double secs, int64_t isolated) {
    json_t *j = NULL;
    store_t *st_ = NULL;
    int rc;
    if ((rc = store_open(out, STORE_RDONLY, &st_))) return rc;
    rc = json_new(&j);
    if (!rc) rc = info_add_json(st_, j);
    store_close(&st_);
    if (!rc) {
        json_str(j, "format", ingest_format_name(f));
        if (isolated >= 0) json_int(j, "isolated_nodes", isolated);
        else json_null(j, "isolated_nodes");
        json_num(j, "seconds", secs);
        json_num(j, "peak_rss_mb", inca_peak_rss_mb());
        memstat_json(j);
        rc = json_write(j, stdout);
    }
    json_free(&j);
    return rc;
}

int cmd_ingest(int argc, char **argv) {
    static const char *const known[] = {"--format", "--out", "--split", "--labels", "--features",
                                        "--symmetrize!", "--self-loops!", "--force!", "--json!", "--quiet!", NULL};
    args_t *a = NULL;
    dataset_t d;
    dataset_init(&d);
    int rc = args_parse(argc, argv, known, &a);
    if (rc) return rc;
    double t0 = inca_now();
    ingest_pg_t g = {.stage = ""};
    cli_progress_t *pg = &g.p;
    cli_progress_init(pg, "ingest", args_has(a, "--quiet"));
    const char *fmt = args_str(a, "--format", NULL);
    const char *out = args_str(a, "--out", NULL);
    ingest_format_t f;
    int force = 0;
    if (!fmt) { rc = inca_fail(INCA_EINVAL, "--format ogb|edgelist|metis|idx|csv is required"); goto done; }
    if ((rc = ingest_format_parse(fmt, &f))) goto done;
    if ((rc = ingest_flags_check(a, fmt, f, out, &force))) goto done;
    ingest_opts_t o = {0};
    o.flags = (args_has(a, "--symmetrize") ? INGEST_SYMMETRIZE : 0u) |
              (args_has(a, "--self-loops") ? INGEST_SELF_LOOPS : 0u);
    o.split = args_str(a, "--split", NULL);
    o.labels = args_str(a, "--labels", NULL);
    o.features = args_str(a, "--features", NULL);
    o.progress = ingest_progress_line;
    o.progress_ctx = &g;
    cli_progress(pg, 1, "reading %s", args_pos(a, 0));
    rc = ingest_run(f, args_pos(a, 0), &o, &d);
    if (rc == INCA_OK) cli_progress(pg, 1, "writing %s", out);
    if (rc == INCA_OK) rc = dataset_save(&d, out, force);
    cli_progress_end(pg);
    if (rc) goto done;
    double secs = inca_now() - t0;
    const int64_t iso = isolated_nodes(&d);
    if (args_has(a, "--json")) {
        rc = ingest_print_json(out, f, secs, iso);
    } else {
        char extra[96] = "";
        if (iso > 0) snprintf(extra, sizeof extra, " (%lld in no edge)", (long long)iso);
        printf("ingested %s %s -> %s: %lld nodes%s, %lld edges, %lld features, %d classes, splits %lld/%lld/%lld%s, "
               "%.2f s\n", ingest_format_name(f), args_pos(a, 0), out, (long long)d.n, extra, (long long)d.adj.nnz,
               (long long)d.f, d.c, (long long)d.split_n[0], (long long)d.split_n[1], (long long)d.split_n[2],
               d.c > 0 && d.split_n[0] == 0 ? " (none stored: train --split random:TR,VA,TE)" : "", secs);
    }
done:
    dataset_free(&d);
    args_free(&a);
    return rc;
}
