/* Helpers shared by the ingest parsers (loaders/ingest_*.c); not part of the public API.
 * Implemented in loaders/ingest_common.c; exercised through every parser's tests. */
#ifndef INCA_INGEST_INTERNAL_H
#define INCA_INGEST_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "loaders/dataset.h"
#include "loaders/ingest_opts.h"
#include "loaders/textio.h"

#define INGEST_PATH_MAX 4096
/* Largest node id a CSR column (int32) can hold. */
#define INGEST_MAX_ID ((int64_t)INT32_MAX - 1)
/* Node ids no line of any file names (isolated nodes taken on a count's or an id's word): past
 * the ids the edges and per-node rows can name, at most this many (8 bytes each in the CSR's row
 * pointers), so a stray large id or count cannot make an ingest take gigabytes for nothing. */
#define INGEST_MAX_UNNAMED ((int64_t)1 << 24)

/* A growable edge list; free with ingest_edges_free. */
typedef struct ingest_edges {
    int64_t *src, *dst;
    int64_t m, cap;
} ingest_edges_t;
int ingest_edges_reserve(ingest_edges_t *e, int64_t cap);
int ingest_edges_push(ingest_edges_t *e, int64_t s, int64_t d);
void ingest_edges_free(ingest_edges_t *e);

/* Growable arrays of int64 / float. */
typedef struct { int64_t *v; int64_t n, cap; } ingest_i64vec_t;
typedef struct { float *v; int64_t n, cap; } ingest_f32vec_t;
int ingest_i64vec_push(ingest_i64vec_t *a, int64_t x);
int ingest_f32vec_grow(ingest_f32vec_t *a, int64_t extra);  /* room for `extra` more */
void ingest_i64vec_free(ingest_i64vec_t *a);
void ingest_f32vec_free(ingest_f32vec_t *a);

/* Join dir and name into buf (INCA_EINVAL when it does not fit). */
int ingest_path_join(char *buf, size_t size, const char *dir, const char *name);
/* First of dir/<base><ext> for the NULL-terminated list of extensions that exists; writes the
 * path into buf. INCA_ENOTFOUND (message names the first candidate) when none exists. */
int ingest_find_file(char *buf, size_t size, const char *dir, const char *base, const char *const *exts);
/* Exts for text files: ".gz" first, then plain: {".csv.gz", ".csv", NULL}-style lists. */
extern const char *const ingest_csv_exts[];

/* Class ids run 0..INGEST_MAX_CLASSES-1: one stray id of 2e9 made a 4-node dataset of 2e9
 * classes whose training allocated without end. 2^20 holds every OGB and extreme-classification
 * label set (Amazon-670k). */
#define INGEST_MAX_CLASSES (1 << 20)
/* A label token: "" / "-1" / "nan" -> -1 (unlabelled); integers 0..INGEST_MAX_CLASSES-1 (or
 * exactly integral decimals such as "3.0"; "2.9999999" is no class) -> the class. Returns 1 when
 * valid, 0 otherwise (the caller reports file:line). */
int ingest_parse_label(const char *s, int32_t *out);

/* Comma-separated floats, exactly f of them (f > 0) into row; returns 0 ok, or the 1-based
 * column of the first problem with *why set ("a number", "a finite number", "no more values",
 * "more values"). */
int64_t ingest_parse_row(const char *line, char sep, int64_t f, float *row, const char **why);
/* Number of sep-separated fields on a line (1 + separators; 0 for a blank line). */
int64_t ingest_count_fields(const char *line, char sep);

/* Build d->adj from edges with n nodes: adds reverses when sym, drops input self-loops and
 * adds one per node when opts asks for them. */
int ingest_build_graph(dataset_t *d, int64_t n, const ingest_edges_t *e, int sym, const ingest_opts_t *o);
/* classes = max label + 1 (0 when no labels). */
void ingest_set_classes(dataset_t *d);
/* Split `which` from a mark array of n entries: ids with mark == which + 1 and a label (y >= 0),
 * ascending. */
int ingest_split_from_marks(dataset_t *d, int which, const unsigned char *mark);
/* Call fn for every line of `path` (gzip or plain) with its 1-based number; stops at the
 * first non-zero return, which is passed back. *nlines (may be NULL) gets the number of
 * lines read, so "line *nlines + 1" names the end of the file in messages. */
typedef int (*ingest_line_fn)(void *ctx, const char *path, long long ln, char *line);
int ingest_each_line(const char *path, ingest_line_fn fn, void *ctx, int64_t *nlines);
/* Declared sizes are checked against what the input can hold before anything is allocated
 * from them. *bytes: the most bytes `path` can deliver when read: its size, or for a gzip file
 * (magic 1f 8b) 1032 times its size, deflate's maximum compression ratio (zlib FAQ: 1032:1);
 * concatenated members are each bounded the same way, so the bound holds for the sum. */
int ingest_file_capacity(const char *path, int64_t *bytes);
/* INCA_EINVAL "<where>: declares N <what>, the file holds at most M" (or "<holder> holds at
 * most M" when the rows live in another file than the declaration) unless
 * header + rows * row_bytes fits in the capacity of `holder`; row_bytes is the fewest bytes one
 * row can take (header -1: the last row may lack its newline). */
int ingest_check_declared(const char *where, const char *holder, int64_t rows, const char *what, int64_t row_bytes,
                          int64_t header);
/* Progress callback helper (no-op when opts has none). */
void ingest_progress(const ingest_opts_t *o, const char *stage, int64_t done, int64_t total);
#endif
