#!/bin/sh
# bench_steps.sh — N training steps under optim_sync none, sync and
# post-validation (SPEC.md §21), side by side for 1f1b, zb-h1, zb-h2 and
# zb-v: the simulated makespan and bubble across the steps (unit costs), the
# measured CPU time of the same steps (threads, the built-in model; the
# median of RUNS runs, each its own process), and what the rollback path
# costs when it runs: simulated (sim's rollback_cost of step 0) and measured
# (post-validation with a clip threshold below every step's norm, so that
# every eager step is rolled back and its warm-up redone, against none
# rolled back).
# Environment: SC (the binary), P, M, STEPS, RUNS, MODEL (run's -D sizes).
SC=${SC:-./stagecraft}
P=${P:-4}
M=${M:-16}
STEPS=${STEPS:-4}
RUNS=${RUNS:-3}
MODEL=${MODEL:--D hidden=256 -D seq=32 -D batch=4}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# median_run OUT ARGS...: the median total of `run --json`'s step times.
median_run() {
  out=$1; shift
  for i in $(seq "$RUNS"); do
    # shellcheck disable=SC2086
    $SC run "$@" $MODEL --json 2>/dev/null >"$tmp/r$i.json" || { echo "nan" >"$out"; return; }
  done
  python3 - "$tmp" "$RUNS" >"$out" <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
ts = [sum(json.load(open(f"{d}/r{i}.json"))["step_times_s"]) for i in range(1, n + 1)]
print(statistics.median(ts))
PY
}

echo "steps: p=$P m=$M, $STEPS steps; simulated at unit costs, measured on the CPU ($MODEL, median of $RUNS)"
printf '%-7s %-16s %10s %9s %12s %13s %13s\n' recipe optim_sync makespan bubble measured_s \
  rollback_sim rollback_s
for r in 1f1b zb-h1 zb-h2 zb-v; do
  for s in none sync post-validation; do
    $SC sim $r -D p="$P" -D m="$M" -D steps="$STEPS" -D optim_sync=$s --json >"$tmp/sim.json" || continue
    median_run "$tmp/t" $r -D p="$P" -D m="$M" -D steps="$STEPS" -D optim_sync=$s
    rb="" rbs=""
    if [ $s = post-validation ]; then
      # clip below every norm: every eager step is rolled back and redone
      median_run "$tmp/tr" $r -D p="$P" -D m="$M" -D steps="$STEPS" -D optim_sync=$s -D clip=1e-6
      rb=$(python3 -c "import json; print(json.load(open('$tmp/sim.json'))['rollback_cost'][0])")
      rbs=$(python3 -c "print('%+.4f' % ((float(open('$tmp/tr').read()) - float(open('$tmp/t').read())) / max($STEPS - 1, 1)))")
    fi
    python3 - "$tmp/sim.json" "$tmp/t" "$r" "$s" "$rb" "$rbs" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t = float(open(sys.argv[2]).read())
print(f"{sys.argv[3]:7s} {sys.argv[4]:16s} {j['makespan']:10.6g} {100 * j['bubble_rate']:8.2f}% "
      f"{t:12.4f} {sys.argv[5]:>13s} {sys.argv[6]:>13s}")
PY
  done
done
echo "rollback_sim: simulated makespan added when step 0's rollback path runs (cost units);"
echo "rollback_s: measured seconds added per rolled-back step (all but the last)"
