/*
 * exec_pair.c — overlapped pairs (docs/run.md#overlapped-pairs): the F half
 * and the B or BW half of one instruction run at the same time.
 *
 * Both halves are begun on the executor's thread (their inputs taken, their
 * outputs and records allocated, in the order F then B), then run at once:
 * the F half on this thread with the device's workload context and backend,
 * the backward half on the device's *lane*, a thread of its own with a
 * second backend instance on the same device (backend.h, lane_open: on cuda
 * a second stream with its own cuBLAS handle) and a second workload context
 * computing through it (exec.h, lane). Before they run, the lane's queue
 * waits for the work queued so far on the device's (lane_fork: the inputs
 * the executor allocated and received); after, the device's waits for the
 * lane's (lane_join), so that the frees of end come after the lane's reads.
 * Then both halves end, F first. The halves touch different records and
 * tensors (the verifier proved that neither needs the other), and a
 * workload's passes read parameters and write only their own gradients, so
 * the bits are those of the halves run in turn.
 *
 * Without a lane (a backend or workload without the optional slots, or
 * STAGECRAFT_PAIRS=serial) the halves run in turn, F first: the same bits,
 * no overlap. The lane is opened at the device's first pair and freed with
 * the executor.
 */
#include "exec_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sc_lane {
    sc_backend *be;      /* the lane's backend instance */
    void *ctx;           /* the workload's lane context */
    const struct sc_workload_ops *w;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sc_job *job;         /* handed to the lane; NULL once it has run it */
    int quit;
} sc_lane;

static void *lane_main(void *arg)
{
    sc_lane *ln = arg;
    pthread_mutex_lock(&ln->mu);
    for (;;) {
        while (!ln->job && !ln->quit)
            pthread_cond_wait(&ln->cv, &ln->mu);
        if (!ln->job)
            break;
        sc_job *j = ln->job;
        pthread_mutex_unlock(&ln->mu);
        sc_ex_run(j, ln->w, ln->ctx);
        pthread_mutex_lock(&ln->mu);
        ln->job = NULL;
        pthread_cond_broadcast(&ln->cv);
    }
    pthread_mutex_unlock(&ln->mu);
    return NULL;
}

/* Opens device d's lane once; leaves e->lane NULL (halves in turn) when
 * the backend or the workload cannot, or pairs run serially by request,
 * or the program has ep > 1 and no second EP transport for the lane: the
 * passes' all-to-alls on the one EP transport would then be posted from
 * two threads, in an order the other EP ranks need not share
 * (docs/semantics.md#expert-parallelism). */
static sc_status lane_open(ex *e)
{
    const char *mode = getenv("STAGECRAFT_PAIRS");
    e->lane_tried = 1;
    if ((mode && strcmp(mode, "serial") == 0) || !e->be->ops->lane_open || !e->wl->ops->lane ||
        (sc_prog_ep(e->pg) > 1 && !e->out->ep_lane_tp))
        return SC_OK;
    sc_lane *ln = calloc(1, sizeof *ln);
    if (!ln)
        return sc_ex_failf(e, SC_ERR_NOMEM, "out of memory on d%d: the pairs' lane", e->d);
    sc_status st = e->be->ops->lane_open(e->be->ctx, &ln->be);
    if (st != SC_OK) {
        const char *why = e->be->ops->errmsg ? e->be->ops->errmsg(e->be->ctx) : NULL;
        free(ln);
        return sc_ex_failf(e, st, "d%d: the pairs' lane: %s", e->d, why ? why : "cannot open");
    }
    ln->w = e->wl->ops;
    if (!(ln->ctx = e->wl->ops->lane(e->wl->ctx, ln->be))) {
        sc_backend_free(ln->be);
        free(ln);
        return sc_ex_failf(e, SC_ERR_NOMEM, "out of memory on d%d: the pairs' lane", e->d);
    }
    pthread_mutex_init(&ln->mu, NULL);
    pthread_cond_init(&ln->cv, NULL);
    if (pthread_create(&ln->th, NULL, lane_main, ln) != 0) {
        pthread_mutex_destroy(&ln->mu);
        pthread_cond_destroy(&ln->cv);
        if (e->wl->ops->lane_free)
            e->wl->ops->lane_free(ln->ctx);
        sc_backend_free(ln->be);
        free(ln);
        return sc_ex_failf(e, SC_ERR_RUNTIME, "d%d: cannot start the pairs' lane thread", e->d);
    }
    e->lane = ln;
    return SC_OK;
}

void sc_ex_lane_free(ex *e)
{
    sc_lane *ln = e->lane;
    if (!ln)
        return;
    pthread_mutex_lock(&ln->mu);
    ln->quit = 1;
    pthread_cond_broadcast(&ln->cv);
    pthread_mutex_unlock(&ln->mu);
    pthread_join(ln->th, NULL);
    pthread_mutex_destroy(&ln->mu);
    pthread_cond_destroy(&ln->cv);
    if (e->wl->ops->lane_free)
        e->wl->ops->lane_free(ln->ctx);
    sc_backend_free(ln->be);
    free(ln);
    e->lane = NULL;
}

/* Runs both jobs: b on the lane while f runs here, or both here in turn. */
static void run_both(ex *e, sc_job *f, sc_job *b)
{
    sc_lane *ln = e->lane;
    const struct sc_backend_ops *o = e->be->ops;
    if (!ln) {
        if (sc_ex_run(f, e->wl->ops, e->wl->ctx) == SC_OK)
            sc_ex_run(b, e->wl->ops, e->wl->ctx);
        else
            b->st = SC_OK; /* not run: f's failure is the pair's */
        return;
    }
    if (o->lane_fork)
        o->lane_fork(e->be->ctx, ln->be->ctx);
    pthread_mutex_lock(&ln->mu);
    ln->job = b;
    pthread_cond_broadcast(&ln->cv);
    pthread_mutex_unlock(&ln->mu);
    sc_ex_run(f, e->wl->ops, e->wl->ctx);
    pthread_mutex_lock(&ln->mu);
    while (ln->job)
        pthread_cond_wait(&ln->cv, &ln->mu);
    pthread_mutex_unlock(&ln->mu);
    if (o->lane_join)
        o->lane_join(e->be->ctx, ln->be->ctx);
    /* The lane's work may only be queued (cuda): its failures show here. */
    if (!b->st && ln->be->ops->sync && ln->be->ops->sync(ln->be->ctx) != SC_OK)
        b->st = SC_ERR_RUNTIME;
}

sc_status sc_ex_pair(ex *e, const sc_instr *in)
{
    sc_status st = SC_OK;
    if (!e->lane_tried && (st = lane_open(e)) != SC_OK)
        return st;
    sc_instr h[2];
    sc_instr_halves(in, h);
    sc_job f, b; /* begin fills a job before it can fail: end may take either */
    int bbegun = 0;
    st = sc_ex_begin(e, &f, &h[0]);
    if (st == SC_OK) {
        bbegun = 1;
        st = sc_ex_begin(e, &b, &h[1]);
    }
    if (st == SC_OK) {
        run_both(e, &f, &b);
        if (f.st)
            st = sc_ex_wl_fail(e, f.st, &h[0]);
        else if (b.st && e->lane) { /* the lane's own message */
            const struct sc_workload_ops *w = e->wl->ops;
            const char *why = w->errmsg ? w->errmsg(e->lane->ctx) : NULL;
            const char *bwhy = e->lane->be->ops->errmsg ? e->lane->be->ops->errmsg(e->lane->be->ctx)
                                                        : NULL;
            char name[64];
            sc_instr_format(&h[1], name, sizeof name);
            st = sc_ex_failf(e, b.st, "d%d: %s (in a pair, on the lane): %s", e->d, name,
                             why && *why ? why : bwhy ? bwhy : sc_status_name(b.st));
        } else if (b.st) {
            st = sc_ex_wl_fail(e, b.st, &h[1]);
        }
    }
    sc_status sf = sc_ex_end(e, &f, st);
    if (bbegun)
        sc_ex_end(e, &b, st);
    return sf;
}
