/*
 * cudastub.c — the CUDA STAND-IN's runtime: a TEST DOUBLE of the CUDA
 * runtime on the CPU (tests/cudastub/README.md), linked only into the test
 * build of the CUDA module (build/cudastub/). Never shipped.
 *
 * What it models, so that the module's stream, event and memory logic is
 * exercised for real:
 *   - streams are threads that run their queue in order, each operation
 *     after a random delay (SC_CUDASTUB_DELAY_US, 0 by default);
 *   - events are version counters: cudaEventRecord queues the completion of
 *     a new version, cudaStreamWaitEvent captures the version recorded at
 *     call time; cudaEventQuery returns cudaErrorNotReady AND records it as
 *     the thread's last error, as the real runtime does;
 *   - cudaMallocAsync/cudaFreeAsync are stream-ordered: a block becomes
 *     usable when its allocation is reached on its stream and dead when its
 *     free is; every copy, kernel, GEMM and NCCL transfer checks its
 *     buffers when it runs, so a use before the allocation point, after the
 *     free, or out of bounds is reported;
 *   - freed blocks are poisoned (NaN bytes) and kept aside for a while, so
 *     late readers see garbage rather than valid data;
 *   - several GPUs (SC_CUDASTUB_GPUS, default 1; 0: none), filtered by
 *     CUDA_VISIBLE_DEVICES, each with SC_CUDASTUB_MEM bytes (default 8 GiB)
 *     less a 512 MiB context, and a UUID per physical GPU.
 * A violation prints "cudastub: VIOLATION: ..." on stderr, faults its GPU
 * (later synchronizing calls return cudaErrorIllegalAddress) and makes the
 * process exit with status 86, whatever it would have returned.
 */
#define _GNU_SOURCE
#include "cuda_runtime.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "cudastub_impl.h"

#define MAX_GPUS 16
#define CONTEXT_BYTES ((size_t)512 << 20)
#define QUARANTINE_BYTES ((size_t)256 << 20)

/* ---- global state ---- */

typedef struct alloc {
    char *base;
    size_t size;
    int gpu;          /* -1: pinned host memory */
    int state;        /* A_PENDING, A_LIVE, A_FREED */
    const char *how;  /* the call that made it */
} alloc;

enum { A_PENDING, A_LIVE, A_FREED };

static struct {
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
} G = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER,
       .cv = PTHREAD_COND_INITIALIZER};

static _Thread_local cudaError_t last_error;
static _Thread_local int current;            /* visible device index */
static _Thread_local cudaStream_t running;   /* the stream this worker runs */

static void init(void)
{
    const char *g = getenv("SC_CUDASTUB_GPUS");
    G.nphys = g ? atoi(g) : 1;
    if (G.nphys < 0)
        G.nphys = 0;
    if (G.nphys > MAX_GPUS)
        G.nphys = MAX_GPUS;
    const char *m = getenv("SC_CUDASTUB_MEM");
    G.mem = m ? (size_t)strtoull(m, NULL, 10) : (size_t)8 << 30;
    const char *d = getenv("SC_CUDASTUB_DELAY_US");
    G.delay_us = d ? (unsigned)atoi(d) : 0;
    /* CUDA_VISIBLE_DEVICES: indices, up to the first invalid one. */
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v) {
        for (int i = 0; i < G.nphys; i++)
            G.vis[G.nvis++] = i;
    } else {
        const char *p = v;
        while (*p && G.nvis < MAX_GPUS) {
            char *end;
            long i = strtol(p, &end, 10);
            if (end == p || i < 0 || i >= G.nphys)
                break;
            G.vis[G.nvis++] = (int)i;
            p = *end == ',' ? end + 1 : end;
            if (*end && *end != ',')
                break;
        }
    }
}

static void lock(void)
{
    pthread_once(&G.once, init);
    pthread_mutex_lock(&G.mu);
}

static void unlock(void)
{
    pthread_mutex_unlock(&G.mu);
}

cudaError_t sc_cudastub_set_error(cudaError_t e)
{
    if (e != cudaSuccess)
        last_error = e;
    return e;
}
#define RET(e) return sc_cudastub_set_error(e)

__attribute__((destructor)) static void report_at_exit(void)
{
    if (G.violations) {
        fprintf(stderr, "cudastub: %d violation(s) of CUDA's rules (see above); exit status 86\n",
                G.violations);
        fflush(stderr);
        _exit(86);
    }
}

void sc_cudastub_violation(int gpu, const char *fmt, ...)
{
    char m[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cudastub: VIOLATION: %s\n", m);
    pthread_mutex_lock(&G.mu);
    G.violations++;
    if (gpu >= 0 && gpu < MAX_GPUS)
        G.faulted[gpu] = 1;
    pthread_mutex_unlock(&G.mu);
}

static int faulted(int gpu)
{
    lock();
    int f = gpu >= 0 && gpu < G.nvis && G.faulted[gpu];
    unlock();
    return f;
}

/* ---- the allocation registry (G.mu held) ---- */

static int find_index(const void *p)
{
    int lo = 0, hi = G.na; /* first with base > p */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if ((const char *)G.a[mid].base <= (const char *)p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

static alloc *find(const void *p)
{
    int i = find_index(p);
    if (i < 0)
        return NULL;
    alloc *a = &G.a[i];
    return (const char *)p < a->base + (a->size ? a->size : 1) ? a : NULL;
}

static void forget(int i)
{
    memmove(&G.a[i], &G.a[i + 1], (size_t)(G.na - i - 1) * sizeof *G.a);
    G.na--;
}

/* Evicts the oldest freed blocks beyond the quarantine (no order kept:
 * any freed block will do). */
static void evict(void)
{
    for (int i = 0; i < G.na && G.quarantined > QUARANTINE_BYTES;) {
        if (G.a[i].state == A_FREED) {
            G.quarantined -= G.a[i].size;
            free(G.a[i].base);
            forget(i);
        } else {
            i++;
        }
    }
}

static alloc *add(size_t bytes, int gpu, int state, const char *how)
{
    char *p = malloc(bytes ? bytes : 1);
    if (!p)
        return NULL;
    memset(p, 0xff, bytes); /* uninitialized device memory reads as NaN */
    int at;
    alloc *old = find(p); /* a quarantined block cannot share an address; a stale record can */
    if (old)
        forget((int)(old - G.a));
    if (G.na == G.acap) {
        int nc = G.acap ? 2 * G.acap : 256;
        alloc *v = realloc(G.a, (size_t)nc * sizeof *v);
        if (!v) {
            free(p);
            return NULL;
        }
        G.a = v;
        G.acap = nc;
    }
    at = find_index(p) + 1;
    memmove(&G.a[at + 1], &G.a[at], (size_t)(G.na - at) * sizeof *G.a);
    G.na++;
    G.a[at] = (alloc){.base = p, .size = bytes, .gpu = gpu, .state = state, .how = how};
    return &G.a[at];
}

static void kill_block(alloc *a)
{
    a->state = A_FREED;
    memset(a->base, 0xff, a->size);
    if (a->gpu >= 0)
        G.used[a->gpu] -= a->size;
    G.quarantined += a->size;
}

int sc_cudastub_check(const void *p, size_t bytes, int gpu, int host_ok, const char *what)
{
    if (gpu == SC_STUB_THIS_STREAM)
        gpu = running ? running->gpu : current;
    lock();
    alloc *a = find(p);
    const char *why = NULL;
    char buf[160];
    if (!a) {
        if (host_ok && gpu < 0) {
            unlock();
            return 1;
        }
        why = "is not memory of the stand-in (never allocated, or freed long ago)";
    } else if (a->state == A_PENDING) {
        why = "is used before its allocation (cudaMallocAsync) is reached on its stream";
    } else if (a->state == A_FREED) {
        why = "is used after it was freed";
    } else if ((const char *)p + bytes > a->base + a->size) {
        snprintf(buf, sizeof buf, "runs %zu bytes past the end of its %zu-byte block",
                 (size_t)((const char *)p + bytes - (a->base + a->size)), a->size);
        why = buf;
    } else if (gpu >= 0 && a->gpu >= 0 && a->gpu != gpu && !host_ok) {
        snprintf(buf, sizeof buf, "is memory of GPU %d, used as GPU %d's", a->gpu, gpu);
        why = buf;
    } else if (gpu >= 0 && a->gpu < 0 && !host_ok) {
        why = "is pinned host memory, used as device memory";
    }
    unlock();
    if (!why)
        return 1;
    sc_cudastub_violation(running ? running->gpu : current, "%s: %p (%zu bytes) %s", what, p,
                          bytes, why);
    return 0;
}

/* ---- streams: a thread each ---- */

typedef struct op {
    void (*fn)(void *);
    void *arg;
    void (*free_fn)(void *);
    const char *what;
    struct op *next;
} op;

static void *worker(void *p)
{
    cudaStream_t s = p;
    unsigned seed = (unsigned)(uintptr_t)s ^ (unsigned)time(NULL);
    running = s;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stop)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->head)
            break;
        op *o = s->head;
        s->head = o->next;
        if (!s->head)
            s->tail = NULL;
        pthread_mutex_unlock(&s->mu);
        if (G.delay_us)
            usleep((useconds_t)(rand_r(&seed) % (G.delay_us + 1)));
        current = s->gpu;
        o->fn(o->arg);
        if (o->free_fn)
            o->free_fn(o->arg);
        free(o);
        pthread_mutex_lock(&s->mu);
        s->done++;
        pthread_cond_broadcast(&s->cv);
    }
    s->exited = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    sc_cudastub_thread_exit();
    return NULL;
}

cudaError_t sc_cudastub_enqueue(cudaStream_t s, void (*fn)(void *), void *arg,
                                void (*free_fn)(void *), const char *what)
{
    pthread_once(&G.once, init);
    if (!s || s->magic != STREAM_MAGIC || s->destroyed) {
        sc_cudastub_violation(current, "%s on %s", what,
                              !s ? "the legacy default stream (the module never uses it)"
                                 : "a destroyed stream");
        if (free_fn)
            free_fn(arg);
        RET(cudaErrorInvalidResourceHandle);
    }
    if (s->gpu != current) {
        sc_cudastub_violation(current, "%s on a stream of GPU %d while GPU %d is current", what,
                              s->gpu, current);
        if (free_fn)
            free_fn(arg);
        RET(cudaErrorInvalidResourceHandle);
    }
    if (faulted(s->gpu)) {
        if (free_fn)
            free_fn(arg);
        RET(cudaErrorIllegalAddress);
    }
    op *o = malloc(sizeof *o);
    if (!o) {
        if (free_fn)
            free_fn(arg);
        RET(cudaErrorMemoryAllocation);
    }
    *o = (op){.fn = fn, .arg = arg, .free_fn = free_fn, .what = what};
    pthread_mutex_lock(&s->mu);
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    s->queued++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return cudaSuccess;
}

int sc_cudastub_stream_gpu(cudaStream_t s)
{
    return s ? s->gpu : -1;
}

int sc_cudastub_current(void)
{
    return current;
}

/* Streams and events are never freed (a destroyed one is marked, so a later
 * use is caught): they stay reachable from here. */
static struct {
    void **v;
    int n, cap;
} keep;

static void remember(void *p)
{
    if (keep.n == keep.cap) {
        int nc = keep.cap ? 2 * keep.cap : 64;
        void **v = realloc(keep.v, (size_t)nc * sizeof *v);
        if (!v)
            return;
        keep.v = v;
        keep.cap = nc;
    }
    keep.v[keep.n++] = p;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *out, unsigned flags)
{
    (void)flags;
    lock();
    if (current >= G.nvis) {
        unlock();
        RET(cudaErrorInvalidDevice);
    }
    cudaStream_t s = calloc(1, sizeof *s);
    if (!s) {
        unlock();
        RET(cudaErrorMemoryAllocation);
    }
    s->magic = STREAM_MAGIC;
    s->gpu = current;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    remember(s);
    unlock();
    if (pthread_create(&s->th, NULL, worker, s) != 0)
        RET(cudaErrorMemoryAllocation);
    *out = s;
    return cudaSuccess;
}

static int stream_ok(cudaStream_t s, const char *call)
{
    if (s && s->magic == STREAM_MAGIC && !s->destroyed)
        return 1;
    sc_cudastub_violation(current, "%s on %s", call, s ? "a destroyed stream" : "no stream");
    return 0;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (!stream_ok(s, "cudaStreamDestroy"))
        RET(cudaErrorInvalidResourceHandle);
    /* CUDA returns at once and completes the queued work later; here the
     * work completes first and the stream's thread ends before the call
     * returns (a thread still ending when the process exits crashes
     * LeakSanitizer's scan of the threads). Work that does not complete
     * within 60 s would hang a real program too: reported, and left. */
    pthread_mutex_lock(&s->mu);
    s->destroyed = 1;
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    int rc = 0;
    while (!s->exited && rc == 0)
        rc = pthread_cond_timedwait(&s->cv, &s->mu, &until);
    int ended = s->exited;
    pthread_mutex_unlock(&s->mu);
    if (!ended) {
        sc_cudastub_violation(s->gpu, "cudaStreamDestroy: the stream's work did not complete "
                              "within 60 s (it waits for an event never recorded?)");
        pthread_detach(s->th);
        return cudaSuccess;
    }
    pthread_join(s->th, NULL);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    if (!stream_ok(s, "cudaStreamSynchronize"))
        RET(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&s->mu);
    long target = s->queued;
    while (s->done < target)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    RET(faulted(s->gpu) ? cudaErrorIllegalAddress : cudaSuccess);
}

cudaError_t cudaDeviceSynchronize(void)
{
    lock();
    int n = keep.n;
    unlock();
    for (int i = 0; i < n; i++) {
        cudaStream_t s = keep.v[i];
        if (s->magic == STREAM_MAGIC && s->gpu == current && !s->destroyed)
            cudaStreamSynchronize(s);
    }
    RET(faulted(current) ? cudaErrorIllegalAddress : cudaSuccess);
}

/* ---- events ---- */

static int event_ok(cudaEvent_t e, const char *call)
{
    if (e && e->magic == EVENT_MAGIC && !e->destroyed)
        return 1;
    sc_cudastub_violation(current, "%s on %s", call, e ? "a destroyed event" : "no event");
    return 0;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *out, unsigned flags)
{
    (void)flags;
    cudaEvent_t e = calloc(1, sizeof *e);
    if (!e)
        RET(cudaErrorMemoryAllocation);
    e->magic = EVENT_MAGIC;
    lock();
    e->gpu = current;
    remember(e);
    unlock();
    *out = e;
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    if (!event_ok(e, "cudaEventDestroy"))
        RET(cudaErrorInvalidResourceHandle);
    lock();
    e->destroyed = 1; /* queued records and waits still complete */
    unlock();
    return cudaSuccess;
}

typedef struct evop {
    cudaEvent_t e;
    long v;
} evop;

static void ev_complete(void *p)
{
    evop *o = p;
    pthread_mutex_lock(&G.mu);
    if (o->v > o->e->done)
        o->e->done = o->v;
    pthread_cond_broadcast(&G.cv);
    pthread_mutex_unlock(&G.mu);
}

static void ev_wait(void *p)
{
    evop *o = p;
    pthread_mutex_lock(&G.mu);
    while (o->e->done < o->v)
        pthread_cond_wait(&G.cv, &G.mu);
    pthread_mutex_unlock(&G.mu);
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    if (!event_ok(e, "cudaEventRecord") || !stream_ok(s, "cudaEventRecord"))
        RET(cudaErrorInvalidResourceHandle);
    evop *o = malloc(sizeof *o);
    if (!o)
        RET(cudaErrorMemoryAllocation);
    lock();
    o->e = e;
    o->v = ++e->recorded;
    unlock();
    return sc_cudastub_enqueue(s, ev_complete, o, free, "cudaEventRecord");
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    (void)flags;
    if (!event_ok(e, "cudaStreamWaitEvent") || !stream_ok(s, "cudaStreamWaitEvent"))
        RET(cudaErrorInvalidResourceHandle);
    evop *o = malloc(sizeof *o);
    if (!o)
        RET(cudaErrorMemoryAllocation);
    lock();
    o->e = e;
    o->v = e->recorded; /* the version recorded now; 0: nothing to wait for */
    unlock();
    return sc_cudastub_enqueue(s, ev_wait, o, free, "cudaStreamWaitEvent");
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    if (!event_ok(e, "cudaEventQuery"))
        RET(cudaErrorInvalidResourceHandle);
    lock();
    int done = e->done >= e->recorded;
    int gpu = e->gpu;
    unlock();
    if (faulted(gpu))
        RET(cudaErrorIllegalAddress);
    /* The real runtime records cudaErrorNotReady as the last error too. */
    RET(done ? cudaSuccess : cudaErrorNotReady);
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    if (!event_ok(e, "cudaEventSynchronize"))
        RET(cudaErrorInvalidResourceHandle);
    lock();
    long v = e->recorded;
    while (e->done < v)
        pthread_cond_wait(&G.cv, &G.mu);
    int gpu = e->gpu;
    unlock();
    RET(faulted(gpu) ? cudaErrorIllegalAddress : cudaSuccess);
}

/* ---- devices ---- */

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInsufficientDriver:
        return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorPeerAccessAlreadyEnabled:
        return "peer access is already enabled";
    case cudaErrorNotSupported: return "operation not supported";
    default: return "unknown error";
    }
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

cudaError_t cudaGetDeviceCount(int *n)
{
    pthread_once(&G.once, init);
    *n = G.nvis;
    RET(G.nvis ? cudaSuccess : cudaErrorNoDevice);
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
    pthread_once(&G.once, init);
    if (dev < 0 || dev >= G.nvis)
        RET(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "CUDA stand-in (test double)");
    snprintf(p->uuid.bytes, sizeof p->uuid.bytes, "cudastub-gpu%02d", G.vis[dev]);
    p->totalGlobalMem = G.mem;
    p->major = 9;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int dev)
{
    pthread_once(&G.once, init);
    if (dev < 0 || dev >= G.nvis)
        RET(cudaErrorInvalidDevice);
    *value = attr == cudaDevAttrMemoryPoolsSupported && !getenv("SC_CUDASTUB_NO_POOLS");
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev)
{
    pthread_once(&G.once, init);
    if (dev < 0 || dev >= G.nvis)
        RET(G.nvis ? cudaErrorInvalidDevice : cudaErrorNoDevice);
    current = dev;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev)
{
    *dev = current;
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer)
{
    pthread_once(&G.once, init);
    if (dev < 0 || dev >= G.nvis || peer < 0 || peer >= G.nvis)
        RET(cudaErrorInvalidDevice);
    *can = dev != peer;
    return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags)
{
    (void)flags;
    if (peer < 0 || peer >= G.nvis || peer == current)
        RET(cudaErrorInvalidDevice);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    lock();
    if (current >= G.nvis) {
        unlock();
        RET(cudaErrorInvalidDevice);
    }
    size_t used = G.used[current] + CONTEXT_BYTES;
    *total_bytes = G.mem;
    *free_bytes = used < G.mem ? G.mem - used : 0;
    unlock();
    return cudaSuccess;
}

/* ---- memory ---- */

/* Device memory of the current GPU: NULL when it does not fit. */
static void *dev_alloc(size_t bytes, int state, const char *how, cudaError_t *e)
{
    lock();
    *e = cudaSuccess;
    if (current >= G.nvis) {
        unlock();
        *e = cudaErrorInvalidDevice;
        return NULL;
    }
    if (bytes > G.mem || G.used[current] + CONTEXT_BYTES > G.mem - bytes) {
        unlock();
        *e = cudaErrorMemoryAllocation;
        return NULL;
    }
    alloc *a = add(bytes, current, state, how);
    if (!a) {
        unlock();
        *e = cudaErrorMemoryAllocation;
        return NULL;
    }
    G.used[current] += bytes;
    void *p = a->base;
    unlock();
    return p;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    cudaError_t e;
    *p = dev_alloc(bytes, A_LIVE, "cudaMalloc", &e);
    RET(e);
}

/* Free of a synchronous block: marked dead at once. */
static cudaError_t free_now(void *p, int want_gpu, const char *call)
{
    if (!p)
        return cudaSuccess;
    lock();
    alloc *a = find(p);
    const char *why = !a || a->base != p ? "is not the start of a block of the stand-in"
                      : a->state == A_FREED ? "was freed already"
                      : (want_gpu < 0) != (a->gpu < 0) ? "is the wrong kind of memory"
                                                      : NULL;
    if (!why) {
        kill_block(a);
        evict();
    }
    unlock();
    if (why) {
        sc_cudastub_violation(current, "%s(%p): the pointer %s", call, p, why);
        RET(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    return free_now(p, 0, "cudaFree");
}

static void make_live(void *p)
{
    pthread_mutex_lock(&G.mu);
    alloc *a = find(p);
    if (a && a->state == A_PENDING)
        a->state = A_LIVE;
    pthread_mutex_unlock(&G.mu);
}

static void make_dead(void *p)
{
    pthread_mutex_lock(&G.mu);
    alloc *a = find(p);
    int state = a ? a->state : -1;
    if (state == A_LIVE) {
        kill_block(a);
        evict();
    }
    pthread_mutex_unlock(&G.mu);
    if (state != A_LIVE)
        sc_cudastub_violation(running ? running->gpu : -1, "cudaFreeAsync(%p) reached on its "
                              "stream while the block is %s", p,
                              state < 0 ? "unknown" : state == A_PENDING ? "not yet allocated"
                                                                         : "already freed");
}

cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s)
{
    if (!stream_ok(s, "cudaMallocAsync"))
        RET(cudaErrorInvalidResourceHandle);
    if (getenv("SC_CUDASTUB_NO_POOLS"))
        RET(cudaErrorNotSupported);
    cudaError_t e;
    *p = dev_alloc(bytes, A_PENDING, "cudaMallocAsync", &e);
    if (e)
        RET(e);
    return sc_cudastub_enqueue(s, make_live, *p, NULL, "cudaMallocAsync");
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    if (!stream_ok(s, "cudaFreeAsync"))
        RET(cudaErrorInvalidResourceHandle);
    lock();
    alloc *a = find(p);
    int ok = a && a->base == p && a->gpu >= 0 && a->state != A_FREED;
    unlock();
    if (!ok) {
        sc_cudastub_violation(current, "cudaFreeAsync(%p): not a live device block", p);
        RET(cudaErrorInvalidValue);
    }
    return sc_cudastub_enqueue(s, make_dead, p, NULL, "cudaFreeAsync");
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags)
{
    (void)flags;
    lock();
    alloc *a = add(bytes, -1, A_LIVE, "cudaHostAlloc");
    void *base = a ? a->base : NULL; /* the registry moves once unlocked */
    unlock();
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
    lock();
    int r = find(p) == NULL;
    unlock();
    return r;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    if (!stream_ok(s, "cudaMemcpyAsync"))
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
    if (!stream_ok(s, "cudaMemcpyPeerAsync"))
        RET(cudaErrorInvalidResourceHandle);
    if (dst_dev < 0 || dst_dev >= G.nvis || src_dev < 0 || src_dev >= G.nvis)
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
    pthread_once(&G.once, init);
    if (dev < 0 || dev >= G.nvis)
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
