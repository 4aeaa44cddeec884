/*
 * gpu_skip.h — the start of every GPU test (tests/gpu/test_*.c): whether
 * there is a GPU to test. Skipped only when there is none (no driver or
 * GPU, or a binary built without CUDA); a module that does not load, or a
 * CUDA that fails otherwise, is a failure.
 *
 *     int rc = gpu_skip("backend-cuda", info, sizeof info);
 *     if (rc >= 0) return rc;          // skipped (0) or unusable (1), said
 */
#ifndef SC_GPU_SKIP_H
#define SC_GPU_SKIP_H

#include <stdio.h>
#include <string.h>

#include "backend/backend.h"

/* -1 with the GPUs' count in *n and GPU 0's name in info when there is a
 * GPU; else prints the suite's verdict line and returns main's exit code. */
static inline int gpu_skip(const char *suite, int *n, char *info, size_t len)
{
    *n = sc_backend_cuda_devices(info, len);
    if (*n >= 1)
        return -1;
    if (strstr(info, "no NVIDIA driver or GPU found") || strstr(info, "not built into this binary")) {
        printf("SKIP: no GPU (%s)\n", info);
        printf("%s: 0 passed, 0 failed, 1 skipped\n", suite);
        return 0;
    }
    printf("%s: 0 passed, 1 failed (the cuda backend is unusable: %s)\n", suite, info);
    return 1;
}

#endif
