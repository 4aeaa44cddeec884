/*
 * order.h — the order in which microbatches of different lengths enter a
 * schedule (docs/lengths.md#planning-the-order). A schedule runs its
 * microbatches by number; with lengths (ir/lengths.h) the number each
 * length gets changes the makespan: a long microbatch first fills the
 * pipeline slowly, a long one last drains it slowly. This tries a few
 * orders of the same lengths on the same passes and keeps the fastest by
 * simulated makespan: the given order is one of them, so the result is
 * never slower than it.
 *
 *     sc_len_order o;
 *     if (sc_len_order_plan(pg, &o) == SC_OK)   // pg: a program with lengths
 *         printf("%s: %g, given %g\n", sc_len_order_name(o.best),
 *                o.makespan[o.best], o.makespan[SC_LORDER_GIVEN]);
 *     sc_len_order_free(&o);
 *
 * The orders: given; longest first; shortest first; zigzag (longest,
 * shortest, second longest, second shortest, ...: a long microbatch beside
 * a short one at every interval); zigzag from the shortest; and
 * short-long-short (the longest in the middle: a short fill and a short
 * drain). An order the program's memory cap refuses (its records grew
 * where the cap was tight) is left out (makespan INFINITY). Then, from the
 * fastest, swaps of neighbours (microbatch i with i + 1, two passes over
 * the order) are kept while each makes the makespan shorter: at most
 * 2 (m - 1) more simulations.
 *
 * The program is left with the best order's lengths, lowered and verified
 * again. Its passes (the schedule) stay: the order renames which length
 * each microbatch number carries, nothing else.
 *
 * Tested by: tests/unit/test_lengths.c, tests/lengths.sh.
 */
#ifndef SC_PLAN_ORDER_H
#define SC_PLAN_ORDER_H

#include "ir/ir.h"

#define SC_LORDERS(X)                                                                    \
    X(GIVEN, "given") X(LONGEST, "longest-first") X(SHORTEST, "shortest-first")         \
    X(ZIGZAG, "zigzag") X(ZIGZAG_SHORT, "zigzag-short") X(VALLEY, "short-long-short")

typedef enum sc_lorder {
#define X(name, text) SC_LORDER_##name,
    SC_LORDERS(X)
#undef X
    SC_LORDER_COUNT
} sc_lorder;

typedef struct sc_len_order {
    int best;                          /* the fastest of the orders (sc_lorder) */
    double makespan[SC_LORDER_COUNT];  /* each order's; INFINITY: refused */
    int swaps;                         /* swaps of neighbours kept after it */
    double final;                      /* the makespan after them: the result */
    double *lengths;                   /* [m] the lengths in the order found (sc_free) */
    int m;
} sc_len_order;

const char *sc_len_order_name(int o);
/* The lengths of order o of the given ones into out[m]. */
void sc_len_order_apply(int o, const double *given, int m, double *out);
/* Tries the orders on pg (with lengths; else SC_ERR_ARG). A failure other
 * than the cap's (deadlock, memory) is returned with pg's message. */
sc_status sc_len_order_plan(sc_prog *pg, sc_len_order *out);
void sc_len_order_free(sc_len_order *o);

#endif
