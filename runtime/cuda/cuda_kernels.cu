/*
 * cuda_kernels.cu — the element-wise kernels and the loss of the cuda
 * backend, and their extern "C" launchers (cuda_impl.h). Nothing else lives
 * in a .cu file: the backend itself is C (backend_cuda.c).
 *
 * Launchers clear the thread's last error before launching (the CUDA
 * guide's advice): the runtime also records non-errors such as a
 * cudaEventQuery's cudaErrorNotReady there, and the launch's
 * cudaGetLastError() must report this launch only.
 *
 * Element-wise kernels use a grid-stride loop over size_t indices, so any n
 * fits a bounded grid. The loss kernel takes one block per row and reduces
 * in a fixed tree, so its result does not depend on scheduling.
 */
#include "cuda_impl.h"
#include "backend/sc_hash.h"

#define THREADS 256
#define MAX_BLOCKS 65536

static unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

__global__ void k_tanh_fwd(size_t n, float *x)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = tanhf(x[i]);
}

__global__ void k_tanh_bwd(size_t n, const float *a, float *g)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        g[i] *= 1.0f - a[i] * a[i];
}

__global__ void k_sgd(size_t n, float lr, const float *g, float *x)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] -= lr * g[i];
}

__global__ void k_fill_uniform(size_t n, float *x, long long seed, uint64_t stream, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = scale == 0 ? 0.0f : __fmul_rn(scale, sc_urand(seed, stream, i));
}

/* One block of THREADS threads per row. The same arithmetic as the CPU
 * backend (max in float, sum of exp in double, lse in double); only the
 * order of the sum differs. */
__global__ void k_xent(int V, float *logits, const int32_t *targets, float scale,
                       double *row_loss)
{
    __shared__ float smax[THREADS];
    __shared__ double ssum[THREADS];
    int r = blockIdx.x, t = threadIdx.x;
    float *x = logits + (size_t)r * (size_t)V;
    int target = targets[r];
    float xt = x[target]; /* read before any thread overwrites the row */
    float mx = -INFINITY;
    for (int j = t; j < V; j += THREADS)
        mx = fmaxf(mx, x[j]);
    smax[t] = mx;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if (t < w)
            smax[t] = fmaxf(smax[t], smax[t + w]);
        __syncthreads();
    }
    mx = smax[0];
    double sum = 0;
    for (int j = t; j < V; j += THREADS)
        sum += exp((double)x[j] - mx);
    ssum[t] = sum;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if (t < w)
            ssum[t] += ssum[t + w];
        __syncthreads();
    }
    double lse = mx + log(ssum[0]);
    if (t == 0)
        row_loss[r] = lse - xt;
    for (int j = t; j < V; j += THREADS)
        x[j] = scale * (float)(exp((double)x[j] - lse) - (j == target));
}

extern "C" cudaError_t sc_cuda_tanh_fwd(cudaStream_t s, size_t n, float *x)
{
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_tanh_fwd<<<blocks_for(n), THREADS, 0, s>>>(n, x);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_tanh_bwd(cudaStream_t s, size_t n, const float *a, float *g)
{
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_tanh_bwd<<<blocks_for(n), THREADS, 0, s>>>(n, a, g);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_sgd(cudaStream_t s, size_t n, float lr, const float *g, float *x)
{
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_sgd<<<blocks_for(n), THREADS, 0, s>>>(n, lr, g, x);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_fill_uniform(cudaStream_t s, size_t n, float *x, long long seed,
                                            uint64_t stream, float scale)
{
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_fill_uniform<<<blocks_for(n), THREADS, 0, s>>>(n, x, seed, stream, scale);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_xent(cudaStream_t s, int rows, int V, float *logits,
                                    const int32_t *targets, float scale, double *row_loss)
{
    if (rows < 1 || V < 1)
        return cudaErrorInvalidValue;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_xent<<<(unsigned)rows, THREADS, 0, s>>>(V, logits, targets, scale, row_loss);
    return cudaGetLastError();
}
