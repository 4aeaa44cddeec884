/*
 * ncclstub.c — NCCL of the CUDA STAND-IN (a test double, tests/cudastub/):
 * point-to-point transfers between the communicators of one process, built
 * as its own shared object that the module loads at run time exactly as it
 * loads libnccl.so.2 (STAGECRAFT_NCCL_LIBRARY).
 *
 * What it models:
 *   - a communicator is usable once all ranks of its unique id have called
 *     ncclCommInitRankConfig; until then a non-blocking one reports
 *     ncclInProgress from ncclCommGetAsyncError; two ranks on one GPU are
 *     refused (as NCCL <= 2.29 does);
 *   - each ncclGroupEnd of sends and receives becomes one operation on the
 *     stream they name, which posts them and completes when all have met
 *     their peers: sends from a to b pair with b's receives from a in
 *     posting order (NCCL's rule; tags do not exist); a size mismatch is a
 *     violation;
 *   - a non-blocking ncclGroupEnd returns ncclInProgress and enqueues from a
 *     helper thread after a random delay, as NCCL 2.28 does; using a
 *     communicator while its last operation is in progress is a violation;
 *   - ncclCommSplit (every rank, same color, key = rank) makes a new
 *     communicator of the same ranks; ncclAllReduce (sum or max, in rank
 *     order) and ncclBroadcast are matched by the order each rank calls
 *     them on the communicator, and run once every rank's has started;
 *   - ncclCommAbort ends the communicator's operations on their streams;
 *     ncclCommFinalize completes (non-blocking: in progress) once its
 *     operations have run;
 *   - a buffer is checked when the copy happens (the stand-in's registry):
 *     a send buffer freed before the transfer ran is a use after free;
 *   - with NCCL_DEBUG set, an INFO line per communicator goes where NCCL
 *     sends its log: NCCL_DEBUG_FILE (%h host, %p pid), else stdout.
 */
#define _GNU_SOURCE
#include "nccl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static clique *cliques;
static long ids;
static char last_global[256];
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

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

static ncclResult_t failed(struct sc_stub_comm *c, ncclResult_t r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static ncclResult_t failed(struct sc_stub_comm *c, ncclResult_t r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c ? c->last : last_global, sizeof last_global, fmt, ap);
    va_end(ap);
    return r;
}

const char *ncclGetLastError(ncclComm_t c)
{
    return c && c->magic == COMM_MAGIC ? c->last : last_global;
}

ncclResult_t ncclGetVersion(int *version)
{
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    memset(id, 0, sizeof *id);
    pthread_mutex_lock(&mu);
    long n = ++ids;
    pthread_mutex_unlock(&mu);
    snprintf(id->internal, sizeof id->internal, "ncclstub %ld %ld", (long)getpid(), n);
    return ncclSuccess;
}

/* Joins the helper thread of c's last non-blocking operation once it is
 * done (a thread still ending when the process exits crashes
 * LeakSanitizer's scan of the threads). */
static void reap(struct sc_stub_comm *c)
{
    pthread_mutex_lock(&mu);
    int join = c->has_helper && !c->busy;
    pthread_t th = c->helper;
    if (join)
        c->has_helper = 0;
    pthread_mutex_unlock(&mu);
    if (join)
        pthread_join(th, NULL);
}

/* A communicator the caller may use (not destroyed, not busy). */
static int usable(struct sc_stub_comm *c, const char *call)
{
    if (c && c->magic == COMM_MAGIC)
        reap(c);
    if (!c || c->magic != COMM_MAGIC || c->destroyed) {
        sc_cudastub_violation(-1, "%s on a %s communicator", call, c ? "destroyed" : "NULL");
        return 0;
    }
    if (c->busy) {
        sc_cudastub_violation(c->gpu, "%s on a communicator whose last operation is still in "
                              "progress (ncclCommGetAsyncError said ncclInProgress)", call);
        return 0;
    }
    return 1;
}

/* ---- groups (per thread) ---- */

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

static _Thread_local struct {
    int depth;
    gop *op;
    int n, cap;
    ncclResult_t err;
} T;

static ncclResult_t add_op(gop g)
{
    if (T.n == T.cap) {
        int nc = T.cap ? 2 * T.cap : 16;
        gop *v = realloc(T.op, (size_t)nc * sizeof *v);
        if (!v)
            return ncclSystemError;
        T.op = v;
        T.cap = nc;
    }
    T.op[T.n++] = g;
    return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
    T.depth++;
    return ncclSuccess;
}

static void join(gop *g)
{
    struct sc_stub_comm *c = g->c;
    clique *q = cliques;
    while (q && memcmp(q->id, g->id, sizeof q->id) != 0)
        q = q->next;
    if (!q) {
        q = calloc(1, sizeof *q);
        q->sendq = calloc((size_t)g->nranks * (size_t)g->nranks, sizeof *q->sendq);
        q->recvq = calloc((size_t)g->nranks * (size_t)g->nranks, sizeof *q->recvq);
        memcpy(q->id, g->id, sizeof q->id);
        q->nranks = g->nranks;
        q->next = cliques;
        cliques = q;
    }
    c->q = q;
    if (q->nranks != g->nranks || q->rank[c->rank]) {
        c->error = failed(c, ncclInvalidUsage, "rank %d joined twice or with another size",
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
                        q->rank[k]->error = failed(q->rank[k], ncclInvalidUsage,
                                                   "Duplicate GPU detected : rank %d and rank "
                                                   "%d both on CUDA device %d", j, i,
                                                   q->rank[i]->gpu);
                }
        pthread_cond_broadcast(&cv);
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
        pthread_cond_broadcast(&cv);
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
    pthread_mutex_lock(&mu);
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
        pthread_cond_wait(&cv, &mu);
    }
    if (g->c->dead)
        for (int i = 0; i < g->n; i++)
            if (!g->e[i].done)
                unpost(q, &g->e[i]);
    g->c->pending--;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
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
    pthread_mutex_lock(&mu);
    if (e != cudaSuccess) {
        c->pending--;
        c->error = failed(c, ncclUnhandledCudaError, "Cuda failure '%s'", cudaGetErrorString(e));
    }
    c->busy = 0;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
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
            return failed(c, ncclInvalidUsage, "one group on two streams of one communicator");
        }
        e[i] = (entry){.send = ops[i].kind == 1, .rank = c->rank, .peer = ops[i].peer,
                       .buf = ops[i].buf, .bytes = ops[i].bytes, .gpu = c->gpu};
    }
    *g = (p2p){.c = c, .e = e, .n = n};
    pthread_mutex_lock(&mu);
    c->pending++;
    if (!c->blocking)
        c->busy = 1;
    pthread_mutex_unlock(&mu);
    if (c->blocking) {
        cudaError_t ce = enqueue_p2p(g, s);
        if (ce != cudaSuccess) {
            pthread_mutex_lock(&mu);
            c->pending--;
            pthread_mutex_unlock(&mu);
            return failed(c, ncclUnhandledCudaError, "Cuda failure '%s'", cudaGetErrorString(ce));
        }
        return ncclSuccess;
    }
    later *l = malloc(sizeof *l);
    pthread_t th;
    *l = (later){g, s};
    if (pthread_create(&th, NULL, enqueue_later, l) != 0) {
        free(l);
        free_p2p(g);
        pthread_mutex_lock(&mu);
        c->busy = 0;
        c->pending--;
        pthread_mutex_unlock(&mu);
        return failed(c, ncclSystemError, "pthread_create failed");
    }
    pthread_mutex_lock(&mu);
    c->helper = th;
    c->has_helper = 1;
    pthread_mutex_unlock(&mu);
    return ncclInProgress;
}

ncclResult_t ncclGroupEnd(void)
{
    if (T.depth < 1)
        return failed(NULL, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--T.depth > 0)
        return ncclSuccess;
    ncclResult_t r = T.err, any_progress = ncclSuccess;
    T.err = ncclSuccess;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < T.n; i++)
        if (T.op[i].kind == 0) {
            join(&T.op[i]);
            if (!T.op[i].c->blocking)
                any_progress = ncclInProgress;
        }
    pthread_mutex_unlock(&mu);
    /* Blocking communicators wait for their clique here. */
    pthread_mutex_lock(&mu);
    for (int i = 0; i < T.n; i++)
        if (T.op[i].kind == 0 && T.op[i].c->blocking)
            while (T.op[i].c->q->joined < T.op[i].c->q->nranks)
                pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    /* Transfers, communicator by communicator in order of appearance. */
    for (int i = 0; i < T.n && r == ncclSuccess; i++) {
        if (T.op[i].kind == 0 || !T.op[i].c)
            continue;
        struct sc_stub_comm *c = T.op[i].c;
        gop *mine = malloc((size_t)T.n * sizeof *mine);
        int n = 0;
        for (int j = i; j < T.n; j++)
            if (T.op[j].kind != 0 && T.op[j].c == c) {
                mine[n++] = T.op[j];
                T.op[j].c = NULL;
            }
        ncclResult_t s = submit(c, mine, n);
        free(mine);
        if (s == ncclInProgress)
            any_progress = ncclInProgress;
        else if (s != ncclSuccess)
            r = s;
    }
    T.n = 0;
    free(T.op); /* the thread may end now: nothing of it is kept */
    T.op = NULL;
    T.cap = 0;
    return r != ncclSuccess ? r : any_progress;
}

static ncclResult_t p2p_call(int send, void *buf, size_t count, ncclDataType_t type, int peer,
                             ncclComm_t c, cudaStream_t s)
{
    if (!usable(c, send ? "ncclSend" : "ncclRecv"))
        return ncclInvalidUsage;
    size_t size = type == ncclFloat32 ? 4 : 1;
    if (c->dead || c->error)
        return c->error ? c->error : ncclInvalidUsage;
    if (peer < 0 || !c->q || peer >= c->q->nranks || peer == c->rank)
        return failed(c, ncclInvalidArgument, "peer %d out of range", peer);
    if (sc_cudastub_stream_gpu(s) != c->gpu) {
        sc_cudastub_violation(c->gpu, "%s on a stream of GPU %d for a communicator of GPU %d",
                              send ? "ncclSend" : "ncclRecv", sc_cudastub_stream_gpu(s), c->gpu);
        return ncclInvalidUsage;
    }
    int implicit = T.depth == 0;
    if (implicit)
        ncclGroupStart();
    ncclResult_t r = add_op((gop){.kind = send ? 1 : 2, .c = c, .buf = buf,
                                  .bytes = count * size, .peer = peer, .s = s});
    if (r != ncclSuccess)
        T.err = r;
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

/* NCCL's debug log: stdout unless NCCL_DEBUG_FILE names a file. */
static void debug_line(int rank, int nranks, int gpu)
{
    if (!getenv("NCCL_DEBUG"))
        return;
    const char *f = getenv("NCCL_DEBUG_FILE");
    FILE *out = stdout;
    if (f && *f) {
        char name[512], host[64] = "host";
        size_t n = 0;
        gethostname(host, sizeof host);
        for (const char *c = f; *c && n + 80 < sizeof name; c++) {
            if (c[0] == '%' && c[1] == 'h')
                n += (size_t)snprintf(name + n, sizeof name - n, "%s", host), c++;
            else if (c[0] == '%' && c[1] == 'p')
                n += (size_t)snprintf(name + n, sizeof name - n, "%ld", (long)getpid()), c++;
            else
                name[n++] = *c;
        }
        name[n] = 0;
        out = fopen(name, "a");
        if (!out)
            return;
    }
    fprintf(out, "cudastub:%ld [%d] NCCL INFO comm rank %d nranks %d cudaDev %d - Init START\n",
            (long)getpid(), gpu, rank, nranks, gpu);
    fflush(out);
    if (out != stdout)
        fclose(out);
}

/* Never freed (a destroyed communicator stays marked, so a later use is
 * caught); reachable from here. */
static struct sc_stub_comm **comms;
static int ncomms, commcap;

ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *cfg)
{
    char want[32];
    snprintf(want, sizeof want, "ncclstub %ld ", (long)getpid());
    if (strncmp(id.internal, want, strlen(want)) != 0)
        return failed(NULL, ncclInvalidUsage, "the stand-in NCCL works within one process (the "
                      "unique id comes from another)");
    if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks)
        return failed(NULL, ncclInvalidArgument, "rank %d of %d", rank, nranks);
    struct sc_stub_comm *c = calloc(1, sizeof *c);
    if (!c)
        return ncclSystemError;
    *c = (struct sc_stub_comm){.magic = COMM_MAGIC, .rank = rank,
                               .gpu = sc_cudastub_current(),
                               .blocking = !cfg || cfg->blocking};
    pthread_mutex_lock(&mu);
    if (ncomms == commcap) {
        commcap = commcap ? 2 * commcap : 16;
        comms = realloc(comms, (size_t)commcap * sizeof *comms);
    }
    comms[ncomms++] = c;
    pthread_mutex_unlock(&mu);
    debug_line(rank, nranks, c->gpu);
    *out = c;
    int implicit = T.depth == 0;
    if (implicit)
        ncclGroupStart();
    gop g = {.kind = 0, .c = c, .nranks = nranks};
    memcpy(g.id, id.internal, sizeof g.id);
    ncclResult_t r = add_op(g);
    if (r != ncclSuccess)
        T.err = r;
    if (!implicit)
        return r;
    return ncclGroupEnd();
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *async)
{
    if (!c || c->magic != COMM_MAGIC || c->destroyed) {
        sc_cudastub_violation(-1, "ncclCommGetAsyncError on a %s communicator",
                              c ? "destroyed" : "NULL");
        return ncclInvalidArgument;
    }
    reap(c);
    pthread_mutex_lock(&mu);
    if (c->error)
        *async = c->error;
    else if (!c->q || c->q->joined < c->q->nranks || c->busy)
        *async = ncclInProgress;
    else
        *async = ncclSuccess;
    pthread_mutex_unlock(&mu);
    return ncclSuccess;
}

/* ncclCommFinalize's helper: done once the communicator's operations ran. */
static void *finalize_later(void *p)
{
    struct sc_stub_comm *c = p;
    pthread_mutex_lock(&mu);
    while (c->pending > 0 && !c->dead)
        pthread_cond_wait(&cv, &mu);
    c->busy = 0;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return NULL;
}

ncclResult_t ncclCommFinalize(ncclComm_t c)
{
    if (!usable(c, "ncclCommFinalize"))
        return ncclInvalidUsage;
    if (c->blocking) {
        finalize_later(c);
        return ncclSuccess;
    }
    pthread_mutex_lock(&mu);
    c->busy = 1;
    pthread_mutex_unlock(&mu);
    pthread_t th;
    if (pthread_create(&th, NULL, finalize_later, c) != 0) {
        finalize_later(c);
        return ncclSuccess;
    }
    pthread_mutex_lock(&mu);
    c->helper = th;
    c->has_helper = 1;
    pthread_mutex_unlock(&mu);
    return ncclInProgress;
}

ncclResult_t ncclCommDestroy(ncclComm_t c)
{
    if (!usable(c, "ncclCommDestroy"))
        return ncclInvalidUsage;
    pthread_mutex_lock(&mu);
    while (c->pending > 0 && !c->dead) /* blocking, as in NCCL: its work ends first */
        pthread_cond_wait(&cv, &mu);
    c->destroyed = 1;
    pthread_mutex_unlock(&mu);
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t c)
{
    if (!c || c->magic != COMM_MAGIC || c->destroyed) {
        sc_cudastub_violation(-1, "ncclCommAbort on a %s communicator", c ? "destroyed" : "NULL");
        return ncclInvalidArgument;
    }
    pthread_mutex_lock(&mu);
    c->dead = 1;
    pthread_cond_broadcast(&cv);
    /* Blocking, as in NCCL: the helper enqueuing its last group finishes. */
    while (c->busy == 1 && c->pending > 0)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    while (c->has_helper) { /* its helper ends once busy is clear */
        reap(c);
        if (c->has_helper)
            usleep(100);
    }
    pthread_mutex_lock(&mu);
    c->destroyed = 1;
    pthread_mutex_unlock(&mu);
    return ncclSuccess;
}

/* ---- split and collectives ---- */

ncclResult_t ncclCommSplit(ncclComm_t parent, int color, int key, ncclComm_t *out,
                           ncclConfig_t *cfg)
{
    (void)color;
    if (!usable(parent, "ncclCommSplit"))
        return ncclInvalidUsage;
    if (!parent->q || key != parent->rank)
        return failed(parent, ncclInvalidArgument, "the stand-in splits with key = rank only");
    struct sc_stub_comm *c = calloc(1, sizeof *c);
    if (!c)
        return ncclSystemError;
    *c = (struct sc_stub_comm){.magic = COMM_MAGIC, .rank = parent->rank,
                               .gpu = sc_cudastub_current(), .blocking = !cfg || cfg->blocking};
    gop g = {.kind = 0, .c = c, .nranks = parent->q->nranks};
    pthread_mutex_lock(&mu);
    if (ncomms == commcap) {
        commcap = commcap ? 2 * commcap : 16;
        comms = realloc(comms, (size_t)commcap * sizeof *comms);
    }
    comms[ncomms++] = c;
    snprintf(g.id, sizeof g.id, "%.100s/split%d", parent->q->id, parent->nsplit++);
    pthread_mutex_unlock(&mu);
    *out = c;
    int implicit = T.depth == 0;
    if (implicit)
        ncclGroupStart();
    ncclResult_t r = add_op(g);
    if (r != ncclSuccess)
        T.err = r;
    return implicit ? ncclGroupEnd() : r;
}

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
    pthread_mutex_lock(&mu);
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
        pthread_cond_broadcast(&cv);
    }
    while (!k->done && !c->dead)
        pthread_cond_wait(&cv, &mu);
    if (--k->left == 0) {
        coll **t = &q->colls;
        while (*t != k)
            t = &(*t)->next;
        *t = k->next;
        free(k);
    }
    c->pending--;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static ncclResult_t collective(int kind, const void *send, void *recv, size_t count,
                               ncclDataType_t type, ncclRedOp_t op, int root, ncclComm_t c,
                               cudaStream_t s)
{
    if (!usable(c, kind ? "ncclBroadcast" : "ncclAllReduce"))
        return ncclInvalidUsage;
    if (c->dead || c->error)
        return c->error ? c->error : ncclInvalidUsage;
    collop *o = malloc(sizeof *o);
    if (!o)
        return ncclSystemError;
    pthread_mutex_lock(&mu);
    *o = (collop){.c = c, .seq = c->ncoll++, .kind = kind, .send = send, .recv = recv,
                  .count = count, .type = type, .op = op, .root = root};
    c->pending++;
    pthread_mutex_unlock(&mu);
    int keep = sc_cudastub_current();
    cudaSetDevice(c->gpu);
    cudaError_t e = sc_cudastub_enqueue(s, run_coll, o, free, kind ? "ncclBroadcast"
                                                                    : "ncclAllReduce");
    cudaSetDevice(keep);
    if (e != cudaSuccess) {
        pthread_mutex_lock(&mu);
        c->pending--;
        pthread_mutex_unlock(&mu);
        return failed(c, ncclUnhandledCudaError, "Cuda failure '%s'", cudaGetErrorString(e));
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
