/*
 * transport_mpi.c — the MPI transport (transport.h) and the helpers of
 * sc_mpi.h: one process per device, MPI_COMM_WORLD rank = device.
 *
 * Built into its own module, libstagecraft_mpi.so, which alone links MPI;
 * its one exported symbol is the table of mpi_api.h, through which
 * mpi_load.c reaches these functions (loading the module under mpirun
 * only). Hidden visibility: nothing else of it can clash.
 *
 * A group is one array of MPI_Isend/MPI_Irecv requests, posted when the
 * group starts and completed together (MPI_Testall), the MPI counterpart of
 * ncclGroupStart/End. Waiting polls MPI_Testall, spins a while, then
 * sleeps until a peer rings this rank's doorbell (mpi_bell.h, when every
 * rank is on this node: a transfer posted towards it, a group or
 * collective of the peer's completed) or a short time passes (backoff.h's
 * sleep where there are no bells), so that ranks oversubscribing the cores
 * (mpirun --oversubscribe) leave them to the ranks that compute, a rank
 * wakes as soon as its message is there, and a wait can give up after the
 * timeout (the watchdog for a peer that vanished without the job being
 * aborted by mpirun).
 *
 * An all-reduce SUM gathers every rank's buffer (MPI_Iallgather) and adds
 * them in rank order on each rank (coll_host.h, the local transport's own
 * arithmetic), so that a run on MPI ranks gives the bits of the same run on
 * threads by construction: MPI_Iallreduce adds in an order of its own
 * choosing (recursive doubling, rings), which differs from device order.
 * MAX and broadcasts are exact in any order: MPI's own.
 */
#include "backoff.h"
#include "coll_host.h"
#include "mpi_api.h"
#include "mpi_bell.h"
#include "transport.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

/* Seconds on the monotonic clock (the deadlines of waits). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct mctx {
    int max_tag;
    double timeout_s;
    MPI_Comm coll;     /* a duplicate of the world for collectives (their own channel) */
    sc_bell *bell;     /* the ranks' doorbells, or NULL (mpi_bell.h) */
    char err[256];
} mctx;

typedef struct mgroup {
    int n;
    /* A collective's all-reduce SUM: its buffer, and in one allocation a
     * pointer per rank, then every rank's copy of it, rank after rank,
     * added in rank order once the gather completes. */
    sc_cxfer sum;
    void **gather;
    int ranks;
    int rung;          /* its completion has been rung to its peers */
    int *peer;         /* [n] each transfer's peer (after req); NULL: a collective's, all */
    /* An all-to-all (mpi_a2a_start): its part; phase 1 exchanges the row
     * counts (rows: [2 ranks], out then in), phase 2 the rows (cnt: [4
     * ranks] byte counts and offsets out, then in); sink takes the rows of
     * a rank without room for them (overflow). One allocation: a2abuf. */
    sc_a2a_part *a2a;
    int phase;
    unsigned long long *rows;
    int *cnt;
    void *a2abuf, *sink;
    MPI_Request req[];
} mgroup;

/* The longest sleep of a wait between two polls when the ranks have
 * doorbells: a ring ends it sooner. Messages whose progress needs a poll of
 * this rank without a ring (the fragments of a large one) wait this long. */
#define BELL_SLEEP_NS SC_BACKOFF_SLEEP_NS

static int started;
static double started_timeout; /* sc_mpi_init's timeout_s: the guard of later blocking calls */

static sc_status poll_one(MPI_Request *req, double timeout_s, const char *what, char *err,
                          size_t errlen);

static sc_status mpi_start(void *ctx, int dev, const sc_xfer *x, int n, void **group)
{
    mctx *c = ctx;
    size_t k = (size_t)(n > 0 ? n : 1);
    mgroup *g = calloc(1, sizeof *g + k * sizeof(MPI_Request) + k * sizeof(int));
    *group = g;
    if (!g)
        return SC_ERR_NOMEM;
    g->peer = (int *)(void *)(g->req + k);
    for (int i = 0; i < n; i++) {
        const sc_xfer *t = &x[i];
        if (t->tag < 0 || t->tag >= c->max_tag || t->bytes > INT_MAX) {
            snprintf(c->err, sizeof c->err, "mpi transport: d%d: transfer tag %d or size %zu "
                     "out of range", dev, t->tag, t->bytes);
            return SC_ERR_LIMIT;
        }
        int rc = t->send ? MPI_Isend(t->buf, (int)t->bytes, MPI_BYTE, t->peer, t->tag,
                                     MPI_COMM_WORLD, &g->req[i])
                         : MPI_Irecv(t->buf, (int)t->bytes, MPI_BYTE, t->peer, t->tag,
                                     MPI_COMM_WORLD, &g->req[i]);
        if (rc != MPI_SUCCESS) {
            snprintf(c->err, sizeof c->err, "mpi transport: d%d: posting a transfer with d%d "
                     "failed (MPI error %d)", dev, t->peer, rc);
            return SC_ERR_RUNTIME;
        }
        g->peer[g->n++] = t->peer;
        sc_bell_ring(c->bell, t->peer); /* a transfer towards it: worth a poll */
    }
    return SC_OK;
}

/* A group's completion, rung once to its peers (a send whose peer waits
 * for the end of a rendezvous, a collective's members). */
static void ring_done(mctx *c, mgroup *g)
{
    if (g->rung || !c->bell)
        return;
    g->rung = 1;
    if (!g->peer)
        sc_bell_ring_all(c->bell);
    for (int i = 0; g->peer && i < g->n; i++)
        sc_bell_ring(c->bell, g->peer[i]);
}

static sc_status mpi_test(void *ctx, int dev, void *group, int *done)
{
    mctx *c = ctx;
    mgroup *g = group;
    int rc = MPI_Testall(g->n, g->req, done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
        snprintf(c->err, sizeof c->err, "mpi transport: d%d: a transfer failed (MPI error %d)",
                 dev, rc);
        return SC_ERR_RUNTIME;
    }
    if (*done)
        ring_done(c, g);
    return SC_OK;
}

/* Polls test until the group has completed or the timeout passes. */
static sc_status poll_wait(void *ctx, int dev, void *group,
                           sc_status (*test)(void *, int, void *, int *), const char *what)
{
    mctx *c = ctx;
    mgroup *g = group;
    double deadline = now() + c->timeout_s;
    int slept = 0;
    for (sc_backoff b = {0};;) {
        unsigned tok = c->bell ? sc_bell_token(c->bell) : 0;
        int done = 0;
        sc_status st = test(ctx, dev, group, &done);
        if (st || done)
            return st;
        if (c->timeout_s > 0 && now() > deadline) {
            snprintf(c->err, sizeof c->err, "mpi transport: d%d waited %g s for a %s; a peer is "
                     "gone or stuck: giving up", dev, c->timeout_s, what);
            return SC_ERR_RUNTIME;
        }
        if (!c->bell || b.polls < SC_BACKOFF_SPINS) {
            sc_backoff_wait(&b);
            continue;
        }
        /* Still not done after a sleep: the peers may be asleep too, each
         * waiting for the other's poll to move a large message on. */
        if (slept)
            for (int i = 0; g->peer && i < g->n; i++)
                sc_bell_ring(c->bell, g->peer[i]);
        sc_bell_sleep(c->bell, tok, BELL_SLEEP_NS);
        slept = 1;
        /* Rung: what the ring announced may take a few polls to arrive
         * (a message still on its way, a ring for another group): spin
         * again before the next sleep. */
        if (sc_bell_token(c->bell) != tok)
            sc_backoff_reset(&b);
    }
}

static sc_status mpi_wait(void *ctx, int dev, void *group)
{
    return poll_wait(ctx, dev, group, mpi_test, "transfer group");
}

static void mpi_release(void *ctx, int dev, void *group)
{
    (void)ctx;
    (void)dev;
    if (group) {
        free(((mgroup *)group)->gather);
        free(((mgroup *)group)->a2abuf);
        free(((mgroup *)group)->sink);
    }
    free(group);
}

static const char *mpi_errmsg(void *ctx)
{
    return ((mctx *)ctx)->err;
}

/* Collectives on the duplicated communicator, one request each, polled
 * like the groups: MPI_Ibcast, MPI_Iallreduce for MAX, MPI_Iallgather for
 * SUM (added in rank order when it completes: mpi_coll_test). */
static sc_status mpi_coll_start(void *ctx, int dev, const sc_cxfer *x, void **h)
{
    mctx *c = ctx;
    mgroup *g = calloc(1, sizeof *g + sizeof(MPI_Request));
    *h = g;
    if (!g)
        return SC_ERR_NOMEM;
    sc_bell_ring_all(c->bell); /* a collective posted: every member may move */
    if (x->count > INT_MAX) {
        snprintf(c->err, sizeof c->err, "mpi transport: d%d: a collective of %zu elements is too "
                 "large", dev, x->count);
        return SC_ERR_LIMIT;
    }
    MPI_Datatype t = x->dtype == SC_DT_F64 ? MPI_DOUBLE : MPI_FLOAT;
    int rc;
    if (sc_cxfer_bcast(x->op)) {
        rc = MPI_Ibcast(x->buf, (int)x->count, t, x->root, c->coll, &g->req[0]);
    } else if (x->red == SC_RED_MAX) {
        rc = MPI_Iallreduce(MPI_IN_PLACE, x->buf, (int)x->count, t, MPI_MAX, c->coll, &g->req[0]);
    } else {
        MPI_Comm_size(c->coll, &g->ranks);
        g->sum = *x;
        size_t bytes = x->count * sc_coll_dtype_size(x->dtype);
        g->gather = malloc((size_t)g->ranks * (sizeof(void *) + bytes));
        if (!g->gather) {
            snprintf(c->err, sizeof c->err, "mpi transport: d%d: out of memory gathering an "
                     "all-reduce of %zu elements from %d ranks", dev, x->count, g->ranks);
            return SC_ERR_NOMEM;
        }
        char *rows = (char *)(g->gather + g->ranks);
        for (int d = 0; d < g->ranks; d++)
            g->gather[d] = rows + (size_t)d * bytes;
        rc = MPI_Iallgather(x->buf, (int)x->count, t, rows, (int)x->count, t, c->coll,
                            &g->req[0]);
    }
    if (rc != MPI_SUCCESS) {
        snprintf(c->err, sizeof c->err, "mpi transport: d%d: posting a collective failed (MPI "
                 "error %d)", dev, rc);
        return SC_ERR_RUNTIME;
    }
    g->n = 1;
    return SC_OK;
}

/* An all-to-all (transport.h's sc_a2a_part): the row counts first
 * (MPI_Ialltoall), then the rows (MPI_Ialltoallv, posted by a2a_rows when
 * the counts have come). */
static sc_status mpi_a2a_start(void *ctx, int dev, sc_a2a_part *x, void **h)
{
    mctx *c = ctx;
    mgroup *g = calloc(1, sizeof *g + sizeof(MPI_Request));
    *h = g;
    if (!g)
        return SC_ERR_NOMEM;
    sc_bell_ring_all(c->bell);
    MPI_Comm_size(c->coll, &g->ranks);
    size_t R = (size_t)g->ranks;
    g->a2abuf = malloc(2 * R * sizeof *g->rows + 4 * R * sizeof *g->cnt);
    if (!g->a2abuf)
        return SC_ERR_NOMEM;
    g->rows = g->a2abuf;
    g->cnt = (int *)(g->rows + 2 * R);
    g->a2a = x;
    g->phase = 1;
    for (size_t e = 0; e < R; e++)
        g->rows[e] = x->nsend[e];
    g->n = 1;
    if (MPI_Ialltoall(g->rows, 1, MPI_UNSIGNED_LONG_LONG, g->rows + R, 1,
                      MPI_UNSIGNED_LONG_LONG, c->coll, &g->req[0]) != MPI_SUCCESS) {
        snprintf(c->err, sizeof c->err, "mpi transport: d%d: posting an all-to-all failed", dev);
        return SC_ERR_RUNTIME;
    }
    return SC_OK;
}

static sc_status a2a_rows(mctx *c, int dev, mgroup *g)
{
    sc_a2a_part *x = g->a2a;
    int R = g->ranks, *so = g->cnt + R, *rc = g->cnt + 2 * R, *ro = g->cnt + 3 * R;
    unsigned long long in = 0, out = 0;
    for (int e = 0; e < R; e++) {
        x->nrecv[e] = (size_t)g->rows[R + e];
        so[e] = (int)(out * x->row);
        ro[e] = (int)(in * x->row);
        out += g->rows[e];
        in += g->rows[R + e];
        g->cnt[e] = (int)(g->rows[e] * x->row);
        rc[e] = (int)(g->rows[R + e] * x->row);
    }
    if ((in + out) * x->row > INT_MAX) {
        snprintf(c->err, sizeof c->err, "mpi transport: d%d: an all-to-all of %llu rows is too "
                 "large", dev, in + out);
        return SC_ERR_LIMIT;
    }
    void *recv = x->recv;
    x->overflow = in > x->rcap;
    if (x->overflow && !(recv = g->sink = malloc(in * x->row + 1)))
        return SC_ERR_NOMEM;
    g->phase = 2;
    if (MPI_Ialltoallv(x->send, g->cnt, so, MPI_BYTE, recv, rc, ro, MPI_BYTE, c->coll,
                       &g->req[0]) != MPI_SUCCESS) {
        snprintf(c->err, sizeof c->err, "mpi transport: d%d: posting an all-to-all failed", dev);
        return SC_ERR_RUNTIME;
    }
    return SC_OK;
}

/* A collective's test: once a SUM's gather has completed, its ranks'
 * buffers are added in rank order into the rank's own buffer (once); an
 * all-to-all's counts post its rows. */
static sc_status mpi_coll_test(void *ctx, int dev, void *h, int *done)
{
    mgroup *g = h;
    sc_status st = mpi_test(ctx, dev, h, done);
    if (!st && *done && g->a2a && g->phase == 1) {
        *done = 0;
        return a2a_rows(ctx, dev, g);
    }
    if (st || !*done || !g->gather)
        return st;
    sc_coll_host_complete(&g->sum, g->gather, g->ranks);
    memcpy(g->sum.buf, g->gather[0], g->sum.count * sc_coll_dtype_size(g->sum.dtype));
    free(g->gather);
    g->gather = NULL;
    return SC_OK;
}

static sc_status mpi_coll_wait(void *ctx, int dev, void *h)
{
    return poll_wait(ctx, dev, h, mpi_coll_test, "collective");
}

/* The executor's own waits (polling both channels): the doorbell. */
static unsigned mpi_watch(void *ctx, int dev)
{
    mctx *c = ctx;
    (void)dev;
    return c->bell ? sc_bell_token(c->bell) : 0;
}

static int mpi_idle(void *ctx, int dev, unsigned token)
{
    mctx *c = ctx;
    (void)dev;
    if (!c->bell)
        return 0;
    sc_bell_sleep(c->bell, token, BELL_SLEEP_NS);
    return 1;
}

static const struct sc_transport_ops mpi_ops = {
    .name = "mpi",
    .start = mpi_start,
    .test = mpi_test,
    .wait = mpi_wait,
    .release = mpi_release,
    .abort = NULL, /* the run ends the whole job with MPI_Abort instead */
    .errmsg = mpi_errmsg,
    .coll_start = mpi_coll_start,
    .a2a_start = mpi_a2a_start,
    .coll_test = mpi_coll_test,
    .coll_wait = mpi_coll_wait,
    .coll_release = mpi_release,
    .watch = mpi_watch,
    .idle = mpi_idle,
};

static sc_status mod_transport_new(int max_tag, double timeout_s, sc_transport **out,
                                   char *err, size_t errlen)
{
    *out = NULL;
    void *ub;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    if (flag && max_tag - 1 > *(int *)ub) {
        snprintf(err, errlen, "mpi transport: %d tags needed (2 x stages x microbatches), this "
                 "MPI allows %d", max_tag, *(int *)ub);
        return SC_ERR_LIMIT;
    }
    sc_transport *tp = calloc(1, sizeof *tp);
    mctx *c = calloc(1, sizeof *c);
    if (!tp || !c) {
        free(tp);
        free(c);
        snprintf(err, errlen, "out of memory creating the mpi transport");
        return SC_ERR_NOMEM;
    }
    c->max_tag = max_tag;
    c->timeout_s = timeout_s;
    /* MPI_Comm_dup waits for every rank: the non-blocking form, polled, so
     * that a rank stopped before it cannot hang the others. */
    MPI_Request req;
    sc_status st = SC_OK;
    if (MPI_Comm_idup(MPI_COMM_WORLD, &c->coll, &req) != MPI_SUCCESS) {
        snprintf(err, errlen, "mpi transport: MPI_Comm_idup failed");
        st = SC_ERR_RUNTIME;
    } else
        st = poll_one(&req, timeout_s, "the transport's start (MPI_Comm_idup)", err, errlen);
    if (!st)
        c->bell = sc_bell_open(poll_one, timeout_s, &st, err, errlen);
    if (st) {
        free(tp);
        free(c);
        return st;
    }
    tp->ops = &mpi_ops;
    tp->ctx = c;
    *out = tp;
    return SC_OK;
}

static void mod_transport_free(sc_transport *tp)
{
    if (!tp)
        return;
    mctx *c = tp->ctx;
    sc_bell_close(c->bell);
    MPI_Comm_free(&c->coll);
    free(c);
    free(tp);
}

/* The guard of an MPI call that waits for every rank and cannot be polled
 * (MPI_Init, MPI_Comm_split_type, MPI_Finalize): a watchdog thread ends the
 * process (one line on stderr) unless guard_end comes first. After MPI_Init
 * it ends the job as every other give-up does, through MPI_Abort: mpirun
 * then kills every rank, a stopped one included. Ending only this process
 * (exit code 9) left that to mpirun's handling of a rank that exits inside
 * MPI_Finalize, which under load once waited on a stopped peer for good
 * (OpenMPI 4.1). MPI_Abort from this second thread is outside what MPI
 * promises in MPI_THREAD_SINGLE, so an alarm bounds it: if it has not
 * ended the process within ABORT_GRACE_S, SIGALRM does, and a rank ended
 * by a signal makes mpirun kill the job too. Before MPI_Init has returned
 * there is no job to abort: exit code 9. One guard at a time (the
 * runtime's main thread). */
#define ABORT_GRACE_S 5
static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv = PTHREAD_COND_INITIALIZER;
static int wd_done, wd_abort;
static double wd_timeout;
static const char *wd_what;
static pthread_t wd_thread;
static int wd_running;

static void *watchdog(void *arg)
{
    (void)arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    double whole = (double)(time_t)wd_timeout;
    until.tv_sec += (time_t)wd_timeout;
    until.tv_nsec += (long)((wd_timeout - whole) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&wd_mu);
    while (!wd_done && pthread_cond_timedwait(&wd_cv, &wd_mu, &until) != ETIMEDOUT)
        ;
    int done = wd_done;
    pthread_mutex_unlock(&wd_mu);
    if (!done) { /* the only way out of a blocked MPI call */
        char msg[240];
        int n = snprintf(msg, sizeof msg, "stagecraft: error: mpi: waited %g s for the other "
                         "ranks %s; a peer is gone or stuck: giving up\n", wd_timeout, wd_what);
        if (n > 0 && write(STDERR_FILENO, msg, (size_t)n) < 0)
            n = 0;
        if (wd_abort) {
            signal(SIGALRM, SIG_DFL);
            alarm(ABORT_GRACE_S);
            MPI_Abort(MPI_COMM_WORLD, 9);
        }
        _exit(9);
    }
    return NULL;
}

/* Starts the guard of a call (what: "to start (MPI_Init)"); no guard
 * without a timeout. */
static void guard_begin(double timeout_s, const char *what, int can_abort)
{
    wd_running = 0;
    if (!(timeout_s > 0))
        return;
    wd_timeout = timeout_s;
    wd_what = what;
    wd_done = 0;
    wd_abort = can_abort;
    wd_running = pthread_create(&wd_thread, NULL, watchdog, NULL) == 0;
}

static void guard_end(void)
{
    if (!wd_running)
        return;
    pthread_mutex_lock(&wd_mu);
    wd_done = 1;
    pthread_cond_signal(&wd_cv);
    pthread_mutex_unlock(&wd_mu);
    pthread_join(wd_thread, NULL);
    wd_running = 0;
}

static sc_status mod_init(int *rank, int *size, double timeout_s, char *err, size_t errlen)
{
    int init = 0;
    MPI_Initialized(&init);
    started_timeout = timeout_s;
    int rc = MPI_SUCCESS;
    if (!init) {
        guard_begin(timeout_s, "to start (MPI_Init)", 0);
        rc = MPI_Init(NULL, NULL);
        guard_end();
    }
    if (rc != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Init failed");
        return SC_ERR_RUNTIME;
    }
    started = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return SC_OK;
}

/* Waits for one request, polling, at most timeout_s. */
static sc_status poll_one(MPI_Request *req, double timeout_s, const char *what, char *err,
                          size_t errlen)
{
    double deadline = now() + timeout_s;
    for (sc_backoff b = {0};; sc_backoff_wait(&b)) {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            snprintf(err, errlen, "mpi: %s failed", what);
            return SC_ERR_RUNTIME;
        }
        if (done)
            return SC_OK;
        if (timeout_s > 0 && now() > deadline) {
            snprintf(err, errlen, "mpi: waited %g s in %s; a peer is gone or stuck: giving up",
                     timeout_s, what);
            return SC_ERR_RUNTIME;
        }
    }
}

static sc_status mod_max(double *v, int n, const char *what, double timeout_s, char *err,
                         size_t errlen)
{
    MPI_Request req;
    if (MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &req) !=
        MPI_SUCCESS) {
        snprintf(err, errlen, "mpi: allreduce failed");
        return SC_ERR_RUNTIME;
    }
    return poll_one(&req, timeout_s, what, err, errlen);
}

static sc_status mod_barrier(double timeout_s, char *err, size_t errlen)
{
    MPI_Request req;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &req) != MPI_SUCCESS) {
        snprintf(err, errlen, "mpi: barrier failed");
        return SC_ERR_RUNTIME;
    }
    return poll_one(&req, timeout_s, "the barrier before the step", err, errlen);
}

static sc_status mod_bcast(void *buf, int n, int root, double timeout_s, char *err, size_t errlen)
{
    MPI_Request req;
    if (MPI_Ibcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD, &req) != MPI_SUCCESS) {
        snprintf(err, errlen, "mpi: broadcast failed");
        return SC_ERR_RUNTIME;
    }
    return poll_one(&req, timeout_s, "a broadcast", err, errlen);
}

static sc_status mod_local(int *local_rank, int *local_size, char *err, size_t errlen)
{
    MPI_Comm node;
    guard_begin(started_timeout, "to find the ranks of each node (MPI_Comm_split_type)", 1);
    int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    guard_end();
    if (rc != MPI_SUCCESS) {
        snprintf(err, errlen, "mpi: cannot find the ranks of this node (MPI_Comm_split_type)");
        return SC_ERR_RUNTIME;
    }
    MPI_Comm_rank(node, local_rank);
    MPI_Comm_size(node, local_size);
    MPI_Comm_free(&node);
    return SC_OK;
}

static void mod_finish(int code)
{
    if (!started)
        return;
    started = 0;
    if (code)
        MPI_Abort(MPI_COMM_WORLD, code);
    /* MPI_Finalize waits for every rank (a fence): a rank stopped after the
     * step would hang the others, which have done their part. */
    guard_begin(started_timeout, "to finish (MPI_Finalize)", 1);
    MPI_Finalize();
    guard_end();
}

__attribute__((visibility("default"))) extern const struct sc_mpi_api sc_mpi_api_v1;

const struct sc_mpi_api sc_mpi_api_v1 = {
    .version = SC_MPI_API_VERSION,
    .size = sizeof(struct sc_mpi_api),
    .init = mod_init,
    .max = mod_max,
    .barrier = mod_barrier,
    .bcast = mod_bcast,
    .local = mod_local,
    .finish = mod_finish,
    .transport_new = mod_transport_new,
    .transport_free = mod_transport_free,
};
