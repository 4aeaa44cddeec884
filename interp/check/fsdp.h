/*
 * fsdp.h — the proof of FSDP's UNSHARD, RESHARD and REDUCE_GRAD in lowered streams
 * (docs/fsdp.md#verification).
 *
 * Tested by: tests/unit/test_fsdp.c.
 */
#ifndef SC_CHECK_FSDP_H
#define SC_CHECK_FSDP_H

#include "ir/ir.h"

/* Proves, on every device's stream, that each stage of a program with FSDP
 * (sc_prog_fsdp: dp > 0) is unsharded wherever a pass of it runs: every
 * pass (each half of a pair) of stage s comes after an UNSHARD of s with no
 * RESHARD of s between; UNSHARD only of a sharded stage of the device,
 * RESHARD only of an unsharded one after a pass of it (PyTorch 2.15
 * asserts both); every UNSHARD has its RESHARD before the step's OPTIM (the
 * optimizer updates the shards) and before the end; every stage of the
 * device has one REDUCE_GRAD per step, after its last weight gradient pass
 * of the step (the m-th W or BW) and before the step's OPTIM (PyTorch's
 * _add_reduce_grad). A program without FSDP has none of them.
 * SC_ERR_PROGRAM with one line naming the instruction otherwise. */
sc_status sc_verify_fsdp(sc_prog *pg);

#endif
