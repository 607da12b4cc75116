/* Adam / AdamW with per-group weight decay; see optim.h. The update of each element follows
 * torch.optim.Adam(W) (non-amsgrad, non-fused): denom = sqrt(v)/sqrt(1-β2^t) + eps,
 * w -= lr/(1-β1^t) · m/denom, computed in double per element. Elementwise only, so the result
 * does not depend on the thread count. Tested in test_optim.c. */
#include "nn/optim.h"
#include "core/alloc.h"
#include "core/status.h"
#include "kernels/backend.h"
#include <math.h>
#include <string.h>

typedef struct optim_param {
    float *w, *g, *m, *v;
    int64_t n;
    int group;
} optim_param_t;

struct optim {
    optim_kind_t kind;
    kern_ctx_t *kc;        /* where parameters and moments live (borrowed) */
    double lr, beta1, beta2, eps;
    int64_t t;
    double *wd;            /* per group */
    int ngroups, cap_groups;
    optim_param_t *p;
    int np, cap_p;
};

int optim_new(optim_kind_t kind, double lr, double beta1, double beta2, double eps, optim_t **out) {
    return optim_new_on(kind, lr, beta1, beta2, eps, kc_cpu(), out);
}

int optim_new_on(optim_kind_t kind, double lr, double beta1, double beta2, double eps, kern_ctx_t *kc, optim_t **out) {
    *out = NULL;
    if (kind != OPTIM_ADAM && kind != OPTIM_ADAMW)
        return inca_fail(INCA_EINVAL, "optim_new: unknown optimiser kind %d", (int)kind);
    if (!(lr >= 0.0) || !(beta1 >= 0.0 && beta1 < 1.0) || !(beta2 >= 0.0 && beta2 < 1.0) || !(eps >= 0.0))
        return inca_fail(INCA_EINVAL, "optim_new: expected lr >= 0, betas in [0,1), eps >= 0; got lr %g betas (%g, %g) eps %g",
                         lr, beta1, beta2, eps);
    optim_t *o = inca_calloc(1, sizeof *o);
    if (!o) return INCA_ENOMEM;
    o->kind = kind;
    o->kc = kc;
    o->lr = lr;
    o->beta1 = beta1;
    o->beta2 = beta2;
    o->eps = eps;
    *out = o;
    return INCA_OK;
}

void optim_free(optim_t **o) {
    if (!o || !*o) return;
    for (int i = 0; i < (*o)->np; i++) {
        kc_release((*o)->kc, KERN_MEM_DEVICE, (*o)->p[i].m);
        kc_release((*o)->kc, KERN_MEM_DEVICE, (*o)->p[i].v);
    }
    inca_free((*o)->p);
    inca_free((*o)->wd);
    inca_free(*o);
    *o = NULL;
}

int optim_add_group(optim_t *o, double weight_decay, int *group) {
    if (!(weight_decay >= 0.0))
        return inca_fail(INCA_EINVAL, "optim_add_group: expected weight decay >= 0, got %g", weight_decay);
    if (o->ngroups == o->cap_groups) {
        int cap = o->cap_groups ? 2 * o->cap_groups : 4;
        double *wd = inca_realloc(o->wd, (size_t)cap * sizeof *wd);
        if (!wd) return INCA_ENOMEM;
        o->wd = wd;
        o->cap_groups = cap;
    }
    o->wd[o->ngroups] = weight_decay;
    *group = o->ngroups++;
    return INCA_OK;
}

int optim_add_param(optim_t *o, int group, float *w, float *g, int64_t n) {
    if (group < 0 || group >= o->ngroups)
        return inca_fail(INCA_EINVAL, "optim_add_param: group %d does not exist (%d groups)", group, o->ngroups);
    if (n <= 0 || !w || !g)
        return inca_fail(INCA_EINVAL, "optim_add_param: expected n > 0 and non-NULL weights and gradient, got n = %lld",
                         (long long)n);
    if (o->np == o->cap_p) {
        int cap = o->cap_p ? 2 * o->cap_p : 8;
        optim_param_t *p = inca_realloc(o->p, (size_t)cap * sizeof *p);
        if (!p) return INCA_ENOMEM;
        o->p = p;
        o->cap_p = cap;
    }
    float *m = NULL, *v = NULL;   /* zeroed by kc_alloc */
    if (kc_alloc(o->kc, KERN_MEM_DEVICE, (size_t)n * sizeof(float), (void **)&m) != INCA_OK ||
        kc_alloc(o->kc, KERN_MEM_DEVICE, (size_t)n * sizeof(float), (void **)&v) != INCA_OK) {
        kc_release(o->kc, KERN_MEM_DEVICE, m);
        return INCA_ENOMEM;
    }
    o->p[o->np++] = (optim_param_t){.w = w, .g = g, .m = m, .v = v, .n = n, .group = group};
    return INCA_OK;
}

int optim_step(optim_t *o) {
    o->t++;
    const double b1 = o->beta1, b2 = o->beta2, eps = o->eps, lr = o->lr;
    const double bc1 = 1.0 - pow(b1, (double)o->t), bc2 = 1.0 - pow(b2, (double)o->t);
    const kern_adam_t base = {.lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .step_size = lr / bc1,
                              .sbc2 = sqrt(bc2), .adamw = o->kind == OPTIM_ADAMW};
    for (int i = 0; i < o->np; i++) {
        optim_param_t *p = &o->p[i];
        kern_adam_t hp = base;
        hp.weight_decay = o->wd[p->group];
        int rc = kc_adam(o->kc, p->n, p->w, p->g, p->m, p->v, &hp);
        if (rc != INCA_OK) return rc;
    }
    return INCA_OK;
}

void optim_zero_grad(optim_t *o) {
    for (int i = 0; i < o->np; i++) kc_zero(o->kc, o->p[i].g, (size_t)o->p[i].n * sizeof(float), KERN_STREAM_COMPUTE);
}

void optim_set_lr(optim_t *o, double lr) { o->lr = lr; }
double optim_lr(const optim_t *o) { return o->lr; }
int64_t optim_steps(const optim_t *o) { return o->t; }
void optim_set_steps(optim_t *o, int64_t t) { o->t = t; }
int optim_nparams(const optim_t *o) { return o->np; }

int optim_param_state(optim_t *o, int i, float **m, float **v, int64_t *n) {
    if (i < 0 || i >= o->np)
        return inca_fail(INCA_EINVAL, "optim_param_state: parameter %d does not exist (%d registered)", i, o->np);
    *m = o->p[i].m;
    *v = o->p[i].v;
    *n = o->p[i].n;
    return INCA_OK;
}
