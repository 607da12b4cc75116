/* The pruned store and the selection's output files; see pruned_store.h. Tested in
 * test_pruning_e2e.c. */
#include "pruning/pruned_store.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "loaders/npy.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* ---- pruned dataset ---- */
int prune_make_pruned(const dataset_t *d, const int64_t *sel, int64_t nsel, dataset_t *out) {
    dataset_init(out);
    int graph = d->adj.rowptr != NULL && d->adj.nnz > 0;
    int rc = INCA_OK;
    for (int64_t t = 0; t < nsel; t++)
        if (sel[t] < 0 || sel[t] >= d->n) return inca_fail(INCA_EINVAL, "pruned: id %lld outside [0, %lld)", (long long)sel[t], (long long)d->n);
    out->f = d->f;
    out->c = d->c;
    snprintf(out->source, sizeof out->source, "pruned:%.240s", d->source);
    if (graph) {
        /* the whole graph; train split = selected nodes; unselected training nodes unlabelled */
        out->n = d->n;
        rc = csr_alloc(&out->adj, d->n, d->n, d->adj.nnz, d->adj.val != NULL);
        if (rc) goto fail;
        memcpy(out->adj.rowptr, d->adj.rowptr, (size_t)(d->n + 1) * sizeof *d->adj.rowptr);
        memcpy(out->adj.col, d->adj.col, (size_t)d->adj.nnz * sizeof *d->adj.col);
        if (d->adj.val) memcpy(out->adj.val, d->adj.val, (size_t)d->adj.nnz * sizeof *d->adj.val);
        if (d->x && d->f) {
            out->x = inca_malloc((size_t)d->n * (size_t)d->f * sizeof *out->x);
            if (!out->x) { rc = INCA_ENOMEM; goto fail; }
            memcpy(out->x, d->x, (size_t)d->n * (size_t)d->f * sizeof *out->x);
        }
        out->y = inca_malloc((size_t)d->n * sizeof *out->y);
        if (!out->y) { rc = INCA_ENOMEM; goto fail; }
        memcpy(out->y, d->y, (size_t)d->n * sizeof *out->y);
        for (int64_t t = 0; t < d->split_n[SPLIT_TRAIN]; t++) out->y[d->split[SPLIT_TRAIN][t]] = -1;
        for (int64_t t = 0; t < nsel; t++) out->y[sel[t]] = d->y[sel[t]];
        for (int s = 0; s < SPLIT_COUNT; s++) {
            const int64_t *src = s == SPLIT_TRAIN ? sel : d->split[s];
            int64_t cnt = s == SPLIT_TRAIN ? nsel : d->split_n[s];
            if (!src || cnt == 0) continue;
            out->split[s] = inca_malloc((size_t)cnt * sizeof *out->split[s]);
            if (!out->split[s]) { rc = INCA_ENOMEM; goto fail; }
            memcpy(out->split[s], src, (size_t)cnt * sizeof *src);
            out->split_n[s] = cnt;
        }
        return INCA_OK;
    }
    /* features only: selected examples, then the valid and test examples, renumbered */
    int64_t nv = d->split_n[SPLIT_VALID], nt = d->split_n[SPLIT_TEST], n = nsel + nv + nt;
    out->n = n;
    out->x = inca_malloc((size_t)(n ? n : 1) * (size_t)(d->f ? d->f : 1) * sizeof *out->x);
    out->y = inca_malloc((size_t)(n ? n : 1) * sizeof *out->y);
    if (!out->x || !out->y) { rc = INCA_ENOMEM; goto fail; }
    int64_t row = 0;
    for (int s = 0; s < SPLIT_COUNT; s++) {
        const int64_t *src = s == SPLIT_TRAIN ? sel : d->split[s];
        int64_t cnt = s == SPLIT_TRAIN ? nsel : d->split_n[s];
        if (cnt == 0) continue;
        out->split[s] = inca_malloc((size_t)cnt * sizeof *out->split[s]);
        if (!out->split[s]) { rc = INCA_ENOMEM; goto fail; }
        out->split_n[s] = cnt;
        for (int64_t t = 0; t < cnt; t++, row++) {
            out->split[s][t] = row;
            memcpy(out->x + row * d->f, d->x + src[t] * d->f, (size_t)d->f * sizeof *out->x);
            out->y[row] = d->y[src[t]];
        }
    }
    return INCA_OK;
fail:
    dataset_free(out);
    return rc;
}

/* Output paths for --indices P: text at P and .npy at P.npy, or, when P ends in ".npy",
 * the .npy at P and the text at P with ".txt" in place of ".npy". */
static void indices_paths(const char *p, char *txt, char *npy, size_t len) {
    size_t l = strlen(p);
    if (l > 4 && strcmp(p + l - 4, ".npy") == 0) {
        snprintf(npy, len, "%s", p);
        snprintf(txt, len, "%.*s.txt", (int)(l - 4), p);
    } else {
        snprintf(txt, len, "%s", p);
        snprintf(npy, len, "%s.npy", p);
    }
}

void pruned_budget_path(char *buf, size_t len, const char *base, double keep, int nkeeps) {
    const size_t l = strlen(base);
    if (nkeeps <= 1) snprintf(buf, len, "%s", base);
    else if (l > 4 && strcmp(base + l - 4, ".npy") == 0) snprintf(buf, len, "%.*s-keep%g.npy", (int)(l - 4), base, keep);
    else if (l > 5 && strcmp(base + l - 5, ".lmdb") == 0) snprintf(buf, len, "%.*s-keep%g.lmdb", (int)(l - 5), base, keep);
    else snprintf(buf, len, "%s-keep%g", base, keep);
}

/* One output file of flag: writable, and not already there unless it may be replaced */
static int output_check(const char *flag, const char *path, int overwrite, int file) {
    struct stat st;
    if (stat(path, &st) == 0) {
        if (file && S_ISDIR(st.st_mode)) return inca_fail(INCA_EINVAL, "%s %s: is a folder, expected a file", flag, path);
        if (!overwrite) return inca_fail(INCA_EINVAL, "%s %s: already exists (pass --overwrite to replace it)", flag, path);
        return INCA_OK;
    }
    const int rc = inca_out_check(path);
    return rc ? inca_fail_ctx(rc, "%s", flag) : INCA_OK;
}

int pruned_outputs_check(const char *out, const char *indices, int text, const double *keeps, int nkeeps, int overwrite) {
    int rc = INCA_OK;
    for (int b = 0; b < nkeeps && rc == INCA_OK; b++) {
        char bp[4096], txt[4096], npy[4096];
        if (out) {
            pruned_budget_path(bp, sizeof bp, out, keeps[b], nkeeps);
            rc = output_check("--out", bp, overwrite, 0);
        }
        if (indices && rc == INCA_OK) {
            pruned_budget_path(bp, sizeof bp, indices, keeps[b], nkeeps);
            indices_paths(bp, txt, npy, sizeof txt);
            rc = output_check("--indices", npy, overwrite, 1);
            if (rc == INCA_OK && text) rc = output_check("--indices", txt, overwrite, 1);
        }
    }
    return rc;
}

int pruned_write(const dataset_t *d, const int64_t *sel, int64_t nsel, double keep, int nkeeps, const char *indices,
                 int text, const char *out, int overwrite) {
    char bpath[4096];
    int rc = INCA_OK;
    if (indices) {
        char txt[4096], npy[4096];
        pruned_budget_path(bpath, sizeof bpath, indices, keep, nkeeps);
        indices_paths(bpath, txt, npy, sizeof txt);
        if (text && (rc = indices_write_text(txt, sel, nsel))) return rc;
        if ((rc = npy_write_i64(npy, sel, nsel))) return rc;
    }
    if (out) {
        dataset_t pruned;
        pruned_budget_path(bpath, sizeof bpath, out, keep, nkeeps);
        if ((rc = prune_make_pruned(d, sel, nsel, &pruned))) return rc;   /* frees what it made on failure */
        rc = dataset_save(&pruned, bpath, overwrite);
        dataset_free(&pruned);
    }
    return rc;
}
