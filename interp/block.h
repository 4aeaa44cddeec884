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
 * sc_block_unroll repeats the block for the program's m microbatches and
 * orders each device's passes by start time (ties: earlier microbatch,
 * then F < B < W, then stage): the squeeze itself is the dataflow timing,
 * which keeps this order and starts each pass as early as it can.
 *
 * offsets: off[SC_OP_F][s], off[SC_OP_B][s], off[SC_OP_W][s] for split
 * backward, or off[SC_OP_BW][s] for fused (then B and W are NULL).
 */
#ifndef SC_BLOCK_H
#define SC_BLOCK_H

#include "ir.h"

typedef struct sc_block {
    const double *off[4]; /* indexed by SC_OP_F, SC_OP_B, SC_OP_W, SC_OP_BW */
    double interval;
} sc_block;

sc_status sc_block_check(sc_prog *pg, const sc_block *blk);
sc_status sc_block_unroll(sc_prog *pg, const sc_block *blk);

#endif
