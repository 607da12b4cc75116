/* inca partition STORE --parts K [--method metis|random] [--seed S] [--feature-norm none|row|standard]
 * [--m0 gcn|sage|none] [--history-dtype fp32|bf16] [--no-layout] [--json]: compute (or reuse) a
 * partitioning and store it (graph/partition.h), then the partition-ordered layout the view
 * loader maps (nn/layout.h): the renumbered features for --feature-norm and IncAgg's M^0 for the
 * adjacency of --m0's model in --history-dtype. Prints name, edge cut and times.
 * Exercised end to end in test_partition.c. */
#include "core/args.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "core/json.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/partition.h"
#include "loaders/partition_store.h"
#include "loaders/store.h"
#include "nn/layer.h"
#include "nn/layout.h"
#include "nn/model.h"
#include "nn/train.h"
#include <stdio.h>
#include <string.h>

int cmd_partition(int argc, char **argv) {
    static const char *const known[] = {"--parts", "--method", "--seed", "--json!", "--feature-norm", "--m0", "--history-dtype",
                                        "--no-layout!", "--quiet!", NULL};
    args_t *a = NULL;
    store_t *s = NULL;
    json_t *j = NULL;
    partition_t p = {0};
    int64_t k = 0, seed = 0;
    int method = PART_METIS, reused = 0;
    int rc = args_parse(argc, argv, known, &a);
    if (rc != INCA_OK) goto done;
    if (args_npos(a) != 1) { rc = inca_fail(INCA_EINVAL, "expected one STORE argument"); goto done; }
    if (!args_has(a, "--parts")) { rc = inca_fail(INCA_EINVAL, "--parts K is required"); goto done; }
    if ((rc = args_int(a, "--parts", 0, &k)) != INCA_OK) goto done;
    if ((rc = args_int(a, "--seed", 0, &seed)) != INCA_OK) goto done;
    if (seed < 0) { rc = inca_fail(INCA_EINVAL, "--seed: expected a non-negative integer"); goto done; }
    if ((rc = partition_method_parse(args_str(a, "--method", "metis"), &method)) != INCA_OK) goto done;
    int featnorm = 0, m0_kind = NN_GCN, built = 0;
    hist_dtype_t hd = HIST_F32;
    const char *m0s = args_str(a, "--m0", "gcn");
    if ((rc = args_word(a, "--feature-norm", "none", train_featnorm_words, 3, "none|row|standard", &featnorm)) != INCA_OK) goto done;
    if ((rc = hist_dtype_parse(args_str(a, "--history-dtype", "fp32"), &hd)) != INCA_OK) goto done;
    if (strcmp(m0s, "none") == 0) m0_kind = -1;
    else if (strcmp(m0s, "gcn") != 0 && strcmp(m0s, "sage") != 0) {
        rc = inca_fail(INCA_EINVAL, "--m0: expected gcn, sage or none, got '%s'", m0s);
        goto done;
    } else if ((rc = model_kind_parse(m0s, &m0_kind)) != INCA_OK) goto done;
    if ((rc = store_open(args_pos(a, 0), STORE_RDWR_MAP, &s)) != INCA_OK) goto done;
    double t0 = inca_now();
    cli_progress_t pg;
    cli_progress_init(&pg, "partition", args_has(a, "--quiet"));
    cli_progress(&pg, 1, "%s into %lld parts", method == PART_METIS ? "METIS" : "random", (long long)k);
    /* the graph is read from the store only when something must be computed from it */
    rc = store_partition_get(s, NULL, k, method, (uint64_t)seed, &p, &reused);
    const double tl = inca_now();
    if (rc == INCA_OK && !args_has(a, "--no-layout") && store_meta(s)->features > 0) {
        cli_progress(&pg, 1, "writing the partition-ordered layout");
        rc = layout_ensure(s, &p, NULL, featnorm, m0_kind >= 0, m0_kind >= 0 ? nn_kind_norm(m0_kind) : NN_NORM_GCN, hd, &built);
    }
    cli_progress_end(&pg);
    if (rc != INCA_OK) goto done;
    const double layout_s = inca_now() - tl;
    double total = inca_now() - t0;
    if (!args_has(a, "--quiet"))
        fprintf(stderr, "partition %s: %lld parts of %lld..%lld nodes, edge cut %lld, %.3f s%s\n", p.man.name,
            (long long)p.k, (long long)p.man.min_part, (long long)p.man.max_part, (long long)p.man.edge_cut,
            p.man.seconds, reused ? " (reused)" : "");
    if (built && !args_has(a, "--quiet")) {
        char what[64] = "";
        static const char *const names[3] = {"features", "M^0", "adjacency"};
        for (int i = 0; i < 3; i++)
            if (built & (1 << i)) snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s", what[0] ? ", " : "", names[i]);
        fprintf(stderr, "layout of %s (feature norm %s): %s written, %.3f s\n", p.man.name, layout_featnorm_name(featnorm),
                what, layout_s);
    }
    if (args_has(a, "--json")) {
        if ((rc = json_new(&j)) != INCA_OK) goto done;
        json_str(j, "name", p.man.name);
        json_str(j, "method", p.man.method);
        json_int(j, "parts", p.k);
        json_int(j, "seed", (int64_t)p.man.seed);
        json_int(j, "nodes", p.n);
        json_int(j, "edge_cut", p.man.edge_cut);
        json_int(j, "min_part", p.man.min_part);
        json_int(j, "max_part", p.man.max_part);
        json_num(j, "partition_time_s", p.man.seconds);
        json_num(j, "total_time_s", total);
        json_bool(j, "reused", reused);
        json_bool(j, "layout_x_written", built & 1);
        json_bool(j, "layout_m0_written", (built & 2) != 0);
        json_bool(j, "layout_adj_written", (built & 4) != 0);
        json_num(j, "layout_time_s", layout_s);
        rc = json_write(j, stdout);
    }
done:
    json_free(&j);
    partition_free(&p);
    store_close(&s);
    args_free(&a);
    return rc;
}
