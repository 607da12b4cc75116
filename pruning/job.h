/* A whole pruning run on a store, the one sequence that `inca prune` (cli/cmd_prune.c) and
 * `inca bench pruning` (bench/bench_pruning.c) share:
 *   --device cuda: a context made and freed, refused (INCA_ERR) before anything else runs
 *   -> load the store and apply the split -> [loaded hook: the caller's defaults by data kind]
 *   -> the labelled subset (read or picked) and the visible labels (labeled.h)
 *   -> prune_run on them (pipeline.h), or the stored dynamics loaded, scored and selected
 *   -> the dynamics saved in the store (dyn_io.h)
 *   -> per budget of cfg.keeps: its selection (score_select.h), indices and pruned store
 *      (pruned_store.h), the target's evaluation (eval.h) -> [budget hook: the caller prints].
 * The job prints nothing and never exits: its stage lines go to cfg.proxy.log (train_log), its
 * figures to the hooks. Ownership: the job owns what prune_job_run loads and computes (d, lab,
 * y_vis, r); prune_job_free releases it, on success or failure. Tested through both commands in
 * test_pruning_e2e.c (outputs, budgets, --reuse-dynamics, refusals) and test_e2e_json.c. */
#ifndef INCA_PRUNE_JOB_H
#define INCA_PRUNE_JOB_H
#include <stdint.h>
#include "loaders/dataset.h"
#include "nn/train.h"
#include "pruning/eval.h"
#include "pruning/prune_config.h"

/* What one budget's line reports: the first line carries the whole run's stages, later ones
 * their own selection, outputs and evaluation (0 for the stages they did not run). */
typedef struct prune_budget_line {
    int budget;                   /* its index in cfg.keeps */
    unsigned eval_sets;           /* the PRUNE_EVAL_* sets evaluated at it (the full pool at the
                                     first budget only; job->ev repeats its figures later) */
    double sec[PRUNE_ST_COUNT];
    double total;                 /* the first line: since opts.t_start; later ones: their own */
} prune_budget_line_t;

typedef struct prune_job prune_job_t;
typedef struct prune_job_opts {
    const char *path;             /* the store (the dynamics are saved in it) */
    const char *split;            /* dataset_split_apply's spec; NULL: the stored split */
    /* the labelled subset: the ids in labeled_file (.npy or text), or picked from the pool with
     * the TRUE labels: `labeled` of each class, or labeled_per_class per class when > 0 */
    const char *labeled_file;
    double labeled;
    int64_t labeled_per_class;
    int reuse_dynamics;           /* score the dynamics stored under dyn_tag instead of training */
    int save_dynamics;            /* store the dynamics under dyn_tag (not with reuse_dynamics) */
    const char *dyn_tag;
    const char *out;              /* pruned store per budget (pruned_budget_path); NULL: none */
    int overwrite;                /* replace an existing pruned store */
    const char *indices;          /* selected ids per budget; NULL: none */
    int indices_text;             /* 1: text beside the .npy (pruned_write), 0: the .npy alone */
    int eval;                     /* evaluate the target at each budget */
    unsigned eval_sets;           /* PRUNE_EVAL_* bits, PRUNE_EVAL_SAME_STEPS included */
    int eval_runs;
    double t_start;               /* inca_now() when the command started (0: when the job does) */
    /* After loading, before anything reads the settings: the caller may change job->cfg,
     * job->target and the labelled-subset and dynamics fields of job->o (defaults by data kind,
     * prune_kind_defaults). NULL: none. Non-zero stops the job with that status. */
    int (*loaded)(void *ctx, prune_job_t *job);
    /* After each budget's selection, outputs and evaluation (job->cfg.sel.keep is its fraction,
     * job->r.sel its coreset, job->ev its evaluation). NULL: none. Non-zero stops the job. */
    int (*budget)(void *ctx, const prune_job_t *job, const prune_budget_line_t *line);
    void *ctx;
} prune_job_opts_t;

struct prune_job {
    prune_job_opts_t o;
    prune_config_t cfg;           /* as run: sel.keep is the current budget's */
    train_config_t target;        /* the evaluation's model (model "": gcn on a graph, else mlp) */
    /* filled by prune_job_run, owned by the job */
    dataset_t d;                  /* the store with its TRUE labels, the split applied */
    const int64_t *pool;          /* d's train split */
    int64_t npool;
    int is_graph;                 /* the store has a graph (its defaults by kind are a graph's) */
    int64_t *lab, nlab;           /* the labelled ids */
    int32_t *y_vis;               /* d->n visible labels: -1 but at lab */
    prune_result_t r;
    double pl_acc;                /* pseudo-label accuracy on the unlabelled pool (prune_pseudo_acc) */
    prune_eval_t ev;              /* the current budget's evaluation */
    double sec[PRUNE_ST_COUNT];   /* the stages so far */
};

/* Zeroes the job: config and target defaults, dyn_tag "last", one evaluation run, indices with
 * text; the caller sets job->o, job->cfg and job->target, then runs it. */
void prune_job_init(prune_job_t *job);
/* The whole sequence above; the job's error (rc) names its cause (inca_errmsg). Free the job
 * with prune_job_free either way. */
int prune_job_run(prune_job_t *job);
void prune_job_free(prune_job_t *job);   /* what prune_job_run took; NULL-safe */
#endif
