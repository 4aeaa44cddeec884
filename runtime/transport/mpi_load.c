/*
 * mpi_load.c — the entry points of sc_mpi.h and the mpi transport of
 * transport.h, reached through the MPI module (mpi_api.h says why).
 *
 * The module, libstagecraft_mpi.so, is loaded at the first call that needs
 * MPI (sc_mpi_init: `run` started by mpirun), once per process, where
 * module_find.h looks (STAGECRAFT_MPI_MODULE, beside the executable,
 * build/ below its folder). It is opened RTLD_GLOBAL: OpenMPI's own plugins, which it opens in
 * MPI_Init, look up libmpi's symbols in the global scope. When MPI itself
 * is missing at run time (libmpi.so.40 not installed) the loader's message
 * says so in one line. A module that cannot be loaded is SC_ERR_ARG (exit
 * 3, as a missing CUDA module). Built without MPI (no SC_HAVE_MPI) no
 * module is looked for and every call says so.
 */
#include "module_find.h"
#include "mpi_api.h"
#include "sc_mpi.h"
#include "transport.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sc_mpi_launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_SIZE") != NULL;
}

#ifdef SC_HAVE_MPI

static const struct sc_mpi_api *api;
static char api_err[1024];
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void load_from(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        snprintf(api_err, sizeof api_err, "mpi: cannot load MPI (%s; install OpenMPI, "
                 "or run without mpirun to use threads)", dlerror());
        return;
    }
    const struct sc_mpi_api *a = (const struct sc_mpi_api *)dlsym(h, SC_MPI_API_SYMBOL);
    if (!a || a->version != SC_MPI_API_VERSION || a->size != sizeof(struct sc_mpi_api)) {
        snprintf(api_err, sizeof api_err, "mpi: %.900s is not a module of this stagecraft "
                 "(built from other sources; rebuild with make)", path);
        return;
    }
    api = a;
}

static void load(void)
{
    char path[4096];
    if (sc_module_find("libstagecraft_mpi.so", "STAGECRAFT_MPI_MODULE", path, sizeof path) == 0) {
        load_from(path);
        return;
    }
    snprintf(api_err, sizeof api_err, "mpi: the MPI module libstagecraft_mpi.so is missing (not "
             "beside the executable nor in %.800s/build; run make, or set "
             "STAGECRAFT_MPI_MODULE)", path);
}

/* The module's table, or NULL with the reason in err. */
static const struct sc_mpi_api *mpi(char *err, size_t errlen)
{
    pthread_once(&api_once, load);
    if (!api && err && errlen)
        snprintf(err, errlen, "%s", api_err);
    return api;
}

int sc_mpi_available(void)
{
    return 1;
}

static int threads; /* MPI gave MPI_THREAD_MULTIPLE */

static sc_status init(int *rank, int *size, int want, double timeout_s, char *err, size_t errlen)
{
    *rank = 0;
    *size = 1;
    threads = want;
    const struct sc_mpi_api *a = mpi(err, errlen);
    sc_status st = a ? a->init(rank, size, &threads, timeout_s, err, errlen) : SC_ERR_ARG;
    threads = !st && threads;
    return st;
}

sc_status sc_mpi_init(int *rank, int *size, double timeout_s, char *err, size_t errlen)
{
    return init(rank, size, 0, timeout_s, err, errlen);
}

sc_status sc_mpi_init_threads(int *rank, int *size, double timeout_s, char *err, size_t errlen)
{
    return init(rank, size, 1, timeout_s, err, errlen);
}

int sc_mpi_threads(void)
{
    return threads;
}

sc_status sc_mpi_max(double *v, int n, const char *what, double timeout_s, char *err,
                     size_t errlen)
{
    const struct sc_mpi_api *a = mpi(err, errlen);
    return a ? a->max(v, n, what, timeout_s, err, errlen) : SC_ERR_ARG;
}

sc_status sc_mpi_barrier(double timeout_s, char *err, size_t errlen)
{
    const struct sc_mpi_api *a = mpi(err, errlen);
    return a ? a->barrier(timeout_s, err, errlen) : SC_ERR_ARG;
}

sc_status sc_mpi_bcast(void *buf, int n, int root, double timeout_s, char *err, size_t errlen)
{
    const struct sc_mpi_api *a = mpi(err, errlen);
    return a ? a->bcast(buf, n, root, timeout_s, err, errlen) : SC_ERR_ARG;
}

sc_status sc_mpi_local(int *local_rank, int *local_size, char *err, size_t errlen)
{
    *local_rank = 0;
    *local_size = 1;
    const struct sc_mpi_api *a = mpi(err, errlen);
    return a ? a->local(local_rank, local_size, err, errlen) : SC_ERR_ARG;
}

void sc_mpi_finish(int code)
{
    /* MPI is started only through the module: none loaded, nothing to end
     * (and nothing to load: the caller's thread is the one that loaded it). */
    if (api)
        api->finish(code);
}

sc_status sc_transport_mpi_new(int max_tag, double timeout_s, sc_transport **out, char *err,
                               size_t errlen)
{
    *out = NULL;
    const struct sc_mpi_api *a = mpi(err, errlen);
    return a ? a->transport_new(-1, 0, max_tag, timeout_s, out, err, errlen) : SC_ERR_ARG;
}

sc_status sc_transport_mpi_split_new(int color, int key, int max_tag, double timeout_s,
                                     sc_transport **out, char *err, size_t errlen)
{
    *out = NULL;
    const struct sc_mpi_api *a = mpi(err, errlen);
    return a ? a->transport_new(color, key, max_tag, timeout_s, out, err, errlen) : SC_ERR_ARG;
}

void sc_transport_mpi_free(sc_transport *tp)
{
    if (tp && api) /* a transport comes from the module */
        api->transport_free(tp);
}

#else /* built without MPI */

int sc_mpi_available(void)
{
    return 0;
}

sc_status sc_transport_mpi_new(int max_tag, double timeout_s, sc_transport **out, char *err,
                               size_t errlen)
{
    (void)max_tag;
    (void)timeout_s;
    *out = NULL;
    snprintf(err, errlen, "this stagecraft was built without MPI (install libopenmpi-dev and "
             "rebuild)");
    return SC_ERR_ARG;
}

void sc_transport_mpi_free(sc_transport *tp)
{
    (void)tp;
}

sc_status sc_transport_mpi_split_new(int color, int key, int max_tag, double timeout_s,
                                     sc_transport **out, char *err, size_t errlen)
{
    (void)color;
    (void)key;
    return sc_transport_mpi_new(max_tag, timeout_s, out, err, errlen);
}

sc_status sc_mpi_init(int *rank, int *size, double timeout_s, char *err, size_t errlen)
{
    (void)timeout_s;
    *rank = 0;
    *size = 1;
    snprintf(err, errlen, "started by mpirun, but this stagecraft was built without MPI "
             "(install libopenmpi-dev and rebuild)");
    return SC_ERR_ARG;
}

sc_status sc_mpi_init_threads(int *rank, int *size, double timeout_s, char *err, size_t errlen)
{
    return sc_mpi_init(rank, size, timeout_s, err, errlen);
}

int sc_mpi_threads(void)
{
    return 0;
}

sc_status sc_mpi_max(double *v, int n, const char *what, double timeout_s, char *err,
                     size_t errlen)
{
    (void)v;
    (void)n;
    (void)what;
    (void)timeout_s;
    snprintf(err, errlen, "built without MPI");
    return SC_ERR_ARG;
}

sc_status sc_mpi_barrier(double timeout_s, char *err, size_t errlen)
{
    (void)timeout_s;
    snprintf(err, errlen, "built without MPI");
    return SC_ERR_ARG;
}

sc_status sc_mpi_bcast(void *buf, int n, int root, double timeout_s, char *err, size_t errlen)
{
    (void)buf;
    (void)n;
    (void)root;
    (void)timeout_s;
    snprintf(err, errlen, "built without MPI");
    return SC_ERR_ARG;
}

sc_status sc_mpi_local(int *local_rank, int *local_size, char *err, size_t errlen)
{
    *local_rank = 0;
    *local_size = 1;
    snprintf(err, errlen, "built without MPI");
    return SC_ERR_ARG;
}

void sc_mpi_finish(int code)
{
    (void)code;
}

#endif
