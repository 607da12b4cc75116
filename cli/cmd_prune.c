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

/* Every class the pool holds needs a labelled example (a class nobody labelled can never be a
 * pseudo-label); an empty subset is refused too. The pool's classes are the annotator's
 * knowledge, as in prune_labeled_pick. */
static int labeled_covers_classes(const dataset_t *d, const int64_t *pool, int64_t npool, const int32_t *y_vis,
                                  const char *src) {
    int64_t *seen = inca_calloc((size_t)d->c + 1, 2 * sizeof *seen), nl = 0;   /* [k]: in pool, [c+k]: labelled */
    if (!seen) return INCA_ENOMEM;
    for (int64_t i = 0; i < npool; i++) {
        const int64_t v = pool[i];
        if (d->y[v] >= 0) seen[d->y[v]]++;
        if (y_vis[v] >= 0) { seen[d->c + y_vis[v]]++; nl++; }
    }
    int rc = INCA_OK;
    if (nl == 0) rc = inca_fail(INCA_EINVAL, "%s: the labelled subset of the pool is empty", src);
    for (int32_t k = 0; k < d->c && rc == INCA_OK; k++)
        if (seen[k] > 0 && seen[d->c + k] == 0)
            rc = inca_fail(INCA_EINVAL, "%s: class %d (%lld nodes in the pool) has no labelled example; label at least one "
                           "per class (--labeled-per-class 1, a larger --labeled, or a --labeled-indices file with one)",
                           src, k, (long long)seen[k]);
    inca_free(seen);
    return rc;
}

/* The test split's largest class share: what always answering that class scores. */
static double majority_share(const dataset_t *d) {
    int64_t best = 0, n = d->split_n[SPLIT_TEST];
    int64_t *cnt = inca_calloc((size_t)d->c + 1, sizeof *cnt);
    if (!cnt || n == 0) { inca_free(cnt); return 0; }
    for (int64_t i = 0; i < n; i++) {
        const int32_t y = d->y[d->split[SPLIT_TEST][i]];
        if (y >= 0 && ++cnt[y] > best) best = cnt[y];
    }
    inca_free(cnt);
    return (double)best / (double)n;
}

/* A target near chance: its accuracy (the full pool's when trained, else the coreset's) within
 * 2 points of the majority share or below 1.5 / classes. */
static int near_chance(const dataset_t *d, const prune_eval_t *ev, unsigned sets, double *acc, double *share) {
    *acc = (sets & PRUNE_EVAL_FULL) ? ev->full_acc : (sets & PRUNE_EVAL_CORESET) ? ev->coreset_acc : NAN;
    if (!(*acc == *acc) || d->c < 2) return 0;
    const double floor_ = 1.5 / d->c;
    *share = majority_share(d);
    return *acc < (*share + 0.02 > floor_ ? *share + 0.02 : floor_);
}

/* One output path per budget of a budget curve: PATH itself for one budget, else PATH with
 * "-keepF" before a ".npy" or ".lmdb" extension (or at the end). */
static void budget_path(char *buf, size_t len, const char *base, double keep, int nkeeps) {
    const size_t l = strlen(base);
    if (nkeeps <= 1) snprintf(buf, len, "%s", base);
    else if (l > 4 && strcmp(base + l - 4, ".npy") == 0) snprintf(buf, len, "%.*s-keep%g.npy", (int)(l - 4), base, keep);
    else if (l > 5 && strcmp(base + l - 5, ".lmdb") == 0) snprintf(buf, len, "%.*s-keep%g.lmdb", (int)(l - 5), base, keep);
    else snprintf(buf, len, "%s-keep%g", base, keep);
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
    cfg.proxy.store_path = target.store_path = path;   /* METIS batches: the store's partitioning, computed once */
    if ((rc = args_int(a, "--threads", 0, &iv))) goto done;
    if (iv > 0) inca_set_threads((int)iv);
    const char *out_path = args_str(a, "--out", NULL), *ind_path = args_str(a, "--indices", NULL);
    if (out_path && !args_has(a, "--overwrite"))   /* before any work: nothing half-written */
        for (int b = 0; b < cfg.nkeeps; b++) {
            char bp[4096];
            budget_path(bp, sizeof bp, out_path, cfg.keeps[b], cfg.nkeeps);
            if (inca_path_exists(bp)) { rc = inca_fail(INCA_EINVAL, "--out %s: already exists (pass --overwrite to replace it)", bp); goto done; }
        }
    do_eval = args_has(a, "--eval");
    const char *tag = args_str(a, "--dyn-tag", "last");
    /* evaluation settings, checked before any work */
    int64_t runs = 1;
    unsigned sets = 0;
    const char *es = args_str(a, "--eval-sets", "coreset,random,full");
    const char *eb = args_str(a, "--eval-budget", "epochs");
    if (strcmp(eb, "epochs") != 0 && strcmp(eb, "steps") != 0) {
        rc = inca_fail(INCA_EINVAL, "--eval-budget: expected epochs or steps, got '%s'", eb);
        goto done;
    }
    if (do_eval) {
        if ((rc = args_int(a, "--runs", 1, &runs))) goto done;
        if (runs < 1) { rc = inca_fail(INCA_EINVAL, "--runs: expected >= 1, got %lld", (long long)runs); goto done; }
        /* --eval-sets: comma-separated coreset,random,full (default all; --no-full drops full) */
        for (const char *q = es; *q;) {
            size_t l = strcspn(q, ",");
            if (l == 7 && strncmp(q, "coreset", 7) == 0) sets |= PRUNE_EVAL_CORESET;
            else if (l == 6 && strncmp(q, "random", 6) == 0) sets |= PRUNE_EVAL_RANDOM;
            else if (l == 4 && strncmp(q, "full", 4) == 0) sets |= PRUNE_EVAL_FULL;
            else { rc = inca_fail(INCA_EINVAL, "--eval-sets: expected a list of coreset, random, full, got '%s'", es); goto done; }
            q += l + (q[l] == ',');
        }
        if (args_has(a, "--no-full")) sets &= ~(unsigned)PRUNE_EVAL_FULL;
        if (strcmp(eb, "steps") == 0) sets |= PRUNE_EVAL_SAME_STEPS;
    }
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
    /* defaults by data kind, said once */
    const int is_graph = d.adj.rowptr != NULL && d.adj.nnz > 0;
    const int spread_on_graph = cfg.graph < 0 ? is_graph : cfg.graph;   /* --graph auto: spread over a graph when there is one */
    char kind_def[256];
    if ((rc = prune_kind_defaults(a, &cfg, &target, is_graph, kind_def, sizeof kind_def))) goto done;
    if (kind_def[0] && !args_has(a, "--quiet")) {
        cli_progress_end(&pg);
        fprintf(stderr, "prune: %s is a table (no graph): defaults %s\n", path, kind_def);
    }

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
    if ((rc = labeled_covers_classes(&d, pool, npool, y_vis, lab_file ? lab_file : "--labeled"))) goto done;
    dataset_t dv = d;   /* shallow: same graph and features, visible labels only */
    dv.y = y_vis;
    sec[PRUNE_ST_LABELED] = inca_now() - t0;

    char key[1024];
    snprintf(key, sizeof key,
             "labeled=%s/%g/%lld seed=%llu split=%s ssl=%d/%g/%g/%g/%d k=%d/%d/%s/%d/%d/%lld metric=%d alpha=%g iters=%d graph=%d proxy=%s/%d/%lld/%d/%g/%g/%g fn=%d "
             "pm=%s/%d/%d/%lld dyn=%d/%d/%d relabel=%d/%g",
             lab_file ? lab_file : "pick", frac, (long long)per_class, (unsigned long long)cfg.seed, split ? split : "stored",
             (int)cfg.ssl, cfg.st.tau, cfg.st.noise_strong, cfg.st.lambda_u, cfg.st.epochs, cfg.knn_k, cfg.knn_search,
             cfg.faiss.factory ? cfg.faiss.factory : "", cfg.faiss.nprobe, cfg.knn_features, (long long)cfg.knn_pca, (int)cfg.metric, cfg.alpha, cfg.iters, cfg.graph, cfg.proxy.model, cfg.proxy.epochs,
             (long long)cfg.proxy.hidden, cfg.proxy.layers, cfg.proxy.lr, cfg.proxy.dropout, cfg.proxy.weight_decay,
             cfg.proxy.feature_norm, cfg.proxy.method, cfg.proxy.parts, cfg.proxy.batch_parts, (long long)cfg.proxy.batch_size,
             cfg.dyn_from, cfg.dyn_layout, cfg.el2n_epochs, cfg.relabel, cfg.relabel_confident);
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
    for (int s = PRUNE_ST_CHECK; s <= PRUNE_ST_SELECT; s++)
        if (!reuse || s >= PRUNE_ST_SCORE) sec[s] = r.sec[s];

    /* evaluation only: pseudo-label accuracy against the hidden labels */
    double pl_acc = prune_pseudo_acc(d.y, y_vis, &r);

    t0 = inca_now();
    cli_progress(&pg, 1, "writing the dynamics");
    if (!reuse && !args_has(a, "--no-save-dynamics") && (rc = prune_dyn_save(path, tag, key, &r, d.c))) goto done;
    sec[PRUNE_ST_WRITE] = inca_now() - t0;

    if (do_eval) {
        if (!target.model[0]) snprintf(target.model, sizeof target.model, "%s", is_graph ? "gcn" : "mlp");
    }

    /* one selection (and evaluation, and output line) per budget, all from the same scores; the
     * full pool is trained once, at the first budget */
    prune_eval_t full_ev = {0};
    for (int b = 0; b < cfg.nkeeps; b++) {
        double tb = inca_now(), sec_write = sec[PRUNE_ST_WRITE], sec_eval = 0;
        if (b > 0) {
            cfg.sel.keep = cfg.keeps[b];
            cli_progress(&pg, 1, "selecting %g", cfg.sel.keep);
            if ((rc = prune_score_select(&cfg, d.c, &r))) goto done;
            sec[PRUNE_ST_SCORE] = r.sec[PRUNE_ST_SCORE];
            sec[PRUNE_ST_SELECT] = r.sec[PRUNE_ST_SELECT];
        }
        t0 = inca_now();
        char bpath[4096];
        if (ind_path) {
            char txt[4096], npy[4096];
            budget_path(bpath, sizeof bpath, ind_path, cfg.sel.keep, cfg.nkeeps);
            indices_paths(bpath, txt, npy, sizeof txt);
            if ((rc = indices_write_text(txt, r.sel, r.nsel))) goto done;
            if ((rc = npy_write_i64(npy, r.sel, r.nsel))) goto done;
        }
        if (out_path) {
            budget_path(bpath, sizeof bpath, out_path, cfg.sel.keep, cfg.nkeeps);
            cli_progress(&pg, 1, "writing %s", bpath);
            dataset_free(&pruned);
            if ((rc = prune_make_pruned(&d, r.sel, r.nsel, &pruned))) goto done;
            if ((rc = dataset_save(&pruned, bpath, args_has(a, "--overwrite")))) goto done;
        }
        sec_write += inca_now() - t0;
        if (do_eval) {
            t0 = inca_now();
            unsigned bs = b > 0 ? sets & ~(unsigned)PRUNE_EVAL_FULL : sets;
            cli_progress(&pg, 1, "evaluating keep %g (%s, %s budget)", cfg.sel.keep, es, eb);
            if ((rc = prune_eval_run(&d, &target, pool, npool, r.sel, r.nsel, (int)runs, cfg.seed, bs, &ev))) goto done;
            if (b == 0) full_ev = ev;
            else {   /* the full pool's figures, trained once */
                ev.full_acc = full_ev.full_acc;
                ev.full_std = full_ev.full_std;
            }
            sec_eval = inca_now() - t0;
        }
        double total = (b == 0 ? inca_now() - t_all : inca_now() - tb);
        cli_progress_end(&pg);
        const int json = args_has(a, "--json");   /* stdout: JSON Lines only, or the text */
        if (b == 0 && !json)
            printf("prune: pool %lld, labelled %lld, pseudo-labels by %s, accuracy %.4f (on the %lld unlabelled)\n",
                   (long long)npool, (long long)nlab, prune_ssl_name(r.ssl_used), pl_acc, (long long)(npool - nlab));
        if (b == 0 && !json && r.ssl_check_n > 0) {
            printf("prune: pseudo-labellers checked on the %lld labelled rows (%d folds):", (long long)r.ssl_check_n, PRUNE_SSL_CHECK_FOLDS);
            for (int k = 0; k < PRUNE_CAND_COUNT; k++)
                if (!isnan(r.ssl_check_acc[k])) printf(" %s %.4f", prune_ssl_cand_name(k, spread_on_graph), r.ssl_check_acc[k]);
            printf("\n");
        }
        if (!json) printf("prune: score %s, select %s, keep %g, mis-ratio %g%s -> kept %lld\n", score_name(cfg.score),
               select_name(cfg.sel.kind), cfg.sel.keep, cfg.sel.mis_ratio, cfg.sel.balance ? ", class-balanced" : "",
               (long long)r.nsel);
        if (do_eval && !json)
            printf("eval (%s, %d runs, %s budget: %d epochs, full data %d): coreset %.4f ± %.4f, random %.4f ± %.4f, "
                   "full %.4f ± %.4f\n", target.model, ev.runs, eb, ev.subset_epochs, ev.full_epochs, ev.coreset_acc,
                   ev.coreset_std, ev.random_acc, ev.random_std, ev.full_acc, ev.full_std);
        for (int s = 0; s < PRUNE_ST_COUNT && !json; s++)
            printf("%s %s %.2f", s ? "" : "seconds:", prune_stage_names[s], s == PRUNE_ST_WRITE ? sec_write : s == PRUNE_ST_EVAL ? sec_eval : (b == 0 || s == PRUNE_ST_SELECT || s == PRUNE_ST_SCORE ? sec[s] : 0));
        if (!json) printf(" total %.2f\n", total);
        if (json) {   /* one line per budget */
            if ((rc = json_new(&j))) goto done;
            json_int(j, "pool", npool);
            json_int(j, "labeled", nlab);
            json_int(j, "kept", r.nsel);
            json_num(j, "pseudo_label_acc", pl_acc);
            json_str(j, "ssl", prune_ssl_name(r.ssl_used));   /* the pseudo-labeller that ran */
            json_str(j, "knn_features", r.knn_features_used >= 0 ? prune_knn_features_name(r.knn_features_used) : NULL);
            if (r.ssl_check_n > 0) {   /* the check among candidates on held-out labelled rows */
                json_obj_begin(j, "ssl_check");
                json_int(j, "labeled", r.ssl_check_n);
                json_int(j, "folds", PRUNE_SSL_CHECK_FOLDS);
                for (int k = 0; k < PRUNE_CAND_COUNT; k++)
                    if (!isnan(r.ssl_check_acc[k])) json_num(j, prune_ssl_cand_name(k, spread_on_graph), r.ssl_check_acc[k]);
                json_obj_end(j);
            } else json_null(j, "ssl_check");
            json_str(j, "score", score_name(cfg.score));
            json_str(j, "select", select_name(cfg.sel.kind));
            json_num(j, "keep", cfg.sel.keep);
            json_int(j, "budget", b);
            json_int(j, "budgets", cfg.nkeeps);
            json_num(j, "mis_ratio", cfg.sel.mis_ratio);
            json_int(j, "proxy_epochs", r.dyn.epochs);
            json_str(j, "defaults", is_graph ? "graph" : "table");   /* the kind whose defaults the flags not given took */
            json_str(j, "kind_defaults", kind_def);
            json_str(j, "proxy_method", cfg.proxy.method);
            json_int(j, "relabel", cfg.relabel);
            json_str(j, "dynamics_from", r.dyn_from == PRUNE_DYN_STEPS ? "steps" : "eval");
            json_str(j, "dynamics", r.dyn.compact ? "compact" : "full");
            json_int(j, "dynamics_bytes", dyn_bytes(&r.dyn));
            json_str(j, "knn_search", r.knn_used == PRUNE_KNN_FAISS ? "faiss" : r.knn_used == PRUNE_KNN_EXACT ? "exact" : NULL);
            if (do_eval) {
                json_num(j, "coreset_acc", ev.coreset_acc);
                json_num(j, "coreset_acc_std", ev.coreset_std);
                json_num(j, "random_acc", ev.random_acc);
                json_num(j, "random_acc_std", ev.random_std);
                json_num(j, "full_acc", ev.full_acc);
                json_num(j, "full_acc_std", ev.full_std);
                json_int(j, "runs", ev.runs);
                json_str(j, "model", target.model);
                json_str(j, "method", target.method);
                json_str(j, "device", target.device);
                json_str(j, "eval_budget", eb);   /* the protocol: same epochs, or same optimiser steps */
                json_int(j, "subset_epochs", ev.subset_epochs);
                json_int(j, "subset_steps", ev.subset_steps);
                json_int(j, "full_epochs", ev.full_epochs);
                json_int(j, "full_steps", ev.full_steps);
            }
            /* the first line carries the whole pipeline's stages; later ones their own selection,
             * outputs and evaluation */
            json_obj_begin(j, "seconds");
            for (int s = 0; s < PRUNE_ST_COUNT; s++)
                json_num(j, prune_stage_names[s], s == PRUNE_ST_WRITE ? sec_write : s == PRUNE_ST_EVAL ? sec_eval
                                                  : (b == 0 || s == PRUNE_ST_SELECT || s == PRUNE_ST_SCORE ? sec[s] : 0));
            json_num(j, "total", total);
            json_obj_end(j);
            json_num(j, "peak_rss_mb", inca_peak_rss_mb());
            memstat_json(j);
            static const char *const outputs[] = {"--out", "--indices", "--overwrite", NULL};
            if ((rc = args_config_json(a, j, outputs))) goto done;   /* every flag as resolved: --config reruns it */
            json_str(j, "version", cli_version());
            if ((rc = json_write(j, stdout))) goto done;
            json_free(&j);
        }
        fflush(stdout);
        double acc, share;
        if (do_eval && near_chance(&d, &ev, b == 0 ? sets : sets & ~(unsigned)PRUNE_EVAL_FULL, &acc, &share)) {
            cli_progress_end(&pg);
            fprintf(stderr, "prune: warning: the target (%s) stays near chance at keep %g (test accuracy %.4f; the "
                    "largest class is %.4f of the test split): it is not learning; try --lr, --epochs, --hidden or "
                    "--feature-norm standard\n", target.model, cfg.sel.keep, acc, share);
        }
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
