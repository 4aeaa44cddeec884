"""lower_vs_torch.py SC [--fixtures DIR] [--recipes R,...] [--worlds 2,4] [--sample] —
our lowering against PyTorch's on the same compute order, in every mode
(docs/semantics.md#lowering, issue 28).

For each compute_only schedule: PyTorch's own classes (their compute_only
and compute_comms dumps of PyTorch 2.15.0, tests/torch/fixtures) and, when
this python has torch, the compute_only exports of our recipes (lowered by
PyTorch's `_add_send_recv`, `_add_reduce_grad` and `_add_wait_send`, as
`_PipelineScheduleRuntime._load_csv` does). Ours: `SC import FILE --comm
MODE -D ... --format torch-csv-comms` (our lowering in that mode, as the
export writes it), imported back. Both files are imported in each of the
three modes with each cost set, and their makespans compared. Prints a
markdown table and "lower_vs_torch: N passed, N failed": a failure is a
schedule, cost set and mode where our file is slower than PyTorch's (or
refused where PyTorch's is accepted); where our streams' figure differs
from the file's (the NCCL mode, whose file reading has no groups) the cell
names it. --sample: PyTorch's classes at p = 4, one cost set (tests/interchange.sh).
Without torch the recipes are skipped.
"""
import json
import os
import subprocess
import sys
import tempfile

MODES = ("nccl", "gloo", "per-link")
COSTS = [  # (label, -D values of import)
    ("1/1/1, tcomm 0", {}),
    ("1/1/1, tcomm 0.5", {"tcomm": 0.5}),
    ("1/1.5/0.5, tcomm 0.25", {"tb": 1.5, "tw": 0.5, "tcomm": 0.25}),
    ("1/1/1, tcomm 2", {"tcomm": 2}),
]
CLASSES = ["Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"]
RECIPES = ["1f1b", "gpipe", "interleaved", "zb-h1", "zb-h2", "zb-v", "1f1b-v", "v-half", "dualpipev"]


def defines(costs):
    out = []
    for k, v in costs.items():
        out += ["-D", f"{k}={v}"]
    return out


def makespan(sc, path, mode, costs):
    r = subprocess.run([sc, "import", path, "--comm", mode, "--json"] + defines(costs),
                       capture_output=True, text=True)
    if r.returncode:
        return None
    return json.loads(r.stdout)["makespan"]


def ours(sc, compute_only, mode, costs, tmp):
    out = os.path.join(tmp, f"ours.{mode}.csv")  # the name states the mode
    r = subprocess.run([sc, "import", compute_only, "--comm", mode, "--format", "torch-csv-comms",
                        "-o", out] + defines(costs), capture_output=True, text=True)
    if r.returncode:
        return None
    return makespan(sc, out, mode, costs)


def torch_lower(compute_only, out):
    """PyTorch's lowering of a compute_only file (_PipelineScheduleRuntime's
    steps for it, without FSDP's UNSHARD/RESHARD, which import ignores)."""
    import csv
    from torch.distributed.pipelining import schedules as S

    with open(compute_only, newline="") as f:
        rows = list(csv.reader(f))
    acts = {r: [S._Action.from_str(c) for c in row] for r, row in enumerate(rows)}
    rank_of, m = {}, 0
    for r, row in acts.items():
        for a in row:
            for x in (a.sub_actions or (a,)) if a is not None else ():
                rank_of[x.stage_index] = r
                m = max(m, (x.microbatch_index or 0) + 1)
    low = {r: S._add_reduce_grad(row, m) for r, row in acts.items()}
    low = S._add_send_recv(low, stage_to_rank=lambda s: rank_of[s], num_stages=len(rank_of))
    low = S._add_wait_send(low)
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        for r in sorted(low):
            w.writerow([str(a) for a in low[r]])


def programs(sc, fixtures, recipes, worlds, tmp):
    """(name, compute_only path, PyTorch's compute_comms path)."""
    out = []
    for P in worlds:
        for c in CLASSES:
            base = os.path.join(fixtures, f"{c}-p{P}-m{2 * P}")
            if os.path.exists(base + ".compute_only.csv"):
                out.append((f"torch:{c} p={P}", base + ".compute_only.csv",
                            base + ".compute_comms.csv"))
    try:
        import torch  # noqa: F401
    except ImportError:
        if recipes:
            print("lower_vs_torch: recipes skipped: no torch in this python")
        return out
    for P in worlds:
        for r in recipes:
            co = os.path.join(tmp, f"{r}-p{P}.compute_only.csv")
            x = subprocess.run([sc, "export", r, "-D", f"p={P}", "-D", f"m={2 * P}", "--format",
                                "torch-csv", "-o", co], capture_output=True, text=True)
            if x.returncode:
                continue
            cc = os.path.join(tmp, f"{r}-p{P}.torch.csv")
            torch_lower(co, cc)
            out.append((f"{r} p={P}", co, cc))
    return out


def fmt(x):
    return "refused" if x is None else f"{x:g}"


def main():
    args = sys.argv[1:]
    sc = args[0]
    opt = dict(zip(args[1::2], args[2::2])) if "--sample" not in args else {}
    if "--sample" in args:
        rest = [a for a in args[1:] if a != "--sample"]
        opt = dict(zip(rest[0::2], rest[1::2]))
    here = os.path.dirname(os.path.abspath(__file__))
    fixtures = opt.get("--fixtures", os.path.join(here, "..", "tests", "torch", "fixtures", "2.15.0"))
    worlds = [int(w) for w in opt.get("--worlds", "2,4").split(",")]
    recipes = opt["--recipes"].split(",") if "--recipes" in opt else RECIPES
    costs = COSTS
    if "--sample" in args:
        worlds, recipes, costs = [4], [], [COSTS[1]]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        progs = programs(sc, fixtures, recipes, worlds, tmp)
        print("| schedule | tf/tb/tw, tcomm | " + " | ".join(f"{m}: ours / PyTorch's" for m in MODES)
              + " |")
        print("|---|---|" + "---|" * len(MODES))
        for name, co, cc in progs:
            for label, c in costs:
                cells = []
                for mode in MODES:
                    a, b = ours(sc, co, mode, c, tmp), makespan(sc, cc, mode, c)
                    lose = (a is None and b is not None) or (a is not None and b is not None
                                                             and a > b + 1e-9)
                    passed, failed = passed + (not lose), failed + lose
                    mark = " **slower**" if lose else ""
                    # the streams' figure, where the file reads otherwise (the
                    # NCCL mode: a file has no groups, docs/modes.md#files)
                    st = makespan(sc, co, mode, c)
                    if st is not None and a is not None and abs(st - a) > 1e-9:
                        mark = f" (streams {fmt(st)})" + mark
                    cells.append(f"{fmt(a)} / {fmt(b)}{mark}")
                print(f"| {name} | {label} | " + " | ".join(cells) + " |")
    print(f"lower_vs_torch: {passed} passed, {failed} failed")
    return 1 if failed else 0


sys.exit(main())
