#!/usr/bin/env python3
"""docrefs.py [-n] [FILE...] — numbered references to the old SPEC.md, by name.

SPEC.md was one file whose sections were cited by number ("SPEC.md" then a
section sign and 17.4, or the sign alone). It is now an index of docs/*.md,
and a part of the docs is cited by file and anchor (SPEC.md#references):

  - in code, messages, tests and code spans: `docs/run.md#check`, from the
    repository's root (a whole page: `docs/run.md`);
  - in the prose of a markdown file: a link, `[check](run.md#check)` in
    docs/, `[check](docs/run.md#check)` in README.md, the path relative to
    the file (`#check` within the page itself).

This script rewrites every numbered reference of the tracked text files (or
of the FILEs named) by the table below: old number -> page#anchor and the
text of a link. Run it again after merging a branch that still cites
numbers; tests/py/docs.py fails on any numbered reference that is left, and
on any reference whose file or anchor does not exist. Also converted: the
old section titles quoted after SPEC.md (`SPEC.md, "JSON dump"`) and the
sections of design.md, a file that is not in the repository.

  python3 tools/docrefs.py          # rewrite the repository in place
  python3 tools/docrefs.py -n       # print what would change, change nothing
  python3 tools/docrefs.py --where 17.4   # where an old section went

A reference split over two lines (the file name at one line's end, the
number at the next one's start) is converted where the number is, and
reported: reflow it by hand. A number right after "the paper's" or "its"
is a paper's section: it is reported and left alone (write "section N").
Prints "docrefs: N references in N files".
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SIGN = "\u00a7"  # written so, this file holds no reference itself

# old number: (title in the old SPEC.md, page#anchor in docs/, text of a link)
TABLE = {
    "1": ("Overview", "guide.md#overview", "overview"),
    "2": ("A worked example", "guide.md#a-worked-example", "a worked example"),
    "3": ("Concepts", "guide.md#concepts", "concepts"),
    "3.1": ("Devices, stages, placement", "guide.md#devices-stages-placement",
            "devices, stages, placement"),
    "3.2": ("Passes and dependencies", "guide.md#passes-and-dependencies",
            "passes and dependencies"),
    "3.3": ("Memory model", "guide.md#memory-model", "memory model"),
    "3.4": ("Cost model", "guide.md#cost-model", "cost model"),
    "4": ("Parameters: `sc.params`", "language.md#parameters", "parameters"),
    "5": ("Programs: `sc.program`", "language.md#programs", "programs"),
    "5.1": ("Fields", "language.md#fields", "program fields"),
    "5.2": ("Ordered programs", "language.md#ordered-programs", "ordered programs"),
    "5.3": ("Rules", "language.md#rules", "rules"),
    "5.4": ("Building blocks", "blocks.md#building-blocks", "building blocks"),
    "5.5": ("Blocks as values: `sc.block`, the V family, the search",
            "blocks.md#blocks-as-values", "blocks as values"),
    "5.6": ("Automatic schedules: `auto` and `sc.autoschedule`",
            "blocks.md#automatic-schedules", "automatic schedules"),
    "6": ("The Program type and the module", "language.md#the-program-type-and-the-module",
          "the Program type and the module"),
    "7": ("Lowering", "semantics.md#lowering", "lowering"),
    "8": ("Communication semantics", "semantics.md#communication-semantics",
          "communication semantics"),
    "8.1": ("The semantics", "semantics.md#the-semantics", "the semantics"),
    "8.2": ("What the verifier proves", "semantics.md#what-the-verifier-proves",
            "what the verifier proves"),
    "8.3": ("Why lowered programs cannot hang", "semantics.md#why-lowered-programs-cannot-hang",
            "why lowered programs cannot hang"),
    "8.4": ("Messages", "semantics.md#messages", "the verifier's messages"),
    "8.5": ("Host copies: OFFLOAD, DROP, RELOAD", "semantics.md#host-copies",
            "host copies"),
    "8.6": ("Collectives: ALLREDUCE, BCAST", "semantics.md#collectives",
            "collectives"),
    "9": ("Simulation outputs", "simulation.md", "simulation outputs"),
    "10": ("Stdlib recipes", "recipes.md", "stdlib recipes"),
    "11": ("Command line", "cli.md", "command line"),
    "12": ("Errors and exit codes", "errors.md", "errors and exit codes"),
    "12.1": ("Catalogue", "errors.md#catalogue", "the error catalogue"),
    "13": ("Limits", "sandbox.md#limits-on-program-sizes", "limits on program sizes"),
    "14": ("Status", "status.md", "status"),
    "15": ("Pictures and interchange", "interchange.md", "pictures and interchange"),
    "15.1": ("SVG pictures", "interchange.md#svg-pictures", "SVG pictures"),
    "15.2": ("Chrome trace", "interchange.md#chrome-trace", "Chrome trace"),
    "15.3": ("PyTorch pipelining CSV", "interchange.md#pytorch-pipelining-csv",
             "PyTorch pipelining CSV"),
    "15.4": ("JSON dump", "interchange.md#json-dump", "JSON dump"),
    "15.5": ("Python: `pip install ./python`", "interchange.md#python", "Python"),
    "16": ("The REPL", "repl.md", "the REPL"),
    "17": ("Running: `stagecraft run`", "run.md", "running"),
    "17.1": ("The model", "run.md#the-model", "the built-in model"),
    "17.2": ("Memory: units in bytes", "run.md#memory-units-in-bytes", "memory in bytes"),
    "17.3": ("`--check`", "run.md#check", "`--check`"),
    "17.4": ("Devices: threads, MPI ranks, GPUs", "run.md#devices-threads-mpi-ranks-gpus",
             "devices: threads, MPI ranks, GPUs"),
    "17.5": ("Output", "run.md#output", "the output of run"),
    "17.6": ("Errors", "run.md#errors", "the errors of run"),
    "18": ("Sandbox and limits on evaluation", "sandbox.md", "sandbox and limits"),
    "18.1": ("Sandbox", "sandbox.md#sandbox", "sandbox"),
    "18.2": ("Limits on evaluation", "sandbox.md#limits-on-evaluation", "limits on evaluation"),
    "18.3": ("Files written", "sandbox.md#files-written", "files written"),
    "19": ("Offload", "offload.md", "offload"),
    "19.1": ("Policies", "offload.md#policies", "offload policies"),
    "19.2": ("The host link", "offload.md#the-host-link", "the host link"),
    "19.3": ("The plan", "offload.md#the-plan", "the offload plan"),
    "19.4": ("In recipes and on the command line", "offload.md#in-recipes-and-on-the-command-line",
             "offload in recipes"),
    "19.5": ("Figures", "offload.md#figures", "offload figures"),
    "19.6": ("Running", "offload.md#running", "running with offload"),
    "19.7": ("The gis recipe", "offload.md#the-gis-recipe", "the gis recipe"),
    "20": ("Costs in seconds: profiles and cost files", "costs.md", "costs in seconds"),
    "20.1": ("The cost file", "costs.md#the-cost-file", "the cost file"),
    "20.2": ("Loading costs into a recipe", "costs.md#loading-costs-into-a-recipe",
             "loading costs into a recipe"),
    "20.3": ("Profiling: `run --profile FILE`", "costs.md#profiling", "profiling"),
    "20.4": ("The prediction beside the measurement",
             "costs.md#the-prediction-beside-the-measurement",
             "the prediction beside the measurement"),
    "21": ("Training steps and the optimizer", "steps.md", "training steps"),
    "21.1": ("Steps", "steps.md#steps", "steps"),
    "21.2": ("Synchronizing the optimizer steps", "steps.md#optimizer-synchronization",
             "optimizer synchronization"),
    "21.3": ("Simulation", "steps.md#simulation", "simulation of steps"),
    "21.4": ("Running several steps", "steps.md#running-several-steps", "running several steps"),
    "21.5": ("Pictures", "steps.md#pictures", "pictures of steps"),
    "22": ("Vocabulary Parallelism", "vocab.md", "Vocabulary Parallelism"),
    "22.1": ("The model: FLOPs and bytes", "vocab.md#the-model-flops-and-bytes",
             "the vocabulary model"),
    "22.2": ("Placements: `vocab_par`", "vocab.md#placements", "vocabulary placements"),
    "22.3": ("Placing the passes", "vocab.md#placing-the-passes", "placing the vocabulary passes"),
    "22.4": ("Running: the split model", "vocab.md#running-the-split-model",
             "running the split model"),
    "22.5": ("In recipes and on the command line", "vocab.md#in-recipes-and-on-the-command-line",
             "vocabulary parallelism in recipes"),
    "22.6": ("Figures", "vocab.md#figures", "vocabulary parallelism figures"),
}
# Numbers that never existed, and what the references to them meant.
ALIASES = {
    "20.5": "20.4",  # "a measured step against its prediction": compare.h, run_report.h
}
# design.md (the project's design notes, not in the repository): its sections
# as the code cited them. 3 is the runtime: runtime/README.md holds it.
DESIGN = {"2": "8.1", "3": "runtime/README.md", "6": "8.6"}

NUM = SIGN + r"[ \u00a0]?(\d+(?:\.\d+)*)"
REF = re.compile(r"(?:(SPEC\.md),?[ \t]*(\n[ \t]*(?:\*|#|--|//)?[ \t]*)?|(design\.md)[ \t]+)?" + NUM)
TITLED = re.compile(r'SPEC\.md, "([^"\n]+)"')
SAME = re.compile(r"((?<![\w/.-])docs/[\w.-]+\.md(?:#[\w-]+)?|\[[^\]\n]*\]\([^)\s]*\))"
                  r"(?:, \1(?![\w#-]))+")
# "the paper's" or "its" right before a number: a paper's section, not SPEC's
OTHER = re.compile(r"(?:paper's|its)[ \t]*$")


def slug(text):
    """GitHub's anchor of a heading (the same as tests/py/docs.py's)."""
    s = re.sub(r"<[^>]*>", "", text).strip().lower()
    s = "".join(c for c in s if c.isalnum() or c in "-_ ")
    return s.replace(" ", "-")


def target(number, design=False):
    """(path from the root, anchor or '', link text) of an old section."""
    if design:
        number = DESIGN.get(number)
        if number is None:
            return None
        if not number[0].isdigit():
            return number, "", number
    number = ALIASES.get(number, number)
    if number not in TABLE:
        return None
    page, _, anchor = TABLE[number][1].partition("#")
    return "docs/" + page, anchor, TABLE[number][2]


class Markdown:
    """Which offsets of a markdown text are code (fenced blocks and spans):
    there a reference stays text; elsewhere it becomes a link."""

    def __init__(self, text):
        self.code = bytearray(len(text))
        pos, fence, para = 0, False, []
        for line in text.split("\n"):
            if line.lstrip().startswith("```"):
                fence = not fence
                self.mark(pos, pos + len(line))
                para = []
            elif fence:
                self.mark(pos, pos + len(line))
            elif not line.strip():
                para = []
            else:
                para.append(pos)
                self.spans(text, para[0], pos + len(line))
            pos += len(line) + 1

    def mark(self, a, b):
        for k in range(a, b):
            self.code[k] = 1

    def spans(self, text, a, b):
        """Backtick spans of the paragraph so far (it may open on a line above)."""
        inside = False
        for k in range(a, b):
            if text[k] == "`":
                inside = not inside
                self.code[k] = 1
            elif inside:
                self.code[k] = 1


def first_heading(path):
    for line in open(path, encoding="utf-8"):
        if line.startswith("# "):
            return slug(line[2:])
    return ""


def convert(path, text):
    """The text with its references converted, the count, the lines to reflow."""
    md = path.endswith(".md")
    code = Markdown(text).code if md else None
    here = os.path.dirname(path)
    out, last, count, reflow = [], 0, 0, []

    def form(page, anchor, label, at):
        if md and not code[at]:
            rel = os.path.relpath(page, here) if page != path else ""
            if not rel and not anchor:
                anchor = first_heading(os.path.join(ROOT, page))
            return "[%s](%s%s)" % (label, rel, "#" + anchor if anchor else "")
        return page + ("#" + anchor if anchor else "")

    events = []
    for m in TITLED.finditer(text):
        hit = [n for n, row in TABLE.items() if row[0].lower() == m.group(1).lower()
               or slug(row[0]) == slug(m.group(1))]
        if len(hit) == 1:
            events.append((m.start(), m.end(), target(hit[0]), None))
    for m in REF.finditer(text):
        t = target(m.group(4), design=bool(m.group(3)))
        if t is None or (not m.group(1) and OTHER.search(text[max(0, m.start() - 12):m.start()])):
            if t is not None:  # a paper's section: say "section N" instead
                reflow.append(text.count("\n", 0, m.start()) + 1)
            continue
        if m.group(2):  # split over two lines: keep the line break
            reflow.append(text.count("\n", 0, m.start()) + 1)
            events.append((m.start(), m.end(), t, m.group(2)))
        else:
            events.append((m.start(), m.end(), t, None))
    events.sort()
    for start, end, (page, anchor, label), keep in events:
        if start < last:
            continue
        out.append(text[last:start])
        if keep:
            out.append(keep)
        at = start if not keep else end - 1
        out.append(form(page, anchor, label, at))
        last, count = end, count + 1
    out.append(text[last:])
    new = "".join(out)
    if count:  # two old numbers that went to one place ("design.md 6, SPEC.md 8.6"): once
        new = SAME.sub(r"\1", new)
    return new, count, reflow


def tracked():
    try:
        names = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True,
                               check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        sys.exit("docrefs: not a git checkout: name the files")
    return [n for n in names if n and os.path.isfile(os.path.join(ROOT, n))]


def verify_table():
    """Every target of the table is a heading of docs/: else the table is stale."""
    bad = []
    for number, (_, where, _) in TABLE.items():
        page, _, anchor = where.partition("#")
        path = os.path.join(ROOT, "docs", page)
        if not os.path.isfile(path):
            bad.append("%s -> %s: no such page" % (number, where))
            continue
        fence, slugs = False, set()
        for line in open(path, encoding="utf-8"):
            if line.startswith("```"):
                fence = not fence
            m = re.match(r"#{1,6} (.*)", line) if not fence else None
            if m:
                slugs.add(slug(m.group(1)))
        if anchor and anchor not in slugs:
            bad.append("%s -> %s: no such heading" % (number, where))
    return bad


def main(argv):
    if argv[:1] == ["--where"]:
        for n in argv[1:]:
            t = target(n.lstrip(SIGN))
            print("%s: %s" % (n, t[0] + ("#" + t[1] if t[1] else "") if t else "no such section"))
        return 0
    dry = "-n" in argv
    names = [a for a in argv if a != "-n"] or tracked()
    bad = verify_table()
    if bad:
        print("docrefs: the table points at nothing (a heading renamed?):\n  " + "\n  ".join(bad))
        return 1
    me = os.path.relpath(os.path.abspath(__file__), ROOT)
    total = files = 0
    for name in names:
        rel = os.path.relpath(os.path.abspath(name), ROOT) if os.path.isabs(name) else name
        if rel == me:
            continue
        path = os.path.join(ROOT, rel)
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        if SIGN not in text and 'SPEC.md, "' not in text:
            continue
        new, count, reflow = convert(rel, text)
        for line in reflow:
            print("%s:%d: a reference split over two lines, or a paper's section: "
                  "by hand" % (rel, line))
        if not count:
            continue
        total, files = total + count, files + 1
        if dry:
            print("%s: %d references" % (rel, count))
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    print("docrefs: %d references in %d files%s" % (total, files, " (nothing written)" if dry else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
