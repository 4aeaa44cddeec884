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
 *     if (sc_exact_solve(pg, 10, 0, sim->makespan, &e) == SC_OK && e.status == SC_EXACT_OPTIMAL)
 *         printf("optimal %g (proved by %s)\n", e.optimum, sc_exact_solver());
 *
 * Pure: reads the program, changes nothing. Not thread-safe (GLPK's
 * environment is per thread, and its terminal output is switched off).
 * Tested by: tests/unit/test_bound.c, tests/bound.sh.
 */
#ifndef SC_EXACT_H
#define SC_EXACT_H

#include "ir/ir.h"

#include <stddef.h>

/* The outcomes, with their names in --json (`optimal.status`):
 *   OPTIMAL      the optimum proved
 *   LIMIT        the time limit came first: incumbent and bound
 *   INFEASIBLE   no schedule meets the cap
 *   UNSUPPORTED  outside the model (why says what)
 *   NO_SOLVER    built without GLPK
 *   MEMORY       GLPK (or the model's arrays) needed more memory than
 *                mem_limit left: incumbent and bound as far as it got
 *   FAILED       GLPK failed otherwise (why has its message) */
#define SC_EXACT_STATUSES(X)                                                                       \
    X(OPTIMAL, "optimal") X(LIMIT, "limit") X(INFEASIBLE, "infeasible")                           \
    X(UNSUPPORTED, "unsupported") X(NO_SOLVER, "no solver") X(MEMORY, "memory")                   \
    X(FAILED, "failed")

typedef enum sc_exact_status {
#define X(name, text) SC_EXACT_##name,
    SC_EXACT_STATUSES(X)
#undef X
} sc_exact_status;

typedef struct sc_exact {
    sc_exact_status status;
    double optimum;   /* OPTIMAL: the optimum */
    double incumbent; /* the best schedule the solver found (INFINITY: none) */
    double bound;     /* the best lower bound it proved (at least bound.h's) */
    double seconds;   /* the call's time, building the model included */
    long passes, binaries, rows; /* the model's size */
    int by_bound;     /* OPTIMAL without the solver: the program's own orders meet bound.h's
                       * lower bound */
    int searched;     /* LIMIT without the solver: the MILP does not reach this size, so
                       * incumbent is the search's and bound is bound.h's */
    size_t solver_mem; /* the bytes GLPK was given (0: no limit) */
    double memory_bound; /* the memory fill and drain alone (docs/bound.md#the-memory-fill),
                          * before bound is met or capped by a schedule; 0: none */
    char why[200];    /* UNSUPPORTED, NO_SOLVER, MEMORY, FAILED, LIMIT: why */
} sc_exact;

/* The solver's name and version ("GLPK 5.0"), or NULL without one. */
const char *sc_exact_solver(void);
/* A status's name in --json ("optimal", "limit", ...). */
const char *sc_exact_status_name(sc_exact_status s);

/* Solves program pg's MILP within time_limit seconds (> 0) and mem_limit
 * bytes (0: no limit). upper: the makespan of a known schedule of the
 * class (a cut; INFINITY: none).
 *
 * The time limit counts from the call: building the model and the first
 * schedules, then GLPK's LP relaxation (glp_simplex's tm_lim) and its
 * branch and bound (glp_intopt's tm_lim, and a callback that stops it
 * between GLPK's own checks) each get what is left. GLPK checks its clock
 * between simplex iterations and subproblems, so a call overruns by at
 * most one iteration or one round of cuts.
 *
 * The memory limit covers the model's arrays (ir/alloc.h, which a host's
 * hook also counts) and GLPK's allocation (glp_mem_limit, in whole MiB:
 * what the arrays leave). GLPK out of memory, or any fatal error of GLPK,
 * does not abort: its error hook leaves GLPK by longjmp, its environment is
 * freed, and the outcome is MEMORY (or FAILED) with the best schedule and
 * bound found before. A host passes what its own limit leaves (the command
 * line: --max-mem less the Lua heap and programs held).
 *
 * Before the MILP, a search (docs/bound.md#the-search) looks for a better
 * first schedule: list schedules and a local search over their ranking,
 * for a quarter of the time limit or 3000 schedules. The MILP covers up to
 * 64 passes a device and 512 records; above that the search has the whole
 * time limit, and the outcome is OPTIMAL when its best schedule meets the
 * lower bound, else LIMIT with `searched` set: the search's best schedule
 * and bound.h's bound (the gap between them certified).
 *
 * Supported: one step, one copy, no vocabulary split, no offload or
 * recompute policy, no pair costs or all-to-all part, BW no faster than
 * B + W, at most 100000 records. SC_ERR_ARG for a bad argument; the
 * outcome, out of memory included, is in out->status. */
sc_status sc_exact_solve(const sc_prog *pg, double time_limit, size_t mem_limit, double upper,
                         sc_exact *out);
/* The same, and the best schedule found as a program: *lua (when lua is not
 * NULL and a schedule was found; else NULL) gets a Lua recipe, sc_malloc'd
 * (the caller sc_frees it), that builds the program's shape, costs and caps
 * with each device's passes in that schedule's order; `sim` times it at the
 * incumbent's makespan (transfers do not wait for their receiver in the
 * model: docs/bound.md#the-exact-optimum). */
sc_status sc_exact_solve_lua(const sc_prog *pg, double time_limit, size_t mem_limit,
                             double upper, sc_exact *out, char **lua);

#endif
