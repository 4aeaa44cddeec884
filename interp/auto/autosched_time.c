/*
 * autosched_time.c — the dataflow timing of a candidate of the automatic
 * scheduler (autosched_impl.h): the timing of dataflow.c on the
 * candidate's flat orders, with the memory limit checked on the way.
 */
#include "autosched_impl.h"

#include <math.h>

static int dep_ready(const sc_actx *c, int d, const sc_instr *in, double *ready)
{
    *ready = sc_dep_ready(c->pg, d, in, c->endF, c->endB);
    return *ready >= 0;
}

static void wake(sc_actx *c, int *n, int d)
{
    if (!c->queued[d]) {
        c->queued[d] = 1;
        c->stack[(*n)++] = d;
    }
}

int sc_auto_time(sc_actx *c, const sc_instr *ord, double *makespan, double *span)
{
    sc_prog *pg = c->pg;
    int P = c->P, n = 0;
    for (size_t k = 0; k < (size_t)c->S * (size_t)c->m; k++)
        c->endF[k] = c->endB[k] = -1;
    for (int d = 0; d < P; d++) {
        c->pc[d] = 0;
        c->e[d] = 0;
        c->dt[d] = -1; /* first start */
        c->cur[d] = 0;
        c->queued[d] = 0;
        double mem = 0; /* memory depends on the order only */
        for (size_t k = c->off[d]; k < c->off[d + 1]; k++) {
            mem += sc_auto_dmem(pg, ord[k].op, ord[k].stage);
            if (mem > c->limit)
                return -2;
        }
    }
    for (int d = P - 1; d >= 0; d--)
        wake(c, &n, d);
    size_t done = 0;
    while (n > 0) {
        int d = c->stack[--n];
        c->queued[d] = 0;
        size_t len = c->off[d + 1] - c->off[d];
        while (c->pc[d] < len) {
            const sc_instr *in = &ord[c->off[d] + c->pc[d]];
            double t = c->e[d], r;
            if (!dep_ready(c, d, in, &r))
                break;
            t = fmax(t, r);
            if (c->dt[d] < 0)
                c->dt[d] = t;
            double end = t + sc_auto_cost(pg, in->op, in->stage);
            c->e[d] = end;
            c->pc[d]++;
            done++;
            size_t sm = SC_SM(pg, in->stage, in->mb);
            if (sc_op_is_fwd(in->op)) {
                c->endF[sm] = end;
                if (in->stage + 1 < c->S)
                    wake(c, &n, pg->stage_dev[in->stage + 1]);
            } else if (sc_op_is_bgrad(in->op)) {
                c->endB[sm] = end;
                if (in->stage > 0)
                    wake(c, &n, pg->stage_dev[in->stage - 1]);
            }
        }
    }
    if (done < c->N)
        return -1;
    double mk = 0, sp = -1;
    c->spans = 0;
    for (int d = 0; d < P; d++) {
        double x = c->e[d] - fmax(c->dt[d], 0);
        mk = fmax(mk, c->e[d]);
        c->spans += x;
        if (x > sp) {
            sp = x;
            c->crit = d;
        }
    }
    *makespan = mk;
    *span = sp;
    return 0;
}

