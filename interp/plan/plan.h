/*
 * plan.h — the planner's choice (docs/plan.md): candidate schedules, each
 * evaluated and verified by its caller (lang/cli/cmd_plan.c compiles and
 * simulates them), their Pareto front of time against memory, and the pick
 * under a memory cap, with the reason in words.
 *
 *     sc_plan *pl = sc_plan_new(6);              // cap: 6 units (0: none)
 *     sc_plan_add(pl, "v-zb", "mem=6", 92.367, 0.0889, 6, NULL);
 *     sc_plan_add(pl, "zbv-auto", "mem=6", 102.08, 0.1756, 6, NULL);
 *     sc_plan_add(pl, "1f1b", "", 0, 0, 0, "refused by mem = 6");
 *     sc_plan_finish(pl);                        // the front and the pick
 *     sc_plan_why(pl, buf, sizeof buf);          // "fastest under cap 6: ..."
 *     sc_plan_free(pl);
 *
 * Time is the makespan (what a step costs; the bubble rate is shown, never
 * ranked by), memory the largest peak over the devices in the program's
 * units. A candidate is on the front when no other one is at most as slow
 * and at most as large with one of the two strictly less; the pick is the
 * fastest candidate whose peak is within the cap (ties: the smaller peak,
 * then the one added first), so it is never slower than any candidate that
 * meets the cap. Not thread-safe; sc_plan_free(NULL) is a no-op.
 *
 * Tested by: tests/unit/test_plan.c.
 */
#ifndef SC_PLAN_H
#define SC_PLAN_H

#include <stddef.h>
#include <stdio.h>

#include "formats/jsonw.h"
#include "plan/plan_for.h"

typedef struct sc_plan_cand {
    char recipe[48];   /* a stdlib name or a path */
    char knobs[96];    /* the -D it was given beyond the user's ("mem=6 v=2"); "" none */
    char error[160];   /* "" when it was evaluated; else why not (first line) */
    double makespan, bubble, peak; /* peak: the largest device's, in units */
    double peak_bytes; /* with a model's sizes: the activations' peak; 0 without */
    double total_bytes; /* with a model: the largest device's total (parameters, gradients,
                         * optimizer states, activations, workspace); 0 without */
    double bound;      /* a lower bound on the makespan of any schedule of its
                        * shape, costs and cap (interp/bound/bound.h); 0: none */
    int front;         /* on the Pareto front (set by sc_plan_finish) */
    int fits;          /* evaluated and within the cap (every one when no cap) */
    char args[160];    /* every knob it was evaluated with, the cap's mem included */
    sc_plan_shape shape; /* its placement and the frameworks that run it (plan_for.h) */
} sc_plan_cand;

typedef struct sc_plan sc_plan;

/* A plan under cap units per device (0: no cap). NULL when out of memory. */
sc_plan *sc_plan_new(double cap);
void sc_plan_free(sc_plan *pl);

/* Adds a candidate: its figures, or error (not NULL) when it could not be
 * evaluated or was refused (its figures are then ignored). Strings are
 * copied, cut to their field. Returns its index, or -1 out of memory. */
int sc_plan_add(sc_plan *pl, const char *recipe, const char *knobs, double makespan,
                double bubble, double peak, const char *error);
/* The bytes of a candidate's peak (a model's), for the outputs: its
 * activations' and the whole device's (0: not known). */
void sc_plan_set_bytes(sc_plan *pl, int i, double peak_bytes, double total_bytes);
/* A candidate's lower bound (sc_bound_prog of its program). */
void sc_plan_set_bound(sc_plan *pl, int i, double bound);
/* The shape of candidate i's program and the knobs it was evaluated with
 * (sc_plan_shape_of; args: "mem=6 v=3"). */
void sc_plan_set_shape(sc_plan *pl, int i, const sc_plan_shape *sh, const char *args);
/* Plan for framework fw (plan_for.h; SC_FW_NONE: any): sc_plan_finish
 * refuses a candidate that fw does not run ("megatron does not run it:
 * the V placement"). */
void sc_plan_set_for(sc_plan *pl, int fw);
int sc_plan_for(const sc_plan *pl);
/* How memory reads: bytes (binary units, "20.04 GiB") or units ("6");
 * cap_text is the cap as the user gave it ("80GiB", "6"; NULL: none). */
void sc_plan_set_units(sc_plan *pl, int bytes, const char *cap_text);
/* A peak in the plan's memory unit, for people: "20.04 GiB", "6". */
void sc_plan_mem_text(const sc_plan *pl, double x, char *buf, size_t len);
/* The cap as given, for people: "80 GiB" (a space before the unit), "6";
 * "" without a cap. */
const char *sc_plan_cap_text(const sc_plan *pl);
/* A fraction as the percentage to print with %.2f: a tiny negative one
 * (rounding) is 0, never "-0.00". */
double sc_plan_pct(double frac);
/* How far candidate c's makespan is above its bound, as a fraction of the
 * bound (sc_bound_gap); NAN without a bound. */
double sc_plan_gap(const sc_plan_cand *c);

/* Marks the front and chooses the pick; call once after the last add. */
void sc_plan_finish(sc_plan *pl);

int sc_plan_count(const sc_plan *pl);
const sc_plan_cand *sc_plan_cand_at(const sc_plan *pl, int i);
double sc_plan_cap(const sc_plan *pl);
/* The pick's index; -1 when no candidate meets the cap. */
int sc_plan_pick(const sc_plan *pl);
/* The lean pick: the candidate of least peak whose makespan is within
 * SC_PLAN_LEAN of the pick's (on the front, within the cap), when that is
 * not the pick; else -1. A pick that buys 0.5 % of time for 4x the memory
 * shows what the memory buys. */
#define SC_PLAN_LEAN 0.01
int sc_plan_lean(const sc_plan *pl);
/* The front's indices by growing peak (so falling makespan) into out
 * (room for sc_plan_count); returns how many. */
int sc_plan_front(const sc_plan *pl, int *out);

/* A candidate's name as the user types it: "v-zb mem=6" (recipe, then the
 * knobs). */
void sc_plan_name(const sc_plan_cand *c, char *buf, size_t len);

/* Why the pick, one line: "fastest under cap 6: v-zb mem=6, makespan
 * 92.367, 8.89 % bubble, lower bound 85.2, within 8.4 %; next zbv-auto
 * mem=6 102.08 (17.56 %), ..." (the bound where it is known; the
 * next two recipes that meet the cap, each by its best row; the lean pick
 * where there is one: "; least memory within 1 % (~): zb-v, 0.50 % slower,
 * 20.04 GiB (25 % of the pick's)"), or why there is none ("nothing meets
 * cap 2: the smallest peak is 3 (v-min)"; without a cap: "nothing to pick
 * (no cap given): every candidate was refused or failed"). */
void sc_plan_why(const sc_plan *pl, char *buf, size_t len);

/* The plan as members of the JSON object open in w: "cap" (null without),
 * "for" (the framework's name, or null), "candidates" (every one: recipe,
 * knobs, makespan, bubble_rate, peak_memory_max, peak_bytes with a model,
 * lower_bound and gap where known, fits, front, error; and where it was
 * compiled placement, stages_per_device, frameworks: the names of those
 * that run it), "front" (their indices by growing peak), "pick" (index or
 * null), "lean" (index or null), "why". */
void sc_plan_json(const sc_plan *pl, sc_jw *w);

/* The front as an SVG picture (plan_svg.c): peak memory across (in
 * mem_unit: "units", "bytes"), makespan up; every candidate a grey dot, the
 * front a staircase of named points, the pick ringed, the cap a dashed
 * line. Returns 0, or -1 on a write error of f. */
int sc_plan_svg(FILE *f, const sc_plan *pl, const char *title, const char *mem_unit);

#endif
