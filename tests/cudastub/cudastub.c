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
 *
 * This file: the state the stand-in's files share (cudastub_impl.h), the
 * registry of allocations, and violations; streams and events are in
 * cudastub_stream.c, memory in cudastub_memory.c, devices in
 * cudastub_device.c.
 */
#define _GNU_SOURCE
#include "cuda_runtime.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudastub_impl.h"

#define QUARANTINE_BYTES ((size_t)256 << 20)

/* ---- global state ---- */

struct stub_state stub_G = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER,
                            .cv = PTHREAD_COND_INITIALIZER};

_Thread_local cudaError_t stub_last_error;
_Thread_local int stub_current;            /* visible device index */
_Thread_local cudaStream_t stub_running;   /* the stream this worker runs */

void stub_init(void)
{
    const char *g = getenv("SC_CUDASTUB_GPUS");
    stub_G.nphys = g ? atoi(g) : 1;
    if (stub_G.nphys < 0)
        stub_G.nphys = 0;
    if (stub_G.nphys > MAX_GPUS)
        stub_G.nphys = MAX_GPUS;
    const char *m = getenv("SC_CUDASTUB_MEM");
    stub_G.mem = m ? (size_t)strtoull(m, NULL, 10) : (size_t)8 << 30;
    const char *d = getenv("SC_CUDASTUB_DELAY_US");
    stub_G.delay_us = d ? (unsigned)atoi(d) : 0;
    const char *f = getenv("SC_CUDASTUB_CAPTURE_FAULT");
    stub_G.capture_fault = f ? atol(f) : 0;
    /* CUDA_VISIBLE_DEVICES: indices, up to the first invalid one. */
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v) {
        for (int i = 0; i < stub_G.nphys; i++)
            stub_G.vis[stub_G.nvis++] = i;
    } else {
        const char *p = v;
        while (*p && stub_G.nvis < MAX_GPUS) {
            char *end;
            long i = strtol(p, &end, 10);
            if (end == p || i < 0 || i >= stub_G.nphys)
                break;
            stub_G.vis[stub_G.nvis++] = (int)i;
            p = *end == ',' ? end + 1 : end;
            if (*end && *end != ',')
                break;
        }
    }
}

void stub_lock(void)
{
    pthread_once(&stub_G.once, stub_init);
    pthread_mutex_lock(&stub_G.mu);
}

void stub_unlock(void)
{
    pthread_mutex_unlock(&stub_G.mu);
}

cudaError_t sc_cudastub_set_error(cudaError_t e)
{
    if (e != cudaSuccess)
        stub_last_error = e;
    return e;
}

__attribute__((destructor)) static void report_at_exit(void)
{
    if (stub_G.violations) {
        fprintf(stderr, "cudastub: %d violation(s) of CUDA's rules (see above); exit status 86\n",
                stub_G.violations);
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
    pthread_mutex_lock(&stub_G.mu);
    stub_G.violations++;
    if (gpu >= 0 && gpu < MAX_GPUS)
        stub_G.faulted[gpu] = 1;
    pthread_mutex_unlock(&stub_G.mu);
}

int stub_faulted(int gpu)
{
    stub_lock();
    int f = gpu >= 0 && gpu < stub_G.nvis && stub_G.faulted[gpu];
    stub_unlock();
    return f;
}

/* ---- the allocation registry (G.mu held) ---- */

static int find_index(const void *p)
{
    int lo = 0, hi = stub_G.na; /* first with base > p */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if ((const char *)stub_G.a[mid].base <= (const char *)p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

alloc *stub_find(const void *p)
{
    int i = find_index(p);
    if (i < 0)
        return NULL;
    alloc *a = &stub_G.a[i];
    return (const char *)p < a->base + (a->size ? a->size : 1) ? a : NULL;
}

static void forget(int i)
{
    memmove(&stub_G.a[i], &stub_G.a[i + 1], (size_t)(stub_G.na - i - 1) * sizeof *stub_G.a);
    stub_G.na--;
}

/* Evicts the oldest freed blocks beyond the quarantine (no order kept:
 * any freed block will do). */
void stub_evict(void)
{
    for (int i = 0; i < stub_G.na && stub_G.quarantined > QUARANTINE_BYTES;) {
        if (stub_G.a[i].state == A_FREED) {
            stub_G.quarantined -= stub_G.a[i].size;
            free(stub_G.a[i].base);
            forget(i);
        } else {
            i++;
        }
    }
}

alloc *stub_add(size_t bytes, int gpu, int state, const char *how)
{
    char *p = malloc(bytes ? bytes : 1);
    if (!p)
        return NULL;
    memset(p, 0xff, bytes); /* uninitialized device memory reads as NaN */
    int at;
    alloc *old = stub_find(p); /* a quarantined block cannot share an address; a stale record can */
    if (old)
        forget((int)(old - stub_G.a));
    if (stub_G.na == stub_G.acap) {
        int nc = stub_G.acap ? 2 * stub_G.acap : 256;
        alloc *v = realloc(stub_G.a, (size_t)nc * sizeof *v);
        if (!v) {
            free(p);
            return NULL;
        }
        stub_G.a = v;
        stub_G.acap = nc;
    }
    at = find_index(p) + 1;
    memmove(&stub_G.a[at + 1], &stub_G.a[at], (size_t)(stub_G.na - at) * sizeof *stub_G.a);
    stub_G.na++;
    stub_G.a[at] = (alloc){.base = p, .size = bytes, .gpu = gpu, .state = state, .how = how};
    return &stub_G.a[at];
}

void stub_kill_block(alloc *a)
{
    a->state = A_FREED;
    memset(a->base, 0xff, a->size);
    if (a->gpu >= 0)
        stub_G.used[a->gpu] -= a->size;
    stub_G.quarantined += a->size;
}

int sc_cudastub_check(const void *p, size_t bytes, int gpu, int host_ok, const char *what)
{
    if (gpu == SC_STUB_THIS_STREAM)
        gpu = stub_running ? stub_running->gpu : stub_current;
    stub_lock();
    alloc *a = stub_find(p);
    const char *why = NULL;
    char buf[160];
    if (!a) {
        if (host_ok && gpu < 0) {
            stub_unlock();
            return 1;
        }
        why = "is not memory of the stand-in (never allocated, or freed long ago)";
    } else if (a->state == A_PENDING) {
        why = "is used before its allocation (cudaMallocAsync) is reached on its stream";
    } else if (a->state == A_FREED) {
        why = "is used after it was freed";
    } else if (a->state == A_GRAPH) {
        why = "is a graph's memory, used outside the replay that allocates it";
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
    stub_unlock();
    if (!why)
        return 1;
    sc_cudastub_violation(stub_running ? stub_running->gpu : stub_current, "%s: %p (%zu bytes) %s",
                          what, p, bytes, why);
    return 0;
}
