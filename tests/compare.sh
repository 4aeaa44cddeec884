#!/bin/sh
# compare.sh — `stagecraft compare` and parameter sweeps (docs/cli.md): one
# table of several recipes under the same -D, rows per swept value, the
# balance of the devices (idle share, bottleneck), peak bytes with model
# sizes, errors in rows, --json, the stacked --svg. Every figure is checked
# against `sim --json` (or `run --json`) of the same recipe.
# Run from the repository root: sh tests/compare.sh
SC=${SC:-./stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, expect
py() { # py NAME SCRIPT ARGS...: a Python check that must exit 0
  name=$1; script=$2; shift 2
  if python3 -c "$script" "$@" 2>"$tmp/pyerr"; then ok; else bad "$name"; cat "$tmp/pyerr" >&2; fi
}

# The issue's command: one table, one row per recipe, figures as sim's.
$SC compare 1f1b zb-h1 zb-v v-half -D p=8 -D m=32 >"$tmp/t" 2>"$tmp/e"; rc=$?
[ $rc = 0 ] && [ ! -s "$tmp/e" ] && head -1 "$tmp/t" | grep -q "^recipe  *makespan  *bound  *gap  *bubble  *idle max  *bottleneck  *peak max  *peak min  *instructions$" &&
  [ "$(wc -l <"$tmp/t")" = 5 ] && ok || { bad "compare table"; cat "$tmp/t" "$tmp/e" >&2; }
$SC compare 1f1b zb-h1 zb-v v-half -D p=8 -D m=32 --json >"$tmp/c.json"
for r in 1f1b zb-h1 zb-v v-half; do $SC sim $r -D p=8 -D m=32 --json >"$tmp/$r.json"; done
py "compare --json equals sim --json" '
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert [r["recipe"] for r in rows] == ["1f1b", "zb-h1", "zb-v", "v-half"]
for r in rows:
    s = json.load(open(sys.argv[2] + "/" + r["recipe"] + ".json"))
    for k in ("devices", "stages", "microbatches", "instructions", "makespan", "bubble_rate",
              "peak_memory", "peak_memory_max", "idle", "bottleneck"):
        assert r[k] == s[k], (r["recipe"], k, r[k], s[k])
    assert r["parameters"] == {"p": 8, "m": 32}
    mk = s["makespan"]
    assert all(abs(i - (1 - b / mk)) < 1e-12 for i, b in zip(s["idle"], s["busy"]))
' "$tmp/c.json" "$tmp"

# Sweeps: a list and a range, one row per combination, the first name slowest.
$SC sim 1f1b -D m=8,16 -D p=2:4:2 >"$tmp/t"
awk 'NR > 1 {print $1, $2, $3}' "$tmp/t" >"$tmp/rows"
printf '1f1b 8 2\n1f1b 8 4\n1f1b 16 2\n1f1b 16 4\n' | cmp -s - "$tmp/rows" && head -1 "$tmp/t" | grep -q "^recipe  m   p  makespan" &&
  ok || { bad "sweep rows in order"; cat "$tmp/t" >&2; }
$SC sim 1f1b -D m=16 -D p=4 --json >"$tmp/one.json"
py "a sweep row equals the plain sim" '
import json, sys, subprocess
rows = json.loads(subprocess.run([sys.argv[1], "sim", "1f1b", "-D", "m=8,16", "-D", "p=2:4:2", "--json"],
                                 capture_output=True, text=True).stdout)["rows"]
one = json.load(open(sys.argv[2]))
r = rows[3]
assert r["parameters"] == {"m": 16, "p": 4} and r["makespan"] == one["makespan"], r
' "$SC" "$tmp/one.json"
$SC sim zb-h1 -D tf=0.1:0.3:0.1 --json >"$tmp/f.json"
py "a float range has no rounding noise" '
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert [r["parameters"]["tf"] for r in rows] == [0.1, 0.2, 0.3], rows
' "$tmp/f.json"
expect 2 "-D m=8:2: a range needs FROM <= TO and a STEP > 0" -- $SC sim 1f1b -D m=8:2
expect 2 "-D m=1:x: a range is FROM:TO or FROM:TO:STEP" -- $SC compare 1f1b -D m=1:x
expect 2 "-D m=8,,16: an empty value in the list" -- $SC compare 1f1b -D m=8,,16
expect 2 "more than 10000 rows" -- $SC compare 1f1b -D m=1:1000 -D tf=1:100
expect 2 "unknown parameter 'tcom': none of the recipes declares it; did you mean 'tcomm'?" -- $SC compare 1f1b zb-h1 -D tcom=1
expect 2 "missing RECIPE" -- $SC compare -D m=8
expect 2 "unknown option '--frob' for 'compare'" -- $SC compare 1f1b --frob
# A name only some recipes declare goes to those, and a note says so.
expect 0 "note: v is not a parameter of 1f1b, zb-h1 (left out there)" -- $SC compare 1f1b zb-h1 interleaved -D v=3 -D m=8
# Rows of different sizes say so (a recipe's own p against the stdlib's 4).
printf '%s\n' 'local P = sc.params { {"m", 6, "microbatches"} }' \
  'return sc.program { p = 3, m = P.m, rule = "1f1b" }' >"$tmp/three.lua"
expect 0 "note: the rows differ in devices: $tmp/three.lua 3, 1f1b 4 (each recipe's own p; -D p=N sets one)" -- \
  $SC compare "$tmp/three.lua" 1f1b -D m=6
expect 0 "1f1b" -- $SC compare 1f1b zb-h1 -D m=6
grep -q "differ in devices" "$tmp/out" && bad "a note on rows of the same size" || ok
$SC compare interleaved -D v=3 -D m=8 --json >"$tmp/v.json"; $SC sim interleaved -D v=3 -D m=8 --json >"$tmp/v1.json"
py "the name reached the recipe that declares it" '
import json, sys
a, b = json.load(open(sys.argv[1]))["rows"][0], json.load(open(sys.argv[2]))
assert a["stages"] == 12 and a["makespan"] == b["makespan"]
' "$tmp/v.json" "$tmp/v1.json"
# A row that fails shows its error; the others are there; the exit code is the error's.
$SC compare interleaved -D m=6,8 >"$tmp/t"; rc=$?
[ $rc = 3 ] && grep -q "^interleaved  6  error (exit 3): stdlib/interleaved.lua:12: interleaved needs m" "$tmp/t" &&
  grep -q "^interleaved  8  28.5 " "$tmp/t" && ok || { bad "rows with errors"; cat "$tmp/t" >&2; }
# Peak bytes with run's model sizes (no layers: the program has no model of
# its own): what `run` predicts for the same model.
$SC compare 1f1b zb-h1 -D p=4 -D m=8 -D hidden=128 --json >"$tmp/b.json"
for r in 1f1b zb-h1; do $SC run $r -D p=4 -D m=8 -D hidden=128 --json >"$tmp/run-$r.json"; done
py "peak bytes are run's prediction" '
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    run = json.load(open(sys.argv[2] + "/run-" + r["recipe"] + ".json"))
    assert r["peak_bytes"] == run["predicted_peak_activation_bytes"], (r["peak_bytes"], run)
    assert r["peak_bytes_max"] == max(run["predicted_peak_activation_bytes"])
' "$tmp/b.json" "$tmp"
expect 0 "peak bytes" -- $SC compare 1f1b -D hidden=128

# The balance beside the bubble rate: sim, sim --json, p:sim().
expect 0 "bottleneck    d7: busy 263.726, the most of any device" -- $SC sim examples/choose_schedule.lua -D mem=12
expect 0 "idle          7.4483% to 33.8917% of the makespan per device (most on d0)" -- $SC sim examples/choose_schedule.lua -D mem=12
expect 0 "bottleneck    none: every device is busy 24" -- $SC sim zb-h1
expect 0 "0        24          11.11%    0           27          4" -- $SC sim zb-h1
echo 'local r = sc.load("examples/choose_schedule.lua", {report = false}):sim()
print(r.bottleneck, #r.idle, string.format("%.4f", r.idle[1]), sc.load("zb-h1"):sim().bottleneck)' >"$tmp/b.lua"
expect 0 "7	8	0.3389	nil" -- sh -c "$SC <'$tmp/b.lua'"

# Under a cap (docs/guide.md#memory-model): rows that do not meet it are
# marked with what they need (and exit 0: they answer the question), --fit
# leaves them out; every other row is within the cap.
expect 0 "over mem: needs mem >= 8" -- $SC compare zb-h1 zb-v v-half -D p=8 -D m=32 -D mem=4
grep -q "^v-half  *over mem: needs mem >= 5" "$tmp/out" && ok || { bad "v-half over mem"; cat "$tmp/out" >&2; }
$SC compare zb-h1 zb-v v-half v-min -D p=8 -D m=32 -D mem=4 --fit >"$tmp/t"
awk 'NR > 1 {print $1, $9}' "$tmp/t" >"$tmp/rows"
printf 'zb-h1 4\nv-min 4\n' | cmp -s - "$tmp/rows" && ok || { bad "--fit rows"; cat "$tmp/t" >&2; }
$SC compare zb-h1 zb-v -D p=8 -D m=32 -D mem=4 --json >"$tmp/c.json"
py "compare --json marks over_mem" '
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert "over_mem" not in rows[0] and rows[0]["peak_memory_max"] <= 4, rows[0]
assert rows[1]["over_mem"] is True and "needs mem >= 8" in rows[1]["error"], rows[1]
' "$tmp/c.json"
# A cap per device is one value, not a sweep.
$SC sim zb-h1 -D p=4 -D m=8 -D mem=[4,3,3,2] --json >"$tmp/d.json"
py "mem per device" '
import json, sys
s = json.load(open(sys.argv[1]))
assert all(p <= c for p, c in zip(s["peak_memory"], [4, 3, 3, 2])), s["peak_memory"]
' "$tmp/d.json"
# A cap in bytes with a model caps each device's total (docs/model.md#caps):
# zb-h1 and 1f1b meet 950 MiB (their memory knob: fewer in flight), zb-v
# does not, and each total is sim's for the same cap: one byte model.
M="-D p=4 -D m=8 -D layers=8 -D hidden=1024 -D seq=1024 -D workspace=0 -D mem=950MiB"
# shellcheck disable=SC2086
$SC compare zb-h1 zb-v 1f1b $M --json >"$tmp/b.json"
for r in zb-h1 1f1b; do $SC sim $r $M --json >"$tmp/sim-$r.json"; done # shellcheck disable=SC2086
py "compare: a cap in bytes caps the total, as sim counts it" '
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert [r["recipe"] for r in rows if not r.get("over_mem")] == ["zb-h1", "1f1b"], rows
assert rows[1]["over_mem"] and "needs" in rows[1]["error"], rows[1]
for r in (rows[0], rows[2]):
    sim = json.load(open(sys.argv[2] + "/sim-" + r["recipe"] + ".json"))
    assert r["total_bytes_max"] <= 950 * 2**20, r
    assert r["total_bytes_max"] == sim["total_bytes_max"] == max(sim["bytes"]["total"]), (r, sim)
' "$tmp/b.json" "$tmp"
# A refusal names the stdlib recipes that meet the cap.
expect 5 "recipes that meet mem = 4 with these parameters: 1f1b, gis, gpipe, interleaved-zb, seq1f1b, v-min, v-zb, zb-auto, zb-h1, zb-h2, zbv-auto" -- $SC check zb-v -D p=8 -D m=32 -D mem=4
expect 5 "v-half.lua:15: block: d0 needs 5 units of memory in the steady state, more than mem = 4; it needs mem >= 5" -- $SC sim v-half -D p=8 -D m=32 -D mem=4

# --svg: the rows' programs stacked on one time axis.
$SC compare zb-h1 zb-v -D p=4 -D m=8 -D tcomm=0,0.5 --svg "$tmp/s.svg" >/dev/null
py "stacked svg" '
import sys, re, xml.etree.ElementTree as ET
t = open(sys.argv[1]).read()
root = ET.fromstring(t)
ns = "{http://www.w3.org/2000/svg}"
ids = [g.get("id") for g in root.iter(ns + "g") if g.get("id")]
assert ids == ["p%d.d%d" % (i, d) for i in range(4) for d in range(4)], ids
titles = [x.text for x in root.iter(ns + "text") if x.text and x.text.startswith(("zb-h1 ", "zb-v "))]
assert titles == ["zb-h1 tcomm=0", "zb-v tcomm=0", "zb-h1 tcomm=0.5", "zb-v tcomm=0.5"], titles
assert "4 schedules on one time axis" in t
' "$tmp/s.svg"
command -v xmllint >/dev/null && { xmllint --noout "$tmp/s.svg" && ok || bad "stacked svg is not XML"; }

echo "compare: $pass passed, $fail failed"
[ "$fail" = 0 ]
