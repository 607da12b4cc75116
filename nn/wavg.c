/* nn/wavg.h: the average is one flat buffer in model_param order; a swap goes through a
 * scratch buffer of the largest parameter. */
#include "nn/wavg.h"
#include "core/alloc.h"
#include "core/status.h"
#include "kernels/backend.h"

struct wavg {
    model_t *m;
    kern_ctx_t *kc;
    float decay;
    float *avg, *tmp;   /* context memory: every parameter / the largest one */
    int64_t floats;
};

int wavg_create(model_t *m, double decay, wavg_t **out) {
    *out = NULL;
    if (!(decay > 0 && decay < 1)) return inca_fail(INCA_EINVAL, "weight average: decay %g outside (0, 1)", decay);
    wavg_t *w = inca_calloc(1, sizeof *w);
    if (!w) return INCA_ENOMEM;
    w->m = m;
    w->kc = model_ctx(m);
    w->decay = (float)decay;
    int64_t big = 1;
    for (int i = 0; i < model_nparams(m); i++) {
        w->floats += model_param(m, i)->n;
        if (model_param(m, i)->n > big) big = model_param(m, i)->n;
    }
    int rc = kc_alloc(w->kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)(w->floats > 0 ? w->floats : 1), (void **)&w->avg);
    if (rc == INCA_OK) rc = kc_alloc(w->kc, KERN_MEM_DEVICE, sizeof(float) * (size_t)big, (void **)&w->tmp);
    float *a = w->avg;
    for (int i = 0; i < model_nparams(m) && rc == INCA_OK; i++) {
        const nn_param_t *p = model_param(m, i);
        rc = kc_copy(w->kc, a, p->w, sizeof(float) * (size_t)p->n, KERN_D2D, KERN_STREAM_COMPUTE);
        a += p->n;
    }
    if (rc != INCA_OK) {
        wavg_free(&w);
        return rc;
    }
    *out = w;
    return INCA_OK;
}

void wavg_free(wavg_t **pw) {
    if (!pw || !*pw) return;
    wavg_t *w = *pw;
    kc_release(w->kc, KERN_MEM_DEVICE, w->avg);
    kc_release(w->kc, KERN_MEM_DEVICE, w->tmp);
    inca_free(w);
    *pw = NULL;
}

int wavg_update(wavg_t *w) {
    float *a = w->avg;
    int rc = INCA_OK;
    for (int i = 0; i < model_nparams(w->m) && rc == INCA_OK; i++) {
        const nn_param_t *p = model_param(w->m, i);
        rc = kc_axpby(w->kc, p->n, 1.f - w->decay, p->w, w->decay, a);
        a += p->n;
    }
    return rc;
}

int wavg_swap(wavg_t *w) {
    float *a = w->avg;
    int rc = INCA_OK;
    for (int i = 0; i < model_nparams(w->m) && rc == INCA_OK; i++) {
        const nn_param_t *p = model_param(w->m, i);
        const size_t bytes = sizeof(float) * (size_t)p->n;
        rc = kc_copy(w->kc, w->tmp, p->w, bytes, KERN_D2D, KERN_STREAM_COMPUTE);
        if (rc == INCA_OK) rc = kc_copy(w->kc, p->w, a, bytes, KERN_D2D, KERN_STREAM_COMPUTE);
        if (rc == INCA_OK) rc = kc_copy(w->kc, a, w->tmp, bytes, KERN_D2D, KERN_STREAM_COMPUTE);
        a += p->n;
    }
    return rc;
}

float *wavg_data(wavg_t *w) { return w->avg; }
int64_t wavg_floats(const wavg_t *w) { return w->floats; }
