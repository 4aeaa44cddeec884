/*
 * cuda_runtime.h of the CUDA STAND-IN — a TEST DOUBLE, used only by the
 * tests (tests/cudastub/README.md), never shipped. It declares the subset of
 * the CUDA runtime that runtime/cuda/ calls, with the real names, so the
 * module's own source compiles against it unchanged; cudastub.c implements
 * it on the CPU (streams are threads). Values of the enums follow the real
 * header where the module compares them (cudaErrorNotReady,
 * cudaErrorMemoryAllocation); nothing here is ABI-compatible with CUDA.
 *
 * Compiled as C++ with SC_CUDASTUB_KERNELS (the host build of
 * runtime/cuda/cuda_kernels.cu), it also gives the kernel language:
 * __global__, __shared__, __syncthreads, blockIdx and friends, and the
 * launch macro that tests/cudastub/Makefile's rewrite of `k<<<g, b, 0, s>>>(...)`
 * calls.
 */
#ifndef SC_CUDASTUB_RUNTIME_H
#define SC_CUDASTUB_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorPeerAccessAlreadyEnabled = 704,
    cudaErrorNotSupported = 801,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureUnmatched = 903,
    cudaErrorStreamCaptureUnjoined = 904,
    cudaErrorStreamCaptureIsolation = 905,
    cudaErrorCapturedEvent = 907,
    cudaErrorUnknown = 999
} cudaError_t;

typedef struct sc_stub_stream *cudaStream_t;
typedef struct sc_stub_event *cudaEvent_t;
typedef struct sc_stub_pool *cudaMemPool_t;
typedef struct sc_stub_graph *cudaGraph_t;
typedef struct sc_stub_graph_exec *cudaGraphExec_t;

enum cudaStreamCaptureStatus {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2
};
enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2
};

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};

enum cudaDeviceAttr { cudaDevAttrMemoryPoolsSupported = 115 };
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };

#define cudaStreamNonBlocking 0x01
#define cudaEventDisableTiming 0x02
#define cudaHostAllocPortable 0x01

typedef struct cudaUUID_st { char bytes[16]; } cudaUUID_t;

struct cudaDeviceProp {
    char name[256];
    cudaUUID_t uuid;
    size_t totalGlobalMem;
    int major, minor;
};

const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int dev);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaGetDevice(int *dev);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer);
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t ev, unsigned flags);

/* Stream capture and graphs (cudastub_graph.c): the work queued on a
 * capturing stream, and on the streams that join its capture by waiting for
 * an event recorded in it, is recorded instead of run; a launch replays it
 * in capture order on the launching stream. A synchronizing call on a
 * capturing stream or a captured event invalidates the capture, as on a GPU. */
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t ev);
cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s);
cudaError_t cudaEventQuery(cudaEvent_t ev);
cudaError_t cudaEventSynchronize(cudaEvent_t ev);

cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s);
cudaError_t cudaFreeAsync(void *p, cudaStream_t s);
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s);
cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev,
                                size_t bytes, cudaStream_t s);
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int dev);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value);
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep);

/* ---- the stand-in's own entry points (not CUDA; for cublas/nccl stand-ins
 * and the kernel launches of the host build) ---- */

/* Queues fn(arg) on stream s; it runs on the stream's thread in order after
 * the random delay. free_fn(arg) (may be NULL) runs after it or when the
 * stream is torn down. Returns cudaErrorInvalidResourceHandle for a
 * destroyed stream, cudaErrorInvalidDevice when s belongs to another GPU
 * than the calling thread's current one (what a launch would do). */
cudaError_t sc_cudastub_enqueue(cudaStream_t s, void (*fn)(void *), void *arg,
                                void (*free_fn)(void *), const char *what);
/* Checks, on the stream's thread at execution, that [p, p + bytes) lies in
 * a live allocation (device memory of gpu when gpu >= 0, else any device or
 * pinned host memory; pageable host memory passes when host_ok). A use
 * after free, before the allocation is reached in stream order, or out of
 * bounds is reported (a violation: stderr, the GPU's context faulted, the
 * process's exit status 86). Returns 1 when fine. */
int sc_cudastub_check(const void *p, size_t bytes, int gpu, int host_ok, const char *what);
#define SC_STUB_THIS_STREAM (-2) /* gpu: the GPU of the stream running the check */
/* The GPU of stream s, and the calling thread's current device. */
int sc_cudastub_stream_gpu(cudaStream_t s);
int sc_cudastub_current(void);
/* Reports a violation found by another part of the stand-in. */
void sc_cudastub_violation(int gpu, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records e as the thread's last error (what every failing call does). */
cudaError_t sc_cudastub_set_error(cudaError_t e);
/* Kernel launches of the host build: runs fn(arg) as grid x block threads
 * (blockIdx, threadIdx set for each), on stream s. */
cudaError_t sc_cudastub_launch(unsigned grid, unsigned block, cudaStream_t s,
                               void (*fn)(void *), void *arg, void (*free_fn)(void *),
                               const void *kernel);
/* Inside a launched kernel: the barrier of the thread's block. */
void sc_cudastub_syncthreads(void);
typedef struct sc_stub_dim3 { unsigned x, y, z; } sc_stub_dim3;
sc_stub_dim3 *sc_cudastub_block_idx(void);
sc_stub_dim3 *sc_cudastub_thread_idx(void);
sc_stub_dim3 *sc_cudastub_block_dim(void);
sc_stub_dim3 *sc_cudastub_grid_dim(void);

#ifdef __cplusplus
}
#endif

#if defined(__cplusplus) && defined(SC_CUDASTUB_KERNELS)
/* The kernel language on the host: each emulated thread is a coroutine of
 * its block (cudastub.c), so __shared__ is per OS thread (a stream runs one
 * block at a time) and __syncthreads switches to the block's next thread. */
#include <cmath>
#include <math.h>
#include <utility>
#define __global__ static
#define __device__
#define __host__
#define __shared__ static thread_local
#define __syncthreads() sc_cudastub_syncthreads()
#define blockIdx (*sc_cudastub_block_idx())
#define threadIdx (*sc_cudastub_thread_idx())
#define blockDim (*sc_cudastub_block_dim())
#define gridDim (*sc_cudastub_grid_dim())
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }

template <typename T> static inline void sc_stub_arg_check(const char *, T) {}
template <typename T> static inline void sc_stub_arg_check(const char *k, T *p)
{
    sc_cudastub_check((const void *)p, 1, SC_STUB_THIS_STREAM, 0, k);
}
template <typename F> static void sc_stub_run(void *f) { (*(F *)f)(); }
template <typename F> static void sc_stub_del(void *f) { delete (F *)f; }
template <typename F>
static cudaError_t sc_stub_launch(unsigned g, unsigned b, cudaStream_t s, F f, const void *k)
{
    F *h = new F(std::move(f));
    return sc_cudastub_launch(g, b, s, sc_stub_run<F>, h, sc_stub_del<F>, k);
}
/* k<<<g, b, 0, s>>>(args) is rewritten to SC_CUDASTUB_LAUNCH(g, b, s, k, args):
 * pointer arguments must point into live memory when the kernel runs. A
 * launch's failure is the launch's last error, as with <<<>>>. */
#define SC_CUDASTUB_LAUNCH(g, b, s, k, ...)                                            \
    (void)sc_stub_launch((g), (b), (s), [=]() {                                        \
        auto chk = [](auto... a) { (sc_stub_arg_check(#k, a), ...); };                 \
        chk(__VA_ARGS__);                                                              \
        k(__VA_ARGS__);                                                                \
    }, (const void *)k)
#endif

#endif
