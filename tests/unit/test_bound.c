/*
 * test_bound.c — the lower bound on the makespan (bound/bound.h,
 * docs/bound.md): each term by hand on small programs, the cases where it
 * is tight (1F1B with tw = 0 and no communication; one device), and the
 * bound below the simulated makespan of hand-written orders (the grid over
 * the stdlib recipes is tests/bound.sh).
 */
#include "bound/bound.h"
#include "bound/exact.h"
#include "harness.h"
#include "ir/alloc.h"
#include "ir/ir.h"
#include "ir/offload_cfg.h"
#include "prog_1f1b.h"
#include "sim/sim.h"

#include <math.h>

/* 1F1B (prog_1f1b.h) with the costs of its passes. */
static sc_prog *one_f_one_b_cost(int p, int m, double tf, double tb, double tw, double tcomm)
{
    sc_prog *pg = one_f_one_b(p, m, tcomm);
    CHECK(sc_prog_set_cost(pg, -1, tf, tb, tw) == SC_OK);
    return pg;
}

static double makespan(sc_prog *pg)
{
    return makespan_peak(pg, NULL);
}

TEST(tight_1f1b)
{
    /* tw = 0, no communication: (m + p - 1)(tf + tb), the fill and drain of
     * the last device: it waits (p-1) tf, computes m (tf + tb), and the
     * last B still crosses p - 1 stages. */
    sc_prog *pg = one_f_one_b_cost(4, 8, 1, 1, 0, 0);
    sc_bound b;
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    CHECK_NEAR(b.bound, 22, 1e-12);
    CHECK_NEAR(makespan(pg), 22, 1e-12);
    CHECK(b.binding == SC_BOUND_FILL && b.device == 3);
    CHECK_NEAR(b.term[SC_BOUND_WORK], 16, 1e-12);
    CHECK_NEAR(b.term[SC_BOUND_PATH], 8, 1e-12);
    CHECK_STR(b.why, "fill and drain");
    CHECK_NEAR(sc_bound_gap(22, b.bound), 0, 1e-12);
    sc_prog_free(pg);
    /* With W and communication the bound stays below. */
    pg = one_f_one_b_cost(4, 8, 1, 2, 1, 0.25);
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    double t = makespan(pg);
    CHECK(b.bound <= t + 1e-9 && b.bound > 0.7 * t);
    if (!(b.bound <= t + 1e-9 && b.bound > 0.7 * t)) fprintf(stderr, "bound %g (%s) makespan %g\n", b.bound, b.why, t);
    sc_prog_free(pg);
}

TEST(one_device)
{
    /* One device: the work, m (tf + tb + tw), is the makespan. */
    sc_prog *pg = one_f_one_b_cost(1, 5, 1, 2, 3, 0);
    sc_bound b;
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    CHECK_NEAR(b.bound, 30, 1e-12);
    CHECK_NEAR(makespan(pg), 30, 1e-12);
    sc_prog_free(pg);
}

TEST(path)
{
    /* One microbatch: F down, B back, transfers between devices, W last. */
    sc_prog *pg = sc_prog_new(3, 3, 1);
    CHECK(sc_prog_set_cost(pg, -1, 1, 2, 4) == SC_OK);
    CHECK(sc_prog_set_comm(pg, 0.5) == SC_OK);
    sc_bound b;
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    /* 3 F + 2 transfers + 3 B + 2 transfers + the first stage's W */
    CHECK_NEAR(b.term[SC_BOUND_PATH], 3 + 1 + 6 + 1 + 4, 1e-12);
    sc_prog_free(pg);
}

TEST(memory)
{
    /* A cap of one record on every device: microbatch j + 1 starts its F on
     * d0 only after microbatch j's round trip (3 F + 3 B = 6): m round
     * trips. 1F1B with that cap cannot run; the order F, BW, F, BW, ...
     * on every device meets the bound. */
    int p = 3, m = 4;
    sc_prog *pg = sc_prog_new(p, p, m);
    CHECK(sc_prog_set_cost(pg, -1, 1, 1, 0) == SC_OK);
    CHECK(sc_prog_set_mem(pg, -1, 1) == SC_OK);
    CHECK(sc_prog_set_mem_limit(pg, 1) == SC_OK);
    for (int d = 0; d < p; d++)
        for (int i = 0; i < m; i++) {
            CHECK(sc_prog_push(pg, d, SC_OP_F, d, i) == SC_OK);
            CHECK(sc_prog_push(pg, d, SC_OP_BW, d, i) == SC_OK);
        }
    sc_bound b;
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    CHECK(b.binding == SC_BOUND_MEMORY && b.k == 1 && b.stage == 0);
    CHECK_NEAR(b.bound, 24, 1e-12);
    CHECK_NEAR(makespan(pg), 24, 1e-12);
    CHECK_STR(b.why, "memory cap");
    /* The same cap given to the bound instead of the program. */
    CHECK(sc_prog_set_mem_limit(pg, INFINITY) == SC_OK);
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    CHECK(b.binding != SC_BOUND_MEMORY && b.bound < 24);
    CHECK(sc_bound_prog_cap(pg, 1, &b) == SC_OK);
    CHECK_NEAR(b.bound, 24, 1e-12);
    CHECK(sc_bound_prog_cap(pg, 0, &b) == SC_ERR_ARG);
    /* A cap below one record: no schedule. */
    CHECK(sc_prog_set_mem_limit(pg, 0.5) == SC_OK);
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    CHECK(isinf(b.bound) && b.k == 0);
    sc_prog_free(pg);
}

TEST(several_chunks)
{
    /* Interleaved, p = 3, v = 2, m = 3, tf = 1, tb = 1.5, tw = 1: device 0
     * holds stages 0 and 3; its first B, of stage 3, starts at the
     * earliest after F down to stage 5 and B back up to 4: 3 + 3 + 3 =
     * 9. Its 6 F (6) cannot fill that: 9 + 21 - 6 = 24, above the last
     * device's 2 + 21. */
    sc_prog *pg = sc_prog_new(3, 6, 3);
    CHECK(sc_prog_set_placement(pg, SC_PLACE_LOOP, NULL) == SC_OK);
    CHECK(sc_prog_set_cost(pg, -1, 1, 1.5, 1) == SC_OK);
    sc_bound b;
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    CHECK_NEAR(b.bound, 24, 1e-12);
    CHECK(b.binding == SC_BOUND_FILL && b.device == 0);
    CHECK_STR(b.why, "d0 has 6 of F to run before its first B at 9");
    sc_prog_free(pg);

    /* V, p = 2, m = 4, tf = tb = 1, tw = 0, a unit a record, a cap of 2:
     * device 1 holds stages 1 and 2, and record (1, x) is live whenever
     * (2, x) is, so the cap holds one record of stage 2: 4 round trips of
     * 4 after its first F at 2, then B(1) and B(0): 2 + 16 + 2 = 20 (one
     * stage alone would hold 2: 12). */
    pg = sc_prog_new(2, 4, 4);
    CHECK(sc_prog_set_placement(pg, SC_PLACE_V, NULL) == SC_OK);
    CHECK(sc_prog_set_cost(pg, -1, 1, 1, 0) == SC_OK);
    CHECK(sc_prog_set_mem(pg, -1, 1) == SC_OK);
    CHECK(sc_prog_set_mem_limit(pg, 2) == SC_OK);
    static const int st[2][2] = {{0, 3}, {1, 2}};
    for (int i = 0; i < 4; i++) /* one microbatch at a time: 4 x 8 */
        for (int d = 0; d < 2; d++) {
            CHECK(sc_prog_push(pg, d, SC_OP_F, st[d][0], i) == SC_OK);
            CHECK(sc_prog_push(pg, d, SC_OP_F, st[d][1], i) == SC_OK);
            CHECK(sc_prog_push(pg, d, SC_OP_BW, st[d][1], i) == SC_OK);
            CHECK(sc_prog_push(pg, d, SC_OP_BW, st[d][0], i) == SC_OK);
        }
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    CHECK_NEAR(b.bound, 20, 1e-12);
    CHECK(b.binding == SC_BOUND_MEMORY && b.stage == 2 && b.k == 1 && b.device == 1);
    CHECK(b.bound <= makespan(pg) + 1e-9);
    /* Before the first B under the cap: device 1's first B (of stage 2)
     * starts at 5 at the earliest, and 2 records hold 2 of F: 5 + 16 - 2
     * = 19, under the 20 above. With offload the records may leave: the
     * link moves a record in ratio x 4 (T_F + T_B + T_W of the device);
     * at ratio 2 that is 8, so by 5 + 1 it carries 0.75 of a unit more:
     * 5 + 16 - 2.75 = 18.25, now the bound (no round-trip term). */
    CHECK(b.term[SC_BOUND_MEMORY] >= 20 - 1e-12);
    sc_offload_cfg oc = {.policy = SC_OFFLOAD_ALL, .chunks = 1, .ratio = 2};
    CHECK(sc_prog_set_offload(pg, &oc) == SC_OK);
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    CHECK_NEAR(b.bound, 18.25, 1e-12);
    CHECK(b.binding == SC_BOUND_MEMORY && b.device == 1);
    CHECK_STR(b.why, "with the host link's");
    /* A fast link (ratio 0.25: a record in 1) carries them all: fill and
     * drain, device 1's head, F and B, and B(0) after its last: 1 + 16 +
     * 1. */
    oc.ratio = 0.25;
    CHECK(sc_prog_set_offload(pg, &oc) == SC_OK);
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    CHECK_NEAR(b.bound, 18, 1e-12);
    CHECK(b.binding == SC_BOUND_FILL);
    sc_prog_free(pg);
}

TEST(exact)
{
    /* Out of memory: the solver's budget. p = 16, m = 21 under a cap of two
     * records: the model's own arrays take about 4 MiB (ir/alloc.h, counted
     * here); 2 MiB in all leaves GLPK nothing, 8 MiB leaves it 3 MiB, which
     * its first phase overruns: its error hook, not an abort. Neither leaks,
     * and GLPK answers the next call (below) as before. */
    sc_exact e;
    sc_prog *big = one_f_one_b_cost(16, 21, 1, 1, 0.5, 0.1);
    CHECK(sc_prog_set_mem(big, -1, 1) == SC_OK);
    CHECK(sc_prog_set_mem_limit(big, 2) == SC_OK);
    size_t held = sc_alloc_used();
    sc_bound lb;
    CHECK(sc_bound_prog(big, &lb) == SC_OK);
    CHECK(sc_exact_solve(big, 30, 2 << 20, INFINITY, &e) == SC_OK);
    CHECK(e.status == SC_EXACT_MEMORY || (!sc_exact_solver() && e.status == SC_EXACT_NO_SOLVER));
    if (sc_exact_solver()) {
        CHECK_STR(e.why, "GLPK needs at least 1 MiB");
        CHECK(isfinite(e.incumbent) && e.bound == lb.bound && e.bound <= e.incumbent);
        CHECK(sc_exact_solve(big, 30, 8 << 20, INFINITY, &e) == SC_OK);
        CHECK(e.status == SC_EXACT_MEMORY && e.solver_mem == 3 << 20);
        CHECK_STR(e.why, "GLPK needs more than the 3 MiB it was given");
        CHECK(isfinite(e.incumbent) && e.bound >= lb.bound && e.bound <= e.incumbent);
        CHECK(e.seconds < 30);
        CHECK_STR(sc_exact_status_name(e.status), "memory");
    }
    CHECK(sc_alloc_used() == held);
    sc_prog_free(big);
    /* 1F1B on two devices, four microbatches, a cap of one record: the
     * memory term gives 4 round trips (4.2 each) and W = 0.5; the optimum,
     * 18.8, is above it (GLPK proves it), and below 1F1B's 20.8. */
    sc_prog *pg = sc_prog_new(2, 2, 4);
    CHECK(sc_prog_set_cost(pg, -1, 1, 1, 0.5) == SC_OK);
    CHECK(sc_prog_set_comm(pg, 0.1) == SC_OK);
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 4; i++) {
            CHECK(sc_prog_push(pg, d, SC_OP_F, d, i) == SC_OK);
            CHECK(sc_prog_push(pg, d, SC_OP_BW, d, i) == SC_OK);
        }
    CHECK(sc_prog_set_mem(pg, -1, 1) == SC_OK);
    CHECK(sc_prog_set_mem_limit(pg, 1) == SC_OK);
    sc_bound b;
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    CHECK_NEAR(b.bound, 17.3, 1e-9);
    CHECK(sc_exact_solve(pg, 0, 0, 1, &e) == SC_ERR_ARG);
    CHECK(sc_exact_solve(pg, 30, 0, INFINITY, &e) == SC_OK);
    if (!sc_exact_solver()) {
        CHECK(e.status == SC_EXACT_NO_SOLVER);
        CHECK_STR(e.why, "without GLPK");
    } else {
        CHECK(e.status == SC_EXACT_OPTIMAL && !e.by_bound);
        CHECK_NEAR(e.optimum, 18.8, 1e-6);
        CHECK(e.binaries > 0 && e.bound >= b.bound);
        double t = makespan(pg);
        CHECK(e.optimum <= t + 1e-9);
    }
    sc_prog_free(pg);
    /* Without a cap the list schedule meets the bound: no solver needed. */
    pg = one_f_one_b_cost(3, 6, 1, 1, 0.5, 0.1);
    CHECK(sc_bound_prog(pg, &b) == SC_OK);
    CHECK(sc_exact_solve(pg, 30, 0, makespan(pg), &e) == SC_OK);
    if (sc_exact_solver()) {
        CHECK(e.status == SC_EXACT_OPTIMAL && e.by_bound);
        CHECK_NEAR(e.optimum, b.bound, 1e-9);
    }
    /* Outside the model: several steps. */
    CHECK(sc_prog_set_steps(pg, 2) == SC_OK);
    CHECK(sc_exact_solve(pg, 30, 0, INFINITY, &e) == SC_OK);
    CHECK(e.status == SC_EXACT_UNSUPPORTED);
    CHECK_STR(e.why, "more than one step");
    sc_prog_free(pg);
}

TEST(gap)
{
    CHECK_NEAR(sc_bound_gap(101.5, 98), 3.5 / 98, 1e-12);
    CHECK(sc_bound_gap(0, 0) == 0 && isinf(sc_bound_gap(1, 0)));
    CHECK(sc_bound_prog(NULL, NULL) == SC_ERR_ARG);
    CHECK_STR(sc_bound_term_name(SC_BOUND_MEMORY), "memory");
}

int main(void)
{
    RUN(tight_1f1b);
    RUN(one_device);
    RUN(path);
    RUN(memory);
    RUN(several_chunks);
    RUN(exact);
    RUN(gap);
    return harness_done("bound");
}
