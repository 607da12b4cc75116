/* Command-line parsing shared by every `inca` command and benchmark (below cli/ and bench/):
 * `--key value`, `--key=value`, bare `--flag`s and positionals. Each command lists the flags it
 * knows; anything else is a usage error naming the flag (exit 2). Tested in test_core.c. */
#ifndef INCA_ARGS_H
#define INCA_ARGS_H
#include <stdint.h>

typedef struct args args_t;

/* known: NULL-terminated list of flag specs, "--name" for flags taking a value and
 * "--name!" for boolean flags. argv[0] is the command name. */
int args_parse(int argc, char **argv, const char *const *known, args_t **out);
/* --config FILE, when the command knows "--config" (args_parse applies it): the "config" object
 * of FILE's last JSON line that has one (a --json result of inca) gives the flags the command
 * line does not: key k is flag --k (true/false for boolean flags; null: not given), key
 * "store" the positional when none is given. A key that is not a flag of the command is
 * INCA_EINVAL naming it. Exposed for tests. */
int args_apply_config(args_t *a, const char *const *known, const char *cmd, const char *path);
/* Name the command whose --help the unknown-flag error points to (e.g. "bench" for its
 * benchmarks, whose argv[0] is the benchmark name); NULL restores argv[0]. */
void args_set_help_command(const char *cmd);
void args_free(args_t **a);
/* List mode (`inca CMD --list-flags`, for the test that every flag is in --help): the next
 * args_parse keeps its known list (args_listed: NULL until then) and fails, parsing nothing. */
void args_set_list_mode(int on);
const char *const *args_listed(void);
int args_npos(const args_t *a);
const char *args_pos(const args_t *a, int i);
int args_has(const args_t *a, const char *name);        /* flag given (either kind) */
/* Given on the command line itself, not by --config (which records every flag, defaults
 * included): what a check of the user's own choices looks at. Not recorded for the config. */
int args_on_command_line(const args_t *a, const char *name);
const char *args_str(const args_t *a, const char *name, const char *def);
/* The value given (command line or --config), NULL when none, without recording the flag as
 * resolved: a look before the getter that resolves it (a flag of two forms, --knn K|exact). */
const char *args_peek(const args_t *a, const char *name);
/* Record value as what name resolved to (the config's entry) and return it: a flag whose value
 * a command derives from another's (--knn exact sets --knn-search). */
const char *args_resolve(const args_t *a, const char *name, const char *value);
/* Numeric getters: INCA_EINVAL with "--name: expected an integer, got 'x'" on bad input. */
int args_int(const args_t *a, const char *name, int64_t def, int64_t *out);
int args_double(const args_t *a, const char *name, double def, double *out);
/* A word flag: its value (def when not given; a NULL result leaves *out as it is) must be one of
 * words[0..n), *out = its index; INCA_EINVAL "NAME: expected EXPECT, got 'x'" otherwise (expect:
 * the accepted words as the message lists them). The name tables live with their enums. */
int args_word(const args_t *a, const char *name, const char *def, const char *const *words, int n, const char *expect,
              int *out);
/* s as a size in bytes: a positive number with an optional K, M, G or T suffix (powers of 1024)
 * and an optional B; INCA_EINVAL "NAME: expected a size such as 1G, 512M or 2000000000, got 'x'". */
int args_size_parse(const char *name, const char *s, int64_t *bytes);
/* "config": every flag the command asked for (args_str/int/double, and args_has of a boolean
 * flag), as it resolved, its default included, keyed by the flag's name without "--" (null: not
 * given and no default), and "store": the first positional. Left out: --config, --json, --quiet
 * and the command's outputs (NULL-terminated, may be NULL: e.g. prune's --out, --indices,
 * --overwrite), so that a rerun from the result neither overwrites nor trips over the first
 * run's files. What --config FILE reads back, so a result reruns exactly. INCA_ENOMEM when the
 * record of a resolved flag could not be kept. */
struct json;
int args_config_json(const args_t *a, struct json *j, const char *const *outputs);
#endif
