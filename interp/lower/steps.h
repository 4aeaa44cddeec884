/*
 * steps.h — several training steps back to back (docs/steps.md).
 *
 * The lowering (lower.h) and the offload plan (offload.h) make one step's
 * streams, each ending with REDUCE and OPTIM. sc_lower_steps repeats them
 * for steps 1..N-1, numbering microbatch i of step k as k·m + i (pg->nmb
 * becomes m·N). A device runs its step k+1 after its own OPTIM of step k:
 * its parameters are updated before they are used again; other devices
 * may still be in step k (the steps overlap across devices, as the
 * pipeline's parallelogram wants).
 *
 * Every device lists its transfers in one global order, step by step (the
 * order of one step, docs/semantics.md#why-lowered-programs-cannot-hang, then
 * the next), so the unrolled streams cannot deadlock either; the verifier
 * proves them anyway.
 *
 * A collective of step 0's streams (the copies' gradient sum, lower.c) is
 * posted again in every step, tagged with its step.
 *
 * Precondition: the program is lowered (one step). With one step and one
 * copy it only sets nmb.
 *
 * Tested by: tests/unit/test_steps.c.
 */
#ifndef SC_LOWER_STEPS_H
#define SC_LOWER_STEPS_H

#include "ir/ir.h"

sc_status sc_lower_steps(sc_prog *pg);

#endif
