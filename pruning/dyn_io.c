/* The proxy's dynamics saved in and loaded from the source store; see dyn_io.h. Tested in
 * test_pruning_e2e.c. */
#include "pruning/dyn_io.h"
#include "core/status.h"
#include "loaders/store.h"
#include <stdio.h>
#include <string.h>

/* ---- dynamics in the store ---- */
#define DYN_MAGIC 0x314e5944u   /* "DYN1" */
typedef struct dyn_header {
    uint32_t magic, version;
    int64_t npool;
    int32_t epochs, classes;
    char key[1024];
    int32_t el2n_epochs, dyn_from;   /* the compact EL2N window (version 2); PRUNE_DYN_EVAL | _STEPS */
    int32_t ssl_used, knn_features_used;   /* the pseudo-labeller that ran, its view, and the check */
    int64_t ssl_check_n;
    double ssl_check_acc[PRUNE_CAND_COUNT];
} dyn_header_t;

static void dyn_name(char *buf, size_t len, const char *tag, const char *what) {
    snprintf(buf, len, "dyn/%s/%s", tag, what);
}

/* version 1: the full matrices; version 2: the compact running sums (dyn_init_compact) */
static const char *const dyn_full_what[4] = {"py", "pmo", "sq", "correct"};
static const char *const dyn_compact_what[7] = {"s_margin", "s_el2n", "s_py", "s_py2", "n_forget", "n_correct", "state"};
static const store_dtype_t dyn_compact_dt[7] = {DT_F64, DT_F64, DT_F64, DT_F64, DT_I32, DT_I32, DT_U8};

static void **dyn_compact_ptr(prune_dyn_t *d, int k) {
    void **p[7] = {(void **)&d->s_margin, (void **)&d->s_el2n, (void **)&d->s_py, (void **)&d->s_py2,
                   (void **)&d->n_forget, (void **)&d->n_correct, (void **)&d->state};
    return p[k];
}

int prune_dyn_save(const char *path, const char *tag, const char *key, const prune_result_t *r, int32_t c) {
    store_t *s = NULL;
    store_wtx_t *w = NULL;
    dyn_header_t h;
    memset(&h, 0, sizeof h);
    h.magic = DYN_MAGIC;
    h.version = r->dyn.compact ? 2 : 1;
    h.npool = r->npool;
    h.epochs = r->dyn.epochs;
    h.classes = c;
    if (r->dyn.compact) h.el2n_epochs = r->dyn.el2n_epochs;
    h.dyn_from = r->dyn_from;
    h.ssl_used = (int32_t)r->ssl_used;
    h.knn_features_used = r->knn_features_used;
    h.ssl_check_n = r->ssl_check_n;
    memcpy(h.ssl_check_acc, r->ssl_check_acc, sizeof h.ssl_check_acc);
    snprintf(h.key, sizeof h.key, "%s", key ? key : "");
    char rec[160], nm[160];
    snprintf(rec, sizeof rec, "dyn:%s", tag);
    const int64_t m = r->npool * r->dyn.epochs;
    int rc = store_open(path, STORE_RDWR, &s);
    if (!rc) rc = store_write_begin(s, &w);
    if (!rc) { dyn_name(nm, sizeof nm, tag, "pool"); rc = store_wtx_put_array(w, nm, DT_I64, r->pool, r->npool); }
    if (!rc) { dyn_name(nm, sizeof nm, tag, "pseudo"); rc = store_wtx_put_array(w, nm, DT_I32, r->pseudo, r->npool); }
    if (!rc) { dyn_name(nm, sizeof nm, tag, "conf"); rc = store_wtx_put_array(w, nm, DT_F32, r->conf, r->npool); }
    if (r->dyn.compact) {
        prune_dyn_t *d = (prune_dyn_t *)&r->dyn;
        for (int k = 0; k < 7 && !rc; k++) {
            dyn_name(nm, sizeof nm, tag, dyn_compact_what[k]);
            rc = store_wtx_put_array(w, nm, dyn_compact_dt[k], *dyn_compact_ptr(d, k), r->npool);
        }
    } else {
        const void *a[4] = {r->dyn.py, r->dyn.pmo, r->dyn.sq, r->dyn.correct};
        for (int k = 0; k < 4 && !rc; k++) {
            dyn_name(nm, sizeof nm, tag, dyn_full_what[k]);
            rc = store_wtx_put_array(w, nm, k == 3 ? DT_U8 : DT_F32, a[k], m);
        }
    }
    if (!rc) rc = store_wtx_put_record(w, rec, &h, sizeof h);
    if (!rc) rc = store_write_commit(&w);
    store_write_abort(&w);
    store_close(&s);
    if (rc) inca_fail_ctx(rc, "saving dynamics in %s", path);
    return rc;
}

int prune_dyn_load(const char *path, const char *tag, const char *key, prune_result_t *r, int32_t *c) {
    memset(r, 0, sizeof *r);
    store_t *s = NULL;
    char rec[160], name[160];
    snprintf(rec, sizeof rec, "dyn:%s", tag);
    const void *p = NULL;
    size_t len = 0;
    dyn_header_t h;
    int rc = store_open(path, STORE_RDONLY, &s);
    if (rc) return rc;
    rc = store_record_get(s, rec, &p, &len);
    if (rc == INCA_ENOTFOUND) { rc = inca_fail(INCA_ENOTFOUND, "%s: no stored dynamics '%s' (run inca prune without --reuse-dynamics first)", path, tag); goto done; }
    if (rc) goto done;
    if (len != sizeof h) {
        rc = inca_fail(INCA_EINVAL, "%s: record %s has %zu bytes, expected %zu (stored by an older inca?); rerun without "
                       "--reuse-dynamics", path, rec, len, sizeof h);
        goto done;
    }
    memcpy(&h, p, sizeof h);
    h.key[sizeof h.key - 1] = '\0';
    if (h.magic != DYN_MAGIC || (h.version != 1 && h.version != 2) || (h.version == 2 && h.el2n_epochs < 1) ||
        h.ssl_used < 0 || h.ssl_used >= PRUNE_SSL_COUNT || h.ssl_used == PRUNE_SSL_AUTO || h.knn_features_used < -1 || h.knn_features_used >= PRUNE_KF_COUNT) {
        rc = inca_fail(INCA_EINVAL, "%s: record %s is not a version-1 or -2 dynamics header", path, rec);
        goto done;
    }
    if (key && strcmp(key, h.key) != 0) {
        rc = inca_fail(INCA_EINVAL, "%s: stored dynamics '%s' were made with [%s], not [%s]; rerun without --reuse-dynamics", path, tag, h.key, key);
        goto done;
    }
    int64_t m = h.npool * h.epochs, got = 0;
    r->npool = h.npool;
    *c = h.classes;
    const char *what[3] = {"pool", "pseudo", "conf"};
    store_dtype_t dt[3] = {DT_I64, DT_I32, DT_F32};
    void **dst[3] = {(void **)&r->pool, (void **)&r->pseudo, (void **)&r->conf};
    for (int k = 0; k < 3 && !rc; k++) {
        dyn_name(name, sizeof name, tag, what[k]);
        rc = store_array_load(s, name, dt[k], dst[k], &got);
        if (!rc && got != h.npool)
            rc = inca_fail(INCA_EINVAL, "%s: array %s has %lld elements, expected %lld", path, name, (long long)got, (long long)h.npool);
    }
    r->knn_used = -1;   /* not known from the stored dynamics */
    r->dyn.n = h.npool;
    r->dyn.epochs = r->dyn.cap = h.epochs;
    r->dyn.compact = h.version == 2;
    r->dyn.el2n_epochs = h.el2n_epochs;
    r->dyn_from = h.dyn_from;
    r->ssl_used = (prune_ssl_t)h.ssl_used;
    r->knn_features_used = h.knn_features_used;
    r->ssl_check_n = h.ssl_check_n;
    memcpy(r->ssl_check_acc, h.ssl_check_acc, sizeof h.ssl_check_acc);
    for (int k = 0; k < (r->dyn.compact ? 7 : 4) && !rc; k++) {
        const int cp = r->dyn.compact;
        dyn_name(name, sizeof name, tag, cp ? dyn_compact_what[k] : dyn_full_what[k]);
        void **p = cp ? dyn_compact_ptr(&r->dyn, k) : k == 0 ? (void **)&r->dyn.py : k == 1 ? (void **)&r->dyn.pmo
                                                     : k == 2 ? (void **)&r->dyn.sq : (void **)&r->dyn.correct;
        const int64_t want = cp ? h.npool : m;
        rc = store_array_load(s, name, cp ? dyn_compact_dt[k] : k == 3 ? DT_U8 : DT_F32, p, &got);
        if (!rc && got != want)
            rc = inca_fail(INCA_EINVAL, "%s: array %s has %lld elements, expected %lld", path, name, (long long)got, (long long)want);
    }
done:
    store_close(&s);
    if (rc) prune_result_free(r);
    return rc;
}

void prune_dyn_key(char *buf, size_t len, const prune_config_t *cfg, uint64_t labeled_ids, double labeled,
                   int64_t per_class, const char *split) {
    snprintf(buf, len,
             "labeled=%016llx/%g/%lld seed=%llu split=%s ssl=%d/%g/%g/%g/%d k=%d/%d/%s/%d/%d/%lld metric=%d alpha=%g iters=%d cmn=%d graph=%d proxy=%s/%d/%lld/%d/%g/%g/%g fn=%d "
             "pm=%s/%d/%d/%lld dyn=%d/%d/%d relabel=%d/%g",
             (unsigned long long)labeled_ids, labeled, (long long)per_class, (unsigned long long)cfg->seed, split ? split : "stored",
             (int)cfg->ssl, cfg->st.tau, cfg->st.noise_strong, cfg->st.lambda_u, cfg->st.epochs, cfg->knn_k, cfg->knn_search,
             cfg->faiss.factory ? cfg->faiss.factory : "", cfg->faiss.nprobe, cfg->knn_features, (long long)cfg->knn_pca, (int)cfg->metric, cfg->alpha, cfg->iters, cfg->cmn, cfg->graph,
             cfg->proxy.model == TRAIN_MODEL_AUTO ? "" : model_kind_name(cfg->proxy.model), cfg->proxy.epochs,
             (long long)cfg->proxy.hidden, cfg->proxy.layers, cfg->proxy.lr, cfg->proxy.dropout, cfg->proxy.weight_decay,
             cfg->proxy.feature_norm, train_method_name(cfg->proxy.method), cfg->proxy.parts, cfg->proxy.batch_parts, (long long)cfg->proxy.batch_size,
             cfg->dyn_from, cfg->dyn_layout, cfg->el2n_epochs, cfg->relabel, cfg->relabel_confident);
}
