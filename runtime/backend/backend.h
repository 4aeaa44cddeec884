/*
 * backend.h — memory and compute of one device (runtime/README.md).
 *
 * A backend is a table of function pointers and a context, one instance per
 * device (the ggml backend pattern). The executor and the built-in model
 * only call these slots, so a CUDA backend plugs in by filling the same
 * table. All tensors are row-major float32; sizes are element counts.
 *
 * Memory. Pointers from alloc are *device* memory: only the backend's own
 * slots touch them (on cuda they are GPU pointers, on cpu plain heap). The
 * host reads and writes them through upload/download; every other host
 * pointer a slot takes is named as such (xent's targets).
 *
 * Ordering and errors. Compute slots may only queue their work (cuda: on
 * the device's compute stream) and return at once; work runs in the order
 * queued. They report nothing: a failure is *sticky*, recorded by the
 * backend, makes later slots do nothing, and is returned by the next sync
 * (errmsg says which call failed, in one line). The executor syncs after
 * every pass, so a failure is reported at the pass that caused it.
 *
 *     sc_backend *be;
 *     if (sc_backend_cpu_open(0, &be, err, sizeof err) != SC_OK) ...
 *     float *x = be->ops->alloc(be->ctx, n * sizeof(float));
 *     be->ops->gemm(be->ctx, 0, 0, M, N, K, 1.0f, A, B, 0.0f, C);
 *     be->ops->free(be->ctx, x, n * sizeof(float));
 *     sc_backend_free(be);
 *
 * Thread-safety: one instance is used by one thread at a time; instances are
 * independent (one per device thread); a lane (lane_open) runs on its own
 * thread while its device's instance runs on another.
 * Tested by: tests/unit/test_runtime.c, tests/unit/test_decoder_ops.c, tests/unit/test_moe_ops.c, tests/gpu/test_backend_cuda.c, tests/gpu/test_decoder_cuda.c, tests/gpu/test_moe_cuda.c.
 */
#ifndef SC_BACKEND_H
#define SC_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "adamw_k.h"
#include "ir/ir.h"

struct sc_backend;
struct sc_hostlink;

struct sc_backend_ops {
    const char *name;
    /* Device memory; NULL when the device is out of memory. free(NULL) is a
     * no-op; bytes is the size given to alloc. */
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *p, size_t bytes);
    /* C = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T (ta, tb);
     * op(A) is M x K, op(B) is K x N, C is M x N, all dense row-major. */
    void (*gemm)(void *ctx, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                 const float *B, float beta, float *C);
    void (*copy)(void *ctx, size_t n, const float *src, float *dst);
    void (*tanh_fwd)(void *ctx, size_t n, float *x);                  /* x = tanh(x) */
    void (*tanh_bwd)(void *ctx, size_t n, const float *a, float *g);  /* g *= 1 - a^2 */
    /* Softmax cross-entropy of rows x V logits against targets (host
     * memory, rows entries in [0, V)): overwrites the logits with
     * scale * (softmax - onehot) and returns the sum over rows of
     * -log softmax[target] (each row's term in double, summed on the host in
     * row order). Waits for the device (the loss is needed on the host);
     * NaN after a failure. */
    double (*xent)(void *ctx, int rows, int V, float *logits, const int32_t *targets,
                   float scale);
    /* x -= lr * g */
    void (*sgd)(void *ctx, size_t n, float lr, const float *g, float *x);
    /* One AdamW step on n parameters, in place, all device memory
     * (runtime/model/optim.c says what k holds): per element, in float and
     * rounded after every operation (no fused multiply-add),
     *   g' = g * coef; m = b1 m + (1 - b1) g'; v = b2 v + (1 - b2) g' g';
     *   w = w decay - step (m / (sqrt(v) / sbc2 + eps)),
     * so that every backend gives the same bits. */
    void (*adamw)(void *ctx, size_t n, float *w, const float *g, float *m, float *v,
                  const struct sc_adamw_k *k);
    /* out[0] = the sum of g[i]^2 (in double) over the finite g[i], out[1] =
     * how many are not finite. Waits for the device (the host needs the
     * result); the order of the sum is the backend's, fixed (cpu: index
     * order), so a backend repeats its bits. */
    sc_status (*sumsq)(void *ctx, size_t n, const float *g, double out[2]);
    /* Host <-> device memory, synchronous for the host buffer: upload
     * returns once src may be reused (the copy is queued before any compute
     * queued later), download once dst holds the data (after the compute
     * queued so far). cpu: memcpy. */
    void (*upload)(void *ctx, void *dst, const void *src, size_t bytes);
    void (*download)(void *ctx, void *dst, const void *src, size_t bytes);
    /* Optional (NULL: the caller generates on the host and uploads):
     * x[i] = scale * sc_urand(seed, stream, i) for i < n (sc_hash.h), the
     * same bits on every backend; scale 0 writes zeros. For the built-in
     * model's data, generated where it is used. */
    void (*fill_uniform)(void *ctx, float *x, size_t n, long long seed, uint64_t stream,
                         float scale);
    /* Optional (NULL: nothing is ever queued, nothing can fail): waits for
     * the queued compute; returns SC_ERR_RUNTIME once any slot has failed
     * since the backend was opened (errmsg says which, sticky). */
    sc_status (*sync)(void *ctx);

    /* The host pool for offload (docs/offload.md#running). host_alloc returns host
     * memory the device copies to and from asynchronously (pinned on CUDA);
     * NULL when the host is out of memory. */
    void *(*host_alloc)(void *ctx, size_t bytes);
    void (*host_free)(void *ctx, void *p, size_t bytes);
    /* Starts copying `bytes` from src to dst: to_host = 1 device -> host
     * (after the compute queued so far, which may have produced src), 0 host
     * -> device. Returns at once with *ticket (NULL when the copy is already
     * done). copy_wait(ticket) blocks until that copy has completed: then
     * compute queued afterwards sees dst, and src may be freed or reused.
     * Each direction has its own queue (a copy stream on CUDA), so copies in
     * opposite directions overlap each other and the compute. */
    sc_status (*copy_start)(void *ctx, int to_host, void *dst, const void *src, size_t bytes,
                            void **ticket);
    sc_status (*copy_wait)(void *ctx, void *ticket);
    /* Optional: copy_wait, and when the copy ran (*t0, *t1: its start and
     * end on sc_exec_now's clock), for the measured timeline's host row. */
    sc_status (*copy_wait_at)(void *ctx, void *ticket, double *t0, double *t1);
    /* Optional (cpu): the host link's copy engine (hostlink.h) the copies
     * go through from now on, shared with the other device of a pair when
     * the program says so; without one they are done inside copy_start. */
    void (*use_link)(void *ctx, struct sc_hostlink *link);
    /* Optional: the message of the backend's first failure, one line with
     * the call, file and reason (cuda: cudaGetErrorString); NULL: none. */
    const char *(*errmsg)(void *ctx);
    /* Optional: the physical device behind this instance (gpu: its index)
     * and its free and total memory in bytes (cudaMemGetInfo); for the
     * out-of-memory messages and the check before a run. */
    sc_status (*meminfo)(void *ctx, int *gpu, size_t *free_bytes, size_t *total_bytes);
    /* Optional (overlapped pairs, docs/run.md#overlapped-pairs; NULL: a
     * pair's halves run in turn): a second instance on the same device, its
     * *lane*, whose compute slots queue on a queue of their own (cuda: a
     * second stream with its own cuBLAS handle), so that the two halves of
     * a pair run at once, each from its own host thread. Memory comes and
     * goes through ctx only (the lane's compute slots use ctx's tensors;
     * the lane allocates none). lane_fork: the lane's next work waits for
     * what ctx has queued so far; lane_join: ctx's next work waits for what
     * the lane has queued (both without blocking the host; on the cpu, where
     * every slot has finished when it returns, they do nothing). The lane is
     * freed with sc_backend_free, before ctx. */
    sc_status (*lane_open)(void *ctx, struct sc_backend **lane);
    void (*lane_fork)(void *ctx, void *lane_ctx);
    void (*lane_join)(void *ctx, void *lane_ctx);

    /* Optional as a set (run --graph, docs/graphs.md; NULL: no graphs): a
     * step's work captured once and replayed.
     *   capture_begin: what ctx queues from now on is recorded, not run (its
     *     compute stream starts a capture, of which it is the origin);
     *   order: ctx's next work waits for what `before` (an instance of the
     *     same backend) has queued so far, without blocking the host; an
     *     instance that waits so for a capturing one joins its capture, and
     *     the origin joins the others back the same way before the end;
     *   capture_end: ends the capture and makes its graph (*graph), or
     *     fails (errmsg: a synchronizing call inside, a stream not joined
     *     back);
     *   graph_launch: queues one replay on ctx's compute stream;
     *   graph_free: frees a graph (NULL: nothing);
     *   graph_losses: after a replay, waits for it and writes the loss of
     *     each xent captured in ctx, in the order called (at most max);
     *     returns how many (-1 after a failure).
     * While its compute stream captures, xent returns 0 and keeps the loss
     * on the device; no other slot may wait for the device then (sumsq,
     * upload, download, copy_wait, sync fail: the stand-in and a GPU refuse
     * them). */
    sc_status (*capture_begin)(void *ctx);
    void (*order)(void *ctx, void *before);
    sc_status (*capture_end)(void *ctx, void **graph);
    sc_status (*graph_launch)(void *ctx, void *graph);
    void (*graph_free)(void *ctx, void *graph);
    int (*graph_losses)(void *ctx, double *loss, int max);

    /* ---- The decoder's layers (runtime/model: RMSNorm, rotary positions,
     * causal attention with grouped KV heads, SwiGLU). Optional as a set:
     * a backend without them (NULL) cannot run the decoder, and the model
     * says so. Queued like the other compute slots; rows are row-major.
     * A microbatch is `batch` sequences of `seq` tokens, row r = b seq + t
     * (position t). ---- */
    /* RMSNorm of rows x n: rstd[r] = 1 / sqrt(mean_i x[r,i]^2 + eps) (the
     * sum in double), y = x rstd g (g: n weights). y may not alias x. */
    void (*rmsnorm_fwd)(void *ctx, int rows, int n, const float *x, const float *g, float eps,
                        float *y, float *rstd);
    /* Its input gradient from dy: with xh = x rstd,
     *   dx = beta dx + rstd (g dy - xh mean_i(xh g dy))   (beta 0 or 1). */
    void (*rmsnorm_bwd)(void *ctx, int rows, int n, const float *x, const float *g,
                        const float *rstd, const float *dy, float beta, float *dx);
    /* Its weight gradient: dg[i] += sum over rows of dy[r,i] x[r,i] rstd[r]
     * (in row order). */
    void (*rmsnorm_wgrad)(void *ctx, int rows, int n, const float *x, const float *rstd,
                          const float *dy, float *dg);
    /* Rotary positions, in place, on x: rows x (heads dim), dim even, row r
     * at position t = pos0 + r % seq (pos0: the first token's, 0 for a
     * whole sequence, c_j for a sequence slice, docs/slices.md#run). Head
     * j's pair (i, i + dim/2) of the row turns by the angle
     * sign t theta^(-2i/dim), i < dim/2 (the rotate-half convention of
     * Hugging Face's Llama); sign -1 turns back: the backward pass. */
    void (*rope)(void *ctx, int rows, int seq, int pos0, int heads, int dim, float theta,
                 int sign, float *x);
    /* Causal attention of seq queries per sequence, at positions past ..
     * past + seq - 1, over kn = past + seq keys (past: the keys and values
     * of the sequence's earlier tokens, a key/value prefix; 0 for a whole
     * sequence; docs/slices.md#run). q, o: batch seq x (heads dim); k, v:
     * batch kn x (kv_heads dim), kv_heads dividing heads (query head j
     * reads KV head j / (heads / kv_heads)). p: batch x heads x seq x kn,
     * the softmax of q k^T / sqrt(dim) over keys u <= past + t (0 past
     * it), kept for the backward; o = p v. */
    void (*attn_fwd)(void *ctx, int batch, int seq, int past, int heads, int kv_heads, int dim,
                     const float *q, const float *k, const float *v, float *p, float *o);
    /* Its gradients from dout: dq (batch seq rows), dk, dv (batch kn rows)
     * written (not accumulated); p is the forward's and is overwritten
     * (scratch of the softmax's gradient). */
    void (*attn_bwd)(void *ctx, int batch, int seq, int past, int heads, int kv_heads, int dim,
                     const float *q, const float *k, const float *v, float *p,
                     const float *dout, float *dq, float *dk, float *dv);
    /* SwiGLU of n elements: a = silu(g) u, silu(z) = z / (1 + e^-z). */
    void (*swiglu_fwd)(void *ctx, size_t n, const float *g, const float *u, float *a);
    /* Its gradients, in place: du holds da on entry and du = da silu(g) on
     * return; dg = da u silu'(g). */
    void (*swiglu_bwd)(void *ctx, size_t n, const float *g, const float *u, float *du,
                       float *dg);

    /* ---- Mixture of experts (runtime/model/model_moe.c,
     * docs/run.md#mixture-of-experts). Optional as a set (NULL: the model
     * says the backend cannot run it). `rows` tokens each go to k of E
     * experts; their rows k copies are laid out *gathered*: expert 0's
     * first, then expert 1's, ..., each expert's in row order. sel and pos
     * are int32 device memory. ---- */
    /* The router: prob holds rows x E logits on entry and their softmax on
     * return (max subtracted, the normaliser in double). sel[r k + i]: the
     * expert of row r's i-th largest probability (equal ones: the lower
     * expert first); wt[r k + i] = its probability / the sum (in double) of
     * the k chosen; pos[r k + i]: that copy's row among the gathered;
     * count (host memory, E ints): the rows each expert receives. Waits
     * for the device (the host sizes the experts' products by count). */
    void (*moe_route)(void *ctx, int rows, int E, int k, float *prob, int32_t *sel, float *wt,
                      int32_t *pos, int *count);
    /* Its backward from dwt (rows x k; the selection has no gradient):
     * with s the chosen probabilities' sum and dot = sum_i wt_i dwt_i,
     * dp = (dwt_i - dot) / s at the chosen experts, 0 elsewhere;
     * dlogits = p (dp - sum_e p_e dp_e), written (rows x E). */
    void (*moe_route_bwd)(void *ctx, int rows, int E, int k, const float *prob,
                          const int32_t *sel, const float *wt, const float *dwt,
                          float *dlogits);
    /* Dispatch: xg[pos[j]] = x[j / k] for j < rows k (rows of n floats). */
    void (*moe_gather)(void *ctx, int rows, int k, int n, const int32_t *pos, const float *x,
                       float *xg);
    /* Combine: y[r] = beta y[r] + sum over i in order of
     * wt[r k + i] yg[pos[r k + i]] (wt NULL: weights 1, the dispatch's
     * backward; beta 0 or 1). */
    void (*moe_combine)(void *ctx, int rows, int k, int n, const int32_t *pos, const float *wt,
                        const float *yg, float beta, float *y);
    /* Combine's backward: dyg[pos[j]] = wt[j] dy[j / k]; dwt[j] = the dot
     * of dy[j / k] and yg[pos[j]] (in double). Both written. */
    void (*moe_combine_bwd)(void *ctx, int rows, int k, int n, const int32_t *pos,
                            const float *wt, const float *yg, const float *dy, float *dyg,
                            float *dwt);
};

typedef struct sc_backend {
    const struct sc_backend_ops *ops;
    void *ctx;
    void (*free_fn)(struct sc_backend *be);
} sc_backend;

/* Frees a backend through its free_fn; NULL is a no-op (backend.c). */
void sc_backend_free(sc_backend *be);

/* The backends themselves; device/device.h opens them by kind name ("cpu",
 * "cuda"). mem_cap > 0 limits the device memory in bytes (allocations
 * beyond it fail as out of memory); 0 means no limit. On failure they write
 * one line to err and return SC_ERR_ARG (unavailable) or SC_ERR_NOMEM.
 * free_fn of a backend frees its context; sc_backend_free calls it. */
sc_status sc_backend_cpu_open(size_t mem_cap, sc_backend **out, char *err, size_t errlen);
/* In the CUDA module (built when nvcc was found), which device/cuda_load.c
 * loads at the first call of these three. dev selects the GPU (dev
 * modulo the visible GPUs); several instances may share one GPU (emulated
 * devices): each has its own streams, cuBLAS handle and memory cap.
 * STAGECRAFT_CUDA_TF32=1 lets cuBLAS use TF32 tensor cores (for benchmarks;
 * the --check tolerance assumes full FP32, the default). */
sc_status sc_backend_cuda_open(int dev, size_t mem_cap, sc_backend **out, char *err,
                               size_t errlen);

/* CUDA devices this process sees: 0 when there are none or the binary was
 * built without CUDA. info (may be NULL) receives why there are none, or
 * the name of GPU 0 ("NVIDIA H200"). */
int sc_backend_cuda_devices(char *info, size_t infolen);

/* The 16-byte UUID of visible GPU gpu (the same physical GPU has the same
 * UUID in every process, whatever CUDA_VISIBLE_DEVICES renumbers); 0 when
 * there is no such GPU or no CUDA. */
int sc_backend_cuda_uuid(int gpu, unsigned char uuid[16]);

#endif
