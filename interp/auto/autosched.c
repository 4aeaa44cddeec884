/*
 * autosched.c — the automatic scheduler's driver (autosched.h): the
 * context, the timing of candidates, the heuristic phase, the search, and
 * the final choice made on simulated figures.
 */
#include "autosched_impl.h"
#include "sim/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- context --------------------------------------------------------- */

static void ctx_free(sc_actx *c)
{
    free(c->off);
    free(c->endF);
    free(c->endB);
    free(c->wtime);
    free(c->e);
    free(c->dt);
    free(c->cur);
    free(c->pc);
    free(c->nf);
    free(c->nb);
    free(c->nw);
    free(c->stack);
    free(c->queued);
    free(c->maxw);
}

static int ctx_init(sc_actx *c, sc_prog *pg, double mem)
{
    memset(c, 0, sizeof *c);
    int P = pg->P, S = pg->S;
    size_t SM = (size_t)S * (size_t)pg->m, uP = (size_t)P, uS = (size_t)S;
    c->pg = pg;
    c->P = P;
    c->S = S;
    c->m = pg->m;
    c->limit = mem + SC_AUTO_EPS;
    c->N = 3 * SM;
    c->off = malloc((uP + 1) * sizeof *c->off);
    c->endF = malloc(SM * sizeof(double));
    c->endB = malloc(SM * sizeof(double));
    c->wtime = malloc(SM * sizeof(double));
    c->e = malloc(uP * sizeof(double));
    c->dt = malloc(uP * sizeof(double));
    c->cur = malloc(uP * sizeof(double));
    c->pc = malloc(uP * sizeof(size_t));
    c->nf = malloc(uS * sizeof(int));
    c->nb = malloc(uS * sizeof(int));
    c->nw = malloc(uS * sizeof(int));
    c->stack = malloc(uP * sizeof(int));
    c->queued = malloc(uP * sizeof(int));
    c->maxw = malloc(2 * uP * sizeof(int));
    if (!c->maxw || !c->off || !c->endF || !c->endB || !c->wtime || !c->e || !c->dt || !c->cur ||
        !c->pc || !c->nf || !c->nb || !c->nw || !c->stack || !c->queued)
        return -1;
    c->off[0] = 0;
    for (int d = 0; d < P; d++)
        c->off[d + 1] = c->off[d] + 3 * (size_t)pg->nchunks[d] * (size_t)pg->m;
    return 0;
}

double sc_auto_min_mem(const sc_prog *pg)
{
    double x = 0;
    for (int d = 0; d < pg->P; d++) {
        double u = 0;
        for (int k = 0; k < pg->nchunks[d]; k++)
            u += pg->mem[pg->dev_stages[d][k]];
        x = fmax(x, u);
    }
    return x;
}

/* The span of a schedule without bubble: the largest busy time. */
static double lower_bound(const sc_prog *pg)
{
    double lb = 0;
    for (int d = 0; d < pg->P; d++) {
        double busy = 0;
        for (int k = 0; k < pg->nchunks[d]; k++) {
            int s = pg->dev_stages[d][k];
            busy += pg->m * (pg->tf[s] + pg->tb[s] + pg->tw[s]);
        }
        lb = fmax(lb, busy);
    }
    return lb;
}

/* One microbatch at a time: on each device its F in stage order, then B and
 * W in reverse stage order. Needs the sum of a device's units. */
static void sequential(const sc_actx *c, sc_instr *ord)
{
    const sc_prog *pg = c->pg;
    for (int d = 0; d < c->P; d++) {
        size_t k = c->off[d];
        int n = pg->nchunks[d], *st = pg->dev_stages[d];
        for (int i = 0; i < c->m; i++) {
            for (int q = 0; q < n; q++)
                ord[k++] = (sc_instr){.op = SC_OP_F, .stage = st[q], .mb = i, .peer = -1};
            for (int q = n - 1; q >= 0; q--) {
                ord[k++] = (sc_instr){.op = SC_OP_B, .stage = st[q], .mb = i, .peer = -1};
                ord[k++] = (sc_instr){.op = SC_OP_W, .stage = st[q], .mb = i, .peer = -1};
            }
        }
    }
}

/* ---- the search ------------------------------------------------------ */

typedef struct cand {
    sc_instr *ord;
    double mk, span;
    int ok;
} cand;

typedef struct search {
    sc_actx c;
    const sc_auto_opts *o;
    sc_auto_result *res;
    double t0, deadline, lb, last_report;
    int max_evals, stopped;
    unsigned long long rng;
    cand heur, best, tmp;
} search;

/* The objective: the longest device span (the papers' bubble rate), then
 * the makespan. */
static int better(double mk, double span, const cand *b)
{
    if (!b->ok)
        return 1;
    double tol = 1e-9 * fmax(1.0, b->mk);
    return span < b->span - tol || (span <= b->span + tol && mk < b->mk - tol);
}

/* Makes se->tmp the candidate *into (swapping the buffers). */
static void take(search *se, cand *into, double mk, double span)
{
    sc_instr *t = into->ord;
    into->ord = se->tmp.ord;
    se->tmp.ord = t;
    into->mk = mk;
    into->span = span;
    into->ok = 1;
}

/* Replaces pg's orders by the candidate's. */
static sc_status install(sc_prog *pg, const sc_actx *c, const sc_instr *ord)
{
    sc_status st = SC_OK;
    for (int d = 0; d < c->P; d++) {
        sc_prog_clear_order(pg, d);
        for (size_t k = c->off[d]; k < c->off[d + 1] && !st; k++)
            st = sc_prog_push(pg, d, ord[k].op, ord[k].stage, ord[k].mb);
    }
    return st;
}

/* Times a candidate in the simulator: lowered, replayed under the
 * communication semantics (what the result is judged by). 0, -1 invalid,
 * -2 over the memory limit. Sets c->spans and c->crit as sc_auto_time. */
static int sim_time(sc_actx *c, const sc_instr *ord, double *mk, double *span)
{
    sc_prog *pg = c->pg;
    for (int d = 0; d < c->P; d++) {
        double mem = 0;
        for (size_t k = c->off[d]; k < c->off[d + 1]; k++)
            if ((mem += sc_auto_dmem(pg, ord[k].op, ord[k].stage)) > c->limit)
                return -2;
    }
    sc_sim *sim = NULL;
    if (install(pg, c, ord) || sc_simulate(pg, &sim))
        return -1;
    *mk = sim->makespan;
    *span = -1;
    c->spans = 0;
    for (int d = 0; d < c->P; d++) {
        double x = sim->end[d] - sim->start[d];
        c->spans += x;
        if (x > *span) {
            *span = x;
            c->crit = d;
        }
    }
    sc_sim_free(sim);
    return 0;
}

/* Times se->tmp: 0 with its figures, or -1 (invalid or over the limit). */
static int timing(search *se, double *mk, double *span)
{
    se->res->evals++;
    if (se->c.use_sim)
        return sim_time(&se->c, se->tmp.ord, mk, span) ? -1 : 0;
    return sc_auto_time(&se->c, se->tmp.ord, mk, span) ? -1 : 0;
}

/* Times se->tmp; when it beats *into, takes it. 1 if it did. */
static int offer(search *se, cand *into)
{
    double mk, span;
    if (timing(se, &mk, &span) || !better(mk, span, into))
        return 0;
    take(se, into, mk, span);
    return 1;
}

/* Whether the search must stop now (time, budget, or nothing to gain). */
static int must_stop(search *se)
{
    double t = now_s();
    if (se->o->progress && t - se->last_report >= 0.05) {
        se->last_report = t;
        const cand *b = se->heur.ok ? &se->heur : NULL; /* the better of the two */
        if (se->best.ok && (!b || !better(b->mk, b->span, &se->best)))
            b = &se->best;
        se->o->progress(se->o->progress_ctx, t - se->t0, se->o->time_limit,
                        b && b->span > 0 ? 1 - se->lb / b->span : -1);
    }
    if (t >= se->deadline) {
        se->res->timed_out = 1;
        se->stopped = 1;
    }
    double lb = se->lb * (1 + 1e-12); /* no bubble left to remove */
    if (se->res->evals >= se->max_evals || (se->best.ok && se->best.span <= lb) ||
        (se->heur.ok && se->heur.span <= lb))
        se->stopped = 1;
    return se->stopped;
}

static unsigned long long next_rand(search *se)
{
    /* splitmix64 */
    unsigned long long z = (se->rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

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

static void heuristic(search *se)
{
    sc_actx *c = &se->c;
    int best = -1;
    if (is_loop1(c->pg)) {
        for (int f = 0; f < 8; f++)
            if (sc_auto_zb(c, f, se->tmp.ord) == 0 && offer(se, &se->heur))
                best = f;
        if (best >= 0)
            snprintf(se->res->heur_choice, sizeof se->res->heur_choice,
                     "zb: allow_bubble=%d prioritize_b=%d greedy_w=%d", best & 1, (best >> 1) & 1,
                     (best >> 2) & 1);
        return;
    }
    for (int f = 0; f < 8; f++) {
        sc_agreedy g = {.wfill = 1 + (f & 1), .bwait = (f >> 1) & 1, .fnew = (f >> 2) & 1};
        if (sc_auto_greedy(c, &g, se->tmp.ord, NULL) == 0 && offer(se, &se->heur))
            best = f;
    }
    if (best >= 0)
        snprintf(se->res->heur_choice, sizeof se->res->heur_choice,
                 "list: wfill=%d bwait=%d fnew=%d", 1 + (best & 1), (best >> 1) & 1,
                 (best >> 2) & 1);
}

/* Which schedule builder a walk drives. */
enum { B_LIST, B_ZBH, B_V };

static void describe(search *se, int kind, const sc_agreedy *g, const int *x)
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

static int build(search *se, int kind, const sc_agreedy *g, const int *x)
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
static cand walk(search *se, int kind, const sc_agreedy *pol, int *x, int *trial)
{
    sc_agreedy g = pol ? *pol : (sc_agreedy){0, 0, 0, NULL, NULL};
    sc_actx *c = &se->c;
    int P = c->P, nk = kind == B_V ? 6 : 2, stall = 0, limit = 6 * P + 24;
    size_t bytes = (size_t)nk * (size_t)P * sizeof(int);
    g.warm = trial;
    g.wlag = trial + P;
    cand here = {NULL, 0, 0, 0};
    while (stall < limit && !must_stop(se)) {
        memcpy(trial, x, bytes);
        unsigned long long r = next_rand(se);
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
        if (!memcmp(trial, x, bytes) || build(se, kind, &g, trial) || timing(se, &mk, &span))
            continue;
        int gain = better(mk, span, &here);
        if (!gain && here.ok) { /* keep it only if it is as good: a plateau */
            double tol = 1e-9 * fmax(1.0, here.mk);
            if (span > here.span + tol || mk > here.mk + tol)
                continue;
        }
        if (gain)
            stall = 0;
        here.ok = 1, here.mk = mk, here.span = span;
        memcpy(x, trial, bytes);
        if (better(mk, span, &se->best)) {
            take(se, &se->best, mk, span);
            describe(se, kind, &g, trial);
        }
    }
    return here;
}

/* Makes a family's start fit the memory limit: on each device over it,
 * fewer pairs, then fewer warm-up F, then less W delay, until it fits. */
static void repair(search *se, int kind, int *x)
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
static void family(search *se, int kind, int *x, int *trial)
{
    double mk, span;
    int P = se->c.P, nk = kind == B_V ? 6 : 2;
    size_t bytes = (size_t)nk * (size_t)P * sizeof(int);
    repair(se, kind, x);
    if (!build(se, kind, NULL, x) && !timing(se, &mk, &span) && better(mk, span, &se->best)) {
        take(se, &se->best, mk, span);
        describe(se, kind, NULL, x);
    }
    cand at = walk(se, kind, NULL, x, trial);
    /* iterated local search: kick a few devices' parameters, walk again,
     * move there when it is better */
    int *y = malloc(2 * bytes);
    if (!y)
        return;
    for (int kick = 0; kick < 12 && at.ok && !must_stop(se); kick++) {
        memcpy(y, x, bytes);
        int n = 1 + (int)(next_rand(se) % (unsigned)(P / 4 + 1));
        for (int i = 0; i < n; i++) {
            unsigned long long r = next_rand(se);
            int d = (int)(r % (unsigned)P), blk = (int)((r >> 20) % (unsigned)nk);
            int v = y[blk * P + d] + (int)((r >> 30) % 7) - 3;
            y[blk * P + d] = v < (blk ? 0 : 1) ? (blk ? 0 : 1) : v;
        }
        repair(se, kind, y);
        cand got = walk(se, kind, NULL, y, y + nk * P);
        if (got.ok && better(got.mk, got.span, &at)) {
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
static int improve(search *se)
{
    sc_actx *c = &se->c;
    int P = c->P, chunks = multi_chunk(c->pg), npol = 0;
    int *buf = malloc(16 * (size_t)P * sizeof(int));
    if (!buf)
        return -1;
    int *x = buf, *trial = buf + 6 * P, *start = buf + 12 * P; /* start: 2 x 2P */
    sc_agreedy pol[2] = {{0, 0, 0, NULL, NULL}, {0, 0, 0, NULL, NULL}};
    cand top[2] = {{NULL, 0, 0, 0}, {NULL, 0, 0, 0}};
    /* the families first (their candidates are cheap to build and the most
     * regular): ZB-H from ZB-H2 and from ZB-H1, fitted to the limit */
    for (int k = 0; k < 2 && is_loop1(c->pg) && !must_stop(se); k++) {
        for (int d = 0; d < P; d++) {
            x[d] = k ? P - d : 2 * (P - d) - 1;
            x[P + d] = k ? d : 2 * d;
        }
        family(se, B_ZBH, x, trial);
    }
    /* the V family: from ZB-V's pattern, and from a shorter warm-up with the
     * first chunk's B held back */
    for (int k = 0; k < 2 && is_v(c->pg) && !must_stop(se); k++) {
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
    for (int f = 0; f < 12 && !must_stop(se); f++) {
        sc_agreedy g = {.wfill = f % 3, .bwait = (f / 3) & 1, .fnew = f / 6};
        double mk, span;
        if (g.fnew && !chunks)
            break;
        if (sc_auto_greedy(c, &g, se->tmp.ord, x) != 0 || timing(se, &mk, &span))
            continue;
        int k = better(mk, span, &top[0]) ? 0 : better(mk, span, &top[1]) ? 1 : 2;
        if (k == 0) {
            top[1] = top[0], pol[1] = pol[0];
            memcpy(start + 2 * P, start, 2 * (size_t)P * sizeof(int));
        }
        if (k < 2) {
            top[k] = (cand){NULL, mk, span, 1}, pol[k] = g;
            memcpy(start + 2 * k * P, x, 2 * (size_t)P * sizeof(int));
            npol += npol < 2;
        }
        if (better(mk, span, &se->best)) {
            take(se, &se->best, mk, span);
            describe(se, B_LIST, &g, x);
        }
    }
    for (int k = 0; k < 2 * npol && !must_stop(se); k++) {
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
    if (x->op == SC_OP_F)
        return y->op == SC_OP_F && y->stage == x->stage - 1;
    if (x->op == SC_OP_B)
        return (y->op == SC_OP_F && y->stage == x->stage) ||
               (y->op == SC_OP_B && y->stage == x->stage + 1);
    return y->op == SC_OP_B && y->stage == x->stage;
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
static void polish(search *se)
{
    sc_actx *c = &se->c;
    sc_instr *v = se->tmp.ord;
    double mk, span;
    memcpy(v, se->best.ord, c->N * sizeof *v);
    if (timing(se, &mk, &span))
        return;
    double spans = c->spans;
    int crit = c->crit;
    long stall = 0, limit = 2000 + 20 * (long)c->P;
    while (stall < limit && !must_stop(se)) {
        unsigned long long r = next_rand(se);
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
        int ok = !timing(se, &mk2, &span2);
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
        if (better(mk, span, &se->best)) {
            memcpy(se->best.ord, v, c->N * sizeof *v);
            se->best.mk = mk, se->best.span = span;
            mark_moves(se->res->search_choice, sizeof se->res->search_choice);
        }
    }
}

/* ---- final choice on simulated figures ------------------------------- */

/* The figures of a schedule: simulated, and of its dataflow timing. */
typedef struct figs {
    double mk, bubble, peak, fmk, fbubble;
} figs;

/* Installs ord, checks and simulates it, and times it by the dataflow.
 * Returns the status; a peak over the limit is SC_ERR_LIMIT. */
static sc_status measure(search *se, const sc_instr *ord, figs *f)
{
    sc_actx *c = &se->c;
    sc_prog *pg = c->pg;
    sc_sim *sim = NULL;
    sc_status st = install(pg, c, ord);
    if (!st)
        st = sc_check(pg);
    if (!st)
        st = sc_simulate(pg, &sim);
    if (!st) {
        f->mk = sim->makespan;
        f->bubble = sim->bubble_rate;
        f->peak = 0;
        for (int d = 0; d < c->P; d++)
            f->peak = fmax(f->peak, sim->peak_mem[d]);
        if (f->peak > c->limit)
            st = sc_fail(pg, SC_ERR_LIMIT, "schedule exceeds the memory limit (%g > %g)", f->peak,
                         c->limit);
    }
    sc_sim_free(sim);
    double span;
    if (!st && sc_auto_time(c, ord, &f->fmk, &span) == 0)
        f->fbubble = span > 0 ? 1.0 - se->lb / span : 0;
    return st;
}

/* a beats b under the objective: bubble, then makespan */
static int wins(const figs *a, const figs *b, int flow)
{
    double ab = flow ? a->fbubble : a->bubble, bb = flow ? b->fbubble : b->bubble;
    double am = flow ? a->fmk : a->mk, bm = flow ? b->fmk : b->mk;
    return ab < bb - 1e-12 || (ab <= bb + 1e-12 && am < bm - 1e-9 * fmax(1, bm));
}

sc_status sc_auto_fill(sc_prog *pg, const sc_auto_opts *o, sc_auto_result *res)
{
    memset(res, 0, sizeof *res);
    res->heur_makespan = res->heur_bubble = res->heur_peak = -1;
    res->method = "sequential";
    if (!o || !isfinite(o->mem) || o->mem <= 0)
        return sc_fail(pg, SC_ERR_ARG, "autoschedule: mem must be a positive number of units");
    double need = sc_auto_min_mem(pg);
    if (o->mem + SC_AUTO_EPS < need)
        return sc_fail(pg, SC_ERR_ARG,
                       "autoschedule: mem = %g units is below the %g units one microbatch needs "
                       "on a device",
                       o->mem, need);
    search se;
    memset(&se, 0, sizeof se);
    se.o = o;
    se.res = res;
    se.t0 = se.last_report = now_s();
    se.deadline = se.t0 + (o->time_limit > 0 ? o->time_limit : 0);
    se.max_evals = o->max_evals > 0 ? o->max_evals : 100000;
    se.rng = o->seed;
    se.lb = res->lower_bound = lower_bound(pg);
    sc_status st = SC_OK;
    if (ctx_init(&se.c, pg, o->mem))
        goto nomem;
    se.c.use_sim = o->objective != SC_AUTO_FLOW;
    size_t N = se.c.N;
    se.heur.ord = malloc(N * sizeof(sc_instr));
    se.best.ord = malloc(N * sizeof(sc_instr));
    se.tmp.ord = malloc(N * sizeof(sc_instr));
    if (!se.heur.ord || !se.best.ord || !se.tmp.ord)
        goto nomem;
    heuristic(&se);
    if (o->time_limit > 0 && improve(&se))
        goto nomem;
    if (o->time_limit > 0 && se.best.ok)
        polish(&se);

    figs h = {-1, -1, -1, -1, -1}, b = h, w = h;
    int hok = se.heur.ok && !measure(&se, se.heur.ord, &h);
    int bok = se.best.ok && !measure(&se, se.best.ord, &b);
    if (hok) {
        res->heur_makespan = h.mk;
        res->heur_bubble = h.bubble;
        res->heur_peak = h.peak;
        res->heur_flow_bubble = h.fbubble;
    }
    const sc_instr *win = NULL;
    if (bok && (!hok || wins(&b, &h, !se.c.use_sim))) {
        win = se.best.ord;
        res->method = "search";
        w = b;
    } else if (hok) {
        win = se.heur.ord;
        res->method = "heuristic";
        w = h;
    } else {
        sequential(&se.c, se.tmp.ord);
        win = se.tmp.ord;
        if ((st = measure(&se, win, &w)))
            goto done;
    }
    res->makespan = w.mk;
    res->bubble_rate = w.bubble;
    res->peak = w.peak;
    res->flow_makespan = w.fmk;
    res->flow_bubble = w.fbubble;
    st = install(pg, &se.c, win); /* the winner stays installed */
    goto done;
nomem:
    st = sc_fail(pg, SC_ERR_NOMEM, "autoschedule: out of memory");
done:
    res->seconds = now_s() - se.t0;
    free(se.heur.ord);
    free(se.best.ord);
    free(se.tmp.ord);
    ctx_free(&se.c);
    return st;
}
