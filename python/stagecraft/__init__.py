"""stagecraft from Python (docs/interchange.md#python).

load() evaluates a recipe with parameters in this process, through
libstagecraft (include/stagecraft.h, by ctypes: stagecraft._lib), and
returns a Program: the verified program (its JSON dump,
docs/interchange.md#json-dump), its figures (the simulation), its exports as
strings, a picture for Jupyter (_repr_svg_) and, with PyTorch installed, a
torch.distributed.pipelining schedule built from the proved streams
(Program.torch_schedule, in stagecraft.pipelining). compare() puts several
recipes side by side and returns a Comparison; plan() (stagecraft.plan)
says what to run.

No process is started for load, figures, export, check, compare or plan:
the library runs the recipe under the command line's sandbox and limits,
and its texts are written by the command line's own writers, so figures
are `sim --json`, program the JSON dump, export(fmt) `export --format fmt`,
Comparison.rows `compare --json`'s rows and Plan.raw `plan --json`. Every
failure raises stagecraft.Error with the one-line message and the code of
docs/errors.md (the exit codes). The executable is still used for what
needs it: Comparison._repr_svg_ (`compare --svg`, the stacked picture).

The library is the one inside the package (`pip install ./python` builds it
into the wheel, beside the executable); $STAGECRAFT_LIB, the library beside
$STAGECRAFT, or the source tree's build/ stand in when the package runs
from the source tree.

A Program is one evaluation of its recipe, held in this process: its
figures, program, exports and check all come from that one program, even
when the recipe reads the clock or a file that changes. Program.digest (the
program's FNV-1a digest) lets ranks that each loaded the recipe check that
they hold the same program (stagecraft.pipelining).
"""
import ctypes
import json
import os
import re
import shutil
import subprocess
import tempfile

from . import _lib

__all__ = ["Error", "Program", "Comparison", "load", "compare", "binary", "plan", "plan_options", "Plan",
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
    """Runs the binary (only for what needs it: Comparison._repr_svg_);
    returns stdout and stderr, or raises Error.

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


def _context(library=None):
    """A new library context (stagecraft_open) of the library at path
    `library` (None: the package's, see stagecraft._lib)."""
    return _lib.Context(_lib.library(library, Error), Error)


def _search_time(ctx, params):
    """Without an explicit time_limit the automatic schedules do not search
    (0: the heuristic alone), as for `run`: every rank loads the recipe
    itself, and a search that depends on time could give each another
    program."""
    if "time_limit" not in params:
        ctx.check(ctx.lib.stagecraft_search_time(ctx.handle, 0.0))


class Program:
    """A recipe evaluated with parameters: verified when load() returns.

    recipe, params   what was loaded
    program          the JSON dump (dict): devices, stages, microbatches,
                     placement (stage -> device), streams, costs
    figures          `sim --json` (dict): makespan, bubble_rate, peak_memory, ...
    digest           the program's digest (16 hex digits): equal programs,
                     equal digests, whatever the recipe's name
    """

    def __init__(self, recipe, params, library=None, comm=None):
        self.recipe, self.params = recipe, dict(params)
        ctx = self._ctx = _context(library)
        lib = ctx.lib
        _search_time(ctx, self.params)
        self._p = ctypes.c_void_p()
        with _lib.LOCK:
            ctx.check(lib.stagecraft_load(ctx.handle, recipe.encode(),
                                          _lib.strings(_defs(self.params)), ctypes.byref(self._p)))
            if comm is not None:  # the runtime's P2P semantics (docs/semantics.md#modes)
                ctx.check(lib.stagecraft_comm(self._p, str(comm).encode()))
            self.figures = json.loads(_lib.text_call(ctx, lib.stagecraft_figures_json, self._p))
        self._program = self._digest = self._placement = None

    @property
    def program(self):
        """The JSON dump of the program whose figures this object holds."""
        if self._program is None:
            self._program = json.loads(self.export("json"))
        return self._program

    @property
    def digest(self):
        """FNV-1a 64 of the JSON dump (streams lowered for running), in hex."""
        if self._digest is None:
            hexd = ctypes.create_string_buffer(17)
            with _lib.LOCK:
                self._ctx.check(self._ctx.lib.stagecraft_digest(self._p, hexd))
            self._digest = hexd.value.decode()
        return self._digest
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
        """`stagecraft check`'s line ("ok: ..."): the streams verified."""
        with _lib.LOCK:
            self._ctx.check(self._ctx.lib.stagecraft_check(self._p))
        f, plural = self.figures, (lambda n, w, s="s": f"{n} {w}{'' if n == 1 else s}")
        return (f"ok: {self.recipe}: {plural(f['devices'], 'device')}, "
                f"{plural(f['stages'], 'stage')}, {plural(f['microbatches'], 'microbatch', 'es')}, "
                f"{f['instructions']} instructions verified")

    # ---- exports ---------------------------------------------------------
    def export(self, fmt, torch=None, torchtitan=False):
        """The export in `fmt` (torch-csv, torch-csv-comms, json, trace, svg)
        as a string, `stagecraft export --format fmt`'s output; torch: the
        PyTorch version of the CSV dialect ("2.15", "2.14"); the default is
        the current dialect. The streams every rank runs come from this
        Program's own program (no second evaluation)."""
        opts = _lib.ExportOptions(str(torch).encode() if torch else None, 1 if torchtitan else 0)
        with _lib.LOCK:
            return _lib.text_call(self._ctx, self._ctx.lib.stagecraft_export_as, self._p,
                                  str(fmt).encode(), ctypes.byref(opts))

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
    """The parameters as the command line's -D values: "NAME=VALUE"."""
    return [f"{k}={v}" for k, v in params.items()]


def _defs_args(params):
    out = []
    for d in _defs(params):
        out += ["-D", d]
    return out


class Comparison:
    """Recipes side by side with the same parameters (`stagecraft compare
    --json`): one row (dict) per recipe, in the order given.

    rows      [{"recipe", "parameters", "devices", "makespan", "bubble_rate",
               "peak_memory", "peak_memory_max", "idle", ...}, ...]
    best      the row with the shortest makespan (the first of equals)
    """

    def __init__(self, recipes, params, library=None, binary_path=None):
        self.recipes, self.params = list(recipes), dict(params)
        self._binary_path = binary_path
        self._args = self.recipes + _defs_args(self.params)
        if "time_limit" not in self.params:  # as load(): no search without a time limit
            self._args += ["--time-limit", "0"]
        ctx = _context(library)
        _search_time(ctx, self.params)
        with _lib.LOCK:
            text = _lib.text_call(ctx, ctx.lib.stagecraft_compare_json, ctx.handle,
                                  _lib.strings(self.recipes), _lib.strings(_defs(self.params)))
        self.rows = json.loads(text)["rows"]

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
            _run(binary(self._binary_path), ["compare"] + self._args + ["--svg", path])
            with open(path) as f:
                return f.read()

    def __repr__(self):
        cells = ", ".join(f"{r['recipe']} {r['bubble_rate']:.2%}" for r in self.rows)
        return f"<stagecraft.Comparison {self.params}: bubble {cells}>"


def compare(*recipes, library=None, binary_path=None, **params):
    """The comparison of `stagecraft compare RECIPE... -D k=v ... --json`, in
    process: a Comparison, or Error (a row that failed: its code, as the
    command's exit). binary_path: the executable of _repr_svg_ only."""
    if not recipes:
        raise Error("compare needs at least one recipe", 2)
    return Comparison(recipes, params, library, binary_path)


def load(recipe, library=None, comm=None, binary_path=None, **params):
    """Evaluates a stdlib recipe or a .lua file with parameters (p=4, m=8,
    ...), verifies and simulates it, in this process; returns a Program or
    raises Error. comm ("nccl", "gloo", "per-link"): the mode it is
    verified in (--comm; default the recipe's, else nccl). library: the
    path of libstagecraft.so (default: the package's). binary_path, the
    executable of the versions that ran it, is accepted and not used.
    Automatic schedules (zb-auto, ...) search only when time_limit is given
    (else every rank might see a different program)."""
    return Program(recipe, params, library, comm)


from .plan import Candidate, Plan, plan, options as plan_options  # noqa: E402 (it uses _context above)
