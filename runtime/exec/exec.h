/*
 * exec.h — the executor: runs one device's lowered stream (runtime/README.md).
 *
 * The executor walks sc_prog_stream(pg, d) in order and calls three tables:
 * the *workload* (what F, B, W of a stage compute: the built-in model of
 * model/model.h, or an embedding program's own stage functions), the *backend*
 * (memory: activation records and transfer buffers are allocated through it)
 * and the *transport* (SEND/RECV). Communication follows
 * docs/semantics.md#communication-semantics exactly: each run of consecutive
 * SEND/RECV is one group, posted without waiting; a device's groups start in
 * order, each once the previous one has completed; a pass waits only for the
 * group holding the RECV it reads; a send buffer is freed when its group
 * completes; REDUCE waits for all.
 *
 * Data between stages. F(s, mb) reads the activation of (s, mb) (received,
 * or handed off locally by F(s-1, mb) on the same device) and produces the
 * activation of (s+1, mb); B(s, mb) reads the gradient of (s, mb) and
 * produces the gradient of (s-1, mb). All have workload->boundary_bytes(s, mb).
 *
 * The activation pool. F(s, mb) allocates the activation record of (s, mb)
 * (record_bytes: `kept`, still needed by W, and `b_only`, needed by B only;
 * microbatches of different lengths have records of their own sizes);
 * B frees b_only, W frees kept, BW frees both. The pool counts these bytes
 * only (not parameters or transfer buffers); its high-water mark is what the
 * simulator predicts from mem units and w_keep (run/run.h sets them so).
 *
 * Offload (docs/semantics.md#host-copies). A record is its kept parts (record_parts), then
 * b_only. OFFLOAD moves the last parts whose share of the record is nearest
 * its fraction into one buffer of the backend's host pool (host_alloc,
 * copy_start to the host) and goes on; DROP waits for those copies
 * (copy_wait) and frees the parts; RELOAD allocates them again and starts
 * the copies back; the next pass of the record (its B or BW) waits for them
 * and frees the host buffer. The pool counts the parts when they are
 * allocated and freed, in stream order, as the simulator does; the host
 * buffers have their own high-water mark.
 *
 * Vocabulary passes (S, T, E, EW; docs/vocab.md) go to the workload's
 * vocab_pass; S allocates its record from the pool (vocab_record_bytes),
 * T frees it, as F and W do a stage's.
 *
 * Collectives (docs/semantics.md#collectives). A collective instruction is posted without
 * waiting; the device's collectives start in posting order, each once the
 * previous one has completed on the device, with the buffer the workload
 * gives (coll_buffer) and the transport's coll_start; an instruction waits
 * only for the collectives it reads (sc_coll_readers). While a device waits
 * for anything, both its P2P groups and its collectives keep starting as
 * their predecessors complete (by polling both, when the stream has
 * collectives), as the semantics the verifier proved require.
 *
 * Backends that queue work (cuda): after every compute pass, REDUCE and
 * OPTIM the executor calls the backend's sync, so that the instruction's
 * measured end is when its work ended, and a failure of the backend is
 * reported as a failure of that instruction.
 *
 * Graphs (run --graph, docs/graphs.md; out->graph): step 1 runs as above;
 * step 2's passes and transfers, up to its REDUCE, are captured on every
 * device at once without syncing the backend, and run as one graph; later
 * steps replay it instead of walking their passes (exec_graph.c). REDUCE,
 * OPTIM and what is between them run as above in every step. A replay
 * runs the captured work with its captured arguments: a workload's passes
 * must read what changes between steps from device memory (the built-in
 * model's data are the same in every step).
 *
 * Overlapped pairs (docs/run.md#overlapped-pairs): the F half and the B or
 * BW half run at once, the second on a lane of the device (a thread, a
 * second backend instance and workload context) when the backend and the
 * workload offer one, else in turn (exec_pair.c).
 *
 * Thread-safety: sc_exec_device reads the program only; one call per device
 * may run concurrently on separate threads with separate backends.
 *
 * Tested by: tests/unit/test_runtime.c, tests/unit/test_coll_run.c.
 */
#ifndef SC_EXEC_H
#define SC_EXEC_H

#include <stddef.h>

#include "backend/backend.h"
#include "ir/ir.h"
#include "transport/transport.h"

struct sc_workload_ops {
    /* Bytes of the activation of microbatch mb (a stream's number, any
     * step) flowing into stage s (and of the gradient flowing out of its
     * B): microbatches may differ in size (docs/lengths.md), and so do the
     * transfers, which carry them. */
    size_t (*boundary_bytes)(void *ctx, int s, int mb);
    /* Bytes of the record F(s, mb) creates: kept for W, b_only for B. */
    void (*record_bytes)(void *ctx, int s, int mb, size_t *kept, size_t *b_only);
    /* Optional (NULL: kept is one buffer). The kept record of stage s as n
     * parts that offload can move one by one (the built-in model: one per
     * tensor): returns n, and writes the first min(n, max) part sizes to
     * bytes (they add up to kept). The executor then allocates every part
     * on its own and passes `kept` to forward, backward_input and
     * backward_weight as an array of the n part pointers (void **). */
    int (*record_parts)(void *ctx, int s, int mb, size_t *bytes, int max);
    /* in: NULL for s = 0; out: NULL for the last stage. */
    sc_status (*forward)(void *ctx, int s, int mb, const void *in, void *out, void *kept,
                         void *b_only);
    /* gin: NULL for the last stage; gout: NULL for s = 0. */
    sc_status (*backward_input)(void *ctx, int s, int mb, const void *gin, void *gout,
                                void *kept, void *b_only);
    sc_status (*backward_weight)(void *ctx, int s, int mb, void *kept);
    /* Optional (a split vocabulary, docs/vocab.md#running-the-split-model): bytes of the record S
     * keeps for T on this device, and the vocabulary passes: S, T, E or EW
     * of microbatch mb, with S's record (allocated from the activation pool
     * before S, freed after T; NULL for E and EW). Their data come and go
     * through collectives (coll_buffer). */
    size_t (*vocab_record_bytes)(void *ctx);
    sc_status (*vocab_pass)(void *ctx, int op, int mb, void *record);
    /* Optional (programs with collectives, docs/semantics.md#collectives). The buffer of
     * collective c on this device, asked for when the collective starts
     * on the device's collective channel: every collective the device
     * posted before it has completed, so the contents may be computed
     * from their results (statistics rescaled by an all-reduced maximum).
     * The workload owns the buffer (until coll_done) and fills x (op, red
     * and root are set by the executor); the transport reduces into it in
     * place. */
    sc_status (*coll_buffer)(void *ctx, const sc_coll *c, sc_cxfer *x);
    /* Optional: collective c has completed here (its result is in the
     * buffer). */
    sc_status (*coll_done)(void *ctx, const sc_coll *c);
    /* Optional: end of step (gradient reduction across replicas, optimizer). */
    sc_status (*reduce)(void *ctx);
    sc_status (*optim)(void *ctx);
    /* Optional (NULL: OPTIM calls optim): the optimizer step k in parts, so
     * that devices can synchronize between them (docs/steps.md#optimizer-synchronization):
     *   grad_state, at REDUCE (after reduce): this device's share of the
     *     step's state, two numbers that add up over the devices (the built-in
     *     model: the sum of squares of its gradients and the count of values
     *     that are not finite, model/optim.h);
     *   optim_step, at OPTIM, with that share: the update. Under optim_sync
     *     none the device's own state decides it; under sync and
     *     post-validation the workload adds the results of the collectives
     *     OPTIM reads (it gave their buffers, coll_buffer: the all-reduced
     *     state, or the partial state of the devices before it, with which it
     *     steps eagerly when that asks for no clipping and no skip);
     *   validate, at VALIDATE (post-validation), with the global state the
     *     workload received: *redo = 1 when the step it asks for differs from
     *     an unclipped, unskipped one; then the device has undone its eager
     *     step and taken the right one, and the forward passes it ran since
     *     VALIDATE's step are redone (the rollback path).
     * A redone F calls forward again on the same record: with `in` the
     * record's first kept part when the input did not change (the workload
     * must keep its input there, as the built-in model does), or the
     * producer's redone output. */
    sc_status (*grad_state)(void *ctx, int step, double state[2]);
    sc_status (*optim_step)(void *ctx, int step, const double state[2]);
    sc_status (*validate)(void *ctx, int step, int *redo);
    /* Optional (overlapped pairs, docs/run.md#overlapped-pairs; NULL: a
     * pair's halves run in turn): a second context of this device's
     * workload whose passes compute through backend `lane` (backend.h,
     * lane_open), for the backward half of a pair while ctx runs its F half
     * on another thread. The two run passes of different records at once:
     * nothing a pass writes (its outputs, its record, its stage's
     * gradients) may be shared between them. lane_free frees it (before
     * ctx). */
    void *(*lane)(void *ctx, sc_backend *lane);
    void (*lane_free)(void *lane_ctx);
    /* Optional (run --graph, docs/graphs.md): graph_capture, the passes
     * that follow until the step's REDUCE are captured, not run (the
     * workload notes in which order its backend keeps the losses, backend.h
     * graph_losses); graph_replayed, the passes of step `step` (from 0) ran
     * as a replay of the graph: the workload reads their results (the
     * losses) from the backend. */
    void (*graph_capture)(void *ctx);
    sc_status (*graph_replayed)(void *ctx, int step);
    /* Message of the last failure. */
    const char *(*errmsg)(void *ctx);
};

/* run --graph (docs/graphs.md): the devices' shared state while step 2 is
 * captured and later steps replay it (exec_graph.c). */
typedef struct sc_exec_graph sc_exec_graph;

/* Whether the program's steps can be captured: 1, or 0 with the first
 * reason in why ("--graph: offload copies wait on the host (d0,
 * instruction 12 RELOAD s0 mb3): not capturable"). Captured: each device's
 * stream from the start of step 2 to its REDUCE, holding only passes of
 * stages (F, B, W, BW), transfers and WAITs, and every later step the same
 * with its microbatch numbers moved on; at least 2 steps; no
 * post-validation. The backend, transport and threads are the run's to
 * check (run/run_devices.c). */
int sc_exec_graph_check(const sc_prog *pg, char *why, size_t len);
/* The state for P devices running on threads of this process with these
 * backends (each must offer backend.h's capture slots: else SC_ERR_ARG and
 * one line in err); free after every device has returned and before the
 * backends are freed (it frees the graph). */
sc_status sc_exec_graph_new(int P, sc_backend *const *be, sc_exec_graph **out, char *err,
                            size_t errlen);
void sc_exec_graph_free(sc_exec_graph *g);
/* Whether a graph was captured (the run replayed its steps). */
int sc_exec_graph_captured(const sc_exec_graph *g);

typedef struct sc_workload {
    const struct sc_workload_ops *ops;
    void *ctx;
} sc_workload;

/* What one device's run measured. t0/t1 point to the caller's arrays of the
 * stream's length (an sc_sim's t0 + offset[d]): start and end of every
 * instruction in seconds since `origin` (transfers: posted, and group
 * completed). */
typedef struct sc_exec_out {
    double *t0, *t1;
    double *cpu;         /* or NULL: the thread's CPU time during each instruction run
                          * on the device's thread (sc_exec_cpu_now; copies, waits and
                          * posts are not written) */
    double timeout_s;    /* in: waits that poll (streams with collectives) give up
                          * after this many seconds without completing; 0: never */
    size_t peak_bytes;   /* high-water mark of the activation pool */
    size_t end_bytes;    /* pool bytes still held at the end (0 when correct) */
    size_t host_peak_bytes; /* high-water mark of the host buffers of moved records */
    size_t host_end_bytes;  /* host bytes still held at the end (0 when correct) */
    double end;          /* end of the last instruction */
    sc_exec_graph *graph; /* in: run --graph (shared by the devices), or NULL */
    /* in, a program with ep > 1 (docs/semantics.md#expert-parallelism): the
     * transport of this device's EP group and its number there. The
     * collectives of a group (the dense gradients' all-reduce) run on it;
     * DISPATCH and COMBINE complete when posted: the pass before them ran
     * the all-to-alls they stand for (its workload's, one pair per MoE
     * layer, on the same transport). NULL: an ep program is refused.
     * ep_lane_tp: a second transport of the same group for the passes an
     * overlapped pair runs on the lane (its backward halves: every rank
     * runs the same pairs, so each transport sees the same all-to-alls in
     * the same order on every rank); NULL: pairs run in turn. */
    sc_transport *ep_tp, *ep_lane_tp;
    int ep_dev;
    char err[384];
} sc_exec_out;

/* Bytes of the executor's own tables for device d: what sc_exec_device
 * allocates besides the backend's tensors (a mailbox and a record slot per
 * stage and microbatch, the stream's transfers and groups, the collective
 * channel), O(S·m) per device. run checks them before starting. */
size_t sc_exec_table_bytes(const sc_prog *pg, int d);

/* Monotonic clock in seconds. */
double sc_exec_now(void);
/* The calling thread's CPU clock in seconds (CLOCK_THREAD_CPUTIME_ID): it
 * stands still while another process has the thread's core. */
double sc_exec_cpu_now(void);

/* Runs device d's stream. On failure calls the transport's abort (so that
 * the other devices stop), frees what it holds, and returns the status with
 * one line in out->err. */
sc_status sc_exec_device(const sc_prog *pg, int d, sc_backend *be, sc_transport *tp,
                         const sc_workload *wl, double origin, sc_exec_out *out);

#endif
