/*
 * transport_mpi.c — the MPI transport (transport.h): one process per
 * device, the device its rank in MPI_COMM_WORLD, or in a communicator split
 * from it (sc_transport_mpi_split_new: expert parallelism's pipelines and
 * EP groups, docs/semantics.md#expert-parallelism). The helpers of sc_mpi.h
 * are mpi_world.c's.
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
 *
 * STAGECRAFT_A2A_LATENCY_US=N (docs/run.md#expert-parallelism) holds an
 * all-to-all's completion back until N µs after its last member arrived,
 * as the local transport does; here each rank measures from the moment
 * its own post saw every member's row counts come (the counts' exchange
 * completes on a rank only once every member has posted), on its own
 * clock: the members' moments differ by the counts' message latency.
 */
#include "backoff.h"
#include "coll_host.h"
#include "mpi_api.h"
#include "mpi_bell.h"
#include "mpi_mod.h"
#include "transport.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    MPI_Comm comm;     /* the devices: MPI_COMM_WORLD or a split of it */
    MPI_Comm coll;     /* a duplicate of comm for collectives (their own channel) */
    int size;          /* comm's ranks */
    int *world;        /* [size] each device's rank in the world (its doorbell) */
    sc_bell *bell;     /* the ranks' doorbells, or NULL (mpi_bell.h) */
    double a2a_delay;  /* STAGECRAFT_A2A_LATENCY_US, in seconds */
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
    double t_all;      /* when the counts had come: every member had arrived */
    unsigned long long *rows;
    int *cnt;
    void *a2abuf, *sink;
    MPI_Request req[];
} mgroup;

/* The longest sleep of a wait between two polls when the ranks have
 * doorbells: a ring ends it sooner. Messages whose progress needs a poll of
 * this rank without a ring (the fragments of a large one) wait this long. */
#define BELL_SLEEP_NS SC_BACKOFF_SLEEP_NS

/* One set of doorbells per process, shared by its transports (opened by
 * the first, closed with the last): a ring for any of them wakes every wait
 * of the process, which polls them all (the executor's idle, an EP group's
 * all-to-all while the pipeline waits). */
static sc_bell *bells;
static int bell_users;

/* Rings device r of c's communicator (its world rank's bell). */
static void ring(mctx *c, int r)
{
    if (c->bell && r >= 0 && r < c->size)
        sc_bell_ring(c->bell, c->world[r]);
}

/* Rings every device of c's communicator (a collective posted or done). */
static void ring_members(mctx *c)
{
    for (int r = 0; c->bell && r < c->size; r++)
        ring(c, r);
}

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
                                     c->comm, &g->req[i])
                         : MPI_Irecv(t->buf, (int)t->bytes, MPI_BYTE, t->peer, t->tag,
                                     c->comm, &g->req[i]);
        if (rc != MPI_SUCCESS) {
            snprintf(c->err, sizeof c->err, "mpi transport: d%d: posting a transfer with d%d "
                     "failed (MPI error %d)", dev, t->peer, rc);
            return SC_ERR_RUNTIME;
        }
        g->peer[g->n++] = t->peer;
        ring(c, t->peer); /* a transfer towards it: worth a poll */
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
        ring_members(c);
    for (int i = 0; g->peer && i < g->n; i++)
        ring(c, g->peer[i]);
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
                ring(c, g->peer[i]);
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
    ring_members(c); /* a collective posted: every member may move */
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
    ring_members(c);
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
    g->rung = 0; /* the rows posted: the members may move; and again once they are done */
    ring_members(c);
    return SC_OK;
}

/* A collective's test: once a SUM's gather has completed, its ranks'
 * buffers are added in rank order into the rank's own buffer (once); an
 * all-to-all's counts post its rows. */
static sc_status coll_test(void *ctx, int dev, void *h, int *done)
{
    mgroup *g = h;
    sc_status st = mpi_test(ctx, dev, h, done);
    if (!st && *done && g->a2a && g->phase == 1) {
        *done = 0;
        g->t_all = now();
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

/* The executor's test: an all-to-all done is held back by the injected
 * latency too. */
static sc_status mpi_coll_test(void *ctx, int dev, void *h, int *done)
{
    const mctx *c = ctx;
    const mgroup *g = h;
    sc_status st = coll_test(ctx, dev, h, done);
    if (!st && *done && g->a2a && now() < g->t_all + c->a2a_delay)
        *done = 0;
    return st;
}

static sc_status mpi_coll_wait(void *ctx, int dev, void *h)
{
    const mctx *c = ctx;
    const mgroup *g = h;
    sc_status st = poll_wait(ctx, dev, h, coll_test, "collective");
    double until = !st && g->a2a ? g->t_all + c->a2a_delay : 0;
    for (double left; (left = until - now()) > 0;) { /* the injected latency */
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
    return st;
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

/* The communicator of the devices: the world, or (color >= 0) the ranks
 * of the world with this color, ordered by key; each device's world rank. */
static sc_status split(mctx *c, int color, int key, char *err, size_t errlen)
{
    c->comm = MPI_COMM_WORLD;
    if (color >= 0) { /* MPI_Comm_split waits for every rank and has no polled form */
        sc_mpimod_guard_begin("to split the ranks (MPI_Comm_split)");
        int rc = MPI_Comm_split(MPI_COMM_WORLD, color, key, &c->comm);
        sc_mpimod_guard_end();
        if (rc != MPI_SUCCESS) {
            c->comm = MPI_COMM_NULL;
            snprintf(err, errlen, "mpi transport: MPI_Comm_split failed");
            return SC_ERR_RUNTIME;
        }
    }
    MPI_Comm_size(c->comm, &c->size);
    MPI_Group g, w;
    if (!(c->world = malloc(2 * (size_t)c->size * sizeof(int)))) {
        snprintf(err, errlen, "out of memory creating the mpi transport");
        return SC_ERR_NOMEM;
    }
    int *mine = c->world + c->size; /* 0..size-1, translated into world[] */
    for (int r = 0; r < c->size; r++)
        mine[r] = r;
    MPI_Comm_group(c->comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &w);
    MPI_Group_translate_ranks(g, c->size, mine, w, c->world);
    MPI_Group_free(&g);
    MPI_Group_free(&w);
    return SC_OK;
}

static void ctx_free(mctx *c)
{
    if (c->comm != MPI_COMM_WORLD && c->comm != MPI_COMM_NULL)
        MPI_Comm_free(&c->comm);
    free(c->world);
    free(c);
}

sc_status sc_mpimod_transport_new(int color, int key, int max_tag, double timeout_s,
                                  sc_transport **out, char *err, size_t errlen)
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
    const char *lat = getenv("STAGECRAFT_A2A_LATENCY_US"); /* docs/run.md#expert-parallelism */
    c->a2a_delay = lat && atof(lat) > 0 ? atof(lat) * 1e-6 : 0;
    c->coll = MPI_COMM_NULL;
    /* MPI_Comm_dup waits for every rank: the non-blocking form, polled, so
     * that a rank stopped before it cannot hang the others. */
    MPI_Request req;
    sc_status st = split(c, color, key, err, errlen);
    if (!st && MPI_Comm_idup(c->comm, &c->coll, &req) != MPI_SUCCESS) {
        snprintf(err, errlen, "mpi transport: MPI_Comm_idup failed");
        st = SC_ERR_RUNTIME;
    } else if (!st)
        st = sc_mpimod_poll_one(&req, timeout_s, "the transport's start (MPI_Comm_idup)", err,
                                errlen);
    if (!st && bell_users == 0) /* over the world: every rank's first transport */
        bells = sc_bell_open(sc_mpimod_poll_one, timeout_s, &st, err, errlen);
    if (st) {
        free(tp);
        ctx_free(c);
        return st;
    }
    bell_users++;
    c->bell = bells;
    tp->ops = &mpi_ops;
    tp->ctx = c;
    *out = tp;
    return SC_OK;
}

void sc_mpimod_transport_free(sc_transport *tp)
{
    if (!tp)
        return;
    mctx *c = tp->ctx;
    if (--bell_users == 0) {
        sc_bell_close(bells);
        bells = NULL;
    }
    MPI_Comm_free(&c->coll);
    ctx_free(c);
    free(tp);
}
