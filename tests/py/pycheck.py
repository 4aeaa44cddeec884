"""pycheck.py --batch LIST — python checks of the shell suites, many in one
process (a python3 start costs more than most checks; tests/lib.sh's `later`
and `verdicts`, the suites' `py`).

LIST has a line "SCRIPT<TAB>LABEL<TAB>ARGS" per check (ARGS split at
spaces): each SCRIPT runs as `python3 SCRIPT ARGS` would, as __main__ in
globals of its own, in order, and passes when it ends without an exception
(or with sys.exit(0)). Prints "ok LABEL" or "FAIL LABEL: the exception's
last line" per line, in order.
"""
import sys
import traceback


def one(path, args):
    code = compile(open(path, encoding="utf-8").read(), path, "exec")
    sys.argv = [path] + args
    try:
        exec(code, {"__name__": "__main__", "__file__": path})
    except SystemExit as e:
        if e.code not in (None, 0):
            return "exit %s" % (e.code,)
    except BaseException:  # the check's own message, as python3 -c prints it last
        return traceback.format_exc().strip().split("\n")[-1][:400]
    return None


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "--batch":
        sys.exit("usage: pycheck.py --batch LIST")
    for line in open(sys.argv[2], encoding="utf-8"):
        path, label, args = (line.rstrip("\n").split("\t") + ["", ""])[:3]
        why = one(path, args.split())
        print("ok " + label if why is None else "FAIL %s: %s" % (label, why), flush=True)


main()
