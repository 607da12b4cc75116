/* PCA whitening; see pca.h. */
#include "pruning/pca.h"
#include "core/alloc.h"
#include "core/status.h"
#include "kernels/kernels.h"
#include <cblas.h>
#include <math.h>
#include <string.h>

/* LAPACK (in OpenBLAS): eigenvalues ascending, eigenvectors in the columns of a (column-major) */
extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w, double *work,
                   const int *lwork, int *info);

enum { PCA_BLOCK = 4096 };

int pca_whiten(const float *x, int64_t n, int64_t f, int64_t d, float **out, double *var_kept) {
    *out = NULL;
    if (n < 2 || f < 1) return inca_fail(INCA_EINVAL, "pca: need at least 2 rows and 1 feature, got %lld x %lld", (long long)n, (long long)f);
    if (d < 1 || d > f) return inca_fail(INCA_EINVAL, "pca: expected 1 <= d <= %lld components, got %lld", (long long)f, (long long)d);
    if (f > 46340) return inca_fail(INCA_EINVAL, "pca: %lld features is more than the f x f covariance allows", (long long)f);
    int rc = INCA_OK;
    const int64_t b = n < PCA_BLOCK ? n : PCA_BLOCK;
    double *mu = inca_calloc((size_t)f, sizeof *mu), *cov = inca_calloc((size_t)(f * f), sizeof *cov);
    double *ev = inca_malloc((size_t)f * sizeof *ev), *work = NULL;
    float *blk = inca_malloc((size_t)(b * f) * sizeof *blk), *cb = inca_malloc((size_t)(f * f) * sizeof *cb);
    float *proj = inca_malloc((size_t)(f * d) * sizeof *proj), *mf = inca_malloc((size_t)f * sizeof *mf);
    float *z = inca_malloc((size_t)(n * d) * sizeof *z);
    if (!mu || !cov || !ev || !blk || !cb || !proj || !mf || !z) { rc = INCA_ENOMEM; goto done; }
    for (int64_t i = 0; i < n; i++)
        for (int64_t t = 0; t < f; t++) mu[t] += x[i * f + t];
    for (int64_t t = 0; t < f; t++) { mu[t] /= (double)n; mf[t] = (float)mu[t]; }
    /* covariance: float products within a block of rows, summed over blocks in double */
    for (int64_t r0 = 0; r0 < n; r0 += b) {
        const int64_t rb = n - r0 < b ? n - r0 : b;
        for (int64_t i = 0; i < rb; i++)
            for (int64_t t = 0; t < f; t++) blk[i * f + t] = x[(r0 + i) * f + t] - mf[t];
        cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)f, (int)rb, 1.0f, blk, (int)f, 0.0f, cb, (int)f);
        for (int64_t s = 0; s < f; s++)
            for (int64_t t = s; t < f; t++) cov[s * f + t] += cb[s * f + t];
    }
    for (int64_t s = 0; s < f; s++)
        for (int64_t t = s; t < f; t++) cov[t * f + s] = cov[s * f + t] /= (double)n;   /* symmetric: either layout */
    int nn = (int)f, lwork = -1, info = 0;
    double wq = 0;
    dsyev_("V", "U", &nn, cov, &nn, ev, &wq, &lwork, &info);
    if (info != 0) { rc = inca_fail(INCA_ERR, "pca: dsyev workspace query failed (info %d)", info); goto done; }
    lwork = (int)wq;
    if (!(work = inca_malloc((size_t)(lwork > 1 ? lwork : 1) * sizeof *work))) { rc = INCA_ENOMEM; goto done; }
    dsyev_("V", "U", &nn, cov, &nn, ev, work, &lwork, &info);
    if (info != 0) { rc = inca_fail(INCA_ERR, "pca: dsyev did not converge (info %d)", info); goto done; }
    /* column j of cov (column-major) is the eigenvector of ev[j], ascending: axis a = f-1-a'th */
    double tot = 0, kept = 0;
    for (int64_t j = 0; j < f; j++) tot += ev[j] > 0 ? ev[j] : 0;
    const double top = ev[f - 1] > 0 ? ev[f - 1] : 0;
    for (int64_t a = 0; a < d; a++) {
        const int64_t j = f - 1 - a;
        const double lam = ev[j];
        kept += lam > 0 ? lam : 0;
        const double sc = lam > 1e-5 * top && lam > 0 ? 1.0 / sqrt(lam) : 0.0;
        /* a fixed sign (largest |component| positive) so the output does not hang on LAPACK's */
        int64_t am = 0;
        for (int64_t t = 1; t < f; t++) if (fabs(cov[j * f + t]) > fabs(cov[j * f + am])) am = t;
        const double sg = cov[j * f + am] < 0 ? -sc : sc;
        for (int64_t t = 0; t < f; t++) proj[t * d + a] = (float)(cov[j * f + t] * sg);
    }
    if (var_kept) *var_kept = tot > 0 ? kept / tot : 0;
    for (int64_t r0 = 0; r0 < n; r0 += b) {
        const int64_t rb = n - r0 < b ? n - r0 : b;
        for (int64_t i = 0; i < rb; i++)
            for (int64_t t = 0; t < f; t++) blk[i * f + t] = x[(r0 + i) * f + t] - mf[t];
        kern_gemm(0, 0, rb, d, f, 1.0f, blk, f, proj, d, 0.0f, z + r0 * d, d);
    }
    *out = z;
    z = NULL;
done:
    inca_free(mu);
    inca_free(cov);
    inca_free(ev);
    inca_free(work);
    inca_free(blk);
    inca_free(cb);
    inca_free(proj);
    inca_free(mf);
    inca_free(z);
    return rc;
}
