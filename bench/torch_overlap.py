"""torch_overlap.py RANK WORLD PORT [HIDDEN] [STEPS] — one rank of the PyTorch
measurement of overlapped pairs (bench/bench_overlap.sh): dualpipev with
p = WORLD, m = 4 WORLD, each stage a residual MLP block of HIDDEN features
(float32, CPU, gloo), trained STEPS steps through stagecraft's schedule
with stagecraft's OVERLAP_F_B handler (the pair's halves at once) and with
PyTorch's own (in turn), alternately; rank 0 prints the median step time
of each and the largest difference of the losses (0: the same results).
Each rank uses torch.set_num_threads(2): two threads, one per half."""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage

import stagecraft


class Block(torch.nn.Module):
    def __init__(self, h):
        super().__init__()
        self.a = torch.nn.Linear(h, 4 * h)
        self.b = torch.nn.Linear(4 * h, h)

    def forward(self, x):
        return x + self.b(torch.tanh(self.a(x)))


def main():
    rank, world, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    hidden = int(sys.argv[4]) if len(sys.argv) > 4 else 512
    steps = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(int(os.environ.get("THREADS", "1")))
    m = 4 * world
    prog = stagecraft.load("dualpipev", p=world, m=m)
    S = prog.stages
    torch.manual_seed(0)
    blocks = [Block(hidden) for _ in range(S)]
    x = torch.randn(m * 8, 64, hidden)
    y = torch.randn(m * 8, 64, hidden)
    ids = prog.stages_of(rank)

    def loss_fn(out, target):
        return ((out - target) ** 2).mean()

    times = {True: [], False: []}
    losses_of = {}
    for it in range(2 * steps + 2):
        overlap = it % 2 == 0
        stages = [PipelineStage(blocks[s], s, S, torch.device("cpu")) for s in ids]
        sched = prog.torch_schedule(stages, loss_fn=loss_fn, overlap=overlap)
        for b in blocks:
            b.zero_grad()
        dist.barrier()
        t = time.perf_counter()
        losses = []
        args = (x,) if 0 in ids else ()
        if S - 1 in ids:
            sched.step(*args, target=y, losses=losses)
        else:
            sched.step(*args)
        dist.barrier()
        dt = time.perf_counter() - t
        if it >= 2:  # the first two build caches
            times[overlap].append(dt)
        if losses:
            losses_of[overlap] = [float(v) for v in losses]
    if rank == 0:
        a, b = statistics.median(times[True]), statistics.median(times[False])
        diff = max(abs(p - q) for p, q in zip(losses_of[True], losses_of[False]))
        print(f"torch dualpipev p={world} m={m} hidden={hidden} threads={torch.get_num_threads()}: "
              f"overlap handler {a * 1000:.0f} ms, PyTorch's (in turn) {b * 1000:.0f} ms, "
              f"ratio {b / a:.2f}, loss difference {diff:.1e}")
    dist.destroy_process_group()


main()
