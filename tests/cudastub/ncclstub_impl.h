/*
 * ncclstub_impl.h — private to the NCCL of the CUDA STAND-IN (a test
 * double, tests/cudastub/; what it models: ncclstub.c): the communicator's
 * body and the state the NCCL stand-in's files share.
 *
 * The files, each using only those above it (no call cycle):
 *   ncclstub.c        the shared state, errors, unique ids, usable()
 *   ncclstub_group.c  groups: ncclGroupStart/End, ncclSend/ncclRecv, pairing
 *   ncclstub_comm.c   communicators: init, split, finalize, destroy, abort
 *   ncclstub_coll.c   collectives: ncclAllReduce, ncclBroadcast
 * Everything here is hidden (prefix nstub_): the library exports NCCL's
 * API only.
 */
#ifndef SC_NCCLSTUB_IMPL_H
#define SC_NCCLSTUB_IMPL_H

#include <pthread.h>
#include <stddef.h>

#include "nccl.h"

#define NSTUB_HIDDEN __attribute__((visibility("hidden")))

#define COMM_MAGIC 0x434f4d4dU
#define MAX_RANKS 64

typedef struct entry {
    int send;
    int rank, peer;
    void *buf;
    size_t bytes;
    int gpu;
    int done;
    struct entry *next;   /* in its pair's queue */
} entry;

/* One collective of a clique: the k-th call of every rank. */
typedef struct coll {
    long seq;
    int kind;                 /* 0 all-reduce, 1 broadcast */
    int posted, left, done;
    size_t count;
    ncclDataType_t type;
    ncclRedOp_t op;
    int root;
    const void *send[MAX_RANKS];
    void *recv[MAX_RANKS];
    int gpu[MAX_RANKS];
    struct coll *next;
} coll;

typedef struct clique {
    char id[NCCL_UNIQUE_ID_BYTES];
    int nranks, joined;
    struct sc_stub_comm *rank[MAX_RANKS];
    entry **sendq, **recvq;  /* [nranks * nranks], by (from, to) */
    coll *colls;
    struct clique *next;
} clique;

struct sc_stub_comm {
    unsigned magic;
    clique *q;
    int rank, gpu, blocking;
    int destroyed, dead;
    int busy;              /* a non-blocking operation is in progress */
    int pending;           /* stream operations not yet completed */
    int nsplit;            /* ncclCommSplit calls so far */
    pthread_t helper;      /* the thread of the last non-blocking operation */
    int has_helper;
    long ncoll;            /* collectives posted so far */
    ncclResult_t error;
    char last[256];
};

/* ---- the shared state (ncclstub.c) ---- */

/* mu guards the cliques, the communicators' fields and the collectives; cv
 * is broadcast on every change a waiter may be waiting for. */
extern NSTUB_HIDDEN pthread_mutex_t nstub_mu;
extern NSTUB_HIDDEN pthread_cond_t nstub_cv;
extern NSTUB_HIDDEN clique *nstub_cliques;

/* Writes the message ncclGetLastError returns (c's, or the global one when
 * c is NULL) and returns r. */
NSTUB_HIDDEN ncclResult_t nstub_failed(struct sc_stub_comm *c, ncclResult_t r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Joins the helper thread of c's last non-blocking operation once it is
 * done. */
NSTUB_HIDDEN void nstub_reap(struct sc_stub_comm *c);
/* A communicator the caller may use (not destroyed, not busy); a violation
 * (the call named) when not. */
NSTUB_HIDDEN int nstub_usable(struct sc_stub_comm *c, const char *call);

/* ---- groups, per thread (ncclstub_group.c) ---- */

typedef struct gop {
    int kind;                 /* 0 init, 1 send, 2 recv */
    struct sc_stub_comm *c;
    void *buf;
    size_t bytes;
    int peer;
    cudaStream_t s;
    char id[NCCL_UNIQUE_ID_BYTES];
    int nranks;
} gop;

/* The calling thread's group: its depth, the operations posted in it, the
 * first error. */
struct nstub_group {
    int depth;
    gop *op;
    int n, cap;
    ncclResult_t err;
};
extern NSTUB_HIDDEN _Thread_local struct nstub_group nstub_T;

/* Adds g to the thread's group. */
NSTUB_HIDDEN ncclResult_t nstub_add_op(gop g);

#endif
