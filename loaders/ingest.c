/* The ingest front door: the formats' names and the parser each is registered with, in
 * ingest_format_t's order. Tested through tests/test_ingest.c and tests/test_e2e_ingest.c. */
#include "loaders/ingest.h"
#include "core/status.h"
#include <string.h>

typedef int (*ingest_parser_fn)(const char *src, const ingest_opts_t *opts, dataset_t *out);

static const struct {
    const char *name;
    ingest_parser_fn parse;
} formats[] = {
    [INGEST_OGB] = {"ogb", ingest_ogb},
    [INGEST_EDGELIST] = {"edgelist", ingest_edgelist},
    [INGEST_METIS] = {"metis", ingest_metis},
    [INGEST_IDX] = {"idx", ingest_idx},
    [INGEST_CSV] = {"csv", ingest_csv},
};
enum { NFORMATS = (int)(sizeof formats / sizeof formats[0]) };

int ingest_format_parse(const char *name, ingest_format_t *out) {
    for (int i = 0; i < NFORMATS; i++)
        if (name && strcmp(name, formats[i].name) == 0) { *out = (ingest_format_t)i; return INCA_OK; }
    return inca_fail(INCA_EINVAL, "--format: expected ogb, edgelist, metis, idx or csv, got '%s'",
                     name ? name : "");
}

const char *ingest_format_name(ingest_format_t f) {
    return (unsigned)f < (unsigned)NFORMATS ? formats[f].name : "?";
}

int ingest_run(ingest_format_t f, const char *src, const ingest_opts_t *opts, dataset_t *out) {
    static const ingest_opts_t defaults = {0};
    if (!opts) opts = &defaults;
    if ((unsigned)f >= (unsigned)NFORMATS) return inca_fail(INCA_EINVAL, "--format: unknown format %d", (int)f);
    return formats[f].parse(src, opts, out);
}
