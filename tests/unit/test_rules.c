/*
 * test_rules.c — the handcrafted rules (gpipe, 1f1b, interleaved, zb-h1,
 * zb-h2) against the closed forms of the papers, with unit and unequal
 * costs and a communication cost worked out by hand.
 */
#include "compile.h"
#include "interp_util.h"

/* ---- unit costs: 1F1B and GPipe ------------------------------------------
 * sc_prog_new(p, p, m): T_F = T_B = T_W = 1, so F = 1 and BW = 2. Both
 * schedules idle (p-1)(T_F + T_BW) = 3(p-1) on every device around 3m of
 * work: bubble (p-1)/(m+p-1), makespan 3(m+p-1). 1F1B holds p-d microbatches
 * on device d (warm-up p-d-1 F, then one more F before the first BW); GPipe
 * holds all m. */
TEST(unit_1f1b_gpipe)
{
    for (int i = 0; i < NPS; i++) {
        int p = PS[i], ms[4];
        ms_for(p, ms);
        for (int j = 0; j < 4; j++) {
            int m = ms[j];
            double bubble = (double)(p - 1) / (m + p - 1);
            sc_prog *pg = sc_prog_new(p, p, m);
            CHECK(pg != NULL);
            if (!pg)
                continue;
            sc_sim *sim = run_rule(pg, "1f1b");
            if (sim) {
                CHECK_NEAR(sim->bubble_rate, bubble, EPS);
                CHECK_NEAR(sim->makespan, 3.0 * (m + p - 1), EPS);
                for (int d = 0; d < p; d++) {
                    CHECK_NEAR(sim->peak_mem[d], p - d, EPS);
                    CHECK_NEAR(sim->busy[d], 3.0 * m, EPS);
                }
            }
            sc_sim_free(sim);
            sim = run_rule(pg, "gpipe");
            if (sim) {
                CHECK_NEAR(sim->bubble_rate, bubble, EPS);
                CHECK_NEAR(sim->makespan, 3.0 * (m + p - 1), EPS);
                for (int d = 0; d < p; d++)
                    CHECK_NEAR(sim->peak_mem[d], m, EPS);
            }
            sc_sim_free(sim);
            sc_prog_free(pg);
        }
    }
}

/* ---- ZB-H1, unit costs ----------------------------------------------------
 * Zero Bubble paper: ZB-H1 idles (p-1)(T_F + T_B - T_W) = p-1 per device
 * around 3m of work: bubble (p-1)/(3m+p-1), a third of 1F1B's; memory p on
 * every device, the same maximum as 1F1B. */
TEST(unit_zb_h1)
{
    for (int i = 0; i < NPS; i++) {
        int p = PS[i], ms[4];
        ms_for(p, ms);
        for (int j = 0; j < 4; j++) {
            int m = ms[j];
            sc_prog *pg = sc_prog_new(p, p, m);
            CHECK(pg != NULL);
            if (!pg)
                continue;
            sc_sim *sim = run_rule(pg, "zb-h1");
            if (sim) {
                CHECK_NEAR(sim->bubble_rate, (double)(p - 1) / (3.0 * m + p - 1), EPS);
                CHECK_NEAR(sim->makespan, 3.0 * m + p - 1, EPS);
                for (int d = 0; d < p; d++)
                    CHECK_NEAR(sim->peak_mem[d], p, EPS);
                double zb_max = max_peak(sim);
                sc_sim_free(sim);
                sim = run_rule(pg, "1f1b");
                if (sim)
                    CHECK_NEAR(zb_max, max_peak(sim), EPS);
            }
            sc_sim_free(sim);
            sc_prog_free(pg);
        }
    }
}

/* ---- interleaved 1F1B -----------------------------------------------------
 * S = v p stages, each 1/v of a device's share: T = 1/v per pass of a chunk,
 * 1/v unit of memory per (stage, microbatch). The bubble shrinks v times:
 * (p-1)/(v m + p - 1). Device 0 warms up with 2(p-1) + (v-1)p chunk
 * forwards and runs one more before its first backward:
 * (2(p-1) + (v-1)p + 1)/v = p + (p-1)/v units. When m == p Megatron runs
 * every forward first (all m v chunks), which holds m v / v = p units. */
TEST(interleaved)
{
    for (int i = 0; i < NPS; i++) {
        int p = PS[i];
        int ms[3] = {p, 2 * p, 4 * p};
        for (int v = 2; v <= 3; v++) {
            for (int j = 0; j < 3; j++) {
                int m = ms[j];
                sc_prog *pg = sc_prog_new(p, v * p, m);
                CHECK(pg != NULL);
                if (!pg)
                    continue;
                sc_sim *sim = run_rule(pg, "interleaved");
                if (sim) {
                    CHECK_NEAR(sim->bubble_rate, (double)(p - 1) / ((double)v * m + p - 1), EPS);
                    double peak0 = m == p ? p : p + (double)(p - 1) / v;
                    CHECK_NEAR(sim->peak_mem[0], peak0, EPS);
                    for (int d = 0; d < p; d++)
                        CHECK_NEAR(sim->busy[d], 3.0 * m, EPS);
                }
                sc_sim_free(sim);
                sc_prog_free(pg);
            }
        }
    }
}

/* ---- ZB-H2 ----------------------------------------------------------------
 * Device d runs 2(p-d)-1 warm-up F and delays W by 2d microbatches: before
 * its first W it has done (2(p-d)-1) + 2d = 2p-1 forwards, and afterwards
 * every F is paired with a W. With m >= 2p-1 the warm-up and cool-down are
 * full: zero bubble, peak 2p-1 on every device. For smaller m the rule is
 * still a valid program. */
TEST(zb_h2)
{
    for (int i = 0; i < NPS; i++) {
        int p = PS[i], ms[4];
        ms_for(p, ms);
        for (int j = 0; j < 4; j++) {
            int m = ms[j];
            sc_prog *pg = sc_prog_new(p, p, m);
            CHECK(pg != NULL);
            if (!pg)
                continue;
            sc_sim *sim = run_rule(pg, "zb-h2");
            if (sim && m >= 2 * p - 1) {
                CHECK_NEAR(sim->bubble_rate, 0.0, EPS);
                CHECK_NEAR(sim->makespan, 3.0 * m + p - 1, EPS); /* device d starts at d */
                for (int d = 0; d < p; d++)
                    CHECK_NEAR(sim->peak_mem[d], 2 * p - 1, EPS);
            }
            sc_sim_free(sim);
            sc_prog_free(pg);
        }
    }
}

/* ---- ZB-H1 with unequal costs -----------------------------------------------
 * Zero Bubble paper: ZB-H1's bubble is (p-1)(T_F + T_B - T_W) on each device
 * (for T_W <= T_F + T_B ...), so the rate is
 *   (p-1)(T_F+T_B-T_W) / (m(T_F+T_B+T_W) + (p-1)(T_F+T_B-T_W)). */
TEST(zb_h1_unequal_costs)
{
    const double cost[2][3] = {{1, 1, 0.5}, {1, 1.2, 0.8}};
    for (int c = 0; c < 2; c++) {
        double tf = cost[c][0], tb = cost[c][1], tw = cost[c][2];
        for (int i = 0; i < NPS; i++) {
            int p = PS[i], ms[4];
            ms_for(p, ms);
            for (int j = 0; j < 4; j++) {
                int m = ms[j];
                sc_prog *pg = sc_prog_new(p, p, m);
                CHECK(pg != NULL);
                if (!pg)
                    continue;
                CHECK(sc_prog_set_cost(pg, -1, tf, tb, tw) == SC_OK);
                CHECK_NEAR(sc_prog_tb(pg, p - 1), tb, 0);
                sc_sim *sim = run_rule(pg, "zb-h1");
                if (sim) {
                    double idle = (p - 1) * (tf + tb - tw), work = m * (tf + tb + tw);
                    CHECK_NEAR(sim->bubble_rate, idle / (work + idle), EPS);
                    CHECK_NEAR(sim->makespan, work + idle, EPS);
                }
                sc_sim_free(sim);
                sc_prog_free(pg);
            }
        }
    }
}

/* ---- communication cost ---------------------------------------------------- */


TEST(comm_cost)
{
    /* 1F1B, p = 2, m = 1, T_comm = 0.5 (F = 1, BW = 2):
     *   d0 F s0   [0, 1]     -> act reaches d1 at 1.5
     *   d1 F s1   [1.5, 2.5], BW s1 [2.5, 4.5] -> grad reaches d0 at 5
     *   d0 BW s0  [5, 7]     makespan 7 = p(T_F+T_B+T_W) + 2(p-1) T_comm.
     * The same closed form for any p with m = 1 (one microbatch goes down
     * and back up: 2(p-1) hops). */
    for (int p = 2; p <= 8; p++) {
        sc_prog *pg = sc_prog_new(p, p, 1);
        CHECK(sc_prog_set_comm(pg, 0.5) == SC_OK);
        CHECK(sc_rule_fill(pg, "1f1b") == SC_OK);
        CHECK_NEAR(sim_makespan(pg), 3.0 * p + 2 * (p - 1) * 0.5, EPS);
        CHECK_NEAR(dataflow_makespan(pg), 3.0 * p + 2 * (p - 1) * 0.5, EPS);
        sc_prog_free(pg);
    }

    /* 1F1B, p = 2, m = 2, T_comm = 0.5. Orders: d0 F0 F1 BW0 BW1,
     * d1 F0 BW0 F1 BW1. Lowered (a RECV before the pass that runs when its
     * data is produced, in a group of its own then; a SEND right after its
     * producer; dataflow starts d0 0,1,5,8 and d1 1.5,2.5,4.5,5.5):
     *   d0: F0 [SEND a0] F1 [SEND a1, RECV g0] BW0 [RECV g1] BW1
     *   d1: [RECV a0] [RECV a1] F0 BW0 [SEND g0] F1 BW1 [SEND g1]
     * Replay (a transfer completes T_comm after both groups run):
     *   d0 F0 0-1; a0 matched at max(1,0)+.5 = 1.5; d0 F1 1-2
     *   d1 F0 1.5-2.5; its group {RECV a1} posted 1.5: a1 at 2+.5 = 2.5
     *   d1 BW0 2.5-4.5; {SEND g0} posted 4.5: g0 at 5 (d0's group is running)
     *   d1 F1 4.5-5.5, BW1 5.5-7.5, {SEND g1} at 7.5
     *   d0 BW0 waits for g0: 5-7; {RECV g1} posted 7: g1 at max(7,7.5)+.5 = 8
     *   d0 BW1 8-10: makespan 10, the same as the dataflow timing. */
    sc_prog *pg = sc_prog_new(2, 2, 2);
    CHECK(sc_prog_set_comm(pg, 0.5) == SC_OK);
    CHECK(sc_rule_fill(pg, "1f1b") == SC_OK);
    CHECK_NEAR(dataflow_makespan(pg), 10.0, EPS);
    CHECK_NEAR(sim_makespan(pg), 10.0, EPS);

    /* GPipe, p = 2, m = 2, T_comm = 0.5. Orders: d0 F0 F1 BW0 BW1,
     * d1 F0 F1 BW0 BW1. Dataflow: d0 F 0-1, 1-2; d1 F 1.5-2.5, 2.5-3.5,
     * BW 3.5-5.5, 5.5-7.5; d0 BW 6-8, 8-10: 10. Lowered:
     *   d0: F0 [SEND a0] F1 [SEND a1, RECV g0] BW0 [RECV g1] BW1
     *   d0: F0 [SEND a0] F1 [SEND a1] [RECV g0] [RECV g1] BW0 BW1
     *   d1: [RECV a0] [RECV a1] F0 F1 BW0 [SEND g0] BW1 [SEND g1]
     * A RECV goes before the pass that runs when its data is produced (a1
     * exists at 2, while d1's F0 runs 1.5-2.5; g1 at 7.5 while d0's BW0
     * runs 6-8), in a group of its own, so nothing waits for it early:
     *   d1 F0 1.5-2.5, a1 there at 2.5, F1 2.5-3.5, BW0 3.5-5.5, g0 at 6,
     *   BW1 5.5-7.5; d0 BW0 6-8, g1 at 8, BW1 8-10.
     * Simulated makespan 10, the dataflow bound. (Posted after d1's F0, a1
     * would arrive at 3 and the makespan would be 11.) */
    CHECK(sc_rule_fill(pg, "gpipe") == SC_OK);
    CHECK_NEAR(dataflow_makespan(pg), 10.0, EPS);
    CHECK_NEAR(sim_makespan(pg), 10.0, EPS);
    /* Without communication cost both are (m+p-1)(T_F+T_BW) = 9. */
    CHECK(sc_prog_set_comm(pg, 0) == SC_OK);
    CHECK_NEAR(sim_makespan(pg), 9.0, EPS);
    sc_prog_free(pg);
}

/* ---- every rule verifies on a grid --------------------------------------- */
TEST(rule_grid)
{
    static const int grid_p[] = {1, 2, 3, 4, 5, 8};
    const char *simple[] = {"gpipe", "1f1b", "zb-h1", "zb-h2"};
    for (int i = 0; i < 6; i++) {
        int p = grid_p[i];
        for (int m = 1; m <= 12; m++) {
            sc_prog *pg = sc_prog_new(p, p, m);
            CHECK(pg != NULL);
            if (!pg)
                continue;
            for (int r = 0; r < 4; r++) {
                sc_status st = sc_rule_fill(pg, simple[r]);
                CHECK(st == SC_OK);
                st = st ? st : sc_check(pg);
                CHECK(st == SC_OK);
                if (st)
                    fprintf(stderr, "  %s p=%d m=%d: %s\n", simple[r], p, m, sc_errmsg(pg));
                /* F and BW (or F, B, W) of every (stage, microbatch). */
                size_t per = r >= 2 ? 3 : 2;
                CHECK(total_passes(pg) == per * (size_t)p * (size_t)m);
            }
            sc_prog_free(pg);
            for (int v = 2; v <= 3; v++) {
                pg = sc_prog_new(p, v * p, m);
                CHECK(pg != NULL);
                if (!pg)
                    continue;
                sc_status st = sc_rule_fill(pg, "interleaved");
                if (m % p == 0) {
                    CHECK(st == SC_OK);
                    st = st ? st : sc_check(pg);
                    CHECK(st == SC_OK);
                    if (st)
                        fprintf(stderr, "  interleaved p=%d v=%d m=%d: %s\n", p, v, m,
                                sc_errmsg(pg));
                } else {
                    CHECK(st == SC_ERR_ARG);
                    CHECK_STR(sc_errmsg(pg), "multiple of p");
                }
                sc_prog_free(pg);
            }
        }
    }
}

/* ---- building blocks ------------------------------------------------------
 * 1F1B as a block (Controllable Memory paper): stage s runs F at s T_F and
 * BW at P T_F + (P-1-s)(T_B+T_W); interval T = T_F + T_B + T_W. Then
 * BW - F = (P-s) T - (T_B+T_W) = T_F (mod T): F and BW tile the interval, and
 * BW_j comes before F_i on device d exactly when i >= P-d+j, which is 1F1B's
 * warm-up of P-d-1 forwards plus one. */

int main(void)
{
    RUN(unit_1f1b_gpipe);
    RUN(unit_zb_h1);
    RUN(interleaved);
    RUN(zb_h2);
    RUN(zb_h1_unequal_costs);
    RUN(comm_cost);
    RUN(rule_grid);
    return harness_done("rules");
}
