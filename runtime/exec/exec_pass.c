/*
 * exec_pass.c — one compute pass of a stage (exec_impl.h): begin, run, end,
 * and the three in turn (sc_ex_compute).
 */
#include "exec_impl.h"

#include <stdlib.h>

/* The boundary tensor at key kk. Its RECV's group has completed: the
 * executor waited for it before the pass (inputs_ready, exec.c). */
static sc_status take(ex *e, int dir, int s, int mb, void **p)
{
    size_t kk = sc_ex_key(e, dir, s, mb);
    if (e->rgroup[kk] >= e->head)
        return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: the %s of s%d mb%d is read before its "
                           "group completed", e->d, dir == SC_DIR_ACT ? "activation" : "gradient",
                           s, mb);
    if (!(*p = e->box[kk]))
        return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: the %s of s%d mb%d is not here when needed",
                           e->d, dir == SC_DIR_ACT ? "activation" : "gradient", s, mb);
    e->box[kk] = NULL;
    e->rgroup[kk] = -1;
    return SC_OK;
}

/* A pass in three parts, so that the two halves of an overlapped pair can
 * run at once (exec_pair.c): begin takes what it reads and allocates what
 * it writes, run calls the workload, end hands the outputs on and frees.
 * begin and end change the executor's state (one thread); run touches only
 * the job and the workload. A job whose begin failed still goes to end,
 * which frees what begin took. */
sc_status sc_ex_begin(ex *e, sc_job *j, const sc_instr *in)
{
    int s = in->stage, mb = in->mb;
    *j = (sc_job){.in = *in, .s = s, .mb = mb, .fwd = sc_op_is_fwd(in->op),
                  .first = sc_prog_first_stage(e->pg, mb), .last = sc_prog_last_stage(e->pg, mb)};
    rec *r = j->r = &e->rec[(size_t)s * (size_t)e->m + (size_t)mb];
    const layout *L = sc_ex_rlay(e, r);
    sc_status st = SC_OK;
    if (j->fwd) {
        if (s > j->first && (st = take(e, SC_DIR_ACT, s, mb, &j->src)) != SC_OK)
            return st;
        if (in->flags & SC_IF_REDO_IN) { /* its producer was redone: the new input */
            void *redone = sc_ex_redo_input(e, s, mb);
            if (redone) {
                sc_ex_bfree(e, j->src, sc_ex_kbytes(e, SC_DIR_ACT, s, mb));
                j->src = redone;
            }
        }
        if (r->part)
            return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: F s%d mb%d runs twice", e->d, s, mb);
        if (s < j->last &&
            !(j->dst = sc_ex_balloc(e, sc_ex_kbytes(e, SC_DIR_ACT, s + 1, mb), "activation", s + 1,
                                    mb, &st)))
            return st;
        if (!(r->part = calloc(2 * (size_t)L->n, sizeof(void *))))
            return sc_ex_failf(e, SC_ERR_NOMEM, "out of memory on d%d: record table", e->d);
        r->state = R_HELD;
        for (int i = 0; i < L->n; i++) {
            if (!(r->part[i] = sc_ex_balloc(e, L->bytes[i], "activation record", s, mb, &st)))
                return st;
            sc_ex_pool_add(e, L->bytes[i]);
        }
        j->kept = sc_ex_kept_arg(e, r);
        j->bonly = L->bonly ? r->part[L->nk] : NULL;
        return SC_OK;
    }
    if (!r->part)
        return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: %s s%d mb%d before its F", e->d,
                           sc_op_name(in->op), s, mb);
    if (r->state != R_HELD && r->state != R_IN)
        return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: %s s%d mb%d while its record is on the host",
                           e->d, sc_op_name(in->op), s, mb);
    if ((st = sc_ex_settle(e, r, s)) != SC_OK)
        return st;
    j->kept = sc_ex_kept_arg(e, r);
    j->bonly = L->bonly ? r->part[L->nk] : NULL;
    if (sc_op_is_bgrad(in->op)) {
        if (L->bonly && !r->part[L->nk])
            return sc_ex_failf(e, SC_ERR_PROGRAM, "d%d: B s%d mb%d runs twice", e->d, s, mb);
        if (s < j->last && (st = take(e, SC_DIR_GRAD, s, mb, &j->src)) != SC_OK)
            return st;
        if (s > j->first &&
            !(j->dst = sc_ex_balloc(e, sc_ex_kbytes(e, SC_DIR_GRAD, s - 1, mb), "gradient", s - 1,
                                    mb, &st)))
            return st;
    }
    return SC_OK;
}

sc_status sc_ex_run(sc_job *j, const struct sc_workload_ops *w, void *ctx)
{
    const sc_instr *in = &j->in;
    if (j->fwd)
        return j->st = w->forward(ctx, j->s, j->mb, j->src, j->dst, j->kept, j->bonly);
    j->st = SC_OK;
    if (sc_op_is_bgrad(in->op))
        j->st = w->backward_input(ctx, j->s, j->mb, j->src, j->dst, j->kept, j->bonly);
    if (!j->st && sc_op_is_wgrad(in->op))
        j->st = w->backward_weight(ctx, j->s, j->mb, j->kept);
    return j->st;
}

sc_status sc_ex_end(ex *e, sc_job *j, sc_status st)
{
    int s = j->s, mb = j->mb, dir = j->fwd ? SC_DIR_ACT : SC_DIR_GRAD;
    const layout *L = sc_ex_rlay(e, j->r);
    if (st == SC_OK && j->dst) { /* the output, for the next stage's pass or its SEND */
        e->box[sc_ex_key(e, dir, j->fwd ? s + 1 : s - 1, mb)] = j->dst;
        j->dst = NULL;
    }
    if (st == SC_OK && j->fwd && sc_prog_forward_only(e->pg)) /* no backward reads the record */
        sc_ex_free_parts(e, j->r, 0, L->n); /* (fwdonly.h); r->part stays: F runs once */
    if (st == SC_OK && !j->fwd && sc_op_is_bgrad(j->in.op))
        sc_ex_free_parts(e, j->r, L->nk, L->n); /* b_only */
    if (st == SC_OK && sc_op_is_wgrad(j->in.op)) {
        sc_ex_free_parts(e, j->r, 0, L->nk);
        free(j->r->part);
        j->r->part = NULL;
    }
    sc_ex_bfree(e, j->src, j->src ? sc_ex_kbytes(e, dir, s, mb) : 0);
    sc_ex_bfree(e, j->dst, j->dst ? sc_ex_kbytes(e, dir, j->fwd ? s + 1 : s - 1, mb) : 0);
    j->src = j->dst = NULL;
    return st;
}

sc_status sc_ex_compute(ex *e, const sc_instr *in)
{
    sc_job j;
    sc_status st = sc_ex_begin(e, &j, in);
    if (st == SC_OK && (st = sc_ex_run(&j, e->wl->ops, e->wl->ctx)) != SC_OK)
        st = sc_ex_wl_fail(e, st, in);
    return sc_ex_end(e, &j, st);
}

