/*
 * test_exact.c — the exact optimum past the MILP's reach (bound/exact.h,
 * docs/bound.md#the-search, docs/bound.md#the-memory-fill): the memory
 * fill and drain by hand on a V whose two stages share a device's cap, an optimum
 * GLPK proved independently (on the MILP alone, before the search and the
 * memory fill), the search's best schedule within the bound and the
 * program's own, the recipe it is exported as, and what the search leaves
 * of interp's memory.
 */
#include "bound/bound.h"
#include "bound/exact.h"
#include "harness.h"
#include "ir/alloc.h"
#include "ir/ir.h"
#include "schedule/rules.h"
#include "sim/sim.h"

#include <stdio.h>

#include <math.h>
#include <string.h>

/* A V on two devices (stages 0 and 3 on d0, 1 and 2 on d1), m
 * microbatches run one at a time (F down, BW back: a valid, slow order),
 * each pass 1 (W tw), a record 1 unit, a cap of `cap` units. */
static sc_prog *v_one_at_a_time(int m, double tw, double cap)
{
    sc_prog *pg = sc_prog_new(2, 4, m);
    CHECK(sc_prog_set_placement(pg, SC_PLACE_V, NULL) == SC_OK);
    CHECK(sc_prog_set_cost(pg, -1, 1, 1, tw) == SC_OK);
    CHECK(sc_prog_set_mem(pg, -1, 1) == SC_OK);
    CHECK(sc_prog_set_mem_limit(pg, cap) == SC_OK);
    for (int d = 0; d < 2; d++)
        for (int mb = 0; mb < m; mb++) {
            int lo = d, hi = 3 - d; /* d's stages, down then up */
            CHECK(sc_prog_push(pg, d, SC_OP_F, lo, mb) == SC_OK);
            CHECK(sc_prog_push(pg, d, SC_OP_F, hi, mb) == SC_OK);
            CHECK(sc_prog_push(pg, d, SC_OP_BW, hi, mb) == SC_OK);
            CHECK(sc_prog_push(pg, d, SC_OP_BW, lo, mb) == SC_OK);
        }
    return pg;
}

static double makespan(sc_prog *pg)
{
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    double t = sim ? sim->makespan : NAN;
    sc_sim_free(sim);
    return t;
}

TEST(memory_fill)
{
    /* m = 40: 160 passes a device, past the MILP. d1 (stages 1, 2) gets
     * its first F at 1; its first record can be freed when B(2, 0) ends, at
     * 1 + 1 (F2) + 2 (F3, B3) + 1 (B2) = 6 at the earliest (tw = 0: B frees
     * it). Before that it runs at most 2 forwards (a cap of 2 records) and
     * one pass that runs past 6: 3, so it waits 6 - 1 - 3 = 2, and the
     * makespan is at least 1 + 2 + its work, 160: 163. The memory
     * drain adds 3 at d1's end: its last F (of stage 2) ends at least 5
     * before the end (F3, B3, B2, B1, B0 follow it), and in those 5 it
     * can run only the Bs of the 2 records its cap holds: it waits 3. The
     * windows are disjoint (their passes, 3 + 2, cannot fill d1's 160), so
     * the bound is 163 + 3 = 166; d0 gives 0 + 2 + 2 + 160 = 164, which
     * bound.h's memory term before the first B finds too. */
    sc_prog *pg = v_one_at_a_time(40, 0, 2);
    sc_bound b;
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    CHECK_NEAR(b.bound, 164, 1e-6);
    sc_exact e;
    double t = makespan(pg); /* lowers the program: before the count */
    size_t held = sc_alloc_used();
    CHECK(sc_exact_solve(pg, 0.5, 0, t, &e) == SC_OK);
    CHECK(sc_alloc_used() == held);
    CHECK(e.status == SC_EXACT_LIMIT && e.searched && e.binaries == 0);
    CHECK_NEAR(e.bound, 166, 1e-6);
    CHECK_NEAR(e.memory_bound, 166, 1e-6);
    CHECK(e.incumbent >= e.bound && e.incumbent <= t + 1e-9);
    CHECK_STR(e.why, "the MILP covers at most 64 passes a device");
    sc_prog_free(pg);
}

/* The memory fill and drain never above a schedule that meets the cap:
 * each rule's schedule under a cap of its own peak (the tightest it
 * meets), over shapes and costs. memory_bound is the term alone, before
 * a schedule caps the reported bound. */
static int own_peak_case(const char *rule, int p, int m, double tw, double tc, int *active)
{
    int v = !strcmp(rule, "zb-v") || !strcmp(rule, "1f1b-v") || !strcmp(rule, "interleaved");
    sc_prog *pg = sc_prog_new(p, v ? 2 * p : p, m);
    if (!pg)
        return 0;
    if (strcmp(rule, "interleaved"))
        CHECK(!v || sc_prog_set_placement(pg, SC_PLACE_V, NULL) == SC_OK);
    CHECK(sc_prog_set_cost(pg, -1, 1, 1.2, tw) == SC_OK);
    CHECK(sc_prog_set_comm(pg, tc) == SC_OK);
    sc_sim *sim = NULL;
    int ran = 0;
    if (sc_rule_fill(pg, rule) == SC_OK && sc_simulate(pg, &sim) == SC_OK) {
        double peak = 0;
        for (int d = 0; d < p; d++)
            peak = fmax(peak, sim->peak_mem[d]);
        CHECK(sc_prog_set_mem_limit(pg, peak) == SC_OK);
        sc_exact e;
        CHECK(sc_exact_solve(pg, 0.01, 0, sim->makespan, &e) == SC_OK);
        CHECK(e.memory_bound <= sim->makespan * (1 + 1e-9));
        if (e.memory_bound > sim->makespan * (1 + 1e-9))
            fprintf(stderr, "  %s p=%d m=%d tw=%g tc=%g: %g above %g\n", rule, p, m, tw, tc,
                    e.memory_bound, sim->makespan);
        *active += e.memory_bound > 0;
        ran = 1;
    }
    sc_sim_free(sim);
    sc_prog_free(pg);
    return ran;
}

TEST(below_own_peak)
{
    const char *rules[] = {"zb-v", "1f1b-v", "1f1b", "zb-h1", "zb-h2", "interleaved"};
    int runs = 0, active = 0;
    for (int r = 0; r < 6; r++)
        for (int p = 2; p <= 4; p += 2)
            for (int m = p; m <= 4 * p; m *= 2)
                for (int c = 0; c < 4; c++)
                    runs += own_peak_case(rules[r], p, m, c & 1 ? 0.63 : 0, c & 2 ? 0.05 : 0,
                                          &active);
    CHECK(runs >= 60 && active >= 20);
}

TEST(independent_optimum)
{
    /* m = 4, tw = 0.01, a cap of 2 records: GLPK on the MILP alone (before
     * the search and the memory fill) proved 26.07; the solve now must
     * agree, its bound at or below it. */
    sc_prog *pg = v_one_at_a_time(4, 0.01, 2);
    sc_exact e;
    CHECK(sc_exact_solve(pg, 60, 0, INFINITY, &e) == SC_OK);
    CHECK(e.bound <= 26.07 + 1e-9 && e.incumbent >= 26.07 - 1e-9);
    if (sc_exact_solver()) {
        CHECK(e.status == SC_EXACT_OPTIMAL);
        CHECK_NEAR(e.optimum, 26.07, 1e-6);
    }
    sc_prog_free(pg);
}

TEST(export)
{
    /* Without a cap the search meets the lower bound; the recipe holds the
     * shape, the placement, the costs and each device's order. */
    sc_prog *pg = v_one_at_a_time(8, 0.5, INFINITY);
    sc_exact e;
    char *lua = NULL;
    CHECK(sc_exact_solve_lua(pg, 10, 0, makespan(pg), &e, &lua) == SC_OK);
    CHECK(e.status == SC_EXACT_OPTIMAL && e.by_bound);
    CHECK(lua != NULL);
    if (lua) {
        CHECK_STR(lua, "return sc.program {");
        CHECK_STR(lua, "p = 2, m = 8, stages = 4,");
        CHECK_STR(lua, "placement = {0, 1, 1, 0},");
        CHECK_STR(lua, "tw = {0.5, 0.5, 0.5, 0.5},");
        CHECK(strstr(lua, "mem = {") == NULL); /* no cap */
        CHECK_STR(lua, "\"F0.0 ");
    }
    sc_free(lua);
    /* Outside the model: no schedule, no recipe. */
    CHECK(sc_prog_set_steps(pg, 2) == SC_OK);
    lua = (char *)1;
    CHECK(sc_exact_solve_lua(pg, 10, 0, INFINITY, &e, &lua) == SC_OK);
    CHECK(e.status == SC_EXACT_UNSUPPORTED && lua == NULL);
    sc_prog_free(pg);
}

int main(void)
{
    RUN(memory_fill);
    RUN(below_own_peak);
    RUN(independent_optimum);
    RUN(export);
    return harness_done("exact");
}
