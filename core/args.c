/* Flag parsing for the `inca` commands and benchmarks; see args.h. Tested in test_core.c. */
#include "core/args.h"
#include "core/alloc.h"
#include "core/status.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const char *name; const char *val; } kv_t;
struct args {
    int npos, nkv;
    const char **pos;
    kv_t *kv;
    char **owned;   /* names split from "--k=v" */
    int nowned;
};

static const char *spec_find(const char *const *known, const char *name, size_t len, int *is_bool) {
    for (int i = 0; known && known[i]; i++) {
        size_t kl = strlen(known[i]);
        int b = kl > 0 && known[i][kl - 1] == '!';
        if (b) kl--;
        if (kl == len && strncmp(known[i], name, len) == 0) {
            *is_bool = b;
            return known[i];
        }
    }
    return NULL;
}

void args_free(args_t **a) {
    if (!a || !*a) return;
    for (int i = 0; i < (*a)->nowned; i++) inca_free((*a)->owned[i]);
    inca_free((*a)->owned);
    inca_free((*a)->pos);
    inca_free((*a)->kv);
    INCA_FREE(*a);
}

/* The command whose --help the unknown-flag message points to (NULL: argv[0] itself). */
static const char *help_cmd;
void args_set_help_command(const char *cmd) { help_cmd = cmd; }

int args_parse(int argc, char **argv, const char *const *known, args_t **out) {
    *out = NULL;
    args_t *a = inca_calloc(1, sizeof *a);
    if (!a) return INCA_ENOMEM;
    a->pos = inca_calloc((size_t)argc + 1, sizeof *a->pos);
    a->kv = inca_calloc((size_t)argc + 1, sizeof *a->kv);
    a->owned = inca_calloc((size_t)argc + 1, sizeof *a->owned);
    if (!a->pos || !a->kv || !a->owned) { args_free(&a); return INCA_ENOMEM; }
    const char *cmd = argc > 0 ? argv[0] : "inca";
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strncmp(s, "--", 2) != 0 || s[2] == '\0') {
            a->pos[a->npos++] = s;
            continue;
        }
        const char *eq = strchr(s, '=');
        size_t len = eq ? (size_t)(eq - s) : strlen(s);
        int is_bool = 0;
        if (!spec_find(known, s, len, &is_bool)) {
            args_free(&a);
            return inca_fail(INCA_EINVAL, "%s: unknown flag '%.*s' (see 'inca %s --help')", cmd, (int)len, s,
                             help_cmd ? help_cmd : cmd);
        }
        char *name = inca_malloc(len + 1);
        if (!name) { args_free(&a); return INCA_ENOMEM; }
        memcpy(name, s, len);
        name[len] = '\0';
        a->owned[a->nowned++] = name;
        const char *val = NULL;
        if (is_bool) {
            if (eq) { args_free(&a); return inca_fail(INCA_EINVAL, "%s: flag %s takes no value", cmd, name); }
            val = "1";
        } else if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc) {
                int rc = inca_fail(INCA_EINVAL, "%s: flag %s expects a value", cmd, name);
                args_free(&a);
                return rc;
            }
            val = argv[++i];
        }
        /* a repeated flag: the last one wins */
        int j;
        for (j = 0; j < a->nkv; j++)
            if (strcmp(a->kv[j].name, name) == 0) break;
        a->kv[j].name = name;
        a->kv[j].val = val;
        if (j == a->nkv) a->nkv++;
    }
    *out = a;
    return INCA_OK;
}

int args_npos(const args_t *a) { return a->npos; }
const char *args_pos(const args_t *a, int i) { return i < a->npos ? a->pos[i] : NULL; }

static const kv_t *find(const args_t *a, const char *name) {
    for (int i = 0; i < a->nkv; i++)
        if (strcmp(a->kv[i].name, name) == 0) return &a->kv[i];
    return NULL;
}

int args_has(const args_t *a, const char *name) { return find(a, name) != NULL; }

const char *args_str(const args_t *a, const char *name, const char *def) {
    const kv_t *kv = find(a, name);
    return kv ? kv->val : def;
}

int args_int(const args_t *a, const char *name, int64_t def, int64_t *out) {
    const kv_t *kv = find(a, name);
    if (!kv) { *out = def; return INCA_OK; }
    char *end;
    errno = 0;
    long long v = strtoll(kv->val, &end, 10);
    if (errno || end == kv->val || *end != '\0')
        return inca_fail(INCA_EINVAL, "%s: expected an integer, got '%s'", name, kv->val);
    *out = v;
    return INCA_OK;
}

int args_double(const args_t *a, const char *name, double def, double *out) {
    const kv_t *kv = find(a, name);
    if (!kv) { *out = def; return INCA_OK; }
    char *end;
    errno = 0;
    double v = strtod(kv->val, &end);
    if (errno || end == kv->val || *end != '\0')
        return inca_fail(INCA_EINVAL, "%s: expected a number, got '%s'", name, kv->val);
    *out = v;
    return INCA_OK;
}
