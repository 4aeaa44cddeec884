/*
 * reorder.h — reordering of the warm-up and the cool-down of an unrolled
 * building block (Controllable Memory paper, "squeeze and reorder").
 *
 * sc_reorder builds several reorderings of the program's orders and keeps
 * the one whose timing (the dataflow timing with the program's costs and
 * T_comm) has the shortest longest device span (the bubble rate's
 * measure), then the shortest makespan, among those that keep every
 * device's memory within cap[d] at every point of its order; ties and a
 * tie with the orders as given keep the earlier (the given orders first).
 * The candidates:
 *   - list schedules: the squeeze with its idle time filled by later ready
 *     passes; W as filler (each W in the first idle time after its B, or
 *     when an F would pass the cap), its gaps filled;
 *   - placement rounds (the paper's reorder, generalized): all passes of
 *     all devices in one global order (their start), each moved to the
 *     earliest gap of its device after its input in which it fits and the
 *     memory stays within cap, so a consumer sees a moved producer at
 *     once; the steady state (from stage 0's first backward to stage 0's
 *     last forward) kept or not; then a round that takes the W's out,
 *     compacts the cool-down again and puts each W into the first gap
 *     after its B that it fits in (or before an F that would pass the
 *     cap). Each round runs with the real costs and T_comm and on the
 *     unit slot grid (F, B, W one slot, BW two: the paper's cost-oblivious
 *     grid), from the squeeze and from the block's own times at[] (slots
 *     when at_slots).
 * The search for gaps looks a bounded window of passes back. Programs of
 * more than 65,536 passes leave out the candidates that rarely win (the
 * rounds from the block's own times, the list schedules of the plain
 * order): there the warm-up and the cool-down are a small part.
 *
 * at (may be NULL) gives the block time of every pass, indexed like the
 * orders (device 0's first, ...). Precondition: sc_verify_passes() ==
 * SC_OK; inconsistent orders (a cycle across devices) are left as they are.
 *
 * Tested by: tests/unit/test_reorder.c.
 */
#ifndef SC_REORDER_H
#define SC_REORDER_H

#include "ir/ir.h"

sc_status sc_reorder(sc_prog *pg, const double *cap, const double *at, int at_slots);

#endif
