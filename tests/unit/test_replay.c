/*
 * test_replay.c — the verifier's replay of the communication semantics on
 * hand-lowered streams (sc_prog_push_stream): matching, data flow, and the
 * posting order of transfers between two devices, and the early-RECV deadlock
 * with its wait-for cycle named.
 */
#include "compile.h"
#include "harness.h"
#include "ir/ir.h"
#include "sim/sim.h"
#include "check/verify.h"
#include "ir/p2p.h"

#include <stdlib.h>

static sc_instr C(int op, int s, int mb) { return (sc_instr){.op = (uint8_t)op, .stage = s, .mb = mb, .peer = -1}; }
static sc_instr X(int op, int dir, int s, int mb, int peer)
{
    return (sc_instr){.op = (uint8_t)op, .dir = (uint8_t)dir, .stage = s, .mb = mb, .peer = peer};
}
static sc_instr END(int op) { return (sc_instr){.op = (uint8_t)op, .stage = -1, .mb = -1, .peer = -1}; }

/* Two devices, two microbatches. d0 sends activations of mb0 then mb1;
 * d1 receives mb1 first (its own group) then mb0, when `crossed`. */
static sc_prog *two_devices(int crossed, int merge_recvs)
{
    sc_prog *pg = sc_prog_new(2, 2, 2);
    sc_instr d0[] = {C(SC_OP_F, 0, 0), X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1),
                     C(SC_OP_F, 0, 1), X(SC_OP_SEND, SC_DIR_ACT, 1, 1, 1),
                     X(SC_OP_RECV, SC_DIR_GRAD, 0, 0, 1), C(SC_OP_BW, 0, 0),
                     X(SC_OP_RECV, SC_DIR_GRAD, 0, 1, 1), C(SC_OP_BW, 0, 1),
                     END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    int a = crossed ? 1 : 0, b = crossed ? 0 : 1;
    sc_instr d1s[] = {X(SC_OP_RECV, SC_DIR_ACT, 1, a, 0), C(SC_OP_F, 1, a),
                      X(SC_OP_RECV, SC_DIR_ACT, 1, b, 0), C(SC_OP_F, 1, b),
                      C(SC_OP_BW, 1, 0), X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0),
                      C(SC_OP_BW, 1, 1), X(SC_OP_SEND, SC_DIR_GRAD, 0, 1, 0),
                      END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    sc_instr d1m[] = {X(SC_OP_RECV, SC_DIR_ACT, 1, a, 0), X(SC_OP_RECV, SC_DIR_ACT, 1, b, 0),
                      C(SC_OP_F, 1, a), C(SC_OP_F, 1, b),
                      C(SC_OP_BW, 1, 0), X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0),
                      C(SC_OP_BW, 1, 1), X(SC_OP_SEND, SC_DIR_GRAD, 0, 1, 0),
                      END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    for (size_t i = 0; i < sizeof d0 / sizeof d0[0]; i++)
        sc_prog_push_stream(pg, 0, d0[i]);
    for (size_t i = 0; i < 10; i++)
        sc_prog_push_stream(pg, 1, merge_recvs ? d1m[i] : d1s[i]);
    return pg;
}

TEST(in_order_streams_verify)
{
    sc_prog *pg = two_devices(0, 0);
    CHECK(sc_check(pg) == SC_OK);
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    /* d0: F0 [0,1] F1 [1,2]; d1: F0 [1,2] F1 [2,3] BW0 [3,5] BW1 [5,7];
     * d0: BW0 [5,7] BW1 [7,9]. */
    if (sim)
        CHECK_NEAR(sim->makespan, 9, 1e-12);
    sc_sim_free(sim);
    sc_prog_free(pg);
}

TEST(crossed_receives_are_out_of_posting_order)
{
    /* d1 receives mb1 first: NCCL and gloo would deliver d0's first message
     * (mb0) into it. Refused, in separate groups and in one group alike,
     * with both instructions of the pair named. */
    for (int merge = 0; merge < 2; merge++) {
        sc_prog *pg = two_devices(1, merge);
        CHECK(sc_check(pg) == SC_ERR_PROGRAM);
        const char *msg = sc_errmsg(pg);
        CHECK_STR(msg, "transfers out of posting order: d0 #1 (SEND act s1 mb0 -> d1) and "
                       "d1 #0 (RECV act s1 mb1 <- d0) pair up (send and receive 1 between d0 and d1");
        CHECK_STR(msg, merge ? "its RECV is d1 #1 (RECV act s1 mb0 <- d0)"
                             : "its RECV is d1 #2 (RECV act s1 mb0 <- d0)");
        sc_prog_free(pg);
    }
}

TEST(in_order_receives_in_one_group_verify)
{
    sc_prog *pg = two_devices(0, 1);
    CHECK(sc_check(pg) == SC_OK);
    sc_prog_free(pg);
}

TEST(swapped_sends_in_one_group_are_refused)
{
    /* The case: two sends to one peer swapped inside one group, each
     * with its partner somewhere: every key matches, the posting order not. */
    sc_prog *pg = sc_prog_new(2, 2, 2);
    sc_instr d0[] = {C(SC_OP_F, 0, 0), C(SC_OP_F, 0, 1), X(SC_OP_SEND, SC_DIR_ACT, 1, 1, 1),
                     X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1), X(SC_OP_RECV, SC_DIR_GRAD, 0, 0, 1),
                     X(SC_OP_RECV, SC_DIR_GRAD, 0, 1, 1), C(SC_OP_BW, 0, 0), C(SC_OP_BW, 0, 1),
                     END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    sc_instr d1[] = {X(SC_OP_RECV, SC_DIR_ACT, 1, 0, 0), X(SC_OP_RECV, SC_DIR_ACT, 1, 1, 0),
                     C(SC_OP_F, 1, 0), C(SC_OP_F, 1, 1), C(SC_OP_BW, 1, 0), C(SC_OP_BW, 1, 1),
                     X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0), X(SC_OP_SEND, SC_DIR_GRAD, 0, 1, 0),
                     END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    for (size_t i = 0; i < 10; i++) {
        sc_prog_push_stream(pg, 0, d0[i]);
        sc_prog_push_stream(pg, 1, d1[i]);
    }
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    /* docs/semantics.md#what-the-verifier-proves quotes this message. */
    CHECK_STR(sc_errmsg(pg), "transfers out of posting order: d0 #2 (SEND act s1 mb1 -> d1) and "
                             "d1 #0 (RECV act s1 mb0 <- d0) pair up (send and receive 1 between d0 "
                             "and d1; NCCL and gloo match in posting order) but carry different "
                             "messages (its RECV is d1 #1 (RECV act s1 mb1 <- d0))");
    sc_prog_free(pg);
}

TEST(early_receive_deadlocks_with_cycle)
{
    /* d0 posts the RECV of mb0's gradient in a group before the SEND of
     * mb0's activation (the early-RECV deadlock of docs/semantics.md#the-semantics). */
    sc_prog *pg = sc_prog_new(2, 2, 1);
    sc_instr send = X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1);
    send.flags = SC_IF_GROUP;
    sc_instr d0[] = {C(SC_OP_F, 0, 0), X(SC_OP_RECV, SC_DIR_GRAD, 0, 0, 1), send,
                     C(SC_OP_BW, 0, 0), END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    sc_instr d1[] = {X(SC_OP_RECV, SC_DIR_ACT, 1, 0, 0), C(SC_OP_F, 1, 0), C(SC_OP_BW, 1, 0),
                     X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0), END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    for (size_t i = 0; i < 6; i++) {
        sc_prog_push_stream(pg, 0, d0[i]);
        sc_prog_push_stream(pg, 1, d1[i]);
    }
    CHECK(sc_check(pg) == SC_ERR_DEADLOCK);
    const char *msg = sc_errmsg(pg);
    CHECK_STR(msg, "deadlock: ");
    CHECK_STR(msg, "its running group's RECV grad s0 mb0 <- d1 is unmatched, waits for d1");
    CHECK_STR(msg, "d1 #1 (F s1 mb0): its running group's RECV act s1 mb0 <- d0 is unmatched, "
                   "waits for d0");
    CHECK_STR(msg, "the cycle closes at d");
    sc_prog_free(pg);
}

/* The modes (docs/semantics.md#modes): the early receive deadlocks only
 * in the NCCL mode; per-link runs a link's transfers one at a time, so its
 * makespan lies between gloo's and the NCCL mode's; the modes' names. */
TEST(modes_early_receive_and_link_order)
{
    sc_prog *pg = sc_prog_new(2, 2, 1);
    sc_instr send = X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1);
    send.flags = SC_IF_GROUP;
    sc_instr d0[] = {C(SC_OP_F, 0, 0), X(SC_OP_RECV, SC_DIR_GRAD, 0, 0, 1), send,
                     C(SC_OP_BW, 0, 0), END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    sc_instr d1[] = {X(SC_OP_RECV, SC_DIR_ACT, 1, 0, 0), C(SC_OP_F, 1, 0), C(SC_OP_BW, 1, 0),
                     X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0), END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    for (size_t i = 0; i < 6; i++) {
        sc_prog_push_stream(pg, 0, d0[i]);
        sc_prog_push_stream(pg, 1, d1[i]);
    }
    CHECK(sc_check(pg) == SC_ERR_DEADLOCK);
    CHECK(sc_prog_set_p2p(pg, SC_P2P_LINK) == SC_OK);
    CHECK(sc_check(pg) == SC_OK);
    CHECK(sc_prog_set_p2p(pg, SC_P2P_GLOO) == SC_OK);
    CHECK(sc_check(pg) == SC_OK);
    CHECK(sc_prog_set_p2p(pg, 7) == SC_ERR_ARG);
    sc_prog_free(pg);

    /* d1 posts both receives of d0's activations in one group: together in
     * the NCCL mode and in gloo's, one after the other per-link. */
    double span[3];
    for (int mode = SC_P2P_NCCL; mode <= SC_P2P_LINK; mode++) {
        pg = two_devices(0, 1);
        sc_sim *sim = NULL;
        CHECK(sc_prog_set_comm(pg, 1) == SC_OK);
        CHECK(sc_prog_set_p2p(pg, mode) == SC_OK);
        CHECK(sc_simulate(pg, &sim) == SC_OK);
        span[mode] = sim ? sim->makespan : -1;
        sc_sim_free(sim);
        sc_prog_free(pg);
    }
    CHECK(span[SC_P2P_GLOO] <= span[SC_P2P_LINK] && span[SC_P2P_LINK] <= span[SC_P2P_NCCL]);
    CHECK(sc_p2p_parse("per-link") == SC_P2P_LINK && sc_p2p_parse("mpi") < 0);
    CHECK_STR(sc_p2p_name(SC_P2P_GLOO), "gloo");
}

TEST(unmatched_and_misplaced_transfers)
{
    sc_prog *pg = sc_prog_new(2, 2, 1);
    sc_prog_push_stream(pg, 0, C(SC_OP_F, 0, 0));
    sc_prog_push_stream(pg, 0, X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1));
    sc_prog_push_stream(pg, 0, X(SC_OP_RECV, SC_DIR_GRAD, 0, 0, 1));
    sc_prog_push_stream(pg, 0, C(SC_OP_BW, 0, 0));
    sc_prog_push_stream(pg, 1, C(SC_OP_F, 1, 0)); /* no RECV before it */
    sc_prog_push_stream(pg, 1, C(SC_OP_BW, 1, 0));
    sc_prog_push_stream(pg, 1, X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0));
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "SEND act s1 mb0 -> d1) has no matching RECV on d1");
    sc_prog_free(pg);

    pg = sc_prog_new(2, 2, 1);
    sc_prog_push_stream(pg, 0, X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1)); /* before F */
    sc_prog_push_stream(pg, 0, C(SC_OP_F, 0, 0));
    sc_prog_push_stream(pg, 0, X(SC_OP_RECV, SC_DIR_GRAD, 0, 0, 1));
    sc_prog_push_stream(pg, 0, C(SC_OP_BW, 0, 0));
    sc_prog_push_stream(pg, 1, X(SC_OP_RECV, SC_DIR_ACT, 1, 0, 0));
    sc_prog_push_stream(pg, 1, C(SC_OP_F, 1, 0));
    sc_prog_push_stream(pg, 1, C(SC_OP_BW, 1, 0));
    sc_prog_push_stream(pg, 1, X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0));
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "sends data before it is produced");
    sc_prog_free(pg);

    pg = sc_prog_new(2, 2, 1);
    sc_prog_push_stream(pg, 0, C(SC_OP_F, 0, 0));
    sc_prog_push_stream(pg, 0, X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1));
    sc_prog_push_stream(pg, 0, X(SC_OP_RECV, SC_DIR_GRAD, 0, 0, 1));
    sc_prog_push_stream(pg, 0, C(SC_OP_BW, 0, 0));
    sc_prog_push_stream(pg, 1, X(SC_OP_RECV, SC_DIR_ACT, 1, 0, 0));
    sc_prog_push_stream(pg, 1, C(SC_OP_F, 1, 0));
    sc_prog_push_stream(pg, 1, C(SC_OP_BW, 1, 0));
    sc_prog_push_stream(pg, 1, X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0));
    sc_prog_push_stream(pg, 1, X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0));
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "transfer posted twice");
    sc_prog_free(pg);
}

int main(void)
{
    RUN(in_order_streams_verify);
    RUN(crossed_receives_are_out_of_posting_order);
    RUN(in_order_receives_in_one_group_verify);
    RUN(swapped_sends_in_one_group_are_refused);
    RUN(early_receive_deadlocks_with_cycle);
    RUN(unmatched_and_misplaced_transfers);
    RUN(modes_early_receive_and_link_order);
    return harness_done("replay");
}
