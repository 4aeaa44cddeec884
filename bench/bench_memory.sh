#!/bin/sh
# bench_memory.sh — memory as a promise (issue 32): the simulated grid of
# bench/bench_memory.lua (caps from p down to 1 unit, each memory policy on
# zb-h1, v-half and gis, p = 8, m = 32), then the CPU runtime with
# recomputation: its measured peak bytes against the prediction (they must
# be equal), the step time, and whether loss and gradients are bitwise the
# reference's. Not pass/fail (make test checks the same on smaller cases).
#   sh bench/bench_memory.sh [STAGECRAFT]
SC=${1:-build/stagecraft}
"$SC" --trust bench/bench_memory.lua
echo
echo "CPU runtime, p = 8, m = 32, the built-in model (hidden 64, 2 blocks a stage), threads:"
echo "measured peak bytes (max over devices) / predicted, step time, bitwise"
echo
echo "| recipe | policy | measured | predicted | step (s) | bitwise |"
echo "|---|---|---|---|---|---|"
for r in zb-h1 v-half gis; do
  for pol in "" "-D recompute=all" "-D recompute=all -D recompute_frac=0.5" \
             "-D recompute=budget -D mem=4" "-D recompute=budget -D offload=budget -D mem=2 -D offload_ratio=0.25"; do
    # shellcheck disable=SC2086
    out=$("$SC" run "$r" -D p=8 -D m=32 $pol --check --json 2>&1)
    echo "$out" | python3 -c '
import json, sys
r, pol = sys.argv[1], sys.argv[2] or "none"
t = sys.stdin.read()
try:
    j = json.loads(t)
except Exception:
    print("| %s | %s | %s |  |  |  |" % (r, pol, t.strip().split("\n")[-1][:90]))
    sys.exit(0)
print("| %s | %s | %d | %d | %.4f | %s |" % (r, pol.replace("-D ", ""), j["peak_activation_bytes_max"],
      j["predicted_peak_activation_bytes_max"], j["step_time_s"], j["bitwise"]))
' "$r" "$pol"
  done
done
