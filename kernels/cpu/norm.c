/* CPU BatchNorm and Adam kernels: the per-column and per-element loops that nn/ and the
 * optimiser ran inline, moved behind the kernel table so a device backend can replace them.
 * The arithmetic is unchanged (statistics in double, rows in ascending order). Tested through
 * test_nn.c (float model vs the double instance, finite differences) and test_optim.c. */
#include "kernels/kernels.h"
#include <math.h>

void kern_bn_forward(int64_t n, int64_t f, int train, float *xh, const float *g, const float *b, float *istd,
                     float *rmean, float *rvar, float *y) {
    if (train) {
        for (int64_t k = 0; k < f; k++) {
            double s = 0, s2 = 0;
            for (int64_t i = 0; i < n; i++) s += xh[i * f + k];
            const double mu = s / (double)n;
            for (int64_t i = 0; i < n; i++) {
                const double d = xh[i * f + k] - mu;
                s2 += d * d;
            }
            const double var = s2 / (double)n;
            const double is = 1.0 / sqrt(var + KERN_BN_EPS);
            istd[k] = (float)is;
            for (int64_t i = 0; i < n; i++) xh[i * f + k] = (float)((xh[i * f + k] - mu) * is);
            const double uvar = n > 1 ? s2 / (double)(n - 1) : var;
            rmean[k] = (float)((1 - KERN_BN_MOMENTUM) * rmean[k] + KERN_BN_MOMENTUM * mu);
            rvar[k] = (float)((1 - KERN_BN_MOMENTUM) * rvar[k] + KERN_BN_MOMENTUM * uvar);
        }
    } else {
        for (int64_t k = 0; k < f; k++) istd[k] = (float)(1.0 / sqrt((double)rvar[k] + KERN_BN_EPS));
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < f; k++) xh[i * f + k] = (xh[i * f + k] - rmean[k]) * istd[k];
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < f; k++) y[i * f + k] = g[k] * xh[i * f + k] + b[k];
}

void kern_bn_backward(int64_t n, int64_t f, const float *g, const float *xh, const float *istd, const float *dy,
                      float *dz, float *gg, float *gb) {
    for (int64_t k = 0; k < f; k++) {
        double sdy = 0, sdyx = 0;
        for (int64_t i = 0; i < n; i++) {
            sdy += dy[i * f + k];
            sdyx += (double)dy[i * f + k] * xh[i * f + k];
        }
        gg[k] = (float)sdyx;
        gb[k] = (float)sdy;
        const double c = (double)g[k] * istd[k] / (double)n;
        for (int64_t i = 0; i < n; i++)
            dz[i * f + k] = (float)(c * ((double)n * dy[i * f + k] - sdy - xh[i * f + k] * sdyx));
    }
}

void kern_adam(int64_t n, float *restrict w, const float *restrict g, float *restrict m, float *restrict v,
               const kern_adam_t *hp) {
    const double b1 = hp->beta1, b2 = hp->beta2, eps = hp->eps, lr = hp->lr, wd = hp->weight_decay;
    const double step = hp->step_size, sbc2 = hp->sbc2;
    const int adamw = hp->adamw;
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t k = 0; k < n; k++) {
        double wk = w[k], gk = g[k];
        if (adamw) wk *= 1.0 - lr * wd;
        else gk += wd * wk;
        const double mk = b1 * (double)m[k] + (1.0 - b1) * gk;
        const double vk = b2 * (double)v[k] + (1.0 - b2) * gk * gk;
        m[k] = (float)mk;
        v[k] = (float)vk;
        wk -= step * mk / (sqrt(vk) / sbc2 + eps);
        w[k] = (float)wk;
    }
}
