/*
 * test_coll.c — collectives in the IR, the verifier's replay and the
 * simulator (docs/semantics.md#collectives), on streams given by hand (sc_prog_push_coll):
 * matching across members, the errors (order, members, data flow), the
 * deadlocks that mix P2P groups and collective channels, and the cost model.
 */
#include "compile.h"
#include "formats/json.h"
#include "formats/render.h"
#include "formats/svg.h"
#include "formats/trace.h"
#include "harness.h"
#include "ir/ir.h"
#include "sim/sim.h"

#include <stdlib.h>

static sc_instr C(int op, int s, int mb) { return (sc_instr){.op = (uint8_t)op, .stage = s, .mb = mb, .peer = -1}; }
static sc_instr X(int op, int dir, int s, int mb, int peer)
{
    return (sc_instr){.op = (uint8_t)op, .dir = (uint8_t)dir, .stage = s, .mb = mb, .peer = peer};
}
static sc_instr END(int op) { return (sc_instr){.op = (uint8_t)op, .stage = -1, .mb = -1, .peer = -1}; }

/* An end-of-step all-reduce (a gradient norm): tagged REDUCE, read by OPTIM. */
static sc_coll norm(int part, int red, double bytes)
{
    return (sc_coll){.op = SC_OP_ALLREDUCE, .red = red, .what = SC_OP_REDUCE, .part = part,
                     .stage = -1, .mb = -1, .root = -1, .bytes = bytes};
}

static void push(sc_prog *pg, int d, const sc_instr *v, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(sc_prog_push_stream(pg, d, v[i]) == SC_OK);
}

/* One microbatch through p devices (one stage each), BW fused; every
 * device ends with REDUCE, the collectives of `colls` (its own order), OPTIM. */
static sc_prog *fill_chain(sc_prog *pg, const sc_coll *const *colls, const int *ncolls)
{
    int p = sc_prog_devices(pg);
    for (int d = 0; d < p; d++) {
        if (d > 0)
            sc_prog_push_stream(pg, d, X(SC_OP_RECV, SC_DIR_ACT, d, 0, d - 1));
        sc_prog_push_stream(pg, d, C(SC_OP_F, d, 0));
        if (d + 1 < p)
            sc_prog_push_stream(pg, d, X(SC_OP_SEND, SC_DIR_ACT, d + 1, 0, d + 1));
        if (d + 1 < p)
            sc_prog_push_stream(pg, d, X(SC_OP_RECV, SC_DIR_GRAD, d, 0, d + 1));
        sc_prog_push_stream(pg, d, C(SC_OP_BW, d, 0));
        if (d > 0)
            sc_prog_push_stream(pg, d, X(SC_OP_SEND, SC_DIR_GRAD, d - 1, 0, d - 1));
        sc_prog_push_stream(pg, d, END(SC_OP_REDUCE));
        for (int i = 0; colls && i < ncolls[d]; i++)
            CHECK(sc_prog_push_coll(pg, d, &colls[d][i]) == SC_OK);
        sc_prog_push_stream(pg, d, END(SC_OP_OPTIM));
    }
    return pg;
}

static sc_prog *chain(int p, const sc_coll *const *colls, const int *ncolls)
{
    return fill_chain(sc_prog_new(p, p, 1), colls, ncolls);
}

TEST(end_of_step_allreduce)
{
    sc_coll two[2] = {norm(0, SC_RED_SUM, 1000), norm(1, SC_RED_MAX, 8)};
    const sc_coll *cs[4] = {two, two, two, two};
    int n[4] = {2, 2, 2, 2};
    sc_prog *pg = chain(4, cs, n);
    CHECK(sc_prog_set_coll_cost(pg, 0.5, 100) == SC_OK);
    CHECK(sc_check(pg) == SC_OK);
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim) {
        /* F 0..4 along the chain, BW back: d0's BW ends at 4 + 4 * 2 = 12,
         * when every device has reached its collectives; the sum takes
         * 0.5 + 1.5 * 1000 / 100 = 15.5, the max (8 bytes) 0.5 + 0.12 after it.
         * OPTIM (no time) waits for both: d0 ends at 12. */
        size_t k = sim->offset[0] + 5; /* d0: F SEND RECV BW REDUCE [sum] [max] OPTIM */
        CHECK_NEAR(sim->t1[k], 12 + 15.5, 1e-12);
        CHECK_NEAR(sim->t1[k + 1], 12 + 15.5 + 0.5 + 1.5 * 8 / 100.0, 1e-12);
        CHECK_NEAR(sim->t0[k + 2], sim->t1[k + 1], 1e-12); /* OPTIM waited */
        CHECK(sim->coll_busy != NULL && sim->colls == 8);
        if (sim->coll_busy)
            CHECK_NEAR(sim->coll_busy[3], sim->t1[k + 1] - 6, 1e-12); /* d3 posted at 6 */
        char *t = sc_render_timeline(pg, sim, 60, 0);
        CHECK_STR(t, "  c |");
        CHECK_STR(t, "collectives: = all-reduce");
        free(t);
        char *dump = sc_render_dump(pg);
        CHECK_STR(dump, "ALLREDUCE sum REDUCE");
        CHECK_STR(dump, "ALLREDUCE max REDUCE part 1");
        free(dump);
        /* JSON, trace and SVG show them. */
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        CHECK(sc_json_write(f, pg, sim, "t") == SC_OK);
        fclose(f);
        CHECK_STR(buf, "{\"op\": \"ALLREDUCE\", \"red\": \"max\", \"what\": \"REDUCE\", "
                       "\"part\": 1, \"stage\": -1, \"mb\": -1, \"step\": 0, \"group\": 0, "
                       "\"bytes\": 8, \"t0\": 12, \"t1\": 28.12}");
        CHECK_STR(buf, "\"coll_busy\": [");
        free(buf);
        f = open_memstream(&buf, &len);
        sc_timing tm = {sim, "simulated", 0};
        CHECK(sc_trace_write(f, pg, &tm, 1) == SC_OK);
        fclose(f);
        CHECK_STR(buf, "\"args\": {\"name\": \"d3 collectives\"}");
        CHECK_STR(buf, "{\"name\": \"ALLREDUCE max REDUCE part 1\", \"cat\": \"ALLREDUCE\"");
        free(buf);
        f = open_memstream(&buf, &len);
        CHECK(sc_svg_write(f, pg, sim, "t") == SC_OK);
        fclose(f);
        CHECK_STR(buf, "fill=\"#d35400\" fill-opacity=\"0.8\"><title>ALLREDUCE sum REDUCE</title>");
        free(buf);
    }
    sc_sim_free(sim);
    sc_prog_free(pg);
}

TEST(broadcast_cost_and_root)
{
    sc_coll b = {.op = SC_OP_BCAST, .what = SC_OP_F, .stage = 0, .mb = 0, .root = 0, .bytes = 400};
    const sc_coll *cs[2] = {&b, &b};
    int n[2] = {1, 1};
    sc_prog *pg = chain(2, cs, n);
    CHECK(sc_prog_set_coll_cost(pg, 1, 100) == SC_OK);
    CHECK(sc_check(pg) == SC_OK);
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim) /* 2 devices: latency 1 + 1/2 * 400 / 100 = 3 after BW of d0 ends (at 6) */
        CHECK_NEAR(sim->t1[sim->offset[0] + 5], 6 + 3, 1e-12);
    sc_sim_free(sim);
    char buf[160];
    size_t nn;
    const sc_instr *v = sc_prog_stream(pg, 1, &nn);
    sc_prog_instr_format(pg, &v[nn - 2], buf, sizeof buf);
    CHECK_STR(buf, "BCAST F s0 mb0 from d0");
    sc_coll got;
    sc_prog_coll(pg, &v[nn - 2], &got);
    CHECK(got.op == SC_OP_BCAST && got.root == 0 && got.bytes == 400 && got.what == SC_OP_F);
    char *js = NULL; /* export --json: a broadcast names its root */
    size_t len = 0;
    FILE *f = open_memstream(&js, &len);
    CHECK(sc_json_write(f, pg, NULL, "t") == SC_OK);
    fclose(f);
    CHECK_STR(js, "{\"op\": \"BCAST\", \"root\": 0, \"what\": \"F\", \"part\": 0");
    free(js);
    sc_prog_free(pg);
    /* A broadcast from a root that never ran the pass it carries. */
    sc_coll bad = b;
    bad.stage = 1; /* F s1 runs on d1, not on the root d0 */
    const sc_coll *cb[2] = {&bad, &bad};
    pg = chain(2, cb, n);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "carries data before it is produced: F s1 mb0 is not earlier on d0");
    sc_prog_free(pg);
}

TEST(out_of_order)
{
    sc_coll ab[2] = {norm(0, SC_RED_SUM, 4), norm(1, SC_RED_SUM, 4)};
    sc_coll ba[2] = {norm(1, SC_RED_SUM, 4), norm(0, SC_RED_SUM, 4)};
    const sc_coll *cs[3] = {ab, ab, ba};
    int n[3] = {2, 2, 2};
    sc_prog *pg = chain(3, cs, n);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "collectives out of order: d0 #5 (ALLREDUCE sum REDUCE) and d2 #5 "
                             "(ALLREDUCE sum REDUCE part 1) are both the 1st collective of the "
                             "group of every device");
    sc_prog_free(pg);
    /* Same tag, another size. */
    sc_coll big[1] = {norm(0, SC_RED_SUM, 8)};
    const sc_coll *cz[3] = {ab, ab, big};
    int nz[3] = {1, 1, 1};
    pg = chain(3, cz, nz);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "(sizes 4 and 8 bytes)");
    sc_prog_free(pg);
}

TEST(posted_by_some_members_only)
{
    sc_coll one[1] = {norm(0, SC_RED_SUM, 4)};
    const sc_coll *cs[4] = {one, one, one, one};
    int n[4] = {1, 0, 1, 0};
    sc_prog *pg = chain(4, cs, n);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "collective posted by some members only: d0 #5 (ALLREDUCE sum "
                             "REDUCE) is the 1st collective of the group of every device, and "
                             "d1, d3 post no such collective");
    sc_prog_free(pg);
}

TEST(groups_and_members)
{
    sc_prog *pg = sc_prog_new(3, 3, 1);
    int g01[2] = {1, 0}, bad[2] = {0, 0};
    int g = sc_prog_add_group(pg, g01, 2);
    CHECK(g == 1);
    int n;
    const int *m = sc_prog_group(pg, g, &n);
    CHECK(m && n == 2 && m[0] == 0 && m[1] == 1);
    CHECK(sc_prog_add_group(pg, bad, 2) == -1);
    CHECK_STR(sc_errmsg(pg), "given twice");
    m = sc_prog_group(pg, 0, &n);
    CHECK(m && n == 3 && m[2] == 2);
    sc_prog_free(pg);
    /* A collective of group {0, 1} posted on d2. */
    sc_coll c = norm(0, SC_RED_SUM, 4);
    c.group = 1;
    const sc_coll *cs[3] = {&c, &c, &c};
    int nn[3] = {1, 1, 1};
    pg = sc_prog_new(3, 3, 1);
    CHECK(sc_prog_add_group(pg, g01, 2) == 1);
    fill_chain(pg, cs, nn);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "d2 #5 (ALLREDUCE sum REDUCE on group 1): the device is not a member "
                             "of group 1 (d0, d1)");
    sc_prog_free(pg);
    /* Unknown group, bad kind. */
    pg = sc_prog_new(2, 2, 1);
    c.group = 5;
    CHECK(sc_prog_push_coll(pg, 0, &c) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "unknown group 5");
    c.group = 0;
    c.op = SC_OP_SEND;
    CHECK(sc_prog_push_coll(pg, 0, &c) == SC_ERR_ARG);
    sc_instr raw = {.op = SC_OP_ALLREDUCE};
    CHECK(sc_prog_push_stream(pg, 0, raw) == SC_ERR_ARG);
    sc_prog_free(pg);
}

/* d0 waits at OPTIM for an all-reduce d1 has not posted; d1 waits for an
 * activation d0 sends only after OPTIM: a cycle through a collective
 * channel and a P2P group. */
TEST(deadlock_through_both_channels)
{
    sc_prog *pg = sc_prog_new(2, 2, 1);
    sc_coll c = norm(0, SC_RED_SUM, 4);
    sc_instr d0[] = {C(SC_OP_F, 0, 0)};
    push(pg, 0, d0, 1);
    CHECK(sc_prog_push_coll(pg, 0, &c) == SC_OK);
    sc_instr d0b[] = {END(SC_OP_OPTIM), X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1),
                      X(SC_OP_RECV, SC_DIR_GRAD, 0, 0, 1), C(SC_OP_BW, 0, 0)};
    push(pg, 0, d0b, 4);
    sc_instr d1[] = {X(SC_OP_RECV, SC_DIR_ACT, 1, 0, 0), C(SC_OP_F, 1, 0), C(SC_OP_BW, 1, 0),
                     X(SC_OP_SEND, SC_DIR_GRAD, 0, 0, 0)};
    push(pg, 1, d1, 4);
    CHECK(sc_prog_push_coll(pg, 1, &c) == SC_OK);
    push(pg, 1, (sc_instr[]){END(SC_OP_OPTIM)}, 1);
    CHECK(sc_check(pg) == SC_ERR_DEADLOCK);
    CHECK_STR(sc_errmsg(pg), "deadlock: d0 #2 (OPTIM): its collective ALLREDUCE sum REDUCE (#1) "
                             "waits for d1, which has not posted it; d1 #1 (F s1 mb0): its "
                             "running group's RECV act s1 mb0 <- d0 is unmatched, waits for d0; "
                             "the cycle closes at d0");
    sc_prog_free(pg);
}

/* Three groups, each consistent, but the channels wait for each other in a
 * ring: d0 runs A then C, d1 B then A, d2 C then B. */
TEST(deadlock_across_groups)
{
    sc_prog *pg = sc_prog_new(3, 3, 1);
    int a[2] = {0, 1}, b[2] = {1, 2}, c[2] = {0, 2};
    int ga = sc_prog_add_group(pg, a, 2), gb = sc_prog_add_group(pg, b, 2),
        gc = sc_prog_add_group(pg, c, 2);
    sc_coll A = norm(0, SC_RED_SUM, 4), B = norm(1, SC_RED_SUM, 4), Cc = norm(2, SC_RED_SUM, 4);
    A.group = ga;
    B.group = gb;
    Cc.group = gc;
    sc_coll o0[2] = {A, Cc}, o1[2] = {B, A}, o2[2] = {Cc, B};
    const sc_coll *order[3] = {o0, o1, o2};
    int n[3] = {2, 2, 2};
    fill_chain(pg, order, n);
    CHECK(sc_check(pg) == SC_ERR_DEADLOCK);
    CHECK_STR(sc_errmsg(pg), "deadlock: d0 #7 (OPTIM): its collective ALLREDUCE sum REDUCE on "
                             "group 1 (#5) waits for d1, whose collectives run d1 #7 (ALLREDUCE "
                             "sum REDUCE part 1 on group 2) first");
    CHECK_STR(sc_errmsg(pg), "the cycle closes at d0");
    sc_prog_free(pg);
}

/* Collectives on the channel run one after the other on each device; two
 * devices that post them at different times start each when both have. */
TEST(channel_order_and_timing)
{
    sc_coll two[2] = {norm(0, SC_RED_SUM, 100), norm(1, SC_RED_SUM, 100)};
    const sc_coll *cs[2] = {two, two};
    int n[2] = {2, 2};
    sc_prog *pg = chain(2, cs, n);
    CHECK(sc_prog_set_coll_cost(pg, 0, 10) == SC_OK); /* 2 devices: 100 * 1 / 10 = 10 each */
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim) {
        /* d1 reaches them at 4 (F 1..2, BW 2..4), d0 at 6: the first runs
         * 6..16, the second 16..26 on both. */
        size_t k0 = sim->offset[0] + 5, k1 = sim->offset[1] + 5;
        CHECK_NEAR(sim->t0[k1], 4, 1e-12);
        CHECK_NEAR(sim->t1[k0], 16, 1e-12);
        CHECK_NEAR(sim->t1[k1], 16, 1e-12);
        CHECK_NEAR(sim->t1[k0 + 1], 26, 1e-12);
        CHECK_NEAR(sim->coll_busy[1], 22, 1e-12); /* busy from 4, when d1 started the first */
        CHECK_NEAR(sim->makespan, 6, 1e-12);      /* collectives are not compute */
    }
    sc_sim_free(sim);
    sc_prog_free(pg);
}

int main(void)
{
    RUN(end_of_step_allreduce);
    RUN(broadcast_cost_and_root);
    RUN(out_of_order);
    RUN(posted_by_some_members_only);
    RUN(groups_and_members);
    RUN(deadlock_through_both_channels);
    RUN(deadlock_across_groups);
    RUN(channel_order_and_timing);
    return harness_done("coll");
}
