/*
 * reorder.c — the reorder of a block's warm-up and cool-down (reorder.h):
 * builds the candidates (reorder_place.c, reorder_list.c), times each with
 * the real costs and keeps the best one within the memory caps.
 */
#include "reorder.h"
#include "reorder_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EPS SC_R_EPS

/* How a candidate fares: the longest device span (the bubble rate's
 * denominator: busy time is the same for every candidate), then the
 * makespan. */
typedef struct score {
    double span, makespan;
    int ok;
} score;

static int better(score a, score b)
{
    if (!a.ok)
        return 0;
    if (!b.ok)
        return 1;
    if (a.span < b.span - EPS * (1 + b.span))
        return 1;
    if (a.span > b.span + EPS * (1 + b.span))
        return 0;
    return a.makespan < b.makespan - EPS * (1 + b.makespan);
}

/* Times a candidate with the program's costs (sc_r_time with unit 0: the
 * same figures as sc_dataflow for the passes the reorder sees, no pairs
 * and no vocabulary passes) into t, and checks every device's memory
 * against its cap. The timing is made also when the cap is passed: a
 * round may start from the candidate. -1 when out of memory. */
static int judge(const sc_rctx *c, const sc_instr *cand, sc_rtime *t, score *out)
{
    int P = c->P;
    *out = (score){0, 0, 0};
    if ((t->ok = sc_r_time(c, cand, 0, t->st, t->en, t->seq)) < 0)
        return -1;
    for (int d = 0; d < P; d++) {
        double lvl = 0;
        for (size_t k = c->base[d]; k < c->base[d + 1]; k++) {
            lvl += sc_r_mem(c, &cand[k]);
            if (lvl > c->cap[d] + 1e-7)
                return 0;
        }
    }
    if (!t->ok) /* a cycle: not a candidate */
        return 0;
    double span = 0, mk = 0;
    for (int d = 0; d < P; d++) {
        size_t a = c->base[d], b = c->base[d + 1];
        if (a == b)
            continue;
        span = fmax(span, t->en[b - 1] - t->st[a]);
        mk = fmax(mk, t->en[b - 1]);
    }
    *out = (score){span, mk, 1};
    return 0;
}

/* Whether no reordering can beat orders of this timing (`in`): the fast
 * path for the blocks the reorder cannot improve (1F1B's). It holds for a
 * pipeline of fused backward passes (only F and BW, one stage per device,
 * every microbatch through every stage) whose makespan meets the flow-shop
 * bound max_s (head_s + work_s + tail_s): no pass of stage s can start
 * before the forward chain reaches s (head), its device does all its work
 * after that, and the last BW of s is followed by the backward chain down
 * to stage 0 (tail). In every order the device of stage 0 starts at 0 (its
 * first pass is an F with no input) and ends last (the BW of stage 0 are
 * the only passes nothing follows), so its span is the makespan and no
 * candidate's longest span or makespan is below the bound: none is
 * better, and the reorder would keep the orders as they are. */
static int cannot_improve(const sc_rctx *c, const sc_instr *in, score s)
{
    const sc_prog *pg = c->pg;
    int P = c->P;
    if (pg->S != P || pg->copies > 1)
        return 0;
    double *work = sc_calloc((size_t)P, sizeof *work);
    int *stage = sc_malloc((size_t)P * sizeof *stage), ok = work && stage;
    for (int d = 0; d < P && ok; d++) { /* device d holds one stage, F and BW only */
        stage[d] = -1;
        for (size_t k = c->base[d]; k < c->base[d + 1] && ok; k++) {
            ok = (in[k].op == SC_OP_F || in[k].op == SC_OP_BW) &&
                 (stage[d] < 0 || in[k].stage == stage[d]) && pg->stage_dev[in[k].stage] == d;
            stage[d] = in[k].stage;
            work[d] += sc_pass_cost(pg, &in[k]);
        }
        ok = ok && stage[d] >= 0;
    }
    double lb = 0, head = 0, tail = 0;
    for (int st = 0; st < pg->S && ok; st++) {
        int d = pg->stage_dev[st];
        if (st > 0) {
            double comm = pg->stage_dev[st - 1] != d ? pg->tcomm : 0;
            head += sc_op_cost(pg, SC_OP_F, st - 1) + comm;
            tail += sc_op_cost(pg, SC_OP_BW, st - 1) + comm;
        }
        lb = fmax(lb, head + work[d] + tail);
    }
    sc_free(work);
    sc_free(stage);
    /* Half the margin by which a candidate must win: sums in another order. */
    return ok && s.ok && s.span <= lb + EPS / 2 * (1 + lb) && s.makespan <= lb + EPS / 2 * (1 + lb);
}

/* Whether candidate r's orders (cand) are those of one judged before it:
 * the input's, a kept candidate's (slot[j], j < r, made and scored
 * got[j]) or the
 * best one's so far (keep, NULL while the input is best); then *out is
 * that one's score. The judge is a function of the orders alone, so the
 * score is the one judging would give, to the bit, and the comparison
 * with the best goes on as before (rounds on the unit grid often give the
 * orders of the round on the real costs). */
static int seen(const sc_instr *cand, size_t N, const sc_instr *in, score in_sc,
                sc_instr *const *slot, const int *made, const score *got, size_t r,
                const sc_instr *keep,
                score best, score *out)
{
    size_t bytes = N * sizeof *cand;
    if (!memcmp(cand, in, bytes)) {
        *out = in_sc;
        return 1;
    }
    for (size_t j = 0; j < r; j++)
        if (made[j] && slot[j] && slot[j] != cand && !memcmp(cand, slot[j], bytes)) {
            *out = got[j];
            return 1;
        }
    if (keep && !memcmp(cand, keep, bytes)) {
        *out = best;
        return 1;
    }
    return 0;
}

/* The candidates, in the order they are tried (ties keep the earlier):
 * the list schedules, then the placement rounds with the real costs and on
 * the unit grid, each followed by the W round. */
enum { K_LIST1, K_LIST3, K_INSERT, K_WROUND };

typedef struct recipe {
    int kind, unit, init_at, freeze, from; /* from: the candidate it improves (-1: input) */
    int small;                             /* only for programs of up to SMALL passes */
} recipe;

/* Past this many passes the warm-up and the cool-down are a small part of
 * the program: the candidates that rarely win are left out (time). */
#define SMALL 65536

static const recipe RECIPES[] = {
    {K_INSERT, 0, 0, 0, -1, 0}, /* 0: real costs */
    {K_INSERT, 1, 0, 0, -1, 0}, /* 1: unit grid */
    {K_INSERT, 1, 1, 1, -1, 1}, /* 2: from the block's own slots (or times) */
    {K_WROUND, 0, 0, 0, 0, 0},  /* 3 */
    {K_WROUND, 1, 0, 0, 1, 0},  /* 4 */
    {K_WROUND, 1, 0, 0, 2, 1},  /* 5 */
    {K_LIST3, 0, 0, 0, 4, 0},   /* 6: W as filler on the orders of 4 */
    {K_LIST1, 0, 0, 0, -1, 1},  /* 7: the squeeze, its gaps filled */
    {K_LIST3, 0, 0, 0, -1, 1},  /* 8: W as filler */
};
#define NREC (sizeof RECIPES / sizeof RECIPES[0])

/* sc_r_scaled_slots (reorder_impl.h): whether every pass costs its slots
 * on the unit grid times one power of two, alpha, and T_comm is 0: then a
 * round on the unit grid makes the
 * decisions of the same round on the real costs, from the same orders.
 * Every time of the real round is alpha times the unit round's, exactly
 * (scaling by a power of two commutes with sums and max), and every
 * comparison the rounds make is between two such times, or one plus or
 * minus SC_R_EPS (fill, fit, order of keys): the times are multiples of
 * the grid (1 or alpha) far below 2^52 grids, and alpha is far above
 * SC_R_EPS, so x <= y + EPS holds exactly when x <= y on both scales.
 * The unit grid adds no T_comm; with T_comm 0 the real costs add none
 * either. The default costs of the V recipes are of this kind (F, B, W
 * half a unit each). */
int sc_r_scaled_slots(const sc_rctx *c, const sc_instr *in)
{
    const sc_prog *pg = c->pg;
    if (pg->tcomm != 0 || c->N == 0 || c->N > ((size_t)1 << 36))
        return 0;
    double alpha = sc_r_cost(c, &in[0], 0) / sc_r_cost(c, &in[0], 1);
    int e;
    if (!(alpha >= 0x1p-20 && alpha <= 0x1p20) || frexp(alpha, &e) != 0.5)
        return 0;
    for (size_t k = 0; k < c->N; k++)
        if (sc_r_cost(c, &in[k], 0) != alpha * sc_r_cost(c, &in[k], 1))
            return 0;
    return 1;
}

/* Under sc_r_scaled_slots, the recipe before r whose round on the real costs r
 * repeats on the unit grid (the same kind, start and freeze, from orders
 * equal byte for byte) and whose orders are still at hand (its slot, the
 * best's copy or scratch): its index, or -1. */
static int twin_of(size_t r, size_t N, const sc_instr *src, const sc_instr *in, sc_instr *const *slot,
                   const int *made, const int *needed, int win, int scr_of)
{
    const recipe *rc = &RECIPES[r];
    for (size_t j = 0; j < r; j++) {
        const recipe *rj = &RECIPES[j];
        if (rj->unit || rj->kind != rc->kind || rj->init_at || rc->init_at ||
            rj->freeze != rc->freeze || !made[j] || !(needed[j] || win == (int)j || scr_of == (int)j))
            continue;
        const sc_instr *sj = rj->from < 0 ? in : slot[rj->from];
        if (sj == src || !memcmp(sj, src, N * sizeof *src))
            return (int)j;
    }
    return -1;
}

/* A round that times its source with the real costs first: it takes the
 * timing judge made of that source. */
static int times_src(const recipe *rc)
{
    return rc->unit == 0 && (rc->kind == K_WROUND || (rc->kind == K_INSERT && !rc->init_at));
}

/* Timings: [r] of candidate r when a round starts from it, [NREC] of the
 * input, [NREC + 1] scratch. Each is made when first written and freed
 * after the last round that reads it: no more memory at a time than the
 * timings the reorder made before it kept them (--max-mem counts it). */
#define T_IN NREC
#define T_SCRATCH (NREC + 1)

static sc_rtime *rtime_get(sc_rtime *t, size_t N)
{
    if (!t->st) {
        t->st = sc_malloc((2 * N + 1) * sizeof *t->st); /* + 1: N may be 0 */
        t->seq = sc_malloc((N + 1) * sizeof *t->seq);
        t->en = t->st ? t->st + N : NULL;
    }
    return t->st && t->seq ? t : NULL;
}

static void rtime_free(sc_rtime *t)
{
    sc_free(t->st);
    sc_free(t->seq);
    *t = (sc_rtime){0};
}

sc_status sc_reorder(sc_prog *pg, const double *cap, const double *at, int at_slots)
{
    int P = pg->P;
    size_t N = 0;
    for (int d = 0; d < P; d++)
        N += pg->order[d].n;
    size_t *base = sc_malloc(((size_t)P + 1) * sizeof *base);
    int *dev = sc_malloc(N * sizeof *dev);
    sc_instr *buf = sc_malloc(2 * N * sizeof *buf), *slot[NREC] = {0}, *scratch = NULL;
    sc_rtime tm[NREC + 2] = {{0}}, *tj;
    sc_rtab *tab = NULL;
    sc_status st = SC_OK;
    int last[NREC + 2]; /* the last round that reads each timing, -1: none */
    for (size_t r = 0; r < NREC + 2; r++)
        last[r] = -1;
    for (size_t r = 0; r < NREC; r++)
        if (times_src(&RECIPES[r]))
            last[RECIPES[r].from < 0 ? T_IN : (size_t)RECIPES[r].from] = (int)r;
    if (!base || (N && (!dev || !buf))) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory reordering the schedule");
        goto done;
    }
    int maxc = 1;
    size_t at_n = 0;
    for (int d = 0; d < P; d++) {
        base[d] = at_n;
        for (size_t k = 0; k < pg->order[d].n; k++)
            dev[at_n + k] = d;
        memcpy(buf + at_n, pg->order[d].v, pg->order[d].n * sizeof *buf);
        at_n += pg->order[d].n;
        if (pg->nchunks[d] > maxc)
            maxc = pg->nchunks[d];
    }
    base[P] = N;
    long window = 6L * maxc * P + 8;
    tab = sc_r_tab_new(pg); /* NULL: every pass worked out */
    sc_rctx c = {pg, P, N, base, dev, cap, at, at_slots, window > 4096 ? 4096 : window, tab};
    sc_instr *in = buf, *keep = buf + N;
    score best, sc;
    int win = -1, made[NREC], needed[NREC] = {0};
    for (size_t r = 0; r < NREC; r++)
        if (RECIPES[r].from >= 0)
            needed[RECIPES[r].from] = 1;
    tj = rtime_get(&tm[last[T_IN] >= 0 ? T_IN : T_SCRATCH], N);
    if (!tj || judge(&c, in, tj, &best) < 0)
        goto nomem;
    score in_sc = best, got[NREC];
    int scaled = sc_r_scaled_slots(&c, in), scr_of = -1; /* scr_of: whose orders scratch holds */
    /* Inconsistent orders: kept for sc_check to name; optimal ones: kept. */
    if (!best.ok || cannot_improve(&c, in, best))
        goto done;
    for (size_t r = 0; r < NREC; r++) {
        const recipe *rc = &RECIPES[r];
        made[r] = 0;
        if ((rc->from >= 0 && !made[rc->from]) || (rc->small && N > SMALL))
            continue;
        const sc_instr *src = rc->from < 0 ? in : slot[rc->from];
        const sc_rtime *srct = times_src(rc) ? &tm[rc->from < 0 ? T_IN : (size_t)rc->from] : NULL;
        if (needed[r] && !(slot[r] = sc_malloc(N * sizeof *buf)))
            goto nomem;
        if (!needed[r] && !scratch && !(scratch = sc_malloc(N * sizeof *buf)))
            goto nomem;
        sc_instr *dst = needed[r] ? slot[r] : scratch;
        int ok = 0;
        sc_rlist_time lt = {0, 0, 0, 0}; /* a list schedule's own timing */
        const sc_instr *twin = NULL;
        int tw = scaled && rc->unit ? twin_of(r, N, src, in, slot, made, needed, win, scr_of) : -1;
        if (tw >= 0)
            twin = needed[tw] ? slot[tw] : win == tw ? keep : scratch;
        if (twin) { /* the same round on the real costs, from the same orders */
            if (dst != twin)
                memcpy(dst, twin, N * sizeof *buf);
            ok = 1;
        } else switch (rc->kind) {
        case K_LIST1: ok = sc_r_list(&c, src, 1, dst, &lt); break;
        case K_LIST3: ok = sc_r_list(&c, src, 3, dst, &lt); break;
        case K_INSERT:
            if (rc->init_at) { /* the block's own times: slots or costs */
                if (!at)
                    break;
                ok = sc_r_insert(&c, src, at, NULL, at_slots, rc->freeze, dst);
            } else {
                const sc_rtime *t = srct ? srct : rtime_get(&tm[T_SCRATCH], N);
                if (!t)
                    goto nomem;
                ok = srct ? srct->ok : sc_r_time(&c, src, rc->unit, t->st, t->en, t->seq);
                if (ok == 1)
                    ok = sc_r_insert(&c, src, t->st, t->seq, rc->unit, rc->freeze, dst);
            }
            break;
        case K_WROUND: ok = sc_r_wround(&c, src, srct, rc->unit, rc->freeze, dst); break;
        }
        for (size_t t = 0; t < NREC + 1; t++)
            if (last[t] == (int)r)
                rtime_free(&tm[t]);
        if (ok < 0)
            goto nomem;
        if (!ok)
            continue;
        made[r] = 1;
        if (dst == scratch)
            scr_of = (int)r;
        if (twin && last[r] < 0)
            sc = got[tw];
        else if (lt.exact && last[r] < 0) /* judge's figures, to the bit (reorder_impl.h) */
            sc = lt.over ? (score){0, 0, 0} : (score){lt.span, lt.makespan, 1};
        else if (last[r] >= 0 ||
                 !seen(dst, N, in, in_sc, slot, made, got, r, win >= 0 ? keep : NULL, best, &sc)) {
            if (!(tj = rtime_get(&tm[last[r] >= 0 ? r : T_SCRATCH], N)) || judge(&c, dst, tj, &sc) < 0)
                goto nomem;
        }
        got[r] = sc;
        if (better(sc, best)) {
            best = sc;
            win = (int)r;
            memcpy(keep, dst, N * sizeof *buf);
        }
    }
    if (win >= 0) {
        for (int d = 0; d < P; d++)
            memcpy(pg->order[d].v, keep + base[d], pg->order[d].n * sizeof *buf);
        sc_prog_invalidate(pg);
    }
    goto done;
nomem:
    st = sc_fail(pg, SC_ERR_NOMEM, "out of memory reordering the schedule");
done:
    for (size_t r = 0; r < NREC; r++)
        sc_free(slot[r]);
    for (size_t r = 0; r < NREC + 2; r++)
        rtime_free(&tm[r]);
    sc_free(scratch);
    sc_free(tab);
    sc_free(base);
    sc_free(dev);
    sc_free(buf);
    return st;
}
