/*
 * cuda_dec_kernels.cu — the decoder's own kernels (backend.h, "the
 * decoder's layers"): RMSNorm and its gradients, rotary positions, the
 * causal softmax of attention and its gradient, SwiGLU; with their
 * extern "C" launchers (cuda_impl.h). The attention's matrix products are
 * cuBLAS calls of backend_cuda_dec.c, not kernels.
 *
 * Row kernels (RMSNorm, the softmaxes) take one block of ROW_THREADS
 * threads per row; each thread walks the row with stride ROW_THREADS and
 * the block reduces its partial sums in a fixed tree (in double), so a
 * result does not depend on scheduling and repeats bit for bit. The weight
 * gradient of RMSNorm sums over rows: one thread per column, rows in order,
 * no atomics. Rotary positions and SwiGLU are element-wise (grid-stride
 * loops over size_t indices).
 *
 * Launchers clear the thread's last error before launching (cuda_kernels.cu
 * says why) and do nothing for an empty shape (a grid of 0 blocks is a
 * launch error); the slots check the shapes before.
 */
#include "cuda_impl.h"

#define ROW_THREADS 128
#define EW_THREADS 256
#define EW_MAX_BLOCKS 65536

static unsigned ew_blocks(size_t n)
{
    size_t b = (n + EW_THREADS - 1) / EW_THREADS;
    return (unsigned)(b < 1 ? 1 : b > EW_MAX_BLOCKS ? EW_MAX_BLOCKS : b);
}

/* The block's sum of v (each thread's own), in a fixed tree over sh
 * (ROW_THREADS doubles of __shared__ memory); every thread gets it. */
static __device__ double block_sum(double v, double *sh)
{
    int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int w = ROW_THREADS / 2; w > 0; w /= 2) {
        if (t < w)
            sh[t] += sh[t + w];
        __syncthreads();
    }
    double s = sh[0];
    __syncthreads(); /* sh may be reused at once */
    return s;
}

static __device__ float block_max(float v, float *sh)
{
    int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int w = ROW_THREADS / 2; w > 0; w /= 2) {
        if (t < w)
            sh[t] = fmaxf(sh[t], sh[t + w]);
        __syncthreads();
    }
    float m = sh[0];
    __syncthreads();
    return m;
}

/* rstd = 1 / sqrt(mean x^2 + eps), the sum in double; y = x rstd g. */
__global__ void k_rmsnorm_fwd(int n, const float *x, const float *g, float eps, float *y,
                              float *rstd)
{
    __shared__ double sh[ROW_THREADS];
    int t = threadIdx.x;
    size_t off = (size_t)blockIdx.x * (size_t)n;
    double ss = 0;
    for (int i = t; i < n; i += ROW_THREADS) {
        double xi = x[off + i];
        ss += xi * xi;
    }
    ss = block_sum(ss, sh);
    float rs = (float)(1.0 / sqrt(ss / n + (double)eps));
    if (t == 0)
        rstd[blockIdx.x] = rs;
    for (int i = t; i < n; i += ROW_THREADS)
        y[off + i] = x[off + i] * rs * g[i];
}

/* dx = beta dx + rstd (g dy - xh mean(xh g dy)), xh = x rstd; beta 0 does
 * not read dx (it may hold anything). */
__global__ void k_rmsnorm_bwd(int n, const float *x, const float *g, const float *rstd,
                              const float *dy, float beta, float *dx)
{
    __shared__ double sh[ROW_THREADS];
    int t = threadIdx.x;
    size_t off = (size_t)blockIdx.x * (size_t)n;
    float rs = rstd[blockIdx.x];
    double s = 0;
    for (int i = t; i < n; i += ROW_THREADS)
        s += (double)(x[off + i] * rs) * ((double)g[i] * dy[off + i]);
    float m = (float)(block_sum(s, sh) / n);
    for (int i = t; i < n; i += ROW_THREADS) {
        float d = rs * (g[i] * dy[off + i] - x[off + i] * rs * m);
        dx[off + i] = beta == 0.0f ? d : beta * dx[off + i] + d;
    }
}

/* dg[i] += sum over rows, in row order, of dy x rstd (in double). */
__global__ void k_rmsnorm_wgrad(int rows, int n, const float *x, const float *rstd,
                                const float *dy, float *dg)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (size_t)n;
         i += (size_t)gridDim.x * blockDim.x) {
        double s = 0;
        for (int r = 0; r < rows; r++) {
            size_t k = (size_t)r * (size_t)n + i;
            s += (double)dy[k] * x[k] * rstd[r];
        }
        dg[i] += (float)s;
    }
}

/* One thread per pair (i, i + dim/2) of a head of a row: turned by sign t
 * theta^(-2i/dim), the angle and its sine and cosine in double (t theta^..
 * reaches thousands of radians, where float loses the angle). */
__global__ void k_rope(size_t pairs, int seq, int pos0, int heads, int dim, float theta,
                       int sign, float *x)
{
    int half = dim / 2;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < pairs;
         k += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(k % (size_t)half);
        size_t hr = k / (size_t)half; /* head j of row r: hr = r heads + j */
        int t = pos0 + (int)(hr / (size_t)heads % (size_t)seq);
        double ang = sign * (double)t * pow((double)theta, -2.0 * i / dim);
        double c = cos(ang), s = sin(ang);
        float *p = x + hr * (size_t)dim;
        double a = p[i], b = p[i + half];
        p[i] = (float)(a * c - b * s);
        p[i + half] = (float)(b * c + a * s);
    }
}

/* In place over one row of scores (row r: position past + r % seq, of kn =
 * past + seq keys): the softmax over the columns up to the position (max in
 * float, the sum of exp in double), 0 past it. */
__global__ void k_causal_softmax(int seq, int past, float *p)
{
    __shared__ double sh[ROW_THREADS];
    __shared__ float shm[ROW_THREADS];
    int t = threadIdx.x, pos = past + (int)(blockIdx.x % (unsigned)seq), kn = past + seq;
    float *row = p + (size_t)blockIdx.x * (size_t)kn;
    float mx = -INFINITY;
    for (int j = t; j <= pos; j += ROW_THREADS)
        mx = fmaxf(mx, row[j]);
    mx = block_max(mx, shm);
    double s = 0;
    for (int j = t; j <= pos; j += ROW_THREADS) {
        float e = expf(row[j] - mx);
        row[j] = e;
        s += e;
    }
    float inv = (float)(1.0 / block_sum(s, sh));
    for (int j = t; j < kn; j += ROW_THREADS)
        row[j] = j <= pos ? row[j] * inv : 0.0f;
}

/* The softmax's gradient in place over p: p (dp - sum_j p dp) up to the
 * position (the sum in double), 0 past it. */
__global__ void k_causal_softmax_bwd(int seq, int past, float *p, const float *dp)
{
    __shared__ double sh[ROW_THREADS];
    int t = threadIdx.x, pos = past + (int)(blockIdx.x % (unsigned)seq), kn = past + seq;
    size_t off = (size_t)blockIdx.x * (size_t)kn;
    double s = 0;
    for (int j = t; j <= pos; j += ROW_THREADS)
        s += (double)p[off + j] * dp[off + j];
    float d = (float)block_sum(s, sh);
    for (int j = t; j < kn; j += ROW_THREADS)
        p[off + j] = j <= pos ? p[off + j] * (dp[off + j] - d) : 0.0f;
}

/* a = silu(g) u, silu(z) = z / (1 + e^-z). */
__global__ void k_swiglu_fwd(size_t n, const float *g, const float *u, float *a)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float z = g[i];
        a[i] = z / (1.0f + expf(-z)) * u[i];
    }
}

/* du = da silu(g) (du holds da on entry), dg = da u silu'(g), with
 * silu'(z) = s (1 + z (1 - s)), s = 1 / (1 + e^-z). */
__global__ void k_swiglu_bwd(size_t n, const float *g, const float *u, float *du, float *dg)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float z = g[i], da = du[i], e = expf(-z);
        float s = 1.0f / (1.0f + e);
        du[i] = da * (z / (1.0f + e));
        dg[i] = da * u[i] * (s * (1.0f + z * (1.0f - s)));
    }
}

extern "C" cudaError_t sc_cuda_rmsnorm_fwd(cudaStream_t s, int rows, int n, const float *x,
                                           const float *g, float eps, float *y, float *rstd)
{
    if (rows < 1 || n < 1)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_rmsnorm_fwd<<<(unsigned)rows, ROW_THREADS, 0, s>>>(n, x, g, eps, y, rstd);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_rmsnorm_bwd(cudaStream_t s, int rows, int n, const float *x,
                                           const float *g, const float *rstd, const float *dy,
                                           float beta, float *dx)
{
    if (rows < 1 || n < 1)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_rmsnorm_bwd<<<(unsigned)rows, ROW_THREADS, 0, s>>>(n, x, g, rstd, dy, beta, dx);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_rmsnorm_wgrad(cudaStream_t s, int rows, int n, const float *x,
                                             const float *rstd, const float *dy, float *dg)
{
    if (rows < 1 || n < 1)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_rmsnorm_wgrad<<<ew_blocks((size_t)n), EW_THREADS, 0, s>>>(rows, n, x, rstd, dy, dg);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_rope(cudaStream_t s, int rows, int seq, int pos0, int heads,
                                    int dim, float theta, int sign, float *x)
{
    size_t pairs = (size_t)rows * (size_t)heads * (size_t)(dim / 2);
    if (pairs == 0)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_rope<<<ew_blocks(pairs), EW_THREADS, 0, s>>>(pairs, seq, pos0, heads, dim, theta, sign, x);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_causal_softmax(cudaStream_t s, int rows, int seq, int past,
                                              float *p)
{
    if (rows < 1 || seq < 1)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_causal_softmax<<<(unsigned)rows, ROW_THREADS, 0, s>>>(seq, past, p);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_causal_softmax_bwd(cudaStream_t s, int rows, int seq, int past,
                                                  float *p, const float *dp)
{
    if (rows < 1 || seq < 1)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_causal_softmax_bwd<<<(unsigned)rows, ROW_THREADS, 0, s>>>(seq, past, p, dp);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_swiglu_fwd(cudaStream_t s, size_t n, const float *g,
                                          const float *u, float *a)
{
    if (n == 0)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_swiglu_fwd<<<ew_blocks(n), EW_THREADS, 0, s>>>(n, g, u, a);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_swiglu_bwd(cudaStream_t s, size_t n, const float *g,
                                          const float *u, float *du, float *dg)
{
    if (n == 0)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_swiglu_bwd<<<ew_blocks(n), EW_THREADS, 0, s>>>(n, g, u, du, dg);
    return cudaGetLastError();
}
