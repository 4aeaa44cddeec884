/*
 * reorder_place.c — the first placement round of the reorder and what the
 * rounds share (reorder_impl.h): the Controllable Memory paper's reorder
 * of the warm-up and the cool-down on a timeline, with real durations or
 * on its unit slot grid; the W round is reorder_wround.c.
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

void sc_r_set_end(const sc_prog *pg, const sc_instr *in, double e, double *endF, double *endB)
{
    if (sc_op_is_fwd(in->op))
        endF[SC_SM(pg, in->stage, in->mb)] = e;
    else if (sc_op_is_bgrad(in->op))
        endB[SC_SM(pg, in->stage, in->mb)] = e;
}

sc_rtab *sc_r_tab_new(const sc_prog *pg)
{
    static const int ops[4] = {SC_OP_F, SC_OP_B, SC_OP_BW, SC_OP_W};
    int S = pg->S;
    if (pg->copies > 1 || S <= 0)
        return NULL;
    sc_rtab *tb = sc_malloc(sizeof *tb + 4 * (size_t)S * sizeof(sc_rpass));
    if (!tb)
        return NULL;
    for (int op = 0; op < 256; op++)
        tb->row[op] = NULL;
    sc_rpass *t = tb->cell;
    for (int row = 0; row < 4; row++)
        for (int s = 0; s < S; s++) {
            sc_instr in = {.op = (uint8_t)ops[row], .stage = s, .mb = 0};
            sc_rpass *p = &t[(size_t)row * (size_t)S + (size_t)s];
            int dop, ds;
            *p = (sc_rpass){sc_pass_cost(pg, &in), sc_op_slots(in.op), sc_pass_mem(pg, &in),
                            -1, -1, -1, -1, 0, 0};
            if (sc_pass_dep(pg, &in, &dop, &ds)) {
                p->dep = (int32_t)SC_SM(pg, ds, 0);
                p->dep_b = dop != SC_OP_F;
                p->ddev = pg->stage_dev[ds];
            }
            if (sc_op_is_fwd(in.op) || sc_op_is_bgrad(in.op)) {
                p->end = (int32_t)SC_SM(pg, s, 0);
                p->end_b = !sc_op_is_fwd(in.op);
            }
            if (sc_op_is_fwd(in.op) && s + 1 < S)
                p->cons = pg->stage_dev[s + 1];
            else if (sc_op_is_bgrad(in.op) && s > 0)
                p->cons = pg->stage_dev[s - 1];
            if (sc_op_is_fwd(in.op) && s == S - 1)
                p->cons = -2; /* its own backward */
        }
    for (int row = 0; row < 4; row++)
        tb->row[ops[row]] = &t[(size_t)row * (size_t)S];
    return tb;
}

/* ---- the global order of a round ---------------------------------------- */


int sc_r_gkey_cmp(const void *pa, const void *pb)
{
    const gkey *a = pa, *b = pb;
    if (a->t < b->t - EPS || a->t > b->t + EPS)
        return a->t < b->t ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Sorts g[0..n) made of P runs, run d at [run[d], run[d+1]), each already
 * sorted: a P-way merge on a heap of the runs' heads. tmp has room for n.
 * Returns 0 when out of memory (g untouched). */
int sc_r_gmerge(int P, gkey *g, const size_t *run, gkey *tmp)
{
    int *heap = sc_malloc((size_t)P * sizeof *heap), nh = 0;
    size_t *at = sc_malloc((size_t)P * sizeof *at);
    if (!heap || !at) {
        sc_free(heap);
        sc_free(at);
        return 0;
    }
#define LESS(a, b) (sc_r_gkey_cmp(&g[at[a]], &g[at[b]]) < 0)
    for (int d = 0; d < P; d++) {
        at[d] = run[d];
        if (run[d] == run[d + 1])
            continue;
        int i = nh++;
        heap[i] = d;
        while (i > 0 && LESS(heap[i], heap[(i - 1) / 2])) {
            int t = heap[i];
            heap[i] = heap[(i - 1) / 2];
            heap[(i - 1) / 2] = t;
            i = (i - 1) / 2;
        }
    }
    size_t o = 0;
    while (nh > 0) {
        int d = heap[0];
        tmp[o++] = g[at[d]++];
        if (at[d] == run[d + 1])
            heap[0] = heap[--nh];
        for (int i = 0;;) { /* sift down */
            int l = 2 * i + 1, r = l + 1, m = i;
            if (l < nh && LESS(heap[l], heap[m]))
                m = l;
            if (r < nh && LESS(heap[r], heap[m]))
                m = r;
            if (m == i)
                break;
            int t = heap[i];
            heap[i] = heap[m];
            heap[m] = t;
            i = m;
        }
    }
#undef LESS
    memcpy(g, tmp, o * sizeof *g);
    sc_free(heap);
    sc_free(at);
    return 1;
}

void sc_r_seq_order(const size_t *seq, size_t N, uint32_t *inv)
{
    for (size_t k = 0; k < N; k++)
        inv[seq[k]] = (uint32_t)k;
}

void sc_r_phase_init(const sc_prog *pg, const sc_instr *src, const gkey *g, size_t n, sc_rphase *ph)
{
    *ph = (sc_rphase){.hasb = 0, .hasf = 0};
    for (size_t x = 0; x < n; x++) { /* stage 0's passes are one run, in order */
        const sc_instr *in = &src[g[x].k];
        if (in->stage != 0)
            continue;
        if (!ph->hasb && sc_op_is_bgrad(in->op)) {
            ph->b = g[x];
            ph->hasb = 1;
        }
        if (sc_op_is_fwd(in->op) && in->mb == pg->m - 1) {
            ph->f = g[x];
            ph->hasf = 1;
        }
    }
    /* The walk leaves the steady state at f only if f comes after b. */
    ph->hasf = ph->hasf && ph->hasb && sc_r_gkey_cmp(&ph->f, &ph->b) > 0;
}

int sc_r_phase_of(const sc_rphase *ph, const gkey *x)
{
    if (!ph->hasb || (x->k != ph->b.k && sc_r_gkey_cmp(x, &ph->b) < 0))
        return 0;
    return !ph->hasf || x->k == ph->f.k || sc_r_gkey_cmp(x, &ph->f) < 0 ? 1 : 2;
}

/* Phases of the walk: 0 warm-up, 1 steady state (from the first backward
 * of stage 0 on), 2 cool-down (after stage 0's forward of the last
 * microbatch). Returns whether `in` stays where it is. */
int sc_r_steady(const sc_prog *pg, const sc_instr *in, int *phase)
{
    if (*phase == 0 && sc_op_is_bgrad(in->op) && in->stage == 0)
        *phase = 1;
    if (*phase != 1)
        return 0;
    if (sc_op_is_fwd(in->op) && in->stage == 0 && in->mb == pg->m - 1)
        *phase = 2;
    return 1;
}

/* ---- a device's placed passes: sorted, non-overlapping ------------------ */


/* The first placed pass that ends after r, at or after lo. */
size_t sc_r_first_after(const lane *L, size_t lo, double r)
{
    /* Most passes go near the lane's end: gallop back from it to bracket
     * the answer in [a, b), then halve. The same index as halving all of
     * [lo, n) where t1 grows along the lane: it does unless the lane holds
     * a tiny pass. A pass goes into a gap only if it ends by the next
     * pass's t0 + EPS (s + du <= t0 + EPS) and starts after the previous
     * one's end, or after the last pass; where every pass ends at or past
     * its t0 + EPS, the new end is between its neighbours' ends. */
    size_t a = lo, b = L->n;
    for (size_t step = 1; b > a && !L->tiny;) {
        size_t h = b - a > step ? b - step : a;
        if (L->t1[h] > r + EPS) {
            b = h;
            step *= 2;
        } else {
            a = h + 1;
            break;
        }
    }
    while (a < b) {
        size_t h = a + (b - a) / 2;
        if (L->t1[h] > r + EPS)
            b = h;
        else
            a = h + 1;
    }
    return a;
}

void sc_r_lane_insert(lane *L, size_t j, double t0, double t1, double lvl, uint32_t idx,
                      double delta)
{
    size_t tail = L->n - j;
    if (!(t1 >= t0 + EPS))
        L->tiny = 1;
    if (tail == 0) { /* the common case: after every placed pass */
        L->t0[j] = t0;
        L->t1[j] = t1;
        L->lvl[j] = lvl;
        L->idx[j] = idx;
        L->n++;
        return;
    }
    memmove(L->t0 + j + 1, L->t0 + j, tail * sizeof *L->t0);
    memmove(L->t1 + j + 1, L->t1 + j, tail * sizeof *L->t1);
    memmove(L->lvl + j + 1, L->lvl + j, tail * sizeof *L->lvl);
    memmove(L->idx + j + 1, L->idx + j, tail * sizeof *L->idx);
    L->t0[j] = t0;
    L->t1[j] = t1;
    L->lvl[j] = lvl;
    L->idx[j] = idx;
    L->n++;
    if (delta != 0) /* the W round keeps no levels */
        for (size_t i = j + 1; i < L->n; i++)
            L->lvl[i] += delta;
}

int sc_r_lanes_new(const sc_rctx *c, lane *L, double **buf, uint32_t **ibuf)
{
    *buf = sc_malloc(3 * c->N * sizeof **buf);
    *ibuf = sc_malloc(c->N * sizeof **ibuf);
    if (!*buf || !*ibuf)
        return 0;
    for (int d = 0; d < c->P; d++) {
        size_t b = c->base[d];
        L[d] = (lane){*buf + b, *buf + c->N + b, *buf + 2 * c->N + b, *ibuf + b, 0, 0};
    }
    return 1;
}

/* ---- timing under a model (as dataflow.c, with the model's durations) -- */

int sc_r_time(const sc_rctx *c, const sc_instr *ord, int unit, double *start, double *end,
              size_t *seq)
{
    const sc_prog *pg = c->pg;
    int P = c->P;
    size_t SM = (size_t)pg->S * (size_t)pg->m, nseq = 0;
    double *endF = sc_malloc(2 * SM * sizeof *endF), *tfree = sc_calloc((size_t)P, sizeof *tfree);
    size_t *pc = sc_calloc((size_t)P, sizeof *pc);
    int *stack = sc_malloc((size_t)P * sizeof *stack), *queued = sc_calloc((size_t)P, sizeof *queued);
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
    double tcomm = unit ? 0 : pg->tcomm;
    while (ns > 0) {
        int d = stack[--ns];
        queued[d] = 0;
        size_t g = c->base[d] + pc[d], gend = c->base[d + 1];
        double tf = tfree[d];
        for (; g < gend; g++) {
            const sc_instr *in = &ord[g];
            const sc_rpass *p = sc_r_pass(c, in);
            double r, du;
            int w = -1;
            if (p) { /* the table's figures (sc_r_tab_new), as sc_r_ready_at reads them */
                r = 0;
                if (p->dep >= 0) {
                    double e = (p->dep_b ? endB : endF)[p->dep + in->mb];
                    if (e < 0)
                        break;
                    r = e + (p->ddev != d ? tcomm : 0);
                }
                du = unit ? p->slots : p->cost;
            } else {
                if ((r = sc_r_ready_at(c, d, in, endF, endB, unit)) < 0)
                    break;
                du = sc_r_dur(pg, in, unit);
            }
            double t = r > tf ? r : tf, e = t + du;
            start[g] = t;
            end[g] = e;
            if (seq)
                seq[g] = nseq;
            nseq++;
            tf = e;
            if (p) {
                if (p->end >= 0)
                    (p->end_b ? endB : endF)[p->end + in->mb] = e;
                w = p->cons == -2 ? d : p->cons;
            } else {
                sc_r_set_end(pg, in, e, endF, endB);
                if (sc_op_is_fwd(in->op) && in->stage + 1 < pg->S)
                    w = pg->stage_dev[in->stage + 1];
                else if (sc_op_is_bgrad(in->op) && in->stage > 0)
                    w = pg->stage_dev[in->stage - 1];
                if (sc_op_is_fwd(in->op) && in->stage == pg->S - 1)
                    w = d; /* its own backward */
            }
            if (w >= 0 && !queued[w]) {
                queued[w] = 1;
                stack[ns++] = w;
            }
        }
        tfree[d] = tf;
        pc[d] = g - c->base[d];
    }
    ok = nseq == c->N;
done:
    sc_free(endF);
    sc_free(tfree);
    sc_free(pc);
    sc_free(stack);
    sc_free(queued);
    return ok;
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
    gkey *g = sc_malloc(N * sizeof *g);
    double *endF = sc_malloc(3 * SM * sizeof *endF), *buf = NULL;
    uint32_t *ibuf = NULL;
    lane *L = sc_malloc((size_t)c->P * sizeof *L);
    int ok = -1;
    if (!g || !endF || !L || !sc_r_lanes_new(c, L, &buf, &ibuf))
        goto done;
    double *endB = endF + SM, *endK = endF + 2 * SM; /* endK: last W end per stage */
    for (size_t i = 0; i < 3 * SM; i++)
        endF[i] = -1;
    /* keys from a timing (seq): its topological order (reorder_impl.h);
     * the block's own times: a merge */
    int walk = seq != NULL, phase = 0;
    if (walk) {
        sc_r_seq_order(seq, N, ibuf); /* the lanes' idx, empty until the walk */
        for (size_t x = 0; x < N; x++)
            g[x] = (gkey){o[ibuf[x]], x, ibuf[x]};
    } else {
        for (size_t k = 0; k < N; k++)
            g[k] = (gkey){o[k], k, (uint32_t)k};
    }
    sc_rphase ph;
    sc_r_phase_init(pg, src, g, N, &ph);
    if (!walk && !sc_r_gmerge(c->P, g, c->base, (gkey *)buf)) /* buf: room for 3N doubles */
        goto done;
    ok = 0;
    for (size_t x = 0; x < N; x++) {
        uint32_t k = g[x].k;
        const sc_instr *in = &src[k];
        int d = c->dev[k];
        lane *ln = &L[d];
        double du = sc_r_cost(c, in, unit), delta = sc_r_mem(c, in);
        int keep = (walk ? sc_r_phase_of(&ph, &g[x]) == 1 : sc_r_steady(pg, in, &phase)) && freeze;
        double r = sc_r_ready_at(c, d, in, endF, endB, unit);
        if (r < 0)
            goto done; /* the input comes later: inconsistent keys */
        /* keep each kind's microbatches in order on their stage */
        size_t sm = SC_SM(pg, in->stage, in->mb);
        int w_only = sc_r_w_only(in->op);
        if (in->mb > 0) {
            double pe = sc_op_is_fwd(in->op) ? endF[sm - 1] : w_only ? endK[sm - 1] : endB[sm - 1];
            if (pe > r)
                r = pe;
        }
        size_t j = ln->n;
        double t = o[k];
        if (!keep) {
            size_t lo = ln->n > (size_t)c->window ? ln->n - (size_t)c->window : 0;
            for (size_t i = sc_r_first_after(ln, lo, r);; i++) {
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
        sc_r_lane_insert(ln, j, t, t + du, before + delta, k, delta);
        sc_r_set_end(pg, in, t + du, endF, endB);
        if (w_only)
            endK[sm] = t + du;
    }
    for (int d = 0; d < c->P; d++)
        for (size_t i = 0; i < L[d].n; i++)
            dst[c->base[d] + i] = src[L[d].idx[i]];
    ok = 1;
done:
    sc_free(g);
    sc_free(endF);
    sc_free(buf);
    sc_free(ibuf);
    sc_free(L);
    return ok;
}
