/*
 * test_coll_run.c — collectives in the runtime (docs/semantics.md#collectives): the local
 * transport's all-reduce and broadcast, and the executor's collective
 * channel with a small workload (test double: a few floats per pass),
 * on threads; started by mpirun (tests/runtime.sh runs it with 3 ranks),
 * the same through the mpi transport, one device per rank, and the mpi
 * transport over a split of the world (sc_transport_mpi_split_new).
 */
#include "compile.h"
#include "device/device.h"
#include "exec/exec.h"
#include "harness.h"
#include "mpi_main.h"
#include "transport/transport.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define N 5

/* ---- the local transport alone ---- */

typedef struct tdev {
    sc_transport *tp;
    int d, P;
    float sum[N];
    double mx[N];
    float b[N];
    sc_status st;
} tdev;

static sc_status one(tdev *t, sc_cxfer x)
{
    void *h;
    sc_status st = t->tp->ops->coll_start(t->tp->ctx, t->d, &x, &h);
    if (!st)
        st = t->tp->ops->coll_wait(t->tp->ctx, t->d, h);
    t->tp->ops->coll_release(t->tp->ctx, t->d, h);
    return st;
}

static void *tdev_run(void *p)
{
    tdev *t = p;
    for (int i = 0; i < N; i++) {
        t->sum[i] = 0.1f * (float)(t->d + 1) + (float)i * 1e-3f;
        t->mx[i] = (double)((t->d * 7 + i * 3) % 5);
        t->b[i] = (float)(100 * t->d + i);
    }
    t->st = one(t, (sc_cxfer){SC_OP_ALLREDUCE, SC_RED_SUM, 0, SC_DT_F32, t->sum, N});
    if (!t->st)
        t->st = one(t, (sc_cxfer){SC_OP_ALLREDUCE, SC_RED_MAX, 0, SC_DT_F64, t->mx, N});
    if (!t->st)
        t->st = one(t, (sc_cxfer){SC_OP_BCAST, 0, 2, SC_DT_F32, t->b, N});
    return NULL;
}

TEST(local_collectives)
{
    enum { P = 4 };
    sc_transport *tp;
    CHECK(sc_transport_local_new(P, 4, 30, &tp) == SC_OK);
    tdev t[P];
    pthread_t th[P];
    for (int d = 0; d < P; d++) {
        t[d] = (tdev){.tp = tp, .d = d, .P = P};
        pthread_create(&th[d], NULL, tdev_run, &t[d]);
    }
    for (int d = 0; d < P; d++)
        pthread_join(th[d], NULL);
    for (int i = 0; i < N; i++) {
        /* The sum in device order 0..P-1, in float: the transport's order. */
        float want = t[0].sum[i] * 0; /* (overwritten: recompute the inputs) */
        want = 0.1f * 1 + (float)i * 1e-3f;
        for (int d = 1; d < P; d++)
            want = want + (0.1f * (float)(d + 1) + (float)i * 1e-3f);
        double mx = 0;
        for (int d = 0; d < P; d++)
            mx = (double)((d * 7 + i * 3) % 5) > mx ? (double)((d * 7 + i * 3) % 5) : mx;
        for (int d = 0; d < P; d++) {
            CHECK(t[d].st == SC_OK);
            CHECK(memcmp(&t[d].sum[i], &want, sizeof want) == 0);
            CHECK(t[d].mx[i] == mx);
            CHECK(t[d].b[i] == (float)(200 + i));
        }
    }
    sc_transport_local_free(tp);
}

/* ---- the executor's channel with a small workload ---- */

/* Each device holds two buffers: part 0 sums 1 + d, part 1 is filled when
 * it starts from part 0's result (sum x (d + 1)) and reduced with max: the
 * executor must start part 1 only after part 0 completed here. OPTIM
 * checks both. */
typedef struct toy {
    int d, P;
    float buf[2][N];
    int done, ok;
    char err[96];
} toy;

static size_t t_boundary(void *ctx, int s, int mb)
{
    (void)ctx;
    (void)s;
    (void)mb;
    return N * sizeof(float);
}

static void t_record(void *ctx, int s, int mb, size_t *kept, size_t *b_only)
{
    (void)ctx;
    (void)s;
    (void)mb;
    *kept = N * sizeof(float);
    *b_only = 0;
}

static sc_status t_forward(void *ctx, int s, int mb, const void *in, void *out, void *kept,
                           void *b_only)
{
    (void)ctx, (void)s, (void)mb, (void)b_only;
    memset(kept, 0, N * sizeof(float));
    if (out)
        memcpy(out, in ? in : kept, N * sizeof(float));
    return SC_OK;
}

static sc_status t_backward(void *ctx, int s, int mb, const void *gin, void *gout, void *kept,
                            void *b_only)
{
    (void)ctx, (void)s, (void)mb, (void)kept, (void)b_only;
    if (gout)
        memcpy(gout, gin ? gin : kept, N * sizeof(float));
    return SC_OK;
}

static sc_status t_weight(void *ctx, int s, int mb, void *kept)
{
    (void)ctx, (void)s, (void)mb, (void)kept;
    return SC_OK;
}

static sc_status t_coll_buffer(void *ctx, const sc_coll *c, sc_cxfer *x)
{
    toy *t = ctx;
    if (c->what != SC_OP_REDUCE || c->part > 1)
        return SC_ERR_ARG;
    for (int i = 0; i < N; i++)
        t->buf[c->part][i] = c->part == 0 ? (float)(t->d + 1) : t->buf[0][i] * (float)(t->d + 1);
    x->dtype = SC_DT_F32;
    x->buf = t->buf[c->part];
    x->count = N;
    return SC_OK;
}

static sc_status t_coll_done(void *ctx, const sc_coll *c)
{
    toy *t = ctx;
    (void)c;
    t->done++;
    return SC_OK;
}

static sc_status t_optim(void *ctx)
{
    toy *t = ctx;
    float sum = (float)(t->P * (t->P + 1) / 2);
    t->ok = t->done == 2;
    for (int i = 0; i < N; i++)
        t->ok = t->ok && t->buf[0][i] == sum && t->buf[1][i] == sum * (float)t->P;
    return SC_OK;
}

static const char *t_errmsg(void *ctx) { return ((toy *)ctx)->err; }

static const struct sc_workload_ops toy_ops = {
    .boundary_bytes = t_boundary, .record_bytes = t_record, .forward = t_forward,
    .backward_input = t_backward, .backward_weight = t_weight, .coll_buffer = t_coll_buffer,
    .coll_done = t_coll_done, .optim = t_optim, .errmsg = t_errmsg,
};

static sc_instr I(int op, int dir, int s, int mb, int peer)
{
    return (sc_instr){.op = (uint8_t)op, .dir = (uint8_t)dir, .stage = s, .mb = mb, .peer = peer};
}

/* One microbatch through p devices and the two end-of-step collectives. */
static sc_prog *program(int p)
{
    sc_prog *pg = sc_prog_new(p, p, 1);
    for (int d = 0; d < p; d++) {
        if (d > 0)
            sc_prog_push_stream(pg, d, I(SC_OP_RECV, SC_DIR_ACT, d, 0, d - 1));
        sc_prog_push_stream(pg, d, I(SC_OP_F, 0, d, 0, -1));
        if (d + 1 < p) {
            sc_prog_push_stream(pg, d, I(SC_OP_SEND, SC_DIR_ACT, d + 1, 0, d + 1));
            sc_prog_push_stream(pg, d, I(SC_OP_RECV, SC_DIR_GRAD, d, 0, d + 1));
        }
        sc_prog_push_stream(pg, d, I(SC_OP_BW, 0, d, 0, -1));
        if (d > 0)
            sc_prog_push_stream(pg, d, I(SC_OP_SEND, SC_DIR_GRAD, d - 1, 0, d - 1));
        sc_prog_push_stream(pg, d, I(SC_OP_REDUCE, 0, -1, -1, -1));
        for (int part = 0; part < 2; part++) {
            sc_coll c = {.op = SC_OP_ALLREDUCE, .red = part ? SC_RED_MAX : SC_RED_SUM,
                         .what = SC_OP_REDUCE, .part = part, .stage = -1, .mb = -1, .root = -1,
                         .bytes = N * sizeof(float)};
            sc_prog_push_coll(pg, d, &c);
        }
        sc_prog_push_stream(pg, d, I(SC_OP_OPTIM, 0, -1, -1, -1));
    }
    return pg;
}

typedef struct edev {
    const sc_prog *pg;
    int d;
    sc_backend *be;
    sc_transport *tp;
    sc_workload wl;
    toy t;
    double t0[32], t1[32];
    sc_exec_out out;
    sc_status st;
} edev;

static void *edev_run(void *p)
{
    edev *e = p;
    e->st = sc_exec_device(e->pg, e->d, e->be, e->tp, &e->wl, sc_exec_now(), &e->out);
    return NULL;
}

static void setup(edev *e, const sc_prog *pg, int d, int P, sc_transport *tp)
{
    char err[128];
    *e = (edev){.pg = pg, .d = d, .tp = tp};
    e->t = (toy){.d = d, .P = P};
    e->wl = (sc_workload){&toy_ops, &e->t};
    e->out.t0 = e->t0;
    e->out.t1 = e->t1;
    e->out.timeout_s = 30;
    CHECK(sc_backend_open("cpu", d, 0, &e->be, err, sizeof err) == SC_OK);
}

TEST(executor_channel_threads)
{
    enum { P = 3 };
    sc_prog *pg = program(P);
    CHECK(sc_check(pg) == SC_OK);
    sc_transport *tp;
    CHECK(sc_transport_local_new(P, 2 * P, 30, &tp) == SC_OK);
    edev *e = calloc(P, sizeof *e);
    pthread_t th[P];
    for (int d = 0; d < P; d++) {
        setup(&e[d], pg, d, P, tp);
        pthread_create(&th[d], NULL, edev_run, &e[d]);
    }
    for (int d = 0; d < P; d++)
        pthread_join(th[d], NULL);
    for (int d = 0; d < P; d++) {
        CHECK(e[d].st == SC_OK);
        if (e[d].st)
            fprintf(stderr, "  d%d: %s\n", d, e[d].out.err);
        CHECK(e[d].t.ok);
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        /* The collectives' measured ends come in order, OPTIM after them. */
        CHECK(e[d].t1[n - 3] <= e[d].t1[n - 2] && e[d].t1[n - 2] <= e[d].t0[n - 1]);
        CHECK(v[n - 2].op == SC_OP_ALLREDUCE);
        sc_backend_free(e[d].be);
    }
    free(e);
    sc_transport_local_free(tp);
    sc_prog_free(pg);
}

/* A transport without collectives is refused at the start, in one line. */
TEST(transport_without_collectives)
{
    sc_prog *pg = program(2);
    CHECK(sc_check(pg) == SC_OK);
    sc_transport *tp;
    CHECK(sc_transport_local_new(2, 4, 30, &tp) == SC_OK);
    struct sc_transport_ops ops = *tp->ops;
    ops.coll_start = NULL;
    const struct sc_transport_ops *keep = tp->ops;
    tp->ops = &ops;
    edev e;
    setup(&e, pg, 0, 2, tp);
    ops.abort = NULL; /* nothing to wake */
    CHECK(sc_exec_device(pg, 0, e.be, tp, &e.wl, sc_exec_now(), &e.out) == SC_ERR_ARG);
    CHECK_STR(e.out.err, "d0: the stream has collectives, but the local transport has none");
    tp->ops = keep;
    sc_backend_free(e.be);
    sc_transport_local_free(tp);
    sc_prog_free(pg);
}

/* sc_transport_mpi_split_new (expert parallelism's pipelines and groups):
 * the ranks of this rank's parity in reverse order (key -rank), so device
 * 0 of a group is its highest world rank: a SUM over them, and a message
 * from the group's device 0 to its device 1 (devices numbered by key). */
static void mpi_split(int rank, int size)
{
    char err[256];
    sc_transport *tp = NULL;
    CHECK(sc_transport_mpi_split_new(rank % 2, -rank, 4, 30, &tp, err, sizeof err) == SC_OK);
    if (!tp)
        return;
    int n = 0, me = -1, first = -1;
    double v = rank + 1, want = 0;
    for (int r = size - 1; r >= 0; r--)
        if (r % 2 == rank % 2) {
            me = r == rank ? n : me;
            first = n++ == 0 ? r : first;
            want += r + 1;
        }
    sc_cxfer x = {.op = SC_OP_ALLREDUCE, .red = SC_RED_SUM, .dtype = SC_DT_F64, .buf = &v,
                  .count = 1};
    void *h = NULL;
    CHECK(tp->ops->coll_start(tp->ctx, me, &x, &h) == SC_OK);
    CHECK(tp->ops->coll_wait(tp->ctx, me, h) == SC_OK);
    tp->ops->coll_release(tp->ctx, me, h);
    CHECK(v == want);
    if (n >= 2 && me < 2) {
        int msg = me == 0 ? rank : -1;
        sc_xfer t = {.send = me == 0, .peer = 1 - me, .tag = 1, .buf = &msg, .bytes = sizeof msg};
        void *g = NULL;
        CHECK(tp->ops->start(tp->ctx, me, &t, 1, &g) == SC_OK);
        CHECK(tp->ops->wait(tp->ctx, me, g) == SC_OK);
        tp->ops->release(tp->ctx, me, g);
        CHECK(msg == first);
    }
    sc_transport_mpi_free(tp);
}

/* Under mpirun: this rank's device through the mpi transport. */
static void ranks(int rank, int size)
{
    char err[256];
    sc_prog *pg = program(size);
    CHECK(sc_check(pg) == SC_OK);
    sc_transport *tp = NULL;
    CHECK(sc_transport_mpi_new(2 * size, 30, &tp, err, sizeof err) == SC_OK);
    edev e;
    setup(&e, pg, rank, size, tp);
    CHECK(sc_mpi_barrier(30, err, sizeof err) == SC_OK);
    CHECK(sc_exec_device(pg, rank, e.be, tp, &e.wl, sc_exec_now(), &e.out) == SC_OK);
    CHECK(e.t.ok);
    mpi_split(rank, size); /* the same transport over a split of the world */
    sc_backend_free(e.be);
    sc_transport_mpi_free(tp);
    sc_prog_free(pg);
}

int main(void)
{
    if (sc_mpi_launched())
        return mpi_main(ranks, "coll_run (mpi)");
    RUN(local_collectives);
    RUN(executor_channel_threads);
    RUN(transport_without_collectives);
    return harness_done("coll_run");
}
