/*
 * exec.c — the executor (exec.h): one device's stream, in order.
 */
#include "exec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct grp {
    size_t first;        /* index of its first instruction in the stream */
    int count;
    int started;
    void *h;             /* transport handle once started */
} grp;

typedef struct ex {
    const sc_prog *pg;
    int d, S, m;
    const sc_instr *in;
    size_t n;
    sc_backend *be;
    sc_transport *tp;
    const sc_workload *wl;
    double origin;
    sc_exec_out *out;
    void **box;          /* [2 S m] boundary tensors by key */
    int *rgroup;         /* [2 S m] group of the RECV that fills a key, -1 */
    void **kept, **bonly; /* [S m] activation records */
    sc_xfer *x;          /* [n] transfer descriptors, by instruction */
    grp *g;
    int ngroups, posted, head;
    size_t cur;          /* pool bytes in use */
} ex;

double sc_exec_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static sc_status failf(ex *e, sc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static sc_status failf(ex *e, sc_status st, const char *fmt, ...)
{
    if (!e->out->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->out->err, sizeof e->out->err, fmt, ap);
        va_end(ap);
    }
    return st;
}

static size_t key(const ex *e, int dir, int s, int mb)
{
    return ((size_t)dir * (size_t)e->S + (size_t)s) * (size_t)e->m + (size_t)mb;
}

/* Bytes of the tensor at a key: the activation into stage s, or the
 * gradient of stage s's output (= the activation into s + 1). */
static size_t kbytes(const ex *e, int dir, int s)
{
    return e->wl->ops->boundary_bytes(e->wl->ctx, dir == SC_DIR_ACT ? s : s + 1);
}

static void *balloc(ex *e, size_t bytes, const char *what, int s, int mb, sc_status *st)
{
    void *p = e->be->ops->alloc(e->be->ctx, bytes);
    if (!p)
        *st = failf(e, SC_ERR_NOMEM, "out of memory on d%d: %zu bytes for the %s of s%d mb%d",
                    e->d, bytes, what, s, mb);
    return p;
}

static void bfree(ex *e, void *p, size_t bytes)
{
    e->be->ops->free(e->be->ctx, p, bytes);
}

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
                return failf(e, st, "d%d: %s", e->d, t->errmsg(e->tp->ctx));
        }
        if (e->head <= until) {
            if ((st = t->wait(e->tp->ctx, e->d, G->h)) != SC_OK)
                return failf(e, st, "d%d: %s", e->d, t->errmsg(e->tp->ctx));
        } else {
            int done = 0;
            if ((st = t->test(e->tp->ctx, e->d, G->h, &done)) != SC_OK)
                return failf(e, st, "d%d: %s", e->d, t->errmsg(e->tp->ctx));
            if (!done)
                break;
        }
        t->release(e->tp->ctx, e->d, G->h);
        G->h = NULL;
        double now = sc_exec_now() - e->origin;
        for (int i = 0; i < G->count; i++) {
            sc_xfer *x = &e->x[G->first + (size_t)i];
            if (x->send) {
                bfree(e, x->buf, x->bytes);
                x->buf = NULL;
            }
            e->out->t1[G->first + (size_t)i] = now;
        }
        e->head++;
    }
    return SC_OK;
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
        size_t kk = key(e, in->dir, in->stage, in->mb);
        size_t bytes = kbytes(e, in->dir, in->stage);
        sc_xfer *x = &e->x[k];
        *x = (sc_xfer){.send = in->op == SC_OP_SEND, .peer = in->peer, .tag = (int)kk,
                       .bytes = bytes};
        if (x->send) {
            x->buf = e->box[kk]; /* the group owns it now; freed on completion */
            e->box[kk] = NULL;
            if (!x->buf)
                return failf(e, SC_ERR_PROGRAM, "d%d #%zu: SEND of data not produced", e->d, k);
        } else {
            if (!(x->buf = balloc(e, bytes, "received tensor", in->stage, in->mb, &st)))
                return st;
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

/* The boundary tensor at key kk, waiting for its RECV's group if any. */
static sc_status take(ex *e, int dir, int s, int mb, void **p)
{
    size_t kk = key(e, dir, s, mb);
    sc_status st;
    if (e->rgroup[kk] >= 0 && (st = pump(e, e->rgroup[kk])) != SC_OK)
        return st;
    if (!(*p = e->box[kk]))
        return failf(e, SC_ERR_PROGRAM, "d%d: the %s of s%d mb%d is not here when needed", e->d,
                     dir == SC_DIR_ACT ? "activation" : "gradient", s, mb);
    e->box[kk] = NULL;
    e->rgroup[kk] = -1;
    return SC_OK;
}

static sc_status wl_fail(ex *e, sc_status st, const sc_instr *in)
{
    char buf[64];
    sc_instr_format(in, buf, sizeof buf);
    return failf(e, st, "d%d: %s: %s", e->d, buf, e->wl->ops->errmsg(e->wl->ctx));
}

static sc_status compute(ex *e, const sc_instr *in)
{
    const struct sc_workload_ops *w = e->wl->ops;
    int s = in->stage, mb = in->mb;
    size_t sm = (size_t)s * (size_t)e->m + (size_t)mb, kb, bb;
    w->record_bytes(e->wl->ctx, s, &kb, &bb);
    sc_status st = SC_OK;
    void *src = NULL, *dst = NULL;
    if (in->op == SC_OP_F) {
        if (s > 0 && (st = take(e, SC_DIR_ACT, s, mb, &src)) != SC_OK)
            return st;
        if (e->kept[sm])
            return failf(e, SC_ERR_PROGRAM, "d%d: F s%d mb%d runs twice", e->d, s, mb);
        if (s + 1 < e->S && !(dst = balloc(e, kbytes(e, SC_DIR_ACT, s + 1), "activation", s + 1, mb, &st)))
            goto out;
        if (!(e->kept[sm] = balloc(e, kb, "activation record", s, mb, &st)))
            goto out;
        if (bb && !(e->bonly[sm] = balloc(e, bb, "activation record", s, mb, &st)))
            goto out;
        e->cur += kb + bb;
        if (e->cur > e->out->peak_bytes)
            e->out->peak_bytes = e->cur;
        if ((st = w->forward(e->wl->ctx, s, mb, src, dst, e->kept[sm], e->bonly[sm])) != SC_OK) {
            st = wl_fail(e, st, in);
            goto out;
        }
        if (dst) {
            e->box[key(e, SC_DIR_ACT, s + 1, mb)] = dst;
            dst = NULL;
        }
        goto out;
    }
    if (!e->kept[sm])
        return failf(e, SC_ERR_PROGRAM, "d%d: %s s%d mb%d before its F", e->d,
                     sc_op_name(in->op), s, mb);
    if (in->op == SC_OP_B || in->op == SC_OP_BW) {
        if (!e->bonly[sm] && bb)
            return failf(e, SC_ERR_PROGRAM, "d%d: B s%d mb%d runs twice", e->d, s, mb);
        if (s + 1 < e->S && (st = take(e, SC_DIR_GRAD, s, mb, &src)) != SC_OK)
            return st;
        if (s > 0 && !(dst = balloc(e, kbytes(e, SC_DIR_GRAD, s - 1), "gradient", s - 1, mb, &st)))
            goto out;
        st = w->backward_input(e->wl->ctx, s, mb, src, dst, e->kept[sm], e->bonly[sm]);
        if (st != SC_OK) {
            st = wl_fail(e, st, in);
            goto out;
        }
        if (dst) {
            e->box[key(e, SC_DIR_GRAD, s - 1, mb)] = dst;
            dst = NULL;
        }
        bfree(e, e->bonly[sm], bb);
        e->bonly[sm] = NULL;
        e->cur -= bb;
    }
    if (in->op == SC_OP_W || in->op == SC_OP_BW) {
        if ((st = w->backward_weight(e->wl->ctx, s, mb, e->kept[sm])) != SC_OK) {
            st = wl_fail(e, st, in);
            goto out;
        }
        bfree(e, e->kept[sm], kb);
        e->kept[sm] = NULL;
        e->cur -= kb;
    }
out:
    if (in->op == SC_OP_F) {
        bfree(e, src, src ? kbytes(e, SC_DIR_ACT, s) : 0);
        bfree(e, dst, dst ? kbytes(e, SC_DIR_ACT, s + 1) : 0);
    } else {
        bfree(e, src, src ? kbytes(e, SC_DIR_GRAD, s) : 0);
        bfree(e, dst, dst ? kbytes(e, SC_DIR_GRAD, s - 1) : 0);
    }
    return st;
}

static sc_status run(ex *e)
{
    sc_status st = SC_OK;
    for (size_t k = 0; k < e->n;) {
        const sc_instr *in = &e->in[k];
        if (sc_op_is_transfer(in->op)) {
            size_t len = 0;
            if ((st = post_group(e, k, &len)) != SC_OK || (st = pump(e, -1)) != SC_OK)
                return st;
            k += len;
            continue;
        }
        double t0 = sc_exec_now() - e->origin;
        if (sc_op_is_compute(in->op)) {
            st = compute(e, in);
        } else if (in->op == SC_OP_REDUCE) {
            if ((st = pump(e, e->posted - 1)) == SC_OK && e->wl->ops->reduce &&
                (st = e->wl->ops->reduce(e->wl->ctx)) != SC_OK)
                st = wl_fail(e, st, in);
        } else if (in->op == SC_OP_OPTIM) {
            if (e->wl->ops->optim && (st = e->wl->ops->optim(e->wl->ctx)) != SC_OK)
                st = wl_fail(e, st, in);
        }
        /* The pass's work may only be queued (cuda): wait for it, so that
         * its end is measured and a failure is reported at this pass. */
        if (!st && e->be->ops->sync && (st = e->be->ops->sync(e->be->ctx)) != SC_OK) {
            char buf[64];
            sc_instr_format(in, buf, sizeof buf);
            const char *why = e->be->ops->errmsg ? e->be->ops->errmsg(e->be->ctx) : NULL;
            st = failf(e, st, "d%d: %s: %s", e->d, buf, why ? why : "the backend failed");
        }
        if (st)
            return st;
        e->out->t0[k] = t0;
        e->out->t1[k] = e->out->end = sc_exec_now() - e->origin;
        k++;
        if ((st = pump(e, -1)) != SC_OK)
            return st;
    }
    /* A stream always ends with REDUCE, which waits; be safe anyway. */
    return pump(e, e->posted - 1);
}

sc_status sc_exec_device(const sc_prog *pg, int d, sc_backend *be, sc_transport *tp,
                         const sc_workload *wl, double origin, sc_exec_out *out)
{
    ex e = {.pg = pg, .d = d, .S = sc_prog_stages(pg), .m = sc_prog_microbatches(pg),
            .be = be, .tp = tp, .wl = wl, .origin = origin, .out = out};
    e.in = sc_prog_stream(pg, d, &e.n);
    out->err[0] = 0;
    out->peak_bytes = out->end_bytes = 0;
    out->end = 0;
    size_t SM = (size_t)e.S * (size_t)e.m;
    for (size_t k = 0; k < e.n; k++)
        if (sc_starts_group(e.in, k))
            e.ngroups++;
    e.box = calloc(2 * SM, sizeof(void *));
    e.rgroup = malloc(2 * SM * sizeof(int));
    e.kept = calloc(SM, sizeof(void *));
    e.bonly = calloc(SM, sizeof(void *));
    e.x = calloc(e.n + 1, sizeof(sc_xfer));
    e.g = calloc((size_t)e.ngroups + 1, sizeof(grp));
    sc_status st;
    if (!e.box || !e.rgroup || !e.kept || !e.bonly || !e.x || !e.g) {
        st = failf(&e, SC_ERR_NOMEM, "out of memory on d%d: executor tables", d);
    } else {
        for (size_t i = 0; i < 2 * SM; i++)
            e.rgroup[i] = -1;
        st = run(&e);
    }
    if (st && tp && tp->ops->abort)
        tp->ops->abort(tp->ctx, d, out->err);
    /* Whatever is left: records (a failure, or a stream without W), boundary
     * tensors, send buffers of groups that never completed. */
    if (e.kept)
        for (size_t i = 0; i < SM; i++) {
            size_t kb, bb;
            if (!e.kept[i] && !e.bonly[i])
                continue;
            wl->ops->record_bytes(wl->ctx, (int)(i / (size_t)e.m), &kb, &bb);
            out->end_bytes += (e.kept[i] ? kb : 0) + (e.bonly[i] ? bb : 0);
            bfree(&e, e.kept[i], kb);
            bfree(&e, e.bonly[i], bb);
        }
    /* Buffers of groups still in flight: with a transport that can abort
     * (local), the peers no longer touch them; one without abort (mpi) may
     * still write into them until the job is aborted, so they are left. */
    int inflight_safe = st == SC_OK || (tp && tp->ops->abort);
    if (e.box)
        for (size_t i = 0; i < 2 * SM; i++)
            if (e.box[i] && (inflight_safe || e.rgroup[i] < e.head))
                bfree(&e, e.box[i],
                      kbytes(&e, (int)(i / SM), (int)((i / (size_t)e.m) % (size_t)e.S)));
    if (e.g)
        for (int i = e.head; i < e.posted && inflight_safe; i++) {
            grp *G = &e.g[i];
            if (G->h)
                tp->ops->release(tp->ctx, d, G->h);
            for (int j = 0; j < G->count; j++) {
                sc_xfer *x = &e.x[G->first + (size_t)j];
                if (x->send)
                    bfree(&e, x->buf, x->bytes);
            }
        }
    free(e.box);
    free(e.rgroup);
    free(e.kept);
    free(e.bonly);
    free(e.x);
    free(e.g);
    return st;
}
