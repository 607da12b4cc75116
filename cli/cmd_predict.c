/* inca predict [STORE] --checkpoint DIR --out FILE.npy [--embeddings] [--indices FILE] [--run I]
 * [--json] [train's flags]: the model a `train --checkpoint DIR` left there, run in eval mode on
 * the whole graph: class scores (logits, n x classes) or with --embeddings the last hidden
 * layer (the input of the output layer; gcn, sage, mlp), for every node or the ids of an index
 * file (.npy or text), in the dataset's node order, as a float32 .npy. The model's flags come
 * from DIR/config.json (written by train), the command line overriding them; an MPI job's
 * checkpoints are read from rank 0's folder. --json adds the checkpoint's epoch and, for
 * scores, the accuracy of their argmax on the test split of the --split the model was trained
 * with (config.json's; the stored one by default) (with --indices, on the rows written whose
 * node is in it: test_rows of them). Tested in test_e2e_train.c and
 * test_e2e_cli.c. */
#include "cli/commands.h"
#include "cli/train_flags.h"
#include "core/alloc.h"
#include "core/args.h"
#include "core/json.h"
#include "core/status.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include "loaders/dataset.h"
#include "loaders/npy.h"
#include "nn/checkpoint.h"
#include "nn/layer.h"
#include "nn/model.h"
#include "nn/train.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define PREDICT_EXTRA 4
static const char *const predict_extra[PREDICT_EXTRA] = {"--out", "--embeddings!", "--indices", "--run"};

/* The command's state, freed at the end of cmd_predict. */
typedef struct predict {
    args_t *a;
    dataset_t d;
    train_config_t c;
    model_t *m;
    csr_t an, at;
    nn_agg_full_t full;
    nn_agg_t agg;
    float *xw, *h, *res;       /* normalised features, embeddings, the rows asked for */
    int64_t *ids, nids;
    int64_t run;
    char mdir[4300];           /* the folder of the checkpoints (rank 0's for an MPI job) */
} predict_t;

/* The trained configuration (DIR/config.json, the command line winning) into P->c and the run. */
static int predict_config(predict_t *P, const char *const *known, const char *dir, const char *out) {
    char cfgp[4300];
    int rc;
    if (!dir) return inca_fail(INCA_EINVAL, "--checkpoint DIR is required (a folder of inca train --checkpoint)");
    /* a mistyped folder is named as such, before any other complaint and before the store loads */
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return inca_fail(INCA_ENOTFOUND, "--checkpoint %s: no such folder, so no checkpoint to predict with (expected the "
                         "folder of inca train --checkpoint DIR)", dir);
    if (!S_ISDIR(sb.st_mode)) return inca_fail(INCA_EINVAL, "--checkpoint %s: not a folder", dir);
    if (!out) return inca_fail(INCA_EINVAL, "--out FILE.npy is required");
    if ((rc = inca_out_check(out))) return rc;   /* before the model runs, naming out */
    snprintf(cfgp, sizeof cfgp, "%s/config.json", dir);
    FILE *probe = fopen(cfgp, "r");
    if (probe) {
        fclose(probe);
        if ((rc = args_apply_config(P->a, known, "predict", cfgp))) return rc;
    }
    if (args_npos(P->a) != 1) return inca_fail(INCA_EINVAL, "expected one STORE (or a %s naming it)", cfgp);
    cli_log_state_t ls = {0};
    if ((rc = cli_train_config(P->a, &P->c, &ls))) return rc;
    P->c.log = NULL;
    /* config.json's ranks (the job's that trained it) is read and ignored: the model is the same
     * whatever trained it; one typed here would ask for ranks predict does not start */
    if (args_on_command_line(P->a, "--ranks"))
        return inca_fail(INCA_EINVAL, "--ranks: predict runs as one process (rank 0's checkpoint is the model)");
    if ((rc = args_int(P->a, "--run", 0, &P->run))) return rc;
    if (P->run < 0 || P->run > 100000)
        return inca_fail(INCA_EINVAL, "--run: expected a run number >= 0, got %lld", (long long)P->run);
    return INCA_OK;
}

/* The runs whose checkpoints the folder mdir holds: run-0.ckpt, run-1.ckpt, ... up to the first
 * missing one (runs are trained in order). */
static int64_t predict_runs_held(const char *mdir) {
    char p[4400];
    struct stat sb;
    int64_t r = 0;
    for (; r <= 100000; r++) {
        snprintf(p, sizeof p, "%s/run-%lld.ckpt", mdir, (long long)r);
        if (stat(p, &sb) != 0) break;
    }
    return r;
}

/* The dataset and the model of run P->run restored from its checkpoint (*st: its state). */
static int predict_model(predict_t *P, const char *dir, ckpt_state_t *st) {
    model_config_t mc;
    int rc;
    if ((rc = dataset_load(args_pos(P->a, 0), &P->d))) return rc;
    if (!P->d.x) return inca_fail(INCA_EINVAL, "%s: no node features to predict from", args_pos(P->a, 0));
    /* test_acc is over the split the model was trained and tested on (config.json's --split,
     * drawn with the run's base seed as train draws it), not always the stored default */
    if ((rc = dataset_split_apply(args_pos(P->a, 0), args_str(P->a, "--split", NULL), P->c.seed, &P->d))) return rc;
    if ((rc = train_model_config(&P->d, &P->c, P->c.seed + (uint64_t)P->run, &mc))) return rc;
    P->c.seed += (uint64_t)P->run;   /* the seed the checkpoint of this run was made with */
    const int norm = nn_kind_norm(mc.kind);
    if (norm != NN_NORM_NONE && !P->d.adj.rowptr)
        return inca_fail(INCA_EINVAL, "--model %s needs a graph; this dataset has none", model_kind_name(P->c.model));
    if ((rc = model_create(&mc, P->d.n, &P->m))) return rc;
    if ((rc = ckpt_model_dir(dir, P->mdir, sizeof P->mdir))) return rc;
    rc = ckpt_load(P->mdir, (int)P->run, &P->c, &P->d, P->m, NULL, st, NULL, 0);
    const int64_t held = rc == CKPT_NONE ? predict_runs_held(P->mdir) : 0;
    if (rc == CKPT_NONE && held > 0 && P->run >= held) {   /* a run past the folder's, not a folder to train */
        if (held == 1)
            return inca_fail(INCA_EINVAL, "--run %lld: %s holds the checkpoint of run 0 only (--run 0)", (long long)P->run,
                             P->mdir);
        return inca_fail(INCA_EINVAL, "--run %lld: %s holds the checkpoints of runs 0..%lld (--run 0 to %lld)",
                         (long long)P->run, P->mdir, (long long)held - 1, (long long)held - 1);
    }
    if (rc == CKPT_NONE)
        return inca_fail(INCA_ENOTFOUND, "%s/run-%lld.ckpt: no checkpoint (train with --checkpoint %s first)", P->mdir,
                         (long long)P->run, dir);
    if (rc) return rc;
    if (norm != NN_NORM_NONE) {
        if ((rc = nn_adj_build(&P->d.adj, norm, &P->an, &P->at))) return rc;
        nn_agg_full_init(&P->agg, &P->full, &P->an, P->at.rowptr ? &P->at : NULL);
    }
    return INCA_OK;
}

/* The rows to write: class scores (*width = classes) or, with emb, the last hidden layer, the
 * layers before the output layer run one at a time (*width = hidden). */
static int predict_rows(predict_t *P, int emb, const float **rows, int64_t *width) {
    const dataset_t *d = &P->d;
    const float *x = d->x;
    int rc;
    if (P->c.feature_norm != TRAIN_FEATNORM_NONE) {
        if (!(P->xw = inca_malloc(sizeof(float) * (size_t)(d->n * d->f)))) return INCA_ENOMEM;
        train_features_prepare(P->c.feature_norm, d->n, d->f, d->x, P->xw);
        x = P->xw;
    }
    const nn_agg_t *ap = P->an.rowptr ? &P->agg : NULL;
    if (!emb) {
        model_set_eval_transform_first(P->m, 1);
        *width = d->c;
        return model_forward(P->m, d->n, x, ap, 0, P->c.seed, 0, rows);
    }
    const int L = model_num_layers(P->m);
    const int64_t hid = P->c.hidden;
    if (L < 0) return inca_fail(INCA_EINVAL, "--embeddings: --model %s mixes its layers; gcn, sage or mlp", model_kind_name(P->c.model));
    if (L < 2) return inca_fail(INCA_EINVAL, "--embeddings: a %d-layer model has no hidden layer", L);
    if (!(P->h = inca_malloc(sizeof(float) * (size_t)(d->n * (hid > d->f ? hid : d->f))))) return INCA_ENOMEM;
    memcpy(P->h, x, sizeof(float) * (size_t)(d->n * d->f));
    for (int li = 0; li < L - 1; li++) {
        const float *o = NULL;
        if ((rc = model_forward_layer(P->m, li, d->n, P->h, ap, &o))) return rc;
        memcpy(P->h, o, sizeof(float) * (size_t)(d->n * hid));
    }
    *rows = P->h;
    *width = hid;
    return INCA_OK;
}

/* The rows of the ids in file ip (P->res), each checked against the store's node count. */
static int predict_select(predict_t *P, const char *ip, const float *rows, int64_t width) {
    int rc;
    if ((rc = npy_read_indices(ip, &P->ids, &P->nids))) return rc;
    for (int64_t i = 0; i < P->nids; i++)
        if (P->ids[i] >= P->d.n)
            return inca_fail(INCA_EINVAL, "%s: entry %lld is node %lld, the store has %lld nodes", ip, (long long)i,
                             (long long)P->ids[i], (long long)P->d.n);
    if (!(P->res = inca_malloc(sizeof(float) * (size_t)(P->nids * width > 0 ? P->nids * width : 1)))) return INCA_ENOMEM;
    for (int64_t i = 0; i < P->nids; i++)
        memcpy(P->res + i * width, rows + P->ids[i] * width, sizeof(float) * (size_t)width);
    return INCA_OK;
}

/* The scores' accuracy on the test split in use (*acc, *nrows: the labelled rows it is over):
 * with --indices, over the rows written whose node is in it. *acc < 0 when there is none to
 * score: embeddings or no labels (*nrows -1), no labelled test node among the rows (*nrows 0). */
static int predict_test_acc(const predict_t *P, int emb, int has_ids, const float *rows, double *acc, int64_t *nrows) {
    const dataset_t *d = &P->d;
    *acc = -1;
    *nrows = -1;
    if (emb || !d->y) return INCA_OK;
    const int64_t *idx = d->split[SPLIT_TEST];
    int64_t nidx = d->split_n[SPLIT_TEST], *mine = NULL;
    if (has_ids) {   /* the written rows' nodes that are test nodes, in the file's order */
        unsigned char *in = inca_calloc((size_t)d->n, 1);
        mine = inca_malloc(sizeof *mine * (size_t)(P->nids > 0 ? P->nids : 1));
        if (!in || !mine) {
            inca_free(in);
            inca_free(mine);
            return INCA_ENOMEM;
        }
        for (int64_t k = 0; k < d->split_n[SPLIT_TEST]; k++) in[d->split[SPLIT_TEST][k]] = 1;
        nidx = 0;
        for (int64_t i = 0; i < P->nids; i++)
            if (in[P->ids[i]]) mine[nidx++] = P->ids[i];
        inca_free(in);
        idx = mine;
    }
    int64_t correct = 0;
    kern_accuracy_counts(d->c, rows, d->y, idx, nidx, &correct, nrows);
    if (*nrows > 0) *acc = (double)correct / (double)*nrows;
    inca_free(mine);
    return INCA_OK;
}

static int predict_json(const predict_t *P, const char *dir, const char *out, int emb, const ckpt_state_t *st, int64_t nout,
                        int64_t width, double test_acc, int64_t test_rows, double secs) {
    json_t *j = NULL;
    int rc;
    if ((rc = json_new(&j))) return rc;
    json_str(j, "store", args_pos(P->a, 0));
    json_str(j, "checkpoint", dir);
    json_int(j, "run", P->run);
    /* a checkpoint holds the last trained epoch's model, not the best one's: both named */
    json_int(j, "checkpoint_epoch", st->epoch);
    json_int(j, "best_epoch", st->best.epoch);
    json_bool(j, "best_epoch_model", st->epoch == st->best.epoch);
    json_str(j, "output", emb ? "embeddings" : "logits");
    json_str(j, "out", out);
    json_int(j, "rows", nout);
    json_int(j, "width", width);
    if (test_acc >= 0) json_num(j, "test_acc", test_acc);
    else json_null(j, "test_acc");
    if (test_rows >= 0) json_int(j, "test_rows", test_rows);   /* the rows test_acc is over */
    else json_null(j, "test_rows");
    json_num(j, "seconds", secs);
    json_str(j, "version", cli_version());
    rc = json_write(j, stdout);
    json_free(&j);
    return rc;
}

int cmd_predict(int argc, char **argv) {
    static const char *known[160];   /* static: --list-flags prints it after this returns */
    int nk = 0;
    for (; cli_train_flags[nk] && nk < 150; nk++) known[nk] = cli_train_flags[nk];
    for (int i = 0; i < PREDICT_EXTRA; i++) known[nk++] = predict_extra[i];
    known[nk] = NULL;
    predict_t P;
    memset(&P, 0, sizeof P);
    dataset_init(&P.d);
    int rc = args_parse(argc, argv, known, &P.a);
    if (rc) return rc;
    const char *dir = args_str(P.a, "--checkpoint", NULL), *out = args_str(P.a, "--out", NULL);
    if ((rc = predict_config(&P, known, dir, out))) goto done;
    if (P.c.threads > 0) inca_set_threads(P.c.threads);
    const int emb = args_has(P.a, "--embeddings");
    const double t0 = inca_now();
    ckpt_state_t st;
    const float *rows = NULL;
    int64_t width = 0;
    if ((rc = predict_model(&P, dir, &st)) || (rc = predict_rows(&P, emb, &rows, &width))) goto done;
    const char *ip = args_str(P.a, "--indices", NULL);   /* the rows asked for */
    if (ip && (rc = predict_select(&P, ip, rows, width))) goto done;
    const int64_t nout = ip ? P.nids : P.d.n;
    if ((rc = npy_write_f32(out, ip ? P.res : rows, nout, width))) goto done;
    const double secs = inca_now() - t0;
    double test_acc = -1;
    int64_t test_rows = 0;
    if ((rc = predict_test_acc(&P, emb, ip != NULL, rows, &test_acc, &test_rows))) goto done;
    if (args_has(P.a, "--json")) rc = predict_json(&P, dir, out, emb, &st, nout, width, test_acc, test_rows, secs);
    else if (st.epoch == st.best.epoch)
        printf("%s: %s of %lld nodes (%lld wide) from epoch %d of %s (the best by validation) -> %s\n", args_pos(P.a, 0),
               emb ? "embeddings" : "logits", (long long)nout, (long long)width, st.epoch, P.mdir, out);
    else
        printf("%s: %s of %lld nodes (%lld wide) from epoch %d of %s, the last trained (the best by validation was "
               "epoch %d; its model is not kept: train with --epochs %d for it) -> %s\n", args_pos(P.a, 0),
               emb ? "embeddings" : "logits", (long long)nout, (long long)width, st.epoch, P.mdir, st.best.epoch,
               st.best.epoch + 1, out);
done:
    inca_free(P.ids);
    inca_free(P.res);
    inca_free(P.h);
    inca_free(P.xw);
    model_free(&P.m);
    csr_free(&P.an);
    csr_free(&P.at);
    dataset_free(&P.d);
    args_free(&P.a);
    return rc;
}
