/* The benchmarks' progress hook; see bench_progress.h. */
#include "bench/bench_progress.h"
#include "nn/train.h"
#include <stdarg.h>
#include <stdio.h>

static bench_progress_fn g_fn;
static void *g_ctx;
static char g_stage[128];

void bench_progress_set(bench_progress_fn fn, void *ctx) {
    g_fn = fn;
    g_ctx = ctx;
    g_stage[0] = '\0';
}

void bench_progress(int force, const char *fmt, ...) {
    if (!g_fn) return;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    g_fn(g_ctx, force, msg);
}

void bench_progress_stage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_stage, sizeof g_stage, fmt, ap);
    va_end(ap);
    bench_progress(1, "%s", g_stage);
}

void bench_say(const char *fmt, ...) {
    if (g_fn) g_fn(g_ctx, 1, NULL);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

static const char *g_version = "";
void bench_set_version(const char *v) { g_version = v ? v : ""; }
const char *bench_version(void) { return g_version; }

void bench_train_log(void *ctx, int level, const char *line) {
    (void)ctx;   /* a status line (a new pruning stage, the loader chosen) shows at once */
    bench_progress(level != TRAIN_LOG_PROGRESS, "%s: %s", g_stage, line);
}
