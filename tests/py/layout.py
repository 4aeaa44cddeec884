#!/usr/bin/env python3
"""layout.py BUILD — the architecture as a test (README.md, Layout).

Checks, from the object files in BUILD (who defines and who uses each
symbol, read with nm) and from the sources' #include lines:
  - no call cycle between files: the graph "file A calls a function defined
    in file B" has no strongly connected component of two or more files;
  - no cycle between folders (interp/ir, interp/lower, lang/lua, ...), by
    calls or by includes;
  - the one-way dependencies: interp/ depends on nothing else, runtime/ on
    interp/ only, lang/ on both;
  - inside interp/, the stage order (README.md, Layout; interp/compile.h):
    ir -> schedule -> lower -> check -> the driver (interp/compile.c) ->
    sim -> auto, formats; a folder uses only earlier ones, and only the
    driver runs the stages in order: no other file of interp/ calls into
    two or more of schedule/, lower/, check/ besides its own folder;
  - inside lang/, the floors core -> sandbox -> lua -> engine -> repl, api
    -> cli (README.md, Layout): the engine under every front end;
  - inside runtime/, the layering of runtime/README.md: run -> model ->
    exec -> backend, transport; run -> device -> backend, transport, cuda;
    cuda -> backend, transport; no sources at runtime/'s root;
  - every source file under interp/, lang/ and runtime/ stays under
    MAX_LINES lines;
  - every header under interp/, lang/, runtime/ and tools/ names its test
    in its top comment ("Tested by: tests/..."), and the files it names
    exist; the folders of UNNAMED_TESTS are not held to it yet;
  - the CUDA stand-in (tests/cudastub/, a test double built into
    BUILD/cudastub/obj) too: no call cycle between its files, each under
    MAX_LINES lines;
  - no tracked file holds a merge's conflict markers.
Prints the cycles it finds and one summary line "N passed, N failed".
"""
import collections
import glob
import os
import re
import subprocess
import sys

MAX_LINES = 650
# Files known to be over the limit, each with the issue that splits it. An
# entry here is reported (NOTE) and must go when that work lands.
OVER = {}
ROOTS = ("interp", "lang", "runtime")
ALLOWED = {"interp": {"interp"}, "runtime": {"interp", "runtime"},
           "lang": {"interp", "runtime", "lang"}}
# interp/'s stages by floor: a folder may use only the floors before its
# own. The driver ("interp": compile.c) runs ir..check in order; sim asks it
# for the timing; auto (the automatic scheduler) and the formats use sim.
# The model description (interp/model) uses only ir, so that every reader
# of sizes after it may use it (formats/hfconfig.c reads config.json into it).
STAGES = [["interp/ir"], ["interp/schedule", "interp/model"], ["interp/lower"], ["interp/check"], ["interp"],
          ["interp/sim", "interp/bound"], ["interp/auto", "interp/formats"], ["interp/plan"]]
DRIVER = "interp/compile.c"
RUN_IN_ORDER = {"interp/schedule", "interp/lower", "interp/check"}
# lang/'s folders by floor (README.md, Layout): a folder uses only the floors
# before its own. The engine (lang/engine) sits under every front end: the
# commands, the REPL, the library; nothing below it calls up into it.
LANG_FLOORS = [["lang/core"], ["lang/sandbox"], ["lang/lua"], ["lang/engine"],
               ["lang/repl", "lang/api"], ["lang/cli"]]
# runtime/'s folders and the folders of runtime/ each may use (besides
# interp/); runtime/README.md draws it.
RUNTIME_USES = {
    "runtime/run": {"runtime/model", "runtime/exec", "runtime/device", "runtime/backend",
                    "runtime/transport"},
    "runtime/model": {"runtime/exec", "runtime/backend", "runtime/transport"},
    "runtime/exec": {"runtime/backend", "runtime/transport"},
    "runtime/device": {"runtime/backend", "runtime/transport", "runtime/cuda"},
    "runtime/cuda": {"runtime/backend", "runtime/transport"},
    "runtime/backend": set(),
    "runtime/transport": set(),
}

# Folders whose headers do not all name their test yet (issue 48's
# tidy-up did the others): they leave this list as their headers get a
# "Tested by:" line.
UNNAMED_TESTS = ()

build = sys.argv[1] if len(sys.argv) > 1 else "build"
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def folder(path):
    """interp/lower/offload.c -> interp/lower; interp/compile.c -> interp"""
    return os.path.dirname(path)


def sccs(graph):
    """Tarjan's strongly connected components with two or more nodes."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# ---- calls between files, from the objects --------------------------------
objs = [o for r in ROOTS for o in glob.glob(os.path.join(build, r, "**", "*.o"), recursive=True)
        if os.path.exists(os.path.relpath(o, build)[:-2] + ".c")]  # not stale objects
check(len(objs) > 20, "objects of interp/, lang/, runtime/ in %s (run make first)" % build)


def call_graph(src_of):
    """{source: sources whose functions it calls}, from the objects' symbols
    (src_of: object -> its source)."""
    defs, uses = {}, collections.defaultdict(set)
    # One nm for all the objects (-A: each line starts "OBJECT:"); one a
    # file cost a process each, most of this check's time.
    objs = sorted(src_of)
    out = subprocess.run(["nm", "-A"] + objs, capture_output=True, text=True,
                         check=True).stdout if objs else ""
    for line in out.splitlines():
        o, _, rest = line.partition(":")
        p = rest.split()
        if len(p) == 3 and p[1] in "TDBR":
            defs[p[2]] = src_of[o]
        elif len(p) == 2 and p[0] == "U":
            uses[src_of[o]].add(p[1])
    graph = collections.defaultdict(set)
    for f, syms in uses.items():
        for s in syms:
            if s in defs and defs[s] != f:
                graph[f].add(defs[s])
    return graph


calls = call_graph({o: os.path.relpath(o, build)[:-2] + ".c" for o in objs})
cyc = sccs(calls)
for c in cyc:
    print("call cycle between files:", " <-> ".join(c))
check(not cyc, "no call cycle between files")

# The CUDA stand-in: its own objects (Makefile, $(STUB)/obj), one a file.
STUB_DIR = "tests/cudastub"
stub_objs = glob.glob(os.path.join(build, "cudastub", "obj", "*.o"))
stub_src = {o: os.path.join(STUB_DIR, os.path.basename(o)[:-2] + ".c") for o in stub_objs}
stub_src = {o: f for o, f in stub_src.items() if os.path.exists(f)}  # not stale objects
if not stub_src:
    print("NOTE: no objects of the CUDA stand-in in %s/cudastub/obj (make cudastub): its calls "
          "are not checked" % build)
else:
    cyc = sccs(call_graph(stub_src))
    for c in cyc:
        print("call cycle between files:", " <-> ".join(c))
    check(not cyc, "no call cycle between the CUDA stand-in's files (%s)" % STUB_DIR)

# ---- includes ----------------------------------------------------------------
sources = [f for r in ROOTS for f in glob.glob(os.path.join(r, "**", "*.[ch]"), recursive=True)]
sources += [f for r in ROOTS for f in glob.glob(os.path.join(r, "**", "*.cu"), recursive=True)]
includes = collections.defaultdict(set)
for f in sources:
    root = f.split("/")[0]
    for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(f).read(), re.M):
        cands = [os.path.join(os.path.dirname(f), name)] + [os.path.join(r, name) for r in ROOTS]
        hit = next((c for c in cands if os.path.exists(c)), None)
        check(hit is not None, "%s: #include \"%s\" is found" % (f, name))
        if hit:
            includes[f].add(os.path.normpath(hit))

# ---- folders -----------------------------------------------------------------
fgraph = collections.defaultdict(set)
for g in (calls, includes):
    for a, bs in g.items():
        for b in bs:
            if folder(a) != folder(b):
                fgraph[folder(a)].add(folder(b))
cyc = sccs(fgraph)
for c in cyc:
    print("cycle between folders:", " <-> ".join(c))
check(not cyc, "no cycle between folders")
for a, bs in sorted(fgraph.items()):
    for b in sorted(bs):
        ra, rb = a.split("/")[0], b.split("/")[0]
        check(rb in ALLOWED.get(ra, {ra}), "%s depends on %s (%s/ may use only %s)"
              % (a, b, ra, ", ".join(sorted(ALLOWED.get(ra, {ra})))))

# ---- inside interp/: the stage order -----------------------------------------
floor = {f: i for i, fs in enumerate(STAGES) for f in fs}
interp_folders = {folder(f) for f in sources if f.startswith("interp/")}
for f in sorted(interp_folders):
    check(f in floor, "%s has a place in the stage order (STAGES in layout.py)" % f)
for f in sorted(sources):
    if folder(f) == "interp":
        check(os.path.basename(f) in ("compile.c", "compile.h"),
              "%s: interp/'s root holds the driver only (compile.c, compile.h)" % f)
for a, bs in sorted(fgraph.items()):
    for b in sorted(bs):
        if a in floor and b in floor:
            check(floor[b] < floor[a], "%s uses %s: a stage uses only earlier ones (%s)"
                  % (a, b, " -> ".join(" | ".join(x[len("interp/"):] or "driver" for x in fs)
                                       for fs in STAGES)))
for f, callees in sorted(calls.items()):
    if not f.startswith("interp/") or f == DRIVER:
        continue
    ran = sorted({folder(c) for c in callees} & RUN_IN_ORDER - {folder(f)})
    check(len(ran) < 2, "%s calls into %s: only the driver (%s) runs the stages in order"
          % (f, " and ".join(ran), DRIVER))

# ---- inside lang/: the floors ---------------------------------------------------
lang_floor = {f: i for i, fs in enumerate(LANG_FLOORS) for f in fs}
for f in sorted({folder(f) for f in sources if f.startswith("lang/")}):
    check(f in lang_floor, "%s has a place in lang/'s floors (LANG_FLOORS in layout.py)" % f)
for a, bs in sorted(fgraph.items()):
    for b in sorted(bs):
        if a in lang_floor and b in lang_floor:
            check(lang_floor[b] < lang_floor[a], "%s uses %s: a lang/ folder uses only earlier "
                  "floors (%s)" % (a, b, " -> ".join(" | ".join(fs) for fs in LANG_FLOORS)))

# ---- inside runtime/: the layering -----------------------------------------
runtime_folders = {folder(f) for f in sources if f.startswith("runtime/")}
for f in sorted(runtime_folders):
    check(f in RUNTIME_USES, "runtime/'s root holds no sources (a folder by job)" if f == "runtime"
          else "%s has a place in runtime/'s layering (RUNTIME_USES in layout.py)" % f)
for a, bs in sorted(fgraph.items()):
    for b in sorted(bs):
        if a.startswith("runtime") and b.startswith("runtime"):
            check(b in RUNTIME_USES.get(a, set()), "%s uses %s (%s/ may use only %s)"
                  % (a, b, a, ", ".join(sorted(RUNTIME_USES.get(a, ()))) or "interp/"))

# ---- every header names its test ------------------------------------------------
headers = sorted(f for r in ROOTS + ("tools",) for f in glob.glob(os.path.join(r, "**", "*.h"),
                                                                   recursive=True))
for f in headers:
    if folder(f).startswith(UNNAMED_TESTS):
        continue
    text = open(f).read()
    top = text[:text.find("*/")] if text.startswith("/*") else ""
    at = top.find("Tested by:")
    check(at >= 0, "%s names its test in its top comment (a line 'Tested by: tests/...')" % f)
    for t in re.findall(r"tests/[\w/.-]*\w", top[at:] if at >= 0 else ""):
        check(os.path.exists(t), "%s: 'Tested by' names %s, which does not exist" % (f, t))

# ---- sizes ---------------------------------------------------------------------
stub_sources = glob.glob(os.path.join(STUB_DIR, "*.[ch]")) + \
    glob.glob(os.path.join(STUB_DIR, "include", "*.h"))
for f in sorted(sources + stub_sources):
    n = sum(1 for _ in open(f))
    if n > MAX_LINES and f in OVER:
        print("NOTE: %s has %d lines (%s)" % (f, n, OVER[f]))
        continue
    check(n <= MAX_LINES, "%s has %d lines (at most %d: split it by job)" % (f, n, MAX_LINES))

# ---- no merge left half-done: conflict markers in a tracked file ----------------
try:
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True,
                             check=True).stdout.split()
except (OSError, subprocess.CalledProcessError):
    tracked = []  # not a git checkout (a release tarball): nothing to merge
marked = []
for f in tracked:
    try:
        text = open(f, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError):
        continue  # binary or gone
    if re.search(r"^(<<<<<<<|>>>>>>>) ", text, re.M):
        marked.append(f)
check(not marked, "no merge conflict markers in tracked files (%s)" % ", ".join(marked))

print("layout: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
