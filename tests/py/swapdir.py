#!/usr/bin/env python3
"""swapdir.py — a local actor that races stagecraft's writes (tests/sandbox.sh).

    python3 tests/py/swapdir.py DIR OTHER SECONDS -- COMMAND...

Runs COMMAND and, until it exits (or SECONDS pass, or 200000 swaps), keeps
swapping the folder DIR for a symbolic link to OTHER and back, as another
user sharing the folder could: DIR renamed aside, a link DIR -> OTHER put
in its place, then the link removed and the folder renamed back. DIR is
the real folder again when this returns. Exits with COMMAND's exit code
(124 when it was killed at SECONDS), and prints "swaps: N" on stderr.
The caller asserts what matters: that nothing landed in OTHER and that no
temporary file is left anywhere.
"""
import os
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 6 or sys.argv[4] != "--":
        sys.stderr.write("usage: swapdir.py DIR OTHER SECONDS -- COMMAND...\n")
        return 2
    folder, other, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    cmd = sys.argv[5:]
    held = folder + ".held"
    proc = subprocess.Popen(cmd)
    end = time.monotonic() + seconds
    swaps = 0
    # The grant is resolved at start (the user's own path): the swaps begin
    # once COMMAND has written its first file into DIR (a temporary file
    # or a folder does not count).
    def written():
        return [n for n in os.listdir(folder)
                if ".tmp" not in n and os.path.isfile(os.path.join(folder, n))]
    while proc.poll() is None and time.monotonic() < end and not written():
        time.sleep(0.001)
    try:
        while proc.poll() is None and time.monotonic() < end and swaps < 200000:
            os.rename(folder, held)        # the folder aside
            os.symlink(os.path.abspath(other), folder)  # DIR -> OTHER
            os.unlink(folder)
            os.rename(held, folder)        # the folder back
            swaps += 1
            time.sleep(0.0002)             # a write may start in either state
    finally:
        if os.path.islink(folder):
            os.unlink(folder)
        if os.path.isdir(held):
            os.rename(held, folder)
    try:
        rc = proc.wait(timeout=max(0.0, end - time.monotonic()) + 1)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        rc = 124
    sys.stderr.write("swaps: %d\n" % swaps)
    return rc


if __name__ == "__main__":
    sys.exit(main())
