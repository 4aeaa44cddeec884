/*
 * verify.h — proofs that a program is complete and cannot hang.
 *
 * sc_verify_passes (on the orders, before lowering) proves:
 *   - every pass exactly once: per (stage, mb) one F and either one BW or
 *     one B and one W; each on the device that holds its stage;
 *   - dependencies inside one device are in order: F(s-1) before F(s),
 *     F(S-1) before B(S-1), B(s+1) before B(s), B before W.
 * sc_verify_streams (on lowered streams) proves:
 *   - every dependency across devices goes through a RECV on the consumer,
 *     before the consuming pass, matched by exactly one SEND on the
 *     producer, after the producing pass (peer, stage, mb, direction);
 *   - no deadlock under the communication semantics (docs/semantics.md): the
 *     streams are replayed exactly as every runtime executes them.
 * A rejected program leaves one message in sc_errmsg() naming the devices,
 * the instructions and, for a deadlock, the wait-for cycle.
 *
 * Tested by: tests/unit/test_replay.c, tests/unit/test_verify_again.c,
 * tests/unit/test_errors.c.
 */
#ifndef SC_VERIFY_H
#define SC_VERIFY_H

#include "ir/ir.h"

sc_status sc_verify_passes(sc_prog *pg);
/* The same proof where the passes may have been proved already: a program
 * whose shape, placement and orders are byte for byte those of its last
 * successful sc_verify_passes passes at once (a recipe's passes are proved
 * where it is built, and the compile driver would prove them again). */
sc_status sc_verify_passes_again(sc_prog *pg);
sc_status sc_verify_streams(sc_prog *pg);

#endif
