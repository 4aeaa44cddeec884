/*
 * steps.h — the shape of a program of several training steps (docs/steps.md).
 *
 * sc_verify_steps proves, on the lowered streams, that every device's
 * stream holds `steps` steps, each ended by one REDUCE and then one OPTIM,
 * and that the compute passes of step k are those of step 0 in the same
 * order, their microbatches moved by k·m. Together with sc_verify_passes
 * (step 0: every pass once, local order) every step has every pass once.
 * Lowered programs are so by construction; streams given directly
 * (sc_prog_push_stream) are checked. A program of one step passes as it
 * is (streams given for one step need no REDUCE or OPTIM). Messages name the device and the
 * instruction.
 *
 * Tested by: tests/unit/test_steps.c, tests/lua/test_steps.lua.
 */
#ifndef SC_CHECK_STEPS_H
#define SC_CHECK_STEPS_H

#include "ir/ir.h"

sc_status sc_verify_steps(sc_prog *pg);

#endif
