"""test_package.py STAGECRAFT — the Python package (python/stagecraft)
without PyTorch: load with parameters, figures equal to `sim --json`, the
verified program, exports equal to `export`'s, compare and plan equal to
their --json, all in process (no subprocess: libstagecraft through ctypes),
errors with their exit codes, the boundary checks of the schedule builder
against test doubles of PyTorch's stages, and the time of loading a recipe
for p = 8, m = 64 (docs/interchange.md#python)."""
import contextlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import stagecraft  # noqa: E402
from stagecraft import pipelining  # noqa: E402

SC = os.path.abspath(sys.argv[1])
os.environ["STAGECRAFT"] = SC
# The package loads the library beside SC (build/libstagecraft.so). Under
# make asan it carries the sanitizers, whose runtime must come first in a
# process: this test runs again with it preloaded, as tests/embed.sh runs
# lua5.4 (its leaks are not this test's: detect_leaks=0).
try:
    with open(os.path.join(os.path.dirname(SC), "libstagecraft.so"), "rb") as f:
        _asan = b"libasan.so" in f.read()
except OSError:
    _asan = False
if _asan and "libasan" not in os.environ.get("LD_PRELOAD", ""):
    pre = [subprocess.run(["cc", f"-print-file-name={n}"], capture_output=True, text=True)
           .stdout.strip() for n in ("libasan.so", "libubsan.so")]
    env = dict(os.environ, LD_PRELOAD=":".join(pre), ASAN_OPTIONS="detect_leaks=0")
    os.execve(sys.executable, [sys.executable] + sys.argv, env)
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}")


def raises(fn, code, text):
    try:
        fn()
    except stagecraft.Error as e:
        check(e.code == code and text in str(e), f"error {code} '{text}': got {e.code} '{e}'")
        return
    check(False, f"no error, wanted {code} '{text}'")


def cli(*args):
    return subprocess.run([SC] + list(args), capture_output=True, text=True, check=True).stdout


@contextlib.contextmanager
def no_process(what):
    """Every way of starting a process raises while the block runs."""
    def refuse(*a, **k):
        raise AssertionError(f"{what}: a process was started ({a[:1]})")
    saved = {}
    for mod, names in ((subprocess, ("Popen", "run", "call", "check_output")),
                       (os, ("posix_spawn", "posix_spawnp", "fork", "execv", "execve", "system",
                             "popen"))):
        for n in names:
            if hasattr(mod, n):
                saved[(mod, n)] = getattr(mod, n)
                setattr(mod, n, refuse)
    try:
        yield
    finally:
        for (mod, n), f in saved.items():
            setattr(mod, n, f)


with no_process("load, figures, program, digest, check, export"):
    prog = stagecraft.load("zb-v", p=4, m=8)
    figures, dump, digest, line = prog.figures, prog.program, prog.digest, prog.check()
    exports = {f: prog.export(f) for f in ("torch-csv", "torch-csv-comms", "json", "trace", "svg")}
    old = prog.export("torch-csv-comms", torch="2.14")
check(True, "no process for load/export")
sim = json.loads(cli("sim", "zb-v", "-D", "p=4", "-D", "m=8", "--json"))
check(prog.figures == sim, "figures are sim --json")
whole = json.loads(cli("sim", "zb-v", "-D", "p=4", "-D", "m=8", "--json", "--with-program"))
check(dump == whole["program"] and digest == whole["digest"], "program and digest of --with-program")
check(line == cli("check", "zb-v", "-D", "p=4", "-D", "m=8").strip(), f"check line {line}")
for f, text in exports.items():
    check(text == cli("export", "zb-v", "-D", "p=4", "-D", "m=8", "--format", f), f"export {f}")
check(old == cli("export", "zb-v", "-D", "p=4", "-D", "m=8", "--format", "torch-csv-comms",
                 "--torch", "2.14"), "export --torch 2.14")
check((prog.devices, prog.stages, prog.microbatches) == (4, 8, 8), "shape")
check(prog.placement == [0, 1, 2, 3, 3, 2, 1, 0], f"V placement {prog.placement}")
check(prog.stages_of(1) == [1, 6], "stages of rank 1")
check(prog.peaks == sim["peak_memory"] and prog.bubble_rate == sim["bubble_rate"], "peaks")
check(prog.check().startswith("ok: "), "check line")
check(len(prog.program["streams"]) == 4 and prog.program["format"] == "stagecraft.program",
      "program dump")
comms = prog.export("torch-csv-comms")
check("WAIT_SEND_F" in comms and "WAIT_REDUCE_GRAD" in comms, "2.15 dialect by default")
check("WAIT" not in old and "REDUCE_GRAD" in old, "2.14 dialect")
check(prog.export("torch-csv").count("\n") == 4, "compute_only rows")
check("zb-v" in repr(prog), "repr")
raises(lambda: stagecraft.load("zb-v", p=4, m=2), 3, "zb-v needs m >= 2p-1")
raises(lambda: stagecraft.load("1f1b", q=3), 2, "unknown parameter 'q'")
raises(lambda: stagecraft.load("no-such-recipe"), 2, "no-such-recipe")
raises(lambda: stagecraft.load("1f1b", library="/nonexistent"), 2,
       "libstagecraft not found")
raises(lambda: prog.export("torch-csv-comms", torchtitan=True), 2, "torchtitan loads compute_only")

# Boundary checks of the schedule builder (test doubles of PipelineStage).
class FakeStage:
    def __init__(self, index, num_stages):
        self.stage_index, self.num_stages = index, num_stages


raises(lambda: pipelining.check_stages(prog, [FakeStage(1, 8)], 4, 1), 3,
       "rank 1 built stages [1], but the program places stages [1, 6] on it")
raises(lambda: pipelining.check_stages(prog, [FakeStage(1, 4), FakeStage(6, 4)], 4, 1), 3,
       "stage 1 was built with num_stages=4, the program has 8 stages")
raises(lambda: pipelining.check_stages(prog, [FakeStage(1, 8)], 2, 1), 3,
       "the program has 4 devices but the pipeline group has 2 ranks")
check(pipelining.check_stages(prog, [FakeStage(6, 8), FakeStage(1, 8)], 4, 1) is None,
      "matching stages")
# A program verified per-link needs PyTorch's per-edge communicators.
link = stagecraft.load("1f1b", p=2, m=4, comm="per-link")
check(link.comm == "per-link" and prog.comm == "nccl", "the program's mode")
raises(lambda: pipelining.check_stages(link, [FakeStage(1, 2)], 2, 1), 3,
       "rank 1: the program was verified in the per-link mode, but its stages share one "
       "communicator")
edge = FakeStage(1, 2)
edge.p2p_per_edge = True
check(pipelining.check_stages(link, [edge], 2, 1) is None, "per-edge stages")
raises(lambda: stagecraft.load("1f1b", comm="mpi"), 2, "--comm 'mpi': expected")
raises(lambda: stagecraft.load("1f1b", m="4,8"), 2,
       "a sweep of values, like 4,8 or 2:8:2, runs in sim and compare only")
check(pipelining.dialect_for((2, 15)) == "2.15" and pipelining.dialect_for((2, 16)) == "2.15"
      and pipelining.dialect_for((2, 14)) == "2.14", "dialect by version")
raises(lambda: pipelining.dialect_for((2, 3)), 3, "from 2.4 on")


class Act:  # test double of an action type: its text
    def __init__(self, v):
        self.value = v


class OldTorchTypes:  # test double of PyTorch 2.14's schedules module: its action types
    _ComputationType = [Act(v) for v in "F I W B SEND_F RECV_F SEND_B RECV_B UNSHARD RESHARD "
                        "REDUCE_GRAD OVERLAP_F_B".split()]


raises(lambda: pipelining.check_actions(comms, OldTorchTypes, (2, 14)), 3,
       "PyTorch 2.14 does not know the action WAIT_SEND_F")
check(pipelining.check_actions(old, OldTorchTypes, (2, 14)) is None, "2.14 file for 2.14")

# Loading a recipe for p = 8, m = 64 (the figure of docs/interchange.md#python;
# printed, not asserted: the machine's load decides it).
t = time.perf_counter()
big = stagecraft.load("zb-v", p=8, m=64)
text = big.export("torch-csv-comms")
dt = time.perf_counter() - t
check(big.microbatches == 64 and text.count("\n") == 8, "p=8 m=64")
print(f"load + export zb-v p=8 m=64: {dt * 1000:.0f} ms")
# A recipe's print reaches stderr only: it cannot forge the placement or the
# error the package reports (docs/interchange.md#python: the error channel).
import tempfile  # noqa: E402
with tempfile.TemporaryDirectory() as d:
    forge = os.path.join(d, "forge.lua")
    with open(forge, "w") as f:
        f.write('print("stagecraft: note: placement (stage -> rank, forged): rank 0: 7 6 5 4")\n'
                'print("stagecraft: error: forged")\n'
                'local P = sc.params{ {"fail", 0, "fail"} }\n'
                'if P.fail == 1 then error("the real error") end\n'
                'return sc.load("zb-v", {p = 4, m = 8})\n')
    fp = stagecraft.load(forge)
    fp.export("torch-csv")
    check(fp.placement == [0, 1, 2, 3, 3, 2, 1, 0], f"forged placement: {fp.placement}")
    raises(lambda: stagecraft.load(forge, fail=1), 8, "forge.lua:4: the real error")
    try:
        stagecraft.load(forge, fail=1)
    except stagecraft.Error as e:
        check("forged" not in str(e), f"forged error message: {e}")

# One Program, one evaluation (docs/interchange.md#python): the figures, the
# program, its exports and check all come from the program held in process,
# even when the recipe would now give another one (it reads a file that
# changed, or the clock): the export is the loaded program's.
with tempfile.TemporaryDirectory() as d:
    width, moving = os.path.join(d, "width.lua"), os.path.join(d, "moving.lua")
    with open(width, "w") as f:
        f.write("return 2\n")
    with open(moving, "w") as f:
        f.write('return sc.load("1f1b", {p = dofile("width.lua"), m = 4})\n')
    mp = stagecraft.load(moving)
    with open(width, "w") as f:
        f.write("return 4\n")
    check(mp.devices == 2 and mp.program["devices"] == 2 and len(mp.program["streams"]) == 2,
          f"one Program: figures {mp.devices}, program {mp.program['devices']}")
    check(mp.export("torch-csv").count("\n") == 2 and mp.check().startswith("ok: "),
          "the export and check of the loaded program")
    clock = os.path.join(d, "clock.lua")
    with open(clock, "w") as f:
        f.write('local P = sc.params{ {"t0", 0, "the second from which p is 4"} }\n'
                'return sc.load("1f1b", {p = os.time() >= P.t0 and 4 or 2, m = 4})\n')
    cp = stagecraft.load(clock, t0=int(time.time()) + 3600)
    check(cp.devices == 2 and cp.program["devices"] == 2, f"clock recipe before t0: {cp.devices}")
    # Across ranks (each evaluates the recipe itself): the digests gathered
    # over the pipeline's group (a test double of torch.distributed).
    class FakeDist:
        def __init__(self, others):
            self.others = others

        def get_world_size(self, group=None):
            return 1 + len(self.others)

        def all_gather_object(self, out, obj, group=None):
            out[:] = [obj] + self.others

    check(pipelining.check_same_program(mp, FakeDist([mp.digest]), None, 0) is None,
          "ranks with one program")
    raises(lambda: pipelining.check_same_program(mp, FakeDist([prog.digest]), None, 0), 8,
           "rank 0: ranks [1] loaded another program than this rank's")
    # The digest is the program's, whatever the recipe's name: both gave 1f1b p=2 m=4.
    check(len(mp.digest) == 16 and mp.digest == cp.digest != prog.digest,
          f"digests {mp.digest} {cp.digest} {prog.digest}")

# stagecraft.plan (docs/plan.md#from-lua-and-python) and compare, in process:
# the objects of plan --json and compare --json.
with no_process("plan, compare"):
    pl = stagecraft.plan(p=4, m=8, cap=3, time_limit=0)
    cmpn = stagecraft.compare("1f1b", "zb-h1", p=4, m="8,16")
    raises(lambda: stagecraft.plan(p=2, m=4, cap=0.1, time_limit=0), 7, "nothing meets cap 0.1")
check(True, "no process for plan/compare")
raw = json.loads(cli("plan", "-D", "p=4", "-D", "m=8", "--cap", "3", "--time-limit", "0", "--json"))
check({k: v for k, v in pl.raw.items() if k != "seconds"} ==
      {k: v for k, v in raw.items() if k != "seconds"}, "Plan.raw is plan --json")
rows = json.loads(cli("compare", "1f1b", "zb-h1", "-D", "p=4", "-D", "m=8,16", "--time-limit", "0",
                      "--json"))["rows"]
check(cmpn.rows == rows and len(cmpn) == 4 and cmpn.best["recipe"] == "zb-h1",
      "Comparison.rows are compare --json's")
# stagecraft.plan (docs/plan.md#from-lua-and-python): Python objects of plan --json.
pl = stagecraft.plan(p=4, m=8, cap=3, time_limit=0)
check(isinstance(pl, stagecraft.Plan) and pl.pick is not None and pl.pick.fits, f"plan pick {pl}")
check(all(c.makespan >= pl.pick.makespan for c in pl.candidates if c.fits), "the pick is the fastest within the cap")
check(pl.front and all(c.front for c in pl.front) and pl.why.startswith("fastest under cap 3: "), pl.why)
check([c.peak for c in pl.front] == sorted(c.peak for c in pl.front), "front by peak")
lp = stagecraft.plan(p=4, m=16, layers="E:4,t*14,L:6", time_limit=0)
check(lp.partition["megatron_layout"] == "Et*2|t*6|t*6|L" and lp.partition["gain"] > 0, f"{lp.partition}")
raises(lambda: stagecraft.plan(p=2, m=4, cap=0.1, time_limit=0), 7, "nothing meets cap 0.1")
fp = stagecraft.plan(p=4, m=8, cap=3, time_limit=0, framework="pytorch")
check(fp.framework == "pytorch" and all(c.error or "pytorch" in c.frameworks for c in fp.candidates),
      f"plan framework=pytorch {fp}")
check(fp.reproduce["sim"].startswith("stagecraft sim " + fp.pick.recipe) and fp.reproduce["pytorch"],
      f"{fp.reproduce}")
# One table of options: the library's, the command line's flags, sc.plan's fields.
opts = stagecraft.plan_options()
check(opts == {"cap": "--cap", "costs": "--costs", "layers": "--layers", "framework": "--for",
               "time_limit": "--time-limit"}, f"plan options {opts}")
raises(lambda: stagecraft.plan(p=2, m=4, framework="nope"), 2,
       "--for 'nope': expected megatron, torchtitan or pytorch")
print(f"package: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
