/*
 * test_plan_for.c — which frameworks run a candidate (interp/plan/plan_for.h):
 * Megatron-LM's 1F1B and interleaved 1F1B orders written out by hand, a
 * program that is Megatron's and one that is not, the V placement, the
 * knobs --for evaluates; and the plan's words (plan.h): the lean pick, the
 * cap as given, "no cap given", never "-0.00 %".
 */
#include "harness.h"
#include "plan/plan.h"
#include "plan/plan_for.h"

#include <stdio.h>
#include <string.h>

static sc_instr pass(int op, int stage, int mb)
{
    sc_instr in;
    memset(&in, 0, sizeof in);
    in.op = (uint8_t)op;
    in.stage = stage;
    in.mb = mb;
    return in;
}

TEST(megatron_orders)
{
    enum { F = SC_OP_F, B = SC_OP_BW };
    /* 1F1B, p 2, m 3, rank 0: one warm-up forward, then F/B, then B. */
    sc_instr r0[] = {pass(F, 0, 0), pass(F, 0, 1), pass(B, 0, 0), pass(F, 0, 2), pass(B, 0, 1),
                     pass(B, 0, 2)};
    CHECK(sc_plan_megatron_order(r0, 6, 2, 3, 1, 0));
    sc_instr r1[] = {pass(F, 1, 0), pass(B, 1, 0), pass(F, 1, 1), pass(B, 1, 1), pass(F, 1, 2),
                     pass(B, 1, 2)};
    CHECK(sc_plan_megatron_order(r1, 6, 2, 3, 1, 1));
    CHECK(!sc_plan_megatron_order(r1, 6, 2, 3, 1, 0)); /* rank 1's order is not rank 0's */
    sc_instr gp[] = {pass(F, 0, 0), pass(F, 0, 1), pass(F, 0, 2), pass(B, 0, 0), pass(B, 0, 1),
                     pass(B, 0, 2)};
    CHECK(!sc_plan_megatron_order(gp, 6, 2, 3, 1, 0)); /* GPipe's */
    /* Interleaved, p 2, v 2, m 2 (stage c·2 + d): rank 0 warms up with all
     * 2(2-0-1) + (2-1)·2 = 4 forwards; rank 1 with 2, then F/B. */
    sc_instr i0[] = {pass(F, 0, 0), pass(F, 0, 1), pass(F, 2, 0), pass(F, 2, 1),
                     pass(B, 2, 0), pass(B, 2, 1), pass(B, 0, 0), pass(B, 0, 1)};
    CHECK(sc_plan_megatron_order(i0, 8, 2, 2, 2, 0));
    sc_instr i1[] = {pass(F, 1, 0), pass(F, 1, 1), pass(F, 3, 0), pass(B, 3, 0),
                     pass(F, 3, 1), pass(B, 3, 1), pass(B, 1, 0), pass(B, 1, 1)};
    CHECK(sc_plan_megatron_order(i1, 8, 2, 2, 2, 1));
    CHECK(!sc_plan_megatron_order(i1, 8, 2, 3, 2, 1)); /* m not a multiple of p */
    sc_instr split[] = {pass(F, 0, 0), pass(SC_OP_B, 0, 0)};
    CHECK(!sc_plan_megatron_order(split, 2, 1, 1, 1, 0));
}

/* A program of P devices, S stages on a loop or V placement, each device's
 * order given as (op, stage, mb) triples. */
static sc_prog *prog(int P, int S, int m, sc_place place, const int *ops, const int *n)
{
    sc_prog *pg = sc_prog_new(P, S, m);
    if (!pg || sc_prog_set_placement(pg, place, NULL) != SC_OK)
        return pg;
    for (int d = 0, k = 0; d < P; d++)
        for (int j = 0; j < n[d]; j++, k += 3)
            sc_prog_push(pg, d, ops[k], ops[k + 1], ops[k + 2]);
    return pg;
}

TEST(shapes)
{
    enum { F = SC_OP_F, B = SC_OP_BW };
    int n[2] = {4, 4};
    const int onef1b[] = {F, 0, 0, F, 0, 1, B, 0, 0, B, 0, 1, /* rank 0 */
                          F, 1, 0, B, 1, 0, F, 1, 1, B, 1, 1};
    sc_prog *pg = prog(2, 2, 2, SC_PLACE_LOOP, onef1b, n);
    sc_plan_shape sh;
    sc_plan_shape_of(pg, &sh);
    CHECK(sh.placement == SC_PLAN_PLACE_LOOP && sh.chunks == 1 && sh.megatron == 1);
    CHECK(sh.runs_on == (SC_FW_BIT(SC_FW_MEGATRON) | SC_FW_BIT(SC_FW_TORCHTITAN) |
                         SC_FW_BIT(SC_FW_PYTORCH)));
    CHECK(strcmp(sc_plan_torch_class(&sh), "1F1B") == 0);
    sc_prog_free(pg);
    /* The same passes, rank 1 forward-first: not Megatron's, still PyTorch's. */
    const int gpipe[] = {F, 0, 0, F, 0, 1, B, 0, 0, B, 0, 1, F, 1, 0, F, 1, 1, B, 1, 0, B, 1, 1};
    pg = prog(2, 2, 2, SC_PLACE_LOOP, gpipe, n);
    sc_plan_shape_of(pg, &sh);
    CHECK(sh.megatron == 0 && !(sh.runs_on & SC_FW_BIT(SC_FW_MEGATRON)));
    CHECK(sh.runs_on & SC_FW_BIT(SC_FW_PYTORCH));
    CHECK(strstr(sc_plan_fw_why_not(&sh, SC_FW_MEGATRON), "not Megatron-LM's") != NULL);
    sc_prog_free(pg);
    /* The V placement: rank 0 holds stages 0 and 3. */
    const int v[] = {F, 0, 0, F, 3, 0, B, 3, 0, B, 0, 0, F, 1, 0, F, 2, 0, B, 2, 0, B, 1, 0};
    pg = prog(2, 4, 1, SC_PLACE_V, v, n);
    sc_plan_shape_of(pg, &sh);
    CHECK(sh.placement == SC_PLAN_PLACE_V && sh.chunks == 2);
    CHECK(strcmp(sc_plan_fw_why_not(&sh, SC_FW_MEGATRON), "the V placement") == 0);
    CHECK(sh.runs_on == (SC_FW_BIT(SC_FW_TORCHTITAN) | SC_FW_BIT(SC_FW_PYTORCH)));
    CHECK(strcmp(sc_plan_torch_class(&sh), "ZBVZeroBubble") == 0);
    sc_prog_free(pg);
}

TEST(knobs)
{
    char k[160];
    CHECK(sc_plan_fw_knobs(SC_FW_MEGATRON, "interleaved", "mem=6 v=3", k, sizeof k) && !strcmp(k, "v=3"));
    CHECK(sc_plan_fw_knobs(SC_FW_MEGATRON, "1f1b", "mem=40GiB", k, sizeof k) && !strcmp(k, ""));
    CHECK(!sc_plan_fw_knobs(SC_FW_MEGATRON, "zb-h1", "mem=6", k, sizeof k));
    CHECK(!sc_plan_fw_knobs(SC_FW_MEGATRON, "1f1b", "mem=6 recompute=budget", k, sizeof k));
    CHECK(sc_plan_fw_knobs(SC_FW_PYTORCH, "zb-v", "mem=6", k, sizeof k) && !strcmp(k, "mem=6"));
    CHECK(!sc_plan_fw_knobs(SC_FW_TORCHTITAN, "zb-v", "mem=6 offload=budget", k, sizeof k));
    CHECK(!sc_plan_fw_knobs(SC_FW_PYTORCH, "1f1b", "vocab_par=vocab-1", k, sizeof k));
    CHECK(sc_plan_fw_parse("torchtitan") == SC_FW_TORCHTITAN && sc_plan_fw_parse("deepspeed") < 0);
}

TEST(words)
{
    /* The lean pick: 0.5 % slower in a quarter of the memory. */
    sc_plan *pl = sc_plan_new(80.0 * (1u << 30));
    sc_plan_set_units(pl, 1, "80GiB");
    sc_plan_add(pl, "zbv-auto", "", 3.82905, 0, 78.9 * (1u << 30), NULL); /* 0: the pick */
    sc_plan_add(pl, "zb-v", "", 3.84829, 0.0204, 20.04 * (1u << 30), NULL); /* 1: lean */
    sc_plan_add(pl, "1f1b", "", 4.5, 0.18, 16.0 * (1u << 30), NULL);       /* 2: too slow */
    sc_plan_set_bound(pl, 0, 3.82905 * (1 + 1e-14));                       /* rounding */
    sc_plan_finish(pl);
    CHECK(sc_plan_pick(pl) == 0 && sc_plan_lean(pl) == 1);
    CHECK(sc_plan_pct(sc_plan_gap(sc_plan_cand_at(pl, 0))) == 0);
    char why[640];
    sc_plan_why(pl, why, sizeof why);
    CHECK_STR(why, "fastest under cap 80 GiB: zbv-auto, makespan 3.82905, 0.00 % bubble, lower bound "
                   "3.82905, within 0.00 %; next zb-v 3.84829 (2.04 %), 1f1b 4.5 (18.00 %); least "
                   "memory within 1 % (~): zb-v, 0.50 % slower, 20.04 GiB (25 % of the pick's)");
    sc_plan_free(pl);
    /* No lean pick when the pick is the least memory within 1 %. */
    pl = sc_plan_new(0);
    sc_plan_add(pl, "a", "", 10, 0, 2, NULL);
    sc_plan_add(pl, "b", "", 10.05, 0, 8, NULL);
    sc_plan_finish(pl);
    CHECK(sc_plan_pick(pl) == 0 && sc_plan_lean(pl) == -1);
    sc_plan_free(pl);
    /* Nothing without a cap: said plainly. */
    pl = sc_plan_new(0);
    sc_plan_add(pl, "1f1b", "", 0, 0, 0, "refused");
    sc_plan_finish(pl);
    sc_plan_why(pl, why, sizeof why);
    CHECK_STR(why, "nothing to pick (no cap given): every candidate was refused or failed");
    sc_plan_free(pl);
    CHECK(sc_plan_pct(-1e-7) == 0 && sc_plan_pct(-0.01) < 0);
}

int main(void)
{
    RUN(megatron_orders);
    RUN(shapes);
    RUN(knobs);
    RUN(words);
    return harness_done("plan_for");
}
