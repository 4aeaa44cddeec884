/*
 * cuda_api.h — the table through which the executable reaches the CUDA
 * module (private to runtime/).
 *
 * Everything that needs CUDA, cuBLAS or NCCL is built into one shared
 * object, build/libstagecraft_cuda.so (backend_cuda.c, the two GPU
 * transports, the kernels), linked against those libraries. The executable
 * does not link them: device/cuda_load.c opens the module with dlopen the
 * first time `cuda` is asked for, and reads this one table from it; NCCL
 * itself is loaded by the module only when the nccl transport is chosen
 * (nccl_lib.c).
 * So a CPU run maps none of CUDA's libraries (hundreds of MB, which would
 * not even load under a small `ulimit -v`), and a machine where they are
 * missing gets one clear line instead of a binary that does not start.
 * Tested by: tests/cudastub/run.sh (the module loaded as libstagecraft_cuda.so), tests/unit/test_device.c.
 */
#ifndef SC_CUDA_API_H
#define SC_CUDA_API_H

#include <stddef.h>

#include "backend/backend.h"
#include "transport/transport.h"

#define SC_CUDA_API_SYMBOL "sc_cuda_api_v1"
#define SC_CUDA_API_VERSION 2
/* A checksum of the headers the table carries (cuda_api.h, backend.h,
 * transport.h), computed by the Makefile: a module built from other headers
 * than the executable is refused instead of called. */
#ifndef SC_CUDA_API_HASH
#define SC_CUDA_API_HASH 0UL
#endif

struct sc_cuda_api {
    int version;   /* SC_CUDA_API_VERSION */
    unsigned long api_hash; /* SC_CUDA_API_HASH */
    int has_nccl;  /* the nccl slots are filled (built with nccl.h) */
    /* 1 when NCCL loads here (the module loads libnccl.so.2 at run time,
     * nccl_lib.c); else 0 and why. */
    int (*nccl_usable)(char *why, size_t whylen);
    int (*devices)(char *info, size_t infolen);
    /* The 16-byte UUID of visible GPU gpu (cudaDeviceProp.uuid); 0 if none. */
    int (*gpu_uuid)(int gpu, unsigned char uuid[16]);
    sc_status (*backend_open)(int dev, size_t mem_cap, sc_backend **out, char *err,
                              size_t errlen);
    sc_status (*cuda_local_new)(int P, sc_backend *const *be, int max_tag, double timeout_s,
                                sc_transport **out, char *err, size_t errlen);
    void (*cuda_local_free)(sc_transport *tp);
    sc_status (*nccl_id)(unsigned char *id, char *err, size_t errlen);
    sc_status (*nccl_new)(int P, int n, const int *devs, sc_backend *const *be,
                          const unsigned char *id, double timeout_s, sc_transport **out,
                          char *err, size_t errlen);
    void (*nccl_free)(sc_transport *tp);
};

#endif
