/* CPU loss and metric kernels: row-wise log-softmax with mean NLL over listed, labelled rows
 * (and its gradient), and accuracy as OGB's evaluator computes it. Rows run in parallel, but
 * the sum over rows runs in the order of idx on one thread, so the loss is identical for any
 * thread count. Tested in test_kernels.c against double references and central finite
 * differences. */
#include "kernels/kernels.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KERN_PAR_MIN 32768

/* One counted row: its loss term lse - z[label] and, when d is non-NULL, its gradient added
 * to d (softmax * inv, minus inv at the label), recomputed in double from the float logits so
 * that finite differences of the loss match the gradient to double precision. */
static double xent_row(const float *z, int64_t c, int32_t label, double inv, float *d) {
    double mx = z[0];
    for (int64_t k = 1; k < c; k++) mx = z[k] > mx ? z[k] : mx;
    double s = 0.0;
    for (int64_t k = 0; k < c; k++) s += exp((double)z[k] - mx);
    const double lse = mx + log(s);
    if (d) {
        for (int64_t k = 0; k < c; k++) d[k] += (float)(exp((double)z[k] - lse) * inv);
        d[label] -= (float)inv;
    }
    return lse - (double)z[label];
}

double kern_softmax_xent(int64_t rows, int64_t c, const float *logits, const int32_t *y,
                         const int64_t *idx, int64_t nidx, float *logp, float *dlogits) {
    /* log-softmax of every row, max-shifted, sums in double (skipped when logp is NULL) */
#pragma omp parallel for schedule(static) if (rows * c >= KERN_PAR_MIN)
    for (int64_t i = 0; i < (logp ? rows : 0); i++) {
        const float *z = logits + i * c;
        float *lp = logp + i * c;
        float mx = z[0];
        for (int64_t k = 1; k < c; k++) mx = z[k] > mx ? z[k] : mx;
        double s = 0.0;
        for (int64_t k = 0; k < c; k++) s += exp((double)z[k] - (double)mx);
        const double lse = (double)mx + log(s);
        for (int64_t k = 0; k < c; k++) lp[k] = (float)((double)z[k] - lse);
    }
    if (dlogits) memset(dlogits, 0, (size_t)(rows * c) * sizeof(float));
    int64_t counted = 0;
    int increasing = 1;   /* every listed row once: gradient rows can be written in parallel */
    for (int64_t t = 0; t < nidx; t++) {
        const int64_t i = idx[t];
        if (i < 0 || i >= rows) return NAN;   /* caller bug: row outside the matrix */
        if (t > 0 && i <= idx[t - 1]) increasing = 0;
        if (y[i] < 0) continue;
        if (y[i] >= c) return NAN;            /* caller bug: label outside [0, c) */
        counted++;
    }
    if (counted == 0) return 0.0;
    const double inv = 1.0 / (double)counted;
    /* Rows in parallel, their loss terms summed on one thread in idx order afterwards: the same
     * bits as the serial loop below. Without scratch (or with a row listed twice and a gradient
     * to write) the serial loop runs; it is the same arithmetic. */
    double *term = nidx * c >= KERN_PAR_MIN && (increasing || !dlogits) ? malloc((size_t)nidx * sizeof *term) : NULL;
    double loss = 0.0;
    if (term) {
#pragma omp parallel for schedule(static)
        for (int64_t t = 0; t < nidx; t++) {
            const int64_t i = idx[t];
            if (y[i] < 0) continue;
            term[t] = xent_row(logits + i * c, c, y[i], inv, dlogits ? dlogits + i * c : NULL);
        }
        for (int64_t t = 0; t < nidx; t++)
            if (y[idx[t]] >= 0) loss += term[t];
        free(term);
        return loss * inv;
    }
    for (int64_t t = 0; t < nidx; t++) {
        const int64_t i = idx[t];
        if (y[i] < 0) continue;
        loss += xent_row(logits + i * c, c, y[i], inv, dlogits ? dlogits + i * c : NULL);
    }
    return loss * inv;
}

void kern_accuracy_counts(int64_t c, const float *scores, const int32_t *y, const int64_t *idx, int64_t nidx,
                         int64_t *correct_out, int64_t *counted_out) {
    int64_t counted = 0, correct = 0;
    for (int64_t t = 0; t < nidx; t++) {
        const int64_t i = idx[t];
        if (y[i] < 0) continue;
        const float *s = scores + i * c;
        int64_t best = 0;
        for (int64_t k = 1; k < c; k++)
            if (s[k] > s[best]) best = k;
        counted++;
        correct += best == (int64_t)y[i];
    }
    *correct_out = correct;
    *counted_out = counted;
}

void kern_class_counts(int64_t c, const float *scores, const int32_t *y, const int64_t *idx, int64_t nidx,
                       int64_t *counts) {
    for (int64_t t = 0; t < nidx; t++) {
        const int64_t i = idx[t];
        if (y[i] < 0 || y[i] >= c) continue;
        const float *s = scores + i * c;
        int64_t best = 0;
        for (int64_t k = 1; k < c; k++)
            if (s[k] > s[best]) best = k;
        counts[y[i]]++;
        counts[c + best]++;
        counts[2 * c + y[i]] += best == (int64_t)y[i];
    }
}

void kern_class_metrics(int64_t c, const int64_t *counts, double *balanced_acc, double *macro_f1) {
    double rec = 0, f1 = 0;
    int64_t nr = 0, nf = 0;
    for (int64_t k = 0; k < c; k++) {
        const int64_t tru = counts[k], pred = counts[c + k], tp = counts[2 * c + k];
        if (tru > 0) { rec += (double)tp / (double)tru; nr++; }
        if (tru + pred > 0) { f1 += 2.0 * (double)tp / (double)(tru + pred); nf++; }
    }
    *balanced_acc = nr ? rec / (double)nr : 0.0;
    *macro_f1 = nf ? f1 / (double)nf : 0.0;
}

double kern_accuracy(int64_t c, const float *scores, const int32_t *y, const int64_t *idx, int64_t nidx) {
    int64_t correct, counted;
    kern_accuracy_counts(c, scores, y, idx, nidx, &correct, &counted);
    return counted ? (double)correct / (double)counted : 0.0;
}
