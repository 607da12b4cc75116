/* inca prune: label-efficient dataset pruning (pruning/pipeline.h) from the command line:
 * parse flags, load the store, pick the labelled subset, run the pipeline on the visible labels
 * only, write indices / pruned store / dynamics, evaluate on request, print text and --json.
 * Tested end to end in test_pruning_e2e.c. */
#include "core/args.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/split.h"
#include "loaders/npy.h"
#include "pruning/pipeline.h"
#include "pruning/prune_args.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Output paths for --indices P: text at P and .npy at P.npy, or, when P ends in ".npy",
 * the .npy at P and the text at P with ".txt" in place of ".npy". */
static void indices_paths(const char *p, char *txt, char *npy, size_t len) {
    size_t l = strlen(p);
    if (l > 4 && strcmp(p + l - 4, ".npy") == 0) {
        snprintf(npy, len, "%s", p);
        snprintf(txt, len, "%.*s.txt", (int)(l - 4), p);
    } else {
        snprintf(txt, len, "%s", p);
        snprintf(npy, len, "%s.npy", p);
    }
}

/* the proxy's and the evaluation's status lines (train_log) onto the progress line */
static void prune_log(void *ctx, int level, const char *line) {
    cli_progress(ctx, level != TRAIN_LOG_PROGRESS, "%s", line);
}

int cmd_prune(int argc, char **argv) {
    args_t *a = NULL;
    dataset_t d, pruned;
    dataset_init(&d);
    dataset_init(&pruned);
    prune_result_t r;
    memset(&r, 0, sizeof r);
    prune_config_t cfg;
    train_config_t target;
    int64_t *lab = NULL, nlab = 0, iv = 0;
    int32_t *y_vis = NULL;
    json_t *j = NULL;
    double sec[PRUNE_ST_COUNT] = {0}, t_all = inca_now(), t0;
    cli_progress_t pg = {0};
    prune_eval_t ev;
    memset(&ev, 0, sizeof ev);
    int do_eval = 0;
    int rc = args_parse(argc, argv, prune_flags, &a);
    if (rc) goto done;
    if (args_npos(a) != 1) { rc = inca_fail(INCA_EINVAL, "prune: expected one STORE argument, got %d", args_npos(a)); goto done; }
    const char *path = args_pos(a, 0);
    if ((rc = prune_config_from_args(a, &cfg, &target))) goto done;
    cli_progress_init(&pg, "prune", args_has(a, "--quiet"));
    cfg.proxy.log = target.log = prune_log;
    cfg.proxy.log_ctx = target.log_ctx = &pg;
    if ((rc = args_int(a, "--threads", 0, &iv))) goto done;
    if (iv > 0) inca_set_threads((int)iv);
    const char *out_path = args_str(a, "--out", NULL), *ind_path = args_str(a, "--indices", NULL);
    do_eval = args_has(a, "--eval");
    const char *tag = args_str(a, "--dyn-tag", "last");
    int reuse = args_has(a, "--reuse-dynamics");

    t0 = inca_now();
    cli_progress(&pg, 1, "loading %s", path);
    if ((rc = dataset_load(path, &d))) goto done;
    const char *split = args_str(a, "--split", NULL);
    if ((rc = dataset_split_apply(path, split, cfg.seed, &d))) goto done;
    if (!d.y) { rc = inca_fail(INCA_EINVAL, "%s: the store has no labels", path); goto done; }
    if (d.split_n[SPLIT_TRAIN] < 2) { rc = inca_fail(INCA_EINVAL, "%s: the train split (the pool) holds %lld nodes; give --split random:TR,VA,TE", path, (long long)d.split_n[SPLIT_TRAIN]); goto done; }
    const int64_t *pool = d.split[SPLIT_TRAIN];
    int64_t npool = d.split_n[SPLIT_TRAIN];
    sec[PRUNE_ST_LOAD] = inca_now() - t0;

    /* the labelled subset: the only labels the pruning code may see */
    t0 = inca_now();
    double frac = 0;
    int64_t per_class = 0;
    const char *lab_file = args_str(a, "--labeled-indices", NULL);
    if ((rc = args_double(a, "--labeled", 0.01, &frac))) goto done;
    if ((rc = args_int(a, "--labeled-per-class", 0, &per_class))) goto done;
    if (lab_file) rc = npy_read_indices(lab_file, &lab, &nlab);
    else rc = prune_labeled_pick(d.y, d.c, pool, npool, frac, per_class, cfg.seed, &lab, &nlab);
    if (rc) goto done;
    y_vis = inca_malloc((size_t)d.n * sizeof *y_vis);
    if (!y_vis) { rc = INCA_ENOMEM; goto done; }
    if ((rc = prune_visible_labels(d.y, d.n, lab, nlab, y_vis))) { inca_fail_ctx(rc, "%s: ", lab_file ? lab_file : "--labeled"); goto done; }
    dataset_t dv = d;   /* shallow: same graph and features, visible labels only */
    dv.y = y_vis;
    sec[PRUNE_ST_LABELED] = inca_now() - t0;

    char key[1024];
    snprintf(key, sizeof key,
             "labeled=%s/%g/%lld seed=%llu split=%s ssl=%d/%g/%g/%g/%d k=%d metric=%d alpha=%g iters=%d graph=%d proxy=%s/%d/%lld/%d/%g/%g/%g fn=%d",
             lab_file ? lab_file : "pick", frac, (long long)per_class, (unsigned long long)cfg.seed, split ? split : "stored",
             (int)cfg.ssl, cfg.st.tau, cfg.st.noise_strong, cfg.st.lambda_u, cfg.st.epochs, cfg.knn_k, (int)cfg.metric, cfg.alpha, cfg.iters, cfg.graph, cfg.proxy.model, cfg.proxy.epochs,
             (long long)cfg.proxy.hidden, cfg.proxy.layers, cfg.proxy.lr, cfg.proxy.dropout, cfg.proxy.weight_decay,
             cfg.proxy.feature_norm);
    if (reuse) {
        int32_t c = 0;
        t0 = inca_now();
        if ((rc = prune_dyn_load(path, tag, key, &r, &c))) goto done;
        if (c != d.c || r.npool != npool || memcmp(r.pool, pool, (size_t)npool * sizeof *pool) != 0) {
            rc = inca_fail(INCA_EINVAL, "%s: stored dynamics '%s' do not match this pool", path, tag);
            goto done;
        }
        sec[PRUNE_ST_PROXY] = inca_now() - t0;
        if ((rc = prune_score_select(&cfg, d.c, &r))) goto done;
    } else {
        if ((rc = prune_run(&dv, pool, npool, &cfg, &r))) goto done;
    }
    /* with --reuse-dynamics the "proxy" stage is the time to load the stored dynamics */
    for (int s = PRUNE_ST_KNN; s <= PRUNE_ST_SELECT; s++)
        if (!reuse || s >= PRUNE_ST_SCORE) sec[s] = r.sec[s];

    /* evaluation only: pseudo-label accuracy against the hidden labels */
    double pl_acc = prune_pseudo_acc(d.y, y_vis, &r);

    t0 = inca_now();
    cli_progress(&pg, 1, "writing the dynamics, indices and pruned store");
    if (!reuse && !args_has(a, "--no-save-dynamics") && (rc = prune_dyn_save(path, tag, key, &r, d.c))) goto done;
    if (ind_path) {
        char txt[4096], npy[4096];
        indices_paths(ind_path, txt, npy, sizeof txt);
        if ((rc = indices_write_text(txt, r.sel, r.nsel))) goto done;
        if ((rc = npy_write_i64(npy, r.sel, r.nsel))) goto done;
    }
    if (out_path) {
        if ((rc = prune_make_pruned(&d, r.sel, r.nsel, &pruned))) goto done;
        if ((rc = dataset_save(&pruned, out_path, args_has(a, "--overwrite")))) goto done;
    }
    sec[PRUNE_ST_WRITE] = inca_now() - t0;

    if (do_eval) {
        int64_t runs = 1;
        if ((rc = args_int(a, "--runs", 1, &runs))) goto done;
        int graph = d.adj.rowptr != NULL && d.adj.nnz > 0;
        if (!target.model[0]) snprintf(target.model, sizeof target.model, "%s", graph ? "gcn" : "mlp");
        t0 = inca_now();
        /* --eval-sets: comma-separated coreset,random,full (default all; --no-full drops full) */
        const char *es = args_str(a, "--eval-sets", "coreset,random,full");
        unsigned sets = 0;
        for (const char *q = es; *q;) {
            size_t l = strcspn(q, ",");
            if (l == 7 && strncmp(q, "coreset", 7) == 0) sets |= PRUNE_EVAL_CORESET;
            else if (l == 6 && strncmp(q, "random", 6) == 0) sets |= PRUNE_EVAL_RANDOM;
            else if (l == 4 && strncmp(q, "full", 4) == 0) sets |= PRUNE_EVAL_FULL;
            else { rc = inca_fail(INCA_EINVAL, "--eval-sets: expected a list of coreset, random, full, got '%s'", es); goto done; }
            q += l + (q[l] == ',');
        }
        if (args_has(a, "--no-full")) sets &= ~(unsigned)PRUNE_EVAL_FULL;
        cli_progress(&pg, 1, "evaluating (%s)", es);
        if ((rc = prune_eval_run(&d, &target, pool, npool, r.sel, r.nsel, (int)runs, cfg.seed, sets, &ev))) goto done;
        sec[PRUNE_ST_EVAL] = inca_now() - t0;
    }

    double total = inca_now() - t_all;
    cli_progress_end(&pg);
    printf("prune: pool %lld, labelled %lld, pseudo-label accuracy %.4f (on the %lld unlabelled)\n", (long long)npool,
           (long long)nlab, pl_acc, (long long)(npool - nlab));
    printf("prune: score %s, select %s, keep %g, mis-ratio %g%s -> kept %lld\n", score_name(cfg.score),
           select_name(cfg.sel.kind), cfg.sel.keep, cfg.sel.mis_ratio, cfg.sel.balance ? ", class-balanced" : "",
           (long long)r.nsel);
    if (do_eval)
        printf("eval (%s, %d runs): coreset %.4f ± %.4f, random %.4f ± %.4f, full %.4f ± %.4f\n", target.model, ev.runs,
               ev.coreset_acc, ev.coreset_std, ev.random_acc, ev.random_std, ev.full_acc, ev.full_std);
    printf("seconds:");
    for (int s = 0; s < PRUNE_ST_COUNT; s++) printf(" %s %.2f", prune_stage_names[s], sec[s]);
    printf(" total %.2f\n", total);
    if (args_has(a, "--json")) {
        if ((rc = json_new(&j))) goto done;
        json_int(j, "pool", npool);
        json_int(j, "labeled", nlab);
        json_int(j, "kept", r.nsel);
        json_num(j, "pseudo_label_acc", pl_acc);
        json_str(j, "score", score_name(cfg.score));
        json_str(j, "select", select_name(cfg.sel.kind));
        json_num(j, "keep", cfg.sel.keep);
        json_num(j, "mis_ratio", cfg.sel.mis_ratio);
        json_int(j, "proxy_epochs", r.dyn.epochs);
        if (do_eval) {
            json_num(j, "coreset_acc", ev.coreset_acc);
            json_num(j, "coreset_acc_std", ev.coreset_std);
            json_num(j, "random_acc", ev.random_acc);
            json_num(j, "random_acc_std", ev.random_std);
            json_num(j, "full_acc", ev.full_acc);
            json_num(j, "full_acc_std", ev.full_std);
            json_int(j, "runs", ev.runs);
            json_str(j, "model", target.model);
            json_str(j, "device", target.device);
        }
        json_obj_begin(j, "seconds");
        for (int s = 0; s < PRUNE_ST_COUNT; s++) json_num(j, prune_stage_names[s], sec[s]);
        json_num(j, "total", total);
        json_obj_end(j);
        json_num(j, "peak_rss_mb", inca_peak_rss_mb());
        memstat_json(j);
        if ((rc = args_config_json(a, j))) goto done;   /* every flag as resolved: --config reruns it */
        json_str(j, "version", cli_version());
        if ((rc = json_write(j, stdout))) goto done;
    }
done:
    cli_progress_end(&pg);
    json_free(&j);
    prune_result_free(&r);
    dataset_free(&pruned);
    dataset_free(&d);
    inca_free(lab);
    inca_free(y_vis);
    args_free(&a);
    return rc;
}
