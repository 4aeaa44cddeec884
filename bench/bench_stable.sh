#!/bin/sh
# bench_stable.sh — do successive profiles agree? (docs/costs.md#profiling)
# K fresh `run --profile` processes of zb-h1 (p = 2 threads, m = 8, the model
# of bench_predict.sh), one after another; for each: the steps and rounds it
# ran, its wall time, the step it predicts from its own file, and the
# largest stage time (tf of s1); then the spread of those predictions over
# the K profiles (largest / smallest - 1). A profile that measures the
# passes' own cost gives the same file whatever the load; one that reads the
# wall clock gives the load of its own few seconds.
# Usage: sh bench/bench_stable.sh [K]   (default 5; SC: the binary; ARGS: more
# options for run --profile, e.g. "--profile-steps 5" for one round; PRIORITY=2:
# each profile under SCHED_FIFO, chrt -f 1, which needs root)
SC=${SC:-./stagecraft}
K=${1:-5}
MODEL=${MODEL:--D hidden=256 -D seq=64 -D batch=2}
RUN=""
[ "${PRIORITY:-0}" = 2 ] && RUN="chrt -f 1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "successive profiles: zb-h1, p = 2 threads, m = 8, $MODEL; $K profiles by $SC ${ARGS:-}"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)$([ -n "$RUN" ] && echo "; under SCHED_FIFO ($RUN)")"
i=1
while [ "$i" -le "$K" ]; do
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  $RUN $SC run zb-h1 -D p=2 -D m=8 $MODEL --profile "$tmp/c$i.json" ${ARGS:-} --json \
    >"$tmp/a$i.json" 2>/dev/null || { echo "profile $i failed"; exit 1; }
  t1=$(date +%s.%N)
  echo "$t0 $t1" >"$tmp/t$i"
  i=$((i + 1))
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp" "$K" <<'PY'
import json, sys
d, k = sys.argv[1], int(sys.argv[2])
preds = []
print(f"{'profile':>7} {'steps':>5} {'rounds':>6} {'wall_s':>7} {'predicted_s':>11} {'tf_s1_ms':>8}")
for i in range(1, k + 1):
    a = json.load(open(f"{d}/a{i}.json")); c = json.load(open(f"{d}/c{i}.json"))
    t0, t1 = map(float, open(f"{d}/t{i}").read().split())
    p = a["profile"]
    preds.append(a["predicted_step_time_s"])
    print(f"{i:7d} {p['steps']:5d} {p.get('rounds', 1):6d} {t1 - t0:7.1f} "
          f"{a['predicted_step_time_s']:11.4f} {1e3 * c['tf'][-1]:8.3f}")
print(f"predictions: {min(preds):.4f} .. {max(preds):.4f} s, spread {100 * (max(preds) / min(preds) - 1):.1f}%")
PY
