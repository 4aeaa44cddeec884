/*
 * ptrace.h — costs from torch.profiler traces of a pipelined training step
 * (docs/costs.md#costs-from-a-pytorch-trace): `stagecraft costs
 * --from-trace`.
 *
 * The input: Chrome traces (torch.profiler's export_chrome_trace), one per
 * rank or one merged, of steps of any PyTorch 2.15 schedule class (the
 * table of docs/costs.md#what-each-schedule-records):
 *   - _PipelineScheduleRuntime (every multi-stage class, the CSV files
 *     stagecraft exports) wraps each action in record_function("PP:<action>"):
 *     PP:1F3 (F of stage 1, microbatch 3), PP:0I2, PP:0W2, PP:2B0,
 *     PP:(0F3;3B1)OVERLAP_F_B, PP:0SEND_F3, PP:1RECV_F3, PP:1WAIT_SEND_F0,
 *     PP:1WAIT_SEND_B0, PP:0UNSHARD, PP:0RESHARD, PP:0REDUCE_GRAD, ...;
 *   - ScheduleGPipe: "Forward <mb>", "Backward <mb>", the posts of its
 *     transfers (c10d::recv_, c10d::send) and the wait inside;
 *   - Schedule1F1B (and GPipe) with with_stack=True: the Python functions
 *     forward_one_chunk, backward_one_chunk, _batch_p2p, _wait_batch_p2p,
 *     step (ptrace_single.c).
 * The operators the profiler records inside (cat "cpu_op") tell when a
 * pass stopped waiting: a pass that consumes a receive first waits for it
 * (the wait records no operator), then computes.
 *
 *     sc_ptrace *t = sc_ptrace_new();
 *     double deadline = sc_clock_now() + 60;                  // readfile.h; 0: none
 *     for each file: read its text (readfile.h), then
 *         if (sc_ptrace_read(t, name, text, len, deadline, err, sizeof err) != SC_OK) ...
 *     sc_costs c;                                              // err names file and event
 *     if (sc_ptrace_costs(t, &c, deadline, note, sizeof note, err, sizeof err) == SC_OK)
 *         sc_costs_write(f, &c), sc_costs_free(&c);
 *     sc_ptrace_free(t);
 *
 * What a pass costs (per stage, median and interquartile range over its
 * microbatches and steps): from the end of its wait (its first operator
 * after the posts of its receives; the span's start for a pass that
 * receives nothing on its rank) to the start of the rank's next pass (or
 * the end of the rank's step), less the spans between that are
 * instructions of their own (WAIT_*, UNSHARD, RESHARD, REDUCE_GRAD; a
 * single-stage schedule's posts and waits): the pass and the runtime's own
 * work after it, which the simulator does not count apart. GPipe's spans
 * end with the pass (a Forward with the loss after it). An OVERLAP_F_B
 * pair gives tfb; with FSDP on (an UNSHARD that gathers), UNSHARD and
 * REDUCE_GRAD give fsdp_time and reduce_time. A transfer: from the later of its two posts (SEND, RECV) to
 * the consumer's first operator, sampled where the consumer started before
 * the SEND was posted (so it waited for the transfer); the ranks' clocks
 * must agree (one machine, or synchronized clocks).
 *
 * On a GPU the spans time the launches, not the GPU. With the kernels
 * recorded (torch.profiler's ProfilerActivity.CUDA), each kernel (cat
 * "kernel") is linked by its args.correlation to its launch (cat
 * "cuda_runtime" or "cuda_driver"), and the launch to the innermost span
 * around it on its process, on any thread (ptrace_gpu.c). Then a pass
 * costs from its first compute kernel's start to its last's end (one that
 * launched none: its CPU time, as above); a transfer, where its SEND and
 * RECV both launched NCCL's kernels (names "nccl..."), from the later of
 * their starts to the end of the RECV's (NCCL's are never a pass's
 * compute); a step ends at the last kernel of its spans where that is
 * later. The cost file's measured.clock says "gpu kernels" (kernels were
 * linked) or "cpu"; the note says when the traces hold launches but no
 * kernel (CPU-side times), or kernels none of which was linked.
 *
 * Bounds: reading and the costs take time and memory linear in the events
 * (n log n for the sorts), whatever the number of processes, ranks or steps.
 * The events are handed over one by one as the JSON is parsed
 * (jsonread.h's sc_json_opts), so a file takes its text, about 70 bytes per
 * span of the runtime, 24 per operator and 40 per kernel or launch, never
 * the tree of the whole file. Memory is interp's counted allocator's (ir/alloc.h: --max-mem); a
 * deadline is checked every few thousand values and between the phases of
 * the costs (SC_ERR_LIMIT).
 *
 * Ownership: sc_ptrace copies what it keeps (text may be freed after
 * sc_ptrace_read); sc_costs as in costs.h (its provenance strings point
 * into the sc_ptrace: free the costs first). Thread-safety: none needed.
 *
 * Tested by: tests/unit/test_readers.c, tests/costs.sh, tests/fuzz/fuzz_ptrace.c.
 */
#ifndef SC_PTRACE_H
#define SC_PTRACE_H

#include "costs.h"
#include "jsonread.h"

typedef struct sc_ptrace sc_ptrace;

sc_ptrace *sc_ptrace_new(void); /* NULL: out of memory */
void sc_ptrace_free(sc_ptrace *t);

/* Reads one trace file's text[0..len) (name: for messages and
 * `measured`) until deadline (sc_clock_now() seconds; 0: none). SC_ERR_ARG
 * with "FILE: line 3: ..." (the JSON) or "FILE: event N ('PP:1F0'): ..."
 * in err; SC_ERR_LIMIT with "FILE: line N: time limit reached";
 * SC_ERR_NOMEM when the allocator refused. */
sc_status sc_ptrace_read(sc_ptrace *t, const char *name, const char *text, size_t len,
                         double deadline, char *err, size_t errlen);

/* The cost file of every file read. note: what the traces did not show
 * (a fused-only backward split in halves; CPU-side times of a GPU's
 * launches), "; " between two, or "". SC_ERR_ARG with err;
 * SC_ERR_LIMIT past the deadline; SC_ERR_NOMEM. */
sc_status sc_ptrace_costs(sc_ptrace *t, sc_costs *c, double deadline, char *note,
                          size_t notelen, char *err, size_t errlen);

/* The traces' steps beside their prediction (`costs --check`;
 * ptrace_check.c): the schedule of the first step as the traces ran it
 * (every action of PyTorch's runtime, in the order each rank ran them; a
 * single-stage schedule's passes, its transfers added as stagecraft
 * lowers them), simulated with the costs c that sc_ptrace_costs made of t
 * (call it first), and each step measured: from its first span's start to
 * its last span's end over all ranks. Each of the first
 * SC_PTRACE_OWN_STEPS steps is also predicted with the costs of its own
 * spans alone: how well the schedule and its costs explain that step,
 * whatever the machine did in the others (a run that slowed down half-way
 * meets the prediction of the whole only in its median). */
#define SC_PTRACE_OWN_STEPS 256
typedef struct sc_ptrace_checked {
    double predicted;     /* seconds: the simulated step */
    double *steps;        /* [nsteps] seconds, measured, in order */
    int nsteps;
    sc_stat step;         /* their median and interquartile range */
    double *own;          /* [nown] seconds: step k predicted with its own costs; NAN where
                             its spans make no cost file */
    int nown;
    sc_stat own_error;    /* of steps[k] / own[k] - 1 over the steps that have one */
} sc_ptrace_checked;

/* SC_ERR_ARG with err when the first step's schedule does not verify or
 * the costs do not fit it; SC_ERR_NOMEM. */
sc_status sc_ptrace_check(const sc_ptrace *t, const sc_costs *c, sc_ptrace_checked *out,
                          char *err, size_t errlen);
void sc_ptrace_checked_free(sc_ptrace_checked *k);

#endif
