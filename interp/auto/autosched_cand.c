/*
 * autosched_cand.c — the automatic scheduler's candidates (autosched_impl.h):
 * comparing them by the objective, timing them (the simulator or the
 * dataflow timing), keeping the better one, and when to stop.
 */
#include "autosched_impl.h"
#include "compile.h"
#include "sim/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double sc_auto_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}


/* The objective: the longest device span (the papers' bubble rate), then
 * the makespan. */
int sc_auto_better(double mk, double span, const sc_acand *b)
{
    if (!b->ok)
        return 1;
    double tol = 1e-9 * fmax(1.0, b->mk);
    return mk < b->mk - tol || (mk <= b->mk + tol && span < b->span - tol);
}

/* Makes se->tmp the candidate *into (swapping the buffers). */
void sc_auto_take(sc_asearch *se, sc_acand *into, double mk, double span)
{
    sc_instr *t = into->ord;
    into->ord = se->tmp.ord;
    se->tmp.ord = t;
    into->mk = mk;
    into->span = span;
    into->ok = 1;
}

/* Replaces pg's orders by the candidate's: copied whole (a candidate holds
 * every pass of the program once, each in range: what sc_prog_push checks
 * pass by pass). */
sc_status sc_auto_install(sc_prog *pg, const sc_actx *c, const sc_instr *ord)
{
    for (int d = 0; d < c->P; d++) {
        size_t n = c->off[d + 1] - c->off[d];
        sc_prog_clear_order(pg, d);
        if (sc_vec_reserve(&pg->order[d], n) != SC_OK)
            return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
        memcpy(pg->order[d].v, ord + c->off[d], n * sizeof *ord);
        pg->order[d].n = n;
        pg->npasses += n;
    }
    sc_prog_invalidate(pg);
    return SC_OK;
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
    if (sc_auto_install(pg, c, ord) || sc_simulate(pg, &sim))
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
int sc_auto_timing(sc_asearch *se, double *mk, double *span)
{
    se->res->evals++;
    if (se->c.use_sim)
        return sim_time(&se->c, se->tmp.ord, mk, span) ? -1 : 0;
    return sc_auto_time(&se->c, se->tmp.ord, mk, span) ? -1 : 0;
}

/* Times se->tmp; when it beats *into, takes it. 1 if it did. */
int sc_auto_offer(sc_asearch *se, sc_acand *into)
{
    double mk, span;
    if (sc_auto_timing(se, &mk, &span) || !sc_auto_better(mk, span, into))
        return 0;
    sc_auto_take(se, into, mk, span);
    return 1;
}

/* Whether the search must stop now (time, budget, or nothing to gain). */
int sc_auto_must_stop(sc_asearch *se)
{
    double t = sc_auto_now();
    if (se->o->progress && t - se->last_report >= 0.05) {
        se->last_report = t;
        const sc_acand *b = se->heur.ok ? &se->heur : NULL; /* the better of the two */
        if (se->best.ok && (!b || !sc_auto_better(b->mk, b->span, &se->best)))
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

unsigned long long sc_auto_rand(sc_asearch *se)
{
    /* splitmix64 */
    unsigned long long z = (se->rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
