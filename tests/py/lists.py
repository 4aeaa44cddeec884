#!/usr/bin/env python3
"""lists.py STAGECRAFT — the lists kept in one table each, against their
other copies.

Each list has one source in C, and the binary hands it out (sc._exits,
sc._commands, sc._fields; stagecraft --help); this test compares the copies
that cannot be generated from it:
  - exit codes (interp/ir/exits.h, SC_EXITS): the table "code | class" of the
    documentation, in order; every code of the error catalogue and of
    tests/errors.sh is one of them;
  - commands (lang/core/commands.h, SC_COMMANDS): the names the "unknown
    command" error lists are those of the documentation's synopsis (the
    block of `stagecraft list [RECIPE]`), and --help shows each;
  - recipe fields (lang/lua/fields.h, SC_FIELDS): the documented fields of
    sc.program (names and types), of `model`, of sc.autoschedule and
    `auto`; no table takes a name twice; the prelude asks sc._fields for
    its lists instead of keeping them;
  - export formats (interp/formats/export.h, SC_EXPORT_FORMATS): the
    usage text, the documentation of `export` and the Python package's
    Program.export name the formats of the "unknown format" error.
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
    check(doc == exits, "the documented exit codes are SC_EXITS (interp/ir/exits.h)",
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

# ---- recipe fields ---------------------------------------------------------------
def fields(name):
    return lua("print(table.concat(sc._fields('%s'), ' '))\n" % name)[0].split()


rows = lua("for _, r in ipairs(sc._fields()) do\n"
           "  print(r.name .. '|' .. table.concat(r.tables, ' ') .. '|' .. r.type .. '|' .. r.doc)\n"
           "end\n")
rows = [r.split("|") for r in rows]
check(len(rows) > 50, "sc._fields() lists the rows", len(rows))
tables = sorted({t for r in rows for t in r[1].split()})
for t in tables:
    names = [r[0] for r in rows if t in r[1].split()]
    check(len(names) == len(set(names)), "table '%s' takes each name once" % t, names)
    check(fields(t) == names, "sc._fields('%s') lists its rows in order" % t)
    check(all(r[2] and r[3] for r in rows if t in r[1].split()),
          "every field of '%s' has a type and a doc" % t)
ticked = lambda cell: re.findall(r"`([A-Za-z_][A-Za-z_0-9]*)`", cell)
plain = lambda cell: cell.replace("`", "").strip()
program = {r[0]: r[2] for r in rows if "program" in r[1].split()}
doc = table(DOCS, ["field", "type", "default", "meaning"])
check(doc is not None, "the documentation has the fields of sc.program (| field | type | ...)")
documented = {}
for r in doc or []:
    for name in ticked(r[0]):
        documented[name] = plain(r[1])
check(set(documented) == set(program), "the documented fields of sc.program are its rows",
      "documented only: %s\ntable only: %s" % (sorted(set(documented) - set(program)),
                                             sorted(set(program) - set(documented))))
for name in sorted(set(documented) & set(program)):
    check(documented[name] == program[name], "program field '%s': documented type is the row's"
          % name, "documented: %s\nrow:        %s" % (documented[name], program[name]))
doc = table(DOCS, ["field of `model`", "default", "meaning"])
check(doc is not None, "the documentation has the fields of `model`")
model = [n for r in doc or [] for n in ticked(r[0])]
check(model == fields("model"), "the documented fields of `model` are its rows",
      "documented: %s\nrows:       %s" % (model, fields("model")))
doc = table(DOCS, ["field", "default", "meaning"])
check(doc is not None, "the documentation has the fields of sc.autoschedule")
auto = [n for r in doc or [] for n in ticked(r[0])]
check(set(auto) <= set(fields("autoschedule")), "the documented fields of sc.autoschedule are rows",
      sorted(set(auto) - set(fields("autoschedule"))))
check(set(fields("auto")) - {"where"} <= set(auto),
      "every field of `auto` is documented (but `where`, set by sc.autoschedule)")
prelude = open(os.path.join(ROOT, "stdlib", "_prelude.lua")).read()
for t in ("autoschedule", "auto", "from_params"):
    check("sc._fields(\"%s\")" % t in prelude, "the prelude takes the list '%s' from sc._fields" % t)

# ---- export formats ----------------------------------------------------------------
r = subprocess.run([SC, "export", "1f1b", "--format", "nosuchformat"], capture_output=True,
                   text=True)
m = re.search(r"unknown format 'nosuchformat' \(([^)]*)\)", r.stderr)
check(m is not None, "the unknown-format error lists the formats", r.stderr)
formats = m.group(1).split(", ") if m else []
check("--format " + "|".join(formats) + " " in usage, "--help lists the export formats", usage)
para = next((i for i, line in enumerate(DOCS) if line.startswith("**`export`**")), None)
check(para is not None, "the documentation has the paragraph of `export`")
if para is not None:
    text = " ".join(DOCS[para:para + 6])
    check(all("`%s`" % f in text for f in formats), "the documentation of `export` names the formats",
          text)
package = open(os.path.join(ROOT, "python", "stagecraft", "__init__.py")).read()
check("(%s)" % ", ".join(formats) in package, "the Python package's export names the formats")

print("lists: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
