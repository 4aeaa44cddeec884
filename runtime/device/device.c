/*
 * device.c — the table of device kinds and of their transports (device.h).
 * A new kind is one row here plus its backend; the run driver needs no
 * change unless the kind needs a property no row has yet.
 */
#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(SC_NCCL_ID_BYTES <= SC_TRANSPORT_ID_MAX, "nccl's id fits a transport id");

/* What a device takes besides its tensors, allocated after the memory
 * check: the CUDA context is already there when the free memory is read
 * (the backends are open), but cuBLAS allocates its workspace at the first
 * product (32 MiB on Hopper), and an NCCL communicator its buffers (a few
 * MiB per protocol, channel and peer) when it starts. */
#define CUBLAS_WORKSPACE_BYTES (32.0 * 1024 * 1024)
#define NCCL_BUFFER_BYTES (256.0 * 1024 * 1024)

/* ---- transports ---- */

static sc_status local_threads(int P, sc_backend *const *be, int max_tag, double timeout_s,
                               sc_transport **out, char *err, size_t errlen)
{
    (void)be;
    if (sc_transport_local_new(P, max_tag, timeout_s, out) != SC_OK) {
        snprintf(err, errlen, "out of memory creating the local transport");
        return SC_ERR_NOMEM;
    }
    return SC_OK;
}

static sc_status mpi_rank(int P, int rank, sc_backend *be, const unsigned char *id, int max_tag,
                          double timeout_s, sc_transport **out, char *err, size_t errlen)
{
    (void)P, (void)rank, (void)be, (void)id;
    return sc_transport_mpi_new(max_tag, timeout_s, out, err, errlen);
}

/* All P devices of one communicator in this process: devs 0..P-1. */
static sc_status nccl_threads(int P, sc_backend *const *be, int max_tag, double timeout_s,
                              sc_transport **out, char *err, size_t errlen)
{
    (void)max_tag;
    *out = NULL;
    int *devs = malloc((size_t)P * sizeof(int));
    if (!devs) {
        snprintf(err, errlen, "out of memory");
        return SC_ERR_NOMEM;
    }
    for (int d = 0; d < P; d++)
        devs[d] = d;
    sc_status st = sc_transport_nccl_new(P, P, devs, be, NULL, timeout_s, out, err, errlen);
    free(devs);
    return st;
}

static sc_status nccl_rank(int P, int rank, sc_backend *be, const unsigned char *id, int max_tag,
                           double timeout_s, sc_transport **out, char *err, size_t errlen)
{
    (void)max_tag;
    return sc_transport_nccl_new(P, 1, &rank, &be, id, timeout_s, out, err, errlen);
}

static const sc_transport_kind tp_local = {
    .name = "local",
    .threads_new = local_threads,
    .free = sc_transport_local_free,
};

static const sc_transport_kind tp_mpi = {
    .name = "mpi",
    .rank_new = mpi_rank,
    .free = sc_transport_mpi_free,
};

static const sc_transport_kind tp_cuda_local = {
    .name = "cuda-local",
    .graph = 1,
    .threads_new = sc_transport_cuda_local_new,
    .free = sc_transport_cuda_local_free,
};

static const sc_transport_kind tp_nccl = {
    .name = "nccl",
    .label = "NCCL",
    .gpu_each = 1,
    .in_order = 1,
    .lazy = 1,
    .start_bytes = NCCL_BUFFER_BYTES,
    .usable = sc_transport_nccl_usable,
    .threads_new = nccl_threads,
    .id_bytes = SC_NCCL_ID_BYTES,
    .id_new = sc_transport_nccl_id,
    .rank_new = nccl_rank,
    .free = sc_transport_nccl_free,
};

/* ---- device kinds ---- */

static sc_status cpu_open(int dev, size_t mem_cap, sc_backend **out, char *err, size_t errlen)
{
    (void)dev;
    return sc_backend_cpu_open(mem_cap, out, err, errlen);
}

static const sc_transport_kind *const cpu_threads[] = {&tp_local, NULL};
static const sc_transport_kind *const cuda_threads[] = {&tp_nccl, &tp_cuda_local, NULL};

static const sc_device_kind kinds[] = {
    {
        .name = "cpu",
        .open = cpu_open,
        .tolerance = 1e-5,
        .host_memory = 1,
        .threads = cpu_threads,
        .ranks = &tp_mpi,
    },
    {
        .name = "cuda",
        .open = sc_backend_cuda_open,
        .count = sc_backend_cuda_devices,
        .uuid = sc_backend_cuda_uuid,
        /* cuBLAS sums in another order, tanhf and exp differ (docs/run.md#check) */
        .tolerance = 1e-4,
        .gpu_memory = 1,
        .start_bytes = CUBLAS_WORKSPACE_BYTES,
        .threads = cuda_threads,
        .ranks = &tp_nccl,
    },
};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

const sc_device_kind *sc_device_kind_find(const char *name, char *err, size_t errlen)
{
    for (int i = 0; i < NKINDS; i++)
        if (strcmp(kinds[i].name, name) == 0)
            return &kinds[i];
    size_t n = (size_t)snprintf(err, errlen, "unknown backend '%s' (known:", name);
    for (int i = 0; i < NKINDS && n < errlen; i++)
        n += (size_t)snprintf(err + n, errlen - n, "%s %s", i ? "," : "", kinds[i].name);
    if (n < errlen)
        snprintf(err + n, errlen - n, ")");
    return NULL;
}

sc_status sc_backend_open(const char *name, int dev, size_t mem_cap, sc_backend **out, char *err,
                          size_t errlen)
{
    *out = NULL;
    const sc_device_kind *k = sc_device_kind_find(name, err, errlen);
    return k ? k->open(dev, mem_cap, out, err, errlen) : SC_ERR_ARG;
}
