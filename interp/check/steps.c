/*
 * steps.c — every step a copy of the first (steps.h).
 */
#include "steps.h"
#include "ir/ir_impl.h"

#include <stdio.h>

static sc_status bad(sc_prog *pg, int d, size_t k, const char *why)
{
    char a[96];
    if (k < pg->stream[d].n)
        sc_instr_format(&pg->stream[d].v[k], a, sizeof a);
    else
        snprintf(a, sizeof a, "the end of its stream");
    return sc_fail(pg, SC_ERR_PROGRAM, "d%d #%zu (%s): %s", d, k, a, why);
}

/* Post-validation: the VALIDATE of step v comes after the OPTIM of step v
 * (step, the OPTIMs passed, is above v) and before that of step v+1. */
static sc_status validate_at(sc_prog *pg, int d, size_t k, int step, int *validated)
{
    if (pg->sync != SC_SYNC_POSTVAL)
        return bad(pg, d, k, "VALIDATE in a program without post-validation");
    if (*validated >= step)
        return bad(pg, d, k, "VALIDATE of a step whose OPTIM has not run");
    if (*validated < step - 1)
        return bad(pg, d, k, "a step ends before the one before it is validated");
    (*validated)++;
    return SC_OK;
}

/* Pass k of device d's stream, in step `step`, must be pass #next of step
 * 0 (ov: the order) with its microbatches moved by step·m, each half of a
 * pair. */
static sc_status repeats(sc_prog *pg, int d, size_t k, const sc_vec *ov, size_t next, int step)
{
    const sc_instr *in = &pg->stream[d].v[k];
    const sc_instr *o = next < ov->n ? &ov->v[next] : NULL;
    sc_instr a[2], b[2];
    int na = o ? sc_instr_halves(o, a) : 0, nb = sc_instr_halves(in, b);
    int same = na == nb;
    for (int i = 0; i < na && same; i++)
        same = a[i].op == b[i].op && a[i].stage == b[i].stage &&
               (long)a[i].mb + (long)step * pg->m == b[i].mb;
    if (same)
        return SC_OK;
    char why[160];
    snprintf(why, sizeof why, "step %d does not repeat step 0's passes (expected pass #%zu of "
             "step 0, microbatches moved by %d)", step, next, step * pg->m);
    return bad(pg, d, k, why);
}

sc_status sc_verify_steps(sc_prog *pg)
{
    int N = pg->steps;
    if (N == 1 && pg->sync != SC_SYNC_POSTVAL)
        return SC_OK; /* one step: nothing to compare, and no end asked for */
    for (int d = 0; d < pg->P; d++) {
        const sc_vec *sv = &pg->stream[d];
        const sc_vec *ov = &pg->order[d]; /* step 0's passes, in order */
        int step = 0, reduced = 0, validated = 0;
        sc_status st;
        size_t next = 0; /* the pass of step 0 the next pass must copy */
        char why[160];
        for (size_t k = 0; k < sv->n; k++) {
            const sc_instr *in = &sv->v[k];
            if (in->op == SC_OP_REDUCE || in->op == SC_OP_OPTIM) {
                int red = in->op == SC_OP_REDUCE;
                if (step >= N)
                    return bad(pg, d, k, "the program's steps have all ended before it");
                if (red == reduced)
                    return bad(pg, d, k, red ? "a second REDUCE in one step"
                                             : "OPTIM without a REDUCE before it");
                if (red && next < ov->n) {
                    snprintf(why, sizeof why, "step %d ends before its pass #%zu", step, next);
                    return bad(pg, d, k, why);
                }
                if (!red && pg->sync == SC_SYNC_POSTVAL && validated < step - 1) {
                    snprintf(why, sizeof why, "step %d ends before step %d is validated", step,
                             step - 1);
                    return bad(pg, d, k, why);
                }
                reduced = red;
                if (!red) {
                    step++;
                    next = 0;
                }
                continue;
            }
            if (in->op == SC_OP_VALIDATE) {
                if ((st = validate_at(pg, d, k, step, &validated)) != SC_OK)
                    return st;
                continue;
            }
            if (!sc_op_is_slot(in->op) || (in->flags & SC_IF_ROLLBACK))
                continue; /* a redone pass of the rollback path: not one of the step's */
            if (sc_op_has(in->op, SC_OPF_FRAC))
                continue; /* R: the lowering's, before the B it serves (not in an order) */
            if (pg->sync == SC_SYNC_POSTVAL && step > 0 && validated < step &&
                (!sc_op_is_fwd(in->op) || sc_prog_chunk(pg, in->stage) != 0)) {
                snprintf(why, sizeof why, "a pass of step %d other than a forward of the "
                         "device's first chunk before the VALIDATE of step %d", step, step - 1);
                return bad(pg, d, k, why);
            }
            if (reduced || step >= N)
                return bad(pg, d, k, "a pass between the REDUCE and the OPTIM of a step, or "
                                     "after the last step");
            if ((st = repeats(pg, d, k, ov, next, step)) != SC_OK)
                return st;
            next++;
        }
        if (step != N) {
            snprintf(why, sizeof why, "the stream holds %d of the program's %d steps", step, N);
            return bad(pg, d, sv->n, why);
        }
        if (pg->sync == SC_SYNC_POSTVAL && validated != N) {
            snprintf(why, sizeof why, "the stream validates %d of the program's %d steps",
                     validated, N);
            return bad(pg, d, sv->n, why);
        }
    }
    return SC_OK;
}
