#!/bin/sh
# bench_model.sh — planning real models (docs/model.md, docs/plan.md#a-real-model-llama-3-8b-on-80-gib-cards):
# for public config.json files, `plan --cap 80GiB` end to end (wall seconds,
# candidates, the pick, its total bytes by sim), and in the same process
# family of runs two ratios on 1f1b: the head counted (vocab_par auto:
# baseline) against the head dropped (none), and the split by cost (best)
# against the even split.
SC=${SC:-./stagecraft}
F=tests/fixtures/models
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
row() { # label config p m [more -D...]
  label=$1; cfg=$F/$2.json; p=$3; m=$4; shift 4
  A="--model $cfg -D p=$p -D m=$m -D seq=4096 -D batch=1 $*"
  t0=$(python3 -c 'import time; print(time.monotonic())')
  # shellcheck disable=SC2086
  $SC plan $A --cap 80GiB --time-limit 0 --json >"$tmp/p.json" 2>/dev/null
  t1=$(python3 -c 'import time; print(time.monotonic())')
  for v in auto none; do
    # shellcheck disable=SC2086
    $SC sim 1f1b $A -D vocab_par=$v --json >"$tmp/v-$v.json" 2>/dev/null
  done
  # shellcheck disable=SC2086
  $SC sim 1f1b $A --layers best --json >"$tmp/best.json" 2>/dev/null
  python3 - "$label" "$t0" "$t1" "$tmp" <<'PY'
import json, sys
label, t0, t1, tmp = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
def load(n):
    try: return json.load(open(tmp + "/" + n))
    except Exception: return None
p, a, n, b = load("p.json"), load("v-auto.json"), load("v-none.json"), load("best.json")
G = 2**30
if p and p.get("pick") is not None:
    c = p["candidates"][p["pick"]]
    pick = "%s%s %.4g s, %.1f GiB" % (c["recipe"], " " + c["knobs"] if c["knobs"] else "",
                                     c["makespan"], c.get("total_bytes_max", 0) / G)
else:
    pick = "none fits"
head = "%.2fx" % (a["makespan"] / n["makespan"]) if a and n else "-"
split = "%.2fx" % (b["makespan"] / a["makespan"]) if a and b else "-"
mem = "%.1f/%.1f GiB" % (a["total_bytes_max"] / G, n["total_bytes_max"] / G) if a and n else "-"
print("%-22s plan %5.2f s %3d cand  pick %-40s  1f1b head/none %s (%s)  best/even %s" % (
    label, t1 - t0, p["searched"] if p else 0, pick, head, mem, split))
PY
}
row "Llama-3-8B p=8 m=32" llama3-8b 8 32
row "Qwen2.5-7B p=4 m=16" qwen2.5-7b 4 16
row "Mixtral-8x7B p=8 m=32" mixtral-8x7b 8 32
row "  ZeRO-1 over dp 8" mixtral-8x7b 8 32 -D zero=1 -D dp=8
row "Llama-3-70B p=16 m=64" llama3-70b 16 64
row "  ZeRO-1 over dp 8" llama3-70b 16 64 -D zero=1 -D dp=8
