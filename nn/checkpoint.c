/* Training checkpoints: one binary file per run, written atomically; see checkpoint.h. */
#include "nn/checkpoint.h"
#include "core/alloc.h"
#include "core/comm.h"
#include "core/json.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/backend.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_MAGIC "INCACKP5"   /* 2: the best epoch's selection metric, balanced accuracy and macro F1;
                                 * 3: the node order of the history tables; 4: the model's structure,
                                 * the data's splits, and the evaluations so far; 5: the refreshes
                                 * so far (the mini-batch trainers' counts carry over a resume) */

/* Fixed-size header; every field the resumed run must agree on, then the resumable state. */
typedef struct ckpt_header {
    char magic[8];
    int32_t finished, epoch;
    char model[16], method[16];
    int64_t n, f, c, hidden;
    int32_t layers, run;
    uint64_t seed;
    int32_t nparams, nbuffers;
    int32_t best_epoch, best_since;
    double best_val_acc, best_val_loss, best_test_acc;
    int32_t metric, pad_;
    double best_val_sel, best_val_bacc, best_val_f1, best_test_bacc, best_test_f1;
    double train_loss, t_step, t_eval, t_epoch;
    int64_t opt_steps;
    uint64_t order;   /* ckpt_state_t.order */
    uint64_t arch;    /* arch_hash: what a model of the same kind and size can still differ in */
    uint64_t data;    /* data_hash: the splits, the feature normalisation and the selection rule */
    int64_t evals;    /* ckpt_state_t.evals */
    int64_t refreshes, fused;   /* ckpt_state_t's */
    double t_refresh;
} ckpt_header_t;

/* Flags that change the model a resumed run would continue (the kind, --layers and --hidden are
 * checked by name): its residuals, BatchNorm, dense input, and GCNII's / APPNP's constants. */
static uint64_t arch_hash(const train_config_t *c) {
    const int32_t b[3] = {c->batchnorm, c->residual, c->dense_input};
    const double k[3] = {c->model == NN_GCNII || c->model == NN_APPNP ? c->alpha : 0, c->model == NN_GCNII ? c->theta : 0,
                         c->model == NN_APPNP ? (double)c->K : 0};
    return inca_fnv1a(inca_fnv1a(INCA_FNV_BASIS, b, sizeof b), k, sizeof k);
}

/* What the run trains and is judged on: every split's node ids (a resume under another --split
 * would put test nodes in training), --feature-norm, and --select (the best epoch's rule) */
static uint64_t data_hash(const train_config_t *c, const dataset_t *d) {
    uint64_t h = INCA_FNV_BASIS;
    for (int s = 0; s < SPLIT_COUNT; s++) {
        h = inca_fnv1a(h, &d->split_n[s], sizeof d->split_n[s]);
        if (d->split[s]) h = inca_fnv1a(h, d->split[s], sizeof(int64_t) * (size_t)d->split_n[s]);
    }
    const int32_t k[2] = {c->feature_norm, c->select_loss};
    return inca_fnv1a(h, k, sizeof k);
}

uint64_t ckpt_order_hash(const int64_t *perm, int64_t n) {
    uint64_t h = 14695981039346656037ull;
    for (int64_t v = 0; v < n; v++) h = (h ^ (uint64_t)perm[v]) * 1099511628211ull;
    return h | 1;
}

static int ckpt_path(const char *dir, int run, const char *suffix, char *buf, size_t cap) {
    int k = snprintf(buf, cap, "%s/run-%d.ckpt%s", dir, run, suffix);
    if (k < 0 || (size_t)k >= cap) return inca_fail(INCA_EINVAL, "--checkpoint: path '%s' is too long", dir);
    return INCA_OK;
}

/* What the run's configuration says the header must hold. */
static void header_expect(const train_config_t *c, const dataset_t *d, model_t *m, int run, ckpt_header_t *h) {
    memset(h, 0, sizeof *h);
    memcpy(h->magic, CKPT_MAGIC, sizeof h->magic);
    snprintf(h->model, sizeof h->model, "%s", model_kind_name(c->model));
    snprintf(h->method, sizeof h->method, "%s", train_method_name(c->method));
    h->n = d->n;
    h->f = d->f;
    h->c = d->c;
    h->hidden = c->hidden;
    h->layers = c->layers;
    h->run = run;
    h->seed = c->seed;
    h->metric = c->metric;
    h->nparams = model_nparams(m);
    h->nbuffers = model_nbuffers(m);
    h->arch = arch_hash(c);
    h->data = data_hash(c, d);
}

static int put(FILE *fp, const void *p, size_t bytes) { return fwrite(p, 1, bytes, fp) == bytes ? 0 : -1; }
static int get(FILE *fp, void *p, size_t bytes) { return fread(p, 1, bytes, fp) == bytes ? 0 : -1; }

/* Model memory (kc's) to and from the file: directly on the CPU, through a host bounce buffer
 * of at most 4 MiB from a device. */
#define CKPT_BOUNCE ((size_t)4 << 20)
static int xfer(FILE *fp, kern_ctx_t *kc, void *p, size_t bytes, int save) {
    if (kc_device(kc) == KERN_DEV_CPU) return save ? put(fp, p, bytes) : get(fp, p, bytes);
    char *buf = inca_malloc(bytes < CKPT_BOUNCE ? (bytes ? bytes : 1) : CKPT_BOUNCE);
    if (!buf) return -1;
    int bad = 0;
    for (size_t off = 0; off < bytes && !bad; off += CKPT_BOUNCE) {
        const size_t k = bytes - off < CKPT_BOUNCE ? bytes - off : CKPT_BOUNCE;
        if (save) bad = kc_copy(kc, buf, (char *)p + off, k, KERN_D2H, KERN_STREAM_COMPUTE) != INCA_OK || put(fp, buf, k);
        else bad = get(fp, buf, k) || kc_copy(kc, (char *)p + off, buf, k, KERN_H2D, KERN_STREAM_COMPUTE) != INCA_OK;
    }
    inca_free(buf);
    return bad ? -1 : 0;
}
static int put_m(FILE *fp, kern_ctx_t *kc, const void *p, size_t bytes) { return xfer(fp, kc, (void *)p, bytes, 1); }
static int get_m(FILE *fp, kern_ctx_t *kc, void *p, size_t bytes) { return xfer(fp, kc, p, bytes, 0); }

/* The resumable state of st (and the optimiser's step count) into header h. */
static void header_from_state(ckpt_header_t *h, const ckpt_state_t *st, optim_t *o) {
    h->finished = st->finished;
    h->epoch = st->epoch;
    h->best_epoch = st->best.epoch;
    h->best_since = st->best.since;
    h->best_val_acc = st->best.val_acc;
    h->best_val_loss = st->best.val_loss;
    h->best_test_acc = st->best.test_acc;
    h->best_val_sel = st->best.val_sel;
    h->best_val_bacc = st->best.val_bacc;
    h->best_val_f1 = st->best.val_f1;
    h->best_test_bacc = st->best.test_bacc;
    h->best_test_f1 = st->best.test_f1;
    h->train_loss = st->train_loss;
    h->t_step = st->t_step;
    h->t_eval = st->t_eval;
    h->t_epoch = st->t_epoch;
    h->opt_steps = optim_steps(o);
    h->order = st->order;
    h->evals = st->evals;
    h->refreshes = st->refreshes;
    h->fused = st->fused;
    h->t_refresh = st->t_refresh;
}

/* The temporary tmp (written, flushed, fsync'ed) over DIR/run-<run>.ckpt at path; keep (a rank
 * of an MPI job): the one it replaces becomes run-<run>.ckpt.prev first, so at every instant the
 * folder holds the latest complete checkpoint (between the two renames as .prev) and, but for
 * that moment, the one before it. */
static int ckpt_commit(const char *dir, int run, const char *tmp, const char *path, int keep) {
    char prev[4096];
    int rc = keep ? ckpt_path(dir, run, ".prev", prev, sizeof prev) : INCA_OK;
    if (rc == INCA_OK && keep && rename(path, prev) != 0 && errno != ENOENT)
        rc = inca_fail(INCA_EIO, "%s: cannot keep the previous checkpoint as %s: %s", path, prev, strerror(errno));
    if (rc == INCA_OK && rename(tmp, path) != 0)
        rc = inca_fail(INCA_EIO, "%s: cannot move the new checkpoint into place: %s", path, strerror(errno));
    if (rc != INCA_OK) remove(tmp);
    return rc;
}

static int ckpt_write(const char *dir, int run, int keep, const train_config_t *c, const dataset_t *d, model_t *m,
                      optim_t *o, const ckpt_state_t *st, const ckpt_blob_t *blobs, int nblobs) {
    char path[4096], tmp[4096];
    kern_ctx_t *kc = model_ctx(m);
    int rc;
    if ((rc = ckpt_path(dir, run, "", path, sizeof path)) || (rc = ckpt_path(dir, run, ".tmp", tmp, sizeof tmp))) return rc;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return inca_fail(INCA_EIO, "--checkpoint: cannot create directory %s: %s", dir, strerror(errno));
    ckpt_header_t h;
    header_expect(c, d, m, run, &h);
    header_from_state(&h, st, o);
    FILE *fp = fopen(tmp, "wb");
    if (!fp) return inca_fail_write(path, errno);   /* path: the temporary is ours */
    int bad = put(fp, &h, sizeof h);
    for (int i = 0; i < h.nparams && !bad; i++) {
        nn_param_t *p = model_param(m, i);
        float *mo = NULL, *vo = NULL;
        int64_t n = 0;
        if (optim_param_state(o, i, &mo, &vo, &n) != INCA_OK || n != p->n) {
            fclose(fp);
            remove(tmp);
            return inca_fail(INCA_ERR, "checkpoint: optimiser state of parameter %s does not match the model", p->name);
        }
        bad = put(fp, &p->n, sizeof p->n) || put_m(fp, kc, p->w, sizeof(float) * (size_t)n) ||
              put_m(fp, kc, mo, sizeof(float) * (size_t)n) || put_m(fp, kc, vo, sizeof(float) * (size_t)n);
    }
    for (int i = 0; i < h.nbuffers && !bad; i++) {
        int64_t n = 0;
        const float *b = model_buffer(m, i, &n);
        bad = put(fp, &n, sizeof n) || put_m(fp, kc, b, sizeof(float) * (size_t)n);
    }
    int32_t nb = nblobs;
    if (!bad) bad = put(fp, &nb, sizeof nb);
    for (int i = 0; i < nblobs && !bad; i++)
        bad = put(fp, &blobs[i].bytes, sizeof blobs[i].bytes) ||
              (blobs[i].dev ? put_m(fp, kc, blobs[i].p, (size_t)blobs[i].bytes) : put(fp, blobs[i].p, (size_t)blobs[i].bytes));
    if (!bad) bad = fflush(fp) != 0 || fsync(fileno(fp)) != 0;
    if (fclose(fp) != 0) bad = 1;
    if (bad) {
        int e = errno;
        remove(tmp);
        return inca_fail(INCA_EIO, "%s: cannot write the checkpoint: %s (the previous one is unchanged)", path, strerror(e));
    }
    return ckpt_commit(dir, run, tmp, path, keep);
}

int ckpt_save(const char *dir, int run, const train_config_t *c, const dataset_t *d, model_t *m, optim_t *o,
              const ckpt_state_t *st, const ckpt_blob_t *blobs, int nblobs) {
    return ckpt_write(dir, run, 0, c, d, m, o, st, blobs, nblobs);
}

int ckpt_rank_save(const char *dir, int run, const train_config_t *c, const dataset_t *d, model_t *m, optim_t *o,
                   const ckpt_state_t *st, const ckpt_blob_t *blobs, int nblobs) {
    return ckpt_write(dir, run, 1, c, d, m, o, st, blobs, nblobs);
}

/* The first field of header h that differs from what this run expects (w) names itself;
 * resume: a training run's (predict reads the model alone, of any split and node order). */
static int header_check(const char *path, const ckpt_header_t *h, const ckpt_header_t *w, int resume, uint64_t order) {
    if (strcmp(h->model, w->model) != 0)
        return inca_fail(INCA_EINVAL, "%s: checkpoint of model '%s', this run trains '%s'", path, h->model, w->model);
    if (strcmp(h->method, w->method) != 0)
        return inca_fail(INCA_EINVAL, "%s: checkpoint of method '%s', this run uses '%s'", path, h->method, w->method);
    if (h->n != w->n || h->f != w->f || h->c != w->c)
        return inca_fail(INCA_EINVAL, "%s: checkpoint of a dataset with %lld nodes, %lld features, %lld classes; this one has %lld, %lld, %lld",
                         path, (long long)h->n, (long long)h->f, (long long)h->c, (long long)w->n, (long long)w->f, (long long)w->c);
    if (h->hidden != w->hidden || h->layers != w->layers)
        return inca_fail(INCA_EINVAL, "%s: checkpoint of --layers %d --hidden %lld, this run has --layers %d --hidden %lld", path,
                         h->layers, (long long)h->hidden, w->layers, (long long)w->hidden);
    if (h->seed != w->seed || h->run != w->run)
        return inca_fail(INCA_EINVAL, "%s: checkpoint of seed %llu, this run has seed %llu", path, (unsigned long long)h->seed,
                         (unsigned long long)w->seed);
    if (h->metric != w->metric)
        return inca_fail(INCA_EINVAL, "%s: checkpoint selects by --metric %s, this run by %s", path, train_metric_name(h->metric),
                         train_metric_name(w->metric));
    if (h->arch != w->arch)
        return inca_fail(INCA_EINVAL, "%s: checkpoint of another model structure (--residual, --batchnorm, --dense-input, "
                         "--alpha, --theta or --K differ): resume with the flags it was trained with", path);
    if (resume && h->data != w->data)   /* predict (no optimiser) may score another split */
        return inca_fail(INCA_EINVAL, "%s: checkpoint of other splits, --feature-norm or --select (a resume under another "
                         "split would train on nodes it then tests on): resume with the ones it was trained with", path);
    if (h->nparams != w->nparams || h->nbuffers != w->nbuffers)
        return inca_fail(INCA_EINVAL, "%s: checkpoint has %d parameters and %d buffers, the model %d and %d", path, h->nparams,
                         h->nbuffers, w->nparams, w->nbuffers);
    if (resume && h->order != order)   /* the tables' rows would land on other nodes */
        return inca_fail(INCA_EINVAL, "%s: checkpoint's history tables are in another partitioning's node order (another "
                         "--parts, --partition or partition seed): resume with the partitioning it was made with, or "
                         "train again without --resume", path);
    return INCA_OK;
}

/* The header of fp into *h, refused with its path when it is no checkpoint of this format or
 * not this run's (want; resume: o is not NULL, order: the run's node order). */
static int header_read(FILE *fp, const char *path, const ckpt_header_t *want, int resume, uint64_t order,
                       ckpt_header_t *h) {
    const int whole = get(fp, h, sizeof *h) == 0;
    if (!whole || memcmp(h->magic, CKPT_MAGIC, sizeof h->magic) != 0) {
        /* an older format by its magic (a header cut short is no format: "truncated") */
        return whole && memcmp(h->magic, CKPT_MAGIC, 7) == 0
                   ? inca_fail(INCA_EINVAL, "%s: a checkpoint of an older inca (format %.1s, this one reads %.1s): train "
                               "again without --resume", path, &h->magic[7], &CKPT_MAGIC[7])
                   : inca_fail(INCA_EINVAL, "%s: not an inca checkpoint (or truncated header)", path);
    }
    h->model[sizeof h->model - 1] = h->method[sizeof h->method - 1] = '\0';
    return header_check(path, h, want, resume, order);
}

/* The parameters (and, with o, their moments; without, skipped) and the BatchNorm buffers from
 * fp into m. */
static int params_read(FILE *fp, const char *path, kern_ctx_t *kc, const ckpt_header_t *h, model_t *m, optim_t *o) {
    int rc = INCA_OK;
    for (int i = 0; i < h->nparams && !rc; i++) {
        nn_param_t *p = model_param(m, i);
        float *mo = NULL, *vo = NULL;
        int64_t n = p->n, fn = -1;
        if (o && (optim_param_state(o, i, &mo, &vo, &n) != INCA_OK || n != p->n)) {
            rc = inca_fail(INCA_ERR, "checkpoint: optimiser state of parameter %s does not match the model", p->name);
            break;
        }
        if (get(fp, &fn, sizeof fn) || fn != p->n) {
            rc = inca_fail(INCA_EINVAL, "%s: parameter %s has %lld elements in the checkpoint, %lld in the model (or the file is truncated)",
                           path, p->name, (long long)fn, (long long)p->n);
            break;
        }
        if (get_m(fp, kc, p->w, sizeof(float) * (size_t)n) ||
            (o ? get_m(fp, kc, mo, sizeof(float) * (size_t)n) || get_m(fp, kc, vo, sizeof(float) * (size_t)n)
               : fseeko(fp, (off_t)(2 * sizeof(float) * (size_t)n), SEEK_CUR) != 0))
            rc = inca_fail(INCA_EINVAL, "%s: truncated in parameter %s", path, p->name);
    }
    for (int i = 0; i < h->nbuffers && !rc; i++) {
        int64_t n = 0, fn = -1;
        float *b = model_buffer(m, i, &n);
        if (get(fp, &fn, sizeof fn) || fn != n || get_m(fp, kc, b, sizeof(float) * (size_t)n))
            rc = inca_fail(INCA_EINVAL, "%s: truncated or mismatched in BatchNorm buffer %d", path, i);
    }
    return rc;
}

/* The history tables from fp into blobs, then nothing more. */
static int blobs_read(FILE *fp, const char *path, kern_ctx_t *kc, const ckpt_blob_t *blobs, int nblobs) {
    int rc = INCA_OK;
    int32_t nb = -1;
    if (get(fp, &nb, sizeof nb) || nb != nblobs)
        rc = inca_fail(INCA_EINVAL, "%s: %d history tables in the checkpoint, this run has %d (another --input-layer with "
                       "sparse features keeps no dense M^0; or the file is truncated)", path, nb, nblobs);
    for (int i = 0; i < nblobs && !rc; i++) {
        int64_t bytes = -1;
        if (get(fp, &bytes, sizeof bytes) || bytes != blobs[i].bytes ||
            (blobs[i].dev ? get_m(fp, kc, blobs[i].p, (size_t)bytes) : get(fp, blobs[i].p, (size_t)bytes)))
            rc = inca_fail(INCA_EINVAL, "%s: history table %d: %lld bytes in the checkpoint, %lld in this run (or the file is truncated)",
                           path, i, (long long)bytes, (long long)blobs[i].bytes);
    }
    if (!rc && fgetc(fp) != EOF) rc = inca_fail(INCA_EINVAL, "%s: trailing bytes after the last table", path);
    return rc;
}

/* A resumed run's state from header h (c: its selection by loss and metric). */
static void state_from_header(ckpt_state_t *st, const ckpt_header_t *h, const train_config_t *c) {
    st->finished = h->finished;
    st->epoch = h->epoch;
    train_best_init(&st->best);
    st->best.epoch = h->best_epoch;
    st->best.since = h->best_since;
    st->best.val_acc = h->best_val_acc;
    st->best.val_loss = h->best_val_loss;
    st->best.test_acc = h->best_test_acc;
    st->best.val_sel = h->best_val_sel;
    st->best.val_bacc = h->best_val_bacc;
    st->best.val_f1 = h->best_val_f1;
    st->best.test_bacc = h->best_test_bacc;
    st->best.test_f1 = h->best_test_f1;
    st->best.by_loss = c->select_loss;
    st->best.metric = c->metric;
    st->train_loss = h->train_loss;
    st->t_step = h->t_step;
    st->t_eval = h->t_eval;
    st->t_epoch = h->t_epoch;
    st->evals = h->evals;
    st->refreshes = h->refreshes;
    st->fused = h->fused;
    st->t_refresh = h->t_refresh;
}

/* ckpt_load of the file at path (a run's checkpoint, or a rank's previous one). */
static int load_path(const char *path, int run, const train_config_t *c, const dataset_t *d, model_t *m, optim_t *o,
                     ckpt_state_t *st, const ckpt_blob_t *blobs, int nblobs) {
    kern_ctx_t *kc = model_ctx(m);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        if (errno == ENOENT) return CKPT_NONE;
        return inca_fail(INCA_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    ckpt_header_t h, want;
    header_expect(c, d, m, run, &want);
    int rc = header_read(fp, path, &want, o != NULL, st->order, &h);
    if (rc) goto done;
    rc = params_read(fp, path, kc, &h, m, o);
    if (!o && !rc) {   /* the model alone (prediction): no moments, no history tables */
        st->finished = h.finished;
        st->epoch = h.epoch;
        train_best_init(&st->best);   /* which epoch was the best, for predict to say */
        st->best.epoch = h.best_epoch;
        st->best.val_acc = h.best_val_acc;
        st->best.test_acc = h.best_test_acc;
        goto done;
    }
    if (!rc) rc = blobs_read(fp, path, kc, blobs, nblobs);
    if (rc) goto done;
    optim_set_steps(o, h.opt_steps);
    state_from_header(st, &h, c);
done:
    fclose(fp);
    return rc;
}

/* This run's files in dir removed: the temporary a killed save left, and with all the checkpoint
 * and the one before it (a rank's .prev) too. */
static int run_files_remove(const char *dir, int run, int all) {
    static const char *const sfx[3] = {".tmp", "", ".prev"};
    char p[4096];
    for (int i = 0; i < (all ? 3 : 1); i++) {
        const int rc = ckpt_path(dir, run, sfx[i], p, sizeof p);
        if (rc) return rc;
        if (remove(p) != 0 && errno != ENOENT) return inca_fail(INCA_EIO, "%s: cannot remove it: %s", p, strerror(errno));
    }
    return INCA_OK;
}

/* Every run's checkpoint files in dir (run-<i>.ckpt, .tmp, .prev) removed: a new job claims the
 * folder whole, since an older job's later runs would otherwise be resumed as this job's (a job
 * killed in run 0 kept the older job's run-1.ckpt, and the header does not hold every flag). */
static int job_files_remove(const char *dir) {
    DIR *dp = opendir(dir);
    if (!dp) return errno == ENOENT ? INCA_OK : inca_fail(INCA_EIO, "%s: cannot read the folder: %s", dir, strerror(errno));
    int rc = INCA_OK;
    for (struct dirent *e; rc == INCA_OK && (e = readdir(dp));) {
        int run = -1, end = 0;
        if (sscanf(e->d_name, "run-%d.ckpt%n", &run, &end) != 1 || run < 0) continue;
        const char *rest = e->d_name + end;
        if (*rest && strcmp(rest, ".tmp") != 0 && strcmp(rest, ".prev") != 0) continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (remove(p) != 0 && errno != ENOENT) rc = inca_fail(INCA_EIO, "%s: cannot remove it: %s", p, strerror(errno));
    }
    closedir(dp);
    return rc;
}

int ckpt_load(const char *dir, int run, const train_config_t *c, const dataset_t *d, model_t *m, optim_t *o,
              ckpt_state_t *st, const ckpt_blob_t *blobs, int nblobs) {
    char path[4096];
    int rc = ckpt_path(dir, run, "", path, sizeof path);
    if (rc == INCA_OK && o) rc = run_files_remove(dir, run, 0);   /* a resume: a killed save's temporary goes */
    return rc ? rc : load_path(path, run, c, d, m, o, st, blobs, nblobs);
}

/* The epoch of the checkpoint at path into *epoch (-1: there is none), refused as a resume
 * refuses one of another configuration (want, order). */
static int peek_epoch(const char *path, const ckpt_header_t *want, uint64_t order, int64_t *epoch) {
    *epoch = -1;
    FILE *fp = fopen(path, "rb");
    if (!fp) return errno == ENOENT ? INCA_OK : inca_fail(INCA_EIO, "%s: cannot open: %s", path, strerror(errno));
    ckpt_header_t h;
    const int rc = header_read(fp, path, want, 1, order, &h);
    fclose(fp);
    if (rc == INCA_OK) *epoch = h.epoch;
    return rc;
}

/* The newest epoch every rank holds a checkpoint of (e: this rank's current and previous, -1:
 * none) into *agreed, -1 when some rank holds none of it; the ranks' latest epochs into lo, hi.
 * (A rank saves after a collective step every rank entered after its own previous save, so the
 * ranks' latest checkpoints are at most one save apart and the oldest rank's latest is held by
 * every rank: ckpt_rank_save.) */
static int rank_agree(comm_t *comm, const int64_t e[2], int64_t *agreed, int64_t *lo, int64_t *hi) {
    const int64_t latest = e[0] > e[1] ? e[0] : e[1];
    int64_t v[2] = {-latest, latest};
    int rc = comm_allreduce_max_i64(comm, v, 2, COMM_SETUP);
    if (rc != INCA_OK) return rc;
    *lo = -v[0];
    *hi = v[1];
    int64_t miss = *lo >= 0 && e[0] != *lo && e[1] != *lo;
    if ((rc = comm_allreduce_max_i64(comm, &miss, 1, COMM_SETUP)) != INCA_OK) return rc;
    *agreed = miss ? -1 : *lo;
    return INCA_OK;
}

int ckpt_rank_load(comm_t *comm, const char *dir, int run, const train_config_t *c, const dataset_t *d, model_t *m,
                   optim_t *o, ckpt_state_t *st, const ckpt_blob_t *blobs, int nblobs) {
    /* a new job: no file of an older one stays (all of them at its first run) */
    int rc = !c->resume && run == 0 ? job_files_remove(dir) : run_files_remove(dir, run, !c->resume);
    if (rc != INCA_OK || !c->resume) return rc != INCA_OK ? rc : CKPT_NONE;
    char cur[4096], prev[4096];
    if ((rc = ckpt_path(dir, run, "", cur, sizeof cur)) || (rc = ckpt_path(dir, run, ".prev", prev, sizeof prev))) return rc;
    ckpt_header_t want;
    header_expect(c, d, m, run, &want);
    int64_t e[2], t, lo, hi;
    if ((rc = peek_epoch(cur, &want, st->order, &e[0])) || (rc = peek_epoch(prev, &want, st->order, &e[1])) ||
        (rc = rank_agree(comm, e, &t, &lo, &hi)))
        return rc;
    if (t != hi && t >= 0 && comm_rank(comm) == 0)
        train_log(c, TRAIN_LOG_INFO, "run %d: the job stopped between two ranks' checkpoints (epochs %lld and %lld): every "
                  "rank resumes from its checkpoint of epoch %lld", run, (long long)lo, (long long)hi, (long long)t);
    else if (t != hi && comm_rank(comm) == 0)
        train_log(c, TRAIN_LOG_INFO, "run %d: the ranks' checkpoints have no epoch in common (latest %lld to %lld; -1: "
                  "none): the run starts again", run, (long long)lo, (long long)hi);
    if (t < 0) return (rc = run_files_remove(dir, run, 1)) != INCA_OK ? rc : CKPT_NONE;
    const int older = e[0] != t;
    rc = load_path(older ? prev : cur, run, c, d, m, o, st, blobs, nblobs);
    /* the newer checkpoint no other rank holds gives way: the folder holds the resumed line only */
    if (rc == INCA_OK && older && rename(prev, cur) != 0)
        rc = inca_fail(INCA_EIO, "%s: cannot put the previous checkpoint back in place: %s", cur, strerror(errno));
    return rc;
}

/* A resume in DIR by `ranks` ranks: refused when DIR/manifest.json names another rank count
 * (checkpoints of an MPI job hold each rank's histories; one process writes no manifest). */
/* The rank count of DIR/manifest.json into *ranks (0 when there is no manifest); the path into
 * mp[4200]. */
static int manifest_ranks(const char *dir, char *mp, int *ranks) {
    snprintf(mp, 4200, "%s/manifest.json", dir);
    *ranks = 0;
    FILE *mf = fopen(mp, "r");
    if (!mf) return INCA_OK;
    char buf[512] = {0};
    const size_t got = fread(buf, 1, sizeof buf - 1, mf);
    fclose(mf);
    buf[got] = 0;
    const char *k = strstr(buf, "\"ranks\":");
    if (!k || sscanf(k + 8, "%d", ranks) != 1 || *ranks < 1)
        return inca_fail(INCA_EINVAL, "%s: no rank count in the manifest: not a checkpoint folder of inca", mp);
    return INCA_OK;
}

int ckpt_manifest_check(const char *dir, int ranks) {
    char mp[4200];
    int q = 0, rc = manifest_ranks(dir, mp, &q);
    if (rc || q == 0) return rc;   /* none yet: a first run, or one process's checkpoints */
    if (q != ranks && q == 1)
        return inca_fail(INCA_EINVAL, "%s: checkpoints of one process (the last run in this folder); resume without mpirun", mp);
    if (q != ranks)
        return inca_fail(INCA_EINVAL, "%s: checkpoints of %d ranks; resume with mpirun -np %d", mp, q, q);
    return INCA_OK;
}

/* DIR/manifest.json, written whole via rename: the rank count, method, model and the folders the
 * checkpoints are in (one process: DIR itself, ".") */
static int manifest_write(const train_config_t *c, int ranks) {
    char mp[4200], tmp[4300];
    snprintf(mp, sizeof mp, "%s/manifest.json", c->checkpoint_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", mp);
    json_t *j = NULL;
    int rc = json_new(&j);
    if (rc != INCA_OK) return rc;
    json_int(j, "ranks", ranks);
    json_str(j, "method", train_method_name(c->method));
    json_str(j, "model", model_kind_name(c->model));
    json_arr_begin(j, "checkpoints");
    for (int r = 0; r < ranks; r++) {
        char name[64];
        if (ranks == 1) snprintf(name, sizeof name, ".");
        else snprintf(name, sizeof name, "rank-%d-of-%d", r, ranks);
        json_str(j, NULL, name);
    }
    json_arr_end(j);
    FILE *f = fopen(tmp, "w");
    if (!f) rc = inca_fail_write(mp, errno);
    else {
        rc = json_write(j, f);
        if (fclose(f) != 0 && rc == INCA_OK) rc = inca_fail(INCA_EIO, "%s: write failed", mp);
        if (rc == INCA_OK && rename(tmp, mp) != 0) rc = inca_fail(INCA_EIO, "%s: cannot rename into place", mp);
    }
    json_free(&j);
    return rc;
}

/* DIR/rank-R-of-P (DIR made when missing) and DIR/manifest.json (rank 0). A resume whose
 * manifest names another rank count is refused: the histories are split by rank. */
int ckpt_rank_dir(const train_config_t *c, int rank, int ranks, char *out, size_t cap) {
    const char *dir = c->checkpoint_dir;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return inca_fail(INCA_EIO, "%s: cannot create the checkpoint folder", dir);
    snprintf(out, cap, "%s/rank-%d-of-%d", dir, rank, ranks);
    int rc = c->resume ? ckpt_manifest_check(dir, ranks) : INCA_OK;
    if (rc == INCA_OK && rank == 0) rc = manifest_write(c, ranks);
    return rc;
}

int ckpt_one_process(const train_config_t *c) {
    const char *dir = c->checkpoint_dir;
    if (!dir) return INCA_OK;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return inca_fail(INCA_EIO, "%s: cannot create the checkpoint folder", dir);
    const int rc = c->resume ? ckpt_manifest_check(dir, 1) : job_files_remove(dir);
    return rc == INCA_OK ? manifest_write(c, 1) : rc;
}

int ckpt_model_dir(const char *dir, char *out, size_t cap) {
    char mp[4200];
    int q = 0, rc = manifest_ranks(dir, mp, &q);
    if (rc) return rc;
    /* one process's checkpoints are in dir; an MPI job's: rank 0's (every rank holds the same parameters) */
    const int k = q > 1 ? snprintf(out, cap, "%s/rank-0-of-%d", dir, q) : snprintf(out, cap, "%s", dir);
    return k >= 0 && (size_t)k < cap ? INCA_OK : inca_fail(INCA_EINVAL, "--checkpoint: path '%s' is too long", dir);
}
