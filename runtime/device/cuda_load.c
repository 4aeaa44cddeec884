/*
 * cuda_load.c — the CUDA entry points of backend.h and transport.h (the
 * cuda backend, the cuda-local and nccl transports), reached through the
 * CUDA module (cuda/cuda_api.h); device.c names them in its tables.
 *
 * The CUDA switch lives here and in the Makefile only. These entry points
 * load libstagecraft_cuda.so on first use, once per process, where
 * transport/module_find.h looks (STAGECRAFT_CUDA_MODULE, beside the
 * executable, build/ below its folder): a tree copied elsewhere (make
 * gpu-bundle) finds its own module, never another tree's. A module whose
 * table does not match this executable's headers (SC_CUDA_API_HASH) is
 * refused. Built without nvcc (no SC_HAVE_CUDA) the search is the same, so
 * a module built elsewhere (the tests' CUDA stand-in) still loads; only the
 * message when none is found differs.
 */
#include "backend/backend.h"
#include "transport/module_find.h"
#include "transport/transport.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cuda_api.h"

static const struct sc_cuda_api *api;
static char api_err[1024];
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void load_from(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(api_err, sizeof api_err, "backend 'cuda': cannot load its module: %s",
                 dlerror());
        return;
    }
    const struct sc_cuda_api *a = (const struct sc_cuda_api *)dlsym(h, SC_CUDA_API_SYMBOL);
    if (!a || a->version != SC_CUDA_API_VERSION || a->api_hash != SC_CUDA_API_HASH) {
        snprintf(api_err, sizeof api_err, "backend 'cuda': %.900s is not a module of this "
                 "stagecraft (built from other sources; rebuild with make)", path);
        return; /* left open: harmless, and dlclose of CUDA libraries is not */
    }
    api = a;
}

static void load(void)
{
    char path[4096];
    if (sc_module_find("libstagecraft_cuda.so", "STAGECRAFT_CUDA_MODULE", path, sizeof path) == 0) {
        load_from(path);
        return;
    }
#ifdef SC_HAVE_CUDA
    snprintf(api_err, sizeof api_err, "backend 'cuda': its module libstagecraft_cuda.so is "
             "missing (not beside the executable nor in %.800s/build; run make, or set "
             "STAGECRAFT_CUDA_MODULE)", path);
#else
    snprintf(api_err, sizeof api_err, "backend 'cuda' is not built into this binary (nvcc was "
             "not found at build time; use --backend cpu)");
#endif
}

/* The module's table, or NULL with the reason in err. */
static const struct sc_cuda_api *cuda(char *err, size_t errlen)
{
    pthread_once(&api_once, load);
    if (!api && err)
        snprintf(err, errlen, "%s", api_err);
    return api;
}

/* ---- the CUDA entry points of backend.h and transport.h ---- */

sc_status sc_backend_cuda_open(int dev, size_t mem_cap, sc_backend **out, char *err,
                               size_t errlen)
{
    *out = NULL;
    const struct sc_cuda_api *a = cuda(err, errlen);
    return a ? a->backend_open(dev, mem_cap, out, err, errlen) : SC_ERR_ARG;
}

int sc_backend_cuda_devices(char *info, size_t infolen)
{
    const struct sc_cuda_api *a = cuda(info, info ? infolen : 0);
    return a ? a->devices(info, infolen) : 0;
}

int sc_backend_cuda_uuid(int gpu, unsigned char uuid[16])
{
    const struct sc_cuda_api *a = cuda(NULL, 0);
    return a ? a->gpu_uuid(gpu, uuid) : 0;
}

sc_status sc_transport_cuda_local_new(int P, struct sc_backend *const *be, int max_tag,
                                      double timeout_s, sc_transport **out, char *err,
                                      size_t errlen)
{
    *out = NULL;
    const struct sc_cuda_api *a = cuda(err, errlen);
    return a ? a->cuda_local_new(P, be, max_tag, timeout_s, out, err, errlen) : SC_ERR_ARG;
}

void sc_transport_cuda_local_free(sc_transport *tp)
{
    const struct sc_cuda_api *a = tp ? cuda(NULL, 0) : NULL;
    if (a)
        a->cuda_local_free(tp);
}

int sc_transport_nccl_available(void)
{
    return sc_transport_nccl_usable(NULL, 0);
}

int sc_transport_nccl_usable(char *why, size_t whylen)
{
    const struct sc_cuda_api *a = cuda(why, whylen);
    if (a && !a->has_nccl) {
        if (why)
            snprintf(why, whylen, "the nccl transport is not built into this binary (nccl.h "
                     "was not found at build time)");
        return 0;
    }
    char buf[1024];
    int ok = a && a->nccl_usable(buf, sizeof buf);
    if (a && !ok && why)
        snprintf(why, whylen, "%s", buf);
    return ok;
}

/* The table with its nccl slots, or NULL with the reason in err. */
static const struct sc_cuda_api *nccl(char *err, size_t errlen)
{
    const struct sc_cuda_api *a = cuda(err, errlen);
    if (a && !a->has_nccl) {
        if (err)
            snprintf(err, errlen, "the nccl transport is not built into this binary (nccl.h "
                     "was not found at build time)");
        return NULL;
    }
    return a;
}

sc_status sc_transport_nccl_id(unsigned char *id, char *err, size_t errlen)
{
    const struct sc_cuda_api *a = nccl(err, errlen);
    return a ? a->nccl_id(id, err, errlen) : SC_ERR_ARG;
}

sc_status sc_transport_nccl_new(int P, int n, const int *devs, struct sc_backend *const *be,
                                const unsigned char *id, double timeout_s, sc_transport **out,
                                char *err, size_t errlen)
{
    *out = NULL;
    const struct sc_cuda_api *a = nccl(err, errlen);
    return a ? a->nccl_new(P, n, devs, be, id, timeout_s, out, err, errlen) : SC_ERR_ARG;
}

void sc_transport_nccl_free(sc_transport *tp)
{
    const struct sc_cuda_api *a = tp ? nccl(NULL, 0) : NULL;
    if (a)
        a->nccl_free(tp);
}
