/*
 * cuda_moe_kernels.cu — the mixture of experts' own kernels (backend.h,
 * "mixture of experts"): the router's softmax and top-k and its backward,
 * the copies' places among the gathered rows, the dispatch (gather), the
 * combine and its backward; with their extern "C" launchers (cuda_impl.h).
 * The experts' products are cuBLAS calls of backend_cuda_moe.c.
 *
 * The router works one thread per row (E is small: a loop over the
 * experts, the normaliser and the chosen sum in double, as the cpu
 * backend's). The places are counted by one thread, copies in order (R k
 * steps): the layout is a prefix sum whose order must not depend on
 * scheduling. Gather, combine and combine's backward are element-wise
 * (grid-stride loops over size_t indices), each output element written by
 * one thread summing its k terms in order; the routing weights' gradient is
 * one thread per copy, its dot product in double. Everything is
 * deterministic, no atomics.
 *
 * Launchers clear the thread's last error before launching (cuda_kernels.cu
 * says why) and do nothing for an empty shape.
 */
#include "cuda_impl.h"

#define EW_THREADS 256
#define EW_MAX_BLOCKS 65536

static unsigned ew_blocks(size_t n)
{
    size_t b = (n + EW_THREADS - 1) / EW_THREADS;
    return (unsigned)(b < 1 ? 1 : b > EW_MAX_BLOCKS ? EW_MAX_BLOCKS : b);
}

#define GRID_STRIDE(i, n)                                                                          \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                        \
         i += (size_t)gridDim.x * blockDim.x)

/* Row r: softmax in place, the k largest (strictly larger wins: equal
 * ones go to the lower expert), their weights over the chosen sum. */
__global__ void k_moe_route(int rows, int E, int k, float *prob, int32_t *sel, float *wt)
{
    GRID_STRIDE(r, (size_t)rows) {
        float *p = prob + r * E, mx = -INFINITY;
        int32_t *sr = sel + r * k;
        for (int e = 0; e < E; e++)
            mx = p[e] > mx ? p[e] : mx;
        double sum = 0;
        for (int e = 0; e < E; e++) {
            p[e] = expf(p[e] - mx);
            sum += p[e];
        }
        float inv = (float)(1.0 / sum);
        for (int e = 0; e < E; e++)
            p[e] *= inv;
        for (int i = 0; i < k; i++) {
            int best = -1;
            for (int e = 0; e < E; e++) {
                int taken = 0;
                for (int j = 0; j < i; j++)
                    taken |= sr[j] == e;
                if (!taken && (best < 0 || p[e] > p[best]))
                    best = e;
            }
            sr[i] = best;
        }
        double s = 0;
        for (int i = 0; i < k; i++)
            s += p[sr[i]];
        for (int i = 0; i < k; i++)
            wt[r * k + i] = (float)(p[sr[i]] / s);
    }
}

/* One thread: each copy's rank among its expert's, then the experts
 * before; count[e] the rows of expert e. */
__global__ void k_moe_pos(size_t n, int E, const int32_t *sel, int32_t *pos, int *count)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    for (int e = 0; e < E; e++)
        count[e] = 0;
    for (size_t j = 0; j < n; j++)
        pos[j] = count[sel[j]]++;
    for (size_t j = 0; j < n; j++)
        for (int e = 0; e < sel[j]; e++)
            pos[j] += count[e];
}

__global__ void k_moe_route_bwd(int rows, int E, int k, const float *prob, const int32_t *sel,
                                const float *wt, const float *dwt, float *dlogits)
{
    GRID_STRIDE(r, (size_t)rows) {
        const float *p = prob + r * E, *w = wt + r * k, *dw = dwt + r * k;
        const int32_t *sr = sel + r * k;
        float *dl = dlogits + r * E;
        double cs = 0;
        for (int i = 0; i < k; i++)
            cs += p[sr[i]];
        float s = (float)cs, dot = 0, pdp = 0;
        for (int i = 0; i < k; i++)
            dot += w[i] * dw[i];
        for (int e = 0; e < E; e++)
            dl[e] = 0;
        for (int i = 0; i < k; i++) {
            dl[sr[i]] = (dw[i] - dot) / s;
            pdp += p[sr[i]] * dl[sr[i]];
        }
        for (int e = 0; e < E; e++)
            dl[e] = p[e] * (dl[e] - pdp);
    }
}

__global__ void k_moe_gather(size_t total, int k, int n, const int32_t *pos, const float *x,
                             float *xg)
{
    GRID_STRIDE(i, total) {
        size_t j = i / n, c = i % n;
        xg[(size_t)pos[j] * n + c] = x[j / k * n + c];
    }
}

__global__ void k_moe_combine(size_t total, int k, int n, const int32_t *pos, const float *wt,
                              const float *yg, float beta, float *y)
{
    GRID_STRIDE(i, total) {
        size_t r = i / n, c = i % n;
        float acc = beta == 0 ? 0.0f : beta * y[i];
        for (int t = 0; t < k; t++) {
            size_t j = r * k + t;
            acc += wt[j] * yg[(size_t)pos[j] * n + c];
        }
        y[i] = acc;
    }
}

/* The combine with weights 1 (a NULL argument is not memory to the
 * stand-in's checks: a kernel of its own). */
__global__ void k_moe_sum(size_t total, int k, int n, const int32_t *pos, const float *yg,
                          float beta, float *y)
{
    GRID_STRIDE(i, total) {
        size_t r = i / n, c = i % n;
        float acc = beta == 0 ? 0.0f : beta * y[i];
        for (int t = 0; t < k; t++)
            acc += yg[(size_t)pos[r * k + t] * n + c];
        y[i] = acc;
    }
}

__global__ void k_moe_scatter_grad(size_t total, int k, int n, const int32_t *pos,
                                   const float *wt, const float *dy, float *dyg)
{
    GRID_STRIDE(i, total) {
        size_t j = i / n, c = i % n;
        dyg[(size_t)pos[j] * n + c] = wt[j] * dy[j / k * n + c];
    }
}

__global__ void k_moe_wt_grad(size_t copies, int k, int n, const int32_t *pos, const float *yg,
                              const float *dy, float *dwt)
{
    GRID_STRIDE(j, copies) {
        const float *dr = dy + j / k * n, *gr = yg + (size_t)pos[j] * n;
        double dot = 0;
        for (int c = 0; c < n; c++)
            dot += (double)dr[c] * gr[c];
        dwt[j] = (float)dot;
    }
}

extern "C" cudaError_t sc_cuda_moe_route(cudaStream_t s, int rows, int E, int k, float *prob,
                                         int32_t *sel, float *wt, int32_t *pos, int *count)
{
    if (rows < 1 || E < 1 || k < 1)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_moe_route<<<ew_blocks((size_t)rows), EW_THREADS, 0, s>>>(rows, E, k, prob, sel, wt);
    size_t n = (size_t)rows * (size_t)k;
    k_moe_pos<<<1, 1, 0, s>>>(n, E, sel, pos, count);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_moe_route_bwd(cudaStream_t s, int rows, int E, int k,
                                             const float *prob, const int32_t *sel,
                                             const float *wt, const float *dwt, float *dlogits)
{
    if (rows < 1 || E < 1 || k < 1)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    unsigned g = ew_blocks((size_t)rows);
    k_moe_route_bwd<<<g, EW_THREADS, 0, s>>>(rows, E, k, prob, sel, wt, dwt, dlogits);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_moe_gather(cudaStream_t s, int rows, int k, int n,
                                          const int32_t *pos, const float *x, float *xg)
{
    size_t total = (size_t)rows * (size_t)k * (size_t)n;
    if (rows < 1 || k < 1 || n < 1)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_moe_gather<<<ew_blocks(total), EW_THREADS, 0, s>>>(total, k, n, pos, x, xg);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_moe_combine(cudaStream_t s, int rows, int k, int n,
                                           const int32_t *pos, const float *wt, const float *yg,
                                           float beta, float *y)
{
    size_t total = (size_t)rows * (size_t)n;
    if (rows < 1 || k < 1 || n < 1)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    if (wt)
        k_moe_combine<<<ew_blocks(total), EW_THREADS, 0, s>>>(total, k, n, pos, wt, yg, beta, y);
    else
        k_moe_sum<<<ew_blocks(total), EW_THREADS, 0, s>>>(total, k, n, pos, yg, beta, y);
    return cudaGetLastError();
}

extern "C" cudaError_t sc_cuda_moe_combine_bwd(cudaStream_t s, int rows, int k, int n,
                                               const int32_t *pos, const float *wt,
                                               const float *yg, const float *dy, float *dyg,
                                               float *dwt)
{
    size_t copies = (size_t)rows * (size_t)k, total = copies * (size_t)n;
    if (rows < 1 || k < 1 || n < 1)
        return cudaSuccess;
    (void)cudaGetLastError(); /* a stale error is not this launch's */
    k_moe_scatter_grad<<<ew_blocks(total), EW_THREADS, 0, s>>>(total, k, n, pos, wt, dy, dyg);
    k_moe_wt_grad<<<ew_blocks(copies), EW_THREADS, 0, s>>>(copies, k, n, pos, yg, dy, dwt);
    return cudaGetLastError();
}
