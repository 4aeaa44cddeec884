/*
 * bench_auto.c — how long the automatic scheduler takes, and what it finds,
 * against the Zero Bubble paper's heuristic as implemented here and the
 * handcrafted ZB-H1 (same memory) and 1F1B.
 *
 * Prints figures, not pass/fail. For each case: the heuristic alone
 * (time_limit 0: its candidates timed by the dataflow timing, the winner
 * lowered, verified and simulated), then the
 * heuristic and the search under a time limit; wall time (CLOCK_MONOTONIC,
 * best of 3 for the heuristic), simulated bubble rates (and, as "flow", the
 * bubble of the same orders in the dataflow timing), who won. The
 * heuristic's time is the process's CPU time (best of 5); the search's is
 * wall time (its limit is on the wall clock).
 *
 *   build/bench_auto            all cases
 *   build/bench_auto quick      small cases only
 */
#include "auto/autosched.h"
#include "schedule/rules.h"
#include "sim/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The Zero Bubble authors' Python schedulers take about 20 us per pass to
 * order the passes (bench_interp.c): the ratio column is that time for the
 * case's passes over the heuristic's (ordering, timing the candidates,
 * lowering, verifying and simulating the winner). */
#define ZB_NS_PER_PASS 20000.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of this process: the heuristic runs on one thread, and on a
 * shared machine its wall time counts the other jobs too. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct bcase {
    int p, v, m;
    double tf, tb, tw, tc, wk, mem, tl;
} bcase;

static sc_prog *make(const bcase *b)
{
    sc_prog *pg = sc_prog_new(b->p, b->p * b->v, b->m);
    if (!pg)
        return NULL;
    if (b->v == 2)
        sc_prog_set_placement(pg, SC_PLACE_V, NULL);
    sc_prog_set_cost(pg, -1, b->tf / b->v, b->tb / b->v, b->tw / b->v);
    sc_prog_set_comm(pg, b->tc);
    sc_prog_set_w_keep(pg, b->wk);
    sc_prog_set_mem(pg, -1, 1.0 / b->v);
    return pg;
}

static double rule_bubble(const bcase *b, const char *rule)
{
    bcase one = *b;
    one.v = 1;
    sc_prog *pg = make(&one);
    sc_sim *sim = NULL;
    double x = -1;
    if (pg && sc_rule_fill(pg, rule) == SC_OK && sc_simulate(pg, &sim) == SC_OK)
        x = sim->bubble_rate;
    sc_sim_free(sim);
    sc_prog_free(pg);
    return x;
}

static void run(const bcase *b)
{
    sc_auto_result h, r;
    double th = 1e30, tsim = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        sc_prog *pg = make(b);
        sc_auto_opts o = {.mem = b->mem, .seed = 1, .time_limit = 0};
        double t0 = cpu_s();
        if (!pg || sc_auto_fill(pg, &o, &h) != SC_OK) {
            printf("error: %s\n", pg ? sc_errmsg(pg) : "out of memory");
            sc_prog_free(pg);
            return;
        }
        double t = cpu_s() - t0;
        th = t < th ? t : th;
        /* the part no scheduler avoids: lowering, verifying and simulating
         * the winner, timed again on a copy of its orders */
        sc_prog *cp = make(b);
        for (int d = 0; cp && d < b->p; d++) {
            size_t n;
            const sc_instr *v = sc_prog_order(pg, d, &n);
            for (size_t k = 0; k < n; k++)
                sc_prog_push(cp, d, v[k].op, v[k].stage, v[k].mb);
        }
        sc_sim *sim = NULL;
        double t1 = cpu_s();
        if (cp && sc_simulate(cp, &sim) == SC_OK) {
            double x = cpu_s() - t1;
            tsim = x < tsim ? x : tsim;
        }
        sc_sim_free(sim);
        sc_prog_free(cp);
        sc_prog_free(pg);
    }
    sc_prog *pg = make(b);
    sc_auto_opts o = {.mem = b->mem, .seed = 1, .time_limit = b->tl};
    double t0 = now_s();
    if (sc_auto_fill(pg, &o, &r) != SC_OK) {
        printf("error: %s\n", sc_errmsg(pg));
        sc_prog_free(pg);
        return;
    }
    double ts = now_s() - t0;
    sc_prog_free(pg);
    double passes = 3.0 * b->p * b->v * b->m;
    printf("p=%-3d %s m=%-4d %-9s wk=%.1f mem=%-4g | "
           "heuristic %8.3f ms cpu (%4.0fx the authors' %.0f us/pass; the winner's simulation alone "
           "%.3f ms) bubble %6.2f%% (flow %5.2f%%) | "
           "limit %3.1f s: %6.3f s bubble %6.2f%% (flow %5.2f%%, %s, %ld evals%s) | zb-h1 %6.2f%% "
           "1f1b %6.2f%%\n",
           b->p, b->v == 2 ? "v   " : "loop", b->m, b->tf == 1 ? "unit" : "realistic", b->wk,
           b->mem, 1e3 * th, ZB_NS_PER_PASS * 1e-9 * passes / th, ZB_NS_PER_PASS / 1e3, 1e3 * tsim,
           100 * h.bubble_rate, 100 * h.flow_bubble, b->tl, ts, 100 * r.bubble_rate,
           100 * r.flow_bubble, r.method, r.evals, r.timed_out ? ", cut" : "",
           100 * rule_bubble(b, "zb-h1"), 100 * rule_bubble(b, "1f1b"));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    const double R[4] = {29850, 29767, 18868, 466};
    bcase cases[] = {
        {8, 1, 24, R[0], R[1], R[2], R[3], 0.5, 8, 1},
        {8, 1, 24, R[0], R[1], R[2], R[3], 0.5, 16, 1},
        {8, 1, 64, R[0], R[1], R[2], R[3], 0.5, 16, 1},
        {8, 2, 24, R[0], R[1], R[2], R[3], 1, 8, 1},
        {32, 1, 256, 1, 1, 1, 0, 0.5, 32, 1},
        {32, 1, 256, R[0], R[1], R[2], R[3], 0.5, 32, 1},
        {32, 1, 256, R[0], R[1], R[2], R[3], 0.5, 64, 5},
        {32, 2, 256, R[0], R[1], R[2], R[3], 1, 32, 5},
        {64, 1, 512, R[0], R[1], R[2], R[3], 0.5, 64, 5},
        {64, 1, 512, R[0], R[1], R[2], R[3], 0.5, 128, 5},
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < (quick ? 4 : n); i++)
        run(&cases[i]);
    return 0;
}
