"""trace.py RANK WORLD PORT OUTDIR RECIPE [M] — one rank of the trace test
(tests/torch/trace.sh, docs/costs.md#costs-from-a-pytorch-trace): a small
pipelined GPT (each stage a causal transformer layer) trained by PyTorch's
_PipelineScheduleRuntime on the streams of RECIPE (stagecraft's
compute_comms export through Program.torch_schedule), gloo on loopback, the
launch of tests/torch/run.sh. After WARMUP untimed steps, STEPS steps run
under torch.profiler; each rank writes its Chrome trace to
OUTDIR/rank<R>.json, and rank 0 writes OUTDIR/steps.json: every timed
step's wall time (from a barrier to the last rank's end of step()) and
their median, the step the cost file's prediction is checked against.
"""
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage

import stagecraft

WARMUP, STEPS = 3, 8
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


def main():
    rank, world, port, outdir, recipe = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                         sys.argv[4], sys.argv[5])
    m = int(sys.argv[6]) if len(sys.argv) > 6 else 8
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    torch.set_num_threads(1)
    prog = stagecraft.load(recipe, p=world, m=m)
    S = prog.stages
    torch.manual_seed(1)
    mods = [Layer() for _ in range(S)]   # every rank builds all: equal weights
    stages = [PipelineStage(mods[s], s, S, torch.device("cpu")) for s in prog.stages_of(rank)]
    sched = prog.torch_schedule(stages, loss_fn=loss_fn)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(m * BATCH_PER_MB, SEQ, D_MODEL, generator=g)
    y = torch.randn(m * BATCH_PER_MB, SEQ, D_MODEL, generator=g)

    def step():
        dist.barrier()
        t = time.perf_counter()
        args = (x,) if 0 in prog.stages_of(rank) else ()
        kw = {"target": y, "losses": []} if S - 1 in prog.stages_of(rank) else {}
        sched.step(*args, **kw)
        return time.perf_counter() - t

    for _ in range(WARMUP):
        step()
    times = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(STEPS):
            times.append(step())
            prof.step()
    prof.export_chrome_trace(os.path.join(outdir, f"rank{rank}.json"))
    every = [None] * world
    dist.all_gather_object(every, times)
    if rank == 0:
        steps = [max(r[i] for r in every) for i in range(STEPS)]
        with open(os.path.join(outdir, "steps.json"), "w") as f:
            json.dump({"recipe": recipe, "p": world, "m": m, "steps_s": steps,
                       "median_s": statistics.median(steps)}, f)
    dist.destroy_process_group()


main()
