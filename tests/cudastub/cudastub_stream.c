/*
 * cudastub_stream.c — streams and events of the CUDA STAND-IN (a test
 * double, tests/cudastub/README.md; what it models: cudastub.c): each
 * stream is a thread that runs its queue in order, each operation after a
 * random delay (SC_CUDASTUB_DELAY_US); an event is a version counter. Kernel
 * launches are queued here too, and run by cudastub_launch.c.
 */
#define _GNU_SOURCE
#include "cuda_runtime.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cudastub_impl.h"

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
    stub_running = s;
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
        if (stub_G.delay_us)
            usleep((useconds_t)(rand_r(&seed) % (stub_G.delay_us + 1)));
        stub_current = s->gpu;
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

/* ---- capture: what a capturing stream queues is recorded (G.mu) ---- */

/* Appends an operation of stream s to its capture, after s's previous one
 * and after operation dep (-1: none); 0 or the error. */
static cudaError_t capture_append(cudaStream_t s, void (*fn)(void *), void *arg,
                                  void (*free_fn)(void *), const char *what, long dep)
{
    struct sc_stub_graph *g = s->cap;
    if (++stub_G.captured == stub_G.capture_fault) { /* a fault on purpose (run.sh) */
        stub_capture_invalidate(g);
        return cudaErrorStreamCaptureInvalidated;
    }
    if (g->n == g->cap) {
        long nc = g->cap ? 2 * g->cap : 256;
        cop *v = realloc(g->ops, (size_t)nc * sizeof *v);
        if (!v)
            return cudaErrorMemoryAllocation;
        g->ops = v;
        g->cap = nc;
    }
    g->ops[g->n] = (cop){fn, arg, free_fn, what, s, s->gpu, s->cap_last, dep};
    s->cap_last = g->n++;
    return cudaSuccess;
}

struct sc_stub_graph *stub_capture_of(cudaStream_t s)
{
    return s ? s->cap : NULL;
}

void stub_capture_invalidate(struct sc_stub_graph *g)
{
    if (g && g->status == cudaStreamCaptureStatusActive)
        g->status = cudaStreamCaptureStatusInvalidated;
}

static struct {
    void **v;
    int n, cap;
} keep;

void stub_capture_detach(struct sc_stub_graph *g)
{
    for (int i = 0; i < keep.n; i++) {
        cudaStream_t s = keep.v[i];
        cudaEvent_t e = keep.v[i];
        if (s->magic == STREAM_MAGIC && s->cap == g)
            s->cap = NULL;
        else if (e->magic == EVENT_MAGIC && e->cap == g) {
            e->cap = NULL;
            e->stale = 1;
        }
    }
    stub_G.captures--;
}

int stub_capture_forbids(const char *call)
{
    int hit = 0;
    stub_lock();
    for (int i = 0; i < keep.n && stub_G.captures > 0; i++) {
        cudaStream_t s = keep.v[i];
        if (s->magic == STREAM_MAGIC && s->cap && s->cap->mode == cudaStreamCaptureModeGlobal &&
            s->cap->status == cudaStreamCaptureStatusActive) {
            stub_capture_invalidate(s->cap);
            hit = 1;
        }
    }
    stub_unlock();
    if (hit)
        fprintf(stderr, "cudastub: %s during a global-mode stream capture: the capture is "
                        "invalidated\n", call);
    return hit;
}

cudaError_t sc_cudastub_enqueue(cudaStream_t s, void (*fn)(void *), void *arg,
                                void (*free_fn)(void *), const char *what)
{
    pthread_once(&stub_G.once, stub_init);
    if (!s || s->magic != STREAM_MAGIC || s->destroyed) {
        sc_cudastub_violation(stub_current, "%s on %s", what,
                              !s ? "the legacy default stream (the module never uses it)"
                                 : "a destroyed stream");
        if (free_fn)
            free_fn(arg);
        RET(cudaErrorInvalidResourceHandle);
    }
    if (s->gpu != stub_current) {
        sc_cudastub_violation(stub_current, "%s on a stream of GPU %d while GPU %d is current",
                              what, s->gpu, stub_current);
        if (free_fn)
            free_fn(arg);
        RET(cudaErrorInvalidResourceHandle);
    }
    if (stub_faulted(s->gpu)) {
        if (free_fn)
            free_fn(arg);
        RET(cudaErrorIllegalAddress);
    }
    stub_lock();
    if (s->cap) { /* recorded, not run (cudastub_graph.c replays it) */
        cudaError_t e = s->cap->status == cudaStreamCaptureStatusActive
                            ? capture_append(s, fn, arg, free_fn, what, -1)
                            : cudaErrorStreamCaptureInvalidated;
        stub_unlock();
        if (e && free_fn)
            free_fn(arg);
        RET(e);
    }
    stub_unlock();
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

/* The kernel launches of the host build: one stream operation each, run
 * by cudastub_launch.c on the stream's thread. */
cudaError_t sc_cudastub_launch(unsigned grid, unsigned block, cudaStream_t s,
                               void (*fn)(void *), void *arg, void (*free_fn)(void *),
                               const void *kernel)
{
    if (grid < 1 || block < 1 || block > MAX_BLOCK) {
        if (free_fn)
            free_fn(arg);
        return sc_cudastub_set_error(cudaErrorInvalidValue);
    }
    launch *l = malloc(sizeof *l);
    if (!l) {
        if (free_fn)
            free_fn(arg);
        return sc_cudastub_set_error(cudaErrorMemoryAllocation);
    }
    *l = (launch){grid, block, fn, arg, free_fn, kernel};
    /* A launch's failure becomes the thread's last error, as with <<<>>>. */
    return sc_cudastub_enqueue(s, stub_run_kernel, l, stub_free_launch, "kernel launch");
}

int sc_cudastub_stream_gpu(cudaStream_t s)
{
    return s ? s->gpu : -1;
}

int sc_cudastub_current(void)
{
    return stub_current;
}

/* Streams and events are never freed (a destroyed one is marked, so a later
 * use is caught): they stay reachable from `keep` (above). */

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
    stub_lock();
    if (stub_current >= stub_G.nvis) {
        stub_unlock();
        RET(cudaErrorInvalidDevice);
    }
    cudaStream_t s = calloc(1, sizeof *s);
    if (!s) {
        stub_unlock();
        RET(cudaErrorMemoryAllocation);
    }
    s->magic = STREAM_MAGIC;
    s->gpu = stub_current;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    remember(s);
    stub_unlock();
    if (pthread_create(&s->th, NULL, worker, s) != 0)
        RET(cudaErrorMemoryAllocation);
    *out = s;
    return cudaSuccess;
}

int stub_stream_ok(cudaStream_t s, const char *call)
{
    if (s && s->magic == STREAM_MAGIC && !s->destroyed)
        return 1;
    sc_cudastub_violation(stub_current, "%s on %s", call, s ? "a destroyed stream" : "no stream");
    return 0;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (!stub_stream_ok(s, "cudaStreamDestroy"))
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

/* A synchronizing call on a capturing stream (*s) is refused and
 * invalidates its capture, as on a GPU (cudaErrorStreamCaptureUnsupported);
 * one on an event last recorded in a capture (*e) is refused
 * (cudaErrorCapturedEvent). */
static int capturing_sync(cudaStream_t *s, cudaEvent_t *e, const char *call)
{
    stub_lock();
    struct sc_stub_graph *g = s ? (*s)->cap : (*e)->cap;
    int stale = !s && (*e)->stale;
    if (s)
        stub_capture_invalidate(g);
    stub_unlock();
    if (g || stale)
        fprintf(stderr, "cudastub: %s %s\n", call,
                s ? "during a stream capture: the capture is invalidated"
                  : "of an event last recorded in a capture: refused");
    return g != NULL || stale;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    if (!stub_stream_ok(s, "cudaStreamSynchronize"))
        RET(cudaErrorInvalidResourceHandle);
    if (capturing_sync(&s, NULL, "cudaStreamSynchronize"))
        RET(cudaErrorStreamCaptureUnsupported);
    pthread_mutex_lock(&s->mu);
    long target = s->queued;
    while (s->done < target)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    RET(stub_faulted(s->gpu) ? cudaErrorIllegalAddress : cudaSuccess);
}

cudaError_t cudaDeviceSynchronize(void)
{
    stub_lock();
    int n = keep.n;
    stub_unlock();
    for (int i = 0; i < n; i++) {
        cudaStream_t s = keep.v[i];
        if (s->magic == STREAM_MAGIC && s->gpu == stub_current && !s->destroyed && s->cap &&
            capturing_sync(&s, NULL, "cudaDeviceSynchronize"))
            RET(cudaErrorStreamCaptureUnsupported);
    }
    for (int i = 0; i < n; i++) {
        cudaStream_t s = keep.v[i];
        if (s->magic == STREAM_MAGIC && s->gpu == stub_current && !s->destroyed)
            cudaStreamSynchronize(s);
    }
    RET(stub_faulted(stub_current) ? cudaErrorIllegalAddress : cudaSuccess);
}

/* ---- events ---- */

static int event_ok(cudaEvent_t e, const char *call)
{
    if (e && e->magic == EVENT_MAGIC && !e->destroyed)
        return 1;
    sc_cudastub_violation(stub_current, "%s on %s", call, e ? "a destroyed event" : "no event");
    return 0;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *out, unsigned flags)
{
    (void)flags;
    cudaEvent_t e = calloc(1, sizeof *e);
    if (!e)
        RET(cudaErrorMemoryAllocation);
    e->magic = EVENT_MAGIC;
    stub_lock();
    e->gpu = stub_current;
    remember(e);
    stub_unlock();
    *out = e;
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    if (!event_ok(e, "cudaEventDestroy"))
        RET(cudaErrorInvalidResourceHandle);
    stub_lock();
    e->destroyed = 1; /* queued records and waits still complete */
    stub_unlock();
    return cudaSuccess;
}

typedef struct evop {
    cudaEvent_t e;
    long v;
} evop;

static void ev_complete(void *p)
{
    evop *o = p;
    pthread_mutex_lock(&stub_G.mu);
    if (o->v > o->e->done)
        o->e->done = o->v;
    pthread_cond_broadcast(&stub_G.cv);
    pthread_mutex_unlock(&stub_G.mu);
}

static void ev_wait(void *p)
{
    evop *o = p;
    pthread_mutex_lock(&stub_G.mu);
    while (o->e->done < o->v)
        pthread_cond_wait(&stub_G.cv, &stub_G.mu);
    pthread_mutex_unlock(&stub_G.mu);
}

/* An event's record or wait on a capturing stream, or a wait for an event
 * recorded in a capture (G.mu held): an edge of the graph. A wait joins
 * its stream to the event's capture; a capture may not wait for work
 * outside it (cudaErrorStreamCaptureIsolation, as on a GPU). */
static cudaError_t capture_event(cudaStream_t s, cudaEvent_t e, int record)
{
    if (record) {
        if (s->cap->status != cudaStreamCaptureStatusActive)
            return cudaErrorStreamCaptureInvalidated;
        cudaError_t r = capture_append(s, NULL, NULL, NULL, "cudaEventRecord", -1);
        if (!r) {
            e->cap = s->cap;
            e->cap_node = s->cap_last;
            e->stale = 0;
        }
        return r;
    }
    if (!e->cap) { /* a capturing stream waits for work outside it */
        if (!e->stale && e->recorded == 0)
            return cudaSuccess; /* never recorded: nothing to wait for */
        stub_capture_invalidate(s->cap);
        return e->stale ? cudaErrorCapturedEvent : cudaErrorStreamCaptureIsolation;
    }
    struct sc_stub_graph *g = e->cap;
    if (g->status != cudaStreamCaptureStatusActive)
        return cudaErrorStreamCaptureInvalidated;
    if (s->cap && s->cap != g) {
        stub_capture_invalidate(s->cap);
        return cudaErrorStreamCaptureIsolation;
    }
    if (!s->cap) { /* joins the capture */
        s->cap = g;
        s->cap_last = -1;
    }
    return capture_append(s, NULL, NULL, NULL, "cudaStreamWaitEvent", e->cap_node);
}

/* Queues on s an operation of event e: its completion (record: a new
 * version of e) or a wait for the version recorded now (0: nothing to
 * wait for). */
static cudaError_t event_op(cudaStream_t s, cudaEvent_t e, int record, const char *what)
{
    if (!event_ok(e, what) || !stub_stream_ok(s, what))
        RET(cudaErrorInvalidResourceHandle);
    stub_lock();
    if (!record && e->stale && !s->cap) {
        stub_unlock();
        fprintf(stderr, "cudastub: %s of an event last recorded in a capture: refused\n", what);
        RET(cudaErrorCapturedEvent);
    }
    if (s->cap || (!record && e->cap)) {
        cudaError_t r = capture_event(s, e, record);
        stub_unlock();
        RET(r);
    }
    stub_unlock();
    evop *o = malloc(sizeof *o);
    if (!o)
        RET(cudaErrorMemoryAllocation);
    stub_lock();
    if (record)
        e->cap = NULL, e->stale = 0; /* recorded outside a capture again */
    o->e = e;
    o->v = record ? ++e->recorded : e->recorded;
    stub_unlock();
    return sc_cudastub_enqueue(s, record ? ev_complete : ev_wait, o, free, what);
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    return event_op(s, e, 1, "cudaEventRecord");
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    (void)flags;
    return event_op(s, e, 0, "cudaStreamWaitEvent");
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    if (!event_ok(e, "cudaEventQuery"))
        RET(cudaErrorInvalidResourceHandle);
    if (capturing_sync(NULL, &e, "cudaEventQuery"))
        RET(cudaErrorCapturedEvent);
    stub_lock();
    int done = e->done >= e->recorded;
    int gpu = e->gpu;
    stub_unlock();
    if (stub_faulted(gpu))
        RET(cudaErrorIllegalAddress);
    /* The real runtime records cudaErrorNotReady as the last error too. */
    RET(done ? cudaSuccess : cudaErrorNotReady);
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    if (!event_ok(e, "cudaEventSynchronize"))
        RET(cudaErrorInvalidResourceHandle);
    if (capturing_sync(NULL, &e, "cudaEventSynchronize"))
        RET(cudaErrorCapturedEvent);
    stub_lock();
    long v = e->recorded;
    while (e->done < v)
        pthread_cond_wait(&stub_G.cv, &stub_G.mu);
    int gpu = e->gpu;
    stub_unlock();
    RET(stub_faulted(gpu) ? cudaErrorIllegalAddress : cudaSuccess);
}
