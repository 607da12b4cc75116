/* Scratch files for the libFuzzer targets; see fuzz_util.h. */
#include "fuzz_util.h"
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[256];

static void die(const char *what, const char *path) {
    fprintf(stderr, "fuzz harness: %s %s\n", what, path);
    abort();
}

static void remove_dir(void);

const char *fuzz_dir(void) {
    if (!g_dir[0]) {
        struct stat st;
        const char *base = getenv("INCA_FUZZ_TMP");
        if (!base) base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
        snprintf(g_dir, sizeof g_dir, "%s/inca-fuzz-%d", base, (int)getpid());
        if (mkdir(g_dir, 0700) != 0 && stat(g_dir, &st) != 0) die("cannot create", g_dir);
        atexit(remove_dir);
    }
    return g_dir;
}

const char *fuzz_path(const char *rel) {
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/%s", fuzz_dir(), rel);
    return buf;
}

void fuzz_write(const char *rel, const uint8_t *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s", fuzz_path(rel));
    for (char *s = strchr(path + strlen(fuzz_dir()) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(path, 0700);   /* exists already: fine; any other failure shows at fopen */
        *s = '/';
    }
    FILE *f = fopen(path, "wb");
    if (!f) die("cannot create", path);
    if ((n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) die("cannot write", path);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag;
    if (ftw->level > 0) remove(path);
    return 0;
}

void fuzz_clear(void) { nftw(fuzz_dir(), rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

int fuzz_write_sections(const uint8_t *data, size_t size, const char *const *names, int nnames) {
    const size_t sl = strlen(FUZZ_SEP);
    size_t at = 0;
    int k = 0;
    while (k < nnames) {
        const uint8_t *hit = size - at >= sl ? memmem(data + at, size - at, FUZZ_SEP, sl) : NULL;
        size_t end = hit ? (size_t)(hit - data) : size;
        fuzz_write(names[k++], data + at, end - at);
        if (!hit) break;
        at = end + sl;
    }
    return k;
}

static void remove_dir(void) {
    fuzz_clear();
    rmdir(g_dir);
}
