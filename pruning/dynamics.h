/* Training dynamics of a proxy model and the difficulty scores computed from them.
 * Per example i and recorded epoch t the recorder keeps p_t[y_i], max_{k≠y_i} p_t[k],
 * Σ_k p_t[k]² and whether argmax p_t (ties to the lowest class) equals y_i: enough for
 *   AUM         Σ_t (p_t[y] − max_{k≠y} p_t[k])           (as CCS/ELFS compute it; lower = harder)
 *   forgetting  #{t ≥ 1 : correct_{t−1} ∧ ¬correct_t}     (Toneva et al.; higher = harder).
 *               Never-learned examples (never correct in any recorded epoch) get E, the number
 *               of recorded epochs: Toneva's "maximum" convention, above every real count
 *               (at most ⌊E/2⌋), not CCS's 0, which would rank them as easy.
 *   EL2N        mean over the first min(el2n_epochs, E) epochs of ‖p_t − onehot(y)‖₂, with
 *               ‖p − e_y‖² = Σ_k p_k² − 2 p_y + 1 (higher = harder)
 *   cartography confidence μ = mean_t p_t[y] (lower = harder), variability σ = population std
 *               of p_t[y], correctness = fraction of epochs correct (Swayamdipta et al.).
 * Storage layout: epoch-major, entry [t * n + i]. Tested in test_pruning_core.c on
 * hand-made probability trajectories. */
#ifndef INCA_DYNAMICS_H
#define INCA_DYNAMICS_H
#include <stdint.h>

typedef struct prune_dyn {
    int64_t n;         /* examples */
    int32_t epochs;    /* recorded so far */
    int32_t cap;       /* epochs allocated */
    float *py;         /* p_t[y_i] */
    float *pmo;        /* max_{k≠y_i} p_t[k] */
    float *sq;         /* Σ_k p_t[k]² */
    uint8_t *correct;  /* argmax == y_i */
} prune_dyn_t;

/* Allocate room for `cap` epochs of n examples (epochs = 0). Free with dyn_free. */
int dyn_init(prune_dyn_t *d, int64_t n, int32_t cap);
void dyn_free(prune_dyn_t *d);   /* NULL-safe; zeroes *d */

/* Append one epoch. probs: softmax probabilities, rows of c floats with leading dimension ldp;
 * example i uses row rows[i] (rows NULL: row i). y[i] in [0, c) is example i's (pseudo-)label.
 * INCA_EINVAL when the recorder is full or a label is out of range. */
int dyn_record(prune_dyn_t *d, const float *probs, int64_t ldp, int32_t c, const int32_t *y, const int64_t *rows);

typedef enum { SCORE_AUM = 0, SCORE_FORGETTING, SCORE_EL2N, SCORE_CARTOGRAPHY } score_kind_t;
/* "aum" | "forgetting" | "el2n" | "cartography" -> kind; INCA_EINVAL otherwise. */
int score_parse(const char *name, score_kind_t *out);
const char *score_name(score_kind_t k);
/* 1 when a higher score means a harder example (forgetting, EL2N), 0 otherwise (AUM,
 * cartography confidence). */
int score_higher_is_harder(score_kind_t k);

/* score[i] for all n examples; el2n_epochs only matters for EL2N (CCS uses 10). INCA_EINVAL
 * when nothing was recorded. */
int dyn_score(const prune_dyn_t *d, score_kind_t kind, int32_t el2n_epochs, float *score);
/* Cartography maps; any output may be NULL. */
int dyn_cartography(const prune_dyn_t *d, float *confidence, float *variability, float *correctness);
#endif
