/* The proxy's dynamics stored in the source store, so that scoring and selection can rerun
 * without training (--reuse-dynamics): the pool, pseudo-labels, confidences and the recorder's
 * arrays (full matrices or compact sums, dynamics.h) under arrays "dyn/<tag>/...", and a header
 * record "dyn:<tag>" with the pseudo-labeller that ran, its check, and a key text describing the
 * configuration that produced them (prune_dyn_key), checked when they are loaded back.
 * Tested in test_pruning_e2e.c (save, reuse with another score, key mismatch, compact layout). */
#ifndef INCA_PRUNE_DYN_IO_H
#define INCA_PRUNE_DYN_IO_H
#include <stddef.h>
#include <stdint.h>
#include "pruning/prune_config.h"

/* Save pool, pseudo-labels, confidences and dynamics in the store at `path` under record
 * "dyn:<tag>" and arrays "dyn/<tag>/..." (one transaction, replacing an older set), with `key`
 * (a text describing the configuration that produced them) for prune_dyn_load to check. */
int prune_dyn_save(const char *path, const char *tag, const char *key, const prune_result_t *r, int32_t c);
/* Load them back into r (pool, pseudo, conf, dyn). INCA_ENOTFOUND when absent; INCA_EINVAL
 * when the stored key differs from `key` (unless key is NULL), naming both. */
int prune_dyn_load(const char *path, const char *tag, const char *key, prune_result_t *r, int32_t *c);
/* The key of dynamics made by cfg (after the defaults by data kind) from the labelled subset
 * whose sorted ids hash to labeled_ids (read from a file, or picked by the `labeled` fraction or
 * `per_class`) and the split `split` (NULL: the stored one): every setting that changes the
 * pseudo-labels or the proxy, none that only scores or selects. */
void prune_dyn_key(char *buf, size_t len, const prune_config_t *cfg, uint64_t labeled_ids, double labeled,
                   int64_t per_class, const char *split);
#endif
