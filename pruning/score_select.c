/* Scores from the dynamics and one budget's selection; see score_select.h. Tested in
 * test_pruning_e2e.c. */
#include "pruning/score_select.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include <stdlib.h>

int prune_score_select(const prune_config_t *cfg, int32_t c, prune_result_t *r) {
    int rc = INCA_OK;
    int64_t *pos = NULL;
    double t0 = inca_now();
    train_log(&cfg->proxy, TRAIN_LOG_PROGRESS, "scores and selection");
    INCA_FREE(r->sel);
    r->sec[PRUNE_ST_SCORE] = 0;   /* this call's: a reuse below scores nothing (a curve's later budgets) */
    if (!r->score || !r->aum) {   /* scored once: the next budgets of a curve select from the same scores */
        r->score = inca_malloc((size_t)(r->npool ? r->npool : 1) * sizeof *r->score);
        r->aum = inca_malloc((size_t)(r->npool ? r->npool : 1) * sizeof *r->aum);
        rc = r->score && r->aum ? INCA_OK : INCA_ENOMEM;
        if (!rc) rc = dyn_score(&r->dyn, SCORE_AUM, cfg->el2n_epochs, r->aum);
        if (!rc) rc = dyn_score(&r->dyn, cfg->score, cfg->el2n_epochs, r->score);
        if (rc) {
            INCA_FREE(r->score);
            INCA_FREE(r->aum);
            return rc;
        }
        r->sec[PRUNE_ST_SCORE] = inca_now() - t0;
    }
    t0 = inca_now();
    int64_t np = 0;
    rc = select_run(&cfg->sel, r->score, score_higher_is_harder(cfg->score), r->aum, r->pseudo, c, r->npool, &pos, &np);
    if (rc) return rc;
    for (int64_t t = 0; t < np; t++) pos[t] = r->pool[pos[t]];
    qsort(pos, (size_t)np, sizeof *pos, inca_cmp_i64);
    r->sel = pos;
    r->nsel = np;
    r->sec[PRUNE_ST_SELECT] = inca_now() - t0;
    return INCA_OK;
}
