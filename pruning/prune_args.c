/* The flags of `inca prune` and their parsing into the pipeline and target configurations;
 * see prune_args.h. Exercised through `inca prune` and `inca bench pruning` in
 * test_pruning_e2e.c and test_e2e_json.c. */
#include "pruning/prune_args.h"
#include <errno.h>
#include <stdlib.h>
#include "core/status.h"
#include <stdio.h>
#include <string.h>

const char *const prune_flags[] = {
    "--labeled", "--labeled-per-class", "--labeled-indices", "--ssl", "--score", "--select", "--keep",
    "--mis-ratio", "--strata", "--topk", "--balance!", "--cmn!", "--knn", "--alpha", "--iters", "--metric", "--graph",
    "--proxy-model", "--proxy-epochs", "--proxy-hidden", "--proxy-lr", "--proxy-dropout", "--proxy-layers",
    "--el2n-epochs", "--batch-size", "--proxy-batch-size", "--seed", "--split", "--threads", "--out", "--indices", "--overwrite!", "--eval!", "--quiet!", "--runs",
    "--json!", "--model", "--epochs", "--hidden", "--layers", "--lr", "--dropout", "--weight-decay", "--feature-norm",
    "--no-full!", "--reuse-dynamics!", "--dyn-tag", "--no-save-dynamics!", "--tau", "--noise", "--ssl-epochs",
    "--lambda-u", "--eval-sets", "--device", "--deterministic!", "--tf32!", "--config", "--eval-budget", NULL};

int prune_config_from_args(const args_t *a, prune_config_t *cfg, train_config_t *target) {
    int64_t iv;
    double dv;
    int rc;
    prune_config_default(cfg);
    if ((rc = prune_ssl_parse(args_str(a, "--ssl", "labelprop"), &cfg->ssl))) return rc;
    if ((rc = score_parse(args_str(a, "--score", "aum"), &cfg->score))) return rc;
    if ((rc = select_parse(args_str(a, "--select", "ccs"), &cfg->sel.kind))) return rc;
    if ((rc = knn_metric_parse(args_str(a, "--metric", "cosine"), &cfg->metric))) return rc;
    /* --keep F or a budget curve F1,F2,...: every fraction in (0, 1], checked before any work */
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
    if ((rc = args_int(a, "--knn", 10, &iv))) return rc;
    cfg->knn_k = (int)iv;
    if ((rc = args_double(a, "--alpha", 0.9, &cfg->alpha))) return rc;
    cfg->cmn = args_has(a, "--cmn");
    if ((rc = args_int(a, "--iters", 50, &iv))) return rc;
    cfg->iters = (int)iv;
    const char *g = args_str(a, "--graph", "auto");
    if (strcmp(g, "auto") == 0) cfg->graph = -1;
    else if (strcmp(g, "knn") == 0) cfg->graph = 0;
    else if (strcmp(g, "graph") == 0) cfg->graph = 1;
    else return inca_fail(INCA_EINVAL, "--graph: expected auto, knn or graph, got '%s'", g);
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
    train_config_t *p = &cfg->proxy;
    snprintf(p->model, sizeof p->model, "%s", args_str(a, "--proxy-model", ""));
    if ((rc = args_int(a, "--proxy-epochs", 30, &iv))) return rc;
    p->epochs = (int)iv;
    if ((rc = args_int(a, "--proxy-hidden", 256, &iv))) return rc;
    p->hidden = iv;
    if ((rc = args_int(a, "--proxy-layers", 2, &iv))) return rc;
    p->layers = (int)iv;
    if ((rc = args_double(a, "--proxy-lr", 0.01, &p->lr))) return rc;
    if ((rc = args_double(a, "--proxy-dropout", 0.2, &p->dropout))) return rc;
    if ((rc = args_int(a, "--proxy-batch-size", 0, &iv))) return rc;
    if (iv < 0) return inca_fail(INCA_EINVAL, "--proxy-batch-size: expected >= 0, got %lld", (long long)iv);
    p->batch_size = iv;
    if ((rc = args_double(a, "--weight-decay", 5e-4, &dv))) return rc;
    p->weight_decay = dv;
    int fn = TRAIN_FEATNORM_NONE;
    if (args_has(a, "--feature-norm") && (rc = train_featnorm_parse(args_str(a, "--feature-norm", "none"), &fn))) return rc;
    p->feature_norm = fn;
    /* target model for --eval */
    train_config_default(target);
    snprintf(target->model, sizeof target->model, "%s", args_str(a, "--model", ""));
    snprintf(target->method, sizeof target->method, "full");
    if ((rc = args_int(a, "--epochs", 200, &iv))) return rc;
    target->epochs = (int)iv;
    if ((rc = args_int(a, "--hidden", 256, &iv))) return rc;
    target->hidden = iv;
    if ((rc = args_int(a, "--layers", 2, &iv))) return rc;
    target->layers = (int)iv;
    if ((rc = args_double(a, "--lr", 0.01, &target->lr))) return rc;
    if ((rc = args_double(a, "--dropout", 0.5, &target->dropout))) return rc;
    if ((rc = args_int(a, "--batch-size", 0, &iv))) return rc;
    if (iv < 0) return inca_fail(INCA_EINVAL, "--batch-size: expected >= 0, got %lld", (long long)iv);
    target->batch_size = iv;
    target->weight_decay = dv;
    target->feature_norm = fn;
    /* proxy and target training run on the same device (label propagation and self-training
     * stay on the CPU) */
    const char *dev = args_str(a, "--device", "cpu");
    if (strcmp(dev, "cpu") != 0 && strcmp(dev, "cuda") != 0 && strcmp(dev, "auto") != 0 && strcmp(dev, "emu") != 0)
        return inca_fail(INCA_EINVAL, "--device: expected cpu, cuda or auto, got '%s'", dev);
    p->device = target->device = dev;
    p->deterministic = target->deterministic = args_has(a, "--deterministic");
    p->tf32 = target->tf32 = args_has(a, "--tf32");
    return INCA_OK;
}
