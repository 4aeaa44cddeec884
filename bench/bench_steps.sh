#!/bin/sh
# bench_steps.sh — N training steps under optim_sync none, sync and
# post-validation (docs/steps.md), side by side for 1f1b, zb-h1, zb-h2 and
# zb-v: the simulated makespan and bubble across the steps (unit costs), the
# measured CPU time of the same steps (threads, the built-in model; the
# median of RUNS runs, each its own process), and what the rollback path
# costs when it runs: simulated (sim's rollback_cost of step 0) and measured
# two ways: across processes (post-validation with a clip threshold below
# every step's norm, so that every eager step is rolled back and its warm-up
# redone, against none rolled back) and inside one process (inf injected
# into the last device's gradients at step 1 of 6: the other devices roll
# their eager step 1 back and redo step 2's warm-up; step 2's time against
# the median of steps 3..5 of the same run), which a loaded machine
# disturbs far less. The configurations of a recipe run interleaved, run by
# run, so that a change of load falls on all of them alike.
# Environment: SC (the binary), P, M, STEPS, RUNS, MODEL (run's -D sizes).
SC=${SC:-./stagecraft}
P=${P:-4}
M=${M:-16}
STEPS=${STEPS:-4}
RUNS=${RUNS:-3}
MODEL=${MODEL:--D hidden=256 -D seq=32 -D batch=4}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# one_run NAME I ARGS...: run I of configuration NAME, its JSON in $tmp.
one_run() {
  name=$1 i=$2; shift 2
  # shellcheck disable=SC2086
  $SC run "$@" $MODEL --json 2>/dev/null >"$tmp/$name.$i.json" || echo '{}' >"$tmp/$name.$i.json"
}

# median NAME [inproc]: the median over the runs of NAME of the steps' total
# time, or (inproc) of step 2's time less the median of steps 3.. .
median() {
  python3 - "$tmp" "$1" "$RUNS" "${2:-}" <<'PY'
import json, statistics, sys
d, name, n, inproc = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
v = []
for i in range(1, n + 1):
    t = json.load(open(f"{d}/{name}.{i}.json")).get("step_times_s")
    if t:
        v.append(t[2] - statistics.median(t[3:]) if inproc else sum(t))
print(statistics.median(v) if v else float("nan"))
PY
}

echo "steps: p=$P m=$M, $STEPS steps; simulated at unit costs, measured on the CPU ($MODEL, median of $RUNS)"
printf '%-7s %-16s %10s %9s %12s %13s %13s %13s\n' recipe optim_sync makespan bubble measured_s \
  rollback_sim rollback_s rollback_1p_s
for r in 1f1b zb-h1 zb-h2 zb-v; do
  g="-D p=$P -D m=$M"
  for i in $(seq "$RUNS"); do # interleaved: every configuration once per round
    for s in none sync post-validation; do
      # shellcheck disable=SC2086
      one_run $s "$i" $r $g -D steps="$STEPS" -D optim_sync=$s
    done
    # shellcheck disable=SC2086
    one_run clip "$i" $r $g -D steps="$STEPS" -D optim_sync=post-validation -D clip=1e-6
    # shellcheck disable=SC2086
    one_run inf "$i" $r $g -D steps=6 -D optim_sync=post-validation -D inf_step=1 \
      -D inf_device=$((P - 1))
  done
  for s in none sync post-validation; do
    # shellcheck disable=SC2086
    $SC sim $r $g -D steps="$STEPS" -D optim_sync=$s --json >"$tmp/sim.json" || continue
    t=$(median $s) rb="" rbs="" rb1=""
    if [ $s = post-validation ]; then
      rb=$(python3 -c "import json; print(json.load(open('$tmp/sim.json'))['rollback_cost'][0])")
      rbs=$(python3 -c "print('%+.4f' % (($(median clip) - $t) / max($STEPS - 1, 1)))")
      rb1=$(python3 -c "print('%+.4f' % $(median inf inproc))")
    fi
    python3 - "$tmp/sim.json" "$t" "$r" "$s" "$rb" "$rbs" "$rb1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t = float(sys.argv[2])
print(f"{sys.argv[3]:7s} {sys.argv[4]:16s} {j['makespan']:10.6g} {100 * j['bubble_rate']:8.2f}% "
      f"{t:12.4f} {sys.argv[5]:>13s} {sys.argv[6]:>13s} {sys.argv[7]:>13s}")
PY
  done
done
echo "rollback_sim: simulated makespan added when step 0's rollback path runs (cost units);"
echo "rollback_s: measured seconds added per rolled-back step (all but the last), across processes;"
echo "rollback_1p_s: the same inside one process (step 2 after a rollback of step 1 against steps 3..5)"
