"""gen_cuda_trace.py DIR [--no-kernels]: writes DIR/rank0.json and
DIR/rank1.json, the torch.profiler traces (with ProfilerActivity.CUDA on) of
two steps of a zero-bubble pipeline (p = 2, m = 4: PP:<stage>F, I, W and
the SEND/RECV of PyTorch's _PipelineScheduleRuntime) on two GPUs, shaped as
PyTorch writes them: the spans (cat "user_annotation") and an operator
(cat "cpu_op") on the process's main thread; the launches (cat
"cuda_runtime", "cuda_driver" for NCCL's) with args.correlation, the
backward's from autograd's own thread; the kernels (cat "kernel") at the
GPU's process (pid: the device, tid: the stream) with args.correlation,
device, stream, External id; ac2g flow events; NCCL's kernels for the
transfers; an optimizer outside every span; a kernel whose launch is not in
the trace. And DIR/expect.json: the figures the kernels give, which a cost
file read from the traces must hold (tests/costs.sh):

  tf, tb, tw per stage (seconds): every F of stage s runs 100 + 20 s us of
    kernels, I 120 + 20 s, W 60 + 20 s (a gap inside each: launch-bound
    time, counted); the spans last 1000 us, ten times more; the kernels
    of a W run after its span has ended;
  tcomm: every transfer's receive kernel ends 30 us after the later of the
    send's and the receive's kernels started;
  step: from the first span to the last kernel of a span (the W's, after
    the spans), the optimizer's kernel left out.

--no-kernels: the same traces without the kernel events (a trace of the
CPU's launches only)."""
import json
import os
import sys

P, M, STEPS = 2, 4, 2
SPAN, POST, GAP = 1000.0, 50.0, 10.0  # CPU durations (us)
T_COMM = 30.0
BASE = 6.0e6  # the traces' clock (us), as Kineto's relative timestamps run
NCCL = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"


def gpu_time(kind, s):
    return {"F": 100.0, "I": 120.0, "W": 60.0}[kind] + 20.0 * s


def actions(s):
    """Stage s's actions of one step: 1F1B with the backward split in I
    and W, W right after its I, the posts around the passes."""
    fwd = lambda mb: ([("RECV_F", mb)] if s > 0 else []) + [("F", mb)] + \
        ([("SEND_F", mb)] if s < P - 1 else [])
    bwd = lambda mb: ([("RECV_B", mb)] if s < P - 1 else []) + [("I", mb)] + \
        ([("SEND_B", mb)] if s > 0 else []) + [("W", mb)]
    warm = min(P - s - 1, M)
    out, f, b = [], 0, 0
    for _ in range(warm):
        out += fwd(f); f += 1
    while f < M:
        out += fwd(f); f += 1
        out += bwd(b); b += 1
    while b < M:
        out += bwd(b); b += 1
    return out


class Rank:
    def __init__(self, r):
        self.r, self.pid, self.ev = r, 4100 + r, []
        self.corr = 1000 * (r + 1)  # correlation ids: per process
        self.gpu_free = 0.0

    def add(self, **e):
        self.ev.append(dict(ph="X", **e))

    def launch(self, ts, tid, cat="cuda_runtime", name="cudaLaunchKernel"):
        self.corr += 1
        self.add(cat=cat, name=name, pid=self.pid, tid=tid, ts=ts, dur=5.0,
                 args={"External id": self.corr - 500, "cbid": 211, "correlation": self.corr})
        return self.corr

    def kernel(self, corr, name, ts, dur, stream):
        self.add(cat="kernel", name=name, pid=self.r, tid=stream, ts=ts, dur=dur,
                 args={"External id": corr - 500, "queued": 0, "device": self.r, "context": 1,
                       "stream": stream, "correlation": corr, "registers per thread": 32,
                       "grid": [64, 1, 1], "block": [256, 1, 1]})
        self.ev.append({"ph": "f", "id": corr, "pid": self.r, "tid": stream, "ts": ts,
                        "cat": "ac2g", "name": "ac2g", "bp": "e"})


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    out, kernels = args[0], "--no-kernels" not in args[1:]
    ranks = [Rank(r) for r in range(P)]
    posts = {}  # (kind, stage, mb, step) -> (rank, the NCCL launch's ts, its correlation)
    steps = []
    for step in range(STEPS):
        lo, hi = float("inf"), -float("inf")
        for rk in ranks:
            s, t = rk.r, BASE + step * 100000.0 + rk.r * 700.0
            main_tid, bwd_tid = rk.pid, rk.pid + 7  # autograd's thread launches the backward
            for kind, mb in actions(s):
                name = "PP:%d%s%d" % (s, kind, mb)
                dur = SPAN if kind in "FIW" else POST
                rk.add(cat="user_annotation", name=name, pid=rk.pid, tid=main_tid, ts=t, dur=dur)
                lo, hi = min(lo, t), max(hi, t + dur)
                if kind in "FIW":
                    rk.add(cat="cpu_op", name="aten::mm", pid=rk.pid, tid=main_tid, ts=t + 300.0,
                           dur=20.0)
                    g = gpu_time(kind, s)
                    # three kernels: a quarter, a gap of a quarter, a half; a W's run
                    # after its span ended
                    start = t + dur + 200.0 if kind == "W" else max(t + 400.0, rk.gpu_free)
                    tid = main_tid if kind == "F" else bwd_tid
                    for j, (at, d) in enumerate(((0, g / 4), (g / 2, g / 4), (3 * g / 4, g / 4))):
                        c = rk.launch(t + 300.0 + 30.0 * j, tid)
                        if kernels:
                            rk.kernel(c, "ampere_sgemm_128x64_tn", start + at, d, 7)
                    rk.gpu_free = start + g
                    hi = max(hi, start + g)
                else:
                    c = rk.launch(t + 10.0, main_tid, "cuda_driver", "cuLaunchKernelEx")
                    posts[(kind, s, mb, step)] = (rk, t + 15.0, c)
                t += dur + GAP
            if rk.r == 0:  # the optimizer: launched outside every span, ends late
                c = rk.launch(t + 50.0, main_tid)
                if kernels:
                    rk.kernel(c, "multi_tensor_apply_kernel", t + 60.0, 5000.0, 7)
                if kernels:  # a kernel whose launch the trace does not hold
                    rk.kernel(rk.corr + 100000, "ampere_sgemm_128x64_tn", t + 70.0, 9000.0, 7)
        for (kind, s, mb, st), (rk, ts, c) in posts.items():
            if st != step or not kind.startswith("SEND"):
                continue
            to = s + 1 if kind == "SEND_F" else s - 1
            rr, rts, rc = posts[("RECV" + kind[4:], to, mb, step)]
            send_k, recv_k = ts + 5.0, rts + 5.0
            end = max(send_k, recv_k) + T_COMM
            if kernels:  # the send's kernel ends with the transfer too
                rk.kernel(c, NCCL, send_k, end - send_k, 20)
                rr.kernel(rc, NCCL, recv_k, end - recv_k, 20)
                hi = max(hi, end)
        steps.append((hi - lo) * 1e-6)
    os.makedirs(out, exist_ok=True)
    for rk in ranks:
        meta = [{"ph": "M", "name": "process_name", "pid": rk.pid, "tid": 0,
                 "args": {"name": "python3 %d" % rk.pid}},
                {"ph": "M", "name": "process_name", "pid": rk.r, "tid": 0,
                 "args": {"name": "CUDA %d" % rk.r}}]
        doc = {"schemaVersion": 1,
               "deviceProperties": [{"id": rk.r, "name": "NVIDIA H100 80GB HBM3"}],
               "distributedInfo": {"backend": "nccl", "rank": rk.r, "world_size": P},
               "traceEvents": meta + rk.ev, "traceName": "rank%d.json" % rk.r,
               "displayTimeUnit": "ms", "baseTimeNanoseconds": 1700000000000000000}
        with open(os.path.join(out, "rank%d.json" % rk.r), "w") as f:
            json.dump(doc, f)
    exp = {k: [gpu_time(kind, s) * 1e-6 for s in range(P)] for k, kind in (("tf", "F"),
                                                                            ("tb", "I"), ("tw", "W"))}
    exp.update(tcomm=T_COMM * 1e-6, span_s=SPAN * 1e-6, steps_s=steps)
    with open(os.path.join(out, "expect.json"), "w") as f:
        json.dump(exp, f)


main()
