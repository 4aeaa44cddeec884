#!/bin/sh
# bench_speed.sh — issue 34's figures as ratios taken in one run: each case
# is timed for two builds side by side (BEFORE, AFTER: stagecraft binaries;
# AFTER alone when BEFORE is not given), in alternation, the median of
# ROUNDS runs of the process's CPU time (user + system, all its threads:
# wall time is noise on a shared machine).
#   sh bench/bench_speed.sh [PART...]        PART: vocab blas export auto mpi local all
# Environment: BEFORE, AFTER (default ./stagecraft), ROUNDS (default 5).
AFTER=${AFTER:-./stagecraft}
ROUNDS=${ROUNDS:-5}
parts=${*:-all}

# cpu CMD...: the median CPU seconds of ROUNDS runs of CMD (output dropped).
cpu() { python3 "$(dirname "$0")/cputime.py" "$ROUNDS" "$@"; }

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

if want auto; then
  echo "== 5. the automatic schedulers as a process (p=64, m=512, the heuristic only; the authors: 20 us a pass)"
  R="-D tf=29850 -D tb=29767 -D tw=18868 -D tcomm=466"
  A="-D p=64 -D m=512 -D time_limit=0"
  # shellcheck disable=SC2086
  row "sim zb-auto realistic, mem = p (authors 1.97 s)" sim zb-auto $A $R
  # shellcheck disable=SC2086
  row "sim zb-auto realistic, mem = 2p" sim zb-auto $A $R -D mem=128
  # shellcheck disable=SC2086
  row "sim zb-auto unit costs" sim zb-auto $A
  rounds=$ROUNDS; ROUNDS=${AUTO_ROUNDS:-1} # seconds a run: AUTO_ROUNDS runs
  # shellcheck disable=SC2086
  row "sim zbv-auto realistic, mem = p (authors 3.93 s)" sim zbv-auto $A $R
  ROUNDS=$rounds
  # shellcheck disable=SC2086
  row "sim zbv-auto unit costs" sim zbv-auto $A
fi

# mpi_steps BIN...: for each build, the median wall time per instruction of
# one device of ROUNDS runs of `run` (1f1b, p=2, m=256, a tiny model: passes
# of a few µs, so the waits dominate), on threads, on 2 MPI ranks with their
# doorbells (runtime/transport/mpi_bell.h) and without them
# (STAGECRAFT_MPI_BELLS=0: backoff.h's sleeps), the runs of all builds in
# alternation (the load drifts). FIFO=1: every run under SCHED_FIFO (chrt -f
# 50) and the ranks bound to cores, so that other processes' load does not
# count.
mpi_steps() {
  python3 - "$ROUNDS" "${FIFO:-0}" "$@" <<'PY'
import json, os, subprocess, sys, statistics
n, fifo, bins = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3:]
run = ["run", "1f1b", "-D", "p=2", "-D", "m=256", "-D", "hidden=16", "-D", "seq=4",
       "-D", "layers=2", "--warmup", "2", "--json"]
mpi = ["mpirun", "-np", "2", "--oversubscribe"] + (["--bind-to", "core"] if fifo else [])
pre = ["chrt", "-f", "50"] if fifo else []
ways = ("threads", "mpi", "mpi, no bells")
ts = {(b, w): [] for b in bins for w in ways}
for _ in range(n):
    for b in bins:
        for w in ways:
            env = dict(os.environ, STAGECRAFT_MPI_BELLS="0" if w == "mpi, no bells" else "1")
            out = subprocess.run(pre + (mpi if w != "threads" else []) + [b] + run,
                                 capture_output=True, text=True, env=env).stdout
            j = json.loads([l for l in out.splitlines() if l.startswith("{")][0])
            ts[b, w].append(j["step_time_s"] / j["instructions"] * j["devices"] * 1e6)
for b in bins:
    t, m, q = (statistics.median(ts[b, w]) for w in ways)
    print(f"{b:<28} threads {t:8.2f} us  mpi {m:8.2f} us ({m / t:5.2f}x)  "
          f"mpi without doorbells {q:8.2f} us ({q / t:5.2f}x)")
PY
}

# The mechanism alone: how long a 20 µs nanosleep lasts under the kernel's
# default timer slack and under the 1 µs that backoff.h sets (median of 2000).
sleeps() {
  python3 - <<'PY'
import ctypes, statistics, time
libc = ctypes.CDLL(None, use_errno=True)
class ts(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
req = ts(0, 20000)
def med():
    d = []
    for _ in range(2000):
        t = time.perf_counter_ns(); libc.nanosleep(ctypes.byref(req), None)
        d.append(time.perf_counter_ns() - t)
    return statistics.median(d) / 1e3
a = med(); libc.prctl(29, 1000, 0, 0, 0); b = med()  # 29: PR_SET_TIMERSLACK
print(f"nanosleep(20 us): default slack {a:.1f} us, 1 us slack {b:.1f} us, ratio {a / b:.2f}x")
PY
}

if want mpi && command -v mpirun >/dev/null 2>&1; then
  echo "== 6. MPI transport: wall time per instruction of one device (1f1b p=2 m=256, tiny model)"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  sleeps
  mpi_steps ${BEFORE:+"$BEFORE"} "$AFTER"
fi

# csw BIN...: voluntary context switches per instruction of `run` on threads
# (1f1b, m=64, a tiny model), p = 2, 4, 8, 16, the median of ROUNDS runs, the
# builds in alternation. A device that blocks in the local transport's wait
# switches once; one woken for a match that does not concern it, twice more.
csw() {
  python3 - "$ROUNDS" "$@" <<'PY'
import json, os, statistics, subprocess, sys
n = int(sys.argv[1]); bins = sys.argv[2:]
r = {}
for p in (2, 4, 8, 16):
    for _ in range(n):
        for b in bins:
            rd, wr = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.dup2(wr, 1); os.close(rd)
                fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 2)
                os.execv(b, [b, "run", "1f1b", "-D", f"p={p}", "-D", "m=64", "-D", "hidden=16",
                             "-D", "seq=4", "-D", f"layers={p}", "--json"])
            os.close(wr)
            out = b"".join(iter(lambda: os.read(rd, 65536), b"")).decode(); os.close(rd)
            _, st, ru = os.wait4(pid, 0)
            j = json.loads([l for l in out.splitlines() if l.startswith("{")][0])
            r.setdefault((b, p), []).append(ru.ru_nvcsw / j["instructions"])
for b in bins:
    print(f"{b:<28}" + "".join(f"  p={p:<2} {statistics.median(r[b, p]):5.2f}" for p in (2, 4, 8, 16)))
PY
}

if want local; then
  echo "== 6. local transport: voluntary context switches per instruction (1f1b m=64, tiny model)"
  csw ${BEFORE:+"$BEFORE"} "$AFTER"
fi
