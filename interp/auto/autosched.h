/*
 * autosched.h — automatic scheduling under a memory limit (zb-auto,
 * zbv-auto): the Zero Bubble paper's heuristic, then a search that improves
 * on it.
 *
 * The program gives the shape (P devices, S stages, any placement: loop with
 * S = P for zb-auto, "v" with S = 2P for zbv-auto), m, the per-stage costs
 * T_F, T_B, T_W, T_comm and the memory model (units per stage, w_keep). The
 * caller gives a limit in units per device. sc_auto_fill replaces every
 * device's order with the best schedule it finds (B and W always split):
 *
 *   1. heuristic: with one stage per device and the loop placement, the Zero
 *      Bubble paper's greedy (microbatch 0 on every stage, warm-up F counted
 *      back from the first B, W placed before each F and B while memory would
 *      exceed the limit, W in the gaps before the next arrival, F skipped when
 *      it would delay a B), its three choices tried in all 8 combinations.
 *      On the V placement, the paper's cost-aware ZB-V greedy (its 4 choices,
 *      each rerun with the previous run's idle times as the bubble shares
 *      while that helps; autosched_zbv.c) and, unless ZB-V leaves no bubble,
 *      the list scheduler below with 8 policies; other placements, the list
 *      scheduler alone. Candidates are timed as they are built (their times
 *      are the dataflow timing of their orders) or by the dataflow timing.
 *   2. search, while time is left: seeded local walks over parametric
 *      families (the ZB-H family: per-device warm-up F and W delay, from
 *      ZB-H2 and ZB-H1 fitted to the limit; on the V placement a family
 *      with ZB-V's pattern), then over a list scheduler (each device, at
 *      each moment, runs a ready B, else an F that fits in memory and under
 *      its warm-up cap, else a W by its W policy) with per-device caps;
 *      last, single passes moved within their device's order. Walks stop
 *      after a run without gain; the search stops at the lower bound,
 *      after max_evals candidates, or at the time limit.
 *   3. both winners (only the heuristic's with time_limit 0) are lowered,
 *      verified and simulated; the search's is kept only when it is better by
 *      the objective (makespan, then bubble rate), so the result is never
 *      worse than the heuristic. The winner is left in the program lowered
 *      and verified when it was simulated last (always with time_limit 0):
 *      a later sc_check costs nothing, sc_simulate one replay.
 *
 * When a pair gains by the cost model (tfb below tf + tb, or an all-to-all
 * part ta to hide: sc_prog_pair_gain), the winner's neighbouring F and B
 * are then joined into overlapped pairs where the dataflow timing does not
 * grow and memory stays within the limit (schedule/pairing.h), and its
 * figures are taken again.
 *
 * The search's candidates are judged by the objective: SC_AUTO_SIM (default)
 * lowers and simulates each one (the figures sc_simulate reports);
 * SC_AUTO_FLOW times it by the dataflow timing, where a transfer delays only
 * its consumer (the papers' model, 10-50x cheaper). The heuristic's are
 * always compared by the dataflow timing, its winner then simulated.
 *
 * Guarantees: the returned program passes sc_check, and in sc_simulate every
 * device's peak memory is at most `mem` (+1e-9). A limit below what one
 * microbatch needs on some device (the sum of its stages' units) is
 * SC_ERR_ARG. When neither heuristic nor search finds a schedule within the
 * limit, the sequential schedule (one microbatch at a time, which needs just
 * that sum) is returned and `method` says "sequential".
 * Determinism: the same program, options and seed give the same orders
 * whenever the search ends before the time limit (timed_out = 0).
 *
 *   sc_prog *pg = sc_prog_new(8, 8, 24);
 *   sc_prog_set_cost(pg, -1, 29850, 29767, 18868);
 *   sc_prog_set_comm(pg, 466);
 *   sc_prog_set_w_keep(pg, 0.5);
 *   sc_auto_opts o = {.mem = 16, .seed = 1, .time_limit = 1};
 *   sc_auto_result r;
 *   if (sc_auto_fill(pg, &o, &r) == SC_OK)
 *       printf("%s won: bubble %g (heuristic %g)\n", r.method, r.bubble_rate, r.heur_bubble);
 *
 * Thread-safety: none beyond the program's; no global state.
 *
 * Tested by: tests/unit/test_autosched.c, tests/lua/test_auto.lua.
 */
#ifndef SC_AUTOSCHED_H
#define SC_AUTOSCHED_H

#include "ir/ir.h"

/* What candidates are judged by: the simulator (the lowered streams
 * replayed under the communication semantics, where a compute waits for
 * the whole group that holds its RECV), or the dataflow timing (every
 * transfer takes T_comm and delays nothing else: the papers' simulators). */
enum { SC_AUTO_SIM = 0, SC_AUTO_FLOW = 1 };

typedef struct sc_auto_opts {
    double mem;            /* memory limit per device, in units (> 0) */
    unsigned long long seed;
    double time_limit;     /* seconds after which the search stops (the heuristic
                            * always completes); <= 0: the heuristic only */
    int max_evals;         /* candidates the search may time; 0: a default */
    int objective;         /* SC_AUTO_SIM (default) or SC_AUTO_FLOW, below */
    /* Called about every 50 ms while searching (may be NULL): seconds so
     * far, the time limit, the bubble rate of the best candidate so far
     * (by the objective; -1: none yet). */
    void (*progress)(void *ctx, double elapsed, double limit, double best);
    void *progress_ctx;
    int keep_sim;          /* 1: hand the winner's simulation over (res->sim) */
} sc_auto_opts;

typedef struct sc_auto_result {
    const char *method;    /* "heuristic", "search" or "sequential": who won */
    double makespan, bubble_rate, peak; /* simulated, of the returned program */
    double flow_makespan, flow_bubble; /* of its dataflow timing (the papers' model) */
    double heur_makespan, heur_bubble, heur_peak; /* simulated; -1 if it failed */
    double heur_flow_bubble;
    double lower_bound;    /* max over devices of earliest start + busy time */
    char heur_choice[64];  /* the heuristic's winning combination */
    char search_choice[96]; /* the search's best policy and caps */
    long evals;            /* candidates timed (heuristic and search) */
    double seconds;        /* wall time of the call */
    int timed_out;         /* the search was cut by the time limit */
    int pairs;             /* overlapped pairs joined into the winner (pairing.h) */
    struct sc_sim *sim;    /* with opts->keep_sim: the program's simulation, when
                            * the scheduler left it lowered and verified as it
                            * simulated it (else NULL); the caller owns it
                            * (sc_sim_free), and a later sc_simulate of the
                            * unchanged program gives the same figures */
} sc_auto_result;

sc_status sc_auto_fill(sc_prog *pg, const sc_auto_opts *opts, sc_auto_result *res);

/* The least limit any schedule of pg needs: max over devices of the sum of
 * the units of its stages. */
double sc_auto_min_mem(const sc_prog *pg);

#endif
