/*
 * test_pair.c — overlapped pairs (docs/semantics.md#overlapped-pairs): the
 * instruction packs both halves; the verifier counts each half as its pass
 * and refuses a dependency between the two; lowering gives a pair both
 * halves' transfers; the replay makes it wait for both inputs (a deadlock
 * through its B half is found) and the simulator times it as one slot of
 * tfb (plus the all-to-all left exposed) and counts its F half's memory
 * before its B half frees.
 */
#include "compile.h"
#include "harness.h"
#include "ir/ir.h"
#include "ir/ir_impl.h"
#include "ir/text.h"
#include "sim/sim.h"

#include <stdlib.h>

static sc_instr C(int op, int s, int mb) { return (sc_instr){.op = (uint8_t)op, .stage = s, .mb = mb, .peer = -1}; }
static sc_instr X(int op, int dir, int s, int mb, int peer)
{
    return (sc_instr){.op = (uint8_t)op, .dir = (uint8_t)dir, .stage = s, .mb = mb, .peer = peer};
}
static sc_instr END(int op) { return (sc_instr){.op = (uint8_t)op, .stage = -1, .mb = -1, .peer = -1}; }

TEST(packing)
{
    /* The backward half's stage uses 16 bits: its high byte in flags. */
    int stages[] = {0, 1, 255, 256, 4097, 65535};
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++) {
        sc_instr in = sc_pair_make(7, 123456, i % 2 ? SC_OP_BW : SC_OP_B, stages[i], 999999);
        sc_instr h[2];
        CHECK(sc_op_is_pair(in.op) && sc_op_is_slot(in.op) && !sc_op_is_pass(in.op));
        CHECK(sc_instr_halves(&in, h) == 2);
        CHECK(h[0].op == SC_OP_F && h[0].stage == 7 && h[0].mb == 123456);
        CHECK(h[1].op == (i % 2 ? SC_OP_BW : SC_OP_B) && h[1].stage == stages[i] &&
              h[1].mb == 999999);
        sc_instr_shift_mb(&in, 10);
        CHECK(in.mb == 123466 && sc_pair_half(&in).mb == 1000009);
    }
    sc_instr f = C(SC_OP_F, 3, 4), h[2];
    CHECK(sc_instr_halves(&f, h) == 1 && h[0].op == SC_OP_F && h[0].stage == 3);
    char buf[64];
    sc_instr p = sc_pair_make(0, 1, SC_OP_BW, 300, 0);
    sc_instr_format(&p, buf, sizeof buf);
    CHECK_STR(buf, "F s0 mb1 + BW s300 mb0");
}

/* 1F1B on two devices whose device 0 runs F s0 mb1 together with BW s0
 * mb0. */
static sc_prog *one_pair(double tfb, double ta)
{
    sc_prog *pg = sc_prog_new(2, 2, 2);
    CHECK(sc_prog_set_cost(pg, -1, 1, 1, 1) == SC_OK);
    if (tfb == tfb)
        CHECK(sc_prog_set_cost_pair(pg, -1, tfb) == SC_OK);
    CHECK(sc_prog_set_cost_a2a(pg, -1, ta) == SC_OK);
    CHECK(sc_prog_push(pg, 0, SC_OP_F, 0, 0) == SC_OK);
    CHECK(sc_prog_push_pair(pg, 0, 0, 1, SC_OP_BW, 0, 0) == SC_OK);
    CHECK(sc_prog_push(pg, 0, SC_OP_BW, 0, 1) == SC_OK);
    CHECK(sc_order_parse(pg, 1, "F0 BW0 F1 BW1", 13) == SC_OK);
    return pg;
}

TEST(timing_and_streams)
{
    sc_prog *pg = one_pair(1.5, 0);
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    /* d0 F0 [0,1]; d1 F0 [1,2] BW0 [2,4]; d0's pair waits for the gradient
     * (4) and lasts tfb + tw = 2.5: [4,6.5]; d1 F1 [6.5,7.5] BW1 [7.5,9.5];
     * d0 BW1 [9.5,11.5]. */
    if (sim) {
        CHECK_NEAR(sim->makespan, 11.5, 1e-12);
        CHECK_NEAR(sim->busy[0], 1 + 2.5 + 2, 1e-12);
    }
    sc_sim_free(sim);
    /* The pair gets both halves' transfers: the gradient's RECV before it,
     * the activation's SEND after it. */
    size_t n;
    const sc_instr *v = sc_prog_stream(pg, 0, &n);
    int at = -1, recv = -1, send = -1;
    for (size_t k = 0; k < n; k++) {
        if (sc_op_is_pair(v[k].op))
            at = (int)k;
        if (v[k].op == SC_OP_RECV && v[k].mb == 0)
            recv = (int)k;
        if (v[k].op == SC_OP_SEND && v[k].mb == 1)
            send = (int)k;
    }
    CHECK(at > 0 && recv >= 0 && recv < at && send > at);
    sc_prog_free(pg);
    /* The default tfb is tf + tb: no gain, the pair as long as its halves. */
    pg = one_pair(NAN, 0);
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim)
        CHECK_NEAR(sim->busy[0], 1 + 3 + 2, 1e-12);
    sc_sim_free(sim);
    sc_prog_free(pg);
    /* An all-to-all part of 0.75: each pass alone takes 0.75 longer (W
     * has none); in the pair each half's is hidden under the other's
     * compute (1 and 2), the gain tf + tb - tfb still taken. */
    pg = one_pair(1.5, 0.75);
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim)
        CHECK_NEAR(sim->busy[0], 1.75 + 2.5 + 2.75, 1e-12);
    sc_sim_free(sim);
    sc_prog_free(pg);
    /* An all-to-all longer than the partner's compute shows what is left:
     * F's 2.5 against BW's 2 (0.5 exposed), BW's 2.5 against F's 1 (1.5). */
    pg = one_pair(NAN, 2.5);
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim)
        CHECK_NEAR(sim->busy[0], 3.5 + (3 + 0.5 + 1.5) + 4.5, 1e-12);
    sc_sim_free(sim);
    sc_prog_free(pg);
}

TEST(verifier)
{
    /* The halves of a pair run together: one may not need the other. */
    sc_prog *pg = sc_prog_new(1, 1, 1);
    CHECK(sc_prog_push_pair(pg, 0, 0, 0, SC_OP_BW, 0, 0) == SC_OK);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "dependency inside a pair on d0: BW s0 mb0 needs F s0 mb0, which "
                             "runs beside it in the same pair (#0)");
    sc_prog_free(pg);
    /* Each half counts as its pass: a pass given alone and in a pair is
     * twice. */
    pg = sc_prog_new(2, 2, 2);
    CHECK(sc_order_parse(pg, 0, "F0 F1 BW0 BW1", 13) == SC_OK);
    CHECK(sc_prog_push_pair(pg, 1, 1, 0, SC_OP_BW, 1, 1) == SC_OK);
    CHECK(sc_order_parse(pg, 1, "F1 BW0 BW1", 10) == SC_OK);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "pass twice: BW s1 mb1 is at d1 #0 and at d1 #3");
    sc_prog_free(pg);
    /* A pair names stages of its own device and kinds F with B or BW. */
    pg = sc_prog_new(2, 2, 2);
    CHECK(sc_prog_push_pair(pg, 0, 0, 0, SC_OP_BW, 1, 0) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "the pair's BW s1 mb0 is on d0, but stage 1 is placed on d1");
    CHECK(sc_prog_push_pair(pg, 0, 0, 0, SC_OP_W, 0, 1) == SC_ERR_ARG);
    CHECK(sc_prog_push_pair(pg, 0, 0, 2, SC_OP_B, 0, 1) == SC_ERR_ARG);
    sc_prog_free(pg);
}

TEST(memory)
{
    /* One device, two stages (0.5 units each): the pair's F half allocates
     * before its BW half frees, so the peak is 1.5, not 1. */
    sc_prog *pg = sc_prog_new(1, 2, 2);
    const char *a = "F0 F0.1", *b = "BW0 F1.1 BW1.1 BW1";
    CHECK(sc_order_parse(pg, 0, a, strlen(a)) == SC_OK);
    CHECK(sc_prog_push_pair(pg, 0, 0, 1, SC_OP_BW, 1, 0) == SC_OK);
    CHECK(sc_order_parse(pg, 0, b, strlen(b)) == SC_OK);
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim) {
        CHECK_NEAR(sim->peak_mem[0], 1.5, 1e-12);
        CHECK_NEAR(sim->mem[sim->offset[0] + 2], 1.0, 1e-12); /* after the pair */
    }
    sc_sim_free(sim);
    sc_prog_free(pg);
}

/* Streams given as they are: device 0's pair reads the gradient of mb0,
 * which device 1 makes only from the activation device 0 sends after the
 * pair (`bad`), or before it. */
static sc_prog *given(int bad)
{
    sc_prog *pg = sc_prog_new(2, 2, 2);
    sc_instr pair = sc_pair_make(0, 1, SC_OP_BW, 0, 0);
    sc_instr good0[] = {C(SC_OP_F, 0, 0), X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1),
                        X(SC_OP_RECV, SC_DIR_GRAD, 0, 0, 1), pair,
                        X(SC_OP_SEND, SC_DIR_ACT, 1, 1, 1), X(SC_OP_RECV, SC_DIR_GRAD, 0, 1, 1),
                        C(SC_OP_BW, 0, 1), END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    sc_instr bad0[] = {C(SC_OP_F, 0, 0), X(SC_OP_RECV, SC_DIR_GRAD, 0, 0, 1), pair,
                       X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1), X(SC_OP_SEND, SC_DIR_ACT, 1, 1, 1),
                       X(SC_OP_RECV, SC_DIR_GRAD, 0, 1, 1), C(SC_OP_BW, 0, 1),
                       END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    sc_instr d1[] = {X(SC_OP_RECV, SC_DIR_ACT, 1, 0, 0), C(SC_OP_F, 1, 0), C(SC_OP_BW, 1, 0),
                     X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0), X(SC_OP_RECV, SC_DIR_ACT, 1, 1, 0),
                     C(SC_OP_F, 1, 1), C(SC_OP_BW, 1, 1), X(SC_OP_SEND, SC_DIR_GRAD, 0, 1, 0),
                     END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    for (size_t i = 0; i < 9; i++)
        CHECK(sc_prog_push_stream(pg, 0, bad ? bad0[i] : good0[i]) == SC_OK);
    for (size_t i = 0; i < 10; i++)
        CHECK(sc_prog_push_stream(pg, 1, d1[i]) == SC_OK);
    return pg;
}

TEST(given_streams)
{
    sc_prog *pg = given(0);
    CHECK(sc_check(pg) == SC_OK);
    sc_prog_free(pg);
    pg = given(1);
    CHECK(sc_check(pg) == SC_ERR_DEADLOCK);
    CHECK_STR(sc_errmsg(pg), "d0 #2 (F s0 mb1 + BW s0 mb0): its running group's RECV grad s0 "
                             "mb0 <- d1 is unmatched, waits for d1");
    sc_prog_free(pg);
    /* A pair whose B half reads a gradient no RECV brings. */
    pg = sc_prog_new(2, 2, 2);
    sc_instr d0[] = {C(SC_OP_F, 0, 0), X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1),
                     sc_pair_make(0, 1, SC_OP_BW, 0, 0), X(SC_OP_SEND, SC_DIR_ACT, 1, 1, 1),
                     X(SC_OP_RECV, SC_DIR_GRAD, 0, 0, 1), X(SC_OP_RECV, SC_DIR_GRAD, 0, 1, 1),
                     C(SC_OP_BW, 0, 1), END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    sc_instr d1[] = {X(SC_OP_RECV, SC_DIR_ACT, 1, 0, 0), X(SC_OP_RECV, SC_DIR_ACT, 1, 1, 0),
                     C(SC_OP_F, 1, 0), C(SC_OP_BW, 1, 0), X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0),
                     C(SC_OP_F, 1, 1), C(SC_OP_BW, 1, 1), X(SC_OP_SEND, SC_DIR_GRAD, 0, 1, 0),
                     END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    for (size_t i = 0; i < 9; i++)
        sc_prog_push_stream(pg, 0, d0[i]);
    for (size_t i = 0; i < 10; i++)
        sc_prog_push_stream(pg, 1, d1[i]);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "d0 #2 (F s0 mb1 + BW s0 mb0) reads gradients from d1 but no RECV "
                             "of it comes before it");
    sc_prog_free(pg);
}

TEST(refused_with)
{
    sc_prog *pg = one_pair(NAN, 0);
    CHECK(sc_prog_set_optim_sync(pg, SC_SYNC_POSTVAL) == SC_OK);
    CHECK(sc_check(pg) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "overlapped pairs (F+B) do not go with post-validation");
    sc_prog_free(pg);
    /* Several steps repeat the pair with both halves' microbatches moved. */
    pg = one_pair(NAN, 0);
    CHECK(sc_prog_set_steps(pg, 3) == SC_OK);
    CHECK(sc_check(pg) == SC_OK);
    size_t n;
    const sc_instr *v = sc_prog_stream(pg, 0, &n);
    int pairs = 0;
    for (size_t k = 0; k < n; k++)
        if (sc_op_is_pair(v[k].op)) {
            CHECK(v[k].mb == 1 + 2 * pairs && sc_pair_half(&v[k]).mb == 2 * pairs);
            pairs++;
        }
    CHECK(pairs == 3);
    sc_prog_free(pg);
}

int main(void)
{
    RUN(packing);
    RUN(timing_and_streams);
    RUN(verifier);
    RUN(memory);
    RUN(given_streams);
    RUN(refused_with);
    return harness_done("pair");
}
