/* Kernel contexts: the shared CPU context (kc_cpu), one made by the --device rule (cpu, cuda,
 * auto with fallback to the CPU, emu: the emulated device of the tests), and freeing them. The
 * constructors are the backends' own (kernels/cpu/backend_cpu.c's table, backend_emu.c,
 * kernels/cuda/); the backends call kernels/backend.c's dispatch, never this file. Tested in
 * test_backend.c. */
#include "kernels/backend.h"
#include "core/alloc.h"
#include "core/status.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef INCA_HAS_CUDA
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#endif

const kern_ops_t *kern_cpu_ops(void);   /* kernels/cpu/backend_cpu.c */
int kern_emu_create(int64_t capacity, kern_ctx_t **out);  /* kernels/cpu/backend_emu.c */

static kern_ctx_t cpu_shared;           /* kc_cpu(): written once, under cpu_once */
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void cpu_init(kern_ctx_t *c) {
    memset(c, 0, sizeof *c);
    c->ops = kern_cpu_ops();
    c->dev = KERN_DEV_CPU;
    snprintf(c->describe, sizeof c->describe, "cpu");
}

static void cpu_shared_init(void) { cpu_init(&cpu_shared); }

kern_ctx_t *kc_cpu(void) {
    /* threads may ask at once (workers, OpenMP); pthread_once makes the one write visible to all */
    pthread_once(&cpu_once, cpu_shared_init);
    return &cpu_shared;
}

#ifdef INCA_HAS_CUDA
/* The CUDA backend's module, loaded once (CMakeLists.txt says why it is not linked in): where
 * INCA_CUDA_MODULE names it, else beside the running executable, else on the loader's path. */
static kern_cuda_create_fn cuda_create;
static char cuda_why[300];
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;

static void cuda_load(void) {
    char path[PATH_MAX + 32] = "libinca_cuda.so";
    const char *env = getenv("INCA_CUDA_MODULE");
    char exe[PATH_MAX];
    const ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (env && *env) {
        snprintf(path, sizeof path, "%s", env);
    } else if (k > 0) {
        exe[k] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        snprintf(path, sizeof path, "%s/libinca_cuda.so", exe);
        if (access(path, R_OK) != 0) snprintf(path, sizeof path, "libinca_cuda.so");
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h) cuda_create = (kern_cuda_create_fn)(uintptr_t)dlsym(h, "kern_cuda_create");
    const char *e = cuda_create ? NULL : dlerror();
    if (!cuda_create)
        snprintf(cuda_why, sizeof cuda_why, "this build's CUDA backend (%s) could not be loaded: %s", path,
                 e ? e : "no kern_cuda_create in it");
}

static int cuda_context(const kern_ctx_opts_t *opts, kern_ctx_t **out) {
    pthread_once(&cuda_once, cuda_load);
    if (!cuda_create) return inca_fail(INCA_ERR, "%s", cuda_why);
    return cuda_create(opts, out);
}
#endif

static int kc_create_backend(const kern_ctx_opts_t *opts, kern_ctx_t **out);

/* the backend's context, then its accounting (kernels/memtrack.c) */
int kc_create(const kern_ctx_opts_t *opts, kern_ctx_t **out) {
    const char *dev = opts && opts->device ? opts->device : "cpu";
    kern_ctx_opts_t o = opts ? *opts : (kern_ctx_opts_t){0};
    o.device = dev;
    if (strncmp(dev, "cuda:", 5) == 0) {   /* cuda:N, a device by its ordinal */
        char *end = NULL;
        const long k = strtol(dev + 5, &end, 10);
        if (end == dev + 5 || *end || k < 0 || k > 4095)
            return inca_fail(INCA_EINVAL, "--device: expected cuda:N with N a device number, got '%s'", dev);
        o.device = "cuda";
        o.device_index = (int)k;
        o.rank_device = 0;
    }
    int rc = kc_create_backend(&o, out);
    if (rc == INCA_OK && (rc = kmt_create(&(*out)->mt)) != INCA_OK) kc_free(out);
    if (rc == INCA_OK) {
        kern_ctx_t *c = *out;
        snprintf(c->made_device, sizeof c->made_device, "%s", o.device);
        c->made = o;
        c->made.device = c->made_device;
    }
    return rc;
}

int kc_sibling(const kern_ctx_t *ctx, kern_ctx_t **out) {
    if (!ctx || ctx->made.device == NULL) {   /* kc_cpu()'s shared context */
        kern_ctx_opts_t o = {.device = "cpu"};
        return kc_create(&o, out);
    }
    kern_ctx_opts_t o = ctx->made;
    if (strcmp(o.device, "auto") == 0) o.device = kc_device(ctx) == KERN_DEV_CPU ? "cpu" : "cuda";
    return kc_create(&o, out);
}

static int kc_create_backend(const kern_ctx_opts_t *opts, kern_ctx_t **out) {
    *out = NULL;
    const char *dev = opts && opts->device ? opts->device : "cpu";
    if (strcmp(dev, "emu") == 0) {
        /* the emulated device's size: opts, else INCA_EMU_MEMORY (bytes; tests and the README's
         * simulation of a smaller GPU without one), else unlimited */
        int64_t cap = opts ? opts->emu_memory : 0;
        const char *env = getenv("INCA_EMU_MEMORY");
        if (cap <= 0 && env && *env) {   /* bytes, or with a K, M or G suffix (binary) */
            char *end = NULL;
            cap = strtoll(env, &end, 10);
            const int sh = end && (*end == 'K' || *end == 'k') ? 10 : end && (*end == 'M' || *end == 'm') ? 20
                         : end && (*end == 'G' || *end == 'g') ? 30 : 0;
            cap <<= sh;
        }
        return kern_emu_create(cap, out);
    }
    const int want_cuda = strcmp(dev, "cuda") == 0, want_auto = strcmp(dev, "auto") == 0;
    if (!want_cuda && !want_auto && strcmp(dev, "cpu") != 0)
        return inca_fail(INCA_EINVAL, "--device: expected cpu, cuda or auto, got '%s'", dev);
    char why[200] = "";
    if (want_cuda || want_auto) {
#ifdef INCA_HAS_CUDA
        kern_ctx_t *c = NULL;
        if (cuda_context(opts, &c) == INCA_OK) {
            *out = c;
            return INCA_OK;
        }
        snprintf(why, sizeof why, "%s", inca_errmsg());
#else
        snprintf(why, sizeof why, "this build has no CUDA backend (configure with the CUDA toolkit installed, "
                 "-DINCA_CUDA=ON)");
#endif
        /* no device is a runtime condition of this machine, not a usage error: exit 1 */
        if (want_cuda) return inca_fail(INCA_ERR, "--device cuda: %s", why);
    }
    kern_ctx_t *c = inca_calloc(1, sizeof *c);
    if (!c) return inca_fail(INCA_ENOMEM, "kernel context: out of memory");
    cpu_init(c);
    c->deterministic = opts ? opts->deterministic : 0;
    if (want_auto) snprintf(c->fallback, sizeof c->fallback, "%s", why);
    *out = c;
    return INCA_OK;
}

void kc_free(kern_ctx_t **pc) {
    if (!pc || !*pc) return;
    kern_ctx_t *c = *pc;
    *pc = NULL;
    if (c == &cpu_shared) return;
    kern_memtrack_t *mt = c->mt;   /* a backend's destroy may still release blocks */
    if (c->ops->destroy) c->ops->destroy(c);
    else inca_free(c);
    kmt_free(mt);
}
