/*
 * ep.h — what lowering adds for expert parallelism (internal to lower/;
 * ir/ep.h, docs/semantics.md#expert-parallelism): after each pass of a
 * stage with experts (each half of a pair), its DISPATCH and COMBINE over
 * the device's EP group, tagged with the pass (part 0 and part 1); before
 * REDUCE, the all-reduce (sum) of the dense gradients over the group,
 * tagged W, which REDUCE reads. Every member of an EP group runs the same
 * stream, so the group's collectives come in one order on all of them.
 *
 * Tested by: tests/unit/test_a2a.c, tests/moe.sh.
 */
#ifndef SC_LOWER_EP_H
#define SC_LOWER_EP_H

#include "ir/ir_impl.h"

/* SC_OK, or the error naming the first setting ep > 1 is not combined
 * with yet; and each stage's all-to-all time put on its passes (ta). */
sc_status sc_lower_ep_prepare(sc_prog *pg);
/* How many collectives the passes of order ov get (room to reserve). */
size_t sc_lower_ep_count(const sc_prog *pg, const sc_vec *ov);
/* Appends the all-to-alls of pass (or pair) in to device d's stream. */
sc_status sc_lower_ep_pass(sc_prog *pg, int d, sc_vec *sv, const sc_instr *in);
/* Appends the dense gradients' all-reduce over d's EP group. */
sc_status sc_lower_ep_reduce(sc_prog *pg, int d, sc_vec *sv);

#endif
