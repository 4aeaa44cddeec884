/*
 * test_errors.c — malformed programs and arguments are refused, each with
 * its status and a message that says what is wrong and where.
 */
#include "compile.h"
#include "schedule/block.h"
#include "schedule/dataflow.h"
#include "harness.h"
#include "ir/ir.h"
#include "lower/lower.h"
#include "schedule/rules.h"
#include "sim/sim.h"
#include "check/verify.h"

#include <stdlib.h>

/* Pushes "op stage mb" triples to device d; returns the number pushed. */
typedef struct pass {
    int op, stage, mb;
} pass;

static void push_all(sc_prog *pg, int d, const pass *ps, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(sc_prog_push(pg, d, ps[i].op, ps[i].stage, ps[i].mb) == SC_OK);
}

/* 1F1B on two devices, one microbatch, with device 0's order given. */
static sc_prog *two_devices(const pass *d0, int n0)
{
    sc_prog *pg = sc_prog_new(2, 2, 1);
    CHECK(pg != NULL);
    push_all(pg, 0, d0, n0);
    const pass d1[] = {{SC_OP_F, 1, 0}, {SC_OP_BW, 1, 0}};
    push_all(pg, 1, d1, 2);
    return pg;
}

TEST(pass_missing)
{
    /* BW s0 mb0 is on no device. */
    const pass d0[] = {{SC_OP_F, 0, 0}};
    sc_prog *pg = two_devices(d0, 1);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "pass missing");
    CHECK_STR(sc_errmsg(pg), "stage 0, microbatch 0");
    CHECK(!sc_prog_is_lowered(pg));
    sc_prog_free(pg);

    /* F missing. */
    const pass e0[] = {{SC_OP_BW, 0, 0}};
    pg = two_devices(e0, 1);
    CHECK(sc_verify_passes(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "pass missing: F");
    sc_prog_free(pg);

    /* B without its W. */
    const pass f0[] = {{SC_OP_F, 0, 0}, {SC_OP_B, 0, 0}};
    pg = two_devices(f0, 2);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "pass missing: W");
    sc_prog_free(pg);

    /* A device with no passes at all. */
    pg = sc_prog_new(2, 2, 1);
    const pass g1[] = {{SC_OP_F, 1, 0}, {SC_OP_BW, 1, 0}};
    push_all(pg, 1, g1, 2);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "pass missing");
    sc_prog_free(pg);
}

TEST(pass_twice)
{
    const pass d0[] = {{SC_OP_F, 0, 0}, {SC_OP_F, 0, 0}, {SC_OP_BW, 0, 0}};
    sc_prog *pg = two_devices(d0, 3);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "pass twice");
    CHECK_STR(sc_errmsg(pg), "F s0 mb0");
    CHECK_STR(sc_errmsg(pg), "d0 #0");
    CHECK_STR(sc_errmsg(pg), "d0 #1");
    sc_prog_free(pg);

    /* BW and a split B of the same (stage, microbatch). */
    const pass e0[] = {{SC_OP_F, 0, 0}, {SC_OP_BW, 0, 0}, {SC_OP_B, 0, 0}};
    pg = two_devices(e0, 3);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "pass twice");
    CHECK_STR(sc_errmsg(pg), "BW");
    sc_prog_free(pg);
}

TEST(wrong_device)
{
    const pass d0[] = {{SC_OP_F, 0, 0}, {SC_OP_F, 1, 0}, {SC_OP_BW, 0, 0}};
    sc_prog *pg = two_devices(d0, 3);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "wrong device");
    CHECK_STR(sc_errmsg(pg), "F s1 mb0");
    CHECK_STR(sc_errmsg(pg), "placed on d1");
    sc_prog_free(pg);
}

TEST(dependency_out_of_order)
{
    /* One device: W before its B. */
    sc_prog *pg = sc_prog_new(1, 1, 1);
    const pass d0[] = {{SC_OP_F, 0, 0}, {SC_OP_W, 0, 0}, {SC_OP_B, 0, 0}};
    push_all(pg, 0, d0, 3);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "dependency out of order");
    CHECK_STR(sc_errmsg(pg), "W s0 mb0");
    CHECK_STR(sc_errmsg(pg), "d0");
    sc_prog_free(pg);

    /* B of the last stage before its F. */
    pg = sc_prog_new(1, 1, 1);
    const pass e0[] = {{SC_OP_B, 0, 0}, {SC_OP_F, 0, 0}, {SC_OP_W, 0, 0}};
    push_all(pg, 0, e0, 3);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "dependency out of order");
    sc_prog_free(pg);

    /* Two stages on one device (local hand-off): F s1 before F s0. */
    pg = sc_prog_new(1, 2, 1);
    const pass f0[] = {{SC_OP_F, 1, 0}, {SC_OP_F, 0, 0}, {SC_OP_BW, 1, 0}, {SC_OP_BW, 0, 0}};
    push_all(pg, 0, f0, 4);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "dependency out of order");
    CHECK_STR(sc_errmsg(pg), "F s1 mb0");
    sc_prog_free(pg);

    /* ... and BW s0 before BW s1. */
    pg = sc_prog_new(1, 2, 1);
    const pass g0[] = {{SC_OP_F, 0, 0}, {SC_OP_F, 1, 0}, {SC_OP_BW, 0, 0}, {SC_OP_BW, 1, 0}};
    push_all(pg, 0, g0, 4);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "dependency out of order");
    sc_prog_free(pg);
}

/* Device 0 runs BW s0 mb0 before F s0 mb1; device 1 runs F s1 mb1 before
 * BW s1 mb0. BW s0 mb0 waits for BW s1 mb0 (d1), which comes after F s1 mb1,
 * which waits for F s0 mb1 (d0), which comes after BW s0 mb0: a cycle. Each
 * device's order is consistent on its own, so sc_verify_passes accepts it;
 * the timing (dataflow), and with it lowering, finds the cycle. */
static sc_prog *cycle_prog(void)
{
    sc_prog *pg = sc_prog_new(2, 2, 2);
    const pass d0[] = {{SC_OP_F, 0, 0}, {SC_OP_BW, 0, 0}, {SC_OP_F, 0, 1}, {SC_OP_BW, 0, 1}};
    const pass d1[] = {{SC_OP_F, 1, 0}, {SC_OP_F, 1, 1}, {SC_OP_BW, 1, 0}, {SC_OP_BW, 1, 1}};
    push_all(pg, 0, d0, 4);
    push_all(pg, 1, d1, 4);
    return pg;
}

TEST(cross_device_cycle)
{
    sc_prog *pg = cycle_prog();
    CHECK(sc_verify_passes(pg) == SC_OK);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    const char *msg = sc_errmsg(pg);
    CHECK_STR(msg, "cycle");
    CHECK_STR(msg, "d0");
    CHECK_STR(msg, "d1");
    CHECK_STR(msg, "BW s0 mb0");
    CHECK_STR(msg, "F s1 mb1");
    CHECK(!sc_prog_is_lowered(pg));
    /* The same through each step. */
    CHECK(sc_lower(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "cycle");
    double start[8], end[8];
    CHECK(sc_dataflow(pg, start, end, NULL) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "d0");
    CHECK_STR(sc_errmsg(pg), "d1");
    sc_sim *sim = (sc_sim *)1;
    CHECK(sc_simulate(pg, &sim) == SC_ERR_PROGRAM);
    CHECK(sim == NULL);
    CHECK(sc_verify_streams(pg) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "not lowered");

    /* Fixed (device 1 in 1F1B order), the program checks. */
    sc_prog_clear_order(pg, 1);
    const pass d1[] = {{SC_OP_F, 1, 0}, {SC_OP_BW, 1, 0}, {SC_OP_F, 1, 1}, {SC_OP_BW, 1, 1}};
    push_all(pg, 1, d1, 4);
    CHECK(sc_check(pg) == SC_OK);
    sc_prog_free(pg);

    /* Three devices: d1 and d2 form the cycle (d1 runs BW mb0 before F mb1,
     * d2 runs F mb1 before BW mb0); d0 only waits for it. The message names
     * the cycle, not the device waiting on it. */
    int P = 3;
    pg = sc_prog_new(P, P, 2);
    for (int d = 0; d < P; d++) {
        if (d < P - 1) {
            const pass o[] = {{SC_OP_F, d, 0}, {SC_OP_BW, d, 0}, {SC_OP_F, d, 1}, {SC_OP_BW, d, 1}};
            push_all(pg, d, o, 4);
        } else {
            const pass o[] = {{SC_OP_F, d, 0}, {SC_OP_F, d, 1}, {SC_OP_BW, d, 0}, {SC_OP_BW, d, 1}};
            push_all(pg, d, o, 4);
        }
    }
    CHECK(sc_verify_passes(pg) == SC_OK);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "cycle");
    CHECK_STR(sc_errmsg(pg), "d1 #1 (BW s1 mb0)");
    CHECK_STR(sc_errmsg(pg), "d2 #1 (F s2 mb1)");
    CHECK(strstr(sc_errmsg(pg), "d0 #") == NULL);
    sc_prog_free(pg);
}

TEST(placement)
{
    sc_prog *pg = sc_prog_new(2, 4, 1);
    CHECK(sc_prog_set_placement(pg, (sc_place)7, NULL) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "placement");
    CHECK(sc_prog_stage_device(pg, 3) == 1); /* still loop */
    sc_prog_free(pg);

    pg = sc_prog_new(2, 6, 1); /* V needs S == 2P */
    CHECK(sc_prog_set_placement(pg, SC_PLACE_V, NULL) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "placement");
    CHECK(sc_prog_stage_device(pg, 5) == 1);
    sc_prog_free(pg);

    pg = sc_prog_new(2, 2, 1);
    CHECK(sc_prog_set_placement(pg, SC_PLACE_V, NULL) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "placement");
    const int bad[] = {0, 2};
    CHECK(sc_prog_set_placement(pg, SC_PLACE_TABLE, bad) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "placement");
    const int neg[] = {-1, 0};
    CHECK(sc_prog_set_placement(pg, SC_PLACE_TABLE, neg) == SC_ERR_ARG);
    const int empty[] = {0, 0}; /* device 1 holds nothing */
    CHECK(sc_prog_set_placement(pg, SC_PLACE_TABLE, empty) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "placement");
    CHECK_STR(sc_errmsg(pg), "device 1");
    const int swap[] = {1, 0};
    CHECK(sc_prog_set_placement(pg, SC_PLACE_TABLE, swap) == SC_OK);
    CHECK(sc_prog_stage_device(pg, 0) == 1);
    /* The one-stage-per-device rules need stage s on device s. */
    CHECK(sc_rule_fill(pg, "1f1b") == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "loop placement");
    sc_prog_free(pg);
}

TEST(costs)
{
    sc_prog *pg = sc_prog_new(2, 2, 1);
    CHECK(sc_prog_set_cost(pg, -1, -1, 1, 1) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "cost");
    CHECK(sc_prog_set_cost(pg, 0, 1, -0.5, 1) == SC_ERR_ARG);
    CHECK(sc_prog_set_cost(pg, 0, 1, 1, NAN) == SC_ERR_ARG);
    CHECK(sc_prog_set_cost(pg, -1, NAN, 1, 1) == SC_ERR_ARG);
    CHECK(sc_prog_set_cost(pg, -1, INFINITY, 1, 1) == SC_ERR_ARG);
    CHECK(sc_prog_set_cost(pg, 2, 1, 1, 1) == SC_ERR_ARG); /* stage out of range */
    CHECK_STR(sc_errmsg(pg), "out of range");
    CHECK(sc_prog_set_cost(pg, -2, 1, 1, 1) == SC_ERR_ARG);
    /* Refused values leave the costs as they were (P/S = 1). */
    CHECK(sc_prog_tf(pg, 0) == 1 && sc_prog_tb(pg, 0) == 1 && sc_prog_tw(pg, 0) == 1);
    CHECK(sc_prog_set_comm(pg, -0.1) == SC_ERR_ARG);
    CHECK(sc_prog_set_comm(pg, NAN) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "tcomm");
    CHECK(sc_prog_tcomm(pg) == 0);
    CHECK(sc_prog_set_mem(pg, -1, -1) == SC_ERR_ARG);
    CHECK(sc_prog_set_mem(pg, 0, NAN) == SC_ERR_ARG);
    CHECK(sc_prog_set_mem(pg, 5, 1) == SC_ERR_ARG);
    CHECK(sc_prog_set_w_keep(pg, 1.5) == SC_ERR_ARG);
    CHECK(sc_prog_set_w_keep(pg, -0.01) == SC_ERR_ARG);
    CHECK(sc_prog_set_w_keep(pg, NAN) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "w_keep");
    CHECK(sc_prog_w_keep(pg) == 1);
    /* Zero is a valid cost. */
    CHECK(sc_prog_set_cost(pg, 0, 0, 0, 0) == SC_OK);
    sc_prog_free(pg);
}

TEST(sizes)
{
    static const int bad[][3] = {
        {0, 1, 1}, {-3, 1, 1}, {SC_MAX_DEVICES + 1, SC_MAX_DEVICES + 1, 1}, /* p */
        {4, 3, 1}, {1, SC_MAX_STAGES + 1, 1},                               /* stages */
        {2, 2, 0}, {2, 2, -1}, {1, 1, SC_MAX_MICROBATCHES + 1},             /* m */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sc_prog *pg = sc_prog_new(bad[i][0], bad[i][1], bad[i][2]);
        CHECK(pg == NULL);
        sc_prog_free(pg);
        CHECK_STR(sc_new_errmsg(), "out of range");
    }
    CHECK(sc_prog_new(0, 1, 1) == NULL);
    CHECK_STR(sc_new_errmsg(), "devices");
    CHECK(sc_prog_new(2, 2, 0) == NULL);
    CHECK_STR(sc_new_errmsg(), "microbatches");
    /* Each size in range, the product not. */
    CHECK(sc_prog_new(1000, 1000, 1000000) == NULL);
    CHECK_STR(sc_new_errmsg(), "too large");

    /* Pushes out of range. */
    sc_prog *pg = sc_prog_new(2, 2, 2);
    CHECK(sc_prog_push(pg, 2, SC_OP_F, 0, 0) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "out of range");
    CHECK(sc_prog_push(pg, -1, SC_OP_F, 0, 0) == SC_ERR_ARG);
    CHECK(sc_prog_push(pg, 0, SC_OP_SEND, 0, 0) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "not a compute pass");
    CHECK(sc_prog_push(pg, 0, -1, 0, 0) == SC_ERR_ARG);
    CHECK(sc_prog_push(pg, 0, SC_OP_F, 2, 0) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "stages are 0..1");
    CHECK(sc_prog_push(pg, 0, SC_OP_F, 0, 2) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "microbatches are 0..1");
    size_t n;
    sc_prog_order(pg, 0, &n);
    CHECK(n == 0);
    sc_prog_free(pg);
}

TEST(rules)
{
    sc_prog *pg = sc_prog_new(2, 2, 4);
    CHECK(sc_rule_fill(pg, "2f2b") == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "unknown rule");
    CHECK_STR(sc_errmsg(pg), "2f2b");
    CHECK(sc_rule_fill(pg, "") == SC_ERR_ARG);
    int names = 0;
    for (int i = 0; sc_rule_names[i]; i++, names++)
        if (strstr(sc_rule_names[i], "-v") == NULL)
            CHECK(sc_rule_fill(pg, sc_rule_names[i]) == SC_OK);
        else /* the V rules need two stages per device */
            CHECK(sc_rule_fill(pg, sc_rule_names[i]) == SC_ERR_ARG);
    CHECK(names == 7);
    sc_prog_free(pg);

    /* One stage per device, or not. */
    pg = sc_prog_new(2, 4, 4);
    CHECK(sc_rule_fill(pg, "1f1b") == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "one stage per device");
    CHECK(sc_rule_fill(pg, "zb-h1") == SC_ERR_ARG);
    CHECK(sc_rule_fill(pg, "gpipe") == SC_ERR_ARG);
    /* Interleaved: m a multiple of p, m >= p, loop placement, S multiple of P. */
    CHECK(sc_rule_fill(pg, "interleaved") == SC_OK);
    CHECK(sc_prog_set_placement(pg, SC_PLACE_V, NULL) == SC_OK);
    CHECK(sc_rule_fill(pg, "interleaved") == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "loop placement");
    sc_prog_free(pg);
    pg = sc_prog_new(4, 8, 6);
    CHECK(sc_rule_fill(pg, "interleaved") == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "multiple of p");
    sc_prog_free(pg);
    pg = sc_prog_new(4, 8, 2);
    CHECK(sc_rule_fill(pg, "interleaved") == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "multiple of p");
    sc_prog_free(pg);
    pg = sc_prog_new(2, 3, 2);
    CHECK(sc_rule_fill(pg, "interleaved") == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "multiple of devices");
    sc_prog_free(pg);
}

/* 1F1B block on P = 2 with unit costs (see test_interp.c): F at s, BW at
 * 2 + 2(1-s), interval 3. */
TEST(blocks)
{
    sc_prog *pg = sc_prog_new(2, 2, 4);
    double f[2] = {0, 1}, bw[2] = {4, 2};
    sc_block blk = {.off = {f, NULL, NULL, bw}, .interval = 3};
    CHECK(sc_block_check(pg, &blk) == SC_OK);

    /* BW s0 at 3 = F s0 at 0 modulo 3. */
    bw[0] = 3;
    CHECK(sc_block_check(pg, &blk) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "collide");
    CHECK_STR(sc_errmsg(pg), "d0");
    /* A partial overlap: BW s0 at 5.5 runs into F s0 of the next microbatch (6). */
    bw[0] = 5.5;
    CHECK(sc_block_unroll(pg, &blk) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "collide");
    bw[0] = 4;

    /* BW s1 at -1 (= 2 modulo 3: no collision) starts before F s1 (1..2)
     * is done. */
    bw[1] = -1;
    CHECK(sc_block_check(pg, &blk) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "too early");
    CHECK_STR(sc_errmsg(pg), "BW s1 starts at -1");
    bw[1] = 2;
    /* F s1 at 0.5 before F s0 (0..1) is done; d1's passes still apart
     * (F 0.5..1.5, BW 1.5..3.5). */
    f[1] = 0.5;
    bw[1] = 1.5;
    CHECK(sc_block_check(pg, &blk) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "too early");
    CHECK_STR(sc_errmsg(pg), "F s1 starts at 0.5");
    f[1] = 1;
    bw[1] = 2;
    /* BW s0 at 1 (d0: F 0..1, BW 1..3) before BW s1 (2..4) is done. */
    bw[0] = 1;
    CHECK(sc_block_check(pg, &blk) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "(3 too early)");
    bw[0] = 4;
    /* Offsets are in compute time: T_comm does not make a block invalid
     * (block.h); the squeeze adds it when it times the passes. */
    CHECK(sc_prog_set_comm(pg, 0.5) == SC_OK);
    CHECK(sc_block_check(pg, &blk) == SC_OK);
    CHECK(sc_prog_set_comm(pg, 0) == SC_OK);

    /* The interval: positive and at least as long as each pass. */
    blk.interval = 0;
    CHECK(sc_block_check(pg, &blk) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "interval");
    blk.interval = NAN;
    CHECK(sc_block_check(pg, &blk) == SC_ERR_ARG);
    blk.interval = 1.5; /* BW takes 2: it collides with itself */
    CHECK(sc_block_check(pg, &blk) == SC_ERR_PROGRAM);
    CHECK(sc_prog_set_cost(pg, -1, 2, 0.5, 0.5) == SC_OK); /* F takes 2 */
    CHECK(sc_block_check(pg, &blk) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "longer than the interval");
    CHECK(sc_prog_set_cost(pg, -1, 1, 1, 1) == SC_OK);
    blk.interval = 3;

    /* Offsets: a NaN, or split backward with only B. */
    bw[1] = NAN;
    CHECK(sc_block_check(pg, &blk) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "not a number");
    bw[1] = 2;
    double b[2] = {4, 2};
    sc_block half = {.off = {f, b, NULL, NULL}, .interval = 3};
    CHECK(sc_block_check(pg, &half) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "B and W");

    /* A refused block leaves the orders alone. */
    CHECK(sc_block_unroll(pg, &blk) == SC_OK);
    size_t n0;
    sc_prog_order(pg, 0, &n0);
    bw[0] = 3;
    CHECK(sc_block_unroll(pg, &blk) == SC_ERR_PROGRAM);
    size_t n1;
    sc_prog_order(pg, 0, &n1);
    CHECK(n0 == 8 && n1 == 8);
    sc_prog_free(pg);
}

/* Zero-cost passes (a regression test). Lowering ranks every transfer by
 * the dataflow time its data is produced; with zero costs and T_comm = 0 many
 * transfers share one instant, and an earlier lowering placed a RECV before
 * the zero-length pass starting at that instant but the SEND after it, so
 * two devices posted their groups in opposite orders. 1F1B on two devices
 * with every cost 0 was lowered to
 *   d0: [RECV grad s0] F s0 [SEND act s1] BW s0
 *   d1: [RECV act s1] F s1 BW s1 [SEND grad s0]
 * which deadlocks (below, built by hand). The rank now includes the place of
 * the producer in the dataflow run, and every such program must check. */
TEST(zero_costs_lower_without_deadlock)
{
    static const double zero[][3] = {{0, 0, 0}, {0, 1, 1}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}};
    static const char *const rules[] = {"gpipe", "1f1b", "zb-h1", "zb-h2"};
    for (int z = 0; z < 5; z++) {
        for (int p = 2; p <= 4; p++) {
            for (int m = 1; m <= 2 * p; m++) {
                sc_prog *pg = sc_prog_new(p, p, m);
                CHECK(sc_prog_set_cost(pg, -1, zero[z][0], zero[z][1], zero[z][2]) == SC_OK);
                for (int r = 0; r < 4; r++) {
                    CHECK(sc_rule_fill(pg, rules[r]) == SC_OK);
                    sc_status st = sc_check(pg);
                    CHECK(st == SC_OK);
                    if (st)
                        fprintf(stderr, "  %s p=%d m=%d costs %g %g %g: %s\n", rules[r], p, m,
                                zero[z][0], zero[z][1], zero[z][2], sc_errmsg(pg));
                }
                sc_prog_free(pg);
                if (m % p)
                    continue;
                pg = sc_prog_new(p, 2 * p, m);
                CHECK(sc_prog_set_cost(pg, -1, zero[z][0], zero[z][1], zero[z][2]) == SC_OK);
                CHECK(sc_rule_fill(pg, "interleaved") == SC_OK);
                sc_status st = sc_check(pg);
                CHECK(st == SC_OK);
                if (st)
                    fprintf(stderr, "  interleaved p=%d m=%d: %s\n", p, m, sc_errmsg(pg));
                sc_prog_free(pg);
            }
        }
    }
    /* Everything free: the whole step takes no time. */
    sc_prog *pg = sc_prog_new(2, 2, 1);
    CHECK(sc_prog_set_cost(pg, -1, 0, 0, 0) == SC_OK);
    CHECK(sc_rule_fill(pg, "1f1b") == SC_OK);
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim) {
        CHECK(sim->makespan == 0);
        CHECK(sim->bubble_rate == 0);
    }
    sc_sim_free(sim);
    sc_prog_free(pg);
}

/* The deadlock engine (the replay behind sc_verify_streams and sc_simulate)
 * on hand-lowered streams: the early-posted RECV of
 * docs/semantics.md#the-semantics (PyTorch issue 172668). Device 0 posts its RECV of the gradient before its forward,
 * in a group of its own; its SEND of the activation comes in the next group,
 * which cannot start before the RECV group completes:
 *   d0: [RECV grad s0 mb0 <- d1] F s0 mb0 [SEND act s1 mb0 -> d1] BW s0 mb0
 *   d1: [RECV act s1 mb0 <- d0] F s1 mb0 BW s1 mb0 [SEND grad s0 mb0 -> d0]
 * d0's RECV waits for d1's SEND, behind d1's RECV, which waits for d0's
 * SEND, behind d0's RECV. The passes alone are fine (sc_verify_passes). */
typedef struct xi {
    int d;
    sc_instr in;
} xi;

static sc_prog *hand_lowered(const xi *v, int n)
{
    sc_prog *pg = sc_prog_new(2, 2, 1);
    for (int i = 0; i < n; i++)
        CHECK(sc_prog_push_stream(pg, v[i].d, v[i].in) == SC_OK);
    return pg;
}

#define CI(d_, op_, s_) {d_, {.op = op_, .stage = s_, .mb = 0, .peer = -1}}
#define XI(d_, op_, dir_, s_, peer_)                                                               \
    {d_, {.op = op_, .dir = dir_, .stage = s_, .mb = 0, .peer = peer_}}

TEST(deadlock_early_recv)
{
    const xi early[] = {
        XI(0, SC_OP_RECV, SC_DIR_GRAD, 0, 1), CI(0, SC_OP_F, 0),
        XI(0, SC_OP_SEND, SC_DIR_ACT, 1, 1),  CI(0, SC_OP_BW, 0),
        XI(1, SC_OP_RECV, SC_DIR_ACT, 1, 0),  CI(1, SC_OP_F, 1),
        CI(1, SC_OP_BW, 1),                   XI(1, SC_OP_SEND, SC_DIR_GRAD, 0, 0),
    };
    sc_prog *pg = hand_lowered(early, 8);
    CHECK(sc_prog_is_lowered(pg));
    CHECK(sc_verify_passes(pg) == SC_OK);
    CHECK(sc_verify_streams(pg) == SC_ERR_DEADLOCK);
    const char *msg = sc_errmsg(pg);
    CHECK_STR(msg, "deadlock");
    CHECK_STR(msg, "d0");
    CHECK_STR(msg, "d1");
    CHECK_STR(msg, "RECV grad s0 mb0 <- d1");
    CHECK_STR(msg, "RECV act s1 mb0 <- d0");
    CHECK_STR(msg, "cycle closes");
    CHECK(sc_status_exit_code(SC_ERR_DEADLOCK) != sc_status_exit_code(SC_ERR_PROGRAM));
    /* sc_check and the simulator replay the same streams and agree. */
    CHECK(sc_check(pg) == SC_ERR_DEADLOCK);
    sc_sim *sim = (sc_sim *)1;
    CHECK(sc_simulate(pg, &sim) == SC_ERR_DEADLOCK);
    CHECK(sim == NULL);
    sc_prog_free(pg);

    /* Posting the RECV in the same group as the SEND (one NCCL group) is
     * fine: the group runs both, d1 receives, and the gradient comes back.
     * F 1 + F 1 + BW 2 + BW 2 = 6. */
    const xi grouped[] = {
        CI(0, SC_OP_F, 0),
        XI(0, SC_OP_SEND, SC_DIR_ACT, 1, 1),  XI(0, SC_OP_RECV, SC_DIR_GRAD, 0, 1),
        CI(0, SC_OP_BW, 0),
        XI(1, SC_OP_RECV, SC_DIR_ACT, 1, 0),  CI(1, SC_OP_F, 1),
        CI(1, SC_OP_BW, 1),                   XI(1, SC_OP_SEND, SC_DIR_GRAD, 0, 0),
    };
    pg = hand_lowered(grouped, 8);
    CHECK(sc_check(pg) == SC_OK);
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim)
        CHECK(fabs(sim->makespan - 6) < 1e-12);
    sc_sim_free(sim);
    sc_prog_free(pg);

    /* The lowering of the same passes (sc_prog_push) never posts early. */
    pg = sc_prog_new(2, 2, 1);
    CHECK(sc_rule_fill(pg, "1f1b") == SC_OK);
    CHECK(sc_check(pg) == SC_OK);
    size_t n;
    const sc_instr *v = sc_prog_stream(pg, 0, &n);
    CHECK(n > 0 && v[0].op == SC_OP_F);
    sc_prog_free(pg);
}

/* Status names and exit codes are distinct (the CLI relies on them). */
TEST(statuses)
{
    for (int a = 0; a < SC_STATUS_COUNT; a++) {
        CHECK(sc_status_name((sc_status)a)[0] != '\0');
        for (int b = a + 1; b < SC_STATUS_COUNT; b++) {
            CHECK(sc_status_exit_code((sc_status)a) != sc_status_exit_code((sc_status)b));
            CHECK(strcmp(sc_status_name((sc_status)a), sc_status_name((sc_status)b)) != 0);
        }
    }
    CHECK(sc_status_exit_code(SC_OK) == 0);
    CHECK_STR(sc_status_name((sc_status)99), "unknown");
    CHECK(strcmp(sc_op_name(SC_OP_BW), "BW") == 0);
    CHECK(strcmp(sc_op_name(99), "?") == 0);
}

int main(void)
{
    RUN(pass_missing);
    RUN(pass_twice);
    RUN(wrong_device);
    RUN(dependency_out_of_order);
    RUN(cross_device_cycle);
    RUN(placement);
    RUN(costs);
    RUN(sizes);
    RUN(rules);
    RUN(blocks);
    RUN(zero_costs_lower_without_deadlock);
    RUN(deadlock_early_recv);
    RUN(statuses);
    return harness_done("errors");
}
