/*
 * search.h — the V-shape building blocks of the Controllable Memory paper
 * (its appendix): two chunks per device in the V placement (S = 2P),
 * offsets in slots (F, B, W one slot each), interval 6 slots.
 *
 * A pattern fixes device 0 and uniform deltas between adjacent devices:
 *   F (chunk 0, stage d)          starts at k*d,
 *   f (chunk 1, stage 2P-1-d)     at f_0 - d, f_0 = (k+1)(P-1) + 1 + af,
 *   B (chunk 1's backward)        at B_0 + k*d, B_0 = f_0 + 1 + aB,
 *   b (chunk 0's backward)        at b_last + (P-1-d), b_last = B_{P-1} + 1 + ab,
 * each W at the first free slot after its B. The slacks af, aB, ab delay a
 * pass beyond the earliest its dependency allows. V-Min is k = 1 and V-Half
 * k = 2 (with the slacks that avoid collisions); larger k keeps
 * activations longer and lowers the bubble.
 *
 * sc_vblock_search enumerates k = 1..kmax and slacks 0..5 and keeps the
 * valid blocks with their block peak (max over devices, units). It then
 * ranks those within the largest budget by their plain squeeze (unrolled
 * on the program, its m, costs and T_comm, without the reorder, timed by
 * the dataflow timing), and for each budget unrolls the best within it
 * again with the reorder (under the block's own peak) and times them: as
 * many as SC_VSEARCH_WORK passes allow (all for small programs), at least
 * SC_VSEARCH_KEEP. Those are `timed`; the others keep the figures of their
 * plain squeeze.
 * The program's orders are overwritten: use a scratch program.
 */
#ifndef SC_SEARCH_H
#define SC_SEARCH_H

#include "block.h"
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
 * W placed into off[SC_OP_W*S ..]; blk points there (slots, interval 6).
 * off has room for 3*S numbers. Invalid blocks give SC_ERR_PROGRAM. */
sc_status sc_vpattern_block(sc_prog *pg, const sc_vpattern *pat, double *off, sc_block *blk);

/* Every valid pattern, the best within each of budgets[nb] (units) timed;
 * *cands is malloc'd (the caller frees). The program must have the V
 * placement. */
sc_status sc_vblock_search(sc_prog *pg, int kmax, const double *budgets, int nb, sc_vcand **cands,
                           size_t *n);

#endif
