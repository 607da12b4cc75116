/* inca predict [STORE] --checkpoint DIR --out FILE.npy [--embeddings] [--indices FILE] [--run I]
 * [--json] [train's flags]: the model a `train --checkpoint DIR` left there, run in eval mode on
 * the whole graph: class scores (logits, n x classes) or with --embeddings the last hidden
 * layer (the input of the output layer; gcn, sage, mlp), for every node or the ids of an index
 * file (.npy or text), in the dataset's node order, as a float32 .npy. The model's flags come
 * from DIR/config.json (written by train), the command line overriding them; an MPI job's
 * checkpoints are read from rank 0's folder. --json adds the checkpoint's epoch and, for
 * scores, the accuracy of their argmax on the stored test split. Tested in test_e2e_train.c. */
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

#define PREDICT_EXTRA 4
static const char *const predict_extra[PREDICT_EXTRA] = {"--out", "--embeddings!", "--indices", "--run"};

int cmd_predict(int argc, char **argv) {
    const char *known[160];
    int nk = 0;
    for (; cli_train_flags[nk] && nk < 150; nk++) known[nk] = cli_train_flags[nk];
    for (int i = 0; i < PREDICT_EXTRA; i++) known[nk++] = predict_extra[i];
    known[nk] = NULL;
    args_t *a = NULL;
    json_t *j = NULL;
    dataset_t d;
    train_config_t c;
    model_t *m = NULL;
    csr_t an = {0}, at = {0};
    float *xw = NULL, *h = NULL, *res = NULL;
    int64_t *ids = NULL, nids = 0;
    char mdir[4300], cfgp[4300];
    dataset_init(&d);
    int rc = args_parse(argc, argv, known, &a);
    if (rc) return rc;
    const char *dir = args_str(a, "--checkpoint", NULL), *out = args_str(a, "--out", NULL);
    if (!dir) { rc = inca_fail(INCA_EINVAL, "predict: --checkpoint DIR is required (a folder of inca train --checkpoint)"); goto done; }
    if (!out) { rc = inca_fail(INCA_EINVAL, "predict: --out FILE.npy is required"); goto done; }
    /* the trained configuration, the command line winning */
    snprintf(cfgp, sizeof cfgp, "%s/config.json", dir);
    FILE *probe = fopen(cfgp, "r");
    if (probe) {
        fclose(probe);
        if ((rc = args_apply_config(a, known, "predict", cfgp))) goto done;
    }
    if (args_npos(a) != 1) {
        rc = inca_fail(INCA_EINVAL, "predict: expected one STORE (or a %s naming it)", cfgp);
        goto done;
    }
    cli_log_state_t ls = {0};
    if ((rc = cli_train_config(a, &c, &ls))) goto done;
    c.log = NULL;
    int64_t run = 0;
    if ((rc = args_int(a, "--run", 0, &run))) goto done;
    if (run < 0 || run > 100000) { rc = inca_fail(INCA_EINVAL, "--run: expected a run number >= 0, got %lld", (long long)run); goto done; }
    if (c.threads > 0) inca_set_threads(c.threads);
    const int emb = args_has(a, "--embeddings");
    const double t0 = inca_now();
    if ((rc = dataset_load(args_pos(a, 0), &d))) goto done;
    if (!d.x) { rc = inca_fail(INCA_EINVAL, "%s: no node features to predict from", args_pos(a, 0)); goto done; }
    model_config_t mc;
    if ((rc = train_model_config(&d, &c, c.seed + (uint64_t)run, &mc))) goto done;
    c.seed += (uint64_t)run;   /* the seed the checkpoint of this run was made with */
    const int norm = nn_kind_norm(mc.kind);
    if (norm != NN_NORM_NONE && !d.adj.rowptr) { rc = inca_fail(INCA_EINVAL, "--model %s needs a graph; this dataset has none", c.model); goto done; }
    if ((rc = model_create(&mc, d.n, &m))) goto done;
    if ((rc = ckpt_model_dir(dir, mdir, sizeof mdir))) goto done;
    ckpt_state_t st;
    rc = ckpt_load(mdir, (int)run, &c, &d, m, NULL, &st, NULL, 0);
    if (rc == CKPT_NONE) {
        rc = inca_fail(INCA_ENOTFOUND, "%s/run-%lld.ckpt: no checkpoint (train with --checkpoint %s first)", mdir, (long long)run, dir);
        goto done;
    }
    if (rc) goto done;
    const float *x = d.x;
    if (c.feature_norm != TRAIN_FEATNORM_NONE) {
        if (!(xw = inca_malloc(sizeof(float) * (size_t)(d.n * d.f)))) { rc = INCA_ENOMEM; goto done; }
        train_features_prepare(c.feature_norm, d.n, d.f, d.x, xw);
        x = xw;
    }
    nn_agg_full_t full;
    nn_agg_t agg;
    if (norm != NN_NORM_NONE) {
        if ((rc = nn_adj_build(&d.adj, norm, &an, &at))) goto done;
        nn_agg_full_init(&agg, &full, &an, at.rowptr ? &at : NULL);
    }
    const nn_agg_t *ap = norm != NN_NORM_NONE ? &agg : NULL;
    const float *rows = NULL;
    int64_t width = 0;
    if (!emb) {
        model_set_eval_transform_first(m, 1);
        if ((rc = model_forward(m, d.n, x, ap, 0, c.seed, 0, &rows))) goto done;
        width = d.c;
    } else {
        /* the layers before the output layer, one at a time: their last output */
        const int L = model_num_layers(m);
        if (L < 0) { rc = inca_fail(INCA_EINVAL, "--embeddings: --model %s mixes its layers; gcn, sage or mlp", c.model); goto done; }
        if (L < 2) { rc = inca_fail(INCA_EINVAL, "--embeddings: a %d-layer model has no hidden layer", L); goto done; }
        if (!(h = inca_malloc(sizeof(float) * (size_t)(d.n * (c.hidden > d.f ? c.hidden : d.f))))) { rc = INCA_ENOMEM; goto done; }
        memcpy(h, x, sizeof(float) * (size_t)(d.n * d.f));
        for (int li = 0; li < L - 1; li++) {
            const float *o = NULL;
            if ((rc = model_forward_layer(m, li, d.n, h, ap, &o))) goto done;
            memcpy(h, o, sizeof(float) * (size_t)(d.n * c.hidden));
        }
        rows = h;
        width = c.hidden;
    }
    /* the rows asked for */
    const char *ip = args_str(a, "--indices", NULL);
    if (ip) {
        if ((rc = npy_read_indices(ip, &ids, &nids))) goto done;
        for (int64_t i = 0; i < nids; i++)
            if (ids[i] >= d.n) { rc = inca_fail(INCA_EINVAL, "%s: entry %lld is node %lld, the store has %lld nodes", ip, (long long)i, (long long)ids[i], (long long)d.n); goto done; }
        if (!(res = inca_malloc(sizeof(float) * (size_t)(nids * width > 0 ? nids * width : 1)))) { rc = INCA_ENOMEM; goto done; }
        for (int64_t i = 0; i < nids; i++) memcpy(res + i * width, rows + ids[i] * width, sizeof(float) * (size_t)width);
    }
    const int64_t nout = ip ? nids : d.n;
    if ((rc = npy_write_f32(out, ip ? res : rows, nout, width))) goto done;
    const double secs = inca_now() - t0;
    double test_acc = -1;
    if (!emb && d.y && d.split_n[SPLIT_TEST] > 0)   /* the scores' accuracy on the stored test split */
        test_acc = kern_accuracy(d.c, rows, d.y, d.split[SPLIT_TEST], d.split_n[SPLIT_TEST]);
    if (args_has(a, "--json")) {
        if ((rc = json_new(&j))) goto done;
        json_str(j, "store", args_pos(a, 0));
        json_str(j, "checkpoint", dir);
        json_int(j, "run", run);
        json_int(j, "checkpoint_epoch", st.epoch);
        json_str(j, "output", emb ? "embeddings" : "logits");
        json_str(j, "out", out);
        json_int(j, "rows", nout);
        json_int(j, "width", width);
        if (test_acc >= 0) json_num(j, "test_acc", test_acc);
        else json_null(j, "test_acc");
        json_num(j, "seconds", secs);
        json_str(j, "version", cli_version());
        rc = json_write(j, stdout);
    } else
        printf("%s: %s of %lld nodes (%lld wide) from epoch %d of %s -> %s\n", args_pos(a, 0), emb ? "embeddings" : "logits",
               (long long)nout, (long long)width, st.epoch, mdir, out);
done:
    json_free(&j);
    inca_free(ids);
    inca_free(res);
    inca_free(h);
    inca_free(xw);
    model_free(&m);
    csr_free(&an);
    csr_free(&at);
    dataset_free(&d);
    args_free(&a);
    return rc;
}
