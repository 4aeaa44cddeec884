/*
 * cudastub_impl.h — private to the CUDA STAND-IN (a test double,
 * tests/cudastub/): the bodies of its stream and event handles.
 */
#ifndef SC_CUDASTUB_IMPL_H
#define SC_CUDASTUB_IMPL_H

#include <pthread.h>

#define STREAM_MAGIC 0x5354524dU
#define EVENT_MAGIC 0x4556544eU

struct op;

struct sc_stub_stream {
    unsigned magic;
    int gpu;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct op *head, *tail;
    long queued, done;     /* operations queued and completed */
    int stop, destroyed, exited;
};

struct sc_stub_event {
    unsigned magic;
    int gpu;
    long recorded;         /* the latest version recorded (G.mu) */
    long done;             /* the latest version completed */
    int destroyed;
};

/* A stream's thread ends: frees its coroutine stacks (cudastub_launch.c). */
void sc_cudastub_thread_exit(void);

#endif
