"""A torch.distributed.pipelining schedule from stagecraft's proved streams.

build_schedule(program, stages, loss_fn) checks the stages this rank built
against the program (stage count, placement, world size) and that every
rank loaded the same program (its digest, gathered over the group), exports the
program in the compute_comms dialect of the installed PyTorch
(docs/interchange.md#pytorch-pipelining-csv: WAIT_SEND_* from 2.15 on) and
loads it into PyTorch's _PipelineScheduleRuntime, which then runs exactly
those streams: every transfer where and in the order stagecraft verified it;
overlapped pairs (OVERLAP_F_B) run their two halves at once (overlap.py).
"""
import os
import re
import tempfile

from . import Error


def torch_version(torch=None):
    """(major, minor) of the installed PyTorch."""
    if torch is None:
        import torch
    m = re.match(r"(\d+)\.(\d+)", torch.__version__)
    if not m:
        raise Error(f"cannot read the PyTorch version '{torch.__version__}'", 3)
    return int(m.group(1)), int(m.group(2))


def dialect_for(version):
    """The --torch value whose dialect that PyTorch reads."""
    if version < (2, 4):
        raise Error(f"PyTorch {version[0]}.{version[1]}: torch.distributed.pipelining reads "
                    "schedule CSV files from 2.4 on", 3)
    return "2.15" if version >= (2, 15) else "2.14"


def check_actions(csv_text, schedules, version):
    """Raises Error naming the first action this PyTorch does not know."""
    known = {t.value for t in schedules._ComputationType}
    for row, line in enumerate(csv_text.splitlines()):
        for col, cell in enumerate(line.split(",")):
            m = re.fullmatch(r"\d+([A-Z_]+)\d*", cell.strip())
            if m and m.group(1) not in known:
                raise Error(f"row {row + 1} (rank {row}), cell {col + 1} '{cell}': PyTorch "
                            f"{version[0]}.{version[1]} does not know the action {m.group(1)} "
                            "(export for this version: torch='2.14' or newer PyTorch)", 3)


def _stage_list(stages):
    return list(stages) if isinstance(stages, (list, tuple)) else [stages]


def check_stages(program, stages, world_size, rank):
    """Raises Error when the stages this rank built do not match the program."""
    S, P = program.stages, program.devices
    if world_size != P:
        raise Error(f"the program has {P} devices but the pipeline group has {world_size} "
                    "ranks", 3)
    want = program.stages_of(rank)
    got = sorted(s.stage_index for s in stages)
    for s in stages:
        if s.num_stages != S:
            raise Error(f"rank {rank}: stage {s.stage_index} was built with num_stages="
                        f"{s.num_stages}, the program has {S} stages", 3)
    if got != want:
        raise Error(f"rank {rank} built stages {got}, but the program places stages {want} "
                    f"on it (placement stage -> rank: {program.placement})", 3)
    # A program verified per-link holds only with PyTorch's per-edge
    # communicators (docs/semantics.md#modes); nccl's verdict holds on all.
    if program.comm == "per-link" and not all(getattr(s, "p2p_per_edge", False) for s in stages):
        raise Error(f"rank {rank}: the program was verified in the per-link mode, but its stages "
                    "share one communicator: set torch.distributed.config.pipeline_per_edge_p2p "
                    "= True before building them", 3)


def check_same_program(program, dist, group, rank):
    """Raises Error unless every rank of the group loaded the same program.

    Each rank evaluates the recipe in its own process; a recipe that reads
    the clock (or a file that differs) can give two ranks two programs,
    whose streams would pair sends and receives that do not match. The
    digests (Program.digest) are gathered over the pipeline's group (dist:
    torch.distributed)."""
    digests = [None] * dist.get_world_size(group)
    dist.all_gather_object(digests, program.digest, group=group)
    other = [r for r, d in enumerate(digests) if d != program.digest]
    if other:
        raise Error(f"rank {rank}: ranks {other} loaded another program than this rank's "
                    f"(digests {sorted(set(map(str, digests)))}): the recipe gave different "
                    "programs on different ranks (it reads the clock or a file that differs); "
                    "every rank must run the same streams", 8)


def build_schedule(program, stages, loss_fn=None, n_microbatches=None,
                   dialect=None, overlap=True, **kwargs):
    """A _PipelineScheduleRuntime loaded with program's compute_comms streams.

    stages: this rank's PipelineStage objects (any order; one is fine).
    n_microbatches defaults to the program's m and must equal it. dialect
    ("2.15" or "2.14") overrides the one chosen for the installed PyTorch.
    overlap: a program with overlapped pairs (OVERLAP_F_B) runs each pair's
    two halves at the same time (stagecraft.overlap.handler); False keeps
    PyTorch's own handler, which runs them in turn.
    Other keyword arguments go to the schedule (scale_grads, ...)."""
    import torch as _torch
    from torch.distributed.pipelining import schedules
    version = torch_version(_torch)
    stages = _stage_list(stages)
    if not stages:
        raise Error("no stages: each rank passes the PipelineStage objects it built", 3)
    m = program.microbatches
    if n_microbatches is not None and n_microbatches != m:
        raise Error(f"n_microbatches={n_microbatches}, but the program has {m} microbatches", 3)
    st0 = stages[0]
    text = program.export("torch-csv-comms", torch=dialect or dialect_for(version))
    check_stages(program, stages, st0.group_size, st0.group_rank)
    if _torch.distributed.is_available() and _torch.distributed.is_initialized():
        check_same_program(program, _torch.distributed, getattr(st0, "group", None),
                           st0.group_rank)
    check_actions(text, schedules, version)
    sched = schedules._PipelineScheduleRuntime(stages, n_microbatches=m, loss_fn=loss_fn,
                                               **kwargs)
    if overlap and "OVERLAP_F_B" in text:
        if not hasattr(sched, "register_custom_function"):
            raise Error(f"PyTorch {version[0]}.{version[1]} cannot take a custom OVERLAP_F_B "
                        "handler (overlap=False runs the pairs in turn)", 3)
        from . import overlap as _overlap
        _overlap.register(sched)
    fd, path = tempfile.mkstemp(suffix=".csv", prefix="stagecraft-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        sched._load_csv(path, format="compute_comms")
    finally:
        os.unlink(path)
    return sched
