/*
 * plan.c — candidates, their front and the pick (plan.h).
 */
#include "plan/plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bound/bound.h"
#include "ir/alloc.h"

struct sc_plan {
    double cap;
    sc_plan_cand *c;
    int n, room, pick, *order; /* order: the front by growing peak */
    int nfront;
};

/* A peak counts as within the cap up to rounding of the memory model's
 * fractions (a share of 1/v unit). */
#define CAP_EPS 1e-9

sc_plan *sc_plan_new(double cap)
{
    sc_plan *pl = sc_calloc(1, sizeof *pl);
    if (pl) {
        pl->cap = cap > 0 ? cap : 0;
        pl->pick = -1;
    }
    return pl;
}

void sc_plan_free(sc_plan *pl)
{
    if (!pl)
        return;
    sc_free(pl->c);
    sc_free(pl->order);
    sc_free(pl);
}

static void copy(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
    char *nl = strchr(dst, '\n'); /* an error's first line */
    if (nl)
        *nl = 0;
}

int sc_plan_add(sc_plan *pl, const char *recipe, const char *knobs, double makespan,
                double bubble, double peak, const char *error)
{
    if (pl->n == pl->room) {
        int room = pl->room ? 2 * pl->room : 32;
        sc_plan_cand *c = sc_realloc(pl->c, (size_t)room * sizeof *c);
        if (!c)
            return -1;
        pl->c = c;
        pl->room = room;
    }
    sc_plan_cand *c = &pl->c[pl->n];
    memset(c, 0, sizeof *c);
    copy(c->recipe, sizeof c->recipe, recipe);
    copy(c->knobs, sizeof c->knobs, knobs);
    copy(c->error, sizeof c->error, error);
    if (!error && !(isfinite(makespan) && isfinite(peak)))
        copy(c->error, sizeof c->error, "no figures");
    if (!c->error[0]) {
        c->makespan = makespan;
        c->bubble = bubble;
        c->peak = peak;
    }
    return pl->n++;
}

void sc_plan_set_bytes(sc_plan *pl, int i, double peak_bytes, double total_bytes)
{
    if (i >= 0 && i < pl->n) {
        pl->c[i].peak_bytes = peak_bytes;
        pl->c[i].total_bytes = total_bytes;
    }
}

void sc_plan_set_bound(sc_plan *pl, int i, double bound)
{
    if (i >= 0 && i < pl->n && isfinite(bound) && bound > 0)
        pl->c[i].bound = bound;
}

double sc_plan_gap(const sc_plan_cand *c)
{
    return c->bound > 0 && !c->error[0] ? sc_bound_gap(c->makespan, c->bound) : NAN;
}

/* Better: faster, then smaller, then added first (a total order). */
static int better(const sc_plan_cand *a, int ia, const sc_plan_cand *b, int ib)
{
    if (a->makespan != b->makespan)
        return a->makespan < b->makespan;
    if (a->peak != b->peak)
        return a->peak < b->peak;
    return ia < ib;
}

static const sc_plan *sort_pl; /* qsort has no context argument */

/* A peak to 9 significant digits: the memory model's fractions (1/v of a
 * unit) summed in another order are the same peak. */
static double peak_key(double x)
{
    char b[40];
    snprintf(b, sizeof b, "%.9g", x);
    return strtod(b, NULL);
}

static int by_peak(const void *x, const void *y)
{
    const sc_plan_cand *a = &sort_pl->c[*(const int *)x], *b = &sort_pl->c[*(const int *)y];
    double pa = peak_key(a->peak), pb = peak_key(b->peak);
    if (pa != pb)
        return pa < pb ? -1 : 1;
    if (a->makespan != b->makespan)
        return a->makespan < b->makespan ? -1 : 1;
    return *(const int *)x - *(const int *)y;
}

void sc_plan_finish(sc_plan *pl)
{
    sc_free(pl->order);
    pl->order = sc_calloc((size_t)(pl->n ? pl->n : 1), sizeof *pl->order);
    pl->nfront = 0;
    pl->pick = -1;
    int k = 0;
    for (int i = 0; i < pl->n; i++) {
        sc_plan_cand *c = &pl->c[i];
        c->front = 0;
        c->fits = !c->error[0] && (pl->cap == 0 || c->peak <= pl->cap + CAP_EPS);
        if (!c->error[0] && pl->order)
            pl->order[k++] = i;
        if (c->fits && (pl->pick < 0 || better(c, i, &pl->c[pl->pick], pl->pick)))
            pl->pick = i;
    }
    if (!pl->order)
        return;
    /* By growing peak, then makespan: a point is on the front when it is
     * strictly faster than every one before it (each of those is at most
     * as large). Equal points: the first added only. */
    sort_pl = pl;
    qsort(pl->order, (size_t)k, sizeof *pl->order, by_peak);
    double best = INFINITY;
    for (int j = 0; j < k; j++) {
        sc_plan_cand *c = &pl->c[pl->order[j]];
        if (!isfinite(best) || c->makespan < best - 1e-9 * fmax(1, fabs(best))) {
            best = c->makespan;
            c->front = 1;
            pl->order[pl->nfront++] = pl->order[j];
        }
    }
}

int sc_plan_count(const sc_plan *pl) { return pl->n; }
const sc_plan_cand *sc_plan_cand_at(const sc_plan *pl, int i) { return &pl->c[i]; }
double sc_plan_cap(const sc_plan *pl) { return pl->cap; }
int sc_plan_pick(const sc_plan *pl) { return pl->pick; }

int sc_plan_front(const sc_plan *pl, int *out)
{
    for (int j = 0; j < pl->nfront; j++)
        out[j] = pl->order[j];
    return pl->nfront;
}

void sc_plan_name(const sc_plan_cand *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", c->recipe, c->knobs[0] ? " " : "", c->knobs);
}

/* The best fitting candidate of recipe r, or -1. */
static int best_of(const sc_plan *pl, const char *r)
{
    int b = -1;
    for (int i = 0; i < pl->n; i++)
        if (pl->c[i].fits && strcmp(pl->c[i].recipe, r) == 0 &&
            (b < 0 || better(&pl->c[i], i, &pl->c[b], b)))
            b = i;
    return b;
}

void sc_plan_why(const sc_plan *pl, char *buf, size_t len)
{
    char name[160], cap[64];
    size_t at = 0;
    if (pl->cap > 0)
        snprintf(cap, sizeof cap, "under cap %g", pl->cap);
    else
        snprintf(cap, sizeof cap, "without a cap");
    buf[0] = 0;
    if (pl->pick < 0) {
        int small = -1;
        for (int i = 0; i < pl->n; i++)
            if (!pl->c[i].error[0] && (small < 0 || pl->c[i].peak < pl->c[small].peak))
                small = i;
        if (small < 0) {
            snprintf(buf, len, "nothing meets cap %g: every candidate was refused or failed", pl->cap);
            return;
        }
        sc_plan_name(&pl->c[small], name, sizeof name);
        snprintf(buf, len, "nothing meets cap %g: the smallest peak is %g (%s)", pl->cap,
                 pl->c[small].peak, name);
        return;
    }
    const sc_plan_cand *p = &pl->c[pl->pick];
    sc_plan_name(p, name, sizeof name);
    at += (size_t)snprintf(buf, len, "fastest %s: %s, makespan %g, %.2f %% bubble", cap, name,
                           p->makespan, 100 * p->bubble);
    if (p->bound > 0 && at < len)
        at += (size_t)snprintf(buf + at, len - at, ", lower bound %g, within %.2f %%", p->bound,
                               100 * sc_plan_gap(p));
    /* The runners-up: the next best recipes, one row each. */
    int shown[2], ns = 0;
    for (int round = 0; round < 2; round++) {
        int next = -1;
        for (int i = 0; i < pl->n; i++) {
            const sc_plan_cand *c = &pl->c[i];
            int skip = !c->fits || strcmp(c->recipe, p->recipe) == 0 || best_of(pl, c->recipe) != i;
            for (int s = 0; s < ns && !skip; s++)
                skip = shown[s] == i;
            if (!skip && (next < 0 || better(c, i, &pl->c[next], next)))
                next = i;
        }
        if (next < 0)
            break;
        shown[ns++] = next;
        sc_plan_name(&pl->c[next], name, sizeof name);
        if (at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s %s %g (%.2f %%)",
                                   round ? "," : "; next", name, pl->c[next].makespan,
                                   100 * pl->c[next].bubble);
    }
}

void sc_plan_json(const sc_plan *pl, sc_jw *w)
{
    char why[512];
    if (pl->cap > 0)
        sc_jw_num(w, "cap", pl->cap);
    else
        sc_jw_null(w, "cap");
    sc_jw_array(w, "candidates");
    for (int i = 0; i < pl->n; i++) {
        const sc_plan_cand *c = &pl->c[i];
        sc_jw_object(w, NULL);
        sc_jw_str(w, "recipe", c->recipe);
        sc_jw_str(w, "knobs", c->knobs);
        if (c->error[0]) {
            sc_jw_str(w, "error", c->error);
        } else {
            sc_jw_num(w, "makespan", c->makespan);
            sc_jw_num(w, "bubble_rate", c->bubble);
            sc_jw_num(w, "peak_memory_max", c->peak);
            if (c->peak_bytes > 0)
                sc_jw_whole(w, "peak_bytes", c->peak_bytes);
            if (c->total_bytes > 0)
                sc_jw_whole(w, "total_bytes_max", c->total_bytes);
            if (c->bound > 0) {
                sc_jw_num(w, "lower_bound", c->bound);
                sc_jw_num(w, "gap", sc_plan_gap(c));
            }
        }
        sc_jw_bool(w, "fits", c->fits);
        sc_jw_bool(w, "front", c->front);
        sc_jw_end(w);
    }
    sc_jw_end(w);
    sc_jw_ints(w, "front", pl->order ? pl->order : &pl->pick, pl->order ? pl->nfront : 0);
    if (pl->pick >= 0)
        sc_jw_int(w, "pick", pl->pick);
    else
        sc_jw_null(w, "pick");
    sc_plan_why(pl, why, sizeof why);
    sc_jw_str(w, "why", why);
}
