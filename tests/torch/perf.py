"""perf.py — the time to load a recipe (p = 8, m = 64) and build PyTorch's
schedule from its proved streams, in one process: stagecraft.load, the
compute_comms export, _PipelineScheduleRuntime over rank 0's stages (test
doubles: FakeStage of dump.py, nothing runs) and its _load_csv with PyTorch's
validation. Prints the median of 5 runs in milliseconds (docs/interchange.md#python)."""
import os
import statistics
import sys
import tempfile
import time

from torch.distributed.pipelining import schedules

import stagecraft

sys.argv = sys.argv[:1]
sys.path.insert(0, os.path.dirname(__file__))


class FakeStage:
    def __init__(self, index, num_stages, group_size, group_rank):
        self.stage_index, self.num_stages = index, num_stages
        self.group_size, self.group_rank = group_size, group_rank
        self.is_first, self.is_last = index == 0, index == num_stages - 1


def once(recipe):
    t = time.perf_counter()
    prog = stagecraft.load(recipe, p=8, m=64)
    text = prog.export("torch-csv-comms")
    stages = [FakeStage(s, prog.stages, 8, 0) for s in prog.stages_of(0)]
    sched = schedules._PipelineScheduleRuntime(stages, n_microbatches=64, loss_fn=lambda a, b: a)
    fd, path = tempfile.mkstemp(suffix=".csv")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    sched._load_csv(path, format="compute_comms")
    os.unlink(path)
    return time.perf_counter() - t, sum(len(v) for v in sched.pipeline_order_with_comms.values())


for recipe in ("1f1b", "zb-v", "interleaved"):
    runs = [once(recipe) for _ in range(5)]
    ms = statistics.median(r[0] for r in runs) * 1000
    print(f"perf {recipe} p=8 m=64: {ms:.0f} ms (load + export + schedule, {runs[0][1]} actions)")
