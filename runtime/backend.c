/*
 * backend.c — opens a backend by name. The CUDA backend is linked in only
 * when the build found nvcc (SC_HAVE_CUDA); otherwise asking for it is one
 * clear line.
 */
#include "backend.h"

#include <stdio.h>
#include <string.h>

sc_status sc_backend_open(const char *name, int dev, size_t mem_cap, sc_backend **out, char *err,
                          size_t errlen)
{
    *out = NULL;
    if (strcmp(name, "cpu") == 0)
        return sc_backend_cpu_open(mem_cap, out, err, errlen);
    if (strcmp(name, "cuda") == 0) {
#ifdef SC_HAVE_CUDA
        return sc_backend_cuda_open(dev, mem_cap, out, err, errlen);
#else
        (void)dev;
        snprintf(err, errlen, "backend 'cuda' is not built into this binary (nvcc was not found "
                              "at build time; use --backend cpu)");
        return SC_ERR_ARG;
#endif
    }
    snprintf(err, errlen, "unknown backend '%s' (known: cpu, cuda)", name);
    return SC_ERR_ARG;
}

#ifndef SC_HAVE_CUDA
int sc_backend_cuda_devices(char *info, size_t infolen)
{
    if (info)
        snprintf(info, infolen, "built without CUDA");
    return 0;
}
#endif

void sc_backend_free(sc_backend *be)
{
    if (be)
        be->free_fn(be);
}
