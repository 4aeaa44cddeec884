#!/bin/sh
# bench_cli.sh — end to end through the command line: Lua recipe, rule,
# lowering, verification and simulation of interleaved p=64 m=1024 v=2.
SC=${SC:-./stagecraft}
for args in "interleaved -D p=64 -D m=1024 -D v=2" "1f1b -D p=64 -D m=1024" "zb-h1 -D p=64 -D m=1024"; do
  best=""
  for i in 1 2 3; do
    t0=$(date +%s.%N); $SC sim $args --json >/tmp/sc_bench.json; t1=$(date +%s.%N)
    t=$(echo "$t1 - $t0" | bc -l 2>/dev/null || python3 -c "print($t1 - $t0)")
    best=$(python3 -c "print(min(float('$t'), float('${best:-1e9}')))")
  done
  python3 - "$args" "$best" <<'PY'
import json, sys
j = json.load(open("/tmp/sc_bench.json"))
passes = j["devices"] * 0 + j["stages"] * j["microbatches"] * (2 if "zb" not in sys.argv[1] else 3)
t = float(sys.argv[2])
print(f"cli sim {sys.argv[1]:32s} {passes:7d} passes {j['instructions']:8d} instr  {t*1000:8.1f} ms  "
      f"{t*1e9/passes:7.1f} ns/pass  x{20000/(t*1e9/passes):.0f} vs 20 us/pass")
PY
done
