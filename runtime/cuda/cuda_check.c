/*
 * cuda_check.c — the module's checks and small shared pieces: the one-line
 * message of a failed CUDA, cuBLAS or NCCL call (sc_cuda_format, for the
 * backend and the transports), the cuda backend's sticky failure
 * (backend_cuda.h), the calling thread's current GPU, the clock.
 *
 * An instance keeps its first failure only: later calls do nothing
 * (sc_cuda_ready says no), and the backend's sync returns it.
 */
#include "backend_cuda.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void sc_cuda_format(char *buf, size_t len, const char *file, int line, const char *call,
                    const char *reason)
{
    const char *base = strrchr(file, '/');
    int n = (int)strcspn(call, "(");
    snprintf(buf, len, "%s:%d: %.*s: %s", base ? base + 1 : file, line, n, call, reason);
}

int sc_cuda_fail(sc_cuda *c, const char *file, int line, const char *call, const char *reason)
{
    if (!c->failed) {
        char b[256];
        c->failed = 1;
        sc_cuda_format(b, sizeof b, file, line, call, reason);
        snprintf(c->err, sizeof c->err, "%s (GPU %d)", b, c->gpu);
    }
    return 0;
}

int sc_cuda_ck(sc_cuda *c, cudaError_t e, const char *file, int line, const char *call)
{
    return e == cudaSuccess ? 1 : sc_cuda_fail(c, file, line, call, cudaGetErrorString(e));
}

int sc_cuda_ckb(sc_cuda *c, cublasStatus_t e, const char *file, int line, const char *call)
{
    return e == CUBLAS_STATUS_SUCCESS ? 1
                                      : sc_cuda_fail(c, file, line, call, cublasGetStatusString(e));
}

double sc_cuda_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static _Thread_local int current_gpu = -1;

cudaError_t sc_cuda_use(int gpu)
{
    if (gpu == current_gpu)
        return cudaSuccess;
    cudaError_t e = cudaSetDevice(gpu);
    current_gpu = e == cudaSuccess ? gpu : -1;
    return e;
}

int sc_cuda_ready(sc_cuda *c)
{
    return !c->failed && CK(c, sc_cuda_use(c->gpu));
}
