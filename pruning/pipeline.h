/* The label-efficient pruning pipeline behind `inca prune` and `inca bench pruning`:
 *   pool (the training split) -> labelled subset (stratified, seeded: the "annotation oracle")
 *   -> visible labels (-1 everywhere else) -> pseudo-labels (label spreading on a kNN graph of
 *   a view of the features, or on the dataset's graph; SGC over the same graphs; or the proxy
 *   trained on the labels alone; --ssl auto picks by a 5-fold check on the visible labels)
 *   -> proxy model trained on
 *   the pseudo-labelled pool
 *   while the training dynamics are recorded -> difficulty score -> coreset selection
 *   -> outputs (indices .txt/.npy, pruned store with the TRUE labels of the selected examples,
 *   dynamics saved in the source store so scoring can be rerun without training)
 *   -> optional evaluation of the target model (coreset vs random subset vs full pool).
 *
 * CAVEATS FIRST
 * - prune_run never sees the hidden labels: it takes a dataset whose y holds only the visible
 *   labels (prune_visible_labels builds that array; a test poisons the hidden labels and checks
 *   that pseudo-labels, dynamics, scores and selection are bit-identical).
 * - Pool positions vs node ids: pseudo-labels, dynamics and scores are indexed by position in
 *   the pool (0..npool-1); selections are returned as node ids (pool[pos]), sorted.
 * - The proxy's best epoch is never chosen on true labels: the proxy dataset has no valid or
 *   test split, so its dynamics cover every epoch.
 * Tested in test_pruning_e2e.c (pipeline on small synthetic sets, hidden-label test, stored
 * dynamics reuse, pruned store contents, CLI errors). */
#ifndef INCA_PIPELINE_H
#define INCA_PIPELINE_H
#include <stdint.h>
#include "loaders/dataset.h"
#include "nn/train.h"
#include "pruning/dynamics.h"
#include "pruning/knn.h"
#include "pruning/select.h"
#include "pruning/selftrain.h"

enum { PRUNE_ST_LOAD = 0, PRUNE_ST_LABELED, PRUNE_ST_CHECK, PRUNE_ST_KNN, PRUNE_ST_SPREAD, PRUNE_ST_PROXY, PRUNE_ST_SCORE,
       PRUNE_ST_SELECT, PRUNE_ST_WRITE, PRUNE_ST_EVAL, PRUNE_ST_COUNT };
extern const char *const prune_stage_names[PRUNE_ST_COUNT];

/* pseudo-labels: label spreading, FixMatch self-training, the proxy trained on the labelled rows
 * alone, SGC (pruning/sgc.h: a softmax regression on the rows smoothed over the graph), SGC then
 * Correct and Smooth (pruning/cs.h), or auto (spreading, SGC or the proxy, whichever gets more
 * held-out labelled rows right) */
typedef enum { PRUNE_SSL_LABELPROP = 0, PRUNE_SSL_SELFTRAIN = 1, PRUNE_SSL_PROXY = 2, PRUNE_SSL_AUTO = 3,
               PRUNE_SSL_SGC = 4, PRUNE_SSL_CS = 5, PRUNE_SSL_COUNT = 6 } prune_ssl_t;
enum { PRUNE_MAX_BUDGETS = 16 };
enum { PRUNE_KNN_EXACT = 0, PRUNE_KNN_FAISS = 1, PRUNE_KNN_AUTO = -1 };
/* --knn-search auto: exact below this many pool rows, FAISS from it (README: measured) */
#define PRUNE_KNN_FAISS_ROWS 100000

typedef struct prune_config {
    prune_ssl_t ssl;
    /* label spreading */
    int knn_k;              /* 10 */
    int knn_features;       /* the rows a kNN graph is built from: PRUNE_KF_RAW (as given), _WHITEN
                               (PCA-whitened, pca.h), _SQRT_WHITEN (square roots, then whitened:
                               variance-stabilised counts and intensities; non-negative features
                               only) or PRUNE_KF_AUTO (whichever --ssl auto's check prefers) */
    int64_t knn_pca;        /* the whitened views' components (200; at most the feature count) */
    knn_metric_t metric;    /* cosine */
    double alpha;           /* 0.9 */
    int iters;              /* 50 */
    int cmn;                /* 1: class mass normalisation of the spread scores (labelprop_class_mass) */
    int graph;              /* -1 auto (graph datasets spread over their graph), 0 kNN, 1 graph */
    int knn_search;         /* PRUNE_KNN_EXACT | PRUNE_KNN_FAISS | PRUNE_KNN_AUTO (default: FAISS
                               from PRUNE_KNN_FAISS_ROWS pool rows when the build has it) */
    knn_faiss_opts_t faiss; /* --faiss-index, --faiss-nprobe; seed = the run's */
    /* selftrain: tau, lambda_u, noise, epochs (model width/lr/dropout/wd follow `proxy`) */
    selftrain_opts_t st;
    /* proxy: model/epochs/lr/... (method "full"; runs = 1; hooks are set by prune_run) */
    train_config_t proxy;
    /* scoring and selection */
    score_kind_t score;     /* aum */
    int el2n_epochs;        /* 10 */
    select_opts_t sel;      /* kind, keep, mis_ratio, strata 50, hardest, balance, seed */
    uint64_t seed;
    /* the budget curve: --keep F1,F2,... (sel.keep is keeps[0]); scoring runs once and each
     * budget is selected (and evaluated) from the same scores */
    double keeps[PRUNE_MAX_BUDGETS];
    int nkeeps;
    unsigned given;         /* PRUNE_GIVEN_*: kind-dependent flags the command line gave */
    /* the proxy's dynamics: from its training steps (each pool node's training-mode logits when
     * its batch runs) or from an evaluation pass after every epoch; PRUNE_DYN_AUTO: eval for the
     * full-batch proxy (as measured in README), steps for the mini-batch methods (no full pass) */
    int dyn_from;
    /* the recorder's layout: PRUNE_DYN_FULL matrices (13 B per node per epoch; what
     * --reuse-dynamics stores), PRUNE_DYN_COMPACT running sums (41 B per node), PRUNE_DYN_AUTO:
     * compact when the matrices would pass PRUNE_DYN_COMPACT_BYTES */
    int dyn_layout;
    int relabel;            /* rounds of proxy relabelling before the proxy that records (0) */
    double relabel_confident;   /* a round trains on this share of the pool, the most confident (0.5) */
} prune_config_t;
enum { PRUNE_DYN_AUTO = -1, PRUNE_DYN_EVAL = 0, PRUNE_DYN_STEPS = 1 };
enum { PRUNE_KF_AUTO = -1, PRUNE_KF_RAW = 0, PRUNE_KF_WHITEN = 1, PRUNE_KF_SQRT_WHITEN = 2, PRUNE_KF_COUNT = 3 };
int prune_knn_features_parse(const char *name, int *out);   /* "raw" | "whiten" | "sqrt-whiten" | "auto" */
const char *prune_knn_features_name(int kf);
/* The check's candidates: spreading over the graph or over one of the kNN views, SGC over the
 * same, SGC with Correct and Smooth over the same (--ssl cs only), and the proxy (in this order:
 * the check's ties go to the earlier) */
enum { PRUNE_CAND_LABELPROP = 0, PRUNE_CAND_SGC = PRUNE_KF_COUNT, PRUNE_CAND_CS = 2 * PRUNE_KF_COUNT,
       PRUNE_CAND_PROXY = 3 * PRUNE_KF_COUNT, PRUNE_CAND_COUNT = 3 * PRUNE_KF_COUNT + 1 };
#define PRUNE_SSL_CHECK_FOLDS 5
/* "labelprop" / "sgc" / "cs" (over the graph: on_graph), "labelprop-raw|-whiten|-sqrt-whiten",
 * likewise "sgc-..." and "cs-...", "proxy" */
const char *prune_ssl_cand_name(int k, int on_graph);
enum { PRUNE_DYN_FULL = 0, PRUNE_DYN_COMPACT = 1 };
#define PRUNE_DYN_COMPACT_BYTES (256LL << 20)
enum { PRUNE_GIVEN_FEATNORM = 1, PRUNE_GIVEN_PROXY_EPOCHS = 2, PRUNE_GIVEN_PROXY_BATCH = 4, PRUNE_GIVEN_PROXY_LR = 8,
       PRUNE_GIVEN_EPOCHS = 16, PRUNE_GIVEN_BATCH = 32, PRUNE_GIVEN_LR = 64, PRUNE_GIVEN_DROPOUT = 128 };

/* Defaults above; proxy: mlp (gcn for graph datasets is chosen in prune_run when
 * proxy.model is ""), 2 layers, hidden 256, 30 epochs, lr 0.01, dropout 0.2, wd 5e-4. */
void prune_config_default(prune_config_t *c);
int prune_ssl_parse(const char *name, prune_ssl_t *out);   /* "labelprop" | "selftrain" | "proxy" | "auto" | "sgc" | "cs" */
const char *prune_ssl_name(prune_ssl_t s);

typedef struct prune_result {
    int64_t npool;
    int64_t *pool;          /* node ids (copy) */
    int32_t *pseudo;        /* npool pseudo-labels in [0, c) */
    float *conf;            /* npool confidences */
    prune_dyn_t dyn;        /* proxy dynamics over the pool */
    float *score;           /* npool, the chosen score */
    float *aum;             /* npool AUM (CCS drops by it) */
    int64_t nsel;
    int64_t *sel;           /* selected node ids, sorted */
    int knn_used;           /* the kNN search that ran: PRUNE_KNN_EXACT or _FAISS (-1: none, the
                               dataset's graph was used) */
    int dyn_from;           /* PRUNE_DYN_EVAL | PRUNE_DYN_STEPS: what the dynamics were recorded from */
    int64_t dyn_bytes;      /* the recorder's bytes (dyn_bytes) */
    prune_ssl_t ssl_used;   /* the pseudo-labeller that ran (--ssl auto's choice) */
    int knn_features_used;  /* its kNN view (PRUNE_KF_*; -1: none, the graph or not spreading) */
    int64_t ssl_check_n;    /* the check: labelled rows, each held out once over PRUNE_SSL_CHECK_FOLDS
                               folds (0: not checked, a single candidate) */
    double ssl_check_acc[PRUNE_CAND_COUNT];   /* the share each candidate (PRUNE_CAND_LABELPROP +
                               view, PRUNE_CAND_SGC + view, PRUNE_CAND_CS + view, PRUNE_CAND_PROXY) got right; NaN: not a candidate */
    double sec[PRUNE_ST_COUNT];
} prune_result_t;
void prune_result_free(prune_result_t *r);   /* NULL-safe; zeroes *r */

/* Stratified labelled subset of the pool, using the TRUE labels y (this is the annotator):
 * per class (in the pool) the members are shuffled with `seed` and the first
 * max(1, round(fraction · n_c)) taken, or min(per_class, n_c) when per_class > 0. Pool nodes
 * with y < 0 are never picked. *ids (sorted, inca_malloc'd) receives the picks. */
int prune_labeled_pick(const int32_t *y, int32_t c, const int64_t *pool, int64_t npool, double fraction,
                       int64_t per_class, uint64_t seed, int64_t **ids, int64_t *nids);
/* y_vis[n] = y_true at the labelled ids, -1 everywhere else. INCA_EINVAL when a labelled id is
 * out of range or unlabelled in y_true. */
int prune_visible_labels(const int32_t *y_true, int64_t n, const int64_t *ids, int64_t nids, int32_t *y_vis);

/* Pseudo-labels, proxy dynamics, scores and selection. dv: the dataset with VISIBLE labels only
 * (dv->y as built by prune_visible_labels; its splits are ignored). pool: node ids. r is
 * overwritten (free with prune_result_free). Fills r->sec for the stages it runs. */
int prune_run(const dataset_t *dv, const int64_t *pool, int64_t npool, const prune_config_t *cfg, prune_result_t *r);
/* The scoring and selection stages alone, from r->pseudo and r->dyn (after prune_run or
 * prune_dyn_load): fills r->score, r->aum, r->sel. */
int prune_score_select(const prune_config_t *cfg, int32_t c, prune_result_t *r);

/* Save pool, pseudo-labels, confidences and dynamics in the store at `path` under record
 * "dyn:<tag>" and arrays "dyn/<tag>/..." (one transaction, replacing an older set), with `key`
 * (a text describing the configuration that produced them) for prune_dyn_load to check. */
int prune_dyn_save(const char *path, const char *tag, const char *key, const prune_result_t *r, int32_t c);
/* Load them back into r (pool, pseudo, conf, dyn). INCA_ENOTFOUND when absent; INCA_EINVAL
 * when the stored key differs from `key` (unless key is NULL), naming both. */
int prune_dyn_load(const char *path, const char *tag, const char *key, prune_result_t *r, int32_t *c);

/* The pruned dataset: feature datasets keep only the selected examples followed by the
 * original valid and test examples (renumbered; train split = the selected ones); graph
 * datasets keep the whole graph with train split = the selected nodes and the labels of
 * unselected training nodes set to -1 (not annotated). Labels are the TRUE ones. */
int prune_make_pruned(const dataset_t *d, const int64_t *sel, int64_t nsel, dataset_t *out);

/* Accuracy of pseudo-labels against the true labels over the pool positions that were not
 * labelled (y_vis < 0); evaluation only. */
double prune_pseudo_acc(const int32_t *y_true, const int32_t *y_vis, const prune_result_t *r);

/* Evaluation with the TRUE labels of d: the target model (target->model, ->epochs, ...;
 * runs and seed are set here) trained on the coreset (seeds seed .. seed+runs-1), on a random
 * subset of the pool of the same size (run i: a subset drawn with a seed derived from seed+i,
 * model seed seed+i) and on the whole pool, each only when its PRUNE_EVAL_* bit is in `sets`
 * (the others come back NaN). Random subsets depend only on (pool, size, seed), so runs that
 * leave PRUNE_EVAL_RANDOM out can be compared with another run's random figures. Accuracies are test accuracies at
 * the best validation epoch (last epoch without a valid split), means and population stds. */
enum { PRUNE_EVAL_CORESET = 1, PRUNE_EVAL_RANDOM = 2, PRUNE_EVAL_FULL = 4 };
/* PRUNE_EVAL_SAME_STEPS (--eval-budget steps): a subset trains for as many optimiser steps as the
 * full pool does in target->epochs epochs, epochs x steps_per_epoch(npool) /
 * steps_per_epoch(nsel) rounded up (steps per epoch: ceil(n / batch_size), 1 for full batch);
 * without it (--eval-budget epochs, the default) every set trains target->epochs epochs. */
enum { PRUNE_EVAL_SAME_STEPS = 8 };
typedef struct prune_eval {
    double coreset_acc, coreset_std, random_acc, random_std, full_acc, full_std;
    int runs;
    int subset_epochs, full_epochs;   /* the epochs each trained */
    int64_t subset_steps, full_steps;   /* and the optimiser steps that makes */
} prune_eval_t;
/* Optimiser steps per epoch of the target on n training examples: ceil(n / batch_size), 1 (full
 * batch), or the METIS batches ceil(parts / batch_parts) of cluster, gas and incagg (a batch
 * without a training node takes no step, so this is an upper bound for a small subset). */
int64_t prune_steps_per_epoch(const train_config_t *target, int64_t n);
int prune_eval_run(const dataset_t *d, const train_config_t *target, const int64_t *pool, int64_t npool,
                   const int64_t *sel, int64_t nsel, int runs, uint64_t seed, unsigned sets, prune_eval_t *e);
#endif
