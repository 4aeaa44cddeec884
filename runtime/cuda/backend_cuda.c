/*
 * backend_cuda.c — the cuda backend (backend.h): cuBLAS for the matrix
 * products, the kernels of cuda_kernels.cu for the rest; the decoder's
 * slots are backend_cuda_dec.c's, the checks cuda_check.c's (the instance's
 * state is in backend_cuda.h, private to these files).
 *
 * Streams. Each instance (one per pipeline device; several may share a GPU
 * when devices are emulated) has three non-blocking streams: `compute` for
 * every pass's work, `d2h` and `h2d` for the offload copies, one per
 * direction so that they overlap each other and the compute. A copy waits
 * (cudaStreamWaitEvent) for an event recorded on the compute stream when it
 * starts, so it sees the compute queued before it; copy_wait blocks the host
 * on the copy's own event (cudaEventSynchronize), which is what the contract
 * asks: after it, dst is complete for any later work and src may be reused.
 *
 * A pair's lane (lane_open, docs/run.md#overlapped-pairs) is a second
 * instance on the same GPU: its own compute stream and cuBLAS handle, the
 * other half of an overlapped pair queued there from another host thread;
 * lane_fork and lane_join order the two streams with an event each way.
 *
 * Host memory for offload is pinned (cudaHostAlloc, portable across GPUs);
 * freed blocks are kept for reuse by size, since pinning is slow.
 *
 * Memory. alloc is cudaMallocAsync on the compute stream from the GPU's
 * default memory pool (kept, not returned to the driver between passes), and
 * free is cudaFreeAsync on the compute stream: stream-ordered, so freeing a
 * tensor never waits for the device and a reuse comes after the work that
 * read it. The cap counts requested bytes, as on the cpu. The loss's few
 * scratch bytes (targets and one double per row) are outside the cap, and
 * so is attn_bwd's dP of one KV head's group (heads / kv_heads x seq x seq
 * floats, grown stream-ordered, kept).
 *
 * Numerics. cuBLAS runs in CUBLAS_DEFAULT_MATH: float32 throughout, no TF32
 * tensor cores (STAGECRAFT_CUDA_TF32=1 allows them, for benchmarks only).
 * cuBLAS and the kernels are deterministic (fixed reduction trees, no
 * atomics), so a run repeats bit for bit; against the cpu the accumulation
 * order differs, hence the tolerance of docs/run.md#check.
 *
 * Errors. A failed call records one line (file, call, reason, GPU) and makes
 * the instance inert: later slots do nothing, sync returns SC_ERR_RUNTIME.
 * Out of memory is not a failure: alloc and host_alloc return NULL and the
 * caller says what did not fit.
 */
#include "backend/backend.h"
#include "backend_cuda.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- memory ---- */

static void *cu_alloc(void *ctx, size_t bytes)
{
    sc_cuda *c = ctx;
    if (c->cap && (bytes > c->cap || c->used > c->cap - bytes))
        return NULL;
    if (!sc_cuda_ready(c))
        return NULL;
    void *p = NULL;
    cudaError_t e = cudaMallocAsync(&p, bytes ? bytes : 1, c->compute);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError(); /* out of memory is not sticky */
        return NULL;
    }
    if (!sc_cuda_ck(c, e, __FILE__, __LINE__, "cudaMallocAsync"))
        return NULL;
    c->used += bytes;
    return p;
}

static void cu_free(void *ctx, void *p, size_t bytes)
{
    sc_cuda *c = ctx;
    if (!p)
        return;
    c->used -= bytes;
    if (sc_cuda_ready(c))
        CK(c, cudaFreeAsync(p, c->compute));
}

static void cu_upload(void *ctx, void *dst, const void *src, size_t bytes)
{
    sc_cuda *c = ctx;
    if (sc_cuda_ready(c) && CK(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->compute)))
        CK(c, cudaStreamSynchronize(c->compute)); /* src is the caller's again */
}

static void cu_download(void *ctx, void *dst, const void *src, size_t bytes)
{
    sc_cuda *c = ctx;
    if (sc_cuda_ready(c) && CK(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->compute)))
        CK(c, cudaStreamSynchronize(c->compute));
    if (c->failed)
        memset(dst, 0xff, bytes); /* NaN, never stale data that could pass a check */
}

/* ---- compute, queued on the compute stream ---- */

static void cu_gemm(void *ctx, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                    const float *B, float beta, float *C)
{
    sc_cuda *c = ctx;
    if (!sc_cuda_ready(c))
        return;
    /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
     * same memory read as the transposes, with the operands swapped. */
    CKB(c, cublasSgemm(c->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                       N, M, K, &alpha, B, tb ? K : N, A, ta ? M : K, &beta, C, N));
}

static void cu_copy(void *ctx, size_t n, const float *src, float *dst)
{
    sc_cuda *c = ctx;
    if (sc_cuda_ready(c))
        CK(c, cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, c->compute));
}

static void cu_tanh_fwd(void *ctx, size_t n, float *x)
{
    sc_cuda *c = ctx;
    if (sc_cuda_ready(c))
        CK(c, sc_cuda_tanh_fwd(c->compute, n, x));
}

static void cu_tanh_bwd(void *ctx, size_t n, const float *a, float *g)
{
    sc_cuda *c = ctx;
    if (sc_cuda_ready(c))
        CK(c, sc_cuda_tanh_bwd(c->compute, n, a, g));
}

static void cu_fill_uniform(void *ctx, float *x, size_t n, long long seed, uint64_t stream,
                            float scale)
{
    sc_cuda *c = ctx;
    if (sc_cuda_ready(c))
        CK(c, sc_cuda_fill_uniform(c->compute, n, x, seed, stream, scale));
}

static void cu_sgd(void *ctx, size_t n, float lr, const float *g, float *x)
{
    sc_cuda *c = ctx;
    if (sc_cuda_ready(c))
        CK(c, sc_cuda_sgd(c->compute, n, lr, g, x));
}

static void cu_adamw(void *ctx, size_t n, float *w, const float *g, float *m, float *v,
                     const struct sc_adamw_k *k)
{
    sc_cuda *c = ctx;
    if (sc_cuda_ready(c))
        CK(c, sc_cuda_adamw(c->compute, n, w, g, m, v, k));
}

/* The optimizer's state: two kernels and two doubles back, where the host
 * used to read every gradient. */
static sc_status cu_sumsq(void *ctx, size_t n, const float *g, double out[2])
{
    sc_cuda *c = ctx;
    out[0] = out[1] = NAN;
    if (!sc_cuda_ready(c))
        return SC_ERR_RUNTIME;
    if (!c->dpart) {
        double *d = NULL;
        if (!CK(c, cudaMalloc((void **)&d, (SC_CUDA_SUMSQ_PARTS + 2) * sizeof(double))) ||
            !CK(c, cudaMallocHost((void **)&c->hsum, 2 * sizeof(double)))) {
            cudaFree(d);
            return SC_ERR_RUNTIME;
        }
        c->dpart = d;
        c->dsum = d + SC_CUDA_SUMSQ_PARTS;
    }
    if (!CK(c, sc_cuda_sumsq(c->compute, n, g, c->dpart, c->dsum)) ||
        !CK(c, cudaMemcpyAsync(c->hsum, c->dsum, 2 * sizeof(double), cudaMemcpyDeviceToHost,
                               c->compute)) ||
        !CK(c, cudaStreamSynchronize(c->compute)))
        return SC_ERR_RUNTIME;
    out[0] = c->hsum[0];
    out[1] = c->hsum[1];
    return SC_OK;
}

/* The loss's scratch for `rows` rows (grown, never shrunk). */
static int scratch(sc_cuda *c, int rows)
{
    if (rows <= c->rows)
        return 1;
    if (c->rows) {
        CK(c, cudaStreamSynchronize(c->compute));
        CK(c, cudaFree(c->dtgt));
        CK(c, cudaFree(c->dloss));
        CK(c, cudaFreeHost(c->htgt));
        CK(c, cudaFreeHost(c->hloss));
        c->dtgt = c->htgt = NULL;
        c->dloss = c->hloss = NULL;
        c->rows = 0;
    }
    size_t r = (size_t)rows;
    if (!CK(c, cudaMalloc((void **)&c->dtgt, r * sizeof(int32_t))) ||
        !CK(c, cudaMalloc((void **)&c->dloss, r * sizeof(double))) ||
        !CK(c, cudaMallocHost((void **)&c->htgt, r * sizeof(int32_t))) ||
        !CK(c, cudaMallocHost((void **)&c->hloss, r * sizeof(double))))
        return 0;
    c->rows = rows;
    return 1;
}

static double cu_xent(void *ctx, int rows, int V, float *logits, const int32_t *targets,
                      float scale)
{
    sc_cuda *c = ctx;
    if (rows < 1 || V < 1)
        sc_cuda_fail(c, __FILE__, __LINE__, "xent", "rows and V must be at least 1");
    if (sc_cuda_capturing(c))
        return sc_cuda_graph_xent(c, rows, V, logits, targets, scale);
    if (!sc_cuda_ready(c) || !scratch(c, rows))
        return NAN;
    /* The previous call ended with a sync: the pinned buffers are free. */
    memcpy(c->htgt, targets, (size_t)rows * sizeof(int32_t));
    if (!CK(c, cudaMemcpyAsync(c->dtgt, c->htgt, (size_t)rows * sizeof(int32_t),
                               cudaMemcpyHostToDevice, c->compute)) ||
        !CK(c, sc_cuda_xent(c->compute, rows, V, logits, c->dtgt, scale, c->dloss)) ||
        !CK(c, cudaMemcpyAsync(c->hloss, c->dloss, (size_t)rows * sizeof(double),
                               cudaMemcpyDeviceToHost, c->compute)) ||
        !CK(c, cudaStreamSynchronize(c->compute)))
        return NAN;
    double loss = 0;
    for (int r = 0; r < rows; r++)
        loss += c->hloss[r];
    return loss;
}

static sc_status cu_sync(void *ctx)
{
    sc_cuda *c = ctx;
    if (sc_cuda_ready(c))
        CK(c, cudaStreamSynchronize(c->compute));
    return c->failed ? SC_ERR_RUNTIME : SC_OK;
}

/* ---- offload: pinned host memory, copies on their own streams ---- */

/* Pinned memory is slow to get and to give back: cudaHostAlloc took 113 ms
 * for 256 MiB on an H100 host, and it synchronizes the device, stalling
 * every device emulated on it. Offload asks for the same few sizes (a
 * record's moved parts) in every step, so freed blocks are kept, up to
 * HOST_CACHE of them, and reused for the same size. The cache belongs to the
 * process, not to an instance: `run --profile` and `--warmup` open the
 * backends afresh for each step, and a cache per instance pinned every
 * record again in every step (an offloaded step took 0.51 s against 0.29 s
 * without offload, bench/README.md). Blocks are cudaHostAllocPortable, so
 * any GPU's instance may take any of them; the device threads share the
 * cache under a lock. Blocks stay pinned until the process ends, or until a
 * cudaHostAlloc finds no memory, which gives the cache back and tries once
 * more. */
#define HOST_CACHE 256

static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hostblk { void *p; size_t bytes; } pin_cache[HOST_CACHE];
static int pin_n;

static void *pin_take(size_t bytes)
{
    void *q = NULL;
    pthread_mutex_lock(&pin_lock);
    for (int i = pin_n - 1; i >= 0 && !q; i--)
        if (pin_cache[i].bytes == bytes) {
            q = pin_cache[i].p;
            pin_cache[i] = pin_cache[--pin_n];
        }
    pthread_mutex_unlock(&pin_lock);
    return q;
}

/* Every cached block back to the driver (cudaHostAlloc found no memory). */
static void pin_release(void)
{
    pthread_mutex_lock(&pin_lock);
    for (int i = 0; i < pin_n; i++)
        cudaFreeHost(pin_cache[i].p);
    pin_n = 0;
    pthread_mutex_unlock(&pin_lock);
}

static void *cu_host_alloc(void *ctx, size_t bytes)
{
    sc_cuda *c = ctx;
    if (!sc_cuda_ready(c))
        return NULL;
    void *p = pin_take(bytes);
    if (p)
        return p;
    cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        pin_release();
        e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            return NULL;
        }
    }
    return sc_cuda_ck(c, e, __FILE__, __LINE__, "cudaHostAlloc") ? p : NULL;
}

static void cu_host_free(void *ctx, void *p, size_t bytes)
{
    sc_cuda *c = ctx;
    if (!p)
        return;
    pthread_mutex_lock(&pin_lock);
    int kept = pin_n < HOST_CACHE;
    if (kept)
        pin_cache[pin_n++] = (struct hostblk){p, bytes};
    pthread_mutex_unlock(&pin_lock);
    if (!kept && sc_cuda_ready(c))
        CK(c, cudaFreeHost(p));
}

static sc_status cu_copy_start(void *ctx, int to_host, void *dst, const void *src, size_t bytes,
                               void **ticket)
{
    sc_cuda *c = ctx;
    *ticket = NULL;
    if (!sc_cuda_ready(c))
        return SC_ERR_RUNTIME;
    cudaStream_t s = to_host ? c->d2h : c->h2d;
    cudaEvent_t ev = NULL;
    if (c->nidle > 0)
        ev = c->idle[--c->nidle];
    else if (!CK(c, cudaEventCreateWithFlags(&ev, cudaEventDisableTiming)))
        return SC_ERR_RUNTIME;
    if (!CK(c, cudaEventRecord(c->mark, c->compute)) ||
        !CK(c, cudaStreamWaitEvent(s, c->mark, 0)) ||
        !CK(c, cudaMemcpyAsync(dst, src, bytes,
                               to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, s)) ||
        !CK(c, cudaEventRecord(ev, s))) {
        cudaEventDestroy(ev);
        return SC_ERR_RUNTIME;
    }
    *ticket = (void *)ev;
    return SC_OK;
}

static sc_status cu_copy_wait(void *ctx, void *ticket)
{
    sc_cuda *c = ctx;
    cudaEvent_t ev = (cudaEvent_t)ticket;
    if (!ev)
        return c->failed ? SC_ERR_RUNTIME : SC_OK;
    if (sc_cuda_ready(c))
        CK(c, cudaEventSynchronize(ev));
    if (c->nidle == c->idlecap) {
        int ncap = c->idlecap ? 2 * c->idlecap : 16;
        cudaEvent_t *v = realloc(c->idle, (size_t)ncap * sizeof *v);
        if (!v) {
            cudaEventDestroy(ev);
            return c->failed ? SC_ERR_RUNTIME : SC_OK;
        }
        c->idle = v;
        c->idlecap = ncap;
    }
    c->idle[c->nidle++] = ev;
    return c->failed ? SC_ERR_RUNTIME : SC_OK;
}

static const char *cu_errmsg(void *ctx)
{
    sc_cuda *c = ctx;
    return c->failed ? c->err : NULL;
}

static sc_status cu_meminfo(void *ctx, int *gpu, size_t *free_bytes, size_t *total_bytes)
{
    sc_cuda *c = ctx;
    *gpu = c->gpu;
    *free_bytes = *total_bytes = 0;
    if (!sc_cuda_ready(c) || !CK(c, cudaMemGetInfo(free_bytes, total_bytes)))
        return SC_ERR_RUNTIME;
    return SC_OK;
}

/* ---- a pair's lane (backend.h): a second stream on the same GPU ---- */

static sc_status cu_lane_open(void *ctx, sc_backend **lane)
{
    sc_cuda *c = ctx;
    char err[256];
    sc_status st = sc_cuda_open(c->dev, 0, lane, err, sizeof err);
    if (st != SC_OK && !c->failed)
        snprintf(c->err, sizeof c->err, "%s", err); /* for the caller's message, not sticky */
    return st;
}

static void cu_lane_fork(void *ctx, void *lane) { sc_cuda_order(lane, ctx); }
static void cu_lane_join(void *ctx, void *lane) { sc_cuda_order(ctx, lane); }

static const struct sc_backend_ops cuda_ops = {
    .name = "cuda",
    .alloc = cu_alloc,
    .free = cu_free,
    .gemm = cu_gemm,
    .copy = cu_copy,
    .tanh_fwd = cu_tanh_fwd,
    .tanh_bwd = cu_tanh_bwd,
    .xent = cu_xent,
    .sgd = cu_sgd,
    .adamw = cu_adamw,
    .sumsq = cu_sumsq,
    .upload = cu_upload,
    .download = cu_download,
    .fill_uniform = cu_fill_uniform,
    .sync = cu_sync,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
    .copy_start = cu_copy_start,
    .copy_wait = cu_copy_wait,
    .errmsg = cu_errmsg,
    .meminfo = cu_meminfo,
    .lane_open = cu_lane_open,
    .lane_fork = cu_lane_fork,
    .lane_join = cu_lane_join,
    .capture_begin = sc_cuda_capture_begin,
    .order = sc_cuda_order,
    .capture_end = sc_cuda_capture_end,
    .graph_launch = sc_cuda_graph_launch,
    .graph_free = sc_cuda_graph_free,
    .graph_losses = sc_cuda_graph_losses,
    .rmsnorm_fwd = sc_cuda_dec_rmsnorm_fwd,
    .rmsnorm_bwd = sc_cuda_dec_rmsnorm_bwd,
    .rmsnorm_wgrad = sc_cuda_dec_rmsnorm_wgrad,
    .rope = sc_cuda_dec_rope,
    .attn_fwd = sc_cuda_dec_attn_fwd,
    .attn_bwd = sc_cuda_dec_attn_bwd,
    .swiglu_fwd = sc_cuda_dec_swiglu_fwd,
    .swiglu_bwd = sc_cuda_dec_swiglu_bwd,
    .moe_route = sc_cuda_dec_moe_route,
    .moe_route_bwd = sc_cuda_dec_moe_route_bwd,
    .moe_gather = sc_cuda_dec_moe_gather,
    .moe_combine = sc_cuda_dec_moe_combine,
    .moe_combine_bwd = sc_cuda_dec_moe_combine_bwd,
};

/* ---- lifetime ---- */

static void cu_free_backend(sc_backend *be)
{
    sc_cuda *c = be->ctx;
    if (sc_cuda_use(c->gpu) == cudaSuccess) {
        /* Errors here change nothing: the instance is going away. */
        if (c->dscores)
            cudaFreeAsync(c->dscores, c->compute);
        if (c->compute)
            cudaStreamSynchronize(c->compute);
        sc_cuda_graph_close(c);
        if (c->d2h)
            cudaStreamSynchronize(c->d2h);
        if (c->h2d)
            cudaStreamSynchronize(c->h2d);
        for (int i = 0; i < c->nidle; i++)
            cudaEventDestroy(c->idle[i]);
        if (c->mark)
            cudaEventDestroy(c->mark);
        cudaFree(c->dtgt);
        cudaFree(c->dloss);
        cudaFreeHost(c->htgt);
        cudaFreeHost(c->hloss);
        cudaFree(c->dpart);
        cudaFreeHost(c->hsum);
        if (c->blas)
            cublasDestroy(c->blas);
        if (c->compute)
            cudaStreamDestroy(c->compute);
        if (c->d2h)
            cudaStreamDestroy(c->d2h);
        if (c->h2d)
            cudaStreamDestroy(c->h2d);
        cudaMemPool_t pool;
        if (cudaDeviceGetDefaultMemPool(&pool, c->gpu) == cudaSuccess)
            cudaMemPoolTrimTo(pool, 0); /* unused memory only */
        (void)cudaGetLastError();
    }
    free(c->idle);
    free(c->xs);
    free(c);
    free(be);
}

int sc_cuda_devices(char *info, size_t infolen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        (void)cudaGetLastError();
        if (info) {
            /* Without a driver the runtime says the driver is too old:
             * name what is missing instead, with CUDA's own words after. */
            if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice)
                snprintf(info, infolen, "no NVIDIA driver or GPU found: %s",
                         cudaGetErrorString(e));
            else
                snprintf(info, infolen, "%s", e != cudaSuccess ? cudaGetErrorString(e)
                                                              : "cudaGetDeviceCount found none");
        }
        return 0;
    }
    if (info) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, 0) == cudaSuccess)
            snprintf(info, infolen, "%s", p.name);
        else
            snprintf(info, infolen, "GPU 0");
        (void)cudaGetLastError(); /* not this thread's next launch's error */
    }
    return n;
}

int sc_cuda_gpu_uuid(int gpu, unsigned char uuid[16])
{
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, gpu) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    memcpy(uuid, p.uuid.bytes, 16);
    return 1;
}

sc_status sc_cuda_open(int dev, size_t mem_cap, sc_backend **out, char *err, size_t errlen)
{
    *out = NULL;
    char why[160];
    int n = sc_cuda_devices(why, sizeof why);
    if (n < 1) {
        snprintf(err, errlen, "backend 'cuda': no usable CUDA device (cudaGetDeviceCount: %s); use --backend cpu", why);
        return SC_ERR_ARG;
    }
    sc_backend *be = calloc(1, sizeof *be);
    sc_cuda *c = calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        snprintf(err, errlen, "out of memory opening the cuda backend");
        return SC_ERR_NOMEM;
    }
    c->dev = dev;
    c->gpu = (dev % n + n) % n;
    c->cap = mem_cap;
    be->ops = &cuda_ops;
    be->ctx = c;
    be->free_fn = cu_free_backend;
    const char *tf32 = getenv("STAGECRAFT_CUDA_TF32");
    int ok = sc_cuda_ready(c) &&
             CK(c, cudaStreamCreateWithFlags(&c->compute, cudaStreamNonBlocking)) &&
             CK(c, cudaStreamCreateWithFlags(&c->d2h, cudaStreamNonBlocking)) &&
             CK(c, cudaStreamCreateWithFlags(&c->h2d, cudaStreamNonBlocking)) &&
             CK(c, cudaEventCreateWithFlags(&c->mark, cudaEventDisableTiming)) &&
             CKB(c, cublasCreate(&c->blas)) && CKB(c, cublasSetStream(c->blas, c->compute)) &&
             CKB(c, cublasSetMathMode(c->blas, tf32 && strcmp(tf32, "1") == 0
                                                   ? CUBLAS_TF32_TENSOR_OP_MATH
                                                   : CUBLAS_DEFAULT_MATH));
    if (ok) {
        /* Keep freed memory in the pool: the activation pool churns every
         * pass, and returning memory to the driver would synchronize. */
        cudaMemPool_t pool;
        unsigned long long keep = ~0ULL;
        ok = CK(c, cudaDeviceGetDefaultMemPool(&pool, c->gpu)) &&
             CK(c, cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    }
    if (!ok) {
        snprintf(err, errlen, "backend 'cuda': cannot start d%d on GPU %d: %s", dev, c->gpu,
                 c->err);
        cu_free_backend(be);
        return SC_ERR_RUNTIME;
    }
    *out = be;
    return SC_OK;
}

int sc_cuda_backend_gpu(const sc_backend *be)
{
    return be && be->ops == &cuda_ops ? ((const sc_cuda *)be->ctx)->gpu : -1;
}

cudaStream_t sc_cuda_backend_stream(const sc_backend *be)
{
    return be && be->ops == &cuda_ops ? ((const sc_cuda *)be->ctx)->compute : NULL;
}
