/*
 * recompute.h — the recomputation plan (docs/recompute.md): a stage of the
 * pipeline after the transfers are lowered and before the offload plan.
 * From the program's policy (ir/recompute_cfg.h) and the timing of its
 * streams, it decides which records drop part of themselves after their F
 * and recompute it before their B, and rewrites each device's stream:
 *
 *     F s mb                 allocates the record
 *     DROP s mb q            right after F, with no OFFLOAD before it:
 *     ...                    frees q of it at once (nothing is copied)
 *     R s mb q               right before the record's B (or BW): allocates
 *     B s mb  (or BW)        q again and recomputes it from the record's
 *                            kept input (the stage's input), taking
 *                            q · (time / frac) · T_F
 *
 * Policies: all (every record, frac of it), selective (per device the
 * `chunks` chunks with the longest lifespans, as offload's), budget (per
 * device the least in that order, in steps of 1/64 chunk, that brings the
 * device's peak to mem: the peak follows from the streams' order, so no
 * timing is needed), a table (per record). Fractions are rounded to what
 * the runtime can drop (sc_recompute_quantize: never the input part).
 * Records that offload moves are not recomputed, nor the other way round:
 * the offload plan that follows leaves recomputed records on the device.
 *
 * `levels` (may be NULL) gives each device's level instead of the policy's
 * (the compile driver's mix of the two budgets, compile.h).
 *
 *     sc_recompute_plan(pg, &base, NULL);   // base: the replay of the streams
 *
 * Results go to the program (sc_prog_recompute_info, pg->rc_q). On failure
 * the streams may be partly rewritten: the caller drops them.
 *
 * Tested by: tests/lua/test_memory.lua, tests/unit/test_offload.c.
 */
#ifndef SC_RECOMPUTE_H
#define SC_RECOMPUTE_H

#include "ir/recompute_cfg.h"

sc_status sc_recompute_plan(sc_prog *pg, const sc_times *base, const double *levels);

#endif
