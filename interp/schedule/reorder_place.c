/*
 * reorder_place.c — the placement rounds of the reorder (reorder_impl.h):
 * the Controllable Memory paper's reorder of the warm-up and the cool-down
 * on a timeline, with real durations or on its unit slot grid.
 *
 * A round walks all passes of all devices in one global order (their start
 * in the schedule it improves) and gives each one the earliest gap of its
 * device after its input, among the passes already placed; since every
 * pass is placed after its input and no later than it was, the placed
 * passes of a device never overlap and a consumer placed later sees its
 * producer's new, earlier end: a neighbour uses a moved pass at once.
 */
#include "reorder_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EPS SC_R_EPS

/* How many passes not placed yet a memory check of the W round walks: the
 * effect of a move on the W's shows within a few passes (measured: 8 gives
 * the same schedules as the whole device on every V block of SPEC.md §10). */
#define HORIZON 16

static int is_back(int op) { return op == SC_OP_B || op == SC_OP_BW; }

/* End of the dependency of `in` (on device d) plus T_comm across devices;
 * 0 without one; < 0 while the dependency has not been placed. */
static double ready_at(const sc_rctx *c, int d, const sc_instr *in, const double *endF,
                       const double *endB, int unit)
{
    const sc_prog *pg = c->pg;
    int dop, ds;
    if (!sc_pass_dep(pg, in, &dop, &ds))
        return 0;
    double e = (dop == SC_OP_F ? endF : endB)[SC_SM(pg, ds, in->mb)];
    if (e < 0)
        return -1;
    return e + (!unit && pg->stage_dev[ds] != d ? pg->tcomm : 0);
}

static void set_end(const sc_prog *pg, const sc_instr *in, double e, double *endF, double *endB)
{
    if (in->op == SC_OP_F)
        endF[SC_SM(pg, in->stage, in->mb)] = e;
    else if (in->op != SC_OP_W)
        endB[SC_SM(pg, in->stage, in->mb)] = e;
}

/* ---- timing under a model (as dataflow.c, with the model's durations) -- */

int sc_r_time(const sc_rctx *c, const sc_instr *ord, int unit, double *start, double *end,
              size_t *seq)
{
    const sc_prog *pg = c->pg;
    int P = c->P;
    size_t SM = (size_t)pg->S * (size_t)pg->m, nseq = 0;
    double *endF = malloc(2 * SM * sizeof *endF), *tfree = calloc((size_t)P, sizeof *tfree);
    size_t *pc = calloc((size_t)P, sizeof *pc);
    int *stack = malloc((size_t)P * sizeof *stack), *queued = calloc((size_t)P, sizeof *queued);
    int ok = -1, ns = 0;
    if (!endF || !tfree || !pc || !stack || !queued)
        goto done;
    double *endB = endF + SM;
    for (size_t i = 0; i < 2 * SM; i++)
        endF[i] = -1;
    for (int d = P - 1; d >= 0; d--) {
        stack[ns++] = d;
        queued[d] = 1;
    }
    while (ns > 0) {
        int d = stack[--ns];
        queued[d] = 0;
        size_t n = c->base[d + 1] - c->base[d];
        while (pc[d] < n) {
            size_t g = c->base[d] + pc[d];
            const sc_instr *in = &ord[g];
            double r = ready_at(c, d, in, endF, endB, unit);
            if (r < 0)
                break;
            double t = r > tfree[d] ? r : tfree[d], e = t + sc_r_dur(pg, in, unit);
            start[g] = t;
            end[g] = e;
            if (seq)
                seq[g] = nseq;
            nseq++;
            tfree[d] = e;
            pc[d]++;
            set_end(pg, in, e, endF, endB);
            int w = -1;
            if (in->op == SC_OP_F && in->stage + 1 < pg->S)
                w = pg->stage_dev[in->stage + 1];
            else if (is_back(in->op) && in->stage > 0)
                w = pg->stage_dev[in->stage - 1];
            if (in->op == SC_OP_F && in->stage == pg->S - 1)
                w = d; /* its own backward */
            if (w >= 0 && !queued[w]) {
                queued[w] = 1;
                stack[ns++] = w;
            }
        }
    }
    ok = nseq == c->N;
done:
    free(endF);
    free(tfree);
    free(pc);
    free(stack);
    free(queued);
    return ok;
}

/* ---- the global order of a round ---------------------------------------- */

typedef struct gkey {
    double t;
    size_t seq;
    uint32_t k;
} gkey;

static int gkey_cmp(const void *pa, const void *pb)
{
    const gkey *a = pa, *b = pb;
    if (a->t < b->t - EPS || a->t > b->t + EPS)
        return a->t < b->t ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Phases of the walk: 0 warm-up, 1 steady state (from the first backward
 * of stage 0 on), 2 cool-down (after stage 0's forward of the last
 * microbatch). Returns whether `in` stays where it is. */
static int steady(const sc_prog *pg, const sc_instr *in, int *phase)
{
    if (*phase == 0 && is_back(in->op) && in->stage == 0)
        *phase = 1;
    if (*phase != 1)
        return 0;
    if (in->op == SC_OP_F && in->stage == 0 && in->mb == pg->m - 1)
        *phase = 2;
    return 1;
}

/* ---- a device's placed passes: sorted, non-overlapping ------------------ */

typedef struct lane {
    double *t0, *t1, *lvl; /* start, end, memory after the pass */
    uint32_t *idx;         /* position in the source */
    size_t n;
} lane;

/* The first placed pass that ends after r, at or after lo. */
static size_t first_after(const lane *L, size_t lo, double r)
{
    size_t a = lo, b = L->n;
    while (a < b) {
        size_t h = a + (b - a) / 2;
        if (L->t1[h] > r + EPS)
            b = h;
        else
            a = h + 1;
    }
    return a;
}

static void lane_insert(lane *L, size_t j, double t0, double t1, double lvl, uint32_t idx,
                        double delta)
{
    size_t tail = L->n - j;
    memmove(L->t0 + j + 1, L->t0 + j, tail * sizeof *L->t0);
    memmove(L->t1 + j + 1, L->t1 + j, tail * sizeof *L->t1);
    memmove(L->lvl + j + 1, L->lvl + j, tail * sizeof *L->lvl);
    memmove(L->idx + j + 1, L->idx + j, tail * sizeof *L->idx);
    L->t0[j] = t0;
    L->t1[j] = t1;
    L->lvl[j] = lvl;
    L->idx[j] = idx;
    L->n++;
    for (size_t i = j + 1; i < L->n; i++)
        L->lvl[i] += delta;
}

static int lanes_new(const sc_rctx *c, lane *L, double **buf, uint32_t **ibuf)
{
    *buf = malloc(3 * c->N * sizeof **buf);
    *ibuf = malloc(c->N * sizeof **ibuf);
    if (!*buf || !*ibuf)
        return 0;
    for (int d = 0; d < c->P; d++) {
        size_t b = c->base[d];
        L[d] = (lane){*buf + b, *buf + c->N + b, *buf + 2 * c->N + b, *ibuf + b, 0};
    }
    return 1;
}

/* ---- round 1: every pass into the earliest gap --------------------------- */

/* Memory stays within cap if a pass changing it by delta goes before the
 * j-th placed pass (the passes not placed yet lie after it). */
static int mem_fits(const lane *L, size_t j, double delta, double cap)
{
    if (delta <= EPS)
        return 1;
    double before = j ? L->lvl[j - 1] : 0;
    if (before + delta > cap + EPS)
        return 0;
    for (size_t i = j; i < L->n; i++)
        if (L->lvl[i] + delta > cap + EPS)
            return 0;
    return 1;
}

int sc_r_insert(const sc_rctx *c, const sc_instr *src, const double *o, const size_t *seq, int unit,
                int freeze, sc_instr *dst)
{
    const sc_prog *pg = c->pg;
    size_t N = c->N, SM = (size_t)pg->S * (size_t)pg->m;
    gkey *g = malloc(N * sizeof *g);
    double *endF = malloc(3 * SM * sizeof *endF), *buf = NULL;
    uint32_t *ibuf = NULL;
    lane *L = malloc((size_t)c->P * sizeof *L);
    int ok = -1;
    if (!g || !endF || !L || !lanes_new(c, L, &buf, &ibuf))
        goto done;
    double *endB = endF + SM, *endK = endF + 2 * SM; /* endK: last W end per stage */
    for (size_t i = 0; i < 3 * SM; i++)
        endF[i] = -1;
    for (size_t k = 0; k < N; k++)
        g[k] = (gkey){o[k], seq ? seq[k] : k, (uint32_t)k};
    qsort(g, N, sizeof *g, gkey_cmp);
    int phase = 0;
    ok = 0;
    for (size_t x = 0; x < N; x++) {
        uint32_t k = g[x].k;
        const sc_instr *in = &src[k];
        int d = c->dev[k];
        lane *ln = &L[d];
        double du = sc_r_dur(pg, in, unit), delta = sc_pass_mem(pg, in);
        int keep = steady(pg, in, &phase) && freeze;
        double r = ready_at(c, d, in, endF, endB, unit);
        if (r < 0)
            goto done; /* the input comes later: inconsistent keys */
        /* keep each kind's microbatches in order on their stage */
        size_t sm = SC_SM(pg, in->stage, in->mb);
        if (in->mb > 0) {
            double pe = in->op == SC_OP_F ? endF[sm - 1] : in->op == SC_OP_W ? endK[sm - 1] : endB[sm - 1];
            if (pe > r)
                r = pe;
        }
        size_t j = ln->n;
        double t = o[k];
        if (!keep) {
            size_t lo = ln->n > (size_t)c->window ? ln->n - (size_t)c->window : 0;
            for (size_t i = first_after(ln, lo, r);; i++) {
                double hs = i ? ln->t1[i - 1] : 0, he = i < ln->n ? ln->t0[i] : INFINITY;
                double s = hs > r ? hs : r;
                if (s > o[k] + EPS)
                    break;
                if (s + du <= he + EPS && mem_fits(ln, i, delta, c->cap[d])) {
                    j = i;
                    t = s;
                    break;
                }
                if (i >= ln->n)
                    break;
            }
        }
        if (j == ln->n && ln->n && t < ln->t1[ln->n - 1])
            t = ln->t1[ln->n - 1]; /* never overlap (keys from another model) */
        if (j == ln->n && t < r)
            t = r;
        double before = j ? ln->lvl[j - 1] : 0;
        lane_insert(ln, j, t, t + du, before + delta, k, delta);
        set_end(pg, in, t + du, endF, endB);
        if (in->op == SC_OP_W)
            endK[sm] = t + du;
    }
    for (int d = 0; d < c->P; d++)
        for (size_t i = 0; i < L[d].n; i++)
            dst[c->base[d] + i] = src[L[d].idx[i]];
    ok = 1;
done:
    free(g);
    free(endF);
    free(buf);
    free(ibuf);
    free(L);
    return ok;
}

/* ---- the W's as fillers of the gaps -------------------------------------- */

/* One item of a device's W-less sequence. */
typedef struct item {
    double t0, t1, delta;
    uint32_t k;    /* position in the source */
    int has_w;     /* a B whose W (wk) is to be placed */
    uint32_t wk;
} item;

typedef struct wq {
    double avail, dur, delta;
    uint32_t k;
    uint32_t pos; /* where its B is in the device's sequence */
} wq;

/* The walk of a device's W-less sequence that puts the W's in: oldest
 * first into every gap they fit in and, with force, just before a pass
 * that would pass cap. Resumable: a round keeps one per device as a
 * checkpoint over the passes it will not move again. */
typedef struct fill {
    double tcur, level, top;
    wq *q;
    size_t qh, qt, qcap;
    int failed; /* cap passed (forcing could not help, or no force) */
} fill;

static int fill_push(fill *f, wq w)
{
    if (f->qt == f->qcap) {
        size_t nc = f->qcap ? 2 * f->qcap : 16;
        wq *nq = realloc(f->q, nc * sizeof *nq);
        if (!nq)
            return 0;
        f->q = nq;
        f->qcap = nc;
    }
    f->q[f->qt++] = w;
    return 1;
}

/* W's into the gap that ends at lim. */
static void fill_gap(fill *f, double lim, const sc_instr *src, sc_instr *out, size_t *o)
{
    while (f->qh < f->qt) {
        wq *w = &f->q[f->qh];
        double s = w->avail > f->tcur ? w->avail : f->tcur;
        if (s + w->dur > lim + EPS)
            break;
        f->tcur = s + w->dur;
        f->level += w->delta;
        if (out)
            out[(*o)++] = src[w->k];
        f->qh++;
    }
}

/* One pass of the sequence (after the gap before it). Returns 0 when out
 * of memory. */
static int fill_step(const sc_rctx *c, fill *f, const item *it, uint32_t pos, double cap, int force,
                     int unit, const sc_instr *src, sc_instr *out, size_t *o)
{
    fill_gap(f, it->t0, src, out, o);
    double dl = it->delta;
    if (dl > EPS && f->level + dl > cap + EPS) {
        while (force && f->level + dl > cap + EPS && f->qh < f->qt && f->q[f->qh].avail <= it->t0 + EPS) {
            f->level += f->q[f->qh].delta;
            if (out)
                out[(*o)++] = src[f->q[f->qh].k];
            f->qh++;
        }
        if (f->level + dl > cap + EPS)
            f->failed = 1;
    }
    f->level += dl;
    if (f->level > f->top)
        f->top = f->level;
    if (it->t1 > f->tcur)
        f->tcur = it->t1;
    if (out)
        out[(*o)++] = src[it->k];
    if (it->has_w) {
        const sc_instr *w = &src[it->wk];
        if (!fill_push(f, (wq){it->t1, sc_r_dur(c->pg, w, unit), sc_pass_mem(c->pg, w), it->wk, pos}))
            return 0;
    }
    return 1;
}

/* The whole sequence with force, written to out; returns 1, 0 when the cap
 * cannot be kept, -1 when out of memory. */
static int fill_all(const sc_rctx *c, const item *it, size_t n, double cap, int unit,
                    const sc_instr *src, sc_instr *out)
{
    fill f = {0};
    size_t o = 0;
    int ok = 1;
    for (size_t i = 0; i < n && ok == 1; i++)
        if (!fill_step(c, &f, &it[i], (uint32_t)i, cap, 1, unit, src, out, &o))
            ok = -1;
    fill_gap(&f, INFINITY, src, out, &o);
    while (f.qh < f.qt)
        out[o++] = src[f.q[f.qh++].k];
    free(f.q);
    return ok == 1 && f.failed ? 0 : ok;
}

/* wpos[S*m]: position of each W in the source; -1 where none. */
static int w_positions(const sc_rctx *c, const sc_instr *src, long *wpos)
{
    const sc_prog *pg = c->pg;
    size_t SM = (size_t)pg->S * (size_t)pg->m;
    int any = 0;
    for (size_t i = 0; i < SM; i++)
        wpos[i] = -1;
    for (size_t k = 0; k < c->N; k++)
        if (src[k].op == SC_OP_W) {
            wpos[SC_SM(pg, src[k].stage, src[k].mb)] = (long)k;
            any = 1;
        }
    return any;
}

static item mk_item(const sc_prog *pg, const sc_instr *src, const long *wpos, uint32_t k, double t0,
                    double t1)
{
    const sc_instr *in = &src[k];
    long w = in->op == SC_OP_B ? wpos[SC_SM(pg, in->stage, in->mb)] : -1;
    return (item){t0, t1, sc_pass_mem(pg, in), k, w >= 0, w >= 0 ? (uint32_t)w : 0};
}

/* ---- round 2: W's out, the cool-down again, W's back in ------------------ */

/* The fill's state before a placed pass: kept per position, valid up to
 * where the last pass went in (placing a pass invalidates what follows). */
typedef struct wst {
    double tcur, level, top;
    uint32_t qpos; /* position of the oldest B whose W is pending */
    int failed;
} wst;

typedef struct wr {
    const sc_rctx *c;
    const sc_instr *src;
    const long *wpos;
    const double *st, *en; /* the timing the round starts from */
    lane *L;
    const uint32_t *nw;    /* non-W positions of each device, in order */
    const size_t *nwb;     /* [P+1] */
    size_t *rp;            /* [P] non-W passes of each device placed */
    wst *S;                /* [N + P]: device d's at base[d] + d */
    size_t *valid;         /* [P] states valid at positions 0 .. valid[d] */
    fill tmp;
    int unit;
    size_t horizon;        /* passes not placed yet that a check walks */
} wr;

static item lane_item(const wr *w, const lane *ln, size_t i)
{
    return mk_item(w->c->pg, w->src, w->wpos, ln->idx[i], ln->t0[i], ln->t1[i]);
}

/* w->tmp := the state before placed pass x of device d. */
static int resume(wr *w, int d, size_t x)
{
    const lane *ln = &w->L[d];
    const wst *s = &w->S[w->c->base[d] + (size_t)d + x];
    fill *f = &w->tmp;
    f->qh = f->qt = 0;
    f->tcur = s->tcur;
    f->level = s->level;
    f->top = s->top;
    f->failed = s->failed;
    for (size_t y = s->qpos; y < x; y++) {
        item it = lane_item(w, ln, y);
        if (it.has_w) {
            const sc_instr *wi = &w->src[it.wk];
            if (!fill_push(f, (wq){it.t1, sc_r_dur(w->c->pg, wi, w->unit), sc_pass_mem(w->c->pg, wi),
                                   it.wk, (uint32_t)y}))
                return 0;
        }
    }
    return 1;
}

static void save(wr *w, int d, size_t x)
{
    const fill *f = &w->tmp;
    w->S[w->c->base[d] + (size_t)d + x] =
        (wst){f->tcur, f->level, f->top, f->qh < f->qt ? f->q[f->qh].pos : (uint32_t)x, f->failed};
}

/* Makes the states valid up to position x. */
static int extend(wr *w, int d, size_t x)
{
    if (w->valid[d] >= x)
        return 1;
    const lane *ln = &w->L[d];
    size_t y = w->valid[d], o = 0;
    if (!resume(w, d, y))
        return 0;
    for (; y < x; y++) {
        item it = lane_item(w, ln, y);
        if (!fill_step(w->c, &w->tmp, &it, (uint32_t)y, w->c->cap[d], 0, w->unit, w->src, NULL, &o))
            return 0;
        save(w, d, y + 1);
    }
    w->valid[d] = x;
    return 1;
}

/* Would device d stay within its cap with the pass (s, du, position k)
 * placed before the i-th placed pass? 1 yes, 0 no, -1 out of memory. */
static int wr_fits(wr *w, int d, size_t i, double s, double du, uint32_t k)
{
    const sc_rctx *c = w->c;
    const lane *ln = &w->L[d];
    fill *f = &w->tmp;
    double cap = c->cap[d];
    size_t o = 0;
    if (!extend(w, d, i) || !resume(w, d, i))
        return -1;
    item it = mk_item(c->pg, w->src, w->wpos, k, s, s + du);
    if (!fill_step(c, f, &it, 0, cap, 0, w->unit, w->src, NULL, &o))
        return -1;
    for (size_t x = i; x < ln->n && !f->failed; x++) {
        item li = lane_item(w, ln, x);
        if (!fill_step(c, f, &li, 0, cap, 0, w->unit, w->src, NULL, &o))
            return -1;
    }
    size_t rest = w->nwb[d] + w->rp[d], stop = rest + w->horizon;
    for (size_t x = rest; x < w->nwb[d + 1] && x < stop && !f->failed; x++) {
        uint32_t q = w->nw[x];
        item ri = mk_item(c->pg, w->src, w->wpos, q, w->st[q], w->en[q]);
        if (!fill_step(c, f, &ri, 0, cap, 0, w->unit, w->src, NULL, &o))
            return -1;
    }
    return !f->failed;
}

int sc_r_wround(const sc_rctx *c, const sc_instr *src, int unit, int freeze0, sc_instr *dst)
{
    const sc_prog *pg = c->pg;
    int P = c->P;
    size_t N = c->N, SM = (size_t)pg->S * (size_t)pg->m;
    double *st = malloc(2 * N * sizeof *st), *endF = malloc(2 * SM * sizeof *endF), *buf = NULL;
    size_t *seq = malloc(N * sizeof *seq), *nwb = malloc(((size_t)P + 1) * sizeof *nwb);
    size_t *rp = calloc((size_t)P, sizeof *rp), *valid = calloc((size_t)P, sizeof *valid);
    long *wpos = malloc(SM * sizeof *wpos);
    gkey *g = malloc(N * sizeof *g);
    uint32_t *ibuf = NULL, *nw = malloc(N * sizeof *nw);
    lane *L = malloc((size_t)P * sizeof *L);
    wst *S = calloc(N + (size_t)P, sizeof *S);
    item *it = malloc(N * sizeof *it);
    wr w = {.c = c, .src = src, .unit = unit};
    int ok = -1;
    if (!st || !endF || !seq || !nwb || !rp || !valid || !wpos || !g || !nw || !L || !S || !it ||
        !lanes_new(c, L, &buf, &ibuf))
        goto done;
    ok = 0;
    if (!w_positions(c, src, wpos) || (ok = sc_r_time(c, src, unit, st, st + N, seq)) != 1)
        goto done;
    ok = -1;
    double *endB = endF + SM;
    for (size_t i = 0; i < 2 * SM; i++)
        endF[i] = -1;
    size_t ng = 0, nn = 0;
    for (int d = 0; d < P; d++) {
        nwb[d] = nn;
        for (size_t k = c->base[d]; k < c->base[d + 1]; k++)
            if (src[k].op != SC_OP_W) {
                nw[nn++] = (uint32_t)k;
                g[ng++] = (gkey){st[k], seq[k], (uint32_t)k};
            }
    }
    nwb[P] = nn;
    qsort(g, ng, sizeof *g, gkey_cmp);
    w = (wr){c, src, wpos, st, st + N, L, nw, nwb, rp, S, valid, {.q = NULL, .qcap = 0}, unit,
             HORIZON};
    int phase = 0;
    for (size_t x = 0; x < ng; x++) {
        uint32_t k = g[x].k;
        const sc_instr *in = &src[k];
        int d = c->dev[k];
        lane *ln = &L[d];
        double du = sc_r_dur(pg, in, unit), o = st[k];
        int keep = steady(pg, in, &phase) || (phase == 0 && freeze0);
        rp[d]++;
        double r = ready_at(c, d, in, endF, endB, unit);
        if (r < 0) {
            ok = 0;
            goto done;
        }
        if (in->mb > 0) {
            size_t sm = SC_SM(pg, in->stage, in->mb - 1);
            double pe = in->op == SC_OP_F ? endF[sm] : endB[sm];
            if (pe > r)
                r = pe;
        }
        size_t j = ln->n;
        double t = o;
        if (!keep) {
            size_t lo = ln->n > (size_t)c->window ? ln->n - (size_t)c->window : 0;
            for (size_t i = first_after(ln, lo, r);; i++) {
                double hs = i ? ln->t1[i - 1] : 0, he = i < ln->n ? ln->t0[i] : INFINITY;
                double s = hs > r ? hs : r;
                if (s > o + EPS)
                    break;
                if (s + du <= he + EPS) {
                    int f = wr_fits(&w, d, i, s, du, k);
                    if (f < 0)
                        goto done;
                    if (f) {
                        j = i;
                        t = s;
                        break;
                    }
                }
                if (i >= ln->n)
                    break;
            }
        }
        if (j == ln->n && ln->n && t < ln->t1[ln->n - 1])
            t = ln->t1[ln->n - 1];
        if (j == ln->n && t < r)
            t = r;
        lane_insert(ln, j, t, t + du, 0, k, 0);
        if (valid[d] > j)
            valid[d] = j;
        set_end(pg, in, t + du, endF, endB);
    }
    ok = 1;
    for (int d = 0; d < P && ok == 1; d++) {
        for (size_t i = 0; i < L[d].n; i++)
            it[i] = lane_item(&w, &L[d], i);
        ok = fill_all(c, it, L[d].n, c->cap[d], unit, src, dst + c->base[d]);
    }
done:
    free(w.tmp.q);
    free(st);
    free(endF);
    free(buf);
    free(seq);
    free(nwb);
    free(rp);
    free(valid);
    free(wpos);
    free(g);
    free(ibuf);
    free(nw);
    free(L);
    free(S);
    free(it);
    return ok;
}
