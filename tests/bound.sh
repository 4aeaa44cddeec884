#!/bin/sh
# tests/bound.sh — the lower bound on the makespan and the exact optimum
# (docs/bound.md), end to end:
#   - on a grid of stdlib recipes x p x m x costs x caps, the bound is at
#     or below every schedule's simulated makespan (the simulator is the
#     reference), in `compare --json`;
#   - the hand-checked tight cases: 1F1B with tw = 0 and no communication,
#     one device, a schedule the bound proves optimal;
#   - sim --optimal on small cases: bound <= the solver's bound <= its
#     best schedule <= the recipe's makespan, and an optimum at or below
#     every recipe of the same placement (skipped without GLPK).
# Run from the repository root: sh tests/bound.sh
SC=${SC:-./stagecraft}
pass=0; fail=0; skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, expect, full, sample

# The grid (make check: a recipe of each family, fewer points).
if full; then
  recipes="1f1b 1f1b-v dualpipe dualpipev gis gpipe interleaved v-half v-min v-zb zb-auto zb-h1 zb-h2 zb-v zbv-auto"
  grid="-D p=2,4 -D m=4,8 -D tb=1,2 -D tw=0,1 -D tcomm=0,0.3 -D mem=0,2,3"
else
  recipes=$(sample 1f1b zb-h1 interleaved zb-v)
  grid="-D p=2,4 -D m=8 -D tw=0,1 -D tcomm=0,0.3 -D mem=0,3"
fi
# shellcheck disable=SC2086
$SC compare $recipes $grid --json >"$tmp/grid.json" 2>"$tmp/err" || true
python3 - "$tmp/grid.json" >"$tmp/res" 2>&1 <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
n = bad = tight = 0
for r in rows:
    if "error" in r:
        continue
    n += 1
    if not (r["lower_bound"] <= r["makespan"] * (1 + 1e-9) + 1e-9):
        bad += 1
        print("over:", r["recipe"], r["parameters"], r["makespan"], r["lower_bound"])
    if r["bound_gap"] < 1e-12:
        tight += 1
print(n, bad, tight)
EOF
read -r rows over tight <"$tmp/res" 2>/dev/null
if [ "${over:-x}" = 0 ] && [ "${rows:-0}" -gt 10 ]; then ok; else bad "bound above a makespan: $(cat "$tmp/res" "$tmp/err")"; fi
[ "${tight:-0}" -gt 0 ] && ok || bad "no schedule of the grid meets its bound"
echo "grid: $rows schedules, every bound below its makespan, $tight of them proved optimal by it"

# Tight by hand: 1F1B, tw = 0, no communication: (m + p - 1)(tf + tb).
expect 0 "lower bound   22, within 0.00 % (fill and drain" -- $SC sim 1f1b -D p=4 -D m=8 -D tw=0
expect 0 "makespan      22" -- $SC sim 1f1b -D p=4 -D m=8 -D tw=0
# One device: the work.
expect 0 "lower bound   12, within 0.00 % (work: d0" -- $SC sim 1f1b -D p=1 -D m=4
# A cap of one record: m round trips of the first stage.
expect 0 "memory cap: d0 holds 1 records of stage 0" -- $SC sim 1f1b -D p=3 -D m=4 -D mem=1
# --json carries every term.
$SC sim zb-h1 --json >"$tmp/j" 2>&1
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); t=d['bound_terms']; \
assert d['lower_bound'] == max(t.values()) and set(t) == {'work','path','fill','memory'}; \
assert d['bound_gap'] == 0 and d['bound_binding'] == 'fill and drain'" "$tmp/j" && ok || bad "sim --json: $(cat "$tmp/j")"
expect 2 "--optimal=SECONDS needs a time limit" -- $SC sim 1f1b --optimal=0

# The exact optimum on small cases: every recipe of one placement against
# the optimum of that placement's class.
glpk=yes
$SC sim 1f1b -D p=2 -D m=4 -D mem=1 --optimal 2>&1 | grep -q "built without GLPK" && glpk=no
  cases="p=2,m=4 p=2,m=4,mem=1"
  recs="1f1b zb-h1 interleaved"
  full && cases="$cases p=2,m=2 p=3,m=3 p=2,m=3 p=3,m=4 p=3,m=4,mem=2 p=2,m=3,mem=1.5" &&
    recs="1f1b gpipe zb-h1 zb-h2 zb-auto interleaved"
  for c in $cases; do
    defs=$(echo "$c" | tr ',' '\n' | sed 's/^/-D /' | tr '\n' ' ')
    for r in $recs; do
      # shellcheck disable=SC2086
      $SC sim $r $defs -D tw=0.5 -D tcomm=0.1 --optimal=20 --json 2>/dev/null | sed "s/^/$c $r /"
    done
  done >"$tmp/exact"
  python3 - "$tmp/exact" >"$tmp/res" 2>&1 <<'EOF'
import json, sys
classes, n, bad, proved = {}, 0, 0, 0
for line in open(sys.argv[1]):
    case, recipe, js = line.split(" ", 2)
    d = json.loads(js)
    o = d["optimal"]
    n += 1
    eps = 1e-9 * (1 + d["makespan"])
    inc = o["incumbent"] if o["incumbent"] is not None else float("inf")
    if not (d["lower_bound"] <= o["bound"] + eps and o["bound"] <= inc + eps and inc <= d["makespan"] + eps):
        bad += 1
        print("order:", recipe, d["devices"], d["microbatches"], d["lower_bound"], o, d["makespan"])
    key = (case, recipe == "interleaved")  # the placement: loop, one or two chunks
    if o["status"] == "optimal":
        proved += 1
        classes.setdefault(key, []).append(("opt", o["optimum"], recipe))
    classes.setdefault(key, []).append(("ms", d["makespan"], recipe))
for key, v in classes.items():
    opts = [x for k, x, _ in v if k == "opt"]
    for o in opts:
        for k, x, r in v:
            if k == "ms" and x < o - 1e-9 * (1 + x):
                bad += 1
                print("optimum above a heuristic:", key, o, r, x)
print(n, bad, proved)
EOF
  read -r runs worse proved <"$tmp/res" 2>/dev/null
  if [ "${worse:-x}" = 0 ] && [ "${runs:-0}" -ge 4 ]; then ok; else bad "exact: $(cat "$tmp/res")"; fi
  [ "${proved:-0}" -gt 0 ] && ok || bad "exact: nothing proved optimal: $(cat "$tmp/res")"
  echo "exact: $runs runs, $proved optima proved, each between the bound and every heuristic of its placement"
expect 0 "optimal       27 (proved: this schedule meets the lower bound)" -- $SC sim zb-h1 -D p=4 -D m=8 --optimal
expect 0 "optimal       unknown: the exact model does not cover copies of the model" -- $SC sim dualpipe -D p=2 -D m=4 --optimal
if [ $glpk = yes ]; then
  expect 0 "optimal       18.8 (proved by GLPK" -- $SC sim 1f1b -D p=2 -D m=4 -D mem=1 -D tw=0.5 -D tcomm=0.1 --optimal
else
  expect 0 "optimal       unknown: this stagecraft was built without GLPK" -- $SC sim 1f1b -D p=2 -D m=4 -D mem=1 --optimal
  echo "exact: GLPK's proofs skipped (built without GLPK; the proofs by the bound ran)"; skip=$((skip+1))
fi
echo "bound: $pass passed, $fail failed$([ $skip = 0 ] || echo ", $skip skipped")"
[ "$fail" = 0 ]
