/*
 * test_opkinds.c — the table of instruction kinds (ir.h): names and the
 * parser round-trip, the classes and roles say what the kinds of today
 * are, the index maps agree with each other, the memory and cost
 * columns give what the cost model says (docs/guide.md#memory-model), and
 * the look column gives every drawn kind its letter, colours and legend.
 */
#include "harness.h"
#include "ir/ir.h"
#include "ir/ir_impl.h"

#include <stdlib.h>
#include <string.h>

TEST(names_and_parser)
{
    for (int op = 0; op < SC_OP_COUNT; op++) {
        CHECK(sc_op_parse(sc_op_name(op)) == op);
        for (int b = op + 1; b < SC_OP_COUNT; b++)
            CHECK(strcmp(sc_op_name(op), sc_op_name(b)) != 0);
    }
    CHECK(sc_op_parse("R") == SC_OP_R && sc_op_parse("") == -1 && sc_op_parse("f") == -1);
    CHECK_STR(sc_op_name(-1), "?");
    CHECK_STR(sc_op_name(SC_OP_COUNT), "?");
    /* The order texts: the longest pass name that starts the token. */
    size_t len;
    CHECK(sc_op_parse_pass("BW3", 3, &len) == SC_OP_BW && len == 2);
    CHECK(sc_op_parse_pass("B3", 2, &len) == SC_OP_B && len == 1);
    CHECK(sc_op_parse_pass("EW0.1", 5, &len) == SC_OP_EW && len == 2);
    CHECK(sc_op_parse_pass("BW", 1, &len) == SC_OP_B && len == 1); /* only n characters */
    CHECK(sc_op_parse_pass("SEND1", 5, &len) == SC_OP_S && len == 1); /* SEND is no pass */
    CHECK(sc_op_parse_pass("R1", 2, &len) == -1 && len == 0); /* R: lowered, never ordered */
    CHECK(sc_op_parse_pass("REDUCE", 6, &len) == -1);
}

TEST(classes_and_roles)
{
    static const int stage[] = {SC_OP_F, SC_OP_B, SC_OP_W, SC_OP_BW};
    static const int vocab[] = {SC_OP_S, SC_OP_T, SC_OP_E, SC_OP_EW};
    for (int i = 0; i < 4; i++) {
        CHECK(sc_op_is_compute(stage[i]) && sc_op_is_pass(stage[i]) && !sc_op_is_vocab(stage[i]));
        CHECK(sc_op_is_vocab(vocab[i]) && sc_op_is_pass(vocab[i]) && !sc_op_is_compute(vocab[i]));
    }
    int npass = 0;
    for (int op = 0; op < SC_OP_COUNT; op++) {
        int classes = sc_op_is_pass(op) + sc_op_is_transfer(op) + sc_op_is_host(op) +
                      sc_op_is_coll(op) + sc_op_is_pair(op) + sc_op_is_wait(op) +
                      sc_op_is_fsdp(op) + (sc_op_class_of(op) == SC_OPK_STEP);
        CHECK(classes == 1);
        npass += sc_op_is_pass(op);
        /* Roles belong to stage passes; directions to transfers and host
         * copies; reductions and roots to collectives. */
        if (sc_op_has(op, SC_OPF_FWD | SC_OPF_BGRAD | SC_OPF_WGRAD))
            CHECK(sc_op_is_compute(op));
        if (sc_op_has(op, SC_OPF_OUT | SC_OPF_IN))
            CHECK(sc_op_is_transfer(op) || sc_op_is_host(op));
        if (sc_op_has(op, SC_OPF_REDUCES | SC_OPF_ROOTED))
            CHECK(sc_op_is_coll(op));
        CHECK(!(sc_op_has(op, SC_OPF_OUT) && sc_op_has(op, SC_OPF_IN)));
    }
    CHECK(npass == 9); /* F B W BW, S T E EW, R */
    /* FSDP (docs/fsdp.md): UNSHARD gathers (memory up, timed on the
     * data-parallel channel), RESHARD frees; neither is a pass. */
    CHECK(sc_op_is_fsdp(SC_OP_UNSHARD) && sc_op_is_fsdp(SC_OP_RESHARD) && !sc_op_is_slot(SC_OP_UNSHARD));
    CHECK(sc_op_mem_of(SC_OP_UNSHARD) == SC_OPM_ALLOC && sc_op_mem_of(SC_OP_RESHARD) == SC_OPM_FREE_ALL);
    CHECK(sc_op_cost_of(SC_OP_UNSHARD) == SC_OPC_GATHER && sc_op_cost_of(SC_OP_RESHARD) == SC_OPC_NONE);
    CHECK(sc_op_parse("UNSHARD") == SC_OP_UNSHARD && !sc_op_is_fsdp(SC_OP_F));
    /* REDUCE_GRAD: the gradients' reduce-scatter, timed on the same channel */
    CHECK(sc_op_is_fsdp(SC_OP_REDUCE_GRAD) && sc_op_mem_of(SC_OP_REDUCE_GRAD) == SC_OPM_NONE);
    CHECK(sc_op_cost_of(SC_OP_REDUCE_GRAD) == SC_OPC_SCATTER);
    CHECK(sc_op_is_compute(SC_OP_R) && sc_op_has(SC_OP_R, SC_OPF_FRAC) && !sc_op_is_fwd(SC_OP_R));
    CHECK(sc_op_has(SC_OP_DROP, SC_OPF_FRAC) && sc_op_stage_index(SC_OP_R) == -1);
    CHECK(sc_op_is_fwd(SC_OP_F) && !sc_op_is_fwd(SC_OP_B) && !sc_op_is_fwd(SC_OP_BW));
    CHECK(sc_op_is_bgrad(SC_OP_B) && sc_op_is_bgrad(SC_OP_BW) && !sc_op_is_bgrad(SC_OP_W));
    CHECK(sc_op_is_wgrad(SC_OP_W) && sc_op_is_wgrad(SC_OP_BW) && !sc_op_is_wgrad(SC_OP_B));
    CHECK(sc_op_is_send(SC_OP_SEND) && sc_op_is_recv(SC_OP_RECV) && !sc_op_is_send(SC_OP_OFFLOAD));
    CHECK(!sc_op_is_recv(SC_OP_RELOAD) && !sc_op_is_send(SC_OP_RECV));
    CHECK(sc_op_has(SC_OP_ALLREDUCE, SC_OPF_REDUCES) && sc_op_has(SC_OP_BCAST, SC_OPF_ROOTED));
    CHECK(sc_op_has(SC_OP_OPTIM, SC_OPF_READS_COLLS) && sc_op_has(SC_OP_VALIDATE, SC_OPF_READS_COLLS));
    CHECK(!sc_op_has(SC_OP_REDUCE, SC_OPF_READS_COLLS));
    CHECK(sc_op_slots(SC_OP_BW) == 2 && sc_op_slots(SC_OP_B) == 1 && sc_op_slots(SC_OP_F) == 1);
    /* A value out of range is no kind of anything. */
    CHECK(!sc_op_is_pass(SC_OP_COUNT) && !sc_op_is_transfer(200) && !sc_op_is_coll(-1));
}

TEST(index_maps)
{
    for (int i = 0; i < SC_VOCAB_PASSES; i++) {
        CHECK(sc_op_is_vocab(sc_vocab_op(i)));
        CHECK(sc_op_vocab_index(sc_vocab_op(i)) == i);
    }
    int nstage = 0;
    for (int op = 0; op < SC_OP_COUNT; op++) {
        int i = sc_op_stage_index(op);
        if (i < 0)
            continue;
        nstage++;
        CHECK(sc_op_is_compute(op) && i < SC_STAGE_PASSES);
    }
    CHECK(nstage == SC_STAGE_PASSES);
    CHECK(SC_STAGE_PASSES_PER_RECORD == 3 && SC_VOCAB_PASSES_PER_MB == SC_VOCAB_PASSES);
}

TEST(memory_and_cost_columns)
{
    sc_prog *pg = sc_prog_new(2, 2, 1);
    CHECK(pg != NULL);
    if (!pg)
        return;
    CHECK(sc_prog_set_cost(pg, -1, 1, 2, 3) == SC_OK);
    CHECK(sc_prog_set_mem(pg, -1, 4) == SC_OK);
    CHECK(sc_prog_set_w_keep(pg, 0.25) == SC_OK);
    CHECK(sc_op_mem(pg, SC_OP_F, 0) == 4);
    CHECK(sc_op_mem(pg, SC_OP_B, 0) == -3);
    CHECK(sc_op_mem(pg, SC_OP_W, 0) == -1);
    CHECK(sc_op_mem(pg, SC_OP_BW, 0) == -4);
    CHECK(sc_op_mem(pg, SC_OP_SEND, 0) == 0 && sc_op_mem(pg, SC_OP_E, 0) == 0);
    CHECK(sc_op_cost(pg, SC_OP_F, 1) == 1 && sc_op_cost(pg, SC_OP_B, 1) == 2);
    CHECK(sc_op_cost(pg, SC_OP_W, 1) == 3 && sc_op_cost(pg, SC_OP_BW, 1) == 5);
    CHECK(sc_op_cost(pg, SC_OP_RECV, 1) == 0 && sc_op_cost(pg, SC_OP_OPTIM, 1) == 0);
    sc_instr drop = {.op = SC_OP_DROP, .stage = 1, .mb = 0, .frac = SC_FRAC_ONE / 2};
    sc_instr reload = drop;
    reload.op = SC_OP_RELOAD;
    sc_instr offload = drop;
    offload.op = SC_OP_OFFLOAD;
    CHECK(sc_instr_mem(pg, &drop) == -2 && sc_instr_mem(pg, &reload) == 2);
    CHECK(sc_instr_mem(pg, &offload) == 0);
    sc_instr f = {.op = SC_OP_F, .stage = 0, .mb = 0, .flags = SC_IF_ROLLBACK};
    CHECK(sc_instr_mem(pg, &f) == 0); /* a redone F: its record exists */
    sc_prog_free(pg);
}

TEST(looks)
{
    for (int op = 0; op < SC_OP_COUNT; op++) {
        const sc_op_look *l = sc_op_look_of(op);
        int drawn = sc_op_is_pass(op) || sc_op_is_pair(op);
        CHECK(drawn == (l->legend != NULL) && (l->rgb != 0) == drawn);
        CHECK((l->letter != 0) == sc_op_is_pass(op) && (l->ansi != 0) == sc_op_is_pass(op));
        CHECK((l->torch != NULL) == (sc_op_stage_index(op) >= 0)); /* PyTorch: F I W B */
        for (int b = op + 1; drawn && b < SC_OP_COUNT; b++) { /* one legend, one colour each */
            const sc_op_look *o = sc_op_look_of(b);
            CHECK(!o->legend || (strcmp(l->legend, o->legend) != 0 && l->rgb != o->rgb));
        }
    }
    CHECK_STR(sc_op_look_of(SC_OP_B)->torch, "I");
    CHECK_STR(sc_op_look_of(SC_OP_BW)->torch, "B");
    CHECK(sc_op_look_of(SC_OP_BW)->letter == 'X' && sc_op_look_of(SC_OP_EW)->letter == 'e');
    CHECK(sc_op_look_of(-1)->legend == NULL && sc_op_look_of(SC_OP_COUNT)->letter == 0);
    CHECK(sc_op_look_of(200)->torch == NULL);
}

TEST(collective_primitives)
{
    /* The ring factor by the flags: a reduction 2(n-1)/n, else (n-1)/n. */
    CHECK(sc_coll_factor(SC_OP_ALLREDUCE, 4) == 1.5 && sc_coll_factor(SC_OP_BCAST, 4) == 0.75);
    CHECK(sc_coll_factor(SC_OP_ALLREDUCE, 1) == 0 && sc_coll_factor(SC_OP_F, 4) == 0);
    CHECK(sc_coll_factor(SC_OP_REDUCE_GRAD, 4) == 0 && sc_coll_factor(-1, 4) == 0);
}

int main(void)
{
    RUN(names_and_parser);
    RUN(classes_and_roles);
    RUN(index_maps);
    RUN(memory_and_cost_columns);
    RUN(looks);
    RUN(collective_primitives);
    return harness_done("opkinds");
}
