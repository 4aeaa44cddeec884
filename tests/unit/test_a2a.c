/*
 * test_a2a.c — expert parallelism's all-to-alls, DISPATCH and COMBINE
 * (ir/ep.h, docs/semantics.md#expert-parallelism): their rows in the kind
 * table, the collective ordering rule on streams given by hand, the
 * lowering of an ep program (where they go, the dense gradients'
 * all-reduce REDUCE reads), their cost, and the pair's overlap (latency-bound
 * all-to-alls overlap each other).
 */
#include "bound/bound.h"
#include "compile.h"
#include "formats/json.h"
#include "formats/render.h"
#include "harness.h"
#include "ir/ir.h"
#include "ir/ir_impl.h"
#include "ir/text.h"
#include "schedule/rules.h"
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static sc_instr C(int op, int s, int mb) { return (sc_instr){.op = (uint8_t)op, .stage = s, .mb = mb, .peer = -1}; }
static sc_instr X(int op, int dir, int s, int mb, int peer)
{
    return (sc_instr){.op = (uint8_t)op, .dir = (uint8_t)dir, .stage = s, .mb = mb, .peer = peer};
}
static sc_instr END(int op) { return (sc_instr){.op = (uint8_t)op, .stage = -1, .mb = -1, .peer = -1}; }

TEST(kinds)
{
    int ops[2] = {SC_OP_DISPATCH, SC_OP_COMBINE};
    for (int i = 0; i < 2; i++) {
        CHECK(sc_op_is_coll(ops[i]) && !sc_op_is_pass(ops[i]) && !sc_op_is_transfer(ops[i]));
        CHECK(!sc_op_has(ops[i], SC_OPF_REDUCES | SC_OPF_ROOTED)); /* an all-to-all */
        CHECK(sc_op_mem_of(ops[i]) == SC_OPM_NONE && sc_op_cost_of(ops[i]) == SC_OPC_COLL);
        CHECK(sc_op_parse(sc_op_name(ops[i])) == ops[i]);
        CHECK_NEAR(sc_coll_factor(ops[i], 4), 0.75, 1e-15); /* (n - 1)/n */
    }
    CHECK(strcmp(sc_op_name(SC_OP_DISPATCH), "DISPATCH") == 0);
    CHECK(strcmp(sc_op_name(SC_OP_COMBINE), "COMBINE") == 0);
}

/* d0 runs F s0 mb0 and BW s0 mb0; d1 of the same EP group (a given
 * program: both are program devices here) posts the same all-to-alls. */
static sc_coll a2a(int op, int part, double bytes)
{
    return (sc_coll){.op = op, .what = SC_OP_F, .part = part, .stage = 0, .mb = 0, .root = -1,
                     .group = 0, .bytes = bytes};
}

static sc_prog *given(const sc_coll *c0, int n0, const sc_coll *c1, int n1)
{
    sc_prog *pg = sc_prog_new(2, 2, 1);
    CHECK(sc_prog_push_stream(pg, 0, C(SC_OP_F, 0, 0)) == SC_OK);
    for (int i = 0; i < n0; i++)
        CHECK(sc_prog_push_coll(pg, 0, &c0[i]) == SC_OK);
    sc_prog_push_stream(pg, 0, X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1));
    sc_prog_push_stream(pg, 0, X(SC_OP_RECV, SC_DIR_GRAD, 0, 0, 1));
    sc_prog_push_stream(pg, 0, C(SC_OP_BW, 0, 0));
    sc_prog_push_stream(pg, 0, END(SC_OP_REDUCE));
    sc_prog_push_stream(pg, 0, END(SC_OP_OPTIM));
    sc_prog_push_stream(pg, 1, X(SC_OP_RECV, SC_DIR_ACT, 1, 0, 0));
    for (int i = 0; i < n1; i++)
        CHECK(sc_prog_push_coll(pg, 1, &c1[i]) == SC_OK);
    sc_prog_push_stream(pg, 1, C(SC_OP_F, 1, 0));
    sc_prog_push_stream(pg, 1, C(SC_OP_BW, 1, 0));
    sc_prog_push_stream(pg, 1, X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0));
    sc_prog_push_stream(pg, 1, END(SC_OP_REDUCE));
    sc_prog_push_stream(pg, 1, END(SC_OP_OPTIM));
    return pg;
}

TEST(ordering_rule_on_given_streams)
{
    sc_coll dc[2] = {a2a(SC_OP_DISPATCH, 0, 1000), a2a(SC_OP_COMBINE, 1, 1000)};
    sc_coll cd[2] = {dc[1], dc[0]};
    sc_prog *pg = given(dc, 2, dc, 2);
    CHECK(sc_prog_set_coll_cost(pg, 0.5, 100) == SC_OK);
    CHECK(sc_check(pg) == SC_OK);
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim) { /* d0's DISPATCH starts when d1 posts it (at 0, before its F): at 1,
                  after F s0; 0.5 + 1/2 * 1000 / 100 = 5.5, COMBINE after it */
        size_t k = sim->offset[0] + 1;
        CHECK_NEAR(sim->t1[k] - sim->t0[k], 5.5, 1e-12);
        CHECK_NEAR(sim->t1[k + 1], sim->t1[k] + 5.5, 1e-12);
    }
    sc_sim_free(sim);
    char *dump = sc_render_dump(pg);
    CHECK_STR(dump, "DISPATCH F s0 mb0");
    CHECK_STR(dump, "COMBINE F s0 mb0 part 1");
    free(dump);
    /* export --json: an all-to-all has neither a reduction nor a root */
    size_t len = 0;
    FILE *f = open_memstream(&dump, &len);
    CHECK(sc_json_write(f, pg, NULL, "t") == SC_OK);
    fclose(f);
    CHECK_STR(dump, "{\"op\": \"DISPATCH\", \"what\": \"F\", \"part\": 0, \"stage\": 0");
    CHECK_STR(dump, "{\"op\": \"COMBINE\", \"what\": \"F\", \"part\": 1, \"stage\": 0");
    CHECK(!strstr(dump, "\"root\"") && !strstr(dump, "\"red\""));
    free(dump);
    sc_prog_free(pg);
    /* Another order on d1: one line names both instructions. */
    pg = given(dc, 2, cd, 2);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "collectives out of order: d0 #1 (DISPATCH F s0 mb0) and d1 #1 "
                             "(COMBINE F s0 mb0 part 1) are both the 1st collective");
    sc_prog_free(pg);
    /* d1 has no COMBINE. */
    pg = given(dc, 2, dc, 1);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "collective posted by some members only: d0 #2 (COMBINE F s0 mb0 "
                             "part 1) is the 2nd collective of the group of every device, and d1 "
                             "posts no such collective");
    sc_prog_free(pg);
}

static int count(const sc_prog *pg, int d, int op, int what)
{
    size_t n;
    const sc_instr *v = sc_prog_stream(pg, d, &n);
    int c = 0;
    for (size_t k = 0; k < n; k++)
        c += v[k].op == op && (what < 0 || sc_coll_what(&v[k]) == what);
    return c;
}

/* 1F1B on p devices, m microbatches, unit costs, experts on every stage
 * but the last (bytes b), collectives at latency 0.1 and bandwidth 100. */
static sc_prog *ep_prog(int p, int m, int ep, double b)
{
    sc_prog *pg = sc_prog_new(p, p, m);
    CHECK(sc_prog_set_coll_cost(pg, 0.1, 100) == SC_OK);
    CHECK(sc_prog_set_ep(pg, ep) == SC_OK);
    CHECK(sc_prog_set_ep_bytes(pg, -1, b) == SC_OK);
    CHECK(sc_prog_set_ep_bytes(pg, p - 1, 0) == SC_OK);
    for (int d = 0; d < p; d++)
        CHECK(sc_prog_set_ep_dense(pg, d, 400) == SC_OK);
    CHECK(sc_rule_fill(pg, "1f1b") == SC_OK);
    return pg;
}

TEST(lowering)
{
    sc_prog *pg = ep_prog(3, 4, 4, 200);
    CHECK(sc_check(pg) == SC_OK);
    for (int d = 0; d < 3; d++) {
        int moe = d < 2 ? 4 : 0; /* microbatches through a stage with experts */
        CHECK(count(pg, d, SC_OP_DISPATCH, SC_OP_F) == moe);
        CHECK(count(pg, d, SC_OP_COMBINE, SC_OP_F) == moe);
        CHECK(count(pg, d, SC_OP_DISPATCH, SC_OP_BW) + count(pg, d, SC_OP_DISPATCH, SC_OP_B) ==
              moe);
        CHECK(count(pg, d, SC_OP_ALLREDUCE, SC_OP_W) == 1);
        /* each right after its pass, DISPATCH then COMBINE, on d's EP group */
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n; k++) {
            if (v[k].op != SC_OP_DISPATCH)
                continue;
            CHECK(k > 0 && v[k - 1].op == sc_coll_what(&v[k]) && v[k - 1].mb == v[k].mb);
            CHECK(k + 1 < n && v[k + 1].op == SC_OP_COMBINE && sc_coll_part(&v[k + 1]) == 1);
            sc_coll c;
            sc_prog_coll(pg, &v[k], &c);
            int gn;
            const int *mem = sc_prog_group(pg, c.group, &gn);
            CHECK(mem && gn == 1 && mem[0] == d && c.bytes == 200);
            /* timed on the pass (below), not on the channel */
            CHECK_NEAR(sc_prog_coll_time(pg, &v[k]), 0, 1e-15);
        }
        CHECK(n >= 2 && v[n - 1].op == SC_OP_OPTIM && v[n - 2].op == SC_OP_REDUCE &&
              v[n - 3].op == SC_OP_ALLREDUCE);
    }
    /* the passes of a stage with experts hold the compute stream for both
     * all-to-alls over E = 4 ranks: 2 x (0.1 + 3/4 x 200 / 100) */
    CHECK_NEAR(sc_prog_ta(pg, 0), 3.2, 1e-12);
    CHECK_NEAR(sc_prog_ta(pg, 2), 0, 1e-15);
    CHECK_NEAR(sc_prog_ep_time(pg, 1), 3.2, 1e-12);
    CHECK(sc_prog_set_ep_layers(pg, 1, 3) == SC_OK); /* a latency per layer */
    CHECK_NEAR(sc_prog_ep_time(pg, 1), 2 * (3 * 0.1 + 0.75 * 200 / 100), 1e-12);
    CHECK(sc_prog_set_ep_time(pg, 1, 0.25) == SC_OK);
    CHECK_NEAR(sc_prog_ep_time(pg, 1), 0.25, 1e-15); /* a cost file's */
    sc_prog_free(pg);
    /* ep = 1: none of them */
    pg = ep_prog(3, 4, 1, 200);
    CHECK(sc_check(pg) == SC_OK);
    CHECK(count(pg, 0, SC_OP_DISPATCH, -1) == 0 && count(pg, 0, SC_OP_ALLREDUCE, -1) == 0);
    sc_prog_free(pg);
}

TEST(errors)
{
    sc_prog *pg = sc_prog_new(2, 2, 2);
    CHECK(sc_prog_set_ep(pg, 0) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "ep = 0 is out of range (1..256)");
    CHECK(sc_prog_set_ep(pg, 4000) == SC_ERR_ARG);
    CHECK(sc_prog_set_ep_bytes(pg, 2, 1) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "stage 2 is out of range (0..1)");
    CHECK(sc_prog_set_ep_bytes(pg, 0, NAN) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "expert all-to-all bytes nan must be finite and >= 0");
    CHECK(sc_prog_set_ep(pg, 2) == SC_OK && sc_prog_ep(pg) == 2);
    CHECK(sc_prog_set_optim_sync(pg, SC_SYNC_POSTVAL) == SC_OK);
    CHECK(sc_rule_fill(pg, "1f1b") == SC_OK);
    CHECK(sc_check(pg) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "ep = 2 is not combined with post-validation yet");
    sc_prog_free(pg);
}

/* A pair hides each half's all-to-all under the other half's compute: the
 * same passes in turn and as a pair. */
TEST(pair_overlap)
{
    double mk[2];
    for (int paired = 0; paired < 2; paired++) {
        sc_prog *pg = sc_prog_new(2, 2, 2);
        CHECK(sc_prog_set_cost(pg, -1, 1, 1, 1) == SC_OK);
        CHECK(sc_prog_set_coll_cost(pg, 0, 100) == SC_OK);
        CHECK(sc_prog_set_ep(pg, 2) == SC_OK);
        CHECK(sc_prog_set_ep_bytes(pg, -1, 50) == SC_OK); /* 2 x 1/2 x 50/100 = 0.5 */
        CHECK(sc_prog_push(pg, 0, SC_OP_F, 0, 0) == SC_OK);
        if (paired) {
            CHECK(sc_prog_push_pair(pg, 0, 0, 1, SC_OP_BW, 0, 0) == SC_OK);
        } else {
            CHECK(sc_prog_push(pg, 0, SC_OP_BW, 0, 0) == SC_OK);
            CHECK(sc_prog_push(pg, 0, SC_OP_F, 0, 1) == SC_OK);
        }
        CHECK(sc_prog_push(pg, 0, SC_OP_BW, 0, 1) == SC_OK);
        CHECK(sc_order_parse(pg, 1, "F0 BW0 F1 BW1", 13) == SC_OK);
        CHECK(sc_check(pg) == SC_OK);
        CHECK(count(pg, 0, SC_OP_DISPATCH, -1) == 4 && count(pg, 0, SC_OP_COMBINE, -1) == 4);
        sc_sim *sim = NULL;
        CHECK(sc_simulate(pg, &sim) == SC_OK);
        mk[paired] = sim ? sim->makespan : NAN;
        sc_sim_free(sim);
        sc_prog_free(pg);
    }
    /* d0: F0 [0, 1.5]; BW0 waits for d1's (at 5.5). In turn BW0 and F1
     * take 2.5 + 1.5, the pair 3 (each half's 0.5 under the other's
     * compute); then d1's F1 and BW1, d0's BW1: 16 and 15. */
    CHECK_NEAR(mk[0], 16, 1e-12);
    CHECK_NEAR(mk[1], 15, 1e-12);
}

/* One device, one stage, tf = tb = tw = 1, two microbatches: F0, the pair
 * (F1, BW0), BW1. ep = 2 at bandwidth 100: the all-to-all part ta is 2 x
 * (lat + 1/2 x bytes / 100), of which 2 x 1/2 x bytes / 100 is the link's
 * (ir/ep.h). */
static double one_device(int ep, double lat, double bytes, double ta, int paired)
{
    sc_prog *pg = sc_prog_new(1, 1, 2);
    CHECK(sc_prog_set_cost(pg, -1, 1, 1, 1) == SC_OK);
    CHECK(sc_prog_set_coll_cost(pg, lat, 100) == SC_OK);
    CHECK(sc_prog_set_ep(pg, ep) == SC_OK);
    if (ep > 1)
        CHECK(sc_prog_set_ep_bytes(pg, -1, bytes) == SC_OK);
    else
        CHECK(sc_prog_set_cost_a2a(pg, -1, ta) == SC_OK); /* ta alone: all the link's */
    CHECK(sc_prog_push(pg, 0, SC_OP_F, 0, 0) == SC_OK);
    if (paired) {
        CHECK(sc_prog_push_pair(pg, 0, 0, 1, SC_OP_BW, 0, 0) == SC_OK);
    } else {
        CHECK(sc_prog_push(pg, 0, SC_OP_BW, 0, 0) == SC_OK);
        CHECK(sc_prog_push(pg, 0, SC_OP_F, 0, 1) == SC_OK);
    }
    CHECK(sc_prog_push(pg, 0, SC_OP_BW, 0, 1) == SC_OK);
    CHECK(sc_check(pg) == SC_OK);
    CHECK_NEAR(sc_prog_ta(pg, 0), ta, 1e-12);
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    double mk = sim ? sim->makespan : NAN;
    sc_bound b; /* the bound never exceeds a simulated schedule */
    CHECK(sc_bound_prog(pg, &b) == SC_OK && b.bound <= mk + 1e-12);
    sc_sim_free(sim);
    sc_prog_free(pg);
    return mk;
}

/* The pair's rule by hand: the longest of its compute cf + cb, its link
 * lf + lb, and each half cf + af, cb + ab. ta = 4 throughout, so F alone
 * takes 1 + 4, BW alone 2 + 4: in turn 5 + 6 + 5 + 6 = 22.
 *   latency-bound (lat 1.75, bytes 50: link 0.5 a half): the pair takes
 *     max(1 + 2, 0.5 + 0.5, 1 + 4, 2 + 4) = 6, and 5 + 6 + 6 = 17;
 *   link-bound (lat 0, bytes 400: link 4 a half): max(3, 8, 5, 6) = 8,
 *     and 19, as with ep = 1 and ta = 4 set alone (DualPipe's count). */
TEST(pair_latency_overlaps)
{
    CHECK_NEAR(one_device(2, 1.75, 50, 4, 0), 22, 1e-12);
    CHECK_NEAR(one_device(2, 1.75, 50, 4, 1), 17, 1e-12);
    CHECK_NEAR(one_device(2, 0, 400, 4, 0), 22, 1e-12);
    CHECK_NEAR(one_device(2, 0, 400, 4, 1), 19, 1e-12);
    CHECK_NEAR(one_device(1, 0, 0, 4, 1), 19, 1e-12);
    CHECK_NEAR(one_device(1, 0, 0, 4, 0), 22, 1e-12);
}

int main(void)
{
    RUN(kinds);
    RUN(ordering_rule_on_given_streams);
    RUN(lowering);
    RUN(errors);
    RUN(pair_overlap);
    RUN(pair_latency_overlaps);
    return harness_done("a2a");
}
