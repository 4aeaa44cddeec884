/*
 * postval.h — the streams of optimizer post-validation (the Zero Bubble
 * paper's section 4; docs/steps.md#optimizer-synchronization), from the
 * unrolled steps (steps.h).
 *
 * Each device d, every step k:
 *
 *   ... the passes of step k ..., REDUCE, OPTIM,
 *   BCAST fwd(k, j) for j = d..P-2   the partial state of devices 0..j, from
 *                                    d (root when j = d; receivers post early)
 *   BCAST back(k)                    the global state, from device P-1
 *   step k+1: its prefix             the forward passes of its first chunk
 *                                    up to its first other pass
 *   VALIDATE                         step k checked against back(k)
 *   [rollback path of step k]        flagged SC_IF_ROLLBACK
 *   BCAST fwd(k+1, j) for j < d      receivers of the next chain
 *   ... the rest of step k+1 ...
 *
 * and VALIDATE of the last step at the end of the stream; at the start, the
 * receivers of fwd(0, j), j < d. OPTIM reads every collective posted
 * before it: the partial state of devices 0..d-1, to which the device adds
 * its own and steps *eagerly* when that partial state asks for no clipping
 * and no skip (device P-1 has the global state and steps as it says); the
 * chain follows the device numbers, as the pipeline's parallelogram
 * finishes device after device. The state flows back as one broadcast
 * that every device posts after its OPTIM and reads only at VALIDATE,
 * during the next step's warm-up. Every collective is over all devices (the
 * runtimes' collectives are), in the same order on every device.
 *
 * The rollback path: when the global state asks for clipping or a skip,
 * every device puts its step right at VALIDATE (undoing an eager one), and
 * the forward passes it ran before VALIDATE used parameters that were wrong
 * (its own, or its producer's). It redoes them, in order, into the records
 * they made: a redone F whose output goes to another device broadcasts it
 * (BCAST tagged F s mb from its device), and the consumer reads that
 * broadcast instead of its transfer: a redone F in its own prefix (flagged
 * SC_IF_REDO_IN too), or an F of the rest of the step, flagged
 * SC_IF_REDO_IN (it reads the broadcast only when the rollback path ran).
 * The broadcasts of the path are listed by (microbatch, stage) on every
 * device, so that each redone F finds its input broadcast before its own.
 *
 * Precondition: the streams are unrolled (steps.h), each step a copy of
 * the first. The verifier proves the program without the rollback path,
 * with it at each step, and with it at every step (check/rollback.h).
 *
 * Tested by: tests/unit/test_steps.c.
 */
#ifndef SC_LOWER_POSTVAL_H
#define SC_LOWER_POSTVAL_H

#include "ir/ir.h"

sc_status sc_lower_postval(sc_prog *pg, double state_bytes);

#endif
