/*
 * offload.h — the offload plan (PipeOffload, arXiv 2503.01328;
 * docs/semantics.md#host-copies, docs/offload.md): a stage of the pipeline after the
 * transfers are lowered. From the program's policy (ir/offload_cfg.h) and the timing
 * of its streams without offload, it decides which records go to host memory after
 * their F and come back before their B, and inserts, on the record's device:
 *
 *     F s mb                 allocates the record
 *     OFFLOAD s mb q         right after F: starts copying q of it to the host
 *     ...
 *     DROP s mb q            once the copy has completed: frees q of it
 *     ...
 *     RELOAD s mb q          early enough: allocates q again, starts the copy back
 *     ...
 *     B s mb  (or BW)        waits for that copy
 *
 * Placement: OFFLOAD right after F; DROP before the first pass that starts
 * after the copy has completed (so it never waits); RELOAD as late as the
 * host-to-device queue allows while still completing before B starts. A
 * record whose window (B start − B duration − F end) is shorter than three
 * transfer times stays on the device (PipeOffload skips them: nothing to
 * gain) unless the policy is a table. A policy whose moves would delay any
 * pass is refused (SC_ERR_PROGRAM) with the record and the shortfall;
 * `budget` offloads less instead.
 *
 * The compile driver (compile.h) runs it in three steps, each a function of
 * the step before:
 *
 *     sc_offload_plan *pl;
 *     sc_offload_plan_new(pg, &base, &pl);  // base: replay of the streams
 *                                           // without offload; rewrites them
 *     sc_offload_plan_check(pl, &now);      // now: replay of the new streams;
 *     sc_offload_plan_free(pl);             // no pass starts later than in base
 *
 * The plan keeps a pointer to `base` until it is freed. Results go to the
 * program (sc_prog_offload_info).
 *
 * Tested by: tests/unit/test_offload.c, tests/lua/test_offload.lua.
 */
#ifndef SC_OFFLOAD_H
#define SC_OFFLOAD_H

#include "ir/offload_cfg.h"

typedef struct sc_offload_plan sc_offload_plan;

/* Plans the moves of the program's policy (not NONE) from the timing of its
 * lowered streams without offload, and replaces the streams with ones that
 * hold the host copies. On failure *out is NULL and the streams may be
 * partly replaced: the caller drops them. */
sc_status sc_offload_plan_new(sc_prog *pg, const sc_times *base, sc_offload_plan **out);

/* The plan's promise on the replay of the new streams: no compute pass
 * starts later than in base; else SC_ERR_PROGRAM naming the pass. */
sc_status sc_offload_plan_check(const sc_offload_plan *pl, const sc_times *now);

void sc_offload_plan_free(sc_offload_plan *pl);

#endif
