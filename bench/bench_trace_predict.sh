#!/bin/sh
# bench_trace_predict.sh [SOURCE...] — the prediction from a PyTorch trace
# beside the step it was recorded from (docs/costs.md#checking-a-prediction):
# two ranks under gloo train the small GPT of tests/torch/trace.py under
# each SOURCE (a PyTorch 2.15 schedule class, "+stack" for with_stack=True,
# or a stagecraft recipe run by PyTorch's runtime; default: the classes of
# issue 46's accuracy item and zb-h1), WARMUP + STEPS steps, the last STEPS
# under torch.profiler. `costs --check` rebuilds the schedule the traces
# ran, predicts its step with the traces' own costs and measures each
# traced step (first span to last, all ranks); `sim` of the matching stdlib
# recipe predicts it too. Prints, per source and run, the wall-clock step
# (a barrier to the end of step(), the median over the steps), the traces'
# step, each prediction and its error (measured / predicted - 1), the
# median error of the steps each predicted with its own costs (costs
# --check's "own costs"), and the CPUs that other processes kept busy during
# the run (/proc/stat's busy time less the ranks' own) and that the
# hypervisor gave to other machines (steal), flagged LOADED above a tenth
# of the machine:
# the figures then say more about the load than the schedule. The ranks run
# under SCHED_FIFO where the process may (chrt -f 1; FIFO=0: not), as
# bench_predict.sh's; PIN=1 pins them one to a CPU (taskset), which with
# SCHED_FIFO starves gloo's own threads behind the rank's busy one (an
# Interleaved1F1B step then takes 1.5 times as long: not the default). Not
# pass/fail (make check holds no wall-clock assertion). Needs the venv
# tests/torch/run.sh installs (TORCH_VENVS). P, M, STEPS and RUNS from the
# environment.
SC=${SC:-build/stagecraft}
case $SC in /*) ;; *) SC=$PWD/$SC ;; esac
VENVS=${TORCH_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/stagecraft/torch}
py=$VENVS/2.15.0/bin/python
P=${P:-2}; M=${M:-8}; STEPS=${STEPS:-8}; RUNS=${RUNS:-3}
[ -x "$py" ] || { echo "bench_trace_predict: no PyTorch 2.15 venv in $VENVS/2.15.0 (make test installs it)"; exit 1; }
SOURCES=${*:-"Schedule1F1B+stack ScheduleInterleaved1F1B ScheduleZBVZeroBubble ScheduleDualPipeV zb-h1"}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ncpu=$(nproc)
RT=""
[ "${FIFO:-1}" = 1 ] && chrt -f 1 true 2>/dev/null && RT="chrt -f 1"
[ "${PIN:-0}" = 1 ] && command -v taskset >/dev/null || PIN=""
hz=$(getconf CLK_TCK)
busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }   # jiffies, all CPUs
steal() { awk '/^cpu /{print $9}' /proc/stat; }   # jiffies the hypervisor gave to others
# the children's CPU (jiffies) from `times` written to $1 by this shell (not a subshell's)
kids() { awk -v hz="$hz" 'NR == 2 { gsub(/[ms]/, " "); print ($1 * 60 + $2 + $3 * 60 + $4) * hz }' "$1"; }
echo "p=$P m=$M, $STEPS traced steps each, $RUNS runs${RT:+; ranks under SCHED_FIFO}${PIN:+, pinned one to a CPU}; $ncpu CPUs"
printf '%-24s %4s %8s %8s %9s %8s %8s %8s %8s %8s  %s\n' source run wall trace predicted "wall err" "trace err" "own err" sim "sim err" "others' CPUs, stolen"
for run in $(seq 1 "$RUNS"); do
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  times >"$tmp/times0"; b0=$(busy); s0=$(steal); w0=$(date +%s.%N)
  pids=""
  rm -rf "$tmp/run"; mkdir "$tmp/run"
  for r in $(seq 0 $((P - 1))); do
    pin=""; [ -n "$PIN" ] && pin="taskset -c $((r % ncpu))"
    # shellcheck disable=SC2086
    timeout 900 $pin $RT "$py" tests/torch/trace.py "$SC" "$r" "$P" "$port" "$tmp/run" "$M" "$STEPS" $SOURCES \
      >"$tmp/log$r" 2>&1 &
    pids="$pids $!"
  done
  rc=0; for q in $pids; do wait "$q" || rc=$?; done
  [ $rc = 0 ] || { echo "trace.py failed: $(grep -hv -e USDT -e gpuGetDeviceCount "$tmp"/log* | tail -3)"; exit 1; }
  times >"$tmp/times1"
  others=$(awk -v b="$(busy)" -v b0="$b0" -v k="$(kids "$tmp/times1")" -v k0="$(kids "$tmp/times0")" \
    -v w="$(date +%s.%N)" -v w0="$w0" -v hz="$hz" \
    -v s="$(steal)" -v s0="$s0" \
    'BEGIN { x = ((b - b0) - (k - k0)) / hz / (w - w0); printf "%.2f %.2f", x < 0 ? 0 : x, (s - s0) / hz / (w - w0) }')
  for s in $SOURCES; do
    e=$tmp/run/$s; files=""
    for r in $(seq 0 $((P - 1))); do files="$files $e/rank$r.json"; done
    # shellcheck disable=SC2086
    "$SC" costs --check $files -o "$e/costs.json" --json >"$e/check.json" 2>"$e/err" ||
      { printf '%-24s %s\n' "$s" "costs --check: $(tail -1 "$e/err")"; continue; }
    case $s in
      ScheduleInterleaved1F1B) rec="interleaved -D v=2" ;; ScheduleZBVZeroBubble) rec=zb-v ;;
      ScheduleDualPipeV) rec=dualpipev ;; ScheduleGPipe*) rec=gpipe ;; Schedule1F1B*) rec=1f1b ;;
      Schedule*) rec="" ;; *) rec=$s ;;
    esac
    sim=""
    # shellcheck disable=SC2086
    [ -n "$rec" ] &&
      sim=$("$SC" sim $rec -D p="$P" -D m="$M" -D costs="$e/costs.json" --json 2>/dev/null |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["predicted_step_time_s"])' 2>/dev/null)
    # shellcheck disable=SC2086
    python3 - "$s" "$run" "$e/steps.json" "$e/check.json" "$sim" "$ncpu" $others <<'PY'
import json, sys
s, run, steps, check, sim, ncpu, others, stolen = sys.argv[1:]
wall, k = json.load(open(steps))["median_s"], json.load(open(check))
p = k["predicted_s"]
err = lambda m, x: "%+7.1f%%" % (100 * (m / x - 1))
loaded = float(others) + float(stolen) > int(ncpu) / 10
own = "%+7.1f%%" % (100 * k["own_error"]) if k["own_error"] is not None else "-"
print("%-24s %4s %8.4f %8.4f %9.4f %8s %8s %8s %8s %8s  %s, %s%s" % (
    s, run, wall, k["median_s"], p, err(wall, p), err(k["median_s"], p), own,
    "%.4f" % float(sim) if sim else "-", err(wall, float(sim)) if sim else "-", others, stolen,
    "  LOADED" if loaded else ""))
PY
  done
done
