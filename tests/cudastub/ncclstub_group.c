/*
 * ncclstub_group.c — groups and point-to-point transfers of the NCCL
 * stand-in (a test double, tests/cudastub/; what it models: ncclstub.c):
 * each ncclGroupEnd of sends and receives becomes one operation on the
 * stream they name; sends from a to b pair with b's receives from a in
 * posting order; a non-blocking ncclGroupEnd enqueues from a helper thread
 * of its own, a little later. A group also joins the communicators that
 * ncclstub_comm.c initialized in it to their cliques.
 */
#define _GNU_SOURCE
#include "nccl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncclstub_impl.h"

static unsigned delay_us;
static int delay_read;

static unsigned delay(void)
{
    if (!delay_read) {
        const char *d = getenv("SC_CUDASTUB_DELAY_US");
        delay_us = d ? (unsigned)atoi(d) : 0;
        delay_read = 1;
    }
    return delay_us;
}

/* ---- groups (per thread) ---- */

_Thread_local struct nstub_group nstub_T;

ncclResult_t nstub_add_op(gop g)
{
    if (nstub_T.n == nstub_T.cap) {
        int nc = nstub_T.cap ? 2 * nstub_T.cap : 16;
        gop *v = realloc(nstub_T.op, (size_t)nc * sizeof *v);
        if (!v)
            return ncclSystemError;
        nstub_T.op = v;
        nstub_T.cap = nc;
    }
    nstub_T.op[nstub_T.n++] = g;
    return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
    nstub_T.depth++;
    return ncclSuccess;
}

static void join(gop *g)
{
    struct sc_stub_comm *c = g->c;
    clique *q = nstub_cliques;
    while (q && memcmp(q->id, g->id, sizeof q->id) != 0)
        q = q->next;
    if (!q) {
        q = calloc(1, sizeof *q);
        q->sendq = calloc((size_t)g->nranks * (size_t)g->nranks, sizeof *q->sendq);
        q->recvq = calloc((size_t)g->nranks * (size_t)g->nranks, sizeof *q->recvq);
        memcpy(q->id, g->id, sizeof q->id);
        q->nranks = g->nranks;
        q->next = nstub_cliques;
        nstub_cliques = q;
    }
    c->q = q;
    if (q->nranks != g->nranks || q->rank[c->rank]) {
        c->error = nstub_failed(c, ncclInvalidUsage, "rank %d joined twice or with another size",
                          c->rank);
        return;
    }
    q->rank[c->rank] = c;
    q->joined++;
    if (q->joined == q->nranks) {
        for (int i = 0; i < q->nranks; i++)
            for (int j = 0; j < i; j++)
                if (q->rank[i]->gpu == q->rank[j]->gpu) {
                    for (int k = 0; k < q->nranks; k++)
                        q->rank[k]->error = nstub_failed(q->rank[k], ncclInvalidUsage,
                                                   "Duplicate GPU detected : rank %d and rank "
                                                   "%d both on CUDA device %d", j, i,
                                                   q->rank[i]->gpu);
                }
        pthread_cond_broadcast(&nstub_cv);
    }
}

/* One stream operation: the transfers of one communicator's group. */
typedef struct p2p {
    struct sc_stub_comm *c;
    entry *e;
    int n;
} p2p;

static int queue_at(clique *q, int from, int to)
{
    return from * q->nranks + to;
}

/* Copies a matched pair (mu held); 0 on a violation. */
static void transfer(entry *s, entry *r)
{
    if (s->bytes != r->bytes)
        sc_cudastub_violation(r->gpu, "ncclSend of %zu bytes from rank %d met ncclRecv of %zu "
                              "bytes on rank %d (NCCL pairs them in posting order)",
                              s->bytes, s->rank, r->bytes, r->rank);
    else if (sc_cudastub_check(s->buf, s->bytes, s->gpu, 0, "ncclSend buffer") &&
             sc_cudastub_check(r->buf, r->bytes, r->gpu, 0, "ncclRecv buffer"))
        memcpy(r->buf, s->buf, s->bytes);
    s->done = r->done = 1;
}

static void post(clique *q, entry *e)
{
    int from = e->send ? e->rank : e->peer, to = e->send ? e->peer : e->rank;
    entry **mine = e->send ? &q->sendq[queue_at(q, from, to)] : &q->recvq[queue_at(q, from, to)];
    entry **theirs = e->send ? &q->recvq[queue_at(q, from, to)] : &q->sendq[queue_at(q, from, to)];
    if (*theirs && !*mine) { /* the oldest waiting partner */
        entry *o = *theirs;
        *theirs = o->next;
        if (e->send)
            transfer(e, o);
        else
            transfer(o, e);
        pthread_cond_broadcast(&nstub_cv);
        return;
    }
    entry **t = mine;
    while (*t)
        t = &(*t)->next;
    e->next = NULL;
    *t = e;
}

static void unpost(clique *q, entry *e)
{
    int from = e->send ? e->rank : e->peer, to = e->send ? e->peer : e->rank;
    entry **t = e->send ? &q->sendq[queue_at(q, from, to)] : &q->recvq[queue_at(q, from, to)];
    for (; *t; t = &(*t)->next)
        if (*t == e) {
            *t = e->next;
            return;
        }
}

static void run_p2p(void *p)
{
    p2p *g = p;
    pthread_mutex_lock(&nstub_mu);
    clique *q = g->c->q;
    if (!g->c->dead)
        for (int i = 0; i < g->n; i++)
            post(q, &g->e[i]);
    for (;;) {
        int all = 1;
        for (int i = 0; i < g->n && all; i++)
            all = g->e[i].done;
        if (all || g->c->dead)
            break;
        pthread_cond_wait(&nstub_cv, &nstub_mu);
    }
    if (g->c->dead)
        for (int i = 0; i < g->n; i++)
            if (!g->e[i].done)
                unpost(q, &g->e[i]);
    g->c->pending--;
    pthread_cond_broadcast(&nstub_cv);
    pthread_mutex_unlock(&nstub_mu);
}

static void free_p2p(void *p)
{
    p2p *g = p;
    free(g->e);
    free(g);
}

typedef struct later {
    p2p *g;
    cudaStream_t s;
} later;

static cudaError_t enqueue_p2p(p2p *g, cudaStream_t s)
{
    int keep = sc_cudastub_current();
    cudaSetDevice(g->c->gpu);
    cudaError_t e = sc_cudastub_enqueue(s, run_p2p, g, free_p2p, "ncclGroupEnd");
    cudaSetDevice(keep);
    return e;
}

/* NCCL 2.28's non-blocking ncclGroupEnd: the work is enqueued by a thread
 * of its own, a little later. */
static void *enqueue_later(void *p)
{
    later *l = p;
    if (delay())
        usleep((useconds_t)(rand() % (delay() + 1)));
    struct sc_stub_comm *c = l->g->c;
    cudaError_t e = enqueue_p2p(l->g, l->s);
    pthread_mutex_lock(&nstub_mu);
    if (e != cudaSuccess) {
        c->pending--;
        c->error = nstub_failed(c, ncclUnhandledCudaError, "Cuda failure '%s'", cudaGetErrorString(e));
    }
    c->busy = 0;
    pthread_cond_broadcast(&nstub_cv);
    pthread_mutex_unlock(&nstub_mu);
    free(l);
    return NULL;
}

static ncclResult_t submit(struct sc_stub_comm *c, gop *ops, int n)
{
    p2p *g = calloc(1, sizeof *g);
    entry *e = calloc((size_t)n, sizeof *e);
    if (!g || !e) {
        free(g);
        free(e);
        return ncclSystemError;
    }
    cudaStream_t s = ops[0].s;
    for (int i = 0; i < n; i++) {
        if (ops[i].s != s) {
            free(g);
            free(e);
            return nstub_failed(c, ncclInvalidUsage, "one group on two streams of one communicator");
        }
        e[i] = (entry){.send = ops[i].kind == 1, .rank = c->rank, .peer = ops[i].peer,
                       .buf = ops[i].buf, .bytes = ops[i].bytes, .gpu = c->gpu};
    }
    *g = (p2p){.c = c, .e = e, .n = n};
    pthread_mutex_lock(&nstub_mu);
    c->pending++;
    if (!c->blocking)
        c->busy = 1;
    pthread_mutex_unlock(&nstub_mu);
    if (c->blocking) {
        cudaError_t ce = enqueue_p2p(g, s);
        if (ce != cudaSuccess) {
            pthread_mutex_lock(&nstub_mu);
            c->pending--;
            pthread_mutex_unlock(&nstub_mu);
            return nstub_failed(c, ncclUnhandledCudaError, "Cuda failure '%s'", cudaGetErrorString(ce));
        }
        return ncclSuccess;
    }
    later *l = malloc(sizeof *l);
    pthread_t th;
    *l = (later){g, s};
    if (pthread_create(&th, NULL, enqueue_later, l) != 0) {
        free(l);
        free_p2p(g);
        pthread_mutex_lock(&nstub_mu);
        c->busy = 0;
        c->pending--;
        pthread_mutex_unlock(&nstub_mu);
        return nstub_failed(c, ncclSystemError, "pthread_create failed");
    }
    pthread_mutex_lock(&nstub_mu);
    c->helper = th;
    c->has_helper = 1;
    pthread_mutex_unlock(&nstub_mu);
    return ncclInProgress;
}

ncclResult_t ncclGroupEnd(void)
{
    if (nstub_T.depth < 1)
        return nstub_failed(NULL, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--nstub_T.depth > 0)
        return ncclSuccess;
    ncclResult_t r = nstub_T.err, any_progress = ncclSuccess;
    nstub_T.err = ncclSuccess;
    pthread_mutex_lock(&nstub_mu);
    for (int i = 0; i < nstub_T.n; i++)
        if (nstub_T.op[i].kind == 0) {
            join(&nstub_T.op[i]);
            if (!nstub_T.op[i].c->blocking)
                any_progress = ncclInProgress;
        }
    pthread_mutex_unlock(&nstub_mu);
    /* Blocking communicators wait for their clique here. */
    pthread_mutex_lock(&nstub_mu);
    for (int i = 0; i < nstub_T.n; i++)
        if (nstub_T.op[i].kind == 0 && nstub_T.op[i].c->blocking)
            while (nstub_T.op[i].c->q->joined < nstub_T.op[i].c->q->nranks)
                pthread_cond_wait(&nstub_cv, &nstub_mu);
    pthread_mutex_unlock(&nstub_mu);
    /* Transfers, communicator by communicator in order of appearance. */
    for (int i = 0; i < nstub_T.n && r == ncclSuccess; i++) {
        if (nstub_T.op[i].kind == 0 || !nstub_T.op[i].c)
            continue;
        struct sc_stub_comm *c = nstub_T.op[i].c;
        gop *mine = malloc((size_t)nstub_T.n * sizeof *mine);
        int n = 0;
        for (int j = i; j < nstub_T.n; j++)
            if (nstub_T.op[j].kind != 0 && nstub_T.op[j].c == c) {
                mine[n++] = nstub_T.op[j];
                nstub_T.op[j].c = NULL;
            }
        ncclResult_t s = submit(c, mine, n);
        free(mine);
        if (s == ncclInProgress)
            any_progress = ncclInProgress;
        else if (s != ncclSuccess)
            r = s;
    }
    nstub_T.n = 0;
    free(nstub_T.op); /* the thread may end now: nothing of it is kept */
    nstub_T.op = NULL;
    nstub_T.cap = 0;
    return r != ncclSuccess ? r : any_progress;
}

static ncclResult_t p2p_call(int send, void *buf, size_t count, ncclDataType_t type, int peer,
                             ncclComm_t c, cudaStream_t s)
{
    if (!nstub_usable(c, send ? "ncclSend" : "ncclRecv"))
        return ncclInvalidUsage;
    size_t size = type == ncclFloat32 ? 4 : 1;
    if (c->dead || c->error)
        return c->error ? c->error : ncclInvalidUsage;
    if (peer < 0 || !c->q || peer >= c->q->nranks) /* itself: a copy, as NCCL does */
        return nstub_failed(c, ncclInvalidArgument, "peer %d out of range", peer);
    if (sc_cudastub_stream_gpu(s) != c->gpu) {
        sc_cudastub_violation(c->gpu, "%s on a stream of GPU %d for a communicator of GPU %d",
                              send ? "ncclSend" : "ncclRecv", sc_cudastub_stream_gpu(s), c->gpu);
        return ncclInvalidUsage;
    }
    int implicit = nstub_T.depth == 0;
    if (implicit)
        ncclGroupStart();
    ncclResult_t r = nstub_add_op((gop){.kind = send ? 1 : 2, .c = c, .buf = buf,
                                  .bytes = count * size, .peer = peer, .s = s});
    if (r != ncclSuccess)
        nstub_T.err = r;
    return implicit ? ncclGroupEnd() : r;
}

ncclResult_t ncclSend(const void *buf, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t c, cudaStream_t s)
{
    return p2p_call(1, (void *)buf, count, type, peer, c, s);
}

ncclResult_t ncclRecv(void *buf, size_t count, ncclDataType_t type, int peer, ncclComm_t c,
                      cudaStream_t s)
{
    return p2p_call(0, buf, count, type, peer, c, s);
}
