/*
 * exec_redo.c — post-validation in the executor (exec.h,
 * docs/steps.md#optimizer-synchronization): VALIDATE, the rollback path that
 * follows it (forward passes redone into their records, their outputs
 * broadcast) or skips it, and the buffers of those broadcasts, which the
 * executor owns (the workload owns the rest).
 */
#include "exec_impl.h"

#include <stdio.h>
#include <stdlib.h>

/* The redone output of F(s, mb) while it is broadcast, and what a device
 * that does not read it received (both freed when the broadcast is done);
 * the input of stage s+1 the consumer keeps until its F takes it. */
static void **slot_out(ex *e, int s, int mb) { return &e->redo_out[(size_t)s * (size_t)e->m + (size_t)mb]; }
static void **slot_in(ex *e, int s, int mb) { return &e->redo_in[(size_t)s * (size_t)e->m + (size_t)mb]; }

static size_t act_bytes(const ex *e, int s, int mb)
{
    return sc_ex_kbytes(e, SC_DIR_ACT, s, mb);
}

/* Whether c broadcasts a redone forward output: a broadcast of F under
 * post-validation (a split vocabulary's broadcast of the last stage's
 * output is also one of F, but is never placed with post-validation). */
static int redone_bcast(const ex *e, const sc_coll *c)
{
    return c->what == SC_OP_F && sc_prog_optim_sync(e->pg) == SC_SYNC_POSTVAL;
}

/* The collective channel's buffers (exec_coll.h): a redone output's
 * broadcast here, every other collective the workload's. */
static sc_status coll_buffer(void *ctx, const sc_coll *c, sc_cxfer *x)
{
    ex *e = ctx;
    if (!redone_bcast(e, c)) {
        if (!e->wl->ops->coll_buffer)
            return sc_ex_failf(e, SC_ERR_ARG, "d%d: the workload gives no buffers for "
                                              "collectives", e->d);
        return e->wl->ops->coll_buffer(e->wl->ctx, c, x);
    }
    int s = c->stage, mb = c->mb;
    sc_status st = SC_OK;
    void **out = slot_out(e, s, mb);
    if (c->root != e->d) { /* a receiver: the consumer keeps it */
        if (*out)
            return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: two broadcasts of F s%d mb%d at once",
                               e->d, s, mb);
        if (!(*out = sc_ex_balloc(e, act_bytes(e, s + 1, mb), "redone activation", s + 1, mb,
                                  &st)))
            return st;
    } else if (!*out) {
        return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: the broadcast of F s%d mb%d before its redone "
                                              "pass", e->d, s, mb);
    }
    x->dtype = SC_DT_F32;
    x->buf = *out;
    x->count = act_bytes(e, s + 1, mb) / sizeof(float);
    return SC_OK;
}

static sc_status coll_done(void *ctx, const sc_coll *c)
{
    ex *e = ctx;
    if (!redone_bcast(e, c))
        return e->wl->ops->coll_done ? e->wl->ops->coll_done(e->wl->ctx, c) : SC_OK;
    int s = c->stage, mb = c->mb;
    void **out = slot_out(e, s, mb);
    if (c->root != e->d && sc_prog_stage_device(e->pg, s + 1) == e->d) {
        void **in = slot_in(e, s + 1, mb); /* the consumer's F takes it */
        if (*in)
            sc_ex_bfree(e, *in, act_bytes(e, s + 1, mb));
        *in = *out;
    } else {
        sc_ex_bfree(e, *out, act_bytes(e, s + 1, mb));
    }
    *out = NULL;
    return SC_OK;
}

static const char *errmsg(void *ctx)
{
    ex *e = ctx;
    return e->out->err[0] ? e->out->err : e->wl->ops->errmsg(e->wl->ctx);
}

sc_status sc_ex_redo_init(ex *e)
{
    e->cops = *e->wl->ops;
    e->cwl = (sc_workload){&e->cops, e->wl->ctx};
    int any = 0;
    for (size_t k = 0; k < e->n && !any; k++)
        any = (e->in[k].flags & (SC_IF_ROLLBACK | SC_IF_REDO_IN)) &&
              (sc_op_is_compute(e->in[k].op) || sc_op_is_coll(e->in[k].op));
    if (!any)
        return SC_OK; /* the channel calls the workload itself */
    size_t SM = (size_t)e->S * (size_t)e->m;
    e->redo_in = calloc(SM, sizeof(void *));
    e->redo_out = calloc(SM, sizeof(void *));
    if (!e->redo_in || !e->redo_out)
        return sc_ex_failf(e, SC_ERR_NOMEM, "out of memory on d%d: rollback tables", e->d);
    e->cops.coll_buffer = coll_buffer;
    e->cops.coll_done = coll_done;
    e->cops.errmsg = errmsg;
    e->cwl.ctx = e;
    return SC_OK;
}

void sc_ex_redo_free(ex *e)
{
    size_t SM = (size_t)e->S * (size_t)e->m;
    for (size_t i = 0; i < SM && e->redo_in; i++) {
        int s = (int)(i / (size_t)e->m), mb = (int)(i % (size_t)e->m);
        if (e->redo_in[i])
            sc_ex_bfree(e, e->redo_in[i], act_bytes(e, s, mb));
        if (e->redo_out[i])
            sc_ex_bfree(e, e->redo_out[i], act_bytes(e, s + 1, mb));
    }
    free(e->redo_in);
    free(e->redo_out);
}

sc_status sc_ex_validate(ex *e, const sc_instr *in)
{
    const struct sc_workload_ops *w = e->wl->ops;
    if (!w->validate)
        return sc_ex_failf(e, SC_ERR_ARG, "d%d: VALIDATE, but the workload cannot validate an "
                                          "optimizer step", e->d);
    int redo = 0;
    sc_status st = w->validate(e->wl->ctx, e->vsteps++, &redo);
    if (st != SC_OK)
        return sc_ex_wl_fail(e, st, in);
    e->rollback = redo;
    return SC_OK;
}

void *sc_ex_redo_input(ex *e, int s, int mb)
{
    if (!e->redo_in)
        return NULL;
    void **in = slot_in(e, s, mb), *p = *in;
    *in = NULL;
    return p;
}

sc_status sc_ex_redo_forward(ex *e, const sc_instr *in)
{
    int s = in->stage, mb = in->mb;
    rec *r = &e->rec[(size_t)s * (size_t)e->m + (size_t)mb];
    const layout *L = sc_ex_rlay(e, r);
    if (!r->part || r->state != R_HELD)
        return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: F s%d mb%d is redone, but its record is not "
                                              "held here", e->d, s, mb);
    /* Its input: a redone producer's broadcast, or what the record kept (the
     * producer ran with right parameters; stage 0 makes its own). */
    void *src = NULL, *dst = NULL;
    int own = 0;
    if (in->flags & SC_IF_REDO_IN) {
        if (!(src = sc_ex_redo_input(e, s, mb)))
            return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: redone F s%d mb%d: its producer's "
                                                  "redone output did not arrive", e->d, s, mb);
        own = 1;
    } else if (s > 0) {
        src = r->part[0];
    }
    sc_status st = SC_OK;
    if (s + 1 < e->S &&
        !(dst = sc_ex_balloc(e, act_bytes(e, s + 1, mb), "activation", s + 1, mb, &st)))
        goto out;
    void *bonly = L->bonly ? r->part[L->nk] : NULL;
    st = e->wl->ops->forward(e->wl->ctx, s, mb, src, dst, sc_ex_kept_arg(e, r), bonly);
    if (st != SC_OK) {
        st = sc_ex_wl_fail(e, st, in);
        goto out;
    }
    if (dst && sc_prog_stage_device(e->pg, s + 1) != e->d) { /* broadcast next */
        *slot_out(e, s, mb) = dst;
        dst = NULL;
    } else if (dst) { /* a local hand-off: the new output replaces the old */
        void **box = &e->box[sc_ex_key(e, SC_DIR_ACT, s + 1, mb)];
        if (*box)
            sc_ex_bfree(e, *box, act_bytes(e, s + 1, mb));
        *box = dst;
        dst = NULL;
    }
out:
    if (own)
        sc_ex_bfree(e, src, act_bytes(e, s, mb));
    if (dst)
        sc_ex_bfree(e, dst, act_bytes(e, s + 1, mb));
    return st;
}
