/* scripts/plot.py (issue 14): each kind (curves, times, budget, scale) rendered from small fixtures
 * written here; each PNG is checked by a reader of our own (signature, every chunk's CRC, the
 * IDAT stream inflated to exactly height x (1 + width x channels) bytes) and must not be blank
 * (a blank image, made here, fails the same check); inputs with nothing to plot exit 2 naming
 * the file. Needs python3 with matplotlib (Debian's python3-matplotlib, which scripts/setup.sh
 * installs) for the pictures, skipped without it. Always: without matplotlib (a package of that
 * name that fails to import, first on PYTHONPATH) plot.py says so in one line, exit 2, under
 * python3 on PATH and under Debian's. Issue 31 item 6: the README's commands as written (python3
 * on PATH, which may be a pyenv one without matplotlib; no --out). */
#include "testutil.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static char *dir;
static char py[64] = "python3";

static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* 0: a valid, non-blank PNG; otherwise what is wrong */
static const char *png_check(const char *path, int *distinct_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return "missing";
    fseek(f, 0, SEEK_END);
    const long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len);
    if (fread(b, 1, (size_t)len, f) != (size_t)len) { fclose(f); free(b); return "short read"; }
    fclose(f);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    const char *why = NULL;
    unsigned char *idat = NULL;
    size_t nidat = 0;
    uint32_t w = 0, h = 0;
    int ch = 0, saw_end = 0;
    if (len < 8 || memcmp(b, sig, 8) != 0) why = "no PNG signature";
    for (long o = 8; !why && o + 12 <= len && !saw_end;) {
        const uint32_t n = be32(b + o);
        if (o + 12 + (long)n > len) { why = "truncated chunk"; break; }
        const unsigned char *type = b + o + 4, *data = b + o + 8;
        if (crc32(crc32(0L, Z_NULL, 0), type, 4 + n) != be32(data + n)) { why = "bad chunk CRC"; break; }
        if (memcmp(type, "IHDR", 4) == 0) {
            w = be32(data);
            h = be32(data + 4);
            if (data[8] != 8 || (data[9] != 2 && data[9] != 6) || data[12] != 0) why = "not 8-bit RGB(A), non-interlaced";
            ch = data[9] == 6 ? 4 : 3;
        } else if (memcmp(type, "IDAT", 4) == 0) {
            idat = realloc(idat, nidat + n);
            memcpy(idat + nidat, data, n);
            nidat += n;
        } else if (memcmp(type, "IEND", 4) == 0)
            saw_end = 1;
        o += 12 + (long)n;
    }
    if (!why && (!saw_end || !w || !h || !nidat)) why = "missing IHDR, IDAT or IEND";
    if (!why) {
        uLongf want = (uLongf)h * (1 + (uLongf)w * (uLongf)ch), got = want + 1;
        unsigned char *raw = malloc(got);
        if (uncompress(raw, &got, idat, (uLong)nidat) != Z_OK || got != want) why = "IDAT does not inflate to the image size";
        else {
            int seen[256] = {0}, distinct = 0;
            for (uLongf i = 0; i < got; i++) distinct += !seen[raw[i]]++;
            *distinct_out = distinct;
            if (distinct < 16) why = "blank (fewer than 16 distinct byte values)";
        }
        free(raw);
    }
    free(idat);
    free(b);
    return why;
}

static void write_file(const char *name, const char *text) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void plot_ok(const char *kind, const char *inputs, const char *png) {
    char cmd[4096], *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s/scripts/plot.py' %s %s --out %s --title test", dir, py, tu_src(), kind,
             inputs, png);
    ck_assert_msg(tu_sh(cmd, &out, &err) == 0, "plot %s: %s", kind, err ? err : "");
    free(out);
    free(err);
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, png);
    int distinct = 0;
    const char *why = png_check(p, &distinct);
    ck_assert_msg(why == NULL, "%s: %s", png, why ? why : "");
}

START_TEST(each_kind_renders) {
    /* train --metrics: two files, two runs each */
    char m[2048] = "";
    for (int r = 0; r < 2; r++)
        for (int e = 0; e < 6; e++) {
            char l[256];
            snprintf(l, sizeof l, "{\"run\":%d,\"epoch\":%d,\"train_loss\":%.3f,\"train_acc\":0.5,\"val_loss\":1.0,"
                     "\"val_acc\":%.3f,\"test_acc\":%.3f,\"epoch_time_s\":0.01}\n", r, e, 2.0 - 0.3 * e, 0.3 + 0.08 * e + 0.01 * r,
                     0.28 + 0.08 * e);
            strcat(m, l);
        }
    write_file("a.jsonl", m);
    write_file("b.jsonl", m);
    plot_ok("curves", "a.jsonl=full b.jsonl=incagg", "curves.png");
    /* bench epoch and compare_peers lines (PyG alone, as compare_pyg wrote them, and PyG with DGL) */
    write_file("epoch.json",
               "{\"method\":\"gas\",\"epoch_time_s\":0.5,\"step_time_per_epoch_s\":0.4,\"refresh_time_per_epoch_s\":0}\n"
               "{\"method\":\"incagg\",\"refresh_epochs\":1,\"epoch_time_s\":0.3,\"step_time_per_epoch_s\":0.2,"
               "\"refresh_time_per_epoch_s\":0.05}\n");
    write_file("pyg.json", "some text first\n{\"case\":\"cora\",\"inca_step_time_s\":0.001,\"inca_epoch_time_s\":0.002,"
                           "\"pyg_step_time_s\":0.07,\"pyg_epoch_time_s\":0.08}\n"
                           "{\"case\":\"csbm\",\"inca_step_time_s\":1.9,\"inca_epoch_time_s\":2.6,\"pyg_step_time_s\":18.9,"
                           "\"pyg_epoch_time_s\":28.1,\"dgl_step_time_s\":2.57,\"dgl_epoch_time_s\":3.59}\n");
    plot_ok("times", "epoch.json pyg.json", "times.png");
    /* prune --eval, three budgets */
    write_file("prune.json", "{\"keep\":0.01,\"coreset_acc\":0.6,\"coreset_acc_std\":0.02,\"random_acc\":0.55,"
                             "\"random_acc_std\":0.03,\"full_acc\":0.85}\n"
                             "{\"keep\":0.1,\"coreset_acc\":0.75,\"coreset_acc_std\":0.01,\"random_acc\":0.72,"
                             "\"random_acc_std\":0.02,\"full_acc\":0.85}\n"
                             "{\"keep\":0.3,\"coreset_acc\":0.8,\"coreset_acc_std\":0.01,\"random_acc\":0.79,"
                             "\"random_acc_std\":0.01,\"full_acc\":0.85}\n");
    plot_ok("budget", "prune.json", "budget.png");
    /* prune --eval-sets coreset writes random_acc null, a NaN accuracy is null, and a file name
     * may hold "=" (each crashed plot.py, or read "lr" as the file) */
    write_file("c=1.json", "{\"keep\":0.1,\"coreset_acc\":0.75,\"coreset_acc_std\":null,\"random_acc\":null,"
                           "\"random_acc_std\":null,\"full_acc\":null}\n"
                           "{\"keep\":0.3,\"coreset_acc\":0.8,\"random_acc\":null}\n");
    plot_ok("budget", "c=1.json", "budget_nulls.png");
    write_file("lr=0.01.jsonl", "{\"run\":0,\"epoch\":0,\"train_loss\":1.9,\"val_acc\":null,\"test_acc\":0.3}\n"
                                "{\"run\":0,\"epoch\":1,\"train_loss\":1.5,\"val_acc\":0.5,\"test_acc\":0.5}\n");
    plot_ok("curves", "lr=0.01.jsonl lr=0.01.jsonl=again a.jsonl=lr=0.01", "curves_eq.png");
    /* scripts/scale_curve.py, two sizes of three stages, one failed line (skipped) */
    write_file("curve.jsonl", "{\"nodes\":1000000,\"stage\":\"gen\",\"ok\":true,\"seconds\":14,\"peak_rss_anon_mb\":1270}\n"
                              "{\"nodes\":1000000,\"stage\":\"metis\",\"ok\":true,\"seconds\":53,\"peak_rss_anon_mb\":1566}\n"
                              "{\"nodes\":1000000,\"stage\":\"layout\",\"ok\":true,\"seconds\":13,\"peak_rss_anon_mb\":1260}\n"
                              "{\"nodes\":2000000,\"stage\":\"gen\",\"ok\":true,\"seconds\":29,\"peak_rss_anon_mb\":2500}\n"
                              "{\"nodes\":2000000,\"stage\":\"metis\",\"ok\":false,\"seconds\":1}\n"
                              "{\"nodes\":2000000,\"stage\":\"layout\",\"ok\":true,\"seconds\":27,\"peak_rss_anon_mb\":2400}\n");
    plot_ok("scale", "curve.jsonl", "scale.png");
    /* as the README writes them: python3 on PATH (handing over to Debian's when it has no
     * matplotlib) and no --out (KIND.png) */
    char cmd[4096], p[1200], *out = NULL, *err = NULL;
    snprintf(p, sizeof p, "%s/budget.png", dir);
    remove(p);
    snprintf(cmd, sizeof cmd, "cd '%s' && python3 '%s/scripts/plot.py' budget prune.json", dir, tu_src());
    ck_assert_msg(tu_sh(cmd, &out, &err) == 0, "python3 plot.py budget (no --out): %s", err ? err : "");
    free(out);
    free(err);
    int distinct = 0;
    const char *why = png_check(p, &distinct);
    ck_assert_msg(why == NULL, "budget.png: %s", why ? why : "");
}
END_TEST

/* log axes read as plain numbers (1, 2, 5, 10, 20 ...), never matplotlib's default 10^1 or
 * 2x10^1 (issue 31 item 12): plot.py --dump-ticks prints the labels each axis drew */
static void ticks_plain(const char *kind, const char *input, const char *want_x) {
    char cmd[4096], *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s/scripts/plot.py' %s %s --out ticks-%s.png --dump-ticks", dir, py, tu_src(),
             kind, input, kind);
    ck_assert_msg(tu_sh(cmd, &out, &err) == 0, "plot %s --dump-ticks: %s", kind, err ? err : "");
    char *keep = strdup(out), *k = keep;   /* the JSON lines; plot.py also prints the PNG's name */
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
        if (line[0] == '{') k += sprintf(k, "%s\n", line);
    cJSON *v[16];
    const int n = tu_json_lines(keep, v, 16);
    free(keep);
    int logs = 0, found = want_x == NULL;
    for (int i = 0; i < n; i++) {
        if (strcmp(tu_json_get(v[i], "scale", cJSON_String)->valuestring, "log") != 0) continue;
        const cJSON *labels = tu_json_get(v[i], "labels", cJSON_Array);
        const char *axis = tu_json_get(v[i], "axis", cJSON_String)->valuestring;
        ck_assert_msg(cJSON_GetArraySize(labels) >= 2, "%s: a log %s axis with %d labels", kind, axis, cJSON_GetArraySize(labels));
        logs++;
        for (const cJSON *l = labels->child; l; l = l->next) {
            ck_assert_msg(!strstr(l->valuestring, "10^") && !strstr(l->valuestring, "times") && !strchr(l->valuestring, '$'),
                          "%s: log %s axis label '%s'", kind, axis, l->valuestring);
            if (want_x && strcmp(axis, "x") == 0 && strcmp(l->valuestring, want_x) == 0) found = 1;
        }
    }
    ck_assert_msg(logs > 0, "%s: no log axis in %s", kind, out);
    ck_assert_msg(found, "%s: no x label '%s' in %s", kind, want_x, out);
    tu_json_free_lines(v, n);
    free(out);
    free(err);
}

START_TEST(log_ticks_plain) {
    /* the budget curve: 5% to 30% kept, where matplotlib wrote 2x10^1 */
    write_file("tprune.json", "{\"keep\":0.05,\"coreset_acc\":0.6,\"random_acc\":0.55}\n"
                              "{\"keep\":0.1,\"coreset_acc\":0.7,\"random_acc\":0.65}\n"
                              "{\"keep\":0.2,\"coreset_acc\":0.75,\"random_acc\":0.72}\n"
                              "{\"keep\":0.3,\"coreset_acc\":0.8,\"random_acc\":0.79}\n");
    ticks_plain("budget", "tprune.json", "20");
    write_file("tcurve.jsonl", "{\"nodes\":1000000,\"stage\":\"gen\",\"ok\":true,\"seconds\":14,\"peak_rss_anon_mb\":1270}\n"
                               "{\"nodes\":2000000,\"stage\":\"gen\",\"ok\":true,\"seconds\":29,\"peak_rss_anon_mb\":2500}\n"
                               "{\"nodes\":10000000,\"stage\":\"gen\",\"ok\":true,\"seconds\":150,\"peak_rss_anon_mb\":12600}\n");
    ticks_plain("scale", "tcurve.jsonl", "2");
    /* epoch times 2 ms to 28 s: a log y axis */
    write_file("tpeers.json", "{\"case\":\"cora\",\"inca_step_time_s\":0.001,\"inca_epoch_time_s\":0.002,"
                              "\"pyg_step_time_s\":0.07,\"pyg_epoch_time_s\":0.08}\n"
                              "{\"case\":\"csbm\",\"inca_step_time_s\":1.9,\"inca_epoch_time_s\":2.6,\"pyg_step_time_s\":18.9,"
                              "\"pyg_epoch_time_s\":28.1}\n");
    ticks_plain("times", "tpeers.json", NULL);
}
END_TEST

/* matplotlib that does not import: one line on stderr naming it and both ways to get it, exit 2,
 * no picture, under python3 on PATH and under Debian's (where the first hands over) */
START_TEST(missing_matplotlib_one_line) {
    char p[1200];
    snprintf(p, sizeof p, "%s/poison", dir);
    char mk[1400];
    snprintf(mk, sizeof mk, "mkdir -p '%s/matplotlib'", p);
    ck_assert_int_eq(tu_sh(mk, NULL, NULL), 0);
    write_file("poison/matplotlib/__init__.py", "raise ImportError('matplotlib withheld by test_plot')\n");
    write_file("m.jsonl", "{\"run\":0,\"epoch\":0,\"train_loss\":1.0,\"val_acc\":0.5,\"test_acc\":0.5}\n");
    const char *pys[2] = {"python3", "/usr/bin/python3"};
    for (int k = 0; k < 2; k++) {
        if (k == 1 && !tu_exists(pys[k])) continue;
        char cmd[4096], png[1300], *out = NULL, *err = NULL;
        snprintf(png, sizeof png, "%s/none.png", dir);
        snprintf(cmd, sizeof cmd, "cd '%s' && PYTHONPATH='%s' %s '%s/scripts/plot.py' curves m.jsonl --out none.png", dir, p,
                 pys[k], tu_src());
        const int rc = tu_sh(cmd, &out, &err);
        ck_assert_msg(rc == 2, "%s: exit %d, stderr: %s", pys[k], rc, err ? err : "");
        const char *nl = strchr(err, '\n');
        ck_assert_msg(nl && nl[1] == '\0', "%s: not one line: %s", pys[k], err);
        ck_assert_msg(strncmp(err, "plot: matplotlib is missing", 27) == 0 && strstr(err, "python3-matplotlib") &&
                      strstr(err, "pip install matplotlib") && strstr(err, "withheld by test_plot"),
                      "%s: %s", pys[k], err);
        ck_assert_msg(!tu_exists(png), "%s wrote %s", pys[k], png);
        free(out);
        free(err);
    }
}
END_TEST

/* the checker rejects a blank image (so the checks above can fail), and plot.py refuses an
 * input with nothing to plot */
START_TEST(blank_and_bad_input) {
    enum { W = 120, H = 80 };
    static unsigned char raw[H * (1 + W * 3)];
    for (int y = 0; y < H; y++) {
        raw[y * (1 + W * 3)] = 0;
        memset(raw + y * (1 + W * 3) + 1, 255, W * 3);
    }
    uLongf zl = compressBound(sizeof raw);
    unsigned char *z = malloc(zl);
    ck_assert_int_eq(compress(z, &zl, raw, sizeof raw), Z_OK);
    char p[1200];
    snprintf(p, sizeof p, "%s/blank.png", dir);
    FILE *f = fopen(p, "wb");
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    fwrite(sig, 1, 8, f);
    const unsigned char ihdr[13] = {0, 0, 0, W, 0, 0, 0, H, 8, 2, 0, 0, 0};
    const struct { const char *t; const unsigned char *d; uint32_t n; } chunks[3] = {
        {"IHDR", ihdr, 13}, {"IDAT", z, (uint32_t)zl}, {"IEND", NULL, 0}};
    for (int i = 0; i < 3; i++) {
        unsigned char hd[8] = {(unsigned char)(chunks[i].n >> 24), (unsigned char)(chunks[i].n >> 16),
                               (unsigned char)(chunks[i].n >> 8), (unsigned char)chunks[i].n};
        memcpy(hd + 4, chunks[i].t, 4);
        uLong c = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)chunks[i].t, 4);
        if (chunks[i].n) c = crc32(c, chunks[i].d, chunks[i].n);
        unsigned char cb[4] = {(unsigned char)(c >> 24), (unsigned char)(c >> 16), (unsigned char)(c >> 8), (unsigned char)c};
        fwrite(hd, 1, 8, f);
        if (chunks[i].n) fwrite(chunks[i].d, 1, chunks[i].n, f);
        fwrite(cb, 1, 4, f);
    }
    fclose(f);
    free(z);
    int distinct = 0;
    const char *why = png_check(p, &distinct);
    ck_assert_msg(why && strstr(why, "blank"), "a blank image passed: %s", why ? why : "ok");
    write_file("empty.json", "not json\n{\"unrelated\":1}\n");
    char cmd[4096], *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s/scripts/plot.py' budget empty.json --out x.png", dir, py, tu_src());
    ck_assert_int_eq(tu_sh(cmd, &out, &err), 2);
    ck_assert_msg(strstr(err, "empty.json") != NULL, "%s", err);
    free(out);
    free(err);
}
END_TEST

int main(void) {
    if (tu_sh("python3 -c 'import sys'", NULL, NULL) != 0) {
        fprintf(stderr, "test_plot: no python3; skipped\n");
        return 77;
    }
    /* Debian's python3 (where python3-matplotlib installs), else the first on PATH */
    int mpl = 1;
    if (tu_sh("/usr/bin/python3 -c 'import matplotlib' 2>/dev/null", NULL, NULL) == 0) snprintf(py, sizeof py, "/usr/bin/python3");
    else if (tu_sh("python3 -c 'import matplotlib' 2>/dev/null", NULL, NULL) != 0) {
        fprintf(stderr, "test_plot: no python3 with matplotlib (apt-get install python3-matplotlib); pictures skipped\n");
        mpl = 0;
    }
    dir = tu_mkdtemp();
    Suite *s = suite_create("plot");
    TCase *t = tcase_create("plot");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, missing_matplotlib_one_line);
    if (mpl) {
        tcase_add_test(t, each_kind_renders);
        tcase_add_test(t, blank_and_bad_input);
        tcase_add_test(t, log_ticks_plain);
    }
    suite_add_tcase(s, t);
    const int rc = tu_run_suite(s);
    tu_rmrf(dir);
    free(dir);
    return rc;
}
