/*
 * cudastub_impl.h — private to the CUDA STAND-IN (a test double,
 * tests/cudastub/): the bodies of its stream and event handles, and the
 * state its files share.
 *
 * The files, each using only those above it (no call cycle):
 *   cudastub.c         the global state, the allocation registry, violations
 *   cudastub_launch.c  what a stream's thread runs for a kernel (coroutines)
 *   cudastub_stream.c  streams (a thread each), events, kernel launches
 *   cudastub_memory.c  allocations, frees, copies, memory pools
 *   cudastub_device.c  devices, errors, the memory left
 *   cudastub_graph.c   stream capture's end, graphs, their replay
 *   cublasstub.c       cuBLAS
 * Everything here is hidden: the library exports only the CUDA API and the
 * sc_cudastub_* calls of cuda_runtime.h.
 */
#ifndef SC_CUDASTUB_IMPL_H
#define SC_CUDASTUB_IMPL_H

#include <pthread.h>
#include <stddef.h>

#include "cuda_runtime.h"

#define STUB_HIDDEN __attribute__((visibility("hidden")))

#define STREAM_MAGIC 0x5354524dU
#define EVENT_MAGIC 0x4556544eU

#define MAX_GPUS 16
#define CONTEXT_BYTES ((size_t)512 << 20)

struct op;
struct sc_stub_graph;

struct sc_stub_stream {
    unsigned magic;
    int gpu;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct op *head, *tail;
    long queued, done;     /* operations queued and completed */
    int stop, destroyed, exited;
    struct sc_stub_graph *cap; /* the capture it takes part in, or NULL (G.mu) */
    long cap_last;             /* its latest operation in that capture, -1: none */
};

struct sc_stub_event {
    unsigned magic;
    int gpu;
    long recorded;         /* the latest version recorded (G.mu) */
    long done;             /* the latest version completed */
    int destroyed;
    struct sc_stub_graph *cap; /* recorded in this active capture (G.mu) */
    long cap_node;             /* ... as this operation of it */
    int stale;                 /* last recorded in a capture that has ended: nothing to
                                * query or wait for (cudaErrorCapturedEvent) until recorded */
};

/* ---- stream capture (cudastub_stream.c records, cudastub_graph.c ends,
 * instantiates and replays) ---- */

/* One captured operation: fn(arg) as queued (NULL: an event's record or
 * wait, an edge only); prev: the operation before it on its stream in this
 * capture (-1: the first), dep: the record it waits for (-1: none). */
typedef struct cop {
    void (*fn)(void *);
    void *arg;
    void (*free_fn)(void *);
    const char *what;
    cudaStream_t s;
    int gpu;
    long prev, dep;
} cop;

#define GRAPH_MAGIC 0x47525048U

struct sc_stub_graph {
    unsigned magic;
    int mode;              /* enum cudaStreamCaptureMode */
    int status;            /* enum cudaStreamCaptureStatus while capturing */
    int ended;             /* a graph now (cudaStreamEndCapture) */
    cudaStream_t origin;
    cop *ops;
    long n, cap;
    int refs;              /* the graph and its instances (G.mu) */
};

/* ---- the global state (cudastub.c) ---- */

typedef struct alloc {
    char *base;
    size_t size;
    int gpu;          /* -1: pinned host memory */
    int state;        /* A_PENDING, A_LIVE, A_FREED, A_GRAPH */
    const struct sc_stub_graph *graph; /* the capture whose cudaMallocAsync made it, or NULL */
    int dropped;      /* freed with its graph (a capture that failed, a graph destroyed):
                       * a later cudaFreeAsync is an error, not a violation */
    const char *how;  /* the call that made it */
} alloc;

/* A_GRAPH: a graph's allocation between a replay's free and the next
 * replay's allocation (poisoned; the address stays the graph's). */
enum { A_PENDING, A_LIVE, A_FREED, A_GRAPH };

struct stub_state {
    pthread_once_t once;
    pthread_mutex_t mu;     /* everything below, events included */
    pthread_cond_t cv;      /* an event completed */
    int nphys, nvis;
    int vis[MAX_GPUS];      /* visible index -> physical GPU */
    size_t mem;             /* bytes per GPU */
    size_t used[MAX_GPUS];
    int faulted[MAX_GPUS];
    unsigned delay_us;
    alloc *a;               /* sorted by base */
    int na, acap;
    size_t quarantined;
    int violations;
    int captures;           /* active captures */
    long capture_fault;     /* SC_CUDASTUB_CAPTURE_FAULT: the captured operation that fails */
    long captured;          /* operations captured so far */
};

/* "G" in the comments; read after pthread_once(&stub_G.once, stub_init). */
extern STUB_HIDDEN struct stub_state stub_G;
extern STUB_HIDDEN _Thread_local cudaError_t stub_last_error;
extern STUB_HIDDEN _Thread_local int stub_current;            /* visible device index */
extern STUB_HIDDEN _Thread_local cudaStream_t stub_running;   /* the stream this worker runs */

/* Reads the environment into G (once: pthread_once). */
STUB_HIDDEN void stub_init(void);
/* G.mu, after stub_init. */
STUB_HIDDEN void stub_lock(void);
STUB_HIDDEN void stub_unlock(void);
/* Whether a violation faulted visible GPU gpu (takes G.mu). */
STUB_HIDDEN int stub_faulted(int gpu);

#define RET(e) return sc_cudastub_set_error(e)

/* The allocation registry (G.mu held): the block holding p, or NULL; a new
 * block of state A_PENDING or A_LIVE (gpu -1: pinned host memory), NULL
 * when out of memory; a block made dead (poisoned, quarantined); the
 * quarantine trimmed. */
STUB_HIDDEN alloc *stub_find(const void *p);
STUB_HIDDEN alloc *stub_add(size_t bytes, int gpu, int state, const char *how);
STUB_HIDDEN void stub_kill_block(alloc *a);
STUB_HIDDEN void stub_evict(void);

/* ---- kernels on a stream's thread (cudastub_launch.c) ---- */

/* One kernel launch, a stream operation: stub_run_kernel runs it,
 * stub_free_launch frees it (and its arguments). */
typedef struct launch {
    unsigned grid, block;
    void (*fn)(void *);
    void *arg;
    void (*free_fn)(void *);
    const void *kernel;
} launch;

STUB_HIDDEN void stub_run_kernel(void *p);
STUB_HIDDEN void stub_free_launch(void *p);
/* The largest block a launch may have. */
#define MAX_BLOCK 1024

/* A stream's thread ends: frees its coroutine stacks (cudastub_launch.c). */
void sc_cudastub_thread_exit(void);

/* ---- streams (cudastub_stream.c) ---- */

/* Whether s is a live stream; a violation (the call named) when not. */
STUB_HIDDEN int stub_stream_ok(cudaStream_t s, const char *call);

/* Capture (G.mu held): the capture stream s takes part in (NULL: none);
 * marks capture g invalidated; takes every stream and event out of g (it
 * ended). stub_capture_forbids (G.mu not held): 1 when call, which may not
 * run while a capture in cudaStreamCaptureModeGlobal is active, finds one
 * (that capture is invalidated, as on a GPU). */
STUB_HIDDEN struct sc_stub_graph *stub_capture_of(cudaStream_t s);
STUB_HIDDEN void stub_capture_invalidate(struct sc_stub_graph *g);
STUB_HIDDEN void stub_capture_detach(struct sc_stub_graph *g);
STUB_HIDDEN int stub_capture_forbids(const char *call);

#endif
