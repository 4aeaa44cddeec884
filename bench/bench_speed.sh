#!/bin/sh
# bench_speed.sh — issue 34's figures as ratios taken in one run: each case
# is timed for two builds side by side (BEFORE, AFTER: stagecraft binaries;
# AFTER alone when BEFORE is not given), in alternation, the median of
# ROUNDS runs of the process's CPU time (user + system, all its threads:
# wall time is noise on a shared machine).
#   sh bench/bench_speed.sh [PART...]        PART: vocab blas export mpi all
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

if want blas; then
  echo "== 2. BLAS threads: the commands that run no model (CPU time over all threads)"
  row "sim zb-h1 p=64 m=1024" sim zb-h1 -D p=64 -D m=1024
  row "check interleaved p=32 m=256 v=2" check interleaved -D p=32 -D m=256 -D v=2
  row "export zb-v p=16 m=1024 torch-csv-comms" export zb-v -D p=16 -D m=1024 --format torch-csv-comms -o /dev/null
  row "sim zb-h1 p=4 m=8 (process start)" sim zb-h1 -D p=4 -D m=8
  row "list" list
  row "run 1f1b p=2 m=8 (hidden 256, seq 64)" run 1f1b -D p=2 -D m=8 -D hidden=256 -D seq=64
fi

if want export; then
  echo "== 3. export against sim (zb-v p=16 m=4096; the goal: at most about 1.3x)"
  E="zb-v -D p=16 -D m=4096"
  for f in torch-csv torch-csv-comms json trace svg; do
    # shellcheck disable=SC2086
    row "export $f" export $E --format $f -o /dev/null
    # shellcheck disable=SC2086
    ratio "  export $f over sim, after" export $E --format $f -o /dev/null -- sim $E
    if [ -n "${BEFORE:-}" ]; then
      # shellcheck disable=SC2086
      AFTER=$BEFORE ratio "  export $f over sim, before" export $E --format $f -o /dev/null -- sim $E
    fi
  done
fi

# step BIN LAUNCH...: the median step_time_s of ROUNDS runs of `run` (1f1b,
# p=2, m=256, a tiny model: passes of a few µs, so the waits dominate).
step() {
  bin=$1; shift
  python3 - "$ROUNDS" "$@" "$bin" run 1f1b -D p=2 -D m=256 -D hidden=16 -D seq=4 -D layers=2 \
    --warmup 2 --json <<'PY'
import json, subprocess, sys, statistics
n = int(sys.argv[1]); cmd = sys.argv[2:]
ts = []
for _ in range(n):
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if l.startswith("{")][0]
    j = json.loads(line)
    ts.append(j["step_time_s"] / j["instructions"] * j["devices"])
print(f"{statistics.median(ts) * 1e6:.2f}")
PY
}

if want mpi && command -v mpirun >/dev/null 2>&1; then
  echo "== 6. MPI transport: wall time per instruction of one device (1f1b p=2 m=256, tiny model)"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  MPI="mpirun -np 2 --oversubscribe"
  for who in ${BEFORE:+BEFORE} AFTER; do
    eval bin=\$$who
    t=$(step "$bin"); m=$(step "$bin" $MPI)
    printf '%-6s threads %8s us  mpi %8s us  mpi/threads %6.2fx\n' "$who" "$t" "$m" \
      "$(python3 -c "print($m / max($t, 1e-9))")"
  done
fi
