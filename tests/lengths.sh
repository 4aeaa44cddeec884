#!/bin/sh
# tests/lengths.sh — microbatches of different lengths (docs/lengths.md;
# interp/ir/lengths.h, interp/plan/order.h, lang/lua/lengths_lua.c), end
# to end:
#   - sim 1f1b -D p=4 -D m=8 -D lengths=F differs from the run of equal
#     lengths with the same tokens, which equals the run without lengths;
#     --json shows them, the text says so in one line;
#   - a message's time, a record's units and (with a model) attention's
#     quadratic term follow each microbatch's length; a cap sees them;
#   - sc.program{lengths = ...} as -D lengths; the errors: a count other
#     than m, a length <= 0 or not a number (the entry named), a file that
#     cannot be read (named), a misspelt field;
#   - a cost file's per-token costs: the makespan by hand on 1F1B, plan's
#     order search with them, the refusals of bad fields (file and field),
#     run --profile at several lengths fitting them;
#   - the bound stays at or below the simulated makespan for every stdlib
#     recipe with random lengths (seeds x recipes; make check: a sample),
#     and --optimal between them where GLPK is built in;
#   - plan -D lengths=F orders the pick's microbatches, never slower than
#     the order given, and sc.order_lengths the same for any program;
#   - run -D lengths=F --check (docs/lengths.md#running-them): the MLP and
#     the decoder train to the reference with measured peaks equal to the
#     predicted ones (tests/py/runjson.py), a peak that one record makes
#     equal to that record's bytes by the model's formula, equal lengths
#     the run without them bit for bit, a profile's transfers of each
#     length's size; every stdlib recipe, offload, recomputation, steps,
#     MPI ranks against threads and the CUDA stand-in (also --graph and
#     random delays) in make test; the refusals.
# Run from the repository root: sh tests/lengths.sh
SC=${SC:-./stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, expect, full, sample

# ms: the makespan of sim --json (one line; the first key of that name,
# before any nested object), without a python3 start
ms() { sed -n 's/^{[^{]*"makespan": \([-+.0-9eE]*\)[,}].*/\1/p'; }
printf '1782\n1084\n2935\n2471\n837\n2904\n559\n926\n' >"$tmp/l8.txt"   # 13498 tokens
mean=1687.25
printf '[%s,%s,%s,%s,%s,%s,%s,%s]' $mean $mean $mean $mean $mean $mean $mean $mean >"$tmp/u8.json"

# The done-when of issue 49: different lengths, the same tokens, another makespan.
a=$($SC sim 1f1b -D p=4 -D m=8 -D lengths="$tmp/l8.txt" --json | ms)
u=$($SC sim 1f1b -D p=4 -D m=8 -D lengths="$tmp/u8.json" --json | ms)
n=$($SC sim 1f1b -D p=4 -D m=8 --json | ms)
if [ "$u" = "$n" ] && awk "BEGIN { exit !($a > $u * 1.05) }"; then ok
else bad "1f1b: lengths $a, equal lengths $u, none $n"; fi
expect 0 '"lengths": [1782, 1084, 2935, 2471, 837, 2904, 559, 926], "length_ref": 1687.25' -- \
  $SC sim 1f1b -D p=4 -D m=8 -D lengths="$tmp/l8.txt" --json
expect 0 'lengths       559 to 2935 tokens per microbatch, 13498 in all; costs and bytes scale from 1687.25 (their mean)' -- \
  $SC sim 1f1b -D p=4 -D m=8 -D lengths="$tmp/l8.txt"
expect 0 '"length_ref": 2.5' -- $SC sim gpipe -D p=2 -D m=4 -D lengths='[1,2,3,4]' --json

# A message's time: T_comm times its length over the mean (the dump's SENDs).
$SC export gpipe -D p=2 -D m=2 -D tcomm=1 -D lengths='[1,3]' --format json -o "$tmp/g.json"
v=$(python3 - "$tmp/g.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
d = sorted((i["mb"], i["t1"] - i["t0"]) for i in j["streams"][0] if i["op"] == "F")
s = [(i["mb"], round(i["t1"] - i["t0"], 9)) for i in j["streams"][0] if i["op"] == "SEND"]
print("ok" if d == [(0, 0.5), (1, 1.5)] and s == [(0, 0.5), (1, 1.5)] else "bad %s %s" % (d, s))
PY
)
[ "$v" = ok ] && ok || bad "gpipe: F and SEND times by length: $v"
# A record's units: 1f1b's d0 holds mb0 and mb1 at once: (4 + 1) / 1.75 units.
expect 0 'peak memory   2.857 units (max)' -- $SC sim 1f1b -D p=2 -D m=4 -D lengths='[4,1,1,1]'
# A cap sees them: 1f1b fits mem=4 with alike microbatches, not with a long first one.
expect 0 'makespan' -- $SC sim 1f1b -D p=4 -D m=8 -D mem=4
expect 5 'mem: d1 passes mem = 4' -- $SC sim 1f1b -D p=4 -D m=8 -D mem=4 -D lengths='[4000,100,100,100,100,100,100,100]'

# With a model: lengths at the model's seq change nothing; twice seq more
# than doubles the work (attention's quadratic term); each F scales by it.
m0=$($SC sim 1f1b -D p=4 -D m=4 -D layers=8 -D hidden=1024 -D seq=2048 --json | ms)
m1=$($SC sim 1f1b -D p=4 -D m=4 -D layers=8 -D hidden=1024 -D seq=2048 -D lengths='[2048,2048,2048,2048]' --json | ms)
m2=$($SC sim 1f1b -D p=4 -D m=4 -D layers=8 -D hidden=1024 -D seq=2048 -D lengths='[4096,4096,4096,4096]' --json | ms)
if [ "$m0" = "$m1" ] && awk "BEGIN { exit !($m2 > 2.02 * $m0) }"; then ok
else bad "model: no lengths $m0, at seq $m1, at 2 seq $m2 (want more than twice)"; fi

# sc.program{lengths = ...} and -D lengths set the same.
cat >"$tmp/r.lua" <<'LUA'
return sc.program{p = 4, m = 8, rule = "1f1b", lengths = {1782, 1084, 2935, 2471, 837, 2904, 559, 926}}
LUA
cat >"$tmp/q.lua" <<'LUA'
return sc.program{p = 4, m = 8, rule = "1f1b"}
LUA
r1=$($SC sim "$tmp/r.lua" --json | ms); r2=$($SC sim "$tmp/q.lua" -D lengths="$tmp/l8.txt" --json | ms)
[ "$r1" = "$r2" ] && [ "$r1" = "$a" ] && ok || bad "sc.program lengths $r1, -D $r2, 1f1b $a"

# A recipe's file name: in its own folder, as sc.costs reads (the sandbox).
mkdir -p "$tmp/rec" && cp "$tmp/l8.txt" "$tmp/rec/l8.txt"
echo 'return sc.program{p = 4, m = 8, rule = "1f1b", lengths = "l8.txt"}' >"$tmp/rec/f.lua"
echo 'return sc.program{p = 4, m = 8, rule = "1f1b", lengths = "/etc/hostname"}' >"$tmp/rec/g.lua"
r3=$($SC sim "$tmp/rec/f.lua" --json | ms) # not in the current folder
[ "$r3" = "$a" ] && ok || bad "a recipe's lengths file: $r3, want $a"
expect 10 "a recipe may read files in its own folder only" -- $SC sim "$tmp/rec/g.lua"

# Errors: one clear line, exit 3 (a usage error for an unknown field).
printf '5\n6\n-1\n4\n5\n5\n5\n5\n' >"$tmp/neg.txt"
printf '5 6 x 4\n' >"$tmp/nan.txt"
expect 3 "lengths $tmp/neg.txt: entry 3 (line 3) is -1: a length must be a number > 0" -- \
  $SC sim 1f1b -D p=4 -D m=8 -D lengths="$tmp/neg.txt"
expect 3 "lengths $tmp/nan.txt: entry 3 (line 1) is 'x': not a number" -- \
  $SC sim 1f1b -D p=4 -D m=4 -D lengths="$tmp/nan.txt"
expect 3 "lengths $tmp/l8.txt has 8 lengths for m = 4 microbatches (one per microbatch)" -- \
  $SC sim 1f1b -D p=4 -D m=4 -D lengths="$tmp/l8.txt"
expect 3 "lengths $tmp/none.txt: No such file or directory" -- \
  $SC sim 1f1b -D p=4 -D m=8 -D lengths="$tmp/none.txt"
expect 3 "lengths (the value): the JSON array has no closing ']'" -- \
  $SC sim 1f1b -D p=4 -D m=2 -D lengths='[1,2'
sed 's/lengths =/lenghts =/' "$tmp/r.lua" >"$tmp/typo.lua"
expect 3 "program: unknown field 'lenghts' (did you mean 'lengths'?)" -- $SC sim "$tmp/typo.lua"
sed 's/2904/0/' "$tmp/r.lua" >"$tmp/zero.lua"
expect 3 "program: 'lengths': entry 6 must be a number > 0 (got 0)" -- $SC sim "$tmp/zero.lua"

# Per-token costs (docs/costs.md#per-token-costs): microbatch i's F, B, W take
# fixed + a L_i + b L_i^2. By hand, 1F1B on 2 stages, lengths 200 and 100:
# F 0.1 + 0.8 + 2 = 2.9 and 1, BW (0.2 + 1.6 + 4) + 2 = 7.8 and 3; d1 ends
# BW0 at 2.9 + 2.9 + 7.8 = 13.6, then d0 runs BW0 to 21.4 and BW1 to 24.4.
cat >"$tmp/tok.json" <<'EOF'
{"stagecraft_costs": 1, "unit": "s", "stages": 2, "tf": [1, 1], "tb": [2, 2], "tw": [1, 1],
 "tcomm": 0, "tokens": 100,
 "tf_per_token": [0.004, 0.004], "tf_per_token2": [5e-05, 5e-05],
 "tb_per_token": [0.008, 0.008], "tb_per_token2": [0.0001, 0.0001],
 "tw_per_token": [0.01, 0.01]}
EOF
expect 0 'makespan      24.4 s' -- $SC sim 1f1b -D p=2 -D m=2 -D costs="$tmp/tok.json" -D lengths='[200,100]'
expect 0 "scale from 100 (the cost file's tokens, its per-token costs)" -- \
  $SC sim 1f1b -D p=2 -D m=2 -D costs="$tmp/tok.json" -D lengths='[200,100]'
# Without lengths the file's tf, tb, tw; without the coefficients, linear from the mean.
expect 0 'makespan      12 s' -- $SC sim 1f1b -D p=2 -D m=2 -D costs="$tmp/tok.json"
# (mean 150: F 4/3 and 2/3, BW 4 and 2; d0's BW0 ends at 10.67, BW1 at 12.67)
grep -v per_token "$tmp/tok.json" | sed 's/, "tokens": 100,/}/' >"$tmp/lin.json"
expect 0 'makespan      12.6667 s' -- $SC sim 1f1b -D p=2 -D m=2 -D costs="$tmp/lin.json" -D lengths='[200,100]'
# The planner's order search and --optimal take them (the given order is one of those tried).
expect 0 'best        ' -- $SC plan -D p=2 -D m=4 -D costs="$tmp/tok.json" -D lengths='[200,100,50,150]' --time-limit 0
# The refusals: one line naming the file and the field.
sed 's/"tf_per_token": \[0.004, 0.004\]/"tf_per_token": [0.004, 0.02]/' "$tmp/tok.json" >"$tmp/b1.json"
expect 3 "cost file $tmp/b1.json: 'tf_per_token'[1], 'tf_per_token2'[1]: 2.5 s at 'tokens' = 100, more than 'tf'[1] = 1 s (the fixed part would be < 0)" -- \
  $SC sim 1f1b -D p=2 -D m=2 -D costs="$tmp/b1.json"
sed 's/"tokens": 100,//' "$tmp/tok.json" >"$tmp/b2.json"
expect 3 "cost file $tmp/b2.json: 'tokens' is missing" -- $SC sim 1f1b -D p=2 -D m=2 -D costs="$tmp/b2.json"
sed 's/"tw_per_token": \[0.01, 0.01\]/"tw_per_token": [0.01, -1]/' "$tmp/tok.json" >"$tmp/b3.json"
expect 3 "cost file $tmp/b3.json: 'tw_per_token'[1]: a coefficient must be a number >= 0" -- \
  $SC sim 1f1b -D p=2 -D m=2 -D costs="$tmp/b3.json"
sed 's/"tw_per_token"/"tw_per_tokens"/' "$tmp/tok.json" >"$tmp/b4.json"
expect 3 "cost file $tmp/b4.json: unknown field 'tw_per_tokens'" -- $SC sim 1f1b -D p=2 -D m=2 -D costs="$tmp/b4.json"
# A recipe's cost table takes them too, and refuses them without tokens.
cat >"$tmp/tok.lua" <<'EOF'
local sc = require("stagecraft")
return sc.program{p = 2, m = 2, rule = "1f1b", lengths = {200, 100},
  costs = {stages = 2, tf = {1, 1}, tb = {2, 2}, tw = {1, 1}, tcomm = 0, tokens = 100,
           tf_per_token = {0.004, 0.004}, tf_per_token2 = {5e-05, 5e-05},
           tb_per_token = {0.008, 0.008}, tb_per_token2 = {0.0001, 0.0001},
           tw_per_token = {0.01, 0.01}}}
EOF
expect 0 'makespan      24.4 s' -- $SC sim "$tmp/tok.lua"
sed 's/tcomm = 0, tokens = 100,/tcomm = 0,/' "$tmp/tok.lua" >"$tmp/notok.lua"
expect 3 "cost file (a table): 'tokens': expected a length > 0" -- $SC sim "$tmp/notok.lua"
# A profile at several lengths fits them (docs/costs.md#per-token-costs: per
# length the median, least squares, the quadratic from 3 lengths), writes
# the fit's residual, and the file loads back; one length: none.
$SC run 1f1b -D p=2 -D m=4 -D lengths='[8,16,24,32]' --profile "$tmp/tp.json" --profile-steps 2 \
  --warmup 0 >"$tmp/tp.out" 2>/dev/null || bad "run --profile with lengths failed"
$SC run 1f1b -D p=2 -D m=2 -D lengths='[8,8]' --profile "$tmp/t1.json" --profile-steps 1 \
  --warmup 0 >/dev/null 2>&1 || bad "run --profile with one length failed"
v=$(python3 - "$tmp/tp.json" "$tmp/t1.json" <<'PY'
import json, sys
j, one = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
fit, T = j["measured"]["per_token_fit"], j["tokens"]
ok = T == 20 and fit["lengths"] == 4 and len(fit["rms_residual_s"]) == 3 and "tokens" not in one
grow = 0  # the times grow with the length (4 x from 8 to 32): some term > 0
for k in ("tf", "tb", "tw"):
    a, b = j[k + "_per_token"], j[k + "_per_token2"]
    ok = ok and len(a) == 2 and len(b) == 2 and min(a + b) >= 0
    grow = max([grow] + a + b)
    ok = ok and all(j[k][s] >= (a[s] * T + b[s] * T * T) * (1 - 1e-6) for s in range(2))
print("ok" if ok and grow > 0 else "bad %s" % {x: j[x] for x in j if "tok" in x})
PY
)
[ "$v" = ok ] && ok || bad "profile's per-token fit: $v"
expect 0 'per-token costs fitted to 4 lengths by least squares: rms residual F' -- cat "$tmp/tp.out"
expect 0 "scale from 20 (the cost file's tokens, its per-token costs)" -- \
  $SC sim 1f1b -D p=2 -D m=4 -D costs="$tmp/tp.json" -D lengths='[8,16,24,32]'
# The profile's own prediction is sim's with the file it wrote (the fitted costs).
p=$(python3 -c 'import json,sys; print("%.6g" % json.load(open(sys.argv[1]))["measured"]["predicted_step_time_s"])' "$tmp/tp.json")
expect 0 "step time     $p s" -- $SC sim 1f1b -D p=2 -D m=4 -D costs="$tmp/tp.json" -D lengths='[8,16,24,32]'

# The bound at or below the makespan, every stdlib recipe, random lengths.
if full; then
  recipes="1f1b 1f1b-v dualpipe dualpipev gis gpipe interleaved v-half v-min v-zb zb-auto zb-h1 zb-h2 zb-v zbv-auto"
  seeds="1 2 3"
else
  recipes=$(sample 1f1b zb-h1 interleaved zb-v); seeds="1"
fi
for seed in $seeds; do
  python3 -c "
import random; r = random.Random($seed)
print('\n'.join(str(max(16, int(r.lognormvariate(6.5, 1.0)))) for _ in range(8)))" >"$tmp/s$seed.txt"
  for r in $recipes; do
    # costs, messages, a cap (a refusal by it is an answer, not a failure), a model
    for cf in "-D tcomm=0" "-D tcomm=0.2" "-D mem=6" "-D layers=8 -D hidden=1024 -D seq=1024"; do
      tc=$cf
      # shellcheck disable=SC2086
      $SC sim "$r" -D p=4 -D m=8 $cf -D lengths="$tmp/s$seed.txt" --json >"$tmp/b.json" 2>"$tmp/err"
      rc=$?
      [ $rc = 5 ] && grep -q "mem" "$tmp/err" && { ok; continue; }
      [ $rc = 3 ] && grep -q "one microbatch needs on a device" "$tmp/err" && { ok; continue; }
      [ $rc = 0 ] || { bad "$r seed $seed $cf: $(head -1 "$tmp/err")"; continue; }
      python3 - "$tmp/b.json" <<'PY' >"$tmp/v" || true
import json, sys
j = json.load(open(sys.argv[1]))
print("ok" if j["lower_bound"] <= j["makespan"] * (1 + 1e-9) + 1e-9 else "over %g > %g" % (j["lower_bound"], j["makespan"]))
PY
      [ "$(cat "$tmp/v")" = ok ] && ok || bad "bound: $r seed $seed tcomm $tc: $(cat "$tmp/v")"
    done
  done
done
if $SC sim 1f1b -D p=2 -D m=2 --optimal 2>&1 | grep -q "without GLPK"; then
  echo "lengths: --optimal skipped (built without GLPK)"
else
  $SC sim zb-h1 -D p=2 -D m=4 -D lengths='[100,300,200,400]' --optimal --json >"$tmp/o.json"
  v=$(python3 -c "
import json; j = json.load(open('$tmp/o.json')); o = j['optimal']
print('ok' if j['lower_bound'] <= o['bound'] + 1e-9 and o['incumbent'] <= j['makespan'] + 1e-9 else 'bad %s' % o)")
  [ "$v" = ok ] && ok || bad "optimal with lengths: $v"
fi

# plan: never slower than the order given; the order it prints is the one it timed.
for seed in $seeds; do
  $SC plan -D p=4 -D m=8 -D lengths="$tmp/s$seed.txt" --time-limit 0 --json >"$tmp/p.json" 2>"$tmp/err" ||
    { bad "plan seed $seed: $(head -1 "$tmp/err")"; continue; }
  python3 - "$tmp/p.json" <<'PY' >"$tmp/v"
import json, sys
j = json.load(open(sys.argv[1]))
o, c = j["order"], j["candidates"][j["pick"]]
ok = o["makespan"] <= o["given_makespan"] and abs(o["given_makespan"] - c["makespan"]) <= 1e-9 * c["makespan"]
print("ok" if ok else "bad %s against %s" % (o, c["makespan"]))
PY
  [ "$(cat "$tmp/v")" = ok ] && ok || bad "plan seed $seed: $(cat "$tmp/v")"
done
# The order plan prints is exact: sim with that list and the pick gives the
# figure plan found (lengths that %g would round).
printf '1234.56789\n77.125\n3001.3333\n512\n999.99\n45.5\n2048.0625\n640.4\n' >"$tmp/dec.txt"
$SC plan -D p=4 -D m=8 -D lengths="$tmp/dec.txt" --time-limit 0 >"$tmp/plan.txt" 2>"$tmp/err"
pick=$(sed -n 's/^fastest without a cap: \([^,]*\),.*/\1/p' "$tmp/plan.txt")
list=$(sed -n 's/^  lengths     \(.*\)/\1/p' "$tmp/plan.txt")
want=$(sed -n 's/^  best .* makespan \([0-9.]*\).*/\1/p' "$tmp/plan.txt")
got=$($SC sim "$pick" -D p=4 -D m=8 -D lengths="$list" --time-limit 0 2>&1 | sed -n 's/^makespan *//p')
[ -n "$want" ] && [ "$got" = "$want" ] && ok || bad "plan's order $list on $pick: sim $got, plan $want"
cat >"$tmp/order.lua" <<'LUA'
local p = sc.load(arg[1], {p = 4, m = 8, lengths = arg[2]})
local given = p:sim().makespan
local o = sc.order_lengths(p)
assert(o.given == given, "given " .. o.given .. " vs " .. given)
assert(o.makespan <= given and p:sim().makespan == o.makespan, "planned " .. o.makespan)
print("ok")
LUA
for r in $recipes; do
  expect 0 ok -- $SC --trust "$tmp/order.lua" "$r" "$tmp/s1.txt"
done
echo 'sc.order_lengths(sc.load("1f1b"))' >"$tmp/none.lua"
expect 3 "order_lengths: the program has no lengths" -- $SC --trust "$tmp/none.lua"

# run: microbatches of their own sizes through the runtime, to the reference.
M=tests/fixtures/models/run-llama.json
L8='[8,16,24,12,4,32,16,20]'
$SC run 1f1b -D p=2 -D m=4 -D lengths='[8,16,24,12]' --check --json >"$tmp/r1.json" 2>"$tmp/err" &&
  later "$tmp/r1.json" "run 1f1b lengths (MLP)" || bad "run 1f1b lengths: $(head -1 "$tmp/err")"
$SC run zb-h1 -D p=2 -D m=4 --model $M -D lengths='[8,16,24,12]' --check --json >"$tmp/r2.json" 2>"$tmp/err" &&
  later "$tmp/r2.json" "run zb-h1 --model lengths (decoder)" || bad "run zb-h1 --model lengths: $(head -1 "$tmp/err")"
# 1F1B's last stage holds one record at a time: its peak is the longest
# microbatch's record, 2 L rows (batch 2) of 4 h floats per block (2 blocks)
# and h + vocab for the head: 4 bytes x 2 L x (8 x 64 + 64 + 128).
v=$(python3 -c "
import json; j = json.load(open('$tmp/r1.json')); p = j['peak_activation_bytes']
print('ok' if p[1] == 4 * 2 * 24 * (8 * 64 + 64 + 128) else 'bad %s' % p)")
[ "$v" = ok ] && ok || bad "run 1f1b lengths: the last stage's peak is not the longest record's: $v"
# Messages carry their microbatch's size: the transfers a profile measured,
# by size, are L x batch 2 rows of hidden 64 floats for each length L.
$SC run 1f1b -D p=2 -D m=4 -D lengths='[8,16,24,12]' --profile "$tmp/prof.json" --profile-steps 2 \
  >/dev/null 2>"$tmp/err" || bad "run --profile with lengths: $(head -1 "$tmp/err")"
v=$(python3 -c "
import json; j = json.load(open('$tmp/prof.json')); b = sorted(t['bytes'] for t in j['transfers'])
print('ok' if b == [4 * 2 * 64 * L for L in (8, 12, 16, 24)] else 'bad %s' % b)")
[ "$v" = ok ] && ok || bad "run --profile with lengths: the transfers' sizes $v"
# Lengths all equal to seq: the run without lengths, bit for bit.
hexof() { sed 's/.*"loss_hex": "\([^"]*\)".*/\1/'; }
h1=$($SC run 1f1b -D p=2 -D m=4 --json | hexof)
h2=$($SC run 1f1b -D p=2 -D m=4 -D lengths='[16,16,16,16]' --json | hexof)
[ -n "$h1" ] && [ "$h1" = "$h2" ] && ok || bad "run: lengths at seq $h2, none $h1"
expect 0 '"lengths": [8, 16, 24, 12]' -- $SC run 1f1b -D p=2 -D m=4 -D lengths='[8,16,24,12]' --json
expect 0 'lengths       8 to 24 tokens per sequence in place of seq, 120 rows in all' -- \
  $SC run 1f1b -D p=2 -D m=4 -D lengths='[8,16,24,12]'
expect 3 "lengths: entry 2 is 2.5: run trains whole tokens (a length must be a whole number >= 1)" -- \
  $SC run 1f1b -D p=2 -D m=4 -D lengths='[1,2.5,3,4]'
expect 3 "run: microbatches of different lengths with a split vocabulary (vocab-1) are not trained yet" -- \
  $SC run v-half -D p=2 -D m=4 -D vocab_par=vocab-1 -D lengths='[8,16,24,12]'
expect 3 "run: recomputation of the decoder with microbatches of different lengths is not trained yet" -- \
  $SC run 1f1b -D p=2 -D m=4 -D recompute=all --model $M -D lengths='[8,16,24,12]'
if full; then
  # With offload (MLP and decoder), recomputation (MLP), several steps under
  # post-validation: the records' sizes and shares follow each microbatch.
  for a in "-D offload=all -D offload_ratio=0.3" "-D offload=selective -D offload_chunks=1" \
           "-D recompute=all" "-D steps=3 -D optim_sync=post-validation"; do
    for mo in "" "--model $M"; do
      case "$a$mo" in *recompute*--model*) continue ;; esac
      # shellcheck disable=SC2086
      if $SC run zb-v -D p=4 -D m=8 $a $mo -D lengths="$L8" --check --json >"$tmp/j" 2>"$tmp/err"; then
        later "$tmp/j" "run zb-v $a $mo lengths"
      else bad "run zb-v $a $mo lengths: $(head -1 "$tmp/err")"; fi
    done
  done
  for r in 1f1b 1f1b-v dualpipe dualpipev gis gpipe interleaved v-half v-min v-zb zb-auto zb-h1 zb-h2 zb-v zbv-auto forward; do
    for mo in "" "--model $M"; do
      [ "$r" = dualpipe ] && [ -n "$mo" ] && continue # the decoder's copies: not trained yet
      # shellcheck disable=SC2086
      if $SC run $r -D p=4 -D m=8 $mo -D lengths="$L8" --check --json >"$tmp/j" 2>"$tmp/err"; then
        later "$tmp/j" "run $r $mo lengths"
      else bad "run $r $mo lengths: $(head -1 "$tmp/err")"; fi
    done
  done
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  if command -v mpirun >/dev/null; then
    for mo in "" "--model $M"; do
      # shellcheck disable=SC2086
      a=$($SC run zb-h1 -D p=4 -D m=8 $mo -D lengths="$L8" --json | hexof)
      # shellcheck disable=SC2086
      timeout 120 mpirun -np 4 --oversubscribe $SC run zb-h1 -D p=4 -D m=8 $mo -D lengths="$L8" \
        --check --json >"$tmp/mpi.json" 2>"$tmp/err"
      b=$(hexof <"$tmp/mpi.json")
      [ -n "$a" ] && [ "$a" = "$b" ] && later "$tmp/mpi.json" "mpirun zb-h1 $mo lengths" ||
        bad "lengths: threads vs mpirun -np 4 $mo: '$a' vs '$b' $(head -1 "$tmp/err")"
    done
  else echo "lengths: mpirun skipped (no mpirun)"; fi
  STUB=${BUILD:-build}/cudastub
  if [ -f "$STUB/libstagecraft_cuda.so" ]; then
    for g in 1 4; do
      # shellcheck disable=SC2086
      if STAGECRAFT_CUDA_MODULE="$STUB/libstagecraft_cuda.so" STAGECRAFT_NCCL_LIBRARY="$STUB/libsc_ncclstub.so" \
         SC_CUDASTUB=1 SC_CUDASTUB_GPUS=$g $SC run zb-v -D p=4 -D m=8 -D lengths="$L8" --backend cuda \
         --check --json >"$tmp/c$g.json" 2>"$tmp/err"; then
        later "$tmp/c$g.json" "run zb-v lengths on $g stand-in GPU(s)" --tol 1e-4 --backend cuda --stand-in
      else bad "run zb-v lengths --backend cuda on $g stand-in GPU(s): $(head -1 "$tmp/err")"; fi
    done
    if STAGECRAFT_CUDA_MODULE="$STUB/libstagecraft_cuda.so" STAGECRAFT_NCCL_LIBRARY="$STUB/libsc_ncclstub.so" \
       SC_CUDASTUB=1 SC_CUDASTUB_GPUS=4 $SC run zb-h1 -D p=4 -D m=8 --model $M -D lengths="$L8" \
       --backend cuda --check --json >"$tmp/cd.json" 2>"$tmp/err"; then
      later "$tmp/cd.json" "run zb-h1 --model lengths on 4 stand-in GPUs" --tol 1e-4 --backend cuda --stand-in
    else bad "run zb-h1 --model lengths --backend cuda: $(head -1 "$tmp/err")"; fi
    # run --graph: steps 2 and 3 captured and replayed, the eager run's loss bits.
    env STAGECRAFT_CUDA_MODULE="$STUB/libstagecraft_cuda.so" SC_CUDASTUB=1 SC_CUDASTUB_GPUS=1 \
      $SC run zb-h1 -D p=4 -D m=8 -D steps=3 -D lengths="$L8" --backend cuda --json >"$tmp/e.json" 2>"$tmp/err"
    env STAGECRAFT_CUDA_MODULE="$STUB/libstagecraft_cuda.so" SC_CUDASTUB=1 SC_CUDASTUB_GPUS=1 \
      $SC run zb-h1 -D p=4 -D m=8 -D steps=3 -D lengths="$L8" --backend cuda --graph --json >"$tmp/g.json" 2>>"$tmp/err"
    a=$(hexof <"$tmp/e.json"); b=$(hexof <"$tmp/g.json")
    [ -n "$a" ] && [ "$a" = "$b" ] && grep -q '"graph_replays": 2' "$tmp/g.json" && ok ||
      bad "run --graph with lengths: '$b', eager '$a' $(head -1 "$tmp/err")"
    # Overlapped pairs on two streams per GPU, with random delays on every stream operation.
    if SC_CUDASTUB_DELAY_US=200 STAGECRAFT_CUDA_MODULE="$STUB/libstagecraft_cuda.so" \
       STAGECRAFT_NCCL_LIBRARY="$STUB/libsc_ncclstub.so" SC_CUDASTUB=1 SC_CUDASTUB_GPUS=4 \
       $SC run dualpipev -D p=4 -D m=8 -D lengths="$L8" --backend cuda --check --json >"$tmp/cp.json" 2>"$tmp/err"; then
      later "$tmp/cp.json" "run dualpipev lengths on 4 stand-in GPUs, delays" --tol 1e-4 --backend cuda --stand-in
    else bad "run dualpipev lengths --backend cuda with delays: $(head -1 "$tmp/err")"; fi
  else echo "lengths: the CUDA stand-in skipped (make cudastub builds it)"; fi
fi
verdicts

echo "lengths: $pass passed, $fail failed"
[ "$fail" = 0 ]
