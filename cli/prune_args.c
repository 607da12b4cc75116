/* The flags of `inca prune` and their parsing into the pipeline and target configurations;
 * see prune_args.h. Exercised through `inca prune` and `inca bench pruning` in
 * test_pruning_e2e.c and test_e2e_json.c. */
#include "cli/prune_args.h"
#include "cli/train_flags.h"
#include <errno.h>
#include <stdlib.h>
#include "core/status.h"
#include "nn/layout.h"
#include "pruning/pruned_store.h"
#include <stdio.h>
#include <string.h>

const char *const prune_flags[] = {
    "--labeled", "--labeled-per-class", "--labeled-indices", "--ssl", "--score", "--select", "--keep",
    "--mis-ratio", "--strata", "--topk", "--balance!", "--cmn!", "--knn", "--knn-features", "--knn-pca", "--alpha", "--iters", "--metric", "--graph",
    "--proxy-model", "--proxy-epochs", "--proxy-hidden", "--proxy-lr", "--proxy-dropout", "--proxy-layers",
    "--el2n-epochs", "--batch-size", "--proxy-batch-size", "--seed", "--split", "--threads", "--out", "--indices", "--overwrite!", "--eval!", "--quiet!", "--runs",
    "--json!", "--model", "--epochs", "--hidden", "--layers", "--lr", "--dropout", "--weight-decay", "--feature-norm",
    "--no-full!", "--reuse-dynamics!", "--dyn-tag", "--no-save-dynamics!", "--tau", "--noise", "--ssl-epochs",
    "--lambda-u", "--eval-sets", "--device", "--deterministic!", "--tf32!", "--config", "--eval-budget", "--knn-search", "--faiss-index", "--faiss-nprobe",
    "--proxy-method", "--proxy-parts", "--proxy-batch-parts", "--dynamics-from", "--dynamics", "--method", "--parts",
    "--batch-parts", "--relabel", "--relabel-confident", NULL};

/* A flag whose default depends on the data kind (prune_kind_defaults): read only when given
 * (recorded then, and marked in *given); one not given is recorded by prune_kind_defaults once its
 * kind's value is known, so the result's config holds the value that ran. */
static int kind_int(const args_t *a, const char *name, int64_t def, int64_t lo, int64_t *out, unsigned *given, unsigned bit) {
    *out = def;
    if (!args_has(a, name)) return INCA_OK;
    int rc = args_int(a, name, def, out);
    if (rc) return rc;
    if (*out < lo) return inca_fail(INCA_EINVAL, "%s: expected >= %lld, got %lld", name, (long long)lo, (long long)*out);
    *given |= bit;
    return INCA_OK;
}

static int kind_double(const args_t *a, const char *name, double def, double *out, unsigned *given, unsigned bit) {
    *out = def;
    if (!args_has(a, name)) return INCA_OK;
    int rc = args_double(a, name, def, out);
    if (rc) return rc;
    *given |= bit;
    return INCA_OK;
}

/* A training method and its METIS batches: FLAG full|cluster|gas|incagg, PARTS, BATCH parts. */
static int method_from_args(const args_t *a, const char *flag, const char *parts, const char *batch, train_config_t *t) {
    int64_t iv;
    int rc, m = TRAIN_FULL;
    if ((rc = args_word(a, flag, "full", train_method_words, TRAIN_METHOD_COUNT, "full, cluster, gas or incagg", &m))) return rc;
    t->method = (train_method_t)m;
    if ((rc = args_int(a, parts, 40, &iv))) return rc;
    if (iv < 1 || iv > (1 << 24)) return inca_fail(INCA_EINVAL, "%s: expected 1..%d, got %lld", parts, 1 << 24, (long long)iv);
    t->parts = (int)iv;
    if ((rc = args_int(a, batch, 10, &iv))) return rc;
    if (iv < 1 || iv > t->parts) return inca_fail(INCA_EINVAL, "%s: expected 1..%s (%d), got %lld", batch, parts, t->parts, (long long)iv);
    t->batch_parts = (int)iv;
    return INCA_OK;
}

int prune_kind_defaults(const args_t *a, prune_config_t *cfg, train_config_t *target, int graph, char *what, size_t len) {
    what[0] = '\0';
    if (!graph) {
        /* tables: what Fashion-MNIST was measured with (README): standardised features, MLPs of
         * 256 in mini-batches of 128 at lr 0.001, dropout 0.2, 20 epochs */
        const struct { unsigned bit; const char *flag; double num; } t[] = {
            {PRUNE_GIVEN_FEATNORM, "--feature-norm", 0}, {PRUNE_GIVEN_PROXY_EPOCHS, "--proxy-epochs", CLI_TABLE_EPOCHS},
            {PRUNE_GIVEN_PROXY_BATCH, "--proxy-batch-size", CLI_TABLE_BATCH}, {PRUNE_GIVEN_PROXY_LR, "--proxy-lr", CLI_TABLE_LR},
            {PRUNE_GIVEN_EPOCHS, "--epochs", CLI_TABLE_EPOCHS}, {PRUNE_GIVEN_BATCH, "--batch-size", CLI_TABLE_BATCH},
            {PRUNE_GIVEN_LR, "--lr", CLI_TABLE_LR}, {PRUNE_GIVEN_DROPOUT, "--dropout", CLI_TABLE_DROPOUT}};
        size_t l = 0;
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            if (cfg->given & t[i].bit) continue;
            switch (t[i].bit) {
            case PRUNE_GIVEN_FEATNORM: cfg->proxy.feature_norm = target->feature_norm = TRAIN_FEATNORM_STANDARD; break;
            case PRUNE_GIVEN_PROXY_EPOCHS: cfg->proxy.epochs = CLI_TABLE_EPOCHS; break;
            case PRUNE_GIVEN_PROXY_BATCH: cfg->proxy.batch_size = CLI_TABLE_BATCH; break;
            case PRUNE_GIVEN_PROXY_LR: cfg->proxy.lr = CLI_TABLE_LR; break;
            case PRUNE_GIVEN_EPOCHS: target->epochs = CLI_TABLE_EPOCHS; break;
            case PRUNE_GIVEN_BATCH: target->batch_size = CLI_TABLE_BATCH; break;
            case PRUNE_GIVEN_LR: target->lr = CLI_TABLE_LR; break;
            default: target->dropout = CLI_TABLE_DROPOUT; break;
            }
            const int w = i ? snprintf(what + l, len - l, "%s%s %g", l ? " " : "", t[i].flag, t[i].num)
                            : snprintf(what + l, len - l, "%s%s standard", l ? " " : "", t[i].flag);
            if (w > 0 && (size_t)w < len - l) l += (size_t)w;
        }
    }
    /* the values that run, recorded for the config (a flag not given resolves to them here) */
    int64_t iv;
    double dv;
    int rc;
    args_str(a, "--feature-norm", layout_featnorm_name(target->feature_norm));
    if ((rc = args_int(a, "--proxy-epochs", cfg->proxy.epochs, &iv)) || (rc = args_int(a, "--proxy-batch-size", cfg->proxy.batch_size, &iv)) ||
        (rc = args_double(a, "--proxy-lr", cfg->proxy.lr, &dv)) || (rc = args_int(a, "--epochs", target->epochs, &iv)) ||
        (rc = args_int(a, "--batch-size", target->batch_size, &iv)) || (rc = args_double(a, "--lr", target->lr, &dv)) ||
        (rc = args_double(a, "--dropout", target->dropout, &dv)))
        return rc;
    return INCA_OK;
}

/* --keep F or a budget curve F1,F2,... (every fraction in (0, 1], checked before any work), then
 * the selector's settings. */
static int select_from_args(const args_t *a, prune_config_t *cfg) {
    int64_t iv;
    int rc;
    const char *ks = args_str(a, "--keep", "0.1");
    cfg->nkeeps = 0;
    for (const char *q = ks;;) {
        char *end;
        errno = 0;
        const double v = strtod(q, &end);
        if (end == q || errno || (*end != ',' && *end != '\0') || !(v > 0 && v <= 1))
            return inca_fail(INCA_EINVAL, "--keep: expected fractions in (0, 1], comma-separated, got '%s'", ks);
        if (cfg->nkeeps == PRUNE_MAX_BUDGETS)
            return inca_fail(INCA_EINVAL, "--keep: at most %d budgets, got '%s'", PRUNE_MAX_BUDGETS, ks);
        /* each budget writes its own -keep%g outputs: two that name one file (0.5,0.5; 0.3,0.3000001)
         * would replace one another, or stop the run halfway */
        for (int b = 0; b < cfg->nkeeps; b++) {
            char p1[64], p2[64];
            pruned_budget_path(p1, sizeof p1, "x", cfg->keeps[b], 2);
            pruned_budget_path(p2, sizeof p2, "x", v, 2);
            if (strcmp(p1, p2) == 0)
                return inca_fail(INCA_EINVAL, "--keep: budgets %g and %.17g name the same outputs (%s); give each once", cfg->keeps[b],
                                 v, p1 + 2);
        }
        cfg->keeps[cfg->nkeeps++] = v;
        if (*end == '\0') break;
        q = end + 1;
    }
    cfg->sel.keep = cfg->keeps[0];
    if ((rc = args_double(a, "--mis-ratio", 0.0, &cfg->sel.mis_ratio))) return rc;
    if ((rc = args_int(a, "--strata", 50, &iv))) return rc;
    cfg->sel.strata = (int)iv;
    const char *tk = args_str(a, "--topk", "hard");
    if (strcmp(tk, "hard") != 0 && strcmp(tk, "easy") != 0) return inca_fail(INCA_EINVAL, "--topk: expected hard or easy, got '%s'", tk);
    cfg->sel.hardest = strcmp(tk, "hard") == 0;
    cfg->sel.balance = args_has(a, "--balance");
    return INCA_OK;
}

/* Label spreading's graph: the kNN graph's k, view, search and FAISS index, then spreading's own
 * settings and which graph it runs on. */
static int spread_from_args(const args_t *a, prune_config_t *cfg) {
    int64_t iv;
    int rc;
    /* --knn K, or --knn exact|faiss|auto: ARCHITECTURE.md's contract names the search by --knn
     * (the search flag is --knn-search; the two must agree when both are given) */
    const char *kw = args_peek(a, "--knn"), *ks = args_peek(a, "--knn-search");
    const int kword = kw && (!strcmp(kw, "exact") || !strcmp(kw, "faiss") || !strcmp(kw, "auto"));
    const int kn_cmd = args_on_command_line(a, "--knn"), ks_cmd = args_on_command_line(a, "--knn-search");
    /* both typed and different: refused; else the one on the command line wins over a --config's */
    if (kword && ks && strcmp(kw, ks) != 0 && kn_cmd == ks_cmd)
        return inca_fail(INCA_EINVAL, "--knn %s and --knn-search %s: two searches asked (--knn takes K or the search)", kw, ks);
    const int by_word = kword && (!ks || kn_cmd || !ks_cmd);
    if (kword) {   /* the config records the word, or K when a typed --knn-search overrode it */
        (void)(by_word ? args_str(a, "--knn", NULL) : args_resolve(a, "--knn", "10"));
        iv = 10;
    } else if ((rc = args_int(a, "--knn", 10, &iv))) return rc;
    cfg->knn_k = (int)iv;
    if ((rc = prune_knn_features_parse(args_str(a, "--knn-features", "auto"), &cfg->knn_features))) return rc;
    if ((rc = args_int(a, "--knn-pca", 200, &iv))) return rc;
    if (iv < 1) return inca_fail(INCA_EINVAL, "--knn-pca: expected a number of components >= 1, got %lld", (long long)iv);
    cfg->knn_pca = iv;
    /* resolved, for the config */
    const char *ks2 = by_word ? args_resolve(a, "--knn-search", kw) : args_str(a, "--knn-search", "auto");
    if (strcmp(ks2, "auto") == 0) cfg->knn_search = PRUNE_KNN_AUTO;
    else if (strcmp(ks2, "exact") == 0) cfg->knn_search = PRUNE_KNN_EXACT;
    else if (strcmp(ks2, "faiss") == 0) cfg->knn_search = PRUNE_KNN_FAISS;
    else return inca_fail(INCA_EINVAL, "--knn-search: expected exact, faiss or auto, got '%s'", ks2);
    if (cfg->knn_search == PRUNE_KNN_FAISS && !knn_faiss_available())   /* before any work */
        return inca_fail(INCA_EINVAL, "%s", KNN_NO_FAISS_MSG);
    cfg->faiss.factory = args_str(a, "--faiss-index", NULL);
    if ((rc = args_int(a, "--faiss-nprobe", 8, &iv))) return rc;
    if (iv < 1 || iv > 1 << 20) return inca_fail(INCA_EINVAL, "--faiss-nprobe: expected 1..%d, got %lld", 1 << 20, (long long)iv);
    cfg->faiss.nprobe = (int)iv;
    if ((rc = args_double(a, "--alpha", 0.9, &cfg->alpha))) return rc;
    cfg->cmn = args_has(a, "--cmn");
    if ((rc = args_int(a, "--iters", 50, &iv))) return rc;
    cfg->iters = (int)iv;
    const char *g = args_str(a, "--graph", "auto");
    if (strcmp(g, "auto") == 0) cfg->graph = -1;
    else if (strcmp(g, "knn") == 0) cfg->graph = 0;
    else if (strcmp(g, "graph") == 0) cfg->graph = 1;
    else return inca_fail(INCA_EINVAL, "--graph: expected auto, knn or graph, got '%s'", g);
    return INCA_OK;
}

/* The proxy: its model and method, the relabelling rounds, what its dynamics are recorded from
 * and how, its training settings; *wd and *fn (--weight-decay, --feature-norm) are the target's
 * too. */
static int proxy_from_args(const args_t *a, prune_config_t *cfg, double *wd, int *fn) {
    int64_t iv;
    int rc;
    train_config_t *p = &cfg->proxy;
    p->model = TRAIN_MODEL_AUTO;   /* not given: chosen from the dataset */
    if ((rc = args_word(a, "--proxy-model", NULL, model_kind_words, NN_KIND_COUNT, MODEL_KIND_EXPECT, &p->model))) return rc;
    if ((rc = method_from_args(a, "--proxy-method", "--proxy-parts", "--proxy-batch-parts", p))) return rc;
    if ((rc = args_int(a, "--relabel", 0, &iv))) return rc;
    if (iv < 0 || iv > 10) return inca_fail(INCA_EINVAL, "--relabel: expected 0..10 rounds, got %lld", (long long)iv);
    cfg->relabel = (int)iv;
    if ((rc = args_double(a, "--relabel-confident", 0.5, &cfg->relabel_confident))) return rc;
    if (!(cfg->relabel_confident > 0 && cfg->relabel_confident <= 1))
        return inca_fail(INCA_EINVAL, "--relabel-confident: expected a share in (0, 1], got %g", cfg->relabel_confident);
    const char *df = args_str(a, "--dynamics-from", "auto");
    if (strcmp(df, "auto") == 0) cfg->dyn_from = PRUNE_DYN_AUTO;
    else if (strcmp(df, "eval") == 0) cfg->dyn_from = PRUNE_DYN_EVAL;
    else if (strcmp(df, "steps") == 0) cfg->dyn_from = PRUNE_DYN_STEPS;
    else return inca_fail(INCA_EINVAL, "--dynamics-from: expected auto, eval or steps, got '%s'", df);
    const char *dl = args_str(a, "--dynamics", "auto");
    if (strcmp(dl, "auto") == 0) cfg->dyn_layout = PRUNE_DYN_AUTO;
    else if (strcmp(dl, "full") == 0) cfg->dyn_layout = PRUNE_DYN_FULL;
    else if (strcmp(dl, "compact") == 0) cfg->dyn_layout = PRUNE_DYN_COMPACT;
    else return inca_fail(INCA_EINVAL, "--dynamics: expected auto, full or compact, got '%s'", dl);
    if ((rc = kind_int(a, "--proxy-epochs", 30, 1, &iv, &cfg->given, PRUNE_GIVEN_PROXY_EPOCHS))) return rc;
    p->epochs = (int)iv;
    if ((rc = args_int(a, "--proxy-hidden", 256, &iv))) return rc;
    p->hidden = iv;
    if ((rc = args_int(a, "--proxy-layers", 2, &iv))) return rc;
    p->layers = (int)iv;
    if ((rc = kind_double(a, "--proxy-lr", 0.01, &p->lr, &cfg->given, PRUNE_GIVEN_PROXY_LR))) return rc;
    if ((rc = args_double(a, "--proxy-dropout", 0.2, &p->dropout))) return rc;
    if ((rc = kind_int(a, "--proxy-batch-size", 0, 0, &iv, &cfg->given, PRUNE_GIVEN_PROXY_BATCH))) return rc;
    p->batch_size = iv;
    if ((rc = args_double(a, "--weight-decay", 5e-4, wd))) return rc;
    p->weight_decay = *wd;
    *fn = TRAIN_FEATNORM_NONE;
    if (args_has(a, "--feature-norm")) {
        if ((rc = args_word(a, "--feature-norm", "none", train_featnorm_words, 3, "none|row|standard", fn))) return rc;
        cfg->given |= PRUNE_GIVEN_FEATNORM;
    }
    p->feature_norm = *fn;
    return INCA_OK;
}

/* The target model for --eval (weight decay wd and feature normalisation fn: the proxy's). */
static int target_from_args(const args_t *a, prune_config_t *cfg, train_config_t *target, double wd, int fn) {
    int64_t iv;
    int rc;
    train_config_default(target);
    target->model = TRAIN_MODEL_AUTO;
    if ((rc = args_word(a, "--model", NULL, model_kind_words, NN_KIND_COUNT, MODEL_KIND_EXPECT, &target->model))) return rc;
    if ((rc = method_from_args(a, "--method", "--parts", "--batch-parts", target))) return rc;
    if ((rc = kind_int(a, "--epochs", 200, 1, &iv, &cfg->given, PRUNE_GIVEN_EPOCHS))) return rc;
    target->epochs = (int)iv;
    if ((rc = args_int(a, "--hidden", 256, &iv))) return rc;
    target->hidden = iv;
    if ((rc = args_int(a, "--layers", 2, &iv))) return rc;
    target->layers = (int)iv;
    if ((rc = kind_double(a, "--lr", 0.01, &target->lr, &cfg->given, PRUNE_GIVEN_LR))) return rc;
    if ((rc = kind_double(a, "--dropout", 0.5, &target->dropout, &cfg->given, PRUNE_GIVEN_DROPOUT))) return rc;
    if ((rc = kind_int(a, "--batch-size", 0, 0, &iv, &cfg->given, PRUNE_GIVEN_BATCH))) return rc;
    target->batch_size = iv;
    target->weight_decay = wd;
    target->feature_norm = fn;
    return INCA_OK;
}

/* The flags in the order they have always been asked: the order of --json's config. */
int prune_config_from_args(const args_t *a, prune_config_t *cfg, train_config_t *target) {
    int64_t iv;
    double wd = 0;
    int rc, fn = TRAIN_FEATNORM_NONE;
    prune_config_default(cfg);
    if ((rc = prune_ssl_parse(args_str(a, "--ssl", "auto"), &cfg->ssl))) return rc;
    if ((rc = score_parse(args_str(a, "--score", "aum"), &cfg->score))) return rc;
    if ((rc = select_parse(args_str(a, "--select", "ccs"), &cfg->sel.kind))) return rc;
    if ((rc = knn_metric_parse(args_str(a, "--metric", "cosine"), &cfg->metric))) return rc;
    if ((rc = select_from_args(a, cfg)) || (rc = spread_from_args(a, cfg))) return rc;
    if ((rc = args_int(a, "--seed", 0, &iv))) return rc;
    cfg->seed = (uint64_t)iv;
    cfg->sel.seed = (uint64_t)iv;
    if ((rc = args_int(a, "--el2n-epochs", 10, &iv))) return rc;
    cfg->el2n_epochs = (int)iv;
    if ((rc = args_double(a, "--tau", 0.95, &cfg->st.tau))) return rc;
    if ((rc = args_double(a, "--noise", 0.2, &cfg->st.noise_strong))) return rc;
    if ((rc = args_double(a, "--lambda-u", 1.0, &cfg->st.lambda_u))) return rc;
    if ((rc = args_int(a, "--ssl-epochs", 100, &iv))) return rc;
    cfg->st.epochs = (int)iv;
    if ((rc = proxy_from_args(a, cfg, &wd, &fn)) || (rc = target_from_args(a, cfg, target, wd, fn))) return rc;
    /* proxy and target training run on the same device (label propagation and self-training
     * stay on the CPU) */
    train_config_t *p = &cfg->proxy;
    const char *dev = args_str(a, "--device", "cpu");
    if (strcmp(dev, "cpu") != 0 && strcmp(dev, "cuda") != 0 && strncmp(dev, "cuda:", 5) != 0 && strcmp(dev, "auto") != 0 && strcmp(dev, "emu") != 0)
        return inca_fail(INCA_EINVAL, "--device: expected cpu, cuda or auto, got '%s'", dev);
    p->device = target->device = dev;
    p->deterministic = target->deterministic = args_has(a, "--deterministic");
    p->tf32 = target->tf32 = args_has(a, "--tf32");
    return INCA_OK;
}

/* The labelled subset's three flags, one at most on the command line: two typed is refused
 * (which should win?); one typed wins over the others a --config file gives (recorded as not
 * given, so a rerun of this line picks the same subset). --labeled-per-class below 1 is no count
 * (a config's 0 is its default: none asked). */
static const char *const labeled_flags[] = {"--labeled", "--labeled-per-class", "--labeled-indices"};

int prune_labeled_check(const args_t *a) {
    const char *typed[3];
    int n = 0;
    for (int i = 0; i < 3; i++)
        if (args_on_command_line(a, labeled_flags[i])) typed[n++] = labeled_flags[i];
    if (n == 2) return inca_fail(INCA_EINVAL, "%s and %s: give one of --labeled, --labeled-per-class, --labeled-indices", typed[0], typed[1]);
    if (n == 3)
        return inca_fail(INCA_EINVAL, "%s, %s and %s: give one of --labeled, --labeled-per-class, --labeled-indices", typed[0],
                         typed[1], typed[2]);
    const char *v = args_peek(a, "--labeled-per-class");
    char *end = NULL;
    errno = 0;
    const long long k = v ? strtoll(v, &end, 10) : 0;
    const int lo = args_on_command_line(a, "--labeled-per-class") ? 1 : 0;
    if (v && !errno && end != v && *end == '\0' && k < lo)   /* not an integer: args_int says so */
        return inca_fail(INCA_EINVAL, "--labeled-per-class: expected >= 1, got %lld", k);
    v = args_peek(a, "--labeled");
    const double f = v ? strtod(v, &end) : 0;
    if (v && args_on_command_line(a, "--labeled") && end != v && *end == '\0' && !(f > 0 && f <= 1))
        return inca_fail(INCA_EINVAL, "--labeled: expected a fraction in (0, 1], got %g", f);
    return INCA_OK;
}

/* flag i of labeled_flags came from --config while another is on the command line */
static int labeled_overridden(const args_t *a, int i) {
    int typed = 0;
    for (int k = 0; k < 3; k++) typed |= args_on_command_line(a, labeled_flags[k]);
    return typed && args_has(a, labeled_flags[i]) && !args_on_command_line(a, labeled_flags[i]);
}

int prune_labeled_from_args(const args_t *a, const char **file, double *fraction, int64_t *per_class) {
    int rc;
    *fraction = 0.01;
    *per_class = 0;
    *file = labeled_overridden(a, 2) ? args_resolve(a, "--labeled-indices", NULL) : args_str(a, "--labeled-indices", NULL);
    if (labeled_overridden(a, 0)) args_resolve(a, "--labeled", NULL);
    else if ((rc = args_double(a, "--labeled", 0.01, fraction))) return rc;
    if (labeled_overridden(a, 1)) args_resolve(a, "--labeled-per-class", NULL);
    else if ((rc = args_int(a, "--labeled-per-class", 0, per_class))) return rc;
    return INCA_OK;
}

/* Where a flag has an effect (the rule of `inca train`, cli_train_check_effect): a flag typed on
 * the command line that the run would ignore is refused, since the result (its text and the
 * config of its JSON line) would claim what did not happen. Only typed flags: a --config file
 * records every flag with its default, and reruns. Each scope returns 1 where the flag applies,
 * else 0 with what the run has instead in with ("with --select topk"). */
typedef struct { char s[96]; } prune_with_t;

static int with_select(const prune_run_t *r, int ok, prune_with_t *w) {
    if (!ok) snprintf(w->s, sizeof w->s, "with --select %s", select_name(r->cfg->sel.kind));
    return ok;
}
static int with_ssl(const prune_run_t *r, int ok, prune_with_t *w) {
    if (!ok) snprintf(w->s, sizeof w->s, "with --ssl %s", prune_ssl_name(r->cfg->ssl));
    return ok;
}
static int on_dropping(const prune_run_t *r, prune_with_t *w) {
    return with_select(r, r->cfg->sel.kind == SEL_CCS || r->cfg->sel.kind == SEL_DOUBLE_END, w);
}
static int on_ccs(const prune_run_t *r, prune_with_t *w) { return with_select(r, r->cfg->sel.kind == SEL_CCS, w); }
static int on_topk(const prune_run_t *r, prune_with_t *w) { return with_select(r, r->cfg->sel.kind == SEL_TOPK, w); }
static int on_scored(const prune_run_t *r, prune_with_t *w) { return with_select(r, r->cfg->sel.kind != SEL_RANDOM, w); }
/* the EL2N window: el2n's score, and dynamics saved or reused (their key holds the window, and a
 * compact recorder sums over it: a later --reuse-dynamics --score el2n reads it) */
static int on_el2n(const prune_run_t *r, prune_with_t *w) {
    if (r->cfg->score == SCORE_EL2N || r->dyn_kept) return 1;
    snprintf(w->s, sizeof w->s, "with --score %s and --no-save-dynamics", score_name(r->cfg->score));
    return 0;
}
/* self-training: --ssl selftrain only (auto's candidates are spreading, SGC and the proxy,
 * pruning/ssl.c) */
static int on_selftrain(const prune_run_t *r, prune_with_t *w) { return with_ssl(r, r->cfg->ssl == PRUNE_SSL_SELFTRAIN, w); }
/* label spreading: --ssl labelprop, and auto (spreading is always one of its candidates) */
static int on_spread(const prune_run_t *r, prune_with_t *w) {
    return with_ssl(r, r->cfg->ssl == PRUNE_SSL_LABELPROP || r->cfg->ssl == PRUNE_SSL_AUTO, w);
}
/* spreading's iterations, and Correct and Smooth's (pruning/pseudo.c) */
static int on_iterated(const prune_run_t *r, prune_with_t *w) {
    const prune_ssl_t s = r->cfg->ssl;
    return with_ssl(r, s == PRUNE_SSL_LABELPROP || s == PRUNE_SSL_AUTO || s == PRUNE_SSL_CS, w);
}
static int on_eval(const prune_run_t *r, prune_with_t *w) {
    if (!r->eval) snprintf(w->s, sizeof w->s, "without --eval");
    return r->eval;
}

typedef struct prune_scope {
    const char *flag;
    int (*applies)(const prune_run_t *r, prune_with_t *with);
    const char *why;   /* where the flag applies, as the message says it */
} prune_scope_t;

#define SELFTRAIN_WHY "only --ssl selftrain trains with it; auto picks among spreading, SGC and the proxy"
#define SPREAD_WHY "only label spreading (--ssl labelprop or auto) uses it"
#define EVAL_WHY "it sets the evaluation of the coreset, which only --eval runs"
static const prune_scope_t prune_scopes[] = {
        {"--mis-ratio", on_dropping, "only ccs and double-end drop mislabelled examples"},
        {"--strata", on_ccs, "only ccs samples across score strata"},
        {"--topk", on_topk, "only topk keeps the hardest or the easiest"},
        {"--score", on_scored, "random selection reads no score"},
        {"--el2n-epochs", on_el2n, "only el2n averages over the first epochs, and saved dynamics keep the window"},
        {"--tau", on_selftrain, SELFTRAIN_WHY},
        {"--noise", on_selftrain, SELFTRAIN_WHY},
        {"--lambda-u", on_selftrain, SELFTRAIN_WHY},
        {"--ssl-epochs", on_selftrain, SELFTRAIN_WHY},
        {"--alpha", on_spread, SPREAD_WHY},
        {"--cmn", on_spread, SPREAD_WHY},
        {"--iters", on_iterated, "only label spreading (--ssl labelprop or auto) and cs iterate"},
        {"--model", on_eval, EVAL_WHY},
        {"--method", on_eval, EVAL_WHY},
        {"--parts", on_eval, EVAL_WHY},
        {"--batch-parts", on_eval, EVAL_WHY},
        {"--epochs", on_eval, EVAL_WHY},
        {"--hidden", on_eval, EVAL_WHY},
        {"--layers", on_eval, EVAL_WHY},
        {"--lr", on_eval, EVAL_WHY},
        {"--dropout", on_eval, EVAL_WHY},
        {"--batch-size", on_eval, EVAL_WHY},
        {"--runs", on_eval, EVAL_WHY},
        {"--eval-sets", on_eval, EVAL_WHY},
        {"--eval-budget", on_eval, EVAL_WHY},
        {"--no-full", on_eval, EVAL_WHY},
};

int prune_check_effect(const args_t *a, const prune_run_t *r) {
    for (size_t i = 0; i < sizeof prune_scopes / sizeof prune_scopes[0]; i++) {
        const prune_scope_t *s = &prune_scopes[i];
        prune_with_t w = {{0}};
        if (!args_on_command_line(a, s->flag) || s->applies(r, &w)) continue;
        return inca_fail(INCA_EINVAL, "%s: has no effect %s (%s)", s->flag, w.s, s->why);
    }
    return INCA_OK;
}
