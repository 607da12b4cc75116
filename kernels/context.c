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
#include <string.h>

const kern_ops_t *kern_cpu_ops(void);   /* kernels/cpu/backend_cpu.c */
int kern_emu_create(kern_ctx_t **out);  /* kernels/cpu/backend_emu.c */

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

int kc_create(const kern_ctx_opts_t *opts, kern_ctx_t **out) {
    *out = NULL;
    const char *dev = opts && opts->device ? opts->device : "cpu";
    if (strcmp(dev, "emu") == 0) return kern_emu_create(out);
    const int want_cuda = strcmp(dev, "cuda") == 0, want_auto = strcmp(dev, "auto") == 0;
    if (!want_cuda && !want_auto && strcmp(dev, "cpu") != 0)
        return inca_fail(INCA_EINVAL, "--device: expected cpu, cuda or auto, got '%s'", dev);
    char why[200] = "";
    if (want_cuda || want_auto) {
#ifdef INCA_HAS_CUDA
        kern_ctx_t *c = NULL;
        if (kern_cuda_create(opts, &c) == INCA_OK) {
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
    if (c->ops->destroy) c->ops->destroy(c);
    else inca_free(c);
}
