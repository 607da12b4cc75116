/* Peak anonymous and file-backed resident memory by sampling /proc/self/status; see memstat.h. */
#include "core/memstat.h"
#include "core/status.h"
#include "core/json.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static _Atomic long long g_anon_kb, g_file_kb;   /* peaks */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static pthread_t g_thread;
static int g_running, g_stop;

static void peak_update(_Atomic long long *peak, long long v) {
    long long cur = atomic_load(peak);
    while (v > cur && !atomic_compare_exchange_weak(peak, &cur, v)) {
    }
}

/* RssAnon and RssFile (kB) of /proc/self/status; 0 when absent */
static int read_status(long long *anon, long long *file) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int got = 0;
    *anon = *file = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f) && got < 2) {
        if (strncmp(line, "RssAnon:", 8) == 0) got += sscanf(line + 8, "%lld", anon) == 1;
        else if (strncmp(line, "RssFile:", 8) == 0) got += sscanf(line + 8, "%lld", file) == 1;
    }
    fclose(f);
    return got == 2;
}

int memstat_anon_now(int64_t *bytes) {
    long long a, f;
    *bytes = 0;
    if (!read_status(&a, &f)) return inca_fail(INCA_ERR, "memstat: /proc/self/status has no RssAnon/RssFile");
    *bytes = (int64_t)a * 1024;
    return INCA_OK;
}

void memstat_sample(void) {
    long long a, f;
    if (!read_status(&a, &f)) return;
    peak_update(&g_anon_kb, a);
    peak_update(&g_file_kb, f);
}

static void *sampler(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g_lock);
    while (!g_stop) {
        pthread_mutex_unlock(&g_lock);
        memstat_sample();
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += MEMSTAT_PERIOD_MS * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&g_lock);
        if (!g_stop) pthread_cond_timedwait(&g_cond, &g_lock, &t);
    }
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

int memstat_start(void) {
    long long a, f;
    if (!read_status(&a, &f)) return inca_fail(INCA_ERR, "memstat: /proc/self/status has no RssAnon/RssFile");
    memstat_sample();
    pthread_mutex_lock(&g_lock);
    int rc = INCA_OK;
    if (!g_running) {
        g_stop = 0;
        if (pthread_create(&g_thread, NULL, sampler, NULL) == 0) g_running = 1;
        else rc = inca_fail(INCA_ERR, "memstat: cannot start the sampling thread");
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

void memstat_stop(void) {
    pthread_mutex_lock(&g_lock);
    if (!g_running) {
        pthread_mutex_unlock(&g_lock);
        return;
    }
    g_stop = 1;
    pthread_cond_signal(&g_cond);
    pthread_mutex_unlock(&g_lock);
    pthread_join(g_thread, NULL);
    pthread_mutex_lock(&g_lock);
    g_running = 0;
    pthread_mutex_unlock(&g_lock);
    memstat_sample();
}

void memstat_reset_peaks(void) {
    atomic_store(&g_anon_kb, 0);
    atomic_store(&g_file_kb, 0);
    memstat_sample();
}

void memstat_peaks(double *anon_mb, double *file_mb) {
    memstat_sample();
    *anon_mb = (double)atomic_load(&g_anon_kb) / 1024.0;
    *file_mb = (double)atomic_load(&g_file_kb) / 1024.0;
}

void memstat_json(json_t *j) {
    double a, f;
    memstat_peaks(&a, &f);
    json_num(j, "peak_rss_anon_mb", a);
    json_num(j, "peak_rss_file_mb", f);
}
