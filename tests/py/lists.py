#!/usr/bin/env python3
"""lists.py STAGECRAFT — the lists kept in one table each, against their
other copies.

Each list has one source in C, and the binary hands it out (sc._exits,
sc._commands, sc._fields; stagecraft --help); this test compares the copies
that cannot be generated from it:
  - exit codes (interp/ir/ir.h, SC_EXITS): the table "code | class" of the
    documentation, in order; every code of the error catalogue and of
    tests/errors.sh is one of them;
  - commands (lang/core/commands.h, SC_COMMANDS): the names the "unknown
    command" error lists are those of the documentation's synopsis (the
    block of `stagecraft list [RECIPE]`), and --help shows each;
Prints each difference, then "lists: N passed, N failed".
"""
import glob
import os
import re
import subprocess
import sys

SC = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, file=sys.stderr)
        if detail:
            print("  " + str(detail).replace("\n", "\n  "), file=sys.stderr)


def lua(script):
    """What a trusted script prints (stdin), as lines."""
    r = subprocess.run([SC, "--trust", "-"], input=script, capture_output=True, text=True)
    check(r.returncode == 0, "the binary hands out its tables", r.stderr[-400:])
    return r.stdout.splitlines()


def docs():
    """The documentation's lines, every file (SPEC.md, or its parts under docs/)."""
    files = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "SPEC.md")]
    files += sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    out = []
    for f in files:
        if os.path.exists(f):
            out += open(f, encoding="utf-8").read().split("\n")
    return out


def table(lines, header):
    """The rows (lists of cells) of the markdown table whose header row
    starts with the given cells; None when there is none."""
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and cells[:len(header)] == header:
            rows = []
            for row in lines[i + 2:]:
                if not row.lstrip().startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return rows
    return None


DOCS = docs()

# ---- exit codes --------------------------------------------------------------
exits = [l.split("|") for l in lua(
    "for code = 0, 99 do if sc._exits[code] then print(code .. '|' .. sc._exits[code]) end end\n")]
exits = [(int(c), t) for c, t in exits]
check(len(exits) >= 10, "sc._exits lists the classes", exits)
rows = table(DOCS, ["code", "class"])
check(rows is not None, "the documentation has the table of exit codes (| code | class | ...)")
if rows is not None:
    doc = [(int(r[0]), r[1]) for r in rows if r and r[0].isdigit()]
    check(doc == exits, "the documented exit codes are SC_EXITS (interp/ir/ir.h)",
          "documented: %s\ntable:      %s" % (doc, exits))
codes = {c for c, _ in exits}
rows = table(DOCS, ["class", "code", "message"])
check(rows is not None, "the documentation has the error catalogue (| class | code | message |)")
for r in rows or []:
    for c in re.split(r"\s*,\s*", r[1]):
        check(c.isdigit() and int(c) in codes, "catalogue row '%s': code %s is a class" % (r[0], c))
for n, line in enumerate(open(os.path.join(ROOT, "tests", "errors.sh")), 1):
    m = re.match(r"row (\d+) ", line)
    if m:
        check(int(m.group(1)) in codes, "tests/errors.sh:%d: code %s is a class" % (n, m.group(1)))

# ---- commands ------------------------------------------------------------------
r = subprocess.run([SC, "nosuchcommand"], capture_output=True, text=True)
m = re.search(r"\(commands: ([^;]*);", r.stderr)
check(m is not None, "the unknown-command error lists the commands", r.stderr)
commands = m.group(1).split(", ") if m else []
synopsis = None
for i, line in enumerate(DOCS):
    if line.startswith("stagecraft list [RECIPE]"):
        start = max(k for k in range(i) if DOCS[k].startswith("```"))
        end = next(k for k in range(i, len(DOCS)) if DOCS[k].startswith("```"))
        synopsis = DOCS[start + 1:end]
        break
check(synopsis is not None, "the documentation has the synopsis (stagecraft list [RECIPE] ...)")
documented = []
for line in synopsis or []:
    for w in re.findall(r"(?:^stagecraft|\|) +([a-z]+)\b", line):
        if w not in documented:
            documented.append(w)
check(documented == commands, "the documented commands are SC_COMMANDS (lang/core/commands.h)",
      "documented: %s\ntable:      %s" % (documented, commands))
usage = subprocess.run([SC, "--help"], capture_output=True, text=True).stdout
for c in commands:
    check(c == "help" or re.search(r"^  stagecraft %s\b" % c, usage, re.M),
          "--help shows the command '%s'" % c)

print("lists: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
