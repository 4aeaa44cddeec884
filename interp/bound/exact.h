/*
 * exact.h — the exact optimum of a small program's class of schedules
 * (docs/bound.md#the-exact-optimum): a MILP like the Zero Bubble paper's
 * ILP, solved by GLPK when the build found it (an optional dependency: the
 * Makefile's HAVE_GLPK; without it every call answers SC_EXACT_NO_SOLVER).
 *
 * The model: a start time per pass (F, B, W of every record), the data
 * dependencies with T_comm between stages on different devices, one
 * binary per pair of passes of a device whose order no dependency fixes
 * (big-M disjunctions), the memory cap after every F, and the makespan as
 * the objective. Transfers overlap freely, so its optimum is at or below
 * the simulated makespan of every schedule of the class (with T_comm = 0 it
 * is that class's optimum), and at or above the lower bound of bound.h,
 * which it takes as a cut.
 *
 *     sc_exact e;
 *     if (sc_exact_solve(pg, 10, sim->makespan, &e) == SC_OK && e.status == SC_EXACT_OPTIMAL)
 *         printf("optimal %g (proved by %s)\n", e.optimum, sc_exact_solver());
 *
 * Pure: reads the program, changes nothing. Not thread-safe (GLPK's
 * environment is per thread, and its terminal output is switched off).
 */
#ifndef SC_EXACT_H
#define SC_EXACT_H

#include "ir/ir.h"

typedef enum sc_exact_status {
    SC_EXACT_OPTIMAL,     /* optimum proved */
    SC_EXACT_LIMIT,       /* the time limit came first: incumbent and bound */
    SC_EXACT_INFEASIBLE,  /* no schedule meets the cap */
    SC_EXACT_UNSUPPORTED, /* outside the model (why says what) */
    SC_EXACT_NO_SOLVER,   /* built without GLPK */
} sc_exact_status;

typedef struct sc_exact {
    sc_exact_status status;
    double optimum;   /* OPTIMAL: the optimum */
    double incumbent; /* the best schedule the solver found (INFINITY: none) */
    double bound;     /* the best lower bound it proved (at least bound.h's) */
    double seconds;   /* the solver's time */
    long passes, binaries, rows; /* the model's size */
    int by_bound;     /* OPTIMAL without the solver: the program's own orders meet bound.h's
                       * lower bound */
    char why[200];    /* UNSUPPORTED, NO_SOLVER: why */
} sc_exact;

/* The solver's name and version ("GLPK 5.0"), or NULL without one. */
const char *sc_exact_solver(void);

/* Solves program pg's MILP within time_limit seconds (> 0). upper: the
 * makespan of a known schedule of the class (a cut; INFINITY: none).
 * Supported: one step, one copy, no vocabulary split, no offload or
 * recompute policy, no pair costs or all-to-all part, BW no faster than
 * B + W, at most 64 passes a device. SC_ERR_ARG for a bad argument; the
 * outcome is in out->status. */
sc_status sc_exact_solve(const sc_prog *pg, double time_limit, double upper, sc_exact *out);

#endif
