/* Peak resident memory of this process split by kind: anonymous (heap, anonymous maps: what
 * the process itself holds) and file-backed (pages of mapped files, e.g. an LMDB store read
 * through its map, which the kernel can drop and re-read). getrusage's maxrss mixes both.
 * Linux keeps no peak per kind, so a background thread samples RssAnon / RssFile of
 * /proc/self/status every MEMSTAT_PERIOD_MS, and memstat_sample() adds a sample on demand (the
 * trainers call it at epoch ends). Peaks are therefore lower bounds within one period.
 * Tested in test_core.c (an anonymous allocation and a mapped file show in their own peaks). */
#ifndef INCA_CORE_MEMSTAT_H
#define INCA_CORE_MEMSTAT_H

#include <stdint.h>

#define MEMSTAT_PERIOD_MS 10

/* Starts the sampler (idempotent, thread-safe). INCA_ERR when the thread cannot start or
 * /proc/self/status has no RssAnon (then the peaks stay 0). */
int memstat_start(void);
/* The anonymous resident memory of this process now (RssAnon of /proc/self/status), bytes.
 * INCA_ERR (and *bytes 0) where /proc/self/status has no RssAnon. */
int memstat_anon_now(int64_t *bytes);
/* One sample now (works without the sampler too). */
void memstat_sample(void);
/* Forget the peaks: they restart from a sample taken now (a benchmark measuring several
 * configurations in one process). */
void memstat_reset_peaks(void);
/* The peaks seen so far, MiB. */
void memstat_peaks(double *anon_mb, double *file_mb);
/* "peak_rss_anon_mb" and "peak_rss_file_mb" (the peaks now) into the JSON object being written. */
struct json;
void memstat_json(struct json *j);
/* Stops and joins the sampler (peaks are kept); NULL-safe to call when not started. */
void memstat_stop(void);
#endif
