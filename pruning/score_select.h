/* Scores and selection over a pipeline result: the difficulty scores of the proxy's dynamics
 * (dynamics.h: the chosen --score, and AUM for CCS's mislabel drop), computed once, and the
 * coreset of one budget selected from them (select.h), returned as sorted node ids. Each budget
 * of a curve (--keep F1,F2,...) calls it again: the scores are kept, only the selection reruns.
 * Tested in test_pruning_e2e.c (stored dynamics rescored, budgets from the same scores) and,
 * for the scores and selectors themselves, test_pruning_core.c. */
#ifndef INCA_PRUNE_SCORE_SELECT_H
#define INCA_PRUNE_SCORE_SELECT_H
#include <stdint.h>
#include "pruning/prune_config.h"

/* The scoring and selection stages alone, from r->pseudo and r->dyn (after prune_run or
 * prune_dyn_load): fills r->score and r->aum (when not yet scored) and r->sel for cfg->sel.keep;
 * r->sec[SCORE] (the first call) and r->sec[SELECT]. */
int prune_score_select(const prune_config_t *cfg, int32_t c, prune_result_t *r);
#endif
