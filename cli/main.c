/* The `inca` binary: dispatches to one command per file (cli/cmd_*.c), prints the failure
 * message on stderr in one line and exits 0 / 1 (runtime) / 2 (bad usage or input).
 * Exercised by the end-to-end tests (test_e2e_*.c). */
#include "cli/commands.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/memstat.h"
#include "core/status.h"
#include "core/util.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

static comm_t *g_comm;   /* also cli_comm()'s (cli/job.h), for the commands */

static const struct { const char *name; int (*fn)(int, char **); const char *help; } cmds[] = {
    {"ingest", cmd_ingest,
     "ingest --format ogb|edgelist|metis|idx|csv SRC --out STORE [flags]\n"
     "  (defaults in brackets)\n"
     "  ogb       --split NAME (the default split's folder; every split/ folder is stored, and\n"
     "            train --split NAME picks any of them) [stored, else the first by name]\n"
     "  edgelist  --labels FILE (\"node label\" lines) --features FILE (\"node f1 ... fk\" lines)\n"
     "  csv       SRC: a folder with train.csv, test.csv and optionally valid.csv (or .csv.gz), no header,\n"
     "            lines \"label,f1,...,fk\" (label: a class id >= 0; -1, nan or empty: unlabelled; README,\n"
     "            \"CSV tables\")\n"
     "  graph     --symmetrize (add each edge's reverse) --self-loops (one per node) [neither]\n"
     "  output    --force (replace an existing STORE) --json --quiet (no progress line on a terminal)"},
    {"gen", cmd_gen,
     "gen --kind rmat|csbm --nodes N --avg-degree D --out STORE [flags]\n"
     "  (defaults in brackets)\n"
     "  data      --features F [csbm 32, rmat 0] --classes C [csbm 4, rmat 0] --seed S [0]\n"
     "  csbm      --homophily H [0.8] --noise S [1] --mean-scale M [1]\n"
     "  split     --split random:TR,VA,TE [random:0.6,0.2,0.2]\n"
     "  run       --threads T [0: all cores] --force (replace an existing STORE) --json\n"
     "            --quiet (no progress line on a terminal)"},
    {"info", cmd_info, "info STORE [--json]"},
    {"verify", cmd_verify,
     "verify STORE|SHARD_DIR [--json]   check every checksum and the dataset's contents\n"
     "            (exit 2 names the first bad value); SHARD_DIR: every shard that inca shard --out DIR wrote"},
    {"partition", cmd_partition,
     "partition STORE --parts K [flags]   store a partitioning (and the layout the view loader maps)\n"
     "  (defaults in brackets)\n"
     "            --method metis|lp|random|parmetis [metis] --seed S [0]\n"
     "            --ranks P (parmetis: start it as P MPI ranks; or run it under mpirun -np P)\n"
     "            lp: multilevel label propagation in about the graph's own memory (METIS holds some 80 bytes per\n"
     "            stored edge), several times faster; cuts within a few % of METIS's; for graphs METIS cannot hold\n"
     "            parmetis: PT-Scotch's ParMETIS, each rank reading only its slice of the graph; for graphs whose\n"
     "            METIS run takes too long or does not fit one process's memory (METIS's cut is the better one)\n"
     "  layout    --feature-norm none|row|standard [none] --m0 gcn|sage|none (IncAgg's M^0 = AX) [gcn]\n"
     "            --history-dtype fp32|bf16 (M^0's) [fp32] --no-layout (the partitioning alone)\n"
     "            --rebuild-layout (delete this layout and write it again)\n"
     "            --json (one line on stdout: partition_time_s is the partitioning's own, stored with it, so a\n"
     "            reused one's is its first run's; total_time_s is this run's; peak_rss_anon_mb is rank 0's,\n"
     "            which also writes the layout, rank_peak_rss_anon_mb every rank's before it) --quiet (no\n"
     "            progress, status, launch or summary lines: all go to stderr)"},
    {"train", cmd_train,
     "train STORE --model M --method full|cluster|gas|incagg [flags]\n"
     "  (defaults in brackets, a graph's; on a store without a graph, a table, the flags not given take\n"
     "  the table defaults, an MLP of 256 on standardised features, named on stderr and in --json's\n"
     "  kind_defaults: README, \"Defaults by data kind\")\n"
     "  model     --model gcn|sage|gcnii|appnp|mlp [gcn] --layers L [2] --hidden H [16]\n"
     "            --dropout P [0.5] --batchnorm --residual --alpha A [0.1] --theta T [0.5] --K K [10]\n"
     "  optimiser --epochs E [200] --lr LR [0.01] --weight-decay W [5e-4] --wd-first-layer\n"
     "            --wd-conv W --adamw --patience N (evaluations) [0: off] --select acc|loss [acc]\n"
     "            --eval-every N (evaluate and checkpoint every N epochs and after the last) [1]\n"
     "            --beta1 B|auto (Adam's momentum) [auto: 0.9; 0 for gas and incagg, whose histories\n"
     "            delay the loop from a step back to its input: README, \"Histories\"]\n"
     "            --eval-average D|auto (evaluate an average of the weights, decay D per step; 0: the\n"
     "            weights themselves) [auto: 1 - B/K for cluster, gas and incagg with B of K parts a\n"
     "            batch, else 0]\n"
     "            --metric acc|balanced_acc|macro_f1 [acc] (the validation figure that picks the best epoch;\n"
     "            all three are reported)\n"
     "  data      --feature-norm none|row|standard [none] (row: each node's features over their sum,\n"
     "            for features >= 0 only; standard: each column to mean 0, std 1)\n"
     "            --split stored|NAME|random:TR,VA,TE[:SEED] [stored] (NAME: a split stored at ingest,\n"
     "            see inca info; random: drawn now, seeded by --seed unless SEED is given)\n"
     "            --train-indices FILE(.npy|text) (the nodes to train on instead of the train split;\n"
     "            none of the validation or test split's, none twice) --dense-input\n"
     "            --batch-size N (mlp) [0: full batch]\n"
     "  method    --method full|cluster|gas|incagg [full] --parts K [40] --batch-parts B [10]\n"
     "            --refresh R (incagg, steps) [0: once per epoch] --history-dtype fp32|bf16 [fp32]\n"
     "            --refresh-source push|recompute (incagg) [recompute] --cluster-norm batch|global [batch]\n"
     "            --refresh-relax W (incagg, recompute: a refresh moves the snapshot a fraction W of\n"
     "            the way to the exact rows; 1 replaces it) [0.15]\n"
     "            --refresh-eval fused|separate (incagg, recompute: an epoch-end refresh shares the\n"
     "            evaluation's pass, or each runs its own and is timed apart) [fused]\n"
     "            --input-layer aggregate-first|transform-first (cluster, incagg, gcn: the first layer\n"
     "            aggregates x at its width, or multiplies by W first: M^0_B W + Â_BB (D W), D = drop(x) - x,\n"
     "            over x's nonzeros when sparse; the same maths, far less work for wide features,\n"
     "            other bits) [aggregate-first]\n"
     "            --refresh-weights average|last|auto (incagg, recompute: a refresh's exact rows come\n"
     "            from the evaluation's averaged weights or the training weights) [auto: average\n"
     "            when --eval-average is not 0, else last]\n"
     "            --history-location device|host|auto (cuda: where history tables live; auto: on the\n"
     "            device when they fit its memory budget, else host memory) [auto]\n"
     "            --features-location device|host|auto (cuda, --loader view, incagg or cluster: host\n"
     "            memory sends each batch's feature rows with the batch; auto: host only when they do\n"
     "            not fit the device) [auto]\n"
     "  run       --runs N [1] --seed S [0] --threads T [all cores] --device cpu|cuda|cuda:N|auto [cpu]\n"
     "            --deterministic (cuda SpMM) --tf32 (cuda GEMM) --metrics FILE.jsonl --json\n"
     "            --checkpoint DIR --resume --save-params FILE.npy (the last run's final parameters)\n"
     "            --config RESULT.json (rerun the \"config\" of a --json result; flags given here win)\n"
     "            --quiet (no status or progress lines on stderr)\n"
     "  ranks     mpirun -np P inca train ...: P data-parallel processes (every method; CPU or a device:\n"
     "            --device cuda puts rank r of a node on its GPU r mod count); --ranks P: start itself as\n"
     "            P MPI ranks under mpiexec (under mpirun: the job's size, checked; the config records it)\n"
     "            [the job's: 1 alone]; --workers P [1]: the same P ranks simulated in one process (bit for\n"
     "            bit the same; not with several MPI ranks)\n"
     "            --grad-reduce chain|allgather|nccl [chain] (MPI: chain and allgather sum the gradients in\n"
     "            rank order through the host; nccl on the GPUs, one GPU per rank, NCCL's order)\n"
     "  memory    --loader auto|copy|view [auto: view past 1/8 of RAM] --memory-budget SIZE (view) [none]\n"
     "            --device-memory-budget SIZE (cuda: device bytes the run may hold; a smaller GPU\n"
     "            simulated; the JSON's placement says what went where) [the device's free memory]\n"
     "            --pass-dtype fp32|bf16 (view: the layer-wise passes' two n x hidden buffers; bf16 halves\n"
     "            them, rounding hidden outputs between layers of an evaluation or refresh) [fp32]\n"
     "            --partition NAME (a stored partitioning) [metis-K-s0]"},
    {"predict", cmd_predict,
     "predict [STORE] --checkpoint DIR --out FILE.npy [--embeddings] [--indices FILE] [--run I [0]] [--json]\n"
     "            the model train --checkpoint DIR left there, in eval mode on the whole graph: class scores\n"
     "            (logits, n x classes) or the last hidden layer (--embeddings: gcn, sage, mlp) for every\n"
     "            node or the ids in FILE (.npy or text); --run I of a --runs R folder: 0..R-1. --json:\n"
     "            the checkpoint's epoch and the scores' test accuracy (on the --split trained with), with\n"
     "            --indices over FILE's nodes of the test split (test_rows; null when none is). Its flags\n"
     "            come from DIR/config.json;\n"
     "            train's flags (see inca train --help) given here override them"},
    {"export", cmd_export,
     "export STORE OUT --format ogb|npz|npy [--split NAME] [--split-name NAME] [--partition NAME] [--json]\n"
     "            the store's dataset for other tools: OGB raw layout (inca ingest --format ogb reads it\n"
     "            back; every stored split in its own folder), one .npz, or a folder of .npy (one split:\n"
     "            --split picks it [stored]);\n"
     "            --split-name names the default's OGB folder [its stored name, or stored]; --partition NAME\n"
     "            (npz, npy): also part, each node's part of that stored partitioning (inca info lists them);\n"
     "            a graph without features is written without x (ogb: without node-feat)"},
    {"shard", cmd_shard,
     "shard STORE --ranks P --out DIR [--parts K | --partition NAME] [--feature-norm none|row|standard]\n"
     "            [--model gcn|sage] [--history-dtype fp32|bf16] [--json] [--quiet]   per-rank stores for mpirun -np P\n"
     "            inca train DIR (an existing DIR's rank-r-of-P stores are replaced: one DIR may hold several P's;\n"
     "            --quiet: no per-shard lines)"},
    {"prune", cmd_prune,
     "prune STORE --labeled F --ssl S --score S --select S --keep F [flags]\n"
     "  (defaults in brackets; a flag given that the run ignores is refused, e.g. --mis-ratio with --select topk)\n"
     "  labels    one of --labeled FRACTION [0.01] | --labeled-per-class K (>= 1) | --labeled-indices FILE\n"
     "            --split stored|NAME|random:TR,VA,TE[:SEED] [stored] --seed S [0]\n"
     "  pseudo    --ssl labelprop|sgc|cs|selftrain|proxy|auto [auto] (sgc: a softmax regression on the rows\n"
     "            smoothed 0, 1, 2, 4, 8 and 16 hops over the graph, side by side; cs: sgc, then Correct and\n"
     "            Smooth over the same graph; proxy: the proxy trained on the labelled rows alone predicts the\n"
     "            rest; auto: labelprop, sgc or proxy, whichever gets more labelled rows right when each fifth\n"
     "            of them is hidden in turn)\n"
     "            --graph auto|knn|graph [auto] --knn K [10] (or --knn exact|faiss|auto: the search)\n"
     "            --knn-features raw|whiten|sqrt-whiten|auto [auto] (a table's kNN graph from the rows as given,\n"
     "            PCA-whitened to --knn-pca D [200] components, or their square roots whitened; auto: each\n"
     "            allowed view is a candidate of the check)\n"
     "            --knn-search exact|faiss|auto [auto: faiss from 100000 rows when built with FAISS]\n"
     "            --faiss-index FACTORY [IVF<4 sqrt n>,Flat] --faiss-nprobe N [8]\n"
     "            --metric cosine|euclidean [cosine] --alpha A [0.9] --iters N [50] --cmn (spreading: labelprop\n"
     "            and auto; --iters also cs)\n"
     "            --tau T [0.95] --noise S [0.2] --lambda-u L [1] --ssl-epochs E [100] (selftrain only)\n"
     "  proxy     --proxy-model M --proxy-epochs E [30] --proxy-hidden H [256] --proxy-layers L [2]\n"
     "            --proxy-lr LR [0.01] --proxy-dropout P [0.2] --proxy-batch-size N [0]\n"
     "            --feature-norm none|row|standard --weight-decay W [5e-4]\n"
     "            --proxy-method full|cluster|gas|incagg [full] --proxy-parts K [40] --proxy-batch-parts B [10]\n"
     "            --relabel N [0] (rounds: a proxy trained on the most confident --relabel-confident F [0.5]\n"
     "            of the pseudo-labels relabels the unlabelled pool, then the recording proxy trains)\n"
     "  tables    (no graph) flags not given take: --feature-norm standard --proxy-epochs 20\n"
     "            --proxy-batch-size 128 --proxy-lr 0.001 --epochs 20 --batch-size 128 --lr 0.001 --dropout 0.2\n"
     "  score     --score aum|forgetting|el2n|cartography [aum] (not with --select random)\n"
     "            --el2n-epochs N [10] (el2n, or dynamics saved or reused: their key holds it)\n"
     "            --dynamics-from auto|eval|steps [auto: eval for full, steps for mini-batch methods]\n"
     "            --dynamics auto|full|compact [auto: compact past 256 MiB of per-epoch matrices]\n"
     "            --reuse-dynamics --dyn-tag T --no-save-dynamics\n"
     "  select    --select ccs|double-end|topk|random [ccs] --keep F[,F...] [0.1] (several: a budget curve,\n"
     "            scored once, one output and JSON line per budget; --out/--indices get -keepF)\n"
     "            --mis-ratio R [0] (ccs, double-end) --strata N [50] (ccs) --topk hard|easy [hard] (topk)\n"
     "            --balance\n"
     "  output    --indices FILE[.npy] (the kept ids as .npy and as text: FILE.npy and FILE, or FILE.txt\n"
     "            beside a FILE.npy) --out PRUNED_STORE --overwrite (replace outputs that exist; without it\n"
     "            they are refused before any work) --json\n"
     "            --config RESULT.json (rerun the \"config\" of a --json result; flags given here win)\n"
     "  eval      --eval (this block's flags only with it) --runs N [1] --model M [mlp or gcn]\n"
     "            --method full|cluster|gas|incagg [full] --parts K [40] --batch-parts B [10]\n"
     "            --epochs E [200] --hidden H [256] --layers L [2] --lr LR [0.01] --dropout P [0.5]\n"
     "            --batch-size N [0] --no-full --eval-sets coreset,random,full [all three]\n"
     "            --eval-budget epochs|steps [epochs] (a subset trains --epochs epochs, or as many optimiser\n"
     "            steps as the full pool's --epochs: more epochs for a smaller subset)\n"
        "  device    --device cpu|cuda|auto [cpu] (proxy and target training) --deterministic --tf32\n"
     "            --threads T [0: all cores] --quiet (no progress line on a terminal)"},
    {"bench", cmd_bench,
     "bench spmm|gen|loader|epoch|pruning|knn|scale STORE? [flags]\n"
     "  (defaults in brackets)\n"
     "  all       --quiet (no progress line on a terminal: stage, epoch, loss, s/epoch, ETA)\n"
     "  spmm      --nodes N [1048576] --avg-degree D [16] --features 16,64,256 [16,64,256] --reps R [5]\n"
     "            --parts K [256] --ordering random,metis|random [random,metis] --seed S [0] --threads T [0: all]\n"
     "            --device cpu|cuda|auto [cpu] --deterministic --json\n"
     "  gen       --nodes N [2000000] --avg-degree D [50] --features F [16] --classes C [8] --seed S [0]\n"
     "            --threads T [0: all] --out DIR [$TMPDIR or /tmp] --keep (the store stays) --json\n"
     "  loader    STORE --method cluster|gas|incagg [gas] --cold (drop the page cache first) --loader auto|copy|view\n"
     "            [auto] --memory-budget SIZE + the model/method flags below\n"
     "  pruning   STORE + prune's flags (see inca prune --help)\n"
     "  knn       STORE --knn K [10] --metric cosine|euclidean [cosine] --faiss-index FACTORY [IVF<4 sqrt n>,Flat]\n"
     "            --faiss-nprobe N [8] --max-rows N [all] --no-exact --seed S [0] --threads T --json\n"
     "            (exact kNN vs FAISS on the train split's rows: time and recall@k)\n"
     "  model/method flags of loader, epoch and scale: --model M [gcn] --layers L [2] --hidden H [16]\n"
     "            --epochs E [3] --lr LR [0.01] --dropout P [0.5] --weight-decay W [5e-4]\n"
     "            --beta1 B|auto [auto: 0 for gas/incagg batches that leave parts out, else 0.9]\n"
     "            --feature-norm none|row|standard [none] --parts K [40] --batch-parts B [10]\n"
     "            --refresh R [0] (not epoch: it sets the period by --refresh-epochs)\n"
     "            --history-dtype fp32|bf16 [fp32] --pass-dtype fp32|bf16 [fp32] --refresh-source push|recompute [recompute]\n"
     "            --cluster-norm batch|global [batch] --history-location device|host|auto [auto] --threads T [0]\n"
     "            --features-location device|host|auto [auto]\n"
     "            --device-memory-budget SIZE [free device memory]\n"
     "            --refresh-eval fused|separate [fused] --refresh-relax W [0.15] --eval-average D [0]\n"
     "            --input-layer aggregate-first|transform-first [aggregate-first] (transform-first: cluster, incagg)\n"
     "            --refresh-weights average|last|auto [auto: last, as --eval-average is 0]\n"
     "            --seed S [0] --device cpu|cuda|auto [cpu] --deterministic --tf32 --json\n"
     "  epoch     STORE --methods cluster,gas,incagg [gas,incagg] --refresh-epochs 1,2,4 [1]\n"
     "            --warmup-epochs W [0] --eval-each-epoch + the train model/method flags --json\n"
     "            --config RESULT.json (rerun the \"config\" of its --json summary; flags given here win)\n"
     "            --breakdown (CPU; --methods full,cluster,gas,incagg: every op timed by kind against its floor:\n"
     "            SGEMM rate, random row gather of its width, copy bandwidth, all measured in the same run)\n"
     "            --compare-input-layer (--methods cluster,incagg: each also with --input-layer transform-first;\n"
     "            the summary's <method>_input_speedup is aggregate-first's epoch time over transform-first's)\n"
     "  scale     STORE --ranks 1,2,4 [1,2] --methods incagg,gas [incagg,gas] --batch-parts B (global) [8]\n"
     "            --loader view|copy [view] --grad-reduce chain|allgather|nccl [chain] --model-ranks 8,16,32,64\n"
     "            --links 10,100 [10,100] --nvlink GBPS [300] --gpus-per-node G [8] (the model of device\n"
     "            ranks: host staging measured, NVLink assumed for --grad-reduce nccl)\n"
     "            + the train model/method flags --json\n"
     "            (runs under mpiexec with max(--ranks) processes)"},
};

/* The overview prints the first line of each command's help; `inca CMD --help` all of it. */
static void usage(FILE *f) {
    fprintf(f, "usage: inca <command> [args]   (inca <command> --help for its flags; inca --version)\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const char *h = cmds[i].help, *nl = strchr(h, '\n');
        fprintf(f, "  inca %.*s\n", (int)(nl ? nl - h : (long)strlen(h)), h);
    }
}

/* OpenMP threads that wait for work spin first (libgomp: about 300k iterations), which is fast
 * on an idle machine and ruinous on a busy one. On the 2-core machine, `inca train` of Cora with
 * --method incagg --parts 40 --batch-parts 10 --epochs 200 --runs 2 took 24.7-28.4 s beside two
 * busy-looping processes against 4.2 s idle, and 8.2-11.3 s with OMP_WAIT_POLICY=passive (3.9-4.5
 * s idle: within the default's noise; a 200k-node csbm full-batch GCN 3x256 epoch 1.48-1.67 s
 * against 1.51-1.97 s). libgomp reads the policy when it loads, before main,
 * so inca restarts itself once with passive waiting unless the user chose a policy
 * (OMP_WAIT_POLICY or GOMP_SPINCOUNT set). OpenBLAS runs single-threaded inside inca's own
 * OpenMP blocks (core/util.c), so its own spinning pool is never woken. */
static void wait_policy_passive(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("OMP_WAIT_POLICY");   /* no restart (no /proc): the default policy, as before */
}

/* A command's failure on stderr, one line. Under MPI a rank names itself and ends the whole job
 * (the others may wait in a collective; returns 1: no finalize, peers may be gone), unless the
 * error is every rank's agreed verdict: then rank 0 alone says it and the job ends cleanly. */
static int report_failure(const char *name, int rc, int nr, int me) {
    const char *m = inca_errmsg();
    if (nr > 1 && !inca_err_collective()) {
        fprintf(stderr, "inca %s: rank %d of %d: %s\n", name, me, nr, m[0] ? m : "failed");
        fflush(stderr);
        comm_abort(g_comm, inca_exit_code(rc));   /* returns only without MPI */
        return 1;
    }
    if (me == 0) fprintf(stderr, "inca %s: %s\n", name, m[0] ? m : "failed");
    return 0;
}

int main(int argc, char **argv) {
    wait_policy_passive(argv);
    /* peak anonymous / file-backed memory for every --json (a sampling thread; without
     * /proc the peaks stay 0) */
    if (memstat_start() != INCA_OK) inca_err_clear();
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        printf("inca %s\n", cli_version());
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        if (strcmp(argv[1], cmds[i].name) != 0) continue;
        /* --help anywhere (also after a benchmark's name: inca bench epoch --help) */
        for (int j = 2; j < argc; j++)
            if (strcmp(argv[j], "--help") == 0 || strcmp(argv[j], "-h") == 0) {
                printf("usage: inca %s\n", cmds[i].help);
                return 0;
            }
        /* --list-flags: the flags the command's parser knows (tests/test_e2e_help.c) */
        for (int j = 2; j < argc; j++)
            if (strcmp(argv[j], "--list-flags") == 0) {
                args_set_list_mode(1);
                char *sub[3] = {argv[1], j > 2 ? argv[2] : NULL, NULL};   /* the benchmark's name, for bench */
                cmds[i].fn(j > 2 ? 2 : 1, sub);
                const char *const *k = args_listed();
                for (int q = 0; k && k[q]; q++) {   /* "--name VALUE" or, for a boolean, "--name" */
                    const size_t kl = strlen(k[q]);
                    const int b = kl > 0 && k[q][kl - 1] == '!';
                    printf("%.*s%s\n", (int)(b ? kl - 1 : kl), k[q], b ? "" : " VALUE");
                }
                if (k) return 0;
                /* bench without a benchmark's name has no flags of its own: say which to name */
                fprintf(stderr, "inca %s: --list-flags: %s\n", cmds[i].name,
                        strcmp(cmds[i].name, "bench") == 0 ? "name a benchmark (inca bench NAME --list-flags; inca bench --help lists them)"
                                                           : "no flags known");
                return 2;
            }
        inca_err_clear();
        /* under mpirun: MPI starts here and ends after the command */
        int rc = comm_init(&argc, &argv, &g_comm);
        if (rc != INCA_OK) {
            fprintf(stderr, "inca %s: %s\n", cmds[i].name, inca_errmsg());
            return inca_exit_code(rc);
        }
        cli_comm_set(g_comm);
        const int nr = comm_size(g_comm), me = comm_rank(g_comm);
        if (comm_launched() && !comm_has_mpi() && getenv("OMPI_COMM_WORLD_SIZE") && atoi(getenv("OMPI_COMM_WORLD_SIZE")) > 1)
            rc = inca_fail(INCA_EINVAL, "started by mpirun with %s ranks, but this inca was built without MPI "
                           "(install libopenmpi-dev and rebuild)", getenv("OMPI_COMM_WORLD_SIZE"));
        else if (nr > 1 && strcmp(cmds[i].name, "train") != 0 && strcmp(cmds[i].name, "bench") != 0 &&
                 strcmp(cmds[i].name, "partition") != 0)   /* partition: parmetis only, it checks */
            rc = inca_fail(INCA_EINVAL, "runs in one process; started as %d ranks (run it without mpirun)", nr);
        inca_threads();   /* one OpenMP pool, BLAS single-threaded inside it (core/util.c) */
        if (rc == INCA_OK) rc = cmds[i].fn(argc - 1, argv + 1);
        if (rc != INCA_OK && report_failure(cmds[i].name, rc, nr, me)) return inca_exit_code(rc);
        comm_finalize(&g_comm);
        cli_comm_set(NULL);
        return inca_exit_code(rc);
    }
    fprintf(stderr, "inca: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
