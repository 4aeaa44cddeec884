/*
 * transport_cuda_local.c — the cuda-local transport (transport.h): devices
 * are threads of one process with cuda backends, any number of them per GPU
 * (pipeline devices emulated on one GPU for development, or more devices
 * than GPUs). NCCL cannot have two ranks on one GPU; this transport can.
 *
 * Matching is transport_local's: one slot per tag holds the side that
 * started first; the side that starts second queues the copy and both
 * groups count one match. The copy (cudaMemcpyPeerAsync, which is a device
 * copy on one GPU) runs on the second side's communication stream after two
 * events: each device records `posted` on its compute stream when it posts a
 * group, so the copy reads the sender's data once produced and writes the
 * receiver's buffer once its allocation (stream-ordered on the receiver's
 * compute stream) is valid. A device re-records `posted` only for its next
 * group, which starts once the previous one has completed, i.e. once every
 * copy that waited on the old record has been queued.
 *
 * A group has completed when all its transfers are matched and their copy
 * events are done (cudaEventQuery). Waits poll, sleeping briefly, and give
 * up after the timeout; abort wakes every wait.
 *
 * While the device's compute stream is capturing (run --graph,
 * docs/graphs.md), a group completes once matched, its copies queued: the
 * compute stream then waits for each copy's event (an edge of the graph)
 * instead of the host, and the communication streams, joined to the
 * capture by the `posted` events they wait for, are joined back by it.
 *
 * Collectives go through the host (coll_host.h): a member copies its buffer
 * to a host buffer of its own after the compute queued so far (its stream
 * synchronized: the collective's data are produced there), the last member
 * to arrive completes the collective over the host copies in device order
 * (the same bits as the local transport's), and each member copies the
 * result back into its buffer when it finds the collective done. The k-th
 * collective of every device meets in slot k mod NCS: a device starts its
 * k-th only once its (k-1)-th has completed, which needs every member to
 * have started that one, so no two live collectives share a slot. NCCL, on
 * one GPU per device, does the same on the GPUs; this transport serves any
 * number of devices per GPU.
 *
 * An all-to-all (a2a_start) is a collective of the same sequence through
 * the host too: a member copies its rows out on its communication stream
 * (the caller has synchronized the backend that produced them, which may be
 * a pair's lane, not the compute stream registered here), the last to
 * arrive completes it over the host parts (coll_host.h's
 * sc_a2a_host_complete: row counts, overflow, rows), and each member copies
 * the rows it received into its buffer, on that stream, synchronized.
 */
#include "transport/transport.h"
#include "transport/coll_host.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_impl.h"

typedef struct cslot {
    int posted;        /* 0 empty, 1 a send waits, 2 a receive waits, 3 matched */
    int dev, peer;
    void *buf;
    size_t bytes;
    cudaEvent_t done;  /* the copy's end, once matched */
    int refs;          /* groups still holding a matched slot */
} cslot;

typedef struct cdev {
    int gpu;
    cudaStream_t compute; /* the backend's */
    cudaStream_t comm;    /* this transport's */
    cudaEvent_t posted;
} cdev;

typedef struct cgroup {
    int n;
    int tag[];
} cgroup;

#define NCS 4

typedef struct ccoll {
    long gen;          /* the collective number it serves, -1: none yet */
    int arrived, done;
    int a2a;           /* an all-to-all: host[] are the members' sc_a2a_part */
    sc_cxfer x;        /* the first arrival's description */
    void **host;       /* [P] members' host copies */
} ccoll;

typedef struct chandle {
    int slot;
    long gen;
    void *host;        /* this member's host copy (the result, once done) */
    void *buf;         /* its device buffer */
    size_t bytes;
    int back;          /* the result is copied back */
    sc_a2a_part *a2a;  /* an all-to-all's caller part, or NULL */
    sc_a2a_part part;  /* its host twin: send = host, recv = its own host rows */
} chandle;

typedef struct clocal {
    int P, max_tag;
    double timeout_s;
    pthread_mutex_t mu;
    cdev *d;
    cslot *slots;     /* [max_tag] */
    ccoll cs[NCS];
    long *cseq;       /* [P] each device's next collective number */
    int aborted;
    char err[384];
} clocal;

/* First failure wins; every wait then fails. Call with mu held. */
static sc_status fail_locked(clocal *c, const char *msg)
{
    if (!c->aborted) {
        c->aborted = 1;
        snprintf(c->err, sizeof c->err, "%s", msg);
    }
    return SC_ERR_RUNTIME;
}

static sc_status fail(clocal *c, const char *msg)
{
    pthread_mutex_lock(&c->mu);
    sc_status st = fail_locked(c, msg);
    pthread_mutex_unlock(&c->mu);
    return st;
}

/* A CUDA call's failure as one line: "cuda-local transport: d0: FILE:LINE: CALL: REASON". */
static int ck(clocal *c, int locked, int dev, cudaError_t e, int line, const char *call)
{
    if (e == cudaSuccess)
        return 1;
    char b[256], m[320];
    sc_cuda_format(b, sizeof b, __FILE__, line, call, cudaGetErrorString(e));
    snprintf(m, sizeof m, "cuda-local transport: d%d: %s", dev, b);
    if (locked)
        fail_locked(c, m);
    else
        fail(c, m);
    return 0;
}

#define CK(locked, dev, call) ck(c, (locked), (dev), (call), __LINE__, #call)

static sc_status cl_start(void *ctx, int dev, const sc_xfer *x, int n, void **group)
{
    clocal *c = ctx;
    cdev *me = &c->d[dev];
    cgroup *g = malloc(sizeof *g + (size_t)(n > 0 ? n : 1) * sizeof(int));
    *group = g;
    if (!g)
        return SC_ERR_NOMEM;
    g->n = 0;
    if (!CK(0, dev, sc_cuda_use(me->gpu)) || !CK(0, dev, cudaEventRecord(me->posted, me->compute)))
        return SC_ERR_RUNTIME;
    sc_status st = SC_OK;
    pthread_mutex_lock(&c->mu);
    if (c->aborted)
        st = SC_ERR_RUNTIME; /* the peers' buffers may be gone: match nothing */
    for (int i = 0; i < n && !st; i++) {
        const sc_xfer *t = &x[i];
        char m[160];
        if (t->tag < 0 || t->tag >= c->max_tag || t->peer < 0 || t->peer >= c->P) {
            snprintf(m, sizeof m, "cuda-local transport: d%d posted a transfer to d%d with tag "
                     "%d out of range", dev, t->peer, t->tag);
            st = fail_locked(c, m);
            break;
        }
        cslot *s = &c->slots[t->tag];
        if (s->posted == 0) {
            *s = (cslot){.posted = t->send ? 1 : 2, .dev = dev, .peer = t->peer, .buf = t->buf,
                         .bytes = t->bytes};
            g->tag[g->n++] = t->tag;
            continue;
        }
        if (s->posted != (t->send ? 2 : 1) || s->dev != t->peer || s->peer != dev ||
            s->bytes != t->bytes) {
            snprintf(m, sizeof m, "cuda-local transport: d%d and d%d disagree on transfer tag %d",
                     dev, s->dev, t->tag);
            st = fail_locked(c, m);
            break;
        }
        const cdev *other = &c->d[s->dev];
        void *dst = t->send ? s->buf : t->buf;
        const void *src = t->send ? t->buf : s->buf;
        int dgpu = t->send ? other->gpu : me->gpu, sgpu = t->send ? me->gpu : other->gpu;
        if (!CK(1, dev, cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming)) ||
            !CK(1, dev, cudaStreamWaitEvent(me->comm, other->posted, 0)) ||
            !CK(1, dev, cudaStreamWaitEvent(me->comm, me->posted, 0)) ||
            !CK(1, dev, cudaMemcpyPeerAsync(dst, dgpu, src, sgpu, t->bytes, me->comm)) ||
            !CK(1, dev, cudaEventRecord(s->done, me->comm))) {
            st = SC_ERR_RUNTIME;
            break;
        }
        s->posted = 3;
        s->refs = 2;
        g->tag[g->n++] = t->tag;
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

static sc_status cl_test(void *ctx, int dev, void *group, int *done)
{
    clocal *c = ctx;
    cgroup *g = group;
    *done = 0;
    if (!CK(0, dev, sc_cuda_use(c->d[dev].gpu)))
        return SC_ERR_RUNTIME;
    pthread_mutex_lock(&c->mu);
    int aborted = c->aborted, matched = 1;
    for (int i = 0; i < g->n && matched; i++)
        matched = c->slots[g->tag[i]].posted == 3;
    pthread_mutex_unlock(&c->mu);
    if (aborted)
        return SC_ERR_RUNTIME;
    if (!matched)
        return SC_OK;
    /* Matched slots stay as they are until both groups are released. */
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (!CK(0, dev, cudaStreamIsCapturing(c->d[dev].compute, &cs)))
        return SC_ERR_RUNTIME;
    if (cs != cudaStreamCaptureStatusNone) { /* run --graph: complete once queued */
        for (int i = 0; i < g->n; i++)
            if (!CK(0, dev, cudaStreamWaitEvent(c->d[dev].compute, c->slots[g->tag[i]].done, 0)))
                return SC_ERR_RUNTIME;
        *done = 1;
        return SC_OK;
    }
    for (int i = 0; i < g->n; i++) {
        cudaError_t e = cudaEventQuery(c->slots[g->tag[i]].done);
        if (e == cudaErrorNotReady) {
            /* Not an error: but the runtime records it as the thread's last
             * error, which the next kernel launch would report as its own. */
            (void)cudaGetLastError();
            return SC_OK;
        }
        if (!ck(c, 0, dev, e, __LINE__, "cudaEventQuery"))
            return SC_ERR_RUNTIME;
    }
    *done = 1;
    return SC_OK;
}

/* Polls test(h) until it is done, sleeping briefly after a while; gives
 * up after the timeout, naming what it waited for. */
static sc_status poll_until(clocal *c, int dev, void *h,
                            sc_status (*test)(void *, int, void *, int *), const char *what)
{
    double deadline = sc_cuda_now() + c->timeout_s;
    for (long spin = 0;; spin++) {
        int done = 0;
        sc_status st = test(c, dev, h, &done);
        if (st || done)
            return st;
        if (c->timeout_s > 0 && sc_cuda_now() > deadline) {
            char m[192];
            snprintf(m, sizeof m, "cuda-local transport: d%d waited %g s for %s; a peer is gone "
                     "or stuck: giving up", dev, c->timeout_s, what);
            return fail(c, m);
        }
        if (spin > 64)
            nanosleep(&(struct timespec){0, 20000}, NULL);
    }
}

static sc_status cl_wait(void *ctx, int dev, void *group)
{
    return poll_until(ctx, dev, group, cl_test, "a transfer group");
}

static void cl_release(void *ctx, int dev, void *group)
{
    clocal *c = ctx;
    cgroup *g = group;
    (void)dev;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < g->n; i++) {
        cslot *s = &c->slots[g->tag[i]];
        if (s->posted == 3 && --s->refs == 0) {
            cudaEventDestroy(s->done);
            *s = (cslot){0};
        }
    }
    pthread_mutex_unlock(&c->mu);
    free(g);
}

/* After marking the transport aborted (no copy is queued from then on),
 * waits for every device's communication stream: a copy a peer queued
 * before may still read or write this device's buffers, which the caller
 * frees next. The streams wait only on compute events, which complete. */
static void cl_abort(void *ctx, int dev, const char *why)
{
    clocal *c = ctx;
    char m[384];
    snprintf(m, sizeof m, "d%d failed: %s", dev, why);
    fail(c, m);
    for (int d = 0; d < c->P; d++) {
        enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        if (c->d[d].comm && sc_cuda_use(c->d[d].gpu) == cudaSuccess &&
            cudaStreamIsCapturing(c->d[d].comm, &cs) == cudaSuccess &&
            cs == cudaStreamCaptureStatusNone) /* a capturing one runs nothing */
            (void)cudaStreamSynchronize(c->d[d].comm);
    }
    (void)cudaGetLastError();
}

static const char *cl_errmsg(void *ctx)
{
    return ((clocal *)ctx)->err;
}

/* Member dev's arrival at its next collective (x: its description, an
 * all-to-all's op and row in x->op and x->count); the last completes it. */
static sc_status arrive(clocal *c, int dev, chandle *hd, const sc_cxfer *x)
{
    sc_status st = SC_OK;
    pthread_mutex_lock(&c->mu);
    long k = c->cseq[dev]++;
    ccoll *s = &c->cs[k % NCS];
    hd->slot = (int)(k % NCS);
    hd->gen = k;
    if (c->aborted) {
        st = SC_ERR_RUNTIME;
    } else if (s->gen != k) {
        s->gen = k;
        s->arrived = s->done = 0;
        s->x = *x;
        s->a2a = hd->a2a != NULL;
    } else if (s->a2a != (hd->a2a != NULL) || !sc_coll_same(&s->x, x)) {
        char m[192];
        snprintf(m, sizeof m, "cuda-local transport: d%d's collective %ld is not the one the "
                 "others posted (kind, reduction, root, type, count or row differ)", dev, k);
        st = fail_locked(c, m);
    }
    if (!st) {
        s->host[dev] = hd->a2a ? (void *)&hd->part : hd->host;
        if (++s->arrived == c->P) {
            if (s->a2a)
                sc_a2a_host_complete((sc_a2a_part *const *)s->host, c->P);
            else
                sc_coll_host_complete(&s->x, s->host, c->P);
            s->done = 1;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

static sc_status cl_coll_start(void *ctx, int dev, const sc_cxfer *x, void **h)
{
    clocal *c = ctx;
    cdev *me = &c->d[dev];
    chandle *hd = calloc(1, sizeof *hd);
    *h = hd;
    if (!hd)
        return SC_ERR_NOMEM;
    hd->buf = x->buf;
    hd->bytes = x->count * sc_coll_dtype_size(x->dtype);
    if (!(hd->host = malloc(hd->bytes ? hd->bytes : 1)))
        return SC_ERR_NOMEM;
    /* A broadcast's receivers send nothing; every other member its data,
     * once the compute that produced them has run. */
    int sends = !sc_cxfer_bcast(x->op) || x->root == dev;
    if (!CK(0, dev, sc_cuda_use(me->gpu)) ||
        (sends && hd->bytes &&
         !CK(0, dev, cudaMemcpyAsync(hd->host, x->buf, hd->bytes, cudaMemcpyDeviceToHost,
                                     me->compute))) ||
        !CK(0, dev, cudaStreamSynchronize(me->compute)))
        return SC_ERR_RUNTIME;
    return arrive(c, dev, hd, x);
}

/* Rows of an all-to-all part: sent (the sum of nsend) or received. */
static size_t rows_of(const size_t *n, int P)
{
    size_t t = 0;
    for (int e = 0; e < P; e++)
        t += n[e];
    return t;
}

static sc_status cl_a2a_start(void *ctx, int dev, sc_a2a_part *x, void **h)
{
    clocal *c = ctx;
    cdev *me = &c->d[dev];
    chandle *hd = calloc(1, sizeof *hd);
    *h = hd;
    if (!hd)
        return SC_ERR_NOMEM;
    size_t out = rows_of(x->nsend, c->P) * x->row;
    hd->a2a = x;
    hd->part = *x;
    hd->host = malloc(out ? out : 1);
    hd->part.send = hd->host;
    hd->part.recv = malloc(x->rcap > 0 && x->row > 0 ? x->rcap * x->row : 1);
    if (!hd->host || !hd->part.recv)
        return SC_ERR_NOMEM;
    if (!CK(0, dev, sc_cuda_use(me->gpu)) ||
        (out && !CK(0, dev, cudaMemcpyAsync(hd->host, x->send, out, cudaMemcpyDeviceToHost,
                                            me->comm))) ||
        !CK(0, dev, cudaStreamSynchronize(me->comm)))
        return SC_ERR_RUNTIME;
    return arrive(c, dev, hd, &(sc_cxfer){.op = x->op, .count = x->row});
}

/* A completed all-to-all's rows into the member's buffer. */
static sc_status a2a_back(clocal *c, int dev, chandle *hd)
{
    cdev *me = &c->d[dev];
    sc_a2a_part *x = hd->a2a;
    size_t in = hd->part.overflow ? 0 : rows_of(hd->part.nrecv, c->P) * x->row;
    x->overflow = hd->part.overflow;
    if (!CK(0, dev, sc_cuda_use(me->gpu)) ||
        (in && !CK(0, dev, cudaMemcpyAsync(x->recv, hd->part.recv, in, cudaMemcpyHostToDevice,
                                           me->comm))) ||
        !CK(0, dev, cudaStreamSynchronize(me->comm)))
        return SC_ERR_RUNTIME;
    return SC_OK;
}

static sc_status cl_coll_test(void *ctx, int dev, void *h, int *done)
{
    clocal *c = ctx;
    chandle *hd = h;
    *done = 0;
    pthread_mutex_lock(&c->mu);
    int ready = c->cs[hd->slot].gen == hd->gen && c->cs[hd->slot].done;
    int aborted = c->aborted;
    pthread_mutex_unlock(&c->mu);
    if (!ready)
        return aborted ? SC_ERR_RUNTIME : SC_OK;
    if (!hd->back && hd->a2a) {
        if (a2a_back(c, dev, hd) != SC_OK)
            return SC_ERR_RUNTIME;
        hd->back = 1;
    }
    if (!hd->back) { /* the result into the member's buffer, on its stream */
        cdev *me = &c->d[dev];
        if (!CK(0, dev, sc_cuda_use(me->gpu)) ||
            (hd->bytes && !CK(0, dev, cudaMemcpyAsync(hd->buf, hd->host, hd->bytes,
                                                      cudaMemcpyHostToDevice, me->compute))) ||
            !CK(0, dev, cudaStreamSynchronize(me->compute)))
            return SC_ERR_RUNTIME;
        hd->back = 1;
    }
    *done = 1;
    return SC_OK;
}

static sc_status cl_coll_wait(void *ctx, int dev, void *h)
{
    char what[48];
    snprintf(what, sizeof what, "collective %ld", ((chandle *)h)->gen);
    return poll_until(ctx, dev, h, cl_coll_test, what);
}

static void cl_coll_release(void *ctx, int dev, void *h)
{
    (void)ctx;
    (void)dev;
    chandle *hd = h;
    if (hd) {
        free(hd->host);
        if (hd->a2a)
            free(hd->part.recv);
    }
    free(hd);
}

static const struct sc_transport_ops cuda_local_ops = {
    .name = "cuda-local",
    .start = cl_start,
    .test = cl_test,
    .wait = cl_wait,
    .release = cl_release,
    .abort = cl_abort,
    .errmsg = cl_errmsg,
    .coll_start = cl_coll_start,
    .a2a_start = cl_a2a_start,
    .coll_test = cl_coll_test,
    .coll_wait = cl_coll_wait,
    .coll_release = cl_coll_release,
};

void sc_cuda_local_free(sc_transport *tp)
{
    if (!tp)
        return;
    clocal *c = tp->ctx;
    for (int d = 0; d < c->P; d++) {
        cdev *v = &c->d[d];
        if (sc_cuda_use(v->gpu) != cudaSuccess)
            continue;
        if (v->comm) {
            cudaStreamSynchronize(v->comm);
            cudaStreamDestroy(v->comm);
        }
        if (v->posted)
            cudaEventDestroy(v->posted);
    }
    for (int i = 0; i < c->max_tag; i++)
        if (c->slots[i].posted == 3)
            cudaEventDestroy(c->slots[i].done);
    (void)cudaGetLastError();
    pthread_mutex_destroy(&c->mu);
    for (int i = 0; i < NCS; i++)
        free(c->cs[i].host);
    free(c->cseq);
    free(c->slots);
    free(c->d);
    free(c);
    free(tp);
}

sc_status sc_cuda_local_new(int P, sc_backend *const *be, int max_tag, double timeout_s,
                            sc_transport **out, char *err, size_t errlen)
{
    *out = NULL;
    sc_transport *tp = calloc(1, sizeof *tp);
    clocal *c = calloc(1, sizeof *c);
    cdev *d = calloc((size_t)P, sizeof *d);
    cslot *slots = calloc((size_t)max_tag + 1, sizeof *slots);
    if (!tp || !c || !d || !slots) {
        free(tp);
        free(c);
        free(d);
        free(slots);
        snprintf(err, errlen, "out of memory creating the cuda-local transport");
        return SC_ERR_NOMEM;
    }
    *c = (clocal){.P = P, .max_tag = max_tag, .timeout_s = timeout_s, .d = d, .slots = slots};
    pthread_mutex_init(&c->mu, NULL);
    tp->ops = &cuda_local_ops;
    tp->ctx = c;
    int ok = (c->cseq = calloc((size_t)P, sizeof(long))) != NULL;
    for (int i = 0; i < NCS && ok; i++) {
        c->cs[i].gen = -1;
        ok = (c->cs[i].host = calloc((size_t)P, sizeof(void *))) != NULL;
    }
    if (!ok) {
        sc_cuda_local_free(tp);
        snprintf(err, errlen, "out of memory creating the cuda-local transport");
        return SC_ERR_NOMEM;
    }
    for (int i = 0; i < P; i++) {
        d[i].gpu = sc_cuda_backend_gpu(be[i]);
        d[i].compute = sc_cuda_backend_stream(be[i]);
        if (d[i].gpu < 0) {
            snprintf(err, errlen, "cuda-local transport: d%d has no cuda backend", i);
            sc_cuda_local_free(tp);
            return SC_ERR_ARG;
        }
    }
    for (int i = 0; i < P; i++) {
        if (!CK(0, i, sc_cuda_use(d[i].gpu)) ||
            !CK(0, i, cudaStreamCreateWithFlags(&d[i].comm, cudaStreamNonBlocking)) ||
            !CK(0, i, cudaEventCreateWithFlags(&d[i].posted, cudaEventDisableTiming))) {
            snprintf(err, errlen, "%s", c->err);
            sc_cuda_local_free(tp);
            return SC_ERR_RUNTIME;
        }
        /* Direct copies between GPUs where the hardware allows; the copy
         * goes through the host otherwise. */
        for (int j = 0; j < P; j++) {
            int can = 0;
            if (d[j].gpu != d[i].gpu &&
                cudaDeviceCanAccessPeer(&can, d[i].gpu, d[j].gpu) == cudaSuccess && can)
                (void)cudaDeviceEnablePeerAccess(d[j].gpu, 0); /* may be enabled already */
            (void)cudaGetLastError();
        }
    }
    *out = tp;
    return SC_OK;
}
