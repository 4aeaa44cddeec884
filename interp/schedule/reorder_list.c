/*
 * reorder_list.c — the reorder's list schedules (reorder_impl.h): the
 * squeeze with its idle time filled by later ready passes, and W as
 * filler.
 */
#include "reorder_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-9

enum { DEP_NONE = -1, DEP_SLOW = -2 }; /* no dependency; ask sc_dep_ready */

typedef struct ctx {
    sc_prog *pg;
    const sc_rctx *rc;
    size_t N, ndone;
    long *phead, *ptail;  /* [P] pending W (strategy 2), linked by nxt */
    long *widx;           /* [S*m] index of W (stage, mb) in it[] */
    double *hr;           /* [P] ready time of the head, cached (-2: stale) */
    double *key;          /* [P] time of the device's next step */
    int *tree, Q;         /* [2Q] the devices by key: a winner tree (sc_wtree_fix) */
    double *tk;           /* [2Q] the key of each node's device */
    int *use_w;           /* [P] strategy 2: the next step is a pending W */
    int stale[64], nstale; /* devices to rekey after a step */
    int all_stale;         /* too many: rekey them all */
    sc_instr *it;        /* [N] all passes, device by device */
    double *cost, *dmem; /* [N] each pass's cost and memory change */
    double *dadd;        /* [N] T_comm after its dependency, or 0 */
    long *dep;           /* [N] its dependency's end in endF (endB after it), or DEP_* */
    long *nxt;           /* [N] next pass of the remaining order, -1 at the end */
    long *head;          /* [P] first remaining pass, -1 when done */
    double *endF, *endB; /* [S*m] end times, < 0 while not run */
    double *tfree, *mem; /* [P] */
    double *first;       /* [P] start of the device's first pass */
    double *mincost;     /* [P] the least cost of the device's passes */
    const double *cap;   /* [P] */
    int exact, over;     /* sc_rlist_time's, of the run since reset */
    sc_instr *res;       /* [N] the new orders, device by device */
    size_t *base, *nres; /* [P] */
} ctx;

/* When pass k of device d may start as far as its dependency goes;
 * < 0 while that dependency has not run: sc_dep_ready, from what reset
 * found of the pass (the gap fill asks it of hundreds of passes per gap). */
static double ready(const ctx *c, int d, long k)
{
    long x = c->dep[k];
    if (x == DEP_NONE)
        return 0;
    if (x == DEP_SLOW)
        return sc_dep_ready(c->pg, d, &c->it[k], c->endF, c->endB);
    double e = c->endF[x]; /* endB follows endF */
    return e < 0 ? -1 : e + c->dadd[k];
}

static void run(ctx *c, int d, long k, double at)
{
    const sc_prog *pg = c->pg;
    const sc_instr *in = &c->it[k];
    double end = at + c->cost[k];
    if (c->nres[d] == 0)
        c->first[d] = at;
    c->tfree[d] = end;
    if (sc_op_is_fwd(in->op))
        c->endF[SC_SM(pg, in->stage, in->mb)] = end;
    else if (sc_op_is_bgrad(in->op))
        c->endB[SC_SM(pg, in->stage, in->mb)] = end;
    c->mem[d] += c->dmem[k];
    if (c->mem[d] > c->cap[d] + 1e-7)
        c->over = 1;
    c->res[c->base[d] + c->nres[d]++] = *in;
    c->ndone++;
    /* Devices whose next step may change: this one, the consumer's. */
    int e = d;
    if (sc_op_is_fwd(in->op) && in->stage + 1 < pg->S)
        e = pg->stage_dev[in->stage + 1];
    else if (sc_op_is_bgrad(in->op) && in->stage > 0)
        e = pg->stage_dev[in->stage - 1];
    /* A consumer's device whose head's input is out already keeps its key:
     * its next step reads only its own state then (key_fill, key_defer). */
    if (e != d && c->hr[e] >= 0)
        e = d;
    c->hr[d] = c->hr[e] = -2;
    if (c->nstale + 2 > (int)(sizeof c->stale / sizeof *c->stale)) {
        c->all_stale = 1;
        c->nstale = 0;
    }
    c->stale[c->nstale++] = d;
    if (e != d)
        c->stale[c->nstale++] = e;
}

/* Ready time of device d's head (< 0: not known yet), cached. */
static double head_ready(ctx *c, int d)
{
    if (c->hr[d] == -2)
        c->hr[d] = c->head[d] < 0 ? -1 : ready(c, d, c->head[d]);
    return c->hr[d];
}

/* Fills device d's idle time before rx (when its head may start) with
 * later passes of its order: the first one (within window of the head)
 * that fits in the gap, keeps the memory of every point of the order
 * within cap, and whose input is out by the device's end; again from the
 * head after each. The scan reads the arrays through locals and looks the
 * input up in place (ready's fast path): ready is a call the loop would
 * reload every field of c after. */
static void fill(ctx *c, int d, double rx, double cap, long window)
{
    const double *cost = c->cost, *dmem = c->dmem, *dadd = c->dadd, *endF = c->endF;
    const long *dep = c->dep;
    long *nxt = c->nxt;
    double capx = cap + EPS;
    for (;;) {
        double tf = c->tfree[d], gap = rx - tf;
        if (gap <= EPS || c->mincost[d] > gap + EPS)
            return; /* no pass is short enough: the scan below would find none */
        double gapx = gap + EPS, tfx = tf + EPS;
        double running = c->mem[d], maxp = running;
        long z = c->head[d], found = -1;
        for (long n = 0; n < window; n++) {
            running += dmem[z];
            if (running > maxp)
                maxp = running;
            long y = nxt[z];
            if (y < 0)
                break;
            double dl = dmem[y], r;
            /* pure tests, the costly one (a lookup far away) last */
            if (!(cost[y] <= gapx && (dl <= 0 || maxp + dl <= capx))) {
                z = y;
                continue;
            }
            long x = dep[y];
            if (x == DEP_NONE)
                r = 0;
            else if (x == DEP_SLOW)
                r = ready(c, d, y);
            else
                r = endF[x] < 0 ? -1 : endF[x] + dadd[y]; /* endB follows endF */
            if (r >= 0 && r <= tfx) {
                if (r > tf)
                    c->exact = 0; /* it runs before its input's end */
                nxt[z] = nxt[y];
                found = y;
                break;
            }
            z = y;
        }
        if (found < 0)
            return;
        run(c, d, found, tf);
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
    c->exact = 1;
    c->over = 0;
    size_t SM = (size_t)pg->S * (size_t)pg->m, at = 0;
    for (size_t i = 0; i < 2 * SM; i++)
        c->endF[i] = -1;
    for (int d = 0; d < pg->P; d++) {
        size_t n = pg->order[d].n;
        c->base[d] = at;
        c->nres[d] = 0;
        c->tfree[d] = c->mem[d] = 0;
        c->head[d] = -1;
        c->hr[d] = -2;
        c->phead[d] = c->ptail[d] = -1;
        c->mincost[d] = INFINITY;
        memcpy(c->it + at, orders[d], n * sizeof *c->it);
        long prev = -1;
        for (size_t k = 0; k < n; k++) {
            long i = (long)(at + k);
            c->nxt[i] = -1;
            const sc_rpass *p = sc_r_pass(c->rc, &c->it[i]);
            int dop, ds;
            c->dadd[i] = 0;
            if (p) { /* the table's figures (sc_r_tab_new) */
                c->cost[i] = p->cost;
                c->dmem[i] = p->mem;
                c->dep[i] = p->dep < 0 ? DEP_NONE : (long)(p->dep_b ? SM : 0) + p->dep + c->it[i].mb;
                c->dadd[i] = p->dep >= 0 && p->ddev != d ? pg->tcomm : 0;
            } else {
                c->cost[i] = sc_pass_cost(pg, &c->it[i]);
                c->dmem[i] = sc_pass_mem(pg, &c->it[i]);
                if (sc_op_is_vocab(c->it[i].op)) {
                    c->dep[i] = DEP_SLOW;
                    c->exact = 0; /* sc_dep_ready, not sc_r_ready_at */
                } else if (!sc_pass_dep(pg, &c->it[i], &dop, &ds)) {
                    c->dep[i] = DEP_NONE;
                } else {
                    c->dep[i] = (long)(dop == SC_OP_F ? 0 : SM) + (long)SC_SM(pg, ds, c->it[i].mb);
                    c->dadd[i] = pg->stage_dev[ds] != d ? pg->tcomm : 0;
                }
            }
            if (c->cost[i] < c->mincost[d])
                c->mincost[d] = c->cost[i];
            if (sc_r_w_only(c->it[i].op)) {
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


/* Device d's key changed: the tree again (sc_wtree_fix). */
static void tree_fix(ctx *c, int d)
{
    sc_wtree_fix(c->tree, c->tk, c->Q, d, c->key[d]);
}

/* Strategy 1's next step on device d: its head, at key[d] (INFINITY while
 * the head is not known to be ready). */
static void key_fill(ctx *c, int d)
{
    double r = head_ready(c, d);
    c->key[d] = r < 0 ? INFINITY : (r > c->tfree[d] ? r : c->tfree[d]);
}

/* The earliest the input of `in` (on device d, not run yet) can arrive:
 * its producer starts no earlier than its device is free. */
static double input_after(const ctx *c, int d, const sc_instr *in)
{
    int dop, ds;
    if (!sc_pass_dep(c->pg, in, &dop, &ds))
        return 0;
    int e = c->pg->stage_dev[ds];
    return c->tfree[e] + sc_op_cost(c->pg, dop, ds) +
           (e != d ? c->pg->tcomm : 0);
}

/* Strategy 2's next step on device d: a pending W (use_w[d]) or its head
 * (W when the head waits for memory, or when its input arrives after the
 * W would end: known, or certain from where its producer's device is). */
static void key_defer(ctx *c, int d, const double *cap)
{
    long x = c->head[d], w = c->phead[d];
    double r = head_ready(c, d);
    c->use_w[d] = 0;
    c->key[d] = INFINITY;
    if (w >= 0 && x >= 0 && sc_op_is_fwd(c->it[x].op) &&
        c->mem[d] + c->dmem[x] > cap[d] + EPS)
        c->use_w[d] = 1; /* the F must wait for memory */
    else if (w >= 0 && (x < 0 || (r < 0 ? input_after(c, d, &c->it[x]) : r) >=
                                     c->tfree[d] + c->cost[w] - EPS))
        c->use_w[d] = 1; /* idle time the W fits in */
    else if (x < 0 || r < 0)
        return; /* wait until the input is known */
    c->key[d] = c->use_w[d] ? c->tfree[d] : (r > c->tfree[d] ? r : c->tfree[d]);
}

static void tree_init(ctx *c, const double *cap, int defer);

static void rekey(ctx *c, const double *cap, int defer)
{
    if (c->all_stale) {
        for (int d = 0; d < c->pg->P; d++)
            c->hr[d] = -2;
        tree_init(c, cap, defer);
        return;
    }
    for (int i = 0; i < c->nstale; i++) {
        int d = c->stale[i];
        double was = c->key[d];
        if (defer)
            key_defer(c, d, cap);
        else
            key_fill(c, d);
        if (c->key[d] != was) /* the same key: the tree stands */
            tree_fix(c, d);
    }
    c->nstale = 0;
}

static void tree_init(ctx *c, const double *cap, int defer)
{
    int Q = c->Q;
    for (int d = 0; d < c->pg->P; d++) {
        if (defer)
            key_defer(c, d, cap);
        else
            key_fill(c, d);
    }
    sc_wtree_build(c->tree, c->tk, Q, c->pg->P, c->key);
    c->nstale = 0;
    c->all_stale = 0;
}

/* Strategy 1: the squeeze, its gaps filled with later ready passes. */
static int run_fill(ctx *c, const double *cap, long window)
{
    const sc_prog *pg = c->pg;
    tree_init(c, cap, 0);
    while (c->ndone < c->N) {
        int best = c->tree[1];
        if (c->key[best] == INFINITY)
            return 0; /* inconsistent orders */
        double br = head_ready(c, best);
        if (br > c->tfree[best] + EPS)
            fill(c, best, br, cap[best], window);
        long k = c->head[best];
        c->head[best] = c->nxt[k];
        run(c, best, k, br > c->tfree[best] ? br : c->tfree[best]);
        if (c->nres[best] == pg->order[best].n)
            c->head[best] = -1;
        rekey(c, cap, 0);
    }
    return 1;
}

/* Strategy 2: W as filler (the Controllable Memory paper's put_w): F and B
 * in their order as early as they can, each W at the first idle time after
 * its B that it fits in, or earlier when an F would otherwise pass cap. */
static int run_defer_w(ctx *c, const double *cap)
{
    const sc_prog *pg = c->pg;
    tree_init(c, cap, 1);
    while (c->ndone < c->N) {
        int best = c->tree[1];
        double bt = c->key[best];
        if (bt == INFINITY)
            return 0;
        long k;
        if (c->use_w[best]) {
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
        if (sc_op_is_bgrad(in->op) && !sc_op_is_wgrad(in->op)) { /* B: its W becomes pending */
            long w = c->widx[SC_SM(pg, in->stage, in->mb)];
            c->nxt[w] = -1;
            if (c->ptail[best] < 0)
                c->phead[best] = w;
            else
                c->nxt[c->ptail[best]] = w;
            c->ptail[best] = w;
        }
        rekey(c, cap, 1);
    }
    return 1;
}

int sc_r_list(const sc_rctx *rc, const sc_instr *src, int strategy, sc_instr *dst,
              sc_rlist_time *lt)
{
    sc_prog *pg = rc->pg;
    int P = pg->P;
    size_t N = rc->N, SM = (size_t)pg->S * (size_t)pg->m;
    ctx c = {.pg = pg, .rc = rc, .N = N, .cap = rc->cap};
    c.it = sc_malloc(N * sizeof *c.it);
    c.cost = sc_malloc(3 * N * sizeof *c.cost);
    c.dep = sc_malloc(N * sizeof *c.dep);
    sc_instr *res = sc_malloc(N * sizeof *res);
    c.nxt = sc_malloc(N * sizeof *c.nxt);
    c.head = sc_malloc(3 * (size_t)P * sizeof *c.head);
    for (c.Q = 1; c.Q < P; c.Q *= 2)
        ;
    c.hr = sc_malloc((2 * (size_t)P + 2 * (size_t)c.Q) * sizeof *c.hr);
    c.tree = sc_malloc((2 * (size_t)c.Q + (size_t)P) * sizeof *c.tree);
    c.widx = sc_malloc(SM * sizeof *c.widx);
    c.endF = sc_malloc(2 * SM * sizeof *c.endF);
    c.tfree = sc_calloc(4 * (size_t)P, sizeof *c.tfree);
    c.base = sc_calloc(2 * (size_t)P, sizeof *c.base);
    const sc_instr **orders = sc_malloc((size_t)P * sizeof *orders);
    int ok = -1;
    if ((N && (!c.it || !c.cost || !c.dep || !res || !c.nxt)) || !c.head || !c.hr || !c.tree || !c.widx || !c.endF ||
        !c.tfree || !c.base || !orders)
        goto done;
    c.dmem = c.cost + N;
    c.dadd = c.cost + 2 * N;
    c.key = c.hr + P;
    c.tk = c.hr + 2 * P;
    c.use_w = c.tree + 2 * c.Q;
    c.phead = c.head + P;
    c.ptail = c.head + 2 * P;
    c.endB = c.endF + SM;
    c.mem = c.tfree + P;
    c.first = c.tfree + 2 * P;
    c.mincost = c.tfree + 3 * P;
    c.nres = c.base + P;
    for (int d = 0; d < P; d++)
        orders[d] = src + rc->base[d];
    ok = 0;
    if (strategy == 1) {
        c.res = dst;
        reset(&c, orders, 0);
        ok = run_fill(&c, rc->cap, rc->window);
    } else {
        c.res = res;
        if (!reset(&c, orders, 1) || !run_defer_w(&c, rc->cap))
            goto done; /* no W, or inconsistent */
        for (int d = 0; d < P; d++)
            orders[d] = res + c.base[d];
        c.res = dst;
        reset(&c, orders, 0);
        ok = run_fill(&c, rc->cap, rc->window);
    }
    if (ok == 1 && lt) {
        *lt = (sc_rlist_time){c.exact, c.over, 0, 0};
        for (int d = 0; d < P; d++)
            if (c.nres[d]) {
                lt->span = fmax(lt->span, c.tfree[d] - c.first[d]);
                lt->makespan = fmax(lt->makespan, c.tfree[d]);
            }
    }
done:
    sc_free(c.it);
    sc_free(c.cost);
    sc_free(c.dep);
    sc_free(res);
    sc_free(c.nxt);
    sc_free(c.head);
    sc_free(c.hr);
    sc_free(c.tree);
    sc_free(c.widx);
    sc_free(c.endF);
    sc_free(c.tfree);
    sc_free(c.base);
    sc_free(orders);
    return ok;
}
