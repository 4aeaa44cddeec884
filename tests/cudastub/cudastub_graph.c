/*
 * cudastub_graph.c — stream capture and graphs of the CUDA STAND-IN (a test
 * double, tests/cudastub/README.md).
 *
 * cudaStreamBeginCapture makes a stream the origin of a capture: from then
 * on what is queued on it is recorded (cudastub_stream.c, capture_append)
 * instead of run, and so is what is queued on every stream that joins the
 * capture by waiting for an event recorded in it. Event records and waits
 * inside a capture are edges, not operations. cudaStreamEndCapture checks
 * what a GPU checks: the capture was not invalidated (a synchronizing call
 * on a capturing stream or captured event, an unsafe call during a
 * global-mode capture, a wait for work outside it), and every joined stream
 * was joined back (each captured operation comes before the origin's last
 * one, through stream order and event edges: else
 * cudaErrorStreamCaptureUnjoined).
 *
 * A launch queues one operation on its stream that replays the captured
 * operations in capture order, which is a topological order of the graph
 * (an operation is recorded after everything it depends on), each run as if
 * on its own stream and GPU. A graph's cudaMallocAsync and cudaFreeAsync are
 * nodes too: the block is live from the replay's allocation to its free,
 * poisoned in between (cudastub_memory.c, A_GRAPH), at the same address in
 * every replay.
 */
#define _GNU_SOURCE
#include "cuda_runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudastub_impl.h"

#define EXEC_MAGIC 0x47455845U

struct sc_stub_graph_exec {
    unsigned magic;
    struct sc_stub_graph *g;
    int destroyed;
    int refs;              /* the instance and its launches in flight (G.mu) */
};

static int graph_ok(cudaGraph_t g)
{
    return g && g->magic == GRAPH_MAGIC && g->ended;
}

/* Drops one reference (G.mu held); the last frees the captured operations
 * and the graph's memory (its blocks not live: a live one belongs to whoever
 * did not free it). */
static void graph_unref(struct sc_stub_graph *g)
{
    if (--g->refs > 0)
        return;
    for (int i = 0; i < stub_G.na; i++) {
        alloc *a = &stub_G.a[i];
        if (a->graph != g)
            continue;
        a->graph = NULL;
        if (a->state == A_LIVE)
            continue;
        if (a->state == A_GRAPH)
            stub_G.used[a->gpu] += a->size; /* counted again, for stub_kill_block */
        stub_kill_block(a);
        a->dropped = 1;
    }
    for (long i = 0; i < g->n; i++)
        if (g->ops[i].free_fn)
            g->ops[i].free_fn(g->ops[i].arg);
    free(g->ops);
    g->magic = 0;
    free(g);
}

static void exec_unref(struct sc_stub_graph_exec *x)
{
    if (--x->refs > 0)
        return;
    graph_unref(x->g);
    x->magic = 0;
    free(x);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    if (!stub_stream_ok(s, "cudaStreamBeginCapture"))
        RET(cudaErrorInvalidResourceHandle);
    struct sc_stub_graph *g = calloc(1, sizeof *g);
    if (!g)
        RET(cudaErrorMemoryAllocation);
    *g = (struct sc_stub_graph){.magic = GRAPH_MAGIC, .mode = (int)mode,
                                .status = cudaStreamCaptureStatusActive, .origin = s, .refs = 1};
    stub_lock();
    if (s->cap) {
        stub_unlock();
        free(g);
        RET(cudaErrorStreamCaptureUnsupported); /* already capturing */
    }
    s->cap = g;
    s->cap_last = -1;
    stub_G.captures++;
    stub_unlock();
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
    if (!stub_stream_ok(s, "cudaStreamIsCapturing"))
        RET(cudaErrorInvalidResourceHandle);
    stub_lock();
    *status = s->cap ? (enum cudaStreamCaptureStatus)s->cap->status : cudaStreamCaptureStatusNone;
    stub_unlock();
    return cudaSuccess;
}

/* Whether every captured operation comes before operation `last` (G.mu
 * held): walks stream order and event edges back from it. */
static int joined(const struct sc_stub_graph *g, long last)
{
    if (g->n == 0)
        return 1;
    char *seen = calloc((size_t)g->n, 1);
    long *todo = malloc((size_t)g->n * sizeof *todo);
    long nt = 0, reached = 0;
    if (!seen || !todo) {
        free(seen);
        free(todo);
        return 1; /* cannot tell: not reported */
    }
    if (last >= 0) {
        seen[last] = 1;
        todo[nt++] = last;
    }
    while (nt > 0) {
        const cop *o = &g->ops[todo[--nt]];
        reached++;
        long up[2] = {o->prev, o->dep};
        for (int k = 0; k < 2; k++)
            if (up[k] >= 0 && !seen[up[k]]) {
                seen[up[k]] = 1;
                todo[nt++] = up[k];
            }
    }
    free(seen);
    free(todo);
    return reached == g->n;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
    *graph = NULL;
    if (!stub_stream_ok(s, "cudaStreamEndCapture"))
        RET(cudaErrorInvalidResourceHandle);
    stub_lock();
    struct sc_stub_graph *g = s->cap;
    if (!g || g->origin != s) {
        stub_unlock();
        RET(cudaErrorStreamCaptureUnmatched);
    }
    cudaError_t e = g->status != cudaStreamCaptureStatusActive ? cudaErrorStreamCaptureInvalidated
                    : !joined(g, s->cap_last)                  ? cudaErrorStreamCaptureUnjoined
                                                               : cudaSuccess;
    stub_capture_detach(g);
    g->ended = 1;
    if (e)
        graph_unref(g);
    else
        *graph = g;
    stub_unlock();
    if (e == cudaErrorStreamCaptureUnjoined)
        fprintf(stderr, "cudastub: cudaStreamEndCapture: a stream that joined the capture was "
                        "not joined back to its origin\n");
    RET(e);
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags)
{
    (void)flags;
    *exec = NULL;
    if (!graph_ok(graph))
        RET(cudaErrorInvalidValue);
    struct sc_stub_graph_exec *x = calloc(1, sizeof *x);
    if (!x)
        RET(cudaErrorMemoryAllocation);
    stub_lock();
    graph->refs++;
    stub_unlock();
    *x = (struct sc_stub_graph_exec){.magic = EXEC_MAGIC, .g = graph, .refs = 1};
    *exec = x;
    return cudaSuccess;
}

/* A launch on the launching stream's thread: every captured operation in
 * capture order, each as if run by its own stream (stub_running) and GPU. */
static void replay(void *p)
{
    struct sc_stub_graph_exec *x = p;
    cudaStream_t was = stub_running;
    int cur = stub_current;
    for (long i = 0; i < x->g->n; i++) {
        const cop *o = &x->g->ops[i];
        if (!o->fn)
            continue;
        stub_running = o->s;
        stub_current = o->gpu;
        o->fn(o->arg);
    }
    stub_running = was;
    stub_current = cur;
}

static void launch_done(void *p)
{
    stub_lock();
    exec_unref(p);
    stub_unlock();
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
    if (!exec || exec->magic != EXEC_MAGIC || exec->destroyed)
        RET(cudaErrorInvalidValue);
    if (!stub_stream_ok(s, "cudaGraphLaunch"))
        RET(cudaErrorInvalidResourceHandle);
    stub_lock();
    exec->refs++;
    stub_unlock();
    return sc_cudastub_enqueue(s, replay, exec, launch_done, "cudaGraphLaunch");
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    if (!exec || exec->magic != EXEC_MAGIC || exec->destroyed)
        RET(cudaErrorInvalidValue);
    stub_lock();
    exec->destroyed = 1; /* launches in flight still complete */
    exec_unref(exec);
    stub_unlock();
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    if (!graph_ok(graph))
        RET(cudaErrorInvalidValue);
    stub_lock();
    graph_unref(graph);
    stub_unlock();
    return cudaSuccess;
}
