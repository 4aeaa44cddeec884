/*
 * replay.h — the communication semantics (docs/semantics.md), executed on lowered
 * streams. Internal to interp/: the compile driver and verify.c replay to prove
 * that a program cannot hang, and the timing of that replay is the simulator's.
 *
 * Semantics (one definition for verifier, simulator and every runtime):
 *   - a device executes its stream in order;
 *   - each run of consecutive SEND/RECV instructions is one group, posted at
 *     once without waiting;
 *   - a device's groups run one after another in the order posted: a group
 *     starts when it is posted and the previous group has completed;
 *   - transfers between two devices pair in posting order (NCCL's, gloo's);
 *   - a transfer completes T_comm after both it and its matching transfer
 *     sit in running groups; a group completes when all its transfers have;
 *   - a compute pass waits only for the group holding the RECV it reads;
 *   - REDUCE waits for every group its device has posted;
 *   - host copies (offload.h): OFFLOAD and RELOAD start a copy on the
 *     device's device-to-host or host-to-device channel (in stream order,
 *     each once posted and the channel is free) and go on; DROP waits for
 *     its OFFLOAD's copy; a B or BW waits for the RELOAD of its record.
 *
 * sc_replay checks the streams first (every transfer matched by exactly one
 * peer transfer, which is also its partner in posting order: the k-th SEND
 * from a to b and the k-th RECV on b from a; data sent after it is produced and received before it is
 * read; every cross-device input received; every record moved to the host
 * in order F, OFFLOAD, DROP, RELOAD, B on its own device) and then replays
 * them. Times go
 * to t0/t1 (indexed offset[d] + k; offset has P+1 entries), or nowhere when
 * they are NULL. On a deadlock it returns SC_ERR_DEADLOCK with the wait-for
 * cycle in sc_errmsg().
 *
 * A PyTorch compute_comms file in the NCCL mode (the lowering target a file,
 * p2p.h) is replayed a second time as PyTorch posts it: each transfer a
 * group of its own, a device's still one at a time, an eager SEND
 * (sc_prog_eager) complete once it runs. The verdict is both replays'; the
 * times are the first's. A stop in the second names the cells that cross
 * (docs/modes.md#crossing-cells):
 *   deadlock: cells cross: rank 0 cell 4 (0SEND_F1) waits for rank 1 cell 5
 *   (1RECV_F1), behind rank 1 cell 4 (1SEND_B0), which waits for rank 0
 *   cell 5 (0RECV_B0), behind the first; PyTorch posts each cell alone, ...
 *
 * Tested by: tests/unit/test_replay.c, tests/unit/test_coll.c.
 */
#ifndef SC_REPLAY_H
#define SC_REPLAY_H

#include "ir/ir_impl.h"

sc_status sc_replay(sc_prog *pg, const size_t *offset, double *t0, double *t1);

/* sc_replay with the times into a timing it allocates (sized from the
 * streams); on failure *t is left empty. */
sc_status sc_replay_timed(sc_prog *pg, sc_times *t);

#endif
