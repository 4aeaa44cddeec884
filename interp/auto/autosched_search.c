/*
 * autosched_search.c — the automatic scheduler's phases (autosched_impl.h,
 * autosched.h): the heuristic, the local walks over the parametric families
 * and the list scheduler, and the last polish by single moves.
 */
#include "autosched_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int is_loop1(const sc_prog *pg)
{
    if (pg->S != pg->P)
        return 0;
    for (int s = 0; s < pg->S; s++)
        if (pg->stage_dev[s] != s)
            return 0;
    return 1;
}

static int is_v(const sc_prog *pg)
{
    if (pg->S != 2 * pg->P)
        return 0;
    for (int s = 0; s < pg->S; s++)
        if (pg->stage_dev[s] != (s < pg->P ? s : 2 * pg->P - 1 - s))
            return 0;
    return 1;
}

static int multi_chunk(const sc_prog *pg)
{
    for (int d = 0; d < pg->P; d++)
        if (pg->nchunks[d] > 1)
            return 1;
    return 0;
}


/* The figures of a candidate a builder timed as it placed the passes (its
 * times are the dataflow timing of its orders, every device within the
 * limit): the makespan and the longest device span, from device d's end
 * e[d] and the start of its first pass, the F of microbatch 0 of its
 * stage first[d] (NULL: stage d). Offers it like sc_auto_offer. */
static int offer_built(sc_asearch *se, sc_acand *into, const int *first)
{
    sc_actx *c = &se->c;
    double mk = 0, span = -1;
    c->spans = 0;
    for (int d = 0; d < c->P; d++) {
        int s = first ? first[d] : d;
        double x = c->e[d] - (c->endF[SC_SM(c->pg, s, 0)] - c->pg->tf[s]);
        mk = fmax(mk, c->e[d]);
        c->spans += x;
        if (x > span) {
            span = x;
            c->crit = d;
        }
    }
    se->res->evals++;
    if (!sc_auto_better(mk, span, into))
        return 0;
    sc_auto_take(se, into, mk, span);
    return 1;
}

/* ZB-V's greedy, the four (fill_f, fill_b) runs, each run again with the
 * idle times of the one before while that lowers the largest. */
static void zbv_runs(sc_asearch *se, int *best)
{
    sc_actx *c = &se->c;
    double *idle = malloc(2 * (size_t)c->P * sizeof *idle);
    int *first = malloc((size_t)c->P * sizeof *first);
    if (!idle || !first) {
        free(idle);
        free(first);
        return; /* the list scheduler below still gives a heuristic */
    }
    for (int f = 0; f < 4; f++) {
        double *prev = idle, *cur = idle + c->P, top = INFINITY;
        const double *appr = NULL;
        for (int run = 0; run < 64; run++) {
            if (sc_auto_zbv(c, f, appr, cur, se->tmp.ord) != 0)
                break;
            for (int d = 0; d < c->P; d++)
                first[d] = c->pg->dev_stages[d][0];
            double x = 0;
            for (int d = 0; d < c->P; d++)
                x = fmax(x, cur[d]);
            if (run > 0 && x >= top)
                break;
            top = x;
            if (offer_built(se, &se->heur, first))
                *best = 100 + f;
            double *t = prev;
            prev = cur;
            cur = t;
            appr = prev;
        }
    }
    free(idle);
    free(first);
}

void sc_auto_heuristic(sc_asearch *se)
{
    sc_actx *c = &se->c;
    int best = -1, sim = c->use_sim;
    c->use_sim = 0; /* by the dataflow timing; the winner is simulated after */
    if (is_loop1(c->pg)) {
        /* allow_bubble decides only the warm-up counts: where both choices
         * give the same ones, the schedule with it is the one without */
        int same[4] = {0, 0, 0, 0};
        for (int f = 0; f < 8; f++) {
            if ((f & 1) && same[f >> 1])
                continue;
            if (sc_auto_zb(c, f, se->tmp.ord, (f & 1) ? NULL : &same[f >> 1]) == 0 &&
                offer_built(se, &se->heur, NULL))
                best = f;
        }
        if (best >= 0)
            snprintf(se->res->heur_choice, sizeof se->res->heur_choice,
                     "zb: allow_bubble=%d prioritize_b=%d greedy_w=%d", best & 1, (best >> 1) & 1,
                     (best >> 2) & 1);
        c->use_sim = sim;
        return;
    }
    if (is_v(c->pg))
        zbv_runs(se, &best);
    /* the list scheduler's policies, unless ZB-V left no bubble to remove */
    for (int f = 0; f < 8 && !(se->heur.ok && se->heur.span <= se->lb * (1 + 1e-12)); f++) {
        sc_agreedy g = {.wfill = 1 + (f & 1), .bwait = (f >> 1) & 1, .fnew = (f >> 2) & 1};
        if (sc_auto_greedy(c, &g, se->tmp.ord, NULL) == 0 && sc_auto_offer(se, &se->heur))
            best = f;
    }
    if (best >= 100)
        snprintf(se->res->heur_choice, sizeof se->res->heur_choice, "zbv: fill_f=%d fill_b=%d",
                 (best - 100) & 1, ((best - 100) >> 1) & 1);
    else if (best >= 0)
        snprintf(se->res->heur_choice, sizeof se->res->heur_choice,
                 "list: wfill=%d bwait=%d fnew=%d", 1 + (best & 1), (best >> 1) & 1,
                 (best >> 2) & 1);
    c->use_sim = sim;
}

/* Which schedule builder a walk drives. */
enum { B_LIST, B_ZBH, B_V };

static void describe(sc_asearch *se, int kind, const sc_agreedy *g, const int *x)
{
    static const char *const names[] = {" warm=",  " pairs=", " wlag=",
                                        " blag=",  " catch=", " coolwlag="};
    char *s = se->res->search_choice;
    size_t len = sizeof se->res->search_choice;
    int P = se->c.P, nk = kind == B_V ? 6 : 2, n;
    if (kind == B_LIST)
        n = snprintf(s, len, "list: wfill=%d bwait=%d fnew=%d", g->wfill, g->bwait, g->fnew);
    else
        n = snprintf(s, len, "%s family:", kind == B_V ? "v" : "zb-h");
    for (int d = 0; d < nk * P && n > 0 && (size_t)n < len; d++)
        n += snprintf(s + n, len - (size_t)n, "%s%d",
                      d % P ? "," : names[kind == B_V ? d / P : 2 * (d / P)],
                      x[d]);
    if (n > 0 && (size_t)n >= len && len > 4)
        memcpy(s + len - 4, "...", 4);
}

static int build(sc_asearch *se, int kind, const sc_agreedy *g, const int *x)
{
    sc_actx *c = &se->c;
    if (kind == B_LIST)
        return sc_auto_greedy(c, g, se->tmp.ord, NULL);
    return kind == B_ZBH ? sc_auto_family(c, x, se->tmp.ord) : sc_auto_vfamily(c, x, se->tmp.ord);
}

/* Local search from parameters x (nk blocks of P numbers: the first at
 * least 1, the others at least 0): a move changes one device's number, or
 * a range of devices' numbers, of one block by 1 or 2; a candidate that is
 * no worse is kept (plateaus are crossed); the walk ends after a run of
 * candidates without a strict gain. */
static sc_acand walk(sc_asearch *se, int kind, const sc_agreedy *pol, int *x, int *trial)
{
    sc_agreedy g = pol ? *pol : (sc_agreedy){0, 0, 0, NULL, NULL};
    sc_actx *c = &se->c;
    int P = c->P, nk = kind == B_V ? 6 : 2, stall = 0, limit = 6 * P + 24;
    size_t bytes = (size_t)nk * (size_t)P * sizeof(int);
    g.warm = trial;
    g.wlag = trial + P;
    sc_acand here = {NULL, 0, 0, 0};
    while (stall < limit && !sc_auto_must_stop(se)) {
        memcpy(trial, x, bytes);
        unsigned long long r = sc_auto_rand(se);
        int a = (int)(r % (unsigned)P), b = a, delta = (r >> 20) & 1 ? 1 : -1;
        int blk = (int)((r >> 23) % (unsigned)nk), *v = trial + blk * P, lo = blk ? 0 : 1;
        if ((r >> 21) & 1)
            delta *= 2;
        if ((r >> 28) % 3 == 0)
            b = a + (int)((r >> 30) % (unsigned)(P - a));
        for (int d = a; d <= b; d++)
            v[d] = v[d] + delta < lo ? lo : v[d] + delta;
        double mk, span;
        stall++;
        if (!memcmp(trial, x, bytes) || build(se, kind, &g, trial) || sc_auto_timing(se, &mk, &span))
            continue;
        int gain = sc_auto_better(mk, span, &here);
        if (!gain && here.ok) { /* keep it only if it is as good: a plateau */
            double tol = 1e-9 * fmax(1.0, here.mk);
            if (span > here.span + tol || mk > here.mk + tol)
                continue;
        }
        if (gain)
            stall = 0;
        here.ok = 1, here.mk = mk, here.span = span;
        memcpy(x, trial, bytes);
        if (sc_auto_better(mk, span, &se->best)) {
            sc_auto_take(se, &se->best, mk, span);
            describe(se, kind, &g, trial);
        }
    }
    return here;
}

/* Makes a family's start fit the memory limit: on each device over it,
 * fewer pairs, then fewer warm-up F, then less W delay, until it fits. */
static void repair(sc_asearch *se, int kind, int *x)
{
    sc_actx *c = &se->c;
    const sc_prog *pg = c->pg;
    int P = c->P;
    for (int round = 0; round < 4 * (c->m + 2 * P); round++) {
        if (build(se, kind, NULL, x))
            return;
        int over = 0;
        for (int d = 0; d < P; d++) {
            double mem = 0;
            int bad = 0;
            for (size_t k = c->off[d]; k < c->off[d + 1] && !bad; k++)
                bad = (mem += sc_auto_dmem(pg, se->tmp.ord[k].op, se->tmp.ord[k].stage)) > c->limit;
            if (!bad)
                continue;
            int *pairs = kind == B_V ? &x[P + d] : NULL, *lag = &x[(kind == B_V ? 2 : 1) * P + d];
            if (pairs && *pairs > 0)
                --*pairs, over = 1;
            else if (x[d] > 1)
                x[d]--, over = 1;
            else if (*lag > 0)
                --*lag, over = 1;
        }
        if (!over)
            return;
    }
}

/* A family's walk from a start x (nk blocks): times the start first. */
static void family(sc_asearch *se, int kind, int *x, int *trial)
{
    double mk, span;
    int P = se->c.P, nk = kind == B_V ? 6 : 2;
    size_t bytes = (size_t)nk * (size_t)P * sizeof(int);
    repair(se, kind, x);
    if (!build(se, kind, NULL, x) && !sc_auto_timing(se, &mk, &span) && sc_auto_better(mk, span, &se->best)) {
        sc_auto_take(se, &se->best, mk, span);
        describe(se, kind, NULL, x);
    }
    sc_acand at = walk(se, kind, NULL, x, trial);
    /* iterated local search: kick a few devices' parameters, walk again,
     * move there when it is better */
    int *y = malloc(2 * bytes);
    if (!y)
        return;
    for (int kick = 0; kick < 12 && at.ok && !sc_auto_must_stop(se); kick++) {
        memcpy(y, x, bytes);
        int n = 1 + (int)(sc_auto_rand(se) % (unsigned)(P / 4 + 1));
        for (int i = 0; i < n; i++) {
            unsigned long long r = sc_auto_rand(se);
            int d = (int)(r % (unsigned)P), blk = (int)((r >> 20) % (unsigned)nk);
            int v = y[blk * P + d] + (int)((r >> 30) % 7) - 3;
            y[blk * P + d] = v < (blk ? 0 : 1) ? (blk ? 0 : 1) : v;
        }
        repair(se, kind, y);
        sc_acand got = walk(se, kind, NULL, y, y + nk * P);
        if (got.ok && sc_auto_better(got.mk, got.span, &at)) {
            at = got;
            memcpy(x, y, bytes);
        }
    }
    free(y);
}

/* Walks over the ZB-H family (one stage per device) or the V family; then
 * the list scheduler's policies without caps, and walks from the best two
 * policies: once from their own maxima (no cap in effect), once with W
 * delayed as in ZB-H1 (wlag = d). */
int sc_auto_improve(sc_asearch *se)
{
    sc_actx *c = &se->c;
    int P = c->P, chunks = multi_chunk(c->pg), npol = 0;
    int *buf = malloc(16 * (size_t)P * sizeof(int));
    if (!buf)
        return -1;
    int *x = buf, *trial = buf + 6 * P, *start = buf + 12 * P; /* start: 2 x 2P */
    sc_agreedy pol[2] = {{0, 0, 0, NULL, NULL}, {0, 0, 0, NULL, NULL}};
    sc_acand top[2] = {{NULL, 0, 0, 0}, {NULL, 0, 0, 0}};
    /* the families first (their candidates are cheap to build and the most
     * regular): ZB-H from ZB-H2 and from ZB-H1, fitted to the limit */
    for (int k = 0; k < 2 && is_loop1(c->pg) && !sc_auto_must_stop(se); k++) {
        for (int d = 0; d < P; d++) {
            x[d] = k ? P - d : 2 * (P - d) - 1;
            x[P + d] = k ? d : 2 * d;
        }
        family(se, B_ZBH, x, trial);
    }
    /* the V family: from ZB-V's pattern, and from a shorter warm-up with the
     * first chunk's B held back */
    for (int k = 0; k < 2 && is_v(c->pg) && !sc_auto_must_stop(se); k++) {
        for (int d = 0; d < P; d++) { /* k = 0: ZB-V's pattern */
            x[d] = k ? P - d : 2 * (P - d) - 1;
            x[P + d] = d;
            x[2 * P + d] = k ? P : 0;
            x[3 * P + d] = k ? (2 * P - 1 - 2 * d) / 3 : 0;
            x[4 * P + d] = k ? 0 : P - d;
            x[5 * P + d] = k ? P : 2 * P;
        }
        family(se, B_V, x, trial);
    }
    for (int f = 0; f < 12 && !sc_auto_must_stop(se); f++) {
        sc_agreedy g = {.wfill = f % 3, .bwait = (f / 3) & 1, .fnew = f / 6};
        double mk, span;
        if (g.fnew && !chunks)
            break;
        if (sc_auto_greedy(c, &g, se->tmp.ord, x) != 0 || sc_auto_timing(se, &mk, &span))
            continue;
        int k = sc_auto_better(mk, span, &top[0]) ? 0 : sc_auto_better(mk, span, &top[1]) ? 1 : 2;
        if (k == 0) {
            top[1] = top[0], pol[1] = pol[0];
            memcpy(start + 2 * P, start, 2 * (size_t)P * sizeof(int));
        }
        if (k < 2) {
            top[k] = (sc_acand){NULL, mk, span, 1}, pol[k] = g;
            memcpy(start + 2 * k * P, x, 2 * (size_t)P * sizeof(int));
            npol += npol < 2;
        }
        if (sc_auto_better(mk, span, &se->best)) {
            sc_auto_take(se, &se->best, mk, span);
            describe(se, B_LIST, &g, x);
        }
    }
    for (int k = 0; k < 2 * npol && !sc_auto_must_stop(se); k++) {
        memcpy(x, start + 2 * (k / 2) * P, 2 * (size_t)P * sizeof(int));
        if (k & 1)
            for (int d = 0; d < P; d++)
                x[P + d] = d;
        walk(se, B_LIST, &pol[k / 2], x, trial);
    }
    free(buf);
    return 0;
}

/* Whether pass x must stay after pass y of the same device: a local
 * dependency, or the same kind on the same stage (microbatch order kept). */
static int needs(const sc_instr *x, const sc_instr *y)
{
    if (x->stage == y->stage && x->op == y->op)
        return 1;
    if (x->mb != y->mb)
        return 0;
    if (sc_op_is_fwd(x->op))
        return sc_op_is_fwd(y->op) && y->stage == x->stage - 1;
    if (sc_op_is_bgrad(x->op))
        return (sc_op_is_fwd(y->op) && y->stage == x->stage) ||
               (sc_op_is_bgrad(y->op) && y->stage == x->stage + 1);
    return sc_op_is_bgrad(y->op) && y->stage == x->stage;
}

/* Moves the pass at k of device d's order by r places (r < 0: earlier)
 * when no local dependency is crossed. 1 if it moved. */
static int shift(sc_instr *v, size_t lo, size_t hi, size_t k, long r)
{
    if (r < 0 ? k < lo + (size_t)-r : k + (size_t)r >= hi)
        return 0;
    sc_instr x = v[k];
    if (r < 0) {
        for (size_t j = k - (size_t)-r; j < k; j++)
            if (needs(&x, &v[j]))
                return 0;
        memmove(v + k - (size_t)-r + 1, v + k - (size_t)-r, (size_t)-r * sizeof x);
        v[k - (size_t)-r] = x;
    } else {
        for (size_t j = k + 1; j <= k + (size_t)r; j++)
            if (needs(&v[j], &x))
                return 0;
        memmove(v + k, v + k + 1, (size_t)r * sizeof x);
        v[k + (size_t)r] = x;
    }
    return 1;
}

/* Ends the description with " +moves" (once, within its size). */
static void mark_moves(char *s, size_t size)
{
    static const char tag[] = " +moves";
    size_t n = strlen(s), t = sizeof tag - 1;
    if (n >= t && strcmp(s + n - t, tag) == 0)
        return;
    if (n + t >= size)
        n = size - t - 1;
    memcpy(s + n, tag, t + 1);
}

/* Polishes se->best by moving single passes within their device's order
 * (half the time on the device with the longest span), keeping a move when
 * the longest span, then the sum of spans, then the makespan is no worse.
 * Ends after a run of moves without a strict gain. */
void sc_auto_polish(sc_asearch *se)
{
    sc_actx *c = &se->c;
    sc_instr *v = se->tmp.ord;
    double mk, span;
    memcpy(v, se->best.ord, c->N * sizeof *v);
    if (sc_auto_timing(se, &mk, &span))
        return;
    double spans = c->spans;
    int crit = c->crit;
    long stall = 0, limit = 2000 + 20 * (long)c->P;
    while (stall < limit && !sc_auto_must_stop(se)) {
        unsigned long long r = sc_auto_rand(se);
        int d = (r & 1) ? crit : (int)((r >> 1) % (unsigned)c->P);
        size_t lo = c->off[d], hi = c->off[d + 1];
        size_t k = lo + (size_t)((r >> 12) % (hi - lo));
        long dist = 1 + (long)((r >> 40) % 6);
        if ((r >> 50) & 1)
            dist = -dist;
        stall++;
        if (!shift(v, lo, hi, k, dist))
            continue;
        double mk2, span2;
        double tol = 1e-9 * fmax(1.0, mk);
        int ok = !sc_auto_timing(se, &mk2, &span2);
        int gain = ok && (span2 < span - tol ||
                          (span2 <= span + tol && (c->spans < spans - tol ||
                                                   (c->spans <= spans + tol && mk2 < mk - tol))));
        int same = ok && !gain && span2 <= span + tol && c->spans <= spans + tol && mk2 <= mk + tol;
        if (!gain && !same) {
            shift(v, lo, hi, dist < 0 ? k - (size_t)-dist : k + (size_t)dist, -dist); /* undo */
            continue;
        }
        if (gain)
            stall = 0;
        mk = mk2, span = span2, spans = c->spans, crit = c->crit;
        if (sc_auto_better(mk, span, &se->best)) {
            memcpy(se->best.ord, v, c->N * sizeof *v);
            se->best.mk = mk, se->best.span = span;
            mark_moves(se->res->search_choice, sizeof se->res->search_choice);
        }
    }
}
