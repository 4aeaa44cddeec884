/*
 * backend.h — memory and compute of one device (design.md §3).
 *
 * A backend is a table of function pointers and a context, one instance per
 * device (the ggml backend pattern). The executor and the built-in model
 * only call these slots, so a CUDA backend plugs in by filling the same
 * table. All tensors are row-major float32; sizes are element counts.
 *
 *     sc_backend *be;
 *     if (sc_backend_open("cpu", 0, &be, err, sizeof err) != SC_OK) ...
 *     float *x = be->ops->alloc(be->ctx, n * sizeof(float));
 *     be->ops->gemm(be->ctx, 0, 0, M, N, K, 1.0f, A, B, 0.0f, C);
 *     be->ops->free(be->ctx, x, n * sizeof(float));
 *     sc_backend_free(be);
 *
 * Thread-safety: one instance is used by one thread at a time; instances are
 * independent (one per device thread).
 */
#ifndef SC_BACKEND_H
#define SC_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "ir.h"

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
    /* Softmax cross-entropy of rows x V logits against targets: overwrites
     * the logits with scale * (softmax - onehot) and returns the sum over
     * rows of -log softmax[target] (in double, rows in order). */
    double (*xent)(void *ctx, int rows, int V, float *logits, const int32_t *targets,
                   float scale);
    /* x -= lr * g */
    void (*sgd)(void *ctx, size_t n, float lr, const float *g, float *x);
    /* Optional (NULL: nothing to wait for): waits for queued work. */
    void (*sync)(void *ctx);

    /* The host pool for offload (SPEC.md, offload). host_alloc returns host
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
    /* Message of the last failure of copy_start/copy_wait (NULL: none). */
    const char *(*errmsg)(void *ctx);
};

typedef struct sc_backend {
    const struct sc_backend_ops *ops;
    void *ctx;
    void (*free_fn)(struct sc_backend *be);
} sc_backend;

/* Opens backend `name` ("cpu" or "cuda") for device `dev` of this process
 * (cuda: the GPU it runs on is dev modulo the visible GPUs). mem_cap > 0
 * limits the device memory in bytes (allocations beyond it fail as out of
 * memory); 0 means no limit. On failure writes one line to err and returns
 * SC_ERR_ARG (unknown or unavailable) or SC_ERR_NOMEM. */
sc_status sc_backend_open(const char *name, int dev, size_t mem_cap, sc_backend **out, char *err,
                          size_t errlen);
void sc_backend_free(sc_backend *be);

/* The backends themselves (backend.c dispatches by name). free_fn of a
 * backend frees its context; sc_backend_free calls it. */
sc_status sc_backend_cpu_open(size_t mem_cap, sc_backend **out, char *err, size_t errlen);
/* Built only when nvcc was found (SC_HAVE_CUDA). */
sc_status sc_backend_cuda_open(int dev, size_t mem_cap, sc_backend **out, char *err,
                               size_t errlen);

#endif
