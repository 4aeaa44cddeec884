"""trace.py SC RANK WORLD PORT OUTDIR M STEPS SOURCE... [--trim] — one rank of
the trace tests (tests/torch/trace.sh, bench/bench_trace_predict.sh;
docs/costs.md#costs-from-a-pytorch-trace): a small pipelined GPT (each
stage a pre-norm causal transformer layer) trained on gloo on loopback, as
tests/torch/run.sh launches train.py, by each SOURCE in turn:

  - a PyTorch 2.15 schedule class: ScheduleInterleaved1F1B,
    ScheduleLoopedBFS, ScheduleInterleavedZeroBubble (two stages per rank,
    placed in a loop), ScheduleZBVZeroBubble, ScheduleDualPipeV (two, in a
    V), ScheduleGPipe, Schedule1F1B (one);
  - a stagecraft recipe: PyTorch's _PipelineScheduleRuntime on its
    compute_comms export (`SC export RECIPE --format torch-csv-comms`,
    loaded with _load_csv as Program.torch_schedule does);
  - either with "+stack": recorded with torch.profiler's with_stack=True
    (the Python functions: what a single-stage schedule needs to be read);
  - either with "+fsdp": the stages sharded with FSDP2 (fully_shard) over
    two data-parallel replicas of a pipeline of WORLD / 2 ranks; the
    traces are those of replica 0 (rank<R>.json, R its pipeline rank).

After WARMUP untimed steps, STEPS steps run under torch.profiler; each rank
writes OUTDIR/<SOURCE>/rank<R>.json (its Chrome trace), and rank 0 writes
OUTDIR/<SOURCE>/steps.json (every timed step's wall time, from a barrier
to the last rank's end of step(), and their median) and, for the classes
on _PipelineScheduleRuntime, OUTDIR/<SOURCE>/schedule.csv: the actions
PyTorch ran (compute_comms, _dump_csv). --trim writes beside each trace
rank<R>.trim.json, only what `costs --from-trace` reads of it (the
fixtures of tests/torch/fixtures/trace).
"""
import bisect
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining import schedules as sch

WARMUP = 2
D_MODEL, HEADS, SEQ, BATCH_PER_MB = 128, 4, 32, 2
LOOP = ("ScheduleInterleaved1F1B", "ScheduleLoopedBFS", "ScheduleInterleavedZeroBubble")
VEE = ("ScheduleZBVZeroBubble", "ScheduleDualPipeV")
SINGLE = ("ScheduleGPipe", "Schedule1F1B")


class Layer(torch.nn.Module):
    """One stage of the GPT: a pre-norm causal transformer layer."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(
            D_MODEL, HEADS, 4 * D_MODEL, dropout=0.0, batch_first=True, norm_first=True)
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(SEQ))

    def forward(self, x):
        return self.layer(x, src_mask=self.mask, is_causal=True)


def loss_fn(out, target):
    return ((out - target) ** 2).mean()


def export(sc, recipe, world, m, fmt):
    return subprocess.run([sc, "export", recipe, "-D", f"p={world}", "-D", f"m={m}", "--format",
                           fmt], check=True, capture_output=True, text=True).stdout


def placement(sc, cls, world, m):
    """The stage of every rank's stages, and the number of stages."""
    if cls in SINGLE:
        return [[r] for r in range(world)], world
    if cls in LOOP:
        return [[r, r + world] for r in range(world)], 2 * world
    if cls in VEE:
        return [[r, 2 * world - 1 - r] for r in range(world)], 2 * world
    place = json.loads(export(sc, cls, world, m, "json"))["placement"]
    return [[s for s, d in enumerate(place) if d == r] for r in range(world)], len(place)


def schedule(sc, cls, world, m, stages):
    """The schedule of cls on these stages (world: the pipeline's ranks)."""
    if cls in SINGLE:
        return getattr(sch, cls)(stages[0], n_microbatches=m, loss_fn=loss_fn)
    if cls in LOOP + VEE:
        return getattr(sch, cls)(stages, n_microbatches=m, loss_fn=loss_fn)
    s = sch._PipelineScheduleRuntime(stages, n_microbatches=m, loss_fn=loss_fn)
    with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
        f.write(export(sc, cls, world, m, "torch-csv-comms"))
        f.flush()
        s._load_csv(f.name, format="compute_comms")
    return s


def trim(path, out):
    """Writes to out what `costs --from-trace` reads: the spans of the runtime
    (PP:...), of GPipe (Forward <mb>, Backward <mb>) and the Python
    functions it reads; of the operators, the posts of receives and sends
    inside a span (a Python function's too), the first operator after the receives', and after a
    GPipe Forward the last one before the next pass (its loss)."""
    with open(path) as f:
        t = json.load(f)
    ev = [e for e in t["traceEvents"] if e.get("ph") == "X"]
    py = ("): forward_one_chunk", "): backward_one_chunk", "): _batch_p2p",
          "): _wait_batch_p2p")

    def span(e):
        n = e.get("name", "")
        return (n.startswith(("PP:", "Forward ", "Backward ")) or
                (e.get("cat") == "python_function" and "pipelining/" in n and
                 (n.endswith(py) or (n.endswith("): step") and "schedules.py(" in n))))
    spans = sorted((e for e in ev if span(e)), key=lambda e: e["ts"])
    ops = {}
    for o in ev:
        if o.get("cat") == "cpu_op":
            ops.setdefault((o["pid"], o["tid"]), []).append(o)
    starts = {}
    for k, v in ops.items():
        v.sort(key=lambda o: o["ts"])
        starts[k] = [o["ts"] for o in v]
    keep = {id(s): s for s in spans}
    for i, s in enumerate(spans):
        mine, at = ops.get((s["pid"], s["tid"]), []), starts.get((s["pid"], s["tid"]), [])
        end = s["ts"] + s["dur"]
        inside = mine[bisect.bisect_left(at, s["ts"]):bisect.bisect_right(at, end)]
        recv = [o for o in inside if o["name"].startswith("c10d::recv")]
        send = [o for o in inside if o["name"].startswith("c10d::send")]
        if s.get("cat") == "python_function":   # _batch_p2p: the posts of Schedule1F1B
            for o in recv + send:
                keep[id(o)] = o
            continue
        after = recv[-1]["ts"] + recv[-1]["dur"] if recv else s["ts"]
        first = next((o for o in inside if o["ts"] >= after), None)
        for o in recv + send + ([first] if first else []):
            keep[id(o)] = o
        if s["name"].startswith("Forward "):
            nxt = next((x["ts"] for x in spans[i + 1:] if x["pid"] == s["pid"] and
                        x["name"].startswith(("Forward ", "Backward "))), float("inf"))
            gap = mine[bisect.bisect_left(at, end):bisect.bisect_left(at, nxt)]
            if gap:
                last = max(gap, key=lambda o: o["ts"] + o["dur"])
                keep[id(last)] = last
    for e in keep.values():
        e.pop("args", None)
    t["traceEvents"] = sorted(keep.values(), key=lambda e: e["ts"])
    t["traceName"] = os.path.basename(out)
    t.pop("deviceProperties", None)
    with open(out, "w") as f:
        json.dump(t, f, separators=(",", ":"))
        f.write("\n")


def record(sc, source, rank, world, m, steps, outdir):
    cls, stack, fsdp = source.split("+")[0], "+stack" in source, "+fsdp" in source
    group, dp, pp, ppsize = None, 0, rank, world
    if fsdp:   # rank = dp * ppsize + pp: replica dp of pipeline rank pp
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        ppsize = world // 2
        mesh = init_device_mesh("cpu", (2, ppsize), mesh_dim_names=("dp", "pp"))
        dp, pp, group = mesh["dp"].get_local_rank(), mesh["pp"].get_local_rank(), mesh["pp"].get_group()
    places, S = placement(sc, cls, ppsize, m)
    mine = places[pp]
    torch.manual_seed(1)
    mods = [Layer() for _ in range(S)]   # every rank builds all: equal weights
    if fsdp:
        for s in mine:
            fully_shard(mods[s], mesh=mesh["dp"])
    stages = [PipelineStage(mods[s], s, S, torch.device("cpu"), group=group) for s in mine]
    sched = schedule(sc, cls, ppsize, m, stages)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(m * BATCH_PER_MB, SEQ, D_MODEL, generator=g)
    y = torch.randn(m * BATCH_PER_MB, SEQ, D_MODEL, generator=g)

    def step():
        dist.barrier()
        t = time.perf_counter()
        args = (x,) if 0 in mine else ()
        kw = {"target": y, "losses": []} if S - 1 in mine else {}
        sched.step(*args, **kw)
        return time.perf_counter() - t

    for _ in range(WARMUP):
        step()
    times = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                with_stack=stack) as prof:
        for _ in range(steps):
            times.append(step())
            prof.step()
    d = os.path.join(outdir, source)
    os.makedirs(d, exist_ok=True)
    if dp == 0:   # one replica's pipeline
        path = os.path.join(d, f"rank{pp}.json")
        prof.export_chrome_trace(path)
        if "--trim" in sys.argv:
            trim(path, os.path.join(d, f"rank{pp}.trim.json"))
    every = [None] * world
    dist.all_gather_object(every, times)
    if rank == 0:
        wall = [max(r[i] for r in every) for i in range(steps)]
        with open(os.path.join(d, "steps.json"), "w") as f:
            json.dump({"source": source, "p": ppsize, "m": m, "stages": S, "steps_s": wall,
                       "median_s": statistics.median(wall)}, f)
        if hasattr(sched, "pipeline_order_with_comms"):   # what the runtime ran
            sched._dump_csv(os.path.join(d, "schedule.csv"), format="compute_comms")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    sc, rank, world, port, outdir = args[0], int(args[1]), int(args[2]), args[3], args[4]
    m, steps, sources = int(args[5]), int(args[6]), args[7:]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    torch.set_num_threads(1)
    for source in sources:
        record(sc, source, rank, world, m, steps, outdir)
        dist.barrier()
    dist.destroy_process_group()


main()
