/*
 * cuda_module.c — the one symbol libstagecraft_cuda.so exports (cuda_api.h):
 * the table of its entry points. The module is built with hidden
 * visibility, so nothing else of it can clash with the executable.
 */
#include "cuda_api.h"
#include "cuda_impl.h"

__attribute__((visibility("default"))) extern const struct sc_cuda_api sc_cuda_api_v1;

const struct sc_cuda_api sc_cuda_api_v1 = {
    .version = SC_CUDA_API_VERSION,
    .api_hash = SC_CUDA_API_HASH,
#ifdef SC_HAVE_NCCL
    .has_nccl = 1,
    .nccl_usable = sc_cuda_nccl_usable,
    .nccl_id = sc_cuda_nccl_id,
    .nccl_new = sc_cuda_nccl_new,
    .nccl_free = sc_cuda_nccl_free,
#endif
    .devices = sc_cuda_devices,
    .gpu_uuid = sc_cuda_gpu_uuid,
    .backend_open = sc_cuda_open,
    .cuda_local_new = sc_cuda_local_new,
    .cuda_local_free = sc_cuda_local_free,
};
