/* libFuzzer target: the checkpoint reader (ckpt_load) on DIR/run-0.ckpt holding the input, for a
 * fixed small run (2-layer GCN with BatchNorm, so parameters, Adam state, buffers and two history
 * blobs are all read). Any input must load or be refused with a status; crashes, leaks and
 * sanitizer reports are findings. Seed: with INCA_FUZZ_SEED_OUT=DIR set, initialisation writes
 * a valid checkpoint of that run to DIR/run-0.ckpt (scripts/fuzz.sh does this). */
#include "fuzz_util.h"
#include "core/status.h"
#include "nn/checkpoint.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dataset_t g_d;
static train_config_t g_c;
static model_t *g_m;
static optim_t *g_o;
static unsigned char g_blob0[48], g_blob1[24];
static ckpt_blob_t g_blobs[2] = {{.p = g_blob0, .bytes = sizeof g_blob0}, {.p = g_blob1, .bytes = sizeof g_blob1}};

static void check(int rc, const char *what) {
    if (rc < 0) {
        fprintf(stderr, "fuzz_checkpoint: %s: %s\n", what, inca_errmsg());
        abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    dataset_init(&g_d);
    g_d.n = 6;
    g_d.f = 3;
    g_d.c = 2;
    static float x[18];
    g_d.x = x;
    static int32_t y[6] = {0, 1, 0, 1, 0, 1};
    g_d.y = y;
    static int64_t rowptr[7] = {0, 1, 3, 5, 7, 9, 10};
    static int32_t col[10] = {1, 0, 2, 1, 3, 2, 4, 3, 5, 4};
    g_d.adj = (csr_t){.n_rows = 6, .n_cols = 6, .nnz = 10, .rowptr = rowptr, .col = col};
    train_config_default(&g_c);
    g_c.model = NN_GCN;
    g_c.method = TRAIN_INCAGG;
    g_c.hidden = 4;
    g_c.layers = 2;
    g_c.batchnorm = 1;
    model_config_t mc;
    check(train_model_config(&g_d, &g_c, g_c.seed, &mc), "model config");
    check(model_create(&mc, g_d.n, &g_m), "model");
    check(optim_new(OPTIM_ADAM, 0.01, 0.9, 0.999, 1e-8, &g_o), "optimiser");
    int grp;
    check(optim_add_group(g_o, 0.0, &grp), "optimiser group");
    for (int i = 0; i < model_nparams(g_m); i++) {
        nn_param_t *p = model_param(g_m, i);
        check(optim_add_param(g_o, grp, p->w, p->g, p->n), "optimiser parameter");
    }
    const char *seed = getenv("INCA_FUZZ_SEED_OUT");
    if (seed) {
        ckpt_state_t st;
        memset(&st, 0, sizeof st);
        train_best_init(&st.best);
        st.epoch = 3;
        memset(g_blob0, 0x11, sizeof g_blob0);
        check(ckpt_save(seed, 0, &g_c, &g_d, g_m, g_o, &st, g_blobs, 2), "seed");
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write("ck/run-0.ckpt", data, size);
    ckpt_state_t st;
    ckpt_load(fuzz_path("ck"), 0, &g_c, &g_d, g_m, g_o, &st, g_blobs, 2);
    inca_err_clear();
    return 0;
}
