/*
 * backend_cuda.h — private to the cuda backend's files: an instance's state
 * (backend_cuda.c says what its streams, scratch and errors are for), the
 * sticky checks every CUDA and cuBLAS call goes through (cuda_check.c), and
 * the decoder's slots (backend_cuda_dec.c, backend_cuda_moe.c), which backend_cuda.c puts in
 * its table. The transports do not include it (cuda_impl.h is theirs).
 *
 *     sc_cuda *c = ctx;
 *     if (sc_cuda_ready(c))                         // not failed, GPU current
 *         CK(c, sc_cuda_tanh_fwd(c->compute, n, x)); // a failure: sticky, one line
 * Tested by: tests/gpu/test_backend_cuda.c, tests/gpu/test_decoder_cuda.c, tests/gpu/test_moe_cuda.c, tests/gpu/test_graph_cuda.c (on a GPU and on the stand-in: tests/cudastub/run.sh).
 */
#ifndef SC_BACKEND_CUDA_H
#define SC_BACKEND_CUDA_H

#include <cublas_v2.h>

#include "cuda_impl.h"

typedef struct sc_cuda {
    int dev, gpu;
    size_t cap, used;
    cudaStream_t compute, d2h, h2d;
    cublasHandle_t blas;
    cudaEvent_t mark;          /* compute progress, for the copy streams */
    cudaEvent_t *idle;         /* ticket events ready for reuse */
    int nidle, idlecap;
    int rows;                  /* rows of the loss scratch */
    int32_t *dtgt, *htgt;      /* targets: device, pinned host */
    double *dloss, *hloss;     /* per-row loss: device, pinned host */
    double *dpart, *dsum, *hsum; /* sumsq's parts and result: device, pinned host */
    struct sc_cuda_xslot *xs;  /* run --graph: the loss of each captured xent */
    int nxs, xcap;
    float *dscores;            /* attn_bwd's dP of one KV head's group (stream-ordered) */
    size_t dscores_bytes;
    int failed;
    char err[320];
} sc_cuda;

/* Records the instance's first failure ("FILE:LINE: CALL: REASON (GPU g)")
 * and makes it inert; returns 0, so that `return sc_cuda_fail(...)` reads
 * as a failed check. */
int sc_cuda_fail(sc_cuda *c, const char *file, int line, const char *call, const char *reason);
/* 1 when e is success, else sc_cuda_fail with cudaGetErrorString /
 * cublasGetStatusString. */
int sc_cuda_ck(sc_cuda *c, cudaError_t e, const char *file, int line, const char *call);
int sc_cuda_ckb(sc_cuda *c, cublasStatus_t e, const char *file, int line, const char *call);
/* 1 when the instance may go on: not failed, its GPU current. */
int sc_cuda_ready(sc_cuda *c);

#define CK(c, call) sc_cuda_ck((c), (call), __FILE__, __LINE__, #call)
#define CKB(c, call) sc_cuda_ckb((c), (call), __FILE__, __LINE__, #call)

/* run --graph (backend_cuda_graph.c, backend.h's capture slots): xent
 * while the compute stream captures (its loss kept on the device, read by
 * graph_losses after a replay); the slots; the instance's graph state
 * freed. */
int sc_cuda_capturing(sc_cuda *c);
double sc_cuda_graph_xent(sc_cuda *c, int rows, int V, float *logits, const int32_t *targets,
                          float scale);
sc_status sc_cuda_capture_begin(void *ctx);
void sc_cuda_order(void *ctx, void *before);
sc_status sc_cuda_capture_end(void *ctx, void **graph);
sc_status sc_cuda_graph_launch(void *ctx, void *graph);
void sc_cuda_graph_free(void *ctx, void *graph);
int sc_cuda_graph_losses(void *ctx, double *loss, int max);
void sc_cuda_graph_close(sc_cuda *c);

/* The decoder's slots (backend.h), queued on the compute stream: cuBLAS
 * for attention's products, cuda_dec_kernels.cu for the rest. A bad shape
 * is a sticky failure naming the slot. */
void sc_cuda_dec_rmsnorm_fwd(void *ctx, int rows, int n, const float *x, const float *g,
                             float eps, float *y, float *rstd);
void sc_cuda_dec_rmsnorm_bwd(void *ctx, int rows, int n, const float *x, const float *g,
                             const float *rstd, const float *dy, float beta, float *dx);
void sc_cuda_dec_rmsnorm_wgrad(void *ctx, int rows, int n, const float *x, const float *rstd,
                               const float *dy, float *dg);
void sc_cuda_dec_rope(void *ctx, int rows, int seq, int pos0, int heads, int dim, float theta,
                      int sign, float *x);
void sc_cuda_dec_attn_fwd(void *ctx, int batch, int seq, int past, int heads, int kv_heads, int dim,
                          const float *q, const float *k, const float *v, float *p, float *o);
void sc_cuda_dec_attn_bwd(void *ctx, int batch, int seq, int past, int heads, int kv_heads, int dim,
                          const float *q, const float *k, const float *v, float *p,
                          const float *dout, float *dq, float *dk, float *dv);
void sc_cuda_dec_swiglu_fwd(void *ctx, size_t n, const float *g, const float *u, float *a);
void sc_cuda_dec_swiglu_bwd(void *ctx, size_t n, const float *g, const float *u, float *du,
                            float *dg);

/* The mixture of experts' slots (backend.h; backend_cuda_moe.c): the
 * kernels of cuda_moe_kernels.cu; moe_route waits for the device (its
 * counts go to the host). A bad shape is a sticky failure naming the slot. */
void sc_cuda_dec_moe_route(void *ctx, int rows, int E, int k, float *prob, int32_t *sel,
                           float *wt, int32_t *pos, int *count);
void sc_cuda_dec_moe_route_bwd(void *ctx, int rows, int E, int k, const float *prob,
                               const int32_t *sel, const float *wt, const float *dwt,
                               float *dlogits);
void sc_cuda_dec_moe_gather(void *ctx, int rows, int k, int n, const int32_t *pos,
                            const float *x, float *xg);
void sc_cuda_dec_moe_combine(void *ctx, int rows, int k, int n, const int32_t *pos,
                             const float *wt, const float *yg, float beta, float *y);
void sc_cuda_dec_moe_combine_bwd(void *ctx, int rows, int k, int n, const int32_t *pos,
                                 const float *wt, const float *yg, const float *dy, float *dyg,
                                 float *dwt);

#endif
