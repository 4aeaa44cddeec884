/*
 * test_graph_check.c — run --graph's check (runtime/exec/exec_graph.c,
 * sc_exec_graph_check; docs/graphs.md): which programs' steps can be
 * captured, and the first reason why not for the others, naming the
 * device, the instruction and what it is.
 */
#include "compile.h"
#include "exec/exec.h"
#include "harness.h"
#include "ir/ir.h"
#include "schedule/rules.h"

#include <string.h>

static sc_prog *rule_prog(int p, int m, const char *rule, int steps, int sync)
{
    sc_prog *pg = sc_prog_new(p, p, m);
    if (!pg || sc_rule_fill(pg, rule) != SC_OK || sc_prog_set_steps(pg, steps) != SC_OK ||
        sc_prog_set_optim_sync(pg, sync) != SC_OK || sc_check(pg) != SC_OK) {
        sc_prog_free(pg);
        return NULL;
    }
    return pg;
}

static int safe(sc_prog *pg, char *why, size_t len)
{
    why[0] = 0;
    return pg && sc_exec_graph_check(pg, why, len);
}

static void test_recipes(void)
{
    const char *rules[] = {"gpipe", "1f1b", "zb-h1"};
    char why[256];
    for (int i = 0; i < 3; i++) {
        sc_prog *pg = rule_prog(4, 8, rules[i], 3, SC_SYNC_NONE);
        CHECK(pg != NULL);
        CHECK(safe(pg, why, sizeof why));
        if (why[0])
            fprintf(stderr, "  %s: %s\n", rules[i], why);
        sc_prog_free(pg);
        pg = rule_prog(4, 8, rules[i], 2, SC_SYNC_SYNC); /* sync's collectives are eager */
        CHECK(safe(pg, why, sizeof why));
        sc_prog_free(pg);
    }
}

static void test_refusals(void)
{
    char why[256];
    sc_prog *pg = rule_prog(2, 4, "1f1b", 1, SC_SYNC_NONE);
    CHECK(pg && !safe(pg, why, sizeof why));
    CHECK_STR(why, "the program has 1 step");
    sc_prog_free(pg);
    pg = rule_prog(2, 4, "1f1b", 3, SC_SYNC_POSTVAL);
    CHECK(pg && !safe(pg, why, sizeof why));
    CHECK_STR(why, "post-validation");
    sc_prog_free(pg);
}

/* One device, one stage, one microbatch a step, three steps: F B W REDUCE
 * OPTIM each; extra: an instruction put into step `at` before its W. */
static sc_prog *hand_prog(sc_instr extra, int at)
{
    sc_prog *pg = sc_prog_new(1, 1, 1);
    CHECK(pg && sc_prog_set_steps(pg, 3) == SC_OK);
    for (int k = 0; pg && k < 3; k++) {
        int ops[] = {SC_OP_F, SC_OP_B, SC_OP_W};
        for (int i = 0; i < 3; i++) {
            if (i == 2 && k == at) {
                extra.mb = k;
                CHECK(sc_prog_push_stream(pg, 0, extra) == SC_OK);
            }
            sc_instr in = {.op = (uint8_t)ops[i], .stage = 0, .mb = k, .peer = -1};
            CHECK(sc_prog_push_stream(pg, 0, in) == SC_OK);
        }
        sc_instr red = {.op = SC_OP_REDUCE, .stage = -1, .mb = -1, .peer = -1};
        sc_instr opt = {.op = SC_OP_OPTIM, .stage = -1, .mb = -1, .peer = -1};
        CHECK(sc_prog_push_stream(pg, 0, red) == SC_OK && sc_prog_push_stream(pg, 0, opt) == SC_OK);
    }
    return pg;
}

static void test_by_hand(void)
{
    char why[256];
    sc_instr none = {.op = 0xff};
    sc_prog *pg = hand_prog(none, -1);
    CHECK(safe(pg, why, sizeof why));
    sc_prog_free(pg);
    /* Offload in step 2: named with its device and place. */
    sc_instr off = {.op = SC_OP_OFFLOAD, .stage = 0, .frac = 100};
    pg = hand_prog(off, 1);
    CHECK(pg && !safe(pg, why, sizeof why));
    CHECK_STR(why, "--graph: offload copies wait on the host (d0, instruction 7 OFFLOAD s0 mb1");
    CHECK_STR(why, "not capturable");
    sc_prog_free(pg);
    /* ... in step 1 (eager): fine; in step 3: step 3 is not step 2's replay. */
    pg = hand_prog(off, 0);
    CHECK(safe(pg, why, sizeof why));
    sc_prog_free(pg);
    sc_instr r = {.op = SC_OP_R, .stage = 0, .frac = 100};
    pg = hand_prog(r, 1);
    CHECK(pg && !safe(pg, why, sizeof why));
    CHECK_STR(why, "recomputed");
    sc_prog_free(pg);
    sc_instr w = {.op = SC_OP_W, .stage = 0};
    pg = hand_prog(w, 2);
    CHECK(pg && !safe(pg, why, sizeof why));
    CHECK_STR(why, "d0's step 3 differs from step 2 (instruction 12)");
    sc_prog_free(pg);
}

int main(void)
{
    RUN(recipes);
    RUN(refusals);
    RUN(by_hand);
    return harness_done("graph_check");
}
