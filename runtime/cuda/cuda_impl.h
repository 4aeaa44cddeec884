/*
 * cuda_impl.h — private to the CUDA module (libstagecraft_cuda.so, built
 * only when the Makefile found nvcc; cuda_api.h): the kernel launchers of
 * cuda_kernels.cu and cuda_dec_kernels.cu, the module's entry points, and
 * what the CUDA transports need from a cuda backend.
 *
 * Launchers (llm.c's pattern): each computes its grid, clears the thread's
 * last error, launches on the given stream and returns the launch's
 * cudaGetLastError(); shapes are the caller's (the slots of backend_cuda.c
 * and backend_cuda_dec.c check them). Kernels never allocate.
 *
 * Errors stop here: every CUDA, cuBLAS and NCCL call of the runtime goes
 * through a check that writes one line, "FILE:LINE: CALL: REASON"
 * (cudaGetErrorString, cublasGetStatusString, ncclGetErrorString), into the
 * caller's message, and the caller returns a status (runtime/README.md).
 * Tested by: tests/gpu/test_backend_cuda.c, tests/gpu/test_decoder_cuda.c, tests/gpu/test_moe_cuda.c (the launchers' shapes), tests/cudastub/run.sh.
 */
#ifndef SC_CUDA_IMPL_H
#define SC_CUDA_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "backend/adamw_k.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x = tanh(x); g *= 1 - a^2; x -= lr * g (n elements, any n). */
cudaError_t sc_cuda_tanh_fwd(cudaStream_t s, size_t n, float *x);
cudaError_t sc_cuda_tanh_bwd(cudaStream_t s, size_t n, const float *a, float *g);
cudaError_t sc_cuda_sgd(cudaStream_t s, size_t n, float lr, const float *g, float *x);
/* One AdamW step (backend.h's adamw), the CPU backend's bits. */
cudaError_t sc_cuda_adamw(cudaStream_t s, size_t n, float *w, const float *g, float *m, float *v,
                          const struct sc_adamw_k *k);
/* out[0] = sum of squares of the finite g, out[1] = count of the others,
 * in a fixed order (part: SC_CUDA_SUMSQ_PARTS doubles of device scratch;
 * out: 2 doubles of device memory). */
#define SC_CUDA_SUMSQ_PARTS 512
cudaError_t sc_cuda_sumsq(cudaStream_t s, size_t n, const float *g, double *part, double *out);
/* x[i] = scale * sc_urand(seed, stream, i) (sc_hash.h), 0 when scale is 0. */
cudaError_t sc_cuda_fill_uniform(cudaStream_t s, size_t n, float *x, long long seed,
                                 uint64_t stream, float scale);
/* Softmax cross-entropy, one block per row (deterministic: a fixed
 * reduction tree): logits = scale * (softmax - onehot(targets)),
 * row_loss[r] = logsumexp(row) - row[target] in double. targets and
 * row_loss are device memory. */
cudaError_t sc_cuda_xent(cudaStream_t s, int rows, int V, float *logits, const int32_t *targets,
                         float scale, double *row_loss);

/* The decoder's kernels (cuda_dec_kernels.cu), backend.h's slots of the
 * same names; an empty shape launches nothing. RMSNorm, the softmaxes: one
 * block per row, fixed reduction trees in double; wgrad: one thread per
 * column, rows in order. */
cudaError_t sc_cuda_rmsnorm_fwd(cudaStream_t s, int rows, int n, const float *x, const float *g,
                                float eps, float *y, float *rstd);
cudaError_t sc_cuda_rmsnorm_bwd(cudaStream_t s, int rows, int n, const float *x, const float *g,
                                const float *rstd, const float *dy, float beta, float *dx);
cudaError_t sc_cuda_rmsnorm_wgrad(cudaStream_t s, int rows, int n, const float *x,
                                  const float *rstd, const float *dy, float *dg);
cudaError_t sc_cuda_rope(cudaStream_t s, int rows, int seq, int pos0, int heads, int dim,
                         float theta, int sign, float *x);
/* In place over rows x (past + seq) scores, row r at position past + r %
 * seq: the softmax over columns <= the position, 0 past it; and its
 * gradient, p = p (dp - sum p dp) over the same columns (dp: alike). */
cudaError_t sc_cuda_causal_softmax(cudaStream_t s, int rows, int seq, int past, float *p);
cudaError_t sc_cuda_causal_softmax_bwd(cudaStream_t s, int rows, int seq, int past, float *p,
                                       const float *dp);
cudaError_t sc_cuda_swiglu_fwd(cudaStream_t s, size_t n, const float *g, const float *u,
                               float *a);
cudaError_t sc_cuda_swiglu_bwd(cudaStream_t s, size_t n, const float *g, const float *u,
                               float *du, float *dg);

/* The mixture of experts' kernels (cuda_moe_kernels.cu), backend.h's slots
 * of the same names, except that count is device memory (the slot copies
 * it to the host); an empty shape launches nothing. */
cudaError_t sc_cuda_moe_route(cudaStream_t s, int rows, int E, int k, float *prob, int32_t *sel,
                              float *wt, int32_t *pos, int *count);
cudaError_t sc_cuda_moe_route_bwd(cudaStream_t s, int rows, int E, int k, const float *prob,
                                  const int32_t *sel, const float *wt, const float *dwt,
                                  float *dlogits);
cudaError_t sc_cuda_moe_gather(cudaStream_t s, int rows, int k, int n, const int32_t *pos,
                               const float *x, float *xg);
cudaError_t sc_cuda_moe_combine(cudaStream_t s, int rows, int k, int n, const int32_t *pos,
                                const float *wt, const float *yg, float beta, float *y);
cudaError_t sc_cuda_moe_combine_bwd(cudaStream_t s, int rows, int k, int n, const int32_t *pos,
                                    const float *wt, const float *yg, const float *dy,
                                    float *dyg, float *dwt);

#ifdef __cplusplus
}

#else /* C only: the backend's side */

#include "backend/backend.h"
#include "transport/transport.h"

/* The module's entry points (cuda_api.h gives them to the executable; the
 * public names of backend.h and transport.h forward to them). */
int sc_cuda_devices(char *info, size_t infolen);
int sc_cuda_gpu_uuid(int gpu, unsigned char uuid[16]);
sc_status sc_cuda_open(int dev, size_t mem_cap, sc_backend **out, char *err, size_t errlen);
sc_status sc_cuda_local_new(int P, sc_backend *const *be, int max_tag, double timeout_s,
                            sc_transport **out, char *err, size_t errlen);
void sc_cuda_local_free(sc_transport *tp);
sc_status sc_cuda_nccl_id(unsigned char *id, char *err, size_t errlen);
sc_status sc_cuda_nccl_new(int P, int n, const int *devs, sc_backend *const *be,
                          const unsigned char *id, double timeout_s, sc_transport **out,
                          char *err, size_t errlen);
void sc_cuda_nccl_free(sc_transport *tp);

/* Monotonic clock in seconds (the module does not use the executable's). */
double sc_cuda_now(void);

/* Makes gpu the calling thread's current device (cudaSetDevice, skipped when
 * it is already; one cache for the whole runtime). */
cudaError_t sc_cuda_use(int gpu);

/* For the transports: the GPU and the compute stream of a cuda backend
 * (NULL / -1 when be is not one). A transfer's copy or NCCL call is ordered
 * after the compute queued on this stream when the group is posted. */
int sc_cuda_backend_gpu(const sc_backend *be);
cudaStream_t sc_cuda_backend_stream(const sc_backend *be);

/* "FILE:LINE: CALL: REASON" into buf (CALL up to its first '('). */
void sc_cuda_format(char *buf, size_t len, const char *file, int line, const char *call,
                    const char *reason);

/* NCCL, loaded on first use (nccl_lib.c says where it looks): the entry
 * points the nccl transport calls, or NULL with one line in err (not built
 * in, or not found). The module never links libnccl.so.2, so a machine
 * without it still runs p = 1 and cuda-local. Thread-safe; loads once. */
#ifdef SC_HAVE_NCCL
#include <nccl.h>
typedef struct sc_nccl_lib {
    ncclResult_t (*GetVersion)(int *version);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
    ncclResult_t (*CommInitRankConfig)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                       ncclConfig_t *config);
    ncclResult_t (*CommFinalize)(ncclComm_t comm);
    ncclResult_t (*CommDestroy)(ncclComm_t comm);
    ncclResult_t (*CommAbort)(ncclComm_t comm);
    ncclResult_t (*CommGetAsyncError)(ncclComm_t comm, ncclResult_t *async);
    const char *(*GetErrorString)(ncclResult_t r);
    const char *(*GetLastError)(ncclComm_t comm);
    ncclResult_t (*GroupStart)(void);
    ncclResult_t (*GroupEnd)(void);
    ncclResult_t (*Send)(const void *buf, size_t count, ncclDataType_t type, int peer,
                         ncclComm_t comm, cudaStream_t s);
    ncclResult_t (*Recv)(void *buf, size_t count, ncclDataType_t type, int peer,
                         ncclComm_t comm, cudaStream_t s);
    ncclResult_t (*CommSplit)(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                              ncclConfig_t *config);
    ncclResult_t (*AllReduce)(const void *send, void *recv, size_t count, ncclDataType_t type,
                              ncclRedOp_t op, ncclComm_t comm, cudaStream_t s);
    ncclResult_t (*Broadcast)(const void *send, void *recv, size_t count, ncclDataType_t type,
                              int root, ncclComm_t comm, cudaStream_t s);
    char path[1024];   /* the file it came from */
    int version;       /* ncclGetVersion, e.g. 22809 */
} sc_nccl_lib;
#else
typedef struct sc_nccl_lib sc_nccl_lib;
#endif
const sc_nccl_lib *sc_cuda_nccl_lib(char *err, size_t errlen);
/* 1 when the nccl transport can be used here (built in and NCCL loads);
 * else 0 and why. */
int sc_cuda_nccl_usable(char *why, size_t whylen);

#endif

#endif
