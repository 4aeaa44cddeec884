#!/bin/sh
# bench_hostlink.sh — offload on the CPU runtime, with the copies on the
# devices' own threads (STAGECRAFT_HOST_LINK=inline: the runtime before the
# host-link copy engine) against the engine (runtime/backend/hostlink.h:
# the copies on the link's threads, beside compute, as the simulator has
# them). The cases make the offloading device the critical one: 1F1B at
# p = 2, m = 8, planned at ratio 0.05 on a link per device (device 0, which
# ends the step, moves 8 of its records; device 1's windows are too short),
# and gis at p = 2 on its shared link (14 of 32 records move). A CPU's memcpy is far faster than the
# compute here, so the link is paced to STAGECRAFT_HOST_LINK_GBPS (a sleep,
# not a spin: the paced link costs no core, as a PCIe link would not).
# `run --profile` measures the costs over warm steps and predicts those
# very steps; the error is measured / predicted - 1 of the median step.
# Rounds alternate the two modes; prints each run and the medians.
# Usage: sh bench/bench_hostlink.sh [ROUNDS]  (default 5; GBPS, MODEL, M override)
SC=${SC:-./stagecraft}
ROUNDS=${1:-5}
GBPS=${GBPS:-0.5}
M=${M:-8}
MODEL=${MODEL:--D hidden=64 -D seq=128 -D batch=8}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "host link paced to $GBPS GB/s; p = 2, m = $M, $MODEL;" \
  "$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-22s %-8s %12s %12s %9s %10s\n' case copies predicted_s measured_s error copy_ms
r=0
while [ $r -lt "$ROUNDS" ]; do
  for c in "1f1b -D offload=all -D link_shared=false -D offload_ratio=0.05" "gis -D offload=all"; do
    for mode in inline threads; do
      # shellcheck disable=SC2086
      STAGECRAFT_HOST_LINK=$mode STAGECRAFT_HOST_LINK_GBPS=$GBPS $SC run $c -D p=2 -D m=$M $MODEL \
        --profile "$tmp/p.json" --profile-steps 5 --json >"$tmp/a.json" 2>"$tmp/e" ||
        { echo "$c $mode: failed: $(head -1 "$tmp/e")"; continue; }
      python3 - "$c" "$mode" "$tmp/a.json" "$tmp/p.json" "$tmp/rows" <<'PY'
import json, sys
c, mode = sys.argv[1].split()[0], sys.argv[2]
a, p = json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
copy = max((h["s"] for h in p.get("host_copies", [])), default=0)
print(f"{c:22s} {mode:8s} {a['predicted_step_time_s']:12.4f} {a['step_time_s']:12.4f} "
      f"{100 * a['prediction_error']:+8.1f}% {1e3 * copy:10.2f}")
with open(sys.argv[5], "a") as f:
    f.write(f"{c} {mode} {a['prediction_error']}\n")
PY
    done
  done
  r=$((r + 1))
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -f "$tmp/rows" ] && python3 - "$tmp/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    c, mode, e = line.split()
    rows.setdefault((c, mode), []).append(float(e))
for (c, mode), v in rows.items():
    v.sort()
    print(f"{c:6s} copies {mode:8s}: median error {100 * statistics.median(v):+.1f}% over {len(v)} "
          f"runs (from {100 * v[0]:+.1f}% to {100 * v[-1]:+.1f}%)")
PY
