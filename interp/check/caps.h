/*
 * caps.h — the memory cap as a promise (docs/guide.md#memory-model): no
 * device's memory passes its cap (`mem`, one for every device or one per
 * device) at any point of its lowered stream.
 *
 * The level is walked in stream order, each instruction adding its memory
 * effect (sc_instr_mem: F allocates its record, B, W and BW free it, host
 * copies and recomputation move their fractions), exactly as the
 * simulator and the runtime's activation pool count it, so a program that
 * passes holds its promise on every backend. The compile driver runs it on
 * the final streams (with the offload plan's copies): a schedule with a
 * memory knob has used it before (sc_cap_fit, blocks, the automatic
 * scheduler), a memory policy has planned for it (budget), and whatever
 * still passes the cap is refused here, in one line that names the device,
 * the instruction where the level first passes the cap, and what the
 * schedule needs (sc_prog_cap_refused is then true).
 *
 *     if (sc_verify_caps(pg) != SC_OK) puts(sc_errmsg(pg));
 *
 * Precondition: the program is lowered.
 *
 * Tested by: tests/lua/test_memory.lua.
 */
#ifndef SC_CAPS_H
#define SC_CAPS_H

#include "ir/ir.h"

sc_status sc_verify_caps(sc_prog *pg);

/* The peak of every device's lowered stream into peak[P] (units). */
void sc_stream_peaks(const sc_prog *pg, double *peak);

#endif
