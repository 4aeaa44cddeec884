/*
 * bound.h — a proven lower bound on the makespan of any schedule of a
 * program's passes (docs/bound.md), and which term of it binds.
 *
 * The class of schedules the bound holds for: the same devices, stages,
 * placement, microbatches (and copies, steps), costs and memory caps as
 * the program; any order of the passes on each device, each record's
 * backward as B then W or as one BW, overlapped pairs (FB) anywhere, the
 * vocabulary passes when the program has them. Nothing else of the program
 * is read: its orders, its schedule, its recipe do not matter, so the same
 * bound serves every recipe of one shape and the planner's whole search.
 * Host copies (offload) and recomputation let records leave the device:
 * with recomputation no term counts the cap; with an offload policy only
 * MEMORY's form before the first backward does, with what the program's
 * host link can carry (the budget policy's mem is then the cap).
 *
 * The bound is the largest of these terms, each a theorem of docs/bound.md:
 *
 *   WORK    the compute time of the busiest device: every F, B and W (or
 *           BW) of its records and its vocabulary passes;
 *   PATH    the critical path of one microbatch: F down the stages, B back,
 *           a transfer between stages on different devices, W at the end;
 *   FILL    a device cannot start before the first F reaches it, after
 *           its last F or B the backward still has to reach the first stage,
 *           and before its first B can start it has only its F to run;
 *   MEMORY  with at most k records of a stage live on its device (each
 *           also holding the records of the device's earlier stages on its
 *           path), the F of microbatch j + k waits for a whole round trip
 *           of microbatch j; and before its first B a device runs only the
 *           F whose records its cap (and host link) holds.
 *
 *     sc_bound b;
 *     if (sc_bound_prog(pg, &b) == SC_OK)
 *         printf("lower bound %g (%s)\n", b.bound, b.why);
 *
 * Pure: reads the program (compiled or not; it need not be verified) and
 * changes nothing; the caller owns the result. Cost: O(S·m + P·c²) time
 * (c: the chunks of a device), O(S + P) memory.
 * Tested by: tests/unit/test_bound.c, tests/bound.sh.
 */
#ifndef SC_BOUND_H
#define SC_BOUND_H

#include "ir/ir.h"

/* The terms, in the order the bound tries them; TERM(name, text). */
#define SC_BOUND_TERMS(X)                                                  \
    X(WORK, "work")                                                        \
    X(PATH, "critical path")                                               \
    X(FILL, "fill and drain")                                              \
    X(MEMORY, "memory cap")

typedef enum sc_bound_term {
#define X(name, text) SC_BOUND_##name,
    SC_BOUND_TERMS(X)
#undef X
    SC_BOUND_TERM_COUNT
} sc_bound_term;

const char *sc_bound_term_name(int term);

typedef struct sc_bound {
    double bound;                      /* the largest term; INFINITY: no schedule fits
                                        * the cap (a stage's record is larger than it) */
    double term[SC_BOUND_TERM_COUNT];  /* each term's value (0 where it does not apply) */
    int binding;                       /* the term that gives bound (sc_bound_term) */
    int device;                        /* the device it binds on; -1 for PATH */
    int stage;                         /* MEMORY: the stage whose records bind; else -1
                                        * (-1 also for MEMORY before the first B) */
    int k;                             /* MEMORY: records of that stage its cap holds */
    char why[200];                     /* one line: "fill and drain on d3: ..." */
} sc_bound;

/* The bound of program pg's class of schedules (above). SC_ERR_ARG when
 * pg is NULL. */
sc_status sc_bound_prog(const sc_prog *pg, sc_bound *out);
/* The same with a cap of `cap` units on every device besides the
 * program's own (the smaller applies): for programs whose recipe met a cap
 * without setting it (the automatic schedulers), when the question is the
 * cap's class. INFINITY: sc_bound_prog. SC_ERR_ARG when cap <= 0. */
sc_status sc_bound_prog_cap(const sc_prog *pg, double cap, sc_bound *out);

/* How far a makespan can be above the best possible, as a fraction of the
 * bound: (makespan - bound) / bound ("within 3.5 %"); 0 when both are 0,
 * INFINITY when only the bound is. */
double sc_bound_gap(double makespan, double bound);

#endif
