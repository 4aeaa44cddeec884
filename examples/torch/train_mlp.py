"""Trains a small MLP for a few steps with a stagecraft schedule on
torch.distributed.pipelining (gloo on CPU, one process per pipeline rank):

    pip install ./python torch      # the package builds its own stagecraft binary
    torchrun --nproc-per-node 4 examples/torch/train_mlp.py zb-v

Each rank builds the stages the program places on it; the schedule runs the
streams stagecraft verified (docs/interchange.md#python)."""
import sys

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage

import stagecraft

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
recipe = sys.argv[1] if len(sys.argv) > 1 else "1f1b"
prog = stagecraft.load(recipe, p=world, m=8)
torch.manual_seed(0)
layers = [torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh()) for _ in range(prog.stages)]
mine = {s: layers[s] for s in prog.stages_of(rank)}
stages = [PipelineStage(mod, s, prog.stages, torch.device("cpu")) for s, mod in mine.items()]
schedule = prog.torch_schedule(stages, loss_fn=torch.nn.functional.mse_loss)
opt = torch.optim.SGD([p for m in mine.values() for p in m.parameters()], lr=0.1)
x, y = torch.randn(32, 16), torch.randn(32, 16)
for step in range(5):
    opt.zero_grad()
    losses = []
    args = (x,) if 0 in mine else ()
    if prog.stages - 1 in mine:
        schedule.step(*args, target=y, losses=losses)
        print(f"step {step}: loss {sum(l.item() for l in losses) / len(losses):.4f}")
    else:
        schedule.step(*args)
    opt.step()
dist.destroy_process_group()
