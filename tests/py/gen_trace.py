"""gen_trace.py OUT [--procs N] [--mb M] [--steps K]: writes a merged
torch.profiler trace (docs/costs.md#costs-from-a-pytorch-trace) of a
pipelined step as PyTorch's _PipelineScheduleRuntime records it, with N
processes (ranks), one stage each, M microbatches and K steps: per stage and
microbatch RECV_F, F (one cpu_op inside), SEND_F, RECV_B, I (one cpu_op),
SEND_B, W, WAIT_SEND_F. The times are made up (each rank runs its actions
back to back); what matters is the trace's shape: many processes, or many
steps, for the reader's speed (tests/costs.sh, bench/bench_trace.sh).

Every pass of stage s lasts 100 + s % 7 microseconds, so a cost file read
from it can be checked: tf of stage s is 100 + s % 7 (plus the runtime's
posts after it), in seconds times 1e-6."""
import sys


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    out, n, m, k = args[0], 4, 2, 1
    i = 1
    while i < len(args):
        v = int(args[i + 1])
        if args[i] == "--procs":
            n = v
        elif args[i] == "--mb":
            m = v
        elif args[i] == "--steps":
            k = v
        else:
            sys.exit(f"unknown option {args[i]}")
        i += 2
    ev = []
    add = ev.append
    for s in range(n):
        pid = 1000 + s  # one process per rank, as a merged trace holds them
        t = 0.0
        d = 100 + s % 7
        for step in range(k):
            t = step * (m * 20 * 200.0 + 1e6)
            for mb in range(m):
                for name, dur, cpu in (("RECV_F", 2, False), ("F", d, True), ("SEND_F", 3, False),
                                       ("RECV_B", 2, False), ("I", d, True), ("SEND_B", 3, False),
                                       ("W", d, False), ("WAIT_SEND_F", 1, False)):
                    skip = {"RECV_F": s == 0, "SEND_B": s == 0, "SEND_F": s == n - 1,
                            "RECV_B": s == n - 1, "WAIT_SEND_F": s == n - 1}
                    if skip.get(name):
                        continue  # the first stage receives no input, the last sends none
                    add('{"ph": "X", "cat": "user_annotation", "name": "PP:%d%s%d", "pid": %d, '
                        '"tid": 1, "ts": %.1f, "dur": %d}' % (s, name, mb, pid, t, dur))
                    if cpu:
                        add('{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": %d, '
                            '"tid": 1, "ts": %.1f, "dur": 1}' % (pid, t + 0.5))
                    t += dur + 1
    with open(out, "w") as f:
        f.write('{"traceEvents": [\n')
        f.write(",\n".join(ev))
        f.write('\n], "displayTimeUnit": "ms"}\n')


main()
