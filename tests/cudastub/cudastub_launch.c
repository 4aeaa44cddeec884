/*
 * cudastub_launch.c — kernel launches of the CUDA STAND-IN (a test double,
 * tests/cudastub/): the host build of runtime/cuda/cuda_kernels.cu runs its
 * kernels here, on the stream's thread, block after block.
 *
 * Each thread of a block is a coroutine with its own stack (a switch of
 * the callee-saved registers on x86-64: ucontext's swapcontext makes a
 * system call per switch, far too slow for 256 threads and 17 barriers per
 * block; ucontext elsewhere);
 * __syncthreads switches back to the block's scheduler, which resumes the
 * next thread, so every thread reaches a barrier before any passes it, and
 * __shared__ memory (a thread_local of the stream's thread) is shared by
 * the block exactly as on a GPU. A kernel that never reached a barrier in
 * its first launch runs its threads as plain calls from then on.
 * sc_cudastub_launch (cudastub_stream.c) queues a launch on its stream;
 * stub_run_kernel runs it there.
 */
#define _GNU_SOURCE
#include "cuda_runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "cudastub_impl.h"

#if defined(__SANITIZE_ADDRESS__)
#define STUB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STUB_ASAN 1
#endif
#endif
#ifdef STUB_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#define STACK_BYTES ((size_t)64 << 10)

static _Thread_local sc_stub_dim3 b_idx, t_idx, b_dim, g_dim;

sc_stub_dim3 *sc_cudastub_block_idx(void) { return &b_idx; }
sc_stub_dim3 *sc_cudastub_thread_idx(void) { return &t_idx; }
sc_stub_dim3 *sc_cudastub_block_dim(void) { return &b_dim; }
sc_stub_dim3 *sc_cudastub_grid_dim(void) { return &g_dim; }

#if defined(__x86_64__)
/* Saves the callee-saved registers on the current stack, stores the stack
 * pointer in *from, switches to the stack `to` and restores its registers. */
void sc_stub_switch(void **from, void *to);
__asm__(".text\n"
        ".globl sc_stub_switch\n"
        ".hidden sc_stub_switch\n"
        ".type sc_stub_switch,@function\n"
        "sc_stub_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size sc_stub_switch, .-sc_stub_switch\n");
#define FAST_SWITCH 1
#endif

/* The coroutines of the block running on this (stream) thread. */
typedef struct fiber {
#ifdef FAST_SWITCH
    void *sp;
#else
    ucontext_t uc;
#endif
    char *stack;
    int finished, at_barrier;
} fiber;

static _Thread_local struct {
    fiber *f;          /* [MAX_BLOCK], stacks allocated on first use */
#ifdef FAST_SWITCH
    void *sched_sp;
#else
    ucontext_t sched;
#endif
    int cur;
    int coroutines;    /* running as coroutines (else plain calls) */
    int hit_barrier;
    void (*fn)(void *);
    void *arg;
#ifdef STUB_ASAN
    const void *sched_stack;
    size_t sched_size;
#endif
} B;

/* Kernels known to have no barrier (run as plain calls). */
static pthread_mutex_t kmu = PTHREAD_MUTEX_INITIALIZER;
static const void *plain[64];
static int nplain;

static int is_plain(const void *k)
{
    pthread_mutex_lock(&kmu);
    int r = 0;
    for (int i = 0; i < nplain && !r; i++)
        r = plain[i] == k;
    pthread_mutex_unlock(&kmu);
    return r;
}

static void mark_plain(const void *k)
{
    pthread_mutex_lock(&kmu);
    if (nplain < 64)
        plain[nplain++] = k;
    pthread_mutex_unlock(&kmu);
}

static void switch_to_sched(fiber *f)
{
#ifdef FAST_SWITCH
    sc_stub_switch(&f->sp, B.sched_sp);
#else
    swapcontext(&f->uc, &B.sched);
#endif
}

static void switch_to_fiber(fiber *f)
{
#ifdef FAST_SWITCH
    sc_stub_switch(&B.sched_sp, f->sp);
#else
    swapcontext(&B.sched, &f->uc);
#endif
}

static void to_scheduler(fiber *f)
{
#ifdef STUB_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(f->finished ? NULL : &fake, B.sched_stack, B.sched_size);
    switch_to_sched(f);
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
    switch_to_sched(f);
#endif
}

static void fiber_main(void)
{
#ifdef STUB_ASAN
    __sanitizer_finish_switch_fiber(NULL, &B.sched_stack, &B.sched_size);
#endif
    fiber *f = &B.f[B.cur];
    B.fn(B.arg);
    f->finished = 1;
    to_scheduler(f);
}

void sc_cudastub_syncthreads(void)
{
    B.hit_barrier = 1;
    if (!B.coroutines)
        return; /* a plain call cannot wait: stub_run_kernel reports it */
    fiber *f = &B.f[B.cur];
    f->at_barrier = 1;
    to_scheduler(f);
}

static void resume(int t)
{
    fiber *f = &B.f[t];
    B.cur = t;
    t_idx = (sc_stub_dim3){(unsigned)t, 0, 0};
#ifdef STUB_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, f->stack, STACK_BYTES);
    switch_to_fiber(f);
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
    switch_to_fiber(f);
#endif
}

/* Runs one block as coroutines: every thread up to its next barrier, in
 * rounds, until all have finished. */
static void run_block_coroutines(unsigned nthreads)
{
    if (!B.f) {
        B.f = calloc(MAX_BLOCK, sizeof *B.f);
        if (!B.f)
            abort();
    }
    for (unsigned t = 0; t < nthreads; t++) {
        fiber *f = &B.f[t];
        if (!f->stack && !(f->stack = malloc(STACK_BYTES)))
            abort();
        f->finished = f->at_barrier = 0;
#ifdef FAST_SWITCH
        /* A fresh stack as sc_stub_switch leaves one: six registers, then
         * the "return address" fiber_main, entered with the alignment of a
         * call (rsp + 8 a multiple of 16). */
        uintptr_t *sp = (uintptr_t *)(((uintptr_t)f->stack + STACK_BYTES) & ~(uintptr_t)15);
        *--sp = 0;
        *--sp = (uintptr_t)fiber_main;
        for (int i = 0; i < 6; i++)
            *--sp = 0;
        f->sp = sp;
#else
        getcontext(&f->uc);
        f->uc.uc_stack.ss_sp = f->stack;
        f->uc.uc_stack.ss_size = STACK_BYTES;
        f->uc.uc_link = NULL;
        makecontext(&f->uc, fiber_main, 0);
#endif
    }
    for (;;) {
        int live = 0;
        for (unsigned t = 0; t < nthreads; t++) {
            fiber *f = &B.f[t];
            if (f->finished)
                continue;
            f->at_barrier = 0;
            resume((int)t);
            live += !f->finished;
        }
        if (!live)
            break;
    }
}

void sc_cudastub_thread_exit(void)
{
    if (!B.f)
        return;
    for (int t = 0; t < MAX_BLOCK; t++)
        free(B.f[t].stack);
    free(B.f);
    B.f = NULL;
}

void stub_run_kernel(void *p)
{
    launch *l = p;
    g_dim = (sc_stub_dim3){l->grid, 1, 1};
    b_dim = (sc_stub_dim3){l->block, 1, 1};
    B.fn = l->fn;
    B.arg = l->arg;
    B.coroutines = !is_plain(l->kernel);
    B.hit_barrier = 0;
    for (unsigned b = 0; b < l->grid; b++) {
        b_idx = (sc_stub_dim3){b, 0, 0};
        if (B.coroutines) {
            run_block_coroutines(l->block);
        } else {
            for (unsigned t = 0; t < l->block; t++) {
                t_idx = (sc_stub_dim3){t, 0, 0};
                l->fn(l->arg);
            }
        }
    }
    if (B.coroutines && !B.hit_barrier)
        mark_plain(l->kernel);
    if (!B.coroutines && B.hit_barrier)
        sc_cudastub_violation(-1, "a kernel reached __syncthreads after running without one");
}

void stub_free_launch(void *p)
{
    launch *l = p;
    if (l->free_fn)
        l->free_fn(l->arg);
    free(l);
}
