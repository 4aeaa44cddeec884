"""dump.py OUTDIR — PyTorch's own schedules, dumped by PyTorch's _dump_csv
in both dialects: every multi-stage schedule class it ships (the ones with
a CSV dumper), p = 2 and 4, m = 2p, into
OUTDIR/<Class>-p<P>-m<M>.<compute_only|compute_comms>.csv. The stages are
a test double (FakeStage: the attributes the schedule constructors read);
nothing runs. The single-stage classes (ScheduleGPipe, Schedule1F1B) have no
CSV dumper: PyTorch runs them without a schedule table. tests/torch/run.sh
imports each file into stagecraft; tests/torch/fixtures keeps the dumps of
the versions tested, which tests/interchange.sh imports without PyTorch."""
import os
import sys

import torch
from torch.distributed.pipelining import schedules


class FakeStage:
    """Test double of a PipelineStage: what schedule constructors read."""

    def __init__(self, index, num_stages, group_size, group_rank):
        self.stage_index, self.num_stages = index, num_stages
        self.group_size, self.group_rank = group_size, group_rank
        self.is_first, self.is_last = index == 0, index == num_stages - 1
        self.submod = torch.nn.Identity()


CLASSES = [  # (name, stages per rank, V placement)
    ("ScheduleInterleaved1F1B", 2, False), ("ScheduleLoopedBFS", 2, False),
    ("ScheduleInterleavedZeroBubble", 2, False), ("ScheduleZBVZeroBubble", 2, True),
    ("ScheduleDualPipeV", 2, True),
]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    made = 0
    for name, v, vshape in CLASSES:
        cls = getattr(schedules, name, None)
        if cls is None:
            print(f"{name}: not in PyTorch {torch.__version__}")
            continue
        for P in (2, 4):
            m = 2 * P
            S = P * v
            ids = (lambda r: [r, 2 * P - 1 - r]) if vshape else (lambda r: [r + k * P for k in range(v)])
            stages = [FakeStage(s, S, P, 0) for s in ids(0)]
            sched = cls(stages, n_microbatches=m, loss_fn=lambda a, b: a)
            base = os.path.join(out, f"{name[8:]}-p{P}-m{m}")
            sched._dump_csv(base + ".compute_only.csv", format="compute_only")
            sched._dump_csv(base + ".compute_comms.csv", format="compute_comms")
            made += 2
    print(f"dumped {made} files with PyTorch {torch.__version__}")


main()
