/*
 * dataflow.c — ideal timing of the orders (dataflow.h). Linear in the
 * number of passes: a device runs until it meets a dependency not yet done
 * and is woken when the pass it may wait for completes.
 */
#include "dataflow.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct flow {
    sc_prog *pg;
    double *endF, *endB; /* [S*m], < 0 while not done */
    /* Vocabulary passes (docs/vocab.md): per kind (S, T, E, EW) and
     * microbatch, how many devices ran it and the latest end. */
    int *vcnt;           /* [4 m] */
    double *vend;        /* [4 m] */
    size_t *base, *pc;
    double *tfree;
    int *stack, *queued, nstack;
    double *start, *end;
    size_t *seq, nseq;
} flow;

/* The dependency of pass `in` on device d: its end time (< 0: not done)
 * and, through *dep, the pass it is. Returns 0 when there is none. */
static int dependency(const flow *f, int d, const sc_instr *in, double *ready, sc_instr *dep)
{
    int dop, ds;
    if (!sc_pass_dep(f->pg, in, &dop, &ds))
        return 0;
    *dep = (sc_instr){.op = (uint8_t)dop, .stage = ds, .mb = in->mb, .peer = -1};
    *ready = sc_dep_ready(f->pg, d, in, f->endF, f->endB);
    return 1;
}

static void wake(flow *f, int d)
{
    if (!f->queued[d]) {
        f->queued[d] = 1;
        f->stack[f->nstack++] = d;
    }
}

/* The dependency of pass `in` on every device's vocabulary pass of its
 * microbatch (sc_vocab_all_dep): when its data is there (the last of them
 * plus the collectives it reads), < 0 while some device has not run it,
 * 0 when there is none. *op is the pass kind. */
static double all_dep(const flow *f, const sc_instr *in, int *op)
{
    int part;
    if (!f->vcnt || !sc_vocab_all_dep(f->pg, in, op, &part))
        return 0;
    size_t i = (size_t)sc_op_vocab_index(*op) * (size_t)f->pg->m + (size_t)in->mb;
    if (f->vcnt[i] < f->pg->P)
        return -1;
    return f->vend[i] + sc_vocab_chain_time(f->pg, *op, part);
}

static void wake_all(flow *f)
{
    for (int e = 0; e < f->pg->P; e++)
        wake(f, e);
}

static void run_device(flow *f, int d)
{
    sc_prog *pg = f->pg;
    const sc_vec *ov = &pg->order[d];
    while (f->pc[d] < ov->n) {
        const sc_instr *in = &ov->v[f->pc[d]];
        double t = f->tfree[d], ready;
        sc_instr dep, h[2];
        int nh = sc_instr_halves(in, h); /* a pair waits for both halves' inputs */
        for (int i = 0; i < nh; i++)
            if (dependency(f, d, &h[i], &ready, &dep)) {
                if (ready < 0)
                    return;
                if (ready > t)
                    t = ready;
            }
        int aop;
        double all = f->vcnt ? all_dep(f, in, &aop) : 0; /* a split vocabulary's */
        if (all < 0)
            return;
        if (all > t)
            t = all;
        double e = t + sc_pass_cost(pg, in);
        size_t g = f->base[d] + f->pc[d];
        if (f->start) {
            f->start[g] = t;
            f->end[g] = e;
        }
        if (f->seq)
            f->seq[g] = f->nseq;
        f->nseq++;
        f->tfree[d] = e;
        f->pc[d]++;
        if (sc_op_is_vocab(in->op)) {
            size_t i = (size_t)sc_op_vocab_index(in->op) * (size_t)pg->m + (size_t)in->mb;
            if (e > f->vend[i])
                f->vend[i] = e;
            if (++f->vcnt[i] == pg->P)
                wake_all(f);
            continue;
        }
        for (int i = 0; i < nh; i++) { /* a pair: both halves end with it */
            const sc_instr *x = &h[i];
            size_t sm = SC_SM(pg, x->stage, x->mb);
            if (sc_op_is_fwd(x->op)) {
                f->endF[sm] = e;
                if (x->stage + 1 < pg->S)
                    wake(f, pg->stage_dev[x->stage + 1]);
                if (f->vcnt && x->stage == pg->S - 1)
                    wake_all(f); /* every device's S reads it */
            } else if (sc_op_is_bgrad(x->op)) {
                f->endB[sm] = e;
                if (x->stage > 0)
                    wake(f, pg->stage_dev[x->stage - 1]);
                if (f->vcnt && x->stage == 0)
                    wake_all(f); /* every device's EW reads it */
            }
        }
    }
}

/* The device whose pass stuck device d waits for, and (in buf, when given)
 * which pass: its dependency's ("F s2 mb0 from d1"), or for a dependency
 * on every device, one that has not run its pass yet. */
static int waits_for(flow *f, int d, char *buf, size_t len)
{
    sc_prog *pg = f->pg;
    const sc_instr *in = &pg->order[d].v[f->pc[d]];
    sc_instr dep, h[2];
    double ready;
    int nh = sc_instr_halves(in, h);
    if (nh == 2 && !(dependency(f, d, &h[0], &ready, &dep) && ready < 0))
        in = &h[1]; /* a pair: the half that waits */
    else if (nh == 2)
        in = &h[0];
    if (dependency(f, d, in, &ready, &dep) && ready < 0) {
        int e = pg->stage_dev[dep.stage];
        /* The table of ends does not say B or BW: look at e's order. */
        if (sc_op_is_bgrad(dep.op))
            for (size_t k = 0; k < pg->order[e].n; k++) {
                sc_instr x[2];
                for (int i = sc_instr_halves(&pg->order[e].v[k], x); i-- > 0;)
                    if (sc_op_is_bgrad(x[i].op) && x[i].stage == dep.stage && x[i].mb == dep.mb)
                        dep.op = x[i].op;
            }
        if (buf)
            snprintf(buf, len, "%s s%d mb%d from d%d", sc_op_name(dep.op), dep.stage, dep.mb, e);
        return e;
    }
    int op;
    all_dep(f, in, &op);
    /* A device that has not run its pass (op, mb) yet: it is at or before
     * it in its order. */
    for (int e = 0; e < pg->P; e++)
        for (size_t k = f->pc[e]; k < pg->order[e].n; k++) {
            const sc_instr *x = &pg->order[e].v[k];
            if (x->op == op && x->mb == in->mb) {
                if (buf)
                    snprintf(buf, len, "%s mb%d of every device (d%d has not run it)",
                             sc_op_name(op), in->mb, e);
                return e;
            }
        }
    if (buf)
        snprintf(buf, len, "%s mb%d of every device", sc_op_name(op), in->mb);
    return d;
}

static sc_status report_cycle(flow *f)
{
    sc_prog *pg = f->pg;
    int d = -1;
    for (int e = 0; e < pg->P && d < 0; e++)
        if (f->pc[e] < pg->order[e].n)
            d = e;
    /* Follow "waits for the device of its dependency" until a repeat. */
    int *seen = f->queued; /* reused: all zero now */
    while (!seen[d]) {
        seen[d] = 1;
        d = waits_for(f, d, NULL, 0);
    }
    char msg[sizeof pg->err];
    size_t len = (size_t)snprintf(msg, sizeof msg, "dependency cycle across devices: ");
    int c = d;
    do {
        const sc_instr *in = &pg->order[d].v[f->pc[d]];
        char a[64], need[96];
        sc_instr_format(in, a, sizeof a);
        int e = waits_for(f, d, need, sizeof need);
        if (len < sizeof msg)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "d%d #%zu (%s) needs %s; ", d,
                                    f->pc[d], a, need);
        d = e;
    } while (d != c);
    if (len < sizeof msg)
        snprintf(msg + len, sizeof msg - len, "no device can go on");
    return sc_fail(pg, SC_ERR_PROGRAM, "%s", msg);
}

sc_status sc_dataflow(sc_prog *pg, double *start, double *end, size_t *seq)
{
    int P = pg->P;
    size_t SM = (size_t)pg->S * (size_t)pg->m;
    flow f = {.pg = pg, .start = start, .end = end, .seq = seq};
    f.endF = sc_malloc(SM * sizeof(double));
    f.endB = sc_malloc(SM * sizeof(double));
    f.base = sc_malloc((size_t)P * sizeof(size_t));
    f.pc = sc_calloc((size_t)P, sizeof(size_t));
    f.tfree = sc_calloc((size_t)P, sizeof(double));
    f.stack = sc_malloc((size_t)P * sizeof(int));
    f.queued = sc_calloc((size_t)P, sizeof(int));
    if (sc_vocab_split(pg->vocab)) {
        f.vcnt = sc_calloc(4 * (size_t)pg->m, sizeof(int));
        f.vend = sc_calloc(4 * (size_t)pg->m, sizeof(double));
    }
    sc_status st = SC_OK;
    if (!f.endF || !f.endB || !f.base || !f.pc || !f.tfree || !f.stack || !f.queued ||
        (sc_vocab_split(pg->vocab) && (!f.vcnt || !f.vend))) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory timing %zu passes", SM);
        goto done;
    }
    for (size_t i = 0; i < SM; i++)
        f.endF[i] = f.endB[i] = -1;
    size_t b = 0;
    for (int d = 0; d < P; d++) {
        f.base[d] = b;
        b += pg->order[d].n;
    }
    for (int d = P - 1; d >= 0; d--)
        wake(&f, d);
    while (f.nstack > 0) {
        int d = f.stack[--f.nstack];
        f.queued[d] = 0;
        run_device(&f, d);
    }
    for (int d = 0; d < P; d++)
        if (f.pc[d] < pg->order[d].n) {
            st = report_cycle(&f);
            break;
        }
done:
    sc_free(f.endF);
    sc_free(f.endB);
    sc_free(f.base);
    sc_free(f.pc);
    sc_free(f.tfree);
    sc_free(f.stack);
    sc_free(f.queued);
    sc_free(f.vcnt);
    sc_free(f.vend);
    return st;
}
