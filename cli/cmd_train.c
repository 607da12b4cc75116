/* inca train STORE --model M --method full|cluster|gas|incagg [...]: load the store, apply the
 * split / train-index overrides, run nn/train.h's train_run and print the result (one JSON
 * object with --json). Exercised end to end in tests/test_e2e_train.c and tests/test_train.c. */
#include "core/args.h"
#include "cli/commands.h"
#include "cli/mpi_relaunch.h"
#include "cli/train_flags.h"
#include "cli/progress.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/comm.h"
#include "core/util.h"
#include "core/alloc.h"
#include "core/status.h"
#include "loaders/dataset.h"
#include "loaders/store.h"
#include "graph/split.h"
#include "nn/shard.h"
#include "nn/train.h"
#include "nn/model.h"
#include "nn/layer.h"
#include "loaders/npy.h"
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* every rank's figures gathered to rank 0: bytes sent and seconds in MPI per phase, its epoch,
 * step, refresh and evaluation times, peak anonymous, file-backed and resident memory */
enum { NT = 4, NREC = 2 * COMM_NPHASES + NT + 3 };

/* 1 when --partition (none: METIS with seed 0) names another partitioning than the shards' */
static int shard_partition_differs(const train_config_t *c, const partition_t *sp) {
    int pm = PART_METIS, sm = -1, pranks = 0, sranks = 0;
    int64_t pk = 0, sk = 0;
    uint64_t pseed = 0, sseed = 0;
    if (c->partition[0] && partition_name_parse(c->partition, &pm, &pk, &pseed, &pranks) != INCA_OK) return 1;
    if (partition_name_parse(sp->man.name, &sm, &sk, &sseed, &sranks) != INCA_OK) return 1;
    return pm != sm || pseed != sseed || (pranks > 0 && pranks != sranks);
}

/* Why the shards cannot serve c (written into why: the flag, the shards' own value and the
 * remedy), or 0 when they can. */
static int shard_mismatch(const args_t *a, const train_config_t *c, const shard_t *sh, char *why, size_t cap) {
    const int norm = nn_kind_norm(c->model);
    if (c->loader == TRAIN_LOADER_COPY)
        snprintf(why, cap, "--loader copy: shards are read through the view loader (leave --loader out)");
    else if (c->method == TRAIN_FULL)
        snprintf(why, cap, "--method full: shards hold what the mini-batch methods read (cluster, gas, incagg); train "
                 "--method full on the store itself");
    else if (args_str(a, "--split", NULL) || args_str(a, "--train-indices", NULL))
        snprintf(why, cap, "%s: a shard holds its rank's share of the stored split; train on the store for another",
                 args_str(a, "--split", NULL) ? "--split" : "--train-indices");
    else if (c->parts != sh->p.k)
        snprintf(why, cap, "--parts %d: the shards hold %lld parts (give --parts %lld, or run inca shard again with "
                 "--parts %d)", c->parts, (long long)sh->p.k, (long long)sh->p.k, c->parts);
    else if (shard_partition_differs(c, &sh->p))
        snprintf(why, cap, "--partition %s: the shards hold %s (give --partition %s, or run inca shard again with "
                 "--partition %s)", c->partition[0] ? c->partition : "(the default, metis)", sh->p.man.name,
                 sh->p.man.name, c->partition[0] ? c->partition : "metis");
    else if (c->feature_norm != sh->featnorm)
        snprintf(why, cap, "--feature-norm %s: the shards were made with --feature-norm %s (give it, or run inca shard "
                 "again with --feature-norm %s)", train_featnorm_words[c->feature_norm], train_featnorm_words[sh->featnorm],
                 train_featnorm_words[c->feature_norm]);
    else if (norm != sh->norm)
        snprintf(why, cap, "--model %s: it reads the %s adjacency, the shards hold the %s one (run inca shard again "
                 "with --model %s)", model_kind_name(c->model), norm == NN_NORM_MEAN ? "mean (sage)" : "gcn-normalised",
                 sh->norm == NN_NORM_MEAN ? "mean (sage)" : "gcn-normalised", norm == NN_NORM_MEAN ? "sage" : "gcn");
    else if (c->method == TRAIN_INCAGG && sh->has_m0 && sh->v.m0_dtype != c->history_dtype)
        snprintf(why, cap, "--history-dtype %s: the shards' M^0 is %s (give it, or run inca shard again with "
                 "--history-dtype %s)", hist_dtype_words[c->history_dtype], hist_dtype_words[sh->v.m0_dtype],
                 hist_dtype_words[c->history_dtype]);
    else return 0;
    return 1;
}

/* STORE is a folder of per-rank shards (nn/shard.h): this rank's shard, refused when it was made
 * for another configuration; the dataset moves to *d and c trains on the shard's views. */
static int train_from_shard(const args_t *a, train_config_t *c, int me, int nranks, shard_t *sh, dataset_t *d) {
    int rc;
    if ((rc = shard_open(c->store_path, me, nranks, sh))) return rc;
    char why[512];
    const int bad = shard_mismatch(a, c, sh, why, sizeof why);
    /* one inca shard run's set: an interrupted run can leave some ranks' new beside others' old */
    int64_t job[2] = {sh->job, -sh->job};   /* every rank calls it, whatever its own verdict */
    if (nranks > 1 && (rc = comm_allreduce_max_i64(c->comm, job, 2, COMM_SETUP))) return rc;
    if (!bad && job[0] != -job[1])
        return inca_fail(INCA_EINVAL, "%s: the shards come from different inca shard runs (one was interrupted?): run "
                         "inca shard again", c->store_path);
    if (bad) return inca_fail(INCA_EINVAL, "%s: the shards were not made for %s", c->store_path, why);
    *d = sh->d;   /* the dataset moves to d */
    dataset_init(&sh->d);
    c->given_partition = &sh->p;
    c->given_views = &sh->v;
    c->given_plan = &sh->plan;
    c->loader = TRAIN_LOADER_VIEW;
    c->store_path = sh->path;
    return INCA_OK;
}

/* --train-indices `path` (ids[n]; lines: each id's line in a text file, NULL for a .npy) checked
 * against the split d trains under (after --split): an id of the validation or test split would
 * train on a node the run is then scored on, and an id listed twice would count twice; each is
 * refused naming the file and the first offending line (element for a .npy), as is an id
 * outside the store's nodes. */
static int train_indices_check(const char *path, const dataset_t *d, const int64_t *ids, int64_t n, const int64_t *lines) {
    if (n == 0 || d->n <= 0) return INCA_OK;
    /* per node: 0 not seen, k + 1 first listed at entry k; in[v]: 1 validation, 2 test */
    int64_t *first = inca_calloc((size_t)d->n, sizeof *first);
    unsigned char *in = inca_calloc((size_t)d->n, 1);
    if (!first || !in) {
        inca_free(first);
        inca_free(in);
        return INCA_ENOMEM;
    }
    for (int s = SPLIT_VALID; s <= SPLIT_TEST; s++)
        for (int64_t k = 0; d->split[s] && k < d->split_n[s]; k++)
            if (d->split[s][k] >= 0 && d->split[s][k] < d->n) in[d->split[s][k]] = (unsigned char)(s == SPLIT_VALID ? 1 : 2);
    int rc = INCA_OK;
    char at[64], at0[64];
    for (int64_t i = 0; i < n && rc == INCA_OK; i++) {
        const int64_t v = ids[i];
        if (lines) snprintf(at, sizeof at, "%" PRId64, lines[i]);
        else snprintf(at, sizeof at, " element %" PRId64, i);
        if (v < 0 || v >= d->n)
            rc = inca_fail(INCA_EINVAL, "%s:%s: node %" PRId64 " is outside the store's %" PRId64 " nodes [0, %" PRId64 ")",
                           path, at, v, d->n, d->n);
        else if (in[v])
            rc = inca_fail(INCA_EINVAL, "%s:%s: node %" PRId64 " is in the %s split (--train-indices must not train on "
                           "nodes it is scored on)", path, at, v, in[v] == 1 ? "validation" : "test");
        else if (first[v]) {
            const int64_t j = first[v] - 1;
            if (lines) snprintf(at0, sizeof at0, "line %" PRId64, lines[j]);
            else snprintf(at0, sizeof at0, "element %" PRId64, j);
            rc = inca_fail(INCA_EINVAL, "%s:%s: node %" PRId64 " listed twice (first at %s)", path, at, v, at0);
        } else first[v] = i + 1;
    }
    inca_free(first);
    inca_free(in);
    return rc;
}

/* This rank's record (rec[NREC]) and, with several ranks, every rank's (*recs, owned). */
static int train_rank_records(const train_config_t *c, const train_result_t *r, int nranks, double *rec, double **recs) {
    for (int ph = 0; ph < COMM_NPHASES; ph++) {
        rec[ph] = (double)r->comm_bytes[ph];
        rec[COMM_NPHASES + ph] = r->comm_s[ph];
    }
    const double times[NT] = {r->epoch_time_s, r->step_time_s, r->refresh_time_s, r->eval_time_s};
    memcpy(rec + 2 * COMM_NPHASES, times, sizeof times);
    memstat_peaks(&rec[NREC - 3], &rec[NREC - 2]);
    rec[NREC - 1] = inca_peak_rss_mb();
    *recs = NULL;
    if (nranks <= 1) return INCA_OK;
    if (!(*recs = inca_malloc(sizeof(double) * NREC * (size_t)nranks))) return INCA_ENOMEM;
    return comm_allgather(c->comm, rec, (int64_t)(sizeof(double) * NREC), *recs, COMM_SETUP);
}

/* per rank, the last run: its times, bytes sent and seconds in MPI by phase (core/comm.h), peak memory */
static void train_rank_stats_json(json_t *j, int nranks, const double *recs) {
    static const char *const tn[NT] = {"epoch_time_s", "step_time_s", "refresh_time_s", "eval_time_s"};
    json_arr_begin(j, "rank_stats");
    for (int q = 0; q < nranks; q++) {
        const double *x = recs + (size_t)q * NREC;
        json_obj_begin(j, NULL);
        json_int(j, "rank", q);
        for (int t = 0; t < NT; t++) json_num(j, tn[t], x[2 * COMM_NPHASES + t]);
        for (int ph = 0; ph < COMM_NPHASES; ph++) {
            char key[32];
            snprintf(key, sizeof key, "bytes_%s", comm_phase_name(ph));
            json_int(j, key, (int64_t)x[ph]);
            snprintf(key, sizeof key, "mpi_s_%s", comm_phase_name(ph));
            json_num(j, key, x[COMM_NPHASES + ph]);
        }
        json_num(j, "peak_rss_anon_mb", x[NREC - 3]);
        json_num(j, "peak_rss_file_mb", x[NREC - 2]);
        json_num(j, "peak_rss_mb", x[NREC - 1]);
        json_obj_end(j);
    }
    json_arr_end(j);
}

/* The method's own figures: IncAgg's refreshes, Cluster-GCN's normalisation, the tables and the
 * loader of every mini-batch method. */
static void train_method_json(json_t *j, const train_config_t *c, const train_result_t *r) {
    if (c->method != TRAIN_FULL) {
        json_str(j, "input_layer", train_input_layer_words[c->input_layer != 0]);
        /* transform-first's D: over x's nonzeros, or dense rows (--dense-input, dense features, view) */
        if (c->input_layer) json_str(j, "input_rows", r->input_sparse ? "sparse" : "dense");
    }
    if (c->method == TRAIN_INCAGG) {
        json_str(j, "refresh_source", agg_source_name(c->refresh_source));
        /* which path made the evaluation figures: "fused" evaluations are refresh passes, timed as
         * refreshes (refresh_time_s) and not in eval_time_s */
        json_str(j, "refresh_eval", train_refresh_eval_name(c));
        if (c->refresh_source == AGG_SRC_RECOMPUTE)
            json_str(j, "refresh_weights", train_refresh_weights_name(c));
        json_int(j, "refreshes", r->refreshes);
        json_int(j, "refreshes_fused_with_eval", r->fused);
    }
    if (c->method == TRAIN_CLUSTER) json_str(j, "cluster_norm", c->cluster_global_norm ? "global" : "batch");
    /* every method's (ARCHITECTURE.md lists the key): full-batch keeps no history tables */
    json_int(j, "table_bytes", c->method == TRAIN_FULL ? 0 : r->table_bytes);
    /* the partitioning by its stored name (config's "partition" is the flag as given: "" for
     * the default), null where none was used */
    if (r->partition[0]) {
        json_str(j, "partition", r->partition);
        json_int(j, "edge_cut", r->edge_cut);
    } else {
        json_null(j, "partition");
        json_null(j, "edge_cut");
    }
    if (c->method != TRAIN_FULL) {
        json_int(j, "scratch_bytes", r->scratch_bytes);
        json_str(j, "history_location", r->history_on_host ? "host" : "device");
        json_str(j, "features_location", r->features_on_host ? "host" : "device");
        json_str(j, "loader", r->loader);
        if (strcmp(r->loader, "view") == 0) json_str(j, "pass_dtype", hist_dtype_words[c->pass_dtype]);
        json_int(j, "spilled_bytes", r->spilled_bytes);
        if (c->memory_budget > 0) {   /* what the budget counted before the tables (README, --memory-budget) */
            json_int(j, "memory_baseline_bytes", r->memory_baseline_bytes);
            json_int(j, "memory_need_bytes", r->memory_need_bytes);
        }
        json_num(j, "loader_wait_s", r->loader_wait_s);   /* last run: waiting on the batch loader */
        json_num(j, "loader_wait_fraction", r->steps_s > 0 ? r->loader_wait_s / r->steps_s : 0);
    }
}

/* --memory-budget's plan leaves out OpenBLAS's packing buffers (each GEMM thread's, touched at its
 * first GEMM after the baseline: README, "Not counted"), so a budget near the least one named can
 * be exceeded by them; a run that did is not passed off as within it. This process's peak. */
static void train_budget_warn(const train_config_t *c) {
    double anon = 0, file = 0;
    memstat_peaks(&anon, &file);
    const double budget = (double)c->memory_budget / 1048576.0;
    if (c->memory_budget > 0 && anon > budget)
        fprintf(stderr, "train: warning: anonymous memory peaked at %.2f MB, %.2f MB over --memory-budget %.2f MB (what "
                "the budget does not count: OpenBLAS's per-thread buffers; README, \"Not counted\"): give %.0f MB more\n",
                anon, anon - budget, budget, ceil(anon - budget));
}

/* The data's kind (a store without a graph is a table) and the defaults it gave the flags not given. */
typedef struct train_kind { int table; char flags[256]; } train_kind_t;

/* After loading: a table takes its defaults for the flags not given (said once on stderr), then
 * --parts is checked against the nodes (a shard holds its rank's rows: not checked). */
static int train_on_loaded(const args_t *a, train_config_t *c, const dataset_t *d, int shard, train_kind_t *k) {
    k->table = !shard && !dataset_has_graph(d);
    cli_train_kind_defaults(a, c, !k->table, k->flags, sizeof k->flags);
    /* not before a refusal: a table with a graph model or method typed is refused by train_check */
    if (k->flags[0] && c->log && c->model == NN_MLP && c->method == TRAIN_FULL) {
        char line[512];
        snprintf(line, sizeof line, "train: %s is a table (no graph): defaults %s", c->store_path, k->flags);
        c->log(c->log_ctx, TRAIN_LOG_INFO, line);
    }
    return shard ? INCA_OK : cli_train_check_parts(a, c, d->n, d->f);
}

/* The result line of --json (the contract scripts read: ARCHITECTURE.md). */
static int train_result_json(const args_t *a, const train_config_t *c, const train_result_t *r, int64_t train_nodes,
                             int nranks, const double *recs, double majority, int near, const train_kind_t *kind) {
    json_t *j = NULL;
    int rc;
    if ((rc = json_new(&j))) return rc;
    json_num(j, "test_acc", r->test_acc);
    json_num(j, "test_acc_std", r->test_acc_std);
    json_num(j, "val_acc", r->val_acc);
    json_num(j, "val_acc_std", r->val_acc_std);
    json_str(j, "metric", train_metric_name(c->metric));   /* what picked the best epoch */
    json_num(j, "test_balanced_acc", r->test_bacc);          /* all at the best epochs, means over runs */
    json_num(j, "test_macro_f1", r->test_f1);
    json_num(j, "val_balanced_acc", r->val_bacc);
    json_num(j, "val_macro_f1", r->val_f1);
    /* what always answering the test split's largest class scores, and whether test_acc stays
     * near it (train_near_chance; null where this rank's shard does not hold the whole split) */
    if (near >= 0) {
        json_num(j, "test_majority_acc", majority);
        json_bool(j, "near_chance", near);
    } else {
        json_null(j, "test_majority_acc");
        json_null(j, "near_chance");
    }
    json_int(j, "best_epoch", r->best_epoch);
    json_int(j, "epochs", r->epochs);
    json_num(j, "epoch_time_s", r->epoch_time_s);
    json_num(j, "step_time_s", r->step_time_s);   /* one optimiser step */
    json_num(j, "train_time_per_epoch_s", r->step_time_s * (double)(r->steps_per_epoch > 0 ? r->steps_per_epoch : 1));
    json_num(j, "refresh_time_s", r->refresh_time_s);
    json_num(j, "eval_time_s", r->eval_time_s);
    json_num(j, "peak_rss_mb", r->peak_rss_mb);
    memstat_json(j);
    json_str(j, "method", train_method_name(c->method));
    json_int(j, "evaluations", r->evals);   /* last run: evaluations that ran alone (eval_time_s) */
    train_method_json(j, c, r);
    train_placement_json(j, &r->placement, c->method != TRAIN_FULL);
    json_str(j, "model", model_kind_name(c->model));
    /* the kind whose defaults the flags not given took, and which (cli_train_kind_defaults) */
    json_str(j, "defaults", kind->table ? "table" : "graph");
    json_str(j, "kind_defaults", kind->flags);
    json_str(j, "device", r->device);
    json_int(j, "runs", r->runs);
    json_int(j, "seed", (int64_t)c->seed);
    json_int(j, "threads", c->threads);
    /* how idle OpenMP threads wait (cli/main.c: passive unless the user set a policy) */
    json_str(j, "omp_wait_policy", getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "default");
    json_int(j, "train_nodes", train_nodes);
    json_int(j, "ranks", nranks);
    json_int(j, "parameters", r->nparams);
    json_int(j, "steps_per_epoch", r->steps_per_epoch);
    if (nranks > 1) train_rank_stats_json(j, nranks, recs);
    json_arr_begin(j, "run_test_acc");   /* per-run test accuracies */
    for (int i = 0; i < r->runs; i++) json_num(j, NULL, r->run_test_acc[i]);
    json_arr_end(j);
    cli_train_config_json(j, a, c);
    json_str(j, "version", cli_version());
    rc = json_write(j, stdout);
    json_free(&j);
    return rc;
}

/* The result as one text line ("-" for a split with no labelled row). */
static void train_result_text(const train_config_t *c, const train_result_t *r, const char *store, int nranks) {
    char ta[16], va[16];
    if (nranks > 1) printf("%d ranks: ", nranks);
    printf("%s %s on %s: test %s", model_kind_name(c->model), train_method_name(c->method), store,
           train_acc_text(ta, sizeof ta, r->test_acc));
    if (r->runs > 1 && !isnan(r->test_acc_std)) printf(" ± %.4f", r->test_acc_std);
    if (r->runs > 1) printf(" (%d runs)", r->runs);
    printf(", val %s, best epoch %d of %d, %.4f s/epoch\n", train_acc_text(va, sizeof va, r->val_acc), r->best_epoch,
           r->epochs, r->epoch_time_s);
}

int cmd_train(int argc, char **argv) {
    const char *const *known = cli_train_flags;
    args_t *a = NULL;
    dataset_t d;
    train_config_t c;
    train_result_t r;
    shard_t sh;
    int64_t *ids = NULL, nids = 0, *id_lines = NULL;
    double rec[NREC], *recs = NULL;
    dataset_init(&d);
    memset(&r, 0, sizeof r);
    memset(&sh, 0, sizeof sh);
    dataset_init(&sh.d);
    int rc = args_parse(argc, argv, known, &a);
    if (rc) return rc;
    if (args_npos(a) != 1) { rc = inca_fail(INCA_EINVAL, "expected exactly one STORE argument"); goto done; }
    cli_log_state_t ls = {.tty = isatty(STDERR_FILENO)};
    if ((rc = cli_train_config(a, &c, &ls)) || (rc = cli_train_check_effect(a, &c))) goto done;
    c.store_path = args_pos(a, 0);
    /* under mpirun every rank trains; rank 0 alone logs, writes files and prints */
    c.comm = cli_comm();
    int np = 0;   /* --ranks P in one process: start again as P ranks (returns only on failure) */
    if ((rc = cli_train_ranks(a, &c, &np)) || (np > 1 && (rc = cli_mpi_relaunch("train", NULL, argc, argv, np)))) goto done;
    const int nranks = comm_size(c.comm), me = comm_rank(c.comm);
    if (me != 0) {
        c.log = NULL;
        c.metrics_path = NULL;
    }
    const char *save_params = args_str(a, "--save-params", NULL);
    c.keep_params = save_params != NULL;
    /* the output files' folders before any work (not after hours of training) */
    if (me == 0 && ((save_params && (rc = inca_out_check(save_params))) || (c.metrics_path && (rc = inca_out_check(c.metrics_path)))))
        goto done;
    int shard_ranks = 0;
    if ((rc = shard_dir_ranks(c.store_path, me, &shard_ranks) ? train_from_shard(a, &c, me, nranks, &sh, &d)
                                                               : train_dataset_load(&c, &d)))
        goto done;
    train_kind_t kind;
    if ((rc = train_on_loaded(a, &c, &d, shard_ranks, &kind))) goto done;
    /* stored, a stored split by name, or random:TR,VA,TE[:SEED] */
    if ((rc = dataset_split_apply(c.store_path, args_str(a, "--split", NULL), c.seed, &d))) goto done;
    const char *ti = args_str(a, "--train-indices", NULL);
    if (ti && ((rc = npy_read_indices_lines(ti, &ids, &nids, &id_lines)) ||
               (rc = train_indices_check(ti, &d, ids, nids, id_lines))))
        goto done;
    /* the model's configuration beside its checkpoints, for inca predict: before a new run's
     * first checkpoint, after a resume (one the checkpoints refuse leaves the folder's own) */
    if (c.checkpoint_dir && me == 0 && !c.resume && (rc = cli_train_config_save(c.checkpoint_dir, a, &c, cli_version())))
        goto done;
    rc = train_run(&d, &c, ids, nids, &r);
    if (rc == INCA_OK && c.checkpoint_dir && me == 0 && c.resume)
        rc = cli_train_config_save(c.checkpoint_dir, a, &c, cli_version());
    if (ls.open) fputc('\n', stderr);   /* end the progress line */
    cli_progress_line_open(0);
    if (rc || (rc = train_rank_records(&c, &r, nranks, rec, &recs)) || me != 0) goto done;
    if (save_params && (rc = npy_write_f32(save_params, r.params, r.nparams, 1))) goto done;
    double majority = 0;
    /* null where this rank's shard does not hold the whole test split, or the split is empty */
    const int near = shard_ranks || isnan(r.test_acc) ? -1 : train_near_chance(&d, r.test_acc, &majority);
    if (args_has(a, "--json")) {
        rc = train_result_json(a, &c, &r, ids ? nids : d.split_n[SPLIT_TRAIN], nranks, recs, majority, near, &kind);
    } else train_result_text(&c, &r, args_pos(a, 0), nranks);
    fflush(stdout);
    train_budget_warn(&c);
    if (near > 0)   /* defaults that do not suit a dataset must not pass for a result */
        fprintf(stderr, "train: warning: %s stays near chance (test accuracy %.4f; the largest class is %.4f of the test "
                "split): it is not learning; try --lr, --epochs, --hidden or --feature-norm row|standard\n",
                model_kind_name(c.model), r.test_acc, majority);
done:
    inca_free(recs);
    train_result_free(&r);
    shard_free(&sh);
    inca_free(ids);
    inca_free(id_lines);
    dataset_free(&d);
    args_free(&a);
    return rc;
}
