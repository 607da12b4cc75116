/* inca bench scale STORE --ranks 1,2,4 [--methods incagg,gas] [--batch-parts B] [--loader view]
 *   [--model-ranks 8,16,32,64 --links 10,100] [training flags]:
 * data-parallel scaling of the mini-batch methods over MPI (issue 13). It runs under mpirun with
 * at least max(ranks) processes (the CLI restarts itself under mpiexec when started alone); for
 * each P the first P processes split off a communicator and train each method on it, exactly as
 * `mpirun -np P inca train` would. --batch-parts B is the GLOBAL batch: each of the P ranks draws
 * B / P parts per step, so every P takes the same number of steps per epoch on batches of the
 * same size (B must be a multiple of every P).
 *
 * Printed per (P, method), one JSON line: per rank the epoch / step / refresh / eval times, the
 * bytes it sent and its seconds inside MPI per phase (core/comm.h) per epoch, its peak anonymous
 * memory; then a summary per method and P: speedup = epoch time at P=1 / at P, the bytes per
 * epoch of the busiest rank, GAS / IncAgg bytes, and the largest rank's peak anonymous memory
 * against 1/P of the P=1 run.
 *
 * --model-ranks: a model on paper for more ranks than this machine has (2 cores, no network),
 * from the store's METIS partitioning (its k parts bound P <= k): for each P the exact halo of
 * every rank (graph/dist.h) and, for GAS, the remote halo of each part summed over the rank's
 * parts (an upper bound of its per-epoch pulls: batches of several parts share rows), and its
 * nonzeros into other ranks' rows (the pulls of one-node batches: the ceiling of GAS / IncAgg
 * bytes on this graph, whatever the batch size); compute
 * per rank = the measured P=1 epoch time / P (perfect split, so the model shows what the
 * communication alone costs); communication = bytes / link bandwidth + 5 µs per message;
 * gradients as built (an allgather: (P-1) records per step per rank). Prints per link and P the
 * modelled epoch time and parallel efficiency of IncAgg and GAS, and where each falls below 50%.
 * Ranks on a device (--device cuda; issue 29): the compute is the device's measured P=1 epoch,
 * every halo byte MPI carries also crosses the host staging twice (down at its owner, up at its
 * reader) and a step's gradient record once each way, at the staging's bandwidth measured in the
 * same run (fp32 rows; bf16 tables or passes move half), and with --grad-reduce nccl the gradients go over NVLink within a node of --gpus-per-node
 * GPUs at --nvlink GB/s (an assumption, stated in the output; default 300) and across nodes at the
 * link's rate.
 * Speed is never asserted; test_mpi runs a smoke pass. */
#include "bench/bench.h"
#include "bench/bench_progress.h"
#include "bench/bench_mb.h"
#include "core/alloc.h"
#include "core/comm.h"
#include "core/json.h"
#include "core/memstat.h"
#include "core/status.h"
#include "core/util.h"
#include "graph/dist.h"
#include "loaders/partition_store.h"
#include "loaders/store.h"
#include "nn/train.h"
#include "nn/train_prep.h"
#include "kernels/backend.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_MAX 16
/* the mini-batch methods, in train_method_t's order: method m trains TRAIN_CLUSTER + m */
enum { SC_CLUSTER = 0, SC_GAS = 1, SC_INCAGG = 2, SC_NMETHODS = 3 };
static const char *const sc_names[SC_NMETHODS] = {"cluster", "gas", "incagg"};

/* one rank's figures of one run */
enum { R_EPOCH, R_STEP, R_REFRESH, R_EVAL, R_ANON, R_ACC, R_BYTES, R_MPIS = R_BYTES + COMM_NPHASES,
       R_N = R_MPIS + COMM_NPHASES };

typedef struct sc_cell {
    int ok;
    double epoch_s, acc, max_anon, max_bytes_epoch;   /* bytes: all phases but setup, per epoch */
    int64_t spe;
} sc_cell_t;

static int parse_list(const char *flag, const char *s, int *v, int max, int *n) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *end = NULL;
        long x = strtol(tok, &end, 10);
        if (*end || x < 1 || x > 4096 || *n == max)
            return inca_fail(INCA_EINVAL, "%s: expected up to %d positive integers, got '%s'", flag, max, tok);
        v[(*n)++] = (int)x;
    }
    if (*n == 0) return inca_fail(INCA_EINVAL, "%s: expected a list such as 1,2,4", flag);
    return INCA_OK;
}

static const char *const scale_flags[] = {BENCH_MB_FLAGS, "--ranks", "--methods", "--model-ranks", "--links", "--loader",
                                          "--grad-reduce", "--nvlink", "--gpus-per-node", NULL};

/* --batch-parts bp is the global batch, split evenly over each rank count of ranks[0..n) */
static int scale_batch_check(int64_t bp, const int *ranks, int n) {
    for (int i = 0; i < n; i++)
        if (bp % ranks[i])
            return inca_fail(INCA_EINVAL, "--batch-parts %lld is the global batch: it must be a multiple of every rank "
                             "count (--ranks has %d)", (long long)bp, ranks[i]);
    return INCA_OK;
}

int bench_scale_max_ranks(int argc, char **argv, int *maxp) {
    /* the command line parsed as bench_scale will (an unknown flag, --list-flags: before any
     * relaunch, once), then --ranks as given (--ranks L, --ranks=L, --config) or its default,
     * and the batch it splits: refused here once, not by every relaunched rank */
    args_t *a = NULL;
    *maxp = 1;
    int rc = args_parse(argc, argv, scale_flags, &a);
    if (rc != INCA_OK) return rc;
    int v[SC_MAX], n = 0;
    int64_t bp = 8;
    rc = parse_list("--ranks", args_str(a, "--ranks", "1,2"), v, SC_MAX, &n);
    for (int k = 0; rc == INCA_OK && k < n; k++) *maxp = v[k] > *maxp ? v[k] : *maxp;
    if (rc == INCA_OK && (rc = args_int(a, "--batch-parts", 8, &bp)) == INCA_OK) rc = scale_batch_check(bp, v, n);
    args_free(&a);
    return rc;
}

/* train method on the first P ranks; rank 0 of them gets every rank's figures in all */
static int run_one(comm_t *sub, const dataset_t *d, const train_config_t *base, train_method_t m, int P, double *all,
                   int64_t *spe) {
    train_config_t c = *base;
    train_result_t r;
    memset(&r, 0, sizeof r);
    const char *method = train_method_name(m);
    c.method = m;
    c.batch_parts = base->batch_parts / P;
    c.comm = sub;
    if (P == 1 && c.grad_reduce == TRAIN_GRAD_NCCL) c.grad_reduce = TRAIN_GRAD_CHAIN;   /* one rank sums nothing */
    memstat_reset_peaks();
    bench_progress_stage("%s at %d ranks", method, P);
    int rc = train_run(d, &c, NULL, 0, &r);
    if (rc != INCA_OK) return inca_fail_ctx(rc, "%s at %d ranks", method, P);
    double rec[R_N], file_mb = 0;
    rec[R_EPOCH] = r.epoch_time_s;
    rec[R_STEP] = r.step_time_s;
    rec[R_REFRESH] = r.refresh_time_s;
    rec[R_EVAL] = r.eval_time_s;
    memstat_peaks(&rec[R_ANON], &file_mb);
    rec[R_ACC] = r.test_acc;
    for (int ph = 0; ph < COMM_NPHASES; ph++) {
        rec[R_BYTES + ph] = (double)r.comm_bytes[ph];
        rec[R_MPIS + ph] = r.comm_s[ph];
    }
    *spe = r.steps_per_epoch;
    const int epochs = r.epochs > 0 ? r.epochs : 1;
    train_result_free(&r);
    rc = comm_allgather(sub, rec, sizeof rec, all, COMM_SETUP);
    for (int q = 0; rc == INCA_OK && q < P; q++)   /* per epoch */
        for (int ph = 0; ph < COMM_NPHASES; ph++) {
            all[q * R_N + R_BYTES + ph] /= epochs;
            all[q * R_N + R_MPIS + ph] /= epochs;
        }
    return rc;
}

static void print_run(const char *method, int P, const double *all, int64_t spe, int json) {
    double eb = 0;
    for (int q = 0; q < P; q++) {
        double b = 0;
        for (int ph = 1; ph < COMM_NPHASES; ph++) b += all[q * R_N + R_BYTES + ph];
        eb = b > eb ? b : eb;
    }
    bench_say("bench scale: %-7s P=%d  %.3f s/epoch, test acc %.4f, busiest rank sends %.1f MB/epoch\n", method, P,
            all[R_EPOCH], all[R_ACC], eb / 1e6);
    if (!json) return;
    json_t *j = NULL;
    if (json_new(&j) != INCA_OK) return;
    json_str(j, "method", method);
    json_int(j, "ranks", P);
    json_int(j, "steps_per_epoch", spe);
    json_num(j, "epoch_time_s", all[R_EPOCH]);
    json_num(j, "test_acc", all[R_ACC]);
    json_arr_begin(j, "per_rank");
    for (int q = 0; q < P; q++) {
        const double *x = all + q * R_N;
        json_obj_begin(j, NULL);
        json_int(j, "rank", q);
        json_num(j, "epoch_time_s", x[R_EPOCH]);
        json_num(j, "step_time_s", x[R_STEP]);
        json_num(j, "refresh_time_s", x[R_REFRESH]);
        json_num(j, "eval_time_s", x[R_EVAL]);
        for (int ph = 0; ph < COMM_NPHASES; ph++) {
            char k[40];
            snprintf(k, sizeof k, "bytes_%s_per_epoch", comm_phase_name(ph));
            json_int(j, k, (int64_t)x[R_BYTES + ph]);
            snprintf(k, sizeof k, "mpi_s_%s_per_epoch", comm_phase_name(ph));
            json_num(j, k, x[R_MPIS + ph]);
        }
        json_num(j, "peak_rss_anon_mb", x[R_ANON]);
        json_obj_end(j);
    }
    json_arr_end(j);
    json_write(j, stdout);
    json_free(&j);
}

/* ---- the model for more ranks ---- */
typedef struct sc_graph {
    csr_t a;          /* renumbered by the partitioning */
    partition_t p;
} sc_graph_t;

static int graph_load(const char *path, const train_config_t *c, sc_graph_t *g) {
    store_t *s = NULL;
    csr_t adj = {0};
    memset(g, 0, sizeof *g);
    int rc = store_open(path, STORE_RDONLY, &s);
    if (rc == INCA_OK) rc = dataset_load_adj(s, &adj);
    if (rc == INCA_OK) rc = store_partition_get(s, &adj, c->parts, PART_METIS, 0, &g->p, NULL);
    if (rc == INCA_OK) rc = csr_permute(&adj, g->p.perm, &g->a);
    csr_free(&adj);
    store_close(&s);
    return rc;
}

/* For P ranks: the largest rank halo (rows), the largest sum over a rank's parts of each
 * part's rows owned by other ranks (GAS's per-epoch pulls with one-part batches: a bound), and
 * the largest count of a rank's nonzeros into other ranks' rows (its pulls with one-node
 * batches: no batching of a rank's parts pulls more, so GAS / IncAgg bytes cannot exceed what
 * this gives on this graph, whatever the batch size). */
static int halo_sizes(const sc_graph_t *g, int P, int64_t *halo_max, int64_t *gas_max, int64_t *cross_max) {
    dist_plan_t plan;
    int rc = dist_plan_make(&g->a, g->p.bounds, g->p.k, P, &plan);
    if (rc != INCA_OK) return rc;
    int64_t *stamp = inca_malloc(sizeof *stamp * (size_t)(g->a.n_rows ? g->a.n_rows : 1));
    if (!stamp) { dist_plan_free(&plan); return INCA_ENOMEM; }
    for (int64_t v = 0; v < g->a.n_rows; v++) stamp[v] = -1;
    *halo_max = *gas_max = *cross_max = 0;
    for (int r = 0; r < P && rc == INCA_OK; r++) {
        int64_t *ids = NULL, m = 0, pulls = 0, cross = 0;
        if ((rc = dist_halo(&g->a, &plan, r, &ids, &m)) != INCA_OK) break;
        inca_free(ids);
        *halo_max = m > *halo_max ? m : *halo_max;
        const int64_t lo = plan.node_lo[r], hi = plan.node_lo[r + 1];
        for (int64_t i = plan.part_lo[r]; i < plan.part_lo[r + 1]; i++)
            for (int64_t v = g->p.bounds[i]; v < g->p.bounds[i + 1]; v++)
                for (int64_t e = g->a.rowptr[v]; e < g->a.rowptr[v + 1]; e++) {
                    const int64_t u = g->a.col[e];
                    cross += u < lo || u >= hi;
                    if ((u < lo || u >= hi) && stamp[u] != i) {
                        stamp[u] = i;
                        pulls++;
                    }
                }
        *gas_max = pulls > *gas_max ? pulls : *gas_max;
        *cross_max = cross > *cross_max ? cross : *cross_max;
    }
    inca_free(stamp);
    dist_plan_free(&plan);
    return rc;
}

/* Ranks on a device (issue 29): the bandwidth of the host staging every byte MPI carries crosses
 * twice (a download at the sender, an upload at the receiver), measured here: 64 MiB from pinned
 * memory up and back, best of 3, GB/s per direction. 0 on the CPU (nothing staged). */
static int staging_gbs(const train_config_t *c, double *gbs) {
    *gbs = 0;
    kern_ctx_t *kc = NULL;
    int rc = train_device_open(c, &kc, (char[64]){0}, 64);
    if (rc != INCA_OK || kc_device(kc) == KERN_DEV_CPU) {
        kc_free(&kc);
        return rc;
    }
    const size_t bytes = (size_t)64 << 20;
    void *h = NULL, *d = NULL;
    double best = 1e30;
    if ((rc = kc_alloc(kc, KERN_MEM_PINNED, bytes, &h)) == INCA_OK && (rc = kc_alloc(kc, KERN_MEM_DEVICE, bytes, &d)) == INCA_OK)
        for (int r = 0; r < 3 && rc == INCA_OK; r++) {
            const double t0 = inca_now();
            if ((rc = kc_copy(kc, d, h, bytes, KERN_H2D, KERN_STREAM_COMPUTE)) == INCA_OK &&
                (rc = kc_copy(kc, h, d, bytes, KERN_D2H, KERN_STREAM_COMPUTE)) == INCA_OK && (rc = kc_sync(kc)) == INCA_OK) {
                const double t = inca_now() - t0;
                best = t < best ? t : best;
            }
        }
    if (rc == INCA_OK) *gbs = 2.0 * (double)bytes / best / 1e9;
    kc_release(kc, KERN_MEM_DEVICE, d);
    kc_release(kc, KERN_MEM_PINNED, h);
    kc_free(&kc);
    return rc;
}

/* The transport of the model, for one method at P ranks over a link of bw bytes/s: bytes of it
 * staged through the host on a device (2 x bytes / staging), the gradients over NVLink within a
 * node with --grad-reduce nccl (a ring all-reduce: 2 (P - 1) / P of them, at the assumed bus
 * bandwidth; across nodes at the link's). */
typedef struct sc_link {
    double bw, staging, nvlink;   /* bytes/s; staging 0: CPU ranks */
    int gpn, nccl;                /* GPUs per node */
} sc_link_t;
static double link_time(const sc_link_t *L, int P, double bytes, double staged, double grad_bytes_nccl) {
    double t = bytes / L->bw + (L->staging > 0 ? staged / L->staging : 0);
    if (L->nccl) t += grad_bytes_nccl * 2.0 * (P - 1) / P / (P <= L->gpn ? L->nvlink : L->bw);
    return t;
}

/* What IncAgg and GAS move per epoch and rank at P ranks, from halo_sizes' figures. */
typedef struct sc_traffic {
    int64_t hmax, gmax, xmax;              /* halo_sizes' */
    double grad, grad_nccl, stage_grad;    /* the steps' records: through MPI, by NCCL, staged on a device */
    double inc, gas, gas_ceil;             /* bytes: IncAgg's, GAS's, GAS's bound */
    double msgs_inc, msgs_gas;             /* messages */
} sc_traffic_t;

/* t's bytes and messages from its halo sizes (spe1: steps per epoch at one rank). */
static void model_traffic(const train_config_t *c, int P, int64_t spe1, int64_t nparams, sc_traffic_t *t) {
    /* the history widths a step and a refresh move: every layer input past x (GCN/SAGE sites) */
    const double width = (double)(c->layers - 1) * (double)c->hidden, row = 4.0 * width;
    const double rec = 4.0 * (4.0 + (double)nparams);
    const int chain = c->grad_reduce == TRAIN_GRAD_CHAIN, nccl = c->grad_reduce == TRAIN_GRAD_NCCL;
    /* per epoch and rank: spe steps, each an allgather of (P-1) records; IncAgg's halo rows
     * once (--refresh-source recompute: the refresh shares the evaluation's pass) or twice
     * (push: the exchange of S, then the evaluation); GAS its pulls (rows + 8-byte ids) and
     * the evaluation pass's halo rows */
    /* nccl: [had, loss] through MPI, the gradients by NCCL (link_time) */
    t->grad = (double)spe1 * (nccl ? 16.0 * (P - 1) : chain ? 16.0 * (P - 1) + 2.0 * (rec - 16.0) : rec * (P - 1));
    t->grad_nccl = nccl ? (double)spe1 * (rec - 16.0) : 0;
    /* host staging on a device: a halo byte down at its owner and up at its
     * reader; a step's record down and its sum up (NCCL: neither) */
    t->stage_grad = nccl ? 0 : (double)spe1 * 2.0 * rec;
    t->inc = t->grad + (c->refresh_source == AGG_SRC_PUSH ? 2.0 : 1.0) * (double)t->hmax * row;
    t->gas = t->grad + (double)t->gmax * (row + 8.0) + (double)t->hmax * row;
    t->gas_ceil = t->grad + (double)t->xmax * (row + 8.0) + (double)t->hmax * row;
    /* the chain's latency: P hops down and P around, per step (pipelined chunks) */
    t->msgs_inc = (double)spe1 * (chain ? 2.0 * P : (double)(P - 1)) + 2.0 * (c->layers) * (P - 1);
    t->msgs_gas = t->msgs_inc + (double)spe1 * 2 * (P - 1);
}

/* The keys of P's JSON line before its links. */
static void model_json_head(json_t *j, const train_config_t *c, int P, const sc_link_t *dev, const sc_traffic_t *t) {
    const int nccl = c->grad_reduce == TRAIN_GRAD_NCCL;
    json_str(j, "model", "scale");
    json_int(j, "ranks", P);
    json_str(j, "device", c->device ? c->device : "cpu");
    json_num(j, "staging_gbs_measured", dev->staging / 1e9);
    if (nccl) json_num(j, "nvlink_gbs_assumed", dev->nvlink / 1e9);
    if (nccl) json_int(j, "gpus_per_node", dev->gpn);
    json_int(j, "halo_rows_max", t->hmax);
    json_int(j, "gas_pull_rows_max", t->gmax);
    json_num(j, "incagg_bytes_per_epoch", t->inc);
    json_num(j, "gas_bytes_per_epoch", t->gas);
    json_num(j, "gas_over_incagg_bytes", t->inc > 0 ? t->gas / t->inc : 0);
    json_int(j, "cross_nonzeros_max", t->xmax);
    json_num(j, "gas_over_incagg_ceiling", t->inc > 0 ? t->gas_ceil / t->inc : 0);
    json_arr_begin(j, "links");
}

/* Both methods' epoch times and efficiencies at P ranks over each link, printed and (j not NULL)
 * in j's links; last_ok[m][l]: the last P at which method m kept 50% efficiency over link l. */
static void model_links(json_t *j, int P, const int *links, int nl, const sc_cell_t *p1, const sc_link_t *dev,
                        const sc_traffic_t *tr, double last_ok[2][SC_MAX]) {
    const double alpha = 5e-6;
    for (int l = 0; l < nl; l++) {
        sc_link_t L = *dev;
        L.bw = (double)links[l] * 1e9 / 8.0;
        double t[2], eff[2];
        const double t1[2] = {p1[SC_INCAGG].epoch_s, p1[SC_GAS].epoch_s}, by[2] = {tr->inc, tr->gas},
                     ms[2] = {tr->msgs_inc, tr->msgs_gas},
                     st[2] = {tr->stage_grad + 2.0 * (tr->inc - tr->grad), tr->stage_grad + 2.0 * (tr->gas - tr->grad)};
        for (int m = 0; m < 2; m++) {
            t[m] = t1[m] / P + link_time(&L, P, by[m], st[m], tr->grad_nccl) + alpha * ms[m];
            eff[m] = t[m] > 0 ? t1[m] / (P * t[m]) : 0;
            if (eff[m] >= 0.5) last_ok[m][l] = P;
        }
        bench_say("bench scale: model P=%-3d %3d Gb/s: incagg %.3f s/epoch (eff %.2f), gas %.3f s/epoch (eff %.2f, "
                "%.2fx incagg's time); bytes/epoch %.1f vs %.1f MB\n", P, links[l], t[0], eff[0], t[1], eff[1],
                t[0] > 0 ? t[1] / t[0] : 0, tr->inc / 1e6, tr->gas / 1e6);
        if (j) {
            json_obj_begin(j, NULL);
            json_int(j, "gbps", links[l]);
            json_num(j, "incagg_epoch_s", t[0]);
            json_num(j, "incagg_efficiency", eff[0]);
            json_num(j, "gas_epoch_s", t[1]);
            json_num(j, "gas_efficiency", eff[1]);
            json_num(j, "gas_over_incagg_time", t[0] > 0 ? t[1] / t[0] : 0);
            json_obj_end(j);
        }
    }
}

static int run_model(const char *path, const train_config_t *c, const int *mr, int nmr, const int *links, int nl,
                     const sc_cell_t *p1, int64_t nparams, const sc_link_t *dev, int json) {
    sc_graph_t g;
    int rc = graph_load(path, c, &g);
    if (rc != INCA_OK) return inca_fail_ctx(rc, "--model-ranks");
    const int64_t spe1 = p1[SC_INCAGG].ok ? p1[SC_INCAGG].spe : p1[SC_GAS].spe;
    double last_ok[2][SC_MAX];
    for (int l = 0; l < nl; l++) last_ok[0][l] = last_ok[1][l] = 0;
    for (int i = 0; i < nmr && rc == INCA_OK; i++) {
        const int P = mr[i];
        if (P > g.p.k) {
            bench_say("bench scale: model at %d ranks skipped: the store's partitioning has %lld parts\n", P,
                    (long long)g.p.k);
            continue;
        }
        sc_traffic_t t = {.hmax = 0, .gmax = 0, .xmax = 0};
        if ((rc = halo_sizes(&g, P, &t.hmax, &t.gmax, &t.xmax)) != INCA_OK) break;
        model_traffic(c, P, spe1, nparams, &t);
        json_t *j = NULL;
        if (json && (rc = json_new(&j)) != INCA_OK) break;
        if (j) model_json_head(j, c, P, dev, &t);
        bench_say("bench scale: model P=%-3d halo %lld rows, GAS pulls %lld rows/epoch with one-part batches, at "
                "most %lld (one-node batches): GAS/IncAgg bytes %.2fx, ceiling %.2fx\n", P, (long long)t.hmax,
                (long long)t.gmax, (long long)t.xmax, t.inc > 0 ? t.gas / t.inc : 0, t.inc > 0 ? t.gas_ceil / t.inc : 0);
        model_links(j, P, links, nl, p1, dev, &t, last_ok);
        if (j) {
            json_arr_end(j);
            json_write(j, stdout);
            json_free(&j);
        }
    }
    for (int l = 0; l < nl && rc == INCA_OK; l++)
        bench_say("bench scale: model %d Gb/s: efficiency >= 50%% up to P=%g (incagg), P=%g (gas)\n", links[l],
                last_ok[0][l], last_ok[1][l]);
    csr_free(&g.a);
    partition_free(&g.p);
    return rc;
}

/* The run's settings: the training flags, the rank counts to measure and to model, the links,
 * the methods. */
typedef struct sc_opts {
    train_config_t c;
    int ranks[SC_MAX], nr, mr[SC_MAX], nmr, links[SC_MAX], nl;
    int want[SC_NMETHODS], maxp, json;
    double nvlink;   /* --nvlink GB/s: the all-reduce bus bandwidth assumed within a node (nccl) */
    int gpn;         /* --gpus-per-node */
} sc_opts_t;

/* The flags into o, checked against this job's process count before anything is loaded. */
static int sc_parse(const args_t *a, comm_t *world, sc_opts_t *o) {
    int rc;
    train_config_t *c = &o->c;
    if (args_npos(a) != 1) return inca_fail(INCA_EINVAL, "expected STORE");
    if ((rc = bench_mb_config(a, c)) ||
        (rc = parse_list("--ranks", args_str(a, "--ranks", "1,2"), o->ranks, SC_MAX, &o->nr)) ||
        (rc = parse_list("--links", args_str(a, "--links", "10,100"), o->links, SC_MAX, &o->nl)))
        return rc;
    if (args_str(a, "--model-ranks", NULL) &&
        (rc = parse_list("--model-ranks", args_str(a, "--model-ranks", NULL), o->mr, SC_MAX, &o->nmr)))
        return rc;
    if ((rc = args_word(a, "--loader", "view", train_loader_words, 3, "copy, view or auto", &c->loader))) return rc;
    if ((rc = args_word(a, "--grad-reduce", "chain", train_grad_reduce_words, 3, "chain, allgather or nccl", &c->grad_reduce)))
        return rc;
    if (!args_str(a, "--batch-parts", NULL)) c->batch_parts = 8;
    int64_t gpn = 8;
    if ((rc = args_double(a, "--nvlink", 300, &o->nvlink)) || (rc = args_int(a, "--gpus-per-node", 8, &gpn))) return rc;
    if (!(o->nvlink > 0) || gpn < 1 || gpn > 1024)
        return inca_fail(INCA_EINVAL, "--nvlink: expected GB/s > 0, --gpus-per-node 1..1024 (got %g, %lld)", o->nvlink,
                         (long long)gpn);
    o->gpn = (int)gpn;
    const char *methods = args_str(a, "--methods", "incagg,gas");
    for (int m = 0; m < SC_NMETHODS; m++) o->want[m] = strstr(methods, sc_names[m]) != NULL;
    if (!o->want[0] && !o->want[1] && !o->want[2])
        return inca_fail(INCA_EINVAL, "--methods: expected a list of cluster,gas,incagg");
    o->maxp = 1;
    for (int i = 0; i < o->nr; i++) o->maxp = o->ranks[i] > o->maxp ? o->ranks[i] : o->maxp;
    if ((rc = scale_batch_check(c->batch_parts, o->ranks, o->nr))) return rc;
    if (o->maxp > comm_size(world))
        return inca_fail(INCA_EINVAL, "bench scale --ranks up to %d needs as many processes; this job has %d (mpirun -np %d)",
                         o->maxp, comm_size(world), o->maxp);
    c->store_path = args_pos(a, 0);
    return INCA_OK;
}

/* Rank 0's cell of one (P, method) run from every rank's figures: epoch time and accuracy of
 * rank 0, the busiest rank's bytes per epoch (all phases but setup) and the largest peak. */
static void sc_cell_set(sc_cell_t *x, const double *all, int P, int64_t spe) {
    x->ok = 1;
    x->epoch_s = all[R_EPOCH];
    x->acc = all[R_ACC];
    x->spe = spe;
    for (int q = 0; q < P; q++) {
        double b = 0;
        for (int ph = 1; ph < COMM_NPHASES; ph++) b += all[q * R_N + R_BYTES + ph];
        x->max_bytes_epoch = b > x->max_bytes_epoch ? b : x->max_bytes_epoch;
        x->max_anon = all[q * R_N + R_ANON] > x->max_anon ? all[q * R_N + R_ANON] : x->max_anon;
    }
}

/* Every method at every P on the first P processes (the others wait at the barrier); rank 0
 * (me) prints each run and keeps its cell. all: scratch of R_N figures per rank. */
static int sc_measure(comm_t *world, int me, const sc_opts_t *o, const dataset_t *d, double *all,
                      sc_cell_t cells[SC_MAX][SC_NMETHODS]) {
    int rc = INCA_OK;
    for (int i = 0; i < o->nr && rc == INCA_OK; i++) {
        comm_t *sub = NULL;
        if ((rc = comm_split(world, o->ranks[i], &sub)) != INCA_OK) break;
        for (int m = 0; m < SC_NMETHODS && sub && rc == INCA_OK; m++) {
            if (!o->want[m]) continue;
            int64_t spe = 0;
            if ((rc = run_one(sub, d, &o->c, (train_method_t)(TRAIN_CLUSTER + m), o->ranks[i], all, &spe)) != INCA_OK) break;
            if (me == 0) {
                print_run(sc_names[m], o->ranks[i], all, spe, o->json);
                sc_cell_set(&cells[i][m], all, o->ranks[i], spe);
            }
        }
        comm_free(&sub);
        if (rc == INCA_OK) rc = comm_barrier(world);
    }
    return rc;
}

/* The model's parameter count, for the gradient records of the model for more ranks. */
static int sc_nparams(const dataset_t *d, const train_config_t *c, int64_t *nparams) {
    model_config_t mc;
    model_t *mm = NULL;
    int rc;
    if ((rc = train_model_config(d, c, c->seed, &mc)) == INCA_OK && (rc = model_create(&mc, 1, &mm)) == INCA_OK)
        for (int i = 0; i < model_nparams(mm); i++) *nparams += model_param(mm, i)->n;
    model_free(&mm);
    return rc;
}

/* Per method and P against the first P: speedup, accuracy change, the busiest rank's bytes
 * (and GAS / IncAgg bytes), the largest peak against its share of the first P's. */
static int sc_summary(const sc_opts_t *o, sc_cell_t cells[SC_MAX][SC_NMETHODS]) {
    const int *ranks = o->ranks;
    int rc;
    for (int m = 0; m < SC_NMETHODS; m++) {
        if (!o->want[m] || !cells[0][m].ok) continue;
        for (int i = 0; i < o->nr; i++) {
            const sc_cell_t *x = &cells[i][m], *b = &cells[0][m];
            const double gas_over = m == SC_INCAGG && cells[i][SC_GAS].ok && x->max_bytes_epoch > 0
                                        ? cells[i][SC_GAS].max_bytes_epoch / x->max_bytes_epoch : 0;
            bench_say("bench scale: %-7s P=%d speedup %.2f (vs P=%d), acc %+.4f, busiest rank %.1f MB/epoch, peak anon "
                    "%.0f MB = %.2f x (P=%d's / P)\n", sc_names[m], ranks[i], x->epoch_s > 0 ? b->epoch_s / x->epoch_s : 0,
                    ranks[0], x->acc - b->acc, x->max_bytes_epoch / 1e6, x->max_anon,
                    b->max_anon > 0 ? x->max_anon / (b->max_anon * ranks[0] / ranks[i]) : 0, ranks[0]);
            if (!o->json) continue;
            json_t *j = NULL;
            if ((rc = json_new(&j)) != INCA_OK) return rc;
            json_str(j, "summary", sc_names[m]);
            json_int(j, "ranks", ranks[i]);
            json_num(j, "speedup", x->epoch_s > 0 ? b->epoch_s / x->epoch_s : 0);
            json_num(j, "acc_delta", x->acc - b->acc);
            json_num(j, "bytes_per_epoch_max_rank", x->max_bytes_epoch);
            if (gas_over > 0) json_num(j, "gas_over_incagg_bytes", gas_over);
            json_num(j, "peak_rss_anon_mb_max_rank", x->max_anon);
            json_num(j, "anon_over_share", b->max_anon > 0 ? x->max_anon / (b->max_anon * ranks[0] / ranks[i]) : 0);
            rc = json_write(j, stdout);
            json_free(&j);
            if (rc != INCA_OK) return rc;
        }
    }
    return INCA_OK;
}

/* The model's compute term is the P=1 epoch split perfectly; the ranks measured here say how far
 * this machine's compute is from that (it printed eff 0.91 at P=4 beside a measured 0.47 at
 * P=2 with no word on the difference): the measured efficiency at each P > 1, before the model. */
static void model_caveat(const sc_opts_t *o, const sc_cell_t (*cells)[SC_NMETHODS]) {
    for (int i = 1; i < o->nr; i++) {
        const sc_cell_t *a = &cells[i][SC_INCAGG], *b = &cells[i][SC_GAS];
        const int P = o->ranks[i];
        if (!a->ok || !b->ok || !(a->epoch_s > 0) || !(b->epoch_s > 0)) continue;
        bench_say("bench scale: model: its compute is the P=1 epoch / P, a perfect split; measured here at P=%d "
                  "(transport included): incagg eff %.2f, gas eff %.2f, so read its efficiencies as upper bounds\n",
                  P, cells[0][SC_INCAGG].epoch_s / (P * a->epoch_s), cells[0][SC_GAS].epoch_s / (P * b->epoch_s));
    }
}

int bench_scale(int argc, char **argv, comm_t *world) {
    args_t *a = NULL;
    dataset_t d;
    dataset_init(&d);
    int rc = args_parse(argc, argv, scale_flags, &a);
    if (rc != INCA_OK) return rc;
    sc_opts_t o;
    memset(&o, 0, sizeof o);
    o.json = args_has(a, "--json");
    const int me = comm_rank(world);
    double *all = NULL;
    sc_cell_t cells[SC_MAX][SC_NMETHODS];
    memset(cells, 0, sizeof cells);
    int64_t nparams = 0;
    if ((rc = sc_parse(a, world, &o)) || (rc = train_dataset_load(&o.c, &d))) goto done;
    if (!(all = inca_malloc(sizeof *all * (size_t)R_N * (size_t)o.maxp))) { rc = INCA_ENOMEM; goto done; }
    if ((rc = sc_measure(world, me, &o, &d, all, cells)) != INCA_OK || me != 0) goto done;
    if ((rc = sc_nparams(&d, &o.c, &nparams)) || (rc = sc_summary(&o, cells))) goto done;
    if (o.nmr > 0) {
        if (o.ranks[0] != 1 || !cells[0][SC_INCAGG].ok || !cells[0][SC_GAS].ok) {
            rc = inca_fail(INCA_EINVAL, "--model-ranks: needs --ranks to start at 1 and --methods incagg,gas (the measured compute)");
            goto done;
        }
        sc_link_t dev = {.nvlink = o.nvlink * 1e9, .gpn = o.gpn, .nccl = o.c.grad_reduce == TRAIN_GRAD_NCCL};
        if ((rc = staging_gbs(&o.c, &dev.staging)) != INCA_OK) goto done;
        dev.staging *= 1e9;
        if (dev.staging > 0)
            bench_say("bench scale: model: ranks on %s, host staging measured %.1f GB/s per direction%s\n", o.c.device,
                      dev.staging / 1e9, dev.nccl ? "; gradients by NCCL over NVLink (assumed below)" : "");
        model_caveat(&o, (const sc_cell_t (*)[SC_NMETHODS])cells);
        rc = run_model(o.c.store_path, &o.c, o.mr, o.nmr, o.links, o.nl, cells[0], nparams, &dev, o.json);
    }
done:
    inca_free(all);
    dataset_free(&d);
    args_free(&a);
    return rc;
}
