"""repl_pty.py STAGECRAFT — drives the REPL through a pseudo-terminal.

Checks: an expression prints its value; `sc.` + TAB lists names; fields and
methods of a Program complete; an incomplete chunk continues after ">> ";
Ctrl-C stops `while true do end` and the next line still works; Ctrl-C
drops a half-typed line; Programs print their summary; tables print nested,
sorted and bounded; p:svg and p:export; :help from one source (the stdlib,
the metatables, --help; the fields :help program names are those of
lang/lua/fields.h); errors keep the REPL alive, a typo is one line (a
traceback only through a function typed at the prompt); Ctrl-D quits with
status 0; the history file is written, keeps a multi-line chunk as one entry
across a restart and its last 1000 entries whole.
Prints "repl: N passed, N failed"."""
import os
import pty
import re
import select
import shutil
import sys
import tempfile
import time

SC = os.path.abspath(sys.argv[1])
home = tempfile.mkdtemp()
passed = failed = 0
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[>=]|\r")


def check(cond, what, got=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}\n  got: {got[-600:]!r}", file=sys.stderr)


pid, fd = pty.fork()
if pid == 0:
    env = dict(os.environ, HOME=home, TERM="dumb", NO_COLOR="1", INPUTRC="/dev/null")
    os.execve(SC, [SC], env)

buf = ""


def read_until(pattern, timeout=10.0):
    """Reads output until the regex matches the text seen since the last call."""
    global buf
    end = time.time() + timeout
    while time.time() < end:
        text = ANSI.sub("", buf)
        m = re.search(pattern, text, re.S)
        if m:
            buf = ""
            return text
        r, _, _ = select.select([fd], [], [], max(0.0, end - time.time()))
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            buf += data.decode("utf-8", "replace")
    text = ANSI.sub("", buf)
    buf = ""
    return text + "<timeout>"


def send(s):
    os.write(fd, s.encode())


out = read_until(r"\n> $")
check("the module is 'sc'" in out, "banner and prompt", out)

send("1 + 2\n")
out = read_until(r"\n> $")
check(re.search(r"\n3\n", out), "expression prints its value", out)

send("sc.\t\t")
out = read_until(r"program.*> sc\.$|> sc\.$", 5)
out += read_until(r"> sc\.$", 2)
check("program" in out and "load" in out and "params" in out, "sc. + TAB lists names", out)
send("\x15")  # drop the line (unix-line-discard)
send("sc.isprog\t")
out = read_until(r"isprogram", 5)
check("sc.isprogram" in out, "sc.isprog + TAB completes", out)
send("\x15\n")
read_until(r"> $")

send("function twice(x)\n")
out = read_until(r">> $")
check(out.endswith(">> "), "incomplete chunk continues with '>> '", out)
send("  return 2 * x\n")
read_until(r">> $")
send("end\n")
out = read_until(r"\n> $")
check("<eof>" not in out and "error" not in out, "multi-line chunk runs", out)
send("twice(21)\n")
out = read_until(r"\n> $")
check("\n42\n" in out, "function defined over three lines works", out)

send("while true do end\n")
time.sleep(0.5)
send("\x03")
out = read_until(r"\n> $", 10)
check("interrupted" in out, "Ctrl-C interrupts a running evaluation", out)
send("40 + 2\n")
out = read_until(r"\n> $")
check("\n42\n" in out, "the next line works after Ctrl-C", out)

send("this is half a line")
time.sleep(0.2)
send("\x03")
read_until(r"\n> $", 5)
send("10 * 10\n")
out = read_until(r"\n> $")
check("\n100\n" in out and "half" not in out.split("10 * 10")[-1], "Ctrl-C drops a half-typed line", out)

# Printing a value runs its __tostring: Ctrl-C stops one that loops (and
# the limits do, below), as they stop the line itself.
send("setmetatable({}, {__tostring = function() while true do end end})\n")
time.sleep(0.5)
send("\x03")
out = read_until(r"\n> $", 10)
check("interrupted" in out, "Ctrl-C interrupts a __tostring that loops while printing", out)
send("40 + 2\n")
out = read_until(r"\n> $")
check("\n42\n" in out, "the next line works after a printing Ctrl-C", out)

send('p = sc.load("1f1b", {p = 2, m = 3})\n')
read_until(r"\n> $")
send("p\n")
out = read_until(r"\n> $")
check("Program(2 devices, 2 stages, 3 microbatches" in out and "d1  |" in out
      and "bubble 25.00%" in out, "a Program prints its summary with the timeline", out)
send("p.microb\t")
out = read_until(r"microbatches", 5)
send("\n")
out += read_until(r"\n> $")
check("p.microbatches" in out and "\n3\n" in out, "p.<field> + TAB completes a Program field", out)
send("p:time\t")
out = read_until(r"timeline", 5)
send("(30)\n")
out += read_until(r"\n> $")
check("p:timeline" in out and "makespan 12" in out, "p:<method> + TAB completes a method", out)

send("nosuch.field\n")
out = read_until(r"\n> $")
check("attempt to index a nil value" in out, "errors are reported", out)
check("traceback" not in out, "an error at the prompt is one line, no traceback", out)
send("p:simm()\n")
out = read_until(r"\n> $")
check("did you mean 'sim'?" in out and "traceback" not in out, "a typo is one line", out)
send("function bad(t) local v = t.x; return v end\n")
read_until(r"\n> $")
send("bad(nil)\n")
out = read_until(r"\n> $")
check("stack traceback" in out and "in function 'bad'" in out,
      "an error inside a function typed at the prompt keeps its traceback", out)
send("x = 5\n")
read_until(r"\n> $")
send("x\n")
out = read_until(r"\n> $")
check("\n5\n" in out, "statements run and globals persist", out)

send(":help\n")
out = read_until(r"\n> $")
check("TOPIC" in out and "recipes" in out and "block" in out and "run" in out,
      ":help lists topics", out)
send(":help block\n")
out = read_until(r"\n> $")
check("interval" in out and "b:lifespans()" in out and "sc.block_search" in out,
      ":help block explains blocks and their methods", out)
send(":help plan\n")
out = read_until(r"\n> $")
check("sc.compare{" in out and "sc.plan{" in out and "peak_memory_max" in out,
      ":help plan explains sc.compare and sc.plan", out)
# what :help plan names is what sc.plan returns
send("r = sc.plan{p = 4, m = 8, cap = 4, time_limit = 0}; c = r.candidates[r.pick]\n")
read_until(r"\n> $", 30)
send("c.recipe ~= nil, c.knobs ~= nil, c.makespan > 0, c.peak_memory_max <= 4\n")
out = read_until(r"\n> $")
check("true\ttrue\ttrue\ttrue" in out, "the pick's fields that :help plan names", out)

# :help comes from one source: the stdlib, the metatables, the usage text.
import subprocess
recipes = subprocess.run([SC, "list"], capture_output=True, text=True).stdout.split("\n")
recipes = [line.split()[0] for line in recipes if line.strip()]
send(":help recipes\n")
out = read_until(r"\n> $")
missing = [r for r in recipes if not re.search(r"\n  " + re.escape(r) + r" +\S", out)]
check(len(recipes) >= 13 and not missing, ":help recipes lists every stdlib recipe", str(missing))
usage = subprocess.run([SC, "--help"], capture_output=True, text=True).stdout
send(":help commands\n")
out = read_until(r"\n> $")
check(usage.strip() in out and "stagecraft run" in out, ":help commands is --help's text", out)
send(":help run\n")
out = read_until(r"\n> $")
check("--check" in out and "hidden" in out, ":help run explains run", out)
send('for k in pairs(getmetatable(p).__methods) do io.write(k, " ") end print()\n')
names = read_until(r"\n> $").split("\n")[1].split()
send(":help program\n")
out = read_until(r"\n> $")
missing = [k for k in names if "p:" + k + "()" not in out]
check(len(names) >= 10 and not missing and "p:svg()" in out, ":help program lists every method",
      str(missing) + out)
# The fields its text names are fields of sc.program (lang/lua/fields.h).
fields = subprocess.run([SC, "-"], input="print(table.concat(sc._fields('program'), ' '), "
                        "table.concat(sc._fields('auto'), ' '))\n", capture_output=True,
                        text=True).stdout.split()
text = out.split("(an unknown field")[0]
named = set(re.findall(r"\b(\w+) = ", text))
named |= {w for m in re.findall(r"\[, ([\w/]+)\]", text) for w in m.split("/")}
check(len(named) >= 15 and named <= set(fields),
      ":help program names fields of sc.program only", str(sorted(named - set(fields))))

# Tables print readably: nested, keys sorted, bounded.
send("p:sim()\n")
out = read_until(r"\n> $")
check("table: 0x" not in out and "  bubble_rate = 0.25,\n  busy = {9.0, 9.0}," in out
      and out.index("makespan") < out.index("peak_memory") < out.index("start ="),
      "p:sim() prints as a sorted, nested table", out)
send("sc.block{p = 2, interval = 3, F = {0, 1}, B = {4, 2}, W = {5, 3}}:lifespans()\n")
out = read_until(r"\n> $")
check('{b_end = 5.0, device = 0, ["end"] = 6.0, length = 6.0, stage = 0, start = 0.0},' in out,
      "b:lifespans() prints its keyed records", out)
send("t = {} for i = 1, 5000 do t[i] = {i} end\n")
read_until(r"\n> $")
send("t\n")
out = read_until(r"\n> $")
check("... (4960 more)" in out and out.count("\n") < 60, "a large table is bounded", out[-300:])
send("c = {x = 1}; c.me = c\n")
read_until(r"\n> $")
send("c\n")
out = read_until(r"\n> $")
check("me = <cycle>" in out, "a cycle prints as <cycle>", out)

# Drawing a program built here: p:svg(file), p:export(format).
svg = os.path.join(home, "p.svg")
send(f'p:svg("{svg}")\n')
out = read_until(r"\n> $")
check("true" in out and os.path.exists(svg) and open(svg).read().startswith("<?xml"),
      "p:svg(file) writes the picture", out)
send('p:export("torch-csv")\n')
out = read_until(r"\n> $")
check("0F0,0F1" in out, "p:export(format) returns the text", out)

send("\x04")
out = read_until(r"$", 2)
_, status = os.waitpid(pid, 0)
check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "Ctrl-D quits with status 0", str(status))

hist = os.path.join(home, ".stagecraft_history")
text = open(hist).read() if os.path.exists(hist) else ""
check("1 + 2" in text and "twice(21)" in text and "return 2 * x" in text,
      "history written to $HOME/.stagecraft_history", text)


def session(lines, wait=r"\n> $"):
    """A new REPL with the same $HOME: sends the lines, returns the output."""
    global pid, fd, buf
    pid, fd = pty.fork()
    if pid == 0:
        env = dict(os.environ, HOME=home, TERM="dumb", NO_COLOR="1", INPUTRC="/dev/null")
        os.execve(SC, [SC], env)
    buf = ""
    text = read_until(r"\n> $")
    for line in lines:
        send(line)
        text += read_until(wait)
    send("\x04")
    read_until(r"$", 2)
    os.waitpid(pid, 0)
    return text


# After a restart, a multi-line chunk comes back as one entry: one Ctrl-P
# recalls the whole function, and Enter defines it again.
session(["function thrice(x)\n", "  return 3 * x\n", "end\n"], r"(\n> |>> )$")
out = session(["\x10\n", "thrice(3)\n"])
check("\n9\n" in out, "a multi-line chunk is one history entry after a restart", out)
# The file keeps its last 1000 entries, whole.
with open(hist, "w") as f:
    for i in range(1100):
        f.write(f"#{1700000000 + i}\nfunction f{i}()\n  return {i}\nend\n")
session(["1 + 1\n"])
text = open(hist).read()
entries = text.split("\n#")
check(len(entries) == 1000 and "f1099()" in text and "f100()" not in text and
      all(e.count("\n") == 3 for e in entries[1:-1]), "history keeps its last 1000 whole entries",
      str(len(entries)) + text[:200])
# The limits hold for one line of the REPL, its printing included.
pid, fd = pty.fork()
if pid == 0:
    env = dict(os.environ, HOME=home, TERM="dumb", NO_COLOR="1", INPUTRC="/dev/null")
    os.execve(SC, [SC, "--max-steps", "1000000"], env)
buf = ""
read_until(r"\n> $")
send("while true do end\n")
out = read_until(r"\n> $", 20)
check("step limit exceeded" in out, "--max-steps stops a line of the REPL", out)
send("setmetatable({}, {__tostring = function() while true do end end})\n")
out = read_until(r"\n> $", 20)
check("step limit exceeded" in out, "--max-steps stops a __tostring while printing", out)
send("print(pcall(function() while true do end end))\n")
out = read_until(r"\n> $", 20)
check("step limit exceeded" in out and "true" not in out.split("end))")[-1],
      "a limit caught by pcall still ends the line", out)
send("1 + 1\n")
out = read_until(r"\n> $")
check("\n2\n" in out, "the next line works after a limit", out)
send("\x04")
read_until(r"$", 2)
os.waitpid(pid, 0)
shutil.rmtree(home)
print(f"repl: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
