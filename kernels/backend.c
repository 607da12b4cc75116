/* The backend table: "cpu" is always present; "cuda" is present when the library was built with
 * CUDA sources (INCA_HAS_CUDA, kernels/cuda/ provides kern_cuda_backend()). Tested in
 * test_kernels.c (lookup, unknown names, CUDA absent). */
#include "kernels/kernels.h"
#include "core/status.h"
#include <string.h>

#ifdef INCA_HAS_CUDA
const kern_backend_t *kern_cuda_backend(void);   /* NULL + message when no device is present */
#endif

static const kern_backend_t kern_cpu_backend = {
    .name = "cpu",
    .spmm = kern_spmm,
    .gemm = kern_gemm,
};

const kern_backend_t *kern_backend_get(const char *name) {
    if (!name || strcmp(name, "cpu") == 0) return &kern_cpu_backend;
    if (strcmp(name, "cuda") == 0) {
#ifdef INCA_HAS_CUDA
        return kern_cuda_backend();
#else
        inca_fail(INCA_EINVAL, "backend 'cuda': this build has no CUDA support (rebuild with the CUDA toolkit and kernels/cuda sources)");
        return NULL;
#endif
    }
    inca_fail(INCA_EINVAL, "unknown backend '%s' (expected cpu|cuda)", name);
    return NULL;
}
