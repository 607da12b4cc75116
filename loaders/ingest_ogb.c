/* OGB raw node-property layout: counts, edges (stored once; reverses added), streamed
 * node features parsed straight into the n*f array, labels (missing -> unlabelled), splits
 * (every split/ folder: the default, and the others as named splits).
 * Tested in tests/test_ingest.c (hand-written folders, gz and plain, missing labels) and in
 * tests/test_e2e_ingest.c (Cora, Facebook, bad-input catalogue). */
#include "loaders/ingest_internal.h"
#include "loaders/dataset.h"
#include "core/alloc.h"
#include "core/status.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A file holding one non-negative count on one line (num-node-list, num-edge-list). */
typedef struct count_ctx { int64_t v; int got; } count_ctx_t;

static int count_line(void *ctx, const char *path, long long ln, char *line) {
    count_ctx_t *c = ctx;
    if (textio_at_end(line)) return INCA_OK;
    if (c->got)
        return inca_fail(INCA_EINVAL, "%s:%lld: expected a single count (one graph), found another line", path, ln);
    const char *p = line;
    if (!textio_parse_i64(&p, &c->v) || !textio_at_end(p) || c->v < 0)
        return inca_fail(INCA_EINVAL, "%s:%lld: expected a non-negative integer count, got '%.40s'", path, ln, line);
    c->got = 1;
    return INCA_OK;
}

static int ogb_read_count(const char *raw, const char *base, int64_t *out) {
    char path[INGEST_PATH_MAX];
    count_ctx_t c = {0, 0};
    int64_t lines;
    int rc = ingest_find_file(path, sizeof path, raw, base, ingest_csv_exts);
    if (!rc) rc = ingest_each_line(path, count_line, &c, &lines);
    if (!rc && !c.got)
        rc = inca_fail(INCA_EINVAL, "%s:%lld: expected a count, found an empty file", path, (long long)lines + 1);
    *out = c.v;
    return rc;
}

/* A count from <count_base> against the file whose lines it counts (when that file exists),
 * before anything is allocated from it: each line takes at least row_bytes ("\n" for an empty
 * label, "0\n" for a feature row, "0,1\n" for an edge); the last may lack its newline. */
static int ogb_check_counts(const char *raw, int64_t count, const char *count_base, const char *base, int64_t row_bytes) {
    char holder[INGEST_PATH_MAX], counts[INGEST_PATH_MAX], where[INGEST_PATH_MAX + 8];
    int rc = ingest_find_file(holder, sizeof holder, raw, base, ingest_csv_exts);
    if (rc == INCA_ENOTFOUND) { inca_err_clear(); return INCA_OK; }
    if (rc) return rc;
    if ((rc = ingest_find_file(counts, sizeof counts, raw, count_base, ingest_csv_exts))) return rc;
    snprintf(where, sizeof where, "%s:1", counts);
    return ingest_check_declared(where, holder, count, "rows", row_bytes, -1);
}

/* Without node-feat and node-label the node count is checked against nothing but the edges (m
 * edges name at most 2m nodes): past those, INGEST_MAX_UNNAMED. */
static int ogb_check_graph_only(const char *raw, int64_t n, int64_t m) {
    char path[INGEST_PATH_MAX];
    static const char *const per_node[] = {"node-feat", "node-label"};
    for (int i = 0; i < 2; i++) {
        int rc = ingest_find_file(path, sizeof path, raw, per_node[i], ingest_csv_exts);
        if (rc != INCA_ENOTFOUND) return rc;   /* present (its rows were checked) or unreadable */
        inca_err_clear();
    }
    if (n <= INGEST_MAX_UNNAMED || (n - INGEST_MAX_UNNAMED + 1) / 2 <= m) return INCA_OK;   /* m is unbounded */
    ingest_find_file(path, sizeof path, raw, "num-node-list", ingest_csv_exts);
    return inca_fail(INCA_EINVAL, "%s:1: declares %lld nodes with neither node-feat nor node-label, and %lld edges "
                     "touch at most %lld: expected at most %lld (add a node-feat or node-label file)", path,
                     (long long)n, (long long)m, (long long)(2 * m), (long long)(2 * m + INGEST_MAX_UNNAMED));
}

typedef struct edge_ctx {
    ingest_edges_t *e;
    int64_t n, m_decl;
    const ingest_opts_t *o;
} edge_ctx_t;

static int edge_line(void *ctx, const char *path, long long ln, char *line) {
    edge_ctx_t *c = ctx;
    if (textio_at_end(line)) return INCA_OK;   /* a blank line is no edge (a trailing one was called one too many) */
    if (c->e->m >= c->m_decl)
        return inca_fail(INCA_EINVAL, "%s:%lld: more edge lines than num-edge-list says (%lld)", path, ln,
                         (long long)c->m_decl);
    const char *p = line;
    int64_t s, d;
    int ok = textio_parse_i64(&p, &s);
    if (ok) {
        p = textio_skip_blank(p);
        ok = *p == ',';
        p++;
    }
    if (!ok || !textio_parse_i64(&p, &d) || !textio_at_end(p))
        return inca_fail(INCA_EINVAL, "%s:%lld: expected 'src,dst' (two integers), got '%.40s'", path, ln, line);
    if (s < 0 || s >= c->n || d < 0 || d >= c->n)
        return inca_fail(INCA_EINVAL, "%s:%lld: node id %lld out of range: expected 0..%lld (num-node-list)", path,
                         ln, (long long)(s < 0 || s >= c->n ? s : d), (long long)c->n - 1);
    int rc = ingest_edges_push(c->e, s, d);
    if ((c->e->m & 0xfffff) == 0) ingest_progress(c->o, "edges", c->e->m, c->m_decl);
    return rc;
}

static int ogb_read_edges(const char *raw, int64_t n, int64_t m_decl, ingest_edges_t *e,
                          const ingest_opts_t *o) {
    char path[INGEST_PATH_MAX];
    edge_ctx_t c = {e, n, m_decl, o};
    int64_t lines;
    int rc = ingest_find_file(path, sizeof path, raw, "edge", ingest_csv_exts);
    if (!rc) rc = ingest_edges_reserve(e, m_decl < (1 << 24) ? (m_decl > 0 ? m_decl : 1) : (1 << 24));
    if (!rc) rc = ingest_each_line(path, edge_line, &c, &lines);
    if (!rc && e->m != m_decl)
        rc = inca_fail(INCA_EINVAL, "%s:%lld: expected %lld edge lines (num-edge-list), found only %lld", path,
                       (long long)lines + 1, (long long)m_decl, (long long)e->m);
    return rc;
}

/* Per-node files (labels, features): line i describes node i. */
typedef struct node_ctx {
    dataset_t *d;
    int64_t i;
    const ingest_opts_t *o;
} node_ctx_t;

static int label_line(void *ctx, const char *path, long long ln, char *line) {
    node_ctx_t *c = ctx;
    /* blank: an unlabelled node among the n rows, nothing after them (a trailing blank line) */
    if (c->i >= c->d->n && textio_at_end(line)) return INCA_OK;
    if (c->i >= c->d->n)
        return inca_fail(INCA_EINVAL, "%s:%lld: more label lines than nodes (%lld)", path, ln, (long long)c->d->n);
    if (!ingest_parse_label(line, &c->d->y[c->i]))
        return inca_fail(INCA_EINVAL, "%s:%lld: expected one class id in 0..%d (or -1, nan, empty for unlabelled), "
                         "got '%.40s'", path, ln, INGEST_MAX_CLASSES - 1, line);
    c->i++;
    return INCA_OK;
}

static int feat_line(void *ctx, const char *path, long long ln, char *line) {
    node_ctx_t *c = ctx;
    dataset_t *d = c->d;
    if (c->i >= d->n && textio_at_end(line)) return INCA_OK;   /* a trailing blank line */
    if (c->i >= d->n)
        return inca_fail(INCA_EINVAL, "%s:%lld: more feature rows than nodes (%lld)", path, ln, (long long)d->n);
    if (c->i == 0) {
        d->f = ingest_count_fields(line, ',');
        if (d->f == 0)
            return inca_fail(INCA_EINVAL, "%s:%lld: expected comma-separated feature values, got an empty line",
                             path, ln);
        /* the file must hold n rows as wide as this one ("0," per value) before n*f floats are taken */
        int64_t cap = 0;
        int rc = ingest_file_capacity(path, &cap);
        if (rc) return rc;
        if ((cap + 1) / (2 * d->f) < d->n)   /* the last row may lack its newline */
            return inca_fail(INCA_EINVAL, "%s:%lld: rows of %lld values: the file holds at most %lld of them, expected "
                             "%lld (num-node-list)", path, ln, (long long)d->f, (long long)((cap + 1) / (2 * d->f)),
                             (long long)d->n);
        d->x = inca_malloc((size_t)d->n * (size_t)d->f * sizeof *d->x);
        if (!d->x) return INCA_ENOMEM;
    }
    const char *why = NULL;
    int64_t col = ingest_parse_row(line, ',', d->f, d->x + c->i * d->f, &why);
    if (col)
        return inca_fail(INCA_EINVAL, "%s:%lld: column %lld: expected %s (rows have %lld values, as on line 1)",
                         path, ln, (long long)col, why, (long long)d->f);
    c->i++;
    if ((c->i & 0xfff) == 0) ingest_progress(c->o, "node-feat", c->i, d->n);
    return INCA_OK;
}

/* Read a per-node file; what = "label" or "feature". */
static int ogb_read_nodes(const char *path, dataset_t *d, ingest_line_fn fn, const char *what,
                          const ingest_opts_t *o) {
    node_ctx_t c = {d, 0, o};
    int64_t lines;
    int rc = ingest_each_line(path, fn, &c, &lines);
    if (!rc && c.i != d->n)
        rc = inca_fail(INCA_EINVAL, "%s:%lld: expected %lld %s lines (one per node), found only %lld", path,
                       (long long)lines + 1, (long long)d->n, what, (long long)c.i);
    return rc;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The subfolders of DIR/split in sorted order (at most 64; *k = 0 when there is no split
 * folder). names[i] owned (inca_free each). */
enum { OGB_MAX_SPLITS = 64 };
static int ogb_list_splits(const char *sdir, char **names, int *k) {
    *k = 0;
    DIR *dh = opendir(sdir);
    if (!dh) return INCA_OK;
    int rc = INCA_OK;
    struct dirent *de;
    while ((de = readdir(dh))) {
        if (de->d_name[0] == '.') continue;
        char p[INGEST_PATH_MAX];
        struct stat st;
        if (ingest_path_join(p, sizeof p, sdir, de->d_name) || stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (*k == OGB_MAX_SPLITS) {
            rc = inca_fail(INCA_EINVAL, "%s: more than %d split folders", sdir, OGB_MAX_SPLITS);
            break;
        }
        names[*k] = inca_malloc(strlen(de->d_name) + 1);
        if (!names[*k]) { rc = INCA_ENOMEM; break; }
        strcpy(names[(*k)++], de->d_name);
    }
    closedir(dh);
    if (rc == INCA_OK) qsort(names, (size_t)*k, sizeof names[0], cmp_str);
    return rc;
}

/* The default split: opts->split, else a folder named "stored" (inca export's name for an
 * unnamed default), else the first folder in sorted order (*pick = -1 when the dataset has no
 * split folder at all and none was asked for). */
static int ogb_pick_split(const char *sdir, char *const *names, int k, const char *want, int *pick) {
    *pick = want ? -1 : k > 0 ? 0 : -1;
    for (int i = 0; i < k && want; i++) if (strcmp(names[i], want) == 0) *pick = i;
    for (int i = 0; i < k && !want; i++) if (strcmp(names[i], "stored") == 0) *pick = i;
    if (want && *pick < 0) {
        char avail[512] = "";
        for (int i = 0; i < k; i++) {
            size_t l = strlen(avail);
            snprintf(avail + l, sizeof avail - l, "%s%s", i ? ", " : "", names[i]);
        }
        return inca_fail(INCA_ENOTFOUND, "%s/%s: --split: no such split folder (available: %s)", sdir, want,
                         k ? avail : "none");
    }
    return INCA_OK;
}

/* mark[v]: 1 + the split of the folder that listed v (0: none yet) */
typedef struct split_ctx { int64_t n; unsigned char *mark; int which; } split_ctx_t;

static int split_line(void *ctx, const char *path, long long ln, char *line) {
    split_ctx_t *c = ctx;
    const char *p = line;
    int64_t v;
    if (textio_at_end(line)) return INCA_OK;   /* a blank line lists no node */
    if (!textio_parse_i64(&p, &v) || !textio_at_end(p))
        return inca_fail(INCA_EINVAL, "%s:%lld: expected a node id, got '%.40s'", path, ln, line);
    if (v < 0 || v >= c->n)
        return inca_fail(INCA_EINVAL, "%s:%lld: node id %lld out of range: expected 0..%lld", path, ln,
                         (long long)v, (long long)c->n - 1);
    if (c->mark[v] == c->which + 1) return inca_fail(INCA_EINVAL, "%s:%lld: node id %lld listed twice", path, ln, (long long)v);
    if (c->mark[v])   /* a node in two splits would leak, say, test labels into training */
        return inca_fail(INCA_EINVAL, "%s:%lld: node id %lld is in the %s split of this folder already", path, ln,
                         (long long)v, dataset_split_names[c->mark[v] - 1]);
    c->mark[v] = (unsigned char)(c->which + 1);
    return INCA_OK;
}

/* A missing split file gives an empty split. mark: cleared once per folder (mark[v] says which
 * of its splits holds v). */
static int ogb_read_split(const char *sdir, const char *name, dataset_t *d, int which, unsigned char *mark) {
    char path[INGEST_PATH_MAX];
    split_ctx_t c = {d->n, mark, which};
    int rc = ingest_find_file(path, sizeof path, sdir, name, ingest_csv_exts);
    if (rc == INCA_ENOTFOUND) { inca_err_clear(); rc = INCA_OK; }
    else if (!rc) rc = ingest_each_line(path, split_line, &c, NULL);
    if (!rc) rc = ingest_split_from_marks(d, which, mark);
    return rc;
}

/* raw/'s counts checked and its edges read into d's graph (d->n set). */
static int ogb_read_graph(const char *raw, const ingest_opts_t *o, dataset_t *d) {
    char path[INGEST_PATH_MAX];
    ingest_edges_t e = {0};
    int64_t n = 0, m = 0;
    int rc;
    if ((rc = ogb_read_count(raw, "num-node-list", &n))) goto done;
    if ((rc = ogb_check_counts(raw, n, "num-node-list", "node-label", 1))) goto done;
    if ((rc = ogb_check_counts(raw, n, "num-node-list", "node-feat", 2))) goto done;
    if (n <= 0 || n > INGEST_MAX_ID) {
        ingest_find_file(path, sizeof path, raw, "num-node-list", ingest_csv_exts);
        rc = inca_fail(INCA_EINVAL, "%s:1: expected a node count in 1..%lld, got %lld", path,
                       (long long)INGEST_MAX_ID, (long long)n);
        goto done;
    }
    if ((rc = ogb_read_count(raw, "num-edge-list", &m))) goto done;
    if ((rc = ogb_check_counts(raw, m, "num-edge-list", "edge", 4))) goto done;
    if ((rc = ogb_check_graph_only(raw, n, m))) goto done;
    d->n = n;
    if ((rc = ogb_read_edges(raw, n, m, &e, o))) goto done;
    rc = ingest_build_graph(d, n, &e, 1, o);
done:
    ingest_edges_free(&e);
    return rc;
}

/* raw/'s labels and features into d, where there are any. */
static int ogb_read_attrs(const char *raw, const ingest_opts_t *o, dataset_t *d) {
    char path[INGEST_PATH_MAX];
    int rc = ingest_find_file(path, sizeof path, raw, "node-label", ingest_csv_exts);
    if (rc == INCA_OK) {
        d->y = inca_malloc((size_t)d->n * sizeof *d->y);
        rc = d->y ? ogb_read_nodes(path, d, label_line, "label", o) : INCA_ENOMEM;
    }
    else if (rc == INCA_ENOTFOUND) { inca_err_clear(); rc = INCA_OK; }
    if (rc) return rc;
    ingest_set_classes(d);

    rc = ingest_find_file(path, sizeof path, raw, "node-feat", ingest_csv_exts);
    if (rc == INCA_OK) rc = ogb_read_nodes(path, d, feat_line, "feature", o);
    else if (rc == INCA_ENOTFOUND) { inca_err_clear(); rc = INCA_OK; }
    return rc;
}

/* The splits of folder sdir/name into d->split. mark: d->n bytes of scratch. */
static int ogb_read_split_folder(const char *sdir, const char *name, dataset_t *d, unsigned char *mark) {
    char one[INGEST_PATH_MAX];
    int rc = ingest_path_join(one, sizeof one, sdir, name);
    if (rc) return rc;
    memset(mark, 0, (size_t)d->n);
    for (int s = 0; s < SPLIT_COUNT; s++)
        if ((rc = ogb_read_split(one, dataset_split_names[s], d, s, mark))) return rc;
    return INCA_OK;
}

/* d->split's ids moved to ns, named name; d->split left empty. */
static void ogb_split_move(dataset_t *d, dataset_named_split_t *ns, const char *name) {
    snprintf(ns->name, sizeof ns->name, "%s", name);
    for (int s = 0; s < SPLIT_COUNT; s++) {
        ns->ids[s] = d->split[s];
        ns->n[s] = d->split_n[s];
        d->split[s] = NULL;
        d->split_n[s] = 0;
    }
}

/* every split folder: the default (--split, else the first) into d.split, the others into
 * d.more, so one store serves each of them (inca train --split NAME) */
static int ogb_read_splits(const char *dir, const ingest_opts_t *o, dataset_t *d) {
    unsigned char *mark = NULL;
    char sdir[INGEST_PATH_MAX];
    char *names[OGB_MAX_SPLITS];
    int nnames = 0, pick = -1;
    dataset_named_split_t def;
    memset(&def, 0, sizeof def);
    int rc;
    if ((rc = ingest_path_join(sdir, sizeof sdir, dir, "split"))) goto done;
    if ((rc = ogb_list_splits(sdir, names, &nnames))) goto done;
    if ((rc = ogb_pick_split(sdir, names, nnames, o->split, &pick))) goto done;
    if (pick >= 0) {
        mark = inca_malloc((size_t)d->n);
        if (!mark) { rc = INCA_ENOMEM; goto done; }
        if (nnames > 1 && !(d->more = inca_calloc((size_t)(nnames - 1), sizeof *d->more))) { rc = INCA_ENOMEM; goto done; }
        for (int i = 0; i < nnames; i++) {
            if (i != pick && (rc = dataset_split_name_check(names[i]))) {
                inca_fail_ctx(rc, "%s/%s: cannot store this split folder (rename it)", sdir, names[i]);
                goto done;
            }
            if ((rc = ogb_read_split_folder(sdir, names[i], d, mark))) goto done;
            /* the folder's ids move out of d.split (the next folder's read would free them): the
             * default's to def until the end, the others' to their entry of d.more */
            ogb_split_move(d, i == pick ? &def : &d->more[d->n_more++], names[i]);
        }
        for (int s = 0; s < SPLIT_COUNT; s++) {
            d->split[s] = def.ids[s];
            d->split_n[s] = def.n[s];
            def.ids[s] = NULL;
        }
        /* an unstorable default name (only "stored") leaves the default unnamed: it needs none */
        if (dataset_split_name_check(names[pick]) == INCA_OK) snprintf(d->split_name, sizeof d->split_name, "%s", names[pick]);
        else inca_err_clear();
    }
done:
    inca_free(mark);
    for (int i = 0; i < nnames; i++) inca_free(names[i]);
    for (int s = 0; s < SPLIT_COUNT; s++) inca_free(def.ids[s]);   /* after a failure: the default's, not yet moved */
    return rc;
}

int ingest_ogb(const char *dir, const ingest_opts_t *o, dataset_t *out) {
    dataset_t d;
    dataset_init(&d);
    dataset_init(out);
    char raw[INGEST_PATH_MAX];
    struct stat st;
    int rc;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return inca_fail(INCA_ENOTFOUND, "%s: expected an OGB dataset folder (raw/, split/)", dir);
    if ((rc = ingest_path_join(raw, sizeof raw, dir, "raw"))) goto fail;
    if ((rc = ogb_read_graph(raw, o, &d))) goto fail;
    if ((rc = ogb_read_attrs(raw, o, &d))) goto fail;
    if ((rc = ogb_read_splits(dir, o, &d))) goto fail;
    snprintf(d.source, sizeof d.source, "ogb:%s", dir);
    *out = d;
    return INCA_OK;
fail:
    dataset_free(&d);
    return rc;
}
