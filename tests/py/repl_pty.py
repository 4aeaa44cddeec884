"""repl_pty.py STAGECRAFT — drives the REPL through a pseudo-terminal.

Checks: an expression prints its value; `sc.` + TAB lists names; fields and
methods of a Program complete; an incomplete chunk continues after ">> ";
Ctrl-C stops `while true do end` and the next line still works; Ctrl-C
drops a half-typed line; Programs print their summary; :help; errors keep
the REPL alive; Ctrl-D quits with status 0; the history file is written.
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
send("x = 5\n")
read_until(r"\n> $")
send("x\n")
out = read_until(r"\n> $")
check("\n5\n" in out, "statements run and globals persist", out)

send(":help\n")
out = read_until(r"\n> $")
check("TOPIC" in out and "recipes" in out and "block" in out, ":help lists topics", out)
send(":help block\n")
out = read_until(r"\n> $")
check("interval" in out, ":help block explains blocks", out)

send("\x04")
out = read_until(r"$", 2)
_, status = os.waitpid(pid, 0)
check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "Ctrl-D quits with status 0", str(status))

hist = os.path.join(home, ".stagecraft_history")
text = open(hist).read() if os.path.exists(hist) else ""
check("1 + 2" in text and "twice(21)" in text and "return 2 * x" in text,
      "history written to $HOME/.stagecraft_history", text)
shutil.rmtree(home)
print(f"repl: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
