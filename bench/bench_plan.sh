#!/bin/sh
# bench_plan.sh — `stagecraft plan` end to end (docs/plan.md): wall and CPU
# seconds, candidates searched, and the pick, for p=8 m=32 (the issue's
# costs and cap 6), without a cap, with the automatic schedulers' default
# search (1 s each) and with their heuristics only (--time-limit 0), and
# with a layer partition. Best of 3 wall times.
SC=${SC:-./stagecraft}
run() { # run LABEL ARGS...
  label=$1; shift
  best=""; cpu=""
  for i in 1 2 3; do
    t0=$(python3 -c 'import time; print(time.monotonic())')
    /usr/bin/env time -f "%U %S" -o /tmp/sc_bench_plan.cpu $SC plan "$@" --json >/tmp/sc_bench_plan.json 2>/dev/null ||
      $SC plan "$@" --json >/tmp/sc_bench_plan.json 2>/dev/null
    t1=$(python3 -c 'import time; print(time.monotonic())')
    best=$(python3 -c "print(min($t1 - $t0, float('${best:-1e9}')))")
    c=$(awk '{print $1 + $2}' /tmp/sc_bench_plan.cpu 2>/dev/null)
    cpu=$(python3 -c "print(min(float('${c:-1e9}'), float('${cpu:-1e9}')))")
  done
  python3 - "$label" "$best" "$cpu" <<'PY'
import json, sys
j = json.load(open("/tmp/sc_bench_plan.json"))
c = j["candidates"][j["pick"]] if j["pick"] is not None else None
pick = (c["recipe"] + (" " + c["knobs"] if c["knobs"] else "") + " %g" % c["makespan"]) if c else "none"
print("plan %-34s %3d candidates  wall %5.2f s  cpu %5.2f s  pick %s" % (
    sys.argv[1], j["searched"], float(sys.argv[2]), float(sys.argv[3]), pick))
PY
}
Z="-D p=8 -D m=32 -D tw=0.63 -D tcomm=0.016"
run "p=8 m=32 cap 6 (search 1 s)" $Z --cap 6
run "p=8 m=32 cap 6 --time-limit 0" $Z --cap 6 --time-limit 0
run "p=8 m=32 no cap --time-limit 0" $Z --time-limit 0
run "p=16 m=64 cap 10 --time-limit 0" -D p=16 -D m=64 -D tw=0.63 -D tcomm=0.016 --cap 10 --time-limit 0
run "p=8 m=32 layers E:6,t*30,L:9 -tl 0" -D p=8 -D m=32 --layers E:6,t*30,L:9 --time-limit 0
