/*
 * pairing.h — overlapped pairs chosen for a program (docs/blocks.md#pairing):
 * F and B (or BW) passes that run next to each other on a device are joined
 * into pairs (docs/guide.md#overlapped-pairs) where that helps.
 *
 * sc_pair_greedy walks every device's order and tries each forward next to
 * a backward of another record (either first), or a pass and the first
 * one after up to SC_PAIR_LOOKAHEAD W's (the W's then follow the pair):
 * joined, the orders must
 * still verify (the halves may not depend on each other) and form no
 * dependency cycle, every device's peak memory (by the memory column, in
 * order) must stay within mem_limit, and the dataflow timing's makespan
 * (dataflow.h) may not grow; otherwise the two stay apart. A pair gains
 * where the cost model says so: tfb below tf + tb, or an all-to-all part
 * ta that a pair hides; without either (sc_prog_pair_gain 0) nothing is
 * joined. Linear in passes per attempt, so quadratic in all;
 * programs of more than SC_PAIR_MAX_PASSES passes are left as they are.
 * *npairs: the pairs made (may be NULL). The program's lowering is dropped
 * when anything changed.
 *
 *     if (sc_prog_pair_gain(pg) > 0)
 *         sc_pair_greedy(pg, sc_prog_mem_limit(pg), &n);
 *
 * Tested by: tests/lua/test_dualpipe.lua.
 */
#ifndef SC_PAIRING_H
#define SC_PAIRING_H

#include "ir/ir.h"

#define SC_PAIR_MAX_PASSES 20000
#define SC_PAIR_LOOKAHEAD 4 /* W's a backward may pass to meet its forward */

sc_status sc_pair_greedy(sc_prog *pg, double mem_limit, int *npairs);

/* The most a pair can save on any stage by the cost model: tf + tb - tfb,
 * or the all-to-all part a pair hides (min(ta, tf) per half, or its
 * latency part, ir/ep.h's sc_prog_ep_link_time); 0 when
 * pairing can only lose. */
double sc_prog_pair_gain(const sc_prog *pg);

#endif
