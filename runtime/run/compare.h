/*
 * compare.h — a measured step against its prediction in seconds
 * (docs/costs.md#the-prediction-beside-the-measurement): the step, every
 * device's end, every pass kind of every stage, and what made the difference.
 *
 *     sc_comparison *c;
 *     if (sc_compare(pg, predicted, r->measured, &c) == SC_OK)
 *         printf("off by %+.1f%%; largest: %s\n", 100 * c->error, c->items[0].what);
 *     sc_comparison_free(c);
 *
 * Both timings are sc_sim-shaped over pg's lowered streams (the measured
 * one from sc_run, the predicted one from sc_simulate with costs in
 * seconds). A device's end is the end of its last instruction (OPTIM
 * included), the step the latest end.
 *
 * The difference of the *critical* device (the one whose measured end is
 * the step) is split exactly into parts that add up to measured end minus
 * predicted end:
 *   - per pass kind and stage on that device: measured minus predicted time
 *     summed over its microbatches (a pass slower than profiled);
 *   - OPTIM on that device;
 *   - its idle time before each pass that reads received data, split at
 *     the moment the peer posted the SEND: before it, waiting for the peer
 *     (a peer late); after it, the transfer itself (slower than profiled);
 *   - its start: the time before its first instruction (a thread that was
 *     scheduled late);
 *   - the rest of its idle time: gaps before passes that read nothing, the
 *     executor's own time between instructions;
 *   - with the threads' CPU times (cpu, sc_run_result.pass_cpu_s): the time
 *     its passes and OPTIM ran without their core (wall time minus the
 *     thread's CPU time: another process had the core), taken out of the
 *     passes' parts, so that those say how much slower the work itself was.
 * items lists them, the largest absolute difference first.
 * Tested by: tests/unit/test_costs.c, tests/costs.sh.
 */
#ifndef SC_COMPARE_H
#define SC_COMPARE_H

#include "ir/ir.h"
#include "sim/sim.h"

typedef enum sc_contrib_kind { SC_CONTRIB_PASS, SC_CONTRIB_OPTIM, SC_CONTRIB_TRANSFER,
                               SC_CONTRIB_WAIT, SC_CONTRIB_START, SC_CONTRIB_REST,
                               SC_CONTRIB_CORE } sc_contrib_kind;

typedef struct sc_contrib {
    sc_contrib_kind kind;
    int op, stage, device;     /* op and stage: SC_CONTRIB_PASS only */
    double measured, predicted; /* seconds, summed */
    char what[96];             /* "W s1 on d1", "transfers into d0", ... */
} sc_contrib;

/* Totals of one pass kind of one stage over its microbatches. */
typedef struct sc_pass_total {
    int op, stage, device, count;
    double measured, predicted;
    double coreless;           /* of measured: the time without a core (0 without cpu) */
} sc_pass_total;

typedef struct sc_comparison {
    int P;
    double measured, predicted, error; /* step times; error = measured / predicted - 1 */
    double *m_end, *p_end, *dev_error;  /* [P] */
    int critical;                       /* device whose measured end is the step */
    sc_contrib *items;                  /* [n], largest |measured - predicted| first */
    int n;
    sc_pass_total *passes;              /* [npasses], by stage then kind */
    int npasses;
} sc_comparison;

/* cpu: NULL, or the measured step's CPU time of each instruction on its
 * thread (-inf where not timed so). SC_ERR_ARG when the timings do not have
 * pg's shape; SC_ERR_NOMEM. */
sc_status sc_compare(const sc_prog *pg, const sc_sim *predicted, const sc_sim *measured,
                     const double *cpu, sc_comparison **out);
void sc_comparison_free(sc_comparison *c);

/* One line for people: "W s1 on d1 took 41.2 ms, 30.1 ms predicted: slower
 * than profiled (+11.1 ms)". */
void sc_contrib_describe(const sc_contrib *x, char *buf, size_t len);

#endif
