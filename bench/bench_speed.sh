#!/bin/sh
# bench_speed.sh — issue 34's figures as ratios taken in one run: each case
# is timed for two builds side by side (BEFORE, AFTER: stagecraft binaries;
# AFTER alone when BEFORE is not given), in alternation, the median of
# ROUNDS runs of the process's CPU time (user + system, all its threads:
# wall time is noise on a shared machine).
#   sh bench/bench_speed.sh [PART...]        PART: vocab blas export blocks all
# Environment: BEFORE, AFTER (default ./stagecraft), ROUNDS (default 5).
AFTER=${AFTER:-./stagecraft}
ROUNDS=${ROUNDS:-5}
parts=${*:-all}

# cpu CMD...: the median CPU seconds of ROUNDS runs of CMD (output dropped).
cpu() {
  python3 - "$ROUNDS" "$@" <<'PY'
import os, subprocess, sys, statistics
n = int(sys.argv[1]); cmd = sys.argv[2:]
ts = []
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1); os.dup2(fd, 2)
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, st, ru = os.wait4(pid, 0)
    ts.append(ru.ru_utime + ru.ru_stime)
print(f"{statistics.median(ts):.4f}")
PY
}

# row LABEL ARGS...: one case for BEFORE and AFTER, and their ratio.
row() {
  label=$1; shift
  a=$(cpu "$AFTER" "$@")
  if [ -n "${BEFORE:-}" ]; then
    b=$(cpu "$BEFORE" "$@")
    printf '%-58s before %8.3f s  after %8.3f s  before/after %6.2fx\n' "$label" "$b" "$a" \
      "$(python3 -c "print($b / max($a, 1e-9))")"
  else
    printf '%-58s %8.3f s\n' "$label" "$a"
  fi
}

# ratio LABEL NUM_ARGS -- DEN_ARGS: AFTER's CPU time of one command over another's.
ratio() {
  label=$1; shift
  num=""; while [ "$1" != "--" ]; do num="$num $1"; shift; done; shift
  # shellcheck disable=SC2086
  a=$(cpu "$AFTER" $num); b=$(cpu "$AFTER" "$@")
  printf '%-58s %8.3f s / %8.3f s = %6.2fx\n' "$label" "$a" "$b" "$(python3 -c "print($a / max($b, 1e-9))")"
}

want() { case " $parts " in *" $1 "*|*" all "*) return 0;; esac; return 1; }

if want vocab; then
  echo "== 1. vocabulary placement (zb-h1, m=512, layers 1024, hidden 1024, seq 1024, V 65536)"
  M="-D m=512 -D layers=1024 -D hidden=1024 -D seq=1024 -D batch=1 -D vocab=65536"
  for p in 64 128 256; do
    # shellcheck disable=SC2086
    row "sim zb-h1 p=$p vocab-1" sim zb-h1 -D p=$p $M -D vocab_par=vocab-1
    # shellcheck disable=SC2086
    ratio "  vocab-1 over the plain program, p=$p" sim zb-h1 -D p=$p $M -D vocab_par=vocab-1 -- \
      sim zb-h1 -D p=$p $M
  done
fi
