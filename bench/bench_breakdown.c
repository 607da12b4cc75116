/* inca bench epoch STORE --breakdown --methods full,cluster,gas,incagg [training flags]: each
 * method trained --epochs epochs (evaluation every epoch, as inca train runs it) with every
 * kernel op timed by kind (kernels/profile.h); then the floors measured in the same process
 * (bench/floor.h) and, per kind, the time an epoch spends against the time the op's own bound
 * allows: GEMMs at the BLAS's SGEMM rate, SpMM gathers at the random row-gather bandwidth of
 * their width plus their streamed bytes at copy bandwidth, everything else at copy bandwidth.
 * CPU only: a device's ops would be timed around synchronisations that change the epoch. */
#include "bench/bench.h"
#include "bench/bench_progress.h"
#include "bench/floor.h"
#include "core/json.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/backend.h"
#include "nn/train.h"
#include <stdio.h>
#include <string.h>

static int breakdown_one(const dataset_t *d, train_config_t *c, const partition_t *p, train_method_t m, int json) {
    kern_prof_t prof;
    memset(&prof, 0, sizeof prof);
    train_config_t cc = *c;
    cc.method = m;
    cc.runs = 1;
    cc.prof = &prof;
    cc.given_partition = m == TRAIN_FULL ? NULL : p;
    cc.kc = NULL;   /* train_run makes its context and attaches the profile to it */
    train_result_t r;
    bench_progress_stage("%s, every op timed", train_method_name(m));
    const double t0 = inca_now();
    int rc = train_run(d, &cc, NULL, 0, &r);
    const double wall = inca_now() - t0;
    if (rc != INCA_OK) return inca_fail_ctx(rc, "bench epoch --breakdown, method %s", train_method_name(m));
    bench_floors_t fl;
    memset(&fl, 0, sizeof fl);
    bench_progress_stage("%s: the floors", train_method_name(m));
    if ((rc = bench_floors_measure(d->n, &prof, &fl)) != INCA_OK) { train_result_free(&r); return rc; }
    json_t *j = NULL;
    char what[96];
    snprintf(what, sizeof what, "bench epoch --breakdown: %s", train_method_name(m));
    if (json && (rc = json_new(&j)) != INCA_OK) { train_result_free(&r); return rc; }
    if (j) {
        json_str(j, "method", train_method_name(m));
        /* the data and model that made the figures */
        json_int(j, "nodes", d->n);
        json_int(j, "edges", d->adj.nnz);
        json_str(j, "model", model_kind_name(c->model));
        json_int(j, "layers", c->layers);
        json_int(j, "hidden", c->hidden);
        if (m != TRAIN_FULL) {
            json_int(j, "parts", p->k);
            json_int(j, "batch_parts", c->batch_parts);
        }
        json_int(j, "epochs", r.epochs);
        json_num(j, "test_acc", r.test_acc);
        json_num(j, "epoch_time_s", r.epoch_time_s);
        /* step_time_s is one optimiser step's: an epoch has steps_per_epoch of them */
        json_num(j, "train_time_per_epoch_s", r.step_time_s * (double)(r.steps_per_epoch > 0 ? r.steps_per_epoch : 1));
        json_num(j, "step_time_s", r.step_time_s);   /* the two it is the product of */
        json_int(j, "steps_per_epoch", r.steps_per_epoch);
        json_int(j, "threads", inca_threads());
    }
    /* wall: the whole run (setup, evaluation included) over its epochs */
    bench_breakdown_report(what, &prof, &fl, (double)r.epochs, wall, j);
    if (j) {
        json_str(j, "version", bench_version());
        rc = json_write(j, stdout);
        json_free(&j);
    } else printf("  test accuracy %.4f; train's own epoch time %.4f s\n", r.test_acc, r.epoch_time_s);
    train_result_free(&r);
    return rc;
}

int bench_epoch_breakdown(const dataset_t *d, train_config_t *c, const partition_t *p, const char *methods, int json) {
    static const train_method_t all[] = {TRAIN_FULL, TRAIN_CLUSTER, TRAIN_GAS, TRAIN_INCAGG};
    if (strcmp(c->device ? c->device : "cpu", "cpu") != 0)
        return inca_fail(INCA_EINVAL, "--breakdown: the CPU only (a device's ops would be timed around synchronisations)");
    int rc = INCA_OK, any = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0] && rc == INCA_OK; i++)
        if (strstr(methods, train_method_name(all[i]))) {
            any = 1;
            rc = breakdown_one(d, c, p, all[i], json);
        }
    return rc != INCA_OK || any ? rc : inca_fail(INCA_EINVAL, "--methods: expected a list of full,cluster,gas,incagg, got '%s'", methods);
}
