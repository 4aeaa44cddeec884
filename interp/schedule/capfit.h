/*
 * capfit.h — the memory knob of an order: its forwards wait for memory
 * (docs/guide.md#memory-model).
 *
 * sc_cap_fit rewrites every device's order so that the device's memory
 * stays within its cap (sc_prog_mem_cap). Walking the order with the level
 * of memory after each pass: a pass that allocates (F) and would take the
 * level above the cap waits; the first pass later in the order that frees
 * memory (W, BW; B when w_keep < 1) and can run before it moves in front of
 * it, with the passes of this device it needs (its record's B before a W;
 * the microbatch's B of the device's later stages before its B). A pass
 * can run before the waiting forward when the forwards of its microbatch on
 * its stage and on every later stage of this device have run. Then the
 * forward is tried again; when nothing can move, it runs over the cap, and
 * the promise check (check/caps.h) refuses the program. Relative order is
 * kept otherwise: the passes that move keep theirs, and every other pass
 * stays where it was among the rest.
 *
 * For the rules this is their warm-up shortened: 1F1B runs min(p−d−1,
 * ⌊mem⌋−1) warm-up forwards, ZB-H1 min(p−d, ⌊mem⌋), GPipe keeps at most
 * ⌊mem⌋ microbatches in flight (1F1B with that warm-up on every device);
 * interleaved, ZB-H2, ZB-V and 1F1B-V issue their warm-up forwards until
 * the cap and then alternate (docs/recipes.md).
 *
 * The rewritten orders must not form a cycle across devices (sc_dataflow).
 * Per-device caps can make one (a device early in the pipeline that waits
 * for its backward passes while a later one still runs forwards it needs);
 * the fit is then run again with the smallest cap on every device, and when
 * that forms a cycle too, the orders stay as they were. sc_cap_fit also
 * records, per device, the least peak it reaches (every forward waiting as
 * long as a backward pass can move: caps of zero), which the refusal names
 * as what the schedule needs (pg->cap_need).
 *
 * Precondition: sc_verify_passes(pg) == SC_OK; before lowering. Does
 * nothing without a finite cap. Errors: SC_ERR_NOMEM.
 *
 * Tested by: tests/lua/test_memory.lua.
 */
#ifndef SC_CAPFIT_H
#define SC_CAPFIT_H

#include "ir/ir.h"

sc_status sc_cap_fit(sc_prog *pg);

/* The peak of every device's order (its passes' memory in order), in
 * units, into peak[P]. */
void sc_order_peaks(const sc_prog *pg, double *peak);

#endif
