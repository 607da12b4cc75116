/* Flag parsing for the `inca` commands and benchmarks; see args.h. Tested in test_core.c. */
#include "core/args.h"
#include <ctype.h>
#include "core/alloc.h"
#include "core/json.h"
#include "core/status.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct { const char *name; const char *val; } kv_t;

/* Every flag a command asked for, as it resolved (given or its default), in the order asked:
 * what args_config_json writes. Behind a pointer, so the const getters can add to it. */
enum { RES_STR, RES_INT, RES_NUM, RES_BOOL };
typedef struct { char *name; int kind; char *s; int64_t i; double d; } resolved_t;   /* name, s owned */
typedef struct { resolved_t *v; int n, cap, oom; } res_log_t;

struct args {
    int npos, nkv, cap;   /* cap: entries of kv and owned */
    int ncmd;             /* kv[0..ncmd): from the command line; the rest from --config */
    const char **pos;
    kv_t *kv;
    char **owned;   /* names split from "--k=v", and names and values from --config */
    int nowned;
    const char *const *known;   /* the command's list (static) */
    res_log_t *res;
};

/* Record name's resolved value the first time it is asked for; a failed allocation is
 * remembered and reported by args_config_json. */
static char *dup_or_null(const char *s) {
    if (!s) return NULL;
    char *c = inca_malloc(strlen(s) + 1);
    if (c) strcpy(c, s);
    return c;
}

static resolved_t *res_add(const args_t *a, const char *name, int kind) {
    res_log_t *l = a->res;
    if (!l) return NULL;
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i].name, name) == 0) return NULL;
    if (l->n == l->cap) {
        const int cap = l->cap * 2 + 16;
        resolved_t *v = inca_realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) { l->oom = 1; return NULL; }
        l->v = v;
        l->cap = cap;
    }
    resolved_t *r = &l->v[l->n];
    memset(r, 0, sizeof *r);
    if (!(r->name = dup_or_null(name))) { l->oom = 1; return NULL; }
    r->kind = kind;
    l->n++;
    return r;
}

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
    if ((*a)->res) {
        for (int i = 0; i < (*a)->res->n; i++) {
            inca_free((*a)->res->v[i].name);
            inca_free((*a)->res->v[i].s);
        }
        inca_free((*a)->res->v);
    }
    inca_free((*a)->res);
    INCA_FREE(*a);
}

/* A copy kept with a (freed by args_free). */
static char *keep(args_t *a, const char *s) {
    if (a->nowned == a->cap) {
        const int cap = a->cap * 2 + 8;
        kv_t *kv = inca_realloc(a->kv, sizeof *kv * (size_t)cap);
        if (!kv) return NULL;
        a->kv = kv;
        char **ow = inca_realloc(a->owned, sizeof *ow * (size_t)cap);
        if (!ow) return NULL;
        a->owned = ow;
        a->cap = cap;
    }
    const size_t n = strlen(s);
    char *c = inca_malloc(n + 1);
    if (!c) return NULL;
    memcpy(c, s, n + 1);
    a->owned[a->nowned++] = c;
    return c;
}

/* The "config" object of the last line of the file at path that is a JSON object with one
 * (*root owned: cJSON_Delete). */
static int config_read(const char *path, cJSON **root, const cJSON **cfg) {
    *root = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return inca_fail(errno == ENOENT ? INCA_ENOTFOUND : INCA_EIO, "--config %s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && !S_ISREG(sb.st_mode)) {   /* a folder opens, then reads fail */
        fclose(f);
        return inca_fail(INCA_EINVAL, "--config %s: not a file (expected the --json output of an inca command)", path);
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = INCA_OK;
    for (;;) {
        if (len + 65536 + 1 > cap) {
            if (cap > ((size_t)256 << 20)) { rc = inca_fail(INCA_EINVAL, "--config %s: larger than 256 MiB", path); break; }
            cap = cap * 2 + 65536 + 1;
            char *nb = inca_realloc(buf, cap);
            if (!nb) { rc = INCA_ENOMEM; break; }
            buf = nb;
        }
        const size_t k = fread(buf + len, 1, 65536, f);
        len += k;
        if (k < 65536) break;
    }
    if (rc == INCA_OK && ferror(f)) rc = inca_fail(INCA_EIO, "--config %s: read failed", path);
    fclose(f);
    if (rc) { inca_free(buf); return rc; }
    buf[len] = '\0';
    for (size_t end = len; end > 0 && !*root;) {   /* lines from the last */
        size_t b = end;
        while (b > 0 && buf[b - 1] != '\n') b--;
        buf[end] = '\0';
        const char *line = buf + b;
        while (*line == ' ' || *line == '\t' || *line == '\r') line++;
        if (*line == '{') {
            cJSON *j = cJSON_Parse(line);
            const cJSON *c = j ? cJSON_GetObjectItemCaseSensitive(j, "config") : NULL;
            if (c && cJSON_IsObject(c)) { *root = j; *cfg = c; }
            else cJSON_Delete(j);
        }
        end = b > 0 ? b - 1 : 0;
    }
    inca_free(buf);
    if (!*root)
        return inca_fail(INCA_EINVAL, "--config %s: no JSON line with a \"config\" object (expected the --json output of an "
                         "inca command)", path);
    return INCA_OK;
}

int args_apply_config(args_t *a, const char *const *known, const char *cmd, const char *path) {
    cJSON *root = NULL;
    const cJSON *cfg = NULL, *it;
    int rc = config_read(path, &root, &cfg);
    if (rc) return rc;
    cJSON_ArrayForEach(it, cfg) {
        const char *k = it->string;
        if (!k || cJSON_IsNull(it)) continue;
        if (strcmp(k, "store") == 0) {   /* the positional, unless the command line gives one */
            if (a->npos == 0 && cJSON_IsString(it)) {
                const char *v = keep(a, it->valuestring);
                if (!v) { rc = INCA_ENOMEM; break; }
                a->pos[a->npos++] = v;
            }
            continue;
        }
        char name[128];
        snprintf(name, sizeof name, "--%s", k);
        int is_bool = 0;
        if (!spec_find(known, name, strlen(name), &is_bool) || strcmp(name, "--config") == 0) {
            rc = inca_fail(INCA_EINVAL, "--config %s: key '%s' is not a flag of inca %s (a result of another command?)", path,
                           k, cmd);
            break;
        }
        int given = 0;
        for (int j = 0; j < a->nkv && !given; j++) given = strcmp(a->kv[j].name, name) == 0;
        if (given) continue;   /* the command line overrides the file */
        char val[64];
        const char *v = NULL;
        if (is_bool) {
            if (!cJSON_IsBool(it)) { rc = inca_fail(INCA_EINVAL, "--config %s: '%s' expected true or false", path, k); break; }
            if (cJSON_IsFalse(it)) continue;
            v = "1";
        } else if (cJSON_IsString(it)) v = it->valuestring;
        else if (cJSON_IsNumber(it)) {
            const double d = it->valuedouble;
            if (d > -9e15 && d < 9e15 && d == (double)(long long)d) snprintf(val, sizeof val, "%lld", (long long)d);
            else snprintf(val, sizeof val, "%.17g", d);
            v = val;
        } else { rc = inca_fail(INCA_EINVAL, "--config %s: '%s' expected a string or a number", path, k); break; }
        char *nk = keep(a, name), *nv = nk ? keep(a, v) : NULL;
        if (!nv) { rc = INCA_ENOMEM; break; }
        if (a->nkv == a->cap) { rc = inca_fail(INCA_ERR, "--config: too many flags"); break; }
        a->kv[a->nkv].name = nk;
        a->kv[a->nkv++].val = nv;
    }
    cJSON_Delete(root);
    return rc;
}

/* The command whose --help the unknown-flag message points to (NULL: argv[0] itself). */
static const char *help_cmd;
void args_set_help_command(const char *cmd) { help_cmd = cmd; }

static int list_mode;
static const char *const *listed;
void args_set_list_mode(int on) { list_mode = on; listed = NULL; }
const char *const *args_listed(void) { return listed; }

/* The flag argv[*i] into a, with its value (after '=', or the next argument: *i moves past it);
 * cmd: argv[0], for the unknown-flag message. On an error a still owns what it took. */
static int flag_take(args_t *a, int argc, char **argv, int *i, const char *const *known, const char *cmd) {
    const char *s = argv[*i];
    const char *eq = strchr(s, '=');
    size_t len = eq ? (size_t)(eq - s) : strlen(s);
    int is_bool = 0;
    if (!spec_find(known, s, len, &is_bool)) {
        /* no "CMD: " here: main.c prefixes every message with "inca CMD: " already; a
         * benchmark (argv[0] its name, help_cmd "bench") names itself after the flag */
        char of[160] = "";
        if (help_cmd && strcmp(help_cmd, cmd) != 0) snprintf(of, sizeof of, " for %s %s:", help_cmd, cmd);
        return inca_fail(INCA_EINVAL, "unknown flag%s '%.*s' (see 'inca %s --help')", of, (int)len, s,
                         help_cmd ? help_cmd : cmd);
    }
    char *name = inca_malloc(len + 1);
    if (!name) return INCA_ENOMEM;
    memcpy(name, s, len);
    name[len] = '\0';
    a->owned[a->nowned++] = name;
    const char *val = NULL;
    if (is_bool) {
        if (eq) return inca_fail(INCA_EINVAL, "flag %s takes no value, got '%s'", name, eq + 1);
        val = "1";
    } else if (eq) {
        val = eq + 1;
        if (!*val)   /* "--out=": no value, not the current folder */
            return inca_fail(INCA_EINVAL, "flag %s expects a value, got an empty one", name);
    } else {
        if (*i + 1 >= argc) return inca_fail(INCA_EINVAL, "flag %s expects a value", name);
        val = argv[++*i];
    }
    /* a repeated flag: the last one wins */
    int j;
    for (j = 0; j < a->nkv; j++)
        if (strcmp(a->kv[j].name, name) == 0) break;
    a->kv[j].name = name;
    a->kv[j].val = val;
    if (j == a->nkv) a->nkv++;
    return INCA_OK;
}

int args_parse(int argc, char **argv, const char *const *known, args_t **out) {
    *out = NULL;
    if (list_mode) {   /* `inca CMD --list-flags`: keep the list for the caller to print */
        listed = known;
        return inca_fail(INCA_EINVAL, "flags listed");
    }
    args_t *a = inca_calloc(1, sizeof *a);
    if (!a) return INCA_ENOMEM;
    a->cap = argc + 1;
    a->pos = inca_calloc((size_t)argc + 2, sizeof *a->pos);
    a->kv = inca_calloc((size_t)a->cap, sizeof *a->kv);
    a->owned = inca_calloc((size_t)a->cap, sizeof *a->owned);
    a->res = inca_calloc(1, sizeof *a->res);
    a->known = known;
    if (!a->pos || !a->kv || !a->owned || !a->res) { args_free(&a); return INCA_ENOMEM; }
    const char *cmd = argc > 0 ? argv[0] : "inca";
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strncmp(s, "--", 2) != 0 || s[2] == '\0') {
            a->pos[a->npos++] = s;
            continue;
        }
        const int rc = flag_take(a, argc, argv, &i, known, cmd);
        if (rc) {   /* args_free after the message: the flag's name it holds is owned by a */
            args_free(&a);
            return rc;
        }
    }
    a->ncmd = a->nkv;
    const char *cfg = NULL;
    for (int j = 0; j < a->nkv; j++)
        if (strcmp(a->kv[j].name, "--config") == 0) cfg = a->kv[j].val;
    if (cfg) {
        int rc = args_apply_config(a, known, cmd, cfg);
        if (rc) { args_free(&a); return rc; }
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

int args_on_command_line(const args_t *a, const char *name) {
    for (int i = 0; i < a->ncmd; i++)
        if (strcmp(a->kv[i].name, name) == 0) return 1;
    return 0;
}

int args_has(const args_t *a, const char *name) {
    const int has = find(a, name) != NULL;
    int is_bool = 0;   /* a boolean flag resolves here; a value flag asked for presence does not */
    if (spec_find(a->known, name, strlen(name), &is_bool) && is_bool) {
        resolved_t *r = res_add(a, name, RES_BOOL);
        if (r) r->i = has;
    }
    return has;
}

const char *args_peek(const args_t *a, const char *name) {
    const kv_t *kv = find(a, name);
    return kv ? kv->val : NULL;
}

const char *args_resolve(const args_t *a, const char *name, const char *value) {
    resolved_t *r = res_add(a, name, RES_STR);
    if (r && value && !(r->s = dup_or_null(value))) a->res->oom = 1;
    return value;
}

const char *args_str(const args_t *a, const char *name, const char *def) {
    const kv_t *kv = find(a, name);
    resolved_t *r = res_add(a, name, RES_STR);
    const char *v = kv ? kv->val : def;
    if (r && v && !(r->s = dup_or_null(v))) a->res->oom = 1;
    return v;
}

int args_word(const args_t *a, const char *name, const char *def, const char *const *words, int n, const char *expect,
              int *out) {
    const char *s = args_str(a, name, def);
    if (!s) return INCA_OK;
    for (int i = 0; i < n; i++)
        if (strcmp(s, words[i]) == 0) { *out = i; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "%s: expected %s, got '%s'", name, expect, s);
}

int args_size_parse(const char *name, const char *s, int64_t *bytes) {
    char *end = NULL;
    errno = 0;
    const double v = s ? strtod(s, &end) : -1;
    double mul = 1;
    if (end && *end) {
        const char u = (char)toupper((unsigned char)*end);
        mul = u == 'K' ? 1024.0 : u == 'M' ? 1048576.0 : u == 'G' ? 1073741824.0 : u == 'T' ? 1099511627776.0 : 0;
        const char *rest = end + 1;
        if (*rest == 'B' || *rest == 'b') rest++;
        if (*rest) mul = 0;
    }
    if (!s || end == s || errno || !(v > 0) || mul == 0 || v * mul > 9.0e18 || v * mul < 1)   /* < 1 byte: 0, no budget */
        return inca_fail(INCA_EINVAL, "%s: expected a size such as 1G, 512M or 2000000000, got '%s'", name, s ? s : "");
    *bytes = (int64_t)(v * mul);
    return INCA_OK;
}

int args_int(const args_t *a, const char *name, int64_t def, int64_t *out) {
    const kv_t *kv = find(a, name);
    if (!kv) *out = def;
    else {
        char *end;
        errno = 0;
        long long v = strtoll(kv->val, &end, 10);
        if (errno || end == kv->val || *end != '\0')
            return inca_fail(INCA_EINVAL, "%s: expected an integer, got '%s'", name, kv->val);
        *out = v;
    }
    resolved_t *r = res_add(a, name, RES_INT);
    if (r) r->i = *out;
    return INCA_OK;
}

int args_double(const args_t *a, const char *name, double def, double *out) {
    const kv_t *kv = find(a, name);
    if (!kv) *out = def;
    else {
        char *end;
        errno = 0;
        double v = strtod(kv->val, &end);
        if (errno || end == kv->val || *end != '\0')
            return inca_fail(INCA_EINVAL, "%s: expected a number, got '%s'", name, kv->val);
        if (!isfinite(v))   /* inf and nan are no settings */
            return inca_fail(INCA_EINVAL, "%s: expected a finite number, got '%s'", name, kv->val);
        *out = v;
    }
    resolved_t *r = res_add(a, name, RES_NUM);
    if (r) r->d = *out;
    return INCA_OK;
}

int args_config_json(const args_t *a, json_t *j, const char *const *outputs) {
    if (a->res->oom) return INCA_ENOMEM;
    json_obj_begin(j, "config");
    if (a->npos > 0) {   /* by its absolute path: a --config rerun may start in another folder */
        char *abs = realpath(a->pos[0], NULL);
        json_str(j, "store", abs ? abs : a->pos[0]);
        free(abs);
    }
    for (int i = 0; i < a->res->n; i++) {
        const resolved_t *r = &a->res->v[i];
        /* how the result is written, not what it is */
        if (!strcmp(r->name, "--config") || !strcmp(r->name, "--json") || !strcmp(r->name, "--quiet")) continue;
        int output = 0;   /* a rerun from the file must not overwrite (or trip over) the first run's */
        for (int k = 0; outputs && outputs[k] && !output; k++) output = !strcmp(r->name, outputs[k]);
        if (output) continue;
        const char *k = r->name + 2;
        if (r->kind == RES_STR) json_str(j, k, r->s);   /* NULL: not given, and no default */
        else if (r->kind == RES_INT) json_int_exact(j, k, r->i);
        else if (r->kind == RES_NUM) json_num(j, k, r->d);
        else json_bool(j, k, (int)r->i);
    }
    json_obj_end(j);
    return INCA_OK;
}
