"""stagecraft.plan: what to run (docs/plan.md#from-lua-and-python).

plan(p=8, m=32, cap=6, tw=0.63, tcomm=0.016, time_limit=0) plans in this
process (libstagecraft's stagecraft_plan_json: the object of `stagecraft
plan --json` with those arguments, written by the command's own writer):
cap, costs, layers, time_limit, framework (--for) as the command's options,
any other name as -D. It returns a Plan of Python objects; a failure raises
stagecraft.Error (code 7 when nothing meets the cap, as the command's exit).
"""
import ctypes
import json

from . import Error, _context, _lib

__all__ = ["Candidate", "Plan", "options", "plan"]


def options(library=None):
    """The planner's options, {keyword: the command line's flag}, from the
    library's one table (stagecraft_plan_option): plan() takes these as
    options and every other keyword as a parameter (-D)."""
    lib = _lib.library(library, Error)
    out, i = {}, 0
    while True:
        flag = ctypes.c_char_p()
        name = lib.stagecraft_plan_option(i, ctypes.byref(flag))
        if name is None:
            return out
        out[name.decode()] = flag.value.decode()
        i += 1


class Candidate:
    """One schedule tried: recipe, knobs (the -D beyond yours, "mem=4 v=3"),
    makespan, bubble_rate, peak (the largest device's, in the plan's memory
    unit), lower_bound and gap (docs/bound.md; None where unknown), fits (within the cap), front (on the Pareto front), error (None
    when evaluated), frameworks (the names of those that run it:
    "megatron", "torchtitan", "pytorch"), placement ("loop", "V", "table";
    None when it was not compiled)."""

    def __init__(self, d):
        self.recipe = d["recipe"]
        self.knobs = d["knobs"]
        self.makespan = d.get("makespan")
        self.bubble_rate = d.get("bubble_rate")
        self.peak = d.get("peak_memory_max")
        self.lower_bound = d.get("lower_bound")
        self.gap = d.get("gap")
        self.fits = d["fits"]
        self.front = d["front"]
        self.error = d.get("error")
        self.frameworks = d.get("frameworks", [])
        self.placement = d.get("placement")

    @property
    def name(self):
        return self.recipe + (" " + self.knobs if self.knobs else "")

    def __repr__(self):
        if self.error:
            return f"<stagecraft.Candidate {self.name}: {self.error}>"
        return f"<stagecraft.Candidate {self.name}: makespan {self.makespan:g}, peak {self.peak:g}>"


class Plan:
    """The plan: pick (a Candidate, or None), front (Candidates by growing
    peak), candidates (all), why (the pick in words), lean (the Candidate of
    least memory within 1 % of the pick's time, or None), reproduce (a dict:
    the sim and export commands and each framework's settings for the pick,
    or None), framework (of --for, or None), partition (a dict with
    --layers, else None), memory_unit ("units" or "bytes"), searched,
    seconds, and raw, the whole --json object."""

    def __init__(self, raw):
        self.raw = raw
        self.candidates = [Candidate(c) for c in raw["candidates"]]
        self.front = [self.candidates[i] for i in raw["front"]]
        self.pick = self.candidates[raw["pick"]] if raw["pick"] is not None else None
        self.why = raw["why"]
        self.lean = self.candidates[raw["lean"]] if raw.get("lean") is not None else None
        self.reproduce = raw.get("reproduce")
        self.framework = raw.get("for")
        self.partition = raw.get("partition")
        self.memory_unit = raw["memory_unit"]
        self.searched = raw["searched"]
        self.seconds = raw["seconds"]

    def __repr__(self):
        return f"<stagecraft.Plan: {self.why}>"


def plan(library=None, binary_path=None, **args):
    """Plans as `stagecraft plan --json` would; returns a Plan or raises Error.
    binary_path (the executable of the versions that ran it) is accepted
    and not used."""
    ctx = _context(library)
    names = options(library)
    opts, defs = {}, []
    for k, v in args.items():
        if v is None:
            continue
        if k in names:
            opts[k] = str(v)
        else:
            defs.append(f"{k}={v}")
    # --time-limit S: 0 is "none" (stagecraft_plan_settings: < 0), absent is
    # the schedules' own (0 there).
    tl = 0.0
    if "time_limit" in opts:
        try:
            tl = float(opts["time_limit"])
        except ValueError:
            tl = -1.0
        if not (0 <= tl <= 1e9):
            raise Error("--time-limit needs a number of seconds >= 0", 2)
        tl = tl if tl > 0 else -1.0
    enc = (lambda k: opts[k].encode() if k in opts else None)
    darr = _lib.strings(defs)
    s = _lib.PlanSettings(0, 0, enc("cap"), enc("costs"), enc("layers"), enc("framework"), tl,
                          ctypes.cast(darr, ctypes.POINTER(ctypes.c_char_p)))
    with _lib.LOCK:
        text = _lib.text_call(ctx, ctx.lib.stagecraft_plan_json, ctx.handle, ctypes.byref(s))
    try:
        return Plan(json.loads(text))
    except (ValueError, KeyError) as e:
        raise Error(f"plan: unexpected output ({e})", 1)
