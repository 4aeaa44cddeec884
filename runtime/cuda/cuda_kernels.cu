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

/* AdamW (backend.h): every operation rounded on its own (__f*_rn: nvcc
 * would fuse a multiply and an add), sqrt and division IEEE-rounded as nvcc
 * does by default, so the bits are the CPU backend's. */
__global__ void k_adamw(size_t n, float *w, const float *g, float *m, float *v,
                        struct sc_adamw_k k)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float gi = __fmul_rn(g[i], k.coef);
        float mi = __fadd_rn(__fmul_rn(k.b1, m[i]), __fmul_rn(1.0f - k.b1, gi));
        float vi = __fadd_rn(__fmul_rn(k.b2, v[i]), __fmul_rn(__fmul_rn(1.0f - k.b2, gi), gi));
        float den = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), k.sbc2), k.eps);
        m[i] = mi;
        v[i] = vi;
        w[i] = __fsub_rn(__fmul_rn(w[i], k.decay), __fmul_rn(k.step, __fdiv_rn(mi, den)));
    }
}

/* The sum of squares of the finite values and the count of the others:
 * SUMSQ_BLOCKS blocks each reduce their grid-stride share in a fixed tree
 * into part[2 b], part[2 b + 1]; one block then adds the parts in order.
 * The grid does not depend on timing, so the bits repeat. */
#define SUMSQ_BLOCKS (SC_CUDA_SUMSQ_PARTS / 2)
__global__ void k_sumsq(size_t n, const float *g, double *part)
{
    __shared__ double ss[THREADS];
    __shared__ double sb[THREADS];
    int t = threadIdx.x;
    double s = 0, b = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + t; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double x = g[i];
        if (isfinite(x))
            s += x * x;
        else
            b += 1;
    }
    ss[t] = s;
    sb[t] = b;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if (t < w) {
            ss[t] += ss[t + w];
            sb[t] += sb[t + w];
        }
        __syncthreads();
    }
    if (t == 0) {
        part[2 * blockIdx.x] = ss[0];
        part[2 * blockIdx.x + 1] = sb[0];
    }
}

__global__ void k_sumsq_parts(int nparts, const double *part, double *out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        double s = 0, b = 0;
        for (int i = 0; i < nparts; i++) {
            s += part[2 * i];
            b += part[2 * i + 1];
        }
        out[0] = s;
        out[1] = b;
    }
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

extern "C" cudaError_t sc_cuda_adamw(cudaStream_t s, size_t n, float *w, const float *g,
                                     float *m, float *v, const struct sc_adamw_k *k)
{
    struct sc_adamw_k kv = *k; /* by value: the stand-in's launch runs later */
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_adamw<<<blocks_for(n), THREADS, 0, s>>>(n, w, g, m, v, kv);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_sumsq(cudaStream_t s, size_t n, const float *g, double *part,
                                     double *out)
{
    unsigned b = blocks_for(n);
    if (b > SUMSQ_BLOCKS)
        b = SUMSQ_BLOCKS;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_sumsq<<<b, THREADS, 0, s>>>(n, g, part);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    k_sumsq_parts<<<1, 1, 0, s>>>((int)b, part, out);
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
