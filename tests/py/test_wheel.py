"""test_wheel.py STAGECRAFT — the Python package stands alone (docs/interchange.md#python).

In a fresh virtual environment (python3 -m venv), `pip install ./python`
builds the C core into the wheel; then, with a clean environment (no
STAGECRAFT, nothing of the build on PATH, run from another folder),
`import stagecraft; stagecraft.load('zb-h1', p=4, m=8).bubble_rate` works,
the library and the binary used are the package's own, the version is
SC_VERSION (lang/core/core.h) as the binary's sc.version says, load, export,
plan and compare run in process (no subprocess: libstagecraft through
ctypes) and return objects, and a Program draws itself (_repr_svg_).
`python -m build` makes an sdist and, from it alone, a wheel that carries
the library and the binary too.

Both halves build from private copies of the sources in a temporary
folder, never in python/: setuptools writes python/build/ (bdist.*/wheel/
...dist-info), and tests/torch/run.sh pip-installs the package at the same
time under `make test`; two builds in one python/build/ collide ("[Errno 17]
File exists: ...dist-info").

Installing needs setuptools (and `build` for python -m build) from a
package registry or pip's cache: where neither has them, the test skips,
saying so. The check tier runs the source-tree half only (version and the
binary's lookup), a few seconds; the whole under `make test`. Not under
`make asan` (it builds a wheel without the sanitizers: no C code that the
other suites do not run).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SC = os.path.abspath(sys.argv[1])
FULL = os.environ.get("SC_TIER", "test") != "check"
passed = failed = skipped = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}")


def done(code=None):
    print(f"wheel: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    sys.exit(1 if failed else 0)


def clean_env(**extra):
    """What a new shell has: no STAGECRAFT, no build folder on PATH, no
    make variables of the make that runs the tests."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
           "LC_ALL": "C.UTF-8"}
    env.update(extra)
    return env


OFFLINE = re.compile(r"Could not find a version that satisfies|No matching distribution|"
                     r"Failed to establish a new connection|Temporary failure in name resolution|"
                     r"Network is unreachable|ProxyError|ConnectTimeout")

def copy_sources(dst):
    """A private copy of what a wheel's build reads (python/ and the C core
    beside it, setup.py's CORE), in dst: its build folders (python/build,
    build/python) are its own."""
    shutil.copytree(os.path.join(ROOT, "python"), os.path.join(dst, "python"),
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "dist", "__pycache__"))
    for name in ("Makefile", "interp", "lang", "runtime", "stdlib", "tools", "include"):
        s = os.path.join(ROOT, name)
        (shutil.copytree if os.path.isdir(s) else shutil.copy2)(s, os.path.join(dst, name))
    return os.path.join(dst, "python")


version = re.search(r'^#define SC_VERSION "([^"]+)"',
                    open(os.path.join(ROOT, "lang", "core", "core.h")).read(), re.M).group(1)
tmp = tempfile.mkdtemp(prefix="sc_wheel_")
try:
    # ---- the source tree: one version, the binary's lookup -----------------
    with open(os.path.join(tmp, "v.lua"), "w") as f:
        f.write("print(sc.version)\n")
    binv = subprocess.run([SC, os.path.join(tmp, "v.lua")], capture_output=True, text=True).stdout
    check(binv.strip() == version, f"the binary says {binv.strip()}, core.h {version}")
    src = subprocess.run([sys.executable, "-c", "import stagecraft, sys; sys.stdout.write("
                          "stagecraft.__version__ + ' ' + stagecraft.binary())"],
                         cwd=os.path.join(ROOT, "python"), capture_output=True, text=True,
                         env=clean_env(STAGECRAFT=SC))
    check(src.stdout == f"{version} {SC}", f"source tree: {src.stdout} {src.stderr[-300:]}")
    nobin = subprocess.run([sys.executable, "-c", "import stagecraft; stagecraft.binary()"],
                           cwd=os.path.join(ROOT, "python"), capture_output=True, text=True,
                           env=clean_env())
    check(nobin.returncode != 0 and "pip install ./python" in nobin.stderr,
          f"source tree without a binary: {nobin.stderr[-300:]}")
    if not FULL:
        done()
    if "asan" in os.environ.get("BUILD", ""):
        skipped += 1
        print("wheel: the venv install skipped under make asan (a wheel without the "
              "sanitizers; make test runs it)")
        done()

    # ---- pip install ./python into a fresh venv -----------------------------
    # (from a copy: nothing of this test's build lands in the repository's
    # python/, where another suite's pip install builds at the same time)
    mine = [n for n in ("build", "stagecraft.egg-info")
            if not os.path.exists(os.path.join(ROOT, "python", n))]
    venv = os.path.join(tmp, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    r = subprocess.run([py, "-m", "pip", "install", "--disable-pip-version-check",
                        copy_sources(os.path.join(tmp, "pipsrc"))], capture_output=True,
                       text=True, env=clean_env(), cwd=tmp)
    if r.returncode != 0 and OFFLINE.search(r.stdout + r.stderr):
        skipped += 1
        print("wheel: skipped: pip cannot get setuptools (no package registry and no "
              "cached wheel): " + (OFFLINE.search(r.stdout + r.stderr).group(0)))
        done()
    check(r.returncode == 0, "pip install ./python: " + (r.stdout + r.stderr)[-1500:])
    if r.returncode != 0:
        done()
    cmd = "import stagecraft; print(stagecraft.load('zb-h1', p=4, m=8).bubble_rate)"
    r = subprocess.run([py, "-c", cmd], capture_output=True, text=True, env=clean_env(), cwd=tmp)
    check(r.returncode == 0 and r.stdout == "0.111111111111111\n",
          f"the done-when line: {r.stdout!r} {r.stderr[-500:]}")
    script = r"""
import json, os, subprocess, stagecraft
from stagecraft import _lib
print(stagecraft.__version__)
exe = stagecraft.binary()
here = os.path.dirname(stagecraft.__file__)
print(exe.startswith(here) and _lib.library()._name.startswith(here))
def refuse(*a, **k):
    raise AssertionError("a process was started")
saved = {n: getattr(subprocess, n) for n in ("Popen", "run")}
saved_os = {n: getattr(os, n) for n in ("posix_spawn", "posix_spawnp", "fork", "system")}
for n in saved:
    setattr(subprocess, n, refuse)
for n in saved_os:
    setattr(os, n, refuse)
p = stagecraft.load("zb-v", p=4, m=8)
print(type(p).__name__, p.devices, p.stages, p.placement)
svg = p._repr_svg_()
print(svg.lstrip().startswith("<?xml") or svg.lstrip().startswith("<svg"), "</svg>" in svg)
c = stagecraft.compare("1f1b", "zb-h1", p=4, m=8)
print(type(c).__name__, [r["recipe"] for r in c], c.best["recipe"], c["1f1b"]["makespan"])
pl = stagecraft.plan(p=4, m=8, cap=3, time_limit=0)
print(type(pl).__name__, pl.pick is not None, p.export("torch-csv").count(chr(10)))
for n, f in saved.items():
    setattr(subprocess, n, f)
for n, f in saved_os.items():
    setattr(os, n, f)
print("</svg>" in c._repr_svg_())
try:
    stagecraft.load("zb-v", p=4, m=2)
except stagecraft.Error as e:
    print("Error", e.code, "zb-v needs m >= 2p-1" in str(e))
"""
    r = subprocess.run([py, "-c", script], capture_output=True, text=True, env=clean_env(), cwd=tmp)
    want = [version, "True", "Program 4 8 [0, 1, 2, 3, 3, 2, 1, 0]", "True True",
            "Comparison ['1f1b', 'zb-h1'] zb-h1 33", "Plan True 4", "True", "Error 3 True"]
    check(r.stdout.splitlines() == want, f"the installed package: {r.stdout!r} {r.stderr[-800:]}")
    r = subprocess.run([py, "-m", "pip", "show", "stagecraft"], capture_output=True, text=True,
                       env=clean_env())
    check(f"Version: {version}" in r.stdout, f"the wheel's version: {r.stdout[:200]}")

    made = [n for n in mine if os.path.exists(os.path.join(ROOT, "python", n))]
    check(not made, f"pip install wrote into the repository's python/: {made}")

    # ---- python -m build: an sdist, and a wheel made from it alone ----------
    r = subprocess.run([py, "-m", "pip", "install", "--disable-pip-version-check", "build"],
                       capture_output=True, text=True, env=clean_env(), cwd=tmp)
    if r.returncode != 0:
        skipped += 1
        print("wheel: python -m build skipped: cannot install `build` (no package registry "
              "and no cached wheel?): " + (r.stdout + r.stderr)[-300:])
        done()
    # a copy of python/: build writes python/build and *.egg-info beside it
    out = os.path.join(tmp, "dist")
    r = subprocess.run([py, "-m", "build", "--outdir", out, copy_sources(os.path.join(tmp, "src"))],
                       capture_output=True, text=True, env=clean_env(), cwd=tmp)
    check(r.returncode == 0, "python -m build: " + (r.stdout + r.stderr)[-1500:])
    files = sorted(os.listdir(out)) if os.path.isdir(out) else []
    wheels = [f for f in files if f.endswith(".whl")]
    check(any(f.endswith(".tar.gz") for f in files) and len(wheels) == 1 and
          f"stagecraft-{version}-" in wheels[0], f"python -m build made {files}")
    if wheels:
        import zipfile
        names = zipfile.ZipFile(os.path.join(out, wheels[0])).namelist()
        check("stagecraft/_bin/stagecraft" in names and "stagecraft/_bin/libstagecraft.so" in names
              and "stagecraft/_version.py" in names,
              f"the wheel from the sdist: {names}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
done()
