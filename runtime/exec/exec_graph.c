/*
 * exec_graph.c — run --graph (exec.h, docs/graphs.md): the check that a
 * program's steps can be captured, the devices' meeting points, and the
 * executor's capture and replays.
 *
 * Step 1 (the first) runs eagerly: it warms up cuBLAS, the memory pool and
 * the pinned buffers. Step 2 is captured: all devices meet, device 0's
 * backend starts a capture, the others join it (backend order), every device
 * runs its passes and transfers up to its REDUCE through the usual code with
 * no sync of the backend, waits until its groups are queued, and device 0
 * joins the others back and ends the capture. The graph then runs once for
 * step 2 and once per later step; each device's backend waits for it before
 * its REDUCE, and the workload reads the step's losses (graph_replayed).
 * REDUCE, OPTIM and what lies between run eagerly in every step: the
 * optimizer's decisions (clipping, skipping) are the host's.
 */
#include "exec_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sc_exec_graph {
    int P;
    sc_backend **be;       /* [P] the devices' backends; device 0's is the origin */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;
    long gen;
    int stopped;           /* devices that failed while the capture was open */
    int aborted;
    void *graph;           /* device 0's backend's graph, once captured */
    int capturing;         /* device 0's backend captures (mu; ended by device 0, also after a
                            * failure, before any device frees what the capture holds) */
    char err[384];         /* why the capture failed (device 0) */
};

/* ---- the check ---- */

/* Why an instruction inside a captured step cannot be captured, or NULL. */
static const char *unsafe(const sc_instr *in)
{
    switch (sc_op_class_of(in->op)) {
    case SC_OPK_STAGE:
        return sc_op_has(in->op, SC_OPF_FRAC) ? "a recomputed record follows offload's host "
                                                "state: not capturable"
                                              : NULL;
    case SC_OPK_XFER: case SC_OPK_WAIT: case SC_OPK_FSDP: return NULL;
    case SC_OPK_HOST: return "offload copies wait on the host";
    case SC_OPK_PAIR: return "an overlapped pair runs its backward half from a second host "
                             "thread, outside the capture";
    case SC_OPK_VOCAB: return "the vocabulary passes read their statistics on the host";
    case SC_OPK_COLL: return "the collectives of a step complete through the host";
    case SC_OPK_STEP: return "an end-of-step instruction inside the step decides on the host";
    }
    return "an instruction the executor does not know";
}

static int why_at(char *why, size_t len, int d, size_t k, const sc_instr *in, const char *what)
{
    char buf[64];
    sc_instr_format(in, buf, sizeof buf);
    snprintf(why, len, "--graph: %s (d%d, instruction %zu %s): not capturable", what, d, k, buf);
    return 0;
}

/* The captured part of step s of a stream: [*a, *b), from after the
 * previous OPTIM to the step's REDUCE; 0 when the stream has no such step. */
static int segment(const sc_instr *in, size_t n, int s, size_t *a, size_t *b)
{
    int step = 0;
    size_t start = 0;
    for (size_t k = 0; k < n; k++) {
        if (in[k].op == SC_OP_REDUCE && step == s) {
            *a = start;
            *b = k;
            return 1;
        }
        if (in[k].op == SC_OP_OPTIM) {
            step++;
            start = k + 1;
        }
    }
    return 0;
}

/* Whether step s's part of device d's stream is step 1's with every
 * microbatch number moved on by (s - 1) m: what the replay runs. */
static int same_shape(const sc_instr *in, size_t a1, size_t b1, size_t a, size_t b, int shift,
                      size_t *at)
{
    size_t n = b - a < b1 - a1 ? b - a : b1 - a1;
    *at = a + n; /* past the shorter one, when they differ only in length */
    for (size_t i = 0; i < n; i++) {
        sc_instr x = in[a1 + i], y = in[a + i];
        if (x.mb >= 0)
            x.mb += shift;
        if (sc_op_class_of(x.op) == SC_OPK_PAIR && x.bmb >= 0)
            x.bmb += shift;
        if (memcmp(&x, &y, sizeof x) != 0) {
            *at = a + i;
            return 0;
        }
    }
    return b - a == b1 - a1;
}

int sc_exec_graph_check(const sc_prog *pg, char *why, size_t len)
{
    int steps = sc_prog_steps(pg), m = sc_prog_microbatches(pg);
    if (steps < 2) {
        snprintf(why, len, "--graph: the program has %d step; the graph is captured in step 2 "
                 "and replayed from step 3 (-D steps=3)", steps);
        return 0;
    }
    if (sc_prog_optim_sync(pg) == SC_SYNC_POSTVAL) {
        snprintf(why, len, "--graph: post-validation decides on the host inside the next step "
                 "(VALIDATE, its rollback path): not capturable; use sync none or sync");
        return 0;
    }
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        size_t n, a1, b1;
        const sc_instr *in = sc_prog_stream(pg, d, &n);
        for (int s = 1; s < steps; s++) {
            size_t a, b, at;
            if (!segment(in, n, s, &a, &b) || (s == 1 && !segment(in, n, 1, &a1, &b1))) {
                snprintf(why, len, "--graph: d%d's stream has no REDUCE for step %d", d, s + 1);
                return 0;
            }
            for (size_t k = a; k < b; k++)
                if (unsafe(&in[k]))
                    return why_at(why, len, d, k, &in[k], unsafe(&in[k]));
            if (s > 1 && !same_shape(in, a1, b1, a, b, (s - 1) * m, &at)) {
                snprintf(why, len, "--graph: d%d's step %d differs from step 2 (instruction %zu): "
                         "a replay of step 2 would not run it", d, s + 1, at);
                return 0;
            }
        }
    }
    return 1;
}

/* ---- the devices' meeting points ---- */

sc_status sc_exec_graph_new(int P, sc_backend *const *be, sc_exec_graph **out, char *err,
                            size_t errlen)
{
    *out = NULL;
    for (int d = 0; d < P; d++)
        if (!be[d]->ops->capture_begin || !be[d]->ops->order || !be[d]->ops->capture_end ||
            !be[d]->ops->graph_launch || !be[d]->ops->graph_free || !be[d]->ops->graph_losses) {
            snprintf(err, errlen, "--graph: backend '%s' cannot capture a step (use --backend "
                     "cuda)", be[d]->ops->name);
            return SC_ERR_ARG;
        }
    sc_exec_graph *g = calloc(1, sizeof *g);
    if (!g || !(g->be = malloc((size_t)P * sizeof *g->be))) {
        free(g);
        snprintf(err, errlen, "out of memory");
        return SC_ERR_NOMEM;
    }
    g->P = P;
    memcpy(g->be, be, (size_t)P * sizeof *be);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    *out = g;
    return SC_OK;
}

void sc_exec_graph_free(sc_exec_graph *g)
{
    if (!g)
        return;
    sc_backend *o = g->be[0];
    if (g->capturing && o->ops->capture_end(o->ctx, &g->graph) != SC_OK)
        g->graph = NULL;
    if (g->graph)
        o->ops->graph_free(o->ctx, g->graph);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g->be);
    free(g);
}

int sc_exec_graph_captured(const sc_exec_graph *g)
{
    return g && g->graph;
}

/* Wakes every device waiting at a meeting point, for good. */
static void graph_abort(sc_exec_graph *g, const char *why)
{
    pthread_mutex_lock(&g->mu);
    if (!g->aborted && why && !g->err[0])
        snprintf(g->err, sizeof g->err, "%s", why);
    g->aborted = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* All P devices meet; fails (the device's line in out->err) when one gave
 * up. */
static sc_status meet(ex *e)
{
    sc_exec_graph *g = e->out->graph;
    pthread_mutex_lock(&g->mu);
    long gen = g->gen;
    if (!g->aborted && ++g->arrived == g->P) {
        g->arrived = 0;
        g->gen++;
        pthread_cond_broadcast(&g->cv);
    }
    while (!g->aborted && g->gen == gen)
        pthread_cond_wait(&g->cv, &g->mu);
    int bad = g->aborted;
    pthread_mutex_unlock(&g->mu);
    if (!bad)
        return SC_OK;
    return sc_ex_failf(e, SC_ERR_RUNTIME, "d%d: --graph: %s", e->d,
                       g->err[0] ? g->err : "another device failed during the graph's step");
}

/* Sets g->capturing (device 0), waking the devices that wait for the end. */
static void set_capturing(sc_exec_graph *g, int on)
{
    pthread_mutex_lock(&g->mu);
    g->capturing = on;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* A failure while the capture is open: no device may queue anything once
 * the capture has ended (its memory is gone with the graph), and a device's
 * frees must run, not be captured. So device 0 ends the capture (its graph
 * dropped) once every device has stopped, and the others wait for that
 * before freeing. Every device stops: the transport was aborted and the
 * meeting points fail, and none can pass the capture's end without the
 * others. */
void sc_ex_graph_failed(ex *e)
{
    sc_exec_graph *g = e->out->graph;
    if (!g)
        return;
    graph_abort(g, NULL);
    pthread_mutex_lock(&g->mu);
    if (g->capturing) {
        g->stopped++;
        pthread_cond_broadcast(&g->cv);
    }
    while (g->capturing && e->d == 0 && g->stopped < g->P)
        pthread_cond_wait(&g->cv, &g->mu);
    int end = g->capturing && e->d == 0;
    while (g->capturing && e->d != 0)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    if (end) {
        sc_backend *o = g->be[0];
        void *dropped = NULL;
        if (o->ops->capture_end(o->ctx, &dropped) == SC_OK)
            o->ops->graph_free(o->ctx, dropped);
        set_capturing(g, 0);
    }
}

/* ---- the executor's side ---- */

sc_status sc_ex_graph_capture(ex *e)
{
    sc_exec_graph *g = e->out->graph;
    sc_backend *o = g->be[0];
    sc_status st = meet(e);
    if (!st && e->d == 0)
        set_capturing(g, o->ops->capture_begin(o->ctx) == SC_OK);
    if (!st && e->d == 0 && !g->capturing) {
        const char *why = o->ops->errmsg ? o->ops->errmsg(o->ctx) : NULL;
        snprintf(e->out->err, sizeof e->out->err, "cannot start the capture: %s",
                 why ? why : "the backend failed");
        graph_abort(g, e->out->err);
    }
    if (st || (st = meet(e)) != SC_OK)
        return st;
    if (e->d != 0) /* this device's compute joins the capture */
        e->be->ops->order(e->be->ctx, o->ctx);
    if ((st = meet(e)) != SC_OK)
        return st;
    if (e->wl->ops->graph_capture)
        e->wl->ops->graph_capture(e->wl->ctx);
    e->capturing = 1;
    return SC_OK;
}

sc_status sc_ex_graph_end(ex *e)
{
    sc_exec_graph *g = e->out->graph;
    sc_backend *o = g->be[0];
    e->capturing = 0;
    sc_status st = meet(e);
    if (!st && e->d == 0) {
        for (int i = 1; i < g->P; i++) /* every device's work joined back */
            o->ops->order(o->ctx, g->be[i]->ctx);
        sc_status ended = o->ops->capture_end(o->ctx, &g->graph);
        set_capturing(g, 0);
        if (ended != SC_OK) {
            const char *why = o->ops->errmsg ? o->ops->errmsg(o->ctx) : NULL;
            char buf[320];
            snprintf(buf, sizeof buf, "the capture of step 2 failed: %s",
                     why ? why : "the backend failed");
            graph_abort(g, buf);
        }
    }
    return st ? st : meet(e);
}

sc_status sc_ex_graph_launch(ex *e, int step)
{
    sc_exec_graph *g = e->out->graph;
    sc_backend *o = g->be[0];
    sc_status st = meet(e);
    if (!st && e->d == 0) {
        if (o->ops->graph_launch(o->ctx, g->graph) != SC_OK) {
            const char *why = o->ops->errmsg ? o->ops->errmsg(o->ctx) : NULL;
            char buf[320];
            snprintf(buf, sizeof buf, "the replay of step %d failed: %s", step + 1,
                     why ? why : "the backend failed");
            graph_abort(g, buf);
        }
        for (int i = 1; i < g->P; i++) /* every device's next work after the replay */
            g->be[i]->ops->order(g->be[i]->ctx, o->ctx);
    }
    if (st || (st = meet(e)) != SC_OK)
        return st;
    if (e->wl->ops->graph_replayed && (st = e->wl->ops->graph_replayed(e->wl->ctx, step)) != SC_OK) {
        const char *why = e->wl->ops->errmsg ? e->wl->ops->errmsg(e->wl->ctx) : NULL;
        return sc_ex_failf(e, st, "d%d: the replay of step %d: %s", e->d, step + 1,
                           why ? why : "the workload failed");
    }
    return SC_OK;
}

sc_status sc_ex_graph_init(ex *e)
{
    if (!e->out->graph)
        return SC_OK;
    int steps = sc_prog_steps(e->pg);
    e->gstart = malloc((size_t)steps * sizeof(size_t));
    e->gred = malloc((size_t)steps * sizeof(size_t));
    if (!e->gstart || !e->gred)
        return sc_ex_failf(e, SC_ERR_NOMEM, "out of memory on d%d: executor tables", e->d);
    for (int s = 0; s < steps; s++)
        if (!segment(e->in, e->n, s, &e->gstart[s], &e->gred[s]))
            return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: --graph: no REDUCE for step %d", e->d,
                               s + 1);
    e->nsteps = steps;
    return SC_OK;
}
