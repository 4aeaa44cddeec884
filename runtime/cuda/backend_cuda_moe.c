/*
 * backend_cuda_moe.c — the mixture-of-experts slots of the cuda backend
 * (backend.h: the router and its backward, the dispatch of the routed
 * rows, their weighted combine and its backward), queued on the
 * instance's compute stream; the kernels are cuda_moe_kernels.cu's. The
 * experts' own products are the model's gemm calls (cuBLAS), sized by the
 * counts moe_route brings to the host: it waits for the device once per
 * MoE layer's forward (so it cannot be captured into a graph).
 */
#include "backend_cuda.h"

#include <string.h>

static int moe_shape(sc_cuda *c, int ok, const char *slot)
{
    return (ok ? 1
               : sc_cuda_fail(c, __FILE__, __LINE__, slot,
                              "rows >= 0, 1 <= k <= E and n >= 1 expected")) &&
           sc_cuda_ready(c);
}

void sc_cuda_dec_moe_route(void *ctx, int rows, int E, int k, float *prob, int32_t *sel,
                           float *wt, int32_t *pos, int *count)
{
    sc_cuda *c = ctx;
    void *d = NULL;
    size_t bytes = (size_t)(E > 0 ? E : 1) * sizeof(int);
    if (moe_shape(c, rows >= 0 && k >= 1 && k <= E, "moe_route") &&
        CK(c, cudaMallocAsync(&d, bytes, c->compute))) {
        if (CK(c, sc_cuda_moe_route(c->compute, rows, E, k, prob, sel, wt, pos, d)) &&
            CK(c, cudaMemcpyAsync(count, d, bytes, cudaMemcpyDeviceToHost, c->compute)))
            CK(c, cudaStreamSynchronize(c->compute));
        CK(c, cudaFreeAsync(d, c->compute));
    }
    if (c->failed && E > 0)
        memset(count, 0, (size_t)E * sizeof(int)); /* nothing sized by stale counts */
}

void sc_cuda_dec_moe_route_bwd(void *ctx, int rows, int E, int k, const float *prob,
                               const int32_t *sel, const float *wt, const float *dwt,
                               float *dlogits)
{
    sc_cuda *c = ctx;
    if (moe_shape(c, rows >= 0 && k >= 1 && k <= E, "moe_route_bwd"))
        CK(c, sc_cuda_moe_route_bwd(c->compute, rows, E, k, prob, sel, wt, dwt, dlogits));
}

void sc_cuda_dec_moe_gather(void *ctx, int rows, int k, int n, const int32_t *pos,
                            const float *x, float *xg)
{
    sc_cuda *c = ctx;
    if (moe_shape(c, rows >= 0 && k >= 1 && n >= 1, "moe_gather"))
        CK(c, sc_cuda_moe_gather(c->compute, rows, k, n, pos, x, xg));
}

void sc_cuda_dec_moe_combine(void *ctx, int rows, int k, int n, const int32_t *pos,
                             const float *wt, const float *yg, float beta, float *y)
{
    sc_cuda *c = ctx;
    if (moe_shape(c, rows >= 0 && k >= 1 && n >= 1, "moe_combine"))
        CK(c, sc_cuda_moe_combine(c->compute, rows, k, n, pos, wt, yg, beta, y));
}

void sc_cuda_dec_moe_combine_bwd(void *ctx, int rows, int k, int n, const int32_t *pos,
                                 const float *wt, const float *yg, const float *dy, float *dyg,
                                 float *dwt)
{
    sc_cuda *c = ctx;
    if (moe_shape(c, rows >= 0 && k >= 1 && n >= 1, "moe_combine_bwd"))
        CK(c, sc_cuda_moe_combine_bwd(c->compute, rows, k, n, pos, wt, yg, dy, dyg, dwt));
}
