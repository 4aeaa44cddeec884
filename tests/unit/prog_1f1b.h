/*
 * prog_1f1b.h — a hand-written 1F1B program and its simulated makespan, for
 * the C unit tests that check figures by hand on it (the bound, the
 * lengths). Header-only; each test file includes it once.
 *
 * Tested by: tests/unit/test_bound.c and tests/unit/test_lengths.c (its
 * users: their figures by hand fail when it builds another order).
 */
#ifndef SC_PROG_1F1B_H
#define SC_PROG_1F1B_H

#include "harness.h"
#include "ir/ir.h"
#include "sim/sim.h"

#include <math.h>

/* 1F1B on p devices (one stage each), m microbatches, fused backward,
 * tcomm a transfer; the costs left as sc_prog_new sets them. */
static inline sc_prog *one_f_one_b(int p, int m, double tcomm)
{
    sc_prog *pg = sc_prog_new(p, p, m);
    CHECK(sc_prog_set_comm(pg, tcomm) == SC_OK);
    for (int d = 0; d < p; d++) {
        int warm = p - 1 - d < m ? p - 1 - d : m, f = 0, b = 0;
        while (f < warm)
            CHECK(sc_prog_push(pg, d, SC_OP_F, d, f++) == SC_OK);
        while (f < m) {
            CHECK(sc_prog_push(pg, d, SC_OP_F, d, f++) == SC_OK);
            CHECK(sc_prog_push(pg, d, SC_OP_BW, d, b++) == SC_OK);
        }
        while (b < m)
            CHECK(sc_prog_push(pg, d, SC_OP_BW, d, b++) == SC_OK);
    }
    return pg;
}

/* The simulated makespan (NAN when the simulation fails), and device 0's
 * peak memory into *peak0 unless it is NULL. */
static inline double makespan_peak(sc_prog *pg, double *peak0)
{
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    double t = sim ? sim->makespan : NAN;
    if (peak0)
        *peak0 = sim ? sim->peak_mem[0] : NAN;
    sc_sim_free(sim);
    return t;
}

#endif
