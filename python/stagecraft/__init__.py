"""stagecraft from Python (docs/interchange.md#python).

load() evaluates a recipe with parameters through the stagecraft binary and
returns a Program: the verified program (its JSON dump,
docs/interchange.md#json-dump), its figures (the simulation), its exports as
strings, a picture for Jupyter (_repr_svg_) and, with PyTorch installed, a
torch.distributed.pipelining schedule built from the proved streams
(Program.torch_schedule, in stagecraft.pipelining). compare() puts several
recipes side by side (`stagecraft compare`) and returns a Comparison.

The binary is the one inside the package (`pip install ./python` builds it
into the wheel); $STAGECRAFT, else `stagecraft` on PATH, stand in when the
package runs from the source tree. Results come from the binary's stdout
(JSON) and errors from its error channel, never from stderr. Every failure
raises stagecraft.Error with its one-line message and exit code
(docs/errors.md); nothing is cached on disk.

A Program is one evaluation of its recipe: load() runs the binary once for
the figures, the program and its digest (`sim --json --with-program`); every
later call (an export, torch_schedule, check) passes the digest
(`--expect-digest`), and the binary refuses (exit 8) when the recipe gave
another program, as one that reads the clock or a file that changed would.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

__all__ = ["Error", "Program", "Comparison", "load", "compare", "binary", "plan", "Plan",
           "Candidate", "__version__"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGED = os.path.join(_HERE, "_bin", "stagecraft")


def _version():
    """SC_VERSION of lang/core/core.h, the one source: written into
    _version.py by setup.py; read from the header in a source tree."""
    try:
        from ._version import __version__ as v
        return v
    except ImportError:
        pass
    try:
        with open(os.path.join(_HERE, "..", "..", "lang", "core", "core.h")) as f:
            return re.search(r'^#define SC_VERSION "([^"]+)"', f.read(), re.M).group(1)
    except (OSError, AttributeError):
        return "unknown"


__version__ = _version()


class Error(Exception):
    """A stagecraft error: `code` is the exit code of docs/errors.md."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def binary(path=None):
    """The stagecraft executable: path, else $STAGECRAFT, else the one in
    the package (the wheel's), else `stagecraft` on PATH."""
    packaged = _PACKAGED if os.access(_PACKAGED, os.X_OK) else None
    exe = path or os.environ.get("STAGECRAFT") or packaged or shutil.which("stagecraft")
    if not exe or not os.access(exe, os.X_OK):
        raise Error("stagecraft executable not found: install the package with "
                    "`pip install ./python` (it builds the binary into it), or set "
                    "STAGECRAFT=/path/to/stagecraft" +
                    (f" (tried '{exe}')" if exe else ""), 2)
    return exe


def _run(exe, args):
    """Runs the binary; returns stdout and stderr, or raises Error.

    Results come from channels a recipe cannot write: stdout carries the
    command's output only (a recipe's print goes to stderr), and the error
    line comes from the descriptor STAGECRAFT_ERROR_FD names (a file here,
    so that a long message cannot fill a pipe), never from stderr, where a
    recipe could print a forged "stagecraft: error:" line."""
    with tempfile.TemporaryFile() as errf:
        fd = errf.fileno()
        env = dict(os.environ, STAGECRAFT_ERROR_FD=str(fd))
        p = subprocess.run([exe] + args, capture_output=True, text=True, env=env,
                           pass_fds=(fd,))
        if p.returncode != 0:
            errf.seek(0)
            line = errf.read(1 << 20).decode("utf-8", "replace").split("\n", 1)[0]
            prefix = "stagecraft: error: "
            msg = line[len(prefix):] if line.startswith(prefix) else ""
            raise Error(msg or f"stagecraft exited {p.returncode}", p.returncode)
    return p.stdout, p.stderr


class Program:
    """A recipe evaluated with parameters: verified when load() returns.

    recipe, params   what was loaded
    program          the JSON dump (dict): devices, stages, microbatches,
                     placement (stage -> device), streams, costs
    figures          `sim --json` (dict): makespan, bubble_rate, peak_memory, ...
    digest           the program's digest: every later call of the binary
                     must evaluate the recipe to this same program
    """

    def __init__(self, recipe, params, exe, comm=None):
        self.recipe, self.params, self._exe = recipe, dict(params), exe
        self._defs = _defs(self.params)
        if comm is not None:  # the runtime's P2P semantics (docs/semantics.md#modes)
            self._defs += ["--comm", str(comm)]
        # Every rank loads the recipe itself: an automatic schedule's search
        # must not depend on time, or two ranks could get different programs.
        # Without an explicit time_limit, it is 0 (the heuristic alone), as
        # for `run`.
        if "time_limit" not in self.params:
            self._defs += ["--time-limit", "0"]
        # One evaluation: the figures, the program and its digest together.
        out, _ = _run(exe, ["sim", recipe] + self._defs + ["--json", "--with-program"])
        figures = json.loads(out)
        self._program = figures.pop("program")
        self.digest = figures.pop("digest")
        self.figures = figures
        self._placement = None

    def _call(self, command, *args):
        """The binary on this Program's recipe again, held to its digest:
        Error (exit 8) when the recipe now gives another program."""
        out, _ = _run(self._exe, [command, self.recipe] + self._defs + list(args) +
                      ["--expect-digest", self.digest])
        return out

    @property
    def program(self):
        """The JSON dump, from the evaluation that gave the figures."""
        return self._program

    # ---- figures ---------------------------------------------------------
    devices = property(lambda self: self.figures["devices"])
    stages = property(lambda self: self.figures["stages"])
    microbatches = property(lambda self: self.figures["microbatches"])

    @property
    def comm(self):
        """The mode the program was verified in: "nccl", "gloo" or "per-link"."""
        return self.program.get("comm", "nccl")

    @property
    def placement(self):
        """Stage -> device, as a list."""
        if self._placement is None:
            self._placement = list(self.program["placement"])
        return list(self._placement)
    makespan = property(lambda self: self.figures["makespan"])
    bubble_rate = property(lambda self: self.figures["bubble_rate"])
    peaks = property(lambda self: list(self.figures["peak_memory"]))

    def stages_of(self, rank):
        """The stages rank holds, ascending."""
        return [s for s, d in enumerate(self.placement) if d == rank]

    def check(self):
        """`stagecraft check`: the verifier's one line ("ok: ...")."""
        return self._call("check").strip()

    # ---- exports ---------------------------------------------------------
    def export(self, fmt, torch=None, torchtitan=False):
        """The export in `fmt` (torch-csv, torch-csv-comms, json, trace, svg)
        as a string; torch: the PyTorch version of the CSV dialect ("2.15",
        "2.14"); the default is the current dialect."""
        args = ["--format", fmt]
        if torch:
            args += ["--torch", str(torch)]
        if torchtitan:
            args += ["--torchtitan"]
        # The streams every rank runs come from this call: held to the
        # digest, they are the program whose figures this object holds.
        # (The placement comes from the JSON dump on stdout, never from
        # export's note on stderr, where a recipe's print could forge it.)
        return self._call("export", *args)

    def torch_schedule(self, stages, loss_fn=None, **kwargs):
        """A torch.distributed.pipelining schedule that runs this program's
        proved streams (stagecraft.pipelining.build_schedule)."""
        from . import pipelining
        return pipelining.build_schedule(self, stages, loss_fn=loss_fn, **kwargs)

    def _repr_svg_(self):
        """Jupyter shows a Program as its timeline (the svg export)."""
        return self.export("svg")

    def __repr__(self):
        return (f"<stagecraft.Program {self.recipe} {self.params}: {self.devices} devices, "
                f"{self.stages} stages, {self.microbatches} microbatches, "
                f"bubble {self.bubble_rate:.2%}>")


def _defs(params):
    out = []
    for k, v in params.items():
        out += ["-D", f"{k}={v}"]
    return out


class Comparison:
    """Recipes side by side with the same parameters (`stagecraft compare
    --json`): one row (dict) per recipe, in the order given.

    rows      [{"recipe", "parameters", "devices", "makespan", "bubble_rate",
               "peak_memory", "peak_memory_max", "idle", ...}, ...]
    best      the row with the shortest makespan (the first of equals)
    """

    def __init__(self, recipes, params, exe):
        self.recipes, self.params, self._exe = list(recipes), dict(params), exe
        self._args = self.recipes + _defs(self.params)
        if "time_limit" not in self.params:  # as load(): no search without a time limit
            self._args += ["--time-limit", "0"]
        out, _ = _run(exe, ["compare"] + self._args + ["--json"])
        self.rows = json.loads(out)["rows"]

    def __getitem__(self, recipe):
        """The row of a recipe (by name) or the i-th row."""
        if isinstance(recipe, int):
            return self.rows[recipe]
        for r in self.rows:
            if r["recipe"] == recipe:
                return r
        raise KeyError(recipe)

    def __iter__(self):
        return iter(self.rows)

    def __len__(self):
        return len(self.rows)

    @property
    def best(self):
        return min(self.rows, key=lambda r: r["makespan"])

    def _repr_svg_(self):
        """The programs stacked on one time axis (`compare --svg`)."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "compare.svg")
            _run(self._exe, ["compare"] + self._args + ["--svg", path])
            with open(path) as f:
                return f.read()

    def __repr__(self):
        cells = ", ".join(f"{r['recipe']} {r['bubble_rate']:.2%}" for r in self.rows)
        return f"<stagecraft.Comparison {self.params}: bubble {cells}>"


def compare(*recipes, binary_path=None, **params):
    """`stagecraft compare RECIPE... -D k=v ...`: a Comparison, or Error."""
    if not recipes:
        raise Error("compare needs at least one recipe", 2)
    return Comparison(recipes, params, binary(binary_path))


def load(recipe, binary_path=None, comm=None, **params):
    """Evaluates a stdlib recipe or a .lua file with parameters (p=4, m=8,
    ...), verifies and simulates it; returns a Program or raises Error.
    comm ("nccl", "gloo", "per-link"): the mode it is verified in (--comm;
    default the recipe's, else nccl).
    Automatic schedules (zb-auto, ...) search only when time_limit is given
    (else every rank might see a different program). The recipe is
    evaluated once here; a later export or check that evaluates it to
    another program (it reads the clock, or a file that changed) raises
    Error with code 8."""
    return Program(recipe, params, binary(binary_path), comm)


from .plan import Candidate, Plan, plan  # noqa: E402 (it uses _run above)
