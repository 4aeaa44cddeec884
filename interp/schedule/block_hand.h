/*
 * block_hand.h — a block's unrolled and reordered orders handed on from one
 * program to another (the block search's scratch program to the program of
 * the block it picked), so the reorder, the costly part of sc_block_unroll,
 * is not made twice.
 *
 * sc_block_hand_take, called right after sc_block_unroll(pg, blk) returned
 * SC_OK, copies pg's orders together with every input that unroll and its
 * reorder (reorder.h) read: the shape (P, S, m, copies, the placement), the
 * per-stage costs (tf, tb, tw, tbw, ta, tfb), the units (mem), w_keep,
 * tcomm, the vocabulary placement, the block (offsets, interval, slots,
 * keep_order, overlap) and the per-device caps sc_block_caps gives. Only a
 * block that is reordered is taken: one with keep_order, overlap or
 * vocabulary offsets gives NULL (so does a shortage of memory).
 *
 * sc_block_unroll_hand(pg, blk, h) is sc_block_unroll(pg, blk), to the bit:
 * with h non-NULL and every input above equal (bit for bit) it installs
 * h's orders (each device's order cleared, the passes pushed, npasses
 * counted as the unroll counts them); otherwise it unrolls. The caps are
 * computed either way, so a block refused by the cap is refused alike.
 *
 * Tested by: tests/unit/test_search.c, tests/lua/test_blocks.lua.
 */
#ifndef SC_BLOCK_HAND_H
#define SC_BLOCK_HAND_H

#include "block.h"
#include "ir/ir.h"

typedef struct sc_block_hand sc_block_hand;

sc_block_hand *sc_block_hand_take(sc_prog *pg, const sc_block *blk);
void sc_block_hand_free(sc_block_hand *h);
/* 1 when h was taken from a program and block with the inputs of pg and
 * blk (then sc_block_unroll_hand installs h's orders). */
int sc_block_hand_fits(sc_prog *pg, const sc_block *blk, const sc_block_hand *h);
sc_status sc_block_unroll_hand(sc_prog *pg, const sc_block *blk, const sc_block_hand *h);

#endif
