/*
 * exact_impl.h — what the exact optimum's two files share (exact.c: the
 * model's passes, the first schedules, the API; exact_glpk.c: the MILP in
 * GLPK within the call's budget). Not for use outside interp/bound/.
 * Tested by: tests/unit/test_bound.c, tests/bound.sh (through exact.h).
 */
#ifndef SC_EXACT_IMPL_H
#define SC_EXACT_IMPL_H

#include "exact.h"

#include <stddef.h>

/* The model's passes: record r = s·m + mb has F = 3r, B = 3r+1, W = 3r+2. */
typedef struct model {
    const sc_prog *pg;
    int S, m, fold; /* fold: tw = 0 everywhere, W folded into B */
    int n;          /* passes: 3·S·m (W columns unused when folded) */
    double *d;      /* [n] durations */
    int *dev;       /* [n] devices */
} model;

static inline int pass_used(const model *md, int i) { return !(md->fold && i % 3 == 2); }

/* What one call may spend (exact.h): everything done by `deadline` (an
 * sc_exact_now() time), and at most `mem` bytes (0: no limit) more than
 * `used0`, interp's allocation (ir/alloc.h) at the call's start. */
typedef struct budget {
    double start, deadline;
    size_t mem, used0;
} budget;

/* The monotonic clock, in seconds. */
double sc_exact_now(void);

/* Solves md's MILP within bd, from the lower bound `lower` and the big-M
 * M; x0 and pos: the first schedule (starts, places in their device's
 * orders), x0 NULL for none. Fills out's status, incumbent, bound, passes,
 * binaries, rows, solver_mem and why; out->incumbent holds the first
 * schedule's makespan on entry. When GLPK finds a better schedule, x0
 * gets its starts. Without GLPK: NO_SOLVER. SC_ERR_NOMEM when the model's
 * own arrays do not fit (GLPK out of memory is a status). */
sc_status sc_exact_milp(const model *md, const budget *bd, double lower, double M,
                        double *x0, const int *pos, sc_exact *out);

/* Pass i's dependency in the model (-1: none) and the lag after its end
 * (T_comm between devices) before i can start (exact_ls.c). */
int sc_exact_dep(const model *md, int i, double *lag);

/* The search (exact_ls.c): list schedules and a local search over the
 * devices' orders, from a fixed seed, until bd's deadline, max_tries
 * schedules, or a schedule of makespan `lower`. On entry x and pos hold a
 * schedule of makespan *span (INFINITY: none); on return the best found
 * and its makespan. SC_ERR_NOMEM. */
sc_status sc_exact_search(const model *md, const budget *bd, double lower, long max_tries,
                          double *span, double *x, int *pos);

/* The memory fill and drain bound (exact_lb.c, docs/bound.md#the-memory-fill,
 * #the-memory-drain): a lower bound on the makespan of every schedule of
 * the model under its caps, from the forwards a device can run before any
 * of its records can be freed, and the passes it can run after its last
 * forwards; 0 where no device has a cap. */
double sc_exact_memory_lb(const model *md);

/* The schedule with starts x as a Lua recipe (exact_out.c): the program's
 * shape, costs and caps, and each device's passes in the order of their
 * starts (a BW where W is folded). *lua: sc_malloc'd text. SC_ERR_NOMEM. */
sc_status sc_exact_lua(const model *md, const double *x, char **lua);

#endif
