/*
 * search.h — the building blocks of the Controllable Memory paper's search
 * (its appendix), generalized from the V placement to any placement of
 * whole chunks (S = v P, each chunk of P consecutive stages on every device
 * once: loop, V, wave), offsets in slots (F, B, W one slot each), interval
 * 3v slots.
 *
 * A pattern fixes device 0 and uniform deltas between adjacent stages:
 *   F of stage s      at F(s-1) + k in the first chunk, + 1 in the others,
 *                     + 1 + af across the end of a chunk (F(0) = 0);
 *   B of the last stage at F(S-1) + 1 + aB;
 *   B of stage s      at B(s+1) + k in the last chunk, + 1 in the others,
 *                     + 1 + ab across the end of a chunk;
 * each W at the first free slot after its B. The slacks af, aB, ab delay a
 * pass beyond the earliest its dependency allows. On the V placement this
 * is the paper's pattern: F = k d, f = f_0 - d with f_0 = (k+1)(P-1) + 1 +
 * af, B = B_0 + k d with B_0 = f_0 + 1 + aB, b = b_last + (P-1-d) with
 * b_last = B_{P-1} + 1 + ab; V-Min is k = 1 and V-Half k = 2 (with the
 * slacks that avoid collisions); larger k keeps activations longer and
 * lowers the bubble.
 *
 * sc_vblock_search enumerates k = 1..kmax and slacks 0..5 and keeps the
 * valid blocks with their block peak (max over devices, units). It then
 * ranks those within the largest budget by their plain squeeze (on the
 * program, its m, costs and T_comm, without the reorder, timed by the
 * dataflow timing; sc_vblock_plain, from the block itself where it can), and for each budget unrolls the best within it
 * again with the reorder (under the block's own peak) and times them: as
 * many as SC_VSEARCH_WORK passes allow (all for small programs), at least
 * SC_VSEARCH_KEEP. Those are `timed`; the others keep the figures of their
 * plain squeeze. When a pair gains by the cost model (pairing.h), every
 * unrolled candidate gets its overlapped pairs (within its block peak)
 * before it is timed.
 * The program's orders are overwritten: use a scratch program.
 *
 * Tested by: tests/unit/test_search.c.
 */
#ifndef SC_SEARCH_H
#define SC_SEARCH_H

#include "block.h"
#include "block_hand.h"
#include "ir/ir.h"

typedef struct sc_vpattern {
    int k, af, aB, ab;
} sc_vpattern;

typedef struct sc_vcand {
    sc_vpattern pat;
    double peak, makespan, bubble_rate; /* after the reorder when timed, else plain */
    int timed;
} sc_vcand;

/* Blocks unrolled with the reorder per budget: as many as about
 * SC_VSEARCH_WORK passes of reordering take (every block of a small
 * program), at least SC_VSEARCH_KEEP. */
#define SC_VSEARCH_KEEP 2
#define SC_VSEARCH_WORK 131072

/* F and B offsets of the pattern into off[SC_OP_F*S ..], off[SC_OP_B*S ..],
 * W placed into off[SC_OP_W*S ..]; blk points there (slots, interval 3v).
 * off has room for 3*S numbers. Invalid blocks give SC_ERR_PROGRAM. */
sc_status sc_vpattern_block(sc_prog *pg, const sc_vpattern *pat, double *off, sc_block *blk);

/* The plain squeeze of blk (not reordered; paired where pairs gain, within
 * peak) timed by the dataflow timing: the makespan and the bubble rate
 * (1 - the busiest device's busy time / the longest device span). fast:
 * without unrolling where the block allows it (no pairs, no vocabulary
 * passes, B and W split, offsets and interval whole slots), the same
 * figures to the bit; the program's orders are then left as they were.
 * Otherwise, and when !fast, unrolled into the program's orders. times has
 * room for 6 S m numbers. */
sc_status sc_vblock_plain(sc_prog *pg, const sc_block *blk, double peak, int fast, double *times,
                          double *makespan, double *bubble);

/* Every valid pattern, the best within each of budgets[nb] (units) timed;
 * *cands is malloc'd (the caller frees). The program's stages must be
 * whole chunks of its devices (SC_ERR_ARG otherwise). hand (or NULL): with
 * one budget, the reordered orders of sc_vcand_best(*cands, *n,
 * budgets[0]) as the search unrolled them, before pairs (block_hand.h;
 * the caller frees), or NULL. */
sc_status sc_vblock_search(sc_prog *pg, int kmax, const double *budgets, int nb, sc_vcand **cands,
                           size_t *n, sc_block_hand **hand);

/* The best timed candidate with peak <= limit: least bubble (within
 * 1e-12), then least peak, the first of equals; NULL when none. */
const sc_vcand *sc_vcand_best(const sc_vcand *c, size_t n, double limit);

#endif
