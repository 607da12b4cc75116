/* The types every ingest parser takes: the format ids and the options (loaders/ingest.h has the
 * front door and the formats' description). A header of its own so that the parsers, which
 * loaders/ingest.c dispatches to, need not include the dispatcher's header. */
#ifndef INCA_INGEST_OPTS_H
#define INCA_INGEST_OPTS_H
#include <stdint.h>

typedef enum { INGEST_OGB = 0, INGEST_EDGELIST, INGEST_METIS, INGEST_IDX, INGEST_CSV } ingest_format_t;

enum { INGEST_SYMMETRIZE = 1, INGEST_SELF_LOOPS = 2 };

/* Called now and then during long stages (never from a parallel region); may be NULL. */
typedef void (*ingest_progress_fn)(void *ctx, const char *stage, int64_t done, int64_t total);

typedef struct ingest_opts {
    unsigned flags;            /* INGEST_SYMMETRIZE (adds reverses), INGEST_SELF_LOOPS (one per node) */
    const char *split;         /* ogb: the default split's folder; NULL = "stored" when there is
                                  one (inca export's unnamed default), else the first sorted (the
                                  other folders are stored as named splits either way) */
    const char *labels;        /* edgelist: optional "node label" file */
    const char *features;      /* edgelist: optional "node f1 ... fk" file */
    ingest_progress_fn progress;
    void *progress_ctx;
} ingest_opts_t;

#endif
