/*
 * autosched_heur.c — the two schedule builders of the automatic scheduler
 * (autosched_impl.h): the Zero Bubble paper's heuristic, and the list
 * scheduler the search drives.
 */
#include "autosched_impl.h"
#include "ir/wintree.h"

#include <math.h>

/* ---- the Zero Bubble paper's heuristic ------------------------------------
 * One stage per device (stage j is device j). Every pass is placed at once
 * with its completion time computed as it goes: F(j, i) after the device is
 * free and F(j-1, i) has arrived (T_comm later), B(j, i) after B(j+1, i).
 * bub[j] accumulates the idle time each stage has had since its first F; the
 * largest of them is the "bubble budget" that decides whether a W may
 * overrun the next arrival. */

typedef struct zb {
    sc_actx *c;
    sc_instr *ord;
    double *bub; /* [P] idle time since the first F */
    double maxbub; /* the largest of them (they only grow) */
    int allow, prio, greedy;
} zb;

/* Places the next pass of kind op on stage j. -1 when it does not exist or
 * what it depends on has not been placed (the paper's code asserts). */
static int put(zb *z, int j, int op)
{
    sc_actx *c = z->c;
    sc_prog *pg = c->pg;
    int m = c->m, i = sc_op_is_fwd(op) ? c->nf[j] : sc_op_is_bgrad(op) ? c->nb[j] : c->nw[j];
    if (i >= m || (sc_op_is_bgrad(op) && i >= c->nf[j]) || (sc_op_is_wgrad(op) && i >= c->nb[j]))
        return -1;
    double cost = sc_auto_cost(pg, op, j), t = c->e[j] + cost, nobubble = t;
    if (sc_op_is_fwd(op) && j > 0) {
        double a = c->endF[SC_SM(pg, j - 1, i)];
        if (a < 0)
            return -1;
        t = fmax(t, a + pg->tcomm + cost);
    }
    if (sc_op_is_bgrad(op) && j + 1 < c->S) {
        double a = c->endB[SC_SM(pg, j + 1, i)];
        if (a < 0)
            return -1;
        t = fmax(t, a + pg->tcomm + cost);
    }
    if (c->nf[j] > 0)
        if ((z->bub[j] += t - nobubble) > z->maxbub)
            z->maxbub = z->bub[j];
    c->e[j] = t;
    c->cur[j] += sc_auto_dmem(pg, op, j);
    if (sc_op_is_fwd(op)) {
        c->endF[SC_SM(pg, j, i)] = t;
        c->nf[j]++;
    } else if (sc_op_is_bgrad(op)) {
        c->endB[SC_SM(pg, j, i)] = t;
        c->nb[j]++;
    } else {
        c->nw[j]++;
    }
    z->ord[c->off[j] + c->pc[j]++] = (sc_instr){.op = (uint8_t)op, .stage = j, .mb = i, .peer = -1};
    return 0;
}

#define PUT(z, j, op)                                                                              \
    do {                                                                                           \
        if (put((z), (j), (op)))                                                                   \
            return -1;                                                                             \
    } while (0)

static double max_bubble(const zb *z) { return z->maxbub; }

/* Before a pass of stage j whose input arrives at `arrive`: the W that end
 * before it, then one more if the gap is left (always when the gap is larger
 * than the stage's share of the bubble budget, else only when greedy). */
static int fill_gap(zb *z, int j, double arrive)
{
    sc_actx *c = z->c;
    double tw = c->pg->tw[j];
    while (c->nw[j] < c->nb[j] && c->e[j] + tw <= arrive)
        PUT(z, j, SC_OP_W);
    if (c->nw[j] < c->nb[j] && c->e[j] < arrive) {
        if (arrive - c->e[j] <= max_bubble(z) - z->bub[j]) {
            if (z->greedy)
                PUT(z, j, SC_OP_W);
        } else {
            PUT(z, j, SC_OP_W);
        }
    }
    return 0;
}

/* W while the pass of kind op would exceed the limit. */
static int make_room(zb *z, int j, int op)
{
    sc_actx *c = z->c;
    double d = sc_auto_dmem(c->pg, op, j);
    while (c->cur[j] + d > c->limit) {
        if (c->nw[j] >= c->nb[j])
            return -1; /* the paper's "cannot fit memory" */
        PUT(z, j, SC_OP_W);
    }
    return 0;
}

/* Microbatch 0 on every stage, with the warm-up F: from the last stage back,
 * each stage issues the F that fit (memory) before microbatch 0's B arrives,
 * then the counts are made decreasing along the pipeline. */
/* The warm-up counts with or without a bubble allowed before the first B
 * (freq[S]; the F of microbatch 0 are placed). */
static void warm_counts(zb *z, int allow, int *freq)
{
    sc_actx *c = z->c;
    sc_prog *pg = c->pg;
    int S = c->S, m = c->m;
    double last = 0;
    for (int j = S - 1; j >= 0; j--) {
        freq[j] = 0;
        if (j == S - 1) {
            last = c->endF[SC_SM(pg, j, 0)] + pg->tb[j];
            continue;
        }
        double mem = c->cur[j], t = c->e[j];
        while (c->nf[j] + freq[j] < m && mem + pg->mem[j] <= c->limit) {
            if (allow ? t + pg->tf[j] > last + pg->tcomm : t >= last + pg->tcomm)
                break;
            mem += pg->mem[j];
            t += pg->tf[j];
            freq[j]++;
        }
        last = fmax(t, last + pg->tcomm) + pg->tb[j];
    }
    for (int j = 1; j < S; j++)
        while (freq[j] > 0 && freq[j] >= freq[j - 1] && c->nf[j] + freq[j] < m)
            freq[j]--;
}

/* Sets *same when the other choice of allow gives the same counts (then
 * the same schedule: allow is used nowhere else). */
static int warmup(zb *z, int *freq, int *same)
{
    sc_actx *c = z->c;
    int S = c->S;
    for (int j = 0; j < S; j++)
        PUT(z, j, SC_OP_F);
    warm_counts(z, z->allow, freq);
    if (same) {
        int *other = c->maxw; /* [2P] scratch, free here */
        warm_counts(z, !z->allow, other);
        *same = 1;
        for (int j = 0; j < S && *same; j++)
            *same = other[j] == freq[j];
    }
    for (int j = 0; j < S; j++)
        for (int k = 0; k < freq[j]; k++)
            PUT(z, j, SC_OP_F);
    for (int j = S - 1; j >= 0; j--)
        PUT(z, j, SC_OP_B);
    return 0;
}

/* Whether stage j issues its next F in this round: with prio, a stage two
 * or more F ahead of the next one skips an F that would delay that stage's
 * next B coming back. */
static int wants_f(zb *z, int j)
{
    sc_actx *c = z->c;
    sc_prog *pg = c->pg;
    if (c->nf[j] >= c->m)
        return 0;
    if (!z->prio || j + 1 >= c->S || c->nf[j] < c->nf[j + 1] + 2)
        return 1;
    double next = c->e[j + 1] + pg->tf[j + 1] + pg->tb[j + 1] + pg->tcomm;
    if (c->e[j] >= next)
        return 0;
    double wcost = 0, mem = c->cur[j] + pg->mem[j];
    for (int k = c->nw[j]; mem > c->limit && k < c->nb[j]; k++) {
        wcost += pg->tw[j];
        mem += sc_auto_dmem(pg, SC_OP_W, j);
    }
    if (c->e[j] + pg->tf[j] + wcost <= next)
        return 1;
    return !(next - c->e[j] <= max_bubble(z) - z->bub[j]);
}

int sc_auto_zb(sc_actx *c, int flags, sc_instr *ord, int *same)
{
    sc_prog *pg = c->pg;
    int S = c->S, m = c->m;
    zb z = {c, ord, c->dt, 0, flags & 1, (flags >> 1) & 1, (flags >> 2) & 1};
    int *freq = c->stack;
    for (int j = 0; j < S; j++) {
        c->nf[j] = c->nb[j] = c->nw[j] = 0;
        c->e[j] = c->cur[j] = z.bub[j] = 0;
        c->pc[j] = 0;
    }
    for (size_t k = 0; k < (size_t)S * (size_t)m; k++)
        c->endF[k] = c->endB[k] = -1;
    if (warmup(&z, freq, same))
        return -1;
    for (int i = 1; i < m; i++) {
        for (int j = 0; j < S; j++)
            freq[j] = wants_f(&z, j);
        for (int j = S - 2; j >= 0; j--)
            if (freq[j + 1] < freq[j])
                freq[j] = freq[j + 1];
        for (int j = 0; j < S; j++) {
            if (!freq[j])
                continue;
            if (make_room(&z, j, SC_OP_F))
                return -1;
            if (j > 0) {
                double a = c->endF[SC_SM(pg, j - 1, c->nf[j])];
                if (a < 0 || fill_gap(&z, j, a + pg->tcomm))
                    return -1;
            }
            PUT(&z, j, SC_OP_F);
        }
        for (int j = S - 1; j >= 0; j--) {
            if (c->nb[j] != i || make_room(&z, j, SC_OP_B))
                return -1;
            if (j + 1 < S && fill_gap(&z, j, c->endB[SC_SM(pg, j + 1, i)] + pg->tcomm))
                return -1;
            if (j == 0 && c->nf[j] == m)
                while (c->nw[j] < c->nb[j])
                    PUT(&z, j, SC_OP_W);
            PUT(&z, j, SC_OP_B);
        }
    }
    for (int j = 0; j < S; j++)
        while (c->nw[j] < m)
            PUT(&z, j, SC_OP_W);
    return 0;
}

/* ---- the list scheduler ----------------------------------------------------
 * Devices decide in order of time. A device deciding at time t runs, in
 * this order of preference: a B whose input is there (oldest microbatch
 * first, then the later stage); an F whose input is there and that fits in
 * memory and under the warm-up cap (by default continuing an open microbatch
 * before opening one); a W when the F is held back by memory; a W by the
 * W policy; otherwise it waits for the next input it knows of, or for
 * another device to produce one. Memory: F of a device's first stage opens
 * a microbatch and reserves the units of its later stages on the device, so
 * an open microbatch can always go on. */

#define INF HUGE_VAL

typedef struct ls {
    sc_actx *c;
    const sc_agreedy *g;
    sc_instr *ord;
    int *open, *maxopen;
    double T; /* time of the current decision */
    size_t done;
    int chg;  /* a device whose decision time place() moved, or -1 */
} ls;

static inline double ready_f(const sc_actx *c, int s, int mb)
{
    const sc_prog *pg = c->pg;
    if (s == 0)
        return 0;
    double e = c->endF[SC_SM(pg, s - 1, mb)];
    if (e < 0)
        return INF;
    return e + (pg->stage_dev[s - 1] != pg->stage_dev[s] ? pg->tcomm : 0);
}

static inline double ready_b(const sc_actx *c, int s, int mb)
{
    const sc_prog *pg = c->pg;
    double e = s == c->S - 1 ? c->endF[SC_SM(pg, s, mb)] : c->endB[SC_SM(pg, s + 1, mb)];
    if (e < 0)
        return INF;
    if (s < c->S - 1 && pg->stage_dev[s + 1] != pg->stage_dev[s])
        e += pg->tcomm;
    return e;
}

/* Memory needed to run F on chunk k of device d: 0 if it does not fit. */
static int f_fits(const ls *l, int d, int k)
{
    const sc_actx *c = l->c;
    const sc_prog *pg = c->pg;
    int n = pg->nchunks[d], *st = pg->dev_stages[d];
    if (k > 0) /* reserved when its microbatch was opened */
        return c->cur[d] + pg->mem[st[k]] <= c->limit;
    double need = c->cur[d];
    for (int q = 0; q < n; q++) /* what open microbatches still add, and this one */
        need += (double)(c->nf[st[0]] - c->nf[st[q]] + 1) * pg->mem[st[q]];
    return need <= c->limit;
}

static void place(ls *l, int d, int op, int s, double t)
{
    sc_actx *c = l->c;
    sc_prog *pg = c->pg;
    int mb = sc_op_is_fwd(op) ? c->nf[s] : sc_op_is_bgrad(op) ? c->nb[s] : c->nw[s];
    double end = t + sc_auto_cost(pg, op, s);
    c->e[d] = end;
    c->dt[d] = end;
    c->cur[d] += sc_auto_dmem(pg, op, s);
    int first = s == pg->dev_stages[d][0];
    if (sc_op_is_fwd(op)) {
        c->endF[SC_SM(pg, s, mb)] = end;
        c->nf[s]++;
        if (first && ++l->open[d] > l->maxopen[d])
            l->maxopen[d] = l->open[d];
        if (s + 1 < c->S) {
            int e = pg->stage_dev[s + 1];
            c->dt[e] = c->e[e] > l->T ? c->e[e] : l->T;
            l->chg = e;
        }
    } else if (sc_op_is_bgrad(op)) {
        c->endB[SC_SM(pg, s, mb)] = end;
        c->wtime[SC_SM(pg, s, mb)] = end;
        c->nb[s]++;
        if (first)
            l->open[d]--;
        if (s > 0) {
            int e = pg->stage_dev[s - 1];
            c->dt[e] = c->e[e] > l->T ? c->e[e] : l->T;
            l->chg = e;
        }
    } else {
        c->nw[s]++;
    }
    l->ord[c->off[d] + c->pc[d]++] =
        (sc_instr){.op = (uint8_t)op, .stage = s, .mb = mb, .peer = -1};
    l->done++;
}

/* One decision of device d at time t = dt[d]. */
static void decide(ls *l, int d)
{
    sc_actx *c = l->c;
    sc_prog *pg = c->pg;
    const sc_agreedy *g = l->g;
    double t = l->T = c->dt[d];
    int n = pg->nchunks[d], *st = pg->dev_stages[d];
    int bs = -1, fs = -1, ws = -1, blocked = 0, left = 0;
    double bmb = INF, next = INF, wt = INF;
    for (int k = 0; k < n; k++) {
        int s = st[k];
        if (c->nb[s] < c->nf[s]) { /* B of the oldest microbatch with F done */
            left = 1;
            double r = ready_b(c, s, c->nb[s]);
            if (r <= t && (c->nb[s] < bmb || (c->nb[s] == bmb && s > bs))) {
                bs = s;
                bmb = c->nb[s];
            } else if (r > t) {
                next = r < next ? r : next; /* fmin: r > t, no NaN */
            }
        }
        if (c->nf[s] < c->m) {
            left = 1;
            double r = ready_f(c, s, c->nf[s]);
            if (k == 0 && g->warm && l->open[d] >= g->warm[d])
                ; /* capped: waits for a B */
            else if (!f_fits(l, d, k))
                blocked |= r <= t;
            else if (r > t)
                next = r < next ? r : next; /* fmin: r > t, no NaN */
            else if (fs < 0 || (g->fnew ? k == 0 : k > 0))
                fs = s;
        } else if (c->nb[s] < c->m) {
            left = 1;
        }
        if (c->nw[s] < c->nb[s]) { /* the W whose B ended first */
            double w = c->wtime[SC_SM(pg, s, c->nw[s])];
            if (w < wt) {
                wt = w;
                ws = s;
            }
        }
    }
    if (bs >= 0) {
        place(l, d, SC_OP_B, bs, t);
        return;
    }
    if (fs >= 0 && g->bwait && next > t && next < t + pg->tf[fs]) {
        /* a B (or F) arrives before this F would end: only a B matters */
        for (int k = 0; k < n; k++) {
            int s = st[k];
            if (c->nb[s] < c->nf[s] && ready_b(c, s, c->nb[s]) < t + pg->tf[fs]) {
                fs = -1;
                break;
            }
        }
    }
    int pend = 0;
    for (int k = 0; k < n; k++)
        pend += c->nb[st[k]] - c->nw[st[k]];
    if (pend > l->maxopen[c->P + d])
        l->maxopen[c->P + d] = pend;
    if (fs >= 0 && ws >= 0 && g->wlag && pend > g->wlag[d])
        blocked = 1, fs = -1;
    if (fs >= 0) {
        place(l, d, SC_OP_F, fs, t);
        return;
    }
    if (ws >= 0 && (blocked || !left || g->wfill == 2 ||
                    (g->wfill == 1 && t + pg->tw[ws] <= next))) {
        place(l, d, SC_OP_W, ws, t);
        return;
    }
    c->dt[d] = next; /* wait; INF until another device produces an input */
}

/* The devices by decision time, earliest first, the lower index on a tie:
 * a winner tree (c->tree, c->tk; Q leaves; ir/wintree.h). A scan over all
 * devices took a third of the list scheduler's time at p = 32. */

int sc_auto_greedy(sc_actx *c, const sc_agreedy *g, sc_instr *ord, int *maxopen)
{
    sc_prog *pg = c->pg;
    int P = c->P;
    ls l = {c, g, ord, c->stack, maxopen ? maxopen : c->maxw, 0, 0, -1};
    for (int s = 0; s < c->S; s++)
        c->nf[s] = c->nb[s] = c->nw[s] = 0;
    for (int d = 0; d < P; d++) {
        c->e[d] = c->dt[d] = c->cur[d] = 0;
        c->pc[d] = 0;
        l.open[d] = l.maxopen[d] = l.maxopen[P + d] = 0;
    }
    for (size_t k = 0; k < (size_t)c->S * (size_t)c->m; k++)
        c->endF[k] = c->endB[k] = -1;
    (void)pg;
    sc_wtree_build(c->tree, c->tk, c->Q, c->P, c->dt);
    while (l.done < c->N) {
        int d = c->tree[1];
        if (!(c->tk[1] < INF))
            return -1;
        l.chg = -1;
        decide(&l, d);
        sc_wtree_fix(c->tree, c->tk, c->Q, d, c->dt[d]);
        if (l.chg >= 0)
            sc_wtree_fix(c->tree, c->tk, c->Q, l.chg, c->dt[l.chg]);
    }
    return 0;
}

/* ---- the ZB-H family --------------------------------------------------
 * One stage per device: device d runs x[d] warm-up F, then for each
 * microbatch j: B(j), the W up to microbatch j - x[P+d] (W delayed by that
 * many microbatches), the next F; then the remaining W. ZB-H1 is x = (p-d,
 * d), ZB-H2 is (2(p-d)-1, 2d). Memory is checked by the timing. */
int sc_auto_family(sc_actx *c, const int *x, sc_instr *ord)
{
    int P = c->P, m = c->m;
    for (int d = 0; d < P; d++) {
        size_t k = c->off[d];
        int nf = 0, nw = 0, w = x[d] < 1 ? 1 : x[d] > m ? m : x[d];
#define EMIT(op_, mb_) (ord[k++] = (sc_instr){.op = (op_), .stage = d, .mb = (mb_), .peer = -1})
        while (nf < w)
            EMIT(SC_OP_F, nf++);
        for (int j = 0; j < m; j++) {
            EMIT(SC_OP_B, j);
            while (nw <= j - x[P + d])
                EMIT(SC_OP_W, nw++);
            if (nf < m)
                EMIT(SC_OP_F, nf++);
        }
        while (nw < m)
            EMIT(SC_OP_W, nw++);
#undef EMIT
    }
    return 0;
}

/* ---- the V family ------------------------------------------------------
 * Two stages per device (the V placement): c0 = stage d on the way down,
 * c1 = stage 2P-1-d on the way back. Device d runs x[d] F of c0, then
 * x[P+d] pairs (F c1, F c0), then x[4P+d] times (F c1, B c1) (c1 catches
 * up, as in ZB-V), then repeats (F c0, B c0, F c1, B c1) while
 * forwards remain, B c0 only once more than x[3P+d] B of c1 are ahead of
 * it (the gradient of c1 takes a round trip to come back to c0), then the
 * backwards; after each B, the W beyond a lag of x[2P+d] waiting (x[5P+d]
 * once the forwards are done). A pass whose local dependency is not yet placed, or
 * whose kind is exhausted, is skipped. Always returns 0; a cycle across
 * devices is found by the timing. */
typedef struct vf {
    sc_actx *c;
    sc_instr *v;
    size_t k;
    int d, st[2], n[3][2]; /* n[kind][chunk]: F, B, W placed */
} vf;

static int vf_put(vf *f, int op, int ch)
{
    int m = f->c->m, i = f->n[op][ch], o = 1 - ch;
    if (i >= m)
        return 0;
    if (sc_op_is_bgrad(op) && i >= f->n[SC_OP_F][ch])
        return 0; /* its F first */
    if (sc_op_is_wgrad(op) && i >= f->n[SC_OP_B][ch])
        return 0;
    /* the turn of the V on the last device: F c0 -> F c1, B c1 -> B c0 */
    if (f->st[o] + (ch ? 1 : -1) == f->st[ch] && f->c->pg->stage_dev[f->st[o]] == f->d) {
        if (sc_op_is_fwd(op) && ch == 1 && i >= f->n[SC_OP_F][0])
            return 0;
        if (sc_op_is_bgrad(op) && ch == 0 && i >= f->n[SC_OP_B][1])
            return 0;
    }
    f->v[f->k++] = (sc_instr){.op = (uint8_t)op, .stage = f->st[ch], .mb = i, .peer = -1};
    f->n[op][ch]++;
    return 1;
}

static void vf_wlag(vf *f, int lag)
{
    while (f->n[SC_OP_B][0] + f->n[SC_OP_B][1] - f->n[SC_OP_W][0] - f->n[SC_OP_W][1] > lag) {
        /* the older W first: chunk 1's B run first */
        int ch = f->n[SC_OP_W][1] <= f->n[SC_OP_W][0] ? 1 : 0;
        if (!vf_put(f, SC_OP_W, ch) && !vf_put(f, SC_OP_W, 1 - ch))
            break;
    }
}

int sc_auto_vfamily(sc_actx *c, const int *x, sc_instr *ord)
{
    int P = c->P, m = c->m;
    for (int d = 0; d < P; d++) {
        vf f = {c, ord, c->off[d], d, {c->pg->dev_stages[d][0], c->pg->dev_stages[d][1]}, {{0}}};
        int lag = x[2 * P + d];
        for (int i = 0; i < x[d]; i++)
            vf_put(&f, SC_OP_F, 0);
        for (int i = 0; i < x[P + d]; i++) {
            vf_put(&f, SC_OP_F, 1);
            vf_put(&f, SC_OP_F, 0);
        }
        for (int i = 0; i < x[4 * P + d]; i++) {
            vf_put(&f, SC_OP_F, 1);
            if (vf_put(&f, SC_OP_B, 1))
                vf_wlag(&f, lag);
        }
        while (f.n[SC_OP_F][0] < m || f.n[SC_OP_F][1] < m) {
            int any = vf_put(&f, SC_OP_F, 0);
            if (f.n[SC_OP_B][1] - f.n[SC_OP_B][0] > x[3 * P + d] && vf_put(&f, SC_OP_B, 0))
                any = 1, vf_wlag(&f, lag);
            any |= vf_put(&f, SC_OP_F, 1);
            if (vf_put(&f, SC_OP_B, 1))
                any = 1, vf_wlag(&f, lag);
            if (!any && !vf_put(&f, SC_OP_B, 0))
                break;
        }
        lag = x[5 * P + d]; /* the cool-down's own W delay */
        while (f.n[SC_OP_B][0] < m || f.n[SC_OP_B][1] < m) {
            int any = 0;
            if (vf_put(&f, SC_OP_B, 0))
                any = 1, vf_wlag(&f, lag);
            if (vf_put(&f, SC_OP_B, 1))
                any = 1, vf_wlag(&f, lag);
            if (!any)
                break;
        }
        while (vf_put(&f, SC_OP_W, 1) | vf_put(&f, SC_OP_W, 0))
            ;
        if (f.k != c->off[d + 1])
            return -1; /* cannot happen: every kind runs out */
    }
    return 0;
}
