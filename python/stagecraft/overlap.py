"""OVERLAP_F_B that really overlaps (docs/interchange.md#python).

PyTorch's _PipelineScheduleRuntime runs an overlapped pair, the action
(F;B)OVERLAP_F_B, as its two sub-actions one after the other. handler() is
a custom function for _PipelineScheduleRuntime.register_custom_function
that runs them at the same time: both inputs are waited for first (the
receives of the forward's activation and of the backward's gradient), then
the backward (B: full backward, I: input gradient) runs on a worker thread
while the forward (with the loss on the last stage) runs on the calling
one; each then hands its output to a neighbouring stage of this rank as
PyTorch's own sub-actions do. The two touch different stages (a pair never
joins two passes of which one needs the other: stagecraft's verifier proves
it), and PyTorch's operators release the GIL, so the two computations
proceed together: on CPU on two threads (with torch.set_num_threads(k),
each half may use k), on one GPU as two host threads queueing on the
current stream unless a caller gives each its own.

An overlap that is not one forward and one backward runs in turn, as
PyTorch does.
"""
import threading


def _kinds():
    from torch.distributed.pipelining import schedules as s
    return s, s._ComputationType


def _run_forward(sched, stages, action, ctx):
    s, _ = _kinds()
    st = stages[action.stage_index]
    mb = action.microbatch_index
    if not st.is_first and action.stage_index - 1 not in stages:
        ops = sched.fwd_recv_ops.pop((action.stage_index, mb), None)
        if ops is not None:
            s._wait_batch_p2p(ops)
    out = st.forward_one_chunk(mb, ctx.arg_mbs[mb], ctx.kwarg_mbs[mb])
    sched._maybe_compute_loss(st, out, ctx.target_mbs, mb)
    if action.stage_index + 1 in stages:  # the V placement's local hand-off
        stages[action.stage_index + 1].set_local_fwd_input(out, mb)


def _wait_backward_input(sched, stages, action):
    s, _ = _kinds()
    st = stages[action.stage_index]
    if not st.is_last and action.stage_index + 1 not in stages:
        ops = sched.bwd_recv_ops.pop((action.stage_index, action.microbatch_index), None)
        if ops is not None:
            s._wait_batch_p2p(ops)


def _run_backward(sched, stages, action, full):
    st = stages[action.stage_index]
    mb = action.microbatch_index
    loss = sched._maybe_get_loss(st, mb)
    last = False
    if full:
        sched.backward_counter[action.stage_index] += 1
        last = sched.backward_counter[action.stage_index] == sched._n_microbatches
    st.backward_one_chunk(mb, loss=loss, full_backward=full, last_backward=last)
    if action.stage_index - 1 in stages:
        stages[action.stage_index - 1].set_local_bwd_input(st.get_local_bwd_output(mb), mb)


def handler(action, ctx):
    """The custom function of OVERLAP_F_B: (action, _PipelineContext)."""
    _, T = _kinds()
    sched = ctx.schedule_ref
    stages = {st.stage_index: st for st in sched._stages}
    subs = list(action.sub_actions or ())
    fwd = [a for a in subs if a.computation_type == T.FORWARD]
    bwd = [a for a in subs if a.computation_type in (T.FULL_BACKWARD, T.BACKWARD_INPUT)]
    if len(subs) != 2 or len(fwd) != 1 or len(bwd) != 1:
        raise ValueError(f"{action}: stagecraft's OVERLAP_F_B runs one forward with one "
                         "backward (register it only for such schedules)")
    f, b = fwd[0], bwd[0]
    full = b.computation_type == T.FULL_BACKWARD
    # Both inputs first: a receive is waited for on the thread that posted it.
    _wait_backward_input(sched, stages, b)
    failure = []

    def back():
        try:
            _run_backward(sched, stages, b, full)
        except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
            failure.append(e)

    worker = threading.Thread(target=back, name="stagecraft-overlap-b")
    worker.start()
    try:
        _run_forward(sched, stages, f, ctx)
    finally:
        worker.join()
    if failure:
        raise failure[0]


def register(sched):
    """Registers handler() for OVERLAP_F_B on a _PipelineScheduleRuntime."""
    _, T = _kinds()
    sched.register_custom_function(T.OVERLAP_F_B, handler)
    return sched
