/*
 * test_a2a_run.c — expert parallelism's all-to-alls in the runtime
 * (docs/semantics.md#expert-parallelism): the model's hook (model.h's
 * sc_ep_hook) driven by a test double, rows_double, that stands in for the
 * MoE layer until it lands: E threads of one EP group on the local
 * transport (and 3 ranks under mpirun on the mpi transport, tests/runtime.sh);
 * DISPATCH moves known rows to every rank, the "experts" double
 * them, COMBINE brings them back to their source in the order sent; a rank
 * with too little room fails in one line; the host completion
 * (coll_host.h) on its own.
 */
#include "harness.h"
#include "mpi_main.h"
#include "model/model.h"
#include "transport/coll_host.h"
#include "transport/transport.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define E 3
#define MAXR 64 /* rows a rank holds at most */

/* The test double: rank r's tokens are rows of two floats; it sends
 * r + e + 1 rows to rank e, row i holding (100 r + 10 e + i, -1) in
 * DISPATCH; the experts' "work" doubles what arrived; COMBINE sends each
 * source back its rows. */
typedef struct rows_double {
    int rank;
    size_t cap;               /* room it gives for rows in */
    float tok[MAXR][2];       /* DISPATCH's rows out */
    size_t ntok[E];
    float got[MAXR][2];       /* rows in */
    size_t ngot[E];
    float back[MAXR][2];      /* COMBINE's rows in: its own tokens, processed */
    size_t nback[E];
    int calls;
} rows_double;

static sc_status dbl_out(void *ctx, const sc_ep_call *c, const void **send, size_t *nsend,
                         void **recv, size_t *cap, char *err, size_t errlen)
{
    rows_double *t = ctx;
    (void)err, (void)errlen;
    if (c->op == SC_OP_DISPATCH) {
        size_t k = 0;
        for (int e = 0; e < c->ep; e++) {
            nsend[e] = t->ntok[e] = (size_t)(c->rank + e + 1);
            for (size_t i = 0; i < nsend[e]; i++, k++) {
                t->tok[k][0] = (float)(100 * c->rank + 10 * e + (int)i);
                t->tok[k][1] = -1;
            }
        }
        *send = t->tok;
        *recv = t->got;
    } else { /* COMBINE: the processed rows back to where they came from */
        size_t k = 0;
        for (int e = 0; e < c->ep; e++)
            for (size_t i = 0; i < (nsend[e] = t->ngot[e]); i++, k++)
                t->got[k][0] *= 2, t->got[k][1] *= 2;
        *send = t->got;
        *recv = t->back;
    }
    *cap = t->cap;
    t->calls++;
    return SC_OK;
}

static sc_status dbl_in(void *ctx, const sc_ep_call *c, const void *recv, const size_t *nrecv,
                        char *err, size_t errlen)
{
    rows_double *t = ctx;
    (void)recv, (void)err, (void)errlen;
    for (int e = 0; e < c->ep; e++)
        (c->op == SC_OP_DISPATCH ? t->ngot : t->nback)[e] = nrecv[e];
    t->calls++;
    return SC_OK;
}

typedef struct worker {
    rows_double d;
    sc_transport *tp;
    sc_status st[2];
    char err[256];
} worker;

static void *run(void *arg)
{
    worker *w = arg;
    sc_ep_hook h = {.ctx = &w->d, .row_bytes = 2 * sizeof(float), .out = dbl_out, .in = dbl_in};
    for (int k = 0; k < 2; k++) {
        sc_ep_call c = {k ? SC_OP_COMBINE : SC_OP_DISPATCH, SC_OP_F, 0, 5, w->d.rank, E};
        w->st[k] = sc_ep_exchange(&h, &c, w->tp, w->err, sizeof w->err);
        if (w->st[k]) { /* as the executor does: the others' waits fail */
            w->tp->ops->abort(w->tp->ctx, w->d.rank, w->err);
            break;
        }
    }
    return NULL;
}

static void exchange(worker *w, size_t cap_of_rank2)
{
    sc_transport *tp = NULL;
    CHECK(sc_transport_local_new(E, 16, 20.0, &tp) == SC_OK);
    pthread_t th[E];
    for (int r = 0; r < E; r++) {
        memset(&w[r], 0, sizeof w[r]);
        w[r].d.rank = r;
        w[r].d.cap = r == 2 ? cap_of_rank2 : MAXR;
        w[r].tp = tp;
        pthread_create(&th[r], NULL, run, &w[r]);
    }
    for (int r = 0; r < E; r++)
        pthread_join(th[r], NULL);
    sc_transport_local_free(tp);
}

/* What rank r got in DISPATCH and back in COMBINE (w: its worker). */
static void check_rank(const worker *w, int r)
{
    CHECK(w[r].st[0] == SC_OK && w[r].st[1] == SC_OK && w[r].d.calls == 4);
    /* DISPATCH: from each source e, e + r + 1 rows, source-major */
    size_t k = 0;
    for (int e = 0; e < E; e++) {
        CHECK(w[r].d.ngot[e] == (size_t)(e + r + 1));
        for (size_t i = 0; i < w[r].d.ngot[e]; i++, k++) /* doubled by COMBINE's out */
            CHECK(w[r].d.got[k][0] == 2.0f * (float)(100 * e + 10 * r + (int)i));
    }
    /* COMBINE: r's own rows back, doubled, in the order it sent them */
    k = 0;
    for (int e = 0; e < E; e++) {
        CHECK(w[r].d.nback[e] == w[r].d.ntok[e]);
        for (size_t i = 0; i < w[r].d.nback[e]; i++, k++)
            CHECK(w[r].d.back[k][0] == 2 * w[r].d.tok[k][0] && w[r].d.back[k][1] == -2);
    }
}

TEST(dispatch_and_combine)
{
    worker w[E];
    exchange(w, MAXR);
    for (int r = 0; r < E; r++)
        check_rank(w, r);
}

TEST(too_little_room)
{
    worker w[E];
    exchange(w, 5); /* rank 2 receives 3 + 4 + 5 rows */
    CHECK(w[2].st[0] == SC_ERR_RUNTIME);
    CHECK_STR(w[2].err, "d2: DISPATCH F s0 mb5: more rows came than the 5 the model has room for");
    CHECK(w[0].st[0] == SC_OK && w[1].st[0] == SC_OK); /* their COMBINE is aborted */
    CHECK(w[0].st[1] == SC_ERR_RUNTIME && w[1].st[1] == SC_ERR_RUNTIME);
}

TEST(host_completion)
{
    /* two members, one-byte rows: 0 sends "ab" to itself and "c" to 1; 1
     * sends nothing to 0 and "de" to itself */
    size_t s0[2] = {2, 1}, s1[2] = {0, 2}, r0[2], r1[2];
    char b0[4] = "", b1[4] = "";
    sc_a2a_part p0 = {SC_OP_DISPATCH, 1, "abc", s0, b0, 3, r0, 0};
    sc_a2a_part p1 = {SC_OP_DISPATCH, 1, "de", s1, b1, 3, r1, 0};
    sc_a2a_part *parts[2] = {&p0, &p1};
    sc_a2a_host_complete(parts, 2);
    CHECK(memcmp(b0, "ab", 2) == 0 && r0[0] == 2 && r0[1] == 0 && !p0.overflow);
    CHECK(memcmp(b1, "cde", 3) == 0 && r1[0] == 1 && r1[1] == 2 && !p1.overflow);
    p1.rcap = 2; /* 3 rows for room of 2 */
    sc_a2a_host_complete(parts, 2);
    CHECK(p1.overflow && !p0.overflow);
}

/* Under mpirun -np 3 (tests/runtime.sh): this rank's part through the mpi
 * transport. */
static void ranks(int rank, int size)
{
    char err[256];
    CHECK(size == E);
    static worker w[E];
    CHECK(sc_transport_mpi_new(16, 30, &w[rank].tp, err, sizeof err) == SC_OK);
    w[rank].d.rank = rank;
    w[rank].d.cap = MAXR;
    if (size == E && w[rank].tp) {
        run(&w[rank]);
        check_rank(w, rank);
        sc_transport_mpi_free(w[rank].tp);
    }
}

int main(void)
{
    if (sc_mpi_launched())
        return mpi_main(ranks, "a2a_run (mpi)");
    RUN(dispatch_and_combine);
    RUN(too_little_room);
    RUN(host_completion);
    return harness_done("a2a_run");
}
