#!/bin/sh
# model.sh — the model description on the command line (docs/model.md): the
# parameters per device sum to the published totals over placements and
# vocabulary placements; one byte model (sim's bytes = compare's = plan's
# total_bytes_max); a cap in bytes caps the total; the head counted by
# default; the Llama-3-8B case of issue 45 (p 8, m 32, seq 4096, 80 GiB):
# plan's pick fits by sim's own total; --model on every command; the errors.
# Run from the repository root: sh tests/model.sh
SC=${SC:-./stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, expect
F=tests/fixtures/models
py() { pycheck "$@"; } # LABEL SCRIPT ARGS: one python3 for all, at the end (lib.sh)

# The parameter counts per device sum exactly to each published total, for
# loop and V placements and every vocabulary placement.
for spec in "llama3-8b 8030261248" "llama3-70b 70553706496" "qwen2.5-7b 7615616512" \
            "mixtral-8x7b 46702792704" "deepseek-v3 671026419200" "qwen3-0.6b 596049920"; do
  set -- $spec
  for r in "1f1b -D p=8" "zb-v -D p=4" "1f1b -D p=4 -D vocab_par=vocab-1" "zb-h1 -D p=4 -D vocab_par=redis"; do
    # shellcheck disable=SC2086
    $SC sim $r -D m=8 --model $F/$1.json -D seq=4096 -D batch=1 --json >"$tmp/s.json" 2>"$tmp/err" ||
      { bad "sim $r --model $1: $(cat "$tmp/err")"; continue; }
    py "$1 $r: params sum to $2" '
import json, sys
j = json.load(open(sys.argv[1]))
assert sum(j["params"]) == int(sys.argv[2]) == j["model"]["params"], (sum(j["params"]), sys.argv[2])
b = j["bytes"]
for d in range(len(j["params"])):
    parts = b["params"][d] + b["grads"][d] + b["optimizer"][d] + b["activations"][d] + b["workspace"][d]
    assert abs(parts - b["total"][d]) <= 2, (d, parts, b["total"][d])
assert j["total_bytes_max"] == max(b["total"])
' "$tmp/s.json" "$2"
  done
done

# The byte terms by the set-up: bf16 mixed AdamW 2 + 4 + 12 per parameter;
# pure bf16 2 + 2 + 4; ZeRO-1 over 8 shards the optimizer.
L="sim 1f1b -D p=4 -D m=8 --model $F/llama3-8b.json -D seq=2048 -D batch=1 --json"
# shellcheck disable=SC2086
$SC $L >"$tmp/mixed.json" && $SC $L -D precision=pure >"$tmp/pure.json" &&
  $SC $L -D zero=1 -D dp=8 >"$tmp/zero.json" && $SC $L -D dtype=fp32 -D precision=pure -D optimizer=sgd >"$tmp/sgd.json" ||
  bad "the set-ups"
py "bytes by the training set-up" '
import json, math, sys
m, p, z, s = (json.load(open(f)) for f in sys.argv[1:5])
for d, n in enumerate(m["params"]):
    assert (m["bytes"]["params"][d], m["bytes"]["grads"][d], m["bytes"]["optimizer"][d]) == (2 * n, 4 * n, 12 * n), d
    assert (p["bytes"]["params"][d], p["bytes"]["grads"][d], p["bytes"]["optimizer"][d]) == (2 * n, 2 * n, 4 * n), d
    assert z["bytes"]["optimizer"][d] == 12 * math.ceil(n / 8) and z["bytes"]["grads"][d] == 4 * n, d
    assert (s["bytes"]["params"][d], s["bytes"]["grads"][d], s["bytes"]["optimizer"][d]) == (4 * n, 4 * n, 0), d
    assert m["bytes"]["workspace"][d] == 2**30
' "$tmp/mixed.json" "$tmp/pure.json" "$tmp/zero.json" "$tmp/sgd.json"

# The head counted by default: vocab_par auto is baseline with a model,
# with the shorthand too; none drops it (and says nothing else changed).
$SC sim 1f1b -D p=8 -D m=8 -D layers=32 -D hidden=4096 -D seq=4096 -D vocab=128256 --json >"$tmp/a.json"
$SC sim 1f1b -D p=8 -D m=8 -D layers=32 -D hidden=4096 -D seq=4096 -D vocab=128256 -D vocab_par=none --json >"$tmp/n.json"
py "the head by default" '
import json, sys
a, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["vocab_par"] == "baseline" and "vocab_par" not in n, (a.get("vocab_par"), n.get("vocab_par"))
h = 128256 * 4096
assert a["params"][0] - n["params"][0] == h and a["params"][7] - n["params"][7] == h
assert a["makespan"] > n["makespan"]
' "$tmp/a.json" "$tmp/n.json"

# A cap in bytes caps the total: sim's peak under the cap, its refusal names
# what the device holds.
S="-D p=8 -D m=32 --model $F/llama3-8b.json -D seq=4096 -D batch=1"
# shellcheck disable=SC2086
$SC sim zb-h1 $S -D mem=40GiB --json >"$tmp/c.json"
py "sim: a byte cap caps the total" '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["total_bytes_max"] <= 40 * 2**30 and j["total_bytes_max"] > 35 * 2**30, j["total_bytes_max"]
' "$tmp/c.json"
# shellcheck disable=SC2086
expect 5 "but d0 holds 24.43 GiB before any activation" -- $SC sim 1f1b $S -D mem=20GiB
# the memory policies take a cap in bytes (their budget), no "needs mem ... got 0"
# shellcheck disable=SC2086
expect 0 "in all 37.86 GiB on d0" -- $SC sim 1f1b $S -D mem=38GiB -D offload=budget
# shellcheck disable=SC2086
expect 0 "in all 37.96 GiB on d0" -- $SC sim 1f1b $S -D mem=38GiB -D recompute=budget

# The Llama-3-8B case: plan's pick fits 80 GiB by sim's own total, and
# plan's total_bytes_max equals sim's within 1 %. (make check: at p = 4,
# m = 16, half the CPU; docs/plan.md plans p = 8, m = 32 of this model)
SP=$S; full || SP="-D p=4 -D m=16 --model $F/llama3-8b.json -D seq=4096 -D batch=1"
# shellcheck disable=SC2086
$SC plan $SP --cap 80GiB --json >"$tmp/p.json" || bad "plan --model"
python3 - "$tmp/p.json" <<'PY' >"$tmp/pick"
import json, sys, shlex
j = json.load(open(sys.argv[1]))
c = j["candidates"][j["pick"]]
print(c["recipe"], c["knobs"], c["total_bytes_max"])
PY
read -r recipe rest <"$tmp/pick"
knobs=$(echo "$rest" | awk '{ for (i = 1; i < NF; i++) printf "-D %s ", $i }')
pbytes=$(echo "$rest" | awk '{ print $NF }')
# shellcheck disable=SC2086
$SC sim "$recipe" $SP $knobs -D mem=80GiB --json >"$tmp/ps.json" || bad "sim of the pick $recipe $knobs"
py "plan: the pick fits by sim's total" '
import json, sys
j = json.load(open(sys.argv[1])); want = float(sys.argv[2])
assert j["total_bytes_max"] <= 80 * 2**30, j["total_bytes_max"]
assert abs(j["total_bytes_max"] - want) <= 0.01 * want, (j["total_bytes_max"], want)
' "$tmp/ps.json" "$pbytes"
grep -q '"knobs": "[^"]*vocab_par=vocab-1' "$tmp/p.json" && grep -q 'vocab_par=redis' "$tmp/p.json" &&
  ok || bad "plan tries redis, vocab-1 (and baseline by default)"

# --model on every command that takes a recipe; sc.model in a script.
for c in check show "export --format json"; do
  # shellcheck disable=SC2086
  expect 0 "" -- $SC $c 1f1b $S
done
# shellcheck disable=SC2086
expect 0 "peak bytes" -- $SC compare 1f1b zb-h1 $S
cp $F/llama3-8b.json "$tmp/"
cat >"$tmp/m.lua" <<'LUA'
local llama = sc.model("llama3-8b.json")
local r = sc.load("zb-v", {p = 4, m = 8, model = llama, seq = 4096, batch = 1}):sim()
local n = 0
for _, x in ipairs(r.params) do n = n + x end
print(n == llama.params, r.bytes.total[1] > 0, r.model == nil)
LUA
expect 0 "true	true	true" -- sh -c "cd '$tmp' && '$PWD/$SC' m.lua" 2>/dev/null ||
  expect 0 "true	true	true" -- sh -c "cd '$tmp' && '$SC' m.lua"

# The split: best beats even on Llama-3-8B (the head's stage gets fewer
# decoders); a Megatron layout printed reads back to the same split.
# shellcheck disable=SC2086
$SC sim 1f1b $S --json >"$tmp/even.json" && $SC sim 1f1b $S --layers best --json >"$tmp/best.json" &&
  $SC sim 1f1b $S --layers best >"$tmp/best.txt" || bad "--layers best"
lay=$(sed -n 's/.*--pipeline-model-parallel-layout "\(.*\)"$/\1/p' "$tmp/best.txt")
# shellcheck disable=SC2086
$SC sim 1f1b $S --layers "$lay" --json >"$tmp/lay.json" || bad "--layers $lay"
py "the split: best, and a layout read back" '
import json, sys
e, b, l = (json.load(open(f)) for f in sys.argv[1:4])
assert e["model"]["stage_layers"] == [4] * 8, e["model"]["stage_layers"]
assert b["makespan"] < 0.9 * e["makespan"], (b["makespan"], e["makespan"])
assert sum(b["model"]["stage_layers"]) == 32 and b["model"]["stage_layers"][-1] < 4
assert l["model"]["stage_layers"] == b["model"]["stage_layers"] and l["makespan"] == b["makespan"]
assert sum(b["params"]) == 8030261248
' "$tmp/even.json" "$tmp/best.json" "$tmp/lay.json"
# shellcheck disable=SC2086
expect 3 "split: the 8 stages hold 33 decoder layers, but the model has 32" -- $SC sim 1f1b $S --layers "[5,4,4,4,4,4,4,4]"
# shellcheck disable=SC2086
expect 3 "the loss L must be on the last stage" -- $SC sim 1f1b $S --layers "Et*4|t*4|t*4|t*4|t*4|t*4|t*4L|t*4"
# run trains a config's decoder and its experts (tests/decoder.sh); MLA is
# refused, exit 2
expect 2 "multi-head latent attention (MLA) is not trained yet" -- $SC run 1f1b --model $F/deepseek-v3.json -D p=2 -D m=2

# The errors: one line each.
# shellcheck disable=SC2086
expect 3 "give the sequence length trained (-D seq=N" -- $SC sim 1f1b -D p=8 --model $F/llama3-8b.json
# shellcheck disable=SC2086
expect 3 "layers = 30, but the model's config (llama) has 32: give one or the other" -- $SC sim 1f1b $S -D layers=30
expect 2 "--model needs a FILE" -- $SC sim 1f1b --model
expect 3 "nope.json" -- $SC sim 1f1b --model nope.json -D seq=64
echo '{"model_type": "gpt2", "hidden_size": 8}' >"$tmp/g.json"
expect 3 'model_type "gpt2" is not supported' -- $SC sim 1f1b --model "$tmp/g.json" -D seq=64
expect 3 "'precision' must be one of mixed, pure (got half)" -- $SC sim 1f1b $S -D precision=half
expect 3 "zero > 0 shards over the data-parallel ranks: give dp > 1" -- $SC sim 1f1b $S -D zero=2
# a recipe reads a config only in its own folder (or one named by --model)
mkdir -p "$tmp/r" && cp $F/llama3-8b.json "$tmp/r/cfg.json"
printf 'local P = sc.params{sc.P, sc.M}\nreturn sc.program{p = P.p, m = P.m, tf = 1, tb = 1, tw = 1, order = "1f1b", model = {config = sc.model("%s"), seq = 64}}\n' "/etc/hostname" >"$tmp/r/bad.lua"
expect 10 "sandbox" -- $SC sim "$tmp/r/bad.lua" -D p=2
verdicts
echo "model: $pass passed, $fail failed"
[ "$fail" = 0 ]
