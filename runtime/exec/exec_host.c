/*
 * exec_host.c — OFFLOAD, DROP and RELOAD in the executor (exec.h,
 * docs/semantics.md#host-copies): records moved to the backend's host pool and back.
 */
#include "exec_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *be_err(const ex *e)
{
    const char *m = e->be->ops->errmsg ? e->be->ops->errmsg(e->be->ctx) : NULL;
    return m && *m ? m : "the copy failed";
}

/* Waits for the pending copies of the moved parts (from first on), every
 * one even after a failure (a copy engine may still be writing into the
 * buffers). The copy's instruction (r->at) gets the copies' span as its
 * measured time when the backend says when they ran (its host-link row),
 * else its end as observed here. */
static sc_status wait_copies(ex *e, rec *r, int s, int first)
{
    const struct sc_backend_ops *o = e->be->ops;
    void **t = sc_ex_tickets(e, r);
    sc_status st = SC_OK;
    int pending = 0;
    double t0 = INFINITY, t1 = -INFINITY;
    for (int i = first; i < sc_ex_rlay(e, r)->n; i++) {
        if (!t[i])
            continue;
        double a = NAN, b = NAN;
        sc_status w = o->copy_wait_at ? o->copy_wait_at(e->be->ctx, t[i], &a, &b)
                                      : o->copy_wait(e->be->ctx, t[i]);
        if (w != SC_OK && st == SC_OK)
            st = sc_ex_failf(e, w, "d%d: host copy of s%d: %s", e->d, s, be_err(e));
        pending = 1;
        t0 = fmin(t0, a);
        t1 = fmax(t1, b);
        t[i] = NULL;
    }
    if (st != SC_OK || !pending)
        return st; /* no copy pending: done when posted */
    if (o->copy_wait_at && t0 <= t1) {
        e->out->t0[r->at] = t0 - e->origin;
        e->out->t1[r->at] = t1 - e->origin;
    } else {
        e->out->t1[r->at] = sc_exec_now() - e->origin;
    }
    return st;
}

/* A pass reads a record that came back: its copy must be complete; then
 * the host copy is freed. */
sc_status sc_ex_settle(ex *e, rec *r, int s)
{
    if (r->state != R_IN)
        return SC_OK;
    sc_status st = wait_copies(e, r, s, sc_ex_rlay(e, r)->n - r->moved);
    e->be->ops->host_free(e->be->ctx, r->host, r->host_bytes);
    e->host -= r->host_bytes;
    r->host = NULL;
    r->host_bytes = 0;
    r->moved = 0;
    r->state = R_HELD;
    return st;
}

/* The number of last parts of stage s's record whose share is nearest q;
 * at most all but the first (max: the first part is the stage's input,
 * which a recomputation starts from). */
static int last_parts(const layout *L, double q, int max)
{
    double total = (double)(L->kept + L->bonly), acc = 0, best = q;
    int moved = 0;
    for (int j = 1; j <= max; j++) {
        acc += (double)L->bytes[L->n - j];
        if (fabs(acc / total - q) < best - 1e-12) {
            best = fabs(acc / total - q);
            moved = j;
        }
    }
    return moved;
}

/* DROP with no OFFLOAD before it: frees the last parts for R. */
static sc_status drop_for_recompute(ex *e, rec *r, const sc_instr *in, size_t k)
{
    const layout *L = sc_ex_rlay(e, r);
    r->moved = last_parts(L, (double)in->frac / SC_FRAC_ONE, L->n - 1);
    sc_ex_free_parts(e, r, L->n - r->moved, L->n);
    r->state = R_DROPPED;
    r->at = k;
    return SC_OK;
}

sc_status sc_ex_recompute(ex *e, const sc_instr *in)
{
    int s = in->stage, mb = in->mb;
    rec *r = &e->rec[(size_t)s * (size_t)e->m + (size_t)mb];
    const layout *L = sc_ex_rlay(e, r);
    if (!r->part || r->state != R_DROPPED)
        return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: R s%d mb%d: the record was not dropped for "
                                              "it", e->d, s, mb);
    sc_status st = SC_OK;
    for (int i = L->n - r->moved; i < L->n; i++) {
        if (!(r->part[i] = sc_ex_balloc(e, L->bytes[i], "recomputed activation record", s, mb,
                                        &st)))
            return st;
        sc_ex_pool_add(e, L->bytes[i]);
    }
    /* The forward again, from the input the record kept (stage 0 makes its
     * own); its output goes to a scratch buffer: the next stage has it. */
    size_t ob = s + 1 < e->S ? sc_ex_kbytes(e, SC_DIR_ACT, s + 1, mb) : 0;
    void *dst = NULL, *bonly = L->bonly ? r->part[L->nk] : NULL;
    if (ob && !(dst = sc_ex_balloc(e, ob, "recomputed activation", s + 1, mb, &st)))
        return st;
    st = e->wl->ops->forward(e->wl->ctx, s, mb, s > 0 ? r->part[0] : NULL, dst,
                             sc_ex_kept_arg(e, r), bonly);
    if (dst)
        sc_ex_bfree(e, dst, ob);
    if (st != SC_OK)
        return sc_ex_wl_fail(e, st, in);
    r->moved = 0;
    r->state = R_HELD;
    return SC_OK;
}

/* OFFLOAD, DROP and RELOAD (docs/semantics.md#host-copies) on the backend's host pool. */
sc_status sc_ex_host_copy(ex *e, const sc_instr *in, size_t k)
{
    const struct sc_backend_ops *o = e->be->ops;
    int s = in->stage, mb = in->mb;
    rec *r = &e->rec[(size_t)s * (size_t)e->m + (size_t)mb];
    const layout *L = sc_ex_rlay(e, r);
    char name[96];
    sc_instr_format(in, name, sizeof name);
    if (!o->host_alloc || !o->host_free || !o->copy_start || !o->copy_wait)
        return sc_ex_failf(e, SC_ERR_ARG, "d%d: %s: the %s backend has no host pool for offload", e->d,
                     name, o->name);
    /* The copy out (OFFLOAD), the copy back (RELOAD), or neither: the wait
     * for the copy out (DROP), or with no copy out, a drop for R. */
    int out = sc_op_has(in->op, SC_OPF_OUT), back = sc_op_has(in->op, SC_OPF_IN);
    if (!out && !back && r->part && r->state == R_HELD)
        return drop_for_recompute(e, r, in, k);
    int want = out ? R_HELD : back ? R_HOST : R_OUT;
    if (!r->part || r->state != want)
        return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d #%zu: %s: the record is not where it should be",
                     e->d, k, name);
    void **t = sc_ex_tickets(e, r);
    sc_status st = SC_OK;
    if (out) {
        /* The last parts whose share of the record is nearest the fraction. */
        r->moved = last_parts(L, (double)in->frac / SC_FRAC_ONE, L->n);
        r->host_bytes = 0;
        for (int i = L->n - r->moved; i < L->n; i++)
            r->host_bytes += L->bytes[i];
        if (r->host_bytes && !(r->host = o->host_alloc(e->be->ctx, r->host_bytes)))
            return sc_ex_failf(e, SC_ERR_NOMEM, "out of host memory on d%d: %zu bytes to offload s%d mb%d",
                         e->d, r->host_bytes, s, mb);
        e->host += r->host_bytes;
        if (e->host > e->out->host_peak_bytes)
            e->out->host_peak_bytes = e->host;
        size_t off = 0;
        for (int i = L->n - r->moved; i < L->n && st == SC_OK; off += L->bytes[i++])
            if ((st = o->copy_start(e->be->ctx, 1, (char *)r->host + off, r->part[i],
                                    L->bytes[i], &t[i])) != SC_OK)
                st = sc_ex_failf(e, st, "d%d: %s: %s", e->d, name, be_err(e));
        r->state = R_OUT;
    } else if (!back) {
        if ((st = wait_copies(e, r, s, L->n - r->moved)) == SC_OK)
            sc_ex_free_parts(e, r, L->n - r->moved, L->n);
        r->state = R_HOST;
    } else {
        for (int i = L->n - r->moved; i < L->n; i++) {
            if (!(r->part[i] = sc_ex_balloc(e, L->bytes[i], "reloaded activation record", s, mb, &st)))
                return st;
            sc_ex_pool_add(e, L->bytes[i]);
        }
        size_t off = 0;
        for (int i = L->n - r->moved; i < L->n && st == SC_OK; off += L->bytes[i++])
            if ((st = o->copy_start(e->be->ctx, 0, r->part[i], (char *)r->host + off,
                                    L->bytes[i], &t[i])) != SC_OK)
                st = sc_ex_failf(e, st, "d%d: %s: %s", e->d, name, be_err(e));
        r->state = R_IN;
    }
    r->at = k;
    return st;
}

