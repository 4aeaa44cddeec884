/*
 * cudastub_device.c — devices of the CUDA STAND-IN (a test double,
 * tests/cudastub/README.md; what it models: cudastub.c): SC_CUDASTUB_GPUS
 * GPUs filtered by CUDA_VISIBLE_DEVICES, the thread's current device and
 * last error, the memory left on a GPU.
 */
#define _GNU_SOURCE
#include "cuda_runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudastub_impl.h"

/* ---- devices ---- */

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInsufficientDriver:
        return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorPeerAccessAlreadyEnabled:
        return "peer access is already enabled";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
        return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched:
        return "the capture was not initiated in this stream";
    case cudaErrorStreamCaptureUnjoined:
        return "capture sequence contains a fork that was not joined to the primary stream";
    case cudaErrorStreamCaptureIsolation:
        return "dependency created on uncaptured work in another stream";
    case cudaErrorCapturedEvent:
        return "operation not permitted on an event last recorded in a capturing stream";
    default: return "unknown error";
    }
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = stub_last_error;
    stub_last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return stub_last_error;
}

cudaError_t cudaGetDeviceCount(int *n)
{
    pthread_once(&stub_G.once, stub_init);
    *n = stub_G.nvis;
    RET(stub_G.nvis ? cudaSuccess : cudaErrorNoDevice);
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
    pthread_once(&stub_G.once, stub_init);
    if (dev < 0 || dev >= stub_G.nvis)
        RET(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "CUDA stand-in (test double)");
    snprintf(p->uuid.bytes, sizeof p->uuid.bytes, "cudastub-gpu%02d", stub_G.vis[dev]);
    p->totalGlobalMem = stub_G.mem;
    p->major = 9;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int dev)
{
    pthread_once(&stub_G.once, stub_init);
    if (dev < 0 || dev >= stub_G.nvis)
        RET(cudaErrorInvalidDevice);
    *value = attr == cudaDevAttrMemoryPoolsSupported && !getenv("SC_CUDASTUB_NO_POOLS");
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev)
{
    pthread_once(&stub_G.once, stub_init);
    if (dev < 0 || dev >= stub_G.nvis)
        RET(stub_G.nvis ? cudaErrorInvalidDevice : cudaErrorNoDevice);
    stub_current = dev;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev)
{
    *dev = stub_current;
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer)
{
    pthread_once(&stub_G.once, stub_init);
    if (dev < 0 || dev >= stub_G.nvis || peer < 0 || peer >= stub_G.nvis)
        RET(cudaErrorInvalidDevice);
    *can = dev != peer;
    return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags)
{
    (void)flags;
    if (peer < 0 || peer >= stub_G.nvis || peer == stub_current)
        RET(cudaErrorInvalidDevice);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    stub_lock();
    if (stub_current >= stub_G.nvis) {
        stub_unlock();
        RET(cudaErrorInvalidDevice);
    }
    size_t used = stub_G.used[stub_current] + CONTEXT_BYTES;
    *total_bytes = stub_G.mem;
    *free_bytes = used < stub_G.mem ? stub_G.mem - used : 0;
    stub_unlock();
    return cudaSuccess;
}
