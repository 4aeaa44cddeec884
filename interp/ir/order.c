/*
 * order.c — appending to a program: passes and pairs to the orders, given
 * instructions to the streams (ir.h, pair.h).
 */
#include "ir_impl.h"

/* Appends to the order; the caller decides what becomes stale. */
static sc_status push_order(sc_prog *pg, int d, int op, int stage, int mb)
{
    if (d < 0 || d >= pg->P)
        return sc_fail(pg, SC_ERR_ARG, "device %d is out of range (0..%d)", d, pg->P - 1);
    if ((unsigned)op >= SC_OP_COUNT || !sc_op_is_pass(op))
        return sc_fail(pg, SC_ERR_ARG, "device %d: '%s' is not a compute pass", d, sc_op_name(op));
    if (sc_op_is_vocab(op) && stage != d)
        return sc_fail(pg, SC_ERR_ARG, "device %d: %s names the shard of device %d (a vocabulary "
                       "pass runs on its own device's shard)", d, sc_op_name(op), stage);
    if (stage < 0 || stage >= pg->S)
        return sc_fail(pg, SC_ERR_ARG, "device %d: %s of stage %d: stages are 0..%d", d,
                       sc_op_name(op), stage, pg->S - 1);
    if (mb < 0 || mb >= pg->m)
        return sc_fail(pg, SC_ERR_ARG, "device %d: %s of microbatch %d: microbatches are 0..%d", d,
                       sc_op_name(op), mb, pg->m - 1);
    return sc_order_add(pg, d, (sc_instr){.op = (uint8_t)op, .stage = stage, .mb = mb, .peer = -1});
}

sc_status sc_order_add(sc_prog *pg, int d, sc_instr in)
{
    size_t n = sc_op_is_pair(in.op) ? 2 : 1;
    /* Checked before the memory is taken: a recipe that repeats a pass
     * without end fails here, not in the allocator. */
    if (pg->npasses + n > sc_prog_max_passes(pg))
        return sc_fail(pg, SC_ERR_PROGRAM,
                       "device %d: too many passes: %d stage%s x %d microbatch%s have at most %zu "
                       "(F, B and W of each), so a pass is given twice",
                       d, pg->S, pg->S == 1 ? "" : "s", pg->m, pg->m == 1 ? "" : "es",
                       sc_prog_max_passes(pg));
    if (sc_vec_push(&pg->order[d], in) != SC_OK)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    pg->npasses += n;
    return SC_OK;
}

sc_status sc_prog_push(sc_prog *pg, int d, int op, int stage, int mb)
{
    sc_status st = push_order(pg, d, op, stage, mb);
    if (st == SC_OK && (pg->lowered || pg->verified))
        sc_prog_invalidate(pg);
    return st;
}

sc_status sc_prog_push_stream(sc_prog *pg, int d, sc_instr in)
{
    if (d < 0 || d >= pg->P)
        return sc_fail(pg, SC_ERR_ARG, "device %d is out of range (0..%d)", d, pg->P - 1);
    if (in.op >= SC_OP_COUNT)
        return sc_fail(pg, SC_ERR_ARG, "device %d: unknown instruction kind %d", d, in.op);
    if (sc_op_is_coll(in.op))
        return sc_fail(pg, SC_ERR_ARG, "device %d: a collective is given with its description "
                       "(sc_prog_push_coll)", d);
    /* Each pass brings at most two transfers (in and out), each record three
     * host copies (OFFLOAD, DROP, RELOAD), each device one REDUCE and one
     * OPTIM: more than that is not a lowered program. */
    if (pg->ngiven >= (4 * sc_prog_max_passes(pg) + 8 * (size_t)pg->P) * (size_t)pg->steps)
        return sc_fail(pg, SC_ERR_PROGRAM,
                       "device %d: too many instructions for %d stages x %d microbatches (at "
                       "most %zu)",
                       d, pg->S, pg->m,
                       (4 * sc_prog_max_passes(pg) + 8 * (size_t)pg->P) * (size_t)pg->steps);
    pg->nmb = pg->m * pg->steps; /* given streams hold every step */
    /* Passes of later steps are copies of step 0's (sc_verify_steps). */
    if (sc_op_is_pass(in.op) && !(in.mb >= pg->m && in.mb < pg->nmb)) {
        sc_status st = push_order(pg, d, in.op, in.stage, in.mb);
        if (st)
            return st;
    } else if (sc_op_is_pair(in.op) && !(in.mb >= pg->m && in.mb < pg->nmb)) {
        sc_instr b = sc_pair_half(&in);
        sc_status st = sc_prog_push_pair(pg, d, in.stage, in.mb, b.op, b.stage, b.mb);
        if (st)
            return st;
    }
    if (sc_vec_push(&pg->stream[d], in) != SC_OK)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    pg->ngiven++;
    pg->lowered = pg->given = 1;
    pg->verified = 0;
    return SC_OK;
}

void sc_prog_clear_order(sc_prog *pg, int d)
{
    if (d >= 0 && d < pg->P) {
        pg->npasses -= pg->order[d].n;
        pg->order[d].n = 0;
        sc_prog_invalidate(pg);
    }
}

sc_status sc_prog_push_pair(sc_prog *pg, int d, int fstage, int fmb, int bop, int bstage, int bmb)
{
    if (d < 0 || d >= pg->P)
        return sc_fail(pg, SC_ERR_ARG, "device %d is out of range (0..%d)", d, pg->P - 1);
    if (bop != SC_OP_B && bop != SC_OP_BW)
        return sc_fail(pg, SC_ERR_ARG, "device %d: a pair runs F with B or BW, not with %s", d,
                       sc_op_name(bop));
    int st[2] = {fstage, bstage}, mb[2] = {fmb, bmb}, op[2] = {SC_OP_F, bop};
    for (int i = 0; i < 2; i++) {
        if (st[i] < 0 || st[i] >= pg->S)
            return sc_fail(pg, SC_ERR_ARG, "device %d: %s of stage %d in a pair: stages are 0..%d",
                           d, sc_op_name(op[i]), st[i], pg->S - 1);
        if (mb[i] < 0 || mb[i] >= pg->m)
            return sc_fail(pg, SC_ERR_ARG,
                           "device %d: %s of microbatch %d in a pair: microbatches are 0..%d", d,
                           sc_op_name(op[i]), mb[i], pg->m - 1);
        if (pg->stage_dev[st[i]] != d)
            return sc_fail(pg, SC_ERR_PROGRAM,
                           "pass on the wrong device: the pair's %s s%d mb%d is on d%d, but "
                           "stage %d is placed on d%d",
                           sc_op_name(op[i]), st[i], mb[i], d, st[i], pg->stage_dev[st[i]]);
    }
    sc_status s = sc_order_add(pg, d, sc_pair_make(fstage, fmb, bop, bstage, bmb));
    if (s == SC_OK && (pg->lowered || pg->verified))
        sc_prog_invalidate(pg);
    return s;
}

