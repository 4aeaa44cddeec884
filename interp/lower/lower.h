/*
 * lower.h — from per-device orders of passes to executable streams.
 *
 * For each device, in its order: before a pass that reads data produced on
 * another device, a RECV of that data; after a pass whose output another
 * device reads, a SEND of it. A dependency between two stages of one device
 * is a local hand-off and needs no instruction (verify checks its order).
 * Each stream ends with REDUCE and OPTIM.
 *
 * Where the transfers go: the orders are timed first (dataflow.h). Every
 * transfer gets the rank of its producer, (end time, place in the dataflow
 * run), and every device posts its transfers in that one global order (ties
 * broken by direction, stage and microbatch): a SEND right after the pass
 * that produces it, a RECV before the pass that runs when its data is
 * produced. Transfers that fall between the same two passes form one
 * group, except that a RECV of data produced while the next pass runs
 * starts a group of its own (SC_IF_GROUP): that pass must not wait for it.
 * Because every device
 * lists its transfers in one global order, the streams cannot deadlock
 * (docs/semantics.md#why-lowered-programs-cannot-hang), zero costs included; the
 * verifier proves it anyway.
 *
 * Collectives (docs/semantics.md#collectives) are appended to a stream with sc_coll_push
 * (ir_impl.h). A lowering that adds them must post the collectives of each
 * group in one global order on every member (the verifier refuses any
 * other order), each after the pass whose data it carries on the members
 * that run it and before every instruction that reads it (sc_coll_reads).
 *
 * Precondition: sc_verify_passes(pg) == SC_OK. Lowering again after a
 * change rebuilds the streams. A dependency cycle among the orders is
 * reported as SC_ERR_PROGRAM with the cycle.
 *
 * Tested by: tests/unit/test_interp.c, tests/unit/test_replay.c.
 */
#ifndef SC_LOWER_H
#define SC_LOWER_H

#include "ir/ir.h"

sc_status sc_lower(sc_prog *pg);

/* PyTorch's placement of the same order's transfers (its `_add_send_recv`,
 * torch/distributed/pipelining/schedules.py): the ranks in turn, each
 * appending its next pass once the data it reads is in its stream, then
 * the pass's SEND, and the peer's RECV at the end of the peer's stream;
 * REDUCE and OPTIM at the end. Plain programs only (no collectives, host
 * copies or recomputation). Replaces the streams. The compile driver
 * keeps it where it is faster in the program's mode (docs/semantics.md#lowering-per-mode). */
sc_status sc_lower_torch(sc_prog *pg);

#endif
