/* Pseudo-label accuracy and the target trained on the coreset, random subsets and the full
 * pool; see eval.h. Tested in test_pruning_e2e.c. */
#include "pruning/eval.h"
#include "core/util.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "pruning/pruned_store.h"
#include "pruning/select.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

double prune_pseudo_acc(const int32_t *y_true, const int32_t *y_vis, const prune_result_t *r) {
    int64_t ok = 0, cnt = 0;
    for (int64_t i = 0; i < r->npool; i++) {
        int64_t v = r->pool[i];
        if (y_vis[v] >= 0 || y_true[v] < 0) continue;
        cnt++;
        ok += r->pseudo[i] == y_true[v];
    }
    return cnt ? (double)ok / (double)cnt : 0.0;
}

/* ---- evaluation ---- */
static void mean_std(const double *v, int n, double *mean, double *sd) {
    double s = 0, s2 = 0;
    for (int i = 0; i < n; i++) s += v[i];
    *mean = n ? s / n : 0;
    for (int i = 0; i < n; i++) s2 += (v[i] - *mean) * (v[i] - *mean);
    *sd = n > 1 ? sqrt(s2 / (n - 1)) : 0;   /* sample std, as train reports test_acc_std */
}

/* Test accuracy of one target run (model seed `seed`) trained on ids[0..nids). Feature
 * datasets are first compacted to the training rows plus the valid and test rows (the pruned
 * dataset), so the per-epoch evaluation does not run over the unused part of the pool. */
static int eval_one(const dataset_t *d, train_config_t *tc, const int64_t *ids, int64_t nids, uint64_t seed,
                    const char *what, double *acc) {
    train_result_t tr = {0};
    dataset_t cd;
    dataset_init(&cd);
    tc->runs = 1;
    tc->seed = seed;
    int graph = d->adj.rowptr != NULL && d->adj.nnz > 0;
    int rc = graph ? INCA_OK : prune_make_pruned(d, ids, nids, &cd);
    if (!rc) rc = graph ? train_run(d, tc, ids, nids, &tr) : train_run(&cd, tc, NULL, 0, &tr);
    if (rc) inca_fail_ctx(rc, "training the target on %s", what);
    *acc = tr.test_acc;
    train_result_free(&tr);
    dataset_free(&cd);
    return rc;
}

int64_t prune_steps_per_epoch(const train_config_t *target, int64_t n) {
    if (target->method != TRAIN_FULL)   /* METIS batches: the same count whatever the subset */
        return (target->parts + target->batch_parts - 1) / target->batch_parts;
    return target->batch_size > 0 && n > 0 ? (n + target->batch_size - 1) / target->batch_size : 1;
}

int prune_eval_run(const dataset_t *d, const train_config_t *target, const int64_t *pool, int64_t npool,
                   const int64_t *sel, int64_t nsel, int runs, uint64_t seed, unsigned sets, prune_eval_t *e) {
    memset(e, 0, sizeof *e);
    if (runs < 1) return inca_fail(INCA_EINVAL, "--runs: expected >= 1, got %d", runs);
    if (nsel < 1) return inca_fail(INCA_EINVAL, "eval: the coreset is empty");
    int rc = INCA_OK;
    train_config_t tc = *target, tf = *target;   /* the subsets', the full pool's */
    int64_t *rnd = inca_malloc((size_t)nsel * sizeof *rnd);
    double *acc = inca_malloc((size_t)runs * 3 * sizeof *acc);
    if (!rnd || !acc) { rc = INCA_ENOMEM; goto done; }
    tc.on_epoch = tf.on_epoch = NULL;
    tc.out_logits = tf.out_logits = NULL;
    const int64_t spe_full = prune_steps_per_epoch(target, npool), spe_sub = prune_steps_per_epoch(target, nsel);
    if (sets & PRUNE_EVAL_SAME_STEPS) {
        const int64_t ep = ((int64_t)target->epochs * spe_full + spe_sub - 1) / spe_sub;
        if (ep > (1 << 24)) {
            rc = inca_fail(INCA_EINVAL, "--eval-budget steps: a subset of %lld would train %lld epochs; keep more or give "
                           "--eval-budget epochs", (long long)nsel, (long long)ep);
            goto done;
        }
        tc.epochs = (int)ep;
    }
    e->subset_epochs = tc.epochs;
    e->full_epochs = tf.epochs;
    e->subset_steps = (int64_t)tc.epochs * spe_sub;
    e->full_steps = (int64_t)tf.epochs * spe_full;
    for (int i = 0; i < runs; i++) {
        uint64_t si = seed + (uint64_t)i;
        if ((sets & PRUNE_EVAL_CORESET) && (rc = eval_one(d, &tc, sel, nsel, si, "the coreset", &acc[i]))) goto done;
        if (sets & PRUNE_EVAL_RANDOM) {   /* a fresh random subset of the same size per run */
            int64_t got = 0;
            if ((rc = select_random(npool, nsel, rng_hash64(si, 0x7a4d0, 0), rnd, &got))) goto done;
            for (int64_t t = 0; t < got; t++) rnd[t] = pool[rnd[t]];
            qsort(rnd, (size_t)got, sizeof *rnd, inca_cmp_i64);
            if ((rc = eval_one(d, &tc, rnd, got, si, "a random subset", &acc[runs + i]))) goto done;
        }
        if ((sets & PRUNE_EVAL_FULL) && (rc = eval_one(d, &tf, pool, npool, si, "the full pool", &acc[2 * runs + i]))) goto done;
    }
    double *mean[3] = {&e->coreset_acc, &e->random_acc, &e->full_acc}, *sd[3] = {&e->coreset_std, &e->random_std, &e->full_std};
    for (int k = 0; k < 3; k++) {
        if (sets & (1u << k)) mean_std(acc + k * runs, runs, mean[k], sd[k]);
        else *mean[k] = *sd[k] = NAN;
    }
    e->runs = runs;
done:
    inca_free(rnd);
    inca_free(acc);
    return rc;
}

int prune_eval_near_chance(const dataset_t *d, const prune_eval_t *ev, unsigned sets, double *acc, double *share) {
    *acc = (sets & PRUNE_EVAL_FULL) ? ev->full_acc : (sets & PRUNE_EVAL_CORESET) ? ev->coreset_acc : NAN;
    return train_near_chance(d, *acc, share);
}
