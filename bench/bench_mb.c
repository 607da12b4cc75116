/* Shared set-up of the mini-batch benchmarks (see bench_mb.h). Exercised by the bench smoke
 * tests in test_incagg.c. */
#include "bench/bench_mb.h"
#include "bench/bench_progress.h"
#include "core/status.h"
#include "core/util.h"
#include <stdio.h>
#include <string.h>

static int flag_range(const args_t *a, const char *name, int64_t def, int64_t lo, int64_t hi, int64_t *v) {
    int rc = args_int(a, name, def, v);
    if (rc == INCA_OK && (*v < lo || *v > hi))
        rc = inca_fail(INCA_EINVAL, "%s: expected an integer in [%lld, %lld], got %lld", name, (long long)lo, (long long)hi, (long long)*v);
    return rc;
}

int bench_mb_config(const args_t *a, train_config_t *c) {
    int rc;
    int64_t v;
    train_config_default(c);
    if ((rc = args_word(a, "--model", "gcn", model_kind_words, NN_KIND_COUNT, MODEL_KIND_EXPECT, &c->model))) return rc;
    if ((rc = flag_range(a, "--layers", 2, 1, 1024, &v))) return rc;
    c->layers = (int)v;
    if ((rc = flag_range(a, "--hidden", 16, 1, 1 << 20, &v))) return rc;
    c->hidden = v;
    if ((rc = flag_range(a, "--epochs", 3, 1, 1 << 20, &v))) return rc;
    c->epochs = (int)v;
    if ((rc = args_double(a, "--lr", 0.01, &c->lr))) return rc;
    if ((rc = args_double(a, "--dropout", 0.5, &c->dropout))) return rc;
    if (!(c->dropout >= 0 && c->dropout < 1)) return inca_fail(INCA_EINVAL, "--dropout: expected a value in [0,1)");
    if ((rc = args_double(a, "--weight-decay", 5e-4, &c->weight_decay))) return rc;
    const char *b1 = args_str(a, "--beta1", "auto");   /* auto: train_beta1_auto (0 for histories) */
    if (strcmp(b1, "auto") != 0) {
        if ((rc = args_double(a, "--beta1", 0.9, &c->beta1))) return rc;
        if (!(c->beta1 >= 0 && c->beta1 < 1)) return inca_fail(INCA_EINVAL, "--beta1: expected auto or a value in [0,1), got %s", b1);
    }
    if ((rc = args_word(a, "--feature-norm", "none", train_featnorm_words, 3, "none|row|standard", &c->feature_norm))) return rc;
    if ((rc = flag_range(a, "--parts", 40, 1, INT32_MAX, &v))) return rc;
    c->parts = (int)v;
    if ((rc = flag_range(a, "--batch-parts", 10, 1, INT32_MAX, &v))) return rc;
    c->batch_parts = (int)(v < c->parts ? v : c->parts);   /* a batch holds at most every part (the value used) */
    if ((rc = flag_range(a, "--refresh", 0, 0, INT32_MAX, &v))) return rc;
    c->refresh = (int)v;
    int hd = HIST_F32;
    if ((rc = args_word(a, "--history-dtype", "fp32", hist_dtype_words, 2, "fp32 or bf16", &hd))) return rc;
    c->history_dtype = (hist_dtype_t)hd;
    if ((rc = args_word(a, "--pass-dtype", "fp32", hist_dtype_words, 2, "fp32 or bf16", &hd))) return rc;
    c->pass_dtype = (hist_dtype_t)hd;
    if ((rc = args_double(a, "--refresh-relax", c->refresh_relax, &c->refresh_relax))) return rc;
    const char *rs = args_str(a, "--refresh-source", NULL);
    if ((rs && (rc = agg_source_parse(rs, &c->refresh_source))) ||
        (rc = args_word(a, "--cluster-norm", NULL, train_cluster_norm_words, 2, "batch or global", &c->cluster_global_norm)) ||
        (rc = args_word(a, "--history-location", NULL, train_history_location_words, 3, "device, host or auto", &c->history_host)) ||
        (rc = args_word(a, "--features-location", NULL, train_history_location_words, 3, "device, host or auto", &c->features_host)) ||
        (rc = args_word(a, "--refresh-eval", "fused", train_refresh_eval_words, 2, "fused or separate", &c->refresh_eval_separate)) ||
        (rc = args_word(a, "--input-layer", "aggregate-first", train_input_layer_words, 2, "aggregate-first or transform-first", &c->input_layer)) ||
        (rc = args_word(a, "--refresh-weights", "auto", train_refresh_weights_words, 3, "average, last or auto", &c->refresh_weights)))
        return rc;
    if ((rc = flag_range(a, "--threads", 0, 0, 4096, &v))) return rc;
    c->threads = (int)v;
    if (c->threads > 0) inca_set_threads(c->threads);
    if ((rc = flag_range(a, "--seed", 0, 0, INT64_MAX, &v))) return rc;
    c->seed = (uint64_t)v;
    c->runs = 1;
    /* the benches time the methods' own steps and refreshes: by default they evaluate the
     * weights themselves (an averaged evaluation unfuses IncAgg's recompute refresh) */
    if ((rc = args_double(a, "--eval-average", 0, &c->eval_average))) return rc;
    if (!(c->eval_average >= 0 && c->eval_average < 1))
        return inca_fail(INCA_EINVAL, "--eval-average: expected a decay in [0,1), got %g", c->eval_average);
    c->device = args_str(a, "--device", "cpu");
    const char *dmb = args_str(a, "--device-memory-budget", NULL);
    if (dmb && (rc = args_size_parse("--device-memory-budget", dmb, &c->device_memory_budget))) return rc;
    c->deterministic = args_has(a, "--deterministic");
    c->tf32 = args_has(a, "--tf32");
    c->log = bench_train_log;   /* the trainer's progress lines under the bench's stage */
    return INCA_OK;
}

int bench_mb_load(const char *path, const train_config_t *c, dataset_t *d, partition_t *p, int *reused) {
    dataset_init(d);
    int rc = dataset_load(path, d);
    if (rc == INCA_OK && !d->adj.rowptr) rc = inca_fail(INCA_EINVAL, "%s has no graph", path);
    train_config_t cs = *c;   /* the partitioning `inca train` would use, from (or into) this store */
    cs.store_path = path;
    if (rc == INCA_OK) rc = train_partition(d, &cs, p, reused);
    if (rc != INCA_OK) dataset_free(d);
    return rc;
}
