/* inca prune: label-efficient dataset pruning from the command line. The run itself is the
 * pruning library's (pruning/job.h: load, labelled subset, pipeline on the visible labels,
 * outputs, evaluation); this file parses the flags, prints each budget's text or --json line
 * and the warnings, and returns the status. Tested end to end in test_pruning_e2e.c. */
#include "core/args.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/status.h"
#include "core/util.h"
#include "pruning/job.h"
#include "cli/prune_args.h"
#include "pruning/pruned_store.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* What the job's hooks need from the command line. */
typedef struct prune_cli {
    args_t *a;
    cli_progress_t pg;
    const char *eval_budget;   /* --eval-budget: epochs | steps */
    int json;                  /* stdout: JSON Lines only, or the text */
    char kind_def[256];        /* the defaults by data kind taken (prune_kind_defaults) */
    char stage[160];           /* the pipeline's last stage line: what the proxy's epochs belong to */
} prune_cli_t;

/* the evaluation's status lines (train_log) onto the progress line */
static void prune_log(void *ctx, int level, const char *line) {
    cli_progress(&((prune_cli_t *)ctx)->pg, level != TRAIN_LOG_PROGRESS, "%s", line);
}

/* An epoch line of train_log ("[run 1/1] epoch E/N  loss L  val V  test T  best B  S s/epoch  ETA
 * X", fields two spaces apart) as the proxy's: it trains on pseudo-labels with no validation or
 * test split, so val and test would always read 0.0000 and best the last epoch; the run is its
 * only one. The fields that exist stay. */
static void proxy_epoch_line(const char *line, char *out, size_t cap) {
    static const char *const none[] = {"val ", "test ", "best "};
    const char *q = strchr(line, ']');
    q = q ? q + 1 + (q[1] == ' ') : line;
    size_t n = 0;
    out[0] = '\0';
    while (*q && n < cap) {
        const char *e = strstr(q, "  ");
        const int len = e ? (int)(e - q) : (int)strlen(q);
        int keep = 1;
        for (int k = 0; k < 3; k++) keep &= strncmp(q, none[k], strlen(none[k])) != 0;
        if (keep) n += (size_t)snprintf(out + n, cap - n, "%s%.*s", n ? "  " : "", len, q);
        q += len + (e ? 2 : 0);
    }
}

/* The pipeline's lines (cfg.proxy's train_log): its stages, and the proxy's epochs under the
 * stage that trains it (the labelling check's folds, the pseudo-labels, relabelling, the proxy
 * recording the dynamics). */
static void prune_proxy_log(void *ctx, int level, const char *line) {
    prune_cli_t *c = ctx;
    if (strncmp(line, "[run ", 5) != 0) {
        snprintf(c->stage, sizeof c->stage, "%s", line);
        cli_progress(&c->pg, level != TRAIN_LOG_PROGRESS, "%s", line);
        return;
    }
    char ep[200];
    proxy_epoch_line(line, ep, sizeof ep);
    cli_progress(&c->pg, level != TRAIN_LOG_PROGRESS, "%s: %s", c->stage[0] ? c->stage : "proxy", ep);
}

/* The evaluation's settings, checked before any work: --eval-sets (comma-separated
 * coreset,random,full; --no-full drops full), --eval-budget, and with --eval --runs. */
static int parse_eval(prune_cli_t *c, prune_job_t *job) {
    const args_t *a = c->a;
    int64_t runs = 1;
    int rc;
    const char *es = args_str(a, "--eval-sets", "coreset,random,full");
    c->eval_budget = args_str(a, "--eval-budget", "epochs");
    if (strcmp(c->eval_budget, "epochs") != 0 && strcmp(c->eval_budget, "steps") != 0)
        return inca_fail(INCA_EINVAL, "--eval-budget: expected epochs or steps, got '%s'", c->eval_budget);
    if (!job->o.eval) return INCA_OK;
    if ((rc = args_int(a, "--runs", 1, &runs))) return rc;
    if (runs < 1) return inca_fail(INCA_EINVAL, "--runs: expected >= 1, got %lld", (long long)runs);
    job->o.eval_runs = (int)runs;
    unsigned sets = 0;
    for (const char *q = es; *q;) {
        size_t l = strcspn(q, ",");
        if (l == 7 && strncmp(q, "coreset", 7) == 0) sets |= PRUNE_EVAL_CORESET;
        else if (l == 6 && strncmp(q, "random", 6) == 0) sets |= PRUNE_EVAL_RANDOM;
        else if (l == 4 && strncmp(q, "full", 4) == 0) sets |= PRUNE_EVAL_FULL;
        else return inca_fail(INCA_EINVAL, "--eval-sets: expected a list of coreset, random, full, got '%s'", es);
        q += l + (q[l] == ',');
    }
    if (args_has(a, "--no-full")) sets &= ~(unsigned)PRUNE_EVAL_FULL;
    if (strcmp(c->eval_budget, "steps") == 0) sets |= PRUNE_EVAL_SAME_STEPS;
    job->o.eval_sets = sets;
    return INCA_OK;
}

/* The flags read before any work, asked in the order --json's config has always listed them;
 * the labelled subset's come after loading (prune_on_loaded). */
static int parse_flags(prune_cli_t *c, prune_job_t *job, int argc, char **argv) {
    int64_t iv = 0;
    int rc = args_parse(argc, argv, prune_flags, &c->a);
    if (rc) return rc;
    const args_t *a = c->a;
    if (args_npos(a) != 1) return inca_fail(INCA_EINVAL, "expected one STORE argument, got %d", args_npos(a));
    const char *path = job->o.path = args_pos(a, 0);
    if ((rc = prune_config_from_args(a, &job->cfg, &job->target))) return rc;
    cli_progress_init(&c->pg, "prune", args_has(a, "--quiet"));
    job->cfg.proxy.log = prune_proxy_log;
    job->target.log = prune_log;
    job->cfg.proxy.log_ctx = job->target.log_ctx = c;
    job->cfg.proxy.store_path = job->target.store_path = path;   /* METIS batches: the store's partitioning, computed once */
    if ((rc = args_int(a, "--threads", 0, &iv))) return rc;
    if (iv > 0) inca_set_threads((int)iv);
    job->o.out = args_str(a, "--out", NULL);
    job->o.indices = args_str(a, "--indices", NULL);
    job->o.overwrite = args_has(a, "--overwrite");
    /* before any work: nothing half-written, no bad path found after the pipeline */
    if ((rc = pruned_outputs_check(job->o.out, job->o.indices, job->o.indices_text, job->cfg.keeps, job->cfg.nkeeps,
                                   job->o.overwrite)))
        return rc;
    job->o.eval = args_has(a, "--eval");
    job->o.dyn_tag = args_str(a, "--dyn-tag", "last");
    if ((rc = parse_eval(c, job))) return rc;
    job->o.reuse_dynamics = args_has(a, "--reuse-dynamics");
    /* a typed flag the run ignores, and the labelled subset's flags: refused before any work */
    const prune_run_t run = {&job->cfg, job->o.eval, job->o.reuse_dynamics || !args_peek(a, "--no-save-dynamics")};
    if ((rc = prune_check_effect(a, &run)) || (rc = prune_labeled_check(a))) return rc;
    job->o.split = args_str(a, "--split", NULL);
    c->json = args_has(a, "--json");
    return INCA_OK;
}

/* After loading: the defaults by data kind, said once on stderr, then the labelled subset's
 * flags and whether to save the dynamics (asked here, after the kind's flags, as they always
 * were: the order of --json's config). */
static int prune_on_loaded(void *ctx, prune_job_t *job) {
    prune_cli_t *c = ctx;
    const args_t *a = c->a;
    int rc = prune_kind_defaults(a, &job->cfg, &job->target, job->is_graph, c->kind_def, sizeof c->kind_def);
    if (rc) return rc;
    if (c->kind_def[0] && !args_has(a, "--quiet")) {
        cli_progress_end(&c->pg);
        fprintf(stderr, "prune: %s is a table (no graph): defaults %s\n", job->o.path, c->kind_def);
    }
    if ((rc = prune_labeled_from_args(a, &job->o.labeled_file, &job->o.labeled, &job->o.labeled_per_class))) return rc;
    job->o.save_dynamics = !job->o.reuse_dynamics && !args_has(a, "--no-save-dynamics");
    return INCA_OK;
}

/* A budget's text lines (the run's pseudo-labels and check on the first). */
static void print_text(const prune_cli_t *c, const prune_job_t *job, const prune_budget_line_t *l) {
    const prune_result_t *r = &job->r;
    const prune_config_t *cfg = &job->cfg;
    const prune_eval_t *ev = &job->ev;
    const int on_graph = cfg->graph < 0 ? job->is_graph : cfg->graph;   /* --graph auto: spread over a graph when there is one */
    if (l->budget == 0) {
        printf("prune: pool %lld, labelled %lld, pseudo-labels by %s, accuracy %.4f (on the %lld unlabelled)\n",
               (long long)job->npool, (long long)job->nlab, prune_ssl_name(r->ssl_used), job->pl_acc,
               (long long)(job->npool - job->nlab));
        if (r->ssl_check_n > 0) {
            printf("prune: pseudo-labellers checked on the %lld labelled rows (%d folds):", (long long)r->ssl_check_n, PRUNE_SSL_CHECK_FOLDS);
            for (int k = 0; k < PRUNE_CAND_COUNT; k++)
                if (!isnan(r->ssl_check_acc[k])) printf(" %s %.4f", prune_ssl_cand_name(k, on_graph), r->ssl_check_acc[k]);
            printf("\n");
        }
    }
    printf("prune: score %s, select %s, keep %g, mis-ratio %g%s -> kept %lld\n", score_name(cfg->score),
           select_name(cfg->sel.kind), cfg->sel.keep, cfg->sel.mis_ratio, cfg->sel.balance ? ", class-balanced" : "",
           (long long)r->nsel);
    if (job->o.eval)
        printf("eval (%s, %d runs, %s budget: %d epochs, full data %d): coreset %.4f ± %.4f, random %.4f ± %.4f, "
               "full %.4f ± %.4f\n", model_kind_name(job->target.model), ev->runs, c->eval_budget, ev->subset_epochs, ev->full_epochs,
               ev->coreset_acc, ev->coreset_std, ev->random_acc, ev->random_std, ev->full_acc, ev->full_std);
    for (int s = 0; s < PRUNE_ST_COUNT; s++) printf("%s %s %.2f", s ? "" : "seconds:", prune_stage_names[s], l->sec[s]);
    printf(" total %.2f\n", l->total);
}

/* The evaluation's fields of a JSON line. */
static void json_eval(json_t *j, const prune_cli_t *c, const prune_job_t *job) {
    const prune_eval_t *ev = &job->ev;
    json_num(j, "coreset_acc", ev->coreset_acc);
    json_num(j, "coreset_acc_std", ev->coreset_std);
    json_num(j, "random_acc", ev->random_acc);
    json_num(j, "random_acc_std", ev->random_std);
    json_num(j, "full_acc", ev->full_acc);
    json_num(j, "full_acc_std", ev->full_std);
    json_int(j, "runs", ev->runs);
    json_str(j, "model", model_kind_name(job->target.model));
    json_str(j, "method", train_method_name(job->target.method));
    json_str(j, "device", job->target.device);
    json_str(j, "eval_budget", c->eval_budget);   /* the protocol: same epochs, or same optimiser steps */
    json_int(j, "subset_epochs", ev->subset_epochs);
    json_int(j, "subset_steps", ev->subset_steps);
    json_int(j, "full_epochs", ev->full_epochs);
    json_int(j, "full_steps", ev->full_steps);
}

/* A budget's JSON line: the run, the check among candidates, the selection, the evaluation, the
 * stages' seconds, memory, and every flag as resolved (--config reruns it). Its fields in one
 * sequence so that the line reads top to bottom as it is printed. */
static int print_json(const prune_cli_t *c, const prune_job_t *job, const prune_budget_line_t *l) {
    const prune_result_t *r = &job->r;
    const prune_config_t *cfg = &job->cfg;
    const int on_graph = cfg->graph < 0 ? job->is_graph : cfg->graph;
    json_t *j = NULL;
    int rc = json_new(&j);
    if (rc) return rc;
    json_int(j, "pool", job->npool);
    json_int(j, "labeled", job->nlab);
    json_int(j, "kept", r->nsel);
    json_num(j, "pseudo_label_acc", job->pl_acc);
    json_str(j, "ssl", prune_ssl_name(r->ssl_used));   /* the pseudo-labeller that ran */
    json_str(j, "knn_features", r->knn_features_used >= 0 ? prune_knn_features_name(r->knn_features_used) : NULL);
    if (r->ssl_check_n > 0) {   /* the check among candidates on held-out labelled rows */
        json_obj_begin(j, "ssl_check");
        json_int(j, "labeled", r->ssl_check_n);
        json_int(j, "folds", PRUNE_SSL_CHECK_FOLDS);
        for (int k = 0; k < PRUNE_CAND_COUNT; k++)
            if (!isnan(r->ssl_check_acc[k])) json_num(j, prune_ssl_cand_name(k, on_graph), r->ssl_check_acc[k]);
        json_obj_end(j);
    } else json_null(j, "ssl_check");
    json_str(j, "score", score_name(cfg->score));
    json_str(j, "select", select_name(cfg->sel.kind));
    json_num(j, "keep", cfg->sel.keep);
    json_int(j, "budget", l->budget);
    json_int(j, "budgets", cfg->nkeeps);
    json_num(j, "mis_ratio", cfg->sel.mis_ratio);
    json_int(j, "proxy_epochs", r->dyn.epochs);
    json_str(j, "defaults", job->is_graph ? "graph" : "table");   /* the kind whose defaults the flags not given took */
    json_str(j, "kind_defaults", c->kind_def);
    json_str(j, "proxy_method", train_method_name(cfg->proxy.method));
    json_int(j, "relabel", cfg->relabel);
    json_str(j, "dynamics_from", r->dyn_from == PRUNE_DYN_STEPS ? "steps" : "eval");
    json_str(j, "dynamics", r->dyn.compact ? "compact" : "full");
    json_int(j, "dynamics_bytes", dyn_bytes(&r->dyn));
    json_str(j, "knn_search", r->knn_used == PRUNE_KNN_FAISS ? "faiss" : r->knn_used == PRUNE_KNN_EXACT ? "exact" : NULL);
    if (job->o.eval) json_eval(j, c, job);
    /* the first line carries the whole pipeline's stages; later ones their own selection,
     * outputs and evaluation */
    json_obj_begin(j, "seconds");
    for (int s = 0; s < PRUNE_ST_COUNT; s++) json_num(j, prune_stage_names[s], l->sec[s]);
    json_num(j, "total", l->total);
    json_obj_end(j);
    json_num(j, "peak_rss_mb", inca_peak_rss_mb());
    memstat_json(j);
    static const char *const outputs[] = {"--out", "--indices", "--overwrite", NULL};
    rc = args_config_json(c->a, j, outputs);   /* every flag as resolved: --config reruns it */
    json_str(j, "version", cli_version());
    if (!rc) rc = json_write(j, stdout);
    json_free(&j);
    return rc;
}

/* A budget done: its line, then a warning when the target did not learn. */
static int prune_on_budget(void *ctx, const prune_job_t *job, const prune_budget_line_t *l) {
    prune_cli_t *c = ctx;
    cli_progress_end(&c->pg);
    int rc = INCA_OK;
    if (c->json) rc = print_json(c, job, l);
    else print_text(c, job, l);
    fflush(stdout);
    if (rc) return rc;
    double acc, share;
    if (job->o.eval && prune_eval_near_chance(&job->d, &job->ev, l->eval_sets, &acc, &share)) {
        cli_progress_end(&c->pg);
        fprintf(stderr, "prune: warning: the target (%s) stays near chance at keep %g (test accuracy %.4f; the "
                "largest class is %.4f of the test split): it is not learning; try --lr, --epochs, --hidden or "
                "--feature-norm standard\n", model_kind_name(job->target.model), job->cfg.sel.keep, acc, share);
    }
    return INCA_OK;
}

int cmd_prune(int argc, char **argv) {
    prune_cli_t c;
    memset(&c, 0, sizeof c);
    prune_job_t job;
    prune_job_init(&job);
    job.o.t_start = inca_now();   /* the first line's total counts the flags too */
    job.o.loaded = prune_on_loaded;
    job.o.budget = prune_on_budget;
    job.o.ctx = &c;
    int rc = parse_flags(&c, &job, argc, argv);
    if (!rc) rc = prune_job_run(&job);
    cli_progress_end(&c.pg);
    prune_job_free(&job);
    args_free(&c.a);
    return rc;
}
