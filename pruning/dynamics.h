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
 * Two layouts. Full (dyn_init): epoch-major matrices, entry [t * n + i], 13 bytes per example
 * per epoch (what --reuse-dynamics has always stored). Compact (dyn_init_compact): running sums
 * per example, 41 bytes whatever the epochs: Σ margin, Σ EL2N norm over the first el2n_epochs,
 * Σ p[y], Σ p[y]², the forgetting count, the correct count and two bits (last correct, ever
 * correct). AUM, forgetting, EL2N, confidence and correctness come out bit for bit as from the
 * matrices (the same double sums in the same epoch order); variability is sqrt(Σp²/E − μ²)
 * instead of the two-pass sum (equal within 1e-6). Tested in test_pruning_core.c on hand-made
 * probability trajectories, and compact against full. */
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
    /* compact layout (dyn_init_compact; the matrices above are NULL) */
    int compact;
    int32_t el2n_epochs;   /* EL2N's window, fixed at init */
    double *s_margin, *s_el2n, *s_py, *s_py2;
    int32_t *n_forget, *n_correct;
    uint8_t *state;        /* bit 0: correct at the last recorded epoch; bit 1: ever correct */
    int32_t *seen;         /* epochs recorded per example (both layouts): each must reach `epochs` */
} prune_dyn_t;

/* Allocate room for `cap` epochs of n examples (epochs = 0). Free with dyn_free. */
int dyn_init(prune_dyn_t *d, int64_t n, int32_t cap);
void dyn_free(prune_dyn_t *d);   /* NULL-safe; zeroes *d */

/* The compact layout for n examples and at most cap epochs; EL2N is then fixed to the first
 * el2n_epochs (>= 1) epochs. */
int dyn_init_compact(prune_dyn_t *d, int64_t n, int32_t cap, int32_t el2n_epochs);
/* Bytes of the dynamics themselves (the matrices, or the running sums), without the 4-byte
 * per-example epoch count both layouts keep to check coverage. */
int64_t dyn_bytes(const prune_dyn_t *d);
/* What the full layout takes for n examples and the given epochs (13 bytes each). */
int64_t dyn_full_bytes(int64_t n, int32_t epochs);
/* Record example i at epoch t (0-based; t < cap) from its probabilities p (c of them) and label
 * y, as one step saw it. Each example must be recorded once per epoch, in epoch order (t = its
 * previous epoch + 1): INCA_EINVAL otherwise (a method that skipped or repeated a node).
 * epochs becomes the largest t + 1 seen. */
int dyn_record_one(prune_dyn_t *d, int64_t i, int32_t t, const float *p, int32_t c, int32_t y);
/* Every example recorded in each of the d->epochs epochs: INCA_ERR naming the first that was not. */
int dyn_check_complete(const prune_dyn_t *d);

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

/* score[i] for all n examples; el2n_epochs only matters for EL2N (CCS uses 10; compact: must be
 * the recorder's). INCA_EINVAL when nothing was recorded. */
int dyn_score(const prune_dyn_t *d, score_kind_t kind, int32_t el2n_epochs, float *score);
/* Cartography maps; any output may be NULL. */
int dyn_cartography(const prune_dyn_t *d, float *confidence, float *variability, float *correctness);
#endif
