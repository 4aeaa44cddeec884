"""docs.py STAGECRAFT [FILE.md...] — every example of the documents, run.

README.md, SPEC.md and every docs/*.md (or the files named) are read in
order, each in a scratch folder of its own (a page that uses a file another
page writes writes it too, in a hidden file), and each fenced block is one of
these (the first that applies):

  - after a line `<!-- doc-test: skip (why) -->`: not run (a syntax sketch, a
    fragment, a machine this test cannot assume). Say why. After
    `<!-- doc-test: unsanitized -->`: not run under `make asan` (an example
    that limits the address space, or links a plain program or lua5.4 to the
    library, which make asan builds sanitized: tests/embed.sh runs those).
    After `<!-- doc-test: slow (why) -->`: not run under `make check`
    (SC_TIER=check), run by `make test` (an example of seconds of CPU
    whose work a suite of the check tier samples; say which);
  - after `<!-- doc-test: file NAME -->`, or a ```lua block whose first line
    is a comment naming a file (`-- zb3.lua: ...`): written as NAME into the
    document's scratch folder, for the commands that follow;
  - with lines that start with `$ `: commands. Each runs with `sh -c` in the
    scratch folder (where `stagecraft` and `./stagecraft` are the binary
    under test, and examples/, stdlib/, tests/, bench/ are the repository's),
    and its stdout, then its stderr, must equal the lines that follow it up
    to the next `$ ` line. With no lines after it, it must succeed; with a
    `stagecraft: error:` line, it must fail;
  - a REPL transcript (first line `> `): typed into the REPL on a
    pseudo-terminal, line by line (`>> ` lines continue a chunk); what
    follows each input is compared up to the next prompt. `^C` after an
    input sends Ctrl-C; an input ending in `<TAB><TAB>` asks for completions
    and the names listed are compared, not their layout;
  - a ```lua block with `-->` comments: run as a script; what it prints must
    equal the `-->` texts, one line each, in order;
  - any other ```lua block: run as a script (stdin, trusted); it must not
    fail;
  - any other block: prose (a synopsis, a list of messages): not run.

After `<!-- doc-test: float32 K=N (why) -->` a block's numbers that carry a
fraction or an exponent (decimal or hex: `5.1384788`, `4.6e-07`,
`0x1.48dcd62c3cd02p+2`) match any number within 2·γ_K of them, scaled by
max(1, |x|), where γ_K = K·u/(1 − K·u) bounds a float32 sum of K terms in
any order (u = 2^-24): the outputs of a trained model, whose last bits
depend on the order in which the BLAS kernel that OpenBLAS picks for the
CPU sums (K: the longest sum of the model, named in the directive).
Integers still match exactly.

In expected output `[...]` matches any text within a line, and a line that
is only `...` (or `[...]`) matches any number of lines: mark output that
legitimately varies (times, temporary paths) so. (Plain dots are text: the
ASCII timelines are full of them.) Hidden files and set-up commands:

  <!-- doc-test: file NAME
  CONTENT
  -->
  <!-- doc-test: run COMMAND -->

A new section is covered as soon as it shows a `$ ` command, a transcript or
a Lua block: nothing to register.

References first: every tracked text file of the repository is scanned for
citations of the docs (SPEC.md#references: `docs/FILE.md#ANCHOR` from the
root, markdown links relative to the .md file that holds them). Each must name
a file that exists and, for a .md file, a heading of it (GitHub's slug) or an
`<a id>`; headings must be unique within a page; a numbered reference to the
old SPEC.md (the section sign with a number, or SPEC.md followed by a quoted
title) and a .md file that does not exist fail too. tools/docrefs.py converts
numbered references. Prints each failure with the document and line, then
"docs: N passed, N failed". With --bless, the outputs of `$ `
commands that differ (and hold no `[...]`) are rewritten in the document as
they are now: review them with git diff before committing.
"""
import glob
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

SC = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BLESS = "--bless" in sys.argv[2:]
FILES = [a for a in sys.argv[2:] if a != "--bless"] or (
    ["README.md", "SPEC.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))))
passed = failed = 0
ran = {"commands": 0, "repl": 0, "lua": 0, "files": 0, "skipped": 0}


def report(ok, where, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {where}: {what}", file=sys.stderr)
        if detail:
            print("  " + detail.replace("\n", "\n  "), file=sys.stderr)


# A number with a fraction or an exponent: decimal or C99 hex.
FLOAT = r"[-+]?(?:0x[0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?p[-+]?\d+|(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)"


def as_float(s):
    return float.fromhex(s) if "x" in s.lower() else float(s)


def literal(s):
    """Text between numbers; a run of spaces matches any run (a column
    pads to the width of the number before it)."""
    return " +".join(re.escape(w) for w in re.split(r" +", s))


def line_match(pattern, text, tol=None):
    parts = pattern.split("[...]")
    if tol is None:
        rx = ".*".join(re.escape(p) for p in parts)
        return re.fullmatch(rx, text, re.S) is not None
    # numbers of the pattern become groups compared within tol
    want, pieces = [], []
    for k, p in enumerate(parts):
        if k:
            pieces.append(".*")
        last = 0
        for m in re.finditer(FLOAT, p):
            pieces.append(literal(p[last:m.start()]))
            pieces.append("(" + FLOAT + ")")
            want.append(as_float(m.group(0)))
            last = m.end()
        pieces.append(literal(p[last:]))
    m = re.fullmatch("".join(pieces), text, re.S)
    if m is None:
        return False
    return all(abs(as_float(g) - w) <= tol * max(1.0, abs(w)) for g, w in zip(m.groups(), want))


def elided(line):
    return line.strip() in ("...", "[...]")


def lines_match(expected, actual, tol=None):
    """Expected lines (with ... wildcards) against actual lines; tol: the
    float32 directive's bound on numbers (None: exact)."""
    exp = [e.rstrip() for e in expected]
    act = [a.rstrip() for a in actual]
    memo = {}

    def m(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(exp):
            r = j == len(act)
        elif elided(exp[i]):
            r = any(m(i + 1, k) for k in range(j, len(act) + 1))
        else:
            r = j < len(act) and line_match(exp[i], act[j], tol) and m(i + 1, j + 1)
        memo[(i, j)] = r
        return r

    sys.setrecursionlimit(20000)
    return m(0, 0)


def diff(expected, actual):
    out = ["expected:"] + ["  | " + e for e in expected[:40]]
    out += ["got:"] + ["  | " + a for a in actual[:40]]
    return "\n".join(out)


class Doc:
    def __init__(self, path):
        self.path = path
        self.bless = []  # (0-based line of the first expected line, expected, actual)
        self.dir = tempfile.mkdtemp(prefix="sc_docs_")
        self.bin = os.path.join(self.dir, ".bin")
        os.makedirs(self.bin)
        os.makedirs(os.path.join(self.dir, "home"))
        os.symlink(SC, os.path.join(self.bin, "stagecraft"))
        os.symlink(SC, os.path.join(self.dir, "stagecraft"))
        for d in ("examples", "stdlib", "tests", "bench"):
            if os.path.isdir(os.path.join(ROOT, d)):
                os.symlink(os.path.join(ROOT, d), os.path.join(self.dir, d))
        self.env = dict(os.environ, PATH=self.bin + os.pathsep + os.environ.get("PATH", ""),
                        HOME=os.path.join(self.dir, "home"), NO_COLOR="1", TERM="dumb",
                        INPUTRC="/dev/null", LC_ALL="C.UTF-8")

    def where(self, line):
        return f"{os.path.basename(self.path)}:{line}"

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        ran["files"] += 1

    def sh(self, cmd, stdin=None, timeout=120):
        try:
            r = subprocess.run(["sh", "-c", cmd], cwd=self.dir, env=self.env, input=stdin,
                               capture_output=True, text=True, timeout=timeout)
            return r.returncode, r.stdout, r.stderr
        except subprocess.TimeoutExpired:
            return -1, "", f"(timed out after {timeout} s)"

    # ---- block kinds ----------------------------------------------------

    def commands(self, start, body, tol=None):
        i = 0
        while i < len(body):
            if not body[i].startswith("$ "):
                i += 1
                continue
            cmd, line = body[i][2:], start + i
            j = i + 1
            while j < len(body) and not body[j].startswith("$ "):
                j += 1
            expected, first = body[i + 1:j], start + i  # first: 0-based line of expected[0]
            i = j
            rc, out, err = self.sh(cmd)
            ran["commands"] += 1
            actual = (out + err).split("\n")
            if actual and actual[-1] == "":
                actual.pop()
            wants_error = any(e.startswith("stagecraft: error:") for e in expected)
            if not expected:
                report(rc == 0, self.where(line), f"$ {cmd}: exit {rc}", err[-800:])
                continue
            ok = lines_match(expected, actual, tol) and ((rc != 0) == wants_error)
            if not ok and BLESS and not any("[...]" in e or elided(e) for e in expected):
                # the output as it is now, for a person to review (git diff)
                self.bless.append((first, expected, actual))
            report(ok, self.where(line), f"$ {cmd} (exit {rc})", diff(expected, actual))

    def lua_annotated(self, start, body):
        expected = []
        for b in body:
            k = b.find("-->")
            if k >= 0:
                expected.append(b[k + 3:].strip() if b[k + 3:k + 4] in (" ", "") else b[k + 3:])
        rc, out, err = self.sh("stagecraft -", stdin="\n".join(body) + "\n")
        ran["lua"] += 1
        actual = out.split("\n")
        if actual and actual[-1] == "":
            actual.pop()
        actual = [a.strip() for a in actual]
        ok = rc == 0 and lines_match(expected, actual)
        report(ok, self.where(start), "lua block and its --> results",
               diff(expected, actual) + ("\nstderr: " + err[-600:] if err else ""))

    def lua_plain(self, start, body):
        rc, out, err = self.sh("stagecraft -", stdin="\n".join(body) + "\n")
        ran["lua"] += 1
        report(rc == 0, self.where(start), f"lua block fails (exit {rc})", err[-800:])

    def repl(self, start, body):
        ran["repl"] += 1
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(self.dir)
            os.execve(SC, [SC], self.env)
        ansi = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[>=]|\r")
        buf = [""]

        def read_until(pattern, timeout=20.0):
            end = time.time() + timeout
            while time.time() < end:
                text = ansi.sub("", buf[0])
                if re.search(pattern, text, re.S):
                    buf[0] = ""
                    return text
                r, _, _ = select.select([fd], [], [], 0.05)
                if r:
                    try:
                        data = os.read(fd, 65536)
                    except OSError:
                        break
                    if not data:
                        break
                    buf[0] += data.decode("utf-8", "replace")
            text = ansi.sub("", buf[0])
            buf[0] = ""
            return text + "<timeout>"

        read_until(r"\n> $")
        i = 0
        while i < len(body):
            line = body[i]
            if not (line.startswith("> ") or line.startswith(">> ") or line in (">", ">>")):
                i += 1
                continue
            typed = line[3:] if line.startswith(">> ") else line[2:]
            j = i + 1
            while j < len(body) and not (body[j].startswith(">") and not body[j].startswith(">>>")):
                j += 1
            expected = body[i + 1:j]
            where = self.where(start + i)
            if typed.endswith("<TAB><TAB>"):
                word = typed[:-len("<TAB><TAB>")]
                os.write(fd, (word + "\t\t").encode())
                got = read_until(r"\n> " + re.escape(word) + "$", 10)
                os.write(fd, b"\x15\n")
                read_until(r"\n> $")
                # In the order printed (readline's columns, read row by row):
                # the listing is what a user sees, not only the same names.
                want = " ".join(expected).split()
                have = [w for w in got.split() if w.startswith(word) and w != word
                        and w.isprintable()]
                report(want == have, where, f"completions of {word}", f"want {want}\nhave {have}")
                i = j
                continue
            os.write(fd, (typed + "\n").encode())
            if expected and expected[0] == "^C":  # the terminal echoes it too
                time.sleep(0.5)
                os.write(fd, b"\x03")
            nxt = body[j] if j < len(body) else "> "
            prompt = r"\n>> $" if nxt.startswith(">> ") else r"\n> $"
            got = read_until(prompt)
            lines = got.split("\n")[1:-1]  # the echo of the input, then the prompt
            report(lines_match(expected, lines), where, f"> {typed}", diff(expected, lines))
            i = j
        os.write(fd, b"\x04")
        read_until(r"$", 2)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass

    # ---- the document -----------------------------------------------------

    def run(self):
        text = open(self.path).read().split("\n")
        directive, n = None, 0
        while n < len(text):
            line = text[n]
            m = re.match(r"\s*<!-- doc-test: (\w+)\s*(.*?)\s*(-->)?\s*$", line)
            if m:
                kind, arg, closed = m.group(1), m.group(2), m.group(3)
                content = []
                if not closed:  # a hidden file: lines up to -->
                    n += 1
                    while n < len(text) and text[n].strip() != "-->":
                        content.append(text[n])
                        n += 1
                if kind == "file" and content:
                    self.write(arg, "\n".join(content) + "\n")
                elif kind == "run":
                    rc, out, err = self.sh(arg)
                    report(rc == 0, self.where(n + 1), f"set-up '{arg}'", err[-400:])
                else:
                    directive = (kind, arg)
                n += 1
                continue
            fence = re.match(r"^(```+)(\w*)\s*$", line)
            if not fence:
                if line.strip():
                    directive = directive if line.strip().startswith("<!--") else None
                n += 1
                continue
            ticks, lang, start = fence.group(1), fence.group(2), n + 2
            body = []
            n += 1
            while n < len(text) and text[n].rstrip() != ticks:
                body.append(text[n])
                n += 1
            n += 1
            self.block(lang, start, body, directive)
            directive = None

    def block(self, lang, start, body, directive):
        if directive and directive[0] == "skip":
            ran["skipped"] += 1
            return
        if directive and directive[0] == "unsanitized" and "asan" in os.environ.get("BUILD", ""):
            ran["skipped"] += 1  # sanitized: see the directive's note above
            return
        if directive and directive[0] == "slow" and os.environ.get("SC_TIER") == "check":
            ran["skipped"] += 1  # make test runs it
            return
        if directive and directive[0] == "file":
            self.write(directive[1], "\n".join(body) + "\n")
            return
        named = re.match(r"--\s*([\w./-]+\.lua)\b", body[0]) if body and lang == "lua" else None
        if named:
            self.write(named.group(1), "\n".join(body) + "\n")
            return
        tol = None
        if directive and directive[0] == "float32":
            k = re.match(r"K=(\d+)\b", directive[1])
            if not k:
                report(False, self.where(start), "float32 directive without K=N (the longest sum)")
                return
            ku = int(k.group(1)) * 2.0 ** -24
            tol = 2 * ku / (1 - ku)
        if any(b.startswith("$ ") for b in body):
            self.commands(start, body, tol)
        elif body and body[0].startswith("> "):
            self.repl(start, body)
        elif lang == "lua" and any("-->" in b for b in body):
            self.lua_annotated(start, body)
        elif lang == "lua":
            self.lua_plain(start, body)


# ---- references ---------------------------------------------------------
#
# A part of the docs is cited by file and anchor (SPEC.md#references):
# `docs/run.md#check` anywhere (from the root), or a markdown link in a .md
# file (relative to it). Every tracked text file is scanned: a cited file
# must exist and a cited anchor must be a heading of it (GitHub's slug) or an
# explicit <a id>; a numbered reference to the old SPEC.md (the section sign
# and a number, `SPEC.md, "Title"`) fails, as does a .md file named that does
# not exist (design.md was cited for years). tools/docrefs.py converts the
# numbered ones.

SECTION = re.compile("\u00a7" + r"\s?\d")
OLD_TITLE = re.compile(r'SPEC\.md,? "')
PLAIN = re.compile(r"(?<![\w./-])((?:\.\./)*(?:[\w.-]+/)*[\w-]+\.md)(?!\w)(?:#([\w-]+))?")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# the checker and the converter name the forms they look for: not scanned
SELF = {"tests/py/docs.py", "tools/docrefs.py"}
DOCS = os.path.join(ROOT, "docs")  # a page may be named alone: guide.md
_anchors = {}


def slug(text):
    """GitHub's anchor of a heading: lower case; characters other than
    letters, digits, '-', '_' and spaces dropped; each space a '-'."""
    s = re.sub(r"<[^>]*>", "", text).strip().lower()
    s = "".join(c for c in s if c.isalnum() or c in "-_ ")
    return s.replace(" ", "-")


def anchors(path):
    """The anchors of a markdown file (headings outside code, <a id>), and
    its headings that are not unique; None when there is no such file."""
    if path not in _anchors:
        if not os.path.isfile(path):
            _anchors[path] = None
            return None
        seen, dups, fence = set(), [], False
        for line in open(path, encoding="utf-8"):
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            m = re.match(r"#{1,6} (.*)", line)
            if m:
                a = slug(m.group(1))
                if a in seen:
                    dups.append(m.group(1).strip())
                seen.add(a)
            seen.update(re.findall(r"""<a (?:id|name)=["']([^"']+)["']""", line))
        _anchors[path] = (seen, dups)
    return _anchors[path]


def resolve(path, anchor):
    """None when path (and anchor) exist, else what is wrong."""
    if not os.path.exists(path):
        return "no such file"
    if anchor and path.endswith(".md"):
        if anchor not in anchors(path)[0]:
            return f"no heading '#{anchor}' in it"
    return None


def check_text(rel, text):
    """The broken references of one file: [(line, message)]."""
    out = []
    here = os.path.dirname(os.path.join(ROOT, rel))
    md, fence = rel.endswith(".md"), False
    for n, line in enumerate(text.split("\n"), 1):
        # what no pattern below can match (none without one of these; a
        # fence opens or closes with ```): the most of every file, skipped
        if "```" not in line and ".md" not in line and "\u00a7" not in line and "](" not in line:
            continue
        if line.lstrip().startswith("```"):
            fence = not fence
        if SECTION.search(line):
            out.append((n, "a numbered section reference: cite a page and its anchor, "
                           "docs/run.md#check (tools/docrefs.py converts it)"))
        if OLD_TITLE.search(line):
            out.append((n, "an old section title after SPEC.md: cite a page and its anchor"))
        if md and not fence:  # links (not those shown in code spans), then the rest
            for m in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                target = m.group(1)
                if re.match(r"[a-z]+:", target):
                    continue
                page, _, anchor = target.partition("#")
                path = os.path.normpath(os.path.join(here, page)) if page else os.path.join(ROOT, rel)
                why = resolve(path, anchor)
                if why:
                    out.append((n, f"link {target}: {why}"))
            line = LINK.sub("]", line)
        for m in PLAIN.finditer(line):  # from the root; a page alone; beside the file
            name, anchor = m.group(1), m.group(2)
            places = [os.path.join(d, name) for d in (ROOT, DOCS, here)]
            path = next((q for q in places if os.path.exists(q)), None)
            why = resolve(path, anchor) if path else "no such file in the repository"
            if why:
                out.append((n, f"{m.group(0)}: {why}"))
    return out


def tracked():
    try:
        r = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True,
                           check=True)
        names = [x for x in r.stdout.split("\n") if x]
    except (OSError, subprocess.CalledProcessError):  # not a checkout: the tree
        names = []
        for d, subdirs, files in os.walk(ROOT):
            subdirs[:] = [s for s in subdirs if not s.startswith((".", "build", "__pycache__"))]
            names += [os.path.relpath(os.path.join(d, f), ROOT) for f in files]
    return names


def check_references():
    # the check must be able to fail: made-up files with broken references
    bad = check_text("x.c", "docs/run.md#no-such-heading, docs/nothing.md, design.md, "
                     "SPEC.md \u00a717.4") + check_text("docs/x.md", "[a](run.md#nope) [b](no.md)")
    report(len(bad) == 6, "docs.py", "the reference check misses broken references", str(bad))
    files = refs = 0
    for rel in tracked():
        path = os.path.join(ROOT, rel)
        if rel in SELF:
            continue
        try:
            if os.path.getsize(path) > 4 << 20:
                continue
            text = open(path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
        if "\0" in text:
            continue
        files += 1
        # (the lines that name a .md file: a name never spans lines)
        plain = len(PLAIN.findall("\n".join(x for x in text.split("\n") if ".md" in x))) if ".md" in text else 0
        refs += plain + (len(LINK.findall(text)) if rel.endswith(".md") else 0)
        problems = check_text(rel, text)
        if rel.endswith(".md"):
            dups = anchors(path)[1]
            if dups:
                problems.append((1, f"headings that are not unique (their anchors clash): {dups}"))
        for n, what in problems:
            report(False, f"{rel}:{n}", what)
        if not problems and (plain or rel.endswith(".md") and LINK.search(text)):
            report(True, rel, "references")
    print(f"(checked {refs} references in {files} files)")


check_references()
for f in FILES:
    path = f if os.path.isabs(f) else os.path.join(ROOT, f)
    doc = Doc(path)
    try:
        doc.run()
    finally:
        shutil.rmtree(doc.dir, ignore_errors=True)
    if doc.bless:  # --bless: rewrite the outputs that differ, last first
        text = open(path).read().split("\n")
        for first, expected, actual in sorted(doc.bless, reverse=True):
            assert text[first:first + len(expected)] == expected
            text[first:first + len(expected)] = actual
        open(path, "w").write("\n".join(text))
        print(f"blessed {len(doc.bless)} outputs in {path}: review them with git diff")
print(f"(ran {ran['commands']} commands, {ran['repl']} REPL transcripts, {ran['lua']} Lua blocks; "
      f"{ran['files']} files written, {ran['skipped']} blocks skipped by a doc-test: skip, or slow under make check)")
print(f"docs: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
