/*
 * fwdonly.h — forward-only programs (docs/guide.md#forward-only): the
 * passes are F only, for evaluation or inference (PyTorch's
 * _ScheduleForwardOnly, Megatron's forward_only). Included by ir.h.
 *
 *     sc_prog_set_forward_only(pg, 1);   // before the orders are verified
 *
 * What changes with the flag:
 * - the verifier (sc_verify_passes) requires one F of every (stage,
 *   microbatch) and refuses any B, W or BW; a program without the flag
 *   still needs its backward passes, with the same messages;
 * - lowering emits the activations' transfers only, and no REDUCE, OPTIM
 *   or copies' all-reduce: there are no gradients and no optimizer step;
 * - memory: an F holds its stage's record only while it runs (its output
 *   leaves as the boundary tensor, sent or handed on), so a device's peak
 *   is its largest record, never a sum over microbatches;
 * - steps, offload, recompute, FSDP and a split vocabulary need a backward
 *   and are refused with the flag (sc_prog_check_forward_only).
 * Tested by: tests/forward.sh, tests/unit/test_readers.c (an F-only file).
 */
#ifndef SC_FWDONLY_H
#define SC_FWDONLY_H

#include "ir.h"

/* Sets (on != 0) or clears the flag; clears lowering and verification. */
sc_status sc_prog_set_forward_only(sc_prog *pg, int on);
int sc_prog_forward_only(const sc_prog *pg);
/* SC_OK, or the error that names the first setting a forward-only program
 * cannot have (steps > 1, offload, recompute, FSDP, a split vocabulary). */
sc_status sc_prog_check_forward_only(sc_prog *pg);

#endif
