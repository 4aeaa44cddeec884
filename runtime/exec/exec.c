/*
 * exec.c — the executor (exec.h): one device's stream, in order.
 */
#include "exec_impl.h"
#include "transport/backoff.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


/* Completes groups in order: all up to `until` (blocking), then as many
 * more as have completed already (never blocking). */
static sc_status pump(ex *e, int until)
{
    const struct sc_transport_ops *t = e->tp->ops;
    while (e->head < e->posted) {
        grp *G = &e->g[e->head];
        sc_status st;
        if (!G->started) {
            G->started = 1;
            if ((st = t->start(e->tp->ctx, e->d, &e->x[G->first], G->count, &G->h)) != SC_OK)
                return sc_ex_failf(e, st, "d%d: %s", e->d, t->errmsg(e->tp->ctx));
        }
        if (e->head <= until) {
            if ((st = t->wait(e->tp->ctx, e->d, G->h)) != SC_OK)
                return sc_ex_failf(e, st, "d%d: %s", e->d, t->errmsg(e->tp->ctx));
        } else {
            int done = 0;
            if ((st = t->test(e->tp->ctx, e->d, G->h, &done)) != SC_OK)
                return sc_ex_failf(e, st, "d%d: %s", e->d, t->errmsg(e->tp->ctx));
            if (!done)
                break;
        }
        t->release(e->tp->ctx, e->d, G->h);
        G->h = NULL;
        double now = sc_exec_now() - e->origin;
        for (int i = 0; i < G->count; i++) {
            sc_xfer *x = &e->x[G->first + (size_t)i];
            if (x->send) {
                sc_ex_bfree(e, x->buf, x->bytes);
                x->buf = NULL;
            }
            e->out->t1[G->first + (size_t)i] = now;
        }
        e->head++;
    }
    return SC_OK;
}

/* Waits until every group up to g has completed and collective
 * instruction c (or (size_t)-1) has. Without collectives, the transport's
 * blocking wait. With them, both channels are polled, so that each starts
 * its next posted group or collective as soon as the one before it has
 * completed while the device waits (docs/semantics.md#collectives), giving up after the
 * timeout. */
static sc_status wait_for(ex *e, int g, size_t c)
{
    if (!e->ch)
        return pump(e, g);
    const struct sc_transport_ops *t = e->tp->ops;
    double deadline = e->out->timeout_s > 0 ? sc_exec_now() + e->out->timeout_s : 0;
    for (sc_backoff b = {0};;) {
        unsigned tok = t->watch ? t->watch(e->tp->ctx, e->d) : 0;
        int moved = 0, head = e->head;
        sc_status st = pump(e, -1);
        if (!st)
            st = sc_cchan_progress(e->ch, &moved, e->out->err, sizeof e->out->err);
        if (st)
            return st;
        if (e->head > g && sc_cchan_complete(e->ch, c))
            return SC_OK;
        if (moved || e->head != head) {
            sc_backoff_reset(&b);
            if (deadline > 0)
                deadline = sc_exec_now() + e->out->timeout_s;
            continue;
        }
        if (deadline > 0 && sc_exec_now() > deadline)
            return sc_ex_failf(e, SC_ERR_RUNTIME, "d%d waited %g s for a %s; a peer is gone or stuck: "
                         "giving up", e->d, e->out->timeout_s,
                         e->head <= g ? "transfer group" : "collective");
        if (b.polls < SC_BACKOFF_SPINS || !t->idle || !t->idle(e->tp->ctx, e->d, tok))
            sc_backoff_wait(&b);
        else if (t->watch(e->tp->ctx, e->d) != tok) /* rung: spin again before sleeping */
            sc_backoff_reset(&b);
    }
}

/* A group that failed while it was being made (a RECV's buffer out of
 * memory, a SEND of nothing): its transfers first .. end are undone, each
 * SEND's buffer back in its box and each RECV's freed, so that the
 * device's cleanup frees what is left (the group was never posted). */
static void unmake_group(ex *e, size_t first, size_t end)
{
    for (size_t k = first; k < end; k++) {
        const sc_instr *in = &e->in[k];
        size_t kk = sc_ex_key(e, in->dir, in->stage, in->mb);
        sc_xfer *x = &e->x[k];
        if (x->send) {
            e->box[kk] = x->buf;
        } else {
            sc_ex_bfree(e, x->buf, x->bytes);
            e->box[kk] = NULL;
            e->rgroup[kk] = -1;
        }
        x->buf = NULL;
    }
}

/* Posts the group of transfers starting at instruction k; returns its size. */
static sc_status post_group(ex *e, size_t k, size_t *len)
{
    grp *G = &e->g[e->posted];
    G->first = k;
    G->count = 0;
    double now = sc_exec_now() - e->origin;
    sc_status st = SC_OK;
    for (size_t k0 = k; k < e->n && sc_op_is_transfer(e->in[k].op) &&
                        (k == k0 || !sc_starts_group(e->in, k));
         k++) {
        const sc_instr *in = &e->in[k];
        size_t kk = sc_ex_key(e, in->dir, in->stage, in->mb);
        size_t bytes = sc_ex_kbytes(e, in->dir, in->stage, in->mb);
        sc_xfer *x = &e->x[k];
        *x = (sc_xfer){.send = sc_op_has(in->op, SC_OPF_OUT), .peer = in->peer, .tag = (int)kk,
                       .bytes = bytes};
        if (x->send) {
            x->buf = e->box[kk]; /* the group owns it now; freed on completion */
            e->box[kk] = NULL;
            if (!x->buf) {
                unmake_group(e, G->first, k);
                return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d #%zu: SEND of data not produced", e->d, k);
            }
        } else {
            if (!(x->buf = sc_ex_balloc(e, bytes, "received tensor", in->stage, in->mb, &st))) {
                unmake_group(e, G->first, k);
                return st;
            }
            e->box[kk] = x->buf;
            e->rgroup[kk] = e->posted;
        }
        e->out->t0[k] = now;
        G->count++;
    }
    *len = (size_t)G->count;
    e->posted++;
    return SC_OK;
}

/* WAIT (instruction k): until the group that holds its SEND, the latest
 * matching SEND before k, has completed (docs/semantics.md#waits). */
static sc_status wait_send(ex *e, const sc_instr *in, size_t k)
{
    size_t at = k;
    while (at-- > 0) {
        const sc_instr *x = &e->in[at];
        if (sc_op_is_send(x->op) && x->dir == in->dir && x->stage == in->stage &&
            x->mb == in->mb && x->peer == in->peer)
            break;
    }
    if (at == (size_t)-1)
        return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d #%zu: WAIT without its SEND", e->d, k);
    for (int g = e->head; g < e->posted; g++)
        if (e->g[g].first <= at && at < e->g[g].first + (size_t)e->g[g].count)
            return wait_for(e, g, (size_t)-1);
    return SC_OK; /* its group has completed */
}

/* A compute pass starts when what it reads is here: the group of the RECV that
 * brings its input, and the copies back of a reloaded record
 * (docs/semantics.md#the-semantics, docs/semantics.md#host-copies). Waiting
 * for them before the pass's clock starts keeps the wait out of its measured
 * time, as the simulator counts it (a profile reads these times,
 * docs/costs.md#profiling). */
static sc_status input_ready(ex *e, const sc_instr *in);

static sc_status inputs_ready(ex *e, const sc_instr *in)
{
    sc_instr h[2];
    int n = sc_instr_halves(in, h);
    sc_status st = SC_OK;
    for (int i = 0; i < n && !st; i++)
        st = input_ready(e, &h[i]);
    return st;
}

static sc_status input_ready(ex *e, const sc_instr *in)
{
    int s = in->stage, mb = in->mb, dir = -1;
    if (sc_op_is_fwd(in->op) && s > sc_prog_first_stage(e->pg, mb))
        dir = SC_DIR_ACT;
    else if (sc_op_is_bgrad(in->op) && s < sc_prog_last_stage(e->pg, mb))
        dir = SC_DIR_GRAD;
    sc_status st;
    if (dir >= 0) {
        size_t kk = sc_ex_key(e, dir, s, mb);
        if (e->rgroup[kk] >= 0 && (st = wait_for(e, e->rgroup[kk], (size_t)-1)) != SC_OK)
            return st;
    }
    rec *r = &e->rec[(size_t)s * (size_t)e->m + (size_t)mb];
    return !sc_op_is_fwd(in->op) && r->part && r->state == R_IN ? sc_ex_settle(e, r, s) : SC_OK;
}

/* A vocabulary pass (exec.h): the one that allocates a record (S, by its
 * memory column) takes it from the pool, the one that frees it (T) gives
 * it back, as F and W do a stage's. */
static sc_status vocab(ex *e, const sc_instr *in)
{
    const struct sc_workload_ops *w = e->wl->ops;
    int mb = in->mb;
    if (!w->vocab_pass)
        return sc_ex_failf(e, SC_ERR_ARG, "d%d: %s mb%d: the workload has no vocabulary passes",
                           e->d, sc_op_name(in->op), mb);
    if (!e->vrec && !(e->vrec = calloc((size_t)e->m, sizeof(void *))))
        return sc_ex_failf(e, SC_ERR_NOMEM, "out of memory on d%d: executor tables", e->d);
    sc_status st = SC_OK;
    void *r = NULL;
    sc_op_mem_effect me = sc_op_mem_of(in->op);
    if (me == SC_OPM_ALLOC) {
        e->vbytes = w->vocab_record_bytes ? w->vocab_record_bytes(e->wl->ctx) : 0;
        if (e->vrec[mb])
            return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: S mb%d runs twice", e->d, mb);
        if (!(r = sc_ex_balloc(e, e->vbytes ? e->vbytes : 1, "record of S", -1, mb, &st)))
            return st;
        sc_ex_pool_add(e, e->vbytes);
        e->vrec[mb] = r;
    } else if (me != SC_OPM_NONE && !(r = e->vrec[mb])) {
        return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: T mb%d before its S", e->d, mb);
    }
    if ((st = w->vocab_pass(e->wl->ctx, in->op, mb, r)) != SC_OK)
        return sc_ex_wl_fail(e, st, in);
    if (me != SC_OPM_NONE && me != SC_OPM_ALLOC) {
        sc_ex_bfree(e, r, e->vbytes ? e->vbytes : 1);
        e->cur -= e->vbytes;
        e->vrec[mb] = NULL;
    }
    return SC_OK;
}

/* An end-of-step instruction (class SC_OPK_STEP): REDUCE, OPTIM, VALIDATE. */
static sc_status step_end(ex *e, const sc_instr *in)
{
    const struct sc_workload_ops *w = e->wl->ops;
    sc_status st = SC_OK;
    switch ((sc_op)in->op) {
    case SC_OP_REDUCE:
        if ((st = wait_for(e, e->posted - 1, (size_t)-1)) == SC_OK && w->reduce &&
            (st = w->reduce(e->wl->ctx)) != SC_OK)
            st = sc_ex_wl_fail(e, st, in);
        if (!st && w->grad_state && (st = w->grad_state(e->wl->ctx, e->step, e->state)))
            st = sc_ex_wl_fail(e, st, in);
        return st;
    case SC_OP_OPTIM:
        if (w->optim_step)
            st = w->optim_step(e->wl->ctx, e->step, e->state);
        else if (w->optim)
            st = w->optim(e->wl->ctx);
        if (st)
            st = sc_ex_wl_fail(e, st, in);
        e->step++;
        return st;
    case SC_OP_VALIDATE: return sc_ex_validate(e, in);
    default:
        return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: no executor for %s", e->d,
                           sc_op_name(in->op));
    }
}

/* run --graph (exec_graph.c): at the start of step 2 its capture starts;
 * at its REDUCE, once every group is queued, it ends and the graph runs;
 * at the start of a later step the graph runs instead of the step's
 * passes and transfers, and *k moves on to the step's REDUCE. */
static sc_status graph_point(ex *e, size_t *k)
{
    int s = e->step;
    sc_status st = SC_OK;
    if (s < 1 || s >= e->nsteps)
        return SC_OK;
    if (*k == e->gstart[s] && s == 1 && !e->capturing && (st = sc_ex_graph_capture(e)))
        return st;
    if (*k == e->gstart[s] && s >= 2) {
        double t0 = sc_exec_now() - e->origin;
        if ((st = sc_ex_graph_launch(e, s)) != SC_OK)
            return st;
        double t1 = sc_exec_now() - e->origin;
        for (size_t i = *k; i < e->gred[s]; i++) {
            e->out->t0[i] = t0;
            e->out->t1[i] = t1;
        }
        *k = e->gred[s];
        return SC_OK;
    }
    if (e->capturing && *k == e->gred[s]) {
        if ((st = wait_for(e, e->posted - 1, (size_t)-1)) != SC_OK ||
            (st = sc_ex_graph_end(e)) != SC_OK)
            return st;
        return sc_ex_graph_launch(e, s);
    }
    return SC_OK;
}

static sc_status run(ex *e)
{
    sc_status st = SC_OK;
    for (size_t k = 0; k < e->n;) {
        if (e->nsteps && (st = graph_point(e, &k)) != SC_OK)
            return st;
        const sc_instr *in = &e->in[k];
        if (sc_op_is_transfer(in->op)) {
            size_t len = 0;
            if ((st = post_group(e, k, &len)) != SC_OK || (st = pump(e, -1)) != SC_OK)
                return st;
            k += len;
            continue;
        }
        if ((in->flags & SC_IF_ROLLBACK) && !e->rollback &&
            (sc_op_is_compute(in->op) || sc_op_is_coll(in->op))) {
            /* The rollback path of a VALIDATE that found the step right. */
            e->out->t0[k] = e->out->t1[k] = sc_exec_now() - e->origin;
            if (sc_op_is_coll(in->op) &&
                (st = sc_cchan_skip(e->ch, k, e->out->err, sizeof e->out->err)) != SC_OK)
                return st;
            k++;
            continue;
        }
        if (sc_op_is_coll(in->op)) {
            e->out->t0[k] = sc_exec_now() - e->origin;
            if ((st = sc_cchan_post(e->ch, k, e->out->err, sizeof e->out->err)) != SC_OK)
                return st;
            k++;
            continue;
        }
        /* The collective it reads, if any (posted earlier on this device). */
        size_t need = sc_cchan_need(e->ch, k);
        if (need != (size_t)-1 && (st = wait_for(e, -1, need)) != SC_OK)
            return st;
        if (sc_op_is_slot(in->op) && !(in->flags & SC_IF_ROLLBACK) &&
            (st = inputs_ready(e, in)) != SC_OK)
            return st;
        double t0 = sc_exec_now() - e->origin, c0 = e->out->cpu ? sc_exec_cpu_now() : 0;
        switch (sc_op_class_of(in->op)) { /* what runs on the compute stream */
        case SC_OPK_STAGE:
            if (sc_op_has(in->op, SC_OPF_FRAC)) /* R: part of a record again */
                st = sc_ex_recompute(e, in);
            else
                st = in->flags & SC_IF_ROLLBACK ? sc_ex_redo_forward(e, in) : sc_ex_compute(e, in);
            break;
        case SC_OPK_PAIR: st = sc_ex_pair(e, in); break;
        case SC_OPK_VOCAB: st = vocab(e, in); break;
        case SC_OPK_HOST: st = sc_ex_host_copy(e, in, k); break;
        case SC_OPK_FSDP: break; /* one replica: its parameters are whole (docs/fsdp.md#runtime) */
        case SC_OPK_STEP: st = step_end(e, in); break;
        case SC_OPK_WAIT: st = wait_send(e, in, k); break;
        case SC_OPK_XFER: case SC_OPK_COLL: break; /* posted above, on their channels */
        }
        /* The pass's work may only be queued (cuda): wait for it, so that
         * its end is measured and a failure is reported at this pass (while
         * captured: nothing waits, a failure to queue is reported). */
        if (!st && e->be->ops->sync &&
            (e->capturing ? (e->be->ops->errmsg && e->be->ops->errmsg(e->be->ctx))
                          : (st = e->be->ops->sync(e->be->ctx)) != SC_OK)) {
            st = SC_ERR_RUNTIME;
            char buf[64];
            sc_instr_format(in, buf, sizeof buf);
            const char *why = e->be->ops->errmsg ? e->be->ops->errmsg(e->be->ctx) : NULL;
            st = sc_ex_failf(e, st, "d%d: %s: %s", e->d, buf, why ? why : "the backend failed");
        }
        if (st)
            return st;
        e->out->t0[k] = t0;
        e->out->t1[k] = e->out->end = sc_exec_now() - e->origin;
        if (e->out->cpu)
            e->out->cpu[k] = sc_exec_cpu_now() - c0;
        k++;
        if ((st = pump(e, -1)) != SC_OK)
            return st;
        int moved = 0;
        if (e->ch && (st = sc_cchan_progress(e->ch, &moved, e->out->err, sizeof e->out->err)))
            return st;
    }
    /* A stream always ends with REDUCE, which waits; be safe anyway. The
     * collectives still running are waited for too. */
    if ((st = wait_for(e, e->posted - 1, (size_t)-1)) != SC_OK)
        return st;
    while (!sc_cchan_idle(e->ch)) {
        size_t last = (size_t)-1;
        for (size_t k = e->n; k-- > 0 && last == (size_t)-1;)
            if (sc_op_is_coll(e->in[k].op))
                last = k;
        if ((st = wait_for(e, -1, last)) != SC_OK)
            return st;
    }
    return SC_OK;
}

size_t sc_exec_table_bytes(const sc_prog *pg, int d)
{
    size_t n, ngroups = 0, S = (size_t)sc_prog_stages(pg);
    size_t SM = S * (size_t)sc_prog_microbatches(pg);
    size_t NL = sc_prog_lengths(pg) ? (size_t)sc_prog_microbatches(pg) : 1; /* layouts per stage */
    const sc_instr *in = sc_prog_stream(pg, d, &n);
    for (size_t k = 0; k < n; k++)
        ngroups += sc_starts_group(in, k) != 0;
    size_t vrec = sc_vocab_split(sc_prog_vocab(pg)) ? (size_t)sc_prog_stream_microbatches(pg) : 0;
    return 2 * SM * (sizeof(void *) + sizeof(int)) + SM * sizeof(rec) + vrec * sizeof(void *) + S * NL * sizeof(layout) +
           (n + 1) * (sizeof(sc_xfer) + 2 * sizeof(size_t) + 1) + (ngroups + 1) * sizeof(grp);
}

sc_status sc_exec_device(const sc_prog *pg, int d, sc_backend *be, sc_transport *tp,
                         const sc_workload *wl, double origin, sc_exec_out *out)
{
    ex e = {.pg = pg, .d = d, .S = sc_prog_stages(pg), .m = sc_prog_stream_microbatches(pg),
            .be = be, .tp = tp, .wl = wl, .origin = origin, .out = out};
    e.in = sc_prog_stream(pg, d, &e.n);
    out->err[0] = 0;
    out->peak_bytes = out->end_bytes = out->host_peak_bytes = out->host_end_bytes = 0;
    out->end = 0;
    size_t SM = (size_t)e.S * (size_t)e.m;
    for (size_t k = 0; k < e.n; k++)
        if (sc_starts_group(e.in, k))
            e.ngroups++;
    e.box = calloc(2 * SM, sizeof(void *));
    e.rgroup = malloc(2 * SM * sizeof(int));
    e.rec = calloc(SM, sizeof(rec));
    e.nl = sc_prog_lengths(pg) || sc_prog_slices(pg) > 1 ? sc_prog_microbatches(pg)
                                                          : 1; /* lengths.md, slices.md */
    e.lay = calloc((size_t)e.S * (size_t)e.nl, sizeof(layout));
    e.x = calloc(e.n + 1, sizeof(sc_xfer));
    e.g = calloc((size_t)e.ngroups + 1, sizeof(grp));
    sc_status st;
    if (!e.box || !e.rgroup || !e.rec || !e.lay || !e.x || !e.g ||
        (st = sc_ex_layouts(&e)) != SC_OK) {
        st = sc_ex_failf(&e, SC_ERR_NOMEM, "out of memory on d%d: executor tables", d);
    } else if ((st = sc_ex_redo_init(&e)) != SC_OK || (st = sc_ex_graph_init(&e)) != SC_OK ||
               (st = sc_cchan_new(pg, d, out, tp, &e.cwl, origin, out->t1, &e.ch, out->err,
                                  sizeof out->err)) != SC_OK) {
        /* the message is in out->err */
    } else {
        for (size_t i = 0; i < 2 * SM; i++)
            e.rgroup[i] = -1;
        st = run(&e);
    }
    if (st && tp && tp->ops->abort)
        tp->ops->abort(tp->ctx, d, out->err);
    if (st) /* after the abort: device 0 may be waiting for a transfer */
        sc_ex_graph_failed(&e);
    /* Whatever is left: records (a failure, or a stream without W), boundary
     * tensors, send buffers of groups that never completed. */
    for (size_t i = 0; e.rec && i < SM; i++) {
        rec *r = &e.rec[i];
        if (!r->part)
            continue;
        void **t = sc_ex_tickets(&e, r);
        for (int j = 0; j < sc_ex_rlay(&e, r)->n; j++)
            if (t[j])
                be->ops->copy_wait(be->ctx, t[j]); /* the copy must end before its buffers */
        size_t before = e.cur;
        sc_ex_free_parts(&e, r, 0, sc_ex_rlay(&e, r)->n);
        out->end_bytes += before - e.cur;
        out->host_end_bytes += r->host_bytes;
        if (r->host)
            be->ops->host_free(be->ctx, r->host, r->host_bytes);
        free(r->part);
    }
    /* Buffers of groups still in flight: with a transport that can abort
     * (local), the peers no longer touch them; one without abort (mpi) may
     * still write into them until the job is aborted, so they are left. */
    int inflight_safe = st == SC_OK || (tp && tp->ops->abort);
    if (e.box)
        for (size_t i = 0; i < 2 * SM; i++)
            if (e.box[i] && (inflight_safe || e.rgroup[i] < e.head))
                sc_ex_bfree(&e, e.box[i],
                      sc_ex_kbytes(&e, (int)(i / SM), (int)((i / (size_t)e.m) % (size_t)e.S),
                                   (int)(i % (size_t)e.m)));
    if (e.g)
        for (int i = e.head; i < e.posted && inflight_safe; i++) {
            grp *G = &e.g[i];
            if (G->h)
                tp->ops->release(tp->ctx, d, G->h);
            for (int j = 0; j < G->count; j++) {
                sc_xfer *x = &e.x[G->first + (size_t)j];
                if (x->send)
                    sc_ex_bfree(&e, x->buf, x->bytes);
            }
        }
    sc_ex_lane_free(&e);
    sc_cchan_free(e.ch);
    if (inflight_safe)
        sc_ex_redo_free(&e);
    else { /* buffers a collective may still write into stay */
        free(e.redo_in);
        free(e.redo_out);
    }
    for (int i = 0; e.vrec && i < e.m; i++) /* records of S a failure left */
        if (e.vrec[i]) {
            sc_ex_bfree(&e, e.vrec[i], e.vbytes ? e.vbytes : 1);
            out->end_bytes += e.vbytes;
        }
    free(e.vrec);
    free(e.box);
    free(e.rgroup);
    free(e.rec);
    for (size_t i = 0; e.lay && i < (size_t)e.S * (size_t)e.nl; i++)
        free(e.lay[i].bytes);
    free(e.lay);
    free(e.x);
    free(e.g);
    free(e.gstart);
    free(e.gred);
    return st;
}
