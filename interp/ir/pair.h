/*
 * pair.h — overlapped pairs (docs/semantics.md#overlapped-pairs): F of one
 * (stage, microbatch) run together with B or BW of another on the same
 * device, as one instruction (SC_OP_FB) and one slot of the compute stream.
 * Included by ir.h; the kind's row is in its table.
 *
 *     sc_prog_push_pair(pg, 0, 0, 1, SC_OP_BW, 0, 0);  // d0: F s0 mb1 + BW s0 mb0
 *     sc_instr h[2];
 *     int n = sc_instr_halves(&in, h);   // 2 for a pair: h[0] its F, h[1] its B/BW
 *
 * Code that handles passes one by one handles a pair through its halves
 * (both at the pair's place, both timed as the pair); code that times the
 * compute stream takes the pair's own time (sc_prog_pair_time).
 * Tested by: tests/unit/test_pair.c.
 */
#ifndef SC_PAIR_H
#define SC_PAIR_H

#include "ir.h"

/* An overlapped pair (docs/semantics.md#overlapped-pairs): F of (stage,
 * mb) and B or BW of (bstage, bmb), run together on one device. The
 * backward half's stage is 16 bits (stages < SC_MAX_STAGES = 2^16): its
 * low byte in dir, its high byte in the low byte of flags; SC_IF_PAIR_BW
 * says the half is BW. The high bits of flags (SC_IF_ROLLBACK,
 * SC_IF_REDO_IN) keep their meaning. */
#define SC_IF_PAIR_BW 0x100u

static inline sc_instr sc_pair_make(int fstage, int fmb, int bop, int bstage, int bmb)
{
    sc_instr in = {.op = SC_OP_FB, .stage = fstage, .mb = fmb};
    in.dir = (uint8_t)(bstage & 0xff);
    in.flags = (uint16_t)(((unsigned)bstage >> 8) & 0xffu);
    if (bop != SC_OP_B)
        in.flags |= SC_IF_PAIR_BW;
    in.bmb = bmb;
    return in;
}

/* The B or BW half of pair `in`. */
static inline sc_instr sc_pair_half(const sc_instr *in)
{
    return (sc_instr){.op = (uint8_t)(in->flags & SC_IF_PAIR_BW ? SC_OP_BW : SC_OP_B),
                      .flags = (uint16_t)(in->flags & 0xc000u),
                      .stage = (int32_t)(in->dir | ((unsigned)(in->flags & 0xffu) << 8)),
                      .mb = in->bmb, .peer = -1};
}

/* The halves of an instruction: h[0] = the F half and h[1] = the B or BW
 * half of a pair (returns 2); the instruction itself otherwise (returns 1).
 * A half keeps the pair's SC_IF_ROLLBACK and SC_IF_REDO_IN flags. */
static inline int sc_instr_halves(const sc_instr *in, sc_instr h[2])
{
    h[0] = *in;
    h[1] = *in;
    if (in->op != SC_OP_FB)
        return 1;
    h[0] = (sc_instr){.op = SC_OP_F, .flags = (uint16_t)(in->flags & 0xc000u),
                      .stage = in->stage, .mb = in->mb, .peer = -1};
    h[1] = sc_pair_half(in);
    return 2;
}

/* Sets the microbatch numbers of both halves of pair `in` (steps renumber
 * them) or of any other instruction's mb. */
static inline void sc_instr_shift_mb(sc_instr *in, int by)
{
    if (in->mb >= 0)
        in->mb += by;
    if (in->op == SC_OP_FB)
        in->bmb += by;
}

/* Overlapped pairs (docs/guide.md#overlapped-pairs): the time of a pair of
 * F and B with stage s's costs, tfb (NAN, the default: tf + tb, no gain,
 * as DualPipe's authors count); and the communication part ta of stage s's
 * F, B and BW (an expert all-to-all, default 0): a pass alone takes its
 * time plus ta, a pair hides each half's ta under the other half's compute
 * and, with ep > 1, its latency under the other half's too
 * (sc_prog_ep_link_time; sc_prog_pair_time). s = -1: all stages. */
sc_status sc_prog_set_cost_pair(sc_prog *pg, int s, double tfb);
sc_status sc_prog_set_cost_a2a(sc_prog *pg, int s, double ta);
double sc_prog_tfb(const sc_prog *pg, int s); /* as set: NAN when not */
double sc_prog_ta(const sc_prog *pg, int s);
/* Time of pair instruction `in` on the compute stream. */
double sc_prog_pair_time(const sc_prog *pg, const sc_instr *in);
/* Memory pair `in` allocates before it frees: its F half's record. */
double sc_prog_pair_rise(const sc_prog *pg, const sc_instr *in);
/* Whether any order holds a pair. */
int sc_prog_has_pairs(const sc_prog *pg);
/* Append an overlapped pair to device d's order: F of (fstage, fmb) with
 * bop (SC_OP_B or SC_OP_BW) of (bstage, bmb). Checks ranges, the kinds and
 * that both stages are d's; sc_verify_passes() checks the rest (each half
 * counts as its pass; the two halves may not depend on each other). */
sc_status sc_prog_push_pair(sc_prog *pg, int d, int fstage, int fmb, int bop, int bstage,
                            int bmb);
#endif
