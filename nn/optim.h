/* Adam and AdamW over registered parameter tensors, as torch.optim defines them: bias-corrected
 * moments; Adam adds weight decay to the gradient (L2, g += wd·w), AdamW decays the weights
 * directly (w -= lr·wd·w) before the Adam step. Parameters belong to groups, each with its own
 * weight decay, so "weight decay on the first layer only" (Kipf & Welling) is two groups.
 * Tested in test_optim.c against steps computed from the PyTorch formulas. */
#ifndef INCA_OPTIM_H
#define INCA_OPTIM_H
#include <stdint.h>

typedef enum { OPTIM_ADAM = 0, OPTIM_ADAMW = 1 } optim_kind_t;
typedef struct optim optim_t;

/* A new optimiser with no parameters; betas (0.9, 0.999) and eps 1e-8 are PyTorch's defaults.
 * INCA_EINVAL when lr < 0, a beta outside [0, 1) or eps < 0. Free with optim_free. */
int optim_new(optim_kind_t kind, double lr, double beta1, double beta2, double eps, optim_t **out);
void optim_free(optim_t **o);   /* NULL-safe, sets *o = NULL */
/* The same on a kernel context (kernels/backend.h; borrowed): parameters, gradients and the
 * moments live in kc's memory and the step runs there (kc_adam). optim_new uses kc_cpu(). */
struct kern_ctx;
int optim_new_on(optim_kind_t kind, double lr, double beta1, double beta2, double eps, struct kern_ctx *kc,
                 optim_t **out);

/* A parameter group with its own weight decay (>= 0); its id (0, 1, ...) goes to *group. */
int optim_add_group(optim_t *o, double weight_decay, int *group);
/* Register n floats of weights w with gradient g (both owned by the caller and alive as long
 * as the optimiser) in `group`. The optimiser allocates and zeroes the moment buffers. */
int optim_add_param(optim_t *o, int group, float *w, float *g, int64_t n);

/* One step over every parameter with the current gradients (the step counter t becomes t+1).
 * The status of the context's adam op (always INCA_OK on the CPU). */
int optim_step(optim_t *o);
void optim_zero_grad(optim_t *o);          /* sets every registered gradient to 0 */
void optim_set_lr(optim_t *o, double lr);
double optim_lr(const optim_t *o);

/* State, for checkpoints: the step counter and, per parameter (in registration order), views
 * of its first and second moments (n floats each, owned by the optimiser). */
int64_t optim_steps(const optim_t *o);
void optim_set_steps(optim_t *o, int64_t t);
int optim_nparams(const optim_t *o);
int optim_param_state(optim_t *o, int i, float **m, float **v, int64_t *n);   /* kc memory */
#endif
