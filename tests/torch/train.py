"""train.py RANK WORLD PORT RECIPE[,RECIPE...] — one rank of the real-PyTorch
test (tests/torch/run.sh): gloo on loopback, each recipe's compute_comms
export loaded through the stagecraft package (Program.torch_schedule) and
trained one step of a small MLP; the loss and every gradient must equal a
non-pipelined reference within TOL. Overlapped pairs (OVERLAP_F_B) run with
stagecraft's handler, which overlaps their halves (python/stagecraft/
overlap.py), and again with PyTorch's own, which runs them in turn. Also, per recipe with a loop or V
placement, the torchtitan route: the compute_only export loaded the way
torchtitan loads --parallelism.pipeline_parallel_schedule_csv.

Rank 0 prints one line per check and "torch pN: N passed, N failed".
"""
import datetime
import os
import sys
import traceback

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

import stagecraft
from tinymodel import HIDDEN, Block, loss_fn, model_and_data, reference

TOL = 1e-5      # relative, float64 model: pipelining changes only the order of sums


def run_step(sched, stage_ids, S, x, y):
    """One training step; the rank with the last stage gets the losses."""
    losses = []
    args = (x,) if 0 in stage_ids else ()
    if S - 1 in stage_ids:
        sched.step(*args, target=y, losses=losses)
    else:
        sched.step(*args)
    return losses


def compare(rank, world, blocks_ref, loss_ref, mine, losses, S):
    """Worst relative error of this rank's gradients (and its loss)."""
    err = 0.0
    for s, mod in mine.items():
        for p, r in zip(mod.parameters(), blocks_ref[s]):
            d = (p.grad - r).abs().max().item() / max(r.abs().max().item(), 1e-12)
            err = max(err, d)
    if losses:
        got = sum(l.item() for l in losses) / len(losses)
        err = max(err, abs(got - loss_ref) / abs(loss_ref))
    return err


def one(recipe, params, rank, world, titan, serial=False):
    """One check: the stagecraft route (titan False), torchtitan's (True);
    serial: the stagecraft route with PyTorch's own OVERLAP_F_B handler
    (the pair's halves in turn) instead of stagecraft's overlapping one."""
    prog = stagecraft.load(recipe, **params)
    S, m = prog.stages, prog.microbatches
    blocks, x, y = model_and_data(S, m, seed=7)
    loss_ref, grads_ref = reference(blocks, x, y, m)
    ids = titan_stage_ids(prog, rank, world) if titan else prog.stages_of(rank)
    if ids is None:
        return None
    mine = {}
    stages = []
    for s in ids:
        mod = Block(HIDDEN)
        mod.load_state_dict(blocks[s].state_dict())
        mine[s] = mod
        stages.append(PipelineStage(mod, s, S, torch.device("cpu")))
    if titan:
        # torchtitan: _PipelineScheduleRuntime over the stages its class
        # placed, then _load_csv(FILE) in the default compute_only format.
        text = prog.export("torch-csv", torchtitan=True)
        path = f"/tmp/stagecraft-titan-{os.getpid()}.csv"
        with open(path, "w") as f:
            f.write(text)
        sched = _PipelineScheduleRuntime(stages, n_microbatches=m, loss_fn=loss_fn)
        sched._load_csv(path)
        os.unlink(path)
    else:
        sched = prog.torch_schedule(stages, loss_fn=loss_fn, overlap=not serial)
        pairs = "OVERLAP_F_B" in prog.export("torch-csv-comms")
        custom = getattr(sched, "_comp_type_to_function_map", {})
        if pairs and (len(custom) == 1) == serial:
            raise AssertionError(f"OVERLAP_F_B handler registered: {bool(custom)}, "
                                 f"serial: {serial}")
    losses = run_step(sched, ids, S, x, y)
    return compare(rank, world, grads_ref, loss_ref, mine, losses, S)


def titan_stage_ids(prog, rank, world):
    """torchtitan's pipeline_module_split placement for the class export
    --torchtitan names: V (ZBVZeroBubble) or loop; None when neither."""
    S, P = prog.stages, prog.devices
    place = prog.placement
    if all(place[s] == s % P for s in range(S)):
        return tuple(rank + k * P for k in range(S // P))
    if S == 2 * P and all(place[s] == (s if s < P else 2 * P - 1 - s) for s in range(S)):
        return (rank, 2 * P - 1 - rank)
    return None


def main():
    rank, world, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    recipes = sys.argv[4].split(",")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    # A rank whose recipe fails leaves the others waiting inside the step:
    # gloo's timeout turns that into an error instead of a hang.
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    torch.set_num_threads(1)
    passed = failed = 0
    for spec in recipes:
        name, _, rest = spec.partition(":")
        params = dict(kv.split("=") for kv in rest.split(";") if kv)
        params.setdefault("p", world)
        modes = [(False, False), (True, False)]
        if name.startswith("dualpipe"):  # overlapped pairs: PyTorch's own handler too
            modes.append((False, True))
        for titan, serial in modes:
            label = (f"{name} {params}{' torchtitan route' if titan else ''}"
                     f"{' OVERLAP_F_B in turn' if serial else ''}")
            try:
                err = one(name, params, rank, world, titan, serial)
                msg = ""
            except Exception as e:  # noqa: BLE001 - reported, then counted as a failure
                err, msg = float("inf"), f"{type(e).__name__}: {e}".splitlines()[0]
                if os.environ.get("SC_TORCH_DEBUG"):
                    traceback.print_exc()
            errs = [None] * world
            dist.all_gather_object(errs, (err, msg))
            if rank == 0:
                if all(e is None for e, _ in errs):
                    continue  # torchtitan cannot place it: export --torchtitan refuses it
                worst = max(e for e, _ in errs if e is not None)
                why = "; ".join(m for _, m in errs if m)
                if worst <= TOL:
                    passed += 1
                    print(f"ok   {label}: max relative error {worst:.2e}")
                else:
                    failed += 1
                    print(f"FAIL {label}: max relative error {worst:.2e} {why}")
            dist.barrier()
    if rank == 0:
        print(f"torch p{world}: {passed} passed, {failed} failed", flush=True)
    dist.destroy_process_group()


main()
