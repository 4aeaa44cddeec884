/*
 * vocab.c — placing the vocabulary passes into the orders (vocab.h).
 */
#include "vocab.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEAD_E 2  /* E runs up to this many microbatches ahead of F s0 */
#define PENDING 2 /* a T or EW is forced when this many wait */
#define MAX_SHIFT 3 /* the most forwards the backwards are moved past */

enum { C_NONE, C_BASE, C_LOOK, C_S, C_T, C_E, C_EW };
/* Events of a placement that devices other than its own and its stage
 * neighbours' may read (vplace.ev): xs, gs grew; nF0 grew; every device
 * ran a vocabulary pass of a microbatch (its readers: F s0, T, B of the
 * last stage). */
enum { EV_XS = 1, EV_GS = 2, EV_F0 = 4, EV_VOCAB = 8 };

typedef struct choice {
    int kind;
    double t;
    size_t k;    /* base index (C_BASE, C_LOOK) */
    int mb;
} choice;

typedef struct vdev {
    sc_instr *base;     /* the stage passes of its order */
    char *taken;        /* [nb] already placed */
    size_t nb, head;    /* head: first not taken */
    sc_vec out;         /* the new order */
    double tfree, mem, cap, peak;
    int nE, nS, nT, nEW; /* vocabulary passes placed, by kind */
    size_t sx, tx, gx;  /* next entry of xs, ts, gs to run */
} vdev;

typedef struct vplace {
    sc_prog *pg;
    vdev *dv;
    double *endF, *endB; /* [S m], < 0: not placed */
    int *vcnt;           /* [4 m] devices that ran each vocabulary pass */
    double *vend;        /* [4 m] the latest end */
    int *xs, *ts, *gs;   /* microbatches in the order their F s(S-1), statistics,
                          * B s0 became known (what S, T, EW wait for) */
    int nx, nt, ng, nF0;
    double chain[4][3];  /* sc_vocab_chain_time by vocabulary index and part */
    double cF, cB;       /* the broadcasts of F s(S-1) and B s0 (sc_vocab_coll_time) */
    int ev;              /* what the last placement changed that any device reads (EV_) */
    choice *dc;          /* [P] each device's current decision */
    double *key;         /* [P] its time, dc[d].t (compact for the heap) */
    int *heap, *hpos;    /* [P] devices by decision time, each one's place */
} vplace;

static double maxd(double a, double b) { return a > b ? a : b; }

/* When a stage pass could start as far as its dependencies go (< 0:
 * unknown yet). */
static double base_ready(const vplace *v, int d, const sc_instr *in)
{
    sc_prog *pg = v->pg;
    double r = sc_dep_ready(pg, d, in, v->endF, v->endB);
    if (r < 0)
        return -1;
    int op, part;
    if (sc_vocab_all_dep(pg, in, &op, &part)) {
        size_t i = (size_t)sc_op_vocab_index(op) * (size_t)pg->m + (size_t)in->mb;
        if (v->vcnt[i] < pg->P)
            return -1;
        r = maxd(r, v->vend[i] + v->chain[sc_op_vocab_index(op)][part]);
    }
    return r;
}

/* What device d runs next and when (t = INFINITY: nothing can be known to
 * be ready yet). */
static choice decide(const vplace *v, int d)
{
    sc_prog *pg = v->pg;
    const vdev *D = &v->dv[d];
    int m = pg->m, v2 = pg->vocab == SC_VOCAB_V2;
    double rS = -1, rT = -1, rEW = -1, rB = -1, rL = -1;
    int mS = -1, mT = -1, mEW = -1;
    size_t kL = 0;
    if (D->sx < (size_t)v->nx) {
        mS = v->xs[D->sx];
        rS = v->endF[SC_SM(pg, pg->S - 1, mS)] + v->cF;
    }
    if (D->tx < (size_t)v->nt) {
        mT = v->ts[D->tx];
        rT = v->vend[(size_t)mT] + v->chain[sc_op_vocab_index(SC_OP_S)][1];
    }
    if (D->gx < (size_t)v->ng) {
        mEW = v->gs[D->gx];
        rEW = v->endB[SC_SM(pg, 0, mEW)] + v->cB;
    }
    if (D->head < D->nb) {
        const sc_instr *h = &D->base[D->head];
        rB = base_ready(v, d, h);
        /* A later forward, when the next pass waits, within the allowance
         * (lag > 0 only: it may also close a cycle through another device). */
        if (D->cap > D->peak + 1e-9 && sc_op_is_bgrad(h->op) &&
            (rB < 0 || rB > D->tfree))
            for (size_t k = D->head + 1; k < D->nb; k++) {
                if (D->taken[k])
                    continue;
                if (!sc_op_is_fwd(D->base[k].op))
                    break;
                if (D->mem + sc_op_mem(pg, SC_OP_F, D->base[k].stage) <= D->cap + 1e-9) {
                    rL = base_ready(v, d, &D->base[k]);
                    kL = k;
                }
                break;
            }
    }
    int eDue = D->nE < m && D->nE < v->nF0 + LEAD_E;
    int pendT = D->nS - D->nT, pendEW = v->ng - (int)D->gx;
    /* The earliest time anything is ready. */
    double t = eDue ? D->tfree : INFINITY;
#define EARLIER(r) do { if ((r) >= 0 && maxd((r), D->tfree) < t) t = maxd((r), D->tfree); } while (0)
    EARLIER(rS);
    EARLIER(rT);
    EARLIER(rEW);
    EARLIER(rB);
    EARLIER(rL);
#undef EARLIER
    choice c = {C_NONE, t, 0, -1};
    if (!isfinite(t))
        return c;
#define READY(r) ((r) >= 0 && (r) <= t)
    if (READY(rS))
        c.kind = C_S, c.mb = mS;
    else if (v2 && READY(rT))
        c.kind = C_T, c.mb = mT;
    else if (eDue)
        c.kind = C_E, c.mb = D->nE;
    else if (READY(rT) && pendT >= PENDING)
        c.kind = C_T, c.mb = mT;
    else if (READY(rEW) && pendEW >= PENDING)
        c.kind = C_EW, c.mb = mEW;
    else if (READY(rB))
        c.kind = C_BASE, c.k = D->head;
    else if (READY(rL))
        c.kind = C_LOOK, c.k = kL;
    else if (READY(rT))
        c.kind = C_T, c.mb = mT;
    else if (READY(rEW))
        c.kind = C_EW, c.mb = mEW;
#undef READY
    return c;
}

static sc_status place(vplace *v, int d, choice c)
{
    sc_prog *pg = v->pg;
    vdev *D = &v->dv[d];
    sc_instr in;
    if (c.kind == C_BASE || c.kind == C_LOOK) {
        in = D->base[c.k];
        D->taken[c.k] = 1;
        while (D->head < D->nb && D->taken[D->head])
            D->head++;
    } else {
        int op = SC_OP_EW;
        if (c.kind == C_S)
            op = SC_OP_S, D->sx++, D->nS++;
        else if (c.kind == C_T)
            op = SC_OP_T, D->tx++, D->nT++;
        else if (c.kind == C_E)
            op = SC_OP_E, D->nE++;
        else
            D->gx++, D->nEW++;
        in = (sc_instr){.op = (uint8_t)op, .stage = d, .mb = c.mb, .peer = -1};
    }
    if (sc_vec_push(&D->out, in) != SC_OK)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory placing the vocabulary passes");
    double e = c.t + sc_pass_cost(pg, &in);
    D->tfree = e;
    D->mem += sc_pass_mem(pg, &in);
    if (sc_op_is_vocab(in.op)) {
        size_t i = (size_t)sc_op_vocab_index(in.op) * (size_t)pg->m + (size_t)in.mb;
        v->vend[i] = maxd(v->vend[i], e);
        if (++v->vcnt[i] == pg->P) {
            v->ev |= EV_VOCAB; /* its readers may run */
            if (c.kind == C_S) /* every S: T may run */
                v->ts[v->nt++] = in.mb;
        }
        return SC_OK;
    }
    size_t sm = SC_SM(pg, in.stage, in.mb);
    if (sc_op_is_fwd(in.op)) {
        v->endF[sm] = e;
        if (in.stage == pg->S - 1)
            v->xs[v->nx++] = in.mb, v->ev |= EV_XS;
        if (in.stage == 0)
            v->nF0++, v->ev |= EV_F0;
    } else if (sc_op_is_bgrad(in.op)) {
        v->endB[sm] = e;
        if (in.stage == 0)
            v->gs[v->ng++] = in.mb, v->ev |= EV_GS;
    }
    return SC_OK;
}

int sc_vocab_placed(const sc_prog *pg)
{
    for (int d = 0; d < pg->P; d++)
        for (size_t k = 0; k < pg->order[d].n; k++)
            if (sc_op_is_vocab(pg->order[d].v[k].op))
                return 1;
    return 0;
}

/* The orders of `base` (P vectors of stage passes) with each backward and
 * weight pass moved after `shift` more forwards of its device (in the
 * order of each kind: the forwards keep theirs, the rest theirs), into
 * out. A device then holds about `shift` more microbatches, and the last
 * stage's backward of a microbatch comes `shift` forwards later: the time
 * the collectives of S need. */
static sc_status shifted(sc_prog *pg, const sc_vec *base, int shift, sc_vec *out)
{
    for (int d = 0; d < pg->P; d++) {
        const sc_vec *b = &base[d];
        out[d].n = 0;
        size_t nf = 0, fdone = 0, j = 0;
        for (size_t k = 0; k < b->n; k++)
            nf += sc_op_is_fwd(b->v[k].op);
        /* x goes after min(f(x) + shift, nf) forwards, f(x) the forwards
         * before it in the base order. */
        size_t *need = sc_malloc((b->n + 1) * sizeof(size_t));
        if (!need)
            return sc_fail(pg, SC_ERR_NOMEM, "out of memory placing the vocabulary passes");
        for (size_t k = 0, f = 0; k < b->n; k++) {
            if (sc_op_is_fwd(b->v[k].op))
                f++;
            else
                need[k] = f + (size_t)shift < nf ? f + (size_t)shift : nf;
        }
        size_t kf = 0; /* next forward */
        for (; j < b->n || kf < b->n;) {
            while (j < b->n && sc_op_is_fwd(b->v[j].op))
                j++;
            while (kf < b->n && !sc_op_is_fwd(b->v[kf].op))
                kf++;
            int take_rest = j < b->n && need[j] <= fdone;
            if (!take_rest && kf >= b->n && j >= b->n)
                break;
            const sc_instr *x = take_rest || kf >= b->n ? &b->v[j++] : &b->v[kf++];
            if (sc_op_is_fwd(x->op))
                fdone++;
            if (sc_vec_push(&out[d], *x) != SC_OK) {
                sc_free(need);
                return sc_fail(pg, SC_ERR_NOMEM, "out of memory placing the vocabulary passes");
            }
        }
        sc_free(need);
    }
    return SC_OK;
}

/* The devices by decision time, earliest first, the lower index on a tie
 * (a binary heap, each device's place in hpos): the device the list
 * schedule places next in O(log P), where a scan of every device for every
 * pass made the placement O(P^2 m). */
static int dc_less(const vplace *v, int a, int b)
{
    return v->key[a] < v->key[b] || (v->key[a] == v->key[b] && a < b);
}

/* Moves the device at heap[i] down to its place (a hole moved down, each
 * device it passes written once). */
static void heap_down(vplace *v, int i)
{
    int P = v->pg->P, d = v->heap[i];
    for (;;) {
        int l = 2 * i + 1, b = l;
        if (l >= P)
            break;
        if (l + 1 < P && dc_less(v, v->heap[l + 1], v->heap[l]))
            b = l + 1;
        if (!dc_less(v, v->heap[b], d))
            break;
        v->heap[i] = v->heap[b];
        v->hpos[v->heap[i]] = i;
        i = b;
    }
    v->heap[i] = d;
    v->hpos[d] = i;
}

/* Decides device d again and restores the heap. */
static void heap_redecide(vplace *v, int d)
{
    double was = v->key[d];
    v->dc[d] = decide(v, d);
    v->key[d] = v->dc[d].t;
    if (v->key[d] == was)
        return;
    int i = v->hpos[d];
    while (i > 0 && dc_less(v, d, v->heap[(i - 1) / 2])) {
        v->heap[i] = v->heap[(i - 1) / 2];
        v->hpos[v->heap[i]] = i;
        i = (i - 1) / 2;
    }
    v->heap[i] = d;
    v->hpos[d] = i;
    heap_down(v, i);
}

/* Whether device e's decision reads what the events ev changed (decide):
 * the next entry of xs or gs when it had none, the count of gs waiting
 * (pendEW) at the threshold, E coming due as F s0 advanced. */
static int reads_event(const vplace *v, int e, int ev)
{
    const vdev *D = &v->dv[e];
    if ((ev & EV_XS) && D->sx + 1 == (size_t)v->nx)
        return 1;
    if ((ev & EV_GS) && (D->gx + 1 == (size_t)v->ng || v->ng - (int)D->gx == PENDING))
        return 1;
    if ((ev & EV_F0) && D->nE == v->nF0 + LEAD_E - 1 && D->nE < v->pg->m)
        return 1;
    if ((ev & EV_VOCAB) && D->tx + 1 == (size_t)v->nt) /* ts grew */
        return 1;
    return 0;
}

/* After `in` was placed on device d: decides again every device whose
 * decision reads what changed. A stage pass changes what its own device
 * reads and the dependency of the neighbouring stage's next pass (F(s) for
 * F(s+1), B(s) for B(s-1): sc_pass_dep); the last of a vocabulary pass's P
 * runs, its readers on the devices of stages 0 and S-1 (sc_vocab_all_dep);
 * the lists every device reads, the devices reads_event names. O(log P)
 * per device decided again; the events' scan is O(P) and comes O(m) times. */
static void redecide(vplace *v, int d, const sc_instr *in)
{
    sc_prog *pg = v->pg;
    heap_redecide(v, d);
    int ds = -1;
    if (sc_op_is_fwd(in->op) && in->stage + 1 < pg->S)
        ds = in->stage + 1;
    else if (sc_op_is_bgrad(in->op) && in->stage > 0)
        ds = in->stage - 1;
    if (ds >= 0 && pg->stage_dev[ds] != d)
        heap_redecide(v, pg->stage_dev[ds]);
    int ev = v->ev;
    v->ev = 0;
    if (!ev)
        return;
    int e0 = pg->stage_dev[0], e1 = pg->stage_dev[pg->S - 1];
    for (int e = 0; e < pg->P; e++)
        if (e != d && ((ev & EV_VOCAB && (e == e0 || e == e1)) || reads_event(v, e, ev)))
            heap_redecide(v, e);
}

/* The list schedule of vocab.h on the orders `base` (stage passes), into
 * out (all passes); *span: when the last pass ends. */
static sc_status place_on(sc_prog *pg, const sc_vec *base, double lag, sc_vec *out, double *span)
{
    int P = pg->P, m = pg->m;
    size_t SM = (size_t)pg->S * (size_t)m;
    vplace v = {.pg = pg};
    v.dv = sc_calloc((size_t)P, sizeof(vdev));
    v.endF = sc_malloc(SM * sizeof(double));
    v.endB = sc_malloc(SM * sizeof(double));
    v.vcnt = sc_calloc(4 * (size_t)m, sizeof(int));
    v.vend = sc_calloc(4 * (size_t)m, sizeof(double));
    v.xs = sc_malloc(3 * (size_t)m * sizeof(int));
    v.dc = sc_malloc((size_t)P * sizeof(choice));
    v.key = sc_malloc((size_t)P * sizeof(double));
    v.heap = sc_malloc(2 * (size_t)P * sizeof(int));
    v.hpos = v.heap ? v.heap + P : NULL;
    v.ts = v.xs ? v.xs + m : NULL;
    v.gs = v.xs ? v.xs + 2 * (size_t)m : NULL;
    sc_status st = SC_OK;
    size_t total = 0;
    if (!v.dv || !v.endF || !v.endB || !v.vcnt || !v.vend || !v.xs || !v.dc || !v.key || !v.heap) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory placing the vocabulary passes");
        goto done;
    }
    for (size_t i = 0; i < SM; i++)
        v.endF[i] = v.endB[i] = -1;
    for (int i = 0; i < 4; i++) /* the same sums, once */
        for (int part = 0; part < 3; part++)
            v.chain[i][part] = sc_vocab_chain_time(pg, sc_vocab_op(i), part);
    v.cF = sc_vocab_coll_time(pg, SC_OP_F, 0);
    v.cB = sc_vocab_coll_time(pg, SC_OP_B, 0);
    for (int d = 0; d < P; d++) {
        vdev *D = &v.dv[d];
        const sc_vec *ov = &base[d];
        D->base = sc_malloc((ov->n + 1) * sizeof(sc_instr));
        D->taken = sc_calloc(ov->n + 1, 1);
        if (!D->base || !D->taken) {
            st = sc_fail(pg, SC_ERR_NOMEM, "out of memory placing the vocabulary passes");
            goto done;
        }
        /* The allowance: the order's own peak, plus lag microbatches of the
         * device's activations, plus PENDING records of S. */
        double mem = 0, peak = 0, share = 0;
        for (size_t k = 0; k < ov->n; k++) {
            D->base[D->nb++] = ov->v[k];
            mem += sc_pass_mem(pg, &ov->v[k]);
            peak = maxd(peak, mem);
        }
        for (int c = 0; c < pg->nchunks[d]; c++)
            share += pg->mem[pg->dev_stages[d][c]];
        D->peak = peak + PENDING * (pg->vmem ? pg->vmem[d] : 0);
        D->cap = D->peak + lag * share;
        total += ov->n + 4 * (size_t)m;
    }
    for (int d = 0; d < P; d++) {
        v.dc[d] = decide(&v, d);
        v.key[d] = v.dc[d].t;
        v.heap[d] = v.hpos[d] = d;
    }
    for (int i = P / 2 - 1; i >= 0; i--)
        heap_down(&v, i);
    for (size_t placed = 0; placed < total; placed++) {
        int best = v.heap[0];
        choice bc = v.dc[best];
        if (bc.kind == C_NONE) {
            char msg[sizeof pg->err];
            size_t len = (size_t)snprintf(msg, sizeof msg, "vocabulary passes: the orders cannot "
                                          "all run:");
            for (int d = 0; d < P && len < sizeof msg; d++) {
                vdev *D = &v.dv[d];
                if (D->head < D->nb) {
                    char a[64];
                    sc_instr_format(&D->base[D->head], a, sizeof a);
                    len += (size_t)snprintf(msg + len, sizeof msg - len, " d%d waits at %s;", d, a);
                }
            }
            st = sc_fail(pg, SC_ERR_PROGRAM, "%s", msg);
            if (getenv("SC_VDEBUG"))
                for (int d = 0; d < P; d++) {
                    fprintf(stderr, "d%d:", d);
                    for (size_t k = 0; k < v.dv[d].out.n; k++) {
                        char a[64];
                        sc_instr_format(&v.dv[d].out.v[k], a, sizeof a);
                        fprintf(stderr, " [%s]", a);
                    }
                    fprintf(stderr, "\n");
                }
            goto done;
        }
        if ((st = place(&v, best, bc)) != SC_OK)
            goto done;
        redecide(&v, best, &v.dv[best].out.v[v.dv[best].out.n - 1]);
    }
    *span = 0;
    for (int d = 0; d < P; d++) {
        *span = maxd(*span, v.dv[d].tfree);
        sc_vec tmp = out[d];
        out[d] = v.dv[d].out; /* the new order; the old buffer is freed below */
        v.dv[d].out = tmp;
        v.dv[d].out.n = 0;
    }
done:
    for (int d = 0; v.dv && d < P; d++) {
        sc_free(v.dv[d].base);
        sc_free(v.dv[d].taken);
        sc_vec_free(&v.dv[d].out);
    }
    sc_free(v.dv);
    sc_free(v.endF);
    sc_free(v.endB);
    sc_free(v.vcnt);
    sc_free(v.vend);
    sc_free(v.xs);
    sc_free(v.dc);
    sc_free(v.key);
    sc_free(v.heap);
    return st;
}

/* How far the candidate orders o pass the memory caps: the largest
 * excess of a device's peak over its cap (0: within every cap). */
static double over_caps(const sc_prog *pg, const sc_vec *o)
{
    double worst = 0;
    for (int d = 0; d < pg->P; d++) {
        double cap = sc_prog_mem_cap(pg, d), cur = 0, peak = 0;
        if (!isfinite(cap))
            continue;
        for (size_t k = 0; k < o[d].n; k++) {
            cur += sc_pass_mem(pg, &o[d].v[k]);
            peak = peak > cur ? peak : cur;
        }
        if (peak - cap > worst)
            worst = peak - cap;
    }
    return worst > 1e-9 ? worst : 0;
}

sc_status sc_vocab_place(sc_prog *pg, double lag)
{
    int P = pg->P;
    if (!sc_vocab_split(pg->vocab))
        return SC_OK;
    if (lag < 0)
        lag = 0;
    sc_vec *base = sc_calloc((size_t)P, sizeof(sc_vec)), *sh = sc_calloc((size_t)P, sizeof(sc_vec));
    sc_vec *cur = sc_calloc((size_t)P, sizeof(sc_vec)), *best = sc_calloc((size_t)P, sizeof(sc_vec));
    sc_status st = SC_OK;
    if (!base || !sh || !cur || !best) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory placing the vocabulary passes");
        goto done;
    }
    for (int d = 0; d < P && !st; d++)
        for (size_t k = 0; k < pg->order[d].n && !st; k++)
            if (sc_vec_push(&base[d], pg->order[d].v[k]) != SC_OK)
                st = sc_fail(pg, SC_ERR_NOMEM, "out of memory placing the vocabulary passes");
    /* The shift the collectives need: try 0..MAX_SHIFT more forwards in
     * flight and keep the fastest (the fewest on a tie) within the memory
     * caps (each shift holds more records: the knob of a cap,
     * docs/vocab.md#figures), or, when none is within them, the one that
     * passes them least (the promise check then refuses it). */
    double bspan = INFINITY, bover = INFINITY;
    for (int shift = 0; shift <= MAX_SHIFT && !st; shift++) {
        double span, over;
        if ((st = shifted(pg, base, shift, sh)) != SC_OK)
            break;
        if ((st = place_on(pg, sh, lag, cur, &span)) != SC_OK) {
            /* Moving backwards past forwards can close a cycle through
             * another device (V shapes): that shift is not a candidate. */
            if (st == SC_ERR_PROGRAM && shift > 0)
                st = SC_OK;
            continue;
        }
        over = over_caps(pg, cur);
        if (over < bover || (over == bover && span < bspan * (1 - 1e-9))) {
            bspan = span;
            bover = over;
            sc_vec *t = best;
            best = cur;
            cur = t;
        }
    }
    for (int d = 0; d < P && !st; d++) {
        sc_prog_clear_order(pg, d);
        sc_vec *ov = &pg->order[d];
        for (size_t k = 0; k < best[d].n && !st; k++)
            if (sc_vec_push(ov, best[d].v[k]) != SC_OK)
                st = sc_fail(pg, SC_ERR_NOMEM, "out of memory placing the vocabulary passes");
        pg->npasses += ov->n;
    }
done:
    for (int d = 0; d < P; d++) {
        if (base)
            sc_vec_free(&base[d]);
        if (sh)
            sc_vec_free(&sh[d]);
        if (cur)
            sc_vec_free(&cur[d]);
        if (best)
            sc_vec_free(&best[d]);
    }
    sc_free(base);
    sc_free(sh);
    sc_free(cur);
    sc_free(best);
    return st;
}
