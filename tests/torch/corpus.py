"""corpus.py SC [--sample] [--per-link] [--recipes R,...] [--worlds 2,4] [--only NAME,...]
[--timeout S] [--report FILE] [--count] [--exports-only MODE,TCOMM[,K=V...]] —
stagecraft's verdicts against what PyTorch does (docs/semantics.md#waits).

Generates small compute_comms programs, asks `SC import` for each (exit 0:
accepted; else refused, with its one line), and runs each under PyTorch's
_PipelineScheduleRuntime with gloo on loopback (one process per rank, one
fresh process group per program with a short timeout, so that a hang ends
as gloo's "Timed out" error). Outcomes: ok (gradients equal the
non-pipelined reference within TOL), wrong (they do not), hang (a gloo
timeout), error (PyTorch refused the file or failed otherwise).

The programs: stagecraft's exports (2.15 dialect) of a few recipes at each
world size, PyTorch's own lowerings of its multi-stage classes (with and
without defer_pp_recv; with the default recipes only), and mutations of the exports: every wait of a rank
moved right after its send (early), all waits moved to the end (late), and
up to eleven of: adjacent transfers swapped, two neighbouring groups (runs of
transfers) swapped, a receive moved to the start of its row (early) or right
before its consumer (late), a receive dropped, a send moved right before its
wait.

--exports-only MODE,TCOMM[,K=V...]: instead, only the exports lowered in
that mode with that transfer time and the other costs given (-D K=V, e.g.
tb=1.5,tw=0.5; docs/semantics.md#lowering-per-mode): the recipes' and our
lowering of PyTorch's classes' compute orders (import --format).

Each program gets three verdicts, --comm nccl (the default), gloo and
per-link (docs/semantics.md#modes). With --per-link PyTorch runs with
torch.distributed.config.pipeline_per_edge_p2p (one communicator per
directed link between ranks, split from the program's group; checked to be
on). The promise checked, for every mode: no accepted
program hangs, trains to wrong gradients or fails. Every refused program that runs correctly is listed with the
verdict's line (the model is stricter than gloo there). Prints one line per
program under --verbose, the tallies, and "corpus: N passed, N failed",
where a failure is an accepted program that did not run correctly. Needs
the python of a venv with torch (tests/torch/run.sh installs them).
"""
import datetime
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile

TOL = 1e-5
MODES = ("nccl", "gloo", "per-link")  # import --comm (docs/semantics.md#modes)
RECIPES = ["1f1b", "gpipe", "interleaved", "zb-h1", "zb-h2", "zb-v", "1f1b-v", "v-half",
           "dualpipev"]
SAMPLE = ["1f1b"]
CELL = re.compile(r"^(\d+)([A-Z_]+)(\d*)$")


# ---- the programs ----------------------------------------------------------

def parse(text):
    return [[c for c in line.split(",") if c] for line in text.strip().splitlines()]


def unparse(rows):
    return "".join(",".join(r) + "\n" for r in rows)


def kind(cell):
    m = CELL.match(cell)
    return (int(m.group(1)), m.group(2), int(m.group(3)) if m.group(3) else None) if m else None


def is_xfer(cell):
    k = kind(cell)
    return k is not None and k[1] in ("SEND_F", "SEND_B", "RECV_F", "RECV_B")


def mutants(name, rows, rng, cap):
    """(name, rows) of the mutations of one export."""
    out = []

    def add(tag, new):
        if new != rows:
            out.append((f"{name}~{tag}", new))

    # every wait of rank r right after its send; every rank at once
    def early(ranks):
        new = []
        for r, row in enumerate(rows):
            if r not in ranks:
                new.append(list(row))
                continue
            waits = [c for c in row if "WAIT_SEND" in c]
            rest = [c for c in row if "WAIT_SEND" not in c]
            res = []
            for c in rest:
                res.append(c)
                k = kind(c)
                if k and k[1].startswith("SEND_"):
                    w = f"{k[0]}WAIT_{k[1]}{k[2]}"
                    if w in waits:
                        res.append(w)
            new.append(res)
        return new

    for r in range(len(rows)):
        add(f"early-waits-r{r}", early({r}))
    add("early-waits-all", early(set(range(len(rows)))))
    # all waits at the end, before the reductions
    late = []
    for row in rows:
        waits = [c for c in row if "WAIT_SEND" in c]
        rest = [c for c in row if "WAIT_SEND" not in c]
        at = next((i for i, c in enumerate(rest) if "REDUCE_GRAD" in c), len(rest))
        late.append(rest[:at] + waits + rest[at:])
    add("late-waits", late)
    # adjacent transfers swapped; receives moved; a receive dropped; a send
    # late; two neighbouring groups (runs of transfers) swapped
    cands = []
    for r, row in enumerate(rows):
        runs, i = [], 0
        while i < len(row):
            j = i
            while j < len(row) and is_xfer(row[j]):
                j += 1
            if j > i:
                runs.append((i, j))
            i = j + 1
        for (a, b), (c, d) in zip(runs, runs[1:]):
            cands.append(("swap-groups", r, (a, b, c, d)))
        for i in range(len(row) - 1):
            if is_xfer(row[i]) and is_xfer(row[i + 1]):
                cands.append(("swap", r, i))
        for i, c in enumerate(row):
            k = kind(c)
            if k and k[1].startswith("RECV_"):
                cands += [("recv-early", r, i), ("recv-late", r, i), ("drop-recv", r, i)]
            if k and k[1].startswith("SEND_"):
                cands.append(("send-late", r, i))
    rng.shuffle(cands)
    for what, r, i in cands[:cap]:
        new = [list(x) for x in rows]
        row = new[r]
        if what == "swap-groups":
            a, b, g, e = i
            row[a:e] = row[g:e] + row[b:g] + row[a:b]
            i = a
        c = row[i]
        if what == "swap-groups":
            pass
        elif what == "swap":
            row[i], row[i + 1] = row[i + 1], row[i]
        elif what == "recv-early":
            row.insert(0, row.pop(i))
        elif what == "recv-late":
            s, t, mb = kind(c)
            comp = "F" if t == "RECV_F" else None
            j = next((j for j in range(i + 1, len(row)) if (kind(row[j]) or (0, "", 0))[0] == s
                      and kind(row[j])[2] == mb and
                      (kind(row[j])[1] == comp if comp else kind(row[j])[1] in ("B", "I"))), None)
            if j is None:
                continue
            row.insert(j - 1, row.pop(i))
        elif what == "drop-recv":
            row.pop(i)
        elif what == "send-late":
            s, t, mb = kind(c)
            w = f"{s}WAIT_{t}{mb}"
            if w not in row:
                continue
            row.pop(i)
            row.insert(row.index(w), c)
        add(f"{what}-r{r}c{i + 1}", new)
    return out


def torch_lowerings(P, defer):
    """PyTorch's own compute_comms lowerings of its multi-stage classes."""
    import torch
    from torch.distributed.pipelining import schedules

    class FakeStage:
        def __init__(self, index, num_stages, group_size):
            self.stage_index, self.num_stages = index, num_stages
            self.group_size, self.group_rank = group_size, 0
            self.is_first, self.is_last = index == 0, index == num_stages - 1
            self.submod = torch.nn.Identity()

    out = []
    for name, vshape in (("ScheduleInterleaved1F1B", False), ("ScheduleLoopedBFS", False),
                         ("ScheduleInterleavedZeroBubble", False),
                         ("ScheduleZBVZeroBubble", True), ("ScheduleDualPipeV", True)):
        cls = getattr(schedules, name, None)
        if cls is None:
            continue
        m, S = 2 * P, 2 * P
        ids = [0, 2 * P - 1] if vshape else [0, P]
        stages = [FakeStage(s, S, P) for s in ids]
        try:
            kw = {"defer_pp_recv": True} if defer else {}
            sched = cls(stages, n_microbatches=m, loss_fn=lambda a, b: a, **kw)
        except TypeError:
            continue  # no defer_pp_recv in this class
        fd, path = tempfile.mkstemp(suffix=".csv")
        os.close(fd)
        sched._dump_csv(path, format="compute_comms")
        with open(path) as f:
            out.append((f"torch:{name[8:]}{'+defer' if defer else ''}-p{P}", parse(f.read())))
        os.unlink(path)
    return out


# Hand-made: each rank waits on its send before posting the receive the
# other's send needs (docs/semantics.md#waits); then the same with each wait
# after its rank's receive, whose cells still cross (0SEND_F1, 0RECV_B0 against
# 1SEND_B0, 1RECV_F1): refused by --comm nccl, where each rank blocks in its
# send once a message outgrows NCCL's buffers (docs/modes.md#crossing-cells),
# run on gloo and per-link; an early receive.
HOSTILE = [
    ("hostile:crossed-waits-p2", "0F0,0SEND_F0,0F1,0SEND_F1,0WAIT_SEND_F1,0RECV_B0,0WAIT_SEND_F0,0B0,"
     "0RECV_B1,0B1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0,1WAIT_SEND_B0,1RECV_F1,"
     "1F1,1B1,1SEND_B1,1WAIT_SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n"),
    ("hostile:crossed-waits-later-p2", "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0WAIT_SEND_F1,0WAIT_SEND_F0,"
     "0B0,0RECV_B1,0B1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,"
     "1WAIT_SEND_B0,1F1,1B1,1SEND_B1,1WAIT_SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n"),
    # rank 0 posts the receive of a gradient before the send its peer needs
    # to produce it: a deadlock on one communicator per rank (NCCL's stream;
    # PyTorch #172668), none with a communicator per link or on gloo
    # (docs/semantics.md#modes)
    ("hostile:early-recv-p2", "0F0,0RECV_B0,0F1,0SEND_F0,0WAIT_SEND_F0,0SEND_F1,0WAIT_SEND_F1,0B0,"
     "0RECV_B1,0B1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1WAIT_SEND_B0,"
     "1F1,1B1,1SEND_B1,1WAIT_SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n"),
]


def exports_in(sc, worlds, recipes, comm, tcomm, costs=()):
    """--exports-only: the exports lowered in one mode with a transfer time
    (docs/semantics.md#lowering-per-mode), and other costs K=V (-D K=V) when
    given, of the recipes and of PyTorch's classes' compute orders (our
    lowering of them: import --format)."""
    fx = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "2.15.0")
    tag = f"@{comm},tcomm={tcomm}" + "".join(f",{kv}" for kv in costs)
    args = ["--comm", comm, "-D", f"tcomm={tcomm}"] + [a for kv in costs for a in ("-D", kv)]
    args += ["--format", "torch-csv-comms", "--torch", "2.15"]
    progs = []
    for P in worlds:
        srcs = [(r, ["export", r, "-D", f"p={P}", "-D", f"m={2 * P}"]) for r in recipes]
        for c in ("Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble", "ZBVZeroBubble",
                  "DualPipeV"):
            co = os.path.join(fx, f"{c}-p{P}-m{2 * P}.compute_only.csv")
            if os.path.exists(co):
                srcs.append((f"ours:{c}", ["import", co]))
        for name, cmd in srcs:
            text = subprocess.run([sc] + cmd + args, capture_output=True, text=True)
            if not text.returncode:
                progs.append((f"{name}-p{P}{tag}", parse(text.stdout)))
    return progs


def generate(sc, worlds, sample, recipes):
    rng = random.Random(28)
    progs = [(n, parse(t)) for n, t in HOSTILE] if 2 in worlds else []
    for P in worlds:
        for r in recipes:
            text = subprocess.run([sc, "export", r, "-D", f"p={P}", "-D", f"m={2 * P}",
                                   "--format", "torch-csv-comms", "--torch", "2.15"],
                                  capture_output=True, text=True)
            if text.returncode:
                continue
            rows = parse(text.stdout)
            progs.append((f"{r}-p{P}", rows))
            muts = mutants(f"{r}-p{P}", rows, rng, 3 if sample else 11)
            progs += muts[:1] if sample else muts
        if recipes == RECIPES:
            for defer in (False, True):
                progs += torch_lowerings(P, defer)
    return progs


def verdict(sc, path, mode):
    r = subprocess.run([sc, "import", path, "--comm", mode], capture_output=True, text=True)
    line = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    return r.returncode, line.replace(path + ": ", "")


# ---- one rank ----------------------------------------------------------------

def rank_main(rank, world, port, manifest, out, timeout, per_link):
    import torch
    import torch.distributed as dist
    import torch.distributed.config as dist_config
    # PyTorch's per-edge mode (docs/semantics.md#modes): one communicator per
    # directed link between ranks, split from each program's group.
    dist_config.pipeline_per_edge_p2p = per_link
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=900))  # a failed step drains its sends
    torch.set_num_threads(1)
    from tinymodel import Block, loss_fn, model_and_data, reference

    with open(manifest) as f:
        items = json.load(f)
    results = []
    for it in items:
        S, m, place = it["S"], it["m"], it["place"]
        blocks, x, y = model_and_data(S, m, seed=7)
        ref = dict(enumerate(reference(blocks, x, y, m)[1]))
        dist.barrier()  # every rank done with the program before (a hang ends at different times)
        grp = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=timeout))
        outcome, why = "ok", ""
        try:
            mine, stages = {}, []
            for s in [s for s in range(S) if place[s] == rank]:
                mod = Block()
                mod.load_state_dict(blocks[s].state_dict())
                mine[s] = mod
                stages.append(PipelineStage(mod, s, S, torch.device("cpu"), group=grp))
            sched = _PipelineScheduleRuntime(stages, n_microbatches=m, loss_fn=loss_fn)
            if per_link and not all(st.p2p_per_edge for st in stages):
                raise RuntimeError("per-edge P2P is not on")
            sched._load_csv(it["path"], format="compute_comms")
            losses = []
            args = (x,) if 0 in mine else ()
            if S - 1 in mine:
                sched.step(*args, target=y, losses=losses)
            else:
                sched.step(*args)
            err = 0.0
            for s, mod in mine.items():
                for p, r in zip(mod.parameters(), ref[s]):
                    err = max(err, (p.grad - r).abs().max().item() / max(r.abs().max().item(), 1e-12))
            if per_link and not stages[0]._p2p_edge_groups:
                outcome, why = "error", "per-edge P2P: no edge groups were built"
            elif err > TOL:
                outcome, why = "wrong", f"relative error {err:.2e}"
        except Exception as e:  # noqa: BLE001 - classified below
            msg = f"{type(e).__name__}: {e}".splitlines()[0][:200]
            low = msg.lower()
            outcome = "hang" if "timed out" in low or "timeout" in low else "error"
            why = msg
        per = [None] * world
        dist.all_gather_object(per, (outcome, why))
        if rank == 0:  # one line per program, as it ends (run_world watches them)
            order = ["hang", "error", "wrong", "ok"]
            o = min((p[0] for p in per), key=order.index)
            with open(out, "a") as f:
                f.write(json.dumps({"outcome": o, "why": "; ".join(sorted({p[1] for p in per if p[1]}))})
                        + "\n")
    os._exit(0)  # abandoned groups may hold threads blocked in gloo


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def run_world(py, world, items, timeout, tmp, per_link):
    """Runs items on `world` ranks; a world that makes no progress for a
    while (a rank stuck where gloo's timeout does not reach) is killed, its
    program counted as a hang, and a new world goes on with the next one."""
    import time
    results = []
    while len(results) < len(items):
        rest = items[len(results):]
        manifest = os.path.join(tmp, f"m{world}-{len(results)}.json")
        out = os.path.join(tmp, f"o{world}-{len(results)}.jsonl")
        with open(manifest, "w") as f:
            json.dump(rest, f)
        port = free_port()
        logs = [open(os.path.join(tmp, f"log{world}-{len(results)}-{r}"), "w") for r in range(world)]
        procs = [subprocess.Popen([py, __file__, "--rank", str(r), str(world), str(port), manifest,
                                   out, str(timeout), str(int(per_link))],
                                  stdout=logs[r], stderr=subprocess.STDOUT)
                 for r in range(world)]
        done, last, stall = 0, time.time(), 120 + 30 * timeout
        while True:
            time.sleep(1)
            n = sum(1 for _ in open(out)) if os.path.exists(out) else 0
            if n != done:
                done, last = n, time.time()
            if all(p.poll() is not None for p in procs) or time.time() - last > stall:
                break
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        got = [json.loads(x) for x in open(out)] if os.path.exists(out) else []
        results += got
        if len(results) < len(items):  # the next program never ended: stuck
            results.append({"outcome": "hang", "why": f"no progress for {stall:.0f} s (killed)"})
    return results


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        a = sys.argv[2:]
        rank_main(int(a[0]), int(a[1]), int(a[2]), a[3], a[4], float(a[5]), a[6] == "1")
        return
    args = sys.argv[1:]
    sc = os.path.abspath(args[0])
    sample = "--sample" in args
    verbose = "--verbose" in args
    per_link = "--per-link" in args
    worlds = [2] if sample else [2, 4]
    timeout = 8.0
    report = None
    for i, a in enumerate(args):
        if a == "--worlds":
            worlds = [int(w) for w in args[i + 1].split(",")]
        if a == "--timeout":
            timeout = float(args[i + 1])
        if a == "--report":
            report = args[i + 1]
    tmp = tempfile.mkdtemp(prefix="sc-corpus-")
    recipes = SAMPLE if sample else RECIPES
    for i, a in enumerate(args):
        if a == "--recipes":
            recipes = args[i + 1].split(",")
    progs = None
    for i, a in enumerate(args):
        if a == "--exports-only":  # MODE,TCOMM[,K=V...]: the exports lowered in that mode
            comm, tcomm, *costs = args[i + 1].split(",")
            progs = exports_in(sc, worlds, recipes, comm, float(tcomm), costs)
    if progs is None:
        progs = generate(sc, worlds, sample, recipes)
    for i, a in enumerate(args):
        if a == "--only":  # these programs only (names as printed)
            only = set(args[i + 1].split(","))
            progs = [(n, rows) for n, rows in progs if n in only]
    if "--count" in args:  # how many programs, without running them
        print(f"corpus: {len(progs)} programs")
        return
    items = {}
    for n, (name, rows) in enumerate(progs):
        path = os.path.join(tmp, f"p{n}.csv")
        with open(path, "w") as f:
            f.write(unparse(rows))
        place, S, m = {}, 0, 0
        for r, row in enumerate(rows):
            for c in row:
                k = kind(c)
                if k and k[1] in ("F", "I", "W", "B"):
                    place[k[0]] = r
                    S, m = max(S, k[0] + 1), max(m, (k[2] or 0) + 1)
        it = {"name": name, "path": path, "S": S, "m": m, "place": [place.get(s, -1) for s in range(S)]}
        for mode in MODES:
            it[mode] = verdict(sc, path, mode)
        items.setdefault(len(rows), []).append(it)
    rows_out = []
    for world, its in sorted(items.items()):
        res = run_world(sys.executable, world, its, timeout, tmp, per_link)
        if res is None:
            print(f"corpus: 0 passed, {len(its)} failed")
            sys.exit(1)
        for it, r in zip(its, res):
            rows_out.append({**it, **r})
    tally, unsound, strict = {}, [], []
    for r in rows_out:
        for mode in MODES:
            code, line = r[mode]
            acc = "accepted" if code == 0 else "refused"
            key = (mode, acc, r["outcome"])
            tally[key] = tally.get(key, 0) + 1
            if code == 0 and r["outcome"] != "ok":
                unsound.append((mode, r))
            if code != 0 and r["outcome"] == "ok":
                strict.append((mode, line, r))
        if verbose:
            codes = " ".join(f"{md} {r[md][0]}" for md in MODES)
            print(f"{r['name']:34s} {codes} torch {r['outcome']:5s} "
                  f"{r['nccl'][1][:80]} {r['why'][:80]}")
    runtime = "per-edge communicators" if per_link else "one communicator"
    print(f"corpus: {len(rows_out)} programs (worlds {','.join(map(str, worlds))}; PyTorch: {runtime})")
    for mode in MODES:
        print(f"corpus: --comm {mode}: " + ", ".join(
            f"{a} and {o}: {n}" for (md, a, o), n in sorted(tally.items()) if md == mode))
    for mode, r in unsound:
        print(f"UNSOUND --comm {mode} {r['name']}: accepted, PyTorch: {r['outcome']} ({r['why']})")
    for mode, line, r in strict:
        print(f"refused by --comm {mode}, runs on gloo: {r['name']}: {line}")
    if report:
        with open(report, "w") as f:
            json.dump(rows_out, f, indent=1)
    bad = len({r["name"] for _, r in unsound})
    print(f"corpus: {len(rows_out) - bad} passed, {bad} failed")
    sys.exit(1 if unsound else 0)


main()
