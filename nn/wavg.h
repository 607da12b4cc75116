/* An exponential moving average of a model's parameters, for evaluation (Polyak & Juditsky
 * 1992; the "EMA of weights" of Tarvainen & Valpola 2017): avg <- d avg + (1 - d) w after every
 * optimiser step, and the model is evaluated with avg while training goes on with w.
 * Why (issue 33): mini-batch steps on a graph whose batches differ in their class mix leave the
 * last iterate wherever the last few batches pushed it; without momentum (what the history
 * methods need, train_beta1_auto) its full-graph accuracy swings 10-30 points from one epoch to
 * the next while the average over about an epoch's steps moves smoothly.
 * The average lives in the model's context memory (one flat buffer in model_param order) and
 * starts at the parameters the handle was made with. Tested in test_optim.c (the average
 * against a recurrence computed by hand, swap twice = identity). */
#ifndef INCA_NN_WAVG_H
#define INCA_NN_WAVG_H
#include <stdint.h>
#include "nn/model.h"

typedef struct wavg wavg_t;

/* decay in (0, 1); INCA_EINVAL otherwise, INCA_ENOMEM. The model is borrowed. */
int wavg_create(model_t *m, double decay, wavg_t **out);
void wavg_free(wavg_t **w);   /* NULL-safe */
/* avg <- decay avg + (1 - decay) w, for every parameter (after each optimiser step). */
int wavg_update(wavg_t *w);
/* Exchange the model's parameters with the average (call again to swap back). */
int wavg_swap(wavg_t *w);
/* The average as one flat buffer of wavg_floats() floats in context memory (checkpoints). */
float *wavg_data(wavg_t *w);
int64_t wavg_floats(const wavg_t *w);
#endif
