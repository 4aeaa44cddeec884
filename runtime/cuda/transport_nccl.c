/*
 * transport_nccl.c — the nccl transport (transport.h): one NCCL
 * communicator over the P devices, one GPU each; devices are threads of one
 * process (one communicator per device, created together) or MPI ranks (the
 * unique id broadcast by the caller).
 *
 * A group is exactly what docs/semantics.md#the-semantics models: ncclGroupStart, ncclSend or
 * ncclRecv per transfer, ncclGroupEnd, on the device's communication stream,
 * after the compute its device had queued when posting (an event on the
 * compute stream, waited for by the communication stream). Completion is an
 * event recorded after the group on the communication stream.
 *
 * Matching. NCCL pairs the sends of a device to a peer with that peer's
 * receives in posting order; the tags are not sent. Lowered programs post the
 * transfers of each pair in one global order on both sides
 * (docs/semantics.md#why-lowered-programs-cannot-hang), and sc_run checks any
 * other program before choosing this transport, so the order pairs the same
 * transfers as the tags would.
 *
 * Collectives (docs/semantics.md#collectives) run on a second communicator (ncclCommSplit of
 * the first, same ranks) and a second stream of their own, so that they
 * overlap the P2P groups as the verifier's two channels do:
 * ncclAllReduce in place or ncclBroadcast, after the compute queued when
 * the collective starts (the same event as the groups), completion an event
 * on that stream. NCCL's own rule, that every rank calls the collectives
 * of a communicator in the same order, is what the verifier proves. An
 * all-to-all (ep > 1) is two groups of ncclSend/ncclRecv there, the row
 * counts then the rows (transport_nccl_a2a.c).
 *
 * Never hanging. The communicators are non-blocking (config.blocking = 0):
 * no NCCL call waits for a peer. ncclGroupEnd may return ncclInProgress, the
 * operations being enqueued in the background (connections to a new peer
 * are set up lazily, with the peer); the group's event is recorded only once
 * ncclCommGetAsyncError says ncclSuccess. Every poll also reads
 * ncclCommGetAsyncError, so an NCCL error (a peer that died) fails the wait.
 * A failure, an abort or the timeout marks the transport aborted; each
 * device's thread then aborts its own communicator (ncclCommAbort) at its
 * next test or wait, and its waits fail.
 */
#include "transport/transport.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_impl.h"
#include "nccl_impl.h"

/* NCCL's entry points (nccl_lib.c): set by sc_cuda_nccl_id and
 * sc_cuda_nccl_new before anything else of this file runs. */
static const sc_nccl_lib *N;

_Static_assert(SC_NCCL_ID_BYTES == NCCL_UNIQUE_ID_BYTES, "ncclUniqueId size");

static void set_fail(nctx *c, const char *msg)
{
    pthread_mutex_lock(&c->mu);
    if (!c->aborted) {
        c->aborted = 1;
        snprintf(c->err, sizeof c->err, "%s", msg);
    }
    pthread_mutex_unlock(&c->mu);
}

static int is_aborted(nctx *c)
{
    pthread_mutex_lock(&c->mu);
    int a = c->aborted;
    pthread_mutex_unlock(&c->mu);
    return a;
}

/* Aborts device v's communicator; only v's thread calls this (or the
 * caller while v's thread is not running). */
static void kill_comm(ndev *v)
{
    if (v->dead || !v->nc)
        return;
    v->dead = 1;
    (void)sc_cuda_use(v->gpu);
    if (v->cc)
        N->CommAbort(v->cc);
    v->cc = NULL;
    N->CommAbort(v->nc);
    v->nc = NULL;
    /* The aborted kernels end on their own; wait for them, so that the
     * caller may free the buffers this device's groups were using. The
     * streams wait only on compute events, which complete. */
    if (v->comm)
        (void)cudaStreamSynchronize(v->comm);
    if (v->cstream)
        (void)cudaStreamSynchronize(v->cstream);
    (void)cudaGetLastError();
}

/* Records the failure of a call of device v and aborts v's communicator. */
sc_status sc_nccl_fail_dev(nctx *c, ndev *v, const char *file, int line, const char *call,
                          const char *reason)
{
    char b[256], m[384];
    sc_cuda_format(b, sizeof b, file, line, call, reason);
    snprintf(m, sizeof m, "nccl transport: d%d: %s", v->dev, b);
    set_fail(c, m);
    kill_comm(v);
    return SC_ERR_RUNTIME;
}

static const char *nccl_why(ncclResult_t r, ncclComm_t nc)
{
    const char *last = N->GetLastError(nc);
    return last && *last ? last : N->GetErrorString(r);
}

ndev *sc_nccl_dev_of(nctx *c, int dev)
{
    return dev >= 0 && dev < c->P && c->local[dev] >= 0 ? &c->d[c->local[dev]] : NULL;
}

/* The start of a group (or collective) of device v on stream st: its
 * handle in *out (freed by nc_release, also on failure), an event for its
 * completion, and st ordered after the compute queued so far (which
 * produced the buffers). */
sc_status sc_nccl_group_begin(nctx *c, ndev *v, cudaStream_t *st, void **out)
{
    cudaError_t err_;
    ngroup *g = calloc(1, sizeof *g);
    *out = g;
    if (!g)
        return SC_ERR_NOMEM;
    if (!v)
        return SC_ERR_ARG;
    if (is_aborted(c)) {
        kill_comm(v);
        return SC_ERR_RUNTIME;
    }
    if (!CUDA_OK(v, sc_cuda_use(v->gpu)) ||
        !CUDA_OK(v, cudaEventCreateWithFlags(&g->ev, cudaEventDisableTiming)) ||
        !CUDA_OK(v, cudaEventRecord(v->mark, v->compute)) ||
        !CUDA_OK(v, cudaStreamWaitEvent(*st, v->mark, 0)))
        return SC_ERR_RUNTIME;
    return SC_OK;
}

/* After the NCCL call r that queued g on st: when it is queued (not still
 * in progress on a non-blocking communicator), its completion event. */
sc_status sc_nccl_group_queued(nctx *c, ndev *v, ngroup *g, cudaStream_t st, ncclResult_t r,
                              ncclComm_t nc, const char *what)
{
    cudaError_t err_;
    if (r != ncclSuccess && r != ncclInProgress)
        return sc_nccl_fail_dev(c, v, __FILE__, __LINE__, what, nccl_why(r, nc));
    if (r == ncclSuccess) {
        if (!CUDA_OK(v, cudaEventRecord(g->ev, st)))
            return SC_ERR_RUNTIME;
        g->enqueued = 1;
    }
    return SC_OK;
}

static sc_status nc_start(void *ctx, int dev, const sc_xfer *x, int n, void **group)
{
    nctx *c = ctx;
    ndev *v = sc_nccl_dev_of(c, dev);
    sc_status st = sc_nccl_group_begin(c, v, v ? &v->comm : NULL, group);
    if (st)
        return st;
    ncclResult_t r = N->GroupStart();
    for (int i = 0; i < n && (r == ncclSuccess || r == ncclInProgress); i++) {
        const sc_xfer *t = &x[i];
        r = t->send ? N->Send(t->buf, t->bytes, ncclInt8, t->peer, v->nc, v->comm)
                    : N->Recv(t->buf, t->bytes, ncclInt8, t->peer, v->nc, v->comm);
    }
    ncclResult_t e = N->GroupEnd();
    if (r == ncclSuccess || r == ncclInProgress)
        r = e;
    return sc_nccl_group_queued(c, v, *group, v->comm, r, v->nc, "ncclGroupEnd");
}

/* Whether group (or collective) g of device v on communicator nc and
 * stream st has completed. */
sc_status sc_nccl_test_on(nctx *c, ndev *v, ngroup *g, ncclComm_t nc, cudaStream_t st, int *done)
{
    cudaError_t err_;
    *done = 0;
    if (!v)
        return SC_ERR_ARG;
    if (is_aborted(c)) {
        kill_comm(v);
        return SC_ERR_RUNTIME;
    }
    ncclResult_t ae = ncclSuccess;
    ncclResult_t r = N->CommGetAsyncError(nc, &ae);
    if (r != ncclSuccess)
        return sc_nccl_fail_dev(c, v, __FILE__, __LINE__, "ncclCommGetAsyncError", N->GetErrorString(r));
    if (ae != ncclSuccess && ae != ncclInProgress)
        return sc_nccl_fail_dev(c, v, __FILE__, __LINE__, "ncclCommGetAsyncError", nccl_why(ae, nc));
    if (!g->enqueued) {
        if (ae == ncclInProgress)
            return SC_OK;
        if (!CUDA_OK(v, sc_cuda_use(v->gpu)) || !CUDA_OK(v, cudaEventRecord(g->ev, st)))
            return SC_ERR_RUNTIME;
        g->enqueued = 1;
    }
    cudaError_t q = cudaEventQuery(g->ev);
    if (q == cudaErrorNotReady) {
        /* Not an error: but the runtime records it as the thread's last
         * error, which the next kernel launch would report as its own. */
        (void)cudaGetLastError();
        return SC_OK;
    }
    if (q != cudaSuccess)
        return sc_nccl_fail_dev(c, v, __FILE__, __LINE__, "cudaEventQuery", cudaGetErrorString(q));
    *done = 1;
    return SC_OK;
}

static sc_status nc_test(void *ctx, int dev, void *group, int *done)
{
    nctx *c = ctx;
    ndev *v = sc_nccl_dev_of(c, dev);
    *done = 0;
    return v ? sc_nccl_test_on(c, v, group, v->nc, v->comm, done) : SC_ERR_ARG;
}

static sc_status nc_coll_test(void *ctx, int dev, void *h, int *done)
{
    nctx *c = ctx;
    ndev *v = sc_nccl_dev_of(c, dev);
    ngroup *g = h;
    *done = 0;
    if (!v)
        return SC_ERR_ARG;
    return g->a2a ? sc_nccl_a2a_test(c, v, g, done)
                  : sc_nccl_test_on(c, v, g, v->cc, v->cstream, done);
}

/* Polls test until done, an error, or the timeout. */
static sc_status poll_wait(nctx *c, int dev, void *group,
                           sc_status (*test)(void *, int, void *, int *), const char *what)
{
    double deadline = sc_cuda_now() + c->timeout_s;
    for (long spin = 0;; spin++) {
        int done = 0;
        sc_status st = test(c, dev, group, &done);
        if (st || done)
            return st;
        if (c->timeout_s > 0 && sc_cuda_now() > deadline) {
            char m[256];
            snprintf(m, sizeof m, "nccl transport: d%d waited %g s for a %s; a peer is gone or "
                     "stuck: giving up (ncclCommAbort on every device)", dev, c->timeout_s, what);
            set_fail(c, m);
            kill_comm(sc_nccl_dev_of(c, dev));
            return SC_ERR_RUNTIME;
        }
        if (spin > 64)
            nanosleep(&(struct timespec){0, 20000}, NULL);
    }
}

static sc_status nc_wait(void *ctx, int dev, void *group)
{
    return poll_wait(ctx, dev, group, nc_test, "transfer group");
}

static sc_status nc_coll_wait(void *ctx, int dev, void *h)
{
    return poll_wait(ctx, dev, h, nc_coll_test, "collective");
}

/* A collective on the second communicator and stream, after the compute
 * queued so far (which produced its buffer). */
static sc_status nc_coll_start(void *ctx, int dev, const sc_cxfer *x, void **h)
{
    nctx *c = ctx;
    ndev *v = sc_nccl_dev_of(c, dev);
    sc_status st = sc_nccl_group_begin(c, v, v ? &v->cstream : NULL, h);
    if (st)
        return st;
    ncclDataType_t t = x->dtype == SC_DT_F64 ? ncclFloat64 : ncclFloat32;
    int bcast = sc_cxfer_bcast(x->op);
    ncclResult_t r = bcast
                         ? N->Broadcast(x->buf, x->buf, x->count, t, x->root, v->cc, v->cstream)
                         : N->AllReduce(x->buf, x->buf, x->count, t,
                                         x->red == SC_RED_MAX ? ncclMax : ncclSum, v->cc,
                                         v->cstream);
    return sc_nccl_group_queued(c, v, *h, v->cstream, r, v->cc,
                        bcast ? "ncclBroadcast" : "ncclAllReduce");
}

static sc_status nc_a2a_start(void *ctx, int dev, sc_a2a_part *x, void **h)
{
    return sc_nccl_a2a_start(ctx, N, dev, x, h);
}

static void nc_release(void *ctx, int dev, void *group)
{
    nctx *c = ctx;
    ngroup *g = group;
    ndev *v = sc_nccl_dev_of(c, dev);
    if (g->a2a)
        sc_nccl_a2a_free(v, g);
    if (g->ev && v && sc_cuda_use(v->gpu) == cudaSuccess)
        cudaEventDestroy(g->ev);
    free(g);
}

static void nc_abort(void *ctx, int dev, const char *why)
{
    nctx *c = ctx;
    char m[384];
    snprintf(m, sizeof m, "d%d failed: %s", dev, why);
    set_fail(c, m);
    ndev *v = sc_nccl_dev_of(c, dev);
    if (v)
        kill_comm(v);
}

static const char *nc_errmsg(void *ctx)
{
    return ((nctx *)ctx)->err;
}

static const struct sc_transport_ops nccl_ops = {
    .name = "nccl",
    .start = nc_start,
    .test = nc_test,
    .wait = nc_wait,
    .release = nc_release,
    .abort = nc_abort,
    .errmsg = nc_errmsg,
    .coll_start = nc_coll_start,
    .a2a_start = nc_a2a_start,
    .coll_test = nc_coll_test,
    .coll_wait = nc_coll_wait,
    .coll_release = nc_release,
};

/* Polls every live communicator until none is ncclInProgress; the timeout
 * aborts them. Returns SC_OK or a failure in c->err. */
static sc_status settle(nctx *c, const char *what)
{
    double deadline = sc_cuda_now() + (c->timeout_s > 0 ? c->timeout_s : 1e9);
    for (;;) {
        int busy = 0;
        for (int i = 0; i < c->n; i++) {
            ndev *v = &c->d[i];
            if (v->dead || !v->nc)
                continue;
            ncclResult_t ae = ncclSuccess, ae2 = ncclSuccess;
            ncclResult_t r = N->CommGetAsyncError(v->nc, &ae);
            if (r != ncclSuccess)
                ae = r;
            if (v->cc && (r = N->CommGetAsyncError(v->cc, &ae2)) != ncclSuccess)
                ae2 = r;
            if (ae == ncclSuccess || ae == ncclInProgress)
                ae = ae2 == ncclSuccess ? ae : ae2;
            if (ae == ncclInProgress)
                busy = 1;
            else if (ae != ncclSuccess) {
                char m[320];
                snprintf(m, sizeof m, "nccl transport: d%d: %s: %s", v->dev, what,
                         nccl_why(ae, v->nc));
                set_fail(c, m);
                for (int j = 0; j < c->n; j++)
                    kill_comm(&c->d[j]);
                return SC_ERR_RUNTIME;
            }
        }
        if (!busy)
            return SC_OK;
        if (sc_cuda_now() > deadline) {
            char m[256];
            snprintf(m, sizeof m, "nccl transport: %s took more than %g s; a peer is gone or "
                     "stuck: giving up (ncclCommAbort)", what, c->timeout_s);
            set_fail(c, m);
            for (int j = 0; j < c->n; j++)
                kill_comm(&c->d[j]);
            return SC_ERR_RUNTIME;
        }
        nanosleep(&(struct timespec){0, 100000}, NULL);
    }
}

void sc_cuda_nccl_free(sc_transport *tp)
{
    if (!tp)
        return;
    nctx *c = tp->ctx;
    int live = 0;
    if (!c->aborted) {
        /* A clean end: flush (ncclCommFinalize, non-blocking), then destroy. */
        for (int i = 0; i < c->n; i++)
            if (!c->d[i].dead && c->d[i].nc && sc_cuda_use(c->d[i].gpu) == cudaSuccess) {
                (void)N->CommFinalize(c->d[i].nc); /* a failure shows in settle */
                if (c->d[i].cc)
                    (void)N->CommFinalize(c->d[i].cc);
            }
        live = settle(c, "finalizing the communicators") == SC_OK;
    }
    for (int i = 0; i < c->n; i++) {
        ndev *v = &c->d[i];
        if (live && v->nc && !v->dead) {
            if (v->cc)
                N->CommDestroy(v->cc);
            N->CommDestroy(v->nc);
        } else {
            kill_comm(v);
        }
        if (sc_cuda_use(v->gpu) != cudaSuccess)
            continue;
        if (v->comm)
            cudaStreamDestroy(v->comm);
        if (v->cstream)
            cudaStreamDestroy(v->cstream);
        if (v->mark)
            cudaEventDestroy(v->mark);
    }
    (void)cudaGetLastError();
    pthread_mutex_destroy(&c->mu);
    free(c->d);
    free(c->local);
    free(c);
    free(tp);
}

int sc_cuda_nccl_usable(char *why, size_t whylen)
{
    return sc_cuda_nccl_lib(why, whylen) != NULL;
}

sc_status sc_cuda_nccl_id(unsigned char *id, char *err, size_t errlen)
{
    char why[1024];
    if (!N && !(N = sc_cuda_nccl_lib(why, sizeof why))) {
        snprintf(err, errlen, "nccl transport: %s", why);
        return SC_ERR_ARG;
    }
    ncclUniqueId u;
    ncclResult_t r = N->GetUniqueId(&u);
    if (r != ncclSuccess) {
        snprintf(err, errlen, "nccl transport: ncclGetUniqueId: %s", N->GetErrorString(r));
        return SC_ERR_RUNTIME;
    }
    memcpy(id, u.internal, SC_NCCL_ID_BYTES);
    return SC_OK;
}

sc_status sc_cuda_nccl_new(int P, int n, const int *devs, sc_backend *const *be,
                          const unsigned char *id, double timeout_s, sc_transport **out,
                          char *err, size_t errlen)
{
    *out = NULL;
    char why[1024];
    if (!N && !(N = sc_cuda_nccl_lib(why, sizeof why))) {
        snprintf(err, errlen, "nccl transport: %s", why);
        return SC_ERR_ARG;
    }
    sc_transport *tp = calloc(1, sizeof *tp);
    nctx *c = calloc(1, sizeof *c);
    ndev *d = calloc((size_t)(n > 0 ? n : 1), sizeof *d);
    int *local = malloc((size_t)P * sizeof(int));
    if (!tp || !c || !d || !local) {
        free(tp);
        free(c);
        free(d);
        free(local);
        snprintf(err, errlen, "out of memory creating the nccl transport");
        return SC_ERR_NOMEM;
    }
    *c = (nctx){.P = P, .n = n, .d = d, .local = local, .timeout_s = timeout_s};
    pthread_mutex_init(&c->mu, NULL);
    tp->ops = &nccl_ops;
    tp->ctx = c;
    for (int i = 0; i < P; i++)
        local[i] = -1;
    sc_status st = SC_OK;
    for (int i = 0; i < n && !st; i++) {
        d[i] = (ndev){.dev = devs[i], .gpu = sc_cuda_backend_gpu(be[i]),
                      .compute = sc_cuda_backend_stream(be[i])};
        for (int j = 0; j < i && !st; j++)
            if (d[j].gpu == d[i].gpu) {
                snprintf(err, errlen, "nccl transport: d%d and d%d are both on GPU %d (NCCL "
                         "needs one GPU per device; cuda-local emulates several on one)",
                         d[j].dev, d[i].dev, d[i].gpu);
                st = SC_ERR_ARG;
            }
        if (!st && (d[i].gpu < 0 || devs[i] < 0 || devs[i] >= P)) {
            snprintf(err, errlen, "nccl transport: d%d has no cuda backend", devs[i]);
            st = SC_ERR_ARG;
        }
        if (!st)
            local[devs[i]] = i;
    }
    ncclUniqueId u;
    if (!st && id)
        memcpy(u.internal, id, SC_NCCL_ID_BYTES);
    else if (!st)
        st = sc_cuda_nccl_id((unsigned char *)u.internal, err, errlen);
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < n && !st; i++) {
        ndev *v = &d[i];
        const char *call = "cudaSetDevice";
        if ((e = sc_cuda_use(v->gpu)) != cudaSuccess ||
            (call = "cudaStreamCreateWithFlags",
             e = cudaStreamCreateWithFlags(&v->comm, cudaStreamNonBlocking)) != cudaSuccess ||
            (e = cudaStreamCreateWithFlags(&v->cstream, cudaStreamNonBlocking)) != cudaSuccess ||
            (call = "cudaEventCreateWithFlags",
             e = cudaEventCreateWithFlags(&v->mark, cudaEventDisableTiming)) != cudaSuccess) {
            snprintf(err, errlen, "nccl transport: d%d: %s: %s", v->dev, call,
                     cudaGetErrorString(e));
            st = SC_ERR_RUNTIME;
        }
    }
    if (!st) {
        /* All local communicators in one group (the one-thread, many-GPU
         * pattern); non-blocking, so the group returns at once and settle
         * polls, bounded by the timeout. */
        ncclResult_t r = N->GroupStart();
        for (int i = 0; i < n && (r == ncclSuccess || r == ncclInProgress); i++) {
            ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
            cfg.blocking = 0;
            if ((e = sc_cuda_use(d[i].gpu)) != cudaSuccess)
                break;
            r = N->CommInitRankConfig(&d[i].nc, P, u, d[i].dev, &cfg);
        }
        ncclResult_t r2 = N->GroupEnd();
        if (r == ncclSuccess || r == ncclInProgress)
            r = r2;
        if (e != cudaSuccess) {
            snprintf(err, errlen, "nccl transport: cudaSetDevice: %s", cudaGetErrorString(e));
            st = SC_ERR_RUNTIME;
        } else if (r != ncclSuccess && r != ncclInProgress) {
            snprintf(err, errlen, "nccl transport: ncclCommInitRankConfig of %d ranks: %s", P,
                     nccl_why(r, NULL));
            st = SC_ERR_RUNTIME;
        } else if ((st = settle(c, "creating the communicator")) != SC_OK) {
            snprintf(err, errlen, "%s", c->err);
        }
    }
    if (!st) {
        /* The collectives' communicator: a split of the first with the same
         * ranks, every local one in one group. */
        ncclResult_t r = N->GroupStart();
        for (int i = 0; i < n && (r == ncclSuccess || r == ncclInProgress); i++) {
            ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
            cfg.blocking = 0;
            if ((e = sc_cuda_use(d[i].gpu)) != cudaSuccess)
                break;
            r = N->CommSplit(d[i].nc, 0, d[i].dev, &d[i].cc, &cfg);
        }
        ncclResult_t r2 = N->GroupEnd();
        if (r == ncclSuccess || r == ncclInProgress)
            r = r2;
        if (e != cudaSuccess) {
            snprintf(err, errlen, "nccl transport: cudaSetDevice: %s", cudaGetErrorString(e));
            st = SC_ERR_RUNTIME;
        } else if (r != ncclSuccess && r != ncclInProgress) {
            snprintf(err, errlen, "nccl transport: ncclCommSplit of %d ranks: %s", P,
                     nccl_why(r, NULL));
            st = SC_ERR_RUNTIME;
        } else if ((st = settle(c, "creating the collectives' communicator")) != SC_OK) {
            snprintf(err, errlen, "%s", c->err);
        }
    }
    if (st) {
        c->aborted = 1; /* no finalize: abort whatever was created */
        sc_cuda_nccl_free(tp);
        return st;
    }
    *out = tp;
    return SC_OK;
}
