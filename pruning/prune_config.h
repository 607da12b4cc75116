/* The pruning pipeline's settings and result, shared by its stages (pseudo.h, ssl.h, proxy.h,
 * score_select.h, dyn_io.h, pruned_store.h, eval.h) and by pipeline.h / job.h that run them: the
 * configuration with its defaults, the result that every stage fills a part of, the names of
 * the stages, pseudo-labellers, kNN views and check candidates. A header of its own so that no
 * stage has to include pipeline.h (the stages never call back into the orchestration).
 * Exercised through every pipeline test in test_pruning_e2e.c; the names through the CLI's
 * --json lines in test_pruning_e2e.c and test_e2e_json.c. */
#ifndef INCA_PRUNE_CONFIG_H
#define INCA_PRUNE_CONFIG_H
#include <stdint.h>
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
    /* proxy: model/epochs/lr/... (method "full"; runs = 1; its hooks are set by the proxy stage, proxy.h) */
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
#endif
