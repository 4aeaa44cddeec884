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
#     every recipe of the same placement (skipped without GLPK);
#   - sim --optimal's budget: the time limit over every phase of GLPK,
#     its memory within --max-mem, out of memory never an abort.
#   - plan's pick within a stated gap of its bound on three points of
#     bench/bench_bound_grid.py's grid, every candidate at or above its bound.
# Run from the repository root: sh tests/bound.sh
SC=${SC:-./stagecraft}
pass=0; fail=0; skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, expect, full, sample

# The grid (make check: a recipe of each family, fewer points).
if full; then
  recipes="1f1b 1f1b-v dualpipe dualpipev gis gpipe interleaved interleaved-zb v-half v-min v-zb zb-auto zb-h1 zb-h2 zb-v zbv-auto"
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
    recs="1f1b gpipe zb-h1 zb-h2 zb-auto interleaved v-zb"
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
    # the placement: loop with one or two chunks, or V
    key = (case, "v" if recipe.startswith("v-") else recipe == "interleaved")
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
  # The time limit covers every phase: GLPK's LP relaxation alone runs for
  # half a minute at p = 24 (15120 binaries), and at p = 2, m = 21 its
  # pseudocost branching's first evaluation of the candidates for 10 s;
  # with --optimal=2 each stops at the limit and says where it stopped
  # (status "limit", the phase). No wall-clock figure is asserted (a loaded
  # machine decides those): a run past 120 s is a hang.
  # (make check: the LP relaxation's stop only; make test both.)
  python3 - "$SC" "$(full && echo 2 || echo 1)" >"$tmp/res" 2>&1 <<'EOF'
import json, subprocess, sys, time
sc, limit, shapes = sys.argv[1], 2, int(sys.argv[2])
def timed(args):
    t = time.monotonic()
    try:
        r = subprocess.run([sc] + args, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        r = subprocess.CompletedProcess(args, 124, "", "hung: killed after 120 s")
    return r, time.monotonic() - t
for shape, phase in (("p=24 m=21 mem=3", "LP relaxation"), ("p=2 m=21 mem=2", "branch and bound"))[:shapes]:
    args = ["sim", "1f1b", "-D", "tw=0.5", "-D", "tcomm=0.1"] + [a for kv in shape.split() for a in ("-D", kv)]
    r, t = timed(args + ["--optimal=%d" % limit, "--json"])
    o = json.loads(r.stdout)["optimal"] if r.returncode == 0 else {}
    if r.returncode or o.get("status") != "limit" or \
       not o["seconds"] <= t or phase not in o.get("why", "") or not o["bound"] <= o["incumbent"]:
        print("FAIL", shape, "exit", r.returncode, "%.1f s" % t, o, r.stderr[-300:])
    else:
        print("ok", shape, "%.2f s, the solver %.2f s, stopped in its %s" % (t, o["seconds"], phase))
EOF
  while read -r v rest; do
    if [ "$v" = ok ]; then ok; echo "exact: --optimal=2 at $rest"; else bad "exact: time limit overrun: $rest"; fi
  done <"$tmp/res"
  [ "$(grep -c . "$tmp/res")" = "$(full && echo 2 || echo 1)" ] || bad "exact: time limit: $(cat "$tmp/res")"
  # GLPK's memory counts against --max-mem: out of it, the optimum is
  # unknown, with the best schedule found and the simulation's figures.
  expect 0 "optimal       unknown: GLPK needs more than the" -- \
    $SC --max-mem 8M sim 1f1b -D p=16 -D m=21 -D mem=2 -D tw=0.5 -D tcomm=0.1 --optimal=2
  grep -q "^makespan      473$" "$tmp/out" && grep -q "^peak memory" "$tmp/out" && ok ||
    bad "exact: --max-mem: the simulation's figures missing: $(cat "$tmp/out")"
  # GLPK out of the process's own memory (an address-space limit 12 MiB
  # above what the simulation needs, found here): its error hook, not an
  # abort. Skipped where the simulation needs more than 4 GiB of address
  # space (a sanitizer's shadow memory).
  python3 - "$SC" >"$tmp/res" 2>&1 <<'EOF'
import resource, subprocess, sys
args = [sys.argv[1], "--max-mem", "0", "sim", "1f1b", "-D", "p=16", "-D", "m=21", "-D", "mem=2",
        "-D", "tw=0.5", "-D", "tcomm=0.1"]
def run(limit, extra=()):
    lim = lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return subprocess.run(args + list(extra), preexec_fn=lim, capture_output=True, text=True)
lo, hi = 1 << 20, 4 << 30
if run(hi).returncode != 0:
    print("skip"); sys.exit()
while hi - lo > 1 << 20:
    mid = (lo + hi) // 2
    lo, hi = (lo, mid) if run(mid).returncode == 0 else (mid, hi)
r = run(hi + (12 << 20), ["--optimal=2"])
opt = [l for l in r.stdout.splitlines() if l.startswith("optimal ")]
if r.returncode == 0 and opt and "unknown: GLPK ran out of memory" in opt[0] and "makespan      473" in r.stdout:
    print("ok %d MiB: %s" % ((hi >> 20) + 12, opt[0].split(None, 1)[1]))
else:
    print("FAIL exit", r.returncode, "under", (hi >> 20) + 12, "MiB:", r.stdout[-300:], r.stderr[-300:])
EOF
  read -r v rest <"$tmp/res"
  case $v in
    ok) ok; echo "exact: under an address-space limit of $rest" ;;
    skip) skip=$((skip+1)); echo "exact: address-space limit skipped (the simulation needs more than 4 GiB)" ;;
    *) bad "exact: GLPK out of address space: $(cat "$tmp/res")" ;;
  esac
else
  expect 0 "optimal       unknown: this stagecraft was built without GLPK" -- $SC sim 1f1b -D p=2 -D m=4 -D mem=1 --optimal
  echo "exact: GLPK's proofs skipped (built without GLPK; the proofs by the bound ran)"; skip=$((skip+1))
fi
# The planner's gap to the bound on part of bench/bench_bound_grid.py's grid
# (bench/bound-grid.md): every candidate within the cap at or above its
# bound, and the pick within the figure stated (GAP%, first), computed by
# running plan: the issue's loss (27.8 % before the V terms, 11.43 % with
# interleaved v=4 and offload, 0.43 % with interleaved-zb v=8 and offload),
# the Zero Bubble paper's costs, tb = 1.5.
for pt in "1 -D p=8 -D m=8 -D tb=1.5 --cap 4" "2 -D p=8 -D m=32 -D tw=0.63 -D tcomm=0.016 --cap 6" \
          "2 -D p=4 -D m=16 -D tb=1.5 --cap 3"; do
  # shellcheck disable=SC2086
  set -- $pt; most=$1; shift
  $SC plan "$@" --time-limit 0 --json >"$tmp/plan.json" 2>"$tmp/err"
  if python3 - "$tmp/plan.json" "$most" >"$tmp/res" 2>&1 <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
rows = [c for c in j["candidates"] if c.get("makespan") is not None]
over = [c for c in rows if c["lower_bound"] > c["makespan"] * (1 + 1e-9) + 1e-9]
c = j["candidates"][j["pick"]]
print("%s %s %g, bound %g, gap %.2f %%" % (c["recipe"], c["knobs"], c["makespan"],
                                          c["lower_bound"], 100 * c["gap"]))
sys.exit(1 if over or len(rows) < 10 or 100 * c["gap"] > float(sys.argv[2]) else 0)
EOF
  then ok; echo "plan $*: $(cat "$tmp/res")"
  else bad "plan $* (at most $most %): $(cat "$tmp/res" "$tmp/err")"; fi
done
# interleaved-zb (docs/recipes.md#interleaved-zb): built for offload, its
# order at p = 8, m = 8, tb = 1.5 with offload=budget under 4 units is
# within 1 % of its bound (figures of sim --json, checked here), keeps to
# mem without a policy, verifies with communication and any m, and refuses
# a cap below one record a chunk in one line.
for c in "-D v=4 -D mem=4 -D offload=budget:1" "-D v=4 -D mem=4:50"; do
  most=${c##*:}; c=${c%:*}
  # shellcheck disable=SC2086
  $SC sim interleaved-zb -D p=8 -D m=8 -D tb=1.5 $c --json >"$tmp/izb.json" 2>"$tmp/err"
  if python3 - "$tmp/izb.json" "$most" >"$tmp/res" 2>&1 <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
gap = 100 * (j["makespan"] / j["lower_bound"] - 1)
print("makespan %g, bound %g (%.2f %%), peak %g" % (j["makespan"], j["lower_bound"], gap,
                                                   j["peak_memory_max"]))
sys.exit(0 if j["peak_memory_max"] <= 4 + 1e-9 and -1e-9 <= gap <= float(sys.argv[2]) else 1)
EOF
  then ok; echo "interleaved-zb $c: $(cat "$tmp/res")"
  else bad "interleaved-zb $c (peak <= 4, gap <= $most %): $(cat "$tmp/res" "$tmp/err")"; fi
done
expect 0 "verified" -- $SC check interleaved-zb -D p=3 -D m=5 -D v=3 -D tcomm=0.3 -D tw=0.5
expect 0 "verified" -- $SC check interleaved-zb -D p=4 -D m=6 -D v=2 -D mem=1.5 -D offload=all -D w_hold=0.5
expect 3 "interleaved-zb: mem = 0.2 holds too few records to run" -- $SC check interleaved-zb -D mem=0.2
[ "$(wc -l <"$tmp/err")" = 1 ] && ok || bad "interleaved-zb's refusal is one line: $(cat "$tmp/err")"
echo "bound: $pass passed, $fail failed$([ $skip = 0 ] || echo ", $skip skipped")"
[ "$fail" = 0 ]
