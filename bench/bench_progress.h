/* Progress of a benchmark for a person watching it. The library never prints: `inca bench`
 * (cli/cmd_bench.c) installs a hook that shows each message as the status line on a terminal
 * (cli/progress.h), and nothing at all on a pipe or with --quiet. Without a hook every call is
 * a no-op. One benchmark runs per process, from its main thread: the hook is process-wide. */
#ifndef INCA_BENCH_PROGRESS_H
#define INCA_BENCH_PROGRESS_H

/* force: a new stage (shown at once); otherwise the hook may drop messages that come too fast.
 * msg NULL: erase the status line (a result line follows). */
typedef void (*bench_progress_fn)(void *ctx, int force, const char *msg);
void bench_progress_set(bench_progress_fn fn, void *ctx);
void bench_progress(int force, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The stage a trainer's progress lines are shown under ("gas", "incagg refresh 2 ep", ...). */
void bench_progress_stage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A train_log_cb (nn/train.h) for a benchmark's train_config_t: the trainer's progress lines
 * (epoch, loss, accuracy, s/epoch, ETA) and status lines go to the hook under the current
 * stage; ctx unused. */
void bench_train_log(void *ctx, int level, const char *line);
/* A benchmark's result line for a person on stderr (its figures go to stdout as JSON): the
 * status line is erased first, so the two never share a line. */
void bench_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The build's version (git describe) for a benchmark's JSON: set by the CLI, which knows it
 * (cli/version.c); "" until then. */
void bench_set_version(const char *v);
const char *bench_version(void);
#endif
