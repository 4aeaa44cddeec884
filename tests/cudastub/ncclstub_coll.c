/*
 * ncclstub_coll.c — collectives of the NCCL stand-in (a test double,
 * tests/cudastub/; what it models: ncclstub.c): ncclAllReduce (sum or max,
 * in rank order) and ncclBroadcast, matched by the order each rank calls
 * them on the communicator, run once every rank's has started.
 */
#define _GNU_SOURCE
#include "nccl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclstub_impl.h"

typedef struct collop {
    struct sc_stub_comm *c;
    long seq;
    int kind;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t type;
    ncclRedOp_t op;
    int root;
} collop;

static size_t type_size(ncclDataType_t t)
{
    return t == ncclFloat64 ? 8 : t == ncclFloat32 ? 4 : 1;
}

/* The last rank to arrive computes for all (mu held): rank order, so the
 * result is the same bits on every rank. */
static void reduce_all(clique *q, coll *k)
{
    size_t bytes = k->count * type_size(k->type);
    for (int r = 0; r < q->nranks; r++)
        if (!sc_cudastub_check(k->send[r], bytes, k->gpu[r], 0, "collective send buffer") ||
            !sc_cudastub_check(k->recv[r], bytes, k->gpu[r], 0, "collective receive buffer"))
            return;
    if (k->kind == 1) {
        for (int r = 0; r < q->nranks; r++)
            if (k->recv[r] != k->send[k->root])
                memmove(k->recv[r], k->send[k->root], bytes);
        return;
    }
    for (size_t i = 0; i < k->count; i++) {
        double acc = 0;
        for (int r = 0; r < q->nranks; r++) {
            double x = k->type == ncclFloat64 ? ((const double *)k->send[r])[i]
                                              : ((const float *)k->send[r])[i];
            acc = r == 0 ? x : k->op == ncclMax ? (x > acc ? x : acc) : acc + x;
        }
        for (int r = 0; r < q->nranks; r++) {
            if (k->type == ncclFloat64)
                ((double *)k->recv[r])[i] = acc;
            else
                ((float *)k->recv[r])[i] = (float)acc;
        }
    }
}

static void run_coll(void *p)
{
    collop *o = p;
    struct sc_stub_comm *c = o->c;
    pthread_mutex_lock(&nstub_mu);
    clique *q = c->q;
    coll *k = q->colls;
    while (k && k->seq != o->seq)
        k = k->next;
    if (!k) {
        k = calloc(1, sizeof *k);
        *k = (coll){.seq = o->seq, .kind = o->kind, .count = o->count, .type = o->type,
                    .op = o->op, .root = o->root, .left = q->nranks, .next = q->colls};
        q->colls = k;
    }
    if (k->kind != o->kind || k->count != o->count || k->type != o->type ||
        (k->kind == 1 && k->root != o->root))
        sc_cudastub_violation(c->gpu, "collective #%ld: rank %d calls another collective than "
                              "its peers (NCCL matches them in calling order)", o->seq, c->rank);
    k->send[c->rank] = o->send;
    k->recv[c->rank] = o->recv;
    k->gpu[c->rank] = c->gpu;
    if (++k->posted == q->nranks) {
        reduce_all(q, k);
        k->done = 1;
        pthread_cond_broadcast(&nstub_cv);
    }
    while (!k->done && !c->dead)
        pthread_cond_wait(&nstub_cv, &nstub_mu);
    if (--k->left == 0) {
        coll **t = &q->colls;
        while (*t != k)
            t = &(*t)->next;
        *t = k->next;
        free(k);
    }
    c->pending--;
    pthread_cond_broadcast(&nstub_cv);
    pthread_mutex_unlock(&nstub_mu);
}

static ncclResult_t collective(int kind, const void *send, void *recv, size_t count,
                               ncclDataType_t type, ncclRedOp_t op, int root, ncclComm_t c,
                               cudaStream_t s)
{
    if (!nstub_usable(c, kind ? "ncclBroadcast" : "ncclAllReduce"))
        return ncclInvalidUsage;
    if (c->dead || c->error)
        return c->error ? c->error : ncclInvalidUsage;
    collop *o = malloc(sizeof *o);
    if (!o)
        return ncclSystemError;
    pthread_mutex_lock(&nstub_mu);
    *o = (collop){.c = c, .seq = c->ncoll++, .kind = kind, .send = send, .recv = recv,
                  .count = count, .type = type, .op = op, .root = root};
    c->pending++;
    pthread_mutex_unlock(&nstub_mu);
    int keep = sc_cudastub_current();
    cudaSetDevice(c->gpu);
    cudaError_t e = sc_cudastub_enqueue(s, run_coll, o, free, kind ? "ncclBroadcast"
                                                                    : "ncclAllReduce");
    cudaSetDevice(keep);
    if (e != cudaSuccess) {
        pthread_mutex_lock(&nstub_mu);
        c->pending--;
        pthread_mutex_unlock(&nstub_mu);
        return nstub_failed(c, ncclUnhandledCudaError, "Cuda failure '%s'", cudaGetErrorString(e));
    }
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t c, cudaStream_t s)
{
    return collective(0, send, recv, count, type, op, 0, c, s);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t c, cudaStream_t s)
{
    return collective(1, send, recv, count, type, ncclSum, root, c, s);
}
