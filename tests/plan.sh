#!/bin/sh
# plan.sh — `stagecraft plan` (docs/plan.md): never slower than any stdlib
# recipe that meets the same cap with the same costs, on a grid of p, m,
# caps and cost sets (the issue's measured case among them); zb-auto and
# zbv-auto never slower than the stdlib recipes of their placement; the
# front is the front; the layer partition's gain over the even split and
# its Megatron layout string parsed back by Megatron's own grammar; --json,
# --svg, the errors. On every grid point the pick's `sim` line gives its
# makespan again and the lean pick (~) is the least memory within 1 %.
# --for megatron|torchtitan|pytorch (docs/plan.md#for-a-framework): only
# what that framework runs, its settings; the printed sim and export
# commands run back to the pick's makespan; the messages (no -D p, no cap
# given, a cap in GiB as given, never -0.00 %, --layers in units, --layers
# against -D layers). The check tier runs a sample of the grid.
# Run from the repository root: sh tests/plan.sh
SC=${SC:-./stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, expect, full

if full; then grid="4:8 4:16 6:12 8:32"; caps="0 half less"; costs="unit zb tb"
else grid=$SC_PLAN_SAMPLE; caps="less"; costs="zb"; fi

# plan against compare of every stdlib recipe at mem = cap, and the
# automatic schedulers against the recipes of their placement.
python3 - "$SC" "$grid" "$caps" "$costs" <<'PY' 2>"$tmp/grid.err"; rc=$?
import json, subprocess, sys
sc, grid, caps, costs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split()
SETS = {"unit": [], "zb": ["-D", "tw=0.63", "-D", "tcomm=0.016"], "tb": ["-D", "tb=1.5", "-D", "tw=0.5"]}
RECIPES = ["1f1b", "zb-h1", "zb-h2", "gpipe", "zb-auto", "interleaved", "gis", "1f1b-v", "zb-v",
           "v-half", "v-min", "v-zb", "zbv-auto", "dualpipev"]
LOOP, V = ["zb-h1", "zb-h2", "1f1b"], ["v-zb", "zb-v", "v-half", "v-min", "1f1b-v"]
fails = checks = 0
def check(cond, *what):
    global fails, checks
    checks += 1
    if not cond:
        fails += 1
        print("FAIL:", *what, file=sys.stderr)
def run(args):
    r = subprocess.run([sc] + args, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr
for g in grid:
    p, m = map(int, g.split(":"))
    for capk in caps:
        cap = {"0": 0, "half": max(1, p // 2), "less": p - 2}[capk]
        for ck in costs:
            d = ["-D", "p=%d" % p, "-D", "m=%d" % m] + SETS[ck]
            capa = ["--cap", str(cap)] if cap else []
            code, out, err = run(["plan"] + d + capa + ["--time-limit", "0", "--json"])
            check(code == 0, "plan", d, capa, code, err[:300])
            if code:
                continue
            plan = json.loads(out)
            pick = plan["candidates"][plan["pick"]]
            memd = ["-D", "mem=%d" % cap] if cap else []
            code, out, err = run(["compare"] + RECIPES + d + memd + ["--time-limit", "0", "--json"])
            rows = [r for r in json.loads(out)["rows"] if "makespan" in r and
                    (not cap or r["peak_memory_max"] <= cap + 1e-9)]
            check(rows, "compare gave rows", d, memd)
            for r in rows:
                check(pick["makespan"] <= r["makespan"] + 1e-9 * max(1, r["makespan"]),
                      "plan %s %s: pick %s %s %g slower than %s %g" % (d, capa, pick["recipe"],
                      pick["knobs"], pick["makespan"], r["recipe"], r["makespan"]))
            # The automatic schedulers' cap without one is p (mem 0 stands for it).
            by = {r["recipe"]: r["makespan"] for r in rows if r["peak_memory_max"] <= (cap or p) + 1e-9}
            for auto, alts in (("zb-auto", LOOP), ("zbv-auto", V)):
                if auto in by:
                    for a in alts:
                        if a in by:
                            check(by[auto] <= by[a] + 1e-9 * max(1, by[a]),
                                  "%s %s %s: %g slower than %s %g" % (auto, d, memd, by[auto], a, by[a]))
            # The front: sorted by peak, strictly faster each step, nothing
            # beats a point of it on both.
            ok = [c for c in plan["candidates"] if "makespan" in c]
            fr = [plan["candidates"][i] for i in plan["front"]]
            check(all(a["peak_memory_max"] < b["peak_memory_max"] and a["makespan"] > b["makespan"]
                      for a, b in zip(fr, fr[1:])), "front sorted", d, capa)
            for f in fr:
                check(not any(c["makespan"] <= f["makespan"] and c["peak_memory_max"] <= f["peak_memory_max"]
                              and (c["makespan"] < f["makespan"] or c["peak_memory_max"] < f["peak_memory_max"])
                              for c in ok), "front point dominated", f)
            for c in ok:  # the lower bound (docs/bound.md) on every row, below it
                check("lower_bound" in c and c["lower_bound"] <= c["makespan"] * (1 + 1e-12),
                      "bound", c)
            check(all(c["front"] == (i in plan["front"]) for i, c in enumerate(plan["candidates"])),
                  "front flags")
            check(plan["why"].startswith("fastest %s: " % ("under cap %d" % cap if cap else "without a cap")),
                  plan["why"])
            # The lean pick: the least peak within 1 % of the pick's time,
            # when that is not the pick's own peak.
            near = [c for c in ok if c["fits"] and c["makespan"] <= pick["makespan"] * 1.01]
            least = min(c["peak_memory_max"] for c in near)
            if plan["lean"] is None:
                check(least >= pick["peak_memory_max"] - 1e-9, "a lean pick missed", d, capa, least)
            else:
                ln = plan["candidates"][plan["lean"]]
                check(ln in near and abs(ln["peak_memory_max"] - least) <= 1e-9 and ln["front"]
                      and least < pick["peak_memory_max"], "lean", ln, least)
                check("least memory within 1 % (~): " in plan["why"], plan["why"])
            # The pick's sim command: the same makespan.
            code, out, err = run(plan["reproduce"]["sim"].split()[1:] + ["--json"])
            check(code == 0 and abs(json.loads(out)["makespan"] - pick["makespan"]) <= 1e-9 * max(1, pick["makespan"]),
                  "reproduce", plan["reproduce"]["sim"], code, err[:200])
print("grid: %d checks, %d failed" % (checks, fails), file=sys.stderr)
sys.exit(1 if fails else 0)
PY
[ $rc = 0 ] && ok || { bad "plan on the grid"; cat "$tmp/grid.err" >&2; }

# The issue's case: zbv-auto under cap 6 no longer loses to v-zb.
$SC sim zbv-auto -D p=8 -D m=32 -D mem=6 -D tw=0.63 -D tcomm=0.016 --json >"$tmp/a.json" 2>/dev/null
$SC sim v-zb -D p=8 -D m=32 -D mem=6 -D tw=0.63 -D tcomm=0.016 --json >"$tmp/b.json" 2>/dev/null
python3 -c '
import json, sys
a, b = (json.load(open(f))["makespan"] for f in sys.argv[1:3])
assert a <= b + 1e-9, (a, b)' "$tmp/a.json" "$tmp/b.json" && ok || bad "zbv-auto under cap 6 loses to v-zb"

# The layer partition: a gain over the even split on a model whose embedding
# and head are heavy; the Megatron layout parsed back by Megatron's grammar
# (PipelineParallelLayerLayout.parse_str_to_list) to the same split.
$SC plan -D p=4 -D m=16 --layers E:4,t*14,L:6 --time-limit 0 --json >"$tmp/l.json" 2>"$tmp/l.err" &&
python3 - "$tmp/l.json" <<'PY' && ok || { bad "layer partition"; cat "$tmp/l.err" >&2; }
import json, re, sys
pt = json.load(open(sys.argv[1]))["partition"]
assert pt["gain"] > 0.05 and pt["makespan"] < pt["even_makespan"], pt
assert pt["heaviest_stage"] < pt["even_heaviest_stage"], pt
s = pt["megatron_layout"].replace(",", "")
for pat in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
    s = re.sub(pat, lambda x: x.group(1) * int(x.group(2)), s)
stages = s.split("|")
assert len(stages) == pt["stages"], stages
first, n = [], 0
for st in stages:
    first.append(n)
    n += len(st)
assert first == pt["first_layer"] and n == 16 and s[0] == "E" and s[-1] == "L", (first, s)
names = [x for part in pt["torchtitan_module_fqns_per_model_part"] for x in part]
assert names == ["tok_embeddings"] + ["layers.%d" % i for i in range(14)] + ["norm", "output"], names
PY

# --svg: a picture of the front (well-formed XML).
$SC plan -D p=4 -D m=8 --cap 3 --time-limit 0 --svg "$tmp/f.svg" >/dev/null 2>&1 &&
  python3 -c 'import sys, xml.dom.minidom as x; d = x.parse(sys.argv[1]); assert d.getElementsByTagName("polyline")' "$tmp/f.svg" &&
  ok || bad "plan --svg"
# A cap in bytes: the axis, the cap and the pick in GiB, not 3.9155e+10.
$SC plan -D p=4 -D m=8 -D layers=8 -D hidden=1024 -D seq=1024 --cap 8GiB --time-limit 0 \
  --svg "$tmp/fb.svg" >/dev/null 2>&1 &&
  grep -q 'peak memory per device (GiB)' "$tmp/fb.svg" && grep -q '>cap 8 GiB<' "$tmp/fb.svg" &&
  grep -q 'peak [0-9.]* GiB</text>' "$tmp/fb.svg" && ! grep -q 'e+[0-9]' "$tmp/fb.svg" &&
  ok || bad "plan --svg with a cap in bytes: GiB on the axis"

# The lines after the pick, as printed: the sim command gives the pick's
# makespan; the export writes a CSV that imports back to it (unit costs);
# with --layers and --costs-out the split's costs make the same makespan.
case $SC in /*) SCA=$SC ;; *) SCA=$PWD/$SC ;; esac
cd "$tmp"
for args in "-D p=4 -D m=32 -D tb=1.5 -D tw=0.5 --time-limit 0" \
            "-D p=8 -D m=32 --cap 6 -D tw=0.63 -D tcomm=0.016 --time-limit 0 --for pytorch" \
            "-D p=4 -D m=16 --layers E:4,t*14,L:6 --time-limit 0 --costs-out split.json" \
            "-D p=4 -D m=16 --layers E:4,t*14,L:6 --time-limit 0 --costs-out split.json --for megatron" \
            "-D p=8 -D m=32 -D layers=32 -D hidden=4096 -D seq=4096 -D vocab=128256 --cap 80GiB --time-limit 0"; do
  # (make check: not the model's plan, 1.6 CPU-s for its text and JSON:
  # docs/plan.md plans a model at p = 8, m = 32; --for pytorch below, this model)
  case $args in *layers=32*) full || continue ;; esac
  # shellcheck disable=SC2086
  $SCA plan $args >plan.txt 2>plan.err && $SCA plan $args --json >plan.json 2>>plan.err || { bad "plan $args"; cat plan.err >&2; continue; }
  case $args in *layers=32*) cp plan.txt model.txt ;; esac # the cap's checks below
  simline=$(sed -n 's/^  sim         stagecraft //p' plan.txt)
  expline=$(sed -n 's/^  export      stagecraft //p' plan.txt)
  [ -n "$simline" ] || { bad "plan $args: no sim line"; continue; }
  eval "\"\$SCA\" $simline --json" >sim.json 2>sim.err || { bad "plan $args: $simline failed"; cat sim.err >&2; continue; }
  python3 - plan.json sim.json "$args" <<'PY' && ok || bad "plan $args: the sim line gives another makespan"
import json, sys
plan, sim = (json.load(open(f)) for f in sys.argv[1:3])
pick = plan["candidates"][plan["pick"]]
assert abs(pick["makespan"] - sim["makespan"]) <= 1e-9 * max(1, sim["makespan"]), (pick, sim["makespan"])
PY
  case $args in *layers=32*|*--layers*) continue ;; esac # import times by -D only
  [ -n "$expline" ] || { bad "plan $args: no export line"; continue; }
  csv=$(echo "$expline" | sed 's/.* -o //')
  eval "\"\$SCA\" $expline" 2>/dev/null &&
    costs=$(echo "$args" | grep -o -- '-D t[a-z]*=[0-9.]*' | tr '\n' ' ') &&
    eval "\"\$SCA\" import $csv $costs --json" >imp.json 2>imp.err &&
    python3 -c '
import json, sys
plan, imp = (json.load(open(f)) for f in sys.argv[1:3])
pick = plan["candidates"][plan["pick"]]
assert abs(pick["makespan"] - imp["makespan"]) <= 1e-9 * max(1, imp["makespan"]), (pick["makespan"], imp["makespan"])' plan.json imp.json &&
    ok || { bad "plan $args: the export line's CSV imports to another makespan"; cat imp.err >&2; }
done
cd - >/dev/null

# --for: only what the framework runs (docs/plan.md#for-a-framework).
MODEL="-D p=8 -D m=32 -D layers=32 -D hidden=4096 -D seq=4096 -D vocab=128256 --cap 80GiB --time-limit 0"
# (make check: megatron and pytorch; torchtitan's settings are pytorch's classes)
for fw in megatron $(full && echo torchtitan) pytorch; do
  # shellcheck disable=SC2086
  $SC plan $MODEL --for $fw --json >"$tmp/$fw.json" 2>"$tmp/$fw.err" &&
  $SC plan $MODEL --for $fw >"$tmp/$fw.txt" 2>>"$tmp/$fw.err" &&
  python3 - "$tmp/$fw.json" "$tmp/$fw.txt" $fw <<'PY' && ok || { bad "plan --for $fw"; cat "$tmp/$fw.err" >&2; }
import json, sys
plan, text, fw = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), sys.argv[3]
assert plan["for"] == fw and plan["left_out"] > 0, (plan["for"], plan.get("left_out"))
cands = plan["candidates"]
ran = [c for c in cands if "makespan" in c]
assert ran and all(fw in c["frameworks"] for c in ran), [(c["recipe"], c["frameworks"]) for c in ran]
for c in cands:  # no framework runs our offload, recomputation or vocabulary passes
    assert not any(k in c["knobs"] for k in ("offload=", "recompute=", "vocab_par=")), c
pick = cands[plan["pick"]]
settings = plan["reproduce"][fw]
assert settings and ("  %-10s  %s\n" % (fw, settings)) in text, settings
if fw == "megatron":
    assert all(c["placement"] == "loop" for c in ran) and pick["recipe"] in ("1f1b", "interleaved"), pick
    assert "mem=" not in pick["knobs"] and "-D mem=" not in plan["reproduce"]["sim"], plan["reproduce"]
    v = pick["stages_per_device"]
    assert settings.startswith("--pipeline-model-parallel-size 8") and "ZBV" not in text, settings
    if "--pipeline-model-parallel-layout" in settings:  # an uneven split (split=best)
        import re
        lay = re.search(r'layout "([^"]*)"', settings).group(1)
        assert lay.count("|") + 1 == 8 * v and "--num-virtual" not in settings, settings
        assert sum(int(n) for n in re.findall(r"t\*(\d+)", lay)) == 32, lay
        assert lay.startswith("E") and lay.endswith("L"), lay
    else:
        assert ("--num-virtual-stages-per-pipeline-rank %d" % v in settings) == (v > 1), settings
else:
    cls = {"V": ("ZBVZeroBubble", "DualPipeV"), "loop": ("1F1B", "Interleaved1F1B")}[pick["placement"]]
    assert fw == "pytorch" or any("pipeline_parallel_schedule %s " % k in settings for k in cls), settings
    assert "pipeline-model-parallel-layout" not in text, "a Megatron string for a %s pick" % fw
PY
done
# Without --for, a V pick gets no Megatron layout and says who runs it.
$SC plan -D p=4 -D m=8 --layers E,t*16,L --time-limit 0 >"$tmp/v.txt" 2>&1 &&
  $SC plan -D p=4 -D m=8 --layers E,t*16,L --time-limit 0 --json >"$tmp/v.json" 2>&1 &&
  python3 - "$tmp/v.json" "$tmp/v.txt" <<'PY' && ok || bad "a V pick got a Megatron layout"
import json, sys
plan, text = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
pick = plan["candidates"][plan["pick"]]
assert pick["placement"] == "V", pick
assert plan["partition"]["megatron_layout"] is None and plan["partition"]["layout"], plan["partition"]
assert "--pipeline-model-parallel-layout" not in text and "not megatron: the V placement" in text, text
PY
# The lean pick in the text: marked ~, the legend, the summary line.
$SC plan -D p=4 -D m=32 -D tb=1.5 -D tw=0.5 --time-limit 0 >"$tmp/lean.txt" 2>&1 &&
  grep -q '^~ v-zb ' "$tmp/lean.txt" && grep -q '~ the least memory within 1 % of its time' "$tmp/lean.txt" &&
  grep -q 'least memory within 1 % (~): v-zb, 0.51 % slower' "$tmp/lean.txt" && ok || bad "lean pick not shown"
# A cap in bytes as given; never -0.00 %; the model's gap on its bound.
# (the text of the loop above: the same command; make check: --for pytorch's)
{ cp "$tmp/model.txt" "$tmp/m.txt" 2>/dev/null || { ! full && cp "$tmp/pytorch.txt" "$tmp/m.txt"; }; } && grep -qE "cap 80 GiB[;,]" "$tmp/m.txt" && grep -q "under cap 80 GiB:" "$tmp/m.txt" &&
  ! grep -q "e+" "$tmp/m.txt" && ! grep -q -- "-0.00" "$tmp/m.txt" && ok || { bad "cap in GiB, -0.00"; cat "$tmp/m.txt" >&2; }

# Notes and errors: one line, the exit code.
expect 0 "stagecraft: note: plan: no -D p given: planning for 4 devices" -- $SC plan -D m=4 --time-limit 0
expect 7 "nothing to pick (no cap given): every candidate was refused or failed" -- $SC plan -D p=4 -D m=8 --layers E,t,L --time-limit 0
! grep -q "cap 0" "$tmp/err" && ok || bad "no cap said as cap 0"
expect 0 "not from the model's seconds" -- $SC plan -D p=4 -D m=8 -D layers=32 -D hidden=1024 --layers E,t*32,L --time-limit 0
expect 2 "--layers E,t*30,L has 30 transformer layers (t) but -D layers=32" -- $SC plan -D p=4 -D layers=32 --layers E,t*30,L
expect 2 "--for 'deepspeed': expected megatron, torchtitan or pytorch" -- $SC plan -D p=4 --for deepspeed
expect 2 "--costs-out writes the costs of --layers' split" -- $SC plan -D p=4 --costs-out "$tmp/c.json"
expect 7 "nothing meets cap 6: the smallest peak is 8 (1f1b)" -- $SC plan -D p=8 -D m=32 --cap 6 --time-limit 0 --for megatron

# Errors: one line, the exit code.
expect 2 "--cap UNITS|BYTES, not -D mem" -- $SC plan -D p=4 -D mem=3
expect 2 "--cap needs units" -- $SC plan -D p=4 --cap x
expect 2 "sweep with compare" -- $SC plan -D m=8,16
expect 2 "unexpected 'zb-h1'" -- $SC plan zb-h1
expect 2 "'x' is not a layer" -- $SC plan --layers E,x,L
expect 2 "needs the model's sizes" -- $SC plan --cap 1GiB
expect 7 "nothing meets cap 0.1" -- $SC plan -D p=2 -D m=4 --cap 0.1 --time-limit 0

echo "plan: $pass passed, $fail failed"
[ $fail = 0 ]
