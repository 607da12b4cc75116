/* Coreset selectors over a pool of n examples: each returns positions in [0, n), sorted
 * ascending, of at most m = floor(keep·n) examples.
 *   ccs        Zheng et al. 2023 (CCS), as its reference code does: drop the mis_num examples
 *              with the lowest AUM (hardest/mislabelled; ties to the lower position), split the
 *              remaining score range [min, max + 1e-4·(max − min)) into `strata` equal-width
 *              strata (a score s is in stratum k when lo + k·step <= s < lo + (k+1)·step), give
 *              the strata budgets from the smallest stratum to the largest (ties by stratum
 *              index), each min(|stratum|, floor(m_left / strata_left)), and sample each
 *              stratum uniformly (seeded). The budget m is taken of the whole pool.
 *   double-end ELFS: rank by difficulty (hardest first, ties to the lower position), drop the
 *              mis_num hardest, keep the next m; when fewer than m remain after the drop, the
 *              window slides toward the hard end so that m are always kept (the reference code
 *              returns an empty set there).
 *   topk       the m hardest (or easiest) by difficulty.
 *   random     m uniformly at random.
 * "difficulty" is the score oriented so that higher = harder (score_higher_is_harder).
 * Class-balanced variants (select_balanced) run a selector inside each (pseudo-)class with
 * budgets proportional to the class sizes (largest remainder). Deterministic for a seed.
 * Tested in test_pruning_core.c (stratum counts by hand, double-end, top-k, random). */
#ifndef INCA_SELECT_H
#define INCA_SELECT_H
#include <stdint.h>

typedef enum { SEL_CCS = 0, SEL_DOUBLE_END, SEL_TOPK, SEL_RANDOM } select_kind_t;
int select_parse(const char *name, select_kind_t *out);   /* "ccs" | "double-end" | "topk" | "random" */
const char *select_name(select_kind_t k);

/* m = floor(keep · n), keep in (0, 1]; INCA_EINVAL otherwise. */
int select_budget(double keep, int64_t n, int64_t *m);

/* score: the CCS stratification score (any orientation); aum: AUM for the mislabel drop.
 * out: room for m entries; *nout receives the number chosen (< m only when fewer than m remain
 * after the drop, or the strata cannot fill the budget). */
int select_ccs(const float *score, const float *aum, int64_t n, int64_t m, int64_t mis_num, int strata,
               uint64_t seed, int64_t *out, int64_t *nout);
int select_double_end(const float *difficulty, int64_t n, int64_t m, int64_t mis_num, int64_t *out, int64_t *nout);
int select_topk(const float *difficulty, int64_t n, int64_t m, int hardest, int64_t *out, int64_t *nout);
int select_random(int64_t n, int64_t m, uint64_t seed, int64_t *out, int64_t *nout);

typedef struct select_opts {
    select_kind_t kind;
    double keep;        /* fraction of the pool to keep */
    double mis_ratio;   /* ccs / double-end: fraction of the pool dropped as hardest */
    int strata;         /* ccs: 50 */
    int hardest;        /* topk: 1 = hardest, 0 = easiest */
    int balance;        /* 1: select inside each class of `cls` */
    uint64_t seed;
} select_opts_t;

/* Dispatch on o->kind. score/higher_is_harder: the chosen difficulty score; aum: the AUM (used
 * by ccs for the drop; may equal score). cls (n labels in [0, c)) is needed when o->balance.
 * *out is allocated (inca_malloc, caller frees) with *nout sorted positions. */
int select_run(const select_opts_t *o, const float *score, int higher_is_harder, const float *aum,
               const int32_t *cls, int32_t c, int64_t n, int64_t **out, int64_t *nout);
#endif
