"""trace.py SC RANK WORLD PORT OUTDIR RECIPE M STEPS [--trim] — one rank of
the trace test (tests/torch/trace.sh, docs/costs.md#costs-from-a-pytorch-trace):
a small pipelined GPT (each stage a causal transformer layer) trained by
PyTorch's _PipelineScheduleRuntime on the streams of RECIPE with M
microbatches (`SC export RECIPE --format torch-csv-comms`, loaded with
_load_csv as Program.torch_schedule does), gloo on loopback as
tests/torch/run.sh launches it. After WARMUP untimed steps, STEPS steps run
under torch.profiler; each rank writes its Chrome trace to
OUTDIR/rank<R>.json, and rank 0 writes OUTDIR/steps.json: every timed
step's wall time (from a barrier to the last rank's end of step()) and their
median, the step the cost file's prediction is checked against. --trim
keeps of each trace only what `costs --from-trace` reads, the spans PP:...
and the first operator inside each (the fixture of tests/torch/fixtures/trace).
"""
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
from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

WARMUP = 3
D_MODEL, HEADS, SEQ, BATCH_PER_MB = 128, 4, 32, 2


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


def schedule(sc, recipe, world, m, rank, stages):
    """PyTorch's runtime loaded with RECIPE's compute_comms export."""
    text = subprocess.run([sc, "export", recipe, "-D", f"p={world}", "-D", f"m={m}", "--format",
                           "torch-csv-comms"], check=True, capture_output=True, text=True).stdout
    sched = _PipelineScheduleRuntime(stages, n_microbatches=m, loss_fn=loss_fn)
    with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
        f.write(text)
        f.flush()
        sched._load_csv(f.name, format="compute_comms")
    return sched


def stages_of(sc, recipe, world, m, rank):
    """The stages RECIPE places on this rank, and their count."""
    j = json.loads(subprocess.run([sc, "export", recipe, "-D", f"p={world}", "-D", f"m={m}",
                                   "--format", "json"], check=True, capture_output=True,
                                  text=True).stdout)
    place = j["placement"]
    return [s for s, d in enumerate(place) if d == rank], len(place)


def trim(path):
    """Keeps the spans PP:... and the first operator of each (same thread)."""
    with open(path) as f:
        t = json.load(f)
    ev = t["traceEvents"]
    spans = [e for e in ev if e.get("ph") == "X" and e.get("name", "").startswith("PP:")]
    ops = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") == "cpu_op"),
                 key=lambda e: e["ts"])
    keep = []
    for s in spans:
        first = next((o for o in ops if o["tid"] == s["tid"] and o["pid"] == s["pid"]
                      and s["ts"] <= o["ts"] <= s["ts"] + s["dur"]), None)
        keep += [s] + ([first] if first else [])
    for e in keep:
        e.pop("args", None)
    t["traceEvents"] = sorted(keep, key=lambda e: e["ts"])
    t["traceName"] = os.path.basename(path)
    t.pop("deviceProperties", None)
    with open(path, "w") as f:
        json.dump(t, f, separators=(",", ":"))
        f.write("\n")


def main():
    sc, rank, world, port, outdir, recipe = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                             sys.argv[4], sys.argv[5], sys.argv[6])
    m, steps = int(sys.argv[7]), int(sys.argv[8])
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    torch.set_num_threads(1)
    mine, S = stages_of(sc, recipe, world, m, rank)
    torch.manual_seed(1)
    mods = [Layer() for _ in range(S)]   # every rank builds all: equal weights
    stages = [PipelineStage(mods[s], s, S, torch.device("cpu")) for s in mine]
    sched = schedule(sc, recipe, world, m, rank, stages)
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
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            times.append(step())
            prof.step()
    path = os.path.join(outdir, f"rank{rank}.json")
    prof.export_chrome_trace(path)
    if "--trim" in sys.argv:
        trim(path)
    every = [None] * world
    dist.all_gather_object(every, times)
    if rank == 0:
        wall = [max(r[i] for r in every) for i in range(steps)]
        with open(os.path.join(outdir, "steps.json"), "w") as f:
            json.dump({"recipe": recipe, "p": world, "m": m, "steps_s": wall,
                       "median_s": statistics.median(wall)}, f)
    dist.destroy_process_group()


main()
