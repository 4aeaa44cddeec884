/*
 * rollback.h — the scenarios of post-validation
 * (docs/steps.md#optimizer-synchronization): which of a program's rollback
 * paths run. A stream holds each path right after its VALIDATE, flagged
 * SC_IF_ROLLBACK, and the Fs of the next step that read a redone output are
 * flagged SC_IF_REDO_IN; what runs depends on the global state each VALIDATE
 * finds, the same on every device. A scenario is
 *
 *   SC_SCEN_NONE  no path runs: the flagged instructions are left out and
 *                 no F reads a redone output (what the simulator times);
 *   k >= 0        the path after VALIDATE of step k runs (the F of step k+1
 *                 flagged SC_IF_REDO_IN read the redone outputs), no other;
 *   SC_SCEN_ALL   every path runs.
 *
 * sc_replay_scenario replays one scenario (replay.h) through the streams
 * without what it leaves out, and gives the times indexed like the
 * program's streams (a left-out instruction: no time, at the moment its
 * device reaches it); messages name instructions by their index in the
 * program's streams, after "on the rollback path of step k: ". The paths
 * of different VALIDATEs are steps apart and touch only the collective
 * channel and the device's own passes, so proving each path alone and all
 * of them together covers the programs where some run and others do not;
 * sc_verify_rollbacks proves those N + 1 scenarios (the first 64 paths
 * alone for longer programs, and all together).
 *
 * Tested by: tests/unit/test_steps.c.
 */
#ifndef SC_CHECK_ROLLBACK_H
#define SC_CHECK_ROLLBACK_H

#include "ir/ir.h"

#define SC_SCEN_NONE (-1)
#define SC_SCEN_ALL (-2)

/* Whether some stream of pg holds a rollback path or a reader of one. */
int sc_prog_has_rollback(const sc_prog *pg);
/* Replays scenario scen; the timing into *t when t is not NULL (the
 * caller frees it; empty on failure). */
sc_status sc_replay_scenario(sc_prog *pg, int scen, sc_times *t);
/* Every path alone (up to 64) and all of them; SC_OK when none hangs or
 * breaks a rule. */
sc_status sc_verify_rollbacks(sc_prog *pg);

#endif
