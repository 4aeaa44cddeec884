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
 * schedule's makespan on entry. Without GLPK: NO_SOLVER. SC_ERR_NOMEM when
 * the model's own arrays do not fit (GLPK out of memory is a status). */
sc_status sc_exact_milp(const model *md, const budget *bd, double lower, double M,
                        const double *x0, const int *pos, sc_exact *out);

#endif
