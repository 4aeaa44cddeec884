#!/bin/sh
# bench_overlap.sh — overlapped pairs (docs/guide.md#overlapped-pairs,
# docs/run.md#overlapped-pairs):
#   1. the simulator: DualPipe's README table row by row, and dualpipev
#      against zb-v, v-half and zbv-auto with and without an all-to-all
#      part (bench/bench_overlap.lua);
#   2. the CPU runtime: a pair's halves at once (the device's lane) against
#      the same halves in turn (STAGECRAFT_PAIRS=serial), on an ordered
#      program of pairs on one device and on dualpipev; median of RUNS runs,
#      each its own process, the two modes interleaved;
#   3. PyTorch (when TORCH_PY names a python with torch 2.15): dualpipev on
#      gloo with stagecraft's OVERLAP_F_B handler against PyTorch's own
#      (bench/torch_overlap.py).
# Environment: SC (the binary), RUNS, MODEL (run's -D sizes), TORCH_PY.
SC=${SC:-./stagecraft}
RUNS=${RUNS:-5}
MODEL=${MODEL:--D hidden=512 -D seq=64 -D batch=4}
TORCH_PY=${TORCH_PY:-$HOME/.cache/stagecraft/torch/2.15.0/bin/python}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

$SC --trust bench/bench_overlap.lua

cat >"$tmp/pairs.lua" <<'LUA'
local P = sc.params { doc = "one device, two stages: every step after the first a pair",
  {"m", 16, "microbatches"} }
local t = {"F0 F0.1"}
for i = 1, P.m - 1 do t[#t + 1] = ("F%d+BW%d.1 F%d.1+BW%d"):format(i, i - 1, i, i - 1) end
t[#t + 1] = ("BW%d.1 BW%d"):format(P.m - 1, P.m - 1)
return sc.program { p = 1, m = P.m, stages = 2, order = { table.concat(t, " ") } }
LUA

# median MODE ARGS...: the median step time of RUNS runs (the modes interleaved by the caller)
step_time() { # mode args...
  mode=$1; shift
  # shellcheck disable=SC2086
  STAGECRAFT_PAIRS=$mode $SC run --trust "$@" $MODEL --json 2>/dev/null |
    sed 's/.*"step_time_s": \([^,}]*\).*/\1/'
}
echo
echo "CPU runtime ($(nproc) cores): median step time of $RUNS runs, $MODEL"
printf '%-34s %12s %12s %8s\n' "program" "lane (s)" "in turn (s)" "ratio"
for case in "pairs:$tmp/pairs.lua" "dualpipev p=1:dualpipev -D p=1 -D m=8" \
            "dualpipev p=2:dualpipev -D p=2 -D m=8"; do
  label=${case%%:*}; args=${case#*:}
  : >"$tmp/lane"; : >"$tmp/serial"
  for _ in $(seq "$RUNS"); do
    # shellcheck disable=SC2086
    step_time lane $args >>"$tmp/lane"
    # shellcheck disable=SC2086
    step_time serial $args >>"$tmp/serial"
  done
  python3 - "$tmp/lane" "$tmp/serial" "$label" <<'PY'
import statistics, sys
a = statistics.median(float(x) for x in open(sys.argv[1]))
b = statistics.median(float(x) for x in open(sys.argv[2]))
print(f"{sys.argv[3]:<34} {a:12.4f} {b:12.4f} {b / a:8.2f}")
PY
done

if [ -x "$TORCH_PY" ] && "$TORCH_PY" -c 'import torch' 2>/dev/null; then
  echo
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  for r in 0 1; do
    PYTHONPATH=$PWD/python STAGECRAFT=$SC THREADS=${THREADS:-1} timeout 600 "$TORCH_PY" \
      bench/torch_overlap.py $r 2 "$port" "${HIDDEN:-512}" "${STEPS:-5}" >"$tmp/t$r.log" 2>&1 &
  done
  wait
  grep '^torch' "$tmp/t0.log" || tail -3 "$tmp/t0.log"
fi
