/*
 * bench_bound.c — the cost of the lower bound (docs/bound.md) against the
 * simulation it sits beside: sc_bound_prog and sc_simulate on 1F1B from
 * p = 4 to 64 devices (every program verified first, its timing not
 * cached: sc_simulate replays it), and the exact solver on small cases
 * (a list schedule meeting the bound, and GLPK under a cap).
 *
 *   build/bench_bound          all
 *   build/bench_bound quick    the two smallest sizes
 */
#include "bound/bound.h"
#include "bound/exact.h"
#include "compile.h"
#include "ir/ir.h"
#include "sim/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* CPU time of this process: the machine is shared, wall time is noisy. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 1F1B on p devices, fused backward, tw = 0.5, tcomm = 0.1. */
static sc_prog *one_f_one_b(int p, int m)
{
    sc_prog *pg = sc_prog_new(p, p, m);
    sc_prog_set_cost(pg, -1, 1, 1, 0.5);
    sc_prog_set_comm(pg, 0.1);
    for (int d = 0; d < p; d++) {
        int warm = p - 1 - d < m ? p - 1 - d : m, f = 0, b = 0;
        while (f < warm)
            sc_prog_push(pg, d, SC_OP_F, d, f++);
        while (f < m) {
            sc_prog_push(pg, d, SC_OP_F, d, f++);
            sc_prog_push(pg, d, SC_OP_BW, d, b++);
        }
        while (b < m)
            sc_prog_push(pg, d, SC_OP_BW, d, b++);
    }
    return pg;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    static const int sizes[][2] = {{4, 8}, {8, 32}, {16, 128}, {32, 256}, {64, 512}};
    int nsizes = quick ? 2 : 5;
    printf("%-6s %-6s %-12s %-12s %-12s %-10s %s\n", "p", "m", "passes", "bound (us)",
           "simulate (us)", "ratio", "bound, makespan");
    for (int k = 0; k < nsizes; k++) {
        int p = sizes[k][0], m = sizes[k][1];
        sc_prog *pg = one_f_one_b(p, m);
        if (!pg || sc_check(pg) != SC_OK) {
            fprintf(stderr, "p=%d m=%d: %s\n", p, m, pg ? sc_errmsg(pg) : "out of memory");
            return 1;
        }
        sc_bound b;
        double tb = 1e30, ts = 1e30, mk = 0;
        for (int r = 0; r < 5; r++) {
            int reps = 0;
            double t0 = now_s();
            do {
                sc_bound_prog(pg, &b);
                reps++;
            } while (now_s() - t0 < 0.05);
            double t = (now_s() - t0) / reps;
            tb = t < tb ? t : tb;
            sc_sim *sim = NULL;
            t0 = now_s();
            sc_simulate(pg, &sim);
            t = now_s() - t0;
            ts = t < ts ? t : ts;
            mk = sim ? sim->makespan : 0;
            sc_sim_free(sim);
        }
        printf("%-6d %-6d %-12d %-12.2f %-12.1f %-10.5f %g, %g\n", p, m, 2 * p * m, tb * 1e6,
               ts * 1e6, tb / ts, b.bound, mk);
        sc_prog_free(pg);
    }
    /* The exact optimum: proved by a list schedule, and by GLPK under a cap. */
    static const int cases[][3] = {{4, 8, 0}, {8, 32, 0}, {2, 4, 1}, {3, 4, 2}};
    for (int k = 0; k < (quick ? 2 : 4); k++) {
        sc_prog *pg = one_f_one_b(cases[k][0], cases[k][1]);
        if (cases[k][2]) {
            /* the order F, BW, F, BW, ...: it fits any cap of one record */
            for (int d = 0; d < cases[k][0]; d++) {
                sc_prog_clear_order(pg, d);
                for (int i = 0; i < cases[k][1]; i++) {
                    sc_prog_push(pg, d, SC_OP_F, d, i);
                    sc_prog_push(pg, d, SC_OP_BW, d, i);
                }
            }
            sc_prog_set_mem(pg, -1, 1);
            sc_prog_set_mem_limit(pg, cases[k][2]);
        }
        sc_exact e;
        double t0 = now_s();
        sc_status st = sc_exact_solve(pg, 30, 0, INFINITY, &e);
        double t = now_s() - t0;
        printf("exact p=%d m=%d cap=%d: %s, status %d%s, optimum %g, %ld binaries, %.3f s\n",
               cases[k][0], cases[k][1], cases[k][2], st == SC_OK ? "ok" : "error", e.status,
               e.by_bound ? " (by the bound)" : "", e.optimum, e.binaries, t);
        sc_prog_free(pg);
    }
    printf("solver: %s\n", sc_exact_solver() ? sc_exact_solver() : "none (built without GLPK)");
    return 0;
}
