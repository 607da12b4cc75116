/* Unit tests of the pruning building blocks that need no model: coreset selectors (CCS strata
 * counted by hand, double-end, top-k, random, class-balanced quotas), AUM / forgetting / EL2N /
 * cartography on hand-made probability trajectories, and .npy / text index files. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "core/status.h"
#include "pruning/dynamics.h"
#include "pruning/eval.h"
#include "pruning/prune_config.h"
#include "pruning/score_select.h"
#include "loaders/npy.h"
#include "pruning/select.h"
#include "pruning/selftrain.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int contains(const int64_t *a, int64_t n, int64_t v) {
    for (int64_t i = 0; i < n; i++) if (a[i] == v) return 1;
    return 0;
}

static int count_in(const int64_t *a, int64_t n, int64_t lo, int64_t hi) {
    int c = 0;
    for (int64_t i = 0; i < n; i++) c += a[i] >= lo && a[i] <= hi;
    return c;
}

/* Remaining after dropping positions 5 and 11 (lowest AUM): scores
 * 0 .1 .2 .3 | 1.0 | 2.6 2.7 2.8 2.9 | 3.9 with 4 strata of width 3.90039/4 = 0.97510:
 * counts [4, 1, 4, 1]. Budget 6, strata visited by size (1, 3, 0, 2):
 * min(1, 6/4=1)=1, min(1, 5/3=1)=1, min(4, 4/2=2)=2, min(4, 2/1=2)=2. */
START_TEST(ccs_hand_strata) {
    float score[12] = {0.0f, 0.1f, 0.2f, 0.3f, 1.0f, 2.5f, 2.6f, 2.7f, 2.8f, 2.9f, 3.9f, 4.0f};
    float aum[12];
    for (int i = 0; i < 12; i++) aum[i] = score[i];
    aum[5] = -10.0f;
    aum[11] = -5.0f;
    int64_t out[12], n = 0;
    ck_assert_int_eq(select_ccs(score, aum, 12, 6, 2, 4, 42, out, &n), 0);
    ck_assert_int_eq(n, 6);
    ck_assert(!contains(out, n, 5) && !contains(out, n, 11));
    ck_assert(contains(out, n, 4) && contains(out, n, 10));
    ck_assert_int_eq(count_in(out, n, 0, 3), 2);
    ck_assert_int_eq(count_in(out, n, 6, 9), 2);
    for (int i = 1; i < n; i++) ck_assert(out[i - 1] < out[i]);
    /* budget 9: 1, min(1, 8/3=2)=1, min(4, 7/2=3)=3, min(4, 4/1)=4 */
    ck_assert_int_eq(select_ccs(score, aum, 12, 9, 2, 4, 7, out, &n), 0);
    ck_assert_int_eq(n, 9);
    ck_assert_int_eq(count_in(out, n, 0, 3), 3);
    ck_assert_int_eq(count_in(out, n, 6, 9), 4);
    ck_assert(contains(out, n, 4) && contains(out, n, 10));
    /* the same seed gives the same sample; the sample inside a stratum depends on it */
    int64_t a[12], b[12], na, nb;
    ck_assert_int_eq(select_ccs(score, aum, 12, 6, 2, 4, 1, a, &na), 0);
    ck_assert_int_eq(select_ccs(score, aum, 12, 6, 2, 4, 1, b, &nb), 0);
    ck_assert_int_eq(na, nb);
    ck_assert_mem_eq(a, b, (size_t)na * sizeof *a);
    int differs = 0;
    for (uint64_t s = 2; s < 40 && !differs; s++) {
        ck_assert_int_eq(select_ccs(score, aum, 12, 6, 2, 4, s, b, &nb), 0);
        differs = memcmp(a, b, (size_t)na * sizeof *a) != 0;
    }
    ck_assert(differs);
}
END_TEST

/* All scores negative: the reference's max·1.0001 bound would exclude the maximum; ours keeps it. */
START_TEST(ccs_negative_max_kept) {
    float s[3] = {-3.0f, -2.0f, -1.0f};
    int64_t out[3], n = 0;
    ck_assert_int_eq(select_ccs(s, s, 3, 3, 0, 2, 3, out, &n), 0);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(out[0], 0);
    ck_assert_int_eq(out[2], 2);
    /* all equal scores: one stratum holds everything */
    float e[4] = {1, 1, 1, 1};
    ck_assert_int_eq(select_ccs(e, e, 4, 2, 0, 50, 3, out, &n), 0);
    ck_assert_int_eq(n, 2);
}
END_TEST

START_TEST(double_end_and_topk) {
    float d[5] = {5, 1, 4, 2, 3};   /* higher = harder: order 0, 2, 4, 3, 1 */
    int64_t out[5], n;
    ck_assert_int_eq(select_double_end(d, 5, 2, 1, out, &n), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(out[0], 2);
    ck_assert_int_eq(out[1], 4);
    /* dropping 4 leaves only 1: the window slides to the easy end instead of emptying */
    ck_assert_int_eq(select_double_end(d, 5, 2, 4, out, &n), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(out[0], 1);
    ck_assert_int_eq(out[1], 3);
    ck_assert_int_eq(select_topk(d, 5, 2, 1, out, &n), 0);
    ck_assert_int_eq(out[0], 0);
    ck_assert_int_eq(out[1], 2);
    ck_assert_int_eq(select_topk(d, 5, 2, 0, out, &n), 0);
    ck_assert_int_eq(out[0], 1);
    ck_assert_int_eq(out[1], 3);
    /* ties go to the lower position */
    float t[4] = {1, 1, 1, 1};
    ck_assert_int_eq(select_topk(t, 4, 2, 1, out, &n), 0);
    ck_assert_int_eq(out[0], 0);
    ck_assert_int_eq(out[1], 1);
}
END_TEST

START_TEST(random_reproducible) {
    int64_t a[300], b[300], c[300], na, nb, nc;
    ck_assert_int_eq(select_random(1000, 300, 9, a, &na), 0);
    ck_assert_int_eq(select_random(1000, 300, 9, b, &nb), 0);
    ck_assert_int_eq(select_random(1000, 300, 10, c, &nc), 0);
    ck_assert_int_eq(na, 300);
    ck_assert_mem_eq(a, b, sizeof a);
    ck_assert(memcmp(a, c, sizeof a) != 0);
    for (int i = 1; i < 300; i++) ck_assert(a[i - 1] < a[i]);
    ck_assert(a[0] >= 0 && a[299] < 1000);
    /* roughly uniform: the lower half holds 150 ± 5 sd */
    int low = count_in(a, 300, 0, 499);
    ck_assert(low > 115 && low < 185);
}
END_TEST

START_TEST(balanced_quotas) {
    /* classes 0 x4, 1 x2; keep 0.5 -> m = 3: quotas 2 and 1; top-k hardest within each */
    float s[6] = {1, 9, 3, 7, 2, 8};
    int32_t cls[6] = {0, 0, 0, 0, 1, 1};
    select_opts_t o = {.kind = SEL_TOPK, .keep = 0.5, .mis_ratio = 0, .strata = 50, .hardest = 1, .balance = 1, .seed = 1};
    int64_t *out = NULL, n = 0;
    ck_assert_int_eq(select_run(&o, s, 1, s, cls, 2, 6, &out, &n), 0);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(out[0], 1);
    ck_assert_int_eq(out[1], 3);
    ck_assert_int_eq(out[2], 5);
    inca_free(out);
    /* unbalanced top-k of the same scores: 1, 3, 5 happen to be the global top 3 too; use easiest */
    o.hardest = 0;
    o.balance = 0;
    ck_assert_int_eq(select_run(&o, s, 1, s, cls, 2, 6, &out, &n), 0);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(out[0], 0);
    ck_assert_int_eq(out[1], 2);
    ck_assert_int_eq(out[2], 4);
    inca_free(out);
    /* a score where lower = harder (AUM) is flipped before ranking */
    o.hardest = 1;
    ck_assert_int_eq(select_run(&o, s, 0, s, cls, 2, 6, &out, &n), 0);
    ck_assert_int_eq(out[0], 0);
    ck_assert_int_eq(out[1], 2);
    ck_assert_int_eq(out[2], 4);
    inca_free(out);
    o.keep = 1.5;
    ck_assert_int_eq(select_run(&o, s, 0, s, cls, 2, 6, &out, &n), INCA_EINVAL);
    ck_assert_ptr_null(out);
}
END_TEST

/* m = floor(keep·n) (select.h; CCS's int(ratio·N)): never rounded to the nearest, even at .5. */
START_TEST(budget_is_floor) {
    static const struct { double keep; int64_t n, m; } c[] = {
        {0.15, 10, 1}, {0.05, 10, 0}, {0.999, 10, 9}, {0.19, 100, 19}, {0.29, 100, 29}, {0.3, 10, 3}, {1.0, 7, 7}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int64_t m = -1;
        ck_assert_int_eq(select_budget(c[i].keep, c[i].n, &m), 0);
        ck_assert_msg(m == c[i].m, "keep %g of %lld: %lld, expected floor = %lld", c[i].keep, (long long)c[i].n,
                      (long long)m, (long long)c[i].m);
    }
}
END_TEST

/* The mis-ratio drop counts the examples it selects among: the pool's size unbalanced, each
 * class's own size inside a class-balanced selection. 8 examples, difficulty 8 - position
 * (position 0 the hardest), classes alternating 0, 1; keep 0.25 -> m = 2 (quotas 1 and 1),
 * mis-ratio 0.25. Unbalanced double-end: drop floor(0.25·8) = 2 (positions 0, 1), keep the next
 * two (2, 3). Balanced: class 0 = {0, 2, 4, 6} drops floor(0.25·4) = 1 (0) and keeps 2; class
 * 1 = {1, 3, 5, 7} drops 1 and keeps 3. */
START_TEST(mis_ratio_counts_its_own_examples) {
    float s[8];
    int32_t cls[8];
    for (int i = 0; i < 8; i++) { s[i] = (float)(8 - i); cls[i] = i % 2; }
    select_opts_t o = {.kind = SEL_DOUBLE_END, .keep = 0.25, .mis_ratio = 0.25, .strata = 50, .hardest = 1, .seed = 3};
    for (int bal = 0; bal <= 1; bal++) {
        o.balance = bal;
        int64_t *out = NULL, n = 0;
        ck_assert_int_eq(select_run(&o, s, 1, s, cls, 2, 8, &out, &n), 0);
        ck_assert_int_eq(n, 2);
        ck_assert_msg(out[0] == 2 && out[1] == 3, "%s: kept %lld, %lld; expected 2, 3", bal ? "balanced" : "pool",
                      (long long)out[0], (long long)out[1]);
        inca_free(out);
    }
}
END_TEST

/* Class quotas by largest remainder: classes of 4, 2 and 1 examples, m = floor(0.43·7) = 3:
 * exact shares 12/7, 6/7, 3/7 -> floors 1, 0, 0; the two seats left go to the largest
 * remainders, 6/7 (class 1) then 5/7 (class 0): quotas 2, 1, 0. */
START_TEST(balanced_largest_remainder) {
    float s[7] = {1, 2, 3, 4, 5, 6, 7};
    int32_t cls[7] = {0, 0, 0, 0, 1, 1, 2};
    select_opts_t o = {.kind = SEL_RANDOM, .keep = 0.43, .strata = 50, .hardest = 1, .balance = 1, .seed = 9};
    int64_t *out = NULL, n = 0;
    ck_assert_int_eq(select_run(&o, s, 1, s, cls, 3, 7, &out, &n), 0);
    ck_assert_int_eq(n, 3);
    int per[3] = {0, 0, 0};
    for (int64_t t = 0; t < n; t++) per[cls[out[t]]]++;
    ck_assert_msg(per[0] == 2 && per[1] == 1 && per[2] == 0, "quotas %d %d %d, expected 2 1 0", per[0], per[1], per[2]);
    inca_free(out);
}
END_TEST

/* The strata span [min, max + 1e-4·(max - min)) (REFERENCES.md: not the reference code's
 * max·1.0001, which shrinks the range when max < 0). Scores -3, -2, -2, -1 in 2 strata: step
 * 2.0002 / 2 = 1.0001, boundary -1.9999: counts [3, 1] ({0, 1, 2}, {3}); budget 2: the small
 * stratum gives min(1, 2/2) = 1 (position 3), the other min(3, 1/1) = 1. With max·1.0001 the
 * boundary would fall at -2.00005 and position 3 be sampled from three. */
START_TEST(ccs_strata_top_negative) {
    float s[4] = {-3.0f, -2.0f, -2.0f, -1.0f};
    for (uint64_t seed = 1; seed <= 12; seed++) {
        int64_t out[4], n = 0;
        ck_assert_int_eq(select_ccs(s, s, 4, 2, 0, 2, seed, out, &n), 0);
        ck_assert_int_eq(n, 2);
        ck_assert_msg(out[1] == 3 && out[0] <= 2, "seed %llu: kept %lld, %lld", (unsigned long long)seed, (long long)out[0],
                      (long long)out[1]);
    }
}
END_TEST

/* Orientation from the definitions: more forgetting events (Toneva et al.) and a larger EL2N
 * (Paul et al.) = harder; a lower AUM (Pleiss et al.) or confidence (Swayamdipta et al.) =
 * harder. Defaults from CCS (Zheng et al.): 50 strata, EL2N over epochs 0-9. */
START_TEST(score_orientation_and_ccs_defaults) {
    ck_assert(score_higher_is_harder(SCORE_FORGETTING));
    ck_assert(score_higher_is_harder(SCORE_EL2N));
    ck_assert(!score_higher_is_harder(SCORE_AUM));
    ck_assert(!score_higher_is_harder(SCORE_CARTOGRAPHY));
    prune_config_t c;
    prune_config_default(&c);
    ck_assert_int_eq(c.sel.strata, 50);
    ck_assert_int_eq(c.el2n_epochs, 10);
}
END_TEST

/* Steps per epoch ceil(n / batch_size) (1 full batch, ceil(parts / batch_parts) for the METIS
 * methods), and --eval-budget steps: a subset trains the fewest epochs whose steps reach the full
 * pool's. Batch 10, 4 epochs: pool 100 -> 10 steps an epoch, 40 steps; a coreset of 21 -> 3 an
 * epoch, ceil(40 / 3) = 14 epochs, 42 steps. Nothing is trained (no set asked). */
START_TEST(eval_steps_budget_by_hand) {
    train_config_t t;
    train_config_default(&t);
    t.method = TRAIN_FULL;
    t.batch_size = 10;
    t.epochs = 4;
    ck_assert_int_eq(prune_steps_per_epoch(&t, 100), 10);
    ck_assert_int_eq(prune_steps_per_epoch(&t, 101), 11);
    ck_assert_int_eq(prune_steps_per_epoch(&t, 9), 1);
    ck_assert_int_eq(prune_steps_per_epoch(&t, 21), 3);
    dataset_t d;
    dataset_init(&d);
    int64_t pool[100], sel[21];
    for (int i = 0; i < 100; i++) pool[i] = i;
    for (int i = 0; i < 21; i++) sel[i] = i;
    prune_eval_t e;
    ck_assert_int_eq(prune_eval_run(&d, &t, pool, 100, sel, 21, 1, 1, PRUNE_EVAL_SAME_STEPS, &e), 0);
    ck_assert_int_eq(e.full_epochs, 4);
    ck_assert_int_eq(e.full_steps, 40);
    ck_assert_int_eq(e.subset_epochs, 14);
    ck_assert_int_eq(e.subset_steps, 42);
    ck_assert_int_eq(prune_eval_run(&d, &t, pool, 100, sel, 21, 1, 1, 0, &e), 0);   /* epochs budget */
    ck_assert_int_eq(e.subset_epochs, 4);
    t.batch_size = 0;
    ck_assert_int_eq(prune_steps_per_epoch(&t, 100), 1);
    t.method = TRAIN_CLUSTER;
    t.parts = 10;
    t.batch_parts = 3;
    ck_assert_int_eq(prune_steps_per_epoch(&t, 100), 4);
}
END_TEST

/* prune_score_select on hand-made dynamics: 6 pool positions, pool node ids in reverse (50, 40,
 * ..., 0), 2 classes, 2 epochs with p[y] = q constant: AUM = 2·(2q - 1), forgetting 0 when q > .5
 * (learned, never forgotten) else E = 2 (never learned). q = .9 .2 .6 .3 .8 .7, pseudo-classes 0 0 0
 * 1 1 1. Score forgetting, CCS with 1 stratum, keep 4/6, mis-ratio 1/3: the drop is by AUM (not
 * by the score): positions 1 and 3 (AUM -1.2, -0.8; by class: the lowest of each class, the same
 * two), the 4 left all kept: positions 0 2 4 5 = nodes 50 30 10 0, returned sorted. */
START_TEST(score_select_drops_by_aum_returns_node_ids) {
    enum { N = 6, E = 2 };
    static const float q[N] = {.9f, .2f, .6f, .3f, .8f, .7f};
    prune_config_t cfg;
    prune_config_default(&cfg);
    cfg.score = SCORE_FORGETTING;
    cfg.sel.kind = SEL_CCS;
    cfg.sel.strata = 1;
    cfg.sel.keep = 4.0 / 6.0;
    cfg.sel.mis_ratio = 1.0 / 3.0;
    for (int bal = 0; bal <= 1; bal++) {
        cfg.sel.balance = bal;
        prune_result_t r;
        memset(&r, 0, sizeof r);
        r.npool = N;
        r.pool = inca_malloc(N * sizeof *r.pool);
        r.pseudo = inca_malloc(N * sizeof *r.pseudo);
        ck_assert(r.pool && r.pseudo);
        for (int i = 0; i < N; i++) { r.pool[i] = 50 - 10 * i; r.pseudo[i] = i < 3 ? 0 : 1; }
        ck_assert_int_eq(dyn_init(&r.dyn, N, E), 0);
        for (int t = 0; t < E; t++) {
            float p[N][2];
            for (int i = 0; i < N; i++) { p[i][r.pseudo[i]] = q[i]; p[i][1 - r.pseudo[i]] = 1.0f - q[i]; }
            ck_assert_int_eq(dyn_record(&r.dyn, &p[0][0], 2, 2, r.pseudo, NULL), 0);
        }
        ck_assert_int_eq(prune_score_select(&cfg, 2, &r), 0);
        for (int i = 0; i < N; i++) ck_assert_float_eq_tol(r.aum[i], 2 * (2 * q[i] - 1), 1e-6);
        static const int64_t want[4] = {0, 10, 30, 50};
        ck_assert_int_eq(r.nsel, 4);
        for (int t = 0; t < 4; t++)
            ck_assert_msg(r.sel[t] == want[t], "%s: sel[%d] = %lld, expected %lld", bal ? "balanced" : "pool", t,
                          (long long)r.sel[t], (long long)want[t]);
        prune_result_free(&r);
    }
}
END_TEST

/* Three examples, 3 classes, 4 epochs (see the hand computation beside each value). */
START_TEST(scores_hand_trajectories) {
    const float traj0[4][3] = {{.5f, .3f, .2f}, {.2f, .6f, .2f}, {.7f, .2f, .1f}, {.4f, .4f, .2f}}; /* y = 0 */
    const float traj1[3] = {.6f, .3f, .1f};     /* y = 2, never learned */
    const float traj2[3] = {.45f, .45f, .1f};   /* y = 1, tie with class 0 -> argmax 0, wrong */
    int32_t y[3] = {0, 2, 1};
    int64_t rows[3] = {2, 0, 1};   /* example i lives in row rows[i] of the probability matrix */
    prune_dyn_t d;
    ck_assert_int_eq(dyn_init(&d, 3, 4), 0);
    for (int t = 0; t < 4; t++) {
        float p[3][4];   /* ldp 4: a padded layout */
        memcpy(p[2], traj0[t], sizeof traj0[t]);
        memcpy(p[0], traj1, sizeof traj1);
        memcpy(p[1], traj2, sizeof traj2);
        ck_assert_int_eq(dyn_record(&d, &p[0][0], 4, 3, y, rows), 0);
    }
    float dummy[12] = {0};
    ck_assert_int_eq(dyn_record(&d, dummy, 3, 3, y, NULL), INCA_EINVAL);   /* full */
    float s[3];
    ck_assert_int_eq(dyn_score(&d, SCORE_AUM, 10, s), 0);
    ck_assert_float_eq_tol(s[0], 0.2f - 0.4f + 0.5f + 0.0f, 1e-6);
    ck_assert_float_eq_tol(s[1], 4 * (0.1f - 0.6f), 1e-6);
    ck_assert_float_eq_tol(s[2], 0.0f, 1e-6);
    ck_assert_int_eq(dyn_score(&d, SCORE_FORGETTING, 10, s), 0);
    ck_assert_float_eq(s[0], 1.0f);   /* right, wrong, right, right (tie .4/.4 -> class 0) */
    ck_assert_float_eq(s[1], 4.0f);   /* never learned -> E */
    ck_assert_float_eq(s[2], 4.0f);
    ck_assert_int_eq(dyn_score(&d, SCORE_EL2N, 2, s), 0);
    ck_assert_float_eq_tol(s[0], (sqrt(0.38) + sqrt(1.04)) / 2, 1e-6);
    ck_assert_float_eq_tol(s[1], sqrt(0.36 + 0.09 + 0.81), 1e-6);
    ck_assert_int_eq(dyn_score(&d, SCORE_EL2N, 100, s), 0);   /* capped at the 4 recorded epochs */
    ck_assert_float_eq_tol(s[0], (sqrt(0.38) + sqrt(1.04) + sqrt(0.14) + sqrt(0.56)) / 4, 1e-6);
    float mu[3], sd[3], cor[3];
    ck_assert_int_eq(dyn_cartography(&d, mu, sd, cor), 0);
    ck_assert_float_eq_tol(mu[0], 0.45f, 1e-6);
    ck_assert_float_eq_tol(sd[0], sqrt(0.13 / 4), 1e-6);
    ck_assert_float_eq_tol(cor[0], 0.75f, 1e-6);
    ck_assert_float_eq_tol(sd[1], 0.0f, 1e-6);
    ck_assert_float_eq_tol(cor[2], 0.0f, 1e-6);
    ck_assert_int_eq(dyn_score(&d, SCORE_CARTOGRAPHY, 10, s), 0);
    ck_assert_float_eq_tol(s[1], 0.1f, 1e-6);
    ck_assert(score_higher_is_harder(SCORE_EL2N) && !score_higher_is_harder(SCORE_AUM));
    score_kind_t k;
    ck_assert_int_eq(score_parse("forgetting", &k), 0);
    ck_assert_int_eq(k, SCORE_FORGETTING);
    ck_assert_int_eq(score_parse("grand", &k), INCA_EINVAL);
    int32_t bad[3] = {0, 3, 1};
    prune_dyn_t e;
    ck_assert_int_eq(dyn_init(&e, 3, 1), 0);
    ck_assert_int_eq(dyn_record(&e, dummy, 3, 3, bad, NULL), INCA_EINVAL);
    dyn_free(&e);
    dyn_free(&d);
}
END_TEST

/* Forgetting counts right -> wrong transitions only (Toneva et al.), never learning ones, in both
 * stores: each trajectory below has as many learning as forgetting events but one, so a count of
 * the other transition (or of both) differs (a mutation test found example 0 above cannot tell). */
START_TEST(forgetting_not_learning) {
    /* 1 = right, 0 = wrong at each of 4 epochs; never learned counts E = 4 */
    static const int traj[][4] = {{1, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 0, 1}, {1, 0, 1, 0}, {1, 1, 1, 1}};
    static const float want[] = {1, 0, 1, 2, 0};
    enum { N = 5, E = 4 };
    int32_t y[N] = {0, 0, 0, 0, 0};
    for (int compact = 0; compact <= 1; compact++) {
        prune_dyn_t d;
        ck_assert_int_eq(compact ? dyn_init_compact(&d, N, E, E) : dyn_init(&d, N, E), 0);
        for (int t = 0; t < E; t++) {
            float p[N][2];
            for (int i = 0; i < N; i++) {
                p[i][0] = traj[i][t] ? 0.8f : 0.2f;   /* class 0 is the label */
                p[i][1] = 1.0f - p[i][0];
            }
            if (!compact) ck_assert_int_eq(dyn_record(&d, &p[0][0], 2, 2, y, NULL), 0);
            for (int i = 0; compact && i < N; i++) ck_assert_int_eq(dyn_record_one(&d, i, t, p[i], 2, y[i]), 0);
        }
        float s[N];
        ck_assert_int_eq(dyn_score(&d, SCORE_FORGETTING, E, s), 0);
        for (int i = 0; i < N; i++) ck_assert_msg(s[i] == want[i], "%s, example %d: %g forgetting events, expected %g",
                                                  compact ? "compact" : "full", i, s[i], want[i]);
        dyn_free(&d);
    }
}
END_TEST

/* FlexMatch's flexible thresholds by hand (a mutation test: a linear tau beta for the convex
 * tau beta / (2 - beta) passed the end-to-end check): tau 0.9, 7 unlabelled pool rows. Rows 0
 * and 1 pass tau (class 0 learnt twice), 5 rows unused: beta_0 = 2/5, beta_1 = 0, thresholds
 * 0.9 * 0.4 / 1.6 = 0.225 and 0; row 2 (0.30, class 0) is in (the linear 0.36 leaves it out),
 * row 6 (0.2 < 0.225) out. */
START_TEST(flexmatch_thresholds_by_hand) {
    const int64_t rows[7] = {0, 1, 2, 3, 4, 5, 6};
    const int32_t ys[7] = {-1, -1, -1, -1, -1, -1, -1};
    const float pmax[7] = {0.95f, 0.92f, 0.3f, 0.5f, 0.6f, 0.2f, 0.2f};
    const int32_t arg[7] = {0, 0, 0, 1, 1, 1, 0};
    int64_t cnt[3];
    int32_t selected[7] = {-1, -1, -1, -1, -1, -1, -1}, yu[7];
    ck_assert_int_eq(selftrain_flexmatch_mask(0.9, 2, 7, rows, 7, ys, pmax, arg, cnt, selected, yu), 6);
    const int32_t want_sel[7] = {0, 0, -1, -1, -1, -1, -1}, want_yu[7] = {0, 0, 0, 1, 1, 1, -1};
    for (int i = 0; i < 7; i++) {
        ck_assert_int_eq(selected[i], want_sel[i]);
        ck_assert_msg(yu[i] == want_yu[i], "row %d: %d, want %d", i, yu[i], want_yu[i]);
    }
}
END_TEST

/* FlexMatch's boundaries by hand (a mutation round: the mask's >= as > passed the case above,
 * whose thresholds fall between its confidences): tau 0.5, every unlabelled row's selection
 * class 0 (rows 0 and 1 from an earlier epoch, row 2 now with 0.9 >= 0.5, row 3 now at exactly
 * tau, as FixMatch's confidence >= tau counts it), so beta_0 = 4/4 = 1 and class 0's threshold is
 * tau / (2 - 1) = 0.5: rows 0 and 3 at exactly 0.5 are masked in, row 1 (0.4) is not; the
 * labelled row 4 is neither counted nor masked. */
START_TEST(flexmatch_threshold_inclusive) {
    const int64_t rows[5] = {0, 1, 2, 3, 4};
    const int32_t ys[5] = {-1, -1, -1, -1, 1};
    const float pmax[5] = {0.5f, 0.4f, 0.9f, 0.5f, 0.99f};
    const int32_t arg[5] = {0, 0, 0, 0, 1};
    int64_t cnt[3];
    int32_t selected[5] = {0, 0, -1, -1, -1}, yu[5];
    ck_assert_int_eq(selftrain_flexmatch_mask(0.5, 2, 5, rows, 5, ys, pmax, arg, cnt, selected, yu), 3);
    const int32_t want_sel[5] = {0, 0, 0, 0, -1}, want_yu[5] = {0, -1, 0, 0, -1};
    ck_assert_int_eq(cnt[0], 0);
    ck_assert_int_eq(cnt[1], 4);
    ck_assert_int_eq(cnt[2], 0);
    for (int i = 0; i < 5; i++) {
        ck_assert_msg(selected[i] == want_sel[i], "row %d selected %d, want %d", i, selected[i], want_sel[i]);
        ck_assert_msg(yu[i] == want_yu[i], "row %d: %d, want %d", i, yu[i], want_yu[i]);
    }
}
END_TEST

static char *tmp_path(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

static void write_bytes(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* The compact recorder (running sums, examples recorded one by one and out of example order,
 * as mini-batch steps visit them) against the full matrices filled epoch by epoch: AUM,
 * forgetting, EL2N, confidence and correctness bit for bit, variability within 1e-6; and the
 * refusals of a skipped or repeated epoch. */
START_TEST(compact_equals_full) {
    enum { N = 37, E = 9, CC = 4 };
    static float prob[E][N][CC];
    int32_t y[N];
    rng_t g;
    rng_seed(&g, 11);
    for (int i = 0; i < N; i++) y[i] = (int32_t)(rng_next(&g) % CC);
    for (int t = 0; t < E; t++)
        for (int i = 0; i < N; i++) {
            double s = 0;
            for (int k = 0; k < CC; k++) s += prob[t][i][k] = (float)(rng_uniform(&g) + (k == y[i] ? 0.3 * t / E : 0));
            for (int k = 0; k < CC; k++) prob[t][i][k] = (float)(prob[t][i][k] / s);
        }
    prune_dyn_t full, cmp;
    ck_assert_int_eq(dyn_init(&full, N, E), 0);
    ck_assert_int_eq(dyn_init_compact(&cmp, N, E, 4), 0);
    ck_assert_int_eq(dyn_bytes(&cmp), (int64_t)N * 41);
    for (int t = 0; t < E; t++) {
        ck_assert_int_eq(dyn_record(&full, &prob[t][0][0], CC, CC, y, NULL), 0);
        for (int j = 0; j < N; j++) {   /* a step order: a stride through the examples */
            const int i = (j * 7 + t) % N;
            ck_assert_int_eq(dyn_record_one(&cmp, i, t, prob[t][i], CC, y[i]), 0);
        }
    }
    ck_assert_int_eq(cmp.epochs, E);
    ck_assert_int_eq(dyn_check_complete(&cmp), 0);
    ck_assert_int_eq(dyn_check_complete(&full), 0);
    float a[N], b[N], va[N], vb[N], ca[N], cb[N];
    for (int kind = SCORE_AUM; kind <= SCORE_CARTOGRAPHY; kind++) {
        ck_assert_int_eq(dyn_score(&full, (score_kind_t)kind, 4, a), 0);
        ck_assert_int_eq(dyn_score(&cmp, (score_kind_t)kind, 4, b), 0);
        ck_assert_mem_eq(a, b, sizeof a);
    }
    ck_assert_int_eq(dyn_score(&cmp, SCORE_EL2N, 5, b), INCA_EINVAL);   /* not the window it summed */
    ck_assert_int_eq(dyn_cartography(&full, NULL, va, ca), 0);
    ck_assert_int_eq(dyn_cartography(&cmp, NULL, vb, cb), 0);
    ck_assert_mem_eq(ca, cb, sizeof ca);
    for (int i = 0; i < N; i++) ck_assert_float_eq_tol(va[i], vb[i], 1e-6);
    /* once per epoch, in order */
    prune_dyn_t d;
    ck_assert_int_eq(dyn_init_compact(&d, 3, 4, 2), 0);
    ck_assert_int_eq(dyn_record_one(&d, 0, 0, prob[0][0], CC, y[0]), 0);
    ck_assert_int_eq(dyn_record_one(&d, 0, 0, prob[0][0], CC, y[0]), INCA_EINVAL);   /* twice */
    ck_assert_int_eq(dyn_record_one(&d, 1, 1, prob[0][1], CC, y[1]), INCA_EINVAL);   /* epoch 0 skipped */
    ck_assert_int_eq(dyn_record_one(&d, 1, 0, prob[0][1], CC, y[1]), 0);
    ck_assert_int_eq(dyn_check_complete(&d), INCA_ERR);   /* example 2 never came */
    dyn_free(&d);
    dyn_free(&full);
    dyn_free(&cmp);
}
END_TEST

START_TEST(npy_round_trip_and_formats) {
    char *dir = tu_mkdtemp();
    char *p = tmp_path(dir, "a.npy");
    int64_t ids[5] = {0, 7, 123456789012LL, 3, 42}, *back = NULL, n = 0;
    ck_assert_int_eq(npy_write_i64(p, ids, 5), 0);
    /* header: 10-byte prefix + dict padded with spaces and '\n' to a multiple of 64 */
    FILE *f = fopen(p, "rb");
    unsigned char h[128];
    ck_assert_uint_eq(fread(h, 1, 128, f), 128);
    fclose(f);
    ck_assert_mem_eq(h, "\x93NUMPY\x01\x00", 8);
    int hl = h[8] | h[9] << 8;
    ck_assert_int_eq((10 + hl) % 64, 0);
    ck_assert_int_eq(h[10 + hl - 1], '\n');
    ck_assert(memmem(h, 128, "'shape': (5,)", 13) != NULL);
    ck_assert_int_eq(npy_read_indices(p, &back, &n), 0);
    ck_assert_int_eq(n, 5);
    ck_assert_mem_eq(back, ids, sizeof ids);
    inca_free(back);

    /* as NumPy >= 1.23 writes an int32 (2, 1) array: growth spaces, then alignment padding */
    char *q = tmp_path(dir, "b.bin");
    const char *dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 1), }";
    unsigned char buf[256];
    memset(buf, ' ', sizeof buf);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    size_t dl = strlen(dict), hlen = 128 - 10;
    buf[8] = (unsigned char)hlen;
    buf[9] = 0;
    memcpy(buf + 10, dict, dl);
    buf[127] = '\n';
    int32_t v[2] = {9, 65536};
    memcpy(buf + 128, v, sizeof v);
    write_bytes(q, buf, 128 + sizeof v);
    ck_assert_int_eq(npy_read_indices(q, &back, &n), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(back[0], 9);
    ck_assert_int_eq(back[1], 65536);
    inca_free(back);
    /* a negative int32 is refused; so are floats and truncated data */
    v[1] = -1;
    memcpy(buf + 128, v, sizeof v);
    write_bytes(q, buf, 128 + sizeof v);
    ck_assert_int_eq(npy_read_indices(q, &back, &n), INCA_EINVAL);
    ck_assert_ptr_null(back);
    write_bytes(q, buf, 128 + 4);
    ck_assert_int_eq(npy_read_indices(q, &back, &n), INCA_EINVAL);
    memcpy(buf + 10, "{'descr': '<f4'", 15);
    write_bytes(q, buf, 128 + sizeof v);
    ck_assert_int_eq(npy_read_indices(q, &back, &n), INCA_EINVAL);
    ck_assert(strstr(inca_errmsg(), "b.bin") != NULL);

    /* text: whitespace, commas, comments; errors name the line */
    char *t = tmp_path(dir, "ids.txt");
    write_bytes(t, "# kept ids\n4\n8, 15\n\n16 23 # tail\n42\n", 36);
    ck_assert_int_eq(npy_read_indices(t, &back, &n), 0);
    ck_assert_int_eq(n, 6);
    int64_t want[6] = {4, 8, 15, 16, 23, 42};
    ck_assert_mem_eq(back, want, sizeof want);
    inca_free(back);
    ck_assert_int_eq(indices_write_text(t, want, 6), 0);
    ck_assert_int_eq(npy_read_indices(t, &back, &n), 0);
    ck_assert_int_eq(n, 6);
    ck_assert_mem_eq(back, want, sizeof want);
    inca_free(back);
    write_bytes(t, "1\n2\nx3\n", 7);
    ck_assert_int_eq(npy_read_indices(t, &back, &n), INCA_EINVAL);
    ck_assert(strstr(inca_errmsg(), "ids.txt:3") != NULL);
    write_bytes(t, "1\n-2\n", 5);
    ck_assert_int_eq(npy_read_indices(t, &back, &n), INCA_EINVAL);
    char *missing = tmp_path(dir, "none.npy");
    ck_assert_int_eq(npy_read_indices(missing, &back, &n), INCA_ENOTFOUND);

    float m[6] = {1, 2, 3, 4, 5, 6};
    ck_assert_int_eq(npy_write_f32(p, m, 2, 3), 0);
    f = fopen(p, "rb");
    ck_assert_uint_eq(fread(h, 1, 128, f), 128);
    fclose(f);
    ck_assert(memmem(h, 128, "'<f4'", 5) != NULL && memmem(h, 128, "(2, 3)", 6) != NULL);
    ck_assert_int_eq(npy_read_indices(p, &back, &n), INCA_EINVAL);   /* not an integer array */
    free(p); free(q); free(t); free(missing);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(npy_alloc_failures) {
    char *dir = tu_mkdtemp();
    char *p = tmp_path(dir, "a.txt");
    int64_t ids[3] = {1, 2, 3}, *back = NULL, n = 0;
    ck_assert_int_eq(indices_write_text(p, ids, 3), 0);
    for (long k = 1; k <= 3; k++) {
        inca_alloc_fail_after(k);
        int rc = npy_read_indices(p, &back, &n);
        inca_alloc_fail_after(0);
        if (rc == 0) { inca_free(back); break; }
        ck_assert_int_eq(rc, INCA_ENOMEM);
        ck_assert_ptr_null(back);
    }
    free(p);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* The pseudo-label accuracy counts the pool nodes whose label was hidden (y_vis < 0) and that
 * have a true label, nothing else (eval.h): pool {10..17}, by hand. The visible ones are all
 * right here, so counting them would raise the figure. */
START_TEST(pseudo_acc_hidden_only) {
    int32_t y_true[18], y_vis[18];
    for (int i = 0; i < 18; i++) { y_true[i] = i % 3; y_vis[i] = -1; }
    int64_t pool[8] = {10, 11, 12, 13, 14, 15, 16, 17};
    int32_t pseudo[8];
    for (int i = 0; i < 8; i++) pseudo[i] = y_true[pool[i]];
    y_vis[10] = y_true[10];   /* visible: right, not counted */
    y_vis[11] = y_true[11];
    y_vis[12] = y_true[12];
    pseudo[3] = (y_true[13] + 1) % 3;   /* hidden and wrong */
    pseudo[4] = (y_true[14] + 1) % 3;
    y_true[17] = -1;   /* no true label: not counted */
    pseudo[7] = 0;
    prune_result_t r;
    memset(&r, 0, sizeof r);
    r.npool = 8;
    r.pool = pool;
    r.pseudo = pseudo;
    /* hidden with a true label: 13, 14, 15, 16; right: 15, 16 */
    ck_assert_double_eq_tol(prune_pseudo_acc(y_true, y_vis, &r), 2.0 / 4.0, 1e-15);
    for (int i = 10; i < 18; i++) y_vis[i] = y_true[i] >= 0 ? y_true[i] : -1;   /* all visible: nothing to score */
    ck_assert_double_eq(prune_pseudo_acc(y_true, y_vis, &r), 0.0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("pruning_core");
    TCase *t = tcase_create("core");
    tcase_add_test(t, ccs_hand_strata);
    tcase_add_test(t, pseudo_acc_hidden_only);
    tcase_add_test(t, ccs_negative_max_kept);
    tcase_add_test(t, double_end_and_topk);
    tcase_add_test(t, random_reproducible);
    tcase_add_test(t, balanced_quotas);
    tcase_add_test(t, scores_hand_trajectories);
    tcase_add_test(t, compact_equals_full);
    tcase_add_test(t, forgetting_not_learning);
    tcase_add_test(t, flexmatch_thresholds_by_hand);
    tcase_add_test(t, flexmatch_threshold_inclusive);
    tcase_add_test(t, npy_round_trip_and_formats);
    tcase_add_test(t, npy_alloc_failures);
    tcase_add_test(t, budget_is_floor);
    tcase_add_test(t, mis_ratio_counts_its_own_examples);
    tcase_add_test(t, balanced_largest_remainder);
    tcase_add_test(t, ccs_strata_top_negative);
    tcase_add_test(t, score_orientation_and_ccs_defaults);
    tcase_add_test(t, eval_steps_budget_by_hand);
    tcase_add_test(t, score_select_drops_by_aum_returns_node_ids);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
