"""test_package.py STAGECRAFT — the Python package (python/stagecraft)
without PyTorch: load with parameters, figures equal to `sim --json`, the
verified program, exports, errors with their exit codes, the boundary
checks of the schedule builder against test doubles of PyTorch's stages,
and the time of loading a recipe for p = 8, m = 64 (docs/interchange.md#python)."""
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


prog = stagecraft.load("zb-v", p=4, m=8)
sim = json.loads(subprocess.run([SC, "sim", "zb-v", "-D", "p=4", "-D", "m=8", "--json"],
                                capture_output=True, text=True, check=True).stdout)
check(prog.figures == sim, "figures are sim --json")
check((prog.devices, prog.stages, prog.microbatches) == (4, 8, 8), "shape")
check(prog.placement == [0, 1, 2, 3, 3, 2, 1, 0], f"V placement {prog.placement}")
check(prog.stages_of(1) == [1, 6], "stages of rank 1")
check(prog.peaks == sim["peak_memory"] and prog.bubble_rate == sim["bubble_rate"], "peaks")
check(prog.check().startswith("ok: "), "check line")
check(len(prog.program["streams"]) == 4 and prog.program["format"] == "stagecraft.program",
      "program dump")
comms = prog.export("torch-csv-comms")
check("WAIT_SEND_F" in comms and "WAIT_REDUCE_GRAD" in comms, "2.15 dialect by default")
old = prog.export("torch-csv-comms", torch="2.14")
check("WAIT" not in old and "REDUCE_GRAD" in old, "2.14 dialect")
check(prog.export("torch-csv").count("\n") == 4, "compute_only rows")
check("zb-v" in repr(prog), "repr")
raises(lambda: stagecraft.load("zb-v", p=4, m=2), 3, "zb-v needs m >= 2p-1")
raises(lambda: stagecraft.load("1f1b", q=3), 2, "unknown parameter 'q'")
raises(lambda: stagecraft.load("no-such-recipe"), 2, "no-such-recipe")
raises(lambda: stagecraft.load("1f1b", binary_path="/nonexistent"), 2,
       "stagecraft executable not found")
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
       "--with-program is of one program, and a sweep (or compare) makes several")
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

# One Program, one evaluation (docs/interchange.md#python): the figures and
# the program come from one call, and a later call (an export: the streams
# every rank runs; check) that evaluates the recipe to another program is
# refused (exit 8), never mixed with the first. A recipe that reads a file
# beside it which changes in between:
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
          f"one Program, two evaluations: figures {mp.devices}, program {mp.program['devices']}")
    raises(lambda: mp.export("torch-csv-comms"), 8,
           "moving.lua: this evaluation gave another program than the one loaded")
    raises(lambda: mp.check(), 8, "this evaluation gave another program")
    # ... and one that reads the clock. Deterministic by construction: the
    # load ended before second t0, so its evaluation saw os.time() < t0
    # (p = 2); the export runs after t0 (p = 4).
    clock = os.path.join(d, "clock.lua")
    with open(clock, "w") as f:
        f.write('local P = sc.params{ {"t0", 0, "the second from which p is 4"} }\n'
                'return sc.load("1f1b", {p = os.time() >= P.t0 and 4 or 2, m = 4})\n')
    for wait in (2, 4, 8):
        t0 = int(time.time()) + wait
        cp = stagecraft.load(clock, t0=t0)
        if time.time() < t0:
            break
    check(cp.devices == 2 and cp.program["devices"] == 2, f"clock recipe before t0: {cp.devices}")
    time.sleep(max(0.0, t0 - time.time()) + 0.05)
    raises(lambda: cp.export("torch-csv"), 8, "this evaluation gave another program")
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
print(f"package: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
