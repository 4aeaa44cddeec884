/*
 * exec_coll.c — a device's collective channel (exec_coll.h).
 */
#include "exec_coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NONE ((size_t)-1)

struct sc_cchan {
    const sc_prog *pg;
    int d;
    sc_transport *tp;
    sc_transport *ep_tp; /* the EP group's (group collectives), or NULL */
    int ep_dev;
    sc_transport *on;   /* the running collective's transport */
    int on_dev;         /* and the device's number there */
    const sc_workload *wl;
    double origin, *t1;
    const sc_instr *in;
    size_t n;
    size_t *need;   /* [n] the collective instruction k waits for */
    size_t *list;   /* [nc] stream indices of the collectives, in order */
    char *done;     /* [n] collective k has completed */
    char *skip;     /* [n] collective k is skipped: a rollback path that does not run */
    size_t nc, posted, head;
    int running;    /* list[head] has started */
    void *h;        /* its transport handle */
    sc_coll cur;    /* its description */
};

/* A DISPATCH or COMBINE: the pass before it ran the all-to-alls it stands for. */
static int is_a2a(int op)
{
    return op == SC_OP_DISPATCH || op == SC_OP_COMBINE;
}

sc_status sc_cchan_new(const sc_prog *pg, int d, const sc_exec_out *xo, sc_transport *tp,
                       const sc_workload *wl, double origin, double *t1, sc_cchan **out,
                       char *err, size_t errlen)
{
    *out = NULL;
    int ep = sc_prog_ep(pg);
    if (ep > 1 && !xo->ep_tp) { /* p x E devices (ir/ep.h), started by run's ep runner */
        snprintf(err, errlen, "d%d: ep = %d needs %d x %d devices, one per EP rank, and its EP "
                 "group's transport (sc_exec_out.ep_tp; docs/semantics.md#expert-parallelism)",
                 d, sc_prog_ep(pg), sc_prog_devices(pg), sc_prog_ep(pg));
        return SC_ERR_ARG;
    }
    size_t n;
    const sc_instr *in = sc_prog_stream(pg, d, &n);
    size_t nc = 0;
    for (size_t k = 0; k < n; k++) {
        nc += sc_op_is_coll(in[k].op);
        /* The transports run two primitives (sc_cxfer_bcast); a kind with
         * neither (an all-to-all) needs its own there first. */
        if (sc_op_is_coll(in[k].op) && !sc_op_has(in[k].op, SC_OPF_REDUCES | SC_OPF_ROOTED) &&
            !(ep > 1 && is_a2a(in[k].op))) {
            snprintf(err, errlen, "d%d #%zu: no transport runs %s yet", d, k,
                     sc_op_name(in[k].op));
            return SC_ERR_ARG;
        }
    }
    size_t *need = malloc((n + 1) * sizeof *need);
    if (!need) {
        snprintf(err, errlen, "out of memory on d%d: collective tables", d);
        return SC_ERR_NOMEM;
    }
    sc_status st = sc_coll_readers(pg, d, 0, need, err, errlen);
    int reads = 0;
    for (size_t k = 0; k < n && !st; k++)
        reads |= need[k] != NONE;
    if (st || (nc == 0 && !reads)) {
        free(need);
        return st;
    }
    if (!tp->ops->coll_start || !wl->ops->coll_buffer) {
        free(need);
        snprintf(err, errlen, "d%d: the stream has collectives, but the %s%s", d,
                 !tp->ops->coll_start ? tp->ops->name : "workload",
                 !tp->ops->coll_start ? " transport has none" : " gives no buffers for them");
        return SC_ERR_ARG;
    }
    sc_cchan *ch = calloc(1, sizeof *ch);
    if (ch) {
        ch->list = malloc((nc + 1) * sizeof *ch->list);
        ch->done = calloc(n + 1, 1);
        ch->skip = calloc(n + 1, 1);
    }
    if (!ch || !ch->list || !ch->done || !ch->skip) {
        if (ch) {
            free(ch->list);
            free(ch->done);
            free(ch->skip);
        }
        free(ch);
        free(need);
        snprintf(err, errlen, "out of memory on d%d: collective tables", d);
        return SC_ERR_NOMEM;
    }
    *ch = (sc_cchan){.pg = pg, .d = d, .tp = tp, .ep_tp = xo->ep_tp, .ep_dev = xo->ep_dev,
                     .wl = wl, .origin = origin, .t1 = t1, .in = in,
                     .n = n, .need = need, .list = ch->list, .done = ch->done, .skip = ch->skip,
                     .nc = nc};
    for (size_t k = 0, j = 0; k < n; k++)
        if (sc_op_is_coll(in[k].op))
            ch->list[j++] = k;
    *out = ch;
    return SC_OK;
}

void sc_cchan_free(sc_cchan *ch)
{
    if (!ch)
        return;
    if (ch->running && ch->on->ops->coll_release)
        ch->on->ops->coll_release(ch->on->ctx, ch->on_dev, ch->h);
    free(ch->need);
    free(ch->list);
    free(ch->done);
    free(ch->skip);
    free(ch);
}

size_t sc_cchan_need(const sc_cchan *ch, size_t k)
{
    return ch ? ch->need[k] : NONE;
}

/* The executor's clock (sc_exec_now's, read here so that this file calls
 * nothing of exec.c). */
static double now_since(const sc_cchan *ch)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 - ch->origin;
}

sc_status sc_cchan_progress(sc_cchan *ch, int *moved, char *err, size_t errlen)
{
    const struct sc_workload_ops *w = ch->wl->ops;
    sc_status st;
    for (;;) {
        if (ch->running) {
            const struct sc_transport_ops *t = ch->on->ops;
            int done = 0;
            if ((st = t->coll_test(ch->on->ctx, ch->on_dev, ch->h, &done)) != SC_OK) {
                snprintf(err, errlen, "d%d: %s", ch->d, t->errmsg(ch->on->ctx));
                return st;
            }
            if (!done)
                return SC_OK;
            t->coll_release(ch->on->ctx, ch->on_dev, ch->h);
            ch->h = NULL;
            ch->running = 0;
            size_t k = ch->list[ch->head++];
            ch->done[k] = 1;
            ch->t1[k] = now_since(ch);
            *moved = 1;
            if (w->coll_done && (st = w->coll_done(ch->wl->ctx, &ch->cur)) != SC_OK) {
                snprintf(err, errlen, "d%d: #%zu: %s", ch->d, k, w->errmsg(ch->wl->ctx));
                return st;
            }
        }
        if (ch->head >= ch->posted)
            return SC_OK;
        /* The next one starts: the workload fills its buffer now, when every
         * collective before it has completed here. */
        size_t k = ch->list[ch->head];
        /* every device skips it, or the pass before it ran its all-to-alls:
         * nothing to start */
        if (ch->skip[k] || is_a2a(ch->in[k].op)) {
            ch->done[k] = 1;
            ch->t1[k] = now_since(ch);
            ch->head++;
            *moved = 1;
            continue;
        }
        sc_prog_coll(ch->pg, &ch->in[k], &ch->cur);
        sc_cxfer x = {.op = ch->cur.op, .red = ch->cur.red, .root = ch->cur.root};
        if ((st = w->coll_buffer(ch->wl->ctx, &ch->cur, &x)) != SC_OK) {
            char name[128];
            sc_prog_instr_format(ch->pg, &ch->in[k], name, sizeof name);
            snprintf(err, errlen, "d%d: %s: %s", ch->d, name, w->errmsg(ch->wl->ctx));
            return st;
        }
        /* a group's (the EP group's all-reduce) on its transport */
        ch->on = ch->cur.group && ch->ep_tp ? ch->ep_tp : ch->tp;
        ch->on_dev = ch->on == ch->tp ? ch->d : ch->ep_dev;
        const struct sc_transport_ops *t = ch->on->ops;
        if ((st = t->coll_start(ch->on->ctx, ch->on_dev, &x, &ch->h)) != SC_OK) {
            snprintf(err, errlen, "d%d: %s", ch->d, t->errmsg(ch->on->ctx));
            return st;
        }
        ch->running = 1;
        *moved = 1;
    }
}

sc_status sc_cchan_post(sc_cchan *ch, size_t k, char *err, size_t errlen)
{
    if (ch->posted >= ch->nc || ch->list[ch->posted] != k) {
        snprintf(err, errlen, "d%d #%zu: collective posted out of turn", ch->d, k);
        return SC_ERR_PROGRAM;
    }
    ch->posted++;
    int moved = 0;
    return sc_cchan_progress(ch, &moved, err, errlen);
}

sc_status sc_cchan_skip(sc_cchan *ch, size_t k, char *err, size_t errlen)
{
    if (!ch || ch->posted >= ch->nc || ch->list[ch->posted] != k) {
        snprintf(err, errlen, "d%d #%zu: collective skipped out of turn", ch ? ch->d : -1, k);
        return SC_ERR_PROGRAM;
    }
    ch->skip[k] = 1;
    ch->posted++;
    int moved = 0;
    return sc_cchan_progress(ch, &moved, err, errlen);
}

int sc_cchan_complete(const sc_cchan *ch, size_t k)
{
    return k == NONE || !ch || ch->done[k];
}

int sc_cchan_idle(const sc_cchan *ch)
{
    return !ch || (ch->head == ch->posted && !ch->running);
}
