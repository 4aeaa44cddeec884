"""torch_speed.py SC [--rounds N] [--cases p:m,...]: PyTorch building, lowering and
simulating its own schedules against the whole stagecraft process doing the same.

Run with the python of a PyTorch venv (tests/torch/venv.sh installs 2.15.0 under
~/.cache/stagecraft/torch/2.15.0): no GPU, no process group, nothing runs.

PyTorch, in this process (its import not counted): the schedule class built
over rank 0's stages (test doubles, as tests/torch/perf.py), which orders the
compute actions of every rank and lowers them (_prepare_schedule_with_comms:
_add_send_recv and the waits), then _simulate_comms_compute over the lowered
schedule. stagecraft: `SC sim RECIPE -D p=P -D m=M`, the whole process (start,
unroll, lower, prove, simulate, print). Both in CPU time (user + system: wall
time is noise on a shared machine), the median of the rounds; the ratio is
PyTorch's over stagecraft's. Prints one row per case and schedule.
"""
import argparse
import os
import statistics
import sys
import time

from torch.distributed.pipelining import schedules


class FakeStage:
    def __init__(self, index, num_stages, group_size, group_rank):
        self.stage_index, self.num_stages = index, num_stages
        self.group_size, self.group_rank = group_size, group_rank
        self.is_first, self.is_last = index == 0, index == num_stages - 1
        self.submod = None  # not a module: no torch.compile check


# stagecraft recipe, PyTorch class, rank 0's stages for p devices (two chunks each)
SCHEDULES = [
    ("interleaved", schedules.ScheduleInterleaved1F1B, lambda p: [0, p]),
    ("zb-v", schedules.ScheduleZBVZeroBubble, lambda p: [0, 2 * p - 1]),
]


def torch_once(cls, stages_of, p, m):
    t = time.process_time()
    stages = [FakeStage(s, 2 * p, p, 0) for s in stages_of(p)]
    sched = cls(stages, n_microbatches=m, loss_fn=lambda a, b: a)
    order = sched.pipeline_order_with_comms
    # its simulator knows compute, sends, receives and their waits: the
    # unshard/reshard and gradient-reduction actions (no-ops here) left out
    keep = {schedules.F, schedules.I, schedules.W, schedules.B, schedules.SEND_F,
            schedules.RECV_F, schedules.SEND_B, schedules.RECV_B,
            getattr(schedules, "WAIT_SEND_F", None), getattr(schedules, "WAIT_SEND_B", None)}
    order = {r: [x for x in v if x is not None and x.computation_type in keep]
             for r, v in order.items()}
    schedules._simulate_comms_compute(order, lambda s: sched.stage_index_to_group_rank[s], 2 * p)
    return time.process_time() - t, sum(len(v) for v in order.values())


def sc_once(sc, recipe, p, m):
    # posix_spawn, not fork: a forked child of this large process would
    # count the teardown of its copy of PyTorch's address space at exec
    null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
    pid = os.posix_spawn(sc, [sc, "sim", recipe, "-D", f"p={p}", "-D", f"m={m}"], os.environ,
                         file_actions=null)
    _, st, ru = os.wait4(pid, 0)
    if st != 0:
        sys.exit(f"{sc} sim {recipe} -D p={p} -D m={m} failed ({st})")
    return ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sc")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default="4:8,8:32,16:64,64:256,16:1024")
    a = ap.parse_args()
    import torch
    print(f"PyTorch {torch.__version__}; stagecraft {a.sc}; CPU seconds, median of {a.rounds}")
    print("| schedule | p | m | PyTorch actions | PyTorch | stagecraft process | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case in a.cases.split(","):
        p, m = (int(x) for x in case.split(":"))
        for recipe, cls, stages_of in SCHEDULES:
            tt = [torch_once(cls, stages_of, p, m) for _ in range(a.rounds)]
            ts = [sc_once(a.sc, recipe, p, m) for _ in range(a.rounds)]
            t_torch = statistics.median(x[0] for x in tt)
            t_sc = statistics.median(ts)
            print(f"| {recipe} | {p} | {m} | {tt[0][1]} | {t_torch:.4f} s | {t_sc:.4f} s | "
                  f"{t_torch / t_sc:.1f}x |", flush=True)


main()
