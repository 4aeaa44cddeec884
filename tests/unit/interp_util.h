/*
 * interp_util.h — helpers shared by the C unit tests of interp/: running a
 * rule through check and simulation, counting passes, the dataflow
 * makespan. Header-only; each test file includes it once.
 */
#ifndef SC_INTERP_UTIL_H
#define SC_INTERP_UTIL_H

#include "schedule/block.h"
#include "schedule/dataflow.h"
#include "harness.h"
#include "ir/ir.h"
#include "lower/lower.h"
#include "formats/render.h"
#include "schedule/rules.h"
#include "sim/sim.h"
#include "check/verify.h"

#include <stdlib.h>

#define EPS 1e-9

static const int PS[] = {2, 4, 8, 16};
#define NPS ((int)(sizeof PS / sizeof PS[0]))

/* Microbatch counts tried for p devices: m >= p. */
static inline void ms_for(int p, int ms[4])
{
    ms[0] = p;
    ms[1] = 2 * p;
    ms[2] = 3 * p + 1;
    ms[3] = 4 * p;
}

/* A program of p devices, v chunks each, m microbatches, filled by `rule`,
 * checked and simulated. NULL (with a failed check) when any step fails. */
static inline sc_sim *run_rule(sc_prog *pg, const char *rule)
{
    sc_sim *sim = NULL;
    sc_status st = sc_rule_fill(pg, rule);
    CHECK(st == SC_OK);
    if (st) {
        fprintf(stderr, "  %s: %s\n", rule, sc_errmsg(pg));
        return NULL;
    }
    st = sc_simulate(pg, &sim);
    CHECK(st == SC_OK);
    if (st) {
        fprintf(stderr, "  %s p=%d m=%d: %s\n", rule, sc_prog_devices(pg),
                sc_prog_microbatches(pg), sc_errmsg(pg));
        return NULL;
    }
    return sim;
}

static inline size_t total_passes(const sc_prog *pg)
{
    size_t n = 0, k;
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        sc_prog_order(pg, d, &k);
        n += k;
    }
    return n;
}

/* Makespan of the dataflow ("squeeze") timing of the orders. */
static inline double dataflow_makespan(sc_prog *pg)
{
    size_t n = total_passes(pg);
    double *start = malloc((n + 1) * sizeof *start), *end = malloc((n + 1) * sizeof *end);
    double mk = -1;
    if (start && end && sc_dataflow(pg, start, end, NULL) == SC_OK) {
        mk = 0;
        for (size_t i = 0; i < n; i++)
            if (end[i] > mk)
                mk = end[i];
    }
    free(start);
    free(end);
    return mk;
}

static inline double max_peak(const sc_sim *sim)
{
    double x = 0;
    for (int d = 0; d < sim->P; d++)
        if (sim->peak_mem[d] > x)
            x = sim->peak_mem[d];
    return x;
}

static inline double sim_makespan(sc_prog *pg)
{
    sc_sim *sim = NULL;
    double mk = -1;
    if (sc_simulate(pg, &sim) == SC_OK)
        mk = sim->makespan;
    else
        fprintf(stderr, "  simulate: %s\n", sc_errmsg(pg));
    sc_sim_free(sim);
    return mk;
}

#endif
