/* Whole-graph passes of a mini-batch run: the view loader's layer-wise passes over row panels
 * of a batch's size (nothing of n x hidden outside the tables and two pass buffers), IncAgg's
 * refresh from its configured source, and the evaluation at an epoch's end (a recompute refresh
 * riding on it). Internal to nn/ (see nn/mb_run.h). */
#ifndef INCA_NN_MB_PASS_H
#define INCA_NN_MB_PASS_H
#include <stdint.h>
#include "nn/mb_run.h"

/* One eval-mode pass of the model over every node, layer by layer; refresh: it also stores S and
 * M at every history site. *logits: R->logits_all. */
int mb_pass(mb_run_t *R, int refresh, const float **logits);
/* An IncAgg refresh due now; shares_eval: an evaluation is due at this step (a recompute
 * refresh then rides on its pass unless --refresh-eval separate). Timed into st. */
int mb_refresh(mb_run_t *R, mb_stats_t *st, int shares_eval);
/* The evaluation at the end of epoch ep (started at te0) and the end of epoch every trainer
 * shares (train_epoch_end: metrics line, best epoch). */
int mb_eval_pass(mb_run_t *R, mb_stats_t *st, int ep, double te0);
#endif
