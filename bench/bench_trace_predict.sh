#!/bin/sh
# bench_trace_predict.sh [SOURCE...] — the prediction from a PyTorch trace
# beside the step it was recorded from (docs/costs.md#costs-from-a-pytorch-trace):
# two ranks under gloo train the small GPT of tests/torch/trace.py under
# each SOURCE (a PyTorch 2.15 schedule class, "+stack" for with_stack=True,
# or a stagecraft recipe run by PyTorch's runtime; default: the classes of
# issue 46's accuracy item and zb-h1), WARMUP + STEPS steps, the last STEPS
# under torch.profiler; `costs --from-trace` makes the cost file, and the
# step is predicted by `import` of the schedule PyTorch ran (its
# compute_comms dump; the classes on _PipelineScheduleRuntime and the CSV
# runtime) and by `sim` of the matching stdlib recipe. Prints, per source,
# the measured median step, each prediction and its error, and the load
# average; the ranks run under SCHED_FIFO where the process may (chrt -f
# 1), as bench_predict.sh's. Not pass/fail: the machine's load decides the
# measured figure (this check was tests/torch/trace.sh's before; make check
# holds no wall-clock assertion). Needs the venv tests/torch/run.sh
# installs (TORCH_VENVS). P, M and STEPS from the environment.
SC=${SC:-build/stagecraft}
case $SC in /*) ;; *) SC=$PWD/$SC ;; esac
VENVS=${TORCH_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/stagecraft/torch}
py=$VENVS/2.15.0/bin/python
P=${P:-2}; M=${M:-8}; STEPS=${STEPS:-8}
[ -x "$py" ] || { echo "bench_trace_predict: no PyTorch 2.15 venv in $VENVS/2.15.0 (make test installs it)"; exit 1; }
SOURCES=${*:-"Schedule1F1B+stack ScheduleInterleaved1F1B ScheduleZBVZeroBubble ScheduleDualPipeV zb-h1"}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
RT=""
chrt -f 1 true 2>/dev/null && RT="chrt -f 1"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
load0=$(cut -d' ' -f1 /proc/loadavg)
pids=""
for r in $(seq 0 $((P - 1))); do
  # shellcheck disable=SC2086
  timeout 900 $RT "$py" tests/torch/trace.py "$SC" "$r" "$P" "$port" "$tmp" "$M" "$STEPS" $SOURCES \
    >"$tmp/log$r" 2>&1 &
  pids="$pids $!"
done
rc=0; for q in $pids; do wait "$q" || rc=$?; done
[ $rc = 0 ] || { echo "trace.py failed: $(grep -hv -e USDT -e gpuGetDeviceCount "$tmp"/log* | tail -3)"; exit 1; }
echo "p=$P m=$M, $STEPS traced steps each${RT:+, ranks under SCHED_FIFO}; load average $load0 -> $(cut -d' ' -f1 /proc/loadavg)"
printf '%-30s %10s %10s %8s %10s %8s\n' source measured import error sim error
for s in $SOURCES; do
  e=$tmp/$s; files=""
  for r in $(seq 0 $((P - 1))); do files="$files $e/rank$r.json"; done
  # shellcheck disable=SC2086
  "$SC" costs --from-trace $files -o "$e/costs.json" 2>"$e/err" ||
    { printf '%-30s %s\n' "$s" "costs --from-trace: $(tail -1 "$e/err")"; continue; }
  imp=""; sim=""
  [ -f "$e/schedule.csv" ] &&
    imp=$("$SC" import "$e/schedule.csv" -D costs="$e/costs.json" --json 2>/dev/null |
          python3 -c 'import json, sys; print(json.load(sys.stdin)["predicted_step_time_s"])' 2>/dev/null)
  case $s in
    ScheduleInterleaved1F1B) rec="interleaved -D v=2" ;; ScheduleZBVZeroBubble) rec=zb-v ;;
    ScheduleDualPipeV) rec=dualpipev ;; ScheduleGPipe*) rec=gpipe ;; Schedule1F1B*) rec=1f1b ;;
    Schedule*) rec="" ;; *) rec=$s ;;
  esac
  # shellcheck disable=SC2086
  [ -n "$rec" ] &&
    sim=$("$SC" sim $rec -D p="$P" -D m="$M" -D costs="$e/costs.json" --json 2>/dev/null |
          python3 -c 'import json, sys; print(json.load(sys.stdin)["predicted_step_time_s"])' 2>/dev/null)
  python3 - "$s" "$e/steps.json" "$imp" "$sim" <<'PY'
import json, sys
s, steps, imp, sim = sys.argv[1], json.load(open(sys.argv[2]))["median_s"], sys.argv[3], sys.argv[4]
def cell(x):
    return ("%10.4f %+7.1f%%" % (float(x), 100 * (steps / float(x) - 1))) if x else "%10s %8s" % ("-", "-")
print("%-30s %10.4f %s %s" % (s, steps, cell(imp), cell(sim)))
PY
done
