"""fsdp.py SC [--sample] — stagecraft's verdicts on FSDP actions against
PyTorch 2.15 with FSDP2 (docs/fsdp.md#verification).

Each program is a compute_comms file with UNSHARD and RESHARD: stagecraft's
exports of examples/fsdp.lua (p = 2, two stages per rank) under each policy,
PyTorch's own lowerings (tests/torch/fixtures/2.15.0, p = 2), and mutations
of an export: the first UNSHARD dropped, a RESHARD moved right after its
UNSHARD, the last RESHARD of a rank dropped, an UNSHARD doubled, a
REDUCE_GRAD moved before its stage's last weight gradient, a REDUCE_GRAD
dropped. Each runs
on 2 x 2 gloo ranks on loopback (a pipeline of two ranks, each stage
module sharded with fully_shard over a data-parallel group of two; every
replica sees the same data), under _PipelineScheduleRuntime, with a
timeout. Outcomes: ok (every rank's gradients, gathered, equal the
non-pipelined reference), wrong, hang, error. The promise: no program
`stagecraft import` accepts fails to run correctly; refused programs that
run are listed. Prints one line per program and "fsdp: N passed, N failed".
Needs the python of a venv with torch (tests/torch/run.sh).
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile

TOL = 1e-6
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def rows(text):
    return [[c for c in line.split(",") if c] for line in text.strip().splitlines()]


def unparse(rs):
    return "".join(",".join(r) + "\n" for r in rs)


def programs(sc, sample):
    out = []
    for pol in (["derived"] if sample else ["full", "auto", "derived"]):
        for ma in ([1] if sample else [1, 2]):
            t = subprocess.run([sc, "export", os.path.join(ROOT, "examples/fsdp.lua"), "-D", "p=2",
                                "-D", "m=4", "-D", "v=2", "-D", f"policy={pol}", "-D",
                                f"max_active={ma}", "--format", "torch-csv-comms"],
                               capture_output=True, text=True, check=True).stdout
            out.append((f"sc:{pol}-ma{ma}", rows(t)))
    for name in ([] if sample else ["Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble"]):
        with open(os.path.join(HERE, f"fixtures/2.15.0/{name}-p2-m4.compute_comms.csv")) as f:
            out.append((f"torch:{name}", rows(f.read())))
    base = out[0][1]

    def mutant(name, fn):
        r = [list(x) for x in base]
        fn(r)
        out.append((f"mut:{name}", r))

    def drop_first_unshard(r):
        r[0].remove(next(c for c in r[0] if c.endswith("UNSHARD")))

    def reshard_early(r):
        u = next(i for i, c in enumerate(r[1]) if c.endswith("UNSHARD"))
        s = r[1][u][:-len("UNSHARD")]
        j = max(i for i, c in enumerate(r[1]) if c == s + "RESHARD")
        r[1].insert(u + 1, r[1].pop(j))

    def drop_last_reshard(r):
        j = max(i for i, c in enumerate(r[1]) if c.endswith("RESHARD"))
        r[1].pop(j)

    def double_unshard(r):
        u = next(i for i, c in enumerate(r[0]) if c.endswith("UNSHARD"))
        r[0].insert(u, r[0][u])

    def reduce_early(r):  # REDUCE_GRAD (and its wait) before the stage's last weight gradient
        k = next(i for i, c in enumerate(r[0]) if c.endswith("REDUCE_GRAD") and "WAIT" not in c)
        s = r[0][k][:-len("REDUCE_GRAD")]
        pair = r[0][k:k + 2]
        del r[0][k:k + 2]
        j = max(i for i, c in enumerate(r[0][:k]) if c.startswith(s + "B") or c.startswith(s + "W"))
        r[0][j:j] = pair

    def drop_reduce(r):  # a stage with no reduce-scatter of its gradients
        k = next(i for i, c in enumerate(r[1]) if c.endswith("REDUCE_GRAD") and "WAIT" not in c)
        del r[1][k:k + 2]

    for n, fn in [("no-unshard", drop_first_unshard), ("reshard-early", reshard_early),
                  ("no-reshard", drop_last_reshard), ("double-unshard", double_unshard),
                  ("reduce-early", reduce_early), ("no-reduce", drop_reduce)]:
        mutant(n, fn)
    return out


def rank_main(rank, world, port, path, out, timeout):
    import faulthandler
    faulthandler.dump_traceback_later(600 + 2 * timeout, exit=True)  # a rank stuck past gloo's timeout
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout))
    torch.set_num_threads(1)
    mesh = init_device_mesh("cpu", (2, world // 2), mesh_dim_names=("pp", "dp"))
    pp = mesh["pp"].get_local_rank()
    from tinymodel import Block, loss_fn, model_and_data, reference

    S, m = 4, 4
    blocks, x, y = model_and_data(S, m, seed=7)
    ref = reference(blocks, x, y, m)[1]
    outcome, why = "ok", ""
    try:
        mine, stages = {}, []
        for s in [s for s in range(S) if s % 2 == pp]:  # loop placement on two ranks
            mod = Block()
            mod.load_state_dict(blocks[s].state_dict())
            fully_shard(mod, mesh=mesh["dp"])
            mine[s] = mod
            stages.append(PipelineStage(mod, s, S, torch.device("cpu"), group=mesh["pp"].get_group()))
        sched = _PipelineScheduleRuntime(stages, n_microbatches=m, loss_fn=loss_fn)
        sched._load_csv(path, format="compute_comms")
        args = (x,) if 0 in mine else ()
        if S - 1 in mine:
            sched.step(*args, target=y, losses=[])
        else:
            sched.step(*args)
        err = 0.0
        for s, mod in mine.items():
            for p, r in zip(mod.parameters(), ref[s]):
                full = p.grad.full_tensor()
                err = max(err, (full - r).abs().max().item() / max(r.abs().max().item(), 1e-12))
        if err > TOL:
            outcome, why = "wrong", f"relative error {err:.2e}"
    except Exception as e:  # noqa: BLE001 - classified below
        msg = f"{type(e).__name__}: {e}".splitlines()[0][:160]
        outcome = "hang" if "timed out" in msg.lower() or "timeout" in msg.lower() else "error"
        why = msg
    with open(f"{out}.{rank}", "w") as f:
        json.dump([outcome, why], f)
    os._exit(0)


def run(py, path, tmp, timeout):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    out = os.path.join(tmp, "res")
    for r in range(4):
        if os.path.exists(f"{out}.{r}"):
            os.unlink(f"{out}.{r}")
    procs = [subprocess.Popen([py, __file__, "--rank", str(r), "4", str(port), path, out,
                               str(timeout)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for r in range(4)]
    for p in procs:
        try:
            p.wait(timeout=600 + 3 * timeout)  # importing torch is slow on a loaded machine
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    per = []
    for r in range(4):
        try:
            with open(f"{out}.{r}") as f:
                per.append(json.load(f))
        except OSError:
            per.append(["hang", "killed"])
    order = ["hang", "error", "wrong", "ok"]
    o = min((p[0] for p in per), key=order.index)
    return o, "; ".join(sorted({p[1] for p in per if p[1]}))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        a = sys.argv[2:]
        rank_main(int(a[0]), int(a[1]), int(a[2]), a[3], a[4], float(a[5]))
        return
    sc = os.path.abspath(sys.argv[1])
    sample = "--sample" in sys.argv
    passed = failed = 0
    listed = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, rs in programs(sc, sample):
            path = os.path.join(tmp, "p.csv")
            with open(path, "w") as f:
                f.write(unparse(rs))
            v = subprocess.run([sc, "import", path], capture_output=True, text=True)
            line = v.stderr.strip().splitlines()[-1].replace(path + ": ", "") if v.returncode else ""
            outcome, why = run(sys.executable, path, tmp, 20)
            accepted = v.returncode == 0
            good = outcome == "ok"
            print(f"{name:24} {'accepted' if accepted else 'refused '} {outcome:5} {why} {line}")
            if accepted and not good:
                failed += 1
            else:
                passed += 1
            if not accepted and good:
                listed.append(f"{name}: {line}")
    print(f"refused but ran correctly: {len(listed)}")
    for x in listed:
        print("  " + x)
    print(f"fsdp: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
