/*
 * cudastub_memory.c — memory of the CUDA STAND-IN (a test double,
 * tests/cudastub/README.md; what it models: cudastub.c): device and pinned
 * host allocations in the registry of cudastub.c, stream-ordered
 * cudaMallocAsync/cudaFreeAsync (queued on the stream, cudastub_stream.c),
 * copies checked when they run, the memory pools.
 */
#define _GNU_SOURCE
#include "cuda_runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudastub_impl.h"

/* ---- memory ---- */

/* Device memory of the current GPU: NULL when it does not fit. */
static void *dev_alloc(size_t bytes, int state, const char *how, cudaError_t *e)
{
    stub_lock();
    *e = cudaSuccess;
    if (stub_current >= stub_G.nvis) {
        stub_unlock();
        *e = cudaErrorInvalidDevice;
        return NULL;
    }
    if (bytes > stub_G.mem || stub_G.used[stub_current] + CONTEXT_BYTES > stub_G.mem - bytes) {
        stub_unlock();
        *e = cudaErrorMemoryAllocation;
        return NULL;
    }
    alloc *a = stub_add(bytes, stub_current, state, how);
    if (!a) {
        stub_unlock();
        *e = cudaErrorMemoryAllocation;
        return NULL;
    }
    stub_G.used[stub_current] += bytes;
    void *p = a->base;
    stub_unlock();
    return p;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    if (stub_capture_forbids("cudaMalloc"))
        RET(cudaErrorStreamCaptureUnsupported);
    cudaError_t e;
    *p = dev_alloc(bytes, A_LIVE, "cudaMalloc", &e);
    RET(e);
}

/* Free of a synchronous block: marked dead at once. */
static cudaError_t free_now(void *p, int want_gpu, const char *call)
{
    if (!p)
        return cudaSuccess;
    stub_lock();
    alloc *a = stub_find(p);
    const char *why = !a || a->base != p ? "is not the start of a block of the stand-in"
                      : a->state == A_FREED ? "was freed already"
                      : (want_gpu < 0) != (a->gpu < 0) ? "is the wrong kind of memory"
                                                      : NULL;
    if (!why) {
        stub_kill_block(a);
        stub_evict();
    }
    stub_unlock();
    if (why) {
        sc_cudastub_violation(stub_current, "%s(%p): the pointer %s", call, p, why);
        RET(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    if (stub_capture_forbids("cudaFree"))
        RET(cudaErrorStreamCaptureUnsupported);
    return free_now(p, 0, "cudaFree");
}

/* A graph's allocation comes back at each replay's allocation node, at the
 * same address (as a GPU keeps a graph's virtual addresses). */
static void make_live(void *p)
{
    pthread_mutex_lock(&stub_G.mu);
    alloc *a = stub_find(p);
    int again = a && a->graph && a->state == A_LIVE;
    if (a && a->state == A_GRAPH)
        stub_G.used[a->gpu] += a->size;
    if (a && (a->state == A_PENDING || a->state == A_GRAPH))
        a->state = A_LIVE;
    pthread_mutex_unlock(&stub_G.mu);
    if (again) /* a GPU refuses the launch (cudaErrorInvalidValue) */
        sc_cudastub_violation(stub_running ? stub_running->gpu : -1,
                              "a graph allocates %p again while its last replay's block is "
                              "still live (never freed in the graph, nor after it)", p);
}

static void make_dead(void *p)
{
    pthread_mutex_lock(&stub_G.mu);
    alloc *a = stub_find(p);
    int state = a ? a->state : -1;
    if (state == A_LIVE && a->graph) { /* kept for the next replay, poisoned */
        a->state = A_GRAPH;
        memset(a->base, 0xff, a->size);
        stub_G.used[a->gpu] -= a->size;
    } else if (state == A_LIVE) {
        stub_kill_block(a);
        stub_evict();
    }
    pthread_mutex_unlock(&stub_G.mu);
    if (state != A_LIVE)
        sc_cudastub_violation(stub_running ? stub_running->gpu : -1,
                              "cudaFreeAsync(%p) reached on its stream while the block is %s", p,
                              state < 0 ? "unknown" : state == A_PENDING ? "not yet allocated"
                                                                         : "already freed");
}

cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s)
{
    if (!stub_stream_ok(s, "cudaMallocAsync"))
        RET(cudaErrorInvalidResourceHandle);
    if (getenv("SC_CUDASTUB_NO_POOLS"))
        RET(cudaErrorNotSupported);
    cudaError_t e;
    *p = dev_alloc(bytes, A_PENDING, "cudaMallocAsync", &e);
    if (e)
        RET(e);
    stub_lock();
    alloc *a = stub_find(*p);
    a->graph = stub_capture_of(s); /* an allocation node of the graph */
    stub_unlock();
    return sc_cudastub_enqueue(s, make_live, *p, NULL, "cudaMallocAsync");
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    if (!stub_stream_ok(s, "cudaFreeAsync"))
        RET(cudaErrorInvalidResourceHandle);
    stub_lock();
    alloc *a = stub_find(p);
    if (a && a->base == p && a->dropped) { /* its graph is gone: as a GPU, an error */
        stub_unlock();
        RET(cudaErrorInvalidValue);
    }
    int ok = a && a->base == p && a->gpu >= 0 && a->state != A_FREED;
    struct sc_stub_graph *g = stub_capture_of(s);
    int foreign = ok && g && a->graph != g; /* a graph frees only its own allocations */
    if (foreign)
        stub_capture_invalidate(g);
    stub_unlock();
    if (!ok) {
        sc_cudastub_violation(stub_current, "cudaFreeAsync(%p): not a live device block", p);
        RET(cudaErrorInvalidValue);
    }
    if (foreign) {
        fprintf(stderr, "cudastub: cudaFreeAsync(%p) in a capture of memory the graph did not "
                        "allocate: the capture is invalidated\n", p);
        RET(cudaErrorInvalidValue);
    }
    return sc_cudastub_enqueue(s, make_dead, p, NULL, "cudaFreeAsync");
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags)
{
    (void)flags;
    if (stub_capture_forbids("cudaHostAlloc"))
        RET(cudaErrorStreamCaptureUnsupported);
    stub_lock();
    alloc *a = stub_add(bytes, -1, A_LIVE, "cudaHostAlloc");
    void *base = a ? a->base : NULL; /* the registry moves once unlocked */
    stub_unlock();
    if (!base)
        RET(cudaErrorMemoryAllocation);
    *p = base;
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    return cudaHostAlloc(p, bytes, 0);
}

cudaError_t cudaFreeHost(void *p)
{
    return free_now(p, -1, "cudaFreeHost");
}

typedef struct cpy {
    void *dst;
    const void *src;
    size_t bytes;
    int dgpu, sgpu;  /* -1: host */
    const char *call;
} cpy;

static void do_copy(void *p)
{
    cpy *c = p;
    char what[96];
    snprintf(what, sizeof what, "%s source", c->call);
    int ok = sc_cudastub_check(c->src, c->bytes, c->sgpu, c->sgpu < 0, what);
    snprintf(what, sizeof what, "%s destination", c->call);
    ok = sc_cudastub_check(c->dst, c->bytes, c->dgpu, c->dgpu < 0, what) && ok;
    if (ok)
        memmove(c->dst, c->src, c->bytes);
}

/* Host memory the stand-in did not allocate (pageable). */
static int pageable(const void *p)
{
    stub_lock();
    int r = stub_find(p) == NULL;
    stub_unlock();
    return r;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    if (!stub_stream_ok(s, "cudaMemcpyAsync"))
        RET(cudaErrorInvalidResourceHandle);
    if (kind == cudaMemcpyDefault || kind == cudaMemcpyHostToHost)
        RET(cudaErrorInvalidValue); /* the module always names the direction */
    cpy *c = malloc(sizeof *c);
    if (!c)
        RET(cudaErrorMemoryAllocation);
    *c = (cpy){.dst = dst, .src = src, .bytes = bytes,
               .dgpu = kind == cudaMemcpyDeviceToHost ? -1 : s->gpu,
               .sgpu = kind == cudaMemcpyHostToDevice ? -1 : s->gpu, .call = "cudaMemcpyAsync"};
    int host_pageable = (c->dgpu < 0 && pageable(dst)) || (c->sgpu < 0 && pageable(src));
    cudaError_t e = sc_cudastub_enqueue(s, do_copy, c, free, "cudaMemcpyAsync");
    /* As CUDA does with pageable host memory: the call returns once the host
     * side is done with (here: once the copy ran). */
    if (!e && host_pageable)
        e = cudaStreamSynchronize(s);
    RET(e);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev,
                                size_t bytes, cudaStream_t s)
{
    if (!stub_stream_ok(s, "cudaMemcpyPeerAsync"))
        RET(cudaErrorInvalidResourceHandle);
    if (dst_dev < 0 || dst_dev >= stub_G.nvis || src_dev < 0 || src_dev >= stub_G.nvis)
        RET(cudaErrorInvalidDevice);
    cpy *c = malloc(sizeof *c);
    if (!c)
        RET(cudaErrorMemoryAllocation);
    *c = (cpy){.dst = dst, .src = src, .bytes = bytes, .dgpu = dst_dev, .sgpu = src_dev,
               .call = "cudaMemcpyPeerAsync"};
    RET(sc_cudastub_enqueue(s, do_copy, c, free, "cudaMemcpyPeerAsync"));
}

/* One pool object per GPU: the attributes change nothing here. */
struct sc_stub_pool {
    int gpu;
};
static struct sc_stub_pool pools[MAX_GPUS];

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int dev)
{
    pthread_once(&stub_G.once, stub_init);
    if (dev < 0 || dev >= stub_G.nvis)
        RET(cudaErrorInvalidDevice);
    if (getenv("SC_CUDASTUB_NO_POOLS"))
        RET(cudaErrorNotSupported);
    pools[dev].gpu = dev;
    *pool = &pools[dev];
    return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value)
{
    (void)attr;
    (void)value;
    RET(pool ? cudaSuccess : cudaErrorInvalidValue);
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep_bytes)
{
    (void)keep_bytes;
    RET(pool ? cudaSuccess : cudaErrorInvalidValue);
}
