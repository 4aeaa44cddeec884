/*
 * reorder.c — filling the squeeze's idle time with later ready passes
 * (reorder.h).
 */
#include "reorder.h"
#include "ir_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-9

typedef struct ctx {
    sc_prog *pg;
    size_t N, ndone;
    long *phead, *ptail;  /* [P] pending W (strategy 2), linked by nxt */
    long *widx;           /* [S*m] index of W (stage, mb) in it[] */
    sc_instr *it;        /* [N] all passes, device by device */
    long *nxt;           /* [N] next pass of the remaining order, -1 at the end */
    long *head;          /* [P] first remaining pass, -1 when done */
    double *endF, *endB; /* [S*m] end times, < 0 while not run */
    double *tfree, *mem; /* [P] */
    sc_instr *res;       /* [N] the new orders, device by device */
    size_t *base, *nres; /* [P] */
} ctx;

static double dur(const sc_prog *pg, const sc_instr *in)
{
    switch (in->op) {
    case SC_OP_F: return pg->tf[in->stage];
    case SC_OP_B: return pg->tb[in->stage];
    case SC_OP_W: return pg->tw[in->stage];
    default: return pg->tb[in->stage] + pg->tw[in->stage];
    }
}

static double delta(const sc_prog *pg, const sc_instr *in)
{
    double u = pg->mem[in->stage];
    switch (in->op) {
    case SC_OP_F: return u;
    case SC_OP_B: return -(1 - pg->w_keep) * u;
    case SC_OP_W: return -pg->w_keep * u;
    default: return -u;
    }
}

/* When pass `in` of device d may start as far as its dependency goes;
 * < 0 while that dependency has not run. */
static double ready(const ctx *c, int d, const sc_instr *in)
{
    const sc_prog *pg = c->pg;
    int s = in->stage, ds;
    const double *tab;
    if (in->op == SC_OP_F) {
        if (s == 0)
            return 0;
        ds = s - 1;
        tab = c->endF;
    } else if (in->op == SC_OP_W) {
        ds = s;
        tab = c->endB;
    } else if (s == pg->S - 1) {
        ds = s;
        tab = c->endF;
    } else {
        ds = s + 1;
        tab = c->endB;
    }
    double e = tab[SC_SM(pg, ds, in->mb)];
    return e < 0 ? -1 : e + (pg->stage_dev[ds] != d ? pg->tcomm : 0);
}

static void run(ctx *c, int d, long k, double at)
{
    const sc_prog *pg = c->pg;
    const sc_instr *in = &c->it[k];
    double end = at + dur(pg, in);
    c->tfree[d] = end;
    if (in->op == SC_OP_F)
        c->endF[SC_SM(pg, in->stage, in->mb)] = end;
    else if (in->op != SC_OP_W)
        c->endB[SC_SM(pg, in->stage, in->mb)] = end;
    c->mem[d] += delta(pg, in);
    c->res[c->base[d] + c->nres[d]++] = *in;
    c->ndone++;
}

/* Fills device d's idle time before rx (when its head may start) with
 * later passes of its order. */
static void fill(ctx *c, int d, double rx, double cap, long window)
{
    const sc_prog *pg = c->pg;
    for (;;) {
        double gap = rx - c->tfree[d];
        if (gap <= EPS)
            return;
        double running = c->mem[d], maxp = c->mem[d];
        long z = c->head[d], found = -1;
        for (long n = 0; n < window; n++) {
            running += delta(pg, &c->it[z]);
            if (running > maxp)
                maxp = running;
            long y = c->nxt[z];
            if (y < 0)
                break;
            const sc_instr *in = &c->it[y];
            double dl = delta(pg, in), r;
            if (dur(pg, in) <= gap + EPS && (r = ready(c, d, in)) >= 0 &&
                r <= c->tfree[d] + EPS && (dl <= 0 || maxp + dl <= cap + EPS)) {
                c->nxt[z] = c->nxt[y];
                found = y;
                break;
            }
            z = y;
        }
        if (found < 0)
            return;
        run(c, d, found, c->tfree[d]);
    }
}

/* Resets the run state and links every device's passes in their order;
 * with skip_w, W passes are left out of the lists (they become pending
 * when their B runs). Returns whether there is any W. */
static int reset(ctx *c, const sc_instr *const *orders, int skip_w)
{
    int has_w = 0;
    const sc_prog *pg = c->pg;
    c->ndone = 0;
    size_t SM = (size_t)pg->S * (size_t)pg->m, at = 0;
    for (size_t i = 0; i < 2 * SM; i++)
        c->endF[i] = -1;
    for (int d = 0; d < pg->P; d++) {
        size_t n = pg->order[d].n;
        c->base[d] = at;
        c->nres[d] = 0;
        c->tfree[d] = c->mem[d] = 0;
        c->head[d] = -1;
        c->phead[d] = c->ptail[d] = -1;
        memcpy(c->it + at, orders[d], n * sizeof *c->it);
        long prev = -1;
        for (size_t k = 0; k < n; k++) {
            long i = (long)(at + k);
            c->nxt[i] = -1;
            if (c->it[i].op == SC_OP_W) {
                c->widx[SC_SM(pg, c->it[i].stage, c->it[i].mb)] = i;
                has_w = 1;
                if (skip_w)
                    continue;
            }
            if (prev < 0)
                c->head[d] = i;
            else
                c->nxt[prev] = i;
            prev = i;
        }
        at += n;
    }
    return has_w;
}


/* Strategy 1: the squeeze, its gaps filled with later ready passes. */
static int run_fill(ctx *c, const double *cap, long window)
{
    const sc_prog *pg = c->pg;
    while (c->ndone < c->N) {
        int best = -1;
        double bt = INFINITY, br = 0;
        for (int d = 0; d < pg->P; d++) {
            if (c->head[d] < 0)
                continue;
            double r = ready(c, d, &c->it[c->head[d]]);
            if (r < 0)
                continue;
            double t = r > c->tfree[d] ? r : c->tfree[d];
            if (t < bt - EPS) {
                bt = t;
                br = r;
                best = d;
            }
        }
        if (best < 0) {
            return 0; /* inconsistent orders */
        }
        if (br > c->tfree[best] + EPS)
            fill(c, best, br, cap[best], window);
        long k = c->head[best];
        c->head[best] = c->nxt[k];
        run(c, best, k, br > c->tfree[best] ? br : c->tfree[best]);
        if (c->nres[best] == pg->order[best].n)
            c->head[best] = -1;
    }
    return 1;
}

/* Strategy 2: W as filler (the Controllable Memory paper's put_w): F and B
 * in their order as early as they can, each W at the first idle time after
 * its B that it fits in, or earlier when an F would otherwise pass cap. */
static int run_defer_w(ctx *c, const double *cap)
{
    const sc_prog *pg = c->pg;
    while (c->ndone < c->N) {
        int best = -1, best_w = 0;
        double bt = INFINITY;
        for (int d = 0; d < pg->P; d++) {
            long x = c->head[d], w = c->phead[d];
            double r = x >= 0 ? ready(c, d, &c->it[x]) : -1, t;
            int use_w;
            if (x < 0 && w < 0)
                continue;
            if (w >= 0 && x >= 0 && c->it[x].op == SC_OP_F &&
                c->mem[d] + delta(pg, &c->it[x]) > cap[d] + EPS)
                use_w = 1; /* the F must wait for memory */
            else if (w >= 0 && (x < 0 || r < 0 || r >= c->tfree[d] + dur(pg, &c->it[w]) - EPS))
                use_w = 1; /* idle time the W fits in */
            else if (x >= 0 && r >= 0)
                use_w = 0;
            else
                continue;
            t = use_w ? c->tfree[d] : (r > c->tfree[d] ? r : c->tfree[d]);
            if (t < bt - EPS) {
                bt = t;
                best = d;
                best_w = use_w;
            }
        }
        if (best < 0) {
            return 0;
        }
        long k;
        if (best_w) {
            k = c->phead[best];
            c->phead[best] = c->nxt[k];
            if (c->phead[best] < 0)
                c->ptail[best] = -1;
        } else {
            k = c->head[best];
            c->head[best] = c->nxt[k];
        }
        run(c, best, k, bt);
        const sc_instr *in = &c->it[k];
        if (in->op == SC_OP_B) { /* its W becomes pending */
            long w = c->widx[SC_SM(pg, in->stage, in->mb)];
            c->nxt[w] = -1;
            if (c->ptail[best] < 0)
                c->phead[best] = w;
            else
                c->nxt[c->ptail[best]] = w;
            c->ptail[best] = w;
        }
    }
    return 1;
}

static double makespan(const ctx *c)
{
    double mk = 0;
    for (int d = 0; d < c->pg->P; d++)
        mk = fmax(mk, c->tfree[d]);
    return mk;
}

sc_status sc_reorder(sc_prog *pg, const double *cap)
{
    int P = pg->P;
    size_t N = 0, SM = (size_t)pg->S * (size_t)pg->m;
    for (int d = 0; d < P; d++)
        N += pg->order[d].n;
    ctx c = {.pg = pg, .N = N};
    c.it = malloc(N * sizeof *c.it);
    sc_instr *res = malloc(3 * N * sizeof *res);
    c.nxt = malloc(N * sizeof *c.nxt);
    c.head = malloc(3 * (size_t)P * sizeof *c.head);
    c.widx = malloc(SM * sizeof *c.widx);
    c.endF = malloc(2 * SM * sizeof *c.endF);
    c.tfree = calloc(2 * (size_t)P, sizeof *c.tfree);
    c.base = calloc(2 * (size_t)P, sizeof *c.base);
    const sc_instr **orders = malloc((size_t)P * sizeof *orders);
    sc_status st = SC_OK;
    if ((N && (!c.it || !res || !c.nxt)) || !c.head || !c.widx || !c.endF || !c.tfree ||
        !c.base || !orders) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory reordering the schedule");
        goto done;
    }
    c.phead = c.head + P;
    c.ptail = c.head + 2 * P;
    c.endB = c.endF + SM;
    c.mem = c.tfree + P;
    c.nres = c.base + P;
    int maxc = 1;
    for (int d = 0; d < P; d++) {
        orders[d] = pg->order[d].v;
        if (pg->nchunks[d] > maxc)
            maxc = pg->nchunks[d];
    }
    long window = 12L * maxc * P + 8;
    if (window > 4096)
        window = 4096;
    /* Strategy 1 on the orders as given, into res. */
    c.res = res;
    int has_w = reset(&c, orders, 0);
    if (!run_fill(&c, cap, window))
        goto done; /* inconsistent orders: keep them for sc_check to name */
    double best = makespan(&c);
    const sc_instr *win = res;
    /* Strategy 2 into res + N, then its gaps filled into res + 2N. */
    c.res = res + N;
    if (has_w && (reset(&c, orders, 1), run_defer_w(&c, cap))) {
        for (int d = 0; d < P; d++)
            orders[d] = res + N + c.base[d];
        c.res = res + 2 * N;
        reset(&c, orders, 0);
        if (run_fill(&c, cap, window) && makespan(&c) < best - EPS) {
            best = makespan(&c);
            win = res + 2 * N;
        }
    }
    for (int d = 0; d < P; d++)
        memcpy(pg->order[d].v, win + c.base[d], pg->order[d].n * sizeof *win);
    sc_prog_invalidate(pg);
done:
    free(c.it);
    free(res);
    free(c.nxt);
    free(c.head);
    free(c.widx);
    free(c.endF);
    free(c.tfree);
    free(c.base);
    free(orders);
    return st;
}
