#!/bin/sh
# bench_predict.sh — predicted against measured step time (docs/costs.md), on
# the CPU backend with threads, p = 2: for each recipe, `run --profile`
# measures the costs (in rounds until every figure is stable, on the device
# threads' CPU clocks) and predicts the same steps from them ("same run":
# the step of median time against the prediction of those very streams);
# then RELOADS fresh processes (default 5) load the cost file (`-D
# costs=FILE`: zb-auto is scheduled again for it) and each runs one step
# after WARMUP untimed ones ("reloaded"). Prints one row per recipe and
# round (the reloaded step of median time), the distribution of the
# reloaded errors (median, 90th percentile of |error|, range) with the
# largest part of the worst one, then per recipe the median over the rounds,
# and the machine's load before and after: on a loaded machine other
# processes take the cores from the two device threads at random, and the
# figures say more about the load than about the prediction.
# Usage: sh bench/bench_predict.sh [ROUNDS]     (default 1; MODEL, M, STEPS override;
# STEPS: --profile-steps, which without PROFILE_ROUNDS=1 is only the first round;
# WARMUP: the untimed steps of each reloaded process, default 1; RELOADS;
# PROFILE_ARGS: more options for run --profile, e.g. --profile-clock wall;
# PROFILE_ROUNDS=0: --profile-steps alone, for a binary from before the rounds)
SC=${SC:-./stagecraft}
if [ "${PRIORITY:-0}" = 1 ] && [ -z "$BENCH_PRIORITY_SET" ]; then
  export BENCH_PRIORITY_SET=1 SC
  exec setsid sh -c 'echo -15 >/proc/self/autogroup && exec sh "$0" "$@"' "$0" "$@"
fi
RUN=""
[ "${PRIORITY:-0}" = 2 ] && RUN="chrt -f 1"
ROUNDS=${1:-1}
MODEL=${MODEL:--D hidden=256 -D seq=64 -D batch=2}
M=${M:-8}
STEPS=${STEPS:-5}
WARMUP=${WARMUP:-1}
RELOADS=${RELOADS:-5}
PSTEPS="--profile-steps $STEPS --profile-spread 0.02"
[ "${PROFILE_ROUNDS:-1}" = 0 ] && PSTEPS="--profile-steps $STEPS"  # one round, as before
PSTEPS="$PSTEPS ${PROFILE_ARGS:-}"  # e.g. --profile-clock wall
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
machine=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
echo "predicted against measured: p = 2 threads, m = $M, $MODEL, $STEPS timed steps;" \
  "$machine, $(nproc) cores; reloaded: $RELOADS processes, $WARMUP warm-up step(s) each"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)$([ -n "$BENCH_PRIORITY_SET" ] &&
  echo "; this session's autogroup: $(cat /proc/self/autogroup)")$([ -n "$RUN" ] &&
  echo "; runs under SCHED_FIFO ($RUN)")"
printf '%-8s %12s %12s %9s %12s %12s %9s\n' recipe "predicted_s" "measured_s" "error" \
  "reloaded_p" "reloaded_m" "error"
r=0
while [ $r -lt "$ROUNDS" ]; do
  for recipe in 1f1b zb-h1 zb-auto; do
    # shellcheck disable=SC2086
    $RUN $SC run $recipe -D p=2 -D m=$M $MODEL --profile "$tmp/$recipe.json" $PSTEPS \
      --json >"$tmp/a.json" 2>"$tmp/a.err" || { echo "$recipe: profile failed"; continue; }
    i=1
    while [ $i -le "$RELOADS" ]; do
      $RUN $SC run $recipe -D p=2 -D m=$M $MODEL -D costs="$tmp/$recipe.json" --warmup $WARMUP --json \
        >"$tmp/b$i.json" 2>/dev/null || { echo "$recipe: run with the cost file failed"; continue 2; }
      i=$((i + 1))
    done
    python3 - "$recipe" "$tmp/a.json" "$tmp/b" "$tmp/rows" "$RELOADS" <<'PY'
import json, sys
a = json.load(open(sys.argv[2]))
n = int(sys.argv[5])
bs = sorted((json.load(open(f"{sys.argv[3]}{i}.json")) for i in range(1, n + 1)),
            key=lambda j: j["step_time_s"])
b = bs[(n - 1) // 2]  # the step of median time
print(f"{sys.argv[1]:8s} {a['predicted_step_time_s']:12.4f} {a['step_time_s']:12.4f} "
      f"{100 * a['prediction_error']:+8.1f}% {b['predicted_step_time_s']:12.4f} "
      f"{b['step_time_s']:12.4f} {100 * b['prediction_error']:+8.1f}%")
p = a["profile"]
print(f"         profile: {p['steps']} steps in {p.get('rounds', 1)} round(s), clock "
      f"{p.get('clock', 'wall')}, {len(p.get('unstable', []))} figure(s) unstable")
e = sorted(j["prediction_error"] for j in bs)
ab = sorted(abs(x) for x in e)
p90 = ab[min(n - 1, int(0.9 * n + 0.5) - 1)]  # the 90th percentile of |error|, nearest rank
worst = max(bs, key=lambda j: abs(j["prediction_error"]))
print(f"         reloaded over {n}: median {100 * e[(n - 1) // 2]:+.1f}%, 90th percentile of "
      f"|error| {100 * p90:.1f}%, range {100 * e[0]:+.1f}% .. {100 * e[-1]:+.1f}%, within 15% "
      f"in {sum(x <= 0.15 for x in ab)} of {n}")
def core(j):  # the critical device's passes without their core (compare.h)
    return sum(c["measured_s"] for c in j["contributors"] if "without their core" in c["what"])
if any(core(j) > 0.01 * j["step_time_s"] for j in bs):
    x = sorted(abs((j["step_time_s"] - core(j)) / j["predicted_step_time_s"] - 1) for j in bs)
    print(f"         less the critical device's time without its core: 90th percentile of "
          f"|error| {100 * x[min(n - 1, int(0.9 * n + 0.5) - 1)]:.1f}%, median |error| "
          f"{100 * x[(n - 1) // 2]:.1f}%")
if abs(worst["prediction_error"]) > 0.1:
    print(f"         worst ({100 * worst['prediction_error']:+.1f}%): "
          f"{worst['largest_contributor']['text']}")
if abs(a["prediction_error"]) > 0.1:
    print(f"         same run: {a['largest_contributor']['text']}")
with open(sys.argv[4], "a") as f:
    f.write(f"{sys.argv[1]} {a['prediction_error']} {b['prediction_error']} {p90}\n")
PY
  done
  r=$((r + 1))
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -f "$tmp/rows" ] && python3 - "$tmp/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    r, a, b, _ = line.split()
    rows.setdefault(r, []).append((float(a), float(b)))
for r, v in rows.items():
    a = statistics.median(x for x, _ in v); b = statistics.median(y for _, y in v)
    within = sum(abs(x) <= 0.1 for x, _ in v)
    print(f"{r:8s} median error over {len(v)} rounds: same run {100 * a:+.1f}%, "
          f"reloaded {100 * b:+.1f}%; same run within 10% in {within} of {len(v)}")
PY
