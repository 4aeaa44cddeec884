/*
 * block.h — building blocks (Controllable Memory paper): the start offset
 * of every pass of one microbatch, and an interval T; microbatch i is the
 * block shifted by i*T.
 *
 * sc_block_check proves the block valid:
 *   - no two passes of one device overlap modulo T (a pass occupies
 *     [offset, offset + duration) with the stage's costs);
 *   - every dependency is met inside the block: a pass starts no earlier
 *     than the end of the pass it depends on.
 * Offsets are in compute time: T_comm is not part of a block (a block fixes
 * the order of passes; the squeeze adds communication when it times them).
 * With `slots` set, offsets count slots instead: F, B and W take one slot,
 * BW two, whatever the costs (the paper's notation; the costs then only
 * time the unrolled order).
 *
 * Lifespans: the activation of stage s lives from the start of its F to the
 * end of its W (or BW); with w_keep < 1 only that fraction outlives B. The
 * peak memory of a device in the steady state follows from the lifespans and
 * T alone: at any time, ceil-like counts of each lifespan's copies overlap
 * (sc_block_peak). The order, not the timing, decides memory, so the
 * simulator measures the same peak on the unrolled program once m is large
 * enough for the steady state; the warm-up and the cool-down never exceed
 * it.
 *
 * sc_block_unroll repeats the block for the program's m microbatches and
 * orders each device's passes by start time (ties: earlier microbatch,
 * then F < B < W, then stage); unless keep_order is set it then reorders
 * the warm-up and the cool-down (reorder.h) under a memory cap: the
 * program's mem limit when it has one, else each device's block peak. A
 * block whose peak exceeds the mem limit is refused.
 *
 * offsets: off[SC_OP_F][s], off[SC_OP_B][s], off[SC_OP_W][s] for split
 * backward, or off[SC_OP_BW][s] for fused (then B and W are NULL).
 *
 * Overlapped pairs in a block (overlap set; docs/blocks.md#pairs-in-a-block):
 * an F and a backward (B or BW) of one device whose offsets are equal
 * modulo T run as one overlapped pair (docs/guide.md#overlapped-pairs): F
 * of microbatch i + k with the backward of microbatch i, k = (backward's
 * offset - F's) / T. The pair occupies [offset, offset + its time) (slots:
 * the halves' slots together) in the collisions, both halves are done when
 * it ends, F's record is taken at its start and the backward's freed at its
 * end. Unrolled, the two join into one instruction where both microbatches
 * exist (the warm-up's F's and the cool-down's backwards run alone); the
 * order is then kept (no reorder), and a block with pairs places no
 * vocabulary passes.
 *
 * Vocabulary passes in a block (voff): they take part in the collisions of
 * their device, and their dependencies are met inside the block: S after F
 * of the last stage, T after every S, the last stage's backward after
 * every S (vocab-1) or T (vocab-2), F of stage 0 after every E, EW after B
 * of stage 0 (collectives take no block time, as T_comm). Unrolled, they
 * keep the block's order: no reorder.
 *
 * Tested by: tests/lua/test_blocks.lua, tests/unit/test_interp.c.
 */
#ifndef SC_BLOCK_H
#define SC_BLOCK_H

#include "ir/ir.h"

typedef struct sc_block {
    const double *off[4]; /* indexed by SC_OP_F, SC_OP_B, SC_OP_W, SC_OP_BW */
    double interval;
    int slots;      /* offsets in slots: F, B, W take one slot, BW two */
    int keep_order; /* unroll without reordering warm-up and cool-down */
    int overlap;    /* an F and a backward equal modulo T are a pair (above) */
    /* A split vocabulary's passes in the block (docs/vocab.md#placing-the-passes): the offsets
     * of S, T, E, EW on each device ([P] each), or all NULL: then they are
     * placed after unrolling (schedule/vocab.h). */
    const double *voff[4];
} sc_block;

typedef struct sc_lifespan {
    int stage, device;
    double start, b_end, end; /* F start, B (or BW) end, W (or BW) end */
} sc_lifespan;

/* Duration of pass op of stage s inside the block (a pass alone). */
double sc_block_dur(const sc_prog *pg, const sc_block *blk, int op, int s);
/* Duration of pass op of stage s as it runs: its pair's time when it is
 * half of one (overlap), else sc_block_dur. */
double sc_block_span(const sc_prog *pg, const sc_block *blk, int op, int s);
sc_status sc_block_check(sc_prog *pg, const sc_block *blk);
/* ls[S]: the lifespan of every stage (the block must be valid). */
sc_status sc_block_lifespans(sc_prog *pg, const sc_block *blk, sc_lifespan *ls);
/* peak[P]: steady-state peak memory of every device, in units. */
sc_status sc_block_peak(sc_prog *pg, const sc_block *blk, double *peak);
/* w[S]: places each W at the first free place after its B (on each device,
 * B by B in time order), for a block that gives F and B only. */
sc_status sc_block_place_w(sc_prog *pg, const sc_block *blk, double *w);
/* off[S] from the compact form: chunk c of device d starts at
 * first[c] + d * delta[c] (c < the most chunks of any device). */
void sc_block_pattern(const sc_prog *pg, const double *first, const double *delta, double *off);
/* cap[P]: the cap each device's reorder keeps to in sc_block_unroll: the
 * program's cap (sc_prog_mem_cap) where it has one, else the device's block
 * peak; SC_ERR_PROGRAM (sc_fail_cap) when a peak exceeds the cap. */
sc_status sc_block_caps(sc_prog *pg, const sc_block *blk, double *cap);
sc_status sc_block_unroll(sc_prog *pg, const sc_block *blk);

/* block_vocab.c: the checks of a block's vocabulary passes (collisions with
 * every pass of their device, dependencies), called by sc_block_check. */
sc_status sc_block_vocab_check(sc_prog *pg, const sc_block *blk);

#endif
