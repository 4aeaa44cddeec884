/*
 * vocab.h — placing the vocabulary passes (S, T, E, EW) of a program whose
 * vocabulary is split (vocab-1, vocab-2; docs/vocab.md#placing-the-passes) into the orders of
 * its transformer passes, as Vocabulary Parallelism (arXiv 2411.05288)
 * places them: each device issues its S next to the F or B it is running
 * when the last stage's output arrives (so devices differ in their order,
 * B S F or B F S, and in how many S they run in the warm-up); the last
 * stage's backward waits for the collectives, and meanwhile the devices go
 * on with their next forwards (the backward passes are moved 0..3
 * forwards later, the fastest kept, and with `lag` > 0 a device may also
 * run a later forward while its next backward waits); T
 * (vocab-1) and EW fill idle time, or run when two are pending; E runs a
 * little ahead of the first stage's forwards.
 *
 * It is a list schedule in time: the device that can start something
 * earliest chooses, in this order of priority, S; T with vocab-2 (on the
 * critical path); E when due; a T or EW two are pending of; the next pass
 * of its order; a later forward of its order when the next pass waits and
 * the allowance holds; a T or EW that is ready. The stage passes keep
 * their order but for those forwards. Times are the dataflow timing's
 * (dataflow.h: costs, T_comm, collectives after their producers). The
 * devices wait in a heap by their next decision's time, and a placed pass
 * decides again only the devices that read what it changed: O(P m log P)
 * per variant, as the V list scheduler (autosched_heur.c).
 *
 * Precondition: the orders hold the stage passes of every microbatch
 * (sc_verify_passes would accept them but for the vocabulary passes) and
 * no vocabulary pass. On success the orders hold both; SC_ERR_PROGRAM
 * when the orders cannot all run (a dependency cycle), with the devices
 * that wait named.
 *
 * Tested by: tests/unit/test_vocab.c.
 */
#ifndef SC_VOCAB_H
#define SC_VOCAB_H

#include "ir/ir.h"

/* lag: the memory allowance of the lookahead forwards, in microbatches of
 * a device's activations beyond its order's own peak (< 0: the default, 0:
 * no lookahead; the shifts of the backward passes, 0..3 forwards later,
 * give the collectives their time instead, the fastest kept). */
sc_status sc_vocab_place(sc_prog *pg, double lag);

/* Whether any device's order holds a vocabulary pass. */
int sc_vocab_placed(const sc_prog *pg);

#endif
