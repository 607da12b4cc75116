/* inca shard STORE --ranks P --out DIR [--parts K | --partition NAME] [--feature-norm none|row|standard]
 * [--model gcn|sage] [--history-dtype fp32|bf16] [--json]: per-rank stores for
 * `mpirun -np P inca train DIR` on machines without a shared file system (nn/shard.h): rank r's
 * own and halo rows of the layout of STORE's partitioning metis-K-s0 (or NAME, e.g. a
 * parmetis one from inca partition --method parmetis). Prints per rank the rows
 * and bytes. Exercised in test_mpi.c. */
#include "core/args.h"
#include "cli/commands.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/partition.h"
#include "nn/shard.h"
#include "nn/train.h"
#include <stdio.h>
#include <string.h>

int cmd_shard(int argc, char **argv) {
    static const char *const known[] = {"--ranks", "--out", "--parts", "--partition", "--feature-norm", "--model", "--history-dtype",
                                        "--json!", "--quiet!", NULL};
    args_t *a = NULL;
    json_t *j = NULL;
    shard_stats_t st;
    memset(&st, 0, sizeof st);
    int64_t ranks = 0, parts = 0;
    int rc = args_parse(argc, argv, known, &a);
    if (rc != INCA_OK) return rc;
    shard_opts_t o = {.model = NN_GCN};
    const char *out = args_str(a, "--out", NULL);
    if (args_npos(a) != 1) { rc = inca_fail(INCA_EINVAL, "expected one STORE argument"); goto done; }
    if (!out) { rc = inca_fail(INCA_EINVAL, "--out DIR is required"); goto done; }
    if (!args_has(a, "--ranks")) { rc = inca_fail(INCA_EINVAL, "--ranks P is required"); goto done; }
    if ((rc = args_int(a, "--ranks", 0, &ranks)) || (rc = args_int(a, "--parts", 40, &parts))) goto done;
    if (ranks < 1 || ranks > 64) { rc = inca_fail(INCA_EINVAL, "--ranks: expected 1 to 64, got %lld", (long long)ranks); goto done; }
    o.ranks = (int)ranks;
    o.parts = parts;
    if (args_has(a, "--partition")) {   /* a stored name carries its part count, as in train */
        const char *pn = args_str(a, "--partition", "");
        if ((rc = partition_name_parts(pn, args_has(a, "--parts"), &o.parts))) goto done;
        parts = o.parts;
        snprintf(o.partition, sizeof o.partition, "%s", pn);
    }
    if ((rc = args_word(a, "--model", "gcn", model_kind_words, NN_KIND_COUNT, MODEL_KIND_EXPECT, &o.model)) ||
        (rc = args_word(a, "--feature-norm", "none", train_featnorm_words, 3, "none|row|standard", &o.featnorm)) ||
        (rc = hist_dtype_parse(args_str(a, "--history-dtype", "fp32"), &o.m0_dtype)))
        goto done;
    const double t0 = inca_now();
    if ((rc = shard_write(args_pos(a, 0), &o, out, &st)) != INCA_OK) goto done;
    const double secs = inca_now() - t0;
    int64_t bytes = 0;
    for (int r = 0; r < o.ranks; r++) {
        if (!args_has(a, "--quiet"))
            fprintf(stderr, "shard %d of %d: %lld own rows + %lld halo rows, %.1f MiB\n", r, o.ranks,
                    (long long)st.own_rows[r], (long long)st.halo_rows[r], st.bytes[r] / 1048576.0);
        bytes += st.bytes[r];
    }
    if (args_has(a, "--json")) {
        if ((rc = json_new(&j))) goto done;
        json_str(j, "store", args_pos(a, 0));
        json_str(j, "out", out);
        json_int(j, "ranks", o.ranks);
        json_int(j, "parts", parts);
        json_str(j, "partition", o.partition[0] ? o.partition : NULL);
        json_arr_begin(j, "shards");
        for (int r = 0; r < o.ranks; r++) {
            json_obj_begin(j, NULL);
            json_int(j, "rank", r);
            json_int(j, "own_rows", st.own_rows[r]);
            json_int(j, "halo_rows", st.halo_rows[r]);
            json_int(j, "bytes", st.bytes[r]);
            json_obj_end(j);
        }
        json_arr_end(j);
        json_int(j, "bytes", bytes);
        json_num(j, "seconds", secs);
        memstat_json(j);
        rc = json_write(j, stdout);
    } else printf("%d shards of %s in %s: %.1f MiB, %.3f s\n", o.ranks, args_pos(a, 0), out, bytes / 1048576.0, secs);
done:
    json_free(&j);
    args_free(&a);
    return rc;
}
