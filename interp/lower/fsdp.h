/*
 * fsdp.h — UNSHARD and RESHARD placed in lowered streams by the program's
 * FSDP policy (ir/fsdp.h, docs/fsdp.md#policies), and each stage's
 * REDUCE_GRAD right after its last weight gradient pass (every policy:
 * PyTorch's _add_reduce_grad), before a RESHARD there.
 *
 * The policies work on each device's passes (its stage passes and pairs,
 * in stream order; a pair uses both its stages, its F half first):
 *   full, auto   PyTorch 2.15's _add_unshard_reshard: before each pass, the
 *                stages among the next max_active distinct stages to be used
 *                stay (the others are resharded), and those among the next
 *                L not yet unsharded are unsharded, in the order of their
 *                next use (L = max_active for full, min(rank + 2,
 *                max_active) for auto, rank the device); after the last
 *                pass, every stage still unsharded is resharded;
 *   derived      full's windows, each ended right after its last pass (a
 *                RESHARD costs nothing and the UNSHARDs are full's, so the
 *                step is full's and the memory never above it); under a
 *                memory cap (mem), each device's window is the widest (up to
 *                its stages) whose peak stays within the cap (compile.c),
 *                else max_active.
 * Every UNSHARD is used before its RESHARD, so check/fsdp.h proves them.
 * Precondition: lowered streams of one step (sc_lower), no memory policy.
 *
 * Tested by: tests/unit/test_fsdp.c.
 */
#ifndef SC_LOWER_FSDP_H
#define SC_LOWER_FSDP_H

#include "ir/ir.h"

sc_status sc_lower_fsdp(sc_prog *pg);
/* Device d's alone, with a residency window of R stages (the derived
 * policy under a memory cap tries several: docs/fsdp.md#policies). */
sc_status sc_lower_fsdp_device(sc_prog *pg, int d, int R);

#endif
