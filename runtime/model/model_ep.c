/*
 * model_ep.c — one all-to-all of expert parallelism through a model's hook
 * (model.h's sc_ep_hook, docs/semantics.md#expert-parallelism).
 */
#include "model_impl.h"
#include "transport/transport.h"

#include <stdio.h>
#include <stdlib.h>

sc_status sc_ep_exchange(const sc_ep_hook *h, const sc_ep_call *c, struct sc_transport *tp,
                         char *err, size_t errlen)
{
    if (!tp->ops->a2a_start) {
        snprintf(err, errlen, "the %s transport has no all-to-all (%s s%d mb%d)", tp->ops->name,
                 sc_op_name(c->op), c->stage, c->mb);
        return SC_ERR_ARG;
    }
    size_t *n = calloc(2 * (size_t)c->ep, sizeof *n);
    if (!n) {
        snprintf(err, errlen, "out of memory for an all-to-all");
        return SC_ERR_NOMEM;
    }
    sc_a2a_part x = {.op = c->op, .row = h->row_bytes, .nsend = n, .nrecv = n + c->ep};
    void *recv = NULL;
    sc_status st = h->out(h->ctx, c, &x.send, n, &recv, &x.rcap, err, errlen);
    x.recv = recv;
    void *hd = NULL;
    if (!st)
        st = tp->ops->a2a_start(tp->ctx, c->rank, &x, &hd);
    if (!st)
        st = tp->ops->coll_wait(tp->ctx, c->rank, hd);
    if (hd && tp->ops->coll_release)
        tp->ops->coll_release(tp->ctx, c->rank, hd);
    if (st && !err[0])
        snprintf(err, errlen, "%s", tp->ops->errmsg(tp->ctx));
    if (!st && x.overflow) {
        snprintf(err, errlen, "d%d: %s %s s%d mb%d: more rows came than the %zu the model has "
                 "room for", c->rank, sc_op_name(c->op), sc_op_name(c->pass), c->stage, c->mb,
                 x.rcap);
        st = SC_ERR_RUNTIME;
    }
    if (!st)
        st = h->in(h->ctx, c, x.recv, x.nrecv, err, errlen);
    free(n);
    return st;
}

void sc_model_set_ep(sc_workload *wl, struct sc_transport *tp, struct sc_transport *lane_tp,
                     int dev)
{
    sc_mdev *dv = wl->ctx;
    dv->ep_tp = tp;
    dv->ep_lane_tp = lane_tp;
    dv->ep_dev = dev;
}
