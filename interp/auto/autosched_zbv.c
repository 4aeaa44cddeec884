/*
 * autosched_zbv.c — the Zero Bubble paper's cost-aware greedy for the V
 * placement (ZB-V; autosched_impl.h), two stages per device: chunk 0 is
 * stage d, chunk 1 stage 2P-1-d. Every pass is placed at once with its end
 * computed as it goes (after the device is free and its input has arrived,
 * T_comm later across devices), so the greedy sees real costs.
 *
 *   warm-up   microbatch 0's F of chunk 0 on every device; from the last
 *             device back, each device issues more F of chunk 0 (each one
 *             also on the devices before it) while they fit in memory
 *             (room kept for 2 + 2d more) and end before microbatch 0's
 *             chunk-1 F comes back, then that chunk-1 F; then, device by
 *             device, the forwards of both chunks in alternation until a
 *             device has issued as many as the one before it;
 *   steady    2m rounds; in each, every device issues one backward: the
 *             chunk-0 one when its input is there (the last device: as
 *             soon as it is even), else the chunk-1 one; the chunk-0 ones
 *             from the last device down, then the chunk-1 ones up; then
 *             every device one forward (chunk 1 when its input is there,
 *             else chunk 0). Before each pass: W while memory would pass
 *             the limit, W that end before the pass's input arrives, and
 *             one more W when the wait exceeds the device's share of the
 *             bubble (always before a chunk-0 backward; before the others
 *             as fill_b, fill_f say);
 *   flush     the W left.
 * The share of the bubble is the largest idle time of any device so far, or
 * what a previous run's idle times approve (the caller runs again while
 * that lowers the largest idle time).
 */
#include "autosched_impl.h"

#include <math.h>
#include <stdlib.h>

typedef struct zv {
    sc_actx *c;
    sc_instr *ord;
    double *idle;       /* [P] idle time since the device's first F */
    double idle_max;    /* the largest of them, 0 at least (they only grow) */
    const double *appr; /* [P] idle times a previous run approves, or NULL */
    double appr_max;
    int *q;             /* [P][2m] pending W (their stages), a queue per device */
    int *qh, *qt;       /* [P] */
    int fill_f, fill_b;
} zv;

static int s0(const zv *z, int d) { return z->c->pg->dev_stages[d][0]; }
static int s1(const zv *z, int d) { return z->c->pg->dev_stages[d][1]; }

static int count(const sc_actx *c, int op, int s)
{
    return sc_op_is_fwd(op) ? c->nf[s] : sc_op_is_bgrad(op) ? c->nb[s] : c->nw[s];
}

/* End of the pass on another device that the next (op, s) waits for, plus
 * T_comm; -1 when there is none (or it is on device d), -2 when it has not
 * run. */
static double arrival(const zv *z, int d, int op, int s)
{
    const sc_actx *c = z->c;
    const sc_prog *pg = c->pg;
    sc_instr in = {.op = (uint8_t)op, .stage = s, .mb = count(c, op, s), .peer = -1};
    int dop, ds;
    if (!sc_pass_dep(pg, &in, &dop, &ds) || pg->stage_dev[ds] == d)
        return -1;
    double a = (dop == SC_OP_F ? c->endF : c->endB)[SC_SM(pg, ds, in.mb)];
    return a < 0 ? -2 : a + pg->tcomm;
}

/* Places the next pass of kind op on stage s (device d); -1 when it does
 * not exist or its input has not run. */
static int put(zv *z, int d, int op, int s)
{
    sc_actx *c = z->c;
    sc_prog *pg = c->pg;
    int i = count(c, op, s);
    if (i >= c->m || (sc_op_is_bgrad(op) && i >= c->nf[s]) || (sc_op_is_wgrad(op) && i >= c->nb[s]))
        return -1;
    sc_instr in = {.op = (uint8_t)op, .stage = s, .mb = i, .peer = -1};
    double cost = sc_auto_cost(pg, op, s), nob = c->e[d] + cost, t = nob;
    int dop, ds;
    if (!sc_op_is_wgrad(op) && sc_pass_dep(pg, &in, &dop, &ds)) {
        double a = (dop == SC_OP_F ? c->endF : c->endB)[SC_SM(pg, ds, i)];
        if (a < 0)
            return -1;
        double r = a + (pg->stage_dev[ds] != d ? pg->tcomm : 0) + cost;
        t = r > t ? r : t; /* fmax: no NaN */
    }
    if (c->nf[s0(z, d)] > 0 && (z->idle[d] += t - nob) > z->idle_max)
        z->idle_max = z->idle[d];
    c->e[d] = t;
    c->cur[d] += sc_auto_dmem(pg, op, s);
    if (sc_op_is_fwd(op)) {
        c->endF[SC_SM(pg, s, i)] = t;
        c->nf[s]++;
    } else if (sc_op_is_bgrad(op)) {
        c->endB[SC_SM(pg, s, i)] = t;
        c->nb[s]++;
        z->q[(size_t)d * 2 * (size_t)c->m + (size_t)z->qt[d]++] = s;
    } else {
        c->nw[s]++;
    }
    z->ord[c->off[d] + c->pc[d]++] = in;
    return 0;
}

#define PUT(z, d, op, s)                                                                           \
    do {                                                                                           \
        if (put((z), (d), (op), (s)))                                                              \
            return -1;                                                                             \
    } while (0)

static int pending(const zv *z, int d) { return z->qh[d] < z->qt[d]; }

static int front(const zv *z, int d)
{
    return z->q[(size_t)d * 2 * (size_t)z->c->m + (size_t)z->qh[d]];
}

static int put_w(zv *z, int d)
{
    int s = front(z, d);
    z->qh[d]++;
    return put(z, d, SC_OP_W, s);
}

/* The largest idle time a device may still reach: the largest so far, or
 * what the previous run approves for it. */
static double budget(const zv *z, int d)
{
    double x = z->idle_max;
    if (z->appr)
        x = fmax(x, z->appr_max - z->appr[d]);
    return x;
}

/* Before the next (op, s) on device d: W while memory would pass the limit,
 * W that end before its input arrives, one more (when extra) if the wait
 * exceeds the device's share of the bubble. */
static int before(zv *z, int d, int op, int s, int extra)
{
    sc_actx *c = z->c;
    double dm = sc_auto_dmem(c->pg, op, s);
    while (c->cur[d] + dm > c->limit) {
        if (!pending(z, d))
            return -1;
        if (put_w(z, d))
            return -1;
    }
    double a = arrival(z, d, op, s);
    if (a < 0)
        return a < -1 ? -1 : 0;
    while (pending(z, d) && a >= c->e[d] + c->pg->tw[front(z, d)])
        if (put_w(z, d))
            return -1;
    if (pending(z, d) && extra && a - c->e[d] > budget(z, d) - z->idle[d])
        return put_w(z, d);
    return 0;
}

static int warmup(zv *z)
{
    sc_actx *c = z->c;
    sc_prog *pg = c->pg;
    int P = c->P, m = c->m;
    for (int d = 0; d < P; d++)
        PUT(z, d, SC_OP_F, s0(z, d));
    for (int d = P - 1; d >= 0; d--) {
        if (d < P - 1) {
            double back = c->endF[SC_SM(pg, s1(z, d + 1), 0)] + pg->tcomm;
            int a = s0(z, d);
            while (c->cur[d] + pg->mem[a] * (2 + 2 * d) <= c->limit && c->e[d] + pg->tf[a] <= back &&
                   c->nf[a] < m)
                for (int j = 0; j <= d; j++)
                    PUT(z, j, SC_OP_F, s0(z, j));
        }
        PUT(z, d, SC_OP_F, s1(z, d));
    }
    int chunk = 0;
    for (int d = 1; d < P; d++) {
        int guard = 4 * m + 4;
        while (c->nf[s0(z, d)] + c->nf[s1(z, d)] < c->nf[s0(z, d - 1)] + c->nf[s1(z, d - 1)] ||
               (c->nf[s1(z, d)] <= c->nf[s1(z, d - 1)] && c->nf[s1(z, d - 1)] < m)) {
            if (guard-- == 0)
                return -1;
            for (int j = P - 1; j >= d; j--) {
                int s = chunk ? s1(z, j) : s0(z, j);
                if (c->nf[s] < m)
                    PUT(z, j, SC_OP_F, s);
            }
            chunk = !chunk;
        }
    }
    return 0;
}

static int round_b(zv *z)
{
    sc_actx *c = z->c;
    sc_prog *pg = c->pg;
    int P = c->P, m = c->m;
    int *down = c->stack, *up = c->queued, nd = 0, nu = 0;
    for (int d = 0; d < P; d++) {
        int a = s0(z, d), b = s1(z, d);
        if (c->nb[a] >= c->nb[b])
            up[nu++] = d;
        else if (d == P - 1 || c->endB[SC_SM(pg, a + 1, c->nb[a])] >= 0 || c->nb[b] >= m)
            down[nd++] = d;
        else
            up[nu++] = d;
    }
    for (int k = nd - 1; k >= 0; k--) {
        int d = down[k];
        if (before(z, d, SC_OP_B, s0(z, d), 1))
            return -1;
        PUT(z, d, SC_OP_B, s0(z, d));
    }
    for (int k = 0; k < nu; k++) {
        int d = up[k];
        if (before(z, d, SC_OP_B, s1(z, d), z->fill_b))
            return -1;
        PUT(z, d, SC_OP_B, s1(z, d));
    }
    return 0;
}

static int round_f(zv *z)
{
    sc_actx *c = z->c;
    sc_prog *pg = c->pg;
    int P = c->P, m = c->m;
    for (int d = 0; d < P; d++) {
        int a = s0(z, d), b = s1(z, d), s = -1;
        if (c->nf[b] >= m)
            continue;
        if (c->nf[b] >= c->nf[a])
            s = a;
        else if (d == P - 1 || c->endF[SC_SM(pg, b - 1, c->nf[b])] >= 0)
            s = b;
        else if (c->nf[a] < m && (d == 0 || c->endF[SC_SM(pg, a - 1, c->nf[a])] >= 0))
            s = a;
        if (s < 0)
            continue;
        if (before(z, d, SC_OP_F, s, z->fill_f))
            return -1;
        PUT(z, d, SC_OP_F, s);
    }
    return 0;
}

int sc_auto_zbv(sc_actx *c, int flags, const double *approved, double *idle, sc_instr *ord)
{
    sc_prog *pg = c->pg;
    int P = c->P, m = c->m;
    for (int d = 0; d < P; d++)
        if (pg->nchunks[d] != 2 || pg->dev_stages[d][0] != d || pg->dev_stages[d][1] != 2 * P - 1 - d)
            return -1;
    size_t qn = 2 * (size_t)m * (size_t)P;
    int *q = malloc(qn * sizeof *q), *qh = calloc(2 * (size_t)P, sizeof *qh);
    if (!q || !qh) {
        free(q);
        free(qh);
        return -2;
    }
    zv z = {c, ord, idle, 0, approved, 0, q, qh, qh + P, flags & 1, (flags >> 1) & 1};
    for (int d = 0; approved && d < P; d++)
        z.appr_max = fmax(z.appr_max, approved[d]);
    for (int s = 0; s < c->S; s++)
        c->nf[s] = c->nb[s] = c->nw[s] = 0;
    for (int d = 0; d < P; d++) {
        c->e[d] = c->cur[d] = idle[d] = 0;
        c->pc[d] = 0;
    }
    for (size_t k = 0; k < (size_t)c->S * (size_t)m; k++)
        c->endF[k] = c->endB[k] = -1;
    int rc = warmup(&z);
    for (int r = 0; r < 2 * m && rc == 0; r++) {
        rc = round_b(&z);
        if (rc == 0)
            rc = round_f(&z);
    }
    for (int d = 0; d < P && rc == 0; d++)
        while (pending(&z, d) && rc == 0)
            rc = put_w(&z, d);
    for (int d = 0; d < P && rc == 0; d++)
        if (c->off[d] + c->pc[d] != c->off[d + 1])
            rc = -1; /* a pass left out */
    free(q);
    free(qh);
    return rc;
}
