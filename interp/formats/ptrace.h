/*
 * ptrace.h — costs from torch.profiler traces of a pipelined training step
 * (docs/costs.md#costs-from-a-pytorch-trace): `stagecraft costs
 * --from-trace`.
 *
 * The input: Chrome traces (torch.profiler's export_chrome_trace), one per
 * rank or one merged, of steps that PyTorch's _PipelineScheduleRuntime ran
 * (torch.distributed.pipelining; every multi-stage schedule and the CSV
 * files stagecraft exports). That runtime wraps each action in
 * record_function("PP:<action>"): PP:1F3 (F of stage 1, microbatch 3),
 * PP:0I2, PP:0W2, PP:2B0, PP:0SEND_F3, PP:1RECV_F3, PP:1WAIT_SEND_B0, ...
 * The operators the profiler records inside (cat "cpu_op") tell when a
 * pass stopped waiting: a pass that consumes a receive first waits for it
 * (the wait records no operator), then computes.
 *
 *     sc_ptrace *t = sc_ptrace_new();
 *     for each file: parse it (jsonread.h), then
 *         if (sc_ptrace_add(t, name, root, err, sizeof err) != SC_OK) ...  // err names file and event
 *     sc_costs c;
 *     if (sc_ptrace_costs(t, &c, note, sizeof note, err, sizeof err) == SC_OK)
 *         sc_costs_write(f, &c), sc_costs_free(&c);
 *     sc_ptrace_free(t);
 *
 * What a pass costs (per stage, median and interquartile range over its
 * microbatches and steps): from the end of its wait (its first operator;
 * the span's start for a pass that receives nothing on its rank) to the
 * start of the rank's next pass (or the end of the rank's step), less the
 * WAIT_* spans between: the pass and the runtime's own work after it
 * (posting its sends and the next receives), which the simulator does not
 * count apart. A transfer: from the later of its two posts (SEND, RECV) to
 * the consumer's first operator, sampled where the consumer started before
 * the SEND was posted (so it waited for the transfer); the ranks' clocks
 * must agree (one machine, or synchronized clocks).
 *
 * Ownership: sc_ptrace copies what it keeps (root may be freed after
 * sc_ptrace_add); sc_costs as in costs.h (its provenance strings point into
 * the sc_ptrace: free the costs first). Thread-safety: none needed.
 */
#ifndef SC_PTRACE_H
#define SC_PTRACE_H

#include "costs.h"
#include "jsonread.h"

typedef struct sc_ptrace sc_ptrace;

sc_ptrace *sc_ptrace_new(void); /* NULL: out of memory */
void sc_ptrace_free(sc_ptrace *t);

/* Adds one parsed trace file (name: for messages and `measured`).
 * SC_ERR_ARG with "FILE: event N ('PP:1F0'): ..." in err. */
sc_status sc_ptrace_add(sc_ptrace *t, const char *name, const sc_jv *root, char *err,
                        size_t errlen);

/* The cost file of every file added. note: what the traces did not show
 * (a fused-only backward split in halves), or "". SC_ERR_ARG with err. */
sc_status sc_ptrace_costs(sc_ptrace *t, sc_costs *c, char *note, size_t notelen, char *err,
                          size_t errlen);

#endif
