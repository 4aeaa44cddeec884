#!/bin/sh
# trace.sh — costs from a PyTorch trace (docs/costs.md#costs-from-a-pytorch-trace)
# against real PyTorch 2.15 on the CPU: two ranks under gloo on loopback
# (launched as tests/torch/run.sh launches train.py) train a small
# pipelined GPT with PyTorch's _PipelineScheduleRuntime on a recipe's
# compute_comms export and record STEPS steps under torch.profiler
# (tests/torch/trace.py); `costs --from-trace` turns the two traces into a
# cost file, and `sim RECIPE -D costs=FILE` must predict the measured step
# (the median wall time of those steps) within 10%, the bound the CPU
# calibration meets (bench/README.md, "Predicted against measured": same
# run within 10% in 9 of 9). Like that calibration, the ranks run under
# SCHED_FIFO where the process may (chrt -f 1; on a shared machine other
# jobs take the cores from them at random otherwise), and a step measured
# outside the bound is measured again, at most 3 times in all: the line
# says which try met it. make check: zb-h1 (F, I, W); make test: 1f1b too
# (B only). Needs the venv tests/torch/run.sh installs (TORCH_VENVS);
# skipped without it, saying so. Prints "trace: N passed, N failed[, N skipped]".
SC=${SC:-build/stagecraft}
case $SC in /*) ;; *) SC=$PWD/$SC ;; esac
VENVS=${TORCH_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/stagecraft/torch}
py=$VENVS/2.15.0/bin/python
BOUND=0.10
M=8; STEPS=8; TRIES=3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, full
# make test installs the venv, or waits for the install under way (run.sh,
# beside this suite); make check uses it only where it is installed.
. tests/torch/venv.sh # venv_for
py=$(venv_for 2.15.0 2>"$tmp/why")
if [ -z "$py" ]; then
  echo "trace: skipped: no PyTorch 2.15: $(tail -1 "$tmp/why")"
  echo "trace: 0 passed, 0 failed, 1 skipped"; exit 0
fi
RECIPES=zb-h1
full && RECIPES="zb-h1 1f1b"
RT=""
chrt -f 1 true 2>/dev/null && RT="chrt -f 1"
# One timed PyTorch job at a time on the machine (run.sh's lock).
exec 9>"$VENVS/.run-lock"; flock 9

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

record() { # recipe dir -> two ranks of trace.py write dir/rank*.json, dir/steps.json
  rm -rf "$2"; mkdir -p "$2"; port=$(free_port); pids=""
  for r in 0 1; do
    # shellcheck disable=SC2086
    timeout 300 $RT "$py" tests/torch/trace.py "$SC" $r 2 "$port" "$2" "$1" $M $STEPS \
      >"$2/log$r" 2>&1 &
    pids="$pids $!"
  done
  rc=0; for p in $pids; do wait "$p" || rc=$?; done
  [ $rc = 0 ] && [ -f "$2/steps.json" ]
}

for recipe in $RECIPES; do
  try=0; done_=""
  while [ $try -lt $TRIES ] && [ -z "$done_" ]; do
    try=$((try+1)); d=$tmp/$recipe
    if ! record "$recipe" "$d"; then
      bad "$recipe: trace.py failed: $(grep -v -e USDT -e gpuGetDeviceCount "$d"/log* | tail -2)"
      break
    fi
    if ! "$SC" costs --from-trace "$d/rank0.json" "$d/rank1.json" -o "$d/costs.json" 2>"$d/err"; then
      bad "$recipe: costs --from-trace: $(cat "$d/err")"; break
    fi
    "$SC" sim "$recipe" -D p=2 -D m=$M -D costs="$d/costs.json" --json >"$d/sim.json" 2>"$d/err" ||
      { bad "$recipe: sim with the cost file: $(cat "$d/err")"; break; }
    # The file itself: every stage timed from every microbatch of every step.
    if python3 - "$d" "$recipe" $M $STEPS <<'PY' 2>"$d/err"; then ok; else bad "$recipe: cost file: $(tail -1 "$d/err")"; break; fi
import json, sys
d, recipe, m, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
c = json.load(open(f"{d}/costs.json"))
assert c["stages"] == 2 and c["devices"] == 2 and c["placement"] == [0, 1], c
assert c["samples"]["tf"] == [m * steps] * 2, c["samples"]
kind = "tb" if recipe == "zb-h1" else "tbw"
assert c["samples"][kind] == [m * steps] * 2, c["samples"]
assert all(t > 0 for t in c["tf"] + c["tw"]), c
ms = c["measured"]
assert ms["steps"] == steps and ms["microbatches"] == m and ms["backend"] == "gloo", ms
PY
    verdict=$(python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
p = json.load(open(f"{d}/sim.json"))["predicted_step_time_s"]
w = json.load(open(f"{d}/steps.json"))["median_s"]
print(f"{w / p - 1:+.4f} measured {w:.4f} s, predicted {p:.4f} s")
PY
)
    err=${verdict%% *}
    if python3 -c "import sys; sys.exit(abs(float('$err')) > $BOUND)"; then
      done_=1; ok
      echo "trace: ok   $recipe p=2 m=$M: $verdict ($(echo "$err" | awk '{printf "%+.1f%%", 100 * $1}'), try $try of $TRIES${RT:+, under SCHED_FIFO})"
    else
      echo "trace: $recipe p=2 m=$M, try $try: $verdict, outside ±$BOUND (load $(cut -d' ' -f1 /proc/loadavg))"
    fi
  done
  [ -n "$done_" ] || [ $try -lt $TRIES ] || bad "$recipe: the prediction missed the measured step by more than $BOUND in $TRIES tries"
done
echo "trace: $pass passed, $fail failed"
[ $fail = 0 ]
