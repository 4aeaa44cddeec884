/*
 * autosched.c — the automatic scheduler's driver (autosched.h): the
 * context, the phases in order (autosched_search.c), and the final choice
 * made on simulated figures.
 */
#include "compile.h"
#include "autosched_impl.h"
#include "schedule/dataflow.h"
#include "schedule/pairing.h"
#include "sim/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    free(c->tree);
    free(c->tk);
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
    c->limit = c->real_limit = mem + SC_AUTO_EPS;
    if (pg->len) { /* the heuristics count a stage's units per record: the largest */
        double kmax = 1;
        for (int s = 0; s < pg->S; s++)
            for (int mb = 0; mb < pg->m; mb++)
                kmax = fmax(kmax, sc_len_k(pg, SC_LK_MEM, s, mb));
        c->limit = mem / kmax + SC_AUTO_EPS;
    }
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
    for (c->Q = 1; c->Q < P; c->Q *= 2)
        ;
    c->tree = malloc(2 * (size_t)c->Q * sizeof(int));
    c->tk = malloc(2 * (size_t)c->Q * sizeof(double));
    if (!c->maxw || !c->tree || !c->tk || !c->off || !c->endF || !c->endB || !c->wtime ||
        !c->e || !c->dt || !c->cur || !c->pc || !c->nf || !c->nb || !c->nw || !c->stack ||
        !c->queued)
        return -1;
    c->off[0] = 0;
    for (int d = 0; d < P; d++)
        c->off[d + 1] = c->off[d] + 3 * (size_t)pg->nchunks[d] * (size_t)pg->m;
    return 0;
}

double sc_auto_min_mem(const sc_prog *pg)
{
    double x = 0;
    for (int d = 0; d < pg->P; d++)
        for (int mb = 0; mb < (pg->len ? pg->m : 1); mb++) { /* with lengths: the largest */
            double u = 0;
            for (int k = 0; k < pg->nchunks[d]; k++)
                u += pg->len ? sc_rec_units(pg, pg->dev_stages[d][k], mb)
                             : pg->mem[pg->dev_stages[d][k]];
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

/* ---- final choice on simulated figures ------------------------------- */

/* The figures of a schedule: simulated, and of its dataflow timing. */
typedef struct figs {
    double mk, bubble, peak, fmk, fbubble;
} figs;

/* Installs ord, checks and simulates it (one replay is the proof and the
 * timing), and times it by the dataflow unless flow (a candidate's figures
 * by the dataflow timing, or NULL) has them already. Returns the status; a
 * peak over the limit is SC_ERR_LIMIT. */
static sc_status measure(sc_asearch *se, const sc_instr *ord, const sc_acand *flow, figs *f)
{
    sc_actx *c = &se->c;
    sc_prog *pg = c->pg;
    sc_sim *sim = NULL;
    sc_sim_free(se->sim);
    se->sim = NULL;
    sc_status st = sc_auto_install(pg, c, ord);
    se->installed = st ? NULL : ord;
    if (!st)
        st = sc_simulate(pg, &sim);
    if (!st) {
        f->mk = sim->makespan;
        f->bubble = sim->bubble_rate;
        f->peak = 0;
        for (int d = 0; d < c->P; d++)
            f->peak = fmax(f->peak, sim->peak_mem[d]);
        if (f->peak > c->real_limit)
            st = sc_fail(pg, SC_ERR_LIMIT, "schedule exceeds the memory limit (%g > %g)", f->peak,
                         c->real_limit);
    }
    if (st)
        sc_sim_free(sim);
    else
        se->sim = sim; /* the winner's figures, when it stays installed */
    double span;
    if (!st && flow) {
        f->fmk = flow->mk;
        f->fbubble = flow->span > 0 ? 1.0 - se->lb / flow->span : 0;
    } else if (!st && sc_auto_time(c, ord, &f->fmk, &span) == 0) {
        f->fbubble = span > 0 ? 1.0 - se->lb / span : 0;
    }
    return st;
}

/* a beats b under the objective: makespan (what a step costs, issue 29:
 * the bubble rate first once kept a search's schedule 0.38 % longer), then
 * bubble */
static int wins(const figs *a, const figs *b, int flow)
{
    double ab = flow ? a->fbubble : a->bubble, bb = flow ? b->fbubble : b->bubble;
    double am = flow ? a->fmk : a->mk, bm = flow ? b->fmk : b->mk, tol = 1e-9 * fmax(1, bm);
    return am < bm - tol || (am <= bm + tol && ab < bb - 1e-12);
}

/* The figures of the installed orders (after pairing): simulated, and the
 * dataflow timing's. */
static sc_status refigure(sc_prog *pg, sc_auto_result *res)
{
    sc_sim *sim;
    sc_status st = sc_simulate(pg, &sim);
    if (st != SC_OK)
        return st;
    res->makespan = sim->makespan;
    res->bubble_rate = sim->bubble_rate;
    res->peak = 0;
    for (int d = 0; d < sim->P; d++)
        res->peak = fmax(res->peak, sim->peak_mem[d]);
    sc_sim_free(sim);
    size_t n = 0;
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        size_t k;
        sc_prog_order(pg, d, &k);
        n += k;
    }
    double *t = malloc(2 * (n + 1) * sizeof(double));
    if (!t)
        return sc_fail(pg, SC_ERR_NOMEM, "autoschedule: out of memory");
    if ((st = sc_dataflow(pg, t, t + n + 1, NULL)) == SC_OK) {
        double mk = 0, busy = 0;
        for (size_t i = 0; i < n; i++)
            mk = fmax(mk, t[n + 1 + i]);
        for (int d = 0; d < sc_prog_devices(pg); d++) { /* the bubble by the largest span */
            size_t k, base = 0;
            for (int e = 0; e < d; e++) {
                sc_prog_order(pg, e, &k);
                base += k;
            }
            sc_prog_order(pg, d, &k);
            double b = 0;
            for (size_t i = 0; i < k; i++)
                b += t[n + 1 + base + i] - t[base + i];
            busy = fmax(busy, b);
        }
        res->flow_makespan = mk;
        res->flow_bubble = mk > 0 ? 1 - busy / mk : 0;
    }
    free(t);
    return st;
}

/* The heuristic, then (with a time limit) the search and its polish;
 * nonzero when out of memory. */
static int run_search(sc_asearch *se)
{
    const sc_auto_opts *o = se->o;
    sc_auto_heuristic(se);
    if (o->time_limit > 0 && se->c.use_sim && se->heur.ok) {
        /* the search compares with the heuristic by the simulator */
        memcpy(se->tmp.ord, se->heur.ord, se->c.N * sizeof(sc_instr));
        double mk, span;
        if (sc_auto_timing(se, &mk, &span) == 0) {
            se->heur.mk = mk;
            se->heur.span = span;
        }
    }
    if (o->time_limit > 0 && sc_auto_improve(se))
        return 1;
    if (o->time_limit > 0 && se->best.ok)
        sc_auto_polish(se);
    return 0;
}

/* The winner (*win): the search's when it beats the heuristic, else the
 * heuristic's, else the sequential order; its figures and the heuristic's
 * into se->res. */
static sc_status pick_winner(sc_asearch *se, const sc_instr **win)
{
    const sc_auto_opts *o = se->o;
    sc_auto_result *res = se->res;
    figs h = {-1, -1, -1, -1, -1}, b = h, w = h;
    /* the heuristic's figures are the dataflow timing's unless the search
     * re-timed them by the simulator */
    int heur_flow = !(o->time_limit > 0 && se->c.use_sim);
    int hok = se->heur.ok && !measure(se, se->heur.ord, heur_flow ? &se->heur : NULL, &h);
    int bok = se->best.ok && !measure(se, se->best.ord, se->c.use_sim ? NULL : &se->best, &b);
    if (hok) {
        res->heur_makespan = h.mk;
        res->heur_bubble = h.bubble;
        res->heur_peak = h.peak;
        res->heur_flow_bubble = h.fbubble;
    }
    if (bok && (!hok || wins(&b, &h, !se->c.use_sim))) {
        *win = se->best.ord;
        res->method = "search";
        w = b;
    } else if (hok) {
        *win = se->heur.ord;
        res->method = "heuristic";
        w = h;
    } else {
        sequential(&se->c, se->tmp.ord);
        *win = se->tmp.ord;
        sc_status st = measure(se, *win, NULL, &w);
        if (st)
            return st;
    }
    res->makespan = w.mk;
    res->bubble_rate = w.bubble;
    res->peak = w.peak;
    res->flow_makespan = w.fmk;
    res->flow_bubble = w.fbubble;
    return SC_OK;
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
    sc_asearch se;
    memset(&se, 0, sizeof se);
    se.o = o;
    se.res = res;
    se.t0 = se.last_report = sc_auto_now();
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
    if (run_search(&se))
        goto nomem;
    const sc_instr *win = NULL;
    if ((st = pick_winner(&se, &win)))
        goto done;
    /* The winner stays installed; when it was measured last it is already,
     * lowered and verified (sc_check and sc_simulate need no new lowering). */
    if (se.installed != win)
        st = sc_auto_install(pg, &se.c, win);
    /* Overlapped pairs where the costs gain (tfb below tf + tb, an
     * all-to-all part): neighbouring F and B joined, under the limit, when
     * the timing does not grow (schedule/pairing.h); figures again. */
    if (st == SC_OK && sc_prog_pair_gain(pg) > 0) {
        if ((st = sc_pair_greedy(pg, o->mem, &res->pairs)) == SC_OK && res->pairs > 0)
            st = refigure(pg, res);
    } else if (st == SC_OK && se.installed == win && o->keep_sim) {
        res->sim = se.sim; /* the program is as measured */
        se.sim = NULL;
    }
    goto done;
nomem:
    st = sc_fail(pg, SC_ERR_NOMEM, "autoschedule: out of memory");
done:
    res->seconds = sc_auto_now() - se.t0;
    free(se.heur.ord);
    free(se.best.ord);
    free(se.tmp.ord);
    sc_sim_free(se.sim);
    ctx_free(&se.c);
    return st;
}
