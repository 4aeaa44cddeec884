/*
 * reorder_wround.c — the W round of the reorder (reorder_impl.h): the W's
 * taken out, the cool-down (and the warm-up) placed again into the
 * earliest gaps, each W put back into the first gap after its B that it
 * fits in, or just before an F that would pass the cap; a move is kept
 * only if memory, W's placed so, stays within the cap.
 */
#include "reorder_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EPS SC_R_EPS

/* How many passes not placed yet a memory check of the W round walks: the
 * effect of a move on the W's shows within a few passes (measured: 8 gives
 * the same schedules as the whole device on every V block of docs/recipes.md). */
#define HORIZON 16

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
        wq *nq = sc_realloc(f->q, nc * sizeof *nq);
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
        if (!fill_push(f, (wq){it->t1, sc_r_cost(c, w, unit), sc_r_mem(c, w), it->wk, pos}))
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
    sc_free(f.q);
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
        if (sc_r_w_only(src[k].op)) {
            wpos[SC_SM(pg, src[k].stage, src[k].mb)] = (long)k;
            any = 1;
        }
    return any;
}

/* What an item needs of the pass at each position of the source, found
 * once per round (the checks make items of the same passes many times). */
typedef struct pinfo {
    double mem;  /* its memory change */
    int32_t wk;  /* a B's W, its position; -1: none */
} pinfo;

static void pinfo_fill(const sc_rctx *c, const sc_instr *src, const long *wpos, pinfo *pi)
{
    for (size_t k = 0; k < c->N; k++) {
        const sc_instr *in = &src[k];
        long w = sc_op_is_bgrad(in->op) ? wpos[SC_SM(c->pg, in->stage, in->mb)] : -1;
        pi[k] = (pinfo){sc_r_mem(c, in), (int32_t)w};
    }
}

static item mk_item(const pinfo *pi, uint32_t k, double t0, double t1)
{
    int32_t w = pi[k].wk;
    return (item){t0, t1, pi[k].mem, k, w >= 0, w >= 0 ? (uint32_t)w : 0};
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
    const pinfo *pi;       /* [N] */
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
    return mk_item(w->pi, ln->idx[i], ln->t0[i], ln->t1[i]);
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
        int32_t wk = w->pi[ln->idx[y]].wk;
        if (wk >= 0) {
            const sc_instr *wi = &w->src[wk];
            if (!fill_push(f, (wq){ln->t1[y], sc_r_cost(w->c, wi, w->unit), w->pi[wk].mem,
                                   (uint32_t)wk, (uint32_t)y}))
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
    item it = mk_item(w->pi, k, s, s + du);
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
        item ri = mk_item(w->pi, q, w->st[q], w->en[q]);
        if (!fill_step(c, f, &ri, 0, cap, 0, w->unit, w->src, NULL, &o))
            return -1;
    }
    return !f->failed;
}

int sc_r_wround(const sc_rctx *c, const sc_instr *src, const sc_rtime *ts, int unit, int freeze0,
                sc_instr *dst)
{
    const sc_prog *pg = c->pg;
    int P = c->P;
    size_t N = c->N, SM = (size_t)pg->S * (size_t)pg->m;
    double *st = ts ? NULL : sc_malloc(2 * N * sizeof *st), *endF = sc_malloc(2 * SM * sizeof *endF);
    double *buf = NULL, *en = st ? st + N : NULL;
    size_t *seq = ts ? NULL : sc_malloc(N * sizeof *seq), *nwb = sc_malloc(((size_t)P + 1) * sizeof *nwb);
    size_t *rp = sc_calloc((size_t)P, sizeof *rp), *valid = sc_calloc((size_t)P, sizeof *valid);
    long *wpos = sc_malloc(SM * sizeof *wpos);
    gkey *g = sc_malloc(N * sizeof *g);
    uint32_t *ibuf = NULL, *nw = sc_malloc(N * sizeof *nw);
    lane *L = sc_malloc((size_t)P * sizeof *L);
    wst *S = sc_malloc((N + (size_t)P) * sizeof *S); /* each device's first state: below */
    item *it = sc_malloc(N * sizeof *it);
    pinfo *pi = sc_malloc((N + 1) * sizeof *pi);
    wr w = {.c = c, .src = src, .unit = unit};
    int ok = -1;
    if ((!ts && (!st || !seq)) || !endF || !nwb || !rp || !valid || !wpos || !g || !nw || !L || !S || !it ||
        !pi || !sc_r_lanes_new(c, L, &buf, &ibuf))
        goto done;
    ok = 0;
    if (!w_positions(c, src, wpos))
        goto done;
    pinfo_fill(c, src, wpos, pi);
    for (int d = 0; d < P; d++) /* the fill's state before a device's first pass; */
        S[c->base[d] + (size_t)d] = (wst){0, 0, 0, 0, 0}; /* the rest is saved before read */
    if ((ok = ts ? ts->ok : sc_r_time(c, src, unit, st, en, seq)) != 1)
        goto done;
    const double *tst = ts ? ts->st : st, *ten = ts ? ts->en : en; /* src's timing */
    const size_t *tseq = ts ? ts->seq : seq;
    ok = -1;
    double *endB = endF + SM;
    for (size_t i = 0; i < 2 * SM; i++)
        endF[i] = -1;
    size_t ng = 0, nn = 0;
    for (int d = 0; d < P; d++) {
        nwb[d] = nn;
        for (size_t k = c->base[d]; k < c->base[d + 1]; k++)
            if (!sc_r_w_only(src[k].op))
                nw[nn++] = (uint32_t)k;
    }
    nwb[P] = nn;
    /* the keys are a timing: its topological order (reorder_impl.h) */
    sc_r_seq_order(tseq, N, ibuf); /* the lanes' idx, empty until the walk */
    for (size_t x = 0; x < N; x++)
        if (!sc_r_w_only(src[ibuf[x]].op))
            g[ng++] = (gkey){tst[ibuf[x]], tseq[ibuf[x]], ibuf[x]};
    sc_rphase ph;
    sc_r_phase_init(pg, src, g, ng, &ph);
    w = (wr){c, src, pi, tst, ten, L, nw, nwb, rp, S, valid, {.q = NULL, .qcap = 0}, unit,
             HORIZON};
    for (size_t x = 0; x < ng; x++) {
        uint32_t k = g[x].k;
        const sc_instr *in = &src[k];
        int d = c->dev[k];
        lane *ln = &L[d];
        double du = sc_r_cost(c, in, unit), o = tst[k];
        int phase = sc_r_phase_of(&ph, &g[x]), keep = phase == 1 || (phase == 0 && freeze0);
        rp[d]++;
        double r = sc_r_ready_at(c, d, in, endF, endB, unit);
        if (r < 0) {
            ok = 0;
            goto done;
        }
        if (in->mb > 0) {
            size_t sm = SC_SM(pg, in->stage, in->mb - 1);
            double pe = sc_op_is_fwd(in->op) ? endF[sm] : endB[sm];
            if (pe > r)
                r = pe;
        }
        size_t j = ln->n;
        double t = o;
        if (!keep) {
            size_t lo = ln->n > (size_t)c->window ? ln->n - (size_t)c->window : 0;
            for (size_t i = sc_r_first_after(ln, lo, r);; i++) {
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
        sc_r_lane_insert(ln, j, t, t + du, 0, k, 0);
        if (valid[d] > j)
            valid[d] = j;
        sc_r_set_end(pg, in, t + du, endF, endB);
    }
    ok = 1;
    for (int d = 0; d < P && ok == 1; d++) {
        for (size_t i = 0; i < L[d].n; i++)
            it[i] = lane_item(&w, &L[d], i);
        ok = fill_all(c, it, L[d].n, c->cap[d], unit, src, dst + c->base[d]);
    }
done:
    sc_free(w.tmp.q);
    sc_free(st);
    sc_free(endF);
    sc_free(buf);
    sc_free(seq);
    sc_free(nwb);
    sc_free(rp);
    sc_free(valid);
    sc_free(wpos);
    sc_free(g);
    sc_free(ibuf);
    sc_free(nw);
    sc_free(L);
    sc_free(S);
    sc_free(it);
    sc_free(pi);
    return ok;
}

