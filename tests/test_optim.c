/* Tests of nn/optim (Adam, AdamW): three steps on the 1-D quadratic f(w) = (w-3)²/2 against
 * values computed by hand from the torch.optim formulas, per-group weight decay on vectors
 * against an in-test reference, thread-count independence, bad input and allocation failure;
 * and of nn/wavg (the evaluated average of the weights): two updates against the recurrence
 * written out, swaps, bad decay and allocation failure. */
#include "nn/optim.h"
#include "nn/model.h"
#include "nn/wavg.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include "tests/testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Three steps from w = 0 with lr 0.1, betas (0.9, 0.999), eps 1e-8, g = w - 3.
 * Adam, wd 0: step 1 m = -0.3, v = 0.009, m̂ = -3, v̂ = 9, w = 0.1·3/(3+1e-8) = 0.0999999997;
 * step 2 g = -2.9, m = -0.56, v = 0.017401, m̂ = -0.56/0.19 = -2.947368, v̂ = 0.017401/0.001999
 * = 8.704852, w = 0.1 + 0.1·2.947368/2.950398 = 0.1998973; step 3 likewise -> 0.2996185.
 * AdamW, wd 0.5: before step 2, w = 0.1·(1 - 0.1·0.5) = 0.095, then the same Adam step
 * -> 0.1948973 (gradient taken at 0.1, before the decay, as in PyTorch).
 * Adam, wd 0.5: g += 0.5·w, so step 2 uses g = -2.85. */
static void run_quadratic(optim_kind_t kind, double wd, const double want[3]) {
    optim_t *o = NULL;
    ck_assert_int_eq(optim_new(kind, 0.1, 0.9, 0.999, 1e-8, &o), INCA_OK);
    int grp = -1;
    ck_assert_int_eq(optim_add_group(o, wd, &grp), INCA_OK);
    ck_assert_int_eq(grp, 0);
    float w = 0.0f, g = 0.0f;
    ck_assert_int_eq(optim_add_param(o, grp, &w, &g, 1), INCA_OK);
    for (int t = 0; t < 3; t++) {
        g = w - 3.0f;
        optim_step(o);
        ck_assert_msg(fabs(w - want[t]) < 2e-7, "kind %d wd %g step %d: w = %.9g, expected %.9g",
                      (int)kind, wd, t + 1, w, want[t]);
    }
    ck_assert_int_eq(optim_steps(o), 3);
    optim_free(&o);
    ck_assert(o == NULL);
}

START_TEST(adam_quadratic_by_hand) {
    static const double adam[3] = {0.0999999997, 0.1998972922, 0.2996184760};
    static const double adam_wd[3] = {0.0999999997, 0.1998335137, 0.2993766077};
    static const double adamw_wd[3] = {0.0999999997, 0.1948972923, 0.2848818201};
    run_quadratic(OPTIM_ADAM, 0.0, adam);
    run_quadratic(OPTIM_ADAMW, 0.0, adam);   /* no decay: AdamW is Adam */
    run_quadratic(OPTIM_ADAM, 0.5, adam_wd);
    run_quadratic(OPTIM_ADAMW, 0.5, adamw_wd);
}
END_TEST

/* Reference for one element over `steps` steps with gradients g_t = sin(t + k) (textbook form
 * m̂ / (sqrt(v̂) + eps)). */
static double ref_elem(int adamw, double wd, double w0, int k, int steps) {
    const double lr = 0.01, b1 = 0.8, b2 = 0.99, eps = 1e-6;
    double w = w0, m = 0, v = 0;
    for (int t = 1; t <= steps; t++) {
        double g = sin((double)(t + k));
        if (adamw) w *= 1.0 - lr * wd;
        else g += wd * w;
        m = b1 * m + (1 - b1) * g;
        v = b2 * v + (1 - b2) * g * g;
        w -= lr * (m / (1 - pow(b1, t))) / (sqrt(v / (1 - pow(b2, t))) + eps);
    }
    return w;
}

static void run_groups(optim_kind_t kind, int threads, float *w1, float *w2, int64_t n1, int64_t n2) {
    inca_set_threads(threads);
    optim_t *o = NULL;
    ck_assert_int_eq(optim_new(kind, 0.01, 0.8, 0.99, 1e-6, &o), INCA_OK);
    int g0, g1;
    ck_assert_int_eq(optim_add_group(o, 0.3, &g0), INCA_OK);   /* "first layer": decayed */
    ck_assert_int_eq(optim_add_group(o, 0.0, &g1), INCA_OK);   /* the rest: not decayed */
    float *d1 = calloc((size_t)n1, sizeof(float)), *d2 = calloc((size_t)n2, sizeof(float));
    for (int64_t k = 0; k < n1; k++) w1[k] = rng_hash_uniform(1, 1, (uint64_t)k) - 0.5f;
    for (int64_t k = 0; k < n2; k++) w2[k] = rng_hash_uniform(1, 2, (uint64_t)k) - 0.5f;
    ck_assert_int_eq(optim_add_param(o, g0, w1, d1, n1), INCA_OK);
    ck_assert_int_eq(optim_add_param(o, g1, w2, d2, n2), INCA_OK);
    ck_assert_int_eq(optim_nparams(o), 2);
    for (int t = 1; t <= 5; t++) {
        optim_zero_grad(o);
        ck_assert(d1[0] == 0.0f && d2[n2 - 1] == 0.0f);
        for (int64_t k = 0; k < n1; k++) d1[k] = (float)sin((double)(t + (int)(k % 1000)));
        for (int64_t k = 0; k < n2; k++) d2[k] = (float)sin((double)(t + (int)(k % 1000)));
        optim_step(o);
    }
    float *m, *v;
    int64_t n;
    ck_assert_int_eq(optim_param_state(o, 1, &m, &v, &n), INCA_OK);
    ck_assert(n == n2 && m && v);
    ck_assert_int_eq(optim_param_state(o, 2, &m, &v, &n), INCA_EINVAL);
    optim_free(&o);
    free(d1);
    free(d2);
}

START_TEST(groups_match_reference_and_threads) {
    const int64_t n1 = 100000, n2 = 70000;   /* large enough for the threaded loop */
    for (int kind = 0; kind <= 1; kind++) {
        float *a1 = malloc(n1 * sizeof(float)), *a2 = malloc(n2 * sizeof(float));
        float *b1 = malloc(n1 * sizeof(float)), *b2 = malloc(n2 * sizeof(float));
        run_groups((optim_kind_t)kind, 1, a1, a2, n1, n2);
        run_groups((optim_kind_t)kind, 2, b1, b2, n1, n2);
        ck_assert(memcmp(a1, b1, n1 * sizeof(float)) == 0 && memcmp(a2, b2, n2 * sizeof(float)) == 0);
        for (int64_t k = 0; k < n1; k += 997) {
            double want = ref_elem(kind, 0.3, rng_hash_uniform(1, 1, (uint64_t)k) - 0.5f, (int)(k % 1000), 5);
            ck_assert_msg(fabs(a1[k] - want) < 1e-6, "kind %d group 0 [%lld]: %.9g vs %.9g", kind, (long long)k, a1[k], want);
        }
        for (int64_t k = 0; k < n2; k += 991) {
            double want = ref_elem(kind, 0.0, rng_hash_uniform(1, 2, (uint64_t)k) - 0.5f, (int)(k % 1000), 5);
            ck_assert_msg(fabs(a2[k] - want) < 1e-6, "kind %d group 1 [%lld]: %.9g vs %.9g", kind, (long long)k, a2[k], want);
        }
        free(a1); free(a2); free(b1); free(b2);
    }
}
END_TEST

START_TEST(bad_input_and_alloc_failure) {
    optim_t *o = NULL;
    ck_assert_int_eq(optim_new(OPTIM_ADAM, -1.0, 0.9, 0.999, 1e-8, &o), INCA_EINVAL);
    ck_assert(o == NULL);
    ck_assert_int_eq(optim_new(OPTIM_ADAM, 0.1, 1.0, 0.999, 1e-8, &o), INCA_EINVAL);
    ck_assert(strstr(inca_errmsg(), "betas") != NULL);
    ck_assert_int_eq(optim_new(OPTIM_ADAMW, 0.1, 0.9, 0.999, 1e-8, &o), INCA_OK);
    int g;
    ck_assert_int_eq(optim_add_group(o, -0.1, &g), INCA_EINVAL);
    ck_assert_int_eq(optim_add_group(o, 0.1, &g), INCA_OK);
    float w[4] = {0}, d[4] = {0};
    ck_assert_int_eq(optim_add_param(o, 3, w, d, 4), INCA_EINVAL);
    ck_assert(strstr(inca_errmsg(), "group 3") != NULL);
    ck_assert_int_eq(optim_add_param(o, g, w, d, 0), INCA_EINVAL);
    /* every allocation of add_param fails in turn; the optimiser stays usable, nothing leaks
     * (checked under ASan) */
    for (long k = 1; k <= 10; k++) {
        inca_alloc_fail_after(k);
        int rc = optim_add_param(o, g, w, d, 4);
        inca_alloc_fail_after(0);
        if (rc == INCA_OK) break;
        ck_assert_int_eq(rc, INCA_ENOMEM);
        ck_assert_int_eq(optim_nparams(o), 0);
    }
    ck_assert_int_eq(optim_nparams(o), 1);
    optim_set_lr(o, 0.5);
    ck_assert(optim_lr(o) == 0.5);
    optim_free(&o);
    optim_free(&o);   /* NULL-safe */
}
END_TEST

/* avg_0 = w0 (the initial parameters); the parameters set to 1, then to v_i = 0.5 i - 2, with
 * an update after each: avg = d (d w0 + (1 - d) 1) + (1 - d) v, d = 0.75. */
START_TEST(weight_average_by_hand) {
    model_config_t mc;
    model_config_default(&mc);
    mc.kind = NN_GCN;
    mc.in_dim = 3;
    mc.out_dim = 2;
    mc.hidden = 4;
    mc.layers = 2;
    model_t *m = NULL;
    ck_assert_int_eq(model_create(&mc, 8, &m), INCA_OK);
    int64_t nf = 0;
    for (int i = 0; i < model_nparams(m); i++) nf += model_param(m, i)->n;
    double *w0 = malloc(sizeof(double) * (size_t)nf);
    int64_t k = 0;
    for (int i = 0; i < model_nparams(m); i++)
        for (int64_t j = 0; j < model_param(m, i)->n; j++) w0[k++] = model_param(m, i)->w[j];
    wavg_t *w = NULL;
    ck_assert_int_eq(wavg_create(m, 1.0, &w), INCA_EINVAL);
    ck_assert_int_eq(wavg_create(m, 0.0, &w), INCA_EINVAL);
    for (long f = 1; f <= 4; f++) {   /* each allocation fails in turn: nothing leaks (ASan) */
        inca_alloc_fail_after(f);
        int rc = wavg_create(m, 0.75, &w);
        inca_alloc_fail_after(0);
        if (rc == INCA_OK) { wavg_free(&w); break; }
        ck_assert_int_eq(rc, INCA_ENOMEM);
        ck_assert_ptr_null(w);
    }
    ck_assert_int_eq(wavg_create(m, 0.75, &w), INCA_OK);
    ck_assert_int_eq(wavg_floats(w), nf);
    for (int i = 0; i < model_nparams(m); i++)
        for (int64_t j = 0; j < model_param(m, i)->n; j++) model_param(m, i)->w[j] = 1.f;
    ck_assert_int_eq(wavg_update(w), INCA_OK);
    k = 0;
    for (int i = 0; i < model_nparams(m); i++)
        for (int64_t j = 0; j < model_param(m, i)->n; j++, k++) model_param(m, i)->w[j] = (float)(0.5 * (double)k - 2.0);
    ck_assert_int_eq(wavg_update(w), INCA_OK);
    ck_assert_int_eq(wavg_swap(w), INCA_OK);   /* the model holds the average, the buffer v */
    k = 0;
    for (int i = 0; i < model_nparams(m); i++)
        for (int64_t j = 0; j < model_param(m, i)->n; j++, k++) {
            const double v = 0.5 * (double)k - 2.0, want = 0.75 * (0.75 * w0[k] + 0.25) + 0.25 * v;
            ck_assert_msg(fabs(model_param(m, i)->w[j] - want) <= 1e-6 * (1 + fabs(want)), "param %lld: %g vs %g",
                          (long long)k, model_param(m, i)->w[j], want);
            ck_assert(wavg_data(w)[k] == (float)v);
        }
    ck_assert_int_eq(wavg_swap(w), INCA_OK);   /* and back */
    k = 0;
    for (int i = 0; i < model_nparams(m); i++)
        for (int64_t j = 0; j < model_param(m, i)->n; j++, k++) ck_assert(model_param(m, i)->w[j] == (float)(0.5 * (double)k - 2.0));
    wavg_free(&w);
    wavg_free(&w);   /* NULL-safe */
    free(w0);
    model_free(&m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("optim");
    TCase *tc = tcase_create("adam");
    tcase_add_test(tc, adam_quadratic_by_hand);
    tcase_add_test(tc, groups_match_reference_and_threads);
    tcase_add_test(tc, bad_input_and_alloc_failure);
    tcase_add_test(tc, weight_average_by_hand);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
