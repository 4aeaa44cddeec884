/*
 * test_fsdp.c — FSDP's REDUCE_GRAD in the IR (docs/fsdp.md): on streams given
 * by hand, its proof (once per stage per step, after the stage's last weight
 * gradient, before OPTIM; one line naming the instruction otherwise), its
 * time on the data-parallel channel and the step's end that waits for it;
 * and the lowering that puts it after the last weight gradient.
 */
#include "compile.h"
#include "harness.h"
#include "ir/ir.h"
#include "sim/sim.h"

#include <math.h>
#include <string.h>

static sc_instr C(int op, int s, int mb) { return (sc_instr){.op = (uint8_t)op, .stage = s, .mb = mb, .peer = -1}; }
static sc_instr G(int op, int s) { return (sc_instr){.op = (uint8_t)op, .stage = s, .mb = -1, .peer = -1}; }
static sc_instr END(int op) { return (sc_instr){.op = (uint8_t)op, .stage = -1, .mb = -1, .peer = -1}; }

/* One device, one stage, two microbatches: UNSHARD, F0 F1 BW0 BW1 with the
 * REDUCE_GRAD at `at` (0..4: before the pass of that index, 4: after the
 * last; -1: none, 5: twice after the last), RESHARD, REDUCE, OPTIM. */
static sc_prog *one(int at, double gather, double scatter)
{
    sc_prog *pg = sc_prog_new(1, 1, 2);
    sc_fsdp_cfg c = sc_fsdp_default();
    c.time = gather;
    c.reduce_time = scatter;
    CHECK(sc_prog_set_fsdp(pg, &c) == SC_OK);
    sc_instr passes[4] = {C(SC_OP_F, 0, 0), C(SC_OP_F, 0, 1), C(SC_OP_BW, 0, 0), C(SC_OP_BW, 0, 1)};
    CHECK(sc_prog_push_stream(pg, 0, G(SC_OP_UNSHARD, 0)) == SC_OK);
    for (int i = 0; i <= 4; i++) {
        if (i == at || (at == 5 && i == 4))
            CHECK(sc_prog_push_stream(pg, 0, G(SC_OP_REDUCE_GRAD, 0)) == SC_OK);
        if (at == 5 && i == 4)
            CHECK(sc_prog_push_stream(pg, 0, G(SC_OP_REDUCE_GRAD, 0)) == SC_OK);
        if (i < 4)
            CHECK(sc_prog_push_stream(pg, 0, passes[i]) == SC_OK);
    }
    CHECK(sc_prog_push_stream(pg, 0, G(SC_OP_RESHARD, 0)) == SC_OK);
    CHECK(sc_prog_push_stream(pg, 0, END(SC_OP_REDUCE)) == SC_OK);
    CHECK(sc_prog_push_stream(pg, 0, END(SC_OP_OPTIM)) == SC_OK);
    return pg;
}

static void refused(int at, const char *msg)
{
    sc_prog *pg = one(at, 0, 0);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK(strstr(sc_errmsg(pg), msg) != NULL);
    CHECK(strchr(sc_errmsg(pg), '\n') == NULL); /* one line */
    if (!strstr(sc_errmsg(pg), msg))
        fprintf(stderr, "  got: %s\n", sc_errmsg(pg));
    sc_prog_free(pg);
}

TEST(proof)
{
    sc_prog *pg = one(4, 0, 0);
    CHECK(sc_check(pg) == SC_OK);
    sc_prog_free(pg);
    refused(3, "d0 #4 (REDUCE_GRAD s0): before the last weight gradient of stage 0 (1 of 2");
    refused(0, "d0 #1 (REDUCE_GRAD s0): before the last weight gradient of stage 0 (0 of 2");
    refused(-1, "d0 #7 (OPTIM): stage 0 has no REDUCE_GRAD before it");
    refused(5, "d0 #6 (REDUCE_GRAD s0): stage 0 has its REDUCE_GRAD already in this step");
}

/* Without FSDP (the program's dp is 0), the first UNSHARD, RESHARD or
 * REDUCE_GRAD is refused. */
TEST(no_fsdp)
{
    sc_prog *pg = sc_prog_new(1, 1, 1);
    sc_instr d0[] = {C(SC_OP_F, 0, 0), C(SC_OP_BW, 0, 0), G(SC_OP_RESHARD, 0),
                     G(SC_OP_UNSHARD, 0), END(SC_OP_REDUCE), END(SC_OP_OPTIM)};
    for (int i = 0; i < 6; i++)
        CHECK(sc_prog_push_stream(pg, 0, d0[i]) == SC_OK);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "d0 #2 (RESHARD s0): the program has no FSDP (docs/fsdp.md)");
    sc_prog_free(pg);
}

/* The reduce-scatter starts when posted (the last BW's end) and the
 * channel is free, takes reduce_time (or the all-gather's), and OPTIM and
 * the makespan wait for it. */
TEST(timing)
{
    const double want[2] = {3, 1}; /* reduce_time 3; NAN: the gather's, 1 */
    for (int i = 0; i < 2; i++) {
        sc_prog *pg = one(4, 1, i ? NAN : 3);
        sc_sim *sim = NULL;
        CHECK(sc_simulate(pg, &sim) == SC_OK);
        if (sim) {
            /* 0 UNSHARD, 1 F0, 2 F1, 3 BW0, 4 BW1, 5 REDUCE_GRAD, 6 RESHARD, 7 REDUCE, 8 OPTIM */
            CHECK_NEAR(sim->t0[0], 0, 1e-12);
            CHECK_NEAR(sim->t1[0], 1, 1e-12);
            CHECK_NEAR(sim->t0[1], 1, 1e-12); /* F0 waits for the all-gather */
            CHECK_NEAR(sim->t0[5], sim->t1[4], 1e-12);
            CHECK_NEAR(sim->t1[5], sim->t1[4] + want[i], 1e-12);
            CHECK(sim->t0[8] >= sim->t1[5] - 1e-12);
            CHECK_NEAR(sim->makespan, sim->t1[5], 1e-12);
        }
        sc_sim_free(sim);
        sc_prog_free(pg);
    }
}

/* A lowered recipe: every stage has one REDUCE_GRAD, right after its last
 * weight gradient pass (W or BW), whatever the policy. */
TEST(lowered)
{
    for (int pol = 0; pol < SC_FSDP_POLICY_COUNT; pol++) {
        sc_prog *pg = sc_prog_new(2, 4, 4);
        CHECK(sc_prog_set_placement(pg, SC_PLACE_LOOP, NULL) == SC_OK);
        for (int d = 0; d < 2; d++)
            for (int s = d; s < 4; s += 2) {
                for (int mb = 0; mb < 4; mb++)
                    CHECK(sc_prog_push(pg, d, SC_OP_F, s, mb) == SC_OK);
            }
        for (int d = 0; d < 2; d++)
            for (int s = 3 - (1 - d); s >= 0; s -= 2)
                for (int mb = 0; mb < 4; mb++) {
                    CHECK(sc_prog_push(pg, d, SC_OP_B, s, mb) == SC_OK);
                    CHECK(sc_prog_push(pg, d, SC_OP_W, s, mb) == SC_OK);
                }
        sc_fsdp_cfg c = sc_fsdp_default();
        c.policy = pol;
        c.max_active = 1;
        CHECK(sc_prog_set_fsdp(pg, &c) == SC_OK);
        CHECK(sc_check(pg) == SC_OK);
        for (int d = 0; d < 2; d++) {
            size_t n = 0;
            const sc_instr *v = sc_prog_stream(pg, d, &n);
            int count = 0;
            for (size_t k = 0; k < n; k++) {
                if (v[k].op != SC_OP_REDUCE_GRAD)
                    continue;
                count++;
                size_t j = k; /* the pass before it is the stage's last W */
                while (j > 0 && !sc_op_is_slot(v[j - 1].op))
                    j--;
                CHECK(j > 0 && v[j - 1].op == SC_OP_W && v[j - 1].stage == v[k].stage &&
                      v[j - 1].mb == 3);
                CHECK(k > 0 && (v[k - 1].op == SC_OP_W || v[k - 1].op == SC_OP_REDUCE_GRAD));
            }
            CHECK(count == 2);
        }
        sc_prog_free(pg);
    }
}

int main(void)
{
    RUN(proof);
    RUN(no_fsdp);
    RUN(timing);
    RUN(lowered);
    return harness_done("fsdp");
}
